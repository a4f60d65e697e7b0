#!/usr/bin/env python3
"""The process-mapping literature's standard benchmark, run live (issue 9, target 4).

Graphs (METIS). Tune set: 3elt, delaunay_n15, rgg_n_2_15_s0 (../shared/data/graphs), rgg_n_2_16_s0
(bench/data/graphs, gzipped) and ten generated ones of the same family (bench/data/graphs/generate.py:
Delaunay triangulations of 2^13, 2^14, 2^16 and 2^17 random points, random geometric graphs of 2^13,
2^14 and 2^17 points, graded 2-D meshes around a hole of 2^13-2^15 points), and three irregular
ones (bench/data/graphs: the airfoil1 mesh, the PGP web of trust, the hep-th collaboration network
of 1,332 components). Held out: 4elt, commanche_dual, delaunay_n16, and the irregular fe_4elt2,
wing, power (a power grid) and astro-ph (a collaboration network of 1,029 components)
(bench/data/graphs): the mapper is not tuned on them. See bench/data/graphs/PROVENANCE.md.
--graphs also takes METIS files of one's own (a path; gzipped too).
Machine: a hierarchy a1:a2:r = cores per socket : sockets per node : nodes (4:8:r and 4:16:r,
r = 1, 2, 4, 8, 16), distances D = 1:10:100 (same socket : same node : other node), 3 %
imbalance: every core (PE) takes at most L = floor((1 + 0.03) * ceil(n / k)) vertices (KaHIP's
and SharedMap's balance constraint, c(V_i) <= (1 + eps) ceil(c(V) / k)).
Objective J = sum over the edges, both directions, of weight x D(PE_u, PE_v).

rankmap gets the machine `nodes r x pack:a2 core:a1` with `--oversubscribe L` (each core holds up
to L vertices: the same imbalance) and level costs 90,9,1 (node, package, core), so that its
accumulated costs are exactly 100/10/1 and its cost is J / 2; when `solve()` has an `imbalance`
parameter it is passed 0.03 too. The competitors (bench/competitors.py) get the hierarchy
a1:a2:r with distances 1:10:100 and imbalance 0.03: SharedMap fast/eco/strong (serial), KaHIP
multisection (kaffpa per level, adaptive imbalance; KaHIP's own global_multisection binary is not
in PyPI kahip 3.25, this is the same algorithm driven from Python), Mt-KaHyPar's Steiner-tree
mapping (k <= 64 only) and per-level multisection, Scotch gmap on a tleaf (-b 0.03), TreeMatch,
naive contiguous (block). Each mapper's J is recomputed here from its PE per vertex.

Printed per graph and hierarchy: J and seconds of each mapper, J / best of the issue's anchors
(SharedMap strong, KaHIP multisection, Scotch), the best J recorded in anchor_J.csv (C++ builds
of KaHIP global_multisection, kaffpa --enable_mapping, ... on a machine like this one), the
largest part's imbalance, and whether rankmap is <= the best anchor and faster than SharedMap
strong.

    .venv/bin/python bench/mapper_standard.py                 # tune graphs, 4:8:2 and 4:16:4
    .venv/bin/python bench/mapper_standard.py --full          # tune graphs, r = 1, 2, 4, 8, 16
    .venv/bin/python bench/mapper_standard.py --set holdout --hier 4:8:4 --json out.json
    .venv/bin/python bench/mapper_standard.py --no-rankmap --json anchors.json   # the competitors once
    .venv/bin/python bench/mapper_standard.py --competitors-from anchors.json   # rankmap against them

(--competitors-from takes each graph's, hierarchy's and competitor's result from earlier --json
runs, comma-separated, recorded with the same library versions: their mappings are
deterministic per seed; anything not recorded there is run live. Their seconds are those of the
recorded run.)
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import competitors as C  # noqa: E402
import mapper_anchors as A  # noqa: E402
from rankmap.mapper import machine as M  # noqa: E402
from rankmap.profiler.errors import UserError  # noqa: E402

sys.path.insert(0, str(BENCH / "data" / "graphs"))
import generate as G  # noqa: E402

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "graphs"
HELD = BENCH / "data" / "graphs"
TUNE_GRAPHS = ("3elt", "delaunay_n15", "rgg_n_2_15_s0", "rgg_n_2_16_s0", "gen_mesh_n15_s1", "gen_delaunay_n16_s1",
               "gen_delaunay_n17_s1", "gen_rgg_n_2_17_s1", "gen_mesh_n13_s1", "gen_mesh_n14_s1",
               "gen_delaunay_n13_s1", "gen_delaunay_n14_s1", "gen_rgg_n_2_13_s1", "gen_rgg_n_2_14_s1",
               "airfoil1", "PGPgiantcompo", "hep-th")
# the last four: irregular graphs (a Walshaw mesh, a power grid, a collaboration network of
# 1,029 components), next to the tune set's airfoil1, PGPgiantcompo and hep-th
HOLDOUT_GRAPHS = ("4elt", "commanche_dual", "delaunay_n16", "fe_4elt2", "wing", "power", "astro-ph")
DIST = (1, 10, 100)
EPS = 0.03
ISSUE_ANCHORS = ("sharedmap-strong", "kahip-ms-strong", "kahip-ms-eco", "scotch")
DEFAULT_COMPETITORS = ("sharedmap-fast", "sharedmap-eco", "sharedmap-strong", "kahip-ms-eco", "kahip-ms-strong",
                       "mtkahypar-map", "mtkahypar-ms", "scotch", "treematch", "block")


def read_metis(path: Path) -> sp.csr_matrix:
    """A METIS graph (any fmt and ncon; gzipped or not) as a symmetric CSR of edge weights,
    read by rankmap's own reader (its checks: a short or asymmetric file is named, not padded)."""
    from rankmap.profiler.formats import read_traffic
    t = read_traffic(path, fmt="metis")
    W = (t.bytes + t.bytes.T).tocsr()          # (the reader gives half of each weight per direction)
    W.sort_indices()
    return W


