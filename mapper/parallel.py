"""`rankmap map --parallel N`: the mapping computed by a distributed engine, for rank counts
beyond one machine's memory or patience (10^7 ranks).

PT-Scotch maps in parallel only onto complete graphs (its dgraphMap partitions; other
target architectures are "not implemented yet" in 7.0), so the work is split the way
TopoMatch-style mappers split it:

1. partition: the traffic graph is cut by PT-Scotch, as an MPI job of N processes (each
   reading only its share of the graph), into k parts of (nearly) equal size, k = the
   nodes needed (ceil(ranks / cores per node));
2. exact sizes: the few ranks over a part's size (PT-Scotch balances within 1 %) move to
   the parts with room, each to the part it talks to most among them;
3. map the parts: the node-level traffic (k vertices) is mapped onto the machine's nodes
   with rankmap's own mapper — the network (torus, tree, dragonfly, Slurm's switches)
   matters here;
4. place: each part's ranks take its node's cores in rank order;
5. the same checks as `rankmap map`: a one-to-one placement, never worse than block,
   cyclic or the input order (the cheapest of them is returned otherwise, with a note).

The engine is handed a binary file (format in csrc/ptscotch/ptpart.c) and a function that
runs it: launching an MPI job (srun in an allocation, else mpirun) is the Slurm layer's
business (rankmap.slurm.parallel)."""
from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import baselines
from rankmap.mapper.graph import Graph, from_traffic
from rankmap.mapper.machine import Machine
from rankmap.mapper.solve import MIN_GAIN, Result, check_fits, fell_back_note
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic

MAGIC = b"RMPTG1\x00\x00"
IMBALANCE = 0.01


def write_graph(W: sp.csr_matrix, sizes: np.ndarray, path: Path) -> None:
    """The symmetric graph (weights scaled to integers >= 1 whose sum fits 62 bits) and the
    parts' sizes, in the engine's binary format."""
    n = W.shape[0]
    total = float(W.data.sum()) or 1.0
    scale = min(1.0, 2.0 ** 60 / total) if total > 2.0 ** 60 else max(1.0, 2.0 ** 20 / max(1.0, float(W.data.max())))
    w = np.maximum(1, np.rint(W.data * scale)).astype("<i8")
    if float(w.sum()) >= 2.0 ** 62:
        w = np.maximum(1, np.rint(W.data * (2.0 ** 60 / total))).astype("<i8")
    with open(path, "wb") as f:
        f.write(MAGIC)
        np.array([n, W.nnz, len(sizes)], dtype="<i8").tofile(f)
        W.indptr.astype("<i8").tofile(f)
        W.indices.astype("<i4").tofile(f)
        w.tofile(f)
        np.asarray(sizes, dtype="<i8").tofile(f)


