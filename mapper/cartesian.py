"""Cartesian process grids: most stencil codes number their ranks row-major over a process
grid (MPI_Dims_create, MPI_Cart_create). Multilevel partitioners cut such a grid into k
equal parts only approximately: a 36 x 36 grid into 9 parts, METIS and KaHIP (fast to
strong) cut 154-163 edges where nine 12 x 12 squares cut 144. When the traffic is a grid,
nested bricks of it, one per subtree of the machine, are starts for the local search
(solve.py), or, where no bricks tile the machine's parts (1,000 ranks on 32-core nodes,
unequal nodes), a recursive coordinate bisection of the grid down the machine tree:
`detect` finds the grid, `grid_starts` the mappings."""
from __future__ import annotations

import itertools
import math

import numpy as np
import scipy.sparse as sp

from rankmap.mapper.machine import Machine, TreeNode
from rankmap.mapper.partition import in_order, live_children, settled

NEAR_SHARE = 0.95      # share of the bytes a grid must carry between neighbours (27-point, periodic)
STRIDE_SHARE = 0.02    # rank offsets carrying at least this share of the bytes are candidate strides
DIM_SHARE = 0.01       # every dimension of the grid carries at least this share (else it is not one)
MAX_STRIDES = 8
SAMPLE = 100000        # entries read to find the strides and rank the candidate grids
SAMPLE_SLACK = 0.02    # a candidate that misses NEAR_SHARE on the sample by this much is dropped
MAX_DIMS = 4
# on a small grid most pairs are neighbours, and NEAR_SHARE holds for traffic with no grid in
# it (22 ranks of random traffic in 3 groups were "a 2 x 5 x 3 process grid": 81 % of the
# pairs are neighbours there). The bytes off the neighbours must also be at most this share
# of what traffic spread evenly over all pairs would put there (binds only where neighbours
# are over half the pairs; a true grid puts nothing off them)
OFF_GRID_VS_EVEN = 0.1
SHARE_TIE = 1e-6      # near shares this close are equal: fewer dimensions win
MAX_RANKS = 2_000_000  # a grid is checked on every edge: 10^7 ranks would add seconds and GBs
BEAM = 8               # nested-brick plans kept per level, the least boundary first


