/* rankmap mapper: local search on the mapping cost (called from mapper/refine.py).
 *
 * cost(mapping) = sum over edges {i,j} of W_ij * D(slot_i, slot_j), with D the machine's
 * pair cost (mapper/machine.py: accumulated level costs, torus hops at the node level).
 * Moves: swap two ranks, or move a rank to a free slot; a move is taken when it lowers
 * the cost. Candidates for rank i: every slot when the machine is small, otherwise the
 * slots of the groups (e.g. packages) where i's heaviest partners sit. When a pass finds
 * nothing, iterated local search perturbs the best mapping and searches again while time
 * remains; the best mapping seen is returned. Deterministic for a given seed. */
#include "refine.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* rm_problem's layout, for the Python mirror's check at load time */
const char *rm_layout(void)
{
    static char buf[1024];
    int k = snprintf(buf, sizeof buf, "%zu", sizeof(rm_problem));
#define RM_LAYOUT_FIELD(type, name) \
    k += snprintf(buf + k, sizeof buf - (size_t)k, " %s:%zu", #name, offsetof(rm_problem, name));
    RM_PROBLEM_FIELDS(RM_LAYOUT_FIELD)
#undef RM_LAYOUT_FIELD
    return buf;
}

int64_t rm_api(void)
{
    return RM_API;
}

/* D between two slots given as rows of level ids (nlevels) and torus coordinates (ndims) */
static inline double dist_rows(const rm_problem *p, const int64_t *la, const int64_t *ca, const int64_t *lb,
                               const int64_t *cb)
{
    int l = 0;
    while (l < p->nlevels && la[l] == lb[l])
        l++;
    if (p->ndims && l <= p->node_level) {
        int64_t h = 0;
        for (int d = 0; d < p->ndims; d++) {
            int64_t x = ca[d] > cb[d] ? ca[d] - cb[d] : cb[d] - ca[d];
            if (p->wrap[d] && p->dims[d] - x < x)
                x = p->dims[d] - x;
            h += x;
        }
        return p->acc[p->node_level] + p->hop_cost * (double)(h - 1);
    }
    return p->acc[l];
}

static inline double dist(const rm_problem *p, int64_t a, int64_t b)
{
    if (a == b)
        return 0.0;
    return dist_rows(p, p->lvl + a * p->nlevels, p->coords + a * p->ndims, p->lvl + b * p->nlevels,
                     p->coords + b * p->ndims);
}

double rm_dist(const rm_problem *p, int64_t a, int64_t b)
{
    return dist(p, a, b);
}

/* sum of w_ik * D(s, slot[k]) over the neighbours k of v, except `skip` */
static inline double vcost(const rm_problem *p, const int64_t *slot, int64_t v, int64_t s, int64_t skip)
{
    double c = 0;
    for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++) {
        int64_t k = p->adj[e];
        if (k != skip)
            c += p->w[e] * dist(p, s, slot[k]);
    }
    return c;
}

double rm_cost(const rm_problem *p, const int64_t *slot)
{
    double c = 0;
    for (int64_t v = 0; v < p->n; v++) {
        /* a partner's slot, then that slot's row: two scattered reads each; asked for ahead
         * so that a rank's partners' misses overlap (PREFETCH; the same sum in the same order).
         * bench/mapper_scaling.py's random graph, the two costs of a mapping, replayed side by
         * side: 10^5 ranks 0.19-0.22 -> 0.07 s, 10^6 2.2-3.1 -> 1.33 s */
        for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
            __builtin_prefetch(slot + p->adj[e]);
        for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
            if (p->adj[e] > v) {
                __builtin_prefetch(p->lvl + slot[p->adj[e]] * p->nlevels);
                if (p->ndims)
                    __builtin_prefetch(p->coords + slot[p->adj[e]] * p->ndims);
            }
        for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
            if (p->adj[e] > v)
                c += p->w[e] * dist(p, slot[v], slot[p->adj[e]]);
    }
    return c;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}

/* gain of putting rank i on slot t (swapping with its occupant, if any) */
static double gain(const rm_problem *p, const int64_t *slot, const int64_t *occ, int64_t i, int64_t t)
{
    int64_t si = slot[i], j = occ[t];
    if (t == si)
        return 0.0;
    if (j < 0)
        return vcost(p, slot, i, si, -1) - vcost(p, slot, i, t, -1);
    /* the i-j edge keeps its cost under a swap: leave it out on both sides */
    return vcost(p, slot, i, si, j) - vcost(p, slot, i, t, j) + vcost(p, slot, j, t, i) - vcost(p, slot, j, si, i);
}

static void apply(int64_t *slot, int64_t *occ, int64_t i, int64_t t)
{
    int64_t si = slot[i], j = occ[t];
    slot[i] = t;
    occ[t] = i;
    occ[si] = j;
    if (j >= 0)
        slot[j] = si;
}

#define RM_MAX_WIDTH 64 /* levels + torus dimensions a pass handles (rm_refine checks) */
/* Above SCREEN_ABOVE ranks a swap's partner side (a scan of the partner's edges: most of a
 * pass, bound by memory latency at 10^6 ranks) is computed only for the SCREEN_KEEP
 * candidates whose own side gains most (SCREEN_KEEP_HUGE above SCREEN_HUGE ranks), and
 * mapper/refine.py gives the cheaper passes one more. Measured on the hierarchical start
 * (bench/mapper_scaling.py's graphs): at 10^5 ranks, random traffic 0.966 of the start in
 * 2 full passes (2.1-2.4 s), 0.963 in 3 screened ones (1.6-2.0 s); a stencil 0.990 -> 0.992
 * (0.6-0.8 s either way). At 10^6 ranks, one pass: random 23 s -> 12 s for 0.984 instead
 * of 0.979; a stencil 7.5 s -> 4.8 s, 0.997 instead of 0.994. */
