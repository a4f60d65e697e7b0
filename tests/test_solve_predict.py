"""The final choice with a network model (mapper/solve.py choose_predicted, run_map's network):
among the mappings solve found and the default orders, the one `rankmap predict` estimates
fastest, when it beats the cost's choice by more than PREDICT_MARGIN; without a network
nothing changes. And the benchmark's side (bench/real_apps/replay.py): rankmap's placements
mapped per network speed, a cached replay of another hostfile replayed again."""
from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import scipy.sparse as sp

from rankmap.mapper import machine, solve
from rankmap.mapper.mapping import _predictor
from rankmap.mapper.predict import Network
from rankmap.profiler.traffic import Traffic

from conftest import ROOT, run_cli

sys.path.insert(0, str(ROOT / "bench"))
from real_apps import replay as R  # noqa: E402


def chatty_and_heavy() -> Traffic:
    """4 ranks, 2 nodes of 2 cores. (0,2) and (1,3) exchange 1 MB in one message each; (0,1)
    and (2,3) 1 kB in 1,000 messages. The cost (bytes x level costs) keeps the megabytes on a
    node: {0,2} {1,3}; block ({0,1} {2,3}) cuts them. With a 1 ms link latency the thousand
    messages cost 1 s between nodes and the megabyte 1 ms: predict prefers block."""
    heavy, chatty = 1e6, 1e3
    r = [0, 2, 1, 3, 0, 1, 2, 3]
    c = [2, 0, 3, 1, 1, 0, 3, 2]
    b = [heavy] * 4 + [chatty] * 4
    m = [1] * 4 + [1000] * 4
    return Traffic(bytes=sp.csr_matrix((b, (r, c)), shape=(4, 4)), msgs=sp.csr_matrix((m, (r, c)), shape=(4, 4)),
                   source="test", format="test")


SLOW_LATENCY = Network(link_bw=1e9, link_lat=1e-3, loop_bw=1e10, loop_lat=1e-7, nic_bw=None)


def test_predict_picks_block_over_a_cheaper_mapping():
    m = machine.build(["a", "b"], ["core:2"])
    t = chatty_and_heavy()
    plain = solve.solve(t, m)
    # the cost alone: the megabytes on a node (cyclic's order here), clearly cheaper than block
    assert plain.cost < plain.defaults["block"] * (1 - solve.MIN_GAIN) and plain.chosen != "block"
    node = m.slot_node[plain.slot_of_rank]
    assert node[0] == node[2] and node[1] == node[3]
    assert plain.predicted == {}
    r = solve.solve(t, m, predictor=_predictor(t, m, SLOW_LATENCY))
    assert r.chosen == "block" and r.fell_back
    assert np.array_equal(m.slot_node[r.slot_of_rank], m.slot_node[np.arange(4)])
    assert r.cost == r.defaults["block"] > plain.cost
    assert r.predicted["block"] < 0.01 * r.predicted[plain.chosen]
    assert any(x.startswith("network model: block is predicted") for x in r.notes)
    # a network where bandwidth decides (no latency): the cost's choice is kept, the estimates reported
    fast = Network(link_bw=1e6, link_lat=0.0, loop_bw=1e10, loop_lat=0.0, nic_bw=None)
    k = solve.solve(t, m, predictor=_predictor(t, m, fast))
    assert k.chosen == plain.chosen and np.array_equal(k.slot_of_rank, plain.slot_of_rank)
    assert k.predicted[k.chosen] < k.predicted["block"]


def test_without_a_network_nothing_changes():
    m = machine.build([f"n{i}" for i in range(4)], ["pack:2 core:4"], torus="2x2x1")
    rng = np.random.default_rng(7)
    t = Traffic(bytes=sp.csr_matrix(sp.random(32, 32, density=0.15, random_state=rng) * 1e6), source="r",
                format="r")
    a = solve.solve(t, m, seed=1)
    b = solve.solve(t, m, seed=1, predictor=_predictor(t, m, None))
    assert _predictor(t, m, None) is None
    assert np.array_equal(a.slot_of_rank, b.slot_of_rank) and a.cost == b.cost and a.chosen == b.chosen
    assert a.candidates == b.candidates and a.notes == b.notes and b.predicted == {}


