"""Running programs on a simulated cluster with SimGrid SMPI: direct execution (optionally
recording a time-independent trace) and trace replay under any placement.

The platform directory comes from `rankmap platform` (slurm/platform.py). Every run
switches off SMPI's network correction factors (they are calibrated for other machines and
would multiply the latencies the platform describes) and cross-traffic, and runs the cores
at the platform's speed; a hostfile (line i = host of rank i) is the placement. Direct
execution of a program whose compute phases are explicit flop counts (bench/workloads) is
deterministic with `compute="explicit"` (SMPI then ignores the measured CPU bursts); a real
application needs `compute="measured"`, whose bursts vary 4-12 % from run to run: compare
placements by replaying one trace (bit-identical on repeat), not by re-executing."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.slurm.platform import Platform
from rankmap.profiler.errors import UserError

SIMULATED = re.compile(r"Simulated time: ([0-9.eE+-]+) seconds")


@dataclass
class SimResult:
    seconds: float          # simulated time of the whole run
    wall: float             # real seconds the simulation took
    stdout: str
    stderr: str
    command: list = field(default_factory=list)


def require() -> str:
    exe = shutil.which("smpirun")
    if not exe:
        raise UserError("smpirun not found: install SimGrid (Debian: apt-get install libsimgrid-dev)")
    return exe


def config(p: Platform, compute: str = "explicit") -> list[str]:
    if compute not in ("explicit", "measured"):
        raise UserError(f"compute must be explicit or measured, not {compute!r}")
    # SMPI's default collective selector: the others crash trace replay in SimGrid 3.32 (a bad free
    # in the replay of allreduce); the traffic model `smpi` (profiler/collectives.py) describes it
    return ["--cfg=smpi/lat-factor:0:1", "--cfg=smpi/bw-factor:0:1", "--cfg=network/crosstraffic:0",
            f"--cfg=smpi/host-speed:{p.core_speed:g}Gf", "--cfg=smpi/display-timing:yes",
            "--cfg=smpi/simulate-computation:" + ("no" if compute == "explicit" else "yes")]


def write_hostfile(hosts: list[str], path: Path) -> Path:
    path.write_text("".join(h + "\n" for h in hosts))
    return path


def read_hostfile(path: Path) -> list[str]:
    """Each rank's host, from a hostfile or a mapping directory, read by the rules evaluate and
    predict use (writers.read_placement): a lax first-word reader made `n0 slots=2` one rank
    here and two there."""
    from rankmap.mapper.writers import read_placement
    return list(read_placement(path).hosts)


def check_hosts(hosts: list[str], p: Platform, where: str) -> None:
    known = set(p.hosts)
    bad = [h for h in hosts if h not in known]
    if bad:
        raise UserError(f"{where}: host {bad[0]} is not a node of the simulated cluster {p.name} "
                        f"({p.prefix}0..{p.prefix}{p.nodes - 1})")
    counts: dict[str, int] = {}
    for h in hosts:
        counts[h] = counts.get(h, 0) + 1
    for i in range(p.nodes):
        h = f"{p.prefix}{i}"
        if counts.get(h, 0) > p.node_cores(i):
            raise UserError(f"{where}: {counts[h]} ranks on {h}, which has {p.node_cores(i)} cores")


PRECISION_RETRY = "--cfg=maxmin/precision:1e-4"     # SimGrid's default is 1e-5


def _run_group(cmd: list[str], timeout: float | None, env: dict) -> subprocess.CompletedProcess:
    """cmd in a process group of its own, the whole group killed on a timeout, Ctrl-C or
    SIGTERM: subprocess.run killed only smpirun (a script), and the simulation it had started
    (smpimain) ran on, orphaned, for as long as the program took."""
    import signal
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.communicate()
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def uncaught(stderr_lines: list[str]) -> str:
    """The text of the exception SimGrid died of ("Uncaught exception std::invalid_argument:
    parse replay failed." and the lines under it), on one line, without its backtrace and
    its "Please contact the Simgrid team" ("" if it died otherwise)."""
    at = next((i for i, ln in enumerate(stderr_lines) if "Uncaught exception" in ln), None)
    if at is None:
        return ""
    out = [stderr_lines[at].split("Uncaught exception", 1)[1].lstrip(" :")]
    for ln in stderr_lines[at + 1:]:
        if ln.startswith("[") or "Current backtrace" in ln or ln.lstrip().startswith("->") or "Please contact" in ln:
            break
        out.append(ln.strip())
    return " ".join(x for x in out if x)


def _smpirun(args: list[str], timeout: float | None, what: str, tmp: str | None = None,
             env: dict | None = None, retry: bool = False) -> SimResult:
    exe = require()
    tmp = tmp or tempfile.mkdtemp(prefix="rankmap-smpi-")
    cmd = [exe] + args
    t0 = time.monotonic()
    try:
        while True:
            # smpirun's -tmpdir is broken in SimGrid 3.32; a private TMPDIR keeps parallel runs apart
            res = _run_group(cmd, timeout, dict(os.environ, **(env or {}), TMPDIR=tmp))
            # SimGrid's max-min solver can stop on a rounding residue just above its precision
            # ("Cannot saturate more a constraint that has no active element"), or crash
            # (SIGSEGV): NPB FT B 128's communication alone on Angara-K1 at x1, block's
            # placement the one, rankmap-b's the other; both ran at the coarser precision the
            # message suggests (a finer one crashed too), so once more with it. The command
            # kept in the result says so. Replays only (retry): a program's own crash is its own.
            solver = "maxmin precision" in res.stderr or res.returncode in (139, -11)
            if res.returncode == 0 or not retry or not solver or PRECISION_RETRY in cmd:
                break
            cmd = cmd + [PRECISION_RETRY]
    except subprocess.TimeoutExpired:
        raise UserError(f"{what}: the simulation did not finish within {timeout:g} s") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    wall = time.monotonic() - t0
    m = SIMULATED.search(res.stderr)
    if "Deadlock detected" in res.stderr:       # SimGrid ends the simulation, exit 0, at the deadlock's time
        raise UserError(f"{what}: SimGrid detected a deadlock (every rank waits on another, e.g. blocking "
                        "receives posted before the sends): the trace cannot be replayed to its end")
    if res.returncode != 0 or not m:
        every = res.stderr.strip().splitlines()
        lines = [ln for ln in every if "[0.000000]" not in ln]        # SimGrid's start-up chatter
        # the cause, above the backtrace (a platform SimGrid refuses says why at time 0)
        why = [ln for ln in every if "CRITICAL" in ln or "ERROR" in ln][:2]
        thrown = uncaught(every)
        if thrown:
            # SimGrid's exception says what it refused on the lines under its first one ("2 items
            # were given on the line... needs 3 mandatory arguments... The full line that was
            # given is: 0 wait"); the tail shown was its backtrace ("-> 6# 0x00007F54... in
            # libsimgrid.so.3.32"), and the line it refused was never named
            raise UserError(f"{what} failed (exit {res.returncode}): SimGrid: {thrown}")
        tail = "\n".join(why + [ln for ln in lines[-6:] if ln not in why])
        raise UserError(f"{what} failed (exit {res.returncode}):\n{tail}")
    return SimResult(seconds=float(m.group(1)), wall=wall, stdout=res.stdout, stderr=res.stderr, command=cmd)


def check_program(program: list[str]) -> None:
    """The program SMPI is to execute exists (a file, or a command on PATH)."""
    if not program:
        raise UserError("no program to run")
    exe = Path(program[0])
    if not (exe.is_file() or shutil.which(program[0])):
        raise UserError(f"{program[0]}: no such program (build it with smpicc)")


def run(program: list[str], p: Platform, platform_dir: Path, hostfile: Path, nranks: int, trace: Path | None = None,
        compute: str = "explicit", timeout: float | None = None, extra: list[str] = (),
        env: dict | None = None) -> SimResult:
    """Execute the program (built with smpicc) on the simulated cluster (env: more
    environment variables; the simulated ranks see them)."""
    check_program(program)
    exe = Path(program[0])
    args = ["-np", str(nranks), "-platform", str(platform_dir / "platform.xml"), "-hostfile", str(hostfile)]
    if trace is not None:
        trace.parent.mkdir(parents=True, exist_ok=True)
        args += ["-trace-ti", f"--cfg=tracing/filename:{trace.absolute()}"]
    args += config(p, compute) + list(extra) + program
    return _smpirun(args, timeout, f"smpirun {exe.name}", env=env)


def replay(trace: Path, p: Platform, platform_dir: Path, hostfile: Path, nranks: int, ideal: bool = False,
           timeout: float | None = None, extra: list[str] = (), variant: str | None = None) -> SimResult:
    """Replay a time-independent trace under a placement (ideal: on the zero-cost network;
    variant: another platform file of the directory, e.g. platform-nocompute.xml)."""
    from rankmap.profiler.smpi_trace import rank_files
    files = rank_files(trace)
    if len(files) != nranks:
        raise UserError(f"{trace}: a trace of {len(files)} ranks cannot be replayed with {nranks}")
    tmp = tempfile.mkdtemp(prefix="rankmap-smpi-")
    # an index with absolute paths (the recorded ones may be relative to wherever smpirun ran),
    # and cleaned copies of the rank files that name MPI_PROC_NULL
    from rankmap.profiler.smpi_trace import without_proc_null
    lines = []
    for f in files:
        try:
            clean = without_proc_null(f.read_bytes())
        except OSError as e:
            raise UserError(f"{f}: {e.strerror}") from None
        if clean is not None:
            f = Path(tmp) / f.name
            f.write_bytes(clean)
        lines.append(f"{f.absolute()}\n")
    index = Path(tmp) / "trace.ti"
    index.write_text("".join(lines))
    xml = platform_dir / (variant or ("platform-ideal.xml" if ideal else "platform.xml"))
    if not xml.exists():
        raise UserError(f"{xml} is missing: rewrite the platform with `rankmap platform ... --force`")
    args = ["-np", str(nranks), "-platform", str(xml), "-hostfile", str(hostfile), "-replay", str(index)]
    # compute actions are replayed only with simulate-computation on (the replayer measures no bursts)
    args += config(p, "measured") + list(extra)
    return _smpirun(args, timeout, f"replay of {trace.name}", tmp, retry=True)
