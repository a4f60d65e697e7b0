"""Launching a program the way a mapping says (`rankmap srun`, `rankmap mpirun`).

srun: `SLURM_HOSTFILE=<mapping>/hostfile srun -m arbitrary -n N ...` — the hostfile is set
for this step only (since Slurm 23.11 an exported SLURM_HOSTFILE breaks later --nodes
requests). Cores: `--cpu-bind=map_cpu:<list>` when one list (indexed by node-local task id)
fits every node; otherwise `--cpu-bind=none` and each task runs through rankmap-bind, which
binds itself by its rank from binding.txt and refuses to run on the wrong host.

mpirun (clusters without Slurm): Open MPI with the mapping's rankfile, MPICH Hydra with its
machinefile plus rankmap-bind for the cores."""
from __future__ import annotations

import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

from rankmap.mapper import hostnames, hwtopo, spec as mspec
from rankmap.mapper.writers import read_placement
from rankmap.profiler import native
from rankmap.profiler.errors import UserError
from rankmap.slurm import cluster


@dataclass
class Plan:
    argv: list
    env: dict = field(default_factory=dict)     # set for this launch only
    ntasks: int = 0
    hosts: list = field(default_factory=list)
    binding: str = ""                            # how cores are bound

    def line(self) -> str:
        envs = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.env.items())
        return (envs + " " if envs else "") + " ".join(shlex.quote(a) for a in self.argv)


@dataclass
class Mapping:
    path: Path
    hosts: list          # per rank
    cores: list          # per rank: list of logical core indices
    machine: dict

    @property
    def ntasks(self) -> int:
        return len(self.hosts)


def load_mapping(path: str | Path) -> Mapping:
    p = Path(path)
    if not p.is_dir():
        raise UserError(f"{p}: not a mapping directory (rankmap map --out writes one)")
    for name in ("hostfile", "binding.txt"):
        if not (p / name).exists():
            raise UserError(f"{p}: no {name}; not a complete mapping directory")
    pl = read_placement(p)
    machine = mspec.load(p) if (p / "machine.json").exists() else {}
    if machine:
        # every rank's host and cores on the machine it was mapped for (as evaluate reads it):
        # a dry run or an mpirun asks no Slurm, and a core the node lacks failed only at launch
        from rankmap.mapper.writers import read_mapping
        read_mapping(p, mspec.build(machine))
    return Mapping(path=p.absolute(), hosts=pl.hosts, cores=pl.cores, machine=machine)


def _local_layouts(m: Mapping) -> dict[str, list]:
    """Per host, the cores of its tasks in node-local task id order (global rank order)."""
    per = {}
    for h, cs in zip(m.hosts, m.cores):
        per.setdefault(h, []).append(cs)
    return per


def _os_cpus(m: Mapping, host: str, core: int) -> list[int]:
    """OS CPU ids of a logical core, from the mapping's description of that node."""
    specs = m.machine.get("node_topology") or []
    spec = None
    for s in specs:
        if "=" in s:
            hl, _, t = s.partition("=")
            if host in hostnames.expand(hl):
                spec = t
        else:
            spec = s
    if spec is None:
        return [core]
    topo = hwtopo.load(spec)
    if core >= topo.cores:
        raise UserError(f"the mapping binds a rank to core {core} of {host}, which has {topo.cores}")
    return list(topo.core_pus[core])


def map_cpu_list(m: Mapping) -> list[int] | None:
    """One map_cpu list that gives every node's tasks their cores, if there is one."""
    layouts = _local_layouts(m)
    if any(len(cs) != 1 for lay in layouts.values() for cs in lay):
        return None
    if len({len(lay) for lay in layouts.values()}) > 1:
        # nodes of unequal task counts: Slurm checks the whole list against each node's step
        # CPUs, and a node of fewer tasks has fewer ("CPU binding outside of job step
        # allocation ... Unable to satisfy cpu bind request": 2 ranks on n1 and 1 on n2 failed)
        return None
    longest = max(layouts.values(), key=len)
    ref = [cs[0] for cs in longest]
    for lay in layouts.values():
        if [cs[0] for cs in lay] != ref[:len(lay)]:
            return None
    host = next(h for h, lay in layouts.items() if lay is longest)
    cpus = []
    for c in ref:
        os_ids = _os_cpus(m, host, c)
        cpus.append(os_ids[0])
    # OS ids must agree on every node for one list to work
    for h, lay in layouts.items():
        for k, cs in enumerate(lay):
            if _os_cpus(m, h, cs[0])[0] != cpus[k]:
                return None
    return cpus


