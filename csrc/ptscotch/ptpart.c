/* rankmap-ptpart: the partitioning step of `rankmap map --parallel`, as an MPI job.
 *
 * Reads the traffic graph that rankmap wrote (one binary file, each process reading only
 * its own range of vertices), partitions it with PT-Scotch into k parts of given sizes
 * (the nodes' capacities: a weighted complete-graph target, which is what PT-Scotch maps
 * onto in parallel), and writes each vertex's part into the output file at the vertex's
 * offset. rankmap then maps the parts (the node-level traffic, a graph k times smaller)
 * onto the network and places each part's ranks on its node's cores.
 *
 *   rankmap-ptpart GRAPH OUT [IMBALANCE] [SEED]
 *
 * GRAPH (little-endian): "RMPTG1\0\0", int64 n, int64 nnz, int64 k, then int64 indptr[n+1],
 * int32 adj[nnz], int64 weight[nnz] (symmetric, no self loops, weights >= 1), int64
 * capacity[k]. OUT: int32 part[n]. Rank 0 prints one line of timings. Built against
 * PT-Scotch's 64-bit integer variant (SCOTCH_Num = int64_t): sums of weights and edge
 * counts of 10^7-rank graphs do not fit 32 bits. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ptscotch.h>

static void die(int rank, const char *what)
{
    fprintf(stderr, "rankmap-ptpart[%d]: %s\n", rank, what);
    MPI_Abort(MPI_COMM_WORLD, 2);
}

static void readat(FILE *f, int64_t off, void *buf, size_t size, size_t count, int rank)
{
    if (count == 0)
        return;
    if (fseeko(f, (off_t)off, SEEK_SET) != 0 || fread(buf, size, count, f) != count)
        die(rank, "cannot read the graph file (truncated?)");
}

int main(int argc, char **argv)
{
    /* One Scotch thread per MPI process: the processes are the parallelism. With Scotch's
     * default (a thread per core it can see) the threads of processes that Slurm binds to
     * one CPU each spin against each other and a step never ends (seen under salloc). */
    setenv("SCOTCH_PTHREAD_NUMBER", "1", 0);
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc < 3)
        die(rank, "usage: rankmap-ptpart GRAPH OUT [IMBALANCE] [SEED]");
    double imbalance = argc > 3 ? atof(argv[3]) : 0.01;
    long seed = argc > 4 ? atol(argv[4]) : 0;
    double t0 = MPI_Wtime();

    FILE *f = fopen(argv[1], "rb");
    if (!f)
        die(rank, "cannot open the graph file");
    char magic[8];
    int64_t hdr[3];
    readat(f, 0, magic, 1, 8, rank);
    if (memcmp(magic, "RMPTG1\0\0", 8) != 0)
        die(rank, "not a rankmap graph file");
    readat(f, 8, hdr, 8, 3, rank);
    int64_t n = hdr[0], nnz = hdr[1], k = hdr[2];
    if (n < 1 || k < 1 || nnz < 0 || n > INT32_MAX)
        die(rank, "bad graph header");
    int64_t off_ptr = 32, off_adj = off_ptr + 8 * (n + 1), off_w = off_adj + 4 * nnz, off_cap = off_w + 8 * nnz;

    /* this process's vertices: a contiguous range */
    int64_t lo = n * rank / size, hi = n * (rank + 1) / size, nloc = hi - lo;
    int64_t *ptr = malloc(8 * (size_t)(nloc + 1));
    readat(f, off_ptr + 8 * lo, ptr, 8, (size_t)(nloc + 1), rank);
    int64_t e0 = ptr[0], eloc = ptr[nloc] - e0;
    SCOTCH_Num *vert = malloc(sizeof(SCOTCH_Num) * (size_t)(nloc + 1));
    for (int64_t i = 0; i <= nloc; i++)
        vert[i] = (SCOTCH_Num)(ptr[i] - e0);
    free(ptr);
    _Static_assert(sizeof(SCOTCH_Num) == 8, "build against PT-Scotch's int64 variant");
    SCOTCH_Num *adj = malloc(sizeof(SCOTCH_Num) * (size_t)(eloc > 0 ? eloc : 1));
    SCOTCH_Num *wgt = malloc(sizeof(SCOTCH_Num) * (size_t)(eloc > 0 ? eloc : 1));
    int32_t *adj32 = malloc(4 * (size_t)(eloc > 0 ? eloc : 1));
    readat(f, off_adj + 4 * e0, adj32, 4, (size_t)eloc, rank);
    for (int64_t i = 0; i < eloc; i++)
        adj[i] = adj32[i];
    free(adj32);
    readat(f, off_w + 8 * e0, wgt, 8, (size_t)eloc, rank);
    SCOTCH_Num *cap = malloc(sizeof(SCOTCH_Num) * (size_t)k);
    readat(f, off_cap, cap, 8, (size_t)k, rank);
    fclose(f);
    double t_read = MPI_Wtime() - t0;

    SCOTCH_randomSeed((SCOTCH_Num)seed);
    SCOTCH_randomReset();
    SCOTCH_Dgraph g;
    if (SCOTCH_dgraphInit(&g, MPI_COMM_WORLD))
        die(rank, "SCOTCH_dgraphInit failed");
    if (SCOTCH_dgraphBuild(&g, 0, (SCOTCH_Num)nloc, (SCOTCH_Num)nloc, vert, NULL, NULL, NULL, (SCOTCH_Num)eloc,
                           (SCOTCH_Num)eloc, adj, NULL, wgt))
        die(rank, "SCOTCH_dgraphBuild failed");
    SCOTCH_Arch arch;
    SCOTCH_archInit(&arch);
    if (SCOTCH_archCmpltw(&arch, (SCOTCH_Num)k, cap))
        die(rank, "SCOTCH_archCmpltw failed");
    SCOTCH_Strat strat;
    SCOTCH_stratInit(&strat);
    /* speed and scalability: at 10^5 vertices into 3,125 parts the cut is within 0.6 % of the
     * quality strategy's (stencil 0.350 vs 0.348 of the bytes, random-8 0.803 vs 0.802) in half
     * the time */
    if (SCOTCH_stratDgraphMapBuild(&strat, SCOTCH_STRATSPEED | SCOTCH_STRATSCALABILITY, size, (SCOTCH_Num)k,
                                   imbalance))
        die(rank, "SCOTCH_stratDgraphMapBuild failed");
    SCOTCH_Num *part = malloc(sizeof(SCOTCH_Num) * (size_t)(nloc > 0 ? nloc : 1));
    double t1 = MPI_Wtime();
    if (SCOTCH_dgraphMap(&g, &arch, &strat, part))
        die(rank, "SCOTCH_dgraphMap failed");
    double t_map = MPI_Wtime() - t1;
    SCOTCH_dgraphExit(&g);
    SCOTCH_stratExit(&strat);
    SCOTCH_archExit(&arch);
    free(vert), free(adj), free(wgt), free(cap);

    /* each process writes its own range of the output, in rank order */
    int32_t *out = malloc(4 * (size_t)(nloc > 0 ? nloc : 1));
    for (int64_t i = 0; i < nloc; i++)
        out[i] = (int32_t)part[i];
    free(part);
    for (int r = 0; r < size; r++) {
        if (r == rank) {
            FILE *o = fopen(argv[2], rank == 0 ? "wb" : "r+b");
            if (!o)
                die(rank, "cannot open the output file");
            if (nloc && (fseeko(o, (off_t)(4 * lo), SEEK_SET) != 0 || fwrite(out, 4, (size_t)nloc, o) != (size_t)nloc))
                die(rank, "cannot write the output file");
            if (fclose(o))
                die(rank, "cannot write the output file");
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    free(out);
    double peak_read, peak_map;
    MPI_Reduce(&t_read, &peak_read, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t_map, &peak_map, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("rankmap-ptpart: %d processes, %lld vertices, %lld edges, %lld parts: read %.3f s, "
               "partition %.3f s, total %.3f s\n", size, (long long)n, (long long)nnz, (long long)k, peak_read,
               peak_map, MPI_Wtime() - t0);
    MPI_Finalize();
    return 0;
}
