/* MPI_Allreduce, MPI_Reduce and MPI_Bcast interposed (LD_PRELOAD, or linked into a program
 * for SMPI): each call either runs one of rankmap's kernels or goes to the MPI library
 * unchanged. The library is reached through the next definition of the symbol (so that a
 * profiler preloaded after this library still sees the calls that fall through), or through
 * PMPI when linked statically (RANKMAP_COLL_STATIC).
 *
 * Environment:
 *   RANKMAP_COLL=auto|off|force   auto: the size table; force: a kernel wherever one supports
 *                                 the call; off: always the library
 *   RANKMAP_COLL_ALLREDUCE=auto|lib|ring|ring1d|recdbl
 *   RANKMAP_COLL_REDUCE=auto|lib|kchain[:K]|kchain-opt|kchain-adaptive|chain|binomial|rsg
 *   RANKMAP_COLL_BCAST=auto|lib|chain|scatter-allgather
 *   RANKMAP_COLL_TUNING=file      thresholds (`rankmap tune-collectives` writes it)
 *   RANKMAP_COLL_PACKET=bytes     packet of the pipelined ring and chain steps (64k, 1M: KiB, MiB)
 *   RANKMAP_COLL_SEGMENT=bytes    segment of the chains (default from the chain's length)
 *   RANKMAP_COLL_LOGP=L,o,g,gamma LogP parameters (us, us, us, us per byte) for kchain-opt
 *   RANKMAP_COLL_VERBOSE=1        rank 0 of a communicator prints each new choice
 *   RANKMAP_COLL_ORDER, RANKMAP_COLL_GRID: the topology (topo.c) */
#define _GNU_SOURCE
#include "coll.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef RANKMAP_COLL_STATIC
#include <dlfcn.h>
#endif

enum kernel { K_AUTO, K_LIB, K_RING, K_RING1D, K_RECDBL, K_KCHAIN, K_KCHAIN_OPT, K_KCHAIN_ADAPTIVE,
              K_CHAIN, K_BINOMIAL, K_RSG, K_BCHAIN, K_BSAG, K_COUNT };
static const char *const KNAME[K_COUNT] = {"auto", "lib", "ring", "ring1d", "recdbl", "kchain", "kchain-opt",
                                           "kchain-adaptive", "chain", "binomial", "rsg", "chain",
                                           "scatter-allgather"};
enum opk { OP_ALLREDUCE, OP_REDUCE, OP_BCAST, OP_COUNT };
static const char *const OPNAME[OP_COUNT] = {"allreduce", "reduce", "bcast"};

#define MAXRULES 32
typedef struct {
    long min_bytes;
    enum kernel k;
    int kfix;   /* kchain:K */
} rule;

static struct {
    int mode;                   /* 0 off, 1 auto, 2 force */
    enum kernel choice[OP_COUNT];
    int kfix[OP_COUNT];
    rule rules[OP_COUNT][MAXRULES];
    int nrules[OP_COUNT];
    size_t packet_bytes, segment_bytes;
    double L, o, g, gamma;      /* us, us, us, us/byte */
    int have_logp;
    int verbose;
} cfg;
static pthread_once_t cfg_once = PTHREAD_ONCE_INIT;

/* The built-in table: what bench/collectives_sim.py measured on the simulated Angara-K1
 * torus (144 ranks, 4 per node; docs/collectives.md). Other machines: `rankmap
 * tune-collectives` writes a table for RANKMAP_COLL_TUNING. */
static void default_rules(void)
{
    cfg.rules[OP_ALLREDUCE][0] = (rule){0, K_RECDBL, 0};
    cfg.rules[OP_ALLREDUCE][1] = (rule){4096, K_RING, 0};
    cfg.nrules[OP_ALLREDUCE] = 2;
    cfg.rules[OP_REDUCE][0] = (rule){0, K_KCHAIN, 0};
    cfg.rules[OP_REDUCE][1] = (rule){4096, K_RSG, 0};
    cfg.nrules[OP_REDUCE] = 2;
    cfg.rules[OP_BCAST][0] = (rule){0, K_LIB, 0};
    cfg.rules[OP_BCAST][1] = (rule){524288, K_BSAG, 0};
    cfg.rules[OP_BCAST][2] = (rule){8 << 20, K_BCHAIN, 0};
    cfg.nrules[OP_BCAST] = 3;
}

