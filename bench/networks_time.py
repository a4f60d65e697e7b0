#!/usr/bin/env python3
"""Mapping time and quality at 10^4 ranks on fat trees and dragonflies (issues 9 and 13:
10^4 ranks in < 3 s on one core; max global-link load never above block's).

Each machine is filled with the traffic families of bench/instances.py (seed 1000, held-out
traffic) and random-8 traffic (bench/mapper_scaling.py); nodes of 2 x 16 cores. Printed per
case: the mapping's CPU time (`solve`, default effort), its cost, max global-link load,
busiest link and network hop-bytes, each over block order's.

    .venv/bin/python bench/networks_time.py [--machines fat-tree:16x20@320,...] [--families amr,mesh,...]

--ab: each case twice, side by side in one run, with KaHIP's splits into 8+ blocks filled
exactly (backends.EXACT_SLACK_MIN_BLOCKS off: before that rule) and as now; the costs' ratio
and both times are printed.

--ab-global: each case twice, without the global-link step (solve._global_links: never above
block's busiest global link) and as now; printed: the max global-link load over block's
without it, and the costs' ratio now / without. Larger machines by node count, e.g. 10^5 and
10^6 ranks of random traffic on dragonflies of 62 groups:

    .venv/bin/python bench/networks_time.py --ab-global --families random \
        --machines dragonfly:62x8x7@3125,dragonfly:62x32x16@31250

--instances amr/100k/hetero3/s1000,...: named instances of bench/instances.py (their own
machines, switch trees among them) instead of --machines x --families:

    .venv/bin/python bench/networks_time.py --ab-global \
        --instances amr/100k/hetero3/s1000,amr/100k/switch4/s1000,amr/100k/switch4/s0

--ab-kway: each case twice, with METIS's k-way split as a candidate on every split METIS alone
cuts (before partition.BATCHED_RB_PART) and as now (recursive bisection only into parts of up
to 64 ranks, on graphs of batched splits); the costs' ratio now / before and both times:

    .venv/bin/python bench/networks_time.py --ab-kway \
        --machines dragonfly:7x32x16@3125,fat-tree:4x32x32:oversub=2@3125
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import instances as I  # noqa: E402
import mapper_scaling as MS  # noqa: E402

from rankmap.mapper import backends, baselines, machine as mach, metrics, partition, solve  # noqa: E402
from rankmap.profiler.traffic import Traffic  # noqa: E402

MACHINES = "fat-tree:16x20@320,fat-tree:8x40@320,dragonfly:16x8x3@384"
FAMILIES = "stencil7,stencil27,mesh,amr,a2a,mix,social,random"


def traffic(fam: str, p: int):
    if fam == "random":
        return MS.random_graph(p)
    return I.GENERATORS[fam](p, 1000)[0]


def timed(t: Traffic, m, exact: bool = False, no_global: bool = False, kway: bool = False):
    keep, keep_global, keep_rb = backends.EXACT_SLACK_MIN_BLOCKS, solve._global_links, partition.BATCHED_RB_PART
    backends.EXACT_SLACK_MIN_BLOCKS = 10 ** 9 if exact else keep
    partition.BATCHED_RB_PART = 0 if kway else keep_rb
    if no_global:
        solve._global_links = lambda offdiag, graph, machine, prob, best, *rest: best
    try:
        c0 = time.process_time()
        r = solve.solve(t, m, seed=0)
        return r, time.process_time() - c0
    finally:
        backends.EXACT_SLACK_MIN_BLOCKS, solve._global_links, partition.BATCHED_RB_PART = keep, keep_global, keep_rb


def cases(args):
    """(network label, traffic label, W, machine) of each case: --instances, or every
    family on every machine."""
    if args.instances:
        for name in args.instances.split(","):
            family, size = name.split("/")[:2]
            found = [i for i in I.instances(sizes=(size,), which="all", families=[family]) if i.name == name]
            if not found:
                sys.exit(f"no instance named {name} (bench/mapper_anchors.py --list --sizes {size} --set all)")
            W, m = found[0].load()
            yield "/".join(name.split("/")[2:]), family, W, m
        return
    for spec in args.machines.split(","):
        net, nodes = spec.split("@")
        m = mach.build([f"n{i}" for i in range(int(nodes))], ["pack:2 core:16"], network=net)
        for fam in args.families.split(","):
            yield net, fam, traffic(fam, m.nslots), m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--machines", default=MACHINES, help="comma list of NETWORK@NODES")
    ap.add_argument("--families", default=FAMILIES)
    ap.add_argument("--instances", default=None,
                    help="comma list of bench/instances.py names instead (e.g. amr/100k/hetero3/s1000)")
    ap.add_argument("--ab", action="store_true", help="KaHIP's many-block splits exact (before) and with room (now)")
    ap.add_argument("--ab-global", action="store_true", help="without the global-link step (before) and with it (now)")
    ap.add_argument("--ab-kway", action="store_true", help="METIS's k-way candidate on every split (before) and as now")
    args = ap.parse_args()
    over = 0
    print(f"{'machine':20} {'traffic':10} {'ranks':>7} {'CPU s':>7} {'cost':>6} {'global':>6} {'link':>6} {'hop-B':>6}"
          + ("   exact: CPU s, cost now/exact" if args.ab else "")
          + ("   without the step: CPU s, global, cost now/without" if args.ab_global else "")
          + ("   k-way kept: CPU s, cost now/before" if args.ab_kway else ""), flush=True)
    for net, fam, W, m in cases(args):
        t = Traffic(bytes=W, source=fam, format="synthetic")
        r, sec = timed(t, m)
        e = metrics.evaluate(W, m, r.slot_of_rank)
        b = metrics.evaluate(W, m, baselines.block(W.shape[0], m))
        glob = e.get("max_global_link_load", 0.0) / (b.get("max_global_link_load") or 1.0)
        line = (f"{net:20} {fam:10} {W.shape[0]:7d} {sec:7.2f} {e['sum_com'] / b['sum_com']:6.3f} {glob:6.3f} "
                f"{e['max_link_load'] / b['max_link_load']:6.3f} {e['net_hop_bytes'] / b['net_hop_bytes']:6.3f}")
        over += sec > 3.0
        if args.ab:
            r0, sec0 = timed(t, m, exact=True)
            line += f"   {sec0:7.2f} {r.cost / r0.cost:8.5f}"
        if args.ab_global:
            r0, sec0 = timed(t, m, no_global=True)
            e0 = metrics.evaluate(W, m, r0.slot_of_rank)
            glob0 = e0.get("max_global_link_load", 0.0) / (b.get("max_global_link_load") or 1.0)
            line += f"   {sec0:7.2f} {glob0:6.3f} {r.cost / r0.cost:8.5f}"
        if args.ab_kway:
            r0, sec0 = timed(t, m, kway=True)
            line += f"   {sec0:7.2f} {r.cost / r0.cost:8.5f}"
        print(line, flush=True)
    print(f"above 3 s: {over}")


if __name__ == "__main__":
    main()
