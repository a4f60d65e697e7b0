#!/usr/bin/env python3
"""Real applications end to end: NPB 3.4 MPI (BT, CG, FT, LU, MG, SP) and proxy applications
(LULESH 2, miniFE, CloverLeaf, HPCG, miniAMR) built from their public sources, run on
simulated clusters (SimGrid SMPI) through rankmap's smpi launcher, mapped, and compared by
trace replay under every placement and every competitor's mapping (issue 10); and the real
traffic graphs at 512-4,096 ranks in bench/data/apps (issue 9).

    .venv/bin/python bench/real_apps.py --sources DIR [--work DIR] PHASE [options]

The sources are never part of rankmap: download them into DIR (docs/real-apps.md says from
where; any layout, they are found by their files). Phases cache what they produce under
--work and skip what exists, so an interrupted run resumes where it stopped:

  sources   what was found under DIR: versions, commits
  build     compile the programs (--toolchain smpi for the simulated runs, mpi for real ones)
  graphs    512-4,096-rank traffic graphs -> bench/data/apps/*.mtx, index.json, PROVENANCE.md
  trace     16-256-rank traces with measured compute, for the replays
  replay    every placement and competitor on each machine and network speed
  table     the tables from the cached replays (--markdown for docs/real-apps.md)
  predict   rankmap predict's estimates recomputed for the cached replays
  floor     the least communication alone any placement can reach (all-to-all traffic)
  all       build, trace, replay, table

Run heavy phases one at a time under `nice -n 10`: every rank runs in one process."""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))      # the checkout's rankmap, not an installed copy

from rankmap.profiler.errors import UserError  # noqa: E402

from real_apps import cases as C  # noqa: E402
from real_apps import replay as R  # noqa: E402
from real_apps import sources  # noqa: E402

SET_HELP = ("Which traced cases: full (16-256 ranks, NPB classes B-C) or quick (16-64 ranks, NPB class A, small "
            "proxy inputs; docs/real-apps.md). Default: full.")
DEFAULT_WORK = Path(os.environ.get("RANKMAP_REAL_APPS_WORK", "real-apps-work"))


def _sources_dir(args) -> Path:
    if not args.sources:
        raise UserError("this phase needs --sources DIR (the downloaded applications; see docs/real-apps.md)")
    return Path(args.sources)


def cmd_sources(args) -> int:
    src = _sources_dir(args)
    found = sources.find(src)
    for key, app in sources.APPS.items():
        if key in found:
            d = sources.describe(key, found[key])
            mod = " (MODIFIED)" if d.get("modified") else ""
            print(f"{key:10} {app.title} {d.get('version', '?')}: {found[key]}  commit {d.get('commit', '-')}{mod}  "
                  f"digest {d['digest']}")
        else:
            print(f"{key:10} {app.title}: not found (get it from {app.repo})")
    return 0 if found else 1


def _set(args) -> str:
    return getattr(args, "set", None) or "full"


def _targets(cases: list) -> dict:
    want: dict = {}
    for c in cases:
        want.setdefault(c.app, set())
        if c.npb:
            want[c.app].add(c.npb)
    return want


def cmd_build(args) -> int:
    src = _sources_dir(args)
    cases = _cases(C.QUICK if _set(args) == "quick" else C.GRAPHS + C.TRACES, args)
    for app, targets in sorted(_targets(cases).items()):
        if args.apps and app not in args.apps.split(","):
            continue
        exes = sources.build(app, src, args.work, args.toolchain, sorted(targets))
        for name, exe in exes.items():
            print(f"{args.toolchain:5} {name:10} {exe}")
    return 0


def cmd_graphs(args) -> int:
    from real_apps import graphs
    cases = _cases(C.GRAPHS, args)
    if args.list:
        for c in cases:
            print(f"{c.name:28} {c.ranks:5}  {c.what}")
        return 0
    return graphs.run(cases, _sources_dir(args), args.work, args.timeout, args.keep_traces)


def cmd_trace(args) -> int:
    from real_apps import capture
    cases = _cases(C.SETS[_set(args)], args)
    if args.list:
        for c in cases:
            print(f"{c.name:28} {c.ranks:5}  {c.what}")
        return 0
    src = _sources_dir(args)
    platform = capture.capture_platform(args.work)
    failed = []
    for case in cases:
        exe = sources.build(case.app, src, args.work, "smpi", [case.npb] if case.npb else ())[case.target]
        try:
            capture.run_case(case, exe, args.work / "traces" / case.name, platform, "measured", args.timeout)
            capture.replayable(args.work / "traces" / case.name / "trace" / "trace.ti")
        except UserError as e:
            print(f"  {case.name}: FAILED: {str(e).splitlines()[0]}")
            failed.append(case.name)
    return 1 if failed else 0


def _machines_scales(args):
    machines = args.machines.split(",") if args.machines else list(R.MACHINES)
    bad = [m for m in machines if m not in R.MACHINES]
    if bad:
        raise UserError(f"unknown machine {bad[0]!r}; choose among {', '.join(R.MACHINES)}")
    scales = [_scale(x) for x in args.scales.split(",")] if args.scales else list(R.SCALES)
    return machines, scales


