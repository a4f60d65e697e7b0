"""The machine a program is mapped onto: nodes (each with its hwloc internals), the network
between them, the slots ranks can take, and the cost of every pair of slots.

Levels run from the top of the machine tree to the bottom: switch levels (for a switch
tree; the last of them is the node), or `node` (flat network or torus), then `package`,
`numa` (only where a package holds several NUMA nodes), `core`. The cost of a pair of
slots follows TreeMatch's accumulated convention: a pair that first differs at level l
pays the sum of the level costs from l down to the bottom (two cores of one socket pay
the last cost; two nodes pay all of them). On a torus, two nodes `h` links apart pay
what a tree charges for two nodes (the costs from the node level down) plus the hop cost
for each link after the first (by default the hop cost is the node-level cost: h times
it). Slots on the same core cost 0."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankmap.mapper import hostnames, hwtopo
from rankmap.mapper.network import Hierarchy, Torus, from_spec, switch_tree, torus_from
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

DEFAULT_COSTS = {"switch": 1000.0, "node": 1000.0, "package": 100.0, "numa": 30.0, "core": 10.0,
                 "group": 1000.0, "router": 1000.0, "block": 1000.0}   # switch0.., block0.. by prefix


@dataclass
class TreeNode:
    """A subtree of the machine: the slots under it and its children (empty for a leaf)."""
    slots: np.ndarray
    children: list = field(default_factory=list)
    label: str = ""

    @property
    def capacity(self) -> int:
        return len(self.slots)


@dataclass
class Machine:
    hosts: list
    topos: list                  # per node: hwtopo.NodeTopology
    network: object              # network.Torus, SwitchTree, Dragonfly, or None (one switch)
    level_names: list
    level_costs: np.ndarray      # per level, top to bottom
    node_level: int
    slot_node: np.ndarray        # per slot: node index
    slot_core: np.ndarray        # per slot: hwloc logical core index within its node
    lvl: np.ndarray              # (slots, levels): group id at each level
    acc: np.ndarray              # acc[l]: cost of a pair first differing at level l (acc[L] = 0)
    hop_cost: float = 0.0        # torus: each link after the first (the first costs the node level)
    spec: dict | None = None     # the description it was built from (rankmap.mapper.spec), if any
    hosts_from: str = ""         # where the node list came from when no option gave it (for messages)

    @property
    def nslots(self) -> int:
        return len(self.slot_node)

    def slots_by_node(self) -> list[np.ndarray]:
        """Each node's slots in slot order (one sort, not a scan per node)."""
        order = np.argsort(self.slot_node, kind="stable")
        bounds = np.searchsorted(self.slot_node[order], np.arange(self.nnodes + 1))
        return [order[bounds[k]:bounds[k + 1]] for k in range(self.nnodes)]

    @property
    def nnodes(self) -> int:
        return len(self.hosts)

    def describe(self) -> str:
        # a property of the machine, said on the console and in report.json: computed once
        # (naming 10^5 hosts as a hostlist takes 1.5 s)
        if "_described" not in self.__dict__:
            self.__dict__["_described"] = self._describe()
        return self.__dict__["_described"]

    def _describe(self) -> str:
        kinds, said = {}, {}
        for h, t in zip(self.hosts, self.topos):     # nodes share a few topology objects: each described once
            kinds.setdefault(said.get(id(t)) or said.setdefault(id(t), t.describe()), []).append(h)
        parts = [f"{hostnames.compress(hs)} ({k})" for k, hs in kinds.items()]
        net = self.network.describe() if self.network is not None else "one switch"
        costs = ", ".join(f"{n} {c:g}" for n, c in zip(self.level_names, self.level_costs))
        if isinstance(self.network, Torus) and self.hop_cost != self.level_costs[self.node_level]:
            costs += f", hop {self.hop_cost:g}"
        return f"{self.nnodes} nodes: {'; '.join(parts)}; network {net}; {self.nslots} slots; level costs {costs}"

    def rising_costs_note(self) -> str | None:
        """A note where the level costs from the node down only rise (--level-costs
        10,100,1000: written core first?). Costs add up from the level where two slots
        differ, so the mapping is still valid, but leaving a node then adds little to a pair's
        cost and the mapping hardly keeps partners together: said, not refused."""
        names = self.level_names[self.node_level:]
        c = self.level_costs[self.node_level:]
        pos = c > 0
        nz = c[pos]
        if len(nz) < 2 or nz[-1] <= nz[0] or np.any(np.diff(nz) < 0):
            return None
        shown = ", ".join(f"{n} {v:g}" for n, v in zip(np.array(names)[pos], nz))
        return (f"the level costs rise towards the cores ({shown}); they are given top to bottom, the node level "
                f"first: a pair on two nodes costs only {self.acc[self.node_level] / self.acc[len(self.level_names) - 1]:.2f}x "
                f"a pair of cores beside each other, so the mapping hardly keeps partners on one node "
                f"(did you mean --level-costs {','.join(f'{v:g}' for v in self.level_costs[::-1])}?)")

    # ------------------------------------------------------------------ distances
    def node_hops(self, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
        if self.network is None:
            return np.where(na == nb, 0, 2).astype(np.int64)   # node - switch - node
        return self.network.hops(na, nb)

    def distance(self, sa: np.ndarray, sb: np.ndarray) -> np.ndarray:
        """Cost of the slot pairs (sa[i], sb[i]) (vectorized, O(len) memory)."""
        sa = np.asarray(sa, dtype=np.int64)
        sb = np.asarray(sb, dtype=np.int64)
        L = self.lvl.shape[1]
        out = np.empty(len(sa))
        for lo in range(0, len(sa), 1 << 20):   # chunks keep the (pairs x levels) temporary small
            a, b = sa[lo:lo + (1 << 20)], sb[lo:lo + (1 << 20)]
            diff = self.lvl[a] != self.lvl[b]
            first = np.where(diff.any(axis=1), diff.argmax(axis=1), L)
            d = self.acc[first]
            if isinstance(self.network, Torus):
                inter = first <= self.node_level
                if inter.any():
                    na, nb = self.slot_node[a[inter]], self.slot_node[b[inter]]
                    d[inter] = self.acc[self.node_level] + self.hop_cost * (self.network.hops(na, nb) - 1)
            out[lo:lo + len(a)] = d
        return out

    def tree_levels_up(self, sa, sb) -> np.ndarray:
        """How many levels up the lowest common ancestor of two slots is (0 = same core).
        Levels where every group has a single child (one package per node, say) are not
        levels of the tree and are not counted."""
        L = self.lvl.shape[1]
        diff = self.lvl[sa] != self.lvl[sb]
        first = np.where(diff.any(axis=1), diff.argmax(axis=1), L)
        return self.levels_above()[first]

    def levels_above(self) -> np.ndarray:
        """Entry l: the levels of the tree (as tree_levels_up counts them) at or below level
        index l; entry L (the same core) 0."""
        L = self.lvl.shape[1]
        above = self.__dict__.get("_levels_above")      # a property of the machine: computed once
        if above is None:
            real = np.ones(L, dtype=np.int64)
            for lv in range(1, L):
                # level lv is empty when each group one level up holds a single group of level lv
                a, b = self.lvl[:, lv - 1], self.lvl[:, lv]
                da, db = np.diff(a), np.diff(b)
                if not ((da >= 0).all() and (db >= 0).all()):
                    # distinct (a, b) pairs: np.unique(axis=0) took 7 s at 3*10^6 slots. A built
                    # machine's slots run in group order (both columns sorted): no sort needed
                    o = np.lexsort((b, a))
                    da, db = np.diff(a[o]), np.diff(b[o])
                pairs = 1 + int(np.count_nonzero((da != 0) | (db != 0))) if len(a) else 0
                groups = 1 + int(np.count_nonzero(da != 0)) if len(a) else 0       # a runs sorted here
                if pairs == groups:
                    real[lv] = 0
            above = np.concatenate([np.cumsum(real[::-1])[::-1], [0]])   # real levels at or below index l
            self.__dict__["_levels_above"] = above
        return above

    def one_to_one(self, slot: np.ndarray) -> bool:
        """Whether slot (a slot per rank) puts no two ranks on one slot, every slot one of the
        machine's (O(slots): a count, not a sort; 1.6 s of np.unique at 10^6 ranks)."""
        slot = np.asarray(slot)
        if not len(slot):
            return True
        if slot.min() < 0 or slot.max() >= self.nslots:
            return False
        return int(np.bincount(slot, minlength=self.nslots).max()) <= 1

    def same_cost(self, slots: np.ndarray) -> bool:
        """True when every pair of these slots costs the same (the cores of one socket, one
        slot each; or the slots of one core). Oversubscribed cores are not: two slots of one
        core cost nothing, of two cores the last level's cost."""
        lv = self.lvl[slots]
        if not (lv[:, :-1] == lv[0, :-1]).all():
            return False
        cores = lv[:, -1]
        return len(np.unique(cores)) in (1, len(cores))

    # ------------------------------------------------------------------ the partition tree
    def tree(self, nodes: np.ndarray | None = None) -> TreeNode:
        """Machine tree over the given nodes (default all): network subtrees (compact
        sub-tori, or switches), then each node's packages, NUMA nodes and cores."""
        nodes = np.arange(self.nnodes) if nodes is None else np.asarray(nodes)
        per = self.slots_by_node()
        by_node = {}
        # nodes of one shape share one subtree layout, built once; each node's own subtree is
        # laid out from it when a search first walks below the node (10^5 nodes of 64 cores:
        # the shapes compared node by node and 3*10^5 subtrees built took 7 s)
        for members in self._node_shapes(nodes, per):
            n0 = members[0]
            layout = _Layout(self._node_subtree(n0, per[n0]), per[n0], self.hosts[n0])
            for n in members.tolist():
                by_node[n] = _NodeTree(layout, per[n], self.hosts[n])
        if isinstance(self.network, Torus):
            root = self._torus_split(nodes, by_node)
        elif isinstance(self.network, Hierarchy):
            root = self._switch_split(nodes, by_node, 0)
        else:
            kids = [by_node[int(n)] for n in nodes]
            root = TreeNode(np.concatenate([k.slots for k in kids]), kids, "network")
        return root

    def _node_shapes(self, nodes: np.ndarray, per: list) -> list:
        """The nodes grouped by the shape of their subtree (their slots' group ids below the
        node level, relative to their first slot), in numpy: one group per node kind."""
        order = np.concatenate(per)
        bounds = np.concatenate([[0], np.cumsum(np.fromiter(map(len, per), dtype=np.int64, count=len(per)))])
        count = np.diff(bounds)[nodes]
        below = self.lvl[:, self.node_level + 1:]
        keys, shape_of = {}, np.empty(len(nodes), dtype=np.int64)
        for c in np.unique(count).tolist():
            at = np.flatnonzero(count == c)
            step = max(1, (1 << 20) // max(1, c * below.shape[1]))   # ~10^6 entries at a time
            for lo in range(0, len(at), step):
                part = at[lo:lo + step]
                rel = below[order[bounds[nodes[part]][:, None] + np.arange(c)]]       # (nodes, c, levels)
                rel = np.ascontiguousarray(rel - rel[:, :1]).reshape(len(part), -1)
                if (rel == rel[0]).all():             # one node kind (the usual case): no sort
                    shape_of[part] = keys.setdefault((c, rel[0].tobytes()), len(keys))
                    continue
                rows = rel.view(np.dtype((np.void, rel.dtype.itemsize * rel.shape[1]))).ravel()
                uniq, inv = np.unique(rows, return_inverse=True)
                ids = np.array([keys.setdefault((c, u.tobytes()), len(keys)) for u in uniq], dtype=np.int64)
                shape_of[part] = ids[inv.ravel()]
        grouping = np.argsort(shape_of, kind="stable")
        cuts = np.flatnonzero(np.diff(shape_of[grouping])) + 1
        return np.split(nodes[grouping], cuts)

    def _node_subtree(self, n: int, idx: np.ndarray) -> TreeNode:
        # levels below the node: group the slots level by level
        def build(slots, level, label):
            if level >= self.lvl.shape[1]:
                return TreeNode(slots, [], label)
            ids = self.lvl[slots, level]
            _, first = np.unique(ids, return_index=True)
            order = np.sort(first)
            if len(order) == 1 and level < self.lvl.shape[1] - 1:
                return build(slots, level + 1, label)        # a level with one group adds nothing
            kids = [build(slots[ids == ids[i]], level + 1, f"{label}/{self.level_names[level]}{j}")
                    for j, i in enumerate(order)]
            if len(kids) == 1:
                return kids[0]
            if all(not k.children for k in kids) and self.same_cost(slots):
                # interchangeable slots (a socket's cores): one leaf, filled in order. A tree
                # of 10^6 one-slot leaves took 2-3 s and ~400 MB to build, and nothing reads them
                return TreeNode(slots, [], label)
            return TreeNode(slots, kids, label)
        return build(idx, self.node_level + 1, self.hosts[n])

    def _torus_split(self, nodes: np.ndarray, by_node: dict) -> TreeNode:
        """Recursive bisection of the nodes' sub-torus, each time across its longest dimension
        (first the longest, then the coordinates in order), as a tree whose subtrees are laid
        out when first walked: the whole order is computed level by level in numpy (10^5
        nodes: 2*10^5 recursive calls took 6-10 s, for a job that may use 10 of them)."""
        if len(nodes) == 1:
            return by_node[int(nodes[0])]
        return _TorusOrder(self.network.coords, nodes, by_node).node(0, len(nodes))

    def _switch_split(self, nodes: np.ndarray, by_node: dict, level: int) -> TreeNode:
        groups = self.network.groups
        if level >= groups.shape[1] - 1:
            kids = [by_node[int(n)] for n in nodes]
        else:
            ids = groups[nodes, level]
            kids = [self._switch_split(nodes[ids == g], by_node, level + 1) for g in np.unique(ids)]
        if len(kids) == 1:
            return kids[0]
        return TreeNode(np.concatenate([k.slots for k in kids]), kids, f"switch{level}")


class _TorusOrder:
    """The node order of Machine._torus_split and the cut of every segment of it; subtrees
    are made on demand (_TorusTree), their slots views of one array."""

    def __init__(self, coords: np.ndarray, nodes: np.ndarray, by_node: dict):
        perm = np.asarray(nodes, dtype=np.int64).copy()
        nd = coords.shape[1]
        self.cut = {}
        lo, hi = np.array([0]), np.array([len(perm)])
        while len(lo):
            size = hi - lo
            seg = np.repeat(np.arange(len(lo)), size)
            rows = np.arange(len(seg)) - np.repeat(np.cumsum(size) - size, size) + np.repeat(lo, size)
            c = coords[perm[rows]]
            starts = np.cumsum(size) - size
            mins, maxs = np.minimum.reduceat(c, starts), np.maximum.reduceat(c, starts)
            extent = maxs - mins
            d = np.argmax(extent, axis=1)              # the longest dimension of each sub-torus
            cd = c[np.arange(len(seg)), d[seg]]
            # per segment: that dimension first, then the coordinates in order (a stable sort)
            o = np.lexsort(tuple(c[:, k] for k in reversed(range(nd))) + (cd, seg))
            perm[rows] = perm[rows[o]]
            vals = cd[o]
            cut_value = mins[np.arange(len(lo)), d] + (extent[np.arange(len(lo)), d] + 2) // 2
            cut = np.bincount(seg, weights=vals < cut_value[seg], minlength=len(lo)).astype(np.int64)
            bad = (cut <= 0) | (cut >= size)
            cut[bad] = size[bad] // 2
            at = lo + cut
            self.cut.update(zip(zip(lo.tolist(), hi.tolist()), at.tolist()))
            nlo, nhi = np.concatenate([lo, at]), np.concatenate([at, hi])
            keep = nhi - nlo >= 2
            lo, hi = nlo[keep], nhi[keep]
        self.perm, self.by_node = perm, by_node
        parts = [by_node[n].slots for n in perm.tolist()]
        self.slots = np.concatenate(parts)
        self.off = np.concatenate([[0], np.cumsum(np.fromiter(map(len, parts), np.int64, len(parts)))])

    def node(self, lo: int, hi: int) -> TreeNode:
        return self.by_node[int(self.perm[lo])] if hi - lo == 1 else _TorusTree(self, lo, hi)


class _TorusTree(TreeNode):
    """A sub-torus of _TorusOrder's nodes lo..hi-1: its two halves made when first walked."""

    def __init__(self, order: _TorusOrder, lo: int, hi: int):
        self._order, self._lo, self._hi, self._kids = order, lo, hi, None
        self.label = "torus"

    @property
    def slots(self) -> np.ndarray:
        o = self._order
        return o.slots[o.off[self._lo]:o.off[self._hi]]

    @property
    def children(self) -> list:
        if self._kids is None:
            o = self._order
            at = o.cut[(self._lo, self._hi)]
            self._kids = [o.node(self._lo, at), o.node(at, self._hi)]
        return self._kids


class _Layout:
    """A node subtree as positions into its node's slots, to lay out on another node of the
    same shape."""

    def __init__(self, tree: TreeNode, idx: np.ndarray, host: str):
        pos = np.empty(int(idx.max()) + 1, dtype=np.int64)
        pos[idx] = np.arange(len(idx))
        self.host = host

        def local(t):
            return (pos[t.slots], [local(c) for c in t.children], t.label)
        self.shape = local(tree)
        self.whole = np.array_equal(self.shape[0], np.arange(len(idx)))    # the root: the node's slots in order

    def at(self, idx: np.ndarray, host: str) -> TreeNode:
        def place(sh):
            at, kids, label = sh
            return TreeNode(idx[at], [place(c) for c in kids], host + label[len(self.host):])
        return place(self.shape)


class _NodeTree(TreeNode):
    """A node's subtree, laid out from its node kind's _Layout when first walked below the
    node: its slots are the node's slots (the layout's root holds all of them, in order)."""

    def __init__(self, layout: _Layout, idx: np.ndarray, host: str):
        self._layout, self._idx, self._host, self._laid = layout, idx, host, None
        self._slots = idx if layout.whole else idx[layout.shape[0]]

    @property
    def slots(self) -> np.ndarray:
        return self._slots

    @property
    def children(self) -> list:
        if self._laid is None:
            self._laid = self._layout.at(self._idx, self._host)
        return self._laid.children

    @property
    def label(self) -> str:
        return self._host + self._layout.shape[2][len(self._layout.host):]


# ---------------------------------------------------------------------- building a machine

def parse_topologies(specs: list[str], hosts: list[str]) -> list:
    """`SPEC` for every node, or several `HOSTLIST=SPEC` (heterogeneous nodes)."""
    if not specs:
        raise UserError("no node topology: pass --node-topology (e.g. 'pack:2 core:6', an lstopo XML file, or 'live')")
    # an lstopo XML under a directory named with '=' (/scratch/run=3/node.xml) is a file, not
    # HOSTLIST=SPEC ("node topology '3/node.xml': not a file")
    if len(specs) == 1 and ("=" not in specs[0] or Path(specs[0].strip()).is_file()):
        t = hwtopo.load(specs[0])
        return [t] * len(hosts)
    index = {h: i for i, h in enumerate(hosts)}
    out = [None] * len(hosts)
    for spec in specs:
        if "=" not in spec:
            raise UserError(f"--node-topology {spec!r}: with several topologies each must be HOSTLIST=SPEC")
        hl, _, topo = spec.partition("=")
        # 'n[1-2]=pack:2 core:2,n[3-4]=...': hwloc's error had named 'core:2,n[3-4]=pack:1'
        if "=" in topo and not Path(topo.strip()).exists():
            raise UserError(f"--node-topology {spec!r}: several HOSTLIST=SPEC in one option; give each its own "
                            "--node-topology (--node-topology 'n[1-2]=pack:2 core:6' --node-topology "
                            "'n[3-4]=pack:1 core:8')")
        with validate.prefixed(f"--node-topology {spec!r}"):
            t = hwtopo.load(topo.strip())
        for h in hostnames.expand(hl, f"--node-topology {spec!r}"):
            if h not in index:
                raise UserError(f"--node-topology names host {h}, which is not in the node list")
            if out[index[h]] is not None and out[index[h]] is not t:
                raise UserError(f"--node-topology {spec!r}: host {h} already has a topology (two HOSTLIST=SPEC name it)")
            out[index[h]] = t
    missing = [h for h, t in zip(hosts, out) if t is None]
    if missing:
        raise UserError(f"no node topology for host {missing[0]}" + (f" and {len(missing) - 1} more" if len(missing) > 1 else ""))
    return out


def parse_hop_cost(text: str | None, level_costs: str | None, node_cost: float) -> float:
    """--hop-cost, else "hop" in a level-cost file, else the node-level cost."""
    if text is not None:
        return validate.number(text, "--hop-cost", "cost", 0.0, validate.MAX_COST)
    if isinstance(level_costs, str) and level_costs.startswith("@"):
        path, data = _level_cost_file(level_costs[1:])
        if isinstance(data, dict) and "hop" in data:
            return validate.number(data["hop"], str(path), "level_costs.hop", 0.0, validate.MAX_COST)
    return float(node_cost)


def _level_cost_file(name: str):
    """A level-cost JSON file: a list of costs, or {"level_costs": {level: cost}} (what
    `rankmap probe` writes), or {level: cost}."""
    path = Path(name)
    if path.is_dir():
        raise UserError(f"--level-costs @{name}: a directory, not a level-cost JSON file")
    data = validate.read_json(path, "level-cost JSON file")
    if isinstance(data, dict) and "level_costs" in data:
        data = data["level_costs"]
        validate.expect(data, (dict, list), str(path), "level_costs")
    validate.expect(data, (dict, list), str(path), "the level costs")
    return path, data


def cost_list(text: str) -> list[float]:
    """--level-costs' comma-separated costs. An empty one ('1000,,100,10', or '$A,$B,$C' with
    a variable unset) is an error: it was dropped, and the costs after it moved up a level."""
    fields = text.split(",")
    for i, x in enumerate(fields):
        if not x.strip():
            raise UserError(f"--level-costs {text!r}: cost {i + 1} of {len(fields)} is empty (an unset shell "
                            "variable?); give one cost per level, top to bottom, e.g. 1000,100,10")
    return [validate.number(x, "--level-costs", f"{text!r}: cost", 0.0, validate.MAX_COST) for x in fields]


def parse_level_costs(text: str | None, names: list[str]) -> np.ndarray:
    """Comma-separated costs top to bottom, or @FILE (JSON: a list, or {"level_costs":
    {name: cost}} as `rankmap probe` writes). Where a package holds several NUMA nodes
    but no NUMA cost is given, NUMA costs nothing extra."""
    if text is None:
        return np.array([DEFAULT_COSTS["switch" if n.startswith("switch") else "block" if n.startswith("block") else n]
                         for n in names])
    if not isinstance(text, str):
        raise UserError(f"level costs {validate.show(text)}: expected text such as 1000,100,10 or @FILE")
    if text.startswith("@"):
        path, data = _level_cost_file(text[1:])
        if isinstance(data, dict):
            # a name no machine has a level of (a misspelt 'hops' or 'sockets') is an error: it
            # was ignored, and the level it meant got the default (a torus hop cost 1000, not 5)
            unknown = [k for k in data if not (k in DEFAULT_COSTS or k == "hop"
                                               or re.fullmatch(r"(switch|block)\d+", str(k)))]
            if unknown:
                raise UserError(f"{path}: level_costs names the level {validate.show(str(unknown[0]))}, which no "
                                f"machine has; the levels are {', '.join(names)} (and 'hop' on a torus)")
            missing = [n for n in names if n not in data and n != "numa"]
            if missing:
                raise UserError(f"{path}: no cost for level(s) {', '.join(missing)} (levels: {', '.join(names)})")
            vals = [validate.number(data.get(n, 0.0), str(path), f"level_costs.{n}", 0.0, validate.MAX_COST)
                    for n in names]
        else:
            vals = [validate.number(x, str(path), f"level_costs[{i}]", 0.0, validate.MAX_COST)
                    for i, x in enumerate(data)]
    else:
        vals = cost_list(text)
    if len(vals) == len(names) - 1 and "numa" in names:
        vals.insert(names.index("numa"), 0.0)
    if len(vals) != len(names):
        src = f"{text[1:]}: its level costs give" if text.startswith("@") else "--level-costs gives"
        raise UserError(f"{src} {len(vals)} value(s); this machine has {len(names)} levels, "
                        f"top to bottom: {', '.join(names)}")
    if any(not np.isfinite(v) or v < 0 for v in vals):
        raise UserError("--level-costs must be finite and non-negative")
    return np.array(vals, dtype=float) + 0.0          # ('-0' is zero: it was printed as 'node -0')


def _naming(flag: str, value, make):
    """make() with its errors naming the option they are about (--network fat-tree:2x2: a
    switch tree 2x2 holds 4 nodes, fewer than 6), unless they name it already.
    A network from a machine description (a dict) is named by that description's reader."""
    try:
        return make()
    except UserError as e:
        msg = str(e)
        if not isinstance(value, str) or flag in msg:
            raise
        raise UserError(f"{flag} {value}: {msg}") from None


def build(hosts: list[str], topo_specs: list[str], torus: str | None = None, mesh: str | None = None,
          coords: str | None = None, switches: str | None = None, level_costs: str | None = None,
          ranks_per_node: int | None = None, oversubscribe: int = 1, hop_cost: str | None = None,
          network: str | dict | None = None) -> Machine:
    """network: a --network spec (network.parse_spec's text or dict; Slurm's switches
    already resolved into {"kind": "switches", "paths": ...}); coords then place the
    nodes in it (torus coordinates, or positions in a tree or dragonfly)."""
    if not hosts:
        raise UserError("empty node list")
    topos = parse_topologies(topo_specs, hosts)
    if sum(bool(x) for x in (torus, mesh, switches, network)) > 1:
        raise UserError("choose one network: --network, --torus, --mesh or --switch-tree")
    if coords and not (torus or mesh or network or (switches and isinstance(coords, dict))):
        raise UserError("--coords needs --torus or --mesh")
    spec_net = network
    network = None
    if spec_net:
        network = _naming("--network", spec_net, lambda: from_spec(spec_net, hosts, coords))
    elif torus or mesh:
        network = _naming("--torus" if torus else "--mesh", torus or mesh,
                          lambda: torus_from(torus or mesh, hosts, coords, mesh=bool(mesh)))
    elif switches:
        # (coords: each node's place in the tree, as machine.json keeps a reduced machine's nodes)
        pos = None
        if coords:
            if any(h not in coords for h in hosts):
                raise UserError(f"no switch-tree position for host {next(h for h in hosts if h not in coords)}")
            pos = np.array([coords[h] for h in hosts], dtype=np.int64).reshape(len(hosts), -1)[:, 0]
        network = _naming("--switch-tree", switches, lambda: switch_tree(switches, len(hosts), positions=pos))
    oversubscribe = validate.integer(oversubscribe, "--oversubscribe", "ranks per core", 1,
                                     validate.MAX_OVERSUBSCRIBE, float_form=False)

    numa_level = any(t.numa_per_package > 1 for t in {id(t): t for t in topos}.values())   # nodes share topologies
    if isinstance(network, Hierarchy):
        net_names = network.level_names
    else:
        net_names = ["node"]
    names = net_names + ["package"] + (["numa"] if numa_level else []) + ["core"]
    costs = parse_level_costs(level_costs, names)
    node_level = names.index("node")

    used = {}        # per node kind (nodes share topology objects): its cores used, computed once
    most = max(t.cores for t in topos)
    for t in topos:
        if id(t) not in used:
            # nodes of several sizes: K is at most K per node (Slurm's --ntasks-per-node with
            # --ntasks), a smaller node gives all its cores; K above every node's is an error
            k = min(ranks_per_node, t.cores) if ranks_per_node is not None and ranks_per_node <= most else \
                ranks_per_node
            used[id(t)] = np.array(_cores_used(t, k), dtype=np.int64)
    # counted before the slots are made: 64 cores x --oversubscribe 2^24 allocated 8 GB (47 s)
    # before this refused them
    nslots = sum(len(used[id(t)]) for t in topos) * oversubscribe
    if nslots > validate.MAX_SLOTS:
        # what the user passed, named: the node list, the cores per node, --oversubscribe
        cores = sorted({len(c) for c in used.values()})
        per = f"{cores[0]}" if len(cores) == 1 else f"{cores[0]}-{cores[-1]}"
        over = f" x --oversubscribe {oversubscribe}" if oversubscribe > 1 else ""
        raise UserError(f"the machine has {nslots} slots ({len(topos)} nodes x {per} cores"
                        f"{' used' if ranks_per_node else ''} per node{over}); rankmap handles at most "
                        f"{validate.MAX_SLOTS}: give fewer nodes (--nodes) or cores per node (--ranks-per-node)"
                        f"{', or a lower --oversubscribe' if oversubscribe > 1 else ''}")
    used = {key: np.repeat(c, oversubscribe) for key, c in used.items()}
    per_node = [used[id(t)] for t in topos]
    slot_node = np.repeat(np.arange(len(topos), dtype=np.int64), [len(c) for c in per_node])
    slot_core = np.concatenate(per_node)
    maxc = max(t.cores for t in topos)
    cols = []
    if isinstance(network, Hierarchy):
        groups = network.groups
        cols += [groups[slot_node, l] for l in range(groups.shape[1])]
    else:
        cols.append(slot_node)
    # per node kind, a table core -> package / NUMA node (nodes share a few kinds)
    kinds = {}
    kind_of = np.array([kinds.setdefault(id(t), len(kinds)) for t in topos], dtype=np.int64)
    uniq = {kinds[id(t)]: t for t in topos}
    pkg_tab = np.zeros((len(kinds), maxc), dtype=np.int64)
    numa_tab = np.zeros((len(kinds), maxc), dtype=np.int64)
    for k, t in uniq.items():
        pkg_tab[k, :t.cores] = t.core_package
        numa_tab[k, :t.cores] = t.core_numa
    pkg = pkg_tab[kind_of[slot_node], slot_core]
    cols.append(slot_node * maxc + pkg)
    if numa_level:
        cols.append(slot_node * maxc + numa_tab[kind_of[slot_node], slot_core])
    cols.append(slot_node * maxc + slot_core)
    lvl = np.stack(cols, axis=1)
    acc = np.concatenate([np.cumsum(costs[::-1])[::-1], [0.0]])
    hop = parse_hop_cost(hop_cost, level_costs, costs[node_level])
    return Machine(hosts=list(hosts), topos=topos, network=network, level_names=names, level_costs=costs,
                   node_level=node_level, slot_node=slot_node, slot_core=slot_core, lvl=lvl, acc=acc, hop_cost=hop)


def _cores_used(t, ranks_per_node: int | None) -> list[int]:
    if ranks_per_node is None or ranks_per_node >= t.cores:
        if ranks_per_node is not None and ranks_per_node > t.cores:
            raise UserError(f"--ranks-per-node {ranks_per_node} exceeds the {t.cores} cores of a node "
                            f"({t.spec}); use --oversubscribe")
        return list(range(t.cores))
    if ranks_per_node < 1:
        raise UserError("--ranks-per-node must be >= 1")
    # spread over packages (and NUMA nodes): round-robin over them, lowest cores first
    groups = {}
    for c in range(t.cores):
        groups.setdefault((t.core_package[c], t.core_numa[c]), []).append(c)
    queues = list(groups.values())
    chosen = []
    i = 0
    while len(chosen) < ranks_per_node:
        q = queues[i % len(queues)]
        if q:
            chosen.append(q.pop(0))
        i += 1
    return sorted(chosen)
