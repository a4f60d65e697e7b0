"""A machine described as data: the dict a mapping directory keeps as machine.json, built
into a Machine, frozen so that it rebuilds exactly, or reduced to some of its nodes.

Which hosts and which node internals a command means (its options, a profile's hosts,
Slurm's allocation and node descriptions) is decided above this layer, in
rankmap.slurm.nodes; this module only turns a complete description into a machine."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from rankmap.mapper import hostnames, machine as machine_mod
from rankmap.mapper.network import SwitchTree, Torus, positions
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

KEYS = ("hosts", "node_topology", "torus", "mesh", "coords", "switch_tree", "level_costs", "hop_cost",
        "ranks_per_node", "oversubscribe", "network")
OTHER_KEYS = ("simgrid", "imbalance")     # a platform's SimGrid section; --imbalance's (with_imbalance)


def make(hosts: list[str], node_topology: list[str], torus: str | None = None, mesh: str | None = None,
         coords=None, switch_tree: str | None = None, level_costs: str | None = None, hop_cost: str | None = None,
         ranks_per_node: int | None = None, oversubscribe: int = 1, network: str | dict | None = None) -> dict:
    """network: a --network spec (text or dict; Slurm's topology already resolved by
    rankmap.slurm.topology)."""
    return {"hosts": list(hosts), "node_topology": list(node_topology), "torus": torus, "mesh": mesh,
            "coords": coords, "switch_tree": switch_tree, "level_costs": level_costs, "hop_cost": hop_cost,
            "ranks_per_node": ranks_per_node, "oversubscribe": oversubscribe or 1, "network": network}


class Spec(dict):
    """A machine description read from a file (errors while building it name the file), or
    whose node list came from elsewhere than an option (hosts_from: said when they are too few)."""
    origin: str | None = None
    hosts_from: str = ""


def load(path: str | Path) -> dict:
    """machine.json of a mapping or platform directory (the directory or the file), every
    field checked for its type here (the values themselves when the machine is built, with
    the file named in the error)."""
    p = Path(path)
    p = p / "machine.json" if p.is_dir() else p
    if not p.exists():
        raise UserError(f"{p}: no such file (a machine description: a mapping or platform directory, or its "
                        "machine.json)")
    raw = validate.read_json(p, "machine description (machine.json)")
    where = str(p)
    if not isinstance(raw, dict) or "hosts" not in raw:
        raise UserError(f"{p}: not a machine description (no host list)")
    unknown = [k for k in raw if k not in KEYS + OTHER_KEYS]
    if unknown:        # a misspelt field ("ranks-per-node", "oversubscribed") was ignored: another machine
        import difflib
        near = difflib.get_close_matches(unknown[0].replace("-", "_").lower(), KEYS + OTHER_KEYS, 1, 0.6)
        raise UserError(f"{where}: unknown field {unknown[0]!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
                        + f"; a machine description has {', '.join(KEYS)}")
    hosts = validate.string_list(raw["hosts"], where, "hosts")
    if len(hosts) > validate.MAX_NODES:
        raise UserError(f"{where}: {len(hosts)} hosts; rankmap handles at most {validate.MAX_NODES}")
    for i, h in enumerate(hosts):
        hostnames.check_name(h, f"{where}: hosts[{i}]")
    if len(set(hosts)) != len(hosts):
        raise UserError(f"{where}: hosts: a host appears twice")
    if "node_topology" not in raw:
        raise UserError(f"{where}: no node_topology (a list such as [\"pack:2 core:6\"])")
    validate.string_list(raw["node_topology"], where, "node_topology")
    for k in ("torus", "mesh", "switch_tree", "level_costs"):
        validate.expect(raw.get(k), (str, type(None)), where, k)
    validate.expect(raw.get("coords"), (str, dict, type(None)), where, "coords")
    if isinstance(raw.get("coords"), dict):
        for h, c in raw["coords"].items():
            validate.expect(c, list, where, f"coords.{h}")
    validate.expect(raw.get("hop_cost"), (str, int, float, type(None)), where, "hop_cost")
    for k, hi in (("ranks_per_node", validate.MAX_CORES_PER_NODE), ("oversubscribe", validate.MAX_OVERSUBSCRIBE)):
        if raw.get(k) is not None:
            validate.integer(validate.expect(raw[k], int, where, k), where, k, 1, hi)
    validate.expect(raw.get("network"), (str, dict, type(None)), where, "network")
    if isinstance(raw.get("network"), dict):
        _check_network(raw["network"], where)
    validate.expect(raw.get("simgrid"), (dict, type(None)), where, "simgrid")
    validate.expect(raw.get("imbalance"), (int, float, type(None)), where, "imbalance")
    spec = Spec(raw)
    spec.origin = where
    return spec


_NET_KEYS = {"torus": ("shape",), "mesh": ("shape",), "fat-tree": (), "dragonfly": ("shape",), "switches": ("paths",),
             "blocks": ("paths",)}


def _check_network(net: dict, where: str) -> None:
    """A network as machine.json holds it (network.parse_spec's dict, or Slurm's switches)."""
    kind = net.get("kind")
    if kind not in _NET_KEYS:
        raise UserError(f"{where}: network.kind {validate.show(kind)} is not one of {', '.join(_NET_KEYS)}")
    for k in _NET_KEYS[kind] + (("shape",) if kind == "fat-tree" and not net.get("simgrid") else ()):
        if k not in net:
            raise UserError(f"{where}: network.{k} is missing (a {kind} network needs it)")
    for k in ("shape", "simgrid", "wrap", "oversub", "routing", "label"):
        validate.expect(net.get(k), (str, type(None)), where, f"network.{k}")
    for k in ("global", "local"):
        if net.get(k) is not None:
            validate.integer(validate.expect(net[k], int, where, f"network.{k}"), where, f"network.{k}", 1)
    if "paths" in net:
        validate.expect(net["paths"], dict, where, "network.paths")
        for h, groups in net["paths"].items():
            validate.string_list(groups, where, f"network.paths.{h}")


def build(spec: dict):
    with validate.prefixed(getattr(spec, "origin", None)):
        m = machine_mod.build(spec["hosts"], spec["node_topology"], torus=spec.get("torus"),
                              mesh=spec.get("mesh"), coords=spec.get("coords"), switches=spec.get("switch_tree"),
                              level_costs=spec.get("level_costs"), ranks_per_node=spec.get("ranks_per_node"),
                              oversubscribe=spec.get("oversubscribe") or 1, hop_cost=spec.get("hop_cost"),
                              network=spec.get("network"))
    m.spec = dict(spec)
    m.hosts_from = getattr(spec, "hosts_from", "")
    return m


def frozen(spec: dict, m, compact: bool = False) -> dict:
    """The spec with everything resolved (coordinates, costs) so that it rebuilds exactly.
    compact (machine.json): a --torus/--mesh whose nodes sit in the default order (host i at
    position i, first dimension fastest) keeps no coordinates; they rebuild the same (10^5
    nodes: 6.4 MB of them)."""
    out = dict(spec)
    out["hosts"] = list(m.hosts)
    out["level_costs"] = _level_costs(spec, list(m.hosts), list(m.level_costs))
    out["hop_cost"] = f"{m.hop_cost:g}"
    if isinstance(m.network, Torus):
        default = (compact and bool(spec.get("torus") or spec.get("mesh")) and not spec.get("network")
                   and np.array_equal(m.network.pos(m.network.coords), np.arange(len(m.hosts))))
        out["coords"] = None if default else {h: [int(x) for x in c] for h, c in zip(m.hosts, m.network.coords)}
    elif (pos := positions(m.network)) is not None:
        # places in a tree or dragonfly (a --switch-tree stays one: a plain tree, one link up
        # per switch, not the full-bisection fat tree of fat-tree:AxB)
        out["coords"] = {h: [int(x) for x in c] for h, c in zip(m.hosts, pos)}
    by_spec = {}
    for h, t in zip(m.hosts, m.topos):
        by_spec.setdefault(t.spec, []).append(h)
    out["node_topology"] = ([next(iter(by_spec))] if len(by_spec) == 1 else
                            [f"{hostnames.compress(hs)}={spec}" for spec, hs in by_spec.items()])
    return out


def _level_costs(spec: dict, hosts: list[str], costs: list) -> str:
    """The level costs of the spec's machine reduced to `hosts`, as its description rebuilds.
    Slurm's switches rebuild from these hosts' paths alone (SwitchTree.from_paths: without the
    levels they all share, as deep as their longest path), where a machine reduced to some
    nodes (--mode whole-cluster, an allocation) keeps the whole tree's levels."""
    net = spec.get("network")
    if isinstance(net, dict) and net.get("kind") in ("switches", "blocks") and hosts != list(spec["hosts"]):
        costs = SwitchTree.level_costs_for(list(spec["hosts"]), hosts, net["paths"], costs)
    return ",".join(f"{c:g}" for c in costs)


