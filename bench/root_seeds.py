"""The root split's strong KaHIP seeds for units of work (backends.ROOT_SEEDS): the standard
benchmark's rows (bench/mapper_standard.py: graph, hierarchy a1:a2:r, 3 % imbalance, J) mapped
with one seed and with ROOT_SEEDS, in one process, one right after the other: J, CPU s, and J
over the best recorded anchor (SharedMap strong, KaHIP multisection strong, Scotch, from
bench/data/graphs/standard_anchors*.json; "-" where a row has no recording). The rule touches
root splits into at most backends.ROOT_SEEDS_MAX_BLOCKS parts (r = 2, 4); other rows map the
same both times. --seeds-off / --seeds-on compare other counts (e.g. 2 and 3).

    .venv/bin/python bench/root_seeds.py --graphs 3elt,gen_mesh_n15_s1 --hier 4:8:2,4:16:4
    .venv/bin/python bench/root_seeds.py --graphs gen_rgg_n_2_16_s2 --hier 4:8:2,4:16:4
"""
import argparse
import glob
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

import mapper_standard as MS                         # noqa: E402
from rankmap.mapper import backends, solve           # noqa: E402
from rankmap.profiler.traffic import Traffic         # noqa: E402

ANCHORS = ("sharedmap-strong", "kahip-ms-strong", "scotch")


def recorded() -> tuple[dict, dict]:
    """(best anchor J, SharedMap strong's seconds) per (graph, hierarchy), from every recording."""
    best, sm = {}, {}
    for f in sorted(glob.glob(str(ROOT / "bench" / "data" / "graphs" / "standard_anchors*.json"))):
        for r in json.loads(Path(f).read_text())["rows"]:
            key = (r["graph"], r["hierarchy"])
            js = [v["J"] for k, v in r["mappers"].items() if k in ANCHORS and v.get("status") == "ok"]
            if js:
                best[key] = min(js + ([best[key]] if key in best else []))
            s = r["mappers"].get("sharedmap-strong")
            if s and s.get("status") == "ok":
                sm[key] = s["seconds"]
    return best, sm


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--graphs", required=True, help="comma list of names (bench/mapper_standard.py) or METIS files")
    ap.add_argument("--hier", default="4:8:2,4:16:4", help="comma list of a1:a2:r (default 4:8:2,4:16:4)")
    ap.add_argument("--seeds-off", type=int, default=1)
    ap.add_argument("--seeds-on", type=int, default=backends.ROOT_SEEDS)
    a = ap.parse_args()
    try:
        hiers = [tuple(int(x) for x in h.split(":")) for h in a.hier.split(",")]
    except ValueError:
        ap.error(f"--hier {a.hier!r}: a comma list of a1:a2:r, e.g. 4:8:2")
    if any(len(h) != 3 or min(h) < 1 for h in hiers) or min(a.seeds_off, a.seeds_on) < 1:
        ap.error("--hier takes a1:a2:r of positive integers, --seeds-off/--seeds-on at least 1")
    graphs = {}
    for g in a.graphs.split(","):
        try:
            graphs[g] = MS.load_graph(g)
        except (FileNotFoundError, ValueError) as e:
            ap.error(f"graph {g!r}: {'not found' if isinstance(e, FileNotFoundError) else e} "
                     "(names: bench/mapper_standard.py's sets, or a METIS file)")
    best, sm = recorded()
    rows = []
    print(f"{'graph':22s} {'hier':7s} {'J ' + str(a.seeds_off) + ' seed(s)':>14s} {'J ' + str(a.seeds_on):>10s} "
          f"{'ratio':>7s} {'CPU s':>13s} {'/best':>13s} {'SharedMap s':>11s}")
    for g, W in graphs.items():
        for a1, a2, r in hiers:
            h = f"{a1}:{a2}:{r}"
            m, _ = MS.machine_for(W.shape[0], a1, a2, r, MS.EPS)
            t = Traffic(bytes=(W * 0.5).tocsr(), source="bench", format="synthetic")
            out = []
            for seeds in (a.seeds_off, a.seeds_on):
                backends.ROOT_SEEDS = seeds
                c0 = time.process_time()
                res = solve.solve(t, m, seed=0)
                cpu = time.process_time() - c0
                out.append((MS.J(W, MS.pe_of(m, np.asarray(res.slot_of_rank), a1, a2), a1, a2), cpu))
            b = best.get((g, h))
            rel = f"{out[0][0] / b:.4f} {out[1][0] / b:.4f}" if b else "-"
            rows.append((out[0][0], out[1][0], b))
            print(f"{g:22s} {h:7s} {out[0][0]:14d} {out[1][0]:10d} {out[1][0] / out[0][0]:7.4f} "
                  f"{out[0][1]:6.1f} {out[1][1]:6.1f} {rel:>13s} {sm.get((g, h), float('nan')):11.1f}", flush=True)
    ratios = [on / off for off, on, _ in rows]
    print(f"J {a.seeds_on} / {a.seeds_off} seed(s): geometric mean {math.exp(sum(map(math.log, ratios)) / len(ratios)):.4f} "
          f"over {len(rows)} rows, {sum(x < 1 for x in ratios)} lower, {sum(x > 1 for x in ratios)} higher")
    rec = [(off / b, on / b) for off, on, b in rows if b]
    if rec:
        gm = [math.exp(sum(math.log(x[i]) for x in rec) / len(rec)) for i in (0, 1)]
        print(f"over the best anchor ({len(rec)} rows recorded): geometric mean {gm[0]:.4f} -> {gm[1]:.4f}, "
              f"above {sum(x[0] > 1 for x in rec)} -> {sum(x[1] > 1 for x in rec)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
