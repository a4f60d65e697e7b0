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
