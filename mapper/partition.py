"""Hierarchical partitioning down the machine tree (the Angara scheme, generalized): at each
tree node the ranks assigned to it are split among its children with METIS (pymetis),
target part sizes = the children's capacities, then an exact capacity repair moves the
cheapest vertices from overfull to underfull parts. Ranks on one socket are equivalent
for the cost, so the last split (into cores) keeps the order."""
from __future__ import annotations

import numpy as np
import pymetis
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from mapper.graph import Graph
from mapper.machine import Machine, TreeNode


def target_sizes(n: int, caps: list[int], fill: str) -> list[int]:
    """How many of n ranks each child takes: 'packed' fills children in (spatial) order,
    'spread' divides in proportion to capacity (largest remainder)."""
    if n >= sum(caps):
        return list(caps)
    if fill == "packed":
        out, left = [], n
        for c in caps:
            out.append(min(c, left))
            left -= out[-1]
        return out
    share = np.array(caps, dtype=float) * n / sum(caps)
    out = np.floor(share).astype(int)
    for i in np.argsort(-(share - out), kind="stable")[: n - int(out.sum())]:
        out[i] += 1
    return [int(min(o, c)) for o, c in zip(out, caps)]


def _metis_split(sub: sp.csr_matrix, weights: np.ndarray, targets: list[int], seed: int) -> np.ndarray:
    """METIS recursive bisection and k-way (the latter only where it is cheap); the split
    with the lower cut after the exact capacity repair wins."""
    k = len(targets)
    n = sub.shape[0]
    tp = [t / n for t in targets]
    adj = pymetis.CSRAdjacency(sub.indptr.astype(np.int64), sub.indices.astype(np.int64))
    best, best_cut = None, None
    for recursive in ((True, False) if n <= 50000 and k > 2 else (True,)):
        res = pymetis.part_graph(k, adjacency=adj, eweights=weights, tpwgts=tp, recursive=recursive,
                                 options=pymetis.Options(seed=int(seed) % (2 ** 31), ufactor=5))
        part = repair(sub, np.asarray(res.vertex_part, dtype=np.int64), targets)
        c = sub.tocoo()
        cut = float(c.data[part[c.row] != part[c.col]].sum())
        if best_cut is None or cut < best_cut:
            best, best_cut = part, cut
    return best


def repair(sub: sp.csr_matrix, part: np.ndarray, targets: list[int]) -> np.ndarray:
    """Exact part sizes: move vertices out of overfull parts where that costs least."""
    k = len(targets)
    n = len(part)
    sizes = np.bincount(part, minlength=k)
    excess = sizes - np.array(targets)
    if not excess.any():
        return part
    onehot = sp.csr_matrix((np.ones(n), (np.arange(n), part)), shape=(n, k))
    conn = np.asarray((sub @ onehot).todense())      # n x k: weight from each vertex to each part
    part = part.copy()
    for a in np.flatnonzero(excess > 0):
        verts = np.flatnonzero(part == a)
        under = np.flatnonzero(excess < 0)
        if not len(under):
            break
        gain = conn[np.ix_(verts, under)] - conn[verts, a][:, None]
        order = np.argsort(-gain, axis=None, kind="stable")
        moved = np.zeros(len(verts), bool)
        for flat in order:
            if excess[a] <= 0:
                break
            vi, bi = divmod(int(flat), len(under))
            b = under[bi]
            if moved[vi] or excess[b] >= 0:
                continue
            part[verts[vi]] = b
            moved[vi] = True
            excess[a] -= 1
            excess[b] += 1
    return part


def hierarchical(graph: Graph, machine: Machine, root: TreeNode, seed: int, fill: str = "packed",
                 ranks: np.ndarray | None = None) -> np.ndarray:
    """slot_of_rank for the ranks (default all) placed under `root`.

    The tree is processed breadth-first, so that when a subtree's ranks are split every
    other rank already sits in some subtree of the same depth; the parts are then given to
    the children (Hungarian method among children of equal capacity) so that each part
    lands nearest the ranks it talks to outside (dual recursive bipartitioning)."""
    ranks = np.arange(graph.n) if ranks is None else ranks
    slot = np.full(graph.n, -1, dtype=np.int64)
    where = np.full(graph.n, root.slots[0], dtype=np.int64)   # a representative slot of each rank's subtree
    W = graph.W
    level = [(ranks, root)]
    depth = 0
    while level:
        nxt = []
        for rk, node in level:
            if not node.children or all(not c.children for c in node.children) and _same_cost(machine, node):
                slot[rk] = node.slots[: len(rk)]   # equivalent slots: keep the order
                where[rk] = slot[rk]
                continue
            caps = [c.capacity for c in node.children]
            targets = target_sizes(len(rk), caps, fill)
            live = [i for i, t in enumerate(targets) if t > 0]
            if len(live) == 1:
                nxt.append((rk, node.children[live[0]]))
                continue
            rows = W[rk].tocsr()
            sub = rows[:, rk].tocsr()
            tl = [targets[i] for i in live]
            if sub.nnz == 0 or len(rk) <= len(live):
                part = np.repeat(np.arange(len(live)), tl)        # nothing to gain: keep the order
            else:
                part = _metis_split(sub, graph.metis_weights(sub), tl, seed + 7919 * depth)
            kids = _orient(rows, rk, part, [node.children[i] for i in live], tl, where, machine)
            for j, child in enumerate(kids):
                members = rk[part == j]
                where[members] = child.slots[0]
                nxt.append((members, child))
        level = nxt
        depth += 1
    return slot


def _orient(rows: sp.csr_matrix, rk: np.ndarray, part: np.ndarray, children: list, sizes: list, where: np.ndarray,
            machine: Machine) -> list:
    """Which child each part goes to: among children of the same size, the assignment that
    puts the parts' traffic with ranks outside this subtree over the shortest distances.
    rows: the traffic rows of the ranks rk."""
    k = len(children)
    if len(set(sizes)) == len(sizes):
        return children                           # no two children of one size: nothing to choose
    inside = np.zeros(rows.shape[1], bool)
    inside[rk] = True
    coo = rows.tocoo()
    ext = ~inside[coo.col]
    if not ext.any():
        return children
    src_part = part[coo.row[ext]]
    # destinations are few distinct representative slots: distances per representative
    reps, inv = np.unique(where[coo.col[ext]], return_inverse=True)
    w = coo.data[ext]
    heads = np.array([c.slots[0] for c in children])
    d = machine.distance(np.repeat(heads, len(reps)), np.tile(reps, k)).reshape(k, len(reps))
    if (d == d[0]).all():                         # every child is as far from the rest: keep the order
        return children
    cost = np.stack([np.bincount(src_part, weights=w * d[j][inv], minlength=k) for j in range(k)], axis=1)
    assign = list(range(k))
    by_size = {}
    for j, sz in enumerate(sizes):
        by_size.setdefault(sz, []).append(j)
    for group in by_size.values():               # parts can only trade children of their own size
        if len(group) > 1:
            r, c = linear_sum_assignment(cost[np.ix_(group, group)])
            for a, b in zip(r, c):
                assign[group[a]] = group[b]
    return [children[assign[j]] for j in range(k)]


def _same_cost(machine: Machine, node: TreeNode) -> bool:
    """True when every pair of slots under node costs the same (e.g. the cores of one socket)."""
    lv = machine.lvl[node.slots]
    return bool((lv[:, :-1] == lv[0, :-1]).all())
