"""Fuzzing round 6's defects: the mapper's guarantees checked on random small instances
(never worse than the default orders, what --time-limit bounds). Each test failed before its
fix."""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import linkload, machine, solve
from rankmap.profiler.traffic import Traffic


def _ring(n: int) -> sp.csr_matrix:
    i = np.arange(n)
    return sp.csr_matrix((np.full(n, 1e6), (i, (i + 1) % n)), shape=(n, n))


def test_a_profiled_placement_the_mapping_may_not_use_is_named_not_dropped_silently():
    """8 ranks profiled on n1 alone, mapped onto n1 and n2 of 4 cores: the profiled placement
    does not fit (8 ranks on 4 slots), so it is no candidate; the report still lists its cost
    (8.9x cheaper in the fuzzer's --fill spread case), so a note says why."""
    m = machine.build(["n1", "n2"], ["pack:1 core:4"])
    t = Traffic(bytes=_ring(8), source="x", format="synthetic", placement=[("n1", "0")] * 8)
    res = solve.solve(t, m, seed=0)
    assert "input" not in res.defaults
    assert any("profiled run's own placement" in x and "not a candidate" in x for x in res.notes)
    # on other hosts (a profile taken elsewhere) nothing is said
    t2 = Traffic(bytes=_ring(8), source="x", format="synthetic", placement=[("laptop", "0")] * 8)
    assert not any("profiled run's own placement" in x for x in solve.solve(t2, m, seed=0).notes)


def test_link_balancing_stops_at_the_deadline():
    """--time-limit 0.01 spent ~13 s in the torus link balancing (solve step 4): past the
    deadline no round starts (the mapping it was given stands)."""
    rng = np.random.default_rng(5)
    n = 600
    rows = np.repeat(np.arange(n), 8)
    cols = rng.integers(0, n, size=n * 8)
    keep = rows != cols
    M = sp.csr_matrix((rng.integers(1, 10 ** 6, size=keep.sum()).astype(float), (rows[keep], cols[keep])), shape=(n, n))
    m = machine.build([f"n{i}" for i in range(128)], ["pack:1 core:5"], torus="4x4x8")
    slot = rng.permutation(m.nslots)[:n]
    t0 = time.monotonic()
    s, info = linkload.balance(M, m, slot, deadline=time.monotonic() - 1)
    assert info == {} and np.array_equal(s, slot)
    assert time.monotonic() - t0 < 5


def test_scotch_takes_any_valid_level_costs(tmp_path):
    """--algorithm scotch failed ('archLoad: cannot load architecture data') on a zero cost
    (also the NUMA level's 0 rankmap inserts for three costs), a cost below 1 and 1e12
    (written '1e+12'): Scotch gets integers in the same proportions."""
    from conftest import run_cli
    t = tmp_path / "r4.csv"
    t.write_text("src,dst,bytes\n0,1,10\n1,2,10\n2,3,10\n3,0,10\n")
    for topo, costs in (("pack:1 numa:2 core:2", "500,50,5"), ("pack:2 core:2", "1000,100,0"),
                        ("pack:2 core:2", "1000,100,0.5"), ("pack:2 core:2", "1e12,100,10")):
        res = run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", topo, "--level-costs", costs,
                      "--algorithm", "scotch", "--out", tmp_path / f"m{costs}")
        assert res.returncode == 0, (topo, costs, res.stderr)


def test_too_few_slots_with_oversubscribe_given_asks_to_raise_it(tmp_path):
    """The hint said 'use --oversubscribe N' to a user who had given --oversubscribe 2."""
    from conftest import one_error_line, run_cli
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 40},10\n" for i in range(40)))
    one_error_line(run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", "pack:1 core:4", "--oversubscribe", "2",
                           "--out", tmp_path / "m"), "or raise --oversubscribe 2")


def test_ranks_per_node_refusal_counts_the_slots_it_leaves(tmp_path):
    """With --ranks-per-node 3 on 6 nodes of 8 cores the refusal said '(48 cores in all)', the
    cores without the option; 18 of them are slots."""
    from conftest import one_error_line, run_cli
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 20},10\n" for i in range(20)))
    one_error_line(run_cli("map", t, "--nodes", "n[1-6]", "--node-topology", "pack:1 core:8", "--ranks-per-node", "3",
                           "--out", tmp_path / "m"), "(18 of the 48 cores)")


def test_a_tiny_group_of_random_traffic_is_no_process_grid():
    """22 ranks of random traffic in 3 groups (seed 13 of the round, its matrix) were 'a 2 x 5 x 3
    process grid': on so small a grid 81 % of the pairs are neighbours and 95.7 % of the bytes
    between them proves nothing. Small true grids keep their shape (test_cartesian.py)."""
    from rankmap.mapper import cartesian
    text = ("0,13,79 0,20,3592138604303 1,12,556388746 1,16,33645330241 2,13,368637913522267 2,21,119014654250 "
            "3,1,2736386 3,5,647175199645 3,6,1593542 4,7,4 4,9,341294 5,6,418161 5,12,19628466201144 "
            "5,15,3853299100 6,5,114 6,16,3672 7,14,1 7,17,3848 8,11,1970854901962 9,4,3239 11,14,1248525117869 "
            "11,19,2855700 13,10,67651482 14,8,33426926081 15,3,8386181781362 16,1,32304931399677 16,12,540 "
            "17,9,5316943 17,11,7796243 17,14,21827875109555 18,0,909669481 18,10,18226983248 18,13,1320267 "
            "18,21,28079331 20,13,439053 20,18,4746564486 21,2,1283")
    r, c, w = np.array([[float(x) for x in e.split(",")] for e in text.split()]).T
    M = sp.csr_matrix((w, (r.astype(int), c.astype(int))), shape=(22, 22))
    W = (M + M.T).tocsr()
    keep, cartesian.OFF_GRID_VS_EVEN = cartesian.OFF_GRID_VS_EVEN, 1e9
    try:
        assert cartesian.detect(W) == (2, 5, 3)          # what the near share alone says
    finally:
        cartesian.OFF_GRID_VS_EVEN = keep
    assert cartesian.detect(W) is None
