"""Bridge to the mapper's C kernels (csrc/refine/refine.h: their interface): the local search,
its cost function, and the subgraph extraction behind the hierarchical splits."""
from __future__ import annotations

import ctypes as C
from functools import lru_cache

import numpy as np

from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Dragonfly, SwitchTree, Torus
from rankmap.profiler import native
from rankmap.profiler.errors import UserError

P64 = C.POINTER(C.c_int64)
RM_API = 5           # csrc/refine/refine.h RM_API: the C functions' arguments as this module passes them
PD = C.POINTER(C.c_double)


class _Problem(C.Structure):
    _fields_ = [("n", C.c_int64), ("xadj", P64), ("adj", P64), ("w", PD), ("nslots", C.c_int64),
                ("nlevels", C.c_int32), ("node_level", C.c_int32), ("lvl", P64), ("acc", PD),
                ("ndims", C.c_int32), ("dims", P64), ("wrap", C.POINTER(C.c_uint8)), ("coords", P64),
                ("hop_cost", C.c_double), ("cand_level", C.c_int32), ("grp_of_slot", P64),
                ("grp_ptr", P64), ("grp_slots", P64), ("ngroups", C.c_int64),
                ("nglev", C.c_int32), ("glev", P64), ("gptr", P64), ("gslot", P64), ("gsig", P64)]


class _Dragonfly(C.Structure):
    _fields_ = [(name, C.c_int64) for name in ("groups", "routers", "nnodes", "local_links", "global_links", "loc0",
                                               "glob0", "size")] + [("coords", P64), ("valiant", C.c_int32)]


class _MachineView(C.Structure):
    _fields_ = [("nlevels", C.c_int32), ("node_level", C.c_int32), ("lvl", P64), ("acc", PD), ("up", P64),
                ("slot_node", P64), ("ndims", C.c_int32), ("dims", P64), ("wrap", C.POINTER(C.c_uint8)),
                ("ncoords", P64), ("hop_cost", C.c_double), ("hops_at", P64), ("dfly", C.POINTER(_Dragonfly))]


def viewable(machine: Machine) -> bool:
    """Whether the metrics' C passes read this machine: a torus or mesh, a switch tree (fat
    trees, Slurm's switches), a dragonfly, or one switch."""
    net = machine.network
    if isinstance(net, SwitchTree) and net.uneven():
        return False            # their hops are per node, not per level (SwitchTree.pad)
    return net is None or isinstance(net, (Torus, SwitchTree, Dragonfly))


def _dragonfly(net) -> tuple:
    """(the C struct, its coordinates array, to be kept alive with it) of a network.Dragonfly."""
    G, A, _ = net.shape
    n = len(net.coords)
    coords = np.ascontiguousarray(net.coords, dtype=np.int64)
    return _Dragonfly(G, A, n, int(net.local_links), int(net.global_links), 2 * n, 2 * n + G * A * A,
                      2 * n + G * A * A + G * G, _p(coords), int(net.routing == "valiant")), coords


