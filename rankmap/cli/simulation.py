"""Simulation verbs: simulated clusters (SimGrid platforms), trace replay under placements,
and tuning the collective kernels' size table."""
from __future__ import annotations

import click

from rankmap.cli.console import console
from rankmap.cli.options import BANDWIDTH, LATENCY, MAX_SPEED, NON_NEGATIVE, Number, WholeNumber, _dims, text
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

@click.command("tune-collectives")
@click.option("-n", "--ntasks", type=WholeNumber(2, 65536), required=True, help="Ranks to tune for.")
@click.option("--platform", "platform_dir", metavar="DIR", callback=text,
              help="Tune on this simulated cluster (`rankmap platform`); otherwise real MPI on this host.")
@click.option("--per-node", type=WholeNumber(1, validate.MAX_CORES_PER_NODE), metavar="K",
              help="Simulated: ranks per node (block placement; default: full nodes).")
@click.option("--grid", metavar="AxB..", callback=text, help="Grid of the d-D ring (default: ranks per node x nodes).")
@click.option("--mpi", type=click.Choice(["openmpi", "mpich"]), help="Real MPI: which (default: the default MPI).")
@click.option("--ops", default="allreduce,reduce,bcast", show_default=True, callback=text)
@click.option("--sizes", metavar="B,B,..", callback=text, help="Message sizes in bytes (default 8 B .. 16 MB).")
@click.option("--margin", type=Number(0.0, 9.99), default=0.10, show_default=True,
              help="A kernel must be this much faster than the library to be chosen.")
@click.option("--overhead-us", type=NON_NEGATIVE, default=0.5, show_default=True,
              help="Simulated: CPU time per message sent and received (SMPI smpi/os, smpi/or).")
