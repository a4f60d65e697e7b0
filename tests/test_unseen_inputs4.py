"""Inputs of the bad-input corpus's batch 4 (tests/corpus/batch4.py: Slurm topology.conf
files, network specs, platform/predict flags, search options, damaged run directories,
non-finite matrices, output paths) and the two scale items of that round (report.json
that grew with the machine, the hostlist of 10^5 hosts). Each test was a defect before its
fix; the runs are real (the CLI in this process, no mocks)."""
from __future__ import annotations

import json
import os
import random

import hostlist
import pytest

from conftest import one_error_line, run_cli, spawn_cli
from rankmap.mapper import hostnames


def ring_csv(tmp_path, n: int):
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % n},{1000 * (i + 1)}\n" for i in range(n)))
    return t


# --------------------------------------------------------------------------- scale: report.json, hostlists

def test_report_json_grows_with_the_job_not_the_machine(tmp_path):
    """10 ranks on 10^5 nodes: report.json listed every node of the machine ("nodes") and the
    NIC volume of every node for each of the four mappings (6.6 MB). Now: the nodes holding
    the mapping's ranks, the machine's size, and {host: bytes} over the nodes each mapping
    uses (a few KB); the whole machine stays in "machine" (a hostlist) and machine.json."""
    m = tmp_path / "m"
    res = run_cli("map", ring_csv(tmp_path, 10), "--nodes", "n[1-100000]", "--node-topology", "pack:2 core:4",
                  "--torus", "100x100x10", "--out", m, "--json")
    assert res.returncode == 0, res.stderr
    assert (m / "report.json").stat().st_size < 20_000
    rep = json.loads((m / "report.json").read_text())
    assert rep == json.loads(res.stdout)
    assert rep["machine_nodes"] == 100000 and "n[1-100000]" in rep["machine"]
    hosts = [ln.split()[1] for ln in (m / "binding.txt").read_text().splitlines() if ln[0] != "#"]
    assert rep["nodes"] == sorted(set(hosts), key=lambda h: int(h[1:]))
    for name, r in rep["metrics"].items():
        assert "nic_volume" not in r
        vol = r["nic_volume_by_node"]
        assert 1 <= len(vol) <= 10 and max(vol.values()) == r["nic_volume_max"]
    # every rank's host is in the chosen mapping's per-node volumes (a ring: each node sends)
    assert set(rep["metrics"]["rankmap"]["nic_volume_by_node"]) == set(rep["nodes"])
    ev = run_cli("evaluate", ring_csv(tmp_path, 10), m, "--json")
    assert ev.returncode == 0, ev.stderr
    assert len(ev.stdout) < 20_000
    assert json.loads(ev.stdout)["metrics"]["m"]["sum_com"] == pytest.approx(rep["cost"])


def test_hostlist_compression_is_python_hostlists_string():
    """hostnames.compress (10^5 hosts took 0.4-0.8 s in python-hostlist's loop; numpy now):
    the very string python-hostlist writes, on names of every shape it takes."""
    rng = random.Random(4)
    pref = ["n", "rack1-n", "a", "b0c", "x-", "", "c1b", "n0", "1", "r2n"]
    suf = ["", "-ib", ".x", "a1", "3", " ", "[", "\n", ","]
    for _ in range(3000):
        hs = []
        for _ in range(rng.randint(0, 25)):
            n = rng.randint(0, 120) if rng.random() < 0.9 else rng.randint(0, 10 ** 20)
            num = "%0*d" % (rng.choice([0, 0, 1, 2, 3]), n) if rng.random() < 0.95 else ""
            h = rng.choice(pref) + num + (rng.choice(suf) if rng.random() < 0.5 else "")
            if h:
                hs.append(h)
        try:
            want = hostlist.collect_hostlist(hs)
        except hostlist.BadHostlist:
            with pytest.raises(hostlist.BadHostlist):
                hostnames.compress(hs)
            continue
        assert hostnames.compress(hs) == want, hs
    big = [f"n{i:06d}" for i in range(1, 100001)]
    rng.shuffle(big)
    assert hostnames.compress(big) == "n[000001-100000]"
    assert hostnames.compress([f"r{i // 100}-n{i % 100}" for i in range(100000)]) == "r[0-999]-n[0-99]"
    assert hostnames.compress([]) == ""


