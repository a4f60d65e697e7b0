"""SimGrid SMPI time-independent traces as traffic (`--format smpi`).

`smpirun -trace-ti --cfg=tracing/filename:T` writes an index file T that lists one file per
rank; each line of a rank's file is `<rank> <action> <args...>` (SimGrid 3.32,
src/instr/instr_private.hpp). Point-to-point sends (send, isend, ssend, issend, bsend,
ibsend, sendRecv) give exact pairs; `alltoallv` gives exact pairs from each rank's own send
counts; the other collectives become rows of the same collective table the profiler
writes and are expanded with the chosen model (profiler/collectives.py); `auto` means
`smpi`, the algorithms SMPI's default selector runs when the trace is replayed.

Counts are in elements of a datatype named by SimGrid's predefined-type id; a derived
datatype has no id in the trace, so its elements are counted as 1 byte each (and said so).
The trace names no communicator: SimGrid replays every collective on MPI_COMM_WORLD, and so
does this reader. Persistent requests (`Start`) do not say whether they send; they are
skipped (and said so)."""
from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic

# SimGrid 3.32 predefined datatype ids (src/smpi/mpi/smpi_datatype.cpp) -> size in bytes
DATATYPE_SIZE = {
    0: 8, 1: 4, 2: 1, 3: 2, 4: 8, 5: 4, 6: 1, 7: 8, 8: 1, 9: 1, 10: 2, 11: 4, 12: 8, 13: 8, 14: 16, 15: 4,
    16: 1, 17: 1, 18: 2, 19: 4, 20: 8, 21: 1, 22: 2, 23: 4, 24: 8, 25: 8, 26: 16, 27: 32, 28: 8, 29: 8,
    30: 8, 31: 16, 32: 16, 33: 8, 34: 8, 35: 8, 36: 16, 37: 16, 38: 4, 39: 4, 40: 8, 41: 16, 42: 8, 43: 16,
    44: 16, 45: 4, 46: 2, 47: 4, 48: 8, 49: 16, 50: 32, 51: 1, 52: 8, 53: 16, 54: 32, 57: 1, 58: 8, 59: 8,
}
# said in a trace's notes when SimGrid's replay of it would crash (it looks every datatype id
# up among its predefined types): `rankmap replay` refuses such a trace
NOT_REPLAYABLE = "SimGrid cannot replay such lines"
SENDS = ("send", "isend", "Isend", "ssend", "Ssend", "issend", "ISsend", "bsend", "ibsend")
# a count: digits, or a whole number in exponent form (1e6): SimGrid's replay reads sizes as
# doubles, and its own examples (examples/smpi/replay) write them so
_COUNT = rb"(\d+(?:\.\d*)?(?:[eE]\+?\d+)?)"
_P2P = re.compile(rb"^\d+ (?:" + b"|".join(s.encode() for s in SENDS) + rb") (\d+) (-?\d+) " + _COUNT +
                  rb"(?: (\d+))?[ \t]*$", re.M)
_SENDRECV = re.compile(rb"^\d+ sendRecv " + _COUNT + rb" (\d+) " + _COUNT + rb" (-?\d+)(?: (\d+))?", re.M)
_OTHER = re.compile(rb"^\d+ (bcast|reduce|allreduce|scan|exscan|gather|scatter|allgather|alltoall|allgatherv|"
                    rb"alltoallv|reducescatter|gatherv|scatterv)\b([^\n]*)$", re.M)
OPS = {"reducescatter": "reduce_scatter"}   # trace names -> the profiler's collective names
# every send line (the strict patterns above must read each, or the file is refused: a line
# skipped would silently drop its bytes), and a line that is no `<rank> <action> ...` at all
_ANY_SEND = re.compile(rb"^\d+ (?:" + b"|".join(s.encode() for s in SENDS) + rb"|sendRecv)(?=[ \t]|$)[^\n]*", re.M)
_TO_PROC_NULL = re.compile(rb"^\d+ \w+ -\d+")
# the actions SimGrid 3.32's replay registers (src/smpi/internals/smpi_replay.cpp: any other
# aborts it, "action X is unknown"), and the variants of them SMPI's tracer writes that this
# reader reads: a line of another action (a misspelt 'sned 1 0 2000') was skipped, its bytes lost
ACTIONS = ("init", "finalize", "comm_size", "comm_split", "comm_dup", "recv", "irecv", "Irecv", "test", "wait",
           "waitall", "barrier", "bcast", "reduce", "allreduce", "alltoall", "alltoallv", "gather", "scatter",
           "gatherv", "scatterv", "allgather", "allgatherv", "reducescatter", "scan", "exscan", "compute",
           "sleep", "location", "sendRecv", "Start") + SENDS
