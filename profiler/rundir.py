"""Read a profiler run directory (format: docs/formats.md) into a Profile.

The run file holds self-describing blocks appended by every rank; the newest block of
each rank wins. Point-to-point traffic becomes a scipy.sparse CSR matrix (rows =
sources, columns = destinations, world ranks), never a dense P x P array."""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from profiler.errors import UserError

MAGIC = b"RMPROF\x00\x01"
HEADER = np.dtype([("magic", "S8"), ("version", "<u4"), ("header_size", "<u4"), ("payload_size", "<u8"),
                   ("crc", "<u4"), ("rank", "<u4"), ("size", "<u4"), ("status", "<u4"), ("detail", "<i4"),
                   ("seq", "<u4"), ("pid", "<u4"), ("nsections", "<u4"), ("reserved", "<u8")])
SECTION = np.dtype([("type", "<u4"), ("item", "<u4"), ("size", "<u8")])
P2P = np.dtype([("src", "<u4"), ("dst", "<u4"), ("bytes", "<u8"), ("msgs", "<u8")])
COLL = np.dtype([("group", "<u4"), ("op", "<u2"), ("bucket", "<u2"), ("root", "<i4"), ("pad", "<u4"),
                 ("calls", "<u8"), ("bytes", "<u8")])
END = np.dtype([("t_start", "<u8"), ("t_end", "<u8"), ("cpu_end", "<i4"), ("numa_end", "<i4"),
                ("unattr_bytes", "<u8"), ("unattr_msgs", "<u8"), ("inter_coll", "<u8"),
                ("aff_words", "<u4"), ("pad", "<u4")])
SEC_META, SEC_END, SEC_P2P, SEC_GROUPS, SEC_COLL = 1, 2, 3, 4, 5

STATUS = {1: "running", 2: "finalized", 3: "aborted", 4: "exit-without-finalize", 5: "signal"}
OPS = {1: "barrier", 2: "bcast", 3: "reduce", 4: "allreduce", 5: "scan", 6: "exscan", 7: "gather",
       8: "scatter", 9: "allgather", 10: "allgatherv", 11: "alltoall", 12: "reduce_scatter",
       13: "reduce_scatter_block"}


@dataclass
class RankRecord:
    rank: int
    status: str
    detail: int
    pid: int
    seq: int
    meta: dict
    cpu_end: int
    numa_end: int
    affinity_end: str
    t_start_ns: int
    t_end_ns: int
    unattributed_bytes: int
    unattributed_msgs: int
    intercomm_collectives: int

    @property
    def hostname(self) -> str:
        return self.meta.get("hostname", "?")

    @property
    def affinity_init(self) -> str:
        return self.meta.get("affinity_init") or ""

    @property
    def cpu_init(self) -> int:
        return self.meta.get("cpu_init", -1)

    def status_text(self) -> str:
        if self.status == "signal":
            return f"signal {self.detail}"
        if self.status == "aborted":
            return f"aborted (code {self.detail})"
        if self.status == "running":
            secs = (self.t_end_ns - self.t_start_ns) / 1e9
            return f"killed (no final block); snapshot at {secs:.2f} s"
        return self.status


@dataclass
class Collective:
    """One row of the collective table: calls of one operation on one communicator."""
    members: np.ndarray  # world ranks in communicator order
    op: str
    root: int            # world rank, -1 for rootless operations
    bucket: int          # bit length of the per-call size n (docs/formats.md)
    calls: int
    bytes: int           # sum of n over the calls

    @property
    def mean_bytes(self) -> float:
        return self.bytes / self.calls if self.calls else 0.0


@dataclass
class Profile:
    path: Path
    run_id: str
    size: int
    bytes: sp.csr_matrix
    msgs: sp.csr_matrix
    ranks: list
    collectives: list = field(default_factory=list)
    problems: list = field(default_factory=list)
    run: dict = field(default_factory=dict)

    @property
    def missing_ranks(self) -> list[int]:
        return [r for r, rec in enumerate(self.ranks) if rec is None]

    @property
    def complete(self) -> bool:
        return not self.problems and all(r is not None and r.status == "finalized" for r in self.ranks)

    @property
    def mpi_library(self) -> str:
        for r in self.ranks:
            if r is not None:
                lib = (r.meta.get("mpi_library") or "?").strip().splitlines()[0]
                return " ".join(lib.split(", package:")[0].split())
        return "?"

    def partial_reasons(self) -> list[str]:
        out = list(self.problems)
        missing = self.missing_ranks
        if missing:
            out.append(f"{len(missing)} rank(s) wrote no data: {_ranges(missing)}")
        by_status: dict[str, list[int]] = {}
        for r in self.ranks:
            if r is not None and r.status != "finalized":
                by_status.setdefault(r.status_text(), []).append(r.rank)
        for st, rs in sorted(by_status.items()):
            out.append(f"rank(s) {_ranges(rs)} ended with: {st}")
        return out


