"""Running a case under SimGrid SMPI through rankmap's smpi launcher (one process, every rank)
and recording SMPI's time-independent trace; converting it with `rankmap convert`.

A capture runs in WORK/<kind>/<case>/ (the case's input files are written there, the
program's stdout and the trace land there) and leaves capture.json: what ran, how long, the
simulated time. Rerunning skips a case whose capture.json exists."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from rankmap.profiler.errors import UserError
from rankmap.slurm import platform as plat
from rankmap.slurm import smpi

# The capture cluster: 4,096 one-core hosts on a crossbar (each host its own 100 GB/s FATPIPE
# link, no shared backbone). The traffic of these programs does not depend on the network;
# what does is SimGrid's cost: its max-min solver spends most of a run on links shared by
# many flows (a 512-node torus made LULESH at 1,000 ranks several times slower).
CAPTURE_HOSTS = 4096
CAPTURE_XML = """<?xml version='1.0'?>
<!DOCTYPE platform SYSTEM "https://simgrid.org/simgrid.dtd">
<!-- rankmap bench/real_apps.py: the capture cluster (a crossbar; traffic only) -->
<platform version="4.1">
  <cluster id="capture" prefix="n" suffix="" radical="0-{last}" speed="1Gf" core="1"
           bw="100GBps" lat="0.1us" sharing_policy="FATPIPE" loopback_bw="100GBps" loopback_lat="0.1us"/>
</platform>
"""


def capture_platform(work: Path) -> tuple:
    d = work / "platforms" / "capture-xbar"
    if not (d / "machine.json").is_file():
        # rankmap's directory layout (machine.json names the hosts n0..n4095, one core each), the
        # crossbar as what SMPI simulates
        plat.write(plat.custom("16x16x16", None, 1, None), d, force=True)
        (d / "platform.xml").write_text(CAPTURE_XML.format(last=CAPTURE_HOSTS - 1))
        # replaced on purpose (the capture records traffic; no speed is predicted from it): its
        # sums would refuse the edit
        (d / plat.SUMS).unlink(missing_ok=True)
    return plat.load(d)


# SMPI makes every MPI_Wtime / gettimeofday call a simulation step of 10 ns by default
# (smpi/wtime): miniFE reads its timers ~100,000 times per rank, which kept a 512-rank capture
# busy for an hour, and each call also cuts a compute burst in two in the trace. With 0 the
# timers cost nothing, as in a real run.
NO_TIMER_STEP = ["--cfg=smpi/wtime:0"]


def smpi_options(case) -> list[str]:
    """SMPI options a case needs. "fortran-units": every rank its own copy of libgfortran
    (`smpi/privatize-libs`), for a program whose ranks all open the same file (CloverLeaf:
    gfortran refuses to connect one file to two units of one process, and under SMPI every
    rank shares the process's unit table)."""
    out = []
    for o in case.smpi:
        if o == "fortran-units":
            lib = subprocess.run(["gfortran", "-print-file-name=libgfortran.so.5"], capture_output=True,
                                 text=True).stdout.strip()
            if not lib or not Path(lib).is_file():
                raise UserError("libgfortran.so.5 not found (gfortran -print-file-name)")
            # the path as the dynamic linker names it (normalised, symbolic link kept: not the .so.5.0.0 file)
            out.append(f"--cfg=smpi/privatize-libs:{os.path.normpath(lib)}")
        else:
            out.append(o)
    return out


def check_done(case, rundir: Path) -> None:
    """The program got to its end: every rank's trace ends with MPI_Finalize, and its last
    words are in stdout (or the file it writes)."""
    from rankmap.profiler.smpi_trace import rank_files
    for f in rank_files(rundir / "trace" / "trace.ti"):
        with open(f, "rb") as fh:
            fh.seek(max(0, f.stat().st_size - 200))
            last = fh.read().strip().splitlines()[-1:] or [b""]
        if not last[0].endswith(b" finalize"):
            raise UserError(f"{case.name}: rank {f.name} did not reach MPI_Finalize (its trace ends with "
                            f"{last[0][:60].decode(errors='replace')!r}); see {rundir}/stdout.txt")
    name, pattern = case.done
    files = sorted(rundir.glob(name))
    text = files[-1].read_text(errors="replace") if files else ""
    if pattern and not re.search(pattern, text):
        tail = " | ".join(ln.strip() for ln in text.strip().splitlines()[-4:] if ln.strip())
        raise UserError(f"{case.name}: the program did not finish ({name} has no {pattern!r}); last lines: {tail}")


def _descendants(pid: int) -> list[int]:
    """Every process below pid (children first-born to last, then theirs), from /proc."""
    kids: dict = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
            kids.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(0), []):
            out.append(c)
            todo.append(c)
    return out