def check_srun_args(srun_args: list[str]) -> None:
    """srun arguments a mapping's launch cannot take (they would override it). `rankmap run`
    checks its --srun-arg before pass 1 too: they go to pass 2's srun, which refused them
    only after the profile run and the mapping."""
    for a in srun_args:
        if a in ("-N", "--nodes") or a.startswith("--nodes=") or a.startswith("-N"):
            raise UserError("do not pass --nodes with a mapping: the hostfile decides the nodes "
                            "(Slurm >= 23.11 rejects --nodes with an arbitrary distribution)")
        # srun's getopt takes -n4 / -mblock attached and any unambiguous prefix of a long option
        # (--ntask=4, --distrib=cyclic)
        name = (a.split("=", 1)[0].split() or [""])[0]      # "--ntasks 4" given as one argument
        if (a.startswith("-n") and not a.startswith("--")) or (a.startswith("-m") and not a.startswith("--")) \
                or (len(name) >= 4 and ("--ntasks".startswith(name) or "--distribution".startswith(name))) \
                or (len(name) > 13 and ("--ntasks-per-node".startswith(name)
                                        or "--ntasks-per-socket".startswith(name))):   # -per-core: hyperthreads
            raise UserError(f"{a}: the mapping decides the task count and distribution")
        # after the mapping's own --cpu-bind=map_cpu:... on the line, srun took the user's
        # (the last one wins): the ranks ran unbound or bound elsewhere, without a word
        if name in ("--cpu-bind", "--cpu_bind") or (len(name) >= 7 and ("--cpu-bind".startswith(name)
                                                                         or "--cpu_bind".startswith(name))):
            raise UserError(f"{a}: the mapping binds every rank to its core (srun --cpu-bind=map_cpu, or "
                            "rankmap-bind); a second --cpu-bind would override it")


