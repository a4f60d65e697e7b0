/* The communication skeleton of NPB SP/BT (multi-partition ADI solver), written for rankmap.
 *
 *   sp_multi [-N GRID] [-i ITERATIONS] [-r NORM_EVERY] [-f FLOPS_PER_CELL] [-b]
 *
 * P = q^2 ranks; the N^3 grid is cut into q^3 cells and rank (i, j) = (r mod q, r / q)
 * owns the q cells (i+c mod q, j-c mod q, c), c = 0..q-1 (NPB's make_set), so that each
 * sweep direction has work for every rank at every stage. Its neighbours are NPB's
 * successor/predecessor: x (i+-1, j), y (i, j+-1), z (i-+1, j+-1), all modulo q.
 * Each iteration, as in NPB SP's adi:
 *   copy_faces  two ghost layers of 5 variables for each cell face, exchanged with the six
 *               neighbours at once, then the rhs computation;
 *   x, y, z     forward elimination through the q stages (receive 22 doubles per face point
 *               from the predecessor, compute the cell, send to the successor), then back
 *               substitution (10 doubles per face point, successor to predecessor);
 *   norm        every NORM_EVERY iterations an all-reduce of 5 doubles.
 * -b uses BT's larger forward messages (80 doubles per face point: 5x5 blocks). Compute per
 * cell and iteration: FLOPS_PER_CELL (default 1000), 40 % rhs, 20 % per direction.
 * Prints one line from rank 0: "sp_multi P=<p> q=<q> N=<n> iters=<i> time=<s> comm=<s>". */
#include "workload.h"

#include <math.h>
#include <unistd.h>

