"""Real applications (bench/real_apps.py): the real two-pass run of an NPB program on the local
Slurm cluster (needs the downloaded sources: RANKMAP_REAL_APPS_SOURCES=DIR), the same path
with a Fortran program of the project's own (always), and the pieces of the benchmark that
do not need the sources: finding them, the one-line error without them, and the trace
cleaning that lets SimGrid replay programs that wait on a request after an MPI_Waitall."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from conftest import REQUIRE_ALL, ROOT, app, require, spawn_cli

sys.path.insert(0, str(ROOT / "bench"))
from real_apps import capture, sources  # noqa: E402

SOURCES = os.environ.get("RANKMAP_REAL_APPS_SOURCES")
NO_SOURCES = ("the NPB sources are not given: set RANKMAP_REAL_APPS_SOURCES to the directory holding NPB 3.4 "
              "(docs/real-apps.md says where to get it)")


def two_pass(env, exe: Path, out: Path, cwd: Path) -> tuple[dict, str]:
    """`rankmap run -n 8 -N 4 --verify` on the local cluster: profile, map, relaunch, check."""
    res = spawn_cli("run", "-n", 8, "-N", 4, "-t", 3, "--verify", "--out", out, "--", exe, env=env, cwd=cwd,
                    timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    wf = json.loads((out / "workflow.json").read_text())
    assert wf["passes"]["profile"]["exit_code"] == 0 and wf["passes"]["relaunch"]["exit_code"] == 0
    assert "SLURM_HOSTFILE=" in wf["passes"]["relaunch"]["command"]
    # --verify: the profiler watched pass 2, and every rank ran on the host and cores the mapping gave it
    assert len(wf["verified"]) == 8 and all(r["ok"] for r in wf["verified"]), wf["verified"]
    hosts = (out / "mapping" / "hostfile").read_text().split()
    assert len(hosts) == 8 and set(hosts) <= {"n1", "n2", "n3", "n4"}
    return wf, res.stdout


@pytest.mark.slurm
def test_fortran_program_two_pass_verify(slurm_cluster, apps, tmp_path):
    """What the NPB test does, with the project's own Fortran (mpif.h) program: profiled
    through the Fortran bindings under srun, mapped, relaunched with srun -m arbitrary, every
    rank's placement checked."""
    exe = app(apps, "ftraffic-mpif", "openmpi")
    wf, out = two_pass(slurm_cluster, exe, tmp_path / "run", tmp_path)
    # the profile is the program's traffic: every rank sent to its ring neighbours
    rep = json.loads((tmp_path / "run" / "mapping" / "report.json").read_text())
    assert rep["metrics"]["rankmap"]["internode_fraction"] <= rep["metrics"]["block"]["internode_fraction"]


def _npb_lu_s(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("real-apps")
    exe = sources.build("npb", Path(SOURCES), work, "mpi", [("lu", "S")])["lu.S"]
    assert exe.is_file()
    return exe


if SOURCES or not REQUIRE_ALL:
    @pytest.mark.slurm
    def test_npb_lu_two_pass_verify(slurm_cluster, tmp_path_factory, tmp_path):
        """NPB 3.4 LU class S, built from the user's sources with mpif90, 8 ranks (4 x 2 grid):
        two real passes on the local cluster, its own verification passes in both."""
        if not SOURCES:
            pytest.skip(NO_SOURCES)
        exe = _npb_lu_s(tmp_path_factory)
        wf, out = two_pass(slurm_cluster, exe, tmp_path / "run", tmp_path)
        relaunch = out.split("pass 2: relaunch", 1)[1]
        assert "Verification    =               SUCCESSFUL" in relaunch, relaunch[-2000:]
        assert " Total processes =                        8" in relaunch
else:   # CI (every component required) without the sources: nothing to skip, say why it is absent
    warnings.warn("test_npb_lu_two_pass_verify not collected: " + NO_SOURCES)


@pytest.mark.slow
def test_missing_sources_is_one_line(tmp_path):
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "real_apps.py"), "--sources", str(tmp_path / "none"),
                          "sources"], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "no such directory" in lines[0] and "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, str(ROOT / "bench" / "real_apps.py"), "--sources", str(tmp_path),
                          "--work", str(tmp_path / "w"), "build", "--apps", "lulesh"], capture_output=True, text=True,
                         timeout=60)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1 and "LULESH 2 not found" in lines[0], res.stderr


