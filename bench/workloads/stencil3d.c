/* 3-D halo-exchange stencil (Jacobi on a block-distributed cube), written for rankmap.
 *
 *   stencil3d [-n LOCAL_EDGE] [-i ITERATIONS] [-r ALLREDUCE_EVERY] [-c COMPUTE_SWEEPS] [-p] [-s]
 *
 * Ranks form a Px x Py x Pz grid (MPI_Dims_create, row-major ranks, like MPI_Cart_create
 * without reordering); every iteration each rank exchanges its six faces (n*n doubles)
 * with its neighbours (non-periodic unless -p), sweeps the 7-point stencil COMPUTE_SWEEPS
 * times, and every R iterations all-reduces the residual. Prints one line from rank 0:
 * "stencil3d P=<p> grid=<x>x<y>x<z> n=<n> iters=<i> time=<s> comm=<s> residual=<r>". */
#include "workload.h"

#include <string.h>
#include <unistd.h>

#define IDX(i, j, k) ((size_t)(i) * (n + 2) * (n + 2) + (size_t)(j) * (n + 2) + (size_t)(k))

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, n = 32, iters = 20, every = 5, sweeps = 1, periodic = 0, scatter = 0, opt;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    while ((opt = getopt(argc, argv, "n:i:r:c:ps")) != -1) {
        switch (opt) {
        case 'n': n = atoi(optarg); break;
        case 'i': iters = atoi(optarg); break;
        case 'r': every = atoi(optarg); break;
        case 'c': sweeps = atoi(optarg); break;
        case 'p': periodic = 1; break;
        case 's': scatter = 1; break;
        default:
            if (rank == 0)
                fprintf(stderr, "usage: stencil3d [-n edge] [-i iters] [-r every] [-c sweeps] [-p] [-s]\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    if (n < 1 || iters < 0 || every < 1 || sweeps < 0) {
        if (rank == 0)
            fprintf(stderr, "stencil3d: bad parameters\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int dims[3] = {0, 0, 0}, per[3] = {periodic, periodic, periodic}, coords[3];
    MPI_Dims_create(size, 3, dims);
    MPI_Comm cart, base = MPI_COMM_WORLD;
    if (scatter) {
        int k = size / 2 + 1, a, b, t;
        for (;; k++) { /* the first stride >= P/2 + 1 coprime with P */
            for (a = k, b = size; b; t = a % b, a = b, b = t)
                ;
            if (a == 1 || size < 3)
                break;
        }
        MPI_Comm_split(MPI_COMM_WORLD, 0, (int)(((long)rank * k) % size), &base);
    }
    MPI_Cart_create(base, 3, dims, per, 0, &cart);
    MPI_Comm_rank(cart, &rank);
    MPI_Cart_coords(cart, rank, 3, coords);
    int nb[3][2];
    for (int d = 0; d < 3; d++)
        MPI_Cart_shift(cart, d, 1, &nb[d][0], &nb[d][1]);

    size_t cells = (size_t)(n + 2) * (n + 2) * (n + 2);
    double *u = calloc(cells, sizeof(double)), *v = calloc(cells, sizeof(double));
    double *sbuf = malloc(sizeof(double) * (size_t)n * n * 6), *rbuf = malloc(sizeof(double) * (size_t)n * n * 6);
    if (!u || !v || !sbuf || !rbuf) {
        fprintf(stderr, "stencil3d: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t c = 0; c < cells; c++)
        u[c] = (double)((c * 2654435761u + (size_t)rank) % 1000) / 1000.0;

    double t0 = MPI_Wtime(), tcomm = 0, res = 0;
    size_t face = (size_t)n * n;
    for (int it = 0; it < iters; it++) {
        double tc = MPI_Wtime();
        MPI_Request rq[12];
        int nr = 0;
        for (int d = 0; d < 3; d++)
            for (int s = 0; s < 2; s++) {
                double *sp = sbuf + face * (2 * d + s), *rp = rbuf + face * (2 * d + s);
                int plane = s ? n : 1; /* the boundary layer facing this neighbour */
                for (int a = 1; a <= n; a++)
                    for (int b = 1; b <= n; b++)
                        sp[(a - 1) * n + (b - 1)] = d == 0 ? u[IDX(plane, a, b)] : d == 1 ? u[IDX(a, plane, b)]
                                                                                        : u[IDX(a, b, plane)];
                MPI_Irecv(rp, (int)face, MPI_DOUBLE, nb[d][s], 2 * d + (1 - s), cart, &rq[nr++]);
                MPI_Isend(sp, (int)face, MPI_DOUBLE, nb[d][s], 2 * d + s, cart, &rq[nr++]);
            }
        MPI_Waitall(nr, rq, MPI_STATUSES_IGNORE);
        for (int d = 0; d < 3; d++)
            for (int s = 0; s < 2; s++) {
                if (nb[d][s] == MPI_PROC_NULL)
                    continue;
                double *rp = rbuf + face * (2 * d + s);
                int ghost = s ? n + 1 : 0;
                for (int a = 1; a <= n; a++)
                    for (int b = 1; b <= n; b++) {
                        double x = rp[(a - 1) * n + (b - 1)];
                        if (d == 0) u[IDX(ghost, a, b)] = x;
                        else if (d == 1) u[IDX(a, ghost, b)] = x;
                        else u[IDX(a, b, ghost)] = x;
                    }
            }
        tcomm += MPI_Wtime() - tc;
        for (int sw = 0; sw < sweeps; sw++) {
            double local = 0;
#if WL_SIMULATED /* 8 flops per cell; the simulation does not run the loop */
            wl_compute(8.0 * n * n * n);
            res = 1.0;
            continue;
#endif
            for (int i = 1; i <= n; i++)
                for (int j = 1; j <= n; j++)
                    for (int k = 1; k <= n; k++) {
                        double nv = (u[IDX(i - 1, j, k)] + u[IDX(i + 1, j, k)] + u[IDX(i, j - 1, k)] +
                                     u[IDX(i, j + 1, k)] + u[IDX(i, j, k - 1)] + u[IDX(i, j, k + 1)]) / 6.0;
                        local += (nv - u[IDX(i, j, k)]) * (nv - u[IDX(i, j, k)]);
                        v[IDX(i, j, k)] = nv;
                    }
            double *t = u;
            u = v, v = t;
            res = local;
        }
        if ((it + 1) % every == 0) {
            tc = MPI_Wtime();
            MPI_Allreduce(MPI_IN_PLACE, &res, 1, MPI_DOUBLE, MPI_SUM, cart);
            tcomm += MPI_Wtime() - tc;
        }
    }
    double t = MPI_Wtime() - t0, tmax, cmax;
    MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
    MPI_Reduce(&tcomm, &cmax, 1, MPI_DOUBLE, MPI_MAX, 0, cart);
    if (rank == 0)
        printf("stencil3d P=%d grid=%dx%dx%d n=%d iters=%d time=%.6f comm=%.6f residual=%.6e\n", size, dims[0],
               dims[1], dims[2], n, iters, tmax, cmax, res);
    free(u), free(v), free(sbuf), free(rbuf);
    MPI_Comm_free(&cart);
    if (base != MPI_COMM_WORLD)
        MPI_Comm_free(&base);
    MPI_Finalize();
    return 0;
}
