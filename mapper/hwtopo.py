"""A node's internals from hwloc: packages, NUMA nodes, cores, PUs.

Every description goes through hwloc's own `lstopo-no-graphics ... --of xml`: an XML
file from lstopo, a synthetic description ('pack:2 core:6'), or 'live' (this machine).
Cores are numbered by hwloc logical index, which is what binding files use."""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from rankmap.profiler import validate
from rankmap.profiler.errors import UserError

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
        per = [self.core_package.count(p) for p in range(self.packages)]
        if len(set(per)) > 1:
            # offline cores, a cgroup, P- and E-core clusters: '4 package(s) x 1 cores' was said of
            # a node of 6 cores (2 + 1 + 1 + 2)
            s = f"{self.cores} cores in {self.packages} package(s) ({'+'.join(map(str, per))})"
        else:
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
    if not s:
        raise UserError(f"node topology {spec!r}: empty (an unset shell variable?); give e.g. 'pack:2 core:6'")
    if s == "live":
        args = [LSTOPO, "--of", "xml", "-"]
    elif Path(s).exists():
        if Path(s).is_dir():
            raise UserError(f"node topology {spec!r}: a directory, not an lstopo XML file")
        _check_xml(s, spec)          # readable, not absurdly large, XML with a <topology> root
        args = [LSTOPO, "--input", s, "--of", "xml", "-"]
    else:
        s = _synthetic(s, spec)
        args = [LSTOPO, "--input", s, "--of", "xml", "-"]
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=LSTOPO_SECONDS,
                             env={"HWLOC_COMPONENTS": "-gl", "PATH": "/usr/bin:/bin"})
    except subprocess.TimeoutExpired:
        raise UserError(f"node topology {spec!r}: hwloc did not describe it within {LSTOPO_SECONDS} s") from None
    if res.returncode != 0 or "<topology" not in res.stdout:
        err = (res.stderr.strip().splitlines() or ["hwloc could not read it"])[-1]
        newer = re.search(r"cannot import XML version (\d+)\.(\d+) > (\d+)", res.stderr)
        if newer is not None and Path(s).is_file():
            # hwloc 3 writes <topology version="3.0">, which hwloc 2 refuses with "Invalid argument"
            # on its last line: that was read as a damaged file
            raise UserError(f"{s}: an lstopo XML of format {newer.group(1)}.{newer.group(2)} (written by hwloc "
                            f"{newer.group(1)}.x); this machine's {LSTOPO} reads up to format {newer.group(3)}: "
                            "on the machine that wrote it, write it again with `lstopo --of v2xml FILE.xml` (or "
                            f"install hwloc {newer.group(1)}.x here) (--node-topology {spec!r})")
        if Path(s).is_file():        # hwloc's own words ("Invalid argument") do not say what is wrong
            err = f"hwloc could not load this topology ({validate.one_line(err)}): an lstopo XML needs a Machine " \
                  "object down to its PUs, as `lstopo --of xml` writes"
        raise UserError(f"node topology {spec!r}: {validate.one_line(err)}")
    return res.stdout


def _check_xml(path: str, spec: str) -> None:
    """An lstopo XML file: well-formed (a truncated copy is named with its line), its root a
    <topology>. hwloc says only "Invalid argument" for either."""
    data = validate.read_bytes(path, "lstopo XML file")
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise UserError(f"{path}:{e.position[0]}: not well-formed XML ({validate.one_line(e)}); an lstopo XML file "
                        f"(lstopo --of xml) was expected (--node-topology {spec!r})") from None
    if root.tag != "topology":
        raise UserError(f"{path}: XML whose root is <{root.tag}>, not an lstopo <topology> "
                        f"(--node-topology {spec!r})")
    # `lstopo --disallowed --of xml` (or hwloc's INCLUDE_DISALLOWED flag) keeps the PUs the
    # process may not use (a job's cgroup, Slurm's specialized cores) and marks them only in
    # the machine's allowed_cpuset; hwloc reading the file back forgets it, and ranks were
    # mapped onto cores no task could be bound to
    top = root.find("object")
    allowed = _cpuset(top.get("allowed_cpuset")) if top is not None else None
    if allowed is not None:
        barred = sorted(int(o.get("os_index")) for o in top.iter("object")
                        if o.get("type") == "PU" and (o.get("os_index") or "").isdigit()
                        and not allowed(int(o.get("os_index"))))
        if barred:
            shown = ", ".join(f"P#{i}" for i in barred[:8]) + (", ..." if len(barred) > 8 else "")
            raise UserError(f"{path}: {len(barred)} PU(s) ({shown}) are outside the machine's allowed_cpuset (an "
                            "lstopo --disallowed export?): no rank could be bound there; write the XML without "
                            f"--disallowed, where the job runs (lstopo --of xml) (--node-topology {spec!r})")


