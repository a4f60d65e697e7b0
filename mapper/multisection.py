"""Mt-KaHyPar's multisection of the machine as a start of the search: the ranks split top
down, one level of the machine at a time, by Mt-KaHyPar with no imbalance (each child its
even share in proportion to its slots), the parts given to the children in order.

Why: on a real code at a weak network (NPB CG 16 on Desmos at /16, docs/real-apps.md) the
mapping of the Mt-KaHyPar multisection competitor was the best, and predict's run estimate
ranked it first, but rankmap's own starts never produced it: below 200 ranks rankmap's splits
are METIS's alone (backends.plan), whose cuts of a small graph fall into other basins, and
the tree's splits of a torus go two sub-tori at a time where the competitor cuts all nodes
at once. Here the network above the nodes is one level (the nodes in the tree's order; on a
switch tree or a torus cut into sub-tori the tree's own levels are the same nodes in the same
order), then each node's own levels. Mt-KaHyPar is a runtime dependency (backends); without
it there is no such start. Only for the final choice by the network model (solve.other_starts)."""
from __future__ import annotations

import math

import numpy as np

from rankmap.mapper import backends
from rankmap.mapper.graph import Graph
from rankmap.mapper.machine import Machine, TreeNode
from rankmap.mapper.partition import _int64_csr, _Sub, in_order, live_children, node_subtrees, repair, settled

# Above this many ranks there is no such start (a split per subtree with Mt-KaHyPar from
# scratch; the final choice by a run's replay is for traces of tens to hundreds of ranks)
MAX_RANKS = 4096
# Mt-KaHyPar's preset, the competitor's: on NPB CG 16 Desmos its DEFAULT (and QUALITY) split
# cut more bytes than its deterministic presets and METIS, and ran faster (the run estimate:
# 0.956 of block's time against 0.980)
PRESET = "DEFAULT"


def available(n: int) -> bool:
    return n <= MAX_RANKS and backends.mtkahypar_available()


def node_level(root: TreeNode, machine: Machine) -> TreeNode:
    """The tree with everything above the nodes as one level: the root's children are the
    nodes' subtrees, in the tree's order."""
    nodes = node_subtrees(root, machine)
    if len(nodes) == 1:
        return nodes[0]
    return TreeNode(np.concatenate([t.slots for t in nodes]), nodes, "nodes")


def shares(m: int, caps: list[int]) -> list[int]:
    """No imbalance: each child at most its even share of the m ranks in proportion to its
    slots (rounded up), never above its slots."""
    total = sum(caps)
    return [min(c, math.ceil(m * c / total)) for c in caps]


def multisection(graph: Graph, machine: Machine, seed: int = 0, root: TreeNode | None = None) -> np.ndarray | None:
    """Slot of each rank by Mt-KaHyPar's multisection of the machine, or None where it does
    not run (Mt-KaHyPar missing, more than MAX_RANKS ranks)."""
    n = graph.n
    if not available(n):
        return None
    top = node_level(root or machine.tree(), machine)
    csr = _int64_csr(graph.W)
    pos = np.full(n, -1, dtype=np.int64)
    slot = np.full(n, -1, dtype=np.int64)
    calls = 0
    level = [(np.arange(n), top)]
    while level:                          # breadth first: the splits' seeds in a fixed order
        nxt = []
        for rk, node in level:
            if settled(node, machine):
                slot[rk] = node.slots[: len(rk)]
                continue
            caps = [c.capacity for c in node.children]
            live = live_children(len(rk), caps, "packed")
            kids = [node.children[i] for i in live]
            if len(kids) == 1:
                nxt.append((rk, kids[0]))
                continue
            want = shares(len(rk), [caps[i] for i in live])
            sub = _Sub(csr, rk, pos)
            if sub.nnz == 0 or len(rk) <= len(kids):
                part = in_order(len(rk), want)
            else:
                once = sub.row < sub.col
                part = backends.MtKaHyPar(sub.row[once], sub.col[once], sub.w[once], sub.n, want,
                                          seed + calls, PRESET).partition()
                part = repair(sub, part, want)
                calls += 1
            for j, child in enumerate(kids):
                nxt.append((rk[part == j], child))
        level = nxt
    return slot
