"""`rankmap demo`: the README's main job, on the embedded default workload, twice.

1. On the project's own local Slurm cluster (4 nodes, real daemons, brought up for the demo
   and torn down after it): profile the bundled 3-D stencil (8 ranks, scattered rank order,
   so that Slurm's block placement splits neighbours) under srun, map it, relaunch it with
   srun -m arbitrary, and check every rank's host and cores against the mapping.
2. On a simulated Angara-K1 (SimGrid SMPI, 3x3x4 torus): run the same stencil with 48 ranks
   once under Slurm's block placement recording a trace, map it onto the same nodes and
   onto the whole cluster, and replay the trace under block, cyclic, random, rankmap-b and
   rankmap-c: simulated time, communication time, hop-bytes, max link load; PNG figures and
   report.html; demo.json with every number."""
from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime
from pathlib import Path

from rich.console import Console

from rankmap.profiler import native
from rankmap.profiler.errors import UserError
from rankmap.slurm import cluster
from rankmap.slurm.workflow import run_workflow

RANKS, NODES = 8, 4
WORKLOAD_ARGS = ["-s", "-n", "24", "-i", "20", "-r", "5"]
SIM_RANKS = 48
SIM_ARGS = ["-n", "24", "-i", "20", "-r", "5", "-c", "1"]


def local_cluster(base: Path, console: Console, port: int | None = None) -> dict:
    """Bring up a private local cluster; returns its environment. Its directory (configuration,
    state, logs) is a private temporary one, not part of the demo's output, and its munge key
    lives in another (slurm/localcluster): nothing secret reaches `base`."""
    import tempfile
    cdir = tempfile.mkdtemp(prefix="rankmap-demo-cluster-")
    env = dict(os.environ, RANKMAP_CLUSTER_DIR=cdir, RANKMAP_CLUSTER_NODES=str(NODES),
               RANKMAP_CLUSTER_PORT=str(port or 20000 + (os.getpid() % 500) * 10))
    res = subprocess.run([str(cluster.LOCALCLUSTER), "up"], env=env, capture_output=True, text=True)
    if res.returncode != 0:
        subprocess.run([str(cluster.LOCALCLUSTER), "down"], env=env, capture_output=True)
        raise UserError("the local Slurm cluster did not come up: " +
                        (res.stderr.strip().splitlines() or ["?"])[-1])
    console.print(res.stdout.strip())
    out = subprocess.run([str(cluster.LOCALCLUSTER), "env"], env=env, capture_output=True, text=True, check=True)
    for line in out.stdout.splitlines():
        k, _, v = line[len("export "):].partition("=")
        env[k] = v
    return env


def stop_cluster(env: dict, console: Console) -> None:
    """Stop the demo's cluster (its munge key goes with it) and remove its directory."""
    import shutil
    subprocess.run([str(cluster.LOCALCLUSTER), "down"], env=env, capture_output=True)
    shutil.rmtree(env["RANKMAP_CLUSTER_DIR"], ignore_errors=True)
    console.print("local Slurm cluster stopped")


def run_demo(out: str | None, console: Console, parts: str = "both") -> int:
    from rankmap.profiler import outputs
    base = outputs.new_dir(out if out is not None else "rankmap-demo-" + datetime.now().strftime("%Y%m%d-%H%M%S"),
                           "--out", "demo")
    summary: dict = {}
    code = 0
    if parts in ("both", "slurm"):
        code = slurm_part(base, console, summary)
    if parts in ("both", "simulated"):
        summary["simulated"] = simulated_part(base / "simulated", console)
    (base / "demo.json").write_text(json.dumps(summary, indent=2) + "\n")
    console.print(f"[bold]Output[/bold] {base} (demo.json" + (", simulated/report.html" if "simulated" in summary
                                                               else "") + ")")
    return code


def slurm_part(base: Path, console: Console, summary: dict) -> int:
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
        stop_cluster(env, console)
    run_dir = base / "slurm-run"
    summary["slurm"] = {"exit_status": code, "ranks": RANKS, "nodes": NODES, "directory": str(run_dir)}
    rep = run_dir / "mapping" / "report.json"
    if rep.exists():
        r = json.loads(rep.read_text())
        summary["slurm"]["sum_com_vs_block"] = r["metrics"]["rankmap"]["sum_com"] / r["metrics"]["block"]["sum_com"]
    return code