static enum kernel parse_kernel(int op, const char *s, int *kfix)
{
    *kfix = 0;
    if (!strcmp(s, "auto"))
        return K_AUTO;
    if (!strcmp(s, "lib"))
        return K_LIB;
    if (op == OP_ALLREDUCE) {
        if (!strcmp(s, "ring"))
            return K_RING;
        if (!strcmp(s, "ring1d"))
            return K_RING1D;
        if (!strcmp(s, "recdbl"))
            return K_RECDBL;
    } else if (op == OP_REDUCE) {
        if (!strcmp(s, "kchain"))
            return K_KCHAIN;
        if (!strncmp(s, "kchain:", 7) && atoi(s + 7) > 0) {
            *kfix = atoi(s + 7);
            return K_KCHAIN;
        }
        if (!strcmp(s, "kchain-opt"))
            return K_KCHAIN_OPT;
        if (!strcmp(s, "kchain-adaptive"))
            return K_KCHAIN_ADAPTIVE;
        if (!strcmp(s, "chain"))
            return K_CHAIN;
        if (!strcmp(s, "binomial"))
            return K_BINOMIAL;
        if (!strcmp(s, "rsg"))
            return K_RSG;
    } else {
        if (!strcmp(s, "chain"))
            return K_BCHAIN;
        if (!strcmp(s, "scatter-allgather"))
            return K_BSAG;
    }
    return K_COUNT;
}

static void warn(const char *what, const char *val)
{
    fprintf(stderr, "rankmap-coll: ignoring %s=%s (see docs/collectives.md)\n", what, val);
}

/* A byte count: digits, optionally k, m or g (KiB, MiB, GiB), nothing after; atol read
 * "64k" as 64 bytes and "1e6" as 1. Returns 0 and sets *out, or -1. */
static int parse_bytes(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || *s == '-')
        return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k': case 'K': shift = 10; end++; break;
    case 'm': case 'M': shift = 20; end++; break;
    case 'g': case 'G': shift = 30; end++; break;
    default: break;
    }
    if (*end == 'i' || *end == 'I')        /* KiB, MiB written out */
        end++;
    if (*end == 'b' || *end == 'B')
        end++;
    if (*end || v > (SIZE_MAX >> shift))
        return -1;
    *out = (size_t)v << shift;
    return 0;
}

static void read_tuning(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "rankmap-coll: RANKMAP_COLL_TUNING=%s: cannot open; using the built-in table\n", path);
        return;
    }
    int seen[OP_COUNT] = {0};
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) >= 0) {
        char *save = NULL, *w0 = strtok_r(line, " \t\n", &save);
        if (!w0 || w0[0] == '#')
            continue;
        char *w1 = strtok_r(NULL, " \t\n", &save), *w2 = strtok_r(NULL, " \t\n", &save);
        size_t bytes;
        if (!strcmp(w0, "packet") && w1 && !parse_bytes(w1, &bytes) && bytes > 0) {
            cfg.packet_bytes = bytes;
            continue;
        }
        if (!strcmp(w0, "segment") && w1 && !parse_bytes(w1, &bytes) && bytes > 0) {
            cfg.segment_bytes = bytes;
            continue;
        }
        int op = -1;
        for (int i = 0; i < OP_COUNT; i++)
            if (!strcmp(w0, OPNAME[i]))
                op = i;
        int kfix;
        enum kernel k = (op >= 0 && w1 && w2) ? parse_kernel(op, w2, &kfix) : K_COUNT;
        if (k == K_COUNT || k == K_AUTO || atol(w1) < 0) {
            fprintf(stderr, "rankmap-coll: %s: ignoring line: %s %s %s\n", path, w0, w1 ? w1 : "", w2 ? w2 : "");
            continue;
        }
        if (!seen[op]) {   /* a table given for an op replaces the built-in one */
            seen[op] = 1;
            cfg.nrules[op] = 0;
        }
        if (cfg.nrules[op] < MAXRULES)
            cfg.rules[op][cfg.nrules[op]++] = (rule){atol(w1), k, kfix};
    }
    free(line);
    fclose(f);
}

