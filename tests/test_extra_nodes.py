"""map --extra-nodes PERCENT (whole-cluster mode with the network's speeds): node sets of more
nodes than the fewest that hold the ranks, each partly filled, are candidates too
(allocation.wider_node_sets), and predict chooses. Groups of ranks that exchange most and
do not fill a node take one node each (NPB CG's process-grid rows: docs/real-apps.md);
traffic that gains nothing keeps the fewest nodes; the option is refused where it could
change nothing."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import one_error_line, run_cli
from rankmap.mapper import allocation, spec as mspec
from rankmap.mapper.mapping import run_map
from rankmap.mapper.predict import Network
from rankmap.profiler.traffic import Traffic

NET = Network(link_bw=1e9, link_lat=1e-6, loop_bw=1e10, loop_lat=1e-7, nic_bw=1.5e9)
RING = {"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"], "torus": "8"}
TWO_LEAVES = {"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"],
              "network": "fat-tree:2;4,2;1,2;1,1"}


def groups_of_three(ngroups: int = 4) -> Traffic:
    """Groups of 3 ranks (3g, 3g+1, 3g+2), 10 MB between every two of a group; 0.1 MB from each
    group's first rank to the next group's (a ring)."""
    p = 3 * ngroups
    W = np.zeros((p, p))
    for g in range(ngroups):
        m = range(3 * g, 3 * g + 3)
        for a in m:
            for b in m:
                W[a, b] = 1e7 if a != b else 0
        W[3 * g, 3 * ((g + 1) % ngroups)] = W[3 * ((g + 1) % ngroups), 3 * g] = 1e5
    return Traffic(bytes=sp.csr_matrix(W), source="t", format="synthetic")


def chain(p: int) -> Traffic:
    r = np.arange(p - 1)
    A = sp.coo_matrix((np.full(2 * (p - 1), 1e6), (np.r_[r, r + 1], np.r_[r + 1, r])), shape=(p, p))
    return Traffic(bytes=A.tocsr(), source="t", format="synthetic")


def whole(tmp_path, traffic, spec, extra=0, name="m") -> dict:
    return run_map(traffic, dict(spec), "metis", 0, None, None, True, "packed", "whole-cluster",
                   str(tmp_path / name), True, False, None, network=NET, extra_nodes=extra)


def node_of_rank(tmp_path, name="m") -> list[str]:
    return (tmp_path / name / "hostfile").read_text().split()


@pytest.mark.parametrize("spec", [RING, TWO_LEAVES], ids=["torus", "two-leaves"])
def test_groups_take_a_node_each(tmp_path, spec):
    """12 ranks in groups of 3 on 4-core nodes: the fewest nodes (3) split a group over
    three nodes; with --extra-nodes 50 the 4 nodes x 3 set keeps every group on its node,
    is predicted faster, and the note gives the node-hours it costs."""
    plain = whole(tmp_path, groups_of_three(), spec, name="plain")
    assert len(plain["nodes"]) == 3 and not any("--extra-nodes" in n for n in plain["notes"])      # not offered
    assert not any(k.endswith("x 3") for k in plain["node_sets"]["estimates"])
    rep = whole(tmp_path, groups_of_three(), spec, extra=50)
    ns = rep["node_sets"]
    assert ns["chosen"].startswith("4 nodes x 3") and len(rep["nodes"]) == 4
    hosts = node_of_rank(tmp_path)
    assert all(len({hosts[3 * g + i] for i in range(3)}) == 1 for g in range(4))     # a group per node
    assert len(set(hosts)) == 4
    est = rep["predicted_comm_seconds"]
    assert est[rep["chosen"]] < min(plain["predicted_comm_seconds"].values()) * 0.8
    assert "--extra-nodes: 4 nodes where 3 hold the ranks (+33 % node-hours for the run)" in rep["notes"]


def test_no_gain_keeps_the_fewest_nodes(tmp_path):
    """A chain gains nothing from partly filled nodes: the wider sets are compared, not taken."""
    rep = whole(tmp_path, chain(12), RING, extra=100)
    ns = rep["node_sets"]
    assert any(" nodes x " in k for k in ns["estimates"])
    assert len(rep["nodes"]) == 3 and not any("node-hours" in n for n in rep["notes"])
    assert any("wider (--extra-nodes) candidate(s) compared" in n for n in rep["notes"])


def test_wider_node_sets():
    """64 ranks on Desmos' shape (4x2x2x2 torus of 6-core nodes; the fewest is 11 nodes):
    +50 % allows 12-16 nodes, whose counts ceil(64/m) are 6, 5, 5, 4, 4: 5 a node needs 13
    nodes (the smallest boxes that hold them have 16), 4 takes 16 (6 takes the fewest: not a
    wider set). +20 % allows 13 nodes: no box of 13. Each set holds the ranks with at
    most k on each node, spread over the node's packages; deterministic."""
    m = mspec.build({"hosts": [f"n{i}" for i in range(32)], "node_topology": ["package:2 core:3"],
                     "torus": "4x2x2x2"})
    got = allocation.wider_node_sets(m, 64, 50)
    assert got and [k for _, _, k in got] == sorted((k for _, _, k in got), reverse=True)
    assert {k for _, _, k in got} == {5, 4}
    for nodes, slots, k in got:
        assert len(nodes) == 16 and len(slots) == k * len(nodes) >= 64
        per = np.bincount(m.slot_node[slots], minlength=m.nnodes)
        assert set(per[nodes]) == {k} and per.sum() == len(slots)
        if k == 4:        # two cores of each package
            pk = np.array([m.topos[0].core_package[c] for c in m.slot_core[slots]])
            assert np.bincount(pk).tolist() == [2 * len(nodes), 2 * len(nodes)]
    again = allocation.wider_node_sets(m, 64, 50)
    assert all((a[0] == b[0]).all() and (a[1] == b[1]).all() for a, b in zip(got, again))
    assert allocation.wider_node_sets(m, 64, 5) == []             # 11 -> 11.55 nodes: none more
    assert allocation.wider_node_sets(m, 64, 20) == []
    assert allocation.wider_node_sets(m, 192, 50) == []           # every node full already


