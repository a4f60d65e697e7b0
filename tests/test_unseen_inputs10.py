"""Round 10 of a new user's bad inputs: profile runs that recorded nothing, topology.conf lines
Slurm refuses, file names that are not text, SIGTERM in the middle of a command, symbolic
links as outputs, simulated clusters too small for the ranks asked, --imbalance past the
slot limit, tiny traffic called a process grid, batch output paths with '%'. Each test failed
before its fix; the runs are real (the CLI; a new process where a signal is sent)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import ROOT, one_error_line, run_cli

R16 = "src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 16},1000\n{i},{(i + 4) % 16},500\n" for i in range(16))


@pytest.fixture
def r16(tmp_path):
    f = tmp_path / "r16.csv"
    f.write_text(R16)
    return f


def _env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return e


# --------------------------------------------------------------------------- profile runs that recorded nothing

@pytest.mark.parametrize("program,fragment", [
    (["/bin/true"], "no rank wrote profile data"),            # not an MPI program (or the launcher failed at once)
    (["./no-such-program"], "command not found"),
    # a directory, a file that is no program: internal errors (PermissionError, Exec format error)
    (["/"], "/: cannot be run (Permission denied; is it a program?)"),
    (["./t.c"], "./t.c: cannot be run (Permission denied; is it a program?)"),
    (["./noshebang"], "./noshebang: cannot be run (Exec format error; is it a program?)"),
])
def test_a_profile_that_recorded_nothing_leaves_no_directory(tmp_path, program, fragment):
    """The run directory (run.json and the marker only) was kept, and a run directory is never
    reused: the same command, fixed, was refused ('already exists') until the user deleted it."""
    out = tmp_path / "run"
    (tmp_path / "t.c").write_text("int main(void) { return 0; }\n")
    (tmp_path / "noshebang").write_text("echo hi\n")
    (tmp_path / "noshebang").chmod(0o755)
    for _ in range(2):                      # the second time: the same error, not 'already exists'
        res = run_cli("profile", "--launcher", "env", "--out", out, "--", *program, cwd=tmp_path)
        one_error_line(res, fragment)
        assert "was removed, so the same --out can be used again" in res.stderr
        assert not out.exists()
    # an empty directory the user made stays (empty: usable again)
    out.mkdir()
    one_error_line(run_cli("profile", "--launcher", "env", "--out", out, "--", *program, cwd=tmp_path), fragment)
    assert out.is_dir() and not any(out.iterdir())


# --------------------------------------------------------------------------- topology.conf lines Slurm refuses

@pytest.mark.parametrize("conf,fragment", [
    # the top switch's line was dropped: its two leaves hung under nothing
    ("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwtchName=s0 Switches=s[1-2]\n",
     "t.conf:3: unknown key 'SwtchName'"),
    ("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName s0 Switches=s[1-2]\n",
     "t.conf:3: 'SwitchName' is not Key=Value"),
    # the last Nodes= won: 'host n1 is under no switch or block'
    ("SwitchName=s1 Nodes=n[1-2] Nodes=n[3-4]\n", "t.conf:1: Nodes= given twice on one line"),
    # the first BlockSizes= won, the later one (meant to change it) was ignored
    ("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2\nBlockSizes=4\n",
     "t.conf:4: BlockSizes= given again (first on line 3)"),
    # scontrol's BlockSize= for BlockSizes=: Slurm's default aggregates were used
    ("BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSize=4\n",
     "t.conf:3: a line of neither a switch (SwitchName=) nor a block"),
])
def test_topology_conf_lines_slurm_refuses_are_named(tmp_path, r16, conf, fragment):
    (tmp_path / "t.conf").write_text(conf)
    one_error_line(run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--network",
                           f"slurm:{tmp_path / 't.conf'}", "--out", tmp_path / "m"), fragment)
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize("conf", [
    # scontrol show topology's own lines, saved to a file, and LinkSpeed= with a comment
    "SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]\nSwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[3-4]\n"
    "SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]\n",
    "switchname=s1 nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=s0 Switches=s[1-2] LinkSpeed=100 # top\n",
    "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockSizes=2,4\n",
])
def test_topology_conf_lines_slurm_takes_still_read(tmp_path, r16, conf):
    (tmp_path / "t.conf").write_text(conf)
    res = run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--network",
                  f"slurm:{tmp_path / 't.conf'}", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr


# --------------------------------------------------------------------------- file names that are not text

@pytest.mark.parametrize("name", [b"tr\xe9.csv", b"nl\nx.csv"])
@pytest.mark.parametrize("ext", ["mtx", "graph"])
def test_convert_writes_any_source_name_into_a_readable_file(tmp_path, name, ext):
    """A source named in Latin-1 (a byte that is not UTF-8) was an internal error writing the
    comment line of a .mtx or METIS graph; a name with a newline wrote a METIS graph whose
    second line was the name's rest ('bad METIS header')."""
    src = os.path.join(os.fsencode(tmp_path), name)
    with open(src, "w") as f:
        f.write(R16)
    out = tmp_path / f"o.{ext}"
    res = run_cli("convert", os.fsdecode(src), out)
    assert res.returncode == 0, res.stderr
    back = run_cli("convert", out, tmp_path / "back.csv")
    assert back.returncode == 0, back.stderr
    assert back.stdout.startswith("16 ranks")


