"""Expand the collective table into pair traffic with an algorithm model.

A PMPI tool cannot see the messages a library's collective really sends (they depend
on size, placement and library), so the profiler records per communicator:
operation, root, size bucket, calls, bytes; this module turns each row into the
point-to-point pairs of a chosen algorithm.

Per-call size n (docs/formats.md): the message for bcast/reduce/allreduce/scan/exscan;
one rank's block for gather/scatter/allgather/reduce_scatter_block; one pair's block
for alltoall; the total for allgatherv/reduce_scatter.

Models (`--collectives MODEL`):
  auto                what Open MPI 4.1's coll/tuned picks, by operation, size and P, as
                      measured (see _auto; tests/test_collective_models.py re-checks it)
  binomial            binomial trees (allreduce = reduce + bcast, allgather = gather + bcast)
  recursive-doubling  recursive doubling / halving where it exists, binomial otherwise
  ring                ring / pipeline chains
  linear              everything through the root (flat)
  kchain[:K]          k chains into the root for reduce and out of it for bcast
                      (K = ceil(sqrt(P-1)) by default); others as auto
  smpi                SimGrid SMPI 3.32's default selector (what a replayed trace runs):
                      linear reduce, allreduce = linear reduce + binomial bcast, direct
                      allgather(v) and alltoall(v), binomial bcast, linear gather/scatter
  none                collectives are ignored
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from rankmap.profiler.errors import UserError

MODELS = ("auto", "binomial", "recursive-doubling", "ring", "linear", "kchain", "smpi", "none")


def parse_model(text: str) -> tuple[str, int | None]:
    name, sep, k = text.partition(":")
    if name not in MODELS:
        raise UserError(f"unknown collective model {text!r}; choose one of: {', '.join(MODELS)} (kchain:K)")
    if sep and not k.strip():      # 'kchain:$K' with K unset: the default K was used without a word
        raise UserError(f"{text!r}: nothing after ':' (an unset shell variable?); give kchain:K, or {name} alone")
    if k and name != "kchain":
        raise UserError(f"only kchain takes a parameter, not {name!r}")
    if k:
        try:
            kk = int(k)
        except ValueError:
            raise UserError(f"kchain:K needs an integer K, not {k!r}") from None
        if kk < 1:
            raise UserError("kchain:K needs K >= 1")
        return name, kk
    return name, None


# --------------------------------------------------------------------------- edge patterns
# Each returns (src, dst, frac, msgs) over virtual ranks 0..p-1 (0 = root): frac = bytes
# of the edge per call in units of n, msgs = messages per call.

def _e(src, dst, frac, msgs=None):
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    frac = np.broadcast_to(np.asarray(frac, dtype=np.float64), src.shape).copy()
    msgs = np.ones(src.shape, dtype=np.float64) if msgs is None else \
        np.broadcast_to(np.asarray(msgs, dtype=np.float64), src.shape).copy()
    return src, dst, frac, msgs


def _cat(*parts):
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(4))


def _rev(e):
    return e[1], e[0], e[2], e[3]


def _scale(e, f):
    return e[0], e[1], e[2] * f, e[3]


# Trees as parent arrays over virtual ranks (parent[0] = -1; parent[v] < v always).

def tree_parent(kind: str, p: int, k: int = 2) -> np.ndarray:
    v = np.arange(p, dtype=np.int64)
    par = np.full(p, -1, dtype=np.int64)
    if p <= 1:
        return par
    w = v[1:]
    if kind == "binomial":            # Open MPI's bmtree: clear the highest set bit
        par[1:] = w - (1 << np.floor(np.log2(w)).astype(np.int64))
    elif kind == "binomial-inorder":  # Open MPI's in-order bmtree: clear the lowest set bit
        par[1:] = w & (w - 1)
    elif kind == "knomial":           # clear the lowest non-zero base-k digit
        pw = np.ones_like(w)
        x = w.copy()
        while True:
            m = (x % k == 0)
            if not m.any():
                break
            x[m] //= k
            pw[m] *= k
        par[1:] = w - (x % k) * pw
    elif kind == "binary":            # Open MPI's binary tree: level l's i-th node under node i mod 2^(l-1) of level l-1
        lvl = np.floor(np.log2(w + 1)).astype(np.int64)
        start = (1 << lvl) - 1
        pstart = (1 << (lvl - 1)) - 1
        par[1:] = pstart + (w - start) % (1 << (lvl - 1))
    elif kind == "chain":
        par[1:] = w - 1
    elif kind == "linear":
        par[1:] = 0
    elif kind == "kchain":            # k chains hanging from the root (Kurnosov)
        k = max(1, min(k, p - 1))
        lens = np.full(k, (p - 1) // k)
        lens[: (p - 1) % k] += 1
        heads = 1 + np.concatenate([[0], np.cumsum(lens)[:-1]])
        par[1:] = w - 1
        par[heads] = 0
    else:
        raise AssertionError(kind)
    return par


def tree_down(kind, p, k=2):
    par = tree_parent(kind, p, k)
    v = np.arange(1, p)
    return _e(par[1:], v, 1.0)


def subtree_sizes(par: np.ndarray) -> np.ndarray:
    size = np.ones(len(par), dtype=np.int64)
    for v in range(len(par) - 1, 0, -1):  # children have larger virtual ranks than parents
        size[par[v]] += size[v]
    return size


def tree_gather(kind, p, k=2):
    """Gather: every rank sends its whole subtree's blocks to its parent."""
    par = tree_parent(kind, p, k)
    v = np.arange(1, p)
    return _e(v, par[1:], subtree_sizes(par)[1:])


