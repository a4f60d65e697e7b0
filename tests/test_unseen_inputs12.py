"""Round 12 of a new user's bad inputs: the benchmark scripts as a user runs them
(bench/real_apps.py, bench/mapper_anchors.py, bench/mapper_standard.py with a wrong --work,
--only, --scales, --sizes, --shapes, --seeds, --hier, --graphs or --competitors, outputs in a
missing directory, recordings of another version, a cached row cut short and a full disk),
RANKMAP_COLL_GRID and RANKMAP_PROFILE by hand under a real mpirun, the Python API's traffic()
given a second matrix and write() given another machine, pairs of empty messages, predict
given costs, `platform none`, and a mapping of many slots per node read back. Each test failed
before its fix (the controls, inputs that must still be taken, pass on both); the runs are real
(the scripts, the CLI, the API, mpirun)."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import rankmap
from conftest import ROOT, app, launcher, preloaded_ring
from rankmap.profiler.errors import UserError

BENCH = ROOT / "bench"


def bench(script: str, *args, cwd=None, timeout: float = 120) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, str(BENCH / script), *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def one_line(res, fragment: str) -> None:
    """The script failed at once with one line naming `fragment`, and no traceback."""
    assert res.returncode != 0, res.stdout[-2000:]
    assert "Traceback" not in res.stderr, res.stderr[-3000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], res.stderr[-3000:]


# --------------------------------------------------------------------------- bench/real_apps.py

@pytest.mark.parametrize("args, fragment", [
    (["table", "--scales", "abc"], "--scales: 'abc' is not a network speed"),       # ValueError traceback
    (["replay", "--scales", "1,0"], "--scales: '0' is not a network speed"),        # taken: rows of no file
    (["table", "--scales", "nan"], "--scales: 'nan' is not a network speed"),
    (["table", "--scales", "-1"], "--scales: '-1' is not a network speed"),
])
def test_real_apps_scales_that_are_no_speed_are_refused(tmp_path, args, fragment):
    (tmp_path / "w" / "replay").mkdir(parents=True)
    one_line(bench("real_apps.py", "--sources", tmp_path, "--work", tmp_path / "w", *args), fragment)


@pytest.mark.parametrize("phase", ["trace", "graphs", "replay", "build"])
def test_real_apps_only_that_matches_no_case_says_so(tmp_path, phase):
    """--only with a misspelt fragment ran nothing, said nothing, and exited 0."""
    (tmp_path / "w" / "replay").mkdir(parents=True)
    one_line(bench("real_apps.py", "--sources", tmp_path, "--work", tmp_path / "w", phase, "--only", "lulseh"),
             "--only lulseh: no case of this set matches")


@pytest.mark.parametrize("phase", ["table", "predict", "floor"])
@pytest.mark.parametrize("work", ["missing", "file", "empty"])
def test_real_apps_reading_phases_need_a_work_directory(tmp_path, phase, work):
    """A mistyped --work printed empty tables ("no replayed rows yet"), or "predict recomputed"
    for every case while nothing was, and exited 0."""
    w = tmp_path / "w"
    if work == "file":
        w.write_text("x")
    elif work == "empty":
        w.mkdir()
    res = bench("real_apps.py", "--sources", tmp_path, "--work", w, phase)
    one_line(res, f"--work {w}: ")
    assert "predict recomputed" not in res.stdout


def test_real_apps_table_json_in_a_missing_directory_is_refused_first(tmp_path):
    (tmp_path / "w" / "replay").mkdir(parents=True)
    one_line(bench("real_apps.py", "--sources", tmp_path, "--work", tmp_path / "w", "table", "--json",
                   tmp_path / "nodir" / "rows.json"), "nodir is no directory")


def test_real_apps_unknown_competitor_is_refused(tmp_path):
    """table --competitors nosuch left it out of the tables without a word."""
    (tmp_path / "w" / "replay").mkdir(parents=True)
    one_line(bench("real_apps.py", "--sources", tmp_path, "--work", tmp_path / "w", "table", "--competitors",
                   "scotch,sharedmap"), "--competitors: unknown competitor 'sharedmap'")


def test_real_apps_tables_of_an_empty_work_directory_still_print(tmp_path):
    (tmp_path / "w" / "replay").mkdir(parents=True)
    res = bench("real_apps.py", "--sources", tmp_path, "--work", tmp_path / "w", "table", "--competitors", "scotch",
                "--scales", "1,0.25", "--only", "lulesh")
    assert res.returncode == 0 and "no replayed rows yet" in res.stdout, res.stderr


def test_real_apps_sources_that_is_a_file_says_so(tmp_path):
    f = tmp_path / "npb.tar.gz"
    f.write_bytes(b"\x1f\x8b")
    one_line(bench("real_apps.py", "--sources", f, "sources"), "a file, not a directory")


# --------------------------------------------------------------------------- bench/mapper_anchors.py

@pytest.mark.parametrize("args, fragment", [
    (["--sizes", "2k"], "--sizes: unknown size '2k'"),                 # ran only the families without a size
    (["--shapes", "tree"], "--shapes: unknown shape 'tree'"),          # ran only the families without a shape
    (["--seeds", "1000"], "--seeds: 1000 is no seed of the tune set"),  # dropped without a word
    (["--seeds", "x"], "--seeds 'x': first, all or a comma list"),     # ValueError traceback
])
def test_mapper_anchors_selection_of_no_instance_is_refused(args, fragment):
    one_line(bench("mapper_anchors.py", *args, "--list"), fragment)


@pytest.mark.parametrize("args, fragment", [
    (["--timeout", "-1"], "--timeout -1: must be a positive number"),  # every mapper "no answer within -1 s"
    (["--budget", "0"], "--budget 0: must be a positive number"),
    (["--rankmap-time-limit", "0"], "--rankmap-time-limit 0: must be a positive number"),
])
def test_mapper_anchors_limits_that_stop_everything_are_refused(args, fragment):
    one_line(bench("mapper_anchors.py", "--families", "apps64", "--only", "lulesh", "--competitors", "block", *args),
             fragment)


@pytest.mark.parametrize("script", ["mapper_anchors.py", "mapper_standard.py"])
@pytest.mark.parametrize("opt", ["--json", "--csv", "--markdown"])
def test_bench_output_in_a_missing_directory_is_refused_before_the_run(tmp_path, script, opt):
    """A traceback when the file was written: after the first instance (--json) or after the
    whole run (--csv, --markdown), its results lost."""
    sel = (["--families", "apps64", "--only", "lulesh"] if script == "mapper_anchors.py"
           else ["--graphs", "3elt", "--hier", "4:8:1"])
    res = bench(script, *sel, "--competitors", "block", opt, tmp_path / "nodir" / "out")
    one_line(res, "nodir is no directory; create it first")
    assert "versions:" not in res.stdout      # refused before anything ran


@pytest.mark.parametrize("script", ["mapper_anchors.py", "mapper_standard.py"])
def test_bench_two_outputs_in_one_file_are_refused(tmp_path, script):
    sel = (["--families", "apps64", "--only", "lulesh"] if script == "mapper_anchors.py"
           else ["--graphs", "3elt", "--hier", "4:8:1"])
    one_line(bench(script, *sel, "--competitors", "block", "--json", tmp_path / "o", "--csv", tmp_path / "o"),
             "also given to --json")


def test_mapper_anchors_outputs_that_can_be_written_still_run(tmp_path):
    res = bench("mapper_anchors.py", "--families", "apps64", "--only", "lulesh", "--competitors", "block",
                "--no-rankmap", "--json", tmp_path / "a.json", "--csv", tmp_path / "a.csv", timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    assert (tmp_path / "a.json").stat().st_size and (tmp_path / "a.csv").stat().st_size


# --------------------------------------------------------------------------- bench/mapper_standard.py

@pytest.mark.parametrize("hier", ["4:8", "a:b:c", "0:8:2", "4:8:2:1"])
def test_mapper_standard_hierarchy_that_is_not_one_is_refused(hier):
    """ValueError (unpack, int()) or ZeroDivisionError tracebacks."""
    one_line(bench("mapper_standard.py", "--graphs", "3elt", "--hier", hier), f"--hier '{hier}': expected a1:a2:r")


def test_mapper_standard_missing_graph_is_refused_before_the_others_run(tmp_path):
    """FileNotFoundError traceback, after every graph before it in the list had run."""
    res = bench("mapper_standard.py", "--graphs", "3elt,3elf", "--hier", "4:8:1", "--competitors", "block")
    one_line(res, "--graphs: '3elf' is neither a METIS file nor a graph of the benchmark")
    assert "3elt 4:8:1" not in res.stdout


def test_mapper_standard_file_that_is_no_metis_graph_is_named(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("src,dst,bytes\n0,1,5\n")
    one_line(bench("mapper_standard.py", "--graphs", f, "--hier", "1:1:1", "--no-rankmap", "--competitors", "block"),
             f"--graphs {f}: not a METIS graph")


@pytest.mark.parametrize("args, fragment", [
    (["--competitors", "scotch,sharedmap"], "--competitors: unknown competitor 'sharedmap'"),   # a row of "error"
    (["--eps", "-1"], "--eps -1: the imbalance is a fraction in [0, 1)"),     # UserError traceback
    (["--timeout", "0"], "--timeout 0: must be a positive number"),
])
def test_mapper_standard_options_are_checked_before_the_run(args, fragment):
    res = bench("mapper_standard.py", "--graphs", "3elt", "--hier", "4:8:1", *args)
    one_line(res, fragment)
    assert "versions:" not in res.stdout


# --------------------------------------------------------------------------- the collective kernels

@pytest.mark.parametrize("grid, why", [("2x3", "its product is not the world's 4 ranks"),
                                       ("abc", "not a grid of 4 ranks"), ("4x", "not a grid of 4 ranks"),
                                       ("2x2junk", "not a grid of 4 ranks")])
def test_coll_grid_that_is_no_grid_of_the_world_is_reported(apps, grid, why):
    """docs/collectives.md: bad values are reported and ignored. RANKMAP_COLL_GRID was ignored
    without a word while the kernels said "order: grid"."""
    from rankmap.profiler import native
    lib = str(native.artifact("collectives", "openmpi"))
    env = {"LD_PRELOAD": lib, "RANKMAP_COLL": "force", "RANKMAP_COLL_VERBOSE": "1", "RANKMAP_COLL_GRID": grid}
    xs = [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    res = subprocess.run(launcher("openmpi", 4) + xs + [str(app(apps, "onecoll", "openmpi")), "allreduce", "65536"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, **env))
    assert res.returncode == 0, res.stderr[-2000:]
    out = res.stdout + res.stderr
    assert f"rankmap-coll: ignoring RANKMAP_COLL_GRID={grid}: {why}" in out, out[-2000:]
    assert out.count("ignoring RANKMAP_COLL_GRID") == 1
    assert "(order: nodes" in out and "order: grid" not in out


def test_coll_grid_of_the_world_is_still_used(apps):
    from rankmap.profiler import native
    lib = str(native.artifact("collectives", "openmpi"))
    env = {"LD_PRELOAD": lib, "RANKMAP_COLL": "force", "RANKMAP_COLL_VERBOSE": "1", "RANKMAP_COLL_GRID": "2x2"}
    xs = [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    res = subprocess.run(launcher("openmpi", 4) + xs + [str(app(apps, "onecoll", "openmpi")), "allreduce", "65536"],
                         capture_output=True, text=True, timeout=120, env=dict(os.environ, **env))
    out = res.stdout + res.stderr
    assert res.returncode == 0 and "(order: grid, grid 2x2)" in out and "ignoring" not in out, out[-2000:]


# --------------------------------------------------------------------------- the Python API

def test_api_traffic_with_a_second_matrix_is_refused():
    """rankmap.traffic(bytes, msgs): the message counts became the traffic's `source` (its
    name in every message and in report.json) and were dropped without a word."""
    with pytest.raises(UserError, match="source: expected a name"):
        rankmap.traffic(np.ones((4, 4)), np.full((4, 4), 3))
    assert rankmap.traffic(np.ones((4, 4)), "mine").source == "mine"


# --------------------------------------------------------------------------- reading a mapping

def test_a_binding_file_of_many_slots_per_node_is_read_quickly(tmp_path):
    """Each rank's slot was found by scanning every free slot of its node: quadratic in the
    slots per node. 16,000 ranks bound on 2 nodes of 8,000 slots: 12 s for `evaluate` (10^6 ranks on
    nodes of 1,000 slots: 100 s for `evaluate`, whose `map` took 8 s); now 2 s (21 s)."""
    import time
    from conftest import run_cli
    n = 16000
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,15999,5\n3,8001,7\n")
    (tmp_path / "binding.txt").write_text("".join(f"{r} n{1 + r * 2 // n} {(r % 8000) // 2}\n" for r in range(n)))
    t0 = time.perf_counter()
    res = run_cli("evaluate", tmp_path / "t.csv", tmp_path / "binding.txt", "--nodes", "n[1-2]", "--node-topology",
                  "pack:2 core:2000", "--oversubscribe", "2", "--json")
    took = time.perf_counter() - t0
    assert res.returncode == 0, res.stderr
    assert took < 6, took


# --------------------------------------------------------------------------- rankmap platform

def test_platform_none_with_a_network_is_what_the_help_says(tmp_path):
    """`rankmap platform --help`: NAME ... "or none with --torus/--fat-tree/--dragonfly";
    `rankmap platform none --torus 2x2` said "unknown platform 'none'"."""
    from conftest import one_error_line, run_cli
    res = run_cli("platform", "none", "--torus", "2x2", "--out", tmp_path / "p")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "p" / "machine.json").is_file()
    one_error_line(run_cli("platform", "none", "--out", tmp_path / "q"), "give a platform name")
    one_error_line(run_cli("platform", "desmso", "--out", tmp_path / "r"),
                   "unknown platform 'desmso'; known: angara-k1, desmos, fat-tree, dragonfly (or none with --torus")


# --------------------------------------------------------------------------- empty messages

@pytest.mark.parametrize("rows, said", [
    ("0,1,0,1000\n1,0,0,1000\n", "no bytes between distinct ranks: every placement costs the same to the mapping"),
    ("0,1,0,1000\n1,0,0,1000\n2,3,1,1\n3,2,1,1\n", "2 rank(s) exchange no bytes; each is mapped anyway"),
])
def test_pairs_of_empty_messages_are_not_said_to_exchange_nothing(tmp_path, rows, said):
    """1,000 zero-byte messages each way between ranks 0 and 1: the note said "no traffic
    between distinct ranks: every placement costs the same" (or "2 rank(s) exchange
    nothing"), while `rankmap predict` puts them at 2 s between two nodes and 0.2 ms on one."""
    import json
    from conftest import run_cli
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes,messages\n" + rows)
    res = run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", "core:2", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    notes = " ".join(json.loads(res.stdout)["notes"])
    assert said in notes and "exchange nothing" not in notes and "no traffic between" not in notes, notes
    assert "2000 empty message(s) in 2 directed pair(s)" in notes and "rankmap predict estimates it" in notes


