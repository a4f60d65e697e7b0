"""Traffic formats: readers for every input rankmap accepts, writers for `rankmap convert`.

| name       | what                                                                  |
|------------|-----------------------------------------------------------------------|
| profile    | a rankmap profiler run directory (collectives expanded by a model)    |
| mpip       | mpiP communication-matrix CSV `src,dst,bytes,count`, diagonal = row total |
| csv        | triplets `src,dst,bytes[,messages]` (header and # comments allowed; tabs, semicolons or blanks instead of commas) |
| treematch  | TreeMatch's dense whitespace-separated square matrix (or comma-separated) |
| amfch      | Angara MPI `amfch_statistics` (AMFCH_STATISTICS_PRINT_MODE=2) printed into a log: a P x P matrix of 64-bit words, rows = sources |
| ompi       | Open MPI monitoring dump `PREFIX.<rank>.prof` (E = user point-to-point, I = what collectives sent) |
| mtx        | MatrixMarket                                                          |
| npz        | scipy.sparse.save_npz, numpy .npz holding one square array, or a .npy array |
| metis      | METIS graph (symmetric; read back as half the edge weight each way)   |
"""
from __future__ import annotations

import csv
import glob
import io
import re
import tokenize
import zipfile
import zlib
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic, check_matrix, without_diagonal

READ_FORMATS = ("auto", "profile", "smpi", "mpip", "csv", "treematch", "amfch", "ompi", "mtx", "npz", "metis")
WRITE_FORMATS = ("metis", "mtx", "csv", "npz", "treematch")
WORD = 8  # bytes in an Angara statistics word


# --------------------------------------------------------------------------- detection

def detect(path: Path) -> str:
    from rankmap.profiler.smpi_trace import is_trace
    if path.exists() and (is_trace(path) or (path.is_file() and path.suffix.lower() == ".ti")):
        return "smpi"
    if path.is_dir():
        return "profile"
    if not path.exists():
        # an Open MPI monitoring prefix names no file itself
        if path.parent.is_dir() and list(path.parent.glob(glob.escape(path.name) + ".*.prof")):
            return "ompi"
        raise UserError(f"{path}: no such file or directory")
    suffix = path.suffix.lower()
    magic = b""
    if path.is_file():
        with open(path, "rb") as f:
            magic = f.read(4096)
    if magic.startswith(b"PK\x03\x04") or magic[:6] == b"\x93NUMPY":
        return "npz"        # by its content (`convert --to npz x.csv`): was "a NUL byte: a binary file"
    if suffix in (".npz", ".npy"):
        return "npz"
    if suffix == ".prof":
        return "ompi"
    if suffix in (".mtx", ".graph", ".metis"):
        # what `convert --to csv x.mtx` (or --to mtx x.graph, --to metis x.mtx) wrote is read by
        # its first lines, as under a .csv name: its own reader said "not a MatrixMarket file (no
        # %%MatrixMarket banner)" or "bad METIS header 'src,dst,bytes'"; anything else is read
        # by the name, whose reader says what is wrong
        peek = magic.decode("utf-8", errors="replace").lstrip("\ufeff")
        fields = re.split(r"[\s,;]+", _first_row(peek).lower())
        if peek.startswith("%%MatrixMarket"):
            return "mtx"
        if fields[:3] in (["src", "dst", "bytes"], ["src", "dst", "words"]):
            return "mpip" if fields == ["src", "dst", "bytes", "count"] else "csv"
        head = next((ln.split() for ln in peek.splitlines() if ln.strip() and not ln.startswith("%")), [])
        if suffix == ".mtx" and peek.startswith("%") and 2 <= len(head) <= 4 and all(t.isdigit() for t in head) \
                and (len(head) < 3 or set(head[2]) <= {"0", "1"}):
            return "metis"          # a % comment, then a METIS header (n m [fmt [ncon]])
        return "mtx" if suffix == ".mtx" else "metis"
    text = _read_text(path, lenient=True)
    if not text.strip():
        what = "an empty file (0 bytes)" if path.stat().st_size == 0 else "empty once decompressed" if not text \
            else "nothing but blank lines"
        raise UserError(f"{path}: {what}: no traffic in it")
    head = text[:4096]
    first = _first_row(head)
    if "," in first and _dense_matrix(path, text, first, ","):
        return "treematch"
    if "," not in first and suffix == ".csv" and _dense_matrix(path, text, first, None):
        return "treematch"
    # a banner or '%' comment says what the file is whatever its name: `convert --to mtx t.csv`
    # (or metis) wrote a file its own reader then took for CSV ("got 5 field(s)")
    if head.startswith("%%MatrixMarket"):
        return "mtx"
    if head.startswith("%") and _looks_like_metis(text):
        return "metis"
    head_fields = re.split(r"[\s,;]+", first.lower())
    if suffix == ".csv" or head_fields[:3] in (["src", "dst", "bytes"], ["src", "dst", "words"]):   # commas, tabs, ...
        return "mpip" if head_fields == ["src", "dst", "bytes", "count"] else "csv"
    if head.startswith("%%MatrixMarket"):
        return "mtx"
    if _looks_like_metis(text):
        return "metis"
    # nothing but rows of numbers is a TreeMatch matrix, square or not (its reader says which
    # row is wrong); a log's amfch block sits among other lines
    return "treematch" if _whole_matrix(text) is not None or _number_rows(text) else "amfch"


def _dense_matrix(path: Path, text: str, first: str, sep: str | None) -> bool:
    """A whole square matrix without a header, read as a dense matrix: written with commas
    (sep ",": numpy.savetxt, spreadsheets), or blank- or tab-separated in a file named .csv
    (sep None: docs/formats.md reads blank-separated rows without the header as a matrix; a
    .csv was taken for pairs whatever its shape, a 3 x 3 matrix read as three pairs of 2 ranks
    without a word). 3 x 3 and 4 x 4 ones are also valid src,dst,bytes[,count] rows: those
    are refused as ambiguous."""
    k, lines = len(first.split(sep)), text.count("\n") + 1
    if not k - 1 <= lines <= 4 * k + 100:         # cheap: a long list of pairs is no k x k matrix
        return False
    try:
        float(first.split(sep)[0])
    except ValueError:
        return False            # a header
    if _whole_matrix(text) is None:
        return False
    if k in (3, 4):
        row = (sep or " ").join(["src", "dst", "bytes"] + (["messages"] if k == 4 else []))
        raise UserError(f"{path}: {k} rows of {k} numbers and no header: a {k} x {k} matrix, or {k} rows {row}? "
                        f"Add the header line {row} (or pass --format csv), or pass --format treematch for a matrix")
    return True


