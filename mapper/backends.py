"""The graph partitioners behind one split of the machine tree: the ranks of a subtree
divided among its children, each child holding at most its capacity.

METIS (pymetis) is fast at any size; Mt-KaHyPar (its deterministic preset, one thread)
finds cuts several percent lower on the graphs of real codes and takes a capacity per
block directly, so it is tried where its time is affordable; KaHIP (equal capacities)
likewise, with its fast preset on big graphs and eco / strong on the large splits of graphs
up to STRONG_GRAPH_MAX_WORK. All are deterministic for a given seed. Each returns a block
per vertex; the caller repairs capacities and keeps the lowest cut."""
from __future__ import annotations

from contextlib import contextmanager
from functools import lru_cache

import ctypes
import importlib
import importlib.util
import math
import os
import pickle
import select
import signal
import subprocess
import sys
import tempfile
import time

import numpy as np
import pymetis

from rankmap.mapper import libmetis, mtkahypar_context
from rankmap.profiler.errors import UserError

# What a split affords is decided from its size alone (never from measured time, so that a
# seed gives the same mapping on any machine). Below MIN_VERTICES METIS's split is as good
# and the others' fixed costs (~40 ms) dominate; above the work limits (vertices + edge
# entries, times blocks for Mt-KaHyPar) they would take more than a fraction of a second.
MIN_VERTICES = 200
KAHIP_MAX_WORK = 400_000          # (vertices + edge entries) x log2(blocks), on any graph
MTKAHYPAR_MAX_WORK = 1e7
VCYCLE_MAX_WORK = 1_000_000
TOP_SHARE = 8
# Whole graphs above this (vertices + edge entries: about 7*10^4 ranks of a 7-point stencil)
# get no Mt-KaHyPar (its V-cycles take seconds per split: the mapping-time target is 10^5
# ranks in 5 s) and KaHIP only on clearly structured splits (partition.split_candidates)
PORTFOLIO_MAX_WORK = 500_000
# Mt-KaHyPar's gain tables take memory in proportion to vertices x blocks (about 1 GB for
# 10^5 vertices into 3,125 blocks): beyond this product it is not used
MTKAHYPAR_MAX_MEMORY = 3e7
# Graphs up to this size (vertices + edge entries: the standard benchmark's graphs of 2^15-2^16
# vertices, ~7*10^4 ranks of a 7-point stencil) afford more per split: KaHIP on splits of any
# size (up to KAHIP_SMALL_GRAPH_MAX_WORK), its eco and strong presets on the splits of
# many vertices, on every split of at least TOP_MIN_VERTICES vertices (not only the top
# ones), and Mt-KaHyPar from scratch on the root split (at least ROOT_SHARE of the graph)
# whatever its capacities, where it has KAHIP_STRONG_MIN_VERTICES or more (on 10^4-rank
# instances it cost 1-1.5 s for no gain). Measured on the standard benchmark's tune graphs
# (bench/mapper_standard.py): a split's cut grows with its size and the presets' gains
# with it (rgg_n_2_16_s0, bisection: KaHIP fast 437 edges, eco 363, strong 298), while
# below ~2,000 vertices fast is as good (the 1k-rank tune set maps identically).
STRONG_GRAPH_MAX_WORK = 500_000
# (x log2(blocks): binds only on units of work, whose graphs reach UNITS_MAX_WORK; at 4e6
# the 8- and 16-block splits of gen_rgg_n_2_17_s1 got METIS alone: 4:8:1 J 1.33x the best
# anchor, with eco KaHIP 1.10x, in the same time)
KAHIP_SMALL_GRAPH_MAX_WORK = 8_000_000
KAHIP_ECO_MIN_VERTICES = 2_000
KAHIP_STRONG_MIN_VERTICES = 16_000
KAHIP_STRONG_MAX_WORK = 4_000_000
# units of work get the strong preset as far as they get KaHIP at all: the top splits of
# gen_rgg_n_2_17_s1 (8 and 16 blocks, 5.7-7.6e6 work) with eco were J 1.02-1.10x the best
# anchor, with strong 0.93-0.97x (CPU 10-19 s, 1.2-2.4x eco's; SharedMap strong 12-46 s)
KAHIP_STRONG_MAX_WORK_UNITS = KAHIP_SMALL_GRAPH_MAX_WORK
TOP_MIN_VERTICES = 2_000
ROOT_SHARE = 0.9
# Units of work on graphs up to UNITS_SMALL_MAX_WORK (the standard benchmark's graphs of
# 2^12-2^15 vertices: 3elt, 4elt, commanche_dual, delaunay_n15, the 2-D meshes) get KaHIP on
# every split of MIN_VERTICES or more, strong from KAHIP_ECO_MIN_VERTICES (fast below), and
# Mt-KaHyPar from scratch on the root split whatever its size: below 16,000 vertices eco KaHIP
# and METIS alone left J 2-6 % above KaHIP's and SharedMap's strong multisections (set on
# generated tune graphs of 2^13-2^14 vertices and 3elt, bench/mapper_standard.py; docs/mapper-history.md).
# Strong on the splits below 2,000 vertices too lowered J by another 0.3 % at twice the time:
# on a quiet machine slower than SharedMap strong on 9 of 3elt's 10 rows (5 with this rule)
UNITS_SMALL_MAX_WORK = 250_000
# ... and a split of theirs into EXACT_SLACK_MIN_BLOCKS or more parts filled exactly (KaHIP's
# imbalance 0, each part ceil(n/k): the node splits into 8-16 sockets where 2^12-2^14 vertices
# leave at most 33 per core, r = 8-16) gets strong KaHIP from UNITS_EXACT_STRONG_MIN_VERTICES
# (fast below KAHIP_ECO_MIN_VERTICES otherwise), as one candidate: the run without room on
# UNITS_EXACT_SEEDS seeds (FAST_SEED_STEP apart, the lowest repaired cut kept), not UNITS_EXACT's
# two. Those splits of 500-2,000 vertices decided the rows above the best anchor there: fast
# KaHIP given 1 % of room and repaired cut more. Standard benchmark's tune graphs up to
# UNITS_SMALL_MAX_WORK (bench/mapper_standard.py, r = 1-16, 100 rows; side by side, one fresh
# process per run): above the best anchor 18 -> 6 (13 -> 1 on the 26 rows it touches), J / best
# geometric mean 0.9700 -> 0.9676, no J higher; CPU +24 % (+150 % where it runs: 1-6 s -> 2-16 s,
# SharedMap strong 13-92 s there but on 3elt and airfoil1, 2.3-5.2 s: 3elt 4:16:8 2.0 -> 3.2 s
# against 2.6 s, the one row it makes slower than SharedMap strong).
# Held out (4elt, commanche_dual, fe_4elt2, power, 40 rows): above 8 -> 6, none higher, CPU +26 %,
# slower than SharedMap strong 1 -> 2 (commanche_dual 4:16:4, 1.5 -> 3.2 s against 3.05 s).
# The same tune rows with: both runs (with and without room) on two seeds each, the same 6 above
# for twice the added CPU (+48 %); both on one seed, 10 above; the run with room alone on two, 13
# (3elt 4:16:4 +0.25 %);
# strong on full 4-part splits of 500+ vertices too (sockets into cores, r = 1-4) fixed no row and
# cost up to 7 s (gen_mesh_n15_s1 4:8:8, delaunay_n15 4:16:4 then slower than SharedMap strong);
# strong on every split of 500+ vertices and four seeds on every full split, +171 % CPU on 33 rows.
UNITS_EXACT_STRONG_MIN_VERTICES = 500
UNITS_EXACT_SEEDS = 2
# Splits of at least 1/MID_SHARE of a graph between MID_MIN_GRAPH_WORK and
# STRONG_GRAPH_MAX_WORK (not units of work) that are not top splits get Mt-KaHyPar's V-cycles
# from METIS's splits: at 10^4 ranks the switch tree's 39 switches and the torus's sub-tori
# (tune: 7 of 25 costs 0.4-2.0 % lower, none higher, +0.4-0.9 s CPU, at most 2.0 s); at 1k
# ranks they changed no cost on the 62 tune instances for 0.05-0.08 s more, hence the floor
MID_SHARE = 64
MID_MIN_GRAPH_WORK = 50_000
# Bigger graphs up to KAHIP_BIG_GRAPH_MAX_WORK (2^17-vertex meshes and random geometric
# graphs, 10^5 ranks) get KaHIP's eco preset on their top splits up to KAHIP_BIG_MAX_WORK
# (eco: 0.1-0.3 s on a split of 2^16 vertices; J 1.08x the best anchor where METIS alone
# gave 1.28x); above it (10^6 ranks) KaHIP's fast preset within KAHIP_MAX_WORK as before
KAHIP_BIG_GRAPH_MAX_WORK = 2_000_000
KAHIP_BIG_PRESET = "eco"
KAHIP_BIG_MAX_WORK = 4_000_000
# ... all of it only for splits into at most this many blocks: eco's time grows fast with
# the blocks (a 10^4-rank stencil into 312 nodes: 18 s where fast takes 0.1 s)
KAHIP_PRESET_MAX_BLOCKS = 16
# Vertices that are units of work, many per core (--oversubscribe/--imbalance: the field's
# standard benchmark), make the mapping a graph partition, weighed against KaHIP's and
# SharedMap's strong presets (tens of seconds at 2^17 vertices), not a 10^5-rank launch with
# its 5 s: such graphs keep the small-graph rules above (strong KaHIP, Mt-KaHyPar's root
# split and V-cycles) up to UNITS_MAX_WORK. Measured on the tune graphs at 4:8:2:
# rgg_n_2_16_s0 J 1.190 -> 1.014 x the best anchor (CPU 1.1 -> 7.8 s), gen_rgg_n_2_17_s1
# 1.087 -> 0.935 (3.6 -> 15 s), gen_delaunay_n17_s1 1.031 -> 1.000 (2.9 -> 15 s).
# (4, was 16: the 2^12-2^13-vertex graphs on 4:16:8 and 4:16:16, 4-9 vertices per core, are
# partitions too: 3elt J 0.962-0.968x the best anchor where the rules for ranks gave
# 0.975-0.980, the 2^13 mesh 1.001 where they gave 1.044)
UNITS_PER_CORE = 4
# A graph of skewed degrees (their coefficient of variation, the top 1 % of degrees left out,
# above this: collaboration and trust networks 1.1-1.8; meshes, Delaunay and random geometric
# graphs 0.0-0.35, a power grid 0.67, the real codes' graphs and the synthetic families but
# social at 1k ranks at most 0.35) gets Mt-KaHyPar's V-cycles from the lowest-cut candidate of a split
# only (partition.split_candidates). Units of work: there a V-cycle run took 1-8 s, and from every
# candidate rankmap was slower than SharedMap strong on 15 of the 20 rows of the tune graphs
# PGPgiantcompo and hep-th; from the best one, 3 of 20, J 0.951 of the best anchor (was
# 0.949; none above). Eco KaHIP there as well: 2 of 20, but J 0.964 (bench/mapper_standard.py)
SKEWED_DEGREE_CV = 1.0
# One rank per vertex on such a graph (not units of work): Mt-KaHyPar from scratch wherever
# KaHIP would run, V-cycles from the lowest-cut candidate only (plan's `skewed`). KaHIP asked
# for exactly full parts, as a machine filled to the last core asks, crawled there: astro-ph
# as 16,706 ranks on an 8x8x8 torus, eco 15 s on one split of its dense core, cutting 20 %
# more than Mt-KaHyPar did in 0.5 s; the whole mapping 63 s -> 23 s at a 1.6 % lower cost.
# Set on the social family of bench/instances.py (scale-free traffic, 1k and 10k ranks);
# held out: the real networks as ranks (the networks family). Units of work keep KaHIP:
# with their slack its strong preset cut less (PGPgiantcompo and hep-th, 20 rows: J 0.951 of
# the best anchor with KaHIP, 0.963 with Mt-KaHyPar in its place, bench/mapper_standard.py)
SKEWED_MTKAHYPAR = True
# Graphs beyond the portfolio's size whose top splits get eco KaHIP (up to
# KAHIP_BIG_GRAPH_MAX_WORK: about 10^5 ranks of halo traffic), where a split fills its parts
# exactly (a machine filled to its last core): KaHIP asked for no imbalance crawled there on
# irregular graphs, 0.4-14 s per bisection of 2-9*10^4 ranks (25 of mesh/100k/torus's 29 s),
# and took 0.2 s on a 7-point stencil. Instead: KaHIP given FULL_SLACK of room (0.1-0.2 s; its
# split repaired to the capacities), Mt-KaHyPar from scratch, and V-cycles from the lowest cut
# of those and METIS's. On the top three bisections of mesh/100k/torus/s1000,
# amr/100k/torus/s0 and stencil7/100k/torus/s1000 that cut 0.69-1.00x what METIS and KaHIP
# did (never more), in 0.8-3.1 s a split instead of 0.2-14.5 s (docs/mapper-history.md, Scale)
FULL_SPLIT_MTKAHYPAR = True
FULL_SLACK = 0.003
# On those splits Mt-KaHyPar (from scratch and its V-cycles) runs FULL_SPLIT_JET_ROUNDS dynamic
# rounds of FULL_SPLIT_JET_ITERATIONS iterations of its Jet refinement (the deterministic
# quality preset's 3 of 8; mtkahypar_context) and FULL_SPLIT_VCYCLES V-cycles (MtKaHyPar.VCYCLES:
# 2). Jet was most of its time there, not the flows (on the root bisection of mesh/100k/torus/s0
# the deterministic preset, and the quality preset without flows, partition identically in the
# same time): that bisection from scratch 0.65 s -> 0.26 s (1 round) -> 0.19 s (1 of 4),
# two V-cycles from METIS's split 0.83 -> 0.35 -> 0.30 s, one 0.16 s, cutting 1-3 % more after
# the V-cycles. Issue 13 (10^5 ranks in 5 s), side by side on the tune instances it touches
# (mesh and AMR on the torus, seeds 0 and 1; a VM at load average 5-8): the whole mapping
# 7.0-9.7 s -> 4.3-5.8 s of CPU, costs 0.985-1.015 of the default's (geometric mean 1.000): the
# top cuts are one term of the cost, which moved by up to 2 % either way with each setting tried
# (1 round and 2 V-cycles; 3 rounds and 1; without KaHIP), none better on average. KaHIP stays:
# on stencils whose numbering hides their grid it cut least (FULL_SPLIT_MTKAHYPAR's comment).
# Held out, once (14 instances of 10^5 ranks on the torus and the switch tree): the 3 it touches
# 0.54-0.74x the CPU, costs 0.990-1.001 (docs/mapper-history.md, Scale)
FULL_SPLIT_JET_ROUNDS = 1
FULL_SPLIT_JET_ITERATIONS = 4
FULL_SPLIT_VCYCLES = 1
# The root split of hierarchical's machine tree gets Mt-KaHyPar from scratch up to this
# (vertices + edge entries) x blocks, whatever plan() gives it and even where METIS finds no
# structure (partition.STRUCTURED): on 1k-rank graphs (a pencil FFT's row and column
# all-to-alls, a binomial tree, a hypercube, random partners) it cut 1-8 % less than METIS
# and KaHIP. Its time near the limit: the pencil (2.8e6) 1.5 s of a 2.1 s mapping, on a VM
# running at half its usual speed (4k random ranks into 125 nodes: 5x the time for nothing).
# Not above ROOT_MTKAHYPAR_MAX_RANKS: a 10k-rank stencil into 4 switches passes the work limit,
# and the same cost took 1.8x the time
ROOT_MTKAHYPAR_MAX_WORK = 3_000_000
ROOT_MTKAHYPAR_MAX_RANKS = 4096
UNITS_MAX_WORK = 2_000_000
# the preset plan() chose for a split, taken by kahip() for the same split (keyed by its size
# and capacities: partition.split_candidates calls plan, then kahip, for one split at a time)
_PRESET: dict = {}
# KaHIP's fast preset asked for no imbalance at all (blocks exactly full, as every split of a
# machine filled to the last core asks) spends 5-15x its time balancing: 0.06-0.16 s for 256
# ranks into 16 cores, 0.55 s for 1,024 into 64 nodes, most of a 1k-rank mapping's time. Given
# FAST_SLACK above the capacity it takes 0.01-0.04 s, and its split repaired to the capacities
# cuts about as much; FAST_SEEDS such runs (seeds apart by FAST_SEED_STEP), the lowest repaired
# cut kept, cost the same as the one balanced run on the 1k-rank tune set (geometric mean
# 0.9998, 4 instances worse, 6 better) at 0.73x the mapping time (bench/mapper_anchors.py)
FAST_SLACK = 0.01
FAST_SEEDS = 2
FAST_SEED_STEP = 7777
# Units of work: the root split (at least ROOT_SHARE of the graph) into at most
# ROOT_SEEDS_MAX_BLOCKS parts, where KaHIP runs strong, gets ROOT_SEEDS strong runs (seeds
# FAST_SEED_STEP apart), the lowest repaired cut kept: the node-level cut is most of J (distance
# 100). Set on the standard benchmark's 150 tune rows (bench/mapper_standard.py, r = 1-16):
# rows above the best anchor 31 -> 28, J geometric mean over the best 0.9725 -> 0.9710, CPU +11 %
# on the rows it touches (r = 2, 4). On all root splits (the 8- and 16-part ones too) the CPU
# rose by 22 % for 3 rows fewer above as well. Held out (7 graphs never tuned on, r = 2, 4, 28
# rows): above 6 -> 4, geometric mean 0.9720 -> 0.9704, 5 lower J, 2 higher (at most +0.4 %), CPU +17 %.
ROOT_SEEDS = 2
ROOT_SEEDS_MAX_BLOCKS = 4
# KaHIP's eco and strong presets asked for blocks filled exactly spend most of their time
# balancing once there are many blocks: a 10^4-rank root split into 16 blocks (16 leaf
# switches, or dragonfly groups) took 8.5-14 s of eco on AMR-like and mesh traffic, 0.3-0.4 s
# with 1 % of room, its split then repaired and improved by the V-cycles like every candidate.
# From EXACT_SLACK_MIN_BLOCKS blocks they get EXACT_SLACK of room (2-4 blocks: the tori's
# bisections, exact in 0.01-0.2 s, and the split cut 6.9 % more with room on a torus)
EXACT_SLACK_MIN_BLOCKS = 8
EXACT_SLACK = 0.01
# Units of work (partition.units_of_work): such a split gets two KaHIP candidates, one run with
# that room and one without (kahip_candidates), each improved by the split's V-cycles where it
# has them, the lowest cut kept as for every candidate. On the standard benchmark's rows of at
# most 33 vertices per core (3 % imbalance leaves no room at all; bench/mapper_standard.py)
# either run alone lost rows by up to 5 %, each where the other won: the room's repair cost
# gen_mesh_n14_s1 at 4:8:16 a node-level cut of 2,702 where the exact split gives 2,536 (J 1.054
# -> 1.003 of the best anchor, KaHIP multisection strong, which splits exactly), while on
# gen_rgg_n_2_13_s1 the exact split alone cut 600 -> 642 (J +3.7 % on its exactly full rows);
# keeping only the run of the lower repaired cut lost the latter too (its V-cycles did better
# from the other run)
UNITS_EXACT = True
# Units of work: a split whose equal capacities leave KaHIP less than UNITS_TIGHT_MAX of room
# (a part's share of the slack that the split above it took: a root bisection that fills one
# node to its last slots) and that gets V-cycles (a top split, backends.plan) gets a second
# KaHIP run given UNITS_TIGHT_ROOM of room, repaired and V-cycled as every candidate, the
# lowest cut kept. Strong KaHIP with almost no room cuts far more: rgg_n_2_16_s0 at 4:16:2, its
# root bisection fills one node to 33,673 of 33,728 slots, and that node's split into 16 sockets
# (0.14 % of room) cut 2,251 after V-cycles; given 1 / 2 / 3 / 5 % of room, then repaired and
# V-cycled, 1,774 / 1,761 / 1,568 / 1,594 (3 %: 1,598 and 1,656 at two other seeds, 2 %: 1,693
# and 1,776). Splits filled exactly into EXACT_SLACK_MIN_BLOCKS or more parts keep their two
# runs (UNITS_EXACT) without this one: a third run there changed no J on the 14 exactly full
# rows above the best anchor, for +13-48 % CPU. Standard benchmark's tune rows
# (bench/mapper_standard.py), side by side: rgg_n_2_16_s0 4:16:2 J 1.035 -> 0.992 of the best
# anchor, 4:8:2 1.009 -> 0.988, 4:8:4 1.001 -> 0.989; 32 tune rows: 25 -> 22 above it, no J higher,
# CPU +12 % (+10-31 % where it runs). Held out: delaunay_n16 4:8:4 1.0045 -> 0.995
UNITS_TIGHT_ROOM = 0.03
UNITS_TIGHT_MAX = 0.01


