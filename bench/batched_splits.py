"""The hierarchical partitioning's small splits, one by one (METIS, repair, orientation in
numpy) and a level at a time in C (partition.BATCHED_SPLITS_ABOVE, refine.split_groups),
on the same instance in one process, one after the other: the whole `solve` (CPU s, cost)
and the partitioning alone (partition.hierarchical: CPU s, cost / block before the local
search). --metis: the small splits batched both times, the bigger splits METIS alone cuts
one by one, then a level at a time in C (METIS called from there, libmetis.recursive_entry). Instances: names from bench/instances.py (10^5-rank ones: `mapper_anchors.py
--list --sizes 100k --set all`), or random:N and stencil:N for bench/mapper_scaling.py's graphs.

    .venv/bin/python bench/batched_splits.py mesh/100k/torus/s1000 amr/100k/tree3/s1000
    .venv/bin/python bench/batched_splits.py --partition-only random:1000000
    .venv/bin/python bench/batched_splits.py --above 5000 social/10k/torus/s1000     # a lower threshold
    .venv/bin/python bench/batched_splits.py --metis random:1000000
    .venv/bin/python bench/batched_splits.py --metis --seeds 0,1,2,3 mix/100k/mesh2/s1000
    .venv/bin/python bench/batched_splits.py --kway amr/100k/switch4/s1000 amr/100k/hetero3/s1000

--kway: "without" keeps METIS's k-way split as a candidate on every split METIS alone cuts,
"with" is the rule now (partition.BATCHED_RB_PART: recursive bisection only into parts of up
to 64 ranks).
"""
import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import instances as I                                  # noqa: E402
import mapper_scaling as MS                            # noqa: E402
from rankmap.mapper import baselines, libmetis, partition, solve  # noqa: E402
from rankmap.mapper.graph import from_traffic          # noqa: E402
from rankmap.mapper.refine import Problem              # noqa: E402
from rankmap.profiler.traffic import Traffic           # noqa: E402

ON = partition.BATCHED_SPLITS_ABOVE


def load(name: str):
    """(W, machine) of an instance name or random:N / stencil:N."""
    if name.split(":")[0] in ("random", "stencil"):
        kind, p = name.split(":")
        p = int(p)
        W = MS.random_graph(p) if kind == "random" else MS.stencil(p)
        return W, MS.scaling_machine(p)[0]
    family, size = name.split("/")[:2]
    found = [i for i in I.instances(sizes=(size,), which="all", families=[family]) if i.name == name]
    if not found:
        sys.exit(f"no instance named {name} (bench/mapper_anchors.py --list --sizes {size} --set all)")
    return found[0].load()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("names", nargs="+")
    ap.add_argument("--partition-only", action="store_true", help="only partition.hierarchical, not the whole solve")
    ap.add_argument("--above", type=int, default=ON, help=f"batch above this many ranks when on (default {ON})")
    ap.add_argument("--metis", action="store_true",
                    help="compare the METIS splits one by one / in C (the small splits batched both times)")
    ap.add_argument("--kway", action="store_true",
                    help="compare METIS's k-way candidate kept on every split / recursive bisection only into small parts")
    ap.add_argument("--seeds", default="0", help="comma-separated seeds, one row each (default 0)")
    a = ap.parse_args()
    seeds = [int(x) for x in a.seeds.split(",")]
    entry, rb_part = libmetis.recursive_entry, partition.BATCHED_RB_PART
    if a.metis and not entry():
        sys.exit("--metis needs the system's 32-bit METIS (Debian: libmetis5; setup.sh installs it)")
    for name, seed in ((n, sd) for n in a.names for sd in seeds):
        W, m = load(name)
        t = Traffic(bytes=W, source="bench", format="synthetic")
        row = []
        for on in (False, True):
            if a.kway:
                partition.BATCHED_RB_PART = rb_part if on else 0
            elif a.metis:
                libmetis.recursive_entry = entry if on else (lambda: None)
            else:
                partition.BATCHED_SPLITS_ABOVE = a.above if on else 10 ** 12
            if a.partition_only:
                g = from_traffic(t)
                c0 = time.process_time()
                s = partition.hierarchical(g, m, m.tree(), seed)
                dt = time.process_time() - c0
                prob = Problem(g, m)
                row.append((dt, prob.cost(s) / prob.cost(baselines.block(W.shape[0], m))))
            else:
                c0 = time.process_time()
                r = solve.solve(t, m, seed=seed)
                row.append((time.process_time() - c0, r.cost))
        what = "cost/block" if a.partition_only else "cost with/without"
        value = f"{row[0][1]:.5f} -> {row[1][1]:.5f}" if a.partition_only else f"{row[1][1] / row[0][1]:.5f}"
        label = name if len(seeds) == 1 else f"{name} seed {seed}"
        print(f"{label:32s} CPU s without {row[0][0]:7.2f}  with {row[1][0]:7.2f}   {what} {value}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
