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
            force, plots_on, console, also_nodes: list[str] | None = None) -> dict:
    """also_nodes: in whole-cluster mode, one more candidate node set (e.g. the allocation a
    run had); the nodes a profile ran on are always a candidate."""
    t0 = time.monotonic()
    traffic = load_traffic(matrix, fmt, model, allow_partial)
    spec = options.spec_from_options(mopts, _hosts_of(traffic))
    machine = options.build(spec)
    graph = from_traffic(traffic)
    notes = list(traffic.notes)
    chosen_nodes = None
    if mode == "whole-cluster":
        cands = allocation.candidate_node_sets(machine, traffic.size)
        index = {h: k for k, h in enumerate(machine.hosts)}
        for extra in (_hosts_of(traffic), also_nodes):   # where the run was is a candidate too
            if extra and all(h in index for h in extra):
                ids = np.array(sorted(index[h] for h in set(extra)))
                if not any(len(c) == len(ids) and (np.sort(c) == ids).all() for c in cands):
                    cands.append(ids)
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


def _spec_for_mappings(traffic, mappings, mopts: dict, missing: str) -> dict:
    """The machine: from the options, else from the first mapping's machine.json."""
    if not any(mopts.get(k) for k in ("nodes", "topologies", "machine_file")):
        first = Path(mappings[0])
        if (first / "machine.json").exists():
            mopts = dict(mopts, machine_file=str(first))
    spec = options.spec_from_options(mopts, _hosts_of(traffic))
    if not spec.get("node_topology"):
        raise UserError(missing)
    return spec


def _read_named(mappings, machine, n: int, named: dict) -> dict:
    """Each mapping (directory or file) under its name; repeated names get primes."""
    for m in mappings:
        name = Path(m).name or m
        while name in named:
            name += "'"
        named[name] = writers.read_mapping(m, machine, n)
    return named


def run_evaluate(matrix, mappings, fmt, model, allow_partial, mopts, seed, plots_dir, console) -> dict:
    traffic = load_traffic(matrix, fmt, model, allow_partial)
    spec = _spec_for_mappings(traffic, mappings, mopts, "no machine: pass --node-topology (and --nodes ...), or "
                              "--machine with a mapping's machine.json")
    machine = options.build(spec)
    named = _read_named(mappings, machine, traffic.size, {})
    results = report.compare(traffic.bytes, machine, named, seed, traffic.placement)
    if plots_dir:
        _plots(Path(plots_dir), traffic, machine, named | {"block": np.arange(traffic.size, dtype=np.int64)})
    if console is not None:
        console.print(f"[bold]rankmap evaluate[/bold] {traffic.size} ranks on {machine.describe()}")
        console.print(report.table(report.strip_lists(results), "mappings compared"))
    return {"machine": machine.describe(), "metrics": results}


def run_predict(matrix, mappings, fmt, model, allow_partial, mopts, net_opts: dict, console) -> dict:
    """`rankmap predict`: the network model's estimate for each mapping (and block)."""
    from mapper.predict import Network, predict
    traffic = load_traffic(matrix, fmt, model, allow_partial)
    platform_dir = net_opts.get("platform")
    if platform_dir and not mopts.get("machine_file"):
        mopts = dict(mopts, machine_file=str(Path(platform_dir) / "machine.json")
                     if Path(platform_dir).is_dir() else platform_dir)
    spec = _spec_for_mappings(traffic, mappings, mopts, "no machine: pass --machine (a mapping or platform "
                              "directory) or --node-topology and --nodes")
    machine = options.build(spec)
    net = _network(spec, net_opts)
    named = _read_named(mappings, machine, traffic.size, {"block": np.arange(traffic.size, dtype=np.int64)})
    out = {k: predict(traffic.bytes, traffic.msgs, machine, slot, net) for k, slot in named.items()}
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


def _network(spec: dict, o: dict):
    from mapper.platform import Platform
    from mapper.predict import Network
    if o.get("network"):
        net = Network.from_probe(o["network"])
    elif spec.get("simgrid"):
        sg = dict(spec["simgrid"])
        sg["dims"] = tuple(sg.get("dims") or ())
        sg["node_kinds"] = [tuple(k) for k in sg.get("node_kinds") or []]
        net = Network.from_platform(Platform(**sg))
    else:
        net = None
    given = {k: o.get(k) for k in ("link_bw", "link_lat", "loopback_bw", "loopback_lat", "nic_bw")}
    if net is None:
        missing = [k for k in ("link_bw", "link_lat", "loopback_bw", "loopback_lat") if given[k] is None]
        if missing:
            raise UserError("the network's speed is unknown: give --platform DIR, --network PROBE.json, or "
                            + ", ".join("--" + k.replace("_", "-") for k in missing))
        net = Network(link_bw=0, link_lat=0, loop_bw=0, loop_lat=0, nic_bw=None)
    scale = {"link_bw": 1e9, "link_lat": 1e-6, "loopback_bw": 1e9, "loopback_lat": 1e-6, "nic_bw": 1e9}
    attr = {"link_bw": "link_bw", "link_lat": "link_lat", "loopback_bw": "loop_bw", "loopback_lat": "loop_lat",
            "nic_bw": "nic_bw"}
    for k, v in given.items():
        if v is not None:
            if v <= 0 and k != "link_lat" and k != "loopback_lat" or v < 0:
                raise UserError(f"--{k.replace('_', '-')} must be positive")
            setattr(net, attr[k], v * scale[k])
    return net


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
