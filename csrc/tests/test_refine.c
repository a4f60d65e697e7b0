/* The mapper's local search (csrc/refine): problems small enough that the best mapping
 * and the cost of every mapping are known by hand.
 *
 * Machine: `nodes` nodes of `cores` slots; slot s is on node s / cores. One level (the
 * node): a pair of slots on different nodes costs acc[0] = 10, on the same node acc[1] = 1. */
#include "check.h"
#include "refine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXS 64
#define MAXE 256

typedef struct {
    rm_problem p;
    int64_t xadj[MAXS + 1], adj[MAXE], lvl[MAXS], coords[MAXS], dims[1];
    uint8_t wrap[1];
    double w[MAXE], acc[2];
} machine;

/* symmetric graph from an edge list {a, b, weight} */
static void build(machine *m, int64_t n, int64_t nodes, int64_t cores, int ne, const double (*edges)[3])
{
    memset(m, 0, sizeof *m);
    int64_t deg[MAXS] = {0};
    for (int e = 0; e < ne; e++)
        deg[(int64_t)edges[e][0]]++, deg[(int64_t)edges[e][1]]++;
    m->xadj[0] = 0;
    for (int64_t v = 0; v < n; v++)
        m->xadj[v + 1] = m->xadj[v] + deg[v];
    int64_t fill[MAXS];
    memcpy(fill, m->xadj, sizeof fill);
    for (int e = 0; e < ne; e++) {
        int64_t a = (int64_t)edges[e][0], b = (int64_t)edges[e][1];
        m->adj[fill[a]] = b, m->w[fill[a]++] = edges[e][2];
        m->adj[fill[b]] = a, m->w[fill[b]++] = edges[e][2];
    }
    for (int64_t s = 0; s < nodes * cores; s++)
        m->lvl[s] = s / cores, m->coords[s] = s / cores;
    m->acc[0] = 10.0, m->acc[1] = 1.0;
    m->p.n = n;
    m->p.xadj = m->xadj, m->p.adj = m->adj, m->p.w = m->w;
    m->p.nslots = nodes * cores;
    m->p.nlevels = 1, m->p.node_level = 0;
    m->p.lvl = m->lvl, m->p.acc = m->acc;
    m->p.ndims = 0;
}

static int same_node(const int64_t *slot, int a, int b, int cores) { return slot[a] / cores == slot[b] / cores; }

static int is_permutation(const int64_t *slot, int64_t n, int64_t nslots)
{
    int seen[MAXS] = {0};
    for (int64_t v = 0; v < n; v++) {
        if (slot[v] < 0 || slot[v] >= nslots || seen[slot[v]])
            return 0;
        seen[slot[v]] = 1;
    }
    return 1;
}

/* two heavy pairs split across two nodes: one swap puts each pair on one node */
static void test_one_swap(void)
{
    static const double e[][3] = {{0, 1, 100}, {2, 3, 100}, {0, 2, 1}, {1, 3, 1}};
    machine m;
    build(&m, 4, 2, 2, 4, e);
    int64_t slot[4] = {0, 2, 1, 3}; /* node 0: ranks 0, 2; node 1: ranks 1, 3 */
    double before = rm_cost(&m.p, slot);
    CHECK(before == 2 * 100 * 10 + 2 * 1 * 1, "cost of the split mapping %g", before);
    double after = -1;
    int32_t timed_out = -1;
    int64_t passes = rm_refine(&m.p, slot, 7, 10.0, 1, 0, &after, &timed_out);
    CHECK(passes >= 1, "passes %lld", (long long)passes);
    CHECK(timed_out == 0, "timed out");
    CHECK(after == 2 * 100 * 1 + 2 * 1 * 10, "cost after one pass %g (optimum 220)", after);
    CHECK(before - after == 1782.0, "cost delta %g, expected 1782", before - after);
    CHECK(rm_cost(&m.p, slot) == after, "returned cost %g, mapping costs %g", after, rm_cost(&m.p, slot));
    CHECK(is_permutation(slot, 4, 4), "not a permutation");
    CHECK(same_node(slot, 0, 1, 2) && same_node(slot, 2, 3, 2) && !same_node(slot, 0, 2, 2),
          "pairs not together: %lld %lld %lld %lld", (long long)slot[0], (long long)slot[1], (long long)slot[2],
          (long long)slot[3]);

    /* the optimum is a fixed point: nothing moves, with or without iterated local search */
    int64_t best[4] = {0, 1, 2, 3};
    for (int ils = 0; ils <= 20; ils += 20) {
        int64_t s[4];
        memcpy(s, best, sizeof s);
        rm_refine(&m.p, s, 3, 10.0, 10, ils, &after, &timed_out);
        CHECK(after == 220.0, "optimum moved (ils %d): cost %g", ils, after);
        CHECK(memcmp(s, best, sizeof s) == 0, "optimum moved (ils %d)", ils);
    }
}

/* a swap that helps one rank and hurts the other more: rank 0 would gain 90 next to rank 1,
 * but rank 2, sent away from rank 1 in exchange, would lose 900. The mapping is optimal:
 * a swap's gain counts both sides, nothing moves. */