def test_sources_are_found_by_their_files(tmp_path):
    """Any layout: an application is where its files are (here LULESH three levels down and
    miniAMR's ref/ inside its clone), and its tree digest follows its contents."""
    lulesh = tmp_path / "downloads" / "llnl" / "LULESH-2.0.3"
    lulesh.mkdir(parents=True)
    for f in sources.APPS["lulesh"].markers:
        (lulesh / f).write_text("// This is a Version 2.0 MPI + OpenMP implementation of LULESH\n")
    amr = tmp_path / "miniAMR"
    (amr / "ref").mkdir(parents=True)
    for f in sources.APPS["miniamr"].markers:
        (amr / f).write_text('char *version = "1.7.0";\n')
    found = sources.find(tmp_path)
    assert found == {"lulesh": lulesh.resolve(), "miniamr": amr.resolve()}
    d1 = sources.describe("lulesh", found["lulesh"])
    assert d1["version"] == "2.0" and len(d1["digest"]) == 12
    (lulesh / "lulesh.cc").write_text("changed\n")
    assert sources.describe("lulesh", found["lulesh"])["digest"] != d1["digest"]


WAIT_AFTER_WAITALL = r"""
#include <mpi.h>
/* LULESH's exchange: receives posted, sends started, MPI_Waitall on the sends, then
   MPI_Wait on each receive */
int main(int argc, char **argv) {
  int r, n, i, it;
  double out[2][64], in[2][64];
  MPI_Request rr[2], sr[2];
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  for (it = 0; it < 3; it++) {
    int nb[2] = {(r + 1) % n, (r + n - 1) % n};
    for (i = 0; i < 2; i++) MPI_Irecv(in[i], 64, MPI_DOUBLE, nb[i], 7, MPI_COMM_WORLD, &rr[i]);
    for (i = 0; i < 2; i++) MPI_Isend(out[i], 64, MPI_DOUBLE, nb[i], 7, MPI_COMM_WORLD, &sr[i]);
    MPI_Waitall(2, sr, MPI_STATUSES_IGNORE);
    for (i = 0; i < 2; i++) MPI_Wait(&rr[i], MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}
"""


@pytest.mark.smpi
def test_trace_with_wait_after_waitall_replays(tmp_path):
    """SimGrid 3.32's replay aborts on a wait whose request a waitall already completed;
    capture.replayable drops exactly those waits: the cleaned trace replays, with the same
    traffic and the same simulated time on every repeat."""
    require(bool(shutil.which("smpicc") and shutil.which("smpirun")), "SimGrid SMPI (libsimgrid-dev) not installed")
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.formats import read_traffic
    from rankmap.slurm import platform as plat
    from rankmap.slurm import smpi
    src = tmp_path / "w.c"
    src.write_text(WAIT_AFTER_WAITALL)
    exe = tmp_path / "w"
    subprocess.run(["smpicc", "-O1", "-o", str(exe), str(src)], check=True, capture_output=True)
    p, pdir = capture.capture_platform(tmp_path)
    hf = smpi.write_hostfile(plat.block_allocation(p, 4), tmp_path / "hosts")
    trace = tmp_path / "t" / "trace.ti"
    smpi.run([str(exe)], p, pdir, hf, 4, trace=trace, compute="explicit")
    with pytest.raises(UserError, match="failed"):
        smpi.replay(trace, p, pdir, hf, 4)          # SimGrid's own replay of the raw trace
    clean, dropped = capture.replayable(trace)
    assert dropped == 4 * 3 * 2                      # every wait on a receive, every rank and iteration
    a = smpi.replay(clean, p, pdir, hf, 4).seconds
    assert a > 0 and smpi.replay(clean, p, pdir, hf, 4).seconds == a
    t0, t1 = read_traffic(trace, "smpi", "none"), read_traffic(clean, "smpi", "none")
    assert (t0.bytes != t1.bytes).nnz == 0 and t0.bytes.sum() == 4 * 2 * 3 * 64 * 8