# --------------------------------------------------------------------------- Slurm topology.conf

PAIRS6 = ("src,dst,bytes\n0,1,1000000\n1,0,1000000\n2,3,1000000\n3,2,1000000\n4,5,1000000\n5,4,1000000\n"
          "1,2,10\n3,4,10\n")


def map_tconf(tmp_path, conf: str, *extra):
    (tmp_path / "pairs.csv").write_text(PAIRS6)
    t = tmp_path / "topology.conf"
    t.write_text(conf)
    return run_cli("map", tmp_path / "pairs.csv", "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                   "--network", f"slurm:{t}", "--out", tmp_path / "m", *extra), t


def test_topology_conf_continuation_lines_are_read(tmp_path):
    """batch4 tc4-continuation-backslash: Slurm's config files go on after a trailing '\\';
    the Nodes= on the next line was dropped ('host n1 is under no switch or block')."""
    res, _ = map_tconf(tmp_path, "SwitchName=s0 \\\n   Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4] \\\n"
                                 "  # a comment on the continued line\nSwitchName=s2 Nodes=n[5-6]\n"
                                 "SwitchName=top Switches=s[0-2]\n", "--json")
    assert res.returncode == 0, res.stderr
    hosts = [ln.split()[1] for ln in (tmp_path / "m" / "binding.txt").read_text().splitlines() if ln[0] != "#"]
    leaf = {"n1": 0, "n2": 0, "n3": 1, "n4": 1, "n5": 2, "n6": 2}
    assert all(leaf[hosts[a]] == leaf[hosts[a + 1]] for a in (0, 2, 4)), hosts


@pytest.mark.parametrize("conf, fragment", [
    # a node under two leaf switches was silently read as nested switches (s0 above s1)
    ("SwitchName=s0 Nodes=n[1-3]\nSwitchName=s1 Nodes=n[3-6]\nSwitchName=top Switches=s[0-1]\n",
     ":2: node n3 is under leaf switches s0 and s1"),
    ("SwitchName= Nodes=n[1-6]\n", ":1: SwitchName= names no switch"),        # was a switch named ''
    ("# site\nSwitchName=s0 Nodes=n[1-6]\n\nSwitchName=s0 Nodes=n[1-2]\n", ":4: switch s0 is defined twice (first on line 2)"),
    ("SwitchName=s0 Nodes=n[1-6]\nSwitchName=top Switches=s[0-3]\n", ":2: switch top names an undefined child switch s1"),
    ("SwitchName=s0 Nodes=n[1-6\n", ":1: bad hostlist expression"),
    # blocks: a node in two blocks, a block defined twice, a block without a name were accepted
    ("BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[3-6]\n", ":2: node n3 is in blocks b1 and b2"),
    ("BlockName=b1 Nodes=n[1-3]\nBlockName=b1 Nodes=n[4-6]\n", ":2: block b1 is defined twice (first on line 1)"),
    ("BlockName= Nodes=n[1-6]\n", ":1: BlockName= names no block"),
    # a blank inside a value: n2 was dropped, then 'host n2 is under no switch or block'
    ("SwitchName=s0 Nodes=n1, n2\n", ":1: 'n2' is not Key=Value (a blank inside a value?"),
    # both plugins' lines: the blocks were ignored
    ("SwitchName=s0 Nodes=n[1-6]\nBlockName=b1 Nodes=n[1-6]\n", ":2: BlockName=/BlockSizes= lines (topology/block) "
     "next to SwitchName= lines (topology/tree, line 1)"),
])
def test_topology_conf_mistakes_name_their_line(tmp_path, conf, fragment):
    res, t = map_tconf(tmp_path, conf)
    one_error_line(res, f"{t}{fragment}")
    assert not (tmp_path / "m").exists()


def test_network_slurm_without_a_file_and_coords_with_slurm(tmp_path):
    """batch4 tc4-slurm-colon-empty: 'slurm:' (an unset $TOPO) asked scontrol instead;
    tc4-slurm-file-and-coords: --coords was ignored with Slurm's switches."""
    (tmp_path / "pairs.csv").write_text(PAIRS6)
    res = run_cli("map", tmp_path / "pairs.csv", "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                  "--network", "slurm:", "--out", tmp_path / "m")
    one_error_line(res, "--network 'slurm:': names no topology.conf; give --network slurm:FILE")
    res, t = map_tconf(tmp_path, "SwitchName=s0 Nodes=n[1-6]\n", "--coords", tmp_path / "pairs.csv")
    one_error_line(res, "--coords places nodes in a torus or mesh")


# --------------------------------------------------------------------------- network specs name the flag

@pytest.mark.parametrize("flag, spec, nodes, fragment", [
    ("--network", "fat-tree:2x2", "n[1-6]", "--network fat-tree:2x2: a switch tree 2x2 holds 4 nodes, fewer than 6"),
    ("--network", "fat-tree:0x4", "n[1-3]", "--network 'fat-tree:0x4': bad fat-tree dimensions '0x4'"),
    ("--network", "fat-tree:3x2:oversub=nan", "n[1-6]", "--network fat-tree:3x2:oversub=nan: oversubscription 'nan'"),
    ("--network", "fat-tree:2;0,2;1,2;1,1", "n[1-3]", "--network fat-tree:2;0,2;1,2;1,1: bad fat tree"),
    ("--network", "dragonfly:2x1x2", "n[1-6]", "--network dragonfly:2x1x2: 6 nodes do not fit a dragonfly"),
    ("--network", "dragonfly:1000x1000x1000", "n[1-3]", "--network 'dragonfly:1000x1000x1000': dragonfly"),
    ("--network", "torus:2x-3", "n[1-3]", "--network 'torus:2x-3': bad torus dimensions"),
    ("--network", "tofu:1x1x1", "n[1-13]", "--network tofu:1x1x1: 13 nodes do not fit a 1x1x1x2x3x2 torus"),
    ("--network", "mesh:5", "n[1-6]", "--network mesh:5: 6 nodes do not fit a 5 mesh (5 positions)"),
    ("--torus", "2x2", "n[1-6]", "--torus 2x2: 6 nodes do not fit a 2x2 torus (4 positions): give a larger shape"),
    ("--switch-tree", "2x2", "n[1-6]", "--switch-tree 2x2: a switch tree 2x2 holds 4 nodes"),
])
def test_network_shapes_name_their_flag(tmp_path, flag, spec, nodes, fragment):
    """batch4 nw4-*: the shape errors said 'bad torus dimensions' or 'a switch tree 2x2
    holds 4 nodes' without the option they came from (--network's kinds especially)."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", nodes, "--node-topology", "pack:1 core:1", flag, spec,
                  "--out", tmp_path / "m")
    one_error_line(res, fragment)


# --------------------------------------------------------------------------- --parallel N

@pytest.mark.parametrize("n, fragment", [
    ("100000", "--parallel 100000: rankmap starts at most 65536 processes"),
    ("7", "--parallel 7: more processes than the traffic's 6 ranks; give at most --parallel 6"),
    ("0", "--parallel 0: needs at least one process"),
])
def test_parallel_process_count_is_bounded_before_a_launch(tmp_path, monkeypatch, n, fragment):
    """batch4 se4-parallel-huge: --parallel 100000 on 6 ranks started `mpirun -np 100000
    --oversubscribe` (on this machine: a fake mpirun that fails, first on PATH)."""
    fake = tmp_path / "bin"
    fake.mkdir()
    for name in ("mpirun", "mpirun.openmpi", "srun"):
        (fake / name).write_text(f"#!/bin/sh\ntouch {tmp_path}/launched\nexit 3\n")
        (fake / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-3]", "--node-topology", "pack:1 core:4",
                  "--parallel", n, "--out", tmp_path / "sub" / "m")
    one_error_line(res, fragment)
    assert not (tmp_path / "launched").exists() and not (tmp_path / "sub").exists()


def test_parallel_launcher_without_parallel_is_refused(tmp_path):
    """--parallel-launcher srun without --parallel was ignored silently: the user expected
    an MPI job and got a one-process mapping."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-3]", "--node-topology", "pack:1 core:4",
                  "--parallel-launcher", "srun", "--out", tmp_path / "m")
    one_error_line(res, "--parallel-launcher srun: only with --parallel N")
    assert not (tmp_path / "m").exists()


# --------------------------------------------------------------------------- --algorithm scotch

@pytest.mark.parametrize("n, topo, extra", [
    (6, "pack:1 core:4", []),                       # nodes of one package: tleaf level of arity 1
    (6, "pack:1 core:4", ["--imbalance", "0.1"]),
    (20, "pack:2 core:2", ["--oversubscribe", "2"]),   # two slots per core: the decomposition target
])
def test_scotch_maps_single_package_nodes_and_shared_cores(tmp_path, n, topo, extra):
    """batch4 se4-algorithm-scotch-imbalance: `--algorithm scotch` failed with 'scotch_gmap
    failed: gmap: ERROR: archLoad: cannot load architecture data' on nodes of one package
    (Scotch refuses a tleaf level of arity 1) and whenever a core held two slots (those
    slots were left out of the target graph)."""
    m = tmp_path / "m"
    res = run_cli("map", ring_csv(tmp_path, n), "--nodes", "n[1-3]", "--node-topology", topo, "--algorithm", "scotch",
                  *extra, "--out", m, "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["algorithm"] == "scotch" and rep["cost"] <= rep["defaults"]["block"] * (1 + 1e-12)
    rows = [ln.split() for ln in (m / "binding.txt").read_text().splitlines() if ln[0] != "#"]
    assert len(rows) == n


# --------------------------------------------------------------------------- where the slots went

def test_too_few_slots_names_ranks_per_node(tmp_path):
    """batch4 se4-ranks-per-node-too-few: '6 ranks but only 3 slots on 3 node(s); add nodes, or
    use --oversubscribe' while the nodes had 12 cores: --ranks-per-node 1 was the cause."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-3]", "--node-topology", "pack:1 core:4",
                  "--ranks-per-node", "1", "--out", tmp_path / "m")
    one_error_line(res, "6 ranks but only 3 slots on 3 node(s); add nodes, or use --oversubscribe N to put N ranks "
                        "on each core; --ranks-per-node 1 uses 1 of each node's cores (3 of the 12 cores)")


@pytest.mark.parametrize("value, fragment", [
    ("n[1-", "SLURM_JOB_NODELIST='n[1-' (the allocation's nodes; --nodes overrides it): bad hostlist"),
    ("n[1-2],n1", "SLURM_JOB_NODELIST: host n1 appears twice"),
])
def test_slurm_job_nodelist_errors_name_the_variable(tmp_path, value, fragment):
    """batch4 se4-env-nodelist-garbage: 'bad hostlist expression' without saying that it came
    from SLURM_JOB_NODELIST (no --nodes given)."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--node-topology", "pack:1 core:4", "--out", tmp_path / "m",
                  env={"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": value})
    one_error_line(res, fragment)
    ok = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-3]", "--node-topology", "pack:1 core:4",
                 "--out", tmp_path / "m", env={"SLURM_JOB_ID": "42", "SLURM_JOB_NODELIST": value})
    assert ok.returncode == 0, ok.stderr                  # --nodes given: the variable is not read


