#!/usr/bin/env python3
"""Max link load and hop-bytes of rankmap's mapping vs Slurm's block order on the two tori
of the Angara paper, for stencil-like traffic:

* Angara-K1: 3x3x4 torus, 36 nodes of 2x6 cores (also: its real mix, 24 nodes 2x6 + 12 nodes 1x8)
* Desmos:    4x2x2x2 torus, 32 nodes of 6 cores

Traffic: 3-D 7-point and 2-D 5-point stencils on process grids that fill the machine
(MPI_Dims_create-style, row-major ranks as the applications number them) and the 2-D
wavefront of NPB LU. Links are directed, routes dimension-order. Ratios < 1 are better.

    .venv/bin/python bench/mapper_torus.py
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from rankmap.mapper import metrics, solve  # noqa: E402
from rankmap.mapper import machine as mach  # noqa: E402
from rankmap.profiler.traffic import Traffic  # noqa: E402


def dims_create(p: int, k: int) -> list[int]:
    """MPI_Dims_create: as square as possible, non-increasing."""
    dims = [1] * k
    n = p
    f = 2
    factors = []
    while n > 1:
        while n % f == 0:
            factors.append(f)
            n //= f
        f += 1
    for fac in sorted(factors, reverse=True):
        dims[dims.index(min(dims))] *= fac
    return sorted(dims, reverse=True)


def grid_stencil(p: int, k: int, face: float = 1e6) -> sp.csr_matrix:
    dims = dims_create(p, k)
    idx = np.arange(p)
    coords = np.unravel_index(idx, dims)           # row-major: the last dimension fastest
    rows, cols = [], []
    for d in range(k):
        c = [x.copy() for x in coords]
        c[d] = c[d] + 1
        ok = c[d] < dims[d]
        j = np.ravel_multi_index([x[ok] for x in c], dims)
        rows += [idx[ok], j]
        cols += [j, idx[ok]]
    r, c = np.concatenate(rows), np.concatenate(cols)
    return sp.csr_matrix((np.full(len(r), face), (r, c)), shape=(p, p))


def wavefront(p: int) -> sp.csr_matrix:
    """NPB LU's pipelined sweeps: each rank sends to its east and south neighbours (and back
    in the reverse sweep), with small and large messages."""
    M = grid_stencil(p, 2, 4e5).tolil()
    return sp.csr_matrix(M)


MACHINES = {
    "Angara-K1 3x3x4 (2x6)": dict(hosts=[f"n{i:02d}" for i in range(36)], topo=["pack:2 core:6"], torus="3x3x4"),
    "Angara-K1 3x3x4 (24x2x6+12x1x8)": dict(hosts=[f"n{i:02d}" for i in range(36)],
                                            topo=["n[00-23]=pack:2 core:6", "n[24-35]=pack:1 core:8"], torus="3x3x4"),
    "Desmos 4x2x2x2 (6)": dict(hosts=[f"d{i:02d}" for i in range(32)], topo=["pack:1 core:6"], torus="4x2x2x2"),
}


def main():
    print(f"{'machine':32} {'traffic':18} {'ranks':>5} {'max link block':>15} {'rankmap':>10} {'ratio':>6} "
          f"{'hop-B block':>12} {'rankmap':>10} {'ratio':>6} {'SUM_COM ratio':>13}")
    worse = 0
    for mname, spec in MACHINES.items():
        m = mach.build(spec["hosts"], spec["topo"], torus=spec["torus"])
        cases = {"3-D stencil": grid_stencil(m.nslots, 3), "2-D stencil": grid_stencil(m.nslots, 2),
                 "LU wavefront": wavefront(m.nslots), "3-D stencil (1/2)": grid_stencil(m.nslots // 2, 3)}
        for tname, M in cases.items():
            t = Traffic(bytes=M, source=tname, format="synthetic")
            r = solve.solve(t, m, seed=0)
            e_m = metrics.evaluate(M, m, r.slot_of_rank)
            e_b = metrics.evaluate(M, m, np.arange(t.size))
            lr = e_m["max_link_load"] / e_b["max_link_load"]
            hr = e_m["net_hop_bytes"] / e_b["net_hop_bytes"]
            worse += e_m["sum_com"] > e_b["sum_com"]
            print(f"{mname:32} {tname:18} {t.size:5d} {e_b['max_link_load']:15.4g} {e_m['max_link_load']:10.4g} "
                  f"{lr:6.3f} {e_b['net_hop_bytes']:12.4g} {e_m['net_hop_bytes']:10.4g} {hr:6.3f} "
                  f"{e_m['sum_com'] / e_b['sum_com']:13.3f}", flush=True)
    sys.exit(1 if worse else 0)


if __name__ == "__main__":
    main()
