"""Hierarchical partitioning down the machine tree (the Angara scheme, generalized): at each
tree node the ranks assigned to it are split among its children, each child taking at
most its capacity, by the partitioners of mapper/backends.py (the lowest cut after an
exact capacity repair wins); each split is oriented so that its parts land nearest the
ranks they talk to outside. Ranks on one socket are equivalent for the cost, so the last
split (into cores) keeps the order."""
from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import scipy.sparse as sp
from scipy.optimize import linear_sum_assignment

from rankmap.mapper import backends, libmetis
from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine, TreeNode
from rankmap.mapper.network import Torus
from rankmap.mapper.refine import Problem, split_groups, subgraph


STRUCTURED = 0.5      # METIS's cut below this share of a random split's: the graph has structure to find
STRUCTURED_BIG = 0.1  # the same on big graphs (backends.PORTFOLIO_MAX_WORK): meshes 0.01-0.05, random 0.3+
QAP_ITERATIONS = 3000   # tabu steps placing the parts on the nodes (O(nodes^2) each)
QAP_MAX_NODES = 256     # the tabu search keeps a nodes x nodes table

# Graphs above this many ranks do their small splits (at most SMALL_SPLIT ranks: inside a
# node, or into two halves across nodes) a whole level at a time in C (refine.split_groups),
# not one METIS call, capacity repair and orientation each (~0.7 ms of calls per split, 4.7*10^4
# splits at 10^6 ranks). Below it every split keeps METIS (the 1k and 10k instances the
# portfolio was tuned on), and so do units of work (their own portfolio rules) and graphs of
# skewed degrees (hierarchical: the local search did worse after them). The C split
# (greedy starts, then Fiduccia-Mattheyses) cuts as little as METIS up to 64 ranks (0.93-0.98
# of METIS's cut on stencil and random subgraphs of 64), not beyond (256: 1.35-1.54): it has
# no coarsening. The bigger splits across nodes that METIS alone would cut (backends.metis_alone:
# below the top ones, on graphs beyond the portfolio's size) run a level at a time in C
# too, METIS called from there (the system's 32-bit libmetis, where installed): the Python
# around each call (subgraph arrays, capacity repair, orientation) cost twice METIS's time.
BATCHED_SPLITS_ABOVE = 20_000
SMALL_SPLIT = 64
# Skewed graphs above this many ranks on a machine with a network are batched too (hierarchical)
SKEWED_BATCHED_ABOVE = 50_000
SKEWED_BATCHED_NETWORKS = True
# Greedy starts per small split where the top splits found no structure (split_candidates'
# verdict: random-like traffic), 0 = smallsplit.c's rule (8 starts, 1 in huge batches)
UNSTRUCTURED_STARTS = 1
# On those graphs a split METIS alone cuts into parts of at most this many ranks (a
# dragonfly's router into 16 nodes, a fat tree's leaf switch into 32) is its recursive
# bisection only: its k-way split there took 4x the time and cut 5-23 % more (recursive
# bisection cut less on 95 % of them; 10^5 ranks, random and stencil traffic). Into bigger
# parts (a group into its routers) k-way stays a candidate: without it 10^5 random ranks on
# a fat tree cost 0.27 % more
BATCHED_RB_PART = 64

# A subtree whose ranks fill at least this share of its slots uses all its children: the
# slack then lets the partitioner cut less, and an idle child gains nothing
FULL = 0.9


def live_children(n: int, caps: list[int], fill: str) -> list[int]:
    """Which children take the n ranks: 'packed' the fewest, in (spatial) order, unless the
    ranks nearly fill them all (FULL); 'spread' every child. Each live child takes at most
    its capacity: the slack is for the partitioner to use."""
    if fill == "spread" or n >= FULL * sum(caps):
        return [i for i, c in enumerate(caps) if c > 0]
    out, room = [], 0
    for i, c in enumerate(caps):
        if room >= n:
            break
        if c > 0:
            out.append(i)
            room += c
    return out


class _Sub:
    """The traffic of a set of ranks rk, as plain arrays: the internal graph in local numbering
    (CSR: indptr, col, w, plus the row of each entry) and the edges leaving the set (local
    row, global column, weight), extracted in C (refine.subgraph): every level of the tree
    reads all the edges again, 10^7 of them at 10^6 ranks. csr: _int64_csr(W)."""

    def __init__(self, csr: tuple, rk: np.ndarray, pos: np.ndarray):
        self.n = len(rk)
        self._row = None
        if self.n == len(csr[0]) - 1 and np.array_equal(rk, np.arange(self.n)):
            # the whole graph in its own order (the top split): its arrays, not a copy of them
            # (384 MB at 10^6 ranks, held while METIS needs its most)
            self.indptr, self.col, self.w = csr
            self.ext_row = self.ext_col = np.zeros(0, dtype=np.int64)
            self.ext_w = np.zeros(0)
            return
        self.indptr, row, col, w, nin = subgraph(*csr, rk, pos)
        self.col, self.w = col[:nin], w[:nin]
        # the rows of the inside entries are rebuilt when asked for, after the partitioner has
        # run (on the top split of 10^6 ranks they are 128 MB while METIS needs its most)
        self.ext_row, self.ext_col, self.ext_w = row[nin:].copy(), col[nin:], w[nin:]

    @property
    def row(self) -> np.ndarray:
        if self._row is None:
            self._row = np.repeat(np.arange(self.n), np.diff(self.indptr))
        return self._row

    @property
    def nnz(self) -> int:
        return len(self.col)

    def cut(self, part: np.ndarray) -> float:
        return float(self.w[part[self.row] != part[self.col]].sum())


