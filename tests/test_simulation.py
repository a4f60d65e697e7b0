"""Simulated clusters (SimGrid SMPI, real smpirun): the platform files describe what was asked,
the smpi launcher maps and relaunches a workload end to end, replay is bit-for-bit
reproducible, SMPI traces read as the same traffic the PMPI profiler records, and the
network model's arithmetic."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import APPS, launcher, require, run_cli
from rankmap.mapper import spec as mspec
from rankmap.mapper.predict import Network, predict
from rankmap.profiler import native
from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import read_traffic
from rankmap.slurm import platform as plat


def rankmap(*args, cwd=None, timeout=None):
    return run_cli(*args, cwd=cwd)


def one_error_line(res, fragment):
    assert res.returncode != 0, res.stdout
    assert "Traceback" not in res.stderr, res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) >= 1 and fragment in lines[0], res.stderr


@pytest.fixture(scope="module")
def smpi_ok():
    require(bool(shutil.which("smpirun") and shutil.which("smpicc")), "SimGrid SMPI (libsimgrid-dev) not installed")


@pytest.fixture(scope="module")
def pingpong(smpi_ok, tmp_path_factory):
    out = tmp_path_factory.mktemp("smpi") / "pingpong"
    res = subprocess.run(["smpicc", "-O1", "-o", str(out), str(APPS / "pingpong.c")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def workload(name):
    return native.artifact("workloads", "smpi", name)


def oneway(pingpong, pdir: Path, hosts: list[str], big: int = 1 << 22) -> dict:
    from rankmap.slurm import smpi
    p, d = plat.load(pdir)
    hf = smpi.write_hostfile(hosts, pdir / "hostfile-pp")
    r = smpi.run([str(pingpong), str(big)], p, d, hf, len(hosts))
    out = {}
    for m in re.finditer(r"peer (\d+) bytes (\d+) oneway_us ([0-9.]+)", r.stdout):
        out[(int(m.group(1)), int(m.group(2)))] = float(m.group(3))
    return out


# --------------------------------------------------------------------------- platforms

@pytest.mark.parametrize("name", ["angara-k1", "desmos"])
def test_torus_platform_times_follow_the_configured_links(pingpong, tmp_path, name):
    """Ping-pong on the generated platform: inside a node the loopback, then link latency
    per hop of the machine description's own routes; 4 MiB moves at the configured rates."""
    res = rankmap("platform", name, "--out", tmp_path / "p", "--link-lat", "1", "--link-bw", "5",
                  "--loopback-lat", "0.1", "--loopback-bw", "20", "--nic-bw", "none")
    assert res.returncode == 0, res.stderr
    pdir = tmp_path / "p"
    p, _ = plat.load(pdir)
    m = mspec.build(mspec.load(pdir / "machine.json"))
    peers = ["n0", "n1", f"n{p.dims[0]}", f"n{p.nodes - 1}", f"n{p.nodes // 2 + 1}"]
    t = oneway(pingpong, pdir, ["n0"] + peers)
    hops = [int(m.node_hops(np.array([0]), np.array([m.hosts.index(h)]))[0]) for h in peers]
    assert hops[0] == 0 and hops[1] == 1 and max(hops) >= 2
    for i, h in enumerate(hops, start=1):
        lat = t[(i, 8)]
        expect = 0.1 if h == 0 else 1.0 * h
        assert expect <= lat < expect + 0.05, (name, peers[i - 1], h, lat)
        big = t[(i, 1 << 22)]
        rate = 20e9 if h == 0 else 5e9
        assert (1 << 22) / rate * 1e6 < big < (1 << 22) / rate * 1e6 * 1.02 + expect + 0.1, (peers[i - 1], big)
    # more hops never cost less
    lats = [t[(i, 8)] for i in range(1, len(peers) + 1)]
    assert [lat for _, lat in sorted(zip(hops, lats))] == sorted(lats)


def test_fat_tree_platform_leaves_and_spines(pingpong, tmp_path):
    assert rankmap("platform", "fat-tree", "--out", tmp_path / "p", "--link-lat", "1").returncode == 0
    t = oneway(pingpong, tmp_path / "p", ["n0", "n0", "n7", "n8", "n31"])
    same, leaf, other, far = (t[(i, 8)] for i in range(1, 5))
    assert same < 0.5 and 2.0 <= leaf < 2.1 and 4.0 <= other < 4.1 and 4.0 <= far < 4.1
    m = mspec.build(mspec.load(tmp_path / "p" / "machine.json"))
    assert m.network.arities == (4, 8)       # 4 leaves of 8 nodes, as SimGrid numbers them
    hop = m.node_hops(np.array([0, 0, 0]), np.array([7, 8, 31]))
    assert hop.tolist() == [2, 4, 4]


