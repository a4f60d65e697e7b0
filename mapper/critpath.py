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
them), so the flow replay shares the links among them as SimGrid does; the others
(allgather, other alltoalls, gather, scatter, ...) direct, every rank from every other, and
not before their bytes have crossed the busiest link or limiter, nor before a rank has sent
its own one after another (above 512 ranks: the last entry plus each rank's latency to
rank 0). A trace this does not
understand (an action it does not know, a receive from MPI_ANY_SOURCE that leaves a rank
waiting) gives None, and predict falls back to its per-rank sum (run_time: no estimate)."""
from __future__ import annotations

from collections import defaultdict, deque
from functools import lru_cache
from pathlib import Path

import numpy as np

DIRECT_MAX = 512                     # above this many ranks a direct collective is not summed pair by pair
WEIGHT_S = 8775.0                    # SimGrid's network/weight-S: a flow's share ~ 1 / (latency + sum of weight_S / bandwidth)
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
    for f in rank_files(index):
        acts = []
        with open(f, "rb") as fh:
            for ln in fh:
                t = ln.split()
                if len(t) < 2:
                    continue
                op = t[1].decode(errors="replace")
                if op in _SKIP:
                    continue
                if op in _COMPUTE:
                    try:
                        fl = float(t[2])
                    except (IndexError, ValueError):
                        return None
                    if fl > 0:
                        acts.append(("compute", fl))
                    continue
                try:
                    a = [int(float(x)) for x in t[2:7]]
                except ValueError:
                    return None
                if op in _SENDS or op in _RECVS:
                    if len(a) < 3:
                        return None
                    size = a[2] * DATATYPE_SIZE.get(a[3] if len(a) > 3 else 0, 1)
                    kind = ("i" if op[0] in "iI" else "") + ("send" if op in _SENDS else "recv")
                    acts.append((kind, a[0], a[1], size))
                elif op == "wait":
                    if len(a) < 3:
                        return None
                    acts.append(("wait", a[0], a[1], a[2]))
                elif op == "waitall":
                    acts.append(("waitall",))
                elif op in _COLLS:
                    acts.append(_coll(op, a))
                else:
                    return None
        ranks.append(acts)
    return expand_direct(Schedule(ranks)) if ranks else None


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
    of bounding the exchange by its busiest link (_direct_bound): on NPB FT 32 (512 KB per
    pair) the bound left the order of the placements to chance (Desmos /16: block 1.227 s,
    rankmap's 1.227 s, Scotch's 1.196 s of communication alone; SimGrid 1.321, 1.342,
    1.254), the flows give SimGrid's time to 0.01 % for a lone alltoall."""
    P = sched.size
    if P > DIRECT_MAX or P < 3:
        return sched
    out = []
    for r, acts in enumerate(sched.ranks):
        new, k = [], 0
        for act in acts:
            if act[0] == "coll":
                k += 1
                if act[1] == "alltoall" and act[3] > 0 and _alltoall_linear(P, act[3]):
                    tag = ("alltoall", k)
                    new += [("irecv", (r + i) % P, tag, act[3]) for i in range(1, P)]
                    new += [("isend", (r - i) % P, tag, act[3]) for i in range(1, P)]
                    new.append(("waitlast", (P - 1) * (2 if act[3] >= DETACHED else 1)))   # detached sends: no request
                    continue
            new.append(act)
        out.append(new)
    return Schedule(out)