def _int64_csr(W: sp.csr_matrix) -> tuple:
    """W's arrays as the C kernels read them (int64 indices: a copy only where scipy chose
    int32; graph.from_traffic's graphs are int64 already)."""
    return (np.ascontiguousarray(W.indptr, dtype=np.int64), np.ascontiguousarray(W.indices, dtype=np.int64),
            np.ascontiguousarray(W.data, dtype=np.float64))


# CPU seconds per vertex + edge entry of one call, measured on a 10^5-rank AMR graph's root
# bisection (93,312 ranks, 928,132 entries) on this 2-core machine: Mt-KaHyPar 1.27 s, its
# V-cycles 1.82 s, KaHIP (fast) 0.20 s; with margin. Used only under --time-limit. KaHIP's is
# the least it takes (a call predicted past the deadline even so does not start); one that
# could take long is stopped at the deadline (backends.KAHIP_SECONDS_PER_UNIT_MAX)
MTKAHYPAR_SECONDS_PER_UNIT = 1.5e-6
VCYCLES_SECONDS_PER_UNIT = 2.0e-6
KAHIP_SECONDS_PER_UNIT = 0.3e-6
# ... and Mt-KaHyPar's time per call whatever the size (its flows and initial partitioning):
# V-cycles of a 1,024-rank split into 100 nodes took 0.27 s where 2.0e-6 per unit predicted 0.06
MTKAHYPAR_CALL_SECONDS = 0.1
# ... and the most they took: random partners of wide weights, 10^4 ranks into 20 leaf
# switches of unequal sizes, from scratch 2.6 s (13.6 us per unit where 1.5 were planned). A
# call that could end past the deadline at these rates runs in a forked child stopped there
# (backends.forked_call; KaHIP's: backends.KAHIP_SECONDS_PER_UNIT_MAX)
MTKAHYPAR_SECONDS_PER_UNIT_MAX = 15e-6
VCYCLES_SECONDS_PER_UNIT_MAX = 20e-6


def split(sub: _Sub, caps: list[int], seed: int, graph_work: int | None = None,
          verdict: dict | None = None, units: bool = False, keep: tuple | None = None,
          deadline: float | None = None, skewed: bool = False, tree_split: bool = False,
          batched: bool = False, hubs: bool = False) -> np.ndarray:
    """The ranks of `sub` into len(caps) parts of at most caps[b] ranks: the lowest cut of
    split_candidates."""
    return split_candidates(sub, caps, seed, graph_work, only_part=True, verdict=verdict, units=units,
                            keep=keep, deadline=deadline, skewed=skewed, tree_split=tree_split,
                            batched=batched, hubs=hubs)[0][1]


