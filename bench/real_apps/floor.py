"""How much any placement can gain on a trace whose traffic is an all-to-all: the least
communication alone (the trace on cores that cost nothing) that any placement of the ranks
on as many nodes as Slurm's block allocation can reach, by rankmap predict's own bounds.

predict's `links`, `nic` and `bisection` bounds are bytes over a capacity that every byte
routed there must share (a directed link; a node's or a switch's router, which SimGrid's
limiter charges for what it sends, receives and passes on; the torus' bisection): no
placement's communication alone can be shorter than the largest of them. (`serial`, one
rank's bytes in turn, is not such a bound: SimGrid runs a rank's messages at once.) The
bounds grow with the bytes, so they are computed on the uniform traffic that sends every
ordered pair of ranks the fewest bytes any pair of the trace exchanges (below the trace's
traffic entry by entry). With uniform traffic a placement's bounds depend only on its nodes
and on how many ranks each holds, not on which ranks: the floor is the least, over every set
of n nodes of the machine and every count of ranks per node that fits their cores, of the
largest bound (the loads are linear in the bytes of each pair of nodes: summed from each
pair's seconds per byte on every link and limiter, as predict.pair_model routes it, a few
microseconds a placement; the best is checked against predict's bounds). The search is
exhaustive when it has at most `limit` placements; beyond it only the injection floor:
the node holding the most ranks, k of them, between ceil(P/n) and the most cores of a node,
has a router that passes at least 2 k (P - k) w bytes (sent and received; w the uniform
bytes per ordered pair), whatever the routes (no transit counted)."""
from __future__ import annotations

import math
from itertools import combinations
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import spec as mspec
from rankmap.mapper.predict import _bisection, pair_model, predict
from rankmap.profiler.formats import read_traffic
from rankmap.slurm import platform as plat
from real_apps import replay as R

BOUNDS = ("links", "nic", "bisection")      # predict's bounds that no placement can beat


def uniform_bytes(M) -> float:
    """The fewest bytes any ordered pair of distinct ranks exchanges (0 if some pair exchanges
    none: the traffic is not an all-to-all)."""
    A = np.asarray(sp.csr_matrix(M).todense(), dtype=np.float64)
    off = ~np.eye(A.shape[0], dtype=bool)
    return float(A[off].min()) if A.shape[0] > 1 else 0.0


def count_vectors(caps: list[int], total: int, lo: int = 1):
    """Every tuple k with lo <= k_i <= caps[i] and sum k = total."""
    if not caps:
        if total == 0:
            yield ()
        return
    rest = sum(caps[1:])
    for k in range(max(lo, total - rest), min(caps[0], total - lo * (len(caps) - 1)) + 1):
        for tail in count_vectors(caps[1:], total - k, lo):
            yield (k,) + tail


def injection_floor(P: int, nodes: int, w: float, nic_bw: float | None, cap: int) -> float:
    """Seconds the busiest router needs at least, whatever the placement on `nodes` nodes of
    at most `cap` cores (0 without a NIC cap)."""
    if nic_bw is None or nodes <= 1:
        return 0.0
    ks = range(math.ceil(P / nodes), min(cap, P - (nodes - 1)) + 1)
    return 2.0 * min(k * (P - k) for k in ks) * w / nic_bw


def largest_bound(pr: dict) -> tuple[float, str]:
    b = pr["bounds"]
    name = max(BOUNDS, key=lambda n: b.get(n, 0.0))
    return float(b.get(name, 0.0)), name


def resources(full, net) -> np.ndarray:
    """Seconds per byte that each ordered pair of nodes (row a * nnodes + b) puts on each
    capacity predict's bounds count: the directed links and the limiters of its route
    (predict.pair_model, what the flow replay shares) and the torus' bisection cut
    (predict._bisection), one column each."""
    N = full.nnodes
    first = np.array([np.flatnonzero(full.slot_node == i)[0] for i in range(N)])
    pair = pair_model(full, first, net)             # rank i on node i
    keys: dict = {}
    rows, cols, vals = [], [], []
    for a in range(N):
        for b in range(N):
            if a != b:
                for key, spb in pair(a, b)[2]:
                    rows.append(a * N + b)
                    cols.append(keys.setdefault(key, len(keys)))
                    vals.append(spb)
    R = np.zeros((N * N, len(keys) + 1))
    np.add.at(R, (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64)), vals)
    one = sp.coo_matrix(([1.0], ([0], [1])), shape=(2, 2))
    for a in range(N):
        for b in range(N):
            if a != b:
                R[a * N + b, -1] = _bisection(one, full, np.array([a]), np.array([b]), net.link_bw)
    return R


