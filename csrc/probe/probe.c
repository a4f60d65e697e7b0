/* rankmap probe: what communication costs on this machine, measured (not assumed).
 *
 * Run with rankmap's placement (rankmap probe does it): rank 0 is the reference, rank j
 * sits where the Python side put it (same socket, other socket, neighbour node, distant
 * node). Measured, each as the median of many repetitions:
 *   - ping-pong 0 <-> j: half round-trip time for 8 B .. 4 MiB
 *   - LogP at 8 B with rank 1: o = time of one MPI_Isend call, g = time per message of a
 *     burst of Isends, L = latency - 2o
 *   - gamma: MPI_Reduce_local (MPI_SUM on doubles) time per byte
 *   - 1 MiB exchanges of rank 0 with every other rank, posted all at once (Isend/Irecv +
 *     Waitall) vs one partner after the other (Sendrecv in turn)
 * Rank 0 prints one JSON object on stdout. */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Ranks not in the next measurement wait with short sleeps instead of spinning: on
 * oversubscribed machines their polling would otherwise be what is measured. */
static void quiet_barrier(int involved)
{
    MPI_Request rq;
    int done = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &rq);
    while (!done) {
        MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
        if (!done && !involved) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
}

#define SIZES 7
static const int sizes[SIZES] = {8, 1024, 16384, 65536, 262144, 1048576, 4194304};

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int reps = argc > 1 ? atoi(argv[1]) : 50;
    if (reps < 3)
        reps = 3;
    char *buf = calloc(4194304, 1), *buf2 = calloc(4194304, 1);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!buf || !buf2 || !t)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (rank == 0)
        printf("{\"ranks\": %d, \"pingpong_us\": {", size);
    for (int j = 1; j < size; j++) {
        if (rank == 0)
            printf("%s\"%d\": {", j > 1 ? ", " : "", j);
        for (int s = 0; s < SIZES; s++) {
            int n = sizes[s], r = reps > 20 && n >= 1048576 ? 20 : reps;
            quiet_barrier(rank == 0 || rank == j);
            for (int k = -2; k < r; k++) { /* two warm-up round trips */
                double t0 = MPI_Wtime();
                if (rank != 0 && rank != j) {
                    continue;
                } else if (rank == 0) {
                    MPI_Send(buf, n, MPI_BYTE, j, 0, MPI_COMM_WORLD);
                    MPI_Recv(buf2, n, MPI_BYTE, j, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                } else if (rank == j) {
                    MPI_Recv(buf2, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                    MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
                }
                if (k >= 0)
                    t[k] = (MPI_Wtime() - t0) / 2;
            }
            if (rank == 0)
                printf("%s\"%d\": %.4f", s ? ", " : "", n, 1e6 * median(t, r));
        }
        if (rank == 0)
            printf("}");
    }
    if (rank == 0)
        printf("}");

    /* LogP with rank 1: o, g */
    double o = 0, g = 0;
    if (size > 1) {
        const int burst = 200;
        MPI_Request *rq = malloc(sizeof(MPI_Request) * burst);
        for (int k = 0; k < reps; k++) {
            quiet_barrier(rank <= 1);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                MPI_Isend(buf, 8, MPI_BYTE, 1, 1, MPI_COMM_WORLD, &rq[0]);
                t[k] = MPI_Wtime() - t0;
                MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf2, 8, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        o = rank == 0 ? median(t, reps) : 0;
        for (int k = 0; k < reps; k++) {
            quiet_barrier(rank <= 1);
            if (rank == 0) {
                double t0 = MPI_Wtime();
                for (int m = 0; m < burst; m++)
                    MPI_Isend(buf, 8, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &rq[m]);
                MPI_Waitall(burst, rq, MPI_STATUSES_IGNORE);
                t[k] = (MPI_Wtime() - t0) / burst;
            } else if (rank == 1) {
                for (int m = 0; m < burst; m++)
                    MPI_Recv(buf2, 8, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
        }
        g = rank == 0 ? median(t, reps) : 0;
        free(rq);
    }

    /* gamma: local reduction cost per byte */
    int nd = 1 << 17;
    double *x = (double *)buf, *y = (double *)buf2;
    for (int i = 0; i < nd; i++)
        x[i] = i, y[i] = 1;
    for (int k = 0; k < reps; k++) {
        double t0 = MPI_Wtime();
        MPI_Reduce_local(x, y, nd, MPI_DOUBLE, MPI_SUM);
        t[k] = MPI_Wtime() - t0;
    }
    double gamma = median(t, reps) / (nd * 8.0);

    /* all at once vs in turn: rank 0 exchanges 1 MiB with every other rank */
    int n = 1 << 20, peers = size - 1, xr = reps > 20 ? 20 : reps;
    double at_once = 0, in_turn = 0;
    if (peers > 0) {
        char *rb = malloc((size_t)n * (size_t)peers);
        MPI_Request *rq = malloc(sizeof(MPI_Request) * 2 * (size_t)peers);
        for (int k = 0; k < xr; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                for (int p = 1; p <= peers; p++) {
                    MPI_Irecv(rb + (size_t)(p - 1) * n, n, MPI_BYTE, p, 3, MPI_COMM_WORLD, &rq[2 * (p - 1)]);
                    MPI_Isend(buf, n, MPI_BYTE, p, 3, MPI_COMM_WORLD, &rq[2 * (p - 1) + 1]);
                }
                MPI_Waitall(2 * peers, rq, MPI_STATUSES_IGNORE);
            } else {
                MPI_Sendrecv(buf, n, MPI_BYTE, 0, 3, buf2, n, MPI_BYTE, 0, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t[k] = MPI_Wtime() - t0;
        }
        at_once = median(t, xr);
        for (int k = 0; k < xr; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                for (int p = 1; p <= peers; p++)
                    MPI_Sendrecv(buf, n, MPI_BYTE, p, 4, rb, n, MPI_BYTE, p, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else {
                MPI_Sendrecv(buf, n, MPI_BYTE, 0, 4, buf2, n, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            t[k] = MPI_Wtime() - t0;
        }
        in_turn = median(t, xr);
        free(rb), free(rq);
    }
    if (rank == 0)
        printf(", \"logp\": {\"o_us\": %.4f, \"g_us\": %.4f}, \"gamma_ns_per_byte\": %.6f, "
               "\"exchange_1MiB_us\": {\"all_at_once\": %.3f, \"in_turn\": %.3f}}\n",
               1e6 * o, 1e6 * g, 1e9 * gamma, 1e6 * at_once, 1e6 * in_turn);
    free(buf), free(buf2), free(t);
    MPI_Finalize();
    return 0;
}
