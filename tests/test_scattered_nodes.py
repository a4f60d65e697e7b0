"""Whole-cluster mode knowing the network's speeds (run_map's network): node sets scattered
over the network are candidates beside the compact ones (allocation.scattered_node_sets,
each with its ranks per node), and predict's estimate of each candidate's quick mapping
chooses the node set. An all-to-all takes a scattered set where the compact one funnels its
bytes through few routers; a chain keeps the compact set; without a network nothing
changes."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rankmap.mapper import allocation, linkload, spec as mspec
from rankmap.mapper.mapping import run_map
from rankmap.mapper.predict import Network, predict
from rankmap.profiler.traffic import Traffic

NET = Network(link_bw=1e9, link_lat=1e-6, loop_bw=1e10, loop_lat=1e-7, nic_bw=1.5e9)
RING = {"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"], "torus": "8"}
# SimGrid's fat tree: 2 leaf switches of 4 nodes, each leaf with 2 uplinks (2 top switches)
TWO_LEAVES = {"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"],
              "network": "fat-tree:2;4,2;1,2;1,1"}


def alltoall(p: int) -> Traffic:
    return Traffic(bytes=sp.csr_matrix(1e6 * (np.ones((p, p)) - np.eye(p))), source="t", format="synthetic")


def chain(p: int) -> Traffic:
    """Rank i exchanges 1 MB with i + 1 (an open line: a 1-D stencil without wrap-around)."""
    r = np.arange(p - 1)
    A = sp.coo_matrix((np.full(2 * (p - 1), 1e6), (np.r_[r, r + 1], np.r_[r + 1, r])), shape=(p, p))
    return Traffic(bytes=A.tocsr(), source="t", format="synthetic")


def whole(tmp_path, traffic, spec, network=None) -> dict:
    return run_map(traffic, dict(spec), "metis", 0, None, None, True, "packed", "whole-cluster",
                   str(tmp_path / "m"), True, False, None, network=network)


def hostfile_counts(tmp_path) -> dict:
    lines = (tmp_path / "m" / "hostfile").read_text().split()
    return {h: lines.count(h) for h in sorted(set(lines))}


@pytest.mark.parametrize("spec,ranks", [(RING, 12), (TWO_LEAVES, 16)], ids=["torus", "two-leaves"])
def test_alltoall_takes_a_scattered_set(tmp_path, spec, ranks):
    """12 ranks on a ring of 8 nodes of 4 cores: 3 consecutive nodes pass the outer pair's
    bytes through the middle node's router; 3 nodes apart do not. 16 ranks on two leaves:
    4 nodes of one leaf pass every byte through its one switch; 2 nodes on each leaf share
    it with the other leaf's. The scattered set is predicted faster than the compact one
    that the cost would choose (its quick mapping and, searched in full, its final mapping),
    and the mapping holds the ranks per node it came with."""
    rep = whole(tmp_path, alltoall(ranks), spec, NET)
    ns = rep["node_sets"]
    assert ns["chosen"].startswith("scattered") and ns["by_cost"].startswith("compact")
    est = ns["estimates"]
    compact = min(v for k, v in est.items() if k.startswith("compact"))
    assert est[ns["chosen"]] < compact * (1 - 0.1)
    assert rep["nodes"] == ns["nodes"][ns["chosen"]] and len(rep["nodes"]) == ranks // 4
    # both sets searched in full (the final choice's estimates): the scattered one still lower
    assert ns["final"][ns["chosen"]] < ns["final"][ns["by_cost"]]
    assert rep["predicted_comm_seconds"][rep["chosen"]] == pytest.approx(ns["final"][ns["chosen"]])
    want = dict(x.split(":") for x in ns["chosen"].split(" ", 1)[1].split(","))
    assert hostfile_counts(tmp_path) == {h: int(c) for h, c in want.items()}
    note = next(n for n in rep["notes"] if n.startswith("whole-cluster mode"))
    assert "scattered candidate(s) compared by predict's communication" in note and ns["chosen"] in note


@pytest.mark.parametrize("spec", [RING, TWO_LEAVES], ids=["torus", "two-leaves"])
def test_chain_keeps_the_compact_set(tmp_path, spec):
    rep = whole(tmp_path, chain(12), spec, NET)
    ns = rep["node_sets"]
    assert ns["chosen"] == ns["by_cost"] == "compact 1" and "final" not in ns     # one set searched in full
    assert any(k.startswith("scattered") for k in ns["estimates"])      # compared, not taken
    assert rep["nodes"] == ["n0", "n1", "n2"]


@pytest.mark.parametrize("spec,ranks", [(RING, 12), (TWO_LEAVES, 16)], ids=["torus", "two-leaves"])
def test_without_network_nothing_changes(tmp_path, spec, ranks):
    rep = whole(tmp_path, alltoall(ranks), spec)
    assert "node_sets" not in rep
    assert rep["nodes"] == [f"n{i}" for i in range(ranks // 4)]
    ncand = len(allocation.candidate_node_sets(mspec.build(spec), ranks))
    assert f"whole-cluster mode: {ranks // 4} of 8 nodes chosen ({ncand} compact candidate(s) compared)" in rep["notes"]


def test_scattered_sets_scores_are_predicts_bounds():
    """Each set's score is predict's largest bound (links, routers, bisection) for a uniform
    all-to-all of one byte per ordered pair with those ranks per node; counts within the
    nodes' slots, summing to the ranks; the same sets on a second call; none without a
    network, on one switch, or when one node holds the ranks."""
    for spec, ranks in ((RING, 12), (TWO_LEAVES, 12),
                        ({"hosts": [f"n{i}" for i in range(32)], "node_topology": ["core:6"], "torus": "4x2x2x2"},
                         32)):
        m = mspec.build(spec)
        got = allocation.scattered_node_sets(m, ranks, NET)
        assert 0 < len(got) <= allocation.SCATTERED
        again = allocation.scattered_node_sets(m, ranks, NET)
        assert [(a.tolist(), b.tolist(), c) for a, b, c in got] == [(a.tolist(), b.tolist(), c) for a, b, c in again]
        cap = allocation.node_capacity(m)
        for nodes, counts, score in got:
            assert len(nodes) == allocation.fewest_nodes(cap, ranks)
            assert counts.sum() == ranks and (counts >= 1).all() and (counts <= cap[nodes]).all()
            slot = allocation.first_slots(m, dict(zip(nodes.tolist(), counts.tolist())))
            U = sp.coo_matrix(np.ones((ranks, ranks)) - np.eye(ranks))
            b = predict(U, None, m, slot, NET)["bounds"]
            assert score == pytest.approx(max(b["links"], b["nic"], b["bisection"]), rel=1e-9)
        assert [s for _, _, s in got] == sorted(s for _, _, s in got)
    assert allocation.scattered_node_sets(mspec.build(RING), 12, None) == []
    assert allocation.scattered_node_sets(mspec.build(RING), 3, NET) == []      # one node holds them
    one_switch = mspec.build({"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"]})
    assert allocation.scattered_node_sets(one_switch, 12, NET) == []


def test_desmos_like_set_reaches_the_injection_floor():
    """32 ranks on a 4x2x2x2 torus of 6-core nodes (Desmos): the best scattered set of 6
    nodes, with its ranks per node, has no bound above the injection floor (a node of 6
    ranks sends and receives 2 x 6 x 26 bytes; NPB FT's floor in docs/real-apps.md)."""
    m = mspec.build({"hosts": [f"n{i}" for i in range(32)], "node_topology": ["core:6"], "torus": "4x2x2x2"})
    nodes, counts, score = allocation.scattered_node_sets(m, 32, NET)[0]
    assert len(nodes) == 6
    assert score == pytest.approx(2 * 6 * 26 / NET.nic_bw, rel=1e-9)


def test_mixed_node_sizes_grow_until_the_ranks_fit():
    """Angara-K1 (24 nodes of 12 cores, 12 of 8) at 128 ranks: the fewest nodes that hold them
    are 11, and every spread set of 11 takes 8-core nodes and holds fewer slots. Such sets grow
    on by farthest point until they hold the ranks, the sets of the fewest nodes kept first;
    where sets of the fewest nodes hold the ranks (32 ranks) they are what is returned."""
    from rankmap.slurm import platform as plat
    spec = plat.machine_spec(plat.preset("angara-k1"))
    m, net = mspec.build(spec), plat.network_for(spec)
    cap = allocation.node_capacity(m)
    assert allocation.fewest_nodes(cap, 128) == 11
    got = allocation.scattered_node_sets(m, 128, net)
    assert len(got) == allocation.SCATTERED
    sizes = [len(nodes) for nodes, _, _ in got]
    assert min(sizes) == 12 and sizes == sorted(sizes)
    for nodes, counts, _ in got:
        assert counts.sum() == 128 and (counts >= 1).all() and (counts <= cap[nodes]).all()
    assert all(len(nodes) == 3 for nodes, _, _ in allocation.scattered_node_sets(m, 32, net))


def test_restrict_to_counts_and_link_balancing():
    """A machine reduced to some slots of each node (a scattered set's counts): kept_slots
    says which slots of the whole machine it keeps, and link balancing only trades the
    contents of nodes given the same cores (a rank keeps its core)."""
    m = mspec.build({"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:4"], "torus": "8"})
    counts = {0: 4, 2: 2, 4: 4, 6: 2}
    slots = allocation.first_slots(m, counts)
    sub = allocation.restrict(m, counts, slots)
    kept = allocation.kept_slots(m, counts, slots)
    assert np.array_equal(kept, slots) and sub.nslots == 12
    assert np.array_equal(m.slot_node[kept], np.array(sorted(counts))[sub.slot_node])
    rng = np.random.default_rng(0)
    M = sp.csr_matrix(rng.integers(0, 5, (12, 12)) * 1e6 * (1 - np.eye(12)))
    slot, info = linkload.balance(M, sub, rng.permutation(12))
    assert info                                        # it moved nodes' contents
    assert sorted(slot.tolist()) == list(range(12))
    before = np.bincount(sub.slot_node[np.arange(12)], minlength=4)
    assert np.array_equal(np.bincount(sub.slot_node[slot], minlength=4), before)


