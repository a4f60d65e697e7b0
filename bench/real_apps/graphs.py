"""The 512-4,096-rank traffic graphs (bench/data/apps): capture, convert, index, provenance."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from real_apps import capture, sources

DATA = Path(__file__).resolve().parents[1] / "data" / "apps"
# SMPI's default selector runs MPI_Allgather as P non-blocking pairs waited on one by one: O(P^2)
# per rank, hours at 512 ranks (miniFE). The trace records the call, not the algorithm that ran
# it (the same matrix either way, checked on miniFE at 64 ranks), so the captures run MPICH's.
FAST_COLLECTIVES = ["--cfg=smpi/coll-selector:mpich"]

HEADER = """# Real traffic graphs at 512-4,096 ranks (bench/data/apps)

Produced by `bench/real_apps.py --sources DIR graphs` through the product: each application was
built from its public sources with SimGrid's SMPI compilers, run once under SMPI (all ranks in
one process; `rankmap.slurm.smpi.run` with `-trace-ti`, SMPI's time-independent trace), and the
trace converted as `rankmap convert TRACE NAME.mtx` does (the product's reader and writer,
in process). Nothing else touched the numbers.

What a matrix holds: a directed P x P MatrixMarket matrix (`coordinate real general`, 1-based,
rows = senders), entry (i, j) = bytes rank i sent to rank j over the whole run:
point-to-point sends counted exactly from the trace (send, isend, ssend, sendrecv, ...;
element counts times the datatype's size), plus every collective expanded into pairs with the
product's `smpi` model (SimGrid 3.32's default algorithms; `profiler/collectives.py`), all
collectives taken on MPI_COMM_WORLD (SMPI's trace names no communicator: none of these
applications calls a collective on a sub-communicator in the configurations below, except
miniAMR, see the notes below the table; point-to-point messages are recorded with ranks of
MPI_COMM_WORLD whatever their communicator, checked on SimGrid 3.32).
Read them with `rankmap map NAME.mtx ...` / `rankmap evaluate`; `index.json` lists them
with the same fields as the table.

The runs are short (iterations cut with each application's documented inputs, see
"what"): the set-up and verification phases weigh more than in a full run; the pattern of
the time steps is the application's own. Sources (none of them is in this repository):

{sources}

Capture: {platform}; compute not timed (`smpi/simulate-computation:no`: the trace is traffic
only); host {host}, SimGrid {simgrid}. Which rows ran SMPI's default collective algorithms and
which MPICH's: the notes below the table.

| matrix | app | ranks | what ran | pairs | total bytes | p2p share | capture wall s |
|---|---|---|---|---|---|---|---|
"""


def _fmt_sources(srcs: dict) -> str:
    lines = []
    for k, s in sorted(srcs.items()):
        commit = s.get("commit", "?")
        lines.append(f"- {s['title']} {s.get('version', '')}: {s.get('origin', s['repo'])} commit {commit}"
                     f" (tree digest {s['digest']}; {sources.APPS[k].repo})")
    return "\n".join(lines)


def _simgrid_version() -> str:
    import subprocess
    try:
        r = subprocess.run(["smpirun", "--version"], capture_output=True, text=True)
        return (r.stdout or r.stderr).strip().splitlines()[0].replace("SimGrid version ", "")
    except (OSError, IndexError):
        return "?"


def _notes() -> list:
    """The paragraphs under the table (index.json "notes": who added which rows, and how)."""
    f = DATA / "index.json"
    return json.loads(f.read_text()).get("notes", []) if f.is_file() else []


def write_index(entries: list, srcs: dict, platform_desc: str) -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    entries = sorted(entries, key=lambda e: (e["app"], e["case"]["program"], e["ranks"], e["name"]))
    notes = _notes()
    (DATA / "index.json").write_text(json.dumps({"sources": srcs, "matrices": entries, "notes": notes}, indent=1)
                                     + "\n")
    import platform as pyplat
    text = HEADER.format(sources=_fmt_sources(srcs), platform=platform_desc, host=pyplat.machine(),
                         simgrid=_simgrid_version())
    for e in entries:
        st = e["traffic"]
        share = st["p2p_bytes"] / st["bytes"] if st["bytes"] else 0.0
        text += (f"| {e['file']} | {e['app']} | {e['ranks']} | {e['case']['what']} | {st['pairs']} | "
                 f"{st['bytes']:.4g} | {share:.1%} | {e['capture']['wall_seconds']:.0f} |\n")
    if notes:
        text += "\n" + "\n\n".join(notes) + "\n"
    (DATA / "PROVENANCE.md").write_text(text)


def load_index() -> tuple[list, dict]:
    f = DATA / "index.json"
    if not f.is_file():
        return [], {}
    d = json.loads(f.read_text())
    return d.get("matrices", []), d.get("sources", {})


def run(cases: list, src_dir: Path, work: Path, timeout: float, keep_traces: bool, say=print) -> int:
    entries, srcs = load_index()
    have = {e["name"]: e for e in entries}
    platform = capture.capture_platform(work)
    pdesc = ("SMPI on a crossbar of 4,096 one-core hosts, one rank per host (the traffic of these programs does "
             "not depend on the network; a torus only made SimGrid slower)")
    failed = []
    for case in cases:
        if case.name in have and (DATA / have[case.name]["file"]).is_file():
            say(f"  {case.name}: in bench/data/apps already")
            continue
        root = sources.locate(src_dir, case.app)
        srcs[case.app] = sources.describe(case.app, root)
        exe = sources.build(case.app, src_dir, work, "smpi", [case.npb] if case.npb else ())[case.target]
        rundir = work / "graphs" / case.name
        try:
            info = capture.run_case(case, exe, rundir, platform, "explicit", timeout, say, extra=FAST_COLLECTIVES)
        except Exception as e:       # one clear line per case that failed; the others go on
            say(f"  {case.name}: FAILED: {str(e).splitlines()[0]}")
            failed.append(case.name)
            continue
        trace = rundir / "trace" / "trace.ti"
        out = DATA / f"{case.name}.mtx"
        DATA.mkdir(parents=True, exist_ok=True)
        if trace.is_file():
            stats = capture.convert_with_stats(trace, out)
            if not stats["pairs"]:
                say(f"  {case.name}: FAILED: the trace holds no traffic")
                out.unlink(missing_ok=True)
                failed.append(case.name)
                continue
            (rundir / "traffic.json").write_text(json.dumps(stats, indent=2) + "\n")
        else:   # converted before, trace removed
            stats = json.loads((rundir / "traffic.json").read_text())
        entry = {"name": case.name, "file": out.name, "app": case.app, "ranks": case.ranks, "case": case.describe(),
                 "traffic": stats, "capture": {k: info[k] for k in ("wall_seconds", "simulated_seconds",
                                                                    "trace_bytes", "date", "compute")},
                 "source": {k: srcs[case.app].get(k) for k in ("origin", "commit", "version", "digest")}}
        have[case.name] = entry
        write_index(list(have.values()), srcs, pdesc)
        if not keep_traces:
            shutil.rmtree(trace.parent, ignore_errors=True)
        say(f"    -> {out.relative_to(DATA.parents[2])} ({stats['pairs']} pairs, {stats['bytes']:.3g} B)", flush=True)
    if failed:
        say(f"{len(failed)} case(s) failed: {', '.join(failed)}")
    return 1 if failed else 0