def test_traffic_without_messages_keeps_its_note(tmp_path):
    import json
    from conftest import run_cli
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes,messages\n0,1,0,0\n1,0,0,0\n")
    res = run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", "core:1", "--out", tmp_path / "m", "--json")
    assert "no traffic between distinct ranks: every placement costs the same, so the block order is returned" in \
        json.loads(res.stdout)["notes"]


def test_api_write_records_the_cost_on_the_machine_given(tmp_path):
    """rankmap.write(out, t, m2, rankmap.map(t, m)): report.json said the cost on m (2.5e11 here)
    beside m2's machine.json, where the mapping costs 4x that, without a word."""
    import json
    from rankmap.mapper.graph import from_traffic
    from rankmap.mapper.refine import Problem
    rng = np.random.default_rng(1)
    w = np.zeros((64, 64))
    for i in range(64):
        for d in (1, 2, 7):
            w[i, (i + d) % 64] = rng.integers(1, 10**6)
    t = rankmap.traffic(w)
    m = rankmap.machine("n[1-4]", "pack:2 core:8")
    m2 = rankmap.machine("n[1-4]", "pack:4 core:4", level_costs="5000,100,10")
    res = rankmap.map(t, m, seed=0)
    on_m2 = Problem(from_traffic(t), m2).cost(res.slot_of_rank)
    assert on_m2 > 1.5 * res.cost
    rep = json.loads((rankmap.write(tmp_path / "w2", t, m2, res) / "report.json").read_text())
    assert rep["cost"] == pytest.approx(on_m2)
    assert any("it was mapped onto another machine" in n for n in rep["notes"])
    rep = json.loads((rankmap.write(tmp_path / "w1", t, m, res) / "report.json").read_text())
    assert rep["cost"] == pytest.approx(res.cost) and not any("another machine" in n for n in rep["notes"])