def test_trace_cleaning_keeps_every_message():
    """Runs of compute actions become one (their flops summed); a wait is dropped only where
    SimGrid's replay would find no pending request; every send and receive stays."""
    text = (b"3 init\n3 compute 0.5\n3 compute 0.25\n3 irecv 0 7 64 0\n3 isend 0 7 64 0\n3 waitall 2\n"
            b"3 wait 0 3 7\n3 compute 1\n3 isend 1 5 8 0\n3 wait 3 1 5\n3 wait 3 1 5\n3 finalize\n")
    out, dropped, merged = capture._clean_rank(text)
    assert (dropped, merged) == (2, 1)
    assert out == (b"3 init\n3 compute 0.75\n3 irecv 0 7 64 0\n3 isend 0 7 64 0\n3 waitall 2\n3 compute 1.0\n"
                   b"3 isend 1 5 8 0\n3 wait 3 1 5\n3 finalize\n")


def test_waitany_becomes_a_wait_on_a_pending_request():
    """SimGrid 3.32 cannot replay `waitAny COUNT` (miniAMR's halo exchange): each becomes a wait
    on the oldest pending receive, or on the oldest pending send when no receive is pending;
    one that finds nothing pending is dropped. Every send and receive stays."""
    text = (b"2 irecv 0 11 1 1\n2 irecv 3 11 1 1\n2 isend 0 11 1 1\n2 isend 3 11 1 1\n"
            b"2 waitAny 2\n2 compute 5\n2 waitAny 2\n2 waitAny 2\n2 waitAny 2\n2 waitAny 2\n2 finalize\n")
    out, dropped, _ = capture._clean_rank(text)
    assert dropped == 1
    assert out == (b"2 irecv 0 11 1 1\n2 irecv 3 11 1 1\n2 isend 0 11 1 1\n2 isend 3 11 1 1\n"
                   b"2 wait 0 2 11\n2 compute 5.0\n2 wait 3 2 11\n2 wait 2 0 11\n2 wait 2 3 11\n2 finalize\n")


def test_anonymous_receives_get_their_senders():
    """miniFE posts MPI_ANY_SOURCE receives, recorded as -333 like MPI_PROC_NULL: the
    senders whose messages no named receive takes are given to them, and their waits."""
    r0 = b"0 irecv -333 9 1 1\n0 irecv -333 9 1 1\n0 irecv 2 9 1 1\n0 irecv -333 9 1 1\n0 waitall 3\n0 wait -333 0 9\n"
    r1 = b"1 send 0 9 1 1\n"
    r2 = b"2 send 0 9 1 1\n2 send 0 9 1 1\n"
    srcs = capture.any_sources([r0, r1, r2])
    assert srcs == [[1, 2, None], [], []]          # the third had no sender left: MPI_PROC_NULL
    out, dropped, _ = capture._clean_rank(r0, srcs[0])
    assert out.startswith(b"0 irecv 1 9 1 1\n0 irecv 2 9 1 1\n0 irecv 2 9 1 1\n0 irecv -333 9 1 1\n")
    assert dropped == 1                            # the wait after the waitall


def test_curve_table_per_network_speed():
    """table --curve: per case and machine, rankmap-b's time and communication over block's and
    the best competitor's at each network speed, fastest first; per speed the targets counted
    on the cases replayed at every speed (a case at one speed only is left out)."""
    from real_apps import table

    def res(block, comm, rmb, rmbc, scotch):
        one = lambda t, c: {"simulated_seconds": t, "comm_seconds": c, "comm_alone_seconds": c,  # noqa: E731
                            "predicted_comm_seconds": c}
        return {"block": one(block, comm), "cyclic": one(block * 1.2, comm * 2), "random": one(block * 1.1, comm * 1.5),
                "rankmap-b": one(rmb, rmbc), "rankmap-c": one(rmb, rmbc), "scotch": one(scotch, comm)}
    rows = [{"case": "lu", "app": "npb", "ranks": 16, "machine": "m", "scale": s, "res": r}
            for s, r in ((0.25, res(1.2, 0.3, 1.1, 0.2, 1.15)), (1.0, res(1.0, 0.1, 1.0, 0.09, 1.0)))]
    rows.append({"case": "cg", "app": "npb", "ranks": 16, "machine": "m", "scale": 1.0, "res": res(1, 0.1, 1, 0.1, 1)})
    for r in rows:
        table._derive(r)
    out = table.curve_text(rows, markdown=True).splitlines()
    assert out[0].startswith("| case | machine | comm% x1 | comm% /4 | rm-b x1 | rm-b /4 | c:rm-b x1 | c:rm-b /4 |")
    assert out[2] == ("| lu | m | 10.0% | 25.0% | 1.000 | 0.917 | 0.900 | 0.667 | 1.000 scotch | 0.958 scotch | "
                      "1.000 | 0.957 |")
    assert len([x for x in out if x.startswith("| cg")]) == 0
    slow = [x for x in out if x.startswith("- /4:")]
    assert len(slow) == 1 and "1 rows" in slow[0] and "communication-bound: 1, comm >= 30 % below block: 1" in slow[0]
    assert table.curve_text(rows[2:]).startswith("curve: no case")


