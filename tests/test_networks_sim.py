"""Fat-tree and dragonfly platforms under real SimGrid SMPI: one-way times follow the links
of rankmap's own routes (hops), a fat tree's uplinks are shared as oversubscribed, and
`rankmap predict` on the dragonfly agrees with the simulated communication time."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from conftest import APPS, require, run_cli, smpi_burst
from rankmap.mapper import spec as mspec
from rankmap.slurm import platform as plat

pytestmark = pytest.mark.smpi


@pytest.fixture(scope="module")
def progs(tmp_path_factory):
    require(bool(shutil.which("smpirun") and shutil.which("smpicc")), "SimGrid SMPI (libsimgrid-dev) not installed")
    out = tmp_path_factory.mktemp("smpi")
    res = subprocess.run(["smpicc", "-O1", "-o", str(out / "pingpong"), str(APPS / "pingpong.c")],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    return out


def oneway(prog: Path, pdir: Path, hosts: list[str], big: int = 1 << 22) -> dict:
    from rankmap.slurm import smpi
    p, d = plat.load(pdir)
    hf = smpi.write_hostfile(hosts, pdir / "hostfile-pp")
    r = smpi.run([str(prog), str(big)], p, d, hf, len(hosts))
    return {(int(m.group(1)), int(m.group(2))): float(m.group(3))
            for m in re.finditer(r"peer (\d+) bytes (\d+) oneway_us ([0-9.]+)", r.stdout)}


def test_dragonfly_platform_latency_is_rankmaps_hops(progs, tmp_path):
    """4 groups x 4 routers x 2 nodes, from n2 (group 0, router 1, which holds the link to
    group 1): same router, same group, group 1 with no local hop or one, group 3 with one
    local hop on each side of the global link — each costs the links of the machine's
    minimal route (node links included), 1 us apiece."""
    res = run_cli("platform", "dragonfly", "--out", tmp_path / "p", "--link-lat", "1", "--loopback-lat", "0.1")
    assert res.returncode == 0, res.stderr
    m = mspec.build(mspec.load(tmp_path / "p" / "machine.json"))
    peers = ["n3", "n0", "n8", "n10", "n26"]
    hops = m.node_hops(np.full(len(peers), 2), np.array([m.hosts.index(h) for h in peers])).tolist()
    assert hops == [2, 3, 3, 4, 5]
    t = oneway(progs / "pingpong", tmp_path / "p", ["n2"] + peers)
    for i, h in enumerate(hops, start=1):
        assert h <= t[(i, 8)] < h + 0.05, (peers[i - 1], h, t[(i, 8)])


def test_fat_tree_uplinks_are_shared_as_oversubscribed(progs, tmp_path):
    """fat-tree: 4 leaves of 8 nodes with 2 uplinks each (4:1). One pair across leaves gets
    a whole link; the model's load per uplink is half the bytes of two such pairs."""
    assert run_cli("platform", "fat-tree", "--out", tmp_path / "p", "--nic-bw", "none").returncode == 0
    m = mspec.build(mspec.load(tmp_path / "p" / "machine.json"))
    loads = m.network.link_loads(np.array([0, 1]), np.array([8, 9]), np.array([10.0, 10.0]))
    kinds = m.network.link_kinds()
    assert loads[kinds == "global"].max() == 10.0       # 20 B over leaf 0's two uplinks
    assert "4:1" in m.network.describe()


def test_predict_follows_the_dragonfly_simulation(progs, tmp_path):
    """All ranks of group 0 send to group 2 at once (1 MB each): the global link between
    the two groups is the bottleneck in SimGrid, and predict's link bound says so."""
    assert run_cli("platform", "dragonfly", "--out", tmp_path / "p", "--link-lat", "0").returncode == 0
    hosts = [f"n{i}" for i in range(8)] + [f"n{16 + i}" for i in range(8)]   # group 0 -> group 2
    sim = smpi_burst(tmp_path, hosts, tmp_path / "p", 1 << 20)
    csv = tmp_path / "t.csv"
    csv.write_text("src,dst,bytes\n" + "".join(f"{r},{r + 8},{1 << 20}\n" for r in range(8)))
    (tmp_path / "map").mkdir()
    (tmp_path / "map" / "hostfile").write_text("\n".join(hosts) + "\n")
    res = run_cli("predict", csv, tmp_path / "map", "--platform", tmp_path / "p", "--json")   # its machine
    assert res.returncode == 0, res.stderr
    import json
    est = json.loads(res.stdout)["estimates"]["map"]
    assert est["limited_by"] == "links"
    # 8 MB over one 6 GB/s global link: 1.40 ms in both
    assert 8 * (1 << 20) / 6e9 * 0.99 < sim < 8 * (1 << 20) / 6e9 * 1.10, sim
    assert 0.9 < est["seconds"] / sim < 1.1, (est, sim)
