"""`rankmap map` and `rankmap evaluate`: from traffic and a machine description to a mapping
directory and a comparison with the default orders."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from mapper import allocation, options, plots, report, solve, writers
from mapper.graph import from_traffic
from mapper.network import Torus
from profiler.errors import UserError
from profiler.traffic import load_traffic

VERSION = "0.1.0"


def _hosts_of(traffic):
    if not traffic.placement:
        return None
    seen = []
    for h, _ in traffic.placement:
        if h and h not in seen:
            seen.append(h)
    return seen


def run_map(matrix, fmt, model, allow_partial, mopts, algorithm, seed, tries, time_limit, refine, fill, mode, out,
            force, plots_on, console) -> dict:
    t0 = time.monotonic()
    traffic = load_traffic(matrix, fmt, model, allow_partial)
    spec = options.spec_from_options(mopts, _hosts_of(traffic))
    machine = options.build(spec)
    graph = from_traffic(traffic)
    notes = list(traffic.notes)
    chosen_nodes = None
    if mode == "whole-cluster":
        cands = allocation.candidate_node_sets(machine, traffic.size)
        best = None
        for nodes in cands:   # a quick mapping on each candidate part, the cheapest wins
            sub = allocation.restrict(machine, nodes)
            if sub.nslots < traffic.size:
                continue
            r = solve.solve(traffic, sub, algorithm, seed, tries=1, time_limit=time_limit, refine=refine,
                            fill=fill, graph=graph, quick=True)
            if best is None or r.cost < best[0]:
                best = (r.cost, nodes)
        chosen_nodes = best[1]
        machine = allocation.restrict(machine, chosen_nodes)
        notes.append(f"whole-cluster mode: {len(chosen_nodes)} of {len(spec['hosts'])} nodes chosen "
                     f"({len(cands)} compact candidate(s) compared)")
    res = solve.solve(traffic, machine, algorithm, seed, tries, time_limit, refine, fill, graph=graph)
    notes += res.notes
    results = report.compare(traffic.bytes, machine, {"rankmap": res.slot_of_rank}, seed, traffic.placement)
    rep = {
        "rankmap_version": VERSION,
        "traffic": {"source": str(traffic.source), "format": traffic.format, "ranks": traffic.size,
                    "bytes": float(traffic.offdiag().sum()), "pairs": int(graph.W.nnz // 2)},
        "machine": machine.describe(),
        "mode": mode,
        "nodes": machine.hosts,
        "algorithm": algorithm, "seed": seed, "chosen": res.chosen, "fell_back": res.fell_back,
        "objective": "cost = sum over rank pairs of bytes x accumulated level costs (TreeMatch SUM_COM; on a "
                     "torus the node level pays per hop)",
        "cost": res.cost, "candidates": res.candidates, "defaults": res.defaults,
        "metrics": results, "seconds": round(time.monotonic() - t0, 3), "search_seconds": round(res.seconds, 3),
        "notes": notes,
    }
    path = writers.write_mapping(out, res.slot_of_rank, machine, rep, options.frozen_spec(spec, machine), force)
    if plots_on:
        _plots(path, traffic, machine, {"rankmap": res.slot_of_rank,
                                         "block": np.arange(traffic.size, dtype=np.int64)})
    if console is not None:
        console.print(f"[bold]rankmap map[/bold] {traffic.size} ranks ({traffic.format}) onto {machine.describe()}")
        for n in notes:
            console.print(f"  note: {n}")
        console.print(report.table(report.strip_lists(results), f"{res.chosen}, seed {seed}, "
                                   f"{rep['seconds']:.2f} s"))
        console.print(f"Written: {path}/{{{','.join(writers.FILES)}}}")
    return rep


def run_evaluate(matrix, mappings, fmt, model, allow_partial, mopts, seed, plots_dir, console) -> dict:
    traffic = load_traffic(matrix, fmt, model, allow_partial)
    if not any(mopts.get(k) for k in ("nodes", "topologies", "machine_file")):
        first = Path(mappings[0])
        if (first / "machine.json").exists():
            mopts = dict(mopts, machine_file=str(first))
    spec = options.spec_from_options(mopts, _hosts_of(traffic))
    if not spec.get("node_topology"):
        raise UserError("no machine: pass --node-topology (and --nodes ...), or --machine with a mapping's machine.json")
    machine = options.build(spec)
    named = {}
    for m in mappings:
        name = Path(m).name or m
        while name in named:
            name += "'"
        named[name] = writers.read_mapping(m, machine, traffic.size)
    results = report.compare(traffic.bytes, machine, named, seed, traffic.placement)
    if plots_dir:
        _plots(Path(plots_dir), traffic, machine, named | {"block": np.arange(traffic.size, dtype=np.int64)})
    if console is not None:
        console.print(f"[bold]rankmap evaluate[/bold] {traffic.size} ranks on {machine.describe()}")
        console.print(report.table(report.strip_lists(results), "mappings compared"))
    return {"machine": machine.describe(), "metrics": results}


def _plots(where: Path, traffic, machine, named: dict) -> None:
    where.mkdir(parents=True, exist_ok=True)
    for name, slot in named.items():
        order = report.mapped_order(slot)
        nodes_in_order = machine.slot_node[slot[order]]
        bounds = list(np.flatnonzero(np.diff(nodes_in_order)) + 1)
        safe = "".join(c if c.isalnum() else "_" for c in name)
        plots.heatmap(traffic.offdiag(), where / f"heatmap-{safe}.png", f"traffic in {name} order", order=order,
                      boundaries=bounds if len(bounds) < 200 else None)
        if isinstance(machine.network, Torus):
            from mapper.metrics import link_loads
            plots.torus_loads(machine, link_loads(traffic.offdiag(), machine, slot), where / f"links-{safe}.png",
                              f"link loads, {name}")
