"""The `fresh2` family of the anchor benchmark: 42 held-out instances of 512-2,048 ranks, a
second set built independently of `fresh` (bench/fresh_instances.py) to probe what neither it
nor the other families generate (bench/instances.py; holdout only, run only when named:
`bench/mapper_anchors.py --set holdout --families fresh2`).

Traffic: 3-D 27-point stencils with faces >> edges >> corners and a different byte count per
axis on non-divisible grids (11x9x10, 13x11x7); 13-point (distance-2) 3-D stencils; 2-D
stencils periodic in one dimension only, and a wide (distance-2) 2-D stencil; geometric
multigrid (every level coarser, its partners 2^l apart, restriction to the coarse owner); a
cubed sphere (6 faces of k x k ranks, edges joined); an atmosphere/ocean/coupler job (two
2-D sub-jobs of other sizes and a many-to-few coupling); butterflies (recursive doubling)
inside groups of 16-32 ranks over a 3-D stencil; binomial reduction trees in groups of 64
over a 2-D stencil; graph-500-like BFS (R-MAT, 1-D scrambled: dense and random; 2-D: rows and
columns of the process grid, skewed); unstructured 2-D Delaunay meshes of an L-shape and an
annulus partitioned by METIS (halo = cut mesh edges); several masters with round-robin or
contiguous workers; pipelines of uneven stages (all-to-all between consecutive stages); exact
ties (every weight 1: a 2-D torus stencil, a random 6-regular graph); 6 orders of magnitude of
weight spread; 10 % idle ranks; prime rank counts (521, 1009, 1021, 1531).
Machines: nodes of 1 x 128, 8 x 16 and 2 x 56 cores (100/50/10: inter-node barely worse than
inter-socket), 2 x 16 at 10000/10/1, 4 packages x 2 NUMA x 8 at 1000/300/200/10, GPU nodes of
4 ranks (2 x 2, the node dominating), 2 x 32-core nodes with 24 ranks per node, a 3-level
switch tree of uneven fan-out given as switch paths, a 2-D torus 5x7 with its own hop cost, a
3-D torus 3x5x4, a 3x3x3 mesh, dragonflies 6x3x4 and 5x4x3, mixed node sizes alternating
with no switch between them and mixed inside each leaf switch; 31 of the 42 partly filled
(61-99 %; the % in a name). Mt-KaHyPar's Steiner-tree mapping does not take nodes of more
than 64 cores: on the 1 x 128, 8 x 16 and 2 x 56 nodes it gives no answer. Each instance is
fixed (no seed of the set): its numbers can be quoted and rerun.
"""
from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from scipy.spatial import Delaunay, cKDTree

from instances import _hosts, _renumber, _sym
from fresh_instances import _grid2d, _grid3d, fixed_family


