"""Inputs a new user brings, second pass: traffic that exchanges nothing, machines with spare
cores under --oversubscribe, and the inputs of the new-user pass listed with each test. Each
case was a traceback, a wrong message or a silently wrong result before its fix. Files are
written by the tests; the runs are real (no mocks)."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from conftest import one_error_line, run_cli

MACHINE = ["--nodes", "n[1-4]", "--node-topology", "pack:2 core:1"]


def placed(d: Path) -> list[tuple[str, str]]:
    """(host, core) of each rank of a mapping directory."""
    rows = [ln.split() for ln in (d / "binding.txt").read_text().splitlines() if ln.strip() and ln[0] != "#"]
    assert [int(r[0]) for r in rows] == list(range(len(rows)))
    return [(r[1], r[2]) for r in rows]


def finite(x) -> bool:
    """Every number in a JSON document is finite (no NaN, no infinity)."""
    if isinstance(x, dict):
        return all(finite(v) for v in x.values())
    if isinstance(x, list):
        return all(finite(v) for v in x)
    return not isinstance(x, float) or math.isfinite(x)


# --------------------------------------------------------------------------- traffic that exchanges nothing

@pytest.fixture
def silent(tmp_path) -> Path:
    """Six ranks, each sending only to itself (what the profiler records for a program that
    sends no message between ranks: an all-zero matrix but its diagonal)."""
    t = tmp_path / "silent.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{i},100\n" for i in range(6)))
    return t


@pytest.mark.parametrize("extra, chosen, hosts", [
    ([], "block", ["n1", "n1", "n2", "n2", "n3", "n3"]),
    (["--algorithm", "cyclic"], "cyclic", ["n1", "n2", "n3", "n4", "n1", "n2"]),
    (["--fill", "spread"], "block", ["n1", "n1", "n2", "n2", "n3", "n4"]),
    (["--mode", "whole-cluster"], "block", ["n1", "n1", "n2", "n2", "n3", "n3"]),
    (["--torus", "2x2"], "block", ["n1", "n1", "n2", "n2", "n3", "n3"]),
    (["--parallel", "2"], "block", ["n1", "n1", "n2", "n2", "n3", "n3"]),     # no MPI job is started
])
def test_traffic_that_exchanges_nothing_is_mapped_with_a_note(tmp_path, silent, extra, chosen, hosts):
    """Was "no traffic between distinct ranks; there is nothing to map" (exit 2), which also
    stopped `rankmap run` after pass 1 for such a program (tests/test_slurm.py runs one)."""
    m = tmp_path / "m"
    res = run_cli("map", silent, *MACHINE, *extra, "--out", m, "--plots", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["chosen"] == chosen and rep["cost"] == 0 and finite(rep)
    assert f"no traffic between distinct ranks: every placement costs the same, so the {chosen} order is returned" \
        in rep["notes"]
    assert [h for h, _ in placed(m)] == hosts
    ev = run_cli("evaluate", silent, m, "--json")
    assert ev.returncode == 0, ev.stderr
    assert finite(json.loads(ev.stdout)) and json.loads(ev.stdout)["metrics"]["m"]["sum_com"] == 0
    table = run_cli("evaluate", silent, m)
    assert table.returncode == 0 and "nan" not in table.stdout.lower() and "inf" not in table.stdout.lower()
    pr = run_cli("predict", silent, m, "--link-bw", "1", "--link-lat", "1", "--loopback-bw", "10",
                 "--loopback-lat", "0.2", "--json")
    assert pr.returncode == 0, pr.stderr
    est = json.loads(pr.stdout)["estimates"]
    assert finite(est) and {e["seconds"] for e in est.values()} == {0} and \
        {e["limited_by"] for e in est.values()} == {"nothing sent"}


def test_api_maps_traffic_that_exchanges_nothing():
    import numpy as np
    import rankmap
    res = rankmap.map(rankmap.traffic(np.zeros((3, 3))), rankmap.machine("n[1-2]", "pack:1 core:2"))
    assert res.slot_of_rank.tolist() == [0, 1, 2] and res.cost == 0 and res.chosen == "block"


# --------------------------------------------------------------------------- --oversubscribe with cores to spare

def ring_csv(tmp_path, n: int) -> Path:
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % n},{1000 * (i + 1)}\n" for i in range(n)))
    return t


@pytest.mark.parametrize("nodes, topo, over, n, per_core, extra", [
    ("n[1-2]", "pack:2 core:2", 2, 8, {1}, []),          # 8 ranks, 8 cores: was all on n1, two per core
    ("n[1-2]", "pack:2 core:2", 4, 6, {1}, []),          # fewer ranks than cores: one per core, packed fill
    ("n[1-2]", "pack:2 core:1", 3, 6, {1, 2}, []),       # 6 ranks on 4 cores: 1 or 2 each, none idle
    ("n[1-2]", "pack:2 core:1", 3, 12, {3}, []),         # every slot: as before
    ("n[1-3]", "pack:1 core:2", 2, 7, {1, 2}, ["--torus", "3"]),
    ("n[1-6]", "pack:2 core:1", 4, 8, {1}, ["--mode", "whole-cluster", "--torus", "3x2"]),   # chose 1 node
])
def test_oversubscribe_takes_distinct_cores_first(tmp_path, nodes, topo, over, n, per_core, extra):
    """--oversubscribe N packed N ranks on a core while the machine had cores to spare (the
    cost model prices a shared core at 0): 8 ranks with --oversubscribe 2 on 8 cores took
    4 cores of n1."""
    m = tmp_path / "m"
    res = run_cli("map", ring_csv(tmp_path, n), "--nodes", nodes, "--node-topology", topo, "--oversubscribe", over,
                  *extra, "--out", m, "--json")
    assert res.returncode == 0, res.stderr
    where = placed(m)
    used = {w: where.count(w) for w in where}
    assert set(used.values()) == per_core
    rep = json.loads(res.stdout)
    cores = len(rep["nodes"]) * (4 if topo == "pack:2 core:2" else 2)
    assert len(used) == min(n, cores)                   # no core idle while another takes two
    assert n == over * cores or any(x.startswith("--oversubscribe: ") for x in rep["notes"])
    assert rep["cost"] <= rep["defaults"]["block"] * (1 + 1e-12)
    again = run_cli("evaluate", ring_csv(tmp_path, n), m, "--json")        # the whole machine re-read
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["metrics"]["m"]["sum_com"] == pytest.approx(rep["cost"])


def test_api_oversubscribe_takes_distinct_cores_first():
    import numpy as np
    import rankmap
    t = rankmap.traffic(np.roll(np.eye(8), 1, axis=1) * 1e6)
    m = rankmap.machine("n[1-2]", "pack:2 core:2", oversubscribe=2)
    res = rankmap.map(t, m)
    cores = {(int(m.slot_node[s]), int(m.slot_core[s])) for s in res.slot_of_rank}
    assert len(cores) == 8 and any("one rank per core" in x for x in res.notes)
    assert rankmap.evaluate(t, m, res.slot_of_rank)["sum_com"] == pytest.approx(res.cost)


def test_imbalance_units_of_work_still_fill_as_the_partition_decides(tmp_path):
    """--imbalance (units of work, several per core) is not --oversubscribe for processes: no
    even spread is forced on it."""
    res = run_cli("map", ring_csv(tmp_path, 24), "--nodes", "n[1-2]", "--node-topology", "pack:2 core:2",
                  "--imbalance", "0.5", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert not any(x.startswith("--oversubscribe") for x in json.loads(res.stdout)["notes"])


# --------------------------------------------------------------------------- notes that must be true

@pytest.mark.parametrize("n", [4, 8])
def test_a_ring_is_not_called_a_process_grid(tmp_path, n):
    """`map` on a 4-rank ring said "the traffic is a 2 x 3 process grid (ranks in row-major
    order)", an 8-rank ring "2 x 7"."""
    res = run_cli("map", ring_csv(tmp_path, n), "--nodes", "n[1-2]", "--node-topology", "pack:2 core:2",
                  "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert not any("process grid" in x for x in json.loads(res.stdout)["notes"])


# --------------------------------------------------------------------------- dense matrices written with commas

MAP2 = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:2"]


@pytest.mark.parametrize("k", [2, 5, 6])
def test_dense_comma_separated_matrix_is_read_as_a_matrix(tmp_path, k):
    """numpy.savetxt(..., delimiter=',') of a k x k matrix: was "expected src,dst,bytes[,messages],
    got k field(s)"."""
    import numpy as np
    a = np.roll(np.eye(k), 1, axis=1) * 1e6
    np.savetxt(tmp_path / "d.csv", a + a.T, delimiter=",", fmt="%.6e")
    res = run_cli("map", tmp_path / "d.csv", *MAP2, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["traffic"]["ranks"] == k and rep["traffic"]["format"] == "treematch"
    assert rep["traffic"]["bytes"] == pytest.approx((a + a.T).sum())


@pytest.mark.parametrize("k", [3, 4])
def test_dense_3x3_and_4x4_csv_are_refused_as_ambiguous(tmp_path, k):
    """A 3 x 3 matrix with commas is also three src,dst,bytes rows: it was read so, silently
    (4 ranks, the bytes of rank 0 to rank 1 taken as rank ids)."""
    import numpy as np
    a = np.roll(np.eye(k), 1, axis=1) * 100
    np.savetxt(tmp_path / "d.csv", a + a.T, delimiter=",", fmt="%g")
    row = "src,dst,bytes" + (",messages" if k == 4 else "")
    one_error_line(run_cli("map", tmp_path / "d.csv", *MAP2, "--out", tmp_path / "m"),
                   f"d.csv: {k} rows of {k} numbers and no header: a {k} x {k} matrix, or {k} rows {row}?")
    res = run_cli("map", tmp_path / "d.csv", "--format", "treematch", *MAP2, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["traffic"]["ranks"] == k
    pairs = "".join(f"{i},{(i + 1) % k},100" + (",1" if k == 4 else "") + "\n" for i in range(k))
    (tmp_path / "p.csv").write_text(pairs)                  # k pairs without a header: as ambiguous
    one_error_line(run_cli("map", tmp_path / "p.csv", *MAP2, "--out", tmp_path / "m3"), "no header")
    for f, extra in (("p.csv", ["--format", "csv"]), ("h.csv", [])):       # said so: read as pairs
        (tmp_path / "h.csv").write_text(row + "\n" + pairs)
        res = run_cli("map", tmp_path / f, *extra, *MAP2, "--out", tmp_path / "m2", "--force", "--json")
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["traffic"]["ranks"] == k


# --------------------------------------------------------------------------- heterogeneous machines

@pytest.mark.parametrize("sep", [",", ";", " "])
def test_two_host_groups_in_one_node_topology_option(tmp_path, sep):
    """Was "node topology 'pack:2 core:2,n[3-4]=pack:1 core:8': 'core:2,n[3-4]=pack:1' is not
    TYPE:COUNT (e.g. core:6)" (the second group taken for part of hwloc's description)."""
    one_error_line(run_cli("map", ring_csv(tmp_path, 4), "--nodes", "n[1-4]", "--node-topology",
                           f"n[1-2]=pack:2 core:2{sep}n[3-4]=pack:1 core:8", "--out", tmp_path / "m"),
                   "several HOSTLIST=SPEC in one option; give each its own --node-topology")
    res = run_cli("map", ring_csv(tmp_path, 4), "--nodes", "n[1-4]", "--node-topology", "n[1-2]=pack:2 core:2",
                  "--node-topology", "n[3-4]=pack:1 core:8", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr


# --------------------------------------------------------------------------- files that are not there

@pytest.mark.parametrize("args, fragment", [
    (["map", "T", *MAP2, "--network-speeds", "NOPE", "--out", "m"],
     "--network-speeds NOPE: no such file or directory (a `rankmap probe` file or a `rankmap platform` directory)"),
    (["predict", "T", "M", "--probe", "NOPE"], "NOPE: no such file (expected a `rankmap probe` file)"),
    (["predict", "T", "M", "--platform", "NOPE"], "--platform NOPE: no such directory"),
    (["map", "T", *MAP2, "--level-costs", "@NOPE", "--out", "m"],
     "NOPE: no such file (expected a level-cost JSON file)"),
])
def test_a_missing_file_is_named_with_what_it_should_be(tmp_path, args, fragment):
    """Were "NOPE: no such file" (which option?) and, for --platform, "not a platform directory
    (no machine.json with a 'simgrid' section ...)"."""
    t, m = ring_csv(tmp_path, 4), tmp_path / "mm"
    assert run_cli("map", t, *MAP2, "--out", m).returncode == 0
    nope = str(tmp_path / "nope")
    sub = {"T": str(t), "M": str(m), "NOPE": nope, "@NOPE": "@" + nope, "m": str(tmp_path / "out")}
    one_error_line(run_cli(*[sub.get(a, a) for a in args]), fragment.replace("NOPE", nope))


@pytest.mark.parametrize("name, text, fmt", [
    ("t.tsv", "src\tdst\tbytes\n0\t1\t15\n1\t2\t3\n", "csv"),                  # pandas sep='\t'
    ("t.txt", "src  dst   bytes\n0 1  15\n1   2 3\n", "csv"),                  # blanks
    ("t.csv", "src;dst;bytes\n0;1;15\n1;2;3\n", "csv"),                        # a comma-decimal spreadsheet
    ("t.csv", "0;1;15\n1;2;3\n", "csv"),
    ("t.txt", "src dst bytes count\n0 1 15 1\n1 2 3 1\n", "mpip"),
])
def test_pairs_separated_otherwise_than_by_commas(tmp_path, name, text, fmt):
    """Were "not a traffic file rankmap can tell" (tabs) and "expected src,dst,bytes[,messages],
    got 1 field(s)" (blanks, semicolons)."""
    (tmp_path / name).write_text(text)
    res = run_cli("map", tmp_path / name, *MAP2, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    t = json.loads(res.stdout)["traffic"]
    assert (t["format"], t["ranks"], t["bytes"]) == (fmt, 3, 18.0)


# --------------------------------------------------------------------------- empty files

@pytest.mark.parametrize("name, data, fragment", [
    ("t.mtx", b"", "t.mtx: an empty file (0 bytes): no traffic in it"),        # was "no %%MatrixMarket banner"
    ("t.npz", b"", "t.npz: an empty file (0 bytes)"),                           # was "not an .npz file"
    ("t.dat", b"", "t.dat: an empty file (0 bytes)"),                           # was "not a traffic file rankmap
    ("t.txt", b"\n  \n\n", "t.txt: nothing but blank lines"),                   #   can tell; it reads ..."
    ("t.csv.gz", None, "t.csv.gz: empty once decompressed"),
])
def test_empty_traffic_files_are_called_empty(tmp_path, name, data, fragment):
    import gzip
    (tmp_path / name).write_bytes(gzip.compress(b"") if data is None else data)
    one_error_line(run_cli("map", tmp_path / name, *MAP2, "--out", tmp_path / "m"), fragment)


# --------------------------------------------------------------------------- a machine.json written by hand

@pytest.mark.parametrize("key, near", [("ranks-per-node", "ranks_per_node"), ("oversubscribed", "oversubscribe"),
                                       ("comment", None)])
def test_machine_file_with_an_unknown_field_is_refused(tmp_path, key, near):
    """A misspelt field of a hand-written machine.json was ignored: {"ranks-per-node": 1}
    mapped onto every core, {"oversubscribed": 2} onto one rank per core."""
    f = tmp_path / "machine.json"
    f.write_text(json.dumps({"hosts": ["n1", "n2"], "node_topology": ["pack:2 core:2"], key: 1}))
    one_error_line(run_cli("map", ring_csv(tmp_path, 4), "--machine", f, "--out", tmp_path / "m"),
                   f"machine.json: unknown field {key!r}" + (f" (did you mean {near!r}?)" if near else ""))


def test_machine_files_rankmap_writes_are_read_back(tmp_path):
    """Its own fields beside the documented ones: --imbalance's, a platform's simgrid section."""
    t = ring_csv(tmp_path, 24)
    assert run_cli("map", t, *MAP2, "--imbalance", "0.5", "--out", tmp_path / "m").returncode == 0
    assert "imbalance" in json.loads((tmp_path / "m" / "machine.json").read_text())
    assert run_cli("evaluate", t, tmp_path / "m").returncode == 0
    assert run_cli("platform", "desmos", "--out", tmp_path / "p").returncode == 0
    res = run_cli("map", t, "--machine", tmp_path / "p", "--out", tmp_path / "m2")
    assert res.returncode == 0, res.stderr


# --------------------------------------------------------------------------- convert

def test_convert_to_metis_says_it_rounded(tmp_path):
    """Fractional bytes (0.4, 1.5) or words (3 bytes = 0.375 words) became whole edge weights
    of a METIS graph (1, 2; all 1 in words) without a word."""
    from rankmap.profiler.formats import read_traffic
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n0,1,1.5\n1,2,0.4\n2,0,3\n")
    res = run_cli("convert", t, tmp_path / "g.graph")
    assert res.returncode == 0, res.stderr
    assert "2 of 3 edge weight(s) are not whole bytes: rounded to the nearest (1 below one half raised to 1" \
        in " ".join(res.stdout.split())
    w = read_traffic(tmp_path / "g.graph").bytes
    assert sorted((w + w.T).data.tolist()) == [1, 1, 2, 2, 3, 3]       # 0.4 -> 1, 1.5 -> 2, 3
    res = run_cli("convert", t, tmp_path / "w.graph", "--units", "words")
    assert "3 of 3 edge weight(s) are not whole words" in " ".join(res.stdout.split())
    exact = run_cli("convert", Path(__file__).parent / "data" / "bad-inputs" / "ring4.csv", tmp_path / "r.graph")
    assert exact.returncode == 0 and "note" not in exact.stdout
