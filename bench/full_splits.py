"""Full top splits of big graphs (backends.FULL_SPLIT_MTKAHYPAR): the whole `solve` of each
instance without the rule (eco KaHIP asked for no imbalance, next to METIS) and with it
(KaHIP given backends.FULL_SLACK of room, Mt-KaHyPar from scratch, V-cycles from the lowest
cut), in one process, one right after the other: CPU s and the cost with / without. Instances:
names from bench/instances.py or random:N / stencil:N (bench/batched_splits.py's `load`).

    .venv/bin/python bench/full_splits.py --seeds 0,1,2 mesh/100k/torus/s1000 amr/100k/torus/s0
"""
import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from batched_splits import load                        # noqa: E402
from rankmap.mapper import backends, solve             # noqa: E402
from rankmap.profiler.traffic import Traffic           # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds, one row each (default 0)")
    a = ap.parse_args()
    if not backends.mtkahypar_available():
        sys.exit("needs Mt-KaHyPar (pip install mtkahypar; setup.sh installs it)")
    seeds = [int(x) for x in a.seeds.split(",")]
    rule = backends.full_split
    touched = []

    def counted(*args, **kw):            # did the rule apply to any split of this solve?
        hit = rule(*args, **kw)
        if hit:
            touched.append(1)
        return hit
    backends.full_split = counted
    ratios = []
    for name, seed in ((n, sd) for n in a.names for sd in seeds):
        W, m = load(name)
        t = Traffic(bytes=W, source="bench", format="synthetic")
        row = []
        for on in (False, True):
            backends.FULL_SPLIT_MTKAHYPAR = on
            touched.clear()
            c0 = time.process_time()
            r = solve.solve(t, m, seed=seed)
            row.append((time.process_time() - c0, r.cost))
        hit = bool(touched)
        ratio = row[1][1] / row[0][1]
        if hit:
            ratios.append(ratio)
        print(f"{name + ' seed ' + str(seed):38s} CPU s without {row[0][0]:7.2f}  with {row[1][0]:7.2f}   "
              f"cost with/without {ratio:.5f}{'' if hit else '  (no full top split: the rule does not apply)'}",
              flush=True)
    if ratios:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"rows the rule applies to: {len(ratios)}, cost with/without geometric mean {g:.4f}, "
              f"{sum(x > 1.005 for x in ratios)} dearer by > 0.5 %, {sum(x < 0.995 for x in ratios)} cheaper by > 0.5 %")
    return 0


if __name__ == "__main__":
    sys.exit(main())
