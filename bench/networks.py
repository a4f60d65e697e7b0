#!/usr/bin/env python3
"""Mapping quality on the networks of today's large machines, vs Slurm's block order.

Machines (all built through `--network`, as a user gives them):
* fat trees: 4 leaves of 8 nodes at 2:1; SimGrid's `2;8,4;1,2;1,1` (4:1, the `fat-tree`
  platform); a 3-level 2x4x8 tree at 2:1 on both levels;
* dragonflies: the `dragonfly` platform (4 groups x 4 routers x 2 nodes) with minimal and
  with Valiant routing; 9 groups x 9 routers x 2 nodes (minimal);
* a Slurm topology.conf machine (bench/data/networks/topology.conf: 4 leaf switches of 8
  nodes under 2 middle switches), read as `--network slurm:FILE` reads it;
* Tofu-like 6-D torus 2x2x2 x 2x3x2 (for reference).

Traffic: 3-D 7-point and 2-D 5-point stencils and NPB LU's wavefront on process grids that
fill the machine (row-major ranks, as applications number them), and on the Slurm machine
also "cliques": groups of 16 ranks (one leaf switch's worth) exchanging 1000x more among
themselves than with others, numbered round-robin so that block order scatters them.

Columns: max global-link load (the links into the top of a tree, a dragonfly's links
between groups) and network hop-bytes, rankmap / block (target <= 0.70 on stencil-like
traffic, never above 1.00), SUM_COM ratio, seconds; on the Slurm machine the share of the
heavy cliques' bytes that stays under one leaf switch. "brick": the same two ratios for
the best hand-made decomposition of the process grid (nested bricks: a brick of the grid
per group of the network at every level down to the node, every shape that tiles, the
lowest hop-bytes kept), the reference a stencil's mapping is judged by; "no brick meets
it" in the verdict: no nested-brick mapping meets the target on both ratios.

    .venv/bin/python bench/networks.py [--quick] [--json out.json]
"""
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from mapper_torus import dims_create, grid_stencil, wavefront  # noqa: E402

from rankmap.mapper import machine as mach, metrics, solve  # noqa: E402
from rankmap.profiler.traffic import Traffic  # noqa: E402
from rankmap.slurm import topology  # noqa: E402

TOPOLOGY_CONF = ROOT / "bench" / "data" / "networks" / "topology.conf"
TARGET = 0.70


def hosts(n, prefix="n"):
    return [f"{prefix}{i}" for i in range(n)]


def machines(quick: bool) -> dict:
    out = {
        "fat tree 4x8, 2:1": dict(hosts=hosts(32), topo=["pack:2 core:6"], network="fat-tree:4x8:oversub=2"),
        "fat tree SimGrid 2;8,4;1,2;1,1 (4:1)": dict(hosts=hosts(32), topo=["pack:2 core:6"],
                                                     network="fat-tree:2;8,4;1,2;1,1"),
        "fat tree 2x4x8, 2:1 2:1": dict(hosts=hosts(64), topo=["pack:2 core:4"], network="fat-tree:2x4x8:oversub=2x2"),
        "dragonfly 4x4x2 minimal": dict(hosts=hosts(32), topo=["pack:2 core:6"], network="dragonfly:4x4x2"),
        "dragonfly 4x4x2 valiant": dict(hosts=hosts(32), topo=["pack:2 core:6"],
                                        network="dragonfly:4x4x2:routing=valiant"),
        "dragonfly 9x9x2 minimal": dict(hosts=hosts(162), topo=["pack:2 core:4"], network="dragonfly:9x9x2"),
        "Slurm topology.conf (4 leaves x 8)": dict(hosts=hosts(32), topo=["pack:2 core:4"], network="slurm-file"),
        "Tofu 2x2x2 x 2x3x2": dict(hosts=hosts(96), topo=["pack:1 core:4"], network="tofu:2x2x2"),
    }
    if quick:
        for k in ("fat tree 2x4x8, 2:1 2:1", "dragonfly 9x9x2 minimal", "Tofu 2x2x2 x 2x3x2"):
            out.pop(k)
    return out


