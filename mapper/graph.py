"""The communication graph: W = M + M^T without the diagonal, symmetric CSR (scipy.sparse),
memory O(nnz)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from rankmap.profiler.formats import symmetric
from rankmap.profiler.traffic import Traffic


# A graph denser than this many partners per rank on average (miniAMR's all-to-all: 511 of
# 512) is partitioned without its lightest edges, those carrying LIGHT_TAIL of the bytes in
# all; the local search and every cost still read the whole graph
DENSE_MEAN_DEGREE = 64
LIGHT_TAIL = 1e-3


@dataclass
class Graph:
    W: sp.csr_matrix   # float64, symmetric, no self loops, sorted indices

    @property
    def n(self) -> int:
        return self.W.shape[0]

    def empty(self) -> bool:
        """No traffic between distinct ranks (a program that sends nothing, or only to itself)."""
        return self.W.nnz == 0

    def total(self) -> float:
        return float(self.W.sum()) / 2

    def components(self) -> tuple[int, int]:
        """(connected components among communicating ranks, ranks that exchange nothing)"""
        deg = np.diff(self.W.indptr)
        isolated = int((deg == 0).sum())
        # W is symmetric: its strong components are its components, found without the
        # transpose that directed=False builds (0.4-1 s at 10^6 ranks)
        ncomp, _ = connected_components(self.W, directed=True, connection="strong")
        return ncomp - isolated, isolated

    def for_partitioning(self) -> "Graph":
        """The graph the partitioners see: itself, or without a dense graph's light tail
        (DENSE_MEAN_DEGREE, LIGHT_TAIL) when that tail is most of its edges. Symmetric: both
        directions of a pair weigh the same and are dropped together."""
        W = self.W
        if W.nnz <= DENSE_MEAN_DEGREE * self.n:
            return self
        w = np.sort(W.data)
        light = int(np.searchsorted(np.cumsum(w), LIGHT_TAIL * float(w.sum()), side="right"))
        if light < W.nnz // 2:
            return self
        keep = W.data >= w[light]
        rows = np.repeat(np.arange(self.n), np.diff(W.indptr))[keep]
        indptr = np.zeros(self.n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=self.n), out=indptr[1:])
        return Graph(W=sp.csr_matrix((W.data[keep], W.indices[keep].astype(np.int64), indptr), shape=W.shape))


def from_traffic(t: Traffic) -> Graph:
    W = symmetric(t.bytes)
    W = W.astype(np.float64, copy=False)   # W is symmetric()'s own matrix: no copy needed
    # int64 indices: the C kernels (refine, subgraphs) read them without a copy of their own
    W.indices, W.indptr = W.indices.astype(np.int64), W.indptr.astype(np.int64)
    return Graph(W=W)
