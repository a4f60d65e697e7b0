"""Command-line options that describe a machine, shared by map, evaluate and the launch
commands, and the machine.json that lets a mapping directory rebuild its machine."""
from __future__ import annotations

import json
from pathlib import Path

import click

from mapper import hostnames, machine as machine_mod
from mapper.network import Torus
from profiler.errors import UserError


def machine_options(f):
    opts = [
        click.option("--nodes", metavar="HOSTLIST", help="Nodes: a Slurm hostlist such as n[01-36], @FILE or a file "
                     "(one hostlist per line); default: $SLURM_JOB_NODELIST, or the nodes a profile ran on."),
        click.option("--node-topology", "topologies", multiple=True, metavar="SPEC",
                     help="Node internals: an lstopo XML file, a synthetic description ('pack:2 core:6'), 'live', "
                     "or 'slurm' (scontrol's Sockets/CoresPerSocket; the default when Slurm knows the nodes). "
                     "Heterogeneous nodes: repeat as HOSTLIST=SPEC."),
        click.option("--torus", metavar="DIMS", help="3-D (or any-D) torus between the nodes, e.g. 3x3x4."),
        click.option("--mesh", metavar="DIMS", help="Like --torus without wrap-around links."),
        click.option("--coords", metavar="FILE", help="Torus coordinates: lines 'host x y z' (default: node order, x fastest)."),
        click.option("--switch-tree", "switches", metavar="ARITIES", help="Switch tree over the nodes, top to bottom, e.g. 2x18."),
        click.option("--level-costs", metavar="LIST|@FILE",
                     help="Link cost per level, top (between nodes) to bottom (cores of one socket), TreeMatch's "
                     "accumulated convention; default 1000,100,10; @FILE reads `rankmap probe` output."),
        click.option("--hop-cost", metavar="COST", help="Torus: cost of each link after the first (default: the node-level "
                     "cost; a level-cost file may give it as 'hop')."),
        click.option("--ranks-per-node", type=int, metavar="K", help="Use only K cores per node, spread over its packages."),
        click.option("--oversubscribe", type=int, default=1, show_default=True, metavar="N", help="N ranks per core."),
        click.option("--machine", "machine_file", metavar="DIR|FILE", help="machine.json of an earlier mapping."),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


def slurm_topologies(hosts: list[str]) -> list[str] | None:
    """Node internals as Slurm describes them (`scontrol show node`: Sockets, CoresPerSocket),
    as --node-topology specs; None when Slurm is not reachable or does not know the hosts."""
    import shutil
    import subprocess
    if not shutil.which("scontrol"):
        return None
    try:
        res = subprocess.run(["scontrol", "show", "node", "-o", hostnames.compress(hosts)], capture_output=True,
                             text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if res.returncode != 0:
        return None
    kinds = {}
    for line in res.stdout.splitlines():
        kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "NodeName" in kv:
            kinds[kv["NodeName"]] = f"pack:{kv.get('Sockets', 1)} core:{kv.get('CoresPerSocket', 1)}"
    if any(h not in kinds for h in hosts):
        return None
    by = {}
    for h in hosts:
        by.setdefault(kinds[h], []).append(h)
    return [next(iter(by))] if len(by) == 1 else [f"{hostnames.compress(hs)}={spec}" for spec, hs in by.items()]


def spec_from_options(o: dict, default_hosts: list[str] | None = None) -> dict:
    if o.get("machine_file"):
        p = Path(o["machine_file"])
        p = p / "machine.json" if p.is_dir() else p
        try:
            spec = json.loads(p.read_text())
        except (OSError, ValueError) as e:
            raise UserError(f"{p}: cannot read the machine description ({e})") from None
        return spec
    if o.get("nodes"):
        hosts = hostnames.node_list(o["nodes"])
    elif default_hosts:
        hosts = list(default_hosts)
    else:
        hosts = hostnames.node_list(None)
    topos = list(o.get("topologies") or ())
    if topos == ["slurm"] or not topos:
        from_slurm = slurm_topologies(hosts)
        if from_slurm is None and topos == ["slurm"]:
            raise UserError("--node-topology slurm: scontrol does not describe these nodes")
        topos = from_slurm or []
    return {"hosts": hosts, "node_topology": topos, "torus": o.get("torus"),
            "mesh": o.get("mesh"), "coords": o.get("coords"), "switch_tree": o.get("switches"),
            "level_costs": o.get("level_costs"), "hop_cost": o.get("hop_cost"), "ranks_per_node": o.get("ranks_per_node"),
            "oversubscribe": o.get("oversubscribe") or 1}


def build(spec: dict):
    m = machine_mod.build(spec["hosts"], spec["node_topology"], torus=spec.get("torus"), mesh=spec.get("mesh"),
                          coords=spec.get("coords"), switches=spec.get("switch_tree"),
                          level_costs=spec.get("level_costs"), ranks_per_node=spec.get("ranks_per_node"),
                          oversubscribe=spec.get("oversubscribe") or 1, hop_cost=spec.get("hop_cost"))
    return m


def frozen_spec(spec: dict, m) -> dict:
    """The spec with everything resolved (coordinates, costs) so that it rebuilds exactly."""
    out = dict(spec)
    out["hosts"] = list(m.hosts)
    out["level_costs"] = ",".join(f"{c:g}" for c in m.level_costs)
    out["hop_cost"] = f"{m.hop_cost:g}"
    if isinstance(m.network, Torus):
        out["coords"] = {h: [int(x) for x in c] for h, c in zip(m.hosts, m.network.coords)}
    by_spec = {}
    for h, t in zip(m.hosts, m.topos):
        by_spec.setdefault(t.spec, []).append(h)
    out["node_topology"] = ([next(iter(by_spec))] if len(by_spec) == 1 else
                            [f"{hostnames.compress(hs)}={spec}" for spec, hs in by_spec.items()])
    return out
