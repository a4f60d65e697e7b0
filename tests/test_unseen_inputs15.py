"""Round 15 of a new user's bad inputs: files that passed through other hands before rankmap read
them. Text saved by Windows and Mac editors and spreadsheets (a UTF-8 byte-order mark before a
MatrixMarket banner or a dense matrix, lines ending in CR alone), Open MPI hostfiles written as
Open MPI reads them (`slots = 4`, `max-slots=8`, `count=4`) and Slurm's arbitrary hostfiles as
Slurm reads them (`n1,n2,n1,n2`), mapping files edited by hand and then launched (CRLF line
ends, a byte-order mark, a machinefile's `host:k` in the hostfile: rankmap read them, the
launcher did not) or read (a hostfile that no longer says what binding.txt says), a mapping
directory named with a comma under srun, what `convert` wrote under another format's name, Open
MPI monitoring dumps whose tabs became blanks, an SMPI trace of an older SimGrid's `wait`,
tune-collectives sizes given largest first, and the Python API given NumPy's own numbers. Each
test failed before its fix; the controls, inputs that must still be taken, pass on both. The
runs are real (the CLI, the API, Open MPI's mpirun, the local Slurm cluster, SimGrid)."""
from __future__ import annotations

import json
import shutil
import socket
import subprocess

import numpy as np
import pytest

import rankmap
from conftest import RING8, ROOT, app, launcher, one_error_line, require, run_cli, spawn_cli, ti_trace

MACHINE = ["--nodes", "n[1-2]", "--node-topology", "pack:2 core:2"]
BOM = b"\xef\xbb\xbf"


@pytest.fixture
def mapping(tmp_path, ring8):
    """A mapping of the 8-rank ring onto two nodes of four cores, as `rankmap map` writes it."""
    d = tmp_path / "m"
    res = run_cli("map", ring8, *MACHINE, "--out", d)
    assert res.returncode == 0, res.stderr
    return d


def mapped(res) -> dict:
    """The report of a `map --json` run that succeeded."""
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def edit(path, how) -> None:
    path.write_bytes(how(path.read_bytes()))


# --------------------------------------------------------------------------- text from other editors

def _mtx() -> str:
    return "%%MatrixMarket matrix coordinate real general\n8 8 8\n" + \
        "".join(f"{i + 1} {(i + 1) % 8 + 1} 1000000\n" for i in range(8))


def _dense() -> str:
    return "".join(",".join("1000000" if j == (i + 1) % 8 else "0" for j in range(8)) + "\n" for i in range(8))


@pytest.mark.parametrize("name,text,fmt", [
    ("t.mtx", _mtx(), "mtx"),          # was "not a MatrixMarket file (no %%MatrixMarket banner)"
    ("t.csv", _dense(), "treematch"),  # was "t.csv:1: expected src,dst,bytes[,messages], got 8 field(s)"
    ("t.txt", RING8, "csv"),           # was "not a traffic file rankmap can tell" (the header not seen)
    ("t.csv", RING8, "csv"),           # control: under a .csv name the CSV reader dropped the mark already
])
def test_a_byte_order_mark_before_a_banner_or_a_dense_matrix_is_read(tmp_path, name, text, fmt):
    """Notepad's "UTF-8" and a spreadsheet's "CSV UTF-8" start the file with a byte-order mark:
    the banner and the first row of numbers were not seen behind it."""
    f = tmp_path / name
    f.write_bytes(BOM + text.encode())
    rep = mapped(run_cli("map", f, *MACHINE, "--out", tmp_path / "m", "--json"))
    assert rep["traffic"]["format"] == fmt
    assert rep["traffic"]["ranks"] == 8 and rep["traffic"]["bytes"] == 8e6


