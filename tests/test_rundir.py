"""Reading run directories: damaged, missing, mixed and partial data give one clear error
line or a partial profile with its reasons, never a traceback or silent garbage. The
damaged files are made from a real profiled run."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from conftest import app, launcher, run_cli
from rankmap.profiler.errors import UserError
from rankmap.profiler.launch import run_profile
from rankmap.profiler.rundir import MAGIC, read_run



@pytest.fixture(scope="module")
def real_run(apps, tmp_path_factory):
    d = tmp_path_factory.mktemp("real") / "run"
    run_profile(launcher("openmpi", 4) + [str(app(apps, "traffic", "openmpi")), "ring"], out=str(d), timeout=120)
    return d


def copy_run(real_run, tmp_path, name="copy"):
    dst = tmp_path / name
    shutil.copytree(real_run, dst)
    return dst, next(dst.glob("ranks.*.rmp"))


def test_complete(real_run):
    prof = read_run(real_run)
    assert prof.complete and prof.size == 4 and prof.bytes.nnz == 12


def test_missing_and_not_a_directory(tmp_path):
    with pytest.raises(UserError, match="no such run directory"):
        read_run(tmp_path / "nope")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(UserError, match="not a directory"):
        read_run(f)
    with pytest.raises(UserError, match="no profile data"):
        read_run(tmp_path)


def test_empty_file(real_run, tmp_path):
    d, f = copy_run(real_run, tmp_path)
    f.write_bytes(b"")
    with pytest.raises(UserError, match="empty"):
        read_run(d)


def test_truncated_last_block_is_partial(real_run, tmp_path):
    d, f = copy_run(real_run, tmp_path)
    data = f.read_bytes()
    last = data.rfind(MAGIC)
    f.write_bytes(data[: last + 100])
    prof = read_run(d)
    assert not prof.complete
    assert any("truncated" in r for r in prof.partial_reasons())
    assert len(prof.missing_ranks) == 1


def test_flipped_byte_fails_checksum(real_run, tmp_path):
    d, f = copy_run(real_run, tmp_path)
    data = bytearray(f.read_bytes())
    data[200] ^= 0xFF  # inside the first block's payload
    f.write_bytes(bytes(data))
    prof = read_run(d)
    assert not prof.complete
    assert any("checksum" in r for r in prof.partial_reasons())


def test_garbage_prefix_is_skipped_and_reported(real_run, tmp_path):
    d, f = copy_run(real_run, tmp_path)
    f.write_bytes(b"garbage" * 10 + f.read_bytes())
    prof = read_run(d)
    assert prof.bytes.nnz == 12 and prof.missing_ranks == []
    assert any("unreadable bytes" in r for r in prof.partial_reasons())


def test_two_runs_in_one_file_are_refused(real_run, tmp_path, apps):
    other = tmp_path / "other"
    run_profile(launcher("openmpi", 4) + [str(app(apps, "traffic", "openmpi")), "ring"], out=str(other), timeout=120)
    d, f = copy_run(real_run, tmp_path)
    f.write_bytes(f.read_bytes() + next(other.glob("ranks.*.rmp")).read_bytes())
    with pytest.raises(UserError, match="mixes different runs"):
        read_run(d)


def test_two_run_files_without_run_json(real_run, tmp_path):
    d, f = copy_run(real_run, tmp_path)
    (d / "run.json").unlink()
    shutil.copy(f, d / "ranks.other.rmp")
    with pytest.raises(UserError, match="holds 2 runs"):
        read_run(d)


@pytest.mark.mpi
def test_program_that_is_not_mpi(tmp_path):
    res = run_profile(["mpirun.openmpi", "-np", "2", "true"], out=str(tmp_path / "r"), timeout=60)
    assert res.exit_code == 0
    with pytest.raises(UserError, match="no rank wrote profile data"):
        read_run(res.directory)


def cli(*args, cwd=None):
    return run_cli(*args, cwd=cwd)


@pytest.mark.parametrize("args,msg", [
    (["show-profile", "/nonexistent/run"], "no such run directory"),
    (["show-profile", "/etc/passwd"], "not a directory"),
    (["show-profile", "/tmp", "--collectives", "tree"], "unknown collective model"),
    (["profile", "--", "ls"], "not a launcher rankmap knows"),
    (["profile", "--", "mpirun", "-np", "2", "/nonexistent/app"], None),
])
def test_cli_errors_are_one_line(tmp_path, args, msg):
    res = cli(*args, cwd=tmp_path)
    assert res.returncode != 0
    assert "Traceback" not in res.stderr
    if msg:
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert len(lines) == 1 and msg in lines[0], res.stderr


def test_cli_show_profile_and_heatmap(real_run, tmp_path):
    png = tmp_path / "h.png"
    res = cli("show-profile", str(real_run), "--ranks", "--heatmap", str(png))
    assert res.returncode == 0, res.stderr
    assert "complete" in res.stdout and "Top 10 pairs" in res.stdout
    assert png.stat().st_size > 1000 and png.read_bytes()[:4] == b"\x89PNG"
    res = cli("show-profile", str(real_run), "--json")
    import json
    d = json.loads(res.stdout)
    assert d["ranks"] == 4 and d["complete"] and d["p2p_bytes"] == 4 * (40000 + 84 + 13)


def test_cli_profile_end_to_end(apps, tmp_path):
    res = cli("profile", "--out", str(tmp_path / "p"), "--", *launcher("openmpi", 3),
              str(app(apps, "traffic", "openmpi")), "ring")
    assert res.returncode == 0, res.stderr
    assert "complete" in res.stdout
    res = cli("libpath", "profiler")
    assert res.returncode == 0 and Path(res.stdout.strip()).exists()
