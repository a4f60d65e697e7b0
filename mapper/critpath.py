"""The latency on a trace's critical path, and the run's time, for `rankmap predict`.

A traffic matrix says how many messages each pair exchanges, not which of them wait for
each other: a rank that posts 26 receives and 26 sends and waits for them all (LULESH)
pays about one message latency per exchange, a pipelined sweep (NPB LU) pays one per
step of the pipeline, and a sum over a rank's messages (predict's estimate without a
trace) is wrong both ways. An SMPI time-independent trace keeps the order: each rank's
compute, sends, receives, waits and collectives in program order. critical_latency
replays that order with compute free and every message costing the latency of its route
only (hops x link latency, or the loopback's), and returns the time of the last rank: the
latency the program's dependencies put on its critical path. `predict` adds it to its
bandwidth bound (the busiest link, NIC, sender or cut), which the critical path does not
see. run_time_fluid replays the whole trace: compute at the cores' speed, every message at
its route's latency and bandwidth, sharing each link and limiter with the messages under
way on it as SimGrid does (max-min fairness); run_time is the same replay with the
messages that cross one link or limiter served in turn (cheaper, blind to how overlapping
messages slow each other down). They give the run's time, for the final choice of a
mapping: a placement that shortens messages off the critical path and lengthens one on
it is slower, whatever the bytes say.

The replays follow SimGrid 3.32 SMPI's semantics as far as they decide waiting (checked
against SimGrid's replays in docs/real-apps.md and tests/test_critpath_run.py): a message
starts when both its send and its receive are posted (matched first-in first-out per
source, destination and tag); a send below 64 KiB (smpi/send-is-detached-thresh) is
detached: a blocking one returns at once and the sender's wait on a non-blocking one too;
a larger one completes with its receive; `wait` completes the request it names, `waitall`
all the rank's open ones. Collectives run SMPI's default algorithms: reduce is linear into
the root, allreduce a linear reduce then a binomial broadcast from rank 0, bcast binomial,
barrier a linear gather and a binomial broadcast; an alltoall that SimGrid runs with its
linear algorithm (NPB FT's: up to 512 ranks, sizes by its Open MPI selector) becomes its
messages (expand_direct: a receive from and a send to every other rank, then a wait for
them), and so does every alltoallv and allgather(v) (SimGrid's ialltoallv and
iallgather(v), each pair at its own size), so the flow replay shares the links among them
as SimGrid does; the others
(other alltoalls, gather, scatter, ...) direct, every rank from every other, and
not before their bytes have crossed the busiest link or limiter, nor before a rank has sent
its own one after another (above 512 ranks: the last entry plus each rank's latency to
rank 0). A trace this does not
understand (an action it does not know, a receive from MPI_ANY_SOURCE that leaves a rank
waiting) gives None, and predict falls back to its per-rank sum (run_time: no estimate)."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

DIRECT_MAX = 512                     # above this many ranks a direct collective is not summed pair by pair
WEIGHT_S = 8775.0                    # SimGrid's network/weight-S: a flow's share ~ 1 / (latency + sum of weight_S / bandwidth)
A2AV_MESSAGES_MAX = 1_000_000      # messages the alltoallvs, allgather(v)s and scans of a trace may become (expand_direct)
DETACHED = 65536                     # SimGrid's smpi/send-is-detached-thresh default (bytes)
_SENDS = {"send", "isend", "Isend", "ssend", "Ssend", "issend", "ISsend", "bsend", "ibsend"}
_RECVS = {"recv", "irecv", "Irecv"}
_SKIP = {"init", "finalize", "sleep", "comm_size", "comm_split", "comm_dup"}
_COMPUTE = {"compute", "computing"}
_COLLS = {"bcast", "reduce", "allreduce", "scan", "exscan", "barrier", "gather", "scatter", "allgather", "alltoall",
          "allgatherv", "alltoallv", "reducescatter", "gatherv", "scatterv"}


class Schedule:
    """Each rank's actions in program order: ("compute", flops), ("send"|"isend"|"recv"|"irecv",
    peer, tag, bytes), ("wait", src, dst, tag), ("waitall",), ("coll", op, root[, bytes,
    flops]) (bytes: each rank's contribution; flops: the reduction's compute). Read only once
    made: the replays keep what they derive from the actions (shared) for the next replay."""

    def __init__(self, ranks: list[list[tuple]], shared: dict | None = None):
        self.ranks = ranks
        self.shared = {} if shared is None else shared   # what every Schedule over these actions reuses (_encoded)

    @property
    def size(self) -> int:
        return len(self.ranks)


def read_schedule(index: str | Path) -> Schedule | None:
    """The actions of an SMPI time-independent trace (its index file or directory), or None
    when the trace holds an action the replay below does not model."""
    from rankmap.profiler.smpi_trace import DATATYPE_SIZE, rank_files
    index = Path(index)
    if index.is_dir():
        index = index / "trace.ti"
    ranks = []
    files = list(rank_files(index))
    P = len(files)
    # the first alltoallvs, allgather(v)s and (ex)scans (the same on every rank) keep each
    # pair's size, to become their messages (expand_direct), as long as they add at most
    # A2AV_MESSAGES_MAX messages: the sizes take memory (P^2 per call) and 2 M messages took
    # 3.5 s to expand and encode on a loaded machine; the later ones stay one exchange of the
    # mean size
    per_pair = A2AV_MESSAGES_MAX // (P * (P - 1)) if 2 <= P <= DIRECT_MAX else 0
    # the first rooted collectives (bcast, reduce, allreduce, barrier, gather(v), scatter(v),
    # reducescatter) become their messages too, at most 2(P - 1) each, under the same cap
    rooted_max = A2AV_MESSAGES_MAX // (2 * (P - 1)) if 2 <= P <= DIRECT_MAX else 0
    for f in files:
        acts = []
        expanded = rooted = 0
        default = 1         # a line without its datatype: SimGrid's default type (smpi_trace._size)
        with open(f, "rb") as fh:
            for ln in fh:
                t = ln.split()
                if len(t) < 2:
                    continue
                op = t[1].decode(errors="replace")
                if op == "init":                            # MPI_DOUBLE after `init ARG` (MPE's traces)
                    default = 8 if len(t) > 2 else 1
                if op in _SKIP:
                    continue
                if op in _COMPUTE:
                    try:
                        fl = float(t[2])
                    except (IndexError, ValueError):
                        return None
                    if not fl < float("inf"):               # inf, nan: no time can follow
                        return None
                    if fl > 0:
                        acts.append(("compute", fl))
                    continue
                try:
                    a = [int(float(x)) for x in t[2:7]]
                except (ValueError, OverflowError):        # (inf: not a count)
                    return None
                if op in _SENDS or op in _RECVS:
                    if len(a) < 3:
                        return None
                    size = a[2] * (DATATYPE_SIZE.get(a[3], 1) if len(a) > 3 else default)
                    kind = ("i" if op[0] in "iI" else "") + ("send" if op in _SENDS else "recv")
                    acts.append((kind, a[0], a[1], size))
                elif op == "wait":
                    if len(a) < 3:
                        return None
                    acts.append(("wait", a[0], a[1], a[2]))
                elif op == "waitall":
                    acts.append(("waitall",))
                elif op in _VCOLLS:
                    got = _vcoll(op, t[2:], P, default)
                    if got is None:
                        return None
                    if op in ("alltoallv", "allgatherv"):
                        expanded += 1
                        got = got if expanded <= per_pair else got[:5]
                    elif len(got) > 5:
                        rooted += 1
                        got = got if rooted <= rooted_max else got[:5]
                    acts.append(got)
                elif op in _COLLS:
                    got = _coll(op, a, default)
                    if op in ("allgather", "scan", "exscan"):
                        expanded += 1
                        got = got + ("messages",) if expanded <= per_pair else got
                    elif op in _ROOTED and 0 <= got[2] < P:      # (a root out of range: the closed form's rank 0)
                        rooted += 1
                        got = got + ("messages",) if rooted <= rooted_max else got
                    acts.append(got)
                else:
                    return None
        ranks.append(acts)
    if not ranks:
        return None
    return expand_direct(Schedule(ranks))


def _alltoall_linear(P: int, size: int) -> bool:
    """Whether SimGrid 3.32's default alltoall (its Open MPI selector of 02/2022) runs the
    linear algorithm for P ranks and `size` bytes per pair (linear or linear_sync, which it
    runs as linear); else pairwise or Bruck, kept as one direct exchange here."""
    if P < 8:
        return P > 2
    if P < 16:
        return True
    if P < 32:
        return size >= 512
    if P < 64:
        return size >= 512
    if P < 128:
        return 1024 <= size < 262144
    if P < 256:
        return 1024 <= size < 262144
    if P < 512:
        return 1024 <= size < 32768
    return False


def expand_direct(sched: Schedule) -> Schedule:
    """Each alltoall that SimGrid runs with its linear algorithm (up to DIRECT_MAX ranks)
    replaced by its messages as SimGrid posts them: a receive from every other rank
    (r+1, r+2, ...), a send to every other (r-1, r-2, ...), a wait for all of them. The
    replays then share the links among the exchange's P(P-1) flows as SimGrid does, instead
    of bounding the exchange by its busiest link (replay.c's direct_bound): on NPB FT 32 (512 KB per
    pair) the bound left the order of the placements to chance (Desmos /16: block 1.227 s,
    rankmap's 1.227 s, Scotch's 1.196 s of communication alone; SimGrid 1.321, 1.342,
    1.254), the flows give SimGrid's time to 0.01 % for a lone alltoall. The collectives
    read_schedule marked (its cap) become their messages too: allgather(v), alltoallv and
    (ex)scan here, the rooted ones (bcast, reduce, allreduce, barrier, gather(v), scatter(v),
    reducescatter of equal counts) in _rooted_messages."""
    P = sched.size
    if P > DIRECT_MAX or P < 2:
        return sched
    out = []
    for r, acts in enumerate(sched.ranks):
        new, k = [], 0
        for act in acts:
            if act[0] == "coll":
                k += 1
                if act[1] in _ROOTED_ANY and len(act) > 5:
                    new += _rooted_messages(act, r, P, k)
                    continue
                if act[1] == "alltoall" and act[3] > 0 and P >= 3 and _alltoall_linear(P, act[3]):
                    tag = ("alltoall", k)
                    new += [("irecv", (r + i) % P, tag, act[3]) for i in range(1, P)]
                    new += [("isend", (r - i) % P, tag, act[3]) for i in range(1, P)]
                    new.append(("waitlast", (P - 1) * (2 if act[3] >= DETACHED else 1)))   # detached sends: no request
                    continue
                if act[1] in ("scan", "exscan") and len(act) > 5:
                    # SimGrid 3.32's scan and exscan: a receive from every lower rank and a send
                    # to every higher one at once, a wait for them all, then the reduction
                    tag = (act[1], k)
                    new += [("irecv", i, tag, act[3]) for i in range(r)]
                    new += [("isend", i, tag, act[3]) for i in range(r + 1, P)]
                    new.append(("waitlast", r + (P - 1 - r if act[3] >= DETACHED else 0)))
                    new += [("compute", act[4])] if act[4] > 0 else []
                    continue
                if act[1] in ("allgather", "allgatherv") and len(act) > 5:
                    # SimGrid 3.32's allgather(v) (iallgather(v)): to and from every other rank
                    # in rank order, a send of its own block and a receive of the other's, then
                    # a wait for them all (as one exchange of the mean block, predict read
                    # 0.94-0.98 of SMPI on the all-gather SpMV on Desmos)
                    tag = (act[1], k)
                    own, theirs = (act[5], act[6]) if act[1] == "allgatherv" else (act[3], [act[3]] * P)
                    for i in range(P):
                        if i != r:
                            new += [("isend", i, tag, own), ("irecv", i, tag, theirs[i])]
                    new.append(("waitlast", (P - 1) * (2 if own >= DETACHED else 1)))
                    continue
                if act[1] == "alltoallv" and len(act) > 6 and len(act[5]) == P and len(act[6]) == P:
                    # SimGrid 3.32's alltoallv (ialltoallv, whatever the selector says): a
                    # receive from every other rank, then a send to every other, in rank
                    # order, empty ones too, then a wait for them all. As one exchange of
                    # the mean size (before) predict had spmv-t's communication 0.82-1.55x
                    # SMPI's: the pairs' sizes differ by 10x, and a rank's sends overlap
                    tag = ("alltoallv", k)
                    others = [i for i in range(P) if i != r]
                    new += [("irecv", i, tag, act[6][i]) for i in others]
                    new += [("isend", i, tag, act[5][i]) for i in others]
                    new.append(("waitlast", P - 1 + sum(act[5][i] >= DETACHED for i in others)))
                    continue
                act = act[:5]
            new.append(act)
        out.append(new)
    return Schedule(out)


_ROOTED = {"bcast", "reduce", "allreduce", "barrier", "gather", "scatter"}
_ROOTED_ANY = _ROOTED | {"gatherv", "scatterv", "reducescatter"}           # (_rooted_messages)


def _rooted_messages(act: tuple, r: int, P: int, k: int) -> list:
    """Rank r's messages of its k-th collective as SimGrid 3.32's default selector sends
    them: gather(v), reduce: each rank's block to the root at once, the root receiving from
    every other rank in rank order (igather(v), ireduce); scatter(v) the other way; bcast:
    a binomial tree (a blocking receive from the parent, then blocking sends to the children,
    farthest first); allreduce: a reduce to rank 0, then its bcast; barrier: Open MPI's
    linear one; reducescatter of equal counts: a reduce of the whole vector to rank 0, then
    its scatterv; then the reduction's compute. (The closed forms they replace read 0.08-0.56
    of SimGrid's time on three calls of 8 B-1 MB on 6 ranks: calls overlapped that SimGrid
    runs in turn, and the root's link was not shared.)"""
    op, root, size, flops = act[1], act[2], act[3], float(act[4])
    others = [i for i in range(P) if i != root]
    tail = [("compute", flops)] if flops > 0 else []

    def into(root, tag, own, counts):            # every rank's block to the root
        if r != root:
            return [("isend", root, tag, own)] + ([("waitlast", 1)] if own >= DETACHED else [])
        src = [i for i in range(P) if i != root]
        return [("irecv", i, tag, counts[i]) for i in src] + [("waitlast", P - 1)]

    def out_of(root, tag, own, counts):          # the root's block to every rank
        if r != root:
            return [("irecv", root, tag, own), ("waitlast", 1)]
        dst = [i for i in range(P) if i != root]
        waits = sum(counts[i] >= DETACHED for i in dst)
        return [("isend", i, tag, counts[i]) for i in dst] + ([("waitlast", waits)] if waits else [])

    def bcast(root, tag, size):
        rel, mask, got = (r - root) % P, 1, []
        while mask < P:
            if rel & mask:
                got.append(("recv", (r - mask) % P, tag, size))
                break
            mask <<= 1
        mask >>= 1
        while mask > 0:
            if rel + mask < P:
                got.append(("send", (r + mask) % P, tag, size))
            mask >>= 1
        return got

    if op in ("gatherv", "scatterv"):
        return (into if op == "gatherv" else out_of)(root, (op, k), act[5], act[6])
    if op == "reducescatter":
        counts = act[6]
        return (into(0, ("reduce", k), act[5], [act[5]] * P)
                + out_of(0, ("scatterv", k), counts[r], counts) + tail)
    if op in ("gather", "reduce"):
        return into(root, (op, k), size, [size] * P) + (tail if op == "reduce" else [])
    if op == "scatter":
        return out_of(root, (op, k), size, [size] * P)
    if op == "bcast":
        return bcast(root, (op, k), size)
    if op == "allreduce":
        return into(0, ("reduce", k), size, [size] * P) + bcast(0, ("bcast", k), size) + tail
    # barrier
    if r:
        return [("send", 0, ("barrier", k), 0), ("recv", 0, ("barrier", k), 0)]
    return [("irecv", i, ("barrier", k), 0) for i in others] + [("waitlast", P - 1)] + \
        [("isend", i, ("barrier", k), 0) for i in others]