def test_table_with_placements_replayed_after_predict():
    """Placements replayed after the last `predict` (no estimate yet) do not break the table:
    predict's error and pair order count the estimated ones, the row names the others."""
    from real_apps import table
    one = lambda t, c, p=True: dict({"simulated_seconds": t, "comm_seconds": c, "comm_alone_seconds": c},   # noqa: E731
                                    **({"predicted_comm_seconds": c * 1.01} if p else {}))
    r = {"case": "ft", "app": "npb", "ranks": 16, "machine": "m", "scale": 1.0,
         "res": {"block": one(1.0, 0.4), "cyclic": one(1.1, 0.5), "random": one(1.2, 0.6, False),
                 "rankmap-b": one(0.9, 0.3), "rankmap-c": one(0.8, 0.2), "scotch": one(0.95, 0.35, False)}}
    table._derive(r)
    assert set(r["pred_err"]) == {"block", "cyclic", "rankmap-b", "rankmap-c"}
    assert r["order"] == (6, 6) and r["unpredicted"] == ["random", "scotch"]
    line = table.text([r], markdown=True).splitlines()[2]
    assert "no predict estimate for random, scotch (run `predict`)" in line


def test_extra_nodes_table():
    """replay --extra-nodes: rankmap-c+ is one of rankmap's placements, not a competitor; its
    table gives the nodes each placement takes, the node-hours, and the -30 % target counted
    with it."""
    from real_apps import table
    one = lambda t, c: {"simulated_seconds": t, "comm_seconds": c, "comm_alone_seconds": c,   # noqa: E731
                        "predicted_comm_seconds": c}
    r = {"case": "cg", "app": "npb", "ranks": 64, "machine": "m", "scale": 0.0625,
         "res": {"block": one(1.0, 0.5), "cyclic": one(1.1, 0.6), "random": one(1.2, 0.6), "rankmap-b": one(0.9, 0.4),
                 "rankmap-c": one(0.9, 0.4), "rankmap-c+": one(0.75, 0.25), "scotch": one(0.95, 0.45)},
         "nodes": {"block": 6, "rankmap-c": 6, "rankmap-c+": 8}}
    table._derive(r)
    assert r["competitors"] == ["scotch"] and r["best"] == "scotch"
    assert table.checks(r) == "comm -20% (not <= -30 %)"          # rankmap-b/-c's target, as before
    out = table.extra_text([r], markdown=True).splitlines()
    assert out[2] == "| cg | 64 | m | /16 | 50.0% | 6 | 6 | 8 | 0.900 | 0.900 | 0.750 | 0.800 | 0.800 | 0.500 | 1.000 |"
    assert out[-1] == ("- communication-bound rows among these: 1; communication >= 30 % below block (best of "
                       "rankmap-b/-c/-c+): 1")
    assert "rankmap-c+" not in table.text([r])        # the main table's columns are unchanged


