"""What enters rankmap is checked here, once, where it enters: numbers and rank ids read from
files, text and JSON files, option values, and the sizes that cannot work. Every check
either returns a clean value or raises UserError with one line that names what is wrong and
where: `FILE:LINE: field ...`, `FILE: key ...` or the option (`--torus '0x2': ...`).

The readers (profiler/formats.py, smpi_trace.py, rundir.py, mapper/writers.py, the machine
and network descriptions, the JSON files of probe and platform) call these functions instead
of int()/float()/json.loads(); the CLI's option types (rankmap/cli/options.py) do too.

Limits (LIMITS) are sizes past which a run cannot work on any machine rankmap targets, or
would take hours: they turn a 75 GB allocation or a silent hang into an error that says
which value is too large."""
from __future__ import annotations

import json
import math
import numbers
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path

from rankmap.profiler.errors import UserError

# ---------------------------------------------------------------------- limits

MAX_RANKS = 1 << 24            # ranks in one traffic matrix (16.7 M; the mapper is measured to 10^6)
MAX_NODES = 1 << 20            # hosts in one node list
MAX_CORES_PER_NODE = 1 << 12   # cores (or PUs) of one node's topology: 4096 (hwloc takes 2 s for 4096, 22 s for 8192)
MAX_SLOTS = 1 << 24            # ranks the machine can hold (cores x oversubscription, all nodes)
MAX_OVERSUBSCRIBE = 1 << 24    # ranks per core: MAX_SLOTS bounds the machine (a graph's vertices as units of work put 10^3+ on a core)
MAX_IMBALANCE = 1023           # --imbalance: a core may take up to 1024x its share
MAX_NET_POSITIONS = 1 << 22    # positions of a torus / mesh, leaves of a switch tree
MIN_BANDWIDTH = 1e-9          # GB/s (1 B/s): below it the model's times overflow to inf (5e-324 GB/s was taken)
MAX_PAIR_BYTES = 2.0 ** 64     # bytes between two ranks: more than a 64-bit counter holds was not measured
MAX_COST = 1e15                # one level's cost (and the hop cost)
MAX_TEXT_BYTES = 1 << 33       # a text input file (8 GiB)
LIMITS = {"ranks": MAX_RANKS, "nodes": MAX_NODES, "cores per node": MAX_CORES_PER_NODE, "slots": MAX_SLOTS,
          "ranks per core": MAX_OVERSUBSCRIBE, "network positions": MAX_NET_POSITIONS,
          "bytes per pair": MAX_PAIR_BYTES, "level cost": MAX_COST}


# a host name as Slurm, hostlists and the mapping files take it: letters, digits, '.', '_', '-'
HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


def host_name(host: str, where: str) -> str:
    """A host name (HOST_NAME), or one error naming where it came from."""
    if not HOST_NAME.match(host):
        # '-n1' is all such characters: say which rule it breaks
        why = "; it starts with a letter or digit" if re.fullmatch(r"[._-][A-Za-z0-9._-]*", host) else \
            "; at most 255 characters" if re.fullmatch(r"[A-Za-z0-9._-]{256,}", host) else ""
        raise UserError(f"{where}: {host[:60]!r} is not a host name (letters, digits, '.', '_', '-'){why}")
    return host

def at(path, line: int | None = None, field: str | None = None) -> str:
    """The place of a value: FILE, FILE:LINE, FILE:LINE: field."""
    s = str(path)
    if line is not None:
        s += f":{line}"
    if field:
        s += f": {field}"
    return s


def one_line(text: str) -> str:
    """An error message on one line (a message quoting a file's bytes may hold newlines)."""
    return " ".join(str(text).split())


def show(tok, width: int = 40) -> str:
    """A token as an error message quotes it: repr, shortened."""
    r = repr(tok)
    return r if len(r) <= width else r[:width - 4] + "...'"


@contextmanager
def prefixed(label: str | None):
    """Errors raised inside name `label` first (a file or an option), unless they already do."""
    try:
        yield
    except UserError as e:
        msg = str(e)
        if label and not msg.startswith(label):
            raise UserError(f"{label}: {msg}") from None
        raise


# ---------------------------------------------------------------------- numbers

_INT = re.compile(r"^[+-]?\d+$")


def integer(tok, where: str, what: str = "value", lo: int | None = None, hi: int | None = None,
            float_form: bool = True) -> int:
    """A whole number from text ('12', '+12', and with float_form '1e3' or '12.0'), in [lo, hi]."""
    if isinstance(tok, bool):
        raise UserError(f"{where}: {what} {show(tok)} is not a whole number")
    if isinstance(tok, int):
        v = tok
    else:
        s = str(tok).strip()
        if _INT.match(s):
            v = int(s)
        else:
            try:
                f = float(s)
            except ValueError:
                raise UserError(f"{where}: {what} {show(tok)} is not a number") from None
            if not math.isfinite(f) or f != math.floor(f):
                raise UserError(f"{where}: {what} {show(tok)} is not a whole number")
            if not float_form:
                # '1e6' is a whole number: the bare "is not a whole number" read as nonsense
                _range(int(f), where, what, lo, hi, show(tok))
                raise UserError(f"{where}: {what} {show(tok)} is not a whole number written in digits (write "
                                f"{int(f)})")
            v = int(f)
    _range(v, where, what, lo, hi, show(tok))
    return v


