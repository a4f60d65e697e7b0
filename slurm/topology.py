"""The network as the site describes it to Slurm: `--network slurm` asks
`scontrol show topology` (topology/tree: switches; topology/block: blocks and their
aggregates), `--network slurm:FILE` reads a topology.conf. Either way the answer is, for
each host, its groups from the top down (switches, or aggregated blocks then the base
block) — a description the mapper turns into a tree (rankmap.mapper.network.SwitchTree
.from_paths) without ever running scontrol itself.

topology/tree: `SwitchName=s0 Nodes=n[1-2]` (a leaf) and `SwitchName=s2 Switches=s[0-1]`;
scontrol adds `Level=` and lists under an upper switch every node below it. topology/block
(Slurm 23.11+): `BlockName=b1 Nodes=n[1-4]` and `BlockSizes=4,16` (the base block size in
nodes, then the aggregate sizes: 2^k consecutive base blocks in the order they are
defined; by default 1, 2, 4 and 8 blocks); scontrol prints `BlockName=... BlockSize=`
for base blocks and `AggregatedBlock=...` for aggregates."""
from __future__ import annotations

import math
from pathlib import Path

from rankmap.mapper import hostnames
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError


# the keys of a topology.conf (both plugins) and of `scontrol show topology`'s lines, which a
# file saved from it holds; Slurm refuses a topology.conf with any other key
KEYS = {"switchname", "switches", "nodes", "linkspeed", "level", "blockname", "blocksizes", "blockindex",
        "blocksize", "aggregatedblock"}


def _records(text: str, where: str | None = None) -> list[dict]:
    """Key=value records, one per line; keys are case-insensitive (Slurm's parser), # starts
    a comment, a line ending in a backslash goes on on the next one (Slurm's config files).
    Each record keeps the number of its (first) line as "__line__". where: a topology.conf's
    name, whose lines are checked as Slurm checks them: a misspelt key (`SwtchName=`,
    `BlockSize=4`), a word without '=' (`SwitchName s0 ...`) or a key given twice on a line
    was skipped without a word (the line, or its first Nodes=, dropped)."""
    out = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        lineno, line = i + 1, lines[i].split("#", 1)[0].rstrip()
        i += 1
        while line.endswith("\\") and i < len(lines):
            line = line[:-1] + " " + lines[i].split("#", 1)[0].rstrip()
            i += 1
        line = line.rstrip("\\").strip()
        if not line:
            continue
        rec = {}
        for tok in line.split():
            k, eq, v = tok.partition("=")
            if eq:
                if where is not None and k.lower() not in KEYS:
                    raise UserError(f"{where}:{lineno}: unknown key {k[:40]!r} (Slurm refuses it too); a "
                                    "topology.conf has SwitchName=, Switches=, Nodes=, LinkSpeed= (topology/tree) "
                                    "or BlockName=, Nodes=, BlockSizes= (topology/block)")
                if where is not None and k.lower() in rec:
                    raise UserError(f"{where}:{lineno}: {k}= given twice on one line (only one would count); "
                                    "give each switch or block one Nodes= (Nodes=n[1-2],n[5-6])")
                rec[k.lower()] = v
            elif rec or where is not None:
                # 'Nodes=n1, n2': a blank inside a value (Slurm's parser refuses it too); in a file,
                # a word before the first Key=Value too ('SwitchName s0 Switches=...')
                raise _Stray(lineno, tok, not rec)
        if rec:
            rec["__line__"] = lineno
            out.append(rec)
    return out


class _Stray(Exception):
    """A word that is no Key=Value on a line of records (line number, the word)."""


def _at(where: str, r: dict) -> str:
    """FILE:LINE of a record (scontrol's answer has no file: its line number all the same)."""
    return f"{where}:{r['__line__']}" if "__line__" in r else where


def _expand(hostlist: str, where: str) -> list[str]:
    try:
        return hostnames.expand(hostlist)
    except UserError as e:
        raise UserError(f"{where}: {e}") from None


MAX_LEVELS = 64      # switch levels above a node (real trees have 2-4)


