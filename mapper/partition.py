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


class _Sub:
    """The traffic of a set of ranks rk, as plain arrays: the internal graph in local numbering
    (CSR: indptr, col, w, plus the row of each entry) and the edges leaving the set (local
    row, global column, weight). Cheap enough for the thousands of small splits of a large
    machine (scipy's fancy indexing costs milliseconds per call)."""

    def __init__(self, W: sp.csr_matrix, rk: np.ndarray, pos: np.ndarray):
        ip = W.indptr
        st = ip[rk]
        ln = ip[rk + 1] - st
        tot = int(ln.sum())
        first = np.concatenate([[0], np.cumsum(ln)[:-1]])
        at = np.repeat(st - first, ln) + np.arange(tot)
        row = np.repeat(np.arange(len(rk)), ln)
        cols, w = W.indices[at], W.data[at]
        pos[rk] = np.arange(len(rk))
        local = pos[cols]
        pos[rk] = -1
        inside = local >= 0
        self.n = len(rk)
        self.row, self.col, self.w = row[inside], local[inside].astype(np.int64), w[inside]
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.row, minlength=self.n))]).astype(np.int64)
        out = ~inside
        self.ext_row, self.ext_col, self.ext_w = row[out], cols[out], w[out]

    @property
    def nnz(self) -> int:
        return len(self.col)

    def metis_weights(self) -> np.ndarray:
        """Integer edge weights >= 1 for METIS, scaled so that sums cannot overflow."""
        total = float(self.w.sum()) or 1.0
        return np.maximum(1, np.rint(self.w * min(1.0, 2.0 ** 40 / total))).astype(np.int64)

    def cut(self, part: np.ndarray) -> float:
        return float(self.w[part[self.row] != part[self.col]].sum())


def _metis_split(sub: _Sub, targets: list[int], seed: int) -> np.ndarray:
    """METIS recursive bisection and k-way (the latter only where it is cheap); the split
    with the lower cut after the exact capacity repair wins."""
    k = len(targets)
    n = sub.n
    tp = [t / n for t in targets]
    adj = pymetis.CSRAdjacency(sub.indptr, sub.col)
    weights = sub.metis_weights()
    best, best_cut = None, None
    variants = (True, False) if n <= 50000 and k > 2 else (True,)
    for recursive in variants:
        res = pymetis.part_graph(k, adjacency=adj, eweights=weights, tpwgts=tp, recursive=recursive,
                                 options=pymetis.Options(seed=int(seed) % (2 ** 31), ufactor=5))
        part = repair(sub, np.asarray(res.vertex_part, dtype=np.int64), targets)
        if len(variants) == 1:
            return part
        cut = sub.cut(part)
        if best_cut is None or cut < best_cut:
            best, best_cut = part, cut
    return best


def repair(sub: _Sub, part: np.ndarray, targets: list[int]) -> np.ndarray:
    """Exact part sizes: move vertices out of overfull parts where that costs least."""
    k = len(targets)
    n = len(part)
    sizes = np.bincount(part, minlength=k)
    excess = sizes - np.array(targets)
    if not excess.any():
        return part
    # n x k: weight from each vertex to each part
    conn = np.bincount(sub.row * k + part[sub.col], weights=sub.w, minlength=n * k).reshape(n, k)
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
    pos = np.full(graph.n, -1, dtype=np.int64)
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
            sub = _Sub(W, rk, pos)
            tl = [targets[i] for i in live]
            if sub.nnz == 0 or len(rk) <= len(live):
                part = np.repeat(np.arange(len(live)), tl)        # nothing to gain: keep the order
            else:
                part = _metis_split(sub, tl, seed + 7919 * depth)
            kids = _orient(sub, node, part, [node.children[i] for i in live], tl, where, machine)
            for j, child in enumerate(kids):
                members = rk[part == j]
                where[members] = child.slots[0]
                nxt.append((members, child))
        level = nxt
        depth += 1
    return slot


def _orient(sub: _Sub, node: TreeNode, part: np.ndarray, children: list, sizes: list, where: np.ndarray,
            machine: Machine) -> list:
    """Which child each part goes to: among children of the same size, the assignment that
    puts the parts' traffic with ranks outside this subtree over the shortest distances."""
    k = len(children)
    if len(set(sizes)) == len(sizes) or not len(sub.ext_col):
        return children                           # no two children of one size, or no outside traffic
    if machine.slot_node[node.slots[0]] == machine.slot_node[node.slots[-1]]:
        return children                           # inside one node: everyone outside is as far from each part
    src_part = part[sub.ext_row]
    # destinations are few distinct representative slots: distances per representative
    reps, inv = np.unique(where[sub.ext_col], return_inverse=True)
    w = sub.ext_w
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
