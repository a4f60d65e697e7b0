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
    nodes = np.asarray(sorted(set(int(x) for x in nodes)))
    keep = np.isin(machine.slot_node, nodes)
    if slots is not None:
        keep &= np.isin(np.arange(machine.nslots), slots)
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
    keep = []
    for k, slots in enumerate(machine.slots_by_node()):
        t = machine.topos[k]
        cores = machine.slot_core[slots]
        occ = np.zeros(len(slots), dtype=np.int64)          # the how-many-th slot of its core
        seen = {}
        for i, c in enumerate(cores.tolist()):
            occ[i] = seen.get(c, 0)
            seen[c] = occ[i] + 1
        groups = {}
        for i in np.lexsort((cores, occ)):
            groups.setdefault((t.core_package[cores[i]], t.core_numa[cores[i]]), []).append(slots[i])
        queues = [list(q) for q in groups.values()]
        chosen, i = [], 0
        while len(chosen) < take[k]:
            q = queues[i % len(queues)]
            if q:
                chosen.append(q.pop(0))
            i += 1
        keep += chosen
    sel = np.sort(np.array(keep, dtype=np.int64))
    # fewer ranks than nodes: the nodes left without a rank leave the machine (a node of no slots
    # has no place in the machine tree)
    return restrict(machine, np.unique(machine.slot_node[sel]), sel), sel


def core_round(machine: Machine) -> np.ndarray:
    """Per slot, the how-many-th slot of its core it is (0 for a core's first slot; with
    --oversubscribe N, 0..N-1)."""
    key = machine.slot_node * (int(machine.slot_core.max()) + 1) + machine.slot_core
    order = np.argsort(key, kind="stable")
    k = key[order]
    start = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
    occ = np.empty(machine.nslots, dtype=np.int64)
    occ[order] = np.arange(machine.nslots) - np.repeat(start, np.diff(np.r_[start, machine.nslots]))
    return occ


def cores_first(machine: Machine, nranks: int) -> tuple[Machine, np.ndarray, str] | None:
    """--oversubscribe N for ranks that are processes: distinct cores first, a core's second
    slot only for the ranks the cores cannot hold (the cost model prices two ranks of one core
    at 0, so on the whole machine the search packed them in pairs onto half the cores, idle
    ones beside). Up to one rank per core: the machine of one slot per core (all nodes, so
    node indices stay; the packed fill then takes the fewest nodes as without
    --oversubscribe). More: every core's first slot and the rest spread evenly over nodes and
    packages (spread). None when nothing is oversubscribed or every slot is taken. Returns
    (the reduced machine, its slots' indices in the whole machine, a note)."""
    if nranks >= machine.nslots:
        return None
    first = np.flatnonzero(core_round(machine) == 0)
    cores = len(first)
    if cores == machine.nslots:
        return None
    if nranks <= cores:
        return (restrict(machine, np.arange(machine.nnodes), first), first,
                f"--oversubscribe: the {nranks} ranks fit on the {cores} cores, one rank per core as without "
                "it; a core takes several only when the ranks outnumber the cores")
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