def kahip(indptr: np.ndarray, col: np.ndarray, w: np.ndarray, caps: list[int], seed: int,
          preset: str | None = None, strong_seeds: int = 1, exact: bool = False,
          room: float = 0.0) -> np.ndarray | None:
    """KaHIP's kaffpa, blocks of equal capacity only (KaHIP has no per-block sizes): the
    imbalance is what the capacity leaves above ceil(n / k) (fast: FAST_SLACK more, the best
    of FAST_SEEDS runs; eco+slack: FULL_SLACK more, one run). Preset: the one plan() chose for this split, else fast (on the
    1k-rank tuning instances its final mappings cost the same as with eco, geometric mean
    0.9996, at 0.8x the mapping time). strong_seeds: runs of the strong preset (ROOT_SEEDS),
    the lowest repaired cut kept. exact: no EXACT_SLACK on an exactly full split (kahip_candidates).
    room: eco / strong get at least this much imbalance (UNITS_TIGHT_ROOM); the caller repairs."""
    try:
        import kahip as kh
    except ImportError:
        return None
    n, k = len(indptr) - 1, len(caps)
    if len(set(caps)) != 1 or not len(col):
        return None
    if preset is None:
        preset = _PRESET.pop((n, len(col), tuple(caps)), "fast")
    mode = {"fast": kh.FAST, "eco": kh.ECO, "strong": kh.STRONG}[preset.split("+")[0]]
    imbalance = caps[0] / -(-n // k) - 1
    # KaHIP sums edge weights in 32-bit integers (its flows too): larger totals overflow and
    # make it crawl, so weights are scaled to a 2^24 total
    args = ([1] * n, indptr.tolist(), _int_weights(w, 2.0 ** 24).tolist(), col.tolist(), k)
    if preset == "eco+slack":            # one run given FULL_SLACK of room (FULL_SPLIT_MTKAHYPAR); the caller repairs
        _, part = kh.kaffpa(*args, float(imbalance + FULL_SLACK), True, int(seed) % (2 ** 31), mode)
        return np.asarray(part, dtype=np.int64)
    runs, slack = (FAST_SEEDS, FAST_SLACK) if preset == "fast" else (strong_seeds if preset == "strong" else 1, 0.0)
    if preset != "fast" and imbalance < 1e-12 and k >= EXACT_SLACK_MIN_BLOCKS and not exact:
        slack = EXACT_SLACK
    if preset != "fast" and room > imbalance + slack:
        slack = room - imbalance
    if runs == 1:
        _, part = kh.kaffpa(*args, float(imbalance + slack), True, int(seed) % (2 ** 31), mode)
        return np.asarray(part, dtype=np.int64)
    # fast: FAST_SEEDS runs with FAST_SLACK of room (strong: strong_seeds, no room), the lowest
    # cut once repaired to the capacities
    from rankmap.mapper.partition import _Sub, repair
    sub = _Sub((indptr, col, w), np.arange(n), np.full(n, -1, dtype=np.int64))
    best = None
    for t in range(runs):
        _, part = kh.kaffpa(*args, float(imbalance + slack), True, (int(seed) + FAST_SEED_STEP * t) % (2 ** 31), mode)
        part = np.asarray(part, dtype=np.int64)
        cut = sub.cut(repair(sub, part, caps))
        if best is None or cut < best[0]:
            best = (cut, part)
    return best[1]


def kahip_candidates(indptr: np.ndarray, col: np.ndarray, w: np.ndarray, caps: list[int], seed: int,
                     strong_seeds: int = 1, units: bool = False, vcycles: bool = False,
                     deadline: float | None = None) -> list:
    """kahip()'s split with the preset plan() chose, as a list of candidates; for units of work on a
    split filled exactly into EXACT_SLACK_MIN_BLOCKS or more parts (eco, strong), kahip()'s run
    with EXACT_SLACK of room and one without (UNITS_EXACT); for units of work on another split
    that leaves less than UNITS_TIGHT_MAX of room and gets V-cycles (vcycles), kahip()'s run and
    one given UNITS_TIGHT_ROOM; strong on a full split below KAHIP_ECO_MIN_VERTICES (units of work
    on small graphs), the run without room alone on UNITS_EXACT_SEEDS seeds. deadline
    (time.monotonic(), --time-limit): a run that could end past it is stopped there
    (KAHIP_SECONDS_PER_UNIT_MAX) and gives None."""
    n, k = len(indptr) - 1, len(caps)
    preset = _PRESET.pop((n, len(col), tuple(caps)), "fast")
    at_most = (n + len(col)) * KAHIP_SECONDS_PER_UNIT_MAX[preset.split("+")[0]]

    def run(*args, **kw):
        return within(deadline, at_most, kahip, *args, **kw)
    if units and preset == "strong" and n < KAHIP_ECO_MIN_VERTICES and _filled_exactly(n, caps):
        # strong below KAHIP_ECO_MIN_VERTICES: a full split of units of work into 8+ parts (kahip_preset),
        # one candidate without room on UNITS_EXACT_SEEDS seeds (UNITS_EXACT_STRONG_MIN_VERTICES's comment)
        return [run(indptr, col, w, caps, seed, preset, max(strong_seeds, UNITS_EXACT_SEEDS), exact=True)]
    out = [run(indptr, col, w, caps, seed, preset, strong_seeds)]
    if not (units and preset in ("eco", "strong") and len(set(caps)) == 1 and len(col)):
        return out
    imbalance = caps[0] / -(-n // k) - 1
    if UNITS_EXACT and k >= EXACT_SLACK_MIN_BLOCKS and imbalance < 1e-12:
        out.append(run(indptr, col, w, caps, seed, preset, strong_seeds, exact=True))
    elif vcycles and UNITS_TIGHT_ROOM > 0 and imbalance < UNITS_TIGHT_MAX:
        out.append(run(indptr, col, w, caps, seed, preset, strong_seeds, room=UNITS_TIGHT_ROOM))
    return out


# KaHIP's time is not predictable from a split's size: CPU seconds per vertex + edge entry of
# one kahip() call on 3-D meshes, 27-point stencils and random partners (8 or 16, weights equal
# or over 6 decades) of 10^3-10^5 ranks into 2-64 parts (2026-11-30): fast 0.3-33 us; eco
# 0.2-1,100 us (a 10^5 mesh into 16: 0.7 us, into 4: 16 us; random partners of wide weights
# into 4: 0.7-1.1 ms; into 16 at 10^4 ranks 34 us, 6.4 s where --time-limit 3 had planned
# 0.06 s); strong 1.2-250 us. Under a deadline a call that could end past it at these rates
# runs in a forked child stopped there (a fork costs ~3 ms of CPU); the others run in place
KAHIP_SECONDS_PER_UNIT_MAX = {"fast": 35e-6, "eco": 1.1e-3, "strong": 250e-6}


def within(deadline: float | None, at_most: float, function, *args, **kwargs):
    """function(*args, **kwargs) in place where it cannot end past `deadline` (time.monotonic();
    None: no deadline) even if it takes `at_most` seconds; else in a forked process stopped at
    the deadline (forked_call: None if stopped)."""
    if deadline is None or time.monotonic() + at_most <= deadline:
        return function(*args, **kwargs)
    return forked_call(deadline, function, *args, **kwargs)


def forked_call(deadline: float, function, *args, **kwargs):
    """function(*args, **kwargs) in a forked copy of this process, killed at `deadline`
    (time.monotonic()): its result, or None if the deadline came first. For C code that cannot
    be interrupted and runs on this thread alone (KaHIP, Mt-KaHyPar on one thread); its
    exceptions are raised here."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:                                  # the child: no Python cleanup, no buffers flushed twice
        status = 1
        try:
            os.close(read_end)
            try:
                out = (True, function(*args, **kwargs))
            except Exception as e:
                out = (False, e)
            with os.fdopen(write_end, "wb") as f:
                pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    chunks, done = [], False
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            if not select.select([read_end], [], [], left)[0]:
                continue
            chunk = os.read(read_end, 1 << 20)
            if not chunk:
                done = True
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        if not done:
            os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    if not done:
        return None
    if status != 0 or not chunks:
        raise RuntimeError(f"internal error: {getattr(function, '__name__', function)} in a forked process "
                           f"ended with status {status}")
    ok, out = pickle.loads(b"".join(chunks))
    if not ok:
        raise out
    return out


def _int_weights(w: np.ndarray, total_max: float, dtype=np.int64) -> np.ndarray:
    """Integer edge weights >= 1 whose sum stays below total_max (the libraries sum them)."""
    total = float(w.sum()) or 1.0
    x = w * min(1.0, total_max / total)          # one temporary, not four (10^7 weights at 10^6 ranks)
    np.rint(x, out=x)
    np.maximum(x, 1, out=x)
    return x.astype(dtype)


# METIS (GKlib's random generator) gives seeds 0 and 1 the same stream, so the second start
# (seed + 1) repeated the first's METIS split of the root and its V-cycles: seed 1 is passed as
# this one instead. On the 1k sets' instances that have light starts (below 1,000 ranks on
# more than 256 slots; tune and holdout, first seeds) the mapping's cost: geometric mean of
# the ratios 0.9986, 10 lower (to -4.4 %), 5 higher (to +1.2 %)
METIS_SEED_ONE = 104729


def metis_seed(seed: int) -> int:
    s = int(seed) % (2 ** 31)
    return METIS_SEED_ONE if s == 1 else s


@contextmanager
def c_stdout_quiet():
    """The process's stdout (file descriptor 1) closed to what C code prints meanwhile.
    METIS complains with printf where a recursive bisection asks for a part of about one
    vertex ("***Cannot bisect a graph with 0 vertices!": 83 ranks on 32 nodes of 3-5 cores)
    and partitions anyway; the caller repairs capacities. Printed, it went into the JSON
    that `rankmap map --json` writes to stdout. C's buffer is flushed before fd 1 comes back,
    so nothing it held reaches the output later."""
    sys.stdout.flush()
    saved = os.dup(1)
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        _libc().fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)


@lru_cache(maxsize=None)
def _libc():
    return ctypes.CDLL(None)


def metis(indptr: np.ndarray, col: np.ndarray, w: np.ndarray, caps: list[int], seed: int,
          kway: bool = True) -> list[np.ndarray]:
    """METIS recursive bisection (and k-way where it is cheap), block sizes in proportion
    to the capacities, imbalance up to the largest the capacities leave room for."""
    seed = metis_seed(seed)
    n = len(indptr) - 1
    k = len(caps)
    total_cap = float(sum(caps))
    tp = [c / total_cap for c in caps]
    # room above the proportional share, in METIS's units (1/1000), at least its minimum
    ufactor = max(1, int(1000 * min((c / (n * c / total_cap)) - 1 for c in caps))) if n else 1
    if len(col) > libmetis.BIG_NNZ and not (kway and k > 2) and libmetis.available():
        # 32-bit indices: less than half the memory (10^6 ranks), weights scaled to 31 bits
        with c_stdout_quiet():
            part = libmetis.part_recursive(indptr, col, _int_weights(w, 2.0 ** 30, np.int32), tp,
                                           min(ufactor, 500), seed)
        if part is not None:
            return [part]
    adj = pymetis.CSRAdjacency(indptr, col)
    weights = _int_weights(w, 2.0 ** 40)
    out = []
    for recursive in ((True, False) if kway and k > 2 else (True,)):
        with c_stdout_quiet():
            res = pymetis.part_graph(k, adjacency=adj, eweights=weights, tpwgts=tp, recursive=recursive,
                                     options=pymetis.Options(seed=int(seed) % (2 ** 31), ufactor=min(ufactor, 500)))
        out.append(np.asarray(res.vertex_part, dtype=np.int64))
    return out


@lru_cache(maxsize=None)
def _mtkahypar():
    try:
        import mtkahypar
    except ImportError as e:     # found by mtkahypar_available, and broken (a missing shared library)
        raise UserError(f"Mt-KaHyPar is installed but does not load ({e}); reinstall it "
                        "(pip install --force-reinstall mtkahypar) or uninstall it") from e
    return mtkahypar, mtkahypar.initialize(1, False)


def fresh_call(module: str, function: str, *args, env: dict | None = None):
    """module.function(*args) in a fresh interpreter, its result returned (both pickled).
    For Mt-KaHyPar's QUALITY and DEFAULT presets: called again in the same process with the
    same seed they return another partition (their state outlives set_seed and a new
    initialization; the deterministic presets of the split portfolio repeat themselves), so
    what they give would depend on what the process ran before. env: added to the child's."""
    with tempfile.TemporaryDirectory(prefix="rankmap-fresh-") as tmp:
        src, dst = os.path.join(tmp, "in.pickle"), os.path.join(tmp, "out.pickle")
        with open(src, "wb") as f:
            pickle.dump((module, function, args), f, protocol=pickle.HIGHEST_PROTOCOL)
        child = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p), **(env or {}))
        res = subprocess.run([sys.executable, "-c", "import sys; from rankmap.mapper.backends import _fresh_child; "
                              "_fresh_child(sys.argv[1], sys.argv[2])", src, dst],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=child)
        if res.returncode != 0 or not os.path.exists(dst):
            tail = res.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise RuntimeError(f"internal error: {module}.{function} in a fresh interpreter failed ({tail[0]})")
        with open(dst, "rb") as f:
            return pickle.load(f)


