"""Round 9 of a new user's bad inputs: SMPI traces with lines SimGrid refuses, batch scripts
that could only fail in the job, launcher arguments left empty, options given twice or that
change nothing, Slurm variables set by hand, misspelt level names. Each test failed before its
fix; the runs are real (the CLI)."""
from __future__ import annotations

import json

import pytest

from conftest import one_error_line, run_cli, ti_trace

RING = [["isend 1 0 2000 2", "irecv 1 0 2000 2", "waitall"], ["isend 0 0 2000 2", "irecv 0 0 2000 2", "waitall"]]


@pytest.mark.parametrize("line,fragment", [
    ("sned 1 0 2000 2", "unknown action 'sned'"),                      # skipped: its 2000 bytes lost
    ("recv 1 0 -5 2", "'0 recv 1 0 -5 2' (a receive is"),              # SimGrid replayed 2^64 - 5 bytes
    ("compute -5", "'0 compute -5' (the amount a finite number >= 0)"),  # SimGrid aborted with a backtrace
    ("compute nan", "'0 compute nan'"),
    ("compute 1e400", "'0 compute 1e400'"),
    ("compute", "'0 compute'"),
])
def test_smpi_trace_lines_simgrid_refuses_are_named(tmp_path, line, fragment):
    trace = ti_trace(tmp_path, [[line] + RING[0], RING[1]])
    res = run_cli("convert", trace, tmp_path / "t.csv")
    one_error_line(res, fragment)
    assert "1_rank-1.txt:2:" in res.stderr
    assert not (tmp_path / "t.csv").exists()


def test_smpi_trace_actions_simgrid_knows_still_read(tmp_path):
    """Every action SimGrid 3.32 replays (and the variants its tracer writes) is read; a
    finite amount with a 3-digit exponent too."""
    r0 = ["comm_size 2", "compute 1e300", "compute 12.5", "sleep 0.5", "location 1 2", "test 1 0 0", "barrier",
          "Isend 1 0 100 2", "Irecv 1 0 100 2", "wait 1 0 0", "sendRecv 10 1 0 10 0 2 2", "bcast 8 0 2"] + RING[0]
    r1 = ["comm_size 2", "irecv 0 0 100", "wait 0 1 0", "sendRecv 10 0 0 10 0 2 2", "bcast 8 0 2"] + RING[1]
    res = run_cli("convert", ti_trace(tmp_path, [r0, r1]), tmp_path / "t.csv")
    assert res.returncode == 0, res.stderr


