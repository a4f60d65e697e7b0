"""The traffic matrix every later stage reads: a directed sparse P x P matrix of bytes
(rows = senders), with where it came from and, for a profile, where each rank ran."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from profiler.errors import UserError


@dataclass
class Traffic:
    bytes: sp.csr_matrix                 # float64, directed; the diagonal is kept as read
    source: str
    format: str
    msgs: sp.csr_matrix | None = None
    placement: list | None = None        # per rank (host, cpu list) of the profiled run
    notes: list = field(default_factory=list)

    @property
    def size(self) -> int:
        return self.bytes.shape[0]

    def offdiag(self) -> sp.csr_matrix:
        m = self.bytes.tocsr(copy=True)
        m.setdiag(0)
        m.eliminate_zeros()
        return m


def check_matrix(m: sp.spmatrix, where: str) -> sp.csr_matrix:
    """Square, finite, non-negative, at least one rank: or one clear error."""
    m = sp.csr_matrix(m, dtype=np.float64)
    if m.ndim != 2 or m.shape[0] != m.shape[1]:
        raise UserError(f"{where}: the traffic matrix must be square, got {m.shape[0]} x {m.shape[1]}")
    if m.shape[0] == 0:
        raise UserError(f"{where}: empty traffic matrix (no ranks)")
    if not np.all(np.isfinite(m.data)):
        raise UserError(f"{where}: the traffic matrix holds NaN or infinite values")
    if np.any(m.data < 0):
        i = int(np.flatnonzero(m.data < 0)[0])
        r = int(np.searchsorted(m.indptr, i, side="right") - 1)
        raise UserError(f"{where}: negative traffic {m.data[i]:g} from rank {r} to rank {int(m.indices[i])}")
    m.sum_duplicates()
    m.eliminate_zeros()
    return m


def load_traffic(path: str | Path, fmt: str = "auto", collectives: str = "auto",
                 allow_partial: bool = False) -> Traffic:
    """Read traffic from a profiler run directory or any supported foreign format
    (profiler/formats.py). Collectives of a profile are expanded with `collectives`."""
    from profiler import formats
    return formats.read(Path(path), fmt, collectives, allow_partial)
