"""The tables: every placement's simulated and communication time against block and against
the best competitor, and `rankmap predict` against the replays; the issue's targets checked.

Ratios are measured side by side: every number of a row comes from one trace replayed on one
platform in one run of the replay phase."""
from __future__ import annotations

import math
import sys
from pathlib import Path

from real_apps.replay import COMPETITORS, EXTRA, OURS, hosts_at, read_cached

TIE = 0.01          # placements whose replayed times differ by less than this are not ranked
NOISE = 0.001       # SimGrid's message-ordering effects: differences below 0.1 % are not placement quality
COMM_BOUND = 0.20   # the communication-bound rows: communication >= 20 % of block's time


def load(work: Path, cases: list, machines, scales, wanted=COMPETITORS) -> list[dict]:
    rows = []
    for case in cases:
        for m in machines:
            d = work / "replay" / case.name / m
            if not (d / "placements.json").is_file():
                continue
            pl = read_cached(d / "placements.json")
            for s in scales:
                f = d / f"x{s:g}.json"
                if not f.is_file():
                    continue
                res = read_cached(f)
                if wanted != "all":
                    res = {n: v for n, v in res.items() if n in OURS or n in wanted or n == EXTRA}
                missing = [n for n in OURS if n not in res]
                if missing:      # a row stopped half-way (its placements are replayed one at a time)
                    if "block" in res:
                        print(f"{case.name} {m} {net(s)}: not every placement replayed yet (no {', '.join(missing)}): "
                              "left out of the tables", file=sys.stderr)
                    continue
                rows.append({"case": case.name, "app": case.app, "ranks": case.ranks, "machine": m, "scale": s,
                             "what": case.what, "res": res, "map_seconds": pl.get("map_seconds", {}),
                             "skipped": pl.get("skipped", {}),
                             "nodes": {n: len(set(h)) for n, h in hosts_at(pl, s).items() if n in res}})
    for r in rows:
        _derive(r)
    return rows


def _derive(r: dict) -> None:
    res = r["res"]
    b = res["block"]
    comps = [n for n in res if n not in OURS and n != EXTRA]
    r["competitors"] = comps
    r["t"] = {n: v["simulated_seconds"] / b["simulated_seconds"] for n, v in res.items()}
    bc = b["comm_seconds"]
    r["c"] = {n: (v["comm_seconds"] / bc if bc > 0 else float("nan")) for n, v in res.items()}
    r["comm_share"] = bc / b["simulated_seconds"] if b["simulated_seconds"] else 0.0
    if comps:
        best = min(comps, key=lambda n: (res[n]["simulated_seconds"], n))
        r["best"] = best
        r["vs_best"] = {n: res[n]["simulated_seconds"] / res[best]["simulated_seconds"] for n in ("rankmap-b", "rankmap-c")}
        bcc = res[best]["comm_seconds"]
        r["c_vs_best"] = {n: (res[n]["comm_seconds"] / bcc if bcc > 0 else float("nan")) for n in ("rankmap-b", "rankmap-c")}
    else:
        r["best"] = None
    # predict: its estimate of communication alone against the replay of communication alone
    # (placements replayed after the last `predict` have no estimate yet: left out, and named)
    r["pred_err"] = {n: v["predicted_comm_seconds"] / v["comm_alone_seconds"] - 1 for n, v in res.items()
                     if v.get("comm_alone_seconds") and v.get("predicted_comm_seconds") is not None}
    r["unpredicted"] = sorted(n for n, v in res.items() if v.get("predicted_comm_seconds") is None)
    r["order"] = _pairs(res, "comm_alone_seconds")
    r["order_comm"] = _pairs(res, "comm_seconds")
    # predict's run estimate (critpath.run_time, compute included) against the replayed time
    if res and all(v.get("predicted_run_seconds") for v in res.values()):
        r["run_err"] = {n: v["predicted_run_seconds"] / v["simulated_seconds"] - 1 for n, v in res.items()}
        r["order_run"] = _pairs(res, "simulated_seconds", "predicted_run_seconds")