def _fresh_child(src: str, dst: str) -> None:
    with open(src, "rb") as f:
        module, function, args = pickle.load(f)
    out = getattr(importlib.import_module(module), function)(*args)
    with open(dst, "wb") as f:
        pickle.dump(out, f, protocol=pickle.HIGHEST_PROTOCOL)


@lru_cache(maxsize=None)
def mtkahypar_available() -> bool:
    # found, not loaded: loading and initializing it costs 0.2 s, for nothing where the
    # split then turns out unstructured and METIS alone runs (random traffic of 10^5 ranks)
    return importlib.util.find_spec("mtkahypar") is not None


class MtKaHyPar:
    """One graph handed to Mt-KaHyPar (deterministic quality preset: deterministic Jet
    refinement and flows; one thread), partitioned from scratch or improved from a given
    partition by V-cycles. (row, col) lists each undirected edge once; seed: the context's
    seed for the deterministic preset (mtkahypar_context), set_seed's for the others. preset:
    another of Mt-KaHyPar's presets (mapper/multisection.py: DEFAULT, the multisection
    competitor's; on one thread the same seed gives the same partition). ip_runs: the deterministic quality
    preset with that many initial-partitioning runs instead of its 20 (ip_runs()); jet_rounds,
    jet_iterations: that many dynamic rounds of Jet refinement of that many iterations instead
    of its 3 of 8 (FULL_SPLIT_JET_ROUNDS); vcycles: improve()'s V-cycles (default VCYCLES).
    partition() first, then improve() as often as wanted: improve() leaves its start's blocks on
    the graph object as communities, which a later partition() coarsens by (a cut 14 % lower to
    32 % higher than a fresh object's); improve() itself gives a fresh object's result after
    anything (checked: all 477 such calls of the 1k tune set's mappings)."""

    VCYCLES = 2

    def __init__(self, row: np.ndarray, col: np.ndarray, w: np.ndarray, n: int, caps: list[int], seed: int,
                 preset: str = "DETERMINISTIC_QUALITY", ip_runs: int | None = None, jet_rounds: int | None = None,
                 jet_iterations: int | None = None, vcycles: int | None = None):
        self.lib, self.init = _mtkahypar()
        mt = self.lib
        self.vcycles = self.VCYCLES if vcycles is None else vcycles
        self.k, self.seed = len(caps), int(seed) % (2 ** 31)
        if ((ip_runs, jet_rounds, jet_iterations) != (None, None, None) or self.seed) and preset == "DETERMINISTIC_QUALITY":
            self.ctx = mtkahypar_context.deterministic_quality(mt, self.init, 20 if ip_runs is None else ip_runs,
                                                               3 if jet_rounds is None else jet_rounds,
                                                               8 if jet_iterations is None else jet_iterations,
                                                               seed=self.seed)
        else:
            self.ctx = self.init.context_from_preset(getattr(mt.PresetType, preset))
        self.ctx.set_partitioning_parameters(len(caps), 0.0, mt.Objective.CUT)
        self.ctx.set_individual_target_block_weights([int(c) for c in caps])
        self.ctx.logging = False
        edges = list(zip(row.tolist(), col.tolist()))
        self.graph = self.init.create_graph(self.ctx, n, len(edges), edges, [1] * n,
                                            _int_weights(w, 2.0 ** 26).tolist())

    def partition(self) -> np.ndarray:
        """From scratch, without V-cycles: the split's portfolio runs improve() on every
        candidate, this one included (V-cycles here too, four in all, gave the same costs on
        the 1k-rank tune instances for 0.02-0.16 s more per call)."""
        self.lib.set_seed(self.seed)
        return np.asarray(self.graph.partition(self.ctx).get_partition(), dtype=np.int64)

    def improve(self, part: np.ndarray) -> np.ndarray:
        """V-cycles from `part` (which must respect the capacities)."""
        self.lib.set_seed(self.seed)
        ph = self.graph.create_partitioned_hypergraph(self.ctx, self.k, part.tolist())   # (its binding names the first two the other way round)
        ph.improve_partition(self.ctx, self.vcycles)
        return np.asarray(ph.get_partition(), dtype=np.int64)


