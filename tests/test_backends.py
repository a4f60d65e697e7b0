"""backends.plan's size rules (KaHIP presets by split size) and the standard benchmark's
generated tune graphs."""
import gzip
import sys
from pathlib import Path

import numpy as np
import pytest

from rankmap.mapper import backends as B

BENCH = Path(__file__).resolve().parents[1] / "bench"


def test_plan_small_graph_big_split_gets_strong_kahip():
    B._PRESET.clear()
    n, nnz, caps = 40_000, 240_000, [20_600, 20_600]
    how = B.plan(n, nnz, caps, graph_work=n + nnz)
    assert "kahip" in how
    assert B._PRESET[(n, nnz, tuple(caps))] == "strong"
    assert B.kahip_preset(3_000, 18_000, [800] * 4, graph_work=280_000) == "eco"
    assert B.kahip_preset(1_000, 6_000, [260] * 4, graph_work=280_000) == "fast"


def test_plan_big_graph_unchanged():
    # above STRONG_GRAPH_MAX_WORK: fast preset, KaHIP only within KAHIP_MAX_WORK, top splits only
    gw = 10 * B.STRONG_GRAPH_MAX_WORK
    assert B.kahip_preset(100_000, 600_000, [50_000, 50_000], gw) == "fast"
    assert "kahip" not in B.plan(100_000, 600_000, [50_000, 50_000], gw)       # 700k work > KAHIP_MAX_WORK
    assert "kahip" not in B.plan(5_000, 30_000, [2_500, 2_500], gw)            # not a top split


def test_plan_many_blocks_keep_fast_and_the_old_cap():
    # a 10^4-rank stencil into 312 nodes: eco took 18 s there
    assert B.kahip_preset(9_984, 56_704, [32] * 312, 66_688) == "fast"
    assert "kahip" not in B.plan(9_984, 56_704, [32] * 312, 66_688)


def test_plan_mid_graph_eco_on_top_splits():
    gw = (B.STRONG_GRAPH_MAX_WORK + B.KAHIP_BIG_GRAPH_MAX_WORK) // 2
    assert B.kahip_preset(100_000, 600_000, [50_500, 50_500], gw) == B.KAHIP_BIG_PRESET
    assert "kahip" in B.plan(100_000, 600_000, [50_500, 50_500], gw)           # room to spare
    assert "kahip" not in B.plan(5_000, 30_000, [2_500, 2_500], gw)             # not a top split


def test_plan_mid_graph_full_top_splits_get_slack_kahip_and_mtkahypar():
    """A top split that fills its parts exactly (a machine filled to the last core) on a graph
    beyond the portfolio's size: KaHIP given FULL_SLACK of room, Mt-KaHyPar and V-cycles, not
    KaHIP asked for no imbalance (FULL_SPLIT_MTKAHYPAR); with room to spare, on small graphs, or
    into many blocks, as before."""
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    gw = (B.STRONG_GRAPH_MAX_WORK + B.KAHIP_BIG_GRAPH_MAX_WORK) // 2
    B._PRESET.clear()
    assert B.plan(100_000, 600_000, [50_000, 50_000], gw) == ["metis", "kahip", "mtkahypar", "vcycles"]
    assert B._PRESET == {(100_000, 600_000, (50_000, 50_000)): "eco+slack"}
    assert B.full_split(100_000, 600_000, [50_000, 50_000], gw)
    assert not B.full_split(100_000, 600_000, [50_500, 50_500], gw)                 # room to spare
    assert B.plan(5_000, 30_000, [2_500, 2_500], gw) == ["metis"]                   # not a top split
    assert not B.full_split(40_000, 240_000, [20_000, 20_000], graph_work=280_000)  # a small graph
    assert not B.full_split(9_984, 56_704, [32] * 312, gw)                          # many blocks
    assert not B.full_split(100_000, 600_000, [50_000, 50_000], 10 * B.KAHIP_BIG_GRAPH_MAX_WORK)


