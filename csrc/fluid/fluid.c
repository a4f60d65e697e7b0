/* Max-min fair sharing of the flow replay's active flows (critpath.run_time_fluid, whose
 * event loop is replay.c; called by it at every start and end of a flow, and by the Python
 * reference, tests/replay_reference.py's _Flows): the loop that was 60 % of a rankmap-c
 * mapping's time with a network model (LULESH 27 on Angara-K1: 72 of 117 s in Python).
 * Progressive filling, flow by flow, with every sum taken in the order the Python loop took
 * it, so the rates are the same to the last bit (tests/test_critpath_run.py checks them
 * against the loop). Built with -ffp-contract=off: a fused multiply-add would change the last
 * bits. */
#include <stdint.h>
#include <stdlib.h>

/* nf flows, flow f on route flow_route[f]; route r's entries are r_first[r] .. r_first[r+1]
 * of (e_rid: resource number, e_c: seconds per byte, e_cip: that over the route's penalty),
 * r_ip[r] = 1 / penalty. res_map: one entry per resource number, all -1 (left so).
 * Writes each flow's rate to rate_out; returns the work (route entries + resources
 * squared), -1 when spent + work > budget (nothing computed), -2 out of memory. */
int64_t rm_fluid_share(int64_t nf, const int64_t *flow_route, const int64_t *r_first, const int64_t *e_rid,
                       const double *e_c, const double *e_cip, const double *r_ip, int64_t *res_map,
                       double budget, int64_t spent, double *rate_out)
{
    int64_t nent = 0;
    for (int64_t f = 0; f < nf; f++)
        nent += r_first[flow_route[f] + 1] - r_first[flow_route[f]];
    if (nent == 0) {
        for (int64_t f = 0; f < nf; f++)
            rate_out[f] = 0.0;
        return 0;
    }
    /* per resource met (numbered in the order first met, as the loop's dicts are ordered) */
    int64_t *res = malloc(sizeof(int64_t) * (size_t)nent);       /* local -> resource number */
    int64_t *cnt = malloc(sizeof(int64_t) * (size_t)nent);
    int64_t *start = malloc(sizeof(int64_t) * (size_t)(nent + 1));
    int64_t *members = malloc(sizeof(int64_t) * (size_t)nent);   /* flows through each, in order */
    int64_t *touched = malloc(sizeof(int64_t) * (size_t)nent);
    double *load = malloc(sizeof(double) * (size_t)nent);
    double *used = malloc(sizeof(double) * (size_t)nent);
    double *lvl = malloc(sizeof(double) * (size_t)nent);
    char *alive = malloc((size_t)nent);
    char *fixed = calloc((size_t)nf + 1, 1);
    int64_t rc = -2;
    if (!res || !cnt || !start || !members || !touched || !load || !used || !lvl || !alive || !fixed)
        goto out;
    int64_t nr = 0;
    for (int64_t f = 0; f < nf; f++) {
        int64_t r = flow_route[f];
        for (int64_t e = r_first[r]; e < r_first[r + 1]; e++) {
            int64_t id = e_rid[e], li = res_map[id];
            if (li < 0) {
                li = res_map[id] = nr++;
                res[li] = id;
                cnt[li] = 0;
                load[li] = 0.0;          /* 0.0 + x == x: the loop's first assignment */
            }
            cnt[li]++;
            load[li] += e_cip[e];
        }
    }
    rc = nent + nr * nr;
    if (spent + rc > budget) {
        rc = -1;
        goto out;
    }
    start[0] = 0;
    for (int64_t li = 0; li < nr; li++) {
        start[li + 1] = start[li] + cnt[li];
        used[li] = 0.0;
        alive[li] = 1;
        lvl[li] = 1.0 / load[li];
    }
    {
        int64_t *fill = touched;         /* (scratch until the loop below) */
        for (int64_t li = 0; li < nr; li++)
            fill[li] = start[li];
        for (int64_t f = 0; f < nf; f++) {
            int64_t r = flow_route[f];
            for (int64_t e = r_first[r]; e < r_first[r + 1]; e++)
                members[fill[res_map[e_rid[e]]]++] = f;
        }
    }
    int64_t left = nr;
    while (left > 0) {
        int64_t best = -1;
        double lo = 0.0;
        for (int64_t li = 0; li < nr; li++)      /* the first met of the lowest (Python's min) */
            if (alive[li] && (best < 0 || lvl[li] < lo)) {
                best = li;
                lo = lvl[li];
            }
        if (lo < 0.0)
            lo = 0.0;
        int64_t nt = 0;
        for (int64_t k = start[best]; k < start[best + 1]; k++) {
            int64_t f = members[k];
            if (fixed[f])
                continue;
            fixed[f] = 1;
            int64_t r = flow_route[f];
            double x = rate_out[f] = lo * r_ip[r];
            for (int64_t e = r_first[r]; e < r_first[r + 1]; e++) {
                int64_t li = res_map[e_rid[e]];
                int64_t n = cnt[li];
                if (n) {
                    used[li] += x * e_c[e];
                    cnt[li] = --n;
                    if (n) {
                        load[li] -= e_cip[e];
                        touched[nt++] = li;
                    } else {
                        alive[li] = 0;
                        left--;
                    }
                }
            }
        }
        for (int64_t t = 0; t < nt; t++) {
            int64_t li = touched[t];
            if (cnt[li])
                lvl[li] = (1.0 - used[li]) / load[li];
        }
    }
out:
    if (res)
        for (int64_t f = 0; f < nf; f++) {     /* the map left all -1 again */
            int64_t r = flow_route[f];
            for (int64_t e = r_first[r]; e < r_first[r + 1]; e++)
                res_map[e_rid[e]] = -1;
        }
    free(res); free(cnt); free(start); free(members); free(touched);
    free(load); free(used); free(lvl); free(alive); free(fixed);
    return rc;
}
