"""Mt-KaHyPar's process mapping (its Steiner-tree metric onto a target graph of the
machine's cores or nodes, with their exact costs) as a start of the search.

Why: on the real applications' rows at a weak network its mapping was the best competitor's
on several rows rankmap's own starts never reached (docs/real-apps.md); partitioning the
machine tree level by level cannot see a torus's distances between nodes, this does. Its
Steiner-tree table takes at most MAX_TARGET target vertices: the cores when there are that
few, else the nodes (then each node's ranks onto its cores in a second pass), else none.
Mt-KaHyPar is a runtime dependency (backends); without it there is no such start."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import backends
from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine

MAX_TARGET = 64        # Mt-KaHyPar's Steiner-tree precomputation refuses larger target graphs
WEIGHT_TOTAL = 2.0 ** 26


def available(machine: Machine) -> bool:
    return backends.mtkahypar_available() and min(len(np.unique(machine.lvl[:, -1])), machine.nnodes) <= MAX_TARGET


def _onto(W: sp.csr_matrix, rep: np.ndarray, cap: np.ndarray, machine: Machine, seed: int) -> np.ndarray:
    """Block (index into rep) of each vertex of W, block b holding at most cap[b] vertices."""
    mt, init = backends._mtkahypar()
    k, n = len(rep), W.shape[0]
    if k == 1 or n <= 1 or W.nnz == 0:
        return np.repeat(np.arange(k), cap)[:n]
    a, b = np.triu_indices(k, 1)
    d = machine.distance(rep[a], rep[b])
    dist = np.maximum(1, np.rint(d * (1000.0 / d.max()))).astype(np.int64)   # integers, ratios kept
    ctx = init.context_from_preset(mt.PresetType.QUALITY)
    ctx.logging = False
    ctx.set_mapping_parameters(k, 0.0)
    share = np.ceil(cap * n / cap.sum())       # even shares in proportion, never above a block's slots
    ctx.set_individual_target_block_weights([int(x) for x in np.minimum(cap, share)])
    mt.set_seed(int(seed) % (2 ** 31))
    up = sp.triu(W, k=1).tocoo()
    w = backends._int_weights(up.data, WEIGHT_TOTAL / float(dist.max()))
    g = init.create_graph(ctx, n, up.nnz, list(zip(up.row.tolist(), up.col.tolist())), [1] * n, w.tolist())
    T = init.create_target_graph(ctx, k, len(a), list(zip(a.tolist(), b.tolist())), dist.tolist())
    return np.asarray(g.map_onto_graph(T, ctx).get_partition(), dtype=np.int64)


def _slots_of(core_of_rank: np.ndarray, by_core: np.ndarray, bounds: np.ndarray, machine: Machine) -> np.ndarray:
    """One slot per rank: its core's slots in order (core c's slots are by_core[bounds[c]:
    bounds[c + 1]]); a rank over its core's slots (if the partitioner overfilled one) takes a
    free slot of the same node, else any free slot."""
    n = len(core_of_rank)
    order = np.argsort(core_of_rank, kind="stable")
    sc = core_of_rank[order]
    within = np.arange(n) - np.searchsorted(sc, sc)
    ok = within < np.diff(bounds)[sc]
    slot = np.full(n, -1, dtype=np.int64)
    slot[order[ok]] = by_core[bounds[sc[ok]] + within[ok]]
    used = np.zeros(machine.nslots, bool)
    used[slot[slot >= 0]] = True
    for r in order[~ok].tolist():          # rare: a few ranks at most
        want = machine.slot_node[by_core[bounds[core_of_rank[r]]]]
        free = np.flatnonzero(~used)
        same = free[machine.slot_node[free] == want]
        slot[r] = same[0] if len(same) else free[0]
        used[slot[r]] = True
    return slot


def steiner_map(graph: Graph, machine: Machine, seed: int = 0) -> np.ndarray | None:
    """Slot of each rank by Mt-KaHyPar's process mapping, or None where it cannot run
    (Mt-KaHyPar missing, more than MAX_TARGET cores and nodes)."""
    if not available(machine):
        return None
    W = graph.W
    _, core_id = np.unique(machine.lvl[:, -1], return_inverse=True)
    core_id = core_id.ravel()
    by_core = np.argsort(core_id, kind="stable")
    bounds = np.searchsorted(core_id[by_core], np.arange(core_id.max() + 2))
    rep, cap = by_core[bounds[:-1]], np.diff(bounds)
    if len(rep) <= MAX_TARGET:
        return _slots_of(_onto(W, rep, cap, machine, seed), by_core, bounds, machine)
    # two passes: the nodes, then each node's ranks onto its cores
    node_of_core = machine.slot_node[rep]
    node_rep = np.array([rep[node_of_core == v][0] for v in range(machine.nnodes)])
    node_cap = np.bincount(node_of_core, weights=cap, minlength=machine.nnodes).astype(np.int64)
    nb = _onto(W, node_rep, node_cap, machine, seed)
    core = np.empty(graph.n, dtype=np.int64)
    for v in range(machine.nnodes):
        idx = np.flatnonzero(nb == v)
        if not len(idx):
            continue
        mine = np.flatnonzero(node_of_core == v)
        sub = W[idx][:, idx].tocsr()
        core[idx] = mine[np.minimum(_onto(sub, rep[mine], cap[mine], machine, seed + 1 + v), len(mine) - 1)]
    return _slots_of(core, by_core, bounds, machine)
