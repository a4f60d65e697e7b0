"""`rankmap predict`: the communication time of a traffic matrix under a mapping, estimated
analytically from the network's parameters, without running anything (the network-model
approach of the SpMV scalability study, on rankmap's machine model).

Inputs per ordered pair of ranks (i, j): bytes M_ij and messages C_ij (a profile or trace
gives both; a matrix without counts is taken as one message per pair). Per pair, the
alpha-beta cost of the route the pair's messages take:
    alpha_ij = loopback latency (same node) or hops x link latency (dimension-order routes;
               up and down a switch tree)
    beta_ij  = loopback bandwidth, or the link bandwidth (capped by the node's NIC)
The estimate is the classic alpha-beta sum of a latency term and a bandwidth term:
    latency    max over ranks i of sum_j C_ij alpha_ij: a rank starts its messages one
               after another; or, given the traffic's trace (an SMPI trace: the order of
               every rank's sends, receives, waits and collectives), the latency on the
               trace's critical path (rankmap.mapper.critpath), which counts only the
               latencies that wait for each other
    bandwidth  the largest of four times the run cannot beat:
      serial     max over ranks i of sum_j M_ij / beta_ij (a sender's bytes in turn:
                 blocking sends, pipelines)
      links      max over directed links of the bytes routed over it / link bandwidth
      nic        max over nodes of the bytes its router passes (sent, received and transit:
                 SimGrid's limiter) / NIC bandwidth
      bisection  bytes crossing the cut that halves the torus's longest dimension / that
                 cut's bandwidth (the all-to-all bound)
The bound that decides is reported: it says what to change (placement, volume, network).
What it estimates is the time of the communication alone, as if compute cost nothing;
how much of it a program hides behind its compute is not in a traffic matrix
(bench/mapping_sim.py checks both against SimGrid SMPI)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from rankmap.mapper.critpath import PairTable, node_pairs
from rankmap.mapper.machine import Machine
from rankmap.mapper.metrics import link_loads
from rankmap.mapper.network import FatTreeRoutes, SwitchTree, Torus
from rankmap.profiler.errors import UserError


# the pairs of cores `rankmap probe` measures (slurm/probe.py's roles)
PROBE_PAIRS = ("same socket", "other socket", "neighbour node", "distant node")


@dataclass
class Network:
    link_bw: float          # bytes/s per link and direction
    link_lat: float         # s per link
    loop_bw: float          # bytes/s between two ranks of one node
    loop_lat: float         # s
    nic_bw: float | None    # bytes/s through a node's router (None: no cap)
    core_speed: float | None = None   # flop/s of one core (a trace's compute actions; None: unknown)

    @classmethod
    def from_probe(cls, path) -> "Network":
        """From `rankmap probe`'s file: two cores of one socket are the loopback, neighbour
        nodes the first link. Every speed must be a finite positive number."""
        from rankmap.profiler import validate
        where = str(path)
        r = validate.read_json(path, "`rankmap probe` file")
        if not isinstance(r, dict) or not isinstance(r.get("latency_us"), dict) or \
                not isinstance(r.get("bandwidth_GBps"), dict):
            raise UserError(f"{where}: not a `rankmap probe` file (no latency_us and bandwidth_GBps objects)")
        lat, bw = r["latency_us"], r["bandwidth_GBps"]
        # a pair under another name (a hand-edited 'neighbor node', 'same-socket') was ignored,
        # and the error then said the probe had measured no pair of nodes
        for name, d in (("latency_us", lat), ("bandwidth_GBps", bw)):
            odd = next((k for k in d if k not in PROBE_PAIRS), None)
            if odd is not None:
                import difflib
                near = difflib.get_close_matches(str(odd).lower(), PROBE_PAIRS, 1, 0.6)
                raise UserError(f"{where}: {name} names the pair {validate.show(odd)}"
                                + (f" (did you mean {near[0]!r}?)" if near else "")
                                + f"; a probe file's pairs are {', '.join(map(repr, PROBE_PAIRS))}")
        near_key = "same socket" if "same socket" in lat else "other socket"
        if "neighbour node" not in lat or near_key not in lat or "neighbour node" not in bw or near_key not in bw:
            raise UserError(f"{where}: the probe measured no pair of nodes (or no pair inside a node)")
        num = lambda d, k, name, bw: validate.number(d[k], where, f"{name}.{k}",  # noqa
                                                     validate.MIN_BANDWIDTH if bw else 0.0, 1e9)
        return cls(link_bw=num(bw, "neighbour node", "bandwidth_GBps", True) * 1e9,
                   link_lat=num(lat, "neighbour node", "latency_us", False) * 1e-6,
                   loop_bw=num(bw, near_key, "bandwidth_GBps", True) * 1e9,
                   loop_lat=num(lat, near_key, "latency_us", False) * 1e-6, nic_bw=None)


class SimGridTorus(Torus):
    """A torus routed as SimGrid 3.32's TorusZone routes it: dimension order, the shorter
    way round each ring, and at half a ring's length (a tie) the way its test gives: up
    (the positive way, wrapping round if need be), but from the coordinate half the ring's
    size, which goes down. So 3 -> 1 on a ring of 4 passes 0 (as rankmap's Torus, which
    always goes up) and 2 -> 0 passes 1 (rankmap's Torus: 3). Checked against SimGrid's
    replays on Desmos (tests/test_critpath_run.py); an earlier rule ("towards the
    destination's side": 3 -> 1 passing 2) was wrong for sources above the half and put
    NPB FT 32's alltoall on links SimGrid does not use."""

    def _steps(self, a: np.ndarray, b: np.ndarray):
        out = []
        for d, size in enumerate(self.dims):
            delta = b[:, d] - a[:, d]
            if not self.wrap[d]:
                out.append(delta)
                continue
            fwd = np.mod(delta, size)
            back = size - fwd
            tie_up = a[:, d] != size // 2
            out.append(np.where(fwd < back, fwd, np.where(fwd > back, fwd - size, np.where(tie_up, fwd, fwd - size))))
        return out


def _routed(net):
    """The network as predict routes it (tori as SimGrid does)."""
    return SimGridTorus(dims=net.dims, wrap=net.wrap, coords=net.coords) if type(net) is Torus else net


def _torus_link_loads(M: sp.coo_matrix, machine: Machine, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """Bytes per directed link of a torus, routed as SimGrid routes it."""
    inter = na != nb
    if not inter.any():
        return np.zeros(1)
    key = na[inter] * machine.nnodes + nb[inter]
    uk, inv = np.unique(key, return_inverse=True)
    w = np.bincount(inv, weights=M.data[inter])
    net = _routed(machine.network)
    comp = machine.network.compact_links()      # many more positions than nodes: runs of equal load (the busiest
    if comp is not None:                        # is all predict reads), not an array per position
        return comp.loads(net, uk // machine.nnodes, uk % machine.nnodes, w)
    return net.link_loads(uk // machine.nnodes, uk % machine.nnodes, w).ravel()


def _through(M: sp.coo_matrix, machine: Machine, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
    """Bytes each node's router passes: every node a route visits, its ends included (the
    SimGrid limiter's accounting)."""
    v = np.zeros(machine.nnodes)
    inter = na != nb
    if not inter.any():
        return v
    key = na[inter] * machine.nnodes + nb[inter]
    uk, inv = np.unique(key, return_inverse=True)     # routes depend on the nodes only
    w = np.bincount(inv, weights=M.data[inter])
    a, b = uk // machine.nnodes, uk % machine.nnodes
    net = machine.network
    if not isinstance(net, Torus):
        np.add.at(v, a, w)
        np.add.at(v, b, w)
        return v
    return _routed(net).through(a, b, w, machine.nnodes)


def _fat_tree_loads(M: sp.coo_matrix, machine: Machine, na: np.ndarray, nb: np.ndarray):
    """Bytes per directed link and per limiter (nodes and switches) on SimGrid's fat tree."""
    tree = machine.network
    routes = FatTreeRoutes(tree.simgrid)
    inter = na != nb
    if not inter.any():
        return np.zeros(1), np.zeros(1)
    key = na[inter] * machine.nnodes + nb[inter]
    uk, inv = np.unique(key, return_inverse=True)     # routes depend on the nodes only
    w = np.bincount(inv, weights=M.data[inter])
    pos = tree.groups[:, -1]                          # each node's position in SimGrid's tree
    return routes.loads(pos[uk // machine.nnodes], pos[uk % machine.nnodes], w)


def _bisection(M: sp.coo_matrix, machine: Machine, na: np.ndarray, nb: np.ndarray, bw: float) -> float:
    """Bytes crossing the cut that halves the longest torus dimension / its bandwidth."""
    net = machine.network
    if not isinstance(net, Torus):
        return 0.0
    d = int(np.argmax(net.dims))
    size = net.dims[d]
    if size < 2:
        return 0.0
    half = net.coords[:, d] < size // 2
    cross = half[na] != half[nb]
    byts = float(M.data[cross].sum())
    # links across the cut: 2 cuts on a ring (1 on a line) per other-dimension position, both directions
    rings = int(np.prod(net.dims)) // size
    per_ring = (2 if net.wrap[d] and size > 2 else 1) * 2
    return byts / (rings * per_ring * bw) if byts else 0.0


def pair_model(machine: Machine, slot: np.ndarray, net: Network):
    """pair(i, j) for critpath.run_time under a mapping: (latency, seconds per byte on the
    route alone, ((resource, seconds per byte), ...)). The resources are what the bandwidth
    bound's loads count: the directed links of the route (SimGrid's fat tree: its own
    routes; other trees and dragonflies: each link's share of the route, as link_loads
    spreads it) and, with a NIC cap, the limiter of every node (and fat-tree switch) it
    visits. Two ranks of one node: the loopback's latency and bandwidth, shared with nothing
    (SimGrid does not share a node's loopback)."""
    node, a, b, hops = node_pairs(machine, slot)
    inter_spb = 1.0 / (net.link_bw if net.nic_bw is None else min(net.link_bw, net.nic_bw))
    res: list = [[] for _ in range(len(a))]
    lim = 1.0 / net.nic_bw if net.nic_bw is not None else None
    tree = machine.network
    if len(a) and isinstance(tree, SwitchTree) and tree.simgrid:
        routes = FatTreeRoutes(tree.simgrid)
        pos = tree.groups[:, -1]
        links, lims = routes.segments(pos[a], pos[b])
        for idx, ids, direction in links:
            for k, l_ in zip(idx.tolist(), ids.tolist()):
                res[k].append((("l", direction, l_), 1.0 / net.link_bw))
        if lim is not None:
            for idx, ids in lims:
                for k, l_ in zip(idx.tolist(), ids.tolist()):
                    res[k].append((("n", l_), lim))
    elif len(a) and isinstance(tree, Torus):
        tree = _routed(tree)
        nd = len(tree.dims)
        node_at = np.full(tree.positions, -1, dtype=np.int64)
        node_at[tree.pos(tree.coords)] = np.arange(len(tree.coords))
        for idx, p, d, direction in tree.walk(a, b):
            for k, p_, dr in zip(idx.tolist(), p.tolist(), direction.tolist()):
                res[k].append((("l", (p_ * nd + d) * 2 + dr), 1.0 / net.link_bw))
                if lim is not None and node_at[p_] >= 0:
                    res[k].append((("n", int(node_at[p_])), lim))
        if lim is not None:
            for k in range(len(a)):
                res[k].append((("n", int(b[k])), lim))
    elif len(a):
        if tree is not None:
            frac = tree.link_loads(a, b, np.ones(len(a)), np.arange(len(a)), len(a)).reshape(len(a), -1)
        else:                              # one switch: each node's uplink and downlink
            frac = np.zeros((len(a), 2 * machine.nnodes))
            frac[np.arange(len(a)), a] = 1.0
            frac[np.arange(len(a)), machine.nnodes + b] = 1.0
        for k in range(len(a)):
            for l_ in np.flatnonzero(frac[k]).tolist():
                res[k].append((("l", l_), float(frac[k, l_]) / net.link_bw))
            if lim is not None:
                res[k] += [(("n", int(a[k])), lim), (("n", int(b[k])), lim)]
    by_nodes = {(int(a[k]), int(b[k])): (float(hops[k]) * net.link_lat, inter_spb, tuple(res[k]))
                for k in range(len(a))}
    return PairTable(node, by_nodes, (net.loop_lat, 1.0 / net.loop_bw, ()))


def predict(M: sp.spmatrix, C: sp.spmatrix | None, machine: Machine, slot: np.ndarray, net: Network,
            schedule=None, budget: float | None = None) -> dict:
    """schedule: the traffic's actions in program order (rankmap.mapper.critpath, from an SMPI
    trace): the latency term is then the latency on the trace's critical path. budget: the
    flow replay's work cap (_replayed; default ESTIMATE_BUDGET, an estimate of given mappings)."""
    M = sp.coo_matrix(M, dtype=np.float64)
    if C is None:
        keep = M.row != M.col
        rows, cols, byts = M.row[keep], M.col[keep], M.data[keep]
        msgs = np.ones(len(byts))
    else:
        # the pairs of either matrix: a pair that sent only zero-byte messages (a handshake, a
        # barrier made of sends) has no byte entry, and its latency was left out
        Mc, Cc = sp.csr_matrix(M), sp.csr_matrix(C, dtype=np.float64)
        both = ((Mc != 0) + (Cc != 0)).tocoo()
        keep = both.row != both.col
        rows, cols = both.row[keep], both.col[keep]
        byts = np.asarray(Mc[rows, cols]).ravel() if len(rows) else np.zeros(0)
        msgs = np.asarray(Cc[rows, cols]).ravel() if len(rows) else np.zeros(0)
        msgs = np.maximum(msgs, (byts > 0).astype(float))
    M = sp.coo_matrix((byts, (rows, cols)), shape=M.shape)
    na, nb = machine.slot_node[slot[rows]], machine.slot_node[slot[cols]]
    inter = na != nb
    hops = machine.node_hops(na, nb)
    alpha = np.where(inter, hops * net.link_lat, net.loop_lat)
    bw_inter = net.link_bw if net.nic_bw is None else min(net.link_bw, net.nic_bw)
    beta = np.where(inter, bw_inter, net.loop_bw)
    n = M.shape[0]
    lat_rank = np.bincount(rows, weights=msgs * alpha, minlength=n)
    bw_rank = np.bincount(rows, weights=byts / beta, minlength=n)
    latency = float(lat_rank.max()) if n else 0.0
    latency_from = "per-rank sum"
    if schedule is not None and schedule.size == n:
        from rankmap.mapper.critpath import alpha_of, critical_latency
        cp = critical_latency(schedule, alpha_of(machine, slot, net.link_lat, net.loop_lat))
        if cp is not None:
            latency, latency_from = cp, "critical path"
    tree = machine.network
    if isinstance(tree, SwitchTree) and tree.simgrid:
        # SimGrid's fat tree: its own d-mod-k routes, and its switches' limiters (the NIC's
        # bandwidth on every switch, shared by all it passes) with the nodes'
        lk, lm = _fat_tree_loads(M, machine, na, nb)
        loads = lk.ravel()
        through = lm
    elif type(tree) is Torus:
        loads = _torus_link_loads(M, machine, na, nb)
        through = None
    else:
        loads = link_loads(M, machine, slot)
        through = None
    bounds = {"serial": float(bw_rank.max()) if n else 0.0,
              "links": float(loads.max()) / net.link_bw if len(loads) else 0.0,
              "nic": 0.0, "bisection": _bisection(M, machine, na, nb, net.link_bw)}
    if net.nic_bw is not None and inter.any():
        if through is None:
            through = _through(M, machine, na, nb)
        bounds["nic"] = float(through.max()) / net.nic_bw
    limit = max(bounds, key=bounds.get)
    if bounds[limit] == 0:      # no bytes between distinct ranks: no bandwidth bound limits ("serial" was a guess)
        limit = "latency" if latency > 0 else "nothing sent"
    out = {"seconds": latency + bounds.get(limit, 0.0), "seconds_from": "bound", "latency": latency,
           "latency_from": latency_from, "bandwidth": bounds.get(limit, 0.0),
           "limited_by": limit, "bounds": bounds,
           "busiest_rank": int(np.argmax(lat_rank + bw_rank)) if n else 0,
           "internode_bytes": float(byts[inter].sum()), "messages": float(msgs.sum())}
    if schedule is not None and schedule.size == n and latency_from == "critical path":
        # a trace that replays: its replay with compute free is the estimate (the bound and
        # the latency stay reported: what limits)
        alone = alone_estimate(schedule, machine, slot, net, budget)
        if alone is not None:
            out["seconds"], out["seconds_from"] = alone["seconds"], f"replay ({alone['sharing']})"
    if schedule is not None and schedule.size == n and net.core_speed:
        out.update(run_estimate(schedule, machine, slot, net, budget) or {})
    return out


# critpath.run_time_fluid's work cap when a mapping chooses among its candidates (mapping._predictor: tens of
# estimates), in its units (NPB FT B 32's replay: 2.3 million, 1.46 s of CPU with the flow-by-flow sharing this
# cap was set with, 0.33 s with numpy's, ~0.02 s in C; unchanged, so the mappings chosen stay the same)
FLUID_BUDGET = 3e7
# the cap when given mappings are estimated (`rankmap predict`, the replays' reports, and the final estimates of
# a choice's few best candidates, solve.choose_predicted): in C, 6-12 s of CPU here for the costliest first
# mappings measured. At 125-216 ranks the flows cost 1e8-1e10 (NPB FT B 128 on Desmos at /16: its run 3e9,
# 9.7 s; NPB CG B 128 on Angara-K1 at /16, rankmap-c's run 1e10, 6.2 s; LULESH 216's random placement's run
# 1e10, 11.5 s) and the in-turn replay they fell back to under FLUID_BUDGET was 1.4-10.5 % off SimGrid's
# communication alone per row (MAE), the flows 0.1-8.4 % (docs/real-apps.md, "predict's flow replay at
# 125-216 ranks")
ESTIMATE_BUDGET = 1e10


def replay_epoch(schedule) -> int:
    """Changes when _replayed switches a schedule's replay: the mappings estimated before it
    must be estimated again for their estimates to compare."""
    return 0 if schedule is None else schedule.__dict__.get("_epoch", 0)


def _replayed(schedule, pair, speed: float | None, key: str, budget: float | None = None) -> tuple:
    """(seconds, how) of the trace replayed under `pair` with compute at `speed` (None: free):
    the flow replay (critpath.run_time_fluid), or, when that would cost more than
    `budget` (default ESTIMATE_BUDGET) on the first mapping estimated, the replay that serves each link's and
    limiter's messages in turn (critpath.run_time: a few times faster, and blind to how
    messages that overlap slow each other down). The choice is made once per schedule and
    `key` (one for the run, one for communication alone) and budget, so every mapping of it is
    estimated the same way; a later mapping over 4x the budget switches it, and bumps the
    schedule's epoch (solve.choose_predicted then estimates its candidates again)."""
    from rankmap.mapper.critpath import TooCostly, run_time, run_time_fluid
    budget = ESTIMATE_BUDGET if budget is None else budget
    key = f"{key}@{budget:g}"            # a choice among candidates and an estimate decide apart
    how = schedule.__dict__.get(key)
    run = None
    if how in (None, "fluid"):
        try:   # the first mapping decides; a later one may cost more (more flows at once), up to 4 times
            run = run_time_fluid(schedule, pair, speed, budget=budget * (1 if how is None else 4))
            how = "fluid"
        except TooCostly:
            if how == "fluid":             # the mappings estimated before must be estimated again (epoch)
                schedule.__dict__["_epoch"] = schedule.__dict__.get("_epoch", 0) + 1
            how = "in turn"
        schedule.__dict__[key] = how
    if how == "in turn":
        run = run_time(schedule, pair, speed)
    return run, how


def alone_estimate(schedule, machine: Machine, slot: np.ndarray, net: Network,
                   budget: float | None = None) -> dict | None:
    """The communication alone (the trace on cores that cost nothing) by the replay of
    run_estimate with compute free: the order of the trace and the sharing of links decide,
    not a bound (on the 16-27-rank real traces: MAE 0.9 %, against 7.5 % for the bound plus
    the critical path's latency; docs/real-apps.md). None when the replay gets stuck."""
    run, how = _replayed(schedule, pair_model(machine, slot, net), None, "_sharing_alone", budget)
    return None if run is None else {"seconds": run, "sharing": how}


def run_estimate(schedule, machine: Machine, slot: np.ndarray, net: Network,
                 budget: float | None = None) -> dict | None:
    """The run's time under this mapping, compute included: the trace replayed with each
    compute action at net.core_speed and each message at its route's latency and bandwidth,
    sharing links and limiters with the messages beside it as SimGrid shares them
    (_replayed). And its communication part: that time minus the same replay's on a network
    that costs nothing (compute alone, the same for every mapping)."""
    from rankmap.mapper.critpath import run_time
    run, how = _replayed(schedule, pair_model(machine, slot, net), net.core_speed, "_sharing", budget)
    if run is None:
        return None
    cache = schedule.__dict__.setdefault("_compute_only", {})
    if net.core_speed not in cache:
        free = PairTable(np.zeros(schedule.size, dtype=np.int64), {}, (0.0, 0.0, ()))   # a network that costs nothing
        cache[net.core_speed] = run_time(schedule, free, net.core_speed) or 0.0
    return {"run_seconds": run, "run_comm_seconds": max(0.0, run - cache[net.core_speed]), "run_sharing": how}
