"""Round 11 of a new user's bad inputs: the Python API with arguments of other types, options
of the launch wrappers that overrode the mapping, --extra-nodes that could add no node,
outputs named .gz, MatrixMarket entries given twice, lstopo XML with disallowed PUs, tori of
too many dimensions, probe files with misspelt pairs. Each test failed before its fix; the
runs are real (the CLI, the API)."""
from __future__ import annotations

import gzip
import os
import json
import subprocess

import numpy as np
import pytest
import scipy.sparse as sp

import rankmap
from conftest import one_error_line, run_cli
from rankmap.profiler.errors import UserError

PROBE = {"latency_us": {"same socket": 0.1, "neighbour node": 1000},
         "bandwidth_GBps": {"same socket": 10, "neighbour node": 1}}


@pytest.fixture
def probe(tmp_path):
    f = tmp_path / "probe.json"
    f.write_text(json.dumps(PROBE))
    return f


@pytest.fixture
def mapping(tmp_path, ring8):
    res = run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "core:2", "--algorithm", "cyclic",
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    return tmp_path / "m"


def _ring(n: int = 8) -> np.ndarray:
    return np.roll(np.eye(n), 1, axis=1) * 1e6


# --------------------------------------------------------------------------- the Python API

def test_api_map_takes_a_matrix_as_traffic():
    """map(matrix, m): an 8 x 8 array was read by its numpy attributes ('64 ranks but only 8
    slots': its .size); a matrix is the traffic it holds, as traffic() reads it."""
    m = rankmap.machine("n[1-2]", "pack:2 core:2")
    res = rankmap.map(_ring(), m)
    assert sorted(res.slot_of_rank.tolist()) == list(range(8))
    assert rankmap.evaluate(_ring(), m, res.slot_of_rank)["internode_fraction"] == 0.25


@pytest.mark.parametrize("call", [
    lambda t: rankmap.map(t, "n[1-2]"),
    lambda t: rankmap.evaluate(t, {"hosts": ["n1"]}, list(range(8))),
    lambda t: rankmap.hosts("n1", [0]),
])
def test_api_refuses_what_is_not_a_machine(call):
    """An AttributeError ('str' object has no attribute 'nslots') from inside the mapper."""
    with pytest.raises(UserError, match="expected rankmap.machine"):
        call(rankmap.traffic(_ring()))


def test_api_traffic_of_float16():
    """scipy.sparse has no float16: a ValueError from scipy; float16 values are exact in float32."""
    t = rankmap.traffic(np.array([[0, 2048], [1.5, 0]], dtype=np.float16))
    assert t.bytes.toarray().tolist() == [[0, 2048], [1.5, 0]]


def test_api_traffic_refuses_masked_entries():
    """np.asarray dropped the mask: the hidden value 99 was read as 99 bytes."""
    a = np.ma.masked_array([[0, 99], [1, 0]], mask=[[0, 1], [0, 0]])
    with pytest.raises(UserError, match="masked"):
        rankmap.traffic(a)
    assert rankmap.traffic(a.filled(0)).bytes.toarray().tolist() == [[0, 0], [1, 0]]   # control


@pytest.mark.parametrize("kwargs,fragment", [
    ({"oversubscribe": 0}, "oversubscribe: ranks per core 0 must be >= 1"),          # was 1, silently
    ({"ranks_per_node": 1.5}, "ranks_per_node: ranks per node 1.5 is not a whole number"),   # 2 per node
    ({"ranks_per_node": 2.9}, "ranks_per_node: ranks per node 2.9 is not a whole number"),   # 3 per node
    ({"network": 5}, "expected text as --network takes it"),                          # AttributeError
    ({"network": {"kind": "torus"}}, "network.shape is missing"),                      # KeyError
    ({"torus": "4", "coords": [[0], [1], [2], [3]]}, "expected a coordinate file"),     # TypeError
])
def test_api_machine_checks_its_options(kwargs, fragment):
    with pytest.raises(UserError, match=fragment.replace(".", r"\.")):
        rankmap.machine("n[1-4]", "core:4", **kwargs)


