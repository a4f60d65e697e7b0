"""The replays in C (csrc/fluid/replay.c, critpath._replay) against the Python event loops
they replaced (tests/replay_reference.py): critical_latency, run_time and run_time_fluid.
Every time must be the same to the last bit, on random schedules (every action kind, sizes on
both sides of the detached threshold, collectives of every kind, shared resources) and a
trace read from SMPI's format under a machine model; the flow replay's budget stops both at
the same sharing."""
from __future__ import annotations

import random

import numpy as np
import pytest

from conftest import ti_trace
from replay_reference import ref_critical_latency, ref_run_time, ref_run_time_fluid
from rankmap.mapper import spec as mspec
from rankmap.mapper.critpath import (DETACHED, PairTable, Schedule, TooCostly, alpha_of, critical_latency,
                                     read_schedule, run_time, run_time_fluid)
from rankmap.mapper.predict import Network, pair_model


def random_schedule(P: int, rounds: int, seed: int) -> Schedule:
    """Rounds of compute, collectives (every kind, sizes 0 to 100 kB, some with flops) and
    point-to-point exchanges: each rank posts its receives, then blocking or non-blocking
    sends on either side of the detached threshold, then waits for its receives one by one
    or all at once; two tags a round, so some messages share (source, destination, tag)."""
    rng = random.Random(seed)
    ranks: list = [[] for _ in range(P)]
    for rnd in range(rounds):
        kind = rng.choice("pcx")
        if kind == "c":
            for r in range(P):
                if rng.random() < 0.7:
                    ranks[r].append(("compute", rng.choice([1e3, 1e5, 3.3e6])))
        elif kind == "x":
            op = rng.choice(["bcast", "reduce", "allreduce", "barrier", "scatter", "gather", "allgather", "alltoall"])
            root, size, flops = rng.randrange(P), rng.choice([0, 8, 1000, 100000]), rng.choice([0.0, 100.0])
            for r in range(P):
                ranks[r].append(("coll", op, root, size, flops))
        else:
            msgs = [(i, j, 2 * rnd + rng.randrange(2), rng.choice([8, 5000, DETACHED - 1, DETACHED, 300000]))
                    for i, j in ((rng.randrange(P), rng.randrange(P)) for _ in range(rng.randrange(1, 2 * P)))
                    if i != j]
            for r in range(P):
                inc = [m for m in msgs if m[1] == r]
                ranks[r] += [("irecv", m[0], m[2], m[3]) for m in inc]
                ranks[r] += [(rng.choice(["send", "isend"]), m[1], m[2], m[3]) for m in msgs if m[0] == r]
                if rng.random() < 0.5:
                    ranks[r] += [("wait", m[0], m[1], m[2]) for m in rng.sample(inc, len(inc))]
                ranks[r].append(("waitall",))
    return Schedule(ranks)


def test_the_same_as_the_python_loops_on_random_schedules():
    """150 random schedules of 2-9 ranks, with compute free and at 1 Gflop/s, with and
    without contention, over routes that share resources: every time the same to the bit
    (collectives make a rank wake itself and yield: the heap holds it twice, as Python's)."""
    def pair(i, j):
        return (1e-6 * (1 + (i + j) % 3), 1e-9, ((("l", i % 2), 1e-9), (("n", j), 5e-10)))

    for seed in range(150):
        s = random_schedule(2 + seed % 8, 8, seed)
        for speed in (None, 1e9):
            assert run_time(s, pair, speed) == ref_run_time(s, pair, speed), (seed, speed)
        assert run_time(s, pair, 1e9, contention=False) == ref_run_time(s, pair, 1e9, contention=False), seed
        alpha = lambda i, j: 1e-6 * (1 + abs(i - j))    # noqa: E731
        assert critical_latency(s, alpha) == ref_critical_latency(s, alpha), seed
        for speed in (None, 1e9):
            assert run_time_fluid(s, pair, speed) == ref_run_time_fluid(s, pair, speed), (seed, speed)


def test_the_flow_budget_stops_both_alike():
    """The flow replay's work budget: both replays stop (TooCostly) below the work a whole
    replay takes and finish above it, at the same budgets."""
    def pair(i, j):
        return (1e-6, 1e-9, ((("l", i % 2), 1e-9), (("l", 2 + j % 3), 1e-9)))

    s = random_schedule(6, 12, 7)
    for budget in (10, 100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 10 ** 4, 10 ** 7):
        got = []
        for replay in (run_time_fluid, ref_run_time_fluid):
            try:
                got.append(replay(s, pair, 1e9, budget=budget))
            except TooCostly:
                got.append("too costly")
        assert got[0] == got[1], (budget, got)