@contextlib.contextmanager
def _deadline(timeout: float | None):
    """Kill every process this one started (smpirun and the smpimain it runs, which
    subprocess.run's own timeout left running: it kills smpirun alone) once timeout seconds
    have passed. Yields an Event set when it did."""
    fired = threading.Event()
    if not timeout:
        yield fired
        return

    def kill():
        fired.set()
        for _ in range(3):      # a child forked while we killed its parent: look again
            pids = _descendants(os.getpid())
            if not pids:
                break
            for pid in reversed(pids):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.5)
    timer = threading.Timer(timeout, kill)
    timer.daemon = True
    timer.start()
    try:
        yield fired
    finally:
        timer.cancel()


def run_case(case, exe: Path, rundir: Path, platform: tuple, compute: str, timeout: float,
             say=print, extra=()) -> dict:
    """Execute the case under smpirun with -trace-ti (compute: 'explicit' skips timing the
    program's CPU bursts, for traffic only; 'measured' records them, for replays)."""
    done = rundir / "capture.json"
    if done.is_file():
        return json.loads(done.read_text())
    p, pdir = platform
    if rundir.exists():
        shutil.rmtree(rundir)        # a capture that did not finish: start again
    rundir.mkdir(parents=True)
    for name, text in case.inputs.items():
        (rundir / name).write_text(text)
    hf = smpi.write_hostfile(plat.block_allocation(p, case.ranks), rundir / "hostfile")
    trace = rundir / "trace" / "trace.ti"
    t0 = time.monotonic()
    # compute bursts are timed in wall-clock time: a loaded machine lengthens them, so the
    # load is kept beside the trace (a table can then say what its comm shares mean)
    load_before = os.getloadavg()
    say(f"  capture {case.name}: {case.ranks} ranks under SMPI ({case.what})", flush=True)
    # the timeout is ours (_deadline), not subprocess.run's: that one kills smpirun and leaves
    # smpimain, every rank of the program, running
    with contextlib.chdir(rundir), _deadline(timeout) as timed_out:   # the program reads its inputs from there
        try:
            res = smpi.run([str(exe), *case.args], p, pdir, hf, case.ranks, trace=trace, compute=compute,
                           timeout=None, env={"OMP_NUM_THREADS": "1"},
                           extra=smpi_options(case) + NO_TIMER_STEP + list(extra))
        except UserError:
            if timed_out.is_set():
                raise UserError(f"{case.name}: the simulation did not finish within {timeout:g} s "
                                "(smpirun and smpimain killed)") from None
            raise
    (rundir / "stdout.txt").write_text(res.stdout)
    (rundir / "stderr.txt").write_text(res.stderr[-200_000:])
    check_done(case, rundir)
    size = sum(f.stat().st_size for f in trace.parent.rglob("*") if f.is_file())
    info = {"case": case.describe(), "compute": compute, "simulated_seconds": res.seconds,
            "wall_seconds": round(time.monotonic() - t0, 1), "trace_bytes": size,
            "capture_platform": "a crossbar of 4,096 one-core hosts (traffic only)" if "capture" in pdir.name
            else plat.describe(p), "command": [os.path.basename(res.command[0]), *res.command[1:]],
            "date": time.strftime("%Y-%m-%d"),
            "load_average": {"before": [round(x, 2) for x in load_before],
                             "after": [round(x, 2) for x in os.getloadavg()],
                             "cores": os.cpu_count()}}
    done.write_text(json.dumps(info, indent=2) + "\n")
    say(f"    done in {info['wall_seconds']:.0f} s, trace {size / 1e6:.0f} MB", flush=True)
    return info


