"""A node's internals from hwloc: packages, NUMA nodes, cores, PUs.

Every description goes through hwloc's own `lstopo-no-graphics ... --of xml`: an XML
file from lstopo, a synthetic description ('pack:2 core:6'), or 'live' (this machine).
Cores are numbered by hwloc logical index, which is what binding files use."""
from __future__ import annotations

import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from profiler.errors import UserError

LSTOPO = "lstopo-no-graphics"


@dataclass(frozen=True)
class NodeTopology:
    spec: str
    core_package: tuple   # per core (logical index): package index within the node
    core_numa: tuple      # per core: NUMA node index within the node
    core_pus: tuple       # per core: tuple of PU OS indices (what affinity masks name)

    @property
    def cores(self) -> int:
        return len(self.core_package)

    @property
    def packages(self) -> int:
        return max(self.core_package) + 1 if self.core_package else 0

    @property
    def numas(self) -> int:
        return max(self.core_numa) + 1 if self.core_numa else 0

    @property
    def numa_per_package(self) -> int:
        per = {}
        for p, n in zip(self.core_package, self.core_numa):
            per.setdefault(p, set()).add(n)
        return max(len(v) for v in per.values()) if per else 1

    def describe(self) -> str:
        s = f"{self.packages} package(s) x {self.cores // max(1, self.packages)} cores"
        if self.numa_per_package > 1:
            s += f", {self.numa_per_package} NUMA nodes per package"
        return s

    def core_of_pu(self) -> dict:
        return {pu: c for c, pus in enumerate(self.core_pus) for pu in pus}


def _xml_for(spec: str) -> str:
    if shutil.which(LSTOPO) is None:
        raise UserError(f"{LSTOPO} not found: install hwloc (apt-get install hwloc)")
    s = spec.strip()
    if s == "live":
        args = [LSTOPO, "--of", "xml", "-"]
    elif Path(s).exists():
        args = [LSTOPO, "--input", s, "--of", "xml", "-"]
    else:
        levels = s.split()
        if not levels or any(":" not in lv for lv in levels):
            raise UserError(f"node topology {spec!r}: not a file, 'live', or a synthetic description "
                            "such as 'pack:2 core:6'")
        if not levels[-1].lower().startswith("pu"):
            s += " pu:1"  # hwloc wants PUs as the last level
        args = [LSTOPO, "--input", s, "--of", "xml", "-"]
    res = subprocess.run(args, capture_output=True, text=True, env={"HWLOC_COMPONENTS": "-gl", "PATH": "/usr/bin:/bin"})
    if res.returncode != 0 or "<topology" not in res.stdout:
        err = (res.stderr.strip().splitlines() or ["hwloc could not read it"])[-1]
        raise UserError(f"node topology {spec!r}: {err}")
    return res.stdout


@lru_cache(maxsize=None)
def load(spec: str) -> NodeTopology:
    root = ET.fromstring(_xml_for(spec))
    core_package, core_numa, core_pus = [], [], []
    pkg_counter = [0]
    numa_index: dict[int, int] = {}

    def numa_of(obj) -> int | None:
        for ch in obj.findall("object"):
            if ch.get("type") == "NUMANode":
                os_idx = int(ch.get("os_index", len(numa_index)))
                return numa_index.setdefault(os_idx, len(numa_index))
        return None

    def pus_below(obj):
        if obj.get("type") == "PU":
            return [int(obj.get("os_index"))]
        out = []
        for ch in obj.findall("object"):
            out += pus_below(ch)
        return out

    def walk(obj, pkg, numa):
        t = obj.get("type")
        if t == "Package":
            pkg = pkg_counter[0]
            pkg_counter[0] += 1
        n = numa_of(obj)
        if n is not None:
            numa = n
        if t == "Core" or (t == "PU" and not has_cores):
            core_package.append(pkg if pkg is not None else 0)
            core_numa.append(numa if numa is not None else 0)
            core_pus.append(tuple(pus_below(obj)))
            return
        for ch in obj.findall("object"):
            if ch.get("type") != "NUMANode":
                walk(ch, pkg, numa)

    top = root.find("object")
    if top is None:
        raise UserError(f"node topology {spec!r}: empty hwloc topology")
    has_cores = any(o.get("type") == "Core" for o in top.iter("object"))
    walk(top, None, None)
    if not core_package:
        raise UserError(f"node topology {spec!r}: no cores")
    # renumber packages densely in order of appearance (hwloc logical order)
    return NodeTopology(spec=spec, core_package=tuple(core_package), core_numa=tuple(core_numa),
                        core_pus=tuple(core_pus))
