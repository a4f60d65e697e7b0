"""Mapping verbs: map traffic onto a machine, evaluate and predict mappings, convert traffic
between formats."""
from __future__ import annotations

import json
from pathlib import Path

import click

from rankmap.cli.console import console
from rankmap.cli.options import (BANDWIDTH, LATENCY, POSITIVE, SEED, Number, WholeNumber, _model, machine_options,
                                 text, traffic_options)
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError


def _machine_of(traffic, mopts: dict, mappings=()) -> dict:
    """The machine the options describe; without machine options, the first mapping's
    machine.json (evaluate, predict)."""
    from rankmap.slurm import nodes
    fallback = mappings[0] if mappings else None
    if fallback and Path(fallback).is_file() and Path(fallback).suffix != ".json":
        # a hostfile or binding.txt: the machine of the mapping directory it is in, if it is in one
        fallback = str(Path(fallback).parent) if (Path(fallback).parent / "machine.json").is_file() else None
    return nodes.resolve(mopts, traffic.hosts(), fallback=fallback)


def _input_files(mopts: dict) -> list:
    """The files the machine options name (an output must never replace them)."""
    out = [mopts.get("machine_file"), mopts.get("coords"), mopts.get("nodes")]
    lc = mopts.get("level_costs")
    if lc and lc.startswith("@"):
        out.append(lc[1:])
    def exists(x: str) -> bool:
        try:
            return Path(x).exists()
        except OSError:          # a host list of names too long for a path: not a file
            return False
    return [x for x in out if x and (x.startswith("@") or exists(x))]


def _platform_of(path: str) -> Path | None:
    """The `rankmap platform` directory a file belongs to (its machine.json, platform.xml...),
    or None: such a file given where a probe file is read was 'not valid JSON' (platform.xml)
    or 'not a `rankmap probe` file' (machine.json), not naming the directory to give."""
    p = Path(path)
    try:
        return p.parent if p.is_file() and (p.parent / ".rankmap-platform").exists() else None
    except OSError:
        return None


def _network_speeds(source: str):
    """--network-speeds: a `rankmap platform` directory's network, or a `rankmap probe` file's."""
    from rankmap.mapper.predict import Network
    if not Path(source).exists():
        raise UserError(f"--network-speeds {source}: no such file or directory (a `rankmap probe` file or a "
                        "`rankmap platform` directory)")
    if (d := _platform_of(source)) is not None:
        raise UserError(f"--network-speeds {source}: a file of the platform directory {d}; give the directory "
                        f"(--network-speeds {d})")
    if Path(source).is_dir():
        from rankmap.slurm.platform import load as load_platform
        try:
            return load_platform(source)[0].network()
        except UserError as e:               # the loader names its own option, --platform
            msg = str(e)
            raise UserError("--network-speeds" + msg[len("--platform"):] if msg.startswith("--platform")
                            else f"--network-speeds {source}: {msg}") from None
    return Network.from_probe(source)


@click.command("map")
@click.argument("matrix", type=click.Path())
@traffic_options
@machine_options
@click.option("--algorithm", default="metis", show_default=True,
              type=click.Choice(["metis", "scotch", "greedy", "random", "block", "cyclic"]))
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed: the same seed gives the same mapping.")
@click.option("--tries", type=WholeNumber(1, 100), metavar="N",
              help="At least N partitionings with different seeds, the best kept [default: by size: 16 on machines "
                   "of up to 256 slots, 3 below 1,000 ranks, else 1; scotch: 3].")
@click.option("--time-limit", type=POSITIVE, metavar="S",
              help="Time cap in seconds (wall clock): the partitioning gets half, the local search the rest; "
                   "when it bites, the result depends on the machine's speed.")
@click.option("--no-refine", is_flag=True, help="Skip the local search on the true cost.")
@click.option("--fill", type=click.Choice(["packed", "spread"]), default="packed", show_default=True,
              help="With fewer ranks than slots: start from the fewest nodes (and sockets), in order, unless the "
              "ranks fill 90 % of them (the search may still use more where that costs less); or spread over all "
              "(evenly, in proportion to their slots; the search keeps to those slots).")
