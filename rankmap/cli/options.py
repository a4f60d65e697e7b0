"""Options several verbs share: the machine (nodes, node internals, network, costs) and how
traffic is read."""
from __future__ import annotations

import math

import click

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError


# ---------------------------------------------------------------------- option types: checked as they are parsed
# (an error names the option: "Invalid value for '--link-bw': 'nan' is not a finite number")

class Number(click.ParamType):
    """A finite number in [lo, hi] ((lo, hi] with lo_open); `none_word` (e.g. 'none') is passed on as is."""
    name = "number"

    def __init__(self, lo: float | None = None, hi: float | None = None, lo_open: bool = False,
                 none_word: str | None = None):
        self.lo, self.hi, self.lo_open, self.none_word = lo, hi, lo_open, none_word

    def convert(self, value, param, ctx):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            v = float(value)
        else:
            text = str(value).strip()
            if self.none_word and text.lower() == self.none_word:
                return self.none_word
            try:
                v = float(text)
            except ValueError:
                extra = f" or '{self.none_word}'" if self.none_word else ""
                self.fail(f"{value!r} is not a number{extra}", param, ctx)
        if not math.isfinite(v):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        if self.lo is not None and (v < self.lo or (self.lo_open and v == self.lo)):
            self.fail(f"{value!r} must be {'>' if self.lo_open else '>='} {self.lo:g}", param, ctx)
        if self.hi is not None and v > self.hi:
            self.fail(f"{value!r} must be <= {self.hi:g}", param, ctx)
        return v


class WholeNumber(click.IntRange):
    """click.IntRange whose errors say what is wrong with the text: a whole number written '1e6' or
    '8.0' is named as such, anything else 'is not a whole number' (click said "'1e6' is not a
    valid integer range")."""

    def convert(self, value, param, ctx):
        if isinstance(value, str):
            try:
                int(value.strip(), 10)
            except ValueError:
                try:
                    f = float(value)
                except ValueError:
                    f = math.nan
                if math.isfinite(f) and f == math.floor(f):
                    super().convert(int(f), param, ctx)          # out of range: that error first
                    self.fail(f"{value!r} is not a whole number written in digits (write {int(f)})", param, ctx)
                self.fail(f"{value!r} is not a whole number", param, ctx)
        return super().convert(value, param, ctx)

    def _describe_range(self) -> str:
        # no bounds (the command checks the value itself): click's help said "[x<=None]"
        return super()._describe_range() if self.min is not None or self.max is not None else ""


POSITIVE = Number(0.0, lo_open=True)       # speeds, seconds
NON_NEGATIVE = Number(0.0)                 # costs, overheads
MAX_SPEED = 1e9                            # GB/s, us, Gflop/s: beyond this the model's sums overflow, no hardware is near
BANDWIDTH = Number(validate.MIN_BANDWIDTH, MAX_SPEED)
LATENCY = Number(0.0, MAX_SPEED)
SEED = WholeNumber(0, 10 ** 9)         # seeds: the partitioners and the local search take 32-bit seeds
RANKS = WholeNumber(1, validate.MAX_RANKS)
NODES = WholeNumber(1, validate.MAX_NODES)
MINUTES = WholeNumber(1, 10 ** 6)


def text(ctx, param, value):
    """A text option given as '' (an unset shell variable) is an error, not 'not given'."""
    if value is None:
        return value
    for v in value if isinstance(value, tuple) else (value,):
        if not str(v).strip():
            raise click.BadParameter(f"{v!r} is empty (an unset shell variable?)", ctx, param)
    return value


def _checked(check):
    """A callback: non-empty text that `check(value)` accepts (its UserError becomes the option's error)."""
    def cb(ctx, param, value):
        text(ctx, param, value)
        if value is not None:
            try:
                check(value)
            except UserError as e:
                raise click.BadParameter(str(e), ctx, param) from None
        return value
    return cb


def _dims(what):
    def check(v):
        from rankmap.mapper.network import parse_dims
        parse_dims(v, what)
    return _checked(check)


def _costs(v):
    if not v.startswith("@"):
        if not any(x.strip() for x in v.split(",")):
            raise UserError("no cost given")
        from rankmap.mapper.machine import cost_list
        cost_list(v)


def _model(ctx, param, value):
    from rankmap.profiler.collectives import parse_model
    return _checked(parse_model)(ctx, param, value)


