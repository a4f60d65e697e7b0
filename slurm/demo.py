"""`rankmap demo`: the README's main job on the embedded default workload.

Today: profile the bundled 3-D stencil with 8 ranks under mpirun and print its traffic."""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from rich.console import Console

from profiler import native
from profiler.launch import run_profile
from profiler.rundir import read_run
from profiler.summary import print_summary

RANKS = 8
WORKLOAD_ARGS = ["-n", "24", "-i", "20", "-r", "5"]


def run_demo(out: str | None, console: Console) -> int:
    base = Path(out or "rankmap-demo-" + datetime.now().strftime("%Y%m%d-%H%M%S")).absolute()
    base.mkdir(parents=True, exist_ok=True)
    mpi = native.default_mpi()
    exe = native.artifact("workloads", mpi, "stencil3d")
    launcher = ["mpirun", "--oversubscribe", "-np", str(RANKS)] if mpi == "openmpi" else ["mpiexec", "-n", str(RANKS)]
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    console.rule("[bold]rankmap demo: profile[/bold]")
    console.print(f"Profiling the bundled 3-D stencil ({exe.name}) with {RANKS} ranks under {launcher[0]}")
    res = run_profile(launcher + [str(exe), *WORKLOAD_ARGS], out=str(base / "profile"), timeout=600)
    prof = read_run(res.directory)
    print_summary(prof, console, top=8)
    console.print(f"[bold]Output[/bold] {base}")
    return 0 if res.exit_code == 0 and prof.complete else 1
