"""Batch 1 of bad and edge inputs, written from issue 11's categories before any fix:
matrix files of each format, machine options, the JSON files the CLI reads, output paths and
--force, damaged profile runs, predict options, the other options of every verb.

Run: .venv/bin/python tests/corpus/harness.py tests/corpus/batch1.py"""
from __future__ import annotations

import io
import json
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from harness import ROOT, RANKMAP, Case, base_env, exists, mapping_ok, stdout_json_ok

MACH = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:2"]          # 8 slots
RING8 = "src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 8},{1000 * (i + 1)}\n" for i in range(8))


# ---------------------------------------------------------------------- fixtures (built once)

def fixtures(F: Path) -> None:
    (F / "ring8.csv").write_text(RING8)
    run = [*RANKMAP]
    subprocess.run(run + ["map", str(F / "ring8.csv"), *MACH, "--out", str(F / "map8")], check=True,
                   capture_output=True, env=base_env())
    subprocess.run(run + ["platform", "desmos", "--out", str(F / "plat")], check=True, capture_output=True,
                   env=base_env())
    exe = F / "traffic"
    subprocess.run(["mpicc", "-O1", "-o", str(exe), str(ROOT / "tests" / "apps" / "traffic.c"), "-lpthread"],
                   check=True, capture_output=True)
    subprocess.run(run + ["profile", "--out", str(F / "run4"), "--", "mpirun", "--oversubscribe", "-np", "4",
                          str(exe), "ring"], check=True, capture_output=True, env=base_env())
    # an SMPI time-independent trace of 4 ranks, by hand
    t = F / "trace"
    (t / "trace_files").mkdir(parents=True)
    lines = []
    for r in range(4):
        (t / "trace_files" / f"rank-{r + 1}.txt").write_text(
            f"{r} init\n{r} send {(r + 1) % 4} 0 1000 0\n{r} recv {(r + 3) % 4} 0 1000 0\n"
            f"{r} allreduce 100 100 0\n{r} finalize\n")
        lines.append(f"trace_files/rank-{r + 1}.txt\n")
    (t / "trace.ti").write_text("".join(lines))
    (F / "probe.json").write_text(json.dumps(PROBE, indent=1))


PROBE = {"level_costs": {"core": 0.1, "package": 0.2, "node": 1.0},
         "latency_us": {"same socket": 0.3, "other socket": 0.5, "neighbour node": 2.0},
         "bandwidth_GBps": {"same socket": 10.0, "other socket": 8.0, "neighbour node": 3.0}}


# ---------------------------------------------------------------------- helpers

def files(**named):
    """setup writing W/<name> = text (str) or bytes; '__' in a name is a '/', '_dot_' a '.'."""
    def setup(W: Path):
        for name, content in named.items():
            p = W / name.replace("__", "/").replace("_dot_", ".")
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content)
    return setup


def copy_fixture(name: str, to: str, then=None):
    def setup(W: Path):
        F = W.parents[1] / "_fixtures"
        src = F / name
        if src.is_dir():
            shutil.copytree(src, W / to)
        else:
            (W / to).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(src, W / to)
        if then:
            then(W)
    return setup


def both(*setups):
    def setup(W):
        for s in setups:
            s(W)
    return setup


def mapfile(cid, cat, name, content, expect="error", where=(), n=8, extra=(), fmt=None, timeout=60.0):
    argv = ["map", f"{{W}}/{name}", *MACH, "--out", "{W}/out", *extra] + (["--format", fmt] if fmt else [])
    return Case(cid, cat, argv, expect, tuple(where), files(**{name.replace(".", "_dot_"): content}),
                preserve=(f"{{W}}/{name}",), check=mapping_ok("out", n) if expect != "error" else None,
                timeout=timeout)


def maprun(cid, cat, extra, expect="error", where=(), setup=None, n=8, machine=True, timeout=60.0, preserve=()):
    argv = ["map", "{F}/ring8.csv", *(MACH if machine else []), "--out", "{W}/out", *extra]
    return Case(cid, cat, argv, expect, tuple(where), setup, preserve=tuple(preserve),
                check=mapping_ok("out", n) if expect != "error" else None, timeout=timeout)


# ---------------------------------------------------------------------- the rmp run file, damaged