def J(W: sp.csr_matrix, pe: np.ndarray, a1: int, a2: int, dist=DIST) -> int:
    """sum over ordered pairs (both directions) of W_uv x D(pe_u, pe_v); PE = core + a1 x
    (socket + a2 x node): same PE 0, same socket dist[0], same node dist[1], else dist[2]."""
    c = W.tocoo()
    pa, pb = pe[c.row], pe[c.col]
    d = np.where(pa == pb, 0, np.where(pa // a1 == pb // a1, dist[0],
                                       np.where(pa // (a1 * a2) == pb // (a1 * a2), dist[1], dist[2])))
    return int(round(float((c.data * d).sum())))


def machine_for(n: int, a1: int, a2: int, r: int, eps: float = EPS):
    k = a1 * a2 * r
    cap = int(math.floor((1 + eps) * math.ceil(n / k) + 1e-9))
    m = M.build([f"n{i:03d}" for i in range(r)], [f"pack:{a2} core:{a1}"], level_costs="90,9,1", oversubscribe=cap)
    return m, cap


def pe_of(machine, slot: np.ndarray, a1: int, a2: int) -> np.ndarray:
    return machine.slot_node[slot] * (a1 * a2) + machine.slot_core[slot]


def recorded_best() -> dict:
    out = {}
    p = SHARED / "anchor_J.csv"
    if p.exists():
        for row in csv.DictReader(open(p)):
            key = (row["graph"], row["hierarchy"])
            j = float(row["J"])
            if key not in out or j < out[key][0]:
                out[key] = (j, row["mapper"])
    return out


def graph_path(name: str) -> Path:
    if Path(name).is_file():        # a graph of one's own, by its path
        return Path(name)
    for d in (SHARED, HELD):
        for ext in (".graph", ".graph.gz"):
            if (d / f"{name}{ext}").exists():
                return d / f"{name}{ext}"
    sys.exit(f"--graphs: {name!r} is neither a METIS file nor a graph of the benchmark "
             f"({', '.join(TUNE_GRAPHS + HOLDOUT_GRAPHS)})")


def hierarchy(text: str) -> tuple:
    """a1:a2:r of --hier, three positive whole numbers (a traceback before)."""
    try:
        h = tuple(int(x) for x in text.split(":"))
    except ValueError:
        h = ()
    if len(h) != 3 or min(h) < 1:
        sys.exit(f"--hier {text!r}: expected a1:a2:r, three positive whole numbers (cores per socket : sockets per "
                 "node : nodes), e.g. 4:8:2")
    return h


def load_graph(name: str) -> sp.csr_matrix:
    """A graph of the benchmark by name: a file, or generated (bench/data/graphs/generate.py)."""
    if G.is_generated(name):
        return G.generate(name)
    path = graph_path(name)
    try:
        return read_metis(path)
    except UserError as e:
        sys.exit(f"--graphs {path}: not a METIS graph rankmap reads ({e})")


def recorded_runs(paths: str | None) -> dict:
    """(graph, hierarchy) -> {competitor: entry} from earlier --json runs (the later file wins)."""
    out = {}
    for p in (paths.split(",") if paths else []):
        old = C.recording(p, "rows")
        for r in old["rows"]:
            d = out.setdefault((r["graph"], r["hierarchy"]), {})
            d.update({k: v for k, v in r["mappers"].items() if k != "rankmap" and v.get("status") == "ok"})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--set", dest="which", default="tune", choices=("tune", "holdout", "all"))
    ap.add_argument("--graphs", default=None,
                    help="comma list of names or METIS files (default: those of the set)")
    ap.add_argument("--hier", default="4:8:2,4:16:4", help="comma list of a1:a2:r (default 4:8:2,4:16:4)")
    ap.add_argument("--full", action="store_true", help="the set's graphs on 4:8:r and 4:16:r for r = 1, 2, 4, 8, 16")
    ap.add_argument("--competitors", default=",".join(DEFAULT_COMPETITORS),
                    help=f"all | none | comma list of {', '.join(C.NAMES)}")
    ap.add_argument("--no-rankmap", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--eps", type=float, default=EPS)
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--competitors-from", default=None, metavar="JSON[,JSON...]",
                    help="reuse the competitors' results of earlier --json runs (same versions)")
    ap.add_argument("--json", default=None, help="write every row (after each row: an interrupted run keeps them)")
    ap.add_argument("--csv", default=None)
    ap.add_argument("--markdown", default=None, help="write the J table as Markdown (for docs/)")
    args = ap.parse_args(argv)
    graphs = list(TUNE_GRAPHS if args.which == "tune" else HOLDOUT_GRAPHS if args.which == "holdout"
                  else TUNE_GRAPHS + HOLDOUT_GRAPHS)
    hiers = [hierarchy(h) for h in args.hier.split(",")]
    if args.full:
        hiers = [(4, a2, r) for a2 in (8, 16) for r in (1, 2, 4, 8, 16)]
    if args.graphs:
        graphs = args.graphs.split(",")
    for g in graphs:        # all of them before the first runs (a missing one ended the run after the others)
        if not G.is_generated(g):
            graph_path(g)
    names = list(C.NAMES) if args.competitors == "all" else [] if args.competitors == "none" \
        else args.competitors.split(",")
    bad = [x for x in names if x not in C.NAMES]
    if bad:     # a row of "error" per graph and hierarchy before
        sys.exit(f"--competitors: unknown competitor {bad[0]!r}; choose from all, none, {', '.join(C.NAMES)}")
    if not (0 <= args.eps < 1):
        sys.exit(f"--eps {args.eps:g}: the imbalance is a fraction in [0, 1), e.g. 0.03")
    if not (args.timeout > 0 and math.isfinite(args.timeout)):
        sys.exit(f"--timeout {args.timeout:g}: must be a positive number of seconds")
    why = C.output_problem([("--json", args.json), ("--csv", args.csv), ("--markdown", args.markdown)])
    if why:
        sys.exit(why)
    rec_best = recorded_best()
    reuse = recorded_runs(args.competitors_from)
    print("versions:", ", ".join(f"{k} {v}" for k, v in C.versions().items()),
          f"| SharedMap threads 1, Mt-KaHyPar threads {C.MTKAHYPAR_THREADS}; eps {args.eps:g}, D 1:10:100", flush=True)
    worker = A.Worker()
    class _Args:   # what run_rankmap / the worker need
        timeout = args.timeout
    rows = []
    try:
        for g in graphs:
            W = load_graph(g)
            n = W.shape[0]
            held = g in HOLDOUT_GRAPHS
            for (a1, a2, r) in hiers:
                k = a1 * a2 * r
                m, cap = machine_for(n, a1, a2, r, args.eps)
                share = math.ceil(n / k)
                h = f"{a1}:{a2}:{r}"
                res = {"graph": g, "set": "holdout" if held else "tune" if g in TUNE_GRAPHS else "other", "hierarchy": h, "n": n, "edges": W.nnz // 2,
                       "k": k, "max_per_pe": cap, "mappers": {}}
                todo = ([] if args.no_rankmap else ["rankmap"]) + names
                for name in todo:
                    if name in reuse.get((g, h), {}):
                        e = dict(reuse[(g, h)][name], reused=True)
                        res["mappers"][name] = e
                        print(f"  {g} {h} {name}: J {e['J']} {e['seconds']:.2f} s (recorded)", flush=True)
                        continue
                    if name == "rankmap":
                        st, slot, secs, info = A.run_rankmap(W, m, args.seed, args.eps, args.timeout)
                        if st == "error":
                            info = {"why": slot}
                            slot = None
                        extra = {"imbalance_param": info.get("imbalance_param", False),
                                 "cpu_seconds": info.get("cpu_s")} if st == "ok" else {}
                    else:
                        st, slot, secs, info = worker.run(name, W, m, args.seed, args.eps, args.timeout)
                        extra = {"repaired": info.get("repaired", 0),
                                 "cpu_seconds": info.get("cpu_s")} if st == "ok" else {}
                    why = A.valid(slot, n, m) if st == "ok" else info.get("why", "")
                    if st == "ok" and why:
                        st = "invalid"
                    e = {"status": st, "seconds": secs, "why": why or "", **extra}
                    if st == "ok":
                        pe = pe_of(m, np.asarray(slot), a1, a2)
                        load = np.bincount(pe, minlength=k)
                        e.update(J=J(W, pe, a1, a2), imbalance=float(load.max() / share - 1.0),
                                 over=bool(load.max() > cap))
                    res["mappers"][name] = e
                    print(f"  {g} {h} {name}: " + (f"J {e['J']} imb {e['imbalance']:.3f} {secs:.2f} s"
                                                   if st == "ok" else f"{st} {e['why'][:100]}"), flush=True)
                anchors = {x: res["mappers"][x]["J"] for x in ISSUE_ANCHORS
                           if x in res["mappers"] and res["mappers"][x]["status"] == "ok"}
                allc = {x: v["J"] for x, v in res["mappers"].items() if x != "rankmap" and v["status"] == "ok"}
                if anchors:
                    res["best_anchor"] = min(anchors, key=anchors.get)
                    res["best_anchor_J"] = anchors[res["best_anchor"]]
                if allc:
                    res["best_competitor"] = min(allc, key=allc.get)
                    res["best_competitor_J"] = allc[res["best_competitor"]]
                rb = rec_best.get((g, h))
                if rb:
                    res["recorded_best_J"], res["recorded_best"] = rb
                rows.append(res)
                if args.json:
                    Path(args.json).write_text(json.dumps({"versions": C.versions(), "eps": args.eps, "rows": rows},
                                                          indent=1))
    finally:
        worker.close()
    report(rows, ["rankmap"] * (not args.no_rankmap) + names)
    if args.json:
        Path(args.json).write_text(json.dumps({"versions": C.versions(), "eps": args.eps, "rows": rows}, indent=1))
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows, ["rankmap"] * (not args.no_rankmap) + names))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["graph", "set", "hierarchy", "n", "k", "mapper", "status", "J", "seconds", "imbalance", "why"])
            for r in rows:
                for name, e in r["mappers"].items():
                    wr.writerow([r["graph"], r["set"], r["hierarchy"], r["n"], r["k"], name, e["status"], e.get("J", ""),
                                 f"{e['seconds']:.3f}", e.get("imbalance", ""), e["why"]])
    return 0


