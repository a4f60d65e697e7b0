"""Which nodes to map onto.

* same allocation: the nodes given (for a profile, by default the nodes the run had);
* whole cluster: among the available nodes, choose a compact part of the network with
  enough slots — on a torus the candidate sub-boxes (every shape and offset, with
  wrap-around) that hold the ranks with the fewest nodes, the most compact first; each
  of the best few is mapped quickly and the cheapest wins. Knowing the network's speeds
  (`rankmap map` with a network model), node sets scattered over the network are candidates
  too (scattered_node_sets: an all-to-all shares many links and routers there), and the
  candidates' quick mappings are compared by predict's estimate instead of the cost."""
from __future__ import annotations

import numpy as np

from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Hierarchy, Torus
from rankmap.profiler.errors import UserError

CANDIDATES = 6

# scattered_node_sets: farthest-point sets grown from at most SCATTER_STARTS nodes (evenly spaced
# indices), on the fewest nodes that hold the ranks and up to SCATTER_EXTRA more, the SCATTERED
# best by an all-to-all's bound kept; none beyond SCATTER_MAX_NODES nodes in a set (on an 8x8x8
# torus all the sets took 0.1 s at 8 nodes, 1.2 s at 32, 4.4 s at 64, 15 s at 128)
SCATTER_STARTS = 32
SCATTER_EXTRA = 0
SCATTERED = 4
SCATTER_MAX_NODES = 128

# wider_node_sets (--extra-nodes): at most WIDER_COUNTS ranks-per-node counts, WIDER_PER_COUNT
# compact sets each (each set costs a quick mapping and two predictions)
WIDER_COUNTS = 4
WIDER_PER_COUNT = 2


def restrict(machine: Machine, nodes, slots: np.ndarray | None = None) -> Machine:
    """The same machine reduced to some of its nodes (network coordinates kept), and to some
    of their slots (indices, ascending) if given."""
    from dataclasses import replace
    nodes = np.unique(np.fromiter(nodes, dtype=np.int64))
    keep = _kept(machine, nodes, slots)
    remap = -np.ones(machine.nnodes, dtype=np.int64)
    remap[nodes] = np.arange(len(nodes))
    net = machine.network
    if net is not None:
        net = net.subset(nodes)        # every node keeps its place in the network
    return replace(machine, hosts=[machine.hosts[k] for k in nodes], topos=[machine.topos[k] for k in nodes],
                   network=net, slot_node=remap[machine.slot_node[keep]], slot_core=machine.slot_core[keep],
                   lvl=machine.lvl[keep])


def _kept(machine: Machine, nodes: np.ndarray, slots: np.ndarray | None = None) -> np.ndarray:
    mask = np.zeros(machine.nnodes, dtype=bool)
    mask[nodes] = True
    keep = mask[machine.slot_node]
    if slots is not None:
        chosen = np.zeros(machine.nslots, dtype=bool)
        chosen[slots] = True
        keep &= chosen
    return keep


def kept_slots(machine: Machine, nodes, slots: np.ndarray | None = None) -> np.ndarray:
    """The slots of `machine` that restrict(machine, nodes, slots) keeps, in its slot order:
    slot i of the restricted machine is kept_slots(...)[i] of this one."""
    return np.flatnonzero(_kept(machine, np.unique(np.fromiter(nodes, dtype=np.int64)), slots))


def first_slots(machine: Machine, counts: dict) -> np.ndarray:
    """The first counts[k] slots (in slot order) of each node k: a fill with these many ranks
    per node (scattered_node_sets' counts), ascending."""
    return np.sort(np.concatenate([np.flatnonzero(machine.slot_node == k)[:c] for k, c in counts.items()]))


def spread(machine: Machine, nranks: int) -> tuple[Machine, np.ndarray]:
    """--fill spread: the machine reduced to nranks slots spread evenly over all its nodes (in
    proportion to their slots, the largest remainders first) and, on each node, over its
    packages and NUMA nodes (round robin, distinct cores before a core's second slot). The
    search then moves ranks among these slots only, so the spread holds (on the whole machine
    the local search packed them back). Returns (the reduced machine, its slots' indices in
    the whole machine)."""
    take = _even_counts(node_capacity(machine), nranks)
    sel = spread_slots(machine, take)
    # fewer ranks than nodes: the nodes left without a rank leave the machine (a node of no slots
    # has no place in the machine tree)
    return restrict(machine, np.flatnonzero(take > 0), sel), sel