def ring_step(p, frac, msgs):
    v = np.arange(p)
    return _e(v, (v + 1) % p, frac, msgs)


def _fold(p):
    """Non-power-of-two handling of recursive doubling: the first 2*rem ranks pair up."""
    p2 = 1 << (p.bit_length() - 1)
    rem = p - p2
    even = np.arange(0, 2 * rem, 2)
    # participating rank of new rank q: odd ranks below 2*rem, then the rest
    part = np.concatenate([np.arange(1, 2 * rem, 2), np.arange(2 * rem, p)])
    return p2, even, part


def recursive_doubling(p, frac_of_round=lambda d, p2: 1.0):
    p2, even, part = _fold(p)
    parts = [_e(even, even + 1, 1.0), _e(even + 1, even, 1.0)]   # fold in, and results back out
    q = np.arange(p2)
    d = 1
    while d < p2:
        parts.append(_e(part[q], part[q ^ d], frac_of_round(d, p2)))
        d <<= 1
    return _cat(*parts)


def rabenseifner(p):
    """Recursive vector halving reduce-scatter then doubling allgather, starting at distance 1
    (Open MPI's redscat_allgather): the partner at distance d exchanges n/(2d) each way, twice.
    Non-power-of-two: in each of the first `rem` pairs the even rank stays; the pair swaps
    halves, the odd rank hands over its reduced half, and gets the whole result at the end."""
    p2 = 1 << (p.bit_length() - 1)
    rem = p - p2
    even = np.arange(0, 2 * rem, 2)
    part = np.concatenate([even, np.arange(2 * rem, p)])
    parts = [_e(even, even + 1, 1.5, 2), _e(even + 1, even, 1.0, 2)]
    q = np.arange(p2)
    d = 1
    while d < p2:
        parts.append(_e(part[q], part[q ^ d], 1.0 / d, 2))
        d <<= 1
    return _cat(*parts)


def butterfly(p, total):
    """Reduce-scatter by recursive vector halving from distance 1 (Open MPI's butterfly):
    the pair at distance d swaps total/(2d). Non-power-of-two: the first `rem` even ranks
    hand their whole vector to their odd neighbour and get their block back at the end."""
    p2, even, part = _fold(p)
    parts = [_e(even, even + 1, total), _e(even + 1, even, total / p)]
    q = np.arange(p2)
    d = 1
    while d < p2:
        parts.append(_e(part[q], part[q ^ d], total / (2 * d)))
        d <<= 1
    return _cat(*parts)


