/* Distributed sparse matrix-vector product in the two variants of the SpMV scalability study
 * (Pozhilov, Semenov, Makagon), written for rankmap.
 *
 *   spmv [-v allgather|alltoall] [-n ROWS] [-d NONZEROS_PER_ROW] [-l FAR_FRACTION] [-i ITERATIONS]
 *
 * The ROWS x ROWS matrix is row-block distributed. It is the 27-point stencil of a g^3 grid
 * (g = cbrt(ROWS), rows in grid order) for its first d nonzeros per row (nearest offsets
 * first), except that a fraction FAR_FRACTION of them (chosen by a fixed hash, so every run
 * builds the same matrix) point to a column anywhere. Each iteration computes y = A x and
 * all-reduces one dot product; x is made available by
 *   allgather  MPI_Allgatherv of every rank's block: n(p-1) elements in all, growing with p;
 *   alltoall   MPI_Alltoallv of exactly the elements each rank needs: at most n*d, flat in p.
 * Compute: 2 flops per nonzero. Prints one line from rank 0:
 * "spmv variant=<v> P=<p> n=<n> d=<d> iters=<i> volume=<elements per iteration> time=<s> comm=<s>". */
#include "workload.h"

#include <math.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL, x ^= x >> 33;
    return x;
}

static int cmp_long(const void *a, const void *b)
{
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, d = 27, iters = 10, opt, alltoall = 0;
    long n = 1L << 15;
    double far = 0.05;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "v:n:d:l:i:")) != -1) {
        switch (opt) {
        case 'v':
            if (!strcmp(optarg, "alltoall"))
                alltoall = 1;
            else if (strcmp(optarg, "allgather"))
                wl_fail(rank, "spmv: -v must be allgather or alltoall");
            break;
        case 'n': n = atol(optarg); break;
        case 'd': d = atoi(optarg); break;
        case 'l': far = atof(optarg); break;
        case 'i': iters = atoi(optarg); break;
        default: wl_fail(rank, "usage: spmv [-v allgather|alltoall] [-n rows] [-d nnz_per_row] [-l far_fraction] [-i iters]");
        }
    }
    if (n < size || d < 1 || d > 27 || far < 0 || far > 1 || iters < 0)
        wl_fail(rank, "spmv: bad parameters (rows >= ranks, 1 <= d <= 27, 0 <= far <= 1)");
    long g = (long)cbrt((double)n);
    while ((g + 1) * (g + 1) * (g + 1) <= n)
        g++;
    /* the 27 stencil offsets, nearest first */
    long offs[27];
    int no = 0;
    for (int r = 0; r <= 3; r++)
        for (int a = -1; a <= 1; a++)
            for (int b = -1; b <= 1; b++)
                for (int c = -1; c <= 1; c++)
                    if (abs(a) + abs(b) + abs(c) == r)
                        offs[no++] = a + g * b + g * g * c;
    long *lo = wl_alloc(sizeof(long) * (size + 1), "spmv");
    for (int r = 0; r <= size; r++)
        lo[r] = n / size * r + (r < n % size ? r : n % size);
    long my0 = lo[rank], nloc = lo[rank + 1] - lo[rank];
    long *col = wl_alloc(sizeof(long) * nloc * d, "spmv");
    for (long r = 0; r < nloc; r++)
        for (int k = 0; k < d; k++) {
            long row = my0 + r, cc = row + offs[k];
            uint64_t h = mix((uint64_t)row * 31 + (uint64_t)k);
            if ((double)(h >> 11) / 9007199254740992.0 < far)
                cc = (long)(mix(h) % (uint64_t)n);
            col[r * d + k] = ((cc % n) + n) % n;
        }
    double *x = wl_alloc(sizeof(double) * (alltoall ? nloc : n), "spmv");
    double *y = wl_alloc(sizeof(double) * nloc, "spmv");
    int *scount = wl_alloc(sizeof(int) * size, "spmv"), *rcount = wl_alloc(sizeof(int) * size, "spmv");
    int *sdisp = wl_alloc(sizeof(int) * size, "spmv"), *rdisp = wl_alloc(sizeof(int) * size, "spmv");
    double *sbuf = NULL, *rbuf = NULL;
    long *sidx = NULL, volume = 0;
    if (alltoall) {
        /* the distinct remote columns, sorted (so grouped by owner) */
        long *need = wl_alloc(sizeof(long) * nloc * d, "spmv"), nn = 0;
        for (long e = 0; e < nloc * d; e++)
            if (col[e] < my0 || col[e] >= my0 + nloc)
                need[nn++] = col[e];
        qsort(need, nn, sizeof(long), cmp_long);
        long u = 0;
        for (long e = 0; e < nn; e++)
            if (!u || need[e] != need[u - 1])
                need[u++] = need[e];
        memset(rcount, 0, sizeof(int) * size);
        for (long e = 0, owner = 0; e < u; e++) {
            while (need[e] >= lo[owner + 1])
                owner++;
            rcount[owner]++;
        }
        MPI_Alltoall(rcount, 1, MPI_INT, scount, 1, MPI_INT, MPI_COMM_WORLD);
        long stot = 0;
        for (int r = 0; r < size; r++)
            sdisp[r] = (int)stot, stot += scount[r];
        for (int r = 0, t = 0; r < size; r++)
            rdisp[r] = t, t += rcount[r];
        sidx = wl_alloc(sizeof(long) * stot, "spmv");
        MPI_Alltoallv(need, rcount, rdisp, MPI_LONG, sidx, scount, sdisp, MPI_LONG, MPI_COMM_WORLD);
        sbuf = wl_alloc(sizeof(double) * stot, "spmv");
        rbuf = wl_alloc(sizeof(double) * u, "spmv");
        volume = u;
        free(need);
        for (long e = 0; e < stot; e++)
            sidx[e] -= my0;
    } else {
        for (int r = 0; r < size; r++)
            rcount[r] = (int)(lo[r + 1] - lo[r]), rdisp[r] = (int)lo[r];
        volume = n - nloc;
    }
    long vol_all;
    MPI_Allreduce(&volume, &vol_all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    for (long r = 0; r < nloc; r++)
        x[alltoall ? r : my0 + r] = 1.0 + (double)((my0 + r) % 7);

    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime(), tcomm = 0, tc, dot = 0;
    for (int it = 0; it < iters; it++) {
        tc = MPI_Wtime();
        if (alltoall) {
            for (int r = 0; r < size; r++)
                for (int e = sdisp[r]; e < sdisp[r] + scount[r]; e++)
                    sbuf[e] = x[sidx[e]];
            MPI_Alltoallv(sbuf, scount, sdisp, MPI_DOUBLE, rbuf, rcount, rdisp, MPI_DOUBLE, MPI_COMM_WORLD);
        } else {
            MPI_Allgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, x, rcount, rdisp, MPI_DOUBLE, MPI_COMM_WORLD);
        }
        tcomm += MPI_Wtime() - tc;
#if WL_SIMULATED
        wl_compute(2.0 * (double)nloc * d);
#else /* a skeleton: the product's shape and cost, not a checked result */
        for (long r = 0; r < nloc; r++) {
            double s = 0;
            for (int k = 0; k < d; k++)
                s += alltoall ? 1.0 : x[col[r * d + k]];
            y[r] = s;
        }
#endif
        double local = 0;
        for (long r = 0; r < nloc; r++)
            local += y[r];
        tc = MPI_Wtime();
        MPI_Allreduce(&local, &dot, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        tcomm += MPI_Wtime() - tc;
    }
    double t = MPI_Wtime() - t0, tmax, cmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tcomm, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("spmv variant=%s P=%d n=%ld d=%d iters=%d volume=%ld time=%.6f comm=%.6f\n",
               alltoall ? "alltoall" : "allgather", size, n, d, iters, vol_all, tmax, cmax);
    free(lo), free(col), free(x), free(y), free(scount), free(rcount), free(sdisp), free(rdisp);
    free(sbuf), free(rbuf), free(sidx);
    MPI_Finalize();
    return 0;
}
