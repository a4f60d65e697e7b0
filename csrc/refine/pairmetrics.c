/* rankmap mapper: the metrics of a mapping (mapper/metrics.py) over the traffic's pairs, one
 * pass each, for machines whose network is a torus, a mesh or one switch. In numpy these
 * were a dozen passes over temporaries as long as the pairs (the slot rows compared level by
 * level, the torus steps computed three times over, the link loads through difference
 * arrays): 30-40 s of a 10^6-rank `rankmap map`'s report of four mappings on a torus, 21 s on
 * a fat tree. metrics.py keeps the numpy code for the other networks (dragonflies), and the
 * tests compare the two. */
#include <stdint.h>
#include <stdlib.h>

#include "refine.h"

#define AHEAD 8 /* pairs ahead whose scattered reads are prefetched */


/* first level (0..nlevels) where two slots' rows of level ids differ */
static inline int first_diff(const int64_t *lvl, int32_t nlevels, int64_t a, int64_t b)
{
    const int64_t *la = lvl + a * nlevels, *lb = lvl + b * nlevels;
    int l = 0;
    while (l < nlevels && la[l] == lb[l])
        l++;
    return l;
}

/* signed steps along a ring (or line) of `size` from x to y: the shorter way, at a tie up
 * (network.Torus._ring) */
static inline int64_t steps(int64_t x, int64_t y, int64_t size, int wrap)
{
    int64_t delta = y - x;
    if (!wrap)
        return delta;
    int64_t fwd = ((delta % size) + size) % size;
    return fwd <= size - fwd ? fwd : fwd - size;
}

static int64_t hops(const rm_machine_view *m, int64_t na, int64_t nb, int l)
{
    if (na == nb)
        return 0;
    if (m->dfly) { /* the nodes' own links, a local hop to the global link's router and from it */
        const int64_t *ca = m->dfly->coords + na * 3, *cb = m->dfly->coords + nb * 3;
        int64_t A = m->dfly->routers;
        if (ca[0] != cb[0])
            return 3 + (ca[1] != cb[0] % A) + (cb[1] != ca[0] % A);
        return ca[1] == cb[1] ? 2 : 3;
    }
    if (m->ndims == 0)
        return m->hops_at[l]; /* up to the lowest common switch and down */
    const int64_t *ca = m->ncoords + na * m->ndims, *cb = m->ncoords + nb * m->ndims;
    int64_t h = 0;
    for (int d = 0; d < m->ndims; d++) {
        int64_t s = steps(ca[d], cb[d], m->dims[d], m->wrap[d]);
        h += s < 0 ? -s : s;
    }
    return h;
}

/* out: sum w*D, max w*D, sum w*2*levels up, sum w*hops, sum hops, max hops, sum w between nodes */
int64_t rm_pair_metrics(const rm_machine_view *m, int64_t npairs, const int32_t *row, const int32_t *col,
                        const double *w, const int64_t *slot, double *out)
{
    double sum_com = 0, max_com = 0, tree_hb = 0, net_hb = 0, inter_w = 0;
    int64_t d_sum = 0, d_max = 0;
    for (int64_t i = 0; i < npairs; i++) {
        /* the far end's slot, then its row and node, are scattered reads: asked for ahead */
        if (i + 2 * AHEAD < npairs)
            __builtin_prefetch(slot + col[i + 2 * AHEAD]);
        if (i + AHEAD < npairs) {
            int64_t f = slot[col[i + AHEAD]];
            __builtin_prefetch(m->lvl + f * m->nlevels);
            __builtin_prefetch(m->slot_node + f);
        }
        int64_t a = slot[row[i]], b = slot[col[i]];
        int l = first_diff(m->lvl, m->nlevels, a, b);
        int64_t na = m->slot_node[a], nb = m->slot_node[b];
        int64_t h = hops(m, na, nb, l);
        double d = m->acc[l];
        if (m->ndims && l <= m->node_level)
            d = m->acc[m->node_level] + m->hop_cost * (double)(h - 1);
        double wd = w[i] * d;
        sum_com += wd;
        if (wd > max_com)
            max_com = wd;
        tree_hb += w[i] * 2.0 * (double)m->up[l];
        net_hb += w[i] * (double)h;
        d_sum += h;
        if (h > d_max)
            d_max = h;
        if (na != nb)
            inter_w += w[i];
    }
    out[0] = sum_com, out[1] = max_com, out[2] = tree_hb, out[3] = net_hb;
    out[4] = (double)d_sum, out[5] = (double)d_max, out[6] = inter_w;
    return 0;
}