def test_nic_limit_caps_a_node_and_network_scale_slows_links(pingpong, tmp_path):
    assert rankmap("platform", "angara-k1", "--out", tmp_path / "a", "--nic-bw", "2").returncode == 0
    assert rankmap("platform", "angara-k1", "--out", tmp_path / "b", "--nic-bw", "none",
                   "--network-scale", "0.25").returncode == 0
    t_nic = oneway(pingpong, tmp_path / "a", ["n0", "n1"])[(1, 1 << 22)]
    t_slow = oneway(pingpong, tmp_path / "b", ["n0", "n1"])[(1, 1 << 22)]
    assert (1 << 22) / 2e9 * 1e6 < t_nic < (1 << 22) / 2e9 * 1e6 * 1.05       # 2 GB/s through the router
    assert (1 << 22) / 1.5e9 * 1e6 < t_slow < (1 << 22) / 1.5e9 * 1e6 * 1.05  # 6 GB/s x 0.25


def test_platform_machine_description():
    p = plat.preset("angara-k1")
    spec = plat.machine_spec(p)
    m = mspec.build(spec)
    assert m.nnodes == 36 and m.nslots == 24 * 12 + 12 * 8      # the 8-core nodes keep their 8
    assert spec["coords"]["n13"] == [1, 1, 1] and spec["torus"] == "3x3x4"
    assert plat.block_allocation(p, 30) == ["n0"] * 12 + ["n1"] * 12 + ["n2"] * 6
    assert plat.block_allocation(p, 300)[-4:] == ["n25"] * 4     # n24.. take 8 each
    with pytest.raises(UserError, match="do not fit"):
        plat.block_allocation(p, 400)
    d = plat.preset("desmos")
    assert mspec.build(plat.machine_spec(d)).network.dims == (4, 2, 2, 2)


def test_platform_cli_errors(tmp_path):
    one_error_line(rankmap("platform", "nowhere", "--out", tmp_path / "x"), "unknown platform")
    one_error_line(rankmap("platform", "--out", tmp_path / "x"), "give a platform name")
    one_error_line(rankmap("platform", "desmos", "--out", tmp_path / "x", "--link-bw", "0"), "--link-bw")
    one_error_line(rankmap("platform", "desmos", "--out", tmp_path / "x", "--nic-bw", "fast"), "--nic-bw")
    one_error_line(rankmap("platform", "--fat-tree", "2;8", "--out", tmp_path / "x"), "bad fat tree")
    assert rankmap("platform", "desmos", "--out", tmp_path / "d").returncode == 0
    one_error_line(rankmap("platform", "desmos", "--out", tmp_path / "d"), "--force")
    assert rankmap("platform", "--torus", "2x2", "--cores", "4", "--out", tmp_path / "t").returncode == 0
    assert mspec.build(mspec.load(tmp_path / "t" / "machine.json")).nslots == 16


# --------------------------------------------------------------------------- workflow and replay

def test_smpi_launcher_maps_and_relaunches(smpi_ok, tmp_path):
    """Two passes on the simulated Angara-K1: the trace of pass 1 is mapped, pass 2 runs on the
    mapping; the summary has both simulated times and their communication share."""
    assert rankmap("platform", "angara-k1", "--out", tmp_path / "k1", "--network-scale", "0.25").returncode == 0
    res = rankmap("run", "--launcher", "smpi", "--platform", tmp_path / "k1", "-n", "24", "--compute", "explicit",
                  "--mode", "whole-cluster", "--out", tmp_path / "run", "--",
                  workload("stencil3d"), "-s", "-n", "16", "-i", "6", "-r", "3")
    assert res.returncode == 0, res.stderr + res.stdout
    s = json.loads((tmp_path / "run" / "summary.json").read_text())
    p1, p2 = s["passes"]["pass 1 (block)"], s["passes"]["pass 2 (rankmap)"]
    assert p1["simulated_seconds"] > s["ideal_network_seconds"] > 0
    assert 0 < p2["comm_seconds"] < p1["comm_seconds"]      # -s scatters the ranks: the mapping brings neighbours together
    hosts = (tmp_path / "run" / "mapping" / "hostfile").read_text().split()
    assert len(hosts) == 24 and all(hosts.count(h) <= 12 for h in set(hosts))
    assert "stencil3d P=24" in (tmp_path / "run" / "profile" / "stdout.txt").read_text()
    # pass 2 executed directly is close to the replay of the trace under the same hostfile (the
    # trace leaves out the communicator set-up of this program: MPI_Comm_split, MPI_Cart_create)
    from rankmap.slurm import smpi
    p, d = plat.load(tmp_path / "k1")
    r = smpi.replay(tmp_path / "run" / "profile" / "trace.ti", p, d, tmp_path / "run" / "mapping" / "hostfile", 24)
    assert r.seconds == pytest.approx(p2["simulated_seconds"], rel=0.1)