def test_choose_predicted_margin_ties_and_nodes():
    m = machine.build(["a", "b"], ["core:2"])
    pool = {"mine": np.array([0, 2, 1, 3]), "block": np.array([0, 1, 2, 3]), "same-nodes": np.array([1, 0, 3, 2]),
            "other": np.array([2, 3, 0, 1])}
    calls = []

    def pred(values):
        def f(slot):
            calls.append(tuple(slot))
            return values[tuple(m.slot_node[slot])]
        return f
    # "same-nodes" puts every rank on block's nodes: predicted once, same value
    v = {(0, 1, 0, 1): 1.0, (0, 0, 1, 1): 0.995, (1, 1, 0, 0): 0.995}
    pick, p = solve.choose_predicted(pool, "mine", m, pred(v))
    assert pick == "mine" and len(calls) == 3 and p["same-nodes"] == p["block"]    # 0.5 % better: within the margin
    v = {(0, 1, 0, 1): 1.0, (0, 0, 1, 1): 0.98, (1, 1, 0, 0): 0.98}
    pick, _ = solve.choose_predicted(pool, "mine", m, pred(v))
    assert pick == "block"                                                           # 2 % better; a tie: the first
    v = {(0, 1, 0, 1): 1.0, (0, 0, 1, 1): 0.98, (1, 1, 0, 0): 0.5}
    assert solve.choose_predicted(pool, "mine", m, pred(v))[0] == "other"


def test_bench_maps_per_speed_and_replays_a_changed_hostfile(tmp_path):
    pl = {"hosts": {"block": ["n0", "n0"], "rankmap-b": ["n0", "n1"], "rankmap-c": ["n0", "n1"]},
          "hosts_at": {"x0.0625": {"rankmap-b": ["n1", "n0"], "rankmap-c": ["n0", "n1"]}}}
    assert R.hosts_at(pl, 1.0) == pl["hosts"]
    h = R.hosts_at(pl, 0.0625)
    assert h["rankmap-b"] == ["n1", "n0"] and h["block"] == ["n0", "n0"]
    assert R.hosts_at(pl, 0.0625, predict_choice=False)["rankmap-b"] == ["n0", "n1"]
    (tmp_path / "x0.0625").mkdir()
    (tmp_path / "x0.0625" / "hostfile-rankmap-b").write_text("n0\nn1\n")
    assert R._replayed_hosts(tmp_path, 0.0625, "rankmap-b") == ["n0", "n1"] != h["rankmap-b"]   # stale: replayed
    assert R._replayed_hosts(tmp_path, 0.0625, "rankmap-c") is None


def test_map_cli_network_speeds(tmp_path):
    csv = tmp_path / "t.csv"      # the 4-rank case above as a traffic file (one message per pair: bytes decide)
    csv.write_text("src,dst,bytes\n0,2,1000000\n2,0,1000000\n1,3,1000000\n3,1,1000000\n0,1,1000\n1,0,1000\n"
                   "2,3,1000\n3,2,1000\n")
    probe = tmp_path / "probe.json"
    probe.write_text(json.dumps({"latency_us": {"same socket": 0.1, "neighbour node": 1000},
                                 "bandwidth_GBps": {"same socket": 10, "neighbour node": 1}}))
    machine_opts = ["--nodes", "a,b", "--node-topology", "core:2"]
    res = run_cli("map", csv, *machine_opts, "--out", tmp_path / "plain")
    assert res.returncode == 0, res.stdout + res.stderr
    plain = json.loads((tmp_path / "plain" / "report.json").read_text())
    assert "predicted_comm_seconds" not in plain
    res = run_cli("map", csv, *machine_opts, "--network-speeds", probe, "--out", tmp_path / "net")
    assert res.returncode == 0, res.stdout + res.stderr
    rep = json.loads((tmp_path / "net" / "report.json").read_text())
    pred = rep["predicted_comm_seconds"]
    assert pred[rep["chosen"]] <= min(pred.values()) * 1.01 + 1e-15
    assert rep["chosen"] == plain["chosen"]      # bytes decide here: the cost's choice is also predict's
    res = run_cli("map", csv, *machine_opts, "--network-speeds", tmp_path / "none.json", "--out", tmp_path / "x")
    assert res.returncode != 0 and "none.json" in res.stdout + res.stderr
    (tmp_path / "notaplatform").mkdir()
    res = run_cli("map", csv, *machine_opts, "--network-speeds", tmp_path / "notaplatform", "--out", tmp_path / "y")
    err = res.stdout + res.stderr
    assert res.returncode != 0 and "--network-speeds" in err and "--platform" not in err and "Traceback" not in err