def _coll(op: str, a: list, default: int = 1) -> tuple:
    """("coll", op, root, bytes, flops) from SMPI 3.32's replay formats: bcast size [root [dt]],
    reduce size comp [root [dt]], allreduce size comp [dt], gather/allgather/alltoall/scatter
    sendsize recvsize [root] [dt dt]; barrier: no size (the v variants: _vcoll). default: the
    size of an element where the line gives no datatype."""
    from rankmap.profiler.smpi_trace import DATATYPE_SIZE
    size = lambda n, k: n * (DATATYPE_SIZE.get(a[k], 1) if len(a) > k else default)  # noqa: E731
    if op == "bcast":
        return ("coll", op, a[1] if len(a) > 1 else 0, size(a[0], 2) if a else 0, 0.0)
    if op in ("reduce", "allreduce", "scan", "exscan"):
        root = a[2] if op == "reduce" and len(a) > 2 else 0
        dt = 3 if op == "reduce" else 2
        return ("coll", op, root, size(a[0], dt) if a else 0, float(a[1]) if len(a) > 1 else 0.0)
    if op in ("gather", "scatter"):
        return ("coll", op, a[2] if len(a) > 2 else 0, size(a[0], 3) if a else 0, 0.0)
    if op in ("allgather", "alltoall"):
        return ("coll", op, 0, size(a[0], 2) if a else 0, 0.0)
    return ("coll", op, 0, 0, 0.0)


