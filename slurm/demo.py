"""`rankmap demo`: the README's main job, on the embedded default workload.

On the project's own local Slurm cluster (4 nodes, real daemons, brought up for the demo
and torn down after it): profile the bundled 3-D stencil (8 ranks, scattered rank order,
so that Slurm's block placement splits neighbours) under srun, map it, relaunch it with
srun -m arbitrary, and check every rank's host and cores against the mapping."""
from __future__ import annotations

import os
import subprocess
from datetime import datetime
from pathlib import Path

from rich.console import Console

from profiler import native
from profiler.errors import UserError
from slurm import cluster
from slurm.workflow import run_workflow

RANKS, NODES = 8, 4
WORKLOAD_ARGS = ["-s", "-n", "24", "-i", "20", "-r", "5"]


def local_cluster(base: Path, console: Console) -> dict:
    """Bring up a private local cluster; returns its environment."""
    env = dict(os.environ, RANKMAP_CLUSTER_DIR=str(base / "cluster"), RANKMAP_CLUSTER_NODES=str(NODES),
               RANKMAP_CLUSTER_PORT=str(20000 + (os.getpid() % 500) * 10))
    res = subprocess.run([str(cluster.LOCALCLUSTER), "up"], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        raise UserError("the local Slurm cluster did not come up: " +
                        (res.stderr.strip().splitlines() or ["?"])[-1])
    console.print(res.stdout.strip())
    out = subprocess.run([str(cluster.LOCALCLUSTER), "env"], env=env, capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        k, _, v = line[len("export "):].partition("=")
        env[k] = v
    return env


def run_demo(out: str | None, console: Console) -> int:
    base = Path(out or "rankmap-demo-" + datetime.now().strftime("%Y%m%d-%H%M%S")).absolute()
    if base.exists() and any(base.iterdir()):
        raise UserError(f"{base} already exists and is not empty; choose another --out")
    base.mkdir(parents=True, exist_ok=True)
    mpi = native.default_mpi()
    exe = native.artifact("workloads", mpi, "stencil3d")
    console.rule("[bold]rankmap demo: the local Slurm cluster")
    env = local_cluster(base, console)
    saved = dict(os.environ)
    os.environ.update(env)
    for k in ("SLURM_JOB_ID", "SLURM_JOB_NODELIST", "SLURM_NODELIST", "SLURM_NTASKS"):
        os.environ.pop(k, None)
    try:
        code = run_workflow([str(exe), *WORKLOAD_ARGS], RANKS, NODES, str(base / "slurm-run"), "same-allocation", {},
                            "metis", 0, "auto", 5, mpi, None, [], console, verify=True)
    finally:
        os.environ.clear()
        os.environ.update(saved)
        subprocess.run([str(cluster.LOCALCLUSTER), "down"], env=env, capture_output=True)
        console.print("local Slurm cluster stopped")
    console.print(f"[bold]Output[/bold] {base}")
    return code