def test_api_machine_written_is_read_back(tmp_path, ring8):
    """ranks_per_node=1.5 was written to machine.json, which evaluate then refused; a whole
    number given as text (as the option takes it) and a pathlib.Path XML are taken."""
    m = rankmap.machine("n[1-4]", "core:4", ranks_per_node="2", oversubscribe=np.int64(1))
    assert m.nslots == 8
    t = rankmap.read_traffic(ring8)
    out = rankmap.write(tmp_path / "w", t, m, rankmap.map(t, m))
    res = run_cli("evaluate", ring8, out)
    assert res.returncode == 0, res.stderr
    xml = tmp_path / "n.xml"
    xml.write_text(subprocess.run(["lstopo-no-graphics", "--input", "pack:1 core:2 pu:1", "--of", "xml", "-"],
                                  capture_output=True, text=True, check=True).stdout)
    assert rankmap.machine("n1", xml).nslots == 2        # was "expected 'pack:2 core:6', an lstopo XML file"


@pytest.mark.parametrize("kwargs,fragment", [
    ({"path": 5}, "expected a file or directory name"),            # TypeError from pathlib
    ({"path": b"ring8.csv"}, "expected a file or directory name"),
    ({"collectives": None}, "collectives None: expected text"),     # AttributeError
    ({"format": None}, "format None: expected text"),
])
def test_api_read_traffic_checks_its_arguments(ring8, kwargs, fragment):
    args = {"path": str(ring8), **kwargs}
    with pytest.raises(UserError, match=fragment):
        rankmap.read_traffic(**args)


def test_api_write_takes_a_result_whose_slots_are_a_list(tmp_path):
    """A result with slot_of_rank as a plain list (as evaluate and hosts take it): a TypeError
    in the report; a result that is none: an AttributeError."""
    m = rankmap.machine("n[1-2]", "core:4")
    t = rankmap.traffic(_ring())

    class Result:
        slot_of_rank, cost, chosen, notes = list(range(8)), 1.0, "mine", []
    out = rankmap.write(tmp_path / "w", t, m, Result())
    assert (out / "binding.txt").is_file()
    with pytest.raises(UserError, match="expected what rankmap.map"):
        rankmap.write(tmp_path / "w2", t, m, None)


# --------------------------------------------------------------------------- map --extra-nodes