# --------------------------------------------------------------------------- bench/real_apps.py's cached rows

def _cached_row(work):
    """WORK as the replay phase leaves it for one row (npb-sp-C-16 on angara-k1 at x1): a
    16-rank trace, the platform, each placement's hostfile and replayed times."""
    import json
    from conftest import run_cli
    d = work / "traces" / "npb-sp-C-16" / "trace"
    (d / "t.ti_files").mkdir(parents=True)
    files = []
    for r in range(16):
        f = d / "t.ti_files" / f"1_rank-{r + 1}.txt"
        acts = ["init", f"isend {(r + 1) % 16} 0 100000 2", f"irecv {(r - 1) % 16} 0 100000 2", "waitall", "finalize"]
        f.write_text("".join(f"{r} {a}\n" for a in acts))
        files.append(str(f))
    (d / "replay.ti").write_text("\n".join(files) + "\n")
    res = run_cli("platform", "angara-k1", "--out", work / "platforms" / "angara-k1-x1")
    assert res.returncode == 0, res.stderr
    row = work / "replay" / "npb-sp-C-16" / "angara-k1"
    (row / "x1").mkdir(parents=True)
    times = {}
    for name in ("block", "cyclic", "random", "rankmap-b", "rankmap-c"):
        times[name] = {"simulated_seconds": 1.0, "comm_seconds": 0.5, "comm_alone_seconds": 0.4}
        hosts = [f"n{r % 4}" if name == "cyclic" else f"n{r // 12}" for r in range(16)]
        (row / "x1" / f"hostfile-{name}").write_text("\n".join(hosts) + "\n")
    (row / "x1.json").write_text(json.dumps(times, indent=1) + "\n")
    (row / "placements.json").write_text(json.dumps({"hosts": {}, "map_seconds": {}, "skipped": {}}) + "\n")
    return row / "x1.json"