# Mt-KaHyPar coarsens a graph down to MTKAHYPAR_CONTRACTION x blocks vertices (the preset's
# c-t): a split of no more vertices is not coarsened at all, and its initial partitioning
# (recursive bisection, 20 runs of each bisection algorithm) runs on the whole graph: 0.2-0.7 s
# per call from scratch on the 512-2,048-rank real graphs, up to half of their mapping. There
# SMALL_IP_RUNS runs: on 126 instances of the 1k sets (tune; the holdout set's real graphs) the same
# costs on average (geometric mean 0.9992; 25 lower, 12 higher, by at most 3.0 %) for 12-14 %
# less CPU (5 runs, on every call: 1.0006 on the tune set, 21 %); held out (103 synthetic
# instances of the 1k holdout set): 1.0004, 11 lower, 6 higher (by at most 3.5 %), 10 % less CPU.
# Not below SMALL_IP_MIN_VERTICES (the 16-256-rank mappings of docs/real-apps.md are as they
# were) nor on units of work (their strong rules were set on the standard benchmark as they are).
MTKAHYPAR_CONTRACTION = 160
SMALL_IP_RUNS = 10
SMALL_IP_MIN_VERTICES = 512


# V-cycles into more than VCYCLE_FLOWS_MAX_BLOCKS blocks (a split straight into hundreds of
# nodes) run the deterministic preset, without its quality preset's flow refinement: with a
# few dozen vertices per block the flows found nothing there (the 10^4-rank tune set: 30 of 30
# such calls partitioned identically), and on dense traffic they took most of the time (mix on
# the hetero tree, 4.7 -> 1.0 s of V-cycles). At 72 blocks (1,296 ranks) they still gained
# 0.04 %: kept. Checked after on every 10^4 instance, tune and held out, and the real graphs
# (161, bench/mapper_anchors.py --sizes 10k --set all): the same mappings on 160, held-out
# hep-th on the 4 x 6-core tree (349 blocks, skewed) +0.14 %; mix 8.1 -> 2.1 s (hetero),
# 4.7-4.8 -> 1.9 s (3-level and NUMA trees).
VCYCLE_FLOWS_MAX_BLOCKS = 128


