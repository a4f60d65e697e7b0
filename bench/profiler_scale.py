#!/usr/bin/env python3
"""The profiler's run directory at 10^3-10^5 ranks: file size per rank, and the time and
memory of reading it back (profiler/rundir.py read_run, then the traffic matrix with the
collectives expanded, as `rankmap map` reads a profile: read_traffic reads the run again).
Times are CPU seconds of the reading process (the wall time on a shared 2-core machine is
up to 3x more; printed for read_traffic).

A 10^5-rank MPI run does not fit this 2-core machine, so the run file is written here the
way the C profiler writes it (csrc/profiler/output.c: the same blocks, sections, padding
and CRC, from profiler/runfile.py's layout): every rank talks to its 6 neighbours of a
3-D periodic grid (MPI_Cart_create-style) and takes part in one allreduce on the world
(recorded once, by rank 0); META is what a real rank writes (bench/data/profiler/
meta-*.json: taken from real MPICH 4.0.2 runs); each rank writes `--blocks` blocks (the
snapshots, then the final one), all ranks' snapshots before the final blocks, as they
happen. `--layout before` writes what the profiler wrote before this benchmark (the full
MPI library description in every rank's META, a 4096-CPU affinity mask in every END);
`after` what it writes now (the full description from rank 0 only, the mask trimmed to
the words in use).

    .venv/bin/python bench/profiler_scale.py [--ranks 1000,10000,100000] [--blocks 3]

Real oversubscribed runs (finalize time with and without the profiler) are in
docs/formats.md ("At scale"); they use tests' own program and `rankmap profile`.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from mapper_torus import dims_create  # noqa: E402  (MPI_Dims_create, one definition)
from rankmap.profiler import runfile  # noqa: E402

HEADER = runfile.dtype("rmp_block_header")
SECTION = runfile.dtype("rmp_section_header")
P2P = runfile.dtype("rmp_p2p_row")
COLL = runfile.dtype("rmp_coll_row")
END = runfile.dtype("rmp_end_fixed")
SEC = runfile.SECTIONS
META_DIR = ROOT / "bench" / "data" / "profiler"


def neighbours(p: int) -> np.ndarray:
    """(p, 6) periodic 3-D grid neighbours, row-major ranks."""
    dims = dims_create(p, 3)
    c = np.array(np.unravel_index(np.arange(p), dims))
    out = []
    for d in range(3):
        for s in (1, -1):
            cc = c.copy()
            cc[d] = (cc[d] + s) % dims[d]
            out.append(np.ravel_multi_index(cc, dims))
    return np.stack(out, axis=1)


def _pad(b: bytes) -> bytes:
    return b + b"\0" * (-len(b) % 8)


def block(rank: int, size: int, seq: int, status: int, meta: bytes, mask_words: int, nb: np.ndarray,
          per_msg: int, msgs: int, world_coll: bool) -> bytes:
    secs = []
    secs.append((SEC["META"], 1, meta))
    ef = np.zeros(1, END)
    ef["t_start"], ef["t_end"], ef["cpu_end"], ef["numa_end"], ef["aff_words"] = 1, 2, rank % 2, 0, mask_words
    mask = np.zeros(mask_words, "<u8")
    mask[0] = 3
    secs.append((SEC["END"], 0, ef.tobytes() + mask.tobytes()))
    rows = np.zeros(len(nb), P2P)
    rows["src"], rows["dst"], rows["bytes"], rows["msgs"] = rank, nb, per_msg * msgs, msgs
    secs.append((SEC["P2P"], P2P.itemsize, rows.tobytes()))
    if world_coll:
        secs.append((SEC["GROUPS"], 0, np.array([0, size, 1, 0], "<u4").tobytes()))
        c = np.zeros(1, COLL)
        c["group"], c["op"], c["bucket"], c["root"], c["calls"], c["bytes"] = 0, runfile.OPS.index("allreduce") + 1, \
            4, -1, 1, 8
        secs.append((SEC["COLL"], COLL.itemsize, c.tobytes()))
    else:
        secs.append((SEC["GROUPS"], 0, b""))
        secs.append((SEC["COLL"], COLL.itemsize, b""))
    payload = b"".join(np.array([(t, item, len(d))], SECTION).tobytes() + _pad(d) for t, item, d in secs)
    h = np.zeros(1, HEADER)
    h["magic"], h["version"], h["header_size"], h["payload_size"] = runfile.MAGIC, runfile.VERSION, 64, len(payload)
    h["crc"], h["rank"], h["size"], h["status"], h["seq"], h["pid"], h["nsections"] = \
        zlib.crc32(payload), rank, size, status, seq, 1000 + rank, len(secs)
    return h.tobytes() + payload


def write_run(out: Path, p: int, blocks: int, layout: str) -> Path:
    """A run directory of p ranks, `blocks` blocks each (the last one final)."""
    full = json.loads((META_DIR / "meta-mpich-rank1.json").read_text())
    out.mkdir(parents=True, exist_ok=True)
    run_id = f"synthetic-{p}"
    nb = neighbours(p)
    first_line = full["mpi_library"].splitlines()[0]
    metas = []
    for r in range(p):
        m = dict(full, world_rank=r, world_size=p, run_id=run_id, pid=1000 + r, env={"PMI_RANK": str(r)})
        if layout == "after" and r != 0:
            m["mpi_library"] = first_line
        metas.append(json.dumps(m, separators=(",", ":")).encode())
    mask_words = 64 if layout == "before" else 1
    with open(out / f"ranks.{run_id}.rmp", "wb") as f:
        for seq in range(blocks):
            status = 2 if seq == blocks - 1 else 1
            for r in range(p):
                f.write(block(r, p, seq, status, metas[r], mask_words, nb[r], 512, 6 * (seq + 1), r == 0))
    (out / "run.json").write_text(json.dumps({"run_id": run_id, "command": ["synthetic"], "exit_code": 0}))
    return out


def measure_read(run: Path) -> dict:
    """read_run and read_traffic in a fresh process: seconds and peak memory."""
    code = f"""