@pytest.mark.parametrize("nodes,extra,why", [
    ("n[1-8]", "10", "10 % more than the fewest 4 nodes is less than one more node (--extra-nodes 25 or more adds "
                     "one)"),
    ("n[1-4]", "50", "the ranks need all 4 available nodes"),
])
def test_extra_nodes_that_can_add_no_node_says_so(tmp_path, ring8, probe, nodes, extra, why):
    """--extra-nodes 10 over 4 nodes (less than one node) or with every node needed was taken
    and changed nothing, without a word."""
    res = run_cli("map", ring8, "--nodes", nodes, "--node-topology", "core:2", "--mode", "whole-cluster",
                  "--network-speeds", probe, "--extra-nodes", extra, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    notes = " ".join(json.loads(res.stdout)["notes"])
    assert f"--extra-nodes {extra}: no wider node set to compare ({why})" in notes


def test_extra_nodes_with_a_wider_set_has_no_such_note(tmp_path, ring8, probe):
    res = run_cli("map", ring8, "--nodes", "n[1-8]", "--node-topology", "core:2", "--mode", "whole-cluster",
                  "--network-speeds", probe, "--extra-nodes", "100", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    notes = " ".join(json.loads(res.stdout)["notes"])
    assert "1 wider (--extra-nodes)" in notes and "no wider node set" not in notes


# --------------------------------------------------------------------------- convert

@pytest.mark.parametrize("name,fmt", [("t.csv.gz", "csv"), ("t.mtx.gz", "mtx"), ("t.graph.gz", "metis"),
                                      ("t.dat.gz", "treematch")])
def test_convert_to_a_gz_name_writes_gzip(tmp_path, ring8, name, fmt):
    """`convert x.csv t.csv.gz` could not tell the format ('pass --to'), and with --to csv it
    wrote plain text under the .gz name (zcat refused it)."""
    res = run_cli("convert", ring8, tmp_path / name)
    assert res.returncode == 0, res.stderr
    assert f"({fmt}, bytes)" in res.stdout
    text = gzip.decompress((tmp_path / name).read_bytes()).decode()
    assert text.strip()
    back = run_cli("convert", tmp_path / name, tmp_path / "back.csv")
    assert back.returncode == 0, back.stderr
    assert "8 ranks" in back.stdout


def test_convert_npz_under_gz_is_refused(tmp_path, ring8):
    one_error_line(run_cli("convert", ring8, tmp_path / "t.npz.gz"), "an npz archive is compressed already")
    assert not (tmp_path / "t.npz.gz").exists()


# --------------------------------------------------------------------------- MatrixMarket

@pytest.mark.parametrize("text,note", [
    ("%%MatrixMarket matrix coordinate real general\n3 3 3\n1 2 5\n1 2 7\n2 3 1\n",
     "1 entry repeats a (row, column) of an earlier one: their values were added"),
    ("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 2 5\n2 1 5\n",
     "(in a symmetric file: both triangles listed?)"),
])
def test_matrix_market_entries_given_twice_are_noted(tmp_path, text, note):
    """scipy keeps both and the matrix adds them: 12 bytes (a symmetric file listing both
    triangles: every pair twice), without a word; the CSV reader says so of repeated rows."""
    f = tmp_path / "t.mtx"
    f.write_text(text)
    res = run_cli("convert", f, tmp_path / "t.csv")
    assert res.returncode == 0, res.stderr
    assert note in res.stdout


def test_matrix_market_without_repeats_has_no_note(tmp_path):
    f = tmp_path / "t.mtx"
    f.write_text("%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 5\n3 2 5\n")
    res = run_cli("convert", f, tmp_path / "t.csv")
    assert res.returncode == 0 and "note" not in res.stdout, res.stdout + res.stderr


def test_matrix_market_numbered_from_zero_says_so(tmp_path):
    """Was only scipy's 'Line 3: Row index out of bounds'."""
    f = tmp_path / "t.mtx"
    f.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n0 1 5\n")
    one_error_line(run_cli("convert", f, tmp_path / "t.csv"), "MatrixMarket numbers rows and columns from 1")


# --------------------------------------------------------------------------- launch wrappers

@pytest.mark.parametrize("extra,arg,fragment", [
    ([], "--ntasks=8", "sets --ntasks itself from rankmap sbatch's -n/--ntasks"),
    ([], "-n8", "sets --ntasks itself"),
    (["-N", "2"], "-N3", "sets --nodes itself from rankmap sbatch's -N/--nodes-count"),
    (["-N", "2"], "--nodes=3", "sets --nodes itself"),
    (["-t", "5"], "--time=10", "sets --time itself from rankmap sbatch's -t/--time"),
    ([], "--output=job.log", "sets --output itself from rankmap sbatch's --out"),
    ([], "--outp=job.log", "sets --output itself"),
])
def test_sbatch_args_that_override_the_scripts_own_lines_are_refused(tmp_path, extra, arg, fragment):
    """The later #SBATCH line wins: the job had other tasks, nodes, time limit or its output
    elsewhere than rankmap's options and the printed paths said. Nothing is written."""
    one_error_line(run_cli("sbatch", "-n", "4", *extra, "--out", tmp_path / "job", f"--sbatch-arg={arg}", "--",
                           "./app"), fragment)
    assert not (tmp_path / "job").exists()


@pytest.mark.parametrize("arg", ["-N3", "--time=10", "--nodelist=n[1-2]", "--ntasks-per-node=2", "--time-min=5",
                                 "--exclusive", "--error=e.log"])
def test_sbatch_args_that_override_nothing_pass(tmp_path, arg):
    res = run_cli("sbatch", "-n", "4", "--out", tmp_path / "job", f"--sbatch-arg={arg}", "--", "./app")
    assert res.returncode == 0, res.stderr
    assert f"#SBATCH {arg}\n" in (tmp_path / "job" / "rankmap.sbatch").read_text()


@pytest.mark.parametrize("arg", ["--cpu-bind=cores", "--cpu_bind=none", "--cpu-b=none"])
def test_srun_cpu_bind_cannot_override_the_mapping(mapping, arg):
    """srun took the last --cpu-bind: the user's after the mapping's map_cpu list, the ranks
    bound by another rule (or not at all), without a word."""
    one_error_line(run_cli("srun", mapping, "--dry-run", f"--srun-arg={arg}", "--", "./app"),
                   "the mapping binds every rank to its core")


def test_run_refuses_srun_args_before_pass_1(tmp_path):
    """They reach pass 2's srun, which refused them after the profile run and the mapping
    (here: without a Slurm cluster, the first error was that none answers)."""
    one_error_line(run_cli("run", "-n", "2", "--srun-arg=--cpu-bind=cores", "--out", tmp_path / "r", "--", "./app"),
                   "--cpu-bind=cores: the mapping binds every rank to its core")
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("arg", ["--bind-to=none", "--bind-to core", "-bind-to", "--cpu-set=0,1", "--cpu-list 0"])
def test_mpirun_binding_arguments_cannot_override_the_rankfile(mapping, arg):
    """--bind-to none left Open MPI's ranks unbound (the rankfile's cores ignored)."""
    one_error_line(run_cli("mpirun", mapping, "--dry-run", "--mpi", "openmpi", f"--mpirun-arg={arg}", "--", "./app"),
                   "the mapping decides the rank count, the hosts and the placement")


def test_launch_arguments_of_other_kinds_still_pass(mapping):
    res = run_cli("srun", mapping, "--dry-run", "--srun-arg=--exclusive", "--srun-arg=--nodelist=n[1-4]", "--",
                  "./app")
    assert res.returncode == 0 and "--exclusive '--nodelist=n[1-4]' ./app" in res.stdout, res.stderr
    res = run_cli("mpirun", mapping, "--dry-run", "--mpi", "openmpi", "--mpirun-arg=--report-bindings", "--", "./app")
    assert res.returncode == 0 and "--report-bindings ./app" in res.stdout, res.stderr


# --------------------------------------------------------------------------- node topologies and networks

def _xml(tmp_path, allowed: str) -> str:
    text = subprocess.run(["lstopo-no-graphics", "--input", "pack:2 core:2 pu:2", "--of", "xml", "-"],
                          capture_output=True, text=True, check=True).stdout
    f = tmp_path / "node.xml"
    f.write_text(text.replace('allowed_cpuset="0x000000ff"', f'allowed_cpuset="{allowed}"', 1))
    return str(f)


def test_lstopo_xml_with_disallowed_pus_is_refused(tmp_path, ring8):
    """`lstopo --disallowed --of xml` marks the PUs a job may not use only in allowed_cpuset;
    hwloc reading the file back forgets it: ranks 4-7 were mapped onto package 1, where no
    task could be bound."""
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-2]", "--node-topology", _xml(tmp_path, "0x0000000f"),
                           "--out", tmp_path / "m"),
                   "4 PU(s) (P#4, P#5, P#6, P#7) are outside the machine's allowed_cpuset")


