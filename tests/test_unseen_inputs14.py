"""Round 14 of a new user's bad inputs, on the Slurm side: the environment a real job sees and
the launches inside and outside it. An allocation of fewer CPUs per node than the nodes have
cores (salloc -N 2 -n 2: one CPU each), a mapping of unequal task counts per node launched
with one map_cpu list, a heterogeneous job (no SLURM_JOB_NODELIST), a mapping made for nodes
the cluster does not have. Each test failed before its fix; the controls pass on both. The
runs are real (the CLI; the local Slurm cluster for the launches)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from conftest import RANKMAP_CMD, one_error_line, run_cli, spawn_cli

ROOT = Path(__file__).resolve().parents[1]
TOPO = "pack:2 core:1"          # the local cluster's nodes


def traffic(tmp_path: Path, n: int) -> Path:
    p = tmp_path / f"t{n}.csv"
    p.write_text("src,dst,bytes\n" + "".join(f"{i},{i + 1},1000\n" for i in range(n - 1)))
    return p


def job_env(**kv) -> dict:
    """The variables Slurm gives a job (the others of the test's own environment unset)."""
    env = {k: None for k in os.environ if k.startswith("SLURM_")}
    env.update(kv)
    return env


def hosts_of(mapping: Path) -> list[str]:
    return mapping.joinpath("hostfile").read_text().split()


def test_map_inside_an_allocation_uses_only_its_cpus_per_node(tmp_path):
    # salloc -N 2 -n 2 on nodes of two cores: one CPU on each; the mapping packed both ranks on
    # n1 and srun refused it in that very allocation ("More processors requested than permitted")
    t = traffic(tmp_path, 2)
    env = job_env(SLURM_JOB_ID="5", SLURM_JOB_NODELIST="n[1-2]", SLURM_JOB_CPUS_PER_NODE="1(x2)", SLURM_NTASKS="2")
    res = run_cli("map", t, "--node-topology", TOPO, "--out", tmp_path / "m", env=env)
    assert res.returncode == 0, res.stderr
    assert hosts_of(tmp_path / "m") == ["n1", "n2"]
    # --nodes "$SLURM_JOB_NODELIST", as the sbatch script writes it: the same
    res = run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", TOPO, "--out", tmp_path / "m2", env=env)
    assert res.returncode == 0 and hosts_of(tmp_path / "m2") == ["n1", "n2"]
    # 3 ranks cannot run there: the message says the allocation's CPUs are why
    res = run_cli("map", traffic(tmp_path, 3), "--node-topology", TOPO, "--out", tmp_path / "m3", env=env)
    one_error_line(res, "SLURM_JOB_CPUS_PER_NODE=1(x2)")
    assert "--ranks-per-node" not in res.stderr, res.stderr      # (not given: the allocation's cap)
    # controls: whole nodes (2 CPUs each) pack as before; nodes named that are not the
    # allocation's are not capped
    whole = dict(env, SLURM_JOB_CPUS_PER_NODE="2(x2)")
    res = run_cli("map", t, "--node-topology", TOPO, "--out", tmp_path / "w", env=whole)
    assert res.returncode == 0 and hosts_of(tmp_path / "w") == ["n1", "n1"]
    res = run_cli("map", t, "--nodes", "n[3-4]", "--node-topology", TOPO, "--out", tmp_path / "o", env=env)
    assert res.returncode == 0 and hosts_of(tmp_path / "o") == ["n3", "n3"]


def test_srun_of_a_mapping_that_overfills_the_allocations_cpus_says_so(tmp_path):
    t = traffic(tmp_path, 2)
    assert run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", TOPO, "--out", tmp_path / "m",
                   env=job_env()).returncode == 0                     # made outside: n1 n1
    env = job_env(SLURM_JOB_ID="5", SLURM_JOB_NODELIST="n[1-2]", SLURM_JOB_CPUS_PER_NODE="1(x2)", SLURM_NTASKS="2")
    res = run_cli("srun", tmp_path / "m", "--dry-run", "--", "hostname", env=env)
    one_error_line(res, "this allocation has 1 CPU(s)")
    # controls: the CPUs are there; --overcommit asked for
    res = run_cli("srun", tmp_path / "m", "--dry-run", "--", "hostname",
                  env=dict(env, SLURM_JOB_CPUS_PER_NODE="2,1"))
    assert res.returncode == 0, res.stderr
    res = run_cli("srun", tmp_path / "m", "--dry-run", "--srun-arg=--overcommit", "--", "hostname", env=env)
    assert res.returncode == 0, res.stderr