def search(full, net, P: int, nodes: int, w: float, limit: int = 200_000_000, batch: int = 256):
    """(seconds, bound, hosts with counts, placements searched) of the placement with the
    least largest bound over every set of `nodes` nodes and every count of ranks per node
    (at least 1, at most its cores); None when that is more than `limit` placements. Uniform
    traffic of w bytes per ordered pair: the loads are sum over pairs of nodes of
    k_a k_b w times the pair's seconds per byte (resources); the best is checked against
    predict's own bounds."""
    cores = np.bincount(full.slot_node, minlength=full.nnodes)
    N = full.nnodes
    groups: dict = {}
    n_eval = 0
    for S in combinations(range(N), nodes):
        caps = tuple(int(cores[i]) for i in S)
        if sum(caps) < P:
            continue
        if caps not in groups:
            groups[caps] = (np.array(list(count_vectors(list(caps), P)), dtype=np.float64).reshape(-1, nodes), [])
        groups[caps][1].append(S)
        n_eval += len(groups[caps][0])
        if n_eval > limit:
            return None
    R = resources(full, net)
    ia, ib = np.array([(a, b) for a in range(nodes) for b in range(nodes) if a != b], dtype=np.int64).reshape(-1, 2).T
    best = None
    for caps, (V, sets) in groups.items():
        if not len(V):
            continue
        coef = V[:, ia] * V[:, ib] * w                  # (vectors, ordered pairs of the set)
        sets = np.array(sets, dtype=np.int64)
        for lo in range(0, len(sets), batch):
            Sb = sets[lo:lo + batch]
            RS = R[Sb[:, ia] * N + Sb[:, ib]]           # (sets, pairs, resources)
            big = np.einsum("vp,bpr->bvr", coef, RS, optimize=True).max(axis=2)  # (sets, vectors): the largest bound
            i, j = np.unravel_index(np.argmin(big), big.shape)
            if best is None or big[i, j] < best[0] - 1e-12 * best[0]:
                best = (float(big[i, j]), Sb[i], V[j].astype(int))
    U = sp.coo_matrix(w * (np.ones((P, P)) - np.eye(P)))
    slot = np.concatenate([np.flatnonzero(full.slot_node == i)[:c] for i, c in zip(best[1], best[2])])
    sec, name = largest_bound(predict(U, None, full, slot, net))
    if abs(sec - best[0]) > 1e-6 * max(sec, 1e-30):
        raise RuntimeError(f"floor: the search's bound {best[0]:.6g} s is not predict's {sec:.6g} s")
    return sec, name, [(full.hosts[i], int(c)) for i, c in zip(best[1], best[2])], n_eval