def srun_plan(mapping: str | Path, program: list[str], srun_args: list[str] | None = None, ntasks: int | None = None,
              preload: list[str] | None = None, force_wrapper: bool = False, mpi: str | None = None,
              task_env: dict | None = None, check_nodes: bool = True) -> Plan:
    """task_env: variables for the tasks only (passed with --export, like the preloads).
    check_nodes: ask sinfo whether the mapping's nodes are up (a dry run prints the line
    without asking: it may be written where no Slurm answers)."""
    m = load_mapping(mapping)
    if not program:
        raise UserError("give the program after --, e.g. rankmap srun map1/ -- ./app args")
    if ntasks is not None and ntasks != m.ntasks:
        raise UserError(f"the mapping in {m.path} is for {m.ntasks} ranks, not {ntasks}")
    check_srun_args(srun_args or [])
    _readable_by(m.path / "hostfile", "Slurm (SLURM_HOSTFILE)", one_host=True)
    uniq = list(dict.fromkeys(m.hosts))
    if cluster.in_allocation():
        want = cluster.allocation_ntasks()
        if want is not None and want < m.ntasks:
            raise UserError(f"the mapping in {m.path} is for {m.ntasks} ranks but this allocation has "
                            f"SLURM_NTASKS={want}")
        alloc = set(cluster.allocation_nodes())
        outside = [h for h in uniq if h not in alloc]
        if outside:
            raise UserError(f"host {outside[0]} of the mapping is not in this allocation "
                            f"({os.environ.get('SLURM_JOB_NODELIST')}); map onto the allocation's nodes")
        cpus = cluster.allocation_cpus()
        if cpus and not any(a in ("-O", "--overcommit") for a in srun_args or []):
            per_host: dict[str, set] = {}       # the cores each host's ranks use (--overcommit shares them)
            for h, cs in zip(m.hosts, m.cores):
                per_host.setdefault(h, set()).add(tuple(cs))
            over = next((h for h in uniq if len(per_host[h]) > cpus[h]), None)
            if over is not None:
                # srun refused the step after the program was named ("More processors requested
                # than permitted"): the allocation is not the whole node the mapping assumed
                raise UserError(f"the mapping in {m.path} puts ranks on {len(per_host[over])} cores of {over}, "
                                f"where this allocation has {cpus[over]} CPU(s) (SLURM_JOB_CPUS_PER_NODE="
                                f"{os.environ.get('SLURM_JOB_CPUS_PER_NODE')}); map inside this allocation (rankmap "
                                "map then uses only its CPUs), or allocate whole nodes (salloc --exclusive)")
    srun_args = list(srun_args or [])
    per_core: dict = {}
    for h, cs in zip(m.hosts, m.cores):
        per_core[(h, tuple(cs))] = per_core.get((h, tuple(cs)), 0) + 1
    shared = max(per_core.values(), default=1)
    if shared > 1:      # --oversubscribe: Slurm starts more tasks than CPUs only with --overcommit
        if not cluster.in_allocation() and check_nodes:
            raise UserError(f"the mapping in {m.path} puts up to {shared} ranks on a core: srun needs --overcommit "
                            "for that, and outside an allocation Slurm then grants one CPU per node, so the ranks "
                            "cannot be bound to their cores; run inside an allocation of the whole nodes: salloc -w "
                            f"{hostnames.compress(uniq)} --exclusive rankmap srun {m.path} -- ...")
        if not any(a in ("-O", "--overcommit") for a in srun_args):
            srun_args.append("--overcommit")
    if check_nodes:
        cluster.check_usable(uniq)
        used: dict[str, int] = {}
        for h, cs in zip(m.hosts, m.cores):
            used[h] = max(used.get(h, 0), max(cs, default=-1) + 1)
        cluster.check_cores(used, f"the mapping in {m.path}")
    cpus = None if force_wrapper else map_cpu_list(m)
    if cpus is None:
        _readable_by(m.path / "binding.txt", "rankmap-bind", crlf=False)
    argv = ["srun", "-m", "arbitrary", "-n", str(m.ntasks)]
    if not any(a == "--mpi" or a.startswith("--mpi=") for a in srun_args or []):
        from rankmap.profiler.launch import program_mpi, srun_mpi_option
        argv.append(srun_mpi_option(mpi or program_mpi(["srun", *program]) or native.default_mpi()))
    if cpus is not None:
        argv.append("--cpu-bind=map_cpu:" + ",".join(map(str, cpus)))
        binding = "map_cpu (one list fits every node)"
        cmd = list(program)
    else:
        argv.append("--cpu-bind=none")
        binding = "rankmap-bind (per-node layouts differ)"
        cmd = [str(native.artifact("bind")), str(m.path / "binding.txt"), *program]
    exports = dict(task_env or {})
    if shared > 1 and "OMPI_MCA_mpi_yield_when_idle" not in os.environ:
        # Open MPI yields the core while it waits when its own launcher knows the node is
        # oversubscribed; under srun it does not know, and two ranks polling on one core took
        # minutes for what ran in a second
        exports["OMPI_MCA_mpi_yield_when_idle"] = "1"
    if preload:
        exports["LD_PRELOAD"] = ":".join(preload)
        exports.update(collective_env(m.path, preload))
    from rankmap.profiler.launch import srun_exports
    exports, own = srun_exports(exports)
    if exports:
        argv.append("--export=ALL," + ",".join(f"{k}={v}" for k, v in exports.items()))
    argv += list(srun_args or [])
    return Plan(argv=argv + cmd, env={"SLURM_HOSTFILE": str(m.path / "hostfile"), **own}, ntasks=m.ntasks,
                hosts=uniq, binding=binding)