_AMOUNTS = ("compute", "sleep")
_RECVS = ("recv", "irecv", "Irecv")
# one scan of the file finds the first line that is not `<rank> <action> ...` of a known action,
# a compute (or sleep) whose amount is no finite number >= 0 (SimGrid aborts on -5 or nan), or a
# receive whose count is no whole number >= 0 (-5 was replayed as 2^64 - 5 bytes); an amount
# with a 3-digit exponent is looked at in full (1e400 is infinite)
_NOT_A_LINE = re.compile(
    rb"^(?!\d+ (?:compute|sleep)[ \t]+(?:\d+\.?\d*|\.\d+)(?:[eE](?:-\d+|\+?\d{1,2}))?[ \t\r]*$"
    rb"|\d+ (?:recv|irecv|Irecv)[ \t]+-?\d+[ \t]+-?\d+[ \t]+\d+(?:\.\d*)?(?:[eE]\+?\d+)?(?:[ \t]+\d+)?[ \t\r]*$"
    rb"|\d+ (?:" + b"|".join(a.encode() for a in ACTIONS if a not in _AMOUNTS + _RECVS) + rb")(?:[ \t]|\r?$)"
    rb"|[ \t\r]*$)[^\n]*", re.M)


def _line_error(line: bytes) -> str | None:
    """What is wrong with a line _NOT_A_LINE found (None: an amount that is a finite number
    after all, such as 1e300)."""
    tok = line.split()
    if len(tok) < 2 or not tok[0].isdigit() or re.fullmatch(rb"[A-Za-z_]\w*", tok[1]) is None:
        return f"not a trace line ('<rank> <action> ...'): {validate.show(line[:60].decode(errors='replace'))}"
    action = tok[1].decode()
    shown = validate.show(line[:80].decode(errors="replace"), 90)
    if action in _AMOUNTS:
        try:
            if len(tok) == 3 and 0 <= float(tok[2]) < float("inf"):
                return None
        except ValueError:
            pass
        return f"cannot read the line {shown} (the amount a finite number >= 0)"
    if action in _RECVS:
        return (f"cannot read the line {shown} (a receive is 'source tag count [datatype]', the count a whole "
                "number >= 0)")
    if action not in ACTIONS:
        return (f"unknown action {validate.show(action[:40])} (SimGrid's replay refuses it too; a trace line is "
                "'<rank> send|isend|recv|irecv|wait|waitall|compute|bcast|... <arguments>')")
    return f"not a trace line ('<rank> <action> ...'): {validate.show(line[:60].decode(errors='replace'))}"


def is_trace(path: Path) -> bool:
    """A trace index (its first line names a per-rank file) or a directory holding trace.ti."""
    if path.is_dir():
        return (path / "trace.ti").is_file()
    try:
        with open(path, "rb") as f:
            head = f.read(4096).decode(errors="replace")
    except OSError:
        return False
    first = head.strip().splitlines()[0] if head.strip() else ""
    return "_files/" in first and "rank-" in first


def rank_files(index: Path) -> list[Path]:
    """The per-rank files of an index, in rank order. Paths are tried as written, then
    next to the index (a trace directory that was moved still reads)."""
    if index.is_dir():
        if not (index / "trace.ti").exists() and any(index.glob("ranks.*.rmp")):
            # (was 'DIR/trace.ti: no such file'): what replays is an SMPI trace, not a profile
            raise UserError(f"{index}: a profile run directory (`rankmap profile`), not an SMPI trace; a trace is "
                            "recorded by `rankmap run --launcher smpi` (its profile/trace.ti)")
        index = index / "trace.ti"
    lines = [ln.strip() for ln in validate.read_text(index, "SMPI trace index").splitlines() if ln.strip()]
    if not lines:
        raise UserError(f"{index}: empty trace index")
    validate.rank_count(len(lines), str(index))
    out = []
    for ln in lines:
        p = Path(ln)
        cands = [p, index.parent / p, index.parent / p.parent.name / p.name]
        hit = next((c for c in cands if c.is_file()), None)
        if hit is None:
            hint = "" if ln.endswith(".txt") else " (an SMPI trace index lists one rank file per line: is this one?)"
            raise UserError(f"{index}: the rank file {validate.one_line(ln)[:200]} is missing{hint}")
        out.append(hit)

    if not any(re.search(r"rank-(\d+)\.txt$", p.name) for p in out):
        # files named otherwise (SimGrid's own examples/smpi/replay: actions0.txt, actions1.txt):
        # smpirun -replay gives line i's file to rank i; each file's lines name its rank, and
        # read_trace checks them (was "actions0.txt is not a SimGrid per-rank trace file")
        return out

    def rank_of(p: Path) -> int:
        m = re.search(r"rank-(\d+)\.txt$", p.name)
        if not m:
            raise UserError(f"{index}: {p.name} is not a SimGrid per-rank trace file (the others are named "
                            "...rank-N.txt)")
        return int(m.group(1))
    out.sort(key=rank_of)
    if [rank_of(p) for p in out] != list(range(1, len(out) + 1)):
        raise UserError(f"{index}: the rank files are not numbered 1..{len(out)}")
    return out


