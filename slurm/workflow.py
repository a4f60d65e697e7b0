"""`rankmap run`: profile, map, relaunch — the two-pass workflow on Slurm — and
`rankmap sbatch`, which writes the same as a batch script.

Inside an allocation (salloc/sbatch) both passes are job steps of it and the mapping uses
its nodes. Outside one, pass 1 is an srun that creates its own job; pass 2 requests a new
allocation made of exactly the mapping's hosts (srun -m arbitrary with SLURM_HOSTFILE).
Mode whole-cluster maps onto the best of the idle nodes instead of the profiled ones."""
from __future__ import annotations

import json
import os
import shlex
import sys
import time
from datetime import datetime
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rankmap.mapper import spec as mspec
from rankmap.mapper.mapping import run_map
from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import read_traffic
from rankmap.profiler.launch import run_profile
from rankmap.profiler.rundir import read_run
from rankmap.slurm import cluster, relaunch
from rankmap.slurm.nodes import machine_file_alone, resolve as resolve_machine


def _new_dir(out: str | None) -> Path:
    from rankmap.profiler import outputs
    return outputs.new_dir(out if out is not None else "rankmap-run-" + datetime.now().strftime("%Y%m%d-%H%M%S"),
                           "--out", "run")


def _discard(base: Path, res1, existed: bool) -> bool:
    """Remove a workflow directory whose pass 1 recorded nothing (its profile directory holds
    only rankmap's files) and that holds nothing else yet. True when removed."""
    from rankmap.profiler.launch import discard_empty_run
    from rankmap.profiler.outputs import MARKER
    ours = {"workflow.json", MARKER.format(kind="run")}
    try:
        if {f.name for f in base.iterdir()} - ours - {res1.directory.name} or not discard_empty_run(res1):
            return False
        for name in ours:
            (base / name).unlink(missing_ok=True)
        if not existed:
            base.rmdir()
    except OSError:
        return False
    return True


def _hosts_from_profile(prof) -> list[str]:
    seen = []
    for r in prof.ranks:
        if r is not None and r.hostname not in seen:
            seen.append(r.hostname)
    return seen


