"""Which nodes to map onto.

* same allocation: the nodes given (for a profile, by default the nodes the run had);
* whole cluster: among the available nodes, choose a compact part of the network with
  enough slots — on a torus the candidate sub-boxes (every shape and offset, with
  wrap-around) that hold the ranks with the fewest nodes, the most compact first; each
  of the best few is mapped quickly and the cheapest wins."""
from __future__ import annotations

import itertools

import numpy as np

from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Hierarchy, Torus
from rankmap.profiler.errors import UserError

CANDIDATES = 6


def restrict(machine: Machine, nodes, slots: np.ndarray | None = None) -> Machine:
    """The same machine reduced to some of its nodes (network coordinates kept), and to some
    of their slots (indices, ascending) if given."""
    from dataclasses import replace
    nodes = np.unique(np.fromiter(nodes, dtype=np.int64))
    mask = np.zeros(machine.nnodes, dtype=bool)
    mask[nodes] = True
    keep = mask[machine.slot_node]
    if slots is not None:
        chosen = np.zeros(machine.nslots, dtype=bool)
        chosen[slots] = True
        keep &= chosen
    remap = -np.ones(machine.nnodes, dtype=np.int64)
    remap[nodes] = np.arange(len(nodes))
    net = machine.network
    if net is not None:
        net = net.subset(nodes)        # every node keeps its place in the network
    return replace(machine, hosts=[machine.hosts[k] for k in nodes], topos=[machine.topos[k] for k in nodes],
                   network=net, slot_node=remap[machine.slot_node[keep]], slot_core=machine.slot_core[keep],
                   lvl=machine.lvl[keep])


def spread(machine: Machine, nranks: int) -> tuple[Machine, np.ndarray]:
    """--fill spread: the machine reduced to nranks slots spread evenly over all its nodes (in
    proportion to their slots, the largest remainders first) and, on each node, over its
    packages and NUMA nodes (round robin, distinct cores before a core's second slot). The
    search then moves ranks among these slots only, so the spread holds (on the whole machine
    the local search packed them back). Returns (the reduced machine, its slots' indices in
    the whole machine)."""
    cap = node_capacity(machine)
    quota = nranks * cap / cap.sum()
    take = np.floor(quota).astype(np.int64)
    extra = nranks - int(take.sum())
    take[np.argsort(-(quota - take), kind="stable")[:extra]] += 1
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
    sel = np.flatnonzero(nth < take[node])                    # ascending, as slot indices are
    # fewer ranks than nodes: the nodes left without a rank leave the machine (a node of no slots
    # has no place in the machine tree)
    return restrict(machine, np.flatnonzero(take > 0), sel), sel


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


def _torus_boxes(machine: Machine, cap: np.ndarray, nranks: int) -> list[np.ndarray]:
    net = machine.network
    dims = net.dims
    at = {tuple(c): k for k, c in enumerate(net.coords.tolist())}   # position -> available node
    found = []
    for shape in itertools.product(*(range(1, d + 1) for d in dims)):
        vol = int(np.prod(shape))
        if vol * cap.max() < nranks:
            continue
        for off in itertools.product(*(range(d) for d in dims)):
            ranges = [[(o + i) % d for i in range(s)] for o, s, d in zip(off, shape, dims)]
            nodes = [at[p] for p in itertools.product(*ranges) if p in at]
            if cap[nodes].sum() < nranks:
                continue
            # fewest nodes first, then the most cubic box (smallest sum of extents)
            found.append((len(nodes), sum(shape), vol, tuple(sorted(nodes))))
        if len(found) > 20000:
            break
    if not found:
        raise UserError("no sub-box of the torus holds enough available slots")
    found.sort()
    out, seen = [], set()
    for _, _, _, nodes in found:
        if nodes not in seen:
            seen.add(nodes)
            out.append(np.array(nodes))
        if len(out) >= CANDIDATES:
            break
    return out


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
