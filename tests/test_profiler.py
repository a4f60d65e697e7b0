"""The PMPI profiler under real Open MPI and MPICH (oversubscribed): the captured
point-to-point matrix equals the one computed here from each program's pattern, and
equals Open MPI's own monitoring component where that component sees the traffic."""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from conftest import app, launcher, one_error_line, preloaded_ring, run_cli
from rankmap.profiler.launch import run_profile
from rankmap.profiler.rundir import read_run

MPIS = ["openmpi", "mpich"]


def profile(tmp_path, cmd, name="run", **kw):
    res = run_profile(cmd, out=str(tmp_path / name), timeout=kw.pop("timeout", 120), **kw)
    return res, read_run(res.directory)


def matrix(prof):
    m = prof.bytes.tocoo()
    return {(int(i), int(j)): int(v) for i, j, v in zip(m.row, m.col, m.data)}


def msgs(prof):
    m = prof.msgs.tocoo()
    return {(int(i), int(j)): int(v) for i, j, v in zip(m.row, m.col, m.data)}


class Expect:
    def __init__(self):
        self.b = defaultdict(int)
        self.m = defaultdict(int)

    def add(self, s, d, nbytes, count=1):
        self.b[(s, d)] += nbytes * count
        self.m[(s, d)] += count

    def bytes(self):
        return {k: v for k, v in self.b.items() if self.m[k]}


def R(r, p):
    return (r + 1) % p


def L(r, p):
    return (r - 1) % p


def expect_ring(p):
    e = Expect()
    for r in range(p):
        e.add(r, R(r, p), 8000, 5)
        e.add(r, L(r, p), 28, 3)
        e.add(r, (r + 2) % p, 13)
    return e


def expect_anysource(p):
    e = Expect()
    for r in range(1, p):
        e.add(r, 0, 100 * r, r)
    return e


def split(p, color_of, key_of):
    groups = defaultdict(list)
    for r in range(p):
        groups[color_of(r)].append(r)
    return {c: sorted(m, key=lambda r: (key_of(r), r)) for c, m in groups.items()}


def expect_subcomm(p):
    e = Expect()
    for it in range(4):
        for members in split(p, lambda r: (r + it) % 2, lambda r: -r if it % 2 else r).values():
            for i, r in enumerate(members):
                e.add(r, members[(i + 1) % len(members)], 256)
    return e


def expect_intercomm(p):
    e = Expect()
    evens, odds = list(range(0, p, 2)), list(range(1, p, 2))
    for mine, other in ((evens, odds), (odds, evens)):
        for i, r in enumerate(mine):
            if i < len(other):
                e.add(r, other[i], 40)
    return e


def expect_persistent(p):
    e = Expect()
    for r in range(p):
        e.add(r, R(r, p), 400, 4)
        e.add(r, L(r, p), 12, 3)
    return e


def expect_datatypes(p):
    e = Expect()
    for r in range(p):
        e.add(r, R(r, p), 240)
        e.add(r, L(r, p), 64)
    return e


def expect_inplace(p):
    e = Expect()
    for r in range(p):
        for j in range(p):
            if j != r:
                e.add(r, j, 4 * (r + j + 1))
    return e


def expect_threads(p):
    e = Expect()
    for r in range(p):
        for t in range(4):
            e.add(r, R(r, p), 4 * (t + 1), 100)
            e.add(r, L(r, p), 16, 50)
    return e


def expect_onesided(p):
    e = Expect()
    for r in range(p):
        e.add(r, R(r, p), 40)         # put
        e.add(L(r, p), r, 80)         # get: traffic from the target
        e.add(r, 0, 40)               # accumulate into rank 0 (rank 0 to itself included)
    return e


