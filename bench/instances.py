"""Instances for the anchor benchmark: traffic families x machine shapes x sizes x seeds,
generated on the fly (numpy/scipy, deterministic per seed), split into a tuning set and a
held-out set.

Traffic families (W symmetric, bytes both directions, zero diagonal; P = the machine's slots):

  stencil7   3-D 7-point halo on a process grid that is a non-cubic factorisation of P (aspect
             up to 16:1, picked by the seed) over a global grid whose extents do not divide
             evenly (subdomains differ by a cell, face sizes vary), periodic in some dimensions;
             ranks numbered in one of several orders: x fastest, z fastest, random, 2x2x2 bricks,
             Morton (picked by the seed).
  stencil27  the same decomposition with faces, edges and corners (26 neighbours).
  mesh       halos of an unstructured mesh: random points (clustered, non-uniform density) in
             2-D or 3-D, k-nearest-neighbour mesh, partitioned into P parts (METIS k-way up to
             4096 parts, recursive coordinate bisection beyond: METIS takes minutes there), bytes = cut mesh edges x 8 x 5.
  amr        octree AMR: a base grid of blocks refined up to 3 levels around random spheres
             (2:1 balanced), every leaf block 16^3 cells; leaves in Morton order split into P
             ranks of nearly equal block counts (refined regions: more, smaller ranks); bytes =
             shared face area in cells x 8 x 5, coarse-fine faces by the fine face.
  a2a        all-to-all inside sub-communicators of s ranks (s = 8..32; rows of a 2-D process
             grid, numbered row- or column-major) plus a 2-D halo; the all-to-all is the heavy part.
  mix        held out only: stencil7 + light all-to-all in sub-communicators + a binomial
             reduction tree + 3 random far partners per rank (a coarse-grid solve).
  apps64     the six real 64-rank matrices of ../shared/data/matrices (4 x 2 x 8 tree).
  apps       the real 512-4,096-rank graphs of bench/data/apps (when present; index.json).
  fresh      held out only, run only when named (--families fresh; with the 1k sizes): 48
             fixed instances of 512-2,048 ranks, each with its own machine
             (bench/fresh_instances.py), whose traffic and machine shapes no other family generates.
  fresh2     held out only, run only when named (--families fresh2; with the 1k sizes): 42
             fixed instances of 512-2,048 ranks built apart from fresh (bench/fresh2_instances.py):
             other traffic (cubed sphere, multigrid, coupler, BFS, Delaunay domains, pipelines,
             ties, idle ranks, prime counts) and machines (other level costs, GPU nodes, uneven
             switch paths, odd tori, mixed nodes without switches).
  fresh3     held out only, run only when named (--families fresh3; with the 1k sizes): 36
             fixed instances of 512-4,096 ranks built apart from fresh and fresh2
             (bench/fresh3_instances.py): other traffic (MD with PME ranks, 4-D lattice QCD,
             uneven FFT sub-communicators, nested dissection, ocean land masks, PIC hot spots,
             ensembles, workflows, space-filling-curve orders, dense noise, a tree code) and
             machines (2 x 64, 4 x 24, 1000/900/10, GPU nodes of 8, a 4-level switch tree, a
             fat tree, other dragonflies, tori with nodes missing, mixed nodes in one switch).

Machine shapes (nodes chosen so that the slots are about the size asked; P = slots):

  tune:     tree3    nodes of 2 x 16 cores, costs 1000/100/10 (the issue's tree)
            tree2    nodes of 1 x 20 cores, costs 100/10/1
            switch4  leaf switches of 16 nodes of 2 x 8 cores, costs 3000/1000/100/10
            hetero   2/3 of the nodes 2 x 12 cores, 1/3 of them 1 x 16 cores, 1000/100/10
            torus    3-D torus of nodes of 2 x 8 cores, costs 1000/100/10 (hop 1000)
  holdout:  tree4s   nodes of 4 x 6 cores, costs 500/60/4
            numa     nodes of 2 packages x 2 NUMA x 8 cores, costs 1000/100/30/10
            mesh2    2-D mesh (no wrap) of nodes of 1 x 12 cores, costs 800/50/5, hop 400
            hetero3  switch tree (leaf switches of 8 nodes): 2 x 16, 2 x 8 and 1 x 12 cores

The split (`--set`): `tune` = seeds 0 and 1 on the tune shapes, families stencil7, stencil27,
mesh, amr, a2a, and apps64 in its original numbering; `holdout` = seeds 1000 and 1001 on every
shape (tune and holdout shapes), the family `mix`, and apps64 renumbered at random on a
holdout machine. Real apps (bench/data/apps): about half of the graphs, chosen by a hash of
their name (`app_is_tune`), are tune (on tree3, as recorded); all of them are holdout on tree4s
and hetero3 with a random renumbering.
The lead tunes only on `tune`; nothing of `holdout` is seen while tuning.
"""
from __future__ import annotations

import hashlib
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
APPS = Path(__file__).resolve().parent / "data" / "apps"

from rankmap.mapper import machine as _machine  # noqa: E402

FAMILIES = ("stencil7", "stencil27", "mesh", "amr", "a2a", "mix", "social", "apps64", "apps", "networks", "patterns",
            "fresh", "fresh2", "fresh3")
