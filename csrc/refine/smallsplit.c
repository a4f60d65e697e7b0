/* rankmap mapper: many splits in one call.
 *
 * The hierarchical partitioning of a big machine ends in thousands of splits of a few dozen
 * ranks (a node's ranks into its packages: 31,250 of them at 10^6 ranks). Through METIS each
 * costs about 0.3 ms of calls, copies and capacity repair for microseconds of work; here a
 * whole level's such splits run in one call. Each group is split into k parts of at most
 * caps[j] ranks, minimising the weight cut: greedy growing from a few seeds (sizes in
 * proportion to the capacities, as partition.in_order), a descent by single moves (into
 * parts with room) and pair swaps, then Fiduccia-Mattheyses passes; two halves across nodes
 * are then given to the children as partition._orient would. Small graphs (partition.py
 * sends at most SMALL_SPLIT = 64 ranks: without coarsening, bigger ones are cut worse than
 * METIS cuts them), so every step is a plain scan.
 *
 * Given METIS's entry point (the system's 32-bit libmetis, found by mapper/libmetis.py: this
 * library does not link it), the groups are bisected by METIS instead, each then repaired to
 * the capacities as partition.repair does and oriented: the middle levels of a big machine
 * (15,600 splits of 128+ ranks at 10^6 ranks), whose Python glue around each METIS call (the
 * subgraph's arrays, the repair, the orientation in numpy) cost twice METIS's own time. */
#include <stdint.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "refine.h"

#define STARTS 8     /* greedy starts per group: the lowest-index rank, then random ones */
/* A batch of at least BIG_GROUPS groups and BIG_RANKS ranks (a machine of 5*10^5+ ranks:
 * its nodes' and sockets' splits) gets the first start only: the local search after the
 * partitioning evens out most of what the other starts find, and they were 7 s of 57 s at 10^6
 * ranks (bench/mapper_scaling.py's random graph, cost 0.71480 -> 0.71479 of block; its
 * stencil the same). Held out: at 10^6 ranks a 27-point stencil +0.24 % cost (35.8 -> 28.4 s
 * with this session's other speed-ups), AMR traffic +0.31 %; at 10^5 ranks, where it saved
 * 0.2-0.5 s, 8 of 10 held-out instances of bench/instances.py cost 0.03-0.35 % more, so
 * below 5*10^5 ranks the eight starts stay. */
#define BIG_GROUPS 1024
#define BIG_RANKS 500000
#define PASSES 16    /* descent passes at most (each a full scan; they stop when none gains) */
#define ROW_AHEAD 4  /* rows ahead whose partners' reads the group's extraction prefetches */

static uint64_t mix(uint64_t x) /* splitmix64: a seed per group and start */
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* sizes in proportion to the capacities, the remainder to the largest fractions (ties: the
 * lower part), exactly as partition.in_order */
static void targets(int64_t m, int32_t k, const int64_t *caps, int64_t *size, double *frac)
{
    double tot = 0;
    for (int32_t j = 0; j < k; j++)
        tot += (double)caps[j];
    int64_t left = m;
    for (int32_t j = 0; j < k; j++) {
        double share = (double)caps[j] * (double)m / tot;
        size[j] = (int64_t)share;
        frac[j] = share - (double)size[j];
        left -= size[j];
    }
    for (; left > 0; left--) {
        int32_t b = 0;
        for (int32_t j = 1; j < k; j++)
            if (frac[j] > frac[b])
                b = j;
        size[b]++;
        frac[b] = -1.0;
    }
}

typedef struct {
    int64_t *ptr, *adj, *part, *best, *size, *cnt;
    double *w, *conn, *frac, *mark;
    int64_t *ext_t, *ext_q; /* the edges leaving the group: where their far end sits, local row */
    double *ext_w;
    int64_t *tmark, *tlist; /* orient: the distinct far ends (tmark: one -1 per slot, left so) */
    double *tw;             /* orient: each part's weight to each distinct far end */
    int32_t *ip32, *adj32, *w32, *part32; /* METIS's copy of the group (32-bit indices) */
    struct candidate *cand;                /* repair's moves */
} scratch;

typedef struct candidate {
    double gain;
    int64_t v;
} candidate;