def mtkahypar_preset(blocks: int, from_scratch: bool) -> str:
    """Mt-KaHyPar's preset for a split's MtKaHyPar: V-cycles alone into many blocks go
    without flows (VCYCLE_FLOWS_MAX_BLOCKS)."""
    return "DETERMINISTIC" if blocks > VCYCLE_FLOWS_MAX_BLOCKS and not from_scratch else "DETERMINISTIC_QUALITY"


def ip_runs(n: int, blocks: int, units: bool) -> int | None:
    """Initial-partitioning runs for Mt-KaHyPar on a split (None: its preset's)."""
    if units or n < SMALL_IP_MIN_VERTICES or n > MTKAHYPAR_CONTRACTION * blocks:
        return None
    return SMALL_IP_RUNS


def _small(graph_work: int, units: bool) -> bool:
    return graph_work <= (UNITS_MAX_WORK if units else STRONG_GRAPH_MAX_WORK)


def _units_small(graph_work: int, units: bool) -> bool:
    return units and graph_work <= UNITS_SMALL_MAX_WORK


def _filled_exactly(n: int, caps: list[int]) -> bool:
    """Equal capacities that leave KaHIP no imbalance: each is ceil(n / k)."""
    return len(set(caps)) == 1 and caps[0] == -(-n // len(caps))


def kahip_preset(n: int, nnz: int, caps: list[int], graph_work: int, units: bool = False) -> str:
    """KaHIP's preset for a split: eco / strong for the splits of many vertices of graphs up
    to STRONG_GRAPH_MAX_WORK (UNITS_MAX_WORK for units of work), KAHIP_BIG_PRESET on graphs up
    to KAHIP_BIG_GRAPH_MAX_WORK, fast otherwise."""
    if len(caps) > KAHIP_PRESET_MAX_BLOCKS or graph_work > KAHIP_BIG_GRAPH_MAX_WORK and not _small(graph_work, units):
        return "fast"
    if not _small(graph_work, units):
        return KAHIP_BIG_PRESET
    strong_max = KAHIP_STRONG_MAX_WORK_UNITS if units else KAHIP_STRONG_MAX_WORK
    lo = KAHIP_STRONG_MIN_VERTICES
    if _units_small(graph_work, units):          # (UNITS_SMALL_MAX_WORK's, UNITS_EXACT_STRONG_MIN_VERTICES's comments)
        lo = UNITS_EXACT_STRONG_MIN_VERTICES if len(caps) >= EXACT_SLACK_MIN_BLOCKS and _filled_exactly(n, caps) \
            else KAHIP_ECO_MIN_VERTICES
    if n >= lo and (n + nnz) * math.log2(max(2, len(caps))) <= strong_max:
        return "strong"
    return "eco" if n >= KAHIP_ECO_MIN_VERTICES else "fast"


def root_mtkahypar(n: int, nnz: int, blocks: int) -> bool:
    return n <= ROOT_MTKAHYPAR_MAX_RANKS and (n + nnz) * max(2, blocks) <= ROOT_MTKAHYPAR_MAX_WORK \
        and mtkahypar_available()


def metis_alone(n: int, max_nnz: int, graph_work: int, units: bool = False) -> bool:
    """Whether plan gives METIS alone to a split of n vertices and at most max_nnz edge
    entries, whatever its capacities: on a graph beyond the portfolio's size, every split
    below the top ones (partition.hierarchical then runs them in one C call)."""
    return graph_work > PORTFOLIO_MAX_WORK and not _small(graph_work, units) and n + max_nnz < graph_work / TOP_SHARE


def full_split(n: int, nnz: int, caps: list[int], graph_work: int, units: bool = False) -> bool:
    """Whether a split whose plan has KaHIP gets FULL_SPLIT_MTKAHYPAR's portfolio: parts
    filled exactly, on a graph beyond the portfolio's size where KaHIP would run eco, within
    Mt-KaHyPar's limits. partition.split_candidates then runs V-cycles from the lowest cut only."""
    return FULL_SPLIT_MTKAHYPAR and not _small(graph_work, units) and sum(caps) == n and len(set(caps)) == 1 \
        and len(caps) <= KAHIP_PRESET_MAX_BLOCKS and graph_work <= KAHIP_BIG_GRAPH_MAX_WORK \
        and n * len(caps) <= MTKAHYPAR_MAX_MEMORY and (n + nnz) * len(caps) <= MTKAHYPAR_MAX_WORK \
        and mtkahypar_available()


def plan(n: int, nnz: int, caps: list[int], graph_work: int, units: bool = False, skewed: bool = False) -> list[str]:
    """The partitioners a split of n vertices and nnz edge entries into these capacities
    affords: "metis" always; "kahip" (equal capacities; its preset recorded for kahip())
    or "mtkahypar" (from scratch: unequal ones, or the root split of a small graph) where
    small enough; "vcycles" (Mt-KaHyPar improving each candidate) where the graph is small
    enough to hand over. Measured on the tuning instances, V-cycles
    on METIS's and KaHIP's splits come within 0.3 % of the best of every partitioner
    at a quarter of the time. graph_work: the whole graph's vertices + edge entries; only
    the top splits (at least 1/TOP_SHARE of it each) get more than METIS, so that the
    levels below the top cost no more than METIS's. units: the vertices are units of work,
    many per core (UNITS_PER_CORE). skewed: the graph's degrees are skewed
    (partition.degree_skewed): Mt-KaHyPar from scratch wherever KaHIP would run (SKEWED_MTKAHYPAR)."""
    out = ["metis"]
    if n < MIN_VERTICES or not nnz:
        return out
    # on big graphs only the top splits (each a large share of the graph) get KaHIP and
    # Mt-KaHyPar: every level of the tree would cost as much as the whole graph again;
    # small graphs give KaHIP every split of TOP_MIN_VERTICES or more
    small = _small(graph_work, units)
    top = n + nnz >= graph_work / TOP_SHARE
    work = (n + nnz) * math.log2(max(2, len(caps)))
    cap = KAHIP_MAX_WORK if len(caps) > KAHIP_PRESET_MAX_BLOCKS else KAHIP_SMALL_GRAPH_MAX_WORK if small \
        else KAHIP_BIG_MAX_WORK if graph_work <= KAHIP_BIG_GRAPH_MAX_WORK else KAHIP_MAX_WORK
    units_small = _units_small(graph_work, units)
    if len(set(caps)) == 1 and (top or small and (units_small or n >= TOP_MIN_VERTICES)) and work <= max(cap, KAHIP_MAX_WORK):
        out.append("kahip")
        if len(_PRESET) > 1000:
            _PRESET.clear()
        _PRESET[(n, nnz, tuple(caps))] = kahip_preset(n, nnz, caps, graph_work, units)
    if "kahip" in out and full_split(n, nnz, caps, graph_work, units):      # (FULL_SPLIT_MTKAHYPAR's comment)
        _PRESET[(n, nnz, tuple(caps))] = "eco+slack"
        return out + ["mtkahypar", "vcycles"]
    # the size tests first: loading Mt-KaHyPar costs 0.3 s, for nothing on big graphs
    if n * len(caps) > MTKAHYPAR_MAX_MEMORY or graph_work > PORTFOLIO_MAX_WORK and not small \
            or not mtkahypar_available():
        return out
    if skewed and not units and SKEWED_MTKAHYPAR and "kahip" in out:     # (SKEWED_MTKAHYPAR's comment)
        out.remove("kahip")
        if (n + nnz) * max(2, len(caps)) <= MTKAHYPAR_MAX_WORK:
            out.append("mtkahypar")
        if n + nnz <= VCYCLE_MAX_WORK:
            out.append("vcycles")
        return out
    if not top:
        if not units and MID_MIN_GRAPH_WORK <= graph_work <= STRONG_GRAPH_MAX_WORK \
                and n + nnz >= graph_work / MID_SHARE:
            out.append("vcycles")
        return out
    root = small and (units_small or n >= KAHIP_STRONG_MIN_VERTICES) and n + nnz >= graph_work * ROOT_SHARE
    if (len(set(caps)) != 1 or root) and (n + nnz) * max(2, len(caps)) <= MTKAHYPAR_MAX_WORK:
        out.append("mtkahypar")
    if n + nnz <= VCYCLE_MAX_WORK:
        out.append("vcycles")
    return out