@click.option("--out", required=True, metavar="FILE", help="The table (for RANKMAP_COLL_TUNING).")
@click.option("--force", is_flag=True, help="Replace an existing --out file that rankmap did not write.")
def tune_collectives_cmd(ntasks, platform_dir, per_node, grid, mpi, ops, sizes, margin, overhead_us, out, force):
    """Time the library's collectives and rankmap's kernels with one harness and write the
    size table the kernels read (RANKMAP_COLL_TUNING=FILE)."""
    import tempfile
    from pathlib import Path
    from rankmap.profiler import outputs
    from rankmap.slurm import tune_collectives as tc
    # everything checked before minutes of timing start
    given = click.get_current_context().get_parameter_source
    unused = [flag for flag, on in (("--per-node", per_node is not None),
                                    ("--overhead-us", given("overhead_us") != click.core.ParameterSource.DEFAULT))
              if on and not platform_dir] + (["--mpi"] if mpi and platform_dir else [])
    if unused:      # an option that would change nothing is an error, never ignored
        raise UserError(f"{unused[0]} applies only to " + ("real MPI (without --platform): drop it" if platform_dir
                                                          else "a simulated cluster: give --platform DIR, or drop it"))
    target = outputs.target_file(out, "--out", force, signature=outputs.text_signature(tc.TABLE_HEAD))
    if sizes is None:
        size_list = tc.DEFAULT_SIZES
    else:
        size_list = [validate.integer(x, "--sizes", "message size", 8, 1 << 30, float_form=False)
                     for x in sizes.split(",")]
    bad = [op for op in ops.split(",") if op not in tc.KERNELS]
    if bad:
        raise UserError(f"--ops: unknown operation {bad[0]!r}; choose among {', '.join(tc.KERNELS)}")
    again = next((op for i, op in enumerate(ops.split(",")) if op in ops.split(",")[:i]), None)
    if again is not None:
        # timed twice, its rules written twice: the kernels appended the second table to the
        # first, whose order then no longer said which rule holds for a size
        raise UserError(f"--ops {ops}: {again} is given twice; give each operation once")
    if grid is not None:
        from rankmap.mapper.network import parse_dims
        import math
        with validate.prefixed("--grid"):
            g = parse_dims(grid, "grid")
        if math.prod(g) != ntasks:
            raise UserError(f"--grid {grid}: {math.prod(g)} ranks, not the -n {ntasks} being tuned")
    env = {"RANKMAP_COLL_GRID": grid} if grid else {}
    if platform_dir:
        from rankmap.slurm import platform as plat
        from rankmap.slurm import smpi
        p, pdir = plat.load(platform_dir)
        k = per_node or p.node_cores(0)
        if -(-ntasks // k) > p.nodes:     # (was: 'host n4 is not a node of the simulated cluster')
            raise UserError(f"-n {ntasks} at {k} ranks per node{'' if per_node else ' (full nodes)'} needs "
                            f"{-(-ntasks // k)} nodes; the simulated cluster {p.name} has {p.nodes}: lower -n (or "
                            "write a larger platform)")
        hosts = [f"{p.prefix}{r // k}" for r in range(ntasks)]
        smpi.check_hosts(hosts, p, "tune-collectives")
        tmp = tempfile.mkdtemp(prefix="rankmap-tune-")     # removed at the end (one was left by every run)
        hf = smpi.write_hostfile(hosts, Path(tmp) / "hostfile")
        if not grid and ntasks % k == 0:
            env["RANKMAP_COLL_GRID"] = f"{k}x{ntasks // k}"
        measure = lambda op, e: tc.time_smpi(op, size_list, p, pdir, hf, ntasks, dict(env, **e),  # noqa: E731
                                             overhead_us=overhead_us)
        where = f"{ntasks} ranks, {k} per node, on {plat.describe(p)}"
    else:
        from rankmap.profiler import native
        mpi = mpi or native.default_mpi()
        measure = lambda op, e: tc.time_mpi(op, size_list, mpi, ntasks, dict(env, **e))  # noqa: E731
        where = f"{ntasks} ranks of {mpi} on this host"
    console.print(f"[bold]rankmap tune-collectives[/bold] {where}")
    try:
        tc.tune(ops.split(","), size_list, margin, target, measure, lambda m: console.print("  " + m))
    finally:
        if platform_dir:
            import shutil
            shutil.rmtree(tmp, ignore_errors=True)
    console.print(f"written {target}: run with RANKMAP_COLL_TUNING={target}")


@click.command()
@click.argument("name", required=False)
@click.option("--out", required=True, metavar="DIR", help="Directory for platform.xml, platform-ideal.xml, platform-nocompute.xml, machine.json, platform.sha256.")
@click.option("--torus", metavar="DIMS", callback=_dims("torus"),
              help="A torus of this shape instead of the named platform's network.")
@click.option("--fat-tree", "fat_tree", metavar="SPEC", callback=text, help="A SimGrid fat tree, e.g. '2;8,4;1,2;1,1'.")
@click.option("--dragonfly", metavar="GxAxP[:global=L]", callback=text,
              help="A dragonfly: G groups of A routers (G <= A), P nodes per router, L links per pair of groups.")
@click.option("--cores", type=WholeNumber(1, validate.MAX_CORES_PER_NODE), metavar="N",
              help="Cores per node (all nodes).")
@click.option("--link-bw", type=BANDWIDTH, metavar="GB/S", help="Bandwidth of each network link and direction.")
@click.option("--link-lat", type=LATENCY, metavar="US", help="Latency of each network link.")
@click.option("--loopback-bw", type=BANDWIDTH, metavar="GB/S", help="Bandwidth between two ranks of one node.")
@click.option("--loopback-lat", type=LATENCY, metavar="US", help="Latency between two ranks of one node.")
@click.option("--nic-bw", metavar="GB/S|none", type=Number(0.0, MAX_SPEED, lo_open=True, none_word="none"),
              help="Cap on everything a node's router passes (none: no cap).")
@click.option("--core-speed", type=BANDWIDTH, metavar="GFLOPS", help="Speed of each core.")
@click.option("--network-scale", type=Number(1e-6, 1e6), metavar="X",
              help="Network speed relative to the nominal one: bandwidths x X, latencies / X (0.25 = four times slower).")
@click.option("--force", is_flag=True, help="Replace an existing platform directory.")
def platform(name, out, torus, fat_tree, dragonfly, cores, link_bw, link_lat, loopback_bw, loopback_lat, nic_bw,
             core_speed, network_scale, force):
    """Write a simulated cluster for SimGrid SMPI and the matching machine description.

    NAME: angara-k1 (3x3x4 torus, 24 nodes of 2x6 cores + 12 of 8), desmos (4x2x2x2 torus,
    6 cores), fat-tree (4 leaves of 8 nodes, 4:1), dragonfly (4 groups x 4 routers x 2
    nodes), or none with --torus/--fat-tree/--dragonfly.
    """
    from dataclasses import replace
    from rankmap.profiler import outputs
    from rankmap.slurm import platform as plat
    target = outputs.target_dir(out, "--out", "platform", force)            # checked before any work
    # the help's "none with --torus/--fat-tree/--dragonfly", taken at its word ("unknown
    # platform 'none'" before)
    base = plat.preset(name) if name and name != "none" else None
    p = plat.custom(torus, fat_tree, cores, base, dragonfly)
    changes = {k: v for k, v in dict(link_bw=link_bw, link_lat=link_lat, loopback_bw=loopback_bw,
                                      loopback_lat=loopback_lat, core_speed=core_speed,
                                      network_scale=network_scale).items() if v is not None}
    if nic_bw is not None:                     # a number, or 'none': no cap
        changes["nic_bw"] = None if nic_bw == "none" else nic_bw
    p = replace(p, **changes)
    d = plat.write(p, target, force)
    console.print(plat.describe(p))
    console.print(f"written: {d}/{{platform.xml, platform-ideal.xml, platform-nocompute.xml, machine.json, platform.sha256}}")


@click.command()
@click.argument("trace", type=click.Path())
@click.argument("placements", nargs=-1, required=True, type=click.Path())
@click.option("--platform", "platform_dir", required=True, metavar="DIR", callback=text, help="A `rankmap platform` directory.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
def replay(trace, placements, platform_dir, as_json):
    """Replay an SMPI time-independent TRACE under each of PLACEMENTS (hostfiles or mapping
    directories) on the simulated cluster: simulated time and communication time."""
    from pathlib import Path
    from rankmap.slurm import platform as plat
    from rankmap.profiler.smpi_trace import rank_files
    from rankmap.slurm import simulated, smpi
    p, pdir = plat.load(platform_dir)
    n = len(rank_files(Path(trace)))
    hosts = {}
    for pl in placements:
        path = Path(pl)
        hf = path / "hostfile" if path.is_dir() else path
        name = path.name or pl
        while name in hosts:
            name += "'"
        hosts[name] = smpi.read_hostfile(path)
        if len(hosts[name]) != n:
            raise UserError(f"{hf}: {len(hosts[name])} ranks, the trace has {n}")
        smpi.check_hosts(hosts[name], p, str(hf))
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
        t.add_row(k, f"{v.seconds:.6g}", f"{v.comm_seconds:.6g}", f"{d['comm_share']:.1%}",
                  f"{v.seconds / ref:.3f}" if ref > 0 else "n/a",
                  f"{d['comm_alone_seconds']:.4g}", f"{d['predicted_comm_seconds']:.4g}", f"{v.hop_bytes:.4g}",
                  f"{v.max_link_load:.4g}")
    console.print(t)
    console.print("comm = simulated time minus the time on a network that costs nothing; comm alone = the trace's "
                  "communication with compute that costs nothing; predicted = `rankmap predict`'s estimate of it")


COMMANDS = [tune_collectives_cmd, platform, replay]