_VCOLLS = {"allgatherv", "alltoallv", "reducescatter", "gatherv", "scatterv"}


def _vcoll(op: str, tok: list, P: int, default: int = 1) -> tuple | None:
    """("coll", op, root, bytes, flops) of a collective with counts per rank (SMPI 3.32's
    lines, as profiler/smpi_trace.py reads them): the bytes per pair are the mean of the
    counts, the same on every rank's line where the line lists every rank's count (a rank's
    own sends for alltoallv). They were counted as none: an all-gather SpMV's replay was its
    latency alone, 640x below its own bandwidth bound."""
    from rankmap.profiler.smpi_trace import DATATYPE_SIZE
    try:
        x = [int(float(v)) for v in tok]
    except (ValueError, OverflowError):
        return None
    dt = lambda k: DATATYPE_SIZE.get(x[k], 1) if len(x) > k else default   # noqa: E731
    mean = lambda c: sum(c) / max(1, len(c))                          # noqa: E731
    if op == "allgatherv":            # sendcount, P recv counts, sendtype recvtype
        if len(x) < 1 + P:
            return None
        # its own block's bytes and each rank's: expand_direct replaces it by its messages
        return ("coll", op, 0, int(round(mean(x[1:1 + P]) * dt(2 + P))), 0.0, x[0] * dt(1 + P),
                tuple(c * dt(2 + P) for c in x[1:1 + P]))
    if op == "alltoallv":             # send_size, P send counts, recv_size, P recv counts, types
        if len(x) < 2 + 2 * P:
            return None
        # each pair's bytes too: expand_direct replaces it by its messages
        sends = tuple(c * dt(2 + 2 * P) for c in x[1:1 + P])
        recvs = tuple(c * dt(3 + 2 * P) for c in x[2 + P:2 + 2 * P])
        return ("coll", op, 0, int(round(mean(x[1:1 + P]) * dt(2 + 2 * P))), 0.0, sends, recvs)
    if op == "reducescatter":         # P recv counts, amount, type
        if len(x) < P:
            return None
        flops = float(x[P]) if len(x) > P else 0.0
        counts = tuple(c * dt(P + 1) for c in x[:P])
        if len(set(counts)) == 1:
            # equal counts: SimGrid 3.32's reduce_scatter__default, a reduce of the whole vector
            # to rank 0, then a scatterv of it (expand_direct); unequal: MPICH's, one exchange
            return ("coll", op, 0, counts[0], flops, sum(counts), counts)
        return ("coll", op, 0, int(round(mean(counts))), flops)
    # gatherv: sendcount, P recv counts (the root's; zeros on other ranks), root, send and recv
    # types; scatterv: P send counts (the root's), recvcount, root, types. expand_direct sends
    # them as SimGrid's igatherv/iscatterv do (they were a gather/scatter of the mean count to and
    # from rank 0, whatever the root: no time where the counts were the other ranks' zeros)
    if len(x) < P + 1:
        return None
    root = x[P + 1] if len(x) > P + 1 else 0
    if not 0 <= root < P:
        return None
    if op == "gatherv":
        own, counts = x[0] * dt(P + 2), tuple(c * dt(P + 3) for c in x[1:1 + P])
    else:
        own, counts = x[P] * dt(P + 3), tuple(c * dt(P + 2) for c in x[:P])
    return ("coll", op, root, own, 0.0, own, counts)


