"""`rankmap tune-collectives`: time the MPI library's collectives and rankmap's kernels with
one harness (bench/coll_bench.c) on the machine at hand — a simulated cluster (SMPI, the
kernels linked in) or real MPI (the kernels preloaded) — and write the size table the
kernels read (RANKMAP_COLL_TUNING). A kernel replaces the library at a size only when it is
faster by a margin (10 % by default): a tie is not worth leaving the library for."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from rankmap.profiler import native
from rankmap.profiler.errors import UserError

KERNELS = {
    "allreduce": ["ring", "ring1d", "recdbl"],
    "reduce": ["kchain", "kchain-adaptive", "chain", "binomial", "rsg"],
    "bcast": ["chain", "scatter-allgather"],
}
DEFAULT_SIZES = [8, 64, 1024, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20]
OVERHEAD_US = 0.5   # CPU time to send and to receive one message, as in the SMPI study of the notes


def overhead_cfg(us: float) -> list[str]:
    """SMPI's per-message send/receive overhead (without it a root that receives from many
    ranks at once pays nothing for it, and chains and trees look alike)."""
    return [f"--cfg=smpi/os:0:{us * 1e-6:g}:0", f"--cfg=smpi/or:0:{us * 1e-6:g}:0"] if us > 0 else []


def parse_output(stdout: str, what: str) -> dict[int, float]:
    """coll_bench's lines `bytes median min max check` -> {bytes: median us}."""
    res = {}
    for ln in stdout.splitlines():
        if ln and not ln.startswith("#"):
            parts = ln.split()
            if len(parts) != 5:
                continue
            if parts[4] != "ok":
                raise UserError(f"{what}: wrong result at {parts[0]} B")
            res[int(parts[0])] = float(parts[1])
    if not res:
        raise UserError(f"{what}: the harness printed no timings")
    return res


def time_smpi(op: str, sizes: list[int], p, platform_dir: Path, hostfile: Path, nranks: int, env: dict,
              extra: list[str] = (), iters: int = 1, overhead_us: float = OVERHEAD_US) -> dict[int, float]:
    """One side on the simulated cluster (local sums free, so one repetition is exact)."""
    extra = overhead_cfg(overhead_us) + list(extra)
    from rankmap.slurm import smpi
    exe = str(native.artifact("coll_bench", "smpi"))
    r = smpi.run([exe, "-o", op, "-l", ",".join(map(str, sizes)), "-i", str(iters), "-w", "1"], p, platform_dir,
                 hostfile, nranks, extra=list(extra), env=env)
    return parse_output(r.stdout, f"{op} {env.get('RANKMAP_COLL')} {' '.join(extra)}")


def time_mpi(op: str, sizes: list[int], mpi: str, nranks: int, env: dict, iters: int = 20) -> dict[int, float]:
    """One side under real MPI (mpirun / mpiexec on this host), the kernels preloaded."""
    exe = str(native.artifact("coll_bench", mpi))
    env = dict(env, LD_PRELOAD=str(native.artifact("collectives", mpi)))
    if mpi == "openmpi":
        cmd = ["mpirun.openmpi", "--oversubscribe", "-np", str(nranks)]
        cmd += [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
    else:
        cmd = ["mpiexec.mpich", "-n", str(nranks)] + [a for k, v in env.items() for a in ("-genv", k, v)]
    if not shutil.which(cmd[0]):
        raise UserError(f"{cmd[0]} not found")
    cmd += [exe, "-o", op, "-l", ",".join(map(str, sizes)), "-i", str(iters), "-w", "2"]
    res = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **env), timeout=3600)
    if res.returncode != 0:
        raise UserError(f"{' '.join(cmd[:4])} ... (timing {op}): exit {res.returncode}: {res.stderr.strip()[-500:]}")
    return parse_output(res.stdout, op)


def choose(times: dict[str, dict[int, float]], sizes: list[int], margin: float) -> list[tuple[int, str]]:
    """Per size, the fastest kernel when it beats the library ("lib") by the margin; the
    rules are the sizes where the choice changes (the first one from 0), from the smallest size
    up whatever order the sizes were given in: `--sizes 1048576,8` made "from 0 the 1 MB
    choice, from 8 B the 8 B one", the table upside down, without a word."""
    rules: list[tuple[int, str]] = []
    for b in sorted(set(sizes)):
        lib = times["lib"][b]
        best = min((k for k in times if k != "lib"), key=lambda k: times[k][b], default=None)
        pick = best if best is not None and times[best][b] * (1 + margin) <= lib else "lib"
        if not rules or rules[-1][1] != pick:
            rules.append((0 if not rules else b, pick))
    return rules


TABLE_HEAD = "# rankmap collective tuning"


def tune(ops: list[str], sizes: list[int], margin: float, out, measure, say) -> dict:
    """measure(op, env) -> {bytes: us}; writes the table (`out`: a path or a checked output,
    rankmap.profiler.outputs.Target) and returns every timing."""
    from rankmap.profiler import outputs
    target = out if isinstance(out, outputs.Target) else outputs.target_file(out, "--out", True)
    for op in ops:
        if op not in KERNELS:
            raise UserError(f"unknown operation {op!r}; choose among {', '.join(KERNELS)}")
    lines = [f"{TABLE_HEAD}: a kernel where it is >= {margin:.0%} faster than the library",
             "# <operation> <from bytes> <kernel>"]
    everything = {}
    for op in ops:
        if op not in KERNELS:
            raise UserError(f"unknown operation {op!r}; choose among {', '.join(KERNELS)}")
        times = {"lib": measure(op, {"RANKMAP_COLL": "off"})}
        say(f"{op}: library timed")
        for k in KERNELS[op]:
            times[k] = measure(op, {"RANKMAP_COLL": "force", f"RANKMAP_COLL_{op.upper()}": k})
            say(f"{op}: {k} timed")
        rules = choose(times, sizes, margin)
        lines += [f"{op} {b} {k}" for b, k in rules]
        everything[op] = {"times_us": times, "rules": rules}
        say(f"{op}: " + ", ".join(f"from {b} B {k}" for b, k in rules))
    outputs.write_file(target, "\n".join(lines) + "\n")
    return everything
