"""Every placement of one trace on one simulated machine, replayed at several network speeds.

Placements (one hostfile each, line i = host of rank i):
  block, cyclic, random   Slurm's block and cyclic distributions and a seeded random order,
                          on the nodes Slurm's block allocation gives the job
  rankmap-b               rankmap's mapping onto those same nodes (mode same-allocation)
  rankmap-c               rankmap's mapping onto nodes it chooses in the whole cluster
  rankmap-c+              the same with `map --extra-nodes PCT` (replay --extra-nodes PCT only):
                          more nodes than the fewest, partly filled, where predict says faster
  <competitor>            each competitor's mapping (bench/competitors.py) of the same traffic
                          onto the same nodes as block and rankmap-b
All of them are replayed from the same trace with `rankmap.slurm.simulated.compare` (the
code `rankmap replay` runs): simulated time, communication time (= simulated time minus the
trace's time on a network that costs nothing), communication alone (the trace on cores that
cost nothing: what `rankmap predict` estimates) and predict's estimate.

Cached in WORK/replay/<case>/<machine>/: placements.json (hostfiles and mapping times) and
x<scale>.json per network speed; a placement missing from a cached file (a competitor that
became available) is replayed and added.

rankmap knows the simulated network's speeds here, so rankmap-b and rankmap-c are mapped once
per network speed with them (`run_map(network=...)`: the final choice among rankmap's
candidate mappings by `rankmap predict`'s estimate, mapper/solve.py choose_predicted):
placements.json "hosts_at" -> "x<scale>" -> name. A cached replay whose hostfile differs from
the placement's current hosts is replayed again (only that placement). --no-predict-choice
maps them once, from the traffic and the machine alone, as before."""
from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from rankmap.profiler.errors import UserError
from rankmap.slurm import platform as plat
from rankmap.slurm import simulated

MACHINES = ("angara-k1", "desmos", "fat-tree")
# network speed relative to the nominal one (bandwidth x s, latency / s): nominal (6 GB/s, 0.5 us per
# link), /4, /16, /64 (94 MB/s and 32 us per link: Gigabit Ethernet)
SCALES = (1.0, 0.25, 0.0625, 0.015625)
OURS = ("block", "cyclic", "random", "rankmap-b", "rankmap-c")
EXTRA = "rankmap-c+"        # replay --extra-nodes PCT: rankmap-c allowed PCT % more nodes (mapped with predict)
# the strongest configuration of each published mapper in bench/competitors.py ("all": every one)
COMPETITORS = ("sharedmap-strong", "kahip-ms-strong", "mtkahypar-ms", "mtkahypar-map-q", "scotch", "treematch")


def read_cached(f: Path):
    """A cached result file of WORK/replay (placements.json, x<scale>.json, floor/...), named
    when it cannot be read (a JSONDecodeError traceback before, on every later run)."""
    try:
        return json.loads(f.read_text())
    except (ValueError, UnicodeDecodeError) as e:
        raise UserError(f"{f}: not readable JSON ({e}; cut short by a full disk or an interrupt?); delete it and "
                        "run the phase that wrote it again for that row (replay, for placements.json and "
                        "x<scale>.json)") from None