def _coll(op: str, a: list) -> tuple:
    """("coll", op, root, bytes, flops) from SMPI 3.32's replay formats: bcast size [root [dt]],
    reduce size comp [root [dt]], allreduce size comp [dt], gather/allgather/alltoall/scatter
    sendsize recvsize [root] [dt dt]; the v variants and barrier: no size counted."""
    from rankmap.profiler.smpi_trace import DATATYPE_SIZE
    size = lambda n, k: n * DATATYPE_SIZE.get(a[k] if len(a) > k else 0, 1)  # noqa: E731
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
    waits, and runs again when what it waits for is done (a queue, in C: _inturn).
    alpha: a function of (i, j), or a PairTable of latencies (alpha_of)."""
    pair = alpha if isinstance(alpha, PairTable) else (lambda i, j: (float(alpha(i, j)), 0.0, ()))
    return _inturn(sched, pair, None, contention=False, fifo=True)


def _collective(op: str, root: int, entry: dict, P: int, cost, bound=None) -> list[float]:
    """Each rank's exit time from one collective under SMPI's default algorithms. bound():
    the least time a direct exchange (alltoall, allgather, ...) takes once every rank has
    entered, for its bytes (_direct_bound); None: latency and one message's bytes only."""
    T = [entry[r] for r in range(P)]
    if op == "bcast":
        return _bcast(T, root, P, cost)
    if op in ("reduce", "gather", "gatherv"):
        out = list(T)
        out[root] = max(T[i] + cost(i, root) for i in range(P))
        return out
    if op in ("allreduce", "scan", "exscan", "barrier"):
        T2 = list(T)
        T2[0] = max(T[i] + cost(i, 0) for i in range(P))
        return _bcast(T2, 0, P, cost)
    if op in ("scatter", "scatterv"):
        return [max(T[r], T[root] + cost(root, r)) for r in range(P)]
    if P > DIRECT_MAX:                 # P^2 pairs: every rank waits for the last entry plus its latency to rank 0
        last = max(T)
        return [last + max(cost(0, r), cost(r, 0)) for r in range(P)]
    b = max(T) + bound() if bound is not None else 0.0
    return [max(b, max(T[i] + cost(i, r) for i in range(P))) for r in range(P)]   # direct all-to-all exchanges


def _direct_bound(P: int, size: int, info) -> float:
    """A direct exchange where every rank sends `size` bytes to every other (alltoall,
    allgather; NPB FT's transposes: 512 KB to each of 31 ranks): the bytes of all P(P-1)
    messages on the links and limiters they cross (the busiest one's load), or a rank's own
    P-1 messages one after another (SMPI's algorithms for large messages send them in
    turn), whichever is longer. Without it the exchange cost one message: NPB FT 32's
    communication alone was estimated at 0.6 % of the replayed one."""
    load: dict = defaultdict(float)
    serial = 0.0
    for i in range(P):
        own = 0.0
        for j in range(P):
            if i != j:
                lat, spb, res = info(i, j)
                own += lat + size * spb
                for k, x in res:
                    load[k] += size * x
        serial = max(serial, own)
    return max(serial, max(load.values(), default=0.0))


def _bcast(T: list, root: int, P: int, cost) -> list[float]:
    """Binomial tree from root (MPICH's: relative rank r gets the data from r minus its lowest
    set bit); a rank leaves when it has the data."""
    have = {root: T[root]}
    out = list(T)
    for rel in range(1, P):
        r = (rel + root) % P
        parent = ((rel - (rel & -rel)) + root) % P
        have[r] = max(T[r], have[parent] + cost(parent, r))
        out[r] = have[r]
    return out


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


def alpha_of(machine, slot: np.ndarray, link_lat: float, loop_lat: float) -> PairTable:
    """alpha(i, j) for ranks i, j under a mapping, as a PairTable of latencies: hops x link
    latency between their nodes, the loopback's latency on one node."""
    node = machine.slot_node[np.asarray(slot)]
    used = np.unique(node)
    a, b = np.meshgrid(used, used, indexing="ij")
    a, b = a.ravel(), b.ravel()
    x = a != b
    a, b = a[x], b[x]
    hops = machine.node_hops(a, b) if len(a) else np.zeros(0)
    by_nodes = {(int(p), int(q)): (float(h) * link_lat, 0.0, ()) for p, q, h in zip(a.tolist(), b.tolist(), hops.tolist())}
    return PairTable(node, by_nodes, (float(loop_lat), 0.0, ()))