# --------------------------------------------------------------------------- SIGTERM

def test_sigterm_stops_the_profiled_job_too(tmp_path):
    """kill, `timeout`, scancel and Slurm's time limit send SIGTERM: rankmap died at once and
    the launcher (started in its own process group) and its ranks ran on, orphaned (run.json
    kept exit_code null). Now SIGTERM is handled as Ctrl-C is: the job is stopped."""
    pidfile = tmp_path / "pid"
    proc = subprocess.Popen([sys.executable, "-m", "rankmap.cli", "profile", "--launcher", "env", "--out",
                             tmp_path / "run", "--", "sh", "-c", f"echo $$ > {pidfile}; exec sleep 120"],
                            env=_env(), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.monotonic() - t0 < 60:
            time.sleep(0.1)
        child = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=60)
        t0 = time.monotonic()
        alive = True
        while alive and time.monotonic() - t0 < 20:
            try:
                os.kill(child, 0)
                with open(f"/proc/{child}/stat") as f:          # a zombie is dead too
                    alive = f.read().split(")")[-1].split()[0] != "Z"
                time.sleep(0.2)
            except (ProcessLookupError, FileNotFoundError):
                alive = False
        assert not alive, "the profiled program outlived rankmap"
        # (no rank of `sleep` wrote profile data: the run directory went with it)
        assert not (tmp_path / "run").exists()
    finally:
        if proc.poll() is None:
            proc.kill()