def test_bench_table_scores_the_run_estimate():
    """bench/real_apps table: predict's run estimate (predicted_run_seconds) against the
    replayed time, per row and over the tune / held-out rows; rows without it are left out."""
    from real_apps import predicted, table

    def place(sim, run, alone=1.0):
        return {"simulated_seconds": sim, "comm_seconds": sim - 1.0, "comm_alone_seconds": alone,
                "predicted_comm_seconds": alone, "predicted_run_seconds": run}
    res = {"block": place(2.0, 2.2), "cyclic": place(3.0, 2.7), "random": place(2.5, 2.6),
           "rankmap-b": place(1.8, 1.8), "rankmap-c": place(1.8, 1.8)}
    r = {"case": "x-16", "app": "x", "ranks": 16, "machine": "m", "res": res}
    table._derive(r)
    assert r["run_err"]["block"] == pytest.approx(0.1) and r["run_err"]["cyclic"] == pytest.approx(-0.1)
    ok, tot = r["order_run"]
    assert tot == 9 and ok == 9                       # every pair apart by > 1 % in the replay's order
    s = predicted.run_stats([r])
    assert s["mae"] == pytest.approx((0.1 + 0.1 + 0.04) / 5) and s["max"] == pytest.approx(0.1)
    del res["random"]["predicted_run_seconds"]
    r2 = {"case": "x-16", "app": "x", "ranks": 16, "res": res}
    table._derive(r2)
    assert "run_err" not in r2 and predicted.run_stats([r2])["rows"] == 0
    assert any("run time" in x for x in predicted.lines([r]))


def test_choose_predicted_again_when_the_model_changes():
    """A predictor that changes its model midway (epoch: predict's run estimate falling back to
    the in-turn replay) has every candidate estimated again, with the new model."""
    m = machine.build(["a", "b"], ["core:2"])
    pool = {"mine": np.array([0, 2, 1, 3]), "block": np.array([0, 1, 2, 3])}
    state = {"epoch": 0, "calls": 0}

    def pred(slot):
        state["calls"] += 1
        if state["calls"] == 2:
            state["epoch"] = 1           # the second estimate switched the model
        new = state["epoch"] == 1
        return (1.0, 0.5) if tuple(m.slot_node[slot]) == (0, 1, 0, 1) else ((0.9, 0.4) if new else (2.0, 0.5))
    pred.epoch = lambda: state["epoch"]
    pick, p = solve.choose_predicted(pool, "mine", m, pred)
    assert state["calls"] == 4 and pick == "block" and p == {"mine": 1.0, "block": 0.9}


def _two_stage(screen_of: dict, flows_of: dict):
    """Four candidates on three 2-core nodes and a predictor whose screening and final (flow)
    estimates are given per candidate; `seen` records the final estimates asked for."""
    m = machine.build(["a", "b", "c"], ["core:2"])
    pool = {"mine": np.array([0, 2, 1, 3]), "x": np.array([0, 1, 2, 3]), "y": np.array([4, 5, 0, 1]),
            "z": np.array([2, 3, 4, 5])}
    nodes = lambda slot: tuple(m.slot_node[slot])                        # noqa: E731
    name = {nodes(v): k for k, v in pool.items()}
    seen = []

    def pred(slot):
        return screen_of[name[nodes(slot)]], 0.5
    pred.final = lambda slot: seen.append(name[nodes(slot)]) or (flows_of[name[nodes(slot)]], 0.5)
    return m, pool, pred, seen


def test_choose_predicted_final_estimate_of_the_best_few(monkeypatch):
    """A predictor with a final estimate (the flow replay, where the screening replays in
    turn): the screening's FINAL_TOP best node sets and the cost's choice are estimated again
    by it, and the pick is made among those by it; a final estimate that has nothing to add
    (None) leaves the screening's choice."""
    monkeypatch.setattr(solve, "FINAL_TOP", 2)
    m, pool, pred, seen = _two_stage({"mine": 1.0, "x": 0.8, "y": 0.7, "z": 0.9},
                                     {"mine": 1.0, "x": 0.75, "y": 0.95, "z": 0.1})
    pick, p = solve.choose_predicted(pool, "mine", m, pred)
    # y and x screened best: y's flows show it slower than x; z (0.1 by flows) was not among them
    assert pick == "x" and p["x"] == 0.75 and p["y"] == 0.95 and p["z"] == 0.9
    assert sorted(seen) == ["mine", "x", "y"]
    pred.final = lambda slot: None
    assert solve.choose_predicted(pool, "mine", m, pred)[0] == "y"


