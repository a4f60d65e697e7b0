"""Batch 4 of bad and edge inputs: the areas batches 1-3 covered least, as a demanding HPC
user meets them: Slurm topology.conf files (tree and block plugins: malformed lines,
continuations, nodes in two leaves, unknown or duplicate switches, cycles, huge fan-out),
network specs of every kind against the node count (fat trees, dragonflies, N-D tori and
meshes, 6-D Tofu), `rankmap platform` and what it writes used as input, `rankmap predict`
flags, the search options (--imbalance, --oversubscribe, --tries, --time-limit, --seed,
--parallel N, never launching a real parallel job: a fake mpirun on PATH), run directories
damaged in new ways (mixed versions, duplicated and foreign blocks, ranks missing), matrices
with NaN / inf / negative / huge values in every accepted format, output paths (a file, a
directory of the user's, a missing parent, the input itself, /proc, unicode and blanks),
very long host names, and SLURM_* variables that disagree with the flags.

Run: .venv/bin/python tests/corpus/harness.py tests/corpus/batch4.py

367 cases. Before the fixes (RANKMAP_CORPUS_CHECKOUT = `git archive` of d234557): silent wrong 6,
unclear error 38, refused valid 2, clear error 195, correct 126 (three expectations corrected
after that run and their cases rerun on d234557: '*' is read as 'x' in shapes, --imbalance's
units share cores, an empty --network; in the first run the fake mpirun was not on PATH, and
--parallel 100000 started the real `mpirun -np 100000`: a hang, killed). After the fixes
(tests/test_unseen_inputs4.py): clear error 241, correct 126, nothing else (topology.conf,
network and dragonfly cases rerun after the last fixes to those readers)."""
from __future__ import annotations

import io
import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from harness import Case, exists, mapping_ok, stdout_json_ok
import batch1
import batch2
import batch3

MACH = batch2.MACH                                    # n[1-3], 4 cores each: 12 slots
RING6 = batch2.RING6
files = batch1.files
copy_fixture = batch1.copy_fixture
both = batch1.both
m6 = batch2.m6
opt = batch2.opt
npz_bytes = batch3.npz_bytes
spz = batch3.spz


def fixtures(F: Path) -> None:
    batch3.fixtures(F)


def says(word: str):
    def check(W: Path, out: str):
        return None if word.lower() in out.lower() else f"the output does not say {word!r}"
    return check


def all_checks(*checks):
    def check(W, out):
        for c in checks:
            bad = c(W, out)
            if bad:
                return bad
        return None
    return check


