"""Traffic formats, `rankmap convert`, and `rankmap map` / `evaluate` through the CLI:
outputs validate, round trips are exact, bad input ends in one clear line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import read_traffic as read, write

from conftest import SHARED, one_error_line, run_cli as rankmap, spawn_cli

MATRICES = SHARED / "matrices"


@pytest.fixture(autouse=True)
def _real_matrices(shared):
    """Most of these tests read the real matrices of ../shared/data."""


# --------------------------------------------------------------------------- readers

def test_mpip_drops_the_row_total_diagonal():
    t = read(MATRICES / "npb_lu_64.csv")
    assert t.format == "mpip" and t.size == 64
    assert t.bytes.diagonal().sum() == 0
    assert t.bytes[0, 1] == 101256724


def test_treematch_dense():
    t = read(MATRICES / "pennant_32.communication_matrix_p2p.message_size.dat")
    assert t.format == "treematch" and t.size == 32 and t.bytes[0, 1] == 8244600


def test_amfch_log_embedded_in_program_output(tmp_path):
    m = np.array([[0, 5, 0], [2, 0, 7], [0, 1, 0]])
    log = ["LU benchmark, class C", "iterations 250", "3 4 5",            # a 1x3 row is not a square matrix
           "amfch_statistics (words sent):"] + [f"{r}: " + " ".join(map(str, row)) for r, row in enumerate(m)] + \
          ["Time in seconds = 12.3", " 1 2", " 3 4"]                     # a 2x2 block, but before no marker
    f = tmp_path / "log.txt"
    f.write_text("\n".join(log) + "\n")
    t = read(f)
    assert t.format == "amfch" and t.size == 3
    assert (t.bytes.toarray() == m * 8).all()                            # 64-bit words -> bytes
    two = tmp_path / "two.txt"
    two.write_text("1 2\n3 4\nsome text\n5 6\n7 8\n")
    with pytest.raises(UserError, match="2 square integer matrices"):
        read(two, "amfch")


def test_open_mpi_monitoring_dump(tmp_path):
    for r in range(2):
        (tmp_path / f"mon.{r}.prof").write_text(
            f"# POINT TO POINT\nE\t{r}\t{1 - r}\t{100 * (r + 1)} bytes\t{r + 1} msgs sent\t0,0\n"
            f"I\t{r}\t{1 - r}\t8 bytes\t1 msgs sent\n")
    t = read(tmp_path / "mon")
    assert t.format == "ompi" and t.bytes.toarray().tolist() == [[0, 108], [208, 0]]


@pytest.mark.parametrize("ext", [".graph", ".mtx", ".npz", ".csv", ".dat"])
def test_round_trips(tmp_path, ext):
    t = read(MATRICES / "miniFE_64.csv")
    out = tmp_path / f"x{ext}"
    write(t, out)
    back = read(out)
    if ext == ".graph":      # an undirected graph: compare W = M + M^T
        assert abs((back.bytes + back.bytes.T) - (t.bytes + t.bytes.T)).sum() == 0
    else:
        assert abs(back.bytes - t.bytes).sum() == 0


def test_metis_graph_checks(tmp_path):
    bad = tmp_path / "bad.graph"
    bad.write_text("3 2 001\n2 5\n1 5 3 4\n2 3\n")       # 2-3 weight 4 one way, 3 the other
    with pytest.raises(UserError, match="not symmetric"):
        read(bad)
    bad.write_text("3 5 001\n2 5\n1 5\n\n")
    with pytest.raises(UserError, match="header says 5 edges"):
        read(bad)


def test_metis_graph_read_at_once_and_checked_per_line(tmp_path):
    """Clean lists are parsed by NumPy in one go; a bad number anywhere still gets the
    per-line parser's message, with its line."""
    g = tmp_path / "g.graph"
    g.write_text("% a comment\n4 3 011\n7 2 5 3 1\n1 1 5\n1 1 1 4 +2\n2 3 2\n")   # vertex weights first
    t = read(g)
    assert t.bytes.toarray().tolist() == [[0, 2.5, 0.5, 0], [2.5, 0, 0, 0], [0.5, 0, 0, 1], [0, 0, 1, 0]]
    g.write_text("4 3 011\n7 2 5 3 1\n1 1 5\n1 1 1 4 2.5\n2 3 2\n")
    with pytest.raises(UserError, match=r"g.graph:4: edge weight '2.5' is not a whole number"):
        read(g)
    g.write_text("4 3 011\n7 2 5 3 1\n1 1 5\n1 1 1 9 2\n2 3 2\n")
    with pytest.raises(UserError, match=r"g.graph:4: neighbour"):
        read(g)


