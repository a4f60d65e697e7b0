"""Read a profiler run directory (format: docs/formats.md) into a Profile.

The run file holds self-describing blocks appended by every rank; the newest block of
each rank wins. Point-to-point traffic becomes a scipy.sparse CSR matrix (rows =
sources, columns = destinations, world ranks), never a dense P x P array."""
from __future__ import annotations

import gc
import json
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from rankmap.profiler import runfile, validate
from rankmap.profiler.errors import UserError

MAGIC = runfile.MAGIC
HEADER = runfile.dtype("rmp_block_header")
SECTION = runfile.dtype("rmp_section_header")
P2P = runfile.dtype("rmp_p2p_row")
COLL = runfile.dtype("rmp_coll_row")
END = runfile.dtype("rmp_end_fixed")
SEC_META, SEC_END, SEC_P2P, SEC_GROUPS, SEC_COLL = (runfile.SECTIONS[k] for k in ("META", "END", "P2P", "GROUPS",
                                                                                   "COLL"))
STATUS = {code: name for code, name in runfile.STATUS.values()}


def _unpacker(dt: np.dtype) -> struct.Struct:
    """A struct.Struct reading one record of a runfile dtype: at 10^5 ranks, numpy record
    scalars (one per block header and section header) cost more than the reading itself."""
    codes = {"S8": "8s", "<u2": "H", "<u4": "I", "<i4": "i", "<u8": "Q"}
    st = struct.Struct("<" + "".join(codes[dt.fields[n][0].str.replace("|", "")] for n in dt.names))
    assert st.size == dt.itemsize
    return st


_HDR, _SEC, _END = _unpacker(HEADER), _unpacker(SECTION), _unpacker(END)
assert HEADER.itemsize == 64 and SECTION.itemsize == 16


class _Rec(dict):
    """One header as {field: int}, read with struct (h["pid"] as with a numpy record)."""

    @classmethod
    def read(cls, st: struct.Struct, names, data, off: int) -> "_Rec":
        return cls(zip(names, st.unpack_from(data, off)))


OPS = dict(enumerate(runfile.OPS, 1))


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


_RUN_ID = re.compile(r"^[A-Za-z0-9_.:+-]{1,200}$")


def find_run_file(path: Path) -> tuple[Path, dict]:
    if not path.exists():
        raise UserError(f"{path}: no such run directory")
    if not path.is_dir():
        raise UserError(f"{path}: not a directory (expected a profiler run directory)")
    run = {}
    run_json = path / "run.json"
    if run_json.exists():
        run = validate.json_object(validate.read_json(run_json, "run record (run.json)"), str(run_json))
        rid = run.get("run_id")
        if rid is not None and (not isinstance(rid, str) or not _RUN_ID.match(rid) or rid.startswith(".")):
            raise UserError(f"{run_json}: run_id {validate.show(rid)} is not a run id (letters, digits, . _ : + -)")
        if not isinstance(run.get("command", []), list):
            run["command"] = [str(run["command"])]
        for k in ("seconds", "exit_code"):
            v = run.get(k)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or v != v):
                raise UserError(f"{run_json}: {k} {validate.show(v)} is not a number; the file is damaged")
    files = sorted(f for f in path.glob("ranks.*.rmp"))
    if run.get("run_id"):
        want = path / f"ranks.{run['run_id']}.rmp"
        if not want.exists():
            cmd = " ".join(map(str, run.get("command", []))) or "the program"
            if run.get("timed_out") is True:
                # the hint below (not an MPI program?) sent the user after the wrong cause
                raise UserError(f"{path}: no rank wrote profile data: the run of `{cmd}` was stopped by --timeout "
                                f"after {run.get('seconds', '?')} s, before any rank recorded anything; give it "
                                "more time (a larger --timeout)")
            raise UserError(f"{path}: no rank wrote profile data (the run of `{cmd}` exited with "
                            f"{run.get('exit_code', '?')}); was it an MPI program started by the launcher?")
        return want, run
    if not files:
        sub = path / "profile"
        if sub.is_dir() and any((path / f".rankmap-{k}").exists() for k in ("run", "sbatch")):
            # a `rankmap run` / `rankmap sbatch` directory: its profile (or SMPI trace) is one level down
            raise UserError(f"{path}: a workflow directory (rankmap run or sbatch), not a profile; its profile is "
                            f"{sub}{' (an SMPI trace)' if (sub / 'trace.ti').is_file() else ''}")
        raise UserError(f"{path}: no profile data (no ranks.*.rmp file); was the profiler preloaded?")
    if len(files) > 1:
        raise UserError(f"{path}: holds {len(files)} runs ({', '.join(f.name for f in files[:4])}); "
                        "move each into its own directory")
    return files[0], run