def hosts_of(rel: str):
    def read(W: Path):
        return [ln.split()[1] for ln in (W / rel / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
    return read


def same_leaf(rel: str, groups: list[set]):
    """Check: ranks 0-1, 2-3, 4-5 (the heavy pairs of PAIRS6) each on hosts of one group."""
    def check(W, out):
        h = hosts_of(rel)(W)
        for a in range(0, 6, 2):
            if not any(h[a] in g and h[a + 1] in g for g in groups):
                return f"ranks {a} and {a + 1} on {h[a]} and {h[a + 1]}: not under one leaf switch"
        return None
    return check


# six ranks in three heavy pairs: a mapping keeps each pair under one switch when it can
PAIRS6 = "src,dst,bytes\n0,1,1000000\n1,0,1000000\n2,3,1000000\n3,2,1000000\n4,5,1000000\n5,4,1000000\n" \
         "1,2,10\n3,4,10\n"
ONE_CORE = ["--node-topology", "pack:1 core:1"]


def tconf(cid, text, expect="error", where=("topology.conf",), nodes="n[1-6]", topo=ONE_CORE, check=None,
          traffic="{W}/pairs.csv", n=6, extra=(), timeout=60.0):
    """map 6 ranks onto nodes with the network from W/topology.conf."""
    content = text.encode("utf-8") if isinstance(text, str) else text
    argv = ["map", traffic, "--nodes", nodes, *topo, "--network", "slurm:{W}/topology.conf", "--out", "{W}/out",
            *extra]
    chk = check if check is not None else (mapping_ok("out", n) if expect != "error" else None)
    if check is not None and expect != "error":
        chk = all_checks(mapping_ok("out", n), check)
    return Case(cid, "topology.conf", argv, expect, tuple(where),
                files(topology_dot_conf=content, pairs_dot_csv=PAIRS6), preserve=("{W}/topology.conf",),
                check=chk, timeout=timeout)


def net(cid, spec, expect="error", where=("--network",), nodes="n[1-3]", topo=("--node-topology", "pack:1 core:4"),
        traffic="{F}/ring6.csv", n=6, extra=(), check=None, timeout=60.0, cat="network"):
    argv = ["map", traffic, "--nodes", nodes, *topo, "--out", "{W}/out", *(["--network", spec] if spec is not None else []),
            *extra]
    chk = mapping_ok("out", n) if expect != "error" else None
    if check is not None and expect != "error":
        chk = all_checks(chk, check)
    return Case(cid, cat, argv, expect, tuple(where), check=chk, timeout=timeout)


def fake_mpirun(W: Path):
    """A directory W/bin whose mpirun and mpirun.openmpi record their arguments and fail:
    --parallel cases never start a real MPI job."""
    b = W / "bin"
    b.mkdir()
    for name in ("mpirun", "mpirun.openmpi", "srun"):
        p = b / name
        p.write_text("#!/bin/sh\necho \"$0 $*\" >> \"$(dirname \"$0\")/calls\"\necho 'fake launcher: not run' >&2\n"
                     "exit 3\n")
        p.chmod(0o755)


def launched(W: Path, out: str):
    return "a launcher was started: " + (W / "bin" / "calls").read_text()[:100] if (W / "bin" / "calls").exists() \
        else None


def par(cid, value, expect="error", where=("--parallel",), extra=()):
    env = {"PATH": "{W}/bin:" + os.environ.get("PATH", "/usr/bin:/bin")}
    argv = ["map", "{F}/ring6.csv", *MACH, "--out", "{W}/out", *(["--parallel", value] if value is not None else []),
            *extra]
    return Case(cid, "search", argv, expect, tuple(where), fake_mpirun, env=env,
                check=mapping_ok("out", 6) if expect != "error" else None)


# ------------------------------------------------------------------------------ run directories

def rmp(W: Path) -> Path:
    return next((W / "run").glob("*.rmp"))


def blocks(b: bytes) -> list[tuple[int, int]]:
    """(offset, length) of each block of a run file."""
    out, off = [], 0
    while off + 64 <= len(b) and b[off:off + 8] == b"RMPROF\x00\x01":
        psize = struct.unpack_from("<Q", b, off + 16)[0]
        hsize = struct.unpack_from("<I", b, off + 12)[0]
        out.append((off, hsize + psize))
        off += hsize + psize
    return out


def edit_rmp(fn):
    def f(W):
        p = rmp(W)
        p.write_bytes(fn(bytearray(p.read_bytes())))
    return copy_fixture("run4", "run", f)


def set_header(field_off: int, fmt: str, value, which=0, recrc=False):
    def fn(b):
        bl = blocks(bytes(b))
        o, _ = bl[which % len(bl)]
        struct.pack_into(fmt, b, o + field_off, value)
        return b
    return fn


def dup_block(which=0):
    def fn(b):
        bl = blocks(bytes(b))
        o, n = bl[which]
        return b + b[o:o + n]
    return fn


def drop_block(which):
    def fn(b):
        bl = blocks(bytes(b))
        o, n = bl[which]
        return b[:o] + b[o + n:]
    return fn


def run_json_edit(fn):
    def f(W):
        p = W / "run" / "run.json"
        d = json.loads(p.read_text())
        fn(d, W)
        p.write_text(json.dumps(d))
    return copy_fixture("run4", "run", f)


def runcase(cid, setup, expect="error", where=("{W}/run",), verb="map", extra=()):
    if verb == "map":
        argv = ["map", "{W}/run", *MACH, "--out", "{W}/out", *extra]
        chk = mapping_ok("out", 4) if expect != "error" else None
    else:
        argv = [verb, "{W}/run", *extra]
        chk = None
    return Case(cid, "run-dir", argv, expect, tuple(where), setup, preserve=("{W}/run",), check=chk)


# ------------------------------------------------------------------------------ non-finite numbers

def mtx(entries, n=6, header="%%MatrixMarket matrix coordinate real general"):
    return header + f"\n{n} {n} {len(entries)}\n" + "".join(f"{i} {j} {v}\n" for i, j, v in entries)


RING_MTX = [(i + 1, (i + 1) % 6 + 1, 500 * (i + 1)) for i in range(6)]


def dense(v, at=(0, 2)):
    a = np.zeros((6, 6))
    for i in range(6):
        a[i, (i + 1) % 6] = 500 * (i + 1)
    a[at] = v
    return a


def sparse_with(v, at=(0, 2)):
    return sp.csr_matrix(dense(v, at))


def tm(v):
    """TreeMatch: a dense matrix, one row per line, blanks between."""
    a = dense(0.0)
    rows = [" ".join(f"{x:g}" for x in r) for r in a]
    r0 = rows[0].split()
    r0[2] = v
    rows[0] = " ".join(r0)
    return "\n".join(rows) + "\n"


def metis(w):
    """a 6-ring as a METIS graph with weights (fmt 001); the first edge of vertex 1 weighs w."""
    lines = ["6 6 001"]
    for v in range(1, 7):
        a, b = (v % 6) + 1, ((v - 2) % 6) + 1
        lines.append(f"{a} {w if v == 1 else 5} {b} {5 if v != 2 else w}" if v in (1, 2) else f"{a} 5 {b} 5")
    return "\n".join(lines) + "\n"


def cases() -> list[Case]:
    C: list[Case] = []
    add = C.append
    L1 = {"a": {"n1", "n2"}, "b": {"n3", "n4"}, "c": {"n5", "n6"}}
    leaves = list(L1.values())

    # ================================================================ topology.conf, tree plugin
    valid = "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=s2 Nodes=n[5-6]\n" \
            "SwitchName=top Switches=s[0-2]\n"
    add(tconf("tc4-valid", valid, "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-valid-crlf", valid.replace("\n", "\r\n"), "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-valid-tabs", valid.replace(" ", "\t"), "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-lowercase-keys", valid.lower(), "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-comments-everywhere", "# site topology\n\n" + valid.replace("\n", "   # leaf\n", 2) +
              "# end\n", "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-linkspeed-and-extra-keys", valid.replace("Nodes=n[1-2]", "Nodes=n[1-2] LinkSpeed=100"), "ok",
              check=same_leaf("out", leaves)))
    add(tconf("tc4-continuation-backslash", "SwitchName=s0 \\\n   Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\n"
              "SwitchName=s2 Nodes=n[5-6]\nSwitchName=top Switches=s[0-2]\n", "either",
              ("topology.conf:1",), check=same_leaf("out", leaves)))
    add(tconf("tc4-node-in-two-leaves", "SwitchName=s0 Nodes=n[1-3]\nSwitchName=s1 Nodes=n[3-6]\n"
              "SwitchName=top Switches=s[0-1]\n", "error", ("topology.conf", "n3", "s0", "s1")))
    add(tconf("tc4-node-in-leaf-and-spine", "SwitchName=s0 Nodes=n[1-3]\nSwitchName=s1 Nodes=n[4-6]\n"
              "SwitchName=top Switches=s[0-1] Nodes=n1\n", "either", ("topology.conf", "n1")))
    add(tconf("tc4-two-roots", "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\nSwitchName=s2 Nodes=n[5-6]\n"
              "SwitchName=top1 Switches=s[0-1]\n", "either", ("topology.conf",)))
    add(tconf("tc4-flat-no-spine", "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\n"
              "SwitchName=s2 Nodes=n[5-6]\n", "ok", check=same_leaf("out", leaves)))
    add(tconf("tc4-one-switch-all", "SwitchName=s0 Nodes=n[1-6]\n", "ok"))
    add(tconf("tc4-switch-no-name", "SwitchName= Nodes=n[1-6]\n", "error", ("topology.conf:1",)))
    add(tconf("tc4-switch-name-with-bracket", "SwitchName=s[0-1] Nodes=n[1-6]\n", "either", ("topology.conf:1",)))
    add(tconf("tc4-switch-self-child", "SwitchName=s0 Nodes=n[1-6]\nSwitchName=top Switches=top\n", "error",
              ("topology.conf", "top")))
    add(tconf("tc4-cycle-three", "SwitchName=a Switches=b\nSwitchName=b Switches=c\nSwitchName=c Switches=a "
              "Nodes=n[1-6]\n", "error", ("topology.conf",)))
    add(tconf("tc4-undefined-child-list", "SwitchName=s0 Nodes=n[1-6]\nSwitchName=top Switches=s[0-3]\n", "error",
              ("topology.conf", "s1")))
    add(tconf("tc4-duplicate-switch-differing", "SwitchName=s0 Nodes=n[1-3]\nSwitchName=s0 Nodes=n[4-6]\n", "error",
              ("topology.conf", "s0")))
    add(tconf("tc4-duplicate-switch-case", "SwitchName=S0 Nodes=n[1-3]\nSwitchName=s0 Nodes=n[4-6]\n", "either",
              ("topology.conf",)))
    add(tconf("tc4-nodes-missing-from-file", "SwitchName=s0 Nodes=n[1-2]\nSwitchName=s1 Nodes=n[3-4]\n", "error",
              ("topology.conf", "n5")))
    add(tconf("tc4-file-lists-more-nodes", "SwitchName=s0 Nodes=n[1-200]\nSwitchName=s1 Nodes=n[201-400]\n"
              "SwitchName=t Switches=s[0-1]\n", "ok"))
    add(tconf("tc4-huge-fanout", "SwitchName=s0 Nodes=n[1-50000]\nSwitchName=s1 Nodes=n[50001-100000]\n"
              "SwitchName=t Switches=s[0-1]\n", "ok", timeout=120))
    add(tconf("tc4-huge-fanout-alloc", "SwitchName=s0 Nodes=n[1-3000]\nSwitchName=s1 Nodes=n[3001-6000]\n"
              "SwitchName=t Switches=s[0-1]\n", "ok", nodes="n[1-6000]", timeout=120))
    add(tconf("tc4-many-switches", "".join(f"SwitchName=l{i} Nodes=n{i}\n" for i in range(1, 3001)) +
              "SwitchName=t Switches=l[1-3000]\n", "ok", nodes="n[1-6]", timeout=120))
    add(tconf("tc4-nodes-range-reversed", "SwitchName=s0 Nodes=n[6-1]\n", "error", ("topology.conf",)))
    add(tconf("tc4-nodes-bracket-open", "SwitchName=s0 Nodes=n[1-6\n", "error", ("topology.conf",)))
    add(tconf("tc4-nodes-too-many", "SwitchName=s0 Nodes=n[1-99999999]\n", "error", ("topology.conf",)))
    add(tconf("tc4-nodes-empty-value", "SwitchName=s0 Nodes=\nSwitchName=s1 Nodes=n[1-6]\n", "either",
              ("topology.conf",)))
    add(tconf("tc4-nodes-with-spaces", "SwitchName=s0 Nodes=n1, n2\n", "error", ("topology.conf",)))
    add(tconf("tc4-only-comments", "# nothing here\n# SwitchName=s0 Nodes=n[1-6]\n", "error", ("topology.conf",)))
    add(tconf("tc4-slurm-conf-instead", "ClusterName=c\nSlurmctldHost=h\nNodeName=n[1-6] CPUs=1\n"
              "PartitionName=p Nodes=ALL\n", "error", ("topology.conf",)))
    add(tconf("tc4-key-without-value-token", "SwitchName=s0 Nodes=n[1-6] garbage\n", "either", ("topology.conf",)))
    add(tconf("tc4-level-given", "SwitchName=s0 Level=0 Nodes=n[1-3]\nSwitchName=s1 Level=0 Nodes=n[4-6]\n"
              "SwitchName=t Level=1 Switches=s[0-1]\n", "ok"))
    add(tconf("tc4-level-word", "SwitchName=s0 Level=low Nodes=n[1-6]\n", "either", ("topology.conf",)))
    add(tconf("tc4-switches-and-blocks", valid + "BlockName=b1 Nodes=n[1-6]\n", "either", ("topology.conf",)))
    add(tconf("tc4-nul-byte", b"SwitchName=s0 Nodes=n[1-6]\x00\n", "either", ("topology.conf",)))
    add(tconf("tc4-utf8-bom", "\ufeff" + valid, "either", ("topology.conf",)))
    add(tconf("tc4-deep-nesting-600", "SwitchName=s0 Nodes=n[1-6]\n" +
              "".join(f"SwitchName=s{i} Switches=s{i - 1}\n" for i in range(1, 600)), "either",
              ("topology.conf",)))
    add(tconf("tc4-long-switch-name", f"SwitchName={'s' * 5000} Nodes=n[1-6]\n", "either", ("topology.conf",)))
    add(tconf("tc4-topology-is-dir", "", "error", ("topology.conf",), extra=()))
    C[-1].setup = both(C[-1].setup, lambda W: ((W / "topology.conf").unlink(), (W / "topology.conf").mkdir()))
    C[-1].preserve = ()
    add(Case("tc4-slurm-colon-empty", "topology.conf", ["map", "{F}/ring6.csv", *MACH, "--out", "{W}/out",
                                                         "--network", "slurm:"], "error", ("--network",)))
    add(Case("tc4-slurm-file-and-torus", "topology.conf", ["map", "{W}/pairs.csv", "--nodes", "n[1-6]", *ONE_CORE,
                                                            "--network", "slurm:{W}/topology.conf", "--torus", "6",
                                                            "--out", "{W}/out"], "error", ("--torus",),
             files(topology_dot_conf=valid, pairs_dot_csv=PAIRS6)))
    add(Case("tc4-slurm-file-and-coords", "topology.conf",
             ["map", "{W}/pairs.csv", "--nodes", "n[1-6]", *ONE_CORE, "--network", "slurm:{W}/topology.conf",
              "--coords", "{W}/c", "--out", "{W}/out"], "error", ("--coords",),
             files(topology_dot_conf=valid, pairs_dot_csv=PAIRS6, c="".join(f"n{i} {i}\n" for i in range(1, 7)))))
    # evaluate a mapping made on a tconf machine: machine.json must carry the tree
    add(Case("tc4-evaluate-after-map", "topology.conf",
             ["evaluate", "{W}/pairs.csv", "{W}/m", "--json"], "ok", (),
             both(files(topology_dot_conf=valid, pairs_dot_csv=PAIRS6),
                  lambda W: __import__("subprocess").run(
                      __import__("harness").RANKMAP + ["map", str(W / "pairs.csv"), "--nodes", "n[1-6]", *ONE_CORE,
                                                       "--network", f"slurm:{W}/topology.conf", "--out",
                                                       str(W / "m")], env=__import__("harness").base_env(),
                      capture_output=True)), check=stdout_json_ok))

    # ================================================================ topology.conf, block plugin
    blk = "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\nBlockName=b3 Nodes=n[5-6]\nBlockSizes=2\n"
    add(tconf("tb4-valid", blk, "ok", check=same_leaf("out", leaves)))
    add(tconf("tb4-default-sizes", blk.replace("BlockSizes=2\n", ""), "ok", check=same_leaf("out", leaves)))
    add(tconf("tb4-sizes-not-power", blk.replace("BlockSizes=2", "BlockSizes=2,6"), "error",
              ("topology.conf", "BlockSizes")))
    add(tconf("tb4-sizes-base-mismatch", blk.replace("BlockSizes=2", "BlockSizes=3"), "either",
              ("topology.conf", "BlockSizes")))
    add(tconf("tb4-sizes-trailing-comma", blk.replace("BlockSizes=2", "BlockSizes=2,4,"), "either",
              ("topology.conf",)))
    add(tconf("tb4-sizes-huge", blk.replace("BlockSizes=2", "BlockSizes=2,4,8,16,32,64,128,2097152"), "either",
              ("topology.conf",)))
    add(tconf("tb4-sizes-overflow", blk.replace("BlockSizes=2", f"BlockSizes=2,{2 ** 80}"), "either",
              ("topology.conf",)))
    add(tconf("tb4-node-in-two-blocks", "BlockName=b1 Nodes=n[1-4]\nBlockName=b2 Nodes=n[3-6]\n", "error",
              ("topology.conf", "n3")))
    add(tconf("tb4-duplicate-block", "BlockName=b1 Nodes=n[1-3]\nBlockName=b1 Nodes=n[4-6]\n", "error",
              ("topology.conf", "b1")))
    add(tconf("tb4-uneven-blocks", "BlockName=b1 Nodes=n[1-5]\nBlockName=b2 Nodes=n6\n", "either",
              ("topology.conf",)))
    add(tconf("tb4-node-missing", "BlockName=b1 Nodes=n[1-2]\nBlockName=b2 Nodes=n[3-4]\n", "error",
              ("topology.conf", "n5")))
    add(tconf("tb4-no-nodes", "BlockName=b1\nBlockName=b2\n", "error", ("topology.conf",)))
    add(tconf("tb4-only-sizes", "BlockSizes=4\n", "error", ("topology.conf",)))
    add(tconf("tb4-many-blocks", "".join(f"BlockName=b{i} Nodes=n[{2 * i + 1}-{2 * i + 2}]\n" for i in range(2000))
              + "BlockSizes=2,4,8,16,32\n", "ok", timeout=120))
    add(tconf("tb4-block-name-empty", "BlockName= Nodes=n[1-6]\n", "error", ("topology.conf:1",)))
    add(tconf("tb4-yaml", "- topology: topo1\n  cluster_default: true\n  tree:\n    switches:\n", "error",
              ("topology.conf", "topology.yaml")))

    # ================================================================ network specs
    cat = "network"
    add(net("nw4-fat-tree-exact", "fat-tree:3x2", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-too-small", "fat-tree:2x2", "error", ("--network", "fat-tree"), nodes="n[1-6]",
            topo=ONE_CORE))
    add(net("nw4-fat-tree-zero", "fat-tree:0x4", "error"))
    add(net("nw4-fat-tree-negative", "fat-tree:-2x4", "error"))
    add(net("nw4-fat-tree-one-level", "fat-tree:6", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-huge", "fat-tree:100000x100000", "either", ("--network",)))
    add(net("nw4-fat-tree-overflow", f"fat-tree:{2 ** 63}x{2 ** 63}", "error"))
    add(net("nw4-fat-tree-oversub-frac", "fat-tree:3x2:oversub=1.5", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-oversub-neg", "fat-tree:3x2:oversub=-2", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-oversub-inf", "fat-tree:3x2:oversub=inf", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-oversub-nan", "fat-tree:3x2:oversub=nan", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-oversub-list", "fat-tree:3x2:oversub=2,4", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-dup-key", "fat-tree:3x2:oversub=2:oversub=4", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-sg-zero", "fat-tree:2;0,2;1,2;1,1", "error"))
    add(net("nw4-fat-tree-sg-negative", "fat-tree:2;-2,2;1,2;1,1", "error"))
    add(net("nw4-fat-tree-sg-words", "fat-tree:2;a,b;1,2;1,1", "error"))
    add(net("nw4-fat-tree-sg-too-small", "fat-tree:2;2,1;1,2;1,1", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-fat-tree-sg-level-zero", "fat-tree:0;;;", "error"))
    add(net("nw4-dragonfly-exact", "dragonfly:3x2x1", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-dragonfly-too-small", "dragonfly:2x1x2", "error", ("--network", "dragonfly"), nodes="n[1-6]",
            topo=ONE_CORE))
    add(net("nw4-dragonfly-zero", "dragonfly:0x2x2", "error"))
    add(net("nw4-dragonfly-negative", "dragonfly:2x-2x2", "error"))
    add(net("nw4-dragonfly-two-dims", "dragonfly:2x2", "error"))
    add(net("nw4-dragonfly-four-dims", "dragonfly:2x2x2x2", "error"))
    add(net("nw4-dragonfly-g-gt-a", "dragonfly:6x1x1", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-dragonfly-global-zero", "dragonfly:3x2x1:global=0", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-dragonfly-global-huge", f"dragonfly:3x2x1:global={2 ** 70}", "either", nodes="n[1-6]",
            topo=ONE_CORE))
    add(net("nw4-dragonfly-local-float", "dragonfly:3x2x1:local=1.5", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-dragonfly-valiant-2groups", "dragonfly:2x3x1:routing=valiant", "either", nodes="n[1-6]",
            topo=ONE_CORE))
    add(net("nw4-dragonfly-routing-case", "dragonfly:3x2x1:routing=VALIANT", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-dragonfly-huge", "dragonfly:1000x1000x1000", "either"))
    add(net("nw4-torus-6d-valid", "torus:1x1x1x1x2x3", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-6d-wrap", "torus:1x1x1x1x2x3:wrap=111010", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-8d", "torus:1x1x1x1x1x1x2x3", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-40d", "torus:" + "x".join(["1"] * 38 + ["2", "3"]), "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-zero-dim", "torus:2x0x3", "error"))
    add(net("nw4-torus-negative-dim", "torus:2x-3", "error"))
    add(net("nw4-torus-float-dim", "torus:2.5x3", "error"))
    add(net("nw4-torus-empty-dim", "torus:2xx3", "error"))
    add(net("nw4-torus-trailing-x", "torus:6x", "error"))
    add(net("nw4-torus-uppercase-x", "torus:2X3", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-star", "torus:2*3", "ok"))                 # "*" is read as "x" (parse_dims)
    add(net("nw4-torus-too-few-positions", "torus:2x2", "error", ("--network",), nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-many-more-positions", "torus:100x100x100", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-overflow", f"torus:{2 ** 40}x{2 ** 40}", "error"))
    add(net("nw4-torus-positions-huge", "torus:100000x100000x100000", "error"))
    add(net("nw4-torus-wrap-long", "torus:2x3:wrap=1111", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-torus-wrap-letters", "torus:2x3:wrap=yn", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-mesh-1d", "mesh:6", "ok", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-mesh-wrap", "mesh:6:wrap=1", "error", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-mesh-too-small", "mesh:5", "error", ("--network",), nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-tofu-valid", "tofu:1x1x1", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-tofu-6d-given", "tofu:1x1x1x2x3x2", "either"))
    add(net("nw4-tofu-zero", "tofu:0x1x1", "error"))
    add(net("nw4-tofu-too-small", "tofu:1x1x1", "error", ("--network",), nodes="n[1-13]", topo=ONE_CORE,
            traffic="{W}/r13.csv"))
    C[-1].setup = files(r13_dot_csv="src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 13},10\n" for i in range(13)))
    add(net("nw4-unknown-kind", "hypercube:3", "error"))
    add(net("nw4-kind-uppercase", "TORUS:6", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-blank-around", "  torus:6  ", "either", nodes="n[1-6]", topo=ONE_CORE))
    add(net("nw4-empty", "", "error"))
    add(net("nw4-colon-only", ":", "error"))
    add(net("nw4-json-file", "{W}/net.json", "either", ("--network",)))
    C[-1].setup = files(net_dot_json=json.dumps({"kind": "torus", "shape": "3"}))
    add(net("nw4-torus-flag-6d", None, "ok", nodes="n[1-6]", topo=ONE_CORE, extra=["--torus", "1x1x1x1x2x3"]))
    add(net("nw4-mesh-and-torus-flags", None, "error", ("--mesh",), extra=["--torus", "3", "--mesh", "3"]))
    add(net("nw4-switch-tree-and-network", "fat-tree:3x2", "error", ("--switch-tree",), nodes="n[1-6]",
            topo=ONE_CORE, extra=["--switch-tree", "3x2"]))
    add(net("nw4-switch-tree-zero", None, "error", ("--switch-tree",), extra=["--switch-tree", "0x3"]))
    add(net("nw4-switch-tree-huge", None, "either", ("--switch-tree",), extra=["--switch-tree", "100000x100000"]))
    add(net("nw4-coords-6d", None, "ok", nodes="n[1-6]", topo=ONE_CORE,
            extra=["--torus", "1x1x1x1x2x3", "--coords", "{W}/c"]))
    C[-1].setup = files(c="".join(f"n{i + 1} 0 0 0 0 {i % 2} {i // 2}\n" for i in range(6)))
    add(net("nw4-coords-wrong-arity", None, "error", ("{W}/c",), nodes="n[1-6]", topo=ONE_CORE,
            extra=["--torus", "2x3", "--coords", "{W}/c"]))
    C[-1].setup = files(c="".join(f"n{i + 1} {i % 2} {i // 2} 0\n" for i in range(6)))
    add(net("nw4-coords-negative", None, "error", ("{W}/c",), nodes="n[1-6]", topo=ONE_CORE,
            extra=["--torus", "2x3", "--coords", "{W}/c"]))
    C[-1].setup = files(c="".join(f"n{i + 1} {-(i % 2)} {i // 2}\n" for i in range(6)))
    add(net("nw4-coords-float", None, "error", ("{W}/c",), nodes="n[1-6]", topo=ONE_CORE,
            extra=["--torus", "2x3", "--coords", "{W}/c"]))
    C[-1].setup = files(c="".join(f"n{i + 1} {i % 2}.5 {i // 2}\n" for i in range(6)))
    add(net("nw4-coords-extra-host", None, "either", ("{W}/c",), nodes="n[1-6]", topo=ONE_CORE,
            extra=["--torus", "2x4", "--coords", "{W}/c"]))
    C[-1].setup = files(c="".join(f"n{i + 1} {i % 2} {i // 2}\n" for i in range(8)))
    add(net("nw4-hop-cost-negative", None, "error", ("--hop-cost",), extra=["--torus", "3", "--hop-cost", "-5"]))
    add(net("nw4-hop-cost-nan", None, "error", ("--hop-cost",), extra=["--torus", "3", "--hop-cost", "nan"]))
    add(net("nw4-hop-cost-no-torus", None, "either", ("--hop-cost",), extra=["--hop-cost", "5"]))
    add(net("nw4-level-costs-increasing", None, "either", ("--level-costs",), extra=["--level-costs", "1,10,100"]))
    add(net("nw4-level-costs-inf", None, "error", ("--level-costs",), extra=["--level-costs", "inf,100,10"]))
    add(net("nw4-level-costs-count", None, "error", ("--level-costs",), extra=["--level-costs", "1000,100,10,1,0.1"]))

    # ================================================================ platform
    cat = "platform"

    def plat(cid, args, expect="error", where=(), check=None):
        return Case(cid, cat, ["platform", "--out", "{W}/p", *args], expect, tuple(where),
                    check=check if expect != "error" else None)
    add(plat("pl4-fat-tree-valid", ["--fat-tree", "2;4,2;1,2;1,1"], "ok", check=exists("p/machine.json")))
    add(plat("pl4-dragonfly-valid", ["--dragonfly", "2x2x2"], "ok", check=exists("p/machine.json")))
    add(plat("pl4-dragonfly-global-zero", ["--dragonfly", "2x2x2:global=0"], "error", ["--dragonfly"]))
    add(plat("pl4-dragonfly-zero", ["--dragonfly", "0x2x2"], "error", ["--dragonfly"]))
    add(plat("pl4-dragonfly-huge", ["--dragonfly", "1000x1000x1000"], "error", ["--dragonfly"]))
    add(plat("pl4-torus-6d", ["--torus", "2x1x1x2x3x2"], "ok", check=exists("p/machine.json")))
    add(plat("pl4-torus-huge", ["--torus", "1000x1000x1000"], "error", ["--torus"]))
    add(plat("pl4-torus-and-fat-tree", ["--torus", "2x2", "--fat-tree", "2;2,2;1,2;1,1"], "error", ["--torus"]))
    add(plat("pl4-name-and-dragonfly", ["angara-k1", "--dragonfly", "2x2x2"], "either", ["--dragonfly"]))
    add(plat("pl4-cores-huge", ["desmos", "--cores", "4096"], "either", ["--cores"]))
    add(plat("pl4-link-bw-negative", ["desmos", "--link-bw", "-1"], "error", ["--link-bw"]))
    add(plat("pl4-link-lat-negative", ["desmos", "--link-lat", "-1"], "error", ["--link-lat"]))
    add(plat("pl4-link-lat-zero", ["desmos", "--link-lat", "0"], "either", ["--link-lat"]))
    add(plat("pl4-loopback-bw-inf", ["desmos", "--loopback-bw", "inf"], "error", ["--loopback-bw"]))
    add(plat("pl4-core-speed-zero", ["desmos", "--core-speed", "0"], "error", ["--core-speed"]))
    add(plat("pl4-core-speed-word", ["desmos", "--core-speed", "fast"], "error", ["--core-speed"]))
    add(plat("pl4-network-scale-zero", ["desmos", "--network-scale", "0"], "error", ["--network-scale"]))
    add(plat("pl4-network-scale-negative", ["desmos", "--network-scale", "-0.5"], "error", ["--network-scale"]))
    add(plat("pl4-network-scale-nan", ["desmos", "--network-scale", "nan"], "error", ["--network-scale"]))
    add(plat("pl4-network-scale-tiny", ["desmos", "--network-scale", "1e-300"], "either", ["--network-scale"]))
    add(plat("pl4-network-scale-huge", ["desmos", "--network-scale", "1e300"], "either", ["--network-scale"]))
    add(plat("pl4-nic-bw-zero", ["desmos", "--nic-bw", "0"], "error", ["--nic-bw"]))
    add(Case("pl4-out-is-file", cat, ["platform", "desmos", "--out", "{W}/f"], "error", ("{W}/f",), files(f="x\n"),
             preserve=("{W}/f",)))
    add(Case("pl4-out-is-mapping", cat, ["platform", "desmos", "--out", "{W}/m", "--force"], "error", ("{W}/m",),
             copy_fixture("map8", "m"), preserve=("{W}/m",)))
    add(Case("pl4-force-over-platform", cat, ["platform", "angara-k1", "--out", "{W}/p", "--force"], "ok", (),
             copy_fixture("plat", "p"), check=exists("p/machine.json")))
    add(Case("pl4-no-force-over-platform", cat, ["platform", "angara-k1", "--out", "{W}/p"], "error", ("{W}/p",),
             copy_fixture("plat", "p"), preserve=("{W}/p",)))
    # what platform writes, used as input
    add(Case("pl4-map-machine-platform", cat, ["map", "{F}/ring8.csv", "--machine", "{F}/plat", "--out", "{W}/out"],
             "ok", (), check=mapping_ok("out", 8)))
    add(Case("pl4-map-machine-platform-json", cat, ["map", "{F}/ring8.csv", "--machine", "{F}/plat/machine.json",
                                                     "--out", "{W}/out"], "ok", (), check=mapping_ok("out", 8)))
    add(Case("pl4-map-machine-platform-xml", cat, ["map", "{F}/ring8.csv", "--machine", "{F}/plat/platform.xml",
                                                    "--out", "{W}/out"], "error", ("platform.xml",)))
    add(Case("pl4-map-platform-damaged-json", cat, ["map", "{F}/ring8.csv", "--machine", "{W}/p", "--out", "{W}/out"],
             "error", ("{W}/p",), copy_fixture("plat", "p", lambda W: (W / "p" / "machine.json").write_text("{\"hosts\": [")),
             preserve=("{W}/p",)))
    add(Case("pl4-map-network-speeds-platform", cat, ["map", "{F}/ring8.csv", "--machine", "{F}/plat",
                                                       "--network-speeds", "{F}/plat", "--out", "{W}/out"], "ok", (),
             check=mapping_ok("out", 8), timeout=120))
    add(Case("pl4-map-network-speeds-missing", cat, ["map", "{F}/ring8.csv", *MACH, "--network-speeds", "{W}/none",
                                                      "--out", "{W}/out"], "error", ("{W}/none",)))
    add(Case("pl4-map-network-speeds-csv", cat, ["map", "{F}/ring8.csv", *MACH, "--network-speeds", "{F}/ring8.csv",
                                                  "--out", "{W}/out"], "error", ("ring8.csv",)))
    add(Case("pl4-map-network-speeds-parallel", cat, ["map", "{F}/ring8.csv", *MACH, "--network-speeds",
                                                       "{F}/probe.json", "--parallel", "2", "--out", "{W}/out"],
             "error", ("--parallel",)))

    # ================================================================ predict
    cat = "predict"
    SPEEDS = ["--link-bw", "10", "--link-lat", "1", "--loopback-bw", "20", "--loopback-lat", "0.2"]

    def pred(cid, args, expect="error", where=(), setup=None, check=None, mapping="{F}/map8", traffic="{F}/ring8.csv"):
        return Case(cid, cat, ["predict", traffic, mapping, *args], expect, tuple(where), setup,
                    check=(check or stdout_json_ok) if expect != "error" else None)
    add(pred("pr4-nic-bw-zero", [*SPEEDS, "--nic-bw", "0"], "error", ["--nic-bw"]))
    add(pred("pr4-nic-bw-negative", [*SPEEDS, "--nic-bw", "-1"], "error", ["--nic-bw"]))
    add(pred("pr4-nic-bw-none", [*SPEEDS, "--nic-bw", "none", "--json"], "either", ["--nic-bw"]))
    add(pred("pr4-loopback-bw-nan", ["--link-bw", "10", "--link-lat", "1", "--loopback-bw", "nan",
                                      "--loopback-lat", "0.2"], "error", ["--loopback-bw"]))
    add(pred("pr4-link-lat-negative", ["--link-bw", "10", "--link-lat", "-1", "--loopback-bw", "20",
                                        "--loopback-lat", "0.2"], "error", ["--link-lat"]))
    add(pred("pr4-link-bw-tiny", ["--link-bw", "1e-300", "--link-lat", "1", "--loopback-bw", "20",
                                   "--loopback-lat", "0.2", "--json"], "either", ["--link-bw"]))
    add(pred("pr4-link-lat-huge", ["--link-bw", "10", "--link-lat", "1e300", "--loopback-bw", "20",
                                    "--loopback-lat", "0.2", "--json"], "either", ["--link-lat"]))
    add(pred("pr4-only-link-bw", ["--link-bw", "10"], "either", ["--link-lat"]))
    add(pred("pr4-platform-ok", ["--platform", "{F}/plat", "--json"], "either", ["--platform"]))
    add(pred("pr4-platform-missing-xml", ["--platform", "{W}/p", "--json"], "either", ["{W}/p"],
             copy_fixture("plat", "p", lambda W: (W / "p" / "platform.xml").unlink())))
    add(pred("pr4-probe-negative-lat", ["--probe", "{W}/p.json"], "error", ["p.json"],
             files(p_dot_json=json.dumps(dict(batch1.PROBE, latency_us={"same socket": -0.3, "other socket": 0.5,
                                                                          "neighbour node": 2.0})))))
    add(pred("pr4-probe-huge-bw", ["--probe", "{W}/p.json", "--json"], "either", ["p.json"],
             files(p_dot_json=json.dumps(dict(batch1.PROBE, bandwidth_GBps={"same socket": 1e308, "other socket": 8.0,
                                                                              "neighbour node": 3.0})))))
    add(pred("pr4-probe-missing-level", ["--probe", "{W}/p.json", "--json"], "either", ["p.json"],
             files(p_dot_json=json.dumps({"latency_us": {"same socket": 0.3},
                                          "bandwidth_GBps": {"same socket": 10.0}}))))
    add(pred("pr4-probe-is-dir", ["--probe", "{W}/p"], "error", ["{W}/p"], lambda W: (W / "p").mkdir()))
    add(pred("pr4-mapping-twice", [*SPEEDS, "--json"], "either", ["map8"], mapping="{F}/map8"))
    C[-1].argv.insert(3, "{F}/map8")
    add(pred("pr4-mapping-hostfile-only", [*SPEEDS, "--machine", "{F}/map8", "--json"], "ok", (),
             mapping="{F}/map8/hostfile"))
    add(pred("pr4-mapping-rankfile", [*SPEEDS, "--machine", "{F}/map8", "--json"], "ok", (),
             mapping="{F}/map8/rankfile"))
    add(pred("pr4-mapping-machinefile", [*SPEEDS, "--machine", "{F}/map8", "--json"], "ok", (),
             mapping="{F}/map8/machinefile"))
    add(pred("pr4-traffic-nan", [*SPEEDS], "error", ["t.csv"], files(t_dot_csv=batch1.RING8 + "0,3,nan\n"),
             traffic="{W}/t.csv"))
    add(pred("pr4-network-and-platform", [*SPEEDS, "--platform", "{F}/plat", "--network", "torus:2"], "either",
             ["--network"]))

    # ================================================================ search options
    cat = "search"
    add(opt("se4-imbalance-tiny", "search", ["--imbalance", "1e-300"], "ok"))
    add(opt("se4-imbalance-max", "search", ["--imbalance", "1023"], "either", ["--imbalance"]))
    C[-1].check = mapping_ok("out", 6, per_core=1024)       # units of work: up to (1 + EPS) x ceil(6/12) per core
    add(opt("se4-imbalance-over-max", "search", ["--imbalance", "1024"], "error", ["--imbalance"]))
    add(opt("se4-imbalance-hex", "search", ["--imbalance", "0x1p-4"], "either", ["--imbalance"]))
    add(opt("se4-imbalance-comma", "search", ["--imbalance", "0,05"], "error", ["--imbalance"]))
    add(opt("se4-imbalance-twice", "search", ["--imbalance", "0.1", "--imbalance", "0.2"], "either",
            ["--imbalance"]))
    add(opt("se4-imbalance-with-parallel", "search", ["--imbalance", "0.1", "--parallel", "0"], "error",
            ["--parallel"]))
    add(opt("se4-imbalance-whole-cluster", "search", ["--imbalance", "0.1", "--mode", "whole-cluster"], "either",
            ["--imbalance"]))
    add(opt("se4-imbalance-spread", "search", ["--imbalance", "0.1", "--fill", "spread"], "either", ["--imbalance"]))
    add(opt("se4-imbalance-oversub", "search", ["--imbalance", "0.1", "--oversubscribe", "2"], "either",
            ["--imbalance"]))
    add(opt("se4-oversub-zero", "search", ["--oversubscribe", "0"], "error", ["--oversubscribe"]))
    add(opt("se4-oversub-negative", "search", ["--oversubscribe", "-2"], "error", ["--oversubscribe"]))
    add(opt("se4-oversub-float", "search", ["--oversubscribe", "1.5"], "error", ["--oversubscribe"]))
    add(opt("se4-oversub-max", "search", ["--oversubscribe", "16777216"], "error", ["--oversubscribe"]))
    add(opt("se4-oversub-fits", "search", ["--oversubscribe", "4"], "ok"))
    add(opt("se4-oversub-needed", "search", ["--oversubscribe", "2"], "ok", n=20, setup=None))
    C[-1].argv[1] = "{W}/r20.csv"
    C[-1].setup = files(r20_dot_csv="src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 20},10\n" for i in range(20)))
    C[-1].check = mapping_ok("out", 20, per_core=2)
    add(opt("se4-oversub-not-enough", "search", ["--oversubscribe", "1"], "error", ["--oversubscribe"], n=20))
    C[-1].argv[1] = "{W}/r20.csv"
    C[-1].setup = files(r20_dot_csv="src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 20},10\n" for i in range(20)))
    add(opt("se4-ranks-per-node-oversub", "search", ["--ranks-per-node", "2", "--oversubscribe", "2"], "ok"))
    add(opt("se4-ranks-per-node-zero", "search", ["--ranks-per-node", "0"], "error", ["--ranks-per-node"]))
    add(opt("se4-ranks-per-node-too-few", "search", ["--ranks-per-node", "1"], "error", ["--ranks-per-node"]))
    add(opt("se4-tries-101", "search", ["--tries", "101"], "error", ["--tries"]))
    add(opt("se4-tries-float", "search", ["--tries", "2.5"], "error", ["--tries"]))
    add(opt("se4-tries-block", "search", ["--tries", "5", "--algorithm", "block"], "either", ["--tries"]))
    add(opt("se4-tries-parallel", "search", ["--tries", "5", "--parallel", "0"], "error", ["--parallel"]))
    add(opt("se4-time-limit-zero", "search", ["--time-limit", "0"], "error", ["--time-limit"]))
    add(opt("se4-time-limit-tiny", "search", ["--time-limit", "1e-9"], "either", ["--time-limit"]))
    add(opt("se4-time-limit-huge", "search", ["--time-limit", "1e300"], "ok"))
    add(opt("se4-time-limit-inf", "search", ["--time-limit", "inf"], "either", ["--time-limit"]))
    add(opt("se4-time-limit-units", "search", ["--time-limit", "10s"], "error", ["--time-limit"]))
    add(opt("se4-time-limit-minutes", "search", ["--time-limit", "1:00"], "error", ["--time-limit"]))
    add(opt("se4-seed-float", "search", ["--seed", "1.0"], "error", ["--seed"]))
    add(opt("se4-seed-hex", "search", ["--seed", "0x10"], "error", ["--seed"]))
    add(opt("se4-seed-plus", "search", ["--seed", "+5"], "either", ["--seed"]))
    add(opt("se4-seed-underscore", "search", ["--seed", "1_000"], "either", ["--seed"]))
    add(opt("se4-seed-2pow32", "search", ["--seed", str(2 ** 32)], "error", ["--seed"]))
    add(opt("se4-algorithm-scotch-imbalance", "search", ["--algorithm", "scotch", "--imbalance", "0.1"], "either",
            ["--imbalance"]))
    add(opt("se4-algorithm-random-seed", "search", ["--algorithm", "random", "--seed", "7"], "ok"))
    add(opt("se4-no-refine-greedy", "search", ["--no-refine", "--algorithm", "greedy"], "ok"))
    add(par("se4-parallel-zero", "0"))
    add(par("se4-parallel-negative", "-4"))
    add(par("se4-parallel-word", "two"))
    add(par("se4-parallel-float", "2.0"))
    add(par("se4-parallel-empty", ""))
    add(par("se4-parallel-huge", "100000"))
    add(par("se4-parallel-2pow63", str(2 ** 63)))
    add(par("se4-parallel-whole-cluster", "2", "error", ["--parallel"], ["--mode", "whole-cluster"]))
    add(par("se4-parallel-launcher-without-parallel", None, "either", ["--parallel-launcher"],
            ["--parallel-launcher", "mpirun"]))
    for c in C[-9:]:
        c.check = all_checks(c.check, launched) if c.check else None

    # ================================================================ run directories
    add(runcase("rd4-version-2-one-block", edit_rmp(set_header(8, "<I", 2, which=1)), "error",
                ["{W}/run", "version"]))
    add(runcase("rd4-version-0", edit_rmp(set_header(8, "<I", 0)), "error", ["{W}/run"]))
    add(runcase("rd4-block-duplicated", edit_rmp(dup_block(0)), "either", ["{W}/run"]))
    add(runcase("rd4-first-block-dropped", edit_rmp(drop_block(0)), "error", ["{W}/run", "0"]))
    add(runcase("rd4-middle-block-dropped", edit_rmp(lambda b: drop_block(1)(drop_block(2)(b))), "error",
                ["{W}/run"]))
    add(runcase("rd4-middle-block-dropped-partial-ok", edit_rmp(drop_block(1)), "either", ["{W}/run"],
                extra=["--allow-partial"]))
    add(runcase("rd4-size-field-8", edit_rmp(set_header(32, "<I", 8)), "error", ["{W}/run"]))
    add(runcase("rd4-rank-beyond-size", edit_rmp(set_header(28, "<I", 9)), "error", ["{W}/run"]))
    add(runcase("rd4-run-json-other-nprocs", run_json_edit(lambda d, W: d.update(nprocs=8)), "either",
                ["{W}/run"]))
    add(runcase("rd4-run-json-exit-nonzero", run_json_edit(lambda d, W: d.update(exit_code=1)), "either",
                ["{W}/run"]))
    add(runcase("rd4-run-json-utf16", copy_fixture("run4", "run", lambda W: (W / "run" / "run.json").write_bytes(
        (W / "run" / "run.json").read_text().encode("utf-16"))), "either", ["run.json"]))
    add(runcase("rd4-foreign-rmp", copy_fixture("run4", "run", lambda W: rmp(W).rename(
        W / "run" / "ranks.20200101000000-deadbeef.rmp")), "either", ["{W}/run"]))
    add(runcase("rd4-rmp-is-dir", copy_fixture("run4", "run", lambda W: (rmp(W).unlink(), (W / "run" /
                                                                                          "ranks.x.rmp").mkdir())),
                "error", ["{W}/run"]))
    add(runcase("rd4-show-duplicated", edit_rmp(dup_block(0)), "either", ["{W}/run"], verb="show-profile"))
    add(runcase("rd4-show-version-2", edit_rmp(set_header(8, "<I", 2, which=0)), "error", ["{W}/run"],
                verb="show-profile"))
    add(runcase("rd4-convert-partial", edit_rmp(drop_block(3)), "error", ["{W}/run"], verb="convert",
                extra=["{W}/g.graph"]))
    add(runcase("rd4-spaces-in-path", copy_fixture("run4", "my run dir"), "ok", []))
    C[-1].argv[1] = "{W}/my run dir"
    add(runcase("rd4-unicode-path", copy_fixture("run4", "прогон-π"), "ok", []))
    C[-1].argv[1] = "{W}/прогон-π"

    # ================================================================ non-finite and extreme values, every format
    cat = "values"
    bad_vals = [("nan", "nan"), ("inf", "inf"), ("neginf", "-inf"), ("neg", "-5"), ("huge", "1e300"),
                ("over-f64", "1e400")]
    for tag, v in bad_vals:
        exp = "either" if tag == "huge" else "error"
        add(m6(f"va4-csv-{tag}", cat, "t.csv", RING6 + f"0,2,{v}\n", exp, ["t.csv"]))
        add(m6(f"va4-mtx-{tag}", cat, "t.mtx", mtx(RING_MTX + [(1, 3, v)]), exp, ["t.mtx"]))
        add(m6(f"va4-tm-{tag}", cat, "t.mat", tm(v), exp, ["t.mat"], fmt="treematch"))
    for tag, v in [("nan", np.nan), ("inf", np.inf), ("neginf", -np.inf), ("neg", -5.0), ("huge", 1e300)]:
        exp = "either" if tag == "huge" else "error"
        add(m6(f"va4-npz-dense-{tag}", cat, "t.npz", npz_bytes(matrix=dense(v)), exp, ["t.npz"]))
        add(m6(f"va4-npz-sparse-{tag}", cat, "t.npz", spz(sparse_with(v)), exp, ["t.npz"]))
        add(m6(f"va4-npy-{tag}", cat, "t.npy", (lambda a: (lambda b: (np.save(b, a), b.getvalue())[1])(io.BytesIO()))(
            dense(v)), "either", ["t.npy"]))
    add(m6("va4-npz-float16-inf", cat, "t.npz", npz_bytes(matrix=dense(70000.0).astype(np.float16)), "error",
           ["t.npz"]))
    add(m6("va4-npz-int64-neg", cat, "t.npz", npz_bytes(matrix=dense(-1).astype(np.int64)), "error", ["t.npz"]))
    add(m6("va4-npz-uint64-max", cat, "t.npz", npz_bytes(matrix=dense(0).astype(np.uint64) +
                                                         np.eye(6, k=1, dtype=np.uint64) * np.uint64(2 ** 64 - 1)),
           "either", ["t.npz"]))
    add(m6("va4-npz-complex", cat, "t.npz", npz_bytes(matrix=dense(1.0).astype(complex)), "error", ["t.npz"]))
    add(m6("va4-npz-bool", cat, "t.npz", npz_bytes(matrix=dense(1.0) > 0), "either", ["t.npz"]))
    add(m6("va4-npz-object", cat, "t.npz", npz_bytes(matrix=np.array([[1, "a"], ["b", 2]], dtype=object)), "error",
           ["t.npz"]))
    add(m6("va4-metis-weight-nan", cat, "t.graph", metis("nan"), "error", ["t.graph"]))
    add(m6("va4-metis-weight-neg", cat, "t.graph", metis("-3"), "error", ["t.graph"]))
    add(m6("va4-metis-weight-float", cat, "t.graph", metis("2.5"), "error", ["t.graph"]))
    add(m6("va4-metis-weight-huge", cat, "t.graph", metis(str(2 ** 70)), "either", ["t.graph"]))
    add(m6("va4-mtx-pattern", cat, "t.mtx", "%%MatrixMarket matrix coordinate pattern general\n6 6 6\n" +
           "".join(f"{i + 1} {(i + 1) % 6 + 1}\n" for i in range(6)), "either", ["t.mtx"]))
    add(m6("va4-mtx-integer-neg", cat, "t.mtx", mtx(RING_MTX + [(1, 3, -7)],
                                                    header="%%MatrixMarket matrix coordinate integer general"),
           "error", ["t.mtx"]))
    add(m6("va4-mtx-symmetric-upper", cat, "t.mtx", mtx([(1, 2, 5), (2, 3, 5)],
                                                        header="%%MatrixMarket matrix coordinate real symmetric"),
           "either", ["t.mtx"]))
    add(m6("va4-mtx-skew", cat, "t.mtx", mtx([(2, 1, 5), (3, 2, 5)],
                                             header="%%MatrixMarket matrix coordinate real skew-symmetric"),
           "either", ["t.mtx"]))
    add(m6("va4-mtx-complex", cat, "t.mtx", "%%MatrixMarket matrix coordinate complex general\n6 6 1\n1 2 1 1\n",
           "error", ["t.mtx"]))
    add(m6("va4-mtx-array-nan", cat, "t.mtx", "%%MatrixMarket matrix array real general\n6 6\n" +
           "".join("nan\n" if k == 3 else "1\n" for k in range(36)), "error", ["t.mtx"]))
    add(m6("va4-csv-sum-overflow", cat, "t.csv", "src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 6},1.7e308\n"
                                                                          for i in range(6)), "either", ["t.csv"]))
    add(m6("va4-csv-denormal", cat, "t.csv", RING6 + "0,2,5e-324\n", "either", ["t.csv"]))
    add(m6("va4-csv-msgs-nan", cat, "t.csv", "src,dst,bytes,msgs\n0,1,10,nan\n1,0,10,1\n", "either", ["t.csv"],
           n=2))
    add(m6("va4-csv-msgs-negative", cat, "t.csv", "src,dst,bytes,msgs\n0,1,10,-1\n1,0,10,1\n", "error", ["t.csv"],
           n=2))
    add(m6("va4-csv-bytes-plus", cat, "t.csv", RING6 + "0,2,+5\n", "either", ["t.csv"]))
    add(m6("va4-csv-bytes-underscore", cat, "t.csv", RING6 + "0,2,1_000\n", "either", ["t.csv"]))
    add(m6("va4-csv-bytes-NaN-caps", cat, "t.csv", RING6 + "0,2,NaN\n", "error", ["t.csv"]))
    add(m6("va4-csv-bytes-Infinity", cat, "t.csv", RING6 + "0,2,Infinity\n", "error", ["t.csv"]))
    add(m6("va4-mpip-nan", cat, "t.mpiP", "@ mpiP\n@--- Callsite Message Sent statistics (all, sent bytes) ---\n"
           "Name Site Rank Count Max Mean Min Sum\nSend 1 0 1 nan nan nan nan\n", "error", ["t.mpiP"], fmt="mpip"))
    add(m6("va4-amfch-neg", cat, "amfch.log", "rank 0 -> 1 : -100 words\n", "error", ["amfch.log"], fmt="amfch"))
    add(m6("va4-ompi-nan", cat, "prof.0.prof", "# POINT TO POINT\nE\t0\t1\tnan bytes\t1 msgs sent\n", "error",
           ["prof.0.prof"], fmt="ompi"))

    # ================================================================ output paths
    cat = "output"

    def out(cid, to, expect="error", where=(), setup=None, preserve=(), extra=(), cwd="{W}/cwd", check=None):
        return Case(cid, cat, ["map", "{F}/ring6.csv", *MACH, "--out", to, *extra], expect, tuple(where), setup,
                    preserve=tuple(preserve), check=(check or mapping_ok(to.replace("{W}/", ""), 6))
                    if expect != "error" else None, cwd=cwd)
    add(out("ou4-out-is-file", "{W}/f", "error", ["{W}/f"], files(f="mine\n"), ["{W}/f"]))
    add(out("ou4-out-is-file-force", "{W}/f", "error", ["{W}/f"], files(f="mine\n"), ["{W}/f"], ["--force"]))
    add(out("ou4-out-user-dir-force", "{W}/d", "error", ["{W}/d"], files(d__notes_dot_txt="mine\n"), ["{W}/d"],
            ["--force"]))
    add(out("ou4-out-empty-dir", "{W}/d", "either", ["{W}/d"], lambda W: (W / "d").mkdir()))
    add(out("ou4-out-missing-parent", "{W}/a/b/c/m", "either", ["{W}/a"]))
    add(out("ou4-out-parent-is-file", "{W}/f/m", "error", ["{W}/f"], files(f="mine\n"), ["{W}/f"]))
    add(out("ou4-out-is-input", "{F}/ring6.csv", "error", ["ring6.csv"], extra=["--force"]))
    add(out("ou4-out-is-input-dir-force", "{F}/map8", "error", ["map8"], extra=["--machine", "{F}/map8", "--force"]))
    C[-1].argv = ["map", "{F}/ring8.csv", "--machine", "{F}/map8", "--out", "{F}/map8", "--force"]
    add(out("ou4-out-contains-input", "{W}/m", "error", ["{W}/m"], copy_fixture("map8", "m",
                                                                              lambda W: (W / "m" / "t.csv").write_text(
                                                                                  RING6)), ["{W}/m"], ["--force"]))
    C[-1].argv[1] = "{W}/m/t.csv"
    add(out("ou4-out-proc", "/proc/rankmap-out", "error", ["/proc"]))
    add(out("ou4-out-dev-null", "/dev/null", "error", ["/dev/null"], extra=["--force"]))
    add(out("ou4-out-root", "/", "error", ["/"], extra=["--force"]))
    add(out("ou4-out-home-tilde", "~/rankmap-corpus-out", "either", ["~"], cwd="{W}/cwd"))
    C[-1].check = mapping_ok("cwd/~/rankmap-corpus-out", 6)
    add(out("ou4-out-spaces", "{W}/my mapping", "ok"))
    add(out("ou4-out-unicode", "{W}/отображение-λ", "ok"))
    add(out("ou4-out-newline", "{W}/a\nb", "either", ["--out"]))
    add(out("ou4-out-very-long-name", "{W}/" + "m" * 300, "error", ["--out"]))
    add(out("ou4-out-dotdot", "{W}/cwd/../m2", "ok"))
    add(out("ou4-out-trailing-slash", "{W}/m3/", "ok"))
    C[-1].check = mapping_ok("m3", 6)
    add(out("ou4-out-symlink-to-mapping-force", "{W}/ln", "either", ["{W}/ln"],
            both(copy_fixture("map8", "real"), lambda W: (W / "ln").symlink_to(W / "real")), [], ["--force"]))
    C[-1].check = mapping_ok("ln", 6)
    add(out("ou4-out-dangling-symlink", "{W}/ln", "either", ["{W}/ln"], lambda W: (W / "ln").symlink_to(W / "nowhere")))
    C[-1].check = mapping_ok("ln", 6)
    add(Case("ou4-plots-out-readonly-fs", cat, ["evaluate", "{F}/ring8.csv", "{F}/map8", "--plots", "/proc/x"],
             "error", ("/proc",)))
    add(Case("ou4-convert-dst-is-src", cat, ["convert", "{W}/t.csv", "{W}/t.csv"], "error", ("t.csv",),
             files(t_dot_csv=RING6), preserve=("{W}/t.csv",)))
    add(Case("ou4-convert-dst-dir", cat, ["convert", "{F}/ring6.csv", "{W}/d"], "error", ("{W}/d",),
             lambda W: (W / "d").mkdir()))
    add(Case("ou4-convert-unicode", cat, ["convert", "{F}/ring6.csv", "{W}/граф λ.graph"], "ok", (),
             check=exists("граф λ.graph")))
    add(Case("ou4-heatmap-is-input", cat, ["show-profile", "{W}/run", "--heatmap", "{W}/run/run.json"], "error",
             ("run.json",), copy_fixture("run4", "run"), preserve=("{W}/run",)))

    # ================================================================ host names
    cat = "hosts"
    long63 = "h" * 63
    add(opt("ho4-hostname-63", cat, ["--nodes", f"{long63}[1-3]", "--node-topology", "pack:1 core:4"], "ok",
            machine=False))
    add(opt("ho4-hostname-255", cat, ["--nodes", f"{'h' * 250}[1-3]", "--node-topology", "pack:1 core:4"], "either",
            ["--nodes"], machine=False))
    add(opt("ho4-hostname-300", cat, ["--nodes", f"{'h' * 300}[1-3]", "--node-topology", "pack:1 core:4"], "error",
            ["--nodes"], machine=False))
    add(opt("ho4-hostname-fqdn", cat, ["--nodes", "n[1-3].cluster.example.org", "--node-topology", "pack:1 core:4"],
            "ok", machine=False))
    add(opt("ho4-hostname-unicode", cat, ["--nodes", "узел[1-3]", "--node-topology", "pack:1 core:4"], "error",
            ["--nodes"], machine=False))
    add(opt("ho4-hostname-leading-dash", cat, ["--nodes", "-n[1-3]", "--node-topology", "pack:1 core:4"], "error",
            ["-n"], machine=False))
    add(opt("ho4-hostlist-two-ranges", cat, ["--nodes", "r[1-3]n[1-2]", "--node-topology", "pack:1 core:2"], "ok",
            machine=False))
    add(opt("ho4-hostlist-padded-mixed", cat, ["--nodes", "n[08-10]", "--node-topology", "pack:1 core:2"], "ok",
            machine=False))
    add(opt("ho4-hostlist-file-long", cat, ["--nodes", "@{W}/hosts", "--node-topology", "pack:1 core:2"], "ok",
            machine=False, setup=files(hosts="".join(f"{'x' * 200}{i}\n" for i in range(3)))))
    add(opt("ho4-hostlist-file-100k", cat, ["--nodes", "@{W}/hosts", "--node-topology", "pack:1 core:2"], "ok",
            machine=False, setup=files(hosts="".join(f"node{i:06d}.rack{i // 40}.example\n"
                                                     for i in range(100000)))))
    C[-1].timeout = 120
    add(opt("ho4-topology-per-host-long", cat, ["--nodes", f"{long63}[1-3]", "--node-topology",
                                                f"{long63}[1-2]=pack:1 core:2", "--node-topology",
                                                f"{long63}3=pack:1 core:4"], "ok", machine=False))

    # ================================================================ SLURM_* environment
    cat = "slurm-env"

    def senv(cid, env, extra, expect="error", where=(), n=6, machine_flags=True, verb="map"):
        argv = ["map", "{F}/ring6.csv", *(MACH if machine_flags else []), "--out", "{W}/out", *extra]
        return Case(cid, cat, argv, expect, tuple(where), env=env,
                    check=mapping_ok("out", n) if expect != "error" else None)
    add(senv("se4-env-nodelist-used", {"SLURM_JOB_NODELIST": "n[1-3]"}, ["--node-topology", "pack:1 core:4"], "ok",
             machine_flags=False))
    add(senv("se4-env-nodelist-disagrees", {"SLURM_JOB_NODELIST": "z[1-9]", "SLURM_JOB_ID": "77"}, [], "ok"))
    add(senv("se4-env-nodelist-garbage-flag-given", {"SLURM_JOB_NODELIST": "n[1-"}, [], "ok"))
    add(senv("se4-env-nodelist-garbage", {"SLURM_JOB_NODELIST": "n[1-"}, ["--node-topology", "pack:1 core:4"],
             "error", ["SLURM_JOB_NODELIST"], machine_flags=False))
    add(senv("se4-env-nodelist-empty", {"SLURM_JOB_NODELIST": ""}, ["--node-topology", "pack:1 core:4"], "error",
             [], machine_flags=False))
    add(senv("se4-env-nodelist-too-small", {"SLURM_JOB_NODELIST": "n1", "SLURM_JOB_ID": "9"},
             ["--node-topology", "pack:1 core:4"], "error", ["4 slots on 1 node"], machine_flags=False))
    add(senv("se4-env-nodelist-huge", {"SLURM_JOB_NODELIST": "n[1-99999999]"}, ["--node-topology", "pack:1 core:4"],
             "error", ["SLURM_JOB_NODELIST"], machine_flags=False))
    add(senv("se4-env-old-nodelist", {"SLURM_NODELIST": "n[1-3]"}, ["--node-topology", "pack:1 core:4"], "either",
             [], machine_flags=False))
    add(senv("se4-env-cpus-garbage", {"SLURM_JOB_NODELIST": "n[1-3]", "SLURM_JOB_CPUS_PER_NODE": "4(x"},
             ["--node-topology", "pack:1 core:4"], "ok", machine_flags=False))
    add(senv("se4-env-hostfile-set", {"SLURM_HOSTFILE": "/nonexistent/hostfile"}, [], "ok"))
    add(senv("se4-env-ntasks-disagree", {"SLURM_NTASKS": "64", "SLURM_NPROCS": "64"}, [], "ok"))
    add(Case("se4-env-srun-dry-run-ntasks", cat, ["srun", "{F}/map8", "--dry-run", "--", "./app"], "either",
             ("SLURM_NTASKS",), env={"SLURM_JOB_ID": "5", "SLURM_NTASKS": "3", "SLURM_JOB_NODELIST": "n[1-2]"}))
    add(Case("se4-env-srun-dry-run-nodes-outside", cat, ["srun", "{F}/map8", "--dry-run", "--", "./app"], "either",
             ("n1",), env={"SLURM_JOB_ID": "5", "SLURM_JOB_NODELIST": "z[1-2]"}))
    add(Case("se4-env-sbatch-partition-env", cat, ["sbatch", "-n", "8", "-N", "2", "--out", "{W}/job", "--", "./app"],
             "either", (), env={"SBATCH_PARTITION": "nonexistent", "SLURM_JOB_ID": ""},
             check=exists("job")))
    return C