def run_workflow(app: list[str], ntasks: int | None, nodes: int | None, out: str | None, mode: str, mopts: dict,
                 algorithm: str, seed: int, model: str, time_minutes: int | None, mpi: str | None,
                 preload: list[str] | None, srun_args: list[str], console: Console, verify: bool = False) -> int:
    if not app:
        raise UserError("give the program after --, e.g. rankmap run -n 8 -- ./app args")
    if out is not None:             # the output path first, before anything asks Slurm (created below)
        from rankmap.profiler import outputs
        outputs.target_dir(out, "--out", "run", new=True)
    if mopts.get("machine_file"):   # before pass 1: options it would ignore are an error now, not after a run
        machine_file_alone(mopts)
    relaunch.check_srun_args(srun_args)   # pass 2's srun refuses them: said now, not after pass 1 and the map
    cluster.need("srun")
    inside = cluster.in_allocation()
    if not inside:
        cluster.query(["sinfo", "-h", "-o", "%N"])    # a cluster to talk to, before anything is written
    if inside and mode == "whole-cluster":
        raise UserError("mode whole-cluster requests a new allocation on the chosen nodes: run it outside "
                        "salloc/sbatch (or use mode same-allocation)")
    ntasks = ntasks or (cluster.allocation_ntasks() if inside else None)
    if not ntasks:
        raise UserError("how many ranks? pass -n/--ntasks")
    # before anything is written: a pass 1 srun refuses, or a pass 2 that cannot run
    over = []
    if not any(a in ("-O", "--overcommit") for a in srun_args):
        cpus = cluster.step_cpus(None if inside else nodes)
        if cpus is not None and ntasks > cpus:
            where = "this allocation" if inside else f"{nodes} node(s)" if nodes else "the cluster"
            if (mopts.get("oversubscribe") or 1) == 1 and not mopts.get("machine_file"):
                raise UserError(f"{ntasks} ranks but pass 1 gets at most {cpus} CPUs ({where}); pass --oversubscribe "
                                f"{-(-ntasks // cpus)} to run and map several ranks on a core"
                                f"{'' if inside or nodes is None else ', or more nodes (-N)'}")
            if not inside and mode == "same-allocation":
                # the mapping onto pass 1's nodes would share cores, which srun binds only inside
                # an allocation of whole nodes (relaunch.srun_plan): said now, not after pass 1
                raise UserError(f"{ntasks} ranks on at most {cpus} CPUs ({where}) put several ranks on a core, which "
                                "Slurm binds only inside an allocation of whole nodes: salloc "
                                f"{f'-N {nodes} ' if nodes else ''}--exclusive rankmap run -n {ntasks} ... (or "
                                "--mode whole-cluster, which maps onto the idle nodes)")
            # as pass 2 gets it for a mapping with several ranks on a core: srun starts more tasks
            # than CPUs only with --overcommit (pass 1 profiles; its placement is Slurm's)
            over = ["--overcommit"]
    existed = out is not None and Path(out).is_dir()
    base = _new_dir(out)
    record = {"app": app, "ntasks": ntasks, "mode": mode, "inside_allocation": inside,
              "job": os.environ.get("SLURM_JOB_ID"), "status": "running", "passes": {}}
    common = ["-K"] + (["-t", str(time_minutes)] if time_minutes else [])

    def save():   # replaced atomically: a reader sees the last state, never half a file
        from rankmap.profiler import outputs
        outputs.write_file(outputs.Target(base / "workflow.json", "--out", "file", True),
                           json.dumps(record, indent=2) + "\n")

    # ---- pass 1: profile
    cmd1 = ["srun", *common, "-n", str(ntasks)] + (["-N", str(nodes)] if nodes and not inside else []) + over + \
        list(srun_args) + list(app)
    console.rule("[bold]pass 1: profile")
    console.print(" ".join(shlex.quote(a) for a in cmd1))
    yield_env = {"OMPI_MCA_mpi_yield_when_idle": "1"} if over and "OMPI_MCA_mpi_yield_when_idle" not in os.environ \
        else None                     # several ranks on a CPU: as relaunch.srun_plan
    res1 = run_profile(cmd1, out=str(base / "profile"), launcher="srun", mpi=mpi, extra_env=yield_env)
    record["passes"]["profile"] = {"exit_code": res1.exit_code, "seconds": round(res1.seconds, 3),
                                   "directory": str(res1.directory)}
    save()
    console.print(f"pass 1: exit {res1.exit_code} after {res1.seconds:.2f} s; data in {res1.directory}")
    prof = None
    try:
        prof = read_run(res1.directory)
    except UserError as e:
        if res1.exit_code == 0:
            raise
        console.print(f"  ({e})")
    if prof is None and res1.exit_code != 0 and _discard(base, res1, existed):
        # nothing was recorded (srun refused the step, the program did not start): the
        # workflow directory, never reused, refused the same command, fixed, until deleted
        raise UserError(f"pass 1 (profile) failed with exit code {res1.exit_code} after {res1.seconds:.2f} s, before "
                        f"any rank recorded anything (see srun's message above); {base} was removed, so the same "
                        "--out can be used again")
    if res1.exit_code != 0 or prof is None or not prof.complete:
        why = "; ".join(prof.partial_reasons()) if prof is not None else "no profile data"
        record["status"] = f"failed: pass 1 (profile) exit code {res1.exit_code}"
        save()
        raise UserError(f"pass 1 (profile) failed with exit code {res1.exit_code} after {res1.seconds:.2f} s "
                        f"({why}); stopping. Its data is kept in {res1.directory}")

    # ---- map
    console.rule("[bold]map")
    if mode == "whole-cluster":
        idle = cluster.idle_nodes()
        hosts = idle
        if mopts.get("machine_file"):
            known = mspec.load(mopts["machine_file"])["hosts"]
            hosts = [h for h in known if h in idle]
        if not hosts:
            raise UserError("mode whole-cluster: no idle node is available")
    else:
        hosts = cluster.allocation_nodes() if inside else _hosts_from_profile(prof)
    if mopts.get("machine_file"):
        spec = mspec.load(mopts["machine_file"])
        if mode == "whole-cluster":
            spec = mspec.restrict(spec, hosts)
    else:   # node internals: --node-topology, else what Slurm says
        spec = resolve_machine(dict(mopts, nodes=",".join(hosts)))
    t0 = time.monotonic()
    rep = run_map(read_traffic(res1.directory, "profile", model), spec,
                  algorithm=algorithm, seed=seed, tries=None, time_limit=None, refine=True, fill="packed",
                  mode=mode, out=str(base / "mapping"), force=False, plots_on=True, console=console)
    record["mapping"] = {"directory": str(base / "mapping"), "seconds": round(time.monotonic() - t0, 3),
                         "nodes": rep["nodes"], "chosen": rep["chosen"]}
    save()

    # ---- pass 2: relaunch on the mapping
    console.rule("[bold]pass 2: relaunch")
    task_env = None
    if verify:   # pass 2 runs under the profiler too: it records where every rank really ran
        import uuid
        from rankmap.profiler import native
        # the kernels first: a call they hand on reaches the profiler, and the profiler sees their messages
        preload = list(preload or []) + [str(native.artifact("profiler", mpi or res1.mpi))]
        task_env = {"RANKMAP_PROFILE_DIR": str(base / "relaunch-profile"),
                    "RANKMAP_PROFILE_RUN_ID": "relaunch-" + uuid.uuid4().hex[:8]}
        (base / "relaunch-profile").mkdir()
    try:
        plan = relaunch.srun_plan(base / "mapping", list(app), srun_args=common + list(srun_args), preload=preload,
                                  mpi=mpi or res1.mpi, task_env=task_env)
    except UserError as e:           # the mapping cannot run (a node down, a core Slurm does not know)
        record["status"] = f"failed: pass 2 not started: {e}"
        save()
        raise
    console.print(plan.line())
    console.print(f"cores bound with {plan.binding}")
    code2, secs2 = relaunch.execute(plan)
    record["passes"]["relaunch"] = {"exit_code": code2, "seconds": round(secs2, 3), "command": plan.line(),
                                    "binding": plan.binding}
    if code2 != 0:
        why = pass2_failure(plan.hosts, code2, secs2, base)
        record["status"] = "failed: " + why
        save()
        summary(console, base, record, rep)
        raise UserError(why)
    save()
    console.print(f"pass 2: exit {code2} after {secs2:.2f} s")
    bad = 0
    if verify and code2 == 0:
        rows = relaunch.verify(base / "mapping", base / "relaunch-profile")
        record["verified"] = rows
        save()
        bad = sum(not r["ok"] for r in rows)
        show_verification(console, rows)
    record["status"] = f"failed: {bad} rank(s) not where the mapping put them" if bad else "complete"
    save()
    summary(console, base, record, rep)
    if bad:
        raise UserError(f"{bad} rank(s) did not run where the mapping put them (see the table above)")
    return 0