@click.option("--mode", type=click.Choice(["same-allocation", "whole-cluster"]), default="same-allocation",
              show_default=True, help="Map onto the given nodes, or choose a compact part of them first.")
@click.option("--imbalance", type=Number(0.0, validate.MAX_IMBALANCE), metavar="EPS",
              help="The traffic's vertices are units of work, several per core: each core takes at most "
              "(1 + EPS) x ceil(vertices / cores) of them (e.g. 0.03).")
@click.option("--out", required=True, metavar="DIR", help="Mapping directory to write.")
@click.option("--force", is_flag=True, help="Replace an existing mapping directory.")
@click.option("--plots", is_flag=True, help="Also write PNG plots (heatmap in mapped order; torus link loads).")
@click.option("--parallel", type=WholeNumber(), metavar="N",
              help="Compute the mapping on PT-Scotch as an MPI job of N processes (srun in an allocation, else "
              "mpirun): for 10^6-10^7 ranks. Its files go next to --out (a shared file system under Slurm).")
@click.option("--parallel-launcher", type=click.Choice(["auto", "srun", "mpirun"]),
              help="How --parallel starts its MPI job (default auto: srun in an allocation, else mpirun).")
@click.option("--network-speeds", metavar="FILE|DIR", callback=text,
              help="The network's speeds: a `rankmap probe` file or a `rankmap platform` directory. rankmap then "
              "makes its final choice among its candidate mappings (its own, block, cyclic, the input order) with "
              "`rankmap predict`'s estimate, when one is more than 1 % faster than the cost's choice. With --mode "
              "whole-cluster it also chooses the nodes that way, among compact ones and sets scattered over the "
              "network (an all-to-all runs faster where its bytes share many links and routers).")