MACHINE_FLAGS = {"nodes": "--nodes", "network": "--network", "torus": "--torus", "mesh": "--mesh", "coords": "--coords",
                 "hop_cost": "--hop-cost", "switches": "--switch-tree", "level_costs": "--level-costs",
                 "ranks_per_node": "--ranks-per-node", "machine_file": "--machine"}


def machine_options(f):
    opts = [
        click.option("--nodes", metavar="HOSTLIST", callback=text, help="Nodes: a Slurm hostlist such as n[01-36], @FILE or a file "
                     "(one hostlist per line); default: $SLURM_JOB_NODELIST, or the nodes a profile ran on."),
        click.option("--node-topology", "topologies", multiple=True, metavar="SPEC", callback=text,
                     help="Node internals: an lstopo XML file, a synthetic description ('pack:2 core:6'), 'live', "
                     "or 'slurm' (scontrol's Sockets/CoresPerSocket; the default when Slurm knows the nodes). "
                     "Heterogeneous nodes: repeat as HOSTLIST=SPEC."),
        click.option("--network", metavar="SPEC", callback=text,
                     help="The network between the nodes: slurm (`scontrol show topology`: the site's switches or "
                     "blocks), slurm:TOPOLOGY.CONF, fat-tree:4x8[:oversub=2] (or SimGrid's '2;8,4;1,2;1,1'), "
                     "dragonfly:GROUPSxROUTERSxNODES[:global=L][:routing=valiant], torus:DIMS[:wrap=111010], "
                     "mesh:DIMS, tofu:XxYxZ."),
        click.option("--torus", metavar="DIMS", callback=_dims("torus"), help="3-D (or any-D) torus between the nodes, e.g. 3x3x4."),
        click.option("--mesh", metavar="DIMS", callback=_dims("mesh"), help="Like --torus without wrap-around links."),
        click.option("--coords", metavar="FILE", callback=text, help="Torus coordinates: lines 'host x y z' (default: node order, x fastest)."),
        click.option("--switch-tree", "switches", metavar="ARITIES", callback=_dims("switch tree"), help="Switch tree over the nodes, top to bottom, e.g. 2x18."),
        click.option("--level-costs", metavar="LIST|@FILE", callback=_checked(_costs),
                     help="Link cost per level, top (between nodes) to bottom (cores of one socket), TreeMatch's "
                     "accumulated convention; default 1000,100,10; @FILE reads `rankmap probe` output."),
        click.option("--hop-cost", metavar="COST", type=Number(0.0, validate.MAX_COST), help="Torus: cost of each link after the first (default: the node-level "
                     "cost; a level-cost file may give it as 'hop')."),
        click.option("--ranks-per-node", type=WholeNumber(1, validate.MAX_CORES_PER_NODE), metavar="K", help="Use only K cores per node, spread over its packages (nodes of several sizes: at most K; a node of fewer cores uses all of them)."),
        click.option("--oversubscribe", type=WholeNumber(1, validate.MAX_OVERSUBSCRIBE), default=1,
                     show_default=True, metavar="N", help="Up to N ranks per core: the ranks take distinct cores "
                     "first; cores take a second (third...) rank only when the ranks outnumber the cores, evenly."),
        click.option("--machine", "machine_file", metavar="DIR|FILE", callback=text, help="machine.json of an earlier mapping."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def machine_args(mopts: dict) -> list[str]:
    """The machine options back as command-line arguments (for generated scripts)."""
    out = []
    for k, flag in MACHINE_FLAGS.items():
        if mopts.get(k):
            out += [flag, str(mopts[k])]
    for t in mopts.get("topologies") or ():
        out += ["--node-topology", t]
    if (mopts.get("oversubscribe") or 1) > 1:
        out += ["--oversubscribe", str(mopts["oversubscribe"])]
    return out


def traffic_options(f):
    f = click.option("--allow-partial", is_flag=True, help="Use a partial profile (a rank died) anyway.")(f)
    f = click.option("--collectives", "model", default="auto", show_default=True, metavar="MODEL", callback=_model,
                     help="How a profile's collectives become pairs: auto, binomial, recursive-doubling, ring, "
                     "linear, kchain[:K], smpi, none.")(f)
    f = click.option("--format", "fmt", default="auto", show_default=True, callback=text,
                     help="Traffic format: auto, profile, smpi, mpip, csv, treematch, amfch, ompi, mtx, npz, "
                     "metis.")(f)
    return f
