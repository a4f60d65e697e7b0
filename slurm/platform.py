"""Simulated clusters: a SimGrid platform file and the matching rankmap machine description.

`rankmap platform` writes a directory that both sides read, so that mapping and
simulation agree on node names, torus coordinates and cores:

  platform.xml        SimGrid platform (one <cluster>: TORUS, FAT_TREE or DRAGONFLY) for smpirun
  platform-ideal.xml  the same hosts on an infinitely fast network: a trace replayed on it
                      gives the program's time without communication cost
  platform-nocompute.xml  the same network with infinitely fast cores: a trace replayed on it
                      gives the time of its communication alone (what `rankmap predict` estimates)
  machine.json        rankmap's machine (hosts, node internals, torus/switch tree, the
                      link parameters under "simgrid"): `--machine DIR` for map/evaluate/predict

A fat tree is SimGrid's "levels;down,...;up,...;count,..." (rankmap's machine has the same
leaves and the same uplinks per subtree, so the oversubscription is the simulated one;
SimGrid routes d-mod-k, rankmap's link loads spread a subtree's bytes evenly over its
uplinks). A dragonfly is SimGrid's "G,L;1,1;A,1;P": G groups of A routers (one chassis),
P nodes per router, L links between each pair of groups; SimGrid puts the link from
group g to group t on router t of group g, so G <= A (rankmap's Dragonfly uses the same
arrangement and SimGrid's minimal routes). SimGrid gives a dragonfly's routers a limiter
too when limiter_link is set; the dragonfly preset has no NIC cap.

SimGrid facts this relies on (SimGrid 3.32, checked by tests/test_simulation.py): host i of
a cluster is prefix+i; a torus node id is x + X*y + X*Y*z (first dimension fastest, rankmap's
default torus order); ranks on one host talk through its loopback link, which does not
saturate (a FATPIPE); SPLITDUPLEX links give each direction the full bandwidth; the
`limiter_link` caps everything a node's router passes (its own traffic both ways and
transit), which is how rankmap models NIC injection limits (an Angara adapter is the
router). A cluster has one core count: nodes with fewer cores (Angara-K1's 8-core nodes)
get the larger count in SimGrid and are never given more ranks than their real cores by
rankmap's machine description."""
from __future__ import annotations

import json
import math
import re
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from rankmap.mapper import hostnames
from rankmap.mapper.network import parse_dims, simgrid_fat_tree
from rankmap.mapper.predict import Network
from rankmap.profiler.errors import UserError


