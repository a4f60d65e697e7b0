"""rankmap's collective kernels (csrc/coll), preloaded into a real Open MPI or MPICH program
or linked into an SMPI one: results against the library's own collectives (colltest.c calls
both on the same data), the selection switches, the topology order from a mapping, and
composition with the profiler."""
from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from conftest import app, launcher, require, run_cli
from rankmap.profiler import native
from rankmap.profiler.rundir import read_run

MPIS = ["openmpi", "mpich"]
SMALL = "262144"   # doubles in the "large" checks where P is swept (2 MB); 16 MB at P = 4


def coll_lib(mpi):
    try:
        return str(native.artifact("collectives", mpi))
    except Exception as e:   # noqa: BLE001 - a missing build is a skip (or a failure under REQUIRE_ALL)
        require(False, f"collective kernels not built for {mpi}: {e}")


def run(mpi, p, cmd, env, timeout=240):
    lib_env = dict(os.environ, **env)
    if mpi == "openmpi":
        xs = [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    else:
        xs = [a for k, v in env.items() for a in ("-genv", k, v)]
    res = subprocess.run(launcher(mpi, p) + xs + cmd, capture_output=True, text=True, timeout=timeout, env=lib_env)
    return res


def checked(res):
    m = re.search(r"colltest: (\d+) checks, (\d+) failures", res.stdout)
    assert res.returncode == 0 and m, res.stdout[-2000:] + res.stderr[-3000:]
    assert int(m.group(1)) > 0 and m.group(2) == "0"
    return int(m.group(1))


@pytest.mark.parametrize("p", range(1, 10))
def test_kernels_match_the_library_openmpi(apps, p):
    """P = 1..9 (primes included), every kernel forced: all ops and datatypes at P = 4 with
    16 MB messages, one type of each kind elsewhere."""
    exe = str(app(apps, "colltest", "openmpi"))
    lib = coll_lib("openmpi")
    kernels = [("ring", "rsg", "chain"), ("ring1d", "kchain-adaptive", "scatter-allgather"),
               ("recdbl", "kchain:4", "chain"), ("ring", "binomial", "chain"), ("ring", "kchain", "chain")]
    for allreduce, reduce, bcast in kernels if p in (2, 4, 7) else kernels[:1] if p % 2 else kernels[3:]:
        env = {"LD_PRELOAD": lib, "RANKMAP_COLL": "force", "RANKMAP_COLL_ALLREDUCE": allreduce,
               "RANKMAP_COLL_REDUCE": reduce, "RANKMAP_COLL_BCAST": bcast, "RANKMAP_COLL_VERBOSE": "1",
               "RANKMAP_COLL_PACKET": "65536"}
        args = [exe] if (p == 4 and reduce == "rsg") else [exe, SMALL, "quick"]
        res = run("openmpi", p, args, env)
        checked(res)
        if p > 1:   # the kernels really ran (a size-1 communicator always goes to the library)
            assert f"-> {allreduce}" in res.stderr and "allreduce" in res.stderr, res.stderr[-2000:]
            assert "reduce of" in res.stderr and "bcast of" in res.stderr


@pytest.mark.mpich
@pytest.mark.parametrize("p", [3, 4, 8])
def test_kernels_match_the_library_mpich(apps, p):
    exe = str(app(apps, "colltest", "mpich"))
    env = {"LD_PRELOAD": coll_lib("mpich"), "RANKMAP_COLL": "force", "RANKMAP_COLL_VERBOSE": "1",
           "RANKMAP_COLL_REDUCE": "kchain-adaptive"}
    res = run("mpich", p, [exe, SMALL, "quick"], env)
    checked(res)
    assert "-> ring" in res.stderr and "-> kchain-adaptive" in res.stderr


def test_chain_counts_and_selection(apps):
    """k = ceil(sqrt(P-1)) chains by default, K when asked; auto leaves small messages to the
    library and takes large allreduces; off never takes a call."""
    exe = str(app(apps, "colltest", "openmpi"))
    lib = coll_lib("openmpi")
    res = run("openmpi", 9, [exe, "300000", "quick"], {"LD_PRELOAD": lib, "RANKMAP_COLL": "force",
                                                      "RANKMAP_COLL_VERBOSE": "1"})
    checked(res)
    assert "(3 chains)" in res.stderr   # ceil(sqrt(8))
    res = run("openmpi", 9, [exe, "300000", "quick"], {"LD_PRELOAD": lib, "RANKMAP_COLL": "force",
                                                      "RANKMAP_COLL_REDUCE": "kchain-adaptive",
                                                      "RANKMAP_COLL_VERBOSE": "1"})
    checked(res)
    assert "(4 chains)" in res.stderr   # 1 + 2 + 3 and a leftover of 2
    res = run("openmpi", 4, [exe, "300000", "quick"], {"LD_PRELOAD": lib, "RANKMAP_COLL_VERBOSE": "1"})
    checked(res)
    # the built-in table: recursive doubling, then the ring from 4 KB; reduce: k-chain, then
    # reduce-scatter + gather from 4 KB; bcast: the library below 512 KB
    ring = [int(b) for b in re.findall(r"allreduce of (\d+) B .* -> ring", res.stderr)]
    rd = [int(b) for b in re.findall(r"allreduce of (\d+) B .* -> recdbl", res.stderr)]
    assert ring and min(ring) >= 4096 and rd and max(rd) < 4096, res.stderr[-1500:]
    assert re.search(r"reduce of \d+ B .* -> kchain", res.stderr) and re.search(r"reduce of \d+ B .* -> rsg",
                                                                              res.stderr)
    assert all(int(b) >= 524288 for b in re.findall(r"bcast of (\d+) B", res.stderr))
    res = run("openmpi", 4, [exe, "300000", "quick"], {"LD_PRELOAD": lib, "RANKMAP_COLL": "off",
                                                      "RANKMAP_COLL_VERBOSE": "1"})
    checked(res)
    assert "rankmap-coll" not in res.stderr


def test_bad_settings_are_reported_not_fatal(apps):
    exe = str(app(apps, "colltest", "openmpi"))
    res = run("openmpi", 2, [exe, "1000", "quick"], {"LD_PRELOAD": coll_lib("openmpi"), "RANKMAP_COLL": "fast",
                                                    "RANKMAP_COLL_ALLREDUCE": "magic"})
    checked(res)
    assert "ignoring RANKMAP_COLL=fast" in res.stderr and "ignoring RANKMAP_COLL_ALLREDUCE=magic" in res.stderr
    # byte counts: 64k is 64 KiB (atol read 64 bytes, which 8 <= 64 let through), 1e6 and 64q are refused
    for value, refused in (("64k", False), ("1M", False), ("1e6", True), ("64q", True)):
        res = run("openmpi", 2, [exe, "1000", "quick"], {"LD_PRELOAD": coll_lib("openmpi"),
                                                        "RANKMAP_COLL_PACKET": value})
        checked(res)
        assert (f"ignoring RANKMAP_COLL_PACKET={value}" in res.stderr) == refused, (value, res.stderr[-500:])


def test_order_from_a_mapping(apps, tmp_path):
    """The mapper's collective-order.txt drives the kernels' order (and grid)."""
    mat = tmp_path / "ring.csv"
    mat.write_text("".join(f"{i},{(i + 1) % 6},1000000\n" for i in range(6)))
    out = tmp_path / "map"
    res = run_cli("map", str(mat), "--nodes", "a,b,c",
                          "--node-topology", "pack:1 core:2", "--out", str(out))
    assert res.returncode == 0, res.stderr
    order = (out / "collective-order.txt").read_text().splitlines()
    assert order[1] == "# grid 2x3"
    assert sorted(int(x) for x in order[2:]) == list(range(6))
    # the relaunch hands the order to the kernels
    dry = run_cli("mpirun", str(out), "--preload-collectives", "--dry-run",
                          "--", "./app")
    assert dry.returncode == 0, dry.stderr
    assert f"RANKMAP_COLL_ORDER={out / 'collective-order.txt'}" in dry.stdout.replace("\n", "")
    assert "librankmap_coll-openmpi.so" in dry.stdout.replace("\n", "")
    exe = str(app(apps, "colltest", "openmpi"))
    res = run("openmpi", 6, [exe, "100000", "quick"], {"LD_PRELOAD": coll_lib("openmpi"), "RANKMAP_COLL": "force",
                                                      "RANKMAP_COLL_ORDER": str(out / "collective-order.txt"),
                                                      "RANKMAP_COLL_VERBOSE": "1"})
    checked(res)
    assert "order: file, grid 2x3" in res.stderr


def test_with_the_profiler_preloaded(apps, tmp_path):
    """Kernels first, profiler second: results stay right, and the profile records the
    kernels' point-to-point messages (what really crossed the network)."""
    exe = str(app(apps, "colltest", "openmpi"))
    prof = str(native.artifact("profiler", "openmpi"))
    (tmp_path / "prof").mkdir()
    env = {"LD_PRELOAD": coll_lib("openmpi") + ":" + prof, "RANKMAP_COLL": "force",
           "RANKMAP_PROFILE_DIR": str(tmp_path / "prof")}
    res = run("openmpi", 4, [exe, "100000", "quick"], env)
    checked(res)
    run_ = read_run(tmp_path / "prof")
    assert run_.complete and run_.size == 4
    m = run_.bytes.tocoo()
    assert m.nnz > 0 and m.sum() > 4 * 100000 * 8   # the ring's messages, counted at the sender


def test_libpath_collectives():
    res = run_cli("libpath", "collectives")
    assert res.returncode == 0 and res.stdout.strip().endswith("librankmap_coll-openmpi.so")


@pytest.mark.smpi
def test_kernels_linked_into_an_smpi_program(tmp_path):
    """Under SMPI the kernels are linked into the harness: every kernel gives the right
    result on a simulated torus (the harness checks its sums)."""
    require(shutil.which("smpirun") is not None, "SimGrid not installed")
    from rankmap.slurm import platform as plat
    from rankmap.slurm import smpi
    exe = str(native.artifact("coll_bench", "smpi"))
    p, d = plat.load(plat.write(plat.preset("desmos"), tmp_path / "plat"))
    hf = smpi.write_hostfile([f"n{r // 3}" for r in range(12)], tmp_path / "hf")
    for op, kernels in (("allreduce", ["ring", "ring1d", "recdbl"]),
                        ("reduce", ["kchain", "kchain-adaptive", "binomial", "rsg", "chain"]),
                        ("bcast", ["chain", "scatter-allgather"])):
        for k in kernels:
            r = smpi.run([exe, "-o", op, "-l", "8,4096,1000000", "-i", "1", "-w", "0", "-r", "5"], p, d, hf, 12,
                         env={"RANKMAP_COLL": "force", f"RANKMAP_COLL_{op.upper()}": k, "RANKMAP_COLL_GRID": "3x4"})
            lines = [ln for ln in r.stdout.splitlines() if ln and not ln.startswith("#")]
            assert len(lines) == 3 and all(ln.endswith(" ok") for ln in lines), (op, k, r.stdout)


@pytest.mark.smpi
def test_tune_collectives_writes_a_table_the_kernels_follow(tmp_path):
    """tune-collectives on a simulated cluster writes the size table; the kernels read it
    (RANKMAP_COLL_TUNING) and choose by it."""
    require(shutil.which("smpirun") is not None, "SimGrid not installed")
    from rankmap.slurm import platform as plat
    from rankmap.slurm import smpi
    d = plat.write(plat.preset("desmos"), tmp_path / "plat")
    table = tmp_path / "tuning.txt"
    res = run_cli("tune-collectives", "-n", "12", "--platform", str(d),
                          "--per-node", "3", "--ops", "allreduce,bcast", "--sizes", "8,1048576", "--out", str(table))
    assert res.returncode == 0, res.stderr[-2000:]
    rules = [ln.split() for ln in table.read_text().splitlines() if ln and not ln.startswith("#")]
    assert rules[0][:2] == ["allreduce", "0"] and {r[0] for r in rules} == {"allreduce", "bcast"}
    big = [r for r in rules if r[0] == "allreduce" and int(r[1]) <= 1048576][-1]
    # what the table says for 1 MB is what the kernels do at 1 MB
    p, pd = plat.load(d)
    hf = smpi.write_hostfile([f"n{r // 3}" for r in range(12)], tmp_path / "hf")
    r = smpi.run([str(native.artifact("coll_bench", "smpi")), "-o", "allreduce", "-l", "1048576", "-i", "1",
                  "-w", "0"], p, pd, hf, 12, env={"RANKMAP_COLL_TUNING": str(table), "RANKMAP_COLL_VERBOSE": "1"})
    assert r.stdout.strip().endswith("ok")
    if big[2] == "lib":
        assert "rankmap-coll: allreduce" not in r.stderr
    else:
        assert f"-> {big[2]}" in r.stderr, r.stderr[-1500:]
    bad = run_cli("tune-collectives", "-n", "12", "--platform", str(d),
                          "--sizes", "8,abc", "--out", str(table))
    assert bad.returncode != 0 and "Traceback" not in bad.stderr and "--sizes" in bad.stderr


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("style", ["mpif", "usempi", "f08"])
def test_fortran_programs_get_the_kernels(apps, mpi, style):
    """mpif.h, use mpi and use mpi_f08 calls reach the kernels (Open MPI's bindings call
    PMPI inside the library: the kernels take its Fortran symbols too)."""
    exe = str(app(apps, f"fcolltest-{style}", mpi))
    res = run(mpi, 4, [exe], {"LD_PRELOAD": coll_lib(mpi), "RANKMAP_COLL": "force", "RANKMAP_COLL_VERBOSE": "1"})
    assert res.returncode == 0 and "fcolltest ok" in res.stdout, res.stdout + res.stderr[-2000:]
    for op in ("allreduce", "reduce", "bcast"):
        assert f"rankmap-coll: {op} of" in res.stderr, res.stderr[-2000:]