@pytest.mark.parametrize("content,fragment", [
    ("0 1 2\n1 0\n2 1 0\n", "row has 2 values"),                 # truncated row
    ("0 nan\nnan 0\n", "NaN"),
    ("0 -5\n-5 0\n", "negative traffic"),
    ("", "empty"),
])
def test_bad_dense_matrices(tmp_path, content, fragment):
    f = tmp_path / "m.dat"
    f.write_text(content)
    with pytest.raises(UserError, match=fragment):
        read(f, "treematch")


def test_csv_errors(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("src,dst,bytes\n0,1,10\n1,x,3\n")
    with pytest.raises(UserError, match=r"t.csv:3: destination rank 'x' is not a number"):
        read(f)


# --------------------------------------------------------------------------- the CLI

MACHINE = ["--nodes", "n[1-4]", "--node-topology", "pack:2 core:8"]


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    d = tmp_path_factory.mktemp("map") / "lu"
    res = rankmap("map", MATRICES / "npb_lu_64.csv", *MACHINE, "--out", d, "--plots", "--seed", "2")
    assert res.returncode == 0, res.stderr
    return d


def test_map_outputs_validate(mapped):
    hosts = (mapped / "hostfile").read_text().split()
    assert len(hosts) == 64 and set(hosts) == {"n1", "n2", "n3", "n4"}
    rows = [ln.split() for ln in (mapped / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
    assert [int(r[0]) for r in rows] == list(range(64))
    assert len({(r[1], r[2]) for r in rows}) == 64                     # one rank per core
    assert all(r[1] == h for r, h in zip(rows, hosts))
    assert all(0 <= int(r[2]) < 16 for r in rows)
    for r, line in enumerate((mapped / "rankfile").read_text().splitlines()):
        assert line == f"rank {r}={hosts[r]} slot={rows[r][2]}"
    assert (mapped / "machinefile").read_text().splitlines() == [f"{h}:1" for h in hosts]
    rep = json.loads((mapped / "report.json").read_text())
    assert rep["metrics"]["rankmap"]["sum_com"] <= rep["metrics"]["block"]["sum_com"]
    assert rep["metrics"]["rankmap"]["sum_com"] == pytest.approx(rep["cost"])
    assert (mapped / "heatmap-rankmap.png").stat().st_size > 1000


def test_map_is_deterministic(mapped, tmp_path):
    res = rankmap("map", MATRICES / "npb_lu_64.csv", *MACHINE, "--out", tmp_path / "again", "--seed", "2")
    assert res.returncode == 0, res.stderr
    for f in ("hostfile", "binding.txt"):
        assert (tmp_path / "again" / f).read_text() == (mapped / f).read_text()


def test_map_refuses_to_overwrite(mapped):
    one_error_line(rankmap("map", MATRICES / "npb_lu_64.csv", *MACHINE, "--out", mapped), "--force")


def test_evaluate_reads_the_mapping_back(mapped):
    res = rankmap("evaluate", MATRICES / "npb_lu_64.csv", mapped, "--json")
    assert res.returncode == 0, res.stderr
    d = json.loads(res.stdout)
    rep = json.loads((mapped / "report.json").read_text())
    assert d["metrics"][mapped.name]["sum_com"] == pytest.approx(rep["metrics"]["rankmap"]["sum_com"])
    assert set(d["metrics"]) >= {mapped.name, "block", "cyclic", "random"}
    # a plain hostfile works too (ranks take their host's cores in order)
    res = rankmap("evaluate", MATRICES / "npb_lu_64.csv", mapped / "hostfile", "--machine", mapped)
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("opts", [["--fill", "spread", "--network", "tofu:1x1x1"],
                                  ["--oversubscribe", "4", "--network", "fat-tree:3x4"],
                                  ["--oversubscribe", "2"]])
def test_map_reports_what_evaluate_finds_on_a_part_of_the_machine(tmp_path, opts):
    """--fill spread and oversubscribed cores search a part of the machine's slots; the
    mapping's metrics in report.json are the whole machine's (machine.json's), as evaluate's:
    single-child levels of the part are not dropped from tree hop-bytes (40 against 160 B)."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,10\n1,2,10\n2,3,7\n3,0,5\n4,5,9\n")
    res = rankmap("map", tmp_path / "t.csv", "--nodes", "n[1-12]", "--node-topology", "pack:2 numa:2 core:2",
                  *opts, "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    rep = json.loads((tmp_path / "m" / "report.json").read_text())["metrics"]["rankmap"]
    res = rankmap("evaluate", tmp_path / "t.csv", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    ev = json.loads(res.stdout)["metrics"]
    for k in ("sum_com", "tree_hop_bytes", "net_hop_bytes", "max_link_load", "internode_fraction"):
        assert ev["m"][k] == pytest.approx(rep[k]), k
    if "--oversubscribe" in opts:        # block over distinct cores first, in map and in evaluate
        blk = json.loads((tmp_path / "m" / "report.json").read_text())["metrics"]["block"]
        assert ev["block"]["sum_com"] == pytest.approx(blk["sum_com"])


def test_a_mapping_named_like_a_baseline_does_not_replace_it(mapped, tmp_path):
    import shutil
    shutil.copytree(mapped, tmp_path / "block")
    res = rankmap("evaluate", MATRICES / "npb_lu_64.csv", tmp_path / "block", "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["metrics"]
    assert {"block'", "block", "cyclic", "random"} <= set(rows)
    assert rows["block'"]["sum_com"] < rows["block"]["sum_com"]          # the mapping, and block order itself


@pytest.mark.parametrize("edit,fragment", [(" extra", "got 4 field(s)"), (",99", "has no core 99")])
def test_binding_lines_are_checked_whole(mapped, tmp_path, edit, fragment):
    """'63 n4 15 1' (cores written with a blank) bound rank 63 to core 15 alone, and a second
    core that the node does not have passed evaluate: both are refused."""
    rows = (mapped / "binding.txt").read_text().splitlines()
    last = len(rows) - 1 - next(i for i, r in enumerate(reversed(rows)) if r and not r.startswith("#"))
    rows[last] += edit
    (tmp_path / "binding.txt").write_text("\n".join(rows) + "\n")
    one_error_line(rankmap("evaluate", MATRICES / "npb_lu_64.csv", tmp_path / "binding.txt", "--machine", mapped),
                   fragment)


def test_imbalance_zero_is_units_of_work_not_processes(tmp_path):
    """--imbalance 0 (every core exactly its share of the units) was read as 'no --imbalance'
    and searched as oversubscribed processes (distinct cores first): map's block row then
    differed from evaluate's."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n" + "".join(f"{i},{(i * 7 + 3) % 41},{10 + i}\n"
                                                                  for i in range(41)))
    res = rankmap("map", tmp_path / "t.csv", "--nodes", "n[1-4]", "--node-topology", "core:2", "--imbalance", "0",
                  "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert not any("--oversubscribe" in x for x in rep["notes"]), rep["notes"]
    ev = json.loads(rankmap("evaluate", tmp_path / "t.csv", tmp_path / "m", "--json").stdout)["metrics"]
    assert ev["block"]["sum_com"] == pytest.approx(rep["metrics"]["block"]["sum_com"])


@pytest.mark.slow
def test_map_on_a_torus_with_coords(tmp_path):
    coords = tmp_path / "coords"
    coords.write_text("".join(f"n{i:02d} {i % 3} {(i // 3) % 3} {i // 9}\n" for i in range(36)))
    res = rankmap("map", MATRICES / "lulesh_64.csv", "--nodes", "n[00-35]", "--node-topology", "pack:2 core:6",
                  "--torus", "3x3x4", "--coords", coords, "--mode", "whole-cluster", "--out", tmp_path / "m",
                  "--plots", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert len(rep["nodes"]) == 6                  # 64 ranks on 12-core nodes: 6 nodes, chosen compactly
    m = rep["metrics"]
    assert m["rankmap"]["net_hop_bytes"] <= m["block"]["net_hop_bytes"]
    assert (tmp_path / "m" / "links-rankmap.png").exists()
    spec = json.loads((tmp_path / "m" / "machine.json").read_text())
    assert set(spec["coords"]) == set(rep["nodes"])


def test_convert_cli(tmp_path):
    res = rankmap("convert", MATRICES / "npb_bt_64.csv", tmp_path / "graph.txt", "--units", "words")
    assert res.returncode == 0, res.stderr
    head = (tmp_path / "graph.txt").read_text().splitlines()
    assert head[1].split()[0] == "64" and head[1].split()[2] == "001"
    res = rankmap("convert", tmp_path / "graph.txt", tmp_path / "back.mtx")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("args,fragment", [
    (["map", "/nonexistent.csv", *MACHINE, "--out", "o"], "no such file"),
    (["map", MATRICES / "npb_lu_64.csv", "--nodes", "n[1-3]", "--node-topology", "pack:2 core:8", "--out", "o"],
     "64 ranks but only 48 slots"),
    (["map", MATRICES / "npb_lu_64.csv", "--nodes", "n[1-4", "--node-topology", "pack:2 core:8", "--out", "o"],
     "bad hostlist"),
    (["map", MATRICES / "npb_lu_64.csv", *MACHINE, "--level-costs", "1,2", "--out", "o"], "3 levels"),
    (["map", MATRICES / "npb_lu_64.csv", "--nodes", "n[1-4]", "--node-topology", "pack:two", "--out", "o"],
     "node topology"),
    (["map", MATRICES / "npb_lu_64.csv", "--nodes", "n[1-4]", "--node-topology", "n[1-5]=pack:2 core:8", "--out",
      "o"], "not in the node list"),
    (["map", MATRICES / "npb_lu_64.csv", *MACHINE, "--torus", "2x1", "--out", "o"], "do not fit"),
    (["evaluate", MATRICES / "npb_lu_64.csv", "/etc/hostname", *MACHINE], "not in the node list"),
])
def test_cli_bad_input(tmp_path, args, fragment):
    one_error_line(rankmap(*args, cwd=tmp_path), fragment)


def test_evaluate_rank_count_mismatch(mapped, tmp_path):
    short = tmp_path / "hostfile"
    short.write_text("n1\n" * 10)
    one_error_line(rankmap("evaluate", MATRICES / "npb_lu_64.csv", short, "--machine", mapped), "10 ranks")


def test_unknown_host_in_coords(tmp_path):
    coords = tmp_path / "coords"
    coords.write_text("n1 0\nn2 1\n")
    one_error_line(rankmap("map", MATRICES / "npb_lu_64.csv", *MACHINE, "--torus", "4", "--coords", coords,
                           "--out", tmp_path / "o"), "no coordinates for host n3")


def test_map_json_is_only_json_when_metis_complains(tmp_path):
    """83 ranks on 32 nodes of 3-5 cores: METIS's recursive bisection is asked for parts of
    about one vertex and prints "***Cannot bisect a graph with 0 vertices!" with printf, to
    the process's stdout, where the JSON goes: stdout must parse (a new process, since the C
    library writes to file descriptor 1, which no in-process runner captures)."""
    import scipy.sparse as sp
    rng = np.random.default_rng(1)
    n = 83
    r, c = rng.integers(0, n, 6 * n), rng.integers(0, n, 6 * n)
    keep = r != c
    sp.save_npz(tmp_path / "t.npz", sp.csr_matrix((rng.uniform(1, 1e6, 6 * n)[keep], (r[keep], c[keep])), shape=(n, n)))
    res = spawn_cli("map", tmp_path / "t.npz", "--nodes", "n[0-31]", "--node-topology", "n[0-9]=pack:1 core:3",
                    "--node-topology", "n[10-20]=pack:2 core:2", "--node-topology", "n[21-31]=core:5",
                    "--network", "dragonfly:8x2x2:global=3", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["traffic"]["ranks"] == n
