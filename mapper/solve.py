"""Compute a mapping: hierarchical partitioning (METIS or Scotch) or greedy, refined by local
search on the true cost, several seeds, and never worse than the default orders
(block, cyclic, the profiled run's own placement): when one of those is at least as good
(within MIN_GAIN), it is returned instead, and the result says so."""
from __future__ import annotations

import ctypes
import time
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from rankmap.mapper import backends, baselines, libmetis
from rankmap.mapper.graph import LIGHT_TAIL, Graph, from_traffic
from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Torus
from rankmap.mapper.partition import hierarchical
from rankmap.mapper.refine import Problem
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic

ALGORITHMS = ("metis", "scotch", "greedy", "random", "block", "cyclic")


@dataclass
class Result:
    slot_of_rank: np.ndarray
    cost: float
    algorithm: str
    chosen: str                 # which candidate won: "metis", "block+refine", "block", ...
    fell_back: bool             # a default order was within MIN_GAIN of the computed mapping
    candidates: dict            # name -> cost
    defaults: dict              # block / cyclic / input -> cost
    seconds: float
    notes: list = field(default_factory=list)
    predicted: dict = field(default_factory=dict)   # candidate -> predicted communication seconds (with a network)


# A computed mapping replaces the launcher's default order only when the model says it is
# clearly cheaper: a gain in the noise of the cost model (uniform all-to-all traffic makes
# every permutation cost the same) is not worth the default's unmodelled regularity.
MIN_GAIN = 0.01

# With a network model (solve's `predictor`), the final choice among the candidate mappings is
# the one with the lowest predicted communication time, but the cost's choice is kept unless
# another candidate is predicted faster by more than PREDICT_MARGIN: predict's estimates of
# placements that cut the same bytes differ by noise, not by what a replay would show.
PREDICT_MARGIN = 0.01
# candidates the final estimate sees again (choose_predicted): the screening's best FINAL_TOP,
# and up to FINAL_MAX of those the screening puts within FINAL_BAND of its best. The in-turn
# screening is off by 3-16 % a candidate, and not alike: on NPB CG B 128 on Angara-K1 at /16
# (128 ranks, 27 candidates, all estimated both ways) its best three were 4.27-4.35 s
# screened, 4.69-4.95 s by the flows, and the flows' best (4.56 s) was its fourth (4.35 s)
FINAL_TOP = 3
FINAL_BAND = 0.05
FINAL_MAX = 8

# On big problems a start more than HOPELESS times the best start's cost is not refined:
# there the descent's few passes gain 1-4 % (random graphs 3.7 %, stencils 0.8 % at 10^5
# ranks) and a refinement takes seconds
UNREFINED_ABOVE = 50000
HOPELESS = 1.10
# An RCM start (mapper/ordering.py) is refined only if it starts within RCM_WITHIN of the best
# refined start: those that won did (unrefined 0.92-1.69 of the final cost), and refining the
# others took 0.2-0.5 s at 1k ranks on social traffic (unrefined 1.77-2.08; 1k tune and held-out
# first seeds, the fresh family; docs/mapper-history.md)
RCM_WITHIN = 1.75
PARTITION_SHARE = 0.5         # --time-limit: the partitionings' share of it (the search gets the rest)
# On a torus (or mesh) of nodes, traffic of this many ranks or more that is a process grid
# (cartesian.detect) gets its nested bricks as the only partitioning start, without the
# hierarchical bisections: on the 100k-rank tune instances (stencil7, stencil27; first seeds)
# the bisections' start cost 1.14-1.19x the bricks' before any search, so it was never refined
# (HOPELESS), and it took 3.8 s (stencil27) and 9.7 s (stencil7) of 6-10 s mappings. The
# mappings are the same (issue 13: 10^5 ranks in 5 s). --tries still partitions.
GRID_ALONE_ABOVE = UNREFINED_ABOVE

TABU_SLOTS = 256   # up to this many slots the tabu search (O(slots^2) memory and steps) is used
# On a torus (or mesh) of nodes, mappings of fewer than TORUS_ILS_BELOW ranks on more than
# TABU_SLOTS slots get TORUS_ILS_ROUNDS kicks of iterated local search on the best: there the
# single descent stops in a basin the kicks leave (issue 9, patterns family on the 4x4x4 torus:
# periodic3-perm 1.032 -> 0.997 of the best anchor, lattice4 -3.2 %, periodic3 -1.0 %; no
# tune instance of 1k ranks dearer; +0.1-0.6 s a mapping on the tori, nothing elsewhere)
TORUS_ILS_ROUNDS = 20
TORUS_ILS_BELOW = 2000


@dataclass
class Effort:
    """How much search: fixed amounts of work, so that a seed always gives the same mapping
    (the time limit is only a safety cap; the result says when it cut the search short)."""
    starts: int            # partitionings with different seeds
    ils_rounds: int        # kicks of iterated local search on the best
    tabu_iters: int        # iterated tabu search steps on the best (small machines)
    refine_defaults: bool  # also descend from block / cyclic (the input order always)


def effort(n: int, nslots: int, torus: bool = False) -> Effort:
    """Small machines get the thorough search (quality races are won there); large ones a
    single partitioning and a descent, to keep mapping time near linear in the traffic.
    More partitionings are the user's call (--tries): on the standard benchmark a second seed
    lowers J by 0-4 % at twice the time (docs/mapper-history.md). torus: the machine's network is a
    torus or mesh (TORUS_ILS_ROUNDS)."""
    if nslots <= TABU_SLOTS:
        return Effort(16, 0, int(min(20000, max(2000, 3e7 / nslots ** 2))), True)
    ils = TORUS_ILS_ROUNDS if torus and n < TORUS_ILS_BELOW else 0
    if n < 1000:
        # mid-size machines: the seed's basin still matters. The two starts after the first are
        # light (partition.hierarchical: no KaHIP, no Mt-KaHyPar from scratch, METIS alone below
        # the first split): on the 1k-rank tune instances (both seeds) one start alone cost 0.03 %
        # more than three full ones (6 of 62 dearer, up to 0.8 %), with two light ones 0.01 %
        # (2 dearer, up to 0.27 %) at under a third of the full ones' time
        return Effort(3, ils, 0, False)
    return Effort(1, ils, 0, False)


