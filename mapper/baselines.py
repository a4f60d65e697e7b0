"""Mappings to compare with (and fall back to): block (= identity, Slurm's default),
cyclic (round-robin over nodes), random, the profiled run's own placement, and a greedy
TreeMatch-style construction. All return slot_of_rank."""
from __future__ import annotations

import heapq

import numpy as np

from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine


def block(n: int, machine: Machine) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def balanced(n: int, machine: Machine, extra_on=None) -> np.ndarray:
    """Block order with the ranks spread evenly over the nodes: each node takes the same
    number of consecutive ranks (one more on the first nodes, or on the nodes `extra_on`,
    and no more than its slots), its first slots. What Slurm's block distribution gives
    with -n and -N on nodes that are not filled (32 ranks on 6 nodes of 6 cores: 6, 6, 5,
    5, 5, 5); with n = the machine's slots, block itself."""
    base, room, extra = spread_counts(n, machine)
    take = base.copy()
    on = list(room[:extra]) if extra_on is None else list(extra_on)
    if len(on) != extra or not set(on) <= set(room.tolist()):
        raise ValueError(f"the extra ranks go on {extra} of the nodes {room.tolist()}, not {on}")
    take[on] += 1
    node = machine.slot_node
    order = np.argsort(node, kind="stable")         # each node's slots in slot order
    first = np.searchsorted(node[order], np.arange(machine.nnodes))
    return np.concatenate([order[first[k]:first[k] + take[k]] for k in range(machine.nnodes)]).astype(np.int64)


def spread_counts(n: int, machine: Machine) -> tuple:
    """(base, room, extra): n ranks spread evenly over the nodes take base[k] on node k, and
    `extra` more ranks, one on each of `extra` of the nodes `room` (those with a slot left)."""
    count = np.bincount(machine.slot_node, minlength=machine.nnodes)
    lo, hi = 0, max(1, int(count.max(initial=0)))
    while lo < hi:                                  # the fewest ranks per node that hold n
        mid = (lo + hi) // 2
        if np.minimum(count, mid).sum() >= n:
            hi = mid
        else:
            lo = mid + 1
    base = np.minimum(count, max(lo - 1, 0))
    return base, np.flatnonzero(count > base), n - int(base.sum())


def cyclic(n: int, machine: Machine) -> np.ndarray:
    """Rank r on node r mod N (skipping full nodes), each node's slots in order."""
    # round r takes the r-th slot of every node that still has one, in node order: the slots
    # sorted by (their place among their node's slots, node); in numpy (a list of the slots
    # took 5 s at 6.4 * 10^6 slots)
    node = machine.slot_node
    if len(node) < 2 or (node[1:] >= node[:-1]).all():          # built machines: slots in node order
        order = np.arange(machine.nslots)
    else:
        order = np.argsort(node, kind="stable")                 # each node's slots in slot order
    first = np.searchsorted(node[order], np.arange(machine.nnodes))
    place = np.empty(machine.nslots, dtype=np.int64)
    place[order] = np.arange(machine.nslots) - first[node[order]]
    # the first n ranks fill the first R rounds (the fewest that hold n slots): only their
    # slots are sorted (10 ranks on 6.4 * 10^6 slots: one round, 10^5 slots, not all of them)
    count = np.bincount(node, minlength=machine.nnodes)
    lo, hi = 1, max(1, int(count.max(initial=0)))
    while lo < hi:
        mid = (lo + hi) // 2
        if np.minimum(count, mid).sum() >= n:
            hi = mid
        else:
            lo = mid + 1
    cand = np.flatnonzero(place < lo)
    return cand[np.lexsort((node[cand], place[cand]))][:n].astype(np.int64)


def random(n: int, machine: Machine, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).permutation(machine.nslots)[:n].astype(np.int64)


def from_placement(placement: list | None, machine: Machine) -> np.ndarray | None:
    """Slots matching a profiled run's (host, affinity) per rank, when its hosts are in this
    machine; ranks whose core is unknown (no binding) take the next free slot of their node."""
    if not placement or len(placement) > machine.nslots:
        return None
    index = {h: i for i, h in enumerate(machine.hosts)}
    if any(h not in index for h, _ in placement):
        return None
    free = {k: list(v) for k, v in enumerate(machine.slots_by_node())}
    out = np.full(len(placement), -1, dtype=np.int64)
    pending = []
    for r, (h, cpus) in enumerate(placement):
        node = index[h]
        cores = _cores_of(cpus, machine.topos[node])
        slot = None
        if len(cores) == 1:
            cands = [s for s in free[node] if machine.slot_core[s] == cores[0]]
            slot = cands[0] if cands else None
        if slot is None:
            pending.append((r, node))
        else:
            free[node].remove(slot)
            out[r] = slot
    for r, node in pending:
        if not free[node]:
            return None
        out[r] = free[node].pop(0)
    return out


def _cores_of(cpus: str | None, topo) -> list[int]:
    if not cpus:
        return []
    m = topo.core_of_pu()
    top = max(m, default=-1)
    pus = set()
    for part in cpus.split(","):
        a, _, b = part.partition("-")
        try:
            # clipped to the node's PUs: a damaged "0-99999999999" would fill memory
            pus.update(range(int(a), min(int(b or a), top) + 1))
        except ValueError:
            return []
    return sorted({m[p] for p in pus if p in m})


def greedy(graph: Graph, machine: Machine, seed: int) -> np.ndarray:
    """Grow the mapping from the heaviest rank: repeatedly take the unplaced rank most
    connected to the placed ones and give it the free slot that costs least with its
    placed partners (candidates: free slots beside those partners, and the next free slot)."""
    W = graph.W
    n = graph.n
    rng = np.random.default_rng(seed)
    slot = np.full(n, -1, dtype=np.int64)
    occupied = np.zeros(machine.nslots, bool)
    group = machine.lvl[:, -2] if machine.lvl.shape[1] >= 2 else machine.lvl[:, 0]
    by_group = {}
    for s in range(machine.nslots):
        by_group.setdefault(int(group[s]), []).append(s)
    next_free = 0
    strength = np.zeros(n)
    heap = []
    deg = np.asarray(W.sum(axis=1)).ravel()
    order = np.lexsort((rng.random(n), -deg))
    seeds = iter(order)
    placed = 0
    while placed < n:
        r = -1
        while heap:
            neg, cand = heapq.heappop(heap)
            if slot[cand] < 0 and -neg == strength[cand]:
                r = cand
                break
        if r < 0:
            r = next(x for x in seeds if slot[x] < 0)
        a, b = W.indptr[r], W.indptr[r + 1]
        nb, w = W.indices[a:b], W.data[a:b]
        done = slot[nb] >= 0
        cands = set()
        for s in slot[nb[done]]:
            for t in by_group[int(group[s])]:
                if not occupied[t]:
                    cands.add(t)
                    if len(cands) > 64:
                        break
        while next_free < machine.nslots and occupied[next_free]:
            next_free += 1
        if next_free < machine.nslots:
            cands.add(next_free)
        cands = np.array(sorted(cands), dtype=np.int64)
        if done.any():
            ps, pw = slot[nb[done]], w[done]
            cost = np.array([(pw * machine.distance(np.full(len(ps), c), ps)).sum() for c in cands])
            best = int(cands[int(np.argmin(cost))])
        else:
            best = int(cands[0])
        slot[r] = best
        occupied[best] = True
        placed += 1
        for k, x in zip(nb, w):
            if slot[k] < 0:
                strength[k] += x
                heapq.heappush(heap, (-strength[k], int(k)))
    return slot