def bruck(p, frac_of_round):
    parts = []
    d, k = 1, 0
    v = np.arange(p)
    while d < p:
        parts.append(_e(v, (v - d) % p, frac_of_round(k, d)))
        d <<= 1
        k += 1
    return _cat(*parts) if parts else _e([], [], [])


def direct_all(p, frac=1.0):
    i, j = np.meshgrid(np.arange(p), np.arange(p), indexing="ij")
    m = i != j
    return _e(i[m], j[m], frac)


def _pow2(p):
    return p & (p - 1) == 0


TREES = ("binomial", "binomial-inorder", "knomial", "binary", "chain", "linear", "kchain")


# --------------------------------------------------------------------------- per-operation choice

def _auto(op, p, n):
    """Open MPI 4.1 coll/tuned as measured on Debian's 4.1.4 with its monitoring component
    (P = 4..16, 64 B..1 MiB; tests/test_collective_models.py re-measures it)."""
    small = p < 8
    if op == "barrier":
        return "recursive-doubling" if _pow2(p) else "bruck"
    if op == "bcast":
        if n < 2048:
            return "binomial" if small else "knomial"
        if small:
            return "linear" if n < 370728 else "chain"
        return "linear" if p < 16 and n >= 65536 else "binomial"
    if op == "reduce":
        if n < 2048:
            return "binomial" if small else "binary"
        if small:
            return "chain" if n < 32768 else "linear"
        return "binomial-inorder"
    if op == "allreduce":
        return "recursive-doubling" if n < 10000 else "rabenseifner"
    if op == "allgather":
        return "recursive-doubling" if _pow2(p) else "bruck"
    if op in ("allgatherv",):
        return "ring"
    if op in ("reduce_scatter", "reduce_scatter_block"):
        total = n * p if op == "reduce_scatter_block" else n
        if total >= 1 << 20:
            return "reduce+scatter"
        return "butterfly" if total < 512 or not _pow2(p) else "recursive-halving"
    if op == "alltoall":
        return "direct"
    if op == "gather":
        return "linear" if small and n >= 1024 else "binomial-inorder"
    if op == "scatter":
        return "binomial-inorder" if n < 8192 else "linear"
    return "chain"  # scan, exscan: Open MPI's linear scan passes the prefix along


SMPI_DEFAULT = {"bcast": "binomial", "reduce": "linear", "allreduce": "linear-binomial", "allgather": "direct",
                "allgatherv": "direct", "alltoall": "direct", "gather": "linear", "scatter": "linear",
                "barrier": "linear", "scan": "direct", "exscan": "direct",
                # reduce_scatter__default with equal counts: a linear reduce of the whole vector to rank 0,
                # then a linear scatterv (unequal counts go to MPICH's; the table keeps only the total)
                "reduce_scatter": "linear-reduce+scatter", "reduce_scatter_block": "linear-reduce+scatter"}


def _algorithm(op, p, n, model):
    if model == "auto":
        return _auto(op, p, n)
    if model == "smpi":
        return SMPI_DEFAULT.get(op) or _auto(op, p, n)
    if model == "kchain":
        return "kchain" if op in ("reduce", "bcast", "allreduce") else _auto(op, p, n)
    if model == "ring":
        return {"bcast": "chain", "reduce": "chain", "gather": "linear", "scatter": "linear",
                "alltoall": "direct", "barrier": "bruck", "scan": "chain", "exscan": "chain"}.get(op, "ring")
    if model == "recursive-doubling":
        if op in ("reduce_scatter", "reduce_scatter_block"):
            return "recursive-halving" if _pow2(p) else "butterfly"
        if op in ("allreduce", "allgather", "barrier"):
            return "recursive-doubling"
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "binomial")
    if model == "binomial":
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "binomial")
    if model == "linear":
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "linear")
    raise AssertionError(model)


