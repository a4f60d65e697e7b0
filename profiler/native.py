"""Where the built native artifacts are (profiler, collective kernels, bind wrapper).

`pip install .` builds csrc/ with CMake and installs everything into
<prefix>/lib/rankmap next to build-info.json, which names each artifact and the MPI
implementation it was built against. <prefix> is the data directory of the running
interpreter's environment, so no environment variable is needed."""
from __future__ import annotations

import json
import sysconfig
from functools import lru_cache
from pathlib import Path

from rankmap.profiler.errors import UserError

MPI_NAMES = ("openmpi", "mpich")


def libdir() -> Path:
    return Path(sysconfig.get_path("data")) / "lib" / "rankmap"


@lru_cache(maxsize=None)
def build_info() -> dict:
    path = libdir() / "build-info.json"
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise UserError(f"rankmap's native libraries are not installed ({path} is missing); "
                        "run `bash setup.sh` or `pip install .` in the rankmap checkout") from None
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read {path}: {e}") from None


def default_mpi() -> str:
    return build_info()["default_mpi"]


def artifact(kind: str, mpi: str | None = None, name: str | None = None) -> Path:
    """Path of a built artifact: kind = 'profiler' | 'collectives' | 'bind' | 'refine' | 'fluid' |
    'workloads' (then `name` picks the workload)."""
    info = build_info()
    entry = info.get(kind)
    if entry is not None and name is not None:
        if name not in entry:
            raise UserError(f"no {kind[:-1] if kind.endswith('s') else kind} named {name!r} "
                            f"(built: {', '.join(sorted(entry))})")
        entry = entry[name]
    if entry is None:
        raise UserError(f"this rankmap build has no {kind} artifact (build-info.json lists: "
                        f"{', '.join(k for k in info if k not in ('default_mpi', 'mpi_variants'))})")
    if isinstance(entry, dict):
        mpi = mpi or info["default_mpi"]
        if mpi not in entry:
            raise UserError(f"the {kind} library was not built for {mpi} (built for: {', '.join(entry)}); "
                            f"install {mpi}'s development package and rebuild")
        entry = entry[mpi]
    path = libdir() / entry
    if not path.exists():
        raise UserError(f"{path} is listed in build-info.json but missing; rebuild rankmap")
    return path
