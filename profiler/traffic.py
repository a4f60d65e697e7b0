"""The traffic matrix every later stage reads (readers: rankmap.profiler.formats): a directed sparse P x P matrix of bytes
(rows = senders), with where it came from and, for a profile, where each rank ran."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from rankmap.profiler.errors import UserError


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

    def hosts(self) -> list[str] | None:
        """The hosts the profiled run used, in order of first use (None without a placement)."""
        if not self.placement:
            return None
        seen: dict[str, None] = {}
        for h, _ in self.placement:
            if h:
                seen.setdefault(h, None)
        return list(seen) or None

    def offdiag(self) -> sp.csr_matrix:
        return without_diagonal(self.bytes.tocsr(copy=True))


def without_diagonal(m: sp.csr_matrix) -> sp.csr_matrix:
    """m (modified in place) without its diagonal entries. (scipy's setdiag(0) would first
    insert the missing diagonal entries: a copy of the whole matrix at 10^6 ranks.)"""
    rows = np.repeat(np.arange(m.shape[0], dtype=m.indices.dtype), np.diff(m.indptr))
    m.data[rows == m.indices] = 0
    m.eliminate_zeros()
    return m


def check_matrix(m: sp.spmatrix, where: str) -> sp.csr_matrix:
    """Square, finite, non-negative, at most 2^64 bytes per pair, at least one rank: or one
    clear error (naming the rank pair)."""
    from rankmap.profiler import validate
    shape = getattr(m, "shape", ())
    if len(shape) != 2 or shape[0] != shape[1]:
        raise UserError(f"{where}: the traffic matrix must be square, got {' x '.join(map(str, shape)) or 'one value'}")
    validate.rank_count(int(shape[0]), where)
    if np.dtype(m.dtype).kind not in "biuf":
        raise UserError(f"{where}: the traffic matrix holds {m.dtype} values, not numbers of bytes")
    if sp.issparse(m) and m.dtype != np.float64:
        # in float64 before the entries given twice (COO, unsorted CSR) are summed: scipy summed
        # them in their own type, 2 x (2^31 - 1) in int32 read as "negative traffic -2", and
        # 200 + 100 in uint8 as 44 bytes, without a word
        m = m.astype(np.float64)
    m = sp.csr_matrix(m, dtype=np.float64)
    if m.shape[0] == 0:
        raise UserError(f"{where}: empty traffic matrix (no ranks)")
    m.sum_duplicates()

    def pair(mask) -> str:
        i = int(np.flatnonzero(mask)[0])
        r = int(np.searchsorted(m.indptr, i, side="right") - 1)
        return f"{m.data[i]:g} from rank {r} to rank {int(m.indices[i])}"
    if not np.all(np.isfinite(m.data)):
        raise UserError(f"{where}: the traffic matrix holds NaN or infinite values ({pair(~np.isfinite(m.data))})")
    if np.any(m.data < 0):
        raise UserError(f"{where}: negative traffic {pair(m.data < 0)}")
    if np.any(m.data > validate.MAX_PAIR_BYTES):
        raise UserError(f"{where}: traffic {pair(m.data > validate.MAX_PAIR_BYTES)} is more than 2^64 bytes "
                        "(no real run sends that much)")
    m.eliminate_zeros()
    return m
