"""Balancing link loads, after the cost-driven search: on a torus, a fat tree or a
dragonfly.

Minimizing hop-bytes can pile traffic onto a few links: a mapping a little cheaper than
block order may load its busiest link 1.5x more (measured on Angara-K1 with a 3-D
stencil); on a tree or a dragonfly the cost (a sum over pairs) does not see that one
subtree's uplinks, or one pair of groups' global link, carry more than the others. This
phase moves whole node contents — the ranks of two nodes of the same topology trade
places, each keeping its core — to lower the load of the busiest directed network link
(then the sum of squared link loads), accepting only moves that keep the network
hop-bytes and the cost within `tolerance` of where they started. The nodes' own links are
left out: moving node contents cannot change what a node sends. Everything is computed on the
node-level traffic, so a move costs one routing of at most nodes^2 pairs; machines of
more than MAX_NODES nodes (a torus; MAX_NODES_TREE for trees and dragonflies, whose
routes cost no walk) are left as the cost-driven search made them.

Then `balance_global`, on any machine whose network has global links (trees, Slurm's
switches, dragonflies; any size): never above block order on the busiest of them; and
`resplit_nodes` / `balance_nodes` where a node's own link is the busiest (full-bisection fat
trees): never above block order's busiest link there either."""
from __future__ import annotations

import time

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


def balance(M: sp.spmatrix, machine: Machine, slot: np.ndarray, tolerance: float = 0.02,
            deadline: float | None = None) -> tuple[np.ndarray, dict]:
    net = machine.network
    cap = MAX_NODES if isinstance(net, Torus) else MAX_NODES_TREE
    if net is None or not hasattr(net, "crosses") or not 3 <= machine.nnodes <= cap:
        return slot, {}
    # a torus of many more positions than nodes: its links in runs of equal load, each entry
    # standing for mult links (network.CompactLinks: 2048 x 2048 holding 8 nodes had arrays of
    # 16 M links per candidate move, 1.3 GB), else every link its own entry
    comp = net.compact_links() if isinstance(net, Torus) else None
    if comp is not None:
        route = lambda a, b, w, g=None, ng=1: comp.loads(net, a, b, w, g, ng)   # noqa: E731
        crosses = lambda a, b, link: comp.crosses(net, a, b, link)              # noqa: E731
        net_links = np.ones(comp.nlinks, bool)
        mult = comp.mult
    else:
        route = lambda a, b, w, g=None, ng=1: net.link_loads(a, b, w, g, ng, injection=False)   # noqa: E731
        crosses = net.crosses
        net_links = net.link_kinds() != "injection"     # what moving node contents can change
        mult = None
    n_of = machine.slot_node
    Q = _node_traffic(M, machine, slot)
    g_all, h_all = np.nonzero(Q)
    if not len(g_all):
        return slot, {}
    w_all = Q[g_all, h_all]
    kind, by_core, bounds = _node_kinds(machine)     # nodes trade contents only with their own kind
    pos = np.arange(machine.nnodes)                          # group g (the ranks now on node g) sits on node pos[g]
    loads = route(pos[g_all], pos[h_all], w_all).ravel()
    if not len(loads):
        return slot, {}                    # one switch: only the nodes' own links, which no move changes
    hop = float((w_all * net.hops(pos[g_all], pos[h_all])).sum())
    limit = hop * (1 + tolerance) + 1e-9
    # the cost too: on a tree or a dragonfly the level costs are not the hops (a dragonfly's
    # group/router/node costs: node swaps within 2 % of the hop-bytes raised the cost by up
    # to 14.5 %, a 1k-rank multi-physics job, for a busiest link 7 % lower); the nodes' own
    # contents do not move, so the inter-node part of the cost is all that changes
    rep = by_core[np.minimum(bounds[:-1], machine.nslots - 1)]   # a slot of each node
    nn = machine.nnodes
    dist = machine.distance(np.repeat(rep, nn), np.tile(rep, nn)).reshape(nn, nn)
    np.fill_diagonal(dist, 0.0)
    cost = float((w_all * dist[pos[g_all], pos[h_all]]).sum())
    cost_limit = cost * (1 + tolerance) + 1e-9
    start = (float(loads.max()), hop)
    used = loads[loads > 0]
    if isinstance(net, Torus) and start[0] < SPREAD * (
            used.mean() if mult is None else (used * mult[loads > 0]).sum() / mult[loads > 0].sum()):
        return slot, {}                    # the traffic is already spread evenly over the links
    # every pair's hops, read by each candidate move (routing its pairs again each time was a
    # third of the moves' scoring on a 10 x 10 mesh)
    hops = net.hops(np.repeat(np.arange(nn), nn), np.tile(np.arange(nn), nn)).reshape(nn, nn)
    # the entries touching each group, as one CSR (group -> entry indices, ascending)
    ends = np.concatenate([g_all, h_all])
    ent = np.concatenate([np.arange(len(g_all))] * 2)
    order = np.lexsort((ent, ends))             # (no entry has g == h: Q's diagonal is zero)
    t_grp, t_ent = ends[order], ent[order]
    t_ptr = np.searchsorted(t_grp, np.arange(machine.nnodes + 1))

    def deltas(a, bs):
        """Load, hop and cost changes for each candidate partner b of group a that keeps the
        hop-bytes and the cost within their limits (one batched routing for all of them, no
        Python loop over the candidates: 4,000 candidates of a 1k-rank mapping on dense node
        traffic took seconds): when two groups trade nodes, only the routes touching them
        move. The loads are routed only for the candidates within the limits (on a 10 x 10
        mesh most trades are not: the routing was most of the phase's time); each one's
        loads are summed as when all were routed. Returns (partners, dl, dh, dc)."""
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
        dh = np.bincount(k, weights=w * (hops[ng, nh] - hops[og, oh]), minlength=nb)
        dc = np.bincount(k, weights=w * (dist[ng, nh] - dist[og, oh]), minlength=nb)
        ok = (hop + dh <= limit) & (cost + dc <= cost_limit)
        m = int(ok.sum())
        if not m:
            return bs[ok], np.zeros((0, len(loads))), dh[ok], dc[ok]
        keep = ok[k]                                        # (order kept: the same sums per link)
        kk = (np.cumsum(ok) - 1)[k[keep]]
        og, oh, ng, nh, w = og[keep], oh[keep], ng[keep], nh[keep], w[keep]
        dl = route(np.concatenate([og, ng]), np.concatenate([oh, nh]), np.concatenate([-w, w]),
                   np.concatenate([kk, kk]), m).reshape(m, -1)
        return bs[ok], dl, dh[ok], dc[ok]

    for _ in range(MAX_ROUNDS):
        if deadline is not None and time.monotonic() > deadline:
            break                          # --time-limit: the swaps made so far stand
        hot = int(np.flatnonzero(net_links)[int(np.argmax(loads))])
        through = crosses(pos[g_all], pos[h_all], hot)
        # the groups that put the most bytes on the busiest link are the ones worth moving
        weight = np.zeros(machine.nnodes)
        np.add.at(weight, g_all[through], w_all[through])
        np.add.at(weight, h_all[through], w_all[through])
        involved = [int(x) for x in np.argsort(-weight)[:TOP_GROUPS] if weight[x] > 0]
        cur = (float(loads.max()), float((loads ** 2).sum() if mult is None else (mult * loads ** 2).sum()))
        best = None
        for a in involved:
            bs = [b for b in range(machine.nnodes) if b != a and kind[b] == kind[a]]
            if not bs:
                continue
            bs, dl, dh, dc = deltas(int(a), bs)
            nl = loads[None, :] + dl
            mx, sq = nl.max(axis=1), ((nl ** 2).sum(axis=1) if mult is None else (mult * nl ** 2).sum(axis=1))
            for k in range(len(bs)):
                sc = (float(mx[k]), float(sq[k]))
                if sc < cur and (best is None or sc < best[0]):
                    best = (sc, int(a), int(bs[k]), dl[k], float(dh[k]), float(dc[k]))
        if best is None:
            break
        _, a, b, dl, dh, dc = best
        pos[a], pos[b] = pos[b], pos[a]
        loads = loads + dl
        hop += dh
        cost += dc
    if (float(loads.max()), hop) == start or float(loads.max()) >= start[0]:
        return slot, {}
    # the ranks of group g move to node pos[g], each onto the slot at its own place in the node's
    # slots by core (nodes of one kind list the same cores in the same order): the same core,
    # and distinct slots where a core has several (units of work, --oversubscribe)
    place = np.empty(machine.nslots, dtype=np.int64)
    place[by_core] = np.arange(machine.nslots) - np.repeat(bounds[:-1], np.diff(bounds))
    new = by_core[bounds[pos[n_of[slot]]] + place[slot]]
    return new, {"max_link_load_before": start[0], "max_link_load_after": float(loads.max())}


