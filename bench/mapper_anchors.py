#!/usr/bin/env python3
"""rankmap against the published mappers, side by side, live, on the same inputs (issue 9).

For each instance (bench/instances.py: synthetic families on trees, heterogeneous nodes and
tori, the real 64-rank matrices, the real app graphs of bench/data/apps) rankmap's
`solve(traffic, machine, seed)` and every available competitor (bench/competitors.py:
SharedMap, KaHIP and Mt-KaHyPar multisection, Mt-KaHyPar's Steiner-tree mapping, Scotch,
TreeMatch, block) map the same W onto the same machine; all are scored by rankmap's own cost
function (TreeMatch SUM_COM, accumulated level costs; per hop on a torus).

Printed: per instance the cost of each mapper divided by the best anchor's (1.000 = best
anchor; rankmap's column is the ratio the issue's target is about), the best anchor's cost,
and times; then per family the geometric mean of rankmap / best anchor and the number of
instances where rankmap is above it, and the timing targets (1k ranks < 1 s, 10^4 < 3 s,
10^5 < 20 s, memory O(nnz): rankmap runs in a fresh process per instance, its peak RSS is
reported). Each competitor runs in a worker process (a crash or a timeout is a row, not the
end of the run); one job at a time (this machine has 2 cores: run under `nice -n 10`).

    .venv/bin/python bench/mapper_anchors.py                   # tune set, 1k ranks, first seed, minutes
    .venv/bin/python bench/mapper_anchors.py --full            # every family but fresh, size, seed, both sets
    .venv/bin/python bench/mapper_anchors.py --set holdout --families stencil7,mix --sizes 1k,10k
    .venv/bin/python bench/mapper_anchors.py --families apps64 --json out.json --csv out.csv
    .venv/bin/python bench/mapper_anchors.py --set holdout --families fresh --json fresh.json   # 48 fixed, ~30 min
    .venv/bin/python bench/mapper_anchors.py --set holdout --families fresh2 --json fresh2.json  # 42 more, ~20 min
    .venv/bin/python bench/mapper_anchors.py --set holdout --families fresh3 --json fresh3.json  # 36 more, 512-4,096 ranks
    .venv/bin/python bench/mapper_anchors.py --list            # the instances, nothing run
    .venv/bin/python bench/mapper_anchors.py --competitors-from out.json --json new.json   # rankmap again
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import multiprocessing as mp
import os
import re
import sys
import time
import traceback
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import competitors as C  # noqa: E402
import instances as I  # noqa: E402

SHORT = {"rankmap": "rankmap", "sharedmap-fast": "sm-fast", "sharedmap-eco": "sm-eco", "sharedmap-strong": "sm-strong",
         "kahip-ms-fast": "kh-fast", "kahip-ms-eco": "kh-eco", "kahip-ms-strong": "kh-strong",
         "mtkahypar-ms": "mt-ms", "mtkahypar-map": "mt-map", "mtkahypar-map-q": "mt-map-q", "scotch": "scotch",
         "treematch": "treematch", "block": "block"}


def _rm_time(m: dict) -> float:
    """rankmap's time against the target: its CPU time where recorded (it runs on one core)."""
    return m.get("cpu_seconds") or m["seconds"]


def time_target(n: int) -> float:
    """The issue's targets: 1k ranks < 1 s, 10^4 < 3 s, 10^5 < 20 s (interpolated in between)."""
    if n <= 2000:
        return 1.0
    if n <= 20000:
        return 3.0
    if n <= 200000:
        return 20.0
    return 300.0


# ----------------------------------------------------------------------------- worker processes

