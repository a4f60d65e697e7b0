"""Balancing link loads, after the cost-driven search: on a torus, a fat tree or a
dragonfly.

Minimizing hop-bytes can pile traffic onto a few links: a mapping a little cheaper than
block order may load its busiest link 1.5x more (measured on Angara-K1 with a 3-D
stencil); on a tree or a dragonfly the cost (a sum over pairs) does not see that one
subtree's uplinks, or one pair of groups' global link, carry more than the others. This
phase moves whole node contents — the ranks of two nodes of the same topology trade
places, each keeping its core — to lower the load of the busiest directed network link
(then the sum of squared link loads), accepting only moves that keep the network
hop-bytes within `tolerance` of where they started. The nodes' own links are left out:
moving node contents cannot change what a node sends. Everything is computed on the
node-level traffic, so a move costs one routing of at most nodes^2 pairs; machines of
more than MAX_NODES nodes (a torus; MAX_NODES_TREE for trees and dragonflies, whose
routes cost no walk) are left as the cost-driven search made them."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Torus

MAX_ROUNDS = 16   # the busiest links fall in the first rounds
TOP_GROUPS = 4    # groups tried per round: the heaviest users of the busiest link
SPREAD = 1.5      # below this ratio of busiest to mean link load there is nothing to balance
MAX_NODES = 128   # each candidate move re-routes the node-level traffic: beyond this it is too slow
MAX_NODES_TREE = 512


def _node_traffic(M: sp.spmatrix, machine: Machine, slot: np.ndarray) -> np.ndarray:
    c = sp.coo_matrix(M)
    a, b = machine.slot_node[slot[c.row]], machine.slot_node[slot[c.col]]
    x = a != b
    Q = np.zeros((machine.nnodes, machine.nnodes))
    np.add.at(Q, (a[x], b[x]), c.data[x])
    return Q


def balance(M: sp.spmatrix, machine: Machine, slot: np.ndarray, tolerance: float = 0.02) -> tuple[np.ndarray, dict]:
    net = machine.network
    cap = MAX_NODES if isinstance(net, Torus) else MAX_NODES_TREE
    if net is None or not hasattr(net, "crosses") or not 3 <= machine.nnodes <= cap:
        return slot, {}
    net_links = net.link_kinds() != "injection"     # what moving node contents can change
    n_of = machine.slot_node
    Q = _node_traffic(M, machine, slot)
    g_all, h_all = np.nonzero(Q)
    if not len(g_all):
        return slot, {}
    w_all = Q[g_all, h_all]
    # nodes trade contents only with their own kind: the same topology and the same cores given
    # (a machine reduced to some slots of each node: --fill spread, a scattered node set's counts)
    cores_of = [tuple(sorted(machine.slot_core[machine.slot_node == k].tolist())) for k in range(machine.nnodes)]
    kind = np.array([hash((t.spec, c)) for t, c in zip(machine.topos, cores_of)])
    pos = np.arange(machine.nnodes)                          # group g (the ranks now on node g) sits on node pos[g]
    loads = net.link_loads(pos[g_all], pos[h_all], w_all, injection=False).ravel()
    if not len(loads):
        return slot, {}                    # one switch: only the nodes' own links, which no move changes
    hop = float((w_all * net.hops(pos[g_all], pos[h_all])).sum())
    limit = hop * (1 + tolerance) + 1e-9
    start = (float(loads.max()), hop)
    used = loads[loads > 0]
    if isinstance(net, Torus) and start[0] < SPREAD * used.mean():
        return slot, {}                    # the traffic is already spread evenly over the links
    # the entries touching each group, as one CSR (group -> entry indices, ascending)
    ends = np.concatenate([g_all, h_all])
    ent = np.concatenate([np.arange(len(g_all))] * 2)
    order = np.lexsort((ent, ends))             # (no entry has g == h: Q's diagonal is zero)
    t_grp, t_ent = ends[order], ent[order]
    t_ptr = np.searchsorted(t_grp, np.arange(machine.nnodes + 1))

    def deltas(a, bs):
        """Load and hop changes for each candidate partner b of group a (one batched routing
        for all of them, no Python loop over the candidates: 4,000 candidates of a 1k-rank
        mapping on dense node traffic took seconds): when two groups trade nodes, only the
        routes touching them move."""
        bs = np.asarray(bs, dtype=np.int64)
        nb = len(bs)
        ta = t_ent[t_ptr[a]:t_ptr[a + 1]]
        cnt = t_ptr[bs + 1] - t_ptr[bs]
        rows = np.repeat(np.arange(nb), cnt)
        starts = np.repeat(t_ptr[bs], cnt)
        offs = np.arange(len(rows)) - np.repeat(np.cumsum(cnt) - cnt, cnt)
        tb = t_ent[starts + offs]
        in_a = np.zeros(len(g_all), bool)
        in_a[ta] = True
        nota = ~in_a[tb]                                    # entries of b not already among a's
        k = np.concatenate([np.repeat(np.arange(nb), len(ta)), rows[nota]])
        idx = np.concatenate([np.tile(ta, nb), tb[nota]])
        g, h, w = g_all[idx], h_all[idx], w_all[idx]
        b_of = bs[k]
        def moved(x):                                       # node of group x once a and b_of trade
            return np.where(x == a, pos[b_of], np.where(x == b_of, pos[a], pos[x]))
        ng, nh = moved(g), moved(h)
        og, oh = pos[g], pos[h]
        dh = np.bincount(k, weights=w * (net.hops(ng, nh) - net.hops(og, oh)), minlength=nb)
        dl = net.link_loads(np.concatenate([og, ng]), np.concatenate([oh, nh]), np.concatenate([-w, w]),
                            np.concatenate([k, k]), nb, injection=False).reshape(nb, -1)
        return dl, dh

    for _ in range(MAX_ROUNDS):
        hot = int(np.flatnonzero(net_links)[int(np.argmax(loads))])
        through = net.crosses(pos[g_all], pos[h_all], hot)
        # the groups that put the most bytes on the busiest link are the ones worth moving
        weight = np.zeros(machine.nnodes)
        np.add.at(weight, g_all[through], w_all[through])
        np.add.at(weight, h_all[through], w_all[through])
        involved = [int(x) for x in np.argsort(-weight)[:TOP_GROUPS] if weight[x] > 0]
        cur = (float(loads.max()), float((loads ** 2).sum()))
        best = None
        for a in involved:
            bs = [b for b in range(machine.nnodes) if b != a and kind[b] == kind[a]]
            if not bs:
                continue
            dl, dh = deltas(int(a), bs)
            nl = loads[None, :] + dl
            mx, sq = nl.max(axis=1), (nl ** 2).sum(axis=1)
            for k in np.flatnonzero(hop + dh <= limit):
                sc = (float(mx[k]), float(sq[k]))
                if sc < cur and (best is None or sc < best[0]):
                    best = (sc, int(a), bs[k], dl[k], float(dh[k]))
        if best is None:
            break
        _, a, b, dl, dh = best
        pos[a], pos[b] = pos[b], pos[a]
        loads = loads + dl
        hop += dh
    if (float(loads.max()), hop) == start or float(loads.max()) >= start[0]:
        return slot, {}
    new = slot.copy()                 # the ranks of group g move to node pos[g], each onto the same core
    by_node_core = {(int(n_of[s]), int(machine.slot_core[s])): s for s in range(machine.nslots)}
    for r, s_ in enumerate(slot):
        new[r] = by_node_core[(int(pos[int(n_of[s_])]), int(machine.slot_core[s_]))]
    return new, {"max_link_load_before": start[0], "max_link_load_after": float(loads.max())}
