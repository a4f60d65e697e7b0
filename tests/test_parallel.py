"""`rankmap map --parallel`: the partitioning on PT-Scotch as a real MPI job (mpirun on
this host; srun inside an allocation of the local Slurm cluster), then the parts mapped
onto the network, with the outputs and checks of `rankmap map`."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import RANKMAP_CMD, one_error_line, require, run_cli
from rankmap.mapper import spec as mspec
from rankmap.mapper.parallel import exact_sizes, quotient
from rankmap.profiler.formats import symmetric

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
from mapper_torus import grid_stencil  # noqa: E402


def engine_ok():
    from rankmap.profiler import native
    from rankmap.profiler.errors import UserError
    try:
        native.artifact("ptpart", "openmpi")
    except UserError as e:
        require(False, f"PT-Scotch engine not built: {e}")


@pytest.fixture
def stencil(tmp_path):
    path = tmp_path / "stencil.npz"
    sp.save_npz(path, grid_stencil(768, 3).tocsr())
    return path


def test_exact_sizes_moves_the_loosest_ranks():
    """A ring of 8 ranks cut 5/3 for targets 4/4: the rank of part 0 that talks least inside
    it moves, to the part it talks to."""
    W = symmetric(sp.csr_matrix(([1.0] * 8, (range(8), [(i + 1) % 8 for i in range(8)])), shape=(8, 8)))
    part = np.array([0, 0, 0, 0, 0, 1, 1, 1])
    out = exact_sizes(W, part, np.array([4, 4]))
    assert np.bincount(out).tolist() == [4, 4]
    moved = np.flatnonzero(out != part)
    assert len(moved) == 1 and moved[0] in (0, 4)                       # an end of part 0's run moves
    Q = quotient(W, out, 2)
    assert Q.shape == (2, 2) and Q[0, 1] == Q[1, 0] == 2.0            # two ring edges join the parts


@pytest.mark.mpi
def test_parallel_mpirun_on_a_dragonfly(stencil, tmp_path):
    engine_ok()
    out = tmp_path / "m"
    res = run_cli("map", stencil, "--nodes", "n[0-63]", "--node-topology", "pack:2 core:6", "--network",
                  "dragonfly:4x4x4", "--parallel", "2", "--parallel-launcher", "mpirun", "--out", out, "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["algorithm"] == "ptscotch" and "2 processes, 768 vertices" in rep["parallel"]["engine"]
    hosts = (out / "hostfile").read_text().split()
    assert len(hosts) == 768 and max(hosts.count(h) for h in set(hosts)) == 12
    assert len({tuple(ln.split()[1:]) for ln in (out / "binding.txt").read_text().splitlines()[1:]}) == 768
    m = rep["metrics"]
    assert m["rankmap"]["sum_com"] < 0.8 * m["block"]["sum_com"]          # never worse, and here much better
    assert m["rankmap"]["max_global_link_load"] <= m["block"]["max_global_link_load"]
    assert mspec.load(out)["network"] == "dragonfly:4x4x4"
    assert not list(tmp_path.glob(".m.parallel-*"))                       # its work files are gone


@pytest.mark.mpi
def test_parallel_with_more_ranks_than_cores(tmp_path):
    """--oversubscribe 3, 10 ranks on 8 cores, --parallel: --oversubscribe's even spread (3 or 2
    ranks a node) is no machine of equal nodes, which --parallel needs; it gets every core's
    first two slots instead, and runs."""
    engine_ok()
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 10},1000\n" for i in range(10)))
    res = run_cli("map", t, "--nodes", "n[1-4]", "--node-topology", "pack:1 core:2", "--oversubscribe", "3",
                  "--parallel", "2", "--parallel-launcher", "mpirun", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["algorithm"] == "ptscotch"
    assert any(x.startswith("--oversubscribe: 10 ranks on 8 cores: every core takes up to 2") for x in rep["notes"])
    cores = {tuple(ln.split()[1:]) for ln in (tmp_path / "m" / "binding.txt").read_text().splitlines()[1:]}
    assert len(cores) >= 5                              # at most 2 ranks a core


def test_parallel_errors(stencil, tmp_path):
    engine_ok()
    one_error_line(run_cli("map", stencil, "--nodes", "n[0-63]", "--node-topology", "n[0-31]=pack:2 core:6",
                           "--node-topology", "n[32-63]=pack:2 core:8", "--parallel", "2", "--out", tmp_path / "x"),
                   "nodes of one size")
    one_error_line(run_cli("map", stencil, "--nodes", "n[0-63]", "--node-topology", "core:12", "--parallel", "0",
                           "--out", tmp_path / "x"), "at least one process")


def test_an_engine_killed_by_signal_9_is_said_to_be_most_often_out_of_memory():
    """Random 10^7 ranks with --parallel 2 on one 24 GB host: the kernel killed a PT-Scotch
    process (9.9 GB each). What mpirun itself prints for a process killed that way (a real
    mpirun, a process that sends itself SIGKILL) becomes an error that says so, the signal
    line first when mpirun printed it, with the likely cause."""
    import os
    import shutil
    from rankmap.slurm.parallel import failure
    require(shutil.which("mpirun"), "mpirun (Open MPI) not installed")
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    res = subprocess.run(["mpirun", "-np", "1", "sh", "-c", "kill -9 $$"], capture_output=True, text=True, env=env,
                         timeout=120)
    assert res.returncode != 0
    text = failure(res.returncode, res.stderr + "\n" + res.stdout)
    if "exited on signal 9" in res.stderr + res.stdout:       # mpirun does not always get to say it
        assert "exited on signal 9" in text.split(" / ")[0]
    assert "out-of-memory killer" in text and "more nodes" in text


@pytest.mark.slurm
def test_parallel_srun_inside_an_allocation(slurm_cluster, stencil, tmp_path):
    """Inside salloc the engine runs as a Slurm job step (srun --mpi=pmix), one process per
    allocated CPU of the four nodes."""
    engine_ok()
    out = tmp_path / "m"
    cmd = ["salloc", "-N", "4", "-n", "8", "--quiet", "timeout", "240"] + RANKMAP_CMD + [
        "map", str(stencil), "--nodes", "n[0-63]", "--node-topology", "pack:2 core:6", "--network", "fat-tree:4x16",
        "--parallel", "8", "--out", str(out), "--json"]
    env = dict(slurm_cluster, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert "8 processes" in rep["parallel"]["engine"]
    assert rep["metrics"]["rankmap"]["sum_com"] < rep["metrics"]["block"]["sum_com"]