def _predict_work(tmp_path, names=("block",), scales=(1.0, 0.25)) -> Path:
    """A WORK directory with one case (a ring of 4 ranks, traced by hand) replayed on Desmos:
    these placements' hostfiles and results, for the predict phase."""
    from dataclasses import replace

    from conftest import ti_trace
    from rankmap.slurm import platform as plat

    work = tmp_path / "work"
    ring = [[x for _ in range(20) for x in (f"irecv {(r - 1) % 4} 0 100000 2", f"isend {(r + 1) % 4} 0 100000 2",
                                             "waitall 2", "compute 1000")] for r in range(4)]
    (tmp_path / "t").mkdir()
    idx = ti_trace(tmp_path / "t", ring)
    tdir = work / "traces" / "ring-4" / "trace"
    tdir.mkdir(parents=True)
    shutil.copy(idx, tdir / "replay.ti")                # the index names the rank files by their paths
    d = work / "replay" / "ring-4" / "desmos"
    for s in scales:
        plat.write(replace(plat.preset("desmos"), network_scale=s), work / "platforms" / f"desmos-x{s:g}", force=True)
        (d / f"x{s:g}").mkdir(parents=True)
        for n in names:
            (d / f"x{s:g}" / f"hostfile-{n}").write_text("n0\nn1\nn0\nn1\n")
        (d / f"x{s:g}.json").write_text(json.dumps({n: {"simulated_seconds": 1.0, "comm_alone_seconds": 1.0}
                                                    for n in names}))
    return work


def test_predict_refresh_estimates_each_row_afresh(tmp_path, monkeypatch):
    """predict phase: one schedule serves every row (machine, speed) of a case; what predict
    cached on it for one row (the replay chosen for communication alone: flow or in turn,
    decided on a row's first mapping) must not decide the next row's estimate. Each row is
    estimated as `rankmap predict` and the replay phase estimate it, from the schedule read
    anew (before: a row refreshed after one that chose "in turn" kept it, NPB CG 64 on the
    fat tree at x1 estimated 8.7 % low instead of 0.1 %)."""
    from types import SimpleNamespace

    from real_apps import predicted
    from rankmap.mapper.critpath import read_schedule
    from rankmap.mapper.predict import ESTIMATE_BUDGET

    work = _predict_work(tmp_path)

    def read_as_left(trace):                           # the schedule as an earlier row left it
        sched = read_schedule(trace)
        b = f"@{ESTIMATE_BUDGET:g}"                       # predict._replayed's keys
        sched.__dict__.update({"_sharing_alone" + b: "in turn", "_sharing" + b: "in turn", "_epoch": 1})
        return sched
    monkeypatch.setattr(predicted, "read_schedule", read_as_left)
    assert predicted.refresh(work, [SimpleNamespace(name="ring-4")], ["desmos"], [1.0, 0.25], say=lambda *a, **k: None,
                             run=False) == 2
    for s in ("1", "0.25"):
        got = json.loads((work / "replay" / "ring-4" / "desmos" / f"x{s}.json").read_text())["block"]
        assert got["predicted_comm_from"] == "replay (fluid)", got


def test_predict_refresh_estimates_a_row_alike(tmp_path, monkeypatch):
    """predict chooses its replay on a row's first placement and switches it (the schedule's
    epoch) when a later one costs too much: the placements estimated before the switch are
    estimated again, so that one row's placements are all estimated the same way (before:
    NPB CG 64's block by the flow replay, the other ten placements in turn)."""
    from types import SimpleNamespace

    from real_apps import predicted

    names = ("block", "cyclic", "rankmap-b")
    work = _predict_work(tmp_path, names, scales=(1.0,))
    calls = []

    def fake(M, C, machine, slot, net, schedule=None):    # predict._replayed's choice, the second placement costly
        calls.append(1)
        how = schedule.__dict__.setdefault("_sharing_alone", "fluid")
        if len(calls) == 2 and how == "fluid":
            how = schedule.__dict__["_sharing_alone"] = "in turn"
            schedule.__dict__["_epoch"] = schedule.__dict__.get("_epoch", 0) + 1
        return {"seconds": 1.0 if how == "fluid" else 2.0, "seconds_from": f"replay ({how})", "limited_by": "links",
                "bounds": {}, "latency": 0.0, "latency_from": "critical path"}
    monkeypatch.setattr(predicted, "predict", fake)
    assert predicted.refresh(work, [SimpleNamespace(name="ring-4")], ["desmos"], [1.0], say=lambda *a, **k: None,
                             run=False) == 3
    got = json.loads((work / "replay" / "ring-4" / "desmos" / "x1.json").read_text())
    assert len(calls) == 4                                # block again, after cyclic switched the replay
    assert {v["predicted_comm_from"] for v in got.values()} == {"replay (in turn)"}
    assert {v["predicted_comm_seconds"] for v in got.values()} == {2.0}