def schedule_of(traffic) -> Schedule | None:
    """The schedule of a Traffic read from an SMPI trace (None for any other format)."""
    if not str(getattr(traffic, "format", "")).startswith("smpi") or not getattr(traffic, "source", None):
        return None
    from rankmap.profiler.errors import UserError
    got = traffic.__dict__.get("_schedule_read")
    if got is None or got[0] != traffic.source:
        try:
            sched = read_schedule(traffic.source)
        except (OSError, ValueError, UserError):
            sched = None
        got = traffic.__dict__["_schedule_read"] = (traffic.source, sched, {})
    _, sched, compute_only = got
    if sched is None:
        return None
    # the trace is read once per Traffic (a whole-cluster mapping asks three times: the node
    # set's choice and the two searches); each asker gets its own Schedule, since the replay
    # predict chooses is decided per Schedule (predict._replayed), over the same actions,
    # which the replays only read, and the same compute-only replay (the same each time)
    out = Schedule(sched.ranks, sched.shared)
    out.__dict__["_compute_only"] = compute_only
    return out


def critical_latency(sched: Schedule, alpha) -> float | None:
    """The replay's end time (seconds) when a message from rank i to rank j costs
    alpha(i, j) and nothing else does; None if the replay gets stuck (a trace this model does
    not follow). Nothing is shared, so the ranks may run in any order: each runs until it
    waits, and runs again when what it waits for is done (a queue, in C: _replay).
    alpha: a function of (i, j), or a PairTable of latencies (alpha_of)."""
    pair = alpha if isinstance(alpha, PairTable) else (lambda i, j: (float(alpha(i, j)), 0.0, ()))
    return _replay(sched, pair, None, "critical", contention=False)


