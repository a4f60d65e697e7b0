"""The network as the site describes it to Slurm: `scontrol show topology` (topology/tree
for real on the local cluster, whose topology.conf has two leaf switches; topology/block
from the format Slurm 23.11+ prints) and topology.conf files (tree and block)."""
from __future__ import annotations

import json
import subprocess

import numpy as np
import pytest

from conftest import RANKMAP_CMD, one_error_line, run_cli
from rankmap.mapper import machine, spec as mspec
from rankmap.profiler.errors import UserError
from rankmap.slurm import topology

# what Slurm 22.05's scontrol prints for the local cluster's topology.conf
SCONTROL_TREE = """SwitchName=s1 Level=0 LinkSpeed=1 Nodes=n[1-2]
SwitchName=s2 Level=0 LinkSpeed=1 Nodes=n[3-4]
SwitchName=s0 Level=1 LinkSpeed=1 Nodes=n[1-4] Switches=s[1-2]
"""
# Slurm 24.11's topology/block (src/plugins/topology/block/topology_block.c, _print_topo_record)
SCONTROL_BLOCK = """BlockName=b1 BlockIndex=0 Nodes=n[1-2] BlockSize=2
BlockName=b2 BlockIndex=1 Nodes=n[3-4] BlockSize=2
BlockName=b3 BlockIndex=2 Nodes=n[5-6] BlockSize=2
BlockName=b4 BlockIndex=3 Nodes=n[7-8] BlockSize=2
AggregatedBlock=b[1-2] BlockIndex=4 Nodes=n[1-4] BlockSize=4
AggregatedBlock=b[3-4] BlockIndex=5 Nodes=n[5-8] BlockSize=4
AggregatedBlock=b[1-4] BlockIndex=6 Nodes=n[1-8] BlockSize=8
"""


def test_scontrol_tree():
    d = topology.parse(SCONTROL_TREE, "scontrol show topology")
    assert d["kind"] == "switches"
    assert d["paths"] == {"n1": ["s0", "s1"], "n2": ["s0", "s1"], "n3": ["s0", "s2"], "n4": ["s0", "s2"]}
    m = machine.build(["n1", "n2", "n3", "n4"], ["core:2"], network=d)
    assert m.level_names == ["switch0", "node", "package", "core"]   # the single top switch is not a level
    assert m.network.hops(np.array([0, 0]), np.array([1, 2])).tolist() == [2, 4]


def test_topology_conf_tree_irregular(tmp_path):
    """Three levels, names not consecutive, a comment, case-insensitive keys; n9's leaf hangs
    directly under the top switch (a shorter path)."""
    f = tmp_path / "topology.conf"
    f.write_text("# site network\nSwitchName=leafA Nodes=n[1-3]\nswitchname=leafB nodes=n[4,7-8]\n"
                 "SwitchName=mid1 Switches=leafA,leafB\nSwitchName=leafD Nodes=n9\nSwitchName=leafC Nodes=n[10-11]\n"
                 "SwitchName=mid2 Switches=leafC\nSwitchName=top Switches=mid[1-2],leafD LinkSpeed=100\n")
    d = topology.describe(str(f))
    assert d["paths"]["n7"] == ["top", "mid1", "leafB"] and d["paths"]["n9"] == ["top", "leafD"]
    hosts = ["n1", "n4", "n9", "n10"]
    m = machine.build(hosts, ["core:1"], network=topology.for_hosts(d, hosts))
    assert m.level_names == ["switch0", "switch1", "node", "package", "core"]
    # n1-n4: two leaves under mid1; n1-n10: across the top
    assert m.network.hops(np.array([0, 0]), np.array([1, 3])).tolist() == [4, 6]


def test_scontrol_and_conf_blocks(tmp_path):
    d = topology.parse(SCONTROL_BLOCK, "scontrol show topology")
    assert d["kind"] == "blocks"
    assert d["paths"]["n5"] == ["b[1-4]", "b[3-4]", "b3"]
    f = tmp_path / "topology.conf"
    f.write_text("".join(f"BlockName=b{i + 1} Nodes=n[{2 * i + 1}-{2 * i + 2}]\n" for i in range(4)) +
                 "BlockSizes=2,4,8\n")
    c = topology.describe(str(f))
    assert c["paths"]["n5"] == ["b1+b2+b3+b4", "b3+b4", "b3"]
    m = machine.build([f"n{i}" for i in range(1, 9)], ["core:1"], network=c)
    assert m.level_names == ["block0", "block1", "node", "package", "core"]   # the 8-node aggregate holds everyone


@pytest.mark.parametrize("text,fragment", [
    ("SwitchName=s0 Switches=s9\n", "undefined child switch s9"),
    ("SwitchName=s0 Nodes=n1\nSwitchName=s0 Nodes=n2\n", "defined twice"),
    ("NodeName=n1\n", "describes no switches"),
    ("BlockName=b1 Nodes=n[1-2]\nBlockSizes=2,6\n", "power of two"),
    # Slurm's topology/tree refuses these two as well
    ("SwitchName=l1 Nodes=n[1-4]\nSwitchName=top Switches=l1 Nodes=n[5-8]\n", "both Nodes= and Switches="),
    ("SwitchName=l1 Nodes=n[1-4]\nSwitchName=l2\nSwitchName=top Switches=l[1-2]\n", "neither Nodes= nor Switches="),
    # scontrol's Level= upside down: the parent would sit below its child in every path
    ("SwitchName=l1 Nodes=n[1-2]\nSwitchName=s0 Level=1 Switches=l1\nSwitchName=s9 Level=0 Switches=s0\n",
     r"switch s9 \(Level=0\) is not above its child switch s0 \(Level=1\)"),
])
def test_bad_topology_files(tmp_path, text, fragment):
    f = tmp_path / "topology.conf"
    f.write_text(text)
    with pytest.raises(UserError, match=fragment):
        topology.describe(str(f))