def test_sigterm_while_mapping_is_one_line_and_exit_143(tmp_path, r16):
    """The map is interrupted by SIGTERM where the signal arrives: one error line, status 143
    (128 + SIGTERM), no traceback, no temporary directory next to --out."""
    code = ("import os, signal, sys\n"
            "from rankmap.mapper import writers\n"
            "real = writers.write_mapping\n"
            "def stop(*a, **k):\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    return real(*a, **k)\n"
            "writers.write_mapping = stop\n"
            "import rankmap.mapper.mapping as mm\n"
            "mm.writers.write_mapping = stop\n"
            "from rankmap.cli import main\n"
            f"sys.argv = ['rankmap', 'map', {str(r16)!r}, '--nodes', 'n[1-4]', '--node-topology', 'pack:2 core:2',"
            f" '--out', {str(tmp_path / 'm')!r}]\n"
            "main()\n")
    res = subprocess.run([sys.executable, "-c", code], env=_env(), cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 143, res.stderr
    errors = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert errors == ["rankmap: error: terminated (SIGTERM); outputs being written were left as they were"], res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r16.csv"]


# --------------------------------------------------------------------------- symbolic links as outputs

def test_out_that_is_a_symlink_is_written_where_it_points(tmp_path, r16):
    """`--out latest --force`, latest -> map-v3: the rename into place replaced the link itself
    (latest became a directory of its own, map-v3 stayed the old mapping) and a temporary
    `.latest.tmp-*` link was left behind. The mapping now goes where the link points."""
    args = ["map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--out"]
    assert run_cli(*args, tmp_path / "map-v3").returncode == 0
    (tmp_path / "latest").symlink_to("map-v3")
    res = run_cli(*args, tmp_path / "latest", "--algorithm", "cyclic", "--force")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "latest").is_symlink() and os.readlink(tmp_path / "latest") == "map-v3"
    assert (tmp_path / "map-v3" / "hostfile").read_text().split()[:2] == ["n1", "n2"]      # the cyclic mapping
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest", "map-v3", "r16.csv"]
    # a file output through a link: the link stays, the file it names is replaced
    (tmp_path / "o.mtx").write_text("old\n")
    (tmp_path / "lk.mtx").symlink_to("o.mtx")
    assert run_cli("convert", r16, tmp_path / "lk.mtx", "--force").returncode == 0
    assert (tmp_path / "lk.mtx").is_symlink() and "MatrixMarket" in (tmp_path / "o.mtx").read_text()


# --------------------------------------------------------------------------- simulated clusters, --imbalance

def test_tune_collectives_on_too_small_a_platform_says_so(tmp_path):
    """-n 64 on 4 nodes of 4 cores: 'host n4 is not a node of the simulated cluster' named a
    host the user never gave. Refused before any timing starts; no temporary hostfile left."""
    assert run_cli("platform", "--torus", "2x2", "--cores", "4", "--out", tmp_path / "p").returncode == 0
    one_error_line(run_cli("tune-collectives", "-n", "64", "--platform", tmp_path / "p", "--out", tmp_path / "t.txt"),
                   "-n 64 at 4 ranks per node (full nodes) needs 16 nodes; the simulated cluster torus-2x2 has 4")
    one_error_line(run_cli("tune-collectives", "-n", "8", "--per-node", "1", "--platform", tmp_path / "p", "--out",
                           tmp_path / "t.txt"), "-n 8 at 1 ranks per node needs 8 nodes")


def test_imbalance_past_the_slot_limit_names_imbalance(tmp_path):
    """The machine's slot limit said '--oversubscribe 1024 ... or a lower --oversubscribe' to a
    user who gave --imbalance (and is told not to give --oversubscribe with it)."""
    import numpy as np
    import scipy.sparse as sp
    n = 20000
    i = np.arange(n)
    sp.save_npz(tmp_path / "t.npz", sp.csr_matrix((np.ones(n), (i, (i + 1) % n)), shape=(n, n)))
    res = run_cli("map", tmp_path / "t.npz", "--nodes", "n[1-625]", "--node-topology", "pack:2 core:16",
                  "--imbalance", "1023", "--out", tmp_path / "m")
    one_error_line(res, "--imbalance 1023: each of the 20000 cores would take up to 1024")
    assert "oversubscribe" not in res.stderr


# --------------------------------------------------------------------------- a tiny traffic is no process grid

