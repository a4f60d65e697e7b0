"""`rankmap map`, `evaluate` and `predict` on traffic already read and a machine already
described (rankmap.mapper.spec): a mapping directory, and comparisons with the default
orders."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from rankmap.mapper import allocation, baselines, report, solve, spec as mspec, writers
from rankmap.mapper.graph import from_traffic
from rankmap.mapper.network import Torus
from rankmap.profiler import outputs
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic

VERSION = "0.1.0"

# --extra-nodes: a set of more nodes than the fewest that hold the ranks is taken only when
# predicted this much faster than the best set of the fewest nodes (quick mappings, then both
# searched in full): it costs a third or more node-hours, and NPB LU A 64 on Desmos at /16
# took 16 nodes instead of 12 for 0.6 % (docs/real-apps.md, "More nodes, partly filled")
WIDER_MARGIN = 0.05


def run_map(traffic: Traffic, spec: dict, algorithm, seed, tries, time_limit, refine, fill, mode, out,
            force, plots_on, console, also_nodes: list[str] | None = None, parallel=None, network=None,
            extra_nodes: float = 0) -> dict:
    """also_nodes: in whole-cluster mode, one more candidate node set (e.g. the allocation a
    run had); the nodes a profile ran on are always a candidate. parallel: (run, workdir) to
    compute the mapping on a distributed engine (rankmap.mapper.parallel). network: None, or
    the network's speeds (a rankmap.mapper.predict.Network): the final choice among solve's
    candidate mappings is then made with `rankmap predict`'s estimate (solve.choose_predicted),
    and in whole-cluster mode the node set too, among compact and scattered ones
    (_choose_nodes_predicted). extra_nodes: whole-cluster mode with a network: node sets of up
    to this many percent more nodes than the fewest, each partly filled, are candidates too
    (allocation.wider_node_sets)."""
    t0 = time.monotonic()
    # --time-limit caps the whole command: in whole-cluster mode each candidate node set's
    # quick mapping and each set searched in full took the whole limit again (--time-limit 2
    # on 1,024 ranks over an 8x8x8 torus ran 24-29 s). The candidates share half of what is
    # left, the full searches the rest.
    deadline = None if time_limit is None else t0 + time_limit

    def left(share: float = 1.0):
        return None if deadline is None else max(1e-3, (deadline - time.monotonic()) * share)
    if extra_nodes and (mode != "whole-cluster" or network is None or parallel is not None):
        raise UserError("extra nodes are chosen by predict among whole-cluster mode's node sets: they need "
                        "--mode whole-cluster and the network's speeds")
    target = writers.mapping_target(out, force, inputs=inputs_of(traffic, spec))   # checked before any work
    machine = mspec.build(spec)
    graph = from_traffic(traffic)
    notes = list(traffic.notes) + [x for x in (machine.rising_costs_note(),) if x]
    chosen_nodes = node_sets = None
    processes = _processes(spec)
    if mode == "whole-cluster":
        # too few slots in all: the message (and its hints: add nodes, --oversubscribe, ranks
        # numbered from 1) as in the other mode; was "the available nodes hold only 6 slots"
        solve.check_fits(traffic.size, machine, traffic)
        one = allocation.cores_first(machine, traffic.size) if processes else None
        search_on = one[0] if one is not None and one[0].nnodes == machine.nnodes else machine   # same node indices
        cands = allocation.candidate_node_sets(search_on, traffic.size)
        ncompact = len(cands)
        index = {h: k for k, h in enumerate(machine.hosts)}
        for extra in (traffic.hosts(), also_nodes):   # where the run was is a candidate too
            if extra and all(h in index for h in extra):
                ids = np.array(sorted(index[h] for h in set(extra)))
                if not any(len(c) == len(ids) and (np.sort(c) == ids).all() for c in cands):
                    cands.append(ids)
        if network is None:
            best, quick = None, _QuickMappings(deadline)
            for i, nodes in enumerate(cands):   # a quick mapping on each candidate part, the cheapest wins
                sub = allocation.restrict(search_on, nodes)
                if sub.nslots < traffic.size:
                    continue
                slot, cost = quick.map(traffic, sub, graph, algorithm, seed, refine, fill, left(0.5 / (len(cands) - i)))
                if best is None or cost < best[0]:
                    best = (cost, nodes)
            chosen_nodes = best[1]
            machine = allocation.restrict(machine, chosen_nodes)
            notes.append(f"whole-cluster mode: {len(chosen_nodes)} of {len(spec['hosts'])} nodes chosen "
                         f"({len(cands)} compact candidate(s) compared{quick.said()})")
        else:
            sets, note, node_sets = _choose_nodes_predicted(
                traffic, graph, search_on, cands, ncompact, network, algorithm, seed, time_limit, refine, fill,
                extra_nodes, deadline)
            finals = {}
            for i, (name, (nodes, slots)) in enumerate(sets.items()):   # the chosen set and the cost's: each
                if slots is not None and search_on is not machine:       # searched in full
                    slots = one[1][slots]                  # the cores' slots: the machine's own indices
                finals[name] = (nodes, _final(traffic, allocation.restrict(machine, nodes, slots), graph, algorithm,
                                              seed, tries, left(1 / (len(sets) - i)), refine, fill, processes,
                                              parallel, network))
            if len(finals) > 1:
                est = {k: v[1][4].predicted.get(v[1][4].chosen) for k, v in finals.items()}
                keep = _final_choice(node_sets, est)
                node_sets["final"] = est
                note += ("; searched in full, " + ", ".join(f"{k} is predicted {v:.4g} s" for k, v in est.items()
                                                             if v is not None) + f": {keep} is kept")
                node_sets["chosen"] = keep
            chosen_nodes, (full, machine, sel, more, res, predictor, timing) = finals[node_sets["chosen"]]
            notes.append(f"whole-cluster mode: {len(chosen_nodes)} of {len(spec['hosts'])} nodes chosen; " + note)
            fewest = allocation.fewest_nodes(allocation.node_capacity(search_on), traffic.size)
            if extra_nodes and len(chosen_nodes) > fewest:
                notes.append(f"--extra-nodes: {len(chosen_nodes)} nodes where {fewest} hold the ranks "
                             f"(+{100 * (len(chosen_nodes) / fewest - 1):.0f} % node-hours for the run)")
            notes += more
    if node_sets is None:
        full, machine, sel, more, res, predictor, timing = _final(traffic, machine, graph, algorithm, seed, tries,
                                                                  left(), refine, fill, processes, parallel,
                                                                  network)
        notes += more
    slots = res.slot_of_rank if sel is None else sel[res.slot_of_rank]      # slots of the whole machine
    # the metrics on the machine written to machine.json, as `evaluate` computes them; block,
    # cyclic and random over the slots searched (--fill spread, cores first), lifted onto it
    results = report.compare(traffic.bytes, full, {"rankmap": slots, **_orders(traffic.size, machine, sel, seed)},
                             seed, traffic.placement, by_node=True)
    rep = {
        "rankmap_version": VERSION,
        "traffic": {"source": str(traffic.source), "format": traffic.format, "ranks": traffic.size,
                    "bytes": float(traffic.offdiag().sum()), "pairs": int(graph.W.nnz // 2)},
        "machine": full.describe(),
        "mode": mode,
        # the nodes that hold the mapping's ranks (the whole machine is in "machine" as a hostlist,
        # and in machine.json): report.json grows with the job, not with the machine
        "nodes": report.nodes_used(full, slots),
        "machine_nodes": full.nnodes,
        "algorithm": res.algorithm, "seed": seed, "chosen": res.chosen, "fell_back": res.fell_back,
        "objective": "cost = sum over rank pairs of bytes x accumulated level costs (TreeMatch SUM_COM; on a "
                     "torus the node level pays per hop)",
        "cost": res.cost, "candidates": res.candidates, "defaults": res.defaults,
        "metrics": results, "seconds": round(time.monotonic() - t0, 3), "search_seconds": round(res.seconds, 3),
        "notes": notes,
    }
    if timing is not None:
        rep["parallel"] = timing
    if node_sets is not None:
        rep["node_sets"] = node_sets
    if getattr(res, "predicted", None):
        run = getattr(predictor, "estimates", "") == "run"
        rep["predicted_run_seconds" if run else "predicted_comm_seconds"] = res.predicted
    extra = (lambda tmp: _plots(tmp, traffic, machine, {"rankmap": res.slot_of_rank,
                                                         "block": np.arange(traffic.size, dtype=np.int64)},
                                check=False)) if plots_on else None
    path = writers.write_mapping(target, slots, full, rep, mspec.frozen(spec, full, compact=True), force, extra=extra)
    if console is not None:
        console.print(f"[bold]rankmap map[/bold] {traffic.size} ranks ({traffic.format}) onto {full.describe()}")
        for n in notes:
            console.print(f"  note: {n}")
        console.print(report.table(report.strip_lists(results), f"{res.chosen}, seed {seed}, "
                                   f"{rep['seconds']:.2f} s"))
        pngs = sorted(p.name for p in Path(path).glob("*.png")) if plots_on else []
        console.print(f"Written: {path}/{{{','.join(list(writers.FILES) + pngs)}}}")
    return rep


def _final(traffic: Traffic, machine, graph, algorithm, seed, tries, time_limit, refine, fill, processes, parallel,
           network) -> tuple:
    """The mapping on the nodes chosen: (the machine of those nodes, the machine searched (its
    slots for --fill spread or --oversubscribe), their slots in the first (None: all), notes,
    solve's result, the predictor, the parallel engine's timing)."""
    notes = []
    full, sel = machine, None
    if fill == "spread" and traffic.size < machine.nslots:
        machine, sel = allocation.spread(machine, traffic.size)
        over = f"all {full.nnodes} nodes" if machine.nnodes == full.nnodes else \
            f"{machine.nnodes} of the {full.nnodes} nodes (one rank each)"
        notes.append(f"--fill spread: the {traffic.size} ranks take {traffic.size} of the {full.nslots} slots, "
                     f"spread evenly over {over} and their packages (block and cyclic over the same slots)")
    elif processes and (packed := allocation.cores_first(machine, traffic.size, even=parallel is None)) is not None:
        machine, sel, note = packed
        notes.append(note + " (block and cyclic over the same slots)")
    timing = predictor = None
    if parallel is not None:
        from rankmap.mapper.parallel import map_parallel
        res, timing = map_parallel(traffic, machine, parallel[0], parallel[1], seed, refine, time_limit, graph)
    else:
        predictor = _predictor(traffic, machine, network)
        if predictor is not None and time_limit is not None:
            # --time-limit: predict's estimates of solve's candidate mappings stop at the end of
            # this search's share (solve.choose_predicted); they ran on past it (an SMPI trace of
            # 1,024 ranks on an 8x8x8 torus, --time-limit 2: 88 s)
            predictor.deadline = time.monotonic() + time_limit
        res = solve.solve(traffic, machine, algorithm, seed, tries, time_limit, refine, fill, graph=graph,
                          predictor=predictor)
        if getattr(predictor, "unpredicted", 0):
            notes.append(f"network model: the time limit left {predictor.unpredicted} of the candidate mappings "
                         "unpredicted (the choice was made among those predicted, or the cost's kept); the result "
                         "depends on the machine's speed")
    return full, machine, sel, notes + list(res.notes), res, predictor, timing


def _choose_nodes_predicted(traffic: Traffic, graph, machine, cands: list, ncompact: int, network, algorithm, seed,
                            time_limit, refine, fill, extra_nodes: float = 0, deadline: float | None = None) -> tuple:
    """Whole-cluster mode knowing the network's speeds: the compact candidates (and the run's
    allocation: cands[ncompact:]) and the node sets scattered over the network
    (allocation.scattered_node_sets, each with its ranks per node: only those slots are kept)
    are each mapped quickly, and predict's estimate (the run's time when it estimates runs,
    as the final choice) chooses among them: a node set's estimate is the lower of its quick
    mapping's and of block order's on it (a quick mapping can be far from what the final
    search finds on the same nodes: LULESH 27 on Angara-K1 at /16 took a box whose quick
    mapping was predicted 4 % faster than block's allocation's and replayed 1.3 % slower
    than block; docs/real-apps.md). solve.choose_predicted: the set the quick cost prefers
    is kept unless another is predicted faster by more than its margin. Two estimates per
    candidate (one when both put the same ranks on the same nodes): up to
    allocation.CANDIDATES + 2 compact ones and SCATTERED scattered ones (on as few nodes as
    the compact ones), and with extra_nodes the wider sets (allocation.wider_node_sets: more
    nodes, each partly filled; named "N nodes x K"; one is chosen only WIDER_MARGIN faster than
    the best of the others). Returns ({name: (nodes, slots of `machine` to keep or None)} of
    the chosen set, of the set the quick cost prefers and, with a wider set chosen, of the
    best of the fewest nodes; a note; what report.json says of the choice); run_map then
    searches each in full when they differ (_final, _final_choice)."""
    named, costs = {}, {}
    for i, nodes in enumerate(cands):
        named[f"compact {i + 1}" if i < ncompact else f"allocation {i + 1 - ncompact}"] = (np.asarray(nodes), None)
    soon = None if deadline is None else time.monotonic() + max(0.0, deadline - time.monotonic()) * 0.25
    for nodes, counts, _ in allocation.scattered_node_sets(machine, traffic.size, network, deadline=soon):
        slots = allocation.first_slots(machine, dict(zip(nodes.tolist(), counts.tolist())))
        named["scattered " + ",".join(f"{machine.hosts[k]}:{c}" for k, c in zip(nodes, counts))] = (nodes, slots)
    wider = set()
    if extra_nodes:
        for nodes, slots, k in allocation.wider_node_sets(machine, traffic.size, extra_nodes):
            name = f"{len(nodes)} nodes x {k}"
            while name in named:
                name += "'"
            named[name] = (nodes, slots)
            wider.add(name)
    no_wider = ""
    if extra_nodes and not wider:
        # the option was taken and changed nothing, without a word (16 ranks filling 8 nodes of 2,
        # or 10 % of 4 nodes: less than one more node)
        cap = allocation.node_capacity(machine)
        lo, avail = allocation.fewest_nodes(cap, traffic.size), int((cap > 0).sum())
        hi = min(avail, int(np.floor(lo * (1 + extra_nodes / 100) + 1e-9)))
        why = (f"the ranks need all {avail} available nodes" if lo >= avail else
               f"{extra_nodes:g} % more than the fewest {lo} nodes is less than one more node "
               f"(--extra-nodes {100 / lo:.4g} or more adds one)" if hi <= lo else
               f"on {lo + 1}" + (f"-{hi}" if hi > lo + 1 else "") + " nodes a node still holds as many ranks as on "
               f"the fewest {lo}, or no compact set of that many nodes was found")
        no_wider = f"; --extra-nodes {extra_nodes:g}: no wider node set to compare ({why})"
    predictor = _predictor(traffic, machine, network)
    pool, of = {}, {}
    quick = _QuickMappings(deadline)
    for i, (name, (nodes, slots)) in enumerate(named.items()):
        sub = allocation.restrict(machine, nodes, slots)
        if sub.nslots < traffic.size:
            continue
        # (run_map's deadline: the candidates share half of the time left)
        share = time_limit if deadline is None else max(1e-3, (deadline - time.monotonic()) * 0.5 / (len(named) - i))
        slot, costs[name] = quick.map(traffic, sub, graph, algorithm, seed, refine, fill, share)
        kept = allocation.kept_slots(machine, nodes, slots)
        pool[name] = kept[slot]
        pool[f"{name}, block order"] = kept[baselines.block(traffic.size, sub)]
        of[name] = of[f"{name}, block order"] = name
    narrow = {k: v for k, v in costs.items() if k not in wider}
    by_cost = min(narrow, key=narrow.get)     # the choice without a network (ties: the first)
    if deadline is not None:
        # --time-limit: predict's estimates of the candidates get half of what is left, the full
        # searches the rest (they ran on past the limit: an SMPI trace of 1,024 ranks on an 8x8x8
        # torus, --time-limit 2, took 52 s); past it the candidates not yet estimated are left out
        # (solve.choose_predicted: by_cost too unless another was estimated)
        predictor.deadline = time.monotonic() + 0.5 * max(0.0, deadline - time.monotonic())
    pick, predicted = solve.choose_predicted({k: v for k, v in pool.items() if of[k] not in wider}, by_cost,
                                             machine, predictor)
    narrow_pick = pick
    wide = {k: v for k, v in pool.items() if of[k] in wider and of[k] in costs}
    if wide and predicted:                    # (WIDER_MARGIN's comment)
        first = min(wide, key=lambda k: costs[of[k]])
        wpick, wpred = solve.choose_predicted(wide, first, machine, predictor)
        predicted.update(wpred)
        if wpred and wpred[wpick] < (1 - WIDER_MARGIN) * predicted[pick]:
            pick = wpick
    estimates = {}
    for k, v in predicted.items():           # each node set: the lower of its two
        estimates[of[k]] = min(v, estimates.get(of[k], v))
    what = "run time" if getattr(predictor, "estimates", "") == "run" else "communication"
    scat = sum(1 for k in costs if k.startswith("scattered"))
    wid = sum(1 for k in costs if k in wider)
    chosen = of[pick]
    note = (f"{len(costs) - scat - wid} compact (boxes, leaves, the run's allocation), {scat} scattered"
            + (f" and {wid} wider (--extra-nodes)" if wider else "") + " candidate(s) "
            f"compared by predict's {what} of a quick mapping and of block order on each: " +
            (f"{pick} ({predicted[pick]:.4g} s)" if predicted else
             f"none was estimated within the time limit, {by_cost} (the cheapest by the cost) is kept"))
    if predicted and chosen != by_cost:
        note += f" against {by_cost} ({estimates[by_cost]:.4g} s), the cheapest by the cost"
    elif predicted:
        others = {k: v for k, v in estimates.items() if k != chosen}
        if others:
            nxt = min(others, key=others.get)
            note += f"; next {nxt} ({others[nxt]:.4g} s)"
    note += no_wider + quick.said()
    if getattr(predictor, "unpredicted", 0):
        note += (f"; the time limit left {predictor.unpredicted} of the candidate mappings unpredicted (the "
                 "choice was made among those predicted, or the cost's kept)")
    nodes = {k: [machine.hosts[x] for x in named[k][0]] for k in estimates}
    roles = {"chosen": chosen, "by_cost": by_cost}
    if chosen in wider:
        roles["narrow"] = of[narrow_pick]        # the best of the fewest nodes, searched in full too
    return {k: named[k] for k in roles.values()}, note, {**roles, "estimates": estimates, "mapping": pick,
                                                         "what": what, "nodes": nodes}


class _QuickMappings:
    """Whole-cluster mode's quick mapping of each candidate node set, under --time-limit: a
    quick solve still partitions the whole traffic whatever time it is given (0.4 s each for
    1,024 ranks on 1,024 one-core nodes: 8 candidates took a --time-limit 0.5 to 7 s), so once
    the candidates' half of the limit would be passed by one more (timed by the last), the
    remaining sets are judged by block order on them alone (and said so)."""

    def __init__(self, deadline: float | None):
        self.deadline, self.end, self.last, self.skipped = deadline, None, 0.0, 0
        if deadline is not None:
            self.end = time.monotonic() + 0.5 * max(0.0, deadline - time.monotonic())

    def map(self, traffic, sub, graph, algorithm, seed, refine, fill, share) -> tuple:
        """(slot of each rank on `sub`, its cost)."""
        t = time.monotonic()
        if self.end is not None and self.last and t + self.last > self.end:
            self.skipped += 1
            slot = baselines.block(traffic.size, sub)
            return slot, solve.Problem(graph, sub).cost(slot)
        r = solve.solve(traffic, sub, algorithm, seed, tries=1, time_limit=share, refine=refine, fill=fill,
                        graph=graph, quick=True)
        self.last = time.monotonic() - t
        return r.slot_of_rank, r.cost

    def said(self) -> str:
        return (f"; the time limit left {self.skipped} of them judged by block order alone (no quick mapping)"
                if self.skipped else "")


def _final_choice(roles: dict, est: dict) -> str:
    """Among the node sets searched in full (_choose_nodes_predicted's roles: the chosen set,
    the cost's, and with a wider chosen set the best of the fewest nodes), by their final
    estimates: the chosen one if predicted faster than the cost's, a wider one only if
    predicted WIDER_MARGIN faster than that. An estimate missing: the cost's."""
    by_cost, chosen = roles["by_cost"], roles["chosen"]
    if None in est.values():
        return by_cost
    narrow = roles.get("narrow", chosen)
    keep = narrow if narrow in est and est[narrow] < est[by_cost] else by_cost
    if "narrow" in roles and est[chosen] < (1 - WIDER_MARGIN) * est[keep]:
        keep = chosen
    return keep


def _predictor(traffic: Traffic, machine, network):
    """slot -> predicted communication seconds on `network` (None without one)."""
    if network is None:
        return None
    from rankmap.mapper.critpath import schedule_of
    from rankmap.mapper.predict import FLUID_BUDGET, predict
    sched = schedule_of(traffic)          # an SMPI trace: the latency on its critical path
    # tens of candidates: the flow replay's cap for a choice, not for an estimate (predict.FLUID_BUDGET)
    if sched is None or sched.size != traffic.size or not network.core_speed:
        return lambda slot: predict(traffic.bytes, traffic.msgs, machine, slot, network, schedule=sched,
                                    budget=FLUID_BUDGET)["seconds"]

    from rankmap.mapper.predict import ESTIMATE_BUDGET, replay_epoch, run_estimate

    def run(slot):                        # and its compute: the run's time and its communication part
        r = run_estimate(sched, machine, slot, network, FLUID_BUDGET)
        if r is None:
            return predict(traffic.bytes, traffic.msgs, machine, slot, network, schedule=sched,
                           budget=FLUID_BUDGET)["seconds"]
        run.sharing = r["run_sharing"]
        return r["run_seconds"], r["run_comm_seconds"]

    def final(slot):
        """The few best candidates again by the flow replay, where the screening replayed in
        turn over FLUID_BUDGET (solve.choose_predicted): at 125-216 ranks the in-turn replay was
        3-12 % off SimGrid's run and ranked NPB CG B 128's candidates on Angara-K1 at /16 in
        another order, the flows 0.0-0.1 % (docs/real-apps.md). None: nothing to add."""
        if run.sharing != "in turn":
            return None
        r = run_estimate(sched, machine, slot, network, ESTIMATE_BUDGET)
        if r is None or r["run_sharing"] != "fluid":
            return None
        return r["run_seconds"], r["run_comm_seconds"]
    run.sharing = None
    run.estimates = "run"
    run.final = final
    run.epoch = lambda: replay_epoch(sched)     # changes when the replay changes (predict.run_estimate)
    return run


def inputs_of(traffic: Traffic, spec: dict) -> list:
    """The files a mapping was made from (an output must never replace them)."""
    out = [traffic.source, getattr(spec, "origin", None)]
    for k in ("coords", "level_costs"):
        v = spec.get(k)
        if isinstance(v, str):
            out.append(v)
    return [x for x in out if x]


def _processes(spec: dict) -> bool:
    """Ranks are processes (--oversubscribe: distinct cores first), not --imbalance's units of
    work, which fill cores as a partition does (--imbalance 0 too)."""
    return spec.get("imbalance") is None


def _orders(n: int, searched, sel, seed) -> dict:
    """Block, cyclic and random over the slots a search used (the machine `searched`, its
    slots `sel` of the whole machine; None: the whole machine), as slots of the whole machine."""
    lift = (lambda s: s) if sel is None else (lambda s: sel[s])
    return {"block": lift(baselines.block(n, searched)), "cyclic": lift(baselines.cyclic(n, searched)),
            "random": lift(baselines.random(n, searched, seed))}


def _orders_of(n: int, machine, spec: dict, seed) -> dict:
    """evaluate's and predict's block, cyclic and random: as map's, over distinct cores first on
    an oversubscribed machine of processes (allocation.cores_first); --fill spread is not
    in machine.json, so there they are the whole machine's slots in order."""
    packed = allocation.cores_first(machine, n) if _processes(spec) else None
    return _orders(n, machine, None, seed) if packed is None else _orders(n, packed[0], packed[1], seed)


# the rows evaluate adds: a mapping of one of these names gets a prime instead of replacing it
BASELINE_ROWS = ("block", "cyclic", "random", "input order")


def _read_named(mappings, machine, n: int, named: dict) -> dict:
    """Each mapping (directory or file) under its name; repeated names, and the baselines'
    names, get primes."""
    for m in mappings:
        name = Path(m).name or m
        while name in named or name in BASELINE_ROWS:
            name += "'"
        named[name] = writers.read_mapping(m, machine, n)
    return named


def run_evaluate(traffic: Traffic, spec: dict, mappings, seed, plots_dir, console) -> dict:
    machine = mspec.build(spec)
    named = _read_named(mappings, machine, traffic.size, {})
    orders = _orders_of(traffic.size, machine, spec, seed)
    results = report.compare(traffic.bytes, machine, named | orders, seed, traffic.placement, by_node=True)
    if plots_dir:
        _plots(Path(plots_dir), traffic, machine, named | {"block": orders["block"]},
               inputs=[traffic.source, *mappings])
    if console is not None:
        console.print(f"[bold]rankmap evaluate[/bold] {traffic.size} ranks on {machine.describe()}")
        console.print(report.table(report.strip_lists(results), "mappings compared"))
    return {"machine": machine.describe(), "metrics": results}


def run_predict(traffic: Traffic, spec: dict, mappings, net, console) -> dict:
    """`rankmap predict`: the network model's estimate for each mapping (and block); `net`
    is a rankmap.mapper.predict.Network."""
    from rankmap.mapper.predict import predict
    machine = mspec.build(spec)
    named = _read_named(mappings, machine, traffic.size, {"block": _orders_of(traffic.size, machine, spec, 0)["block"]})
    from rankmap.mapper.critpath import schedule_of
    sched = schedule_of(traffic)          # an SMPI trace: the latency on its critical path
    out = {k: predict(traffic.bytes, traffic.msgs, machine, slot, net, schedule=sched) for k, slot in named.items()}
    if console is not None:
        from rich.table import Table
        t = Table(title=f"{traffic.size} ranks on {machine.describe()}", show_edge=False)
        for c in ("mapping", "estimate s", "latency s", "bandwidth s", "limited by", "vs block"):
            t.add_column(c, justify="left" if c in ("mapping", "limited by") else "right")
        ref = out["block"]["seconds"]
        for k, r in out.items():
            t.add_row(k, f"{r['seconds']:.4g}", f"{r['latency']:.4g}", f"{r['bandwidth']:.4g}", r["limited_by"],
                      f"{r['seconds'] / ref:.3f}" if ref else "-")
        console.print(f"[bold]rankmap predict[/bold] communication time of {traffic.format} traffic, as if compute "
                      "cost nothing")
        console.print(t)
    return {"machine": machine.describe(), "network": vars(net), "estimates": out}


def _plots(where: Path, traffic, machine, named: dict, check: bool = True, inputs=()) -> None:
    """Heatmaps (and torus link loads) per mapping, as PNG files in `where`. check: each file
    is an output of its own (rankmap.profiler.outputs: an existing PNG is replaced only when
    rankmap drew it); inside a mapping being written, no check is needed."""
    from rankmap.mapper import plots      # matplotlib: 1.3 s of every command's start, only for --plots
    if check:
        outputs.plots_dir(where, "--plots", inputs)
    for name, slot in named.items():
        order = report.mapped_order(slot)
        nodes_in_order = machine.slot_node[slot[order]]
        bounds = list(np.flatnonzero(np.diff(nodes_in_order)) + 1)
        safe = "".join(c if c.isalnum() else "_" for c in name)
        _png(where / f"heatmap-{safe}.png", check, inputs,
             lambda p: plots.heatmap(traffic.offdiag(), p, f"traffic in {name} order", order=order,
                                     boundaries=bounds if len(bounds) < 200 else None))
        if isinstance(machine.network, Torus):
            from rankmap.mapper.metrics import link_loads
            _png(where / f"links-{safe}.png", check, inputs,
                 lambda p: plots.torus_loads(machine, link_loads(traffic.offdiag(), machine, slot), p,
                                             f"link loads, {name}"))


def _png(path: Path, check: bool, inputs, draw) -> None:
    if not check:
        draw(path)
        return
    t = outputs.target_file(path, "--plots", inputs=inputs, signature=outputs.png_signature, force_flag=None)
    outputs.write_file(t, draw)
