"""Where rankmap writes, and how: output paths are checked before any work starts, and
everything is written next to its final place and renamed into it, so that a reader never
sees half an output and a failure (a full disk, Ctrl-C) leaves the old output as it was.

Rules (docs/formats.md, "Outputs and --force"):
  * an empty path (an unset shell variable) is refused;
  * the current directory, one of its parents, and `/` are never written over;
  * an input of the same command is never written over (nor a directory holding one);
  * a directory is replaced only when rankmap wrote it: it holds the marker `.rankmap-<kind>`
    (older rankmap versions: only the files that kind of directory holds), and only with
    --force; anything else is refused even with --force;
  * an existing file is replaced with --force, or when rankmap wrote it (its signature), never
    when it is a directory;
  * a directory that must be new (a profile run, a workflow, the demo) is created, or taken
    when it exists empty; an earlier one is never overwritten.
Write errors (no space left, a read-only file system, no permission, /proc) end in one line
naming the path and what to do; the temporary output is removed."""
from __future__ import annotations

import ctypes
import errno
import json
import os
import re
import shutil
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path
from typing import Callable

from rankmap.profiler.errors import UserError

MARKER = ".rankmap-{kind}"
# files each kind of directory holds, for directories written before the marker existed
KNOWN = {
    "mapping": ("hostfile", "binding.txt", "rankfile", "machinefile", "collective-order.txt", "report.json",
                "machine.json", "heatmap-*.png", "links-*.png"),
    "platform": ("platform.xml", "platform-ideal.xml", "platform-nocompute.xml", "machine.json", "platform.sha256"),
}
WHAT = {"mapping": "a mapping (rankmap map)", "platform": "a platform (rankmap platform)",
        "profile": "a profile run (rankmap profile)", "run": "a workflow (rankmap run)",
        "demo": "the demo's output (rankmap demo)", "sbatch": "a batch job's directory (rankmap sbatch)",
        "plots": "plots"}


@dataclass
class Target:
    path: Path            # absolute, normalized
    option: str           # the option or argument that named it (for messages)
    kind: str             # "dir" kind name ("mapping", ...) or "file"
    exists: bool

    def __str__(self) -> str:
        return str(self.path)

    def __fspath__(self) -> str:
        return str(self.path)


def _abs(text: str) -> Path:
    return Path(os.path.abspath(os.fspath(text)))


def _real(p: Path) -> Path:
    try:
        return p.resolve()
    except (OSError, RuntimeError):
        return p


def _within(child: Path, parent: Path) -> bool:
    return child == parent or parent in child.parents


def _check_common(text, option: str, inputs, is_dir: bool) -> Path:
    if text is None or not str(text).strip():
        raise UserError(f"{option} '{text or ''}': empty path (an unset shell variable?)")
    if str(text).strip() == "-":
        # the Unix "standard output": a file named '-' was written into the current directory
        raise UserError(f"{option} -: rankmap writes {'a directory' if is_dir else 'a file'}, not standard output; "
                        f"name {'it' if is_dir else 'the file'}")
    p = _abs(text)
    long = [part for part in p.parts if len(os.fsencode(part)) > 255]
    if long or len(os.fsencode(str(p))) > 4095:
        what = f"the name {long[0][:24]}... has {len(os.fsencode(long[0]))} bytes" if long else \
            f"the path has {len(os.fsencode(str(p)))} bytes"
        raise UserError(f"{option} {str(text)[:60]}...: {what}, more than file systems allow (255 per name, 4095 "
                        "per path)")
    real = _real(p)
    cwd = _real(Path.cwd())
    if is_dir and (_within(cwd, real) or real == Path("/")):
        what = "the current directory" if real == cwd else "/" if real == Path("/") else \
            "a parent of the current directory"
        raise UserError(f"{option} {text}: that is {what}, which rankmap never writes over; name a new "
                        "directory")
    for i in inputs or ():
        if i is None or str(i) == "":
            continue
        ip = str(i)[1:] if str(i).startswith("@") else str(i)
        ir = _real(_abs(ip))
        if ir == real or (is_dir and _within(ir, real)):
            raise UserError(f"{option} {text}: {'is' if ir == real else 'holds'} {ip}, an input of this command; "
                            "write the output somewhere else")
    # the nearest existing ancestor must be a directory we can create things in
    anc = p.parent
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise UserError(f"{option} {text}: {anc} is a file, not a directory")
    if not p.exists():
        _probe_writable(anc, option, text)
    if p.is_symlink() and re.match(r"(pipe|socket|anon_inode):", real.name):
        # /dev/stdout into a pipe: 'cannot write /proc/123/fd/pipe:[456]: No such file'
        raise UserError(f"{option} {text}: a pipe or socket (standard output?), not a file; rankmap writes files: "
                        "name one")
    if p.is_symlink():
        # written where the link points, the link kept: the rename into place replaced the
        # link itself (`--out latest --force`, latest -> map-v3: latest became a directory of
        # its own, map-v3 stayed old)
        return real
    return p