def _pairs(res: dict, key: str, pred: str = "predicted_comm_seconds") -> tuple[int, int]:
    """(pairs ranked as the replay ranks them, pairs ranked): placements whose replayed times
    are within TIE of each other are a tie and not counted."""
    names = sorted(res)
    ok = tot = 0
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            xa, xb = res[a][key], res[b][key]
            if max(xa, xb) <= 0 or abs(xa - xb) <= TIE * max(xa, xb):
                continue
            pa, pb = res[a].get(pred), res[b].get(pred)
            if pa is None or pb is None:               # not estimated yet (run `predict`)
                continue
            tot += 1
            ok += (pa - pb) * (xa - xb) > 0
    return ok, tot


def net(s: float) -> str:
    """A network speed as a label: x1, /4, /16, /64."""
    return f"/{round(1 / s)}" if s < 1 and abs(1 / s - round(1 / s)) < 1e-9 else f"x{s:g}"


def _f(x: float, w: int = 6, p: int = 3) -> str:
    return f"{x:{w}.{p}f}" if isinstance(x, (int, float)) and math.isfinite(x) else f"{'-':>{w}}"


def checks(r: dict) -> str:
    """The issue's per-row targets that this row misses (rankmap-b; rankmap-c where it is
    the better of the two for communication), or "ok"."""
    miss = []
    if r["t"]["rankmap-b"] > 1 + NOISE:
        miss.append(f"slower than block x{r['t']['rankmap-b']:.3f}")
    if r["best"] and r["vs_best"]["rankmap-b"] > 1.01:
        miss.append(f"best comp. +{r['vs_best']['rankmap-b'] - 1:.1%}")
    if r["comm_share"] >= COMM_BOUND:
        c = min(r["c"]["rankmap-b"], r["c"]["rankmap-c"])
        if not c <= 0.70:
            miss.append(f"comm {c - 1:+.0%} (not <= -30 %)")
    errs = [abs(e) for e in r["pred_err"].values()]
    if errs and (sum(errs) / len(errs) > 0.10 or max(errs) > 0.25):
        miss.append(f"predict MAE {sum(errs) / len(errs):.0%} max {max(errs):.0%}")
    ok, tot = r["order"]
    if tot and ok / tot < 0.95:
        miss.append(f"order {ok}/{tot}")
    if r.get("unpredicted"):
        miss.append(f"no predict estimate for {', '.join(r['unpredicted'])} (run `predict`)")
    return "; ".join(miss) if miss else "ok"


def text(rows: list[dict], markdown: bool = False) -> str:
    """The main table: one line per (case, machine, network speed)."""
    head = ["case", "P", "machine", "net", "block s", "comm%", "cyclic", "random", "rm-b", "rm-c", "best comp",
            "best", "rm-b/best", "c:cyc", "c:rand", "c:rm-b", "c:rm-c", "c:best", "pred err", "order", "targets missed"]
    lines = []
    if markdown:
        lines.append("| " + " | ".join(head) + " |")
        lines.append("|" + "---|" * len(head))
    else:
        lines.append(f"{'case':22} {'P':>4} {'machine':9} {'net':>6} {'block s':>9} {'comm%':>6} {'cyc':>6} {'rand':>6} "
                     f"{'rm-b':>6} {'rm-c':>6} {'best comp':>11} {'best':>6} {'b/best':>6} | {'c:cyc':>6} {'c:rand':>6} "
                     f"{'c:rm-b':>6} {'c:rm-c':>6} {'c:best':>6} | {'pred err':>11} {'order':>6}")
    for r in rows:
        t, c = r["t"], r["c"]
        best = r["best"]
        errs = list(r["pred_err"].values())
        perr = f"{min(errs):+.0%}..{max(errs):+.0%}" if errs else "-"
        ok, tot = r["order"]
        order = f"{ok}/{tot}"
        cells = [r["case"], str(r["ranks"]), r["machine"], net(r['scale']), f"{r['res']['block']['simulated_seconds']:.4g}",
                 f"{r['comm_share']:.1%}", _f(t["cyclic"]), _f(t["random"]), _f(t["rankmap-b"]), _f(t["rankmap-c"]),
                 best or "-", _f(t[best]) if best else "-", _f(r["vs_best"]["rankmap-b"]) if best else "-",
                 _f(c["cyclic"]), _f(c["random"]), _f(c["rankmap-b"]), _f(c["rankmap-c"]),
                 _f(c[best]) if best else "-", perr, order, checks(r)]
        if markdown:
            lines.append("| " + " | ".join(x.strip() for x in cells) + " |")
        else:
            lines.append(f"{cells[0]:22} {cells[1]:>4} {cells[2]:9} {cells[3]:>6} {cells[4]:>9} {cells[5]:>6} {cells[6]} "
                         f"{cells[7]} {cells[8]} {cells[9]} {cells[10]:>11} {cells[11]:>6} {cells[12]:>6} | {cells[13]} "
                         f"{cells[14]} {cells[15]} {cells[16]} {cells[17]:>6} | {cells[18]:>11} {cells[19]:>6}  {cells[20]}")
    return "\n".join(lines)