def convert_with_stats(trace: Path, out: Path) -> dict:
    """What `rankmap convert TRACE OUT.mtx` does (the product's reader, collectives expanded
    with the smpi model, and its MatrixMarket writer), plus the totals of the traffic: all
    of it, and point-to-point alone (the trace read again with the collectives left out).
    Read from the capture directory, so that the matrix's comment names trace/trace.ti."""
    from rankmap.profiler.formats import read_traffic, write
    with contextlib.chdir(trace.parents[1]):
        rel = trace.relative_to(trace.parents[1])
        full = read_traffic(rel, "smpi", "smpi")
        write(full, out.resolve(), "mtx")
        p2p = read_traffic(rel, "smpi", "none")
    off, offp = full.offdiag(), p2p.offdiag()
    return {"ranks": full.size, "pairs": int(off.nnz), "bytes": float(off.sum()), "p2p_bytes": float(offp.sum()),
            "messages": float(full.msgs.sum()) if full.msgs is not None else None, "notes": list(full.notes)}


_ACT = re.compile(rb"^(\d+) (\S+)(.*)$")
_SENDS = {b"send", b"isend", b"Isend", b"ssend", b"Ssend", b"issend", b"ISsend", b"bsend", b"ibsend"}
_NB_SEND = {b"isend", b"Isend", b"issend", b"ISsend", b"ibsend"}
_RECVS = {b"recv", b"irecv", b"Irecv"}
NOBODY = -333     # SMPI 3.32's trace writes MPI_UNDEFINED for MPI_ANY_SOURCE and MPI_PROC_NULL alike


def any_sources(texts: list) -> list:
    """For each rank, the sources of its MPI_ANY_SOURCE receives, in order (None where the
    receive was from MPI_PROC_NULL: nobody sent it a message that no other receive takes).

    The trace records both as -333. Per (receiver, tag), every sender's messages beyond the
    receives that name it must have gone to the anonymous receives; they are given to them
    in rank order of the senders (the replay needs a source; which of the concurrent
    messages arrived first is not in the trace and changes no byte)."""
    n = len(texts)
    sent: dict = {}       # (dst, tag) -> {src: count}
    named: dict = {}      # (dst, tag) -> {src: count}
    anon: list = [[] for _ in range(n)]   # per rank: tags of its anonymous receives, in order
    for r, text in enumerate(texts):
        for m in re.finditer(rb"^\d+ (\S+) (-?\d+) (-?\d+)", text, re.M):
            act, a1, a2 = m.group(1), int(m.group(2)), int(m.group(3))
            if act in _SENDS and a1 >= 0:
                d = sent.setdefault((a1, a2), {})
                d[r] = d.get(r, 0) + 1
            elif act in _RECVS:
                if a1 == NOBODY:
                    anon[r].append(a2)
                elif a1 >= 0:
                    d = named.setdefault((r, a2), {})
                    d[a1] = d.get(a1, 0) + 1
    out = []
    for r in range(n):
        pool = {}
        srcs = []
        for tag in anon[r]:
            if tag not in pool:
                left = sent.get((r, tag), {})
                take = named.get((r, tag), {})
                pool[tag] = [[s, c - take.get(s, 0)] for s, c in sorted(left.items()) if c > take.get(s, 0)]
            q = pool[tag]
            while q and q[0][1] == 0:
                q.pop(0)
            if q:
                q[0][1] -= 1
                srcs.append(q[0][0])
            else:
                srcs.append(None)
        out.append(srcs)
    return out


