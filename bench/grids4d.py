#!/usr/bin/env python3
"""Process grids of 4 dimensions (lattice QCD): rankmap's cost with 4-D grid detection
against the same mapper limited to 3-D grids (cartesian.detect's max_dims), on periodic
4-D lattices with equal or direction-dependent halos, and on 3-D grids (which must not
change), onto the bench's machine shapes (instances._machine_for).

    .venv/bin/python bench/grids4d.py

Prints per lattice and machine: the cost limited to 3-D, the ratio with 4-D detection,
and the start each chose."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH.parent))

import instances as I  # noqa: E402
from rankmap.mapper import cartesian, solve  # noqa: E402
from rankmap.mapper.refine import Problem  # noqa: E402
from rankmap.mapper.graph import from_traffic  # noqa: E402
from rankmap.profiler.traffic import Traffic  # noqa: E402

CASES = [((6, 6, 6, 6), 0.0), ((6, 6, 6, 6), 0.3), ((4, 4, 8, 8), 0.0), ((4, 6, 6, 8), 0.1),
         ((12, 10, 8), 0.5), ((16, 8, 8), 0.3)]
SHAPES = ("tree3", "tree4s", "torus")


def lattice(dims: tuple, growth: float):
    """Periodic nearest-neighbour traffic, 1 MB x (1 + growth x d) along dimension d."""
    return I._torus_grid(dims, tuple(1e6 * (1 + growth * d) for d in range(len(dims))))


def main() -> int:
    print(f"{'grid':16} {'halos':>6} {'machine':8} {'cost, 3-D':>12} {'4-D / 3-D':>9}  start (3-D, 4-D)")
    for dims, growth in CASES:
        W = lattice(dims, growth)
        for shape in SHAPES:
            m, _ = I._machine_for(shape, W.shape[0])
            t = Traffic(bytes=W, source="lattice", format="synthetic")
            prob = Problem(from_traffic(t), m)
            out = []
            for md in (3, 4):
                cartesian.detect.__defaults__ = (md,)
                r = solve.solve(t, m, seed=0)
                out.append((prob.cost(r.slot_of_rank), r.chosen))
            cartesian.detect.__defaults__ = (cartesian.MAX_DIMS,)
            print(f"{'x'.join(map(str, dims)):16} {'+' + str(int(growth * 100)) + '%/dim' if growth else 'equal':>6} "
                  f"{shape:8} {out[0][0]:12.4g} {out[1][0] / out[0][0]:9.4f}  {out[0][1]}, {out[1][1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