def _cpuset(text: str | None):
    """hwloc's cpuset text ('0x000000ff', '0xffffffff,0x0000000f', '0xf...f,0x00000003':
    32-bit words, the highest first; 'f...f' leads an infinite set) as i -> bool; None when
    absent or not of that form (hwloc itself says what is wrong then)."""
    if not text:
        return None
    words = [w.strip().lower() for w in text.split(",")]
    infinite = words[0] == "0xf...f"
    words = words[1:] if infinite else words
    if not all(re.fullmatch(r"0x[0-9a-f]{1,8}", w) for w in words):
        return None
    bits = int("".join(w[2:].rjust(8, "0") for w in words) or "0", 16)
    width = 32 * len(words)
    return lambda i: (infinite and i >= width) or bool(bits >> i & 1)


LSTOPO_SECONDS = 120
_LEVEL = re.compile(r"^([A-Za-z][A-Za-z0-9]*):(\d+)$")


def _synthetic(s: str, spec: str) -> str:
    """A synthetic description 'TYPE:N ...' checked before hwloc builds it: each N a whole
    number >= 1, and at most MAX_CORES_PER_NODE cores and PUs in all (hwloc would take
    minutes to describe a node of 65536 cores, and no node has that many)."""
    levels = s.split()
    if not levels or any(":" not in lv for lv in levels):
        raise UserError(f"node topology {spec!r}: not a file, 'live', or a synthetic description "
                        "such as 'pack:2 core:6'")
    total = 1
    for lv in levels:
        m = _LEVEL.match(lv)
        if not m:
            raise UserError(f"node topology {spec!r}: {lv!r} is not TYPE:COUNT (e.g. core:6)")
        k = int(m.group(2))
        if k < 1:
            raise UserError(f"node topology {spec!r}: {lv!r}: the count must be >= 1")
        total *= k
        if total > validate.MAX_CORES_PER_NODE:
            raise UserError(f"node topology {spec!r}: more than {validate.MAX_CORES_PER_NODE} cores per node; "
                            "no real node has that many")
    # levels go from the top down: 'core:8 pack:2' (2 packages x 8 cores, in the wrong order)
    # made hwloc put two packages inside each core, which was read as 8 cores of 2 PUs: half
    # the node, without a word
    names = [lv.split(":", 1)[0].lower() for lv in levels]
    core = next((i for i, n in enumerate(names) if n.startswith("core")), None)
    late = next((lv for i, lv in enumerate(levels) if core is not None and i > core and not names[i].startswith("pu")),
                None)
    early_pu = next((lv for i, lv in enumerate(levels[:-1]) if names[i].startswith("pu")), None)
    if late is not None or early_pu is not None:
        what = f"{late!r} comes after {levels[core]!r}" if late is not None else f"{early_pu!r} is not the last level"
        raise UserError(f"node topology {spec!r}: {what}; a synthetic description goes from the top down (packages, "
                        "NUMA nodes or caches, then cores, then PUs), e.g. 'pack:2 core:8'")
    # one blank between levels: hwloc refuses a tab ('pack:2\tcore:4' from a script's variable
    # was "Setting synthetic topology description: Invalid argument")
    s = " ".join(levels)
    if not names[-1].startswith("pu"):
        s += " pu:1"  # hwloc wants PUs as the last level
    return s


@lru_cache(maxsize=None)
def load(spec: str) -> NodeTopology:
    try:
        root = ET.fromstring(_xml_for(spec))
    except ET.ParseError as e:
        raise UserError(f"node topology {spec!r}: hwloc's XML is not readable ({e})") from None
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
            idx = obj.get("os_index", "")
            if not idx.isdigit():
                raise UserError(f"node topology {spec!r}: a PU with os_index {idx!r}; hwloc's XML gives every PU "
                                "its OS index (write it with `lstopo --of xml`)")
            return [int(idx)]
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
    empty = next((c for c, pus in enumerate(core_pus) if not pus), None)
    if empty is not None:
        # ranks were mapped onto it and no CPU could bind them (srun's CPU list failed)
        raise UserError(f"node topology {spec!r}: core L#{empty} has no PU (processing unit); a damaged or "
                        "edited XML? `lstopo --of xml` lists every core's PUs")
    seen: dict[int, int] = {}
    for c, pus in enumerate(core_pus):
        for pu in pus:
            if seen.setdefault(pu, c) != c or pus.count(pu) > 1:
                raise UserError(f"node topology {spec!r}: PU P#{pu} appears twice (cores L#{seen[pu]} and L#{c}); "
                                "each PU belongs to one core")
    if len(core_package) > validate.MAX_CORES_PER_NODE:
        raise UserError(f"node topology {spec!r}: {len(core_package)} cores; rankmap handles at most "
                        f"{validate.MAX_CORES_PER_NODE} per node")
    # renumber packages densely in order of appearance (hwloc logical order)
    return NodeTopology(spec=spec, core_package=tuple(core_package), core_numa=tuple(core_numa),
                        core_pus=tuple(core_pus))