class _Ranks:
    """The MPI side of run_time's and run_time_fluid's replays: each rank's actions in
    order, sends matched to receives by (source, destination, tag), requests waited on,
    collectives once every rank has entered them. What a matched message costs and when a
    rank runs are the replay's own, set as callbacks before the first step:
    - earliest(): the time of the next other event (a rank whose clock passes it yields);
    - requeue(r, when): run rank r again at `when`;
    - message(i, j, size, t0, reqs, other): a message matched at t0; sets its requests'
      end (req[3]) where it is known at once and wakes the `other` rank or the waiters;
    - on_blocked(r, open_reqs): r waits for requests not complete yet;
    - entered(last): every rank has entered a collective, the last at `last`."""

    def __init__(self, sched: Schedule, pair, speed: float | None):
        P = self.P = sched.size
        self.sched = sched
        self.inv = 0.0 if not speed else 1.0 / speed
        memo: dict = {}

        def info(i, j):                  # pair(i, j), asked once per pair; nothing within a rank
            v = memo.get((i, j))
            if v is None:
                v = memo[(i, j)] = pair(i, j) if i != j else (0.0, 0.0, ())
            return v
        self.info = info
        self.on_blocked = lambda r, reqs: None
        self.t = [0.0] * P
        self.pc = [0] * P
        self.sends: dict = defaultdict(deque)
        self.recvs: dict = defaultdict(deque)
        self.pending: list = [[] for _ in range(P)]
        self.colls: dict = {}
        self.bounds: dict = {}           # a direct exchange's bound per message size (_direct_bound)
        self.ncoll = [0] * P
        self.waits: list = [None] * P
        self.fin = [False] * P
        self.left = P

    def end(self) -> float | None:
        """The replay's end: the last rank's clock, or None where some rank never finished."""
        return None if self.left else (max(self.t) if self.P else 0.0)

    def _post(self, r: int, sending: bool, src: int, dst: int, tag, size: int) -> list:
        """Rank r's half of the message src -> dst (the send or the receive): matched with the
        other half if that was posted first (the message then starts, with the sender's size),
        else queued. Returns r's request [src, dst, tag, end or None]."""
        req = [src, dst, tag, None]
        key = (src, dst, tag)
        mine, theirs = (self.sends, self.recvs) if sending else (self.recvs, self.sends)
        q = theirs.get(key)
        if q:
            post, their_size, other = q.popleft()
            self.message(src, dst, size if sending else their_size, max(self.t[r], post), (req, other),
                         dst if sending else src)
        else:
            mine[key].append((self.t[r], size, req))
        return req

    def step(self, r: int) -> None:
        """Run rank r until it waits, yields to an earlier event or finishes."""
        t, acts, P = self.t, self.sched.ranks[r], self.P
        while True:
            b = self.waits[r]
            if b is not None:
                if b[0] == "reqs":
                    open_ = [q for q in b[1] if q[3] is None]
                    if open_:
                        self.on_blocked(r, open_)
                        return
                    done = max([t[r]] + [q[3] for q in b[1]])
                else:
                    c = self.colls[b[1]]
                    if len(c["t"]) < P:
                        return
                    if "out" not in c:
                        size, fl, info = c["size"], c["flops"] * self.inv, self.info
                        bound = None
                        if size > 0 and P <= DIRECT_MAX:
                            def bound(size=size):
                                if size not in self.bounds:
                                    self.bounds[size] = _direct_bound(P, size, info)
                                return self.bounds[size]
                        c["out"] = [x + fl for x in _collective(
                            c["op"], c["root"], c["t"], P, lambda i, j: info(i, j)[0] + size * info(i, j)[1], bound)]
                    done = c["out"][r]
                self.waits[r] = None
                if done > t[r]:          # the rank resumes later: let the earlier events go first
                    t[r] = done
                    if self.earliest() < done:
                        self.requeue(r, done)
                        return
            if self.pc[r] >= len(acts):
                self.fin[r] = True
                self.left -= 1
                return
            act = acts[self.pc[r]]
            self.pc[r] += 1
            op = act[0]
            if op == "compute":
                if self.inv:
                    t[r] += act[1] * self.inv
                    if self.earliest() < t[r]:
                        self.requeue(r, t[r])
                        return
                continue
            if op in ("send", "isend", "recv", "irecv"):
                _, peer, tag, size = act
                if not 0 <= peer < P:
                    continue                             # MPI_PROC_NULL: no message
                sending = op in ("send", "isend")
                req = self._post(r, sending, r if sending else peer, peer if sending else r, tag, size)
                if sending and size < DETACHED:
                    pass                                 # detached: the sender's wait returns at once
                elif op in ("isend", "irecv"):
                    self.pending[r].append(req)
                else:
                    self.waits[r] = ("reqs", [req])
            elif op == "wait":
                _, s_, d_, tag = act
                for i, q in enumerate(self.pending[r]):
                    if q[0] == s_ and q[1] == d_ and q[2] == tag:
                        self.waits[r] = ("reqs", [self.pending[r].pop(i)])
                        break
            elif op == "waitlast":                         # the last n requests posted (an expanded collective)
                mine = self.pending[r][-act[1]:]
                del self.pending[r][-act[1]:]
                if mine:
                    self.waits[r] = ("reqs", mine)
            elif op == "waitall":
                if self.pending[r]:
                    self.waits[r] = ("reqs", self.pending[r])
                    self.pending[r] = []
            else:
                seq = self.ncoll[r]
                self.ncoll[r] += 1
                c = self.colls.get(seq)
                if c is None:
                    c = self.colls[seq] = {"t": {}, "op": act[1], "root": act[2] if 0 <= act[2] < P else 0,
                                           "size": act[3] if len(act) > 3 else 0,
                                           "flops": act[4] if len(act) > 4 else 0.0}
                c["t"][r] = t[r]
                self.waits[r] = ("coll", seq)
                if len(c["t"]) == P:
                    self.entered(max(c["t"].values()))


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
    return _inturn(sched, pair, speed, contention=contention, fifo=False)


