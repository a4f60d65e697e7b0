"""`rankmap demo`: the main job on the embedded default workload."""
from __future__ import annotations

import sys

import click

from rankmap.cli.console import console

@click.command()
@click.option("--out", metavar="DIR", help="Directory for everything the demo writes (default rankmap-demo-<date>).")
@click.option("--only", type=click.Choice(["slurm", "simulated"]), help="Run one half of the demo.")
def demo(out, only):
    """Run the main job on the embedded default workload: the two-pass workflow on the local
    Slurm cluster (real daemons) and on a simulated Angara-K1 (SimGrid SMPI)."""
    from rankmap.slurm.demo import run_demo
    sys.exit(run_demo(out, console, only or "both"))


COMMANDS = [demo]
