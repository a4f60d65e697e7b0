"""Which machine a command maps onto: its machine options resolved against the hosts a
profile ran on, the Slurm allocation, and Slurm's own description of the nodes.

The options are the dict the CLI's machine options give (nodes, topologies, torus, mesh,
coords, switches, level_costs, hop_cost, ranks_per_node, oversubscribe, machine_file);
the result is a complete machine description for rankmap.mapper.spec."""
from __future__ import annotations

import os
from pathlib import Path

from rankmap.mapper import hostnames, spec as mspec
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError
from rankmap.slurm import cluster

MACHINE_OPTIONS = ("nodes", "topologies", "network", "torus", "mesh", "coords", "switches", "level_costs",
                   "hop_cost", "ranks_per_node", "machine_file")
FLAGS = {"nodes": "--nodes", "topologies": "--node-topology", "network": "--network", "torus": "--torus",
         "mesh": "--mesh", "coords": "--coords", "switches": "--switch-tree", "level_costs": "--level-costs",
         "hop_cost": "--hop-cost", "ranks_per_node": "--ranks-per-node", "oversubscribe": "--oversubscribe"}
TORI = ("torus", "mesh", "tofu")     # --network kinds whose links --hop-cost prices


def given(opts: dict) -> bool:
    """True when the options describe any part of the machine."""
    return any(opts.get(k) for k in MACHINE_OPTIONS) or (opts.get("oversubscribe") or 1) > 1


def machine_file_alone(opts: dict, flag: str = "--machine") -> None:
    """A machine file describes the whole machine: another machine option beside it would be
    silently ignored (a --torus that changes nothing), so it is an error."""
    extra = [FLAGS[k] for k in FLAGS if k != "oversubscribe" and opts.get(k)]
    if (opts.get("oversubscribe") or 1) > 1:
        extra.append("--oversubscribe")
    if extra:
        raise UserError(f"{flag} {opts['machine_file']} describes the whole machine; {', '.join(extra)} would be "
                        f"ignored: drop {'them' if len(extra) > 1 else 'it'}, or drop {flag} and describe the machine "
                        "with options alone")


def for_batch(opts: dict) -> dict:
    """The machine options of a batch script (`rankmap sbatch`), checked when it is written,
    not in the job after its profile pass: what needs no node names (the network, the node
    internals, the files), with the files named by absolute paths (the job may start in another
    directory). The job maps onto its own allocation, so --nodes (the script passed both, and the
    last, the user's, won over the nodes Slurm gave the job) and --machine (a whole machine beside
    the allocation's node list, which map refuses) are errors."""
    if opts.get("nodes"):
        raise UserError(f"--nodes {opts['nodes']}: the job maps onto the nodes Slurm allocates it "
                        "($SLURM_JOB_NODELIST); to choose them, pass --sbatch-arg=--nodelist=HOSTLIST")
    if opts.get("machine_file"):
        raise UserError(f"--machine {opts['machine_file']}: describes a whole machine, and the job maps onto its "
                        "allocation ($SLURM_JOB_NODELIST), which rankmap map refuses beside --machine: describe the "
                        "nodes with --node-topology (and --network, --torus ...) instead")
    _hop_cost_needs_torus(opts)
    out = dict(opts)
    if opts.get("network"):
        from rankmap.mapper.network import parse_spec
        spec = parse_spec(opts["network"])
        if spec["kind"] == "slurm" and spec["file"]:
            from rankmap.slurm import topology
            topology.describe(spec["file"])
            out["network"] = "slurm:" + os.path.abspath(spec["file"])
    topos = []
    for t in opts.get("topologies") or ():
        hl, eq, body = t.partition("=") if "=" in t and not Path(t.strip()).exists() else ("", "", t)
        if body.strip() not in ("live", "slurm"):
            from rankmap.mapper import hwtopo
            hwtopo.load(body.strip())
        topos.append(hl + eq + os.path.abspath(body.strip()) if Path(body.strip()).is_file() else t)
    out["topologies"] = tuple(topos)
    if opts.get("coords"):
        validate.read_text(opts["coords"], "coordinate file")
        out["coords"] = os.path.abspath(opts["coords"])
    costs = opts.get("level_costs")
    if costs and costs.startswith("@"):
        from rankmap.mapper.machine import _level_cost_file
        _level_cost_file(costs[1:])
        out["level_costs"] = "@" + os.path.abspath(costs[1:])
    return out


def _hop_cost_needs_torus(opts: dict) -> None:
    """--hop-cost prices the links of a torus or mesh; on any other network it would change nothing."""
    if opts.get("hop_cost") is None:
        return
    net = opts.get("network")
    kind = net.split(":", 1)[0].strip().lower() if isinstance(net, str) else None
    if not (opts.get("torus") or opts.get("mesh") or kind in TORI):
        raise UserError(f"--hop-cost {float(opts['hop_cost']):g}: prices the links of a torus or mesh; give --torus, "
                        "--mesh or --network torus:/mesh:/tofu:, or drop --hop-cost (a tree's or dragonfly's "
                        "levels are priced by --level-costs)")