@click.option("--extra-nodes", type=Number(0.0, 1000.0, lo_open=True), metavar="PERCENT",
              help="With --mode whole-cluster and --network-speeds: node sets of up to PERCENT % more nodes than the "
              "fewest that hold the ranks are candidates too, each node partly filled (whole groups of ranks that "
              "exchange most per node, fewer bytes per network interface); one is chosen only where predict "
              "estimates it faster. It trades node-hours for time: the note says how many.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def map_cmd(matrix, fmt, model, allow_partial, algorithm, seed, tries, time_limit, no_refine, fill, mode, imbalance,
            out, force, plots, parallel, parallel_launcher, network_speeds, extra_nodes, as_json, **mopts):
    """Map the ranks of MATRIX (a profile run directory or a traffic file) onto a machine
    and write hostfile, binding.txt, rankfile, machinefile and report.json into --out."""
    from rankmap.mapper.mapping import run_map
    from rankmap.mapper.writers import mapping_target
    from rankmap.profiler.formats import read_traffic
    if parallel_launcher is not None and parallel is None:
        raise UserError(f"--parallel-launcher {parallel_launcher}: only with --parallel N (the mapping's own MPI job)")
    # an option that would change nothing is an error, never ignored
    for flag, ignored, why in (
            (f"--algorithm {algorithm}", parallel is not None and algorithm != "metis", "--parallel N partitions with "
             "PT-Scotch"),
            ("--tries", parallel is not None and tries is not None, "--parallel N partitions once"),
            ("--tries", parallel is None and tries is not None and algorithm not in ("metis", "scotch"),
             f"--algorithm {algorithm} computes one mapping"),
            ("--no-refine", no_refine and algorithm in ("random", "block", "cyclic"),
             f"--algorithm {algorithm} is not refined"),
            ("--extra-nodes", extra_nodes is not None and mode != "whole-cluster", "rankmap chooses the nodes only "
             "with --mode whole-cluster"),
            ("--extra-nodes", extra_nodes is not None and mode == "whole-cluster" and not network_speeds,
             "more nodes, partly filled, cost more by the mapping cost: only predict can tell they run faster "
             "(give --network-speeds)"),
            # the final choice by predicted time is among the search's candidates: these orders
            # have none, and the speeds were read and dropped (no prediction in the report); in
            # whole-cluster mode they still choose the nodes
            ("--network-speeds", network_speeds is not None and algorithm in ("random", "block", "cyclic")
             and mode == "same-allocation", f"--algorithm {algorithm} computes its one order, without a choice "
             "among candidates (with --mode whole-cluster the speeds choose the nodes)")):
        if ignored:
            raise UserError(f"{flag} would be ignored: {why}; drop it")
    out = mapping_target(out, force, inputs=[matrix, *_input_files(mopts)])    # checked before any work
    net = _network_speeds(network_speeds) if network_speeds else None
    if net is not None and parallel is not None:
        raise UserError("--network-speeds chooses among the mappings of one process: not with --parallel")
    traffic = _read(read_traffic, matrix, fmt, model, allow_partial)
    spec = _machine_of(traffic, mopts)
    if imbalance is not None:
        from rankmap.mapper.spec import with_imbalance
        spec = with_imbalance(spec, traffic.size, imbalance)
    kwargs = dict(algorithm=algorithm, seed=seed, tries=tries, time_limit=time_limit, refine=not no_refine, fill=fill,
                  mode=mode, out=out, force=force, plots_on=plots, console=None if as_json else console)
    if net is not None:
        kwargs["network"] = net
    if extra_nodes is not None:
        kwargs["extra_nodes"] = extra_nodes
    from rankmap.mapper import budget
    seconds, _ = budget.check(traffic.bytes.nnz, traffic.size)     # memory: refused before anything is built
    if parallel is None:
        with budget.progress(None if as_json else console, f"mapping {traffic.size} ranks", seconds, time_limit):
            rep = run_map(traffic, spec, **kwargs)
    else:
        import shutil
        import tempfile
        from rankmap.slurm.parallel import runner
        if mode != "same-allocation":
            raise UserError("--parallel maps onto the given nodes (--mode same-allocation)")
        run = runner(parallel, parallel_launcher or "auto", console=None if as_json else console, ranks=traffic.size)
        parent = Path(out).absolute().parent
        parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{Path(out).name}.parallel-", dir=parent))
        try:
            rep = run_map(traffic, spec, parallel=(run, work), **kwargs)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    if as_json:
        click.echo(json.dumps(rep, indent=2))


@click.command()
@click.argument("matrix", type=click.Path())
@click.argument("mappings", nargs=-1, required=True, type=click.Path(exists=True))
@traffic_options
@machine_options
@click.option("--seed", default=0, show_default=True, type=SEED, help="Seed of the random baseline.")
@click.option("--json", "as_json", is_flag=True, help="Print the results as JSON.")
@click.option("--plots", metavar="DIR", help="Write PNG plots (heatmaps in mapped order, torus link loads) into DIR.")
def evaluate(matrix, mappings, fmt, model, allow_partial, seed, as_json, plots, **mopts):
    """Metrics of MAPPINGS (mapping directories, binding files, hostfiles, Open MPI
    rankfiles, machinefiles `host:k` or Open MPI hostfiles `host slots=N`) for the traffic
    MATRIX, next to block, cyclic and random."""
    from rankmap.mapper.mapping import run_evaluate
    from rankmap.profiler import outputs
    from rankmap.profiler.formats import read_traffic
    if plots is not None:
        outputs.plots_dir(plots, "--plots", [matrix, *mappings])               # checked before any work
    traffic = _read(read_traffic, matrix, fmt, model, allow_partial)
    res = run_evaluate(traffic, _machine_of(traffic, mopts, mappings), mappings, seed=seed, plots_dir=plots,
                       console=None if as_json else console)
    if as_json:
        click.echo(json.dumps(res, indent=2))