def pass2_failure(hosts: list[str], code: int, seconds: float, base: Path) -> str:
    """What went wrong in pass 2, for the one error line: a node of the mapping that Slurm now
    reports down or not responding (lost during the run), and what to do."""
    lost = []
    try:
        states = cluster.node_states(hosts)
        for h in hosts:
            st = states.get(h, "unknown").lower().rstrip("*~#!%$@^-")
            if "*" in states.get(h, "") or any(st.startswith(b) for b in cluster.BAD_STATES):
                lost.append(f"{h} ({states.get(h, 'unknown')})")
    except UserError:
        pass
    head = f"pass 2 (relaunch on the mapping) failed with exit code {code} after {seconds:.2f} s"
    if lost:
        return (f"{head}: node(s) {', '.join(lost)} were lost during the run; the profile and the mapping are kept in "
                f"{base}; map again without them (rankmap map {base / 'profile'} --nodes ... --out NEW), or rerun "
                "when Slurm has them back")
    return (f"{head}; the profile and the mapping are kept in {base} (workflow.json); rerun pass 2 with "
            f"`rankmap srun {base / 'mapping'} -- ...`")


def show_verification(console: Console, rows: list[dict]) -> None:
    t = Table(title="placement, rank by rank (observed by the profiler in pass 2)", show_edge=False)
    for c in ("rank", "mapped host", "mapped CPUs", "ran on", "CPUs", ""):
        t.add_column(c, justify="right")
    for r in rows:
        t.add_row(str(r["rank"]), r["mapped_host"], ",".join(map(str, r["mapped_cpus"])), r["host"],
                  ",".join(map(str, r["cpus"])), "[green]ok[/green]" if r["ok"] else "[red]MISMATCH[/red]")
    console.print(t)


def summary(console: Console, base: Path, record: dict, rep: dict) -> None:
    t = Table(title="rankmap run", show_edge=False)
    for col in ("step", "exit", "seconds", "output"):
        t.add_column(col, justify="right" if col in ("exit", "seconds") else "left")
    p1, p2 = record["passes"]["profile"], record["passes"]["relaunch"]
    t.add_row("1 profile", str(p1["exit_code"]), f"{p1['seconds']:.2f}", p1["directory"])
    t.add_row("map", "0", f"{record['mapping']['seconds']:.2f}", record["mapping"]["directory"])
    t.add_row("2 relaunch", str(p2["exit_code"]), f"{p2['seconds']:.2f}", p2["command"][:80])
    console.print(t)
    m = rep["metrics"]
    if not m["block"]["bytes"]:        # a program that sends nothing: no ratio to show
        console.print("mapped vs block: no traffic between distinct ranks, every placement is the same")
        console.print(f"everything is in {base}")
        return
    console.print(f"mapped vs block: SUM_COM {m['rankmap']['sum_com'] / max(m['block']['sum_com'], 1e-300):.3f}x, "
                  f"inter-node bytes {m['rankmap']['internode_fraction']:.1%} vs {m['block']['internode_fraction']:.1%}, "
                  f"max link load {m['rankmap']['max_link_load']:.4g} vs {m['block']['max_link_load']:.4g} B")
    console.print(f"everything is in {base}")


