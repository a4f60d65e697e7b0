"""What Slurm says about the allocation and the nodes, through Slurm's own commands
(sinfo, scontrol); the local test cluster's environment."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from rankmap.mapper import hostnames
from rankmap.profiler.errors import UserError

LOCALCLUSTER = Path(__file__).with_name("localcluster")


def need(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise UserError(f"{tool} not found: this needs a Slurm client (apt-get install slurm-client), or use "
                        "`rankmap mpirun` on clusters without Slurm")
    return path


def query(args: list[str]) -> str:
    need(args[0])
    conf = os.environ.get("SLURM_CONF")
    if conf is not None and not os.path.isfile(conf):
        # Slurm's commands retry such a file for 60 s before they fail ("cannot stat file")
        raise UserError(f"SLURM_CONF={conf}: {'no such file' if not os.path.exists(conf) else 'not a file'}; "
                        "Slurm's commands cannot read their configuration: fix or unset SLURM_CONF")
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        raise UserError(f"`{' '.join(args)}` did not answer within 60 s: is slurmctld up?") from None
    except OSError as e:
        raise UserError(f"`{' '.join(args)}` could not run: {e.strerror}") from None
    if res.returncode != 0:
        msg = (res.stderr.strip().splitlines() or [f"exit code {res.returncode}"])[-1]
        raise UserError(f"`{' '.join(args)}` failed: {msg}")
    return res.stdout


def in_allocation() -> bool:
    return bool(os.environ.get("SLURM_JOB_ID"))


def allocation_ntasks() -> int | None:
    """The allocation's task count (SLURM_NTASKS), or None when it is not set. A value that is
    not a whole number >= 1 (a script that set it by hand) is named: int() of it was an internal
    error, and -3 was passed to srun as its task count."""
    from rankmap.profiler import validate
    v = os.environ.get("SLURM_NTASKS", "")
    if not v.strip():
        return None
    return validate.integer(v, "SLURM_NTASKS", "task count", 1, validate.MAX_RANKS, float_form=False)


def allocation_nodes() -> list[str]:
    var = "SLURM_JOB_NODELIST" if os.environ.get("SLURM_JOB_NODELIST") else "SLURM_NODELIST"
    nl = os.environ.get(var)
    if not nl or not nl.strip():
        groups = sorted((k, v) for k, v in os.environ.items()
                        if k.startswith(("SLURM_JOB_NODELIST_HET_GROUP_", "SLURM_JOB_NODELIST_PACK_GROUP_")))
        if groups:
            # a heterogeneous job (salloc ... : ...) sets SLURM_JOB_ID but no SLURM_JOB_NODELIST:
            # "not inside a Slurm allocation" was said inside one
            het = [f"{k}={v}" for k, v in groups if "_HET_GROUP_" in k] or [f"{k}={v}" for k, v in groups]
            raise UserError(f"a heterogeneous job ({', '.join(het)[:160]}) has no single node list "
                            "(SLURM_JOB_NODELIST): rankmap maps and launches on one; allocate the nodes as one job "
                            "(salloc -N ... without ':'), or give rankmap map the nodes with --nodes")
        raise UserError("not inside a Slurm allocation (no SLURM_JOB_NODELIST): pass --nodes")
    return hostnames.no_duplicates(hostnames.expand(nl, f"{var}={nl[:80]!r} (the allocation's nodes; --nodes "
                                                        "overrides it)"), var)


def node_info(hosts: list[str]) -> dict[str, dict]:
    """Per host: sockets, cores per socket, threads per core, state (`scontrol show node -o`)."""
    out = query(["scontrol", "show", "node", "-o", hostnames.compress(hosts)])
    info = {}
    for line in out.splitlines():
        kv = dict(tok.split("=", 1) for tok in line.split() if "=" in tok)
        if "NodeName" in kv:
            info[kv["NodeName"]] = {"sockets": int(kv.get("Sockets", 1)), "cores": int(kv.get("CoresPerSocket", 1)),
                                    "threads": int(kv.get("ThreadsPerCore", 1)), "state": kv.get("State", "?")}
    missing = [h for h in hosts if h not in info]
    if missing:
        raise UserError(f"Slurm does not know node {missing[0]}")
    return info


def node_topologies(hosts: list[str]) -> list[str] | None:
    """Node internals as Slurm describes them (Sockets, CoresPerSocket), as --node-topology
    specs (`HOSTLIST=SPEC` for each kind when the nodes differ); None when Slurm is not
    reachable or does not know every host."""
    if shutil.which("scontrol") is None:
        return None
    try:
        info = node_info(hosts)
    except UserError:
        return None
    by: dict[str, list[str]] = {}
    for h in hosts:
        by.setdefault(f"pack:{info[h]['sockets']} core:{info[h]['cores']}", []).append(h)
    return [next(iter(by))] if len(by) == 1 else [f"{hostnames.compress(hs)}={s}" for s, hs in by.items()]


def check_cores(used: dict[str, int], source: str) -> None:
    """One clear error when a mapping uses a core a node does not have by Slurm's description
    (a --node-topology that is not the nodes': srun then fails with "Requested node
    configuration is not available"). used: host -> highest logical core index + 1. Nothing
    is said when Slurm cannot be asked."""
    try:
        info = node_info(list(used))
    except UserError:
        return
    for h, n in used.items():
        have = info[h]["sockets"] * info[h]["cores"]
        if n > have:
            raise UserError(f"{source} uses core {n - 1} of {h}, but Slurm describes {h} with {have} core(s) "
                            f"(Sockets={info[h]['sockets']} CoresPerSocket={info[h]['cores']}: scontrol show node "
                            f"{h}); map again with the nodes' own --node-topology, or without it (rankmap then asks "
                            "Slurm)")


def _cpus_runs(text: str) -> list[tuple[int, int]]:
    """SLURM_JOB_CPUS_PER_NODE ('2(x3),4') as (cpus, nodes) runs, counted without listing each
    node ('2(x999999999)' by hand made a list of 10^9 entries: minutes and GBs); a value that is
    no such list is named."""
    from rankmap.profiler import validate
    runs, nodes = [], 0
    for part in text.split(","):
        c, x, rep = part.strip().partition("(x")
        if x and not rep.endswith(")"):
            raise UserError(f"SLURM_JOB_CPUS_PER_NODE={text!r}: {part.strip()!r} is not CPUS or CPUS(xNODES)")
        k = validate.integer(rep[:-1], "SLURM_JOB_CPUS_PER_NODE", "node count", 1, validate.MAX_NODES,
                             float_form=False) if x else 1
        nodes += k
        if nodes > validate.MAX_NODES:
            raise UserError(f"SLURM_JOB_CPUS_PER_NODE={text!r}: more than {validate.MAX_NODES} nodes")
        runs.append((validate.integer(c, "SLURM_JOB_CPUS_PER_NODE", "CPU count", 1, validate.MAX_CORES_PER_NODE,
                                      float_form=False), k))
    return runs


def _cpus_total(text: str) -> int:
    """SLURM_JOB_CPUS_PER_NODE ('2(x3),4'): the CPUs of the allocation."""
    return sum(c * k for c, k in _cpus_runs(text))


def allocation_cpus() -> dict[str, int] | None:
    """Inside an allocation, each of its nodes' CPUs (SLURM_JOB_CPUS_PER_NODE, in the order of
    the node list); None outside one, or when Slurm did not say (or said it for another number
    of nodes than the node list names)."""
    per = os.environ.get("SLURM_JOB_CPUS_PER_NODE", "")
    if not in_allocation() or not per.strip():
        return None
    runs = _cpus_runs(per)
    hosts = allocation_nodes()
    if sum(k for _, k in runs) != len(hosts):
        return None
    cpus = [c for c, k in runs for _ in range(k)]
    return dict(zip(hosts, cpus))


def step_cpus(nodes: int | None) -> int | None:
    """The most CPUs a job step of `srun -n N [-N nodes]` can get: inside an allocation its
    CPUs (SLURM_JOB_CPUS_PER_NODE); outside, those of the `nodes` largest nodes of the
    cluster (sinfo), or of all of them. None when Slurm does not say. srun refuses more tasks
    than this without --overcommit ("Requested node configuration is not available")."""
    if in_allocation():       # (a wrong value is named, not taken for "Slurm does not say")
        per = os.environ.get("SLURM_JOB_CPUS_PER_NODE")
        return _cpus_total(per) if per else None
    try:
        cpus = {}
        for line in query(["sinfo", "-h", "-N", "-o", "%N %c"]).splitlines():
            f = line.split()
            if len(f) == 2:
                cpus[f[0]] = int(f[1])
    except (UserError, ValueError):
        return None
    if not cpus:
        return None
    best = sorted(cpus.values(), reverse=True)
    return sum(best[:nodes] if nodes else best)


def node_states(hosts: list[str]) -> dict[str, str]:
    out = query(["sinfo", "-h", "-N", "-n", hostnames.compress(hosts), "-o", "%N %T"])
    states = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2:
            states[parts[0]] = parts[1]
    return states


BAD_STATES = ("down", "drain", "fail", "unknown", "not_responding", "future", "maint", "reboot")


def check_usable(hosts: list[str]) -> None:
    """One clear error for a node that is down or drained, before srun hangs or fails."""
    states = node_states(hosts)
    for h in hosts:
        if h not in states:
            # sinfo does not list it: no node of this cluster (a mapping made for another one),
            # not one to bring back with scontrol update
            raise UserError(f"node {h} is not a node of this Slurm cluster (sinfo does not list it); the mapping "
                            "was made for other nodes: map again onto this cluster's (rankmap map ... --nodes "
                            "HOSTLIST, or inside an allocation)")
        st = states.get(h, "unknown").lower().rstrip("*~#!%$@^-")
        if any(st.startswith(b) for b in BAD_STATES):
            raise UserError(f"node {h} is {states.get(h, 'unknown')} (sinfo); the mapping cannot run there — "
                            "map again without it, or bring it back (scontrol update nodename=... state=resume)")


def idle_nodes() -> list[str]:
    out = query(["sinfo", "-h", "-N", "-t", "idle", "-o", "%N"])
    seen = []
    for h in out.split():
        if h not in seen:
            seen.append(h)
    return seen


def local_env() -> dict[str, str]:
    """The exports of the local test cluster (slurm/localcluster env)."""
    out = subprocess.run([str(LOCALCLUSTER), "env"], capture_output=True, text=True, check=True).stdout
    env = {}
    for line in out.splitlines():
        if line.startswith("export "):
            k, _, v = line[len("export "):].partition("=")
            env[k] = v
    return env
