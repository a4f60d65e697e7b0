#!/usr/bin/env python3
"""Mapping time and peak memory at 10^3 .. 10^6 ranks (targets, issues 9 and 13: 10^3 < 1 s,
10^4 < 3 s, 10^5 < 5 s and < 500 MB, 10^6 < 60 s and < 2 GB, on one core; memory O(nnz)).

Traffic: a 3-D 7-point stencil (ranks on a near-cubic grid, face-sized weights) and a
random sparse graph (8 random partners per rank, random weights). Machine: nodes of
2 packages x 16 cores on a near-cubic 3-D torus just big enough. Each case runs in a fresh
process so that its peak memory (ru_maxrss) is its own; the time is the whole `solve`
(partitioning + refinement, default effort), the baseline is block order. The time checked is
the mapping's CPU time (it runs on one core), so that other jobs on a shared machine do not
inflate it; the wall time is printed beside it.

    .venv/bin/python bench/mapper_scaling.py [--sizes 1000,10000,100000,1000000] [--graphs stencil,random] [--metis-floor]

--command: the whole `rankmap map` command instead, as a user runs it (the graph saved as
.npz, then read, mapped, scored for the report against block, cyclic and random, and the
mapping's files written), its wall time, CPU and peak memory from the child's rusage:

    .venv/bin/python bench/mapper_scaling.py --command --sizes 100000,1000000

--network fat-tree|dragonfly (with --command): the same nodes behind a 3-level fat tree
(leaf switches of 32 nodes, 32 leaves a pod, 2:1 oversubscribed above the leaves) or a
dragonfly (groups of 32 routers of 16 nodes, minimal routing) instead of the torus.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = {1000: 1.0, 10000: 3.0, 100000: 5.0, 1000000: 60.0}
TARGET_MB = {100000: 500, 1000000: 2000}
CORES_PER_NODE = 32


def cube_dims(n: int, k: int = 3) -> tuple:
    """Near-cubic k-D box with product >= n."""
    dims = [1] * k
    while True:
        prod = 1
        for d in dims:
            prod *= d
        if prod >= n:
            return tuple(sorted(dims, reverse=True))
        dims[dims.index(min(dims))] += 1


def stencil(p: int):
    import numpy as np
    import scipy.sparse as sp
    X, Y, Z = cube_dims(p)
    idx = np.arange(p)
    x, y, z = idx % X, (idx // X) % Y, idx // (X * Y)
    rows, cols, vals = [], [], []
    for dx, dy, dz, w in ((1, 0, 0, 8e4), (0, 1, 0, 8e4), (0, 0, 1, 8e4)):
        nx, ny, nz = x + dx, y + dy, z + dz
        j = nx + X * (ny + Y * nz)
        ok = (nx < X) & (ny < Y) & (nz < Z) & (j < p)
        rows += [idx[ok], j[ok]]
        cols += [j[ok], idx[ok]]
        vals += [np.full(ok.sum(), w)] * 2
    return sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(p, p))


def random_graph(p: int, deg: int = 8, seed: int = 1):
    import numpy as np
    import scipy.sparse as sp
    rng = np.random.default_rng(seed)
    r = np.repeat(np.arange(p), deg)
    c = rng.integers(0, p, size=p * deg)
    w = rng.integers(1, 1 << 20, size=p * deg).astype(float)
    ok = r != c
    return sp.csr_matrix((w[ok], (r[ok], c[ok])), shape=(p, p))


def scaling_machine(p: int):
    """The benchmark's machine for p ranks: nodes of 2 x 16 cores on a near-cubic 3-D torus
    just big enough. Returns (machine, torus dims)."""
    sys.path.insert(0, str(ROOT))
    from rankmap.mapper import machine
    nodes = -(-p // CORES_PER_NODE)
    dims = cube_dims(nodes)
    return machine.build([f"n{i}" for i in range(nodes)], ["pack:2 core:16"], torus="x".join(map(str, dims))), dims


def one(kind: str, p: int) -> dict:
    """Runs in the child process."""
    import resource
    import time
    sys.path.insert(0, str(ROOT))
    from rankmap.mapper import solve
    from rankmap.profiler.traffic import Traffic
    M = stencil(p) if kind == "stencil" else random_graph(p)
    m, dims = scaling_machine(p)
    nodes = m.nnodes
    t = Traffic(bytes=M, source=kind, format="synthetic")
    t0, c0 = time.monotonic(), time.process_time()
    res = solve.solve(t, m, seed=0)
    secs, cpu = time.monotonic() - t0, time.process_time() - c0
    return {"kind": kind, "ranks": p, "nnz": int(M.nnz), "nodes": nodes, "torus": "x".join(map(str, dims)),
            "seconds": secs, "cpu": cpu, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "cost_vs_block": res.cost / res.defaults["block"], "chosen": res.chosen}


def network_option(network: str, nodes: int) -> list:
    """The command's network options for `nodes` nodes: the torus of scaling_machine, or a
    fat tree or dragonfly just big enough (see the module's docstring)."""
    if network == "torus":
        return ["--torus", "x".join(map(str, cube_dims(nodes)))]
    if network == "fat-tree":
        return ["--network", f"fat-tree:{-(-nodes // 1024)}x32x32:oversub=2"]
    if network == "dragonfly":
        return ["--network", f"dragonfly:{-(-nodes // 512)}x32x16"]
    raise SystemExit(f"--network {network}: torus, fat-tree or dragonfly")


def whole_command(kind: str, p: int, network: str = "torus") -> dict:
    """`rankmap map` on the graph (saved as .npz in a scratch directory) and the scaling
    machine, in a child process: its wall time, CPU (user + system) and peak memory."""
    import resource
    import tempfile
    import time
    import scipy.sparse as sp
    sys.path.insert(0, str(ROOT))
    M = stencil(p) if kind == "stencil" else random_graph(p)
    m, dims = scaling_machine(p)
    with tempfile.TemporaryDirectory() as tmp:
        f = Path(tmp) / f"{kind}-{p}.npz"
        sp.save_npz(f, sp.csr_matrix(M))
        net = network_option(network, m.nnodes)
        cmd = [sys.executable, "-m", "rankmap.cli", "map", str(f), "--nodes", f"n[0-{m.nnodes - 1}]",
               "--node-topology", "pack:2 core:16", *net, "--out", str(Path(tmp) / "out"), "--json"]
        del M
        t0 = time.monotonic()
        res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
        wall = time.monotonic() - t0
        if res.returncode:
            raise RuntimeError(res.stderr.strip().splitlines()[-1] if res.stderr.strip() else str(res.returncode))
        rep = json.loads(res.stdout)
    # this process is the benchmark's child: its children are the command (and the fresh
    # interpreters the command may start), nothing else
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"kind": kind, "ranks": p, "torus": net[1].split(":", 1)[-1], "wall": wall,
            "cpu": ru.ru_utime + ru.ru_stime, "peak_mb": ru.ru_maxrss / 1024, "solve": rep["search_seconds"],
            "cost_vs_block": rep["cost"] / rep["defaults"]["block"]}


