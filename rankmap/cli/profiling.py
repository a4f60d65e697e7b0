"""Profiling verbs: run a program under the traffic profiler, summarize a run, find the
built libraries."""
from __future__ import annotations

import os
import sys

import click

from rankmap.profiler.errors import UserError
from rankmap.cli.console import console
from rankmap.cli.options import POSITIVE, Number, WholeNumber, _model

@click.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("--out", "out", metavar="DIR", envvar="RANKMAP_PROFILE_OUT",
              help="Run directory to create (default rankmap-profile-<date>-<time>; never overwritten).")
@click.option("--launcher", type=click.Choice(["openmpi", "mpich", "srun", "env"]),
              help="How to pass the preload to the ranks (default: from the launcher's name).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]),
              help="MPI the program uses (default: from the launcher or the program's libraries).")
@click.option("--flush-seconds", type=Number(0.0, 1e9), metavar="S",
              help="Snapshots (default 1): while its counters change, each rank also writes them to the run file, "
                   "kept if the rank is then killed by SIGKILL; the first at its first collective after traffic or "
                   "after S seconds, each next one no sooner than max(S, time since MPI_Init) later. 0: none.")
@click.option("--timeout", type=POSITIVE, metavar="S", help="Kill the run after S seconds (its data is kept).")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL", callback=_model,
              help="Collective model for the printed summary (see show-profile).")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, required=True)
def profile(out, launcher, mpi, flush_seconds, timeout, model, command):
    """Run COMMAND (launcher and program) with the traffic profiler preloaded.

    Example: rankmap profile --out run1 -- mpirun -np 8 ./app
    """
    from rankmap.profiler.launch import run_profile
    from rankmap.profiler.rundir import read_run
    from rankmap.profiler.summary import print_summary

    res = run_profile(list(command), out=out, launcher=launcher, mpi=mpi, flush_seconds=flush_seconds,
                      timeout=timeout)
    ran = f"[bold]rankmap profile:[/bold] {' '.join(command)} exited with {res.exit_code} after {res.seconds:.2f} s"
    try:
        prof = read_run(res.directory)
    except UserError as e:
        console.print(ran)                      # (not "data in DIR": there may be none, and DIR may go)
        _disk_full(res.directory)
        from rankmap.profiler.launch import discard_empty_run
        if discard_empty_run(res):              # no rank wrote anything: never reused, so removed
            off = os.environ.get("RANKMAP_PROFILE", "")
            why = (f"; RANKMAP_PROFILE={off} turned the profiler off: unset it to profile"
                   if off.strip().lower() in ("0", "off", "no", "false") else "")
            raise UserError(f"{e} (nothing was recorded: {res.directory} was removed, so the same --out can be "
                            f"used again{why})") from None
        raise
    console.print(f"{ran}; data in {res.directory}")
    print_summary(prof, console, top=5, model=model)
    if not prof.complete:
        _disk_full(res.directory)
    if res.exit_code != 0:
        sys.exit(res.exit_code if 0 < res.exit_code < 256 else 1)


def _disk_full(directory) -> None:
    """A profile that is partial (or unreadable) on a file system left (nearly) full: the ranks
    could not write their data; say so, and what to do."""
    import shutil
    try:
        free = shutil.disk_usage(directory).free
    except OSError:
        return
    if free < (1 << 20):
        raise UserError(f"{directory}: the disk filled up while the ranks wrote their data ({free // 1024} KiB "
                        "free): the profile is incomplete; free space, or profile to another --out, and run again")


@click.command("show-profile")
@click.argument("rundir", type=click.Path())
@click.option("--top", default=10, show_default=True, type=WholeNumber(0, 10 ** 9),
              help="How many of the heaviest pairs to list.")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL", callback=_model,
              help="Collective model: auto, binomial, recursive-doubling, ring, linear, kchain[:K], smpi, none.")
@click.option("--ranks", "show_ranks", is_flag=True, help="List every rank (host, pid, affinity, status).")
@click.option("--heatmap", metavar="PNG",
              help="Save a heatmap of the traffic (point-to-point plus modelled collectives).")
@click.option("--force", is_flag=True, help="Replace an existing --heatmap file that rankmap did not draw.")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON instead.")
def show_profile(rundir, top, model, show_ranks, heatmap, force, as_json):
    """Summarize a profiler run directory: ranks, bytes, top pairs, collectives, partial or not."""
    from rankmap.profiler.collectives import expand, parse_model
    from rankmap.profiler.rundir import read_run
    from rankmap.profiler.summary import print_summary, top_pairs

    name, k = parse_model(model)
    target = None
    if heatmap is not None:
        from rankmap.profiler import outputs
        target = outputs.target_file(heatmap, "--heatmap", force, inputs=[rundir],
                                     signature=outputs.png_signature)
        if target.path.suffix.lower() != ".png":
            raise UserError(f"--heatmap {heatmap}: the heatmap is a PNG image; name it *.png")
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
    if target is not None:
        from rankmap.mapper.plots import heatmap as draw
        from rankmap.profiler import outputs
        cb, _, _ = expand(prof.collectives, prof.size, name, k)
        outputs.write_file(target, lambda tmp: draw(prof.bytes + cb, tmp, f"{prof.size} ranks, {prof.path.name}"))
        console.print(f"heatmap written to {target}")


@click.command()
@click.argument("kind", type=click.Choice(["profiler", "collectives", "bind", "probe", "coll_bench"]))
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="MPI variant (default: the default MPI).")
def libpath(kind, mpi):
    """Print the path of a built library (for LD_PRELOAD or linking)."""
    from rankmap.profiler.native import artifact
    click.echo(str(artifact(kind, mpi)))


COMMANDS = [profile, show_profile, libpath]
