"""The anchor benchmark's `fresh` family (bench/fresh_instances.py): 48 fixed held-out
instances, listed only in the holdout set and only when named; a few build as recorded."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
sys.path.insert(0, str(BENCH))

import fresh_instances as F  # noqa: E402
import instances as I  # noqa: E402
import mapper_anchors as A  # noqa: E402


def test_fresh_is_holdout_only_and_run_only_when_named(capsys):
    assert A.main(["--list", "--set", "holdout", "--families", "fresh"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "48 instance(s)" and len(F.NAMES) == len(set(F.NAMES)) == 48
    assert all(line.startswith("holdout  fresh/") for line in out[:-1])
    assert not I.instances(["fresh"], which="tune", seeds=None, sizes=tuple(I.SIZES))
    assert not any(i.family == "fresh" for i in I.instances(which="all", seeds=None))


@pytest.mark.parametrize("name, n, slots, nnz", [
    ("lu-24x24/racks5-7-6x32", 576, 576, 4176),
    ("st5x3-50x18/q4x8-83%", 900, 1088, 3464),
    ("fft-16x64-col/torus6x6-89%", 1024, 1152, 79872),
    ("multi-960-interleaved/dual24", 960, 960, 6380),
])
def test_fresh_instances_build_as_recorded(name, n, slots, nnz):
    inst, = [i for i in I.instances(["fresh"], which="holdout") if i.name == f"fresh/{name}"]
    W, m = inst.load()
    assert W.shape == (n, n) and W.nnz == nnz and m.nslots == slots
    assert (W != W.T).nnz == 0 and W.diagonal().sum() == 0 and W.min() >= 0
    assert inst.traffic_note and inst.machine_note
    assert (F.build(name)[0] != W).nnz == 0                    # deterministic