def test_descent_of_counts_finds_the_floors_placement():
    """The floor's node set of NPB FT on Desmos (n0, n1, n2, n19, n21, n31 of a 4x2x2x2 torus
    of 6-core nodes): with even counts (6-6-5-5-5-5) n1 passes n0's and n2's bytes through its
    router; the descent of single moves finds the floor's 6-3-5-6-6-6, at the injection floor
    (2 x 6 x 26 bytes through a 6-rank node's router), and its score is predict's bound."""
    from rankmap.mapper.predict import pair_model
    m = mspec.build({"hosts": [f"n{i}" for i in range(32)], "node_topology": ["core:6"], "torus": "4x2x2x2"})
    S = np.array([0, 1, 2, 19, 21, 31])
    cap = allocation.node_capacity(m)[S]
    first = np.array([np.flatnonzero(m.slot_node == k)[0] for k in S])
    pair = pair_model(m, first, NET)
    ia, ib = np.array([(a, b) for a in range(6) for b in range(6) if a != b]).T
    keys, rows, cols, vals = {}, [], [], []
    for r, (a, b) in enumerate(zip(ia.tolist(), ib.tolist())):
        for key, spb in pair(a, b)[2]:
            rows.append(r)
            cols.append(keys.setdefault(key, len(keys)))
            vals.append(spb)
    R = sp.csr_matrix((vals, (rows, cols)), shape=(len(ia), len(keys)))
    even = allocation._even_counts(cap, 32)
    assert even.tolist() == [6, 6, 5, 5, 5, 5]
    floor = 2 * 6 * 26 / NET.nic_bw
    assert float((R.T @ (even[ia] * even[ib] * 1.0)).max()) > 1.3 * floor
    score, counts = allocation._descend_counts(even, cap, R, ia, ib)
    assert counts.tolist() == [6, 3, 5, 6, 6, 6] and score == pytest.approx(floor, rel=1e-9)
    slot = allocation.first_slots(m, dict(zip(S.tolist(), counts.tolist())))
    b = predict(sp.coo_matrix(np.ones((32, 32)) - np.eye(32)), None, m, slot, NET)["bounds"]
    assert max(b["links"], b["nic"], b["bisection"]) == pytest.approx(floor, rel=1e-9)