def _first_row(text: str) -> str:
    """The first line that is neither blank nor a # comment."""
    for ln in text.splitlines():
        if ln.strip() and not ln.lstrip().startswith("#"):
            return ln.strip()
    return ""


def _read_text(path: Path, lenient: bool = False) -> str:
    """The file as text: strict UTF-8 (errors name the line) unless lenient (program logs).
    Lines may end in CR alone (Excel for Mac's "CSV (Macintosh)"): they come as lines ending
    in LF, as splitlines() already read them (the CSV module saw one line: "new-line
    character seen in unquoted field - do you need to open the file in universal-newline
    mode?", a dense matrix was taken for pairs)."""
    if lenient:
        # a leading byte-order mark dropped as validate.read_text drops it (a spreadsheet's "CSV
        # UTF-8" and Notepad write one): the banner or first row was not seen behind it
        text = validate.read_bytes(path, "traffic file").decode("utf-8", errors="replace").replace("\x00", " ")
        text = text[1:] if text.startswith("\ufeff") else text
    else:
        text = validate.read_text(path, "traffic file (text)")
    return _LONE_CR.sub("\n", text) if "\r" in text else text


_LONE_CR = re.compile(r"\r(?!\n)")


def _looks_like_metis(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if not ln.startswith("%")]
    if not lines:
        return False
    head = lines[0].split()
    if not (2 <= len(head) <= 4 and all(t.isdigit() for t in head)):
        return False
    n = int(head[0])
    # a METIS file has exactly n vertex lines after the header (trailing empty lines aside)
    body = lines[1:]
    while len(body) > n and not body[-1].strip():
        body.pop()
    # a 2x2 or 3x3 dense matrix is not a header (a 2- or 3-vertex graph's lists are not such a matrix)
    return len(body) == n and not (len(head) == n and _whole_matrix(text) is not None)


# --------------------------------------------------------------------------- readers

def read_traffic(path: str | Path, fmt: str = "auto", collectives: str = "auto", allow_partial: bool = False) -> Traffic:
    """Traffic from a profiler run directory or any supported format (`fmt` "auto" detects
    it); a profile's collectives are expanded with the model `collectives`."""
    if path is None or not str(path).strip():
        raise UserError("the traffic MATRIX argument is empty (an unset shell variable?)")
    if str(path).strip() == "-" and not Path("-").exists():
        # `... | rankmap map - ...`: was "-: no such file or directory"
        raise UserError("-: rankmap reads the traffic from a file or directory, not from standard input; save it to a "
                        "file first (e.g. traffic.csv)")
    path = Path(path)
    if path.exists() and not path.is_dir() and not path.is_file():
        raise UserError(f"{path}: not a regular file (a device, FIFO or socket); give a traffic file or directory")
    if fmt not in READ_FORMATS:
        raise UserError(f"--format {fmt!r}: unknown traffic format; choose one of: {', '.join(READ_FORMATS)}")
    from rankmap.profiler.collectives import parse_model
    parse_model(collectives)          # a bad --collectives is an error for every format, not only profiles
    detected = fmt == "auto"
    if fmt == "auto":
        fmt = detect(path)
    reader = {"profile": lambda: _read_profile(path, collectives, allow_partial), "smpi": lambda: _read_smpi(path, collectives, allow_partial),
              "mpip": lambda: _read_mpip(path),
              "csv": lambda: _read_csv(path), "treematch": lambda: _read_treematch(path),
              "amfch": lambda: _read_amfch(path, detected), "ompi": lambda: _read_ompi(path), "mtx": lambda: _read_mtx(path),
              "npz": lambda: _read_npz(path), "metis": lambda: _read_metis(path)}[fmt]
    if fmt != "profile" and not path.exists() and fmt != "ompi":
        raise UserError(f"{path}: no such file")
    if path.is_file() and path.stat().st_size == 0:      # was "not a MatrixMarket file", "not an .npz file", ...
        raise UserError(f"{path}: an empty file (0 bytes): no traffic in it")
    if fmt not in ("profile", "smpi", "ompi") and path.is_dir():
        raise UserError(f"{path}: is a directory, not a {fmt} file (--format {fmt})")
    if fmt == "profile" and path.exists() and not path.is_dir():
        raise UserError(f"{path}: not a directory; --format profile reads a profiler run directory")
    if fmt == "profile" and path.is_dir():
        for marker, what in ((".rankmap-mapping", "a mapping (rankmap map --out)"),
                             (".rankmap-platform", "a platform (rankmap platform --out)")):
            if (path / marker).exists():       # the arguments swapped, or the wrong directory
                raise UserError(f"{path}: {what}, not traffic; give the profile run directory or the traffic file "
                                "first (rankmap evaluate TRAFFIC MAPPING...)")
    t = reader()
    t.bytes = check_matrix(t.bytes, str(path))
    return t


def _read_profile(path: Path, model: str, allow_partial: bool) -> Traffic:
    from rankmap.profiler.collectives import expand, parse_model
    from rankmap.profiler.rundir import read_run
    prof = read_run(path)
    if not prof.complete and not allow_partial:
        raise UserError(f"{path}: the run is partial ({'; '.join(prof.partial_reasons()[:2])}); "
                        "pass --allow-partial to use what it recorded")
    name, k = parse_model(model)
    cb, cm, _ = expand(prof.collectives, prof.size, name, k)
    notes = [] if prof.complete else ["partial run: " + "; ".join(prof.partial_reasons())]
    placement = [(r.hostname, r.affinity_init) if r else (None, None) for r in prof.ranks]
    return Traffic(bytes=(prof.bytes + cb).astype(np.float64), msgs=(prof.msgs + cm), source=str(path),
                   format=f"profile (collectives: {model})", placement=placement, notes=notes)


def _read_smpi(path: Path, model: str, allow_partial: bool = False) -> Traffic:
    from rankmap.profiler.smpi_trace import read_trace
    return read_trace(path, model, allow_partial)


