"""Running `rankmap map --parallel`'s engine (rankmap-ptpart, PT-Scotch) as an MPI job on
the allocation: `srun -n N` inside a Slurm allocation, else `mpirun -np N` on this host
(or the hosts of --hostfile). The engine is built against Open MPI (Debian's PT-Scotch
is); under Slurm it is launched with --mpi=pmix, as Debian's Open MPI needs."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from rankmap.profiler.errors import UserError
from rankmap.slurm import cluster


def engine() -> Path:
    from rankmap.profiler import native
    try:
        return native.artifact("ptpart", "openmpi")
    except UserError:
        raise UserError("--parallel needs PT-Scotch: apt-get install libptscotch-dev (and Open MPI), then rebuild "
                        "rankmap (bash setup.sh, or pip install .)") from None


def launcher(kind: str = "auto") -> str:
    """srun inside a Slurm allocation, else mpirun."""
    if kind == "auto":
        kind = "srun" if cluster.in_allocation() and shutil.which("srun") else "mpirun"
    if kind not in ("srun", "mpirun"):
        raise UserError(f"--parallel-launcher must be auto, srun or mpirun, not {kind!r}")
    return kind


def command(nprocs: int, kind: str, graph: Path, out: Path, imbalance: float, seed: int,
            hostfile: str | None = None) -> list[str]:
    exe = str(engine())
    args = [exe, str(graph), str(out), f"{imbalance:g}", str(int(seed))]
    if kind == "srun":
        cluster.need("srun")
        return ["srun", "-n", str(nprocs), "--mpi=pmix", "-K", "--cpu-bind=none"] + args
    mpirun = shutil.which("mpirun.openmpi") or shutil.which("mpirun")
    if mpirun is None:
        raise UserError("--parallel without Slurm needs Open MPI's mpirun (apt-get install openmpi-bin)")
    cmd = [mpirun, "-np", str(nprocs), "--oversubscribe", "--bind-to", "none"]
    if hostfile:
        cmd += ["--hostfile", hostfile]
    return cmd + args


MAX_PROCESSES = 65536      # PT-Scotch processes of one --parallel job


def runner(nprocs: int, kind: str = "auto", hostfile: str | None = None, console=None, ranks: int | None = None):
    """The function rankmap.mapper.parallel.map_parallel calls to run the engine. ranks: the
    traffic's ranks (the graph's vertices): a process with no vertex has nothing to cut."""
    if nprocs < 1:
        raise UserError(f"--parallel {nprocs}: needs at least one process (e.g. --parallel 4)")
    if nprocs > MAX_PROCESSES:
        raise UserError(f"--parallel {nprocs}: rankmap starts at most {MAX_PROCESSES} processes")
    if ranks is not None and nprocs > ranks:
        raise UserError(f"--parallel {nprocs}: more processes than the traffic's {ranks} ranks; give at most "
                        f"--parallel {ranks} (or map without --parallel: it is for 10^6-10^7 ranks)")
    kind = launcher(kind)

    def run(graph: Path, out: Path, imbalance: float, seed: int) -> str:
        cmd = command(nprocs, kind, graph, out, imbalance, seed, hostfile)
        if console is not None:
            console.print(f"  parallel partitioning: {' '.join(cmd)}")
        env = dict(os.environ)
        # waiting processes yield their CPU: with more processes than CPUs (a shared node, the
        # local test cluster) busy-polling ones starve the working ones (random graphs: 45 min
        # instead of 2)
        env.setdefault("OMPI_MCA_mpi_yield_when_idle", "1")
        if os.geteuid() == 0:              # rankmap's own engine, not the user's program: Open MPI may run it as root
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
            env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, env=env)
        except OSError as e:
            raise UserError(f"`{cmd[0]}` could not run: {e.strerror}") from None
        if res.returncode != 0:
            raise UserError(failure(res.returncode, res.stderr + "\n" + res.stdout))
        return next((ln for ln in res.stdout.splitlines() if ln.startswith("rankmap-ptpart:")), res.stdout.strip())

    return run


def failure(code: int, output: str) -> str:
    """The error for an engine that failed: its first lines, and what a kill by signal 9
    most often is (random 10^7 ranks on one 24 GB host: each of 2 PT-Scotch processes
    reached 9.9 GB, about 250 bytes per edge entry of its share, and one was killed)."""
    msg = [ln.strip() for ln in output.splitlines() if any(c.isalpha() for c in ln)]
    # mpirun's own account of a killed process first, not its "Primary job terminated normally"
    msg.sort(key=lambda ln: "exited on signal" not in ln)
    text = f"the parallel partitioner failed (exit {code}): {' / '.join(msg[:2]) if msg else 'no output'}"
    if code in (137, -9) or "signal 9" in output:
        text += ("; signal 9 is most often the kernel's out-of-memory killer: PT-Scotch needs about 250 bytes "
                 "per edge entry of each process's share, so spread the processes over more nodes")
    return text
