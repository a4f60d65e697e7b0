"""Finding the applications under the user's sources directory, and building them.

Each application is recognised by files it must have, anywhere up to four levels below
--sources (a git clone, a release tarball unpacked, a subdirectory of one): the directory
names do not matter. A build never writes into the sources: the tree is copied into
WORK/build/<toolchain>/<app>/ and built there with the benchmark's own makefiles; what we
pass are compiler names and flags on make's command line, and NPB's config/make.def (the file
its README says to write). The toolchain `smpi` uses SimGrid's smpicc/smpicxx/smpif90 (the
simulated runs), `mpi` the system's mpicc/mpicxx/mpif90 (the real runs on Slurm)."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from rankmap.profiler.errors import UserError


@dataclass(frozen=True)
class App:
    key: str
    title: str
    repo: str            # where the sources come from
    markers: tuple       # files (relative to the app's root) that identify it
    root: str = ""       # the part of the tree that is built (relative to the found root)
    version_file: str = ""
    version_re: str = ""


APPS = {
    "npb": App("npb", "NAS Parallel Benchmarks 3.4 (MPI)",
               "https://www.nas.nasa.gov/software/npb.html (NPB3.4.1.tar.gz; GitHub mirror lmontigny/NPB3.4.1)",
               ("sys/setparams.c", "LU/lu.f90", "BT/bt.f90", "SP/sp.f90", "CG/cg.f90", "MG/mg.f90", "FT/ft.f90"),
               version_file="sys/setparams.c", version_re=r'#define VERSION "([^"]+)"'),
    "lulesh": App("lulesh", "LULESH 2", "https://github.com/LLNL/LULESH", ("lulesh.cc", "lulesh-comm.cc"),
                  version_file="lulesh.cc", version_re=r"Version (\d+\.\d+)"),
    "minife": App("minife", "miniFE (reference version)", "https://github.com/Mantevo/miniFE",
                  ("ref/src/main.cpp", "ref/src/cg_solve.hpp"), root="ref",
                  version_file="kokkos/utils/miniFE_version.h", version_re=r'MINIFE_VERSION "([^"]+)"'),
    "cloverleaf": App("cloverleaf", "CloverLeaf (2-D, reference version)", "https://github.com/UK-MAC/CloverLeaf_ref",
                      ("clover_leaf.f90", "hydro.f90", "clover.f90"),
                      version_file="data.f90", version_re=r"g_version=([0-9.]+)"),
    "hpcg": App("hpcg", "HPCG", "https://github.com/hpcg-benchmark/hpcg", ("src/main.cpp", "setup/Make.Linux_MPI"),
                version_file="src/ReportResults.cpp", version_re=r'OutputFile doc\("HPCG-Benchmark", "([^"]+)"'),
    "miniamr": App("miniamr", "miniAMR (reference version)", "https://github.com/Mantevo/miniAMR",
                   ("ref/main.c", "ref/stencil.c", "ref/rcb.c"), root="ref",
                   version_file="ref/profile.c", version_re=r'char \*version = "([^"]+)"'),
}

TOOLCHAINS = {
    "smpi": {"cc": "smpicc", "cxx": "smpicxx", "fc": "smpif90"},
    "mpi": {"cc": "mpicc", "cxx": "mpicxx", "fc": "mpif90"},
}
FFLAGS = "-O2 -fallow-argument-mismatch"   # gfortran >= 10 rejects mpif.h's untyped buffers without it
CFLAGS = "-O2"


def find(sources: Path) -> dict[str, Path]:
    """App key -> the directory that holds it (its markers), searched up to 4 levels deep."""
    if not sources.is_dir():
        what = "a file, not a directory" if sources.exists() else "no such directory"     # a tarball given as DIR
        raise UserError(f"--sources {sources}: {what} (download the applications there; "
                        "docs/real-apps.md lists them)")
    found: dict[str, Path] = {}
    base_depth = len(sources.resolve().parts)
    for dirpath, dirnames, _ in os.walk(sources.resolve()):
        d = Path(dirpath)
        dirnames[:] = sorted(x for x in dirnames if not x.startswith(".") and x not in ("bin", "build"))
        if len(d.parts) - base_depth >= 4:
            dirnames[:] = []
        for key, app in APPS.items():
            if key not in found and all((d / m).is_file() for m in app.markers):
                found[key] = d
    return found


def locate(sources: Path, key: str) -> Path:
    found = find(sources)
    if key not in found:
        app = APPS[key]
        raise UserError(f"{app.title} not found under {sources} (looked for {', '.join(app.markers[:2])}; "
                        f"get it from {app.repo})")
    return found[key]


def describe(key: str, root: Path) -> dict:
    """Version, git commit (when the tree is a clone) and a digest of the source files."""
    app = APPS[key]
    info = {"app": key, "title": app.title, "repo": app.repo, "path": str(root)}
    if app.version_file and (root / app.version_file).is_file():
        m = re.search(app.version_re, (root / app.version_file).read_text(errors="replace"))
        if m:
            info["version"] = m.group(1)
    git = shutil.which("git")
    if git:
        r = subprocess.run([git, "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
        if r.returncode == 0:
            info["commit"] = r.stdout.strip()
            u = subprocess.run([git, "-C", str(root), "remote", "get-url", "origin"], capture_output=True, text=True)
            if u.returncode == 0:
                info["origin"] = u.stdout.strip()
            s = subprocess.run([git, "-C", str(root), "status", "--porcelain", "--untracked-files=no", "."],
                               capture_output=True, text=True)
            info["modified"] = bool(s.stdout.strip())
    info["digest"] = digest(root / app.root)
    return info


def digest(root: Path) -> str:
    """sha256 over the source files' paths and contents (the tree as built), 12 hex digits."""
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and ".git" not in p.parts and p.suffix in (".f90", ".f", ".c", ".cc", ".cpp", ".h", ".hpp",
                                                                  ".inc", "") and p.stat().st_size < 2_000_000:
            h.update(str(p.relative_to(root)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:12]


def _need(tools: dict) -> None:
    for k, exe in tools.items():
        if not shutil.which(exe):
            hint = "install SimGrid (Debian: libsimgrid-dev) and gfortran" if exe.startswith("smpi") else \
                "install Open MPI (Debian: libopenmpi-dev) and gfortran"
            raise UserError(f"{exe} not found: {hint}")


def _make(cwd: Path, args: list[str], log: Path) -> None:
    cmd = ["make", *args]
    with open(log, "a") as f:
        f.write("$ (cd " + str(cwd) + " && " + " ".join(cmd) + ")\n")
        f.flush()
        r = subprocess.run(cmd, cwd=cwd, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        tail = log.read_text(errors="replace").strip().splitlines()[-8:]
        raise UserError(f"build failed in {cwd} (make {' '.join(args[:3])}...); last lines of {log}:\n" +
                        "\n".join(tail))


def _copy(src: Path, dst: Path, stamp: dict) -> None:
    """A fresh copy of the sources in the build directory, unless the same sources were
    copied there before (the stamp says so)."""
    sfile = dst / ".rankmap-build.json"
    if sfile.is_file():
        try:
            if json.loads(sfile.read_text()).get("digest") == stamp["digest"]:
                return
        except ValueError:
            pass
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".git"), symlinks=True)
    sfile.write_text(json.dumps(stamp, indent=2) + "\n")


