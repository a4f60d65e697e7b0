"""The `rankmap` command: one entry point, one subcommand per task.

User mistakes raise profiler.errors.UserError anywhere below; they are printed here as
one line (no traceback) with exit status 2."""
from __future__ import annotations

import sys

import click
from rich.console import Console

from mapper.options import machine_options
from profiler.errors import UserError

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
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
@click.argument("kind", type=click.Choice(["profiler", "collectives", "bind", "probe", "coll_bench"]))
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="MPI variant (default: the default MPI).")
def libpath(kind, mpi):
    """Print the path of a built library (for LD_PRELOAD or linking)."""
    from profiler.native import artifact
    click.echo(str(artifact(kind, mpi)))


def _traffic_options(f):
    f = click.option("--allow-partial", is_flag=True, help="Use a partial profile (a rank died) anyway.")(f)
    f = click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL",
                     help="How a profile's collectives become pairs: auto, binomial, recursive-doubling, ring, "
                     "linear, kchain[:K], none.")(f)
    f = click.option("--format", "fmt", default="auto", show_default=True,
                     help="Traffic format: auto, profile, mpip, csv, treematch, amfch, ompi, mtx, npz, metis.")(f)
    return f


@cli.command("map")
@click.argument("matrix", type=click.Path())
@_traffic_options
@machine_options
@click.option("--algorithm", default="metis", show_default=True,
              type=click.Choice(["metis", "scotch", "greedy", "random", "block", "cyclic"]))
@click.option("--seed", default=0, show_default=True, help="Seed: the same seed gives the same mapping.")
@click.option("--tries", default=3, show_default=True, help="Partitionings with different seeds (at least).")
@click.option("--time-limit", type=float, metavar="S",
              help="Safety cap on the search in seconds; when it bites, the result depends on the machine's speed.")
@click.option("--no-refine", is_flag=True, help="Skip the local search on the true cost.")
@click.option("--fill", type=click.Choice(["packed", "spread"]), default="packed", show_default=True,
              help="With fewer ranks than slots: fill subtrees in order, or in proportion.")
@click.option("--mode", type=click.Choice(["same-allocation", "whole-cluster"]), default="same-allocation",
              show_default=True, help="Map onto the given nodes, or choose a compact part of them first.")
@click.option("--out", required=True, metavar="DIR", help="Mapping directory to write.")
@click.option("--force", is_flag=True, help="Replace an existing mapping directory.")
@click.option("--plots", is_flag=True, help="Also write PNG plots (heatmap in mapped order; torus link loads).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def map_cmd(matrix, fmt, model, allow_partial, algorithm, seed, tries, time_limit, no_refine, fill, mode, out, force,
            plots, as_json, **mopts):
    """Map the ranks of MATRIX (a profile run directory or a traffic file) onto a machine
    and write hostfile, binding.txt, rankfile, machinefile and report.json into --out."""
    from mapper.mapping import run_map
    rep = run_map(matrix, fmt=fmt, model=model, allow_partial=allow_partial, mopts=mopts, algorithm=algorithm,
                  seed=seed, tries=tries, time_limit=time_limit, refine=not no_refine, fill=fill, mode=mode,
                  out=out, force=force, plots_on=plots, console=None if as_json else console)
    if as_json:
        import json
        click.echo(json.dumps(rep, indent=2))


@cli.command()
@click.argument("matrix", type=click.Path())
@click.argument("mappings", nargs=-1, required=True, type=click.Path())
@_traffic_options
@machine_options
@click.option("--seed", default=0, show_default=True, help="Seed of the random baseline.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--plots", metavar="DIR", help="Write PNG plots (heatmaps in mapped order, torus link loads) into DIR.")
def evaluate(matrix, mappings, fmt, model, allow_partial, seed, as_json, plots, **mopts):
    """Metrics of MAPPINGS (mapping directories, binding files or hostfiles) for the traffic
    MATRIX, next to block, cyclic and random."""
    from mapper.mapping import run_evaluate
    res = run_evaluate(matrix, mappings, fmt=fmt, model=model, allow_partial=allow_partial, mopts=mopts, seed=seed,
                       plots_dir=plots, console=None if as_json else console)
    if as_json:
        import json
        click.echo(json.dumps(res, indent=2))


