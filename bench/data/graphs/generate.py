#!/usr/bin/env python3
"""Deterministic generators of graphs of the standard benchmark's family (tune graphs of
bench/mapper_standard.py; see PROVENANCE.md): the same constructions as the DIMACS / KaHIP
instances, with other random points.

- gen_delaunay_n<X>_s<S>: Delaunay triangulation of 2^X points uniform in the unit square
  (as DIMACS delaunay_n<X>): scipy.spatial.Delaunay (Qhull) of numpy.random.default_rng(S).random((2^X, 2)).
- gen_rgg_n_2_<X>_s<S>: random geometric graph (as rgg_n_2_<X>_s0): 2^X points uniform in the unit
  square, an edge between two points closer than 0.55 * sqrt(ln n / n) (the radius of the
  KaHIP / DIMACS rgg instances), scipy.spatial.cKDTree.query_pairs.
- gen_mesh_n<X>_s<S>: a 2-D finite-element-like mesh (as 3elt / 4elt: an airfoil-like hole, the
  mesh graded towards it): 2^X points of density ~ 1 / (distance to the hole + 0.02), outside an
  ellipse of half-axes 0.25 x 0.04 at the centre of the unit square, Delaunay-triangulated, the
  triangles whose centroid lies in the ellipse dropped; the largest connected component.

Unit vertex and edge weights. `python bench/data/graphs/generate.py NAME [OUT.graph]` writes a
METIS file."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

PATTERN = re.compile(r"gen_(delaunay|rgg|mesh)_n(?:_2_)?(\d+)_s(\d+)$")


def is_generated(name: str) -> bool:
    return PATTERN.match(name) is not None


def _sym(i: np.ndarray, j: np.ndarray, n: int) -> sp.csr_matrix:
    W = sp.coo_matrix((np.ones(len(i)), (i, j)), shape=(n, n)).tocsr()
    W = W + W.T
    W.data[:] = 1.0
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


def _tri_edges(simplices: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = simplices
    return (np.concatenate([s[:, 0], s[:, 1], s[:, 2]]), np.concatenate([s[:, 1], s[:, 2], s[:, 0]]))


def delaunay(x: int, seed: int) -> sp.csr_matrix:
    from scipy.spatial import Delaunay
    n = 2 ** x
    pts = np.random.default_rng(seed).random((n, 2))
    i, j = _tri_edges(Delaunay(pts).simplices)
    return _sym(i, j, n)


def rgg(x: int, seed: int) -> sp.csr_matrix:
    from scipy.spatial import cKDTree
    n = 2 ** x
    pts = np.random.default_rng(seed).random((n, 2))
    pairs = cKDTree(pts).query_pairs(0.55 * np.sqrt(np.log(n) / n), output_type="ndarray")
    return _sym(pairs[:, 0], pairs[:, 1], n)


def mesh(x: int, seed: int) -> sp.csr_matrix:
    from scipy.sparse.csgraph import connected_components
    from scipy.spatial import Delaunay
    n = 2 ** x
    rng = np.random.default_rng(seed)
    a, b = 0.25, 0.04

    def ell(p):     # > 1 outside the ellipse; an approximate distance to it
        q = ((p[:, 0] - 0.5) / a) ** 2 + ((p[:, 1] - 0.5) / b) ** 2
        return q, np.maximum(0.0, np.sqrt(q) - 1) * b
    out = []
    have = 0
    while have < n:                          # rejection sampling of the graded density
        p = rng.random((4 * n, 2))
        q, d = ell(p)
        keep = (q > 1) & (rng.random(len(p)) < 0.02 / (d + 0.02))
        out.append(p[keep])
        have += int(keep.sum())
    pts = np.concatenate(out)[:n]
    tri = Delaunay(pts).simplices
    c = pts[tri].mean(axis=1)
    tri = tri[ell(c)[0] > 1]
    i, j = _tri_edges(tri)
    W = _sym(i, j, n)
    _, lab = connected_components(W, directed=False)
    big = np.flatnonzero(lab == np.bincount(lab).argmax())
    return W[big][:, big].tocsr()


def generate(name: str) -> sp.csr_matrix:
    m = PATTERN.match(name)
    if not m:
        raise ValueError(f"not a generated graph name: {name}")
    kind, x, seed = m.group(1), int(m.group(2)), int(m.group(3))
    return {"delaunay": delaunay, "rgg": rgg, "mesh": mesh}[kind](x, seed)


def write_metis(W: sp.csr_matrix, path: Path) -> None:
    with open(path, "w") as f:
        f.write(f"{W.shape[0]} {W.nnz // 2}\n")
        for v in range(W.shape[0]):
            f.write(" ".join(str(u + 1) for u in W.indices[W.indptr[v]:W.indptr[v + 1]]) + "\n")


if __name__ == "__main__":
    W = generate(sys.argv[1])
    print(f"{sys.argv[1]}: {W.shape[0]} vertices, {W.nnz // 2} edges")
    if len(sys.argv) > 2:
        write_metis(W, Path(sys.argv[2]))
