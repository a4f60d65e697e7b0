"""Evaluation harness for bad and edge inputs (issue 11): run `rankmap` as a user would (a new
process, a fresh working directory, a time limit) on each case of a batch and classify what
happened:

  data loss     a file that existed before the command (an input, the working directory's
                contents, the shared fixtures) is gone or changed
  hang          the command did not finish within the case's time limit
  traceback     a Python traceback (or rankmap's "internal error" line) reached the user
  silent wrong  exit 0 where an error was due, or a result that fails its check (NaN or
                infinite numbers in the output, a wrong file)
  unclear error the command failed, but not with one `rankmap: error:` line naming what and
                where (the case's fragments)
  refused valid a valid input refused (with a clear line)
  clear error   the one line, naming what and where
  correct       exit 0 and the result passes its check

Batches (batch1.py, batch2.py) list the cases; this module runs them:

    .venv/bin/python tests/corpus/harness.py tests/corpus/batch1.py [--only SUBSTR] [--json OUT]

rankmap runs from this checkout (python -m rankmap.cli, the checkout first on PYTHONPATH), or
from RANKMAP_CORPUS_CHECKOUT=DIR (e.g. `git archive` of an older commit, for a baseline); the
native libraries are the installed ones.

Nothing here is a pytest test: the corpus is the measurement, tests/test_bad_input*.py are
the tests."""
from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[2]
# rankmap as a user runs it, from a checkout (default this one: the code under test, not whatever
# happens to be installed): python -m rankmap.cli with the checkout first on the path
CHECKOUT = Path(os.environ.get("RANKMAP_CORPUS_CHECKOUT", ROOT))
RANKMAP = [str(ROOT / ".venv" / "bin" / "python"), "-m", "rankmap.cli"]
KINDS = ("data loss", "hang", "traceback", "silent wrong", "unclear error", "refused valid", "clear error", "correct")


@dataclass
class Case:
    id: str
    category: str
    argv: list                    # after `rankmap`; "{W}" = the case's directory, "{F}" = the shared fixtures
    expect: str = "error"         # "error" | "ok" | "either" (a correct result or a clear error)
    where: tuple = ()             # fragments the error line must contain (what and where)
    setup: Callable | None = None  # setup(W: Path) creates the case's files
    preserve: tuple = ()          # paths (with {W}/{F}) that must be unchanged afterwards
    check: Callable | None = None  # check(W, stdout) -> None if the result is right, else what is wrong
    timeout: float = 60.0
    cwd: str = "{W}/cwd"
    env: dict = field(default_factory=dict)


def fill(s: str, W: Path, F: Path) -> str:
    return str(s).replace("{W}", str(W)).replace("{F}", str(F))


def snapshot(path: Path) -> dict:
    """Content hashes of a file or of every file under a directory (None: absent)."""
    out = {}
    if path.is_symlink() or path.is_file():
        try:
            out[str(path)] = hashlib.sha1(path.read_bytes()).hexdigest()
        except OSError:
            out[str(path)] = "unreadable"
    elif path.is_dir():
        for p in sorted(path.rglob("*")):
            if p.is_file():
                try:
                    out[str(p)] = hashlib.sha1(p.read_bytes()).hexdigest()
                except OSError:
                    out[str(p)] = "unreadable"
        out[str(path) + "/"] = "dir"
    else:
        out[str(path)] = None
    return out


NONFINITE = re.compile(r"(?<![\w.])(nan|-?inf|-?infinity)(?![\w])", re.IGNORECASE)


def nonfinite_in_outputs(W: Path, stdout: str) -> str | None:
    if NONFINITE.search(stdout):
        return f"non-finite number in the output: {NONFINITE.search(stdout).group(0)}"
    for p in W.rglob("*.json"):
        try:
            text = p.read_text()
        except (OSError, UnicodeDecodeError):
            continue
        if re.search(r"\bNaN\b|\bInfinity\b", text):
            return f"NaN or Infinity in {p.relative_to(W)}"
    return None