#define SCREEN_ABOVE 50000
/* Above BLOCK_ORDER_ABOVE ranks a pass visits blocks of ORDER_BLOCK consecutive ranks in a
 * random order, each block in order, and mapper/refine.py numbers the ranks by slot
 * (rm_block_order_above): a rank's edges, row and candidate occupants then sit next to the
 * previous rank's instead of one cache miss each. Random traffic, 10^5 ranks, 3 passes:
 * 7.2 s -> 3.5 s (renumbering alone 5.2 s), the same cost (0.9629 of the start against
 * 0.9634); a 3-D stencil 2.3 s -> 0.5 s. */
#define BLOCK_ORDER_ABOVE 20000
#define ORDER_BLOCK 64
#define SCREEN_KEEP 6
#define SCREEN_HUGE 500000
#define SCREEN_KEEP_HUGE 4
#define FULL_LIMIT 600 /* up to this many slots every slot is a candidate, */
/* unless slots x mean degree exceeds FULL_WORK: each candidate costs both ranks' degrees, so on
 * dense traffic (miniAMR at 512 ranks: 511 partners each, 528 slots) the full scan made a pass
 * ~0.5 s and the 1k-rank mapping 12 s; there the heaviest partners' groups are the candidates */
#define FULL_WORK 40000

int64_t rm_block_order_above(void)
{
    return BLOCK_ORDER_ABOVE;
}
#define TOP_NEIGHBOURS 6
#define PER_GROUP 8
#ifndef ILS_SLACK
#define ILS_SLACK 0.001 /* accept a kicked descent up to 0.1 % worse than the current one */
#endif

/* A pass's scratch. wn: the current rank's partner weights (n doubles, zero between ranks);
 * base: every rank's cost where it sits; row: every rank's slot as one row of level ids and
 * torus coordinates (the partners' rows are read contiguously: on 10^6 ranks the pass is
 * bound by memory, and three scattered reads per partner were its main cost); both are
 * rebuilt at the start of each pass and kept current across its moves.
 * uni: per candidate group, whether its slots are interchangeable for everyone outside it
 * and pairwise at one distance (a socket's cores: then a rank's cost on any of its slots
 * comes from one scan of the rank's edges per group, not one per slot). */
typedef struct {
    double *wn, *base;
    int64_t *row; /* n x width */
    int width;    /* nlevels + ndims */
    uint8_t *uni;
    double intra; /* the distance between two slots of a uniform group */
} pass_scratch;

static int64_t pass(const rm_problem *p, int64_t *slot, int64_t *occ, int64_t *order, uint64_t *rs, double deadline,
                    double *gained, pass_scratch *sc);

/* cost of the edges touching the ranks in `mem` (edges inside the set counted once) */
static double set_cost(const rm_problem *p, const int64_t *slot, const int64_t *mem, int64_t m, const uint8_t *in)
{
    double c = 0;
    for (int64_t q = 0; q < m; q++) {
        int64_t v = mem[q];
        for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++) {
            int64_t k = p->adj[e];
            c += (in[k] ? 0.5 : 1.0) * p->w[e] * dist(p, slot[v], slot[k]);
        }
    }
    return c;
}

static void exchange(int64_t *slot, int64_t *occ, const int64_t *sa, const int64_t *sb, int64_t len)
{
    for (int64_t q = 0; q < len; q++) {
        int64_t a = sa[q], b = sb[q], ra = occ[a], rb = occ[b];
        occ[a] = rb, occ[b] = ra;
        if (ra >= 0)
            slot[ra] = b;
        if (rb >= 0)
            slot[rb] = a;
    }
}

#define MAX_GROUPS_FOR_EXCHANGE 128

/* exchange groups a and b if that lowers the cost, scored on the edges of their ranks */
static int exchange_if_better(const rm_problem *p, int64_t *slot, int64_t *occ, int64_t *mem, uint8_t *in,
                              int64_t a, int64_t b, int64_t la)
{
    const int64_t *sa = p->gslot + p->gptr[a], *sb = p->gslot + p->gptr[b];
    int64_t m = 0;
    for (int64_t q = 0; q < la; q++) {
        if (occ[sa[q]] >= 0)
            mem[m++] = occ[sa[q]];
        if (occ[sb[q]] >= 0)
            mem[m++] = occ[sb[q]];
    }
    if (m == 0)
        return 0;
    for (int64_t q = 0; q < m; q++)
        in[mem[q]] = 1;
    double before = set_cost(p, slot, mem, m, in);
    exchange(slot, occ, sa, sb, la);
    double after = set_cost(p, slot, mem, m, in);
    int better = after < before - 1e-9 * (1.0 + before);
    if (!better)
        exchange(slot, occ, sa, sb, la); /* undo */
    for (int64_t q = 0; q < m; q++)
        in[mem[q]] = 0;
    return better;
}

/* Exchange the contents of two equal-size subtrees (sockets, nodes, switches...) when that
 * lowers the cost: a move that single swaps can only reach through worse mappings. Scoring
 * a pair reads every edge of both groups, so a level of G groups cost G-1 passes over its
 * edges (a fat tree's 100 leaf switches at 10^5 ranks: 6.7 s, ten local-search passes, for
 * nothing). Where the groups are alike (gsig) an exchange changes only their traffic with
 * the other groups: a pair is then screened on the level's G x G traffic and distances, in
 * O(G), and scored in full only when the screen finds a gain (the same decisions). */