def test_replay_is_bit_for_bit_reproducible(smpi_ok, tmp_path):
    from rankmap.slurm import smpi
    p = plat.preset("desmos")
    d = plat.write(p, tmp_path / "d")
    hf = smpi.write_hostfile(plat.block_allocation(p, 16), tmp_path / "hf")
    trace = tmp_path / "t" / "trace.ti"
    direct = smpi.run([str(workload("sp_multi")), "-N", "24", "-i", "2"], p, d, hf, 16, trace=trace,
                      compute="explicit")
    assert smpi.replay(trace, p, d, hf, 16).seconds == pytest.approx(direct.seconds, rel=5e-3)  # the run it came from
    rnd = smpi.write_hostfile([f"n{i}" for i in np.random.default_rng(3).permutation(32)[:16]], tmp_path / "rnd")
    a = smpi.replay(trace, p, d, rnd, 16)
    b = smpi.replay(trace, p, d, rnd, 16)
    timing = [ln for ln in a.stderr.splitlines() if "Simulat" in ln]
    assert a.seconds == b.seconds and timing == [ln for ln in b.stderr.splitlines() if "Simulat" in ln]
    assert smpi.replay(trace, p, d, hf, 16).seconds != a.seconds       # and the placement matters


def test_replay_of_an_idle_or_deadlocked_trace(smpi_ok, tmp_path):
    """A trace of 0 simulated seconds ended the table in ZeroDivisionError (exit 70); a
    deadlocked one (every rank receives first) was a success of 0 s with --json."""
    from rankmap.slurm import smpi
    d = plat.write(plat.preset("angara-k1"), tmp_path / "k1")
    hf = smpi.write_hostfile(["n0", "n1", "n2", "n3"], tmp_path / "hosts")
    for name, body in (("idle", "{r} init\n{r} finalize\n"),
                       ("deadlock", "{r} init\n{r} recv {n} 0 100 2\n{r} send {n} 0 100 2\n{r} finalize\n")):
        (tmp_path / name).mkdir()
        for r in range(4):
            (tmp_path / name / f"rank-{r + 1}.txt").write_text(body.format(r=r, n=(r + 1) % 4))
        (tmp_path / f"{name}.ti").write_text("".join(f"{tmp_path / name / f'rank-{r + 1}.txt'}\n" for r in range(4)))
    res = rankmap("replay", tmp_path / "idle.ti", hf, "--platform", d)
    assert res.returncode == 0 and "n/a" in res.stdout, res.stderr
    for extra in ([], ["--json"]):
        one_error_line(rankmap("replay", tmp_path / "deadlock.ti", hf, "--platform", d, *extra), "deadlock")