@pytest.mark.parametrize("allowed", ["0x000000ff", "0xf...f", "0xf...f,0x000000ff"])
def test_lstopo_xml_whose_pus_are_all_allowed_maps(tmp_path, ring8, allowed):
    res = run_cli("map", ring8, "--nodes", "n[1-2]", "--node-topology", _xml(tmp_path, allowed),
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("opt", ["--torus", "--mesh", "--switch-tree"])
def test_a_torus_of_a_hundred_dimensions_is_refused(tmp_path, ring8, opt):
    """1x1x...x8 (61+ dimensions): an internal error from numpy ('maximum supported dimension
    for an ndarray is currently 64')."""
    dims = "x".join(["1"] * 100) + "x8"
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-8]", "--node-topology", "core:1", opt, dims,
                           "--out", tmp_path / "m"), "101 dimensions; rankmap handles at most 24")


def test_a_probe_file_with_a_misspelt_pair_names_it(tmp_path, ring8, mapping):
    """'neighbor node' was ignored, and the error said 'the probe measured no pair of nodes';
    a pair of another name was ignored without a word."""
    for key, fragment in (("neighbor node", "names the pair 'neighbor node' (did you mean 'neighbour node'?)"),
                          ("far node", "names the pair 'far node'")):
        bad = json.loads(json.dumps(PROBE))
        bad["latency_us"][key] = bad["bandwidth_GBps"][key] = 1
        if key == "neighbor node":
            del bad["latency_us"]["neighbour node"], bad["bandwidth_GBps"]["neighbour node"]
        f = tmp_path / "p.json"
        f.write_text(json.dumps(bad))
        one_error_line(run_cli("predict", ring8, mapping, "--probe", f), fragment)
        one_error_line(run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "core:2", "--network-speeds", f,
                               "--out", tmp_path / "x"), fragment)


# --------------------------------------------------------------------------- messages that sent the user elsewhere

def test_a_profile_run_stopped_by_timeout_says_so(tmp_path):
    """Killed by --timeout before any rank wrote: the error asked 'was it an MPI program
    started by the launcher?'."""
    one_error_line(run_cli("profile", "--launcher", "env", "--timeout", "0.2", "--out", tmp_path / "p", "--",
                           "sleep", "30"), "was stopped by --timeout after")
    assert not (tmp_path / "p").exists()


