/* Overhead of the profiler per intercepted point-to-point call, measured in process.
 *
 * Run with the profiler preloaded (bench/profiler_overhead.py does it). Batches of
 * Isend-to-self + Recv alternate between the uncounted path (PMPI_Isend: the library
 * directly) and the counted one (MPI_Isend: through the profiler), in ABBA order so
 * drift cancels; the added cost per call is the median over batches of (B - A).
 * A control pair (A vs A) shows the noise floor of the method on this machine.
 * Output: one line per communicator, "name added_ns control_ns base_ns". */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

enum { UNCOUNTED, COUNTED };

static double batch(int how, MPI_Comm comm, int me, int iters)
{
    char sb[8] = {0}, rb[8];
    MPI_Request rq;
    double t0 = now_ns();
    if (how == COUNTED)
        for (int i = 0; i < iters; i++) {
            MPI_Isend(sb, 8, MPI_CHAR, me, 0, comm, &rq);
            PMPI_Recv(rb, 8, MPI_CHAR, me, 0, comm, MPI_STATUS_IGNORE);
            PMPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    else
        for (int i = 0; i < iters; i++) {
            PMPI_Isend(sb, 8, MPI_CHAR, me, 0, comm, &rq);
            PMPI_Recv(rb, 8, MPI_CHAR, me, 0, comm, MPI_STATUS_IGNORE);
            PMPI_Wait(&rq, MPI_STATUS_IGNORE);
        }
    return (now_ns() - t0) / iters;
}

static void measure(const char *name, MPI_Comm comm, int batches, int iters)
{
    int me;
    MPI_Comm_rank(comm, &me);
    double *d = malloc(sizeof(double) * batches), *c = malloc(sizeof(double) * batches);
    double *base = malloc(sizeof(double) * batches);
    for (int w = 0; w < 20; w++) /* warm up both paths and the communicator cache */
        batch(w % 2, comm, me, iters);
    for (int b = 0; b < batches; b++) {
        /* ABBA: the counted batch and the uncounted one each come first half of the time */
        double a1 = batch(UNCOUNTED, comm, me, iters), b1 = batch(COUNTED, comm, me, iters);
        double b2 = batch(COUNTED, comm, me, iters), a2 = batch(UNCOUNTED, comm, me, iters);
        double a3 = batch(UNCOUNTED, comm, me, iters), a4 = batch(UNCOUNTED, comm, me, iters);
        d[b] = 0.5 * ((b1 - a1) + (b2 - a2));
        c[b] = a4 - a3;
        base[b] = 0.5 * (a1 + a2);
    }
    printf("%s %.2f %.2f %.1f\n", name, median(d, batches), median(c, batches), median(base, batches));
    free(d), free(c), free(base);
}

int main(int argc, char **argv)
{
    int batches = argc > 1 ? atoi(argv[1]) : 300, iters = argc > 2 ? atoi(argv[2]) : 2000;
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 0) {
        measure("MPI_COMM_WORLD", MPI_COMM_WORLD, batches, iters);
        measure("dup(MPI_COMM_WORLD)", dup, batches, iters);
    }
    MPI_Comm_free(&dup);
    MPI_Finalize();
    return 0;
}