SYNTHETIC = ("stencil7", "stencil27", "mesh", "amr", "a2a", "mix", "social")
HOLDOUT_ONLY_FAMILIES = ("mix", "networks", "fresh", "fresh2", "fresh3")
# run only when named, so that the runs documented before it came keep their instances
NAMED_ONLY_FAMILIES = ("fresh", "fresh2", "fresh3")
DEFAULT_FAMILIES = tuple(f for f in FAMILIES if f not in NAMED_ONLY_FAMILIES)
# real graphs of skewed degrees (collaboration and trust networks, bench/data/graphs) as the
# traffic of one rank per vertex: held out from the rule for skewed degrees, which was set on
# the social family (the standard benchmark maps them as units of work, a different path)
NETWORKS = ("PGPgiantcompo.graph.gz", "hep-th.graph.gz", "astro-ph.graph.gz")
GRAPHS = Path(__file__).resolve().parent / "data" / "graphs"
# collective and transpose patterns, each on four machine shapes (tune: the root split's
# Mt-KaHyPar, backends.ROOT_MTKAHYPAR_MAX_WORK, and the 4-D process grids were set on them)
PATTERN_SHAPES = ("tree3", "tree4s", "torus", "hetero3")
PATTERN_HOLDOUT_SHAPES = ("numa", "mesh2", "tree2", "switch4")      # never run while tuning them
SIZES = {"1k": 1000, "10k": 10000, "100k": 100000}
TUNE_SHAPES = ("tree3", "tree2", "switch4", "hetero", "torus")
HOLDOUT_SHAPES = ("tree4s", "numa", "mesh2", "hetero3")
SHAPES = TUNE_SHAPES + HOLDOUT_SHAPES
TUNE_SEEDS = (0, 1)
HOLDOUT_SEEDS = (1000, 1001)
BYTES_PER_CELL = 8 * 5            # 5 doubles per halo cell
METIS_MAX_PARTS = 4096            # mesh family: METIS k-way up to this many parts, RCB beyond