static int64_t group_exchanges(const rm_problem *p, int64_t *slot, int64_t *occ, int64_t *mem, uint8_t *in,
                               double deadline)
{
    int64_t moves = 0;
    int32_t *gid = NULL;
    double *Q = NULL, *D = NULL;
    for (int32_t l = 0; l < p->nglev; l++) {
        int64_t g0 = p->glev[l], g1 = p->glev[l + 1], G = g1 - g0;
        if (G < 2 || G > MAX_GROUPS_FOR_EXCHANGE)
            continue;
        int screen = p->gsig != NULL;
        for (int64_t g = g0; g < g1 && screen; g++)
            screen = p->gsig[g] >= 0;
        if (screen && !gid) {
            gid = malloc(sizeof(int32_t) * (size_t)p->nslots);
            Q = malloc(sizeof(double) * MAX_GROUPS_FOR_EXCHANGE * MAX_GROUPS_FOR_EXCHANGE);
            D = malloc(sizeof(double) * MAX_GROUPS_FOR_EXCHANGE * MAX_GROUPS_FOR_EXCHANGE);
            if (!gid || !Q || !D) {
                free(gid), free(Q), free(D);
                gid = NULL, Q = D = NULL;
            }
        }
        screen = screen && gid;
        if (screen) {
            for (int64_t g = g0; g < g1; g++)
                for (int64_t q = p->gptr[g]; q < p->gptr[g + 1]; q++)
                    gid[p->gslot[q]] = (int32_t)(g - g0);
            memset(Q, 0, sizeof(double) * (size_t)(G * G));
            for (int64_t v = 0; v < p->n; v++) {
                double *row = Q + (int64_t)gid[slot[v]] * G;
                for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
                    row[gid[slot[p->adj[e]]]] += p->w[e];
            }
            for (int64_t a = 0; a < G; a++)
                for (int64_t c = 0; c < G; c++)
                    D[a * G + c] = a == c ? 0.0 : dist(p, p->gslot[p->gptr[g0 + a]], p->gslot[p->gptr[g0 + c]]);
        }
        for (int64_t a = g0; a < g1; a++)
            for (int64_t b = a + 1; b < g1; b++) {
                int64_t la = p->gptr[a + 1] - p->gptr[a];
                if (la != p->gptr[b + 1] - p->gptr[b] || now() > deadline)
                    continue;
                int64_t x = a - g0, y = b - g0;
                if (!screen || p->gsig[a] != p->gsig[b]) {
                    if (!exchange_if_better(p, slot, occ, mem, in, a, b, la))
                        continue;
                } else {
                    const double *qa = Q + x * G, *qb = Q + y * G, *da = D + x * G, *db = D + y * G;
                    double delta = 0, s = 0;
                    for (int64_t c = 0; c < G; c++) {
                        if (c == x || c == y)
                            continue;
                        delta += (qa[c] - qb[c]) * (db[c] - da[c]);
                        s += qa[c] * da[c] + qb[c] * db[c];
                    }
                    /* the full score's threshold is 1e-9 of a larger sum: nothing it keeps is screened out */
                    if (delta >= -0.5e-9 * (1.0 + s) || !exchange_if_better(p, slot, occ, mem, in, a, b, la))
                        continue;
                }
                moves++;
                if (!screen)
                    continue;
                /* the groups' contents traded places: so do their rows and columns */
                for (int64_t c = 0; c < G; c++) {
                    double t = Q[x * G + c];
                    Q[x * G + c] = Q[y * G + c], Q[y * G + c] = t;
                }
                for (int64_t r = 0; r < G; r++) {
                    double t = Q[r * G + x];
                    Q[r * G + x] = Q[r * G + y], Q[r * G + y] = t;
                }
            }
    }
    free(gid), free(Q), free(D);
    return moves;
}

/* gain of exchanging the occupants of slots x and y (either may be free) */
static double slot_gain(const rm_problem *p, const int64_t *slot, const int64_t *occ, int64_t x, int64_t y)
{
    if (occ[x] >= 0)
        return gain(p, slot, occ, occ[x], y);
    if (occ[y] >= 0)
        return gain(p, slot, occ, occ[y], x);
    return 0.0;
}

static void slot_swap(int64_t *slot, int64_t *occ, int64_t x, int64_t y)
{
    int64_t a = occ[x], b = occ[y];
    occ[x] = b, occ[y] = a;
    if (a >= 0)
        slot[a] = y;
    if (b >= 0)
        slot[b] = x;
}

#define KL_MAX_GROUP 64
#define KL_MAX_RANKS 256 /* beyond this the tabu search's machines are left behind and KL's cost grows fast */

/* Kernighan-Lin between two groups: take the best exchange even when it loses, lock the
 * two slots, repeat; keep the best prefix. Escapes balanced partitions where every single
 * swap is uphill. Returns the gain kept. */
static double kl_pair(const rm_problem *p, int64_t *slot, int64_t *occ, const int64_t *sa, int64_t la,
                      const int64_t *sb, int64_t lb, uint8_t *lock, int64_t *seq, double eps)
{
    int64_t steps = la < lb ? la : lb, done = 0, best_len = 0;
    double cum = 0, best = eps; /* a prefix must gain more than rounding noise */
    for (int64_t st = 0; st < steps; st++) {
        double bg = -INFINITY;
        int64_t bx = -1, by = -1;
        for (int64_t i = 0; i < la; i++) {
            if (lock[i])
                continue;
            for (int64_t j = 0; j < lb; j++) {
                if (lock[la + j] || (occ[sa[i]] < 0 && occ[sb[j]] < 0))
                    continue;
                double g = slot_gain(p, slot, occ, sa[i], sb[j]);
                if (g > bg)
                    bg = g, bx = i, by = j;
            }
        }
        if (bx < 0)
            break;
        slot_swap(slot, occ, sa[bx], sb[by]);
        lock[bx] = lock[la + by] = 1;
        seq[2 * done] = sa[bx], seq[2 * done + 1] = sb[by];
        done++;
        cum += bg;
        if (cum > best)
            best = cum, best_len = done;
    }
    for (int64_t k = done - 1; k >= best_len; k--) /* undo past the best prefix */
        slot_swap(slot, occ, seq[2 * k], seq[2 * k + 1]);
    memset(lock, 0, (size_t)(la + lb));
    return best_len ? best : 0.0;
}