def _shapes(dims: tuple, vol: int, outer: tuple) -> list:
    """Brick shapes of `vol` grid points that tile `outer` (itself a brick of the grid)."""
    divs = [[d for d in range(1, o + 1) if o % d == 0] for o in outer]
    return [s for s in itertools.product(*divs) if int(np.prod(s)) == vol]


def best_brick(dims: list, m, M: sp.csr_matrix, e_block: dict, key: str):
    """(hop-bytes ratio, global-load ratio, bricks top to bottom, slot_of_rank, whether any
    brick mapping meets the target on both) of the nested-brick mapping with the lowest hop-bytes: the grid cut into bricks per network group at every level
    (groups are runs of consecutive nodes, nodes runs of slots), bricks in row-major order.
    None where the groups are not all of one size or no shape tiles."""
    p = int(np.prod(dims))
    groups = m.network.groups
    sizes = []
    for lv in range(groups.shape[1]):
        counts = np.bincount(groups[m.slot_node, lv])
        if counts.min() != counts.max():
            return None
        if counts[0] < p:
            sizes.append(int(counts[0]))
    coords = np.array(np.unravel_index(np.arange(p), dims)).T
    best, meets = None, False

    def walk(level, outer, chain):
        nonlocal best, meets
        if level == len(sizes):
            slot = np.zeros(p, dtype=np.int64)
            local = coords
            for brick, out in zip(chain, [tuple(dims)] + chain[:-1]):
                grid = [o // b for o, b in zip(out, brick)]
                slot = slot * int(np.prod(grid)) + np.ravel_multi_index((local // brick).T, grid)
                local = local % brick
            slot = slot * sizes[-1] + np.ravel_multi_index(local.T, chain[-1])
            e = metrics.evaluate(M, m, slot)
            hb = e["net_hop_bytes"] / e_block["net_hop_bytes"] if e_block["net_hop_bytes"] else 1.0
            gl = e[key] / e_block[key] if e_block[key] else 1.0
            meets |= hb <= TARGET and gl <= TARGET
            if best is None or (hb, gl) < best[:2]:
                best = (hb, gl, list(chain), slot)
            return
        for s in _shapes(dims, sizes[level], outer):
            walk(level + 1, s, chain + [s])

    walk(0, tuple(dims), [])
    return None if best is None else best + (meets,)


def cliques(p: int, size: int, heavy: float = 1e6, light: float = 1e3) -> sp.csr_matrix:
    """p // size groups; rank r is in group r mod (p // size); heavy inside a group, light
    to the next rank."""
    ngroups = p // size
    g = np.arange(p) % ngroups
    rows, cols, vals = [], [], []
    for k in range(ngroups):
        mem = np.flatnonzero(g == k)
        a, b = np.meshgrid(mem, mem)
        keep = a != b
        rows.append(a[keep]), cols.append(b[keep]), vals.append(np.full(int(keep.sum()), heavy))
    r = np.arange(p)
    rows.append(r), cols.append((r + 1) % p), vals.append(np.full(p, light))
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(p, p))


def under_one_leaf(M: sp.spmatrix, m, slot: np.ndarray, heavy: float) -> float:
    """Share of the heavy pairs' bytes whose two ranks sit under one leaf switch."""
    c = sp.coo_matrix(M)
    big = c.data >= heavy
    leaf = m.network.groups[:, -2]
    na, nb = m.slot_node[slot[c.row[big]]], m.slot_node[slot[c.col[big]]]
    same = leaf[na] == leaf[nb]
    return float(c.data[big][same].sum() / c.data[big].sum())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="the smaller machines only")
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    rows, misses = [], []
    print(f"{'machine':38} {'traffic':14} {'ranks':>5} | {'glob block':>10} {'rankmap':>9} {'ratio':>6} | "
          f"{'hop-B block':>11} {'rankmap':>9} {'ratio':>6} | {'brick':>11} | {'SUM_COM':>7} {'s':>5} | verdict",
          flush=True)
    for mname, spec in machines(args.quick).items():
        net = spec["network"]
        if net == "slurm-file":
            net = topology.for_hosts(topology.describe(str(TOPOLOGY_CONF)), spec["hosts"])
        m = mach.build(spec["hosts"], spec["topo"], network=net)
        p = m.nslots
        cases = {"3-D stencil": grid_stencil(p, 3), "2-D stencil": grid_stencil(p, 2), "LU wavefront": wavefront(p)}
        grids = {"3-D stencil": dims_create(p, 3), "2-D stencil": dims_create(p, 2), "LU wavefront": dims_create(p, 2)}
        if spec["network"] == "slurm-file":
            per_leaf = int(np.bincount(m.network.groups[m.slot_node, -2]).min())
            cases["cliques"] = cliques(p, per_leaf)
        for tname, M in cases.items():
            t = Traffic(bytes=M, source=tname, format="synthetic")
            t0 = time.monotonic()
            r = solve.solve(t, m, seed=0)
            secs = time.monotonic() - t0
            e_m = metrics.evaluate(M, m, r.slot_of_rank)
            e_b = metrics.evaluate(M, m, np.arange(t.size))
            key = "max_global_link_load" if "max_global_link_load" in e_m else "max_link_load"
            gl = e_m[key] / e_b[key] if e_b[key] else 1.0
            hb = e_m["net_hop_bytes"] / e_b["net_hop_bytes"] if e_b["net_hop_bytes"] else 1.0
            sc = e_m["sum_com"] / e_b["sum_com"] if e_b["sum_com"] else 1.0
            row = {"machine": mname, "network": m.network.describe(), "traffic": tname, "ranks": t.size,
                   "global_block": e_b[key], "global_rankmap": e_m[key], "global_ratio": gl,
                   "hop_bytes_block": e_b["net_hop_bytes"], "hop_bytes_rankmap": e_m["net_hop_bytes"],
                   "hop_bytes_ratio": hb, "sum_com_ratio": sc, "seconds": secs, "chosen": r.chosen,
                   "global_metric": key}
            verdict = []
            brick = None
            if tname in grids and m.network.kind != "torus":
                brick = best_brick(grids[tname], m, M, e_b, key)
            if brick is not None:
                row.update(brick_hop_bytes_ratio=brick[0], brick_global_ratio=brick[1], bricks=brick[2],
                           brick_any_meets_target=brick[4])
            if gl > 1 + 1e-9 or hb > 1 + 1e-9:
                verdict.append("WORSE than block")
            if tname != "cliques" and not m.network.kind == "torus" and (gl > TARGET or hb > TARGET):
                at = brick is not None and hb <= brick[0] + 1e-9 and gl <= brick[1] + 1e-9
                brick_misses = brick is not None and not brick[4]
                verdict.append("miss (> 0.70" + (", = the best brick" if at else "")
                               + (", no brick meets it" if brick_misses else "") + ")")
            if tname == "cliques":
                row["heavy_under_one_leaf_block"] = under_one_leaf(M, m, np.arange(t.size), 1e6)
                row["heavy_under_one_leaf_rankmap"] = under_one_leaf(M, m, r.slot_of_rank, 1e6)
                verdict.append(f"heavy bytes under one leaf: block {row['heavy_under_one_leaf_block']:.0%}, "
                               f"rankmap {row['heavy_under_one_leaf_rankmap']:.0%}")
                if row["heavy_under_one_leaf_rankmap"] < 1.0:
                    verdict.append("miss")
            row["verdict"] = "; ".join(verdict) or "ok"
            if "miss" in row["verdict"] or "WORSE" in row["verdict"]:
                misses.append(row)
            rows.append(row)
            print(f"{mname[:38]:38} {tname:14} {t.size:5d} | {e_b[key]:10.4g} {e_m[key]:9.4g} {gl:6.3f} | "
                  f"{e_b['net_hop_bytes']:11.4g} {e_m['net_hop_bytes']:9.4g} {hb:6.3f} | "
                  f"{(f'{brick[1]:.3f} {brick[0]:.3f}' if brick else '-'):>11} | {sc:7.3f} {secs:5.1f} | "
                  f"{row['verdict']}", flush=True)
    print(f"\n{len(rows)} cases, {len(misses)} miss(es) (target: global-link load and hop-bytes <= {TARGET} x block "
          "on the fat trees and dragonflies, never above block; Tofu for reference)")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")


if __name__ == "__main__":
    main()
