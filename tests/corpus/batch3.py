"""Batch 3 of bad and edge inputs: written by a new hand after batches 1 and 2 were fixed,
without looking at which checks exist: every verb, every input kind again (traffic of each
format, SMPI traces, damaged run directories, --network specs and topology.conf files,
machine JSON, seeds and --imbalance, output paths, predict's speeds) and sizes that must fail
fast or finish within the time limit.

Run: .venv/bin/python tests/corpus/harness.py tests/corpus/batch3.py

298 cases. Before the fixes (RANKMAP_CORPUS_CHECKOUT = `git archive` of 30edf6f+lead's commits,
i.e. the tree before d23a92c): hang 1, traceback 12, silent wrong 5, unclear error 6 (one of
them a native crash: a sparse .npz with indices beyond its shape died in scipy with SIGSEGV or
"double free", nothing on stderr), refused valid 1, clear error 214, correct 59. After: clear
error 239, correct 59, nothing else. Rerun 2026-11-26 after later changes: clear error 239,
correct 58, unclear error 1 (nodes3-range-too-large: the slot limit's message named neither
--nodes nor the cores per node); after its fix clear error 240, correct 58, nothing else."""
from __future__ import annotations

import io
import json
import os
import struct
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from harness import Case, exists, mapping_ok, stdout_json_ok
import batch1
import batch2

MACH = batch2.MACH                                    # 3 nodes of 4 cores: 12 slots
RING6 = batch2.RING6
files = batch1.files
copy_fixture = batch1.copy_fixture
m6 = batch2.m6
opt = batch2.opt


def fixtures(F: Path) -> None:
    batch2.fixtures(F)


def says(word: str):
    def check(W: Path, out: str):
        return None if word in out.lower() else f"the output does not say {word!r}"
    return check


def metis_ok(rel: str):
    """A METIS graph whose edge weights are whole numbers >= 1 (a wrapped 64-bit weight is negative)."""
    def check(W: Path, out: str):
        lines = [ln for ln in (W / rel).read_text().splitlines() if not ln.startswith("%")]
        for ln in lines[1:]:
            toks = ln.split()
            if any(int(w) < 1 for w in toks[1::2]):
                return f"a METIS edge weight < 1: {ln[:80]}"
        return None
    return check


def npz_bytes(**arrays) -> bytes:
    b = io.BytesIO()
    np.savez(b, **arrays)
    return b.getvalue()


def spz(m) -> bytes:
    b = io.BytesIO()
    sp.save_npz(b, m)
    return b.getvalue()


def trace(rank_lines: dict, index: str | None = None, d: str = "trace_files"):
    """setup: an SMPI time-independent trace W/t/trace.ti with one file per rank, as smpirun
    -trace-ti writes it (rank r in d/rank-<r+1>.txt)."""
    def setup(W: Path):
        t = W / "t"
        (t / d).mkdir(parents=True)
        idx = []
        for r, text in rank_lines.items():
            (t / d / f"rank-{r + 1}.txt").write_text(text)
            idx.append(f"{d}/rank-{r + 1}.txt\n")
        (t / "trace.ti").write_text("".join(idx) if index is None else index)
    return setup


def good_rank(r: int, n: int = 4) -> str:
    return f"{r} init\n{r} send {(r + 1) % n} 0 1000 0\n{r} recv {(r + n - 1) % n} 0 1000 0\n{r} finalize\n"


def rmp(W: Path) -> Path:
    return next((W / "run").glob("*.rmp"))


def damaged_run(edit):
    """setup: a copy of the real 4-rank run, then edit(W)."""
    return copy_fixture("run4", "run", edit)


def truncate_rmp(frac: float):
    def f(W):
        p = rmp(W)
        b = p.read_bytes()
        p.write_bytes(b[:int(len(b) * frac)])
    return f


def mutate_rmp(fn):
    def f(W):
        p = rmp(W)
        p.write_bytes(fn(p.read_bytes()))
    return f


def edit_run_json(fn):
    def f(W):
        p = W / "run" / "run.json"
        d = json.loads(p.read_text())
        p.write_text(fn(d) if callable(fn) else fn)
    return f


def _setitem(d, k, v):
    d[k] = v
    return json.dumps(d)


def blocks(b: bytes) -> list[int]:
    return [i for i in range(len(b)) if b[i:i + 8] == b"RMPROF\x00\x01"]


def drop_last_block(b: bytes) -> bytes:
    offs = blocks(b)
    return b[:offs[-1]] if len(offs) > 1 else b