def test_the_same_on_a_machine_model(tmp_path):
    """A trace read from SMPI's format (a linear alltoall expanded into its messages, a
    reduce with flops, waits by request), replayed under pair_model's PairTable on a torus
    with cores and NIC limiters, two ranks a node: the same to the bit."""
    P = 8
    lines = [[f"compute {1e6 * (r + 1)}", f"Irecv {(r - 1) % P} 0 70000", f"Isend {(r + 1) % P} 0 70000",
              f"wait {(r - 1) % P} {r} 0", "waitall", "alltoall 2000 2000", "reduce 100 50 2",
              f"send {(r + 3) % P} 5 10", f"recv {(r - 3) % P} 5 10", "allreduce 8 8"] for r in range(P)]
    s = read_schedule(ti_trace(tmp_path, lines))
    assert any(a[0] == "waitlast" for a in s.ranks[0])
    m = mspec.build({"hosts": [f"n{i}" for i in range(4)], "node_topology": ["core:2"], "torus": "2x2",
                     "coords": {f"n{i}": [i // 2, i % 2] for i in range(4)}})
    net = Network(link_bw=1e9, link_lat=2e-6, loop_bw=1e10, loop_lat=1e-7, nic_bw=5e8, core_speed=1e9)
    for slot in (np.arange(P), np.array([0, 2, 4, 6, 1, 3, 5, 7])):
        pair = pair_model(m, slot, net)
        assert isinstance(pair, PairTable)
        for speed in (None, net.core_speed):
            got = run_time(s, pair, speed)
            assert got is not None and got == ref_run_time(s, pair, speed)
            got = run_time_fluid(s, pair, speed)
            assert got is not None and got == ref_run_time_fluid(s, pair, speed)
        alpha = alpha_of(m, slot, net.link_lat, net.loop_lat)
        assert critical_latency(s, alpha) == ref_critical_latency(s, lambda i, j: alpha(i, j)[0])


def test_stuck_and_empty():
    """A replay that gets stuck gives None; no ranks, 0."""
    s = Schedule([[("recv", 1, 0, 8)], [("recv", 0, 0, 8)]])
    assert run_time(s, lambda i, j: (1.0, 0.0, ()), None) is None
    assert critical_latency(s, lambda i, j: 1.0) is None
    assert run_time_fluid(s, lambda i, j: (1.0, 1e-9, (("l", 1e-9),)), None) is None
    assert run_time(Schedule([]), lambda i, j: (1.0, 0.0, ()), None) == 0.0


def test_counts_that_are_not_numbers(tmp_path):
    """A trace whose counts or flops are not finite numbers is not replayed (None: predict
    falls back to its bounds), not a traceback or an infinite time."""
    for bad in ("send 1 0 inf", "compute inf", "compute nan", "send 1 0 1e400"):
        d = tmp_path / bad.replace(" ", "_")
        d.mkdir()
        assert read_schedule(ti_trace(d, [[bad], ["recv 0 0 8"]])) is None, bad


def test_the_same_on_odd_schedules():
    """Sends to oneself, to MPI_PROC_NULL (peers out of range), empty messages, waits for a
    request never posted, waitall with nothing pending, collectives rooted out of range,
    ranks with no actions: the C replays as the Python loops, to the bit (or both stuck)."""
    def pair(i, j):
        return (1e-6 * (1 + (i * 7 + j) % 4), 1e-9, ((("l", (i + j) % 3), 1e-9),))

    for seed in range(120):
        rng = random.Random(seed)
        P = 1 + seed % 6
        ranks: list = [[] for _ in range(P)]
        for r in range(P):
            for _ in range(rng.randrange(0, 6)):
                k = rng.randrange(7)
                if k == 0:
                    ranks[r] += [("irecv", r, 3, 100000), ("send", r, 3, 100000), ("waitall",)]
                elif k == 1:
                    ranks[r].append((rng.choice(["send", "isend", "recv", "irecv"]), rng.choice([-1, P, P + 7]), 0, 10))
                elif k == 2:
                    ranks[r].append(("wait", (r + 1) % P, r, 99))
                elif k == 3:
                    ranks[r].append(("waitall",))
                elif k == 4:
                    ranks[r].append(("compute", 1e5))
                elif k == 5 and P > 1:
                    ranks[r] += [("isend", (r + 1) % P, 5, 0), ("irecv", (r - 1) % P, 5, 0), ("waitall",)]
        if seed % 3 == 0:
            for r in range(P):
                ranks[r].append(("coll", rng.choice(["bcast", "reduce", "scatter", "alltoall"]), P + 3, 64, 0.0))
        s = Schedule(ranks)
        for speed in (None, 1e9):
            assert run_time(s, pair, speed) == ref_run_time(s, pair, speed), seed
            assert run_time_fluid(s, pair, speed) == ref_run_time_fluid(s, pair, speed), seed
        alpha = lambda i, j: 1e-6                        # noqa: E731
        assert critical_latency(s, alpha) == ref_critical_latency(s, alpha), seed


def test_replay_speed_bench_runs(tmp_path):
    """bench/replay_speed.py on a small trace in a WORK layout: every replay the same as the
    reference, exit 0."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[1]
    d = tmp_path / "traces" / "tiny" / "trace"
    d.mkdir(parents=True)
    P = 4
    idx = ti_trace(d, [[f"compute {1e6 * (r + 1)}", f"Isend {(r + 1) % P} 0 200000", f"Irecv {(r - 1) % P} 0 200000",
                        "waitall", "allreduce 8 8"] for r in range(P)])
    idx.rename(d / "replay.ti")                      # (the index names its rank files by absolute path)
    out = subprocess.run([sys.executable, str(root / "bench" / "replay_speed.py"), "--work", str(tmp_path), "--cases",
                          "tiny", "--machines", "desmos", "--scales", "1"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    rows = [ln for ln in out.stdout.splitlines() if ln.startswith("tiny ")]
    assert len(rows) == 10 and all(ln.endswith("same") for ln in rows)