static int by_gain(const void *x, const void *y) /* best gain first, ties by rank */
{
    const candidate *a = x, *b = y;
    if (a->gain != b->gain)
        return a->gain > b->gain ? -1 : 1;
    return (a->v > b->v) - (a->v < b->v);
}

/* METIS_PartGraphRecursive with 32-bit idx_t and real_t (what mapper/libmetis.py checks) */
typedef int (*metis_recursive)(int32_t *nvtxs, int32_t *ncon, int32_t *xadj, int32_t *adjncy, int32_t *vwgt,
                               int32_t *vsize, int32_t *adjwgt, int32_t *nparts, float *tpwgts, float *ubvec,
                               int32_t *options, int32_t *objval, int32_t *part);
#define METIS_NOPTIONS 40
#define METIS_OPTION_SEED 8
#define METIS_OPTION_UFACTOR 16
#define METIS_OK 1

/* greedy growing: part j (all but the last) takes the unassigned rank most attached to it,
 * from a first rank `first`, until it holds size[j]; the last part takes the rest */
static void grow(int64_t m, int32_t k, const scratch *s, int64_t first)
{
    int64_t *part = s->part;
    double *g = s->mark; /* attachment to the part being grown */
    for (int64_t v = 0; v < m; v++)
        part[v] = -1;
    for (int32_t j = 0; j < k - 1; j++) {
        for (int64_t v = 0; v < m; v++)
            g[v] = 0.0;
        for (int64_t filled = 0; filled < s->size[j]; filled++) {
            int64_t pick = -1;
            if (filled == 0 && first >= 0 && part[first] < 0)
                pick = first;
            else
                for (int64_t v = 0; v < m; v++) /* most attached; none attached: the lowest index */
                    if (part[v] < 0 && (pick < 0 || g[v] > g[pick]))
                        pick = v;
            part[pick] = j;
            for (int64_t e = s->ptr[pick]; e < s->ptr[pick + 1]; e++)
                g[s->adj[e]] += s->w[e];
        }
    }
    for (int64_t v = 0; v < m; v++)
        if (part[v] < 0)
            part[v] = k - 1;
}

static void move(const scratch *s, int32_t k, int64_t v, int64_t to)
{
    int64_t from = s->part[v];
    for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++) {
        s->conn[s->adj[e] * k + from] -= s->w[e];
        s->conn[s->adj[e] * k + to] += s->w[e];
    }
    s->part[v] = to;
    s->cnt[from]--, s->cnt[to]++;
}

/* descent: a rank moves to the part it gains most by, if that part has room, or else swaps
 * with the rank of another part that gains most with it; returns the cut */
static double descend(int64_t m, int32_t k, const int64_t *caps, const scratch *s)
{
    int64_t *part = s->part;
    double *conn = s->conn, *wv = s->mark;
    memset(conn, 0, sizeof(double) * (size_t)(m * k));
    memset(s->cnt, 0, sizeof(int64_t) * (size_t)k);
    for (int64_t v = 0; v < m; v++) {
        s->cnt[part[v]]++;
        for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++)
            conn[v * k + part[s->adj[e]]] += s->w[e];
    }
    for (int64_t v = 0; v < m; v++)
        wv[v] = 0.0;
    for (int pass = 0; pass < PASSES; pass++) {
        int improved = 0;
        for (int64_t v = 0; v < m; v++) {
            int64_t a = part[v];
            double own = conn[v * k + a], bestg = 1e-12 * (own > 0 ? own : 1.0);
            int64_t to = -1, with = -1;
            for (int32_t q = 0; q < k; q++)
                if (q != a && s->cnt[q] < caps[q] && conn[v * k + q] - own > bestg)
                    bestg = conn[v * k + q] - own, to = q;
            if (to < 0) {
                for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++)
                    wv[s->adj[e]] += s->w[e];
                for (int64_t u = 0; u < m; u++) {
                    int64_t q = part[u];
                    if (q == a)
                        continue;
                    double gain = conn[v * k + q] - own + conn[u * k + a] - conn[u * k + q] - 2.0 * wv[u];
                    if (gain > bestg)
                        bestg = gain, with = u;
                }
                for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++)
                    wv[s->adj[e]] = 0.0;
            }
            if (to >= 0) {
                move(s, k, v, to);
                improved = 1;
            } else if (with >= 0) {
                int64_t q = part[with];
                move(s, k, v, q);
                move(s, k, with, a);
                improved = 1;
            }
        }
        if (!improved)
            break;
    }
    double cut = 0.0;
    for (int64_t v = 0; v < m; v++)
        for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++)
            if (part[s->adj[e]] != part[v])
                cut += s->w[e];
    return cut / 2.0;
}