def number(tok, where: str, what: str = "value", lo: float | None = 0.0, hi: float | None = None,
           lo_open: bool = False) -> float:
    """A finite number from text or JSON (not a bool), in [lo, hi] ((lo, hi] with lo_open).
    A NumPy scalar too (a script's np.int64 or np.float32: "np.int64(3) is not a number"
    while np.float64, a float, passed)."""
    if isinstance(tok, bool) or not isinstance(tok, (numbers.Real, str)):      # (numpy's bool is no Real)
        raise UserError(f"{where}: {what} {show(tok)} is not a number")
    if isinstance(tok, str):
        try:
            v = float(tok.strip())
        except ValueError:
            raise UserError(f"{where}: {what} {show(tok)} is not a number") from None
    else:
        try:
            v = float(tok)
        except OverflowError:
            raise UserError(f"{where}: {what} {show(tok)} is too large") from None
    if not math.isfinite(v):
        raise UserError(f"{where}: {what} {show(tok)} is not a finite number (NaN or infinity)")
    if lo is not None and (v < lo or (lo_open and v == lo)):
        raise UserError(f"{where}: {what} {show(tok)} must be {'>' if lo_open else '>='} {lo:g}")
    if hi is not None and v > hi:
        raise UserError(f"{where}: {what} {show(tok)} is too large (at most {hi:g})")
    return v


def _range(v: int, where: str, what: str, lo, hi, shown: str) -> None:
    if lo is not None and v < lo:
        raise UserError(f"{where}: {what} {shown} must be >= {lo}")
    if hi is not None and v > hi:
        raise UserError(f"{where}: {what} {shown} is too large (at most {hi})")


# character classes of number text: whitespace, digit, '.', exponent, sign, anything else, comment
_WS, _DIGIT, _DOT, _EXP, _SIGN, _OTHER, _COMMENT = range(7)
_CLASS = bytearray([_OTHER]) * 256
for _c in b" \t\r\n\v\f":
    _CLASS[_c] = _WS
for _c in b"0123456789":
    _CLASS[_c] = _DIGIT
_CLASS[ord(".")], _CLASS[ord("e")], _CLASS[ord("E")] = _DOT, _EXP, _EXP
_CLASS[ord("+")], _CLASS[ord("-")], _CLASS[ord("%")] = _SIGN, _SIGN, _COMMENT