def verify(mapping: str | Path, rundir: str | Path) -> list[dict]:
    """Where every rank of a relaunch really ran (from its profile: host and CPU affinity)
    against the mapping; one row per rank with ok = True when both match."""
    from rankmap.profiler.rundir import read_run
    m = load_mapping(mapping)
    prof = read_run(rundir)
    if prof.size != m.ntasks:
        raise UserError(f"the relaunch had {prof.size} ranks, the mapping {m.ntasks}")
    rows = []
    for r in range(m.ntasks):
        rec = prof.ranks[r]
        want = sorted({c for core in m.cores[r] for c in _os_cpus(m, m.hosts[r], core)})
        host = rec.hostname if rec else "?"
        cpus = _cpu_set(rec.affinity_init) if rec else []
        rows.append({"rank": r, "mapped_host": m.hosts[r], "mapped_cpus": want, "host": host, "cpus": cpus,
                     "ok": host == m.hosts[r] and cpus == want})
    return rows


def _cpu_set(text: str) -> list[int]:
    out = set()
    for part in (text or "").split(","):
        if part:
            a, _, b = part.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    return sorted(out)


def collective_env(mapping_dir: Path, preload: list[str]) -> dict:
    """With rankmap's collective kernels preloaded, they follow the mapping's order."""
    order = Path(mapping_dir) / "collective-order.txt"
    if any("librankmap_coll" in Path(x).name for x in preload) and order.exists():
        return {"RANKMAP_COLL_ORDER": str(order)}
    return {}


# Launcher options that would override what the mapping's files say (rank count, hosts,
# placement); Open MPI takes its long options with one dash or two, Hydra with one.
_MPIRUN_OWNED = {
    "openmpi": ("np", "n", "c", "hostfile", "machinefile", "default-hostfile", "rankfile", "rf", "host", "H",
                "map-by", "rank-by", "npernode", "N", "npersocket", "ppr", "bynode", "byslot", "add-host",
                "add-hostfile",
                # the rankfile binds each rank to its core: --bind-to none left them unbound,
                # --cpu-set/--cpu-list restricted them elsewhere, without a word
                "bind-to", "cpu-set", "cpu-list"),
    "mpich": ("n", "np", "f", "hostfile", "machinefile", "hosts", "host", "ppn", "perhost", "rr", "configfile"),
}


def _check_mpirun_args(extra: list[str], mpi: str) -> None:
    owned = _MPIRUN_OWNED["openmpi" if mpi == "openmpi" else "mpich"]
    for a in extra:
        if not a.startswith("-") or a in ("-", "--"):
            continue
        name = a.lstrip("-").split("=", 1)[0].split()[0] if a.strip("-").strip() else ""
        attached = a.startswith("-") and not a.startswith("--") and len(name) > 1 and name[0] in "nNcfH" \
            and name[1:].isdigit()           # -np4 is not an Open MPI form, but -n4/-N4/-c4 are
        if name in owned or attached:
            raise UserError(f"--mpirun-arg {a}: the mapping decides the rank count, the hosts and the placement "
                            f"(rankmap passes -np and the mapping's {'rankfile' if mpi == 'openmpi' else 'machinefile'})")


def _readable_by(f: Path, reader: str, crlf: bool = True, one_host: bool = False) -> None:
    """The file as `reader` (the launcher, or rankmap-bind) reads it itself: rankmap reads a
    byte-order mark, CRLF line ends and a hostfile's `host:k` or `host slots=N` (a file edited
    on Windows, a machinefile copied over the hostfile), the launchers do not, and they failed
    only after rankmap had checked the mapping: Slurm with "Invalid node name specified",
    "Invalid hostfile contents on line 1" or "Too few NodeNames in Slurm Hostfile", Open MPI
    with "parse error in the hostfile", MPICH with ssh to a host named '\\357\\273\\277n1',
    rankmap-bind with "rank 0 is not in binding.txt".
    crlf: the reader refuses CRLF too (Slurm, Open MPI; MPICH and rankmap-bind take it).
    one_host: the reader takes one host per line, no rank count (Slurm's SLURM_HOSTFILE)."""
    from rankmap.profiler import validate
    data = validate.read_bytes(f, f.name)
    fix = "write the mapping again (rankmap map), or edit the file"
    if data.startswith(b"\xef\xbb\xbf"):
        raise UserError(f"{f}: starts with a byte-order mark (U+FEFF, an editor's 'UTF-8 with BOM'), which {reader} "
                        f"does not read; {fix}: sed -i '1s/^\\xEF\\xBB\\xBF//' {shlex.quote(str(f))}")
    if crlf and b"\r" in data:
        line = data.count(b"\n", 0, data.index(b"\r")) + 1
        raise UserError(f"{f}:{line}: a carriage return (Windows CRLF line ends), which {reader} does not read; "
                        f"{fix}: dos2unix {shlex.quote(str(f))}")
    if one_host:
        given = next((w for w in read_placement(f).lines or [] if w[1]), None)
        if given is not None:
            raise UserError(f"{given[0]}: {given[1]!r}: {reader} reads one host per line, one line per rank "
                            f"(no rank counts); {fix} ({f.name} as `rankmap map` writes it)")