/* two parts of one size: swapped when the other way round puts their traffic leaving the
 * group (its next edges, gathered while the group was read) over shorter distances
 * (partition._orient, for k = 2). The far ends are the representative slots of the level's
 * subtrees, few and repeated: each distinct one's distances are computed once. */
static void orient(const scratch *s, int64_t next, int64_t *part, int64_t m, const rm_problem *p, const int64_t *heads)
{
    int64_t nt = 0;
    for (int64_t i = 0; i < next; i++) {
        int64_t t = s->ext_t[i], at = s->tmark[t];
        if (at < 0) {
            at = s->tmark[t] = nt;
            s->tlist[nt] = t;
            s->tw[2 * nt] = s->tw[2 * nt + 1] = 0.0;
            nt++;
        }
        s->tw[2 * at + part[s->ext_q[i]]] += s->ext_w[i];
    }
    double c[2][2] = {{0, 0}, {0, 0}}; /* part j's outside traffic if it goes to child h */
    for (int64_t i = 0; i < nt; i++) {
        int64_t t = s->tlist[i];
        double d0 = rm_dist(p, heads[0], t), d1 = rm_dist(p, heads[1], t);
        c[0][0] += s->tw[2 * i] * d0, c[0][1] += s->tw[2 * i] * d1;
        c[1][0] += s->tw[2 * i + 1] * d0, c[1][1] += s->tw[2 * i + 1] * d1;
        s->tmark[t] = -1;
    }
    double keep = c[0][0] + c[1][1], swap = c[0][1] + c[1][0];
    if (swap < keep - 1e-12 * keep)
        for (int64_t q = 0; q < m; q++)
            part[q] = 1 - part[q];
}

/* Fiduccia-Mattheyses passes: the unlocked rank and part of highest gain move (out of the
 * overfull part when one is over its capacity, into a part with room; else anywhere, to at
 * most one over a capacity), even at a loss, and the rank is locked; the pass then goes back
 * to its best prefix within the capacities. Climbs out of the minima of descend's strict
 * improvements (meshes). */
static double fm(int64_t m, int32_t k, const int64_t *caps, const scratch *s, double cut)
{
    int64_t *part = s->part, *seq = s->best + m, *was = s->best + 2 * m; /* s->best holds 3m */
    double *conn = s->conn;
    int64_t *cnt = s->cnt;
    uint8_t *lock = (uint8_t *)(s->cnt + k);
    if (m <= 0)
        return cut;
    for (int pass = 0; pass < PASSES; pass++) {
        memset(lock, 0, (size_t)m);
        int64_t nseq = 0, best_at = 0;
        double cur = cut, best = cut;
        for (int64_t step = 0; step < m; step++) {
            int32_t from = -1;
            for (int32_t q = 0; q < k; q++)
                if (cnt[q] > caps[q])
                    from = q;
            int64_t pick = -1;
            int32_t to = -1;
            double bestg = 0.0;
            for (int64_t v = 0; v < m; v++) {
                int32_t a = (int32_t)part[v];
                if (lock[v] || (from >= 0 && a != from))
                    continue;
                for (int32_t q = 0; q < k; q++) {
                    if (q == a || (from >= 0 ? cnt[q] >= caps[q] : cnt[q] > caps[q]))
                        continue;
                    double g = conn[v * k + q] - conn[v * k + a];
                    if (pick < 0 || g > bestg)
                        pick = v, to = q, bestg = g;
                }
            }
            if (pick < 0)
                break;
            int64_t a = part[pick];
            cur -= bestg;
            lock[pick] = 1;
            seq[nseq] = pick, was[nseq] = a, nseq++;
            move(s, k, pick, to);
            int over = 0;
            for (int32_t q = 0; q < k; q++)
                over |= cnt[q] > caps[q];
            if (!over && cur < best - 1e-12 * (best > 0 ? best : 1.0))
                best = cur, best_at = nseq;
        }
        for (int64_t i = nseq - 1; i >= best_at; i--) /* back to the best prefix */
            move(s, k, seq[i], was[i]);
        if (best_at == 0)
            break;
        cut = best;
    }
    return cut;
}