import json, resource, sys, time
sys.path.insert(0, {str(ROOT)!r})
from rankmap.profiler.rundir import read_run
from rankmap.profiler.formats import read_traffic
c0, t0 = time.process_time(), time.perf_counter(); p = read_run({str(run)!r})
c1, t1 = time.process_time(), time.perf_counter(); t = read_traffic({str(run)!r})
c2, t2 = time.process_time(), time.perf_counter()
assert p.complete and t.size == p.size and t.bytes.nnz >= 6 * p.size - 6 * p.size // 2
print(json.dumps({{"read_run_s": t1 - t0, "read_traffic_s": t2 - t1, "read_run_cpu": c1 - c0,
                   "read_traffic_cpu": c2 - c1,
                   "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(res.stderr)
    return json.loads(res.stdout)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", default="1000,10000,100000")
    ap.add_argument("--blocks", type=int, default=3, help="blocks per rank (snapshots + the final one)")
    ap.add_argument("--layout", default="before,after")
    args = ap.parse_args()
    print(f"{'layout':7} {'ranks':>7} {'blocks':>6} | {'file MB':>8} {'B/rank':>7} | {'read_run CPU s':>14} "
          f"{'read_traffic CPU s':>18} {'(wall s)':>9} {'peak MB':>8}", flush=True)
    for layout in args.layout.split(","):
        for p in (int(x) for x in args.ranks.split(",")):
            with tempfile.TemporaryDirectory(prefix="rankmap-scale-") as d:
                run = write_run(Path(d) / "run", p, args.blocks, layout)
                size = sum(f.stat().st_size for f in run.iterdir())
                r = measure_read(run)
            print(f"{layout:7} {p:7d} {args.blocks:6d} | {size / 1e6:8.2f} {size / p:7.0f} | "
                  f"{r['read_run_cpu']:14.2f} {r['read_traffic_cpu']:18.2f} {r['read_traffic_s']:9.2f} "
                  f"{r['peak_mb']:8.0f}", flush=True)


if __name__ == "__main__":
    main()
