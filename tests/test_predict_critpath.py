"""`rankmap predict` with a trace: the latency on the trace's critical path
(rankmap.mapper.critpath) replaces the per-rank sum of message latencies."""
from __future__ import annotations

import json

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import run_cli, ti_trace
from rankmap.mapper import spec as mspec
from rankmap.mapper.critpath import Schedule, critical_latency, read_schedule
from rankmap.mapper.predict import Network, predict


def const(a):
    return lambda i, j: a


def test_pipeline_pays_every_step():
    """0 -> 1 -> 2, ten times: each step waits for the one before, 2 hops of the chain then
    one more per round: 10 + 1 message latencies."""
    s = Schedule([[("send", 1, 0, 8)] * 10,
                  [("recv", 0, 0, 8), ("send", 2, 0, 8)] * 10,
                  [("recv", 1, 0, 8)] * 10])
    assert critical_latency(s, const(1.0)) == pytest.approx(11.0)


def test_overlapped_exchange_pays_once():
    """Rank 0 posts three receives and three sends and waits for all: one latency, not six."""
    s = Schedule([[("irecv", 1, 0, 8), ("irecv", 2, 0, 8), ("irecv", 3, 0, 8),
                   ("isend", 1, 0, 8), ("isend", 2, 0, 8), ("isend", 3, 0, 8), ("waitall",)]] +
                 [[("irecv", 0, 0, 8), ("isend", 0, 0, 8), ("waitall",)] for _ in range(3)])
    assert critical_latency(s, const(1.0)) == pytest.approx(1.0)


def test_large_blocking_send_waits_for_its_receive():
    """A send of 64 KiB or more waits for its receive; a smaller one returns at once."""
    big = 1 << 16
    s = Schedule([[("send", 1, 0, big), ("send", 2, 0, 8)],
                  [("recv", 2, 1, 8), ("recv", 0, 0, big)],
                  [("send", 1, 1, 8), ("recv", 0, 0, 8)]])
    # 2 -> 1 arrives at 1, rank 1 then takes 0's big message (at 2): only then does rank 0
    # send to rank 2, which has it at 3
    assert critical_latency(s, const(1.0)) == pytest.approx(3.0)
    s = Schedule([[("send", 1, 0, big - 1)] + s.ranks[0][1:]] + s.ranks[1:])   # detached: 0's message to 2 leaves at 0
    assert critical_latency(s, const(1.0)) == pytest.approx(2.0)


def test_allreduce_is_linear_reduce_then_binomial_bcast():
    s = Schedule([[("coll", "allreduce", 0)] for _ in range(8)])
    # into rank 0: 1; out of it along the binomial tree of 8: 3 levels
    assert critical_latency(s, const(1.0)) == pytest.approx(4.0)


def test_stuck_replay_gives_none():
    s = Schedule([[("recv", 1, 0, 8)], [("recv", 0, 0, 8)]])
    assert critical_latency(s, const(1.0)) is None


def test_read_schedule_and_predict(tmp_path):
    # a ring of 4 ranks, 20 rounds, each rank posting its receive then its send and waiting
    ring = [[x for _ in range(20) for x in (f"irecv {(r - 1) % 4} 0 1000 2", f"isend {(r + 1) % 4} 0 1000 2",
                                             "waitall 2", "compute 1000")] for r in range(4)]
    idx = ti_trace(tmp_path, ring)
    sched = read_schedule(idx)
    assert sched.size == 4 and sched.ranks[0][:2] == [("irecv", 3, 0, 1000), ("isend", 1, 0, 1000)]
    spec = {"hosts": ["a", "b"], "node_topology": ["pack:1 core:2"], "torus": "2", "coords": {"a": [0], "b": [1]}}
    m = mspec.build(spec)
    net = Network(link_bw=1e9, link_lat=1e-6, loop_bw=10e9, loop_lat=0.1e-6, nic_bw=None)
    M = sp.coo_matrix((np.full(4, 20e3), (np.arange(4), (np.arange(4) + 1) % 4)), shape=(4, 4))
    C = sp.coo_matrix((np.full(4, 20.0), (np.arange(4), (np.arange(4) + 1) % 4)), shape=(4, 4))
    slot = np.arange(4)
    plain = predict(M, C, m, slot, net)
    r = predict(M, C, m, slot, net, schedule=sched)
    assert plain["latency_from"] == "per-rank sum" and r["latency_from"] == "critical path"
    # every round waits for the slowest of its messages, one link: 20 x 1 us
    assert r["latency"] == pytest.approx(20e-6) and r["bandwidth"] == plain["bandwidth"]
    (tmp_path / "bad").mkdir()
    assert read_schedule(ti_trace(tmp_path / "bad", [["frobnicate 1 2 3"]])) is None


def test_predict_cli_reads_the_trace_order(tmp_path):
    ring = [[x for _ in range(20) for x in (f"irecv {(r - 1) % 4} 0 1000 2", f"isend {(r + 1) % 4} 0 1000 2",
                                             "waitall 2")] for r in range(4)]
    idx = ti_trace(tmp_path, ring)
    (tmp_path / "hf").write_text("a\nb\na\nb\n")
    res = run_cli("predict", idx, tmp_path / "hf", "--nodes", "a,b", "--node-topology", "pack:1 core:2",
                  "--link-bw", "1", "--link-lat", "1", "--loopback-bw", "10", "--loopback-lat", "0.1", "--json")
    assert res.returncode == 0, res.stderr
    est = json.loads(res.stdout)["estimates"]["hf"]
    # a and b under one switch (no --network): 2 links a message, each round waits for one
    assert est["latency_from"] == "critical path" and est["latency"] == pytest.approx(20 * 2e-6)
    assert set(est) >= {"seconds", "latency", "bandwidth", "limited_by", "bounds"}