def number_text(body: bytes, where: str, first_line: int = 1, comment: bytes = b"%", whole: bool = False,
                chunk: int = 1 << 24) -> None:
    """Check that `body` is whitespace-separated decimal numbers (whole numbers with `whole`;
    lines starting with `comment` skipped), before a fast C parser reads it: scipy's MatrixMarket reader takes the longest
    valid prefix of a token ('12abc' is 12, '1.2.3' is 1.2, '0x10' is 0) and can read past
    the end of its buffer on such a token at the end of a file. Vectorized over the bytes
    (about 1 s per 100 MB, 3-4x the parse), in chunks so that memory stays a few times `chunk`."""
    import numpy as np
    lut = np.frombuffer(bytes(_CLASS), np.uint8)
    if comment != b"%" or whole:
        lut = lut.copy()
        lut[ord("%")] = _OTHER
        lut[comment[0]] = _COMMENT
        if whole:                                  # scipy reads '1.0e2' in an integer file as 1
            lut[[ord("."), ord("e"), ord("E")]] = _OTHER
    start, line = 0, first_line
    while start < len(body):
        end = body.find(b"\n", min(start + chunk, len(body)))
        end = len(body) if end < 0 else end + 1
        part = body[start:end]
        if not part.endswith(b"\n"):
            part += b"\n"                          # the end of the text ends its last token
        cls = lut[np.frombuffer(part, np.uint8)]
        if (cls == _COMMENT).any():                   # rare: blank the comment lines
            part = b"\n".join(b"" if ln.lstrip().startswith(comment) else ln for ln in part.split(b"\n"))
            cls = lut[np.frombuffer(part, np.uint8)]
            cls[cls == _COMMENT] = _OTHER            # a comment sign inside a line
        bad = np.flatnonzero(cls == _OTHER)
        first = int(bad[0]) if len(bad) else len(cls)
        p = np.flatnonzero(cls >= _DOT)
        p = p[p < first]
        if len(p):
            c = cls[p]
            prev = np.where(p > 0, cls[p - 1], _WS)
            nxt = cls[p + 1]                          # part ends with a newline: p + 1 is inside
            digit_prev, digit_next = prev == _DIGIT, nxt == _DIGIT
            wrong = np.where(
                c == _SIGN, ~((prev == _WS) | (prev == _EXP)) | ~(digit_next | (nxt == _DOT)),
                np.where(c == _EXP, ~(digit_prev | (prev == _DOT)) | ~(digit_next | (nxt == _SIGN)),
                         ~(digit_prev | digit_next) | (prev == _DOT) | (nxt == _DOT)))
            # within one token: no second '.' or exponent after a '.' or exponent ('1.2.3', '1e5e5', '1e5.5')
            q = p[(c == _DOT) | (c == _EXP)]
            if len(q) > 1:
                token = np.searchsorted(np.flatnonzero(cls == _WS), q)   # whitespace before each
                cq = cls[q]
                again = (token[1:] == token[:-1]) & ~((cq[:-1] == _DOT) & (cq[1:] == _EXP))
                wrong_q = np.flatnonzero(again)
                if len(wrong_q):
                    first = min(first, int(q[wrong_q[0] + 1]))
            w = np.flatnonzero(wrong)
            if len(w):
                first = min(first, int(p[w[0]]))
        if first < len(cls):
            lo = part.rfind(b"\n", 0, first) + 1
            hi = part.find(b"\n", first)
            tok_lo = max(part.rfind(b" ", lo, first), part.rfind(b"\t", lo, first)) + 1
            tok = (part[max(lo, tok_lo):hi].split() or [b""])[0]
            n = line + part.count(b"\n", 0, first)
            raise UserError(f"{where}:{n}: {show(tok.decode('utf-8', 'replace'))} is not a "
                            f"{'whole ' if whole else ''}number")
        line += part.count(b"\n")
        start = end


def rank(tok, where: str, what: str = "rank", size: int | None = None) -> int:
    """A rank id: 0 <= r < size (or < MAX_RANKS when the file declares no size)."""
    hi = (size - 1) if size is not None else MAX_RANKS - 1
    if size is not None:
        v = integer(tok, where, what, 0)
        if v > hi:
            raise UserError(f"{where}: {what} {v} is outside 0..{hi} ({size} ranks)")
        return v
    v = integer(tok, where, what, 0)
    if v > hi:
        raise UserError(f"{where}: {what} {v} is beyond the {MAX_RANKS} ranks rankmap handles")
    return v


def traffic_bytes(tok, where: str, what: str = "bytes") -> float:
    """An amount of traffic: finite, not negative, at most 2^64 bytes."""
    v = number(tok, where, what, None, None)
    if v < 0:
        raise UserError(f"{where}: negative traffic: {what} {show(tok)}")
    if v > MAX_PAIR_BYTES:
        raise UserError(f"{where}: {what} {show(tok)} is more than 2^64 bytes between two ranks (no real run "
                        "sends that much)")
    return v


def rank_count(n: int, where: str) -> int:
    if n > MAX_RANKS:
        raise UserError(f"{where}: {n} ranks; rankmap handles at most {MAX_RANKS}")
    return n


def count(tok, where: str, what: str, lo: int = 1, hi: int | None = None) -> int:
    """A positive count (ranks, nodes, repetitions)."""
    return integer(tok, where, what, lo, hi, float_form=False)


# ---------------------------------------------------------------------- files

def read_bytes(path, what: str = "file") -> bytes:
    p = Path(path)
    try:
        if p.is_dir():
            raise UserError(f"{p}: is a directory, expected a {what}")
        st = p.stat()
        if not stat.S_ISREG(st.st_mode):     # a FIFO would block, /dev/zero never end
            raise UserError(f"{p}: not a regular file (a device, FIFO or socket); expected a {what}")
        size = st.st_size
        if size > MAX_TEXT_BYTES:
            raise UserError(f"{p}: {size / 2 ** 30:.1f} GiB; a {what} larger than {MAX_TEXT_BYTES >> 30} GiB is "
                            "refused")
        data = p.read_bytes()
        return _gunzip(data, p, what) if data[:2] == b"\x1f\x8b" else data
    except FileNotFoundError:
        raise UserError(f"{p}: no such file (expected a {what})") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read it ({e.strerror or e})") from None


def _gunzip(data: bytes, p: Path, what: str) -> bytes:
    """A gzip-compressed input (graph collections ship .gz files), decompressed within the
    same size limit as a plain one (every member of a concatenated file). The size is counted
    first, keeping nothing: a 14 MB file of 9 GiB took 41 s and 8 GB of memory to be refused."""
    size = 0
    for chunk in _gunzip_chunks(data, p, what):
        size += len(chunk)
        if size > MAX_TEXT_BYTES:
            raise UserError(f"{p}: more than {MAX_TEXT_BYTES >> 30} GiB once decompressed; a {what} larger than "
                            "that is refused")
    return b"".join(_gunzip_chunks(data, p, what))