def _check_launch_file(m: Mapping, name: str) -> None:
    """The rankfile or machinefile mpirun gets says what binding.txt says: evaluate and predict
    read binding.txt, and a file edited alone was launched unread."""
    f = m.path / name
    if not f.is_file():
        raise UserError(f"{m.path}: no {name} (rankmap map --out writes one; write the mapping again)")
    pl = read_placement(f)
    if pl.hosts != m.hosts or (name == "rankfile" and pl.cores != m.cores):
        r = next((i for i in range(min(len(pl.hosts), m.ntasks))
                  if pl.hosts[i] != m.hosts[i] or (name == "rankfile" and pl.cores[i] != m.cores[i])),
                 min(len(pl.hosts), m.ntasks))
        raise UserError(f"{f}: disagrees with {m.path / 'binding.txt'} "
                        + (f"at rank {r}" if r < min(len(pl.hosts), m.ntasks) else
                           f"({len(pl.hosts)} ranks, binding.txt {m.ntasks})")
                        + "; the launch would not be the mapping evaluate and predict read: write the mapping "
                          "again, or edit both")


def mpirun_plan(mapping: str | Path, program: list[str], mpi: str | None = None,
                extra: list[str] | None = None, preload: list[str] | None = None) -> Plan:
    m = load_mapping(mapping)
    if not program:
        raise UserError("give the program after --, e.g. rankmap mpirun map1/ -- ./app args")
    mpi = mpi or native.default_mpi()
    _check_mpirun_args(list(extra or []), mpi)
    _check_launch_file(m, "rankfile" if mpi == "openmpi" else "machinefile")
    if mpi == "openmpi":
        _readable_by(m.path / "rankfile", "Open MPI's mpirun")
    else:
        _readable_by(m.path / "machinefile", "MPICH's mpiexec", crlf=False)
        _readable_by(m.path / "binding.txt", "rankmap-bind", crlf=False)
    uniq = list(dict.fromkeys(m.hosts))
    env = {"LD_PRELOAD": ":".join(preload)} | collective_env(m.path, preload) if preload else {}
    if mpi == "openmpi":
        xs = [a for k, v in env.items() for a in ("-x", f"{k}={v}")]
        argv = ["mpirun", "-np", str(m.ntasks), "--rankfile", str(m.path / "rankfile"), *xs, *(extra or []),
                *program]
        binding = "Open MPI rankfile"
    else:
        xs = [a for k, v in env.items() for a in ("-genv", k, v)]
        argv = ["mpiexec.mpich", "-f", str(m.path / "machinefile"), "-n", str(m.ntasks), *xs, *(extra or []),
                str(native.artifact("bind")), str(m.path / "binding.txt"), *program]
        binding = "MPICH machinefile + rankmap-bind"
    return Plan(argv=argv, ntasks=m.ntasks, hosts=uniq, binding=binding)


def execute(plan: Plan, timeout: float | None = None) -> tuple[int, float]:
    from rankmap.profiler.launch import run_command
    env = dict(os.environ)
    env.update(plan.env)
    t0 = time.monotonic()
    try:
        code = run_command(plan.argv, env, timeout)
    except FileNotFoundError:
        raise UserError(f"{plan.argv[0]}: command not found") from None
    return code, time.monotonic() - t0


def run_plan(plan: Plan, dry_run: bool, echo) -> int:
    echo(plan.line())
    if dry_run:
        return 0
    code, _ = execute(plan)
    return code