def write_cached(f: Path, data) -> None:
    """Write a cached result file whole or not at all: written next to it, then renamed over
    it. Rewritten in place, a full disk or an interrupt cut the file short and the row's
    earlier replays (hours of simulation) were lost with it."""
    tmp = f.with_name(f".{f.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        os.replace(tmp, f)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise UserError(f"cannot write {f}: {e.strerror or e}; the file as it was is kept") from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def platform(work: Path, machine: str, scale: float) -> tuple:
    d = work / "platforms" / f"{machine}-x{scale:g}"
    if not (d / "machine.json").is_file():
        plat.write(replace(plat.preset(machine), network_scale=scale), d, force=True)
    return plat.load(d)


def capacity(machine: str) -> int:
    p = plat.preset(machine)
    return sum(p.node_cores(i) for i in range(p.nodes))


def _competitors():
    """bench/competitors.py (another part of the benchmark suite), or None with the reason."""
    try:
        import competitors      # bench/ is on sys.path
    except ImportError as e:
        return None, f"bench/competitors.py not importable ({e})"
    return competitors, None


def competitor_names(wanted=COMPETITORS) -> tuple[list, dict]:
    """The competitors to run (available ones among `wanted`, or all with wanted="all") and
    why the others are not."""
    comp, why = _competitors()
    if comp is None:
        return [], {"*": why}
    avail = comp.available()
    names = [n for n in avail if n != "block"] if wanted == "all" else [n for n in wanted if n in avail]
    unknown = [n for n in (() if wanted == "all" else wanted) if n not in avail]
    skipped = {n: r for n, r in avail.items() if r and n in names}
    skipped.update({n: "not in bench/competitors.py" for n in unknown})
    return [n for n in names if avail[n] is None], skipped


def symmetric_traffic(trace: Path):
    from rankmap.profiler.formats import read_traffic
    t = read_traffic(trace, "smpi", "auto")
    w = t.offdiag()
    return (w + w.T).tocsr()


def placements(trace: Path, ranks: int, work: Path, machine: str, out: Path, say=print,
               wanted=COMPETITORS, scales=(), predict_choice: bool = True, remap: bool = False,
               extra_nodes: float = 0) -> dict:
    """placements.json: host lists of ours and of every available competitor (computed once);
    with predict_choice, rankmap-b/-c again at each scale, knowing that network's speeds
    (remap: again even if placements.json has them); with extra_nodes, rankmap-c+ too at each
    scale (again when the percentage changed)."""
    f = out / "placements.json"
    data = read_cached(f) if f.is_file() else {"hosts": {}, "map_seconds": {}, "skipped": {}}
    p, pdir = platform(work, machine, 1.0)
    at = data.setdefault("hosts_at", {})
    for s in (scales if predict_choice else ()):
        k = f"x{s:g}"
        if not remap and all(n in at.get(k, {}) for n in ("rankmap-b", "rankmap-c")):
            continue
        ps, psdir = platform(work, machine, s)
        t0 = time.monotonic()
        at[k] = simulated.placements(trace, ps, psdir, ranks, out / "map" / k, seed=0,
                                     which=("rankmap-b", "rankmap-c"), network=ps.network())
        data["map_seconds"][f"(rankmap-b/-c, {k}, predict choice)"] = round(time.monotonic() - t0, 2)
    for s in (scales if extra_nodes else ()):
        k = f"x{s:g}"
        if not remap and EXTRA in at.get(k, {}) and data.get("extra_nodes", {}).get(k) == extra_nodes:
            continue
        ps, psdir = platform(work, machine, s)
        t0 = time.monotonic()
        at.setdefault(k, {}).update(simulated.placements(trace, ps, psdir, ranks, out / "map" / k, seed=0,
                                                         which=(EXTRA,), network=ps.network(),
                                                         extra_nodes=extra_nodes))
        data.setdefault("extra_nodes", {})[k] = extra_nodes
        data["map_seconds"][f"({EXTRA} {extra_nodes:g} %, {k})"] = round(time.monotonic() - t0, 2)
    missing = [n for n in OURS if n not in data["hosts"]]
    if missing:
        t0 = time.monotonic()
        hosts = simulated.placements(trace, p, pdir, ranks, out / "map", seed=0, which=tuple(missing))
        data["hosts"].update(hosts)
        for n in missing:
            if n.startswith("rankmap"):
                rep = out / "map" / ("mapping-b" if n == "rankmap-b" else "mapping-c") / "report.json"
                try:
                    data["map_seconds"][n] = json.loads(rep.read_text()).get("seconds")
                except (OSError, ValueError):
                    data["map_seconds"][n] = None
        data["map_seconds"]["(ours, all)"] = round(time.monotonic() - t0, 2)
    names, skipped = competitor_names(wanted)
    data["skipped"] = skipped
    todo = [n for n in names if n not in data["hosts"]]
    if todo:
        comp, _ = _competitors()
        from rankmap.mapper import spec as mspec
        alloc = simulated.allocate(p, pdir, ranks, out / "map")
        m_alloc = mspec.build(mspec.load(alloc.spec_path))
        W = symmetric_traffic(trace)
        for n in todo:
            t0 = time.monotonic()
            try:
                slot = np.asarray(comp.map_with(n, W, m_alloc, seed=0, imbalance=0.0), dtype=np.int64)
            except Exception as e:       # a competitor that fails on this input: say so, keep the others
                data["skipped"][n] = f"failed: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
                say(f"    competitor {n} failed on {trace.parent.parent.name} / {machine}: {data['skipped'][n]}")
                continue
            secs = time.monotonic() - t0
            if len(slot) != ranks or len(set(slot.tolist())) != ranks:
                data["skipped"][n] = "returned an invalid mapping (not one distinct slot per rank)"
                continue
            data["hosts"][n] = [m_alloc.hosts[m_alloc.slot_node[s]] for s in slot]
            data["map_seconds"][n] = round(secs, 3)
    out.mkdir(parents=True, exist_ok=True)
    write_cached(f, data)
    return data


def hosts_at(pl: dict, scale: float, predict_choice: bool = True) -> dict:
    """The placements replayed at this network speed: rankmap's mapped for it (predict_choice)."""
    hosts = dict(pl["hosts"])
    if predict_choice:
        hosts.update(pl.get("hosts_at", {}).get(f"x{scale:g}", {}))
    return hosts


def _replayed_hosts(out: Path, scale: float, name: str):
    from rankmap.slurm import smpi
    hf = out / f"x{scale:g}" / f"hostfile-{name}"
    return smpi.read_hostfile(hf) if hf.is_file() else None


def replay(trace: Path, ranks: int, work: Path, machine: str, scales, out: Path, say=print,
           wanted=COMPETITORS, predict_choice: bool = True, remap: bool = False, extra_nodes: float = 0) -> dict:
    """Results per scale: placement -> outcome (simulated.Outcome.as_dict)."""
    pl = placements(trace, ranks, work, machine, out, say, wanted, scales, predict_choice, remap, extra_nodes)
    res = {}
    for s in scales:
        f = out / f"x{s:g}.json"
        have = read_cached(f) if f.is_file() else {}
        keep = set(OURS) | set(competitor_names(wanted)[0]) | ({EXTRA} if extra_nodes else set())
        hosts = hosts_at(pl, s, predict_choice)
        stale = [n for n in ("rankmap-b", "rankmap-c", EXTRA) if n in have and n in hosts
                 and _replayed_hosts(out, s, n) != hosts[n]]
        todo = {n: h for n, h in hosts.items() if (n not in have or n in stale) and n in keep}
        if todo:
            p, pdir = platform(work, machine, s)
            t0 = time.monotonic()
            got = simulated.compare(trace, p, pdir, todo, out / f"x{s:g}")
            have.update({n: o.as_dict() for n, o in got.items()})
            write_cached(f, have)
            say(f"    {machine} x{s:g}: {len(todo)} placement(s) replayed in {time.monotonic() - t0:.0f} s", flush=True)
        res[s] = have
    return {"placements": pl, "scales": res}


def run(cases: list, work: Path, machines, scales, say=print, wanted=COMPETITORS, predict_choice: bool = True,
        remap: bool = False, extra_nodes: float = 0) -> int:
    if extra_nodes and not predict_choice:
        raise UserError("--extra-nodes: predict chooses the extra nodes; not with --no-predict-choice")
    failed = []
    for case in cases:
        trace = work / "traces" / case.name / "trace" / "replay.ti"     # capture.replayable
        if not trace.is_file():
            say(f"  {case.name}: no trace yet (run the trace phase)")
            failed.append(case.name)
            continue
        for m in machines:
            if case.ranks > capacity(m):
                continue
            say(f"  {case.name} on {m}", flush=True)
            try:
                replay(trace, case.ranks, work, m, scales, work / "replay" / case.name / m, say, wanted,
                       predict_choice, remap, extra_nodes)
            except UserError as e:      # a SimGrid replay crash: report it, go on with the other rows
                say(f"  {case.name} on {m}: FAILED: {str(e).splitlines()[0]}")
                failed.append(f"{case.name}/{m}")
    if failed:
        say(f"{len(failed)} row(s) not measured: {', '.join(failed)}")
    return 1 if failed else 0