_TO_NOBODY = re.compile(rb"^\d+ (?:send|isend|Isend|ssend|Ssend|issend|ISsend|bsend|ibsend|recv|irecv|Irecv) -\d+ [^\n]*\n?",
                        re.M)


def without_proc_null(text: bytes) -> bytes | None:
    """The rank file without its point-to-point actions to or from MPI_PROC_NULL (SMPI 3.32
    records them with endpoint -333 and its replay then aborts), or None if it has none.
    Waits need no change: replay's waitall takes what is pending, and a wait that finds
    no request returns."""
    out, n = _TO_NOBODY.subn(b"", text)
    return out if n else None


def _count(x) -> int:
    """A count of elements: digits, or a whole number >= 0 in exponent form ('1e6'; SimGrid
    reads sizes as doubles). ValueError otherwise."""
    try:
        return int(x)
    except ValueError:
        v = float(x)
    if not (v >= 0 and v < 2.0 ** 64 and v == int(v)):
        raise ValueError(x)
    return int(v)


def _size(dt: bytes | None, unknown: list, default: int = 1) -> int:
    if dt is None or dt == b"":
        # no datatype field: SimGrid's replay uses its default type (MPI_BYTE, or MPI_DOUBLE when
        # the init line has an argument, MPE's convention) -- not an undefined derived datatype
        # ("SimGrid cannot replay such lines" refused SimGrid's own example traces)
        return default
    s = DATATYPE_SIZE.get(int(dt))
    if s is None:
        unknown.append(1)
        return 1
    return s


_LAST_LINE = re.compile(rb"([^\n]*\S[^\n]*)\s*\Z")


def _finished(text: bytes, rank: int) -> bool:
    """The rank file ends as SMPI ends every rank's: `<rank> finalize` (MPI_Finalize). A file
    without it was cut short: the rank died, the run was killed, or the file was truncated."""
    m = _LAST_LINE.search(text[-4096:])
    return m is not None and m.group(1).split() == [str(rank).encode(), b"finalize"]