def test_host_outside_the_topology(tmp_path):
    f = tmp_path / "topology.conf"
    f.write_text("SwitchName=s1 Nodes=n[1-2]\n")
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,10\n1,2,10\n")
    res = run_cli("map", tmp_path / "t.csv", "--nodes", "n[1-3]", "--node-topology", "core:1",
                  "--network", f"slurm:{f}", "--out", tmp_path / "m")
    one_error_line(res, "host n3 is under no switch")


def test_levels_are_counted_along_the_paths_and_paths_are_named_whole(tmp_path):
    d = tmp_path / "we:ird"
    d.mkdir()
    f = d / "topology.conf"
    # scontrol's Level= may skip numbers: the tree has three levels of switches, not seven
    f.write_text("SwitchName=l1 Nodes=n[1-2]\nSwitchName=l2 Nodes=n[3-4]\nSwitchName=s0 Level=5 Switches=l1\n"
                 "SwitchName=s1 Level=1 Switches=l2\nSwitchName=top Level=6 Switches=s[0-1]\n")
    desc = topology.describe(str(f))
    assert "on 3 level(s)" in desc["label"]
    with pytest.raises(UserError, match=f"\\({f}\\): host n5 is under no switch"):
        topology.for_hosts(desc, ["n1", "n5"])


def _cliques(path, n=8, heavy=1e6, light=1e3):
    """Two cliques of four ranks, {0,2,4,6} and {1,3,5,7}: Slurm's block order puts each
    across both leaf switches of the local cluster (two ranks per node)."""
    rows = ["src,dst,bytes"]
    for a in range(n):
        for b in range(n):
            if a != b:
                rows.append(f"{a},{b},{heavy if a % 2 == b % 2 else light:g}")
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.slurm
def test_map_onto_the_local_clusters_switches(slurm_cluster, tmp_path):
    """For real: scontrol answers the local cluster's topology.conf (two leaf switches), the
    mapper keeps each clique of heavy pairs under one leaf switch, and machine.json keeps
    the switches so that evaluate needs no Slurm afterwards."""
    out = subprocess.run(["scontrol", "show", "topology"], env=slurm_cluster, capture_output=True, text=True)
    assert out.returncode == 0 and "SwitchName=s1" in out.stdout and "Switches=s[1-2]" in out.stdout
    traffic = _cliques(tmp_path / "cliques.csv")
    res = subprocess.run(RANKMAP_CMD + ["map", str(traffic), "--nodes", "n[1-4]", "--network", "slurm",
                                        "--out", str(tmp_path / "m"), "--json"],
                         env=slurm_cluster, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    spec = mspec.load(tmp_path / "m")
    leaf = {h: p[-1] for h, p in spec["network"]["paths"].items()}
    assert leaf == {"n1": "s1", "n2": "s1", "n3": "s2", "n4": "s2"}
    hosts = (tmp_path / "m" / "hostfile").read_text().split()
    for clique in ({0, 2, 4, 6}, {1, 3, 5, 7}):
        assert len({leaf[hosts[r]] for r in clique}) == 1, hosts
    rep = json.loads(res.stdout)
    assert rep["metrics"]["rankmap"]["max_global_link_load"] < rep["metrics"]["block"]["max_global_link_load"]
    ev = run_cli("evaluate", traffic, tmp_path / "m", "--json")          # no Slurm needed any more
    assert ev.returncode == 0 and "Slurm topology/tree" in json.loads(ev.stdout)["machine"]


def test_machine_json_of_some_nodes_rebuilds(tmp_path):
    """A machine reduced to nodes that share switches (--mode whole-cluster picks them) writes
    a machine.json that rebuilds: the levels they all share are left out with their costs,
    and every pair of slots costs what it did (fuzzing found evaluate refusing it)."""
    from rankmap.mapper import allocation
    f = tmp_path / "topology.conf"
    f.write_text("SwitchName=l1 Nodes=n[1-3]\nSwitchName=l2 Nodes=n[4-10]\nSwitchName=l3 Nodes=n[11-12]\n"
                 "SwitchName=l4 Nodes=n[13-16]\nSwitchName=a1 Switches=l[1-2]\nSwitchName=b1 Switches=l3\n"
                 "SwitchName=b2 Switches=b1\nSwitchName=top Switches=a1,b2,l4\n")
    d = topology.describe(str(f))
    hosts = [f"n{i}" for i in range(1, 17)]
    spec = {"hosts": hosts, "node_topology": ["pack:2 core:2"], "network": topology.for_hosts(d, hosts)}
    full = mspec.build(spec)
    for nodes in ([3, 4, 5], [0, 3], [10, 11], [0, 12], [7]):
        sub = allocation.restrict(full, nodes)
        again = mspec.build(mspec.frozen(spec, sub))
        assert again.hosts == sub.hosts
        a, b = np.triu_indices(sub.nslots, 1)
        assert np.allclose(again.distance(a, b), sub.distance(a, b))
        kept = mspec.build(mspec.restrict(spec, sub.hosts))       # an allocation's nodes (rankmap run)
        assert np.allclose(kept.distance(a, b), sub.distance(a, b))