GLOBAL_USERS = 4096  # units scored per round: the heaviest users of the busiest global link
GLOBAL_MOVERS = 8    # of those, tried: the ones whose move unloads that link most
GLOBAL_TARGETS = 4   # groups each may go to: the ones where it unloads the link most
GLOBAL_PARTNERS = 4  # units of that group each may trade places with: the same, the other way
GLOBAL_COSTED = 64   # improving swaps whose cost is computed: those that unload the link most
GLOBAL_PASS_SLACK = 32  # swaps a pass goes on past its best point before it is rolled back to it
GLOBAL_LONG_PASS = 256  # the same, once, after a pass that found nothing
GLOBAL_LONG_WORK = 10 ** 8  # ... on up to this many units x swaps
GLOBAL_MAX_SWAPS = 4000
GLOBAL_RANK_WORK = 2 * 10 ** 8  # rounds x ranks for the ranks' phase (10^6 ranks: 200 rounds)
DENSE_GROUP_ENTRIES = 1 << 22   # units x groups entries kept dense (two arrays of 32 MB at most)
RESPLIT_ROUNDS = 64     # resplit_groups: hot groups re-split with a neighbour, at most
RESPLIT_PARTNERS = 4    # neighbour groups tried for each (the ones it exchanges most bytes with)
RESPLIT_EXT_UNITS = 10 ** 7   # the outside bytes as METIS's second vertex weight, in all