def pattern(op: str, p: int, n: float, model: str = "auto", k: int | None = None):
    """Edges of one call of `op` over p virtual ranks (root = 0), and the algorithm used."""
    alg = _algorithm(op, p, n, model)
    kk = k or (max(1, math.ceil(math.sqrt(p - 1))) if p > 1 else 1)
    tk = 4 if alg == "knomial" else kk
    if op == "barrier":
        if alg == "recursive-doubling" and _pow2(p):
            e = recursive_doubling(p)
        elif alg in TREES:
            e = _cat(_rev(tree_down(alg, p, tk)), tree_down(alg, p, tk))
        else:
            e = bruck(p, lambda r, d: 1.0)
        return _scale(e, 0.0), alg
    if op == "bcast":
        return tree_down(alg if alg in TREES else "binomial", p, tk), alg
    if op == "reduce":
        return _rev(tree_down(alg if alg in TREES else "binomial", p, tk)), alg
    if op == "allreduce":
        if alg == "recursive-doubling":
            return recursive_doubling(p), alg
        if alg == "rabenseifner":
            return rabenseifner(p), alg
        if alg == "ring":
            return ring_step(p, 2.0 * (p - 1) / p, 2 * (p - 1)), alg
        if alg == "linear-binomial":   # everyone to the root, then a binomial broadcast
            return _cat(_rev(tree_down("linear", p)), tree_down("binomial", p)), alg
        d = tree_down(alg, p, tk)   # reduce then broadcast along the same tree
        return _cat(_rev(d), d), alg
    if op == "gather":
        return tree_gather(alg if alg in TREES else "linear", p, tk), alg
    if op == "scatter":
        return _rev(tree_gather(alg if alg in TREES else "linear", p, tk)), alg
    if op == "allgather":
        if alg == "direct":
            return direct_all(p, 1.0), alg
        if alg == "ring":
            return ring_step(p, float(p - 1), p - 1), alg
        if alg == "recursive-doubling" and _pow2(p):
            return recursive_doubling(p, lambda d, p2: float(d)), alg
        if alg in ("bruck", "recursive-doubling"):
            return bruck(p, lambda r, d: float(min(d, p - d))), "bruck"
        g, b = tree_gather(alg, p, tk), tree_down(alg, p, tk)   # gather then broadcast all p blocks
        return _cat(g, _scale(b, float(p))), alg
    if op in ("allgatherv", "reduce_scatter", "reduce_scatter_block"):
        total = 1.0 if op != "reduce_scatter_block" else float(p)   # in units of n
        if alg == "direct" and op == "allgatherv":
            return direct_all(p, total / p), alg
        if alg == "butterfly" and op != "allgatherv":
            return butterfly(p, total), alg
        if alg in ("recursive-halving", "recursive-doubling") and _pow2(p):
            # halving from distance p/2 (allgatherv: doubling, the same volumes)
            return recursive_doubling(p, lambda d, p2: total * d / p2), alg
        if alg in ("reduce+scatter", "linear-reduce+scatter") and op != "allgatherv":
            # the whole vector reduced up an in-order binomial tree (SMPI: straight to rank 0),
            # then scattered from rank 0
            red = _rev(tree_down("binomial-inorder" if alg == "reduce+scatter" else "linear", p))
            return _cat(_scale(red, total), _scale(tree_down("linear", p), total / p)), alg
        return ring_step(p, total * (p - 1) / p, p - 1), "ring"
    if op == "alltoall":
        if alg == "bruck":
            # round r sends the blocks whose index has bit r set
            return bruck(p, lambda r, d: float(sum(1 for j in range(p) if j >> r & 1))), alg
        return direct_all(p), "direct"
    if op in ("scan", "exscan"):
        if alg == "direct":          # SMPI's: every rank's block to every higher rank at once
            i, j = np.triu_indices(p, 1)
            return _e(i, j, 1.0), alg
        return tree_down("chain", p), "chain"
    raise UserError(f"no model for collective operation {op!r}")