def cases() -> list[Case]:
    C: list[Case] = []
    add = C.append

    # --- CSV traffic: shapes batches 1 and 2 did not try
    cat = "csv"
    add(m6("csv3-header-dst-src-swapped", cat, "t.csv", "dst,src,bytes\n" + RING6.split("\n", 1)[1], "either",
           ["t.csv"]))
    add(m6("csv3-header-unknown-names", cat, "t.csv", "a,b,c\n" + RING6.split("\n", 1)[1], "either", ["t.csv"]))
    add(m6("csv3-header-mid-file", cat, "t.csv", "0,1,5\nsrc,dst,bytes\n1,2,5\n", "error", ["t.csv:2"]))
    add(m6("csv3-five-fields", cat, "t.csv", RING6 + "0,2,5,1,9\n", "error", ["t.csv:8"]))
    add(m6("csv3-bytes-with-unit", cat, "t.csv", RING6 + "0,2,5KB\n", "error", ["t.csv:8"]))
    add(m6("csv3-bytes-thousands-sep", cat, "t.csv", RING6 + '0,2,"1,000"\n', "error", ["t.csv:8"]))
    add(m6("csv3-rank-with-space-inside", cat, "t.csv", RING6 + "1 2,3,5\n", "error", ["t.csv:8"]))
    add(m6("csv3-ranks-sparse-ids", cat, "t.csv", "src,dst,bytes\n0,5,10\n5,0,10\n", "ok", n=6))
    add(m6("csv3-bytes-1e19-many", cat, "t.csv", "src,dst,bytes\n" + "".join(f"{i},{j},1e19\n" for i in range(6)
                                                                          for j in range(6) if i != j),
           "either", ["t.csv"]))
    add(m6("csv3-nbsp-space", cat, "t.csv", RING6 + "0,\u00a02,5\n", "either", ["t.csv:8"]))
    add(m6("csv3-cr-only-lines", cat, "t.csv", RING6.replace("\n", "\r"), "either", ["t.csv"]))
    add(m6("csv3-zero-bytes-all", cat, "t.csv", "src,dst,bytes\n0,1,0\n1,2,0\n2,0,0\n", "either", ["t.csv"], n=3))
    add(m6("csv3-bytes-denormal", cat, "t.csv", RING6 + "0,3,4.9e-324\n", "either", ["t.csv"]))
    add(m6("csv3-bytes-1e-400", cat, "t.csv", RING6 + "0,3,1e-400\n", "either", ["t.csv:8"]))
    add(m6("csv3-bytes-1e400", cat, "t.csv", RING6 + "0,3,1e400\n", "error", ["t.csv:8"]))
    add(m6("csv3-utf8-bad-midfile", cat, "t.csv", RING6.encode() + b"0,3,\xff\xfe\n", "error", ["t.csv"]))
    add(m6("csv3-ext-upper", cat, "T.CSV", RING6, "either", ["T.CSV"]))
    add(m6("csv3-no-extension", cat, "traffic", RING6, "either", ["traffic"]))
    add(m6("csv3-format-bogus", cat, "t.csv", RING6, "error", ["--format"], fmt="excel"))
    add(Case("csv3-format-empty", cat, ["map", "{F}/ring6.csv", *MACH, "--out", "{W}/out", "--format", ""], "error",
             ("--format",)))

    # --- MatrixMarket
    cat = "mtx"
    H = "%%MatrixMarket matrix coordinate real general\n"
    add(m6("mtx3-valid-pattern", cat, "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n"
           "3 1\n", "either", ["m.mtx"], n=3))
    add(m6("mtx3-not-square", cat, "m.mtx", H + "3 4 1\n1 2 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-index-zero", cat, "m.mtx", H + "3 3 1\n0 2 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-index-beyond", cat, "m.mtx", H + "3 3 1\n4 2 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-value-nan", cat, "m.mtx", H + "3 3 2\n1 2 nan\n2 1 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-value-negative", cat, "m.mtx", H + "3 3 2\n1 2 -5\n2 1 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-more-entries", cat, "m.mtx", H + "3 3 1\n1 2 5\n2 1 5\n3 1 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-no-banner", cat, "m.mtx", "3 3 2\n1 2 5\n2 1 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-banner-only", cat, "m.mtx", H, "error", ["m.mtx"]))
    add(m6("mtx3-hermitian", cat, "m.mtx", "%%MatrixMarket matrix coordinate complex hermitian\n2 2 1\n2 1 1 1\n",
           "error", ["m.mtx"]))
    add(m6("mtx3-size-line-word", cat, "m.mtx", H + "three 3 1\n1 2 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-declared-10e9", cat, "m.mtx", H + "1000000000 1000000000 1\n1 2 5\n", "error", ["m.mtx"],
           timeout=60))
    add(m6("mtx3-nnz-declared-huge", cat, "m.mtx", H + "3 3 100000000000\n1 2 5\n", "error", ["m.mtx"]))
    add(m6("mtx3-skew-symmetric", cat, "m.mtx", "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n"
           "2 1 3\n", "either", ["m.mtx"], n=2))

    # --- NPZ
    cat = "npz"
    ring = np.roll(np.eye(6), 1, axis=1) * 10
    add(m6("npz3-two-arrays", cat, "m.npz", npz_bytes(a=ring, b=ring), "either", ["m.npz"]))
    add(m6("npz3-1d", cat, "m.npz", npz_bytes(a=np.arange(6.0)), "error", ["m.npz"]))
    add(m6("npz3-3d", cat, "m.npz", npz_bytes(a=np.zeros((2, 2, 2))), "error", ["m.npz"]))
    add(m6("npz3-not-square", cat, "m.npz", npz_bytes(a=np.ones((3, 4))), "error", ["m.npz"]))
    add(m6("npz3-negative-dense", cat, "m.npz", npz_bytes(a=-ring), "error", ["m.npz"]))
    add(m6("npz3-bool", cat, "m.npz", npz_bytes(a=ring > 0), "either", ["m.npz"]))
    add(m6("npz3-sparse-shape-huge", cat, "m.npz", spz(sp.coo_matrix(([1.0], ([0], [1])), shape=(1 << 40, 1 << 40))),
           "error", ["m.npz"]))
    add(m6("npz3-sparse-negative", cat, "m.npz", spz(sp.csr_matrix(-ring)), "error", ["m.npz"]))
    add(m6("npz3-sparse-indices-beyond", cat, "m.npz", npz_bytes(format=np.array("csr"), shape=np.array([3, 3]),
                                                                 data=np.array([1.0]), indices=np.array([7]),
                                                                 indptr=np.array([0, 1, 1, 1])), "error", ["m.npz"]))
    add(m6("npz3-zip-not-npy", cat, "m.npz", _zip_with("a.npy", b"not an npy"), "error", ["m.npz"]))

    # --- METIS graphs
    cat = "metis"
    add(m6("metis3-valid", cat, "g.graph", "3 3 001\n2 5 3 5\n1 5 3 5\n1 5 2 5\n", "ok", n=3))
    add(m6("metis3-edge-count-wrong", cat, "g.graph", "3 5\n2 3\n1 3\n1 2\n", "error", ["g.graph"]))
    add(m6("metis3-asymmetric", cat, "g.graph", "3 2 001\n2 5\n3 5\n2 5\n", "either", ["g.graph"], n=3))
    add(m6("metis3-neighbour-zero", cat, "g.graph", "2 1\n0\n1\n", "error", ["g.graph"]))
    add(m6("metis3-fewer-lines", cat, "g.graph", "4 2\n2\n1\n", "error", ["g.graph"]))
    add(m6("metis3-more-lines", cat, "g.graph", "2 1\n2\n1\n1\n2\n", "error", ["g.graph"]))
    add(m6("metis3-negative-weight", cat, "g.graph", "2 1 001\n2 -5\n1 -5\n", "error", ["g.graph"]))
    add(m6("metis3-header-n-huge", cat, "g.graph", "100000000000 1\n2\n1\n", "error", ["g.graph"]))
    add(m6("metis3-header-word", cat, "g.graph", "two 1\n2\n1\n", "error", ["g.graph:1"]))
    add(m6("metis3-comment-lines", cat, "g.graph", "% a graph\n2 1 001\n% x\n2 5\n1 5\n", "either", ["g.graph"],
           n=2))

    # --- other text formats and a JSON "matrix"
    cat = "other-formats"
    add(m6("json3-matrix-list", cat, "m.json", json.dumps([[0, 1], [1, 0]]), "error", ["m.json"]))
    add(m6("json3-matrix-fmt-csv", cat, "m.json", json.dumps({"src": [0], "dst": [1]}), "error", ["m.json"],
           fmt="csv"))
    add(m6("ompi3-garbage", cat, "mon.0.prof", "E\t0\t1\tlots bytes 3 msgs\n", "error", ["mon.0.prof"],
           fmt="ompi"))
    # one unambiguous matrix and the user says it is amfch: taken (a guess is refused only under auto)
    OMPI = "# POINT TO POINT\nE\t0\t1\t100 bytes\t1 msgs sent\nE\t1\t0\t100 bytes\t1 msgs sent\n"
    add(Case("ompi3-rank-file-missing", cat, ["map", "{W}/mon.0.prof", *MACH, "--out", "{W}/out"], "error",
             ("mon.1.prof",), files(mon_dot_0_dot_prof=OMPI, mon_dot_2_dot_prof=OMPI)))
    add(Case("ompi3-valid-prefix", cat, ["map", "{W}/mon", *MACH, "--out", "{W}/out"], "ok", (),
             files(mon_dot_0_dot_prof=OMPI, mon_dot_1_dot_prof=OMPI), check=mapping_ok("out", 2)))
    add(m6("amfch3-no-marker", cat, "log.txt", "0 3\n3 0\n", "either", ["log.txt"], n=2, fmt="amfch"))

    # --- SMPI time-independent traces
    cat = "smpi-trace"
    T = ["map", "{W}/t/trace.ti", *MACH, "--out", "{W}/out"]
    four = {r: good_rank(r) for r in range(4)}
    add(Case("ti3-valid", cat, T, "ok", (), trace(four), check=mapping_ok("out", 4)))
    add(Case("ti3-valid-other-dir", cat, T, "ok", (), trace(four, d="tf"), check=mapping_ok("out", 4)))
    add(Case("ti3-numbered-from-0", cat, T, "error", ("trace.ti",),
             trace(four, "".join(f"trace_files/rank-{r}.txt\n" for r in range(4)))))
    add(Case("ti3-index-missing-file", cat, T, "error", ("rank-9",),
             trace(four, "".join(f"trace_files/rank-{r + 1}.txt\n" for r in range(4)) + "trace_files/rank-9.txt\n")))
    add(Case("ti3-index-empty", cat, T, "error", ("trace.ti",), trace(four, "")))
    add(Case("ti3-size-word", cat, T, "error", ("rank-2.txt",),
             trace({**four, 1: "1 init\n1 send 2 0 lots 0\n1 finalize\n"})))
    add(Case("ti3-size-negative", cat, T, "error", ("rank-2.txt",),
             trace({**four, 1: "1 init\n1 send 2 0 -1000 0\n1 finalize\n"})))
    add(Case("ti3-size-1e30", cat, T, "either", ("rank-2.txt",),
             trace({**four, 1: "1 init\n1 send 2 0 1e30 0\n1 finalize\n"})))
    add(Case("ti3-dest-beyond", cat, T, "error", ("rank-2.txt",),
             trace({**four, 1: "1 init\n1 send 77 0 1000 0\n1 finalize\n"})))
    add(Case("ti3-dest-proc-null", cat, T, "ok", (),
             trace({**four, 1: good_rank(1) + "1 send -333 0 1000 0\n"}), check=mapping_ok("out", 4)))
    add(Case("ti3-unknown-action", cat, T, "either", ("rank-2.txt",),
             trace({**four, 1: "1 init\n1 teleport 2 0 1000 0\n1 finalize\n"}), check=mapping_ok("out", 4)))
    add(Case("ti3-binary-rank-file", cat, T, "error", ("rank-3.txt",),
             batch1.both(trace(four), lambda W: (W / "t" / "trace_files" / "rank-3.txt").write_bytes(bytes(range(256)) * 8))))
    add(Case("ti3-rank-file-is-dir", cat, T, "error", ("rank-3.txt",),
             batch1.both(trace(four), lambda W: ((W / "t" / "trace_files" / "rank-3.txt").unlink(),
                                                 (W / "t" / "trace_files" / "rank-3.txt").mkdir()))))
    add(Case("ti3-index-absolute-escape", cat, T, "error", ("trace.ti",), trace(four, "/etc/hostname\n")))
    add(Case("ti3-replay-missing-platform", cat, ["replay", "{W}/t/trace.ti", "{F}/map8/hostfile", "--platform",
                                                  "{W}/noplat"], "error", ("noplat",), trace(four)))
    add(Case("ti3-replay-hostfile-unknown-host", cat, ["replay", "{W}/t/trace.ti", "{W}/h", "--platform", "{F}/plat"],
             "error", ("h",), batch1.both(trace(four), files(h="zz1\nzz1\nzz2\nzz2\n")), timeout=120))
    add(Case("ti3-replay-hostfile-too-few", cat, ["replay", "{W}/t/trace.ti", "{W}/h", "--platform", "{F}/plat"],
             "error", ("h",), batch1.both(trace(four), files(h="n0\n")), timeout=120))

    # --- damaged run directories
    cat = "run-dir"
    S = ["show-profile", "{W}/run"]
    M = ["map", "{W}/run", *MACH, "--out", "{W}/out"]
    add(Case("run3-rmp-truncated-half", cat, M, "error", ("run",), damaged_run(truncate_rmp(0.5)),
             preserve=("{W}/run",)))
    add(Case("run3-rmp-truncated-header", cat, S, "either", ("run",), damaged_run(truncate_rmp(0.01)),
             preserve=("{W}/run",)))
    add(Case("run3-rmp-empty", cat, M, "error", ("run",), damaged_run(truncate_rmp(0.0)), preserve=("{W}/run",)))
    add(Case("run3-rmp-wrong-magic", cat, M, "error", ("run",),
             damaged_run(mutate_rmp(lambda b: b"XXXXXXXX" + b[8:])), preserve=("{W}/run",)))
    add(Case("run3-rmp-last-block-gone", cat, M, "either", ("run",), damaged_run(mutate_rmp(drop_last_block)),
             preserve=("{W}/run",), check=mapping_ok("out", 4)))
    add(Case("run3-rmp-removed", cat, M, "error", ("run",),
             damaged_run(lambda W: rmp(W).unlink()), preserve=("{W}/run",)))
    add(Case("run3-two-rmp", cat, M, "either", ("run",),
             damaged_run(lambda W: (W / "run" / "ranks.other.rmp").write_bytes(rmp(W).read_bytes())),
             preserve=("{W}/run",), check=mapping_ok("out", 4)))
    # run.json is the launcher's record; the ranks' data (with each rank's completion) is whole
    add(Case("run3-run-json-removed", cat, M, "either", ("run",),
             damaged_run(lambda W: (W / "run" / "run.json").unlink()), preserve=("{W}/run",),
             check=mapping_ok("out", 4)))
    add(Case("run3-run-json-list", cat, M, "error", ("run.json",), damaged_run(edit_run_json("[1, 2]")),
             preserve=("{W}/run",)))
    add(Case("run3-run-json-id-mismatch", cat, M, "either", ("run",),
             damaged_run(edit_run_json(lambda d: _setitem(d, "run_id", "20990101000000-deadbeef"))),
             preserve=("{W}/run",), check=mapping_ok("out", 4)))
    add(Case("run3-run-json-id-path", cat, M, "error", ("run_id",),
             damaged_run(edit_run_json(lambda d: _setitem(d, "run_id", "../../etc/passwd"))), preserve=("{W}/run",)))
    add(Case("run3-block-nprocs-zero", cat, M, "error", ("run",),
             damaged_run(mutate_rmp(lambda b: _set_size(b, 0))), preserve=("{W}/run",)))
    add(Case("run3-rmp-appended-garbage", cat, M, "either", ("run",),
             damaged_run(mutate_rmp(lambda b: b + os.urandom(100))), preserve=("{W}/run",),
             check=mapping_ok("out", 4)))
    add(Case("run3-marker-only", cat, M, "error", ("run",),
             files(run__dot_rankmap_profile="rankmap profile\n"), preserve=("{W}/run",)))
    # show-profile summarizes a partial run too, saying so (map needs --allow-partial)
    add(Case("run3-show-heatmap-of-damaged", cat, ["show-profile", "{W}/run", "--heatmap", "{W}/h.png"], "either",
             ("run",), damaged_run(truncate_rmp(0.3)), preserve=("{W}/run",), check=says("partial")))
    add(Case("run3-evaluate-partial", cat, ["evaluate", "{W}/run", "{F}/map8"], "error", ("run",),
             damaged_run(truncate_rmp(0.6)), preserve=("{W}/run",)))

    # --- nodes and node topologies
    cat = "machine"
    add(opt("nodes3-comma-range-mix", cat, ["--nodes", "a1,b[1-2]", "--node-topology", "pack:1 core:4"], "ok",
            machine=False))
    add(opt("nodes3-reverse-range", cat, ["--nodes", "n[3-1]", "--node-topology", "pack:1 core:4"], "error",
            ["n[3-1]"], machine=False))
    add(opt("nodes3-unclosed", cat, ["--nodes", "n[1-3", "--node-topology", "pack:1 core:4"], "error",
            ["n[1-3"], machine=False))
    add(opt("nodes3-nested", cat, ["--nodes", "n[1-[2-3]]", "--node-topology", "pack:1 core:4"], "error",
            ["--nodes"], machine=False))
    add(opt("nodes3-over-limit", cat, ["--nodes", "n[1-2000000]", "--node-topology", "pack:1 core:1"], "error",
            ["--nodes"], machine=False, timeout=60))
    add(opt("nodes3-product-over-limit", cat, ["--nodes", "r[1-2000]n[1-2000]", "--node-topology", "pack:1 core:1"],
            "error", ["--nodes"], machine=False, timeout=60))
    add(opt("nodes3-whitespace-only", cat, ["--nodes", "   ", "--node-topology", "pack:1 core:4"], "error",
            ["--nodes"], machine=False))
    add(opt("nodes3-file-dir", cat, ["--nodes", "@{W}", "--node-topology", "pack:1 core:4"], "error",
            ["--nodes"], machine=False))
    add(opt("topo3-zero-count", cat, ["--nodes", "n[1-3]", "--node-topology", "pack:0 core:4"], "error",
            ["pack:0"], machine=False))
    add(opt("topo3-unknown-type", cat, ["--nodes", "n[1-3]", "--node-topology", "rack:1 core:4"], "error",
            ["rack"], machine=False))
    add(opt("topo3-over-limit", cat, ["--nodes", "n[1-3]", "--node-topology", "pack:2 core:2049"], "error",
            ["core:2049"], machine=False, timeout=30))
    add(opt("topo3-xml-missing", cat, ["--nodes", "n[1-3]", "--node-topology", "{W}/nope.xml"], "error",
            ["nope.xml"], machine=False))
    add(opt("topo3-xml-garbage", cat, ["--nodes", "n[1-3]", "--node-topology", "{W}/t.xml"], "error",
            ["t.xml"], setup=files(t_dot_xml="<topology><object"), machine=False, timeout=120))
    add(opt("topo3-xml-empty", cat, ["--nodes", "n[1-3]", "--node-topology", "{W}/t.xml"], "error",
            ["t.xml"], setup=files(t_dot_xml=""), machine=False, timeout=120))
    add(opt("rpn3-zero", cat, ["--ranks-per-node", "0"], "error", ["--ranks-per-node"]))
    add(opt("rpn3-more-than-cores", cat, ["--ranks-per-node", "5"], "error", ["--ranks-per-node"]))
    add(opt("oversub3-zero", cat, ["--oversubscribe", "0"], "error", ["--oversubscribe"]))
    add(opt("nodes3-range-too-large", cat, ["--nodes", "n[1-1000000]", "--node-topology", "pack:1 core:32"],
            "error", ["--nodes"], machine=False, timeout=60))
    add(opt("slots3-over-limit", cat, ["--nodes", "n[1-5000]", "--node-topology", "pack:1 core:4096"],
            "error", ["slots"], machine=False, timeout=60))

    # --- networks: --network, --torus, topology.conf
    cat = "network"
    add(opt("net3-torus-wrap-short", cat, ["--network", "torus:3x1:wrap=1"], "error", ["wrap"]))
    add(opt("net3-torus-wrap-2", cat, ["--network", "torus:3:wrap=2"], "error", ["wrap"]))
    add(opt("net3-torus-too-small", cat, ["--network", "torus:2"], "error", ["3 nodes"]))
    add(opt("net3-mesh-valid", cat, ["--network", "mesh:3x1"], "ok"))
    add(opt("net3-tofu-2d", cat, ["--network", "tofu:2x2"], "error", ["tofu"]))
    add(opt("net3-tofu-valid", cat, ["--network", "tofu:1x1x1"], "ok"))
    add(opt("net3-fat-tree-valid", cat, ["--network", "fat-tree:2x2"], "ok"))
    add(opt("net3-fat-tree-oversub-word", cat, ["--network", "fat-tree:2x2:oversub=lots"], "error", ["oversub"]))
    add(opt("net3-fat-tree-oversub-zero", cat, ["--network", "fat-tree:2x2:oversub=0"], "error", ["oversub"]))
    add(opt("net3-fat-tree-too-small", cat, ["--network", "fat-tree:1x2"], "error", ["1x2"]))
    add(opt("net3-fat-tree-simgrid-valid", cat, ["--network", "fat-tree:2;2,2;1,2;1,1"], "ok"))
    add(opt("net3-fat-tree-simgrid-short", cat, ["--network", "fat-tree:2;2,2;1,2"], "error", ["fat tree"]))
    add(opt("net3-fat-tree-simgrid-overflow", cat, ["--network", "fat-tree:2;2,2;4294967296,4294967296;1,1"],
            "either", ["fat tree"]))
    add(opt("net3-fat-tree-simgrid-levels-huge", cat, ["--network", "fat-tree:99999999999;2;1;1"], "error",
            ["fat tree"]))
    add(opt("net3-dragonfly-valid", cat, ["--network", "dragonfly:2x2x1"], "ok"))
    add(opt("net3-dragonfly-too-small", cat, ["--network", "dragonfly:1x1x2"], "error", ["dragonfly"]))
    add(opt("net3-dragonfly-global-word", cat, ["--network", "dragonfly:2x2x1:global=many"], "error", ["global"]))
    add(opt("net3-dragonfly-routing-bad", cat, ["--network", "dragonfly:2x2x1:routing=ugal"], "error", ["routing"]))
    add(opt("net3-dragonfly-unknown-key", cat, ["--network", "dragonfly:2x2x1:speed=3"], "error", ["speed"]))
    add(opt("net3-key-no-value", cat, ["--network", "torus:3:wrap"], "error", ["wrap"]))
    add(opt("net3-and-torus", cat, ["--network", "torus:3", "--torus", "3"], "error", ["--torus"]))
    add(opt("net3-slurm-no-scontrol", cat, ["--network", "slurm"], "error", ["scontrol"]))
    TC = ["--network", "slurm:{W}/topology.conf"]
    add(opt("tconf3-valid-tree", cat, TC, "ok", setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-2]\n"
                                                             "SwitchName=s1 Nodes=n3\nSwitchName=top Switches=s[0-1]\n")))
    add(opt("tconf3-missing", cat, TC, "error", ["topology.conf"]))
    add(opt("tconf3-empty", cat, TC, "error", ["topology.conf"], setup=files(topology_dot_conf="")))
    add(opt("tconf3-binary", cat, TC, "error", ["topology.conf"],
            setup=files(topology_dot_conf=b"SwitchName=s0 Nodes=n[1-3]\n\xff\xfe\x00\n")))
    add(opt("tconf3-fifo", cat, TC, "error", ["topology.conf"],
            setup=lambda W: os.mkfifo(W / "topology.conf"), timeout=30))
    add(opt("tconf3-host-missing", cat, TC, "error", ["n3"], setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-2]\n")))
    add(opt("tconf3-undefined-child", cat, TC, "error", ["s9"],
            setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-3]\nSwitchName=top Switches=s[0,9]\n")))
    add(opt("tconf3-cycle", cat, TC, "error", ["descendant"],
            setup=files(topology_dot_conf="SwitchName=a Switches=b Nodes=n[1-3]\nSwitchName=b Switches=a\n")))
    add(opt("tconf3-deep-chain", cat, TC, "either", ["topology.conf"],
            setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-3]\n" + "".join(
                f"SwitchName=s{i} Switches=s{i - 1}\n" for i in range(1, 3000)))))
    add(opt("tconf3-bad-hostlist", cat, TC, "error", ["topology.conf"],
            setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-\n")))
    add(opt("tconf3-blocks-valid", cat, TC, "ok",
            setup=files(topology_dot_conf="BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n3\nBlockSizes=2,4\n")))
    add(opt("tconf3-blocksizes-zero", cat, TC, "error", ["BlockSizes"],
            setup=files(topology_dot_conf="BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n3\nBlockSizes=2,0\n")))
    add(opt("tconf3-blocksizes-negative", cat, TC, "error", ["BlockSizes"],
            setup=files(topology_dot_conf="BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n3\nBlockSizes=2,-2\n")))
    add(opt("tconf3-blocksizes-words", cat, TC, "error", ["BlockSizes"],
            setup=files(topology_dot_conf="BlockName=b1 Nodes=n[1-3]\nBlockSizes=a,b\n")))
    add(opt("tconf3-switch-twice", cat, TC, "error", ["s0"],
            setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-3]\nSwitchName=s0 Nodes=n1\n")))
    add(opt("tconf3-level-huge", cat, TC, "either", ["topology.conf"],
            setup=files(topology_dot_conf="SwitchName=s0 Nodes=n[1-3] Level=99999999999999999999\n")))
    add(opt("torus3-coords-outside", cat, ["--torus", "3", "--coords", "{W}/c"], "error", ["c"],
            setup=files(c="n1 0\nn2 1\nn3 3\n")))
    add(opt("torus3-coords-duplicate", cat, ["--torus", "3", "--coords", "{W}/c"], "error", ["c"],
            setup=files(c="n1 0\nn2 0\nn3 1\n")))
    add(opt("torus3-coords-missing-host", cat, ["--torus", "3", "--coords", "{W}/c"], "error", ["n3"],
            setup=files(c="n1 0\nn2 1\n")))
    add(opt("torus3-coords-with-fat-tree", cat, ["--network", "fat-tree:2x2", "--coords", "{W}/c"], "error",
            ["--coords"], setup=files(c="n1 0\nn2 1\nn3 2\n")))
    add(opt("switch3-too-small", cat, ["--switch-tree", "1x2"], "error", ["switch tree 1x2"]))

    # --- level costs, hop cost, --machine
    cat = "costs-machine"
    add(opt("costs3-nan", cat, ["--level-costs", "nan,1,1"], "error", ["--level-costs"]))
    add(opt("costs3-empty-item", cat, ["--level-costs", "100,,1"], "error", ["--level-costs"]))
    add(opt("costs3-file-missing", cat, ["--level-costs", "@{W}/nope.json"], "error", ["nope.json"]))
    # {"level_costs": [...]}: the list inside the documented object, read as the list (costs 1, 2, 3)
    add(opt("costs3-file-nested-list", cat, ["--level-costs", "@{W}/l.json"], "either", ["l.json"],
            setup=files(l_dot_json=json.dumps({"level_costs": [1, 2, 3]}))))
    add(opt("costs3-file-unknown-level", cat, ["--level-costs", "@{W}/l.json"], "error", ["l.json"],
            setup=files(l_dot_json=json.dumps({"level_costs": {"galaxy": 1}}))))
    add(opt("costs3-file-bool", cat, ["--level-costs", "@{W}/l.json"], "error", ["l.json"],
            setup=files(l_dot_json=json.dumps([True, 1, 1]))))
    add(opt("hop3-negative", cat, ["--torus", "3", "--hop-cost", "-1"], "error", ["--hop-cost"]))
    add(opt("hop3-word", cat, ["--torus", "3", "--hop-cost", "far"], "error", ["--hop-cost"]))
    MJ = ["map", "{F}/ring6.csv", "--machine", "{W}/m.json", "--out", "{W}/out"]
    good = {"hosts": ["n1", "n2", "n3"], "node_topology": ["pack:1 core:4"], "torus": None, "mesh": None,
            "coords": None, "switch_tree": None, "level_costs": None, "hop_cost": None, "ranks_per_node": None,
            "oversubscribe": 1, "network": None}
    for cid, content, expect, where in [
        ("mj3-valid", json.dumps(good), "ok", None),
        ("mj3-hosts-empty", json.dumps(dict(good, hosts=[])), "error", "hosts"),
        ("mj3-hosts-numbers", json.dumps(dict(good, hosts=[1, 2, 3])), "error", "hosts"),
        ("mj3-network-garbage", json.dumps(dict(good, network="hypercube:3")), "error", "hypercube"),
        ("mj3-network-dict-bad", json.dumps(dict(good, network={"kind": "torus"})), "error", "m.json"),
        ("mj3-oversub-negative", json.dumps(dict(good, oversubscribe=-1)), "error", "oversubscribe"),
        ("mj3-level-costs-list", json.dumps(dict(good, level_costs=[1e20, 1, 1])), "error", "m.json"),
        ("mj3-topology-null", json.dumps(dict(good, node_topology=None)), "either", "node_topology"),
        ("mj3-empty-object", "{}", "error", "m.json"),
        ("mj3-unknown-key", json.dumps(dict(good, colour="blue")), "either", "colour"),
    ]:
        add(Case(cid, cat, MJ, expect, (where,) if where else (), files(m_dot_json=content),
                 preserve=("{W}/m.json",), check=mapping_ok("out", 6) if expect != "error" else None))
    add(Case("mj3-machine-plus-nodes", cat, MJ + ["--nodes", "n[1-3]"], "either", ("--nodes",),
             files(m_dot_json=json.dumps(good)), check=mapping_ok("out", 6)))
    add(Case("mj3-machine-is-platform", cat, ["map", "{F}/ring6.csv", "--machine", "{F}/plat", "--out", "{W}/out"],
             "either", ("plat",), check=mapping_ok("out", 6), timeout=120))

    # --- seeds, tries, imbalance, algorithms
    cat = "search-options"
    for cid, extra, expect, where in [
        ("seed3-negative", ["--seed", "-1"], "error", "--seed"),
        ("seed3-over", ["--seed", "1000000001"], "error", "--seed"),
        ("seed3-word", ["--seed", "abc"], "error", "--seed"),
        ("seed3-empty", ["--seed", ""], "error", "--seed"),
        ("seed3-max", ["--seed", "1000000000"], "ok", None),
        ("tries3-zero", ["--tries", "0"], "error", "--tries"),
        ("tries3-huge", ["--tries", "1000000000"], "either", "--tries"),
        ("imb3-negative", ["--imbalance", "-0.1"], "error", "--imbalance"),
        ("imb3-nan", ["--imbalance", "nan"], "error", "--imbalance"),
        ("imb3-inf", ["--imbalance", "inf"], "error", "--imbalance"),
        ("imb3-word", ["--imbalance", "lots"], "error", "--imbalance"),
        ("imb3-zero", ["--imbalance", "0"], "ok", None),
        ("imb3-large", ["--imbalance", "1e9"], "either", "--imbalance"),
        ("imb3-valid", ["--imbalance", "0.05"], "ok", None),
        ("imb3-percent", ["--imbalance", "5%"], "error", "--imbalance"),
        ("tl3-negative", ["--time-limit", "-1"], "error", "--time-limit"),
        ("tl3-nan", ["--time-limit", "nan"], "error", "--time-limit"),
        ("alg3-scotch", ["--algorithm", "scotch"], "either", "scotch"),
        ("alg3-block-imbalance", ["--algorithm", "block", "--imbalance", "0.5"], "either", "--imbalance"),
        ("alg3-unknown", ["--algorithm", "magic"], "error", "--algorithm"),
        ("mode3-bogus", ["--mode", "all"], "error", "--mode"),
        ("fill3-bogus", ["--fill", "diagonal"], "error", "--fill"),
        ("par3-launcher-bogus", ["--parallel", "2", "--parallel-launcher", "pbs"], "error", "--parallel-launcher"),
    ]:
        add(opt(cid, cat, extra, expect, [where] if where else [], timeout=120))

    # --- outputs
    cat = "outputs"
    O = ["map", "{F}/ring6.csv", *MACH, "--out"]
    add(Case("out3-symlink-to-user-dir", cat, O + ["{W}/link", "--force"], "error", ("link",),
             lambda W: ((W / "mine").mkdir(), (W / "mine" / "a.txt").write_text("x"), os.symlink(W / "mine", W / "link")),
             preserve=("{W}/mine",)))
    add(Case("out3-symlink-to-mapping", cat, O + ["{W}/link", "--force"], "either", ("link",),
             batch1.both(copy_fixture("map8", "m"), lambda W: os.symlink(W / "m", W / "link")),
             check=mapping_ok("link", 6)))
    add(Case("out3-dangling-symlink", cat, O + ["{W}/link"], "either", ("link",),
             lambda W: os.symlink(W / "nowhere", W / "link"), check=mapping_ok("link", 6)))
    add(Case("out3-symlink-to-cwd", cat, O + ["{W}/link", "--force"], "error", ("link",),
             lambda W: os.symlink(W / "cwd", W / "link")))
    add(Case("out3-symlink-to-input-file", cat, O + ["{W}/link", "--force"], "error", ("link",),
             batch1.both(files(t_dot_csv=RING6), lambda W: os.symlink(W / "t.csv", W / "link")),
             preserve=("{W}/t.csv",)))
    add(Case("out3-home-tilde", cat, O + ["~"], "either", ("~",), check=mapping_ok("cwd/~", 6)))
    add(Case("out3-trailing-slash", cat, O + ["{W}/new/"], "ok", (), check=mapping_ok("new", 6)))
    add(Case("out3-newline-in-name", cat, O + ["{W}/a\nb"], "either", ("--out",), check=mapping_ok("a\nb", 6)))
    add(Case("out3-name-too-long", cat, O + ["{W}/" + "x" * 300], "error", ("--out",)))
    add(Case("out3-under-symlink-loop", cat, O + ["{W}/loop/m"], "error", ("loop",),
             lambda W: (os.symlink(W / "loop2", W / "loop"), os.symlink(W / "loop", W / "loop2"))))
    add(Case("in3-name-too-long", cat, ["map", "{W}/" + "y" * 300 + ".csv", *MACH, "--out", "{W}/out"], "error",
             ("yyyy",)))
    add(Case("in3-nodes-file-too-long", cat, ["map", "{F}/ring6.csv", "--nodes", "@{W}/" + "y" * 300,
                                              "--node-topology", "pack:1 core:4", "--out", "{W}/out"], "error",
             ("yyyy",)))
    add(Case("in3-machine-too-long", cat, ["map", "{F}/ring6.csv", "--machine", "{W}/" + "y" * 300, "--out",
                                           "{W}/out"], "error", ("yyyy",)))
    add(Case("in3-run-too-long", cat, ["show-profile", "{W}/" + "y" * 300], "error", ("yyyy",)))
    add(Case("in3-input-through-loop", cat, ["map", "{W}/loop/t.csv", *MACH, "--out", "{W}/out"], "error",
             ("loop",), lambda W: (os.symlink(W / "loop2", W / "loop"), os.symlink(W / "loop", W / "loop2"))))
    add(Case("out3-under-proc", cat, O + ["/proc/rankmap-out"], "error", ("/proc/rankmap-out",)))
    add(Case("out3-under-file", cat, O + ["{W}/f/out"], "error", ("f",), files(f="keep"), preserve=("{W}/f",)))
    add(Case("out3-root", cat, O + ["/", "--force"], "error", ("--out",)))
    add(Case("out3-inside-input-run", cat, ["map", "{W}/run", *MACH, "--out", "{W}/run/m"], "either", ("run",),
             copy_fixture("run4", "run"), preserve=("{W}/run/run.json",), check=mapping_ok("run/m", 4)))
    add(Case("out3-is-input-run", cat, ["map", "{W}/run", *MACH, "--out", "{W}/run", "--force"], "error", ("run",),
             copy_fixture("run4", "run"), preserve=("{W}/run",)))
    add(Case("out3-is-machine-input", cat, ["map", "{F}/ring6.csv", "--machine", "{W}/m", "--out", "{W}/m",
                                            "--force"], "error", ("m",), copy_fixture("map8", "m"),
             preserve=("{W}/m",)))
    add(Case("out3-platform-onto-mapping", cat, ["platform", "desmos", "--out", "{W}/m", "--force"], "error", ("m",),
             copy_fixture("map8", "m"), preserve=("{W}/m",)))
    add(Case("out3-mapping-onto-platform", cat, O + ["{W}/p", "--force"], "error", ("p",),
             copy_fixture("plat", "p"), preserve=("{W}/p",)))
    add(Case("conv3-dst-empty", cat, ["convert", "{F}/ring6.csv", ""], "error", ("DST",)))
    add(Case("conv3-dst-is-dir", cat, ["convert", "{F}/ring6.csv", "{W}/d", "--force"], "error", ("d",),
             lambda W: ((W / "d").mkdir(), (W / "d" / "x").write_text("x")), preserve=("{W}/d",)))
    add(Case("conv3-dst-exists-no-force", cat, ["convert", "{F}/ring6.csv", "{W}/o.csv"], "error", ("o.csv",),
             files(o_dot_csv="mine\n"), preserve=("{W}/o.csv",)))
    add(Case("conv3-dst-dev-full", cat, ["convert", "{F}/ring6.csv", "/dev/full", "--force"], "error",
             ("/dev/full",)))
    add(Case("conv3-to-bogus", cat, ["convert", "{F}/ring6.csv", "{W}/o.xyz", "--to", "parquet"], "error",
             ("parquet",)))
    add(Case("conv3-ext-unknown", cat, ["convert", "{F}/ring6.csv", "{W}/o.xyz"], "error", ("o.xyz",)))
    add(Case("conv3-to-npz-ok", cat, ["convert", "{F}/ring6.csv", "{W}/o.npz"], "ok", (), check=exists("o.npz")))
    add(Case("conv3-to-mtx-ext-csv", cat, ["convert", "{F}/ring6.csv", "{W}/o.csv", "--to", "mtx"], "either",
             ("o.csv",), check=exists("o.csv")))
    add(Case("conv3-metis-weight-overflow", cat, ["convert", "{W}/t.csv", "{W}/g.graph"], "error", ("g.graph",),
             files(t_dot_csv=f"src,dst,bytes\n0,1,{2 ** 64}\n1,0,{2 ** 64}\n1,2,5\n2,1,5\n")))
    add(Case("conv3-metis-words-2pow64", cat, ["convert", "{W}/t.csv", "{W}/g.graph", "--units", "words"], "ok", (),
             files(t_dot_csv=f"src,dst,bytes\n0,1,{2 ** 64}\n1,0,{2 ** 64}\n1,2,5\n2,1,5\n"), check=metis_ok("g.graph")))
    add(Case("conv3-src-missing", cat, ["convert", "{W}/none.csv", "{W}/o.csv"], "error", ("none.csv",)))
    add(Case("conv3-from-bogus", cat, ["convert", "{F}/ring6.csv", "{W}/o.csv", "--from", "xls"], "error",
             ("xls",)))
    add(Case("heat3-empty-path", cat, ["show-profile", "{F}/run4", "--heatmap", ""], "error", ("--heatmap",)))
    add(Case("heat3-onto-user-file", cat, ["show-profile", "{F}/run4", "--heatmap", "{W}/h.png"], "error",
             ("h.png",), files(h_dot_png="mine"), preserve=("{W}/h.png",)))
    add(Case("plots3-empty", cat, ["evaluate", "{F}/ring8.csv", "{F}/map8", "--plots", ""], "error", ("--plots",)))
    add(Case("plat3-out-empty", cat, ["platform", "desmos", "--out", ""], "error", ("--out",)))

    # --- predict and evaluate
    cat = "predict"
    P = ["predict", "{F}/ring8.csv", "{F}/map8"]
    PP = P + ["--probe", "{F}/probe.json"]          # the network's speeds, as `rankmap probe` measured them
    for cid, extra, expect, where in [
        ("pred3-link-bw-zero", ["--link-bw", "0"], "error", "--link-bw"),
        ("pred3-link-bw-negative", ["--link-bw", "-3"], "error", "--link-bw"),
        ("pred3-link-bw-huge", ["--link-bw", "1e300"], "error", "--link-bw"),
        ("pred3-link-lat-inf", ["--link-lat", "inf"], "error", "--link-lat"),
        ("pred3-nic-bw-word", ["--nic-bw", "fast"], "error", "--nic-bw"),
        ("pred3-loopback-lat-zero", ["--probe", "{F}/probe.json", "--loopback-lat", "0"], "either", "--loopback-lat"),
        ("pred3-platform-is-mapping", ["--platform", "{F}/map8"], "error", "map8"),
        ("pred3-probe-missing", ["--probe", "{W}/nope.json"], "error", "nope.json"),
        ("pred3-json", ["--probe", "{F}/probe.json", "--json"], "ok", None),
        ("pred3-speeds-given", ["--link-bw", "10", "--link-lat", "1", "--loopback-bw", "20", "--loopback-lat", "0.2",
                                "--json"], "ok", None),
        ("pred3-no-speeds", [], "error", "speed"),
    ]:
        add(Case(cid, cat, P + extra, expect, (where,) if where else (),
                 check=stdout_json_ok if "--json" in extra else None))
    for cid, probe, expect, where in [
        ("pred3-probe-empty-object", {}, "error", "p.json"),
        ("pred3-probe-bw-zero", dict(batch1.PROBE, bandwidth_GBps={"same socket": 0, "other socket": 8.0,
                                                                     "neighbour node": 3.0}), "error", "p.json"),
        ("pred3-probe-lat-string", dict(batch1.PROBE, latency_us={"same socket": "x", "other socket": 0.5,
                                                                   "neighbour node": 2.0}), "error", "p.json"),
        ("pred3-probe-list", [1, 2], "error", "p.json"),
    ]:
        add(Case(cid, cat, P + ["--probe", "{W}/p.json"], expect, (where,), files(p_dot_json=json.dumps(probe))))
    add(Case("pred3-probe-nan-text", cat, P + ["--probe", "{W}/p.json"], "error", ("p.json",),
             files(p_dot_json=json.dumps(batch1.PROBE).replace("10.0", "NaN"))))
    add(Case("pred3-ranks-mismatch", cat, ["predict", "{F}/ring6.csv", "{F}/map8", "--probe", "{F}/probe.json"],
             "error", ("map8",)))
    add(Case("pred3-platform-and-probe", cat, PP + ["--platform", "{F}/plat"], "either", ("--platform",),
             check=None))
    add(Case("eval3-ranks-mismatch", cat, ["evaluate", "{F}/ring6.csv", "{F}/map8"], "error", ("map8",)))
    add(Case("eval3-hostfile-short", cat, ["evaluate", "{F}/ring8.csv", "{W}/h", "--machine", "{F}/map8"], "error",
             ("h",), files(h="n1\nn2\n")))
    add(Case("eval3-hostfile-unknown-host", cat, ["evaluate", "{F}/ring8.csv", "{W}/h", "--machine", "{F}/map8"],
             "error", ("zz",), files(h="zz\n" * 8)))
    add(Case("eval3-binding-core-beyond", cat, ["evaluate", "{F}/ring8.csv", "{W}/b", "--machine", "{F}/map8"],
             "error", ("b",), files(b="".join(f"{r} n{1 + r // 4} {r % 4 + 50}\n" for r in range(8)))))
    add(Case("eval3-binding-rank-twice", cat, ["evaluate", "{F}/ring8.csv", "{W}/b", "--machine", "{F}/map8"],
             "error", ("b",), files(b="".join(f"{min(r, 6)} n{1 + r // 4} {r % 4}\n" for r in range(8)))))
    add(Case("eval3-mapping-missing", cat, ["evaluate", "{F}/ring8.csv", "{W}/none"], "error", ("none",)))
    add(Case("eval3-mapping-machine-damaged", cat, ["evaluate", "{F}/ring8.csv", "{W}/m"], "error", ("machine.json",),
             copy_fixture("map8", "m", lambda W: (W / "m" / "machine.json").write_text('{"hosts": [')),
             preserve=("{W}/m",)))
    add(Case("eval3-mapping-empty-dir", cat, ["evaluate", "{F}/ring8.csv", "{W}/e"], "error", ("e",),
             lambda W: (W / "e").mkdir()))

    # --- platforms and other verbs
    cat = "platform-misc"
    PL = ["platform", "--out", "{W}/p"]
    for cid, args, expect, where in [
        ("plat3-unknown-name", ["summit"], "error", "summit"),
        ("plat3-no-name", [], "error", "NAME"),
        ("plat3-torus-and-name", ["desmos", "--torus", "2x2"], "either", "--torus"),
        ("plat3-dragonfly-g-gt-a", ["--dragonfly", "5x2x2"], "error", "--dragonfly"),
        ("plat3-cores-zero", ["desmos", "--cores", "0"], "error", "--cores"),
        ("plat3-nic-bw-none", ["desmos", "--nic-bw", "none"], "ok", None),
        ("plat3-nic-bw-word", ["desmos", "--nic-bw", "many"], "error", "--nic-bw"),
        ("plat3-link-bw-nan", ["desmos", "--link-bw", "nan"], "error", "--link-bw"),
        ("plat3-fat-tree-huge", ["--fat-tree", "2;1000,1000;1,1;1,1"], "error", "--fat-tree"),
        ("plat3-torus-zero", ["--torus", "0x3"], "error", "--torus"),
        ("plat3-fat-tree-overflow", ["--fat-tree", "2;2,2;4294967296,4294967296;1,1"], "error", "--fat-tree"),
    ]:
        add(Case(cid, cat, PL + args, expect, (where,) if where else (),
                 check=exists("p/platform.xml") if expect != "error" else None, timeout=120))
    add(Case("show3-not-a-run", cat, ["show-profile", "{F}/map8"], "error", ("map8",)))
    add(Case("show3-file", cat, ["show-profile", "{F}/ring8.csv"], "error", ("ring8.csv",)))
    add(Case("show3-top-zero", cat, ["show-profile", "{F}/run4", "--top", "0"], "either", ("--top",)))
    add(Case("show3-collectives-bogus", cat, ["show-profile", "{F}/run4", "--collectives", "magic"], "error",
             ("magic",)))
    add(Case("map3-matrix-is-mapping", cat, ["map", "{F}/map8", *MACH, "--out", "{W}/out"], "error", ("map8",)))
    add(Case("map3-matrix-is-platform", cat, ["map", "{F}/plat", *MACH, "--out", "{W}/out"], "error", ("plat",)))
    add(Case("map3-no-machine", cat, ["map", "{F}/ring6.csv", "--out", "{W}/out"], "error", ("--nodes",)))
    add(Case("map3-allow-partial-complete", cat, ["map", "{F}/run4", *MACH, "--out", "{W}/out", "--allow-partial"],
             "ok", check=mapping_ok("out", 4)))
    add(Case("mpirun3-no-app", cat, ["mpirun", "{F}/map8", "--dry-run"], "error", ("APP",)))
    add(Case("srun3-mapping-missing", cat, ["srun", "{W}/none", "--dry-run", "--", "./app"], "error", ("none",)))
    add(Case("libpath3-unknown", cat, ["libpath", "nonsense"], "error", ("nonsense",)))
    add(Case("replay3-trace-missing", cat, ["replay", "{W}/none.ti", "{F}/map8/hostfile", "--platform", "{F}/plat"],
             "error", ("none.ti",)))
    add(Case("replay3-trace-is-csv", cat, ["replay", "{F}/ring8.csv", "{F}/map8/hostfile", "--platform", "{F}/plat"],
             "error", ("ring8.csv",), timeout=120))
    add(Case("profile3-no-command", cat, ["profile", "--out", "{W}/p"], "error", ("COMMAND",)))
    add(Case("run3-n-zero", cat, ["run", "-n", "0", "--out", "{W}/r", "--", "true"], "error", ("-n",)))

    # --- sizes: fail fast with the size named, or finish within the limit
    cat = "sizes"
    add(m6("size3-csv-rank-15M", cat, "t.csv", RING6 + "15000000,0,5\n", "error", ["ranks"], timeout=60))
    add(m6("size3-mtx-2M-diag", cat, "m.mtx", H + "2000000 2000000 1\n1 2 5\n", "error", ["ranks"], timeout=60))
    add(opt("size3-torus-over", cat, ["--torus", "4096x4096"], "error", ["--torus"], timeout=30))
    add(opt("size3-switch-over", cat, ["--switch-tree", "4096x4096"], "error", ["--switch-tree"], timeout=30))
    add(opt("size3-dragonfly-over", cat, ["--network", "dragonfly:2048x2048x2"], "error", ["dragonfly"],
            timeout=30))
    add(opt("size3-level-costs-1e300", cat, ["--level-costs", "1e300,1,1"], "error", ["--level-costs"]))
    add(Case("size3-plat-torus-over", cat, ["platform", "--out", "{W}/p", "--torus", "300x300"], "error",
             ("--torus",), timeout=60))
    add(Case("size3-whole-cluster-many-nodes", cat, ["map", "{F}/ring6.csv", "--nodes", "n[1-50000]",
                                                     "--node-topology", "pack:1 core:1", "--mode", "whole-cluster",
                                                     "--out", "{W}/out"], "either", (), check=mapping_ok("out", 6),
             timeout=60))
    add(Case("size3-10k-ring-64-nodes", cat, ["map", "{W}/t.csv", "--nodes", "n[1-64]", "--node-topology",
                                              "pack:2 core:80", "--out", "{W}/out"], "ok", (),
             files(t_dot_csv="src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 10000},100\n" for i in range(10000))),
             check=mapping_ok("out", 10000), timeout=60))
    return C


def _zip_with(name: str, data: bytes) -> bytes:
    import zipfile
    b = io.BytesIO()
    with zipfile.ZipFile(b, "w") as z:
        z.writestr(name, data)
    return b.getvalue()


def _set_size(b: bytes, value: int) -> bytes:
    """Set the process count of every block's header (rmp_block_header.size, at byte 32)."""
    b = bytearray(b)
    for o in blocks(bytes(b)):
        struct.pack_into("<I", b, o + 32, value)
    return bytes(b)