@pytest.mark.parametrize("name,text,fmt", [
    ("pairs.csv", RING8, "csv"),           # was "not readable as CSV (new-line character seen in unquoted
    ("dense.csv", _dense(), "treematch"),  # field - do you need to open the file in universal-newline mode?)"
    ("t.mtx", _mtx(), "mtx"),              # was "Line 2: Invalid MatrixMarket header: Premature EOF"
])
def test_lines_ending_in_cr_alone_are_read(tmp_path, name, text, fmt):
    """Excel for Mac's "CSV (Macintosh)" ends its lines in CR alone; the METIS and hostfile
    readers (splitlines) took such files, the CSV and MatrixMarket readers did not."""
    f = tmp_path / name
    f.write_bytes(text.replace("\n", "\r").encode())
    rep = mapped(run_cli("map", f, *MACHINE, "--out", tmp_path / "m", "--json"))
    assert rep["traffic"]["format"] == fmt
    assert rep["traffic"]["ranks"] == 8 and rep["traffic"]["bytes"] == 8e6
    crlf = tmp_path / f"crlf-{name}"          # control: CRLF, which was read already
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    assert mapped(run_cli("map", crlf, *MACHINE, "--out", tmp_path / "m2", "--json"))["traffic"]["bytes"] == 8e6


# --------------------------------------------------------------------------- Open MPI hostfiles

@pytest.mark.parametrize("lines", [
    ["n1 slots = 4", "n2 slots = 4"],                   # blanks around '=': "'=' is not a host name"
    ["n1 slots=4 max-slots=4", "n2 slots=4 max-slots=8"],   # max-slots: "'max-slots=4' is not a host name"
    ["n1 count=4", "n2 count=4"],                       # Open MPI's other names of slots
    ["n1 cpu=4", "n2 cpu=4 max_count=8"],
    ["n1 slots=4 max_slots=4", "n2 slots=4"],           # control: read before
])
def test_open_mpi_hostfile_words_open_mpi_takes_are_read(tmp_path, ring8, lines):
    """Open MPI 4.1's mpirun runs each of these hostfiles (its parser takes 'slots', 'count' and
    'cpu', 'max_slots', 'max-slots' and 'max_count', blanks around '='); rankmap refused them as
    an evaluated mapping and as a --nodes file."""
    hf = tmp_path / "hosts"
    hf.write_text("\n".join(lines) + "\n")
    ev = run_cli("evaluate", ring8, hf, *MACHINE, "--json")
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["metrics"]["hosts"]["internode_fraction"] == 0.25     # 4 + 4 in order
    rep = mapped(run_cli("map", ring8, "--nodes", hf, "--node-topology", "pack:2 core:2", "--out", tmp_path / "m",
                         "--json"))
    assert rep["machine"].startswith("2 nodes: n[1-2]")


def test_open_mpi_hostfile_with_two_slot_counts_on_a_line_is_refused(tmp_path, ring8):
    """Control of the above: a line still gives one slot count."""
    hf = tmp_path / "hosts"
    hf.write_text("n1 slots=2 count=6\nn2 slots=4\n")
    one_error_line(run_cli("evaluate", ring8, hf, *MACHINE), "expected 'host', 'host:k' or 'host slots=N'")


# --------------------------------------------------------------------------- mapping files edited by hand

@pytest.mark.parametrize("text,internode", [
    ("n1,n1,n1,n1\nn2,n2,n2,n2\n", 0.25),     # was "'n1,n1,n1,n1' is not a host name"
    ("n1,n2,n1,n2,n1,n2,n1,n2\n", 1.0),
    ("n1\nn1\nn1\nn1\nn2,n2\nn2\nn2\n", 0.25),
])
def test_a_slurm_arbitrary_hostfile_of_comma_separated_hosts_is_read(tmp_path, ring8, text, internode):
    """srun(1): the SLURM_HOSTFILE of -m arbitrary holds hosts "one per line or comma
    separated" (Slurm 22.05 runs `n1,n2,n1,n2` rank by rank, in order); evaluate, predict, replay
    and srun refused such a file written by hand."""
    hf = tmp_path / "slurm-hosts"
    hf.write_text(text)
    ev = run_cli("evaluate", ring8, hf, *MACHINE, "--json")
    assert ev.returncode == 0, ev.stderr
    assert json.loads(ev.stdout)["metrics"]["slurm-hosts"]["internode_fraction"] == internode