static int64_t kl_levels(const rm_problem *p, int64_t *slot, int64_t *occ, uint8_t *lock, int64_t *seq,
                         double deadline)
{
    int64_t improved = 0;
    if (p->n > KL_MAX_RANKS)
        return 0;
    double eps = 1e-9 * (1.0 + rm_cost(p, slot));
    for (int32_t l = 0; l < p->nglev; l++) {
        int64_t g0 = p->glev[l], g1 = p->glev[l + 1];
        if (g1 - g0 < 2 || g1 - g0 > MAX_GROUPS_FOR_EXCHANGE)
            continue;
        for (int64_t a = g0; a < g1; a++)
            for (int64_t b = a + 1; b < g1; b++) {
                int64_t la = p->gptr[a + 1] - p->gptr[a], lb = p->gptr[b + 1] - p->gptr[b];
                if (la > KL_MAX_GROUP || lb > KL_MAX_GROUP || now() > deadline)
                    continue;
                if (kl_pair(p, slot, occ, p->gslot + p->gptr[a], la, p->gslot + p->gptr[b], lb, lock, seq, eps) > 0)
                    improved++;
            }
    }
    return improved;
}

/* descend with single moves, then subtree exchanges (and KL on small machines), until none helps */
static int64_t descend(const rm_problem *p, int64_t *slot, int64_t *occ, int64_t *order, uint64_t *rs,
                       double deadline, int64_t max_passes, int64_t *mem, uint8_t *in, pass_scratch *sc)
{
    int64_t passes = 0;
    double cost = rm_cost(p, slot);
    for (;;) {
        while (passes < max_passes && now() < deadline) {
            passes++;
            double g = 0;
            /* on large machines a pass that gains less than 0.1 % of the cost ends the descent: on irregular
             * graphs the tail of tiny moves costs more time than it returns */
            if (pass(p, slot, occ, order, rs, deadline, &g, sc) == 0 || (p->n > 256 && g < 1e-3 * cost))
                break;
            cost -= g;
        }
        if (!mem || passes >= max_passes || now() > deadline)
            return passes;
        if (group_exchanges(p, slot, occ, mem, in, deadline) == 0 &&
            kl_levels(p, slot, occ, in, mem, deadline) == 0)
            return passes;
    }
}

static void uniform_groups(const rm_problem *p, pass_scratch *sc)
{
    int L = p->nlevels;
    sc->intra = p->acc[L - 1];
    /* one level below the groups (the cores), and torus coordinates shared within a group */
    int ok = p->cand_level == L - 2 && (!p->ndims || p->node_level <= p->cand_level);
    for (int64_t g = 0; g < p->ngroups; g++) {
        const int64_t *s = p->grp_slots + p->grp_ptr[g];
        int64_t len = p->grp_ptr[g + 1] - p->grp_ptr[g];
        uint8_t u = ok && len <= 256;
        for (int64_t a = 0; u && a < len; a++) /* distinct cores: no two slots of one core */
            for (int64_t b = a + 1; b < len; b++)
                if (p->lvl[s[a] * L + L - 1] == p->lvl[s[b] * L + L - 1]) {
                    u = 0;
                    break;
                }
        sc->uni[g] = u;
    }
}

static inline void slot_row(const rm_problem *p, int64_t t, int64_t *out)
{
    /* plain loops (kept so by csrc/refine/CMakeLists.txt): a row is a few words, and memcpy
     * of a run-time size was a libc call per candidate slot (10 % of a pass at 10^5 ranks) */
    const int64_t *l = p->lvl + t * p->nlevels, *c = p->coords + t * p->ndims;
    for (int q = 0; q < p->nlevels; q++)
        out[q] = l[q];
    for (int d = 0; d < p->ndims; d++)
        out[p->nlevels + d] = c[d];
}

static inline double dist_r(const rm_problem *p, const int64_t *a, const int64_t *b)
{
    return dist_rows(p, a, a + p->nlevels, b, b + p->nlevels);
}

/* PREFETCH: a pass is bound by the latency of reading scattered partners' rows (perf: 30 % of
 * it on one load); prefetching a rank's partners' rows before scanning them, and a screened
 * candidate's occupant's edges before its j-side, lets the misses overlap. Random traffic,
 * 10^5 ranks, 3 passes, same process alternating: 2.35-2.6 s -> 1.77-1.9 s, the same moves. */
/* vcost on rows: v's cost on the slot whose row is r */
static inline double vcost_r(const rm_problem *p, const pass_scratch *sc, int64_t v, const int64_t *r)
{
    double c = 0;
    /* the partners' rows are scattered (cache misses that the branchy level loop below would
     * wait for one at a time): ask for all of them first (PREFETCH) */
    for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
        __builtin_prefetch(sc->row + p->adj[e] * sc->width);
    for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
        c += p->w[e] * dist_r(p, r, sc->row + p->adj[e] * sc->width);
    return c;
}

/* rank i's cost on a slot of uniform group g (row r0 of one of its slots), without its edge
 * to that slot's occupant: out = sum of w * D over partners outside g, in = sum of w over
 * partners inside g (group ids are the level cand_level's ids) */
static inline void group_cost(const rm_problem *p, const pass_scratch *sc, int64_t i, const int64_t *r0, double *out,
                              double *in)
{
    double o = 0, w_in = 0;
    int64_t gid = r0[p->cand_level];
    for (int64_t e = p->xadj[i]; e < p->xadj[i + 1]; e++) {
        const int64_t *rk = sc->row + p->adj[e] * sc->width;
        if (rk[p->cand_level] == gid)
            w_in += p->w[e];
        else
            o += p->w[e] * dist_r(p, r0, rk);
    }
    *out = o, *in = w_in;
}

/* gain of moving rank i (cost base_i where it sits) to slot t (row rt), given vi = i's cost
 * on t (seeing t's occupant j there at distance 0) */
static inline double gain_at(const rm_problem *p, const int64_t *occ, int64_t i, double base_i, const pass_scratch *sc,
                             int64_t t, const int64_t *rt, double vi)
{
    int64_t j = occ[t];
    if (j < 0)
        return base_i - vi;
    /* swap with j (at t). Leaving the i-j edge out on both sides (its cost does not change):
     *   i: base_i - w_ij D(si,t)  ->  vi                   (which sees j at t, distance 0)
     *   j: base_j - w_ij D(si,t)  ->  vcost(j, si)         (which sees i at si, distance 0) */
    const int64_t *ri = sc->row + i * sc->width;
    double wij = sc->wn[j], wd = wij != 0.0 ? wij * dist_r(p, ri, rt) : 0.0;
    return (base_i - wd - vi) + (sc->base[j] - wd - vcost_r(p, sc, j, ri));
}