@lru_cache(maxsize=None)
def _fluid():
    """The flow replay's sharing in C (csrc/fluid/fluid.c)."""
    import ctypes as C

    from rankmap.profiler import native
    lib = C.CDLL(str(native.artifact("fluid")))
    lib.rm_fluid_share.restype = C.c_int64
    V = C.c_void_p
    lib.rm_fluid_share.argtypes = [C.c_int64, V, V, V, V, V, V, V, C.c_double, C.c_int64, V]
    lib.rm_inturn_replay.restype = C.c_int
    lib.rm_inturn_replay.argtypes = [C.c_int64] + [V] * 9 + [C.c_int64] + [V] * 7 + [C.c_int64, C.c_double, C.c_int,
                                                                                 C.c_int, V]
    return lib


_OPS = {"compute": 0, "send": 1, "isend": 2, "recv": 3, "irecv": 4, "wait": 5, "waitall": 6, "waitlast": 7}
_KINDS = {"bcast": 0, "reduce": 1, "gather": 1, "gatherv": 1, "allreduce": 2, "scan": 2, "exscan": 2,
          "barrier": 2, "scatter": 3, "scatterv": 3}       # any other: a direct exchange (4)


def _encoded(sched: Schedule) -> dict:
    """The schedule as the C replay reads it (csrc/fluid/inturn.c): per action an op code and
    (ia, ib, v) — peer, tag, bytes; a wait's source, tag, destination; waitlast's count in
    ib; a compute's flops as a double's bits in v; a collective's index into its table in v —
    each tag numbered in order met. Built once per actions (Schedule.shared): the trace's Python loop, ~1 s a million."""
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