def test_a_whole_number_in_exponent_form_says_how_to_write_it(tmp_path):
    """--sizes 1e6: 'message size '1e6' is not a whole number' (it is one)."""
    one_error_line(run_cli("tune-collectives", "-n", "4", "--sizes", "8,1e6", "--out", tmp_path / "t.txt"),
                   "message size '1e6' is not a whole number written in digits (write 1000000)")
    one_error_line(run_cli("tune-collectives", "-n", "4", "--sizes", "8.5", "--out", tmp_path / "t.txt"),
                   "message size '8.5' is not a whole number")


def test_whole_cluster_mode_with_too_few_slots_says_what_to_do(tmp_path, ring8):
    """Was '8 ranks but the available nodes hold only 6 slots', without the hints the other
    mode gives (add nodes, --oversubscribe)."""
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-6]", "--node-topology", "core:1", "--mode", "whole-cluster",
                           "--out", tmp_path / "m"), "8 ranks but only 6 slots on 6 node(s); add nodes, or use "
                                                     "--oversubscribe N")


def test_a_machinefile_as_node_list(tmp_path, ring8):
    """An MPICH machinefile (`host:k`, as `rankmap map` writes one) as --nodes: was "'n1:2' is
    not a host name", while an Open MPI hostfile's `slots=N` was taken."""
    f = tmp_path / "machinefile"
    f.write_text("n1:2\nn2:2\nn[3-4]:2\n")
    res = run_cli("map", ring8, "--nodes", f, "--node-topology", "core:2", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert sorted(set((tmp_path / "m" / "hostfile").read_text().split())) == ["n1", "n2", "n3", "n4"]


def test_a_node_file_of_one_line_per_rank_says_why_it_is_refused(tmp_path, ring8):
    """$PBS_NODEFILE (or rankmap's own hostfile) lists a host once per rank: 'host n1 appears
    twice in the node list' did not say what to do."""
    f = tmp_path / "nodefile"
    f.write_text("n1\nn1\nn2\nn2\n")
    one_error_line(run_cli("map", ring8, "--nodes", f, "--node-topology", "core:2", "--out", tmp_path / "m"),
                   "a node file names each node once")


def test_a_file_of_a_platform_directory_given_as_speeds_names_the_directory(tmp_path, ring8, mapping):
    """platform.xml was 'not valid JSON', machine.json 'not a `rankmap probe` file'."""
    res = run_cli("platform", "--torus", "2x2", "--cores", "2", "--out", tmp_path / "pl")
    assert res.returncode == 0, res.stderr
    for f in ("platform.xml", "machine.json"):
        one_error_line(run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "core:2", "--network-speeds",
                               tmp_path / "pl" / f, "--out", tmp_path / "x"),
                       f"a file of the platform directory {tmp_path / 'pl'}; give the directory")
        one_error_line(run_cli("predict", ring8, mapping, "--probe", tmp_path / "pl" / f),
                       f"give the platform with --platform {tmp_path / 'pl'}")
    res = run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "core:2", "--network-speeds", tmp_path / "pl",
                  "--out", tmp_path / "ok")
    assert res.returncode == 0, res.stderr                                             # the directory: taken


def test_nodes_given_as_a_number_is_refused(tmp_path, ring8):
    """`--nodes 4` meant four nodes and was one host named '4': with --oversubscribe all 8
    ranks were mapped onto it, without a word. An all-digit host is still given as [4]."""
    one_error_line(run_cli("map", ring8, "--nodes", "4", "--node-topology", "core:2", "--oversubscribe", "4",
                           "--out", tmp_path / "m"), "--nodes 4: a number; --nodes names the nodes")
    res = run_cli("map", ring8, "--nodes", "[4]", "--node-topology", "core:2", "--oversubscribe", "4",
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr


@pytest.mark.parametrize("topo,fragment", [("core:8 pack:2", "'pack:2' comes after 'core:8'"),
                                           ("pu:2 core:4", "'pu:2' is not the last level"),
                                           ("pack:2 core:4 l1:1", "'l1:1' comes after 'core:4'")])
def test_synthetic_levels_in_the_wrong_order_are_refused(tmp_path, ring8, topo, fragment):
    """'core:8 pack:2' (2 packages x 8 cores, written bottom up): hwloc put packages inside the
    cores, read as 8 cores of 2 PUs, half the node, without a word."""
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-2]", "--node-topology", topo, "--out", tmp_path / "m"),
                   fragment)