class PairTable:
    """pair(i, j) of a mapping, by the ranks' nodes: by_nodes[(a, b)] for ranks on nodes a != b,
    `loop` for ranks of one node (a message from a rank to itself costs nothing in the
    replays, which do not ask). A value is (latency, seconds per byte on the route alone,
    ((resource, seconds per byte), ...)) as run_time takes it; the C replay reads the table
    by node (_pair_arrays) instead of asking per pair."""

    def __init__(self, node: np.ndarray, by_nodes: dict, loop: tuple):
        self.node, self.by_nodes, self.loop = np.asarray(node), by_nodes, loop

    def __call__(self, i: int, j: int) -> tuple:
        a, b = int(self.node[i]), int(self.node[j])
        return self.by_nodes[(a, b)] if a != b else self.loop


def node_pairs(machine, slot: np.ndarray) -> tuple:
    """The nodes of a mapping's ranks, and every ordered pair (a, b) of distinct nodes among
    them with its hops: (node per rank, a, b, hops), what a PairTable is built over."""
    node = machine.slot_node[np.asarray(slot)]
    used = np.unique(node)
    a, b = np.meshgrid(used, used, indexing="ij")
    a, b = a.ravel(), b.ravel()
    x = a != b
    a, b = a[x], b[x]
    return node, a, b, (machine.node_hops(a, b) if len(a) else np.zeros(0))