def spread_slots(machine: Machine, take: np.ndarray) -> np.ndarray:
    """The first take[k] slots of each node k spread over its packages and NUMA nodes (round
    robin, distinct cores before a core's second slot): their indices, ascending."""
    # On each node, its packages (and NUMA nodes) are queues, ordered by their lowest core,
    # each holding its slots by (round of the core, core); the node takes its first take[k]
    # slots round robin over the queues: by (position in its queue, queue). In numpy: the loop
    # over the slots it replaces took 1.1-1.8 s of CPU at 10^6 slots (now 0.15-0.25 s).
    node, core, rnd = machine.slot_node, machine.slot_core, core_round(machine)
    local, per_node = _core_groups(machine)
    group = node * per_node + local                           # < 2^20 nodes x 4096 groups
    ngroups = machine.nnodes * per_node                       # some empty: they sort last
    low = np.full(ngroups, np.iinfo(np.int64).max)
    np.minimum.at(low, group, core)                           # each queue's lowest core
    gnode = np.arange(ngroups, dtype=np.int64) // per_node
    gorder = np.lexsort((low, gnode))                         # queues by node, then lowest core
    qidx = np.empty(ngroups, dtype=np.int64)
    qidx[gorder] = np.arange(ngroups) - _starts(gnode[gorder])
    # sort keys packed in one int64 (slots < 2^24, rounds <= 1024, cores and queues <= 4096 a node)
    ncore = int(core.max()) + 1
    inq = np.argsort((group * (int(rnd.max()) + 1) + rnd) * ncore + core)     # each queue's slots in order
    pos = np.empty(machine.nslots, dtype=np.int64)
    pos[inq] = np.arange(machine.nslots) - _starts(group[inq])
    order = np.argsort((node * (int(pos.max()) + 1) + pos) * (int(qidx.max()) + 1) + qidx[group])   # round robin
    nth = np.empty(machine.nslots, dtype=np.int64)
    nth[order] = np.arange(machine.nslots) - _starts(node[order])
    return np.flatnonzero(nth < take[node])                   # ascending, as slot indices are


def _starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Per entry of a sorted key array, the index of the first entry of its key."""
    n = len(sorted_keys)
    first = np.flatnonzero(np.r_[True, sorted_keys[1:] != sorted_keys[:-1]]) if n else np.zeros(0, np.int64)
    return np.repeat(first, np.diff(np.r_[first, n]))


def _core_groups(machine: Machine) -> tuple[np.ndarray, int]:
    """Per slot, its core's (package, NUMA node) pair as a number within its node (below the
    node's cores), and the largest count of such pairs on a node."""
    kinds = {}
    kind_of = np.array([kinds.setdefault(id(t), len(kinds)) for t in machine.topos], dtype=np.int64)
    uniq = {kinds[id(t)]: t for t in machine.topos}
    tab = np.zeros((len(kinds), max(t.cores for t in machine.topos)), dtype=np.int64)
    for k, t in uniq.items():
        pairs = {}
        tab[k, :t.cores] = [pairs.setdefault((p, q), len(pairs)) for p, q in zip(t.core_package, t.core_numa)]
    return tab[kind_of[machine.slot_node], machine.slot_core], int(tab.max()) + 1


def core_round(machine: Machine) -> np.ndarray:
    """Per slot, the how-many-th slot of its core it is (0 for a core's first slot; with
    --oversubscribe N, 0..N-1)."""
    key = machine.slot_node * (int(machine.slot_core.max()) + 1) + machine.slot_core
    # slots are built node by node, core by core: sorted already, unless a caller reordered them
    order = np.arange(machine.nslots) if (key[1:] >= key[:-1]).all() else np.argsort(key, kind="stable")
    occ = np.empty(machine.nslots, dtype=np.int64)
    occ[order] = np.arange(machine.nslots) - _starts(key[order])
    return occ


