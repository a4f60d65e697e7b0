"""`rankmap predict` on SimGrid's fat tree: SimGrid's own d-mod-k routes, and the limiter
that SimGrid gives every switch of a cluster with a limiter_link (the NIC bandwidth, shared
by all the switch passes). The model tests need no SimGrid; the last one checks the
limiter against a SimGrid run."""
from __future__ import annotations


import numpy as np
import pytest
import scipy.sparse as sp

from conftest import run_cli, smpi_burst
from rankmap.mapper import spec as mspec
from rankmap.mapper.network import FatTreeRoutes
from rankmap.mapper.predict import predict
from rankmap.slurm import platform as plat

PRESET = "2;8,4;1,2;1,1"      # 4 leaves of 8 nodes, 2 spines: the fat-tree preset


def _fat_tree(nic_bw=16.0):
    p = plat.preset("fat-tree")
    p.nic_bw = nic_bw
    return p, mspec.build(plat.machine_spec(p))


def test_routes_are_d_mod_k():
    r = FatTreeRoutes(PRESET)
    assert r.per_level == [32, 4, 2] and r.nlimiters == 38
    links, lims = r.segments(np.array([0, 1, 0, 0]), np.array([8, 8, 9, 3]))
    up = {(int(i), int(k)) for i, k, d in ((i, k, d) for ii, kk, d in links for i, k in zip(ii, kk)) if d == 0}
    # routes to node 8 (even) climb through spine 0, to node 9 through spine 1: leaf 0's port 0 or 1
    leaf0 = r.link_off[1] + np.array([0, 1])
    assert (0, leaf0[0]) in up and (1, leaf0[0]) in up and (2, leaf0[1]) in up
    lim = {}
    for ii, kk in lims:
        for i, k in zip(ii, kk):
            lim.setdefault(int(i), set()).add(int(k))
    spine0, spine1, leaf = 32 + 4, 32 + 5, 32
    assert lim[0] == {0, 8, leaf, leaf + 1, spine0}       # both nodes, both leaves, the spine
    assert lim[2] == {0, 9, leaf, leaf + 1, spine1}
    assert lim[3] == {0, 3, leaf}                         # inside leaf 0: its switch only
    lk, lm = r.loads(np.array([0, 1, 2]), np.array([8, 10, 12]), np.array([1.0, 2.0, 4.0]))
    assert lk[0, leaf0[0]] == 7.0 and lk[0, leaf0[1]] == 0.0  # d-mod-k: all three to even nodes, one uplink
    assert lm[leaf] == 7.0 and lm[spine0] == 7.0 and lm[spine1] == 0.0


def test_cables_follow_simgrid_ports():
    """Two cables between each leaf and spine (count 2): the up port is d mod 4 (2 parents x
    2 cables), the way down takes the source's position mod 2."""
    r = FatTreeRoutes("2;4,2;1,2;1,2")
    links, _ = r.segments(np.arange(4), np.array([4, 5, 6, 7]))
    up = [k[np.argsort(i)] for i, k, d in links if d == 0]
    assert (up[1] - r.link_off[1]).tolist() == [0, 1, 2, 3]   # leaf 0's four ports, one per destination


def test_predict_sees_the_leaf_switch_limiter():
    """Six nodes of one leaf, each sending 60 MB to the next: every node link carries 60 MB
    (10 ms at 6 GB/s), but the leaf switch passes all 360 MB through its 16 GB/s limiter."""
    p, m = _fat_tree()
    ranks = 6
    M = sp.coo_matrix((np.full(ranks, 60e6), (np.arange(ranks), (np.arange(ranks) + 1) % ranks)), shape=(ranks, ranks))
    slot = np.array([m.slots_by_node()[i][0] for i in range(ranks)])
    r = predict(M, None, m, slot, p.network())
    assert r["bounds"]["links"] == pytest.approx(60e6 / 6e9)
    assert r["bounds"]["nic"] == pytest.approx(360e6 / 16e9) and r["limited_by"] == "nic"
    p, m = _fat_tree(None)                          # no limiter_link: no switch limiter either
    r = predict(M, None, m, slot, p.network())
    assert r["bounds"]["nic"] == 0 and r["bandwidth"] == pytest.approx(60e6 / 6e9)


@pytest.mark.smpi
def test_simgrid_caps_the_leaf_switch(tmp_path):
    """Four pairs of nodes in one leaf, 4 MB each at once: the node links would take 0.7 ms,
    SimGrid takes 16 MB / 16 GB/s = 1.05 ms (the leaf switch's limiter), as predict says."""
    assert run_cli("platform", "fat-tree", "--out", tmp_path / "p", "--link-lat", "0").returncode == 0
    hosts = [f"n{i}" for i in range(8)]                     # n0..n3 send to n4..n7, all under leaf 0
    sim = smpi_burst(tmp_path, hosts, tmp_path / "p", 4 << 20)
    p, _ = plat.load(tmp_path / "p")
    m = mspec.build(plat.machine_spec(p))
    M = sp.coo_matrix((np.full(4, float(4 << 20)), (np.arange(4), np.arange(4) + 4)), shape=(8, 8))
    est = predict(M, None, m, np.array([m.slots_by_node()[i][0] for i in range(8)]), p.network())
    assert est["limited_by"] == "nic"
    assert 16 * (1 << 20) / 16e9 * 0.99 < sim < 16 * (1 << 20) / 16e9 * 1.10, sim
    assert 0.9 < est["seconds"] / sim < 1.1, (est["seconds"], sim)