def read_trace(path: Path, model: str = "auto", allow_partial: bool = False) -> Traffic:
    from rankmap.profiler.collectives import expand, parse_model
    from rankmap.profiler.rundir import Collective
    files = rank_files(path)
    n = len(files)
    rows, cols, byts = [], [], []
    unknown: list = []
    starts = 0
    coll: dict = defaultdict(lambda: [0, 0])   # (op, root, bucket) -> [calls, bytes]
    def line_of(text: bytes, pos: int) -> int:
        return text.count(b"\n", 0, pos) + 1

    def pair(f, text, m, dst, nbytes):
        if not 0 <= dst < n:
            raise UserError(f"{f}:{line_of(text, m.start())}: a send to rank {dst} in a trace of {n} ranks")
        if nbytes > validate.MAX_PAIR_BYTES:
            raise UserError(f"{f}:{line_of(text, m.start())}: {nbytes} bytes in one call is more than 2^64")

    cut = []
    for r, f in enumerate(files):
        text = validate.read_bytes(f, "SMPI trace file")
        for bad in _NOT_A_LINE.finditer(text):
            why = _line_error(bad.group(0).rstrip(b"\r"))
            if why is not None:
                raise UserError(f"{f}:{line_of(text, bad.start())}: {why}")
        other = re.search(rb"^(?!" + str(r).encode() + rb"[ \t])\d+[ \t]", text, re.M)
        if other is not None and n == 1:
            # SimGrid's shared trace (examples/smpi/replay/one_trace): one file of every rank's lines
            raise UserError(f"{f}:{line_of(text, other.start())}: a line of rank {other.group(0).decode().strip()} "
                            f"in a trace index of one rank file: one file holding every rank's actions (a shared "
                            "trace)? rankmap reads one file per rank, listed in the index in rank order (what "
                            "smpirun -trace-ti writes): split it by its first field (awk '{print > (\"rank-\" $1+1 "
                            "\".txt\")}' FILE) and list the files")
        if other is not None:     # a line of another rank: files mixed up or spliced
            raise UserError(f"{f}:{line_of(text, other.start())}: a line of rank "
                            f"{other.group(0).decode().strip()} in the file of rank {r}")
        init = re.search(rb"^\d+ init([ \t]+\S+)?[ \t\r]*$", text, re.M)
        default = 8 if init is not None and init.group(1) else 1     # MPI_DOUBLE (MPE) or MPI_BYTE (TAU)
        for m in _ANY_SEND.finditer(text):
            line = m.group(0).rstrip(b"\r")
            p, q = _P2P.fullmatch(line), _SENDRECV.match(line)
            try:
                if p is not None:
                    dst, cnt, dt = int(p.group(1)), _count(p.group(3)), p.group(4)
                elif q is not None:
                    cnt, dst, dt = _count(q.group(1)), int(q.group(2)), q.group(5)
            except ValueError:          # 1.5 elements: no count
                p = q = None
            if p is None and q is None:
                if _TO_PROC_NULL.match(line):          # to MPI_PROC_NULL: nothing sent
                    continue
                raise UserError(f"{f}:{line_of(text, m.start())}: cannot read the send line "
                                f"{validate.show(line[:80].decode(errors='replace'), 90)} (counts are whole "
                                "numbers >= 0)")
            b = cnt * _size(dt, unknown, default)
            pair(f, text, m, dst, b)
            rows.append(r), cols.append(dst), byts.append(b)
        starts += text.count(b" Start ")
        for m in _OTHER.finditer(text):
            op = m.group(1).decode()
            tok = m.group(2).split()
            try:
                if op == "alltoallv":   # send_size, P send counts, recv_size, P recv counts, types
                    if len(tok) < 2 + 2 * n:        # fewer counts than ranks: not SMPI's line
                        raise ValueError(len(tok))
                    sc = [int(x) for x in tok[1:1 + n]]
                    size = _size(tok[2 + 2 * n] if len(tok) > 2 + 2 * n else None, unknown, default)
                    for dst, c in enumerate(sc):
                        if c < 0 or c * size > validate.MAX_PAIR_BYTES:
                            raise ValueError(c)
                        if c and dst != r:
                            rows.append(r), cols.append(dst), byts.append(c * size)
                    continue
                if op in ("gatherv", "scatterv"):
                    _rooted_v(op, tok, n, r, unknown, rows, cols, byts, default)
                    continue
                if r != 0:          # every other collective: its table row comes from rank 0's file
                    continue
                op_name, root, nbytes = _collective(op, tok, n, unknown, default)
                if nbytes < 0 or nbytes > validate.MAX_PAIR_BYTES or (op_name is not None and not -1 <= root < n):
                    raise ValueError(nbytes)
            except (ValueError, IndexError):
                raise UserError(f"{f}:{line_of(text, m.start())}: cannot read the {op} line "
                                f"{validate.one_line(m.group(0)[:80].decode(errors='replace'))!r}") from None
            if op_name is None:
                continue
            key = (op_name, root, max(0, int(nbytes)).bit_length())
            coll[key][0] += 1
            coll[key][1] += int(nbytes)
        if not _finished(text, r):      # after its lines: a line that cannot be read is named first
            if not allow_partial:
                raise UserError(f"{f}: rank {r}'s trace ends without '{r} finalize': it was cut short (the rank "
                                "died, the run was killed, or the file was truncated); its traffic would be "
                                "incomplete (--allow-partial uses it anyway)")
            cut.append(r)
    B = sp.coo_matrix((np.asarray(byts, dtype=np.float64), (np.asarray(rows, dtype=np.int64),
                                                             np.asarray(cols, dtype=np.int64))), shape=(n, n)).tocsr()
    M = sp.coo_matrix((np.ones(len(rows)), (np.asarray(rows, dtype=np.int64), np.asarray(cols, dtype=np.int64))),
                      shape=(n, n)).tocsr()
    members = np.arange(n)
    table = [Collective(members=members, op=op, root=root, bucket=bucket, calls=c, bytes=b)
             for (op, root, bucket), (c, b) in sorted(coll.items())]
    if model == "auto":     # a replayed trace runs SMPI's default collectives
        model = "smpi"
    name, k = parse_model(model)
    cb, cm, _ = expand(table, n, name, k)
    notes = []
    if cut:
        notes.append(f"partial trace: {len(cut)} rank file(s) end without finalize (ranks "
                     f"{', '.join(map(str, cut[:10]))}{', ...' if len(cut) > 10 else ''}); their traffic up to there")
    if unknown:
        notes.append(f"{len(unknown)} trace line(s) use a datatype id SimGrid does not define (a derived datatype): "
                     f"their elements counted as 1 byte; {NOT_REPLAYABLE}")
    if starts:
        notes.append(f"{starts} persistent-request start(s) skipped (the trace does not say whether they send)")
    return Traffic(bytes=(B + cb).astype(np.float64), msgs=(M + cm).astype(np.float64), source=str(path),
                   format=f"smpi (collectives: {model})", notes=notes)


