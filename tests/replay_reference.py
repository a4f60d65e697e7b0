"""The trace replays as they were written in Python before they moved to C
(csrc/fluid/replay.c), kept as the reference the C replays are checked against to the last
bit (tests/test_critpath_native.py, tests/test_critpath_run.py): critical_latency's queue and
run_time's heap of ranks over _Ranks, the collectives' algorithms, and run_time_fluid's
events over _Flows (its flows as a dict shared by the C loop of fluid.c, or as arrays shared
with numpy)."""
from __future__ import annotations

import heapq
from collections import defaultdict, deque
from itertools import count

import numpy as np

from rankmap.mapper.critpath import DETACHED, DIRECT_MAX, WEIGHT_S, TooCostly, _fluid


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


def ref_critical_latency(sched, alpha):
    P = sched.size
    R = _Ranks(sched, lambda i, j: (float(alpha(i, j)), 0.0, ()), None)
    ready, queued = deque(range(P)), [True] * P

    def wake(x):                       # a rank whose wait may be over: run it again
        if not queued[x] and not R.fin[x]:
            queued[x] = True
            ready.append(x)

    def message(i, j, size, t0, reqs, other):
        reqs[0][3] = reqs[1][3] = t0 + R.info(i, j)[0]
        wake(other)

    R.earliest = lambda: float("inf")
    R.message = message
    R.entered = lambda last: [wake(x) for x in range(P)]
    while ready:
        r = ready.popleft()
        queued[r] = False
        if not R.fin[r]:
            R.step(r)
    return R.end()


def ref_run_time(sched, pair, speed, contention=True):
    P = sched.size
    R = _Ranks(sched, pair, speed)
    info = R.info
    free: dict = defaultdict(float)     # resource -> time its queue is empty

    def transfer(i, j, size, start):
        lat, spb, res = info(i, j)
        end = start + size * spb
        if contention and size:
            for rid, c in res:
                f = free[rid]
                e = (f if f > start else start) + size * c
                free[rid] = e
                if e > end:
                    end = e
        return end + lat

    heap = [(0.0, r) for r in range(P)]
    queued = [True] * P

    def wake(x):
        if not queued[x] and not R.fin[x]:
            queued[x] = True
            heapq.heappush(heap, (R.t[x], x))

    def requeue(r, when):
        queued[r] = True
        heapq.heappush(heap, (when, r))

    def message(i, j, size, t0, reqs, other):
        reqs[0][3] = reqs[1][3] = transfer(i, j, size, t0)
        wake(other)

    R.earliest = lambda: heap[0][0] if heap else float("inf")
    R.requeue, R.message = requeue, message
    R.entered = lambda last: [wake(x) for x in range(P)]
    while heap:
        _, r = heapq.heappop(heap)
        queued[r] = False
        if not R.fin[r]:
            R.step(r)
    return R.end()


def ref_run_time_fluid(sched, pair, speed, budget=None):
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