def test_cli_refuses_extra_nodes_where_it_changes_nothing(tmp_path):
    csv = tmp_path / "t.csv"
    csv.write_text("src,dst,bytes\n0,1,1000\n1,0,1000\n")
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"latency_us": {"same socket": 0.1, "neighbour node": 1000},
                                 "bandwidth_GBps": {"same socket": 10, "neighbour node": 1}}))
    machine = ["--nodes", "a,b,c", "--node-topology", "core:2"]
    res = run_cli("map", csv, *machine, "--extra-nodes", "50", "--network-speeds", probe, "--out", tmp_path / "x")
    one_error_line(res, "--extra-nodes would be ignored: rankmap chooses the nodes only with --mode whole-cluster")
    res = run_cli("map", csv, *machine, "--mode", "whole-cluster", "--extra-nodes", "50", "--out", tmp_path / "x")
    one_error_line(res, "only predict can tell they run faster (give --network-speeds)")
    for bad in ("0", "-5", "nan", "1e9"):
        res = run_cli("map", csv, *machine, "--mode", "whole-cluster", "--extra-nodes", bad, "--network-speeds", probe,
                      "--out", tmp_path / "x")
        assert res.returncode != 0 and "--extra-nodes" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "x").exists()
    res = run_cli("map", csv, *machine, "--mode", "whole-cluster", "--extra-nodes", "50", "--network-speeds", probe,
                  "--out", tmp_path / "ok")
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_wider_set_must_be_clearly_faster():
    """Searched in full, a wider set is kept only when predicted WIDER_MARGIN faster than the
    better of the fewest nodes' sets (the chosen one of them, or the cost's)."""
    from rankmap.mapper.mapping import WIDER_MARGIN, _final_choice
    roles = {"chosen": "8 nodes x 8", "by_cost": "compact 1", "narrow": "scattered a"}
    assert _final_choice(roles, {"8 nodes x 8": 0.70, "compact 1": 1.0, "scattered a": 0.9}) == "8 nodes x 8"
    just = 0.9 * (1 - WIDER_MARGIN) * 1.001
    assert _final_choice(roles, {"8 nodes x 8": just, "compact 1": 1.0, "scattered a": 0.9}) == "scattered a"
    assert _final_choice(roles, {"8 nodes x 8": 0.9, "compact 1": 0.8, "scattered a": 0.85}) == "compact 1"
    assert _final_choice(roles, {"8 nodes x 8": None, "compact 1": 1.0, "scattered a": 0.9}) == "compact 1"
    plain = {"chosen": "scattered a", "by_cost": "compact 1"}     # no wider set: as before
    assert _final_choice(plain, {"scattered a": 0.99, "compact 1": 1.0}) == "scattered a"
    assert _final_choice(plain, {"scattered a": 1.0, "compact 1": 1.0}) == "compact 1"