static int extent(int n, int parts, int i) { return n / parts + (i < n % parts); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, N = 36, iters = 10, every = 5, bt = 0, opt;
    double fpc = 1000;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "N:i:r:f:b")) != -1) {
        switch (opt) {
        case 'N': N = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'r': every = atoi(optarg); break;
        case 'f': fpc = atof(optarg); break;
        case 'b': bt = 1; break;
        default: wl_fail(rank, "usage: sp_multi [-N grid] [-i iterations] [-r norm_every] [-f flops_per_cell] [-b]");
        }
    }
    int q = (int)floor(sqrt((double)size) + 1e-9);
    if (q * q != size)
        wl_fail(rank, "sp_multi: the number of ranks must be a perfect square (as NPB SP/BT require)");
    if (N < 3 * q || iters < 0 || every < 1 || fpc < 0)
        wl_fail(rank, "sp_multi: bad parameters (N must be at least 3 per cell)");
    int i = rank % q, j = rank / q;
    int succ[3] = {(i + 1) % q + q * j, i + q * ((j + 1) % q), (i - 1 + q) % q + q * ((j + 1) % q)};
    int pred[3] = {(i - 1 + q) % q + q * j, i + q * ((j - 1 + q) % q), (i + 1) % q + q * ((j - 1 + q) % q)};
    /* cell c of this rank sits at (i+c, j-c, c) modulo q; its sizes per direction */
    int (*cs)[3] = wl_alloc(sizeof(int[3]) * q, "sp_multi");
    size_t face_total[3] = {0, 0, 0}, maxface = 0;
    double cells = 0;
    for (int c = 0; c < q; c++) {
        int co[3] = {(i + c) % q, (j - c + q * q) % q, c};
        for (int d = 0; d < 3; d++)
            cs[c][d] = extent(N, q, co[d]);
        cells += (double)cs[c][0] * cs[c][1] * cs[c][2];
        for (int d = 0; d < 3; d++) {
            size_t f = (size_t)cs[c][(d + 1) % 3] * cs[c][(d + 2) % 3];
            face_total[d] += f;
            if (f > maxface)
                maxface = f;
        }
    }
    int fwd = bt ? 80 : 22, back = 10;
    size_t ghost_max = 2 * 5 * (face_total[0] > face_total[1] ? (face_total[0] > face_total[2] ? face_total[0]
                                                                                                : face_total[2])
                                                               : (face_total[1] > face_total[2] ? face_total[1]
                                                                                                : face_total[2]));
    size_t buf = 6 * ghost_max > 2 * (size_t)fwd * maxface ? 6 * ghost_max : 2 * (size_t)fwd * maxface;
    double *sb = wl_alloc(sizeof(double) * buf, "sp_multi"), *rb = wl_alloc(sizeof(double) * buf, "sp_multi");
    double norm[5] = {0}, t0 = MPI_Wtime(), tcomm = 0, tc;

    for (int it = 0; it < iters; it++) {
        /* copy_faces */
        tc = MPI_Wtime();
        MPI_Request rq[12];
        int nr = 0;
        size_t off = 0;
        for (int d = 0; d < 3; d++) {
            size_t cnt = 2 * 5 * face_total[d];
            MPI_Irecv(rb + off, (int)cnt, MPI_DOUBLE, pred[d], 20 + 2 * d, MPI_COMM_WORLD, &rq[nr++]);
            MPI_Isend(sb + off, (int)cnt, MPI_DOUBLE, succ[d], 20 + 2 * d, MPI_COMM_WORLD, &rq[nr++]);
            off += cnt;
            MPI_Irecv(rb + off, (int)cnt, MPI_DOUBLE, succ[d], 21 + 2 * d, MPI_COMM_WORLD, &rq[nr++]);
            MPI_Isend(sb + off, (int)cnt, MPI_DOUBLE, pred[d], 21 + 2 * d, MPI_COMM_WORLD, &rq[nr++]);
            off += cnt;
        }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
        tcomm += MPI_Wtime() - tc;
        wl_compute(0.4 * fpc * cells);
        /* x, y, z solves: the stage-s cell of every rank lies in slab s of that direction. As in
         * NPB, the receive is posted before the cell's work and the send of the previous stage
         * is completed with it (the neighbours form a ring: blocking sends would deadlock). */
        for (int d = 0; d < 3; d++)
            for (int dir = 0; dir < 2; dir++) { /* forward, then back substitution */
                int from = dir ? succ[d] : pred[d], to = dir ? pred[d] : succ[d], per = dir ? back : fwd;
                MPI_Request rq2[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
                for (int st = 0; st < q; st++) {
                    int s = dir ? q - 1 - st : st;
                    int c = d == 0 ? ((s - i) % q + q) % q : d == 1 ? ((j - s) % q + q) % q : s;
                    size_t face = (size_t)cs[c][(d + 1) % 3] * cs[c][(d + 2) % 3];
                    tc = MPI_Wtime();
                    if (st > 0)
                        MPI_Irecv(rb, (int)(per * face), MPI_DOUBLE, from, 30 + 2 * d + dir, MPI_COMM_WORLD, &rq2[0]);
                    tcomm += MPI_Wtime() - tc;
                    double work = 0.1 * fpc * cs[c][0] * cs[c][1] * cs[c][2];
                    wl_compute(0.3 * work); /* the cell's left-hand side, while the data travels */
                    tc = MPI_Wtime();
                    MPI_Waitall(2, rq2, MPI_STATUSES_IGNORE);
                    tcomm += MPI_Wtime() - tc;
                    wl_compute(0.7 * work); /* the elimination needs the predecessor's rows */
                    tc = MPI_Wtime();
                    if (st < q - 1)
                        MPI_Isend(sb + (st % 2) * (buf / 2), (int)(per * face), MPI_DOUBLE, to, 30 + 2 * d + dir,
                                  MPI_COMM_WORLD, &rq2[1]);
                    tcomm += MPI_Wtime() - tc;
                }
                tc = MPI_Wtime();
                MPI_Waitall(2, rq2, MPI_STATUSES_IGNORE);
                tcomm += MPI_Wtime() - tc;
            }
        if ((it + 1) % every == 0) {
            tc = MPI_Wtime();
            for (int m = 0; m < 5; m++)
                norm[m] = rb[m] + 1.0;
            MPI_Allreduce(MPI_IN_PLACE, norm, 5, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            tcomm += MPI_Wtime() - tc;
        }
    }
    double t = MPI_Wtime() - t0, tmax, cmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&tcomm, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("sp_multi P=%d q=%d N=%d iters=%d time=%.6f comm=%.6f\n", size, q, N, iters, tmax, cmax);
    free(cs), free(sb), free(rb);
    MPI_Finalize();
    return 0;
}