def dims_create(p):
    """MPI_Dims_create(p, 2): the most balanced factorization, larger first."""
    a = int(np.sqrt(p))
    while p % a:
        a -= 1
    return sorted((a, p // a), reverse=True)


def expect_neighbor(p):
    e = Expect()
    d0, d1 = dims_create(p)
    for r in range(p):
        x, y = divmod(r, d1)
        for nb in (((x - 1) % d0) * d1 + y, ((x + 1) % d0) * d1 + y, x * d1 + (y - 1) % d1, x * d1 + (y + 1) % d1):
            e.add(r, nb, 12)
        e.add(r, (r + 1) % p, 40)      # neighbor allgather
        e.add(r, (r + 3) % p, 40)
        e.add(r, (r + 1) % p, 4)       # neighbor alltoallv
        e.add(r, (r + 3) % p, 8)
    return e


def expect_vcoll(p):
    e = Expect()
    for r in range(p):
        for j in range(p):
            if j != r:
                e.add(r, j, 4 * (r + j + 1))     # alltoallv
                e.add(r, j, 8)                   # alltoallw
        if r != 1 % p:
            e.add(r, 1 % p, 8 * (r + 1))         # gatherv
    root = 2 % p
    for j in range(p):
        if j != root:
            e.add(root, j, j + 2)                # scatterv
    return e


EXPECT = {"ring": expect_ring, "anysource": expect_anysource, "subcomm": expect_subcomm,
          "intercomm": expect_intercomm,
          "persistent": expect_persistent, "datatypes": expect_datatypes, "inplace": expect_inplace,
          "threads": expect_threads, "onesided": expect_onesided, "neighbor": expect_neighbor,
          "vcoll": expect_vcoll}


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("mode", sorted(EXPECT))
def test_point_to_point_matrix_exact(apps, tmp_path, mpi, mode):
    p = 5 if mode in ("ring", "subcomm", "intercomm", "vcoll") else 4
    res, prof = profile(tmp_path, launcher(mpi, p) + [str(app(apps, "traffic", mpi)), mode])
    assert res.exit_code == 0
    assert prof.complete, prof.partial_reasons()
    assert prof.size == p
    exp = EXPECT[mode](p)
    assert matrix(prof) == exp.bytes()
    if mode != "onesided":  # one-sided message counts are per call, the same here
        assert msgs(prof) == {k: v for k, v in exp.m.items() if v}


def test_mpi4_sendrecv_calls_are_counted(apps, tmp_path):
    """MPICH 4's MPI_Isendrecv and MPI_Isendrecv_replace (and their _c twins) were not
    intercepted: the profile said complete and missed their bytes."""
    p = 4
    res, prof = profile(tmp_path, launcher("mpich", p) + [str(app(apps, "traffic", "mpich")), "mpi4"])
    assert res.exit_code == 0 and prof.complete, prof.partial_reasons()
    e = Expect()
    for r in range(p):
        for right_bytes, left_bytes in ((24, 40), (8, 16)):     # the int calls, then the _c ones
            e.add(r, R(r, p), right_bytes)
            e.add(r, L(r, p), left_bytes)
    assert matrix(prof) == e.bytes()
    assert msgs(prof) == {k: v for k, v in e.m.items() if v}


def monitoring_matrix(prefix: Path, p: int) -> dict:
    """User point-to-point traffic recorded by Open MPI's monitoring component ('E' lines)."""
    out = defaultdict(int)
    for r in range(p):
        for line in (prefix.parent / f"{prefix.name}.{r}.prof").read_text().splitlines():
            f = line.split("\t")
            if f[0] == "E":
                out[(int(f[1]), int(f[2]))] += int(f[3].split()[0])
    return dict(out)


@pytest.mark.parametrize("mode", ["ring", "anysource", "subcomm", "datatypes", "threads"])
def test_matches_open_mpi_monitoring(apps, tmp_path, mode):
    """Ground truth from the MPI library itself. Not compared: persistent requests (the
    component misses them) and intercommunicator creation (it counts the library's own
    leader handshake as user traffic)."""
    p = 4
    mon = tmp_path / "mon"
    cmd = launcher("openmpi", p) + ["--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
                                    "--mca", "pml_monitoring_filename", str(mon),
                                    str(app(apps, "traffic", "openmpi")), mode]
    res, prof = profile(tmp_path, cmd)
    assert res.exit_code == 0 and prof.complete
    ours = {k: v for k, v in matrix(prof).items() if k[0] != k[1]}
    assert ours == monitoring_matrix(mon, p)
    assert ours  # not vacuous


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("style", ["mpif", "usempi", "f08"])
def test_fortran_bindings(apps, tmp_path, mpi, style):
    p = 4
    res, prof = profile(tmp_path, launcher(mpi, p) + [str(app(apps, f"ftraffic-{style}", mpi))])
    assert res.exit_code == 0 and prof.complete, prof.partial_reasons()
    e = Expect()
    for r in range(p):
        e.add(r, R(r, p), 800, 3)
        e.add(r, R(r, p), 160, 2)
        e.add(r, L(r, p), 40, 2)
        same = [q for q in range(p) if q % 2 == r % 2]
        e.add(r, same[(same.index(r) + 1) % len(same)], 32)
        for j in range(p):
            if j != r:
                e.add(r, j, 4 * (r + j + 1))
    assert matrix(prof) == e.bytes()
    [row] = prof.collectives
    assert (row.op, row.calls, row.bytes, row.members.tolist()) == ("allreduce", 1, 40, list(range(p)))


@pytest.mark.parametrize("mpi", MPIS)
def test_collective_table(apps, tmp_path, mpi):
    p = 4
    res, prof = profile(tmp_path, launcher(mpi, p) + [str(app(apps, "traffic", mpi)), "collectives"])
    assert res.exit_code == 0 and prof.complete
    rows = {(c.op, tuple(c.members.tolist()), c.root): (c.calls, c.bytes) for c in prof.collectives}
    world = tuple(range(p))
    assert rows[("bcast", world, 1)] == (3, 2400)
    assert rows[("reduce", world, 0)] == (1, 8000)
    allreduce = sorted((c.calls, c.bytes) for c in prof.collectives if c.op == "allreduce")
    assert allreduce == [(1, 1200), (2, 80)]  # 40 B and 1200 B fall into different size buckets
    assert rows[("allgather", world, -1)] == (1, 32)
    assert rows[("alltoall", world, -1)] == (1, 16)
    assert rows[("barrier", world, -1)] == (1, 0)
    # the split communicator in reversed order: its rank 0 is the highest world rank of each half
    assert rows[("bcast", (2, 0), 2)] == (1, 7)
    assert rows[("bcast", (3, 1), 3)] == (1, 7)
    assert matrix(prof) == {}  # none of these is point-to-point


@pytest.mark.parametrize("mpi", MPIS)
@pytest.mark.parametrize("mode,status", [("abort", {"aborted", "signal", "running"}),
                                         ("crash", {"signal", "running"}),
                                         ("mpierror", {"aborted", "signal", "running", "exit-without-finalize"}),
                                         ("winerror", {"aborted", "signal", "running", "exit-without-finalize"}),
                                         # mpirun kills the ranks still running when the first one exits
                                         ("nofinalize", {"exit-without-finalize", "signal", "running"})])
def test_failures_keep_every_ranks_data(apps, tmp_path, monkeypatch, mpi, mode, status):
    p = 4
    # mpirun follows its SIGTERM with SIGKILL after odls_base_sigkill_timeout (1 s by default; 3 s here):
    # on a loaded machine a rank may not run its handler within 1 s
    monkeypatch.setenv("OMPI_MCA_odls_base_sigkill_timeout", "3")
    res, prof = profile(tmp_path, launcher(mpi, p) + [str(app(apps, "traffic", mpi)), mode], timeout=60)
    assert not prof.complete
    assert prof.missing_ranks == []
    assert {r.status for r in prof.ranks} <= status
    # the ring exchange happened before the failure: every rank's share reached the disk
    assert matrix(prof) == expect_ring(p).bytes()
    # Open MPI sends SIGTERM first: every rank writes its final block
    if mpi == "openmpi":
        assert "running" not in {r.status for r in prof.ranks}
    if mode == "abort":
        assert prof.ranks[p - 1].status == "aborted" and prof.ranks[p - 1].detail == 3
    if mode == "crash":
        assert prof.ranks[1].status == "signal" and prof.ranks[1].detail == 11
    if mode in ("mpierror", "winerror"):    # under MPI_ERRORS_ARE_FATAL Open MPI ended the rank without a word to us
        assert prof.ranks[p - 1].status == "aborted" and prof.ranks[p - 1].detail != 0
    if mode == "nofinalize":
        assert "exit-without-finalize" in {r.status for r in prof.ranks}


@pytest.mark.parametrize("mpi", MPIS)
def test_a_programs_own_error_handler_still_gets_the_errors(apps, tmp_path, mpi):
    """The profiler's handler for MPI_ERRORS_ARE_FATAL is replaced by the program's own."""
    res, prof = profile(tmp_path, launcher(mpi, 4) + [str(app(apps, "traffic", mpi)), "errreturn"])
    assert res.exit_code == 0 and prof.complete
    assert matrix(prof) == expect_ring(4).bytes()


@pytest.mark.parametrize("mpi", MPIS)
def test_the_error_handlers_read_back_as_the_program_set_them(apps, tmp_path, mpi):
    """The profiler's handler stands in for MPI_ERRORS_ARE_FATAL: MPI_Comm_get_errhandler
    returned it instead, and code that compares the handle changed its behaviour."""
    res, prof = profile(tmp_path, launcher(mpi, 3) + [str(app(apps, "traffic", mpi)), "errhandler"])
    assert res.exit_code == 0 and prof.complete
    assert matrix(prof) == expect_ring(3).bytes()


def test_an_mpmd_line_profiles_every_app_context(apps, tmp_path):
    """Open MPI's -x holds for one app context: the ranks after a ':' ran unprofiled and the
    run was partial ("wrote no data")."""
    exe = str(app(apps, "traffic", "openmpi"))
    res, prof = profile(tmp_path, launcher("openmpi", 2) + [exe, "ring", ":", "-np", "3", exe, "ring"])
    assert res.exit_code == 0 and prof.complete, prof.partial_reasons()
    assert matrix(prof) == expect_ring(5).bytes()


def test_a_program_of_another_mpi_than_the_launcher_is_refused(apps, tmp_path):
    """An Open MPI program under MPICH's launcher got MPICH's profiler preloaded: two MPI
    libraries in each process, which died of SIGSEGV."""
    cmd = launcher("mpich", 2) + [str(app(apps, "traffic", "openmpi")), "ring"]
    one_error_line(run_cli("profile", "--out", tmp_path / "run", "--", *cmd),
                   "the program is linked with Open MPI but mpiexec.mpich is MPICH's launcher")


def test_spawned_processes_do_not_mix_into_the_run(apps, tmp_path):
    """A process spawned with MPI_Comm_spawn inherited the preload and appended blocks of its
    own one-rank world to the run file: the whole run was refused ("mixes different runs").
    The parents count their bytes to it as going outside MPI_COMM_WORLD."""
    res, prof = profile(tmp_path, launcher("openmpi", 3) + [str(app(apps, "traffic", "openmpi")), "spawn"])
    assert res.exit_code == 0 and prof.complete and prof.size == 3, prof.partial_reasons()
    assert matrix(prof) == expect_ring(3).bytes()
    assert sum(r.unattributed_bytes for r in prof.ranks) == 300


@pytest.mark.parametrize("flush", [1, 1e-10])
def test_a_rank_killed_keeps_its_snapshot(apps, tmp_path, monkeypatch, flush):
    """SIGKILL runs no handler: the snapshot taken at the first collective after traffic is
    what is left of the rank. --flush-seconds below 1 ns ("as often as possible") turned
    snapshots off (the interval truncated to 0 ns, which means none)."""
    p = 4
    monkeypatch.setenv("OMPI_MCA_odls_base_sigkill_timeout", "3")
    res, prof = profile(tmp_path, launcher("openmpi", p) + [str(app(apps, "traffic", "openmpi")), "sigkill"],
                        timeout=60, flush_seconds=flush)
    assert not prof.complete and prof.missing_ranks == []
    want, got = expect_ring(p).bytes(), matrix(prof)
    if flush == 1:          # the snapshot at the barrier after the ring: all of it
        assert got == want
    else:                   # snapshots from the first send on, each next one no sooner than the time since MPI_Init
        mine = {k: v for k, v in got.items() if k[0] == 1}
        assert mine and all(v <= want[k] for k, v in mine.items())
        assert {k: v for k, v in got.items() if k[0] != 1} == {k: v for k, v in want.items() if k[0] != 1}


def test_rank_metadata(apps, tmp_path):
    res, prof = profile(tmp_path, launcher("openmpi", 2) + [str(app(apps, "traffic", "openmpi")), "ring"])
    for r in prof.ranks:
        assert r.hostname and r.pid > 0
        assert r.affinity_init and r.affinity_end
        assert r.cpu_init >= 0 and r.cpu_end >= 0
        assert r.meta["mpi_implementation"] == "Open MPI"
        assert r.meta["counting_rules"] == "rankmap-1"
        assert r.meta["run_id"] == prof.run_id
    assert "Open MPI" in prof.mpi_library


def test_run_directory_is_never_overwritten(apps, tmp_path):
    cmd = launcher("openmpi", 2) + [str(app(apps, "traffic", "openmpi")), "ring"]
    profile(tmp_path, cmd, name="same")
    from rankmap.profiler.errors import UserError
    with pytest.raises(UserError, match="already exists"):
        profile(tmp_path, cmd, name="same")


def test_thread_multiple_uses_atomic_counters(apps, tmp_path):
    res, prof = profile(tmp_path, launcher("openmpi", 2) + [str(app(apps, "traffic", "openmpi")), "threads"])
    assert all(r.meta["thread_level"] == "MPI_THREAD_MULTIPLE" for r in prof.ranks)
    assert matrix(prof) == expect_threads(2).bytes()


def test_a_preload_given_on_the_launcher_line_is_kept_after_the_profiler(apps, tmp_path):
    """`mpirun -x LD_PRELOAD=lib` (a tracer, a malloc library) came after the profiler's -x
    on the line and replaced it: no rank was profiled. Both are preloaded now."""
    lib = "/lib/x86_64-linux-gnu/libm.so.6"
    cmd = launcher("openmpi", 3)
    cmd = cmd[:1] + ["-x", f"LD_PRELOAD={lib}"] + cmd[1:] + [str(app(apps, "traffic", "openmpi")), "ring"]
    res, prof = profile(tmp_path, cmd)
    assert res.exit_code == 0 and prof.complete, prof.partial_reasons()
    assert matrix(prof) == expect_ring(3).bytes()
    import json
    argv = json.loads((res.directory / "run.json").read_text())["argv"]
    assert sum(a.startswith("LD_PRELOAD=") for a in argv) == 1
    assert next(a for a in argv if a.startswith("LD_PRELOAD=")).endswith(":" + lib)


def test_an_open_mpi_appfile_is_refused_with_the_way_that_works(tmp_path):
    app_file = tmp_path / "apps"
    app_file.write_text("-np 2 ./a\n-np 2 ./b\n")
    one_error_line(run_cli("profile", "--out", tmp_path / "run", "--", "mpirun.openmpi", "--app", app_file),
                   "an Open MPI appfile (--app): its app contexts would not get the profiler")


@pytest.mark.parametrize("value", ["abc", "-5"])
def test_a_flush_interval_set_by_hand_that_is_no_number_is_said(apps, tmp_path, value):
    """RANKMAP_PROFILE_FLUSH_SECONDS=abc or -5 (the profiler preloaded by hand, not through
    `rankmap profile`, which checks --flush-seconds): atof read 0, and a negative number was
    taken, each turning snapshots off without a word. Now rank 0 says so and the default
    interval stands."""
    res = preloaded_ring(apps, tmp_path, RANKMAP_PROFILE_FLUSH_SECONDS=value)
    assert res.returncode == 0, res.stderr[-800:]
    assert res.stderr.count(f"RANKMAP_PROFILE_FLUSH_SECONDS={value} is not a number of seconds") == 1, res.stderr[-800:]
