#!/usr/bin/env python3
"""`rankmap map --parallel` at 10^6-10^7 ranks: the whole command (read the traffic, the
PT-Scotch MPI job, the parts mapped onto the network, refinement, the checks, the metrics
of the mapping and of block/cyclic/random, the files), next to the sequential mapper
where it fits.

Traffic: a 3-D 7-point stencil on a near-cubic grid and a random graph of 8 partners per
rank (bench/mapper_scaling.py's two graphs). Machine: nodes of 2 packages x 16 cores on a
near-cubic 3-D torus just big enough (bench/mapper_scaling.py's machine). Each run is a
fresh `rankmap map` process; its wall time, CPU time and peak memory come from
/usr/bin/time, the engine's own line (processes, partition seconds) from report.json.

    .venv/bin/python bench/parallel_scale.py [--sizes 1000000] [--graphs stencil,random]
        [--procs 2] [--launcher mpirun|srun] [--sequential]

With --launcher srun, run it inside an allocation (salloc -N 4 -n 8 ... on the local
cluster): the engine is then a job step on the allocated nodes.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from mapper_scaling import CORES_PER_NODE, cube_dims, random_graph, stencil  # noqa: E402


def run(cmd: list[str], env: dict) -> dict:
    timed = ["/usr/bin/time", "-f", "TIME %e %U %S %M"] + cmd
    res = subprocess.run(timed, capture_output=True, text=True, env=env)
    m = re.search(r"TIME ([0-9.]+) ([0-9.]+) ([0-9.]+) ([0-9]+)", res.stderr)
    if res.returncode != 0 or not m:
        return {"error": (res.stderr.strip().splitlines() or ["?"])[-2:]}
    return {"wall_s": float(m.group(1)), "cpu_s": float(m.group(2)) + float(m.group(3)),
            "peak_mb": int(m.group(4)) / 1024}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000000")
    ap.add_argument("--graphs", default="stencil,random")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--launcher", default="mpirun", choices=["mpirun", "srun"])
    ap.add_argument("--sequential", action="store_true", help="also the sequential mapper (same machine)")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    import scipy.sparse as sp
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    rows = []
    print(f"{'graph':8} {'ranks':>8} {'nnz':>9} {'mode':14} | {'wall s':>7} {'CPU s':>7} {'peak MB':>8} | "
          f"{'engine s':>8} {'SUM_COM vs block':>16} {'chosen':>16}", flush=True)
    with tempfile.TemporaryDirectory(prefix="rankmap-pscale-") as d:
        d = Path(d)
        for n in (int(x) for x in args.sizes.split(",")):
            nodes = -(-n // CORES_PER_NODE)
            torus = "x".join(map(str, cube_dims(nodes)))
            for g in args.graphs.split(","):
                M = stencil(n) if g == "stencil" else random_graph(n)
                path = d / f"{g}-{n}.npz"
                sp.save_npz(path, M.tocsr())
                nnz = M.nnz
                del M
                modes = [f"parallel {args.procs}"] + (["sequential"] if args.sequential else [])
                for mode in modes:
                    out = d / f"map-{g}-{n}-{mode.split()[0]}"
                    cmd = [sys.executable, "-m", "rankmap.cli", "map", str(path), "--nodes", f"n[0-{nodes - 1}]",
                           "--node-topology", "pack:2 core:16", "--torus", torus, "--out", str(out), "--force"]
                    if mode.startswith("parallel"):
                        cmd += ["--parallel", str(args.procs), "--parallel-launcher", args.launcher]
                    r = run(cmd, env)
                    row = {"graph": g, "ranks": n, "nnz": nnz, "mode": mode, **r}
                    if "error" not in r:
                        rep = json.loads((out / "report.json").read_text())
                        m = rep["metrics"]
                        row["sum_com_vs_block"] = m["rankmap"]["sum_com"] / m["block"]["sum_com"]
                        row["chosen"] = rep["chosen"]
                        row["engine"] = (rep.get("parallel") or {}).get("engine", "")
                        row["steps"] = {k: v for k, v in (rep.get("parallel") or {}).items() if k.endswith("_s")}
                        eng = re.search(r"partition ([0-9.]+) s", row["engine"])
                        print(f"{g:8} {n:8d} {nnz:9d} {mode:14} | {r['wall_s']:7.1f} {r['cpu_s']:7.1f} "
                              f"{r['peak_mb']:8.0f} | {float(eng.group(1)) if eng else float('nan'):8.1f} "
                              f"{row['sum_com_vs_block']:16.3f} {row['chosen']:>16}", flush=True)
                        if row.get("steps"):
                            print("    steps: " + ", ".join(f"{k[:-2]} {v:.1f}" for k, v in row["steps"].items()),
                                  flush=True)
                    else:
                        print(f"{g:8} {n:8d} {nnz:9d} {mode:14} | failed: {r['error']}", flush=True)
                    rows.append(row)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
