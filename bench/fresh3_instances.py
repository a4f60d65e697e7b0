"""The `fresh3` family of the anchor benchmark: 36 held-out instances of 512-4,096 ranks, a third
set built by someone who had not seen the mapper's tuning, apart from `fresh` and `fresh2`
(bench/fresh_instances.py, bench/fresh2_instances.py), to probe traffic and machines that none
of the families generate (bench/instances.py; holdout only, run only when named:
`bench/mapper_anchors.py --set holdout --families fresh3`).

Traffic: short-range molecular dynamics (a cutoff sphere over 2 domains: up to ~116 neighbours
whose bytes fall with the gap between the domains) with separate PME ranks (1 per 3 particle
ranks, GROMACS-style: interleaved or all at the end) that do a 2-D pencil FFT among themselves;
lattice QCD 4-D halos, periodic in all four dimensions, on non-power-of-2 process grids (6^4,
3 x 9^3, 5 x 6 x 6 x 10; faces by the local lattice, one order t fastest); 3-D FFTs in
sub-communicators of uneven size, slabs (one dense all-to-all) next to pencils (rows and
columns), lightly coupled; a multifrontal sparse direct solver (nested dissection, uneven
elimination tree split 35-65 %: panel broadcasts in the rows and columns of each front's
process grid, heavy and local near the leaves, light and wide near the root, extend-add from
child to parent); an ocean with land masks (a 2-D stencil periodic in longitude with ~30 % of
the ranks removed in random blobs, the rest renumbered); particle-in-cell with 3 hot spots
(particle exchange up to 10x where the density is); ensembles (many independent jobs of 16-64
ranks, each a stencil, an all-to-all or a ring, contiguous or scattered); workflows of a heavy
chain (in rank order, or strided) plus a light all-to-all of every rank; a 2-D 9-point stencil
in Morton, Hilbert or 4 x 4-tiled rank order (and row-major at 4,095 ranks); nearly-uniform
dense traffic with 20 % noise (no structure: block is as good as any); a Barnes-Hut tree code
(clustered bodies, domains along a Morton curve, near domains heavy by 1/d^3, 12 far ones
light). Rank counts 512-4,096, among them 576, 1296, 2187, 3000 and 4095.
Machines: nodes of 2 x 64 (also with 96 ranks per node), 4 x 24 and 2 x 32 cores at
1000/900/10 (the node barely dearer than the socket), 8 GPUs per node as 2 x 4 ranks under
leaf switches of 12, a 4-level switch tree 2x3x4x4, a 3-level fat tree 3x4x6, dragonflies
3x8x2 and 4x8x2, 3-D tori 6x6x4 and 4x4x8 with nodes missing (100 of 144, 90 of 128: keyed
random holes), three node kinds (2 x 64, 2 x 24, GPU 2 x 4) in random order in one switch;
26 of the 36 partly filled (83-99 %; the % in a name). Each instance is fixed (no seed of the
set): its numbers can be quoted and rerun.
"""
from __future__ import annotations

import hashlib

import numpy as np
import scipy.sparse as sp
from scipy.spatial import cKDTree

from instances import _hosts, _renumber, _sym
from fresh_instances import _grid2d, _hilbert_key, _rank_of, fixed_family


def _rng(*key) -> np.random.Generator:
    # keyed apart from fresh's ("fresh27") and fresh2's ("fresh2")
    h = hashlib.sha256(repr(("fresh3",)).encode() + repr(key).encode()).digest()
    return np.random.default_rng(int.from_bytes(h[:8], "little"))


def _morton2(x, y, bits):
    k = np.zeros(len(x), dtype=np.int64)
    for b in range(bits):
        k |= ((x >> b) & 1) << (2 * b)
        k |= ((y >> b) & 1) << (2 * b + 1)
    return k


def _morton3(c, bits):
    k = np.zeros(len(c), dtype=np.int64)
    for b in range(bits):
        for a in range(3):
            k |= ((c[:, a] >> b) & 1) << (3 * b + a)
    return k


