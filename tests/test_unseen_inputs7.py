"""Fuzzing round 5's defects: network descriptions, simulated platforms and the collective
kernels given what the developers never tried. Each test failed before its fix; the runs are
real (the CLI, SimGrid)."""
from __future__ import annotations

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
