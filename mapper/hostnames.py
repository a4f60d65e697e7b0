"""Node lists: a Slurm hostlist expression (n[01-36]) or a file of them.

Expansion uses python-hostlist (the same syntax as Slurm's, and it needs no cluster
configuration, unlike `scontrol show hostnames`)."""
from __future__ import annotations

import re
from pathlib import Path

import hostlist

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

# python-hostlist refuses ranges of more than 10^5 hosts (its MAX_SIZE); expand() counts the
# hosts first and refuses beyond validate.MAX_NODES itself, so the library may go that far
# (a 10^7-rank job on nodes of 32 cores names 312,500 of them)
hostlist.MAX_SIZE = max(hostlist.MAX_SIZE, validate.MAX_NODES)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,254}$")


def check_name(host: str, where: str) -> str:
    """A host name: letters, digits, '.', '_', '-' (no spaces, no path)."""
    if not _NAME.match(host):
        raise UserError(f"{where}: {host[:60]!r} is not a host name (letters, digits, '.', '_', '-')")
    return host


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


def compress(hosts: list[str]) -> str:
    return hostlist.collect_hostlist(hosts)


_FILE_LIKE = re.compile(r"(/|\.(txt|list|lst|hosts?|nodes?|nodelist|csv|json|conf|cfg)$)", re.IGNORECASE)


def node_list(spec: str, option: str = "--nodes") -> list[str]:
    """Hosts from `spec`: '@FILE' or an existing file (one hostlist per line, # comments),
    or a hostlist expression. A name that looks like a file (a '/', or an extension such
    as .txt) but names none is an error, not a host of that name."""
    if spec is None or not str(spec).strip():
        raise UserError(f"{option} '{spec or ''}': empty node list (an unset shell variable?)")
    path = Path(spec[1:]) if spec.startswith("@") else Path(spec)
    if spec.startswith("@") or (path.is_file() and "[" not in spec) or ("/" in spec and "[" not in spec):
        if path.is_dir():
            raise UserError(f"{option} {spec}: {path} is a directory, not a file of host names")
        if not path.exists():
            raise UserError(f"{option} {spec}: {path}: no such file")
        hosts = []
        for lineno, ln in enumerate(validate.read_text(path, "node list").splitlines(), 1):
            ln = ln.split("#", 1)[0].strip()
            if ln:
                hosts.extend(expand(ln, f"{path}:{lineno}"))
                if len(hosts) > validate.MAX_NODES:
                    raise UserError(f"{path}:{lineno}: more than {validate.MAX_NODES} hosts")
        if not hosts:
            raise UserError(f"{option} {spec}: {path} names no host")
    else:
        if _FILE_LIKE.search(spec) and "[" not in spec:
            raise UserError(f"{option} {spec}: no such file (a node list file); a host list looks like n[01-36]")
        hosts = expand(spec, f"{option} {spec!r}")
    return no_duplicates(hosts, option)


def no_duplicates(hosts: list[str], option: str) -> list[str]:
    """Each host once: a host named twice would be two nodes with one name."""
    seen = set()
    dup = [h for h in hosts if h in seen or seen.add(h)]
    if dup:
        raise UserError(f"{option}: host {dup[0]} appears twice in the node list")
    return hosts
