"""Inputs of the bad-input corpora's batches 2 and 3 (tests/corpus), run again after the
rounds of changes since they were written: each case here was an unclear message or a
result nobody had decided on. The runs are real (the CLI in this process, no mocks)."""
from __future__ import annotations

import json

from conftest import one_error_line, run_cli


def test_a_machine_over_the_slot_limit_names_nodes_and_cores(tmp_path):
    """batch3 nodes3-range-too-large: 'the machine has 32000000 slots (1000000 nodes x cores
    x --oversubscribe)': neither the option to change nor the cores per node it had counted."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n0,1,5\n1,0,5\n")
    res = run_cli("map", t, "--nodes", "n[1-1000]", "--node-topology", "pack:1 core:32", "--oversubscribe", "1000",
                  "--out", tmp_path / "m")
    one_error_line(res, "32000000 slots (1000 nodes x 32 cores per node x --oversubscribe 1000); rankmap handles "
                        "at most 16777216: give fewer nodes (--nodes)")
    res = run_cli("map", t, "--nodes", "n[1-600000]", "--node-topology", "pack:2 core:16", "--ranks-per-node", "30",
                  "--out", tmp_path / "m")
    one_error_line(res, "18000000 slots (600000 nodes x 30 cores used per node)")
    assert not (tmp_path / "m").exists()


def test_a_machinefile_host_k_that_overfills_a_node_names_its_line(tmp_path):
    """batch2 evaluate-hostfile-colon: four lines 'n1:4' on nodes of 4 cores. host:k gives the
    host its next k ranks (MPICH, Intel MPI), so rank 4 has no core left on n1: refused as
    before, but the message named neither the line nor why rank 4 was on n1."""
    t = tmp_path / "ring8.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 8},100\n" for i in range(8)))
    m = tmp_path / "m"
    assert run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", "pack:1 core:4", "--out", m).returncode == 0
    h = tmp_path / "h"
    h.write_text("# machinefile\nn1:4\nn1:4\nn2:4\n")
    one_error_line(run_cli("evaluate", t, h, "--machine", m, "--json"),
                   f"{h}:3: rank 4: no free slot left on n1 (more ranks than slots there; 'n1:4' gives n1 its next "
                   "4 ranks)")
    h.write_text("n1\nn1\nn1\nn1\nn3\n")
    one_error_line(run_cli("evaluate", t, h, "--machine", m), f"{h}:5: rank 4: host n3 is not in the node list")
    h.write_text("n1:4\nn2:4\n")                      # the same machinefile, right: read as before
    res = run_cli("evaluate", t, h, "--machine", m, "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["metrics"]


def test_a_metis_graph_of_zero_weight_edges_maps_to_block_with_a_note(tmp_path):
    """batch2 metis-zero-weight: edges of weight 0 are edges that carry nothing (the decided
    behaviour for traffic without bytes between ranks: the block order, with a note), not an
    error."""
    g = tmp_path / "g.graph"
    g.write_text("2 1 001\n2 0\n1 0\n")
    res = run_cli("map", g, "--nodes", "n[1-3]", "--node-topology", "pack:1 core:4", "--out", tmp_path / "m",
                  "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["chosen"] == "block" and rep["cost"] == 0
    assert any("no traffic between distinct ranks" in n for n in rep["notes"])
