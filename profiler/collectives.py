"""Expand the collective table into pair traffic with an algorithm model.

A PMPI tool cannot see the messages a library's collective really sends (they depend
on size, placement and library), so the profiler records per communicator:
operation, root, size bucket, calls, bytes; this module turns each row into the
point-to-point pairs of a chosen algorithm.

Per-call size n (docs/formats.md): the message for bcast/reduce/allreduce/scan/exscan;
one rank's block for gather/scatter/allgather/reduce_scatter_block; one pair's block
for alltoall; the total for allgatherv/reduce_scatter.

Models (`--collectives MODEL`):
  auto                the shape of Open MPI's coll/tuned fixed decision rules, by size
  binomial            binomial trees (allreduce = reduce + bcast, allgather = gather + bcast)
  recursive-doubling  recursive doubling / halving where it exists, binomial otherwise
  ring                ring / pipeline chains
  linear              everything through the root (flat)
  kchain[:K]          k chains into the root for reduce and out of it for bcast
                      (K = ceil(sqrt(P-1)) by default); others as auto
  none                collectives are ignored
"""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from profiler.errors import UserError

MODELS = ("auto", "binomial", "recursive-doubling", "ring", "linear", "kchain", "none")


def parse_model(text: str) -> tuple[str, int | None]:
    name, _, k = text.partition(":")
    if name not in MODELS:
        raise UserError(f"unknown collective model {text!r}; choose one of: {', '.join(MODELS)} (kchain:K)")
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


def _lowbit(v):
    return v & -v


def binomial_down(p):
    """bcast: parent(v) = v with its lowest set bit cleared (Open MPI's in-order binomial)."""
    v = np.arange(1, p)
    return _e(v & (v - 1), v, 1.0)


def binomial_gather(p):
    """gather: v sends its whole subtree [v, v + lowbit(v)) to its parent."""
    v = np.arange(1, p)
    sub = np.minimum(_lowbit(v), p - v)
    return _e(v, v & (v - 1), sub)


def binary_down(p):
    v = np.arange(1, p)
    return _e((v - 1) // 2, v, 1.0)


def linear_down(p, frac=1.0):
    v = np.arange(1, p)
    return _e(np.zeros_like(v), v, frac)


def chain_down(p):
    v = np.arange(1, p)
    return _e(v - 1, v, 1.0)


def kchain_down(p, k):
    """k chains hanging from the root (Kurnosov): the root sends to each chain head."""
    if p <= 1:
        return _e([], [], [])
    k = max(1, min(k, p - 1))
    lens = np.full(k, (p - 1) // k)
    lens[: (p - 1) % k] += 1
    src, dst = [], []
    start = 1
    for L in lens:
        ch = np.arange(start, start + L)
        src.append(np.concatenate([[0], ch[:-1]]))
        dst.append(ch)
        start += L
    return _e(np.concatenate(src), np.concatenate(dst), 1.0)


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
    """recursive halving reduce-scatter + recursive doubling allgather: the pair at
    distance d exchanges d/p2 of the message in each half."""
    return recursive_doubling(p, lambda d, p2: 2.0 * d / p2)


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


# --------------------------------------------------------------------------- per-operation choice

def _auto(op, p, n):
    """The shape of Open MPI coll/tuned's fixed decision rules (coll_tuned_decision_fixed.c)."""
    if op == "barrier":
        return "recursive-doubling" if _pow2(p) else "bruck"
    if op == "bcast":
        if n < 2048:
            return "binomial"
        if n < 370728:
            return "binary"          # tuned: split binary tree
        return "chain"               # tuned: pipeline
    if op == "reduce":
        if p < 8 and n < 512:
            return "linear"
        if p < 8 and n < 20480:
            return "binomial"
        if n < 2048:
            return "binary"
        return "chain"
    if op == "allreduce":
        return "recursive-doubling" if n < 10000 else "ring"
    if op == "allgather":
        if n * p < 81920:
            return "recursive-doubling" if _pow2(p) else "bruck"
        return "ring"
    if op in ("allgatherv", "reduce_scatter", "reduce_scatter_block"):
        return "ring"
    if op == "alltoall":
        return "bruck" if n < 200 and p > 12 else "direct"
    if op == "gather":
        return "binomial" if n < 6000 else "linear"
    if op == "scatter":
        return "binomial" if n < 300 else "linear"
    return "chain"  # scan, exscan: linear chain


def _algorithm(op, p, n, model, k):
    if model == "auto":
        return _auto(op, p, n)
    if model == "kchain":
        return "kchain" if op in ("reduce", "bcast", "allreduce") else _auto(op, p, n)
    if model == "ring":
        return {"bcast": "chain", "reduce": "chain", "gather": "linear", "scatter": "linear",
                "alltoall": "direct", "barrier": "bruck", "scan": "chain", "exscan": "chain"}.get(op, "ring")
    if model == "recursive-doubling":
        if op in ("allreduce", "allgather", "barrier", "reduce_scatter", "reduce_scatter_block"):
            return "recursive-doubling"
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "binomial")
    if model == "binomial":
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "binomial")
    if model == "linear":
        return {"alltoall": "direct", "scan": "chain", "exscan": "chain"}.get(op, "linear")
    raise AssertionError(model)