def _scale(text: str) -> float:
    """One --scales value: a positive network speed factor (a ValueError traceback for 'abc'
    before, and 0, -1 or nan were taken: rows of no file, nothing said)."""
    try:
        v = float(text)
    except ValueError:
        v = float("nan")
    if not (v > 0 and math.isfinite(v)):
        raise UserError(f"--scales: {text.strip()!r} is not a network speed; positive factors of the nominal speed, "
                        "e.g. 1,0.25")
    return v


def _wanted(args):
    if not args.competitors:
        return R.COMPETITORS
    if args.competitors == "all":
        return "all"
    names = tuple(args.competitors.split(","))
    import competitors      # bench/ is on sys.path; a misspelt name was left out of the rows without a word
    bad = [n for n in names if n not in competitors.NAMES]
    if bad:
        raise UserError(f"--competitors: unknown competitor {bad[0]!r}; choose from all, "
                        f"{', '.join(competitors.NAMES)}")
    return names


def _cases(cases: list, args) -> list:
    """The cases --only selects: a fragment that matches none ran nothing and said nothing."""
    chosen = C.select(cases, args.only)
    if not chosen:
        raise UserError(f"--only {args.only}: no case of this set matches; --list lists them")
    return chosen


def _work(args) -> Path:
    """--work of a phase that reads what earlier phases wrote: a missing or mistyped directory
    printed empty tables ("no replayed rows yet") or "predict recomputed" for every case."""
    if not (args.work / "replay").is_dir():
        what = ("does not exist" if not args.work.exists() else "is not a directory" if not args.work.is_dir()
                else "holds no replay/ directory")
        raise UserError(f"--work {args.work}: {what}; give the directory the replay phase wrote into "
                        f"(default {DEFAULT_WORK}, or $RANKMAP_REAL_APPS_WORK)")
    return args.work


def cmd_replay(args) -> int:
    extra = getattr(args, "extra_nodes", None)
    if extra is not None and not 0 < extra <= 1000:
        raise UserError(f"--extra-nodes {extra:g}: a percentage in (0, 1000]")
    machines, scales = _machines_scales(args)
    return R.run(_cases(C.SETS[_set(args)], args), args.work, machines, scales, wanted=_wanted(args),
                 predict_choice=not getattr(args, "no_predict_choice", False), remap=getattr(args, "remap", False),
                 extra_nodes=getattr(args, "extra_nodes", None) or 0)


def cmd_table(args) -> int:
    from real_apps import table
    machines, scales = _machines_scales(args)
    if args.json:
        _json_out(args.json)
    rows = table.load(_work(args), _cases(C.SETS[_set(args)], args), machines, scales, _wanted(args))
    print(table.text(rows, args.markdown))
    print()
    print(table.competitors_text(rows, args.markdown))
    print()
    for line in table.targets(rows):
        print(("- " if args.markdown else "") + line)
    if getattr(args, "curve", False):
        print()
        print(table.curve_text(rows, args.markdown))
    if any(table.EXTRA in r["t"] for r in rows):
        print()
        print(table.extra_text(rows, args.markdown))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


def _json_out(path: str) -> None:
    """table --json FILE checked before the tables are built (a traceback after them before)."""
    import competitors
    why = competitors.output_problem([("--json", path)])
    if why:
        raise UserError(why)


def cmd_predict(args) -> int:
    from real_apps import predicted
    machines, scales = _machines_scales(args)
    n = predicted.refresh(_work(args), _cases(C.SETS[_set(args)], args), machines, scales,
                          run=not getattr(args, "no_run", False))
    print(f"{n} placement(s): rankmap predict recomputed")
    return 0


def cmd_floor(args) -> int:
    from real_apps import floor
    machines, scales = _machines_scales(args)
    rows = []
    _work(args)
    for case in _cases(C.SETS[_set(args)], args):
        for m in machines:
            for s in scales:
                if (args.work / "replay" / case.name / m / f"x{s:g}.json").is_file():
                    rows.append(floor.row(args.work, case.name, m, s, args.limit, args.replay))
                    print(floor.lines(rows[-1:])[0], flush=True)
    print()
    print("\n".join(floor.lines(rows, args.markdown)))
    return 0


def cmd_all(args) -> int:
    for f in (cmd_build, cmd_trace, cmd_replay, cmd_table):
        if f is cmd_table and not (args.work / "replay").is_dir():
            break               # nothing replayed (the replay phase said why): no tables, no error about --work
        rc = f(args)
        if rc and f is cmd_build:
            return rc
    return 0


