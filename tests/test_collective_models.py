"""Collective models: structural properties, and calibration of the `auto` model against
the traffic Open MPI 4.1 really sends (its monitoring component's internal counts)."""
from __future__ import annotations

import collections
import math

import numpy as np
import pytest

from conftest import app, launcher
from rankmap.profiler.collectives import expand, parse_model, pattern, subtree_sizes, tree_parent
from rankmap.profiler.errors import UserError
from rankmap.profiler.rundir import Collective


def volume(op, p, n, model="auto", k=None):
    (s, d, f, m), alg = pattern(op, p, float(n), model, k)
    assert np.all(s != d) and np.all((s >= 0) & (s < p)) and np.all((d >= 0) & (d < p))
    return float((f * n).sum()), alg


@pytest.mark.parametrize("p", [2, 3, 5, 8, 13, 16])
def test_volumes(p):
    n = 1000
    assert volume("bcast", p, n, "binomial")[0] == (p - 1) * n
    assert volume("reduce", p, n, "kchain")[0] == (p - 1) * n
    assert volume("allreduce", p, n, "ring")[0] == pytest.approx(2 * (p - 1) * n)
    assert volume("allgather", p, n, "ring")[0] == p * (p - 1) * n
    assert volume("alltoall", p, n)[0] == p * (p - 1) * n
    assert volume("gather", p, n, "linear")[0] == (p - 1) * n
    if p & (p - 1) == 0:
        assert volume("allreduce", p, n, "recursive-doubling")[0] == p * math.log2(p) * n
        # Rabenseifner is bandwidth-optimal: 2 (p-1)/p n per rank
        assert volume("allreduce", p, 100000)[0] == pytest.approx(2 * (p - 1) * 100000)


@pytest.mark.parametrize("kind", ["binomial", "binomial-inorder", "knomial", "binary", "chain", "linear", "kchain"])
@pytest.mark.parametrize("p", [1, 2, 7, 16, 100])
def test_trees_are_trees(kind, p):
    par = tree_parent(kind, p, 4)
    assert par[0] == -1
    assert np.all(par[1:] < np.arange(1, p)) and np.all(par[1:] >= 0)
    assert subtree_sizes(par)[0] == p


def test_kchain_shape():
    p, k = 50, 7
    par = tree_parent("kchain", p, k)
    heads = np.flatnonzero(par == 0)
    assert len(heads) == k                                  # k chains into the root
    depth = np.zeros(p, int)
    for v in range(1, p):
        depth[v] = depth[par[v]] + 1
    assert depth.max() == math.ceil((p - 1) / k)            # the longest chain
    # default k = ceil(sqrt(P-1)): O(sqrt P) steps instead of P-1
    (s, d, f, m), alg = pattern("reduce", p, 8.0, "kchain")
    assert alg == "kchain" and (d == 0).sum() == math.ceil(math.sqrt(p - 1))


def test_expand_maps_members_and_roots():
    # a 3-rank communicator {5, 2, 7} in that order, root = world 7 (its local rank 2)
    c = Collective(members=np.array([5, 2, 7]), op="bcast", root=7, bucket=7, calls=2, bytes=200)
    b, m, summary = expand([c], 8, "linear")
    assert {(i, j): int(b[i, j]) for i, j in zip(*b.nonzero())} == {(7, 5): 200, (7, 2): 200}
    assert int(m[7, 5]) == 2
    assert summary == {("bcast", "linear"): 400.0}
    none, _, _ = expand([c], 8, "none")
    assert none.nnz == 0


def test_model_names():
    assert parse_model("kchain:5") == ("kchain", 5)
    for bad in ("kchain:x", "ring:3", "tree", "kchain:0"):
        with pytest.raises(UserError):
            parse_model(bad)


# (op, P, bytes) points where `auto` reproduces Open MPI 4.1.4's pairs exactly
CALIBRATED = [
    ("allreduce", 4, 64), ("allreduce", 5, 64), ("allreduce", 6, 65536), ("allreduce", 8, 65536),
    ("allreduce", 12, 1048576), ("bcast", 4, 64), ("bcast", 8, 64), ("bcast", 16, 64), ("bcast", 8, 16384),
    ("bcast", 5, 1048576), ("bcast", 12, 65536), ("reduce", 4, 64), ("reduce", 8, 64), ("reduce", 12, 1024),
    ("reduce", 8, 65536), ("reduce", 16, 1048576), ("allgather", 5, 1024), ("allgather", 8, 65536),
    ("gather", 8, 1024), ("gather", 16, 65536), ("scatter", 4, 64), ("scatter", 8, 65536), ("alltoall", 8, 1024),
    ("reduce_scatter_block", 4, 64), ("reduce_scatter_block", 8, 16384), ("reduce_scatter_block", 16, 1048576),
]


def internal_traffic(prefix, p):
    out = collections.Counter()
    for r in range(p):
        for line in (prefix.parent / f"{prefix.name}.{r}.prof").read_text().splitlines():
            f = line.split("\t")
            if f[0] == "I":
                out[(int(f[1]), int(f[2]))] += int(f[3].split()[0])
    return out


def run_monitored(apps, tmp_path, tag, p, args):
    import subprocess
    pre = tmp_path / tag
    cmd = launcher("openmpi", p) + ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
                                    "--mca", "pml_monitoring_filename", str(pre), str(app(apps, "onecoll", "openmpi")),
                                    *args]
    subprocess.run(cmd, check=True, capture_output=True, timeout=120)
    return internal_traffic(pre, p)


@pytest.mark.parametrize("op,p,n", CALIBRATED)
def test_auto_matches_open_mpi(apps, tmp_path, op, p, n):
    reps, root = 2, 1
    base = run_monitored(apps, tmp_path, "base", p, ["none", "8"])
    got = run_monitored(apps, tmp_path, "coll", p, [op, str(n), str(root), str(reps)])
    real = {k: (v - base.get(k, 0)) / reps for k, v in got.items() if v - base.get(k, 0) > 0}
    (s, d, f, _), alg = pattern(op, p, float(n))
    rot = root if op in ("bcast", "reduce", "gather", "scatter") else 0
    model = collections.Counter()
    for a, b, x in zip(s, d, f):
        model[((a + rot) % p, (b + rot) % p)] += x * n
    total = sum(real.values())
    assert total > 0
    l1 = sum(abs(real.get(key, 0) - model.get(key, 0)) for key in set(real) | set(model)) / total
    assert l1 < 0.01, f"{op} P={p} n={n}: model {alg} differs from Open MPI by {l1:.2f} (L1/total)"