def test_replay_cli_and_errors(smpi_ok, tmp_path):
    from rankmap.slurm import smpi
    p = plat.preset("angara-k1")
    d = plat.write(p, tmp_path / "k1")
    hf = smpi.write_hostfile(plat.block_allocation(p, 8), tmp_path / "block")
    trace = tmp_path / "t" / "trace.ti"
    smpi.run([str(workload("lu_wave")), "-N", "16", "-i", "1"], p, d, hf, 8, trace=trace, compute="explicit")
    cyc = smpi.write_hostfile([f"n{i % 4}" for i in range(8)], tmp_path / "cyclic")
    res = rankmap("replay", trace, hf, cyc, "--platform", d, "--json")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["cyclic"]["comm_seconds"] > out["block"]["comm_seconds"] >= 0
    assert out["block"]["comm_alone_seconds"] > 0 and out["block"]["predicted_comm_seconds"] > 0
    bad = smpi.write_hostfile(["n0"] * 7 + ["x9"], tmp_path / "bad")
    one_error_line(rankmap("replay", trace, bad, "--platform", d), "x9 is not a node")
    full = smpi.write_hostfile(["n0"] * 8 + ["n24"] * 0, tmp_path / "full")
    assert rankmap("replay", trace, full, "--platform", d).returncode == 0
    over = smpi.write_hostfile(["n24"] * 8 + ["n25"], tmp_path / "over")
    one_error_line(rankmap("replay", trace, over, "--platform", d), "9 ranks, the trace has 8")
    over = smpi.write_hostfile(["n24"] * 8, tmp_path / "over8")
    assert rankmap("replay", trace, over, "--platform", d).returncode == 0     # 8 cores on n24: fits
    one_error_line(rankmap("replay", tmp_path / "nothing.ti", hf, "--platform", d), "nothing.ti")
    one_error_line(rankmap("replay", trace, hf, "--platform", tmp_path), "not a platform directory")
    one_error_line(rankmap("run", "--launcher", "smpi", "-n", "4", "--", "x"), "needs --platform")
    one_error_line(rankmap("run", "--launcher", "smpi", "--platform", d, "-n", "4", "--srun-arg", "-v", "--", "x"),
                   "does not apply")
    one_error_line(rankmap("run", "--launcher", "smpi", "--platform", d, "-n", "4", "--out", tmp_path / "r", "--",
                           tmp_path / "missing-program"), "no such program")


def test_demo_simulated_half(smpi_ok, tmp_path):
    res = rankmap("demo", "--only", "simulated", "--out", tmp_path / "demo")
    assert res.returncode == 0, res.stderr + res.stdout
    d = json.loads((tmp_path / "demo" / "demo.json").read_text())["simulated"]
    pl = d["placements"]
    assert set(pl) == {"block", "cyclic", "random", "rankmap-b", "rankmap-c"}
    for v in pl.values():
        assert v["simulated_seconds"] > 0 and v["comm_seconds"] >= 0
    assert min(pl["rankmap-b"]["simulated_seconds"], pl["rankmap-c"]["simulated_seconds"]) <= \
        pl["block"]["simulated_seconds"]
    html = (tmp_path / "demo" / "simulated" / "report.html").read_text()
    for f in re.findall(r"src='([^']+)'", html):
        assert (tmp_path / "demo" / "simulated" / f).stat().st_size > 1000, f
    assert "rankmap-c" in html and len(re.findall(r"src='", html)) == 11


# --------------------------------------------------------------------------- traces as traffic

def test_smpi_trace_matches_the_pmpi_profile(smpi_ok, tmp_path):
    """The same workload: SMPI's time-independent trace and rankmap's PMPI profiler under real
    Open MPI record the same point-to-point bytes and messages, pair by pair."""
    from rankmap.slurm import smpi
    p = plat.preset("desmos")
    d = plat.write(p, tmp_path / "d")
    args = ["-N", "18", "-i", "2"]
    hf = smpi.write_hostfile(plat.block_allocation(p, 9), tmp_path / "hf")
    trace = tmp_path / "t" / "trace.ti"
    smpi.run([str(workload("sp_multi")), *args], p, d, hf, 9, trace=trace, compute="explicit")
    a = read_traffic(trace, "smpi", "none")
    res = rankmap("profile", "--out", tmp_path / "prof", "--", *launcher("openmpi", 9),
                  native.artifact("workloads", "openmpi", "sp_multi"), *args)
    assert res.returncode == 0, res.stderr
    b = read_traffic(tmp_path / "prof", "profile", "none")
    assert (abs(a.bytes - b.bytes) > 0).nnz == 0 and a.bytes.sum() > 0
    assert (abs(a.msgs - b.msgs) > 0).nnz == 0


def test_trace_reader_details(smpi_ok, tmp_path):
    """PROC_NULL sends, alltoallv pairs, collectives as SMPI's default algorithms, moved traces."""
    from rankmap.slurm import smpi
    p = plat.preset("angara-k1")
    d = plat.write(p, tmp_path / "k1")
    hf = smpi.write_hostfile(plat.block_allocation(p, 6), tmp_path / "hf")
    trace = tmp_path / "t" / "trace.ti"
    smpi.run([str(workload("spmv")), "-v", "alltoall", "-n", "4096", "-i", "3"], p, d, hf, 6, trace=trace,
             compute="explicit")
    t = read_traffic(trace)                       # format and model detected
    assert t.format == "smpi (collectives: smpi)" and t.size == 6
    none = read_traffic(trace, "smpi", "none")
    assert none.bytes.sum() > 0 and (t.bytes - none.bytes).min() >= 0   # the allreduces add pairs
    shutil.move(str(tmp_path / "t"), str(tmp_path / "moved"))           # the index names absolute paths
    assert read_traffic(tmp_path / "moved" / "trace.ti", "smpi", "none").bytes.sum() == none.bytes.sum()
    with pytest.raises(UserError, match="missing"):
        (tmp_path / "bad.ti").write_text("/nowhere/x.ti_files/1_rank-1.txt\n")
        read_traffic(tmp_path / "bad.ti", "smpi")