/* the best of `starts` greedy starts, each descended */
static void cut_groups(int64_t m, int32_t k, const int64_t *caps, const scratch *s, uint64_t seed, int64_t g,
                       int64_t *out, int starts)
{
    double best = -1.0;
    uint64_t r = mix(seed ^ mix((uint64_t)g));
    for (int st = 0; st < starts; st++) {
        int64_t first = 0;
        if (st > 0) {
            r = mix(r);
            first = (int64_t)(r % (uint64_t)m);
        }
        grow(m, k, s, first);
        double cut = fm(m, k, caps, s, descend(m, k, caps, s));
        if (best < 0 || cut < best) {
            best = cut;
            memcpy(s->best, s->part, sizeof(int64_t) * (size_t)m);
        }
    }
    memcpy(out, s->best, sizeof(int64_t) * (size_t)m);
}

/* part sizes within the capacities after METIS (k = 2), as partition.repair: ranks of the
 * overfull part attached to the other move there best gain first (gain: weight to it minus
 * weight to their own part; ties by rank), then, if still over, the least attached ones */
static void repair2(int64_t m, const int64_t *caps, const scratch *s, int64_t *out)
{
    int64_t cnt[2] = {0, 0};
    if (m <= 0)
        return;
    for (int64_t v = 0; v < m; v++)
        cnt[out[v]]++;
    int a = cnt[0] > caps[0] ? 0 : cnt[1] > caps[1] ? 1 : -1;
    if (a < 0)
        return;
    int64_t excess = cnt[a] - caps[a], nc = 0;
    double *own = s->mark;
    for (int64_t v = 0; v < m; v++) {
        double in = 0.0, to = 0.0;
        for (int64_t e = s->ptr[v]; e < s->ptr[v + 1]; e++)
            if (out[s->adj[e]] == out[v])
                in += s->w[e];
            else
                to += s->w[e];
        own[v] = in;
        if (out[v] == a && to > 0.0)
            s->cand[nc].gain = to - in, s->cand[nc++].v = v;
    }
    qsort(s->cand, (size_t)nc, sizeof(candidate), by_gain);
    uint8_t *moved = (uint8_t *)s->part32; /* free here: METIS's answer was copied to out */
    memset(moved, 0, (size_t)m);
    for (int64_t i = 0; i < nc && excess > 0; i++) {
        out[s->cand[i].v] = 1 - a;
        moved[s->cand[i].v] = 1;
        excess--;
    }
    if (excess > 0) { /* the least attached of the rest, lowest rank first on ties (one sort, not a scan each) */
        nc = 0;
        for (int64_t v = 0; v < m; v++)
            if (out[v] == a && !moved[v])
                s->cand[nc].gain = -own[v], s->cand[nc++].v = v;
        qsort(s->cand, (size_t)nc, sizeof(candidate), by_gain);
        for (int64_t i = 0; i < nc && excess > 0; i++, excess--)
            out[s->cand[i].v] = 1 - a;
    }
}

/* METIS's recursive bisection of the group (read into s) in proportion to the capacities,
 * with the imbalance the capacities leave room for (backends.metis); -1 when METIS fails */