@dataclass
class Platform:
    name: str
    kind: str                     # "torus", "fat-tree" or "dragonfly"
    dims: tuple = ()              # torus dimensions
    fat_tree: str = ""            # SimGrid FAT_TREE parameters "levels;down;up;count"
    dragonfly: str = ""           # rankmap's GxAxP[:global=L] (groups, routers per group, nodes per router)
    nodes: int = 0
    cores: int = 12               # cores of the SimGrid hosts (the largest node)
    node_kinds: list = field(default_factory=list)  # [(first, last, hwloc synthetic spec)]
    link_bw: float = 6.0          # GB/s per direction of each network link
    link_lat: float = 0.5         # us per link
    loopback_bw: float = 10.0     # GB/s between two ranks of one node
    loopback_lat: float = 0.2     # us
    nic_bw: float | None = 16.0   # GB/s through each node's router (None: unlimited)
    core_speed: float = 1.0       # Gflop/s per core
    network_scale: float = 1.0    # network speed relative to the nominal one (bw x s, lat / s)
    prefix: str = "n"

    # the network as simulated: nominal parameters times the scale
    @property
    def eff_link_bw(self) -> float:
        return self.link_bw * self.network_scale

    @property
    def eff_link_lat(self) -> float:
        return self.link_lat / self.network_scale

    @property
    def eff_nic_bw(self) -> float | None:
        return None if self.nic_bw is None else self.nic_bw * self.network_scale

    @property
    def hosts(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(self.nodes)]

    def node_spec(self, i: int) -> str:
        for first, last, spec in self.node_kinds:
            if first <= i <= last:
                return spec
        return f"pack:1 core:{self.cores}"

    def node_cores(self, i: int) -> int:
        n = 1
        for tok in self.node_spec(i).split():
            n *= int(tok.split(":")[1])
        return n

    def network(self) -> Network:
        """The network as `rankmap predict` models it (SI units)."""
        nic = None if self.eff_nic_bw is None else self.eff_nic_bw * 1e9
        return Network(link_bw=self.eff_link_bw * 1e9, link_lat=self.eff_link_lat * 1e-6,
                       loop_bw=self.loopback_bw * 1e9, loop_lat=self.loopback_lat * 1e-6, nic_bw=nic,
                       core_speed=self.core_speed * 1e9)

    @classmethod
    def from_section(cls, sg: dict, where: str) -> "Platform":
        """From the "simgrid" section of a machine.json."""
        from rankmap.profiler import validate
        sg = dict(validate.expect(sg, dict, where, "simgrid"))
        unknown = sorted(set(sg) - {f for f in cls.__dataclass_fields__})
        if unknown:
            raise UserError(f"{where}: simgrid.{unknown[0]}: not a platform parameter")
        for k in ("name", "kind", "fat_tree", "dragonfly", "prefix"):
            if k in sg:
                validate.expect(sg[k], str, where, f"simgrid.{k}")
        for k, hi in (("nodes", validate.MAX_NODES), ("cores", validate.MAX_CORES_PER_NODE)):
            if k in sg:
                validate.integer(validate.expect(sg[k], int, where, f"simgrid.{k}"), where, f"simgrid.{k}", 1, hi)
        dims = validate.expect(sg.get("dims") or [], list, where, "simgrid.dims")
        sg["dims"] = tuple(validate.integer(validate.expect(d, int, where, "simgrid.dims"), where, "simgrid.dims", 1)
                           for d in dims)
        kinds = validate.expect(sg.get("node_kinds") or [], list, where, "simgrid.node_kinds")
        for k in kinds:
            if not (isinstance(k, list) and len(k) == 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                                                for x in k[:2]) and isinstance(k[2], str)):
                raise UserError(f"{where}: simgrid.node_kinds: each entry must be [first, last, \"pack:P core:C\"], "
                                f"not {validate.show(k)}")
        sg["node_kinds"] = [tuple(k) for k in kinds]
        for k in ("link_bw", "link_lat", "loopback_bw", "loopback_lat", "core_speed", "network_scale", "nic_bw"):
            if k in sg and not (k == "nic_bw" and sg[k] is None):
                sg[k] = validate.number(sg[k], where, f"simgrid.{k}",
                                        0.0 if k.endswith("_lat") else validate.MIN_BANDWIDTH, 1e9)
        try:
            p = cls(**sg)
        except TypeError as e:
            raise UserError(f"{where}: bad 'simgrid' section ({e})") from None
        with validate.prefixed(where):
            check(p)
        return p


# The clusters of the Angara paper (Khalilov & Timofeev) and a fat tree for comparison.
# Link figures: an Angara link ~6 GB/s and ~0.5 us per hop as SMPI sees them (see
# ../shared/notes/smpi.md); nodes run 1 Gflop/s per core in the simulation's unit.
PRESETS = {
    "angara-k1": Platform(name="angara-k1", kind="torus", dims=(3, 3, 4), nodes=36, cores=12,
                          node_kinds=[(0, 23, "pack:2 core:6"), (24, 35, "pack:1 core:8")]),
    "desmos": Platform(name="desmos", kind="torus", dims=(4, 2, 2, 2), nodes=32, cores=6,
                       node_kinds=[(0, 31, "pack:1 core:6")]),
    # 4 leaf switches of 8 nodes, 2 uplinks each (one to each of 2 spines): 4:1 oversubscribed
    "fat-tree": Platform(name="fat-tree", kind="fat-tree", fat_tree="2;8,4;1,2;1,1", nodes=32, cores=12,
                         node_kinds=[(0, 31, "pack:2 core:6")]),
    # 4 groups of 4 routers, 2 nodes per router; one global link between each pair of groups
    "dragonfly": Platform(name="dragonfly", kind="dragonfly", dragonfly="4x4x2", nodes=32, cores=12,
                          node_kinds=[(0, 31, "pack:2 core:6")], nic_bw=None),
}