def pattern(op: str, p: int, n: float, model: str = "auto", k: int | None = None):
    """Edges of one call of `op` over p virtual ranks (root = 0), and the algorithm used."""
    alg = _algorithm(op, p, n, model, k)
    kk = k or max(1, math.ceil(math.sqrt(p - 1))) if p > 1 else 1
    down = {"binomial": binomial_down, "binary": binary_down, "chain": chain_down,
            "linear": linear_down, "kchain": lambda q: kchain_down(q, kk)}
    if op == "barrier":
        if alg == "recursive-doubling" and _pow2(p):
            e = recursive_doubling(p)
        elif alg in ("binomial", "linear"):
            e = _cat(_rev(down[alg](p)), down[alg](p))
        else:
            e = bruck(p, lambda r, d: 1.0)
        return (e[0], e[1], e[2] * 0.0, e[3]), alg
    if op == "bcast":
        return down.get(alg, binomial_down)(p), alg
    if op == "reduce":
        return _rev(down.get(alg, binomial_down)(p)), alg
    if op == "allreduce":
        if alg == "recursive-doubling":
            return recursive_doubling(p), alg
        if alg == "ring":
            return ring_step(p, 2.0 * (p - 1) / p, 2 * (p - 1)), alg
        if alg == "rabenseifner":
            return rabenseifner(p), alg
        d = down.get(alg, binomial_down)(p)
        return _cat(_rev(d), d), alg
    if op == "gather":
        return (binomial_gather(p) if alg == "binomial" else _rev(linear_down(p))), alg
    if op == "scatter":
        return (_rev(binomial_gather(p)) if alg == "binomial" else linear_down(p)), alg
    if op == "allgather":
        if alg == "ring":
            return ring_step(p, float(p - 1), p - 1), alg
        if alg == "recursive-doubling" and _pow2(p):
            return recursive_doubling(p, lambda d, p2: float(d)), alg
        if alg in ("bruck", "recursive-doubling"):
            return bruck(p, lambda r, d: float(min(d, p - d))), "bruck"
        g = binomial_gather(p) if alg == "binomial" else _rev(linear_down(p))
        b = (binomial_down if alg == "binomial" else linear_down)(p)
        return _cat(g, (b[0], b[1], b[2] * p, b[3])), alg
    if op in ("allgatherv", "reduce_scatter"):
        # n is the total: each rank forwards (p-1)/p of it along the ring
        if alg == "recursive-doubling" and _pow2(p):
            return recursive_doubling(p, lambda d, p2: d / p2), alg
        return ring_step(p, (p - 1) / p, p - 1), "ring"
    if op == "reduce_scatter_block":
        if alg == "recursive-doubling" and _pow2(p):
            return recursive_doubling(p, lambda d, p2: float(d)), alg
        return ring_step(p, float(p - 1), p - 1), "ring"
    if op == "alltoall":
        if alg == "bruck":
            # round r sends the blocks whose index has bit r set
            return bruck(p, lambda r, d: float(sum(1 for j in range(p) if j >> r & 1))), alg
        return direct_all(p), "direct"
    if op in ("scan", "exscan"):
        return chain_down(p), "chain"
    raise UserError(f"no model for collective operation {op!r}")


def expand(collectives, size: int, model: str = "auto", k: int | None = None):
    """Pair traffic of a list of profiler.rundir.Collective rows, as (bytes, msgs) CSR
    matrices of shape (size, size), plus a summary {(op, algorithm): bytes}."""
    if model == "none" or not collectives:
        z = sp.csr_matrix((size, size), dtype=np.int64)
        return z, z.copy(), {}
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
    B = sp.coo_matrix((np.rint(np.concatenate(byts)).astype(np.int64), (r, cc)), shape=(size, size)).tocsr()
    M = sp.coo_matrix((np.rint(np.concatenate(msgs)).astype(np.int64), (r, cc)), shape=(size, size)).tocsr()
    return B, M, summary
