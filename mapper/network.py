"""Networks between nodes: tori and meshes of any dimension with dimension-order routing,
switch trees (fat trees with oversubscription per level, the site's own Slurm topology),
and dragonflies (groups of routers joined by global links).

Torus coordinates come from a file (one line per node: `host x y z ...`, # comments) or,
by default, from the node order with the first dimension fastest (node id = x + X*y +
X*Y*z, the convention of SimGrid's torus clusters). Routes are dimension-order (lowest
dimension first), the shorter way around each ring; a tie on an even ring goes the
positive way. Each dimension is a ring (torus) or a line (mesh): Tofu's 6-D
X x Y x Z x 2 x 3 x 2 has its a and c dimensions as lines. Links are directed and
full-duplex: each direction is its own link.

Tree-shaped networks (SwitchTree, Dragonfly) are also hierarchies for the mapper: each
node belongs to one group per level (`groups`, top to bottom, the last level being the
node itself), and the machine's levels and partition tree follow them. Every network
gives, per directed link, the bytes it carries (`link_loads`, a flat array), what kind
of link each entry is (`link_kinds`: "global" for the top of a tree and the dragonfly's
inter-group links), and the links on a route (`hops`).

`--network SPEC` names one (parse_spec): `torus:4x4x4`, `mesh:8x8`, `torus:8x8x8x2x3x2:
wrap=111010`, `tofu:XxYxZ`, `fat-tree:4x8[:oversub=2]`, `fat-tree:'2;8,4;1,2;1,1'`
(SimGrid's parameters), `dragonfly:GxAxP[:global=L][:routing=valiant]`, `slurm[:FILE]`
(resolved in rankmap.slurm.topology into the switches of each host)."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError


MAX_PARALLEL_LINKS = 4096      # a dragonfly's links per pair of groups (global=) or routers (local=)
FIRST_DIFF_TABLE_NODES = 2048  # Hierarchy.first_diff keeps every pair's answer up to this many nodes


MAX_DIMS = 24       # dimensions of a torus or mesh: 2^22 positions hold at most 22 of size >= 2


def parse_dims(text: str, what: str = "torus") -> tuple[int, ...]:
    if not isinstance(text, str):
        raise UserError(f"bad {what} dimensions {text!r}; expected text such as 3x3x4")
    try:
        dims = tuple(int(x) for x in text.lower().replace("*", "x").split("x"))
    except ValueError:
        raise UserError(f"bad {what} dimensions {text!r}; expected e.g. 3x3x4") from None
    if not dims or any(d < 1 for d in dims):
        raise UserError(f"bad {what} dimensions {text!r}: each must be >= 1")
    if len(dims) > MAX_DIMS:
        # past 2^22 positions only dimensions of 1 remain; 61 of them ended in numpy's
        # "maximum supported dimension for an ndarray" (an internal error)
        raise UserError(f"bad {what} dimensions {text[:40]!r}...: {len(dims)} dimensions; rankmap handles at most "
                        f"{MAX_DIMS} (a dimension of 1 adds nothing: leave it out)")
    if math.prod(dims) > validate.MAX_NET_POSITIONS:
        raise UserError(f"{what} {text!r}: {math.prod(dims)} positions; rankmap handles at most "
                        f"{validate.MAX_NET_POSITIONS}")
    return dims


@dataclass
class Torus:
    dims: tuple
    wrap: tuple              # per dimension: torus ring (True) or mesh line (False)
    coords: np.ndarray       # (nodes, ndims) coordinates of the machine's nodes

    kind = "torus"

    @property
    def positions(self) -> int:
        return int(np.prod(self.dims))

    def describe(self) -> str:
        if all(self.wrap) or not any(self.wrap):
            return f"{'x'.join(map(str, self.dims))} {'torus' if all(self.wrap) else 'mesh'}"
        # mixed: each line dimension marked (Tofu: 24x23x24x2mx3x2m)
        return "x".join(f"{d}{'' if w else 'm'}" for d, w in zip(self.dims, self.wrap)) + " torus (m: no wrap-around)"

    def pos(self, coords: np.ndarray) -> np.ndarray:
        """Linear position, first dimension fastest."""
        p = np.zeros(len(coords), dtype=np.int64)
        mul = 1
        for d, size in enumerate(self.dims):
            p += coords[:, d] * mul
            mul *= size
        return p

    def _steps(self, a: np.ndarray, b: np.ndarray):
        """Per dimension: signed step count of the dimension-order route from a to b."""
        out = []
        for d, size in enumerate(self.dims):
            delta = b[:, d] - a[:, d]
            out.append(self._ring(delta, size) if self.wrap[d] else delta)
        return out

    @staticmethod
    def _ring(delta: np.ndarray, size: int) -> np.ndarray:
        """Signed steps round a ring of `size` nodes: the shorter way; at a tie, up."""
        fwd = np.mod(delta, size)
        return np.where(fwd <= size - fwd, fwd, fwd - size)

    def hops(self, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
        """Links on the route between node indices na and nb."""
        a, b = self.coords[na], self.coords[nb]
        return sum(np.abs(s) for s in self._steps(a, b)).astype(np.int64)

    def walk(self, na: np.ndarray, nb: np.ndarray):
        """The dimension-order routes na[i] -> nb[i] (node indices), one hop at a time, all
        routes at once: yields (idx, pos, dim, direction) for the routes still moving, where
        idx are their indices, pos the positions they leave, and (dim, direction) the link
        they take (direction 0 = +, 1 = -). Every routed quantity (link loads, the routes
        through a link, the nodes a route passes) is a sum over this one walk."""
        cur = self.coords[na].copy()
        steps = self._steps(cur, self.coords[nb])
        for d, size in enumerate(self.dims):
            s = steps[d].copy()
            while True:
                idx = np.flatnonzero(s != 0)
                if not len(idx):
                    break
                sd = s[idx]
                yield idx, self.pos(cur[idx]), d, (sd < 0).astype(np.int64)
                move = np.where(sd > 0, 1, -1)
                nxt = cur[idx, d] + move
                if self.wrap[d]:
                    nxt %= size
                cur[idx, d] = nxt
                s[idx] -= move

    def link_loads(self, na: np.ndarray, nb: np.ndarray, w: np.ndarray, group: np.ndarray | None = None,
                   ngroups: int = 1, injection: bool = True) -> np.ndarray:
        """Bytes per directed link, shape (positions, ndims, 2): [pos, dim, 0] is the link
        leaving pos in the + direction, [pos, dim, 1] in the - direction. With `group`, one
        such array per group of routes: shape (ngroups, positions, ndims, 2). (injection: as
        the other networks' link_loads; a torus has no injection links in this layout.)"""
        w = np.asarray(w, dtype=np.float64)
        grp = np.zeros(len(na), dtype=np.int64) if group is None else np.asarray(group)
        ng = ngroups if group is not None else 1
        loads = np.zeros((ng, self.positions, len(self.dims), 2))
        # The same routes as walk(), summed one dimension at a time: a route's run along
        # dimension d is an interval of one ring (or line), added to a difference array
        # twice the ring's length (so that a run crossing the wrap-around is one
        # interval) and folded back after a prefix sum — O(routes x dims), not x hops.
        cur = self.coords[na].copy()
        steps = self._steps(cur, self.coords[nb])
        dims = list(self.dims)
        for d, size in enumerate(dims):
            s = steps[d]
            move = s != 0
            if move.any():
                ext = dims.copy()
                ext[d] = 2 * size + 1                                  # + 1: where the last runs end
                c, sd, g, wd = cur[move], s[move], grp[move], w[move]
                x0 = c[:, d]
                # + runs leave x0 .. x0+L-1; - runs leave x0-L+1 .. x0, shifted up by one ring length
                lo = np.where(sd > 0, x0, x0 + sd + 1 + size)
                hi = lo + np.abs(sd)
                direction = (sd < 0).astype(np.int64)
                shape = (ng, 2) + tuple(reversed(ext))                 # C order: the last dimension fastest
                other = c.copy()
                flat, wts = [], []
                for lo_k, w_k in ((lo, wd), (hi, -wd)):
                    other[:, d] = lo_k
                    flat.append(np.ravel_multi_index((g, direction) + tuple(other[:, j] for j in
                                                                          reversed(range(len(dims)))), shape))
                    wts.append(w_k)
                flat = np.concatenate(flat)
                diff = np.bincount(flat, weights=np.concatenate(wts), minlength=int(np.prod(shape))).reshape(shape)
                # the routes on each link counted too, in integers: the float prefix sums leave
                # residues of +-1e-8 on links no route takes (counted as used, or negative)
                runs = np.bincount(flat, weights=np.repeat([1.0, -1.0], len(flat) // 2),
                                   minlength=int(np.prod(shape))).astype(np.int64).reshape(shape)
                axis = 2 + (len(dims) - 1 - d)

                def fold(a):
                    a = np.cumsum(a, axis=axis)
                    return np.take(a, np.arange(size), axis=axis) + np.take(a, np.arange(size, 2 * size), axis=axis)
                run = fold(diff)
                run[fold(runs) == 0] = 0.0
                # back to [group, position (first dimension fastest), dim, direction]
                loads[:, :, d, :] = run.reshape(ng, 2, -1).transpose(0, 2, 1)
            cur[:, d] = self.coords[nb][:, d]
        return loads if group is not None else loads[0]

    def crosses(self, na: np.ndarray, nb: np.ndarray, link: int) -> np.ndarray:
        """Which routes (na[i] -> nb[i]) use the directed link with flat index `link`."""
        pos_l, rest = divmod(int(link), len(self.dims) * 2)
        d_l, dir_l = divmod(rest, 2)
        hit = np.zeros(len(na), bool)
        for idx, p, d, direction in self.walk(na, nb):
            if d == d_l:
                hit[idx[(p == pos_l) & (direction == dir_l)]] = True
        return hit

    def through(self, na: np.ndarray, nb: np.ndarray, w: np.ndarray, nnodes: int) -> np.ndarray:
        """Bytes each node's router passes: every node a route visits, its ends included."""
        w = np.asarray(w, dtype=np.float64)
        # the node at each position, looked up among the nodes' positions (not an array over
        # every position of the torus: 2048 x 2048 holding 8 nodes)
        npos = self.pos(self.coords)
        order = np.argsort(npos, kind="stable")
        spos = npos[order]
        v = np.zeros(nnodes)
        for idx, p, _, _ in self.walk(na, nb):       # the node each hop leaves: the source and transit nodes
            at = np.minimum(np.searchsorted(spos, p), max(len(spos) - 1, 0))
            ok = spos[at] == p if len(spos) else np.zeros(len(p), bool)   # positions without a node do not count
            nodes = order[at]
            np.add.at(v, nodes[ok], w[idx][ok])
        np.add.at(v, nb, w)                             # and where each route ends
        return v

    def subset(self, nodes) -> "Torus":
        return Torus(dims=self.dims, wrap=self.wrap, coords=self.coords[np.asarray(nodes)])

    def compact_links(self) -> "CompactLinks | None":
        """The links in runs of equal load (CompactLinks) where the torus has many more
        positions than nodes (COMPACT_*), else None (every link its own entry, as
        link_loads lays them out). Made once per network object (coords are not changed in
        place: subset() makes a new one)."""
        n = len(self.coords)
        if self.positions < COMPACT_MIN_POSITIONS or self.positions < COMPACT_RATIO * n or n > COMPACT_MAX_NODES:
            return None
        cached = self.__dict__.get("_compact")
        if cached is not None and cached[0] is self.coords:
            return cached[1]
        c = CompactLinks(self)
        if c.nlinks * COMPACT_RATIO > self.positions * len(self.dims) * 2:
            c = None
        self.__dict__["_compact"] = (self.coords, c)
        return c

    def link_kinds(self) -> np.ndarray:
        return np.full(self.positions * len(self.dims) * 2, "torus", dtype=object)

    def link_count(self) -> int:
        n = 0
        for d, size in enumerate(self.dims):
            if size == 1:
                continue
            per_ring = size if (self.wrap[d] and size > 2) else size - 1
            n += 2 * per_ring * (self.positions // size)
        return n


# A torus of many more positions than nodes (2048x2048 holding 8 nodes): its links in runs
# of equal load (Torus.compact_links), used where the positions outnumber the nodes this many
# times and there are at least COMPACT_MIN_POSITIONS of them; below that every link is its own
# entry, as before (the same numbers to the last bit)
COMPACT_MIN_POSITIONS = 1 << 16
COMPACT_RATIO = 8
COMPACT_MAX_NODES = 4096


class CompactLinks:
    """The directed links of a sparsely populated torus in runs of equal load: dimension-order
    routes between its nodes start and end each dimension's run at node coordinates (a - run
    at one past them), so along a line of dimension d the load only changes at the
    breakpoints B_d (the nodes' coordinates x and x + 1, and 0); and a run along d lies on a
    line whose coordinates below d are a node's (the target's) and above d a node's (the
    source's). Entry (d, line = (prefix p, suffix s), segment k, direction) stands for the
    mult = B_d[k+1] - B_d[k] links leaving B_d[k] .. B_d[k+1] - 1: what every consumer of
    the loads reads (the busiest link, the links used, their mean, the sum of squares) is a
    sum or max over these with their multiplicities. Sized by the nodes (prefixes x suffixes
    x breakpoints per dimension), not by the torus's positions."""

    def __init__(self, net: "Torus"):
        c = np.asarray(net.coords, dtype=np.int64)
        self.dims, self.wrap = tuple(int(x) for x in net.dims), tuple(bool(x) for x in net.wrap)
        nd = len(self.dims)
        self.bps, self.pre, self.suf, self.npre, self.nsuf, self.off = [], [], [], [], [], []
        total = 0
        for d, size in enumerate(self.dims):
            x = c[:, d]
            nxt = (x + 1) % size if self.wrap[d] else x[x + 1 < size] + 1
            self.bps.append(np.unique(np.concatenate([x, nxt, [0]])))
            pre = np.unique(c[:, :d], axis=0, return_inverse=True)[1].reshape(-1) if d else np.zeros(len(c), np.int64)
            suf = (np.unique(c[:, d + 1:], axis=0, return_inverse=True)[1].reshape(-1) if d < nd - 1
                   else np.zeros(len(c), np.int64))
            self.pre.append(pre.astype(np.int64))
            self.suf.append(suf.astype(np.int64))
            self.npre.append(int(pre.max()) + 1 if len(c) else 1)
            self.nsuf.append(int(suf.max()) + 1 if len(c) else 1)
            self.off.append(total)
            total += self.npre[d] * self.nsuf[d] * len(self.bps[d]) * 2
        self.nlinks = total
        mult = np.empty(total)
        for d, size in enumerate(self.dims):
            b = self.bps[d]
            seg = np.diff(np.r_[b, size]).astype(np.float64)
            mult[self.off[d]:self.off[d] + self.npre[d] * self.nsuf[d] * len(b) * 2] = \
                np.tile(np.repeat(seg, 2), self.npre[d] * self.nsuf[d])
        self.mult = mult

    def _runs(self, net, na, nb, d, steps):
        """The routes' runs along dimension d: (route indices, entry index of each one's first
        segment with direction, segment count, breakpoints per line)."""
        s = steps[d]
        idx = np.flatnonzero(s != 0)
        b, size = self.bps[d], self.dims[d]
        nb_ = len(b)
        ca, cb = net.coords[na[idx], d], net.coords[nb[idx], d]
        neg = s[idx] < 0
        # + leaves ca .. cb - 1 (round the ring); - leaves cb + 1 .. ca
        first = np.where(neg, (cb + 1) % size if self.wrap[d] else cb + 1, ca)
        last = np.where(neg, (ca + 1) % size if self.wrap[d] else ca + 1, cb)    # one past, as a coordinate
        k0 = np.searchsorted(b, first)
        k1 = np.searchsorted(b, last)                 # (a mesh's size: past the last breakpoint)
        count = np.where(k1 > k0, k1 - k0, k1 - k0 + nb_)
        line = self.pre[d][nb[idx]] * self.nsuf[d] + self.suf[d][na[idx]]
        return idx, line, k0, count, neg.astype(np.int64), nb_

    def loads(self, net, na, nb, w, group=None, ngroups: int = 1) -> np.ndarray:
        """Bytes per entry, shape (nlinks,) or with group (ngroups, nlinks)."""
        na, nb = np.asarray(na, dtype=np.int64), np.asarray(nb, dtype=np.int64)
        w = np.asarray(w, dtype=np.float64)
        grp = np.zeros(len(na), dtype=np.int64) if group is None else np.asarray(group, dtype=np.int64)
        ng = ngroups if group is not None else 1
        out = np.zeros((ng, self.nlinks))
        steps = net._steps(net.coords[na], net.coords[nb])
        for d in range(len(self.dims)):
            idx, line, k0, count, neg, nbp = self._runs(net, na, nb, d, steps)
            if not len(idx):
                continue
            nl = self.npre[d] * self.nsuf[d]
            shape = (ng, nl, 2, 2 * nbp + 1)          # a run crossing the wrap-around is one interval
            g, wd = grp[idx], w[idx]
            start = np.ravel_multi_index((g, line, neg, k0), shape)
            end = np.ravel_multi_index((g, line, neg, k0 + count), shape)
            flat = np.concatenate([start, end])
            size = int(np.prod(shape))
            diff = np.bincount(flat, weights=np.concatenate([wd, -wd]), minlength=size).reshape(shape)
            runs = np.bincount(flat, weights=np.repeat([1.0, -1.0], len(idx)), minlength=size).reshape(shape)
            run = np.cumsum(diff, axis=3)
            cnt = np.rint(np.cumsum(runs, axis=3)).astype(np.int64)
            run = run[..., :nbp] + run[..., nbp:2 * nbp]
            cnt = cnt[..., :nbp] + cnt[..., nbp:2 * nbp]
            run[cnt == 0] = 0.0
            # entry layout: [line, segment, direction]
            out[:, self.off[d]:self.off[d] + nl * nbp * 2] = run.transpose(0, 1, 3, 2).reshape(ng, -1)
        return out if group is not None else out[0]

    def crosses(self, net, na, nb, link: int) -> np.ndarray:
        """Which routes (na[i] -> nb[i]) use the links of entry `link`."""
        na, nb = np.asarray(na, dtype=np.int64), np.asarray(nb, dtype=np.int64)
        d = int(np.searchsorted(self.off, link, side="right")) - 1
        nbp = len(self.bps[d])
        line_l, rest = divmod(int(link) - self.off[d], nbp * 2)
        k_l, dir_l = divmod(rest, 2)
        hit = np.zeros(len(na), bool)
        steps = net._steps(net.coords[na], net.coords[nb])
        idx, line, k0, count, neg, _ = self._runs(net, na, nb, d, steps)
        inside = np.mod(k_l - k0, nbp) < count
        hit[idx[(line == line_l) & (neg == dir_l) & inside]] = True
        return hit


class Hierarchy:
    """A network that is also a hierarchy of groups: `groups[i, l]` is node i's group at
    level l (top to bottom; group ids are global per level; the last level is the node)."""
    groups: np.ndarray

    @property
    def level_names(self) -> list[str]:
        raise NotImplementedError

    def first_diff(self, na, nb) -> np.ndarray:
        """Levels shared from the top (= the level at which the two nodes' groups first differ)."""
        table = self._first_diff_table()
        if table is not None:
            return table[np.asarray(na), np.asarray(nb)].astype(np.int64)
        ga, gb = self.groups[np.asarray(na)], self.groups[np.asarray(nb)]
        return np.cumprod(ga == gb, axis=1).sum(axis=1)

    def _first_diff_table(self) -> np.ndarray | None:
        """first_diff of every pair of nodes, up to FIRST_DIFF_TABLE_NODES nodes (4 MB): the link
        balancing routes the node-level traffic for each candidate move, and the per-pair
        cumulative product over the levels was its largest numpy call (social/10k/hetero3/s1000,
        with the injection links below: the mapping 3.24 -> 2.92 s CPU, the same mapping).
        Built once per network object (groups are not changed in place: subset() makes a new one)."""
        n = self.groups.shape[0]
        if n > FIRST_DIFF_TABLE_NODES:
            return None
        cached = self.__dict__.get("_fd_table")
        if cached is not None and cached[0] is self.groups:
            return cached[1]
        same = np.ones((n, n), dtype=bool)
        table = np.zeros((n, n), dtype=np.int8)
        for m in range(self.groups.shape[1]):
            col = self.groups[:, m]
            same &= col[:, None] == col[None, :]
            table += same
        self.__dict__["_fd_table"] = (self.groups, table)
        return table


@dataclass
class SwitchTree(Hierarchy):
    """Nodes under a tree of switches. arities top to bottom: (2, 18) is a top switch over
    two leaf switches of 18 nodes; groups[i, l] is node i's subtree at level l (the last
    level is the node itself). A tree from Slurm's topology is irregular: its groups come
    from each host's switches (from_paths), its arities are the largest fan-outs.

    uplinks[l][g]: the links from subtree g of level l to the switch above it (a fat tree
    with oversubscription has fewer links up than down; None: one link per subtree). Link
    loads are bytes per physical link, the subtree's bytes spread evenly over its uplinks
    (ECMP; SimGrid routes d-mod-k, which spreads regular traffic the same way)."""
    arities: tuple
    groups: np.ndarray       # (nodes, levels)
    uplinks: list | None = None
    prefix: str = "switch"   # level names: switch0, switch1, ... (blocks: block0, ...)
    label: str = ""          # what describe() says ("" : the arities)
    names: list | None = None  # per level: group id -> the site's name for it (Slurm switches)
    simgrid: str = ""        # SimGrid's FAT_TREE parameters when the tree is one (exact routes: FatTreeRoutes)
    # a tree whose leaf switches sit at different depths (Slurm's): the levels a node's path
    # lacks repeat its leaf switch (from_paths); pad[i]: node i's such levels, virtual[l]:
    # which groups of level l are such repeats (no link above them: hops and loads skip them)
    pad: np.ndarray | None = None
    virtual: list | None = None

    kind = "tree"

    @property
    def level_names(self) -> list[str]:
        return [f"{self.prefix}{i}" for i in range(self.groups.shape[1] - 1)] + ["node"]

    def describe(self) -> str:
        return self.label or ("switch tree " + "x".join(map(str, self.arities)) + self._oversub_text())

    def _oversub_text(self) -> str:
        if self.uplinks is None:
            return ""
        ratios = []
        for m in range(len(self.uplinks) - 1):
            down = self.arities[m + 1] * float(np.max(self.uplinks[m + 1]))
            ratios.append(down / float(np.max(self.uplinks[m])))
        if all(abs(r - 1) < 1e-9 for r in ratios):
            return " (full bisection)"
        if len(ratios) == 1:
            return f" (oversubscribed {ratios[0]:g}:1)"
        return " (oversubscribed " + " ".join(f"{r:g}:1" for r in ratios) + ", top to bottom)"

    def subset(self, nodes) -> "SwitchTree":
        from dataclasses import replace
        nodes = np.asarray(nodes)
        return replace(self, groups=self.groups[nodes], pad=None if self.pad is None else self.pad[nodes])

    def uneven(self) -> bool:
        """Leaf switches at different depths (some levels of some paths repeat a switch)."""
        return self.pad is not None and bool(self.pad.any())

    def hops(self, na, nb) -> np.ndarray:
        """Links on the route: up to the lowest common switch and down again (a path's
        repeated levels are no links)."""
        fd = self.first_diff(na, nb)
        h = 2 * (self.groups.shape[1] - fd)
        if self.uneven():
            below = np.maximum(self.groups.shape[1] - 1 - fd, 0)    # switch levels under the common one
            h = h - np.minimum(self.pad[na], below) - np.minimum(self.pad[nb], below)
        return np.asarray(h, dtype=np.int64)

    def _sizes(self) -> list[int]:
        return [int(self.groups[:, m].max()) + 1 for m in range(self.groups.shape[1])]

    def _capacity(self, m: int, size: int) -> np.ndarray:
        if self.uplinks is None:
            cap = np.ones(size)
        else:
            cap = np.asarray(self.uplinks[m], dtype=np.float64)
            if cap.ndim == 0:
                cap = np.full(size, float(cap))
            else:
                cap = cap[:size] if len(cap) >= size else np.concatenate([cap, np.ones(size - len(cap))])
        if self.virtual is not None and m < len(self.virtual) and self.virtual[m].any():
            cap = cap.copy()
            v = self.virtual[m][:size]
            cap[:len(v)][v] = np.inf                      # a repeated switch: no such link, no load
        return cap

    def link_loads(self, na, nb, w, group: np.ndarray | None = None, ngroups: int = 1,
                   injection: bool = True, numpy_only: bool = False) -> np.ndarray:
        """Bytes per physical link from each subtree to its parent: [level][group] up, then
        the same down, flattened (level by level, up links first). With `group`, one such
        array per group of routes: shape (ngroups, links). injection=False: without the
        nodes' own links (link_kinds "injection": the last level), which the link balancing
        cannot change: their (candidates x nodes) arrays are not built. One pass in C
        (refine.switch_loads: the link balancing routes every candidate move); numpy_only: the
        numpy passes (the tests' reference)."""
        w = np.asarray(w, dtype=np.float64)
        ng = ngroups if group is not None else 1
        sizes = self._sizes()
        if not numpy_only:
            from rankmap.mapper import refine       # (refine imports this module)
            used = len(sizes) if injection else len(sizes) - 1
            res = refine.switch_loads(self.groups, used, sizes, na, nb, w, group, ng)
            if res.shape[1]:
                cap = np.concatenate([self._capacity(m, size) for m, size in enumerate(sizes[:used])])
                res /= np.concatenate([cap, cap])
            return res if group is not None else res[0]
        l = self.first_diff(na, nb)
        na, nb = np.asarray(na), np.asarray(nb)
        grp = np.zeros(len(na), dtype=np.int64) if group is None else np.asarray(group)
        up, down = [], []
        for m, size in enumerate(sizes if injection else sizes[:-1]):
            idx = np.flatnonzero(l <= m)          # the routes through this level's links
            cap = self._capacity(m, size)
            wm, base, col = w[idx], grp[idx] * size, self.groups[:, m]
            for ends, out in ((na, up), (nb, down)):
                key = base + col[ends[idx]]
                out.append(np.bincount(key, weights=wm, minlength=ng * size).reshape(ng, size) / cap)
        # one switch over all nodes and injection=False: no link the caller asked for
        res = np.concatenate(up + down, axis=1) if up else np.zeros((ng, 0))
        return res if group is not None else res[0]

    def crosses(self, na, nb, link: int) -> np.ndarray:
        """Which routes (na[i] -> nb[i]) use the flat link `link` (an up or down link of a subtree)."""
        sizes = self._sizes()
        total = sum(sizes)
        down, rest = divmod(int(link), total)
        m = int(np.searchsorted(np.cumsum(sizes), rest, side="right"))
        g = rest - (sum(sizes[:m]))
        ends = np.asarray(nb if down else na)
        return (self.first_diff(na, nb) <= m) & (self.groups[ends, m] == g)

    def global_share(self):
        """(K, G): the loads of the global links (link_kinds "global", in link_loads' order)
        are P.ravel() @ K, P the G x G bytes between the top-level subtrees: a subtree's
        bytes to the others leave by its uplinks, spread evenly over them. The link
        balancing moves ranks between subtrees and scores each move on P alone."""
        import scipy.sparse as sp
        G = self._sizes()[0]
        g, h = np.divmod(np.arange(G * G), G)
        g, h = g[g != h], h[g != h]
        cap = self._capacity(0, G)
        return sp.csr_matrix((np.concatenate([1 / cap[g], 1 / cap[h]]),
                              (np.concatenate([g * G + h] * 2), np.concatenate([g, G + h]))),
                             shape=(G * G, 2 * G)), G

    def link_kinds(self) -> np.ndarray:
        """Per entry of link_loads: "global" for the links into the top switch, "injection"
        for the nodes' own links, "switch" in between."""
        k = self.groups.shape[1]
        kinds = ["global" if m == 0 else "injection" if m == k - 1 else "switch" for m in range(k)]
        per = np.concatenate([np.full(size, kinds[m], dtype=object) for m, size in enumerate(self._sizes())])
        return np.concatenate([per, per])

    @classmethod
    def from_paths(cls, hosts: list[str], paths: dict, prefix: str = "switch", label: str = "") -> "SwitchTree":
        """An irregular tree from each host's groups, top to bottom (Slurm's switches or
        blocks). Levels every host shares (a single top switch) are dropped; a host with a
        shorter path than the others keeps its lowest group on the missing levels."""
        missing = [h for h in hosts if h not in paths]
        if missing:
            raise UserError(f"the network description places no switch above host {missing[0]}"
                            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
        cols, names, virtual = [], [], []
        for _, ids, uniq in cls._path_levels(hosts, paths):
            cols.append(ids)
            names.append([k[-1] for k in uniq])
            # a group whose path repeats its last switch is a shorter path's padding
            virtual.append(np.array([len(k) > 1 and k[-1] == k[-2] for k in uniq], dtype=bool))
        cols.append(np.arange(len(hosts), dtype=np.int64))
        names.append(list(hosts))
        groups = np.stack(cols, axis=1)
        pad = np.zeros(len(hosts), dtype=np.int64)
        for m, v in enumerate(virtual):
            pad += v[groups[:, m]]
        arities = []
        for m in range(groups.shape[1]):
            parent = groups[:, m - 1] if m else np.zeros(len(hosts), np.int64)
            pairs = np.unique(np.stack([parent, groups[:, m]], axis=1), axis=0)
            arities.append(int(np.bincount(pairs[:, 0]).max()))
        return cls(arities=tuple(arities), groups=groups, prefix=prefix, label=label, names=names,
                   pad=pad if pad.any() else None, virtual=virtual if pad.any() else None)

    @staticmethod
    def _path_levels(hosts: list[str], paths: dict) -> list:
        """from_paths's levels, top to bottom: (switches from the top that define it, each
        host's group id, the groups' paths)."""
        depth = max((len(paths[h]) for h in hosts), default=0)
        rows = []
        for h in hosts:
            p = list(paths[h])
            if not p:
                p = ["(none)"]
            rows.append(p + [p[-1]] * (depth - len(p)))
        out = []
        for m in range(depth):
            keys = [tuple(r[:m + 1]) for r in rows]          # a group is its whole path from the top
            uniq: dict = {}
            ids = np.array([uniq.setdefault(k, len(uniq)) for k in keys], dtype=np.int64)
            if len(uniq) > 1:                                 # every host under one switch: not a level
                out.append((m + 1, ids, uniq))
        return out

    @classmethod
    def level_costs_for(cls, hosts: list[str], sub: list[str], paths: dict, costs: list) -> list:
        """The switch levels' costs (top to bottom) of the tree from_paths builds on the hosts
        `sub`, from those of the tree on `hosts` (with the node's own levels after them, kept
        as they are): a pair of sub's hosts first parted at some depth of their paths costs
        the same in both. (sub's tree drops the levels its hosts share and may be shallower.)"""
        full = [d for d, _, _ in cls._path_levels(hosts, paths)]
        mine = [d for d, _, _ in cls._path_levels(sub, paths)]
        out = []
        for j, d in enumerate(mine):
            stop = mine[j + 1] if j + 1 < len(mine) else float("inf")
            out.append(sum(c for c, fd in zip(costs, full) if d <= fd < stop))
        return out + list(costs[len(full):])


@dataclass
class Dragonfly(Hierarchy):
    """G groups of A routers, P nodes on each router. The routers of a group are joined
    all-to-all by local links; groups are joined all-to-all by global links: the link from
    group g to group t sits on router t mod A of group g (SimGrid's DRAGONFLY arrangement:
    router j of each group holds the link to group j), `global_links` parallel links per
    pair of groups and `local_links` per pair of routers.

    Routes (Cray Cascade, SimGrid): minimal — the source router, a local hop to the router
    holding the link to the destination group, the global link, a local hop to the
    destination router; valiant — through a random intermediate group (each of the other
    G - 2 groups carries an equal share), which spreads adversarial traffic over all
    global links at the price of two global hops. Traffic within a group takes its
    direct local link either way."""
    shape: tuple             # (G, A, P)
    coords: np.ndarray       # (nodes, 3): group, router within the group, node on the router
    global_links: int = 1
    local_links: int = 1
    routing: str = "minimal"

    groups: np.ndarray = field(init=False, repr=False)

    kind = "dragonfly"

    def __post_init__(self):
        A = self.shape[1]
        c = self.coords
        self.groups = np.stack([c[:, 0], c[:, 0] * A + c[:, 1], np.arange(len(c))], axis=1).astype(np.int64)

    @property
    def level_names(self) -> list[str]:
        return ["group", "router", "node"]

    def describe(self) -> str:
        G, A, P = self.shape
        extra = f", {self.global_links} links per group pair" if self.global_links != 1 else ""
        return f"dragonfly {G} groups x {A} routers x {P} nodes ({self.routing} routing{extra})"

    def subset(self, nodes) -> "Dragonfly":
        from dataclasses import replace
        return replace(self, coords=self.coords[np.asarray(nodes)])

    def hops(self, na, nb) -> np.ndarray:
        """Links on the minimal route, the nodes' own links included. Up to
        FIRST_DIFF_TABLE_NODES nodes read from a table of every pair, built once (the link
        balancing scores each candidate move's hop-bytes: 1.5 of a 10^4-rank mapping's 3.8 s
        in the per-pair arithmetic below)."""
        n = len(self.coords)
        if n <= FIRST_DIFF_TABLE_NODES:
            cached = self.__dict__.get("_hops_table")
            if cached is None or cached[0] is not self.coords:
                idx = np.arange(n)
                table = self._hops(np.repeat(idx, n), np.tile(idx, n)).astype(np.int8).reshape(n, n)
                cached = self.__dict__["_hops_table"] = (self.coords, table)
            return cached[1][np.asarray(na), np.asarray(nb)].astype(np.int64)
        return self._hops(na, nb)

    def _hops(self, na, nb) -> np.ndarray:
        A = self.shape[1]
        a, b = self.coords[np.asarray(na)], self.coords[np.asarray(nb)]
        same_node = np.asarray(na) == np.asarray(nb)
        same_group = a[:, 0] == b[:, 0]
        same_router = same_group & (a[:, 1] == b[:, 1])
        inter = 3 + (a[:, 1] != b[:, 0] % A) + (b[:, 1] != a[:, 0] % A)
        h = np.where(same_router, 2, np.where(same_group, 3, inter))
        return np.where(same_node, 0, h).astype(np.int64)

    # flat link layout: node->router (N), router->node (N), local (G*A*A: group, from, to),
    # global (G*G: from group, to group)
    def _layout(self, nnodes: int):
        G, A, _ = self.shape
        return 2 * nnodes, 2 * nnodes + G * A * A

    def _legs(self, gs, rs, gd, rd):
        """The local and global links of minimal routes between routers (gs, rs) and (gd, rd),
        as flat indices past the injection links: yields (mask, index) per link kind taken."""
        G, A, _ = self.shape
        other = gs != gd
        r1 = np.where(other, gd % A, rd)                 # where the source group's part of the route ends
        m = rs != r1
        yield "local", m, (gs * A + rs) * A + r1
        yield "global", other, gs * G + gd
        r2 = gs % A                                      # where the route enters the destination group
        m2 = other & (r2 != rd)
        yield "local", m2, (gd * A + r2) * A + rd

    def _segments(self, na, nb):
        """Every link of every route (na[i] -> nb[i], node indices): yields (i, link, share)
        arrays — route i puts `share` of its bytes on flat link `link`."""
        G, A, _ = self.shape
        na, nb = np.asarray(na), np.asarray(nb)
        n = len(self.coords)
        loc0, glob0 = self._layout(n)
        i = np.flatnonzero(na != nb)
        one = np.ones(len(i))
        yield i, na[i], one
        yield i, n + nb[i], one
        a, b = self.coords[na[i]], self.coords[nb[i]]
        gs, rs, gd, rd = a[:, 0], a[:, 1], b[:, 0], b[:, 1]

        def legs(idx, gs, rs, gd, rd, share):
            for kind, mask, flat in self._legs(gs, rs, gd, rd):
                base, mult = (loc0, self.local_links) if kind == "local" else (glob0, self.global_links)
                yield idx[mask], base + flat[mask], share[mask] / mult

        if self.routing != "valiant" or G < 3:
            yield from legs(i, gs, rs, gd, rd, one)
            return
        inside = gs == gd
        yield from legs(i[inside], gs[inside], rs[inside], gd[inside], rd[inside], one[inside])
        o = ~inside
        i, gs, rs, gd, rd = i[o], gs[o], rs[o], gd[o], rd[o]
        share = np.full(len(i), 1.0 / (G - 2))
        for mid in range(G):
            via = (gs != mid) & (gd != mid)
            if not via.any():
                continue
            midg = np.full(int(via.sum()), mid)
            entry = gs[via] % A                              # the router where the route enters group mid
            yield from legs(i[via], gs[via], rs[via], midg, entry, share[via])
            yield from legs(i[via], midg, entry, gd[via], rd[via], share[via])

    def link_loads(self, na, nb, w, group: np.ndarray | None = None, ngroups: int = 1,
                   injection: bool = True, numpy_only: bool = False) -> np.ndarray:
        """Bytes per link (flat layout above); with `group`, shape (ngroups, links).
        injection=False: without the nodes' own links (the first 2 x nodes entries). One pass
        in C (refine.dragonfly_loads: the link balancing routes every candidate move, 9 of a
        10^4-rank mapping's 10 s in numpy); numpy_only: the numpy passes (the tests' reference)."""
        G, A, _ = self.shape
        w = np.asarray(w, dtype=np.float64)
        ng = ngroups if group is not None else 1
        if not numpy_only:
            from rankmap.mapper import refine       # (refine imports this module)
            out = refine.dragonfly_loads(self, na, nb, w, group, ng)
        else:
            grp = np.zeros(len(w), dtype=np.int64) if group is None else np.asarray(group)
            size = self._layout(len(self.coords))[1] + G * G
            out = np.zeros(ng * size)
            for i, link, share in self._segments(na, nb):
                out += np.bincount(grp[i] * size + link, weights=w[i] * share, minlength=ng * size)
            out = out.reshape(ng, size)
        if not injection:
            out = out[:, 2 * len(self.coords):]
        return out if group is not None else out[0]

    def crosses(self, na, nb, link: int) -> np.ndarray:
        """Which routes (na[i] -> nb[i]) put bytes on the flat link `link`."""
        hit = np.zeros(len(na), bool)
        for i, lk, _ in self._segments(na, nb):
            hit[i[lk == link]] = True
        return hit

    def global_share(self):
        """(K, G): the global links' loads (link_kinds "global": from group, to group) are
        P.ravel() @ K, P the G x G bytes between groups: minimal routes take the pair's own
        links; Valiant routes give each of the other G - 2 groups an equal share, two global
        hops through it."""
        import scipy.sparse as sp
        G = self.shape[0]
        g, h = np.divmod(np.arange(G * G), G)
        g, h = g[g != h], h[g != h]
        if self.routing != "valiant" or G < 3:
            return sp.csr_matrix((np.full(len(g), 1.0 / self.global_links), (g * G + h, g * G + h)),
                                 shape=(G * G, G * G)), G
        g, h, mid = np.repeat(g, G), np.repeat(h, G), np.tile(np.arange(G), len(g))
        via = (mid != g) & (mid != h)
        g, h, mid = g[via], h[via], mid[via]
        share = np.full(2 * len(g), 1.0 / ((G - 2) * self.global_links))
        return sp.csr_matrix((share, (np.concatenate([g * G + h] * 2), np.concatenate([g * G + mid, mid * G + h]))),
                             shape=(G * G, G * G)), G

    def link_kinds(self) -> np.ndarray:
        G, A, _ = self.shape
        n = len(self.coords)
        return np.concatenate([np.full(2 * n, "injection", dtype=object), np.full(G * A * A, "local", dtype=object),
                               np.full(G * G, "global", dtype=object)])

    def link_count(self) -> int:
        G, A, _ = self.shape
        return 2 * len(self.coords) + G * A * (A - 1) + G * (G - 1)


def torus_from(dims_text: str, hosts: list[str], coords_file: str | dict | None, mesh: bool = False,
               wrap: tuple | None = None) -> Torus:
    """coords_file: a file (`host x y z` lines), a {host: [x, y, z]} mapping, or None.
    wrap: per dimension, ring (True) or line (False); default all rings (all lines for a mesh)."""
    dims = parse_dims(dims_text, "mesh" if mesh else "torus")
    if wrap is None:
        wrap = tuple([not mesh] * len(dims))
    if len(wrap) != len(dims):
        raise UserError(f"the wrap-around pattern has {len(wrap)} entries for {len(dims)} dimensions")
    n = len(hosts)
    if isinstance(coords_file, dict):
        missing = [h for h in hosts if h not in coords_file]
        if missing:
            raise UserError(f"no torus coordinates for host {missing[0]}")
        # a tuple or a numpy row as well as machine.json's lists (a script's own coordinates)
        rows = [list(c) if isinstance(c, (tuple, np.ndarray)) else c for c in (coords_file[h] for h in hosts)]
        if any(not isinstance(c, list) or len(c) != len(dims) for c in rows):
            raise UserError(f"torus coordinates: each host needs a list of {len(dims)} whole numbers")
        coords = np.array([[validate.integer(x, "torus coordinates", f"{h}", 0, float_form=False) for x in c]
                           for h, c in zip(hosts, rows)], dtype=np.int64).reshape(n, len(dims))
        if (coords >= np.array(dims)).any():
            raise UserError(f"torus coordinates do not fit a {'x'.join(map(str, dims))} torus")
    elif coords_file:
        coords = _read_coords(Path(coords_file), hosts, dims)
    else:
        if n > int(np.prod(dims)):
            raise UserError(f"{n} nodes do not fit a {'x'.join(map(str, dims))} {'mesh' if mesh else 'torus'} "
                            f"({int(np.prod(dims))} positions): give a larger shape, or fewer nodes")
        idx = np.arange(n)
        coords = np.zeros((n, len(dims)), dtype=np.int64)
        for d, size in enumerate(dims):
            coords[:, d] = idx % size
            idx = idx // size
    pos = Torus(dims, tuple(wrap), coords).pos(coords)
    if len(set(pos.tolist())) != n:
        where = f"{coords_file}: " if isinstance(coords_file, str) else ""
        first: dict = {}
        for h, q, c in zip(hosts, pos.tolist(), coords.tolist()):      # which two, where (a typo in one line)
            if q in first:
                raise UserError(f"{where}hosts {first[q]} and {h} have the same torus coordinates "
                                f"{' '.join(map(str, c))}; each node has a place of its own")
            first[q] = h
    return Torus(dims=dims, wrap=tuple(bool(x) for x in wrap), coords=coords)


def _read_coords(path: Path, hosts: list[str], dims) -> np.ndarray:
    lines = validate.read_text(path, "coordinate file").splitlines()
    where = {}
    for lineno, ln in enumerate(lines, 1):
        ln = ln.split("#", 1)[0].strip()
        if not ln:
            continue
        f = ln.split()
        if len(f) != len(dims) + 1:
            raise UserError(f"{path}:{lineno}: expected 'host' and {len(dims)} coordinates")
        c = [validate.integer(x, f"{path}:{lineno}", "coordinate", float_form=False) for x in f[1:]]
        if any(not 0 <= x < s for x, s in zip(c, dims)):
            raise UserError(f"{path}:{lineno}: coordinates {c} outside the {'x'.join(map(str, dims))} torus")
        if f[0] in where:
            raise UserError(f"{path}:{lineno}: host {f[0]} has coordinates already")
        where[f[0]] = c
    missing = [h for h in hosts if h not in where]
    if missing:
        raise UserError(f"{path}: no coordinates for host {missing[0]}" +
                        (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return np.array([where[h] for h in hosts], dtype=np.int64)


def switch_tree(arities_text: str, nodes: int, oversub: str | None = None,
                positions: np.ndarray | None = None) -> SwitchTree:
    """A regular tree (`4x8`: 4 leaf switches of 8 nodes), optionally oversubscribed:
    `oversub` is one ratio (the leaf switches) or one per switch level below the top,
    top to bottom (`2x1`...). positions: each node's place in the full tree (default the
    node order)."""
    ar = parse_dims(arities_text, "switch tree")
    if int(np.prod(ar)) < nodes:
        raise UserError(f"a switch tree {arities_text} holds {int(np.prod(ar))} nodes, fewer than {nodes}")
    idx = np.arange(nodes) if positions is None else np.asarray(positions, dtype=np.int64)
    if len(idx) and (idx.min() < 0 or idx.max() >= int(np.prod(ar)) or len(np.unique(idx)) != len(idx)):
        raise UserError(f"node positions do not fit a switch tree {arities_text} (or two nodes share one)")
    groups = np.stack([idx // int(np.prod(ar[lvl + 1:])) for lvl in range(len(ar))], axis=1).astype(np.int64)
    uplinks = None
    if oversub:
        try:
            ratios = [float(x) for x in oversub.lower().replace(":1", "").replace("*", "x").split("x")]
        except ValueError:
            raise UserError(f"bad oversubscription {oversub!r}; expected e.g. 2 or 1x2 (one ratio per switch "
                            "level below the top, top to bottom)") from None
        if len(ar) == 1:
            raise UserError(f"oversubscription {oversub!r}: a 1-level fat tree ({arities_text}: one switch) has no "
                            "uplinks to oversubscribe; drop :oversub=, or give the levels (e.g. fat-tree:2x4:oversub=2)")
        if len(ratios) == 1:
            ratios = [1.0] * (len(ar) - 2) + ratios
        if len(ratios) != len(ar) - 1 or any(not np.isfinite(r) or r < 1 for r in ratios):
            raise UserError(f"oversubscription {oversub!r}: give {len(ar) - 1} ratio(s) >= 1 for a {len(ar)}-level "
                            "tree (or one, for the leaf switches)")
        links = [1.0]                                   # per node: its own link
        for m in range(len(ar) - 2, -1, -1):            # group level m: its children's links / the ratio
            if ratios[m] > ar[m + 1] * links[-1]:
                # less than one link up (of a node's speed) is not a fat tree (1e300 made the
                # link loads overflow to inf)
                raise UserError(f"oversubscription {oversub!r}: {ratios[m]:g}:1 leaves a switch of {ar[m + 1]} "
                                f"children less than one link up; at most {ar[m + 1] * links[-1]:g}:1 there")
            links.append(ar[m + 1] * links[-1] / ratios[m])
        uplinks = [np.array(x) for x in reversed(links)]
    return SwitchTree(arities=ar, groups=groups, uplinks=uplinks)


def simgrid_fat_tree(params: str) -> tuple[tuple, list]:
    """SimGrid's FAT_TREE parameters "levels;down,...;up,...;count,..." (level 1 = leaf
    switches first) as rankmap's arities (top to bottom) and uplinks per group level: a
    subtree rooted at level l holds prod(up_1..up_l) switches of that level, each with
    up_{l+1} parents joined by count_{l+1} links."""
    try:
        parts = params.split(";")
        levels = int(parts[0])
        down = [int(x) for x in parts[1].split(",")]
        up = [int(x) for x in parts[2].split(",")]
        cnt = [int(x) for x in parts[3].split(",")]
    except (ValueError, IndexError):
        raise UserError(f"bad fat tree {params!r}; expected SimGrid's 'levels;down,...;up,...;count,...' "
                        "such as 2;8,4;1,2;1,1") from None
    if len(parts) != 4 or levels < 1 or not (len(down) == len(up) == len(cnt) == levels) or min(down + up + cnt) < 1:
        raise UserError(f"bad fat tree {params!r}: each list needs {levels} positive numbers")
    if max(math.prod(down), math.prod(up), math.prod(cnt)) > validate.MAX_NET_POSITIONS:
        raise UserError(f"fat tree {params!r}: more than {validate.MAX_NET_POSITIONS} nodes, switches or links")
    arities = tuple(reversed(down))
    uplinks = []
    for m in range(levels):                              # group level m is rooted at SimGrid level l
        l = levels - 1 - m
        uplinks.append(np.array(float(math.prod(up[:l + 1]) * cnt[l])))
    return arities, uplinks


class FatTreeRoutes:
    """SimGrid's own routes on its FAT_TREE cluster (FatTreeZone, SimGrid 3.32), for
    `rankmap predict`: which directed link and which switch every route takes.

    SimGrid builds the PGFT "levels;down,...;up,...;count,..." (level 1 = leaf switches):
    a node or switch of level l has up_{l+1} x count_{l+1} parent ports, and is labelled by
    one digit per level (lowest first; digit i counts parents, up_{i+1}, below the node's
    level and children, down_{i+1}, from it). A route climbs to the lowest switch above
    both ends, choosing at each level the parent port (d / prod of the ports below) mod
    (ports here) with d the destination's position (d-mod-k: all traffic to one node takes
    the same uplink), and descends on the cable of the source's position mod count
    (with FatTreeZone's scan continuing from the last child it took, as the code does).
    With the cluster's limiter_link set, every switch gets a limiter too: everything a
    switch passes, up or down and both ways, shares one link of that bandwidth, like a
    node's (the route pushes the limiter of each node and switch it visits, once).

    Link ids: per child level l (0 = the nodes' own links), per child position, per port;
    loads are separate per direction (SPLITDUPLEX). Limiter ids: the nodes' positions,
    then the switches level by level."""

    def __init__(self, params: str):
        parts = params.split(";")
        self.levels = int(parts[0])
        self.down, self.up, self.cnt = ([int(x) for x in parts[k].split(",")] for k in (1, 2, 3))
        L = self.levels
        self.per_level = [math.prod(self.down)]                 # nodes, then switches of each level
        for i in range(L):
            self.per_level.append(math.prod(self.up[:i + 1]) * math.prod(self.down[i + 1:]))
        self.ports = [self.up[i] * self.cnt[i] for i in range(L)]
        self.link_off = np.concatenate([[0], np.cumsum([self.per_level[i] * self.ports[i] for i in range(L)])])
        self.nlinks = int(self.link_off[-1])
        self.lim_off = np.concatenate([[0], np.cumsum(self.per_level)])
        self.nlimiters = int(self.lim_off[-1])

    def _radices(self, level: int) -> list[int]:
        return [self.up[j] if j < level else self.down[j] for j in range(self.levels)]

    def _position(self, label: np.ndarray, level: int) -> np.ndarray:
        pos = np.zeros(len(label), dtype=np.int64)
        mul = 1
        for j, r in enumerate(self._radices(level)):
            pos += label[:, j] * mul
            mul *= r
        return pos

    def _label(self, pos: np.ndarray) -> np.ndarray:
        out = np.zeros((len(pos), self.levels), dtype=np.int64)
        p = np.asarray(pos, dtype=np.int64).copy()
        for j, r in enumerate(self.down):
            out[:, j] = p % r
            p //= r
        return out

    def segments(self, spos: np.ndarray, dpos: np.ndarray):
        """Routes spos[i] -> dpos[i] (node positions, spos != dpos): (route indices, link ids,
        direction 0 up / 1 down) per link taken, and (route indices, limiter ids) per limiter."""
        spos, dpos = np.asarray(spos, dtype=np.int64), np.asarray(dpos, dtype=np.int64)
        S, D = self._label(spos), self._label(dpos)
        n, L = len(spos), self.levels
        diff = S != D
        top = np.where(diff.any(axis=1), L - np.argmax(diff[:, ::-1], axis=1), 0)   # level of the turning switch
        idx = np.arange(n)
        links, lims = [], [(idx, spos), (idx, dpos)]
        cur = S.copy()
        below = 1
        for lv in range(L):                                      # up: from level lv to lv + 1
            go = np.flatnonzero(top > lv)
            if len(go):
                d = (dpos[go] // below) % self.ports[lv]
                child = self._position(cur[go], lv)
                if lv:
                    lims.append((go, self.lim_off[lv] + child))
                links.append((go, self.link_off[lv] + child * self.ports[lv] + d, 0))
                cur[go, lv] = d % self.up[lv]
            below *= self.ports[lv]
        prev = np.full(n, -1, dtype=np.int64)                    # FatTreeZone's child scan, carried down
        for lv in range(L, 0, -1):                               # down: from level lv to lv - 1
            go = np.flatnonzero(top >= lv)
            if not len(go):
                continue
            lims.append((go, self.lim_off[lv] + self._position(cur[go], lv)))
            k, size = self.down[lv - 1], self.down[lv - 1] * self.cnt[lv - 1]
            fresh = (spos[go] % self.cnt[lv - 1]) * k
            start = np.where(prev[go] < 0, fresh, prev[go] + 1)
            i = start + np.mod(D[go, lv - 1] - start, k)
            i = np.where(i < size, i, fresh + D[go, lv - 1])
            prev[go] = i
            port = cur[go, lv - 1] + (i // k) * self.up[lv - 1]  # the child's port to this switch
            cur[go, lv - 1] = D[go, lv - 1]
            child = self._position(cur[go], lv - 1)
            links.append((go, self.link_off[lv - 1] + child * self.ports[lv - 1] + port, 1))
        return links, lims

    def loads(self, spos: np.ndarray, dpos: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Bytes per directed link (shape (2, links): up, down) and per limiter."""
        w = np.asarray(w, dtype=np.float64)
        links, lims = self.segments(spos, dpos)
        lk = np.zeros((2, self.nlinks))
        for i, ids, direction in links:
            lk[direction] += np.bincount(ids, weights=w[i], minlength=self.nlinks)
        lm = np.zeros(self.nlimiters)
        for i, ids in lims:
            lm += np.bincount(ids, weights=w[i], minlength=self.nlimiters)
        return lk, lm


KINDS = ("torus", "mesh", "tofu", "fat-tree", "dragonfly", "slurm")


def parse_spec(text: str) -> dict:
    """`--network SPEC` as a dict: {"kind": ..., parameters}. Kinds: torus, mesh, tofu,
    fat-tree, dragonfly, slurm (see the module's docstring)."""
    raw = text.strip()
    kind, _, rest = raw.partition(":")
    kind = kind.lower()
    if kind == "slurm":
        if ":" in raw and not rest.strip():
            raise UserError(f"--network {text!r}: names no topology.conf; give --network slurm:FILE, or --network "
                            "slurm to ask `scontrol show topology`")
        return {"kind": "slurm", "file": rest or None}
    if not rest:
        raise UserError(f"--network {text!r}: expected KIND:SHAPE, e.g. fat-tree:4x8, dragonfly:9x8x4, "
                        "torus:4x4x4x2x3x2:wrap=111010, tofu:2x3x2, slurm")
    if kind == "fat-tree" and ";" in rest:
        return {"kind": "fat-tree", "simgrid": rest}
    shape, *opts = rest.split(":")
    keys = {}
    for o in opts:
        k, eq, v = o.partition("=")
        if not eq and keys and list(keys)[-1] == "oversub" and o.strip().replace(".", "", 1).isdigit():
            # the usual notation of a ratio, 2:1, split at its colon: "not '1'" said nothing of it
            r = keys["oversub"]
            raise UserError(f"--network {text!r}: oversub={r}:{o} is written oversub={r} (the ratio {r}:1; a list "
                            "per level is 1x2, top to bottom)")
        if not eq or not v:
            raise UserError(f"--network {text!r}: expected key=value after the shape, not {o!r}")
        if k.strip().lower() in keys:
            raise UserError(f"--network {text!r}: {k.strip()}= given twice; give it once")
        keys[k.strip().lower()] = v.strip()
    allowed = {"torus": {"wrap"}, "mesh": set(), "tofu": set(), "fat-tree": {"oversub"},
               "dragonfly": {"global", "local", "routing"}}
    if kind not in allowed:
        raise UserError(f"--network {text!r}: unknown kind {kind!r}; choose torus, mesh, tofu, fat-tree, dragonfly "
                        "or slurm")
    bad = sorted(set(keys) - allowed[kind])
    if bad:
        raise UserError(f"--network {text!r}: {kind} takes no {bad[0]!r}" +
                        (f" (options: {', '.join(sorted(allowed[kind]))})" if allowed[kind] else ""))
    try:
        dims = parse_dims(shape, kind)
    except UserError as e:
        raise UserError(f"--network {text!r}: {e}") from None
    out = {"kind": kind, "shape": "x".join(map(str, dims))}
    if kind == "torus" and "wrap" in keys:
        w = keys["wrap"]
        if len(w) != len(dims) or set(w) - {"0", "1"}:
            raise UserError(f"--network {text!r}: wrap= needs one 1 (ring) or 0 (line) per dimension, e.g. 111010")
        out["wrap"] = w
    if kind == "tofu":
        if len(dims) != 3:
            raise UserError(f"--network {text!r}: tofu takes the X x Y x Z extent (the a, b, c unit is 2x3x2)")
        out = {"kind": "torus", "shape": "x".join(map(str, dims + (2, 3, 2))), "wrap": "111010"}
    if kind == "fat-tree":
        if "oversub" in keys:
            out["oversub"] = keys["oversub"]
    if kind == "dragonfly":
        if len(dims) != 3:
            raise UserError(f"--network {text!r}: dragonfly takes GROUPSxROUTERSxNODES (nodes per router)")
        G, A, _ = dims
        if G * A * A + G * G > validate.MAX_NET_POSITIONS:
            # the link loads keep every router pair of a group and every pair of groups
            raise UserError(f"--network {text!r}: {G} groups of {A} routers have {G * A * A + G * G} local and global "
                            f"router-to-router entries (groups x routers^2 + groups^2); at most "
                            f"{validate.MAX_NET_POSITIONS}")
        for k in ("global", "local"):
            if k in keys:
                try:
                    out[k] = int(keys[k])
                except ValueError:
                    out[k] = 0
                if out[k] < 1 or out[k] > MAX_PARALLEL_LINKS:
                    raise UserError(f"--network {text!r}: {k}= is a number of parallel links, 1 to "
                                    f"{MAX_PARALLEL_LINKS}")
        r = keys.get("routing", "minimal").lower()
        if r not in ("minimal", "valiant"):
            raise UserError(f"--network {text!r}: routing is minimal or valiant, not {r!r}")
        out["routing"] = r
    return out


def from_spec(spec: dict | str, hosts: list[str], coords: dict | str | None = None):
    """The network a spec (parse_spec's dict, or the text) describes for these hosts.
    coords: torus coordinates (a file or {host: [...]}); for trees and dragonflies
    {host: [position]} / {host: [group, router, node]} keeps nodes where they are when a
    machine is reduced to some of its hosts."""
    if isinstance(spec, str):
        spec = parse_spec(spec)
    kind = spec.get("kind")
    n = len(hosts)
    if kind in ("torus", "mesh"):
        wrap = tuple(c == "1" for c in spec["wrap"]) if spec.get("wrap") else None
        return torus_from(spec["shape"], hosts, coords, mesh=kind == "mesh", wrap=wrap)
    if kind in ("switches", "blocks"):
        if coords:
            raise UserError("--coords places nodes in a torus or mesh; Slurm's switches or blocks place them "
                            "(--network slurm): drop --coords")
        return SwitchTree.from_paths(hosts, spec["paths"], prefix="block" if kind == "blocks" else "switch",
                                     label=spec.get("label", ""))
    pos = None
    if isinstance(coords, dict):
        missing = [h for h in hosts if h not in coords]
        if missing:
            raise UserError(f"no network position for host {missing[0]}")
        pos = np.array([coords[h] for h in hosts], dtype=np.int64).reshape(n, -1)
    elif coords:
        raise UserError("--coords is for tori and meshes; place nodes in a fat tree or dragonfly by node order")
    if kind == "fat-tree":
        if spec.get("simgrid"):
            ar, uplinks = simgrid_fat_tree(spec["simgrid"])
            t = switch_tree("x".join(map(str, ar)), n, positions=None if pos is None else pos[:, 0])
            t = SwitchTree(arities=t.arities, groups=t.groups, uplinks=uplinks, simgrid=spec["simgrid"])
            t.label = f"fat tree {'x'.join(map(str, ar))}{t._oversub_text()} (SimGrid {spec['simgrid']})"
            return t
        # a fat tree without :oversub= is not oversubscribed: as many links up as down at every
        # level (one link per subtree, the plain tree of --switch-tree, was this spec's model:
        # 8:1 at 4x8's leaves, so that declaring 2:1 made the network look faster)
        over = spec.get("oversub") or ("1" if len(parse_dims(spec["shape"], "fat tree")) > 1 else None)
        return switch_tree(spec["shape"], n, over, positions=None if pos is None else pos[:, 0])
    if kind == "dragonfly":
        G, A, P = parse_dims(spec["shape"], "dragonfly")
        if n > G * A * P:
            raise UserError(f"{n} nodes do not fit a dragonfly of {G} groups x {A} routers x {P} nodes")
        if pos is None:
            idx = np.arange(n)
            pos = np.stack([idx // (A * P), (idx // P) % A, idx % P], axis=1)
        if pos.shape[1] != 3 or (pos < 0).any() or (pos >= np.array([G, A, P])).any():
            raise UserError("dragonfly positions must be [group, router, node] within the shape")
        if len(np.unique(pos, axis=0)) != n:
            raise UserError("two nodes share one dragonfly position")
        return Dragonfly(shape=(G, A, P), coords=pos, global_links=int(spec.get("global") or 1),
                         local_links=int(spec.get("local") or 1), routing=spec.get("routing") or "minimal")
    raise UserError(f"unknown network kind {kind!r}")


def positions(net) -> np.ndarray | None:
    """Each node's place in a tree or dragonfly, to freeze into a machine description."""
    if isinstance(net, Dragonfly):
        return net.coords
    if isinstance(net, SwitchTree) and net.names is None:
        return net.groups[:, -1:]          # a regular tree's last level is the node's index in the full tree
    return None
