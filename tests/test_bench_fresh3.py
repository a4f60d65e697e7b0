"""The anchor benchmark's `fresh3` family (bench/fresh3_instances.py): 36 fixed held-out
instances of 512-4,096 ranks built apart from `fresh` and `fresh2`, listed only in the holdout
set and only when named; a few build as recorded."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.sparse.csgraph import connected_components

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import fresh3_instances as F  # noqa: E402
import fresh2_instances as F2  # noqa: E402
import fresh_instances as F1  # noqa: E402
import instances as I  # noqa: E402
import mapper_anchors as A  # noqa: E402


def test_fresh3_is_holdout_only_and_run_only_when_named(capsys):
    assert A.main(["--list", "--set", "holdout", "--families", "fresh3"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "36 instance(s)" and len(F.NAMES) == len(set(F.NAMES)) == 36
    assert all(line.startswith("holdout  fresh3/") for line in out[:-1])
    assert not I.instances(["fresh3"], which="tune", seeds=None, sizes=tuple(I.SIZES))
    assert not any(i.family == "fresh3" for i in I.instances(which="all", seeds=None))
    assert not set(F.NAMES) & (set(F1.NAMES) | set(F2.NAMES))


@pytest.mark.parametrize("name, n, slots, nnz", [
    ("md-pme-8x8x6-il/gpu8", 512, 512, 29792),
    ("lqcd-5x6x6x10-tfast/torus6x6x4-holes-90%", 1800, 2000, 14400),
    ("ocean-48x36-land30/rpn96-91%", 1130, 1248, 8186),
    ("nd-700/gpu8-91%", 700, 768, 66478),
    ("ens-1200/het1sw-91%", 1200, 1312, 22912),
    ("sfc-morton-30x40/torus4x4x8-holes-83%", 1200, 1440, 9184),
])
def test_fresh3_instances_build_as_recorded(name, n, slots, nnz):
    inst, = [i for i in I.instances(["fresh3"], which="holdout") if i.name == f"fresh3/{name}"]
    W, m = inst.load()
    assert W.shape == (n, n) and W.nnz == nnz and m.nslots == slots
    assert (W != W.T).nnz == 0 and W.diagonal().sum() == 0 and W.min() >= 0
    assert inst.traffic_note and inst.machine_note
    assert (F.build(name)[0] != W).nnz == 0                    # deterministic


def test_fresh3_shapes_are_what_they_say():
    # lattice QCD: periodic in all 4 dimensions, 8 neighbours each
    W = F.lqcd((3, 4, 5, 6))[0]
    assert W.shape == (360, 360) and (np.diff(W.indptr) == 8).all()
    # MD interleaved: every 4th rank is a PME rank, fed by 3 PP ranks (300 kB each)
    W = F.md_pme(4, 3, 3, 3, 4, True)[0]
    assert ((W[3::4] == 3e5).sum(axis=1) == 3).all()
    # ensemble: independent jobs of 16-64 ranks, nothing between them
    W = F.ensemble(600, 9)[0]
    k, lab = connected_components(W, directed=False)
    sizes = np.bincount(lab)
    assert k > 1 and (np.diff(lab) >= 0).all()                   # contiguous rank ranges
    assert ((sizes[:-1] >= 16) & (sizes[:-1] <= 64)).all() and sizes[-1] <= 64   # the last one: what is left
    # workflow: one heavy chain through every rank, a light all-to-all
    W = F.workflow(101, 7)[0]
    assert W.nnz == 101 * 100 and (W > 1e6).sum() == 2 * 100 and W.min() == 0 and W.data.min() == 200
    # the machines with holes have fewer nodes than positions
    kw = F.machine("torus-holes", **F.T448)[0]
    assert len(kw["hosts"]) == 90 and len({tuple(c) for c in kw["coords"].values()}) == 90
