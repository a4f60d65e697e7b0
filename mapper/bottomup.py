"""A TreeMatch-style start (Jeannot & Mercier's algorithm): the ranks grouped bottom up by
affinity, the machine's levels one after another, instead of split top down like the
partitioner's starts.

Why a second kind of start: on lockstep codes at 16-64 ranks (NPB LU, MG, CloverLeaf,
LULESH) the bottom-up groups are a different basin from the top-down splits, and local
search from the splits does not reach them (docs/real-apps.md: the rows where TreeMatch's
mapping beat rankmap's). The levels are the capacities along the machine tree's first
root-to-leaf path (exact on uniform machines; on uneven ones, tori of nodes of two sizes,
an approximation that the local search after it repairs); each level's arity is split into
factors of 3 and 2 (TreeMatch's arity optimisation). Free slots are ranks that exchange
nothing. The groups' order is the tree's slot order (a subtree's slots are contiguous)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine, TreeNode

# Pairs are matched exactly (maximum-weight matching) up to this many candidate pairs, as
# TreeMatch does; above it, rounds of locally dominant merges. 2016 = 64 units: the exact
# matching is cubic in Python (networkx), 0.1 s at 64 units, seconds at TreeMatch's 245.
EXACT_PAIRS = 2016
MERGE_ROUNDS = 64


def arity_steps(a: int) -> list[int]:
    """TreeMatch's optimize_arity: a level of arity a as levels of 3, then 2 (top down),
    what is left of a (prime to 6) at the bottom. Returned bottom up."""
    top = []
    while a % 3 == 0 and a > 3:
        top.append(3)
        a //= 3
    while a % 2 == 0 and a > 2:
        top.append(2)
        a //= 2
    top.append(a)
    return [x for x in reversed(top) if x > 1]


def level_steps(root: TreeNode) -> list[int]:
    """Group sizes, bottom up: the ratio of capacities between consecutive subtrees on the
    first root-to-leaf path (a leaf of interchangeable cores counts as one level of them),
    each split by arity_steps."""
    caps = []
    t = root
    while True:
        caps.append(t.capacity)
        if not t.children:
            break
        t = t.children[0]
    caps.append(1)
    steps = []
    for hi, lo in zip(reversed(caps[:-1]), reversed(caps[1:])):
        steps += arity_steps(max(1, int(round(hi / max(lo, 1)))))
    return steps


def _aggregate(A: sp.csr_matrix, group: np.ndarray, m: int) -> sp.csr_matrix:
    c = A.tocoo()
    B = sp.csr_matrix((c.data, (group[c.row], group[c.col])), shape=(m, m))
    B.setdiag(0)
    B.eliminate_zeros()
    return B


def _pairs_exact(A: sp.csr_matrix) -> tuple[np.ndarray, np.ndarray]:
    """Pairs of a maximum-weight matching (networkx, exact); the unmatched paired in order."""
    import networkx as nx
    m = A.shape[0]
    c = sp.triu(A, k=1).tocoo()
    G = nx.Graph()
    G.add_nodes_from(range(m))
    G.add_weighted_edges_from(zip(c.row.tolist(), c.col.tolist(), c.data.tolist()))
    pairs = np.array(sorted(tuple(sorted(x)) for x in nx.max_weight_matching(G)), dtype=np.int64).reshape(-1, 2)
    group = np.full(m, -1, dtype=np.int64)
    within = np.zeros(m, dtype=np.int64)
    group[pairs[:, 0]] = group[pairs[:, 1]] = np.arange(len(pairs))
    within[pairs[:, 1]] = 1
    rest = np.flatnonzero(group < 0)
    group[rest] = len(pairs) + np.arange(len(rest)) // 2
    within[rest] = np.arange(len(rest)) % 2
    return group, within


def group_units(A: sp.csr_matrix, p: int, rng, exact_pairs: int = EXACT_PAIRS) -> tuple[np.ndarray, np.ndarray]:
    """Groups of exactly p units (A.shape[0] divisible by p) by heaviest affinity: rounds of
    locally dominant merges (mutual heaviest neighbours whose sizes fit p), then the clusters
    left incomplete fill the remaining groups in cluster order.
    Returns (group of each unit, index of the unit within its group)."""
    m = A.shape[0]
    if p == 2 and m * (m - 1) // 2 <= exact_pairs:
        return _pairs_exact(A)
    cl = np.arange(m)
    size = np.ones(m, dtype=np.int64)
    C = A.tocsr()
    noise = rng.random(m)
    for _ in range(MERGE_ROUNDS):
        nc = C.shape[0]
        c = C.tocoo()
        ok = (size[c.row] + size[c.col] <= p) & (c.row != c.col)
        r, q, w = c.row[ok], c.col[ok], c.data[ok]
        if not len(r):
            break
        # ties broken by a symmetric per-pair perturbation (seeded)
        w = w * (1.0 + 1e-9 * (noise[np.minimum(r, q) % m] + noise[np.maximum(r, q) % m]))
        o = np.lexsort((-w, r))
        r, q = r[o], q[o]
        first = np.ones(len(r), bool)
        first[1:] = r[1:] != r[:-1]
        best = np.full(nc, -1, dtype=np.int64)
        best[r[first]] = q[first]
        a = np.flatnonzero(best >= 0)
        mutual = a[(best[best[a]] == a) & (a < best[a])]
        if not len(mutual):
            break
        new = np.arange(nc)
        new[best[mutual]] = mutual
        uniq, new = np.unique(new, return_inverse=True)
        size = np.bincount(new, weights=size).astype(np.int64)
        cl = new[cl]
        C = _aggregate(C, new, len(uniq))
    full = size[cl] == p
    order = np.lexsort((np.arange(m), cl, ~full))
    group = np.empty(m, dtype=np.int64)
    group[order] = np.arange(m) // p
    within = np.empty(m, dtype=np.int64)
    within[order] = np.arange(m) % p
    return group, within


def positions(W: sp.csr_matrix, steps: list[int], m: int, seed: int, exact_pairs: int = EXACT_PAIRS) -> np.ndarray:
    """Leaf order of m units (W's vertices, then units with no traffic up to m) grouped
    bottom up by `steps`: each unit's rank in the final nested order (a permutation of m)."""
    n = W.shape[0]
    rng = np.random.default_rng(seed)
    A = sp.csr_matrix((W.data, W.indices, np.concatenate([W.indptr, np.full(m - n, W.indptr[-1])])), shape=(m, m))
    unit = np.arange(m)
    offset = np.zeros(m, dtype=np.int64)
    usize = 1
    for p in steps:
        nu = A.shape[0]
        pad = -nu % p                 # uneven machines: units with no traffic complete the last group
        if pad:
            A = sp.csr_matrix((A.data, A.indices, np.concatenate([A.indptr, np.full(pad, A.indptr[-1])])),
                              shape=(nu + pad, nu + pad))
        grp, within = group_units(A, p, rng, exact_pairs)
        offset = within[unit] * usize + offset
        unit = grp[unit]
        usize *= p
        A = _aggregate(A, grp, (nu + pad) // p)
    pos = unit * usize + offset
    out = np.empty(m, dtype=np.int64)
    out[np.argsort(pos, kind="stable")] = np.arange(m)
    return out


def bottomup(graph: Graph, machine: Machine, seed: int = 0, root: TreeNode | None = None) -> np.ndarray:
    """Slot of each rank: TreeMatch-style bottom-up grouping onto the machine tree."""
    root = root or machine.tree()
    slots = root.slots
    order = positions(graph.W, level_steps(root), len(slots), seed)
    return slots[order[:graph.n]].astype(np.int64)
