"""The `fresh` family of the anchor benchmark: 48 held-out instances of 512-2,048 ranks whose
traffic and machine shapes the other families do not generate, so that rankmap is measured on
inputs nobody tuned on (bench/instances.py; holdout only, run only when named:
`bench/mapper_anchors.py --set holdout --families fresh`).

Traffic: 2-D 5- and 9-point stencils with direction-dependent bytes, 3-D 7-point stencils in
Hilbert, boustrophedon and y-z-x rank orders, pencil FFTs on non-square grids, SpMV halos of
random geometric graphs (Morton or RCM row order) and of banded matrices, a particle code (26
neighbours and random far partners), multi-physics jobs (3-D fluid + 2-D structure,
contiguous or interleaved), 5 % hub ranks, LU wavefronts, and six random renumberings.
Machines: nodes of 4 x 8, 2 x 24 and 1 x 64 cores, 2 packages x 4 NUMA x 8, racks of 5/7/6
nodes, mixed node types under leaf switches, dragonflies, 2-D tori, a 3-D mesh, and 13 partly
filled machines. Each instance is fixed (no seed of the set): its numbers can be quoted and
rerun. The three 3-D tori 4x4x4 of 2 x 8 cores at 1000/100/10 are the tune shape `torus` at 1k
ranks; only their traffic is fresh.
"""
from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee
from scipy.spatial import cKDTree

from instances import _hosts, _renumber, _sym, grid_positions