def _cpu() -> float:
    """CPU seconds of this process and of its children waited for: solve runs some library
    calls in forked children under a time limit (backends.forked_call) and some starts in
    fresh interpreters (backends.fresh_call)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _hwm_kb() -> float:
    """This process's peak resident set (VmHWM, kB). Not ru_maxrss: on Linux that keeps the
    peak of the forked parent's image across exec, so a spawned child would report the
    benchmark's own size."""
    try:
        for line in open("/proc/self/status"):
            if line.startswith("VmHWM:"):
                return float(line.split()[1])
    except OSError:
        pass
    import resource
    return float(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _rankmap_child(conn, W, machine, seed, imbalance, time_limit=None):
    """Fresh process: rankmap's solve; returns slot, seconds, peak RSS."""
    try:
        from rankmap.mapper import solve as S
        from rankmap.profiler.traffic import Traffic
        import inspect
        base = _hwm_kb()
        t = Traffic(bytes=(W * 0.5).tocsr(), source="bench", format="synthetic")
        kw = {}
        if imbalance > 0 and "imbalance" in inspect.signature(S.solve).parameters:
            kw["imbalance"] = imbalance
        t0, c0 = time.perf_counter(), _cpu()
        r = S.solve(t, machine, seed=seed, time_limit=time_limit, **kw)
        secs, cpu = time.perf_counter() - t0, _cpu() - c0
        peak = _hwm_kb()
        conn.send(("ok", np.asarray(r.slot_of_rank, dtype=np.int64), secs,
                   {"peak_mb": peak / 1024.0, "grew_mb": (peak - base) / 1024.0, "chosen": r.chosen, "cpu_s": cpu,
                    "notes": list(r.notes), "imbalance_param": bool(kw)}))
    except BaseException as e:   # noqa: BLE001
        conn.send(("error", f"{type(e).__name__}: {e}", 0.0, {"trace": traceback.format_exc()}))
    conn.close()


def _cpu_with_children() -> float:
    """CPU seconds of this process and of its finished children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _competitor_loop(conn):
    """Persistent worker: (name, W, machine, seed, imbalance) -> (status, slot, seconds, info)."""
    while True:
        try:
            job = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        name, W, machine, seed, imbalance = job
        try:
            t0, c0 = time.perf_counter(), _cpu_with_children()
            slot, info = C.map_with_info(name, W, machine, seed=seed, imbalance=imbalance)
            # CPU (this process and the programs it ran, e.g. scotch_gmap): other jobs on a
            # shared machine inflate the wall time, not this
            secs = time.perf_counter() - t0
            if "wall_s" in info:     # mapped in a fresh interpreter (competitors._fresh): its own time there
                secs = info["wall_s"]
            else:
                info = dict(info, cpu_s=_cpu_with_children() - c0)
            conn.send(("ok", slot, secs, info))
        except C.Unavailable as e:
            conn.send(("n/a", None, 0.0, {"why": str(e)}))
        except BaseException as e:   # noqa: BLE001
            conn.send(("error", None, 0.0, {"why": f"{type(e).__name__}: {e}", "trace": traceback.format_exc()}))


class Worker:
    def __init__(self):
        self.ctx = mp.get_context("spawn")
        self.proc = None

    def _start(self):
        a, b = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_competitor_loop, args=(b,), daemon=True)
        self.proc.start()
        b.close()
        self.conn = a

    def run(self, name, W, machine, seed, imbalance, timeout):
        if self.proc is None or not self.proc.is_alive():
            self._start()
        self.conn.send((name, W, machine, seed, imbalance))
        if not self.conn.poll(timeout):
            self.kill()
            return "timeout", None, timeout, {"why": f"no answer within {timeout:g} s (killed)"}
        try:
            return self.conn.recv()
        except EOFError:
            code = self.proc.exitcode if self.proc else None
            self.kill()
            return "crash", None, 0.0, {"why": f"worker died (exit code {code})"}

    def kill(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.join(5)
        self.proc = None

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (OSError, BrokenPipeError):
                pass
            if self.proc.is_alive():
                self.proc.kill()
        self.proc = None


def run_rankmap(W, machine, seed, imbalance, timeout, time_limit=None):
    ctx = mp.get_context("spawn")
    a, b = ctx.Pipe()
    p = ctx.Process(target=_rankmap_child, args=(b, W, machine, seed, imbalance, time_limit), daemon=True)
    p.start()
    b.close()
    try:
        if not a.poll(timeout):
            p.kill()
            return "timeout", None, timeout, {"why": f"no answer within {timeout:g} s (killed)"}
        try:
            out = a.recv()
        except EOFError:
            p.join(5)
            return "crash", None, 0.0, {"why": f"rankmap's process died (exit code {p.exitcode})"}
        return out
    finally:
        p.join(10)
        if p.is_alive():
            p.kill()


# ----------------------------------------------------------------------------- one instance

def valid(slot, n, machine) -> str | None:
    if slot is None:
        return "no mapping"
    slot = np.asarray(slot)
    if len(slot) != n:
        return f"{len(slot)} slots for {n} ranks"
    if slot.min() < 0 or slot.max() >= machine.nslots:
        return "slot out of range"
    if len(np.unique(slot)) != n:
        return "a slot used twice"
    return None


def run_instance(inst, names, worker, args) -> dict:
    t0 = time.perf_counter()
    W, machine = inst.load()
    W = C._clean(W)
    gen = time.perf_counter() - t0
    n = W.shape[0]
    prob = C.problem(W, machine)
    rec = {"instance": inst.name, "set": inst.set, "family": inst.family, "size": inst.size, "shape": inst.shape,
           "seed": inst.seed, "n": n, "nnz": int(W.nnz), "slots": machine.nslots, "traffic": inst.traffic_note,
           "machine": inst.machine_note, "generate_s": round(gen, 3), "mappers": {}}
    if not args.no_rankmap:
        st, slot, secs, info = run_rankmap(W, machine, args.rankmap_seed, 0.0, args.timeout, args.rankmap_time_limit)
        if st == "error":                     # the child sends its message where the slots would be
            why, slot = str(slot), None
        else:
            why = valid(slot, n, machine) if st == "ok" else info.get("why", "")
        if st == "ok" and why:
            st = "invalid"
        m = {"status": st, "seconds": secs, "cost": prob.cost(slot) if st == "ok" else None, "why": why or "",
             "target_s": time_target(n)}
        if st == "ok":
            m.update(peak_mb=round(info["peak_mb"], 1), bytes_per_nnz=round(max(0.0, info["grew_mb"]) * 2 ** 20 / max(1, W.nnz), 1),
                     chosen=info.get("chosen"), cpu_seconds=info.get("cpu_s"))
        rec["mappers"]["rankmap"] = m
        if args.verbose:
            print(f"    rankmap: {st} {m['seconds']:.2f} s {m['why'][:100]}", flush=True)
    reused = getattr(args, "reuse", {}).get(inst.name, {})
    for name in names:
        if name in reused:                    # --competitors-from: the recorded run of this instance
            rec["mappers"][name] = dict(reused[name], reused=True)
            continue
        st, slot, secs, info = worker.run(name, W, machine, args.competitor_seed, 0.0, args.timeout)
        why = info.get("why", "") if st != "ok" else valid(slot, n, machine)
        if st == "ok" and why:
            st = "invalid"
        m = {"status": st, "seconds": secs, "cost": prob.cost(slot) if st == "ok" else None, "why": why or ""}
        if st == "ok":
            m.update(repaired=info.get("repaired", 0), received=info.get("received", ""))
        rec["mappers"][name] = m
        if args.verbose:
            print(f"    {name}: {st} {secs:.2f} s {m['why'][:100]}", flush=True)
    anchors = {k: v["cost"] for k, v in rec["mappers"].items() if k != "rankmap" and v["status"] == "ok"}
    if anchors:
        best = min(anchors, key=anchors.get)
        rec["best_anchor"], rec["best_cost"] = best, anchors[best]
        rm = rec["mappers"].get("rankmap", {})
        if rm.get("status") == "ok" and rec["best_cost"] > 0:
            rec["ratio"] = rm["cost"] / rec["best_cost"]
        elif rm.get("status") == "ok":
            rec["ratio"] = 1.0 if rm["cost"] == 0 else math.inf
    inst.drop()
    return rec


# ----------------------------------------------------------------------------- printing

def fmt_cell(m, best) -> str:
    if m is None:
        return "-"
    if m["status"] != "ok":
        return {"n/a": "n/a", "timeout": "t/o", "crash": "crash", "error": "err", "invalid": "inval"}.get(m["status"], "?")
    if not best:
        return "0" if m["cost"] == 0 else "inf"
    return f"{m['cost'] / best:.3f}"


def print_tables(recs, names, out=sys.stdout):
    cols = (["rankmap"] if any("rankmap" in r["mappers"] for r in recs) else []) + list(names)
    w0 = max([8] + [len(r["instance"]) for r in recs])
    hdr = f"{'instance':{w0}} {'n':>6} " + " ".join(f"{SHORT.get(c, c)[:9]:>9}" for c in cols) + \
        f" {'best anchor':>11} {'best cost':>10}"
    print("\ncost / best anchor's cost (1.000 = best anchor; rankmap < 1 beats every anchor)", file=out)
    print(hdr, file=out)
    notes = {}
    for r in recs:
        cells = []
        for c in cols:
            m = r["mappers"].get(c)
            cell = fmt_cell(m, r.get("best_cost"))
            if m is not None and m["status"] != "ok":
                key = (c, m["status"], m["why"][:160])
                notes.setdefault(key, []).append(r["instance"])
            cells.append(f"{cell:>9}")
        print(f"{r['instance']:{w0}} {r['n']:>6} " + " ".join(cells) +
              f" {SHORT.get(r.get('best_anchor', '-'), r.get('best_anchor', '-')):>11} {r.get('best_cost', float('nan')):10.4g}",
              file=out)
    print("\nseconds (wall; rankmap: its solve() in a fresh process; the target, 1k < 1 s, 10^4 < 3 s, 10^5 < 20 s,\n"
          "is checked on its CPU time, which other jobs on a shared machine do not inflate: column 'cpu')", file=out)
    print(f"{'instance':{w0}} {'n':>6} " + " ".join(f"{SHORT.get(c, c)[:9]:>9}" for c in cols) +
          f" {'cpu':>6} {'target':>6} {'time ok':>7} {'peak MB':>8} {'B/nnz':>6}", file=out)
    for r in recs:
        cells = []
        for c in cols:
            m = r["mappers"].get(c)
            cells.append(f"{(m['seconds'] if m and m['status'] in ('ok', 'timeout') else float('nan')):9.2f}")
        rm = r["mappers"].get("rankmap", {})
        ok = "-" if rm.get("status") != "ok" else ("yes" if _rm_time(rm) <= rm["target_s"] else "NO")
        print(f"{r['instance']:{w0}} {r['n']:>6} " + " ".join(cells) +
              f" {rm.get('cpu_seconds') or float('nan'):6.2f} {rm.get('target_s', float('nan')):6.0f} {ok:>7} {rm.get('peak_mb', float('nan')):8.0f}"
              f" {rm.get('bytes_per_nnz', float('nan')):6.0f}", file=out)
    if notes:
        print("\nwhy a cell is not a number:", file=out)
        for (c, st, why), where in notes.items():
            more = f" (+{len(where) - 3} more)" if len(where) > 3 else ""
            print(f"  {c} {st}: {why} -- {', '.join(where[:3])}{more}", file=out)


def summary(recs, out=sys.stdout) -> dict:
    fams = {}
    for r in recs:
        if "ratio" in r:
            fams.setdefault((r["set"], r["family"]), []).append(r)
    print("\nper family: geometric mean of rankmap / best anchor, instances above the best anchor, time targets", file=out)
    print(f"{'set':8} {'family':10} {'inst':>4} {'geomean':>8} {'worst':>7} {'above':>5} {'time ok':>8}", file=out)
    res = {}
    allr = []
    for (st, fam), rs in sorted(fams.items()):
        ratios = np.array([r["ratio"] for r in rs])
        allr += ratios.tolist()
        gm = float(np.exp(np.mean(np.log(np.maximum(ratios, 1e-300)))))
        above = int((ratios > 1 + 1e-9).sum())
        tok = sum(1 for r in rs if _rm_time(r["mappers"]["rankmap"]) <= r["mappers"]["rankmap"]["target_s"])
        res[f"{st}/{fam}"] = {"instances": len(rs), "geomean": gm, "worst": float(ratios.max()), "above": above,
                              "time_ok": tok}
        print(f"{st:8} {fam:10} {len(rs):4d} {gm:8.4f} {ratios.max():7.4f} {above:5d} {tok:>4d}/{len(rs):<3d}", file=out)
    if allr:
        a = np.array(allr)
        gm = float(np.exp(np.mean(np.log(np.maximum(a, 1e-300)))))
        print(f"{'all':8} {'':10} {len(a):4d} {gm:8.4f} {a.max():7.4f} {int((a > 1 + 1e-9).sum()):5d}", file=out)
        res["all"] = {"instances": len(a), "geomean": gm, "worst": float(a.max()), "above": int((a > 1 + 1e-9).sum())}
    return res


def write_json(path, names, args, recs, summ):
    tmp = Path(str(path) + ".tmp")
    tmp.write_text(json.dumps({"versions": C.versions(), "competitors": names, "args": vars(args), "records": recs,
                               "summary": summ}, indent=1, default=float))
    os.replace(tmp, path)


def markdown(recs, names, summ) -> str:
    """The cost table (cost / best anchor) and the times, as Markdown."""
    cols = (["rankmap"] if any("rankmap" in r["mappers"] for r in recs) else []) + list(names)
    # rankmap's time column is its CPU time (the targets are on one core), the table below wall time
    out = ["| instance | ranks | " + " | ".join(SHORT.get(c, c) for c in cols) + " | best anchor | rankmap CPU s |",
           "|---|---:|" + "---:|" * len(cols) + "---|---:|"]
    for r in recs:
        cells = [fmt_cell(r["mappers"].get(c), r.get("best_cost")) for c in cols]
        rm = r["mappers"].get("rankmap", {})
        t = f"{_rm_time(rm):.2f}" if rm.get("status") == "ok" else "-"
        out.append(f"| {r['instance']} | {r['n']} | " + " | ".join(cells) +
                   f" | {SHORT.get(r.get('best_anchor', '-'), r.get('best_anchor', '-'))} | {t} |")
    out += ["", "Seconds per mapper (wall):", "",
            "| instance | " + " | ".join(SHORT.get(c, c) for c in cols) + " |", "|---|" + "---:|" * len(cols)]
    for r in recs:
        cells = []
        for c in cols:
            m = r["mappers"].get(c)
            cells.append(f"{m['seconds']:.2f}" if m and m["status"] == "ok" else (m["status"] if m else "-"))
        out.append(f"| {r['instance']} | " + " | ".join(cells) + " |")
    if summ:
        out += ["", "| set / family | instances | geomean rankmap / best anchor | worst | above |", "|---|---:|---:|---:|---:|"]
        for k, v in summ.items():
            out.append(f"| {k} | {v['instances']} | {v['geomean']:.4f} | {v['worst']:.4f} | {v['above']} |")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- main

def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--families", default=None, help=f"comma list of {', '.join(I.FAMILIES)} (default: all but "
                    f"{', '.join(I.NAMED_ONLY_FAMILIES)}, which run only when named)")
    ap.add_argument("--sizes", default="1k", help="comma list of 1k, 10k, 100k (default 1k)")
    ap.add_argument("--set", dest="which", default="tune", choices=("tune", "holdout", "all"))
    ap.add_argument("--seeds", default="first", help="first | all | comma list (seeds of the chosen set; "
                    f"tune {list(I.TUNE_SEEDS)}, holdout {list(I.HOLDOUT_SEEDS)})")
    ap.add_argument("--shapes", default=None, help=f"comma list of machine shapes ({', '.join(I.SHAPES)})")
    ap.add_argument("--competitors", default="all", help=f"all | none | comma list of {', '.join(C.NAMES)}")
    ap.add_argument("--no-rankmap", action="store_true", help="competitors only")
    ap.add_argument("--rankmap-seed", type=int, default=0)
    ap.add_argument("--rankmap-time-limit", type=float, metavar="S",
                    help="rankmap's time_limit (`rankmap map --time-limit S`; default: none)")
    ap.add_argument("--competitor-seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per mapper and instance (killed after)")
    ap.add_argument("--budget", type=float, default=None, help="seconds for the whole run: no instance starts after it")
    ap.add_argument("--full", action="store_true",
                    help="every family (but those run only when named), size (1k, 10k, 100k), seed, both sets")
    ap.add_argument("--max-n", type=int, default=None, help="skip instances with more ranks")
    ap.add_argument("--only", default=None, metavar="REGEX",
                    help="only the instances whose name matches (re.search), e.g. 'miniamr|lulesh-s6'")
    ap.add_argument("--competitors-from", default=None, metavar="JSON",
                    help="take the competitors' results from an earlier run's --json (same versions and seeds: "
                         "their mappings are deterministic) and run rankmap and any competitor missing there")
    ap.add_argument("--json", default=None, help="write every record (JSON)")
    ap.add_argument("--csv", default=None, help="write one row per instance and mapper (CSV)")
    ap.add_argument("--markdown", default=None, help="write the cost and time tables as Markdown (for docs/)")
    ap.add_argument("--list", action="store_true", help="list the instances and exit")
    ap.add_argument("-v", "--verbose", action="store_true", help="a line per mapper as it finishes")
    return ap.parse_args(argv)


def select(args):
    fams = args.families.split(",") if args.families else list(I.DEFAULT_FAMILIES)
    bad = [f for f in fams if f not in I.FAMILIES]
    if bad:
        sys.exit(f"unknown families {bad}; choose from {', '.join(I.FAMILIES)}")
    sizes = tuple(args.sizes.split(","))
    which, seeds = args.which, args.seeds
    if args.full:
        sizes, which, seeds = tuple(I.SIZES), "all", "all"
    # a size, shape or seed of no instance was dropped without a word: `--sizes 2k` ran the
    # families that have no size, `--shapes tree` the ones that have no shape
    bad = [x for x in sizes if x not in I.SIZES]
    if bad:
        sys.exit(f"--sizes: unknown size {bad[0]!r}; choose from {', '.join(I.SIZES)}")
    shapes = args.shapes.split(",") if args.shapes else None
    bad = [x for x in shapes or () if x not in I.SHAPES]
    if bad:
        sys.exit(f"--shapes: unknown shape {bad[0]!r}; choose from {', '.join(I.SHAPES)}")
    if seeds not in ("all", "first"):
        own = {"tune": I.TUNE_SEEDS, "holdout": I.HOLDOUT_SEEDS, "all": I.TUNE_SEEDS + I.HOLDOUT_SEEDS}[which]
        try:
            seeds = [int(x) for x in seeds.split(",")]
        except ValueError:
            sys.exit(f"--seeds {args.seeds!r}: first, all or a comma list of whole numbers")
        bad = [x for x in seeds if x not in own]
        if bad:
            sys.exit(f"--seeds: {bad[0]} is no seed of the {which} set (its seeds: {', '.join(map(str, own))})")
    seeds = None if seeds == "all" else seeds
    for opt, v in (("--timeout", args.timeout), ("--budget", args.budget), ("--max-n", args.max_n),
                   ("--rankmap-time-limit", args.rankmap_time_limit)):
        # --timeout -1 killed every mapper at once: a run of rows saying "no answer within -1 s"
        if v is not None and not (v > 0 and math.isfinite(v)):
            sys.exit(f"{opt} {v:g}: must be a positive number")
    insts = I.instances(fams, sizes, which, seeds, shapes)
    if args.only:
        try:
            pat = re.compile(args.only)
        except re.error as e:
            sys.exit(f"--only {args.only!r}: {e}")
        insts = [i for i in insts if pat.search(i.name)]
    if args.competitors == "all":
        names = list(C.NAMES)
    elif args.competitors == "none":
        names = []
    else:
        names = args.competitors.split(",")
        bad = [x for x in names if x not in C.NAMES]
        if bad:
            sys.exit(f"unknown competitors {bad}; choose from {', '.join(C.NAMES)}")
    return insts, names


def main(argv=None):
    args = parse_args(argv)
    args.reuse = {}
    if args.competitors_from:
        old = C.recording(args.competitors_from, "records")
        args.reuse = {r["instance"]: {k: v for k, v in r["mappers"].items() if k != "rankmap"}
                      for r in old["records"]}
    insts, names = select(args)
    if args.list:
        for i in insts:
            print(f"{i.set:8} {i.name}")
        print(f"{len(insts)} instance(s)")
        return 0
    why = C.output_problem([("--json", args.json), ("--csv", args.csv), ("--markdown", args.markdown)])
    if why:
        sys.exit(why)
    avail = C.available()
    print("competitors:", ", ".join(f"{n}" + (f" (n/a: {avail[n]})" if avail[n] else "") for n in names))
    print("versions:", ", ".join(f"{k} {v}" for k, v in C.versions().items()),
          f"| Mt-KaHyPar threads {C.MTKAHYPAR_THREADS}, SharedMap threads 1")
    print(f"{len(insts)} instance(s), set {args.which if not args.full else 'all'}, timeout {args.timeout:g} s per mapper",
          flush=True)
    worker = Worker()
    recs = []
    t_start = time.perf_counter()
    try:
        for k, inst in enumerate(insts):
            if args.budget is not None and time.perf_counter() - t_start > args.budget:
                print(f"budget of {args.budget:g} s spent: {len(insts) - k} instance(s) not run: "
                      + ", ".join(i.name for i in insts[k:]), flush=True)
                break
            t0 = time.perf_counter()
            if args.max_n:
                W, m = inst.load()
                if W.shape[0] > args.max_n:
                    inst.drop()
                    continue
            rec = run_instance(inst, names, worker, args)
            recs.append(rec)
            if args.json:   # after every instance: an interrupted run keeps what it did
                write_json(args.json, names, args, recs, None)
            rm = rec["mappers"].get("rankmap", {})
            print(f"[{k + 1}/{len(insts)}] {inst.name}: n={rec['n']} nnz={rec['nnz']} "
                  + (f"rankmap/best {rec['ratio']:.4f} (best {rec.get('best_anchor')}) " if "ratio" in rec else "")
                  + (f"rankmap {rm.get('seconds', 0):.2f} s " if rm else "")
                  + f"[{time.perf_counter() - t0:.0f} s]", flush=True)
    except KeyboardInterrupt:
        print("interrupted: the tables show the instances done", flush=True)
    finally:
        worker.close()
    print_tables(recs, names)
    summ = summary(recs)
    if args.json:
        write_json(args.json, names, args, recs, summ)
    if args.markdown:
        Path(args.markdown).write_text(markdown(recs, names, summ))
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            wr = csv.writer(f)
            wr.writerow(["instance", "set", "family", "size", "shape", "seed", "n", "nnz", "mapper", "status", "cost",
                         "cost_over_best_anchor", "seconds", "why", "repaired", "peak_mb", "received"])
            for r in recs:
                for name, m in r["mappers"].items():
                    rel = m["cost"] / r["best_cost"] if m["status"] == "ok" and r.get("best_cost") else ""
                    wr.writerow([r["instance"], r["set"], r["family"], r["size"], r["shape"], r["seed"], r["n"], r["nnz"],
                                 name, m["status"], m["cost"] if m["cost"] is not None else "", rel,
                                 f"{m['seconds']:.3f}", m["why"], m.get("repaired", ""), m.get("peak_mb", ""),
                                 m.get("received", "")])
    return 0


if __name__ == "__main__":
    sys.exit(main())