@pytest.mark.parametrize("topo", ["pack:2 core:4 pu:2", "pack:2 l3:1 l2:4 l1:1 core:1 pu:2", "pack:1 numa:2 core:4",
                                  "Core:4 PU:2"])
def test_synthetic_levels_from_the_top_down_still_read(tmp_path, ring8, topo):
    res = run_cli("map", ring8, "--nodes", "n[1-2]", "--node-topology", topo, "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr


def _stencil(tmp_path, n: int = 256):
    rng = np.random.default_rng(1)
    rows = [f"{i},{(i + d) % n},{int(rng.integers(1000, 100000))}" for i in range(n) for d in (1, 2, 16)]
    f = tmp_path / "t.csv"
    f.write_text("src,dst,bytes\n" + "\n".join(rows) + "\n")
    return f


@pytest.mark.parametrize("extra", [[], ["--network-speeds", "PROBE", "--extra-nodes", "50"]],
                         ids=["by-cost", "predicted"])
def test_whole_cluster_mode_keeps_to_the_time_limit(tmp_path, probe, extra):
    """--time-limit 0.5 on 256 ranks over a 6x6x6 torus (216 nodes of 2 cores): each candidate
    node set's quick mapping took the whole limit again (6.5 s in all), and the scattered sets
    were built without looking at the clock (22 s with --network-speeds)."""
    extra = [str(probe) if x == "PROBE" else x for x in extra]
    res = run_cli("map", _stencil(tmp_path), "--nodes", "n[1-216]", "--node-topology", "core:2", "--torus", "6x6x6",
                  "--mode", "whole-cluster", "--time-limit", "0.5", *extra, "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["seconds"] < 4.0, rep["seconds"]
    assert len(set((tmp_path / "m" / "hostfile").read_text().split())) >= 128      # a complete mapping


def test_whole_cluster_mode_on_a_large_torus_keeps_to_the_time_limit(tmp_path, probe):
    """1,024 ranks over a 16x16x8 torus of one-core nodes with the network's speeds and
    --time-limit 0.1: the compact boxes were enumerated in Python (5.5 s) and each of the six
    candidates got a quick mapping of 0.4 s whatever the limit (7 s in all); now the boxes come
    from cumulative sums and, past the candidates' share, a set is judged by block order."""
    X, Y, Z = 16, 8, 8
    r = np.arange(X * Y * Z).reshape(X, Y, Z)
    pairs = np.concatenate([np.stack([r[:-1].ravel(), r[1:].ravel()], 1), np.stack([r[:, :-1].ravel(), r[:, 1:].ravel()], 1),
                            np.stack([r[:, :, :-1].ravel(), r[:, :, 1:].ravel()], 1)])
    f = tmp_path / "st.csv"
    f.write_text("src,dst,bytes\n" + "".join(f"{a},{b},1000000\n{b},{a},1000000\n" for a, b in pairs.tolist()))
    res = run_cli("map", f, "--nodes", "n[1-2048]", "--node-topology", "core:1", "--torus", "16x16x8",
                  "--mode", "whole-cluster", "--network-speeds", probe, "--time-limit", "0.1",
                  "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["seconds"] < 5.0, rep["seconds"]
    assert any("judged by block order alone" in n for n in rep["notes"]), rep["notes"]
    assert len(set((tmp_path / "m" / "hostfile").read_text().split())) == 1024


def test_the_torus_network_start_keeps_to_the_time_limit(tmp_path):
    """Same-allocation mode on 216 nodes of a 6x6x6 torus: the network start's placement
    search (a tabu search over the nodes) ran its iterations whatever the limit, 1.5 s of a
    --time-limit 0.5."""
    res = run_cli("map", _stencil(tmp_path), "--nodes", "n[1-216]", "--node-topology", "core:2", "--torus", "6x6x6",
                  "--time-limit", "0.5", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["search_seconds"] < 1.05


# --------------------------------------------------------------------------- integer matrices with entries given twice

def _dup(dtype, values):
    return sp.coo_matrix((np.array(values + [5], dtype=dtype), (np.array([0, 0, 1]), np.array([1, 1, 0]))),
                         shape=(2, 2))


@pytest.mark.parametrize("dtype,values,total", [(np.uint8, [200, 100], 300),
                                                (np.int32, [2 ** 31 - 1, 2 ** 31 - 1], 2 ** 32 - 2)])
def test_api_integer_entries_given_twice_are_summed_exactly(dtype, values, total):
    """scipy summed a COO's duplicates in their own type: 200 + 100 in uint8 was 44 bytes, two
    2^31 - 1 in int32 'negative traffic -2 from rank 0 to rank 1'."""
    assert rankmap.traffic(_dup(dtype, values)).bytes[0, 1] == total


def test_npz_integer_entries_given_twice_are_summed_exactly(tmp_path):
    sp.save_npz(tmp_path / "t.npz", _dup(np.uint8, [200, 100]))
    res = run_cli("convert", tmp_path / "t.npz", tmp_path / "t.csv")
    assert res.returncode == 0, res.stderr
    assert "0,1,300\n" in (tmp_path / "t.csv").read_text()                      # was 0,1,44


@pytest.mark.parametrize("k", [5, 2])
def test_a_blank_separated_matrix_named_csv_is_read_as_a_matrix(tmp_path, k):
    """docs/formats.md: blank-separated rows without the header read as a matrix; named .csv,
    a 5 x 5 one was 'expected src,dst,bytes[,messages], got 5 field(s)'."""
    f = tmp_path / "m.csv"
    f.write_text("".join(" ".join("1" if j == (i + 1) % k else "0" for j in range(k)) + "\n" for i in range(k)))
    res = run_cli("convert", f, tmp_path / "o.csv")
    assert res.returncode == 0, res.stderr
    assert f"{k} ranks" in res.stdout and "(treematch)" in res.stdout


@pytest.mark.parametrize("sep", [" ", "\t"])
def test_a_blank_separated_3x3_named_csv_is_refused_as_ambiguous(tmp_path, sep):
    """It was read as three pairs (2 ranks, the bytes of rank 0 to rank 1 taken as rank ids),
    without a word, where its comma-separated form is refused as ambiguous."""
    f = tmp_path / "m.csv"
    f.write_text(f"0{sep}1{sep}0\n1{sep}0{sep}1\n0{sep}1{sep}0\n")
    one_error_line(run_cli("convert", f, tmp_path / "o.csv"), "3 rows of 3 numbers and no header")


def test_blank_separated_pairs_named_csv_still_read(tmp_path):
    f = tmp_path / "p.csv"
    f.write_text("0 1 15\n1 2 3\n2 3 5\n3 4 5\n4 0 1\n")
    res = run_cli("convert", f, tmp_path / "o.csv")
    assert res.returncode == 0 and "5 ranks, 5 directed pairs (csv)" in res.stdout, res.stdout + res.stderr


def test_an_oversubscription_written_as_a_ratio_says_how_to_write_it(tmp_path, ring8):
    """fat-tree:2x4:oversub=2:1 (the usual notation) was "expected key=value after the shape,
    not '1'"."""
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-8]", "--node-topology", "core:1", "--network",
                           "fat-tree:2x4:oversub=2:1", "--out", tmp_path / "m"), "oversub=2:1 is written oversub=2")


def test_node_topology_slurm_without_slurm_says_why(tmp_path, ring8, monkeypatch):
    """Where scontrol cannot answer (no Slurm configured here) the error said 'Slurm does not
    describe these nodes (scontrol show node)', as if Slurm knew other nodes."""
    monkeypatch.delenv("SLURM_CONF", raising=False)
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "slurm", "--out", tmp_path / "m"),
                   "give their internals instead, e.g. --node-topology 'pack:2 core:6'")


