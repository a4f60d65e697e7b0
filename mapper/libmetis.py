"""METIS with 32-bit indices: the system's libmetis (Debian's libmetis5) through ctypes.

pymetis builds METIS with 64-bit indices, so every array of METIS's coarsened graphs is
twice as large. On the top bisection of 10^6 random-8 ranks (1.6*10^7 edge entries) METIS
took 1.66 GB through pymetis and 0.69 GB here (5.5 s instead of 8.9 s, the same cut).
backends.metis uses this for graphs above BIG_NNZ edge entries where the library is
installed (setup.sh installs it); smaller graphs keep pymetis, so that their mappings do
not depend on whether the system has it."""
from __future__ import annotations

import ctypes as C
from functools import lru_cache

import numpy as np

BIG_NNZ = 4_000_000           # edge entries (both directions): about 2.5*10^5 random-8 ranks
_NOPTIONS = 40
_SEED, _UFACTOR = 8, 16       # METIS_OPTION_SEED, METIS_OPTION_UFACTOR (metis.h)
_OK = 1                       # METIS_OK


@lru_cache(maxsize=None)
def _lib():
    try:
        lib = C.CDLL("libmetis.so.5")
    except OSError:
        return None
    # the index width is not exported: METIS_SetDefaultOptions writes 40 idx_t of -1, so
    # with 32-bit indices the 41st int32 of the buffer stays untouched
    probe = (C.c_int32 * (2 * _NOPTIONS))()
    if lib.METIS_SetDefaultOptions(probe) != _OK or probe[_NOPTIONS] != 0 or probe[_NOPTIONS - 1] != -1:
        return None
    lib.METIS_PartGraphRecursive.restype = C.c_int
    return lib


def available() -> bool:
    return _lib() is not None and _tiny_ok()


@lru_cache(maxsize=None)
def _tiny_ok() -> bool:
    """One 4-vertex path split with target weights 0.25/0.75: a library whose real_t is not
    32-bit float reads the weights wrong and misses the sizes."""
    part = part_recursive(np.array([0, 1, 3, 5, 6]), np.array([1, 0, 2, 1, 3, 2]), np.ones(6, np.int64),
                          [0.25, 0.75], 1, 0, check=False)
    return part is not None and sorted(np.bincount(part, minlength=2).tolist()) == [1, 3]


def recursive_entry() -> int | None:
    """The address of METIS_PartGraphRecursive (32-bit indices), for C kernels that call it
    themselves (refine.split_groups: a level's METIS bisections in one call); None where the
    library is missing."""
    if not available():
        return None
    return C.cast(_lib().METIS_PartGraphRecursive, C.c_void_p).value


def part_recursive(indptr: np.ndarray, col: np.ndarray, weights: np.ndarray, tpwgts: list[float],
                   ufactor: int, seed: int, check: bool = True, vwgt: np.ndarray | None = None) -> np.ndarray | None:
    """METIS_PartGraphRecursive into len(tpwgts) blocks; weights: integers >= 1 whose sum
    fits 31 bits. vwgt (n x ncon integers, each column's sum within 31 bits): vertex weights
    balanced together, tpwgts then ncon per block (block by block). None where the library
    is missing or the graph does not fit 32 bits."""
    lib = _lib()
    if lib is None or (check and not available()) or len(col) >= 2 ** 31 or float(weights.sum()) >= 2 ** 31:
        return None
    n = len(indptr) - 1
    ncon = 1 if vwgt is None else vwgt.shape[1]
    k = len(tpwgts) // ncon
    vw = None if vwgt is None else np.ascontiguousarray(vwgt, dtype=np.int32).ravel()
    I = C.c_int32
    ip = np.ascontiguousarray(indptr, dtype=np.int32)
    adj = np.ascontiguousarray(col, dtype=np.int32)
    wt = np.ascontiguousarray(weights, dtype=np.int32)
    tp = np.ascontiguousarray(tpwgts, dtype=np.float32)
    opts = (I * _NOPTIONS)()
    lib.METIS_SetDefaultOptions(opts)
    opts[_SEED], opts[_UFACTOR] = int(seed) % (2 ** 31), int(ufactor)
    part = np.zeros(n, dtype=np.int32)
    obj = I(0)

    def p(a):
        return a.ctypes.data_as(C.POINTER(I))
    rc = lib.METIS_PartGraphRecursive(C.byref(I(n)), C.byref(I(ncon)), p(ip), p(adj), None if vw is None else p(vw),
                                      None, p(wt),
                                      C.byref(I(k)), tp.ctypes.data_as(C.POINTER(C.c_float)), None, opts,
                                      C.byref(obj), p(part))
    if rc != _OK:
        return None
    return part.astype(np.int64)