def _probe_writable(d: Path, option: str, text) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=".rankmap-probe-", dir=d)
        os.close(fd)
        os.unlink(name)
    except OSError as e:
        raise UserError(f"{option} {text}: cannot write in {d} ({_why(e)})") from None


def is_rankmap_dir(p: Path, kind: str) -> bool:
    if (p / MARKER.format(kind=kind)).exists():
        return True
    known = KNOWN.get(kind)
    if not known:
        return False
    names = [c.name for c in p.iterdir()]
    return bool(names) and all(any(fnmatch(n, pat) for pat in known) for n in names) and \
        any(n == known[0] for n in names)


def target_dir(text, option: str, kind: str, force: bool = False, inputs=(), new: bool = False,
               force_flag: str = "--force") -> Target:
    """A directory rankmap will write as a whole (replaced atomically): checked now, before
    any work. `new`: it must not exist yet (or be empty); nothing is ever replaced.
    force_flag: how the caller asks to replace (the Python API's force=True)."""
    p = _check_common(text, option, inputs, True)
    if not p.exists():
        return Target(p, option, kind, False)
    if not p.is_dir():
        raise UserError(f"{option} {text}: {p} exists and is not a directory")
    try:
        empty = not any(p.iterdir())
    except OSError as e:
        raise UserError(f"{option} {text}: cannot read {p} ({_why(e)})") from None
    if empty:
        _probe_writable(p.parent if p.parent.exists() else p, option, text)
        return Target(p, option, kind, True)
    if new:
        raise UserError(f"{option} {text}: {p} already exists and is not empty; choose another {option} "
                        "(an earlier output is never overwritten)")
    if not is_rankmap_dir(p, kind):
        raise UserError(f"{option} {text}: {p} exists and is not {WHAT.get(kind, kind)} (no "
                        f"{MARKER.format(kind=kind)} marker); rankmap does not replace it, even with {force_flag}: "
                        "choose another path, or remove it yourself")
    if not force:
        raise UserError(f"{option} {text}: {p} already exists; pass {force_flag} to replace it")
    if kind in KNOWN:        # replaced as a whole: what the user put there beside rankmap's files would go too
        marker = MARKER.format(kind=kind)
        foreign = sorted(n for n in (c.name for c in p.iterdir())
                         if n != marker and not any(fnmatch(n, pat) for pat in KNOWN[kind]))
        if foreign:
            raise UserError(f"{option} {text}: {p} also holds {foreign[0]!r}"
                            + (f" (and {len(foreign) - 1} more)" if len(foreign) > 1 else "")
                            + f", which rankmap did not write; {force_flag} replaces only what rankmap wrote: move it "
                            "out, or choose another path")
    _probe_writable(p.parent, option, text)
    return Target(p, option, kind, True)


def target_file(text, option: str, force: bool = False, inputs=(), signature: Callable[[Path], bool] | None = None,
                force_flag: str | None = "--force") -> Target:
    """A file rankmap will write (atomically). An existing file is replaced with --force or
    when `signature` says rankmap wrote it."""
    p = _check_common(text, option, inputs, False)
    if p.is_dir():
        raise UserError(f"{option} {text}: {p} is a directory; give a file name")
    if p.exists() and not p.is_file():
        raise UserError(f"{option} {text}: {p} is not a regular file (a device, FIFO or socket); rankmap never "
                        "replaces it")
    if p.exists():
        ours = False
        if signature is not None:
            try:
                ours = signature(p)
            except OSError:
                ours = False
        if not (force or ours):
            hint = f"pass {force_flag} to replace it" if force_flag else "choose another name"
            whose = " and was not written by rankmap" if signature is not None else ""
            raise UserError(f"{option} {text}: {p} already exists{whose}; {hint}")
        _probe_writable(p.parent, option, text)
    return Target(p, option, "file", p.exists())


# ---------------------------------------------------------------------- writing

def _why(e: OSError) -> str:
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return "no space left on the device"
    if e.errno == errno.EROFS:
        return "a read-only file system"
    if e.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return e.strerror or str(e)


def write_error(e: OSError, path, kept_old: bool) -> UserError:
    what = _why(e)
    tail = "the previous one is unchanged" if kept_old else "nothing was written"
    todo = {errno.ENOSPC: f"free space on that file system (df {Path(path).parent}) and run again",
            errno.EDQUOT: "free space within your quota and run again",
            errno.EROFS: "write it to another file system",
            errno.EACCES: "write it somewhere you may", errno.EPERM: "write it somewhere you may"}.get(
        e.errno, "write it somewhere else")
    return UserError(f"cannot write {path}: {what}; {tail}: {todo}")