def preset(name: str) -> Platform:
    if name not in PRESETS:
        raise UserError(f"unknown platform {name!r}; known: {', '.join(PRESETS)} (or none with --torus / --fat-tree / "
                        "--dragonfly)")
    return replace(PRESETS[name])


def fat_tree_leaves(params: str) -> tuple[int, ...]:
    """Nodes per group from the top, as rankmap's switch tree: SimGrid "2;8,4;1,2;1,1" has
    8 nodes under each leaf and 4 leaves under the top, i.e. a 4x8 switch tree."""
    try:
        return tuple(simgrid_fat_tree(params)[0])
    except UserError as e:
        raise UserError(f"--fat-tree: {e}") from None


def fat_tree_switches(params: str) -> int:
    """How many switches SimGrid's fat tree "levels;down,...;up,...;count,..." has: level l
    (leaves first) holds prod(down above l) x prod(up up to l)."""
    parts = params.split(";")
    down = [int(x) for x in parts[1].split(",")]
    up = [int(x) for x in parts[2].split(",")]
    return sum(math.prod(down[lv + 1:]) * math.prod(up[:lv + 1]) for lv in range(len(down)))


def dragonfly_shape(text: str) -> tuple[tuple, int]:
    """--dragonfly GxAxP[:global=L] as ((G, A, P), L), checked against SimGrid's layout."""
    from rankmap.mapper.network import parse_spec
    try:
        spec = parse_spec(f"dragonfly:{text}")
    except UserError as e:        # named as the option given (--dragonfly), not --network 'dragonfly:...'
        msg, head = str(e), f"--network {f'dragonfly:{text}'!r}: "
        raise UserError(msg[len(head):] if msg.startswith(head) else msg) from None
    if spec.get("routing") != "minimal" or spec.get("local", 1) != 1:
        raise UserError("a SimGrid dragonfly routes minimally with one local link per router pair: give "
                        "--dragonfly GxAxP[:global=L]")
    G, A, P = parse_dims(spec["shape"], "dragonfly")
    if G > A:
        raise UserError(f"SimGrid's dragonfly puts the link to group j on router j of each group: {G} groups "
                        f"need at least {G} routers per group, not {A}")
    return (G, A, P), int(spec.get("global") or 1)


def simgrid_dragonfly(text: str) -> str:
    (G, A, P), links = dragonfly_shape(text)
    return f"{G},{links};1,1;{A},1;{P}"