def test_real_apps_predict_on_a_full_disk_keeps_the_cached_replays(tmp_path):
    """predict rewrote each x<scale>.json in place: on a full disk (here a 1 KiB file size
    limit) the file was cut short, the row's replayed times (hours of simulation) lost, and a
    traceback; every later table then ended in a JSONDecodeError."""
    import resource
    f = _cached_row(tmp_path / "w")
    before = f.read_bytes()

    def small_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               PYTHONDONTWRITEBYTECODE="1")
    res = subprocess.run([sys.executable, str(BENCH / "real_apps.py"), "--work", str(tmp_path / "w"), "predict",
                          "--only", "npb-sp-C-16", "--machines", "angara-k1", "--scales", "1"],
                         capture_output=True, text=True, env=env, timeout=120, preexec_fn=small_files)
    one_line(res, f"cannot write {f}: File too large; the file as it was is kept")
    assert f.read_bytes() == before
    assert sorted(p.name for p in f.parent.iterdir()) == ["placements.json", "x1", "x1.json"]
    res = bench("real_apps.py", "--work", tmp_path / "w", "predict", "--only", "npb-sp-C", "--machines",
                "angara-k1", "--scales", "1")
    assert res.returncode == 0 and "5 placement(s): rankmap predict recomputed" in res.stdout, res.stderr
    assert b"predicted_comm_seconds" in f.read_bytes()
    # said of the case recomputed only (of npb-sp-C-81 too before, which has no replay)
    assert "npb-sp-C-16: predict recomputed" in res.stdout and "npb-sp-C-81" not in res.stdout