def metis_alone(kind: str, p: int) -> dict:
    """Runs in the child process: the peak memory of one METIS bisection of the whole graph
    (the mapper's top split, the same call as mapper/backends.py), above the graph itself."""
    import resource
    sys.path.insert(0, str(ROOT))
    from rankmap.mapper import backends
    from rankmap.mapper.graph import from_traffic
    from rankmap.profiler.traffic import Traffic
    M = stencil(p) if kind == "stencil" else random_graph(p)
    W = from_traffic(Traffic(bytes=M, source=kind, format="synthetic")).W
    del M
    with open("/proc/self/statm") as f:                  # resident now (the graph's building peaked higher)
        before = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    backends.metis(W.indptr, W.indices, W.data, [-(-p // 2), p // 2], 0)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"metis_mb": after - before, "nnz": int(W.nnz)}


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        print(json.dumps(one(sys.argv[2], int(sys.argv[3]))))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-command":
        print(json.dumps(whole_command(sys.argv[2], int(sys.argv[3]), sys.argv[4])))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--child-metis":
        print(json.dumps(metis_alone(sys.argv[2], int(sys.argv[3]))))
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000,1000000")
    ap.add_argument("--graphs", default="stencil,random")
    ap.add_argument("--metis-floor", action="store_true",
                    help="also measure, in a separate process, the memory one METIS bisection of the whole graph "
                         "takes above the graph (the part of the peak the mapper does not control)")
    ap.add_argument("--command", action="store_true",
                    help="time the whole `rankmap map` command (read, map, report, files) instead of `solve`")
    ap.add_argument("--network", default="torus", choices=("torus", "fat-tree", "dragonfly"),
                    help="with --command: the network between the nodes")
    args = ap.parse_args()
    if args.command:
        return command_table(args)
    print(f"{'graph':8} {'ranks':>8} {'nnz':>9} {'torus':>9} {'CPU s':>8} {'wall s':>8} {'target':>7} {'peak MB':>8} "
          f"{'target':>7} {'B/nnz':>6} {'cost/block':>10}")
    ok = True
    for kind in args.graphs.split(","):
        for p in (int(x) for x in args.sizes.split(",")):
            out = subprocess.run([sys.executable, __file__, "--child", kind, str(p)], capture_output=True, text=True,
                                 env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if out.returncode != 0:
                print(f"{kind:8} {p:8d} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
                ok = False
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            tgt, mb = TARGET_S.get(p), TARGET_MB.get(p)
            good = (tgt is None or r["cpu"] < tgt) and (mb is None or r["peak_mb"] < mb)
            ok &= good
            floor = ""
            if args.metis_floor:
                fo = subprocess.run([sys.executable, __file__, "--child-metis", kind, str(p)], capture_output=True,
                                    text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
                floor = (f"  (METIS's bisection alone: +{json.loads(fo.stdout.strip().splitlines()[-1])['metis_mb']:.0f} MB)"
                         if fo.returncode == 0 else "  (METIS alone: failed)")
            print(f"{kind:8} {p:8d} {r['nnz']:9d} {r['torus']:>9} {r['cpu']:8.2f} {r['seconds']:8.2f} "
                  f"{(f'<{tgt:g}' if tgt else '-'):>7} {r['peak_mb']:8.0f} {(f'<{mb:g}' if mb else '-'):>7} "
                  f"{r['peak_mb'] * 2**20 / r['nnz']:6.0f} {r['cost_vs_block']:10.3f} {'ok' if good else 'MISSED'}{floor}",
                  flush=True)
    sys.exit(0 if ok else 1)


def command_table(args) -> None:
    print(f"{'graph':8} {'ranks':>8} {'network':>20} {'wall s':>8} {'CPU s':>8} {'solve s':>8} {'peak MB':>8} {'cost/block':>10}")
    for kind in args.graphs.split(","):
        for p in (int(x) for x in args.sizes.split(",")):
            out = subprocess.run([sys.executable, __file__, "--child-command", kind, str(p), args.network],
                                 capture_output=True,
                                 text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if out.returncode != 0:
                print(f"{kind:8} {p:8d} failed: {out.stderr.strip().splitlines()[-1] if out.stderr else out.returncode}")
                continue
            r = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"{kind:8} {p:8d} {r['torus']:>20} {r['wall']:8.2f} {r['cpu']:8.2f} {r['solve']:8.2f} "
                  f"{r['peak_mb']:8.0f} {r['cost_vs_block']:10.3f}", flush=True)


if __name__ == "__main__":
    main()
