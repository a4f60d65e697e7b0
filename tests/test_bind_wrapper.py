"""rankmap-bind (csrc/bind) reads binding.txt by the Python reader's rules (mapper/writers.py):
a mapping evaluate and srun --dry-run accept must not fail every rank at launch."""
from __future__ import annotations

import os
import subprocess

import pytest

from rankmap.profiler.native import libdir


@pytest.mark.parametrize("text", [
    "# rank host core\r\n0 {h} 0\r\n1 {h} 0\r\n",          # CRLF line ends (an editor on Windows)
    "  # rank host core\n0 {h} 0\n1 {h} 0\n",              # an indented comment is no rank 0
    "\t#0 {h} 99\n0 {h} 0\n1 {h} 0\n",
])
def test_bind_wrapper_reads_binding_files_as_evaluate_does(tmp_path, text):
    exe = libdir() / "rankmap-bind"
    f = tmp_path / "binding.txt"
    f.write_bytes(text.format(h="thishost").encode())
    for rank in ("0", "1"):
        env = dict(os.environ, OMPI_COMM_WORLD_RANK=rank, RANKMAP_BIND_HOSTCHECK="0")
        res = subprocess.run([str(exe), str(f), "/bin/echo", "bound"], capture_output=True, text=True, env=env,
                             timeout=60)
        assert res.returncode == 0 and res.stdout.strip() == "bound", (rank, res.stderr)


@pytest.mark.parametrize("value, binds", [("off", True), ("no", True), ("0", True), ("1", False)])
def test_host_check_is_turned_off_as_other_switches_are(tmp_path, value, binds):
    """RANKMAP_BIND_HOSTCHECK=off failed the rank (only 0 turned the check off), and the
    failure did not say how to launch it or what turns the check off."""
    exe = libdir() / "rankmap-bind"
    f = tmp_path / "binding.txt"
    f.write_text("0 no-such-host-here 0\n")
    env = dict(os.environ, OMPI_COMM_WORLD_RANK="0", RANKMAP_BIND_HOSTCHECK=value)
    res = subprocess.run([str(exe), str(f), "/bin/echo", "bound"], capture_output=True, text=True, env=env, timeout=60)
    if binds:
        assert res.returncode == 0 and res.stdout.strip() == "bound", res.stderr
    else:
        assert res.returncode != 0 and "RANKMAP_BIND_HOSTCHECK=0" in res.stderr and "srun -m arbitrary" in res.stderr