@contextmanager
def io_errors(path, kept_old: bool = False):
    """OSError while writing `path` -> one clear line."""
    try:
        yield
    except UserError:
        raise
    except OSError as e:
        raise write_error(e, path, kept_old) from None


def _fsync_tree(d: Path) -> None:
    for p in sorted(d.rglob("*"), reverse=True):
        if p.is_file():
            fd = os.open(p, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
    _fsync_dir(d)


def _fsync_dir(d: Path) -> None:
    try:
        fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


_RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (renameat2 RENAME_EXCHANGE); False where not supported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        f = libc.renameat2
    except (OSError, AttributeError):
        return False
    AT_FDCWD = -100
    r = f(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE)
    return r == 0


def marker_text(kind: str) -> str:
    return json.dumps({"written_by": f"rankmap ({kind})", "time": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n"


def write_marker(d: Path, kind: str) -> None:
    (d / MARKER.format(kind=kind)).write_text(marker_text(kind))


def write_dir(t: Target, fill: Callable[[Path], None]) -> Path:
    """fill(tmp) writes the directory's files into a temporary directory next to t.path; it
    then becomes t.path in one rename (the old one, if any, swapped out and removed)."""
    out = t.path
    with io_errors(out, t.exists):
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        with io_errors(out, t.exists):
            os.chmod(tmp, 0o777 & ~_umask())           # mkdtemp's 0700 is for while it is being written
            fill(tmp)
            write_marker(tmp, t.kind)
            _fsync_tree(tmp)
            if out.exists() and any(out.iterdir()):
                if _exchange(tmp, out):           # tmp now holds the old directory
                    shutil.rmtree(tmp, ignore_errors=True)
                else:
                    old = out.with_name(f".{out.name}.old-{os.getpid()}")
                    os.rename(out, old)
                    os.rename(tmp, out)
                    shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, out)               # onto nothing, or onto an empty directory
            _fsync_dir(out.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def write_file(t: Target, data: str | bytes | Callable[[Path], None]) -> Path:
    """Write t.path through a temporary file next to it: data, or fill(tmp_path)."""
    out = t.path
    with io_errors(out, t.exists):
        out.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{out.name}.tmp-", dir=out.parent, suffix=out.suffix)
        os.close(fd)
    tmp = Path(name)
    try:
        with io_errors(out, t.exists):
            if callable(data):
                data(tmp)
            elif isinstance(data, bytes):
                tmp.write_bytes(data)
            else:
                tmp.write_text(data)
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                mode = os.stat(out).st_mode & 0o7777 if out.exists() else 0o666 & ~_umask()
            except OSError:
                mode = 0o666 & ~_umask()
            os.chmod(tmp, mode)
            os.replace(tmp, out)
            _fsync_dir(out.parent)
    except BaseException:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise
    return out


def new_dir(text, option: str, kind: str, inputs=()) -> Path:
    """Create a directory that must be new (or empty): a profile run, a workflow, the demo."""
    t = target_dir(text, option, kind, inputs=inputs, new=True)
    with io_errors(t.path):
        t.path.mkdir(parents=True, exist_ok=True)
        write_marker(t.path, kind)
    return t.path


def plots_dir(text, option: str, inputs=()) -> Path:
    """A directory plots are written into, file by file (each an output of its own): it may
    exist (the current directory, a mapping); it is created when it does not."""
    if text is None or not str(text).strip():
        raise UserError(f"{option} '{text or ''}': empty path (an unset shell variable?)")
    if str(text).strip() == "-":
        # the Unix "standard output": a file named '-' was written into the current directory
        raise UserError(f"{option} -: rankmap writes {'a directory' if is_dir else 'a file'}, not standard output; "
                        f"name {'it' if is_dir else 'the file'}")
    p = _abs(text)
    if p.exists() and not p.is_dir():
        raise UserError(f"{option} {text}: {p} exists and is not a directory")
    anc = p
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    if not anc.is_dir():
        raise UserError(f"{option} {text}: {anc} is a file, not a directory")
    _probe_writable(anc, option, text)
    with io_errors(p):
        p.mkdir(parents=True, exist_ok=True)
    return p


# ---------------------------------------------------------------------- signatures of rankmap's files

def png_signature(p: Path) -> bool:
    with open(p, "rb") as f:
        head = f.read(4096)
    return head.startswith(b"\x89PNG") and b"rankmap" in head


def text_signature(line: str) -> Callable[[Path], bool]:
    """A text file rankmap wrote: `line` within its first 4 KB."""
    def sig(p: Path) -> bool:
        with open(p, "rb") as f:
            return line.encode() in f.read(4096)
    return sig


def json_signature(*keys: str) -> Callable[[Path], bool]:
    def sig(p: Path) -> bool:
        try:
            d = json.loads(p.read_text())
        except (ValueError, UnicodeDecodeError):
            return False
        return isinstance(d, dict) and all(k in d for k in keys)
    return sig