def cores_first(machine: Machine, nranks: int, even: bool = True) -> tuple[Machine, np.ndarray, str] | None:
    """--oversubscribe N for ranks that are processes: distinct cores first, a core's second
    slot only for the ranks the cores cannot hold (the cost model prices two ranks of one core
    at 0, so on the whole machine the search packed them in pairs onto half the cores, idle
    ones beside). Up to one rank per core: the machine of one slot per core (all nodes, so
    node indices stay; the packed fill then takes the fewest nodes as without
    --oversubscribe). More: every core's first slot and the rest spread evenly over nodes and
    packages (spread); with even=False (map --parallel, which needs nodes of one size) every
    core's first ceil(ranks / cores) slots instead. None when nothing is oversubscribed or
    every slot is taken. Returns (the reduced machine, its slots' indices in the whole
    machine, a note)."""
    if nranks >= machine.nslots:
        return None
    rnd = core_round(machine)
    first = np.flatnonzero(rnd == 0)
    cores = len(first)
    if cores == machine.nslots:
        return None
    if nranks <= cores:
        return (restrict(machine, np.arange(machine.nnodes), first), first,
                f"--oversubscribe: the {nranks} ranks fit on the {cores} cores, one rank per core as without "
                "it; a core takes several only when the ranks outnumber the cores")
    if not even:
        per = -(-nranks // cores)
        sel = np.flatnonzero(rnd < per)
        if len(sel) == machine.nslots:
            return None
        return (restrict(machine, np.arange(machine.nnodes), sel), sel,
                f"--oversubscribe: {nranks} ranks on {cores} cores: every core takes up to {per}")
    m, sel = spread(machine, nranks)
    each = f"{nranks // cores}" if nranks % cores == 0 else f"{nranks // cores} or {nranks // cores + 1}"
    return (m, sel, f"--oversubscribe: {nranks} ranks on {cores} cores: every core takes {each}, spread evenly "
            "over the nodes and their packages")


def node_capacity(machine: Machine) -> np.ndarray:
    return np.bincount(machine.slot_node, minlength=machine.nnodes)


def candidate_node_sets(machine: Machine, nranks: int) -> list[np.ndarray]:
    cap = node_capacity(machine)
    if cap.sum() < nranks:
        raise UserError(f"{nranks} ranks but the available nodes hold only {cap.sum()} slots")
    net = machine.network
    if isinstance(net, Torus):
        return _torus_boxes(machine, cap, nranks)
    if isinstance(net, Hierarchy):
        return [_fill_switches(machine, cap, nranks)]
    order = np.argsort(-cap, kind="stable")           # one switch: the fewest, biggest nodes
    take = np.searchsorted(np.cumsum(cap[order]), nranks) + 1
    return [np.sort(order[:take])]


def wider_node_sets(machine: Machine, nranks: int, extra_percent: float) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """map --extra-nodes PERCENT: compact node sets of more nodes than the fewest that hold the
    ranks (up to PERCENT % more), each node holding at most k = ceil(nranks / m) of them: the
    ranks a node then holds can be whole groups of the traffic (one row of NPB CG's process
    grid per node: its exchanges within a row never leave the node) and each node's network
    interface carries fewer ranks' bytes. For each k (at most WIDER_COUNTS of them, evenly
    over those that take more nodes), the machine of each node's first k slots (over its
    packages, as --fill spread) gives candidate_node_sets' WIDER_PER_COUNT most compact sets
    (ceil(nranks / k) nodes, or a torus box of a few more), those within the budget kept. Returns (nodes, their slots in `machine`, k) per set, the fewest
    nodes first. Deterministic."""
    cap = node_capacity(machine)
    lo = fewest_nodes(cap, nranks)
    hi = min(int((cap > 0).sum()), int(np.floor(lo * (1 + extra_percent / 100) + 1e-9)))
    ks = sorted({-(-nranks // m) for m in range(lo + 1, hi + 1)}, reverse=True)
    ks = [k for k in ks if -(-nranks // k) > lo]                  # more nodes than the fewest
    if len(ks) > WIDER_COUNTS:
        ks = [ks[i] for i in np.unique(np.linspace(0, len(ks) - 1, WIDER_COUNTS).round().astype(int))]
    live = np.flatnonzero(cap > 0)
    out = []
    for k in ks:
        sel = spread_slots(machine, np.minimum(cap, k))
        capped = restrict(machine, live, sel)          # node i of capped is live[i]
        try:
            sets = candidate_node_sets(capped, nranks)[:WIDER_PER_COUNT]
        except UserError:                               # k per node: too few nodes
            continue
        for S in sets:
            nodes = live[S]
            if len(nodes) > hi:         # a torus box larger than the budget (13 nodes in 4x2x2x2: 16)
                continue
            out.append((nodes, sel[np.isin(machine.slot_node[sel], nodes)], k))
    return out


# _torus_boxes stops enumerating box shapes once this many boxes hold the ranks, or once it
# has summed over this many positions (box shapes x the torus's positions): what was found by
# then stands (shapes go by their extents' sum, the most cubic first)
TORUS_BOXES_MAX = 20000
TORUS_BOXES_WORK = 400_000_000
# tori with few nodes (their boxes x nodes up to this: a box-by-node table of 8 bytes an entry
# at most 80 MB): every box whose faces touch nodes, the node sets counted from the nodes'
# coordinates, not from a grid of every position
TIGHT_BOXES_WORK = 10_000_000


def _cyclic_window_sum(a: np.ndarray, shape: tuple, wrap: tuple) -> np.ndarray:
    """Sum of `a` over the box of extents `shape` starting at each position (first corner),
    round the ring on dimensions that wrap; on a mesh line boxes that would cross its end get
    -1 (they are not boxes there)."""
    for ax, (s, w) in enumerate(zip(shape, wrap)):
        d = a.shape[ax]
        ext = np.concatenate([a, np.take(a, np.arange(s - 1), axis=ax)], axis=ax) if w else a
        cs = np.cumsum(ext, axis=ax)
        cs = np.concatenate([np.zeros_like(np.take(cs, [0], axis=ax)), cs], axis=ax)
        hi = np.take(cs, np.arange(s, s + d), axis=ax, mode="clip")
        lo = np.take(cs, np.arange(d), axis=ax)
        out = hi - lo
        if not w and s > 1:             # boxes past the line's end
            idx = [slice(None)] * a.ndim
            idx[ax] = slice(d - s + 1, None)
            out[tuple(idx)] = -1
        a = out
    return a


def _torus_boxes(machine: Machine, cap: np.ndarray, nranks: int) -> list[np.ndarray]:
    """The CANDIDATES most compact boxes of the torus that hold the ranks: the fewest nodes,
    then the most cubic box (smallest sum of extents), then the smallest volume, then the
    lowest node indices; each set of nodes once. Box sums by cumulative sums over the grid
    of positions (a box per position and shape: 2,048 positions took 5.5 s in Python), box
    shapes by their extents' sum: once CANDIDATES node sets of the fewest nodes any box can
    hold (fewest_nodes) are found, no later shape can come before them (shapes in the order
    of itertools.product stopped at TORUS_BOXES_MAX among 1 x b x c slabs: on a 16 x 16 x 8
    torus 64 nodes were six 1 x 8 x 8 slabs, no 4 x 4 x 4 cube). Tori of few nodes (8 on
    2,048 x 2,048): _tight_boxes."""
    net = machine.network
    dims = tuple(int(d) for d in net.dims)
    wrap = tuple(bool(w) for w in net.wrap)     # a mesh line's boxes do not cross its ends
    coords = np.asarray(net.coords, dtype=np.int64)
    tight = _tight_boxes(coords, dims, wrap, cap, nranks)
    if tight is not None:
        return tight
    node_at = np.full(dims, -1, dtype=np.int64)
    node_at[tuple(coords.T)] = np.arange(len(coords))
    there = node_at >= 0
    capg = np.where(there, cap[np.where(there, node_at, 0)], 0).astype(np.int64)
    have = there.astype(np.int64)
    cmax = int(cap.max())
    least = fewest_nodes(cap, nranks)
    positions = int(np.prod(dims))
    rec_n, rec_sum, rec_vol, rec_shape, rec_off, shapes = [], [], [], [], [], []
    total = work = 0
    grid = np.stack(np.meshgrid(*(np.arange(1, d + 1) for d in dims), indexing="ij"), -1).reshape(-1, len(dims))
    grid = grid[np.lexsort((grid.prod(1), grid.sum(1)))]      # by extents' sum, then volume (stable)
    level, fewest = None, set()
    for shape in map(tuple, grid.tolist()):
        if sum(shape) != level:
            if len(fewest) >= CANDIDATES or total > TORUS_BOXES_MAX or work > TORUS_BOXES_WORK:
                break
            level = sum(shape)
        vol = int(np.prod(shape))
        if vol * cmax < nranks:
            continue
        work += positions
        ok = np.flatnonzero(_cyclic_window_sum(capg, shape, wrap).ravel() >= nranks)
        if ok.size:
            n = _cyclic_window_sum(have, shape, wrap).ravel()[ok]
            rec_n.append(n)
            rec_sum.append(np.full(ok.size, sum(shape)))
            rec_vol.append(np.full(ok.size, vol))
            rec_shape.append(np.full(ok.size, len(shapes)))
            rec_off.append(ok)
            total += ok.size
            for o in ok[n == least][:8 * CANDIDATES]:      # (enough to stop; more only delays the stop)
                if len(fewest) >= CANDIDATES:
                    break
                fewest.add(_box_nodes(node_at, dims, np.unravel_index(o, dims), shape))
        shapes.append(shape)
    if not total:
        raise UserError("no sub-box of the torus holds enough available slots")
    n_, sum_, vol_, shp, off = (np.concatenate(x) for x in (rec_n, rec_sum, rec_vol, rec_shape, rec_off))
    order = np.lexsort((vol_, sum_, n_))
    keys = np.stack([n_, sum_, vol_])[:, order]
    starts = np.flatnonzero(np.r_[True, (np.diff(keys, axis=1) != 0).any(axis=0)])
    bounds = np.r_[starts, len(order)]
    groups = (_smallest_sets(node_at, dims, [shapes[k] for k in shp[order[lo:hi]]], off[order[lo:hi]])
              for lo, hi in zip(bounds[:-1], bounds[1:]))
    return _first_sets(groups)


def _box_nodes(node_at: np.ndarray, dims: tuple, corner, shape: tuple) -> tuple:
    ix = np.ix_(*[(oo + np.arange(s)) % d for oo, s, d in zip(corner, shape, dims)])
    nodes = node_at[ix].ravel()
    return tuple(np.sort(nodes[nodes >= 0]).tolist())


def _smallest_sets(node_at: np.ndarray, dims: tuple, shapes: list, offs: np.ndarray) -> list[tuple]:
    """The 2 x CANDIDATES smallest distinct node tuples of boxes of equal keys (as many
    nodes each): enough for _first_sets, whatever earlier groups took (a full 6-D torus gave
    3 million boxes of one key, each's tuple made in Python: 150 s)."""
    best: list[tuple] = []
    want = 2 * CANDIDATES
    shapes_arr = np.array(shapes)
    for shape in {tuple(x) for x in shapes_arr.tolist()}:
        sel = np.flatnonzero((shapes_arr == shape).all(1))
        rel = np.stack(np.meshgrid(*(np.arange(x) for x in shape), indexing="ij"), -1).reshape(-1, len(dims))
        for lo in range(0, len(sel), max(1, 4_000_000 // len(rel))):
            corner = np.stack(np.unravel_index(offs[sel[lo:lo + max(1, 4_000_000 // len(rel))]], dims), -1)
            pos = (corner[:, None, :] + rel[None, :, :]) % np.array(dims)
            nodes = np.sort(node_at[tuple(pos.reshape(-1, len(dims)).T)].reshape(len(corner), -1), axis=1)
            k = int((nodes[0] >= 0).sum())
            rows = np.unique(nodes[:, nodes.shape[1] - k:], axis=0)[:want]
            best = sorted(set(best) | set(map(tuple, rows.tolist())))[:want]
    return best


def _first_sets(groups) -> list[np.ndarray]:
    """The first CANDIDATES distinct node sets of groups of equal keys (in key order), each
    group's by their node tuples."""
    out, seen = [], set()
    for group in groups:
        for nodes in sorted(group):
            if nodes not in seen:
                seen.add(nodes)
                out.append(np.array(nodes))
            if len(out) >= CANDIDATES:
                return out
    return out


def _tight_boxes(coords: np.ndarray, dims: tuple, wrap: tuple, cap: np.ndarray, nranks: int) -> list | None:
    """_torus_boxes on a torus of few nodes: a box's nodes are those of the box its faces
    shrink to (each extent to the span of its nodes' coordinates, round the ring where it
    wraps), which is as few nodes on a smaller sum of extents and volume; so the boxes whose
    faces touch nodes are the only ones that come first for a set of nodes, and the same
    sets come out as from every box. None where they are too many (TIGHT_BOXES_WORK)."""
    n = len(coords)
    per_dim = []                     # (extent, member mask (intervals x nodes)) of each dimension
    count = 1
    for d, (size, w) in enumerate(zip(dims, wrap)):
        u = np.unique(coords[:, d])
        a, b = np.repeat(u, len(u)), np.tile(u, len(u))         # first and last coordinate
        if not w:
            keep = b >= a
            a, b = a[keep], b[keep]
        ext = (b - a) % size + 1
        if w:
            # a span that reaches round the whole ring: the whole line (its start then does not matter)
            full = ext >= size
            a, b, ext = np.r_[a[~full], 0], np.r_[b[~full], size - 1], np.r_[ext[~full], size]
        per_dim.append((a, ext))
        count *= len(a)
        if count * n > TIGHT_BOXES_WORK:
            return None
    x = coords
    # member[d][i, k]: node k lies in interval i of dimension d
    members = [((x[:, d][None, :] - a[:, None]) % dims[d] < ext[:, None]) for d, (a, ext) in enumerate(per_dim)]
    inside = members[0]
    sums, vols = per_dim[0][1].astype(np.int64), per_dim[0][1].astype(np.int64)
    for d in range(1, len(dims)):
        inside = (inside[:, None, :] & members[d][None, :, :]).reshape(-1, n)
        e = per_dim[d][1].astype(np.int64)
        sums = (sums[:, None] + e[None, :]).ravel()
        vols = (vols[:, None] * e[None, :]).ravel()
    capbox = inside.astype(np.int64) @ cap.astype(np.int64)
    ok = np.flatnonzero(capbox >= nranks)
    if not ok.size:
        raise UserError("no sub-box of the torus holds enough available slots")
    nn = inside[ok].sum(1)
    order = ok[np.lexsort((vols[ok], sums[ok], nn))]
    keys = np.stack([inside[order].sum(1), sums[order], vols[order]])
    starts = np.flatnonzero(np.r_[True, (np.diff(keys, axis=1) != 0).any(axis=0)])
    bounds = np.r_[starts, len(order)]
    groups = ([tuple(np.flatnonzero(inside[i]).tolist()) for i in order[bounds[g]:bounds[g + 1]]]
              for g in range(len(starts)))
    return _first_sets(groups)


def _fill_switches(machine: Machine, cap: np.ndarray, nranks: int) -> np.ndarray:
    """Fill whole leaf switches, the fullest first, until the ranks fit."""
    leaf = machine.network.groups[:, -2] if machine.network.groups.shape[1] >= 2 else np.zeros(machine.nnodes, int)
    per = {}
    for k, g in enumerate(leaf):
        per.setdefault(int(g), []).append(k)
    chosen, total = [], 0
    for g in sorted(per, key=lambda g: -cap[per[g]].sum()):
        for k in sorted(per[g], key=lambda k: -cap[k]):
            chosen.append(k)
            total += cap[k]
            if total >= nranks:
                return np.sort(np.array(chosen))
    raise UserError("not enough available slots")


def fewest_nodes(cap: np.ndarray, nranks: int) -> int:
    """The fewest nodes that hold the ranks (the biggest first)."""
    return int(np.searchsorted(np.cumsum(np.sort(cap)[::-1]), nranks) + 1)


def scattered_node_sets(machine: Machine, nranks: int, net, keep: int = SCATTERED,
                        deadline: float | None = None) -> list[tuple]:
    """Node sets spread over the network, for traffic that every pair of ranks exchanges (an
    all-to-all: on a compact box or one leaf switch its bytes funnel through few links and
    routers), each with how many ranks each node should hold. Sets of m nodes, m from the
    fewest that hold the ranks to SCATTER_EXTRA more, grown by farthest point (the next node
    is the one farthest, in hops, from the nearest node of the set; ties broken by a
    generator seeded with the start and m, so that different starts give different sets; on
    a tree of switches this takes the leaves round robin) from up to SCATTER_STARTS starting
    nodes; a set of m nodes with fewer slots than ranks (nodes of mixed sizes) grows on by
    farthest point until it holds them (the sets of the fewest nodes are kept first). Each
    set is scored by predict's bounds for a uniform all-to-all of one byte per ordered pair
    of ranks (the largest of the links', the routers' limiters' and the
    bisection's, each linear in the bytes of each pair of nodes: bench/real_apps/floor.py),
    with the ranks per node that lower it most: from spread's even counts, one rank moved
    from a node to another while that lowers the score (a node on other members' routes
    passes their bytes through its limiter too: the floor's placement of NPB FT on Desmos,
    bench/real_apps/floor.py, holds 6-3-5-6-6-6). Returns up to `keep` per m (the fewest
    nodes, then the lowest scores; ties: the earlier generated), as (nodes, counts, score),
    lowest score first. Deterministic; at most
    SCATTER_STARTS x (SCATTER_EXTRA + 1) sets, each m^2 routes and a descent of at most m
    steps of m^2 moves. [] without a network, on one switch, for one node, or beyond
    SCATTER_MAX_NODES nodes. deadline (time.monotonic(), --time-limit): no set is begun past
    it once one is scored (216 nodes of a 6x6x6 torus took 10 s of a --time-limit 0.5)."""
    import time

    import scipy.sparse as sp

    from rankmap.mapper.predict import pair_model
    if machine.network is None or net is None:
        return []
    cap = node_capacity(machine)
    N = machine.nnodes
    lo = fewest_nodes(cap, nranks)
    if lo > SCATTER_MAX_NODES or lo >= N or lo + SCATTER_EXTRA < 2:     # (one node: nothing to scatter)
        return []
    nodes_all = np.arange(N)
    first = np.searchsorted(machine.slot_node, nodes_all) if (np.diff(machine.slot_node) >= 0).all() else \
        np.array([np.flatnonzero(machine.slot_node == k)[0] for k in nodes_all])
    starts = np.unique(np.linspace(0, N - 1, min(N, SCATTER_STARTS)).round().astype(np.int64))
    out = []
    for m in range(lo, min(N - 1, lo + SCATTER_EXTRA) + 1):
        found, seen = [], set()
        for s0 in starts.tolist():
            if deadline is not None and (out or found) and time.monotonic() > deadline:
                break
            rng = np.random.default_rng([int(s0), m])
            chosen = [s0]
            near = machine.node_hops(np.full(N, s0), nodes_all).astype(np.float64)
            near[s0] = -1
            # grown past m while it holds too few slots: with nodes of mixed sizes (Angara-K1's
            # 12- and 8-core nodes) every spread set of the fewest nodes may take small ones
            while (len(chosen) < m or cap[chosen].sum() < nranks) and len(chosen) < N:
                far = np.flatnonzero(near == near.max())
                k = int(far[rng.integers(len(far))])
                chosen.append(k)
                near = np.minimum(near, machine.node_hops(np.full(N, k), nodes_all))
                near[chosen] = -1
            S = np.sort(np.array(chosen, dtype=np.int64))
            if len(S) >= N or len(S) > SCATTER_MAX_NODES or S.tobytes() in seen:
                continue
            seen.add(S.tobytes())
            pair = pair_model(machine, first[S], net)       # rank i on node S[i]
            ia, ib = np.array([(a, b) for a in range(len(S)) for b in range(len(S)) if a != b], dtype=np.int64).T
            keys: dict = {}
            rows, cols, vals = [], [], []
            for r, (a, b) in enumerate(zip(ia.tolist(), ib.tolist())):
                for key, spb in pair(a, b)[2]:
                    rows.append(r)
                    cols.append(keys.setdefault(key, len(keys)))
                    vals.append(spb)
            bis = _bisection_per_byte(machine, S[ia], S[ib], net.link_bw)   # the last column
            R = sp.csr_matrix((np.r_[vals, bis], (np.r_[rows, np.arange(len(ia))],
                                                  np.r_[cols, np.full(len(ia), len(keys))])),
                              shape=(len(ia), len(keys) + 1))       # (duplicates summed)
            counts = _even_counts(cap[S], nranks)
            score, counts = _descend_counts(counts, cap[S], R, ia, ib)
            found.append((score, len(found), S, counts))
        found.sort(key=lambda x: (len(x[2]), x[0], x[1]))     # the fewest nodes first (node-hours)
        out += [(S, c, sc) for sc, _, S, c in found[:keep]]
    return sorted(out, key=lambda x: x[2])


def _even_counts(cap: np.ndarray, nranks: int) -> np.ndarray:
    """Ranks per node in proportion to their slots, the largest remainders first (spread's and
    scattered_node_sets' counts)."""
    quota = nranks * cap / cap.sum()
    take = np.floor(quota).astype(np.int64)
    take[np.argsort(-(quota - take), kind="stable")[:nranks - int(take.sum())]] += 1
    return take


def _bisection_per_byte(machine: Machine, na: np.ndarray, nb: np.ndarray, bw: float) -> np.ndarray:
    """Seconds per byte that a pair of nodes puts on predict's bisection bound (predict._bisection)."""
    net = machine.network
    if not isinstance(net, Torus):
        return np.zeros(len(na))
    d = int(np.argmax(net.dims))
    size = net.dims[d]
    if size < 2:
        return np.zeros(len(na))
    half = net.coords[:, d] < size // 2
    rings = int(np.prod(net.dims)) // size
    per_ring = (2 if net.wrap[d] and size > 2 else 1) * 2
    return (half[na] != half[nb]) / (rings * per_ring * bw)


def _descend_counts(counts: np.ndarray, cap: np.ndarray, R, ia: np.ndarray, ib: np.ndarray,
                    max_steps: int | None = None) -> tuple[float, np.ndarray]:
    """The counts of ranks per node (each 1..cap) that a descent of single moves (one rank from
    a node to another) finds from `counts` for the largest load of a uniform all-to-all (one
    byte per ordered pair of ranks; R: seconds per byte of each ordered pair of nodes (ia[p],
    ib[p]) on each resource): (that load, the counts). Each step takes the best move (the
    first of the best, moves ordered by source then destination node), until none lowers
    the load, at most max_steps (default: the nodes' count). A move from a to b changes each
    resource's load by u_b - u_a - S_ab (u = (G + G^T) c, S = G + G^T, G the node pairs'
    seconds per byte): every move of a source node at once, m x resources numbers."""
    import scipy.sparse as sp
    m = len(counts)
    R = sp.csr_matrix(R)
    c = counts.astype(np.float64)
    pidx = -np.ones((m, m), dtype=np.int64)
    pidx[ia, ib] = np.arange(len(ia))
    score = lambda c: float(np.asarray(R.T @ (c[ia] * c[ib])).max())    # noqa: E731
    best = score(c)
    for _ in range(m if max_steps is None else max_steps):
        load = np.asarray(R.T @ (c[ia] * c[ib])).ravel()
        # u[x] = sum_y c[y] (G[x, y] + G[y, x]): pairs (x, y) weighted by c[y], pairs (y, x) by c[y]
        pairs = np.arange(len(ia))
        W = sp.csr_matrix((np.r_[c[ib], c[ia]], (np.r_[ia, ib], np.r_[pairs, pairs])), shape=(m, len(ia)))
        u = np.asarray((W @ R).todense())
        step = None
        for a in np.flatnonzero(c > 1).tolist():
            bs = np.flatnonzero((c < cap) & (np.arange(m) != a))
            if not len(bs):
                continue
            S = np.asarray((R[pidx[a, bs]] + R[pidx[bs, a]]).todense())
            v = (load[None, :] + u[bs] - u[a][None, :] - S).max(axis=1)
            k = int(np.argmin(v))
            if v[k] < best * (1 - 1e-9) and (step is None or v[k] < step[0]):
                step = (float(v[k]), a, int(bs[k]))
        if step is None:
            break
        _, a, b = step
        c[a] -= 1
        c[b] += 1
        best = score(c)
    return best, c.astype(np.int64)