def competitors_text(rows: list[dict], markdown: bool = False) -> str:
    """Per competitor: geometric means over the rows of time and communication vs block, and
    how often rankmap-b is faster / within 1 % / slower than it."""
    names = sorted({n for r in rows for n in r["competitors"]})
    out = []
    head = ["mapping", "rows", "time vs block (geo-mean)", "comm vs block (geo-mean)", "rankmap-b faster",
            "within 1 %", "rankmap-b > 1 % slower"]
    if markdown:
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    else:
        out.append(f"{'mapping':14} {'rows':>5} {'t/block':>8} {'c/block':>8} {'rm-b faster':>11} {'within 1%':>9} "
                   f"{'rm-b slower':>11}")
    for n in ["cyclic", "random", "rankmap-b", "rankmap-c", EXTRA] + names:
        rs = [r for r in rows if n in r["t"]]
        if not rs:
            continue
        gt = math.exp(sum(math.log(r["t"][n]) for r in rs) / len(rs))
        cs = [r["c"][n] for r in rs if r["c"][n] > 0 and math.isfinite(r["c"][n])]
        gc = math.exp(sum(math.log(x) for x in cs) / len(cs)) if cs else float("nan")
        rel = [r["res"]["rankmap-b"]["simulated_seconds"] / r["res"][n]["simulated_seconds"] for r in rs]
        fa, wi, sl = sum(x < 1 - 0.01 for x in rel), sum(abs(x - 1) <= 0.01 for x in rel), sum(x > 1.01 for x in rel)
        cells = [n, str(len(rs)), f"{gt:.3f}", f"{gc:.3f}", str(fa), str(wi), str(sl)]
        if n == "rankmap-b":
            cells[4:] = ["-", "-", "-"]
        if markdown:
            out.append("| " + " | ".join(cells) + " |")
        else:
            out.append(f"{cells[0]:14} {cells[1]:>5} {cells[2]:>8} {cells[3]:>8} {cells[4]:>11} {cells[5]:>9} {cells[6]:>11}")
    return "\n".join(out)


def targets(rows: list[dict]) -> list[str]:
    """The issue's targets, each with its measured value and the rows that miss it."""
    out = []
    if not rows:
        return ["no replayed rows yet"]
    for n in ("rankmap-b", "rankmap-c"):
        worst = max(rows, key=lambda r: r["t"][n])
        slower = [r for r in rows if r["t"][n] > 1 + NOISE]
        out.append(f"{n} never slower than block: worst {worst['t'][n]:.4f} ({worst['case']} {worst['machine']} "
                   f"{net(worst['scale'])}); rows slower by > {NOISE:.1%}: {len(slower)} of {len(rows)}"
                   + (" — " + ", ".join(f"{r['case']} {r['machine']} {net(r['scale'])} {r['t'][n]:.4f}" for r in slower[:8])
                      if slower else ""))
    withc = [r for r in rows if r["best"]]
    if withc:
        miss = [r for r in withc if r["vs_best"]["rankmap-b"] > 1.01]
        worst = max(withc, key=lambda r: r["vs_best"]["rankmap-b"])
        out.append(f"rankmap-b within 1 % of the best competitor: {len(withc) - len(miss)} of {len(withc)} rows "
                   f"(worst {worst['vs_best']['rankmap-b']:.4f}, {worst['case']} {worst['machine']} {net(worst['scale'])}"
                   f" vs {worst['best']})" + (" — misses: " + ", ".join(
                       f"{r['case']} {r['machine']} {net(r['scale'])} {r['vs_best']['rankmap-b']:.3f} vs {r['best']}"
                       for r in miss[:12]) if miss else ""))
    else:
        out.append("competitors: none replayed (bench/competitors.py missing or none available)")
    cb = [r for r in rows if r["comm_share"] >= COMM_BOUND]
    hit = [r for r in cb if min(r["c"]["rankmap-b"], r["c"]["rankmap-c"]) <= 0.70]
    out.append(f"communication-bound rows (comm >= {COMM_BOUND:.0%} of block's time): {len(cb)}; communication >= 30 % "
               f"below block (best of rankmap-b/-c): {len(hit)}" + (" — the others: " + ", ".join(
                   f"{r['case']} {r['machine']} {net(r['scale'])} c:{min(r['c']['rankmap-b'], r['c']['rankmap-c']):.3f}"
                   for r in cb if r not in hit)[:1500] if len(hit) < len(cb) else ""))
    errs = [abs(e) for r in rows for e in r["pred_err"].values()]
    if errs:
        ok = sum(r["order"][0] for r in rows)
        tot = sum(r["order"][1] for r in rows)
        okc = sum(r["order_comm"][0] for r in rows)
        totc = sum(r["order_comm"][1] for r in rows)
        out.append(f"predict vs replayed communication alone over {len(errs)} placements: mean absolute error "
                   f"{sum(errs) / len(errs):.1%} (target <= 10 %), max {max(errs):.1%} (target <= 25 %); placements in "
                   f"the replay's order: {ok}/{tot} pairs = {ok / tot if tot else float('nan'):.1%} (target >= 95 %; "
                   f"pairs within {TIE:.0%} are ties); against the communication time with compute: {okc}/{totc} = "
                   f"{okc / totc if totc else float('nan'):.1%}")
        from real_apps import predicted
        out += predicted.lines(rows)
    return out