def test_a_ring_with_an_allreduce_is_no_process_grid(tmp_path):
    """4 ranks in a ring plus a recursive-doubling allreduce (0-2, 1-3), as `rankmap profile`
    records a ring: 'the traffic is a 2 x 3 process grid' (6 cells for 4 ranks, every cell a
    neighbour of every other: a grid that fits any traffic)."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n0,1,10040\n0,2,40\n1,0,40\n1,2,10000\n1,3,40\n2,0,40\n2,3,10040\n3,0,10000\n"
                 "3,1,40\n3,2,40\n")
    res = run_cli("map", t, "--nodes", "n1", "--node-topology", "pack:1 core:4", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "process grid" not in res.stdout


# --------------------------------------------------------------------------- sbatch output path

def test_sbatch_output_path_with_a_percent_is_escaped(tmp_path):
    """#SBATCH -o is a Slurm file name pattern: --out 'job%2' made Slurm read '%2' as a
    pattern and write the job's output elsewhere than the directory rankmap names."""
    res = run_cli("sbatch", "-n", "4", "--out", tmp_path / "job%2", "--", "./app", cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    head = (tmp_path / "job%2" / "rankmap.sbatch").read_text().splitlines()
    assert f"#SBATCH -o {tmp_path}/job%%2/slurm-%j.out" in head
    assert f"OUT={tmp_path}/job%2" in head


# --------------------------------------------------------------------------- option values

@pytest.mark.parametrize("costs,fragment", [
    ("1000,,100,10", "cost 2 of 4 is empty"),          # read as 1000,100,10: each cost after it moved up a level
    ("1000,100,10,", "cost 4 of 4 is empty"),          # "$NODE,$PKG,$CORE," with a variable unset
    (",100,10", "cost 1 of 3 is empty"),               # "$NODE,100,10" with $NODE unset: 100,10 for 2 levels
])
def test_level_cost_list_with_an_empty_cost_is_refused(tmp_path, r16, costs, fragment):
    one_error_line(run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 numa:1 core:2", "--level-costs",
                           costs, "--out", tmp_path / "m"), fragment)
    from rankmap.profiler.errors import UserError
    from rankmap.mapper.machine import parse_level_costs
    with pytest.raises(UserError, match=fragment):        # the API's machine() reads them the same way
        parse_level_costs(costs, ["node", "package", "core"])
    res = run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--level-costs", "1000, 100 ,10",
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("spec,fragment", [
    ("4x4x0", "--dragonfly '4x4x0': bad dragonfly dimensions"),
    ("2x2", "--dragonfly '2x2': dragonfly takes GROUPSxROUTERSxNODES"),
])
def test_platform_dragonfly_errors_name_dragonfly(tmp_path, spec, fragment):
    """They named `--network 'dragonfly:4x4x0'`, an option `rankmap platform` does not have."""
    res = run_cli("platform", "--dragonfly", spec, "--out", tmp_path / "p")
    one_error_line(res, fragment)
    assert "--network" not in res.stderr


# --------------------------------------------------------------------------- probe

@pytest.mark.mpi
def test_a_one_node_probe_says_which_costs_it_did_not_measure(tmp_path):
    """On one node of one package the probe measures no pair across packages or nodes; the
    level-cost file held 'package 1e-06, node 10 x ...' as if measured, and map used them
    without a word."""
    import json
    import shutil
    import socket
    from conftest import require
    require(shutil.which("mpirun") is not None, "Open MPI's mpirun not installed")
    res = run_cli("probe", "--nodes", socket.gethostname(), "--node-topology", "pack:1 core:2", "--reps", "2",
                  "--out", tmp_path / "l.json")
    assert res.returncode == 0, res.stderr
    assert "note: package: not measured" in res.stdout and "note: node: not measured" in res.stdout
    notes = json.loads((tmp_path / "l.json").read_text())["notes"]
    assert len(notes) == 2 and notes[1].startswith("node: not measured")


@pytest.mark.mpi
def test_a_probe_launch_that_fails_says_why(tmp_path):
    """Open MPI frames its messages in lines of dashes: the error ended in the last one
    ('the probe run failed (exit 1): -----...')."""
    import shutil
    import socket
    from conftest import require
    require(shutil.which("mpirun") is not None and os.geteuid() == 0, "Open MPI's mpirun, run as root")
    res = run_cli("probe", "--nodes", socket.gethostname(), "--node-topology", "pack:1 core:2", "--reps", "2",
                  "--out", tmp_path / "l.json", env={"OMPI_ALLOW_RUN_AS_ROOT": None,
                                                     "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": None})
    one_error_line(res, "the probe run failed (exit 1): mpirun has detected an attempt to run as root")