def read_run(path: str | Path) -> Profile:
    """Read and validate a run directory. Partial runs are returned with their reasons
    (Profile.complete is False); corrupt or inconsistent data raises UserError."""
    # a few small objects per rank and nothing cyclic: the collector's passes over them
    # would cost a quarter of the time at 10^5 ranks
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _read_run(Path(path))
    finally:
        if enabled:
            gc.enable()


def _read_run(path: Path) -> Profile:
    fpath, run = find_run_file(path)
    data = validate.read_bytes(fpath, "profiler run file (ranks.*.rmp)")
    if not data:
        raise UserError(f"{fpath}: empty; no rank finished writing its data")
    problems: list[str] = []
    newest: dict[int, tuple] = {}   # rank -> (seq, header, offset)
    size = None
    off = 0
    n = len(data)
    view = memoryview(data)
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
        h = _Rec.read(_HDR, HEADER.names, data, off)
        if h["version"] != runfile.VERSION:
            raise UserError(f"{fpath}: block at offset {off} has format version {int(h['version'])}; "
                            f"this rankmap reads version {runfile.VERSION}")
        if h["header_size"] != HEADER.itemsize:
            problems.append(f"{fpath.name}: block at offset {off} has a header of {int(h['header_size'])} bytes, "
                            f"not {HEADER.itemsize}: skipped")
            nxt = data.find(MAGIC, off + 1)
            if nxt < 0:
                break
            off = nxt
            continue
        end = off + int(h["header_size"]) + int(h["payload_size"])
        if end > n:
            problems.append(f"{fpath.name}: block of rank {int(h['rank'])} at offset {off} is truncated "
                            "(the process died while writing it)")
            break
        if zlib.crc32(view[off + HEADER.itemsize:end]) != int(h["crc"]):
            problems.append(f"{fpath.name}: block of rank {int(h['rank'])} at offset {off} fails its checksum")
            off = end
            continue
        rank, seq = int(h["rank"]), int(h["seq"])
        if not 1 <= int(h["size"]) <= validate.MAX_RANKS:
            raise UserError(f"{fpath}: block of rank {rank} at offset {off} says the run has {int(h['size'])} "
                            f"processes (possible: 1..{validate.MAX_RANKS}); the file is damaged")
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
    p2p: list[np.ndarray] = []
    p2p_rank: list[int] = []
    masks: dict[bytes, str] = {}      # most ranks share their affinity mask: its text once
    collectives: list[Collective] = []
    group_cache: dict[bytes, np.ndarray] = {}
    identity = None
    for rank, (seq, h, boff) in sorted(newest.items()):
        secs = _sections(view, boff, h, fpath)
        where = f"{fpath}: block of rank {rank} at offset {boff}"
        meta = _meta(bytes(secs[SEC_META]), where)
        if len(secs[SEC_END]) < END.itemsize:
            raise UserError(f"{where}: its END section has {len(secs[SEC_END])} bytes, fewer than {END.itemsize}")
        e = _Rec.read(_END, END.names, secs[SEC_END], 0)
        if END.itemsize + 8 * int(e["aff_words"]) > len(secs[SEC_END]):
            raise UserError(f"{where}: its END section is shorter than its CPU mask ({int(e['aff_words'])} words)")
        mask = bytes(secs[SEC_END][END.itemsize:END.itemsize + 8 * int(e["aff_words"])])
        if mask not in masks:
            masks[mask] = _mask_to_list(np.frombuffer(mask, "<u8"))
        for sec, dt, name in ((SEC_P2P, P2P, "P2P"), (SEC_COLL, COLL, "COLL")):
            if len(secs[sec]) % dt.itemsize:
                raise UserError(f"{where}: its {name} section ({len(secs[sec])} bytes) is not whole "
                                f"{dt.itemsize}-byte rows")
        ranks[rank] = RankRecord(
            rank=rank, status=STATUS.get(int(h["status"]), f"unknown({int(h['status'])})"),
            detail=int(h["detail"]), pid=int(h["pid"]), seq=seq, meta=meta,
            cpu_end=int(e["cpu_end"]), numa_end=int(e["numa_end"]), affinity_end=masks[mask],
            t_start_ns=int(e["t_start"]), t_end_ns=int(e["t_end"]),
            unattributed_bytes=int(e["unattr_bytes"]), unattributed_msgs=int(e["unattr_msgs"]),
            intercomm_collectives=int(e["inter_coll"]))
        if len(secs[SEC_P2P]):
            p2p.append(np.frombuffer(secs[SEC_P2P], np.uint8))  # as bytes: one concatenation, checked below
            p2p_rank.append(rank)
        if not len(secs[SEC_GROUPS]) and not len(secs[SEC_COLL]):
            continue                                          # most ranks record no collective
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
            if int(row["op"]) not in OPS:
                raise UserError(f"{where}: a collective with unknown operation code {int(row['op'])}")
            if not -1 <= int(row["root"]) < size:
                raise UserError(f"{where}: a collective rooted at rank {int(row['root'])}, outside 0..{size - 1}")
            collectives.append(Collective(members=groups[g], op=OPS.get(int(row["op"]), f"op{int(row['op'])}"),
                                          root=int(row["root"]), bucket=int(row["bucket"]),
                                          calls=int(row["calls"]), bytes=int(row["bytes"])))

    rows = np.concatenate(p2p).view(P2P) if p2p else np.zeros(0, P2P)
    if len(rows):
        bad = (rows["src"] >= size) | (rows["dst"] >= size)
        if bad.any():
            owner = np.repeat(np.array(p2p_rank), [len(r) // P2P.itemsize for r in p2p])
            raise UserError(f"{fpath}: rank {int(owner[np.argmax(bad)])} reports traffic with a rank outside "
                            f"0..{size - 1}")
    src, dst = rows["src"].astype(np.int64), rows["dst"].astype(np.int64)

    def mat(field):
        if not len(rows):
            return sp.csr_matrix((size, size), dtype=np.int64)
        # the counters are unsigned 64-bit: summed as floats first, kept as exact int64 where
        # they fit (2^64 - 1 bytes read as int64 was -1 byte)
        f = sp.coo_matrix((rows[field].astype(np.float64), (src, dst)), shape=(size, size)).tocsr()
        if f.nnz and f.data.max() >= INT_EXACT:
            return f
        return sp.coo_matrix((rows[field].astype(np.int64), (src, dst)), shape=(size, size)).tocsr()
        # (duplicates, a send and a get between the same pair, add up)

    return Profile(path=path, run_id=run.get("run_id") or fpath.name[len("ranks."):-len(".rmp")], size=size,
                   bytes=mat("bytes"), msgs=mat("msgs"), ranks=ranks, collectives=collectives,
                   problems=problems, run=run)


INT_EXACT = 2.0 ** 62     # sums below it cannot wrap an int64 (the float sum is within 2^-52 of the true one)


def _sections(data: memoryview, boff: int, h, fpath: Path) -> dict[int, memoryview]:
    """The sections of a block as memoryviews of the file's bytes (no copies)."""
    secs: dict[int, memoryview] = {}
    off = boff + 64
    end = off + h["payload_size"]
    unpack = _SEC.unpack_from
    for _ in range(h["nsections"]):
        if off + 16 > end:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} has a malformed section table")
        s_type, _, size = unpack(data, off)
        start = off + 16
        if start + size > end:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} has a section past its end")
        secs[s_type] = data[start:start + size]
        off = start + size + (-size % 8)
    for t in (SEC_META, SEC_END, SEC_P2P, SEC_GROUPS, SEC_COLL):
        if t not in secs:
            raise UserError(f"{fpath}: block of rank {int(h['rank'])} lacks section {t}")
    return secs