def resolve(opts: dict, default_hosts: list[str] | None = None, fallback: str | None = None) -> dict:
    """The machine the options mean. Hosts: --nodes, else `default_hosts` (where a profile
    ran), else the Slurm allocation. Node internals: --node-topology, else what Slurm says
    about the nodes. `fallback`: a mapping or platform directory whose machine.json is used
    when no option describes the machine."""
    if opts.get("machine_file"):
        machine_file_alone(opts)
        return mspec.load(opts["machine_file"])
    _hop_cost_needs_torus(opts)
    why_not = ""
    if fallback and not given(opts):
        try:
            return mspec.load(fallback)
        except UserError as e:          # said below if no option names the nodes either
            why_not = f" (the machine of {fallback} is unknown: {e})"
    elif fallback:                      # `predict T m1/ --network torus:2x2`: m1's machine is not the default then
        flags = [FLAGS[k] for k in FLAGS if opts.get(k) and k != "oversubscribe"] + \
            (["--oversubscribe"] if (opts.get("oversubscribe") or 1) > 1 else [])
        why_not = (f" (the machine of {fallback} is used only when no machine option is given: add --nodes and "
                   f"--node-topology, or drop {', '.join(flags)})")
    hosts_from = ""
    if opts.get("nodes"):
        hosts = hostnames.node_list(opts["nodes"])
    elif default_hosts:
        hosts = list(default_hosts)
    elif cluster.in_allocation() or os.environ.get("SLURM_JOB_NODELIST", "").strip():
        hosts = cluster.allocation_nodes()     # --nodes' documented default, with or without SLURM_JOB_ID
        var = "SLURM_JOB_NODELIST" if os.environ.get("SLURM_JOB_NODELIST", "").strip() else "SLURM_NODELIST"
        hosts_from = f"the allocation's nodes ({hostnames.compress(hosts)[:80]}, from ${var})"
    else:
        raise UserError("no node list: pass --nodes (a hostlist such as n[01-36], or a file), "
                        "or run inside a Slurm allocation" + why_not)
    topos = list(opts.get("topologies") or ())
    if topos == ["slurm"] or not topos:
        from_slurm = cluster.node_topologies(hosts)
        if from_slurm is None and topos == ["slurm"]:
            # why Slurm said nothing: no Slurm here (no scontrol, no configuration) read as if it
            # did not know the nodes
            import shutil
            why = "scontrol is not installed here" if shutil.which("scontrol") is None else None
            if why is None:
                try:
                    cluster.node_info(hosts)
                except UserError as e:
                    why = str(e)
            raise UserError(f"--node-topology slurm: Slurm does not describe these nodes ({why or 'scontrol show node'}"
                            "); give their internals instead, e.g. --node-topology 'pack:2 core:6' or an lstopo XML "
                            "file")
        topos = from_slurm or []
    if not topos:
        raise UserError("no node topology: pass --node-topology (e.g. 'pack:2 core:6', an lstopo XML file, "
                        "or 'live')")
    rpn = opts.get("ranks_per_node")
    if rpn is None and (opts.get("nodes") or not default_hosts):
        rpn, note = _allocation_cap(hosts, topos)
        hosts_from = (hosts_from or "the allocation's nodes") + note if note else hosts_from
    spec = mspec.Spec(mspec.make(hosts, topos, torus=opts.get("torus"), mesh=opts.get("mesh"),
                                 coords=opts.get("coords"), switch_tree=opts.get("switches"),
                                 level_costs=opts.get("level_costs"), hop_cost=opts.get("hop_cost"),
                                 ranks_per_node=rpn, oversubscribe=opts.get("oversubscribe") or 1,
                                 network=network_of(opts.get("network"), hosts)))
    spec.hosts_from = hosts_from
    return spec


def _allocation_cap(hosts: list[str], topos: list[str]) -> tuple[int | None, str]:
    """Mapping onto the nodes of the allocation it runs in: when the allocation has fewer CPUs
    on each node than the nodes have cores (salloc -N 2 -n 2: one CPU each), at most that many
    ranks per node. The mapping packed two ranks on a node and srun refused it in this very
    allocation ("More processors requested than permitted"). (None, ""): no cap. Nodes given
    unequal CPUs are not capped here: `rankmap srun` names a node the mapping overfills."""
    cpus = cluster.allocation_cpus()
    if not cpus or set(hosts) != set(cpus):
        return None, ""
    counts = {cpus[h] for h in hosts}
    if len(counts) != 1:
        return None, ""
    c = counts.pop()
    from rankmap.mapper.machine import parse_topologies
    most = max(t.cores for t in {id(t): t for t in parse_topologies(topos, hosts)}.values())
    if c >= most:
        return None, ""
    return c, (f", of which this allocation has {c} CPU(s) on each (SLURM_JOB_CPUS_PER_NODE="
               f"{os.environ.get('SLURM_JOB_CPUS_PER_NODE')}; allocate whole nodes with --exclusive)")


def network_of(text: str | None, hosts: list[str]):
    """--network: Slurm's own description (`slurm`, `slurm:FILE`) resolved here, into each
    host's switches or blocks; any other kind is passed on as text (checked now)."""
    if not text:
        return None
    from rankmap.mapper.network import parse_spec
    spec = parse_spec(text)
    if spec["kind"] != "slurm":
        return text
    from rankmap.slurm import topology
    return topology.for_hosts(topology.describe(spec["file"]), hosts)
