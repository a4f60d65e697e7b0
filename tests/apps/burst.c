/* The first half of the ranks each send argv[1] bytes to the rank half the world away, all
 * at once; rank 0 prints the elapsed time (tests of predict against SimGrid's networks). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int half = size / 2, n = argc > 1 ? atoi(argv[1]) : 1 << 20;
    char *buf = calloc((size_t)n, 1);
    if (!buf)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (rank < half)
        MPI_Send(buf, n, MPI_BYTE, rank + half, 0, MPI_COMM_WORLD);
    else if (rank < 2 * half)
        MPI_Recv(buf, n, MPI_BYTE, rank - half, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("elapsed_us %.6f\n", (MPI_Wtime() - t0) * 1e6);
    free(buf);
    MPI_Finalize();
    return 0;
}
