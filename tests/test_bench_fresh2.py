"""The anchor benchmark's `fresh2` family (bench/fresh2_instances.py): 42 fixed held-out
instances built apart from `fresh`, listed only in the holdout set and only when named; a few
build as recorded."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import fresh2_instances as F  # noqa: E402
import fresh_instances as F1  # noqa: E402
import instances as I  # noqa: E402
import mapper_anchors as A  # noqa: E402


def test_fresh2_is_holdout_only_and_run_only_when_named(capsys):
    assert A.main(["--list", "--set", "holdout", "--families", "fresh2"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "42 instance(s)" and len(F.NAMES) == len(set(F.NAMES)) == 42
    assert all(line.startswith("holdout  fresh2/") for line in out[:-1])
    assert not I.instances(["fresh2"], which="tune", seeds=None, sizes=tuple(I.SIZES))
    assert not any(i.family == "fresh2" for i in I.instances(which="all", seeds=None))
    assert not set(F.NAMES) & set(F1.NAMES)


@pytest.mark.parametrize("name, n, slots, nnz", [
    ("cs-12/n8x16-96%", 864, 896, 6888),
    ("mg-12x10x10/torus3x5x4", 1200, 1200, 8716),
    ("coupler-1500/dragonfly5x4x3-89%", 1500, 1680, 12144),
    ("redtree-32x32-g64/rpn-99%", 1024, 1032, 4928),
    ("st27u-16x10x12/fat3-91%", 1920, 2120, 41872),
])
def test_fresh2_instances_build_as_recorded(name, n, slots, nnz):
    inst, = [i for i in I.instances(["fresh2"], which="holdout") if i.name == f"fresh2/{name}"]
    W, m = inst.load()
    assert W.shape == (n, n) and W.nnz == nnz and m.nslots == slots
    assert (W != W.T).nnz == 0 and W.diagonal().sum() == 0 and W.min() >= 0
    assert inst.traffic_note and inst.machine_note
    assert (F.build(name)[0] != W).nnz == 0                    # deterministic


def test_fresh2_shapes_are_what_they_say():
    # the cubed sphere joins its faces: every rank has exactly 4 edge neighbours (500 kB)
    W = F.cubed_sphere(5)[0]
    assert W.shape == (150, 150) and ((W == 5e5).sum(axis=1) == 4).all()
    # 10 % idle: those ranks exchange nothing, the others keep their halo
    W = F.build("idle-st27u-10x10x10/n8x16-98%")[0]
    assert (np.diff(W.indptr) == 0).sum() == 100
    # exact ties: a single weight
    assert set(F.build("ties-reg6-1024/numa4")[0].data) == {1.0}