def _gunzip_chunks(data: bytes, p: Path, what: str):
    """The decompressed bytes of every member, 16 MB at a time, then what follows them."""
    import zlib
    while data[:2] == b"\x1f\x8b":
        z = zlib.decompressobj(wbits=31)
        try:
            while data:
                yield z.decompress(data, 1 << 24)
                data = z.unconsumed_tail
                if z.eof:
                    break
        except zlib.error as e:
            raise UserError(f"{p}: a damaged gzip file ({e}); expected a {what}") from None
        if not z.eof:
            raise UserError(f"{p}: a truncated gzip file; expected a {what}")
        data = z.unused_data
    yield data


def read_text(path, what: str = "text file") -> str:
    """A UTF-8 text file (a leading byte-order mark dropped). Binary content (NUL bytes) and
    bytes that are not UTF-8 are refused with the line they are on."""
    p = Path(path)
    data = read_bytes(p, what)
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):   # what Excel's "Unicode text" and PowerShell's > write
        raise UserError(f"{p}: UTF-16 text (it starts with a UTF-16 byte-order mark), not UTF-8: convert it "
                        f"(iconv -f UTF-16 -t UTF-8 {p.name} > utf8-{p.name}); expected a {what}")
    nul = data.find(b"\x00")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise UserError(f"{p}:{line}: a NUL byte: this is a binary file, not a {what}")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise UserError(f"{p}:{line}: bytes that are not UTF-8 text (at offset {e.start}); expected a {what}") \
            from None
    return text[1:] if text.startswith("\ufeff") else text


def _no_constant(name):
    raise ValueError(f"{name} is not a number JSON allows")


def _no_duplicates(pairs):
    d = {}
    for k, v in pairs:
        if k in d:
            raise ValueError(f"the key {k!r} appears twice in one object")
        d[k] = v
    return d


def loads_json(text: str, where: str):
    """JSON text -> object. NaN and Infinity (which Python's json accepts) and a key given
    twice in one object (the last would silently win) are refused."""
    try:
        return json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as e:
        raise UserError(f"{where}:{e.lineno}: not valid JSON ({e.msg}, column {e.colno})") from None
    except ValueError as e:
        raise UserError(f"{where}: not valid JSON ({e})") from None
    except RecursionError:
        raise UserError(f"{where}: JSON nested too deeply") from None


def read_json(path, what: str = "JSON file"):
    p = Path(path)
    return loads_json(read_text(p, what), str(p))


def expect(obj, types, where: str, what: str):
    """obj is one of `types` (bool is never an int here)."""
    if not isinstance(types, tuple):
        types = (types,)
    if isinstance(obj, bool) and bool not in types:
        ok = False
    else:
        ok = isinstance(obj, types)
    if not ok:
        names = " or ".join({dict: "an object", list: "a list", str: "a string", int: "a whole number",
                             float: "a number", type(None): "null", bool: "true/false"}.get(t, t.__name__)
                            for t in types)
        raise UserError(f"{where}: {what} must be {names}, not {show(obj)}")
    return obj


def json_object(obj, where: str, what: str = "the file") -> dict:
    return expect(obj, dict, where, what)


def string_list(obj, where: str, what: str, nonempty: bool = True) -> list[str]:
    expect(obj, list, where, what)
    for i, x in enumerate(obj):
        if not isinstance(x, str) or not x.strip():
            raise UserError(f"{where}: {what}[{i}] must be a non-empty string, not {show(x)}")
    if nonempty and not obj:
        raise UserError(f"{where}: {what} is empty")
    return obj


# ---------------------------------------------------------------------- option values

def option_text(value, option: str, allow_empty: bool = False) -> str:
    """An option's text: an empty value (an unset shell variable) is refused."""
    if value is None:
        return value
    if not allow_empty and not str(value).strip():
        raise UserError(f"{option} '{value}': empty (an unset shell variable?)")
    return value


def memory_available() -> int:
    """Bytes of memory available now (MemAvailable), or a large number where unknown."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 1 << 50


def check_memory(need: float, what: str) -> None:
    """Refuse before allocating when an estimate exceeds the memory this host has free."""
    avail = memory_available()
    if need > avail:
        raise UserError(f"{what} needs about {need / 2 ** 30:.1f} GiB of memory; {avail / 2 ** 30:.1f} GiB is "
                        "available on this host")


def env_number(name: str, lo: float = 0.0) -> float | None:
    v = os.environ.get(name)
    if v is None or v == "":
        return None
    return number(v, f"${name}", "value", lo)
