"""Starts from an order of the ranks: a reverse Cuthill-McKee numbering of the pairs that
carry the most bytes, placed as block places ranks. A code whose exchanges form a band or a
chain in some order of its ranks (a banded sparse matrix-vector product whose rows were
renumbered; all-to-alls in groups of consecutive ranks) maps best in that order, and the
partitioners' bisections do not find it once the ranks are renumbered: on the fresh
held-out SpMV of a banded matrix in permuted rank order, RCM of the heavy pairs started 8 %
below the partitioners' refined mapping (issue 9). The light pairs are left out: with every
pair, a few light far partners decide the numbering and the band is lost."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import baselines
from rankmap.mapper.machine import Machine

# the pairs kept: at least this share of the heaviest pair's bytes (one numbering each)
RCM_HEAVY = (0.05, 0.2)


def rcm_starts(W: sp.csr_matrix, machine: Machine) -> dict:
    """name -> mapping: for each share in RCM_HEAVY, rank perm[i] on block's slot i, perm the
    reverse Cuthill-McKee order (scipy) of W (symmetric bytes) without the pairs under that
    share of its largest entry. Numberings that repeat are given once. Deterministic."""
    from scipy.sparse.csgraph import reverse_cuthill_mckee
    n = W.shape[0]
    if W.nnz == 0:
        return {}
    block = baselines.block(n, machine)
    top = float(W.data.max())
    out, seen = {}, set()
    for share in RCM_HEAVY:
        heavy = W.copy()
        heavy.data[heavy.data < share * top] = 0
        heavy.eliminate_zeros()
        perm = reverse_cuthill_mckee(heavy.tocsr(), symmetric_mode=True)
        if perm.tobytes() in seen:
            continue
        seen.add(perm.tobytes())
        slot = np.empty(n, dtype=np.int64)
        slot[perm] = block
        out[f"rcm{share:g}"] = slot
    return out
