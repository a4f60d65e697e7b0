"""Fuzzing round 3's last defects: the files of one mapping read alike by every command
(evaluate, predict, replay, srun, mpirun), launcher options that would override the mapping,
a platform's checks that a damaged file or a scale switched off, and inputs whose modelled
size outgrew the memory. Each test failed before its fix; the runs are real (the CLI)."""
from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import one_error_line, run_cli, ti_trace


def _ring(tmp_path, n=16):
    t = tmp_path / "ring.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % n},{100000 * (i + 1)}\n" for i in range(n)))
    return t


@pytest.fixture
def mapped(tmp_path):
    t = _ring(tmp_path)
    m = tmp_path / "m"
    res = run_cli("map", t, "--nodes", "n[1-4]", "--node-topology", "pack:2 core:2", "--out", m)
    assert res.returncode == 0, res.stderr
    return t, m


def _swap_first_two_hosts(path, prefix):
    """The file with ranks 0 and the first rank on another node exchanged."""
    lines = path.read_text().splitlines(True)
    host = lambda ln: ln.split("=")[1].split()[0] if prefix == "rank" else ln.split(":")[0]
    j = next(i for i, ln in enumerate(lines) if host(ln) != host(lines[0]))
    a, b = host(lines[0]), host(lines[j])
    lines[0], lines[j] = lines[0].replace(a, b, 1), lines[j].replace(b, a, 1)
    path.write_text("".join(lines))


def test_mpirun_launches_only_a_rankfile_that_says_what_binding_txt_says(mapped):
    """evaluate and predict read binding.txt; `rankmap mpirun` passed the rankfile (Open MPI)
    or machinefile (MPICH) unread: a rankfile edited alone was evaluated at 0.74x block and
    launched at 1.31x."""
    _, m = mapped
    ok = run_cli("mpirun", m, "--dry-run", "--mpi", "openmpi", "--", "./app")
    assert ok.returncode == 0, ok.stderr
    _swap_first_two_hosts(m / "rankfile", "rank")
    one_error_line(run_cli("mpirun", m, "--dry-run", "--mpi", "openmpi", "--", "./app"),
                   "rankfile: disagrees with")
    _swap_first_two_hosts(m / "machinefile", "host")
    one_error_line(run_cli("mpirun", m, "--dry-run", "--mpi", "mpich", "--", "./app"),
                   "machinefile: disagrees with")
    (m / "rankfile").unlink()
    one_error_line(run_cli("mpirun", m, "--dry-run", "--mpi", "openmpi", "--", "./app"), "no rankfile")


@pytest.mark.parametrize("arg", ["-np", "-np 4", "--hostfile=other", "-hostfile", "-n4", "--map-by", "-H"])
def test_mpirun_arguments_that_override_the_mapping_are_refused(mapped, arg):
    _, m = mapped
    one_error_line(run_cli("mpirun", m, "--dry-run", "--mpi", "openmpi", f"--mpirun-arg={arg}", "--", "./app"),
                   "the mapping decides the rank count, the hosts and the placement")


def test_mpirun_arguments_of_other_kinds_pass(mapped):
    _, m = mapped
    res = run_cli("mpirun", m, "--dry-run", "--mpi", "openmpi", "--mpirun-arg=--mca", "--mpirun-arg=btl",
                  "--mpirun-arg=self", "--", "./app")
    assert res.returncode == 0, res.stderr
    assert "--mca btl self ./app" in res.stdout


@pytest.mark.parametrize("arg", ["--ntasks-per-node=1", "--ntasks 4"])
def test_srun_task_layout_arguments_are_refused(mapped, arg):
    _, m = mapped
    one_error_line(run_cli("srun", m, "--dry-run", "--mpi", "openmpi", f"--srun-arg={arg}", "--", "./app"),
                   "the mapping decides the task count and distribution")


def test_a_dry_run_checks_the_cores_against_the_mapped_machine(mapped):
    """A dry run asks no Slurm, and mpirun none: a core the node lacks failed only at launch."""
    _, m = mapped
    b = m / "binding.txt"
    lines = b.read_text().splitlines(True)
    r, h, _ = lines[-1].split()
    lines[-1] = f"{r} {h} 99\n"
    b.write_text("".join(lines))
    for cmd in (("srun", m, "--dry-run", "--mpi", "openmpi"), ("mpirun", m, "--dry-run")):
        one_error_line(run_cli(*cmd, "--", "./app"), f"rank {r}: {h} has no core 99 in this machine")


