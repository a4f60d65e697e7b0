/* rankmap mapper: the interface of the local search (librankmap_refine.so).
 *
 * Called from Python through ctypes: mapper/refine.py mirrors rm_problem field by field
 * and, when it loads the library, checks its mirror against rm_layout() (names, order,
 * offsets, size), so the two cannot drift apart silently. */
#ifndef RM_REFINE_H
#define RM_REFINE_H
#include <stdint.h>

/* X(type, name): every field of rm_problem, in order */
#define RM_PROBLEM_FIELDS(X)                                                                          \
    X(int64_t, n)                /* ranks */                                                          \
    X(const int64_t *, xadj)     /* n + 1 */                                                          \
    X(const int64_t *, adj)      /* symmetric adjacency, no self loops */                             \
    X(const double *, w)                                                                              \
    X(int64_t, nslots)                                                                                \
    X(int32_t, nlevels)                                                                               \
    X(int32_t, node_level)                                                                            \
    X(const int64_t *, lvl)      /* nslots * nlevels group ids, top level first */                    \
    X(const double *, acc)       /* nlevels + 1: cost of a pair first differing at level l */         \
    X(int32_t, ndims)            /* 0: no torus */                                                    \
    X(const int64_t *, dims)                                                                          \
    X(const uint8_t *, wrap)                                                                          \
    X(const int64_t *, coords)   /* nslots * ndims: coordinates of the slot's node */                 \
    X(double, hop_cost)          /* torus: each link after the first (the first pays the node level) */ \
    X(int32_t, cand_level)       /* level whose groups give the candidate slots */                    \
    X(const int64_t *, grp_of_slot)                                                                   \
    X(const int64_t *, grp_ptr)                                                                       \
    X(const int64_t *, grp_slots)                                                                     \
    X(int64_t, ngroups)                                                                               \
    /* groups of every level above the cores, for subtree exchanges: level l's groups are             \
     * glev[l]..glev[l+1]-1; group g's slots are gslot[gptr[g]..gptr[g+1]-1], in order */             \
    X(int32_t, nglev)                                                                                 \
    X(const int64_t *, glev)                                                                          \
    X(const int64_t *, gptr)                                                                          \
    X(const int64_t *, gslot)                                                                         \
    /* per group of glev: groups of one level with the same gsig >= 0 have the same inner shape \
     * and every slot of one is as far from every slot of another (their exchange changes only \
     * their traffic with the other groups); -1: not known, exchanges are scored in full */       \
    X(const int64_t *, gsig)

#define RM_DECLARE_FIELD(type, name) type name;
typedef struct {
    RM_PROBLEM_FIELDS(RM_DECLARE_FIELD)
} rm_problem;

/* "size name:offset name:offset ...": the layout of rm_problem as this library sees it */
const char *rm_layout(void);
/* the functions' arguments as of this version: mapper/refine.py (RM_API) refuses a library
 * built from other sources (a stale build would read the arguments it does not expect) */
#define RM_API 5
int64_t rm_api(void);
/* ranks above which rm_refine expects them numbered by slot (its passes visit blocks of
 * consecutive ranks) */
int64_t rm_block_order_above(void);

double rm_cost(const rm_problem *p, const int64_t *slot);
int64_t rm_refine(const rm_problem *p, int64_t *slot_of_rank, uint64_t seed, double time_limit, int64_t max_passes,
                  int64_t ils_rounds, double *cost_out, int32_t *timed_out);
int64_t rm_tabu(const rm_problem *p, int64_t *slot_of_rank, uint64_t seed, double time_limit, int64_t max_iters,
                double *cost_out, int32_t *timed_out);
/* the edges inside and leaving a set of ranks (refine.c: subgraphs) */
int64_t rm_subgraph(const int64_t *indptr, const int64_t *indices, const double *data, const int64_t *rk, int64_t m,
                    int64_t *pos, int64_t *sub_indptr, int64_t *row, int64_t *col, double *w);
