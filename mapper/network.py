"""Networks between nodes: a torus or mesh with dimension-order routing, or a switch tree.

Torus coordinates come from a file (one line per node: `host x y z ...`, # comments) or,
by default, from the node order with the first dimension fastest (node id = x + X*y +
X*Y*z, the convention of SimGrid's torus clusters). Routes are dimension-order (lowest
dimension first), the shorter way around each ring; a tie on an even ring goes the
positive way. Links are directed and full-duplex: each direction is its own link."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from profiler.errors import UserError


def parse_dims(text: str, what: str = "torus") -> tuple[int, ...]:
    try:
        dims = tuple(int(x) for x in text.lower().replace("*", "x").split("x"))
    except ValueError:
        raise UserError(f"bad {what} dimensions {text!r}; expected e.g. 3x3x4") from None
    if not dims or any(d < 1 for d in dims):
        raise UserError(f"bad {what} dimensions {text!r}: each must be >= 1")
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
        k = "torus" if all(self.wrap) else "mesh" if not any(self.wrap) else "torus/mesh"
        return f"{'x'.join(map(str, self.dims))} {k}"

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
            if self.wrap[d]:
                fwd = np.mod(delta, size)
                s = np.where(fwd <= size - fwd, fwd, fwd - size)   # tie: positive way
            else:
                s = delta
            out.append(s)
        return out

    def hops(self, na: np.ndarray, nb: np.ndarray) -> np.ndarray:
        """Links on the route between node indices na and nb."""
        a, b = self.coords[na], self.coords[nb]
        return sum(np.abs(s) for s in self._steps(a, b)).astype(np.int64)

    def link_loads(self, na: np.ndarray, nb: np.ndarray, w: np.ndarray, group: np.ndarray | None = None,
                   ngroups: int = 1) -> np.ndarray:
        """Bytes per directed link, shape (positions, ndims, 2): [pos, dim, 0] is the link
        leaving pos in the + direction, [pos, dim, 1] in the - direction. With `group`, one
        such array per group of routes: shape (ngroups, positions, ndims, 2)."""
        if group is None:   # one group: the same walk
            return self.link_loads(na, nb, w, np.zeros(len(na), dtype=np.int64), 1)[0]
        loads = np.zeros((ngroups, self.positions, len(self.dims), 2))
        cur = self.coords[na].copy()
        steps = self._steps(cur, self.coords[nb])
        w = np.asarray(w, dtype=np.float64)
        for d, size in enumerate(self.dims):
            s = steps[d].copy()
            while True:
                act = s != 0
                if not act.any():
                    break
                np.add.at(loads, (group[act], self.pos(cur[act]), d, (s[act] < 0).astype(np.int64)), w[act])
                move = np.where(s[act] > 0, 1, -1)
                cur_d = cur[act, d] + move
                if self.wrap[d]:
                    cur_d %= size
                cur[np.flatnonzero(act), d] = cur_d
                s[act] -= move
        return loads

    def crosses(self, na: np.ndarray, nb: np.ndarray, link: int) -> np.ndarray:
        """Which routes (na[i] -> nb[i]) use the directed link with flat index `link`."""
        pos_l, rest = divmod(int(link), len(self.dims) * 2)
        d_l, dir_l = divmod(rest, 2)
        cur = self.coords[na].copy()
        steps = self._steps(cur, self.coords[nb])
        hit = np.zeros(len(na), bool)
        for d, size in enumerate(self.dims):
            s = steps[d].copy()
            while True:
                act = s != 0
                if not act.any():
                    break
                if d == d_l:
                    p = self.pos(cur[act])
                    direction = (s[act] < 0).astype(np.int64)
                    idx = np.flatnonzero(act)
                    hit[idx[(p == pos_l) & (direction == dir_l)]] = True
                move = np.where(s[act] > 0, 1, -1)
                cur_d = cur[act, d] + move
                if self.wrap[d]:
                    cur_d %= size
                cur[np.flatnonzero(act), d] = cur_d
                s[act] -= move
        return hit

    def link_count(self) -> int:
        n = 0
        for d, size in enumerate(self.dims):
            if size == 1:
                continue
            per_ring = size if (self.wrap[d] and size > 2) else size - 1
            n += 2 * per_ring * (self.positions // size)
        return n


@dataclass
class SwitchTree:
    """Nodes under a tree of switches. arities top to bottom: (2, 18) is a top switch over
    two leaf switches of 18 nodes. groups[i, l] = i // prod(arities[l+1:]) is node i's
    subtree at level l; the last level is the node itself."""
    arities: tuple
    groups: np.ndarray       # (nodes, levels)

    kind = "tree"

    def describe(self) -> str:
        return "switch tree " + "x".join(map(str, self.arities))

    def first_diff(self, na, nb) -> np.ndarray:
        ga, gb = self.groups[na], self.groups[nb]
        return np.cumprod(ga == gb, axis=1).sum(axis=1)   # = levels shared from the top

    def hops(self, na, nb) -> np.ndarray:
        """Links on the route: up to the lowest common switch and down again."""
        return (2 * (self.groups.shape[1] - self.first_diff(na, nb))).astype(np.int64)

    def link_loads(self, na, nb, w) -> np.ndarray:
        """Bytes per directed link to a parent: [level][group] up, then the same down,
        flattened (level by level, up links first)."""
        k = self.groups.shape[1]
        l = self.first_diff(na, nb)
        w = np.asarray(w, dtype=np.float64)
        up, down = [], []
        for m in range(k):
            size = int(self.groups[:, m].max()) + 1
            u, d = np.zeros(size), np.zeros(size)
            mask = l <= m
            np.add.at(u, self.groups[np.asarray(na)[mask], m], w[mask])
            np.add.at(d, self.groups[np.asarray(nb)[mask], m], w[mask])
            up.append(u), down.append(d)
        return np.concatenate(up + down)


def torus_from(dims_text: str, hosts: list[str], coords_file: str | dict | None, mesh: bool = False) -> Torus:
    """coords_file: a file (`host x y z` lines), a {host: [x, y, z]} mapping, or None."""
    dims = parse_dims(dims_text, "mesh" if mesh else "torus")
    n = len(hosts)
    if isinstance(coords_file, dict):
        missing = [h for h in hosts if h not in coords_file]
        if missing:
            raise UserError(f"no torus coordinates for host {missing[0]}")
        coords = np.array([coords_file[h] for h in hosts], dtype=np.int64)
        if coords.shape[1] != len(dims) or (coords < 0).any() or (coords >= np.array(dims)).any():
            raise UserError(f"torus coordinates do not fit a {'x'.join(map(str, dims))} torus")
    elif coords_file:
        coords = _read_coords(Path(coords_file), hosts, dims)
    else:
        if n > int(np.prod(dims)):
            raise UserError(f"{n} nodes do not fit a {'x'.join(map(str, dims))} torus")
        idx = np.arange(n)
        coords = np.zeros((n, len(dims)), dtype=np.int64)
        for d, size in enumerate(dims):
            coords[:, d] = idx % size
            idx = idx // size
    pos = Torus(dims, tuple([not mesh] * len(dims)), coords).pos(coords)
    if len(set(pos.tolist())) != n:
        raise UserError("two nodes share the same torus coordinates")
    return Torus(dims=dims, wrap=tuple([not mesh] * len(dims)), coords=coords)


def _read_coords(path: Path, hosts: list[str], dims) -> np.ndarray:
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise UserError(f"{path}: {e.strerror}") from None
    where = {}
    for lineno, ln in enumerate(lines, 1):
        ln = ln.split("#", 1)[0].strip()
        if not ln:
            continue
        f = ln.split()
        if len(f) != len(dims) + 1:
            raise UserError(f"{path}:{lineno}: expected 'host' and {len(dims)} coordinates")
        try:
            c = [int(x) for x in f[1:]]
        except ValueError:
            raise UserError(f"{path}:{lineno}: coordinates must be integers") from None
        if any(not 0 <= x < s for x, s in zip(c, dims)):
            raise UserError(f"{path}:{lineno}: coordinates {c} outside the {'x'.join(map(str, dims))} torus")
        where[f[0]] = c
    missing = [h for h in hosts if h not in where]
    if missing:
        raise UserError(f"{path}: no coordinates for host {missing[0]}" +
                        (f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""))
    return np.array([where[h] for h in hosts], dtype=np.int64)


def switch_tree(arities_text: str, nodes: int) -> SwitchTree:
    ar = parse_dims(arities_text, "switch tree")
    if int(np.prod(ar)) < nodes:
        raise UserError(f"a switch tree {arities_text} holds {int(np.prod(ar))} nodes, fewer than {nodes}")
    idx = np.arange(nodes)
    groups = np.stack([idx // int(np.prod(ar[lvl + 1:])) for lvl in range(len(ar))], axis=1).astype(np.int64)
    return SwitchTree(arities=ar, groups=groups)
