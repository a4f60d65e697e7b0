"""Inputs of the bad-input corpus's batch 4 (tests/corpus/batch4.py: Slurm topology.conf
files, network specs, platform/predict flags, search options, damaged run directories,
non-finite matrices, output paths) and the two scale items of that round (report.json
that grew with the machine, the hostlist of 10^5 hosts). Each test was a defect before its
fix; the runs are real (the CLI in this process, no mocks)."""
from __future__ import annotations

import json
import random

import hostlist
import pytest

from conftest import one_error_line, run_cli
from rankmap.mapper import hostnames


def ring_csv(tmp_path, n: int):
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % n},{1000 * (i + 1)}\n" for i in range(n)))
    return t


# --------------------------------------------------------------------------- scale: report.json, hostlists

def test_report_json_grows_with_the_job_not_the_machine(tmp_path):
    """10 ranks on 10^5 nodes: report.json listed every node of the machine ("nodes") and the
    NIC volume of every node for each of the four mappings (6.6 MB). Now: the nodes holding
    the mapping's ranks, the machine's size, and {host: bytes} over the nodes each mapping
    uses (a few KB); the whole machine stays in "machine" (a hostlist) and machine.json."""
    m = tmp_path / "m"
    res = run_cli("map", ring_csv(tmp_path, 10), "--nodes", "n[1-100000]", "--node-topology", "pack:2 core:4",
                  "--torus", "100x100x10", "--out", m, "--json")
    assert res.returncode == 0, res.stderr
    assert (m / "report.json").stat().st_size < 20_000
    rep = json.loads((m / "report.json").read_text())
    assert rep == json.loads(res.stdout)
    assert rep["machine_nodes"] == 100000 and "n[1-100000]" in rep["machine"]
    hosts = [ln.split()[1] for ln in (m / "binding.txt").read_text().splitlines() if ln[0] != "#"]
    assert rep["nodes"] == sorted(set(hosts), key=lambda h: int(h[1:]))
    for name, r in rep["metrics"].items():
        assert "nic_volume" not in r
        vol = r["nic_volume_by_node"]
        assert 1 <= len(vol) <= 10 and max(vol.values()) == r["nic_volume_max"]
    # every rank's host is in the chosen mapping's per-node volumes (a ring: each node sends)
    assert set(rep["metrics"]["rankmap"]["nic_volume_by_node"]) == set(rep["nodes"])
    ev = run_cli("evaluate", ring_csv(tmp_path, 10), m, "--json")
    assert ev.returncode == 0, ev.stderr
    assert len(ev.stdout) < 20_000
    assert json.loads(ev.stdout)["metrics"]["m"]["sum_com"] == pytest.approx(rep["cost"])


def test_hostlist_compression_is_python_hostlists_string():
    """hostnames.compress (10^5 hosts took 0.4-0.8 s in python-hostlist's loop; numpy now):
    the very string python-hostlist writes, on names of every shape it takes."""
    rng = random.Random(4)
    pref = ["n", "rack1-n", "a", "b0c", "x-", "", "c1b", "n0", "1", "r2n"]
    suf = ["", "-ib", ".x", "a1", "3", " ", "[", "\n", ","]
    for _ in range(3000):
        hs = []
        for _ in range(rng.randint(0, 25)):
            n = rng.randint(0, 120) if rng.random() < 0.9 else rng.randint(0, 10 ** 20)
            num = "%0*d" % (rng.choice([0, 0, 1, 2, 3]), n) if rng.random() < 0.95 else ""
            h = rng.choice(pref) + num + (rng.choice(suf) if rng.random() < 0.5 else "")
            if h:
                hs.append(h)
        try:
            want = hostlist.collect_hostlist(hs)
        except hostlist.BadHostlist:
            with pytest.raises(hostlist.BadHostlist):
                hostnames.compress(hs)
            continue
        assert hostnames.compress(hs) == want, hs
    big = [f"n{i:06d}" for i in range(1, 100001)]
    rng.shuffle(big)
    assert hostnames.compress(big) == "n[000001-100000]"
    assert hostnames.compress([f"r{i // 100}-n{i % 100}" for i in range(100000)]) == "r[0-999]-n[0-99]"
    assert hostnames.compress([]) == ""