def _tree_paths(recs: list[dict], where: str) -> tuple[dict, str]:
    """Each host's switches, top first. A switch's nodes are its own and those of the
    switches below it; its level is Slurm's (scontrol) or one above its highest child."""
    sw = {}
    for r in recs:
        name = r["switchname"]
        at = _at(where, r)
        if not name:
            raise UserError(f"{at}: SwitchName= names no switch (SwitchName=s1 Nodes=n[1-4], or Switches=s[1-2])")
        if name in sw:
            raise UserError(f"{at}: switch {name} is defined twice (first on line {sw[name]['line']})")
        if not r.get("nodes") and not r.get("switches"):
            raise UserError(f"{at}: switch {name} has neither Nodes= nor Switches= (Slurm refuses it too)")
        if r.get("nodes") and r.get("switches") and not r.get("level"):
            # scontrol's own lines list every node below a switch (with Level=); a topology.conf
            # switch is a leaf (Nodes=) or above switches (Switches=), never both
            raise UserError(f"{at}: switch {name} has both Nodes= and Switches= (Slurm refuses it too): hang the "
                            "nodes under a leaf switch of their own and list that switch in Switches=")
        sw[name] = {"nodes": set(_expand(r["nodes"], at)) if r.get("nodes") else set(),
                    "children": _expand(r["switches"], at) if r.get("switches") else [],
                    "level": int(r["level"]) if r.get("level", "").isdigit() else None,
                    "line": r.get("__line__")}
    leaf_of: dict = {}
    for name, s in sw.items():                   # Slurm: a node sits under one leaf switch
        if s["children"]:
            continue
        for h in s["nodes"]:
            other = leaf_of.setdefault(h, name)
            if other != name:
                a, b = sorted((other, name), key=lambda n: sw[n]["line"] or 0)
                raise UserError(f"{_at(where, {'__line__': sw[b]['line']} if sw[b]['line'] else {})}: node {h} is "
                                f"under leaf switches {a} and {b}; a node hangs under one leaf switch (list it in "
                                "one of them)")
    for name, s in sw.items():
        for c in s["children"]:
            if c not in sw:
                raise UserError(f"{_at(where, {'__line__': s['line']} if s['line'] else {})}: switch {name} names "
                                f"an undefined child switch {c}")
    parent: dict = {}
    for name, s in sw.items():                   # a tree: each switch under one switch
        for c in s["children"]:
            other = parent.setdefault(c, name)
            if other != name:
                raise UserError(f"{_at(where, {'__line__': s['line']} if s['line'] else {})}: switch {c} is listed "
                                f"under switches {other} and {name}; in a tree each switch hangs under one (Slurm's "
                                "topology/tree): list it in one of them")

    def settle(name, seen=()):
        s = sw[name]
        if name in seen:
            raise UserError(f"{where}: switch {name} is its own descendant")
        if s.get("done"):
            return s
        for c in s["children"]:
            cs = settle(c, seen + (name,))
            s["nodes"] |= cs["nodes"]
        if s["level"] is None:
            s["level"] = 1 + max((sw[c]["level"] for c in s["children"]), default=-1)
        s["done"] = True
        return s

    try:
        for name in sw:
            settle(name)
    except RecursionError:
        raise UserError(f"{where}: switches nested too deeply (more than a few hundred levels)") from None
    for name, s in sw.items():                   # Level= (scontrol's) must put a switch above its children
        low = next((c for c in s["children"] if sw[c]["level"] >= s["level"]), None)
        if low is not None:
            raise UserError(f"{_at(where, {'__line__': s['line']} if s['line'] else {})}: switch {name} (Level="
                            f"{s['level']}) is not above its child switch {low} (Level={sw[low]['level']})")
    paths: dict[str, list] = {}
    for name in sorted(sw, key=lambda n: (-sw[n]["level"], n)):
        for h in sw[name]["nodes"]:
            paths.setdefault(h, []).append(name)
    levels = max((len(p) for p in paths.values()), default=0)
    if levels > MAX_LEVELS:
        # (the hop tables are 8-bit: past 127 levels two nodes under one leaf read 514 links apart)
        raise UserError(f"{where}: {levels} levels of switches above a node; rankmap reads at most {MAX_LEVELS}")
    leaves = sum(1 for s in sw.values() if not s["children"])
    what = f"{len(sw)} switch(es) on {levels} level(s), {leaves} leaf switch(es)"
    tops = sorted(n for n in sw if n not in parent)
    if len(tops) > 1:
        # Slurm warns "no switch can reach all nodes" and schedules no job across the trees
        shown = ", ".join(tops[:4]) + (", ..." if len(tops) > 4 else "")
        what += (f"; {len(tops)} separate trees (no switch above {shown}: Slurm runs no job across them), "
                 "mapped as if one switch joined them")
    return paths, what