def split_candidates(sub: _Sub, caps: list[int], seed: int, graph_work: int | None = None,
                     only_part: bool = False, verdict: dict | None = None, units: bool = False,
                     keep: tuple | None = None, deadline: float | None = None, skewed: bool = False, tree_split: bool = False,
                     batched: bool = False, hubs: bool = False) -> list:
    """(cut, part) of every split the partitioners the split's size affords give
    (backends.plan: METIS, KaHIP or Mt-KaHyPar, then Mt-KaHyPar's V-cycles from each),
    repaired to the capacities; lowest cut first, duplicates removed. only_part: a single
    candidate's cut is not computed (NaN; split's thousands of small splits). verdict: shared
    by the splits of one graph; the first split that tests for structure records it there
    (a graph whose top split finds none is left to METIS below too: the subsets of a random
    graph induce sparser random graphs, which pass the test, and KaHIP and Mt-KaHyPar then
    took seconds per split for nothing: 20k random ranks 6.5 s, 3x 50k's). units: the
    graph's vertices are units of work, many per core (units_of_work). keep: which of the
    plan's partitioners may run (None: all; "metis" always does). deadline (time.monotonic(),
    --time-limit): past it no further partitioner starts (METIS's split always stands).
    skewed: the graph's degrees are skewed (degree_skewed): V-cycles from the lowest-cut
    candidate only, and for one rank per vertex Mt-KaHyPar in KaHIP's place (backends.plan).
    tree_split: a split of hierarchical's machine tree (the root's gets Mt-KaHyPar from
    scratch on small graphs: backends.ROOT_MTKAHYPAR_MAX_WORK). batched: hierarchical batches
    the graph's small splits (BATCHED_SPLITS_ABOVE); a split METIS alone cuts is then its
    recursive bisection only where its parts are small (BATCHED_RB_PART). hubs: the graph is
    hubs and their spokes (hub_dominated): Mt-KaHyPar from scratch wherever KaHIP would run,
    whatever METIS's cut says of the structure."""
    graph_work = sub.n + sub.nnz if graph_work is None else graph_work
    k = len(caps)
    if sub.n <= k or sub.nnz == 0:
        # nothing to partition: no traffic (in order, in proportion to the capacities), or no
        # more ranks than parts (the first parts filled, the ranks kept together). METIS would
        # print "too many parts" on stdout, into a --json report
        part = in_order(sub.n, caps) if sub.n > k else \
            np.searchsorted(np.cumsum(caps), np.arange(sub.n), side="right").astype(np.int64)
        return [(math.nan if only_part else sub.cut(part), part)]
    how = [h for h in backends.plan(sub.n, sub.nnz, caps, graph_work, units, skewed or hubs)
           if keep is None or h in keep + ("metis",)]
    # METIS alone into parts of at most BATCHED_RB_PART: its recursive bisection only, on batched
    # graphs and on big graphs of skewed degrees (not batched: their splits come one at a time
    # here). social/100k/switch4's 391 splits of a leaf switch into 16 nodes: k-way took 7 ms
    # each where recursive bisection took 2 ms, and cut 23 % more (40 of them); the mapping
    # 11.3 -> 7.4 s, its cost 0.99995x, the other social/100k tune instances the same
    rb_only = how == ["metis"] and sub.n <= BATCHED_RB_PART * len(caps) \
        and (batched or skewed and graph_work > backends.PORTFOLIO_MAX_WORK)
    cands = backends.metis(sub.indptr, sub.col, sub.w, caps, seed, kway=sub.n <= 50000 and not rb_only)
    # KaHIP's and Mt-KaHyPar's times grow fast on expander-like graphs (random partners:
    # KaHIP 16 s where a mesh of the same size takes 0.1 s), where a better cut gains
    # little: they are used only where METIS cut clearly less than a random split would
    # (measured: real codes' graphs 0.03-0.45 of a random split's cut, random graphs 0.6-0.75)
    structured = STRUCTURED if graph_work <= backends.PORTFOLIO_MAX_WORK else STRUCTURED_BIG
    if how == ["metis"] and len(cands) == 1:               # the many small splits of a big machine
        part = repair(sub, cands[0], caps)
        cut = math.nan if only_part else sub.cut(part)
        if verdict is not None and not verdict and tree_split and k == 2:
            # the first split of the tree, a bisection (a big graph's root gets METIS alone),
            # records the verdict too: the batched small splits below take one start on
            # unstructured traffic. (Into more parts a mesh's cut share grows past the
            # thresholds: stencils on trees of 4+ children read as unstructured.)
            verdict["structured"] = _shows_structure(sub.cut(part) if math.isnan(cut) else cut, sub, k, structured)
        return [(cut if not only_part else math.nan, part)]
    mt = None
    verdict = {} if verdict is None else verdict
    if how != ["metis"] and verdict.get("structured") is False and not hubs:
        how = ["metis"]
    if how != ["metis"] and not hubs:      # (METIS's cut of stars says nothing of their structure)
        cands = [repair(sub, p, caps) for p in cands]     # (repaired once: repair leaves a fitting split as it is)
        found = _shows_structure(min(sub.cut(p) for p in cands), sub, k, structured)
        verdict.setdefault("structured", found)
        if not found:
            how = ["metis"]
    # the root of the machine tree of a small graph of ranks: Mt-KaHyPar from scratch too,
    # structured or not (backends.ROOT_MTKAHYPAR_MAX_WORK; units of work have their own rules)
    if tree_split and not skewed and not units and "mtkahypar" not in how and (keep is None or "mtkahypar" in keep) \
            and sub.n + sub.nnz >= graph_work * backends.ROOT_SHARE and backends.root_mtkahypar(sub.n, sub.nnz, k):
        how.append("mtkahypar")
    def late(per_unit: float = 0.0, fixed: float = 0.0) -> bool:
        # past the deadline, or the call would end past it (its time predicted from the
        # split's size: a 10^5-rank root split's Mt-KaHyPar run and V-cycles took 3 s of a
        # 4 s --time-limit, and the search after it none; plus Mt-KaHyPar's own per call)
        return deadline is not None and time.monotonic() + fixed + per_unit * (sub.n + sub.nnz) > deadline
    if "kahip" in how and not late(KAHIP_SECONDS_PER_UNIT):
        root = units and k <= backends.ROOT_SEEDS_MAX_BLOCKS and sub.n + sub.nnz >= graph_work * backends.ROOT_SHARE
        cands.extend(backends.kahip_candidates(sub.indptr, sub.col, sub.w, caps, seed,
                                               strong_seeds=backends.ROOT_SEEDS if root else 1, units=units,
                                               vcycles="vcycles" in how, deadline=deadline))
    if "mtkahypar" in how or "vcycles" in how:
        once = sub.row < sub.col
        full = backends.full_split(sub.n, sub.nnz, caps, graph_work, units)
        mt = backends.MtKaHyPar(sub.row[once], sub.col[once], sub.w[once], sub.n, caps, seed,
                               preset=backends.mtkahypar_preset(k, "mtkahypar" in how),
                               ip_runs=backends.ip_runs(sub.n, k, units),
                               jet_rounds=backends.FULL_SPLIT_JET_ROUNDS if full else None,
                               jet_iterations=backends.FULL_SPLIT_JET_ITERATIONS if full else None,
                               vcycles=backends.FULL_SPLIT_VCYCLES if full else None)
    def bounded(call, per_unit_max: float, *args):
        # (None: stopped at the deadline)
        return backends.within(deadline, MTKAHYPAR_CALL_SECONDS + per_unit_max * (sub.n + sub.nnz), call, *args)
    if "mtkahypar" in how and not late(MTKAHYPAR_SECONDS_PER_UNIT, MTKAHYPAR_CALL_SECONDS):
        cands.append(bounded(mt.partition, MTKAHYPAR_SECONDS_PER_UNIT_MAX))
    out, seen = [], set()
    cands = [repair(sub, p, caps) for p in cands if p is not None]
    refine = set(range(len(cands)))
    if (skewed or backends.full_split(sub.n, sub.nnz, caps, graph_work, units)) and "vcycles" in how and len(cands) > 1:
        cuts = [sub.cut(p) for p in cands]
        refine = {min(range(len(cands)), key=lambda i: (cuts[i], i))}
    starts = set()
    for i, part in enumerate(cands):
        # a candidate equal to an earlier one (METIS's recursive and k-way splits, KaHIP's, once
        # repaired, are often the same split) adds nothing: its V-cycles would give the earlier
        # one's result again (improve() depends only on its start: MtKaHyPar's docstring), and
        # both are among the splits seen. 40 of the 900 V-cycle runs of the 1k tune set
        start = part.tobytes()
        if start in starts:
            continue
        starts.add(start)
        for p in ((part, bounded(mt.improve, VCYCLES_SECONDS_PER_UNIT_MAX, part))
                  if "vcycles" in how and i in refine and not late(VCYCLES_SECONDS_PER_UNIT, MTKAHYPAR_CALL_SECONDS)
                  else (part,)):
            if p is None:
                continue
            p = repair(sub, p, caps)
            key = _canonical(p)
            if key not in seen:
                seen.add(key)
                out.append((sub.cut(p), p))
    out.sort(key=lambda cp: cp[0])
    return out