static void test_no_losing_swap(void)
{
    static const double e[][3] = {{0, 1, 10}, {1, 2, 100}};
    machine m;
    build(&m, 4, 2, 2, 2, e);
    int64_t slot[4] = {0, 2, 3, 1}, start[4]; /* node 0: ranks 0, 3; node 1: ranks 1, 2 */
    memcpy(start, slot, sizeof start);
    double after;
    int32_t timed_out;
    CHECK(rm_cost(&m.p, slot) == 200.0, "start cost %g", rm_cost(&m.p, slot));
    rm_refine(&m.p, slot, 11, 10.0, 1, 0, &after, &timed_out);
    CHECK(after == 200.0 && memcmp(slot, start, sizeof slot) == 0, "moved: cost %g, delta %g", after, after - 200.0);
}

/* a free slot: rank 1 is alone on node 1, its partner's node has a free core */
static void test_move_to_free_slot(void)
{
    static const double e[][3] = {{0, 1, 7}};
    machine m;
    build(&m, 3, 2, 2, 1, e);
    int64_t slot[3] = {0, 2, 3};
    double before = rm_cost(&m.p, slot), after;
    int32_t timed_out;
    rm_refine(&m.p, slot, 1, 10.0, 5, 0, &after, &timed_out);
    CHECK(before == 70.0 && after == 7.0, "cost %g -> %g, expected 70 -> 7", before, after);
    CHECK(same_node(slot, 0, 1, 2), "rank 0 and 1 apart");
    CHECK(is_permutation(slot, 3, 4), "not a permutation");
}

/* a ring of 4 single-core nodes: a pair two hops apart pays one hop more than neighbours */
static void test_torus_hops(void)
{
    static const double e[][3] = {{0, 1, 1}};
    machine m;
    build(&m, 2, 4, 1, 1, e);
    m.p.ndims = 1;
    m.dims[0] = 4, m.wrap[0] = 1;
    m.p.dims = m.dims, m.p.wrap = m.wrap, m.p.coords = m.coords;
    m.p.hop_cost = 3.0;
    int64_t far[2] = {0, 2}, wrapped[2] = {0, 3}, near[2] = {1, 2};
    CHECK(rm_cost(&m.p, far) == 13.0, "2 hops: %g", rm_cost(&m.p, far));
    CHECK(rm_cost(&m.p, wrapped) == 10.0, "1 hop around the ring: %g", rm_cost(&m.p, wrapped));
    CHECK(rm_cost(&m.p, near) == 10.0, "1 hop: %g", rm_cost(&m.p, near));
    m.wrap[0] = 0;
    CHECK(rm_cost(&m.p, wrapped) == 16.0, "mesh, 3 hops: %g", rm_cost(&m.p, wrapped));
    m.wrap[0] = 1;
    double after;
    int32_t timed_out;
    rm_refine(&m.p, far, 5, 10.0, 5, 0, &after, &timed_out);
    CHECK(after == 10.0 && rm_cost(&m.p, far) == 10.0, "after refine %g, expected neighbours (10)", after);
}

/* 16 ranks on 4 nodes of 4: a ring graph. Same seed, same mapping; never worse than the
 * start; the ring's optimum (each node holds 4 consecutive ranks) costs 4 * 10 + 12 * 1. */
static void test_ring_deterministic(void)
{
    double e[16][3];
    for (int i = 0; i < 16; i++)
        e[i][0] = i, e[i][1] = (i + 1) % 16, e[i][2] = 1;
    machine m;
    build(&m, 16, 4, 4, 16, (const double (*)[3])e);
    int64_t cyclic[16], a[16], b[16];
    for (int i = 0; i < 16; i++)
        cyclic[i] = (i % 4) * 4 + i / 4; /* every edge crosses nodes */
    double start = rm_cost(&m.p, cyclic), ca, cb;
    CHECK(start == 160.0, "cyclic cost %g", start);
    int32_t ta, tb;
    memcpy(a, cyclic, sizeof a), memcpy(b, cyclic, sizeof b);
    rm_refine(&m.p, a, 42, 30.0, 100, 200, &ca, &ta);
    rm_refine(&m.p, b, 42, 30.0, 100, 200, &cb, &tb);
    CHECK(!ta && !tb, "timed out");
    CHECK(memcmp(a, b, sizeof a) == 0 && ca == cb, "same seed, different results: %g %g", ca, cb);
    CHECK(ca <= start && ca == rm_cost(&m.p, a), "cost %g (start %g, mapping %g)", ca, start, rm_cost(&m.p, a));
    CHECK(ca == 52.0, "ring on 4x4 not optimal: %g (optimum 52)", ca);
    CHECK(is_permutation(a, 16, 16), "not a permutation");

    int64_t t[16];
    memcpy(t, cyclic, sizeof t);
    double ct;
    rm_tabu(&m.p, t, 9, 30.0, 2000, &ct, &ta);
    CHECK(ct <= start && ct == rm_cost(&m.p, t) && is_permutation(t, 16, 16), "tabu: cost %g", ct);
}

static void test_layout(void)
{
    const char *l = rm_layout();
    char want[32];
    snprintf(want, sizeof want, "%zu ", sizeof(rm_problem));
    CHECK(strncmp(l, want, strlen(want)) == 0 && strstr(l, " n:0 ") != NULL && strstr(l, " gslot:") != NULL,
          "layout %s", l);
}

int main(void)
{
    test_one_swap();
    test_no_losing_swap();
    test_move_to_free_slot();
    test_torus_hops();
    test_ring_deterministic();
    test_layout();
    return rm_report("refine");
}
