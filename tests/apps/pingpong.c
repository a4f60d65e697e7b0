/* Ping-pong from rank 0 to every other rank: prints "peer <r> bytes <n> oneway_us <t>" for
 * 8 bytes and for argv[1] bytes (default 4 MiB). Built with smpicc for the simulated-cluster
 * tests (tests/test_simulation.py): one-way times there are exact, not noisy. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long big = argc > 1 ? atol(argv[1]) : 4L << 20;
    char *buf = calloc((size_t)big, 1);
    long sizes[2] = {8, big};
    for (int peer = 1; peer < size; peer++)
        for (int k = 0; k < 2; k++) {
            int n = (int)sizes[k], reps = 4;
            double t0 = 0;
            MPI_Barrier(MPI_COMM_WORLD);
            for (int i = -1; i < reps; i++) { /* round -1 is a warm-up: both sides leave the barrier apart */
                if (i == 0)
                    t0 = MPI_Wtime();
                if (rank == 0) {
                    MPI_Send(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf, n, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == peer) {
                    MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
            }
            if (rank == 0)
                printf("peer %d bytes %d oneway_us %.6f\n", peer, n, (MPI_Wtime() - t0) / reps / 2 * 1e6);
        }
    free(buf);
    MPI_Finalize();
    return 0;
}