def custom(kind_dims: str | None, fat_tree: str | None, cores: int | None, base: Platform | None,
           dragonfly: str | None = None) -> Platform:
    """A preset changed by --torus/--fat-tree/--dragonfly/--cores (named after both: an
    'angara-k1' of 2x2 nodes and 8 cores was not Angara-K1), or a new cluster from them."""
    p = base or Platform(name="custom", kind="torus")
    if sum(bool(x) for x in (kind_dims, fat_tree, dragonfly)) > 1:
        raise UserError("choose one network: --torus, --fat-tree or --dragonfly")
    if cores is not None:
        if cores < 1:
            raise UserError("--cores must be >= 1")
        p = replace(p, cores=cores, node_kinds=[], name=f"{p.name}-cores-{cores}" if base else p.name)
    if kind_dims:
        dims = parse_dims(kind_dims)
        p = replace(p, kind="torus", dims=dims, fat_tree="", nodes=math.prod(dims),
                    name=f"{p.name}-torus-{'x'.join(map(str, dims))}" if base else f"torus-{'x'.join(map(str, dims))}")
        p.node_kinds = [k for k in p.node_kinds if k[1] < p.nodes]
    elif fat_tree:
        leaves = fat_tree_leaves(fat_tree)
        p = replace(p, kind="fat-tree", fat_tree=fat_tree, dims=(), dragonfly="", nodes=math.prod(leaves),
                    name=f"{p.name}-fat-tree-custom" if base else "fat-tree-custom")
        p.node_kinds = [k for k in p.node_kinds if k[1] < p.nodes]
    elif dragonfly:
        from rankmap.profiler import validate
        with validate.prefixed(f"--dragonfly {dragonfly!r}"):
            (G, A, P), _ = dragonfly_shape(dragonfly)
        p = replace(p, kind="dragonfly", dragonfly=dragonfly, dims=(), fat_tree="", nodes=G * A * P,
                    name=f"{p.name}-dragonfly-{dragonfly}" if base else "dragonfly-custom")
        if base is None:
            p.nic_bw = None           # SimGrid would cap every router too (see above)
        p.node_kinds = [k for k in p.node_kinds if k[1] < p.nodes]
    elif base is None:
        raise UserError("give a platform name (angara-k1, desmos, fat-tree, dragonfly) or --torus/--fat-tree/--dragonfly")
    if not p.node_kinds:
        p.node_kinds = [(0, p.nodes - 1, f"pack:1 core:{p.cores}")]
    if not 1 <= p.nodes <= MAX_NODES:
        raise UserError(f"the simulated cluster would have {p.nodes} nodes (--torus, --fat-tree or --dragonfly); a "
                        f"platform holds 1 to {MAX_NODES}")
    if max(p.node_cores(i) for i in range(p.nodes)) > p.cores:
        raise UserError("a node has more cores than the SimGrid hosts")
    return p


MAX_NODES = 1 << 16     # hosts of a simulated cluster (SimGrid and its XML stay practical below this)


def check(p: Platform) -> None:
    if not 1 <= p.nodes <= MAX_NODES:
        raise UserError(f"the simulated cluster has {p.nodes} nodes; a platform holds 1 to {MAX_NODES}")
    for what, v in (("link bandwidth", p.link_bw), ("link latency", p.link_lat), ("loopback bandwidth", p.loopback_bw),
                    ("loopback latency", p.loopback_lat), ("core speed", p.core_speed),
                    ("network scale", p.network_scale)):
        if not (isinstance(v, (int, float)) and math.isfinite(v)) or v < 0 or (v == 0 and "latency" not in what):
            raise UserError(f"{what} must be a positive number, not {v!r}")
    if p.nic_bw is not None and not (math.isfinite(p.nic_bw) and p.nic_bw > 0):
        raise UserError(f"NIC bandwidth must be positive (or 'none'), not {p.nic_bw!r}")
    if p.kind == "fat-tree" and p.nic_bw is not None and fat_tree_switches(p.fat_tree) > p.nodes:
        # SimGrid 3.32 names the switches' limiter links after ids that count down from 2N-1 and
        # so meet the nodes' own (0..N-1): "Link ..._limiter declared several times", an abort
        raise UserError(f"SimGrid cannot load the fat tree {p.fat_tree!r} with a NIC cap: its "
                        f"{fat_tree_switches(p.fat_tree)} switches outnumber its {p.nodes} nodes, and SimGrid then "
                        "gives two limiter links one name; use --nic-bw none, or fewer uplinks per switch")
    from rankmap.profiler import validate
    for what, v in (("link bandwidth", p.eff_link_bw), ("NIC bandwidth", p.eff_nic_bw)):
        # each speed is bounded, and so is what the scale makes of it (what SimGrid simulates)
        if v is not None and not validate.MIN_BANDWIDTH <= v <= 1e9:
            raise UserError(f"the {what} times the network scale is {v:g} GB/s; it must be within "
                            f"{validate.MIN_BANDWIDTH:g}-1e9 GB/s (lower --network-scale or the bandwidth)")