def alpha_of(machine, slot: np.ndarray, link_lat: float, loop_lat: float) -> PairTable:
    """alpha(i, j) for ranks i, j under a mapping, as a PairTable of latencies: hops x link
    latency between their nodes, the loopback's latency on one node."""
    node, a, b, hops = node_pairs(machine, slot)
    by_nodes = {(int(p), int(q)): (float(h) * link_lat, 0.0, ())
                for p, q, h in zip(a.tolist(), b.tolist(), hops.tolist())}
    return PairTable(node, by_nodes, (float(loop_lat), 0.0, ()))


def run_time(sched: Schedule, pair, speed: float | None, contention: bool = True) -> float | None:
    """The run's time (seconds) by a replay of the whole trace, compute included: each rank's
    compute takes its flops / `speed` (None: compute free: communication alone), a message
    from rank i to rank j of s bytes takes pair(i, j) = (latency, seconds per byte on its own,
    ((resource, seconds per byte), ...)) — the route's latency, its bottleneck bandwidth, and
    the links and limiters it crosses. With `contention`, each resource serves the messages
    that cross it one after another in the order they start (a message's bytes leave a
    resource no earlier than the bytes of those before it; the time a resource is busy is
    what max-min sharing also charges in total), so placements that load one link or one
    NIC with messages of the same phase pay for it where the messages are, on the critical
    path or off it. The ranks run in time order (the earliest clock first), so messages
    start in time order. Collectives run the algorithms of critical_latency, each message
    of one at its latency plus its bytes at the route's bandwidth (no contention), then the
    reduction's flops. None when the replay gets stuck."""
    return _replay(sched, pair, speed, "in turn", contention=contention)