def test_kahip_eco_with_slack_is_one_run_left_to_repair():
    pytest.importorskip("kahip")
    n, indptr, e = _grid(40)
    part = B.kahip(indptr, e[:, 1].copy(), np.ones(len(e)), [n // 2] * 2, 0, preset="eco+slack")
    sizes = np.bincount(part, minlength=2)
    assert sizes.sum() == n and sizes.max() <= (1 + B.FULL_SLACK) * n / 2 + 1


def test_plan_root_split_of_small_graph_gets_mtkahypar():
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    assert "mtkahypar" in B.plan(40_000, 240_000, [20_600, 20_600], graph_work=280_000)
    assert "mtkahypar" not in B.plan(20_000, 120_000, [10_300, 10_300], graph_work=280_000)


def test_plan_below_top_on_small_graphs_kahip_only():
    gw = B.STRONG_GRAPH_MAX_WORK
    split = (B.TOP_MIN_VERTICES, 6 * B.TOP_MIN_VERTICES, [B.TOP_MIN_VERTICES // 4 + 10] * 4)
    how = B.plan(*split, gw, units=True)
    assert "kahip" in how and "vcycles" not in how
    if B.mtkahypar_available():
        # at least 1/MID_SHARE of the graph and not units of work: V-cycles too
        assert "kahip" in B.plan(*split, gw) and "vcycles" in B.plan(*split, gw)
        # graphs below MID_MIN_GRAPH_WORK (1k ranks): top splits only
        assert "vcycles" not in B.plan(300, 1800, [80] * 4, B.MID_MIN_GRAPH_WORK - 1)


def _grid(side: int):
    """A side x side 2-D grid: (n, CSR indptr, both directions' edges sorted by row)."""
    idx = np.arange(side * side).reshape(side, side)
    e = np.concatenate([np.stack([idx[:, :-1].ravel(), idx[:, 1:].ravel()], 1),
                        np.stack([idx[:-1].ravel(), idx[1:].ravel()], 1)])
    e = np.concatenate([e, e[:, ::-1]])
    e = e[np.lexsort((e[:, 1], e[:, 0]))]
    n = side * side
    return n, np.concatenate([[0], np.cumsum(np.bincount(e[:, 0], minlength=n))]), e


def test_kahip_takes_the_planned_preset():
    pytest.importorskip("kahip")
    side = 12
    n, indptr, e = _grid(side)
    caps = [n // 2 + 2] * 2
    B._PRESET[(n, len(e), tuple(caps))] = "strong"
    part = B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 0)
    assert (n, len(e), tuple(caps)) not in B._PRESET      # taken
    assert np.bincount(part).max() <= caps[0]
    assert (part[e[:, 0]] != part[e[:, 1]]).sum() // 2 <= side + 2


def test_kahip_fast_full_blocks_with_slack_deterministic():
    # blocks exactly full (no room above n / k): fast runs FAST_SEEDS times with FAST_SLACK of
    # room, the lowest repaired cut kept; same seed, same split; once repaired, capacities hold
    pytest.importorskip("kahip")
    from rankmap.mapper.partition import _Sub, repair
    side = 16
    n, indptr, e = _grid(side)
    caps = [16] * 16
    B._PRESET.clear()
    a = B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 3)
    b = B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 3)
    assert np.array_equal(a, b)
    sub = _Sub((indptr, e[:, 1].copy(), np.ones(len(e))), np.arange(n), np.full(n, -1, dtype=np.int64))
    rep = repair(sub, a, caps)
    assert np.bincount(rep, minlength=16).max() <= 16
    assert sub.cut(rep) <= 2 * 120         # 16 x 16 grid into 16 blocks: 4 x 4 squares cut 96 edges (counted both ways)


def test_root_split_of_units_gets_two_strong_kahip_seeds(monkeypatch):
    """Units of work: the root split into at most ROOT_SEEDS_MAX_BLOCKS parts, where KaHIP runs
    strong, runs it ROOT_SEEDS times (seeds FAST_SEED_STEP apart) and keeps the lowest repaired
    cut; a split below the root, or ranks (one per core), one run."""
    kh = pytest.importorskip("kahip")
    from rankmap.mapper.partition import _Sub, repair, split_candidates
    n, indptr, e = _grid(48)
    caps = [n // 2 + 20] * 2
    seeds = []
    real = kh.kaffpa
    monkeypatch.setattr(kh, "kaffpa", lambda *a: seeds.append((a[-2], a[-1])) or real(*a))
    sub = _Sub((indptr, e[:, 1].copy(), np.ones(len(e))), np.arange(n), np.full(n, -1, dtype=np.int64))
    gw = n + len(e)
    assert "kahip" in B.plan(n, len(e), caps, gw, units=True) and B.kahip_preset(n, len(e), caps, gw, units=True) == "strong"
    split_candidates(sub, caps, 3, gw, units=True)
    strong = [s for s, mode in seeds if mode == kh.STRONG]
    assert strong == [3 + B.FAST_SEED_STEP * t for t in range(B.ROOT_SEEDS)]
    seeds.clear()
    split_candidates(sub, caps, 3, 2 * gw, units=True)          # half the graph: not the root
    assert [s for s, mode in seeds if mode == kh.STRONG] == [3]
    # the kept split is the lower repaired cut of the runs, the same on every call
    one = [B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 3 + B.FAST_SEED_STEP * t, "strong") for t in range(2)]
    both = B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 3, "strong", strong_seeds=2)
    cut = lambda p: sub.cut(repair(sub, p, caps))
    assert cut(both) == min(cut(p) for p in one)
    assert np.array_equal(both, B.kahip(indptr, e[:, 1], np.ones(len(e)), caps, 3, "strong", strong_seeds=2))


def test_unequal_split_from_scratch_only_when_asked(monkeypatch):
    # unequal capacities: Mt-KaHyPar from scratch (no V-cycles of its own: the portfolio's
    # improve() gives every candidate theirs) unless the caller keeps only others (the
    # network start's split, light partitionings); deterministic either way, capacities held
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    from rankmap.mapper.partition import _Sub, split_candidates
    n, indptr, e = _grid(24)
    sub = _Sub((indptr, e[:, 1].copy(), np.ones(len(e))), np.arange(n), np.full(n, -1, dtype=np.int64))
    caps = [96, 96, 192, 192]
    calls = []
    scratch = B.MtKaHyPar.partition
    monkeypatch.setattr(B.MtKaHyPar, "partition", lambda self: calls.append(1) or scratch(self))
    for keep, ncalls in ((None, 2), (("vcycles",), 2)):
        a = split_candidates(sub, caps, 5, keep=keep)
        b = split_candidates(sub, caps, 5, keep=keep)
        assert len(calls) == ncalls
        assert [c for c, _ in a] == [c for c, _ in b] and np.array_equal(a[0][1], b[0][1])
        assert (np.bincount(a[0][1], minlength=4) <= caps).all()


def test_generated_graphs_deterministic_and_gz_reader(tmp_path):
    sys.path.insert(0, str(BENCH / "data" / "graphs"))
    sys.path.insert(0, str(BENCH))
    import generate as G
    import mapper_standard as S
    a, b = G.generate("gen_delaunay_n10_s1"), G.generate("gen_delaunay_n10_s1")
    assert a.shape == (1024, 1024) and (a != b).nnz == 0 and (a != a.T).nnz == 0
    r = G.generate("gen_rgg_n_2_10_s1")
    assert r.shape[0] == 1024 and r.nnz > 0
    m = G.generate("gen_mesh_n10_s1")
    assert m.shape[0] > 900
    p = tmp_path / "g.graph"
    G.write_metis(a, p)
    (tmp_path / "g.graph.gz").write_bytes(gzip.compress(p.read_bytes()))
    back = S.read_metis(tmp_path / "g.graph.gz")
    assert (back != a).nnz == 0


def test_standard_benchmark_graphs_are_found(shared):
    """Every tune graph is generated or on disk (../shared/data/graphs or bench/data/graphs),
    and none is held out."""
    sys.path.insert(0, str(BENCH / "data" / "graphs"))
    sys.path.insert(0, str(BENCH))
    import generate as G
    import mapper_standard as S
    for name in S.TUNE_GRAPHS:
        assert name not in S.HOLDOUT_GRAPHS
        assert G.is_generated(name) or S.graph_path(name).exists()
    for name in S.HOLDOUT_GRAPHS:
        assert S.read_metis(S.graph_path(name)).shape[0] > 1000


def test_units_of_work_on_small_graphs_get_strong_kahip_on_every_split():
    """Units of work on a graph up to UNITS_SMALL_MAX_WORK: KaHIP on a split of 500 vertices
    too (fast there), strong from KAHIP_ECO_MIN_VERTICES (eco from the plain rules), and
    Mt-KaHyPar on the root split whatever its size; ranks (one per core) keep the plain rules."""
    gw = B.UNITS_SMALL_MAX_WORK
    split = (500, 3000, [130] * 4)
    assert "kahip" in B.plan(*split, gw, units=True) and B.kahip_preset(*split, gw, units=True) == "fast"
    assert "kahip" not in B.plan(*split, gw)
    mid = (B.KAHIP_ECO_MIN_VERTICES, 12000, [B.KAHIP_ECO_MIN_VERTICES // 4 + 10] * 4)
    assert B.kahip_preset(*mid, gw, units=True) == "strong" and B.kahip_preset(*mid, gw + 1, units=True) == "eco"
    # filled exactly (each part ceil(n/k)): strong from UNITS_EXACT_STRONG_MIN_VERTICES
    full = (B.UNITS_EXACT_STRONG_MIN_VERTICES, 3000, [-(-B.UNITS_EXACT_STRONG_MIN_VERTICES // 8)] * 8)
    assert B.kahip_preset(*full, gw, units=True) == "strong"
    assert B.kahip_preset(full[0] - 1, 3000, full[2], gw, units=True) == "fast"
    four = (B.UNITS_EXACT_STRONG_MIN_VERTICES, 3000, [-(-B.UNITS_EXACT_STRONG_MIN_VERTICES // 4)] * 4)
    assert B.kahip_preset(*four, gw, units=True) == "fast"        # fewer than EXACT_SLACK_MIN_BLOCKS parts
    assert B.kahip_preset(*full, gw) == "fast" and B.kahip_preset(*full, gw + 10 ** 6, units=True) != "strong"
    if B.mtkahypar_available():
        root = (8000, 50000, [4120, 4120])
        assert "mtkahypar" in B.plan(*root, 58000, units=True) and "mtkahypar" not in B.plan(*root, 58000)


def test_full_small_split_of_units_gets_exact_seeds(monkeypatch):
    """Units of work on a small graph: a split below KAHIP_ECO_MIN_VERTICES into 8+ parts filled
    exactly gets one candidate, strong KaHIP without room on UNITS_EXACT_SEEDS seeds; with room, fast."""
    kh = pytest.importorskip("kahip")
    n, indptr, e = _grid(32)                 # 1,024 vertices into 8 blocks of 128: full
    caps, gw = [128] * 8, B.UNITS_SMALL_MAX_WORK
    calls = []
    real = kh.kaffpa
    monkeypatch.setattr(kh, "kaffpa", lambda *a: calls.append((a[-2], a[-1])) or real(*a))
    B._PRESET.clear()
    assert "kahip" in B.plan(n, len(e), caps, gw, units=True)
    out = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 3, units=True)
    assert len(out) == 1 and out[0] is not None and np.bincount(out[0], minlength=8).max() <= 128
    assert calls == [(3 + B.FAST_SEED_STEP * t, kh.STRONG) for t in range(B.UNITS_EXACT_SEEDS)]
    assert (n, len(e), tuple(caps)) not in B._PRESET
    calls.clear()
    B._PRESET.clear()
    caps = [136] * 8                         # room: fast, as before
    assert "kahip" in B.plan(n, len(e), caps, gw, units=True)
    B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 3, units=True)
    assert calls and all(mode == kh.FAST for _, mode in calls)


def test_skewed_degrees_get_vcycles_from_the_best_candidate_only(shared):
    """Units of work on a graph of skewed degrees (hep-th, a co-authorship network of 1,332
    components): V-cycles run from the lowest-cut candidate of a split only, so fewer distinct
    candidates come back, the best of them no worse than METIS's; meshes are not skewed."""
    sys.path.insert(0, str(BENCH / "data" / "graphs"))
    sys.path.insert(0, str(BENCH))
    import mapper_standard as S
    from rankmap.mapper import partition as P
    from rankmap.mapper.graph import Graph
    W = S.read_metis(S.graph_path("hep-th"))
    assert P.degree_skewed(Graph(W=W))
    assert not P.degree_skewed(Graph(W=S.read_metis(S.graph_path("3elt"))))
    if not B.mtkahypar_available():
        pytest.skip("Mt-KaHyPar is not installed: no V-cycles to limit")
    n = W.shape[0]
    sub = P._Sub(P._int64_csr(W), np.arange(n), np.full(n, -1, dtype=np.int64))
    caps = [n // 2 + 100] * 2
    every = P.split_candidates(sub, caps, 0, units=True)
    best = P.split_candidates(sub, caps, 0, units=True, skewed=True)
    assert "vcycles" in B.plan(n, W.nnz, caps, n + W.nnz, units=True)
    assert len(best) < len(every)
    metis = min(sub.cut(P.repair(sub, p, caps)) for p in B.metis(sub.indptr, sub.col, sub.w, caps, 0))
    assert best[0][0] <= metis


def test_hubs_are_not_skew_but_heavy_tails_are(shared):
    """A stencil whose rank 0 talks to every rank (a gather: degree CV 3-6 at 10^3 ranks, as in
    the real codes' graphs) is not skewed once its top 1 % of degrees are left out; the
    collaboration network astro-ph (a heavy tail) is."""
    sys.path.insert(0, str(BENCH / "data" / "graphs"))
    sys.path.insert(0, str(BENCH))
    import scipy.sparse as sp
    import mapper_standard as S
    from rankmap.mapper import partition as P
    from rankmap.mapper.graph import Graph
    n = 1000
    i = np.arange(n - 1)
    rows = np.concatenate([i, np.zeros(n - 1, int)])         # a chain, and rank 0 to all
    cols = np.concatenate([i + 1, np.arange(1, n)])
    M = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, n))
    W = (M + M.T).tocsr()
    deg = np.diff(W.indptr)
    assert deg.std() > 3 * deg.mean()                 # the raw coefficient of variation says skewed
    assert not P.degree_skewed(Graph(W=W))
    assert P.degree_skewed(Graph(W=S.read_metis(S.graph_path("astro-ph"))))


def test_skewed_ranks_get_mtkahypar_instead_of_kahip():
    """One rank per vertex on a graph of skewed degrees: Mt-KaHyPar from scratch wherever
    KaHIP would run (KaHIP asked for exactly full parts took 15 s on one split of astro-ph's
    dense core and cut 20 % more); units of work keep KaHIP (with their slack it cuts less)."""
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    split = (9216, 195_030, [4608, 4608])
    gw = 16_706 + 242_502
    assert "kahip" in B.plan(*split, gw)
    how = B.plan(*split, gw, skewed=True)
    assert "kahip" not in how and "mtkahypar" in how
    assert "kahip" in B.plan(*split, gw, units=True, skewed=True)


def pencil(R, C, seed=3):
    """All-to-all in the rows (heavy) and the columns of an R x C process grid (a pencil FFT's
    transposes), ranks renumbered so that block order is no help."""
    import scipy.sparse as sp
    i = np.arange(R * C)
    x, y = i // C, i % C
    same_row = (x[:, None] == x[None, :]) & (y[:, None] != y[None, :])
    same_col = (y[:, None] == y[None, :]) & (x[:, None] != x[None, :])
    W = sp.csr_matrix(same_row * 4e6 + same_col * 1e6)
    p = np.random.default_rng(seed).permutation(R * C)
    return W[p][:, p].tocsr(), x[p]


def test_root_split_of_small_graph_gets_mtkahypar_even_unstructured(monkeypatch):
    """12 rows of 12 ranks, all-to-all in rows and columns, onto 13 nodes of 12 cores: one row
    per node is best (only the columns cross). METIS cuts 44 % more, and the graph looks
    unstructured to METIS's cut test, so METIS was all that ran; Mt-KaHyPar from scratch at
    the root of the machine tree finds the rows. Deterministic; not below the root."""
    if not B.mtkahypar_available():
        pytest.skip("Mt-KaHyPar (PyPI mtkahypar) is not installed")
    from rankmap.mapper import machine as M, partition as P
    W, row = pencil(12, 12)
    m = M.build([f"n{i}" for i in range(13)], ["pack:2 core:6"])
    caps = [c.capacity for c in m.tree().children]
    sub = P._Sub(P._int64_csr(W), np.arange(144), np.full(144, -1, dtype=np.int64))
    cut, part = P.split_candidates(sub, caps, 0, None, verdict={}, tree_split=True)[0]
    assert all(len(set(row[part == k].tolist())) <= 1 for k in range(13))          # a row per node
    assert cut == P.split_candidates(sub, caps, 0, None, verdict={}, tree_split=True)[0][0]
    metis = P.split_candidates(sub, caps, 0, None, verdict={}, tree_split=False)[0][0]
    assert metis > 1.3 * cut
    monkeypatch.setattr(B, "ROOT_MTKAHYPAR_MAX_WORK", 0)
    assert P.split_candidates(sub, caps, 0, None, verdict={}, tree_split=True)[0][0] == metis
    # a split below the root (half the graph) is not given it
    half = P._Sub(P._int64_csr(W), np.arange(72), np.full(144, -1, dtype=np.int64))
    monkeypatch.setattr(B, "ROOT_MTKAHYPAR_MAX_WORK", 3e6)
    calls = []
    monkeypatch.setattr(B.MtKaHyPar, "partition", lambda self: calls.append(1))
    P.split_candidates(half, caps[:6], 0, 144 + W.nnz, verdict={}, tree_split=True)
    assert not calls


def _geometric(n: int, radius: float, seed: int):
    """A random geometric graph in the unit square, random integer weights (each undirected
    edge once: rows, columns, weights)."""
    from scipy.spatial import cKDTree
    rng = np.random.default_rng(seed)
    pairs = np.array(sorted(cKDTree(rng.random((n, 2))).query_pairs(radius)))
    return pairs[:, 0], pairs[:, 1], rng.integers(1, 100, len(pairs)).astype(float)


def test_mtkahypar_context_file_is_the_preset_and_fewer_ip_runs_deterministic():
    # the deterministic quality preset written out parameter by parameter
    # (mapper/mtkahypar_context.py) partitions exactly as the preset itself with its 20 runs,
    # and with fewer runs gives the same partition for the same seed, within the capacities
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    n = 600                                     # not coarsened into 12 blocks
    row, col, w = _geometric(n, 0.07, 5)
    caps = [50] * 12
    assert B.ip_runs(n, len(caps), units=False) == B.SMALL_IP_RUNS
    preset = B.MtKaHyPar(row, col, w, n, caps, 0).partition()      # (seed 0: the preset's own context)
    assert np.array_equal(preset, B.MtKaHyPar(row, col, w, n, caps, 0, ip_runs=20).partition())
    # the file's run count is read: one run partitions this graph otherwise
    assert not np.array_equal(preset, B.MtKaHyPar(row, col, w, n, caps, 0, ip_runs=1).partition())
    # and its seed: set_seed does not reach the deterministic preset, the context's seed does
    seeded = [B.MtKaHyPar(row, col, w, n, caps, s).partition() for s in (1, 1, 2)]
    assert np.array_equal(seeded[0], seeded[1])
    assert not (np.array_equal(seeded[0], preset) and np.array_equal(seeded[2], preset))
    a = B.MtKaHyPar(row, col, w, n, caps, 3, ip_runs=B.SMALL_IP_RUNS)
    b = B.MtKaHyPar(row, col, w, n, caps, 3, ip_runs=B.SMALL_IP_RUNS)
    pa = a.partition()
    assert np.array_equal(pa, b.partition())
    assert (np.bincount(pa, minlength=12) <= 50).all()
    assert np.array_equal(a.improve(pa), b.improve(pa))


def test_mtkahypar_jet_settings_are_read_and_the_preset_s_are_the_preset():
    # the Jet refinement's rounds and iterations of the file: the preset's 3 of 8 partition as the
    # preset; FULL_SPLIT_JET_* (the big graphs' full bisections) partition within the capacities,
    # the same for the same seed, and improve() runs the V-cycles it was given
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    n = 600
    row, col, w = _geometric(n, 0.07, 5)
    caps = [310, 310]
    preset = B.MtKaHyPar(row, col, w, n, caps, 0).partition()
    assert np.array_equal(preset, B.MtKaHyPar(row, col, w, n, caps, 0, jet_rounds=3, jet_iterations=8).partition())
    light = dict(jet_rounds=B.FULL_SPLIT_JET_ROUNDS, jet_iterations=B.FULL_SPLIT_JET_ITERATIONS,
                 vcycles=B.FULL_SPLIT_VCYCLES)
    a, b = B.MtKaHyPar(row, col, w, n, caps, 3, **light), B.MtKaHyPar(row, col, w, n, caps, 3, **light)
    pa = a.partition()
    assert np.array_equal(pa, b.partition()) and (np.bincount(pa, minlength=2) <= 310).all()
    assert a.vcycles == B.FULL_SPLIT_VCYCLES and B.MtKaHyPar(row, col, w, n, caps, 3).vcycles == B.MtKaHyPar.VCYCLES
    assert np.array_equal(a.improve(pa), b.improve(pa))


def test_fewer_ip_runs_only_where_mtkahypar_does_not_coarsen():
    assert B.ip_runs(1000, 42, units=False) == B.SMALL_IP_RUNS
    assert B.ip_runs(1000, 2, units=False) is None          # coarsened: its preset
    assert B.ip_runs(1000, 42, units=True) is None          # units of work: as set on the standard benchmark
    assert B.ip_runs(200, 42, units=False) is None          # small splits: as before


def test_mtkahypar_context_falls_back_to_the_preset(monkeypatch):
    # a Mt-KaHyPar that does not know a parameter of the file: the preset's own context (one
    # run, which partitions this graph otherwise when the file is read, gives the preset's)
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    from rankmap.mapper import mtkahypar_context as MC
    n = 600
    row, col, w = _geometric(n, 0.07, 5)
    preset = B.MtKaHyPar(row, col, w, n, [50] * 12, 0).partition()
    monkeypatch.setattr(MC, "DETERMINISTIC_QUALITY", MC.DETERMINISTIC_QUALITY + "no-such-parameter=1\n")
    assert np.array_equal(preset, B.MtKaHyPar(row, col, w, n, [50] * 12, 0, ip_runs=1).partition())


def test_vcycles_into_many_blocks_go_without_flows():
    """A split straight into hundreds of nodes: its V-cycles run Mt-KaHyPar's deterministic
    preset (no flow refinement, VCYCLE_FLOWS_MAX_BLOCKS), from scratch keeps the quality
    preset; the V-cycles keep the capacities, never raise the cut, and repeat exactly."""
    assert B.mtkahypar_preset(B.VCYCLE_FLOWS_MAX_BLOCKS + 1, from_scratch=False) == "DETERMINISTIC"
    assert B.mtkahypar_preset(B.VCYCLE_FLOWS_MAX_BLOCKS + 1, from_scratch=True) == "DETERMINISTIC_QUALITY"
    assert B.mtkahypar_preset(B.VCYCLE_FLOWS_MAX_BLOCKS, from_scratch=False) == "DETERMINISTIC_QUALITY"
    n, k = 4000, 200
    row, col, w = _geometric(n, 0.03, 7)
    caps = [n // k] * k
    start = np.random.default_rng(1).permutation(np.arange(n) % k)       # a poor split, within the capacities
    mt = B.MtKaHyPar(row, col, w, n, caps, 3, preset=B.mtkahypar_preset(k, from_scratch=False))
    better = mt.improve(start)
    assert (np.bincount(better, minlength=k) <= n // k).all()
    cut = lambda p: w[p[row] != p[col]].sum()                          # noqa: E731
    assert cut(better) < 0.9 * cut(start)
    assert np.array_equal(better, B.MtKaHyPar(row, col, w, n, caps, 3, preset="DETERMINISTIC").improve(start))



def test_exactly_full_splits_of_units_of_work_get_both_kahip_runs(monkeypatch):
    """A split into EXACT_SLACK_MIN_BLOCKS or more parts filled exactly: KaHIP's eco and strong
    presets get EXACT_SLACK of room for ranks (one candidate); units of work get that run and
    one without room (UNITS_EXACT), both candidates of the split; strong on fewer than
    KAHIP_ECO_MIN_VERTICES vertices, the run without room alone, on UNITS_EXACT_SEEDS seeds."""
    kh = pytest.importorskip("kahip")
    n, indptr, e = _grid(32)
    caps = [n // 8] * 8
    asked = []
    real = kh.kaffpa
    monkeypatch.setattr(kh, "kaffpa", lambda *a: asked.append(a[5]) or real(*a))
    key = (n, len(e), tuple(caps))
    for units, rooms in ((False, [B.EXACT_SLACK]), (True, [B.EXACT_SLACK, 0.0])):
        asked.clear()
        B._PRESET[key] = "eco"
        out = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 0, units=units)
        assert asked == [pytest.approx(r) for r in rooms] and len(out) == len(rooms)
        assert all(len(p) == n for p in out)
    # strong below KAHIP_ECO_MIN_VERTICES (units of work only): one run without room, UNITS_EXACT_SEEDS seeds
    asked.clear()
    B._PRESET[key] = "strong"
    out = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 0, units=True)
    assert asked == [pytest.approx(0.0)] * B.UNITS_EXACT_SEEDS and len(out) == 1 and len(out[0]) == n
    asked.clear()
    B._PRESET[key] = "fast"                                   # fast: FAST_SEEDS runs, one candidate
    assert len(B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 0, units=True)) == 1
    monkeypatch.setattr(B, "UNITS_EXACT", False)
    asked.clear()
    B._PRESET[key] = "eco"
    assert len(B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 0, units=True)) == 1
    assert asked == [pytest.approx(B.EXACT_SLACK)]


def test_tight_splits_of_units_of_work_with_vcycles_get_a_kahip_run_with_room(monkeypatch):
    """A split of units of work whose equal capacities leave less than UNITS_TIGHT_MAX of room and
    that gets V-cycles: KaHIP's run as planned and one given UNITS_TIGHT_ROOM, both candidates.
    Not for ranks, not without V-cycles, not where the capacities leave room, and exactly full
    splits into EXACT_SLACK_MIN_BLOCKS+ parts keep their two runs (UNITS_EXACT) only."""
    kh = pytest.importorskip("kahip")
    from rankmap.mapper.partition import _Sub, repair
    n, indptr, e = _grid(32)
    asked = []
    real = kh.kaffpa
    monkeypatch.setattr(kh, "kaffpa", lambda *a: asked.append(a[5]) or real(*a))
    tight = [n // 8 + 1] * 8                                  # 0.8 % of room
    imb = tight[0] / (n // 8) - 1
    assert imb < B.UNITS_TIGHT_MAX
    sub = _Sub((indptr, e[:, 1].copy(), np.ones(len(e))), np.arange(n), np.full(n, -1, dtype=np.int64))
    for caps, units, vcycles, rooms in ((tight, True, True, [imb, B.UNITS_TIGHT_ROOM]), (tight, False, True, [imb]),
                                        (tight, True, False, [imb]), ([n // 8 + 8] * 8, True, True, [8 / (n // 8)]),
                                        ([n // 8] * 8, True, True,    # full, below KAHIP_ECO_MIN_VERTICES: one run, no room
                                         [0.0] * B.UNITS_EXACT_SEEDS)):
        asked.clear()
        B._PRESET[(n, len(e), tuple(caps))] = "strong"
        out = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), caps, 0, units=units, vcycles=vcycles)
        assert asked == [pytest.approx(r) for r in rooms] and len(out) == len(set(rooms))
        assert all(np.bincount(repair(sub, p, caps), minlength=8).max() <= caps[0] for p in out)
    # deterministic: the same seed gives the same candidates
    B._PRESET[(n, len(e), tuple(tight))] = "strong"
    a = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), tight, 0, units=True, vcycles=True)
    B._PRESET[(n, len(e), tuple(tight))] = "strong"
    b = B.kahip_candidates(indptr, e[:, 1], np.ones(len(e)), tight, 0, units=True, vcycles=True)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


def test_equal_candidates_get_their_v_cycles_once(monkeypatch):
    # a split's candidate equal to an earlier one (METIS's recursive and k-way splits often are)
    # is not improved again: the same splits come out, with one V-cycle run fewer
    if not B.mtkahypar_available():
        pytest.skip("no mtkahypar")
    from rankmap.mapper import partition as P
    n, indptr, e = _grid(24)
    sub = P._Sub((indptr, e[:, 1].copy(), np.ones(len(e))), np.arange(n), np.full(n, -1, dtype=np.int64))
    caps = [144] * 4
    metis = B.metis
    calls = []
    improve = B.MtKaHyPar.improve
    monkeypatch.setattr(B.MtKaHyPar, "improve", lambda self, p: calls.append(p.tobytes()) or improve(self, p))
    once = P.split_candidates(sub, caps, 5, n + len(e))
    assert len(calls) == len(set(calls))
    ran = len(calls)
    monkeypatch.setattr(B, "metis", lambda *a, **k: (lambda c: c + [x.copy() for x in c])(metis(*a, **k)))
    calls.clear()
    twice = P.split_candidates(sub, caps, 5, n + len(e))
    assert len(calls) == ran
    assert [c for c, _ in once] == [c for c, _ in twice]
    assert all(np.array_equal(a, b) for (_, a), (_, b) in zip(once, twice))


def _sleep_then(seconds: float, value):
    import time
    time.sleep(seconds)
    return value


def _fail():
    raise ValueError("from the child")


def test_forked_call_returns_stops_and_raises():
    """--time-limit's bound on a library call (KaHIP, Mt-KaHyPar): the result when it ends in
    time, None when the deadline comes first (the child killed, not waited for), the child's
    exception raised here."""
    import time
    t0 = time.monotonic()
    assert B.forked_call(t0 + 60, _sleep_then, 0.0, {"part": [1, 2]}) == {"part": [1, 2]}
    assert B.forked_call(time.monotonic() + 0.3, _sleep_then, 60.0, 1) is None
    assert time.monotonic() - t0 < 30
    with pytest.raises(ValueError, match="from the child"):
        B.forked_call(time.monotonic() + 60, _fail)


def test_kahip_under_a_deadline_same_split_or_none(monkeypatch):
    """kahip_candidates under a deadline: a call that could end past it (at
    KAHIP_SECONDS_PER_UNIT_MAX) runs in a forked child, whose split is the one the call gives
    in place; one the deadline stops gives None (the portfolio's other candidates stand)."""
    pytest.importorskip("kahip")
    import time
    n, indptr, e = _grid(40)
    caps = [n // 4 + 8] * 4
    w = np.ones(len(e))
    B._PRESET[(n, len(e), tuple(caps))] = "eco"
    here = B.kahip_candidates(indptr, e[:, 1], w, caps, 0)
    forks = []
    real = B.forked_call
    monkeypatch.setattr(B, "forked_call", lambda *a, **k: forks.append(1) or real(*a, **k))
    # (eco at its highest rate: ~0.9 s predicted; it takes milliseconds)
    assert (n + len(e)) * B.KAHIP_SECONDS_PER_UNIT_MAX["eco"] > 0.5
    B._PRESET[(n, len(e), tuple(caps))] = "eco"
    forked = B.kahip_candidates(indptr, e[:, 1], w, caps, 0, deadline=time.monotonic() + 0.5)
    assert forks and len(here) == len(forked) == 1 and np.array_equal(here[0], forked[0])
    B._PRESET[(n, len(e), tuple(caps))] = "eco"
    assert B.kahip_candidates(indptr, e[:, 1], w, caps, 0, deadline=time.monotonic() - 1) == [None]
