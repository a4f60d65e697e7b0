/* An OSU-style timing harness for MPI_Allreduce, MPI_Reduce and MPI_Bcast. It calls the
 * plain MPI functions: whether the library or rankmap's kernels answer is decided outside
 * (LD_PRELOAD of librankmap_coll, or, under SMPI, the kernels linked in and RANKMAP_COLL),
 * so one binary times both sides.
 *
 *   coll_bench -o allreduce|reduce|bcast [-m MIN_BYTES] [-M MAX_BYTES] [-f FACTOR] [-i ITERS]
 *              [-w WARMUP] [-r ROOT] [-l SIZE,SIZE,...]
 *
 * Per size: warm-up calls, then ITERS repetitions, each started at the same instant on every
 * rank (a start time broadcast ahead, every rank sleeps until it); a repetition's time is the
 * slowest rank's; printed: median, min, max over repetitions (us) and the result check.
 * Data: doubles (MPI_SUM) with integer values, so every algorithm's sum is exact. */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void wait_until(double t)
{
    double d = t - MPI_Wtime();
    if (d > 0) {
        struct timespec ts = {(time_t)d, (long)((d - (double)(time_t)d) * 1e9)};
        nanosleep(&ts, NULL);
    }
#ifndef SMPI_H
    while (MPI_Wtime() < t) {   /* real clocks: finish the wait by spinning */
    }
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int p, me;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    const char *op = "allreduce";
    long lo = 8, hi = 1 << 20, iters = 20, warm = 2;
    int root = 0;
    double factor = 4;
    int c;
    const char *list = NULL;
    while ((c = getopt(argc, argv, "o:m:M:f:i:w:r:l:")) != -1) {
        switch (c) {
        case 'o': op = optarg; break;
        case 'm': lo = atol(optarg); break;
        case 'M': hi = atol(optarg); break;
        case 'f': factor = atof(optarg); break;
        case 'i': iters = atol(optarg); break;
        case 'w': warm = atol(optarg); break;
        case 'r': root = atoi(optarg); break;
        case 'l': list = optarg; break;
        default:
            if (me == 0)
                fprintf(stderr, "usage: coll_bench -o allreduce|reduce|bcast [-m MIN] [-M MAX] [-f F] [-i N] "
                                "[-w N] [-r ROOT]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int kind = !strcmp(op, "allreduce") ? 0 : !strcmp(op, "reduce") ? 1 : !strcmp(op, "bcast") ? 2 : -1;
    if (kind < 0 || lo < 8 || hi < lo || factor <= 1 || iters < 1 || root < 0 || root >= p) {
        if (me == 0)
            fprintf(stderr, "coll_bench: bad arguments\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    /* the sizes: a list, or lo, lo*f, ... up to hi */
    long *sizes = NULL;
    int nsizes = 0;
    if (list) {
        for (const char *q = list; q && *q; q = strchr(q, ',') ? strchr(q, ',') + 1 : NULL) {
            long v = atol(q);
            long *grown = realloc(sizes, sizeof(long) * (size_t)(nsizes + 1));
            if (v < 8 || !grown) {
                if (me == 0)
                    fprintf(stderr, "coll_bench: bad size list %s\n", list);
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
            sizes = grown;
            sizes[nsizes++] = v;
            if (v > hi)
                hi = v;
        }
    } else {
        for (double sz = (double)lo; sz <= (double)hi * 1.0000001; sz *= factor) {
            long *grown = realloc(sizes, sizeof(long) * (size_t)(nsizes + 1));
            if (!grown)
                MPI_Abort(MPI_COMM_WORLD, 3);
            sizes = grown;
            sizes[nsizes++] = (long)sz;
        }
    }
    size_t maxn = (size_t)hi / sizeof(double);
    double *in = malloc(maxn * sizeof(double)), *out = malloc(maxn * sizeof(double));
    double *times = malloc(sizeof(double) * (size_t)iters);
    if (!in || !out || !times)
        MPI_Abort(MPI_COMM_WORLD, 3);
    if (me == 0)
        printf("# %s on %d ranks, root %d; time = slowest rank, us\n# bytes median min max check\n", op, p, root);
    double window = 50e-6;
    for (int si = 0; si < nsizes; si++) {
        long bytes = sizes[si];
        int n = (int)(bytes / (long)sizeof(double));
        if (n < 1)
            n = 1;
        int bad = 0;
        for (long it = -warm; it < iters; it++) {
            for (int i = 0; i < n; i++) {
                in[i] = (double)(me + 1) + (double)(i % 7);
                out[i] = -1;
            }
            if (kind == 2 && me == root)
                memcpy(out, in, (size_t)n * sizeof(double));
            double start = 0;
            PMPI_Barrier(MPI_COMM_WORLD);
            if (me == 0)
                start = MPI_Wtime() + window;
            PMPI_Bcast(&start, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
            double late = MPI_Wtime() - start;
            wait_until(start);
            if (kind == 0)
                MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            else if (kind == 1)
                MPI_Reduce(in, out, n, MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD);
            else
                MPI_Bcast(out, n, MPI_DOUBLE, root, MPI_COMM_WORLD);
            double mine[2] = {MPI_Wtime() - start, late}, worst[2];
            PMPI_Allreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (worst[1] > 0)
                window *= 2;   /* a rank was late: the start was not common, widen the window */
            if (it >= 0)
                times[it] = worst[0];
            if (it == 0) {
                double base = (double)p * (p + 1) / 2;
                for (int i = 0; i < n; i++) {
                    double want = kind == 2 ? (double)(root + 1) + (double)(i % 7) : base + (double)p * (i % 7);
                    if ((kind != 1 || me == root) && out[i] != want)
                        bad = 1;
                }
            }
        }
        int anybad;
        PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        qsort(times, (size_t)iters, sizeof(double), cmp);
        if (me == 0)
            printf("%ld %.4f %.4f %.4f %s\n", bytes, times[iters / 2] * 1e6, times[0] * 1e6, times[iters - 1] * 1e6,
                   anybad ? "WRONG" : "ok");
        fflush(stdout);
    }
    free(in);
    free(out);
    free(times);
    free(sizes);
    MPI_Finalize();
    return 0;
}