def _cluster_xml(p: Platform, ideal: bool, speed: str | None = None) -> str:
    if ideal:   # zero cost communication: same hosts and routes, nothing takes time
        bw, lat, lbw, llat, nic = "1e6TBps", "0us", "1e6TBps", "0us", None
    else:
        bw, lat = f"{p.eff_link_bw:g}GBps", f"{p.eff_link_lat:g}us"
        lbw, llat = f"{p.loopback_bw:g}GBps", f"{p.loopback_lat:g}us"
        nic = None if p.eff_nic_bw is None else f"{p.eff_nic_bw:g}GBps"
    # dimensions of one node have no links: SimGrid 3.32 declares the self-link of each such
    # dimension under one name and aborts when there are two ("link_from_0_to_0_UP declared
    # several times"); without them the node ids (first dimension fastest) are the same
    dims = [d for d in p.dims if d > 1] or [1]
    topo = (f'topology="TORUS" topo_parameters="{",".join(map(str, dims))}"' if p.kind == "torus"
            else f'topology="DRAGONFLY" topo_parameters="{simgrid_dragonfly(p.dragonfly)}"' if p.kind == "dragonfly"
            else f'topology="FAT_TREE" topo_parameters="{p.fat_tree}"')
    lim = f' limiter_link="{nic}"' if nic else ""
    return (f'  <cluster id="{p.name}" prefix="{p.prefix}" suffix="" radical="0-{p.nodes - 1}" '
            f'speed="{speed or f"{p.core_speed:g}Gf"}" core="{p.cores}"\n'
            f'           bw="{bw}" lat="{lat}" sharing_policy="SPLITDUPLEX" {topo}\n'
            f'           loopback_bw="{lbw}" loopback_lat="{llat}"{lim}/>\n')


VARIANTS = {"platform.xml": "", "platform-ideal.xml": " (a network that costs nothing)",
            "platform-nocompute.xml": " (compute that costs nothing)"}


def platform_xml(p: Platform, variant: str = "platform.xml") -> str:
    ideal = variant == "platform-ideal.xml"
    speed = "1e12Gf" if variant == "platform-nocompute.xml" else None
    return ("<?xml version='1.0'?>\n"
            '<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">\n'
            f"<!-- rankmap platform {p.name}{VARIANTS[variant]}: written by `rankmap platform` -->\n"
            '<platform version="4.1">\n' + _cluster_xml(p, ideal, speed) + "</platform>\n")


def sim_spec(p: Platform, i: int) -> str:
    """Node i's internals as the simulation sees them: its cores, with no sockets (a SimGrid
    host has one loopback link for all its cores, so socket placement cannot matter there)."""
    return f"pack:1 core:{p.node_cores(i)}"


