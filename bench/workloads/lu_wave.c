/* The communication skeleton of NPB LU (SSOR with a 2-D wavefront pipeline), written for
 * rankmap.
 *
 *   lu_wave [-N GRID] [-i ITERATIONS] [-r NORM_EVERY] [-f FLOPS_PER_CELL]
 *
 * An N^3 grid is split over a Px x Py process grid (MPI_Dims_create, x fastest: rank =
 * x + Px*y, as NPB LU numbers its processes); every rank holds full z columns. Each
 * iteration, as in NPB LU's ssor:
 *   lower sweep  for each z plane: receive 5*ny doubles from the west and 5*nx from the
 *                south neighbour, compute the plane, send to the east and north;
 *   upper sweep  the same in reverse (z descending, from north/east to south/west);
 *   rhs          exchange two ghost layers (2*5*n*N doubles) with the four neighbours, compute;
 *   norm         every NORM_EVERY iterations an all-reduce of 5 doubles.
 * Compute per cell and iteration: FLOPS_PER_CELL (default 1800), 25 % in each sweep and
 * 50 % in the rhs. Prints one line from rank 0:
 * "lu_wave P=<p> grid=<px>x<py> N=<n> iters=<i> time=<s> comm=<s>". */
#include "workload.h"

#include <string.h>
#include <unistd.h>

static int extent(int n, int parts, int i) { return n / parts + (i < n % parts); }

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, N = 64, iters = 10, every = 5, opt;
    double fpc = 1800;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "N:i:r:f:")) != -1) {
        switch (opt) {
        case 'N': N = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'r': every = atoi(optarg); break;
        case 'f': fpc = atof(optarg); break;
        default: wl_fail(rank, "usage: lu_wave [-N grid] [-i iterations] [-r norm_every] [-f flops_per_cell]");
        }
    }
    int dims[2] = {0, 0};
    MPI_Dims_create(size, 2, dims);
    int px = dims[1], py = dims[0]; /* the smaller one along x, as NPB's 4x6 for 24 */
    if (N < 2 * py || N < 2 * px || iters < 0 || every < 1 || fpc < 0)
        wl_fail(rank, "lu_wave: bad parameters (N must be at least twice each process-grid dimension)");
    int x = rank % px, y = rank / px;
    int nx = extent(N, px, x), ny = extent(N, py, y), nz = N;
    int west = x > 0 ? rank - 1 : MPI_PROC_NULL, east = x < px - 1 ? rank + 1 : MPI_PROC_NULL;
    int south = y > 0 ? rank - px : MPI_PROC_NULL, north = y < py - 1 ? rank + px : MPI_PROC_NULL;

    size_t line_x = 5 * (size_t)nx, line_y = 5 * (size_t)ny;
    size_t face_x = 2 * 5 * (size_t)nx * nz, face_y = 2 * 5 * (size_t)ny * nz; /* two ghost layers */
    double *sb = wl_alloc(sizeof(double) * 2 * (face_x + face_y), "lu_wave");
    double *rb = wl_alloc(sizeof(double) * 2 * (face_x + face_y), "lu_wave");
    double plane = (double)nx * ny, sweep_f = 0.25 * fpc * plane, rhs_f = 0.5 * fpc * plane * nz;
    double norm[5] = {0}, t0 = MPI_Wtime(), tcomm = 0, tc;

    for (int it = 0; it < iters; it++) {
        /* lower triangular sweep: the wave runs from (0,0) to (px-1,py-1) */
        for (int k = 0; k < nz; k++) {
            tc = MPI_Wtime();
            MPI_Recv(rb, (int)line_y, MPI_DOUBLE, west, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(rb + line_y, (int)line_x, MPI_DOUBLE, south, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            tcomm += MPI_Wtime() - tc;
            wl_compute(sweep_f);
            tc = MPI_Wtime();
            MPI_Send(sb, (int)line_y, MPI_DOUBLE, east, 1, MPI_COMM_WORLD);
            MPI_Send(sb + line_y, (int)line_x, MPI_DOUBLE, north, 2, MPI_COMM_WORLD);
            tcomm += MPI_Wtime() - tc;
        }
        /* upper triangular sweep: back from (px-1,py-1) */
        for (int k = nz - 1; k >= 0; k--) {
            tc = MPI_Wtime();
            MPI_Recv(rb, (int)line_y, MPI_DOUBLE, east, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Recv(rb + line_y, (int)line_x, MPI_DOUBLE, north, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            tcomm += MPI_Wtime() - tc;
            wl_compute(sweep_f);
            tc = MPI_Wtime();
            MPI_Send(sb, (int)line_y, MPI_DOUBLE, west, 3, MPI_COMM_WORLD);
            MPI_Send(sb + line_y, (int)line_x, MPI_DOUBLE, south, 4, MPI_COMM_WORLD);
            tcomm += MPI_Wtime() - tc;
        }
        /* rhs: ghost-layer exchange with the four neighbours */
        tc = MPI_Wtime();
        MPI_Request rq[8];
        int nr = 0, peers[4] = {west, east, south, north};
        size_t cnt[4] = {face_y, face_y, face_x, face_x}, off = 0;
        for (int d = 0; d < 4; d++) {
            MPI_Irecv(rb + off, (int)cnt[d], MPI_DOUBLE, peers[d], 10 + (d ^ 1), MPI_COMM_WORLD, &rq[nr++]);
            MPI_Isend(sb + off, (int)cnt[d], MPI_DOUBLE, peers[d], 10 + d, MPI_COMM_WORLD, &rq[nr++]);
            off += cnt[d];
        }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
        tcomm += MPI_Wtime() - tc;
        wl_compute(rhs_f);
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
        printf("lu_wave P=%d grid=%dx%d N=%d iters=%d time=%.6f comm=%.6f\n", size, px, py, N, iters, tmax, cmax);
    free(sb), free(rb);
    MPI_Finalize();
    return 0;
}
