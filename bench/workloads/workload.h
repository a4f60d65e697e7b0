/* Shared by rankmap's workload skeletons: compute phases and argument checks.
 *
 * A compute phase is a flop count. On a real machine it is a real floating-point loop of
 * about that many operations; under SimGrid SMPI (compiled with smpicc, whose mpi.h
 * defines SMPI_H) it is smpi_execute_flops(), so that a simulation run with
 * --cfg=smpi/simulate-computation:no is deterministic and its traces replay the same
 * compute on every placement. */
#ifndef RANKMAP_WORKLOAD_H
#define RANKMAP_WORKLOAD_H

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef SMPI_H
#define WL_SIMULATED 1
static inline void wl_compute(double flops)
{
    if (flops > 0)
        smpi_execute_flops(flops);
}
#else
#define WL_SIMULATED 0
static double wl_sink;
static inline void wl_compute(double flops)
{
    double x = wl_sink, y = 1.0000001;
    for (long i = 0; i < (long)(flops / 2); i++)
        x = x * y + 1e-12;
    wl_sink = x;
}
#endif

static inline void *wl_alloc(size_t bytes, const char *name)
{
    void *p = calloc(bytes ? bytes : 1, 1);
    if (!p) {
        fprintf(stderr, "%s: out of memory (%zu bytes)\n", name, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static inline void wl_fail(int rank, const char *msg)
{
    if (rank == 0)
        fprintf(stderr, "%s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

#endif