def _shows_structure(cut: float, sub: _Sub, k: int, threshold: float) -> bool:
    """A k-way cut below `threshold` times a random k-way split's expected cut ((1 - 1/k)
    of all the weight): structure KaHIP and Mt-KaHyPar can exploit."""
    return bool(cut <= threshold * (1 - 1 / k) * sub.w.sum())


def _canonical(part: np.ndarray) -> bytes:
    """The same split whatever its parts are called: parts renumbered by first appearance."""
    _, first, inv = np.unique(part, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first)] = np.arange(len(first))
    return rank[inv].astype(np.int32).tobytes()


def repair(sub: _Sub, part: np.ndarray, caps: list[int]) -> np.ndarray:
    """Part sizes within the capacities: move vertices out of overfull parts where that
    costs least (gains from the sparse edges, never an n x k table)."""
    k = len(caps)
    sizes = np.bincount(part, minlength=k)
    excess = sizes - np.array(caps)
    if not (excess > 0).any():
        return part
    part = part.copy()
    own = np.bincount(sub.row, weights=sub.w * (part[sub.row] == part[sub.col]), minlength=sub.n)
    # candidate moves: a vertex of an overfull part to a part with room it is connected to
    e = (excess[part[sub.row]] > 0) & (excess[part[sub.col]] < 0)
    key, inv = np.unique(sub.row[e] * k + part[sub.col[e]], return_inverse=True)
    to = np.bincount(inv, weights=sub.w[e], minlength=len(key))
    v, b = key // k, key % k
    order = np.lexsort((b, v, -(to - own[v])))           # best gain first, ties in a fixed order
    moved = np.zeros(sub.n, bool)
    over = int(excess[excess > 0].sum())
    for i in order.tolist():
        x, y = int(v[i]), int(b[i])
        a = part[x]
        if moved[x] or excess[a] <= 0 or excess[y] >= 0:
            continue
        part[x] = y
        moved[x] = True
        excess[a] -= 1
        excess[y] += 1
        over -= 1
        if not over:        # the rest would all be skipped (a random graph's cut: 10^5 candidates)
            break
    # what is still over goes where there is most room, the least attached vertices first
    for a in np.flatnonzero(excess > 0):
        verts = np.flatnonzero((part == a) & ~moved)
        for x in verts[np.argsort(own[verts], kind="stable")][:excess[a]]:
            y = int(np.argmin(excess))
            part[x] = y
            excess[a] -= 1
            excess[y] += 1
    return part


