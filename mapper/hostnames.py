"""Node lists: a Slurm hostlist expression (n[01-36]) or a file of them.

Expansion uses python-hostlist (the same syntax as Slurm's, and it needs no cluster
configuration, unlike `scontrol show hostnames`)."""
from __future__ import annotations

import re
from operator import itemgetter
from pathlib import Path

import hostlist
import numpy as np

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

# python-hostlist refuses ranges of more than 10^5 hosts (its MAX_SIZE); expand() counts the
# hosts first and refuses beyond validate.MAX_NODES itself, so the library may go that far
# (a 10^7-rank job on nodes of 32 cores names 312,500 of them)
hostlist.MAX_SIZE = max(hostlist.MAX_SIZE, validate.MAX_NODES)




def check_name(host: str, where: str) -> str:
    """A host name: letters, digits, '.', '_', '-' (no spaces, no path)."""
    return validate.host_name(host, where)


def count(expr: str) -> int | None:
    """How many hosts a hostlist expression names, without expanding it (None: unparsable)."""
    total, depth, term = 0, 0, ""
    for ch in expr + ",":
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        if ch == "," and depth == 0:
            n = 1
            for group in re.findall(r"\[([^\]]*)\]", term):
                k = 0
                for item in group.split(","):
                    a, _, b = item.partition("-")
                    if not a.strip().isdigit() or (b and not b.strip().isdigit()):
                        return None
                    k += (int(b) - int(a) + 1) if b else 1
                n *= max(k, 0)
            total += n
            term = ""
        else:
            term += ch
    return total


def _commas(expr: str) -> str:
    """Blanks between hostlists separate them, as in Slurm's own hostlists ('n[1-4] n[5-8]',
    'n1, n2'): python-hostlist would keep them inside one name (and product 'n1 n5')."""
    out, depth = [], 0
    for part in re.split(r"(\[|\]|\s+)", expr.strip()):
        depth += (part == "[") - (part == "]")
        out.append("," if part.isspace() and depth == 0 else part.strip() if part.isspace() else part)
    return re.sub(r",{2,}", ",", "".join(out))


def expand(expr: str, where: str | None = None) -> list[str]:
    label = where or f"hostlist {expr!r}"
    expr = _commas(expr)
    n = count(expr.strip())
    if n is not None and n > validate.MAX_NODES:
        raise UserError(f"{label}: names {n} hosts; rankmap handles at most {validate.MAX_NODES}")
    try:
        hosts = hostlist.expand_hostlist(expr.strip(), allow_duplicates=True)
    except hostlist.BadHostlist as e:
        raise UserError((f"{where}: " if where else "") + f"bad hostlist expression {expr!r}: {e}") from None
    if not hosts:
        raise UserError((f"{where}: " if where else "") + f"hostlist {expr!r} names no host")
    if len(hosts) > validate.MAX_NODES:
        raise UserError(f"{label}: names {len(hosts)} hosts; rankmap handles at most {validate.MAX_NODES}")
    for h in hosts:
        check_name(h, label)
    return hosts


_SPLIT = re.compile(r"^(.*?)([0-9]*)([^0-9]*)$")
_SPLIT_LINES = re.compile(r"^(.*?)([0-9]*)([^0-9\n]*)$", re.M)
_UNUSUAL = re.compile(r"[^\S\n]|[\[\],]|^$", re.M)   # blanks, brackets, commas, an empty name
_POW10 = np.array([10 ** k for k in range(19)], dtype=np.int64)


def compress(hosts: list[str]) -> str:
    """The Slurm hostlist of `hosts`: exactly python-hostlist's collect_hostlist (the same
    string), but each prefix/suffix group's runs are found with numpy: 10^5 hosts in about
    0.1 s instead of 0.4-0.9 s. Unusual names (blanks, brackets, commas, an empty name,
    numbers of more than 17 digits) go to python-hostlist itself."""
    hosts = list(hosts)
    if not hosts:
        return ""
    try:
        text = "\n".join(hosts)
    except TypeError:                    # not all names are text: python-hostlist says so
        return hostlist.collect_hostlist(hosts)
    if text.count("\n") != len(hosts) - 1 or _UNUSUAL.search(text):
        return hostlist.collect_hostlist(hosts)
    parts = _SPLIT_LINES.findall(text)
    rights = [""] * len(parts)
    while True:
        out = _collect_once(parts, rights)
        if out is None:
            return hostlist.collect_hostlist(hosts)
        lr, again = out
        if not again:
            return ",".join(left + right for left, right in lr)
        parts = [_SPLIT.match(left).groups() for left, _ in lr]
        rights = [right for _, right in lr]