def _rng(*key) -> np.random.Generator:
    # keyed as when the set was first built and recorded, so the instances stay the same
    h = hashlib.sha256(repr(("fresh27",)).encode() + repr(key).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _rank_of(key: np.ndarray) -> np.ndarray:
    rank = np.empty(len(key), dtype=np.int64)
    rank[np.argsort(key, kind="stable")] = np.arange(len(key))
    return rank


def _hilbert_key(coords: np.ndarray, bits: int) -> np.ndarray:
    """Hilbert index of integer points (n x d): Skilling's transpose algorithm, vectorised."""
    X = coords.astype(np.int64).copy()
    n, d = X.shape
    Q = 1 << (bits - 1)
    while Q > 1:
        P = Q - 1
        for i in range(d):
            m = (X[:, i] & Q) != 0
            X[m, 0] ^= P
            nm = ~m
            t = (X[nm, 0] ^ X[nm, i]) & P
            X[nm, 0] ^= t
            X[nm, i] ^= t
        Q >>= 1
    for i in range(1, d):
        X[:, i] ^= X[:, i - 1]
    t = np.zeros(n, dtype=np.int64)
    Q = 1 << (bits - 1)
    while Q > 1:
        t[(X[:, d - 1] & Q) != 0] ^= Q - 1
        Q >>= 1
    X ^= t[:, None]
    key = np.zeros(n, dtype=np.int64)
    for b in range(bits - 1, -1, -1):
        for i in range(d):
            key = (key << 1) | ((X[:, i] >> b) & 1)
    return key


# ----------------------------------------------------------------------------- traffic

def _grid2d(X, Y, dirs, periodic=(False, False), order="xfast"):
    """Halo of an X x Y grid; dirs: (dx, dy, bytes); ranks x or y fastest."""
    P = X * Y
    idx = np.arange(P)
    x, y = idx % X, idx // X
    rank = idx if order == "xfast" else x * Y + y
    rows, cols, vals = [], [], []
    for dx, dy, w in dirs:
        nx, ny = x + dx, y + dy
        ok = np.ones(P, bool)
        for c, D, per in ((nx, X, periodic[0]), (ny, Y, periodic[1])):
            if not per:
                ok &= (c >= 0) & (c < D)
        j = nx % X + X * (ny % Y)
        ok &= j != idx
        rows.append(rank[idx[ok]]); cols.append(rank[j[ok]]); vals.append(np.full(int(ok.sum()), float(w)))
    return _sym(rows, cols, vals, P)


def st5_aniso(X, Y, order):
    base = 2e5
    W = _grid2d(X, Y, [(1, 0, 3 * base), (0, 1, base)], order=order)
    return W, (f"2-D 5-point, {X} x {Y} grid, x faces 3x heavier ({3*base:.3g} vs {base:.3g} B), non-periodic, "
               f"{order} ranks")


def st9_aniso(X, Y, order):
    a, b, c = 6e5, 1.5e5, 8e3
    W = _grid2d(X, Y, [(1, 0, a), (0, 1, b), (1, 1, c), (1, -1, c)], periodic=(True, False), order=order)
    return W, (f"2-D 9-point, {X} x {Y} grid periodic in x, faces x {a:.3g} / y {b:.3g} B, corners {c:.3g} B, "
               f"{order} ranks")


def _grid3d(X, Y, Z, offs, order):
    """Non-periodic halo of an X x Y x Z grid; offs: (dx, dy, dz, bytes); ranks in `order`
    (xfast, hilbert, snake = boustrophedon, yzx = y fastest, then z, then x)."""
    P = X * Y * Z
    idx, x, y, z = grid_positions(X, Y, Z)
    if order == "xfast":
        rank = idx
    elif order == "hilbert":
        rank = _rank_of(_hilbert_key(np.stack([x, y, z], 1), max(1, int(np.ceil(np.log2(max(X, Y, Z)))))))
    elif order == "snake":
        xx = np.where(y % 2 == 1, X - 1 - x, x)
        yy = np.where(z % 2 == 1, Y - 1 - y, y)
        rank = _rank_of((z * Y + yy) * X + xx)
    elif order == "yzx":
        rank = _rank_of((x * Z + z) * Y + y)
    else:
        raise ValueError(order)
    rows, cols, vals = [], [], []
    for dx, dy, dz, w in offs:
        cx, cy, cz = x + dx, y + dy, z + dz
        ok = (cx >= 0) & (cx < X) & (cy >= 0) & (cy < Y) & (cz >= 0) & (cz < Z)
        j = cx % X + X * (cy % Y + Y * (cz % Z))
        ok &= j != idx
        rows.append(rank[idx[ok]]); cols.append(rank[j[ok]]); vals.append(np.full(int(ok.sum()), float(w)))
    return _sym(rows, cols, vals, P)


def st7_order(X, Y, Z, order):
    wx, wy, wz = 2.4e5, 4e5, 7e5     # anisotropic subdomains: the z faces are the largest
    W = _grid3d(X, Y, Z, [(1, 0, 0, wx), (0, 1, 0, wy), (0, 0, 1, wz)], order)
    return W, (f"3-D 7-point, {X} x {Y} x {Z} grid, faces x/y/z {wx:.3g}/{wy:.3g}/{wz:.3g} B, non-periodic, "
               f"{order} ranks")


def fft_pencil(Pr, Pc, colmajor, N=1024):
    """2-D pencil decomposition of an N^3 complex FFT: all-to-all within each row (Pc ranks)
    and within each column (Pr ranks); per pair: local volume / communicator size."""
    P = Pr * Pc
    g = np.arange(P)
    r, c = g // Pc, g % Pc
    rank = c * Pr + r if colmajor else g
    vol = N ** 3 * 16 / P
    rows, cols, vals = [], [], []
    for grp, size in ((r, Pc), (c, Pr)):
        order = np.argsort(grp, kind="stable")
        for k in range(grp.max() + 1):
            m = order[grp[order] == k]
            i, j = np.triu_indices(len(m), 1)
            rows.append(rank[m[i]]); cols.append(rank[m[j]]); vals.append(np.full(len(i), vol / size))
    return _sym(rows, cols, vals, P), (
        f"3-D FFT {N}^3, 2-D pencils {Pr} x {Pc}: all-to-all in rows of {Pc} ({vol/Pc:.3g} B/pair) and "
        f"columns of {Pr} ({vol/Pr:.3g} B/pair), {'column' if colmajor else 'row'}-major ranks")


def _ghosts(A: sp.csr_matrix, owner: np.ndarray, P: int) -> sp.csr_matrix:
    """SpMV halo: 8 B from rank q to rank p per distinct x_v that p references and q owns."""
    C = A.tocoo()
    p, v = owner[C.row], C.col
    m = p != owner[v]
    key = np.unique(p[m].astype(np.int64) * A.shape[0] + v[m])
    pp, vv = key // A.shape[0], key % A.shape[0]
    return _sym([pp], [owner[vv]], [np.full(len(pp), 8.0)], P)


def spmv_rgg(P, dim, ordering, seed, per=150, deg=12):
    rng = _rng("rgg", P, dim, seed)
    N = P * per
    Xp = rng.random((N, dim))
    r = (deg / (N * (np.pi if dim == 2 else 4 / 3 * np.pi))) ** (1 / dim)
    pairs = cKDTree(Xp).query_pairs(r, output_type="ndarray")
    A = sp.csr_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(N, N))
    A = (A + A.T).tocsr()
    if ordering == "morton":
        q = np.minimum((Xp * 1024).astype(np.int64), 1023)
        key = np.zeros(N, dtype=np.int64)
        for b in range(10):
            for d in range(dim):
                key |= ((q[:, d] >> b) & 1) << (dim * b + d)
        perm = np.argsort(key, kind="stable")
    else:
        perm = np.asarray(reverse_cuthill_mckee(A, symmetric_mode=True))
    pos = np.empty(N, dtype=np.int64)
    pos[perm] = np.arange(N)
    W = _ghosts(A, pos * P // N, P)                # contiguous row blocks of the reordered matrix
    return W, (f"SpMV halo of a {dim}-D random geometric graph ({N} vertices, mean degree ~{deg}), "
               f"{ordering.upper()} ordering, contiguous row blocks per rank, 8 B per ghost entry")


def spmv_banded(P, seed, rows_per=256, nnz_row=24):
    """Offsets mostly near the diagonal (exponential, out to ~3 row blocks), 0.2 % anywhere."""
    rng = _rng("banded", P, seed)
    N = P * rows_per
    i = np.repeat(np.arange(N), nnz_row)
    off = np.rint(rng.standard_exponential(len(i)) * rows_per * 0.6).astype(np.int64)
    off *= np.where(rng.random(len(i)) < 0.5, -1, 1)
    far = rng.random(len(i)) < 0.002
    off[far] = rng.integers(-N, N, int(far.sum()))
    j = i + off
    ok = (j >= 0) & (j < N) & (j != i)
    A = sp.csr_matrix((np.ones(int(ok.sum())), (i[ok], j[ok])), shape=(N, N))
    A = ((A + A.T) > 0).astype(np.float64).tocsr()
    W = _ghosts(A, np.arange(N) * P // N, P)
    return W, (f"SpMV halo of a banded sparse matrix ({N} rows, ~{nnz_row} nnz/row, exponential band of "
               f"~{0.6*rows_per:.0f} rows, 0.2 % far entries), {rows_per} rows per rank")


def particle(X, Y, Z, seed, far=3):
    rng = _rng("particle", X, Y, Z, seed)
    offs = [(dx, dy, dz, {1: 8e5, 2: 9e4, 3: 1e4}[abs(dx) + abs(dy) + abs(dz)])
            for dx in (-1, 0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1) if (dx, dy, dz) > (0, 0, 0)]
    W = _grid3d(X, Y, Z, offs, "xfast")
    P = X * Y * Z
    src = np.repeat(np.arange(P), far)
    dst = rng.integers(0, P, len(src))
    ok = src != dst
    W = (W + _sym([src[ok]], [dst[ok]], [rng.uniform(4e4, 1.6e5, int(ok.sum()))], P)).tocsr()
    W.sort_indices()
    return W, (f"particle code: {X} x {Y} x {Z} domains, 26 neighbours (faces 800 kB, edges 90 kB, corners 10 kB), "
               f"+ {far} random long-range partners per rank (40-160 kB), x-fastest ranks")


def multiphysics(P, interleaved):
    """Fluid (3-D 7-point, the most cubic grid of at most 2P/3 ranks) and structure (2-D
    9-point) sub-communicators, coupled lightly at the fluid's bottom face."""
    _, Xf, Yf, Zf = min((max(X, Y, Z) / min(X, Y, Z), X, Y, Z)
                        for X in range(4, 33) for Y in range(4, 33) for Z in [(2 * P) // 3 // (X * Y)]
                        if (2 * P) // 3 % (X * Y) == 0 and 2 <= Z <= 32)
    nf = Xf * Yf * Zf
    ns = P - nf
    Ys = int(np.floor(np.sqrt(ns)))
    while ns % Ys:
        Ys -= 1
    Xs = ns // Ys
    Cf = _grid3d(Xf, Yf, Zf, [(1, 0, 0, 5e5), (0, 1, 0, 5e5), (0, 0, 1, 3e5)], "xfast").tocoo()
    Cs = _grid2d(Xs, Ys, [(1, 0, 2e5), (0, 1, 2e5), (1, 1, 2e4), (1, -1, 2e4)]).tocoo()
    if interleaved:          # MPI_Comm_split by rank % 3 == 2 (structure), trimmed to ns ranks
        is_s = np.arange(P) % 3 == 2
        extra = int(is_s.sum()) - ns
        if extra > 0:
            is_s[np.flatnonzero(is_s)[-extra:]] = False
        elif extra < 0:
            is_s[np.flatnonzero(~is_s)[::-1][:-extra]] = True
        gf, gs = np.flatnonzero(~is_s), np.flatnonzero(is_s)
    else:
        gf, gs = np.arange(nf), np.arange(nf, P)
    s = np.arange(ns)
    f = (s % Xs * Xf) // Xs + Xf * ((s // Xs * Yf) // Ys)     # the fluid rank on face z = 0 above it
    W = _sym([gf[Cf.row], gs[Cs.row], gs], [gf[Cf.col], gs[Cs.col], gf[f]],
             [Cf.data / 2, Cs.data / 2, np.full(ns, 6e4)], P)
    return W, (f"multi-physics: fluid 3-D 7-point {Xf}x{Yf}x{Zf} ({nf} ranks) + structure 2-D 9-point {Xs}x{Ys} "
               f"({ns} ranks), coupled at the fluid's bottom face (60 kB), "
               f"{'interleaved (rank % 3 == 2: structure)' if interleaved else 'two contiguous blocks'}")


def hubs(P, seed, frac=0.05):
    rng = _rng("hubs", P, seed)
    H = max(2, int(round(frac * P)))
    hub = np.sort(rng.choice(P, H, replace=False))
    is_hub = np.zeros(P, bool)
    is_hub[hub] = True
    normal = np.flatnonzero(~is_hub)
    m = len(normal)
    rows = [normal[:-1], normal[:-2], normal, normal]
    cols = [normal[1:], normal[2:], hub[np.arange(m) * H // m], hub[rng.integers(0, H, m)]]
    vals = [np.full(m - 1, 3e5), np.full(m - 2, 6e4), np.full(m, 1.2e5), np.full(m, 2e4)]
    i, j = np.triu_indices(H, 1)
    W = _sym(rows + [hub[i]], cols + [hub[j]], vals + [np.full(len(i), 4e5)], P)
    return W, (f"hubs: {H} hub ranks (5 %, random positions) all-to-all 400 kB; {m} workers in a 1-D halo "
               f"(+-1: 300 kB, +-2: 60 kB), each to its own hub (120 kB, contiguous groups) and a random hub (20 kB)")


def lu_wavefront(Px, Py):
    """LU on a Px x Py process grid: wavefront pipeline east/south (NPB LU style) + panel
    broadcast as a ring along each row (HPL style) + pivot search as recursive doubling in
    each column."""
    P = Px * Py
    g = np.arange(P)
    x, y = g % Px, g // Px
    rows, cols, vals = [], [], []
    for dx, dy, w in ((1, 0, 9e5), (0, 1, 6e5)):
        ok = (x + dx < Px) & (y + dy < Py)
        rows.append(g[ok]); cols.append((x + dx + Px * (y + dy))[ok]); vals.append(np.full(int(ok.sum()), w))
    rows.append(g); cols.append((x + 1) % Px + Px * y); vals.append(np.full(P, 2.5e5))
    k = 1
    while k < Py:
        ok = (y ^ k) < Py
        rows.append(g[ok]); cols.append((x + Px * (y ^ k))[ok]); vals.append(np.full(int(ok.sum()), 1.5e4))
        k <<= 1
    return _sym(rows, cols, vals, P), (
        f"LU on a {Px} x {Py} grid: wavefront east 900 kB / south 600 kB, panel ring along rows 250 kB, "
        f"pivot recursive doubling in columns 15 kB, x-fastest ranks")


def _perm(made, seed):
    W, note = made
    return _renumber(W, seed), note + ", renumbered at random"


# ----------------------------------------------------------------------------- machines

def machine(kind, **p) -> tuple:
    """(keyword arguments of rankmap.mapper.machine.build, description)."""
    if kind in ("q4x8", "fat64", "dual24", "numa"):
        spec, costs, what = {"q4x8": ("pack:4 core:8", "1000,100,10", "4 x 8"),
                             "fat64": ("pack:1 core:64", "1000,100,10", "1 x 64"),
                             "dual24": ("pack:2 core:24", "800,80,8", "2 x 24"),
                             "numa": ("pack:2 numa:4 core:8", "1500,300,60,6", "2 packages x 4 NUMA x 8")}[kind]
        return (dict(hosts=_hosts(p["nodes"]), topo_specs=[spec], level_costs=costs),
                f"{p['nodes']} x ({what}), {costs.replace(',', '/')}")
    if kind == "racks":              # a switch tree of uneven racks
        hs = _hosts(sum(p["racks"]))
        rack = np.repeat(np.arange(len(p["racks"])), p["racks"])
        paths = {h: ["top", f"rack{r}"] for h, r in zip(hs, rack)}
        return (dict(hosts=hs, topo_specs=[p["spec"]], network={"kind": "switches", "paths": paths},
                     level_costs="3000,1000,100,10"),
                f"3-level tree: racks of {'/'.join(map(str, p['racks']))} nodes of ({p['spec']}), 3000/1000/100/10")
    if kind in ("torus", "mesh"):
        n = int(np.prod([int(d) for d in p["dims"].split("x")]))
        return (dict(hosts=_hosts(n), topo_specs=[p["spec"]], **{kind: p["dims"]}, level_costs=p["costs"]),
                f"{'torus' if kind == 'torus' else 'mesh (no wrap)'} {p['dims']} of ({p['spec']}), "
                f"{p['costs'].replace(',', '/')} (hop = node cost)")
    if kind == "dragonfly":
        n = int(np.prod([int(d) for d in p["dims"].split("x")]))
        return (dict(hosts=_hosts(n), topo_specs=[p["spec"]], network=f"dragonfly:{p['dims']}",
                     level_costs="4000,1500,500,50,5"),
                f"dragonfly {p['dims']} (groups x routers x nodes) of ({p['spec']}), "
                f"group/router/node/pack/core 4000/1500/500/50/5")
    if kind == "mixed":              # three node types, one leaf switch each
        hs = _hosts(24)
        specs = [",".join(hs[k:k + 8]) + "=" + t for k, t in zip((0, 8, 16), ("pack:1 core:64", "pack:2 core:24",
                                                                              "pack:4 core:8"))]
        return (dict(hosts=hs, topo_specs=specs, switches="3x8", level_costs="3000,1000,100,10"),
                "mixed: 3 leaf switches of 8 nodes: 8 x (1 x 64), 8 x (2 x 24), 8 x (4 x 8) (1152 slots), "
                "3000/1000/100/10")
    raise ValueError(kind)


# ----------------------------------------------------------------------------- the instances

T444 = dict(dims="4x4x4", spec="pack:2 core:8", costs="1000,100,10")
DF442 = dict(dims="4x4x2", spec="pack:2 core:16")
R576 = dict(racks=(5, 7, 6), spec="pack:2 core:16")
R1152 = dict(racks=(5, 7, 6), spec="pack:2 core:32")

# (name, traffic -> (W, note), machine kind, machine parameters); % in a name = the fill
FRESH = [
    ("st5x3-64x16/q4x8", lambda: st5_aniso(64, 16, "xfast"), "q4x8", dict(nodes=32)),
    ("st5x3-40x24-yfast/dual24", lambda: st5_aniso(40, 24, "yfast"), "dual24", dict(nodes=20)),
    ("st5x3-50x18/q4x8-83%", lambda: st5_aniso(50, 18, "xfast"), "q4x8", dict(nodes=34)),
    ("st5x3-32x32-perm/torus444", lambda: _perm(st5_aniso(32, 32, "xfast"), 2711), "torus", T444),
    ("st9-36x32/racks5-7-6x64", lambda: st9_aniso(36, 32, "xfast"), "racks", R1152),
    ("st9-48x32-yfast/fat64", lambda: st9_aniso(48, 32, "yfast"), "fat64", dict(nodes=24)),
    ("st9-32x30-perm/dual24", lambda: _perm(st9_aniso(32, 30, "xfast"), 4242), "dual24", dict(nodes=20)),
    ("st7-16x8x8-hilbert/torus444", lambda: st7_order(16, 8, 8, "hilbert"), "torus", T444),
    ("st7-12x10x8-snake/dual24", lambda: st7_order(12, 10, 8, "snake"), "dual24", dict(nodes=20)),
    ("st7-8x8x16-hilbert/fat64", lambda: st7_order(8, 8, 16, "hilbert"), "fat64", dict(nodes=16)),
    ("st7-16x16x8-yzx/q4x8", lambda: st7_order(16, 16, 8, "yzx"), "q4x8", dict(nodes=64)),
    ("fft-24x40/dual24", lambda: fft_pencil(24, 40, False), "dual24", dict(nodes=20)),
    ("fft-16x64-col/torus6x6-89%", lambda: fft_pencil(16, 64, True), "torus",
     dict(dims="6x6", spec="pack:2 core:16", costs="2000,200,20")),
    ("fft-12x64/fat64", lambda: fft_pencil(12, 64, False), "fat64", dict(nodes=12)),
    ("spmv-rgg3d-morton/dragonfly", lambda: spmv_rgg(1024, 3, "morton", 1), "dragonfly", DF442),
    ("spmv-rgg2d-rcm/racks5-7-6x64", lambda: spmv_rgg(1152, 2, "rcm", 2), "racks", R1152),
    ("spmv-banded-1024/q4x8", lambda: spmv_banded(1024, 3), "q4x8", dict(nodes=32)),
    ("spmv-banded-1800/fat64-88%", lambda: spmv_banded(1800, 4), "fat64", dict(nodes=32)),
    ("particle-16x8x8/torus444", lambda: particle(16, 8, 8, 5), "torus", T444),
    ("particle-16x12x8/dual24-80%", lambda: particle(16, 12, 8, 6), "dual24", dict(nodes=40)),
    ("particle-12x12x8-perm/mixed", lambda: _perm(particle(12, 12, 8, 7), 99), "mixed", {}),
    ("multi-1024/dragonfly", lambda: multiphysics(1024, False), "dragonfly", DF442),
    ("multi-960-interleaved/dual24", lambda: multiphysics(960, True), "dual24", dict(nodes=20)),
    ("multi-1536-interleaved/numa", lambda: multiphysics(1536, True), "numa", dict(nodes=24)),
    ("hubs-1024/fat64", lambda: hubs(1024, 11), "fat64", dict(nodes=16)),
    ("hubs-1152/mixed", lambda: hubs(1152, 12), "mixed", {}),
    ("hubs-512/racks5-7-6x32-89%", lambda: hubs(512, 13), "racks", R576),
    ("lu-32x32/dragonfly", lambda: lu_wavefront(32, 32), "dragonfly", DF442),
    ("lu-40x30/q4x8-85%", lambda: lu_wavefront(40, 30), "q4x8", dict(nodes=44)),
    ("lu-24x24/racks5-7-6x32", lambda: lu_wavefront(24, 24), "racks", R576),
    ("fft-32x32-perm/numa", lambda: _perm(fft_pencil(32, 32, False, N=768), 5150), "numa", dict(nodes=16)),
    # the second batch, added after the first had run: more sizes, a mesh, other torus costs
    ("st5x3-128x16/q4x8", lambda: st5_aniso(128, 16, "xfast"), "q4x8", dict(nodes=64)),
    ("st9-28x24/dual24-88%", lambda: st9_aniso(28, 24, "xfast"), "dual24", dict(nodes=16)),
    ("st7-10x10x10-snake/torus444-c2000", lambda: st7_order(10, 10, 10, "snake"), "torus",
     dict(T444, costs="2000,250,25")),
    ("st7-12x12x12-hilbert/fat64-96%", lambda: st7_order(12, 12, 12, "hilbert"), "fat64", dict(nodes=28)),
    ("st5x3-32x32/mesh4x4x4", lambda: st5_aniso(32, 32, "yfast"), "mesh", T444),
    ("fft-24x48/mixed", lambda: fft_pencil(24, 48, False), "mixed", {}),
    ("fft-8x64/racks5-7-6x32-89%", lambda: fft_pencil(8, 64, True), "racks", R576),
    ("spmv-rgg3d-rcm/numa", lambda: spmv_rgg(1536, 3, "rcm", 21), "numa", dict(nodes=24)),
    ("spmv-rgg2d-morton/dual24", lambda: spmv_rgg(960, 2, "morton", 22), "dual24", dict(nodes=20)),
    ("spmv-banded-576-perm/racks5-7-6x32", lambda: _perm(spmv_banded(576, 23), 777), "racks", R576),
    ("particle-8x8x8/q4x8", lambda: particle(8, 8, 8, 24), "q4x8", dict(nodes=16)),
    ("particle-16x16x8/dragonfly2048", lambda: particle(16, 16, 8, 25), "dragonfly", dict(DF442, dims="4x4x4")),
    ("multi-1152/mixed", lambda: multiphysics(1152, False), "mixed", {}),
    ("multi-1920-interleaved/fat64-94%", lambda: multiphysics(1920, True), "fat64", dict(nodes=32)),
    ("hubs-1500/torus6x6x48-87%", lambda: hubs(1500, 28), "torus", dict(dims="6x6", spec="pack:2 core:24",
                                                                        costs="2000,200,20")),
    ("lu-48x40/torus8x8-94%", lambda: lu_wavefront(48, 40), "torus", dict(dims="8x8", spec="pack:2 core:16",
                                                                          costs="2000,200,20")),
    ("lu-32x32-perm/q4x8", lambda: _perm(lu_wavefront(32, 32), 31337), "q4x8", dict(nodes=32)),
]
def fixed_family(table: list, machine_of) -> tuple:
    """(NAMES, build) of a family of fixed instances: table rows (name, traffic -> (W, note),
    machine kind, machine parameters), machine_of(kind, **parameters) -> (keyword arguments
    of rankmap.mapper.machine.build, description). build(name) gives (W, traffic note,
    machine.build keyword arguments, machine note)."""
    by_name = {f[0]: f[1:] for f in table}

    def build(name: str) -> tuple:
        make, kind, params = by_name[name]
        W, tnote = make()
        kw, mnote = machine_of(kind, **params)
        return sp.csr_matrix(W, dtype=np.float64), tnote, kw, mnote
    return tuple(f[0] for f in table), build


NAMES, build = fixed_family(FRESH, machine)