def _rng(*key) -> np.random.Generator:
    h = hashlib.sha256(repr(key).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _sym(rows, cols, vals, n) -> sp.csr_matrix:
    r = np.concatenate(rows)
    c = np.concatenate(cols)
    v = np.concatenate(vals).astype(np.float64)
    M = sp.csr_matrix((v, (r, c)), shape=(n, n))
    W = (M + M.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


# ----------------------------------------------------------------------------- machines

def _hosts(n: int) -> list:
    return [f"n{i:05d}" for i in range(n)]


def _near_cubic(n: int, k: int) -> list:
    """k integers, product n, as equal as possible (n's factors)."""
    fs = []
    m, f = n, 2
    while m > 1:
        while m % f == 0:
            fs.append(f)
            m //= f
        f += 1
    dims = [1] * k
    for x in sorted(fs, reverse=True):
        dims[dims.index(min(dims))] *= x
    return sorted(dims, reverse=True)


def _torus_nodes(target_nodes: int, k: int) -> list:
    """Dimensions of a k-D torus near target_nodes whose shape is close to cubic."""
    best = None
    for n in range(max(2 ** k, int(target_nodes * 0.9)), int(target_nodes * 1.1) + 2):
        d = _near_cubic(n, k)
        score = (max(d) / max(1, min(d)), abs(n - target_nodes))
        if best is None or score < best[0]:
            best = (score, d)
    return best[1]


def build_machine(shape: str, size: int):
    """(machine, description) with about `size` slots."""
    M = _machine
    if shape == "tree3":
        nodes = max(2, round(size / 32))
        return M.build(_hosts(nodes), ["pack:2 core:16"], level_costs="1000,100,10"), f"{nodes} x (2 x 16), 1000/100/10"
    if shape == "tree2":
        nodes = max(2, round(size / 20))
        return M.build(_hosts(nodes), ["pack:1 core:20"], level_costs="100,10,1"), f"{nodes} x (1 x 20), 100/10/1"
    if shape == "switch4":
        sw = max(2, round(size / 16 / 16))
        return (M.build(_hosts(sw * 16), ["pack:2 core:8"], switches=f"{sw}x16", level_costs="3000,1000,100,10"),
                f"{sw} switches x 16 x (2 x 8), 3000/1000/100/10")
    if shape == "hetero":
        unit = 2 * 24 + 16                         # two big nodes and one small node
        groups = max(1, round(size / unit))
        big, small = 2 * groups, groups
        hosts = _hosts(big + small)
        kinds = {h: ("pack:2 core:12" if i % 3 != 2 else "pack:1 core:16") for i, h in enumerate(hosts)}
        specs = _specs(kinds)
        return M.build(hosts, specs, level_costs="1000,100,10"), f"{big} x (2 x 12) + {small} x (1 x 16), 1000/100/10"
    if shape == "torus":
        dims = _torus_nodes(size / 16, 3)
        nodes = int(np.prod(dims))
        return (M.build(_hosts(nodes), ["pack:2 core:8"], torus="x".join(map(str, dims)), level_costs="1000,100,10"),
                f"torus {'x'.join(map(str, dims))} x (2 x 8), 1000/100/10")
    if shape == "tree4s":
        nodes = max(2, round(size / 24))
        return M.build(_hosts(nodes), ["pack:4 core:6"], level_costs="500,60,4"), f"{nodes} x (4 x 6), 500/60/4"
    if shape == "numa":
        nodes = max(2, round(size / 32))
        return (M.build(_hosts(nodes), ["pack:2 numa:2 core:8"], level_costs="1000,100,30,10"),
                f"{nodes} x (2 x 2 NUMA x 8), 1000/100/30/10")
    if shape == "mesh2":
        dims = _torus_nodes(size / 12, 2)
        nodes = int(np.prod(dims))
        return (M.build(_hosts(nodes), ["pack:1 core:12"], mesh="x".join(map(str, dims)), level_costs="800,50,5",
                        hop_cost="400"), f"mesh {'x'.join(map(str, dims))} x (1 x 12), 800/50/5, hop 400")
    if shape == "hetero3":
        nodes = max(8, int(round(size / 20 / 8)) * 8)     # 20 cores per node on average
        hosts = _hosts(nodes)
        kinds = {h: ("pack:2 core:16", "pack:2 core:8", "pack:1 core:12")[i % 3] for i, h in enumerate(hosts)}
        return (M.build(hosts, _specs(kinds), switches=f"{nodes // 8}x8", level_costs="2000,1000,100,10"),
                f"{nodes // 8} switches x 8 nodes of (2 x 16 | 2 x 8 | 1 x 12), 2000/1000/100/10")
    raise ValueError(f"unknown machine shape {shape!r}; choose from {', '.join(SHAPES)}")


def _specs(kinds: dict) -> list:
    by = {}
    for h, k in kinds.items():
        by.setdefault(k, []).append(h)
    return [f"{','.join(hs)}={k}" for k, hs in by.items()]


# ----------------------------------------------------------------------------- stencils

def _factor3(P: int, rng) -> list:
    """A non-cubic factorisation of P into 3 dims (aspect <= 16), picked by rng."""
    cands = []
    for a in range(1, int(round(P ** (1 / 3) * 4)) + 1):
        if P % a:
            continue
        for b in range(1, int(math.isqrt(P // a)) + 1):
            if (P // a) % b:
                continue
            c = P // a // b
            d = sorted([a, b, c], reverse=True)
            if d[-1] >= 1 and d[0] / d[-1] <= 16:
                cands.append(tuple(d))
    cands = sorted(set(cands))
    if not cands:
        return _near_cubic(P, 3)
    d = list(cands[int(rng.integers(len(cands)))])
    rng.shuffle(d)
    return d


def _sizes(total: int, parts: int, rng) -> np.ndarray:
    """Uneven split of `total` cells into `parts` (floor/ceil, remainder scattered)."""
    base = np.full(parts, total // parts)
    base[rng.choice(parts, total % parts, replace=False)] += 1
    return base


def grid_positions(X: int, Y: int, Z: int) -> tuple:
    """(position index, x, y, z) of every position of an X x Y x Z grid, x fastest."""
    idx = np.arange(X * Y * Z)
    return idx, idx % X, (idx // X) % Y, idx // (X * Y)


def _order(dims, how: str, rng) -> np.ndarray:
    """rank of each grid position (positions enumerated x fastest)."""
    X, Y, Z = dims
    P = X * Y * Z
    idx, x, y, z = grid_positions(X, Y, Z)
    if how == "xfast":
        key = idx
    elif how == "zfast":
        key = (x * Y + y) * Z + z
    elif how == "random":
        key = rng.permutation(P)
    elif how == "bricks":          # 2x2x2 bricks, bricks x fastest
        bx, by, bz = x // 2, y // 2, z // 2
        nbx, nby = -(-X // 2), -(-Y // 2)
        key = ((bz * nby + by) * nbx + bx) * 8 + (z % 2) * 4 + (y % 2) * 2 + (x % 2)
    elif how == "morton":
        key = np.zeros(P, dtype=np.int64)
        for b in range(11):
            key |= (((x >> b) & 1) << (3 * b)) | (((y >> b) & 1) << (3 * b + 1)) | (((z >> b) & 1) << (3 * b + 2))
    else:
        raise ValueError(how)
    rank = np.empty(P, dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(P)
    return rank


ORDERS = ("xfast", "zfast", "random", "bricks", "morton")


def stencil(P: int, seed: int, points: int = 7) -> tuple:
    rng = _rng("stencil", P, seed)
    X, Y, Z = _factor3(P, rng)
    cells = int(rng.integers(40, 120))
    ext = [d * cells + int(rng.integers(0, d)) for d in (X, Y, Z)]
    sx, sy, sz = (_sizes(e, d, rng) for e, d in zip(ext, (X, Y, Z)))
    periodic = rng.random(3) < 0.34
    how = ORDERS[seed % len(ORDERS)] if seed < 1000 else ORDERS[int(rng.integers(len(ORDERS)))]
    rank = _order((X, Y, Z), how, rng)
    idx, x, y, z = grid_positions(X, Y, Z)
    rows, cols, vals = [], [], []
    offs = [(dx, dy, dz) for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)
            if (dx, dy, dz) > (0, 0, 0)]
    if points == 7:
        offs = [o for o in offs if sum(map(abs, o)) == 1]
    for dx, dy, dz in offs:
        nx, ny, nz = x + dx, y + dy, z + dz
        ok = np.ones(P, bool)
        for c, D, per in ((nx, X, periodic[0]), (ny, Y, periodic[1]), (nz, Z, periodic[2])):
            if per and D > 2:
                c %= D
            else:
                ok &= (c >= 0) & (c < D)
        nx, ny, nz = nx % X, ny % Y, nz % Z
        j = nx + X * (ny + Y * nz)
        ok &= j != idx
        # exchanged cells: the shared face / edge / corner of the two subdomains
        w = np.ones(P)
        for d, (sd, cc) in zip((dx, dy, dz), ((sx, x), (sy, y), (sz, z))):
            if d == 0:
                w = w * sd[cc]
        vals.append((w * BYTES_PER_CELL)[ok])
        rows.append(rank[idx[ok]])
        cols.append(rank[j[ok]])
    W = _sym(rows, cols, vals, P)
    per = "".join("xyz"[i] for i in range(3) if periodic[i]) or "none"
    return W, f"{points}-point, grid {X}x{Y}x{Z} over {ext[0]}x{ext[1]}x{ext[2]} cells, periodic {per}, order {how}"


# ----------------------------------------------------------------------------- unstructured mesh

def _rcb(X: np.ndarray, parts: int) -> np.ndarray:
    """Recursive coordinate bisection into `parts` parts (vectorised, level by level)."""
    n = len(X)
    seg = np.zeros(n, dtype=np.int64)           # current segment of each point
    seg_parts = np.array([parts])               # parts each segment must become
    seg_first = np.array([0])                   # first part id of each segment
    while seg_parts.max() > 1:
        lo = np.stack([np.full(len(seg_parts), np.inf)] * X.shape[1])
        hi = -lo
        for d in range(X.shape[1]):
            np.minimum.at(lo[d], seg, X[:, d])
            np.maximum.at(hi[d], seg, X[:, d])
        dim = np.argmax(hi - lo, axis=0)
        key = X[np.arange(n), dim[seg]]
        order = np.lexsort((key, seg))
        cnt = np.bincount(seg, minlength=len(seg_parts))
        start = np.concatenate([[0], np.cumsum(cnt)[:-1]])
        left_parts = seg_parts // 2
        cut = np.round(cnt * (left_parts / np.maximum(1, seg_parts))).astype(np.int64)
        pos = np.empty(n, dtype=np.int64)
        pos[order] = np.arange(n)
        within = pos - start[seg]
        right = within >= cut[seg]
        split = seg_parts > 1
        new_id = np.where(split[seg], 2 * seg + right, 2 * seg)
        # renumber segments compactly
        uniq, inv = np.unique(new_id, return_inverse=True)
        parts_new = np.where(uniq % 2 == 1, seg_parts[uniq // 2] - left_parts[uniq // 2],
                             np.where(split[uniq // 2], left_parts[uniq // 2], seg_parts[uniq // 2]))
        first_new = np.where(uniq % 2 == 1, seg_first[uniq // 2] + left_parts[uniq // 2], seg_first[uniq // 2])
        seg, seg_parts, seg_first = inv.ravel(), parts_new, first_new
    return seg_first[seg]


def mesh(P: int, seed: int) -> tuple:
    rng = _rng("mesh", P, seed)
    dim = 2 if rng.random() < 0.5 else 3
    per = 24 if P <= METIS_MAX_PARTS else 12
    N = P * per
    k = 6 if dim == 2 else 10
    # clustered density: half uniform, half around a few Gaussian blobs
    nb = int(rng.integers(3, 9))
    centers = rng.random((nb, dim))
    u = rng.random((N // 2, dim))
    g = centers[rng.integers(0, nb, N - N // 2)] + rng.normal(0, 0.06, (N - N // 2, dim))
    Xp = np.clip(np.concatenate([u, g]), 0, 1)
    from scipy.spatial import cKDTree
    tree = cKDTree(Xp)
    _, nbr = tree.query(Xp, k=k + 1)
    r = np.repeat(np.arange(N), k)
    c = nbr[:, 1:].ravel()
    A = sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(N, N))
    A = ((A + A.T) > 0).astype(np.float64).tocsr()
    if P <= METIS_MAX_PARTS:
        import pymetis
        A.sort_indices()
        try:
            adj = pymetis.CSRAdjacency(A.indptr, A.indices)
            _, part = pymetis.part_graph(P, adjacency=adj, options=pymetis.Options(seed=int(seed) % 1000))
        except (AttributeError, TypeError):   # older pymetis
            _, part = pymetis.part_graph(P, xadj=A.indptr, adjncy=A.indices)
        part = np.asarray(part, dtype=np.int64)
        how = "METIS"
    else:
        part = _rcb(Xp, P)
        how = "RCB"
    c = sp.triu(A, k=1).tocoo()
    pa, pb = part[c.row], part[c.col]
    cut = pa != pb
    W = _sym([pa[cut]], [pb[cut]], [np.full(int(cut.sum()), BYTES_PER_CELL / 2.0)], P)
    return W, f"{dim}-D kNN mesh ({N} points, k={k}, {nb} dense blobs), {how} into {P} parts"


# ----------------------------------------------------------------------------- AMR

def amr(P: int, seed: int) -> tuple:
    rng = _rng("amr", P, seed)
    B = 16                                        # cells per block edge
    target_leaves = 4 * P
    levels = 3
    nsph = int(rng.integers(2, 6))
    cen = rng.random((nsph, 3))
    rad = rng.uniform(0.05, 0.18, nsph)
    # base grid so that the refined leaves come near the target
    base = 2
    leaves = _amr_leaves(base, levels, cen, rad)
    while len(leaves) < target_leaves and base < 400:
        base = max(base + 1, int(base * (target_leaves / max(1, len(leaves))) ** (1 / 3)))
        leaves = _amr_leaves(base, levels, cen, rad)
    lvl, ix, iy, iz = leaves.T
    # Morton order at the finest level
    sh = levels - lvl
    fx, fy, fz = ix << sh, iy << sh, iz << sh
    key = np.zeros(len(lvl), dtype=np.int64)
    for b in range(21):
        key |= (((fx >> b) & 1) << (3 * b)) | (((fy >> b) & 1) << (3 * b + 1)) | (((fz >> b) & 1) << (3 * b + 2))
    order = np.argsort(key, kind="stable")
    L = len(lvl)
    owner = np.empty(L, dtype=np.int64)
    owner[order] = (np.arange(L) * P) // L
    # face neighbours: same level, one coarser, or the finer children on that face
    code = lambda l, a, b, c: ((l * (1 << 20) + a) * (1 << 20) + b) * (1 << 20) + c  # noqa: E731
    keys = code(lvl, ix, iy, iz)
    sk = np.sort(keys)
    pos_of = np.argsort(keys)

    def find(k):
        i = np.searchsorted(sk, k)
        i = np.minimum(i, len(sk) - 1)
        ok = sk[i] == k
        return ok, pos_of[i]
    rows, cols, vals = [], [], []
    face = float(B * B * BYTES_PER_CELL)
    nmax = base << lvl
    for d in range(3):
        for s in (1,):      # +direction (each pair once; the other side comes with the symmetric sum)
            c = [ix.copy(), iy.copy(), iz.copy()]
            c[d] = c[d] + s
            inside = c[d] < nmax
            ok, j = find(code(lvl, *c))
            m = ok & inside
            rows.append(np.flatnonzero(m)), cols.append(j[m]), vals.append(np.full(int(m.sum()), face))
            # coarser neighbour (only when the same-level one does not exist)
            cc = [x >> 1 for x in c]
            ok2, j2 = find(code(lvl - 1, *cc))
            m2 = ~ok & inside & ok2 & (lvl > 0)
            rows.append(np.flatnonzero(m2)), cols.append(j2[m2]), vals.append(np.full(int(m2.sum()), face / 4))
            # finer neighbours: the 4 children on the near face
            base_c = [x * 2 for x in c]
            for a in (0, 1):
                for b in (0, 1):
                    ch = [x.copy() for x in base_c]
                    others = [e for e in range(3) if e != d]
                    ch[others[0]] += a
                    ch[others[1]] += b
                    ok3, j3 = find(code(lvl + 1, *ch))
                    m3 = ~ok & inside & ok3
                    rows.append(np.flatnonzero(m3)), cols.append(j3[m3]), vals.append(np.full(int(m3.sum()), face / 4))
            # coarser on the minus side is reached from the coarse block's + side above? no:
            # a fine block on the - side of a coarse one is found from the coarse block's + side
            # via "finer neighbours"; a fine block on the + side of a coarse one via "coarser".
    r = np.concatenate(rows)
    c2 = np.concatenate(cols)
    v = np.concatenate(vals)
    ro, co = owner[r], owner[c2]
    keep = ro != co
    W = _sym([ro[keep]], [co[keep]], [v[keep] / 2.0], P)
    return W, (f"octree AMR, base {base}^3 blocks, {levels} levels around {nsph} spheres, {L} leaf blocks of "
               f"{B}^3 cells, Morton order into {P} ranks")


def _amr_leaves(base: int, levels: int, cen, rad) -> np.ndarray:
    """Leaves (level, ix, iy, iz): a block is refined if its centre is within the sphere radius
    grown by the block size (so that levels change by one at a time)."""
    g = np.arange(base)
    ix, iy, iz = np.meshgrid(g, g, g, indexing="ij")
    cur = np.stack([np.zeros(base ** 3, dtype=np.int64), ix.ravel(), iy.ravel(), iz.ravel()], axis=1)
    out = []
    for lv in range(levels + 1):
        size = 1.0 / (base << lv)
        ctr = (cur[:, 1:] + 0.5) * size
        dist = np.min(np.linalg.norm(ctr[:, None, :] - cen[None], axis=2) - rad[None] * (levels - lv + 1) / levels,
                      axis=1) if lv < levels else np.full(len(cur), np.inf)
        refine = dist < 2 * size
        out.append(cur[~refine])
        kids = cur[refine]
        if not len(kids):
            break
        ch = []
        for a in (0, 1):
            for b in (0, 1):
                for c in (0, 1):
                    ch.append(np.stack([kids[:, 0] + 1, kids[:, 1] * 2 + a, kids[:, 2] * 2 + b, kids[:, 3] * 2 + c], axis=1))
        cur = np.concatenate(ch)
    return np.concatenate(out)


# ----------------------------------------------------------------------------- all-to-all + halo

def a2a(P: int, seed: int, heavy: float = 1.0) -> tuple:
    rng = _rng("a2a", P, seed)
    sizes = [s for s in (8, 12, 16, 24, 32) if P % s == 0] or [d for d in range(2, 33) if P % d == 0] or [1]
    s = sizes[int(rng.integers(len(sizes)))]
    R = P // s                                  # grid s x R: rows of s ranks are the sub-communicators
    colmajor = bool(rng.integers(2))
    g = np.arange(P)
    a, b = g % s, g // s                        # position in row, row index
    rank = (a * R + b) if colmajor else g
    # all-to-all within each row
    ii, jj = np.triu_indices(s, 1)
    base = np.arange(R) * s
    ra = (base[:, None] + ii[None]).ravel()
    rb = (base[:, None] + jj[None]).ravel()
    msg = float(rng.choice([64e3, 256e3, 1e6])) * heavy
    rows_l, cols_l, vals_l = [rank[ra]], [rank[rb]], [np.full(len(ra), msg)]
    # 2-D halo on the s x R grid (row-neighbours and row-to-row)
    for da, db in ((1, 0), (0, 1)):
        na, nb_ = a + da, b + db
        ok = (na < s) & (nb_ < R)
        j = nb_ * s + na
        rows_l.append(rank[g[ok]]), cols_l.append(rank[j[ok]]), vals_l.append(np.full(int(ok.sum()), msg / 4))
    W = _sym(rows_l, cols_l, vals_l, P)
    return W, f"all-to-all in {R} sub-communicators of {s} ranks ({msg:.3g} B per pair), 2-D halo, " \
              f"{'column' if colmajor else 'row'}-major ranks"


def mix(P: int, seed: int) -> tuple:
    rng = _rng("mix", P, seed)
    W1, d1 = stencil(P, seed, 7)
    W2, d2 = a2a(P, seed + 7, heavy=0.05)
    # binomial reduction tree over the ranks
    r = np.arange(1, P)
    parent = r & (r - 1)
    W3 = _sym([r], [parent], [np.full(P - 1, 8e3)], P)
    far = rng.integers(0, P, size=(P, 3))
    src = np.repeat(np.arange(P), 3)
    dst = far.ravel()
    ok = src != dst
    W4 = _sym([src[ok]], [dst[ok]], [rng.uniform(1e3, 2e4, int(ok.sum()))], P)
    W = (W1 + W2 + W3 + W4).tocsr()
    W.sort_indices()
    return W, f"stencil ({d1}) + light sub-communicator all-to-all + binomial tree + 3 random far partners"


# ----------------------------------------------------------------------------- skewed degrees

def social(P: int, seed: int) -> tuple:
    """Graph analytics on a scale-free graph (a rank per vertex block, as a distributed BFS or
    PageRank exchanges): power-law degrees (Pareto 2, trimmed coefficient of variation above
    1 like the collaboration networks of bench/data/graphs), communities of 20-400 ranks that
    keep 80 % of a rank's partners, partners chosen in proportion to their degree (Chung-Lu),
    lognormal bytes; ranks numbered at random."""
    rng = _rng("social", P, seed)
    deg = np.minimum(np.floor(3 * (1 - rng.random(P)) ** (-1 / 1.0)), P // 4).astype(np.int64)
    sizes = []
    while sum(sizes) < P:
        sizes.append(int(rng.integers(20, 401)))
    comm = np.repeat(np.arange(len(sizes)), sizes)[:P]
    src = np.repeat(np.arange(P), deg)
    inside = rng.random(len(src)) < 0.8
    dst = np.empty(len(src), dtype=np.int64)
    # outside partners: anyone, in proportion to degree
    p_all = deg / deg.sum()
    dst[~inside] = rng.choice(P, size=int((~inside).sum()), p=p_all)
    # inside partners: in the source's community, in proportion to degree (cumulative sums per community)
    order = np.argsort(comm, kind="stable")
    cum = np.cumsum(deg[order].astype(float))
    start = np.searchsorted(comm[order], np.arange(len(sizes)))
    end = np.append(start[1:], P)
    c = comm[src[inside]]
    lo = np.where(start[c] > 0, cum[start[c] - 1], 0.0)
    hi = cum[end[c] - 1]
    u = lo + rng.random(len(c)) * (hi - lo)
    dst[inside] = order[np.minimum(np.searchsorted(cum, u, side="right"), end[c] - 1)]
    ok = src != dst
    vals = rng.lognormal(np.log(64e3), 1.0, int(ok.sum()))
    perm = rng.permutation(P)
    W = _sym([perm[src[ok]]], [perm[dst[ok]]], [vals], P)
    return W, f"scale-free graph traffic: Pareto degrees (mean {deg.mean():.1f}, max {deg.max()}), " \
              f"{len(sizes)} communities, 80 % of partners inside, ranks at random"


# ----------------------------------------------------------------------------- patterns

def _pairs_of(groups: np.ndarray) -> tuple:
    """Every pair of ranks with the same group id (all-to-all inside each group)."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    r, c = [], []
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    ends = np.r_[starts[1:], len(g)]
    for a, b in zip(starts, ends):
        m = order[a:b]
        i, j = np.triu_indices(len(m), 1)
        r.append(m[i])
        c.append(m[j])
    return np.concatenate(r), np.concatenate(c)


def _hypercube(P: int, decay: float) -> sp.csr_matrix:
    i = np.arange(P)
    rows, cols, vals = [], [], []
    for k in range(int(np.log2(P))):
        j = i ^ (1 << k)
        m = i < j
        rows.append(i[m]); cols.append(j[m]); vals.append(np.full(int(m.sum()), 1e6 * decay ** k))
    return _sym(rows, cols, vals, P)


def _torus_grid(dims: tuple, weights: tuple) -> sp.csr_matrix:
    P = int(np.prod(dims))
    idx = np.arange(P).reshape(dims)
    rows, cols, vals = [], [], []
    for d, w in enumerate(weights):
        rows.append(idx.ravel()); cols.append(np.roll(idx, -1, axis=d).ravel()); vals.append(np.full(P, w))
    return _sym(rows, cols, vals, P)


def _renumber(W: sp.csr_matrix, seed: int) -> sp.csr_matrix:
    p = np.random.default_rng(seed).permutation(W.shape[0])
    W = W[p][:, p].tocsr()
    W.sort_indices()
    return W


def pattern(name: str) -> tuple:
    """(W, note) of one pattern of the `patterns` family (about 1,000 ranks, fixed)."""
    if name == "hypercube":
        return _hypercube(1024, 1.0), "recursive doubling: 10 partners i xor 2^k, equal bytes, 1,024 ranks"
    if name == "halving":
        return _hypercube(1024, 0.5), "recursive halving: partners i xor 2^k, bytes halving with k, 1,024 ranks"
    if name == "pencil":
        i = np.arange(1024)
        r1, c1 = _pairs_of(i // 32)
        r2, c2 = _pairs_of(i % 32)
        return _sym([r1, r2], [c1, c2], [np.full(len(r1), 4e6), np.full(len(r2), 1e6)], 1024), \
            "2-D pencil FFT: all-to-all in the rows (4 MB) and the columns (1 MB) of a 32 x 32 grid"
    if name == "lattice4":
        return _torus_grid((6, 6, 6, 6), (1e6, 1.3e6, 1.6e6, 1.9e6)), \
            "4-D periodic lattice 6^4 (lattice QCD), halos 1-1.9 MB by direction"
    if name == "stencil9":
        X, Y = 40, 25
        x, y = np.divmod(np.arange(X * Y), Y)
        rows, cols, vals = [], [], []
        for dx, dy, w in ((1, 0, 4e5), (0, 1, 6e5), (1, 1, 2e4), (1, -1, 2e4)):
            ok = (x + dx < X) & (y + dy >= 0) & (y + dy < Y)
            rows.append((x * Y + y)[ok]); cols.append(((x + dx) * Y + y + dy)[ok]); vals.append(np.full(int(ok.sum()), w))
        return _sym(rows, cols, vals, X * Y), "2-D 9-point stencil on a 40 x 25 grid, uneven faces"
    if name == "master":
        rng = _rng("pattern-master", 1000)
        i = np.arange(1, 1000)
        return _sym([np.zeros(999, int), i - 1], [i, i], [rng.uniform(1e4, 5e4, 999), rng.uniform(5e5, 1e6, 999)], 1000), \
            "master-worker (rank 0 to all, light) + a pipeline chain (heavy, uneven)"
    if name == "binomial":
        i = np.arange(1, 1024)
        j = np.arange(1024)
        return _sym([i, j], [i & (i - 1), (j + 1) % 1024], [np.full(1023, 1e6), np.full(1024, 2e5)], 1024), \
            "binomial tree (1 MB) + ring (0.2 MB), 1,024 ranks"
    if name == "periodic3":
        return _torus_grid((10, 10, 10), (1e6, 1.5e6, 2e6)), "3-D periodic 7-point stencil 10^3, halos 1-2 MB by direction"
    if name == "st+ar":
        W = _torus_grid((16, 8, 8), (1e6, 1.5e6, 2e6)) + 0.02 * _hypercube(1024, 1.0)
        return W.tocsr(), "3-D periodic stencil 16 x 8 x 8 + recursive-doubling allreduce (2 % of the stencil's bytes)"
    if name == "periodic3-perm":
        W, _ = pattern("periodic3")
        return _renumber(W, 5), "3-D periodic 7-point stencil 10^3, ranks renumbered at random"
    raise ValueError(name)


PATTERNS = ("hypercube", "halving", "pencil", "lattice4", "stencil9", "master", "binomial", "periodic3", "st+ar",
            "periodic3-perm")


GENERATORS = {
    "stencil7": lambda P, s: stencil(P, s, 7),
    "stencil27": lambda P, s: stencil(P, s, 27),
    "mesh": mesh,
    "amr": amr,
    "a2a": a2a,
    "mix": mix,
    "social": social,
}


# ----------------------------------------------------------------------------- real matrices

def _read_any(path: Path) -> sp.csr_matrix:
    from rankmap.profiler.formats import read_traffic
    t = read_traffic(Path(path))
    M = sp.csr_matrix(t.bytes, dtype=np.float64)
    W = (M + M.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


APPS64 = ("AMG2013_64.csv", "CloverLeaf_64.csv", "lulesh_64.csv", "miniFE_64.csv", "npb_bt_64.csv", "npb_lu_64.csv")


def _permute(W: sp.csr_matrix, seed: int) -> sp.csr_matrix:
    n = W.shape[0]
    p = _rng("perm", n, seed).permutation(n)
    Q = sp.csr_matrix((np.ones(n), (p, np.arange(n))), shape=(n, n))
    R = (Q @ W @ Q.T).tocsr()
    R.sort_indices()
    return R


def app_is_tune(name: str) -> bool:
    """Stable split of the real graphs: by a hash of the graph's name (not its position in
    the list, which moves as graphs are added)."""
    return hashlib.sha256(name.encode()).digest()[0] % 2 == 0


def app_files() -> list:
    """The real traffic graphs in bench/data/apps (index.json when there, else every matrix)."""
    if not APPS.is_dir():
        return []
    idx = APPS / "index.json"
    files = []
    if idx.exists():
        try:
            data = json.loads(idx.read_text())
            entries = data if isinstance(data, list) else \
                data.get("matrices", data.get("graphs", data.get("files", [])))
            for e in entries:
                f = e.get("file") if isinstance(e, dict) else e
                if f and (APPS / f).exists():
                    files.append(APPS / f)
        except (ValueError, AttributeError):
            files = []
    if not files:
        files = [p for p in APPS.iterdir() if p.suffix in (".mtx", ".npz", ".csv", ".graph") and p.is_file()]
    return sorted(files, key=lambda p: p.name)


# ----------------------------------------------------------------------------- the instance list

@dataclass
class Instance:
    name: str
    family: str
    size: str
    shape: str
    seed: int
    set: str
    traffic_note: str = ""
    machine_note: str = ""
    shape_file: str = ""
    _cache: dict = field(default_factory=dict, repr=False)

    def load(self):
        """(W, machine): the traffic and the machine (generated now, cached on the instance)."""
        if "W" not in self._cache:
            self._cache["W"], self._cache["machine"] = self._build()
        return self._cache["W"], self._cache["machine"]

    def drop(self):
        self._cache.clear()

    def _build(self):
        if self.family == "apps64":
            W = _read_any(SHARED / "matrices" / self.shape_file)
            if self.seed:
                W = _permute(W, self.seed)
            if self.shape == "apps64-tree":
                m = _machine.build(_hosts(4), ["pack:2 core:8"], level_costs="1000,100,10")
                self.machine_note = "4 x (2 x 8), 1000/100/10"
            else:
                m = _machine.build(_hosts(4), ["pack:4 core:4"], level_costs="500,60,4")
                self.machine_note = "4 x (4 x 4), 500/60/4"
            self.traffic_note = self.shape_file + (f", renumbered (seed {self.seed})" if self.seed else "")
            return W, m
        if self.family == "networks":
            W = _read_any(GRAPHS / self.shape_file)
            m, self.machine_note = _machine_for(self.shape.split(":", 1)[1], W.shape[0])
            self.traffic_note = self.shape_file + ", one rank per vertex"
            return W, m
        if self.family == "patterns":
            W, self.traffic_note = pattern(self.shape_file)
            shape, P = self.shape.split(":", 1)[1], W.shape[0]
            if shape in ("tree3", "tree4s", "tree2", "torus", "hetero3"):
                m, self.machine_note = _machine_for(shape, P)
            else:                                   # the smallest machine of the shape that holds them
                size = P
                while True:
                    m, self.machine_note = build_machine(shape, size)
                    if m.nslots >= P:
                        break
                    size += max(1, P // 50)
            return W, m
        if self.family == "apps":
            W = _read_any(APPS / self.shape_file)
            if self.seed:
                W = _permute(W, self.seed)
            P = W.shape[0]
            shape = self.shape.split(":", 1)[1]
            m, self.machine_note = _machine_for(shape, P)
            self.traffic_note = self.shape_file + (f", renumbered (seed {self.seed})" if self.seed else "")
            return W, m
        if self.family == "fresh":
            import fresh_instances
            W, self.traffic_note, kw, self.machine_note = fresh_instances.build(self.shape_file)
            return W, _machine.build(**kw)
        if self.family == "fresh2":
            import fresh2_instances
            W, self.traffic_note, kw, self.machine_note = fresh2_instances.build(self.shape_file)
            return W, _machine.build(**kw)
        if self.family == "fresh3":
            import fresh3_instances
            W, self.traffic_note, kw, self.machine_note = fresh3_instances.build(self.shape_file)
            return W, _machine.build(**kw)
        m, self.machine_note = build_machine(self.shape, SIZES[self.size])
        W, self.traffic_note = GENERATORS[self.family](m.nslots, self.seed)
        return W, m


def _machine_for(shape: str, P: int):
    """A machine of `shape` with at least P slots (nodes = ceil(P / cores per node))."""
    per = {"tree3": 32, "tree4s": 24, "tree2": 20}
    if shape in per:
        nodes = -(-P // per[shape])
        spec = {"tree3": ("pack:2 core:16", "1000,100,10"), "tree4s": ("pack:4 core:6", "500,60,4"),
                "tree2": ("pack:1 core:20", "100,10,1")}[shape]
        return _machine.build(_hosts(nodes), [spec[0]], level_costs=spec[1]), f"{nodes} x ({spec[0]}), {spec[1]}"
    if shape == "torus":
        need = -(-P // 16)
        dims = min((_near_cubic(n, 3) for n in range(need, int(need * 1.1) + 2)),
                   key=lambda d: (max(d) / min(d), int(np.prod(d))))
        return (_machine.build(_hosts(int(np.prod(dims))), ["pack:2 core:8"], torus="x".join(map(str, dims)),
                               level_costs="1000,100,10"), f"torus {'x'.join(map(str, dims))} x (2 x 8), 1000/100/10")
    if shape == "hetero3":
        nodes = 3
        while True:
            kinds = {h: ("pack:2 core:16", "pack:2 core:8", "pack:1 core:12")[i % 3] for i, h in enumerate(_hosts(nodes))}
            slots = sum({"pack:2 core:16": 32, "pack:2 core:8": 16, "pack:1 core:12": 12}[k] for k in kinds.values())
            if slots >= P and nodes % 8 == 0:
                break
            nodes += 1
        m = _machine.build(_hosts(nodes), _specs(kinds), switches=f"{nodes // 8}x8", level_costs="2000,1000,100,10")
        return m, f"{nodes // 8} switches x 8 nodes of (2 x 16 | 2 x 8 | 1 x 12), 2000/1000/100/10"
    raise ValueError(shape)


def instances(families=None, sizes=("1k",), which: str = "tune", seeds=None, shapes=None) -> list:
    """The instances of a set (tune | holdout | all). families: None = DEFAULT_FAMILIES.
    seeds: None = all seeds of the set, "first" = its first seed, or a list (kept where it
    belongs to the set)."""
    fams = list(families or DEFAULT_FAMILIES)
    out = []
    sets = ("tune", "holdout") if which == "all" else (which,)
    for st in sets:
        own = TUNE_SEEDS if st == "tune" else HOLDOUT_SEEDS
        if seeds is None:
            sds = list(own)
        elif seeds == "first":
            sds = [own[0]]
        else:
            sds = [x for x in seeds if x in own]
        shp = [s for s in (TUNE_SHAPES if st == "tune" else SHAPES) if not shapes or s in shapes]
        for fam in fams:
            if fam == "apps64":
                for f in APPS64:
                    app = f.split("_64")[0]
                    if st == "tune":
                        inst = Instance(f"apps64/{app}/tree", "apps64", "64", "apps64-tree", 0, st)
                    else:
                        inst = Instance(f"apps64/{app}/tree4x4/perm", "apps64", "64", "apps64-h", 7, st)
                    inst.shape_file = f
                    out.append(inst)
                continue
            if fam == "apps":
                for f in app_files():
                    if st == "tune" and app_is_tune(f.stem):
                        out.append(Instance(f"apps/{f.stem}/tree3", "apps", "app", "app:tree3", 0, st, shape_file=f.name))
                    elif st == "holdout":
                        for shape in ("tree4s", "hetero3"):
                            out.append(Instance(f"apps/{f.stem}/{shape}/perm", "apps", "app", f"app:{shape}", 11, st,
                                                shape_file=f.name))
                continue
            if fam == "networks":
                if st == "holdout" and "10k" in sizes:            # 8-17k ranks: with the 10k sizes
                    for f in NETWORKS:
                        for shape in ("tree4s", "torus"):
                            out.append(Instance(f"networks/{f.split('.')[0]}/{shape}", "networks", "10k",
                                                f"net:{shape}", 0, st, shape_file=f))
                continue
            if fam == "patterns":
                if "1k" in sizes:
                    for pt in PATTERNS:
                        for shape in PATTERN_SHAPES if st == "tune" else PATTERN_HOLDOUT_SHAPES:
                            if not shapes or shape in shapes:
                                out.append(Instance(f"patterns/{pt}/{shape}", "patterns", "1k", f"pat:{shape}", 0, st,
                                                    shape_file=pt))
                continue
            if fam == "fresh":                                   # fixed instances of 512-2,048 ranks
                if st == "holdout" and "1k" in sizes:
                    import fresh_instances
                    out += [Instance(f"fresh/{nm}", "fresh", "1k", "fresh", 0, st, shape_file=nm)
                            for nm in fresh_instances.NAMES]
                continue
            if fam == "fresh2":                                  # fixed instances of 512-2,048 ranks
                if st == "holdout" and "1k" in sizes:
                    import fresh2_instances
                    out += [Instance(f"fresh2/{nm}", "fresh2", "1k", "fresh2", 0, st, shape_file=nm)
                            for nm in fresh2_instances.NAMES]
                continue
            if fam == "fresh3":                                  # fixed instances of 512-4,096 ranks
                if st == "holdout" and "1k" in sizes:
                    import fresh3_instances
                    out += [Instance(f"fresh3/{nm}", "fresh3", "1k", "fresh3", 0, st, shape_file=nm)
                            for nm in fresh3_instances.NAMES]
                continue
            if fam in HOLDOUT_ONLY_FAMILIES and st == "tune":
                continue
            for size in sizes:
                for shape in shp:
                    for sd in sds:
                        out.append(Instance(f"{fam}/{size}/{shape}/s{sd}", fam, size, shape, sd, st))
    return out
