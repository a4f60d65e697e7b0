/* Test program with known traffic, one mode per feature (argv[1]).
 * tests/test_profiler.py computes the expected matrix of each mode independently. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank, size;

#define CHECK(x)                                                          \
    do {                                                                  \
        if ((x) != MPI_SUCCESS) {                                         \
            fprintf(stderr, "rank %d: %s failed\n", rank, #x);            \
            MPI_Abort(MPI_COMM_WORLD, 99);                                \
        }                                                                 \
    } while (0)

static int right(int r, int p) { return (r + 1) % p; }
static int left(int r, int p) { return (r + p - 1) % p; }

/* Sendrecv 1000 doubles right x5, Isend 7 ints left x3, Ssend 13 chars to rank+2 */
static void mode_ring(void)
{
    double a[1000] = {0}, b[1000];
    for (int i = 0; i < 5; i++)
        CHECK(MPI_Sendrecv(a, 1000, MPI_DOUBLE, right(rank, size), 1, b, 1000, MPI_DOUBLE, left(rank, size), 1,
                           MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    int x[7] = {0}, y[7];
    for (int i = 0; i < 3; i++) {
        MPI_Request rq[2];
        CHECK(MPI_Irecv(y, 7, MPI_INT, right(rank, size), 2, MPI_COMM_WORLD, &rq[0]));
        CHECK(MPI_Isend(x, 7, MPI_INT, left(rank, size), 2, MPI_COMM_WORLD, &rq[1]));
        CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }
    char c[13] = {0}, d[13];
    MPI_Request rr;
    CHECK(MPI_Irecv(d, 13, MPI_CHAR, (rank - 2 + 2 * size) % size, 3, MPI_COMM_WORLD, &rr));
    CHECK(MPI_Ssend(c, 13, MPI_CHAR, (rank + 2) % size, 3, MPI_COMM_WORLD));
    CHECK(MPI_Wait(&rr, MPI_STATUS_IGNORE));
    /* to MPI_PROC_NULL: never counted */
    CHECK(MPI_Send(a, 1000, MPI_DOUBLE, MPI_PROC_NULL, 4, MPI_COMM_WORLD));
}

/* every rank r > 0 sends r messages of 100*r bytes to rank 0, received with MPI_ANY_SOURCE */
static void mode_anysource(void)
{
    if (rank == 0) {
        char *buf = malloc(100 * (size_t)size);
        int total = 0;
        for (int r = 1; r < size; r++)
            total += r;
        for (int i = 0; i < total; i++)
            CHECK(MPI_Recv(buf, 100 * size, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        free(buf);
    } else {
        char *buf = calloc(100 * (size_t)rank, 1);
        for (int i = 0; i < rank; i++)
            CHECK(MPI_Send(buf, 100 * rank, MPI_BYTE, 0, i, MPI_COMM_WORLD));
        free(buf);
    }
}

/* split comms that are created and freed repeatedly (handles are reused) */
static void mode_subcomm(void)
{
    int v[64] = {0}, w[64];
    for (int it = 0; it < 4; it++) {
        MPI_Comm sub;
        /* iteration it: color (rank+it)%2, key reversed on odd iterations */
        CHECK(MPI_Comm_split(MPI_COMM_WORLD, (rank + it) % 2, it % 2 ? -rank : rank, &sub));
        int sr, sp;
        MPI_Comm_rank(sub, &sr);
        MPI_Comm_size(sub, &sp);
        CHECK(MPI_Sendrecv(v, 64, MPI_INT, right(sr, sp), 0, w, 64, MPI_INT, left(sr, sp), 0, sub, MPI_STATUS_IGNORE));
        CHECK(MPI_Comm_free(&sub));
    }
}

/* intercommunicator between evens and odds: local rank i sends 5 doubles to remote rank i */
static void mode_intercomm(void)
{
    if (size >= 2) {
        MPI_Comm half, inter;
        CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half));
        CHECK(MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, rank % 2 ? 0 : 1, 7, &inter));
        int lr, rs;
        MPI_Comm_rank(inter, &lr);
        MPI_Comm_remote_size(inter, &rs);
        double d[5] = {0}, e[5];
        if (lr < rs) {
            MPI_Request q[2];
            CHECK(MPI_Irecv(e, 5, MPI_DOUBLE, lr, 1, inter, &q[0]));
            CHECK(MPI_Isend(d, 5, MPI_DOUBLE, lr, 1, inter, &q[1]));
            CHECK(MPI_Waitall(2, q, MPI_STATUSES_IGNORE));
        }
        MPI_Comm_free(&inter);
        MPI_Comm_free(&half);
    }
}

/* persistent: 50 doubles right, started 4 times; after free, 3 ints left started 3 times */
static void mode_persistent(void)
{
    double a[50] = {0}, b[50];
    MPI_Request rq[2];
    CHECK(MPI_Send_init(a, 50, MPI_DOUBLE, right(rank, size), 0, MPI_COMM_WORLD, &rq[0]));
    CHECK(MPI_Recv_init(b, 50, MPI_DOUBLE, left(rank, size), 0, MPI_COMM_WORLD, &rq[1]));
    for (int i = 0; i < 4; i++) {
        CHECK(MPI_Startall(2, rq));
        CHECK(MPI_Waitall(2, rq, MPI_STATUSES_IGNORE));
    }
    MPI_Request_free(&rq[0]);
    MPI_Request_free(&rq[1]);
    int x[3] = {0}, y[3];
    MPI_Request s, r;
    CHECK(MPI_Ssend_init(x, 3, MPI_INT, left(rank, size), 1, MPI_COMM_WORLD, &s));
    CHECK(MPI_Recv_init(y, 3, MPI_INT, right(rank, size), 1, MPI_COMM_WORLD, &r));
    for (int i = 0; i < 3; i++) {
        CHECK(MPI_Start(&r));
        CHECK(MPI_Start(&s));
        CHECK(MPI_Wait(&s, MPI_STATUS_IGNORE));
        CHECK(MPI_Wait(&r, MPI_STATUS_IGNORE));
    }
    MPI_Request_free(&s);
    MPI_Request_free(&r);
}

/* derived datatypes: 3 x vector(10 blocks of 2 ints, stride 5) = 240 B right;
 * 2 x contiguous(4 doubles) = 64 B left */
static void mode_datatypes(void)
{
    MPI_Datatype vec, con;
    CHECK(MPI_Type_vector(10, 2, 5, MPI_INT, &vec));
    CHECK(MPI_Type_commit(&vec));
    CHECK(MPI_Type_contiguous(4, MPI_DOUBLE, &con));
    CHECK(MPI_Type_commit(&con));
    int *v = calloc(3 * 50, sizeof(int)), *w = calloc(3 * 50, sizeof(int));
    CHECK(MPI_Sendrecv(v, 3, vec, right(rank, size), 0, w, 3, vec, left(rank, size), 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    double d[8] = {0}, e[8];
    CHECK(MPI_Sendrecv(d, 2, con, left(rank, size), 1, e, 2, con, right(rank, size), 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MPI_Type_free(&vec);
    MPI_Type_free(&con);
    free(v);
    free(w);
}

/* MPI_IN_PLACE: alltoallv in place with counts (r + j + 1) ints from r to j; allreduce; gather */
static void mode_inplace(void)
{
    int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size), n = 0;
    for (int j = 0; j < size; j++) {
        counts[j] = rank + j + 1; /* symmetric: what r sends to j equals what j sends to r */
        displs[j] = n;
        n += counts[j];
    }
    int *buf = calloc((size_t)n, sizeof(int));
    CHECK(MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, buf, counts, displs, MPI_INT, MPI_COMM_WORLD));
    double s[10] = {1};
    CHECK(MPI_Allreduce(MPI_IN_PLACE, s, 10, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    double *g = calloc((size_t)size * 3, sizeof(double));
    if (rank == 0)
        CHECK(MPI_Gather(MPI_IN_PLACE, 3, MPI_DOUBLE, g, 3, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    else
        CHECK(MPI_Gather(g, 3, MPI_DOUBLE, NULL, 0, MPI_DATATYPE_NULL, 0, MPI_COMM_WORLD));
    free(g);
    free(buf);
    free(counts);
    free(displs);
}

/* MPI_THREAD_MULTIPLE: 4 threads; thread t sends 100 messages of t+1 ints right on its own
 * dup of MPI_COMM_WORLD, and 50 messages of 2 doubles left on MPI_COMM_WORLD (tag t) */
static MPI_Comm tcomm[4];
static void *thread_main(void *arg)
{
    int t = (int)(long)arg;
    int v[4] = {0}, w[4];
    for (int i = 0; i < 100; i++)
        MPI_Sendrecv(v, t + 1, MPI_INT, right(rank, size), t, w, t + 1, MPI_INT, left(rank, size), t, tcomm[t],
                     MPI_STATUS_IGNORE);
    double d[2] = {0}, e[2];
    for (int i = 0; i < 50; i++)
        MPI_Sendrecv(d, 2, MPI_DOUBLE, left(rank, size), 100 + t, e, 2, MPI_DOUBLE, right(rank, size), 100 + t,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return NULL;
}

static void mode_threads(void)
{
    pthread_t th[4];
    for (int t = 0; t < 4; t++)
        CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &tcomm[t]));
    for (int t = 0; t < 4; t++)
        pthread_create(&th[t], NULL, thread_main, (void *)(long)t);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < 4; t++)
        MPI_Comm_free(&tcomm[t]);
}

/* one-sided: put 10 ints right, get 20 ints from left, accumulate 5 doubles into rank 0 */
static void mode_onesided(void)
{
    double *base;
    MPI_Win win;
    CHECK(MPI_Win_allocate(1024, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &win));
    int p[10] = {0}, g[20];
    double acc[5] = {1, 1, 1, 1, 1};
    CHECK(MPI_Win_fence(0, win));
    CHECK(MPI_Put(p, 10, MPI_INT, right(rank, size), 0, 10, MPI_INT, win));
    CHECK(MPI_Win_fence(0, win));
    CHECK(MPI_Get(g, 20, MPI_INT, left(rank, size), 64, 20, MPI_INT, win));
    CHECK(MPI_Win_fence(0, win));
    CHECK(MPI_Accumulate(acc, 5, MPI_DOUBLE, 0, 512, 5, MPI_DOUBLE, MPI_SUM, win));
    CHECK(MPI_Win_fence(0, win));
    MPI_Win_free(&win);
}

/* neighbourhood collectives: periodic 2-D cart with 3 ints per neighbour (alltoall);
 * dist graph r -> r+1, r+3 with 5 doubles (allgather) and (k+1) ints (alltoallv) */
static void mode_neighbor(void)
{
    int dims[2] = {0, 0}, periods[2] = {1, 1};
    MPI_Dims_create(size, 2, dims);
    MPI_Comm cart;
    CHECK(MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 0, &cart));
    int s[12] = {0}, r[12];
    CHECK(MPI_Neighbor_alltoall(s, 3, MPI_INT, r, 3, MPI_INT, cart));
    MPI_Comm_free(&cart);

    int dst[2] = {(rank + 1) % size, (rank + 3) % size};
    int src[2] = {(rank - 1 + size) % size, (rank - 3 + 3 * size) % size};
    int wts[2] = {1, 1}; /* weighted: also exercises the profiler's weighted-graph query */
    MPI_Comm g;
    CHECK(MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 2, src, wts, 2, dst, wts, MPI_INFO_NULL, 0, &g));
    double d[5] = {0}, e[10];
    CHECK(MPI_Neighbor_allgather(d, 5, MPI_DOUBLE, e, 5, MPI_DOUBLE, g));
    int sc[2] = {1, 2}, sd[2] = {0, 1}, rc[2] = {1, 2}, rd[2] = {0, 1}, sb[3] = {0}, rb[3];
    CHECK(MPI_Neighbor_alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, g));
    MPI_Comm_free(&g);
}

/* v-collectives with exact pairs: alltoallv (r+j+1 ints r->j), gatherv to 1 (r+1 doubles),
 * scatterv from 2 (j+2 chars to j), alltoallw (1 double to each) */
static void mode_vcoll(void)
{
    int *sc = malloc(sizeof(int) * size), *sd = malloc(sizeof(int) * size);
    int *rc = malloc(sizeof(int) * size), *rd = malloc(sizeof(int) * size);
    int ns = 0, nr = 0;
    for (int j = 0; j < size; j++) {
        sc[j] = rank + j + 1, sd[j] = ns, ns += sc[j];
        rc[j] = j + rank + 1, rd[j] = nr, nr += rc[j];
    }
    int *sb = calloc((size_t)ns, sizeof(int)), *rb = calloc((size_t)nr, sizeof(int));
    CHECK(MPI_Alltoallv(sb, sc, sd, MPI_INT, rb, rc, rd, MPI_INT, MPI_COMM_WORLD));
    double *gb = calloc((size_t)size * (size + 1), sizeof(double)), mine[64] = {0};
    int *gc = malloc(sizeof(int) * size), *gd = malloc(sizeof(int) * size);
    for (int j = 0, o = 0; j < size; j++)
        gc[j] = j + 1, gd[j] = o, o += j + 1;
    CHECK(MPI_Gatherv(mine, rank + 1, MPI_DOUBLE, gb, gc, gd, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD));
    char *cb = calloc((size_t)size * (size + 2), 1), cr[128];
    int *cc = malloc(sizeof(int) * size), *cd = malloc(sizeof(int) * size);
    for (int j = 0, o = 0; j < size; j++)
        cc[j] = j + 2, cd[j] = o, o += j + 2;
    CHECK(MPI_Scatterv(cb, cc, cd, MPI_CHAR, cr, rank + 2, MPI_CHAR, 2 % size, MPI_COMM_WORLD));
    MPI_Datatype *ty = malloc(sizeof(MPI_Datatype) * size);
    int *one = malloc(sizeof(int) * size), *wd = malloc(sizeof(int) * size);
    for (int j = 0; j < size; j++)
        ty[j] = MPI_DOUBLE, one[j] = 1, wd[j] = 8 * j;
    double *ws = calloc((size_t)size, sizeof(double)), *wr = calloc((size_t)size, sizeof(double));
    CHECK(MPI_Alltoallw(ws, one, wd, ty, wr, one, wd, ty, MPI_COMM_WORLD));
    free(sc), free(sd), free(rc), free(rd), free(sb), free(rb), free(gb), free(gc), free(gd);
    free(cb), free(cc), free(cd), free(ty), free(one), free(wd), free(ws), free(wr);
}

/* the collective table: known ops, roots, sizes, calls */
static void mode_collectives(void)
{
    double d[1000] = {0}, e[1000 * 16];
    for (int i = 0; i < 3; i++)
        CHECK(MPI_Bcast(d, 100, MPI_DOUBLE, 1 % size, MPI_COMM_WORLD));         /* 800 B, root 1, x3 */
    CHECK(MPI_Reduce(d, e, 1000, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD));      /* 8000 B root 0 */
    for (int i = 0; i < 2; i++)
        CHECK(MPI_Allreduce(d, e, 10, MPI_INT, MPI_MAX, MPI_COMM_WORLD));       /* 40 B x2 */
    CHECK(MPI_Allgather(d, 4, MPI_DOUBLE, e, 4, MPI_DOUBLE, MPI_COMM_WORLD));   /* 32 B block */
    CHECK(MPI_Alltoall(d, 2, MPI_DOUBLE, e, 2, MPI_DOUBLE, MPI_COMM_WORLD));    /* 16 B per pair */
    CHECK(MPI_Barrier(MPI_COMM_WORLD));
    MPI_Request q;
    CHECK(MPI_Iallreduce(d, e, 300, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q));   /* 1200 B */
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    MPI_Comm half;
    CHECK(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, -rank, &half));              /* reversed order */
    CHECK(MPI_Bcast(d, 7, MPI_CHAR, 0, half));                                  /* 7 B, root = last rank of the half */
    MPI_Comm_free(&half);
}

/* MPI-4.0's Isendrecv (24 B right) and Isendrecv_replace (40 B left), and their large-count
 * twins (8 B right, 16 B left); a library without them sends nothing here */
static void mode_mpi4(void)
{
#if MPI_VERSION >= 4 && !defined(OPEN_MPI)
    char a[40] = {0}, b[40];
    MPI_Request q;
    CHECK(MPI_Isendrecv(a, 24, MPI_CHAR, right(rank, size), 5, b, 24, MPI_CHAR, left(rank, size), 5, MPI_COMM_WORLD, &q));
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(MPI_Isendrecv_replace(a, 40, MPI_CHAR, left(rank, size), 6, right(rank, size), 6, MPI_COMM_WORLD, &q));
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(MPI_Isendrecv_c(a, 8, MPI_CHAR, right(rank, size), 7, b, 8, MPI_CHAR, left(rank, size), 7, MPI_COMM_WORLD, &q));
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
    CHECK(MPI_Isendrecv_replace_c(a, 16, MPI_CHAR, left(rank, size), 8, right(rank, size), 8, MPI_COMM_WORLD, &q));
    CHECK(MPI_Wait(&q, MPI_STATUS_IGNORE));
#endif
}

/* the ring, then rank 0 sends 300 B to a process it spawned (outside MPI_COMM_WORLD) */
static void mode_spawn(char *self)
{
    MPI_Comm parent, child;
    char b[300] = {0};
    CHECK(MPI_Comm_get_parent(&parent));
    if (parent != MPI_COMM_NULL) {
        CHECK(MPI_Recv(b, 300, MPI_CHAR, 0, 1, parent, MPI_STATUS_IGNORE));
        CHECK(MPI_Comm_disconnect(&parent));
        return;
    }
    mode_ring();
    char *args[] = {"spawn", NULL};
    CHECK(MPI_Comm_spawn(self, args, 1, MPI_INFO_NULL, 0, MPI_COMM_WORLD, &child, MPI_ERRCODES_IGNORE));
    if (rank == 0)
        CHECK(MPI_Send(b, 300, MPI_CHAR, 0, 1, child));
    CHECK(MPI_Comm_disconnect(&child));
}

/* whether MPI_COMM_WORLD's handler reads back as the default, and as what was set */
static int mode_errhandler(void)
{
    MPI_Errhandler eh;
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    if (eh != MPI_ERRORS_ARE_FATAL)
        return fprintf(stderr, "rank %d: the default handler is not MPI_ERRORS_ARE_FATAL\n", rank), 3;
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    if (eh != MPI_ERRORS_RETURN)
        return fprintf(stderr, "rank %d: MPI_ERRORS_RETURN did not read back\n", rank), 3;
    CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL));
    CHECK(MPI_Comm_get_errhandler(MPI_COMM_WORLD, &eh));
    if (eh != MPI_ERRORS_ARE_FATAL)
        return fprintf(stderr, "rank %d: MPI_ERRORS_ARE_FATAL did not read back\n", rank), 3;
    mode_ring();
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ring";
    if (!strcmp(mode, "threads")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
        if (provided != MPI_THREAD_MULTIPLE) {
            fprintf(stderr, "no MPI_THREAD_MULTIPLE\n");
            MPI_Abort(MPI_COMM_WORLD, 98);
        }
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (!strcmp(mode, "ring")) mode_ring();
    else if (!strcmp(mode, "anysource")) mode_anysource();
    else if (!strcmp(mode, "subcomm")) mode_subcomm();
    else if (!strcmp(mode, "intercomm")) mode_intercomm();
    else if (!strcmp(mode, "persistent")) mode_persistent();
    else if (!strcmp(mode, "datatypes")) mode_datatypes();
    else if (!strcmp(mode, "inplace")) mode_inplace();
    else if (!strcmp(mode, "threads")) mode_threads();
    else if (!strcmp(mode, "onesided")) mode_onesided();
    else if (!strcmp(mode, "neighbor")) mode_neighbor();
    else if (!strcmp(mode, "vcoll")) mode_vcoll();
    else if (!strcmp(mode, "collectives")) mode_collectives();
    else if (!strcmp(mode, "mpi4")) mode_mpi4();
    else if (!strcmp(mode, "spawn")) mode_spawn(argv[0]);
    else if (!strcmp(mode, "errhandler")) {
        int rc = mode_errhandler();
        if (rc)
            return rc;
    }
    else if (!strcmp(mode, "abort")) {
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1)
            MPI_Abort(MPI_COMM_WORLD, 3);
        sleep(60); /* the others are killed by the launcher */
    } else if (!strcmp(mode, "mpierror")) {
        /* a send to a rank that does not exist, under the default MPI_ERRORS_ARE_FATAL */
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == size - 1)
            MPI_Send(&rank, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD);
        sleep(60);
    } else if (!strcmp(mode, "winerror")) {
        /* a one-sided call to a rank that does not exist: windows have their own default handler */
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        int buf[4] = {0};
        MPI_Win win;
        CHECK(MPI_Win_create(buf, sizeof buf, sizeof(int), MPI_INFO_NULL, MPI_COMM_WORLD, &win));
        CHECK(MPI_Win_fence(0, win));
        if (rank == size - 1)
            MPI_Put(buf, 1, MPI_INT, size + 5, 0, 1, MPI_INT, win);
        sleep(60);
    } else if (!strcmp(mode, "errreturn")) {
        /* the program's own handler: the error comes back and the run goes on */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (MPI_Send(&rank, 1, MPI_INT, size + 5, 0, MPI_COMM_WORLD) == MPI_SUCCESS) {
            fprintf(stderr, "rank %d: a send to rank %d succeeded\n", rank, size + 5);
            return 2;
        }
        mode_ring();
    } else if (!strcmp(mode, "sigkill")) {
        /* no handler runs: only the snapshots keep rank 1's data */
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            raise(SIGKILL);
        sleep(60);
    } else if (!strcmp(mode, "crash")) {
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1)
            raise(SIGSEGV);
        sleep(60);
    } else if (!strcmp(mode, "nofinalize")) {
        mode_ring();
        MPI_Barrier(MPI_COMM_WORLD);
        exit(0);
    } else {
        if (rank == 0)
            fprintf(stderr, "unknown mode %s\n", mode);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Finalize();
    return 0;
}