def restrict(spec: dict, hosts: list[str]) -> dict:
    """The same machine reduced to `hosts` (in the spec's order): coordinates and level
    costs are kept, so the nodes stay where they are."""
    keep = set(hosts)
    m = build(spec)
    full = frozen(spec, m)
    out = dict(full, hosts=[h for h in full["hosts"] if h in keep])
    if not out["hosts"]:
        raise UserError("none of the available hosts is in the machine description")
    out["level_costs"] = _level_costs(spec, out["hosts"], list(m.level_costs))
    if isinstance(full.get("coords"), dict):
        out["coords"] = {h: c for h, c in full["coords"].items() if h in keep}
    topo_of = {h: t.spec for h, t in zip(m.hosts, m.topos)}
    by_spec = {}
    for h in out["hosts"]:
        by_spec.setdefault(topo_of[h], []).append(h)
    out["node_topology"] = ([next(iter(by_spec))] if len(by_spec) == 1 else
                            [f"{hostnames.compress(hs)}={s}" for s, hs in by_spec.items()])
    return out


def with_imbalance(spec: dict, n: int, imbalance: float) -> dict:
    """The machine for n units of work (graph vertices, several per core) under the process-
    mapping literature's balance constraint: each core takes at most
    floor((1 + imbalance) * ceil(n / cores)) of them (KaHIP's and SharedMap's rule)."""
    import math
    if not math.isfinite(imbalance) or imbalance < 0:
        raise UserError(f"--imbalance must be a finite number >= 0, not {imbalance!r}")
    if (spec.get("oversubscribe") or 1) > 1:
        raise UserError("--imbalance sets how many units each core takes: leave out --oversubscribe")
    cores = build(dict(spec, oversubscribe=1)).nslots
    per_core = max(1, math.floor((1 + imbalance) * math.ceil(n / cores) + 1e-9))
    if per_core > validate.MAX_OVERSUBSCRIBE or per_core * cores > validate.MAX_SLOTS:
        # (the machine's slot limit then blamed an --oversubscribe the user had not given)
        raise UserError(f"--imbalance {imbalance:g}: each of the {cores} cores would take up to {per_core} of the {n} "
                        f"units, {per_core * cores} slots in all, more than rankmap handles "
                        f"({validate.MAX_SLOTS}); give a smaller --imbalance")
    return dict(spec, oversubscribe=per_core, imbalance=imbalance)