def _inturn(sched: Schedule, pair, speed: float | None, contention: bool, fifo: bool) -> float | None:
    """run_time's (fifo False) and critical_latency's (fifo True) replay, in C."""
    import ctypes as C
    P = sched.size
    if P == 0:
        return 0.0
    e = _encoded(sched)
    rank_node, U, E, lat, spb, first, rid, cs, nres = _pair_arrays(pair, P)
    ptr = lambda a: a.ctypes.data_as(C.c_void_p)           # noqa: E731
    end = np.zeros(1)
    inv = 0.0 if not speed else 1.0 / speed
    rc = _fluid().rm_inturn_replay(P, ptr(e["roff"]), ptr(e["op"]), ptr(e["ia"]), ptr(e["ib"]), ptr(e["v"]),
                                   ptr(e["ckind"]), ptr(e["croot"]), ptr(e["csize"]), ptr(e["cflops"]),
                                   U, ptr(rank_node), ptr(E), ptr(lat), ptr(spb), ptr(first), ptr(rid), ptr(cs),
                                   nres, inv, int(bool(contention)), int(fifo), ptr(end))
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
    past it. The active flows (_Flows) are shared by that loop while they are few, and from
    _Flows.ARRAYS_AT under way with numpy on arrays, every sum in the order the flows
    started and ties between resources drawn as the loop draws them, so the rates are the
    loop's to the last bit (tests/test_critpath_run.py) and so are the estimates."""
    import heapq
    from itertools import count
    P = sched.size
    R = _Ranks(sched, pair, speed)
    info = R.info
    seq = count()
    heap: list = []                    # (time, seq, kind, payload): 0 rank resumes, 1 flow starts moving bytes
    flows = _Flows()
    now = [0.0]
    nxt = [float("inf")]               # when the first active flow ends
    work = [0]

    def share():
        work[0] += flows.share(budget, work[0])
        nxt[0] = flows.next_end(now[0])

    def advance(t):
        dt = t - now[0]
        if dt > 0:                     # never back: an event behind the clock happens now
            flows.advance(dt)
            now[0] = t

    def start(i, j, size, t0, reqs):
        lat, spb, res = info(i, j)
        if not res or not size:        # the loopback (or nothing to move): a fixed time
            done = t0 + lat + size * spb
            for q in reqs:
                q[3] = done
            return done
        heapq.heappush(heap, (t0 + lat, next(seq), 1, (size, res, reqs, lat)))
        return None

    queued = [False] * P
    for r in range(P):
        heapq.heappush(heap, (0.0, next(seq), 0, r))
        queued[r] = True
    waiting: dict = defaultdict(list)  # id(request) -> ranks to wake when it completes

    def wake(x, when):
        if not queued[x] and not R.fin[x]:
            queued[x] = True
            heapq.heappush(heap, (max(when, R.t[x]), next(seq), 0, x))

    def requeue(r, when):
        queued[r] = True
        heapq.heappush(heap, (when, next(seq), 0, r))

    def message(i, j, size, t0, reqs, other):
        d = start(i, j, size, t0, reqs)
        for x in waiting.pop(id(reqs[1]), ()) if d is not None else ():
            wake(x, d)

    on = [None] * P                    # the wait each rank is registered for

    def blocked(r, open_reqs):
        # once per wait: its requests only complete, so a rank woken and blocked again waits
        # for some of those it registered for, and a second registration would only wake it
        # where the first already has (a rank queued is not queued twice)
        if on[r] is R.waits[r]:
            return
        on[r] = R.waits[r]
        for q in open_reqs:
            waiting[id(q)].append(r)

    R.earliest = lambda: min(heap[0][0] if heap else float("inf"), nxt[0] if flows.alive else float("inf"))
    R.requeue, R.message, R.on_blocked = requeue, message, blocked
    R.entered = lambda last: [wake(x, last) for x in range(P)]
    while heap or flows.alive:
        th = heap[0][0] if heap else float("inf")
        if flows.alive and nxt[0] <= th:     # flows end first
            te = nxt[0]
            advance(te)
            for reqs in flows.end(1e-12 * max(te, 1e-9)):   # flows within rounding of their end end together
                for q in reqs:
                    q[3] = te
                    for x in waiting.pop(id(q), ()):
                        wake(x, te)
            share()
            continue
        tm, _, kind, payload = heapq.heappop(heap)
        if kind == 1:
            advance(tm)
            while True:                # the flows that start at this instant, then one sharing for all
                size, res, reqs, lat = payload
                flows.add(float(size), res, lat + WEIGHT_S * sum(c for _, c in res), reqs)
                if not heap or heap[0][2] != 1 or heap[0][0] > tm:
                    break
                payload = heapq.heappop(heap)[3]
            share()
            continue
        r = payload
        queued[r] = False
        if R.t[r] < now[0]:            # a rank cannot act before the clock (a collective's exit computed
            R.t[r] = now[0]            # for it below the time its last rank entered)
        if not R.fin[r]:
            R.step(r)
    return R.end()


