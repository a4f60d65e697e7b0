"""Run a program under the PMPI profiler (`rankmap profile`).

The launcher's own way of forwarding environment is used so that only the MPI
processes preload the library (mpirun itself or srun must not load libmpi):
Open MPI `-x VAR` (in every app context of an MPMD line `a : b`), MPICH Hydra `-genv VAR
VALUE`, Slurm `--export=ALL,VAR=VALUE`. A program linked with the other MPI than its
launcher's is refused before it starts; an LD_PRELOAD the command line sets itself is kept,
after the profiler; an Open MPI appfile is refused (its contexts cannot be given -x)."""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rankmap.profiler import native
from rankmap.profiler.errors import UserError

LAUNCHERS = ("openmpi", "mpich", "srun", "env")


@dataclass
class ProfileRun:
    directory: Path
    exit_code: int
    seconds: float
    launcher: str
    mpi: str
    created: bool = True     # the directory was made for this run (not an empty one the user had)
    run_id: str = ""


def launcher_kind(argv0: str) -> str:
    """openmpi | mpich | srun from the launcher's name (following Debian's alternatives)."""
    name = os.path.basename(argv0)
    if name == "srun":
        return "srun"
    if name in ("orterun", "mpirun.openmpi", "mpiexec.openmpi", "prterun"):
        return "openmpi"
    if name in ("mpirun.mpich", "mpiexec.mpich", "mpiexec.hydra"):
        return "mpich"
    if name in ("mpirun", "mpiexec"):
        path = shutil.which(argv0)
        real = os.path.basename(os.path.realpath(path)) if path else ""
        if "mpich" in real or "hydra" in real:
            return "mpich"
        if "openmpi" in real or "orterun" in real or "prterun" in real:
            return "openmpi"
        return "openmpi"
    raise UserError(f"`{argv0}` is not a launcher rankmap knows (mpirun/mpiexec of Open MPI or MPICH, srun); "
                    "use --launcher env to preload through the environment of any command")


def program_mpi(argv: list[str]) -> str | None:
    """MPI implementation the program is linked against (from its ELF DT_NEEDED), if found."""
    found = _linked_mpi(argv)
    return found[0] if found else None


# sonames that say which MPI without doubt: MPICH's own library, and Open MPI's since 3.0
# (libmpi.so.12 is MPICH's ABI, and also old Open MPI 1.10's: not certain)
CERTAIN_SONAMES = {"libmpich.so": "mpich", "libmpi.so.40": "openmpi"}


def _linked_mpi(argv: list[str]) -> tuple[str, str | None] | None:
    """(implementation, the soname when it says so without doubt) of the program's MPI."""
    for tok in argv[1:]:
        if tok.startswith("-"):
            continue
        path = tok if os.sep in tok else shutil.which(tok)
        if not path or not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=False).stdout
        except OSError:
            continue
        names = re.findall(r"Shared library: \[([^\]]+)\]", out)
        for so in names:
            for prefix, impl in CERTAIN_SONAMES.items():
                if so.startswith(prefix):
                    return impl, so
        if any("libmpich" in so for so in names) or "libmpich" in out:
            return "mpich", None
        if any(so.startswith("libmpi.so.12") for so in names):
            return "mpich", None              # MPICH's ABI (Intel MPI, MPICH's libmpi alias)
        if "libmpi.so" in out:
            return "openmpi", None
    return None


def srun_mpi_option(mpi: str) -> str:
    """Slurm's PMI plugin for an MPI: Debian's Open MPI speaks PMIx, its MPICH only PMI-2
    (under --mpi=pmix every MPICH process would start as a one-rank job)."""
    return "--mpi=pmi2" if mpi == "mpich" else "--mpi=pmix"


def _user_preload(argv: list[str], kind: str) -> tuple[list[str], str | None]:
    """The command without the LD_PRELOAD it sets itself (Open MPI `-x LD_PRELOAD=V`, Hydra
    `-genv`/`-env LD_PRELOAD V`), and that value: given after the profiler's on the same line,
    it replaced it, and no rank was profiled. The profiler's goes first, the user's after it."""
    out, value, i = [], None, 0
    while i < len(argv):
        a = argv[i]
        if kind == "openmpi" and a in ("-x", "--x") and i + 1 < len(argv) and argv[i + 1].startswith("LD_PRELOAD"):
            name, eq, v = argv[i + 1].partition("=")
            if name == "LD_PRELOAD":
                value = v if eq else os.environ.get("LD_PRELOAD", "")
                i += 2
                continue
        if kind == "mpich" and a in ("-genv", "-env") and i + 2 < len(argv) and argv[i + 1] == "LD_PRELOAD":
            value = argv[i + 2]
            i += 3
            continue
        out.append(a)
        i += 1
    return out, value