def exact_sizes(W: sp.csr_matrix, part: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Move the ranks over each part's target size to parts with room: the excess ranks of a
    part are the ones with least traffic inside it; each goes to the part with room it talks
    to most (else the first part with room)."""
    part = part.copy()
    k = len(target)
    count = np.bincount(part, minlength=k)
    if (count <= target).all():
        return part
    rows = np.repeat(np.arange(W.shape[0]), np.diff(W.indptr))
    inside = np.bincount(rows, weights=W.data * (part[rows] == part[W.indices]), minlength=W.shape[0])
    movers = []
    # each part's members in rank order, found once (a scan of all ranks per part over its
    # size took 164 s at 10^7 ranks)
    by_part = np.argsort(part, kind="stable")
    start = np.concatenate(([0], np.cumsum(count)))
    for p in np.flatnonzero(count > target):
        mem = by_part[start[p]:start[p + 1]]
        movers.append(mem[np.argsort(inside[mem], kind="stable")[: count[p] - target[p]]])
    movers = np.concatenate(movers)
    room = target - np.minimum(count, target)
    count = np.minimum(count, target)
    for r in movers:
        a, b = W.indptr[r], W.indptr[r + 1]
        nb, w = part[W.indices[a:b]], W.data[a:b]
        best = -1
        if len(nb):
            order = np.argsort(-w, kind="stable")
            for q in nb[order]:
                if room[q] > 0:
                    best = int(q)
                    break
        if best < 0:
            best = int(np.flatnonzero(room > 0)[0])
        part[r] = best
        room[best] -= 1
    return part


def quotient(W: sp.csr_matrix, part: np.ndarray, k: int) -> sp.csr_matrix:
    """Traffic between parts (the node-level graph), without the diagonal."""
    c = W.tocoo()
    Q = sp.coo_matrix((c.data, (part[c.row], part[c.col])), shape=(k, k)).tocsr()
    Q.setdiag(0)
    Q.eliminate_zeros()
    return Q


def node_machine(machine: Machine) -> Machine:
    """The machine with one slot per node: the network and the levels above the node (the
    same costs between nodes)."""
    from rankmap.mapper import hwtopo
    L = machine.node_level + 1
    first = np.searchsorted(machine.slot_node, np.arange(machine.nnodes))
    return replace(machine, topos=[hwtopo.load("core:1")] * machine.nnodes,
                   level_names=machine.level_names[:L] + ["core"],
                   level_costs=np.concatenate([machine.level_costs[:L], [0.0]]),
                   slot_node=np.arange(machine.nnodes), slot_core=np.zeros(machine.nnodes, dtype=np.int64),
                   lvl=np.concatenate([machine.lvl[first, :L], np.arange(machine.nnodes)[:, None]], axis=1),
                   acc=np.concatenate([machine.acc[:L], [0.0, 0.0]]))


def map_parallel(traffic: Traffic, machine: Machine, run: Callable[[Path, Path, float, int], str], work: Path,
                 seed: int = 0, refine: bool = True, time_limit: float | None = None,
                 graph: Graph | None = None) -> tuple[Result, dict]:
    """run(graph_file, out_file, imbalance, seed) runs the engine and returns its report line."""
    from rankmap.mapper import solve as solve_mod
    from rankmap.mapper.refine import Problem
    t0 = time.monotonic()
    n = traffic.size
    check_fits(n, machine, traffic)
    graph = graph or from_traffic(traffic)
    if graph.empty():                   # nothing to partition: no MPI job is started
        return solve_mod.nothing_exchanged(traffic, machine, "metis", seed, t0), {}
    W = graph.W
    notes, timing = [], {}
    per_node = np.bincount(machine.slot_node, minlength=machine.nnodes)
    if len(set(per_node.tolist())) != 1:
        raise UserError(f"--parallel needs nodes of one size (the parts are interchangeable between nodes), here "
                        f"{per_node.min()} to {per_node.max()} slots; map heterogeneous machines, or --fill spread, "
                        "without --parallel")
    cap = int(per_node[0])
    k = -(-n // cap)
    target = np.full(k, n // k)
    target[: n - int(target.sum())] += 1
    # 1. partition, as an MPI job
    work.mkdir(parents=True, exist_ok=True)
    gfile, pfile = work / "graph.rmptg", work / "parts.i32"
    t = time.monotonic()
    write_graph(W, target, gfile)
    timing["write_graph_s"] = time.monotonic() - t
    t = time.monotonic()
    line = run(gfile, pfile, IMBALANCE, seed)
    timing["engine_s"] = time.monotonic() - t
    timing["engine"] = line.strip()
    part = np.fromfile(pfile, dtype="<i4")
    if len(part) != n or (part < 0).any() or (part >= k).any():
        raise UserError(f"the parallel partitioner returned no valid partition ({pfile}: {len(part)} entries "
                        f"for {n} ranks)")
    # 2. exact sizes
    t = time.monotonic()
    over = int(np.maximum(np.bincount(part, minlength=k) - target, 0).sum())
    part = exact_sizes(W, part, target)
    timing["repair_s"] = time.monotonic() - t
    if over:
        notes.append(f"--parallel: {over} rank(s) moved to make the {k} parts exactly node-sized")
    # 3. map the parts onto the nodes
    t = time.monotonic()
    Q = quotient(W, part, k)
    nm = node_machine(machine)
    qt = Traffic(bytes=Q, source=f"{traffic.source} (parts)", format="quotient")
    if Q.nnz:
        # one start and a short search: at 10^7 ranks this graph has 10^5+ vertices
        res = solve_mod.solve(qt, nm, "metis", seed, tries=1, time_limit=time_limit, refine=refine, quick=True)
        node_of_part = nm.slot_node[res.slot_of_rank]
    else:
        node_of_part = np.arange(k)
    timing["map_parts_s"] = time.monotonic() - t
    # 4. each part's ranks on its node's cores, in rank order
    node = node_of_part[part]
    order = np.lexsort((np.arange(n), node))
    starts = np.searchsorted(machine.slot_node, np.arange(machine.nnodes))
    within = np.arange(n) - np.searchsorted(node[order], node[order])
    slot = np.empty(n, dtype=np.int64)
    slot[order] = starts[node[order]] + within
    # 5. the checks of `rankmap map`
    t = time.monotonic()
    prob = Problem(graph, machine)
    cost = prob.cost(slot)
    candidates = {"ptscotch+parts": cost}
    if refine:
        s2, c2, cut = prob.refine(slot, seed, 0, time_limit or 1e9, max_passes=2 if n < 1_000_000 else 1)
        if c2 < cost:
            slot, cost = s2, c2
            candidates["ptscotch+parts+refine"] = c2
        if cut:
            notes.append("the time limit cut the local search short")
    timing["refine_s"] = time.monotonic() - t
    defaults = {"block": baselines.block(n, machine), "cyclic": baselines.cyclic(n, machine)}
    placed = baselines.from_placement(traffic.placement, machine)
    if placed is not None:
        defaults["input"] = placed
    default_costs = {name: prob.cost(s) for name, s in defaults.items()}
    chosen, fell_back = "ptscotch" + ("+refine" if "ptscotch+parts+refine" in candidates else ""), False
    dname = min(default_costs, key=default_costs.get)
    if default_costs[dname] <= cost * (1 + MIN_GAIN):
        notes.append(fell_back_note(dname, default_costs[dname], cost, "parallel mapping"))
        chosen, cost, slot, fell_back = dname, default_costs[dname], defaults[dname].copy(), True
    solve_mod._validate(slot, n, machine)
    timing["total_s"] = time.monotonic() - t0
    return (Result(slot_of_rank=slot, cost=cost, algorithm="ptscotch", chosen=chosen, fell_back=fell_back,
                   candidates=candidates, defaults=default_costs, seconds=timing["total_s"], notes=notes), timing)