def test_unequal_task_counts_per_node_are_not_bound_with_one_map_cpu_list(tmp_path):
    # 2 ranks on n1, 1 on n2: srun checks map_cpu:0,1 against n2's one step CPU and refused
    # ("Unable to satisfy cpu bind request")
    assert run_cli("map", traffic(tmp_path, 3), "--nodes", "n[1-2]", "--node-topology", TOPO, "--out",
                   tmp_path / "m", env=job_env()).returncode == 0
    res = run_cli("srun", tmp_path / "m", "--dry-run", "--", "hostname", env=job_env())
    assert res.returncode == 0 and "--cpu-bind=none" in res.stdout and "rankmap-bind" in res.stdout, res.stdout
    # control: equal counts keep the one list
    assert run_cli("map", traffic(tmp_path, 4), "--nodes", "n[1-2]", "--node-topology", TOPO, "--out",
                   tmp_path / "e", env=job_env()).returncode == 0
    res = run_cli("srun", tmp_path / "e", "--dry-run", "--", "hostname", env=job_env())
    assert res.returncode == 0 and "--cpu-bind=map_cpu:0,1" in res.stdout, res.stdout


def test_a_heterogeneous_job_is_named_not_called_no_allocation(tmp_path):
    # salloc -N1 : -N1 sets SLURM_JOB_ID and per-component node lists, no SLURM_JOB_NODELIST:
    # "not inside a Slurm allocation" was said inside one
    env = job_env(SLURM_JOB_ID="9", SLURM_HET_SIZE="2", SLURM_JOB_NODELIST_HET_GROUP_0="n1",
                  SLURM_JOB_NODELIST_HET_GROUP_1="n2", SLURM_JOB_NODELIST_PACK_GROUP_0="n1",
                  SLURM_JOB_NODELIST_PACK_GROUP_1="n2", SLURM_NTASKS="2")
    res = run_cli("map", traffic(tmp_path, 2), "--node-topology", TOPO, "--out", tmp_path / "m", env=env)
    one_error_line(res, "heterogeneous job (SLURM_JOB_NODELIST_HET_GROUP_0=n1, SLURM_JOB_NODELIST_HET_GROUP_1=n2)")
    res = run_cli("map", traffic(tmp_path, 2), "--nodes", "n1,n2", "--node-topology", TOPO, "--out",
                  tmp_path / "m", env=env)
    assert res.returncode == 0, res.stderr            # --nodes, as it says


def test_launches_on_the_local_cluster(slurm_cluster, tmp_path):
    env = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    # inside salloc -N 2 -n 2 (one CPU per node): map, then srun the mapping in the same allocation
    t2 = traffic(tmp_path, 2)
    m = tmp_path / "a2"
    res = subprocess.run(["salloc", "-N", "2", "-n", "2", "-t", "2", "bash", "-c",
                          f"{' '.join(RANKMAP_CMD)} map {t2} --out {m} && {' '.join(RANKMAP_CMD)} srun {m} -- hostname"],
                         env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.split()[-2:]) == ["n1", "n2"]
    # outside an allocation, 2 ranks on n1 and 1 on n2
    m3 = tmp_path / "m3"
    assert spawn_cli("map", traffic(tmp_path, 3), "--nodes", "n[1-2]", "--out", m3, env=env).returncode == 0
    res = spawn_cli("srun", m3, "--srun-arg=-t1", "--", "hostname", env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert sorted(res.stdout.split()[-3:]) == ["n1", "n1", "n2"]
    # a mapping made for nodes this cluster does not have: not "bring it back with scontrol update"
    m9 = tmp_path / "m9"
    assert spawn_cli("map", t2, "--nodes", "n[8-9]", "--node-topology", TOPO, "--out", m9,
                     env=env).returncode == 0
    res = spawn_cli("srun", m9, "--", "hostname", env=env, timeout=120)
    one_error_line(res, "node n8 is not a node of this Slurm cluster")