@pytest.mark.parametrize("phase", ["table", "predict", "floor"])
def test_real_apps_cached_row_cut_short_is_named(tmp_path, phase):
    f = _cached_row(tmp_path / "w")
    f.write_bytes(f.read_bytes()[:200])
    one_line(bench("real_apps.py", "--work", tmp_path / "w", phase, "--only", "npb-sp-C-16", "--machines",
                   "angara-k1", "--scales", "1"), f"{f}: not readable JSON")


# --------------------------------------------------------------------------- rankmap predict

@pytest.mark.parametrize("args, flag", [(["--level-costs", "1,1,1"], "--level-costs"),
                                        (["--torus", "2", "--hop-cost", "3"], "--hop-cost")])
def test_predict_refuses_costs_it_does_not_use(tmp_path, args, flag):
    """predict estimates time from the network's speeds; --level-costs 1,1,1 or 9000,1,1 was
    taken and the table was the same as without it."""
    import json
    from conftest import one_error_line, run_cli
    (tmp_path / "t.csv").write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 8},1000000\n" for i in range(8)))
    (tmp_path / "probe.json").write_text(json.dumps({"latency_us": {"same socket": 0.1, "neighbour node": 1000},
                                                     "bandwidth_GBps": {"same socket": 10, "neighbour node": 1}}))
    machine = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:2"]
    ok = run_cli("map", tmp_path / "t.csv", *machine, "--out", tmp_path / "m")
    assert ok.returncode == 0, ok.stderr
    res = run_cli("predict", tmp_path / "t.csv", tmp_path / "m", "--probe", tmp_path / "probe.json", *machine, *args)
    one_error_line(res, f"{flag} would be ignored: predict estimates time from the network's speeds")
    res = run_cli("predict", tmp_path / "t.csv", tmp_path / "m", "--probe", tmp_path / "probe.json", *machine)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("script, sel, rows, drop", [
    ("mapper_anchors.py", ["--families", "apps64", "--only", "lulesh"], "records", "instance"),
    ("mapper_anchors.py", ["--families", "apps64", "--only", "lulesh"], "records", "cost"),
    ("mapper_standard.py", ["--graphs", "3elt", "--hier", "4:8:1"], "rows", "hierarchy"),
    ("mapper_standard.py", ["--graphs", "3elt", "--hier", "4:8:1"], "rows", "J"),
])
def test_bench_recording_of_another_version_is_refused(tmp_path, script, sel, rows, drop):
    """--competitors-from a file whose rows lack a field this version reads: a KeyError
    traceback (after the instances before it had run, for a mapper's cost)."""
    import json
    rec = tmp_path / "rec.json"
    res = bench(script, *sel, "--competitors", "block", "--no-rankmap", "--json", rec, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    again = bench(script, *sel, "--competitors", "block", "--no-rankmap", "--competitors-from", rec, timeout=300)
    assert again.returncode == 0 and "Traceback" not in again.stderr, again.stderr[-2000:]
    d = json.loads(rec.read_text())
    row = d[rows][0]
    row.pop(drop, None)
    for e in row.get("mappers", {}).values():
        e.pop(drop, None)
    rec.write_text(json.dumps(d))
    res = bench(script, *sel, "--competitors", "block", "--no-rankmap", "--competitors-from", rec)
    one_line(res, f"--competitors-from {rec}: its {rows} entry 1 has no {drop}")
    assert "another version of this benchmark" in res.stderr


# --------------------------------------------------------------------------- the profiler preloaded by hand

@pytest.mark.parametrize("value, recorded, said", [("off", False, None), ("false", False, None), ("NO", False, None),
                                                   ("0", False, None), ("1", True, None),
                                                   ("of", True, "RANKMAP_PROFILE=of is neither 0/off")])
def test_rankmap_profile_off_as_the_kernels_say_it(apps, tmp_path, value, recorded, said):
    """docs/formats.md: RANKMAP_PROFILE=0 disables the profiler. RANKMAP_COLL=off disables the
    kernels, but RANKMAP_PROFILE=off (or no, false) profiled the run without a word."""
    res = preloaded_ring(apps, tmp_path / "p", RANKMAP_PROFILE=value)
    assert res.returncode == 0, res.stderr[-800:]
    assert (tmp_path / "p" / "ranks.hand.rmp").is_file() == recorded
    if said:
        assert res.stderr.count(said) == 1, res.stderr[-800:]
    else:
        assert "RANKMAP_PROFILE=" not in res.stderr, res.stderr[-800:]