def base_env() -> dict:
    e = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    e.update(HWLOC_COMPONENTS="-gl", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
             OMPI_MCA_btl_tcp_if_include="lo", OMPI_MCA_oob_tcp_if_include="lo", COLUMNS="200",
             PYTHONPATH=str(CHECKOUT))
    e.pop("RANKMAP_DEBUG", None)
    return e


def env_for(case: Case, W: Path | None = None, F: Path | None = None) -> dict:
    """The case's environment; {W} and {F} in its values are filled (PATH={W}/bin:...)."""
    return dict(base_env(), **{k: fill(v, W, F) if W is not None else v for k, v in case.env.items()})


def run_case(case: Case, base: Path, F: Path) -> dict:
    W = base / re.sub(r"[^\w.-]", "_", case.id)
    if W.exists():
        shutil.rmtree(W)
    (W / "cwd").mkdir(parents=True)
    (W / "cwd" / "keep.txt").write_text("the user's file in the working directory\n")
    if case.setup:
        case.setup(W)
    cwd = Path(fill(case.cwd, W, F))
    cwd.mkdir(parents=True, exist_ok=True)
    keep = [W / "cwd" / "keep.txt", F] + [Path(fill(p, W, F)) for p in case.preserve]
    before = {}
    for p in keep:
        before.update(snapshot(p))
    argv = RANKMAP + [fill(a, W, F) for a in case.argv]
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, cwd=cwd, env=env_for(case, W, F), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True, stdin=subprocess.DEVNULL)
    try:
        out, err = proc.communicate(timeout=case.timeout)
        hung = False
    except subprocess.TimeoutExpired:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                out, err = proc.communicate(timeout=5)
                break
            except subprocess.TimeoutExpired:
                continue
        out, err = out or "", err or ""
        hung = True
    secs = time.monotonic() - t0
    after = {}
    for p in keep:
        after.update(snapshot(p))
    lost = sorted(k for k, v in before.items() if v is not None and after.get(k) != v)
    rc = proc.returncode
    lines = [ln for ln in err.splitlines() if ln.strip()]
    kind, why = classify(case, W, rc, out, err, lines, hung, lost)
    return {"id": case.id, "category": case.category, "expect": case.expect, "kind": kind, "why": why,
            "rc": rc, "seconds": round(secs, 2), "argv": [fill(a, W, F) for a in case.argv],
            "stderr": err[-2000:], "stdout": out[-600:]}


def classify(case: Case, W: Path, rc, out: str, err: str, lines: list, hung: bool, lost: list):
    if lost:
        return "data loss", f"changed or removed: {', '.join(lost[:3])}"
    if hung:
        return "hang", f"no answer within {case.timeout:g} s"
    if "Traceback (most recent call last)" in err or any("internal error" in ln for ln in lines):
        return "traceback", (lines[-1] if lines else "")[:200]
    if rc == 0:
        if case.expect == "error":
            return "silent wrong", "exit 0 where an error was due"
        bad = nonfinite_in_outputs(W, out)
        if bad is None and case.check is not None:
            try:
                bad = case.check(W, out)
            except Exception as e:   # a check that cannot read the result: the result is wrong
                bad = f"check failed: {type(e).__name__}: {e}"
        if bad:
            return "silent wrong", bad
        return "correct", ""
    clear = len(lines) == 1 and lines[0].startswith("rankmap: error:") and \
        all(fill(f, W, Path("")) .lower() in lines[0].lower() for f in case.where)
    if case.expect == "ok":
        return "refused valid", (lines[0] if lines else f"exit {rc}")[:200]
    if clear:
        return "clear error", lines[0][:200]
    return "unclear error", (" | ".join(lines[:4]) or f"exit {rc}, nothing on stderr")[:300]