@click.command()
@click.argument("matrix", type=click.Path())
@click.argument("mappings", nargs=-1, required=True, type=click.Path(exists=True))
@traffic_options
@machine_options
@click.option("--platform", metavar="DIR", callback=text, help="A `rankmap platform` directory: its machine and network.")
@click.option("--probe", metavar="FILE", callback=text, help="Network speeds measured by `rankmap probe` (also accepted as "
              "--network FILE).")
@click.option("--link-bw", type=BANDWIDTH, metavar="GB/S", help="Network link bandwidth (per direction).")
@click.option("--link-lat", type=LATENCY, metavar="US", help="Latency per network link.")
@click.option("--loopback-bw", type=BANDWIDTH, metavar="GB/S", help="Bandwidth between two ranks of one node.")
@click.option("--loopback-lat", type=LATENCY, metavar="US", help="Latency between two ranks of one node.")
@click.option("--nic-bw", type=BANDWIDTH, metavar="GB/S", help="Cap on what a node's router passes.")
@click.option("--json", "as_json", is_flag=True, help="Print the estimates as JSON.")
def predict(matrix, mappings, fmt, model, allow_partial, platform, probe, link_bw, link_lat, loopback_bw,
            loopback_lat, nic_bw, as_json, **mopts):
    """Estimate the communication time of MATRIX under each of MAPPINGS (and block) from the
    network's latencies and bandwidths, link loads, NIC limits and the bisection, without
    running anything."""
    from rankmap.mapper.mapping import run_predict
    from rankmap.profiler.formats import read_traffic
    from rankmap.slurm.platform import network_for
    from rankmap.mapper.network import KINDS
    for flag, key in (("--level-costs", "level_costs"), ("--hop-cost", "hop_cost")):
        # taken and unused: the estimate is time from the network's speeds, the level costs
        # price map's and evaluate's SUM_COM (the table looked the same with any costs)
        if mopts.get(key) is not None:
            raise UserError(f"{flag} would be ignored: predict estimates time from the network's speeds (--probe, "
                            "--platform, --link-bw...), not from costs; drop it (map and evaluate use it)")
    probe_flag = "--probe"
    if mopts.get("network") and mopts["network"].split(":", 1)[0].lower() not in KINDS:
        probe, mopts = mopts["network"], dict(mopts, network=None)   # --network PROBE.json: the speeds, as before
        probe_flag = "--network"
        _network_as_probe(probe)
    if probe and (d := _platform_of(probe)) is not None:
        raise UserError(f"{probe_flag} {probe}: a file of the platform directory {d}, not a `rankmap probe` file; give "
                        f"the platform with --platform {d}")
    if platform:
        from rankmap.slurm.platform import load as load_platform
        # the platform is the machine and its speeds: another machine or speeds beside it would win silently
        for opt, given in (("--machine", mopts.get("machine_file")), ("--probe", probe)):
            if given:
                raise UserError(f"--platform {platform} gives the machine and the network's speeds: leave out {opt}")
        load_platform(platform)                 # a `rankmap platform` directory, or one error naming it
    traffic = _read(read_traffic, matrix, fmt, model, allow_partial)
    if platform and not mopts.get("machine_file"):
        from rankmap.slurm.nodes import machine_file_alone
        mopts = dict(mopts, machine_file=platform)
        machine_file_alone(mopts, "--platform")      # its machine is the whole machine
    spec = _machine_of(traffic, mopts, mappings)
    net = network_for(spec, probe, link_bw=link_bw, link_lat=link_lat, loopback_bw=loopback_bw,
                      loopback_lat=loopback_lat, nic_bw=nic_bw)
    res = run_predict(traffic, spec, mappings, net, None if as_json else console)
    if as_json:
        click.echo(json.dumps(res, indent=2))