def detect(W: sp.spmatrix, max_dims: int = MAX_DIMS) -> tuple | None:
    """The dims (row-major, the last fastest) of the process grid the traffic W is
    exchanged on, or None: at least NEAR_SHARE of the bytes between ranks that are
    neighbours on it (every coordinate within 1, periodic), every dimension used, the
    fewest dimensions that explain the traffic. The product of the dims is n, or more when
    the last row or plane of the grid is only partly filled."""
    n = W.shape[0]
    W = sp.csr_matrix(W)
    if n < 4 or W.nnz == 0:
        return None
    # the strides from an even sample of the entries (a grid's pattern repeats; a random
    # graph has no heavy offset and ends here, 0.1 s and no copy of the graph at 10^6 ranks)
    pick = np.arange(0, W.nnz, max(1, W.nnz // SAMPLE))
    rows = np.searchsorted(W.indptr, pick, side="right") - 1
    cols = W.indices[pick].astype(np.int64)
    up = cols > rows
    rs, cs, ws = rows[up], cols[up], W.data[pick][up].astype(np.float64)
    if not len(rs) or ws.sum() <= 0:
        return None
    off, inv = np.unique(cs - rs, return_inverse=True)
    share = np.bincount(inv, weights=ws) / ws.sum()
    heavy = off[share >= STRIDE_SHARE]
    strides = sorted(int(s) for s in heavy[np.argsort(-share[share >= STRIDE_SHARE], kind="stable")][:MAX_STRIDES]
                     if 1 < s < n)
    # the slowest dimension may be cut short (the last row or plane partly filled). A ring's
    # wrap-around (offset n - 1) is a heavy offset too, and (2, n - 1) "explains" it; the
    # ring itself, (n,), is a candidate, ranked first among equals (the fewest dimensions),
    # so that it is not called a grid (a 4-rank ring was "a 2 x 3 process grid")
    cands = [(n,)] + [(-(-n // s), s) for s in strides]
    if max_dims >= 3:
        cands += [(-(-n // b), b // a, a) for a, b in itertools.combinations(strides, 2) if b % a == 0 and b // a >= 2
                  and n > b]
    if max_dims >= 4:
        cands += [(-(-n // c), c // b, b // a, a) for a, b, c in itertools.combinations(strides, 3)
                  if b % a == 0 and c % b == 0 and b // a >= 2 and c // b >= 2 and n > c]
    # ranked on the sample, the first that holds on every entry wins
    shares = {}
    for dims in cands:
        if math.prod(dims) > n and _neighbour_pairs(dims, n) >= 1:
            # a partly filled grid on which every rank neighbours every other explains any
            # traffic: a 4-rank ring with an allreduce (0-2, 1-3) was "a 2 x 3 process grid"
            continue
        sh = _near_share(rs, cs, ws, dims)
        if sh is not None and sh / ws.sum() >= NEAR_SHARE - SAMPLE_SLACK:
            shares[tuple(int(d) for d in dims)] = sh / ws.sum()
    if not shares:
        return None
    # the grids within SHARE_TIE of the best share are equals: the fewest dimensions first,
    # then a grid the ranks fill exactly (a 2 x 4 torus also fits a 3 x 3 grid of 8 ranks,
    # through its diagonals). NPB BT's 8 x 8 grid lost to a 2 x 7 x 8 one of 112 cells by
    # 2*10^-9 of the bytes (a few 36-byte messages)
    top = max(shares.values())
    ranked = sorted(shares, reverse=True, key=lambda d: (shares[d] >= top - SHARE_TIE,
                                                         (-len(d), math.prod(d) == n) if shares[d] >= top - SHARE_TIE
                                                         else (), shares[d], -len(d), math.prod(d) == n))
    U = sp.triu(W, k=1, format="coo")
    r, c, w = U.row.astype(np.int64), U.col.astype(np.int64), U.data.astype(np.float64)
    for dims in ranked:
        sh = _near_share(r, c, w, dims)
        if sh is not None and sh >= NEAR_SHARE * w.sum() \
                and w.sum() - sh <= OFF_GRID_VS_EVEN * (1 - _neighbour_pairs(dims, n)) * w.sum():
            return dims if len(dims) > 1 else None      # a ring or chain: no grid to cut into bricks
    return None


def _neighbour_pairs(dims, n: int) -> float:
    """About the share of the pairs of n ranks that are neighbours on the grid dims
    (every coordinate within 1, periodic: 2 positions on a side of 2, 3 on longer ones)."""
    return min(1.0, (math.prod(min(D, 3) for D in dims) - 1) / max(1, n - 1))


def _near_share(r, c, w, dims) -> float | None:
    """Bytes between grid neighbours; None when some dimension carries almost nothing."""
    a, b = np.unravel_index(r, dims), np.unravel_index(c, dims)
    near = np.ones(len(r), dtype=bool)
    moves = []
    for d, D in enumerate(dims):
        diff = np.abs(a[d] - b[d])
        diff = np.minimum(diff, D - diff)
        near &= diff <= 1
        moves.append(diff > 0)
    tot = w[near].sum()
    if any(w[near & m].sum() < DIM_SHARE * w.sum() for m in moves):
        return None
    return float(tot)


def _arrangements(shape: tuple, k: int) -> list:
    """Grids g of k bricks tiling a box of this shape (g_i divides shape_i)."""
    divs = [[d for d in range(1, s + 1) if s % d == 0] for s in shape]
    return [g for g in itertools.product(*divs) if math.prod(g) == k]


def _boundary(shape: tuple, count: int, per_dim: tuple | None = None) -> float:
    """Faces of `count` bricks of this shape (the grid edges they cut, up to the outer ones),
    each dimension's faces weighted by the bytes one grid edge along it carries (per_dim)."""
    vol = math.prod(shape)
    per_dim = per_dim or (1.0,) * len(shape)
    return count * sum(wd * vol / s for s, wd in zip(shape, per_dim))


def _dim_bytes(W: sp.spmatrix, dims: tuple) -> tuple:
    """Mean bytes of a grid edge along each dimension (an entry moving along several, a
    diagonal, counts for each): the codes' halos differ per direction (uneven subdomains)."""
    U = sp.triu(W, k=1, format="coo")
    a, b = np.unravel_index(U.row.astype(np.int64), dims), np.unravel_index(U.col.astype(np.int64), dims)
    out = []
    for d, D in enumerate(dims):
        diff = np.abs(a[d] - b[d])
        m = np.minimum(diff, D - diff) == 1
        out.append(float(U.data[m].sum()) / max(1, int(m.sum())))
    top = max(out) or 1.0
    return tuple(x / top for x in out)


def _levels(root: TreeNode, machine: Machine) -> list | None:
    """The number of children at each depth along the tree, while every node of a depth has
    that many children of one capacity (else None: bricks need equal parts)."""
    ks, level = [], [root]
    while not all(settled(t, machine) for t in level):
        if any(settled(t, machine) for t in level):
            return None
        k = len(level[0].children)
        caps = {c.capacity for t in level for c in t.children}
        if any(len(t.children) != k for t in level) or len(caps) != 1:
            return None
        ks.append(k)
        level = [c for t in level for c in t.children]
    return ks


def _plans(dims: tuple, ks: list, per_dim: tuple | None = None) -> list:
    """Up to BEAM sequences of arrangements (one per depth), the least total boundary first
    (faces weighted by per_dim, _dim_bytes)."""
    beam = [(0.0, (), tuple(dims), 1)]       # (boundary so far, plan, brick shape, bricks)
    for k in ks:
        nxt = []
        for bnd, plan, shape, count in beam:
            for g in _arrangements(shape, k):
                child = tuple(s // x for s, x in zip(shape, g))
                nxt.append((bnd + _boundary(child, count * k, per_dim), plan + (g,), child, count * k))
        nxt.sort(key=lambda t: (t[0], t[1]))
        beam = nxt[:BEAM]
    return [p for _, p, _, _ in beam]


def _mapping(root: TreeNode, dims: tuple, plan: tuple, n: int) -> np.ndarray:
    """slot_of_rank of one plan: each subtree takes a brick of its parent's brick (children
    in row-major order over the arrangement), the leaves' slots their brick's ranks in order."""
    slot = np.full(n, -1, dtype=np.int64)
    grid = np.arange(n).reshape(dims)
    stack = [(root, (0,) * len(dims), tuple(dims), 0)]
    while stack:
        node, lo, shape, depth = stack.pop()
        if depth == len(plan):
            box = grid[tuple(slice(a, a + s) for a, s in zip(lo, shape))].ravel()
            slot[box] = node.slots[: len(box)]
            continue
        g = plan[depth]
        child = tuple(s // x for s, x in zip(shape, g))
        for j, kid in enumerate(node.children):
            idx = np.unravel_index(j, g)
            stack.append((kid, tuple(a + i * s for a, i, s in zip(lo, idx, child)), child, depth + 1))
    return slot


def _filled(root: TreeNode, n: int) -> TreeNode | None:
    """The subtree the packed fill gives n ranks (partition.live_children: the first
    children that hold them), when they fill it exactly; else None."""
    node = root
    while node.capacity > n and node.children:
        live = live_children(n, [c.capacity for c in node.children], "packed")
        kids = [node.children[i] for i in live]
        if len(kids) == 1:
            node = kids[0]
        elif sum(k.capacity for k in kids) == n:
            node = TreeNode(np.concatenate([k.slots for k in kids]), kids, node.label)
        else:
            return None
    return node if node.capacity == n else None


def rcb(dims: tuple, n: int, machine: Machine, root: TreeNode) -> np.ndarray:
    """slot_of_rank by recursive coordinate bisection of the grid down the machine tree: at
    each subtree the live children (the packed fill's, partition.live_children) take shares
    of the ranks in proportion to their capacities, the children are halved in order and the
    ranks cut across the longest side of their bounding box (a staircase where the share
    is not a whole slab); interchangeable slots take their ranks in row-major order. n:
    the ranks, the first n points of the grid in row-major order."""
    coords = np.array(np.unravel_index(np.arange(n), dims)).T
    slot = np.full(n, -1, dtype=np.int64)
    stack = [(root, np.arange(n))]
    while stack:
        node, pts = stack.pop()
        if settled(node, machine):
            slot[np.sort(pts)] = node.slots[: len(pts)]
            continue
        caps = [c.capacity for c in node.children]
        live = live_children(len(pts), caps, "packed")
        tl = [caps[i] for i in live]
        sizes = np.array(tl) if sum(tl) == len(pts) else np.bincount(in_order(len(pts), tl), minlength=len(live))
        groups = [([node.children[i] for i in live], sizes, pts)]
        while groups:
            kids, sizes, p = groups.pop()
            if len(kids) == 1:
                stack.append((kids[0], p))
                continue
            h = len(kids) // 2
            c = coords[p]
            ax = int(np.argmax(c.max(axis=0) - c.min(axis=0)))
            # across axis ax, ties in row-major order of the other coordinates: the rank
            # itself orders them (row-major), so one integer key and a partition, not a sort
            cut = int(sizes[:h].sum())
            if 0 < cut < len(p):
                p = p[np.argpartition(c[:, ax] * n + p, cut - 1)]
            groups += [(kids[:h], sizes[:h], p[:cut]), (kids[h:], sizes[h:], p[cut:])]
    return slot


def grid_starts(W: sp.spmatrix, machine: Machine, root: TreeNode, cost, count: int = 1) -> tuple:
    """(dims, starts) for a traffic that is a process grid ((None, []) where it is not one):
    the `count` cheapest (by `cost`, a function of slot_of_rank) nested-brick mappings where
    the ranks fill whole, equal parts of the tree (the packed fill's), else the grid's
    recursive coordinate bisection."""
    n = W.shape[0]
    dims = detect(W) if n <= MAX_RANKS else None
    if dims is None:
        return None, []
    top = _filled(root, n) if math.prod(dims) == n else None
    ks = None if top is None else _levels(top, machine)
    maps = [] if ks is None else [_mapping(top, dims, plan, n) for plan in _plans(dims, ks, _dim_bytes(W, dims))]
    maps = sorted((m for m in maps if (m >= 0).all()), key=cost)[:count]
    # the torus's own bricks are one more start, not a rival before the search: the local
    # search took the tree's bricks of a 2-D grid on Angara-K1 lower (0.360 of block) than
    # the torus's (0.384), which were cheaper before it
    return dims, (maps or [rcb(dims, n, machine, root)]) + sorted(torus_bricks(dims, n, machine), key=cost)[:count]


TORUS_ASSIGNMENTS_MAX = 4096     # ways to give the torus's dimensions to the grid's, at most


def torus_bricks(dims: tuple, n: int, machine: Machine) -> list:
    """Where the machine is a fully populated torus (or mesh) of equal nodes that the grid
    fills and the torus's node grid divides the process grid (each grid dimension over one
    or more torus dimensions, walked as a snake so that consecutive blocks are neighbours),
    one mapping per such division: each node a brick, the ranks inside it in row-major
    order. The machine tree's nested bricks cannot see the torus: a 12 x 6 x 6 grid on
    Angara-K1's 3 x 3 x 4 torus of 12-core nodes got 1.5 x block's busiest link from them,
    where 3 x 2 x 2 bricks laid along the torus give 0.5 x and 0.61 x its hop-bytes."""
    from rankmap.mapper.network import Torus
    net = machine.network
    if not isinstance(net, Torus) or machine.nnodes != net.positions or n != machine.nslots or math.prod(dims) != n:
        return []
    per = np.bincount(machine.slot_node, minlength=machine.nnodes)
    c = int(per[0])
    T, k, d = tuple(int(x) for x in net.dims), len(dims), len(net.dims)
    if (per != c).any() or k ** d > TORUS_ASSIGNMENTS_MAX:
        return []
    node_at = np.full(T, -1, dtype=np.int64)
    node_at[tuple(np.asarray(net.coords, dtype=np.int64).T)] = np.arange(machine.nnodes)
    by_node = np.argsort(machine.slot_node, kind="stable")      # node v's slots: by_node[v*c:(v+1)*c]
    a = np.unravel_index(np.arange(n), dims)
    out, seen = [], set()
    for assign in itertools.product(range(k), repeat=d):        # torus dimension t -> grid dimension
        groups = [[t for t in range(d) if assign[t] == g] for g in range(k)]
        blocks = [math.prod(T[t] for t in grp) for grp in groups]
        if any(dims[g] % blocks[g] for g in range(k)):
            continue
        b = [dims[g] // blocks[g] for g in range(k)]
        if math.prod(b) != c:
            continue
        tc = np.zeros((n, d), dtype=np.int64)
        for g in range(k):
            if groups[g]:
                tc[:, groups[g]] = _snake(a[g] // b[g], [T[t] for t in groups[g]])
        node = node_at[tuple(tc.T)]
        inside = np.ravel_multi_index([a[g] % b[g] for g in range(k)], b)
        slot = by_node[node * c + inside]
        key = slot.tobytes()
        if key not in seen:
            seen.add(key)
            out.append(slot)
    return out


def _snake(q: np.ndarray, sizes: list) -> np.ndarray:
    """Coordinates (len(q), len(sizes)) of positions q along a boustrophedon walk of a grid
    of `sizes` (the first slowest): consecutive positions are neighbours."""
    out = np.zeros((len(q), len(sizes)), dtype=np.int64)
    q = q.astype(np.int64)
    for i, s in enumerate(sizes):
        inner = math.prod(sizes[i + 1:])
        x = (q // inner) % s
        out[:, i] = np.where((q // (inner * s)) % 2 == 1, s - 1 - x, x)   # odd prefix: walked back
    return out