@lru_cache(maxsize=None)
def _fluid():
    """The replays in C (csrc/fluid: replay.c, the sharing fluid.c)."""
    import ctypes as C

    from rankmap.profiler import native
    lib = C.CDLL(str(native.artifact("fluid")))
    lib.rm_fluid_share.restype = C.c_int64
    V = C.c_void_p
    lib.rm_fluid_share.argtypes = [C.c_int64, V, V, V, V, V, V, V, C.c_double, C.c_int64, V]
    lib.rm_fluid_replay.restype = C.c_int
    lib.rm_fluid_replay.argtypes = [C.c_int64] + [V] * 9 + [C.c_int64] + [V] * 7 + [C.c_int64, C.c_int64, C.c_double,
                                                                                C.c_double, C.c_double, V]
    lib.rm_inturn_replay.restype = C.c_int
    lib.rm_inturn_replay.argtypes = [C.c_int64] + [V] * 9 + [C.c_int64] + [V] * 7 + [C.c_int64, C.c_double, C.c_int,
                                                                                 C.c_int, V]
    return lib


_OPS = {"compute": 0, "send": 1, "isend": 2, "recv": 3, "irecv": 4, "wait": 5, "waitall": 6, "waitlast": 7}
_KINDS = {"bcast": 0, "reduce": 1, "gather": 1, "gatherv": 1, "allreduce": 2, "scan": 2, "exscan": 2,
          "barrier": 2, "scatter": 3, "scatterv": 3}       # any other: a direct exchange (4)


def _encoded(sched: Schedule) -> dict:
    """The schedule as the C replays read it (csrc/fluid/replay.c): per action an op code and
    (ia, ib, v) — peer, tag, bytes; a wait's source, tag, destination; waitlast's count in
    ib; a compute's flops as a double's bits in v; a collective's index into its table in v —
    each tag numbered in order met. Built once per actions (Schedule.shared): a Python loop,
    about 0.4 s a million actions."""
    got = sched.shared.get("encoded")
    if got is not None:
        return got
    n, P = sum(len(a) for a in sched.ranks), sched.size
    op = np.empty(n, dtype=np.int8)
    ia = np.zeros(n, dtype=np.int32)
    ib = np.zeros(n, dtype=np.int32)
    v = np.zeros(n, dtype=np.int64)
    fl = v.view(np.float64)
    tags: dict = {}
    colls: list = []
    roff = np.zeros(sched.size + 1, dtype=np.int64)
    k = 0
    for r, acts in enumerate(sched.ranks):
        ops, a_, b_, vs = [], [], [], []
        flops = {}
        for act in acts:
            o = act[0]
            c = _OPS.get(o)
            if c is None:                                     # a collective
                ops.append(8)
                a_.append(0)
                b_.append(0)
                vs.append(len(colls))
                colls.append((_KINDS.get(act[1], 4), act[2] if 0 <= act[2] < P else 0, act[3] if len(act) > 3 else 0,
                              float(act[4]) if len(act) > 4 else 0.0))
                continue
            ops.append(c)
            if c == 0:
                flops[len(vs)] = act[1]
                a_.append(0)
                b_.append(0)
                vs.append(0)
            elif c <= 4:
                a_.append(act[1])
                b_.append(tags.setdefault(act[2], len(tags)))
                vs.append(act[3])
            elif c == 5:
                a_.append(act[1])
                b_.append(tags.setdefault(act[3], len(tags)))
                vs.append(act[2])
            else:                                             # waitall; waitlast: n in ib
                a_.append(0)
                b_.append(act[1] if c == 7 else 0)
                vs.append(0)
        m = len(ops)
        op[k:k + m] = ops
        ia[k:k + m] = np.clip(np.array(a_, dtype=np.int64), -1, P)   # a peer out of range: no message
        ib[k:k + m] = b_
        v[k:k + m] = vs
        if flops:
            at = np.fromiter(flops.keys(), dtype=np.int64, count=len(flops))
            fl[k + at] = np.fromiter(flops.values(), dtype=np.float64, count=len(flops))
        k += m
        roff[r + 1] = k
    got = {"roff": roff, "op": op, "ia": ia, "ib": ib, "v": v,
           "ckind": np.array([c[0] for c in colls], dtype=np.int8),
           "croot": np.array([c[1] for c in colls], dtype=np.int32),
           "csize": np.array([c[2] for c in colls], dtype=np.int64),
           "cflops": np.array([c[3] for c in colls], dtype=np.float64)}
    sched.shared["encoded"] = got
    return got


