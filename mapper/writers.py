"""The files a mapping is handed on with, and reading them back.

A mapping directory holds:
  hostfile      line i = host of rank i (Slurm: SLURM_HOSTFILE + srun -m arbitrary)
  binding.txt   `rank host core[,core...]` per rank; cores are hwloc logical core
                indices within the node (what the bind wrapper and --cpu-bind use)
  rankfile      Open MPI: `rank i=host slot=core` (hwloc logical core index, Open MPI's default
                reading; the socket:core form would be checked against each daemon's own view
                of the node)
  machinefile   MPICH Hydra: one `host:1` line per rank, in rank order
  collective-order.txt  world ranks along the machine (one node's ranks together, nodes in
                a snake through the torus, so consecutive nodes are neighbours) and the grid
                of the d-D ring: what rankmap's collective kernels follow (RANKMAP_COLL_ORDER)
  report.json   metrics of the mapping and of block / cyclic / random (/ input order)
  machine.json  how to rebuild the machine (so that evaluate and srun need no options)
The directory is written next to its final place and renamed into it: readers never see
half a mapping, and an existing one is replaced only with --force."""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import numpy as np

from mapper.machine import Machine
from profiler.errors import UserError

FILES = ("hostfile", "binding.txt", "rankfile", "machinefile", "collective-order.txt", "report.json", "machine.json")


def validate(slot: np.ndarray, n: int, machine: Machine) -> None:
    if len(slot) != n:
        raise UserError(f"the mapping places {len(slot)} ranks, the traffic has {n}")
    if len(slot) and (slot.min() < 0 or slot.max() >= machine.nslots):
        raise UserError("the mapping uses a slot outside the machine")
    if len(np.unique(slot)) != len(slot):
        raise UserError("the mapping puts two ranks on one slot")


def render(slot: np.ndarray, machine: Machine) -> dict[str, str]:
    hosts = [machine.hosts[machine.slot_node[s]] for s in slot]
    cores = [int(machine.slot_core[s]) for s in slot]
    out = {"hostfile": "".join(h + "\n" for h in hosts)}
    out["binding.txt"] = "# rank host core (hwloc logical core index within the node)\n" + "".join(
        f"{r} {h} {c}\n" for r, (h, c) in enumerate(zip(hosts, cores)))
    out["rankfile"] = "".join(f"rank {r}={h} slot={c}\n" for r, (h, c) in enumerate(zip(hosts, cores)))
    out["machinefile"] = "".join(f"{h}:1\n" for h in hosts)
    out["collective-order.txt"] = collective_order(slot, machine)
    return out


def _snake(coords: np.ndarray, dims) -> np.ndarray:
    """Boustrophedon index of torus coordinates (dims[0] fastest): consecutive indices are
    neighbouring nodes."""
    key = np.zeros(len(coords), dtype=np.int64)
    flip = np.zeros(len(coords), dtype=bool)
    for j in reversed(range(len(dims))):
        v = np.where(flip, dims[j] - 1 - coords[:, j], coords[:, j])
        key = key * dims[j] + v
        flip ^= (v % 2 == 1)
    return key


def collective_order(slot: np.ndarray, machine: Machine) -> str:
    node = machine.slot_node[slot]
    core = machine.slot_core[slot]
    net = machine.network
    coords = getattr(net, "coords", None)
    node_key = _snake(coords, net.dims)[node] if coords is not None else node
    order = np.lexsort((core, node_key))
    counts = np.unique(node, return_counts=True)[1]
    head = "# world ranks along the machine: one node's ranks together, nodes neighbour to neighbour\n"
    if len(set(counts.tolist())) == 1:
        head += f"# grid {int(counts[0])}x{len(counts)}\n"
    return head + "".join(f"{int(r)}\n" for r in order)


def write_mapping(out_dir: str | Path, slot: np.ndarray, machine: Machine, report: dict, machine_spec: dict,
                  force: bool = False) -> Path:
    validate(slot, len(slot), machine)
    out = Path(out_dir).absolute()
    if out.exists() and not force:
        raise UserError(f"{out} already exists; pass --force to replace it")
    if out.exists() and not out.is_dir():
        raise UserError(f"{out} exists and is not a directory")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for name, text in render(slot, machine).items():
            (tmp / name).write_text(text)
        (tmp / "report.json").write_text(json.dumps(report, indent=2, default=_jsonable) + "\n")
        (tmp / "machine.json").write_text(json.dumps(machine_spec, indent=2) + "\n")
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.rename(out, old)
            os.rename(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x))


# ---------------------------------------------------------------------- reading back

def read_mapping(path: str | Path, machine: Machine, n: int | None = None) -> np.ndarray:
    """slot_of_rank from a mapping directory, a binding file (`rank host core...`), or a
    hostfile (one host per line: ranks take their host's slots in order)."""
    p = Path(path)
    if p.is_dir():
        for name in ("binding.txt", "hostfile"):
            if (p / name).exists():
                return read_mapping(p / name, machine, n)
        raise UserError(f"{p}: no binding.txt or hostfile in this directory")
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise UserError(f"{p}: {e.strerror}") from None
    rows = [(i, ln.split()) for i, ln in enumerate(lines, 1) if ln.strip() and not ln.lstrip().startswith("#")]
    index = {h: k for k, h in enumerate(machine.hosts)}
    free = {k: list(v) for k, v in enumerate(machine.slots_by_node())}
    binding = rows and len(rows[0][1]) >= 3 and rows[0][1][0].isdigit()
    slot = np.full(len(rows), -1, dtype=np.int64)
    for pos, (lineno, f) in enumerate(rows):
        if binding:
            try:
                r, host, core = int(f[0]), f[1], int(f[2].split(",")[0])
            except (ValueError, IndexError):
                raise UserError(f"{p}:{lineno}: expected 'rank host core[,core...]'") from None
            if r != pos:
                raise UserError(f"{p}:{lineno}: ranks must be listed in order 0, 1, 2... (found {r})")
        else:
            host = f[0].split(":")[0]
            core = None
        if host not in index:
            raise UserError(f"{p}:{lineno}: host {host} is not in the node list")
        node = index[host]
        cands = [s for s in free[node] if core is None or machine.slot_core[s] == core]
        if not cands:
            what = f"core {core} of {host}" if core is not None else host
            raise UserError(f"{p}:{lineno}: no free slot left on {what} (more ranks than slots there)")
        slot[pos] = cands[0]
        free[node].remove(cands[0])
    if n is not None and len(slot) != n:
        raise UserError(f"{p}: the mapping has {len(slot)} ranks, the traffic has {n}")
    return slot
