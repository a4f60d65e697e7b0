"""Launch verbs: the two-pass workflow on Slurm, relaunching a mapping with srun or mpirun,
batch scripts, and the probe of level costs."""
from __future__ import annotations

import os
import sys

import click

from rankmap.cli.console import console
from rankmap.cli.options import (MINUTES, NODES, RANKS, SEED, WholeNumber, _model, machine_args, machine_options,
                                 text)
from rankmap.profiler.errors import UserError

def _program(app) -> list[str]:
    """The program after `--` (click keeps the `--` when a positional argument came first)."""
    app = list(app)
    return app[1:] if app and app[0] == "--" else app


def _preload(collectives: bool, mpi: str | None):
    if not collectives:
        return None
    from rankmap.profiler.native import artifact
    return [str(artifact("collectives", mpi))]


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-n", "--ntasks", type=RANKS, help="Ranks (default: the allocation's SLURM_NTASKS).")
@click.option("-N", "--nodes-count", "nodes_count", type=NODES, help="Nodes for pass 1 when outside an allocation.")
@click.option("--out", metavar="DIR", help="Workflow directory (default rankmap-run-<date>): profile/, mapping/.")
@click.option("--mode", type=click.Choice(["same-allocation", "whole-cluster"]), default="same-allocation",
              show_default=True, help="Map onto the profiled nodes, or onto the best idle nodes of the cluster.")
@machine_options
@click.option("--algorithm", default="metis", show_default=True, type=click.Choice(["metis", "scotch", "greedy"]))
@click.option("--seed", default=0, show_default=True, type=SEED)
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL", callback=_model)
@click.option("-t", "--time", "time_minutes", type=MINUTES, metavar="MIN", help="Time limit of each srun (minutes).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="MPI of the program (default: detected).")
@click.option("--preload-collectives", is_flag=True, help="Relaunch with rankmap's collective kernels preloaded.")
@click.option("--srun-arg", "srun_args", multiple=True, metavar="ARG", callback=text, help="Extra argument for both sruns.")
@click.option("--verify", is_flag=True, help="Profile pass 2 too and check every rank's host and cores.")
@click.option("--launcher", type=click.Choice(["srun", "smpi"]), default="srun", show_default=True,
              help="A real Slurm cluster, or a simulated one (SimGrid SMPI; the program built with smpicc).")
@click.option("--platform", "platform_dir", metavar="DIR", callback=text, help="smpi: the simulated cluster (`rankmap platform`).")
@click.option("--replay", "replay_pass2", is_flag=True, help="smpi: pass 2 replays pass 1's trace instead of re-executing.")
@click.option("--compute", type=click.Choice(["explicit", "measured"]), default="measured", show_default=True,
              help="smpi: time compute phases by their explicit flop counts only (deterministic; rankmap's "
              "workloads), or measure the program's CPU bursts (any program; varies run to run).")
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def run(ntasks, nodes_count, out, mode, algorithm, seed, model, time_minutes, mpi, preload_collectives, srun_args,
        verify, launcher, platform_dir, replay_pass2, compute, app, **mopts):
    """Profile APP under srun, map it, relaunch it with srun -m arbitrary on the mapping.

    Example (inside salloc -N4 -n8, or outside with -n 8 -N 4): rankmap run -- ./app args

    On a simulated cluster: rankmap run --launcher smpi --platform k1/ -n 48 -- ./app.smpi args
    """
    if launcher == "smpi":
        if not platform_dir:
            raise UserError("--launcher smpi needs --platform DIR (write one with `rankmap platform`)")
        # the machine options by the flags the user typed (an internal key, '--machine-file' or
        # '--topologies', was named), --oversubscribe too (left out: its default 1 is not 'unset',
        # and -n 20 --oversubscribe 2 on 16 cores said '20 ranks do not fit the 16 cores')
        ctx = click.get_current_context()
        flags = {p.name: p.opts[0] for p in ctx.command.params}
        unused = [f for f, v in (("-N", nodes_count), ("--srun-arg", srun_args), ("--verify", verify),
                                 ("--preload-collectives", preload_collectives), ("-t", time_minutes),
                                 ("--mpi", mpi))
                  if v] + [flags[k] for k in mopts if ctx.get_parameter_source(k) != click.core.ParameterSource.DEFAULT]
        if unused:
            why = "the program runs on SimGrid's own MPI" if unused[0] == "--mpi" else \
                "the platform describes the machine"
            raise UserError(f"{unused[0]} does not apply to --launcher smpi ({why})")
        if algorithm != "metis":
            raise UserError("--launcher smpi maps with metis")
        from rankmap.slurm.simulated import run_workflow as run_sim
        sys.exit(run_sim(_program(app), platform_dir, ntasks, out, mode, seed, model, compute, replay_pass2, console))
    if platform_dir or replay_pass2 or \
            click.get_current_context().get_parameter_source("compute") != click.core.ParameterSource.DEFAULT:
        raise UserError("--platform, --replay and --compute belong to --launcher smpi")
    if mopts.get("nodes"):          # the mapping's nodes are pass 1's (or the idle ones): --nodes changed nothing
        raise UserError(f"--nodes {mopts['nodes']}: rankmap run maps onto the nodes pass 1 ran on (--mode "
                        "same-allocation) or the cluster's idle nodes (--mode whole-cluster); to choose pass 1's "
                        "nodes, run inside `salloc -w HOSTLIST` or pass --srun-arg=--nodelist=HOSTLIST")
    from rankmap.slurm.workflow import run_workflow
    sys.exit(run_workflow(list(app), ntasks, nodes_count, out, mode, mopts, algorithm, seed, model, time_minutes,
                          mpi, _preload(preload_collectives, mpi), list(srun_args), console, verify))


@click.command("srun", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("mapping", type=click.Path())
@click.option("--dry-run", is_flag=True, help="Print the srun line only (without asking Slurm whether the nodes are "
              "up: it works where no Slurm answers).")
@click.option("--bind-wrapper", is_flag=True, help="Bind through rankmap-bind even when one map_cpu list would do.")
@click.option("--preload-collectives", is_flag=True, help="Preload rankmap's collective kernels.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]))
@click.option("--srun-arg", "srun_args", multiple=True, metavar="ARG", callback=text, help="Extra srun argument (repeat).")
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def srun_cmd(mapping, dry_run, bind_wrapper, preload_collectives, mpi, srun_args, app):
    """Run APP with srun -m arbitrary as MAPPING (a `rankmap map` directory) says: every
    rank on its host and core. Prints the exact srun line it runs.

    Example: rankmap srun map1/ --dry-run -- ./app args   (the program comes after --)
    """
    from rankmap.slurm.relaunch import run_plan, srun_plan
    plan = srun_plan(mapping, _program(app), list(srun_args), preload=_preload(preload_collectives, mpi),
                     force_wrapper=bind_wrapper, mpi=mpi, check_nodes=not dry_run)
    sys.exit(run_plan(plan, dry_run, lambda s: console.print(s, soft_wrap=True)))


@click.command("mpirun", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("mapping", type=click.Path())
@click.option("--dry-run", is_flag=True, help="Print the command only.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="Open MPI rankfile or MPICH machinefile.")
@click.option("--mpirun-arg", "extra", multiple=True, metavar="ARG", callback=text, help="Extra launcher argument (repeat).")
@click.option("--preload-collectives", is_flag=True, help="Preload rankmap's collective kernels.")
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def mpirun_cmd(mapping, dry_run, mpi, extra, preload_collectives, app):
    """Run APP as MAPPING says without Slurm: Open MPI's mpirun with the rankfile, or MPICH's
    mpiexec with the machinefile and rankmap-bind."""
    from rankmap.slurm.relaunch import mpirun_plan, run_plan
    plan = mpirun_plan(mapping, _program(app), mpi, list(extra), _preload(preload_collectives, mpi))
    sys.exit(run_plan(plan, dry_run, lambda s: console.print(s, soft_wrap=True)))


@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-n", "--ntasks", type=RANKS, required=True, help="Ranks.")
@click.option("-N", "--nodes-count", "nodes_count", type=NODES, help="Nodes.")
@click.option("--out", metavar="DIR", required=True,
              help="Where the job writes profile/ and mapping/: a new (or empty) directory.")
@click.option("--script", "script_path", metavar="FILE", help="Script file (default DIR/rankmap.sbatch).")
@click.option("--force", is_flag=True, help="Replace an existing --script file that rankmap did not write.")
@click.option("--submit", is_flag=True, help="Submit it with sbatch and print the job id.")
@click.option("-t", "--time", "time_minutes", type=MINUTES, metavar="MIN", help="Time limit of the job (minutes).")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG", callback=text, help="Extra #SBATCH line (repeat).")
@machine_options
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def sbatch(ntasks, nodes_count, out, script_path, force, submit, time_minutes, sbatch_args, app, **mopts):
    """Write a batch script that profiles APP, maps it onto the job's nodes and relaunches it."""
    from rankmap.profiler import outputs
    from rankmap.slurm.workflow import SBATCH_HEAD, check_sbatch_args, sbatch_script
    for a in sbatch_args:
        if "\n" in a or "\r" in a or "\0" in a:
            raise UserError(f"--sbatch-arg {a!r}: a line break would end the #SBATCH line and start a command")
    check_sbatch_args(list(sbatch_args), nodes_count, time_minutes)
    if out is not None and any(c in str(out) for c in "\n\r\0"):
        # the directory is named on the #SBATCH -o line: the job's script failed in bash (an
        # unterminated quote) once the job started
        raise UserError(f"--out {str(out)!r}: a line break in the path would break the batch script's #SBATCH -o "
                        "line; choose a name without one")
    from rankmap.slurm.nodes import for_batch
    mopts = for_batch(mopts)            # now, not in the job after its profile pass
    program = [a for a in _program(app)]
    inputs = [a for a in program if a and os.path.exists(a)]
    script = outputs.target_file(script_path, "--script", force, inputs=inputs,
                                 signature=outputs.text_signature(SBATCH_HEAD)) if script_path is not None else None
    d = outputs.new_dir(out, "--out", "sbatch", inputs=inputs)
    if script is None:
        script = outputs.target_file(d / "rankmap.sbatch", "--out", True)
    text = sbatch_script(list(app), ntasks, nodes_count, str(d), machine_args(mopts), time_minutes, list(sbatch_args))
    path = outputs.write_file(script, text)
    path.chmod(0o755)
    console.print(f"wrote {path}")
    if submit:
        from rankmap.slurm.cluster import query
        console.print(query(["sbatch", "--parsable", str(path)]).strip())


@click.command()
@machine_options
@click.option("--out", default="levels.json", show_default=True, metavar="FILE", help="Level-cost file to write.")
@click.option("--force", is_flag=True, help="Replace an existing --out file that rankmap did not write.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]))
@click.option("--reps", default=50, show_default=True, type=WholeNumber(1, 10 ** 6),
              help="Repetitions of each measurement (median).")
def probe(out, force, mpi, reps, **mopts):
    """Measure latency and bandwidth between two cores of a socket, two sockets, neighbour
    and distant nodes (plus LogP o, g, L and the reduction cost), and write the level-cost
    file for `map --level-costs @FILE`."""
    from rankmap.profiler import outputs
    from rankmap.slurm.probe import run_probe
    for flag, key in (("--level-costs", "level_costs"), ("--hop-cost", "hop_cost")):
        if mopts.get(key) is not None:     # would change nothing: the probe measures them
            raise UserError(f"{flag}: the probe measures the level costs (that is its output); drop it")
    if (mopts.get("oversubscribe") or 1) > 1:
        # its "same socket" pair would be two ranks on one core: the core's sharing, timed as a level
        raise UserError("--oversubscribe: the probe times one rank per core; drop it")
    target = outputs.target_file(out, "--out", force, signature=outputs.json_signature("level_costs", "unit"))
    run_probe(mopts, target, mpi, reps, console)


COMMANDS = [run, srun_cmd, mpirun_cmd, sbatch, probe]