# --------------------------------------------------------------------------- network model

def test_predict_by_hand():
    """Two nodes one link apart, ranks 0,1 on n0 and 2 on n1: every term by hand."""
    spec = {"hosts": ["a", "b"], "node_topology": ["pack:1 core:2"], "torus": "2", "coords": {"a": [0], "b": [1]}}
    m = mspec.build(spec)
    net = Network(link_bw=1e9, link_lat=1e-6, loop_bw=10e9, loop_lat=0.1e-6, nic_bw=None)
    M = sp.csr_matrix(np.array([[0, 1e6, 2e6], [0, 0, 0], [0, 0, 0]]))
    C = sp.csr_matrix(np.array([[0, 10, 4], [0, 0, 0], [0, 0, 0]]))
    r = predict(M, C, m, np.array([0, 1, 2]), net)
    lat = 10 * 0.1e-6 + 4 * 1e-6
    serial = 1e6 / 10e9 + 2e6 / 1e9
    assert r["latency"] == pytest.approx(lat)
    assert r["bounds"]["serial"] == pytest.approx(serial) and r["bounds"]["links"] == pytest.approx(2e-3)
    assert r["seconds"] == pytest.approx(lat + serial)
    net.nic_bw = 0.5e9     # each router passes the 2 MB at 0.5 GB/s: 4 ms; rank 0 also sends it at that rate
    r = predict(M, C, m, np.array([0, 1, 2]), net)
    assert r["bounds"]["nic"] == pytest.approx(4e-3)
    assert r["bounds"]["serial"] == pytest.approx(1e6 / 10e9 + 4e-3) and r["limited_by"] == "serial"
    r = predict(M, C, m, np.array([0, 2, 1]), net)   # rank 1 across the link, rank 2 beside rank 0
    assert r["bounds"]["nic"] == pytest.approx(2e-3) and r["latency"] == pytest.approx(10e-6 + 0.4e-6)


def test_predict_counts_zero_byte_messages():
    """A pair that sent only zero-byte messages (no byte entry) still pays their latency."""
    spec = {"hosts": ["a", "b"], "node_topology": ["pack:1 core:2"], "torus": "2", "coords": {"a": [0], "b": [1]}}
    m = mspec.build(spec)
    net = Network(link_bw=1e9, link_lat=1e-6, loop_bw=10e9, loop_lat=0.1e-6, nic_bw=None)
    M = sp.csr_matrix(np.array([[0, 1e6, 0], [0, 0, 0], [0, 0, 0]]))
    C = sp.csr_matrix(np.array([[0, 10, 500], [0, 0, 0], [0, 0, 0]]))   # 500 empty sends 0 -> 2
    r = predict(M, C, m, np.array([0, 1, 2]), net)
    assert r["latency"] == pytest.approx(10 * 0.1e-6 + 500 * 1e-6)
    assert r["messages"] == 510 and r["bounds"]["serial"] == pytest.approx(1e6 / 10e9)


def test_predict_cli(tmp_path):
    np.savez(tmp_path / "m.npz", bytes=np.array([[0, 5e6], [5e6, 0]]))
    (tmp_path / "hf").write_text("a\nb\n")
    res = rankmap("predict", tmp_path / "m.npz", tmp_path / "hf", "--nodes", "a,b", "--node-topology", "pack:1 core:2",
                  "--link-bw", "1", "--link-lat", "1", "--loopback-bw", "10", "--loopback-lat", "0.1", "--json")
    assert res.returncode == 0, res.stderr
    est = json.loads(res.stdout)["estimates"]
    assert est["hf"]["seconds"] == pytest.approx(5e-3 + 1e-6 * 2, rel=1e-6)   # 5 MB at 1 GB/s, 1 message
    assert est["block"]["seconds"] < est["hf"]["seconds"]                      # block keeps both on node a
    one_error_line(rankmap("predict", tmp_path / "m.npz", tmp_path / "hf", "--nodes", "a,b", "--node-topology",
                           "pack:1 core:2"), "network's speed is unknown")
