"""The communication graph: W = M + M^T without the diagonal, symmetric CSR (scipy.sparse),
memory O(nnz)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from rankmap.profiler.formats import symmetric
from rankmap.profiler.traffic import Traffic


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
        ncomp, _ = connected_components(self.W, directed=False)
        return ncomp - isolated, isolated


def from_traffic(t: Traffic) -> Graph:
    W = symmetric(t.bytes)
    W = W.astype(np.float64, copy=False)   # W is symmetric()'s own matrix: no copy needed
    # int64 indices: the C kernels (refine, subgraphs) read them without a copy of their own
    W.indices, W.indptr = W.indices.astype(np.int64), W.indptr.astype(np.int64)
    return Graph(W=W)
