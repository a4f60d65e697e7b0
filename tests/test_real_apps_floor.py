"""bench/real_apps/floor.py: the least communication alone any placement can reach for an
all-to-all (predict's link, router and bisection bounds, searched over node sets and ranks
per node)."""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from real_apps import floor  # noqa: E402
from rankmap.mapper import spec as mspec  # noqa: E402
from rankmap.mapper.predict import Network, predict  # noqa: E402


def test_count_vectors():
    assert sorted(floor.count_vectors([2, 2, 2], 4)) == sorted(
        [(2, 1, 1), (1, 2, 1), (1, 1, 2)])
    assert list(floor.count_vectors([3, 1], 5)) == []
    assert len(list(floor.count_vectors([12, 12, 12], 32))) == 15


def test_injection_floor():
    # 32 ranks on 3 nodes of at most 12 cores: some node holds 11 or 12; 11 x 21 is the least
    assert floor.injection_floor(32, 3, 1.0, 1.0, 12) == pytest.approx(2 * 11 * 21)
    # nodes big enough to hold all but one rank each: 30 on one node is least (30 x 2)
    assert floor.injection_floor(32, 3, 1.0, 1.0, 32) == pytest.approx(2 * 30 * 2)
    assert floor.injection_floor(32, 3, 1.0, None, 12) == 0.0


def test_uniform_bytes():
    M = sp.csr_matrix(np.array([[0, 5, 7], [6, 0, 9], [5, 8, 0]], dtype=float))
    assert floor.uniform_bytes(M) == 5.0
    assert floor.uniform_bytes(sp.csr_matrix(np.array([[0, 1], [0, 0]], dtype=float))) == 0.0


def test_search_is_below_every_placement():
    """On a ring of 4 nodes of 2 cores, 4 ranks of uniform traffic on 2 or 3 nodes: no
    placement (every assignment of ranks to slots on that many nodes) has a largest bound
    below the floor, and one reaches it; the injection floor is below it."""
    spec = {"hosts": [f"n{i}" for i in range(4)], "node_topology": ["core:2"], "torus": "4",
            "coords": {f"n{i}": [i] for i in range(4)}}
    m = mspec.build(spec)
    net = Network(link_bw=1e9, link_lat=1e-6, loop_bw=1e10, loop_lat=1e-7, nic_bw=1.5e9)
    P, w = 4, 1e6
    U = sp.coo_matrix(w * (np.ones((P, P)) - np.eye(P)))
    for nodes in (2, 3):
        sec, name, at, n = floor.search(m, net, P, nodes, w)
        assert n > 0 and sum(c for _, c in at) == P and len(at) == nodes
        every = [floor.largest_bound(predict(U, None, m, np.array(s), net))[0]
                 for s in itertools.permutations(range(m.slot_node.size), P)
                 if len(set(m.slot_node[list(s)])) == nodes]
        assert min(every) == pytest.approx(sec)
        assert floor.injection_floor(P, nodes, w, net.nic_bw, 2) <= sec * (1 + 1e-9)
    assert floor.search(m, net, P, 2, w, limit=1) is None


@pytest.mark.parametrize("machine", ["desmos", "angara-k1", "fat-tree"])
def test_resources_give_predicts_bounds(machine):
    """The search's loads (each pair of nodes' seconds per byte, summed) are predict's link,
    limiter and bisection bounds, on the three machines (random node sets and counts)."""
    from dataclasses import replace
    from rankmap.slurm import platform as plat
    p = replace(plat.preset(machine), network_scale=0.0625)
    full = mspec.build(plat.machine_spec(p))
    net = p.network()
    net.core_speed = None
    R = floor.resources(full, net)
    rng = np.random.default_rng(1)
    cores = np.bincount(full.slot_node)
    P, w = 32, 5e6
    U = sp.coo_matrix(w * (np.ones((P, P)) - np.eye(P)))
    for _ in range(20):
        S = rng.choice(full.nnodes, size=6, replace=False)
        k = np.ones(6, dtype=int)
        while k.sum() < P:
            i = rng.integers(6)
            if k[i] < cores[S[i]]:
                k[i] += 1
        slot = np.concatenate([np.flatnonzero(full.slot_node == s)[:c] for s, c in zip(S, k)])
        want = floor.largest_bound(predict(U, None, full, slot, net))[0]
        N = full.nnodes
        got = sum(k[a] * k[b] * w * R[S[a] * N + S[b]] for a in range(6) for b in range(6) if a != b).max()
        assert got == pytest.approx(want, rel=1e-9)