def test_slurm_job_nodelist_is_the_default_node_list_as_documented(tmp_path):
    """batch4 se4-env-nodelist-used: --nodes' help says 'default: $SLURM_JOB_NODELIST', but
    without SLURM_JOB_ID it was 'no node list: pass --nodes'."""
    m = tmp_path / "m"
    res = run_cli("map", ring_csv(tmp_path, 6), "--node-topology", "pack:1 core:4", "--out", m, "--json",
                  env={"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_JOB_ID": None})
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["machine_nodes"] == 3


def test_too_few_slots_says_the_nodes_came_from_the_allocation(tmp_path):
    """Too few slots on nodes nobody named (no --nodes: $SLURM_JOB_NODELIST's): the error says
    where the nodes came from, and that --nodes names others."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--node-topology", "pack:1 core:2", "--out", tmp_path / "m",
                  env={"SLURM_JOB_NODELIST": "n[1-2]", "SLURM_JOB_ID": None})
    one_error_line(res, "6 ranks but only 4 slots on 2 node(s); add nodes, or use --oversubscribe N to put N ranks "
                        "on each core; these are the allocation's nodes (n[1-2], from $SLURM_JOB_NODELIST): "
                        "--nodes names others")


def test_a_host_name_too_long_for_a_path_is_a_host_list_error(tmp_path):
    """batch4 ho4-hostname-300: --nodes 'hhh...h[1-3]' (300 letters) ended in 'File name too
    long' (the CLI asked whether the host list was a file)."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "h" * 300 + "[1-3]", "--node-topology", "pack:1 core:4",
                  "--out", tmp_path / "m")
    one_error_line(res, "is not a host name (letters, digits, '.', '_', '-')")
    assert "--nodes" in res.stderr