def test_open_mpi_hostfile_with_a_host_twice_given_slots_is_refused(mapped):
    """Open MPI refuses it ("multiple definitions of the slot count"); it was read in file
    order, n1 getting ranks 0-1 and 14-15."""
    t, m = mapped
    f = m.parent / "dup"
    f.write_text("n1 slots=2\nn2 slots=4\nn3 slots=4\nn4 slots=4\nn1 slots=2\n")
    one_error_line(run_cli("evaluate", t, f, "--machine", m), "dup:5: host n1 is listed again (first at")


def test_open_mpi_rankfiles_in_any_order_and_with_core_ranges_are_read(mapped):
    t, m = mapped
    lines = (m / "rankfile").read_text().splitlines(True)
    shuffled = m.parent / "shuffled"
    shuffled.write_text("".join(lines[1:] + lines[:1]))
    res = run_cli("evaluate", t, m, shuffled, "--machine", m, "--json")
    assert res.returncode == 0, res.stderr
    rows = json.loads(res.stdout)["metrics"]
    assert rows["shuffled"] == rows["m"]
    sock = m.parent / "sockcore"
    sock.write_text(lines[0].replace("slot=", "slot=0:"))
    one_error_line(run_cli("evaluate", t, sock, "--machine", m), "socket:core slots are not read here")
    twice = m.parent / "twice"
    twice.write_text("".join(lines + lines[:1]))
    one_error_line(run_cli("evaluate", t, twice, "--machine", m), "rank 0 listed twice")


def test_a_no_break_space_in_binding_txt_is_refused(mapped):
    """Python's split() took U+00A0 for a blank; rankmap-bind, Slurm and Open MPI do not."""
    t, m = mapped
    b = m / "binding.txt"
    b.write_text(b.read_text().replace("0 n", "0\u00a0n", 1))
    one_error_line(run_cli("evaluate", t, m), "a blank that is not a space or tab (U+00A0)")


def _platform(tmp_path):
    plat = tmp_path / "plat"
    assert run_cli("platform", "desmos", "--out", plat).returncode == 0
    return plat


def _ring_actions(n=4, datatype=2):
    """Each rank sends 100 elements right and receives from the left (SMPI trace actions)."""
    return [[f"send {(r + 1) % n} 0 100 {datatype if r == 0 else 2}", f"recv {(r - 1) % n} 0 100 2"]
            for r in range(n)]


def test_replay_reads_hostfiles_as_evaluate_does(tmp_path):
    """replay kept each line's first word: `n0 junk` was a placement, and `n0 slots=2` one
    rank there and two for predict."""
    plat = _platform(tmp_path)
    tr = ti_trace(tmp_path, _ring_actions())
    junk = tmp_path / "junk"
    junk.write_text("n0 junk\nn1\nn2\nn3\n")
    one_error_line(run_cli("replay", tr, junk, "--platform", plat), "expected 'host', 'host:k' or 'host slots=N'")
    slots = tmp_path / "slots"
    slots.write_text("n0 slots=2\nn1\nn2\nn3\n")
    one_error_line(run_cli("replay", tr, slots, "--platform", plat), "5 ranks, the trace has 4")


def test_replay_refuses_a_trace_simgrid_cannot_replay(tmp_path):
    """A datatype id SimGrid does not define (a derived type's) is read as 1-byte elements by
    map, with a note; SimGrid's replay segfaulted on it after the other placements."""
    plat = _platform(tmp_path)
    tr = ti_trace(tmp_path, _ring_actions(datatype=999))
    conv = run_cli("convert", tr, tmp_path / "t.csv")
    assert conv.returncode == 0, conv.stderr
    assert "SimGrid cannot replay" in conv.stdout + conv.stderr
    hf = tmp_path / "hf"
    hf.write_text("n0\nn1\nn2\nn3\n")
    one_error_line(run_cli("replay", tr, hf, "--platform", plat), "SimGrid cannot replay such lines")


def test_network_scale_cannot_lift_a_link_past_the_speed_bound(tmp_path):
    one_error_line(run_cli("platform", "desmos", "--link-bw", "1e6", "--network-scale", "1e5", "--out",
                           tmp_path / "p"), "the link bandwidth times the network scale is 1e+11 GB/s")


def test_collectives_too_big_to_model_are_refused_before_allocating():
    """A run header claiming 2^24 ranks made show-profile expand a world allreduce over them
    until the host killed it. The expansion's size is bounded first (a direct all-to-all over
    2^20 ranks: 10^12 pairs)."""
    from rankmap.profiler.collectives import expand
    from rankmap.profiler.errors import UserError
    from rankmap.profiler.rundir import Collective
    c = Collective(members=np.arange(1 << 20), op="alltoall", root=-1, bucket=4, calls=1, bytes=8)
    with pytest.raises(UserError, match="modelling the collectives as pairs .* --collectives none leaves them out"):
        expand([c], 1 << 20, "auto")