def _node_kinds(machine: Machine) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(kind of each node, the slots node by node and by core, each node's first place in
    that order). Nodes of one kind have the same topology and the same cores given (a machine
    reduced to some slots of each node: --fill spread, a scattered node set's counts): their
    contents can trade places, each rank keeping its core."""
    by_core = np.lexsort((machine.slot_core, machine.slot_node))
    bounds = np.searchsorted(machine.slot_node[by_core], np.arange(machine.nnodes + 1))
    cores = machine.slot_core[by_core]
    kind = np.unique([hash((t.spec, cores[bounds[k]:bounds[k + 1]].tobytes()))
                      for k, t in enumerate(machine.topos)], return_inverse=True)[1]
    return kind, by_core, bounds


def global_loads(M: sp.spmatrix, machine: Machine, slot: np.ndarray) -> np.ndarray | None:
    """The loads of the network's global links (the links into the top of a tree, a
    dragonfly's links between groups) under the mapping; None on a network without them."""
    net = machine.network
    if not hasattr(net, "global_share") or net.groups.shape[1] < 2:
        return None                       # (one switch: its only links are the nodes' own)
    K, G = net.global_share()
    c = sp.coo_matrix(M)
    grp = net.groups[machine.slot_node[slot], 0]
    return group_traffic(c, grp, G) @ K


def group_traffic(c: sp.coo_matrix, grp: np.ndarray, G: int) -> np.ndarray:
    """The bytes from each group to each group (flat G x G) of the directed pairs c, each
    rank in group grp[rank]: the global links' loads are this times the network's shares."""
    return np.bincount(grp[c.row] * G + grp[c.col], weights=c.data, minlength=G * G)


def balance_global(M: sp.spmatrix, machine: Machine, slot: np.ndarray, target: float,
                   W: sp.spmatrix | None = None, deadline: float | None = None,
                   max_added: float | None = None) -> tuple[np.ndarray, dict]:
    """Moves until the busiest global link carries at most `target` bytes (block order's:
    never worse there than what the launcher gives). The cost sums bytes x distance over
    pairs and cannot see one group's uplinks, or one pair of groups' links, carry more than
    the others: on a dragonfly of 62 groups a random graph's mapping loaded the busiest
    global link 1.57 x block's (each part's sibling of the last bisection takes a large
    share of its traffic), AMR traffic on a fat tree of 16 leaves 1.03 x.

    First the contents of whole second-level units (a dragonfly's routers, a 3-level tree's
    leaf switches, else nodes) trade groups, each node's ranks keeping their cores; then, if
    the link is still above, single ranks (W, the symmetric graph the cost is taken on,
    scores their cost). M: the directed traffic without its diagonal. deadline
    (time.monotonic()): no round starts past it (the swaps so far are kept). max_added: the
    cost the moves may add in all (_swap_to_target)."""
    net = machine.network
    K, G = net.global_share()
    info = {"global_before": None, "swaps": 0, "cost_added": 0.0, "out_of_room": False}
    top = net.groups[:, 0]
    unit = net.groups[:, 1] if net.groups.shape[1] > 2 else np.arange(machine.nnodes)
    # ranks of a unit move with it: only units of the same shape (nodes of the same kinds and
    # cores given) trade places, node k of one onto node k of the other
    node_kind, by_core, bounds = _node_kinds(machine)
    uids, u_of_node = np.unique(unit, return_inverse=True)
    order = np.argsort(u_of_node, kind="stable")
    nodes_of = np.split(order, np.searchsorted(u_of_node[order], np.arange(1, len(uids))))
    shape = np.unique([hash(node_kind[x].tobytes()) for x in nodes_of], return_inverse=True)[1]
    rank_unit = u_of_node[machine.slot_node[slot]]
    c = sp.coo_matrix(M)
    nu = len(uids)
    if nu * nu <= DENSE_GROUP_ENTRIES:      # (10^6 ranks: 8 of 9 s of sparse summing avoided)
        key = rank_unit[c.row] * nu + rank_unit[c.col]
        Mu = np.bincount(key, weights=c.data, minlength=nu * nu).reshape(nu, nu)
        np.fill_diagonal(Mu, 0)
        Mu = sp.csr_matrix(Mu)
    else:
        x = rank_unit[c.row] != rank_unit[c.col]
        Mu = sp.csr_matrix((c.data[x], (rank_unit[c.row[x]], rank_unit[c.col[x]])), shape=(nu, nu))
        Mu.sum_duplicates()
    del c
    # two units' nodes first differ at the top level or at the units' own: a byte between them
    # costs one of two distances
    u_top = top[[x[0] for x in nodes_of]]
    rep = by_core[bounds[[x[0] for x in nodes_of]]]             # a slot of each unit
    d_far = float(machine.distance(rep[:1], rep[np.flatnonzero(u_top != u_top[0])[:1]])[0]) \
        if (u_top != u_top[0]).any() else 0.0
    near = [np.flatnonzero(u_top == g)[:2] for g in np.unique(u_top)]
    near = next((x for x in near if len(x) == 2), None)
    d_near = float(machine.distance(rep[near[:1]], rep[near[1:]])[0]) if near is not None else d_far
    # (the long pass is left to the last phase: the ranks')
    pos, got = _swap_to_target(Mu, None, np.arange(nu), u_top, shape, (d_near, d_far), K, G, target,
                               long_pass=W is None, deadline=deadline, max_added=max_added)
    if got:
        info.update(got)
        moved = np.empty(machine.nnodes, dtype=np.int64)      # node -> the node its ranks go to
        for k in range(nu):
            moved[nodes_of[k]] = nodes_of[pos[k]]
        nth = np.empty(machine.nslots, dtype=np.int64)       # a slot's place among its node's, by core
        nth[by_core] = np.arange(machine.nslots) - bounds[machine.slot_node[by_core]]
        slot = by_core[bounds[moved[machine.slot_node[slot]]] + nth[slot]]
    if W is not None and (not got or got["global_after"] > target):
        gpos = top[machine.slot_node]
        left = None if max_added is None else max_added - (got["cost_added"] if got else 0.0)
        pos, more = _swap_to_target(M, W, slot.copy(), gpos, np.zeros(machine.nslots, np.int64), machine.distance,
                                    K, G, target, deadline=deadline, max_added=left)
        if more:
            info["global_before"] = info["global_before"] or more["global_before"]
            info["global_after"] = more["global_after"]
            info["swaps"] += more["swaps"]
            info["cost_added"] += more["cost_added"]
            info["out_of_room"] |= more["out_of_room"]
            slot = pos
    return slot, (info if info["swaps"] or info["out_of_room"] else {})


NODE_LINKS_MAX_NODES = 1024   # node_link_share: nodes^2 rows (1,024 nodes: 2-4 M entries)
NODE_RANK_WORK = 3 * 10 ** 5  # balance_nodes: rounds x ranks (a round scans ranks x nodes: 40 ms at 10^4 x 320)


def node_link_share(machine: Machine):
    """(K, nodes, with global links): the loads of the global links (if any) and of the
    nodes' own links (each node's link out, then each node's link in, per link of its
    capacity) are P.ravel() @ K, P the nodes x nodes bytes between nodes; None where the
    network has no node links of its own (a torus, no network) or more than
    NODE_LINKS_MAX_NODES nodes."""
    from rankmap.mapper.network import Dragonfly, SwitchTree
    net, N = machine.network, machine.nnodes
    if not isinstance(net, (SwitchTree, Dragonfly)) or not 2 <= N <= NODE_LINKS_MAX_NODES:
        return None
    if isinstance(net, SwitchTree):
        k = net.groups.shape[1]
        cap = net._capacity(k - 1, net._sizes()[-1])[net.groups[:, -1]]
    else:
        cap = np.ones(N)
    g, h = np.divmod(np.arange(N * N), N)
    x = g != h
    g, h = g[x], h[x]
    own = sp.csr_matrix((np.concatenate([1 / cap[g], 1 / cap[h]]),
                         (np.concatenate([g * N + h] * 2), np.concatenate([g, N + h]))), shape=(N * N, 2 * N))
    parts = [own]
    if net.groups.shape[1] >= 2:                 # (one switch: only the nodes' own links)
        Kg, G = net.global_share()
        top = net.groups[:, 0]
        y = top[g] != top[h]
        R = sp.csr_matrix((np.ones(int(y.sum())), ((g * N + h)[y], (top[g] * G + top[h])[y])), shape=(N * N, G * G))
        parts.insert(0, sp.csr_matrix(R @ Kg))
    return sp.hstack(parts, format="csr"), N, len(parts) == 2


def scaled_share(share, global_target: float, node_target: float):
    """node_link_share's K with each link's load in units of its own kind's target (the
    global links' and the nodes' own), so that one target (1.0) bounds both."""
    K, N, has_global = share
    ng = K.shape[1] - 2 * N
    scale = np.concatenate([np.full(ng, 1 / global_target), np.full(2 * N, 1 / node_target)])
    return sp.csr_matrix(K @ sp.diags(scale)), N, has_global


def balance_nodes(M: sp.spmatrix, W: sp.spmatrix, machine: Machine, slot: np.ndarray, target: float, share,
                  deadline: float | None = None, max_added: float | None = None) -> tuple[np.ndarray, dict]:
    """Rank swaps between nodes until no node's own link and no global link carries more
    than `target`, in the units of `share` (scaled_share: 1.0, block order's busiest of each
    kind). The cost counts a byte between two nodes the same whichever nodes send it, so the
    cheapest mapping can leave one node sending far more than the others: AMR traffic on a
    full-bisection fat tree of 320 nodes loaded its busiest node link 1.27 x block's, and
    there the nodes' links are the network's busiest (predicted communication 1.32 x
    block's). The search is balance_global's (_swap_to_target) with the nodes as groups. M:
    the directed traffic without its diagonal; W: the symmetric graph the cost is taken on;
    share: scaled_share's."""
    K, N, _ = share
    hard = np.arange(K.shape[1]) < K.shape[1] - 2 * N          # the global links
    pos, got = _swap_to_target(M, W, slot.copy(), machine.slot_node, np.zeros(machine.nslots, np.int64),
                               machine.distance, K, N, target, deadline=deadline, hard=hard, rank_work=NODE_RANK_WORK,
                               max_added=max_added)
    return (pos, got) if got else (slot, {})


def resplit_nodes(graph, machine: Machine, slot: np.ndarray, target: float, seed: int, M: sp.spmatrix,
                  share) -> tuple[np.ndarray, dict]:
    """resplit_groups for the nodes' own links: the node whose link is busiest and a node
    under the same top switch (the global links unchanged) that it exchanges the most bytes
    with share their ranks again by a bisection balancing the ranks and the bytes they
    exchange with the other nodes (METIS, two constraints), kept only when it lowers the
    busier of the two nodes' links; each changed node's ranks are then placed inside it by
    the hierarchical partitioning. share: scaled_share's (target 1.0: block's busiest)."""
    from rankmap.mapper import partition
    K, N, _ = share
    node_scale = np.asarray(K[:, -2 * N:].max(axis=0).todense()).ravel()   # 1 / (capacity x target) per link
    top = machine.network.groups[:, 0]
    W = graph.W
    M = sp.csr_matrix(M)
    MT = M.T.tocsr()
    slot = slot.copy()
    node = machine.slot_node[slot].astype(np.int64)
    size = np.bincount(node, minlength=N)

    def own(x: np.ndarray, nd: np.ndarray) -> np.ndarray:
        """Bytes out of and into each node of x (node of every rank: nd)."""
        out = np.zeros(2 * len(x))
        for j, g in enumerate(x.tolist()):
            r = np.flatnonzero(nd == g)
            for side, A in ((0, M), (1, MT)):
                sub = A[r]
                out[side * len(x) + j] = sub.data[nd[sub.indices] != g].sum()
        return out

    c = M.tocoo()
    x = node[c.row] != node[c.col]
    loads = np.concatenate([np.bincount(node[c.row[x]], weights=c.data[x], minlength=N),
                            np.bincount(node[c.col[x]], weights=c.data[x], minlength=N)]) * node_scale
    del c
    start, tried, done, rounds = float(loads.max()), set(), 0, 0
    while loads.max() > target and rounds < RESPLIT_ROUNDS:
        rounds += 1
        a = int(np.argmax(loads)) % N
        ra = np.flatnonzero(node == a)
        rows = W[ra]
        shared = np.bincount(node[rows.indices], weights=rows.data, minlength=N)
        shared[a] = 0
        shared[top != top[a]] = 0
        found = {}

        def better(n2, b, U):
            ab = np.array([a, b])
            links = np.concatenate([ab, N + ab])
            new = own(ab, n2) * node_scale[links]
            found.update(links=links, new=new)
            return new.max() < loads[links].max() - 1e-9 * abs(loads[links].max())
        n2 = _resplit_round(W, node, a, ra, shared, seed, tried, float(loads.max()), better)
        if n2 is None:
            break
        node = n2
        loads[found["links"]] = found["new"]
        done += 1
    if not done:
        return slot, {}
    changed = np.flatnonzero(node != machine.slot_node[slot])
    for g in np.unique(np.concatenate([node[changed], machine.slot_node[slot[changed]]])).tolist():
        ranks = np.flatnonzero(node == g)
        root = machine.tree(np.array([g]))
        placed = partition.hierarchical(graph, machine, root, seed, ranks=ranks)
        slot[ranks] = placed[ranks]
    if not (np.bincount(node, minlength=N) == size).all():
        raise RuntimeError("internal error: a re-split changed a node's number of ranks")
    return slot, {"global_before": start, "global_after": float(loads.max()), "resplits": done}


def node_loads(M: sp.spmatrix, machine: Machine, slot: np.ndarray, share) -> np.ndarray:
    """The loads of node_link_share's links (share) under the mapping."""
    K, N, _ = share
    return group_traffic(sp.coo_matrix(M), machine.slot_node[slot], N) @ K


def resplit_groups(graph, machine: Machine, slot: np.ndarray, target: float, seed: int,
                   M: sp.spmatrix) -> tuple[np.ndarray, dict]:
    """Where the busiest global link is above `target` (block order's): the group it serves
    and a neighbour group share their ranks again, by a bisection of both groups' ranks
    that balances the ranks (each group keeps its count) and the bytes they exchange with the
    rest of the machine (METIS with two constraints), each group's ranks then placed inside
    it by the hierarchical partitioning. A tree's uplink carries its group's bytes to the
    rest: the cheapest mapping can give a few groups parts with a long boundary (AMR, 10^5
    ranks on 625 leaf switches: two parts at 1.6-1.7 x the bytes block order puts on the
    same uplinks, where rank swaps stall), and the two-constraint bisection evens them out
    at the same total cut. A re-split is kept only when it lowers the busiest global link
    (exactly, on the group-to-group traffic); RESPLIT_ROUNDS bounds the rounds.
    M: the directed traffic without its diagonal (the global links' loads)."""
    from rankmap.mapper import partition              # (the placement inside a group)
    net = machine.network
    K, G = net.global_share()
    top = net.groups[:, 0]
    W = graph.W
    M = sp.csr_matrix(M)
    MT = M.T.tocsr()
    slot = slot.copy()
    grp = top[machine.slot_node[slot]].astype(np.int64)
    c = M.tocoo()
    P = group_traffic(c, grp, G).reshape(G, G)
    del c
    loads = P.ravel() @ K
    start, tried, done, rounds = float(loads.max()), set(), 0, 0
    size = np.bincount(grp, minlength=G)

    def touching(U: np.ndarray, g_of: np.ndarray) -> np.ndarray:
        """The G x G bytes of the edges with an end in U (g_of: each rank's group)."""
        inU = np.zeros(len(grp), bool)
        inU[U] = True
        out = np.zeros((G, G))
        for A, flip in ((M, False), (MT, True)):
            sub = A[U]
            r = np.repeat(U, np.diff(sub.indptr))
            keep = ~inU[sub.indices] if flip else np.ones(len(r), bool)   # U-to-U edges counted once
            a, b = g_of[r[keep]], g_of[sub.indices[keep]]
            if flip:
                a, b = b, a
            np.add.at(out, (a, b), sub.data[keep])
        return out

    while loads.max() > target and rounds < RESPLIT_ROUNDS:
        rounds += 1
        hot = int(np.argmax(loads))
        S = K[:, [hot]].toarray().reshape(G, G)
        # the group whose bytes this link carries most: a tree's uplink serves one
        a = int(np.argmax((S * P).sum(axis=1) + (S * P).sum(axis=0)))
        ra = np.flatnonzero(grp == a)
        rows = W[ra]
        shared = np.bincount(grp[rows.indices], weights=rows.data, minlength=G)
        shared[a] = 0
        found = {}

        def better(g2, b, U):
            P2 = P - touching(U, grp) + touching(U, g2)
            found.update(P=P2, loads=P2.ravel() @ K)
            return found["loads"].max() < loads.max() - 1e-9 * abs(loads.max())
        g2 = _resplit_round(W, grp, a, ra, shared, seed, tried, float(loads[hot]), better)
        if g2 is None:
            break
        grp, P, loads = g2, found["P"], found["loads"]
        done += 1
    if not done:
        return slot, {}
    # each changed group's ranks on its own slots, placed as the partitioning places them
    changed = np.flatnonzero(grp != top[machine.slot_node[slot]])
    for g in np.unique(np.concatenate([grp[changed], top[machine.slot_node[slot[changed]]]])).tolist():
        ranks = np.flatnonzero(grp == g)
        nodes = np.flatnonzero(top == g)
        root = machine.tree(nodes)
        placed = partition.hierarchical(graph, machine, root, seed, ranks=ranks)
        slot[ranks] = placed[ranks]
    if not (np.bincount(grp, minlength=G) == size).all():
        raise RuntimeError("internal error: a re-split changed a group's number of ranks")
    return slot, {"global_before": start, "global_after": float(loads.max()), "resplits": done}


def _resplit_round(W: sp.csr_matrix, grp: np.ndarray, a: int, ra: np.ndarray, shared: np.ndarray, seed: int,
                   tried: set, load: float, better) -> np.ndarray | None:
    """One round of resplit_groups / resplit_nodes: group a's ranks (ra) and those of each of
    the RESPLIT_PARTNERS groups it shares the most bytes with (shared), in turn, split again
    (_two_constraint_split) until better(new grp, b, both groups' ranks) accepts one; that
    assignment, or None. tried: the (a, b, load) already tried (not again at the same load)."""
    for b in np.argsort(-shared, kind="stable")[:RESPLIT_PARTNERS].tolist():
        key = (a, b, load)
        if shared[b] <= 0 or key in tried:
            continue
        tried.add(key)
        U = np.concatenate([ra, np.flatnonzero(grp == b)])
        part = _two_constraint_split(W, U, len(ra), seed)
        if part is None:
            continue
        g2 = grp.copy()
        g2[U] = np.where(part == 0, a, b)
        if better(g2, b, U):
            return g2
    return None


def _two_constraint_split(W: sp.csr_matrix, U: np.ndarray, na: int, seed: int) -> np.ndarray | None:
    """U's ranks into two parts of na and len(U) - na ranks, the bytes each exchanges with
    ranks outside U halved between them, the least cut between them (METIS's recursive
    bisection with two vertex weights); None where METIS fails."""
    from rankmap.mapper import backends, libmetis
    n = len(U)
    pos = np.full(W.shape[0], -1, dtype=np.int64)
    pos[U] = np.arange(n)
    sub = W[U]
    inside = pos[sub.indices] >= 0
    r = np.repeat(np.arange(n), np.diff(sub.indptr))
    ext = np.bincount(r[~inside], weights=sub.data[~inside], minlength=n)
    A = sp.csr_matrix((sub.data[inside], (r[inside], pos[sub.indices[inside]])), shape=(n, n))
    if A.nnz == 0:
        return None
    scale = RESPLIT_EXT_UNITS / max(float(ext.sum()), 1e-300)
    vw = np.stack([np.ones(n, np.int64), np.rint(ext * scale).astype(np.int64)], axis=1)
    tp = [na / n, 0.5, (n - na) / n, 0.5]
    # (pymetis takes one target weight a block: two constraints need the system's METIS)
    with backends.c_stdout_quiet():
        part = libmetis.part_recursive(A.indptr, A.indices, backends._int_weights(A.data, 2.0 ** 30, np.int32), tp,
                                       30, backends.metis_seed(seed), vwgt=vw)
    if part is None:
        return None
    # exact counts: the least attached of an overfull side go across
    for side, want in ((0, na), (1, n - na)):
        mine = np.flatnonzero(part == side)
        if len(mine) > want:
            own = np.asarray(A[mine][:, mine].sum(axis=1)).ravel()
            part[mine[np.argsort(own, kind="stable")[:len(mine) - want]]] = 1 - side
    return part


def _swap_to_target(M: sp.spmatrix, W: sp.spmatrix | None, pos: np.ndarray, group_of_pos: np.ndarray,
                    kind: np.ndarray, dist, K: sp.csr_matrix, G: int, target: float,
                    long_pass: bool = True, deadline: float | None = None,
                    hard: np.ndarray | None = None, rank_work: int = GLOBAL_RANK_WORK,
                    max_added: float | None = None) -> tuple[np.ndarray, dict]:
    """The search behind balance_global, on units (ranks, or whole routers, switches, nodes):
    unit i sits on position pos[i], in group group_of_pos[pos[i]]; units trade positions
    when the positions' kinds agree; dist(pa, pb): the cost of a byte between positions
    (W: the symmetric graph the cost is taken on), or (near, far) for units that are whole
    subtrees under the top (W None: M's both ways), a byte costing `near` within a group.
    Each round takes the heaviest users of the busiest global link, scores trading places
    with the units of the groups where that unloads the link most (exactly, on the G x G
    group traffic: O(G) a candidate), and takes, of those that lower (busiest global load,
    sum of squares), the one with the least cost added per byte taken off that link.
    Passes in the manner of Fiduccia-Mattheyses: when no swap helps, the least bad is taken
    (each unit once a pass), and the pass is rolled back to its best point. hard: links (a
    mask of K's columns) that no swap may take above `target` (balance_nodes: the global
    links, kept where _global_links left them while the nodes' links come down). rank_work:
    rounds x units, at most (units: ranks). max_added: no pass goes on past adding this much
    cost in all (solve: beyond it a default order is returned instead; 64 masters' contiguous
    groups of 10^5 ranks on a switch tree ran 2,000 swaps, 160 s, for a mapping 1.24 x block)."""
    Kc = K.tocsc()
    M = sp.csr_matrix(M)
    if not M.has_canonical_format:      # (sorted rows: _entries; the caller's matrix left alone)
        M = M.copy()
        M.sum_duplicates()
    MT = M.T.tocsr()
    W = sp.csr_matrix(W) if W is not None else None
    n = M.shape[0]
    grp = group_of_pos[pos].astype(np.int64)
    c = M.tocoo()
    loads = group_traffic(c, grp, G) @ K
    del c
    start, swaps, added = float(loads.max()), 0, 0.0

    def to_groups(A: sp.csr_matrix, units: np.ndarray) -> np.ndarray:
        """Bytes from each of `units` to each group (rows of A: M out, MT in), dense len x G."""
        if dense is not None:
            return dense[int(A is MT)][units]
        sub = A[units]
        r = np.repeat(np.arange(len(units)), np.diff(sub.indptr))
        return np.bincount(r * G + grp[sub.indices], weights=sub.data, minlength=len(units) * G).reshape(-1, G)

    # few units (routers, switches, nodes): every unit's bytes to and from each group, kept
    # up to date at each swap instead of read off M's rows each round (10^6 ranks on 1,984
    # routers: 8 of 23 s)
    dense = None
    if n * G <= DENSE_GROUP_ENTRIES:
        dense = np.stack([to_groups(M, np.arange(n)), to_groups(MT, np.arange(n))])
    full = M.toarray() if n * n <= DENSE_GROUP_ENTRIES else None      # the pairs' own bytes

    def moved(u: int, a: int, b: int):
        """Unit u went from group a to group b: its neighbours' bytes to and from groups."""
        if dense is None:
            return
        for side, A in ((0, MT), (1, M)):              # who sends to u: their bytes to groups
            lo, hi = A.indptr[u], A.indptr[u + 1]
            x, w = A.indices[lo:hi], A.data[lo:hi]
            dense[side, x, a] -= w
            dense[side, x, b] += w

    def swap_costs(us: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """The cost change of each swap: the edges to the other units change length, the
        edge between the two does not."""
        out = np.zeros(len(us))
        for x, y in ((us, vs), (vs, us)):
            sub = W[x]
            k = np.repeat(np.arange(len(x)), np.diff(sub.indptr))
            keep = sub.indices != y[k]
            k, nb, w = k[keep], sub.indices[keep], sub.data[keep]
            out += np.bincount(k, weights=w * (dist(pos[y[k]], pos[nb]) - dist(pos[x[k]], pos[nb])), minlength=len(x))
        return out

    def pairs(locked: np.ndarray):
        """Candidate swaps (u, v), the busiest link, and the global loads after each."""
        hot = int(np.argmax(loads))
        S = Kc[:, hot].toarray().reshape(G, G)
        Ss = sp.csr_matrix(S) if np.count_nonzero(S) * 4 < S.size else None    # (_hot_deltas)
        if dense is not None:           # from the units' bytes to and from each group
            weight = (dense[0] * S[grp]).sum(axis=1) + (dense[1] * S.T[grp]).sum(axis=1)
        else:
            weight = _link_users(M, MT, S, grp, n)
        weight[locked] = 0
        users = np.flatnonzero(weight > 0)
        if len(users) > GLOBAL_USERS:
            users = np.sort(users[np.argpartition(-weight[users], GLOBAL_USERS)[:GLOBAL_USERS]])
        if not len(users):
            return None
        d_u = _hot_deltas(to_groups(M, users), to_groups(MT, users), S, grp[users], Ss)
        movers = np.argsort(d_u.min(axis=1), kind="stable")[:GLOBAL_MOVERS]
        pu, pv, pa, pb = [], [], [], []
        partners = {}                      # (A, B, kind) -> the units of B whose move to A unloads the link most
        for k in movers:
            u, A = int(users[k]), int(grp[users[k]])
            d = d_u[k].copy()
            d[A] = np.inf
            for B in np.argsort(d, kind="stable")[:GLOBAL_TARGETS]:
                B, key = int(B), (A, int(B), int(kind[pos[u]]))
                if key not in partners:
                    cand = np.flatnonzero((grp == B) & ~locked & (kind[pos] == key[2]))
                    dv = _hot_delta_to(to_groups(M, cand), to_groups(MT, cand), S, B, A)
                    partners[key] = cand[np.argsort(dv, kind="stable")[:GLOBAL_PARTNERS]]
                for v in partners[key]:
                    pu.append(u), pv.append(int(v)), pa.append(A), pb.append(B)
        if not pu:
            return None
        pu, pv, pa, pb = map(np.array, (pu, pv, pa, pb))
        npair = len(pu)
        uniq_u, inv_u = np.unique(pu, return_inverse=True)
        ou, iu = to_groups(M, uniq_u)[inv_u], to_groups(MT, uniq_u)[inv_u]
        uniq_v, inv_v = np.unique(pv, return_inverse=True)
        ov, iv = to_groups(M, uniq_v)[inv_v], to_groups(MT, uniq_v)[inv_v]
        if full is not None:
            muv, mvu = full[pu, pv], full[pv, pu]
        else:
            muv, mvu = _entries(M, pu, pv), _entries(M, pv, pu)
        ar = np.arange(npair)
        # the pair's own bytes move separately: u -> v goes from (A, B) to (B, A), v -> u back
        ou[ar, pb] -= muv
        iu[ar, pb] -= mvu
        ov[ar, pa] -= mvu
        iv[ar, pa] -= muv
        dout, din = ov - ou, iv - iu            # row A gains v's and loses u's; row B the reverse
        gi = np.arange(G)
        rows = np.concatenate([pa[:, None] * G + gi, pb[:, None] * G + gi,
                               gi * G + pa[:, None], gi * G + pb[:, None],
                               (pa * G + pb)[:, None], (pb * G + pa)[:, None]], axis=1)
        vals = np.concatenate([dout, -dout, din, -din, (mvu - muv)[:, None], (muv - mvu)[:, None]], axis=1)
        # (rows with repeated columns: the product sums them)
        dP = sp.csr_matrix((vals.ravel(), rows.ravel(), np.arange(npair + 1) * rows.shape[1]), shape=(npair, G * G))
        if W is None:                           # the cost on the group vectors: near within a group, far across
            tu, tv = ou + iu, ov + iv
            dcost = (dist[1] - dist[0]) * (tu[ar, pa] - tu[ar, pb] + tv[ar, pb] - tv[ar, pa])
        else:
            dcost = None
        return pu, pv, hot, sp.csr_matrix(dP @ K), dcost

    def score(x: np.ndarray) -> tuple:
        return float(x.max()), float((x ** 2).sum())

    def trade(u: int, v: int):
        a, b = int(grp[u]), int(grp[v])
        pos[u], pos[v] = pos[v], pos[u]
        grp[u], grp[v] = b, a
        moved(u, a, b)
        moved(v, b, a)

    slack = GLOBAL_PASS_SLACK
    rounds = GLOBAL_MAX_SWAPS if W is None else max(1, min(GLOBAL_MAX_SWAPS, rank_work // n))
    out_of_room = False
    steps = 0                               # every round counts, the rolled-back ones too
    while loads.max() > target and swaps < GLOBAL_MAX_SWAPS and steps < rounds:
        locked = np.zeros(n, bool)
        done, best_at, best_score, spent, best_added = [], 0, score(loads), 0.0, 0.0
        climbed = False                     # a swap that made it worse was taken this pass
        while len(done) - best_at < slack and swaps + len(done) < GLOBAL_MAX_SWAPS and steps < rounds:
            if max_added is not None and added + spent > max_added:
                out_of_room = True
            if deadline is not None and time.monotonic() > deadline or out_of_room:
                steps = rounds              # (the pass is rolled back to its best point below)
                break
            steps += 1
            got = pairs(locked)
            if got is None:
                break
            pu, pv, hot, delta, dcost = got
            cur = score(loads)
            mx, sq = _scores(loads, delta)
            red = -delta[:, hot].toarray().ravel()
            allowed = np.ones(len(mx), bool) if hard is None else ~_exceeds(loads, delta, hard, target)
            ok = ((mx < cur[0]) | ((mx <= cur[0]) & (sq < cur[1]))) & (red > 0) & allowed
            if ok.any():
                idx = np.flatnonzero(ok)
                # the cost of the ones that take the most off the link (rows of W are long)
                idx = idx[np.argsort(-red[idx], kind="stable")[:GLOBAL_COSTED]]
                dc = dcost[idx] if dcost is not None else swap_costs(pu[idx], pv[idx])
                j = int(np.argmin(dc / red[idx]))
                k, cost = int(idx[j]), float(dc[j])
            else:
                if not allowed.any():
                    break
                k = int(np.flatnonzero(allowed)[np.lexsort((sq[allowed], mx[allowed]))[0]])
                climbed = True
                cost = float(dcost[k] if dcost is not None else swap_costs(pu[k:k + 1], pv[k:k + 1])[0])
            trade(int(pu[k]), int(pv[k]))
            locked[pu[k]] = locked[pv[k]] = True
            done.append((int(pu[k]), int(pv[k]), loads))
            loads = loads + delta[k].toarray().ravel()
            spent += cost
            if score(loads) < best_score:
                best_at, best_score, best_added = len(done), score(loads), spent
                if loads.max() <= target or climbed:
                    break                   # (past a climb: a new pass, its ranks free again)
        for u, v, before in reversed(done[best_at:]):        # back to the pass's best point
            trade(u, v)
            loads = before
        swaps += best_at
        added += best_added
        if not best_at:
            # a pass found nothing: once, a longer one (AMR traffic on a fat tree of 8 leaves:
            # 90 swaps to get the busiest leaf's uplinks from 1.017 to 1.000 x block's)
            if not long_pass or slack >= GLOBAL_LONG_PASS or n * GLOBAL_LONG_PASS > GLOBAL_LONG_WORK:
                break
            slack = GLOBAL_LONG_PASS
    if not swaps:
        return pos, ({"global_before": start, "global_after": start, "swaps": 0, "cost_added": 0.0,
                      "out_of_room": True} if out_of_room else {})
    return pos, {"global_before": start, "global_after": float(loads.max()), "swaps": swaps, "cost_added": added,
                 "out_of_room": out_of_room}


def _exceeds(loads: np.ndarray, delta: sp.csr_matrix, hard: np.ndarray, target: float) -> np.ndarray:
    """Which rows of delta take a `hard` link above target (by raising it)."""
    r = np.repeat(np.arange(delta.shape[0]), np.diff(delta.indptr))
    up = hard[delta.indices] & (delta.data > 0) & (loads[delta.indices] + delta.data > target)
    return np.bincount(r, weights=up, minlength=delta.shape[0]) > 0


def _scores(loads: np.ndarray, delta: sp.csr_matrix, top: int = 8) -> tuple[np.ndarray, np.ndarray]:
    """(busiest load, sum of squares) of loads + each row of the sparse delta, reading only
    each row's nonzeros: the busiest link a row does not touch is the first of the `top`
    busiest it leaves alone (its row made dense only when it touches all of them)."""
    r = np.repeat(np.arange(delta.shape[0]), np.diff(delta.indptr))
    old = loads[delta.indices]
    new = old + delta.data
    sq = float((loads ** 2).sum()) + np.bincount(r, weights=new ** 2 - old ** 2, minlength=delta.shape[0])
    mx = np.full(delta.shape[0], -np.inf)
    np.maximum.at(mx, r, new)
    best = np.argsort(-loads, kind="stable")[:top]
    hit = delta[:, best].toarray() != 0
    free = ~hit
    first = free.argmax(axis=1)
    rest = np.where(free.any(axis=1), loads[best][first], np.nan)
    for k in np.flatnonzero(~free.any(axis=1)):
        row = loads.copy()
        row[delta.indices[delta.indptr[k]:delta.indptr[k + 1]]] = -np.inf
        rest[k] = row.max()
    return np.maximum(mx, rest), sq


def _link_users(M: sp.csr_matrix, MT: sp.csr_matrix, S: np.ndarray, grp: np.ndarray, n: int) -> np.ndarray:
    """Each unit's bytes on the link whose share of group g's bytes to group h is S[g, h]
    (both ends of an edge count it). Only the edges that can cross it are read: S's
    nonzeros covered by whole rows (a group's senders, M's rows) and whole columns (its
    receivers, MT's rows), the cheaper first, each nonzero read once. A tree's uplink is
    a row and a column of S: its group's ranks' rows, not all of M (AMR, 10^5 ranks on 625
    leaf switches: the rank phase read every row each round)."""
    nz = S != 0
    if nz.sum() * 4 >= nz.size:                  # S mostly nonzero (Valiant routes): every sender's row
        by_row = nz.any(axis=1)
    else:
        # greedy cover: a group's row (or column) while it covers nonzeros no other pick did,
        # the most per rank read first (a few picks: S's nonzeros lie on a few rows and columns)
        per = 1.0 / np.maximum(np.bincount(grp, minlength=S.shape[0]), 1)
        by_row = np.zeros(S.shape[0], bool)
        left = nz.copy()
        while left.any():
            r_gain, c_gain = left.sum(axis=1) * per, left.sum(axis=0) * per
            g, h = int(np.argmax(r_gain)), int(np.argmax(c_gain))
            if r_gain[g] >= c_gain[h]:
                by_row[g] = True
                left[g] = False
            else:
                left[:, h] = False
    Srow = np.where(by_row[:, None], S, 0.0)     # nonzeros read from the senders' rows
    Scol = S - Srow                              # the rest, from the receivers' rows
    weight = np.zeros(n)
    for A, Sx, side in ((M, Srow, by_row), (MT, Scol.T, Scol.any(axis=0))):
        src = np.flatnonzero(side[grp])
        if not len(src):
            continue
        sub = A[src]
        r = np.repeat(src, np.diff(sub.indptr))
        on_hot = sub.data * Sx[grp[r], grp[sub.indices]]
        weight += np.bincount(r, weights=on_hot, minlength=n) + np.bincount(sub.indices, weights=on_hot, minlength=n)
    return weight


def _hot_delta_to(out: np.ndarray, inn: np.ndarray, S: np.ndarray, b: int, a: int) -> np.ndarray:
    """_hot_deltas' column a for ranks all in group b: two products with S's rows and
    columns instead of every group's (10^5 ranks on 625 leaf switches: 5,019 calls, 3.5 s)."""
    return out @ (S[a] - S[b]) + inn @ (S[:, a] - S[:, b])


def _entries(M: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """M[rows[k], cols[k]] for a few k, read off M's sorted rows (scipy's fancy indexing
    costs milliseconds a call)."""
    out = np.zeros(len(rows))
    for k, (r, c) in enumerate(zip(rows.tolist(), cols.tolist())):
        lo, hi = M.indptr[r], M.indptr[r + 1]
        j = lo + int(np.searchsorted(M.indices[lo:hi], c))
        if j < hi and M.indices[j] == c:
            out[k] = M.data[j]
    return out


def _hot_deltas(out: np.ndarray, inn: np.ndarray, S: np.ndarray, src: np.ndarray,
                Ss: sp.csr_matrix | None = None) -> np.ndarray:
    """(ranks x G): the change of the busiest link's load if rank k (bytes `out[k]` to and
    `inn[k]` from each group) alone moved from group src[k] to each group; S[g, h]: the share
    of the bytes from group g to group h that the link carries. Ss: S as a sparse matrix
    where most of it is zero (a tree's uplink: a row and a column of 625 x 625; dense
    products of 4,096 ranks' rows took 16 of a 10^5-rank step's 29 s)."""
    if Ss is not None:
        X, Y = (Ss @ out.T).T, (Ss.T @ inn.T).T
    else:
        X, Y = out @ S.T, inn @ S
    ar = np.arange(len(src))
    return X + Y - (X[ar, src] + Y[ar, src])[:, None]
