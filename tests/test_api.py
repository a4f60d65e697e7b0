"""The Python API (rankmap/__init__.py): its docstring examples run, and a mapping written
through it is what the command line reads back."""
from __future__ import annotations

import doctest

import numpy as np

import rankmap
from rankmap.mapper import writers


def test_docstring_examples_run():
    res = doctest.testmod(rankmap, optionflags=doctest.ELLIPSIS)
    assert res.attempted >= 5 and res.failed == 0


def test_map_write_and_read_back(tmp_path):
    rng = np.random.default_rng(3)
    M = rng.random((24, 24)) * (rng.random((24, 24)) < 0.2) * 1e6
    np.fill_diagonal(M, 0)
    t = rankmap.traffic(M)
    m = rankmap.machine("n[1-3]", "pack:2 core:4", level_costs="1000,100,10")
    r = rankmap.map(t, m, seed=1)
    assert sorted(r.slot_of_rank.tolist()) == list(range(24))
    assert rankmap.map(t, m, seed=1).slot_of_rank.tolist() == r.slot_of_rank.tolist()     # a seed, one mapping
    out = rankmap.write(tmp_path / "map", t, m, r)
    back = writers.read_mapping(out, m, 24)
    assert back.tolist() == r.slot_of_rank.tolist()
    assert (out / "hostfile").read_text().split() == rankmap.hosts(m, r.slot_of_rank)
    assert rankmap.evaluate(t, m, r.slot_of_rank)["sum_com"] == r.cost