def _triplets(path: Path, rows, ncol: int, what: str):
    """Rows (lineno, fields) of src,dst,bytes[,messages]: every value checked where it is read
    (a negative or non-numeric field is an error on its line, before anything is summed)."""
    src, dst, val, cnt = [], [], [], []
    ncol_max = 4
    for lineno, row in rows:
        where = f"{path}:{lineno}"
        if len(row) < ncol or len(row) > ncol_max:
            raise UserError(f"{where}: expected {what}, got {len(row)} field(s)")
        src.append(validate.rank(row[0], where, "source rank"))
        dst.append(validate.rank(row[1], where, "destination rank"))
        val.append(validate.traffic_bytes(row[2], where, "bytes"))
        cnt.append(validate.integer(row[3], where, "messages", 0, 2 ** 63 - 1) if len(row) > 3 else 0)
    if not src:
        raise UserError(f"{path}: no traffic rows (expected lines {what})")
    return np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64), np.array(val, dtype=np.float64), \
        np.array(cnt, dtype=np.int64)


def _dialect(first: str) -> dict:
    """The separator of a triplet file, from its first row: commas, else tabs (pandas'
    sep='\t'), semicolons (spreadsheets in comma-decimal locales) or blanks."""
    if "," in first or not first:
        return {}
    if "\t" in first:
        return {"delimiter": "\t"}
    if ";" in first:
        return {"delimiter": ";"}
    return {"delimiter": " ", "skipinitialspace": True}


def _csv_rows(path: Path, header: list | None = None):
    """Data rows of a CSV file: blank lines and # comments skipped anywhere; the first other
    row is a header when its first field is not a number (appended to `header` if given)."""
    text = _read_text(path)
    seen_row = False
    reader = csv.reader(io.StringIO(text), **_dialect(_first_row(text)))
    lineno = 0
    while True:
        try:
            row = next(reader)
        except StopIteration:
            return
        except csv.Error as e:
            raise UserError(f"{path}:{reader.line_num}: not readable as CSV ({e})") from None
        lineno = reader.line_num
        if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
            continue
        if any("\n" in c or "\r" in c for c in row):
            raise UserError(f"{path}:{lineno}: a quoted field spans lines; a traffic row is one line")
        row = [c.strip() for c in row]
        if not seen_row:
            seen_row = True
            try:
                float(row[0])
            except ValueError:
                if header is not None:
                    header.extend([row, lineno])
                continue  # header
        yield lineno, row


def _read_mpip(path: Path) -> Traffic:
    s, d, b, c = _triplets(path, _csv_rows(path), 4, "src,dst,bytes,count")
    n = int(max(s.max(), d.max())) + 1
    off = s != d  # the diagonal holds each row's total: not traffic
    m = sp.coo_matrix((b[off], (s[off], d[off])), shape=(n, n)).tocsr()
    msgs = sp.coo_matrix((c[off], (s[off], d[off])), shape=(n, n)).tocsr()
    return Traffic(bytes=m, msgs=msgs, source=str(path), format="mpip")


_CSV_ROLES = {"src": "src", "source": "src", "from": "src", "sender": "src",
              "dst": "dst", "dest": "dst", "destination": "dst", "to": "dst", "receiver": "dst", "target": "dst",
              "bytes": "bytes", "size": "bytes", "volume": "bytes", "weight": "bytes", "words": "words",
              "messages": "messages", "msgs": "messages", "count": "messages"}


def _csv_columns(path: Path, header: list) -> list | None:
    """Where src, dst, bytes (or words) and messages are, by the header's names (None: no
    header, or one that names none of them: the columns are read by position). A header
    `dst,src,bytes` was read by position, transposed, and `bytes,src,dst` took bytes for ranks."""
    if not header:
        return None
    names = [h.strip().lower() for h in header[0]]
    roles = [_CSV_ROLES.get(h) for h in names]
    if not any(roles):
        return None
    where = f"{path}:{header[1] if len(header) > 1 else 1}"
    for i, (h, r) in enumerate(zip(header[0], roles)):
        if i == 0 and (not h.strip() or h.strip().lower() == "unnamed: 0"):
            # pandas' DataFrame.to_csv writes its row index first, under no name (read back and
            # written again: 'Unnamed: 0'); "column ''" said nothing of where it came from
            raise UserError(f"{where}: the first column has {'no name' if not h.strip() else repr(h.strip())}: "
                            "a row index, as pandas' DataFrame.to_csv writes by default? Write the file with "
                            "to_csv(..., index=False), or delete that column")
        if r is None:
            raise UserError(f"{where}: column {h.strip()!r}: a traffic CSV's header names src, dst, bytes (or words) "
                            "and optionally messages, in any order (or no column rankmap knows: then they are "
                            "read in that order)")
    if len(set(roles)) != len(roles) or ("bytes" in roles and "words" in roles):
        raise UserError(f"{where}: the header names a column twice ({','.join(names)})")
    missing = [r for r in ("src", "dst") if r not in roles] + \
        ([] if "bytes" in roles or "words" in roles else ["bytes"])
    if missing:
        raise UserError(f"{where}: the header has no {' or '.join(missing)} column ({','.join(names)})")
    vol = "bytes" if "bytes" in roles else "words"
    return [roles.index("src"), roles.index("dst"), roles.index(vol)] + \
        ([roles.index("messages")] if "messages" in roles else [])


def _read_csv(path: Path) -> Traffic:
    header: list = []
    rows = _csv_rows(path, header)

    def by_name():
        cols = "unread"
        for lineno, row in rows:
            if cols == "unread":         # the header is read with the first data row
                cols = _csv_columns(path, header)
            if cols is None or cols == list(range(len(cols))) and len(row) <= len(cols):
                yield lineno, row
                continue
            if len(row) != len(header[0]):
                raise UserError(f"{path}:{lineno}: {len(row)} field(s), the header names {len(header[0])}")
            yield lineno, [row[i] for i in cols]
    s, d, b, c = _triplets(path, by_name(), 3, "src,dst,bytes[,messages]")
    n = int(max(s.max(), d.max())) + 1
    # `convert --units words` writes src,dst,words: read back as bytes they were 8 x too small
    words = bool(header) and "words" in [h.strip().lower() for h in header[0]]
    m = sp.coo_matrix((b * WORD if words else b, (s, d)), shape=(n, n)).tocsr()
    msgs = sp.coo_matrix((c, (s, d)), shape=(n, n)).tocsr() if c.any() else None
    t = Traffic(bytes=m, msgs=msgs, source=str(path), format="csv")
    if words:
        t.notes.append("the header says 64-bit words: words x 8 = bytes")
    if m.nnz < len(s):       # tocsr added them (zeros kept) without a word: two exports of one run, concatenated,
        # read as twice the traffic
        t.notes.append(f"{len(s) - m.nnz} row(s) repeat a (src, dst) pair of an earlier row: their bytes (and "
                       "messages) were added")
    return t