def test_replay_of_a_trace_cut_short_does_not_offer_allow_partial(tmp_path):
    """The reader's hint '(--allow-partial uses it anyway)' named an option replay does not
    have (and SimGrid cannot replay such a trace)."""
    from conftest import ti_trace
    trace = ti_trace(tmp_path, [["isend 1 0 2000 2", "irecv 1 0 2000 2", "waitall"],
                                ["isend 0 0 2000 2", "irecv 0 0 2000 2", "waitall"]])
    f = tmp_path / "t.ti_files" / "1_rank-2.txt"
    f.write_text("".join(f.read_text().splitlines(keepends=True)[:2]))        # init, isend: no finalize
    assert run_cli("platform", "--torus", "2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    (tmp_path / "hf").write_text("n0\nn1\n")
    res = run_cli("replay", trace, tmp_path / "hf", "--platform", tmp_path / "p")
    one_error_line(res, "1_rank-2.txt: rank 1's trace ends without '1 finalize'")
    assert "--allow-partial" not in res.stderr and "SimGrid cannot replay a trace cut short" in res.stderr


def test_coordinates_shared_by_two_hosts_name_them(tmp_path, r16):
    """'cs.txt: two nodes share the same torus coordinates' named neither the hosts nor where."""
    (tmp_path / "c.txt").write_text("n1 0 0\nn2 1 0\nn3 0 1\nn4 1 0\n")
    one_error_line(run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--torus", "2x2",
                           "--coords", tmp_path / "c.txt", "--out", tmp_path / "m"),
                   "hosts n2 and n4 have the same torus coordinates 1 0")


@pytest.fixture
def smpi_ok():
    import shutil
    from conftest import require
    require(bool(shutil.which("smpirun") and shutil.which("smpicc")), "SimGrid SMPI (libsimgrid-dev) not installed")