def _collect_once(parts, rights):
    """One pass of python-hostlist's collect_hostlist_1 (the rightmost number of each left
    part, split as (prefix, number, suffix), collected into ranges), group by group; None:
    a group it does not take."""
    groups: dict = {}
    if len(parts) > 1000:                # the usual machine: one prefix and one suffix, names numbered
        pre, suf, rig = set(map(itemgetter(0), parts)), set(map(itemgetter(2), parts)), set(rights)
        nums = list(map(itemgetter(1), parts))
        if len(pre) == 1 and len(suf) == 1 and len(rig) == 1 and "" not in nums:
            groups[(pre.pop(), suf.pop() + rig.pop())] = nums
            parts, rights = [], []
    for (prefix, num, suffix), right in zip(parts, rights):
        if not num:
            groups.setdefault((prefix + suffix + right, None), None)
        else:
            groups.setdefault((prefix, suffix + right), []).append(num)
    results, again = [], False
    for key in sorted(groups, key=lambda k: (k[0], "" if k[1] is None else k[1], k[1] is not None)):
        prefix, suffix = key
        nums = groups[key]
        if nums is None:
            results.append(("", prefix))
            continue
        again = True
        ranges = _ranges(nums)
        if ranges is None:
            return None
        if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
            results.append((prefix, "%0*d%s" % (ranges[0][2], ranges[0][0], suffix)))
        else:
            results.append((prefix, "[" + ",".join(hostlist.format_range(lo, hi, w) for lo, hi, w in ranges)
                            + "]" + suffix))
    return results, again


def _ranges(nums: list[str]):
    """(low, high, width) runs of one group's number strings, as python-hostlist finds them:
    in numeric order, a run goes on while the next number (formatted at the run's width)
    is among the strings. Vectorized when the group's numbers are all unpadded or all of
    one width; a mixed group is walked as python-hostlist walks it."""
    widths = np.fromiter(map(len, nums), np.int64, len(nums))
    if widths.max() > 17:          # value * 32 + width stays within int64
        return None
    vals = np.fromiter(map(int, nums), np.int64, len(nums))
    key = np.unique(vals * 32 + widths)                   # sorted by value, then width; duplicates gone
    v, w = key >> 5, key & 31
    digits = np.maximum(np.searchsorted(_POW10, v, side="right"), 1)
    if not ((w == digits).all() or (w == w[0]).all()):
        remaining = {"%0*d" % (b, a) for a, b in zip(v.tolist(), w.tolist())}
        out = []
        for a, b in zip(v.tolist(), w.tolist()):
            if "%0*d" % (b, a) not in remaining:
                continue
            n = a
            while "%0*d" % (b, n) in remaining:
                remaining.remove("%0*d" % (b, n))
                n += 1
            out.append((a, n - 1, b))
        return out
    starts = np.flatnonzero(np.concatenate(([True], np.diff(v) != 1)))
    ends = np.concatenate((starts[1:], [len(v)])) - 1
    return list(zip(v[starts].tolist(), v[ends].tolist(), w[starts].tolist()))


_FILE_LIKE = re.compile(r"(/|\.(txt|list|lst|hosts?|nodes?|nodelist|csv|json|conf|cfg)$)", re.IGNORECASE)