static int bisect_metis(int64_t m, int64_t ne, const int64_t *caps, const scratch *s, metis_recursive metis,
                        uint64_t seed, int64_t *out)
{
    double tot = 0.0, tw = (double)caps[0] + (double)caps[1];
    for (int64_t e = 0; e < ne; e++)
        tot += s->w[e];
    double scale = tot > 1073741824.0 ? 1073741824.0 / tot : 1.0; /* integer weights summing below 2^30 */
    for (int64_t q = 0; q <= m; q++)
        s->ip32[q] = (int32_t)s->ptr[q];
    for (int64_t e = 0; e < ne; e++) {
        double x = nearbyint(s->w[e] * scale);
        s->adj32[e] = (int32_t)s->adj[e];
        s->w32[e] = x < 1.0 ? 1 : (int32_t)x;
    }
    int64_t uf = (int64_t)(1000.0 * (tw / (double)m - 1.0));
    int32_t opts[METIS_NOPTIONS], n32 = (int32_t)m, ncon = 1, nparts = 2, obj = 0;
    for (int i = 0; i < METIS_NOPTIONS; i++)
        opts[i] = -1;
    opts[METIS_OPTION_SEED] = (int32_t)(seed % 2147483648ULL);
    opts[METIS_OPTION_UFACTOR] = (int32_t)(uf < 1 ? 1 : uf > 500 ? 500 : uf);
    float tp[2] = {(float)(caps[0] / tw), (float)(caps[1] / tw)};
    if (metis(&n32, &ncon, s->ip32, s->adj32, NULL, NULL, s->w32, &nparts, tp, NULL, opts, &obj, s->part32) !=
        METIS_OK)
        return -1;
    for (int64_t q = 0; q < m; q++)
        out[q] = s->part32[q];
    repair2(m, caps, s, out);
    return 0;
}

/* ranks[gptr[g]..gptr[g+1]-1] is group g, split into k parts of at most caps[g*k + j] ranks;
 * part (as long as ranks) gets each rank's part. pos: n entries of -1, left so. With p
 * (and k = 2), orient; with where, each rank's entry becomes its part's head. metis: NULL
 * (greedy starts and Fiduccia-Mattheyses), or METIS_PartGraphRecursive (k = 2). starts: greedy
 * starts per group (0: STARTS, or 1 in batches of BIG_GROUPS and BIG_RANKS). Returns 0,
 * -1 when out of memory, -2 when METIS fails. */
