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


# --------------------------------------------------------------------------- METIS graphs as other tools write them

def graph(tmp_path, text: str, name: str = "g.graph") -> Path:
    f = tmp_path / name
    f.write_bytes(text.encode())
    return f


@pytest.mark.parametrize("text, fragment", [
    # vertex 1 lists 2 twice: summed silently into a double weight, the header's count hid it
    ("4 4\n2 2 4\n1 1 3\n2 4\n1 3\n", "g.graph:2: vertex 1 lists neighbour 2 twice"),
    ("4 5\n2 2 4\n1 1 3\n2 4\n1 3\n", "g.graph:2: vertex 1 lists neighbour 2 twice"),    # header counts it
    # vertex 4 does not list 1: was "the adjacency lists hold 3.5"
    ("4 4\n2 4\n1 3\n2 4\n3\n", "g.graph:2: vertex 1 lists neighbour 4, but vertex 4 (line 5) does not list 1"),
    ("% c\n3 2 1\n2 5\n1 6 3 1\n2 1\n", "g.graph:3: edge 1-2 has weight 5 here and 6 at line 4"),
    ("4 4\n2 4\n1 3\n2 4\n1 3\n2\n", "header says 4 vertices, the file has 5 vertex lines"),
    ("4 5\n2 4\n1 3\n2 4\n1 3\n", "header says 5 edges, the adjacency lists hold 4"),
])
def test_metis_errors_name_the_line(tmp_path, text, fragment):
    one_error_line(run_cli("map", graph(tmp_path, text), *MACHINE, "--out", tmp_path / "m"), fragment)


@pytest.mark.parametrize("header", ["4 5", "4 6", "4 4"])
def test_metis_self_loops_are_left_out_with_a_note(tmp_path, header):
    """A vertex listing itself (METIS refuses it; converters from matrices write the
    diagonal): was "the adjacency lists hold 4.5"; whichever way the header counts it."""
    from rankmap.profiler.formats import read_traffic
    f = graph(tmp_path, f"{header}\n1 2 4\n1 3\n2 4\n1 3\n")
    if header == "4 6":       # counted twice is not a count any tool writes
        one_error_line(run_cli("map", f, *MACHINE, "--out", tmp_path / "m"), "header says 6 edges")
        return
    t = read_traffic(f)
    assert t.bytes.diagonal().sum() == 0 and t.bytes.sum() == 4
    assert any("1 self loop(s)" in n for n in t.notes)


@pytest.mark.parametrize("text", [
    "4 4 1\r\n2 5 4 7\r\n1 5 3 2\r\n2 2 4 9\r\n1 7 3 9",                 # CRLF, no final newline
    "% vertex weights\n4 4 11\n3 2 5 4 7\n1 1 5 3 2\n2 2 2 4 9\n7 1 7 3 9\n",
    "4 4 011 2\n3 1 2 5 4 7\n1 1 1 5 3 2\n2 2 2 2 4 9\n7 7 1 7 3 9\n",      # two constraints
    "4 4 111\n1 3 2 5 4 7\n1 1 1 5 3 2\n1 2 2 2 4 9\n1 7 1 7 3 9\n\n\n",   # sizes, weights, trailing blank lines
])
def test_metis_weight_layouts(tmp_path, text):
    """Every fmt code reads the same edges: the vertex fields are skipped, and said to be."""
    from rankmap.profiler.formats import read_traffic
    t = read_traffic(graph(tmp_path, text))
    w = (t.bytes + t.bytes.T).toarray()
    assert w[0, 1] == 5 and w[0, 3] == 7 and w[1, 2] == 2 and w[2, 3] == 9 and t.bytes.nnz == 8
    assert any("vertex weights" in n for n in t.notes) == (" 11" in text or "111" in text or "011" in text)


# --------------------------------------------------------------------------- node lists as sites write them

@pytest.mark.parametrize("nodes, file", [("n[1-2] n[3-4]", False), ("n[1-2], n[3-4]", False), ("n1\tn2 n[3-4]", False),
                                         ("# our nodes\nn[1-2] n3\nn4\n", True)])
