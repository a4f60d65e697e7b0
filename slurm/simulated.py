"""The profile -> map -> relaunch workflow on a simulated cluster (SimGrid SMPI), and the
comparison of placements by trace replay that the demo and bench/mapping_sim.py print.

Placements (as the Angara paper names them):
  block      Slurm's default: the first nodes of the cluster, each filled in turn
  cyclic     Slurm's cyclic distribution over the same nodes
  random     a random order over the same nodes (seeded)
  rankmap-b  rankmap's mapping onto the same nodes (mode "same allocation")
  rankmap-c  rankmap's mapping onto nodes it chooses among the whole cluster
  rankmap-c+ the same, allowed more nodes than the fewest, partly filled (map --extra-nodes;
             only when asked for)
Communication time = simulated time minus the time of the same trace on a network that
costs nothing (platform-ideal.xml): what the network adds to the run, waiting included."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path


from rankmap.mapper import baselines, metrics, spec as mspec, writers
from rankmap.slurm import platform as plat
from rankmap.mapper.mapping import run_map
from rankmap.mapper.predict import predict, replay_epoch
from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import read_traffic
from rankmap.slurm import smpi

PLACEMENTS = ("block", "cyclic", "random", "rankmap-b", "rankmap-c")
MAPPING_DIRS = {"rankmap-b": "mapping-b", "rankmap-c": "mapping-c", "rankmap-c+": "mapping-c+"}


@dataclass
class Allocation:
    """The nodes block placement uses, as a machine of their own."""
    hosts: list            # block hostfile: host of each rank
    nodes: list            # distinct nodes, in order
    spec_path: Path        # machine.json restricted to those nodes


def allocate(p: plat.Platform, platform_dir: Path, nranks: int, where: Path) -> Allocation:
    hosts = plat.block_allocation(p, nranks)
    nodes = list(dict.fromkeys(hosts))
    spec = plat.machine_spec(p)
    keep = set(nodes)
    spec["hosts"] = nodes
    if spec.get("coords"):
        spec["coords"] = {h: c for h, c in spec["coords"].items() if h in keep}
    spec["node_topology"] = [t for t in _topologies(p, nodes)]
    where.mkdir(parents=True, exist_ok=True)
    path = where / "allocation-machine.json"
    path.write_text(json.dumps(spec, indent=2) + "\n")
    return Allocation(hosts=hosts, nodes=nodes, spec_path=path)


def _topologies(p: plat.Platform, nodes: list[str]) -> list[str]:
    from rankmap.mapper import hostnames
    by: dict[str, list[str]] = {}
    for h in nodes:
        by.setdefault(plat.sim_spec(p, int(h[len(p.prefix):])), []).append(h)
    return [next(iter(by))] if len(by) == 1 else [f"{hostnames.compress(hs)}={s}" for s, hs in by.items()]


def _hosts(machine, slot) -> list[str]:
    return [machine.hosts[machine.slot_node[s]] for s in slot]


def placements(trace: Path, p: plat.Platform, platform_dir: Path, nranks: int, out: Path, seed: int = 0,
               which=PLACEMENTS, model: str = "auto", console=None, network=None,
               extra_nodes: float = 0) -> dict[str, list[str]]:
    """Hostfile lines of each placement (rankmap's mappings are written under out/). network:
    rankmap's final choice made with predict on these speeds (run_map's network), or None.
    extra_nodes: rankmap-c+'s --extra-nodes percentage (it needs the network)."""
    alloc = allocate(p, platform_dir, nranks, out)
    m_alloc = mspec.build(mspec.load(alloc.spec_path))
    traffic = read_traffic(trace, "smpi", model)
    res: dict[str, list[str]] = {}
    for name in which:
        if name == "block":
            res[name] = alloc.hosts
        elif name == "cyclic":
            res[name] = _hosts(m_alloc, baselines.cyclic(nranks, m_alloc))
        elif name == "random":
            res[name] = _hosts(m_alloc, baselines.random(nranks, m_alloc, seed))
        elif name in MAPPING_DIRS:
            same = name == "rankmap-b"
            d = out / MAPPING_DIRS[name]
            run_map(traffic, mspec.load(alloc.spec_path if same else platform_dir / "machine.json"),
                    algorithm="metis", seed=seed, tries=None, time_limit=None, refine=True, fill="packed",
                    mode="same-allocation" if same else "whole-cluster", out=str(d), force=True, plots_on=False,
                    console=None, also_nodes=alloc.nodes, network=network,
                    extra_nodes=extra_nodes if name == "rankmap-c+" else 0)
            res[name] = smpi.read_hostfile(d / "hostfile")
        else:
            raise UserError(f"unknown placement {name!r}; choose among {', '.join(PLACEMENTS)}")
    return res