/* run [a, a + len) of a ring (or line) of `size` added to a difference array along one
 * line (base + x * stride, x the coordinate): +w where it starts, -w after it ends; a run
 * over the wrap-around is two */
static inline void add_run(double *dw, int64_t *dn, int64_t base, int64_t stride, int64_t a, int64_t len,
                           int64_t size, double w)
{
    dw[base + a * stride] += w, dn[base + a * stride]++;
    int64_t end = a + len;
    if (end > size) {
        dw[base] += w, dn[base]++;
        end -= size;
    }
    if (end < size)
        dw[base + end * stride] -= w, dn[base + end * stride]--;
}

/* loads (positions x ndims x 2, += ): bytes per directed torus link, [pos, d, 0] leaving pos
 * in the + direction (Torus.link_loads' layout). Dimension-order routes (Torus.walk), each
 * dimension's run added as an interval (O(routes x dims), not x hops: walking each hop was
 * 4 s per mapping at 10^6 ranks, a scattered read per hop), then prefix sums along each
 * line; the routes are counted too (integers), so that a link no route takes is exactly 0.
 * -1: no torus, -2: out of memory */
int64_t rm_torus_loads(const rm_machine_view *m, int64_t npairs, const int32_t *row, const int32_t *col,
                       const double *w, const int64_t *slot, double *loads)
{
    int nd = m->ndims;
    if (nd <= 0)
        return -1;
    int64_t positions = 1;
    for (int d = 0; d < nd; d++)
        positions *= m->dims[d];
    size_t cells = (size_t)positions * (size_t)nd * 2;
    int64_t *stride = malloc(sizeof(int64_t) * (size_t)nd), *dn = calloc(cells, sizeof(int64_t));
    double *dw = calloc(cells, sizeof(double));
    if (!stride || !dn || !dw) {
        free(stride), free(dn), free(dw);
        return -2;
    }
    stride[0] = 1;
    for (int d = 1; d < nd; d++)
        stride[d] = stride[d - 1] * m->dims[d - 1];
    for (int64_t i = 0; i < npairs; i++) {
        if (i + 2 * AHEAD < npairs) {
            __builtin_prefetch(slot + row[i + 2 * AHEAD]);
            __builtin_prefetch(slot + col[i + 2 * AHEAD]);
        }
        if (i + AHEAD < npairs) {
            __builtin_prefetch(m->slot_node + slot[row[i + AHEAD]]);
            __builtin_prefetch(m->slot_node + slot[col[i + AHEAD]]);
        }
        int64_t na = m->slot_node[slot[row[i]]], nb = m->slot_node[slot[col[i]]];
        if (na == nb)
            continue;
        const int64_t *ca = m->ncoords + na * nd, *cb = m->ncoords + nb * nd;
        int64_t pos = 0;
        for (int d = 0; d < nd; d++)
            pos += ca[d] * stride[d];
        /* along dimension d the route is at the target's coordinates below d, the source's above */
        for (int d = 0; d < nd; d++) {
            int64_t size = m->dims[d], s = steps(ca[d], cb[d], size, m->wrap[d]);
            if (s != 0) {
                int dir = s < 0;
                int64_t len = dir ? -s : s;
                /* + leaves x0 .. x0+len-1, - leaves x0-len+1 .. x0 */
                int64_t a = dir ? ((ca[d] - len + 1) % size + size) % size : ca[d];
                int64_t line = pos - ca[d] * stride[d]; /* the line's position at coordinate 0 */
                add_run(dw, dn, line * nd * 2 + d * 2 + dir, stride[d] * nd * 2, a, len, size, w[i]);
            }
            pos += (cb[d] - ca[d]) * stride[d];
        }
    }
    /* prefix sums along every line of every dimension and direction */
    for (int d = 0; d < nd; d++) {
        int64_t size = m->dims[d], st = stride[d] * nd * 2;
        for (int64_t p0 = 0; p0 < positions; p0++) {
            if ((p0 / stride[d]) % size != 0)
                continue; /* a line starts where coordinate d is 0 */
            for (int dir = 0; dir < 2; dir++) {
                int64_t base = p0 * nd * 2 + d * 2 + dir, n = 0;
                double acc = 0.0;
                for (int64_t x = 0; x < size; x++) {
                    acc += dw[base + x * st], n += dn[base + x * st];
                    if (n != 0)
                        loads[base + x * st] += acc;
                }
            }
        }
    }
    free(stride), free(dn), free(dw);
    return 0;
}

