#!/usr/bin/env python3
"""Placements compared on simulated clusters (SimGrid SMPI), and the network model checked.

For each workload x cluster x process count: one time-independent trace is recorded (the
workloads' compute is explicit flops, so the trace does not depend on where it was
recorded), rankmap maps it onto the Slurm block allocation (rankmap-b) and onto the
whole cluster (rankmap-c), knowing the row's network speeds (its final choice by predict's
replay of the trace, as `rankmap run --launcher smpi` maps), and the trace is replayed under Slurm block, cyclic, random,
rankmap-b and rankmap-c, on the nominal network (x1) and on one four times slower (x0.25:
bandwidths / 4, latencies x 4). Printed per row: simulated time of block, every
placement's time and communication time as a ratio to block's, and `rankmap predict`'s
estimate of the communication time against SMPI's (communication time = simulated time
minus the same trace's time on a network that costs nothing).

    .venv/bin/python bench/mapping_sim.py [--quick] [--clusters angara-k1,desmos] [--jobs 2] [--json FILE]

Workloads (bench/workloads, sizes of NPB class A where they have one):
  lu      lu_wave -N 64 (NPB LU's 2-D wavefront), P = 24, 48, 120
  sp      sp_multi -N 64 (NPB SP's multi-partition), P = 16, 36, 81
  halo    stencil3d -n 24 -c 1 -r 5 (3-D halo exchange, 7-point), P = 27, 64
  spmv-a  spmv -v allgather -n 262144 (all-gather SpMV of study 5), P = 32, 64
  spmv-t  spmv -v alltoall -n 262144 (all-to-all SpMV of study 5), P = 32, 64
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rankmap.slurm import platform as plat  # noqa: E402
from rankmap.profiler import native  # noqa: E402
from rankmap.profiler.errors import UserError  # noqa: E402
from rankmap.slurm import simulated, smpi  # noqa: E402

WORKLOADS = {
    "lu": ("lu_wave", ["-N", "64", "-i", "5", "-r", "5"], [24, 48, 120]),
    "sp": ("sp_multi", ["-N", "64", "-i", "5", "-r", "5"], [16, 36, 81]),
    "halo": ("stencil3d", ["-n", "24", "-i", "20", "-r", "5", "-c", "1"], [27, 64]),
    "spmv-a": ("spmv", ["-v", "allgather", "-n", "262144", "-i", "10"], [32, 64]),
    "spmv-t": ("spmv", ["-v", "alltoall", "-n", "262144", "-i", "10"], [32, 64]),
}
QUICK = {"lu": [24, 48], "sp": [16, 36], "halo": [27], "spmv-a": [32], "spmv-t": [32]}
SCALES = (1.0, 0.25)
TOLERANCE = 0.001


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="Fewer process counts (a few minutes).")
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--clusters", default="angara-k1,desmos")
    ap.add_argument("--jobs", type=int, default=2, help="Simulations run at once.")
    ap.add_argument("--work", help="Keep traces and mappings here (default: a temporary directory).")
    ap.add_argument("--json", help="Write every number to this file.")
    args = ap.parse_args()
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="rankmap-bench-sim-"))
    work.mkdir(parents=True, exist_ok=True)
    clusters = args.clusters.split(",")
    platforms = {}
    for c in clusters:
        for s in SCALES:
            p = replace(plat.preset(c), network_scale=s)
            d = work / f"{c}-x{s:g}"
            if not (d / "machine.json").exists():
                plat.write(p, d, force=True)
            platforms[(c, s)] = plat.load(d)
    rows, failures = [], []
    print(f"{'workload':8} {'cluster':9} {'P':>4} {'net':>5} {'block s':>10} {'cyc':>6} {'rand':>6} {'rm-b':>6} "
          f"{'rm-c':>6} | {'comm%':>6} {'c:cyc':>6} {'c:rand':>6} {'c:rm-b':>6} {'c:rm-c':>6} | {'pred/smpi':>9}")
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    for w in args.workloads.split(","):
        exe_name, wargs, sizes = WORKLOADS[w]
        exe = str(native.artifact("workloads", "smpi", name=exe_name))
        for P in (QUICK[w] if args.quick else sizes):
            trace = work / f"trace-{w}-{P}" / "trace.ti"
            if not trace.exists():
                p0, d0 = platforms[(clusters[0], 1.0)]
                hf = smpi.write_hostfile(plat.block_allocation(p0, P), work / f"hostfile-capture-{w}-{P}")
                smpi.run([exe] + wargs, p0, d0, hf, P, trace=trace, compute="explicit")
            for c in clusters:
                p1, d1 = platforms[(c, 1.0)]
                if sum(p1.node_cores(i) for i in range(p1.nodes)) < P:
                    continue
                # rankmap maps knowing each network speed (as `rankmap run --launcher smpi` does)
                hosts = {s: simulated.placements(trace, *platforms[(c, s)], P, work / f"map-{w}-{P}-{c}-x{s:g}",
                                                 network=platforms[(c, s)][0].network()) for s in SCALES}
                futs = {s: pool.submit(simulated.compare, trace, *platforms[(c, s)], hosts[s],
                                       work / f"replay-{w}-{P}-{c}-x{s:g}") for s in SCALES}
                for s in SCALES:
                    try:
                        res = futs[s].result()
                    except UserError as e:   # a SimGrid replay crash: say so, keep the other rows
                        first = str(e).splitlines()
                        print(f"{w:8} {c:9} {P:4d} {'x' + format(s, 'g'):>5} FAILED: {first[0]} {first[-1][-90:]}",
                              flush=True)
                        failures.append((w, c, P, s))
                        continue
                    rows.append(_row(w, c, P, s, res))
    pool.shutdown()
    _summary(rows)
    if failures:
        print(f"{len(failures)} row(s) not measured: SimGrid's replay crashed "
              f"({', '.join(f'{w} {c} P={P} x{s:g}' for w, c, P, s in failures)})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
        print(f"written {args.json}")


def _row(w, c, P, s, res) -> dict:
    b = res["block"]
    out = {"workload": w, "cluster": c, "ranks": P, "network_scale": s,
           "placements": {k: v.as_dict() for k, v in res.items()}}
    t = {k: v.seconds / b.seconds for k, v in res.items()}
    cm = {k: (v.comm_seconds / b.comm_seconds if b.comm_seconds > 0 else float("nan")) for k, v in res.items()}
    dev = [v.extra["predicted_comm_seconds"] / v.extra["comm_alone_seconds"] for v in res.values()]
    out["predict_ratio"] = {k: v.extra["predicted_comm_seconds"] / v.extra["comm_alone_seconds"]
                            for k, v in res.items()}
    print(f"{w:8} {c:9} {P:4d} {'x' + format(s, 'g'):>5} {b.seconds:10.5g} {t['cyclic']:6.3f} {t['random']:6.3f} "
          f"{t['rankmap-b']:6.3f} {t['rankmap-c']:6.3f} | {b.comm_seconds / b.seconds:6.1%} {cm['cyclic']:6.3f} "
          f"{cm['random']:6.3f} {cm['rankmap-b']:6.3f} {cm['rankmap-c']:6.3f} | "
          f"{min(dev):.2f}-{max(dev):.2f}", flush=True)
    return out


def _summary(rows):
    # differences below 0.1 % are the simulation's message-ordering effects, not placement quality
    never_slower = all(min(r["placements"]["rankmap-b"]["simulated_seconds"],
                           r["placements"]["rankmap-c"]["simulated_seconds"])
                       <= r["placements"]["block"]["simulated_seconds"] * (1 + TOLERANCE) for r in rows)
    worst_b = max(r["placements"]["rankmap-b"]["simulated_seconds"] / r["placements"]["block"]["simulated_seconds"]
                  for r in rows)
    worst_c = max(r["placements"]["rankmap-c"]["simulated_seconds"] / r["placements"]["block"]["simulated_seconds"]
                  for r in rows)
    devs = [abs(x - 1) for r in rows for x in r["predict_ratio"].values()]
    print()
    print(f"rankmap (best of b, c) never slower than block (beyond {TOLERANCE:.1%}): {'yes' if never_slower else 'NO'}; "
          f"worst ratio to block: rankmap-b {worst_b:.4f}, rankmap-c {worst_c:.4f}")
    if devs:
        devs.sort()
        print(f"predict vs SMPI communication time over {len(devs)} runs: mean deviation {sum(devs) / len(devs):.1%}, "
              f"median {devs[len(devs) // 2]:.1%}, max {devs[-1]:.1%}")


if __name__ == "__main__":
    main()