def check_fits(n: int, machine: Machine, traffic: Traffic | None = None) -> None:
    if n > machine.nslots:
        hint = ""
        if traffic is not None and n - 1 <= machine.nslots:
            M = traffic.bytes.tocsr()
            if M.indptr[1] == 0 and not (M.indices == 0).any():    # rank 0 silent: numbered from 1?
                hint = (f"; rank 0 sends and receives nothing, so the traffic may number its ranks from 1: MPI "
                        f"ranks start at 0, renumber them (ranks 0..{n - 2})")
        cores = sum(t.cores for t in machine.topos)
        rpn = (machine.spec or {}).get("ranks_per_node")
        capped = "SLURM_JOB_CPUS_PER_NODE" in (machine.hosts_from or "")     # (slurm/nodes.py: the allocation's cap)
        if rpn and not capped and machine.nslots < cores * max(1, int((machine.spec or {}).get("oversubscribe") or 1)):
            hint = (f"; --ranks-per-node {rpn} uses {rpn} of each node's cores ({machine.nslots} of the {cores} "
                    f"cores): raise it or leave it out") + hint
        if machine.hosts_from:
            hint += f"; these are {machine.hosts_from}: --nodes names others"
        over = int((machine.spec or {}).get("oversubscribe") or 1)
        more = (f"or raise --oversubscribe {over} (ranks on each core)" if over > 1 else
                "or use --oversubscribe N to put N ranks on each core")
        raise UserError(f"{n} ranks but only {machine.nslots} slots on {machine.nnodes} node(s); add nodes, "
                        f"{more}{hint}")


def solve(traffic: Traffic, machine: Machine, algorithm: str = "metis", seed: int = 0, tries: int | None = None,
          time_limit: float | None = None, refine: bool = True, fill: str = "packed",
          graph: Graph | None = None, quick: bool = False, predictor=None) -> Result:
    """quick: one start and a short search (comparing candidate allocations).
    predictor: None (the default: the choice is the cost's alone), or a function of a mapping
    (slot of each rank) returning its predicted communication time in seconds (rankmap predict
    on the machine's network speeds); the mappings solve found (each start refined, the best
    refined further) and the default orders are then compared by it (choose_predicted).
    A partly filled machine (--fill packed) is also searched on its most compact set of the
    fewest nodes alone (_packed_too)."""
    libc = _reuse_freed_memory()
    try:
        t0 = time.monotonic()
        res = _solve(traffic, machine, algorithm, seed, tries, time_limit, refine, fill, graph, quick, predictor)
        if fill == "packed" and not quick and predictor is None and algorithm in ("metis", "scotch", "greedy") \
                and traffic.size <= PACKED_TOO_MAX:
            left = None if time_limit is None else max(0.0, time_limit - (time.monotonic() - t0))
            res = _packed_too(traffic, machine, res, algorithm, seed, tries, left, refine, graph)
        return res
    finally:
        if libc is not None:
            libc.malloc_trim(0)          # what the search kept for reuse goes back (a script maps on)


# glibc's malloc hands every freed block of 128 KB or more back to the system (unmapped, or
# trimmed off the heap's top), so numpy's temporaries of that size are faulted in again, page
# by page, at each use: at 10^4 ranks the link balancing's scoring of candidate moves (arrays of
# a few MB, made hundreds of times) put up to 40 % of a mapping's CPU in the kernel (rand4 on a
# switch tree: 0.86 of 2.1 s). Blocks below MALLOC_MMAP_MAX come from the heap instead, and up
# to MALLOC_TRIM_MAX of it is kept when freed, for the next ones. The mappings are the same; the
# peak memory nearly (10^4 ranks +2-7 MB, 10^6 ranks 1,010 -> 1,008 MB); the setting is the
# process's, for what it runs after too (solve gives the kept memory back when it returns:
# malloc_trim). 10^6 ranks of random traffic: 49.3 -> 46.1 s CPU, peak 1,646 -> 1,647 MB.
MALLOC_MMAP_MAX = 32 << 20      # glibc's own ceiling for its sliding threshold (64-bit)
MALLOC_TRIM_MAX = 256 << 20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3         # glibc's malloc.h