def _block_paths(recs: list[dict], where: str) -> tuple[dict, str]:
    """Each host's aggregated blocks (largest first), then its base block."""
    sized = [r for r in recs if "blocksizes" in r]
    if len(sized) > 1:      # the first was used and a later one, meant to change it, ignored
        raise UserError(f"{_at(where, sized[1])}: BlockSizes= given again (first on line "
                        f"{sized[0].get('__line__', '?')}); a topology.conf has one")
    sizes_text = sized[0]["blocksizes"] if sized else None
    blocks = [r for r in recs if "blockname" in r or "aggregatedblock" in r]
    if not blocks:
        raise UserError(f"{where}: no BlockName lines")
    from_scontrol = any("blocksize" in r or "aggregatedblock" in r for r in blocks)
    paths: dict[str, list] = {}
    if from_scontrol:
        # scontrol lists every block (base and aggregated) with its nodes and size
        sized = []
        for r in blocks:
            name = r.get("aggregatedblock") or r["blockname"]
            nodes = _expand(r.get("nodes", ""), where) if r.get("nodes") else []
            size = int(r["blocksize"]) if r.get("blocksize", "").isdigit() else len(nodes)
            sized.append((-size, "aggregatedblock" not in r, name, nodes))
        for _, _, name, nodes in sorted(sized, key=lambda x: (x[0], x[1])):
            for h in nodes:
                paths.setdefault(h, []).append(name)
        nbase = sum(1 for r in blocks if "aggregatedblock" not in r)
        return paths, f"{nbase} block(s) and {len(blocks) - nbase} aggregate(s)"
    seen: dict = {}
    for r in blocks:
        name = r.get("blockname", "")
        if not name:
            raise UserError(f"{_at(where, r)}: BlockName= names no block (BlockName=b1 Nodes=n[1-4])")
        if name in seen:
            raise UserError(f"{_at(where, r)}: block {name} is defined twice (first on line {seen[name]})")
        seen[name] = r.get("__line__")
    empty = next((r for r in blocks if not r.get("nodes")), None)
    if empty is not None:
        # Slurm refuses it too ("Block configuration (b2) lacks children"); dropping it paired
        # the blocks around it as one aggregate
        raise UserError(f"{_at(where, empty)}: block {empty['blockname']} has no Nodes= (Slurm refuses it too): give "
                        "its nodes, or leave the line out")
    base = [(r["blockname"], _expand(r["nodes"], _at(where, r))) for r in blocks]
    block_of: dict = {}
    for name, nodes in base:
        for h in nodes:
            other = block_of.setdefault(h, name)
            if other != name:
                raise UserError(f"{_at(where, {'__line__': seen[name]} if seen[name] else {})}: node {h} is in "
                                f"blocks {other} and {name}; a node belongs to one base block")
    if sizes_text:
        try:
            sizes = [int(x) for x in sizes_text.split(",") if x.strip()]
        except ValueError:
            raise UserError(f"{where}: BlockSizes={sizes_text} is not a list of numbers") from None
        if not sizes or min(sizes) < 1 or any(s % sizes[0] or not math.log2(s // sizes[0]).is_integer() for s in sizes):
            raise UserError(f"{where}: BlockSizes={sizes_text}: each size must be the base size times a power of two")
        factors = sorted({s // sizes[0] for s in sizes})
    else:
        factors = [1, 2, 4, 8]                      # Slurm's default: 1, 2, 4 and 8 base blocks
    # the base block's node count: BlockSizes' first, else the first block's. topology.conf(5):
    # "Each block must have at least the planning base block size count of nodes" (its own
    # example: blocks of 32 nodes, BlockSizes=30,120); one of fewer is refused (by Slurm too)
    want = sizes[0] if sizes_text else len(base[0][1])
    odd = next(((name, nodes) for name, nodes in base if len(nodes) < want), None)
    if odd is not None:
        r = next(x for x in blocks if x["blockname"] == odd[0])
        said = f"BlockSizes={sizes_text} makes a base block {want} node(s)" if sizes_text else \
            f"block {base[0][0]} has {want}"
        raise UserError(f"{_at(where, r)}: block {odd[0]} has {len(odd[1])} node(s) and {said}; topology/block's base "
                        "blocks have at least the base block size of nodes (Slurm refuses fewer too)")
    factors = [f for f in factors if f > 1 and f < 2 * len(base)]
    for i, (name, nodes) in enumerate(base):
        aggs = [f"{'+'.join(b[0] for b in base[(i // f) * f:(i // f + 1) * f])}" for f in reversed(factors)]
        for h in nodes:
            paths.setdefault(h, []).extend(aggs + [name])
    return paths, f"{len(base)} block(s)" + (f", aggregates of {', '.join(map(str, factors))}" if factors else "")


def parse(text: str, where: str, conf: bool = False) -> dict:
    """scontrol's answer or a topology.conf (conf: its lines checked as Slurm checks them) as a
    network description: {"kind": "switches" | "blocks", "label": ..., "paths": {host: [group, ...]}}."""
    try:
        recs = _records(text)
        if conf and any({"switchname", "blockname", "blocksizes"} & set(r) for r in recs):
            recs = _records(text, where)      # (a file of no switch or block is named below as such)
    except _Stray as e:
        line, tok, leading = e.args
        if leading:
            raise UserError(f"{where}:{line}: {tok[:40]!r} is not Key=Value (a missing '='? a line is Key=Value "
                            "words: SwitchName=s1 Nodes=n[1-2])") from None
        raise UserError(f"{where}:{line}: {tok[:40]!r} is not Key=Value (a blank inside a value? write "
                        "Nodes=n1,n2 or Nodes=n[1-2], without blanks)") from None
    if conf and any({"switchname", "blockname", "blocksizes"} & set(r) for r in recs):
        # a line of no switch or block ('BlockSize=4' for BlockSizes=) was ignored
        odd = next((r for r in recs if not {"switchname", "blockname", "blocksizes", "aggregatedblock"} & set(r)), None)
        if odd is not None:
            raise UserError(f"{_at(where, odd)}: a line of neither a switch (SwitchName=) nor a block (BlockName=, "
                            "BlockSizes=)")
    sw = next((r for r in recs if "switchname" in r), None)
    bl = next((r for r in recs if "blockname" in r or "blocksizes" in r), None)
    if sw is not None and bl is not None:
        raise UserError(f"{_at(where, bl)}: BlockName=/BlockSizes= lines (topology/block) next to SwitchName= lines "
                        f"(topology/tree, line {sw.get('__line__', '?')}): a topology.conf describes one plugin's "
                        "network; keep the plugin's own lines")
    if sw is not None:
        paths, what = _tree_paths([r for r in recs if "switchname" in r], where)
        kind, plugin = "switches", "topology/tree"
    elif any("blockname" in r or "aggregatedblock" in r or "blocksizes" in r for r in recs):
        paths, what = _block_paths(recs, where)
        kind, plugin = "blocks", "topology/block"
    elif any("ringname" in r for r in recs):
        # topology/ring (Slurm 25.11+, topology.conf(5)): was "describes no switches ... is a
        # topology plugin configured?" of a file that configures one
        r = next(r for r in recs if "ringname" in r)
        raise UserError(f"{_at(where, r)}: RingName= lines (Slurm's topology/ring plugin): rankmap reads the "
                        "topology/tree and topology/block plugins' lines, not rings; a job runs inside one ring: "
                        "describe it as a ring of its nodes with --network torus:N (N nodes, --coords FILE giving "
                        "each host's position on the ring)")
    elif any(ln.split("#", 1)[0].strip().lstrip("- ").startswith("topology:") for ln in text.splitlines()):
        raise UserError(f"{where}: a topology.yaml (Slurm 25.05's format); rankmap reads topology.conf lines "
                        "(SwitchName=s1 Nodes=n[1-4], SwitchName=s0 Switches=s[1-2]; BlockName=, BlockSizes=): "
                        "write them for this network, or on the cluster use --network slurm (scontrol show topology)")
    else:
        raise UserError(f"{where}: describes no switches (SwitchName=) and no blocks (BlockName=); "
                        "is a topology plugin (topology/tree or topology/block) configured?")
    return {"kind": kind, "source": f"Slurm {plugin} ({where})", "label": f"Slurm {plugin} ({where}): {what}",
            "paths": paths}


def describe(file: str | None = None) -> dict:
    """The site's network: from a topology.conf file, or from `scontrol show topology`."""
    if file:
        path = Path(file)
        return parse(validate.read_text(path, "topology.conf"), str(path), conf=True)
    from rankmap.slurm import cluster
    text = cluster.query(["scontrol", "show", "topology"])
    if not text.strip():
        raise UserError("`scontrol show topology` describes no network: this cluster runs without a topology "
                        "plugin (TopologyPlugin=topology/tree or topology/block); give a topology.conf with "
                        "--network slurm:FILE, or the network with --network fat-tree:... / --torus")
    return parse(text, "scontrol show topology")


def for_hosts(desc: dict, hosts: list[str]) -> dict:
    """The description reduced to the hosts a machine uses (a site lists every node)."""
    missing = [h for h in hosts if h not in desc["paths"]]
    if missing:
        raise UserError(f"{desc['source']}: host {missing[0]} is under no switch or block"
                        + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                        + ": add it to a leaf's Nodes=, or leave it out of the node list")
    return dict(desc, paths={h: desc["paths"][h] for h in hosts})