def _gridnd(dims, weights, periodic=True):
    """Halo of an n-D grid, first dimension fastest; weights[d] = bytes across dimension d."""
    dims = tuple(dims)
    P = int(np.prod(dims))
    idx = np.arange(P).reshape(dims[::-1])          # C order: the last axis (dims[0]) fastest
    rows, cols, vals = [], [], []
    for d, w in enumerate(weights):
        ax = len(dims) - 1 - d
        nb = np.roll(idx, -1, axis=ax)
        a, b = idx, nb
        if not periodic:
            sl = [slice(None)] * len(dims)
            sl[ax] = slice(0, dims[d] - 1)
            a, b = idx[tuple(sl)], nb[tuple(sl)]
        ok = a.ravel() != b.ravel()
        rows.append(a.ravel()[ok]); cols.append(b.ravel()[ok]); vals.append(np.full(int(ok.sum()), float(w)))
    return _sym(rows, cols, vals, P)


# ----------------------------------------------------------------------------- traffic

def md_pme(X, Y, Z, MX, MY, interleave):
    """Short-range MD on an X x Y x Z grid of particle (PP) ranks (x fastest): every domain
    within the cutoff rc = 1.5 domain widths (offsets up to 2 per axis, gap g < rc), bytes
    1 MB x (1 - g/rc)^2 x 0.6^(axes crossed - 1); plus MX x MY PME ranks (1 per 3 PP ranks):
    PP rank i sends its charges to PME rank i // 3 (300 kB), the PME ranks do a 2-D pencil FFT
    (all-to-all in the rows and columns of their grid, 80 kB a pair). Ranks: interleaved
    (3 PP, 1 PME, ...: GROMACS's -ddorder interleave) or all PP first (pp_pme)."""
    Npp, Npme = X * Y * Z, MX * MY
    assert Npp == 3 * Npme
    P = Npp + Npme
    if interleave:
        pp = np.arange(Npp) + np.arange(Npp) // 3
        pme = 4 * np.arange(Npme) + 3
    else:
        pp, pme = np.arange(Npp), Npp + np.arange(Npme)
    g = np.arange(Npp)
    x, y, z = g % X, (g // X) % Y, g // (X * Y)
    rc = 1.5
    rows, cols, vals = [], [], []
    for dx in range(-2, 3):
        for dy in range(-2, 3):
            for dz in range(-2, 3):
                if (dx, dy, dz) <= (0, 0, 0):
                    continue
                d = np.abs([dx, dy, dz])
                gap = float(np.sqrt(sum((v - 1) ** 2 for v in d if v)))
                if gap >= rc:
                    continue
                w = 1e6 * (1 - gap / rc) ** 2 * 0.6 ** (int((d > 0).sum()) - 1)
                cx, cy, cz = x + dx, y + dy, z + dz
                ok = (cx >= 0) & (cx < X) & (cy >= 0) & (cy < Y) & (cz >= 0) & (cz < Z)
                j = cx + X * (cy + Y * cz)
                rows.append(pp[g[ok]]); cols.append(pp[j[ok]]); vals.append(np.full(int(ok.sum()), w))
    rows.append(pp); cols.append(pme[g // 3]); vals.append(np.full(Npp, 3e5))
    m = np.arange(Npme)
    mi, mj = m % MX, m // MX
    a, b = np.meshgrid(m, m, indexing="ij")
    same = ((mi[a] == mi[b]) | (mj[a] == mj[b])) & (a < b)
    rows.append(pme[a[same]]); cols.append(pme[b[same]]); vals.append(np.full(int(same.sum()), 8e4))
    W = _sym(rows, cols, vals, P)
    return W, (f"short-range MD, {X} x {Y} x {Z} PP ranks, cutoff 1.5 domains (neighbours up to 2 away, 1 MB x "
               f"(1 - gap/rc)^2 x 0.6^(axes-1)), + {MX} x {MY} PME ranks (PP i -> PME i//3 300 kB, pencil FFT "
               f"all-to-all in PME rows/columns 80 kB), ranks {'interleaved 3 PP + 1 PME' if interleave else 'PP then PME'}")


def lqcd(dims, lattice=(48, 48, 48, 96), tfast=False):
    """Lattice QCD Wilson-Dirac halo: 4-D, periodic in all four; bytes across dimension d =
    the local lattice's face (the product of the other local extents) x 96 B per site
    (a spin-projected half spinor, double); ranks x fastest, or t fastest."""
    loc = [L / p for L, p in zip(lattice, dims)]
    w = [96.0 * float(np.prod([loc[e] for e in range(4) if e != d])) for d in range(4)]
    if tfast:
        W = _gridnd(dims[::-1], w[::-1])
    else:
        W = _gridnd(dims, w)
    return W, (f"lattice QCD 4-D halo, process grid {'x'.join(map(str, dims))} on a "
               f"{'x'.join(map(str, lattice))} lattice, periodic in all 4, faces x/y/z/t "
               f"{'/'.join(f'{v / 1e3:.0f}' for v in w)} kB, ranks {'t' if tfast else 'x'} fastest")


def fft_groups(groups, field=2 ** 31):
    """Sub-communicators of uneven size, one after another in rank order, each transposing a
    3-D FFT of `field` bytes: a slab group (one all-to-all, field / s^2 a pair) or a pencil
    group P1 x P2 (all-to-all in rows and in columns, field / (s * P1) and / (s * P2)); the k-th
    rank of a group sends 20 kB to the k-th of the next (the fields are coupled)."""
    rows, cols, vals = [], [], []
    off, parts, spans = 0, [], []
    for gdef in groups:
        if isinstance(gdef, int):
            s = gdef
            a, b = np.triu_indices(s, 1)
            rows.append(off + a); cols.append(off + b); vals.append(np.full(len(a), field / s / s))
            parts.append(f"slab {s}")
        else:
            P1, P2 = gdef
            s = P1 * P2
            m = np.arange(s)
            i, j = m % P1, m // P1
            a, b = np.meshgrid(m, m, indexing="ij")
            for same, k in ((j, P1), (i, P2)):
                msk = (same[a] == same[b]) & (a < b)
                rows.append(off + a[msk]); cols.append(off + b[msk]); vals.append(np.full(int(msk.sum()), field / s / k))
            parts.append(f"pencil {P1}x{P2}")
        spans.append((off, s))
        off += s
    for (o1, s1), (o2, s2) in zip(spans, spans[1:]):
        k = min(s1, s2)
        rows.append(o1 + np.arange(k)); cols.append(o2 + np.arange(k)); vals.append(np.full(k, 2e4))
    W = _sym(rows, cols, vals, off)
    return W, (f"3-D FFTs ({field / 2**30:.0f} GiB each) in uneven sub-communicators {', '.join(parts)} "
               f"({off} ranks, contiguous), 20 kB between the k-th ranks of consecutive groups")


def nested_dissection(P, per_rank=20000, seed=0):
    """Multifrontal sparse direct solve of a 3-D problem (per_rank unknowns per rank), nested
    dissection with subtree-to-subcube mapping: the rank range splits at an uneven point
    (35-65 %, keyed) down to single ranks; each separator's front (S = n^(2/3) of its n
    unknowns, S^2 x 8 B) lives on its group's ranks as a pr x pc grid (row-major, pr =
    floor(sqrt s)) with panel broadcasts in rows and columns (front bytes / (s (pr + pc)) a
    pair); extend-add: each child rank sends its share of the child's front to the rank at the
    same relative place in the parent group."""
    rng = _rng("nd", P, seed)
    rows, cols, vals = [], [], []
    stack = [(0, P, float(P * per_rank))]
    while stack:
        lo, hi, n = stack.pop()
        s = hi - lo
        if s < 2:
            continue
        S = n ** (2 / 3)
        F = S * S * 8.0
        pr = int(np.floor(np.sqrt(s)))
        pc = -(-s // pr)
        m = np.arange(s)
        i, j = m // pc, m % pc
        a, b = np.triu_indices(s, 1)
        msk = (i[a] == i[b]) | (j[a] == j[b])
        rows.append(lo + a[msk]); cols.append(lo + b[msk]); vals.append(np.full(int(msk.sum()), F / (s * (pr + pc))))
        left = int(min(s - 1, max(1, round(s * rng.uniform(0.35, 0.65)))))
        for clo, chi in ((lo, lo + left), (lo + left, hi)):
            cs = chi - clo
            cn = (n - S) * cs / s
            if cs >= 2:
                Fc = (cn ** (2 / 3)) ** 2 * 8.0
                r = np.arange(clo, chi)
                tgt = lo + ((r - clo) * s) // cs
                ok = tgt != r
                rows.append(r[ok]); cols.append(tgt[ok]); vals.append(np.full(int(ok.sum()), 0.5 * Fc / cs))
            stack.append((clo, chi, cn))
    W = _sym(rows, cols, vals, P)
    return W, (f"multifrontal sparse direct solver, 3-D, {per_rank} unknowns per rank, nested dissection on {P} "
               "ranks (uneven splits 35-65 %): panel broadcasts in each front's process grid rows/columns, "
               "extend-add child -> parent")


def ocean_mask(X, Y, land, order="xfast", seed=0):
    """Ocean model: 2-D 9-point on an X x Y grid periodic in x (longitude), faces x 200 kB,
    y 300 kB, corners 10 kB; about `land` of the cells removed in random round blobs
    (continents: no rank there), the ocean ranks renumbered compactly in `order`."""
    rng = _rng("ocean", X, Y, land, seed)
    xs, ys = np.meshgrid(np.arange(X), np.arange(Y), indexing="xy")
    wet = np.ones((Y, X), bool)
    while 1 - wet.mean() < land:
        cx, cy = rng.uniform(0, X), rng.uniform(0, Y)
        r = rng.uniform(0.04, 0.14) * min(X, Y) + 1
        dx = np.minimum(np.abs(xs - cx), X - np.abs(xs - cx))
        wet &= (dx / 1.3) ** 2 + (ys - cy) ** 2 > r * r
    full = _grid2d(X, Y, [(1, 0, 2e5), (0, 1, 3e5), (1, 1, 1e4), (1, -1, 1e4)], periodic=(True, False))
    keep = wet.ravel()                               # x-fastest cell index
    if order == "xfast":
        key = np.arange(X * Y)
    else:
        key = (np.arange(X * Y) % X) * Y + np.arange(X * Y) // X
    cells = np.flatnonzero(keep)
    cells = cells[np.argsort(key[cells], kind="stable")]
    W = full[cells][:, cells].tocsr()
    W.sort_indices()
    return W, (f"ocean: 2-D 9-point on {X} x {Y} periodic in x (faces x 200 kB, y 300 kB, corners 10 kB), "
               f"{1 - keep.mean():.0%} land in random blobs removed, {len(cells)} ocean ranks renumbered "
               f"{'x' if order == 'xfast' else 'y'} fastest")


def pic_hot(X, Y, Z, order="xfast", seed=0):
    """Particle-in-cell: 3-D field halo (7-point, 100 kB), particle migration to all 26
    neighbours scaled by the local density (1 + 9 exp(-r^2/2s^2) around 3 hot spots: up to
    10x): faces 50 kB, edges 5 kB, corners 500 B times sqrt(rho_i rho_j)."""
    rng = _rng("pic", X, Y, Z, seed)
    P = X * Y * Z
    g = np.arange(P)
    x, y, z = g % X, (g // X) % Y, g // (X * Y)
    pos = np.stack([x, y, z], 1).astype(float)
    rho = np.ones(P)
    for _ in range(3):
        c = rng.uniform(0, 1, 3) * [X, Y, Z]
        s = rng.uniform(1.0, 2.0)
        rho += 9 * np.exp(-((pos - c) ** 2).sum(1) / (2 * s * s))
    rank = g if order == "xfast" else _rank_of(_hilbert_key(pos.astype(np.int64), int(np.ceil(np.log2(max(X, Y, Z))))))
    rows, cols, vals = [], [], []
    for dx in (-1, 0, 1):
        for dy in (-1, 0, 1):
            for dz in (-1, 0, 1):
                if (dx, dy, dz) <= (0, 0, 0):
                    continue
                k = abs(dx) + abs(dy) + abs(dz)
                cx, cy, cz = x + dx, y + dy, z + dz
                ok = (cx >= 0) & (cx < X) & (cy >= 0) & (cy < Y) & (cz >= 0) & (cz < Z)
                j = (cx + X * (cy + Y * cz))[ok]
                i = g[ok]
                w = (5e4, 5e3, 5e2)[k - 1] * np.sqrt(rho[i] * rho[j]) + (1e5 if k == 1 else 0)
                rows.append(rank[i]); cols.append(rank[j]); vals.append(w)
    W = _sym(rows, cols, vals, P)
    return W, (f"particle-in-cell {X} x {Y} x {Z}: field halo 7-point 100 kB + particle migration to 26 neighbours "
               f"(50 kB/5 kB/500 B) x density, 3 hot spots up to 10x, {order} ranks")


def ensemble(P, seed, scatter=False):
    """Many independent jobs in one allocation, 16-64 ranks each (sizes keyed), contiguous
    rank ranges: each a 2-D 5-point stencil (500 kB), a dense all-to-all (40 kB a pair) or a
    ring (+-1 1 MB, +-2 100 kB); nothing between the jobs. scatter: the ranks renumbered at
    random (a launcher handing out ranks in no order)."""
    rng = _rng("ens", P, seed)
    rows, cols, vals, kinds = [], [], [], []
    off = 0
    while off < P:
        s = int(rng.choice([16, 20, 24, 32, 36, 40, 48, 56, 64]))
        s = min(s, P - off)
        kind = ("st", "a2a", "ring")[int(rng.integers(3))] if s >= 4 else "a2a"
        if kind == "st":
            fx = max(f for f in range(1, int(np.sqrt(s)) + 1) if s % f == 0)
            G = _grid2d(s // fx, fx, [(1, 0, 5e5), (0, 1, 5e5)]).tocoo()
            rows.append(off + G.row); cols.append(off + G.col); vals.append(G.data / 2)
        elif kind == "a2a":
            a, b = np.triu_indices(s, 1)
            rows.append(off + a); cols.append(off + b); vals.append(np.full(len(a), 4e4))
        else:
            r = np.arange(s)
            rows += [off + r, off + r]; cols += [off + (r + 1) % s, off + (r + 2) % s]
            vals += [np.full(s, 1e6), np.full(s, 1e5)]
        kinds.append(s)
        off += s
    W = _sym(rows, cols, vals, P)
    note = (f"ensemble of {len(kinds)} independent jobs of 16-64 ranks ({P} ranks: stencil 500 kB / all-to-all "
            "40 kB / ring 1 MB), contiguous ranks")
    if scatter:
        W, note = _renumber(W, 3000 + seed), note + ", renumbered at random"
    return W, note


def workflow(P, stride):
    """A heavy pipeline chain (10 MB between consecutive stages) through every rank, the
    chain visiting ranks 0, s, 2s, ... (mod P, s coprime to P; s = 1: rank order), plus a light
    all-to-all of every rank (200 B a pair: the workflow's metadata exchange)."""
    order = (np.arange(P) * stride) % P
    assert len(np.unique(order)) == P
    a, b = np.triu_indices(P, 1)
    W = _sym([order[:-1], a], [order[1:], b], [np.full(P - 1, 1e7), np.full(len(a), 200.0)], P)
    return W, (f"workflow: a chain of {P} stages (10 MB per link) visiting ranks with stride {stride}, plus an "
               "all-to-all of every rank (200 B a pair)")


def sfc9(X, Y, order):
    """2-D 9-point (faces 400 kB, corners 30 kB), non-periodic, ranks along a Morton or
    Hilbert curve over the grid (non-power-of-2: the curve's cells outside skipped), in
    4 x 4 tiles (row-major tiles, row-major inside), or row-major."""
    P = X * Y
    g = np.arange(P)
    x, y = g % X, g // X
    bits = int(np.ceil(np.log2(max(X, Y))))
    if order == "morton":
        rank = _rank_of(_morton2(x, y, bits))
    elif order == "hilbert":
        rank = _rank_of(_hilbert_key(np.stack([x, y], 1), bits))
    elif order == "tiles4":
        rank = _rank_of((((y // 4) * (-(-X // 4)) + x // 4) * 16 + (y % 4) * 4 + x % 4).astype(np.int64))
    else:
        rank = g
    W = _grid2d(X, Y, [(1, 0, 4e5), (0, 1, 4e5), (1, 1, 3e4), (1, -1, 3e4)]).tocoo()
    W = sp.csr_matrix((W.data, (rank[W.row], rank[W.col])), shape=(P, P))
    W.sort_indices()
    return W, f"2-D 9-point {X} x {Y} (faces 400 kB, corners 30 kB), non-periodic, ranks in {order} order"


def dense_noise(P):
    rng = _rng("dense", P)
    a, b = np.triu_indices(P, 1)
    W = _sym([a], [b], [1e4 * (1 + 0.2 * rng.random(len(a)))], P)
    return W, f"nearly uniform dense traffic: every pair of {P} ranks 10-12 kB (20 % noise)"


def treecode(P, seed):
    """Barnes-Hut gravity: clustered bodies (5 Plummer-like clumps), one domain per rank
    along a Morton curve of the bodies (equal counts); each domain's centre talks to its 40
    nearest domains (1 MB / (1 + (d/d1)^3), d1 the nearest's distance) and to 12 far random
    ones (4 kB: multipole requests)."""
    rng = _rng("tree", P, seed)
    N = P * 64
    cen = rng.uniform(0.2, 0.8, (5, 3))
    lab = rng.integers(0, 5, N)
    r = rng.standard_normal((N, 3)) * rng.uniform(0.03, 0.12, 5)[lab, None]
    pts = np.clip(cen[lab] + r, 0, 0.999)
    key = _morton3((pts * 1024).astype(np.int64), 10)
    dom = np.empty(N, dtype=np.int64)
    dom[np.argsort(key, kind="stable")] = np.arange(N) * P // N
    c = np.zeros((P, 3))
    np.add.at(c, dom, pts)
    c /= np.bincount(dom, minlength=P)[:, None]
    d, nb = cKDTree(c).query(c, k=41)
    d1 = np.maximum(d[:, 1:2], 1e-9)
    w = 1e6 / (1 + (d[:, 1:] / d1) ** 3)
    far = rng.integers(0, P, (P, 12))
    g = np.arange(P)
    ok = far != g[:, None]
    W = _sym([np.repeat(g, 40), np.repeat(g, 12)[ok.ravel()]], [nb[:, 1:].ravel(), far.ravel()[ok.ravel()]],
             [w.ravel(), np.full(int(ok.sum()), 4e3)], P)
    return W, (f"Barnes-Hut tree code, {N} clustered bodies, {P} domains along a Morton curve: 40 nearest domains "
               "1 MB / (1 + (d/d1)^3), 12 random far domains 4 kB")


# ----------------------------------------------------------------------------- machines

NODES = {   # kind: (node spec, level costs, what)
    "n2x64": ("pack:2 core:64", "1000,100,10", "2 x 64"),
    "n4x24": ("pack:4 core:24", "2000,300,30", "4 x 24"),
    "gap": ("pack:2 core:32", "1000,900,10", "2 x 32"),
}


def _holed(dims, present, seed):
    rng = _rng("holes", dims, present, seed)
    D = [int(v) for v in dims.split("x")]
    allpos = np.stack(np.unravel_index(np.arange(int(np.prod(D))), D), 1)
    pick = np.sort(rng.choice(len(allpos), present, replace=False))
    hs = _hosts(present)
    return hs, {h: [int(v) for v in allpos[k]] for h, k in zip(hs, pick)}


def machine(kind, **p) -> tuple:
    """(keyword arguments of rankmap.mapper.machine.build, description)."""
    if kind in NODES:
        spec, costs, what = NODES[kind]
        return (dict(hosts=_hosts(p["nodes"]), topo_specs=[spec], level_costs=costs),
                f"{p['nodes']} x ({what}), {costs.replace(',', '/')}")
    if kind == "rpn96":              # 2 x 64 cores, 96 ranks per node
        return (dict(hosts=_hosts(p["nodes"]), topo_specs=["pack:2 core:64"], ranks_per_node=96,
                     level_costs="1500,120,12"),
                f"{p['nodes']} x (2 x 64) with 96 ranks per node, 1500/120/12")
    if kind == "gpu8":               # 8 GPUs per node (2 sockets x 4), leaf switches of 12 nodes
        n = p["nodes"]
        return (dict(hosts=_hosts(n), topo_specs=["pack:2 core:4"], switches=f"{-(-n // 12)}x12",
                     level_costs="8000,4000,300,40"),
                f"{-(-n // 12)} leaf switches x 12 nodes of 8 GPUs (2 x 4), {n} nodes, 8000/4000/300/40")
    if kind == "sw4":                # a 4-level switch tree, 96 nodes of 2 x 12
        return (dict(hosts=_hosts(96), topo_specs=["pack:2 core:12"], switches="2x3x4x4",
                     level_costs="6000,3000,1200,400,40,4"),
                "4-level switch tree 2x3x4x4 (96 nodes of 2 x 12, 2304 slots), 6000/3000/1200/400/40/4")
    if kind == "fat3x4x6":
        return (dict(hosts=_hosts(72), topo_specs=["pack:2 core:12"], network="fat-tree:3x4x6",
                     level_costs="4000,2000,500,50,5"),
                "fat tree 3x4x6 (72 nodes of 2 x 12, 1728 slots), 4000/2000/500/50/5")
    if kind == "dragonfly":
        n = int(np.prod([int(d) for d in p["dims"].split("x")]))
        return (dict(hosts=_hosts(n), topo_specs=[p["spec"]], network=f"dragonfly:{p['dims']}",
                     level_costs="2500,1800,400,40,4"),
                f"dragonfly {p['dims']} (groups x routers x nodes) of ({p['spec']}), "
                "group/router/node/pack/core 2500/1800/400/40/4")
    if kind == "torus-holes":
        hs, coords = _holed(p["dims"], p["present"], 1)
        return (dict(hosts=hs, topo_specs=[p["spec"]], torus=p["dims"], coords=coords, level_costs=p["costs"],
                     hop_cost=p["hop"]),
                f"3-D torus {p['dims']} with {p['present']} of its nodes present (random holes) of ({p['spec']}), "
                f"{p['costs'].replace(',', '/')}, hop {p['hop']}")
    if kind == "het1sw":             # three node kinds in random order, one flat switch
        kinds = ["pack:2 core:64"] * 6 + ["pack:2 core:24"] * 10 + ["pack:2 core:4"] * 8
        order = _rng("het1sw").permutation(len(kinds))
        hs = _hosts(len(kinds))
        by = {}
        for h, k in zip(hs, order):
            by.setdefault(kinds[k], []).append(h)
        specs = [",".join(v) + "=" + k for k, v in by.items()]
        return (dict(hosts=hs, topo_specs=specs, level_costs="1500,150,15"),
                "one switch, 24 nodes in random order: 6 x (2 x 64), 10 x (2 x 24), 8 GPU nodes (2 x 4) "
                "(1312 slots), 1500/150/15")
    raise ValueError(kind)


T664 = dict(dims="6x6x4", present=100, spec="pack:2 core:10", costs="1000,100,10", hop="500")   # 2000 slots
T448 = dict(dims="4x4x8", present=90, spec="pack:2 core:8", costs="1200,100,10", hop="700")     # 1440 slots
DF382 = dict(dims="3x8x2", spec="pack:2 core:24")                                              # 2304 slots
DF482 = dict(dims="4x8x2", spec="pack:2 core:24")                                              # 3072 slots

# (name, traffic -> (W, note), machine kind, machine parameters); % in a name = the fill
FRESH3 = [
    ("md-pme-12x12x9-il/n2x64-90%", lambda: md_pme(12, 12, 9, 24, 18, True), "n2x64", dict(nodes=15)),
    ("md-pme-10x10x9-pp/n4x24-96%", lambda: md_pme(10, 10, 9, 20, 15, False), "n4x24", dict(nodes=13)),
    ("md-pme-8x8x6-il/gpu8", lambda: md_pme(8, 8, 6, 16, 8, True), "gpu8", dict(nodes=64)),
    ("lqcd-6x6x6x6/gap-96%", lambda: lqcd((6, 6, 6, 6)), "gap", dict(nodes=21)),
    ("lqcd-5x6x6x10-tfast/torus6x6x4-holes-90%", lambda: lqcd((5, 6, 6, 10), (40, 48, 48, 120), True),
     "torus-holes", T664),
    ("lqcd-3x9x9x9/n2x64-95%", lambda: lqcd((3, 9, 9, 9), (24, 36, 36, 72)), "n2x64", dict(nodes=18)),
    ("lqcd-4x4x6x6/n4x24", lambda: lqcd((4, 4, 6, 6), (32, 32, 48, 96)), "n4x24", dict(nodes=6)),
    ("fft-s96-p24x40-p12x18/n4x24-95%", lambda: fft_groups([96, (24, 40), (12, 18)]), "n4x24", dict(nodes=14)),
    ("fft-s256-p16x48/gap", lambda: fft_groups([256, (16, 48)]), "gap", dict(nodes=16)),
    ("fft-p27x81/sw4-95%", lambda: fft_groups([(27, 81)]), "sw4", {}),
    ("fft-s48-s80-s128-p16x20/gpu8", lambda: fft_groups([48, 80, 128, (16, 20)]), "gpu8", dict(nodes=72)),
    ("nd-1000/gap-98%", lambda: nested_dissection(1000), "gap", dict(nodes=16)),
    ("nd-1536/fat3x4x6-89%", lambda: nested_dissection(1536, seed=1), "fat3x4x6", {}),
    ("nd-700/gpu8-91%", lambda: nested_dissection(700, per_rank=80000, seed=2), "gpu8", dict(nodes=96)),
    ("ocean-48x36-land30/rpn96-91%", lambda: ocean_mask(48, 36, 0.3), "rpn96", dict(nodes=13)),
    ("ocean-80x50-land30/n4x24-94%", lambda: ocean_mask(80, 50, 0.3, seed=1), "n4x24", dict(nodes=30)),
    ("ocean-72x40-land25-yfast/dragonfly3x8x2-91%", lambda: ocean_mask(72, 40, 0.25, "yfast", 2), "dragonfly", DF382),
    ("pic-16x12x10/sw4-83%", lambda: pic_hot(16, 12, 10), "sw4", {}),
    ("pic-20x15x10/n2x64-98%", lambda: pic_hot(20, 15, 10, seed=1), "n2x64", dict(nodes=24)),
    ("pic-12x12x8-hilbert/gap", lambda: pic_hot(12, 12, 8, "hilbert", 2), "gap", dict(nodes=18)),
    ("ens-1000/n2x64-98%", lambda: ensemble(1000, 1), "n2x64", dict(nodes=8)),
    ("ens-768/gpu8", lambda: ensemble(768, 2), "gpu8", dict(nodes=96)),
    ("ens-1800-perm/n4x24-94%", lambda: ensemble(1800, 3, True), "n4x24", dict(nodes=20)),
    ("ens-1200/het1sw-91%", lambda: ensemble(1200, 4), "het1sw", {}),
    ("wf-chain-576/gap", lambda: workflow(576, 1), "gap", dict(nodes=9)),
    ("wf-chain-s37-640/n2x64-83%", lambda: workflow(640, 37), "n2x64", dict(nodes=6)),
    ("sfc-morton-48x48/sw4", lambda: sfc9(48, 48, "morton"), "sw4", {}),
    ("sfc-tiles4-40x36/n4x24-94%", lambda: sfc9(40, 36, "tiles4"), "n4x24", dict(nodes=16)),
    ("sfc-hilbert-64x64/n2x64", lambda: sfc9(64, 64, "hilbert"), "n2x64", dict(nodes=32)),
    ("sfc-rowmajor-63x65/n4x24-99%", lambda: sfc9(63, 65, "rowmajor"), "n4x24", dict(nodes=43)),
    ("sfc-morton-30x40/torus4x4x8-holes-83%", lambda: sfc9(30, 40, "morton"), "torus-holes", T448),
    ("dense-576/n4x24", lambda: dense_noise(576), "n4x24", dict(nodes=6)),
    ("dense-600/gap-94%", lambda: dense_noise(600), "gap", dict(nodes=10)),
    ("tree-3000/dragonfly4x8x2-98%", lambda: treecode(3000, 1), "dragonfly", DF482),
    ("tree-1296/torus4x4x8-holes-90%", lambda: treecode(1296, 2), "torus-holes", T448),
    ("tree-1100/het1sw-84%", lambda: treecode(1100, 3), "het1sw", {}),
]
NAMES, build = fixed_family(FRESH3, machine)