def _network_as_probe(path: str) -> None:
    """predict's --network FILE is a probe file (the speeds, as before --probe). A topology.conf
    given so (slurm: left out) was 'not valid JSON', and a platform directory 'a directory,
    expected a probe file': say what each is given with."""
    p = Path(path)
    if p.is_dir():
        if (p / "machine.json").is_file():
            raise UserError(f"--network {path}: a directory; a `rankmap platform` directory is given with "
                            f"--platform {path}")
        return
    try:
        with open(p, "rb") as f:
            head = f.read(4096).lstrip()
    except OSError:
        return                                   # (the probe reader names what is wrong)
    if head and not head.startswith(b"{") and b"=" in head:
        raise UserError(f"--network {path}: not a `rankmap probe` file (JSON); a Slurm topology.conf is given with "
                        f"--network slurm:{path}")


@click.command()
@click.argument("src", type=click.Path())
@click.argument("dst", type=click.Path())
@click.option("--from", "fmt", default="auto", show_default=True, callback=text,
              help="Input format (see map --format).")
@click.option("--to", "to", default="auto", show_default=True, callback=text,
              help="Output format: metis (graph.txt), mtx, csv, npz, treematch (default: from the extension).")
@click.option("--units", type=click.Choice(["bytes", "words"]), default="bytes", show_default=True,
              help="Edge weights in bytes, or in 64-bit words as the Angara statistics count them.")
@click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL", callback=_model)
@click.option("--allow-partial", is_flag=True)
@click.option("--force", is_flag=True, help="Replace DST if it exists.")
def convert(src, dst, fmt, to, units, model, allow_partial, force):
    """Convert traffic between formats; a METIS graph holds the symmetric CSR graph
    W = M + M^T (diagonal dropped) with integer edge weights."""
    from rankmap.profiler import outputs
    from rankmap.profiler.formats import READ_FORMATS, metis_rounding, read_traffic, write
    if fmt not in READ_FORMATS:     # named as the option the user gave (the reader says --format)
        raise UserError(f"--from {fmt!r}: unknown traffic format; choose one of: {', '.join(READ_FORMATS)}")
    d = outputs.target_file(dst, "DST", force, inputs=[src])               # checked before any work
    t = _read(read_traffic, src, fmt, model, allow_partial)
    used = write(t, d, to, units)
    console.print(f"{t.size} ranks, {t.bytes.nnz} directed pairs ({t.format}) -> {d} ({used}, {units})")
    for note in t.notes:                    # what the reader left out or assumed, as map says it
        console.print(f"  note: {note}")
    if t.msgs is not None and t.msgs.nnz and used != "csv":
        console.print(f"  note: {used} holds bytes only: the message counts (predict's latency term) are not "
                      "written; csv keeps them")
    if used == "metis" and (note := metis_rounding(t, units)):     # integer weights: said, not silent
        console.print(f"  note: {note}")
    if units == "words" and used != "csv":     # only a CSV's header tells rankmap's reader the unit
        console.print(f"  note: {used} holds no unit: rankmap reads this file as bytes (8 x fewer than the traffic's); "
                      "keep words for other tools, or write csv")


def _read(read_traffic, matrix, fmt, model, allow_partial):
    """read_traffic, and --collectives / --allow-partial refused where they would change
    nothing: only a profile and an SMPI trace hold collective calls or can be partial (a CSV
    mapped with --collectives ring was mapped as if it had not been given)."""
    t = read_traffic(matrix, fmt, model, allow_partial)
    kind = t.format.split()[0]
    if kind not in ("profile", "smpi"):
        for flag, on, why in ((f"--collectives {model}", model != "auto", "holds no collective calls (only a "
                               "profile and an SMPI trace do)"),
                              ("--allow-partial", allow_partial, "is never partial (only a profile and an SMPI trace "
                               "can be)")):
            if on:
                raise UserError(f"{flag} would be ignored: {matrix} is {kind} traffic, which {why}; drop it")
    return t


COMMANDS = [map_cmd, evaluate, predict, convert]