/* apply a move and keep base[] and row[] current: the partners of the two ranks that moved
 * change by their edge to them; the two themselves are recomputed */
static void apply_tracked(const rm_problem *p, int64_t *slot, int64_t *occ, pass_scratch *sc, int64_t i, int64_t t,
                          int64_t *rt, int64_t *rsi)
{
    int64_t j = occ[t], wd = sc->width;
    slot_row(p, t, rt);
    memcpy(rsi, sc->row + i * wd, sizeof(int64_t) * (size_t)wd);
    for (int64_t e = p->xadj[i]; e < p->xadj[i + 1]; e++) {
        int64_t k = p->adj[e];
        if (k != j) {
            const int64_t *rk = sc->row + k * wd;
            sc->base[k] += p->w[e] * (dist_r(p, rk, rt) - dist_r(p, rk, rsi));
        }
    }
    if (j >= 0)
        for (int64_t e = p->xadj[j]; e < p->xadj[j + 1]; e++) {
            int64_t k = p->adj[e];
            if (k != i) {
                const int64_t *rk = sc->row + k * wd;
                sc->base[k] += p->w[e] * (dist_r(p, rk, rsi) - dist_r(p, rk, rt));
            }
        }
    apply(slot, occ, i, t);
    memcpy(sc->row + i * wd, rt, sizeof(int64_t) * (size_t)wd);
    if (j >= 0)
        memcpy(sc->row + j * wd, rsi, sizeof(int64_t) * (size_t)wd);
    sc->base[i] = vcost_r(p, sc, i, rt);
    if (j >= 0)
        sc->base[j] = vcost_r(p, sc, j, rsi);
}

/* one pass over the ranks in a random order; returns the number of improving moves and
 * adds their total gain to *gained */
static int64_t pass(const rm_problem *p, int64_t *slot, int64_t *occ, int64_t *order, uint64_t *rs, double deadline,
                    double *gained, pass_scratch *sc)
{
    int64_t moves = 0, wd = sc->width;
    double *wn = sc->wn;
    int64_t rt[RM_MAX_WIDTH], rsi[RM_MAX_WIDTH];
    /* large machines: fewer candidates per rank keep a pass near linear in the edges */
    int top_n = p->n > 500 ? 4 : TOP_NEIGHBOURS, per_group = p->n > 500 ? 4 : PER_GROUP;
    int full = p->nslots <= FULL_LIMIT && (double)p->nslots * (double)p->xadj[p->n] <= FULL_WORK * (double)p->n;
    if (p->n > BLOCK_ORDER_ABOVE) {
        /* blocks of consecutive ranks in a random order, each in order (BLOCK_ORDER_ABOVE) */
        int64_t nb = (p->n + ORDER_BLOCK - 1) / ORDER_BLOCK;
        for (int64_t b = 0; b < nb; b++)
            order[b] = b;
        for (int64_t k = nb - 1; k > 0; k--) {
            int64_t r = (int64_t)(rng_next(rs) % (uint64_t)(k + 1)), tmp = order[k];
            order[k] = order[r], order[r] = tmp;
        }
        for (int64_t b = nb - 1; b >= 0; b--) {  /* expand in place, from the end */
            int64_t blk = order[b];
            for (int64_t q = ORDER_BLOCK - 1; q >= 0; q--)
                order[b * ORDER_BLOCK + q] = blk * ORDER_BLOCK + q;
        }
        /* the last block may be short: drop the ids past n */
        int64_t m = 0;
        for (int64_t k = 0; k < nb * ORDER_BLOCK; k++)
            if (order[k] < p->n)
                order[m++] = order[k];
    } else {
        for (int64_t k = p->n - 1; k > 0; k--) { /* Fisher-Yates */
            int64_t r = (int64_t)(rng_next(rs) % (uint64_t)(k + 1)), tmp = order[k];
            order[k] = order[r], order[r] = tmp;
        }
    }
    for (int64_t v = 0; v < p->n; v++)
        slot_row(p, slot[v], sc->row + v * wd);
    for (int64_t v = 0; v < p->n; v++)
        sc->base[v] = vcost_r(p, sc, v, sc->row + v * wd);
    for (int64_t idx = 0; idx < p->n; idx++) {
        if ((idx & 1023) == 0 && now() > deadline)
            break;
        int64_t i = order[idx], best_t = -1;
        for (int64_t e = p->xadj[i]; e < p->xadj[i + 1]; e++) {
            wn[p->adj[e]] = p->w[e];
            __builtin_prefetch(sc->row + p->adj[e] * wd); /* group_cost reads them next (PREFETCH) */
        }
        double base_i = sc->base[i];
        double best = 1e-9 * (1.0 + base_i); /* relative threshold: no churn on ties */
        if (full) {
            for (int64_t t = 0; t < p->nslots; t++) {
                if (t == slot[i])
                    continue;
                slot_row(p, t, rt);
                double g = gain_at(p, occ, i, base_i, sc, t, rt, vcost_r(p, sc, i, rt));
                if (g > best)
                    best = g, best_t = t;
            }
        } else {
            /* the heaviest partners' groups: keep the top few edges, sorted by weight */
            int64_t top[TOP_NEIGHBOURS];
            int nt = 0;
            int64_t st[TOP_NEIGHBOURS * PER_GROUP];
            double sg[TOP_NEIGHBOURS * PER_GROUP];
            int ns = 0, screen = p->n > SCREEN_ABOVE, keep = p->n > SCREEN_HUGE ? SCREEN_KEEP_HUGE : SCREEN_KEEP;
            for (int64_t e = p->xadj[i]; e < p->xadj[i + 1]; e++) {
                int q;
                if (nt < top_n)
                    q = nt++;
                else if (p->w[e] > p->w[top[top_n - 1]])
                    q = top_n - 1;
                else
                    continue;
                for (; q > 0 && p->w[top[q - 1]] < p->w[e]; q--)
                    top[q] = top[q - 1];
                top[q] = e;
            }
            for (int q = 0; q < nt; q++) {
                int64_t g = p->grp_of_slot[slot[p->adj[top[q]]]];
                int64_t a = p->grp_ptr[g], b = p->grp_ptr[g + 1], len = b - a;
                int64_t start = len ? (int64_t)(rng_next(rs) % (uint64_t)len) : 0;
                double out = 0, w_in = 0;
                if (sc->uni[g] && len) {
                    slot_row(p, p->grp_slots[a], rt);
                    group_cost(p, sc, i, rt, &out, &w_in);
                }
                for (int64_t c = 0; c < len && c < per_group; c++) {
                    int64_t t = p->grp_slots[a + (start + c) % len];
                    if (t == slot[i])
                        continue;
                    double vi;
                    slot_row(p, t, rt);
                    if (sc->uni[g]) {
                        int64_t j = occ[t];
                        vi = out + sc->intra * (w_in - (j >= 0 ? wn[j] : 0.0));
                    } else {
                        vi = vcost_r(p, sc, i, rt);
                    }
                    if (screen && occ[t] >= 0) { /* its i-side now, its j-side if it ranks */
                        const int64_t *ri = sc->row + i * sc->width;
                        double wij = wn[occ[t]], wd = wij != 0.0 ? wij * dist_r(p, ri, rt) : 0.0;
                        st[ns] = t, sg[ns] = base_i - wd - vi, ns++;
                        __builtin_prefetch(p->xadj + occ[t]); /* the j-side's first reads (PREFETCH) */
                        __builtin_prefetch(sc->base + occ[t]);
                        continue;
                    }
                    double gg = gain_at(p, occ, i, base_i, sc, t, rt, vi);
                    if (gg > best)
                        best = gg, best_t = t;
                }
            }
            for (int k = 0; k < keep && k < ns; k++) { /* the best i-sides get their j-side */
                int b = k;
                for (int q = k + 1; q < ns; q++)
                    if (sg[q] > sg[b])
                        b = q;
                double tg = sg[b];
                int64_t tt = st[b];
                sg[b] = sg[k], st[b] = st[k], sg[k] = tg, st[k] = tt;
                int64_t j = occ[tt];
                const int64_t *ri = sc->row + i * sc->width;
                slot_row(p, tt, rt);
                double wij = wn[j], wd = wij != 0.0 ? wij * dist_r(p, ri, rt) : 0.0;
                double gg = tg + (sc->base[j] - wd - vcost_r(p, sc, j, ri));
                if (gg > best)
                    best = gg, best_t = tt;
            }
        }
        for (int64_t e = p->xadj[i]; e < p->xadj[i + 1]; e++)
            wn[p->adj[e]] = 0.0;
        if (best_t >= 0) {
            apply_tracked(p, slot, occ, sc, i, best_t, rt, rsi);
            moves++;
            *gained += best;
        }
    }
    return moves;
}

