/* Ring traffic for a while (argv[1] seconds, default 5): every 0.2 s a Sendrecv to the right
 * neighbour, then a sleep (no busy waiting, so dozens of ranks share two cores).
 * tests/test_bad_input_faults.py kills a rank, or a node, while it runs. */
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = (int)((argc > 1 ? atof(argv[1]) : 5.0) / 0.2);
    char a[1000] = {0}, b[1000];
    for (int i = 0; i < steps; i++) {
        MPI_Sendrecv(a, sizeof a, MPI_BYTE, (rank + 1) % size, 0, b, sizeof b, MPI_BYTE, (rank + size - 1) % size, 0,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        usleep(200000);
    }
    MPI_Finalize();
    return 0;
}