def _ranges(xs: list[int]) -> str:
    xs = sorted(xs)
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(str(xs[i]) if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def _mask_to_list(words: np.ndarray) -> str:
    bits = np.unpackbits(words.astype("<u8").view(np.uint8), bitorder="little")
    cpus = np.flatnonzero(bits).tolist()
    return _ranges(cpus)


def find_run_file(path: Path) -> tuple[Path, dict]:
    if not path.exists():
        raise UserError(f"{path}: no such run directory")
    if not path.is_dir():
        raise UserError(f"{path}: not a directory (expected a profiler run directory)")
    run = {}
    run_json = path / "run.json"
    if run_json.exists():
        try:
            run = json.loads(run_json.read_text())
        except ValueError as e:
            raise UserError(f"{run_json}: corrupt ({e})") from None
    files = sorted(path.glob("ranks.*.rmp"))
    if run.get("run_id"):
        want = path / f"ranks.{run['run_id']}.rmp"
        if not want.exists():
            cmd = " ".join(run.get("command", [])) or "the program"
            raise UserError(f"{path}: no rank wrote profile data (the run of `{cmd}` exited with "
                            f"{run.get('exit_code', '?')}); was it an MPI program started by the launcher?")
        return want, run
    if not files:
        raise UserError(f"{path}: no profile data (no ranks.*.rmp file); was the profiler preloaded?")
    if len(files) > 1:
        raise UserError(f"{path}: holds {len(files)} runs ({', '.join(f.name for f in files)}); "
                        "move each into its own directory")
    return files[0], run


def read_run(path: str | Path) -> Profile:
    """Read and validate a run directory. Partial runs are returned with their reasons
    (Profile.complete is False); corrupt or inconsistent data raises UserError."""
    path = Path(path)
    fpath, run = find_run_file(path)
    data = fpath.read_bytes()
    if not data:
        raise UserError(f"{fpath}: empty; no rank finished writing its data")
    problems: list[str] = []
    newest: dict[int, tuple] = {}   # rank -> (seq, header, offset)
    size = None
    off = 0
    n = len(data)
    while off < n:
        if data[off:off + 8] != MAGIC:
            nxt = data.find(MAGIC, off + 1)
            problems.append(f"{fpath.name}: unreadable bytes at offset {off}" +
                            ("" if nxt >= 0 else " up to the end of the file"))
            if nxt < 0:
                break
            off = nxt
            continue
        if off + HEADER.itemsize > n:
            problems.append(f"{fpath.name}: truncated block header at offset {off}")
            break
        h = np.frombuffer(data, HEADER, 1, off)[0]
        end = off + int(h["header_size"]) + int(h["payload_size"])
        if h["version"] != 1 or h["header_size"] != HEADER.itemsize:
            raise UserError(f"{fpath}: block at offset {off} has format version {int(h['version'])}; "
                            "this rankmap reads version 1")
        if end > n:
            problems.append(f"{fpath.name}: block of rank {int(h['rank'])} at offset {off} is truncated "
                            "(the process died while writing it)")
            break
        payload = data[off + HEADER.itemsize:end]
        if zlib.crc32(payload) != int(h["crc"]):
            problems.append(f"{fpath.name}: block of rank {int(h['rank'])} at offset {off} fails its checksum")
            off = end
            continue
        rank, seq = int(h["rank"]), int(h["seq"])
        if size is None:
            size = int(h["size"])
        elif size != int(h["size"]):
            raise UserError(f"{fpath}: ranks disagree on the number of processes ({size} vs {int(h['size'])}); "
                            "the file mixes different runs")
        if rank >= size:
            raise UserError(f"{fpath}: block for rank {rank} in a run of {size} processes")
        prev = newest.get(rank)
        if prev is not None and int(prev[1]["pid"]) != int(h["pid"]) and size == 1:
            raise UserError(f"{fpath}: several processes each ran as a one-rank MPI job: the launcher and the "
                            "program's MPI did not connect (MPICH under srun needs --mpi=pmi2, Open MPI --mpi=pmix)")
        if prev is not None and int(prev[1]["pid"]) != int(h["pid"]):
            raise UserError(f"{fpath}: rank {rank} appears with two process ids ({int(prev[1]['pid'])} and "
                            f"{int(h['pid'])}); the file mixes different runs")
        if prev is None or seq >= prev[0]:
            newest[rank] = (seq, h, off)
        off = end
    if size is None:
        raise UserError(f"{fpath}: no readable block" + (f" ({problems[0]})" if problems else ""))

    ranks: list = [None] * size
    srcs, dsts, byts, msgs = [], [], [], []
    collectives: list[Collective] = []
    group_cache: dict[bytes, np.ndarray] = {}
    identity = None
    for rank, (seq, h, boff) in sorted(newest.items()):
        secs = _sections(data, boff, h, fpath)
        meta = json.loads(secs[SEC_META].decode("utf-8", "replace"))
        e = np.frombuffer(secs[SEC_END], END, 1, 0)[0]
        words = np.frombuffer(secs[SEC_END], "<u8", int(e["aff_words"]), END.itemsize)
        ranks[rank] = RankRecord(
            rank=rank, status=STATUS.get(int(h["status"]), f"unknown({int(h['status'])})"),
            detail=int(h["detail"]), pid=int(h["pid"]), seq=seq, meta=meta,
            cpu_end=int(e["cpu_end"]), numa_end=int(e["numa_end"]), affinity_end=_mask_to_list(words),
            t_start_ns=int(e["t_start"]), t_end_ns=int(e["t_end"]),
            unattributed_bytes=int(e["unattr_bytes"]), unattributed_msgs=int(e["unattr_msgs"]),
            intercomm_collectives=int(e["inter_coll"]))
        rows = np.frombuffer(secs[SEC_P2P], P2P)
        if len(rows):
            if rows["src"].max() >= size or rows["dst"].max() >= size:
                raise UserError(f"{fpath}: rank {rank} reports traffic with a rank outside 0..{size - 1}")
            srcs.append(rows["src"]), dsts.append(rows["dst"]), byts.append(rows["bytes"]), msgs.append(rows["msgs"])
        groups = _groups(secs[SEC_GROUPS], size, fpath, rank)
        for g, members in groups.items():
            if members is None:
                identity = identity if identity is not None else np.arange(size, dtype=np.int64)
                groups[g] = identity
            else:
                key = members.tobytes()
                groups[g] = group_cache.setdefault(key, members)
        for row in np.frombuffer(secs[SEC_COLL], COLL):
            g = int(row["group"])
            if g not in groups:
                raise UserError(f"{fpath}: rank {rank} has a collective on an undeclared communicator {g}")
            collectives.append(Collective(members=groups[g], op=OPS.get(int(row["op"]), f"op{int(row['op'])}"),
                                          root=int(row["root"]), bucket=int(row["bucket"]),
                                          calls=int(row["calls"]), bytes=int(row["bytes"])))

    def mat(vals):
        if not srcs:
            return sp.csr_matrix((size, size), dtype=np.int64)
        m = sp.coo_matrix((np.concatenate(vals).astype(np.int64),
                           (np.concatenate(srcs).astype(np.int64), np.concatenate(dsts).astype(np.int64))),
                          shape=(size, size))
        return m.tocsr()  # duplicates (a send and a get between the same pair) add up

    return Profile(path=path, run_id=run.get("run_id") or fpath.name[len("ranks."):-len(".rmp")], size=size,
                   bytes=mat(byts), msgs=mat(msgs), ranks=ranks, collectives=collectives,
                   problems=problems, run=run)


def _sections(data: bytes, boff: int, h, fpath: Path) -> dict[int, bytes]:
    secs: dict[int, bytes] = {}
    off = boff + HEADER.itemsize
    end = off + int(h["payload_size"])
    for _ in range(int(h["nsections"])):
        if off + SECTION.itemsize > end:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} has a malformed section table")
        s = np.frombuffer(data, SECTION, 1, off)[0]
        size = int(s["size"])
        start = off + SECTION.itemsize
        if start + size > end:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} has a section past its end")
        secs[int(s["type"])] = data[start:start + size]
        off = start + size + (-size % 8)
    for t in (SEC_META, SEC_END, SEC_P2P, SEC_GROUPS, SEC_COLL):
        if t not in secs:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} lacks section {t}")
    return secs


def _groups(buf: bytes, size: int, fpath: Path, rank: int) -> dict:
    out: dict = {}
    off = 0
    a = np.frombuffer(buf, "<u4")
    while off < len(a):
        gid, n, flags = int(a[off]), int(a[off + 1]), int(a[off + 2])
        off += 4
        if flags & 1:
            out[gid] = None  # the world, in order
            continue
        members = a[off:off + n].astype(np.int64)
        if len(members) != n:
            raise UserError(f"{fpath}: rank {rank} has a truncated communicator table")
        members[members == 0xFFFFFFFF] = -1
        out[gid] = members
        off += n + (n & 1)
    return out
