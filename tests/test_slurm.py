"""The Slurm workflow on a real local cluster (4 nodes, real daemons): profile under srun,
map, relaunch with srun -m arbitrary — checked rank by rank (MPI rank, SLURM_PROCID,
hostname, CPU affinity against the mapping); the sbatch script, the mpirun path, mode
whole-cluster, and failures giving clear errors."""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from conftest import LOCALCLUSTER, RANKMAP_CMD, app, spawn_cli

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.slurm


def rankmap(env, *args, timeout=300, cwd=None):
    return spawn_cli(*args, env=env, timeout=timeout, cwd=cwd)


def where_lines(text: str) -> dict[int, tuple]:
    out = {}
    for line in text.splitlines():
        if line.startswith("WHERE "):
            _, rank, procid, host, cpus = line.split()
            out[int(rank)] = (procid, host, cpus)
    return out


def check_placement(where: dict, mapping: Path, ntasks: int):
    """Every rank is where the mapping put it: host and bound core (the local cluster's
    nodes are this host's CPUs, logical core c = CPU c)."""
    rows = [ln.split() for ln in (mapping / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
    assert sorted(where) == list(range(ntasks)), where
    for rank, (procid, host, cpus) in where.items():
        assert procid == str(rank), f"rank {rank} has SLURM_PROCID {procid}"
        assert host == rows[rank][1], f"rank {rank} on {host}, mapped to {rows[rank][1]}"
        assert cpus == rows[rank][2], f"rank {rank} bound to CPUs {cpus}, mapped to core {rows[rank][2]}"


def test_cluster_is_real(slurm_cluster):
    env = slurm_cluster
    again = subprocess.run([str(LOCALCLUSTER), "up"], env=env, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "already up" in again.stdout          # idempotent
    res = subprocess.run(["srun", "-K", "-t", "1", "-N", "4", "-n", "4", "hostname"], env=env, capture_output=True,
                         text=True, timeout=60)
    assert sorted(res.stdout.split()) == ["n1", "n2", "n3", "n4"]           # each node its own hostname
    status = subprocess.run([str(LOCALCLUSTER), "status"], env=env, capture_output=True, text=True, timeout=60)
    assert status.returncode == 0 and status.stdout.count("running") == 6


@pytest.fixture(scope="module")
def workflow(slurm_cluster, apps, tmp_path_factory):
    d = tmp_path_factory.mktemp("wf") / "run"
    res = rankmap(slurm_cluster, "run", "-n", 8, "-N", 4, "-t", 2, "--verify", "--out", d, "--",
                  app(apps, "placement", "openmpi"))
    assert res.returncode == 0, res.stdout + res.stderr
    return d, res.stdout


def test_two_pass_workflow_places_every_rank(workflow):
    d, out = workflow
    # pass 1 ran with block placement; pass 2 on the mapping
    relaunch = out.split("pass 2: relaunch", 1)[1]
    check_placement(where_lines(relaunch), d / "mapping", 8)
    rep = json.loads((d / "mapping" / "report.json").read_text())
    assert rep["metrics"]["rankmap"]["internode_fraction"] < rep["metrics"]["block"]["internode_fraction"]
    wf = json.loads((d / "workflow.json").read_text())
    assert wf["passes"]["profile"]["exit_code"] == 0 and wf["passes"]["relaunch"]["exit_code"] == 0
    assert "SLURM_HOSTFILE=" in wf["passes"]["relaunch"]["command"]
    # --verify: the profiler watched pass 2 and every rank was where the mapping said
    assert len(wf["verified"]) == 8 and all(r["ok"] for r in wf["verified"])
    # the heavy partners (i, i+4) share a node after mapping
    hosts = (d / "mapping" / "hostfile").read_text().split()
    assert all(hosts[i] == hosts[i + 4] for i in range(4))


def test_program_that_sends_nothing_runs_both_passes(slurm_cluster, apps, tmp_path):
    """A program that exchanges no message stopped the workflow after pass 1 ("no traffic
    between distinct ranks; there is nothing to map"): the block order is as good as any
    then, so it is the mapping, with a note, and pass 2 runs on it."""
    d = tmp_path / "silent"
    res = rankmap(slurm_cluster, "run", "-n", 4, "-N", 2, "-t", 2, "--verify", "--out", d, "--",
                  app(apps, "placement", "openmpi"), "silent")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no traffic between distinct ranks: every placement costs the same, so the block order" in \
        " ".join(res.stdout.split())
    check_placement(where_lines(res.stdout.split("pass 2: relaunch", 1)[1]), d / "mapping", 4)
    rep = json.loads((d / "mapping" / "report.json").read_text())
    assert rep["chosen"] == "block" and rep["traffic"]["bytes"] == 0 and rep["cost"] == 0
    wf = json.loads((d / "workflow.json").read_text())
    assert wf["status"] == "complete" and all(r["ok"] for r in wf["verified"])
    assert "nan" not in res.stdout.lower() and "inf" not in res.stdout.replace("info", "").lower()


def test_srun_wrapper_rebinds_a_per_node_layout(slurm_cluster, apps, workflow, tmp_path):
    d, _ = workflow
    m = tmp_path / "swapped"
    m.mkdir()
    # node n1 gets its ranks on cores (1, 0), the others on (0, 1): no single map_cpu list fits
    rows = [ln.split() for ln in (d / "mapping" / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
    seen = {}
    for r in rows:
        k = seen.setdefault(r[1], 0)
        seen[r[1]] += 1
        r[2] = str(1 - k if r[1] == "n1" else k)
    (m / "binding.txt").write_text("".join(" ".join(r) + "\n" for r in rows))
    (m / "hostfile").write_text((d / "mapping" / "hostfile").read_text())
    (m / "machine.json").write_text((d / "mapping" / "machine.json").read_text())
    dry = rankmap(slurm_cluster, "srun", m, "--dry-run", "--", "true")
    assert dry.returncode == 0 and "rankmap-bind" in dry.stdout and "--cpu-bind=none" in dry.stdout
    res = rankmap(slurm_cluster, "srun", m, "--srun-arg=-K", "--srun-arg=-t", "--srun-arg=2", "--",
                  app(apps, "placement", "openmpi"))
    assert res.returncode == 0, res.stderr
    check_placement(where_lines(res.stdout), m, 8)


def test_inside_an_allocation(slurm_cluster, apps, tmp_path):
    d = tmp_path / "inside"
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    res = subprocess.run(["salloc", "-N", "4", "-n", "8", "-t", "3", *RANKMAP_CMD, "run",
                          "--out", str(d), "-t", "2", "--", str(app(apps, "placement", "openmpi"))],
                         env=e, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    check_placement(where_lines(res.stdout.split("pass 2: relaunch", 1)[1]), d / "mapping", 8)
    assert json.loads((d / "workflow.json").read_text())["inside_allocation"] is True


def test_mpich_program_under_srun(slurm_cluster, apps, tmp_path):
    d = tmp_path / "mpich"
    res = rankmap(slurm_cluster, "run", "-n", 8, "-N", 4, "-t", 2, "--out", d, "--",
                  app(apps, "placement", "mpich"))
    assert res.returncode == 0, res.stdout + res.stderr
    check_placement(where_lines(res.stdout.split("pass 2: relaunch", 1)[1]), d / "mapping", 8)


def test_sbatch_two_pass_script(slurm_cluster, apps, tmp_path):
    d = tmp_path / "batch"
    res = rankmap(slurm_cluster, "sbatch", "-n", 8, "-N", 4, "-t", 3, "--out", d, "--submit", "--",
                  app(apps, "placement", "openmpi"))
    assert res.returncode == 0, res.stderr
    job = res.stdout.strip().splitlines()[-1]
    assert job.isdigit()
    state = ""
    for _ in range(240):
        out = subprocess.run(["scontrol", "show", "job", job], env=slurm_cluster, capture_output=True, text=True).stdout
        state = next((t.split("=", 1)[1] for t in out.split() if t.startswith("JobState=")), "")
        if state in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"):
            break
        time.sleep(0.5)
    log = (d / f"slurm-{job}.out").read_text()
    assert state == "COMPLETED", log
    # the relaunch is the second set of WHERE lines in the job's output
    second = log.split("rankmap map", 1)[1]
    check_placement(where_lines(second), d / "mapping", 8)


def test_mpirun_rankfile_path(slurm_cluster, apps, workflow):
    d, _ = workflow
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    res = subprocess.run(["salloc", "-N", "4", "-n", "8", "-t", "2", *RANKMAP_CMD, "mpirun",
                          str(d / "mapping"), "--", str(app(apps, "placement", "openmpi"))],
                         env=e, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    rows = [ln.split() for ln in (d / "mapping" / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
    where = where_lines(res.stdout)
    assert sorted(where) == list(range(8))
    for rank, (_, host, cpus) in where.items():        # under mpirun SLURM_PROCID is the daemon's
        assert (host, cpus) == (rows[rank][1], rows[rank][2])


def test_whole_cluster_mode_chooses_neighbours(slurm_cluster, apps, tmp_path):
    """A 4-node ring n1-n3-n2-n4 (coordinates scrambled against the names): 4 ranks in pairs
    need 2 nodes; the chosen two must be ring neighbours."""
    coords = {"n1": [0], "n3": [1], "n2": [2], "n4": [3]}
    machine = tmp_path / "cluster.json"
    machine.write_text(json.dumps({"hosts": ["n1", "n2", "n3", "n4"], "node_topology": ["pack:2 core:1"],
                                   "torus": "4", "coords": coords}))
    d = tmp_path / "whole"
    res = rankmap(slurm_cluster, "run", "-n", 4, "-N", 4, "-t", 2, "--mode", "whole-cluster", "--machine", machine,
                  "--out", d, "--", app(apps, "placement", "openmpi"))
    assert res.returncode == 0, res.stdout + res.stderr
    chosen = json.loads((d / "workflow.json").read_text())["mapping"]["nodes"]
    assert len(chosen) == 2
    a, b = (coords[h][0] for h in chosen)
    assert (a - b) % 4 in (1, 3), chosen
    check_placement(where_lines(res.stdout.split("pass 2: relaunch", 1)[1]), d / "mapping", 4)


def test_probe_writes_level_costs_the_mapper_reads(slurm_cluster, workflow, tmp_path):
    d, _ = workflow
    levels = tmp_path / "levels.json"
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    res = subprocess.run(["salloc", "-N", "4", "-n", "8", "-t", "3", *RANKMAP_CMD, "probe",
                          "--torus", "4", "--reps", "5", "--out", str(levels)], env=e, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    r = json.loads(levels.read_text())
    assert set(r["level_costs"]) >= {"node", "package", "core", "hop"}
    assert set(r["latency_us"]) == {"other socket", "neighbour node", "distant node"}
    assert r["logp"]["o_us"] > 0 and r["logp"]["g_us"] > 0 and r["gamma_ns_per_byte"] > 0
    assert r["exchange_1MiB_us"]["ratio_all_at_once_to_in_turn"] > 0
    assert r["hosts"][0] == "n1" and len(set(r["hosts"])) == 3
    m = rankmap(slurm_cluster, "map", d / "profile", "--nodes", "n[1-4]", "--torus", "4", "--level-costs",
                f"@{levels}", "--out", tmp_path / "m", "--json")
    assert m.returncode == 0, m.stderr
    assert "hop" in json.loads(m.stdout)["machine"]


# --------------------------------------------------------------------------- failures

def one_line(res, fragment):
    assert res.returncode != 0
    assert "Traceback" not in res.stderr, res.stderr
    errs = [ln for ln in res.stderr.splitlines() if ln.startswith("rankmap: error")]
    assert len(errs) == 1 and fragment in errs[0], res.stderr


def test_profile_pass_crash_stops_the_workflow(slurm_cluster, apps, tmp_path):
    d = tmp_path / "crash"
    res = rankmap(slurm_cluster, "run", "-n", 4, "-N", 2, "-t", 2, "--out", d, "--",
                  app(apps, "placement", "openmpi"), "crash")
    one_line(res, "pass 1 (profile) failed")
    assert (d / "profile").is_dir() and list((d / "profile").glob("ranks.*.rmp"))   # its data is kept
    assert not (d / "mapping").exists()


def test_wrong_rank_count(slurm_cluster, workflow):
    d, _ = workflow
    one_line(rankmap(slurm_cluster, "srun", d / "mapping", "--srun-arg=-n", "--srun-arg=4", "--", "true"),
             "the mapping decides the task count")
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    res = subprocess.run(["salloc", "-N", "4", "-n", "4", "-t", "1", *RANKMAP_CMD, "srun",
                          str(d / "mapping"), "--", "true"], env=e, capture_output=True, text=True, timeout=120)
    one_line(res, "is for 8 ranks but this allocation has SLURM_NTASKS=4")


def test_mapping_on_cores_slurm_does_not_know(slurm_cluster, tmp_path):
    """A mapping made with a --node-topology larger than the nodes (8 cores where Slurm has
    2): srun failed with "Requested node configuration is not available" and rankmap said
    only that pass 2 failed; now one line before srun, naming the core and Slurm's count."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 4},100\n" for i in range(4)))
    m = tmp_path / "m"
    assert rankmap(slurm_cluster, "map", t, "--nodes", "n[1-2]", "--node-topology", "pack:1 core:8",
                   "--out", m).returncode == 0
    one_line(rankmap(slurm_cluster, "srun", m, "--", "true"),
             "uses core 3 of n1, but Slurm describes n1 with 2 core(s) (Sockets=2 CoresPerSocket=1")


def test_mapping_with_two_ranks_on_a_core(slurm_cluster, tmp_path):
    """--oversubscribe 2, 8 ranks on 2 nodes of 2 cores: srun refused 8 tasks on 4 CPUs, and
    with --overcommit outside an allocation Slurm grants one CPU per node ("CPU binding outside
    of job step allocation"). Now: one error outside an allocation saying how to run it, and
    inside an allocation of whole nodes --overcommit is added and every rank is bound."""
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 4) % 8},1000\n" for i in range(8)))
    m = tmp_path / "m"
    assert rankmap(slurm_cluster, "map", t, "--nodes", "n[1-2]", "--oversubscribe", "2", "--out", m).returncode == 0
    one_line(rankmap(slurm_cluster, "srun", m, "--", "true"),
             "puts up to 2 ranks on a core: srun needs --overcommit for that, and outside an allocation")
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    show = "echo WHERE $SLURM_PROCID $SLURM_PROCID $(hostname) $(grep Cpus_allowed_list /proc/self/status | cut -f2)"
    res = subprocess.run(["salloc", "-w", "n1,n2", "-N", "2", "--exclusive", "-t", "1", *RANKMAP_CMD, "srun", str(m),
                          "--", "sh", "-c", show], env=e, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "--overcommit" in res.stdout
    check_placement(where_lines(res.stdout), m, 8)


def test_oversubscribed_run_gets_overcommit_for_pass_1(slurm_cluster, apps, tmp_path):
    """`rankmap run -n 8 --oversubscribe 2` on 2 nodes of 2 cores: pass 1's `srun -n 8` was
    refused ("Requested node configuration is not available", or inside an allocation "More
    processors requested than permitted") unless --srun-arg=--overcommit was given. Pass 1
    now gets --overcommit when the ranks outnumber the CPUs, as pass 2 does for a mapping
    with several ranks on a core. Outside an allocation, where that pass 2 cannot bind, and
    without --oversubscribe, one error before anything runs or is written."""
    prog = app(apps, "placement", "openmpi")
    d = tmp_path / "out"
    one_line(rankmap(slurm_cluster, "run", "-n", 8, "-N", 2, "-t", 2, "--out", d, "--", prog),
             "8 ranks but pass 1 gets at most 4 CPUs (2 node(s)); pass --oversubscribe 2")
    one_line(rankmap(slurm_cluster, "run", "-n", 8, "-N", 2, "-t", 2, "--oversubscribe", 2, "--out", d, "--", prog),
             "8 ranks on at most 4 CPUs (2 node(s)) put several ranks on a core, which Slurm binds only inside an "
             "allocation of whole nodes: salloc -N 2 --exclusive rankmap run -n 8")
    assert not d.exists()
    # two ranks on a core: Open MPI's busy polling took the core's time slices from the partner
    # it waited for (pass 2 ran out of a 2-minute allocation on the loaded test host): both
    # passes now tell Open MPI to yield when idle, as its own launcher does when oversubscribed
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    e.pop("OMPI_MCA_mpi_yield_when_idle", None)
    res = subprocess.run(["salloc", "-w", "n1,n2", "-N", "2", "--exclusive", "-t", "5", *RANKMAP_CMD, "run", "-n", "8",
                          "--oversubscribe", "2", "--verify", "--out", str(d), "--", str(prog)],
                         env=e, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"srun -K -n 8 --overcommit {prog}" in res.stdout
    wf = json.loads((d / "workflow.json").read_text())
    assert wf["status"] == "complete" and len(wf["verified"]) == 8 and all(r["ok"] for r in wf["verified"])
    assert "--overcommit" in wf["passes"]["relaunch"]["command"]
    assert "OMPI_MCA_mpi_yield_when_idle=1" in wf["passes"]["relaunch"]["command"]
    run1 = json.loads((d / "profile" / "run.json").read_text())
    assert run1["command"][:5] == ["srun", "-K", "-n", "8", "--overcommit"]
    assert "OMPI_MCA_mpi_yield_when_idle=1" in run1["argv"][1]


def test_host_not_in_allocation(slurm_cluster, workflow):
    d, _ = workflow
    e = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    res = subprocess.run(["salloc", "-w", "n1,n2", "-N", "2", "-n", "8", "--overcommit", "-t", "1", *RANKMAP_CMD,
                          "srun", str(d / "mapping"), "--", "true"],
                         env=e, capture_output=True, text=True, timeout=120)
    one_line(res, "is not in this allocation")


def test_node_down(slurm_cluster, workflow):
    d, _ = workflow
    env = slurm_cluster
    subprocess.run(["scontrol", "update", "nodename=n4", "state=down", "reason=rankmap-test"], env=env, check=True)
    try:
        one_line(rankmap(env, "srun", d / "mapping", "--", "true"), "node n4 is down")
    finally:
        subprocess.run(["scontrol", "update", "nodename=n4", "state=resume"], env=env, check=True)