def test_a_dash_is_not_standard_input_or_output(tmp_path, ring8, monkeypatch):
    """`convert t.csv - --to csv` wrote a file named '-' into the current directory; `... | map -`
    said '-: no such file or directory'; /dev/stdout into a pipe 'cannot write
    /proc/123/fd/pipe:[456]: No such file or directory'."""
    monkeypatch.chdir(tmp_path)
    one_error_line(run_cli("convert", ring8, "-", "--to", "csv"), "DST -: rankmap writes a file, not standard output")
    assert not (tmp_path / "-").exists()
    one_error_line(run_cli("map", "-", "--nodes", "n[1-4]", "--node-topology", "core:2", "--out", tmp_path / "m"),
                   "not from standard input")
    one_error_line(run_cli("map", ring8, "--nodes", "n[1-4]", "--node-topology", "core:2", "--out", "-"),
                   "--out -: rankmap writes a directory, not standard output")
    r, w = os.pipe()
    try:
        link = tmp_path / "stdout"
        link.symlink_to(f"/proc/{os.getpid()}/fd/{w}")
        one_error_line(run_cli("convert", ring8, link, "--to", "csv"), "a pipe or socket (standard output?)")
    finally:
        os.close(r)
        os.close(w)


def test_api_map_checks_memory_before_mapping(monkeypatch):
    """`rankmap map` refuses a mapping this host's free memory cannot hold before it builds
    anything (budget.check); rankmap.map() went ahead (on a big graph: the host's memory, then
    the OOM killer)."""
    from rankmap.profiler import validate
    monkeypatch.setattr(validate, "memory_available", lambda: 100 << 20)
    with pytest.raises(UserError, match="of memory; 0.1 GiB is available"):
        rankmap.map(rankmap.traffic(_ring()), rankmap.machine("n[1-2]", "core:4"))