def main(argv=None) -> int:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--sources", default=argparse.SUPPRESS, help="Directory holding the downloaded applications.")
    common.add_argument("--work", type=Path, default=argparse.SUPPRESS,
                        help="Builds, traces, mappings and results (default: $RANKMAP_REAL_APPS_WORK or "
                             "./real-apps-work).")
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 parents=[common])
    sub = ap.add_subparsers(dest="phase", required=True)
    _add = sub.add_parser

    def add_parser(name, **kw):        # --sources/--work before or after the phase
        return _add(name, parents=[common], **kw)
    sub.add_parser = add_parser
    sub.add_parser("sources", help="List the applications found under --sources.")
    b = sub.add_parser("build", help="Compile the programs.")
    b.add_argument("--toolchain", choices=sorted(sources.TOOLCHAINS), default="smpi")
    b.add_argument("--apps", help="Comma-separated application keys (npb, lulesh, minife, cloverleaf, hpcg, miniamr).")
    b.add_argument("--only", help="Only what these cases need (comma-separated name fragments).")
    b.add_argument("--set", choices=sorted(C.SETS), help=SET_HELP)
    g = sub.add_parser("graphs", help="The 512-4,096-rank traffic graphs (bench/data/apps).")
    g.add_argument("--only", help="Comma-separated case name fragments, e.g. lulesh,npb-lu.")
    g.add_argument("--list", action="store_true", help="List the cases and stop.")
    g.add_argument("--timeout", type=float, default=3600, help="Seconds per capture.")
    g.add_argument("--keep-traces", action="store_true", help="Keep the SMPI traces (they can be GBs).")
    t = sub.add_parser("trace", help="16-256-rank traces with measured compute (for the replays).")
    t.add_argument("--only", help="Comma-separated case name fragments.")
    t.add_argument("--list", action="store_true", help="List the cases and stop.")
    t.add_argument("--set", choices=sorted(C.SETS), default="full", help=SET_HELP)
    t.add_argument("--timeout", type=float, default=3600, help="Seconds per capture.")
    for name, hlp in (("replay", "Every placement and competitor, every machine and network speed."),
                      ("table", "The tables from the cached replays."),
                      ("predict", "Recompute rankmap predict's estimates for the cached replays (no replay)."),
                      ("floor", "The least communication alone any placement on block's number of nodes can reach, "
                                "for all-to-all traffic (predict's bounds; no replay)."),
                      ("all", "build, trace, replay, table.")):
        r = sub.add_parser(name, help=hlp)
        r.add_argument("--only", help="Comma-separated case name fragments.")
        r.add_argument("--set", choices=sorted(C.SETS), default="full", help=SET_HELP)
        r.add_argument("--machines", help="Comma-separated: angara-k1, desmos, fat-tree (default: all three).")
        r.add_argument("--scales", help="Network speeds relative to nominal, e.g. 1,0.25 "
                                        "(default: 1,0.25,0.0625,0.015625).")
        r.add_argument("--competitors", help="Comma-separated names from bench/competitors.py, or all (default: the "
                                             "strongest configuration of each: " + ",".join(R.COMPETITORS) + ").")
        if name in ("replay", "all"):
            r.add_argument("--no-predict-choice", action="store_true",
                           help="Map rankmap-b/-c once, without the network's speeds (rankmap's cost alone chooses "
                                "among its candidate mappings; by default predict's estimate on each speed does).")
            r.add_argument("--remap", action="store_true",
                           help="Map rankmap-b/-c at these speeds again (after a change of the final choice or of "
                                "predict); a placement whose hostfile changed is replayed again, the others not.")
            r.add_argument("--extra-nodes", type=float, metavar="PCT",
                           help="Also rankmap-c+: rankmap-c allowed PCT %% more nodes than the fewest, each partly "
                                "filled (`rankmap map --extra-nodes PCT`), mapped at each speed with predict.")
        if name == "predict":
            r.add_argument("--no-run", action="store_true",
                           help="Only the estimate of communication alone, not the run's time (faster).")
        if name == "floor":
            r.add_argument("--limit", type=int, default=200_000_000,
                           help="Search every set of nodes and count of ranks per node up to this many placements "
                                "(a few microseconds each); beyond, only the injection floor.")
            r.add_argument("--replay", action="store_true",
                           help="Also replay the floor's placement (SimGrid; into WORK/replay/CASE/MACHINE/floor/).")
            r.add_argument("--markdown", action="store_true", help="A markdown table.")
        if name in ("table", "all"):
            r.add_argument("--markdown", action="store_true", help="Markdown tables (docs/real-apps.md).")
            r.add_argument("--json", help="Write every row to this file.")
            r.add_argument("--curve", action="store_true",
                           help="Also the gain against the network's speed: per case and machine, rankmap-b's time "
                                "and communication over block's and the best competitor's at each of --scales.")
        if name == "all":
            r.add_argument("--toolchain", default="smpi", help=argparse.SUPPRESS)
            r.add_argument("--apps", help=argparse.SUPPRESS)
            r.add_argument("--list", action="store_true", help=argparse.SUPPRESS)
            r.add_argument("--timeout", type=float, default=3600, help="Seconds per capture.")
    args = ap.parse_args(argv)
    args.sources = getattr(args, "sources", None)
    args.work = Path(getattr(args, "work", DEFAULT_WORK)).resolve()
    try:
        return {"sources": cmd_sources, "build": cmd_build, "graphs": cmd_graphs, "trace": cmd_trace,
                "replay": cmd_replay, "table": cmd_table, "predict": cmd_predict, "floor": cmd_floor,
                "all": cmd_all}[args.phase](args)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
