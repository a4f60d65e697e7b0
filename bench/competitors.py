"""The published mappers rankmap is measured against, run live on rankmap's own inputs.

    from competitors import NAMES, available, map_with, cost
    slot_of_rank = map_with("sharedmap-strong", W, machine, seed=0, imbalance=0.0)

W is the symmetric traffic (scipy.sparse CSR, W_ij = bytes between i and j in both
directions, zero diagonal); `machine` is rankmap's Machine. Every adapter returns one slot of
the machine per rank (np.int64, no slot used twice). With imbalance 0 each core takes at most
as many ranks as it has slots and the parts are as even as the partitioner can make them
(one rank per core when the machine is full); with imbalance > 0 a core may take up to
(1 + imbalance) x its even share, never more than the slots the machine was built with
(`--oversubscribe`): that is how a graph of many vertices per core (the process-mapping
literature's benchmark) is given. Whatever a competitor returns that does not fit (a core
over its slots) is moved to the nearest free slot (same socket, node, switch, ... first) and
counted in `info["repaired"]`. `cost()` is rankmap's own cost function (the C code the mapper
optimises, TreeMatch SUM_COM; on a torus per hop), so every mapper is scored by one function.

Competitors (all single-threaded unless stated; versions from `versions()`):

  sharedmap-fast/eco/strong  SharedMap (PyPI chszlablib, Decomposition.process_map), the
                             serial configuration (threads=1): strong = kaffpa strong per
                             subproblem. Gets a hierarchy a_1:...:a_l with one distance per
                             level (below).
  kahip-ms-fast/eco/strong   KaHIP kaffpa (PyPI kahip) per level of the same hierarchy,
                             top down (hierarchical multisection, the algorithm of KaHIP's
                             global_multisection), imbalance 0 per level (with imbalance e > 0:
                             SharedMap's adaptive per-level share of e). PyPI kahip 3.25 only
                             exposes kaffpa: KaHIP's own global_multisection and
                             kaffpa --enable_mapping are not in it.
  mtkahypar-ms               Mt-KaHyPar (PyPI mtkahypar) per level of the hierarchy, preset
                             DEFAULT, objective cut, epsilon 0 (as kahip-ms).
  mtkahypar-map(-q)          Mt-KaHyPar's process mapping onto a target graph (Steiner-tree
                             metric), preset DEFAULT (-q: QUALITY). Its Steiner-tree table is
                             limited to 64 target vertices: with at most 64 cores the target is
                             the cores with the machine's exact distances; with more cores but
                             at most 64 nodes, two phases (map onto the nodes with their
                             capacities, then each node's share onto its cores); beyond, n/a.
  scotch                     Scotch's scotch_gmap (Debian scotch 7.0.3), default quality
                             strategy, balance enforced (-cqb, -b = imbalance), deterministic
                             (-Cd); seeds renumber the graph. Target: a `tleaf` with the exact
                             per-level distances on plain trees; otherwise (tori, heterogeneous
                             nodes) a raw decomposition-defined target ('deco 0') written here:
                             the cores bisected along the hierarchy, terminal weight = slots per
                             core, the exact cost of every core pair (up to 4096 cores; beyond,
                             a `tleaf` with the hierarchy's mean distances). (amk_grf's own
                             decompositions of a machine graph cut the cheap links first and
                             gave Scotch far worse targets.)
  treematch                  TreeMatch's algorithm (Jeannot & Mercier), written here: bottom-up
                             over the hierarchy, each level's arity split into prime factors
                             (TreeMatch's arity optimisation), units grouped by heaviest
                             affinity (locally dominant merges: greedy heavy-edge matching
                             for arity 2), the affinity aggregated, next level; leftovers
                             and dummy vertices (fewer ranks than slots) fill the last groups.
  block                      rank i on slot i (Slurm's default order); with imbalance > 0
                             the ranks are spread evenly over the cores in order.

The hierarchy (sharedmap, kahip-ms, mtkahypar-ms, treematch): levels top to bottom, each
with one arity and one distance = the mean of the machine's costs of the core pairs that
first differ at that level (exact on trees). Trees: the machine's own levels (switches,
nodes, packages, NUMA nodes, cores; levels of arity 1 dropped). Tori (complete): the nodes
split recursively into equal sub-tori (the longest dimension by its smallest prime factor),
one level per split. Heterogeneous nodes: virtual nodes of g cores (g = gcd of the nodes'
core counts, consecutive cores of a node), the levels above that are not uniform merged into
their parent. `hierarchy(machine).what` says what was given. Exact distances: `exact`.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import scipy.sparse as sp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from rankmap.mapper import backends as _backends  # noqa: E402
from rankmap.mapper import bottomup as _bottomup  # noqa: E402
from rankmap.mapper.graph import Graph as _Graph  # noqa: E402
from rankmap.mapper.machine import Machine  # noqa: E402
from rankmap.mapper.network import SwitchTree, Torus  # noqa: E402

try:
    from rankmap.mapper.network import Hierarchy as _NetTree   # switch trees, dragonflies (groups per level)
except ImportError:   # pragma: no cover
    _NetTree = SwitchTree
from rankmap.mapper.refine import Problem as _Problem  # noqa: E402

NAMES = ("sharedmap-fast", "sharedmap-eco", "sharedmap-strong",
         "kahip-ms-fast", "kahip-ms-eco", "kahip-ms-strong",
         "mtkahypar-ms", "mtkahypar-map", "mtkahypar-map-q",
         "scotch", "treematch", "block")

MTKAHYPAR_THREADS = 1          # Mt-KaHyPar's thread pool is set once per process
MTKAHYPAR_MAX_TARGET = 64      # its Steiner-tree precomputation refuses larger target graphs
TM_EXHAUSTIVE = 30000          # TreeMatch groups exhaustively up to this many candidate groups
SCOTCH_DECO_MAX = 4096         # a 'deco 0' target stores a distance per core pair
INT_LIMIT = 2 ** 30            # sum of the integer edge weights handed to 32-bit partitioners
MAX_DEGREE = 1000              # largest weighted degree handed to them (see int_weights)


class Unavailable(RuntimeError):
    """The competitor cannot take this instance (the message says why)."""


# ----------------------------------------------------------------------------- availability

def _probe(name: str) -> str | None:
    try:
        if name.startswith("sharedmap"):
            from chszlablib import Decomposition  # noqa: F401
        elif name.startswith("kahip"):
            import kahip  # noqa: F401
        elif name.startswith("mtkahypar"):
            import mtkahypar  # noqa: F401
        elif name == "scotch":
            for tool in ("scotch_gmap",):
                if shutil.which(tool) is None:
                    return f"{tool} not found (Debian package scotch)"
    except ImportError as e:
        return f"not installed ({e}); pip install '.[bench]'"
    return None


def available() -> dict:
    """name -> None when it runs here, else the reason it does not."""
    return {n: _probe(n) for n in NAMES}


@lru_cache(maxsize=None)
def versions() -> dict:
    out = {}
    try:
        from importlib.metadata import version
        for pkg in ("chszlablib", "kahip", "mtkahypar"):
            try:
                out[pkg] = version(pkg)
            except Exception:
                out[pkg] = "not installed"
    except ImportError:   # pragma: no cover
        pass
    if shutil.which("scotch_gmap"):
        res = subprocess.run(["scotch_gmap", "-V"], capture_output=True, text=True)
        first = (res.stdout + res.stderr).strip().splitlines()
        out["scotch"] = first[0].split("version", 1)[-1].strip() if first else "?"
    else:
        out["scotch"] = "not installed"
    return out


# what each benchmark reads of a recorded row and of each mapper's entry in it (a recording
# of another version of the benchmark ended the run in a KeyError traceback)
RECORDED = {"records": (("instance", "mappers"), ("status", "cost", "seconds", "why")),
            "rows": (("graph", "hierarchy", "mappers"), ("status", "J", "seconds", "why"))}


def recording(path: str, rows: str) -> dict:
    """An earlier --json run of a benchmark (--competitors-from), checked: readable JSON with
    its list of `rows`, recorded with the competitors' versions installed now, each row and
    each mapper's entry with the fields the benchmark reads (one line and exit otherwise)."""
    try:
        old = json.loads(Path(path).read_text())
    except OSError as e:
        sys.exit(f"--competitors-from {path}: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError) as e:
        sys.exit(f"--competitors-from {path}: not JSON ({e}); give a file written by --json")
    if not isinstance(old, dict) or not isinstance(old.get(rows), list):
        sys.exit(f"--competitors-from {path}: not a recording of this benchmark (no '{rows}' list); "
                 "give a file written by its --json")
    if old.get("versions") != versions():
        sys.exit(f"--competitors-from {path}: recorded with {old.get('versions')}, installed {versions()}: "
                 "run the competitors again")
    row_keys, entry_keys = RECORDED[rows]
    for i, r in enumerate(old[rows]):
        missing = [k for k in row_keys if not isinstance(r, dict) or k not in r]
        if not missing and not isinstance(r["mappers"], dict):
            missing = ["mappers (a dict)"]
        for name, e in ({} if missing else r["mappers"]).items():
            # the cost (J) only where the mapper succeeded: a timeout has none
            missing += [f"{k} of {name}" for k in entry_keys if not isinstance(e, dict) or
                        (k not in e and (k not in ("cost", "J") or e.get("status") == "ok"))]
        if missing:
            sys.exit(f"--competitors-from {path}: its {rows} entry {i + 1} has no {', '.join(missing[:3])} (a file "
                     "of another version of this benchmark?); give a file written by its --json, or run the "
                     "competitors again")
    return old


def output_problem(files: list) -> str | None:
    """What is wrong with a benchmark's output files [(option, path or None)] (None: nothing),
    checked before anything runs: a
    path in a missing directory ended the run in a traceback when it was written, after the
    first instance (--json) or the whole run (--csv, --markdown), the results lost; two
    options naming one file kept only the last one written."""
    seen = {}
    for opt, path in files:
        if not path:
            continue
        p = Path(path)
        where = p.parent
        if p.is_dir():
            return f"{opt} {path}: a directory; name the file to write"
        if not where.is_dir():
            return f"{opt} {path}: {where} is no directory; create it first or name a file elsewhere"
        if not os.access(where, os.W_OK):
            return f"{opt} {path}: cannot write in {where} (read-only or not yours); name a file elsewhere"
        key = os.path.realpath(p)
        if key in seen:
            return f"{opt} {path}: also given to {seen[key]}; each output needs its own file"
        seen[key] = opt
    return None


# ----------------------------------------------------------------------------- scoring

def cost(W: sp.spmatrix, machine: Machine, slot: np.ndarray) -> float:
    """rankmap's cost (the C function its search minimises): sum over pairs i<j of
    W_ij x cost(slot_i, slot_j), TreeMatch's accumulated level costs, per hop on a torus."""
    return problem(W, machine).cost(np.asarray(slot, dtype=np.int64))


def problem(W: sp.spmatrix, machine: Machine):
    """rankmap's Problem for W (reuse it to score several mappings of one instance)."""
    return _Problem(_Graph(W=_clean(W)), machine)


def _clean(W) -> sp.csr_matrix:
    W = sp.csr_matrix(W, dtype=np.float64)
    if (W != W.T).nnz:
        W = W + W.T
    W.setdiag(0)
    W.eliminate_zeros()
    W.sort_indices()
    return W


# ----------------------------------------------------------------------------- the machine as PEs

@dataclass
class Cores:
    """The machine's cores (processing elements): slots sharing a core cost 0 to each other."""
    of_slot: np.ndarray      # slot -> core index
    ptr: np.ndarray          # core c's slots: slots[ptr[c]:ptr[c+1]] (slot order)
    slots: np.ndarray
    rep: np.ndarray          # first slot of each core
    node: np.ndarray         # node of each core

    @property
    def k(self) -> int:
        return len(self.rep)

    @property
    def cap(self) -> np.ndarray:
        return np.diff(self.ptr)


def cores_of(machine: Machine) -> Cores:
    last = machine.lvl[:, -1]
    _, first, inv = np.unique(last, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")       # cores in slot order
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    of_slot = rank[inv.ravel()].astype(np.int64)
    slots = np.argsort(of_slot, kind="stable").astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(np.bincount(of_slot, minlength=len(order)))]).astype(np.int64)
    rep = slots[ptr[:-1]]
    return Cores(of_slot=of_slot, ptr=ptr, slots=slots, rep=rep, node=machine.slot_node[rep])