def _with_env(argv: list[str], kind: str, env: dict[str, str], impl_for_srun: str | None = None) -> list[str]:
    argv, theirs = _user_preload(argv, kind)
    if theirs and "LD_PRELOAD" in env:
        env = {**env, "LD_PRELOAD": env["LD_PRELOAD"] + ":" + theirs}
    head, tail = argv[:1], argv[1:]
    if kind == "openmpi":
        if any(a in ("--app", "-app") or a.startswith("--app=") for a in tail):
            # each appfile line is an app context of its own, and -x holds for one context:
            # no rank got the profiler
            raise UserError("an Open MPI appfile (--app): its app contexts would not get the profiler "
                            "(mpirun's -x holds for one context); give them on the command line instead: "
                            "rankmap profile -- mpirun -np 2 ./a : -np 2 ./b")
        opts = [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
        # an MPMD line (`-np 2 ./a : -np 2 ./b`): Open MPI's -x holds for its own app context
        # only, and the ranks after a ':' ran unprofiled
        out = head + opts
        for a in tail:
            out.append(a)
            if a == ":":
                out += opts
        return out
    elif kind == "mpich":
        opts = [a for k, v in env.items() for a in ("-genv", k, v)]
    elif kind == "srun":
        # a value with a comma (--out 'run,2') goes by the launcher's own environment, which
        # run_profile sets and --export=ALL hands on (srun_exports)
        opts = ["--export=ALL," + ",".join(f"{k}={v}" for k, v in srun_exports(env)[0].items())]
        if impl_for_srun and not any(a == "--mpi" or a.startswith("--mpi=") for a in tail):
            opts.append(srun_mpi_option(impl_for_srun))
    else:
        opts = []
    return head + opts + tail


def srun_exports(variables: dict) -> tuple[dict, dict]:
    """(what srun's --export=ALL,K=V,... can pass, what goes in srun's own environment instead).
    srun splits the list at every comma (quotes are kept as part of the value): a value that
    holds one reached the tasks cut there, RANKMAP_COLL_ORDER=/data/map,v2/collective-order.txt
    as /data/map ("does not list every rank; ordering by nodes instead": the collectives ignored
    the mapping) and RANKMAP_PROFILE_DIR as another directory. --export=ALL hands srun's own
    environment to the tasks; LD_PRELOAD alone must not be there (srun would load it)."""
    own = {k: v for k, v in variables.items() if "," in v and k != "LD_PRELOAD"}
    if "," in variables.get("LD_PRELOAD", ""):
        raise UserError(f"LD_PRELOAD={variables['LD_PRELOAD']}: a library path with a comma, which srun's --export "
                        "cannot pass (it splits its list at commas); install rankmap (or the library) under a "
                        "path without one")
    return {k: v for k, v in variables.items() if k not in own}, own


def new_run_dir(out: str | None, option: str = "--out") -> Path:
    """The run directory: new, or an existing empty one (an earlier run is never overwritten);
    never the current directory or one of its parents (rankmap.profiler.outputs)."""
    from rankmap.profiler import outputs
    if out is None:
        out = "rankmap-profile-" + datetime.now().strftime("%Y%m%d-%H%M%S")
    return outputs.new_dir(out, option, "profile")


def run_profile(command: list[str], out: str | None = None, launcher: str | None = None, mpi: str | None = None,
                flush_seconds: float | None = None, extra_env: dict[str, str] | None = None,
                timeout: float | None = None) -> ProfileRun:
    if not command:
        raise UserError("give the launcher and program after --, e.g. rankmap profile -- mpirun -np 8 ./app")
    kind = launcher or launcher_kind(command[0])
    if kind not in LAUNCHERS:
        raise UserError(f"unknown launcher kind {kind!r}; choose one of {', '.join(LAUNCHERS)}")
    found = _linked_mpi(command)
    linked = found[0] if found else None
    names = {"openmpi": "Open MPI", "mpich": "MPICH"}
    if mpi is not None and found and found[1] and mpi != linked:
        # the other MPI's profiler in the process: two MPI libraries, each rank died of SIGSEGV
        # and the run said only "no rank wrote profile data"
        raise UserError(f"--mpi {mpi}: the program is linked with {names[linked]} ({found[1]}); its ranks would "
                        f"load {names[mpi]}'s profiler beside it and crash. Leave --mpi out, or give --mpi {linked}")
    if mpi is None and kind in ("openmpi", "mpich") and linked and linked != kind:
        # each process would load two MPI libraries (the profiler's and the program's) and die,
        # or run as one-rank jobs: say which does not match
        raise UserError(f"the program is linked with {names[linked]} but {command[0]} is {names[kind]}'s launcher; "
                        f"start it with {names[linked]}'s (e.g. {'mpirun.openmpi' if linked == 'openmpi' else 'mpirun.mpich'})")
    impl = mpi or (kind if kind in ("openmpi", "mpich") else None) or linked or native.default_mpi()
    if impl not in native.MPI_NAMES:
        raise UserError(f"unknown MPI implementation {impl!r}; choose openmpi or mpich")
    lib = native.artifact("profiler", impl)
    existed = out is not None and Path(out).is_dir()
    directory = new_run_dir(out)
    run_id = datetime.now().strftime("%Y%m%d%H%M%S") + "-" + uuid.uuid4().hex[:8]
    preload = str(lib) + (":" + os.environ["LD_PRELOAD"] if os.environ.get("LD_PRELOAD") else "")
    env_tool = {"LD_PRELOAD": preload, "RANKMAP_PROFILE_DIR": str(directory), "RANKMAP_PROFILE_RUN_ID": run_id}
    if flush_seconds is not None:
        env_tool["RANKMAP_PROFILE_FLUSH_SECONDS"] = str(flush_seconds)
    env_tool.update(extra_env or {})
    argv = _with_env(command, kind, env_tool, impl)
    env = dict(os.environ)
    if kind == "env":
        env.update(env_tool)
    else:  # the launcher forwards them; it must not preload the profiler itself
        env.update({k: v for k, v in env_tool.items() if k != "LD_PRELOAD"})
    record = {"run_id": run_id, "command": command, "argv": argv, "launcher": kind, "mpi": impl,
              "profiler_library": str(lib), "host": socket.gethostname(), "cwd": os.getcwd(),
              "started": datetime.now().isoformat(timespec="seconds"), "exit_code": None}
    _write_json(directory / "run.json", record)
    t0 = time.monotonic()
    try:
        code = run_command(argv, env, timeout)
    except FileNotFoundError:
        code = 127
        record["error"] = f"{argv[0]}: command not found"
    except OSError as e:
        # a directory, a file without the execute bit or not a program: an internal error
        # (PermissionError, 'Exec format error') that left the run directory behind
        code = 126
        record["error"] = f"{argv[0]}: cannot be run ({e.strerror}; is it a program?)"
    if code == TIMED_OUT:
        record["timed_out"] = True
    seconds = time.monotonic() - t0
    record.update(exit_code=code, seconds=round(seconds, 3), finished=datetime.now().isoformat(timespec="seconds"))
    try:
        _write_json(directory / "run.json", record)
    except UserError:
        raise UserError(f"{directory}: the run ended (exit {code}) but its record (run.json) could not be completed "
                        "(no space, or no permission, on that file system): the profile is incomplete; free space, "
                        "or profile to another --out, and run again") from None
    res = ProfileRun(directory=directory, exit_code=code, seconds=seconds, launcher=kind, mpi=impl,
                     created=not existed, run_id=run_id)
    if record.get("error"):
        gone = discard_empty_run(res)
        raise UserError(record["error"] + (f" (nothing was recorded: {directory} was removed, so the same --out can "
                                           "be used again)" if gone else ""))
    return res


def discard_empty_run(res: ProfileRun) -> bool:
    """Remove a run directory in which no rank wrote anything (the launcher failed at once,
    the program was not found or is not an MPI program): it holds only rankmap's run.json
    and marker, and a run directory is never reused, so it refused the same command, fixed,
    until the user deleted it. Anything else in it (a rank's data) keeps it. True when
    removed."""
    from rankmap.profiler.outputs import MARKER
    d = Path(res.directory)
    ours = {"run.json", MARKER.format(kind="profile")}
    try:
        if {f.name for f in d.iterdir()} - ours:
            return False
        for name in ours:
            (d / name).unlink(missing_ok=True)
        if res.created:
            d.rmdir()
    except OSError:
        return False
    return True


TIMED_OUT = 124


def run_command(argv: list[str], env: dict | None = None, timeout: float | None = None) -> int:
    """Run argv in its own process group; on timeout or Ctrl-C the whole group is
    terminated (a launcher's orphaned ranks would otherwise keep spinning)."""
    proc = subprocess.Popen(argv, env=env, start_new_session=True)
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        return TIMED_OUT
    except KeyboardInterrupt:
        _kill_group(proc)
        return 130


def _kill_group(proc: subprocess.Popen) -> None:
    for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _write_json(path: Path, obj) -> None:
    from rankmap.profiler import outputs
    with outputs.io_errors(path):
        tmp = path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(obj, indent=2) + "\n")
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