def simulated_part(where: Path, console: Console) -> dict:
    """The two-pass workflow on the simulated Angara-K1, with every placement replayed."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from rankmap.mapper import spec as mspec, writers
    from rankmap.slurm import platform as plat
    from rankmap.profiler.formats import read_traffic
    from rankmap.slurm import demo_report, simulated, smpi
    console.rule("[bold]rankmap demo: a simulated Angara-K1 (SimGrid SMPI)")
    smpi.require()
    p = plat.preset("angara-k1")
    pdir = plat.write(p, where / "platform")
    console.print(plat.describe(p))
    exe = native.artifact("workloads", "smpi", "stencil3d")
    trace = where / "profile" / "trace.ti"
    steps = 4 + 2 * len(simulated.PLACEMENTS)
    with Progress(TextColumn("{task.description:32}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), console=console, transient=False) as bar:
        task = bar.add_task("pass 1: block, recording a trace", total=steps)
        alloc = simulated.allocate(p, pdir, SIM_RANKS, where)
        hf = smpi.write_hostfile(alloc.hosts, where / "hostfile-pass1")
        pass1 = smpi.run([str(exe), *SIM_ARGS], p, pdir, hf, SIM_RANKS, trace=trace, compute="explicit")
        (where / "profile" / "stdout.txt").write_text(pass1.stdout)
        bar.update(task, advance=1, description="mapping (same nodes, whole cluster)")
        hosts = simulated.placements(trace, p, pdir, SIM_RANKS, where, network=p.network())   # as the workflow maps
        bar.update(task, advance=2, description="pass 2: replaying each placement")

        def advance(name):
            bar.update(task, advance=1 if name == "ideal network" else 2, description=f"replayed: {name}")
        res = simulated.compare(trace, p, pdir, hosts, where / "replays", advance=advance)
        bar.update(task, description="done")
    from rich.table import Table
    t = Table(title=f"stencil3d, {SIM_RANKS} ranks on the simulated {p.name} (pass 1, block: {pass1.seconds:.6g} s "
                    "simulated)", show_edge=False)
    for c in ("placement", "simulated s", "vs block", "communication s", "vs block", "hop-bytes", "max link B"):
        t.add_column(c, justify="left" if c == "placement" else "right")
    b = res["block"]
    rows = []
    for name, v in res.items():
        d = v.as_dict() | {"placement": name, "nodes": sorted(set(hosts[name]), key=lambda h: int(h[1:]))}
        rows.append(d)
        t.add_row(name, f"{v.seconds:.6g}", f"{v.seconds / b.seconds:.3f}", f"{v.comm_seconds:.6g}",
                  f"{v.comm_seconds / b.comm_seconds:.3f}" if b.comm_seconds else "-", f"{v.hop_bytes:.4g}",
                  f"{v.max_link_load:.4g}")
    console.print(t)
    console.print("communication = simulated time minus the same trace's time on a network that costs nothing")
    traffic = read_traffic(trace, "smpi", "auto")
    full = mspec.build(plat.machine_spec(p))
    slots = {name: writers.read_mapping(where / "replays" / f"hostfile-{name}", full, SIM_RANKS) for name in hosts}
    figs = demo_report.figures(where / "figures", traffic, full, slots)
    figs = {k: [f"figures/{f}" for f in v] for k, v in figs.items()}
    report = demo_report.write_html(
        where / "report.html", f"rankmap demo: stencil3d, {SIM_RANKS} ranks, simulated {p.name}",
        [plat.describe(p), f"program: stencil3d {' '.join(SIM_ARGS)} (bench/workloads/stencil3d.c, built with smpicc)",
         f"pass 1 (Slurm block placement, direct execution): {pass1.seconds:.6g} s simulated; pass 2: the trace "
         "replayed under each placement"], rows, figs,
        ["communication = simulated time minus the same trace's time on a network that costs nothing",
         "rankmap-b: mapped onto the nodes Slurm's block placement used; rankmap-c: nodes chosen on the whole cluster"])
    console.print(f"report: {report}")
    return {"platform": plat.describe(p), "workload": ["stencil3d", *SIM_ARGS], "ranks": SIM_RANKS,
            "pass1_simulated_seconds": pass1.seconds, "placements": {r["placement"]: r for r in rows},
            "report": str(report)}
