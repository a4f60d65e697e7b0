"""Fuzzing round 5's defects: network descriptions, simulated platforms and the collective
kernels given what the developers never tried. Each test failed before its fix; the runs are
real (the CLI, SimGrid)."""
from __future__ import annotations

import pytest

from conftest import one_error_line, run_cli


def test_platform_refuses_a_fat_tree_simgrid_cannot_load_with_a_nic_cap(tmp_path):
    """SimGrid 3.32 gives two limiter links one name when a fat tree's switches outnumber its
    nodes (12 switches over 8 nodes here), and the replay aborted with a backtrace tail."""
    res = run_cli("platform", "--fat-tree", "3;2,2,2;1,2,2;1,1,1", "--out", tmp_path / "p")
    one_error_line(res, "12 switches outnumber its 8 nodes")
    assert "--nic-bw none" in res.stderr
    ok = run_cli("platform", "--fat-tree", "3;2,2,2;1,2,2;1,1,1", "--nic-bw", "none", "--out", tmp_path / "q")
    assert ok.returncode == 0, ok.stderr
    # the preset's fat tree (6 switches, 32 nodes) keeps its NIC cap
    assert run_cli("platform", "fat-tree", "--out", tmp_path / "r").returncode == 0


def _slurm_map(tmp_path, conf: str, out: str):
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,2,1000\n2,0,1000\n1,3,500\n")
    (tmp_path / f"{out}.conf").write_text(conf)
    return run_cli("map", tmp_path / "t.csv", "--nodes", "n[1-4]", "--node-topology", "pack:1 core:1",
                   "--network", f"slurm:{tmp_path / f'{out}.conf'}", "--algorithm", "block", "--out", tmp_path / out)


def test_slurm_tree_with_leaves_at_different_depths_counts_only_real_links(tmp_path):
    """n1, n2 under s1 under the top s0; n3, n4 under s3 under s2 under s0: n1 -> n3 is 5 links
    (n1-s1-s0-s2-s3-n3). The shorter path's repeated level was counted as a link (6), and
    carried a load of its own."""
    import json

    import numpy as np

    from rankmap.mapper import metrics, spec
    from rankmap.profiler.formats import read_traffic
    conf = "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s3 Nodes=n[3-4]\nSwitchName=s2 Switches=s3\nSwitchName=s0 Switches=s[1-2]\n"
    res = _slurm_map(tmp_path, conf, "m")
    assert res.returncode == 0, res.stderr
    block = json.loads((tmp_path / "m" / "report.json").read_text())["metrics"]["block"]
    assert block["net_hop_bytes"] == 2000 * 5 + 500 * 5 and block["dilation_max"] == 5
    m = spec.build(spec.load(tmp_path / "m"))
    t = read_traffic(tmp_path / "t.csv")
    r = metrics.evaluate(t.bytes, m, np.arange(4))
    ref = metrics.evaluate(t.bytes, m, np.arange(4), numpy_only=True)
    assert r["net_hop_bytes"] == ref["net_hop_bytes"] == 12500
    # every byte is on each link of its route once: the loads add up to the hop-bytes (a
    # load on the repeated level's link made them 15,000)
    assert metrics.link_loads(t.bytes, m, np.arange(4)).sum() == 12500
    assert metrics.link_loads(t.bytes, m, np.arange(4), numpy_only=True).sum() == 12500
    # ranks 0 and 1 on one node (n1): no link at all (the repeated level read -1 below the
    # common level and made a node 2 links from itself)
    same = np.array([0, 0, 2, 3])
    for numpy_only in (False, True):
        r = metrics.evaluate(t.bytes, m, same, numpy_only=numpy_only)
        assert r["net_hop_bytes"] == 2000 * 5 + 500 * 5 - 0 and r["dilation_max"] == 5
    assert m.node_hops(np.array([0, 3]), np.array([0, 3])).tolist() == [0, 0]


def test_slurm_switch_under_two_switches_is_refused(tmp_path):
    conf = "SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\nSwitchName=s0 Switches=s[1-2]\nSwitchName=s9 Switches=s1\n"
    one_error_line(_slurm_map(tmp_path, conf, "m"), "switch s1 is listed under switches s0 and s9")


def test_platform_torus_with_unit_dimensions_replays(tmp_path):
    """SimGrid 3.32 declared the self-link of each size-1 dimension under one name and aborted
    (4x1x1, 1x1x4): a 4x1x1 torus now replays as the ring of 4 it is."""
    import json

    from conftest import ti_trace
    trace = ti_trace(tmp_path, [[f"isend {(r + 1) % 4} 0 200000 2", f"irecv {(r + 3) % 4} 0 200000 2", "waitall"]
                                for r in range(4)])
    (tmp_path / "hf").write_text("n0\nn1\nn2\nn3\n")
    times = {}
    for dims in ("4x1x1", "1x1x4", "4"):
        res = run_cli("platform", "--torus", dims, "--cores", "4", "--out", tmp_path / dims)
        assert res.returncode == 0, res.stderr
        rep = run_cli("replay", trace, tmp_path / "hf", "--platform", tmp_path / dims, "--json")
        assert rep.returncode == 0, rep.stderr
        times[dims] = json.loads(rep.stdout)["hf"]["simulated_seconds"]
    assert times["4x1x1"] == times["1x1x4"] == times["4"] > 0