def dragonfly_loads(net, na, nb, w, grp, ngroups: int) -> np.ndarray:
    """network.Dragonfly.link_loads in C (pairmetrics.c): bytes per link, (ngroups, links),
    for the routes na[i] -> nb[i] of w[i] bytes in route group grp[i] (None: one group)."""
    d, keep = _dragonfly(net)
    size = d.size
    na, nb = np.ascontiguousarray(na, dtype=np.int64), np.ascontiguousarray(nb, dtype=np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    g = None if grp is None else np.ascontiguousarray(grp, dtype=np.int64)
    out = np.zeros((ngroups, size))
    _lib().rm_dragonfly_loads(C.byref(d), len(na), na.ctypes.data, nb.ctypes.data, w.ctypes.data,
                              None if g is None else g.ctypes.data, out.ctypes.data)
    del keep
    return out


def switch_loads(groups: np.ndarray, used: int, sizes: list, na, nb, w, grp, ngroups: int) -> np.ndarray:
    """network.SwitchTree.link_loads in C (pairmetrics.c) before the division by the links'
    counts: (ngroups, 2 x sum(sizes[:used])), up links then down links, level by level."""
    groups = np.ascontiguousarray(groups, dtype=np.int64)
    off = np.ascontiguousarray(np.concatenate([[0], np.cumsum(sizes[:used])]), dtype=np.int64)
    total = int(off[-1])
    na, nb = np.ascontiguousarray(na, dtype=np.int64), np.ascontiguousarray(nb, dtype=np.int64)
    w = np.ascontiguousarray(w, dtype=np.float64)
    g = None if grp is None else np.ascontiguousarray(grp, dtype=np.int64)
    out = np.zeros((ngroups, 2 * total))
    _lib().rm_switch_loads(groups.ctypes.data, groups.shape[1], int(used), off.ctypes.data, total, len(na),
                           na.ctypes.data, nb.ctypes.data, w.ctypes.data, None if g is None else g.ctypes.data,
                           out.ctypes.data)
    return out


class MachineView:
    """A machine as the metrics' C passes read it (pairmetrics.c): its level rows, costs,
    nodes, and its torus, its dragonfly, or the network hops per level (a switch tree or one
    switch)."""

    def __init__(self, machine: Machine):
        torus = isinstance(machine.network, Torus)
        if not viewable(machine):
            raise TypeError("internal error: MachineView is for tori, meshes, switch trees, dragonflies and single "
                            "switches")
        L = machine.lvl.shape[1]
        up = machine.levels_above()
        # a switch tree's levels are the machine's down to the node: first differing at l, a
        # route climbs node_level + 1 - l links and comes down as many (one switch: 2)
        lv = np.arange(L + 1)
        hops_at = np.where(lv <= machine.node_level, 2 * (machine.node_level + 1 - lv), 0)
        self.keep = [np.ascontiguousarray(x, dtype=t) for x, t in (
            (machine.lvl, np.int64), (machine.acc, np.float64), (up, np.int64), (machine.slot_node, np.int64),
            (machine.network.dims if torus else [1], np.int64), (machine.network.wrap if torus else [0], np.uint8),
            (machine.network.coords if torus else np.zeros((1, 1)), np.int64), (hops_at, np.int64))]
        lvl, acc, up, node, dims, wrap, coords, hops_at = self.keep
        self.v = _MachineView(L, machine.node_level, _p(lvl), _p(acc, PD), _p(up), _p(node),
                              len(dims) if torus else 0, _p(dims), wrap.ctypes.data_as(C.POINTER(C.c_uint8)),
                              _p(coords), float(machine.hop_cost), _p(hops_at), None)
        if isinstance(machine.network, Dragonfly):
            self.dfly = _dragonfly(machine.network)               # (struct, coordinates) kept alive here
            self.v.dfly = C.pointer(self.dfly[0])
        self.torus = torus


def pair_metrics(view: MachineView, row: np.ndarray, col: np.ndarray, w: np.ndarray, slot: np.ndarray) -> np.ndarray:
    """Over the pairs (row[i], col[i]) of weight w[i] placed by slot: [sum w*D, max w*D, sum
    w*2*tree levels up, sum w*hops, sum hops, max hops, sum w between nodes]."""
    row, col, w, slot = _pairs_args(row, col, w, slot)
    out = np.zeros(7)
    _lib().rm_pair_metrics(C.byref(view.v), len(row), row.ctypes.data, col.ctypes.data, w.ctypes.data,
                           slot.ctypes.data, out.ctypes.data)
    return out


def torus_loads(view: MachineView, loads: np.ndarray, row, col, w, slot) -> None:
    """Adds the directed pairs' bytes to each torus link they cross (loads: positions x ndims
    x 2, network.Torus.link_loads' layout, contiguous float64)."""
    row, col, w, slot = _pairs_args(row, col, w, slot)
    if loads.dtype != np.float64 or not loads.flags.c_contiguous:
        raise TypeError("internal error: refine.torus_loads adds to a contiguous float64 array")
    rc = _lib().rm_torus_loads(C.byref(view.v), len(row), row.ctypes.data, col.ctypes.data, w.ctypes.data,
                               slot.ctypes.data, loads.ctypes.data)
    if rc == -2:
        raise MemoryError("torus link loads")
    if rc != 0:
        raise TypeError("internal error: refine.torus_loads without a torus")


def _pairs_args(row, col, w, slot):
    # rank ids fit 32 bits (validate.MAX_RANKS = 2^24): scipy's own index arrays, not copied
    return (np.ascontiguousarray(row, dtype=np.int32), np.ascontiguousarray(col, dtype=np.int32),
            np.ascontiguousarray(w, dtype=np.float64), np.ascontiguousarray(slot, dtype=np.int64))


def _check_layout(lib) -> None:
    """The ctypes mirror must match rm_problem as the library was compiled (refine.h), and
    the functions' arguments this module's (RM_API)."""
    try:
        lib.rm_api.restype = C.c_int64
        api = int(lib.rm_api())
    except AttributeError:
        api = 1
    if api != RM_API:
        # an install to redo, not a bug: the user can fix it
        raise UserError(f"the mapper's C library ({lib._name}) was built from other sources (interface {api}, "
                        f"this rankmap's is {RM_API}): run `bash setup.sh` or `pip install .` in the rankmap checkout")
    lib.rm_layout.restype = C.c_char_p
    size, *fields = lib.rm_layout().decode().split()
    theirs = [(f.split(":")[0], int(f.split(":")[1])) for f in fields]
    ours = [(name, getattr(_Problem, name).offset) for name, _ in _Problem._fields_]
    if theirs != ours or int(size) != C.sizeof(_Problem):
        raise UserError(f"the mapper's C library ({lib._name}) does not match mapper/refine.py (rm_problem: "
                        f"{size} bytes, {theirs}; expected {C.sizeof(_Problem)} bytes, {ours}): run `bash setup.sh` "
                        "or `pip install .` in the rankmap checkout")


@lru_cache(maxsize=None)
def _lib():
    lib = C.CDLL(str(native.artifact("refine")))
    _check_layout(lib)
    lib.rm_cost.restype = C.c_double
    lib.rm_cost.argtypes = [C.POINTER(_Problem), P64]
    lib.rm_refine.restype = C.c_int64
    lib.rm_refine.argtypes = [C.POINTER(_Problem), P64, C.c_uint64, C.c_double, C.c_int64, C.c_int64, PD,
                              C.POINTER(C.c_int32)]
    lib.rm_tabu.restype = C.c_int64
    lib.rm_tabu.argtypes = [C.POINTER(_Problem), P64, C.c_uint64, C.c_double, C.c_int64, PD, C.POINTER(C.c_int32)]
    lib.rm_block_order_above.restype = C.c_int64
    lib.rm_subgraph.restype = C.c_int64
    # plain addresses: the thousands of small splits of a big machine feel ctypes' casts
    V = C.c_void_p
    lib.rm_subgraph.argtypes = [V, V, V, V, C.c_int64, V, V, V, V, V]
    lib.rm_pair_metrics.restype = C.c_int64
    lib.rm_pair_metrics.argtypes = [C.POINTER(_MachineView), C.c_int64, V, V, V, V, V]
    lib.rm_torus_loads.restype = C.c_int64
    lib.rm_torus_loads.argtypes = [C.POINTER(_MachineView), C.c_int64, V, V, V, V, V]
    lib.rm_dragonfly_loads.restype = C.c_int64
    lib.rm_dragonfly_loads.argtypes = [C.POINTER(_Dragonfly), C.c_int64, V, V, V, V, V]
    lib.rm_switch_loads.restype = C.c_int64
    lib.rm_switch_loads.argtypes = [V, C.c_int32, C.c_int32, V, C.c_int64, C.c_int64, V, V, V, V, V]
    lib.rm_split_groups.restype = C.c_int64
    lib.rm_split_groups.argtypes = [V, V, V, V, V, C.c_int64, C.c_int32, V, C.c_uint64, V, V, V, V, V, V, C.c_int32]
    return lib


def subgraph(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, rk: np.ndarray, pos: np.ndarray):
    """The edges among the ranks rk of a symmetric CSR graph (int64 indptr/indices, float64
    data; pos: n entries of -1, left so): (sub_indptr, row, col, w, nin) with entries [0, nin)
    inside the set (local row and column) and [nin, :) leaving it (local row, global column)."""
    rk = np.ascontiguousarray(rk, dtype=np.int64)
    tot = int((indptr[rk + 1] - indptr[rk]).sum())
    sub_indptr = np.empty(len(rk) + 1, dtype=np.int64)
    row, col, w = np.empty(tot, dtype=np.int64), np.empty(tot, dtype=np.int64), np.empty(tot)
    for a, t in ((indptr, np.int64), (indices, np.int64), (data, np.float64), (pos, np.int64)):
        if a.dtype != t or not a.flags.c_contiguous:
            raise TypeError("internal error: refine.subgraph takes contiguous int64 indptr, indices, pos and float64 data")
    nin = _lib().rm_subgraph(indptr.ctypes.data, indices.ctypes.data, data.ctypes.data, rk.ctypes.data, len(rk),
                             pos.ctypes.data, sub_indptr.ctypes.data, row.ctypes.data, col.ctypes.data, w.ctypes.data)
    return sub_indptr, row, col, w, int(nin)


def split_groups(indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, ranks: np.ndarray, gptr: np.ndarray,
                 caps: np.ndarray, seed: int, pos: np.ndarray, heads: np.ndarray, where: np.ndarray,
                 orient: "Problem | None" = None, metis: int | None = None, starts: int = 0) -> np.ndarray:
    """Many splits in one C call (smallsplit.c): group g, ranks[gptr[g]:gptr[g+1]], into
    caps.shape[1] parts of at most caps[g, j] ranks, the lowest cut found; part j goes to the
    child whose first slot is heads[g, j], and where (a slot of each rank's subtree) becomes
    it. orient (the machine's Problem): two parts of one size are given to the children the
    way round that puts them nearer their partners outside (partition._orient). metis
    (libmetis.recursive_entry(), two parts): each group is METIS's bisection instead, repaired
    to the capacities as partition.repair does. starts: greedy starts per group (0: smallsplit.c's
    rule by the batch's size). Arrays as subgraph's. Returns each rank's part."""
    ranks, gptr = np.ascontiguousarray(ranks, dtype=np.int64), np.ascontiguousarray(gptr, dtype=np.int64)
    caps, heads = np.ascontiguousarray(caps, dtype=np.int64), np.ascontiguousarray(heads, dtype=np.int64)
    if where.dtype != np.int64 or not where.flags.c_contiguous:
        raise TypeError("internal error: refine.split_groups updates a contiguous int64 where")
    part = np.empty(len(ranks), dtype=np.int64)
    rc = _lib().rm_split_groups(indptr.ctypes.data, indices.ctypes.data, data.ctypes.data, ranks.ctypes.data,
                                gptr.ctypes.data, len(gptr) - 1, caps.shape[1], caps.ctypes.data,
                                int(seed) % 2 ** 64, pos.ctypes.data, part.ctypes.data,
                                None if orient is None else C.addressof(orient.s), heads.ctypes.data,
                                where.ctypes.data, metis, int(starts))
    if rc == -2:
        raise RuntimeError("internal error: METIS failed on a split (smallsplit.c)")
    if rc != 0:
        raise MemoryError("rankmap: out of memory in the batched splits (smallsplit.c)")
    return part


def _p(a, t=P64):
    return a.ctypes.data_as(t)


def groups(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The slots ordered by group id (stable) and the size of each group, groups in id order.
    A built machine's ids already run in order: no sort (10^5 nodes of 64 cores: 1.7 s of
    sorting per mapping)."""
    ids = np.asarray(ids)
    if len(ids) < 2 or (ids[1:] >= ids[:-1]).all():
        order = np.arange(len(ids))
        sorted_ids = ids
    else:
        order = np.argsort(ids, kind="stable")
        sorted_ids = ids[order]
    if not len(ids):
        return order, np.zeros(0, dtype=np.int64)
    starts = np.concatenate([[0], np.flatnonzero(sorted_ids[1:] != sorted_ids[:-1]) + 1, [len(ids)]])
    return order, np.diff(starts)


# the C subtree exchanges look at levels of at most this many groups (refine.c)
MAX_GROUPS_FOR_EXCHANGE = 128
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93],
                dtype=np.uint64)


def group_shapes(machine: Machine, lv: int, order: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per group of level lv (slots `order`, `counts` each): a signature >= 0 equal for
    groups whose exchange changes only their traffic with the other groups (refine.c's
    screened subtree exchanges): each group sits under its own ancestors, is as far from
    every slot of another group, and has the same inner shape, read as its slots' level ids
    below lv relative to its first slot's (a sufficient test: groups it misses are scored in
    full). -1 where that does not hold."""
    G = len(counts)
    none = np.full(G, -1, dtype=np.int64)
    lvl = machine.lvl
    if not 2 <= G <= MAX_GROUPS_FOR_EXCHANGE or (isinstance(machine.network, Torus) and lv < machine.node_level):
        return none            # torus hops between the nodes of one group: distances not the group's
    first = np.repeat(np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
    rows = lvl[order]
    if (rows[:, :lv + 1] != rows[first, :lv + 1]).any():
        return none            # a level's ids not nested under the one above
    rel = (rows[:, lv + 1:] - rows[first, lv + 1:]).astype(np.uint64)
    pos = (np.arange(len(order)) - first).astype(np.uint64)
    h = pos * _MIX[0] + np.uint64(1)
    for c in range(rel.shape[1]):
        h = (h ^ rel[:, c]) * _MIX[1 + c % 3]
        h ^= h >> np.uint64(29)
    sig = np.add.reduceat(h, np.concatenate([[0], np.cumsum(counts)[:-1]])) ^ counts.astype(np.uint64) * _MIX[3]
    return (sig >> np.uint64(2)).astype(np.int64)


# Above 5*10^4 ranks, graphs of skewed degrees (partition.degree_skewed: scale-free traffic)
# and more than DENSE_PASSES_NNZ nonzeros get at most DENSE_PASSES passes of the descent
# (refine's max_passes), not 3: a pass there takes about 1.2 s (social/100k/torus, 2.1*10^6
# nonzeros), and the third gained 0.06-0.17 % (social/100k/torus/s0 and switch4/s0, the splits
# batched: CPU 5.9 -> 4.6 s and 4.8 -> 4.1 s); one pass lost 0.2-0.7 %. On every dense graph it
# also took stencil27/100k/torus/s0 0.32 % dearer (two passes there from the grid's bricks),
# hence skewed ones only (DENSE_PASSES_SKEWED_ONLY). Issue 13: 10^5 ranks in 5 s (held out:
# social/100k/torus/s1000 and switch4/s1000 with the batched splits, 10.7 -> 5.0 s and 6.2 -> 4.4 s,
# costs 0.990 and 1.003; docs/mapper-history.md, Scale)
DENSE_PASSES_NNZ = 1_500_000
DENSE_PASSES = 2
DENSE_PASSES_SKEWED_ONLY = True


def _skewed(graph) -> bool:
    from rankmap.mapper.partition import degree_skewed
    return not DENSE_PASSES_SKEWED_ONLY or degree_skewed(graph)


class Problem:
    """Graph + machine in the layout the C code reads (the arrays stay alive with it)."""

    def __init__(self, graph: Graph, machine: Machine):
        W = graph.W
        self.keep = []
        self.graph = graph

        def arr(x, dtype=np.int64):
            a = np.ascontiguousarray(x, dtype=dtype)
            self.keep.append(a)
            return a
        xadj, adj, w = arr(W.indptr), arr(W.indices), arr(W.data, np.float64)
        lvl, acc = arr(machine.lvl), arr(machine.acc, np.float64)
        torus = isinstance(machine.network, Torus)
        dims = arr(machine.network.dims if torus else [1])
        wrap = arr(machine.network.wrap if torus else [0], np.uint8)
        coords = arr(machine.network.coords[machine.slot_node] if torus else np.zeros((1, 1)))
        cand = machine.lvl.shape[1] - 2 if machine.lvl.shape[1] >= 2 else 0
        order, counts = groups(machine.lvl[:, cand])
        grp = np.empty(machine.nslots, dtype=np.int64)
        grp[order] = np.repeat(np.arange(len(counts)), counts)
        grp = arr(grp)
        ptr = arr(np.concatenate([[0], np.cumsum(counts)]))
        gslots = arr(order)
        # the groups of every level above the cores, for subtree exchanges
        glev, gptr, gslot, gsig = [0], [0], [], []
        for lv in range(machine.lvl.shape[1] - 1):
            order, counts = groups(machine.lvl[:, lv])
            gslot.append(order)
            gptr.extend((gptr[-1] + np.cumsum(counts)).tolist())
            glev.append(glev[-1] + len(counts))
            gsig.append(group_shapes(machine, lv, order, counts))
        glev, gptr = arr(glev), arr(gptr)
        gslot = arr(np.concatenate(gslot) if gslot else [0])
        gsig = arr(np.concatenate(gsig) if gsig else [-1])
        self.s = _Problem(graph.n, _p(xadj), _p(adj), _p(w, PD), machine.nslots, machine.lvl.shape[1],
                          machine.node_level, _p(lvl), _p(acc, PD), len(dims) if torus else 0, _p(dims),
                          wrap.ctypes.data_as(C.POINTER(C.c_uint8)), _p(coords),
                          float(machine.hop_cost), cand, _p(grp), _p(ptr), _p(gslots),
                          len(ptr) - 1, len(glev) - 1, _p(glev), _p(gptr), _p(gslot), _p(gsig))

    def cost(self, slot_of_rank: np.ndarray) -> float:
        s = np.ascontiguousarray(slot_of_rank, dtype=np.int64)
        return float(_lib().rm_cost(C.byref(self.s), _p(s)))

    def tabu(self, slot_of_rank: np.ndarray, seed: int, iterations: int, time_cap: float = 1e9):
        """Iterated robust tabu search (small machines: memory and steps grow with slots^2).
        Returns (slot_of_rank, cost, timed_out)."""
        s = np.ascontiguousarray(slot_of_rank, dtype=np.int64).copy()
        out, cut = C.c_double(), C.c_int32()
        _lib().rm_tabu(C.byref(self.s), _p(s), int(seed), float(time_cap), int(iterations), C.byref(out), C.byref(cut))
        return s, float(out.value), bool(cut.value)

    def refine(self, slot_of_rank: np.ndarray, seed: int, ils_rounds: int = 0, time_cap: float = 1e9,
               max_passes: int | None = None):
        """Descent to a local minimum, then `ils_rounds` kicks. Returns (slot_of_rank, cost, timed_out)."""
        if max_passes is None:   # converge on small problems; on big ones the first passes gain most
            n = len(slot_of_rank)
            # (and a 0.1 % gain floor above 256); above 5*10^4 ranks the C pass screens its
            # candidates (refine.c SCREEN_ABOVE) and gets one more; at 10^5 ranks a pass takes ~0.6 s
            max_passes = 1000 if n <= 2000 else 8 if n <= 20000 else 2 if n <= 50000 else 3 if n <= 200000 else 1
            if n > 50000 and self.graph is not None and self.graph.W.nnz > DENSE_PASSES_NNZ and _skewed(self.graph):
                max_passes = min(max_passes, DENSE_PASSES)
        s = np.ascontiguousarray(slot_of_rank, dtype=np.int64).copy()
        prob, perm = self, None
        # above this size the C passes visit blocks of consecutive ranks: numbered by slot, a
        # block's edges, rows and candidate occupants sit together (refine.c, BLOCK_ORDER_ABOVE)
        if len(s) > _lib().rm_block_order_above():
            perm = np.argsort(s, kind="stable")       # new rank k is old rank perm[k]
            prob, s = self._renumbered(perm), s[perm]
        out, cut = C.c_double(), C.c_int32()
        _lib().rm_refine(C.byref(prob.s), _p(s), int(seed), float(time_cap), int(max_passes), int(ils_rounds),
                         C.byref(out), C.byref(cut))
        if perm is not None:
            back = np.empty_like(s)
            back[perm] = s
            s = back
        return s, float(out.value), bool(cut.value)

    def _renumbered(self, perm: np.ndarray) -> "Problem":
        """This problem with rank perm[k] renamed k (the machine's arrays shared): the rows
        gathered in O(nnz), each row's columns left in their order."""
        W = self.graph.W
        indptr = np.asarray(W.indptr, dtype=np.int64)
        deg = np.diff(indptr)[perm]
        ptr = np.zeros(len(perm) + 1, dtype=np.int64)
        np.cumsum(deg, out=ptr[1:])
        gather = np.repeat(indptr[perm] - ptr[:-1], deg)
        gather += np.arange(len(gather), dtype=np.int64)
        inv = np.empty_like(perm)
        inv[perm] = np.arange(len(perm), dtype=np.int64)
        adj = inv[W.indices[gather]]
        w = np.ascontiguousarray(W.data[gather], dtype=np.float64)
        del gather
        q = Problem.__new__(Problem)
        q.graph, q.keep = None, self.keep + [ptr, adj, w]
        q.s = _Problem.from_buffer_copy(self.s)
        q.s.xadj, q.s.adj, q.s.w = _p(ptr), _p(adj), _p(w, PD)
        return q