def _collective(op: str, tok: list, n: int, unknown: list, default: int = 1):
    """(profiler op name, root world rank or -1, per-call size n in the profiler's sense)."""
    # fields by position, the later ones optional, as SimGrid's replay reads them
    # (smpi_replay.cpp's ArgParsers): 'bcast 100 2' is a bcast from root 2 of the default type
    # (the last field was taken for the datatype and the root for 0)
    def at(i):
        return tok[i] if len(tok) > i else None
    if op in ("bcast",):                       # count [root [type]]
        root = int(tok[1]) if len(tok) > 1 else 0
        return op, root, _count(tok[0]) * _size(at(2), unknown, default)
    if op == "reduce":                         # count amount [root [type]]
        root = int(tok[2]) if len(tok) > 2 else 0
        return op, root, _count(tok[0]) * _size(at(3), unknown, default)
    if op in ("allreduce", "scan", "exscan"):  # count amount [type]
        return op, -1, _count(tok[0]) * _size(at(2), unknown, default)
    if op in ("allgather", "alltoall"):        # sendcount recvcount [sendtype [recvtype]]
        return op, -1, _count(tok[0]) * _size(at(2), unknown, default)
    if op in ("gather", "scatter"):            # sendcount recvcount [root [sendtype [recvtype]]]
        root = int(tok[2]) if len(tok) > 2 else 0
        return op, root, _count(tok[0]) * _size(at(3), unknown, default)
    if op == "allgatherv":                     # sendcount, P recv counts, types
        counts = [int(x) for x in tok[1:1 + n]]
        return op, -1, sum(counts) * _size(tok[-1] if len(tok) > 1 + n else None, unknown, default)
    if op == "reducescatter":                  # P recv counts, amount, type
        counts = [int(x) for x in tok[:n]]
        return OPS[op], -1, sum(counts) * _size(tok[-1] if len(tok) > n else None, unknown, default)
    raise ValueError(op)        # gatherv / scatterv: _rooted_v


def _rooted_v(op: str, tok: list, n: int, r: int, unknown: list, rows: list, cols: list, byts: list,
              default: int = 1) -> None:
    """Rank r's message of a gatherv (to the root) or scatterv (from it), from r's own line
    (SMPI 3.32: gatherv sendcount, P recv counts, root, send and recv types; scatterv P send
    counts, recvcount, root, types; the P counts are the root's, zeros on the other ranks):
    the pairs as SimGrid's igatherv/iscatterv send them. (They were read from rank 0's line as
    a gather or scatter of the mean count to and from rank 0: nothing where rank 0 was not
    the root, the wrong pairs where it was not rank 0.)"""
    if len(tok) < 1 + n:
        raise ValueError(len(tok))
    root = int(tok[1 + n]) if len(tok) > 1 + n else 0
    if not 0 <= root < n:
        raise ValueError(root)
    count, dt = (tok[0], 2 + n) if op == "gatherv" else (tok[n], 3 + n)
    b = _count(count) * _size(tok[dt] if len(tok) > dt else None, unknown, default)
    if b < 0 or b > validate.MAX_PAIR_BYTES:
        raise ValueError(b)
    if b and r != root:
        src, dst = (r, root) if op == "gatherv" else (root, r)
        rows.append(src), cols.append(dst), byts.append(b)