/* Improve slot_of_rank in place: descent, then `ils_rounds` rounds of iterated local
 * search. Work limits make the result depend only on the seed; the time limit is a safety
 * cap (*timed_out says whether it cut the search short). Returns the number of passes. */
int64_t rm_refine(const rm_problem *p, int64_t *slot_of_rank, uint64_t seed, double time_limit, int64_t max_passes,
                  int64_t ils_rounds, double *cost_out, int32_t *timed_out)
{
    double deadline = now() + time_limit;
    uint64_t rs = seed * 0x9E3779B97F4A7C15ull + 0x1234567ull;
    if (!rs)
        rs = 1;
    int64_t n = p->n;
    int64_t *occ = malloc(sizeof(int64_t) * (size_t)(p->nslots + 1));
    int64_t *order = malloc(sizeof(int64_t) * (size_t)(n + ORDER_BLOCK + 1)); /* blocked orders overrun n */
    int64_t *best = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (!occ || !order || !best) {
        free(occ), free(order), free(best);
        *cost_out = rm_cost(p, slot_of_rank);
        *timed_out = 0;
        return -1;
    }
    for (int64_t t = 0; t < p->nslots; t++)
        occ[t] = -1;
    for (int64_t v = 0; v < n; v++) {
        occ[slot_of_rank[v]] = v;
        order[v] = v;
    }
    /* subtree exchanges touch at most two groups: scratch sized for the whole set is enough */
    int64_t *mem = NULL;
    /* scratch: subtree exchanges need the ranks of two groups and a mark per rank; KL
     * reuses `in` as its lock array (two groups) and `mem` as its swap sequence */
    int64_t scratch = n + 4 * KL_MAX_GROUP + 2;
    free(mem);
    mem = p->nglev ? malloc(sizeof(int64_t) * (size_t)scratch) : NULL;
    uint8_t *in = p->nglev ? calloc((size_t)scratch, 1) : NULL;
    if (!in) {
        free(mem);
        mem = NULL;
    }
    int width = p->nlevels + p->ndims;
    pass_scratch sc = {calloc((size_t)n + 1, sizeof(double)), malloc(sizeof(double) * (size_t)(n + 1)),
                       malloc(sizeof(int64_t) * (size_t)(n + 1) * (size_t)width), width,
                       malloc((size_t)p->ngroups + 1), 0.0};
    if (!sc.wn || !sc.base || !sc.row || !sc.uni || width > RM_MAX_WIDTH) {
        free(occ), free(order), free(best), free(mem), free(in), free(sc.wn), free(sc.base), free(sc.row), free(sc.uni);
        *cost_out = rm_cost(p, slot_of_rank);
        *timed_out = 0;
        return -1;
    }
    uniform_groups(p, &sc);
    int64_t passes = descend(p, slot_of_rank, occ, order, &rs, deadline, max_passes, mem, in, &sc);
    double best_cost = rm_cost(p, slot_of_rank), cur_cost = best_cost;
    memcpy(best, slot_of_rank, sizeof(int64_t) * (size_t)n);
    /* iterated local search: kick the current mapping, descend, and keep the result when it
     * is not much worse than the current one (a random walk over near-optimal mappings
     * crosses plateaus that a strict descent cannot); the best mapping seen is returned */
    int64_t kicks = n < 8 ? 1 : n / 8 < 4 ? n / 8 : 4;
    int64_t *cur = malloc(sizeof(int64_t) * (size_t)(n + 1));
    if (cur)
        memcpy(cur, slot_of_rank, sizeof(int64_t) * (size_t)n);
    for (int64_t round = 0; round < ils_rounds && cur && n > 1 && now() < deadline; round++) {
        for (int64_t k = 0; k < kicks; k++) {
            int64_t i = (int64_t)(rng_next(&rs) % (uint64_t)n);
            int64_t t = (int64_t)(rng_next(&rs) % (uint64_t)p->nslots);
            apply(slot_of_rank, occ, i, t);
        }
        passes += descend(p, slot_of_rank, occ, order, &rs, deadline, 50, mem, in, &sc);
        double c = rm_cost(p, slot_of_rank);
        if (c < best_cost - 1e-9 * best_cost) {
            best_cost = c;
            memcpy(best, slot_of_rank, sizeof(int64_t) * (size_t)n);
        }
        if (c <= cur_cost * (1.0 + ILS_SLACK)) {
            cur_cost = c;
            memcpy(cur, slot_of_rank, sizeof(int64_t) * (size_t)n);
        } else { /* back to the current mapping */
            for (int64_t t = 0; t < p->nslots; t++)
                occ[t] = -1;
            memcpy(slot_of_rank, cur, sizeof(int64_t) * (size_t)n);
            for (int64_t v = 0; v < n; v++)
                occ[slot_of_rank[v]] = v;
        }
    }
    free(cur);
    free(mem);
    free(in);
    free(sc.wn), free(sc.base), free(sc.row), free(sc.uni);
    memcpy(slot_of_rank, best, sizeof(int64_t) * (size_t)n);
    *cost_out = best_cost;
    *timed_out = now() >= deadline;
    free(occ), free(order), free(best);
    return passes;
}