@cli.command()
@click.argument("matrix", type=click.Path())
@click.argument("mappings", nargs=-1, required=True, type=click.Path())
@_traffic_options
@machine_options
@click.option("--platform", metavar="DIR", help="A `rankmap platform` directory: its machine and network.")
@click.option("--network", metavar="FILE", help="Network speeds measured by `rankmap probe`.")
@click.option("--link-bw", type=float, metavar="GB/S", help="Network link bandwidth (per direction).")
@click.option("--link-lat", type=float, metavar="US", help="Latency per network link.")
@click.option("--loopback-bw", type=float, metavar="GB/S", help="Bandwidth between two ranks of one node.")
@click.option("--loopback-lat", type=float, metavar="US", help="Latency between two ranks of one node.")
@click.option("--nic-bw", type=float, metavar="GB/S", help="Cap on what a node's router passes.")
@click.option("--json", "as_json", is_flag=True, help="Print the estimates as JSON.")
def predict(matrix, mappings, fmt, model, allow_partial, platform, network, link_bw, link_lat, loopback_bw,
            loopback_lat, nic_bw, as_json, **mopts):
    """Estimate the communication time of MATRIX under each of MAPPINGS (and block) from the
    network's latencies and bandwidths, link loads, NIC limits and the bisection, without
    running anything."""
    from mapper.mapping import run_predict
    res = run_predict(matrix, mappings, fmt, model, allow_partial, mopts,
                      dict(platform=platform, network=network, link_bw=link_bw, link_lat=link_lat,
                           loopback_bw=loopback_bw, loopback_lat=loopback_lat, nic_bw=nic_bw),
                      None if as_json else console)
    if as_json:
        import json
        click.echo(json.dumps(res, indent=2))


@cli.command()
@click.argument("src", type=click.Path())
@click.argument("dst", type=click.Path())
@click.option("--from", "fmt", default="auto", show_default=True, help="Input format (see map --format).")
@click.option("--to", "to", default="auto", show_default=True,
              help="Output format: metis (graph.txt), mtx, csv, npz, treematch (default: from the extension).")
@click.option("--units", type=click.Choice(["bytes", "words"]), default="bytes", show_default=True,
              help="Edge weights in bytes, or in 64-bit words as the Angara statistics count them.")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL")
@click.option("--allow-partial", is_flag=True)
@click.option("--force", is_flag=True, help="Replace DST if it exists.")
def convert(src, dst, fmt, to, units, model, allow_partial, force):
    """Convert traffic between formats; a METIS graph holds the symmetric CSR graph
    W = M + M^T (diagonal dropped) with integer edge weights."""
    from pathlib import Path
    from profiler.formats import write
    from profiler.traffic import load_traffic
    d = Path(dst)
    if d.exists() and not force:
        raise UserError(f"{d} exists; pass --force to replace it")
    t = load_traffic(src, fmt, model, allow_partial)
    used = write(t, d, to, units)
    console.print(f"{t.size} ranks, {t.bytes.nnz} directed pairs ({t.format}) -> {d} ({used}, {units})")


def _machine_args(mopts: dict) -> list[str]:
    """The machine options back as command-line arguments (for generated scripts)."""
    out = []
    flags = {"nodes": "--nodes", "torus": "--torus", "mesh": "--mesh", "coords": "--coords", "hop_cost": "--hop-cost",
             "switches": "--switch-tree", "level_costs": "--level-costs", "ranks_per_node": "--ranks-per-node",
             "machine_file": "--machine"}
    for k, flag in flags.items():
        if mopts.get(k):
            out += [flag, str(mopts[k])]
    for t in mopts.get("topologies") or ():
        out += ["--node-topology", t]
    if (mopts.get("oversubscribe") or 1) > 1:
        out += ["--oversubscribe", str(mopts["oversubscribe"])]
    return out


def _program(app) -> list[str]:
    """The program after `--` (click keeps the `--` when a positional argument came first)."""
    app = list(app)
    return app[1:] if app and app[0] == "--" else app


