"""PNG figures: traffic heatmaps and torus link loads (matplotlib, no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

MAX_DENSE = 2048


def _binned(m: sp.spmatrix, bins: int) -> np.ndarray:
    """Sum a large sparse matrix into bins x bins cells (never densifies the full matrix)."""
    coo = m.tocoo()
    n = m.shape[0]
    edges = np.linspace(0, n, bins + 1)
    r = np.searchsorted(edges, coo.row, side="right") - 1
    c = np.searchsorted(edges, coo.col, side="right") - 1
    out = np.zeros((bins, bins))
    np.add.at(out, (r, c), coo.data)
    return out


def heatmap(matrix: sp.spmatrix, path: str | Path, title: str, order: np.ndarray | None = None,
            boundaries: list[int] | None = None) -> Path:
    """Log-scaled traffic heatmap (rows = senders). `order` permutes ranks (e.g. by their
    mapped core); `boundaries` draws lines between nodes in that order."""
    m = sp.csr_matrix(matrix)
    if order is not None:
        m = m[order][:, order]
    n = m.shape[0]
    dense = m.toarray() if n <= MAX_DENSE else _binned(m, MAX_DENSE)
    fig, ax = plt.subplots(figsize=(6.5, 5.5), dpi=120)
    data = np.ma.masked_less_equal(dense.astype(float), 0)
    im = ax.imshow(np.ma.log10(data), cmap="viridis", interpolation="nearest",
                   extent=(-0.5, n - 0.5, n - 0.5, -0.5))
    fig.colorbar(im, ax=ax, label="log10 bytes")
    for b in boundaries or []:
        ax.axhline(b - 0.5, color="white", lw=0.6)
        ax.axvline(b - 0.5, color="white", lw=0.6)
    ax.set_xlabel("destination rank" + (" (mapped order)" if order is not None else ""))
    ax.set_ylabel("source rank" + (" (mapped order)" if order is not None else ""))
    ax.set_title(title)
    fig.tight_layout()
    path = Path(path)
    fig.savefig(path)
    plt.close(fig)
    return path