def rmp_mutations():
    """(id, function(bytes) -> bytes, expect, where) on the real run's data file."""
    def flip(off):
        def f(b):
            b = bytearray(b)
            b[off % len(b)] ^= 0xFF
            return bytes(b)
        return f

    def set_u32(field_off, value, block=0):
        def f(b):
            b = bytearray(b)
            offs = [i for i in range(len(b)) if b[i:i + 8] == b"RMPROF\x00\x01"]
            o = offs[block % len(offs)] + field_off
            b[o:o + 4] = struct.pack("<I", value)
            return bytes(b)
        return f

    def recrc(f):
        """apply f to the first block's payload, then fix its checksum (a well-formed lie)"""
        def g(b):
            b = bytearray(b)
            psize = struct.unpack_from("<Q", b, 16)[0]
            payload = bytearray(b[64:64 + psize])
            payload = f(payload)
            b[64:64 + psize] = payload
            struct.pack_into("<I", b, 24, zlib.crc32(bytes(payload)))
            return bytes(b)
        return g

    def meta_garbage(p):
        # the META section's JSON text: replace its first byte by garbage
        i = p.find(b"{")
        p[i] = ord("!")
        return p

    def end_short(p):
        # the END section header's size field (second section) shrunk to 8 bytes
        off = 0
        t, isz, size = struct.unpack_from("<IIQ", p, off)
        off = 16 + size + (-size % 8)
        struct.pack_into("<Q", p, off + 8, 8)
        return p

    def p2p_rank_huge(p):
        off = 0
        for _ in range(8):
            t, isz, size = struct.unpack_from("<IIQ", p, off)
            if t == 3 and size >= 24:
                struct.pack_into("<I", p, off + 16 + 4, 0x7FFFFFFF)
                return p
            off += 16 + size + (-size % 8)
        return p

    def nsections_huge(b):
        b = bytearray(b)
        struct.pack_into("<I", b, 52, 1000)
        return bytes(b)

    return [
        ("truncated-half", lambda b: b[: len(b) // 2], "partial", ("--allow-partial",)),
        ("truncated-64", lambda b: b[:64], "error", ()),
        ("flip-payload", flip(200), "partial", ("--allow-partial",)),
        ("flip-magic", flip(3), "partial", ("--allow-partial",)),
        ("random-bytes", lambda b: bytes(np.random.default_rng(1).integers(0, 256, 4096, dtype=np.uint8)), "error",
         ("ranks.",)),
        ("world-size-4e9", set_u32(32, 0xFFFFFFF0), "error", ()),
        ("world-size-0", set_u32(32, 0), "error", ()),
        ("rank-beyond-size", set_u32(28, 77), "error", ()),
        ("version-2", set_u32(8, 2), "error", ("version",)),
        ("header-size-0", set_u32(12, 0), "error", ()),
        ("meta-not-json", recrc(meta_garbage), "error", ()),
        ("end-section-short", recrc(end_short), "error", ()),
        ("p2p-rank-huge", recrc(p2p_rank_huge), "error", ()),
        ("nsections-1000", nsections_huge, "error", ()),
        ("doubled-file", lambda b: b + b, "either", ()),
        ("zeros-appended", lambda b: b + b"\x00" * 5000, "partial", ("--allow-partial",)),
    ]


def damaged_run(name, mut):
    def setup(W: Path):
        F = W.parents[1] / "_fixtures"
        shutil.copytree(F / "run4", W / "run")
        f = next((W / "run").glob("ranks.*.rmp"))
        f.write_bytes(mut(f.read_bytes()))
    return setup


# ---------------------------------------------------------------------- the cases

def cases() -> list[Case]:
    C: list[Case] = []
    add = C.append

    # --- CSV triplets
    cat = "csv"
    add(mapfile("csv-valid", cat, "t.csv", RING8, "ok"))
    add(mapfile("csv-comment-before-header", cat, "t.csv", "# traffic of run 7\n" + RING8, "ok"))
    add(mapfile("csv-blank-and-comment-lines", cat, "t.csv", "\n# a\n" + RING8 + "\n# end\n", "ok"))
    add(mapfile("csv-crlf", cat, "t.csv", RING8.replace("\n", "\r\n"), "ok"))
    add(mapfile("csv-bom", cat, "t.csv", "\ufeff" + RING8, "ok"))
    add(mapfile("csv-spaces", cat, "t.csv", RING8.replace(",", " , "), "ok"))
    add(mapfile("csv-exponent-bytes", cat, "t.csv", RING8 + "0,3,1e3\n", "ok"))
    add(mapfile("csv-plus-sign-ranks", cat, "t.csv", RING8 + "+0,+3,5\n", "ok"))
    add(mapfile("csv-extra-column", cat, "t.csv", "src,dst,bytes,msgs,extra\n" +
                "".join(f"{i},{(i + 1) % 8},100,1,x\n" for i in range(8)), "either"))
    add(mapfile("csv-negative-summed", cat, "t.csv", RING8 + "0,1,-500\n", "error", ["t.csv:10"]))
    add(mapfile("csv-negative-alone", cat, "t.csv", RING8 + "2,5,-1\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-1e308", cat, "t.csv", RING8 + "0,4,1e308\n1,5,1e308\n", "either", ["t.csv"]))
    add(mapfile("csv-bytes-1e308-same-pair", cat, "t.csv", RING8 + "0,4,1e308\n0,4,1e308\n", "either", ["t.csv"]))
    add(mapfile("csv-bytes-nan", cat, "t.csv", RING8 + "0,4,nan\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-inf", cat, "t.csv", RING8 + "0,4,inf\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-word", cat, "t.csv", RING8 + "0,4,lots\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-hex", cat, "t.csv", RING8 + "0,4,0x10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-empty", cat, "t.csv", RING8 + "0,4,\n", "error", ["t.csv:10"]))
    add(mapfile("csv-src-word", cat, "t.csv", RING8 + "a,4,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-dst-float", cat, "t.csv", RING8 + "1,2.5,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-rank-negative", cat, "t.csv", RING8 + "-1,2,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-rank-1e10", cat, "t.csv", RING8 + "1e10,2,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-rank-2pow31", cat, "t.csv", RING8 + f"{2 ** 31},2,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-rank-2pow64", cat, "t.csv", RING8 + f"{2 ** 64},2,10\n", "error", ["t.csv:10"]))
    add(mapfile("csv-rank-100k", cat, "t.csv", RING8 + "100000,2,10\n", "error", ["100001 ranks"]))
    add(mapfile("csv-too-few-fields", cat, "t.csv", RING8 + "3,4\n", "error", ["t.csv:10"]))
    add(mapfile("csv-empty", cat, "t.csv", "", "error", ["t.csv"]))
    add(mapfile("csv-header-only", cat, "t.csv", "src,dst,bytes\n", "error", ["t.csv"]))
    add(mapfile("csv-semicolons", cat, "t.csv", RING8.replace(",", ";"), "ok"))          # read since h-robust2
    add(mapfile("csv-binary", cat, "t.csv", bytes(range(256)) * 4, "error", ["t.csv"]))
    add(mapfile("csv-msgs-negative", cat, "t.csv", "src,dst,bytes,msgs\n" +
                "".join(f"{i},{(i + 1) % 8},100,-2\n" for i in range(8)), "error", ["t.csv:2"]))
    add(mapfile("csv-msgs-word", cat, "t.csv", "src,dst,bytes,msgs\n" +
                "".join(f"{i},{(i + 1) % 8},100,x\n" for i in range(8)), "error", ["t.csv:2"]))
    add(mapfile("csv-only-diagonal", cat, "t.csv", "src,dst,bytes\n0,0,5\n1,1,5\n", "ok", n=2))   # block, a note
    add(mapfile("csv-quoted-fields", cat, "t.csv", RING8.replace("1000", '"1000"'), "ok"))
    add(mapfile("csv-duplicate-rows", cat, "t.csv", RING8 + RING8.split("\n", 1)[1], "ok"))
    add(mapfile("csv-format-on-npz-bytes", cat, "t.csv", b"PK\x03\x04" + b"\x00" * 100, "error", ["t.csv"]))
    add(mapfile("csv-huge-line", cat, "t.csv", RING8 + "1," * 100000 + "\n", "error", ["t.csv:10"]))
    add(mapfile("csv-one-rank", cat, "t.csv", "src,dst,bytes\n0,0,5\n", "ok", n=1))   # nothing exchanged: block, a note
    add(mapfile("csv-two-ranks", cat, "t.csv", "src,dst,bytes\n0,1,5\n", "ok", n=2))
    add(mapfile("csv-nul-bytes", cat, "t.csv", RING8 + "0,1\x00,5\n", "error", ["t.csv:10"]))
    add(mapfile("csv-bytes-1e-300", cat, "t.csv", RING8 + "0,4,1e-300\n", "either"))
    add(mapfile("csv-bytes-fraction", cat, "t.csv", RING8 + "0,4,0.5\n", "either"))
    add(mapfile("csv-as-mpip-fmt", cat, "t.csv", RING8, "error", ["t.csv:2"], fmt="mpip"))

    # --- mpiP
    cat = "mpip"
    MPIP = "src,dst,bytes,count\n" + "".join(f"{i},{(i + 1) % 8},{100 * (i + 1)},{i + 1}\n" for i in range(8)) + \
        "".join(f"{i},{i},{100 * (i + 1)},{i + 1}\n" for i in range(8))
    add(mapfile("mpip-valid", cat, "m.csv", MPIP, "ok"))
    add(mapfile("mpip-count-negative", cat, "m.csv", MPIP + "0,3,10,-1\n", "error", ["m.csv:18"]))
    add(mapfile("mpip-count-word", cat, "m.csv", MPIP + "0,3,10,many\n", "error", ["m.csv:18"]))
    add(mapfile("mpip-three-fields", cat, "m.csv", MPIP + "0,3,10\n", "error", ["m.csv:18"]))
    add(mapfile("mpip-negative-bytes", cat, "m.csv", MPIP + "0,1,-100,1\n", "error", ["m.csv:18"]))
    add(mapfile("mpip-bytes-nan", cat, "m.csv", MPIP + "0,1,NaN,1\n", "error", ["m.csv:18"]))

    # --- TreeMatch dense
    cat = "treematch"
    D4 = "0 10 0 5\n10 0 7 0\n0 7 0 3\n5 0 3 0\n"
    add(mapfile("tm-valid", cat, "m.dat", D4, "ok", n=4))
    add(mapfile("tm-comment", cat, "m.dat", "# comm matrix\n" + D4, "ok", n=4))
    add(mapfile("tm-tabs", cat, "m.dat", D4.replace(" ", "\t"), "ok", n=4))
    add(mapfile("tm-not-square", cat, "m.dat", "0 1 2\n1 0 2\n", "error", ["m.dat"]))
    add(mapfile("tm-short-row", cat, "m.dat", "0 10 0 5\n10 0 7\n0 7 0 3\n5 0 3 0\n", "error", ["m.dat:2"],
                fmt="treematch"))
    add(mapfile("tm-word", cat, "m.dat", "0 x 0 5\n10 0 7 0\n0 7 0 3\n5 0 3 0\n", "error", ["m.dat:1"],
                fmt="treematch"))
    add(mapfile("tm-nan", cat, "m.dat", "0 nan 0 5\n10 0 7 0\n0 7 0 3\n5 0 3 0\n", "error", ["m.dat"]))
    add(mapfile("tm-inf", cat, "m.dat", "0 inf 0 5\n10 0 7 0\n0 7 0 3\n5 0 3 0\n", "error", ["m.dat"]))
    add(mapfile("tm-negative", cat, "m.dat", "0 -3 0 5\n10 0 7 0\n0 7 0 3\n5 0 3 0\n", "error", ["m.dat"]))
    add(mapfile("tm-1e308", cat, "m.dat", "0 1e308 0 1e308\n1e308 0 7 0\n0 7 0 3\n1e308 0 3 0\n", "either",
                ["m.dat"], n=4))
    add(mapfile("tm-empty", cat, "m.dat", "\n\n", "error", ["m.dat"], fmt="treematch"))
    add(mapfile("tm-1x1", cat, "m.dat", "0\n", "ok", n=1, fmt="treematch"))            # one rank: block, a note
    add(mapfile("tm-all-zero", cat, "m.dat", "0 0\n0 0\n", "ok", n=2, fmt="treematch"))   # block, a note

    # --- amfch logs
    cat = "amfch"
    AM = "run starts\namfch_statistics:\n0: 0 5 0 1\n1: 5 0 2 0\n2: 0 2 0 9\n3: 1 0 9 0\nbye\n"
    add(mapfile("amfch-valid", cat, "log.txt", AM, "ok", n=4))
    add(mapfile("amfch-two-unmarked", cat, "log.txt", "1 2\n3 4\ntext\n5 6\n7 8\n", "error", ["log.txt"],
                fmt="amfch"))
    add(mapfile("amfch-none", cat, "log.txt", "hello\nworld\n", "error", ["log.txt"], fmt="amfch"))
    add(mapfile("amfch-negative", cat, "log.txt", AM.replace("0 5 0 1", "0 -5 0 1"), "error", ["log.txt"]))
    add(mapfile("amfch-huge-int", cat, "log.txt", AM.replace("0 5 0 1", "0 99999999999999999999999999 0 1"),
                "either", ["log.txt"], n=4))
    add(mapfile("amfch-binary", cat, "log.bin", b"\x00\xff" * 3000, "error", ["log.bin"]))

    # --- Open MPI monitoring dumps
    cat = "ompi"

    def ompi(lines0, lines1=None):
        d = {"mon_dot_0_dot_prof": lines0}
        if lines1 is not None:
            d["mon_dot_1_dot_prof"] = lines1
        return d
    ok0 = "# POINT TO POINT\nE\t0\t1\t100 bytes\t1 msgs sent\t0,0\n"
    ok1 = "# POINT TO POINT\nE\t1\t0\t200 bytes\t2 msgs sent\t0,0\n"
    for cid, l0, l1, expect, where in [
        ("ompi-valid", ok0, ok1, "ok", ()),
        ("ompi-malformed", ok0 + "E\t0\tx\n", ok1, "error", ["mon.0.prof:3"]),
        ("ompi-negative-rank", ok0 + "E\t0\t-1\t5 bytes\t1 msgs sent\n", ok1, "error", ["mon.0.prof:3"]),
        ("ompi-rank-1e9", ok0 + "E\t0\t1000000000\t5 bytes\t1 msgs sent\n", ok1, "error", ["mon.0.prof:3"]),
        ("ompi-no-lines", "# nothing\n", "# nothing\n", "error", ["mon"]),
        ("ompi-bytes-word", ok0 + "E\t0\t1\tmany bytes\t1 msgs sent\n", ok1, "error", ["mon.0.prof:3"]),
        ("ompi-negative-bytes", ok0 + "E\t0\t1\t-5 bytes\t1 msgs sent\n", ok1, "error", ["mon.0.prof:3"]),
    ]:
        add(Case(cid, cat, ["map", "{W}/mon", "--nodes", "n1", "--node-topology", "pack:1 core:2", "--out",
                            "{W}/out"], expect, tuple(where), files(**ompi(l0, l1)),
                 check=mapping_ok("out", 2) if expect == "ok" else None))

    # --- MatrixMarket
    cat = "mtx"
    MTX = "%%MatrixMarket matrix coordinate real general\n4 4 4\n1 2 5\n2 3 5\n3 4 5\n4 1 5\n"
    add(mapfile("mtx-valid", cat, "m.mtx", MTX, "ok", n=4))
    add(mapfile("mtx-garbage", cat, "m.mtx", "%%MatrixMarket nonsense\n1 2\n", "error", ["m.mtx"]))
    add(mapfile("mtx-not-square", cat, "m.mtx", MTX.replace("4 4 4", "4 5 4"), "error", ["m.mtx"]))
    add(mapfile("mtx-complex", cat, "m.mtx", "%%MatrixMarket matrix coordinate complex general\n2 2 1\n1 2 5 3\n",
                "error", ["m.mtx"]))
    add(mapfile("mtx-negative", cat, "m.mtx", MTX.replace("1 2 5", "1 2 -5"), "error", ["m.mtx"]))
    add(mapfile("mtx-nan", cat, "m.mtx", MTX.replace("1 2 5", "1 2 nan"), "error", ["m.mtx"]))
    add(mapfile("mtx-huge-dims", cat, "m.mtx", "%%MatrixMarket matrix coordinate real general\n"
                "10000000000 10000000000 1\n1 2 5\n", "error", ["m.mtx"]))
    add(mapfile("mtx-index-out-of-range", cat, "m.mtx", MTX.replace("4 1 5", "9 1 5"), "error", ["m.mtx"]))
    add(mapfile("mtx-pattern", cat, "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n4 4 4\n1 2\n2 3\n"
                "3 4\n4 1\n", "either", ["m.mtx"], n=4))
    add(mapfile("mtx-truncated", cat, "m.mtx", MTX[:-8], "error", ["m.mtx"]))

    # --- NPZ
    cat = "npz"

    def npz(**arrays):
        b = io.BytesIO()
        np.savez(b, **arrays)
        return b.getvalue()

    def spnpz(m):
        b = io.BytesIO()
        sp.save_npz(b, sp.csr_matrix(m))
        return b.getvalue()
    ring = np.roll(np.eye(4), 1, axis=1) * 100
    add(mapfile("npz-sparse-valid", cat, "m.npz", spnpz(ring), "ok", n=4))
    add(mapfile("npz-dense-valid", cat, "m.npz", npz(m=ring), "ok", n=4))
    add(mapfile("npz-two-arrays", cat, "m.npz", npz(a=ring, b=ring), "error", ["m.npz"]))
    add(mapfile("npz-1d", cat, "m.npz", npz(a=np.arange(4.0)), "error", ["m.npz"]))
    add(mapfile("npz-3d", cat, "m.npz", npz(a=np.zeros((2, 2, 2))), "error", ["m.npz"]))
    add(mapfile("npz-not-square", cat, "m.npz", npz(a=np.ones((3, 4))), "error", ["m.npz"]))
    add(mapfile("npz-nan", cat, "m.npz", npz(a=np.full((4, 4), np.nan)), "error", ["m.npz"]))
    add(mapfile("npz-strings", cat, "m.npz", npz(a=np.array([["a", "b"], ["c", "d"]])), "error", ["m.npz"]))
    add(mapfile("npz-object-pickle", cat, "m.npz", npz(a=np.array([{"x": 1}, None], dtype=object)), "error",
                ["m.npz"]))
    add(mapfile("npz-text", cat, "m.npz", "not a zip file\n", "error", ["m.npz"]))
    add(mapfile("npz-complex", cat, "m.npz", npz(a=ring * (1 + 1j)), "error", ["m.npz"]))
    add(mapfile("npz-bool", cat, "m.npz", npz(a=ring > 0), "either", ["m.npz"], n=4))
    add(mapfile("npz-negative", cat, "m.npz", npz(a=-ring), "error", ["m.npz"]))
    add(mapfile("npz-sparse-huge-shape", cat, "m.npz", _huge_sparse_npz(), "error", ["m.npz"]))

    # --- METIS graphs
    cat = "metis"
    G = "4 4 001\n2 5 4 5\n1 5 3 5\n2 5 4 5\n3 5 1 5\n"
    add(mapfile("metis-valid", cat, "g.graph", G, "ok", n=4))
    add(mapfile("metis-bad-header", cat, "g.graph", "four 4\n" + G.split("\n", 1)[1], "error", ["g.graph:1"]))
    add(mapfile("metis-edge-count", cat, "g.graph", G.replace("4 4 001", "4 9 001"), "error", ["g.graph"]))
    add(mapfile("metis-neighbour-range", cat, "g.graph", G.replace("2 5 4 5\n1", "7 5 4 5\n1"), "error",
                ["g.graph:2"]))
    add(mapfile("metis-asymmetric", cat, "g.graph", G.replace("1 5 3 5", "1 5 3 6"), "error", ["g.graph"]))
    add(mapfile("metis-vertex-weights", cat, "g.graph", "4 4 011\n1 2 5 4 5\n1 1 5 3 5\n1 2 5 4 5\n1 3 5 1 5\n",
                "ok", n=4))
    add(mapfile("metis-huge-n", cat, "g.graph", "10000000000 1\n", "error", ["g.graph"]))
    add(mapfile("metis-negative-weight", cat, "g.graph", G.replace("2 5 4 5\n1", "2 -5 4 5\n1"), "error",
                ["g.graph:2"]))
    add(mapfile("metis-word-weight", cat, "g.graph", G.replace("2 5 4 5\n1", "2 x 4 5\n1"), "error",
                ["g.graph:2"]))

    # --- format option
    cat = "format"
    add(maprun("format-bogus", cat, ["--format", "excel"], "error", ["excel"]))
    add(Case("format-csv-on-dir", cat, ["map", "{F}/run4", *MACH, "--out", "{W}/out", "--format", "csv"], "error",
             ("run4",)))
    add(Case("format-profile-on-file", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/out", "--format",
                                             "profile"], "error", ("ring8.csv",)))
    add(Case("format-missing-file", cat, ["map", "{W}/nope.csv", *MACH, "--out", "{W}/out"], "error",
             ("nope.csv",)))
    add(Case("format-matrix-is-dev-null", cat, ["map", "/dev/null", *MACH, "--out", "{W}/out"], "error",
             ("/dev/null",)))
    add(Case("format-matrix-empty-arg", cat, ["map", "", *MACH, "--out", "{W}/out"], "error", ()))

    # --- profile runs, damaged
    cat = "profile-run"
    add(Case("run-valid", cat, ["map", "{F}/run4", *MACH, "--out", "{W}/out"], "ok", (),
             check=mapping_ok("out", 4)))
    for name, mut, expect, extra in rmp_mutations():
        if expect == "partial":
            add(Case(f"run-{name}", cat, ["map", "{W}/run", *MACH, "--out", "{W}/out"], "error",
                     ("--allow-partial",), damaged_run(name, mut), preserve=("{W}/run",)))
            add(Case(f"run-{name}-allowed", cat, ["map", "{W}/run", *MACH, "--out", "{W}/out", "--allow-partial"],
                     "either", ("run",), damaged_run(name, mut), preserve=("{W}/run",)))
        else:
            add(Case(f"run-{name}", cat, ["map", "{W}/run", *MACH, "--out", "{W}/out"], expect, ("run",),
                     damaged_run(name, mut), preserve=("{W}/run",),
                     check=mapping_ok("out", 4) if expect != "error" else None))
        add(Case(f"show-{name}", cat, ["show-profile", "{W}/run"], "either", ("run",), damaged_run(name, mut),
                 preserve=("{W}/run",)))

    def run_json(text):
        return copy_fixture("run4", "run", lambda W: (W / "run" / "run.json").write_text(text))
    for cid, text in [("run-json-corrupt", "{not json"), ("run-json-list", "[1, 2, 3]"),
                      ("run-json-string", '"hello"'), ("run-json-wrong-id", '{"run_id": "nope"}'),
                      ("run-json-id-number", '{"run_id": 12345}'), ("run-json-id-path", '{"run_id": "../../etc"}'),
                      ("run-json-empty", ""), ("run-json-command-int", '{"run_id": "nope", "command": 5}')]:
        add(Case(cid, cat, ["map", "{W}/run", *MACH, "--out", "{W}/out"], "error", ("run",), run_json(text),
                 preserve=("{W}/run",)))
        add(Case("show-" + cid, cat, ["show-profile", "{W}/run"], "error", ("run",), run_json(text),
                 preserve=("{W}/run",)))
    add(Case("run-empty-dir", cat, ["map", "{W}/run", *MACH, "--out", "{W}/out"], "error", ("run",),
             files(run__x_dot_txt="")))
    add(Case("run-rmp-is-dir", cat, ["show-profile", "{W}/run"], "error", ("run",),
             copy_fixture("run4", "run", _rmp_dir)))
    add(Case("show-top-negative", cat, ["show-profile", "{F}/run4", "--top", "-1"], "error", ("--top",)))
    add(Case("show-top-zero", cat, ["show-profile", "{F}/run4", "--top", "0"], "either"))
    add(Case("show-top-huge", cat, ["show-profile", "{F}/run4", "--top", str(10 ** 12)], "either"))
    add(Case("show-collectives-bogus", cat, ["show-profile", "{F}/run4", "--collectives", "tree"], "error",
             ("tree",)))
    add(Case("show-kchain-0", cat, ["show-profile", "{F}/run4", "--collectives", "kchain:0"], "error", ("kchain",)))
    add(Case("show-kchain-word", cat, ["show-profile", "{F}/run4", "--collectives", "kchain:x"], "error",
             ("kchain",)))
    add(Case("show-kchain-huge", cat, ["show-profile", "{F}/run4", "--collectives", "kchain:99999999999"], "either",
             ("kchain",)))
    add(Case("show-json-valid", cat, ["show-profile", "{F}/run4", "--json"], "ok", check=stdout_json_ok))
    add(Case("map-collectives-bogus", cat, ["map", "{F}/run4", *MACH, "--out", "{W}/out", "--collectives", "x"],
             "error", ("x",)))

    # --- SMPI traces
    cat = "smpi-trace"

    def trace_with(rank_text=None, index=None):
        def then(W):
            if rank_text is not None:
                (W / "trace" / "trace_files" / "rank-2.txt").write_text(rank_text)
            if index is not None:
                (W / "trace" / "trace.ti").write_text(index)
        return copy_fixture("trace", "trace", then)
    TARGS = ["--nodes", "n1", "--node-topology", "pack:1 core:4", "--out", "{W}/out"]
    add(Case("trace-valid", cat, ["map", "{W}/trace", *TARGS], "ok", setup=trace_with(), check=mapping_ok("out", 4)))
    for cid, rt, idx, where in [
        ("trace-send-to-99", "1 send 99 0 1000 0\n", None, ["rank-2.txt"]),
        ("trace-alltoallv-garbage", "1 alltoallv x y z\n", None, ["rank-2.txt"]),
        ("trace-index-missing-file", None, "trace_files/rank-1.txt\ntrace_files/rank-9.txt\n", ["rank-9"]),
        ("trace-index-empty", None, "\n", ["trace.ti"]),
        ("trace-count-huge", "1 send 2 0 99999999999999999999999 0\n", None, ["rank-2.txt"]),
        ("trace-index-numbering", None, "trace_files/rank-1.txt\ntrace_files/rank-3.txt\n", ["trace.ti"]),
        ("trace-bcast-garbage", None, None, []),
    ]:
        add(Case(cid, cat, ["map", "{W}/trace", *TARGS], "error" if cid != "trace-bcast-garbage" else "either",
                 tuple(where), trace_with(rt, idx), preserve=("{W}/trace",)))
    add(Case("trace-allreduce-word", cat, ["map", "{W}/trace", *TARGS], "error", ("rank-1.txt",),
             copy_fixture("trace", "trace", lambda W: (W / "trace" / "trace_files" / "rank-1.txt").write_text(
                 "0 init\n0 allreduce many 100 0\n0 finalize\n"))))

    # --- machine options
    cat = "machine"
    add(maprun("nodes-file-typo", cat, ["--nodes", "nodes.txt", "--node-topology", "pack:2 core:2"], "error",
               ["nodes.txt"], machine=False))
    add(maprun("nodes-at-missing", cat, ["--nodes", "@nodes.txt", "--node-topology", "pack:2 core:2"], "error",
               ["nodes.txt"], machine=False))
    add(maprun("nodes-empty", cat, ["--nodes", "", "--node-topology", "pack:2 core:2"], "error", ["--nodes"],
               machine=False))
    add(maprun("nodes-huge-range", cat, ["--nodes", "n[1-100000000]", "--node-topology", "pack:1 core:1"], "error",
               ["n[1-100000000]"], machine=False, timeout=60))
    add(maprun("nodes-reversed-range", cat, ["--nodes", "n[5-1]", "--node-topology", "pack:2 core:2"], "error",
               ["n[5-1]"], machine=False))
    add(maprun("nodes-duplicate", cat, ["--nodes", "n1,n1", "--node-topology", "pack:2 core:2"], "error", ["n1"],
               machine=False))
    add(maprun("nodes-file-bad-line", cat, ["--nodes", "@{W}/nodes.txt", "--node-topology", "pack:2 core:2"],
               "error", ["nodes.txt:2"], files(nodes_dot_txt="n1\nn[2-\n"), machine=False))
    add(maprun("nodes-file-valid", cat, ["--nodes", "@{W}/nodes.txt", "--node-topology", "pack:2 core:2"], "ok",
               (), files(nodes_dot_txt="# two nodes\nn1\nn2\n"), machine=False))
    add(maprun("nodes-file-binary", cat, ["--nodes", "@{W}/nodes.txt", "--node-topology", "pack:2 core:2"], "error",
               ["nodes.txt"], files(nodes_dot_txt=b"\xff\xfe\x00\x01" * 10), machine=False))
    add(maprun("nodes-spaces", cat, ["--nodes", "n1 n2", "--node-topology", "pack:2 core:2"], "ok",
               machine=False))                    # hostlists separated by blanks are read
    add(maprun("nodes-comma-trailing", cat, ["--nodes", "n1,n2,", "--node-topology", "pack:2 core:2"], "either",
               ["--nodes"], machine=False))
    add(maprun("nodes-dir", cat, ["--nodes", "{W}", "--node-topology", "pack:2 core:2"], "error", ["--nodes"],
               machine=False))
    add(maprun("topo-empty", cat, ["--nodes", "n[1-2]", "--node-topology", ""], "error", ["--node-topology"],
               machine=False))
    add(maprun("topo-blank", cat, ["--nodes", "n[1-2]", "--node-topology", "  "], "error", ["--node-topology"],
               machine=False))
    add(maprun("topo-huge", cat, ["--nodes", "n[1-2]", "--node-topology", "pack:64 core:1024"], "either",
               ["pack:64 core:1024"], machine=False, timeout=60))
    add(maprun("topo-huge-2", cat, ["--nodes", "n[1-2]", "--node-topology", "pack:4096 core:4096 pu:4"], "error",
               ["pack:4096"], machine=False, timeout=60))
    add(maprun("topo-zero", cat, ["--nodes", "n[1-2]", "--node-topology", "pack:0 core:2"], "error", ["pack:0"],
               machine=False))
    add(maprun("topo-negative", cat, ["--nodes", "n[1-2]", "--node-topology", "pack:-1 core:2"], "error",
               ["pack:-1"], machine=False))
    add(maprun("topo-word", cat, ["--nodes", "n[1-2]", "--node-topology", "sockets"], "error", ["sockets"],
               machine=False))
    add(maprun("topo-not-xml", cat, ["--nodes", "n[1-2]", "--node-topology", "{W}/t.xml"], "error", ["t.xml"],
               files(t_dot_xml="<not hwloc/>"), machine=False))
    add(maprun("topo-binary-file", cat, ["--nodes", "n[1-2]", "--node-topology", "{W}/t.xml"], "error", ["t.xml"],
               files(t_dot_xml=b"\x00\x01\x02" * 100), machine=False))
    add(maprun("topo-missing-xml", cat, ["--nodes", "n[1-2]", "--node-topology", "{W}/nope.xml"], "error",
               ["nope.xml"], machine=False))
    add(maprun("topo-host-empty-spec", cat, ["--nodes", "n[1-2]", "--node-topology", "n[1-2]="], "error",
               ["n[1-2]="], machine=False))
    add(maprun("topo-empty-hostlist", cat, ["--nodes", "n[1-2]", "--node-topology", "=pack:2 core:2"], "error",
               ["=pack:2"], machine=False))
    add(maprun("topo-overlap", cat, ["--nodes", "n[1-2]", "--node-topology", "n[1-2]=pack:2 core:2",
                                     "--node-topology", "n1=pack:1 core:4"], "either", ["n1"], machine=False))
    add(maprun("topo-unknown-host", cat, ["--nodes", "n[1-2]", "--node-topology", "n[1-3]=pack:2 core:2"], "error",
               ["n3"], machine=False))
    add(maprun("topo-live", cat, ["--nodes", "n[1-4]", "--node-topology", "live"], "either", machine=False))
    add(maprun("topo-real-xml", cat, ["--nodes", "n[1-2]", "--node-topology",
                                      str(ROOT.parent / "shared/data/hwloc/Intel-Skylake-2xXeon6140.xml")],
               "ok", machine=False))
    add(maprun("torus-zero", cat, ["--torus", "0x2"], "error", ["0x2"]))
    add(maprun("torus-word", cat, ["--torus", "abc"], "error", ["abc"]))
    add(maprun("torus-empty", cat, ["--torus", ""], "error", ["--torus"]))
    add(maprun("torus-negative", cat, ["--torus", "-2x3"], "error", ["-2x3"]))
    add(maprun("torus-huge", cat, ["--torus", "1000000x1000000"], "error", ["1000000x1000000"], timeout=60))
    add(maprun("torus-too-small", cat, ["--torus", "1"], "error", ["--torus"]))
    add(maprun("torus-and-mesh", cat, ["--torus", "2", "--mesh", "2"], "error", ["--mesh"]))
    add(maprun("torus-valid", cat, ["--torus", "2"], "ok"))
    add(maprun("mesh-valid", cat, ["--mesh", "1x2"], "ok"))
    add(maprun("torus-float", cat, ["--torus", "2.5"], "error", ["2.5"]))
    add(maprun("coords-without-torus", cat, ["--coords", "{W}/c.txt"], "error", ["--coords"],
               files(c_dot_txt="n1 0\nn2 1\n")))
    add(maprun("coords-bad-line", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt:2"],
               files(c_dot_txt="n1 0\nn2\n")))
    add(maprun("coords-negative", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt:2"],
               files(c_dot_txt="n1 0\nn2 -1\n")))
    add(maprun("coords-word", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt:1"],
               files(c_dot_txt="n1 x\nn2 1\n")))
    add(maprun("coords-duplicate-host", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt:3"],
               files(c_dot_txt="n1 0\nn2 1\nn1 1\n")))
    add(maprun("coords-same-position", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt"],
               files(c_dot_txt="n1 0\nn2 0\n")))
    add(maprun("coords-missing-file", cat, ["--torus", "2", "--coords", "{W}/none.txt"], "error", ["none.txt"]))
    add(maprun("coords-valid", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "ok", (),
               files(c_dot_txt="# x\nn2 0\nn1 1\n")))
    add(maprun("coords-huge-number", cat, ["--torus", "2", "--coords", "{W}/c.txt"], "error", ["c.txt:1"],
               files(c_dot_txt="n1 99999999999999999999999\nn2 1\n")))
    add(maprun("switch-zero", cat, ["--switch-tree", "0"], "error", ["0"]))
    add(maprun("switch-trailing-x", cat, ["--switch-tree", "2x"], "error", ["2x"]))
    add(maprun("switch-huge", cat, ["--switch-tree", "1000000000x1000000000x1000000000"], "error",
               ["--switch-tree"], timeout=60))
    add(maprun("switch-overflow", cat, ["--switch-tree", "4294967296x4294967296"], "error", ["--switch-tree"]))
    add(maprun("switch-valid", cat, ["--switch-tree", "2x1"], "ok"))
    add(maprun("switch-and-torus", cat, ["--switch-tree", "2", "--torus", "2"], "error", ["--switch-tree"]))
    add(maprun("costs-words", cat, ["--level-costs", "a,b,c"], "error", ["--level-costs"]))
    add(maprun("costs-negative", cat, ["--level-costs", "-1,2,3"], "error", ["--level-costs"]))
    add(maprun("costs-nan", cat, ["--level-costs", "nan,2,3"], "error", ["--level-costs"]))
    add(maprun("costs-inf", cat, ["--level-costs", "inf,2,3"], "error", ["--level-costs"]))
    add(maprun("costs-count", cat, ["--level-costs", "1,2"], "error", ["--level-costs"]))
    add(maprun("costs-empty", cat, ["--level-costs", ""], "error", ["--level-costs"]))
    add(maprun("costs-1e308", cat, ["--level-costs", "1e308,1e308,1e308"], "either", ["--level-costs"]))
    add(maprun("costs-zero", cat, ["--level-costs", "0,0,0"], "either", ["--level-costs"]))
    add(maprun("costs-valid", cat, ["--level-costs", "100,10,1"], "ok"))
    add(maprun("costs-semicolons", cat, ["--level-costs", "100;10;1"], "error", ["--level-costs"]))
    for cid, text, expect in [
        ("levels-json-string", '"fast"', "error"), ("levels-json-null", "null", "error"),
        ("levels-json-number", "5", "error"), ("levels-json-list-words", '["a", "b", "c"]', "error"),
        ("levels-json-list-dicts", '[{}, {}, {}]', "error"),
        ("levels-json-dict-word", '{"level_costs": {"node": "x", "package": 1, "core": 1}}', "error"),
        ("levels-json-dict-negative", '{"level_costs": {"node": -5, "package": 1, "core": 1}}', "error"),
        ("levels-json-dict-nan", '{"level_costs": {"node": NaN, "package": 1, "core": 1}}', "error"),
        ("levels-json-level-costs-number", '{"level_costs": 5}', "error"),
        ("levels-json-missing-level", '{"level_costs": {"node": 5}}', "error"),
        ("levels-json-hop-word", '{"level_costs": {"node": 5, "package": 1, "core": 1, "hop": "x"}}', "error"),
        ("levels-json-hop-negative", '{"level_costs": {"node": 5, "package": 1, "core": 1, "hop": -3}}', "error"),
        ("levels-json-not-json", "node=5", "error"), ("levels-json-empty", "", "error"),
        ("levels-json-valid", '{"level_costs": {"node": 5, "package": 1, "core": 0.5}}', "ok"),
        ("levels-json-list-valid", "[5, 1, 0.5]", "ok"),
        ("levels-json-bool", '{"level_costs": {"node": true, "package": 1, "core": 1}}', "error"),
        ("levels-json-huge", '{"level_costs": {"node": 1e400, "package": 1, "core": 1}}', "error"),
    ]:
        extra = ["--torus", "2"] if "hop" in cid else []
        add(maprun(cid, "json", ["--level-costs", "@{W}/levels.json", *extra], expect, ["levels.json"],
                   files(levels_dot_json=text), preserve=("{W}/levels.json",)))
    add(maprun("levels-json-missing", "json", ["--level-costs", "@{W}/none.json"], "error", ["none.json"]))
    add(maprun("levels-json-dir", "json", ["--level-costs", "@{W}"], "error", ["--level-costs"]))
    add(maprun("hop-word", cat, ["--torus", "2", "--hop-cost", "x"], "error", ["--hop-cost"]))
    add(maprun("hop-negative", cat, ["--torus", "2", "--hop-cost", "-1"], "error", ["--hop-cost"]))
    add(maprun("hop-nan", cat, ["--torus", "2", "--hop-cost", "nan"], "error", ["--hop-cost"]))
    add(maprun("hop-without-torus", cat, ["--hop-cost", "5"], "either", ["--hop-cost"]))
    add(maprun("rpn-zero", cat, ["--ranks-per-node", "0"], "error", ["--ranks-per-node"]))
    add(maprun("rpn-negative", cat, ["--ranks-per-node", "-2"], "error", ["--ranks-per-node"]))
    add(maprun("rpn-too-many", cat, ["--ranks-per-node", "100"], "error", ["--ranks-per-node"]))
    add(maprun("rpn-word", cat, ["--ranks-per-node", "two"], "error", ["--ranks-per-node"]))
    add(maprun("rpn-too-few-slots", cat, ["--ranks-per-node", "2"], "error", ["8 ranks"]))
    add(maprun("oversub-zero", cat, ["--oversubscribe", "0"], "error", ["--oversubscribe"]))
    add(maprun("oversub-negative", cat, ["--oversubscribe", "-3"], "error", ["--oversubscribe"]))
    add(maprun("oversub-huge", cat, ["--oversubscribe", "100000000"], "error", ["--oversubscribe"], timeout=60))
    add(Case("oversub-valid", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/out", "--oversubscribe", "2"], "ok",
             check=mapping_ok("out", 8, per_core=2)))   # the check first asked for one rank per core: its mistake

    # --- machine.json (--machine)
    cat = "json"
    good = json.loads(json.dumps({"hosts": ["n1", "n2"], "node_topology": ["pack:2 core:2"], "torus": None,
                                  "mesh": None, "coords": None, "switch_tree": None, "level_costs": None,
                                  "hop_cost": None, "ranks_per_node": None, "oversubscribe": 1}))
    for cid, spec, expect in [
        ("machine-valid", good, "ok"),
        ("machine-list", [1, 2], "error"),
        ("machine-no-hosts", {k: v for k, v in good.items() if k != "hosts"}, "error"),
        ("machine-hosts-ints", dict(good, hosts=[1, 2]), "error"),
        ("machine-hosts-empty", dict(good, hosts=[]), "error"),
        ("machine-hosts-dup", dict(good, hosts=["n1", "n1"]), "error"),
        ("machine-no-topology", {k: v for k, v in good.items() if k != "node_topology"}, "error"),
        ("machine-topology-string", dict(good, node_topology="pack:2 core:2"), "error"),
        ("machine-topology-huge", dict(good, node_topology=["pack:64 core:1024"]), "either"),
        ("machine-costs-number", dict(good, level_costs=5), "error"),
        ("machine-costs-negative", dict(good, level_costs="-5,1,1"), "error"),
        ("machine-oversub-word", dict(good, oversubscribe="x"), "error"),
        ("machine-oversub-negative", dict(good, oversubscribe=-1), "error"),
        ("machine-rpn-float", dict(good, ranks_per_node=1.5), "error"),
        ("machine-torus-int", dict(good, torus=2), "error"),
        ("machine-coords-bad", dict(good, torus="2", coords={"n1": [0], "n2": ["x"]}), "error"),
        ("machine-coords-list", dict(good, torus="2", coords=[[0], [1]]), "error"),
        ("machine-coords-outside", dict(good, torus="2", coords={"n1": [0], "n2": [5]}), "error"),
        ("machine-hop-word", dict(good, torus="2", hop_cost="x"), "error"),
        ("machine-hop-nan", dict(good, torus="2", hop_cost="nan"), "error"),
        ("machine-extra-key", dict(good, color="blue"), "either"),
        ("machine-switch-bad", dict(good, switch_tree="0x2"), "error"),
    ]:
        add(maprun(cid, cat, ["--machine", "{W}/machine.json"], expect, ["machine.json"],
                   files(machine_dot_json=json.dumps(spec)), machine=False, preserve=("{W}/machine.json",)))
    add(maprun("machine-not-json", cat, ["--machine", "{W}/machine.json"], "error", ["machine.json"],
               files(machine_dot_json="hosts: n1"), machine=False))
    add(maprun("machine-missing", cat, ["--machine", "{W}/none.json"], "error", ["none.json"], machine=False))
    add(maprun("machine-dir-without", cat, ["--machine", "{W}/d"], "error", ["d"], files(d__x="1"),
               machine=False))
    add(maprun("machine-nan-literal", cat, ["--machine", "{W}/machine.json"], "error", ["machine.json"],
               files(machine_dot_json=json.dumps(dict(good, level_costs="1,1,1")).replace('"1,1,1"', "NaN")),
               machine=False))

    # --- predict
    cat = "predict"
    P = ["predict", "{F}/ring8.csv", "{F}/map8"]
    NET = ["--link-bw", "5", "--link-lat", "1", "--loopback-bw", "10", "--loopback-lat", "0.2"]
    add(Case("predict-valid", cat, P + NET + ["--json"], "ok", check=stdout_json_ok))
    for opt in ("--link-bw", "--link-lat", "--loopback-bw", "--loopback-lat", "--nic-bw"):
        for val in ("nan", "-1", "inf", "x"):
            args = list(NET)
            if opt in args:
                args[args.index(opt) + 1] = val
            else:
                args += [opt, val]
            add(Case(f"predict{opt}-{val}", cat, P + args, "error", (opt,)))
    add(Case("predict-link-bw-0", cat, P + ["--link-bw", "0", "--link-lat", "1", "--loopback-bw", "10",
                                            "--loopback-lat", "0.2"], "error", ("--link-bw",)))
    add(Case("predict-no-network", cat, P, "error", ("--link-bw",)))
    add(Case("predict-platform", cat, ["predict", "{F}/ring8.csv", "{F}/map8", "--platform", "{F}/plat"], "either"))
    for cid, mut, where in [
        ("predict-platform-nan-bw", lambda sg: sg.update(link_bw=float("nan")), "machine.json"),
        ("predict-platform-negative-lat", lambda sg: sg.update(link_lat=-1.0), "machine.json"),
        ("predict-platform-word-bw", lambda sg: sg.update(link_bw="fast"), "machine.json"),
        ("predict-platform-extra-key", lambda sg: sg.update(color="red"), "machine.json"),
        ("predict-platform-zero-bw", lambda sg: sg.update(loopback_bw=0), "machine.json"),
        ("predict-platform-nic-nan", lambda sg: sg.update(nic_bw=float("nan")), "machine.json"),
    ]:
        def setup(W, mut=mut):
            F = W.parents[1] / "_fixtures"
            shutil.copytree(F / "plat", W / "plat")
            spec = json.loads((W / "plat" / "machine.json").read_text())
            mut(spec["simgrid"])
            (W / "plat" / "machine.json").write_text(json.dumps(spec))
        add(Case(cid, cat, ["predict", "{F}/ring8.csv", "{W}/plat", "--platform", "{W}/plat"], "error", (where,),
                 setup, preserve=("{W}/plat",)))
    for cid, probe in [
        ("predict-probe-list", [1, 2]),
        ("predict-probe-strings", {"latency_us": {"same socket": "a", "neighbour node": "b"},
                                   "bandwidth_GBps": {"same socket": "c", "neighbour node": "d"}}),
        ("predict-probe-nan", dict(PROBE, latency_us={"same socket": float("nan"), "neighbour node": 1.0})),
        ("predict-probe-negative", dict(PROBE, bandwidth_GBps={"same socket": 10.0, "neighbour node": -3.0})),
        ("predict-probe-zero-bw", dict(PROBE, bandwidth_GBps={"same socket": 10.0, "neighbour node": 0.0})),
        ("predict-probe-no-nodes", dict(PROBE, latency_us={"same socket": 0.3})),
    ]:
        add(Case(cid, cat, P + ["--network", "{W}/probe.json"], "error", ("probe.json",),
                 files(probe_dot_json=json.dumps(probe)), preserve=("{W}/probe.json",)))
    add(Case("predict-probe-valid", cat, P + ["--network", "{F}/probe.json", "--json"], "ok", check=stdout_json_ok))
    add(Case("predict-probe-missing", cat, P + ["--network", "{W}/none.json"], "error", ("none.json",)))
    add(Case("predict-mapping-wrong-size", cat, ["predict", "{W}/t.csv", "{F}/map8", *NET], "error", ("map8",),
             files(t_dot_csv="src,dst,bytes\n0,1,5\n1,0,5\n")))
    add(Case("predict-bytes-1e308", cat, ["predict", "{W}/t.csv", "{F}/map8", *NET, "--json"], "either", ("t.csv",),
             files(t_dot_csv=RING8 + "0,4,1e308\n"), check=stdout_json_ok))

    # --- evaluate and mappings read back
    cat = "mapping-files"
    E = ["evaluate", "{F}/ring8.csv"]
    add(Case("eval-valid", cat, E + ["{F}/map8", "--json"], "ok", check=stdout_json_ok))
    for cid, text, where in [
        ("binding-rank-gap", "0 n1 0\n2 n1 1\n", "b.txt:2"),
        ("binding-core-negative", "0 n1 -1\n", "b.txt:1"),
        ("binding-core-word", "0 n1 x\n", "b.txt:1"),
        ("binding-rank-1e10", "10000000000 n1 0\n", "b.txt:1"),
        ("binding-core-huge", "".join(f"{r} n1 {r + 1000}\n" for r in range(8)), "b.txt"),
        ("binding-two-fields", "0 n1\n", "b.txt"),
        ("hostfile-unknown-host", "".join("n9\n" for _ in range(8)), "n9"),
        ("hostfile-too-many-on-node", "".join("n1\n" for _ in range(8)), "n1"),
        ("hostfile-empty", "# nothing\n", "b.txt"),
        ("hostfile-binary", "\x00\x01\x02\n", "b.txt"),
    ]:
        add(Case(cid, cat, E + ["{W}/b.txt", "--machine", "{F}/map8"], "error", (where,), files(b_dot_txt=text),
                 preserve=("{W}/b.txt",)))
    add(Case("eval-mapping-dir-mismatch", cat, E + ["{W}/m", "--machine", "{F}/map8"], "error", ("m",),
             copy_fixture("map8", "m", lambda W: (W / "m" / "hostfile").write_text("n1\n" * 8))))
    add(Case("eval-binding-non-utf8", cat, E + ["{W}/m"], "error", ("binding.txt",),
             copy_fixture("map8", "m", lambda W: (W / "m" / "binding.txt").write_bytes(b"\xff\xfe" * 20))))
    add(Case("eval-seed-negative", cat, E + ["{F}/map8", "--seed", "-1", "--json"], "either", ("--seed",),
             check=stdout_json_ok))
    add(Case("eval-plots-proc", cat, E + ["{F}/map8", "--plots", "/proc/rankmap-x"], "error", ("/proc/rankmap-x",)))
    add(Case("eval-plots-file", cat, E + ["{F}/map8", "--plots", "{W}/f"], "error", ("f",), files(f="x"),
             preserve=("{W}/f",)))
    add(Case("eval-plots-empty", cat, E + ["{F}/map8", "--plots", ""], "error", ("--plots",)))
    add(Case("eval-plots-valid", cat, E + ["{F}/map8", "--plots", "{W}/plots"], "ok",
             check=exists("plots/heatmap-map8.png")))

    # --- map options
    cat = "options"
    add(maprun("seed-negative", cat, ["--seed", "-1"], "either", ["--seed"]))
    add(maprun("seed-huge", cat, ["--seed", str(2 ** 70)], "either", ["--seed"]))
    add(maprun("seed-word", cat, ["--seed", "abc"], "error", ["--seed"]))
    add(maprun("tries-zero", cat, ["--tries", "0"], "either", ["--tries"]))
    add(maprun("tries-negative", cat, ["--tries", "-5"], "either", ["--tries"]))
    add(maprun("tries-huge", cat, ["--tries", "1000000000"], "either", ["--tries"], timeout=60))
    add(maprun("time-limit-nan", cat, ["--time-limit", "nan"], "error", ["--time-limit"]))
    add(maprun("time-limit-negative", cat, ["--time-limit", "-1"], "error", ["--time-limit"]))
    add(maprun("time-limit-zero", cat, ["--time-limit", "0"], "either", ["--time-limit"]))
    add(maprun("time-limit-inf", cat, ["--time-limit", "inf"], "either", ["--time-limit"]))
    add(maprun("algorithm-bogus", cat, ["--algorithm", "magic"], "error", ["--algorithm"]))
    add(maprun("fill-bogus", cat, ["--fill", "x"], "error", ["--fill"]))
    add(maprun("unknown-option", cat, ["--colour", "red"], "error", ["--colour"]))
    add(maprun("algorithm-scotch", cat, ["--algorithm", "scotch"], "ok"))
    add(maprun("mode-whole-cluster", cat, ["--mode", "whole-cluster"], "ok"))
    add(Case("no-args", cat, ["map"], "error", ("MATRIX",)))
    add(Case("unknown-verb", cat, ["mapp"], "error", ("mapp",)))
    add(Case("libpath-bogus", cat, ["libpath", "nothing"], "error", ("nothing",)))
    add(Case("no-machine", cat, ["map", "{F}/ring8.csv", "--out", "{W}/out"], "error", ("--nodes",)))

    # --- output paths and --force
    cat = "output"
    add(maprun("out-proc", cat, ["--out", "/proc/rankmap-x"], "error", ["/proc/rankmap-x"]))
    add(maprun("out-sys", cat, ["--out", "/sys/rankmap-x/y"], "error", ["/sys/rankmap-x/y"]))
    add(Case("out-empty-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "", "--force"], "error", ("--out",)))
    add(Case("out-empty", cat, ["map", "{F}/ring8.csv", *MACH, "--out", ""], "error", ("--out",)))
    add(Case("out-dot-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", ".", "--force"], "error", ("--out",)))
    add(Case("out-parent-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "..", "--force"], "error", ("--out",),
             cwd="{W}/cwd/sub"))
    add(Case("out-input-run-force", cat, ["map", "{W}/run", *MACH, "--out", "{W}/run", "--force"], "error", ("run",),
             copy_fixture("run4", "run"), preserve=("{W}/run",)))
    add(Case("out-input-file-force", cat, ["map", "{W}/t.csv", *MACH, "--out", "{W}/t.csv", "--force"], "error",
             ("t.csv",), files(t_dot_csv=RING8), preserve=("{W}/t.csv",)))
    add(Case("out-user-dir-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/mine", "--force"], "error",
             ("mine",), files(mine__thesis_dot_tex="chapter 1\n"), preserve=("{W}/mine",)))
    add(Case("out-empty-dir", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/empty"], "ok", (),
             lambda W: (W / "empty").mkdir(), check=mapping_ok("empty", 8)))
    add(Case("out-mapping-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/m", "--force"], "ok", (),
             copy_fixture("map8", "m"), check=mapping_ok("m", 8)))
    add(Case("out-mapping-noforce", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/m"], "error", ("--force",),
             copy_fixture("map8", "m"), preserve=("{W}/m",)))
    add(Case("out-file", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/f"], "error", ("f",), files(f="x"),
             preserve=("{W}/f",)))
    add(Case("out-file-force", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/f", "--force"], "error", ("f",),
             files(f="x"), preserve=("{W}/f",)))
    add(Case("out-under-file", cat, ["map", "{F}/ring8.csv", *MACH, "--out", "{W}/f/sub"], "error", ("f",),
             files(f="x"), preserve=("{W}/f",)))
    add(Case("out-fixture-mapping-force-other-input", cat,
             ["evaluate", "{F}/ring8.csv", "{W}/m", "--plots", "{W}/m"], "either", ("m",),
             copy_fixture("map8", "m"), preserve=("{W}/m/hostfile", "{W}/m/binding.txt")))
    add(Case("out-machine-input-force", cat, ["map", "{F}/ring8.csv", "--machine", "{W}/m", "--out", "{W}/m",
                                              "--force"], "error", ("m",), copy_fixture("map8", "m"),
             preserve=("{W}/m",)))
    add(Case("convert-valid", cat, ["convert", "{F}/ring8.csv", "{W}/g.graph"], "ok", check=exists("g.graph")))
    add(Case("convert-proc", cat, ["convert", "{F}/ring8.csv", "/proc/rankmap.graph"], "error",
             ("/proc/rankmap.graph",)))
    add(Case("convert-same-file-force", cat, ["convert", "{W}/t.csv", "{W}/t.csv", "--force"], "error", ("t.csv",),
             files(t_dot_csv=RING8), preserve=("{W}/t.csv",)))
    add(Case("convert-onto-dir-force", cat, ["convert", "{F}/ring8.csv", "{W}/d.graph", "--force"], "error",
             ("d.graph",), files(d_dot_graph__x="keep"), preserve=("{W}/d.graph",)))
    add(Case("convert-empty-dst", cat, ["convert", "{F}/ring8.csv", ""], "error", ("DST",)))
    add(Case("convert-unknown-ext", cat, ["convert", "{F}/ring8.csv", "{W}/x.xyz"], "error", ("x.xyz",)))
    add(Case("convert-to-bogus", cat, ["convert", "{F}/ring8.csv", "{W}/x.csv", "--to", "excel"], "error",
             ("excel",)))
    add(Case("convert-existing", cat, ["convert", "{F}/ring8.csv", "{W}/x.csv"], "error", ("--force",),
             files(x_dot_csv="mine"), preserve=("{W}/x.csv",)))
    add(Case("convert-into-profile-run", cat, ["convert", "{W}/run", "{W}/run/ranks.x.npz"], "either", ("run",),
             copy_fixture("run4", "run"), preserve=("{W}/run/run.json",)))
    add(Case("convert-missing-parent", cat, ["convert", "{F}/ring8.csv", "{W}/no/such/g.graph"], "either",
             ("no/such",)))
    add(Case("convert-treematch-huge", cat, ["convert", "{W}/t.csv", "{W}/t.dat"], "error", ("t.dat",),
             files(t_dot_csv="src,dst,bytes\n0,1,5\n60000,0,5\n")))
    add(Case("platform-valid", cat, ["platform", "desmos", "--out", "{W}/p"], "ok", check=exists("p/platform.xml")))
    add(Case("platform-dot-force", cat, ["platform", "desmos", "--out", ".", "--force"], "error", ("--out",)))
    add(Case("platform-empty-force", cat, ["platform", "desmos", "--out", "", "--force"], "error", ("--out",)))
    add(Case("platform-user-dir-force", cat, ["platform", "desmos", "--out", "{W}/mine", "--force"], "error",
             ("mine",), files(mine__machine_dot_json="{}", mine__notes="keep"), preserve=("{W}/mine",)))
    add(Case("platform-mapping-force", cat, ["platform", "desmos", "--out", "{W}/m", "--force"], "error", ("m",),
             copy_fixture("map8", "m"), preserve=("{W}/m",)))
    add(Case("platform-proc", cat, ["platform", "desmos", "--out", "/proc/rankmap-p"], "error", ("/proc/rankmap-p",)))
    add(Case("platform-replace-force", cat, ["platform", "angara-k1", "--out", "{W}/p", "--force"], "ok",
             setup=copy_fixture("plat", "p"), check=exists("p/platform.xml")))
    add(Case("heatmap-proc", cat, ["show-profile", "{F}/run4", "--heatmap", "/proc/rankmap.png"], "error",
             ("/proc/rankmap.png",)))
    add(Case("heatmap-empty", cat, ["show-profile", "{F}/run4", "--heatmap", ""], "error", ("--heatmap",)))
    add(Case("heatmap-onto-input", cat, ["show-profile", "{W}/run", "--heatmap", "{W}/run/run.json"], "error",
             ("run.json",), copy_fixture("run4", "run"), preserve=("{W}/run",)))
    add(Case("heatmap-onto-user-file", cat, ["show-profile", "{F}/run4", "--heatmap", "{W}/thesis.tex"], "error",
             ("thesis.tex",), files(thesis_dot_tex="chapter 1"), preserve=("{W}/thesis.tex",)))
    add(Case("heatmap-valid", cat, ["show-profile", "{F}/run4", "--heatmap", "{W}/h.png"], "ok",
             check=exists("h.png")))
    add(Case("heatmap-unknown-ext", cat, ["show-profile", "{F}/run4", "--heatmap", "{W}/h.xyz"], "error",
             ("h.xyz",)))
    add(Case("sbatch-proc", cat, ["sbatch", "-n", "4", "--out", "/proc/rankmap-s", "--", "true"], "error",
             ("/proc/rankmap-s",)))
    add(Case("sbatch-empty-out", cat, ["sbatch", "-n", "4", "--out", "", "--", "true"], "error", ("--out",)))
    add(Case("sbatch-script-onto-input", cat, ["sbatch", "-n", "4", "--out", "{W}/s", "--script", "{W}/app.sh",
                                               "--", "{W}/app.sh"], "error", ("app.sh",),
             files(app_dot_sh="#!/bin/sh\necho hi\n"), preserve=("{W}/app.sh",)))
    add(Case("sbatch-script-onto-user-file", cat, ["sbatch", "-n", "4", "--out", "{W}/s", "--script",
                                                   "{W}/notes.txt", "--", "true"], "error", ("notes.txt",),
             files(notes_dot_txt="keep"), preserve=("{W}/notes.txt",)))
    add(Case("sbatch-ntasks-zero", cat, ["sbatch", "-n", "0", "--out", "{W}/s", "--", "true"], "error", ("-n",)))
    add(Case("sbatch-ntasks-negative", cat, ["sbatch", "-n", "-4", "--out", "{W}/s", "--", "true"], "error",
             ("-n",)))
    add(Case("sbatch-nodes-zero", cat, ["sbatch", "-n", "4", "-N", "0", "--out", "{W}/s", "--", "true"], "error",
             ("-N",)))
    add(Case("sbatch-time-negative", cat, ["sbatch", "-n", "4", "-t", "-5", "--out", "{W}/s", "--", "true"],
             "error", ("-t",)))
    add(Case("sbatch-valid", cat, ["sbatch", "-n", "4", "--out", "{W}/s", "--", "true"], "ok",
             check=exists("s/rankmap.sbatch")))
    add(Case("sbatch-bad-machine-option", cat, ["sbatch", "-n", "4", "--out", "{W}/s", "--torus", "0x1", "--",
                                                "true"], "error", ("--torus",)))
    add(Case("probe-proc", cat, ["probe", "--out", "/proc/rankmap-levels.json", "--nodes", "n1", "--node-topology",
                                 "pack:2 core:1"], "error", ("/proc/rankmap-levels.json",), timeout=120))
    add(Case("probe-empty-out", cat, ["probe", "--out", "", "--nodes", "n1", "--node-topology", "pack:2 core:1"],
             "error", ("--out",), timeout=120))
    add(Case("probe-reps-zero", cat, ["probe", "--reps", "0", "--out", "{W}/l.json", "--nodes", "n1",
                                      "--node-topology", "pack:2 core:1"], "error", ("--reps",), timeout=120))
    add(Case("probe-reps-negative", cat, ["probe", "--reps", "-3", "--out", "{W}/l.json", "--nodes", "n1",
                                          "--node-topology", "pack:2 core:1"], "error", ("--reps",), timeout=120))
    add(Case("probe-onto-user-file", cat, ["probe", "--out", "{W}/notes.txt", "--nodes", "n1", "--node-topology",
                                           "pack:2 core:1"], "error", ("notes.txt",), files(notes_dot_txt="keep"),
             preserve=("{W}/notes.txt",), timeout=120))
    T = ["tune-collectives", "-n", "2"]
    add(Case("tune-proc", cat, T + ["--out", "/proc/rankmap-tuning"], "error", ("/proc/rankmap-tuning",)))
    add(Case("tune-empty-out", cat, T + ["--out", ""], "error", ("--out",)))
    add(Case("tune-onto-dir", cat, T + ["--out", "{W}"], "error", ("--out",)))
    add(Case("tune-n1", cat, ["tune-collectives", "-n", "1", "--out", "{W}/t"], "error", ("-n",)))
    add(Case("tune-margin-nan", cat, T + ["--margin", "nan", "--out", "{W}/t"], "error", ("--margin",)))
    add(Case("tune-sizes-word", cat, T + ["--sizes", "8,abc", "--out", "{W}/t"], "error", ("--sizes",)))
    add(Case("tune-sizes-empty", cat, T + ["--sizes", "", "--out", "{W}/t"], "error", ("--sizes",)))
    add(Case("tune-sizes-negative", cat, T + ["--sizes", "-8", "--out", "{W}/t"], "error", ("--sizes",)))
    add(Case("tune-sizes-huge", cat, T + ["--sizes", "99999999999999", "--out", "{W}/t"], "error", ("--sizes",)))
    add(Case("tune-ops-bogus", cat, T + ["--ops", "bogus", "--out", "{W}/t"], "error", ("bogus",)))
    add(Case("tune-ops-late-bogus", cat, T + ["--ops", "allreduce,bogus", "--out", "{W}/t"], "error", ("bogus",)))
    add(Case("tune-per-node-zero", cat, T + ["--platform", "{F}/plat", "--per-node", "0", "--out", "{W}/t"], "error",
             ("--per-node",)))
    add(Case("tune-overhead-nan", cat, T + ["--platform", "{F}/plat", "--overhead-us", "nan", "--out", "{W}/t"],
             "error", ("--overhead-us",)))
    add(Case("tune-grid-word", cat, T + ["--grid", "axb", "--out", "{W}/t"], "error", ("--grid",)))
    add(Case("tune-ntasks-huge", cat, ["tune-collectives", "-n", "100000000", "--out", "{W}/t"], "error", ("-n",)))
    add(Case("tune-platform-not-dir", cat, T + ["--platform", "{F}/ring8.csv", "--out", "{W}/t"], "error",
             ("ring8.csv",)))
    PR = ["profile"]
    add(Case("profile-out-dot", cat, PR + ["--out", ".", "--", "mpirun", "-np", "2", "true"], "error", ("--out",)))
    add(Case("profile-out-empty", cat, PR + ["--out", "", "--", "mpirun", "-np", "2", "true"], "error", ("--out",)))
    add(Case("profile-out-proc", cat, PR + ["--out", "/proc/rankmap-p", "--", "mpirun", "-np", "2", "true"], "error",
             ("/proc/rankmap-p",)))
    add(Case("profile-out-existing-run", cat, PR + ["--out", "{W}/run", "--", "mpirun", "-np", "2", "true"], "error",
             ("run",), copy_fixture("run4", "run"), preserve=("{W}/run",)))
    add(Case("profile-timeout-negative", cat, PR + ["--out", "{W}/p", "--timeout", "-1", "--", "mpirun", "-np", "2",
                                                    "true"], "error", ("--timeout",)))
    add(Case("profile-timeout-nan", cat, PR + ["--out", "{W}/p", "--timeout", "nan", "--", "mpirun", "-np", "2",
                                               "true"], "error", ("--timeout",)))
    add(Case("profile-flush-negative", cat, PR + ["--out", "{W}/p", "--flush-seconds", "-2", "--", "mpirun", "-np",
                                                  "2", "true"], "error", ("--flush-seconds",)))
    add(Case("profile-flush-nan", cat, PR + ["--out", "{W}/p", "--flush-seconds", "nan", "--", "mpirun", "-np", "2",
                                             "true"], "error", ("--flush-seconds",)))
    add(Case("profile-no-command", cat, PR + ["--out", "{W}/p"], "error", ("COMMAND",)))
    add(Case("profile-collectives-bogus", cat, PR + ["--out", "{W}/p", "--collectives", "tree", "--", "mpirun",
                                                     "-np", "2", "{F}/traffic", "ring"], "error", ("tree",)))
    add(Case("profile-valid", cat, PR + ["--out", "{W}/p", "--", "mpirun", "--oversubscribe", "-np", "2",
                                         "{F}/traffic", "ring"], "ok", check=exists("p/run.json"), timeout=120))
    RN = ["run"]
    add(Case("run-out-proc", cat, RN + ["-n", "2", "--out", "/proc/rankmap-r", "--", "true"], "error",
             ("/proc/rankmap-r",)))
    add(Case("run-out-dot", cat, RN + ["-n", "2", "--out", ".", "--", "true"], "error", ("--out",)))
    add(Case("run-ntasks-negative", cat, RN + ["-n", "-2", "--out", "{W}/r", "--", "true"], "error", ("-n",)))
    add(Case("run-ntasks-zero", cat, RN + ["-n", "0", "--out", "{W}/r", "--", "true"], "error", ("-n",)))
    add(Case("run-time-negative", cat, RN + ["-n", "2", "-t", "-1", "--out", "{W}/r", "--", "true"], "error",
             ("-t",)))
    add(Case("run-nodes-zero", cat, RN + ["-n", "2", "-N", "0", "--out", "{W}/r", "--", "true"], "error", ("-N",)))
    add(Case("run-bad-torus", cat, RN + ["-n", "2", "--torus", "0", "--out", "{W}/r", "--", "true"], "error",
             ("--torus",)))
    add(Case("run-smpi-no-platform", cat, RN + ["--launcher", "smpi", "-n", "2", "--", "true"], "error",
             ("--platform",)))
    add(Case("run-smpi-bad-platform", cat, RN + ["--launcher", "smpi", "--platform", "{W}", "-n", "2", "--", "true"],
             "error", ("--platform",)))
    add(Case("demo-out-proc", cat, ["demo", "--out", "/proc/rankmap-d"], "error", ("/proc/rankmap-d",)))
    add(Case("demo-out-dot", cat, ["demo", "--out", "."], "error", ("--out",)))
    add(Case("demo-out-empty", cat, ["demo", "--out", ""], "error", ("--out",)))
    add(Case("demo-out-file", cat, ["demo", "--out", "{W}/f"], "error", ("f",), files(f="keep"),
             preserve=("{W}/f",)))

    # --- platform options
    cat = "platform"
    PL = ["platform", "--out", "{W}/p"]
    for cid, args, expect, where in [
        ("plat-unknown", ["marsnet"], "error", "marsnet"),
        ("plat-nothing", [], "error", "--torus"),
        ("plat-torus-zero", ["--torus", "0x2"], "error", "0x2"),
        ("plat-torus-huge", ["--torus", "1000x1000x1000"], "error", "--torus"),
        ("plat-fat-tree-bad", ["--fat-tree", "2;8"], "error", "2;8"),
        ("plat-fat-tree-zero", ["--fat-tree", "2;0,4;1,2;1,1"], "error", "--fat-tree"),
        ("plat-fat-tree-huge", ["--fat-tree", "2;100000,100000;1,1;1,1"], "error", "--fat-tree"),
        ("plat-cores-zero", ["desmos", "--cores", "0"], "error", "--cores"),
        ("plat-cores-huge", ["desmos", "--cores", "100000000"], "error", "--cores"),
        ("plat-link-bw-nan", ["desmos", "--link-bw", "nan"], "error", "--link-bw"),
        ("plat-link-bw-negative", ["desmos", "--link-bw", "-1"], "error", "--link-bw"),
        ("plat-link-lat-inf", ["desmos", "--link-lat", "inf"], "error", "--link-lat"),
        ("plat-nic-nan", ["desmos", "--nic-bw", "nan"], "error", "--nic-bw"),
        ("plat-nic-word", ["desmos", "--nic-bw", "fast"], "error", "--nic-bw"),
        ("plat-nic-none", ["desmos", "--nic-bw", "none"], "ok", None),
        ("plat-scale-zero", ["desmos", "--network-scale", "0"], "error", "--network-scale"),
        ("plat-core-speed-negative", ["desmos", "--core-speed", "-1"], "error", "--core-speed"),
        ("plat-torus-and-fat", ["--torus", "2", "--fat-tree", "2;8,4;1,2;1,1"], "error", "--fat-tree"),
        ("plat-custom-torus", ["--torus", "2x2", "--cores", "4"], "ok", None),
    ]:
        add(Case(cid, cat, PL + args, expect, (where,) if where else (),
                 check=exists("p/platform.xml") if expect == "ok" else None))

    # --- replay / mpirun / srun dry runs
    cat = "launch"
    add(Case("mpirun-dry-valid", cat, ["mpirun", "{F}/map8", "--dry-run", "--", "./app"], "ok"))
    add(Case("mpirun-dry-no-program", cat, ["mpirun", "{F}/map8", "--dry-run"], "error", ("APP",)))
    add(Case("mpirun-not-a-mapping", cat, ["mpirun", "{W}/d", "--dry-run", "--", "./app"], "error", ("d",),
             files(d__x="1")))
    add(Case("mpirun-binding-bad", cat, ["mpirun", "{W}/m", "--dry-run", "--", "./app"], "error", ("binding.txt:2",),
             copy_fixture("map8", "m", lambda W: (W / "m" / "binding.txt").write_text("0 n1 0\n1 n1 x\n"))))
    add(Case("mpirun-binding-core-too-big", cat, ["srun", "{W}/m", "--dry-run", "--", "./app"], "error",
             ("core",), copy_fixture("map8", "m", lambda W: (W / "m" / "binding.txt").write_text(
                 "".join(f"{r} n{1 + r // 4} {r + 100}\n" for r in range(8))))))
    add(Case("replay-missing-trace", cat, ["replay", "{W}/none.ti", "{F}/map8", "--platform", "{F}/plat"], "error",
             ("none.ti",)))
    add(Case("replay-count-mismatch", cat, ["replay", "{F}/trace", "{F}/map8", "--platform", "{F}/plat"], "error",
             ("8 ranks",)))
    add(Case("replay-unknown-host", cat, ["replay", "{F}/trace", "{W}/h", "--platform", "{F}/plat"], "error",
             ("zz",), files(h="zz\nzz\nzz\nzz\n"), timeout=120))
    add(Case("replay-bad-platform", cat, ["replay", "{F}/trace", "{W}/h", "--platform", "{W}"], "error",
             ("--platform",), files(h="n0\nn0\nn0\nn0\n")))
    return C


def _rmp_dir(W: Path) -> None:
    for f in (W / "run").glob("*.rmp"):
        f.unlink()
    (W / "run" / "ranks.x.rmp").mkdir()
    (W / "run" / "run.json").unlink()


def _huge_sparse_npz() -> bytes:
    """A .npz that declares a 10^10 x 10^10 sparse matrix with one entry."""
    b = io.BytesIO()
    np.savez(b, indices=np.array([1], dtype=np.int32), indptr=np.array([0, 1], dtype=np.int32),
             format=np.array("csr"), shape=np.array([10 ** 10, 10 ** 10]), data=np.array([5.0]))
    return b.getvalue()