static void cfg_init(void)
{
    cfg.mode = 1;
    cfg.packet_bytes = 256 << 10;
    default_rules();
    const char *s = getenv("RANKMAP_COLL");
    if (s && *s) {
        if (!strcmp(s, "off"))
            cfg.mode = 0;
        else if (!strcmp(s, "force"))
            cfg.mode = 2;
        else if (strcmp(s, "auto"))
            warn("RANKMAP_COLL", s);
    }
    const char *envs[OP_COUNT] = {"RANKMAP_COLL_ALLREDUCE", "RANKMAP_COLL_REDUCE", "RANKMAP_COLL_BCAST"};
    for (int op = 0; op < OP_COUNT; op++) {
        cfg.choice[op] = K_AUTO;
        s = getenv(envs[op]);
        if (s && *s) {
            enum kernel k = parse_kernel(op, s, &cfg.kfix[op]);
            if (k == K_COUNT)
                warn(envs[op], s);
            else
                cfg.choice[op] = k;
        }
    }
    if ((s = getenv("RANKMAP_COLL_TUNING")) && *s)
        read_tuning(s);
    size_t bytes;
    if ((s = getenv("RANKMAP_COLL_PACKET")) && *s) {
        if (!parse_bytes(s, &bytes) && bytes >= 8)
            cfg.packet_bytes = bytes;
        else
            warn("RANKMAP_COLL_PACKET", s);
    }
    if ((s = getenv("RANKMAP_COLL_SEGMENT")) && *s) {
        if (!parse_bytes(s, &bytes) && bytes >= 8)
            cfg.segment_bytes = bytes;
        else
            warn("RANKMAP_COLL_SEGMENT", s);
    }
    if ((s = getenv("RANKMAP_COLL_LOGP")) && *s) {
        if (sscanf(s, "%lf,%lf,%lf,%lf", &cfg.L, &cfg.o, &cfg.g, &cfg.gamma) == 4 && cfg.L >= 0 && cfg.o > 0 &&
            cfg.g >= 0 && cfg.gamma >= 0)
            cfg.have_logp = 1;
        else
            warn("RANKMAP_COLL_LOGP", s);
    }
    s = getenv("RANKMAP_COLL_VERBOSE");
    cfg.verbose = s && *s && strcmp(s, "0");
}

/* ---- the library's own collectives ---- */
typedef int (*allreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm);
typedef int (*reduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, int, MPI_Comm);
typedef int (*bcast_fn)(void *, int, MPI_Datatype, int, MPI_Comm);
static struct {
    allreduce_fn allreduce;
    reduce_fn reduce;
    bcast_fn bcast;
} next;
static pthread_once_t next_once = PTHREAD_ONCE_INIT;

static void find_next(void)
{
#ifndef RANKMAP_COLL_STATIC
    next.allreduce = (allreduce_fn)dlsym(RTLD_NEXT, "MPI_Allreduce");
    next.reduce = (reduce_fn)dlsym(RTLD_NEXT, "MPI_Reduce");
    next.bcast = (bcast_fn)dlsym(RTLD_NEXT, "MPI_Bcast");
#endif
    if (!next.allreduce)
        next.allreduce = PMPI_Allreduce;
    if (!next.reduce)
        next.reduce = PMPI_Reduce;
    if (!next.bcast)
        next.bcast = PMPI_Bcast;
}

/* ---- what a kernel can take ---- */
static int supported(MPI_Comm comm, int count, MPI_Datatype dt, MPI_Op op, int *p)
{
    int inter, ni, na, nd, combiner, commute = 1;
    if (comm == MPI_COMM_NULL || count <= 0 || dt == MPI_DATATYPE_NULL)
        return 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return 0;
    if (PMPI_Comm_size(comm, p) != MPI_SUCCESS || *p < 2)
        return 0;
    if (PMPI_Type_get_envelope(dt, &ni, &na, &nd, &combiner) != MPI_SUCCESS || combiner != MPI_COMBINER_NAMED)
        return 0;
    if (op != MPI_OP_NULL && (PMPI_Op_commutative(op, &commute) != MPI_SUCCESS || !commute))
        return 0;
    return 1;
}

static enum kernel choose(int op, long bytes, int *kfix)
{
    *kfix = cfg.kfix[op];
    if (cfg.mode == 0)
        return K_LIB;
    if (cfg.choice[op] != K_AUTO)
        return cfg.choice[op];
    if (cfg.mode == 2)
        return op == OP_ALLREDUCE ? K_RING : op == OP_REDUCE ? K_KCHAIN : K_BCHAIN;
    enum kernel k = K_LIB;
    long best = -1;
    for (int i = 0; i < cfg.nrules[op]; i++)
        if (cfg.rules[op][i].min_bytes <= bytes && cfg.rules[op][i].min_bytes >= best) {
            best = cfg.rules[op][i].min_bytes;
            k = cfg.rules[op][i].k;
            *kfix = cfg.rules[op][i].kfix;
        }
    return k;
}