def test_collectives_with_counts_carry_their_bytes(tmp_path):
    """An SMPI trace's allgatherv, alltoallv and reduce_scatter were replayed as carrying no
    bytes: an all-gather SpMV's estimate was its latency alone, 640x below its own bandwidth
    bound (the docs audit). With equal counts each replays as its fixed-size counterpart."""
    P, c = 4, 262144

    def est(lines, name):
        d = tmp_path / name
        d.mkdir()
        idx = ti_trace(d, [[ln] * 5 for ln in lines])
        (d / "hf").write_text("a\nb\na\nb\n")
        res = run_cli("predict", idx, d / "hf", "--nodes", "a,b", "--node-topology", "pack:1 core:2",
                      "--link-bw", "1", "--link-lat", "1", "--loopback-bw", "10", "--loopback-lat", "0.1", "--json")
        assert res.returncode == 0, res.stderr
        return json.loads(res.stdout)["estimates"]["hf"]

    same = " ".join([str(c)] * P)
    ag = est([f"allgather {c} {c} 2 2"] * P, "ag")
    agv = est([f"allgatherv {c} {same} 2 2"] * P, "agv")
    a2a = est([f"alltoall {c} {c} 2 2"] * P, "a2a")
    a2av = est([f"alltoallv {c * P} {same} {c * P} {same} 2 2"] * P, "a2av")
    assert agv["seconds"] == pytest.approx(ag["seconds"], rel=1e-9) and agv["seconds"] > 10 * agv["latency"]
    assert a2av["seconds"] > 10 * a2av["latency"]
    # every rank's share crosses the links: not below the busiest link's bytes over its bandwidth
    assert agv["seconds"] >= agv["bounds"]["links"] * 0.999 and a2av["seconds"] >= a2av["bounds"]["links"] * 0.999
    assert a2a["seconds"] > 10 * a2a["latency"]


def test_alltoallv_messages_are_capped(tmp_path, monkeypatch):
    """The first alltoallvs of a trace become their messages (every other rank's, empty ones
    too), as long as they add at most A2AV_MESSAGES_MAX; the later ones stay one exchange of
    the mean size, on every rank alike."""
    from rankmap.mapper import critpath
    P = 4
    monkeypatch.setattr(critpath, "A2AV_MESSAGES_MAX", 2 * P * (P - 1))
    line = "alltoallv 6 0 1 2 3 6 0 1 2 3 0 0"
    sched = read_schedule(ti_trace(tmp_path, [[line] * 3 for _ in range(P)]))
    for r, acts in enumerate(sched.ranks):
        assert [a[0] for a in acts].count("isend") == 2 * (P - 1)
        assert sorted(a[3] for a in acts if a[0] == "irecv") == sorted([8 * i for i in range(P) if i != r] * 2)
        assert [a[:2] for a in acts if a[0] == "coll"] == [("coll", "alltoallv")]
        assert len(acts[-1]) == 5 and acts[-1][3] == 12           # the mean of the counts, x 8 bytes


def test_rooted_collectives_are_capped(tmp_path, monkeypatch):
    """The first rooted collectives of a trace (bcast, reduce, allreduce, barrier, gather(v),
    scatter(v), reducescatter) become their messages, at most 2(P - 1) each under
    A2AV_MESSAGES_MAX; the later ones keep their closed form, on every rank alike."""
    from rankmap.mapper import critpath
    P = 4
    monkeypatch.setattr(critpath, "A2AV_MESSAGES_MAX", 2 * 2 * (P - 1))
    sched = read_schedule(ti_trace(tmp_path, [["bcast 10 1 0", "reduce 10 0 2 0", "allreduce 10 0 0"]
                                              for _ in range(P)]))
    for r, acts in enumerate(sched.ranks):
        assert [a[:2] for a in acts if a[0] == "coll"] == [("coll", "allreduce")]
        assert not any(a[0] == "coll" and a[1] in ("bcast", "reduce") for a in acts)
    assert [a[0] for a in sched.ranks[2] if a[0] not in ("waitlast", "coll")] == ["recv"] + ["irecv"] * (P - 1)


def test_gatherv_and_scatterv_traffic_is_their_pairs(tmp_path):
    """A trace's gatherv and scatterv are read from each rank's own line (the counts list is
    the root's only): rank r's block to or from the root, whatever the root. (They were read
    from rank 0's line as a gather to rank 0 of the mean count: nothing where rank 0 was not
    the root.) A reduce_scatter of SMPI's default: a reduce to rank 0, then its scatter."""
    from rankmap.profiler.formats import read_traffic
    P = 4
    zeros = " ".join(["0"] * P)
    lines = [[f"gatherv {10 * (r + 1)} {'10 20 30 40' if r == 2 else zeros} 2 2 2",
              f"scatterv {'5 6 7 8' if r == 1 else zeros} {5 + r} 1 2 2"] for r in range(P)]
    (tmp_path / "g").mkdir(), (tmp_path / "rs").mkdir()
    t = read_traffic(ti_trace(tmp_path / "g", lines), "smpi", "none")
    want = np.zeros((P, P))
    for r in range(P):
        if r != 2:
            want[r, 2] += 10 * (r + 1)
        if r != 1:
            want[1, r] += 5 + r
    assert np.array_equal(t.bytes.toarray(), want)
    rs = read_traffic(ti_trace(tmp_path / "rs", [["reducescatter 100 100 100 100 0 2"]] * P), "smpi", "smpi")
    assert np.array_equal(rs.bytes.toarray()[:, 0], [0, 400, 400, 400])       # the whole vector to rank 0
    assert np.array_equal(rs.bytes.toarray()[0], [0, 100, 100, 100])          # each rank's block back
