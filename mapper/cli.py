"""The `rankmap` command: one entry point, one subcommand per task.

User mistakes raise profiler.errors.UserError anywhere below; they are printed here as
one line (no traceback) with exit status 2."""
from __future__ import annotations

import sys

import click
from rich.console import Console

from profiler.errors import UserError

console = Console(highlight=False)
err_console = Console(stderr=True, highlight=False)


class RankmapGroup(click.Group):
    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except UserError as e:
            err_console.print(f"[bold red]rankmap: error:[/bold red] {e}", soft_wrap=True)
            sys.exit(2)
        except BrokenPipeError:
            sys.exit(0)


@click.group(cls=RankmapGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rankmap")
def cli():
    """rankmap: profile an MPI program's traffic, map its ranks onto the machine's
    topology, and relaunch it there."""


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--out", "out", metavar="DIR", envvar="RANKMAP_PROFILE_OUT",
              help="Run directory to create (default rankmap-profile-<date>-<time>; never overwritten).")
@click.option("--launcher", type=click.Choice(["openmpi", "mpich", "srun", "env"]),
              help="How to pass the preload to the ranks (default: from the launcher's name).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]),
              help="MPI the program uses (default: from the launcher or the program's libraries).")
@click.option("--flush-seconds", type=float, metavar="S",
              help="Also write a snapshot every S seconds (survives SIGKILL).")
@click.option("--timeout", type=float, metavar="S", help="Kill the run after S seconds (its data is kept).")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL",
              help="Collective model for the printed summary (see show-profile).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def profile(out, launcher, mpi, flush_seconds, timeout, model, command):
    """Run COMMAND (launcher and program) with the traffic profiler preloaded.

    Example: rankmap profile --out run1 -- mpirun -np 8 ./app
    """
    from profiler.launch import run_profile
    from profiler.rundir import read_run
    from profiler.summary import print_summary

    res = run_profile(list(command), out=out, launcher=launcher, mpi=mpi, flush_seconds=flush_seconds,
                      timeout=timeout)
    console.print(f"[bold]rankmap profile:[/bold] {' '.join(command)} exited with {res.exit_code} "
                  f"after {res.seconds:.2f} s; data in {res.directory}")
    prof = read_run(res.directory)
    print_summary(prof, console, top=5, model=model)
    if res.exit_code != 0:
        sys.exit(res.exit_code if 0 < res.exit_code < 256 else 1)


@cli.command("show-profile")
@click.argument("rundir", type=click.Path())
@click.option("--top", default=10, show_default=True, help="How many of the heaviest pairs to list.")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL",
              help="Collective model: auto, binomial, recursive-doubling, ring, linear, kchain[:K], none.")
@click.option("--ranks", "show_ranks", is_flag=True, help="List every rank (host, pid, affinity, status).")
@click.option("--heatmap", type=click.Path(dir_okay=False), metavar="PNG",
              help="Save a heatmap of the traffic (point-to-point plus modelled collectives).")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON instead.")
def show_profile(rundir, top, model, show_ranks, heatmap, as_json):
    """Summarize a profiler run directory: ranks, bytes, top pairs, collectives, partial or not."""
    from profiler.collectives import expand, parse_model
    from profiler.rundir import read_run
    from profiler.summary import print_summary, top_pairs

    name, k = parse_model(model)
    prof = read_run(rundir)
    if as_json:
        import json
        cb, _, summ = expand(prof.collectives, prof.size, name, k)
        out = {"path": str(prof.path), "run_id": prof.run_id, "ranks": prof.size, "complete": prof.complete,
               "partial_reasons": prof.partial_reasons(), "p2p_bytes": int(prof.bytes.sum()),
               "p2p_messages": int(prof.msgs.sum()), "pairs": int(prof.bytes.nnz),
               "collective_bytes_modelled": int(cb.sum()), "collective_model": model,
               "top_pairs": [dict(src=s, dst=d, bytes=b, messages=m) for s, d, b, m in top_pairs(prof, top)],
               "collectives": [dict(members=c.members.tolist(), op=c.op, root=c.root, bucket=c.bucket,
                                    calls=c.calls, bytes=c.bytes) for c in prof.collectives],
               "hosts": [r.hostname if r else None for r in prof.ranks]}
        click.echo(json.dumps(out, indent=2))
    else:
        print_summary(prof, console, top=top, model=name, k=k, show_ranks=show_ranks)
    if heatmap:
        from mapper.plots import heatmap as draw
        cb, _, _ = expand(prof.collectives, prof.size, name, k)
        draw(prof.bytes + cb, heatmap, f"{prof.size} ranks, {prof.path.name}")
        console.print(f"heatmap written to {heatmap}")


@cli.command()
@click.argument("kind", type=click.Choice(["profiler", "collectives", "bind"]))
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="MPI variant (default: the default MPI).")
def libpath(kind, mpi):
    """Print the path of a built library (for LD_PRELOAD or linking)."""
    from profiler.native import artifact
    click.echo(str(artifact(kind, mpi)))


@cli.command()
@click.option("--out", metavar="DIR", help="Directory for everything the demo writes (default rankmap-demo-<date>).")
def demo(out):
    """Run the main job on the embedded default workload."""
    from slurm.demo import run_demo
    sys.exit(run_demo(out, console))


def main():
    cli(prog_name="rankmap")


if __name__ == "__main__":
    main()