def machine_spec(p: Platform) -> dict:
    """rankmap's machine description of the platform (what `--machine DIR` rebuilds)."""
    hosts = p.hosts
    by_spec: dict[str, list[str]] = {}
    for i, h in enumerate(hosts):
        by_spec.setdefault(sim_spec(p, i), []).append(h)
    topo = ([next(iter(by_spec))] if len(by_spec) == 1 else
            [f"{hostnames.compress(hs)}={spec}" for spec, hs in by_spec.items()])
    spec = {"hosts": hosts, "node_topology": topo, "torus": None, "mesh": None, "coords": None,
            "switch_tree": None, "level_costs": None, "hop_cost": None, "ranks_per_node": None, "oversubscribe": 1}
    if p.kind == "torus":
        spec["torus"] = "x".join(map(str, p.dims))
        coords = {}
        for i, h in enumerate(hosts):
            c, rest = [], i
            for d in p.dims:
                c.append(rest % d)
                rest //= d
            coords[h] = c
        spec["coords"] = coords
    elif p.kind == "dragonfly":
        (G, A, P), links = dragonfly_shape(p.dragonfly)
        spec["network"] = f"dragonfly:{G}x{A}x{P}" + (f":global={links}" if links != 1 else "")
        spec["coords"] = {h: [i // (A * P), (i // P) % A, i % P] for i, h in enumerate(hosts)}   # SimGrid's ids
    else:
        spec["network"] = f"fat-tree:{p.fat_tree}"             # the same leaves and uplinks as SimGrid's
        spec["coords"] = {h: [i] for i, h in enumerate(hosts)}
    d = asdict(p)
    d["dims"] = list(p.dims)
    d["node_kinds"] = [list(k) for k in p.node_kinds]
    spec["simgrid"] = d
    return spec


def write(p: Platform, out, force: bool = False) -> Path:
    """The platform directory, written next to `out` and renamed into it; an existing one is
    replaced only when it is a platform (and with force). `out`: a path or a checked output
    (rankmap.profiler.outputs.Target)."""
    from rankmap.profiler import outputs
    check(p)
    target = out if isinstance(out, outputs.Target) else outputs.target_dir(out, "--out", "platform", force)

    def fill(tmp: Path) -> None:
        for v in VARIANTS:
            (tmp / v).write_text(platform_xml(p, v))
        (tmp / "machine.json").write_text(json.dumps(machine_spec(p), indent=2, allow_nan=False) + "\n")
        (tmp / SUMS).write_text("".join(f"{_sha256(tmp / f)}  {f}\n" for f in (*VARIANTS, "machine.json")))
    return outputs.write_dir(target, fill)


# The speeds are in two places: platform*.xml (what SimGrid simulates) and machine.json (what
# predict and the mapper's network model read). A hand edit of one (a weaker link in the XML)
# would make them disagree without a word; the files' sums (`sha256sum -c` reads them) say so.
SUMS = "platform.sha256"


def _sha256(f: Path) -> str:
    import hashlib
    return hashlib.sha256(f.read_bytes()).hexdigest()


def _check_sums(d: Path) -> None:
    sums = d / SUMS
    if not sums.is_file():
        return                       # written before the sums were: nothing to compare
    from rankmap.profiler import validate
    way_out = f"write the platform again (rankmap platform ...), or delete {SUMS} to use the files as they are"
    want = (*VARIANTS, "machine.json")
    seen: dict[str, str] = {}
    # A sums file that lost a line or was garbled must not switch the check off: every file
    # rankmap wrote is listed, in sha256sum's format, or the directory is refused.
    for no, ln in enumerate(validate.read_text(sums, "platform checksums").splitlines(), 1):
        if not ln.strip():
            continue
        parts = ln.split(None, 1)
        name = parts[1].strip().lstrip("*") if len(parts) == 2 else ""
        if (len(parts) != 2 or name not in want or name in seen
                or not re.fullmatch(r"[0-9a-fA-F]{64}", parts[0])):
            raise UserError(f"{sums}:{no}: not a line `rankmap platform` wrote (sha256 and one of "
                            f"{', '.join(want)}, once each); {way_out}")
        seen[name] = parts[0].lower()
    missing = [f for f in want if f not in seen]
    if missing:
        raise UserError(f"{sums}: does not list {', '.join(missing)}, so the platform cannot be checked; {way_out}")
    for name, digest in seen.items():
        f = d / name
        if not f.is_file():
            raise UserError(f"{f}: missing (listed in {SUMS}); {way_out}")
        if _sha256(f) != digest:
            raise UserError(f"{f}: changed since `rankmap platform` wrote it, so the speeds SimGrid simulates "
                            "(platform*.xml) and those predict and the mapper read (machine.json) may differ; "
                            "write the platform again with the speeds wanted (rankmap platform --link-bw ..., "
                            f"--network-scale ...), or delete {SUMS} to use the files as they are")


def load(path: str | Path) -> tuple[Platform, Path]:
    """A platform directory (or its machine.json) back as a Platform."""
    d = Path(path)
    if d.is_file():
        if d.name != "machine.json":
            raise UserError(f"--platform {path}: a file; give a platform directory (write one with `rankmap platform`)")
        d = d.parent
    mj = d / "machine.json"
    from rankmap.profiler import validate
    if not d.exists():
        raise UserError(f"--platform {d}: no such directory (write a platform with `rankmap platform --out {d}`)")
    if not d.is_dir() or not mj.is_file():
        raise UserError(f"--platform {d}: not a platform directory (no machine.json with a 'simgrid' section; "
                        "write one with `rankmap platform`)")
    spec = validate.read_json(mj, "machine description (machine.json)")
    if not isinstance(spec, dict) or not isinstance(spec.get("simgrid"), dict):
        raise UserError(f"--platform {d}: not a platform directory (no machine.json with a 'simgrid' section; "
                        "write one with `rankmap platform`)")
    sg = dict(spec["simgrid"])
    if not (d / "platform.xml").exists():
        raise UserError(f"{d}: platform.xml is missing")
    _check_sums(d)
    return Platform.from_section(sg, str(mj)), d


def network_for(spec: dict, probe: str | None = None, **given) -> Network:
    """The network `rankmap predict` uses: measured by `rankmap probe` (a file), else the
    simulated platform a machine.json came from, else the speeds given; any speed given
    (link_bw, link_lat, loopback_bw, loopback_lat, nic_bw in GB/s and us) overrides."""
    if probe:
        net = Network.from_probe(probe)
    elif spec.get("simgrid"):
        net = Platform.from_section(spec["simgrid"], getattr(spec, "origin", None) or "machine.json").network()
    else:
        missing = [k for k in ("link_bw", "link_lat", "loopback_bw", "loopback_lat") if given.get(k) is None]
        if missing:
            raise UserError("the network's speed is unknown: give --platform DIR, --probe PROBE.json, or "
                            + ", ".join("--" + k.replace("_", "-") for k in missing))
        net = Network(link_bw=0, link_lat=0, loop_bw=0, loop_lat=0, nic_bw=None)
    scale = {"link_bw": 1e9, "link_lat": 1e-6, "loopback_bw": 1e9, "loopback_lat": 1e-6, "nic_bw": 1e9}
    attr = {"link_bw": "link_bw", "link_lat": "link_lat", "loopback_bw": "loop_bw", "loopback_lat": "loop_lat",
            "nic_bw": "nic_bw"}
    for k, v in given.items():
        if v is None:
            continue
        latency = k.endswith("_lat")
        if not math.isfinite(v) or v < 0 or (v == 0 and not latency):
            raise UserError(f"--{k.replace('_', '-')} must be a finite {'non-negative' if latency else 'positive'} "
                            "number")
        setattr(net, attr[k], v * scale[k])
    return net


def block_allocation(p: Platform, nranks: int) -> list[str]:
    """What Slurm's block distribution gives a job of nranks on the idle cluster: the first
    nodes in node order, each filled to its cores (the simulated 'Slurm default')."""
    hosts, left = [], nranks
    for i in range(p.nodes):
        if left <= 0:
            break
        take = min(left, p.node_cores(i))
        hosts += [f"{p.prefix}{i}"] * take
        left -= take
    if left > 0:
        total = sum(p.node_cores(i) for i in range(p.nodes))
        raise UserError(f"{nranks} ranks do not fit the {total} cores of {p.name}")
    return hosts


def describe(p: Platform) -> str:
    if p.kind == "torus":
        net = f"{'x'.join(map(str, p.dims))} torus"
    elif p.kind == "dragonfly":
        (G, A, P), links = dragonfly_shape(p.dragonfly)
        net = f"dragonfly of {G} groups x {A} routers x {P} nodes ({links} link(s) per group pair)"
    else:
        from rankmap.mapper.network import from_spec
        net = from_spec(f"fat-tree:{p.fat_tree}", p.hosts).describe()
    kinds = ", ".join(f"{hostnames.compress([f'{p.prefix}{i}' for i in range(a, b + 1)])} {s}"
                      for a, b, s in p.node_kinds)
    nic = "unlimited" if p.eff_nic_bw is None else f"{p.eff_nic_bw:g} GB/s"
    return (f"{p.name}: {p.nodes} nodes ({kinds}), {net}; links {p.eff_link_bw:g} GB/s {p.eff_link_lat:g} us, "
            f"loopback {p.loopback_bw:g} GB/s {p.loopback_lat:g} us, NIC {nic}, {p.core_speed:g} Gflop/s per core"
            + (f" (network x{p.network_scale:g})" if p.network_scale != 1 else ""))
