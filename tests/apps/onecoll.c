/* One collective of a given size on MPI_COMM_WORLD, repeated: argv = OP BYTES [ROOT] [REPS].
 * Used to compare rankmap's collective models with the traffic the library really sends
 * (Open MPI's monitoring component). OP "none" runs no collective (the baseline). */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *op = argc > 1 ? argv[1] : "none";
    long n = argc > 2 ? atol(argv[2]) : 8;
    int root = argc > 3 ? atoi(argv[3]) % size : 0, reps = argc > 4 ? atoi(argv[4]) : 1;
    char *a = calloc((size_t)n * size + 1, 1), *b = calloc((size_t)n * size + 1, 1);
    int cnt = (int)n;
    for (int i = 0; i < reps; i++) {
        if (!strcmp(op, "bcast")) MPI_Bcast(a, cnt, MPI_BYTE, root, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce")) MPI_Reduce(a, b, cnt, MPI_BYTE, MPI_BOR, root, MPI_COMM_WORLD);
        else if (!strcmp(op, "allreduce")) MPI_Allreduce(a, b, cnt, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        else if (!strcmp(op, "gather")) MPI_Gather(a, cnt, MPI_BYTE, b, cnt, MPI_BYTE, root, MPI_COMM_WORLD);
        else if (!strcmp(op, "scatter")) MPI_Scatter(a, cnt, MPI_BYTE, b, cnt, MPI_BYTE, root, MPI_COMM_WORLD);
        else if (!strcmp(op, "allgather")) MPI_Allgather(a, cnt, MPI_BYTE, b, cnt, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(op, "alltoall")) MPI_Alltoall(a, cnt, MPI_BYTE, b, cnt, MPI_BYTE, MPI_COMM_WORLD);
        else if (!strcmp(op, "reduce_scatter_block")) MPI_Reduce_scatter_block(a, b, cnt, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        else if (!strcmp(op, "scan")) MPI_Scan(a, b, cnt, MPI_BYTE, MPI_BOR, MPI_COMM_WORLD);
        else if (!strcmp(op, "barrier")) MPI_Barrier(MPI_COMM_WORLD);
        else if (strcmp(op, "none")) { if (!rank) fprintf(stderr, "unknown op %s\n", op); MPI_Abort(MPI_COMM_WORLD, 2); }
    }
    free(a), free(b);
    MPI_Finalize();
    return 0;
}
