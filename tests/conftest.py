"""Shared test fixtures: real MPI launchers, compiled test programs, and the rule that
under RANKMAP_REQUIRE_ALL=1 (what `bash setup.sh test` and CI set) a test skipped for a
missing component is a failure, and a session in which nothing passed fails."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REQUIRE_ALL = os.environ.get("RANKMAP_REQUIRE_ALL") == "1"
APPS = Path(__file__).parent / "apps"
ROOT = Path(__file__).resolve().parents[1]
# reference data shared by the project's developers: ../shared next to the checkout
SHARED = ROOT.parent / "shared" / "data"

# Open MPI refuses root without these; keep every launch on loopback
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
os.environ.setdefault("OMPI_MCA_btl_tcp_if_include", "lo")
os.environ.setdefault("OMPI_MCA_oob_tcp_if_include", "lo")
os.environ.setdefault("HWLOC_COMPONENTS", "-gl")


def require(condition: bool, why: str) -> None:
    """Skip when a component is missing — or fail, when the run must exercise everything."""
    if not condition:
        if REQUIRE_ALL:
            pytest.fail(f"required component missing: {why}")
        pytest.skip(why)


def ti_trace(tmp_path, lines: list[list[str]]) -> Path:
    """An SMPI time-independent trace written by hand: lines[r] are rank r's actions (without
    the rank prefix, init and finalize); returns the index file."""
    d = tmp_path / "t.ti_files"
    d.mkdir()
    files = []
    for r, ls in enumerate(lines):
        f = d / f"1_rank-{r + 1}.txt"
        f.write_text("".join(f"{r} {x}\n" for x in ["init"] + ls + ["finalize"]))
        files.append(str(f))
    (tmp_path / "t.ti").write_text("\n".join(files) + "\n")
    return tmp_path / "t.ti"


def smpi_burst(tmp_path, hosts: list, platform_dir, nbytes: int) -> float:
    """tests/apps/burst.c under SMPI on a `rankmap platform` directory, one rank per host:
    the first half of the ranks send nbytes each to the second half at once. Returns the
    simulated seconds."""
    import re
    import shutil
    import subprocess
    from rankmap.slurm import platform as plat
    from rankmap.slurm import smpi
    require(bool(shutil.which("smpirun") and shutil.which("smpicc")), "SimGrid SMPI (libsimgrid-dev) not installed")
    exe = tmp_path / "burst"
    out = subprocess.run(["smpicc", "-O1", "-o", str(exe), str(APPS / "burst.c")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    p, d = plat.load(platform_dir)
    hf = smpi.write_hostfile(hosts, tmp_path / "hostfile")
    run = smpi.run([str(exe), str(nbytes)], p, d, hf, len(hosts))
    return float(re.search(r"elapsed_us ([0-9.]+)", run.stdout).group(1)) * 1e-6


@pytest.fixture(scope="session")
def shared():
    """../shared/data (real traffic matrices, hwloc XML of real machines, standard graphs)."""
    require((SHARED / "PROVENANCE.md").is_file(), f"the shared reference data is not at {SHARED} (../shared/data "
            "next to the checkout)")
    return SHARED


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


# an 8-rank ring of 1 MB messages: the small traffic most CLI tests map
RING8 = "src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 8},1000000\n" for i in range(8))


@pytest.fixture
def ring8(tmp_path):
    f = tmp_path / "ring8.csv"
    f.write_text(RING8)
    return f


def run_cli(*args, env: dict | None = None, cwd=None, input: str | None = None) -> CliResult:
    """`rankmap ARGS` in this process (click's CliRunner): what a user sees, without the
    start-up of a new interpreter. A Python exception that escapes the command (a traceback
    for the user) fails the test."""
    from click.testing import CliRunner
    from rankmap.cli import cli
    runner = CliRunner()
    with contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext():
        res = runner.invoke(cli, [str(a) for a in args], env=env, input=input, prog_name="rankmap")
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return CliResult(res.exit_code, res.stdout, res.stderr)


def spawn_cli(*args, env: dict | None = None, cwd=None, timeout: float = 600) -> subprocess.CompletedProcess:
    """`rankmap ARGS` as a new process: for what must run outside the test process (under
    salloc, with a different environment for the whole interpreter)."""
    e = dict(os.environ if env is None else env)
    e["PYTHONPATH"] = str(ROOT) + (os.pathsep + e["PYTHONPATH"] if e.get("PYTHONPATH") else "")
    return subprocess.run([sys.executable, "-m", "rankmap.cli", *map(str, args)], capture_output=True, text=True,
                          env=e, cwd=cwd, timeout=timeout)


def one_error_line(res, fragment: str) -> None:
    """The command failed with exactly one line on stderr, naming `fragment`, and no traceback."""
    assert res.returncode != 0, res.stdout
    assert "Traceback" not in res.stderr and "internal error" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and fragment in lines[0], res.stderr


RANKMAP_CMD = [sys.executable, "-m", "rankmap.cli"]   # for commands a test runs under salloc


# Markers that follow from what a test uses (registered with the others in pyproject.toml,
# except `mpi`, registered here). Select a fast subset with
#   pytest -m "not slurm and not smpi and not mpich and not mpi and not slow"
FIXTURE_MARKS = {
    "slurm_cluster": "slurm",      # the local Slurm cluster
    "smpi_ok": "smpi",             # SimGrid SMPI (test_simulation.py)
    "apps": "mpi",                 # programs compiled with mpicc, run with mpirun/mpiexec
    "slowring": "mpi",
}


def pytest_configure(config):
    config.addinivalue_line("markers", "mpi: launches real MPI jobs (mpirun, mpiexec)")


@pytest.hookimpl(tryfirst=True)          # before -m deselects by the markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        names = set(item.fixturenames)          # with every fixture the test's fixtures use
        for fixture, mark in FIXTURE_MARKS.items():
            if fixture in names:
                item.add_marker(mark)
        params = getattr(getattr(item, "callspec", None), "params", {})
        if params.get("mpi") == "mpich":
            item.add_marker("mpich")
        if item.get_closest_marker("mpich") is not None:
            item.add_marker("mpi")              # MPICH tests launch MPICH jobs


def pytest_sessionfinish(session, exitstatus):
    rep = session.config.pluginmanager.get_plugin("terminalreporter")
    if rep is None or session.config.option.collectonly:
        return
    # no test collected or selected: pytest's own exit status 5 stays (never success)
    passed = len(rep.stats.get("passed", []))
    skipped = len(rep.stats.get("skipped", []))
    if exitstatus == 0 and passed == 0:
        rep.write_line("rankmap: no test passed; failing the session", red=True)
        session.exitstatus = 1
    if REQUIRE_ALL and skipped and exitstatus == 0:
        rep.write_line(f"rankmap: {skipped} test(s) skipped under RANKMAP_REQUIRE_ALL=1; failing the session", red=True)
        session.exitstatus = 1


MPI = {
    "openmpi": {"cc": "mpicc.openmpi", "fc": "mpif90.openmpi",
                "run": ["mpirun.openmpi", "--oversubscribe", "--mca", "btl", "self,vader,tcp"],
                "np": "-np"},
    "mpich": {"cc": "mpicc.mpich", "fc": "mpif90.mpich", "run": ["mpiexec.mpich"], "np": "-n"},
}


def launcher(mpi: str, n: int) -> list[str]:
    m = MPI[mpi]
    require(shutil.which(m["run"][0]) is not None, f"{m['run'][0]} not installed")
    return m["run"] + [m["np"], str(n)]


def _build(cmd: list[str]) -> None:
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"build failed: {' '.join(cmd)}\n{res.stderr}")


@pytest.fixture(scope="session")
def apps(tmp_path_factory):
    """Test programs compiled for each MPI: apps[(name, mpi)] -> path."""
    out = tmp_path_factory.mktemp("apps")
    built = {}
    for mpi, m in MPI.items():
        if not shutil.which(m["cc"]):
            continue
        exe = out / f"traffic-{mpi}"
        # GCC flags MPI's sentinel arrays (MPI_STATUSES_IGNORE, MPI_UNWEIGHTED) as overflows: false positives
        _build([m["cc"], "-O1", "-Wall", "-Wno-stringop-overflow", "-Wno-stringop-overread", "-o", str(exe),
                str(APPS / "traffic.c"), "-lpthread"])
        built[("traffic", mpi)] = exe
        exe = out / f"placement-{mpi}"
        _build([m["cc"], "-O1", "-o", str(exe), str(APPS / "placement.c")])
        built[("placement", mpi)] = exe
        exe = out / f"onecoll-{mpi}"
        _build([m["cc"], "-O1", "-o", str(exe), str(APPS / "onecoll.c")])
        built[("onecoll", mpi)] = exe
        exe = out / f"colltest-{mpi}"
        _build([m["cc"], "-O1", "-o", str(exe), str(APPS / "colltest.c"), "-lm"])
        built[("colltest", mpi)] = exe
        if shutil.which(m["fc"]):
            for style, flags in (("mpif", ["-fallow-argument-mismatch"]), ("usempi", ["-DUSEMPI"]),
                                 ("f08", ["-DF08"])):
                exe = out / f"ftraffic-{style}-{mpi}"
                _build([m["fc"], *flags, "-o", str(exe), str(APPS / "ftraffic.F90")])
                built[(f"ftraffic-{style}", mpi)] = exe
                exe = out / f"fcolltest-{style}-{mpi}"
                _build([m["fc"], *flags, "-o", str(exe), str(APPS / "fcolltest.F90")])
                built[(f"fcolltest-{style}", mpi)] = exe
    return built


LOCALCLUSTER = Path(__file__).resolve().parents[1] / "slurm" / "localcluster"


@contextlib.contextmanager
def local_cluster(d: Path, port: int):
    """A real 4-node Slurm cluster on this host (slurm/localcluster) in directory d, slurmctld
    on `port` and the slurmds on the next ports; yields the environment to run Slurm
    commands in, and stops it."""
    require(all(shutil.which(t) for t in ("slurmctld", "slurmd", "munged", "srun")), "Slurm and munge not installed")
    env = dict(os.environ, RANKMAP_CLUSTER_DIR=str(d), RANKMAP_CLUSTER_NODES="4", RANKMAP_CLUSTER_PORT=str(port))
    up = subprocess.run([str(LOCALCLUSTER), "up"], env=env, capture_output=True, text=True, timeout=120)
    if up.returncode != 0:
        subprocess.run([str(LOCALCLUSTER), "down"], env=env, timeout=60)
        pytest.fail(f"the local Slurm cluster did not come up: {up.stderr}")
    out = subprocess.run([str(LOCALCLUSTER), "env"], env=env, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        k, _, v = line[len("export "):].partition("=")
        env[k] = v
    for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_NTASKS"):
        env.pop(k, None)
    try:
        yield env
    finally:
        subprocess.run([str(LOCALCLUSTER), "down"], env=env, capture_output=True, timeout=120)


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """The test session's own cluster (local_cluster): its own directory and ports."""
    with local_cluster(tmp_path_factory.mktemp("cluster"), 19000 + (os.getpid() % 400) * 10) as env:
        yield env


def app(apps, name: str, mpi: str) -> Path:
    require((name, mpi) in apps, f"{name} could not be built for {mpi} (compiler wrapper missing)")
    return apps[(name, mpi)]


def preloaded_ring(apps, profile_dir: Path, **env) -> subprocess.CompletedProcess:
    """tests/apps/traffic's ring on 2 Open MPI ranks with the profiler preloaded by hand (no
    `rankmap profile`, which checks its own options first), the RANKMAP_* variables given
    exported to the ranks; run id "hand"."""
    from rankmap.profiler import native
    env = {"RANKMAP_PROFILE_DIR": str(profile_dir), "RANKMAP_PROFILE_RUN_ID": "hand", **env}
    exported = [x for k in env for x in ("-x", k)]
    cmd = launcher("openmpi", 2) + ["-x", f"LD_PRELOAD={native.artifact('profiler', 'openmpi')}", *exported,
                                    str(app(apps, "traffic", "openmpi")), "ring"]
    return subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=120)