# An Open MPI hostfile's words after the host, as Open MPI's own hostfile parser takes them
# (Open MPI 4.1: `slots=N`, `count=N` or `cpu=N`, `max_slots=M`, `max-slots=M` or
# `max_count=M`, blanks allowed around '='): `n1 slots = 4` or `max-slots=8`, which mpirun
# runs, were "'=' is not a host name" here
OMPI_SLOT_KEYS = ("slots", "count", "cpu")
OMPI_MAX_SLOT_KEYS = ("max_slots", "max-slots", "max_count")
_EQUALS = re.compile(r"[ \t]*=[ \t]*")       # `slots = 4` as `slots=4` (a host name holds no '=')
_SLOTS = re.compile(r"(?<!\S)(" + "|".join(map(re.escape, OMPI_SLOT_KEYS + OMPI_MAX_SLOT_KEYS)) + r")=[0-9]+(?!\S)")


def ompi_words(line: str) -> list[str]:
    """A hostfile line's words (its # comment dropped), `key = value` joined as `key=value`."""
    return _EQUALS.sub("=", line.split("#", 1)[0]).split()


# an MPICH machinefile's `host:k` (k ranks there; what `rankmap map` writes as machinefile):
# was "'n1:2' is not a host name"
_COLON_K = re.compile(r"(?<=[A-Za-z0-9_.\]-]):[0-9]+(?!\S)")


def node_list(spec: str, option: str = "--nodes") -> list[str]:
    """Hosts from `spec`: '@FILE' or an existing file (one hostlist per line, # comments),
    or a hostlist expression. A name that looks like a file (a '/', or an extension such
    as .txt) but names none is an error, not a host of that name."""
    if spec is None or not str(spec).strip():
        raise UserError(f"{option} '{spec or ''}': empty node list (an unset shell variable?)")
    path = Path(spec[1:]) if spec.startswith("@") else Path(spec)
    try:
        is_file = path.is_file()
    except OSError as e:         # a name too long for a path (a host list of long names): not a file
        if spec.startswith("@") or "/" in spec:
            raise UserError(f"{option} {spec[:80]}: {e.strerror}") from None
        is_file = False
    if spec.startswith("@") or (is_file and "[" not in spec) or ("/" in spec and "[" not in spec):
        if path.is_dir():
            raise UserError(f"{option} {spec}: {path} is a directory, not a file of host names")
        if not path.exists():
            raise UserError(f"{option} {spec}: {path}: no such file")
        hosts = []
        for lineno, ln in enumerate(validate.read_text(path, "node list").splitlines(), 1):
            # an Open MPI hostfile's `host slots=N max_slots=M`: the host (its cores come from
            # --node-topology)
            ln = _COLON_K.sub("", _SLOTS.sub(" ", " ".join(ompi_words(ln)))).strip()
            if ln:
                hosts.extend(expand(ln, f"{path}:{lineno}"))
                if len(hosts) > validate.MAX_NODES:
                    raise UserError(f"{path}:{lineno}: more than {validate.MAX_NODES} hosts")
        if not hosts:
            raise UserError(f"{option} {spec}: {path} names no host")
        seen: set = set()
        again = next((h for h in hosts if h in seen or seen.add(h)), None)
        if again is not None:
            # a file of one line per rank ($PBS_NODEFILE, a hostfile rankmap wrote) is the
            # usual cause: said, with the way out, instead of a bare "appears twice"
            raise UserError(f"{option} {spec}: host {again} appears twice in the node list; a node file names each "
                            "node once (a hostfile of one line per rank, such as $PBS_NODEFILE, lists hosts again: "
                            "sort -u it)")
    else:
        if _FILE_LIKE.search(spec) and "[" not in spec:
            raise UserError(f"{option} {spec}: no such file (a node list file); a host list looks like n[01-36]")
        if spec.strip().isdigit():
            # `--nodes 4` meant four nodes, and was one host named "4" (with --oversubscribe every
            # rank was mapped onto it, without a word)
            raise UserError(f"{option} {spec}: a number; {option} names the nodes (a hostlist such as n[1-{spec.strip()}]"
                            f", or a file); a host whose name is all digits is written [{spec.strip()}]")
        hosts = expand(spec, f"{option} {spec!r}")
    return no_duplicates(hosts, option)


def no_duplicates(hosts: list[str], option: str) -> list[str]:
    """Each host once: a host named twice would be two nodes with one name."""
    seen = set()
    dup = [h for h in hosts if h in seen or seen.add(h)]
    if dup:
        raise UserError(f"{option}: host {dup[0]} appears twice in the node list")
    return hosts