def _rng(*key) -> np.random.Generator:
    # keyed apart from fresh's ("fresh27"): the same helper names give other numbers here
    h = hashlib.sha256(repr(("fresh2",)).encode() + repr(key).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


# ----------------------------------------------------------------------------- traffic

def st27_uneven(X, Y, Z, order="xfast"):
    """27-point halo, non-periodic: faces ~1e6 B (each axis its own: the subdomains are not
    cubes), edges ~1e4 B, corners 200 B: four orders of magnitude between the kinds."""
    face = {0: 1.3e6, 1: 8e5, 2: 4.5e5}
    offs = []
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dz in (-1, 0, 1):
                if (dx, dy, dz) <= (0, 0, 0):
                    continue
                nz = [a for a, d in enumerate((dx, dy, dz)) if d]
                w = face[nz[0]] if len(nz) == 1 else 1.5e4 - 4e3 * (3 - sum(nz)) if len(nz) == 2 else 200.0
                offs.append((dx, dy, dz, w))
    W = _grid3d(X, Y, Z, offs, order)
    return W, (f"3-D 27-point, {X} x {Y} x {Z} grid, faces x/y/z 1.3 MB/800 kB/450 kB, edges 7-15 kB, corners "
               f"200 B, non-periodic, {order} ranks")


def st13(X, Y, Z, order="xfast"):
    """High-order 3-D star: partners at distance 1 (two halo layers) and 2 (thin subdomains:
    the outer layer comes from two ranks away)."""
    offs = []
    for a, w in enumerate((6e5, 4e5, 3e5)):
        for d, f in ((1, 1.0), (2, 0.5)):
            o = [0, 0, 0]
            o[a] = d
            offs.append((*o, w * f))
    W = _grid3d(X, Y, Z, offs, order)
    return W, (f"3-D 13-point (distance 1 and 2 per axis, the far ones half), {X} x {Y} x {Z} grid, faces x/y/z "
               f"600/400/300 kB, non-periodic, {order} ranks")


def st5_wrap1(X, Y, periodic_y, order):
    """2-D 5-point periodic in one dimension only (a channel: periodic along the flow)."""
    per = (not periodic_y, periodic_y)
    W = _grid2d(X, Y, [(1, 0, 2.5e5), (0, 1, 4e5)], periodic=per, order=order)
    return W, (f"2-D 5-point, {X} x {Y} grid periodic in {'y' if periodic_y else 'x'} only, x faces 250 kB, "
               f"y faces 400 kB, {order} ranks")


def st2d_wide(X, Y):
    W = _grid2d(X, Y, [(1, 0, 5e5), (2, 0, 2.5e5), (0, 1, 5e5), (0, 2, 2.5e5), (1, 1, 3e4), (1, -1, 3e4)])
    return W, (f"2-D wide stencil (distance 1: 500 kB, distance 2: 250 kB, diagonals 30 kB), {X} x {Y} grid, "
               "non-periodic, x-fastest ranks")


def multigrid(X, Y, Z, levels):
    """Geometric multigrid, ranks x fastest: level l runs on the ranks whose coordinates are
    multiples of 2^l (agglomerated: the same cells per active rank), their partners 2^l
    apart at 0.8^l of the fine face bytes; restriction/prolongation from every rank of a
    level to its coarse owner (the 2^(l+1) block's corner rank)."""
    P = X * Y * Z
    g = np.arange(P)
    x, y, z = g % X, (g // X) % Y, g // (X * Y)
    rows, cols, vals = [], [], []
    for lv in range(levels):
        s = 1 << lv
        act = (x % s == 0) & (y % s == 0) & (z % s == 0)
        for a, (c, D) in enumerate(((x, X), (y, Y), (z, Z))):
            ok = act & (c + s < D)
            j = g + s * (1, X, X * Y)[a]
            rows.append(g[ok]); cols.append(j[ok]); vals.append(np.full(int(ok.sum()), 4e5 * 0.8 ** lv))
        if lv + 1 < levels:
            t = 2 * s
            par = (x // t * t) + X * ((y // t * t) + Y * (z // t * t))
            ok = act & (par != g)
            rows.append(g[ok]); cols.append(par[ok]); vals.append(np.full(int(ok.sum()), 1e5 * 1.5 ** lv))
    return _sym(rows, cols, vals, P), (
        f"geometric multigrid, {X} x {Y} x {Z} ranks, {levels} levels: level l on ranks at multiples of 2^l, "
        f"partners 2^l apart (400 kB x 0.8^l), restriction to the coarse owner (100 kB x 1.5^l), x-fastest ranks")


def cubed_sphere(k):
    """6 faces of k x k ranks on a cube's surface, ranks face by face, row-major in a face;
    edge neighbours (4 per rank, across cube edges too) 500 kB, corner neighbours 20 kB."""
    ij = np.arange(k)
    a, b = np.meshgrid(2 * ij + 1, 2 * ij + 1, indexing="ij")
    a, b = a.ravel(), b.ravel()
    zero, full = np.zeros_like(a), np.full_like(a, 2 * k)
    faces = [(a, b, zero), (a, b, full), (a, zero, b), (a, full, b), (zero, a, b), (full, a, b)]
    pts = np.concatenate([np.stack(f, 1) for f in faces]).astype(float)
    P = len(pts)
    tree = cKDTree(pts)
    near = tree.query_pairs(2.01, output_type="ndarray")
    diag = tree.query_pairs(2.9, output_type="ndarray")
    d = np.linalg.norm(pts[diag[:, 0]] - pts[diag[:, 1]], axis=1)
    diag = diag[d > 2.01]
    W = _sym([near[:, 0], diag[:, 0]], [near[:, 1], diag[:, 1]],
             [np.full(len(near), 5e5), np.full(len(diag), 2e4)], P)
    return W, (f"cubed sphere: 6 faces of {k} x {k} ranks ({P}), edges joined across the cube's edges, "
               "4 edge neighbours 500 kB, corner neighbours 20 kB, ranks face by face")


def coupler(Xa, Ya, Xo, Yo, Pc):
    """Atmosphere (2-D 9-point, periodic in longitude), ocean (2-D 5-point, periodic in
    longitude) on other decompositions of the same globe, and Pc coupler ranks, each the
    regridder of a latitude band: every atmosphere and ocean rank sends its surface fields to
    the coupler of its band (many-to-few); ranks: atmosphere, ocean, coupler."""
    Pa, Po = Xa * Ya, Xo * Yo
    P = Pa + Po + Pc
    A = _grid2d(Xa, Ya, [(1, 0, 3e5), (0, 1, 2e5), (1, 1, 1.5e4), (1, -1, 1.5e4)], periodic=(True, False)).tocoo()
    O = _grid2d(Xo, Yo, [(1, 0, 1.5e5), (0, 1, 1.5e5)], periodic=(True, False)).tocoo()
    ga, go = np.arange(Pa), np.arange(Po)
    ca = Pa + Po + ((ga // Xa) * Pc) // Ya           # the band of each rank's latitude row
    co = Pa + Po + ((go // Xo) * Pc) // Yo
    cr = np.arange(Pc)
    W = _sym([A.row, Pa + O.row, ga, Pa + go, Pa + Po + cr],
             [A.col, Pa + O.col, ca, co, Pa + Po + (cr + 1) % Pc],
             [A.data / 2, O.data / 2, np.full(Pa, 8e4), np.full(Po, 6e4), np.full(Pc, 2e5)], P)
    return W, (f"coupled climate job: atmosphere {Xa} x {Ya} (9-point, periodic in x), ocean {Xo} x {Yo} (5-point, "
               f"periodic in x), {Pc} coupler ranks by latitude band (80/60 kB from each), coupler ring 200 kB; "
               "ranks atmosphere, ocean, coupler")


def butterfly_stencil(X, Y, Z, axis):
    """3-D 7-point halo (150 kB) + an all-to-all by recursive doubling (300 kB per step)
    inside every grid line along `axis` (x: contiguous ranks; z: strided by X*Y)."""
    P = X * Y * Z
    W = _grid3d(X, Y, Z, [(1, 0, 0, 1.5e5), (0, 1, 0, 1.5e5), (0, 0, 1, 1.5e5)], "xfast")
    g = np.arange(P)
    c = (g % X, (g // X) % Y, g // (X * Y))[axis]
    G, stride = (X, Y, Z)[axis], (1, X, X * Y)[axis]
    rows, cols, vals = [], [], []
    k = 1
    while k < G:
        p = c ^ k
        ok = (p < G) & (p > c)
        rows.append(g[ok]); cols.append((g + (p - c) * stride)[ok]); vals.append(np.full(int(ok.sum()), 3e5))
        k <<= 1
    W = (W + _sym(rows, cols, vals, P)).tocsr()
    W.sort_indices()
    return W, (f"3-D 7-point {X} x {Y} x {Z} (150 kB) + butterfly all-to-all (300 kB per step) in the {G}-rank lines "
               f"along {'xyz'[axis]} ({'contiguous' if axis == 0 else 'strided'} ranks), x-fastest ranks")


def reduce_trees(X, Y, group):
    """2-D 5-point halo (100 kB) + a binomial reduction tree (1 MB per edge) in every group
    of `group` consecutive ranks."""
    P = X * Y
    W = _grid2d(X, Y, [(1, 0, 1e5), (0, 1, 1e5)]).tocoo()
    g = np.arange(P)
    i = g % group
    ok = i > 0
    par = g - (i & -i)
    W = _sym([W.row, g[ok]], [W.col, par[ok]], [W.data / 2, np.full(int(ok.sum()), 1e6)], P)
    return W, (f"2-D 5-point {X} x {Y} (100 kB) + binomial reduction trees (1 MB per edge) in groups of {group} "
               "consecutive ranks")


def _rmat(scale, ef, seed):
    rng = _rng("rmat", scale, ef, seed)
    N, E = 1 << scale, ef << scale
    u = np.zeros(E, dtype=np.int64)
    v = np.zeros(E, dtype=np.int64)
    for b in range(scale):          # Graph 500's A, B, C = 0.57, 0.19, 0.19
        r = rng.random(E)
        u |= ((r >= 0.57 + 0.19) << b).astype(np.int64)
        v |= (((r >= 0.57) & (r < 0.76)) | (r >= 0.95)).astype(np.int64) << b
    ok = u != v
    return N, u[ok], v[ok]


def bfs1d(P, scale, seed):
    """Graph-500 BFS, 1-D: R-MAT vertices scrambled (as the benchmark does) into P blocks;
    bytes = 8 per cut edge (both directions): dense, nearly random, skewed degrees."""
    N, u, v = _rmat(scale, 16, seed)
    perm = _rng("scramble", scale, seed).permutation(N)
    ou, ov = perm[u] * P // N, perm[v] * P // N
    ok = ou != ov
    W = _sym([ou[ok]], [ov[ok]], [np.full(int(ok.sum()), 8.0)], P)
    return W, (f"graph-500 BFS, 1-D: R-MAT scale {scale}, edge factor 16, scrambled vertices in {P} blocks, 8 B per "
               f"cut edge ({W.nnz / P:.0f} partners per rank on average)")


def bfs2d(R, C, scale, seed):
    """Graph-500 BFS, 2-D: R x C process grid, rank (i, j) holds the edges of row block i and
    column block j of an unscrambled R-MAT (skewed: the low blocks hold most); expand
    all-to-all in each column, fold in each row, bytes per pair ~ the geometric mean of the
    two blocks' edge counts."""
    N, u, v = _rmat(scale, 16, seed)
    uu, vv = np.concatenate([u, v]), np.concatenate([v, u])
    cnt = np.zeros((R, C))
    np.add.at(cnt, (uu * R // N, vv * C // N), 1.0)
    g = np.arange(R * C)
    i, j = g // C, g % C
    rows, cols, vals = [], [], []
    for same, other in ((i, j), (j, i)):
        a, b = np.meshgrid(g, g, indexing="ij")
        m = (same[a] == same[b]) & (a < b)
        rows.append(a[m]); cols.append(b[m]); vals.append(2.0 * np.sqrt(cnt[i[a[m]], j[a[m]]] * cnt[i[b[m]], j[b[m]]]))
    W = _sym(rows, cols, vals, R * C)
    W.eliminate_zeros()
    return W, (f"graph-500 BFS, 2-D: {R} x {C} process grid, R-MAT scale {scale} unscrambled (skewed blocks), "
               "all-to-all in rows and columns, bytes ~ geometric mean of the two blocks' edges, row-major ranks")


def delaunay_domain(P, shape, seed, per=30):
    """A 2-D Delaunay mesh of random points (denser near the re-entrant corner / the inner
    ring) in an L-shape or an annulus, METIS k-way into P parts (rank = part), bytes = 640
    per cut mesh edge (16 unknowns x 8 B x 5 layers)."""
    import pymetis
    rng = _rng("delaunay", P, shape, seed)
    N = P * per
    pts = []
    while sum(len(p) for p in pts) < N:
        if shape == "L":            # [0,2]^2 minus [1,2]^2, pulled towards the corner (1, 1)
            q = rng.random((N, 2)) * 2
            q = 1 + (q - 1) * np.abs(q - 1) ** 0.3 * 0.999
            q = q[~((q[:, 0] > 1) & (q[:, 1] > 1))]
        else:                       # annulus r in [0.5, 1], denser inside
            r = 0.5 + 0.5 * rng.random(N) ** 1.6
            t = rng.random(N) * 2 * np.pi
            q = np.stack([r * np.cos(t), r * np.sin(t)], 1)
        pts.append(q)
    X = np.concatenate(pts)[:N]
    tri = Delaunay(X).simplices
    e = np.concatenate([tri[:, [0, 1]], tri[:, [1, 2]], tri[:, [0, 2]]])
    e = np.unique(np.sort(e, 1), axis=0)
    mid = X[e].mean(1)               # drop edges across the hole / the notch (Delaunay is convex)
    if shape == "L":
        ok = ~((mid[:, 0] > 1) & (mid[:, 1] > 1))
    else:
        ok = np.hypot(mid[:, 0], mid[:, 1]) >= 0.5
    e = e[ok]
    A = sp.csr_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(N, N))
    A = ((A + A.T) > 0).astype(np.float64).tocsr()
    A.sort_indices()
    adj = pymetis.CSRAdjacency(A.indptr, A.indices)
    _, part = pymetis.part_graph(P, adjacency=adj, options=pymetis.Options(seed=7))
    part = np.asarray(part, dtype=np.int64)
    pa, pb = part[e[:, 0]], part[e[:, 1]]
    cut = pa != pb
    W = _sym([pa[cut]], [pb[cut]], [np.full(int(cut.sum()), 320.0)], P)
    return W, (f"2-D Delaunay mesh of {N} random points in {'an L-shape' if shape == 'L' else 'an annulus'} "
               f"(non-uniform), METIS k-way into {P} parts, 640 B per cut mesh edge")


def masters(P, M, roundrobin, seed):
    """M masters all-to-all (500 kB), every worker to its master (200 kB) and to one random
    other worker (10 kB, work stealing). Round-robin: masters are ranks 0..M-1 and worker w
    serves master w % M; else master m is rank m*P/M followed by its workers."""
    rng = _rng("masters", P, M, seed)
    if roundrobin:
        mast = np.arange(M)
        work = np.arange(M, P)
        own = mast[work % M]
    else:
        mast = np.arange(M) * P // M
        is_m = np.zeros(P, bool)
        is_m[mast] = True
        work = np.flatnonzero(~is_m)
        own = mast[np.searchsorted(mast, work, side="right") - 1]
    i, j = np.triu_indices(M, 1)
    steal = work[rng.integers(0, len(work), len(work))]
    ok = steal != work
    W = _sym([mast[i], work, work[ok]], [mast[j], own, steal[ok]],
             [np.full(len(i), 5e5), np.full(len(work), 2e5), np.full(int(ok.sum()), 1e4)], P)
    return W, (f"master/worker: {M} masters all-to-all 500 kB, workers to their master 200 kB "
               f"({'round-robin: masters 0..M-1, worker w to w % M' if roundrobin else 'contiguous groups'}), "
               "1 random steal partner each 10 kB")


def pipeline(sizes):
    """Stages of uneven size in a chain; every rank of a stage to every rank of the next
    (200 MB per stage boundary, spread over the pairs), a ring inside each stage (50 kB)."""
    P = sum(sizes)
    off = np.concatenate([[0], np.cumsum(sizes)])
    rows, cols, vals = [], [], []
    for s in range(len(sizes)):
        a = np.arange(off[s], off[s + 1])
        rows.append(a); cols.append(np.roll(a, -1)); vals.append(np.full(len(a), 5e4))
        if s + 1 < len(sizes):
            b = np.arange(off[s + 1], off[s + 2])
            A, B = np.meshgrid(a, b, indexing="ij")
            rows.append(A.ravel()); cols.append(B.ravel()); vals.append(np.full(A.size, 2e8 / A.size))
    return _sym(rows, cols, vals, P), (
        f"pipeline of {len(sizes)} stages ({'/'.join(map(str, sizes))} ranks), all-to-all between consecutive "
        "stages (200 MB per boundary), a ring in each stage (50 kB)")


def ties_torus9(X, Y):
    W = _grid2d(X, Y, [(1, 0, 1), (0, 1, 1), (1, 1, 1), (1, -1, 1)], periodic=(True, True))
    W.data[:] = 1.0
    return W, f"exact ties: 2-D 9-point on a {X} x {Y} torus (periodic both ways), every weight 1 B"


def ties_regular(P, d, seed):
    """A random d-regular-ish graph (union of d/2 random Hamiltonian cycles), every weight 1."""
    rng = _rng("regular", P, d, seed)
    rows, cols = [], []
    for _ in range(d // 2):
        c = rng.permutation(P)
        rows.append(c); cols.append(np.roll(c, 1))
    W = _sym(rows, cols, [np.ones(P)] * (d // 2), P)
    W.data[:] = 1.0
    return W, f"exact ties: union of {d // 2} random Hamiltonian cycles on {P} ranks (an expander), every weight 1 B"


def spread_knn(P, seed):
    rng = _rng("spread", P, seed)
    X = rng.random((P, 3))
    _, nb = cKDTree(X).query(X, k=9)
    r, c = np.repeat(np.arange(P), 8), nb[:, 1:].ravel()
    W = _sym([r], [c], [10 ** rng.uniform(0, 6, len(r))], P)
    return W, (f"3-D 8-nearest-neighbour graph of {P} random points, each edge's bytes log-uniform in [1 B, 1 MB] "
               "(6 orders of magnitude)")


def spread_st7(X, Y, Z, seed):
    rng = _rng("spread7", X, Y, Z, seed)
    W = _grid3d(X, Y, Z, [(1, 0, 0, 1), (0, 1, 0, 1), (0, 0, 1, 1)], "xfast")
    U = sp.triu(W, 1).tocoo()
    W = _sym([U.row], [U.col], [10 ** rng.uniform(0, 6, U.nnz)], W.shape[0])
    return W, (f"3-D 7-point {X} x {Y} x {Z}, each face's bytes log-uniform in [1 B, 1 MB] (6 orders of "
               "magnitude), x-fastest ranks")


def chain(P):
    g = np.arange(P)
    W = _sym([g, g, g], [(g + 1) % P, (g + 2) % P, (g + 3) % P],
             [np.full(P, 1e6), np.full(P, 1e5), np.full(P, 1e4)], P)
    return W, f"1-D periodic halo of {P} ranks: +-1 1 MB, +-2 100 kB, +-3 10 kB"


def _idle(made, frac, seed):
    """The same traffic with a random frac of the ranks exchanging nothing at all."""
    W, note = made
    P = W.shape[0]
    rng = _rng("idle", P, frac, seed)
    keep = np.ones(P)
    keep[rng.choice(P, int(round(frac * P)), replace=False)] = 0
    D = sp.diags(keep)
    W = (D @ W @ D).tocsr()
    W.eliminate_zeros()
    W.sort_indices()
    return W, note + f", {frac:.0%} of the ranks idle (random, exchange nothing)"


def _perm(made, seed):
    W, note = made
    return _renumber(W, seed), note + ", renumbered at random"


# ----------------------------------------------------------------------------- machines

NODES = {   # kind: (node spec, level costs, what)
    "n128": ("pack:1 core:128", "1000,100,10", "1 x 128"),
    "n8x16": ("pack:8 core:16", "2000,150,10", "8 x 16"),
    "spr": ("pack:2 core:56", "100,50,10", "2 x 56"),
    "flat4": ("pack:2 core:16", "10000,10,1", "2 x 16"),
    "numa4": ("pack:4 numa:2 core:8", "1000,300,200,10", "4 packages x 2 NUMA x 8"),
    "gpu4": ("pack:2 core:2", "10000,100,20", "4 GPUs as 2 x 2"),
}
# a 3-level switch tree, uneven: 3 pods of 3, 2 and 4 leaf switches of 3-8 nodes (53 nodes)
PODS = ((6, 6, 4), (8, 5), (7, 7, 7, 3))


def machine(kind, **p) -> tuple:
    """(keyword arguments of rankmap.mapper.machine.build, description)."""
    if kind in NODES:
        spec, costs, what = NODES[kind]
        return (dict(hosts=_hosts(p["nodes"]), topo_specs=[spec], level_costs=costs),
                f"{p['nodes']} x ({what}), {costs.replace(',', '/')}")
    if kind == "gpu4-ft":            # GPU nodes under leaf switches of 16
        n = p["nodes"]
        return (dict(hosts=_hosts(n), topo_specs=["pack:2 core:2"], switches=f"{n // 16}x16",
                     level_costs="20000,10000,100,20"),
                f"{n // 16} leaf switches x 16 nodes of 4 GPUs (2 x 2), 20000/10000/100/20")
    if kind == "rpn":                # 2 x 32 cores, 24 ranks per node (memory-bound code)
        return (dict(hosts=_hosts(p["nodes"]), topo_specs=["pack:2 core:32"], ranks_per_node=24,
                     level_costs="1200,80,8"),
                f"{p['nodes']} x (2 x 32) with 24 ranks per node, 1200/80/8")
    if kind == "fat3":
        leaves = [(a, b, n) for a, pod in enumerate(PODS) for b, n in enumerate(pod)]
        hs = _hosts(sum(n for *_, n in leaves))
        paths, k = {}, 0
        for a, b, n in leaves:
            for _ in range(n):
                paths[hs[k]] = ["core-sw", f"pod{a}", f"leaf{a}.{b}"]
                k += 1
        return (dict(hosts=hs, topo_specs=["pack:2 core:20"], network={"kind": "switches", "paths": paths},
                     level_costs="5000,2000,500,50,5"),
                "3-level switch tree: pods of 3/2/4 leaf switches of 6,6,4 / 8,5 / 7,7,7,3 nodes of (2 x 20), "
                "5000/2000/500/50/5")
    if kind in ("torus", "mesh"):
        n = int(np.prod([int(d) for d in p["dims"].split("x")]))
        extra = {"hop_cost": p["hop"]} if "hop" in p else {}
        return (dict(hosts=_hosts(n), topo_specs=[p["spec"]], **{kind: p["dims"]}, level_costs=p["costs"], **extra),
                f"{'torus' if kind == 'torus' else 'mesh (no wrap)'} {p['dims']} of ({p['spec']}), "
                f"{p['costs'].replace(',', '/')}, hop {p.get('hop', 'the node cost')}")
    if kind == "dragonfly":
        n = int(np.prod([int(d) for d in p["dims"].split("x")]))
        return (dict(hosts=_hosts(n), topo_specs=[p["spec"]], network=f"dragonfly:{p['dims']}",
                     level_costs="3000,2000,300,30,3"),
                f"dragonfly {p['dims']} (groups x routers x nodes) of ({p['spec']}), "
                "group/router/node/pack/core 3000/2000/300/30/3")
    if kind == "mixflat":            # big and small nodes alternating, one flat network
        hs = _hosts(p["nodes"])
        specs = [",".join(hs[0::2]) + "=pack:2 core:56", ",".join(hs[1::2]) + "=pack:2 core:16"]
        return (dict(hosts=hs, topo_specs=specs, level_costs="1000,100,10"),
                f"mixed, no switches: {p['nodes']} nodes alternating (2 x 56) and (2 x 16), 1000/100/10")
    if kind == "mixsw":              # three node kinds inside every leaf switch
        hs = _hosts(24)
        kinds = ("pack:1 core:64", "pack:2 core:16", "pack:2 core:24")
        specs = [",".join(hs[k::3]) + "=" + t for k, t in enumerate(kinds)]
        return (dict(hosts=hs, topo_specs=specs, switches="4x6", level_costs="3000,300,30,3"),
                "mixed inside each of 4 leaf switches of 6 nodes: (1 x 64), (2 x 16), (2 x 24) in turn (1152 slots), "
                "3000/300/30/3")
    raise ValueError(kind)


T354 = dict(dims="3x5x4", spec="pack:2 core:10", costs="1000,100,10")      # 1200 slots
T57 = dict(dims="5x7", spec="pack:2 core:16", costs="500,100,10", hop="300")  # 1120 slots
M333 = dict(dims="3x3x3", spec="pack:2 core:20", costs="800,80,8")          # 1080 slots
DF634 = dict(dims="6x3x4", spec="pack:2 core:12")                           # 1728 slots
DF543 = dict(dims="5x4x3", spec="pack:2 core:14")                           # 1680 slots

# (name, traffic -> (W, note), machine kind, machine parameters); % in a name = the fill
FRESH2 = [
    ("st27u-11x9x10/n8x16-97%", lambda: st27_uneven(11, 9, 10), "n8x16", dict(nodes=8)),
    ("st27u-13x11x7-yzx/spr-99%", lambda: st27_uneven(13, 11, 7, "yzx"), "spr", dict(nodes=9)),
    ("st27u-9x9x9-perm/torus3x5x4-61%", lambda: _perm(st27_uneven(9, 9, 9), 1117), "torus", T354),
    ("st27u-16x10x12/fat3-91%", lambda: st27_uneven(16, 10, 12, "hilbert"), "fat3", {}),
    ("st13-12x12x8/numa4", lambda: st13(12, 12, 8), "numa4", dict(nodes=18)),
    ("st13-10x10x10-snake/mesh3x3x3-93%", lambda: st13(10, 10, 10, "snake"), "mesh", M333),
    ("st5-wrapy-48x21/n128-98%", lambda: st5_wrap1(48, 21, True, "xfast"), "n128", dict(nodes=8)),
    ("st5-wrapx-37x29-yfast/torus5x7-96%", lambda: st5_wrap1(37, 29, False, "yfast"), "torus", T57),
    ("st2dwide-40x40/dragonfly6x3x4-93%", lambda: st2d_wide(40, 40), "dragonfly", DF634),
    ("mg-16x16x8/spr-96%", lambda: multigrid(16, 16, 8, 4), "spr", dict(nodes=19)),
    ("mg-12x10x10/torus3x5x4", lambda: multigrid(12, 10, 10, 4), "torus", T354),
    ("mg-8x8x8/gpu4", lambda: multigrid(8, 8, 8, 4), "gpu4", dict(nodes=128)),
    ("cs-12/n8x16-96%", lambda: cubed_sphere(12), "n8x16", dict(nodes=7)),
    ("cs-16/fat3-72%", lambda: cubed_sphere(16), "fat3", {}),
    ("cs-13-perm/numa4-99%", lambda: _perm(cubed_sphere(13), 613), "numa4", dict(nodes=16)),
    ("cs-10/gpu4-ft-94%", lambda: cubed_sphere(10), "gpu4-ft", dict(nodes=160)),
    ("coupler-1024/spr-91%", lambda: coupler(32, 24, 16, 14, 32), "spr", dict(nodes=10)),
    ("coupler-1500/dragonfly5x4x3-89%", lambda: coupler(36, 25, 24, 23, 48), "dragonfly", DF543),
    ("bfly-32x6x5-x/n128-94%", lambda: butterfly_stencil(32, 6, 5, 0), "n128", dict(nodes=8)),
    ("bfly-7x9x16-z/flat4-98%", lambda: butterfly_stencil(7, 9, 16, 2), "flat4", dict(nodes=32)),
    ("redtree-32x32-g64/rpn-99%", lambda: reduce_trees(32, 32, 64), "rpn", dict(nodes=43)),
    ("bfs1d-512/n8x16", lambda: bfs1d(512, 16, 1), "n8x16", dict(nodes=4)),
    ("bfs1d-521-prime/spr-93%", lambda: bfs1d(521, 16, 2), "spr", dict(nodes=5)),
    ("bfs2d-32x32/torus5x7-91%", lambda: bfs2d(32, 32, 18, 3), "torus", T57),
    ("bfs2d-24x40-perm/rpn", lambda: _perm(bfs2d(24, 40, 18, 4), 404), "rpn", dict(nodes=40)),
    ("delL-1000/n128-98%", lambda: delaunay_domain(1000, "L", 1), "n128", dict(nodes=8)),
    ("delAnn-1531-prime/dragonfly6x3x4-89%", lambda: delaunay_domain(1531, "ann", 2), "dragonfly", DF634),
    ("delL-1021-prime/numa4-99%", lambda: delaunay_domain(1021, "L", 3), "numa4", dict(nodes=16)),
    ("delAnn-700/mesh3x3x3-65%", lambda: delaunay_domain(700, "ann", 4), "mesh", M333),
    ("mw-8-rr-1024/n8x16", lambda: masters(1024, 8, True, 1), "n8x16", dict(nodes=8)),
    ("mw-12-1100/mixflat-95%", lambda: masters(1100, 12, False, 2), "mixflat", dict(nodes=16)),
    ("mw-16-rr-1152/mixsw", lambda: masters(1152, 16, True, 3), "mixsw", {}),
    ("pipe8-1024/spr-91%", lambda: pipeline([96, 160, 128, 192, 96, 128, 160, 64]), "spr", dict(nodes=10)),
    ("pipe5-768/gpu4", lambda: pipeline([128, 256, 96, 160, 128]), "gpu4", dict(nodes=192)),
    ("ties-t9-32x32/n128", lambda: ties_torus9(32, 32), "n128", dict(nodes=8)),
    ("ties-reg6-1024/numa4", lambda: ties_regular(1024, 6, 1), "numa4", dict(nodes=16)),
    ("spread-knn-1200/spr-97%", lambda: spread_knn(1200, 1), "spr", dict(nodes=11)),
    ("spread-st7-12x12x12/flat4", lambda: spread_st7(12, 12, 12, 2), "flat4", dict(nodes=54)),
    ("idle-st27u-10x10x10/n8x16-98%", lambda: _idle(st27_uneven(10, 10, 10), 0.1, 1), "n8x16", dict(nodes=8)),
    ("idle-delL-1200/dragonfly5x4x3-71%", lambda: _idle(delaunay_domain(1200, "L", 5), 0.1, 2), "dragonfly", DF543),
    ("chain-1009-prime/mixsw-88%", lambda: chain(1009), "mixsw", {}),
    ("chain-1009-prime-perm/mixflat-88%", lambda: _perm(chain(1009), 1009), "mixflat", dict(nodes=16)),
]
NAMES, build = fixed_family(FRESH2, machine)
