"""Two builds of the mapper's C library (csrc/refine: the local search and the batched
splits) side by side: the whole `solve` on bench/mapper_scaling.py's graphs and machine, in
one process, the libraries alternating run by run (this VM's speed drifts by a third from
hour to hour: only runs interleaved like this compare). Prints every run's CPU seconds and
each library's cost / block. Build the old library from another commit with:

    git worktree add /tmp/old OLD_COMMIT
    gcc -O3 -fPIC -shared -o /tmp/old.so /tmp/old/csrc/refine/refine.c /tmp/old/csrc/refine/smallsplit.c \
        /tmp/old/csrc/refine/pairmetrics.c -lm      # (pairmetrics.c: from RM_API 4)
    .venv/bin/python bench/refine_lib_ab.py --libs /tmp/old.so,installed --sizes 100000 --reps 4

`installed` is the library this checkout's install uses. Both must have this checkout's
interface (mapper/refine.py checks it). Other traffic: --graphs also takes the families of
bench/instances.py (stencil7, stencil27, mesh, amr, a2a, mix, social), generated for the
scaling machine of each size with --seed (default 1000, a held-out seed), and --instances
names instances of bench/instances.py (`--list` of mapper_anchors.py), each on its own machine:

    .venv/bin/python bench/refine_lib_ab.py --libs /tmp/old.so,installed --sizes 1000000 --graphs stencil27,amr --reps 1
    .venv/bin/python bench/refine_lib_ab.py --libs /tmp/old.so,installed --reps 1 \
        --instances stencil7/100k/tree3/s1000,mesh/100k/numa/s1000
"""
from __future__ import annotations

import argparse
import ctypes
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import instances as INST                         # noqa: E402
import mapper_scaling as MS                      # noqa: E402
from rankmap.mapper import refine, solve         # noqa: E402
from rankmap.profiler import native              # noqa: E402
from rankmap.profiler.errors import UserError    # noqa: E402
from rankmap.profiler.traffic import Traffic     # noqa: E402


def load(spec: str):
    """A configured library object (mapper/refine.py's _lib() for that file)."""
    path = str(native.artifact("refine")) if spec == "installed" else spec
    if not Path(path).is_file():
        raise UserError(f"{path}: no such library")
    old = native.artifact
    refine._lib.cache_clear()
    native.artifact = lambda kind, *a, **k: path if kind == "refine" else old(kind, *a, **k)
    try:
        return refine._lib()
    except OSError as e:
        raise UserError(f"{path}: not a loadable library ({e})") from None
    finally:
        native.artifact = old
        refine._lib.cache_clear()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--libs", required=True, help="comma list of library paths or `installed`")
    ap.add_argument("--sizes", default="100000")
    ap.add_argument("--graphs", default="random,stencil")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1000, help="seed of bench/instances.py's families (--graphs)")
    ap.add_argument("--instances", default="", help="comma list of bench/instances.py instance names")
    a = ap.parse_args()
    try:
        specs = a.libs.split(",")
        libs = [load(s) for s in specs]
        sizes = [int(x) for x in a.sizes.split(",")]
        if min(sizes) < 1 or a.reps < 1:
            raise ValueError("--sizes and --reps take positive integers")
    except ValueError:
        print(f"refine_lib_ab: --sizes takes a comma list of positive rank counts and --reps a positive "
              f"integer, not {a.sizes!r} and {a.reps}", file=sys.stderr)
        return 2
    except UserError as e:
        print(f"refine_lib_ab: {e}", file=sys.stderr)
        return 2
    kinds = [k for k in a.graphs.split(",") if k] if not a.instances else []
    bad = [k for k in kinds if k not in ("random", "stencil") and k not in INST.GENERATORS]
    if bad:
        print(f"refine_lib_ab: unknown graph(s) {', '.join(bad)}: random, stencil or one of "
              f"{', '.join(INST.GENERATORS)}", file=sys.stderr)
        return 2
    cases = []                                   # (label, ranks, traffic matrix, machine)
    for kind in kinds:
        for p in sizes:
            m, _ = MS.scaling_machine(p)
            if kind in ("random", "stencil"):
                M = MS.stencil(p) if kind == "stencil" else MS.random_graph(p)
            else:
                M = INST.GENERATORS[kind](m.nslots, a.seed)[0]
            cases.append((kind, p, M, m))
    if a.instances:
        want = a.instances.split(",")
        found = {i.name: i for i in INST.instances(sizes=tuple(INST.SIZES), which="all",
                                                   seeds=list(INST.TUNE_SEEDS + INST.HOLDOUT_SEEDS))
                 if i.name in want}
        missing = [w for w in want if w not in found]
        if missing:
            print(f"refine_lib_ab: no instance {', '.join(missing)} (see mapper_anchors.py --list)", file=sys.stderr)
            return 2
        for w in want:
            M, m = found[w].load()
            cases.append((w, M.shape[0], M, m))
    print(f"{'graph':8s} {'ranks':>8s}  library  CPU s per run  cost/block")
    for kind, p, M, m in cases:
        t = Traffic(bytes=M, source=kind, format="synthetic")
        runs, cost = [[] for _ in libs], [None] * len(libs)
        for _ in range(a.reps):
            for i, lib in enumerate(libs):
                refine._lib = lambda _l=lib: _l
                c0 = time.process_time()
                out = solve.solve(t, m, seed=0)
                runs[i].append(time.process_time() - c0)
                cost[i] = out.cost / out.defaults["block"]
        for i, s in enumerate(specs):
            print(f"{kind:8s} {p:8d}  {Path(s).name:>8s}  {' '.join(f'{x:.2f}' for x in runs[i])}  {cost[i]:.5f}",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