@dataclass
class Hier:
    arities: list            # top to bottom
    dist: list               # per level: mean cost of two cores first differing there
    names: list
    pe_core: np.ndarray      # PE index (mixed radix, top level most significant) -> core
    exact: bool
    what: str

    @property
    def k(self) -> int:
        return len(self.pe_core)


def _nest(cols: list) -> list:
    """Columns of group ids made nested (a group id is unique across parents)."""
    out, prev = [], None
    for c in cols:
        c = np.asarray(c, dtype=np.int64)
        if prev is None:
            _, new = np.unique(c, return_inverse=True)
        else:
            _, new = np.unique(np.stack([prev, c], axis=1), axis=0, return_inverse=True)
        prev = new.ravel().astype(np.int64)
        out.append(prev)
    return out


def _children_counts(parent: np.ndarray, child: np.ndarray) -> np.ndarray:
    pairs = np.unique(np.stack([parent, child], axis=1), axis=0)
    return np.bincount(pairs[:, 0])


def _torus_digits(net: Torus, node: np.ndarray):
    """Recursive equal split of the torus: (columns of digits per core, names, description)."""
    ext = list(net.dims)
    cols, names, parts = [], [], []
    coords = net.coords[node]
    while max(ext) > 1:
        d = int(np.argmax(ext))
        e = ext[d]
        p = next(q for q in range(2, e + 1) if e % q == 0)
        ext[d] = e // p
        cols.append((coords[:, d] // ext[d]) % p)
        names.append(f"torus-d{d}/{p}")
        parts.append(str(p))
    return cols, names, "x".join(parts)


def hierarchy(machine: Machine) -> Hier:
    """The closest uniform hierarchy to the machine (see the module notes)."""
    cache = getattr(machine, "_bench_hier", None)
    if cache is not None:
        return cache
    cores = cores_of(machine)
    node = cores.node
    L = machine.lvl.shape[1]
    nl = machine.node_level
    per_node = np.bincount(node, minlength=machine.nnodes)
    homogeneous = len({t.spec for t in machine.topos}) == 1 and len(set(per_node.tolist())) == 1
    notes = []
    cols, names = [], []
    net = machine.network
    # the network above the nodes
    if isinstance(net, _NetTree):
        lnames = getattr(net, "level_names", None) or [f"switch{i}" for i in range(net.groups.shape[1] - 1)]
        for lv in range(net.groups.shape[1] - 1):
            cols.append(net.groups[node, lv])
            names.append(lnames[lv])
    elif isinstance(net, Torus):
        if machine.nnodes == int(np.prod(net.dims)):
            tc, tn, desc = _torus_digits(net, node)
            cols += tc
            names += tn
            notes.append(f"torus {'x'.join(map(str, net.dims))} as nested sub-tori (arities {desc})")
        else:
            notes.append("torus not complete: nodes given as one flat level")
    # the nodes, and inside them
    if homogeneous:
        cols.append(node)
        names.append("node")
        for lv in range(nl + 1, L):
            cols.append(machine.lvl[cores.rep, lv])
            names.append(machine.level_names[lv])
    else:
        g = int(np.gcd.reduce(per_node[per_node > 0]))
        within = np.arange(cores.k) - np.concatenate([[0], np.cumsum(per_node)])[node]   # cores in slot order
        cols.append(node * (int(per_node.max()) + 1) + within // g)
        names.append("vnode")
        cols.append(np.arange(cores.k))
        names.append("core")
        notes.append(f"heterogeneous nodes ({'/'.join(map(str, sorted(set(per_node.tolist()))))} cores): "
                     f"virtual nodes of {g} cores")
    cols = _nest(cols)
    # make it uniform: a level whose parents have different numbers of children merges its
    # parent level away; levels of arity 1 go
    while True:
        changed = False
        for j in range(len(cols)):
            counts = _children_counts(cols[j - 1], cols[j]) if j else np.array([len(np.unique(cols[0]))])
            if j and len(set(counts.tolist())) > 1:
                notes.append(f"level {names[j - 1]} not uniform: merged into its parent")
                del cols[j - 1], names[j - 1]
                changed = True
                break
            if counts[0] == 1 and len(cols) > 1:
                del cols[j], names[j]
                changed = True
                break
        if not changed:
            break
    arities = [len(np.unique(cols[0]))] + [int(_children_counts(cols[j - 1], cols[j])[0]) for j in range(1, len(cols))]
    order = np.lexsort(tuple(reversed(cols)))
    pe_core = order.astype(np.int64)
    # digits of each PE, and the mean cost per level from sampled pairs
    rng = np.random.default_rng(12345)
    k = len(pe_core)
    radix = np.array(arities, dtype=np.int64)
    mult = np.concatenate([np.cumprod(radix[::-1])[::-1][1:], [1]])
    dist, exact = [], True
    for j, a in enumerate(arities):
        m = 4096
        if a < 2:
            dist.append(0.0)
            continue
        pa = rng.integers(0, k, size=m)
        digits = (pa[:, None] // mult[None, :]) % radix[None, :]
        nd = digits.copy()
        nd[:, j] = (digits[:, j] + rng.integers(1, a, size=m)) % a
        nd[:, j + 1:] = rng.integers(0, radix[j + 1:], size=(m, len(arities) - j - 1)) if j + 1 < len(arities) else nd[:, j + 1:]
        pb = (nd * mult).sum(axis=1)
        d = machine.distance(cores.rep[pe_core[pa]], cores.rep[pe_core[pb]])
        dist.append(float(d.mean()))
        if d.max() - d.min() > 1e-9 * max(1.0, d.max()):
            exact = False
    what = (f"hierarchy {' x '.join(f'{a} {n}' for a, n in zip(arities, names))} (top down), distances "
            + "/".join(f"{d:.6g}" for d in dist) + (" (exact)" if exact else " (means of the machine's costs)"))
    if notes:
        what += "; " + "; ".join(notes)
    h = Hier(arities=arities, dist=dist, names=names, pe_core=pe_core, exact=exact, what=what)
    try:
        machine._bench_hier = h
    except AttributeError:   # pragma: no cover
        pass
    return h


# ----------------------------------------------------------------------------- cores -> slots

def assign_slots(core_of_rank: np.ndarray, machine: Machine, cores: Cores | None = None):
    """One slot per rank from a core per rank; ranks over a core's slots go to the nearest
    free slot (same lowest group first). Returns (slot_of_rank, number moved)."""
    cores = cores or cores_of(machine)
    core_of_rank = np.asarray(core_of_rank, dtype=np.int64)
    n = len(core_of_rank)
    if n > machine.nslots:
        raise ValueError(f"{n} ranks do not fit {machine.nslots} slots")
    order = np.argsort(core_of_rank, kind="stable")
    sc = core_of_rank[order]
    start = np.searchsorted(sc, sc)
    within = np.arange(n) - start
    cap = cores.cap[sc]
    slot = np.full(n, -1, dtype=np.int64)
    ok = within < cap
    slot[order[ok]] = cores.slots[cores.ptr[sc[ok]] + within[ok]]
    over = order[~ok]
    moved = len(over)
    if moved:
        used = np.zeros(machine.nslots, bool)
        used[slot[slot >= 0]] = True
        free = np.flatnonzero(~used)
        want = cores.rep[core_of_rank[over]]
        cols = [machine.lvl[:, c] for c in range(machine.lvl.shape[1] - 1, -1, -1)]
        cols.append(np.zeros(machine.nslots, dtype=np.int64))
        for col in cols:
            if not len(over):
                break
            fg = col[free]
            fo = np.argsort(fg, kind="stable")
            fgs, frees = fg[fo], free[fo]
            og = col[want]
            oo = np.argsort(og, kind="stable")
            ogs = og[oo]
            oi = np.arange(len(ogs)) - np.searchsorted(ogs, ogs)
            lo = np.searchsorted(fgs, ogs)
            cnt = np.searchsorted(fgs, ogs, side="right") - lo
            take = oi < cnt
            chosen = frees[(lo + oi)[take]]
            slot[over[oo[take]]] = chosen
            keep = np.ones(len(free), bool)
            keep[np.searchsorted(free, np.sort(chosen))] = False
            free = free[keep]
            rest = np.sort(oo[~take])
            over, want = over[rest], want[rest]
    return slot, moved


def _core_of_slot(machine: Machine, slot: np.ndarray) -> np.ndarray:
    return cores_of(machine).of_slot[slot]


# ----------------------------------------------------------------------------- graph handover

def int_weights(W: sp.csr_matrix, limit: float = INT_LIMIT, maxdeg: float = MAX_DEGREE) -> np.ndarray:
    """Integer edge weights >= 1 for 32-bit partitioners: unchanged when they are integers
    whose total fits `limit` and whose largest weighted degree fits `maxdeg`, else scaled to
    fit both (ratios kept, the smallest weights rounded up to 1). With imbalance 0, kaffpa and
    SharedMap slow down with the weights' magnitude (SharedMap fast on a 10^4-rank stencil,
    312 x 2 x 16 cores: 50 s with degrees scaled to 100, 118 s to 1000, over 300 s to 10^5)
    and SharedMap's 32-bit cost overflows; the quality measured at 1k ranks did not depend
    on the scale (differences of +-1 % either way, seed noise)."""
    d = W.data
    if not len(d):
        return np.zeros(0, np.int64)
    total = float(d.sum())
    deg = float(np.bincount(np.repeat(np.arange(W.shape[0]), np.diff(W.indptr)), weights=d).max())
    if total <= limit and deg <= maxdeg and np.all(d == np.rint(d)) and d.min() >= 1:
        return d.astype(np.int64)
    s = min(limit / total, maxdeg / deg)
    return np.maximum(1, np.rint(d * s)).astype(np.int64)


def _int_dist(dist, top: int | None = None) -> list:
    """Distances as integers with their ratios (top: largest value allowed)."""
    d = np.asarray(dist, dtype=float)
    if top is None:
        if np.all(d == np.rint(d)) and d.max() < 2 ** 20:
            return [int(x) for x in d]
        s = 1000.0 / d[d > 0].min()
        return [max(1, int(round(x * s))) for x in d]
    pos = d[d > 0]
    s = 1.0 / pos.min()
    r = max(1, math.floor(top / (d.max() * s)))
    return [int(round(x * s * r)) if x > 0 else 0 for x in d]


# ----------------------------------------------------------------------------- the adapters

def map_with(name: str, W, machine: Machine, seed: int = 0, imbalance: float = 0.0) -> np.ndarray:
    return map_with_info(name, W, machine, seed, imbalance)[0]


FRESH_ENV = "RANKMAP_BENCH_FRESH"     # set in the fresh interpreter of _fresh


def map_with_info(name: str, W, machine: Machine, seed: int = 0, imbalance: float = 0.0):
    """(slot_of_rank, info): info["received"] says what the competitor was given,
    info["repaired"] how many ranks had to move to a free slot. Mt-KaHyPar's competitors run
    in a fresh interpreter (info["wall_s"], info["cpu_s"]: the mapping's own time there)."""
    if name not in NAMES:
        raise ValueError(f"unknown competitor {name!r}; choose from {', '.join(NAMES)}")
    why = _probe(name)
    if why:
        raise Unavailable(why)
    if name.startswith("mtkahypar") and not os.environ.get(FRESH_ENV):
        return _fresh(name, W, machine, seed, imbalance)
    W = _clean(W)
    n = W.shape[0]
    if n > machine.nslots:
        raise ValueError(f"{n} ranks, {machine.nslots} slots")
    info = {"name": name, "repaired": 0}
    if name == "block":
        slot = _block(n, machine, imbalance)
        info["received"] = "rank order"
        return slot, info
    cores = cores_of(machine)
    if name.startswith("sharedmap"):
        core, info["received"] = _sharedmap(W, machine, seed, imbalance, name.split("-")[1])
    elif name.startswith("kahip-ms"):
        core, info["received"] = _multisection(W, machine, seed, imbalance, "kahip", name.split("-")[2])
    elif name == "mtkahypar-ms":
        core, info["received"] = _multisection(W, machine, seed, imbalance, "mtkahypar", "default")
    elif name.startswith("mtkahypar-map"):
        core, info["received"] = _mtk_map(W, machine, seed, imbalance, "quality" if name.endswith("-q") else "default")
    elif name == "scotch":
        core, info["received"] = _scotch(W, machine, seed, imbalance)
    elif name == "treematch":
        core, info["received"] = _treematch(W, machine, seed)
    else:   # pragma: no cover
        raise AssertionError(name)
    core = np.asarray(core, dtype=np.int64)
    slot, moved = assign_slots(core, machine, cores)
    info["repaired"] = int(moved)
    return slot, info


def _fresh(name: str, W, machine: Machine, seed: int, imbalance: float):
    """map_with_info in a fresh interpreter (rankmap's backends.fresh_call: Mt-KaHyPar's
    QUALITY and DEFAULT presets remember earlier calls, so in one process a competitor's
    mapping depended on the instances mapped before it)."""
    status, value = _backends.fresh_call("competitors", "_fresh_here", name, W, machine, seed, imbalance,
                                         env={FRESH_ENV: "1"})
    if status == "unavailable":
        raise Unavailable(value)
    if status == "error":
        raise RuntimeError(value)
    return value


def _fresh_here(name: str, W, machine: Machine, seed: int, imbalance: float):
    t0, c0 = time.perf_counter(), time.process_time()
    try:
        slot, info = map_with_info(name, W, machine, seed, imbalance)
        return "ok", (slot, dict(info, wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0))
    except Unavailable as e:
        return "unavailable", str(e)
    except Exception as e:      # noqa: BLE001 - reported by the caller as this competitor's failure
        return "error", f"{type(e).__name__}: {e}"


def _block(n: int, machine: Machine, imbalance: float) -> np.ndarray:
    if imbalance <= 0:
        return np.arange(n, dtype=np.int64)
    cores = cores_of(machine)
    core = (np.arange(n, dtype=np.int64) * cores.k) // n
    return assign_slots(core, machine, cores)[0]


# --- SharedMap

def _sharedmap(W, machine, seed, imbalance, mode):
    from chszlablib import Decomposition, Graph
    h = hierarchy(machine)
    dist = _int_dist(h.dist)
    g = Graph.from_csr(W.indptr.astype(np.int64), W.indices.astype(np.int32), edge_weights=int_weights(W))
    if len(h.arities) == 1 and h.arities[0] == 1:
        return np.full(W.shape[0], h.pe_core[0]), "one core"
    r = Decomposition.process_map(g, hierarchy=list(reversed(h.arities)), distance=list(reversed(dist)), mode=mode,
                                  imbalance=float(imbalance), threads=1, seed=int(seed))
    pe = np.asarray(r.assignment, dtype=np.int64)
    return h.pe_core[pe], (f"{h.what}; as SharedMap hierarchy {':'.join(map(str, reversed(h.arities)))} "
                           f"distances {':'.join(map(str, reversed(dist)))}, imbalance {imbalance:g}, threads 1, mode {mode}")


# --- per-level multisection (KaHIP kaffpa, Mt-KaHyPar)

_KAHIP_MODES = {"fast": 0, "eco": 1, "strong": 2}


def _part_kahip(mode):
    import kahip

    def part(sub: sp.csr_matrix, k: int, eps: float, seed: int) -> np.ndarray:
        vw = np.ones(sub.shape[0], dtype=np.int64)
        _, parts = kahip.kaffpa(vw.tolist(), sub.indptr.tolist(), int_weights(sub).tolist(), sub.indices.tolist(),
                                int(k), float(eps), True, int(seed), _KAHIP_MODES[mode])
        return np.asarray(parts, dtype=np.int64)
    return part


@lru_cache(maxsize=None)
def _mtk():
    import mtkahypar
    return mtkahypar.initialize(MTKAHYPAR_THREADS, False)


def _mtk_graph(ctx, sub: sp.csr_matrix, wmax_total: float = INT_LIMIT):
    upc = sp.triu(sub, k=1).tocsr()
    w = int_weights(upc, wmax_total) if upc.nnz else np.zeros(0, np.int64)
    up = upc.tocoo()
    return _mtk().create_graph(ctx, sub.shape[0], up.nnz, list(zip(up.row.tolist(), up.col.tolist())),
                               [1] * sub.shape[0], w.tolist())


def _part_mtk(preset_name):
    import mtkahypar

    def part(sub, k, eps, seed):
        preset = mtkahypar.PresetType.QUALITY if preset_name == "quality" else mtkahypar.PresetType.DEFAULT
        ctx = _mtk().context_from_preset(preset)
        ctx.set_partitioning_parameters(int(k), float(eps), mtkahypar.Objective.CUT)
        ctx.logging = False
        mtkahypar.set_seed(int(seed))
        g = _mtk_graph(ctx, sub)
        return np.asarray(g.partition(ctx).get_partition(), dtype=np.int64)
    return part


def _even_split(m: int, k: int) -> np.ndarray:
    return (np.arange(m) * k) // max(1, m)


def _split_children(sub: sp.csr_matrix, blk: np.ndarray, a: int) -> list:
    """The subgraphs induced by each block (one pass over the edges, not one slice per block)."""
    m = sub.shape[0]
    order = np.argsort(blk, kind="stable")
    start = np.searchsorted(blk[order], np.arange(a + 1))
    local = np.empty(m, dtype=np.int64)
    local[order] = np.arange(m) - start[blk[order]]
    c = sub.tocoo()
    keep = blk[c.row] == blk[c.col]
    r, q, w = c.row[keep], c.col[keep], c.data[keep]
    b = blk[r]
    eo = np.argsort(b, kind="stable")
    r, q, w, b = r[eo], q[eo], w[eo], b[eo]
    es = np.searchsorted(b, np.arange(a + 1))
    out = []
    for ch in range(a):
        size = int(start[ch + 1] - start[ch])
        lo, hi = es[ch], es[ch + 1]
        out.append((order[start[ch]:start[ch + 1]],
                    sp.csr_matrix((w[lo:hi], (local[r[lo:hi]], local[q[lo:hi]])), shape=(size, size))))
    return out


def multisection_pe(W: sp.csr_matrix, arities: list, cap_pe: int, imbalance: float, part, seed: int) -> np.ndarray:
    """Top-down multisection over uniform arities: the PE index (mixed radix) of every vertex.
    part(subgraph, k, eps, seed) -> block per vertex."""
    n = W.shape[0]
    K = int(np.prod(arities))
    below = [int(np.prod(arities[j + 1:])) for j in range(len(arities))]
    share = math.ceil(n / K)
    pe = np.zeros(n, dtype=np.int64)
    stack = [(np.arange(n), W.tocsr(), 0, 0)]
    calls = 0
    while stack:
        idx, sub, j, off = stack.pop()
        if j == len(arities) or len(idx) == 0:
            pe[idx] = off
            continue
        a = arities[j]
        if a == 1:
            stack.append((idx, sub, j + 1, off))
            continue
        m = len(idx)
        if m <= a:
            blk = np.arange(m)
        else:
            if imbalance > 0:
                left = len(arities) - j
                eps = max(0.0, ((1 + imbalance) * share * a * below[j] / m) ** (1.0 / left) - 1.0)
                eps = min(eps, max(0.0, cap_pe * below[j] * a / m - 1.0))
            else:
                eps = 0.0
            if sub.nnz == 0:
                blk = _even_split(m, a)
            else:
                blk = np.asarray(part(sub, a, eps, seed + calls), dtype=np.int64)
                calls += 1
        for c, (loc, child) in enumerate(_split_children(sub, blk, a)):
            stack.append((idx[loc], child, j + 1, off + c * below[j]))
    return pe


def _multisection(W, machine, seed, imbalance, lib, mode):
    h = hierarchy(machine)
    cap = int(cores_of(machine).cap.max())
    part = _part_kahip(mode) if lib == "kahip" else _part_mtk(mode)
    pe = multisection_pe(W, h.arities, cap, imbalance, part, seed)
    label = f"kaffpa {mode}" if lib == "kahip" else f"Mt-KaHyPar {mode.upper()}, {MTKAHYPAR_THREADS} thread(s)"
    return h.pe_core[pe], f"{h.what}; {label} per level, imbalance {'0' if imbalance <= 0 else 'adaptive share of %g' % imbalance}"


# --- Mt-KaHyPar process mapping (Steiner trees on a target graph)

def _mtk_map_onto(W, targets_rep, machine, caps, imbalance, preset_name, seed):
    """Map W onto the target vertices (slots `targets_rep`, capacities `caps`): block per vertex."""
    import mtkahypar
    k = len(targets_rep)
    n = W.shape[0]
    if k == 1:
        return np.zeros(n, dtype=np.int64)
    if n <= 1:
        return np.zeros(n, dtype=np.int64)
    a, b = np.triu_indices(k, 1)
    d = machine.distance(targets_rep[a], targets_rep[b])
    di = np.asarray(_int_dist(d, top=1000), dtype=np.int64)
    preset = mtkahypar.PresetType.QUALITY if preset_name == "quality" else mtkahypar.PresetType.DEFAULT
    ctx = _mtk().context_from_preset(preset)
    ctx.logging = False
    share = math.ceil(n / k)
    uniform = len(set(caps.tolist())) == 1
    if uniform:
        eps = float(imbalance)
        if caps[0] * k >= n:
            eps = min(eps, max(0.0, caps[0] / share - 1.0)) if imbalance > 0 else 0.0
        ctx.set_mapping_parameters(k, eps)
    else:
        ctx.set_mapping_parameters(k, 0.0)
        weights = np.floor(caps * (n / caps.sum()) * (1 + imbalance)).astype(np.int64)
        weights = np.minimum(np.maximum(weights, np.ceil(caps * n / caps.sum())), caps)
        ctx.set_individual_target_block_weights([int(x) for x in weights])
    mtkahypar.set_seed(int(seed))
    g = _mtk_graph(ctx, W, INT_LIMIT / max(1, int(di.max())))
    T = _mtk().create_target_graph(ctx, k, len(a), list(zip(a.tolist(), b.tolist())), di.tolist())
    return np.asarray(g.map_onto_graph(T, ctx).get_partition(), dtype=np.int64)


def _mtk_map(W, machine, seed, imbalance, preset):
    cores = cores_of(machine)
    n = W.shape[0]
    lim = MTKAHYPAR_MAX_TARGET
    if cores.k <= lim:
        blk = _mtk_map_onto(W, cores.rep, machine, cores.cap, imbalance, preset, seed)
        return blk, (f"target graph: the {cores.k} cores, complete, edge = the machine's cost (scaled to integers "
                     f"<= 1000), imbalance {imbalance:g}, preset {preset.upper()}, {MTKAHYPAR_THREADS} thread(s)")
    if machine.nnodes > lim:
        raise Unavailable(f"Mt-KaHyPar's Steiner-tree mapping takes at most {lim} target vertices; "
                          f"this machine has {cores.k} cores on {machine.nnodes} nodes")
    node_rep = np.array([cores.rep[cores.node == v][0] for v in range(machine.nnodes)])
    node_cap = np.array([cores.cap[cores.node == v].sum() for v in range(machine.nnodes)])
    if np.bincount(cores.node).max() > lim:
        raise Unavailable(f"nodes of more than {lim} cores")
    nb = _mtk_map_onto(W, node_rep, machine, node_cap, imbalance, preset, seed)
    out = np.empty(n, dtype=np.int64)
    for v in range(machine.nnodes):
        idx = np.flatnonzero(nb == v)
        if not len(idx):
            continue
        mine = np.flatnonzero(cores.node == v)
        sub = W[idx][:, idx].tocsr()
        blk = _mtk_map_onto(sub, cores.rep[mine], machine, cores.cap[mine], imbalance, preset, seed + 1 + v) \
            if sub.nnz else _even_split(len(idx), len(mine))
        out[idx] = mine[np.minimum(blk, len(mine) - 1)]
    return out, (f"two phases: target graph of the {machine.nnodes} nodes (machine's inter-node costs, capacities = "
                 f"their slots), then each node's vertices onto its cores (exact costs); imbalance {imbalance:g}, "
                 f"preset {preset.upper()}, {MTKAHYPAR_THREADS} thread(s)")


# --- Scotch

def _write_grf(path: Path, W: sp.csr_matrix, perm: np.ndarray) -> None:
    """Scotch source graph (edge weights), vertex v renamed perm[v]."""
    n = W.shape[0]
    w = int_weights(W)
    P = sp.csr_matrix((w.astype(np.float64), W.indices, W.indptr), shape=W.shape)
    Q = sp.csr_matrix((np.ones(n), (perm, np.arange(n))), shape=(n, n))   # new <- old
    R = (Q @ P @ Q.T).tocsr()
    R.sort_indices()
    deg = np.diff(R.indptr)
    with open(path, "w") as f:
        f.write(f"0\n{n} {R.nnz}\n0 010\n")
        data = R.data.astype(np.int64)
        parts = np.empty(2 * R.nnz, dtype=np.int64)
        parts[0::2] = data
        parts[1::2] = R.indices
        toks = parts.astype(str)
        for v in range(n):
            a, b = R.indptr[v], R.indptr[v + 1]
            f.write(f"{deg[v]} " + " ".join(toks[2 * a:2 * b]) + "\n")


def _deco_numbers(arities: list) -> np.ndarray:
    """Scotch decomposition numbers (root 1, children 2d and 2d+1) of the PEs when the PE
    range is bisected along the hierarchy (a group of c children splits c//2 : c - c//2)."""
    k = int(np.prod(arities))
    unit = [int(np.prod(arities[j + 1:])) for j in range(len(arities))]
    num = np.zeros(k, dtype=np.int64)
    stack = [(0, k, 0, 1)]
    while stack:
        lo, hi, j, d = stack.pop()
        if hi - lo == 1:
            num[lo] = d
            continue
        while (hi - lo) // unit[j] == 1:
            j += 1
        c = (hi - lo) // unit[j]
        mid = lo + (c // 2) * unit[j]
        stack.append((lo, mid, j, 2 * d))
        stack.append((mid, hi, j, 2 * d + 1))
    return num


def _scotch_target(machine: Machine, cores: Cores, work: Path):
    """(target file, terminal -> core, description). Plain trees: `tleaf` with the exact
    per-level distances. Otherwise up to SCOTCH_DECO_MAX cores: a raw decomposition-defined
    target ('deco 0') written here: the PEs bisected along the hierarchy, terminal weights =
    slots per core, every terminal pair's exact cost; beyond: `tleaf` of the hierarchy's mean
    distances."""
    h = hierarchy(machine)
    k = cores.k
    if (h.exact and not isinstance(machine.network, Torus)) or k > SCOTCH_DECO_MAX:
        dist = _int_dist(h.dist)
        spec = f"tleaf {len(h.arities)} " + " ".join(f"{a} {d}" for a, d in zip(h.arities, dist))
        (work / "t.tgt").write_text(spec + "\n")
        desc = spec if h.exact else f"{spec} (the hierarchy's mean distances: more than {SCOTCH_DECO_MAX} cores)"
        return work / "t.tgt", h.pe_core, desc
    num = _deco_numbers(h.arities)
    core = h.pe_core
    rep = cores.rep[core]
    # exact costs between terminals, as integers with their ratios
    lo = float(machine.distance(rep[:1], rep[1:2])[0]) if k > 1 else 1.0
    scale = None
    with open(work / "t.tgt", "w") as f:
        f.write(f"deco\n0\n{k} {int(num.max())}\n")
        caps = cores.cap[core]
        f.write("\n".join(f"{c} {w} {d}" for c, w, d in zip(core.tolist(), caps.tolist(), num.tolist())) + "\n")
        for i in range(1, k):
            d = machine.distance(np.full(i, rep[i]), rep[:i])
            if scale is None:
                pos = d[d > 0]
                base = pos.min() if len(pos) else lo
                scale = 1.0 if np.all(d == np.rint(d)) else 100.0 / base
            f.write(" ".join(np.maximum(1, np.rint(d * scale)).astype(np.int64).astype(str)) + "\n")
    return work / "t.tgt", np.arange(k, dtype=np.int64), \
        (f"raw decomposition-defined target ('deco 0') of the {k} cores: bisections along the {h.what.split(';')[0]}, "
         f"terminal weights = slots per core, the exact cost of every core pair")


def _scotch(W, machine, seed, imbalance):
    cores = cores_of(machine)
    n = W.shape[0]
    perm = np.arange(n) if seed == 0 else np.random.default_rng(seed).permutation(n)
    with tempfile.TemporaryDirectory(prefix="bench-scotch-") as d:
        work = Path(d)
        tgt, term_core, desc = _scotch_target(machine, cores, work)
        _write_grf(work / "g.grf", W, perm)
        bal0 = max(float(imbalance), 0.0)
        tried = []
        # -b0 segfaults on decomposition-defined targets (Scotch 7.0.3): then a tolerance of
        # 0.001 (with integer loads of a few ranks per core the same bound)
        for strat, bal in (("qb", bal0), ("qb", max(bal0, 1e-3)), ("q", max(bal0, 1e-3))):
            args = ["scotch_gmap", f"-c{strat}", f"-b{bal:g}", "-Cd", str(work / "g.grf"), str(tgt), str(work / "out.map")]
            res = subprocess.run(args, capture_output=True, text=True)
            if res.returncode == 0:
                break
            tried.append(f"-c{strat} -b{bal:g}: " + (res.stderr.strip().splitlines() or ["exit code %d" % res.returncode])[-1])
        else:
            raise RuntimeError("scotch_gmap failed: " + "; ".join(tried))
        vals = np.array((work / "out.map").read_text().split()[1:], dtype=np.int64).reshape(-1, 2)
    term = np.empty(n, dtype=np.int64)
    term[vals[:, 0]] = vals[:, 1]
    term = term[perm]
    note = f" (after {'; '.join(tried)})" if tried else ""
    return term_core[term], f"{desc}; scotch_gmap -c{strat} -b{bal:g} -Cd{note}"


# --- TreeMatch (bottom-up grouping)

# The grouping itself is the mapper's bottom-up start (rankmap.mapper.bottomup, one copy);
# the competitor differs in its hierarchy (hierarchy() above) and in matching pairs exactly
# up to TreeMatch's own bound (TM_EXHAUSTIVE), not the mapper's cheaper one.
tm_arity_steps = _bottomup.arity_steps


def group_units(A: sp.csr_matrix, p: int, rng) -> tuple:
    """Groups of exactly p units by heaviest affinity (bottomup.group_units), pairs matched
    exactly up to TreeMatch's bound."""
    return _bottomup.group_units(A, p, rng, TM_EXHAUSTIVE)


def treematch_positions(W: sp.csr_matrix, arities: list, nleaves: int, seed: int) -> np.ndarray:
    """Leaf position (mixed radix over `arities`, top most significant) of every vertex: the
    levels below the top grouped bottom up, the top level's units in order."""
    steps = [p for a in reversed(arities[1:]) for p in tm_arity_steps(a)]
    return _bottomup.positions(sp.csr_matrix(W), steps, nleaves, seed, TM_EXHAUSTIVE)[:W.shape[0]]


def _treematch(W, machine, seed):
    h = hierarchy(machine)
    cores = cores_of(machine)
    cap = int(cores.cap.max())
    ar = list(h.arities) + ([cap] if cap > 1 else [])
    leaves = int(np.prod(ar))
    pos = treematch_positions(W, ar, leaves, seed)
    pe = pos // cap if cap > 1 else pos
    return h.pe_core[pe], f"{h.what}" + (f"; {cap} slots per core as a last level" if cap > 1 else "")


def describe(name: str, machine: Machine) -> str:
    """What the competitor is given for this machine (without running it)."""
    if name == "block":
        return "rank order"
    h = hierarchy(machine)
    if name.startswith(("sharedmap", "kahip", "treematch", "mtkahypar-ms")):
        return h.what
    cores = cores_of(machine)
    if name.startswith("mtkahypar-map"):
        if cores.k <= MTKAHYPAR_MAX_TARGET:
            return f"target graph of the {cores.k} cores (exact costs)"
        if machine.nnodes <= MTKAHYPAR_MAX_TARGET:
            return f"two phases: the {machine.nnodes} nodes, then each node's cores"
        return f"n/a (> {MTKAHYPAR_MAX_TARGET} nodes)"
    if name == "scotch":
        if (h.exact and not isinstance(machine.network, Torus)) or cores.k > SCOTCH_DECO_MAX:
            return "tleaf " + " ".join(f"{a} {d}" for a, d in zip(h.arities, _int_dist(h.dist)))
        return "raw decomposition-defined target of the cores, exact costs"
    return ""