def test_blank_separated_host_lists(tmp_path, nodes, file):
    """Slurm separates hostlists by blanks too; 'n[1-2] n[3-4]' was refused as
    "'n1 n3' is not a host name" (a name that is in neither list)."""
    if file:
        (tmp_path / "nodes.txt").write_text(nodes)
        nodes = str(tmp_path / "nodes.txt")
    res = run_cli("map", RING4, "--nodes", nodes, "--node-topology", "pack:1 core:1", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert sorted({h for h, _ in placed(tmp_path / "m")}) == ["n1", "n2", "n3", "n4"]


def test_blank_separated_duplicates_are_still_refused(tmp_path):
    one_error_line(run_cli("map", RING4, "--nodes", "n[1-2] n1", "--node-topology", "pack:2 core:1",
                           "--out", tmp_path / "m"), "host n1 appears twice")


# --------------------------------------------------------------------------- the Python API fed what a script has

def test_api_mapping_as_a_list():
    """evaluate() and hosts() take the slots as a plain list (a TypeError from inside the
    metrics before), and check them: every rank, slots of the machine, none twice."""
    import numpy as np
    import rankmap
    from rankmap.profiler.errors import UserError
    t = rankmap.traffic(np.roll(np.eye(8), 1, axis=1) * 1e6)
    m = rankmap.machine("n[1-2]", "pack:2 core:2")
    res = rankmap.map(t, m, seed=0)
    as_list = [int(s) for s in res.slot_of_rank]
    assert rankmap.evaluate(t, m, as_list) == rankmap.evaluate(t, m, res.slot_of_rank)
    assert rankmap.hosts(m, as_list) == rankmap.hosts(m, res.slot_of_rank)
    for slots, fragment in [([0, 1, 2], "the mapping has 3 ranks, the traffic has 8"),
                            ([0] * 8, "ranks 0 and 1 both take slot 0"),
                            (list(range(1, 9)), "rank 7: slot 8 is not a slot of the machine (0..7)"),
                            ([-1] + list(range(1, 8)), "rank 0: slot -1 is not a slot"),
                            ([0.5] * 8, "one whole-number slot per rank")]:
        with pytest.raises(UserError, match=fragment.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
            rankmap.evaluate(t, m, slots)
    with pytest.raises(UserError, match="slot 99"):
        rankmap.hosts(m, [99])


@pytest.mark.parametrize("matrix, fragment", [
    ([["a", "b"], ["c", "d"]], "holds <U1 values, not numbers of bytes"),      # was a ValueError
    ([[0, 1j], [1j, 0]], "holds complex128 values"),                           # was cast, imaginary part dropped
    ([[[0.0] * 2] * 2] * 2, "must be square, got 2 x 2 x 2"),                  # was a ValueError from scipy
    (None, "must be square, got one value"),                                   # was "holds NaN"
    ([[0, 1], [2]], "not a matrix"),                                           # ragged
])
def test_api_traffic_refuses_what_is_not_a_matrix(matrix, fragment):
    import rankmap
    from rankmap.profiler.errors import UserError
    with pytest.raises(UserError, match=fragment.replace("(", r"\(")):
        rankmap.traffic(matrix)


@pytest.mark.parametrize("kwargs, fragment", [
    ({"nodes": ["a", "a"]}, "host a appears twice"),          # two nodes of one name: a hostfile naming it twice
    ({"nodes": "n[1-2],n1"}, "host n1 appears twice"),
    ({"nodes": ["a b"]}, "'a b' is not a host name"),
    ({"nodes": 5}, "expected a hostlist"),
    ({"node_topology": None}, "expected 'pack:2 core:6'"),
])
def test_api_machine_checks_its_nodes(kwargs, fragment):
    import rankmap
    from rankmap.profiler.errors import UserError
    args = {"nodes": "n[1-2]", "node_topology": "pack:1 core:2", **kwargs}
    with pytest.raises(UserError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        rankmap.machine(args.pop("nodes"), args.pop("node_topology"), **args)


@pytest.mark.parametrize("kwargs, fragment", [({"seed": -1}, "seed -1 must be >= 0"), ({"seed": "x"}, "'x' is not"),
                                              ({"time_limit": float("nan")}, "not a finite number"),
                                              ({"time_limit": 0}, "must be > 0")])
def test_api_map_checks_seed_and_time_limit(kwargs, fragment):
    """As --seed and --time-limit do: a negative seed and a NaN time limit ran before."""
    import numpy as np
    import rankmap
    from rankmap.profiler.errors import UserError
    t = rankmap.traffic(np.ones((4, 4)))
    with pytest.raises(UserError, match=fragment):
        rankmap.map(t, rankmap.machine("n1", "pack:1 core:4"), **kwargs)


# --------------------------------------------------------------------------- compressed inputs

@pytest.mark.parametrize("name, text", [
    ("g.graph.gz", "% ring\n4 4\n2 4\n1 3\n2 4\n1 3\n"),
    ("g.graph", "4 4\n2 4\n1 3\n2 4\n1 3\n"),                      # compressed, the name does not say so
    ("t.csv.gz", "src,dst,bytes\n0,1,1\n1,2,1\n2,3,1\n3,0,1\n"),
    ("t.mtx.gz", "%%MatrixMarket matrix coordinate real general\n4 4 4\n1 2 1\n2 3 1\n3 4 1\n4 1 1\n"),
    ("t.mtx", "%%MatrixMarket matrix coordinate real general\n4 4 4\n1 2 1\n2 3 1\n3 4 1\n4 1 1\n"),
])
def test_gzip_compressed_traffic_is_read(tmp_path, name, text):
    """Graph collections ship .gz files: they were "a NUL byte: this is a binary file" or,
    named .gz, "no square matrix of integers found (expected the amfch_statistics ...)"."""
    import gzip
    f = tmp_path / name
    f.write_bytes(gzip.compress(text.encode()))
    res = run_cli("map", f, *MACHINE, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["traffic"]["ranks"] == 4
    assert len(placed(tmp_path / "m")) == 4


@pytest.mark.parametrize("cut, fragment", [(30, "a truncated gzip file"), (None, "a damaged gzip file")])
def test_damaged_gzip_is_named(tmp_path, cut, fragment):
    import gzip
    data = gzip.compress(b"4 4\n2 4\n1 3\n2 4\n1 3\n" * 50)
    f = tmp_path / "g.graph.gz"
    f.write_bytes(data[:cut] if cut else data[:10] + b"\xff" * 40)
    one_error_line(run_cli("map", f, *MACHINE, "--out", tmp_path / "m"), f"g.graph.gz: {fragment}")


# --------------------------------------------------------------------------- evaluate a mapping's own files

@pytest.mark.parametrize("name", ["hostfile", "binding.txt"])
def test_evaluate_a_mapping_file_uses_its_directory_machine(tmp_path, torus_mapping, name):
    """`evaluate T m/hostfile` without machine options: the machine of the mapping it is in
    (it tried to read the hostfile as machine.json: "hostfile:1: not valid JSON")."""
    whole = run_cli("evaluate", RING4, torus_mapping, "--json")
    one = run_cli("evaluate", RING4, torus_mapping / name, "--json")
    assert one.returncode == 0, one.stderr
    a, b = json.loads(whole.stdout), json.loads(one.stdout)
    assert a["machine"] == b["machine"]
    (tmp_path / name).write_bytes((torus_mapping / name).read_bytes())      # outside a mapping directory
    one_error_line(run_cli("evaluate", RING4, tmp_path / name), "no node list: pass --nodes")


@pytest.mark.parametrize("text, fmt, size", [
    ("2 1\n2\n1\n", "metis", 2),                      # was "no square matrix of integers found (... amfch ...)"
    ("3 2 1\n2 5\n1 5 3 1\n2 1\n", "metis", 3),
    ("0 5\n5 0\n", "treematch", 2),
    ("0 5 1\n5 0 2\n1 2 0\n", "treematch", 3),
])
def test_small_graphs_and_matrices_without_an_extension(tmp_path, text, fmt, size):
    from rankmap.profiler.formats import read_traffic
    t = read_traffic(graph(tmp_path, text, "traffic.txt"))
    assert (t.format, t.size) == (fmt, size)


def test_slurm_topology_yaml_is_named(tmp_path):
    """Slurm 25.05's topology.yaml: was "describes no switches ...; is a topology plugin
    configured?", which sent the user looking at the wrong thing."""
    f = tmp_path / "topology.yaml"
    f.write_text("---\n- topology: default\n  cluster_default: true\n  tree:\n    switches:\n"
                 "      - switch: s0\n        nodes: n[1-2]\n")
    one_error_line(run_cli("map", RING4, *MACHINE, "--network", f"slurm:{f}", "--out", tmp_path / "m"),
                   "topology.yaml: a topology.yaml (Slurm 25.05's format); rankmap reads topology.conf lines")


# --------------------------------------------------------------------------- --fill spread

@pytest.mark.parametrize("nodes, topo, extra, per_host", [
    ("n[1-5]", ["pack:2 core:2"], [], {3, 2}),                                   # 12 ranks, 20 cores
    ("n[1-3]", ["n1=pack:2 core:4", "n[2-3]=pack:1 core:4"], [], {6, 3}),        # in proportion to the slots
    ("n[1-2]", ["pack:2 core:4"], ["--oversubscribe", "3"], {6}),                # distinct cores first
    ("n[1-6]", ["pack:2 core:2"], ["--torus", "3x2"], {2}),
    ("n[1-20]", ["pack:2 core:2"], [], {1}),                                     # fewer ranks than nodes
])
def test_fill_spread_uses_every_node(tmp_path, nodes, topo, extra, per_host):
    """--fill spread ended on as few nodes as packed (the local search packed the ranks back:
    12 ranks on 5 nodes of 4 cores used 3 of them)."""
    import numpy as np
    from rankmap.mapper.hostnames import expand
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 12},{1000 * (i + 1)}\n" for i in range(12)))
    args = ["--nodes", nodes, *[x for s in topo for x in ("--node-topology", s)], *extra]
    res = run_cli("map", t, *args, "--fill", "spread", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    where = placed(tmp_path / "m")
    hosts = [h for h, _ in where]
    assert {hosts.count(h) for h in set(hosts)} == per_host and len(set(hosts)) == min(12, len(expand(nodes)))
    assert len(set(where)) == len(where)        # with --oversubscribe too: a core's second slot comes last
    rep = json.loads(res.stdout)
    assert rep["cost"] <= rep["defaults"]["block"] * (1 + 1e-12)
    again = run_cli("evaluate", t, tmp_path / "m", "--json")          # re-read on the whole machine
    assert again.returncode == 0, again.stderr
    assert np.isclose(json.loads(again.stdout)["metrics"]["m"]["sum_com"], rep["cost"])


# --------------------------------------------------------------------------- --time-limit

def _grid(k: int):
    import numpy as np
    import scipy.sparse as sp
    right = np.array([i for i in range(k * k - 1) if (i + 1) % k])
    down = np.arange(k * k - k)
    rows, cols = np.concatenate([right, down]), np.concatenate([right + 1, down + k])
    return sp.csr_matrix((np.full(len(rows), 1.0), (rows, cols)), shape=(k * k, k * k))


def test_time_limit_stops_the_partitioner_portfolio():
    """--time-limit 5 on a 16,706-vertex social graph (astro-ph) on an 8x8x8 torus took
    60 s: only the local search watched the clock, the first bisection's KaHIP and
    Mt-KaHyPar runs (32 s) did not. Past the deadline a split is METIS's alone."""
    import time
    import numpy as np
    from rankmap.mapper.graph import Graph
    from rankmap.mapper.partition import _int64_csr, _Sub, split_candidates
    W = _grid(60)
    W = (W + W.T).tocsr()
    sub = _Sub(_int64_csr(Graph(W=W).W), np.arange(3600), np.full(3600, -1, dtype=np.int64))
    full = split_candidates(sub, [1800, 1800], 0)
    late = split_candidates(sub, [1800, 1800], 0, deadline=time.monotonic() - 1)
    assert len(full) > 1 and len(late) == 1            # KaHIP, Mt-KaHyPar and its V-cycles ran, then none


def test_time_limit_skips_a_partitioner_call_that_would_end_past_it():
    """A call that starts before the deadline but is predicted to end after it does not
    start: a 10^5-rank root split's Mt-KaHyPar run and V-cycles (3 s) took most of a 4 s
    --time-limit and left the search nothing, 7.5 s in all."""
    import time
    import numpy as np
    from rankmap.mapper.graph import Graph
    from rankmap.mapper.partition import _int64_csr, _Sub, split_candidates
    W = _grid(60)
    W = (W + W.T).tocsr()
    sub = _Sub(_int64_csr(Graph(W=W).W), np.arange(3600), np.full(3600, -1, dtype=np.int64))
    near = split_candidates(sub, [1800, 1800], 0, deadline=time.monotonic() + 2e-3)   # the calls need ~0.03 s
    assert len(near) == 1


def test_time_limit_mapping_is_complete_and_noted():
    import rankmap
    t = rankmap.traffic(_grid(40))
    m = rankmap.machine("n[1-50]", "pack:2 core:16", torus="5x10")
    res = rankmap.map(t, m, seed=0, time_limit=1e-3)
    assert sorted(res.slot_of_rank) == sorted(set(int(s) for s in res.slot_of_rank)) and len(res.slot_of_rank) == 1600
    assert any("time limit" in n for n in res.notes)
    assert res.cost <= min(res.defaults.values()) * (1 + 1e-12)


# --------------------------------------------------------------------------- hwloc XML files

@pytest.mark.parametrize("text, fragment", [
    ("<?xml version='1.0'?>\n<topology>\n<object type='Machine'", "n.xml:3: not well-formed XML"),     # truncated copy
    ("not xml at all", "n.xml:1: not well-formed XML"),
    ("<html><body/></html>", "n.xml: XML whose root is <html>, not an lstopo <topology>"),
    ("<topology></topology>", "hwloc could not load this topology"),
])
def test_broken_lstopo_xml_is_named(tmp_path, text, fragment):
    """hwloc says "Setting source XML file: Invalid argument" or "hwloc_topology_load()
    failed (Invalid argument)" for all of these."""
    (tmp_path / "n.xml").write_text(text)
    one_error_line(run_cli("map", RING4, "--nodes", "n[1-2]", "--node-topology", tmp_path / "n.xml",
                           "--out", tmp_path / "m"), fragment)


def test_real_lstopo_xml_still_reads(tmp_path, shared):
    res = run_cli("map", RING4, "--nodes", "n[1-2]", "--node-topology", shared / "hwloc" / "16em64t-4s2c2t.xml",
                  "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr


def test_oversubscribed_one_switch_fat_tree_is_explained(tmp_path):
    """Was "give 0 ratio(s) >= 1 for a 1-level tree"."""
    one_error_line(run_cli("map", RING4, *MACHINE, "--network", "fat-tree:2:oversub=2", "--out", tmp_path / "m"),
                   "a 1-level fat tree (2: one switch) has no uplinks to oversubscribe")


# --------------------------------------------------------------------------- a mapping's own files read back

def test_every_file_map_writes_is_read_back(tmp_path):
    """evaluate took a rankfile's 'rank 0=n1 slot=0' for a host named 'rank', and a
    machinefile's 'n1:2' for one rank on n1."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 3) % 12},{100 * (i + 1)}\n" for i in range(12)))
    m = tmp_path / "m"
    res = run_cli("map", t, "--nodes", "n[1-3]", "--node-topology", "pack:2 core:1", "--oversubscribe", "2",
                  "--out", m)
    assert res.returncode == 0, res.stderr

    def sum_com(*mapping):
        r = run_cli("evaluate", t, *mapping, "--machine", m, "--json")
        assert r.returncode == 0, r.stderr
        return [v["sum_com"] for k, v in json.loads(r.stdout)["metrics"].items() if k not in
                ("block", "cyclic", "random")]
    d, b, rf, hf, mf = sum_com(m, m / "binding.txt", m / "rankfile", m / "hostfile", m / "machinefile")
    assert d == b == rf and hf == mf
    hosts = [h for h, _ in placed(m)]
    runs = []                                   # an MPICH machinefile: host:k for k consecutive ranks
    for h in hosts:
        if runs and runs[-1][0] == h:
            runs[-1][1] += 1
        else:
            runs.append([h, 1])
    (tmp_path / "mf").write_text("".join(f"{h}:{k}\n" for h, k in runs))
    assert sum_com(tmp_path / "mf") == [hf]


@pytest.mark.parametrize("text, fragment", [
    ("0 n1 7\n1 n1 0\n2 n2 0\n3 n2 1\n", "rank 0: n1 has no core 7 in this machine (its cores: 0-1)"),  # was "no free slot"
    ("n1:2\nn2:x\n", "b.txt:2: ranks (host:k) 'x' is not a number"),
    ("rank 0=n1 slot=0\nrank 1 n1\n", "b.txt:2: expected an Open MPI rankfile line"),
])
def test_bad_mapping_files_are_named(tmp_path, text, fragment):
    m = tmp_path / "m"
    assert run_cli("map", RING4, *MACHINE, "--out", m).returncode == 0
    (tmp_path / "b.txt").write_text(text)
    one_error_line(run_cli("evaluate", RING4, tmp_path / "b.txt", "--machine", m), fragment)


def test_srun_dry_run_needs_no_slurm(tmp_path):
    """`rankmap srun m/ --dry-run` asked sinfo for the nodes' states first, so printing the
    line failed wherever no Slurm answers ("sinfo: fatal: Could not establish a
    configuration source")."""
    import shutil
    if shutil.which("sinfo") is None:
        pytest.skip("sinfo not installed: the line is printed either way")
    m = tmp_path / "m"
    assert run_cli("map", RING4, *MACHINE, "--out", m).returncode == 0
    env = {"SLURM_CONF": str(tmp_path / "no-such-slurm.conf"), "SLURM_JOB_ID": None}
    dry = run_cli("srun", m, "--dry-run", "--mpi", "openmpi", "--", "true", env=env)
    assert dry.returncode == 0, dry.stderr
    assert f"SLURM_HOSTFILE={m}/hostfile srun -m arbitrary -n 4" in dry.stdout


def test_api_machine_takes_a_slurm_topology_conf(tmp_path):
    """machine(network='slurm:FILE') as --network takes it: was "unknown network kind 'slurm'"."""
    import rankmap
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=top Switches=s[0-1]\n")
    m = rankmap.machine("n[1-4]", "pack:1 core:2", network=f"slurm:{conf}")
    assert m.nslots == 8 and "topology/tree" in m.describe()
    t = rankmap.traffic([[0, 1] + [0] * 6] + [[0] * 8] * 7)
    d = rankmap.write(tmp_path / "m", t, m, rankmap.map(t, m))
    from rankmap.mapper import spec
    assert spec.build(spec.load(d)).nslots == 8           # its machine.json rebuilds


def test_ranks_numbered_from_one_get_a_hint(tmp_path):
    """A CSV numbering 64 ranks 1..64 is 65 ranks (rank 0 silent): "65 ranks but only 64
    slots" alone left the user puzzled."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{i % 64 + 1},100\n" for i in range(1, 65)))
    one_error_line(run_cli("map", t, "--nodes", "n[1-8]", "--node-topology", "pack:2 core:4", "--out", tmp_path / "m"),
                   "65 ranks but only 64 slots on 8 node(s); add nodes, or use --oversubscribe N to put N ranks on "
                   "each core; rank 0 sends and receives nothing, so the traffic may number its ranks from 1")
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 65},100\n" for i in range(65)))    # really 65
    res = run_cli("map", t, "--nodes", "n[1-8]", "--node-topology", "pack:2 core:4", "--out", tmp_path / "m")
    one_error_line(res, "65 ranks but only 64 slots")
    assert "numbers its ranks from 1" not in res.stderr


# --------------------------------------------------------------------------- the wrong file as MATRIX

@pytest.mark.parametrize("name, fragment", [
    ("machine.json", "machine.json: not a traffic file rankmap can tell (it looks like JSON); it reads"),
    ("binding.txt", "binding.txt: not a traffic file rankmap can tell; it reads"),
    (".", "a mapping (rankmap map --out), not traffic; give the profile run directory or the traffic file first"),
])
def test_a_mapping_given_as_traffic_is_named(torus_mapping, tmp_path, name, fragment):
    """A mapping's files as MATRIX (or evaluate's arguments swapped): "8 square integer
    matrices found ... and none follows an amfch_statistics header", "no profile data
    (no ranks.*.rmp file); was the profiler preloaded?"."""
    src = torus_mapping / name if name != "." else torus_mapping
    one_error_line(run_cli("map", src, *MACHINE, "--out", tmp_path / "m"), fragment)
    if name == ".":
        one_error_line(run_cli("evaluate", torus_mapping, RING4), fragment)


def test_npy_arrays_and_non_npz_files(tmp_path):
    """A .npy (numpy.save) was not read at all ('numpy.ndarray' object does not support the
    context manager protocol); a text file read as npz got numpy's advice to load it
    unsafely with allow_pickle."""
    import numpy as np
    np.save(tmp_path / "t.npy", np.roll(np.eye(4), 1, axis=1) * 1e3)
    res = run_cli("map", tmp_path / "t.npy", *MACHINE, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["traffic"]["ranks"] == 4
    res = run_cli("map", RING4, "--format", "npz", *MACHINE, "--out", tmp_path / "m2")
    one_error_line(res, "ring4.csv: not an .npz file (a zip archive of NumPy arrays) nor an .npy array")
    assert "pickle" not in res.stderr


def test_not_a_trace_index_read_as_one(tmp_path):
    one_error_line(run_cli("map", graph(tmp_path, "% c\n4 4\n2 4\n1 3\n2 4\n1 3\n"), "--format", "smpi", *MACHINE,
                           "--out", tmp_path / "m"),
                   "the rank file % c is missing (an SMPI trace index lists one rank file per line: is this one?)")
