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


def test_packed_too_second_search_keeps_one_kind_of_start(monkeypatch):
    """A partly filled machine: _packed_too's search on the fewest nodes (one_start) starts from
    the network start alone on a torus, from METIS's partitionings alone on a switch tree; the
    first search on all nodes keeps both. Deterministic per seed."""
    W = _stencil(20, 15)                                   # 300 ranks
    t = Traffic(bytes=W, source="test", format="test")
    torus = M.build([f"n{i:02d}" for i in range(80)], ["pack:2 core:4"], torus="5x4x4", level_costs="1000,100,10")
    tree = M.build([f"n{i:02d}" for i in range(32)], ["pack:2 core:8"], switches="2x16", level_costs="3000,1000,100,10")
    for m, kind in ((torus, "network"), (tree, "metis")):
        calls = []
        real = S._solve

        def spy(*a, **k):
            r = real(*a, **k)
            calls.append((k.get("one_start", False), sorted(r.candidates)))
            return r
        monkeypatch.setattr(S, "_solve", spy)
        res = S.solve(t, m, seed=3)
        monkeypatch.setattr(S, "_solve", real)
        assert [c[0] for c in calls] == [False, True]          # the second search ran, with one_start
        first, second = calls[0][1], calls[1][1]
        assert any(c.startswith("metis") for c in first) and any(c.startswith("network") for c in first)
        # one kind of partitioning start (the process grid's bricks, the RCM orders beside: cheap)
        assert all(c.startswith((kind, "grid", "rcm")) for c in second), second
        again = S.solve(t, m, seed=3)
        assert np.array_equal(res.slot_of_rank, again.slot_of_rank) and res.cost == again.cost
