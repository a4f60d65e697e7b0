"""Bad input, outputs and limits (issue 11), through the CLI as a user meets them: a regression
corpus of bad inputs (tests/data/bad-inputs/cases.json: small files, the command, the
fragment the one error line must hold), the documented edge inputs that must be accepted,
--force and atomic writes (nothing rankmap did not write is ever replaced, nothing half
written is left), and the limits (memory, sizes) with their messages."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import one_error_line, run_cli

DATA = Path(__file__).parent / "data" / "bad-inputs"
CASES = json.loads((DATA / "cases.json").read_text())
MACHINE = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:1"]


def snapshot(d: Path) -> dict:
    return {str(p.relative_to(d)): hashlib.sha1(p.read_bytes()).hexdigest() for p in sorted(d.rglob("*"))
            if p.is_file()}


@pytest.fixture(scope="module")
def mapping4(tmp_path_factory):
    """A real mapping of ring4.csv (4 ranks on 2 nodes of 2 cores)."""
    d = tmp_path_factory.mktemp("m") / "ring4-map"
    res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", d)
    assert res.returncode == 0, res.stderr
    return d


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_regression_corpus(case, tmp_path, mapping4):
    """Every bad input of the corpus ends in one `rankmap: error:` line naming what and where,
    and no file of the corpus is touched."""
    args = [a.replace("{D}", str(DATA)).replace("{T}", str(tmp_path)).replace("{M}", str(mapping4))
            for a in case["args"]]
    before = snapshot(DATA)
    res = run_cli(*args, cwd=tmp_path)
    one_error_line(res, case["error"])
    assert res.stderr.startswith("rankmap: error:")
    assert snapshot(DATA) == before


# --------------------------------------------------------------------------- documented inputs accepted

@pytest.mark.parametrize("text", [
    "# traffic of run 7\nsrc,dst,bytes\n0,1,10\n1,0,20\n",          # a comment before the header
    "\ufeffsrc,dst,bytes\r\n0,1,10\r\n1,0,20\r\n",                    # a byte-order mark, CRLF lines
    "\n# a\nsrc , dst , bytes\n 0 , 1 , 1e1\n1,0,20\n# end\n",         # blank lines, spaces, 1e1
])
def test_documented_csv_variants_are_read(tmp_path, text):
    f = tmp_path / "t.csv"
    f.write_text(text, newline="")
    res = run_cli("map", f, "--nodes", "n1", "--node-topology", "pack:1 core:2", "--out", tmp_path / "m", "--json")
    assert res.returncode == 0, res.stderr
    rep = json.loads(res.stdout)
    assert rep["traffic"]["ranks"] == 2 and rep["traffic"]["bytes"] == 30.0


# --------------------------------------------------------------------------- outputs and --force

def test_force_never_replaces_what_rankmap_did_not_write(tmp_path, mapping4):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("chapter 1\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    (tmp_path / "keep.txt").write_text("keep\n")
    for out, cwd, fragment in [(mine, tmp_path, "is not a mapping"), (".", tmp_path, "the current directory"),
                               ("..", sub, "a parent of the current directory"), ("", tmp_path, "empty path"),
                               (DATA / "ring4.csv", tmp_path, "an input of this command"),
                               (DATA, tmp_path, "an input of this command")]:
        res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", out, "--force", cwd=cwd)
        one_error_line(res, fragment)
    assert (mine / "thesis.tex").read_text() == "chapter 1\n" and (tmp_path / "keep.txt").exists()
    # a mapping is replaced with --force; without it, it is kept
    m = tmp_path / "m"
    shutil.copytree(mapping4, m)
    one_error_line(run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", m), "pass --force")
    (m / "hostfile").write_text("stale\n")
    res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", m, "--force")
    assert res.returncode == 0, res.stderr
    assert (m / "hostfile").read_text().split() == (mapping4 / "hostfile").read_text().split()
    assert (m / ".rankmap-mapping").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []        # no temporaries left
    # its machine.json is an input: a mapping cannot replace the directory it reads
    one_error_line(run_cli("map", DATA / "ring4.csv", "--machine", m, "--out", m, "--force"), "an input")
    # another kind of output never replaces a mapping
    one_error_line(run_cli("platform", "desmos", "--out", m, "--force"), "is not a platform")


def test_mapping_from_before_the_marker_is_still_replaced(tmp_path, mapping4):
    """A mapping directory holding only a mapping's files (written before the marker existed)."""
    m = tmp_path / "old"
    shutil.copytree(mapping4, m)
    (m / ".rankmap-mapping").unlink()
    res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", m, "--force")
    assert res.returncode == 0, res.stderr
    (m / "notes.txt").write_text("mine\n")
    (m / ".rankmap-mapping").unlink()
    one_error_line(run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", m, "--force"), "is not a mapping")


def test_a_failed_write_leaves_the_old_mapping(tmp_path, mapping4, monkeypatch):
    """The new mapping is written next to the old one and swapped in: a failure half-way
    leaves the old one as it was and no temporary directory."""
    from rankmap.mapper import writers
    m = tmp_path / "m"
    shutil.copytree(mapping4, m)
    before = snapshot(m)

    def broken(slot, machine):
        out = dict(real(slot, machine))
        out["rankfile"] = None          # fails after the first files are written
        return out
    real = writers.render
    monkeypatch.setattr(writers, "render", broken)
    res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", m, "--force")
    assert res.returncode != 0
    assert snapshot(m) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_file_outputs_replace_only_rankmaps_own(tmp_path, mapping4):
    plots = tmp_path / "plots"
    for _ in range(2):                  # rankmap's own figures are replaced
        res = run_cli("evaluate", DATA / "ring4.csv", mapping4, "--plots", plots)
        assert res.returncode == 0, res.stderr
    assert b"rankmap" in (plots / "heatmap-block.png").read_bytes()[:4096]
    (plots / "heatmap-block.png").write_bytes(b"\x89PNG someone else's")
    one_error_line(run_cli("evaluate", DATA / "ring4.csv", mapping4, "--plots", plots), "heatmap-block.png")
    # convert: an existing file needs --force, an input never
    g = tmp_path / "g.graph"
    g.write_text("mine\n")
    one_error_line(run_cli("convert", DATA / "ring4.csv", g), "--force")
    assert g.read_text() == "mine\n"
    assert run_cli("convert", DATA / "ring4.csv", g, "--force").returncode == 0
    one_error_line(run_cli("convert", g, g, "--force"), "an input of this command")


def test_workflow_directories_are_never_reused(tmp_path):
    (tmp_path / "keep.txt").write_text("keep\n")
    for args in (["profile", "--out", tmp_path, "--", "mpirun", "-np", "1", "true"],
                 ["sbatch", "-n", "2", "--out", tmp_path, "--", "true"],
                 ["demo", "--out", tmp_path]):
        one_error_line(run_cli(*args), "already exists and is not empty")
    one_error_line(run_cli("profile", "--out", ".", "--", "mpirun", "-np", "1", "true", cwd=tmp_path),
                   "the current directory")
    assert (tmp_path / "keep.txt").read_text() == "keep\n"


# --------------------------------------------------------------------------- limits

def test_memory_is_checked_before_mapping(tmp_path, monkeypatch):
    from rankmap.profiler import validate
    monkeypatch.setattr(validate, "memory_available", lambda: 100 << 20)
    one_error_line(run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", tmp_path / "m"), "of memory; 0.1 GiB is")
    assert not (tmp_path / "m").exists()


def test_a_long_mapping_is_announced(tmp_path, monkeypatch):
    from rankmap.mapper import budget
    monkeypatch.setattr(budget, "ANNOUNCE_SECONDS", 0.0)
    res = run_cli("map", DATA / "ring4.csv", *MACHINE, "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "mapping 4 ranks: expected about" in res.stdout and "--time-limit" in res.stdout
    assert "mapping 4 ranks: done in" in res.stdout


def test_sizes_that_cannot_work_are_refused_quickly(tmp_path):
    import time
    t0 = time.monotonic()
    for args, fragment in [
        (["--nodes", "n[1-2]", "--node-topology", "pack:64 core:1024"], "more than 4096 cores"),
        (["--nodes", "n[1-2000000]", "--node-topology", "pack:1 core:1"], "names 2000000 hosts"),
        (["--nodes", "n[1-4]", "--node-topology", "pack:2 core:1", "--oversubscribe", "4000000"], "at most 16777216"),
        (["--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--mesh", "4096x4096"], "16777216 positions"),
    ]:
        one_error_line(run_cli("map", DATA / "ring4.csv", *args, "--out", tmp_path / "m"), fragment)
    assert time.monotonic() - t0 < 20


def test_devices_and_fifos_are_neither_read_nor_replaced(tmp_path):
    """A FIFO would block a reader forever and /dev/zero never end; replacing /dev/null (as
    root) would break the system: both are refused in one line."""
    fifo = tmp_path / "t.csv"
    os.mkfifo(fifo)
    one_error_line(run_cli("map", fifo, *MACHINE, "--out", tmp_path / "m"), "not a regular file")
    one_error_line(run_cli("map", "/dev/zero", *MACHINE, "--out", tmp_path / "m"), "not a regular file")
    one_error_line(run_cli("map", DATA / "ring4.csv", "--nodes", "@/dev/zero", "--node-topology", "pack:2 core:1",
                           "--out", tmp_path / "m"), "not a regular file")
    one_error_line(run_cli("convert", DATA / "ring4.csv", "/dev/null", "--force"), "not a regular file")
    assert Path("/dev/null").is_char_device()
    # a topology.conf (--network slurm:FILE) is read by the same layer: a FIFO there hung
    one_error_line(run_cli("map", DATA / "ring4.csv", *MACHINE, "--network", f"slurm:{fifo}", "--out",
                           tmp_path / "m"), f"{fifo}: not a regular file")


@pytest.mark.parametrize("value,shown", [("", False), ("0", False), ("no", False), ("false", False),
                                         ("1", True), ("yes", True)])
def test_rankmap_debug_zero_keeps_tracebacks_hidden(monkeypatch, value, shown):
    from rankmap.cli import _debug
    monkeypatch.setenv("RANKMAP_DEBUG", value)
    assert _debug() is shown


@pytest.mark.parametrize("name", ["node[1]", "a\n[bold]b", "", "n1:0"])
def test_a_damaged_profile_hostname_is_refused_by_the_reader(name):
    """A profile's META hostname reaches hostlists (map's default node list) and the mapping
    files: 'node[1]' ended in an internal error (BadHostlist), a line break went to the
    console as markup."""
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.rundir import _meta
    with pytest.raises(UserError, match="META hostname: .* is not a host name"):
        _meta(json.dumps({"hostname": name}).encode(), "run/ranks.0.rmp")
    assert _meta(json.dumps({"hostname": "cn-017.cluster"}).encode(), "x")["hostname"] == "cn-017.cluster"


def test_counts_past_int64_stay_positive():
    """Profile counters are unsigned 64-bit: 2^64 - 1 bytes read as int64 was -1 byte (the
    heaviest pair vanished without a word); sums that fit an int64 stay exact integers."""
    import numpy as np
    from rankmap.profiler.collectives import _matrix
    r, c = np.array([0, 0, 1]), np.array([1, 1, 0])
    big = _matrix(np.array([2.0 ** 63 - 1, 2.0 ** 63 - 1, 5.0]), r, c, 2)
    assert big[0, 1] == pytest.approx(2.0 ** 64) and big[1, 0] == 5
    small = _matrix(np.array([3.0, 4.0, 5.0]), r, c, 2)
    assert small.dtype == np.int64 and small[0, 1] == 7


def test_a_bandwidth_below_one_byte_a_second_is_refused(tmp_path):
    """5e-324 GB/s passed and predict printed inf, its --json the bare token Infinity."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n")
    res = run_cli("map", tmp_path / "t.csv", "--nodes", "n[1-2]", "--node-topology", "core:1", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    one_error_line(run_cli("predict", tmp_path / "t.csv", tmp_path / "m", "--link-bw", "5e-324", "--link-lat", "1",
                           "--loopback-bw", "10", "--loopback-lat", "0.1"), "--link-bw")


@pytest.mark.parametrize("arg", ["-n4", "-mblock", "--ntask=4", "--distrib=cyclic", "--ntasks=4", "-m"])
def test_srun_arguments_cannot_override_the_mapping(tmp_path, arg):
    """srun's getopt takes attached short options and long-option prefixes: -n4 and
    --distrib=cyclic passed the check and the srun line carried two task counts."""
    from rankmap.profiler.errors import UserError
    from rankmap.slurm.relaunch import srun_plan
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n")
    assert run_cli("map", tmp_path / "t.csv", "--nodes", "n[1-2]", "--node-topology", "core:1",
                   "--out", tmp_path / "m").returncode == 0
    with pytest.raises(UserError, match="the mapping decides the task count"):
        srun_plan(tmp_path / "m", ["true"], [arg], check_nodes=False)
    srun_plan(tmp_path / "m", ["true"], ["--ntasks-per-core=1", "--time=5"], check_nodes=False)     # others pass


def test_an_smpi_alltoallv_line_with_fewer_counts_than_ranks_is_refused(tmp_path):
    """'0 alltoallv 40 10 10' in a 4-rank trace was read as the counts that are there (and
    SimGrid's replay of the trace then aborted)."""
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.formats import read_traffic
    (tmp_path / "t_files").mkdir()
    for r in range(4):
        body = "0 alltoallv 40 10 10\n" if r == 0 else ""
        (tmp_path / "t_files" / f"rank-{r + 1}.txt").write_text(f"{r} init\n{body}{r} finalize\n")
    (tmp_path / "trace.ti").write_text("".join(f"t_files/rank-{r + 1}.txt\n" for r in range(4)))
    with pytest.raises(UserError, match="cannot read the alltoallv line"):
        read_traffic(tmp_path / "trace.ti", "smpi", "auto", False)


def test_force_never_deletes_what_the_user_added_to_a_mapping(tmp_path):
    """map --force replaced the directory whole: a notes file and a results directory the
    user had put in it were gone."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n")
    args = ("map", tmp_path / "t.csv", "--nodes", "n[1-2]", "--node-topology", "core:1", "--out", tmp_path / "m")
    assert run_cli(*args).returncode == 0
    (tmp_path / "m" / "notes.txt").write_text("mine")
    one_error_line(run_cli(*args, "--force"), "'notes.txt', which rankmap did not write")
    assert (tmp_path / "m" / "notes.txt").read_text() == "mine"
    (tmp_path / "m" / "notes.txt").unlink()
    assert run_cli(*args, "--force").returncode == 0            # rankmap's own files alone: replaced


def test_a_damaged_affinity_range_is_clipped_to_the_node():
    """A profile's affinity '0-99999999999' was expanded into a set before it met the node's
    PUs: the host ran out of memory (killed, no message)."""
    from rankmap.mapper import baselines, machine
    t = machine.build(["a"], ["pack:1 core:4"]).topos[0]
    assert baselines._cores_of("0-99999999999", t) == [0, 1, 2, 3]
    assert baselines._cores_of("1,3", t) == [1, 3]


def test_predict_platform_with_another_machine_or_probe_is_refused(tmp_path):
    """--platform beside --machine (or --probe) was silently ignored: a network a million
    times slower predicted the same times."""
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,100\n")
    assert run_cli("platform", "--torus", "2x2", "--cores", "2", "--out", tmp_path / "p").returncode == 0
    assert run_cli("map", tmp_path / "t.csv", "--machine", tmp_path / "p", "--out", tmp_path / "m").returncode == 0
    one_error_line(run_cli("predict", tmp_path / "t.csv", tmp_path / "m", "--platform", tmp_path / "p",
                           "--machine", tmp_path / "m"), "leave out --machine")
    assert run_cli("predict", tmp_path / "t.csv", tmp_path / "m", "--platform", tmp_path / "p").returncode == 0


def test_convert_words_reads_back_as_the_same_bytes(tmp_path):
    """convert --units words wrote src,dst,words; rankmap read it back as bytes, 8 x too few."""
    from rankmap.profiler.formats import read_traffic
    (tmp_path / "t.csv").write_text("src,dst,bytes\n0,1,800\n1,2,16\n")
    res = run_cli("convert", tmp_path / "t.csv", tmp_path / "w.csv", "--units", "words")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "w.csv").read_text().startswith("src,dst,words\n")
    back = read_traffic(tmp_path / "w.csv", "auto", "auto", False)
    assert back.bytes[0, 1] == 800 and back.bytes[1, 2] == 16 and any("words" in x for x in back.notes)
    res = run_cli("convert", tmp_path / "t.csv", tmp_path / "w.npz", "--units", "words")
    assert res.returncode == 0 and "reads this file as bytes" in res.stdout


def test_convert_keeps_message_counts_in_csv_and_says_when_it_drops_them(tmp_path):
    from rankmap.profiler.formats import read_traffic
    (tmp_path / "t.csv").write_text("src,dst,bytes,messages\n0,1,800,4\n1,2,16,2\n")
    assert run_cli("convert", tmp_path / "t.csv", tmp_path / "o.csv").returncode == 0
    back = read_traffic(tmp_path / "o.csv", "auto", "auto", False)
    assert back.msgs is not None and back.msgs[0, 1] == 4 and back.msgs[1, 2] == 2 and back.bytes[0, 1] == 800
    res = run_cli("convert", tmp_path / "t.csv", tmp_path / "o.mtx")
    assert res.returncode == 0 and "message counts" in res.stdout
