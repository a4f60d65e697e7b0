#!/usr/bin/env python3
"""Profiler overhead per intercepted point-to-point call (target: <= 20 ns added).

Builds bench/profiler_overhead.c for each MPI, runs it on 1 rank with the profiler
preloaded, and prints the added nanoseconds per Isend (median of interleaved batches),
the noise floor of the method (uncounted vs uncounted) and the base cost of the call.

    .venv/bin/python bench/profiler_overhead.py [--batches 300] [--iters 2000]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rankmap.profiler import native  # noqa: E402

HERE = Path(__file__).parent
TARGET_NS = 20.0
MPIS = {"openmpi": ("mpicc.openmpi", ["mpirun.openmpi", "-np", "1"]),
        "mpich": ("mpicc.mpich", ["mpiexec.mpich", "-n", "1"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", type=int, default=300)
    ap.add_argument("--iters", type=int, default=2000)
    ap.add_argument("--mpi", choices=list(MPIS), action="append")
    args = ap.parse_args()
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for mpi in args.mpi or list(MPIS):
            cc, run = MPIS[mpi]
            exe = Path(tmp) / f"overhead-{mpi}"
            subprocess.run([cc, "-O2", "-o", str(exe), str(HERE / "profiler_overhead.c")], check=True)
            lib = native.artifact("profiler", mpi)
            penv = dict(env, RANKMAP_PROFILE_DIR=str(Path(tmp) / f"prof-{mpi}"), RANKMAP_PROFILE_RUN_ID="bench")
            launch = run + (["-x", f"LD_PRELOAD={lib}"] if mpi == "openmpi" else ["-genv", "LD_PRELOAD", str(lib)])
            out = subprocess.run(launch + [str(exe), str(args.batches), str(args.iters)], env=penv,
                                 capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                name, added, control, base = line.rsplit(" ", 3)
                rows.append((mpi, name, float(added), float(control), float(base)))
    print(f"{'MPI':8} {'communicator':22} {'added ns/call':>14} {'noise ns':>9} {'base ns':>8} {'ratio':>7}  target <= {TARGET_NS:.0f} ns")
    ok = True
    for mpi, name, added, control, base in rows:
        ok &= added <= TARGET_NS
        print(f"{mpi:8} {name:22} {added:14.2f} {control:9.2f} {base:8.1f} {1 + added / base:7.3f}  "
              f"{'ok' if added <= TARGET_NS else 'OVER'}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