@pytest.fixture
def batch(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.conf").write_text("SwitchName=s1 Nodes=n[1-4]\n")
    (tmp_path / "coords.txt").write_text("n1 0 0\nn2 0 1\nn3 1 0\nn4 1 1\n")
    (tmp_path / "levels.json").write_text('{"level_costs": {"node": 1000, "package": 100, "core": 10}}\n')
    return tmp_path


@pytest.mark.parametrize("args,fragment", [
    # the script passed --nodes "$SLURM_JOB_NODELIST" and then the user's --nodes: the last won,
    # and the job mapped onto nodes Slurm had not given it
    (["--nodes", "n[1-2]"], "--sbatch-arg=--nodelist=HOSTLIST"),
    # map refuses --machine beside --nodes: the script failed after its profile pass, always
    (["--machine", "m"], "--machine m: describes a whole machine"),
    # what the job would refuse after its profile pass is refused now
    (["--network", "foo:4"], "unknown kind 'foo'"),
    (["--node-topology", "pack:0 core:2"], "the count must be >= 1"),
    (["--torus", "2x2", "--coords", "nowhere.txt"], "nowhere.txt: no such file"),
    (["--network", "slurm:nowhere.conf"], "nowhere.conf: no such file"),
    (["--hop-cost", "3"], "prices the links of a torus or mesh"),
])
def test_sbatch_refuses_now_what_the_job_would_fail_on(batch, args, fragment):
    one_error_line(run_cli("sbatch", "-n", "4", "--out", batch / "job", *args, "--", "./app"), fragment)
    assert not (batch / "job").exists()


def test_sbatch_script_names_its_files_by_absolute_paths(batch):
    """The job may start in another directory than the one sbatch ran in."""
    res = run_cli("sbatch", "-n", "4", "--out", batch / "job", "--torus", "2x2", "--coords", "coords.txt",
                  "--level-costs", "@levels.json", "--node-topology", "pack:2 core:1", "--", "./app")
    assert res.returncode == 0, res.stderr
    line = next(ln for ln in (batch / "job" / "rankmap.sbatch").read_text().splitlines()
                if "rankmap map " in ln and not ln.startswith("#"))
    assert f"--coords {batch / 'coords.txt'}" in line and f"--level-costs @{batch / 'levels.json'}" in line
    assert line.count("--nodes") == 1
    res = run_cli("sbatch", "-n", "4", "--out", batch / "job2", "--network", "slurm:t.conf", "--", "./app")
    assert res.returncode == 0, res.stderr
    assert f"--network slurm:{batch / 't.conf'}" in (batch / "job2" / "rankmap.sbatch").read_text()


def test_run_refuses_nodes_it_would_ignore(tmp_path):
    """run maps onto pass 1's nodes: --nodes was dropped without a word."""
    one_error_line(run_cli("run", "-n", "4", "--nodes", "n[1-2]", "--out", tmp_path / "r", "--", "./app"),
                   "--srun-arg=--nodelist=HOSTLIST")


@pytest.fixture(scope="module")
def mapping(tmp_path_factory):
    d = tmp_path_factory.mktemp("m")
    (d / "r4.csv").write_text("src,dst,bytes\n0,1,100\n1,2,100\n2,3,100\n3,0,100\n")
    res = run_cli("map", d / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", d / "m")
    assert res.returncode == 0, res.stderr
    return d


@pytest.mark.parametrize("args", [
    ["srun", "{M}", "--dry-run", "--srun-arg=", "--", "./app"],     # srun took '' as the program, ./app its argument
    ["mpirun", "{M}", "--dry-run", "--mpirun-arg", " ", "--", "./app"],
    ["sbatch", "-n", "4", "--out", "{D}/job", "--sbatch-arg", "", "--", "./app"],
    ["run", "-n", "4", "--srun-arg", "", "--", "./app"],
])
def test_empty_launcher_arguments_are_refused(mapping, args):
    args = [a.replace("{M}", str(mapping / "m")).replace("{D}", str(mapping)) for a in args]
    one_error_line(run_cli(*args), "is empty (an unset shell variable?)")


@pytest.mark.parametrize("value,fragment", [("x", "task count 'x' is not a number"),
                                            ("-3", "task count '-3' must be >= 1"),
                                            ("4.0", "task count '4.0' is not a whole number")])
def test_slurm_ntasks_set_by_hand_is_named(mapping, value, fragment):
    """int('x') was an internal error (srun --dry-run, run); -3 went to srun as its task count."""
    env = {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NTASKS": value}
    one_error_line(run_cli("srun", mapping / "m", "--dry-run", "--", "./app", env=env), f"SLURM_NTASKS: {fragment}")
    ok = run_cli("srun", mapping / "m", "--dry-run", "--", "./app", env=dict(env, SLURM_NTASKS="4"))
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("args,fragment", [
    (["--nodes", "n[1-2]", "--nodes", "n[3-4]"], "--nodes given more than once"),   # mapped onto n[3-4] alone
    (["--nodes", "n[1-2]", "--out", "{D}/a"], "--out given more than once"),
    (["--nodes", "n[1-2]", "--seed", "1", "--seed=2"], "--seed given more than once"),
])
def test_an_option_given_twice_is_refused(mapping, args, fragment):
    args = [a.replace("{D}", str(mapping)) for a in args]
    res = run_cli("map", mapping / "r4.csv", "--node-topology", "pack:2 core:1", *args, "--out", mapping / "b")
    one_error_line(res, fragment)
    assert not (mapping / "a").exists() and not (mapping / "b").exists()


def test_options_that_repeat_and_the_programs_own_arguments_pass(mapping):
    res = run_cli("srun", mapping / "m", "--dry-run", "--srun-arg=-v", "--srun-arg=-l", "--", "./app", "--out", "x",
                  "--out", "y")
    assert res.returncode == 0, res.stderr
    assert "-v -l ./app --out x --out y" in res.stdout
    assert run_cli("map", "--help", "--seed", "1", "--seed", "2").returncode == 0


@pytest.mark.parametrize("args,fragment", [
    (["--per-node", "3"], "--per-node applies only to a simulated cluster"),
    (["--overhead-us", "2"], "--overhead-us applies only to a simulated cluster"),
])
def test_tune_collectives_options_that_would_change_nothing(tmp_path, args, fragment):
    """Without --platform (real MPI) the simulated-only options were ignored."""
    one_error_line(run_cli("tune-collectives", "-n", "4", "--out", tmp_path / "t.txt", *args), fragment)


@pytest.mark.parametrize("costs,fragment", [
    ({"node": 1000, "package": 100, "core": 10, "hops": 5}, "'hops', which no machine has"),
    ({"node": 1000, "package": 100, "core": 10, "nodes": 7}, "'nodes'"),
    ({"node": 1000, "sockets": 100, "core": 10}, "'sockets'"),
])
def test_level_cost_file_with_a_misspelt_level_is_refused(tmp_path, costs, fragment):
    """'hops': 5 was ignored: the torus hop cost stayed the node cost, 1000."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n1,2,100\n2,3,100\n3,0,100\n")
    (tmp_path / "l.json").write_text(json.dumps({"level_costs": costs}))
    args = ["map", tmp_path / "t.csv", "--nodes", "n[1-4]", "--node-topology", "pack:1 core:1", "--torus", "4",
            "--out", tmp_path / "m"]
    one_error_line(run_cli(*args, "--level-costs", f"@{tmp_path / 'l.json'}"), fragment)
    good = dict(costs)
    good.pop(next(k for k in costs if k not in ("node", "package", "core")))
    good.update(package=100, hop=5)
    (tmp_path / "l.json").write_text(json.dumps({"level_costs": good}))
    res = run_cli(*args, "--level-costs", f"@{tmp_path / 'l.json'}")
    assert res.returncode == 0, res.stderr
    assert "hop 5" in res.stdout


@pytest.mark.parametrize("args,fragment", [
    (["--algorithm", "cyclic", "--parallel", "2"], "--algorithm cyclic would be ignored: --parallel N partitions"),
    (["--tries", "4", "--parallel", "2"], "--tries would be ignored: --parallel N partitions once"),
    (["--algorithm", "greedy", "--tries", "5"], "--tries would be ignored: --algorithm greedy computes one mapping"),
    (["--algorithm", "block", "--no-refine"], "--no-refine would be ignored"),
])
def test_map_options_that_would_change_nothing_are_refused(mapping, args, fragment):
    """--parallel with --algorithm cyclic returned PT-Scotch's mapping (the report said ptscotch);
    --tries with one-start algorithms did nothing. No MPI job is started."""
    res = run_cli("map", mapping / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", *args,
                  "--out", mapping / "x")
    one_error_line(res, fragment)
    assert not (mapping / "x").exists()


def test_convert_names_from_not_format(mapping):
    """`convert --from CSV` said "--format 'CSV'", an option convert does not have."""
    one_error_line(run_cli("convert", mapping / "r4.csv", mapping / "o.csv", "--from", "CSV"),
                   "--from 'CSV': unknown traffic format")


@pytest.mark.parametrize("nodes", ["-n1", ".n1,n2"])
def test_a_host_name_starting_with_a_dash_or_dot_says_why(mapping, nodes):
    """'-n1' holds only letters, digits and '-', which the message listed as allowed."""
    one_error_line(run_cli("map", mapping / "r4.csv", "--nodes", nodes, "--node-topology", "pack:2 core:2",
                           "--out", mapping / "x"), "; it starts with a letter or digit")


def test_slurm_conf_that_is_no_file_is_named_at_once(mapping, tmp_path):
    """Slurm's commands retry a missing SLURM_CONF for 60 s: map waited a minute, then said
    only that `scontrol show topology` did not answer (or 'no node topology')."""
    import time
    t0 = time.monotonic()
    res = run_cli("map", mapping / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--network",
                  "slurm", "--out", tmp_path / "m", env={"SLURM_CONF": str(tmp_path / "nowhere.conf")})
    one_error_line(res, f"SLURM_CONF={tmp_path / 'nowhere.conf'}: no such file")
    assert time.monotonic() - t0 < 20


def test_too_many_slots_are_refused_before_they_are_made(mapping, tmp_path):
    """64 cores x --oversubscribe 2^24: 8 GB were allocated (47 s) before the slot limit
    refused them; the message now names --oversubscribe too."""
    import time
    t0 = time.monotonic()
    res = run_cli("map", mapping / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:32",
                  "--oversubscribe", "16777216", "--out", tmp_path / "m")
    one_error_line(res, "or a lower --oversubscribe")
    assert time.monotonic() - t0 < 10


def test_simulated_run_that_cannot_start_leaves_no_directory(tmp_path):
    """-n 999 on 4 cores, or a program that does not exist: the run's --out was made first (its
    marker, the pass-1 hostfile), and a run directory is never reused: the same command, fixed,
    was refused until the user deleted it."""
    assert run_cli("platform", "--torus", "2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    (tmp_path / "app").write_text("#!/bin/sh\n")
    for n, prog, fragment in (("999", tmp_path / "app", "999 ranks do not fit the 4 cores"),
                              ("4", tmp_path / "missing", "no such program")):
        one_error_line(run_cli("run", "--launcher", "smpi", "--platform", tmp_path / "p", "-n", n, "--out",
                               tmp_path / "r", "--", prog), fragment)
        assert not (tmp_path / "r").exists()


def test_run_options_of_the_other_launcher_are_refused(tmp_path):
    assert run_cli("platform", "--torus", "2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    one_error_line(run_cli("run", "-n", "4", "--compute", "explicit", "--", "./app"),
                   "--compute belong to --launcher smpi")
    one_error_line(run_cli("run", "--launcher", "smpi", "--platform", tmp_path / "p", "-n", "4", "--mpi", "mpich",
                           "--", "./app"), "--mpi does not apply to --launcher smpi")


def test_utf16_text_is_named_as_such(mapping, tmp_path):
    """A CSV saved as UTF-16 (Excel's "Unicode text", PowerShell's >) was 'a NUL byte: this is
    a binary file'."""
    f = tmp_path / "t.csv"
    f.write_bytes("src,dst,bytes\n0,1,10\n".encode("utf-16"))
    one_error_line(run_cli("convert", f, tmp_path / "o.csv"), "t.csv: UTF-16 text")
    f.write_bytes("n1\nn1\nn2\nn2\n".encode("utf-16"))
    one_error_line(run_cli("evaluate", mapping / "r4.csv", f, "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1"),
                   "iconv -f UTF-16 -t UTF-8")


@pytest.mark.parametrize("args,fragment", [
    (["--level-costs", "1000,100,10"], "--level-costs: the probe measures the level costs"),
    (["--hop-cost", "5", "--torus", "2"], "--hop-cost: the probe measures"),
    (["--oversubscribe", "2"], "--oversubscribe: the probe times one rank per core"),
])
def test_probe_options_it_would_ignore_or_mismeasure_are_refused(tmp_path, args, fragment):
    """Refused before anything is launched."""
    one_error_line(run_cli("probe", "--nodes", "n[1-2]", "--node-topology", "pack:1 core:2", *args,
                           "--out", tmp_path / "l.json"), fragment)


@pytest.mark.parametrize("args,flag", [
    (["map", "{D}/r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", "{D}/x",
      "--network-speeds", ""], "--network-speeds"),                    # mapped as if not given
    (["predict", "{D}/r4.csv", "{D}/m", "--platform", ""], "--platform"),   # "give --platform DIR"
    (["predict", "{D}/r4.csv", "{D}/m", "--probe", ""], "--probe"),
    (["platform", "--torus", "2", "--dragonfly", "", "--out", "{D}/x"], "--dragonfly"),   # a torus written
    (["platform", "--fat-tree", "", "--out", "{D}/x"], "--fat-tree"),
    (["replay", "{D}/t.ti", "{D}/hf", "--platform", ""], "--platform"),     # read as '.'
    (["tune-collectives", "-n", "4", "--out", "{D}/t.txt", "--platform", ""], "--platform"),   # real MPI instead
    (["tune-collectives", "-n", "4", "--out", "{D}/t.txt", "--sizes", ""], "--sizes"),       # the default sizes
    (["run", "--launcher", "smpi", "--platform", "", "-n", "2", "--", "./app"], "--platform"),
])
def test_an_empty_value_is_an_error_not_not_given(mapping, args, flag):
    args = [a.replace("{D}", str(mapping)) for a in args]
    one_error_line(run_cli(*args), f"Invalid value for '{flag}': '' is empty (an unset shell variable?)")
    assert not (mapping / "x").exists()


def test_open_mpi_monitoring_dump_missing_its_last_ranks_is_refused(tmp_path):
    """Ranks 2 and 3 of a 4-rank run wrote no file (they died before MPI_Finalize): the missing
    ranks were below no file, so the gap check missed them, and their sends were silently
    missing (4 ranks read, 2 of them mute)."""
    (tmp_path / "mon.0.prof").write_text("E\t0\t1\t100 bytes\t1 msgs sent\nE\t0\t3\t50 bytes\t1 msgs sent\n")
    (tmp_path / "mon.1.prof").write_text("E\t1\t0\t100 bytes\t1 msgs sent\n")
    one_error_line(run_cli("convert", tmp_path / "mon.0.prof", tmp_path / "o.csv"),
                   "rank 3 is sent to, but there is no file for ranks 2-3")


def test_open_mpi_monitoring_files_of_two_runs_are_refused(tmp_path):
    """Each rank writes its own sends (first field its rank): a file holding another rank's
    lines is a mix-up, read as if that rank had sent them twice."""
    (tmp_path / "mon.0.prof").write_text("E\t0\t1\t100 bytes\t1 msgs sent\n")
    (tmp_path / "mon.1.prof").write_text("E\t0\t1\t100 bytes\t1 msgs sent\n")
    one_error_line(run_cli("convert", tmp_path / "mon", tmp_path / "o.csv", "--from", "ompi"),
                   "mon.1.prof:1: a line of rank 0 in the file of rank 1")


def test_a_mapping_whose_machine_another_option_displaces_says_so(mapping):
    """`evaluate T m/ --torus 2` said only "no node list: pass --nodes", as if m/ had no machine."""
    one_error_line(run_cli("evaluate", mapping / "r4.csv", mapping / "m", "--torus", "2"),
                   "is used only when no machine option is given: add --nodes and --node-topology, or drop --torus")


@pytest.mark.parametrize("args,fragment", [
    (["--collectives", "ring"], "--collectives ring would be ignored: {D}/r4.csv is csv traffic, which holds no "
                                "collective calls"),
    (["--allow-partial"], "--allow-partial would be ignored"),
])
def test_traffic_options_a_plain_matrix_cannot_use_are_refused(mapping, tmp_path, args, fragment):
    """A CSV mapped with --collectives ring was mapped as if the option had not been given."""
    fragment = fragment.replace("{D}", str(mapping))
    one_error_line(run_cli("map", mapping / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", *args,
                           "--out", tmp_path / "x"), fragment)
    one_error_line(run_cli("convert", mapping / "r4.csv", tmp_path / "o.csv", *args), fragment)
    assert not (tmp_path / "o.csv").exists()
    # the default, given explicitly, changes nothing and passes
    assert run_cli("convert", mapping / "r4.csv", tmp_path / "o.csv", "--collectives", "auto").returncode == 0


def test_an_npz_under_another_extension_is_read_by_its_content(mapping, tmp_path):
    """`convert --to npz x.csv` writes an archive under .csv; reading it back said 'a NUL byte:
    this is a binary file, not a traffic file'."""
    assert run_cli("convert", mapping / "r4.csv", tmp_path / "x.csv", "--to", "npz").returncode == 0
    res = run_cli("convert", tmp_path / "x.csv", tmp_path / "back.csv")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "back.csv").read_text() == (mapping / "r4.csv").read_text()


def test_a_workflow_directory_given_as_the_profile_points_to_its_profile(tmp_path):
    """`map RUN/` (the directory `rankmap run` or `sbatch` wrote) said 'no profile data ... was
    the profiler preloaded?'; the profile is RUN/profile."""
    assert run_cli("sbatch", "-n", "2", "--out", tmp_path / "job", "--", "./app").returncode == 0
    (tmp_path / "job" / "profile").mkdir()
    for args in (["map", tmp_path / "job", "--nodes", "n1", "--node-topology", "pack:1 core:2", "--out",
                  tmp_path / "m"], ["show-profile", tmp_path / "job"]):
        one_error_line(run_cli(*args), f"a workflow directory (rankmap run or sbatch), not a profile; its profile is "
                                       f"{tmp_path / 'job' / 'profile'}")


def test_rankmap_alone_prints_its_help():
    """`rankmap` with no command printed its whole help squashed into one 'rankmap: error:' line."""
    res = run_cli()
    assert res.returncode == 2 and "rankmap: error" not in res.stderr + res.stdout
    assert res.stdout.startswith("Usage: rankmap") and "\n  map " in res.stdout


def test_csv_rows_that_repeat_a_pair_are_added_with_a_note(tmp_path):
    """Two exports of one run, concatenated, were read as twice the traffic without a word."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n1,0,5\n0,1,100\n")
    res = run_cli("convert", tmp_path / "t.csv", tmp_path / "o.csv")
    assert res.returncode == 0, res.stderr
    assert "note: 1 row(s) repeat a (src, dst) pair of an earlier row" in res.stdout
    assert "0,1,200" in (tmp_path / "o.csv").read_text()