def test_choose_predicted_final_estimate_of_the_screening_band(monkeypatch):
    """Beyond the FINAL_TOP best, the candidates the screening puts within FINAL_BAND of its
    best are estimated again too (the in-turn screening is off by several percent a
    candidate), up to FINAL_MAX: z, screened 3 % above the best, is the flows' best."""
    monkeypatch.setattr(solve, "FINAL_TOP", 2)
    m, pool, pred, seen = _two_stage({"mine": 1.0, "x": 0.71, "y": 0.7, "z": 0.72},
                                     {"mine": 1.0, "x": 0.75, "y": 0.95, "z": 0.6})
    pick, p = solve.choose_predicted(pool, "mine", m, pred)
    assert pick == "z" and p["z"] == 0.6 and sorted(seen) == ["mine", "x", "y", "z"]
    monkeypatch.setattr(solve, "FINAL_MAX", 2)                     # the band capped: y and x only
    seen.clear()
    assert solve.choose_predicted(pool, "mine", m, pred)[0] == "x" and sorted(seen) == ["mine", "x", "y"]


def test_balanced_and_spread_candidates():
    """32 ranks on 6 nodes of 6 cores: balanced gives 6, 6, 5, 5, 5, 5 consecutive ranks (Slurm's
    block with -N), or the extra ranks on the nodes named; spread_candidates offers each of the
    15 choices of the two nodes that take 6, never block itself, and nothing on a machine whose
    spread would use more nodes than block (a whole cluster) or that the ranks fill."""
    from rankmap.mapper import baselines
    m = machine.build([f"n{i}" for i in range(6)], ["core:6"])
    b = baselines.balanced(32, m)
    assert np.bincount(m.slot_node[b]).tolist() == [6, 6, 5, 5, 5, 5] and len(set(b.tolist())) == 32
    assert m.slot_node[b].tolist() == sorted(m.slot_node[b].tolist())                  # consecutive ranks
    assert np.bincount(m.slot_node[baselines.balanced(32, m, (3, 4))]).tolist() == [5, 5, 5, 6, 6, 5]
    with pytest.raises(ValueError):
        baselines.balanced(32, m, (3,))
    c = solve.spread_candidates(32, m, baselines.block(32, m))
    assert len(c) == 15 and "balanced+n3,n4" in c
    assert not any(np.array_equal(v, baselines.block(32, m)) for v in c.values())
    assert solve.spread_candidates(36, m, baselines.block(36, m)) == {}
    big = machine.build([f"n{i}" for i in range(12)], ["core:6"])
    assert solve.spread_candidates(32, big, baselines.block(32, big)) == {}           # 12 nodes, block uses 6


def test_a_spread_is_chosen_when_predicted_faster():
    """With a network model, solve's pool holds the spreads when the ranks leave slots free:
    a predictor that likes n3 and n4 to take the extra ranks (and nothing else) gets that
    placement, and the note says why."""
    m = machine.build([f"n{i}" for i in range(6)], ["core:6"])
    rng = np.random.default_rng(3)
    t = Traffic(bytes=sp.csr_matrix(sp.random(32, 32, density=0.3, random_state=rng) * 1e6), source="r", format="r")

    def pred(slot):
        cnt = np.bincount(m.slot_node[slot], minlength=6)
        return (1.0 if (cnt[3], cnt[4]) == (6, 6) and cnt.max() == 6 and cnt.min() == 5 else 2.0), 1.0
    r = solve.solve(t, m, predictor=pred)
    assert r.chosen == "balanced+n3,n4" and not r.fell_back
    assert np.bincount(m.slot_node[r.slot_of_rank]).tolist() == [5, 5, 5, 6, 6, 5]
    assert any(x.startswith("network model: balanced+n3,n4") for x in r.notes)