def _geo(xs: list) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def curve_text(rows: list[dict], markdown: bool = False) -> str:
    """The gain as a function of the network's speed: for every case and machine replayed at
    more than one speed, rankmap-b's time and communication over block's and the best
    competitor's time over block's at each speed (fastest network first); then, per speed,
    the geometric means over the rows of the cases replayed at every speed and the issue's
    per-row targets counted at that speed."""
    scales = sorted({r["scale"] for r in rows}, reverse=True)
    by = {}
    for r in rows:
        by.setdefault((r["case"], r["machine"]), {})[r["scale"]] = r
    keys = [k for k, v in by.items() if len(v) > 1]
    if len(scales) < 2 or not keys:
        return "curve: no case replayed at more than one network speed"
    cols = ["comm%", "rm-b", "c:rm-b", "best", "rm-b/best"]
    head = ["case", "machine"] + [f"{c} {net(s)}" for c in cols for s in scales]
    out = []
    if markdown:
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    else:
        out.append(" ".join(f"{h:>{22 if i == 0 else 9 if i == 1 else 8}}" for i, h in enumerate(head)))

    def cell(r, c):
        if r is None:
            return "-"
        if c == "comm%":
            return f"{r['comm_share']:.1%}"
        if c == "rm-b":
            return f"{r['t']['rankmap-b']:.3f}"
        if c == "c:rm-b":
            return _f(r["c"]["rankmap-b"]).strip()
        if not r["best"]:
            return "-"
        if c == "best":
            return f"{r['t'][r['best']]:.3f} {r['best']}" if markdown else f"{r['t'][r['best']]:.3f}"
        return f"{r['vs_best']['rankmap-b']:.3f}"
    for k in keys:
        cells = list(k) + [cell(by[k].get(s), c) for c in cols for s in scales]
        if markdown:
            out.append("| " + " | ".join(cells) + " |")
        else:
            out.append(" ".join(f"{x:>{22 if i == 0 else 9 if i == 1 else 8}}" for i, x in enumerate(cells)))
    full = [k for k in keys if len(by[k]) == len(scales)]
    out.append("")
    for s in scales:
        rs = [by[k][s] for k in full]
        if not rs:
            continue
        cb = [r for r in rs if r["comm_share"] >= COMM_BOUND]
        hit = [r for r in cb if min(r["c"]["rankmap-b"], r["c"]["rankmap-c"]) <= 0.70]
        wb = [r for r in rs if r["best"]]
        out.append(("- " if markdown else "") +
                   f"{net(s)}: {len(rs)} rows (cases replayed at every speed); block's comm share geo-mean "
                   f"{_geo([r['comm_share'] for r in rs]):.1%}; rankmap-b time/block geo-mean "
                   f"{_geo([r['t']['rankmap-b'] for r in rs]):.3f} (lowest {min(r['t']['rankmap-b'] for r in rs):.3f}), "
                   f"comm/block {_geo([r['c']['rankmap-b'] for r in rs]):.3f}; best competitor time/block geo-mean "
                   f"{_geo([r['t'][r['best']] for r in wb]):.3f}; slower than block (> {NOISE:.1%}): "
                   f"{sum(r['t']['rankmap-b'] > 1 + NOISE for r in rs)}; > 1 % behind the best competitor: "
                   f"{sum(r['vs_best']['rankmap-b'] > 1.01 for r in wb)} of {len(wb)}; communication-bound: "
                   f"{len(cb)}, comm >= 30 % below block: {len(hit)}" + _predict_at(rs))
    return "\n".join(out)