/* ------------------------------------------------------------------ robust tabu search
 * For small machines the mapping is a quadratic assignment problem: flow F = W between
 * ranks (free slots are dummy ranks with no flow), distance D between slots. Taillard's
 * robust tabu search: each iteration takes the best swap that is not tabu (or beats the
 * best mapping ever seen); moving a rank back to a slot it left recently is tabu for a
 * random tenure around m; swap deltas are kept in an m x m table and updated in O(m^2)
 * per iteration (Taillard 1991, symmetric case). */
int64_t rm_tabu(const rm_problem *p, int64_t *slot_of_rank, uint64_t seed, double time_limit, int64_t max_iters,
                double *cost_out, int32_t *timed_out)
{
    double deadline = now() + time_limit;
    int64_t m = p->nslots, n = p->n;
    double *F = calloc((size_t)(m * m), sizeof(double));
    double *D = malloc(sizeof(double) * (size_t)(m * m));
    double *delta = malloc(sizeof(double) * (size_t)(m * m));
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)m), *bestp = malloc(sizeof(int64_t) * (size_t)m);
    int64_t *tabu = calloc((size_t)(m * m), sizeof(int64_t)); /* tabu[r*m + loc]: iteration until which r may not go back to loc */
    uint8_t *used = calloc((size_t)m, 1);
    /* slots that differ only below the last tree level (cores of one socket) are
     * interchangeable: a swap between them never changes the cost, and on this symmetric
     * machine such zero moves would crowd out every useful one */
    const int64_t *cls = p->lvl + (p->nlevels >= 2 ? p->nlevels - 2 : 0);
    int64_t *clsv = malloc(sizeof(int64_t) * (size_t)m);
    if (!F || !D || !delta || !perm || !bestp || !tabu || !used || !clsv) {
        free(F), free(D), free(delta), free(perm), free(bestp), free(tabu), free(used), free(clsv);
        *cost_out = rm_cost(p, slot_of_rank);
        *timed_out = 0;
        return -1;
    }
    for (int64_t v = 0; v < n; v++)
        for (int64_t e = p->xadj[v]; e < p->xadj[v + 1]; e++)
            F[v * m + p->adj[e]] = p->w[e];
    for (int64_t a = 0; a < m; a++) {
        clsv[a] = cls[a * p->nlevels];
        for (int64_t b = 0; b < m; b++)
            D[a * m + b] = dist(p, a, b);
    }
    cls = clsv;
    /* ranks 0..n-1 keep their slots, dummies n..m-1 take the free slots */
    for (int64_t v = 0; v < n; v++) {
        perm[v] = slot_of_rank[v];
        used[perm[v]] = 1;
    }
    for (int64_t v = n, t = 0; v < m; v++) {
        while (used[t])
            t++;
        perm[v] = t++;
    }
#define Fm(i, j) F[(i) * m + (j)]
#define Dm(i, j) D[(i) * m + (j)]
    double cost = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = i + 1; j < m; j++)
            cost += Fm(i, j) * Dm(perm[i], perm[j]);
    /* full delta of swapping r and s (symmetric F and D, zero diagonals) */