def test_a_network_key_given_twice_is_refused(tmp_path):
    """batch4 nw4-fat-tree-dup-key: fat-tree:3x2:oversub=2:oversub=4 kept the last silently."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                  "--network", "fat-tree:3x2:oversub=2:oversub=4", "--out", tmp_path / "m")
    one_error_line(res, "oversub= given twice; give it once")


def test_dragonfly_parallel_links_are_bounded(tmp_path):
    """batch4 nw4-dragonfly-global-huge: global=2^70 links per pair of groups was taken (link
    loads of 1e-18 bytes in the report)."""
    res = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                  "--network", f"dragonfly:3x2x1:global={2 ** 70}", "--out", tmp_path / "m")
    one_error_line(res, "global= is a number of parallel links, 1 to 4096")
    ok = run_cli("map", ring_csv(tmp_path, 6), "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                 "--network", "dragonfly:3x2x1:global=4:local=2", "--out", tmp_path / "m")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("extra", [["--torus", "3x3"], ["--torus", "3x3", "--imbalance", "0.03"]])
def test_fewer_ranks_than_nodes_keeps_json_clean(tmp_path, extra):
    """2 ranks on a 9-node torus: the network start split them into one part per node and
    METIS printed "***Cannot bisect a graph with 0 vertices!" on stdout, into the --json
    report (a separate process: the C library writes to the process's own stdout). Found by
    an unseen-input sweep. Splits with no more ranks than parts now fill the parts in order."""
    t = tmp_path / "pair.csv"
    t.write_text("0,1,1\n1,0,1\n")
    res = spawn_cli("map", t, "--nodes", "n[1-9]", "--node-topology", "pack:2 core:3", *extra,
                    "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["cost"] <= rep["defaults"]["block"] and rep["nodes"] == ["n1"]


def test_open_mpi_hostfile_slots_give_ranks_in_order(tmp_path):
    """An Open MPI hostfile (`host slots=N`) gives each host its next N ranks, as Open MPI
    maps by slot; the `slots=2` used to be ignored (one rank per line), so a 2-line file
    passed for 2 ranks put them on two hosts without a word. Other words on a line are
    refused, naming it."""
    t = ring_csv(tmp_path, 4)
    ompi, slurm = tmp_path / "ompi-hosts", tmp_path / "slurm-hosts"
    ompi.write_text("n1 slots=2 max_slots=4   # login node excluded\nn2 slots=2\n")
    slurm.write_text("n1\nn1\nn2\nn2\n")
    args = ("--nodes", "n[1-2]", "--node-topology", "pack:1 core:2", "--json")
    a, b = run_cli("evaluate", t, ompi, *args), run_cli("evaluate", t, slurm, *args)
    assert a.returncode == 0 and b.returncode == 0, a.stderr + b.stderr
    ja, jb = json.loads(a.stdout), json.loads(b.stdout)
    assert ja["metrics"]["ompi-hosts"]["sum_com"] == jb["metrics"]["slurm-hosts"]["sum_com"] \
        == jb["metrics"]["block"]["sum_com"]
    bad = tmp_path / "two-per-line"
    bad.write_text("n1 n2\n")
    one_error_line(run_cli("evaluate", t, bad, *args[:-1]), f"{bad}:1: expected 'host', 'host:k' or 'host slots=N'")


def test_open_mpi_hostfile_as_node_list(tmp_path):
    """--nodes FILE may be an Open MPI hostfile: `host slots=N max_slots=M` names the host
    (its cores come from --node-topology); 'slots=2' was read as a host name."""
    nodes = tmp_path / "ompi-hosts"
    nodes.write_text("n1 slots=2 max_slots=4\nn2 slots=2  # second\n")
    res = run_cli("map", ring_csv(tmp_path, 4), "--nodes", nodes, "--node-topology", "pack:1 core:2",
                  "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["machine_nodes"] == 2