/* a dragonfly as network.Dragonfly lays out its links: injection up (nnodes), down (nnodes),
 * local (groups x routers x routers from loc0), global (groups x groups from glob0) */
typedef struct {
    int64_t groups, routers, nnodes, local_links, global_links, loc0, glob0, size;
    const int64_t *coords; /* nnodes x 3: group, router, node on the router */
    int32_t valiant;
} rm_dragonfly;
/* the machine as the metrics read it (mapper/metrics.py fills it) */
typedef struct {
    int32_t nlevels, node_level;
    const int64_t *lvl;       /* nslots x nlevels level ids */
    const double *acc;        /* nlevels + 1: the cost of a pair whose rows first differ at level l */
    const int64_t *up;        /* nlevels + 1: tree levels up to the common ancestor (Machine.tree_levels_up) */
    const int64_t *slot_node; /* nslots */
    int32_t ndims;            /* 0: one switch */
    const int64_t *dims;
    const uint8_t *wrap;
    const int64_t *ncoords; /* nnodes x ndims torus coordinates */
    double hop_cost;
    const int64_t *hops_at; /* ndims = 0: nlevels + 1, network links between two slots whose rows first differ
                               at level l (a switch tree: up to the lowest common switch and down) */
    const rm_dragonfly *dfly; /* or a dragonfly's minimal routes (network.Dragonfly.hops); NULL otherwise */
} rm_machine_view;
/* a mapping's metrics over pairs of ranks (pairmetrics.c; mapper/metrics.py) */
int64_t rm_pair_metrics(const rm_machine_view *m, int64_t npairs, const int32_t *row, const int32_t *col,
                        const double *w, const int64_t *slot, double *out);
int64_t rm_torus_loads(const rm_machine_view *m, int64_t npairs, const int32_t *row, const int32_t *col,
                       const double *w, const int64_t *slot, double *loads);
/* out (+=, one row of `size` per route group grp[i], or one row with grp NULL): bytes per link
 * of routes na[i] -> nb[i] (node indices) of w[i] bytes; network.Dragonfly.link_loads */
int64_t rm_dragonfly_loads(const rm_dragonfly *d, int64_t npairs, const int64_t *na, const int64_t *nb,
                           const double *w, const int64_t *grp, double *out);
/* out (+=, one row of 2 x total per route group grp[i], or one row with grp NULL): bytes of the
 * routes na[i] -> nb[i] (nodes) on each switch-tree link, network.SwitchTree.link_loads before
 * its division by the links' counts: groups (nnodes x nlevels) the nodes' subtrees top to
 * bottom; at each of the first `used` levels m a route that leaves its subtree (first
 * differing level <= m) loads the up link off[m] + its source's group and the down link
 * total + off[m] + its target's */
int64_t rm_switch_loads(const int64_t *groups, int32_t nlevels, int32_t used, const int64_t *off, int64_t total,
                        int64_t npairs, const int64_t *na, const int64_t *nb, const double *w, const int64_t *grp,
                        double *out);
/* D between two slots (the cost's pair term) */
double rm_dist(const rm_problem *p, int64_t a, int64_t b);
/* many splits at once (smallsplit.c): group g (ranks[gptr[g]..gptr[g+1]-1]) into k parts
 * of at most caps[g*k + j] ranks each, the lowest cut found (or METIS's, repaired: metis is
 * then METIS_PartGraphRecursive of a 32-bit libmetis, k = 2); part: each rank's part. With
 * p, two parts of one size are given to the children (first slots heads[g*k + j]) the way
 * round that puts them nearer their partners outside the group (where: a slot in each
 * rank's subtree, updated to the heads) */
int64_t rm_split_groups(const int64_t *indptr, const int64_t *indices, const double *data, const int64_t *ranks,
                        const int64_t *gptr, int64_t ngroups, int32_t k, const int64_t *caps, uint64_t seed,
                        int64_t *pos, int64_t *part, const rm_problem *p, const int64_t *heads, int64_t *where,
                        const void *metis, int32_t starts);

#endif