def expand(collectives, size: int, model: str = "auto", k: int | None = None):
    """Pair traffic of a list of profiler.rundir.Collective rows, as (bytes, msgs) CSR
    matrices of shape (size, size), plus a summary {(op, algorithm): bytes}."""
    if model == "none" or not collectives:
        z = sp.csr_matrix((size, size), dtype=np.int64)
        return z, z.copy(), {}
    _check_size(collectives, model, k)
    rows, cols, byts, msgs = [], [], [], []
    summary: dict[tuple[str, str], float] = {}
    cache: dict = {}
    for c in collectives:
        members = np.asarray(c.members, dtype=np.int64)
        p = len(members)
        if p <= 1 or c.calls == 0:
            continue
        key = (c.op, p, c.bucket, model, k)
        if key not in cache:
            cache[key] = pattern(c.op, p, c.mean_bytes, model, k)
        (src, dst, frac, nmsg), alg = cache[key]
        if len(src) == 0:
            continue
        # virtual rank v is communicator rank (v + root) mod p
        root_local = 0
        if c.root >= 0:
            hit = np.flatnonzero(members == c.root)
            root_local = int(hit[0]) if len(hit) else 0
        s = members[(src + root_local) % p]
        d = members[(dst + root_local) % p]
        ok = (s >= 0) & (d >= 0) & (s != d)
        b = frac[ok] * c.bytes
        rows.append(s[ok]), cols.append(d[ok]), byts.append(b), msgs.append(nmsg[ok] * c.calls)
        summary[(c.op, alg)] = summary.get((c.op, alg), 0.0) + float(b.sum())
    if not rows:
        z = sp.csr_matrix((size, size), dtype=np.int64)
        return z, z.copy(), summary
    r, cc = np.concatenate(rows), np.concatenate(cols)
    B, M = (_matrix(np.concatenate(x), r, cc, size) for x in (byts, msgs))
    return B, M, summary


BYTES_PER_PAIR = 170     # measured 158-169 B: a pair's share of the patterns, their concatenation and the sparse matrices


def _check_size(collectives, model: str, k: int | None) -> None:
    """Refuse, before any pattern is built, an expansion this host cannot hold: a direct
    all-to-all over p ranks is p(p-1) pairs, a run header claiming 2^24 ranks made a world
    allreduce fill the memory (no message, the process killed)."""
    pairs = 0
    for c in collectives:
        p = len(c.members)
        if p <= 1 or c.calls == 0:
            continue
        alg = _algorithm(c.op, p, c.mean_bytes, model)
        if alg == "direct" and c.op in ("alltoall", "allgather", "allgatherv"):
            pairs += p * (p - 1)
        elif alg in TREES and c.op != "allgather" or alg in ("ring", "linear-binomial"):
            pairs += 2 * p
        else:                    # recursive doubling/halving, Bruck, butterfly: log2(p) rounds
            pairs += p * (math.ceil(math.log2(p)) + 1)
    if pairs * BYTES_PER_PAIR > 256 << 20:
        from rankmap.profiler import validate
        validate.check_memory(pairs * BYTES_PER_PAIR, f"modelling the collectives as pairs ({len(collectives)} "
                              f"collective row(s), up to {pairs:.3g} pairs; --collectives none leaves them out)")


def _matrix(v: np.ndarray, r: np.ndarray, c: np.ndarray, size: int) -> sp.csr_matrix:
    """Rounded counts as an int64 matrix, or as floats where a sum would not fit one (a
    modelled collective of 2^63+ bytes wrapped to a negative count)."""
    f = sp.coo_matrix((np.rint(v), (r, c)), shape=(size, size)).tocsr()
    if f.nnz and f.data.max() >= 2.0 ** 62:
        return f
    return sp.coo_matrix((np.rint(v).astype(np.int64), (r, c)), shape=(size, size)).tocsr()