def _preload(collectives: bool, mpi: str | None):
    if not collectives:
        return None
    from profiler.native import artifact
    return [str(artifact("collectives", mpi))]


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-n", "--ntasks", type=int, help="Ranks (default: the allocation's SLURM_NTASKS).")
@click.option("-N", "--nodes-count", "nodes_count", type=int, help="Nodes for pass 1 when outside an allocation.")
@click.option("--out", metavar="DIR", help="Workflow directory (default rankmap-run-<date>): profile/, mapping/.")
@click.option("--mode", type=click.Choice(["same-allocation", "whole-cluster"]), default="same-allocation",
              show_default=True, help="Map onto the profiled nodes, or onto the best idle nodes of the cluster.")
@machine_options
@click.option("--algorithm", default="metis", show_default=True, type=click.Choice(["metis", "scotch", "greedy"]))
@click.option("--seed", default=0, show_default=True)
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL")
@click.option("-t", "--time", "time_minutes", type=int, metavar="MIN", help="Time limit of each srun (minutes).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="MPI of the program (default: detected).")
@click.option("--preload-collectives", is_flag=True, help="Relaunch with rankmap's collective kernels preloaded.")
@click.option("--srun-arg", "srun_args", multiple=True, metavar="ARG", help="Extra argument for both sruns.")
@click.option("--verify", is_flag=True, help="Profile pass 2 too and check every rank's host and cores.")
@click.option("--launcher", type=click.Choice(["srun", "smpi"]), default="srun", show_default=True,
              help="A real Slurm cluster, or a simulated one (SimGrid SMPI; the program built with smpicc).")
@click.option("--platform", "platform_dir", metavar="DIR", help="smpi: the simulated cluster (`rankmap platform`).")
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
        unused = [f for f, v in (("-N", nodes_count), ("--srun-arg", srun_args), ("--verify", verify),
                                 ("--preload-collectives", preload_collectives), ("-t", time_minutes))
                  if v] + [f"--{k.replace('_', '-')}" for k, v in mopts.items() if v and k != "oversubscribe"]
        if unused:
            raise UserError(f"{unused[0]} does not apply to --launcher smpi (the platform describes the machine)")
        if algorithm != "metis":
            raise UserError("--launcher smpi maps with metis")
        from slurm.simulated import run_workflow as run_sim
        sys.exit(run_sim(_program(app), platform_dir, ntasks, out, mode, seed, model, compute, replay_pass2, console))
    if platform_dir or replay_pass2:
        raise UserError("--platform and --replay belong to --launcher smpi")
    from slurm.workflow import run_workflow
    sys.exit(run_workflow(list(app), ntasks, nodes_count, out, mode, mopts, algorithm, seed, model, time_minutes,
                          mpi, _preload(preload_collectives, mpi), list(srun_args), console, verify))


@cli.command("srun", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("mapping", type=click.Path())
@click.option("--dry-run", is_flag=True, help="Print the srun line only.")
@click.option("--bind-wrapper", is_flag=True, help="Bind through rankmap-bind even when one map_cpu list would do.")
@click.option("--preload-collectives", is_flag=True, help="Preload rankmap's collective kernels.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]))
@click.option("--srun-arg", "srun_args", multiple=True, metavar="ARG", help="Extra srun argument (repeat).")
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def srun_cmd(mapping, dry_run, bind_wrapper, preload_collectives, mpi, srun_args, app):
    """Run APP with srun -m arbitrary as MAPPING (a `rankmap map` directory) says: every
    rank on its host and core. Prints the exact srun line it runs.

    Example: rankmap srun map1/ --dry-run -- ./app args   (the program comes after --)
    """
    from slurm.relaunch import run_plan, srun_plan
    plan = srun_plan(mapping, _program(app), list(srun_args), preload=_preload(preload_collectives, mpi),
                     force_wrapper=bind_wrapper, mpi=mpi)
    sys.exit(run_plan(plan, dry_run, lambda s: console.print(s, soft_wrap=True)))


@cli.command("mpirun", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": True})
@click.argument("mapping", type=click.Path())
@click.option("--dry-run", is_flag=True, help="Print the command only.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="Open MPI rankfile or MPICH machinefile.")
@click.option("--mpirun-arg", "extra", multiple=True, metavar="ARG", help="Extra launcher argument (repeat).")
@click.option("--preload-collectives", is_flag=True, help="Preload rankmap's collective kernels.")
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def mpirun_cmd(mapping, dry_run, mpi, extra, preload_collectives, app):
    """Run APP as MAPPING says without Slurm: Open MPI's mpirun with the rankfile, or MPICH's
    mpiexec with the machinefile and rankmap-bind."""
    from slurm.relaunch import mpirun_plan, run_plan
    plan = mpirun_plan(mapping, _program(app), mpi, list(extra), _preload(preload_collectives, mpi))
    sys.exit(run_plan(plan, dry_run, lambda s: console.print(s, soft_wrap=True)))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@click.option("-n", "--ntasks", type=int, required=True, help="Ranks.")
@click.option("-N", "--nodes-count", "nodes_count", type=int, help="Nodes.")
@click.option("--out", metavar="DIR", required=True, help="Where the job writes profile/ and mapping/.")
@click.option("--script", "script_path", metavar="FILE", help="Script file (default DIR/rankmap.sbatch).")
@click.option("--submit", is_flag=True, help="Submit it with sbatch and print the job id.")
@click.option("-t", "--time", "time_minutes", type=int, metavar="MIN", help="Time limit of the job (minutes).")
@click.option("--sbatch-arg", "sbatch_args", multiple=True, metavar="ARG", help="Extra #SBATCH line (repeat).")
@machine_options
@click.argument("app", nargs=-1, type=click.UNPROCESSED, required=True)
def sbatch(ntasks, nodes_count, out, script_path, submit, time_minutes, sbatch_args, app, **mopts):
    """Write a batch script that profiles APP, maps it onto the job's nodes and relaunches it."""
    from pathlib import Path
    from slurm.workflow import sbatch_script
    d = Path(out).absolute()
    d.mkdir(parents=True, exist_ok=True)
    path = Path(script_path) if script_path else d / "rankmap.sbatch"
    path.write_text(sbatch_script(list(app), ntasks, nodes_count, str(d), _machine_args(mopts), time_minutes,
                                  list(sbatch_args)))
    path.chmod(0o755)
    console.print(f"wrote {path}")
    if submit:
        from slurm.cluster import query
        console.print(query(["sbatch", "--parsable", str(path)]).strip())


@cli.command("tune-collectives")
@click.option("-n", "--ntasks", type=int, required=True, help="Ranks to tune for.")
@click.option("--platform", "platform_dir", metavar="DIR",
              help="Tune on this simulated cluster (`rankmap platform`); otherwise real MPI on this host.")
@click.option("--per-node", type=int, metavar="K", help="Simulated: ranks per node (block placement; default: full nodes).")
@click.option("--grid", metavar="AxB..", help="Grid of the d-D ring (default: ranks per node x nodes).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="Real MPI: which (default: the default MPI).")
@click.option("--ops", default="allreduce,reduce,bcast", show_default=True)
@click.option("--sizes", metavar="B,B,..", help="Message sizes in bytes (default 8 B .. 16 MB).")
@click.option("--margin", type=float, default=0.10, show_default=True,
              help="A kernel must be this much faster than the library to be chosen.")
@click.option("--overhead-us", type=float, default=0.5, show_default=True,
              help="Simulated: CPU time per message sent and received (SMPI smpi/os, smpi/or).")
@click.option("--out", required=True, metavar="FILE", help="The table (for RANKMAP_COLL_TUNING).")
def tune_collectives_cmd(ntasks, platform_dir, per_node, grid, mpi, ops, sizes, margin, overhead_us, out):
    """Time the library's collectives and rankmap's kernels with one harness and write the
    size table the kernels read (RANKMAP_COLL_TUNING=FILE)."""
    import tempfile
    from pathlib import Path
    from slurm import tune_collectives as tc
    try:
        size_list = [int(x) for x in sizes.split(",")] if sizes else tc.DEFAULT_SIZES
    except ValueError:
        raise UserError(f"--sizes: expected byte counts separated by commas, got {sizes!r}") from None
    if ntasks < 2 or any(b < 8 for b in size_list) or not 0 <= margin < 10:
        raise UserError("need -n >= 2, sizes >= 8 B and a margin in [0, 10)")
    env = {"RANKMAP_COLL_GRID": grid} if grid else {}
    if platform_dir:
        from mapper import platform as plat
        from slurm import smpi
        p, pdir = plat.load(platform_dir)
        k = per_node or p.node_cores(0)
        hosts = [f"{p.prefix}{r // k}" for r in range(ntasks)]
        smpi.check_hosts(hosts, p, "tune-collectives")
        hf = smpi.write_hostfile(hosts, Path(tempfile.mkdtemp(prefix="rankmap-tune-")) / "hostfile")
        if not grid and ntasks % k == 0:
            env["RANKMAP_COLL_GRID"] = f"{k}x{ntasks // k}"
        measure = lambda op, e: tc.time_smpi(op, size_list, p, pdir, hf, ntasks, dict(env, **e),  # noqa: E731
                                             overhead_us=overhead_us)
        where = f"{ntasks} ranks, {k} per node, on {plat.describe(p)}"
    else:
        from profiler import native
        mpi = mpi or native.default_mpi()
        measure = lambda op, e: tc.time_mpi(op, size_list, mpi, ntasks, dict(env, **e))  # noqa: E731
        where = f"{ntasks} ranks of {mpi} on this host"
    console.print(f"[bold]rankmap tune-collectives[/bold] {where}")
    tc.tune(ops.split(","), size_list, margin, Path(out), measure, lambda m: console.print("  " + m))
    console.print(f"written {out}: run with RANKMAP_COLL_TUNING={Path(out).absolute()}")


@cli.command()
@click.argument("name", required=False)
@click.option("--out", required=True, metavar="DIR", help="Directory for platform.xml, platform-ideal.xml, platform-nocompute.xml, machine.json.")
@click.option("--torus", metavar="DIMS", help="A torus of this shape instead of the named platform's network.")
@click.option("--fat-tree", "fat_tree", metavar="SPEC", help="A SimGrid fat tree, e.g. '2;8,4;1,2;1,1'.")
@click.option("--cores", type=int, metavar="N", help="Cores per node (all nodes).")
@click.option("--link-bw", type=float, metavar="GB/S", help="Bandwidth of each network link and direction.")
@click.option("--link-lat", type=float, metavar="US", help="Latency of each network link.")
@click.option("--loopback-bw", type=float, metavar="GB/S", help="Bandwidth between two ranks of one node.")
@click.option("--loopback-lat", type=float, metavar="US", help="Latency between two ranks of one node.")
@click.option("--nic-bw", metavar="GB/S|none", help="Cap on everything a node's router passes (none: no cap).")
@click.option("--core-speed", type=float, metavar="GFLOPS", help="Speed of each core.")
@click.option("--network-scale", type=float, metavar="X",
              help="Network speed relative to the nominal one: bandwidths x X, latencies / X (0.25 = four times slower).")
@click.option("--force", is_flag=True, help="Replace an existing platform directory.")
def platform(name, out, torus, fat_tree, cores, link_bw, link_lat, loopback_bw, loopback_lat, nic_bw, core_speed,
             network_scale, force):
    """Write a simulated cluster for SimGrid SMPI and the matching machine description.

    NAME: angara-k1 (3x3x4 torus, 24 nodes of 2x6 cores + 12 of 8), desmos (4x2x2x2 torus,
    6 cores), fat-tree (4 leaves of 8 nodes, 2:1), or none with --torus/--fat-tree.
    """
    from dataclasses import replace
    from mapper import platform as plat
    base = plat.preset(name) if name else None
    p = plat.custom(torus, fat_tree, cores, base)
    changes = {k: v for k, v in dict(link_bw=link_bw, link_lat=link_lat, loopback_bw=loopback_bw,
                                      loopback_lat=loopback_lat, core_speed=core_speed,
                                      network_scale=network_scale).items() if v is not None}
    if nic_bw is not None:
        if nic_bw.lower() == "none":
            changes["nic_bw"] = None
        else:
            try:
                changes["nic_bw"] = float(nic_bw)
            except ValueError:
                raise UserError(f"--nic-bw must be a number of GB/s or 'none', not {nic_bw!r}") from None
    p = replace(p, **changes)
    d = plat.write(p, out, force)
    console.print(plat.describe(p))
    console.print(f"written: {d}/{{platform.xml, platform-ideal.xml, platform-nocompute.xml, machine.json}}")


@cli.command()
@click.argument("trace", type=click.Path())
@click.argument("placements", nargs=-1, required=True, type=click.Path())
@click.option("--platform", "platform_dir", required=True, metavar="DIR", help="A `rankmap platform` directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def replay(trace, placements, platform_dir, as_json):
    """Replay an SMPI time-independent TRACE under each of PLACEMENTS (hostfiles or mapping
    directories) on the simulated cluster: simulated time and communication time."""
    from pathlib import Path
    from mapper import platform as plat
    from profiler.smpi_trace import rank_files
    from slurm import simulated, smpi
    p, pdir = plat.load(platform_dir)
    n = len(rank_files(Path(trace)))
    hosts = {}
    for pl in placements:
        path = Path(pl)
        hf = path / "hostfile" if path.is_dir() else path
        name = path.name or pl
        while name in hosts:
            name += "'"
        hosts[name] = smpi.read_hostfile(hf)
        if len(hosts[name]) != n:
            raise UserError(f"{hf}: {len(hosts[name])} ranks, the trace has {n}")
    import tempfile
    with tempfile.TemporaryDirectory(prefix="rankmap-replay-") as tmp:
        res = simulated.compare(Path(trace), p, pdir, hosts, Path(tmp))
    if as_json:
        import json
        click.echo(json.dumps({k: v.as_dict() for k, v in res.items()}, indent=2))
        return
    from rich.table import Table
    t = Table(title=f"{n} ranks on {plat.describe(p)}", show_edge=False)
    for c in ("placement", "simulated s", "comm s", "comm share", "vs first", "comm alone s", "predicted s",
              "hop-bytes", "max link B"):
        t.add_column(c, justify="right" if c != "placement" else "left")
    ref = next(iter(res.values())).seconds
    for k, v in res.items():
        d = v.as_dict()
        t.add_row(k, f"{v.seconds:.6g}", f"{v.comm_seconds:.6g}", f"{d['comm_share']:.1%}", f"{v.seconds / ref:.3f}",
                  f"{d['comm_alone_seconds']:.4g}", f"{d['predicted_comm_seconds']:.4g}", f"{v.hop_bytes:.4g}",
                  f"{v.max_link_load:.4g}")
    console.print(t)
    console.print("comm = simulated time minus the time on a network that costs nothing; comm alone = the trace's "
                  "communication with compute that costs nothing; predicted = `rankmap predict`'s estimate of it")


@cli.command()
@machine_options
@click.option("--out", default="levels.json", show_default=True, metavar="FILE", help="Level-cost file to write.")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]))
@click.option("--reps", default=50, show_default=True, help="Repetitions of each measurement (median).")
def probe(out, mpi, reps, **mopts):
    """Measure latency and bandwidth between two cores of a socket, two sockets, neighbour
    and distant nodes (plus LogP o, g, L and the reduction cost), and write the level-cost
    file for `map --level-costs @FILE`."""
    from slurm.probe import run_probe
    run_probe(mopts, out, mpi, reps, console)


@cli.command()
@click.option("--out", metavar="DIR", help="Directory for everything the demo writes (default rankmap-demo-<date>).")
@click.option("--only", type=click.Choice(["slurm", "simulated"]), help="Run one half of the demo.")
def demo(out, only):
    """Run the main job on the embedded default workload: the two-pass workflow on the local
    Slurm cluster (real daemons) and on a simulated Angara-K1 (SimGrid SMPI)."""
    from slurm.demo import run_demo
    sys.exit(run_demo(out, console, only or "both"))


def main():
    cli(prog_name="rankmap")


if __name__ == "__main__":
    main()