def test_replay_says_why_simgrid_refused_the_platform(tmp_path):
    """A hand-edited platform (platform.sha256 deleted: used as it is) with a unit SimGrid does
    not know: the error named only the backtrace's tail; SimGrid's own line at time 0 is kept."""
    from conftest import ti_trace
    trace = ti_trace(tmp_path, [["isend 1 0 2000 2", "irecv 1 0 2000 2", "waitall"],
                                ["isend 0 0 2000 2", "irecv 0 0 2000 2", "waitall"]])
    (tmp_path / "hf").write_text("n0\nn1\n")
    p = tmp_path / "p"
    assert run_cli("platform", "--torus", "4", "--cores", "4", "--out", p).returncode == 0
    (p / "platform.sha256").unlink()
    for f in ("platform.xml", "platform-nocompute.xml"):
        (p / f).write_text((p / f).read_text().replace('bw="6GBps"', 'bw="6XBps"'))
    res = run_cli("replay", trace, tmp_path / "hf", "--platform", p)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "unknown unit: XBps" in res.stderr, res.stderr


@pytest.mark.parametrize("conf,fragment", [
    ("BlockName=b1 Nodes=n[1-2]\nBlockName=b2\nBlockName=b3 Nodes=n[3-4]\nBlockSizes=2,4\n",
     "block b2 has no Nodes="),
    ("BlockName=b1 Nodes=n[1-3]\nBlockName=b2 Nodes=n[4-5]\nBlockSizes=3,6\n",
     "block b2 has 2 node(s) and BlockSizes=3,6 makes a base block 3 node(s)"),
])
def test_slurm_block_files_slurm_refuses_are_refused(tmp_path, conf, fragment):
    """An empty block was dropped (b1 and b3 became one aggregate) and blocks of unequal sizes
    made ragged aggregates; Slurm's topology/block refuses both files."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n")
    (tmp_path / "b.conf").write_text(conf)
    one_error_line(run_cli("map", tmp_path / "t.csv", "--nodes", "n[1-4]", "--node-topology", "pack:1 core:1",
                           "--network", f"slurm:{tmp_path / 'b.conf'}", "--out", tmp_path / "m"), fragment)


def test_dragonfly_whose_router_pairs_outgrow_memory_is_refused_up_front(tmp_path):
    """2048 groups of 2048 routers: within 2^22 positions, but its link arrays (groups x
    routers^2 + groups^2 entries) asked numpy for ~69 GB, an out-of-memory error late."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n1,2,100\n2,3,100\n")
    one_error_line(run_cli("map", tmp_path / "t.csv", "--nodes", "n[0-3]", "--node-topology", "pack:1 core:1",
                           "--network", "dragonfly:2048x2048x1", "--out", tmp_path / "m"),
                   "local and global router-to-router entries")


def test_slurm_tree_deeper_than_rankmap_reads_is_refused(tmp_path):
    """128 levels wrapped the 8-bit hop tables (two nodes under one leaf read 514 links apart);
    1,200 ended in an internal RecursionError."""
    conf = "SwitchName=c0 Nodes=n[1-2]\nSwitchName=d0 Nodes=n[3-4]\n" + "".join(
        f"SwitchName=c{i + 1} Switches=c{i}\n" for i in range(70)) + "SwitchName=top Switches=c70,d0\n"
    one_error_line(_slurm_map(tmp_path, conf, "m"), "levels of switches above a node; rankmap reads at most 64")


def test_switch_tree_mapping_is_read_back_as_the_same_network(tmp_path):
    """machine.json froze --switch-tree 4x8 as fat-tree:4x8, which now means full bisection:
    evaluate and predict of the mapping saw another network than map (busiest link 6.2e6
    against report.json's 2.3e7)."""
    import json
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 9) % 32},{1000 * (i + 1)}\n" for i in range(32)))
    m = tmp_path / "m"
    res = run_cli("map", t, "--nodes", "n[0-31]", "--node-topology", "pack:1 core:1", "--switch-tree", "4x8",
                  "--algorithm", "block", "--out", m)
    assert res.returncode == 0, res.stderr
    mapped = json.loads((m / "report.json").read_text())["metrics"]["block"]
    ev = run_cli("evaluate", t, m, "--json")
    assert ev.returncode == 0, ev.stderr
    again = json.loads(ev.stdout)["metrics"]
    for row in (again["m"], again["block"]):        # the mapping (block order) and evaluate's block
        assert row["max_link_load"] == mapped["max_link_load"] > 0
        assert row["max_global_link_load"] == mapped["max_global_link_load"]