class _Flows:
    """run_time_fluid's active flows, in the order they started. Few of them (a pipeline's
    messages, NPB LU's): a dict of [bytes left, rate, route, penalty, requests], shared by
    a loop over them in C (csrc/fluid/fluid.c: _share_dict), where numpy's cost per call
    would be most of the work. From ARRAYS_AT flows under way (NPB FT's alltoalls:
    hundreds) until fewer than DICT_BELOW are: arrays of bytes left, rate, 1 / penalty per flow and each flow's route
    as entries (flow, resource, seconds per byte), contiguous per flow, shared with numpy
    (_share_arrays); ended flows are dropped from the arrays when they are more than half
    of them. Both give the same rates to the last bit, so where it switches changes the
    time a replay takes, not its result."""

    ARRAYS_AT = 96
    DICT_BELOW = 48

    def __init__(self):
        self.alive = 0                             # flows not ended
        self.d: dict | None = {}                   # the dict form (None: the arrays)
        self.fid = 0
        self.rid: dict = {}                        # resource -> its number (arrays)
        self.routes: dict = {}                     # id(route) -> (route, numbers, seconds per byte)
        self.prepared: dict = {}                   # (id(route), penalty) -> (route, its entries for the C loop)
        self.num: dict = {}                        # resource -> its number (the dict form)
        # the prepared routes as the C loop reads them (grown by doubling): route k's entries
        # are r_first[k]:r_first[k + 1] of (resource number, seconds per byte, that / penalty)
        self.nprep = 0
        self.r_first = np.zeros(65, dtype=np.int64)
        self.r_ip = np.zeros(64)
        self.e_rid = np.zeros(256, dtype=np.int64)
        self.e_sc = np.zeros(256)
        self.e_scip = np.zeros(256)
        self.res_map = np.full(256, -1, dtype=np.int64)
        self.c_route, self.c_rate = np.zeros(64, dtype=np.int64), np.zeros(64)   # one call's flows and rates
        self.c_ptrs = None
        self.memo: dict = {}                       # the dict form's flows (their numbers in order) -> (work, rates)
        self.held = 0                              # the flows in the memo's keys
        self._empty_arrays()

    def _prepare(self, res: tuple, pen: float) -> tuple:
        """A flow's route as the sharing reads it: (its number among the (route, penalty)
        pairs met, 1 / penalty, ((resource number, seconds per byte, that over the
        penalty), ...)), also appended to the C loop's arrays; the products are the ones
        the loop took, so its sums are the same."""
        got = self.prepared.get((id(res), pen))
        if got is None or got[0] is not res:
            ip = 1.0 / pen
            ents = tuple((self.num.setdefault(r, len(self.num)), c, c * ip) for r, c in res)
            k = self.nprep          # (a count of its own: a key met again with another route gets a new number)
            self.nprep += 1
            got = self.prepared[(id(res), pen)] = (res, (k, ip, ents))
            self._c_route(k, ip, ents)
        return got[1]

    def _c_route(self, k: int, ip: float, ents: tuple) -> None:
        a = int(self.r_first[k])
        b = a + len(ents)
        if k + 1 >= len(self.r_ip):
            self.r_ip = np.concatenate([self.r_ip, np.zeros(len(self.r_ip))])
            self.r_first = np.concatenate([self.r_first, np.zeros(len(self.r_first) - 1, dtype=np.int64)])
        while b > len(self.e_rid):
            self.e_rid = np.concatenate([self.e_rid, np.zeros(len(self.e_rid), dtype=np.int64)])
            self.e_sc = np.concatenate([self.e_sc, np.zeros(len(self.e_sc))])
            self.e_scip = np.concatenate([self.e_scip, np.zeros(len(self.e_scip))])
        if len(self.num) > len(self.res_map):
            self.res_map = np.full(2 * len(self.num), -1, dtype=np.int64)
        self.c_ptrs = None       # (cheap: routes are prepared once each)
        self.r_ip[k] = ip
        self.r_first[k + 1] = b
        for i, (rid, c, cip) in enumerate(ents, a):
            self.e_rid[i], self.e_sc[i], self.e_scip[i] = rid, c, cip

    def _empty_arrays(self) -> None:
        self.n = self.m = 0                        # flows held, route entries held
        self.left = np.zeros(64)
        self.rate = np.zeros(64)
        self.ip = np.zeros(64)
        self.on = np.zeros(64, dtype=bool)
        self.first = np.zeros(65, dtype=np.int64)  # flow k's entries: first[k]:first[k + 1]
        self.kept: list = []                       # per flow (route, penalty, requests)
        self.e_flow = np.zeros(256, dtype=np.int64)
        self.e_res = np.zeros(256, dtype=np.int64)
        self.e_c = np.zeros(256)

    def add(self, size: float, res: tuple, pen: float, reqs) -> None:
        self.alive += 1
        if self.d is not None:
            self.d[self.fid] = [size, 0.0, res, pen, reqs, self._prepare(res, pen)]
            self.fid += 1
            if self.alive >= self.ARRAYS_AT:
                flows, self.d = self.d, None
                for f in flows.values():
                    self._add_array(f[0], f[2], f[3], f[4], f[1])
            return
        self._add_array(size, res, pen, reqs, 0.0)

    def _add_array(self, size: float, res: tuple, pen: float, reqs, rate: float) -> None:
        got = self.routes.get(id(res))
        if got is None or got[0] is not res:
            ids = np.array([self.rid.setdefault(r, len(self.rid)) for r, _ in res], dtype=np.int64)
            got = self.routes[id(res)] = (res, ids, np.array([c for _, c in res], dtype=float))
        _, ids, cs = got
        if self.n == len(self.left):
            if self.alive <= self.n // 2:
                self._compact()
            else:
                self._grow_flows()
        while self.m + len(ids) > len(self.e_res):
            self._grow_entries()
        k, m = self.n, self.m
        self.left[k], self.rate[k], self.ip[k], self.on[k] = size, rate, 1.0 / pen, True
        self.kept.append((res, pen, reqs))
        self.e_flow[m:m + len(ids)] = k
        self.e_res[m:m + len(ids)] = ids
        self.e_c[m:m + len(ids)] = cs
        self.m = m + len(ids)
        self.n = k + 1
        self.first[self.n] = self.m

    def _grow_flows(self) -> None:
        c = 2 * len(self.left)
        for a in ("left", "rate", "ip", "on"):
            old = getattr(self, a)
            new = np.zeros(c, dtype=old.dtype)
            new[:self.n] = old[:self.n]
            setattr(self, a, new)
        first = np.zeros(c + 1, dtype=np.int64)
        first[:self.n + 1] = self.first[:self.n + 1]
        self.first = first

    def _grow_entries(self) -> None:
        c = 2 * len(self.e_res)
        for a in ("e_flow", "e_res", "e_c"):
            old = getattr(self, a)
            new = np.zeros(c, dtype=old.dtype)
            new[:self.m] = old[:self.m]
            setattr(self, a, new)

    def _compact(self) -> None:
        keep = np.flatnonzero(self.on[:self.n])
        ek = self.on[self.e_flow[:self.m]]
        lens = np.diff(self.first[:self.n + 1])[keep]
        a, m = len(keep), int(lens.sum())
        for name in ("left", "rate", "ip", "on"):
            arr = getattr(self, name)
            arr[:a] = arr[keep]
        self.kept = [self.kept[k] for k in keep.tolist()]
        self.e_res[:m] = self.e_res[:self.m][ek]
        self.e_c[:m] = self.e_c[:self.m][ek]
        self.e_flow[:m] = np.repeat(np.arange(a), lens)
        self.first[0] = 0
        self.first[1:a + 1] = np.cumsum(lens)
        self.n, self.m = a, m

    def advance(self, dt: float) -> None:
        if self.d is not None:
            for f in self.d.values():
                f[0] -= f[1] * dt
            return
        n = self.n
        self.left[:n] -= self.rate[:n] * dt

    def end(self, eps: float) -> list:
        """End the flows done (within `eps` of their end), or else the first to end: their
        requests, in the order the flows started."""
        if self.d is not None:
            flows = self.d
            ended = [k for k, f in flows.items() if f[0] <= 1e-6 or (f[1] > 0 and f[0] / f[1] <= eps)]
            if not ended:
                ended = [min(flows, key=lambda k: flows[k][0] / flows[k][1] if flows[k][1] > 0 else float("inf"))]
            self.alive -= len(ended)
            return [flows.pop(k)[4] for k in ended]
        k = np.flatnonzero(self.on[:self.n])
        f0, f1 = self.left[k], self.rate[k]
        pos = f1 > 0
        t = np.full(len(k), np.inf)
        t[pos] = f0[pos] / f1[pos]
        done = k[(f0 <= 1e-6) | (pos & (t <= eps))]
        if not len(done):
            done = k[[int(np.argmin(t))]]
        self.on[done] = False
        self.alive -= len(done)
        out = [self.kept[x][2] for x in done.tolist()]
        if self.alive < self.DICT_BELOW:          # few left: back to the dict, in the same order
            k = np.flatnonzero(self.on[:self.n]).tolist()
            self.d = {self.fid + i: [float(self.left[x]), float(self.rate[x]), *self.kept[x],
                                     self._prepare(*self.kept[x][:2])]
                      for i, x in enumerate(k)}
            self.fid += len(k)
            self._empty_arrays()
        return out

    def next_end(self, t: float) -> float:
        if self.d is not None:
            return min((t + f[0] / f[1] if f[1] > 0 else float("inf") for f in self.d.values()),
                       default=float("inf"))
        k = np.flatnonzero(self.on[:self.n])
        f1 = self.rate[k]
        pos = f1 > 0
        if not pos.any():
            return float("inf")
        return float((t + self.left[k][pos] / f1[pos]).min())

    def share(self, budget, spent: int) -> int:
        """Max-min rates of the active flows (progressive filling: the resource that fills
        first at the level it allows, the first met of those that tie, the flows through it
        fixed at that level over their penalty, and again). Returns the work done (route
        entries + resources squared); TooCostly when `spent` plus it passes `budget`."""
        if self.d is not None:
            return self._share_dict(budget, spent)
        return self._share_arrays(budget, spent)

    MEMO_MAX = 2_000_000                       # flows held in the memo's keys, summed (memory: about 50 MB)

    def _share_dict(self, budget, spent: int) -> int:
        """The sharing by the C loop (csrc/fluid/fluid.c), remembered: the rates (and the
        work) depend only on the flows' routes and penalties in the order they started, and
        a pipeline or a halo exchange meets the same few flows again and again (NPB CG 16:
        65 % of the sharings), so a set met before takes its rates from then (the same
        numbers) and its work is counted again."""
        flows = self.d
        key = tuple([f[5][0] for f in flows.values()])
        got = self.memo.get(key)
        if got is None:
            n = len(key)
            if n > len(self.c_route):
                self.c_route, self.c_rate = np.zeros(2 * n, dtype=np.int64), np.zeros(2 * n)
                self.c_ptrs = None
            self.c_route[:n] = key
            if self.c_ptrs is None:          # the arrays' addresses, again only when one was grown
                self.c_ptrs = tuple(a.ctypes.data for a in (self.c_route, self.r_first, self.e_rid, self.e_sc,
                                                             self.e_scip, self.r_ip, self.res_map)) + \
                    (self.c_rate.ctypes.data,)
            p = self.c_ptrs
            w = _fluid().rm_fluid_share(n, *p[:7], float("inf") if budget is None else float(budget), int(spent), p[7])
            if w == -1:
                raise TooCostly
            if w < 0:
                raise MemoryError("rankmap: out of memory in the flow replay's sharing (fluid.c)")
            rates = self.c_rate[:n].tolist()
            for f, x in zip(flows.values(), rates):
                f[1] = x
            if self.held + len(key) <= self.MEMO_MAX:
                self.memo[key] = (w, tuple(rates))
                self.held += len(key)
            return w
        w, rates = got
        if budget is not None and spent + w > budget:
            raise TooCostly
        for f, x in zip(flows.values(), rates):
            f[1] = x
        return w

    def _share_arrays(self, budget, spent: int) -> int:
        if not self.alive:
            return 0
        ek = self.on[self.e_flow[:self.m]]
        ef = self.e_flow[:self.m][ek]
        er = self.e_res[:self.m][ek]
        ec = self.e_c[:self.m][ek]
        nres = len(self.rid)
        cnt = np.bincount(er, minlength=nres)
        live = cnt > 0
        w = self.work_of(len(ef), int(live.sum()))
        if budget is not None and spent + w > budget:
            raise TooCostly
        ip = self.ip[ef]                            # each entry's flow's 1 / penalty
        load = np.bincount(er, weights=ec * ip, minlength=nres)   # summed in the flows' order
        used = np.zeros(nres)
        fixed = np.zeros(len(ef), dtype=bool)       # per entry: its flow's rate is set
        met = None                                  # where each resource is first met (ties)
        with np.errstate(divide="ignore", invalid="ignore"):
            while live.any():
                v = (1.0 - used) / load
                v[~live] = np.inf
                best = int(np.argmin(v))
                lvl = float(v[best])
                tie = np.flatnonzero(v == lvl)
                if len(tie) > 1:                      # the first met of the lowest, as a loop over them would
                    if met is None:
                        met = np.full(nres, len(er))
                        np.minimum.at(met, er, np.arange(len(er)))
                    best = int(tie[np.argmin(met[tie])])
                if lvl < 0.0:
                    lvl = 0.0
                fl = ef[(er == best) & ~fixed]        # the flows through it not fixed yet
                now = np.zeros(self.n, dtype=bool)
                now[fl] = True
                mine = now[ef]                        # their entries
                fixed |= mine
                self.rate[fl] = lvl * self.ip[fl]
                xe = lvl * ip[mine]                   # each entry's flow's rate
                rr, cc = er[mine], ec[mine]
                np.add.at(used, rr, xe * cc)          # in the flows' order, as one by one
                np.subtract.at(load, rr, cc * ip[mine])
                cnt -= np.bincount(rr, minlength=nres)
                live &= cnt > 0
        return w

    @staticmethod
    def work_of(entries: int, resources: int) -> int:
        return entries + resources * resources
