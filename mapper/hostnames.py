"""Node lists: a Slurm hostlist expression (n[01-36]), a file, or SLURM_JOB_NODELIST.

Expansion uses python-hostlist (the same syntax as Slurm's, and it needs no cluster
configuration, unlike `scontrol show hostnames`)."""
from __future__ import annotations

import os
from pathlib import Path

import hostlist

from profiler.errors import UserError


def expand(expr: str) -> list[str]:
    try:
        hosts = hostlist.expand_hostlist(expr.strip())
    except hostlist.BadHostlist as e:
        raise UserError(f"bad hostlist expression {expr!r}: {e}") from None
    if not hosts:
        raise UserError(f"hostlist {expr!r} names no host")
    return hosts


def compress(hosts: list[str]) -> str:
    return hostlist.collect_hostlist(hosts)


def node_list(spec: str | None) -> list[str]:
    """Hosts from `spec`: '@FILE' or an existing file (one hostlist per line, # comments),
    a hostlist expression, or None for $SLURM_JOB_NODELIST."""
    if spec is None:
        env = os.environ.get("SLURM_JOB_NODELIST")
        if not env:
            raise UserError("no node list: pass --nodes (a hostlist such as n[01-36], or a file), "
                            "or run inside a Slurm allocation")
        spec = env
    path = Path(spec[1:]) if spec.startswith("@") else Path(spec)
    if spec.startswith("@") or (path.exists() and path.is_file() and "[" not in spec):
        try:
            lines = path.read_text().splitlines()
        except OSError as e:
            raise UserError(f"{path}: {e.strerror}") from None
        hosts = []
        for ln in lines:
            ln = ln.split("#", 1)[0].strip()
            if ln:
                hosts.extend(expand(ln))
    else:
        hosts = expand(spec)
    seen = set()
    dup = [h for h in hosts if h in seen or seen.add(h)]
    if dup:
        raise UserError(f"host {dup[0]} appears twice in the node list")
    return hosts