def row(work: Path, case: str, machine: str, scale: float, limit: int = 200_000_000,
        replay: bool = False) -> dict:
    """The floor for one cached row (WORK/replay/<case>/<machine>/x<scale>.json), with the
    row's replayed communication (alone and in the run) of block and of its best placement;
    replay: the floor's placement replayed too (SimGrid, as the replay phase replays; ranks in
    order on its nodes) into WORK/replay/<case>/<machine>/floor/x<scale>/, outside the row."""
    trace = work / "traces" / case / "trace" / "replay.ti"
    t = read_traffic(trace, "smpi", "auto")
    P = t.bytes.shape[0]
    p, _ = plat.load(work / "platforms" / f"{machine}-x{scale:g}")
    full = mspec.build(plat.machine_spec(p))
    net = p.network()
    net.core_speed = None
    nodes = len(set(plat.block_allocation(p, P)))
    w = uniform_bytes(t.bytes)
    M = sp.csr_matrix(t.bytes)
    total = float(M.sum() - M.diagonal().sum())
    out = {"case": case, "machine": machine, "scale": scale, "ranks": P, "nodes": nodes,
           "uniform_share": w * P * (P - 1) / total if total else 0.0,
           "injection_floor": injection_floor(P, nodes, w, net.nic_bw,
                                              int(np.bincount(full.slot_node).max()))}
    cache = work / "replay" / case / machine / "floor" / f"x{scale:g}.json"
    key = {"ranks": P, "nodes": nodes, "uniform_bytes": w, "limit": limit}
    old = R.read_cached(cache) if cache.is_file() else {}
    if old.get("key") == key:                       # the search is the same for the same trace and machine
        got = old.get("got")
    else:
        got = search(full, net, P, nodes, w, limit)
        cache.parent.mkdir(parents=True, exist_ok=True)
        R.write_cached(cache, {"key": key, "got": got})
    if got is not None:
        out.update({"floor": got[0], "floor_bound": got[1], "floor_at": [tuple(x) for x in got[2]],
                    "estimated": got[3]})
    f = work / "replay" / case / machine / f"x{scale:g}.json"
    if f.is_file():
        res = R.read_cached(f)
        b = res["block"]
        out["block_alone"], out["block_comm"] = b["comm_alone_seconds"], b["comm_seconds"]
        ba = min(res, key=lambda n: res[n]["comm_alone_seconds"])
        bc = min(res, key=lambda n: res[n]["comm_seconds"])
        out["best_alone"] = (ba, res[ba]["comm_alone_seconds"])
        out["best_comm"] = (bc, res[bc]["comm_seconds"])
    if replay and "floor_at" in out:
        from rankmap.slurm import simulated
        pdir = work / "platforms" / f"{machine}-x{scale:g}"
        hosts = [h for h, c in out["floor_at"] for _ in range(c)]
        o = simulated.compare(trace, p, pdir, {"floor": hosts},
                              work / "replay" / case / machine / "floor" / f"x{scale:g}")["floor"]
        out["floor_replayed"] = {"comm_alone_seconds": o.extra["comm_alone_seconds"], "comm_seconds": o.comm_seconds,
                                 "simulated_seconds": o.seconds, "hosts": hosts}
        if f.is_file():
            out["floor_replayed"]["time_vs_block"] = o.seconds / res["block"]["simulated_seconds"]
        R.write_cached(cache.parent / f"x{scale:g}-replayed.json", out)
    return out


def lines(rows: list[dict], markdown: bool = False) -> list[str]:
    head = ["case", "machine", "net", "nodes", "uniform bytes", "block alone s", "injection floor",
            "floor (all placements)", "best replayed alone", "block comm s", "best replayed comm",
            "floor's placement replayed: alone, comm, time"]
    out = []
    if markdown:
        out += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in rows:
        ba = r.get("block_alone")
        rel = (lambda x: f"{x:.4g} s ({x / ba:.3f})") if ba else (lambda x: f"{x:.4g} s")
        fl = (f"{rel(r['floor'])} {r['floor_bound']}, {'-'.join(str(c) for _, c in r['floor_at'])} on "
              f"{','.join(h for h, _ in r['floor_at'])}; {r['estimated']} placements") if "floor" in r \
            else "not searched (too many placements)"
        cells = [r["case"], r["machine"], "x1" if r["scale"] == 1 else f"/{1 / r['scale']:g}", str(r["nodes"]),
                 f"{100 * r['uniform_share']:.4f}%", f"{ba:.4g}" if ba else "-", rel(r["injection_floor"]), fl,
                 f"{r['best_alone'][0]} {r['best_alone'][1] / ba:.3f}" if ba else "-",
                 f"{r['block_comm']:.4g}" if ba else "-",
                 f"{r['best_comm'][0]} {r['best_comm'][1] / r['block_comm']:.3f}" if ba else "-",
                 f"{r['floor_replayed']['comm_alone_seconds'] / ba:.3f}, "
                 f"{r['floor_replayed']['comm_seconds'] / r['block_comm']:.3f}, "
                 f"{r['floor_replayed'].get('time_vs_block', float('nan')):.3f}" if ba and "floor_replayed" in r else "-"]
        out.append(("| " + " | ".join(cells) + " |") if markdown else "  ".join(cells))
    return out
