"""Round 13 of a new user's bad inputs: real-world files rankmap had never seen, written here
in small in the style of the real ones. An lstopo XML that hwloc 3 wrote (format 3.0), one of
a node whose packages hold different numbers of cores (offline cores, a cgroup), one under a
directory named with '=', a synthetic description with a tab; Slurm's own topology.conf(5)
examples (topology/block with blocks larger than the base block size, topology/ring);
MatrixMarket files that are skew-symmetric, vectors or carry comments among their entries; a
CSV written by pandas with its row index; SimGrid's own replay examples (rank files named
actions0.txt, sizes as 1e6, no datatype fields, `init 1` for doubles, `bcast COUNT ROOT`, one
shared file of every rank). Each test failed before its fix; the controls, inputs that must
still be taken, pass on both. The runs are real (the CLI, hwloc's lstopo, the readers)."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

import rankmap
from conftest import one_error_line, require, run_cli
from rankmap.profiler.smpi_trace import DATATYPE_SIZE, NOT_REPLAYABLE


# --------------------------------------------------------------------------- lstopo XML files

def _mask(pus) -> str:
    bits = 0
    for p in pus:
        bits |= 1 << p
    return f"0x{bits:08x}"


def lstopo_xml(version: str, packages: list[int], smt: int = 1) -> str:
    """An lstopo XML as `lstopo --of xml` writes it (hwloc 2: version 2.0; hwloc 3: 3.0), of
    one NUMA node and packages of the given numbers of cores, `smt` PUs each."""
    pu, gp, body = 0, 10, []
    allpus = list(range(sum(packages) * smt))
    for p, ncores in enumerate(packages):
        cores = []
        for c in range(ncores):
            pus = list(range(pu, pu + smt))
            pu += smt
            inner = "".join(f'        <object type="PU" os_index="{q}" cpuset="{_mask([q])}" '
                            f'complete_cpuset="{_mask([q])}" nodeset="0x00000001" complete_nodeset="0x00000001" '
                            f'gp_index="{gp + 1 + i}"/>\n' for i, q in enumerate(pus))
            cores.append(f'      <object type="Core" os_index="{c}" cpuset="{_mask(pus)}" '
                         f'complete_cpuset="{_mask(pus)}" nodeset="0x00000001" complete_nodeset="0x00000001" '
                         f'gp_index="{gp}">\n{inner}      </object>\n')
            gp += 1 + smt
        mine = list(range(pu - ncores * smt, pu))
        body.append(f'    <object type="Package" os_index="{p}" cpuset="{_mask(mine)}" complete_cpuset="{_mask(mine)}" '
                    f'nodeset="0x00000001" complete_nodeset="0x00000001" gp_index="{gp}">\n'
                    + "".join(cores) + "    </object>\n")
        gp += 1
    m = _mask(allpus)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE topology SYSTEM "hwloc2.dtd">\n'
            f'<topology version="{version}">\n'
            f'  <object type="Machine" os_index="0" cpuset="{m}" complete_cpuset="{m}" allowed_cpuset="{m}" '
            'nodeset="0x00000001" complete_nodeset="0x00000001" allowed_nodeset="0x00000001" gp_index="1">\n'
            f'    <object type="NUMANode" os_index="0" cpuset="{m}" complete_cpuset="{m}" nodeset="0x00000001" '
            'complete_nodeset="0x00000001" gp_index="2" local_memory="1073741824"/>\n'
            + "".join(body) + "  </object>\n</topology>\n")


def _lstopo_major() -> int:
    require(shutil.which("lstopo-no-graphics") is not None, "hwloc's lstopo-no-graphics")
    out = subprocess.run(["lstopo-no-graphics", "--version"], capture_output=True, text=True).stdout
    m = re.search(r"(\d+)\.\d+", out)
    return int(m.group(1)) if m else 0


@pytest.fixture
def traffic(tmp_path):
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 4},{100 * (i + 1)}\n" for i in range(4)))
    return t


def test_an_lstopo_xml_of_hwloc_3_says_how_to_write_it_for_hwloc_2(tmp_path, traffic):
    """hwloc 3's `lstopo --of xml` writes format 3.0; hwloc 2 reads it as "Invalid argument",
    which rankmap reported as a file without a Machine object down to its PUs."""
    if _lstopo_major() >= 3:
        pytest.skip("this hwloc reads format 3.0")
    new, old = tmp_path / "node3.xml", tmp_path / "node2.xml"
    new.write_text(lstopo_xml("3.0", [2, 2], smt=2))
    old.write_text(lstopo_xml("2.0", [2, 2], smt=2))
    one_error_line(run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", new, "--out", tmp_path / "m"),
                   "an lstopo XML of format 3.0 (written by hwloc 3.x)")
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", new, "--out", tmp_path / "m")
    assert "lstopo --of v2xml" in res.stderr
    # the same machine in format 2.0 maps
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", old, "--out", tmp_path / "m2")
    assert res.returncode == 0, res.stderr
    assert "2 package(s) x 2 cores" in res.stdout


def test_a_node_whose_packages_differ_is_described_by_its_cores(tmp_path, traffic):
    """hwloc's 16em64t-4s2c2t-offlines: 4 packages of 2, 1, 1 and 2 cores (offline cores) were
    described as '4 package(s) x 1 cores' of a node of 6."""
    _lstopo_major()
    x = tmp_path / "offline.xml"
    x.write_text(lstopo_xml("2.0", [2, 1, 1, 2]))
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", x, "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "6 cores in 4 package(s) (2+1+1+2)" in res.stdout and "x 1 cores" not in res.stdout
    assert "12 slots" in res.stdout


def test_an_lstopo_xml_under_a_directory_named_with_an_equals_sign(tmp_path, traffic):
    """/scratch/run=3/node.xml was split as HOSTLIST=SPEC: "node topology '3/node.xml': not a file"."""
    _lstopo_major()
    d = tmp_path / "run=3"
    d.mkdir()
    (d / "node.xml").write_text(lstopo_xml("2.0", [2]))
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", d / "node.xml", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "1 package(s) x 2 cores" in res.stdout
    # and as the SPEC of HOSTLIST=SPEC
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", f"n1={d / 'node.xml'}",
                  "--node-topology", "n2=pack:1 core:2", "--out", tmp_path / "m2")
    assert res.returncode == 0, res.stderr


def test_a_synthetic_description_with_a_tab_is_read(tmp_path, traffic):
    """'pack:2<TAB>core:2' passed rankmap's checks and hwloc refused it: "Invalid argument"."""
    _lstopo_major()
    res = run_cli("map", traffic, "--nodes", "n[1-2]", "--node-topology", "pack:2\tcore:2", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "2 package(s) x 2 cores" in res.stdout


# --------------------------------------------------------------------------- Slurm topology.conf

def test_topology_block_blocks_larger_than_the_base_size_are_read(tmp_path, traffic):
    """topology.conf(5): "Each block must have at least the planning base block size count of
    nodes"; its example (blocks of 32 nodes, BlockSizes=30,120) was refused as "(Slurm refuses
    others too)". Here blocks of 4 nodes and BlockSizes=3,6."""
    _lstopo_major()
    conf = tmp_path / "topology.conf"
    conf.write_text("# Slurm's network topology configuration file for use with the\n"
                    "# topology/block plugin\n"
                    "BlockName=block1 Nodes=n[1-4]\nBlockName=block2 Nodes=n[5-8]\nBlockSizes=3,6\n")
    res = run_cli("map", traffic, "--nodes", "n[1-8]", "--node-topology", "pack:1 core:1",
                  "--network", f"slurm:{conf}", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert "2 block(s), aggregates of 2" in res.stdout
    # a block of fewer nodes than the base size is still refused (Slurm refuses it too)
    conf.write_text("BlockName=block1 Nodes=n[1-4]\nBlockName=block2 Nodes=n[5-6]\nBlockSizes=3,6\n")
    one_error_line(run_cli("map", traffic, "--nodes", "n[1-6]", "--node-topology", "pack:1 core:1",
                           "--network", f"slurm:{conf}", "--out", tmp_path / "m2"),
                   "block block2 has 2 node(s) and BlockSizes=3,6 makes a base block 3 node(s)")


def test_topology_ring_lines_say_rankmap_reads_no_rings(tmp_path, traffic):
    """topology/ring's RingName= lines were "describes no switches ... is a topology plugin
    configured?"."""
    conf = tmp_path / "topology.conf"
    conf.write_text("# topology/ring plugin\nRingName=ring0 Nodes=n[1-4]\nRingName=ring1 Nodes=n[5-8]\n")
    one_error_line(run_cli("map", traffic, "--nodes", "n[1-4]", "--node-topology", "pack:1 core:1",
                           "--network", f"slurm:{conf}", "--out", tmp_path / "m"),
                   "topology.conf:2: RingName= lines (Slurm's topology/ring plugin)")


# --------------------------------------------------------------------------- traffic files

MM = "%%MatrixMarket matrix "


@pytest.mark.parametrize("text, fragment", [
    # scipy mirrored each entry negated: "negative traffic -5" of a file without a negative number
    (MM + "coordinate real skew-symmetric\n3 3 2\n2 1 5\n3 2 4\n", "a skew-symmetric MatrixMarket matrix"),
    # "2 field(s); a real coordinate entry has 3"
    ("%%MatrixMarket vector coordinate real general\n3 2\n1 5\n2 4\n", "a MatrixMarket vector, not a matrix"),
    # scipy: "Too many lines in file (file too long)" of a file holding exactly its entries
    (MM + "coordinate real general\n3 3 2\n1 2 5\n2 3 4\n% end of matrix\n",
     "t.mtx:5: a % comment among the entries"),
    # scipy: "Invalid integer value"
    (MM + "coordinate integer general\n%comment\n3 3 2\n1 2 5\n% rank 1\n2 3 4\n", "t.mtx:5: a % comment among"),
])
def test_matrix_market_files_rankmap_cannot_take_say_why(tmp_path, text, fragment):
    (tmp_path / "t.mtx").write_text(text)
    one_error_line(run_cli("convert", tmp_path / "t.mtx", tmp_path / "o.csv"), fragment)


def test_matrix_market_comments_before_the_size_line_still_read(tmp_path):
    (tmp_path / "t.mtx").write_text(MM + "coordinate integer general\r\n% from a tool\r\n%\r\n3 3 2\r\n1 2 5\r\n"
                                    "2 3 4\r\n\r\n")
    t = rankmap.read_traffic(tmp_path / "t.mtx")
    assert t.bytes.toarray().tolist() == [[0, 5, 0], [0, 0, 4], [0, 0, 0]]


@pytest.mark.parametrize("first", ["", "Unnamed: 0"])
def test_a_csv_with_pandas_row_index_says_so(tmp_path, first):
    """DataFrame.to_csv() writes its index first, under no name: "column ''" said nothing of it."""
    (tmp_path / "t.csv").write_text(f"{first},src,dst,bytes\n0,0,1,100\n1,1,0,50\n")
    one_error_line(run_cli("convert", tmp_path / "t.csv", tmp_path / "o.mtx"), "index=False")


# --------------------------------------------------------------------------- SimGrid's replay examples

def _write(tmp_path, files: dict, index: list) -> object:
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    (tmp_path / "split_traces").write_text("".join(f"{tmp_path / n}\n" for n in index))
    return tmp_path / "split_traces"


def test_simgrid_example_traces_are_read_as_simgrid_replays_them(tmp_path):
    """SimGrid's examples/smpi/replay style: rank files actions0.txt, actions1.txt (was "not a
    SimGrid per-rank trace file"), sizes written 1e6 (was "cannot read the send line"), no
    datatype field (was "a datatype id SimGrid does not define ... SimGrid cannot replay such
    lines", which made `rankmap replay` refuse the trace)."""
    idx = _write(tmp_path, {
        "actions0.txt": "0 init\n0 send 1 0 1e6\n0 recv 1 1 1e6\n0 send 1 2 1000\n0 finalize\n",
        "actions1.txt": "1 init\n1 recv 0 0 1e6\n1 send 0 1 1e6\n1 recv 0 2 1000\n1 finalize\n"},
        ["actions0.txt", "actions1.txt"])
    t = rankmap.read_traffic(idx, "smpi")
    assert t.bytes.toarray().tolist() == [[0, 1001000], [1000000, 0]]
    assert not any(NOT_REPLAYABLE in n for n in t.notes), t.notes
    # the same files listed in the wrong order: the rank prefixes say so
    (tmp_path / "rev").write_text(f"{tmp_path / 'actions1.txt'}\n{tmp_path / 'actions0.txt'}\n")
    one_error_line(run_cli("convert", tmp_path / "rev", tmp_path / "o.csv", "--from", "smpi"),
                   "a line of rank 1 in the file of rank 0")
    # a size that is no whole number is still refused
    (tmp_path / "actions0.txt").write_text("0 init\n0 send 1 0 1.5\n0 finalize\n")
    one_error_line(run_cli("convert", idx, tmp_path / "o.csv", "--from", "smpi"), "cannot read the send line")


def test_simgrid_init_with_an_argument_counts_doubles_and_fields_go_by_position(tmp_path):
    """`init 1` makes SimGrid's default datatype MPI_DOUBLE (MPE's convention): counts without a
    datatype are 8 bytes each (they were 1); `bcast 100 1` is a bcast from root 1 of the
    default type (the root was taken for the datatype and the root for 0)."""
    lines = {r: f"{r} init 1\n{r} bcast 100 1\n{r} reduce 5e1 1e6 2\n{r} finalize\n" for r in range(3)}
    files = {f"p{r}.txt": text for r, text in lines.items()}
    idx = _write(tmp_path, files, [f"p{r}.txt" for r in range(3)])
    t = rankmap.read_traffic(idx, "smpi", collectives="binomial")
    b = t.bytes.toarray()
    # binomial bcast from root 1 of 800 bytes: 1 -> 2, 1 -> 0; reduce to root 2 of 400 bytes: 0 -> 2, 1 -> 2
    assert b[1, 0] == 800 and b[1, 2] == 800 + 400 and b[0, 2] == 400, b
    assert b[0, 1] == 0 and b[2, 0] == 0 and b[2, 1] == 0, b
    assert not any(NOT_REPLAYABLE in n for n in t.notes), t.notes


def test_a_shared_trace_of_every_rank_in_one_file_says_how_to_split_it(tmp_path):
    """SimGrid's one_trace: an index naming one file that holds every rank's lines."""
    idx = _write(tmp_path, {"actions.txt": "0 init\n1 init\n0 send 1 0 100\n1 recv 0 0 100\n0 finalize\n"
                                           "1 finalize\n"}, ["actions.txt"])
    one_error_line(run_cli("convert", idx, tmp_path / "o.csv", "--from", "smpi"), "(a shared trace)?")


def test_smpi_traces_as_smpirun_writes_them_still_read(tmp_path):
    from conftest import ti_trace
    trace = ti_trace(tmp_path, [["send 1 0 100 2", "bcast 8 0 2", "recv 1 0 100 2"],
                                ["recv 0 0 100 2", "bcast 8 0 2", "send 0 0 100 2"]])
    t = rankmap.read_traffic(trace, "smpi", collectives="binomial")
    w = DATATYPE_SIZE[2]
    assert np.allclose(t.bytes.toarray(), [[0, 100 * w + 8 * w], [100 * w, 0]])
    assert t.notes == [], t.notes


@pytest.mark.parametrize("init, each", [("init", 1), ("init 1", 8)])
def test_the_critical_path_reads_sizes_without_a_datatype_as_the_traffic_reader_does(tmp_path, init, each):
    """The critical-path predictor's own reading of a trace (mapper/critpath.read_schedule) took a
    line without its datatype field for 8-byte elements whatever the init line said, where the
    traffic reader (and SimGrid) take 1 byte, or 8 after `init ARG`: its sizes now agree."""
    from rankmap.mapper.critpath import read_schedule
    files = {"p0.txt": f"0 {init}\n0 send 1 0 100\n0 bcast 10\n0 finalize\n",
             "p1.txt": f"1 {init}\n1 recv 0 0 100\n1 bcast 10\n1 finalize\n"}
    idx = _write(tmp_path, files, ["p0.txt", "p1.txt"])
    sched = read_schedule(idx)
    assert sched is not None
    sends = [a for a in sched.ranks[0] if a[0] == "send"]
    assert sends and sends[0][3] == 100 * each, sched.ranks[0]
    t = rankmap.read_traffic(idx, "smpi", collectives="binomial")
    assert t.bytes.toarray()[0, 1] == 100 * each + 10 * each