_INT_ROW = re.compile(r"^\s*(?:(?:rank\s*)?\d+\s*[:|]\s*)?((?:[-+]?\d+\s+)*[-+]?\d+)\s*$", re.IGNORECASE)


def _fields(line: str) -> list[str]:
    """A dense matrix row's values: blank-separated (TreeMatch) or comma-separated (CSV)."""
    return line.replace(",", " ").split()


def _whole_matrix(text: str):
    rows = [_fields(ln) for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows or any(len(r) != len(rows) for r in rows):
        return None
    try:
        return np.array([[float(x) for x in r] for r in rows])
    except ValueError:
        return None


def _number_rows(text: str) -> bool:
    """Every line (but blanks and # comments) a row of numbers."""
    try:
        return all(float(x) is not None for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")
                   for x in _fields(ln))
    except ValueError:
        return False


def _read_treematch(path: Path) -> Traffic:
    text = _read_text(path)
    rows = [(i, _fields(ln)) for i, ln in enumerate(text.splitlines(), 1)
            if ln.strip() and not ln.lstrip().startswith("#")]
    if not rows:
        raise UserError(f"{path}: empty matrix")
    n = len(rows)
    validate.rank_count(n, str(path))
    validate.check_memory(48.0 * n * n, f"{path}: a dense {n} x {n} matrix")
    for i, r in rows:
        if len(r) != n:
            raise UserError(f"{path}:{i}: row has {len(r)} values, expected {n} (a square {n} x {n} matrix)")
    vals = np.array([[validate.traffic_bytes(x, f"{path}:{i}", f"column {j + 1}") for j, x in enumerate(r)]
                     for i, r in rows])
    return Traffic(bytes=sp.csr_matrix(vals), source=str(path), format="treematch")


KNOWN = ("a profile run directory, an SMPI trace, mpiP or src,dst,bytes CSV, a TreeMatch matrix, an Angara amfch "
         "log, Open MPI monitoring dumps, MatrixMarket, NPZ or a METIS graph")


def _read_amfch(path: Path, detected: bool = False) -> Traffic:
    """A square block of integer rows embedded in a program's output. Rows may carry a
    leading label ('3:' or 'rank 3:'). With several candidate blocks, the one after a line
    mentioning amfch is taken; otherwise the choice would be a guess and is refused."""
    lines = _read_text(path, lenient=True).splitlines()
    blocks, start, width = [], None, None
    marks = [i for i, ln in enumerate(lines) if "amfch" in ln.lower()]

    def close(end):
        if start is not None and end - start == width and width >= 1:
            blocks.append((start, end))
    for i, ln in enumerate(lines + [""]):
        m = _INT_ROW.match(ln) if i < len(lines) else None
        k = len(m.group(1).split()) if m else None
        if k is not None and k == width and start is not None:
            continue
        close(i)
        start, width = (i, k) if k is not None else (None, None)
    if detected and not marks and len(blocks) != 1:
        # nothing says amfch: the format could not be told (a JSON or XML file, a binding file...)
        head = next((ln.strip() for ln in lines if ln.strip()), "")
        kind = " (it looks like JSON)" if head[:1] in "{[" and head else " (it looks like XML)" \
            if head.startswith("<") else ""
        raise UserError(f"{path}: not a traffic file rankmap can tell{kind}; it reads {KNOWN} "
                        "(pass --format if it is one of them)")
    if not blocks:
        raise UserError(f"{path}: no square matrix of integers found (expected the amfch_statistics "
                        "P x P matrix printed with AMFCH_STATISTICS_PRINT_MODE=2)")
    notes = []
    if len(blocks) == 1:
        chosen = blocks[0]
    else:
        # a block counts as the statistics when an amfch line sits between it and the previous block
        marked = [blk for k, blk in enumerate(blocks)
                  if any((blocks[k - 1][1] if k else 0) <= mk < blk[0] for mk in marks)]
        if not marked:
            where = ", ".join(f"lines {a + 1}-{b}" for a, b in blocks[:5]) + (", ..." if len(blocks) > 5 else "")
            raise UserError(f"{path}: {len(blocks)} square integer matrices found ({where}) and none follows an "
                            "amfch_statistics header; cut the log to the one to use")
        chosen = marked[-1]
        if len(marked) > 1:
            notes.append(f"{len(marked)} amfch matrices in the log; the last one is used")
    marker_line = max((mk for mk in marks if mk < chosen[0]), default=None)
    a, b = chosen
    validate.rank_count(b - a, str(path))
    vals = np.array([[validate.traffic_bytes(int(x) * WORD, f"{path}:{i + 1}", f"column {j + 1} (x 8 bytes)")
                      for j, x in enumerate(_INT_ROW.match(lines[i]).group(1).split())] for i in range(a, b)],
                    dtype=np.float64)
    notes.insert(0, f"amfch matrix at lines {a + 1}-{b}" +
                 (f" (after line {marker_line + 1})" if marker_line is not None else ""))
    notes.append("64-bit words x 8 = bytes")
    return Traffic(bytes=sp.csr_matrix(vals), source=str(path), format="amfch", notes=notes)


def _read_ompi(path: Path) -> Traffic:
    if path.suffix == ".prof":
        prefix = path.with_suffix("")
        prefix = prefix.with_name(re.sub(r"\.\d+$", "", prefix.name))
    else:
        prefix = path
    files = sorted(prefix.parent.glob(glob.escape(prefix.name) + ".*.prof")) if prefix.parent.is_dir() else []
    files = [f for f in files if f.is_file() and re.fullmatch(re.escape(prefix.name) + r"\.\d+\.prof", f.name)]
    if not files:
        raise UserError(f"{path}: no Open MPI monitoring files {prefix.name}.<rank>.prof")
    by_rank: dict[int, Path] = {}
    for f in files:
        # p.7.prof and p.07.prof (a renamed copy) are both rank 7: its sends would count twice
        other = by_rank.setdefault(int(f.name[len(prefix.name) + 1:-len(".prof")]), f)
        if other is not f:
            raise UserError(f"{prefix}.*.prof: {other.name} and {f.name} are both the file of rank "
                            f"{int(f.name[len(prefix.name) + 1:-len('.prof')])}; remove the copy")
    have = set(by_rank)
    gap = min(set(range(max(have) + 1)) - have, default=None)
    if gap is not None:          # every rank writes its file at MPI_Finalize: one is missing, its sends with it
        raise UserError(f"{prefix}.*.prof: no file for rank {gap} ({prefix.name}.{gap}.prof) although rank "
                        f"{max(have)}'s is there; the run did not finish on every rank")
    src, dst, val, cnt = [], [], [], []
    for f in files:
        rank = int(f.name[len(prefix.name) + 1:-len(".prof")])
        for lineno, ln in enumerate(_read_text(f).splitlines(), 1):
            fields = ln.split("\t")
            if fields[0] not in ("E", "I"):
                # the same line with its tabs turned into blanks (a dump copied from a terminal,
                # an editor's retab): it was skipped as no E/I line, its sends lost without a word
                spaced = _OMPI_SPACED.match(ln)
                if spaced is None:
                    if re.match(r"[EI][ \t]", ln):
                        raise UserError(f"{f}:{lineno}: malformed monitoring line (expected 'E|I<TAB>src<TAB>dst"
                                        "<TAB>N bytes<TAB>N msgs sent')")
                    continue
                fields = [spaced.group(1), spaced.group(2), spaced.group(3), spaced.group(4) + " bytes",
                          spaced.group(5) + " msgs sent"]
            where = f"{f}:{lineno}"
            if len(fields) < 5 or not fields[3].split() or not fields[4].split():
                raise UserError(f"{where}: malformed monitoring line (expected 'E|I<TAB>src<TAB>dst<TAB>N bytes"
                                "<TAB>N msgs sent')")
            src.append(validate.rank(fields[1], where, "source rank"))
            if src[-1] != rank:       # Open MPI writes each rank's own sends to its file: files mixed up
                raise UserError(f"{where}: a line of rank {src[-1]} in the file of rank {rank} (Open MPI writes "
                                "each rank's sends to its own file: files of different runs mixed up?)")
            dst.append(validate.rank(fields[2], where, "destination rank"))
            val.append(validate.traffic_bytes(fields[3].split()[0], where, "bytes"))
            cnt.append(validate.integer(fields[4].split()[0], where, "messages", 0, 2 ** 63 - 1))
    if not src:
        raise UserError(f"{prefix}.*.prof: no point-to-point lines (was pml_monitoring_enable set?)")
    n = max(len(files), max(src) + 1, max(dst) + 1)
    validate.rank_count(n, str(prefix))
    if n > len(files):     # the last ranks wrote no file (the gap check above sees only those below a file)
        raise UserError(f"{prefix}.*.prof: rank {n - 1} is sent to, but there is no file for ranks {len(files)}"
                        f"{f'-{n - 1}' if n - 1 > len(files) else ''} ({prefix.name}.{len(files)}.prof...): the run "
                        "did not finish on every rank, and their sends would be missing")
    m = sp.coo_matrix((np.array(val, float), (src, dst)), shape=(n, n)).tocsr()
    msgs = sp.coo_matrix((np.array(cnt), (src, dst)), shape=(n, n)).tocsr()
    return Traffic(bytes=m, msgs=msgs, source=str(prefix), format="ompi",
                   notes=["Open MPI monitoring: user point-to-point (E) and what collectives sent (I)"])


_OMPI_SPACED = re.compile(r"([EI])[ \t]+(\S+)[ \t]+(\S+)[ \t]+(\S+)[ \t]+bytes[ \t]+(\S+)[ \t]+msgs[ \t]+sent\b")


def _checked(m, path: Path):
    """A matrix a library read, before anything converts it: its shape within the limits,
    its values real numbers (no complex, text or object arrays)."""
    shape = getattr(m, "shape", ())
    if len(shape) != 2:
        raise UserError(f"{path}: expected a 2-D matrix, found {len(shape)} dimension(s)")
    if shape[0] != shape[1]:
        raise UserError(f"{path}: the traffic matrix must be square, got {shape[0]} x {shape[1]}")
    validate.rank_count(int(shape[0]), str(path))
    kind = np.dtype(m.dtype).kind
    if kind == "c":
        raise UserError(f"{path}: complex values; traffic is a real number of bytes")
    if kind not in "biuf":
        raise UserError(f"{path}: values of type {m.dtype}, not numbers")
    if sp.issparse(m):
        m = m.astype(np.float64)           # (entries given twice summed in float64, not in their type)
    return sp.csr_matrix(m, dtype=np.float64)


def _read_mtx(path: Path) -> Traffic:
    # the header first: a dense or huge declared size is refused before scipy allocates it
    head = _read_text(path, lenient=True)
    lines = [ln for ln in head.splitlines()[:10000] if ln.strip() and not ln.startswith("%")]
    banner = head.splitlines()[0].lower() if head.strip() else ""
    if not banner.startswith("%%matrixmarket"):
        raise UserError(f"{path}: not a MatrixMarket file (no %%MatrixMarket banner)")
    if lines:
        dims = lines[0].split()
        try:
            sizes = [int(x) for x in dims]
        except ValueError:
            raise UserError(f"{path}: bad MatrixMarket size line {lines[0]!r}") from None
        if len(sizes) >= 2:
            validate.rank_count(max(sizes[0], sizes[1]), str(path))
            if "coordinate" in banner and len(sizes) >= 3:   # the entries it declares are in the file
                entries = len([ln for ln in head.splitlines() if ln.strip() and not ln.startswith("%")]) - 1
                if sizes[2] < 0 or sizes[2] > entries:
                    raise UserError(f"{path}: the size line declares {sizes[2]} entries, the file holds {entries}")
            if "array" in banner and sizes[0] * sizes[1] > 1 << 28:
                raise UserError(f"{path}: a dense {sizes[0]} x {sizes[1]} matrix is too large; use the coordinate "
                                "format")
    fields = banner.split()
    if len(fields) > 1 and fields[1] != "matrix":
        # '%%MatrixMarket vector ...' was "2 field(s); a real coordinate entry has 3"
        raise UserError(f"{path}: a MatrixMarket {fields[1][:20]}, not a matrix (%%MatrixMarket matrix coordinate "
                        "real general): traffic is a ranks x ranks matrix")
    if len(fields) > 4 and fields[4] == "skew-symmetric":
        # scipy mirrors each entry negated: "negative traffic -5" of a file without a negative number
        raise UserError(f"{path}: a skew-symmetric MatrixMarket matrix (each entry stands for its negative "
                        "across the diagonal too): traffic is never negative; write it as general (or symmetric)")
    data = validate.read_bytes(path, "traffic file")     # a gzip-compressed file comes decompressed
    data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data      # a byte-order mark, as above
    if b"\n" not in data and b"\r" in data:         # lines ending in CR alone, as above (scipy: "Premature EOF")
        data = data.replace(b"\r", b"\n")
    body, line = _mtx_body(data)
    note = re.search(rb"^[ \t]*%", body, re.M)
    if note is not None:
        # scipy: "Too many lines in file (file too long)" of a trailing comment, "Invalid integer
        # value" of one among the entries
        at = line + body.count(b"\n", 0, note.start())
        raise UserError(f"{path}:{at}: a % comment among the entries; "
                        "MatrixMarket takes comments only between the banner and the size line: move or delete it")
    validate.number_text(body, str(path), line, whole=len(fields) > 3 and fields[3] in ("integer", "pattern"))
    _mtx_fields(body, path, line, fields)
    try:
        m = scipy.io.mmread(io.BytesIO(data))
    except (ValueError, OSError, IndexError, TypeError, OverflowError, EOFError) as e:
        why = validate.one_line(e)
        if "out of bounds" in why:      # the commonest cause: rows and columns numbered from 0
            why += "; MatrixMarket numbers rows and columns from 1 to the size line's counts (an export numbered from 0?)"
        raise UserError(f"{path}: not a readable MatrixMarket file ({why})") from None
    notes = []
    if sp.issparse(m) and m.format == "coo" and m.nnz:
        # scipy keeps an entry given twice, and the matrix adds them: the CSV reader says so,
        # this one did not (a symmetric file listing both triangles counted every pair twice)
        key = np.asarray(m.row, np.int64) * int(m.shape[1]) + np.asarray(m.col, np.int64)
        twice = int(m.nnz - len(np.unique(key)))
        if twice:
            sym = len(fields) > 4 and fields[4] != "general"
            notes.append(f"{twice} entr{'y repeats' if twice == 1 else 'ies repeat'} a (row, column) of an earlier one"
                         + (" (in a symmetric file: both triangles listed?)" if sym else "") + ": their values were added")
    return Traffic(bytes=_checked(m, path), source=str(path), format="mtx", notes=notes)


def _mtx_fields(body: bytes, path: Path, line: int, banner: list) -> None:
    """Every entry line has the fields its banner says (scipy took the first ones of a line
    and dropped the rest without a word: `1 2 3 4000` was 3 bytes)."""
    kind = banner[3] if len(banner) > 3 else "real"
    per = (1 if len(banner) > 2 and banner[2] == "array" else 3 if kind != "pattern" else 2) + (kind == "complex")
    bad = re.search(rb"^(?![ \t]*(?:%|\r?$))(?!(?:[ \t]*[^ \t\r\n]+){" + str(per).encode() + rb"}[ \t]*\r?$).*$",
                    body, re.M)
    if bad is not None:
        got, at = len(bad.group(0).split()), line + body.count(b"\n", 0, bad.start())
        raise UserError(f"{path}:{at}: {got} field(s); {'an' if kind[0] in 'aeiou' else 'a'} {kind} "
                        f"{banner[2] if len(banner) > 2 else 'coordinate'} entry has {per}")


def _mtx_body(data: bytes) -> tuple[bytes, int]:
    """The entries of a MatrixMarket file (after its banner, comments and size line) and the
    number of their first line."""
    pos, line, sized = 0, 1, False
    while pos < len(data) and not sized:
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        text = data[pos:end].strip()
        sized = bool(text) and not text.startswith(b"%")
        pos, line = end, line + 1
    return data[pos:], line


def _read_npz(path: Path) -> Traffic:
    try:
        with open(path, "rb") as f:
            head = f.read(6)
    except OSError as e:
        raise UserError(f"{path}: cannot read it ({e.strerror or e})") from None
    if head == b"\x93NUMPY":                   # one array saved with numpy.save
        try:
            a = np.load(str(path), allow_pickle=False)
        except (ValueError, OSError, EOFError, SyntaxError, tokenize.TokenError) as e:   # a damaged header
            raise UserError(f"{path}: not a readable .npy array ({validate.one_line(e)})") from None
        return Traffic(bytes=_checked(a, path), source=str(path), format="npz")
    if not head.startswith(b"PK"):             # else numpy takes it for a pickle and suggests loading it unsafely
        raise UserError(f"{path}: not an .npz file (a zip archive of NumPy arrays) nor an .npy array")
    try:
        with np.load(str(path), allow_pickle=False) as z:
            names = list(z.files)
            if {"format", "shape", "data"} <= set(names):      # scipy.sparse.save_npz
                shape = tuple(int(x) for x in z["shape"])
                if len(shape) == 2:
                    validate.rank_count(max(shape), str(path))
                try:
                    m = sp.load_npz(str(path))
                    if np.dtype(m.dtype).kind in "biu":
                        # to float64 before a COO's entries given twice are summed: in uint8 200 + 100
                        # was 44 bytes, in int32 two 2^31 - 1 "negative traffic -2"
                        m = m.astype(np.float64)
                    if len(m.shape) == 2:          # indices within the shape, indptr in order (scipy checks lazily)
                        m = sp.csr_matrix(m)
                        m.check_format(full_check=True)
                except (ValueError, KeyError, OSError, TypeError, IndexError, zlib.error, NotImplementedError,
                        RuntimeError) as e:
                    raise UserError(f"{path}: not a readable scipy.sparse .npz file ({validate.one_line(e)})") \
                        from None
                return Traffic(bytes=_checked(m, path), source=str(path), format="npz")
            arrays = [z[k] for k in names]
    except UserError:
        raise
    except (ValueError, OSError, KeyError, TypeError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError,
            RuntimeError) as e:
        # a damaged member: zipfile checks CRCs only at the end, zlib fails first; a damaged
        # header can claim a compression or encryption zipfile does not do
        raise UserError(f"{path}: not a readable .npz file ({validate.one_line(e)})") from None
    for k, a in zip(names, arrays):
        if not isinstance(a, np.ndarray):          # a member that is not a .npy array
            raise UserError(f"{path}: member {k!r} is not a NumPy array (.npy); not an .npz file of arrays")
    squares = [a for a in arrays if a.ndim == 2]
    if len(squares) != 1:
        raise UserError(f"{path}: expected one 2-D array (or a scipy.sparse matrix), found {len(squares)}")
    return Traffic(bytes=_checked(squares[0], path), source=str(path), format="npz")


def _metis_lists(body: list, skip: int, step: int, n: int) -> tuple | None:
    """(rows, cols, weights) of well-formed METIS adjacency lists, parsed by NumPy in one go
    (a Python call per number took 1.8 s for 2.4*10^5 of them); None when any line is not
    clean, for the checking parser to say where."""
    counts, flat = [], []
    for _, ln in body:
        toks = ln.split()
        if len(toks) < skip or (len(toks) - skip) % step:
            return None
        counts.append(len(toks) - skip)
        flat.extend(toks[skip:])
    try:
        a = np.array(flat, dtype=np.int64) if flat else np.zeros(0, np.int64)
    except (ValueError, OverflowError):
        return None
    cols = a[0::step] - 1
    w = a[1::step] if step == 2 else np.ones(len(cols), np.int64)
    if len(cols) and (cols.min() < 0 or cols.max() >= n) or len(w) and w.min() < 0:
        return None
    return np.repeat(np.arange(len(body), dtype=np.int64), np.array(counts, np.int64) // step), cols, w


def _read_metis(path: Path) -> Traffic:
    lines = [(i, ln) for i, ln in enumerate(_read_text(path).splitlines(), 1) if not ln.startswith("%")]
    if not lines:
        raise UserError(f"{path}: empty METIS graph file")
    head = lines[0][1].split()
    where0 = f"{path}:{lines[0][0]}"
    if not 2 <= len(head) <= 4:
        raise UserError(f"{where0}: bad METIS header {lines[0][1][:60]!r} (expected 'n m [fmt [ncon]]')")
    n = validate.integer(head[0], where0, "vertex count", 1, validate.MAX_RANKS, float_form=False)
    m = validate.integer(head[1], where0, "edge count", 0, float_form=False)
    fmtcode = head[2] if len(head) > 2 else "000"
    ncon = validate.integer(head[3], where0, "ncon", 1, 1000, float_form=False) if len(head) > 3 else 1
    if not re.fullmatch(r"[01]{1,3}", fmtcode):
        raise UserError(f"{where0}: METIS fmt {fmtcode!r} must be up to three 0/1 digits")
    fmtcode = fmtcode.zfill(3)
    has_vsize, has_vw, has_ew = fmtcode[0] == "1", fmtcode[1] == "1", fmtcode[2] == "1"
    body = lines[1:]
    while len(body) > n and not body[-1][1].strip():   # a blank line is an isolated vertex: only extra ones go
        body.pop()
    if len(body) != n:
        raise UserError(f"{path}: header says {n} vertices, the file has {len(body)} vertex lines")
    skip = (1 if has_vsize else 0) + (ncon if has_vw else 0)
    fast = _metis_lists(body, skip, 2 if has_ew else 1, n)
    rows, cols, vals = fast if fast is not None else ([], [], [])
    for v, (lineno, ln) in enumerate(body if fast is None else ()):
        where = f"{path}:{lineno}"
        toks = ln.split()
        skip = (1 if has_vsize else 0) + (ncon if has_vw else 0)
        if len(toks) < skip:
            raise UserError(f"{where}: expected {skip} vertex size/weight field(s) first")
        toks = toks[skip:]
        step = 2 if has_ew else 1
        if len(toks) % step:
            raise UserError(f"{where}: odd number of fields for (neighbour, weight) pairs")
        for j in range(0, len(toks), step):
            u = validate.integer(toks[j], where, "neighbour", 1, n, float_form=False) - 1
            w = validate.integer(toks[j + 1], where, "edge weight", 0, float_form=False) if has_ew else 1
            rows.append(v), cols.append(u), vals.append(w)
    line_of = [lineno for lineno, _ in body]
    r, c, w = np.array(rows, np.int64), np.array(cols, np.int64), np.array(vals, float)
    notes = ["METIS graph: half of each edge weight per direction"]
    loops = r == c
    nloops = int(loops.sum())
    if nloops:       # METIS refuses them; other tools write a rank's traffic to itself: it is not mapped
        notes.append(f"METIS graph: {nloops} self loop(s) (a vertex listing itself) left out")
        r, c, w = r[~loops], c[~loops], w[~loops]
    if has_vw or has_vsize:
        notes.append("METIS graph: vertex weights and sizes are not used (each vertex is one rank)")
    # each edge once in each of its two lists, with one weight: checked entry by entry, so that
    # the error names the lines (summing first would hide a duplicate, and a count cannot say where)
    key = r * n + c
    order = np.argsort(key, kind="stable")
    ks = key[order]
    dup = np.flatnonzero(ks[1:] == ks[:-1])
    if len(dup):
        i = order[dup[0] + 1]
        raise UserError(f"{path}:{line_of[r[i]]}: vertex {r[i] + 1} lists neighbour {c[i] + 1} twice (a METIS graph "
                        "holds each edge once in each of its vertices' lists)")
    pos = np.minimum(np.searchsorted(ks, c * n + r), max(len(ks) - 1, 0))
    back = ks[pos] == c * n + r if len(ks) else np.ones(0, bool)
    if not back.all():
        i = int(np.flatnonzero(~back)[0])
        raise UserError(f"{path}:{line_of[r[i]]}: vertex {r[i] + 1} lists neighbour {c[i] + 1}, but vertex {c[i] + 1} "
                        f"(line {line_of[c[i]]}) does not list {r[i] + 1}: the graph is not symmetric (a METIS graph "
                        "lists each edge in both of its vertices' lists)")
    wback = w[order][pos]
    if has_ew and np.any(wback != w):
        i = int(np.flatnonzero(wback != w)[0])
        raise UserError(f"{path}:{line_of[r[i]]}: edge {r[i] + 1}-{c[i] + 1} has weight {w[i]:.0f} here and "
                        f"{wback[i]:.0f} at line {line_of[c[i]]}: the graph is not symmetric")
    if 2 * m not in (len(r), len(r) + nloops, len(r) + 2 * nloops):
        raise UserError(f"{path}: header says {m} edges, the adjacency lists hold {len(r) // 2}" +
                        (f" (and {nloops} self loop(s))" if nloops else ""))
    W = sp.coo_matrix((w, (r, c)), shape=(n, n)).tocsr()
    return Traffic(bytes=W * 0.5, source=str(path), format="metis", notes=notes)


# --------------------------------------------------------------------------- writers

def write(traffic: Traffic, path, fmt: str = "auto", units: str = "bytes") -> str:
    """Write traffic (through a temporary file renamed into place); returns the format used.
    METIS graphs hold W = M + M^T, diagonal dropped. `path`: a checked output
    (rankmap.profiler.outputs.Target) or a path, replaced if it exists."""
    from rankmap.profiler import outputs
    target = path if isinstance(path, outputs.Target) else outputs.target_file(path, "DST", force=True)
    path = target.path
    # DST.gz is written gzip-compressed, as every text input is read: `--to csv x.csv.gz` wrote
    # plain text under a .gz name (zcat and other tools refused it), and x.csv.gz's format was
    # not told from its extension
    gz = path.suffix.lower() == ".gz"
    if fmt == "auto":
        fmt = {".graph": "metis", ".metis": "metis", ".txt": "metis", ".mtx": "mtx", ".csv": "csv",
               ".npz": "npz", ".dat": "treematch"}.get((path.with_suffix("") if gz else path).suffix.lower())
        if fmt is None:
            raise UserError(f"{path}: cannot tell the output format from the extension; pass --to "
                            f"({', '.join(WRITE_FORMATS)})")
    if fmt not in WRITE_FORMATS:
        raise UserError(f"--to {fmt!r}: unknown output format; choose one of: {', '.join(WRITE_FORMATS)}")
    if units not in ("bytes", "words"):
        raise UserError("units must be bytes or words")
    if gz and fmt == "npz":
        raise UserError(f"{path}: an npz archive is compressed already, and rankmap reads .gz files as text; "
                        "name it .npz")
    scale = 1.0 / WORD if units == "words" else 1.0
    m = traffic.bytes.tocsr()
    if fmt == "treematch" and m.shape[0] > 4096:
        raise UserError(f"{path}: a dense {m.shape[0]} x {m.shape[0]} matrix is too large for the TreeMatch format")
    if fmt == "metis":          # integer weights of both directions: they must fit METIS's 64-bit integers
        top = float(symmetric(m).max()) * scale if m.nnz else 0.0
        if np.rint(top) >= 2.0 ** 63:
            raise UserError(f"{path}: an edge weight of {top:.3g} {units} does not fit a METIS graph's 64-bit "
                            "integers" + ("; pass --units words" if units == "bytes" else "") +
                            " or write another format (mtx, npz, csv)")

    # the source's name in a comment line, as text: a name with bytes that are not UTF-8 ended
    # in an internal error, and one with a newline wrote a METIS graph no reader takes
    source = "".join(c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
                     for c in str(traffic.source))

    def fill(tmp: Path) -> None:
        if gz:
            import gzip
            import shutil
            raw = tmp.with_name(tmp.name + ".raw")
            try:
                fill_plain(raw)
                with open(raw, "rb") as src, open(tmp, "wb") as f, \
                        gzip.GzipFile(path.with_suffix("").name, "wb", fileobj=f) as dst:   # its own name inside
                    shutil.copyfileobj(src, dst, 1 << 20)
            finally:
                raw.unlink(missing_ok=True)
        else:
            fill_plain(tmp)

    def fill_plain(tmp: Path) -> None:
        if fmt == "metis":
            write_metis(symmetric(m), tmp, scale, f"rankmap: {units} exchanged in both directions, from {source}")
        elif fmt == "mtx":
            with open(tmp, "wb") as f:
                scipy.io.mmwrite(f, (m * scale).tocoo(), comment=f"rankmap traffic ({units}) from {source}")
        elif fmt == "csv":
            c = m.tocoo()
            # the message counts ride along (predict's latency term reads them)
            k = None if traffic.msgs is None else np.asarray(traffic.msgs.tocsr()[c.row, c.col]).ravel()
            with open(tmp, "w") as f:
                f.write(("src,dst,bytes" if units == "bytes" else "src,dst,words") + (",messages\n" if k is not None
                                                                                     else "\n"))
                for x, (i, j, v) in enumerate(zip(c.row, c.col, c.data)):
                    f.write(f"{i},{j},{_fmt_num(v * scale)}" + (f",{_fmt_num(k[x])}\n" if k is not None else "\n"))
                last = m.shape[0] - 1       # a CSV's size is its highest rank: a silent last rank keeps its row
                if not c.nnz or max(c.row.max(), c.col.max()) < last:
                    f.write(f"{last},{last},0\n")
        elif fmt == "npz":
            with open(tmp, "wb") as f:
                sp.save_npz(f, m * scale)
        elif fmt == "treematch":
            dense = (m * scale).toarray()
            with open(tmp, "w") as f:
                for row in dense:
                    f.write(" ".join(_fmt_num(v) for v in row) + "\n")
    outputs.write_file(target, fill)
    return fmt


def metis_rounding(traffic: Traffic, units: str = "bytes") -> str | None:
    """What writing `traffic` as a METIS graph (integer weights, write_metis) changes, in one
    sentence, or None when every edge weight is a whole number >= 1 already."""
    w = symmetric(traffic.bytes.tocsr()).data * (1.0 / WORD if units == "words" else 1.0)
    r = np.rint(w)
    off, low = int((r != w).sum()) // 2, int((r < 1).sum()) // 2
    if not off:
        return None
    return (f"{off} of {len(w) // 2} edge weight(s) are not whole {units}: rounded to the nearest"
            + (f" ({low} below one half raised to 1, so that no edge vanishes)" if low else "")
            + "; mtx, npz or csv keep them exact")


def symmetric(m: sp.spmatrix) -> sp.csr_matrix:
    """W = M + M^T without the diagonal: the undirected communication graph."""
    w = without_diagonal((m + m.T).tocsr())
    w.sort_indices()
    return w


def write_metis(w: sp.csr_matrix, path: Path, scale: float = 1.0, comment: str = "") -> None:
    """METIS graph (fmt 001: edge weights), 1-based. Weights are rounded to integers and kept
    >= 1 so that no edge disappears."""
    w = w.tocsr()
    n = w.shape[0]
    weights = np.maximum(1, np.rint(w.data * scale)).astype(np.int64)
    with open(path, "w") as f:
        if comment:
            f.write(f"% {comment}\n")
        f.write(f"{n} {w.nnz // 2} 001\n")
        for v in range(n):
            a, b = w.indptr[v], w.indptr[v + 1]
            f.write(" ".join(f"{u + 1} {x}" for u, x in zip(w.indices[a:b], weights[a:b])) + "\n")


def _fmt_num(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else repr(float(v))