@lru_cache(maxsize=None)
def _reuse_freed_memory():
    """glibc (set once per process), or None (not glibc, macOS: its own allocator as it is)."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt, libc.malloc_trim
    except (OSError, AttributeError):
        return None
    libc.mallopt(_M_MMAP_THRESHOLD, MALLOC_MMAP_MAX)
    libc.mallopt(_M_TRIM_THRESHOLD, MALLOC_TRIM_MAX)
    return libc


# Ranks that fill less than partition.FULL of the slots: the hierarchical start already keeps
# to the fewest nodes, but the other starts and the search may use the rest, and on tori and
# switch trees they did so at a loss: the same search on the most compact set of the fewest
# nodes (allocation.candidate_node_sets) was up to 12 % cheaper on 1k-rank stencils and
# all-to-all blocks on a torus at 78 % fill (and up to 3 % dearer elsewhere): both are kept
# as candidates. Up to this many ranks (a second search: twice the time).
PACKED_TOO_MAX = 20000
# That second search keeps one kind of start (_solve's one_start): on the 16 partly filled 1k
# tune instances where it ran (76-88 % full, stencils, mesh, AMR, all-to-all, social; hetero,
# switch4, torus), its winner was the network start on every torus and a METIS partitioning
# on every switch tree (the one-switch heterogeneous machines have no network start); without
# the other kind the costs were the same on all 16 and the solve took 12 % less CPU. Held out,
# once (21 partly filled 1k instances: apps on hetero3, patterns on the 2-D mesh and the
# switch tree): 18 % less CPU, the same cost on 20, 0.49 % dearer on periodic3 on the 2-D mesh
# (its second search had won with a partitioning there).


def _packed_too(traffic: Traffic, machine: Machine, res: Result, algorithm, seed, tries, time_limit, refine,
                graph) -> Result:
    from rankmap.mapper import allocation
    from rankmap.mapper.partition import FULL
    n = traffic.size
    if n >= FULL * machine.nslots or (time_limit is not None and time_limit <= 0):
        return res
    try:
        nodes = allocation.candidate_node_sets(machine, n)[0]
    except UserError:            # no compact set found (a torus's boxes): the first search stands
        return res
    used = np.unique(machine.slot_node[res.slot_of_rank])
    if len(nodes) == machine.nnodes or np.array_equal(used, nodes):
        return res
    sub = allocation.restrict(machine, nodes)
    alone = _solve(traffic, sub, algorithm, seed, tries, time_limit, refine, "packed", graph, one_start=True)
    slot = allocation.kept_slots(machine, nodes)[alone.slot_of_rank]
    cost = Problem(graph or from_traffic(traffic), machine).cost(slot)
    notes = list(res.notes)
    cands = dict(res.candidates) | {f"{k} (fewest nodes)": v for k, v in alone.candidates.items()}
    # a default order (block) kept for being within MIN_GAIN of the search's result is replaced
    # only by a mapping clearly cheaper than it
    if cost < res.cost * (1 - MIN_GAIN if res.fell_back else 1):
        notes = [x for x in notes if not x.endswith("it is returned unchanged")]     # the default's, now beaten
        notes.append(f"partly filled: the search on the {len(nodes)} nodes that hold the ranks most compactly costs "
                     f"{cost / res.cost:.4f}x the search on all {machine.nnodes}; it is kept")
        return Result(slot_of_rank=slot, cost=cost, algorithm=res.algorithm, chosen=f"{alone.chosen} (fewest nodes)",
                      fell_back=False, candidates=cands, defaults=res.defaults,
                      seconds=res.seconds + alone.seconds, notes=notes + [x for x in alone.notes if x not in notes])
    return Result(slot_of_rank=res.slot_of_rank, cost=res.cost, algorithm=res.algorithm, chosen=res.chosen,
                  fell_back=res.fell_back, candidates=cands, defaults=res.defaults, seconds=res.seconds + alone.seconds,
                  notes=notes, predicted=res.predicted)


def _solve(traffic: Traffic, machine: Machine, algorithm: str = "metis", seed: int = 0, tries: int | None = None,
           time_limit: float | None = None, refine: bool = True, fill: str = "packed",
           graph: Graph | None = None, quick: bool = False, predictor=None, one_start: bool = False) -> Result:
    """one_start (_packed_too's search on the fewest nodes): of the two kinds of start (METIS's
    partitionings and the network start), only the one that won there on the partly filled tune
    instances: on tori and meshes the network start (where there is one), elsewhere the
    partitionings (PACKED_TOO_MAX's comment)."""
    if algorithm not in ALGORITHMS:
        raise UserError(f"unknown algorithm {algorithm!r}; choose one of {', '.join(ALGORITHMS)}")
    t0 = time.monotonic()
    n = traffic.size
    check_fits(n, machine, traffic)
    graph = graph or from_traffic(traffic)
    if graph.empty():
        return nothing_exchanged(traffic, machine, algorithm, seed, t0)
    notes = []
    comps, isolated = graph.components()
    if comps > 1 or isolated:
        pairs, msgs = empty_messages(traffic)
        notes.append(f"the traffic graph is disconnected: {comps} group(s) of communicating ranks"
                     + (f", {isolated} rank(s) exchange no bytes" if isolated else "") + "; each is mapped anyway"
                     + (f" ({EMPTY_MESSAGES.format(msgs=msgs, pairs=pairs)})" if pairs else ""))
    if algorithm == "metis" and graph.W.nnz > libmetis.BIG_NNZ and not libmetis.available():
        notes.append("the system's 32-bit METIS (Debian: libmetis5) is not installed: METIS through pymetis "
                     "takes about twice the memory on a graph this size")
    prob = Problem(graph, machine)
    pgraph = graph.for_partitioning()           # dense traffic: without its light tail (graph.py)
    if pgraph is not graph:
        notes.append(f"the partitioners saw {pgraph.W.nnz // 2} of the {graph.W.nnz // 2} communicating pairs "
                     f"(the rest carry {LIGHT_TAIL:.1%} of the bytes); the search and every cost use all")
    work = Effort(1, 0, 0, False) if quick else effort(n, machine.nslots, isinstance(machine.network, Torus))
    cap = 1e9 if time_limit is None else time_limit
    deadline = time.monotonic() + cap
    # under --time-limit the costly partitioners get a share of it, the search the rest
    part_deadline = time.monotonic() + PARTITION_SHARE * cap
    timed_out = False

    defaults = {"block": baselines.block(n, machine), "cyclic": baselines.cyclic(n, machine)}
    placed = baselines.from_placement(traffic.placement, machine)
    if placed is not None:
        defaults["input"] = placed
    elif traffic.placement and {h for h, _ in traffic.placement} <= set(machine.hosts):
        # on these hosts, but not on these slots (--fill spread, --ranks-per-node): the report
        # still scores it, so say why it was no candidate
        notes.append("the profiled run's own placement uses other slots of these nodes than the mapping may "
                     "(--fill spread, --ranks-per-node, or more ranks on a node than its slots here): it is not "
                     "a candidate")
    default_costs = {k: prob.cost(v) for k, v in defaults.items()}

    # Starts: the algorithm's own mappings (several seeds: on small machines the basin a start
    # falls into matters more than the search after it) and the default orders. Each descends
    # to a local minimum; the best then gets iterated tabu search (small machines) or
    # iterated local search.
    search = refine and algorithm not in ("random", "block", "cyclic")
    root = machine.tree() if algorithm == "metis" else None

    def make(t):
        sd = seed + t
        if algorithm == "metis":
            # effort's extra starts are light on every size: on small machines (16 starts) the
            # tabu search decides, and full portfolios there doubled the time for nothing (54
            # instances of <= 256 slots: the six 64-rank matrices x 4 numberings x 2 seeds and the
            # tune set's: 3 cheaper, 1 dearer by 0.015 %, CPU 45 -> 25 s)
            light = t > 0 and tries is None
            return "metis", hierarchical(pgraph, machine, root, sd, fill, light=light,
                                         deadline=part_deadline if time_limit is not None else None), sd
        if algorithm == "scotch":
            from rankmap.mapper.scotch import scotch_map
            return "scotch", scotch_map(graph, machine, sd), sd
        if algorithm == "greedy":
            return "greedy", baselines.greedy(graph, machine, sd), sd
        if algorithm == "random":
            return "random", baselines.random(n, machine, sd), sd
        return algorithm, defaults[algorithm].copy(), sd

    # tries (--tries): at least that many partitionings, on any size; by default effort's
    if algorithm == "scotch":
        nstarts = 3 if tries is None else max(1, tries)
    elif algorithm != "metis" or quick:
        nstarts = 1
    elif tries is not None:
        nstarts = max(tries, work.starts)
    else:
        nstarts = work.starts
    grid = None                 # (dims, mappings) of grid_starts, where computed before the partitionings
    if algorithm == "metis" and fill == "packed" and tries is None and n >= GRID_ALONE_ABOVE \
            and isinstance(machine.network, Torus):
        from rankmap.mapper.cartesian import grid_starts
        grid = grid_starts(graph.W, machine, root, prob.cost)
        if grid[0]:                          # (GRID_ALONE_ABOVE's comment)
            nstarts = 0
            notes.append("the traffic is a process grid on a torus: its bricks were the start, without bisections")
    net, net_tried = None, False
    torus = isinstance(machine.network, Torus)
    if one_start and algorithm == "metis" and torus and grid is None and tries is None:
        net_tried = True
        from rankmap.mapper.partition import network_start
        net = network_start(pgraph, machine, seed, deadline - time.monotonic()) if time.monotonic() < deadline \
            else None
        if net is not None:                  # (PACKED_TOO_MAX's comment)
            nstarts = 0
    starts = []
    for t in range(nstarts):
        if t and time.monotonic() > part_deadline:  # --time-limit: no further partitioning past its share
            timed_out = True
            break
        starts.append(make(t))
    if algorithm == "metis":
        from rankmap.mapper.partition import network_start
        if not net_tried and not (one_start and not torus):
            net = network_start(pgraph, machine, seed, deadline - time.monotonic()) \
                if time.monotonic() < deadline else None
        if net is not None:
            starts.append(("network", net, seed))
        if fill == "packed":                 # a process grid's nested bricks (stencil codes)
            from rankmap.mapper.cartesian import grid_starts
            dims, grids = grid if grid is not None else grid_starts(graph.W, machine, root, prob.cost)
            starts += [("grid", b, seed) for b in grids]
            if dims:
                notes.append(f"the traffic is a {' x '.join(map(str, dims))} process grid (ranks in row-major "
                             "order): its bricks on the machine were one of the starts")
        # only for the final choice by the network model: without it, on the 37 tune instances
        # of 1k ranks the bottom-up start never changed the mapping and cost 32 % more CPU
        # (docs/real-apps.md, "Starts of other kinds")
        raw = other_starts(graph, machine, seed) if predictor is not None and not quick \
            and time.monotonic() < deadline else {}             # (--time-limit: not past it)
        starts += [(k, v.copy(), seed) for k, v in raw.items()]
    if search:
        # the default orders refined are candidates too: structured codes often start close to them
        starts += [(f"{k}+refine", v.copy(), seed) for k, v in defaults.items()
                   if work.refine_defaults or k == "input"]
    if search and algorithm == "metis" and not quick and n < UNREFINED_ABOVE:
        # last: refined only if they start within RCM_WITHIN of the best refined start (RCM_WITHIN's comment)
        from rankmap.mapper.ordering import rcm_starts
        starts += [(k, v, seed) for k, v in rcm_starts(graph.W, machine).items()]
    candidates = {}
    kept = {}                   # candidate -> its mapping (only with a predictor)
    if predictor is not None and algorithm == "metis" and not quick:
        # the other starts unrefined too: the cost's descent may leave the node assignment
        # the run's estimate prefers (their mappings were the best competitors' on real codes)
        for k, v in raw.items():
            candidates[k], kept[k] = prob.cost(v), v
    best = None
    before = None
    # dense traffic: the starts descend on the graph without its light tail (each candidate
    # move reads a rank's partners: 255 each on a dense 256-rank graph), the best then on all of it
    sprob = prob if pgraph is graph else Problem(pgraph, machine)
    if search and n >= UNREFINED_ABOVE and len(starts) > 1:
        before = [prob.cost(s) for _, s, _ in starts]
    for i, (name, s, sd) in enumerate(starts):
        if before is not None and before[i] > HOPELESS * min(before):
            candidates[f"{name} (not refined)"] = before[i]
            continue
        if name.startswith("rcm") and best is not None and (c0 := prob.cost(s)) > RCM_WITHIN * best[1]:
            candidates[f"{name} (not refined)"] = c0
            continue
        if search:
            s, c, cut = sprob.refine(s, sd, 0, max(0.0, deadline - time.monotonic()))
            if sprob is not prob:
                c = prob.cost(s)
            timed_out |= cut
            label = name if name.endswith("+refine") else f"{name}+refine"
        else:
            c, label = prob.cost(s), name
        key = label if label not in candidates else f"{label}#{sd}"
        candidates[key] = c
        if predictor is not None:
            kept[key] = s
        if best is None or c < best[1] - 1e-12 * abs(best[1]):
            best = (key, c, s, sd)
    if search and sprob is not prob:
        s, c, cut = prob.refine(best[2], best[3], 0, max(0.0, deadline - time.monotonic()))
        timed_out |= cut
        if c < best[1]:
            best = (best[0], c, s, best[3])
            candidates[best[0]] = c
    if search and (work.tabu_iters or work.ils_rounds):
        left = max(0.0, deadline - time.monotonic())
        if work.tabu_iters:
            s, c, cut = prob.tabu(best[2], best[3] + 104729, work.tabu_iters, left)
        else:
            s, c, cut = prob.refine(best[2], best[3] + 104729, work.ils_rounds, left)
        timed_out |= cut
        if c < best[1]:
            best = (best[0], c, s, best[3])
            candidates[best[0]] = c
    # the links are balanced for a mapping that may be returned: one a default order is within
    # MIN_GAIN of (or cheaper than) is not (balancing only trades cost for lighter links),
    # unless the network's speeds choose among them all (masters of 10^5 ranks whose partitions
    # cost 2 x block: 180 s of global-link swaps, and block returned)
    settled = predictor is None and min(default_costs.values()) <= best[1] * (1 + MIN_GAIN)
    gave_up = False

    def room(cost: float) -> float | None:
        # what balancing may add before a default order would be returned instead
        return None if predictor is not None else min(default_costs.values()) / (1 + MIN_GAIN) - cost
    if search and algorithm in ("metis", "scotch", "greedy") and not settled:
        from rankmap.mapper.linkload import balance
        offdiag = traffic.offdiag()
        # under --time-limit balancing stops half way to the limit: the global and node links'
        # checks after it (never worse than block order) had none of it left (hub traffic at
        # 10^4 ranks on a switch tree: 3.7 s under --time-limit 3)
        s, info = balance(offdiag, machine, best[2],
                          deadline=(time.monotonic() + deadline) / 2 if time_limit is not None else None)
        timed_out |= time_limit is not None and time.monotonic() > deadline
        if info:
            c = prob.cost(s)
            notes.append(f"link balancing: busiest link {info['max_link_load_before']:.4g} -> "
                         f"{info['max_link_load_after']:.4g} B for a cost {c / best[1]:.4f}x")
            best = (best[0] + "+balance", c, s, best[3])
            candidates[best[0]] = c
        best, gave_up = _global_links(offdiag, graph, machine, prob, best, defaults["block"], candidates, notes,
                                      deadline if time_limit is not None else None, room(best[1]))
        if not gave_up:
            best, gave_up = _node_links(offdiag, graph, machine, prob, best, defaults["block"], candidates, notes,
                                        deadline if time_limit is not None else None, room(best[1]))
        del offdiag
    if timed_out:
        # (cap: what run_map left of --time-limit after reading and building; said as such, not
        # as the limit the user gave)
        notes.append(f"the time limit cut the search short ({cap:.3g} s of it were left for the search): the result "
                     "depends on the machine's speed")
    best = best[:3]
    chosen, cost, slot = best
    fell_back = False
    if gave_up:
        chosen, cost, slot, fell_back = "block", default_costs["block"], defaults["block"].copy(), True
        notes.append(f"the block order is returned unchanged: the computed mapping costs {best[1] / cost:.4f}x it, "
                     "but not once its busiest links are brought down to block order's")
    elif algorithm in ("metis", "scotch", "greedy"):
        dname = min(default_costs, key=default_costs.get)
        if default_costs[dname] <= cost * (1 + MIN_GAIN):
            chosen, cost, slot, fell_back = dname, default_costs[dname], defaults[dname].copy(), True
            notes.append(fell_back_note(dname, default_costs[dname], best[1], "computed mapping"))
    predicted = {}
    if predictor is not None and algorithm in ("metis", "scotch", "greedy"):
        pool = {chosen: slot, **{k: defaults[k] for k in defaults}, **kept, best[0]: best[2]}
        costs = {**candidates, **default_costs, chosen: cost}
        if n < machine.nslots:
            pool.update(spread_candidates(n, machine, defaults["block"]))
            costs.update({k: prob.cost(v) for k, v in pool.items() if k.startswith("balanced")})
        pick, predicted = choose_predicted(pool, chosen, machine, predictor)
        if pick != chosen:
            what = "run time" if getattr(predictor, "estimates", "") == "run" else "communication"
            notes.append(f"network model: {pick} is predicted {predicted[pick]:.4g} s of {what} against "
                         f"{predicted[chosen]:.4g} s for {chosen} (less by more than {PREDICT_MARGIN:.0%} of its "
                         f"predicted communication); "
                         f"{pick} is returned (its cost {costs[pick] / cost:.4f}x)")
            chosen, cost, slot = pick, costs[pick], pool[pick].copy()
            fell_back = pick in defaults
    _validate(slot, n, machine)
    return Result(slot_of_rank=slot, cost=cost, algorithm=algorithm, chosen=chosen, fell_back=fell_back,
                  candidates=candidates, defaults=default_costs, seconds=time.monotonic() - t0, notes=notes,
                  predicted=predicted)


def _global_links(offdiag, graph: Graph, machine: Machine, prob: Problem, best: tuple, block: np.ndarray,
                  candidates: dict, notes: list, deadline: float | None = None, room: float | None = None) -> tuple:
    """Never worse than block order on the busiest global link (the links into the top of
    a tree, a dragonfly's links between groups: where such machines run short of bandwidth):
    the cost cannot see one group's links carry more than the others', so a cheaper
    mapping may; rank and unit swaps (linkload.balance_global) then bring that link down to
    block's (on trees, after re-splits of two groups' ranks: linkload.resplit_groups; the
    way that reaches block's at the least cost is kept). Where they cannot, the mapping that
    comes nearest is kept and a note says how far above it is. room: the cost the swaps may
    add (solve: beyond it a default order would be returned instead)."""
    from rankmap.mapper.linkload import balance_global, global_loads, resplit_groups
    from rankmap.mapper.network import SwitchTree
    pairs = offdiag.tocoo()                 # (read three times below: 10^6 ranks, 8 * 10^6 pairs)
    mine = global_loads(pairs, machine, best[2])
    if mine is None or not len(mine):
        return best, False
    target = float(global_loads(pairs, machine, block).max())
    if mine.max() <= target:
        return best, False
    tries = []                              # (slot, info) of each way down
    split = None
    if isinstance(machine.network, SwitchTree):
        # a tree's uplink serves one group: groups with a long boundary re-split with a
        # neighbour (linkload.resplit_groups: where rank swaps stall, AMR at 10^5 ranks on
        # switch trees of 391 and 625 leaves)
        split = resplit_groups(graph, machine, best[2], target, best[3], offdiag)
        if split[1]:
            tries.append(split)
    if not tries or tries[0][1]["global_after"] > target:
        # swaps from the mapping itself (AMR on a fat tree of 16 leaves: re-splits stop at
        # 1.021 x and swaps after them at 1.005 x, swaps alone reach 1.000 x)
        s, info = balance_global(offdiag, machine, best[2], target, graph.W, deadline, room)
        ran_out = bool(info) and info["out_of_room"]
        if info and info["swaps"]:
            tries.append((s, info))
        if split and split[1] and (not info or info["global_after"] > target):
            s, more = balance_global(offdiag, machine, split[0], target, graph.W, deadline,
                                     None if room is None else room - (prob.cost(split[0]) - best[1]))
            ran_out |= bool(more) and more["out_of_room"]
            if more and more["swaps"]:
                tries.append((s, {**split[1], "global_after": more["global_after"], "swaps": more["swaps"]}))
        if ran_out and all(t[1]["global_after"] > target for t in tries):
            # block's busiest global link is out of reach at less cost than block's own: the
            # search's mapping is not returned (solve falls back to the default order)
            notes.append(f"global links: the busiest carries {_vs_block(float(mine.max()), target)}, and "
                         "bringing it down to block order's would cost more than block order itself")
            return best, True
    if tries:
        # the way that reaches the target at the least cost, else the one that comes nearest
        costs = [prob.cost(t[0]) for t in tries]
        j = min(range(len(tries)), key=lambda i: (tries[i][1]["global_after"] > target,
                                                   tries[i][1]["global_after"] if tries[i][1]["global_after"] > target
                                                   else costs[i]))
        s, info, c = tries[j][0], tries[j][1], costs[j]
        r, k = info.get("resplits", 0), info.get("swaps", 0)
        steps = ([f"{r} re-split{'s' if r != 1 else ''} of two groups' ranks"] if r else []) + \
                ([f"{k} swap{'s' if k != 1 else ''}"] if k else [])
        notes.append(f"global links: the busiest carried {_vs_block(info['global_before'], target)}, "
                     f"{_vs_block(info['global_after'], target, again=True)} after {' and '.join(steps)} between "
                     f"groups, for a cost {c / best[1] if best[1] else 1.0:.4f}x")
        best = (best[0] + "+global", c, s, best[3])
        candidates[best[0]] = c
        mine = global_loads(pairs, machine, s)
    if mine.max() > target:
        notes.append(f"global links: the busiest carries {_vs_block(float(mine.max()), target)} "
                     "(no re-split or swap between groups lowered it further)")
    return best, False


def _node_links(offdiag, graph: Graph, machine: Machine, prob: Problem, best: tuple, block: np.ndarray,
                candidates: dict, notes: list, deadline: float | None = None, room: float | None = None) -> tuple:
    """Never worse than block order on the busiest link where that is a node's own (a
    full-bisection fat tree: the cost does not see how evenly the nodes send):
    re-splits of two nodes' ranks (linkload.resplit_nodes) and rank swaps between nodes
    (linkload.balance_nodes) bring it down to block's, the global links kept at or below
    block's busiest (or where _global_links left them); the way that gets there at the least
    cost is kept. Where they cannot, the mapping that comes nearest is kept and a note says
    how far above it is. room: as _global_links'."""
    from rankmap.mapper.linkload import balance_nodes, node_link_share, node_loads, resplit_nodes, scaled_share
    share = node_link_share(machine)
    if share is None:
        return best, False
    N, has_global = share[1], share[2]
    pairs = offdiag.tocoo()
    lb, lm = node_loads(pairs, machine, block, share), node_loads(pairs, machine, best[2], share)
    # block's busiest of the global links and the nodes' own (per physical link): where a
    # global link of block's carries more than the mapping's busiest node link, the mapping is
    # already better than block on the busiest link, and where one of its own global links
    # does, the nodes' links are not what limits it
    target, before = float(lb.max()), float(lm[-2 * N:].max())
    mine_glob = float(lm[:-2 * N].max()) if has_global else 0.0
    if before <= target or target <= 0 or before <= mine_glob:
        return best, False
    glob = max(float(lb[:-2 * N].max()), mine_glob) if has_global else 1.0
    scaled = scaled_share(share, glob or 1.0, target)
    tries = []                                  # (slot, re-splits, swaps) of each way down
    ran_out = False
    s, info = resplit_nodes(graph, machine, best[2], 1.0, best[3], offdiag, scaled)
    if info:
        tries.append((s, info["resplits"], 0))
    if not info or info["global_after"] > 1.0:
        # where the re-splits stop short: swaps, from the mapping and from where they stopped
        # (where the re-splits got there, swaps from the mapping did not, or at a higher cost,
        # in about 1 s at 10^4 ranks: AMR and social traffic on fat trees of 320 nodes)
        for start, r in ((best[2], 0),) + (((s, tries[0][1]),) if info else ()):
            t, more = balance_nodes(offdiag, graph.W, machine, start, 1.0, scaled, deadline,
                                    None if room is None else room - (prob.cost(start) - best[1]))
            ran_out |= bool(more) and more["out_of_room"]
            if more and more["swaps"]:
                tries.append((t, r, more["swaps"]))
    # the way that reaches block's at the least cost, else the one that comes nearest
    got = [(float(node_loads(pairs, machine, t[0], share)[-2 * N:].max()), prob.cost(t[0])) for t in tries]
    if ran_out and all(g[0] > target for g in got):       # (as _global_links)
        notes.append(f"node links: the busiest carries {_vs_block(before, target)}, and bringing it down to block "
                     "order's would cost more than block order itself")
        return best, True
    j = min(range(len(tries)), key=lambda i: (got[i][0] > target, got[i][0] if got[i][0] > target else got[i][1]),
            default=None)
    if j is None or got[j][0] >= before:
        notes.append(f"node links: the busiest carries {_vs_block(before, target)} (no re-split or swap between "
                     "nodes lowered it)")
        return best, False
    (s, r, k), (after, c) = tries[j], got[j]
    steps = ([f"{r} re-split{'s' if r != 1 else ''}"] if r else []) + ([f"{k} swap{'s' if k != 1 else ''}"] if k else [])
    notes.append(f"node links: the busiest carried {_vs_block(before, target)}, "
                 f"{_vs_block(after, target, again=True)} after {' and '.join(steps)} between nodes, for a cost "
                 f"{c / best[1] if best[1] else 1.0:.4f}x")
    best = (best[0] + "+nodes", c, s, best[3])
    candidates[best[0]] = c
    return best, False


def _vs_block(load: float, target: float, again: bool = False) -> str:
    """A global link's load against block order's busiest (which may be none: all of block's
    traffic inside one group)."""
    if target > 0:
        return f"{load / target:.4f}x" if again else f"{load / target:.4f}x block order's bytes"
    return f"{load:.4g} B" if again else f"{load:.4g} B where block order's carry none"


NOTHING_EXCHANGED = ("no traffic between distinct ranks: every placement costs the same, so the {} order is "
                     "returned")


# pairs that send only empty messages: the cost weighs bytes, so their placement is free to
# the mapping, though not in time ("exchange nothing" and "every placement costs the same"
# were said of 1,000 zero-byte messages that predict put at 2 s between two nodes)
EMPTY_MESSAGES = ("{msgs:.0f} empty message(s) in {pairs} directed pair(s) of ranks that send each other no bytes: "
                  "the mapping weighs bytes and places them without regard to that latency; rankmap predict "
                  "estimates it")


def empty_messages(traffic: Traffic) -> tuple[int, float]:
    """(pairs of distinct ranks with messages but no bytes, their messages)."""
    if traffic.msgs is None:
        return 0, 0.0
    m = traffic.msgs.tocoo()
    off = m.row != m.col
    r, c, v = m.row[off], m.col[off], m.data[off]
    zero = (v > 0) & (np.asarray(traffic.bytes[r, c]).ravel() == 0) if len(r) else np.zeros(0, dtype=bool)
    return int(zero.sum()), float(v[zero].sum())


def nothing_exchanged(traffic: Traffic, machine: Machine, algorithm: str, seed: int, t0: float) -> Result:
    """A program that sends nothing (or only to itself) still runs: every placement costs 0,
    so the launcher's own block order is returned (the order asked for, with --algorithm
    block, cyclic or random), with a note saying why, instead of stopping a workflow."""
    n = traffic.size
    pairs, msgs = empty_messages(traffic)
    defaults = {"block": baselines.block(n, machine), "cyclic": baselines.cyclic(n, machine)}
    if baselines.from_placement(traffic.placement, machine) is not None:
        defaults["input"] = None
    name = algorithm if algorithm in ("cyclic", "random") else "block"
    slot = baselines.random(n, machine, seed) if name == "random" else defaults[name].copy()
    _validate(slot, n, machine)
    return Result(slot_of_rank=slot, cost=0.0, algorithm=algorithm, chosen=name, fell_back=name != algorithm,
                  candidates={}, defaults={k: 0.0 for k in defaults}, seconds=time.monotonic() - t0,
                  notes=[NOTHING_EXCHANGED.format(name) if not pairs else
                         f"no bytes between distinct ranks: every placement costs the same to the mapping, so the "
                         f"{name} order is returned; but " + EMPTY_MESSAGES.format(msgs=msgs, pairs=pairs)])


def other_starts(graph: Graph, machine: Machine, seed: int) -> dict:
    """Starts of other kinds than the partitioner's top-down splits, name -> mapping: a
    TreeMatch-style bottom-up grouping (mapper/bottomup.py), Mt-KaHyPar's Steiner-tree
    process mapping onto the cores or nodes (mapper/steiner.py; only where its target graph
    fits, up to 64 cores or nodes), and Mt-KaHyPar's multisection of the machine, all nodes at
    once then down each node, no imbalance (mapper/multisection.py; up to 4,096 ranks). All
    are the mappings of the published mappers that beat rankmap's own on real codes at a weak
    network (docs/real-apps.md).

    They are computed in a fresh interpreter (backends.fresh_call): the two Mt-KaHyPar
    presets they use (QUALITY, DEFAULT) give another result to the same call with the same
    seed once the process has run them, so the mapping depended on what the process had
    mapped earlier (the node sets of --mode whole-cluster, a library caller's second solve).
    Whether Mt-KaHyPar may run is this process's decision (backends.mtkahypar_available)."""
    return backends.fresh_call("rankmap.mapper.solve", "_other_starts_here", graph, machine, seed,
                               backends.mtkahypar_available())


def _other_starts_here(graph: Graph, machine: Machine, seed: int, mt: bool) -> dict:
    from rankmap.mapper.bottomup import bottomup
    from rankmap.mapper.multisection import multisection
    from rankmap.mapper.steiner import steiner_map
    root = machine.tree()
    out = {"bottomup": bottomup(graph, machine, seed, root)}
    if mt:
        st = steiner_map(graph, machine, seed)
        if st is not None:
            out["steiner"] = st
        ms = multisection(graph, machine, seed, root)
        if ms is not None:
            out["multisection"] = ms
    return out


SPREAD_MAX = 16      # spread_candidates: at most this many ways to place the extra ranks, else the first nodes


def spread_candidates(n: int, machine: Machine, block: np.ndarray) -> dict:
    """The ranks spread evenly over block's nodes (Slurm's block with -N), one candidate per
    choice of the nodes that take one rank more (all of them up to SPREAD_MAX choices, else
    the first nodes): name "balanced" or "balanced+n3,n4" -> mapping. None where they would
    use more nodes than block (a whole cluster) or equal block. Where the nodes are not
    filled, an exchange that loads every node alike (NPB FT's alltoalls) runs faster spread,
    and which nodes keep a free slot decides the busiest links and NICs: the cost sees
    neither, the run's estimate (choose_predicted) chooses. On NPB FT B 32 on Desmos at /16
    (6 nodes of 6 cores), the 15 choices span 1.47-1.59 s predicted; block is 1.59 s."""
    from itertools import combinations
    from math import comb
    nodes = lambda s: len(np.unique(machine.slot_node[s]))   # noqa: E731
    base, room, extra = baselines.spread_counts(n, machine)
    out = {}
    if extra and 1 < comb(len(room), extra) <= SPREAD_MAX:
        for on in combinations(room.tolist(), extra):
            out["balanced+" + ",".join(machine.hosts[k] for k in on)] = baselines.balanced(n, machine, on)
    else:
        out["balanced"] = baselines.balanced(n, machine)
    return {k: v for k, v in out.items() if not np.array_equal(v, block) and nodes(v) <= nodes(block)}


def choose_predicted(pool: dict, chosen: str, machine: Machine, predictor) -> tuple[str, dict]:
    """The candidate with the lowest predicted time, if it beats `chosen`'s prediction by more
    than PREDICT_MARGIN of `chosen`'s predicted communication, else `chosen`. The predictor
    returns seconds of communication, or a pair (the run's seconds, their communication part:
    with an SMPI trace and the cores' speed, rankmap predict replays the run, compute
    included, and the placement is judged by the run's time, the margin still being a share
    of its communication). Mappings that put every rank on the same node are predicted once
    (predict sees nodes, not cores); ties go to the earlier candidate in pool's order
    (deterministic). A predictor with a `final` estimate (mapping._predictor: the flow replay
    where the screening one replays in turn) has its FINAL_TOP best, those within FINAL_BAND
    of the best (FINAL_MAX in all) and `chosen` estimated again by it, and the pick is made
    among those by it. Returns the pick and name -> predicted seconds (the run's, with a
    pair). A predictor with a `deadline` (mapping.py: --time-limit's share) estimates no more
    candidates past it (`chosen` still, to compare the others with, if any was), nor the final
    estimates; `unpredicted` counts the mappings left; none estimated: (`chosen`, {})."""
    epoch = getattr(predictor, "epoch", lambda: 0)
    until = getattr(predictor, "deadline", None)
    last = [0.0]                       # the last estimate's seconds: one more would pass the deadline
    late = lambda: until is not None and time.monotonic() + last[0] > until     # noqa: E731
    keys = {name: machine.slot_node[np.asarray(s)].tobytes() for name, s in pool.items()}   # rank -> node
    for _ in range(2):                 # again if the predictor changed its model midway (epoch)
        e0 = epoch()
        seen: dict = {}
        predicted, comm = {}, {}
        for name, s in pool.items():
            if keys[name] not in seen:
                if late() and (name != chosen or not seen):   # past it: `chosen` only to compare with others
                    continue
                t = time.monotonic()
                v = predictor(s)
                last[0] = time.monotonic() - t
                seen[keys[name]] = (float(v[0]), float(v[1])) if isinstance(v, tuple) else (float(v), float(v))
            predicted[name], comm[name] = seen[keys[name]]
        if epoch() == e0:
            break
    among = list(predicted)
    if until is not None:
        predictor.unpredicted = getattr(predictor, "unpredicted", 0) + len(set(keys.values()) - set(seen))
        if chosen not in predicted:        # none estimated in time: the cost's choice, no estimates
            return chosen, {}
    final = None if late() else getattr(predictor, "final", None)
    if final is not None:
        order = sorted(predicted, key=lambda k: predicted[k])        # stable: ties keep pool's order
        band = predicted[order[0]] * (1 + FINAL_BAND)
        top = []
        for name in order:
            if len(top) >= FINAL_TOP and predicted[name] > band or len(top) == FINAL_MAX:
                break
            if keys[name] not in (keys[t] for t in top):
                top.append(name)
        again = {keys[k] for k in top} | {keys[chosen]}
        got = {}
        for _ in range(2):                                           # its own epoch, as above
            e0 = epoch()
            got = {key: final(pool[next(n for n in pool if keys[n] == key)]) for key in sorted(again)}
            if epoch() == e0:
                break
        if all(v is not None for v in got.values()):
            among = [name for name in pool if keys[name] in again]
            for name in among:
                predicted[name], comm[name] = (float(got[keys[name]][0]), float(got[keys[name]][1]))
    low = min(among, key=predicted.get)            # first of the lowest
    if predicted[low] < predicted[chosen] - PREDICT_MARGIN * comm[chosen]:
        return low, predicted
    return chosen, predicted


def fell_back_note(dname: str, default: float, cost: float, what: str) -> str:
    """The note of a default order kept over `what`: within MIN_GAIN of it, or cheaper (the
    search's starts can all end above block: said as "within 1 %" of a mapping 1.4 x it)."""
    how = (f"is within {MIN_GAIN:.0%} of the {what}'s cost" if default >= cost else
           f"costs less than the {what} ({default / cost:.4f}x)")
    return f"the {dname} order {how} ({default:.6g} vs {cost:.6g}); it is returned unchanged"


def _validate(slot: np.ndarray, n: int, machine: Machine) -> None:
    if len(slot) != n or not machine.one_to_one(slot):
        raise AssertionError("internal error: the mapping is not a one-to-one assignment of ranks to slots")