#define FULL_DELTA(r, s)                                                                   \
    ({                                                                                     \
        double d_ = 0;                                                                     \
        for (int64_t k = 0; k < m; k++)                                                    \
            if (k != (r) && k != (s))                                                      \
                d_ += (Fm(r, k) - Fm(s, k)) * (Dm(perm[s], perm[k]) - Dm(perm[r], perm[k])); \
        d_;                                                                                \
    })
    for (int64_t r = 0; r < m; r++)
        for (int64_t s = r + 1; s < m; s++)
            delta[r * m + s] = FULL_DELTA(r, s);
    double best = cost;
    memcpy(bestp, perm, sizeof(int64_t) * (size_t)m);
    uint64_t rs = seed * 0x9E3779B97F4A7C15ull + 0x51ed27ull;
    if (!rs)
        rs = 1;
    int64_t it = 0, tmin = (int64_t)(0.9 * (double)m), tspan = (int64_t)(0.2 * (double)m) + 1;
    if (tmin < 1)
        tmin = 1;
    /* iterated tabu search: after `stall` iterations without a new best, restart from the
     * best mapping kicked by a few random swaps between non-interchangeable slots */
    /* measured on the reference matrices: short stalls and large kicks (3/8 of the slots)
     * find the deep basins far more often than gentle restarts */
    int64_t last_gain = 0, stall = 2 * m + 20, kick = 3 * m / 8 < 2 ? 2 : 3 * m / 8;
    int cut = 0;
    while (m > 2 && it < max_iters) {
        if ((it & 63) == 0 && now() >= deadline) {
            cut = 1;
            break;
        }
        it++;
        if (it - last_gain > stall) {
            memcpy(perm, bestp, sizeof(int64_t) * (size_t)m);
            for (int64_t k = 0, tries = 0; k < kick && tries < 100 * kick; tries++) {
                int64_t r = (int64_t)(rng_next(&rs) % (uint64_t)m), q = (int64_t)(rng_next(&rs) % (uint64_t)m);
                if (r == q || cls[perm[r]] == cls[perm[q]] || (r >= n && q >= n))
                    continue;
                int64_t tmp = perm[r];
                perm[r] = perm[q], perm[q] = tmp;
                k++;
            }
            cost = 0;
            for (int64_t i = 0; i < m; i++)
                for (int64_t j = i + 1; j < m; j++)
                    cost += Fm(i, j) * Dm(perm[i], perm[j]);
            for (int64_t r = 0; r < m; r++)
                for (int64_t q = r + 1; q < m; q++)
                    delta[r * m + q] = FULL_DELTA(r, q);
            memset(tabu, 0, sizeof(int64_t) * (size_t)(m * m));
            last_gain = it;
        }
        int64_t br = -1, bs = -1;
        double bd = INFINITY;
        double aspire = best - 1e-9 * (1.0 + best) - cost; /* a tabu move is allowed below this */
        for (int64_t r = 0; r < m; r++) {
            const double *dr = delta + r * m;
            int64_t cr = cls[perm[r]];
            const int64_t *tr = tabu + r * m;
            for (int64_t s = r + 1; s < m; s++) {
                double d = dr[s];
                if (d >= bd || cr == cls[perm[s]] || (r >= n && s >= n))
                    continue; /* not better, or two interchangeable slots / two dummies: nothing can change */
                if (tr[perm[s]] > it && tabu[s * m + perm[r]] > it && d >= aspire)
                    continue;
                bd = d, br = r, bs = s;
            }
        }
        if (br < 0)
            break;
        /* apply the swap; the delta table update needs the permutation before and after */
        int64_t u = br, v = bs;
        tabu[u * m + perm[u]] = it + tmin + (int64_t)(rng_next(&rs) % (uint64_t)tspan);
        tabu[v * m + perm[v]] = it + tmin + (int64_t)(rng_next(&rs) % (uint64_t)tspan);
        int64_t pu = perm[u];
        perm[u] = perm[v], perm[v] = pu;
        cost += bd;
        for (int64_t r = 0; r < m; r++)
            for (int64_t s = r + 1; s < m; s++) {
                if (r == u || r == v || s == u || s == v)
                    delta[r * m + s] = FULL_DELTA(r, s);
                else
                    delta[r * m + s] += (Fm(r, u) - Fm(r, v) + Fm(s, v) - Fm(s, u)) *
                                        (Dm(perm[s], perm[u]) - Dm(perm[s], perm[v]) + Dm(perm[r], perm[v]) -
                                         Dm(perm[r], perm[u]));
            }
        if (cost < best - 1e-9 * (1.0 + best)) {
            best = cost;
            memcpy(bestp, perm, sizeof(int64_t) * (size_t)m);
            last_gain = it;
        }
    }
#undef Fm
#undef Dm
#undef FULL_DELTA
    for (int64_t v = 0; v < n; v++)
        slot_of_rank[v] = bestp[v];
    *cost_out = rm_cost(p, slot_of_rank);
    *timed_out = cut;
    free(F), free(D), free(delta), free(perm), free(bestp), free(tabu), free(used), free(clsv);
    return it;
}

/* ------------------------------------------------------------------ subgraphs
 * The traffic among a set of ranks rk[0..m-1] (of a symmetric CSR graph), for the
 * hierarchical partitioning's splits: the edges inside the set in local numbering, as CSR
 * plus the row of each entry (entries [0, nin) of row/col/w), and the edges leaving it
 * (entries [nin, tot): local row, global column). One pass over the set's rows; pos is n
 * entries of -1 (restored on return). Returns nin. The buffers hold tot = the set's degree
 * sum entries; sub_indptr m + 1. */
int64_t rm_subgraph(const int64_t *indptr, const int64_t *indices, const double *data, const int64_t *rk, int64_t m,
                    int64_t *pos, int64_t *sub_indptr, int64_t *row, int64_t *col, double *w)
{
    int64_t tot = 0;
    for (int64_t q = 0; q < m; q++) {
        pos[rk[q]] = q;
        tot += indptr[rk[q] + 1] - indptr[rk[q]];
    }
    int64_t in = 0, out = tot; /* internal entries fill forwards, external ones backwards */
    sub_indptr[0] = 0;
    for (int64_t q = 0; q < m; q++) {
        for (int64_t e = indptr[rk[q]]; e < indptr[rk[q] + 1]; e++) {
            int64_t c = indices[e], l = pos[c];
            if (l >= 0)
                row[in] = q, col[in] = l, w[in] = data[e], in++;
            else
                out--, row[out] = q, col[out] = c, w[out] = data[e];
        }
        sub_indptr[q + 1] = in;
    }
    for (int64_t a = in, b = tot - 1; a < b; a++, b--) { /* external entries back in row order */
        int64_t r = row[a], c = col[a];
        double x = w[a];
        row[a] = row[b], col[a] = col[b], w[a] = w[b];
        row[b] = r, col[b] = c, w[b] = x;
    }
    for (int64_t q = 0; q < m; q++)
        pos[rk[q]] = -1;
    return in;
}