def _pair_arrays(pair, P: int) -> tuple:
    """(rank_node, U, E, lat, spb, first, rid, c, resources) for the C replay: a message from
    rank i to rank j (i != j) is entry E[rank_node[i], rank_node[j]]; entry 0 is a rank to
    itself. A PairTable gives its nodes' entries; any other pair is asked for every pair of
    ranks (each rank its own node: small schedules)."""
    if isinstance(pair, PairTable):
        used, rank_node = np.unique(pair.node, return_inverse=True)
        U = len(used)
        E = np.ones((U, U), dtype=np.int32)                  # 1: the loop, two ranks of one node
        vals = [(0.0, 0.0, ()), pair.loop]
        at = {int(x): q for q, x in enumerate(used.tolist())}
        for (a, b), val in pair.by_nodes.items():
            if a in at and b in at and a != b:
                E[at[a], at[b]] = len(vals)
                vals.append(val)
    else:
        U, rank_node = P, np.arange(P)
        E = np.zeros((P, P), dtype=np.int32)
        vals, seen = [(0.0, 0.0, ())], {}
        for i in range(P):
            for j in range(P):
                if i != j:
                    val = pair(i, j)
                    q = seen.get(val)
                    if q is None:
                        q = seen[val] = len(vals)
                        vals.append(val)
                    E[i, j] = q
    res: dict = {}
    first = np.zeros(len(vals) + 1, dtype=np.int64)
    rid, cs = [], []
    for q, (_, _, route) in enumerate(vals):
        for key, c in route:
            rid.append(res.setdefault(key, len(res)))
            cs.append(c)
        first[q + 1] = len(rid)
    return (np.ascontiguousarray(rank_node, dtype=np.int32), U, np.ascontiguousarray(E),
            np.array([x[0] for x in vals], dtype=np.float64), np.array([x[1] for x in vals], dtype=np.float64),
            first, np.array(rid, dtype=np.int32), np.array(cs, dtype=np.float64), len(res))


def _replay(sched: Schedule, pair, speed: float | None, how: str, contention: bool = True,
            budget: float | None = None) -> float | None:
    """The replays in C (csrc/fluid/replay.c): how = "in turn" (run_time), "critical"
    (critical_latency) or "fluid" (run_time_fluid, TooCostly past `budget`)."""
    import ctypes as C
    P = sched.size
    if P == 0:
        return 0.0
    e = _encoded(sched)
    rank_node, U, E, lat, spb, first, rid, cs, nres = _pair_arrays(pair, P)
    ptr = lambda a: a.ctypes.data_as(C.c_void_p)           # noqa: E731
    end = np.zeros(1)
    inv = 0.0 if not speed else 1.0 / speed
    args = (P, ptr(e["roff"]), ptr(e["op"]), ptr(e["ia"]), ptr(e["ib"]), ptr(e["v"]), ptr(e["ckind"]),
            ptr(e["croot"]), ptr(e["csize"]), ptr(e["cflops"]), U, ptr(rank_node), ptr(E), ptr(lat), ptr(spb),
            ptr(first), ptr(rid), ptr(cs))
    if how == "fluid":
        rc = _fluid().rm_fluid_replay(*args, len(lat), nres, inv, WEIGHT_S,
                                      float("inf") if budget is None else float(budget), ptr(end))
    else:
        rc = _fluid().rm_inturn_replay(*args, nres, inv, int(bool(contention)), int(how == "critical"), ptr(end))
    if rc == 2:
        raise TooCostly
    if rc == -2:
        raise MemoryError("the trace's replay ran out of memory")
    return None if rc else float(end[0])


class TooCostly(Exception):
    """run_time_fluid went over its work budget."""


def run_time_fluid(sched: Schedule, pair, speed: float | None, budget: float | None = None) -> float | None:
    """run_time with SimGrid's own sharing: every message between two nodes is a flow that
    starts moving bytes after its route's latency and shares each link and limiter it
    crosses with the flows crossing it at the same time (max-min fairness, recomputed
    whenever a flow starts or ends, each flow's share weighted down by its route's length
    as SimGrid's weight-S does); a message within a node takes the loopback's latency and
    bandwidth, shared with nothing. A message's end is known only when its flow ends, so
    ranks wait on flows, not on times fixed when the messages start. Every start or end of a
    flow recomputes the shares of all the active ones, so the cost grows with the number
    of messages times the flows under way: `budget` caps the work (flow-resource entries
    visited, plus the resources squared: 2.3 million for NPB FT B 32, 0.33 s of CPU for the
    whole replay, 1.46 s when every sharing was a loop over the flows) and raises TooCostly
    past it. In C (csrc/fluid/replay.c, the sharing fluid.c): the same rates and times to the
    last bit as the Python loops it replaced (tests/test_critpath_native.py)."""
    return _replay(sched, pair, speed, "fluid", budget=budget)
