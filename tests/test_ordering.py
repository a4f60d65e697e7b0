"""Starts in a reverse Cuthill-McKee order of the heavy pairs (mapper/ordering.py): a chain or
band whose ranks were renumbered is found again, light far pairs do not hide it, and solve
weighs the starts (refined where they start near the best)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import ordering, solve, spec as mspec
from rankmap.mapper.graph import from_traffic
from rankmap.mapper.refine import Problem
from rankmap.profiler.traffic import Traffic

MACHINE = {"hosts": [f"n{i}" for i in range(8)], "node_topology": ["core:8"], "level_costs": "100,1,1"}


def band(p: int, width: int, seed: int | None = None, light: float = 0.0) -> sp.csr_matrix:
    """Rank i exchanges 1 MB with i + 1 .. i + width (a band); renumbered by `seed`; plus
    `light` bytes between random far pairs (one per rank)."""
    rows, cols, vals = [], [], []
    for d in range(1, width + 1):
        r = np.arange(p - d)
        rows += [r, r + d]
        cols += [r + d, r]
        vals += [np.full(2 * (p - d), 1e6)]
    if light:
        rng = np.random.default_rng(1)
        a = np.arange(p)
        b = (a + p // 2 + rng.integers(-3, 4, p)) % p
        rows += [a, b]
        cols += [b, a]
        vals += [np.full(2 * p, light)]
    W = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(p, p))
    if seed is not None:
        perm = np.random.default_rng(seed).permutation(p)
        W = W[perm][:, perm].tocsr()
    return W


def cost(W, m, slot) -> float:
    return Problem(from_traffic(Traffic(bytes=W, source="t", format="synthetic")), m).cost(slot)


def test_a_renumbered_band_is_found_again():
    m = mspec.build(MACHINE)
    plain = band(64, 3)
    best = cost(plain, m, np.arange(64))          # block order of the band: a node holds 8 consecutive
    W = band(64, 3, seed=5)
    assert cost(W, m, np.arange(64)) > 3 * best   # renumbered, block order cuts everywhere
    starts = ordering.rcm_starts(from_traffic(Traffic(bytes=W, source="t", format="synthetic")).W, m)
    assert starts and min(cost(W, m, s) for s in starts.values()) <= best * (1 + 1e-9)
    for s in starts.values():
        assert sorted(s.tolist()) == list(range(64))
    again = ordering.rcm_starts(from_traffic(Traffic(bytes=W, source="t", format="synthetic")).W, m)
    assert all((again[k] == v).all() for k, v in starts.items())


def test_light_far_pairs_do_not_hide_the_band():
    """With every pair, the light far partners (1 % of the bytes each) make RCM's levels wide;
    on the heavy pairs alone the band is found."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee
    m = mspec.build(MACHINE)
    W = band(64, 3, seed=5, light=1e4)
    best = cost(band(64, 3, light=1e4), m, np.arange(64))
    G = from_traffic(Traffic(bytes=W, source="t", format="synthetic")).W
    everything = np.empty(64, dtype=np.int64)
    everything[reverse_cuthill_mckee(G.tocsr(), symmetric_mode=True)] = np.arange(64)
    starts = ordering.rcm_starts(G, m)
    assert cost(W, m, everything) > 1.2 * best
    assert min(cost(W, m, s) for s in starts.values()) <= best * 1.01


def test_no_traffic_no_start():
    m = mspec.build(MACHINE)
    assert ordering.rcm_starts(sp.csr_matrix((64, 64)), m) == {}


def test_solve_weighs_the_rcm_starts():
    m = mspec.build(MACHINE)
    W = band(64, 3, seed=5)
    r = solve.solve(Traffic(bytes=W, source="t", format="synthetic"), m, "metis", 0)
    assert any(k.startswith("rcm") for k in r.candidates)
    assert r.cost <= cost(band(64, 3), m, np.arange(64)) * (1 + 1e-9)
    quick = solve.solve(Traffic(bytes=W, source="t", format="synthetic"), m, "metis", 0, quick=True)
    assert not any(k.startswith("rcm") for k in quick.candidates)
