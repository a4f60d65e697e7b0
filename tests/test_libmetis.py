"""The system's 32-bit METIS (mapper/libmetis.py), which backends.metis uses on graphs above
libmetis.BIG_NNZ edge entries: the real library, checked against pymetis on the same graph."""
from __future__ import annotations

import numpy as np
import pymetis
import scipy.sparse as sp

from conftest import require
from rankmap.mapper import backends, libmetis


def grid(n: int):
    """3-D 7-point grid n^3, weights 1..1000 (CSR int64 indptr/col, float w)."""
    i = np.arange(n ** 3).reshape(n, n, n)
    pairs = [(i[:-1].ravel(), i[1:].ravel()), (i[:, :-1].ravel(), i[:, 1:].ravel()),
             (i[:, :, :-1].ravel(), i[:, :, 1:].ravel())]
    r = np.concatenate([a for a, _ in pairs])
    c = np.concatenate([b for _, b in pairs])
    w = np.random.default_rng(3).integers(1, 1000, len(r)).astype(float)
    W = sp.coo_matrix((w, (r, c)), shape=(n ** 3,) * 2).tocsr()
    W = (W + W.T).tocsr()
    W.sort_indices()
    return W.indptr.astype(np.int64), W.indices.astype(np.int64), W.data


def cut(indptr, col, w, part):
    row = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    return float(w[part[row] != part[col]].sum()) / 2


def test_32bit_metis_balanced_and_as_good_as_pymetis():
    require(libmetis.available(), "libmetis5 (Debian's 32-bit METIS) is not installed")
    ip, col, w = grid(24)
    n = len(ip) - 1
    for tp in ([0.5, 0.5], [0.1, 0.2, 0.3, 0.4]):
        part = libmetis.part_recursive(ip, col, backends._int_weights(w, 2.0 ** 30, np.int32), tp, 30, 0)
        sizes = np.bincount(part, minlength=len(tp))
        assert np.all(sizes <= np.ceil(np.array(tp) * n * 1.03) + 1), sizes
        ref = pymetis.part_graph(len(tp), adjacency=pymetis.CSRAdjacency(ip, col),
                                 eweights=backends._int_weights(w, 2.0 ** 40), tpwgts=tp, recursive=True,
                                 options=pymetis.Options(seed=0, ufactor=30))
        assert cut(ip, col, w, part) <= 1.15 * cut(ip, col, w, np.asarray(ref.vertex_part))
        again = libmetis.part_recursive(ip, col, backends._int_weights(w, 2.0 ** 30, np.int32), tp, 30, 0)
        assert np.array_equal(part, again)            # deterministic per seed


def test_backends_metis_takes_it_above_the_size_limit(monkeypatch):
    require(libmetis.available(), "libmetis5 (Debian's 32-bit METIS) is not installed")
    ip, col, w = grid(16)
    small = backends.metis(ip, col, w, [2048, 2048], 0, kway=False)
    monkeypatch.setattr(libmetis, "BIG_NNZ", 1000)
    big = backends.metis(ip, col, w, [2048, 2048], 0, kway=False)
    assert len(big) == 1 and len(small) == 1
    direct = libmetis.part_recursive(ip, col, backends._int_weights(w, 2.0 ** 30, np.int32), [0.5, 0.5],
                                     1, 0)
    assert np.array_equal(big[0], direct)
    assert np.bincount(big[0]).tolist() == [2048, 2048]


def test_weights_that_do_not_fit_31_bits_are_refused():
    require(libmetis.available(), "libmetis5 (Debian's 32-bit METIS) is not installed")
    ip, col, w = grid(4)
    heavy = np.full(len(col), 2 ** 27, dtype=np.int64)
    assert libmetis.part_recursive(ip, col, heavy, [0.5, 0.5], 30, 0) is None


def test_a_big_graph_without_the_library_says_so(monkeypatch):
    """Without libmetis5 the mapping still runs (pymetis) and the report says what it costs."""
    from rankmap.mapper import machine, solve
    from rankmap.profiler.traffic import Traffic
    ip, col, w = grid(8)
    W = sp.csr_matrix((w, col, ip), shape=(512, 512))
    monkeypatch.setattr(libmetis, "BIG_NNZ", 100)
    monkeypatch.setattr(libmetis, "available", lambda: False)
    res = solve.solve(Traffic(bytes=W, source="grid", format="synthetic"),
                      machine.build([f"n{i}" for i in range(32)], ["pack:2 core:8"]), seed=0)
    assert any("libmetis5" in note for note in res.notes)
    assert sorted(res.slot_of_rank.tolist()) == sorted(set(res.slot_of_rank.tolist()))
