/* Placement check for the Slurm tests: ranks i and i+P/2 exchange 1 MiB ten times (block
 * order puts them on different nodes; a good mapping pairs them), a light ring runs beside,
 * and every rank prints one line:
 *   WHERE <MPI rank> <SLURM_PROCID> <hostname> <CPU affinity list>
 * argv[1] = "crash": rank 1 dies with SIGSEGV after the exchange; "silent": no rank sends anything
 * (a program whose traffic matrix is all zero). */
#define _GNU_SOURCE
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, len;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int n = 1 << 17; /* doubles: 1 MiB */
    double *a = calloc(n, sizeof(double)), *b = calloc(n, sizeof(double));
    int partner = (rank + size / 2) % size;
    int talk = size > 1 && !(argc > 1 && !strcmp(argv[1], "silent"));
    for (int i = 0; i < 10 && talk; i++)
        MPI_Sendrecv(a, n, MPI_DOUBLE, partner, 0, b, n, MPI_DOUBLE, partner, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    double x = rank, y;
    if (talk)
        MPI_Sendrecv(&x, 1, MPI_DOUBLE, (rank + 1) % size, 1, &y, 1, MPI_DOUBLE, (rank + size - 1) % size, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (argc > 1 && !strcmp(argv[1], "crash") && rank == 1)
        raise(SIGSEGV);
    char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Get_processor_name(host, &len);
    cpu_set_t set;
    sched_getaffinity(0, sizeof set, &set);
    char cpus[256] = "";
    int k = 0, first = 1;
    for (int c = 0; c < CPU_SETSIZE && k < 200; c++)
        if (CPU_ISSET(c, &set)) {
            k += snprintf(cpus + k, sizeof cpus - k, first ? "%d" : ",%d", c);
            first = 0;
        }
    const char *procid = getenv("SLURM_PROCID");
    printf("WHERE %d %s %s %s\n", rank, procid ? procid : "-", host, cpus);
    fflush(stdout);
    free(a), free(b);
    MPI_Finalize();
    return 0;
}