@pytest.mark.parametrize("text, fragment", [
    ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 3 4000\n2 1 5\n",
     "t.mtx:3: 4 field(s); a real coordinate entry has 3"),
    ("%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 2 1000000\n",
     "t.mtx:3: 3 field(s); a pattern coordinate entry has 2"),
    ("%%MatrixMarket matrix coordinate integer general\n% c\n2 2 2\n1 2 7\n\n2 1 7 8 9 10\n",
     "t.mtx:6: 6 field(s); an integer coordinate entry has 3"),
    ("%%MatrixMarket matrix array real general\n2 2\n0\n1 5\n2\n0\n", "t.mtx:4: 2 field(s)"),
])
def test_matrix_market_entries_with_other_field_counts_are_refused(tmp_path, text, fragment):
    """scipy read the first fields of an entry and dropped the rest: `1 2 3 4000` was 3 bytes."""
    f = tmp_path / "t.mtx"
    f.write_text(text)
    one_error_line(run_cli("convert", f, tmp_path / "t.csv"), fragment)


def test_hwloc_xml_with_a_core_without_pus_is_refused(tmp_path):
    """A core whose PUs were deleted was mapped onto, and srun's CPU list then failed with an
    internal error."""
    import shutil
    import subprocess
    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    assert lstopo, "hwloc's lstopo is installed by setup.sh"
    xml = subprocess.run([lstopo, "--input", "pack:2 core:2 pu:2", "--of", "xml"], capture_output=True, text=True,
                         check=True).stdout
    nopu = tmp_path / "nopu.xml"
    nopu.write_text("\n".join(ln for ln in xml.splitlines()
                              if not ('type="PU"' in ln and ('os_index="2"' in ln or 'os_index="3"' in ln))))
    t = _ring(tmp_path, 8)
    one_error_line(run_cli("map", t, "--nodes", "n[1-2]", "--node-topology", nopu, "--out", tmp_path / "m"),
                   "core L#1 has no PU")


@pytest.mark.parametrize("ratio", ["1e308", "1e300", "3"])
def test_fat_tree_oversubscription_leaves_at_least_one_link_up(tmp_path, ratio):
    """1e308 ended in an internal error, 1e300 in link loads of 1e303 B and overflow warnings."""
    t = _ring(tmp_path, 8)
    one_error_line(run_cli("map", t, "--nodes", "n[1-4]", "--node-topology", "core:2", "--network",
                           f"fat-tree:2x2:oversub={ratio}", "--out", tmp_path / "m"),
                   "less than one link up; at most 2:1 there")
    ok = run_cli("map", t, "--nodes", "n[1-4]", "--node-topology", "core:2", "--network", "fat-tree:2x2:oversub=2",
                 "--out", tmp_path / "m2")
    assert ok.returncode == 0, ok.stderr


@pytest.mark.parametrize("text", ["dst,src,bytes\n1,0,100\n2,1,5\n",
                                  "bytes,src,dst\n100,0,1\n5,1,2\n",
                                  "Source;Destination;Size;Count\n0;1;100;3\n1;2;5;1\n",
                                  "a,b,c\n0,1,100\n1,2,5\n"])
def test_csv_columns_are_taken_by_their_header_names(tmp_path, text):
    """The header was skipped unread: `dst,src,bytes` was read transposed, `bytes,src,dst`
    took byte counts for ranks, all with exit 0. (A header naming no known column keeps the
    positional order.)"""
    f = tmp_path / "t.csv"
    f.write_text(text)
    res = run_cli("convert", f, tmp_path / "out.csv")
    assert res.returncode == 0, res.stderr
    rows = [ln.split(",")[:3] for ln in (tmp_path / "out.csv").read_text().splitlines()[1:]]
    assert rows == [["0", "1", "100"], ["1", "2", "5"]]


@pytest.mark.parametrize("text, fragment", [
    ("src,dst,bytes,tag\n0,1,100,7\n", "column 'tag': a traffic CSV's header names src, dst, bytes"),
    ("src,src,bytes\n0,1,100\n", "the header names a column twice"),
    ("src,bytes\n0,100\n", "the header has no dst column"),
    ("dst,src,bytes\n1,0\n", "t.csv:2: 2 field(s), the header names 3"),
])
def test_csv_headers_that_cannot_be_read_are_named(tmp_path, text, fragment):
    f = tmp_path / "t.csv"
    f.write_text(text)
    one_error_line(run_cli("convert", f, tmp_path / "out.csv"), fragment)