_JSON = json.JSONDecoder(parse_constant=lambda c: None)   # one decoder for every rank's META


def _meta(buf: bytes, where: str) -> dict:
    """The META section: a JSON object; the fields the reader uses have their types."""
    try:
        meta = _JSON.decode(buf.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        raise UserError(f"{where}: its META section is not JSON; the file is damaged") from None
    if not isinstance(meta, dict):
        raise UserError(f"{where}: its META section is not a JSON object; the file is damaged")
    for k in ("hostname", "affinity_init", "mpi_library", "processor_name"):
        if k in meta and not isinstance(meta[k], str):
            meta[k] = str(meta[k])
    if "hostname" in meta:              # a damaged or hand-edited name would reach hostlists and the mapping files
        validate.host_name(meta["hostname"], f"{where}: its META hostname")
    if "cpu_init" in meta and (isinstance(meta["cpu_init"], bool) or not isinstance(meta["cpu_init"], int)):
        meta["cpu_init"] = -1
    return meta


def _groups(buf: bytes, size: int, fpath: Path, rank: int) -> dict:
    out: dict = {}
    off = 0
    if len(buf) % 4:
        raise UserError(f"{fpath}: rank {rank} has a malformed communicator table ({len(buf)} bytes)")
    a = np.frombuffer(buf, "<u4")
    while off < len(a):
        if off + 4 > len(a):
            raise UserError(f"{fpath}: rank {rank} has a truncated communicator table")
        gid, n, flags = int(a[off]), int(a[off + 1]), int(a[off + 2])
        off += 4
        if flags & 1:
            out[gid] = None  # the world, in order
            continue
        members = a[off:off + n].astype(np.int64)
        if len(members) != n:
            raise UserError(f"{fpath}: rank {rank} has a truncated communicator table")
        members[members == 0xFFFFFFFF] = -1
        if len(members) and members.max() >= size:
            raise UserError(f"{fpath}: rank {rank} has a communicator with rank {int(members.max())}, outside "
                            f"0..{size - 1}")
        out[gid] = members
        off += n + (n & 1)
    return out