NPB_MAKE_DEF = """# written by rankmap bench/real_apps.py (NPB's config/make.def, as README.install says)
MPIFC = {fc}
FLINK = $(MPIFC)
FMPI_LIB =
FMPI_INC =
FFLAGS = {fflags}
FLINKFLAGS = $(FFLAGS)
MPICC = {cc}
CLINK = $(MPICC)
CMPI_LIB =
CMPI_INC =
CFLAGS = {cflags}
CLINKFLAGS = $(CFLAGS)
CC = gcc
BINDIR = ../bin
RAND = randi8
"""


def build(key: str, sources: Path, work: Path, toolchain: str, targets=()) -> dict[str, Path]:
    """Build an application; targets: NPB (benchmark, class) pairs such as ('lu', 'C').
    Returns target name -> executable ('lu.C', or the app key for the others)."""
    tools = TOOLCHAINS[toolchain]
    src = locate(sources, key)
    app = APPS[key]
    info = describe(key, src)
    dst = work / "build" / toolchain / key
    dst.parent.mkdir(parents=True, exist_ok=True)
    stamp = {"digest": info["digest"], "toolchain": toolchain, "tools": tools, "fflags": FFLAGS, "cflags": CFLAGS}
    _copy(src / app.root, dst, stamp)
    log = dst / "rankmap-build.log"
    out: dict[str, Path] = {}
    if key == "npb":
        _need({"fc": tools["fc"], "cc": tools["cc"]})
        (dst / "config" / "make.def").write_text(NPB_MAKE_DEF.format(fc=tools["fc"], cc=tools["cc"], fflags=FFLAGS,
                                                                     cflags=CFLAGS))
        (dst / "bin").mkdir(exist_ok=True)
        for bench, cls in targets:
            exe = dst / "bin" / f"{bench}.{cls}.x"
            if not exe.is_file():
                _make(dst, [bench, f"CLASS={cls}"], log)
            out[f"{bench}.{cls}"] = exe
        return out
    if key == "lulesh":
        _need({"cxx": tools["cxx"]})
        exe = dst / "lulesh2.0"
        if not exe.is_file():
            _make(dst, [f"CXX={tools['cxx']} -DUSE_MPI=1", f"CXXFLAGS={CFLAGS} -I. -w", f"LDFLAGS={CFLAGS}"], log)
    elif key == "minife":
        _need({"cxx": tools["cxx"], "cc": tools["cc"]})
        exe = dst / "src" / "miniFE.x"
        if not exe.is_file():
            _make(dst / "src", [f"CXX={tools['cxx']}", f"CC={tools['cc']}", f"CFLAGS={CFLAGS}"], log)
    elif key == "cloverleaf":
        _need({"fc": tools["fc"], "cc": tools["cc"]})
        exe = dst / "clover_leaf"
        if not exe.is_file():
            _make(dst, ["COMPILER=GNU", f"MPI_COMPILER={tools['fc']}", f"C_MPI_COMPILER={tools['cc']}", "OMP_GNU=",
                        f"FLAGS_GNU={FFLAGS}", f"CFLAGS_GNU={CFLAGS}"], log)
    elif key == "hpcg":
        _need({"cxx": tools["cxx"]})
        exe = dst / "obj" / "bin" / "xhpcg"
        if not exe.is_file():
            objdir = dst / "obj"
            objdir.mkdir(exist_ok=True)
            r = subprocess.run(["sh", str(dst / "configure"), "Linux_MPI"], cwd=objdir, capture_output=True, text=True)
            if r.returncode != 0:
                raise UserError(f"HPCG configure failed: {r.stdout[-300:]}{r.stderr[-300:]}")
            _make(objdir, [f"CXX={tools['cxx']}"], log)
    elif key == "miniamr":
        _need({"cc": tools["cc"]})
        exe = dst / "miniAMR.x"
        if not exe.is_file():
            _make(dst, [f"CC={tools['cc']}", f"LD={tools['cc']}", f"CFLAGS={CFLAGS}"], log)
    else:
        raise UserError(f"unknown application {key!r}")
    out[key] = exe
    return out
