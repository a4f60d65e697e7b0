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
half a mapping, and an existing one is replaced only when it is a mapping (its marker
.rankmap-mapping) and --force is given (rankmap.profiler.outputs)."""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rankmap.mapper import hostnames
from rankmap.mapper.machine import Machine
from rankmap.profiler import outputs, validate as valid
from rankmap.profiler.errors import UserError

FILES = ("hostfile", "binding.txt", "rankfile", "machinefile", "collective-order.txt", "report.json", "machine.json")


def validate(slot: np.ndarray, n: int, machine: Machine) -> None:
    if len(slot) != n:
        raise UserError(f"the mapping places {len(slot)} ranks, the traffic has {n}")
    if not machine.one_to_one(slot):
        if len(slot) and (slot.min() < 0 or slot.max() >= machine.nslots):
            raise UserError("the mapping uses a slot outside the machine")
        raise UserError("the mapping puts two ranks on one slot")


def render(slot: np.ndarray, machine: Machine) -> dict[str, str]:
    slot = np.asarray(slot, dtype=np.int64)
    # whole arrays to lists first: indexing numpy per rank cost 2 s of 4 at 10^6 ranks
    hosts = [machine.hosts[k] for k in machine.slot_node[slot].tolist()]
    cores = machine.slot_core[slot].tolist()
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
    coords, dims = getattr(net, "coords", None), getattr(net, "dims", None)   # a torus: snake through it
    node_key = _snake(coords, dims)[node] if coords is not None and dims is not None else node
    order = np.lexsort((core, node_key))
    counts = np.unique(node, return_counts=True)[1]
    head = "# world ranks along the machine: one node's ranks together, nodes neighbour to neighbour\n"
    if len(set(counts.tolist())) == 1:
        head += f"# grid {int(counts[0])}x{len(counts)}\n"
    return head + "".join(f"{r}\n" for r in order.tolist())


def mapping_target(out_dir, force: bool = False, inputs=(), option: str = "--out",
                   force_flag: str = "--force") -> outputs.Target:
    """Where a mapping goes, checked before any work (rankmap.profiler.outputs): never the
    current directory or an input; an existing directory only when it is a mapping (and
    --force, the API's force=True: force_flag)."""
    if isinstance(out_dir, outputs.Target):
        return out_dir
    return outputs.target_dir(out_dir, option, "mapping", force, inputs, force_flag=force_flag)


def write_mapping(out_dir, slot: np.ndarray, machine: Machine, report: dict, machine_spec: dict,
                  force: bool = False, extra=None) -> Path:
    """The mapping's files, written into a directory next to `out_dir` and renamed into it
    (readers never see half a mapping). extra(tmp): more files (plots) written before the
    rename."""
    validate(slot, len(slot), machine)
    target = mapping_target(out_dir, force)

    def fill(tmp: Path) -> None:
        for name, text in render(slot, machine).items():
            (tmp / name).write_text(text)
        (tmp / "report.json").write_text(json.dumps(report, indent=2, default=_jsonable, allow_nan=False) + "\n")
        (tmp / "machine.json").write_text(json.dumps(machine_spec, indent=2, allow_nan=False) + "\n")
        if extra is not None:
            extra(tmp)
    return outputs.write_dir(target, fill)


def _jsonable(x):
    if isinstance(x, (np.integer,)):
        return int(x)
    if isinstance(x, (np.floating,)):
        return float(x)
    if isinstance(x, np.ndarray):
        return x.tolist()
    raise TypeError(type(x))


# ---------------------------------------------------------------------- reading back

@dataclass
class Placement:
    """A mapping as its files give it, before any machine is known."""
    source: Path
    hosts: list                   # per rank
    cores: list | None            # per rank: logical core indices (None: a hostfile names hosts only)
    directory: bool = False       # read from a mapping directory (then both files agreed)
    lines: list | None = None     # per rank: ("file:line" it was read from, that line's host:k or None)


def _binding_rows(path: Path, lines: list[str], any_order: bool = False) -> tuple[list, list, list]:
    """`rank host core[,core...]` rows. binding.txt lists its ranks in order (rankmap-bind reads
    it so); an Open MPI rankfile may list them in any order (any_order), each rank once."""
    rows = {}
    for lineno, ln in enumerate(lines, 1):
        f = ln.split()
        if not f or f[0].startswith("#"):
            continue
        where = f"{path}:{lineno}"
        if len(f) != 3:       # "0 n1 0 1" (cores with a blank) would bind to core 0 alone
            raise UserError(f"{where}: expected 'rank host core[,core...]' (cores joined by commas, no blanks), "
                            f"got {len(f)} field(s)")
        r = valid.integer(f[0], where, "rank", 0, valid.MAX_RANKS - 1, float_form=False)
        if r in rows:
            raise UserError(f"{where}: rank {r} listed twice (also at {rows[r][2][0]})")
        if not any_order and r != len(rows):
            raise UserError(f"{where}: ranks must be listed in order 0, 1, 2... (found {r}, expected {len(rows)})")
        host = hostnames.check_name(f[1], where)
        cs = [valid.integer(c, where, "core", 0, valid.MAX_CORES_PER_NODE - 1, float_form=False)
              for c in f[2].split(",")]
        rows[r] = (host, cs, (where, None))
    missing = next((r for r in range(len(rows)) if r not in rows), None)
    if missing is not None:
        raise UserError(f"{path}: rank {missing} is missing (ranks 0..{len(rows) - 1} are listed, "
                        f"up to {max(rows)})")
    order = range(len(rows))
    return [rows[r][0] for r in order], [rows[r][1] for r in order], [rows[r][2] for r in order]


_BLANKS = re.compile(r"[^\S \t\r\n\f\v]")


def _read_lines(path: Path) -> list[str]:
    lines = valid.read_text(path, "binding file or hostfile").splitlines()
    for lineno, ln in enumerate(lines, 1):
        # Python's split() takes a no-break space for a blank, rankmap-bind, Slurm and Open MPI
        # do not: the same line would be read two ways
        m = _BLANKS.search(ln.split("#", 1)[0])
        if m:
            raise UserError(f"{path}:{lineno}: a blank that is not a space or tab (U+{ord(m.group()):04X}); "
                            "separate fields with spaces")
    return lines


def read_placement(path: str | Path) -> Placement:
    """A mapping directory (its binding.txt, checked against its hostfile), a binding file
    (`rank host core[,core...]`) or a hostfile (one host per line, `host:k` or Open MPI's
    `host slots=N` allowed)."""
    p = Path(path)
    if p.is_dir():
        if not (p / "binding.txt").exists() and not (p / "hostfile").exists():
            raise UserError(f"{p}: no binding.txt or hostfile in this directory (rankmap map --out writes one)")
        if not (p / "binding.txt").exists():
            pl = read_placement(p / "hostfile")
            return Placement(p, pl.hosts, None, True, pl.lines)
        hosts, cores, wheres = _binding_rows(p / "binding.txt", _read_lines(p / "binding.txt"))
        if (p / "hostfile").exists():
            hpl = read_placement(p / "hostfile")
            hf = hpl.hosts
            if hf != hosts:
                # which rank, on which lines: "hostfile (8 ranks) and binding.txt (8 ranks) disagree"
                # left a user who had edited one of them to compare the files by eye
                r = next((i for i in range(min(len(hf), len(hosts))) if hf[i] != hosts[i]), None)
                if r is None:
                    raise UserError(f"{p}: hostfile ({len(hf)} ranks) and binding.txt ({len(hosts)} ranks) disagree; "
                                    "write the mapping again, or edit both")
                at = hpl.lines[r][0] if hpl.lines else p / "hostfile"
                raise UserError(f"{p}: hostfile and binding.txt disagree at rank {r}: {hf[r]} ({at}) and "
                                f"{hosts[r]} ({wheres[r][0]}); write the mapping again, or edit both")
        return Placement(p, hosts, cores, True, wheres)
    lines = _read_lines(p)
    first = next((ln.split() for ln in lines if ln.strip() and not ln.lstrip().startswith("#")), None)
    if first is None:
        raise UserError(f"{p}: no rank in this file")
    if len(first) >= 3 and first[0].isdigit():
        return Placement(p, *_binding_rows(p, lines))
    if first[0] == "rank":
        return Placement(p, *_binding_rows(p, _rankfile_rows(p, lines), any_order=True))
    hosts, wheres, first_at = [], [], {}
    for lineno, ln in enumerate(lines, 1):
        if ln.strip() and not ln.lstrip().startswith("#"):
            where = f"{p}:{lineno}"
            words = hostnames.ompi_words(ln)
            if len(words) == 1 and "," in words[0] and ":" not in words[0]:
                # Slurm's arbitrary hostfile: hosts "one per line or comma separated" (srun(1)),
                # a rank each in order; `n1,n2,n1,n2` was "'n1,n2,n1,n2' is not a host name"
                for h in words[0].split(","):
                    hosts.append(hostnames.check_name(h, where))
                    wheres.append((where, None))
                    first_at.setdefault(hosts[-1], (where, False))
                valid.rank_count(len(hosts), str(p))
                continue
            host, colon, k = words[0].partition(":")     # a machinefile's host:k: its next k ranks
            k = valid.integer(k, where, "ranks (host:k)", 1, valid.MAX_RANKS, float_form=False) if colon else 1
            given = words[0] if colon else None
            for w in words[1:]:
                # an Open MPI hostfile's `host slots=N [max_slots=M]`: its next N ranks (mapping by
                # slot, Open MPI's order); anything else was ignored and a rank count could match
                key, eq, val = w.partition("=")
                if key in hostnames.OMPI_SLOT_KEYS and eq and not colon and given is None:
                    k = valid.integer(val, where, "slots (host slots=N)", 1, valid.MAX_RANKS, float_form=False)
                    given = f"{host} {w}"
                elif key not in hostnames.OMPI_MAX_SLOT_KEYS or not eq:
                    raise UserError(f"{where}: expected 'host', 'host:k' or 'host slots=N' (a hostfile line), "
                                    f"got {ln.strip()!r}")
            host = hostnames.check_name(host, where)
            slots = given is not None and not colon
            if host in first_at and (slots or first_at[host][1]):
                # Open MPI refuses it ("multiple definitions of the slot count"); reading its ranks
                # in file order would place them unlike the mpirun that gets the file
                raise UserError(f"{where}: host {host} is listed again (first at {first_at[host][0]}); a host "
                                "given with slots=N is listed once (Open MPI refuses two slot counts for a node)")
            first_at.setdefault(host, (where, slots))
            hosts += [host] * k
            wheres += [(where, given)] * k
            valid.rank_count(len(hosts), str(p))
    valid.rank_count(len(hosts), str(p))
    return Placement(p, hosts, None, lines=wheres)


_RANKFILE = re.compile(r"^\s*rank\s+(\S+?)\s*=\s*(\S+)\s+slot\s*=\s*(\S+)\s*$")


def _rankfile_rows(path: Path, lines: list[str]) -> list[str]:
    """An Open MPI rankfile (`rank R=host slot=C`, what `rankmap map` writes) as binding rows
    `R host C`, line for line (errors keep their line numbers)."""
    out = []
    for lineno, ln in enumerate(lines, 1):
        if not ln.strip() or ln.lstrip().startswith("#"):
            out.append("")
            continue
        m = _RANKFILE.match(ln)
        if not m:
            raise UserError(f"{path}:{lineno}: expected an Open MPI rankfile line 'rank R=host slot=CORE'")
        slot = m.group(3)
        if ":" in slot:
            raise UserError(f"{path}:{lineno}: slot={slot}: socket:core slots are not read here; give the node's "
                            "core numbers (slot=N, slot=N,M or slot=N-M), as `rankmap map` writes them")
        cores = []
        for part in slot.split(","):
            a, dash, b = part.partition("-")     # Open MPI's slot=1-2: cores 1 and 2
            if dash:
                where = f"{path}:{lineno}"
                lo = valid.integer(a, where, "core", 0, valid.MAX_CORES_PER_NODE - 1, float_form=False)
                hi = valid.integer(b, where, "core", lo, valid.MAX_CORES_PER_NODE - 1, float_form=False)
                cores += [str(c) for c in range(lo, hi + 1)]
            else:
                cores.append(part)
        out.append(f"{m.group(1)} {m.group(2)} {','.join(cores)}")
    return out


def _ranges(xs: list[int]) -> str:
    """0-3,6: a sorted list of whole numbers, as ranges."""
    out, i = [], 0
    while i < len(xs):
        j = i
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        out.append(f"{xs[i]}" if i == j else f"{xs[i]}-{xs[j]}")
        i = j + 1
    return ",".join(out)


def read_mapping(path: str | Path, machine: Machine, n: int | None = None) -> np.ndarray:
    """slot_of_rank from a mapping directory, a binding file or a hostfile (ranks of a
    hostfile take their host's slots in order)."""
    pl = read_placement(path)
    index = {h: k for k, h in enumerate(machine.hosts)}
    by_node = functools.cache(machine.slots_by_node)
    # each rank takes the first free slot of its node (on its core): the slots sorted by
    # (node, core), each group's next free one counted. A scan of the node's free slots per
    # rank was quadratic in the slots per node (10^6 ranks on nodes of 1,000 slots: 100 s to
    # read the mapping, 8 s to make it)
    width = int(machine.slot_core.max()) + 1 if pl.cores is not None else 1
    key = machine.slot_node.astype(np.int64) * width + (machine.slot_core if pl.cores is not None else 0)
    order = np.argsort(key, kind="stable")
    sorted_key = key[order]
    taken = np.zeros(len(order) + 1, dtype=np.int64)
    slot = np.full(len(pl.hosts), -1, dtype=np.int64)
    for r, host in enumerate(pl.hosts):
        where, hk = pl.lines[r] if pl.lines else (pl.source, None)
        if host not in index:
            # which list: the machine's (--nodes, a platform's hosts, the allocation's), named
            listed = hostnames.compress(machine.hosts)
            listed = listed if len(listed) <= 80 else listed[:77] + "..."
            raise UserError(f"{where}: rank {r}: host {host} is not in the node list ({listed}"
                            f"{'; ' + machine.hosts_from if machine.hosts_from else ''}): "
                            "the mapping was made for other nodes")
        node = index[host]
        core = pl.cores[r][0] if pl.cores is not None else None
        at = node * width + (core if core is not None and 0 <= core < width else 0)
        lo = int(np.searchsorted(sorted_key, at))
        group = int(np.searchsorted(sorted_key, at, side="right")) - lo
        if core is not None and not 0 <= core < width:
            group = 0
        cands = max(group - int(taken[lo]), 0)       # free slots left there (none when group is 0)
        # every core of the line must be the node's (a rank bound to several: the first is its slot)
        more = pl.cores[r][1:] if pl.cores is not None else []
        if (not cands and core is not None) or more:
            have = sorted(set(machine.slot_core[by_node()[node]].tolist()))
            bad = next((c for c in [core, *more] if c not in have), None)
            if bad is not None:
                raise UserError(f"{where}: rank {r}: {host} has no core {bad} in this machine (its cores: "
                                f"{_ranges(have)})")
        if not cands:
            what = f"core {core} of {host}" if core is not None else host
            # a machinefile's host:k gives k ranks (MPICH, Intel MPI), not k slots
            k = f"; {hk!r} gives {host} its next {re.findall(r'[0-9]+', hk)[-1]} ranks" if hk else ""
            raise UserError(f"{where}: rank {r}: no free slot left on {what} (more ranks than slots there{k})")
        slot[r] = order[lo + taken[lo]]
        taken[lo] += 1
    if n is not None and len(slot) != n:
        raise UserError(f"{pl.source}: the mapping has {len(slot)} ranks, the traffic has {n}")
    return slot