@dataclass
class Outcome:
    seconds: float
    comm_seconds: float
    wall: float
    hop_bytes: float = 0.0
    max_link_load: float = 0.0
    internode_fraction: float = 0.0
    extra: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {"simulated_seconds": self.seconds, "comm_seconds": self.comm_seconds,
                "comm_share": self.comm_seconds / self.seconds if self.seconds else 0.0, "wall_seconds": self.wall,
                "hop_bytes": self.hop_bytes, "max_link_load": self.max_link_load,
                "internode_fraction": self.internode_fraction} | self.extra


def ideal_seconds(trace: Path, p: plat.Platform, platform_dir: Path, hostfile: Path, nranks: int) -> float:
    """The trace on a network that costs nothing (the same for every placement)."""
    return smpi.replay(trace, p, platform_dir, hostfile, nranks, ideal=True).seconds


def compare(trace: Path, p: plat.Platform, platform_dir: Path, hosts_of: dict[str, list[str]], out: Path,
            model: str = "auto", advance=None) -> dict[str, Outcome]:
    """Replay the trace under each placement; metrics on rankmap's model of the platform."""
    nranks = len(next(iter(hosts_of.values())))
    try:
        traffic = read_traffic(trace, "smpi", model)
    except UserError as e:
        # a trace cut short cannot be replayed: the reader's hint, --allow-partial, is an option
        # of map and predict that replay does not have
        hint = " (--allow-partial uses it anyway)"
        if not str(e).endswith(hint):
            raise
        raise UserError(str(e)[:-len(hint)] + "; SimGrid cannot replay a trace cut short") from None
    from rankmap.profiler.smpi_trace import NOT_REPLAYABLE
    bad = next((n for n in traffic.notes if NOT_REPLAYABLE in n), None)
    if bad:       # SimGrid segfaults on them, after minutes of replaying the other placements
        raise UserError(f"{trace}: {bad}")
    full = mspec.build(plat.machine_spec(p))
    net = p.network()
    from rankmap.mapper.critpath import schedule_of
    sched = schedule_of(traffic)
    out.mkdir(parents=True, exist_ok=True)
    first = None
    results, slots = {}, {}
    for name, hosts in hosts_of.items():
        smpi.check_hosts(hosts, p, name)
        hf = smpi.write_hostfile(hosts, out / f"hostfile-{name}")
        if first is None:
            first = ideal_seconds(trace, p, platform_dir, hf, nranks)
            if advance:
                advance("ideal network")
        r = smpi.replay(trace, p, platform_dir, hf, nranks)
        alone = smpi.replay(trace, p, platform_dir, hf, nranks, variant="platform-nocompute.xml")
        slot = writers.read_mapping(hf, full, nranks)
        mt = metrics.evaluate(traffic.bytes, full, slot)
        slots[name] = slot
        results[name] = Outcome(seconds=r.seconds, comm_seconds=max(0.0, r.seconds - first), wall=r.wall,
                                hop_bytes=mt["net_hop_bytes"], max_link_load=mt["max_link_load"],
                                internode_fraction=mt["internode_fraction"],
                                extra={"comm_alone_seconds": alone.seconds, "ideal_seconds": first})
        if advance:
            advance(name)
    # predict picks its replay on the first placement and may switch on a costlier one (the
    # schedule's epoch): the placements estimated before a switch are estimated again, so all
    # of them are estimated alike
    epoch_of: dict = {}
    todo = list(slots)
    while todo:
        for name in todo:
            pr = predict(traffic.bytes, traffic.msgs, full, slots[name], net, schedule=sched)
            results[name].extra.update({"predicted_comm_seconds": pr["seconds"], "predicted_limit": pr["limited_by"],
                                        "predicted_bounds": pr["bounds"]})
            epoch_of[name] = replay_epoch(sched)
        todo = [n for n, e in epoch_of.items() if e != replay_epoch(sched)]
    return results


