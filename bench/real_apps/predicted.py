"""`rankmap predict` against the cached replays, without replaying: every placement's
estimate recomputed from its trace and hostfile (after a change of the model), and the
error summarised on the tune rows and on the held-out rows separately.

The split is fixed before anything is tuned: the runs of 16-27 ranks (2-3 nodes) are the
tune rows, the 64-rank runs are held out; a model constant may be chosen on the tune rows
only, and the held-out rows are reported as measured."""
from __future__ import annotations

from pathlib import Path

from rankmap.mapper import spec as mspec, writers
from rankmap.mapper.critpath import read_schedule
from rankmap.mapper.predict import predict, replay_epoch
from rankmap.profiler.formats import read_traffic
from rankmap.slurm import platform as plat
from real_apps import replay as R

TUNE_MAX_RANKS = 32      # tune rows: cases of at most this many ranks; the others are held out


def refresh(work: Path, cases: list, machines, scales, say=print, run: bool = True) -> int:
    """Rewrite predicted_comm_seconds / predicted_limit / predicted_bounds / predicted_latency
    (and, with run, predicted_run_seconds: the run's time, compute included) in every cached
    WORK/replay/<case>/<machine>/x<scale>.json. Returns the placements done."""
    done = 0
    for case in cases:
        before = done
        trace = work / "traces" / case.name / "trace" / "replay.ti"
        traffic = schedule = None
        for m in machines:
            for s in scales:
                d = work / "replay" / case.name / m
                f = d / f"x{s:g}.json"
                if not f.is_file() or not trace.is_file():
                    continue
                if traffic is None:
                    traffic = read_traffic(trace, "smpi", "auto")
                    schedule = read_schedule(trace)
                fresh(schedule)                             # each row estimated as `rankmap predict` estimates it
                p, _ = plat.load(work / "platforms" / f"{m}-x{s:g}")
                full = mspec.build(plat.machine_spec(p))
                net = p.network()
                if not run:                                 # communication alone only (no run estimate: faster)
                    net.core_speed = None
                res = R.read_cached(f)
                epoch_of = {}
                todo = list(res)
                # predict chooses its replay (flow or in turn) on a row's first placement and may
                # switch on a later, costlier one (the schedule's epoch): the placements estimated
                # before the switch are estimated again, so a row's placements are all estimated alike
                while todo:
                    for name in todo:
                        v = res[name]
                        hf = d / f"x{s:g}" / f"hostfile-{name}"
                        if not hf.is_file():
                            continue
                        done += _estimate(v, hf, full, traffic, net, schedule)
                        epoch_of[name] = replay_epoch(schedule)
                    todo = [n for n, e in epoch_of.items() if e != replay_epoch(schedule)]
                    done -= len(todo)
                R.write_cached(f, res)
        if done > before:           # said of every case before, replayed or not
            say(f"  {case.name}: predict recomputed", flush=True)
    return done


def _estimate(v: dict, hf: Path, full, traffic, net, schedule) -> int:
    """predict's estimates of one placement (its hostfile) into its cached result v."""
    slot = writers.read_mapping(hf, full, traffic.bytes.shape[0])
    pr = predict(traffic.bytes, traffic.msgs, full, slot, net, schedule=schedule)
    v.update({"predicted_comm_seconds": pr["seconds"], "predicted_comm_from": pr.get("seconds_from"),
              "predicted_limit": pr["limited_by"], "predicted_bounds": pr["bounds"],
              "predicted_latency": pr["latency"], "predicted_latency_from": pr["latency_from"]})
    if "run_seconds" in pr:         # the run's time, compute included (the final choice's estimate)
        v.update({"predicted_run_seconds": pr["run_seconds"], "predicted_run_comm_seconds": pr["run_comm_seconds"],
                  "predicted_run_sharing": pr["run_sharing"]})
    return 1


def fresh(schedule) -> None:
    """Forget what estimating another machine or network speed cached on the schedule: the
    replay predict chose for the run and for communication alone (flow or in turn,
    predict._replayed: decided on the first mapping estimated, and kept), the epoch, the
    compute-only time. One schedule serves every row of a case here; `rankmap predict` and the
    replay phase read it anew for each, and so must this estimate be made (before: only the
    run's choice was forgotten, and communication alone kept the choice of the first row, so
    a row's estimate depended on the rows refreshed before it)."""
    if schedule is not None:
        for k in [k for k in vars(schedule) if k.startswith("_")]:
            del schedule.__dict__[k]


def is_tune(row: dict) -> bool:
    return row["ranks"] <= TUNE_MAX_RANKS


def family(row: dict) -> str:
    """The application (NPB: the benchmark): npb-lu, lulesh, ..."""
    return "-".join(row["case"].split("-")[:2]) if row["app"] == "npb" else row["app"]


def stats(rows: list[dict]) -> dict:
    """MAE, max error and pairs in the replay's order over these rows' placements."""
    errs = [abs(e) for r in rows for e in r["pred_err"].values()]
    ok, tot = sum(r["order"][0] for r in rows), sum(r["order"][1] for r in rows)
    return {"rows": len(rows), "placements": len(errs), "mae": sum(errs) / len(errs) if errs else float("nan"),
            "max": max(errs) if errs else float("nan"), "order": (ok, tot)}


def run_stats(rows: list[dict]) -> dict:
    """predict's run estimate against the replayed time (rows that have it)."""
    rows = [r for r in rows if "run_err" in r]
    errs = [abs(e) for r in rows for e in r["run_err"].values()]
    ok, tot = sum(r["order_run"][0] for r in rows), sum(r["order_run"][1] for r in rows)
    return {"rows": len(rows), "placements": len(errs), "mae": sum(errs) / len(errs) if errs else float("nan"),
            "max": max(errs) if errs else float("nan"), "order": (ok, tot)}


def lines(rows: list[dict]) -> list[str]:
    """predict's accuracy on the tune rows, the held-out rows, all rows, and per application
    and machine (all rows)."""
    out = []

    def one(label, rs):
        s = stats(rs)
        if not s["placements"]:
            return
        ok, tot = s["order"]
        out.append(f"predict, {label}: {s['rows']} rows, {s['placements']} placements: MAE {s['mae']:.1%}, max "
                   f"{s['max']:.1%}, order {ok}/{tot} = {ok / tot if tot else float('nan'):.1%}")
    one(f"tune rows (<= {TUNE_MAX_RANKS} ranks)", [r for r in rows if is_tune(r)])
    one(f"held-out rows (> {TUNE_MAX_RANKS} ranks)", [r for r in rows if not is_tune(r)])
    one("all rows", rows)
    for label, rs in ((f"tune rows (<= {TUNE_MAX_RANKS} ranks)", [r for r in rows if is_tune(r)]),
                      (f"held-out rows (> {TUNE_MAX_RANKS} ranks)", [r for r in rows if not is_tune(r)]),
                      ("all rows", rows)):
        s = run_stats(rs)
        if s["placements"]:
            ok, tot = s["order"]
            out.append(f"predict's run time (compute included) vs the replayed time, {label}: {s['rows']} rows, "
                       f"{s['placements']} placements: MAE {s['mae']:.1%}, max {s['max']:.1%}, order {ok}/{tot} = "
                       f"{ok / tot if tot else float('nan'):.1%}")
    for v in sorted({family(r) for r in rows}):
        one(v, [r for r in rows if family(r) == v])
    for v in sorted({r["machine"] for r in rows}):
        one(v, [r for r in rows if r["machine"] == v])
    return out
