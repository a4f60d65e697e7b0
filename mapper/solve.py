"""Compute a mapping: hierarchical partitioning (METIS or Scotch) or greedy, refined by local
search on the true cost, several seeds, and never worse than the default orders
(block, cyclic, the profiled run's own placement): when one of those is at least as good,
it is returned instead, and the result says so."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from mapper import baselines
from mapper.graph import Graph, from_traffic
from mapper.machine import Machine
from mapper.partition import hierarchical
from mapper.refine import Problem
from profiler.errors import UserError
from profiler.traffic import Traffic

ALGORITHMS = ("metis", "scotch", "greedy", "random", "block", "cyclic")


@dataclass
class Result:
    slot_of_rank: np.ndarray
    cost: float
    algorithm: str
    chosen: str                 # which candidate won: "metis", "block+refine", "block", ...
    fell_back: bool             # a default order was at least as good as the computed mapping
    candidates: dict            # name -> cost
    defaults: dict              # block / cyclic / input -> cost
    seconds: float
    notes: list = field(default_factory=list)


TABU_SLOTS = 256   # up to this many slots the tabu search (O(slots^2) memory and steps) is used


def default_time_limit(n: int) -> float:
    """Search budget: 0.25 s up to 10^3 ranks, 0.5 s at 10^4, 4 s at 10^5, 40 s at 10^6."""
    return max(0.25, 0.06 + 4e-5 * n)


def check_fits(n: int, machine: Machine) -> None:
    if n > machine.nslots:
        raise UserError(f"{n} ranks but only {machine.nslots} slots on {machine.nnodes} node(s); add nodes, "
                        "or use --oversubscribe N to put N ranks on each core")


def solve(traffic: Traffic, machine: Machine, algorithm: str = "metis", seed: int = 0, tries: int = 3,
          time_limit: float | None = None, refine: bool = True, fill: str = "packed",
          graph: Graph | None = None) -> Result:
    if algorithm not in ALGORITHMS:
        raise UserError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    t0 = time.monotonic()
    n = traffic.size
    check_fits(n, machine)
    graph = graph or from_traffic(traffic)
    notes = []
    comps, isolated = graph.components()
    if comps > 1 or isolated:
        notes.append(f"the traffic graph is disconnected: {comps} group(s) of communicating ranks"
                     + (f", {isolated} rank(s) exchange nothing" if isolated else "") + "; each is mapped anyway")
    prob = Problem(graph, machine)
    budget = default_time_limit(n) if time_limit is None else time_limit

    defaults = {"block": baselines.block(n, machine), "cyclic": baselines.cyclic(n, machine)}
    placed = baselines.from_placement(traffic.placement, machine)
    if placed is not None:
        defaults["input"] = placed
    default_costs = {k: prob.cost(v) for k, v in defaults.items()}

    # Starts: the algorithm's own mappings (several seeds), and the default orders. Each
    # descends to a local minimum; METIS starts keep coming (new seeds, at least `tries`)
    # while half the budget lasts, since on small machines the basin a start falls into
    # matters more than the search after it; the best then gets the rest of the budget
    # for iterated local search.
    search = refine and algorithm not in ("random", "block", "cyclic")
    root = machine.tree() if algorithm == "metis" else None

    def make(t):
        sd = seed + t
        if algorithm == "metis":
            return "metis", hierarchical(graph, machine, root, sd, fill), sd
        if algorithm == "scotch":
            from mapper.scotch import scotch_map
            return "scotch", scotch_map(graph, machine, sd), sd
        if algorithm == "greedy":
            return "greedy", baselines.greedy(graph, machine, sd), sd
        if algorithm == "random":
            return "random", baselines.random(n, machine, sd), sd
        return algorithm, defaults[algorithm].copy(), sd

    fixed = [make(t) for t in range(max(1, tries) if algorithm in ("metis", "scotch") else 1)]
    if search:
        # the default orders refined are candidates too: structured codes often start close to them
        fixed += [(f"{k}+refine", v.copy(), seed) for k, v in defaults.items()]
    candidates = {}
    best = None
    deadline = time.monotonic() + budget
    half = time.monotonic() + budget / (4 if machine.nslots <= TABU_SLOTS else 2)

    def run(name, s, sd):
        nonlocal best
        if search:
            s, c, _ = prob.refine(s, sd, max(0.0, half - time.monotonic()), ils=False)
            label = name if name.endswith("+refine") else f"{name}+refine"
        else:
            c, label = prob.cost(s), name
        key = label if label not in candidates else f"{label}#{sd}"
        candidates[key] = c
        if best is None or c < best[1] - 1e-12 * abs(best[1]):
            best = (key, c, s, sd)

    for start in fixed:
        run(*start)
    t = len(fixed)
    while search and algorithm == "metis" and time.monotonic() < half and n <= 20000:
        run(*make(t))
        t += 1
    if search and machine.nslots <= TABU_SLOTS:
        # small machines: a quadratic assignment problem of m slots; iterated tabu search
        s, c, _ = prob.tabu(best[2], best[3] + 104729, max(0.0, deadline - time.monotonic()))
    elif search and n <= 5000:
        s, c, _ = prob.refine(best[2], best[3] + 104729, max(0.0, deadline - time.monotonic()), ils=True)
    if search and n <= 5000:
        if c < best[1]:
            best = (best[0], c, s, best[3])
            candidates[best[0]] = c
    best = best[:3]
    chosen, cost, slot = best
    fell_back = False
    if algorithm in ("metis", "scotch", "greedy"):
        dname = min(default_costs, key=default_costs.get)
        if default_costs[dname] <= cost:
            chosen, cost, slot, fell_back = dname, default_costs[dname], defaults[dname].copy(), True
            notes.append(f"the {dname} order is at least as good as the computed mapping "
                         f"({default_costs[dname]:.6g} vs {best[1]:.6g}); it is returned unchanged")
    _validate(slot, n, machine)
    return Result(slot_of_rank=slot, cost=cost, algorithm=algorithm, chosen=chosen, fell_back=fell_back,
                  candidates=candidates, defaults=default_costs, seconds=time.monotonic() - t0, notes=notes)


def _validate(slot: np.ndarray, n: int, machine: Machine) -> None:
    if len(slot) != n or slot.min() < 0 or slot.max() >= machine.nslots or len(np.unique(slot)) != n:
        raise AssertionError("internal error: the mapping is not a one-to-one assignment of ranks to slots")