def run_workflow(program: list[str], platform_dir: str, nranks: int | None, out: str | None, mode: str, seed: int,
                 model: str, compute: str, replay_pass2: bool, console) -> int:
    """Pass 1 under smpirun with a trace, map, pass 2 on the mapping; report both."""
    if not nranks or nranks < 1:
        raise UserError("--launcher smpi needs the number of ranks: -n N")
    p, pdir = plat.load(platform_dir)
    # what cannot run is said before --out is made: that directory is never reused, and a
    # failed run left it (its marker, the pass-1 hostfile) for the user to delete
    plat.block_allocation(p, nranks)
    smpi.check_program(program)
    from rankmap.profiler import outputs
    out_dir = outputs.new_dir(out if out is not None else time.strftime("rankmap-sim-%Y%m%d-%H%M%S"), "--out", "run")
    say = console.print if console is not None else (lambda *a, **k: None)
    say(f"[bold]simulated cluster[/bold] {plat.describe(p)}")
    alloc = allocate(p, pdir, nranks, out_dir)
    hf1 = smpi.write_hostfile(alloc.hosts, out_dir / "hostfile-pass1")
    trace = out_dir / "profile" / "trace.ti"
    say(f"pass 1: {nranks} ranks, Slurm block placement on {len(alloc.nodes)} node(s), recording a trace")
    r1 = smpi.run(program, p, pdir, hf1, nranks, trace=trace, compute=compute)
    (out_dir / "profile" / "stdout.txt").write_text(r1.stdout)
    ideal = smpi.replay(trace, p, pdir, hf1, nranks, ideal=True).seconds
    same = mode == "same-allocation"
    # the platform's speeds are known: the final choice among the candidate mappings (and
    # node sets) by predict's replay of the trace on them, as `map --network-speeds` makes it.
    # Without them, on the all-to-all SpMV on Desmos (bench/mapping_sim.py), rankmap-b's
    # lower cost was 1.2 % slower than block
    rep = run_map(read_traffic(trace, "smpi", model), mspec.load(alloc.spec_path if same else pdir / "machine.json"),
                  algorithm="metis", seed=seed,
                  tries=None, time_limit=None, refine=True, fill="packed", mode=mode, out=str(out_dir / "mapping"),
                  force=False, plots_on=False, console=None, also_nodes=alloc.nodes, network=p.network())
    hf2 = out_dir / "mapping" / "hostfile"
    hosts2 = smpi.read_hostfile(hf2)
    smpi.check_hosts(hosts2, p, str(hf2))
    how = "replaying the trace" if replay_pass2 else "re-executing"
    say(f"mapped ({rep['chosen']}, mode {mode}) onto {len(set(hosts2))} node(s); pass 2: {how}")
    if replay_pass2:
        # both passes replayed: the same trace under two hostfiles, nothing else differs
        r1 = smpi.replay(trace, p, pdir, hf1, nranks)
        r2 = smpi.replay(trace, p, pdir, hf2, nranks)
    else:
        r2 = smpi.run(program, p, pdir, hf2, nranks, compute=compute)
        (out_dir / "stdout-pass2.txt").write_text(r2.stdout)
    rows = {"pass 1 (block)": r1.seconds, "pass 2 (rankmap)": r2.seconds}
    summary = {"platform": plat.describe(p), "ranks": nranks, "mode": mode, "program": program,
               "ideal_network_seconds": ideal, "pass2": "replay" if replay_pass2 else "execute",
               "compute": compute, "passes": {}}
    for name, secs in rows.items():
        comm = max(0.0, secs - ideal)
        summary["passes"][name] = {"simulated_seconds": secs, "comm_seconds": comm,
                                   "comm_share": comm / secs if secs else 0.0}
        say(f"  {name:17} simulated {secs:.6g} s, communication {comm:.6g} s ({comm / secs if secs else 0:.1%})")
    if r1.seconds > 0:
        say(f"  pass 2 / pass 1: {r2.seconds / r1.seconds:.3f} in time, "
            f"{(max(0, r2.seconds - ideal)) / max(1e-300, r1.seconds - ideal):.3f} in communication")
    if compute == "measured" and not replay_pass2:
        say("  note: measured compute varies 4-12 % between SMPI runs; compare placements with --replay")
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    say(f"written: {out_dir}/{{profile/trace.ti, mapping/, summary.json}}")
    return 0