def settled(node: TreeNode, machine: Machine) -> bool:
    """A subtree whose slots are all alike (a leaf, or leaves of equal cost): its ranks take
    them in order, nothing is split below it. Kept on the node (a tree belongs to one machine):
    network_start's hierarchical per node asks it again of every subtree."""
    got = node.__dict__.get("_settled")
    if got is None:
        got = not node.children or all(not c.children for c in node.children) and machine.same_cost(node.slots)
        node.__dict__["_settled"] = got
    return got


def degree_skewed(graph: Graph) -> bool:
    """Whether the graph's degrees are skewed (coefficient of variation above
    backends.SKEWED_DEGREE_CV: collaboration and trust networks, not meshes or point sets).
    Kept on the graph: a sort of every degree, and network_start asks once per node."""
    got = graph.__dict__.get("_skewed")
    if got is None:
        deg = np.sort(np.diff(graph.W.indptr))
        # without the 1 % highest degrees: the real codes' graphs have a few hubs (rank 0 talks to
        # all: CV up to 5.7 at 2,048 ranks, 0.2 without them), the networks a heavy tail
        deg = deg[: len(deg) - max(1, len(deg) // 100)]
        got = len(deg) > 1 and float(deg.std()) > backends.SKEWED_DEGREE_CV * max(float(deg.mean()), 1e-12) \
            and not hub_dominated(graph)
        graph.__dict__["_skewed"] = got
    return got


# Hubs and their spokes, not a social network: the HUB_SHARE of ranks of the highest degrees
# are on at least HUB_BYTES of the bytes (masters and their workers; social traffic 0.41-0.48,
# the fresh families' 5 % hub ranks 0.29-0.44). Such a graph is not `skewed`, and its splits
# get Mt-KaHyPar wherever KaHIP would run, whatever METIS's cut says (split_candidates'
# hubs): METIS's matching contracts one spoke of a star per level, KaHIP's and Scotch's
# coarsening did no better, and METIS's cut reads as no structure. 16 masters of 71
# round-robin workers each: METIS's 4-way split cut 3.1 x Mt-KaHyPar's, the mapping 1.18 x
# (fresh2/mw-16-rr-1152/mixsw, 1.053 x Mt-KaHyPar's Steiner-tree mapping, now 0.89 x);
# 64 masters of 10,240 ranks on a switch tree: 1.26 x putting each master's workers
# together in block order (KaHIP eco 1.25 x, Scotch 1.48 x, Mt-KaHyPar's multisection 0.93 x)
HUB_SHARE = 0.02
HUB_BYTES = 0.8
HUB_ONE = 0.6
# ... up to this many ranks: 512 masters of 10^5 ranks on dragonflies, tori and 3-level
# trees mapped to the same cost (8 digits) with METIS's splits, in 0.45-0.65 x the time
HUB_MAX_RANKS = 50_000


def hub_dominated(graph: Graph) -> bool:
    got = graph.__dict__.get("_hubs")
    if got is None:
        W = graph.W.tocsr()
        n = W.shape[0]
        deg = np.diff(W.indptr)
        k = max(1, int(HUB_SHARE * n))
        hub = np.zeros(n, dtype=bool)
        hub[np.argpartition(-deg, k - 1)[:k] if k < n else np.arange(n)] = True
        row = np.repeat(np.arange(n), deg)
        touch = hub[row] | hub[W.indices]
        total = float(W.data.sum())
        got = total > 0 and float(W.data[touch].sum()) >= HUB_BYTES * total
        if got:
            # stars: a spoke sends most of its bytes to one hub (its master); spokes of many
            # hubs each (1 % of 10^4 ranks with 1,000 random partners) are no failure of
            # METIS's, and Mt-KaHyPar at every top split took 10-32 s there for 0.2-1.9 %
            spoke = ~hub[row] & hub[W.indices]
            top = np.zeros(n)
            np.maximum.at(top, row[spoke], W.data[spoke])
            out = np.bincount(row, weights=W.data, minlength=n)
            got = float(top[~hub].sum()) >= HUB_ONE * float(out[~hub].sum())
        graph.__dict__["_hubs"] = got
    return got


def units_of_work(n: int, machine: Machine) -> bool:
    """Whether n ranks on this machine are units of work, many per core (--oversubscribe
    for a graph partition, as in the field's standard benchmark): backends.plan then affords
    the partitioners' strong settings on bigger graphs (backends.UNITS_PER_CORE)."""
    if n < backends.UNITS_PER_CORE * machine.nnodes:      # every node has a core: no need to count them
        return False
    cores = machine.__dict__.get("_cores")      # a property of the machine: computed once (O(slots))
    if cores is None:
        key = machine.slot_node * (int(machine.slot_core.max()) + 1) + machine.slot_core
        step = np.diff(key)
        # slots are built node by node, core by core: distinct cores are the changes of the key
        cores = int(np.count_nonzero(step)) + 1 if (step >= 0).all() else np.unique(key).size
        machine.__dict__["_cores"] = cores
    return n >= backends.UNITS_PER_CORE * cores


# a light partitioning (hierarchical's `light`): its first split with METIS and V-cycles
# from METIS's splits only, the splits below with METIS alone
LIGHT_FIRST = ("metis", "vcycles")
LIGHT_BELOW = ("metis",)


def hierarchical(graph: Graph, machine: Machine, root: TreeNode, seed: int, fill: str = "packed",
                 ranks: np.ndarray | None = None, light: bool = False, deadline: float | None = None) -> np.ndarray:
    """slot_of_rank for the ranks (default all) placed under `root`. light: a cheaper
    partitioning (LIGHT_FIRST, LIGHT_BELOW), another seed's start next to a full one.
    deadline (time.monotonic(), --time-limit): the splits after it get METIS alone (the
    strong portfolio took a minute on a 16k-vertex social graph on an 8x8x8 torus).

    The tree is processed breadth-first, so that when a subtree's ranks are split every
    other rank already sits in some subtree of the same depth; the parts are then given to
    the children (Hungarian method among children of equal capacity) so that each part
    lands nearest the ranks it talks to outside (dual recursive bipartitioning). On graphs
    above BATCHED_SPLITS_ABOVE ranks a level's small splits, and on graphs beyond the
    portfolio's size the splits METIS alone would cut, run together in C, after its others."""
    ranks = np.arange(graph.n) if ranks is None else ranks
    slot = np.full(graph.n, -1, dtype=np.int64)
    where = np.full(graph.n, root.slots[0], dtype=np.int64)   # a representative slot of each rank's subtree
    pos = np.full(graph.n, -1, dtype=np.int64)
    csr = _int64_csr(graph.W)
    units = units_of_work(graph.n, machine)
    skewed = degree_skewed(graph)
    hubs = graph.n <= HUB_MAX_RANKS and hub_dominated(graph)
    mark = np.full(machine.nnodes, -1, dtype=np.int64)
    verdict: dict = {}
    # not on skewed degrees: social/100k/tree3 cost 2.6 % more with the C splits (the local
    # search gained less from them, though they cut less: 0.46 of METIS's in-node cut)
    # (under --time-limit they are, skewed or not: 11,600 splits one by one took 9 s of a 5 s limit
    # on social/100k/torus)
    # Skewed graphs of more than SKEWED_BATCHED_ABOVE ranks on a machine with a network (torus,
    # mesh, switch tree: SKEWED_BATCHED_NETWORKS) are batched after all (issue 13, 10^5 ranks in
    # 5 s): social/100k/torus took 10.3-10.6 s of CPU one split at a time, 5.9-6.2 s batched, costs
    # 0.991 (tune seeds 0 and 1); on the switch tree 5.3-6.0 -> 4.5-5.1 s, costs 1.001-1.002. On the
    # plain tree (no network) they still cost 2.75 % more (social/100k/tree3/s0): not there
    batched = graph.n > BATCHED_SPLITS_ABOVE and not units and (
        not skewed or deadline is not None
        or SKEWED_BATCHED_NETWORKS and graph.n > SKEWED_BATCHED_ABOVE and machine.network is not None)
    metis_entry = libmetis.recursive_entry() if batched else None
    graph_work = graph.n + graph.W.nnz
    degree = np.diff(csr[0])
    oriented = None                              # the machine as the C code reads it (batched splits)
    level = [(ranks, root)]
    depth = 0
    while level:
        nxt = []
        batch: dict = {}          # (parts, across nodes) -> [(rk, node, live, caps, place in nxt)]
        for rk, node in level:
            if settled(node, machine):
                slot[rk] = node.slots[: len(rk)]   # equivalent slots: keep the order
                where[rk] = slot[rk]
                continue
            caps = [c.capacity for c in node.children]
            live = live_children(len(rk), caps, fill)
            if len(live) == 1:
                nxt.append((rk, node.children[live[0]]))
                continue
            tl = [caps[i] for i in live]
            if batched:
                inside = machine.slot_node[node.slots[0]] == machine.slot_node[node.slots[-1]]
                if len(rk) <= SMALL_SPLIT:
                    how = "small"
                elif metis_entry and not inside and len(live) == 2 \
                        and backends.metis_alone(len(rk), int(degree[rk].sum()), graph_work, units):
                    how = "metis"
                else:
                    how = None
                if how and (inside or len(live) == 2):   # inside a node every part is as far from the rest
                    batch.setdefault((how != "metis", len(live), not inside), []).append((rk, node, live, tl, len(nxt)))
                    nxt.extend([None] * len(live))
                    continue
            sub = _Sub(csr, rk, pos)
            if sub.nnz == 0 or len(rk) <= len(live):
                part = in_order(len(rk), tl)                       # nothing to gain: keep the order
            else:
                keep = (LIGHT_FIRST if len(rk) == len(ranks) else LIGHT_BELOW) if light else None
                if deadline is not None and time.monotonic() > deadline:
                    keep = LIGHT_BELOW
                part = split(sub, tl, seed + 7919 * depth, graph.n + graph.W.nnz, verdict, units, keep, deadline,
                             skewed, tree_split=True, batched=batched, hubs=hubs)
            kids = _orient(sub, node, part, [node.children[i] for i in live], tl, where, machine, mark)
            for j, child in enumerate(kids):
                members = rk[part == j]
                where[members] = child.slots[0]
                nxt.append((members, child))
        for (small, k, across), items in sorted(batch.items()):    # METIS's first, as they came
            if across and oriented is None:
                oriented = Problem(graph, machine)
            gptr = np.cumsum([0] + [len(it[0]) for it in items])
            heads = np.array([[node.children[i].slots[0] for i in live] for _, node, live, _, _ in items])
            part = split_groups(*csr, np.concatenate([it[0] for it in items]), gptr, np.array([it[3] for it in items]),
                                seed + 7919 * depth, pos, heads, where, oriented if across else None,
                                None if small else metis_entry, UNSTRUCTURED_STARTS if verdict.get("structured") is False else 0)
            for (rk, node, live, _, at), lo, hi in zip(items, gptr[:-1], gptr[1:]):
                p = part[lo:hi]
                for j, i in enumerate(live):
                    nxt[at + j] = (rk[p == j], node.children[i])
        level = nxt
        depth += 1
    return slot


def network_start(graph: Graph, machine: Machine, seed: int, time_cap: float = 1e9) -> np.ndarray | None:
    """slot_of_rank by partitioning then mapping: the ranks cut into one part per node (the
    split portfolio, capacities = the nodes' slots), the parts placed on the nodes by a
    quadratic-assignment search on the network's own distances, then each node split down
    its internals. The alternative to bisecting the network where nodes are not all equally
    far apart (tori, meshes, switch trees, dragonflies); None where it does not apply.
    time_cap: seconds for the placement search (--time-limit's; it ran its QAP_ITERATIONS
    whatever the limit: 1.4 s on 216 nodes under --time-limit 0.5)."""
    k = machine.nnodes
    if machine.network is None or not 3 <= k <= QAP_MAX_NODES:
        return None
    t0 = time.monotonic()
    # --time-limit: the split into nodes too starts no partitioner predicted to end past the cap
    # (it had none: 1.2 s of a 1k-rank mapping under --time-limit 1, which ended at 1.75 s)
    deadline = t0 + time_cap if time_cap < 1e8 else None
    per = machine.slots_by_node()
    reps = np.array([p[0] for p in per])
    nodes = replace(machine, slot_node=np.arange(k), slot_core=machine.slot_core[reps], lvl=machine.lvl[reps])
    a, b = np.triu_indices(k, 1)
    if np.ptp(nodes.distance(a, b)) == 0:
        return None                                           # all nodes equally far: the cut is all
    n = graph.n
    sub = _Sub(_int64_csr(graph.W), np.arange(n), np.full(n, -1, dtype=np.int64))
    caps = [len(p) for p in per]
    # nodes of unequal size: no Mt-KaHyPar from scratch, 0.3-0.7 s of a 1k-rank mapping into 48
    # nodes for the same final costs (tune families on such nodes behind switches: geometric
    # mean 1.0000, 2 of 30 within 0.1 %); the parts rarely fit other nodes than their own.
    # Off a torus (switch trees, dragonflies) neither, whatever the nodes: on the 1k tune
    # instances on switch4 and hetero3 (22) they changed no mapping for 7.6 % of the CPU (held
    # out: 17 on switch4, 10 %); on tori they do (mesh and AMR 1.6-2.8 % dearer without them)
    units = units_of_work(n, machine)
    full = len(set(caps)) == 1 and isinstance(machine.network, Torus)
    part = split(sub, caps, seed, n + graph.W.nnz, units=units, skewed=degree_skewed(graph),
                 hubs=n <= HUB_MAX_RANKS and hub_dominated(graph),
                 keep=None if full else ("vcycles",), deadline=deadline)
    Q = sp.csr_matrix((sub.w, (part[sub.row], part[sub.col])), shape=(k, k))
    Q.setdiag(0)
    Q.eliminate_zeros()
    qap = Problem(Graph(W=Q.tocsr()), nodes)
    # part p goes to node place[p]; under --time-limit in half the time left, the other half for
    # the nodes' own splits below and the search after (tabu took all of it, and 224 nodes'
    # splits 0.7 s more: 3.7 s under --time-limit 3)
    place, _, _ = qap.tabu(np.arange(k), seed, QAP_ITERATIONS,
                           max(0.0, time_cap - (time.monotonic() - t0)) / (2 if deadline is not None else 1))
    sizes = np.bincount(part, minlength=k)
    if (sizes > np.array(caps)[place]).any():
        place = np.arange(k)                                  # unequal nodes: each part keeps its own
    node = place[part]
    slot = np.full(n, -1, dtype=np.int64)
    leaves = {int(machine.slot_node[t.slots[0]]): t for t in node_subtrees(machine.tree(), machine)}
    for v in range(k):
        rk = np.flatnonzero(node == v)
        if len(rk):
            slot[rk] = hierarchical(graph, machine, leaves[v], seed, ranks=rk, deadline=deadline)[rk]
    return slot


def node_subtrees(root: TreeNode, machine: Machine) -> list:
    """The subtrees of root that hold one node each, in the tree's order."""
    out, stack = [], [root]
    while stack:
        t = stack.pop()
        nd = machine.slot_node[t.slots]
        if (nd == nd[0]).all():
            out.append(t)
        else:
            stack.extend(reversed(t.children))
    return out


def in_order(n: int, caps: list[int]) -> np.ndarray:
    """n ranks in order over parts of the given capacities, spread in proportion to them."""
    share = np.array(caps, dtype=float) * n / sum(caps)
    sizes = np.floor(share).astype(int)
    for i in np.argsort(-(share - sizes), kind="stable")[: n - int(sizes.sum())]:
        sizes[i] += 1
    return np.repeat(np.arange(len(caps)), sizes)


def _orient(sub: _Sub, node: TreeNode, part: np.ndarray, children: list, sizes: list, where: np.ndarray,
            machine: Machine, mark: np.ndarray) -> list:
    """Which child each part goes to: among children of the same capacity, the assignment that
    puts the parts' traffic with ranks outside this subtree over the shortest distances.
    mark: one -1 per node, left so."""
    k = len(children)
    if len(set(sizes)) == len(sizes) or not len(sub.ext_col):
        return children                           # no two children of one size, or no outside traffic
    if machine.slot_node[node.slots[0]] == machine.slot_node[node.slots[-1]]:
        return children                           # inside one node: everyone outside is as far from each part
    if not isinstance(machine.network, Torus):
        # a tree of levels (switches, dragonfly groups, one switch): a slot outside this
        # subtree first differs from each child's slots at the same level, above the children,
        # so every child is as far from it (the distances, computed and found equal, took
        # 12.8 s of a 10^6-rank mapping on a fat tree: 1,024 leaf switches)
        return children
    src_part = part[sub.ext_row]
    w = sub.ext_w
    heads = np.array([c.slots[0] for c in children])
    # a torus: whole nodes here, the rest in other nodes: machine.distance's torus term per
    # destination node, the distinct nodes found in O(edges) through a per-node mark (a
    # sort, np.unique, dominated the 10^4-10^5 splits of a 10^6-rank torus)
    dst = machine.slot_node[where[sub.ext_col]]
    idx = np.arange(len(dst))
    mark[dst] = idx                                # one occurrence of each node wins
    first = mark[dst]
    mark[dst] = -1
    isrep = first == idx
    inv = (np.cumsum(isrep) - 1)[first]
    reps = dst[isrep]
    hn = machine.slot_node[heads]
    hops = machine.network.hops(np.repeat(hn, len(reps)), np.tile(reps, k)).reshape(k, len(reps))
    d = machine.acc[machine.node_level] + machine.hop_cost * (hops - 1)
    if (d == d[0]).all():                         # every child is as far from the rest: keep the order
        return children
    cost = np.stack([np.bincount(src_part, weights=w * d[j][inv], minlength=k) for j in range(k)], axis=1)
    assign = list(range(k))
    by_size = {}
    for j, sz in enumerate(sizes):
        by_size.setdefault(sz, []).append(j)
    for group in by_size.values():               # parts can only trade children of their own size
        if len(group) > 1:
            r, c = linear_sum_assignment(cost[np.ix_(group, group)])
            for a, b in zip(r, c):
                assign[group[a]] = group[b]
    return [children[assign[j]] for j in range(k)]