int64_t rm_split_groups(const int64_t *indptr, const int64_t *indices, const double *data, const int64_t *ranks,
                        const int64_t *gptr, int64_t ngroups, int32_t k, const int64_t *caps, uint64_t seed,
                        int64_t *pos, int64_t *part, const rm_problem *p, const int64_t *heads, int64_t *where,
                        const void *metis, int32_t starts)
{
    if (metis && k != 2)
        return -2;
    int64_t mmax = 0, emax = 0;
    for (int64_t g = 0; g < ngroups; g++) {
        int64_t m = gptr[g + 1] - gptr[g], deg = 0;
        for (int64_t q = gptr[g]; q < gptr[g + 1]; q++)
            deg += indptr[ranks[q] + 1] - indptr[ranks[q]];
        if (m > mmax)
            mmax = m;
        if (deg > emax)
            emax = deg;
    }
    size_t M = (size_t)mmax + 1, E = (size_t)emax + 1;
    int big = ngroups >= BIG_GROUPS && gptr[ngroups] - gptr[0] >= BIG_RANKS;
    int fm_scratch = metis == NULL; /* the greedy split's tables */
    scratch s;
    memset(&s, 0, sizeof s);
    s.ptr = malloc(sizeof(int64_t) * M);
    s.adj = malloc(sizeof(int64_t) * E);
    s.w = malloc(sizeof(double) * E);
    s.part = malloc(sizeof(int64_t) * M);
    s.best = malloc(sizeof(int64_t) * (fm_scratch ? 3 * M : 1));
    s.mark = malloc(sizeof(double) * M);
    s.conn = malloc(sizeof(double) * (fm_scratch ? M * (size_t)k : 1));
    s.size = malloc(sizeof(int64_t) * (size_t)k);
    s.cnt = malloc(sizeof(int64_t) * (size_t)k + M + 16); /* + fm's locks */
    s.frac = malloc(sizeof(double) * (size_t)k);
    s.ext_t = malloc(sizeof(int64_t) * E);
    s.ext_q = malloc(sizeof(int64_t) * E);
    s.ext_w = malloc(sizeof(double) * E);
    s.tmark = malloc(sizeof(int64_t) * (p ? (size_t)p->nslots : 1));
    s.tlist = malloc(sizeof(int64_t) * E);
    s.tw = malloc(sizeof(double) * 2 * E);
    int ok = s.ptr && s.adj && s.w && s.part && s.best && s.mark && s.conn && s.size && s.cnt && s.frac && s.ext_t &&
             s.ext_q && s.ext_w && s.tmark && s.tlist && s.tw;
    if (metis) {
        s.ip32 = malloc(sizeof(int32_t) * M);
        s.adj32 = malloc(sizeof(int32_t) * E);
        s.w32 = malloc(sizeof(int32_t) * E);
        s.part32 = malloc(sizeof(int32_t) * M);
        s.cand = malloc(sizeof(candidate) * M);
        ok = ok && s.ip32 && s.adj32 && s.w32 && s.part32 && s.cand;
    }
    int64_t rc = 0;
    if (!ok) {
        rc = -1;
        goto done;
    }
    if (p)
        for (int64_t t = 0; t < p->nslots; t++)
            s.tmark[t] = -1;
    for (int64_t g = 0; g < ngroups; g++) {
        const int64_t *rk = ranks + gptr[g];
        const int64_t *cp = caps + g * k;
        int64_t m = gptr[g + 1] - gptr[g], ne = 0;
        for (int64_t q = 0; q < m; q++)
            pos[rk[q]] = q;
        int orienting = p && k == 2 && cp[0] == cp[1];
        int64_t next = 0;
        s.ptr[0] = 0;
        for (int64_t q = 0; q < m; q++) {
            /* the partners' pos and where are scattered reads (a random graph's: one miss
             * each): asked for ROW_AHEAD rows ahead, their index rows twice as far */
            if (q + 2 * ROW_AHEAD < m)
                __builtin_prefetch(indices + indptr[rk[q + 2 * ROW_AHEAD]]);
            if (q + ROW_AHEAD < m)
                for (int64_t e = indptr[rk[q + ROW_AHEAD]]; e < indptr[rk[q + ROW_AHEAD] + 1]; e++) {
                    __builtin_prefetch(pos + indices[e]);
                    if (orienting)
                        __builtin_prefetch(where + indices[e]);
                }
            for (int64_t e = indptr[rk[q]]; e < indptr[rk[q] + 1]; e++) {
                int64_t c = indices[e], l = pos[c];
                if (l >= 0)
                    s.adj[ne] = l, s.w[ne] = data[e], ne++;
                else if (orienting) /* gathered now, in one pass whose reads overlap */
                    s.ext_t[next] = where[c], s.ext_q[next] = q, s.ext_w[next] = data[e], next++;
            }
            s.ptr[q + 1] = ne;
        }
        targets(m, k, cp, s.size, s.frac);
        int64_t *out = part + gptr[g];
        if (ne == 0 || m <= k) { /* nothing to gain: in order (partition.in_order) */
            int64_t v = 0;
            for (int32_t j = 0; j < k; j++)
                for (int64_t c = 0; c < s.size[j]; c++)
                    out[v++] = j;
        } else if (metis) {
            if (bisect_metis(m, ne, cp, &s, (metis_recursive)metis, seed, out) != 0) {
                rc = -2;
                for (int64_t q = 0; q < m; q++)
                    pos[rk[q]] = -1;
                goto done;
            }
        } else
            cut_groups(m, k, cp, &s, seed, g, out, starts > 0 ? starts : big ? 1 : STARTS);
        if (orienting)
            orient(&s, next, out, m, p, heads + g * k);
        for (int64_t q = 0; q < m; q++)
            pos[rk[q]] = -1;
        if (where)
            for (int64_t q = 0; q < m; q++)
                where[rk[q]] = heads[g * k + out[q]];
    }
done:
    free(s.ptr), free(s.adj), free(s.w), free(s.part), free(s.best), free(s.mark), free(s.conn), free(s.size),
        free(s.cnt), free(s.frac), free(s.ext_t), free(s.ext_q), free(s.ext_w), free(s.tmark), free(s.tlist),
        free(s.tw), free(s.ip32), free(s.adj32), free(s.w32), free(s.part32), free(s.cand);
    return rc;
}