static int setup(rm_ctx *c, MPI_Comm comm, MPI_Datatype dt, MPI_Op op, size_t packet_bytes)
{
    int err, me;
    c->t = rm_topo_get(comm, &err);
    if (!c->t)
        return err;
    PMPI_Comm_rank(comm, &me);
    c->comm = comm;
    c->me = c->t->pos[me];
    c->dt = dt;
    c->op = op;
    MPI_Aint lb;
    PMPI_Type_get_extent(dt, &lb, &c->ext);
    c->packet = packet_bytes / (size_t)c->ext;
    if (c->packet < 1)
        c->packet = 1;
    if (c->packet > (1u << 30))
        c->packet = 1u << 30;
    return MPI_SUCCESS;
}

/* Segments for a pipeline `depth` ranks deep: about sqrt(depth n beta / alpha) of them
 * (alpha / beta ~ 8 KB), between 8 KB and 1 MB, unless RANKMAP_COLL_SEGMENT says. */
static size_t segment_bytes(int depth, long bytes)
{
    if (cfg.segment_bytes)
        return cfg.segment_bytes;
    double nseg = sqrt((double)(depth > 1 ? depth : 1) * (double)bytes / 8192.0);
    size_t seg = (size_t)((double)bytes / (nseg < 1 ? 1 : nseg));
    return seg < 8192 ? 8192 : seg > (1u << 20) ? (1u << 20) : seg;
}

static void say(const rm_ctx *c, int op, enum kernel k, long bytes, const char *detail)
{
    /* one line per new (operation, kernel) on each communicator's rank 0: enough to check a run */
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static unsigned seen[OP_COUNT];
    if (!cfg.verbose || c->me != 0 || c->t->order[0] != 0)
        return;
    pthread_mutex_lock(&lock);
    int fresh = !(seen[op] & (1u << k));
    seen[op] |= 1u << k;
    pthread_mutex_unlock(&lock);
    if (fresh) {
        char grid[96] = "";
        for (int i = 0, n = 0; i < c->t->ndims && n < (int)sizeof grid - 12; i++)
            n += snprintf(grid + n, sizeof grid - (size_t)n, i ? "x%d" : "%d", c->t->dims[i]);
        fprintf(stderr, "rankmap-coll: %s of %ld B on %d ranks -> %s%s (order: %s, grid %s)\n", OPNAME[op], bytes,
                c->t->p, KNAME[k], detail, c->t->source, grid);
    }
}

static int fail(MPI_Comm comm, int err)
{
    if (err != MPI_SUCCESS)
        PMPI_Comm_call_errhandler(comm, err);
    return err;
}

static long type_bytes(MPI_Datatype dt, int count)
{
    int size = 0;
    PMPI_Type_size(dt, &size);
    return (long)size * count;
}

int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    pthread_once(&cfg_once, cfg_init);
    pthread_once(&next_once, find_next);
    int p, kfix;
    if (!supported(comm, count, dt, op, &p))
        return next.allreduce(sendbuf, recvbuf, count, dt, op, comm);
    long bytes = type_bytes(dt, count);
    enum kernel k = choose(OP_ALLREDUCE, bytes, &kfix);
    if (k == K_LIB)
        return next.allreduce(sendbuf, recvbuf, count, dt, op, comm);
    rm_ctx c;
    int err = setup(&c, comm, dt, op, cfg.packet_bytes);
    if (err != MPI_SUCCESS)
        return fail(comm, err);
    if (sendbuf != MPI_IN_PLACE)
        memcpy(recvbuf, sendbuf, (size_t)count * (size_t)c.ext);
    if (k == K_RECDBL) {
        say(&c, OP_ALLREDUCE, k, bytes, "");
        err = rm_allreduce_recdbl(&c, recvbuf, (size_t)count);
    } else if (k == K_RING1D) {
        int d = p;
        say(&c, OP_ALLREDUCE, k, bytes, "");
        err = rm_allreduce_ring(&c, recvbuf, (size_t)count, 1, &d);
    } else {
        say(&c, OP_ALLREDUCE, K_RING, bytes, "");
        err = rm_allreduce_ring(&c, recvbuf, (size_t)count, c.t->ndims, c.t->dims);
    }
    return fail(comm, err);
}

