/* Open MPI's Fortran bindings: sentinels and forwarding to the pmpi_* Fortran symbols. */
#ifndef RMP_FORTRAN_H
#define RMP_FORTRAN_H

#include <stdio.h>
#include <stdlib.h>

#ifdef OPEN_MPI
/* Fortran MPI_IN_PLACE / MPI_BOTTOM are addresses of common blocks, not the C constants */
extern int mpi_fortran_in_place_ __attribute__((weak));
extern int mpi_fortran_in_place __attribute__((weak));
extern int mpi_fortran_in_place__ __attribute__((weak));
extern int MPI_FORTRAN_IN_PLACE __attribute__((weak));
extern int mpi_fortran_bottom_ __attribute__((weak));
extern int mpi_fortran_bottom __attribute__((weak));
extern int mpi_fortran_bottom__ __attribute__((weak));
extern int MPI_FORTRAN_BOTTOM __attribute__((weak));

static inline const void *rmp_f_buf(const void *p)
{
    if (p == NULL)
        return p;
    if (p == &mpi_fortran_in_place_ || p == &mpi_fortran_in_place || p == &mpi_fortran_in_place__ ||
        p == &MPI_FORTRAN_IN_PLACE)
        return MPI_IN_PLACE;
    if (p == &mpi_fortran_bottom_ || p == &mpi_fortran_bottom || p == &mpi_fortran_bottom__ || p == &MPI_FORTRAN_BOTTOM)
        return MPI_BOTTOM;
    return p;
}

static inline void rmp_fortran_missing(const char *sym)
{
    fprintf(stderr, "rankmap profiler: %s is not loaded; cannot forward this Fortran MPI call\n", sym);
    abort();
}

/* Forward to the library's Fortran entry point `sym_` (a weak reference). */
#define RMP_FCALL(sym, args)                  \
    do {                                      \
        if (sym##_ == NULL)                   \
            rmp_fortran_missing(#sym "_");    \
        sym##_ args;                          \
    } while (0)
#endif

#if defined(MPICH) && !defined(OPEN_MPI)
#include <dlfcn.h>
static inline const void *rmp_f_buf(const void *p) { return p; } /* not needed: only handle arguments */

/* call the next definition of `sym` (the library's own f08 entry point) */
#define RMP_FNEXT(sym, proto, args)                                                   \
    do {                                                                             \
        static void (*next) proto;                                                   \
        if (next == NULL)                                                            \
            *(void **)(&next) = dlsym(RTLD_NEXT, #sym);                              \
        if (next == NULL) {                                                          \
            fprintf(stderr, "rankmap profiler: %s not found in the MPI library\n", #sym); \
            abort();                                                                 \
        }                                                                            \
        next args;                                                                   \
    } while (0)
#endif

#endif
