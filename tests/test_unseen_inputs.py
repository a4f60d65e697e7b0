"""Inputs a new user brings that the repository's own data never had: contradictory machine
options, METIS graphs as other tools write them, node lists as sites write them, traffic
round trips through every format, and the Python API fed what a script has at hand. Each
case was a traceback, a silently ignored option or a silently changed result before its fix.
Files are written by the tests; the runs are real (no mocks)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import one_error_line, run_cli

DATA = Path(__file__).parent / "data" / "bad-inputs"
RING4 = DATA / "ring4.csv"
MACHINE = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:1"]


def placed(d: Path) -> list[tuple[str, str]]:
    """(host, core) of each rank of a mapping directory, checked against its other files."""
    rows = [ln.split() for ln in (d / "binding.txt").read_text().splitlines() if ln.strip() and ln[0] != "#"]
    assert [int(r[0]) for r in rows] == list(range(len(rows)))
    hosts = [ln.strip() for ln in (d / "hostfile").read_text().splitlines() if ln.strip() and ln[0] != "#"]
    assert hosts == [r[1] for r in rows]
    return [(r[1], r[2]) for r in rows]


@pytest.fixture(scope="module")
def torus_mapping(tmp_path_factory):
    d = tmp_path_factory.mktemp("torus") / "m"
    res = run_cli("map", RING4, *MACHINE, "--torus", "2", "--out", d)
    assert res.returncode == 0, res.stderr
    return d


# --------------------------------------------------------------------------- contradictory machine options

@pytest.mark.parametrize("extra, named", [
    (["--torus", "2"], "--torus"),
    (["--nodes", "n[1-2]"], "--nodes"),
    (["--level-costs", "5,2,1"], "--level-costs"),
    (["--oversubscribe", "2", "--switch-tree", "2"], "--switch-tree, --oversubscribe"),
])
def test_machine_file_with_other_machine_options_is_refused(tmp_path, torus_mapping, extra, named):
    """--machine describes the whole machine: a --torus or --nodes beside it used to be
    ignored without a word (the mapping was made on the old machine)."""
    res = run_cli("map", RING4, "--machine", torus_mapping, *extra, "--out", tmp_path / "m")
    one_error_line(res, f"--machine {torus_mapping} describes the whole machine; {named} would be ignored")
    assert not (tmp_path / "m").exists()
    res = run_cli("evaluate", RING4, torus_mapping, "--machine", torus_mapping, *extra)
    one_error_line(res, "describes the whole machine")


def test_machine_file_alone_still_maps(tmp_path, torus_mapping):
    res = run_cli("map", RING4, "--machine", torus_mapping, "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert sorted(placed(tmp_path / "m")) == sorted(placed(torus_mapping))


@pytest.mark.parametrize("net", [[], ["--switch-tree", "2"], ["--network", "fat-tree:2x1"],
                                 ["--network", "dragonfly:1x2x1"]])
def test_hop_cost_without_a_torus_is_refused(tmp_path, net):
    """--hop-cost prices torus links; on a tree it changed nothing, silently."""
    res = run_cli("map", RING4, *MACHINE, *net, "--hop-cost", "5", "--out", tmp_path / "m")
    one_error_line(res, "--hop-cost 5: prices the links of a torus or mesh")


@pytest.mark.parametrize("net", [["--torus", "2"], ["--mesh", "2"], ["--network", "torus:2"],
                                 ["--network", "mesh:2"]])
def test_hop_cost_on_a_torus_is_used(tmp_path, net):
    res = run_cli("map", RING4, *MACHINE, *net, "--hop-cost", "5", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads((tmp_path / "m" / "machine.json").read_text())["hop_cost"] == "5"


# --------------------------------------------------------------------------- format round trips

@pytest.mark.parametrize("ext", ["csv", "mtx", "npz", "dat", "graph"])
def test_round_trip_keeps_ranks_that_exchange_nothing(tmp_path, ext):
    """Ranks 5 and 6 of this 7-rank graph exchange nothing: converted to CSV they used to
    vanish (a CSV's size is its highest rank), so the job read back had 5 ranks."""
    from rankmap.profiler.formats import read_traffic
    src = tmp_path / "g.graph"
    src.write_text("7 2 1\n2 4\n1 4 3 6\n2 6\n\n\n\n\n")
    dst = tmp_path / f"out.{ext}"
    res = run_cli("convert", src, dst)
    assert res.returncode == 0, res.stderr
    a, b = read_traffic(src), read_traffic(dst)
    assert b.size == 7
    assert abs((a.bytes + a.bytes.T) - (b.bytes + b.bytes.T)).sum() == 0


def test_a_single_silent_rank_survives_csv(tmp_path):
    from rankmap.profiler.formats import read_traffic
    src = tmp_path / "one.graph"
    src.write_text("1 0\n\n")
    res = run_cli("convert", src, tmp_path / "one.csv")
    assert res.returncode == 0, res.stderr
    assert read_traffic(tmp_path / "one.csv").size == 1