def _predict_at(rs: list[dict]) -> str:
    errs = [abs(e) for r in rs for e in r["pred_err"].values()]
    if not errs:
        return ""
    ok, tot = sum(r["order"][0] for r in rs), sum(r["order"][1] for r in rs)
    return (f"; predict (communication alone): MAE {sum(errs) / len(errs):.1%}, max {max(errs):.1%}, order {ok}/{tot}"
            + (f" = {ok / tot:.1%}" if tot else ""))


def extra_text(rows: list[dict], markdown: bool = False) -> str:
    """rankmap-c+ (replay --extra-nodes): per row replayed with it, the nodes each placement
    takes, time and communication over block's of rankmap-b, -c and -c+, and the node-hours
    of -c+ over block's (nodes x time); then the communication-bound rows' -30 % target
    counted with -c+ among rankmap's placements."""
    rs = [r for r in rows if EXTRA in r["t"]]
    if not rs:
        return f"{EXTRA}: no row replayed with it (replay --extra-nodes PCT)"
    head = ["case", "P", "machine", "net", "comm%", "nodes block", "nodes rm-c", "nodes rm-c+", "rm-b", "rm-c", "rm-c+",
            "c:rm-b", "c:rm-c", "c:rm-c+", "node-hours rm-c+"]
    out = (["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] if markdown else
           [" ".join(f"{h:>11}" for h in head)])
    for r in rs:
        t, c, nd = r["t"], r["c"], r.get("nodes", {})
        # (a replay cached from a placement no longer in placements.json: its nodes unknown)
        nh = f"{nd[EXTRA] * t[EXTRA] / nd['block']:.3f}" if EXTRA in nd and "block" in nd else "-"
        cells = [r["case"], str(r["ranks"]), r["machine"], net(r["scale"]), f"{r['comm_share']:.1%}",
                 *(str(nd.get(n, "-")) for n in ("block", "rankmap-c", EXTRA)),
                 *(_f(t[n]).strip() for n in ("rankmap-b", "rankmap-c", EXTRA)),
                 *(_f(c[n]).strip() for n in ("rankmap-b", "rankmap-c", EXTRA)), nh]
        out.append("| " + " | ".join(cells) + " |" if markdown else " ".join(f"{x:>11}" for x in cells))
    cb = [r for r in rs if r["comm_share"] >= COMM_BOUND]
    best = {id(r): min(r["c"][n] for n in ("rankmap-b", "rankmap-c", EXTRA)) for r in cb}
    hit = [r for r in cb if best[id(r)] <= 0.70]
    slower = [r for r in rs if r["t"][EXTRA] > 1 + NOISE]
    out.append("")
    out.append(("- " if markdown else "") + f"{EXTRA} never slower than block: {len(rs) - len(slower)} of {len(rs)} rows"
               + (" — slower: " + ", ".join(f"{r['case']} {r['machine']} {net(r['scale'])} {r['t'][EXTRA]:.4f}"
                                           for r in slower) if slower else ""))
    out.append(("- " if markdown else "") + f"communication-bound rows among these: {len(cb)}; communication >= 30 % below "
               f"block (best of rankmap-b/-c/-c+): {len(hit)}" + (" — the others: " + ", ".join(
                   f"{r['case']} {r['machine']} {net(r['scale'])} c:{best[id(r)]:.3f}" for r in cb if r not in hit)
                   if len(hit) < len(cb) else ""))
    return "\n".join(out)
