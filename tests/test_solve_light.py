"""Mid-size machines (more than 256 slots, under 1,000 ranks): three starts, the two after
the first light (partition.hierarchical light: no KaHIP, no Mt-KaHyPar from scratch, METIS
alone below the first split); the same mapping for the same seed, never worse than block."""
import numpy as np
import scipy.sparse as sp

from rankmap.mapper import backends as B, partition as P
from rankmap.mapper import machine as M
from rankmap.mapper import solve as S
from rankmap.profiler.traffic import Traffic


def _stencil(nx: int, ny: int) -> sp.csr_matrix:
    idx = np.arange(nx * ny).reshape(nx, ny)
    a = np.concatenate([idx[:, :-1].ravel(), idx[:-1].ravel()])
    b = np.concatenate([idx[:, 1:].ravel(), idx[1:].ravel()])
    W = sp.coo_matrix((np.full(len(a), 1e6), (a, b)), shape=(nx * ny,) * 2)
    return (W + W.T).tocsr()


def _machine():
    hosts = [f"n{i:02d}" for i in range(20)]          # 20 nodes of 2 x 8 cores: 320 slots
    return M.build(hosts, ["pack:2 core:8"], level_costs="1000,100,10")


def test_mid_size_three_starts_two_light_deterministic(monkeypatch):
    W, m = _stencil(20, 15), _machine()
    assert S.effort(W.shape[0], m.nslots).starts == 3
    calls = []
    real = P.hierarchical
    monkeypatch.setattr(S, "hierarchical", lambda *a, **k: calls.append(k.get("light", False)) or real(*a, **k))
    t = Traffic(bytes=W, source="test", format="synthetic")
    r1 = S.solve(t, m, seed=4)
    r2 = S.solve(t, m, seed=4)
    assert calls == [False, True, True] * 2
    assert np.array_equal(r1.slot_of_rank, r2.slot_of_rank) and r1.cost == r2.cost
    assert r1.cost <= r1.defaults["block"] * (1 + 1e-12)


def test_light_partitioning_runs_no_kahip(monkeypatch):
    W, m = _stencil(20, 15), _machine()
    g = S.from_traffic(Traffic(bytes=W, source="test", format="synthetic"))

    def no_kahip(*a, **k):
        raise AssertionError("KaHIP in a light partitioning")

    monkeypatch.setattr(B, "kahip", no_kahip)
    slot = P.hierarchical(g, m, m.tree(), 1, light=True)
    assert len(np.unique(slot)) == W.shape[0] and slot.min() >= 0
