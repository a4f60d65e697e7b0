"""The benchmark's competitor adapters (bench/competitors.py), the standard benchmark's J and the
instance generators (bench/instances.py): real libraries, small instances, a few seconds."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import competitors as C  # noqa: E402
import instances as I  # noqa: E402
import mapper_standard as S  # noqa: E402
from rankmap.mapper import machine as M  # noqa: E402


def grid(nx: int, ny: int, w: float = 1000.0) -> sp.csr_matrix:
    idx = np.arange(nx * ny).reshape(ny, nx)
    r = np.concatenate([idx[:, :-1].ravel(), idx[:-1, :].ravel()])
    c = np.concatenate([idx[:, 1:].ravel(), idx[1:, :].ravel()])
    A = sp.csr_matrix((np.full(len(r), w), (r, c)), shape=(nx * ny, nx * ny))
    return (A + A.T).tocsr()


def check(slot, n, machine, cap_per_core=None):
    slot = np.asarray(slot)
    assert slot.dtype == np.int64 and len(slot) == n
    assert slot.min() >= 0 and slot.max() < machine.nslots
    assert len(np.unique(slot)) == n                      # each slot holds one rank
    if cap_per_core is not None:
        core = C.cores_of(machine).of_slot[slot]
        assert np.bincount(core).max() <= cap_per_core


@pytest.mark.parametrize("name", C.NAMES)
def test_adapters_give_one_slot_per_rank(name):
    why = C.available()[name]
    if why:
        pytest.skip(why)
    m = M.build([f"n{i}" for i in range(4)], ["pack:2 core:4"], level_costs="1000,100,10")
    W = grid(8, 4)                                         # 32 ranks, 32 slots
    slot = C.map_with(name, W, m, seed=0)
    check(slot, 32, m, cap_per_core=1)
    assert C.cost(W, m, slot) <= C.cost(W, m, np.random.default_rng(0).permutation(32)) or name == "block"


@pytest.mark.parametrize("name", ["sharedmap-fast", "kahip-ms-fast", "scotch", "treematch", "block"])
def test_adapters_respect_capacities_with_imbalance(name):
    why = C.available()[name]
    if why:
        pytest.skip(why)
    W = grid(12, 10)                                       # 120 vertices on 8 cores: share 15
    m, cap = S.machine_for(120, 2, 2, 2, 0.03)             # L = floor(1.03 * 15) = 15
    slot = C.map_with(name, W, m, seed=0, imbalance=0.03)
    check(slot, 120, m, cap_per_core=cap)


def test_torus_and_heterogeneous_targets():
    W = grid(8, 8)
    torus = M.build([f"n{i}" for i in range(8)], ["pack:2 core:4"], torus="2x2x2")
    hetero = M.build([f"n{i}" for i in range(6)], ["n[0-3]=pack:2 core:4", "n[4-5]=pack:1 core:16"])
    for m in (torus, hetero):
        h = C.hierarchy(m)
        assert int(np.prod(h.arities)) == C.cores_of(m).k and not h.exact
        for name in ("scotch", "treematch", "kahip-ms-fast"):
            if C.available()[name] is None:
                check(C.map_with(name, W, m), 64, m, 1)


def test_treematch_groups_are_exact():
    rng = np.random.default_rng(1)
    A = sp.random(48, 48, density=0.2, random_state=2, format="csr")
    A = (A + A.T).tocsr()
    for p in (2, 3):
        g, w = C.group_units(A, p, rng)
        assert np.all(np.bincount(g) == p)
        assert len({(a, b) for a, b in zip(g, w)}) == 48
    assert C.tm_arity_steps(16) == [2, 2, 2, 2] and C.tm_arity_steps(12) == [2, 2, 3] and C.tm_arity_steps(10) == [5, 2]


def test_repair_moves_to_the_nearest_free_slot():
    m = M.build(["a", "b"], ["pack:2 core:2"])             # cores 0..3 on a, 4..7 on b
    slot, moved = C.assign_slots(np.array([0, 0, 4]), m)
    assert moved == 1 and slot[0] == 0 and slot[2] == 4 and slot[1] == 1   # same socket as core 0


def test_cost_matches_treematch_sum_com_by_hand():
    # metrics.md: tleaf 2 2 100 2 10, W(0,1)=5, W(0,2)=1, W(2,3)=7, rank i on core i -> 230
    m = M.build(["a", "b"], ["pack:1 core:2"], level_costs="100,0,10")
    W = sp.csr_matrix((np.array([5, 1, 7.0]), ([0, 0, 2], [1, 2, 3])), shape=(4, 4))
    assert C.cost(W + W.T, m, np.arange(4)) == pytest.approx(230)


def test_J_by_hand_and_against_rankmaps_cost():
    # hierarchy 2:2:2 (PE = core + 2 * (socket + 2 * node)); edges (0,1) w3 same socket -> 1,
    # (0,2) w2 same node -> 10, (0,4) w1 other node -> 100, (5,5) none; both directions
    W = sp.csr_matrix((np.array([3, 2, 1.0]), ([0, 0, 0], [1, 2, 4])), shape=(8, 8))
    W = (W + W.T).tocsr()
    pe = np.arange(8)
    assert S.J(W, pe, 2, 2) == 2 * (3 * 1 + 2 * 10 + 1 * 100) == 246
    assert S.J(W, np.zeros(8, dtype=np.int64), 2, 2) == 0
    m, cap = S.machine_for(8, 2, 2, 2, 0.0)                # one vertex per core, costs 90,9,1
    assert cap == 1 and np.all(S.pe_of(m, np.arange(8), 2, 2) == pe)
    assert 2 * C.cost(W, m, np.arange(8)) == pytest.approx(246)


def test_metis_reader(tmp_path):
    p = tmp_path / "g.graph"
    p.write_text("% c\n3 2 1\n2 5\n1 5 3 7\n2 7\n")
    W = S.read_metis(p)
    assert W.shape == (3, 3) and W[0, 1] == 5 and W[1, 2] == 7 and (W != W.T).nnz == 0


@pytest.mark.parametrize("family", I.SYNTHETIC)
def test_generators_are_deterministic_per_seed(family):
    P = 96
    a, _ = I.GENERATORS[family](P, 3)
    b, _ = I.GENERATORS[family](P, 3)
    c, _ = I.GENERATORS[family](P, 4)
    assert a.shape == (P, P) and (a != b).nnz == 0
    assert (a != a.T).nnz == 0 and a.diagonal().sum() == 0 and a.nnz > 0
    assert (a != c).nnz > 0


def test_instance_sets_are_disjoint():
    tune = {i.name for i in I.instances(which="tune", seeds=None, sizes=("1k", "10k"))}
    hold = {i.name for i in I.instances(which="holdout", seeds=None, sizes=("1k", "10k"))}
    assert tune and hold and not (tune & hold)
    # the patterns family was explored (and tuned on) on the holdout shapes too; no other one
    assert not any(s in n for n in tune for s in I.HOLDOUT_SHAPES if not n.startswith("patterns/"))
    assert not any(n.startswith("mix/") for n in tune)


@pytest.mark.parametrize("name", I.PATTERNS)
def test_patterns_are_symmetric_traffic_of_about_1000_ranks(name):
    W, note = I.pattern(name)
    assert 1000 <= W.shape[0] <= 1296 and note
    assert (abs(W - W.T) > 1e-9 * W.max()).nnz == 0 and W.diagonal().sum() == 0 and W.min() >= 0
    assert (I.pattern(name)[0] != W).nnz == 0


@pytest.mark.parametrize("family", I.SYNTHETIC)
def test_only_the_social_family_has_skewed_degrees(family):
    """The rule for skewed degrees (backends.SKEWED_DEGREE_CV) was set on the social family;
    no other family (nor the real codes' graphs) reaches it."""
    from rankmap.mapper.graph import Graph
    from rankmap.mapper.partition import degree_skewed
    W, _ = I.GENERATORS[family](1000, 0)
    assert degree_skewed(Graph(W=W)) == (family == "social")


def test_recordings_checked_in_one_line(tmp_path):
    # --competitors-from: a file that is no recording of the benchmark, or one made with
    # other competitor versions, stops with one line (no traceback)
    cases = {"empty.json": "", "list.json": "[1, 2]", "other.json": '{"versions": {}, "rows": []}'}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(SystemExit) as e:
            C.recording(str(tmp_path / name), "rows")
        assert str(e.value).startswith(f"--competitors-from {tmp_path / name}:") and "\n" not in str(e.value)
    with pytest.raises(SystemExit, match="No such file"):
        C.recording(str(tmp_path / "missing.json"), "rows")
    good = tmp_path / "good.json"
    good.write_text(__import__("json").dumps({"versions": C.versions(), "rows": []}))
    assert C.recording(str(good), "rows")["rows"] == []
