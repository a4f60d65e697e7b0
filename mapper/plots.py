"""PNG figures: traffic heatmaps and torus link loads (matplotlib, no display needed)."""
from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

MAX_DENSE = 2048
PNG_METADATA = {"Software": "rankmap"}   # how rankmap recognizes its own figures (profiler/outputs.py)


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
    fig.savefig(path, metadata=PNG_METADATA)
    plt.close(fig)
    return path


# A torus panel of more cells than this shows only the rows and columns where some link
# carries bytes: 8 nodes on a 2,048 x 2,048 torus drew 4 M mostly empty cells per panel
# (3.8 s and 480 MB for two figures of a tiny mapping)
CROP_ABOVE_CELLS = 65536


def load_panels(net, loads: np.ndarray) -> tuple[list, tuple]:
    """Per dimension, the load leaving each position (+ and - links) as a (rows = the other
    dimensions) x (first dimension) image, and the box (x0, x1, y0, y1) they show: the whole
    torus, or above CROP_ABOVE_CELLS the rows and columns where some link carries bytes."""
    ndim = len(net.dims)
    rows = int(np.prod(net.dims[1:])) if ndim > 1 else 1
    S = loads.reshape(net.positions, ndim, 2).sum(axis=2)
    imgs = [S[:, d].reshape(rows, net.dims[0]) for d in range(ndim)]
    box = (0, net.dims[0], 0, rows)
    if rows * net.dims[0] > CROP_ABOVE_CELLS:
        busy = np.logical_or.reduce([img > 0 for img in imgs])
        if busy.any():
            ys, xs = np.flatnonzero(busy.any(axis=1)), np.flatnonzero(busy.any(axis=0))
            box = (int(xs[0]), int(xs[-1]) + 1, int(ys[0]), int(ys[-1]) + 1)
            imgs = [img[box[2]:box[3], box[0]:box[1]] for img in imgs]
    return imgs, box


def torus_loads(machine, loads: np.ndarray, path: str | Path, title: str) -> Path:
    """Per-link load on a torus: one panel per dimension; each panel is the nodes laid out
    as (first dimension x the others) with the sum of the + and - links leaving them. On a
    large torus the panels show the rows and columns that carry bytes (CROP_ABOVE_CELLS)."""
    net = machine.network
    L = loads.reshape(net.positions, len(net.dims), 2)
    ndim = len(net.dims)
    rows = int(np.prod(net.dims[1:])) if ndim > 1 else 1
    imgs, (x0, x1, y0, y1) = load_panels(net, loads)
    cropped = (x0, x1, y0, y1) != (0, net.dims[0], 0, rows)
    fig, axes = plt.subplots(1, ndim, figsize=(4 * ndim, 3.6), dpi=110, squeeze=False, constrained_layout=True)
    vmax = max(max(float(img.max()) for img in imgs), 1.0)       # (a crop keeps every loaded cell)
    for d in range(ndim):
        ax = axes[0, d]
        # (extent: the axes count the torus's own coordinates, cropped or not)
        im = ax.imshow(imgs[d], cmap="magma", vmin=0, vmax=vmax, aspect="auto", interpolation="nearest",
                       extent=(x0 - 0.5, x1 - 0.5, y1 - 0.5, y0 - 0.5))
        ax.set_title(f"dimension {d} links")
        if x1 - x0 <= 64:
            # one labelled tick per x: a 2048x2048 torus (within the 2^22 positions allowed) took
            # 75 s to draw 2 x 2048 tick labels; matplotlib's own ticks above that
            ax.set_xticks(range(x0, x1))
        if y1 - y0 <= 64:
            ax.set_yticks(range(y0, y1))
        ax.set_xlabel("x")
        ax.set_ylabel("y + Y*z ..." if ndim > 1 else "")
    fig.colorbar(im, ax=axes.ravel().tolist(), label="bytes (+ and - links)")
    where = f"\nx {x0}-{x1 - 1}, rows {y0}-{y1 - 1} of {net.dims[0]} x {rows} shown: no load elsewhere" if cropped else ""
    fig.suptitle(f"{title}: max {L.max():.3g} B on one directed link{where}")
    path = Path(path)
    fig.savefig(path, metadata=PNG_METADATA)
    plt.close(fig)
    return path


def torus_placement(machine, slot: np.ndarray, path: str | Path, title: str) -> Path:
    """Where the ranks sit on a torus: one panel per plane of the last dimensions, each node a
    cell coloured by its number of ranks and labelled with its lowest rank."""
    net = machine.network
    dims = list(net.dims) + [1] * (3 - len(net.dims)) if len(net.dims) < 3 else list(net.dims)
    X, Y = dims[0], dims[1]
    planes = int(np.prod(dims[2:]))
    count = np.zeros(net.positions, dtype=np.int64)
    first = np.full(net.positions, -1, dtype=np.int64)
    pos_of_node = net.pos(net.coords)
    nodes = machine.slot_node[slot]
    np.add.at(count, pos_of_node[nodes], 1)
    for r in range(len(slot) - 1, -1, -1):
        first[pos_of_node[nodes[r]]] = r
    cap = np.zeros(net.positions, dtype=np.int64)
    np.add.at(cap, pos_of_node[machine.slot_node], 1)
    fig, axes = plt.subplots(1, planes, figsize=(2.2 * planes + 1.2, 2.8), dpi=110, squeeze=False,
                             constrained_layout=True)
    vmax = max(int(cap.max()), 1)
    for z in range(planes):
        ax = axes[0, z]
        c = count[z * X * Y:(z + 1) * X * Y].reshape(Y, X)
        im = ax.imshow(c, cmap="Blues", vmin=0, vmax=vmax, interpolation="nearest")
        for y in range(Y):
            for x in range(X):
                p = z * X * Y + y * X + x
                if count[p]:
                    ax.text(x, y, f"{count[p]}\n@{first[p]}", ha="center", va="center", fontsize=6,
                            color="white" if count[p] > vmax / 2 else "black")
        ax.set_title(f"z={z}" if len(net.dims) >= 3 else "", fontsize=8)
        ax.set_xticks(range(X))
        ax.set_yticks(range(Y))
        ax.tick_params(labelsize=6)
    fig.colorbar(im, ax=axes.ravel().tolist(), label="ranks on the node")
    fig.suptitle(f"{title} (cell: ranks @ lowest rank)", fontsize=9)
    path = Path(path)
    fig.savefig(path, metadata=PNG_METADATA)
    plt.close(fig)
    return path