def load_batch(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("batch", type=Path)
    ap.add_argument("--only", help="run the cases whose id contains this")
    ap.add_argument("--base", type=Path, default=None, help="scratch directory (default /tmp/rankmap-corpus-<batch>)")
    ap.add_argument("--json", type=Path, help="write every result here")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    mod = load_batch(a.batch.resolve())
    base = a.base or Path(f"/tmp/rankmap-corpus-{a.batch.stem}")
    base.mkdir(parents=True, exist_ok=True)
    F = base / "_fixtures"
    if not (F / ".done").exists():
        if F.exists():
            shutil.rmtree(F)
        F.mkdir()
        mod.fixtures(F)
        (F / ".done").write_text("")
    cases = mod.cases()
    ids = [c.id for c in cases]
    dup = {i for i in ids if ids.count(i) > 1}
    assert not dup, f"duplicate case ids: {dup}"
    if a.only:       # comma-separated substrings of case ids
        cases = [c for c in cases if any(o in c.id for o in a.only.split(","))]
    results = []
    counts = {k: 0 for k in KINDS}
    t0 = time.monotonic()
    for i, c in enumerate(cases, 1):
        r = run_case(c, base / "cases", F)
        results.append(r)
        counts[r["kind"]] += 1
        bad = r["kind"] not in ("clear error", "correct")
        if bad or a.verbose:
            print(f"[{i}/{len(cases)}] {r['kind']:13} {c.id}: {r['why']}", flush=True)
    print(f"\n{len(cases)} cases in {time.monotonic() - t0:.0f} s ({a.batch.name})")
    by_cat: dict = {}
    for r in results:
        by_cat.setdefault(r["category"], {k: 0 for k in KINDS})[r["kind"]] += 1
    print(f"{'category':16}" + "".join(f"{k:>14}" for k in KINDS))
    for cat, cs in sorted(by_cat.items()):
        print(f"{cat:16}" + "".join(f"{cs[k]:>14}" for k in KINDS))
    print(f"{'total':16}" + "".join(f"{counts[k]:>14}" for k in KINDS))
    if a.json:
        a.json.write_text(json.dumps({"batch": a.batch.name, "counts": counts, "results": results}, indent=1))
    return 0


# ---------------------------------------------------------------------- checks the batches share

def finite_json(obj) -> bool:
    if isinstance(obj, float):
        return math.isfinite(obj)
    if isinstance(obj, dict):
        return all(finite_json(v) for v in obj.values())
    if isinstance(obj, list):
        return all(finite_json(v) for v in obj)
    return True


def mapping_ok(rel: str, nranks: int, per_core: int = 1):
    """A mapping directory W/rel with nranks ranks, at most per_core on one core, finite costs."""
    def check(W: Path, out: str):
        d = W / rel
        hosts = (d / "hostfile").read_text().split()
        if len(hosts) != nranks:
            return f"hostfile has {len(hosts)} ranks, not {nranks}"
        rows = [ln.split() for ln in (d / "binding.txt").read_text().splitlines() if not ln.startswith("#")]
        from collections import Counter
        if max(Counter((r[1], r[2]) for r in rows).values()) > per_core:
            return f"more than {per_core} rank(s) on one core"
        rep = json.loads((d / "report.json").read_text(), parse_constant=lambda c: float("nan"))
        if not finite_json(rep) or not math.isfinite(rep["cost"]):
            return "non-finite number in report.json"
        return None
    return check


def stdout_json_ok(W: Path, out: str):
    try:
        d = json.loads(out, parse_constant=lambda c: float("nan"))
    except ValueError as e:
        return f"stdout is not JSON: {e}"
    return None if finite_json(d) else "non-finite number in the JSON output"


def exists(rel: str):
    def check(W: Path, out: str):
        return None if (W / rel).exists() else f"{rel} was not written"
    return check


if __name__ == "__main__":
    sys.exit(main())