SBATCH_HEAD = "# written by `rankmap sbatch`: profile, map onto this allocation, relaunch on the mapping"


# what the script's own #SBATCH lines set (sbatch_script), by rankmap sbatch's options: a
# --sbatch-arg giving it again overrode them in the job (the later #SBATCH line wins), so the
# allocation had other nodes, another time limit or its output elsewhere than -n/-N/-t/--out
# said, without a word
_OWN_SBATCH = {"-n": ("--ntasks", "-n/--ntasks"), "-N": ("--nodes", "-N/--nodes-count"),
               "-t": ("--time", "-t/--time"), "-o": ("--output", "--out (the job's output goes to DIR/slurm-%j.out)")}


def check_sbatch_args(extra_sbatch: list[str], nodes: int | None, time_minutes: int | None) -> None:
    """Refuse a --sbatch-arg that sets what the script's own #SBATCH lines set (-n and -o
    always, -N and -t when given). sbatch's getopt takes attached short options (-n8, -N3)
    and unambiguous prefixes of long ones (--outp=x)."""
    ours_set = {"-n", "-o"} | ({"-N"} if nodes else set()) | ({"-t"} if time_minutes else set())
    for a in extra_sbatch:
        word = (a.split() or [""])[0]
        name = word.split("=", 1)[0]
        for short, (long, ours) in _OWN_SBATCH.items():
            if short not in ours_set:
                continue
            if (not name.startswith("--") and name.startswith(short)) or \
                    name == long or (name.startswith("--") and len(name) >= 5 and long.startswith(name)
                                     and not any(o.startswith(name) for o in _SBATCH_NEAR[long])):
                raise UserError(f"--sbatch-arg {a!r}: the script sets {long} itself from rankmap sbatch's "
                                f"{ours}; give it there (a second #SBATCH line would override it)")


# sbatch's long options that share a prefix with those above (--nodes: --nodelist, --nodefile;
# --time: --time-min; --output: none; --ntasks: --ntasks-per-node...): a prefix of one of them
# is ambiguous for sbatch (or means that option), not ours
_SBATCH_NEAR = {"--ntasks": ("--ntasks-per-core", "--ntasks-per-gpu", "--ntasks-per-node", "--ntasks-per-socket"),
                "--nodes": ("--nodefile", "--nodelist"), "--time": ("--time-min",), "--output": ()}


def sbatch_script(app: list[str], ntasks: int, nodes: int | None, out_dir: str, mopts_args: list[str],
                  time_minutes: int | None, extra_sbatch: list[str], rankmap: str | None = None) -> str:
    """A batch script that profiles, maps and relaunches in one allocation."""
    rm = rankmap or os.path.join(os.path.dirname(sys.executable), "rankmap")
    q = shlex.quote
    app_s = " ".join(q(a) for a in app)
    lines = ["#!/bin/bash", f"#SBATCH -n {ntasks}"]
    if nodes:
        lines.append(f"#SBATCH -N {nodes}")
    if time_minutes:
        lines.append(f"#SBATCH -t {time_minutes}")
    # -o is a Slurm file name pattern: a '%' of the directory's own ('runs%2') is written '%%', or
    # Slurm read it as a pattern and wrote the job's output elsewhere
    lines.append(f"#SBATCH -o {q(out_dir.replace('%', '%%'))}/slurm-%j.out")
    lines += [f"#SBATCH {a}" for a in extra_sbatch]
    lines += [
        SBATCH_HEAD,
        "set -euo pipefail",
        f"OUT={q(out_dir)}",
        'echo "allocation $SLURM_JOB_ID: $SLURM_JOB_NODELIST"',
        f'{q(rm)} profile --launcher srun --out "$OUT/profile" -- srun -K -n {ntasks} {app_s}',
        f'{q(rm)} map "$OUT/profile" --nodes "$SLURM_JOB_NODELIST" {" ".join(q(a) for a in mopts_args)} '
        f'--out "$OUT/mapping" --plots',
        f'{q(rm)} srun "$OUT/mapping" -- {app_s}',
        'echo "rankmap sbatch: done"',
    ]
    return "\n".join(lines) + "\n"
