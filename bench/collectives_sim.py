#!/usr/bin/env python3
"""rankmap's collective kernels against the MPI library's algorithms on a simulated cluster.

SimGrid SMPI, an Angara-K1-like 3x3x4 torus of 12-core nodes (6 GB/s, 0.5 us per hop), 144
ranks, 4 per node, Slurm block placement, 0.5 us CPU overhead per message sent and received.
One harness binary (bench/coll_bench.c, OSU-style:
warm-up, common start, time = slowest rank) has the kernels linked in (LD_PRELOAD does not
work under SMPI); RANKMAP_COLL=off hands every call to SMPI's collectives, whose algorithms
are forced one by one with --cfg=smpi/<op>:<algorithm>. Local sums cost nothing here
(simulate-computation off, for both sides), which makes repetitions identical.

Printed per operation and size: the library's default, its best forced algorithm, each of
rankmap's kernels and rankmap's selection rule (RANKMAP_COLL=auto), as times and as
speed-ups over the best library algorithm; allreduce also as bus bandwidth 2(P-1)/P n / T.

    .venv/bin/python bench/collectives_sim.py [--ops allreduce,reduce,bcast] [--jobs 2] [--json F]
                                              [--reuse F]

--reuse F takes the timings of a previous --json F for every side but rankmap auto (which
depends on the built-in table), to re-check the selection rule after changing it.
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
from rankmap.slurm import smpi, tune_collectives  # noqa: E402

P, PER_NODE, GRID = 144, 4, "4x3x3x4"
# 144 ranks share one process: 16 MB buffers already take ~7 GB, 64 MB would not fit in 24 GB
SIZES = [8, 64, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20]
LIBRARY = {
    # left out: allreduce rab1 and reduce scatter_gather abort in SMPI 3.32 here, allreduce
    # smp_rsag returns wrong sums
    "allreduce": ["rdb", "lr", "rab_rdb", "ompi_ring_segmented", "mvapich2_rs"],
    "reduce": ["binomial", "ompi_chain", "ompi_pipeline", "ompi_binary", "rab"],
    "bcast": ["binomial_tree", "scatter_rdb_allgather", "scatter_LR_allgather", "ompi_pipeline",
              "ompi_split_bintree", "NTSL"],
}
KERNELS = {
    "allreduce": ["ring", "ring1d", "recdbl"],
    "reduce": ["kchain", "kchain:4", "kchain-adaptive", "chain", "binomial", "rsg"],
    "bcast": ["chain", "scatter-allgather"],
}


def run_side(op, p, pdir, hf, env, extra, sizes, overhead_us):
    try:
        return tune_collectives.time_smpi(op, sizes, p, pdir, hf, P, env, extra, overhead_us=overhead_us)
    except UserError as e:   # some of SMPI's algorithms abort or compute wrong sums here: leave them out, say so
        print(f"  left out: {op} {' '.join(extra) or env.get('RANKMAP_COLL')}: {str(e).splitlines()[0]}", flush=True)
        return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ops", default="allreduce,reduce,bcast")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--json")
    ap.add_argument("--overhead-us", type=float, default=tune_collectives.OVERHEAD_US,
                    help="CPU time per message sent and received (0: none).")
    ap.add_argument("--reuse", help="Timings of an earlier --json run (all sides but rankmap auto).")
    args = ap.parse_args()
    old = json.loads(Path(args.reuse).read_text()) if args.reuse else {}
    native.artifact("coll_bench", "smpi")   # fails early, with a clear line, when not built
    work = Path(tempfile.mkdtemp(prefix="rankmap-bench-coll-"))
    p = replace(plat.preset("angara-k1"))
    pdir = work / "platform"
    plat.write(p, pdir, force=True)
    p, pdir = plat.load(pdir)
    hf = smpi.write_hostfile([f"{p.prefix}{r // PER_NODE}" for r in range(P)], work / "hostfile")
    print(f"{plat.describe(p)}; {P} ranks, {PER_NODE} per node, block placement; grid {GRID}; "
          f"{args.overhead_us:g} us per message sent and received")
    base = {"RANKMAP_COLL_GRID": GRID}
    everything = {}
    pool = ThreadPoolExecutor(max_workers=max(1, args.jobs))
    for op in args.ops.split(","):
        sides = {"library default": (dict(base, RANKMAP_COLL="off"), [])}
        for a in LIBRARY[op]:
            sides[f"lib {a}"] = (dict(base, RANKMAP_COLL="off"), [f"--cfg=smpi/{op}:{a}"])
        for k in KERNELS[op]:
            sides[f"rankmap {k}"] = (dict(base, RANKMAP_COLL="force", **{f"RANKMAP_COLL_{op.upper()}": k}), [])
        sides["rankmap auto"] = (dict(base, RANKMAP_COLL="auto"), [])
        reused = {k: {int(b): t for b, t in v.items()} for k, v in old.get(op, {}).items() if k != "rankmap auto"}
        futs = {name: pool.submit(run_side, op, p, pdir, hf, env, extra, SIZES, args.overhead_us)
                for name, (env, extra) in sides.items() if name not in reused}
        res = dict(reused)
        res.update({name: r for name, r in ((n, f.result()) for n, f in futs.items()) if r is not None})
        everything[op] = res
        _table(op, res)
    pool.shutdown()
    if args.json:
        Path(args.json).write_text(json.dumps(everything, indent=1) + "\n")
        print(f"written {args.json}")


def _fmt(b):
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB" if b >= 1024 else f"{b} B"


def _table(op, res):
    libs = [k for k in res if k.startswith("lib") or k == "library default"]
    kern = [k for k in res if k.startswith("rankmap")]
    print(f"\n{op}: time in us; speed-up = best library algorithm's time / this one's")
    print(f"{'size':>7} {'lib default':>11} {'best lib':>10} {'(which)':>22} | " +
          " ".join(f"{k.replace('rankmap ', ''):>16}" for k in kern) + (" | busbw GB/s" if op == "allreduce" else ""))
    worst_auto = 0.0
    for b in SIZES:
        best_lib = min(libs, key=lambda k: res[k][b])
        best_all = min(res[k][b] for k in libs + kern if k != "rankmap auto")
        t_lib = res[best_lib][b]
        cells = " ".join(f"{res[k][b]:9.1f} {t_lib / res[k][b]:5.2f}x" for k in kern)
        which = "default" if best_lib == "library default" else best_lib[4:]
        line = f"{_fmt(b):>7} {res['library default'][b]:11.1f} {t_lib:10.1f} {which:>22} | {cells}"
        if op == "allreduce":
            t = res["rankmap auto"][b] * 1e-6
            line += f" | {2 * (P - 1) / P * b / t / 1e9:6.2f}"
        worst_auto = max(worst_auto, res["rankmap auto"][b] / best_all)
        print(line)
    print(f"{op}: the selection rule (auto) is at most {worst_auto:.3f}x the best of every library algorithm "
          f"and kernel over {_fmt(SIZES[0])}..{_fmt(SIZES[-1])} (target <= 1.05)")


if __name__ == "__main__":
    main()