def markdown(rows, cols) -> str:
    short = dict(A.SHORT)
    out = ["| graph | hierarchy | " + " | ".join(short.get(c, c) for c in cols) + " | recorded best |",
           "|---|---|" + "---:|" * len(cols) + "---:|"]
    for r in rows:
        cells = []
        for c in cols:
            e = r["mappers"].get(c)
            cells.append("-" if e is None else e["status"] if e["status"] != "ok" else
                         f"{e['J']} ({e['seconds']:.1f} s)")
        rb = f"{r['recorded_best_J']:.0f} ({r['recorded_best']})" if "recorded_best_J" in r else "-"
        out.append(f"| {r['graph']}{' (held out)' if r['set'] == 'holdout' else ''} | {r['hierarchy']} | "
                   + " | ".join(cells) + f" | {rb} |")
    return "\n".join(out) + "\n"


def report(rows, cols):
    short = dict(A.SHORT)
    print("\nJ (D 1:10:100, both directions); in brackets: J / best of the issue's anchors "
          "(SharedMap strong, KaHIP multisection eco/strong, Scotch)")
    w = max(10, max((len(r["graph"]) for r in rows), default=10))
    print(f"{'graph':{w}} {'hier':>7} " + " ".join(f"{short.get(c, c)[:16]:>16}" for c in cols) +
          f" {'recorded best':>22}")
    for r in rows:
        best = r.get("best_anchor_J")
        cells = []
        for c in cols:
            e = r["mappers"].get(c)
            if e is None:
                cells.append(f"{'-':>16}")
            elif e["status"] != "ok":
                cells.append(f"{e['status']:>16}")
            else:
                rel = f" ({e['J'] / best:.3f})" if best else ""
                cells.append(f"{str(e['J']) + rel:>16}")
        rb = f"{r['recorded_best_J']:.0f} {r['recorded_best'][:12]}" if "recorded_best_J" in r else "-"
        print(f"{r['graph']:{w}} {r['hierarchy']:>7} " + " ".join(cells) + f" {rb:>22}")
    print("\nseconds, and the largest part's imbalance (max load / ceil(n/k) - 1; the bound is 0.03)")
    print(f"{'graph':{w}} {'hier':>7} " + " ".join(f"{short.get(c, c)[:16]:>16}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            e = r["mappers"].get(c)
            cells.append(f"{'-':>16}" if e is None or e["status"] != "ok" else
                         f"{e['seconds']:8.2f} {e['imbalance']:+.3f}{'!' if e.get('over') else ' '}")
        print(f"{r['graph']:{w}} {r['hierarchy']:>7} " + " ".join(cells))
    if any("rankmap" in r["mappers"] for r in rows):
        print("\ntargets: rankmap J <= best of (SharedMap strong, KaHIP multisection, Scotch) at the same imbalance, "
              "and faster than SharedMap strong (by CPU seconds where both were recorded, which other jobs on a "
              "shared machine do not inflate; by wall seconds otherwise, marked w)")
        print(f"{'graph':{w}} {'hier':>7} {'set':>8} {'rankmap/best':>12} {'best anchor':>16} {'<= best':>7} "
              f"{'rm s':>7} {'sm-strong s':>11} {'rm cpu':>7} {'sm cpu':>7} {'faster':>6} {'rm/recorded':>11}")
        ratios = []
        for r in rows:
            rm = r["mappers"].get("rankmap", {})
            sm = r["mappers"].get("sharedmap-strong", {})
            if rm.get("status") != "ok" or "best_anchor_J" not in r:
                print(f"{r['graph']:{w}} {r['hierarchy']:>7} {r['set']:>8} {'-':>12}")
                continue
            ratio = rm["J"] / r["best_anchor_J"]
            ratios.append(ratio)
            by_cpu = rm.get("cpu_seconds") is not None and sm.get("cpu_seconds") is not None
            faster = "-" if sm.get("status") != "ok" else \
                ("yes" if rm["cpu_seconds"] < sm["cpu_seconds"] else "NO") if by_cpu else \
                ("yes w" if rm["seconds"] < sm["seconds"] else "NO w")
            rec = f"{rm['J'] / r['recorded_best_J']:.3f}" if "recorded_best_J" in r else "-"
            print(f"{r['graph']:{w}} {r['hierarchy']:>7} {r['set']:>8} {ratio:12.4f} {short.get(r['best_anchor'], r['best_anchor']):>16} "
                  f"{'yes' if ratio <= 1 + 1e-12 else 'NO':>7} {rm['seconds']:7.2f} "
                  f"{sm.get('seconds', float('nan')):11.2f} {rm.get('cpu_seconds') or float('nan'):7.2f} "
                  f"{sm.get('cpu_seconds') or float('nan'):7.2f} {faster:>6} {rec:>11}")
        if ratios:
            a = np.array(ratios)
            print(f"geometric mean rankmap / best anchor {np.exp(np.log(a).mean()):.4f}, worst {a.max():.4f}, "
                  f"{int((a > 1 + 1e-12).sum())} of {len(a)} above")


if __name__ == "__main__":
    sys.exit(main())