/* one minimal route between routers (gs, rs) and (gd, rd) of a dragonfly (network.Dragonfly._legs):
 * a local hop to the router holding the link to the destination group, the global link, a
 * local hop to the destination router; `x` bytes on each link taken (divided among its copies) */
static inline void dragonfly_legs(const rm_dragonfly *d, double *out, int64_t gs, int64_t rs, int64_t gd, int64_t rd,
                                  double x)
{
    int64_t A = d->routers, G = d->groups, other = gs != gd;
    int64_t r1 = other ? gd % A : rd;
    if (rs != r1)
        out[d->loc0 + (gs * A + rs) * A + r1] += x / (double)d->local_links;
    if (!other)
        return;
    out[d->glob0 + gs * G + gd] += x / (double)d->global_links;
    int64_t r2 = gs % A;
    if (r2 != rd)
        out[d->loc0 + (gd * A + r2) * A + rd] += x / (double)d->local_links;
}

int64_t rm_dragonfly_loads(const rm_dragonfly *d, int64_t npairs, const int64_t *na, const int64_t *nb,
                           const double *w, const int64_t *grp, double *out)
{
    int64_t G = d->groups;
    for (int64_t i = 0; i < npairs; i++) {
        int64_t a = na[i], b = nb[i];
        if (a == b)
            continue;
        double *o = out + (grp ? grp[i] : 0) * d->size;
        o[a] += w[i];
        o[d->nnodes + b] += w[i];
        const int64_t *ca = d->coords + a * 3, *cb = d->coords + b * 3;
        int64_t gs = ca[0], rs = ca[1], gd = cb[0], rd = cb[1];
        if (!d->valiant || G < 3 || gs == gd) {
            dragonfly_legs(d, o, gs, rs, gd, rd, w[i]);
            continue;
        }
        /* Valiant: an equal share through each other group, entered at router gs mod A */
        double share = w[i] / (double)(G - 2);
        int64_t entry = gs % d->routers;
        for (int64_t mid = 0; mid < G; mid++) {
            if (mid == gs || mid == gd)
                continue;
            dragonfly_legs(d, o, gs, rs, mid, entry, share);
            dragonfly_legs(d, o, mid, entry, gd, rd, share);
        }
    }
    return 0;
}

int64_t rm_switch_loads(const int64_t *groups, int32_t nlevels, int32_t used, const int64_t *off, int64_t total,
                        int64_t npairs, const int64_t *na, const int64_t *nb, const double *w, const int64_t *grp,
                        double *out)
{
    for (int64_t i = 0; i < npairs; i++) {
        const int64_t *ga = groups + na[i] * nlevels, *gb = groups + nb[i] * nlevels;
        int l = 0;
        while (l < nlevels && ga[l] == gb[l])
            l++;
        double *o = out + (grp ? grp[i] : 0) * 2 * total;
        for (int m = l; m < used; m++) {
            o[off[m] + ga[m]] += w[i];
            o[total + off[m] + gb[m]] += w[i];
        }
    }
    return 0;
}
