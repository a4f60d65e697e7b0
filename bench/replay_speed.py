"""predict's trace replays in C (csrc/fluid/replay.c: critpath.critical_latency, run_time,
run_time_fluid) against the Python loops they replaced (tests/replay_reference.py), side by
side in one process: for each SMPI trace captured by `bench/real_apps.py trace` (WORK/traces/
CASE/trace/replay.ti), each machine and network speed, under block order and a random
placement, with the cores' speed and without: the seconds each replay gives, the CPU seconds
each took, and whether the two are the same to the last bit ("same"; "too costly" where the
flow replay passes predict's work budget, which must happen in both). --no-reference times
the C replays alone (the Python in-turn replay of an 18.9-million-action trace takes about 30 s).

    .venv/bin/python bench/replay_speed.py --work WORK --cases npb-cg-A-16,lulesh-s12-27
    .venv/bin/python bench/replay_speed.py --work WORK --cases npb-cg-B-128 --machines fat-tree --scales 0.0625 \\
        --replays in-turn --placements block
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from rankmap.mapper import spec as mspec                                          # noqa: E402
from rankmap.mapper.critpath import (TooCostly, _encoded, alpha_of, critical_latency,  # noqa: E402
                                     read_schedule, run_time, run_time_fluid)
from rankmap.mapper.predict import FLUID_BUDGET, pair_model                        # noqa: E402
from rankmap.slurm import platform as plat                                         # noqa: E402

REPLAYS = ("critical", "in-turn", "fluid")


def timed(f, *args, **kw):
    t = time.process_time()
    try:
        v = f(*args, **kw)
    except TooCostly:
        v = "too costly"
    return v, time.process_time() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True, type=Path, help="bench/real_apps.py's WORK directory")
    ap.add_argument("--cases", required=True, help="comma-separated traced cases (WORK/traces/CASE)")
    ap.add_argument("--machines", default="angara-k1,desmos,fat-tree")
    ap.add_argument("--scales", default="1,0.0625")
    ap.add_argument("--replays", default=",".join(REPLAYS), help=f"any of {', '.join(REPLAYS)}")
    ap.add_argument("--placements", default="block,random")
    ap.add_argument("--no-reference", action="store_true", help="the C replays only")
    args = ap.parse_args()
    if not args.no_reference:
        from replay_reference import ref_critical_latency, ref_run_time, ref_run_time_fluid
    replays = args.replays.split(",")
    bad = [r for r in replays if r not in REPLAYS]
    if bad:
        ap.error(f"unknown replay(s) {', '.join(bad)}")
    print(f"{'case':16} {'machine':10} {'net':>6} {'placement':9} {'replay':8} {'speed':5} {'seconds':>22} "
          f"{'C CPU s':>8} {'Py CPU s':>8}  same")
    differ = 0
    for case in args.cases.split(","):
        trace = args.work / "traces" / case / "trace" / "replay.ti"
        if not trace.is_file():
            print(f"{case}: no trace at {trace}", file=sys.stderr)
            return 2
        t = time.process_time()
        sched = read_schedule(trace)
        if sched is None:
            print(f"{case}: the trace holds actions the replays do not model", file=sys.stderr)
            return 2
        read = time.process_time() - t
        t = time.process_time()
        _encoded(sched)                 # once per trace, for every C replay after (in the first's time otherwise)
        print(f"{case}: {sched.size} ranks, {sum(map(len, sched.ranks))} actions, read in {read:.1f} s of CPU, "
              f"encoded for C in {time.process_time() - t:.1f} s", flush=True)
        P = sched.size
        for mach in args.machines.split(","):
            for scale in (float(x) for x in args.scales.split(",")):
                p = replace(plat.preset(mach), network_scale=scale)
                m = mspec.build(plat.machine_spec(p))
                if m.nslots < P:
                    continue
                net = p.network()
                for where in args.placements.split(","):
                    slot = np.arange(P) if where == "block" else np.random.default_rng(1).permutation(m.nslots)[:P]
                    pair = pair_model(m, slot, net)
                    alpha = alpha_of(m, slot, net.link_lat, net.loop_lat)
                    for rp in replays:
                        for speed in ((None,) if rp == "critical" else (None, net.core_speed)):
                            if rp == "critical":
                                c, ref = (critical_latency, (sched, alpha)), (
                                    None if args.no_reference else
                                    (ref_critical_latency, (sched, lambda i, j: alpha(i, j)[0])))
                                kw = {}
                            elif rp == "in-turn":
                                c = (run_time, (sched, pair, speed))
                                ref = None if args.no_reference else (ref_run_time, (sched, pair, speed))
                                kw = {}
                            else:
                                c = (run_time_fluid, (sched, pair, speed))
                                ref = None if args.no_reference else (ref_run_time_fluid, (sched, pair, speed))
                                kw = {"budget": 4 * FLUID_BUDGET}
                            a, ta = timed(c[0], *c[1], **kw)
                            if ref is not None:
                                b, tb = timed(ref[0], *ref[1], **kw)
                                same = "same" if a == b else "DIFFER"
                                differ += a != b
                            else:
                                tb, same = float("nan"), "-"
                            print(f"{case:16} {mach:10} {'x%g' % scale:>6} {where:9} {rp:8} "
                                  f"{'yes' if speed else 'free':5} {a!r:>22} {ta:8.2f} {tb:8.2f}  {same}", flush=True)
    if differ:
        print(f"{differ} replay(s) differ from the Python reference", file=sys.stderr)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
