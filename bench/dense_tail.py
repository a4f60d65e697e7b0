"""Dense traffic with a light tail: a 1k-rank instance of bench/instances.py plus an
all-pairs random tail carrying SHARE of its bytes, mapped by rankmap (CPU s, cost, and
whether the partitioners saw the graph without its tail: mapper/graph.py for_partitioning).

    .venv/bin/python bench/dense_tail.py 0.0005 stencil7/1k/tree2/s1000 amr/1k/switch4/s1000
"""
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import numpy as np                                     # noqa: E402
import scipy.sparse as sp                              # noqa: E402

import instances as I                                  # noqa: E402
from rankmap.mapper import solve as S                  # noqa: E402
from rankmap.profiler.traffic import Traffic           # noqa: E402


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    share = float(argv[0])
    for name in argv[1:]:
        found = [i for i in I.instances(sizes=("1k",), which="all", families=[name.split("/")[0]]) if i.name == name]
        if not found:
            print(f"no 1k instance named {name}", file=sys.stderr)
            return 2
        W, m = found[0].load()
        n = W.shape[0]
        T = np.random.default_rng(7).random((n, n))
        T = T + T.T
        np.fill_diagonal(T, 0)
        T *= share * W.sum() / T.sum()
        t = Traffic(bytes=((W + sp.csr_matrix(T)) * 0.5).tocsr(), source="bench", format="synthetic")
        c0 = time.process_time()
        r = S.solve(t, m, seed=0)
        seen = "without its tail" if any("partitioners saw" in x for x in r.notes) else "whole"
        print(f"{name} +{share:g}: CPU {time.process_time() - c0:.2f} s, cost {r.cost:.6g} ({r.chosen}), "
              f"partitioned {seen}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