def _processes_running(path: str) -> list[int]:
    """Live processes whose command line holds `path` (zombies are dead)."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{d}/stat") as f:
                state = f.read().split(")")[-1].split()[0]
        except OSError:
            continue
        if path.encode() in cmd and state != "Z":
            out.append(int(d))
    return out


def test_sigterm_stops_a_simulated_run(smpi_ok, tmp_path):
    """`rankmap run --launcher smpi` killed (SIGTERM) or timed out: subprocess.run killed
    smpirun, a script, and the simulation it had started (smpimain) ran on, orphaned, for as
    long as the program took."""
    src = tmp_path / "busy.c"
    src.write_text("#include <mpi.h>\nint main(int c, char **v) { MPI_Init(&c, &v); volatile double x = 0;\n"
                   "for (long i = 0; i < 4000000000L; i++) x += i * 1e-9; MPI_Finalize(); return 0; }\n")
    exe = tmp_path / "busy-smpi"
    subprocess.run(["smpicc", "-O0", "-o", exe, src], check=True, capture_output=True)
    assert run_cli("platform", "--torus", "2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "rankmap.cli", "run", "--launcher", "smpi", "--platform",
                             tmp_path / "p", "-n", "2", "--out", tmp_path / "r", "--", exe], env=_env(), cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.monotonic()
        while not [p for p in _processes_running(str(exe)) if p != proc.pid] and time.monotonic() - t0 < 120:
            time.sleep(0.2)
        assert _processes_running(str(exe)), "the simulation never started"
        time.sleep(1)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 143 and "terminated (SIGTERM)" in err, err
        t0 = time.monotonic()
        while _processes_running(str(exe)) and time.monotonic() - t0 < 20:
            time.sleep(0.2)
        assert not _processes_running(str(exe)), "the simulation outlived rankmap"
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in _processes_running(str(exe)):
            os.kill(pid, signal.SIGKILL)


def test_sbatch_out_with_a_line_break_is_refused(tmp_path):
    """The #SBATCH -o line held the quoted path across two lines: bash stopped at the
    unterminated quote once the job had started."""
    out = tmp_path / "job\nx"
    one_error_line(run_cli("sbatch", "-n", "4", "--out", out, "--", "./app", cwd=tmp_path),
                   "a line break in the path would break the batch script's #SBATCH -o line")
    assert not out.exists()


@pytest.mark.parametrize("model", ["kchain:", "ring:"])
def test_collective_model_with_nothing_after_the_colon_is_refused(tmp_path, model):
    """'kchain:$K' with K unset was kchain with its default K, 'ring:' ring, without a word."""
    from conftest import ti_trace
    trace = ti_trace(tmp_path, [["bcast 8 0 2"], ["bcast 8 0 2"]])
    one_error_line(run_cli("convert", trace, tmp_path / "o.csv", "--collectives", model),
                   f"'{model}': nothing after ':' (an unset shell variable?)")


# --------------------------------------------------------------------------- rankmap run on Slurm (a fake srun)

@pytest.fixture
def fake_srun(tmp_path, monkeypatch):
    """An srun that refuses every step, first on PATH (no real Slurm job is started)."""
    d = tmp_path / "bin"
    d.mkdir()
    (d / "srun").write_text("#!/bin/sh\necho 'srun: error: Unable to create step for job 1' >&2\nexit 1\n")
    (d / "srun").chmod(0o755)
    monkeypatch.setenv("PATH", f"{d}{os.pathsep}{os.environ['PATH']}")
    return {"SLURM_JOB_ID": "1", "SLURM_JOB_NODELIST": "n[1-2]", "SLURM_NTASKS": "4"}


@pytest.mark.parametrize("value,fragment", [
    ("2(x999999999)", "node count '999999999' is too large"),   # a list of 10^9 entries: minutes and GBs, then a hang
    ("x", "CPU count 'x' is not a number"),                       # ignored: the CPU check was skipped
    ("2(x3", "'2(x3' is not CPUS or CPUS(xNODES)"),
])
def test_slurm_cpus_per_node_set_by_hand_is_named(tmp_path, fake_srun, value, fragment):
    t0 = time.monotonic()
    res = run_cli("run", "-n", "4", "--out", tmp_path / "r", "--", "./app",
                  env=dict(fake_srun, SLURM_JOB_CPUS_PER_NODE=value))
    one_error_line(res, "SLURM_JOB_CPUS_PER_NODE")
    assert fragment in res.stderr
    assert time.monotonic() - t0 < 20 and not (tmp_path / "r").exists()


def test_run_whose_pass_1_recorded_nothing_leaves_no_directory(tmp_path, fake_srun):
    """srun refused the step: the workflow directory (workflow.json 'failed', an empty profile)
    was kept, and a workflow directory is never reused: the same command, fixed, was refused."""
    for _ in range(2):
        res = run_cli("run", "-n", "4", "--out", tmp_path / "r", "--", "./app", env=fake_srun)
        one_error_line(res, "before any rank recorded anything")
        assert "was removed, so the same --out can be used again" in res.stderr
        assert not (tmp_path / "r").exists()


def test_predict_network_file_that_is_no_probe_file_says_what_it_is(tmp_path, r16):
    """predict's --network FILE is read as a probe file: a topology.conf given without
    'slurm:' was 'not valid JSON', a platform directory 'a directory, expected a probe file'."""
    m = tmp_path / "m"
    assert run_cli("map", r16, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--out", m).returncode == 0
    (tmp_path / "t.conf").write_text("SwitchName=s1 Nodes=n[1-4]\n")
    one_error_line(run_cli("predict", r16, m, "--network", tmp_path / "t.conf"),
                   f"a Slurm topology.conf is given with --network slurm:{tmp_path / 't.conf'}")
    assert run_cli("platform", "--torus", "2x2", "--cores", "4", "--out", tmp_path / "p").returncode == 0
    one_error_line(run_cli("predict", r16, m, "--network", tmp_path / "p"),
                   f"a `rankmap platform` directory is given with --platform {tmp_path / 'p'}")


def test_a_gzip_bomb_is_refused_without_holding_it(tmp_path, monkeypatch):
    """A 14 MB .csv.gz of 9 GiB took 41 s and 8 GB of memory to be refused: every chunk was
    kept until the limit was passed. The size is counted first now (here with the limit at
    256 MiB, so that the file is quick to make: 300 MiB once decompressed)."""
    import tracemalloc
    import zlib
    from rankmap.profiler import validate
    monkeypatch.setattr(validate, "MAX_TEXT_BYTES", 256 << 20)
    c = zlib.compressobj(6, zlib.DEFLATED, 31)
    row = b"0,1,1\n" * (1 << 20)
    with open(tmp_path / "t.csv.gz", "wb") as f:
        for _ in range((300 << 20) // len(row) + 1):
            f.write(c.compress(row))
        f.write(c.flush())
    tracemalloc.start()
    try:
        res = run_cli("convert", tmp_path / "t.csv.gz", tmp_path / "o.csv")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    one_error_line(res, "t.csv.gz: more than 0 GiB once decompressed")
    assert peak < 100 << 20, f"{peak / 2 ** 20:.0f} MiB held"


@pytest.mark.parametrize("args,flag", [
    (["--machine", "{D}/m"], "--machine"),                    # was '--machine-file does not apply'
    (["--node-topology", "pack:2 core:2"], "--node-topology"),  # was '--topologies'
    (["--switch-tree", "2x2"], "--switch-tree"),               # was '--switches'
    (["--oversubscribe", "2"], "--oversubscribe"),            # ignored: -n 20 'do not fit the 16 cores'
])
def test_simulated_run_names_the_machine_options_it_refuses(tmp_path, args, flag):
    assert run_cli("platform", "--torus", "2x2", "--cores", "4", "--out", tmp_path / "p").returncode == 0
    (tmp_path / "app").write_text("#!/bin/sh\n")
    args = [a.replace("{D}", str(tmp_path)) for a in args]
    one_error_line(run_cli("run", "--launcher", "smpi", "--platform", tmp_path / "p", "-n", "20", *args, "--out",
                           tmp_path / "r", "--", tmp_path / "app"),
                   f"{flag} does not apply to --launcher smpi (the platform describes the machine)")
    assert not (tmp_path / "r").exists()


def test_replay_of_a_profile_run_says_it_is_no_trace(tmp_path):
    """`replay RUN/` (a `rankmap profile` directory): 'RUN/trace.ti: no such file (expected a
    SMPI trace index)'."""
    import json
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"run_id": "x"}))
    (run / "ranks.x.rmp").write_bytes(b"")
    assert run_cli("platform", "--torus", "2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    (tmp_path / "hf").write_text("n0\nn1\n")
    one_error_line(run_cli("replay", run, tmp_path / "hf", "--platform", tmp_path / "p"),
                   "run: a profile run directory (`rankmap profile`), not an SMPI trace")


@pytest.mark.parametrize("algorithm", ["block", "cyclic", "random"])
def test_network_speeds_with_a_one_order_algorithm_is_refused(tmp_path, r16, algorithm):
    """The predicted choice is among the search's candidates; block, cyclic and random have
    none: the platform's speeds were read and dropped (no prediction in report.json). With
    --mode whole-cluster they still choose the nodes, and are kept."""
    assert run_cli("platform", "--torus", "2x2", "--cores", "8", "--out", tmp_path / "p").returncode == 0
    args = ["map", r16, "--nodes", "n[0-3]", "--node-topology", "pack:1 core:8", "--torus", "2x2", "--algorithm",
            algorithm, "--network-speeds", tmp_path / "p"]
    one_error_line(run_cli(*args, "--out", tmp_path / "m"),
                   f"--network-speeds would be ignored: --algorithm {algorithm}")
    res = run_cli(*args, "--mode", "whole-cluster", "--out", tmp_path / "w", "--json")
    assert res.returncode == 0, res.stderr
    import json
    assert "estimates" in json.loads(res.stdout)["node_sets"]