@pytest.mark.parametrize("to,pairs", [("mtx", 8), ("metis", 16)])
def test_what_convert_writes_under_a_csv_name_is_read_back(tmp_path, ring8, to, pairs):
    """`convert --to mtx t.csv`: its own reader took the file for CSV by its name ("got 5
    field(s)"); the MatrixMarket banner (a METIS graph's '%' comment) says what it is."""
    res = run_cli("convert", ring8, tmp_path / "t.csv", "--to", to)
    assert res.returncode == 0, res.stderr
    back = run_cli("convert", tmp_path / "t.csv", tmp_path / "back.csv")
    assert back.returncode == 0, back.stderr
    assert f"8 ranks, {pairs} directed pairs ({to})" in back.stdout


def test_link_load_plots_of_a_long_torus_are_quick(tmp_path, ring8):
    """--plots on a 1024x4 torus (8 nodes on it): one labelled tick per x, 1024 of them in each
    panel, took 13 s a figure (a 2048x2048 torus, 75 s of an 84 s map)."""
    import time
    t0 = time.monotonic()
    res = run_cli("map", ring8, "--nodes", "n[1-8]", "--node-topology", "core:1", "--torus", "1024x4", "--plots",
                  "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "m" / "links-rankmap.png").is_file()
    assert time.monotonic() - t0 < 10


def test_two_monitoring_files_of_one_rank_are_refused(tmp_path):
    """p.1.prof and a renamed copy p.01.prof were both read as rank 1: its sends counted twice."""
    (tmp_path / "p.0.prof").write_text("E\t0\t1\t100 bytes\t1 msgs sent\n")
    (tmp_path / "p.1.prof").write_text("E\t1\t0\t100 bytes\t1 msgs sent\n")
    (tmp_path / "p.01.prof").write_text("E\t1\t0\t100 bytes\t1 msgs sent\n")
    one_error_line(run_cli("convert", tmp_path / "p", tmp_path / "o.csv"), "are both the file of rank 1")
    (tmp_path / "p.01.prof").unlink()
    assert run_cli("convert", tmp_path / "p", tmp_path / "o.csv").returncode == 0


def test_mpi_override_against_the_program_s_own_library_is_refused(apps, tmp_path):
    """`profile --mpi mpich` of an Open MPI program (libmpi.so.40): every rank loaded MPICH's
    profiler beside Open MPI and died of SIGSEGV; the run said only 'no rank wrote profile data'."""
    from conftest import app, launcher
    cmd = launcher("openmpi", 2) + [str(app(apps, "traffic", "openmpi")), "ring"]
    one_error_line(run_cli("profile", "--mpi", "mpich", "--out", tmp_path / "r", "--", *cmd),
                   "the program is linked with Open MPI (libmpi.so.40)")
    assert not (tmp_path / "r").exists()
    assert run_cli("profile", "--mpi", "openmpi", "--out", tmp_path / "r2", "--", *cmd).returncode == 0


def test_topology_conf_of_separate_trees_is_said(tmp_path):
    """Leaf switches with no switch above them all (Slurm: 'no switch can reach all nodes') were
    mapped as if one joined them, without a word; the machine's description now says so."""
    (tmp_path / "two.conf").write_text("SwitchName=s1 Nodes=n[1-2]\nSwitchName=s2 Nodes=n[3-4]\n")
    (tmp_path / "r.csv").write_text("src,dst,bytes\n0,1,10\n1,2,10\n2,3,10\n3,0,10\n")
    res = run_cli("map", tmp_path / "r.csv", "--nodes", "n[1-4]", "--node-topology", "pack:1 core:1",
                  "--network", f"slurm:{tmp_path / 'two.conf'}", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "2 separate trees (no switch above s1, s2" in " ".join(res.stdout.split())