/* number of chains: fixed K, ceil(sqrt(P-1)), or the LogP optimum sqrt(a(P-1)/b) */
static int chains_for(enum kernel k, int kfix, int p, long bytes, int *lengths)
{
    int m = p - 1;
    if (k == K_KCHAIN_ADAPTIVE)
        return rm_chains_adaptive(m, lengths);
    int nk;
    if (k == K_CHAIN)
        nk = 1;
    else if (k == K_KCHAIN && kfix > 0)
        nk = kfix;
    else if (k == K_KCHAIN_OPT && cfg.have_logp) {
        double mg = cfg.gamma * (double)bytes;
        double a = 2 * cfg.o + cfg.L + mg, b = cfg.o + mg;
        nk = (int)lround(sqrt(a * m / b));
    } else {
        nk = (int)ceil(sqrt((double)m));
    }
    return rm_chains_fixed(m, nk, lengths);
}

int MPI_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
    pthread_once(&cfg_once, cfg_init);
    pthread_once(&next_once, find_next);
    int p, kfix, me;
    if (!supported(comm, count, dt, op, &p))
        return next.reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    PMPI_Comm_rank(comm, &me);
    long bytes = type_bytes(dt, count);
    enum kernel k = choose(OP_REDUCE, bytes, &kfix);
    if (k == K_LIB || root < 0 || root >= p)
        return next.reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    if (me != root && sendbuf == MPI_IN_PLACE)   /* erroneous: let the library say so */
        return next.reduce(sendbuf, recvbuf, count, dt, op, root, comm);
    rm_ctx c;
    int err;
    if (me == root && sendbuf != MPI_IN_PLACE) {
        MPI_Aint lb, ext;
        PMPI_Type_get_extent(dt, &lb, &ext);
        memcpy(recvbuf, sendbuf, (size_t)count * (size_t)ext);
    }
    if (k == K_BINOMIAL || k == K_RSG) {
        err = setup(&c, comm, dt, op, cfg.packet_bytes);
        if (err != MPI_SUCCESS)
            return fail(comm, err);
        say(&c, OP_REDUCE, k, bytes, "");
        err = k == K_BINOMIAL ? rm_reduce_binomial(&c, sendbuf, recvbuf, (size_t)count, root)
                              : rm_reduce_rsg(&c, sendbuf, recvbuf, (size_t)count, root, c.t->ndims, c.t->dims);
        return fail(comm, err);
    }
    int *lengths = malloc(sizeof(int) * (size_t)p);
    if (!lengths)
        return fail(comm, MPI_ERR_NO_MEM);
    int nchains = chains_for(k, kfix, p, bytes, lengths), longest = 0;
    for (int j = 0; j < nchains; j++)
        longest = lengths[j] > longest ? lengths[j] : longest;
    err = setup(&c, comm, dt, op, segment_bytes(longest, bytes));
    if (err != MPI_SUCCESS) {
        free(lengths);
        return fail(comm, err);
    }
    if (cfg.verbose) {
        char d[48];
        snprintf(d, sizeof d, " (%d chains)", nchains);
        say(&c, OP_REDUCE, k, bytes, d);
    }
    err = rm_reduce_chains(&c, sendbuf, recvbuf, (size_t)count, root, nchains, lengths);
    free(lengths);
    return fail(comm, err);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
    pthread_once(&cfg_once, cfg_init);
    pthread_once(&next_once, find_next);
    int p, kfix;
    if (!supported(comm, count, dt, MPI_OP_NULL, &p) || root < 0 || root >= p)
        return next.bcast(buf, count, dt, root, comm);
    long bytes = type_bytes(dt, count);
    enum kernel k = choose(OP_BCAST, bytes, &kfix);
    if (k == K_LIB)
        return next.bcast(buf, count, dt, root, comm);
    rm_ctx c;
    int err = setup(&c, comm, dt, MPI_OP_NULL, k == K_BCHAIN ? segment_bytes(p - 2, bytes) : cfg.packet_bytes);
    if (err != MPI_SUCCESS)
        return fail(comm, err);
    say(&c, OP_BCAST, k, bytes, "");
    if (k == K_BSAG)
        err = rm_bcast_scatter_allgather(&c, buf, (size_t)count, root);
    else
        err = rm_bcast_chain(&c, buf, (size_t)count, root, c.packet);
    return fail(comm, err);
}
