"""C unit tests (csrc/tests, run by CTest): the refine kernel, the collective kernels' chain
layouts, the profiler's hash tables. csrc is configured with RANKMAP_C_TESTS=ON in a
temporary build directory; only the tests and what they link against are built."""
from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import require

CSRC = Path(__file__).resolve().parents[1] / "csrc"
# every add_test in csrc/tests/CMakeLists.txt: a test that is not built or not run fails here
EXPECTED = {"refine", "coll_chains", "profiler_tables"}

pytestmark = pytest.mark.slow       # configures and compiles: ~20 s on two cores


def run(cmd: list[str], cwd=None) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=600)
    assert res.returncode == 0, f"{' '.join(cmd)}\n{res.stdout[-4000:]}\n{res.stderr[-4000:]}"
    return res


def test_ctest(tmp_path):
    for tool in ("cmake", "ctest", "ninja", "mpicc"):
        require(shutil.which(tool) is not None, f"{tool} not installed")
    build = tmp_path / "build"
    run(["cmake", "-S", str(CSRC), "-B", str(build), "-G", "Ninja", "-DRANKMAP_C_TESTS=ON"])
    out = run(["cmake", "--build", str(build), "--target", "rankmap_c_tests"])
    # compiled with -Wall -Wextra -Werror; say so if a warning slipped through another way
    assert "warning:" not in out.stdout + out.stderr, out.stdout
    junit = tmp_path / "ctest.xml"
    res = subprocess.run(["ctest", "--test-dir", str(build), "-V", "--output-junit", str(junit)],
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout[-8000:] + res.stderr
    status = {c.get("name"): c.get("status") for c in ET.parse(junit).getroot().iter("testcase")}
    assert set(status) == EXPECTED and all(s == "run" for s in status.values()), status
    # each program ends with "<name>: N checks, F failed"
    counts = {m[1]: (int(m[2]), int(m[3])) for m in re.finditer(r"(\w+): (\d+) checks, (\d+) failed", res.stdout)}
    assert set(counts) == EXPECTED, res.stdout[-8000:]
    assert all(n >= 10 and f == 0 for n, f in counts.values()), counts