def _clean_rank(text: bytes, anon_src: list = ()) -> tuple[bytes, int, int]:
    """One rank's actions as SimGrid 3.32's replay can run them, and fast: returns the text,
    the waits dropped and the compute actions merged.

    Anonymous receives: a receive from -333 gets the source any_sources() found for it (a
    wait on it, `wait -333 ...`, the same source); one from MPI_PROC_NULL stays as it is
    (the product's replay drops such actions).

    Waits: the replay keeps a rank's pending requests in a map keyed by (source,
    destination, tag); `waitall` waits for all of them and empties it, and a `wait` that
    finds the map empty aborts ("action wait not preceded by any irecv or isend") where the
    traced program waited on a request the replay had already completed in a waitall
    (LULESH: MPI_Waitall on its sends, then MPI_Wait on each receive). Such a wait has
    nothing left to wait for: dropping it changes no message and no time. The map is
    emulated exactly (insertion keeps the first request of a key, as
    std::unordered_map::insert; actions with MPI_PROC_NULL are not in it).

    waitAny: SimGrid 3.32 records MPI_Waitany as `waitAny COUNT` (the array's length, not
    the request it completed) and its replay has no such action ("Replay Error: action waitAny
    is unknown": miniAMR waits on its halo receives and sends with MPI_Waitany). Each becomes
    a `wait` on one pending request: the oldest pending receive, or the oldest pending send
    when no receive is pending (miniAMR waits on its receives first, then on its sends). Which
    of the array's requests completed first is not in the trace: the replay waits for them in
    the order they were posted. No message and no byte changes; a waitAny that finds no
    pending request is dropped (counted with the waits).

    Compute: SMPI ends a compute burst at every MPI call, MPI_Wtime included, so a program
    that reads its timers often (miniFE: 100,000 bursts per rank) gives runs of `compute`
    actions with nothing between them; one action of their summed flops is the same work
    for the replay, at a fraction of its cost."""
    pending: dict = {}    # the replay's map of pending requests, in posting order: key -> receive?
    out = []
    dropped = merged = 0
    flops = None          # the run of compute actions being summed
    me_c = b"0"
    anon = iter(anon_src)
    waiting: dict = {}    # tag -> sources given to anonymous irecvs not yet waited for

    def flush():
        nonlocal flops
        if flops is not None:
            out.append(me_c + b" compute " + repr(flops).encode())
            flops = None
    for line in text.split(b"\n"):
        m = _ACT.match(line)
        if not m:
            flush()
            out.append(line)
            continue
        me, act, rest = int(m.group(1)), m.group(2), m.group(3).split()
        if act == b"compute" and len(rest) == 1:
            if flops is None:
                flops, me_c = float(rest[0]), m.group(1)
            else:
                flops += float(rest[0])
                merged += 1
            continue
        flush()
        if act in _RECVS and len(rest) >= 2 and int(rest[0]) == NOBODY:
            src = next(anon, None)
            if src is not None:
                rest[0] = str(src).encode()
                line = b" ".join([m.group(1), act] + rest)
                if act != b"recv":
                    waiting.setdefault(int(rest[1]), []).append(src)
        elif act == b"wait" and len(rest) >= 3 and int(rest[0]) == NOBODY and waiting.get(int(rest[2])):
            rest[0] = str(waiting[int(rest[2])].pop(0)).encode()
            line = b" ".join([m.group(1), act] + rest)
        if act == b"waitAny":
            if not pending:
                dropped += 1
                continue
            key = next((k for k, rcv in pending.items() if rcv), next(iter(pending)))
            del pending[key]
            out.append(b" ".join([m.group(1), b"wait"] + [str(x).encode() for x in key]))
            continue
        if act in _NB_SEND and len(rest) >= 2 and int(rest[0]) != NOBODY:
            pending.setdefault((me, int(rest[0]), int(rest[1])), False)
        elif act in (b"irecv", b"Irecv") and len(rest) >= 2 and int(rest[0]) != NOBODY:
            pending.setdefault((int(rest[0]), me, int(rest[1])), True)
        elif act == b"wait" and len(rest) >= 3:
            if not pending:
                dropped += 1
                continue
            pending.pop((int(rest[0]), int(rest[1]), int(rest[2])), None)
        elif act == b"waitall":
            pending.clear()
        out.append(line)
    flush()
    return b"\n".join(out), dropped, merged


def replayable(trace: Path) -> tuple[Path, int]:
    """A trace SimGrid 3.32 can replay, fast: trace/replay.ti, naming a cleaned copy of each
    rank file that needed one (see _clean_rank) and the original of the others. Returns the
    index and the number of waits dropped."""
    from rankmap.profiler.smpi_trace import rank_files
    index = trace.parent / "replay.ti"
    note = trace.parent / "replay.json"
    if index.is_file() and note.is_file():
        return index, json.loads(note.read_text())["dropped_waits"]
    d = trace.parent / "replay.ti_files"
    d.mkdir(exist_ok=True)
    files = rank_files(trace)
    texts = [f.read_bytes() for f in files]
    srcs = any_sources(texts)
    lines, total, merged, resolved = [], 0, 0, 0
    for f, text, anon in zip(files, texts, srcs):
        new, dropped, m = _clean_rank(text, anon)
        resolved += sum(x is not None for x in anon)
        if new != text:
            total += dropped
            merged += m
            f = d / f.name
            f.write_bytes(new)
        lines.append(f"{f.resolve()}\n")
    index.write_text("".join(lines))
    note.write_text(json.dumps({"dropped_waits": total, "merged_computes": merged,
                                "any_source_receives": resolved}) + "\n")
    return index, total