def test_a_mapping_whose_hostfile_lists_its_hosts_by_commas_still_launches(mapping):
    """The same file as a mapping's own hostfile (rewritten by hand, binding.txt unchanged)."""
    hosts = (mapping / "hostfile").read_text().split()
    (mapping / "hostfile").write_text(",".join(hosts) + "\n")
    res = run_cli("srun", mapping, "--dry-run", "--", "./app")
    assert res.returncode == 0, res.stderr
    (mapping / "hostfile").write_text(",".join(hosts[:-1]) + "\n")      # control: a rank short
    one_error_line(run_cli("srun", mapping, "--dry-run", "--", "./app"), "hostfile (7 ranks) and binding.txt (8 ranks)")


def test_a_comma_separated_hostfile_runs_on_the_local_cluster_as_read(slurm_cluster, tmp_path):
    """Slurm itself places the ranks of `n2,n1,n2,n1` as rankmap reads them."""
    env = dict(slurm_cluster, PYTHONPATH=str(ROOT))
    (tmp_path / "r4.csv").write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 4},1000\n" for i in range(4)))
    d = tmp_path / "m"
    assert spawn_cli("map", tmp_path / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1",
                     "--algorithm", "cyclic", "--out", d, env=env).returncode == 0
    hosts = (d / "hostfile").read_text().split()
    (d / "hostfile").write_text(",".join(hosts) + "\n")
    res = spawn_cli("srun", d, "--srun-arg=-t1", "--", "sh", "-c", "echo $SLURM_PROCID $(hostname)", env=env,
                    timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    ran = dict(ln.split() for ln in res.stdout.splitlines() if ln[:1].isdigit())
    assert [ran[str(r)] for r in range(4)] == hosts


@pytest.mark.parametrize("launch,name,how,fragment", [
    (["srun", "--dry-run"], "hostfile", lambda b: b.replace(b"\n", b"\r\n"),
     "hostfile:1: a carriage return (Windows CRLF line ends), which Slurm (SLURM_HOSTFILE) does not read"),
    (["srun", "--dry-run"], "hostfile", lambda b: BOM + b,
     "hostfile: starts with a byte-order mark (U+FEFF, an editor's 'UTF-8 with BOM'), which Slurm"),
    (["srun", "--dry-run"], "hostfile", lambda b: b"n1:4\nn2:4\n",
     "hostfile:1: 'n1:4': Slurm (SLURM_HOSTFILE) reads one host per line"),
    (["srun", "--dry-run", "--bind-wrapper"], "binding.txt", lambda b: BOM + b,
     "binding.txt: starts with a byte-order mark (U+FEFF, an editor's 'UTF-8 with BOM'), which rankmap-bind"),
    (["mpirun", "--dry-run", "--mpi", "openmpi"], "rankfile", lambda b: b.replace(b"\n", b"\r\n"),
     "rankfile:1: a carriage return (Windows CRLF line ends), which Open MPI's mpirun does not read"),
    (["mpirun", "--dry-run", "--mpi", "openmpi"], "rankfile", lambda b: BOM + b,
     "rankfile: starts with a byte-order mark"),
    (["mpirun", "--dry-run", "--mpi", "mpich"], "machinefile", lambda b: BOM + b,
     "machinefile: starts with a byte-order mark (U+FEFF, an editor's 'UTF-8 with BOM'), which MPICH's mpiexec"),
])
def test_launch_files_the_launcher_cannot_read_are_refused(mapping, launch, name, how, fragment):
    """rankmap reads a byte-order mark, CRLF line ends and a machinefile's `host:k` in any
    mapping file, and checked the mapping; the launcher reads the file itself and failed only
    then: Slurm with "Invalid node name specified", "Invalid hostfile contents on line 1" or
    "Too few NodeNames in Slurm Hostfile", Open MPI with "parse error in the hostfile", MPICH
    with ssh to a host '\\357\\273\\277n1', rankmap-bind with "rank 0 is not in binding.txt"."""
    edit(mapping / name, how)
    res = run_cli(launch[0], mapping, *launch[1:], "--", "./app")
    one_error_line(res, fragment)
    assert "write the mapping again" in res.stderr


@pytest.mark.parametrize("launch,name,how", [
    (["srun", "--dry-run"], "hostfile", lambda b: b"# edited by hand\n" + b.replace(b"\n", b"  \n")),
    (["srun", "--dry-run", "--bind-wrapper"], "binding.txt", lambda b: b.replace(b"\n", b"\r\n")),
    (["mpirun", "--dry-run", "--mpi", "mpich"], "machinefile", lambda b: b.replace(b"\n", b"\r\n")),
    (["mpirun", "--dry-run", "--mpi", "openmpi"], "rankfile", lambda b: b"# edited\n" + b),
])
def test_launch_files_the_launcher_reads_still_launch(mapping, launch, name, how):
    """Controls: comments, trailing blanks, and CRLF where the reader takes it (Slurm 22.05,
    MPICH's Hydra and rankmap-bind read these)."""
    edit(mapping / name, how)
    res = run_cli(launch[0], mapping, *launch[1:], "--", "./app")
    assert res.returncode == 0, res.stderr


@pytest.mark.mpi
def test_a_crlf_rankfile_is_refused_before_open_mpi_parses_it(tmp_path):
    """The real launch: Open MPI's mpirun stopped with "Open RTE detected a parse error in the
    hostfile" and three ORTE_ERROR_LOG lines on the rankfile rankmap had passed; with a comment
    line added instead, the mapping still runs."""
    require(shutil.which("mpirun") is not None, "Open MPI's mpirun not installed")
    (tmp_path / "r2.csv").write_text("src,dst,bytes\n0,1,1000\n1,0,1000\n")
    d = tmp_path / "m"
    assert run_cli("map", tmp_path / "r2.csv", "--nodes", socket.gethostname(), "--node-topology", "core:2",
                   "--out", d).returncode == 0
    good = run_cli("mpirun", d, "--", "/bin/true")
    assert good.returncode == 0, good.stderr
    edit(d / "rankfile", lambda b: b"# edited\n" + b.replace(b"\n", b"\r\n"))
    one_error_line(run_cli("mpirun", d, "--", "/bin/true"), "which Open MPI's mpirun does not read")
    edit(d / "rankfile", lambda b: b.replace(b"\r\n", b"\n"))
    assert run_cli("mpirun", d, "--", "/bin/true").returncode == 0


@pytest.mark.parametrize("name,how,fragment", [
    ("binding.txt", lambda s: s.replace("0 n1 0", "0 N1 0"),
     "hostfile and binding.txt disagree at rank 0: n1 ({d}/hostfile:1) and N1 ({d}/binding.txt:2)"),
    ("hostfile", lambda s: s.replace("n2\n", "n1\n", 1),
     "hostfile and binding.txt disagree at rank 4: n1 ({d}/hostfile:5) and n2 ({d}/binding.txt:6)"),
    ("hostfile", lambda s: s + "n2\n", "hostfile (9 ranks) and binding.txt (8 ranks) disagree"),
])
def test_a_hostfile_that_disagrees_with_binding_txt_names_the_rank(mapping, ring8, name, how, fragment):
    """One of the two files edited by hand: "hostfile (8 ranks) and binding.txt (8 ranks)
    disagree", with nothing to say where (the same for evaluate, predict, replay, srun)."""
    (mapping / name).write_text(how((mapping / name).read_text()))
    for args in (["evaluate", ring8, mapping], ["srun", mapping, "--dry-run", "--", "./app"]):
        one_error_line(run_cli(*args), fragment.format(d=mapping))


def test_a_mapping_directory_named_with_a_comma_hands_its_order_to_the_kernels_whole(tmp_path, ring8):
    """srun's --export splits its list at commas: RANKMAP_COLL_ORDER=/data/map,v2/collective-
    order.txt reached the ranks as /data/map, and the kernels said "does not list every rank;
    ordering by nodes instead". The variable goes in srun's own environment (--export=ALL hands
    it on); the printed line runs as it is."""
    d = tmp_path / "map,v2"
    assert run_cli("map", ring8, *MACHINE, "--out", d).returncode == 0
    res = run_cli("srun", d, "--preload-collectives", "--dry-run", "--", "./app")
    assert res.returncode == 0, res.stderr
    line = res.stdout.replace("\n", "")
    env, _, args = line.partition(" srun ")
    assert f"RANKMAP_COLL_ORDER={d / 'collective-order.txt'}" in env
    assert "RANKMAP_COLL_ORDER" not in args and "--export=ALL,LD_PRELOAD=" in args
    plain = tmp_path / "map"        # control: a name without a comma keeps it in --export
    assert run_cli("map", ring8, *MACHINE, "--out", plain).returncode == 0
    res = run_cli("srun", plain, "--preload-collectives", "--dry-run", "--", "./app")
    assert f",RANKMAP_COLL_ORDER={plain / 'collective-order.txt'}" in res.stdout.replace("\n", "")


def test_a_comma_in_the_mapping_s_path_reaches_the_ranks_on_the_local_cluster(slurm_cluster, apps, tmp_path):
    """The real launch: the kernels read the mapping's order (RANKMAP_COLL_VERBOSE says 'order:
    file'), where they ordered by nodes."""
    env = dict(slurm_cluster, PYTHONPATH=str(ROOT), RANKMAP_COLL="force", RANKMAP_COLL_VERBOSE="1")
    (tmp_path / "r4.csv").write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 4},1000\n" for i in range(4)))
    d = tmp_path / "map,v2"
    assert spawn_cli("map", tmp_path / "r4.csv", "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", d,
                     env=env).returncode == 0
    res = spawn_cli("srun", d, "--preload-collectives", "--srun-arg=-t1", "--",
                    str(app(apps, "traffic", "openmpi")), "collectives", env=env, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "order: file" in res.stderr and "ordering by nodes instead" not in res.stderr, res.stderr


# --------------------------------------------------------------------------- what convert wrote

@pytest.mark.parametrize("to,name,pairs", [
    ("csv", "t.mtx", 8),         # was "not a MatrixMarket file (no %%MatrixMarket banner)"
    ("metis", "t.mtx", 16),      # the same
    ("npz", "t.mtx", 8),         # the same
    ("csv", "t.graph", 8),       # was "t.graph:1: bad METIS header 'src,dst,bytes'"
    ("mtx", "t.graph", 8),       # was "t.graph:3: METIS fmt '8' must be up to three 0/1 digits"
    ("npz", "t.metis", 8),       # was "a NUL byte: this is a binary file"
    ("mtx", "t.mtx", 8),         # controls
    ("metis", "t.graph", 16),
])
def test_what_convert_writes_under_another_formats_name_is_read_back(tmp_path, ring8, to, name, pairs):
    """`convert --to csv t.mtx`: the name chose the reader before the content was looked at
    (a .csv name was already read by its content, round 11)."""
    res = run_cli("convert", ring8, tmp_path / name, "--to", to)
    assert res.returncode == 0, res.stderr
    back = run_cli("convert", tmp_path / name, tmp_path / "back.csv")
    assert back.returncode == 0, back.stderr
    assert f"8 ranks, {pairs} directed pairs ({to})" in back.stdout


def test_a_file_named_mtx_that_is_no_matrix_market_file_is_still_named_so(tmp_path):
    """Control: what is neither MatrixMarket nor another format's first line keeps its reader's
    message."""
    (tmp_path / "t.mtx").write_text("8 8 8\n1 2 3\n")
    one_error_line(run_cli("convert", tmp_path / "t.mtx", tmp_path / "b.csv"), "no %%MatrixMarket banner")


# --------------------------------------------------------------------------- Open MPI monitoring dumps

def test_monitoring_dumps_whose_tabs_became_blanks_are_read_alike(apps, tmp_path):
    """Open MPI's dump (`--mca pml_monitoring_enable 2`) separates its fields by tabs; copied
    from a terminal (or retabbed by an editor) they are blanks, and every such line was skipped
    as no E/I line: rank 0's sends were lost without a word when only its file was copied so,
    "no point-to-point lines (was pml_monitoring_enable set?)" when both were."""
    real = tmp_path / "real"
    real.mkdir()
    res = subprocess.run(launcher("openmpi", 2) + ["--mca", "pml_monitoring_enable", "2", "--mca",
                                                   "pml_monitoring_enable_output", "3", "--mca",
                                                   "pml_monitoring_filename", str(real / "p"),
                                                   str(app(apps, "traffic", "openmpi")), "ring"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    want = run_cli("convert", real / "p.0.prof", tmp_path / "want.csv")
    assert want.returncode == 0, want.stderr
    for spaced in ([0], [0, 1]):
        d = tmp_path / f"copy{len(spaced)}"
        d.mkdir()
        for r in (0, 1):
            text = (real / f"p.{r}.prof").read_text()
            (d / f"p.{r}.prof").write_text(text.expandtabs() if r in spaced else text)
        got = run_cli("convert", d / "p.0.prof", d / "got.csv")
        assert got.returncode == 0, got.stderr
        assert (d / "got.csv").read_text() == (tmp_path / "want.csv").read_text()


def test_a_monitoring_line_of_blanks_that_is_not_one_is_refused(tmp_path):
    """An E line of blanks without its 'bytes' and 'msgs sent' was skipped as no E line too (its
    100 bytes lost): it is named as the tab-separated one is."""
    (tmp_path / "p.0.prof").write_text("E 0 1 100 1\n")
    (tmp_path / "p.1.prof").write_text("E\t1\t0\t100 bytes\t1 msgs sent\n")
    one_error_line(run_cli("convert", tmp_path / "p.0.prof", tmp_path / "b.csv"),
                   "p.0.prof:1: malformed monitoring line")


# --------------------------------------------------------------------------- SimGrid's replay

def test_a_trace_line_simgrid_refuses_is_named_not_its_backtrace(tmp_path):
    """A trace of an older SimGrid (`wait` without its source, destination and tag): rankmap
    read it, SimGrid 3.32's replay threw, and the error showed the exception's first line and
    the backtrace ("-> 6# 0x00007F54... in libsimgrid.so.3.32"), not SimGrid's reason nor the
    line it refused."""
    require(shutil.which("smpirun") is not None, "SimGrid not installed")
    trace = ti_trace(tmp_path, [["isend 1 0 2000", "recv 1 0 2000", "wait"],
                                ["isend 0 0 2000", "recv 0 0 2000", "wait"]])
    p = tmp_path / "p"
    assert run_cli("platform", "--torus", "2", "--cores", "1", "--out", p).returncode == 0
    (tmp_path / "hf").write_text("n0\nn1\n")
    res = run_cli("replay", trace, tmp_path / "hf", "--platform", p)
    one_error_line(res, "SimGrid: std::invalid_argument: parse replay failed. 2 items were given on the line.")
    assert "needs after them 3 mandatory arguments" in res.stderr and "The full line that was given is: 0 wait" \
        in res.stderr
    assert "backtrace" not in res.stderr and "0x0000" not in res.stderr


# --------------------------------------------------------------------------- tune-collectives

def test_tune_collectives_sizes_in_any_order_give_the_same_table(tmp_path):
    """`--sizes 1048576,8`: the rules were made in the order given, "from 0 B the 1 MB choice,
    from 8 B the 8 B one" (allreduce 0 ring, 8 recdbl: the kernel timed fastest at 1 MB used
    below 8 B only), the table upside down, without a word. On a simulated cluster the timings
    are the same run to run."""
    require(shutil.which("smpirun") is not None, "SimGrid not installed")
    p = tmp_path / "p"
    assert run_cli("platform", "--torus", "4", "--cores", "2", "--out", p).returncode == 0
    tables = []
    for sizes in ("8,1048576", "1048576,8", "1048576,8,8"):
        out = tmp_path / f"t{len(tables)}.txt"
        res = run_cli("tune-collectives", "-n", "8", "--platform", p, "--ops", "allreduce,bcast", "--sizes", sizes,
                      "--out", out)
        assert res.returncode == 0, res.stderr
        rules = [ln.split() for ln in out.read_text().splitlines() if not ln.startswith("#")]
        for op in ("allreduce", "bcast"):
            froms = [int(r[1]) for r in rules if r[0] == op]
            assert froms == sorted(froms) and froms[0] == 0, rules
        tables.append(out.read_text())
    assert tables[0] == tables[1] == tables[2]


def test_tune_collectives_refuses_an_operation_given_twice(tmp_path):
    """`--ops allreduce,bcast,allreduce` timed allreduce twice and wrote its rules twice: the
    kernels appended the second table to the first."""
    one_error_line(run_cli("tune-collectives", "-n", "2", "--ops", "allreduce,bcast,allreduce", "--out",
                           tmp_path / "t.txt"), "--ops allreduce,bcast,allreduce: allreduce is given twice")
    assert not (tmp_path / "t.txt").exists()


# --------------------------------------------------------------------------- the Python API

@pytest.mark.parametrize("value", [np.float32(5), np.int64(5), np.int32(5), np.uint16(5)])
def test_api_numbers_of_numpy_types_are_numbers(value):
    """A script's np.int64 or np.float32 (a time limit or a cost taken from an array): "seconds
    np.float32(5.0) is not a number", "--hop-cost: cost np.int64(5) is not a number"; np.float64
    (a float) passed."""
    m = rankmap.machine("n[1-4]", "pack:1 core:1", torus="4", hop_cost=value)
    assert m.hop_cost == 5.0 and "hop 5" in m.describe()
    ring = np.roll(np.eye(4), 1, axis=1) * 1e6
    res = rankmap.map(ring, m, time_limit=value)
    assert sorted(res.slot_of_rank.tolist()) == [0, 1, 2, 3]
    with pytest.raises(rankmap.UserError, match="is not a number"):       # control: numpy's bool is none
        rankmap.map(ring, m, time_limit=np.bool_(True))


def test_api_numbers_of_numpy_types_give_the_same_machine():
    """The cost a NumPy number sets is the one the same Python number sets."""
    a = rankmap.machine("n[1-4]", "pack:1 core:1", torus="4", hop_cost=np.int64(7))
    b = rankmap.machine("n[1-4]", "pack:1 core:1", torus="4", hop_cost=7)
    ring = np.roll(np.eye(4), 1, axis=1) * 1e6
    assert rankmap.evaluate(ring, a, [0, 2, 1, 3]) == rankmap.evaluate(ring, b, [0, 2, 1, 3])


# ----------------------------------------------------------------------------- the round's leftovers

def test_api_write_over_a_mapping_names_force_true(tmp_path):
    """write() on an existing mapping told a script to "pass --force" (the CLI's flag)."""
    t = rankmap.traffic(np.ones((4, 4)) - np.eye(4))
    m = rankmap.machine("n[1-2]", "pack:1 core:2")
    r = rankmap.map(t, m)
    rankmap.write(tmp_path / "m", t, m, r)
    with pytest.raises(rankmap.UserError, match=r"out .*already exists; pass force=True to replace it"):
        rankmap.write(tmp_path / "m", t, m, r)
    rankmap.write(tmp_path / "m", t, m, r, force=True)                # control


def test_api_torus_coordinates_as_tuples_or_numpy_rows():
    """machine(coords=...) took only lists (as machine.json writes them): a script's tuples or
    numpy rows were "each host needs a list of 1 whole numbers"."""
    t = rankmap.traffic(np.ones((4, 4)) - np.eye(4))
    given = rankmap.machine("n[1-4]", "pack:1 core:1", torus="4",
                            coords={"n1": (0,), "n2": np.array([1]), "n3": [2], "n4": (np.int64(3),)})
    lists = rankmap.machine("n[1-4]", "pack:1 core:1", torus="4", coords={f"n{i + 1}": [i] for i in range(4)})
    assert rankmap.map(t, given, seed=0).cost == rankmap.map(t, lists, seed=0).cost
    with pytest.raises(rankmap.UserError, match="not a whole number"):                  # control
        rankmap.machine("n[1-2]", "pack:1 core:1", torus="4", coords={"n1": (0.5,), "n2": (1,)})


def test_help_of_an_option_without_bounds_shows_no_range():
    """`rankmap map --help` showed `[x<=None]` after --parallel's help."""
    res = run_cli("map", "--help")
    assert res.returncode == 0 and "None]" not in res.stdout and "--parallel" in res.stdout


def test_level_cost_minus_zero_is_zero(ring8, tmp_path):
    """--level-costs -0,0,0 was taken and printed as 'node -0'."""
    res = run_cli("map", ring8, *MACHINE, "--level-costs=-0,0,0", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "-0" not in json.loads((tmp_path / "m" / "report.json").read_text())["machine"]
