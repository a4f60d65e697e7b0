"""Damaged foreign traffic files, found by mutating valid files of each format (a byte
flipped, a token replaced, a line cut or doubled) and reading them back. Each test was a
defect before its fix: a crash of the interpreter, a traceback, or a different matrix read
without a word. The runs are real (the CLI; a new process where the defect was a crash)."""
from __future__ import annotations

import zipfile

import numpy as np
import pytest
import scipy.sparse as sp

from conftest import one_error_line, run_cli, spawn_cli

MTX = "%%MatrixMarket matrix coordinate real general\n% a comment\n\n2 2 2\n1 2 3\n2 1 {v}"


@pytest.mark.parametrize("value", ["0x10", "12abc", "1e", "1.2.3", "1e5e5", "1-2", "1,5", "nan", "1_000"])
def test_matrix_market_value_with_trailing_characters_is_refused(tmp_path, value):
    """scipy's MatrixMarket reader takes the longest number a token starts with ('12abc' was
    12, '0x10' was 0, '1.2.3' was 1.2), and on such a token at the very end of the file it
    read past its buffer: the interpreter died of SIGSEGV (so: a new process here)."""
    f = tmp_path / "t.mtx"
    f.write_text(MTX.format(v=value))          # no newline at the end: where scipy crashed
    res = spawn_cli("convert", f, tmp_path / "t.csv", timeout=120)
    one_error_line(res, f"t.mtx:6: {value!r} is not a number")
    assert not (tmp_path / "t.csv").exists()


@pytest.mark.parametrize("value, expect", [("7", 7), ("7.", 7), ("-.5e1", None), ("1.5e3", 1500),
                                           ("2E+02", 200), ("7\r\n", 7)])
def test_matrix_market_numbers_that_are_numbers_are_read(tmp_path, value, expect):
    f = tmp_path / "t.mtx"
    f.write_text(MTX.format(v=value))
    res = run_cli("convert", f, tmp_path / "t.csv")
    if expect is None:                          # a negative value: refused as traffic, not as text
        one_error_line(res, "negative")
        return
    assert res.returncode == 0, res.stderr
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert rows[1:] == ["0,1,3", f"1,0,{expect}"]


def test_matrix_market_symmetric_and_array_forms_still_read(tmp_path):
    f = tmp_path / "s.mtx"
    f.write_text("%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 5\n3 2 1.0e2\n")
    one_error_line(run_cli("convert", f, tmp_path / "s.csv"), "s.mtx:4: '1.0e2' is not a whole number")  # was 1
    f.write_text("%%MatrixMarket matrix coordinate integer symmetric\n3 3 2\n2 1 5\n3 2 100\n")
    res = run_cli("convert", f, tmp_path / "s.csv")
    assert res.returncode == 0, res.stderr
    assert sorted((tmp_path / "s.csv").read_text().splitlines()[1:]) == ["0,1,5", "1,0,5", "1,2,100", "2,1,100"]
    a = tmp_path / "a.mtx"
    a.write_text("%%MatrixMarket matrix array real general\n2 2\n0\n4.5e0\n3\n0\n")
    res = run_cli("convert", a, tmp_path / "a.csv")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "a.csv").read_text().splitlines()[1:] == ["0,1,3", "1,0,4.5"]


def test_damaged_npz_member_is_named(tmp_path):
    """A damaged compressed member: zlib's 'invalid distance too far back' escaped as a
    traceback (zipfile checks the CRC only after the data, zlib failed first)."""
    m = sp.random(40, 40, density=0.3, random_state=1, format="csr") * 1e6
    f = tmp_path / "t.npz"
    sp.save_npz(f, m.tocsr(), compressed=True)
    with zipfile.ZipFile(f) as z:
        info = z.getinfo("data.npy")
    data = bytearray(f.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for k in range(start + 10, start + info.compress_size - 10, 7):   # damage the deflate stream
        data[k] ^= 0x5A
    f.write_bytes(bytes(data))
    res = run_cli("convert", f, tmp_path / "t.csv")
    one_error_line(res, "t.npz: not a readable")


def test_npy_with_a_damaged_header_is_named(tmp_path):
    """The header of an .npy is a Python literal: a damaged one raised SyntaxError (or
    tokenize's TokenError) from numpy."""
    f = tmp_path / "t.npy"
    np.save(f, np.ones((3, 3)))
    data = bytearray(f.read_bytes())
    data[data.index(b"{")] = ord("(")
    f.write_bytes(bytes(data))
    res = run_cli("convert", f, tmp_path / "t.csv")
    one_error_line(res, "t.npy: not a readable .npy array")


@pytest.mark.parametrize("text, line", [("0 5 1\n5 0 2\n3\n", 3), ("0 5\n53", 2), ("0 5 1\n5 0\n1 2 0\n", 2)])
def test_rows_of_numbers_that_are_not_square_name_the_row(tmp_path, text, line):
    """A TreeMatch matrix cut short (its last row, a value lost) was taken for an Angara
    log, and its one single-number row for a 1-rank amfch matrix: a 1 x 1 matrix, exit 0."""
    f = tmp_path / "m.txt"
    f.write_text(text)
    res = run_cli("convert", f, tmp_path / "m.csv")
    one_error_line(res, f"m.txt:{line}: row has")


def _trace(tmp_path, ranks: dict) -> object:
    d = tmp_path / "tr"
    (d / "tr.ti_files").mkdir(parents=True)
    for r, text in ranks.items():
        (d / "tr.ti_files" / f"17_rank-{r + 1}.txt").write_text(text)
    (d / "tr.ti").write_text("".join(f"tr.ti_files/17_rank-{r + 1}.txt\n" for r in ranks))
    return d / "tr.ti"


RING = {r: f"{r} init\n{r} compute 0.5\n{r} send {(r + 1) % 3} 0 100 2\n{r} recv {(r - 1) % 3} 0 100 2\n"
           f"{r} allreduce 1 0 1\n{r} finalize\n" for r in range(3)}


def test_smpi_trace_cut_short_is_refused_or_read_as_partial(tmp_path):
    """SMPI ends every rank's file with `<rank> finalize`; a file cut before it (the rank died,
    the run was killed, a copy truncated) was read as if whole: that rank's later sends lost."""
    ranks = dict(RING)
    ranks[1] = "".join(ranks[1].splitlines(True)[:2])          # rank 1 stops before its send
    index = _trace(tmp_path, ranks)
    one_error_line(run_cli("convert", index, tmp_path / "t.csv"), "rank-2.txt: rank 1's trace ends without "
                                                                   "'1 finalize'")
    res = run_cli("map", index, "--nodes", "n1", "--node-topology", "pack:1 core:3", "--out", tmp_path / "m",
                  "--allow-partial", "--collectives", "none")
    assert res.returncode == 0, res.stderr
    assert "partial trace: 1 rank file(s) end without finalize (ranks 1)" in res.stdout
    whole = run_cli("convert", _trace(tmp_path / "w", RING), tmp_path / "w.csv")
    assert whole.returncode == 0, whole.stderr


def test_smpi_trace_line_of_another_rank_is_refused(tmp_path):
    """Every line of rank r's file starts with r; a line of another rank (files spliced or
    mixed up) was counted as rank r's send."""
    ranks = dict(RING)
    ranks[2] = ranks[2].replace("2 compute 0.5\n", "2 compute 0.5\n0 send 1 0 999 2\n")
    one_error_line(run_cli("convert", _trace(tmp_path, ranks), tmp_path / "t.csv"),
                   "rank-3.txt:3: a line of rank 0 in the file of rank 2")


def test_platform_edited_by_hand_is_named(tmp_path):
    """The speeds of a platform directory are in platform*.xml (SimGrid) and in machine.json
    (predict, the mapper's network model). A link made slower in the XML alone was simulated
    by SimGrid and ignored by predict, without a word; the files' sums now say so."""
    plat = tmp_path / "plat"
    assert run_cli("platform", "desmos", "--out", plat).returncode == 0
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 16},{100000 * (i + 1)}\n" for i in range(16)))
    assert run_cli("map", t, "--machine", plat, "--out", tmp_path / "m").returncode == 0
    assert run_cli("predict", t, tmp_path / "m", "--platform", plat).returncode == 0
    xml = plat / "platform.xml"
    xml.write_text(xml.read_text().replace('bw="6GBps"', 'bw="1GBps"'))
    one_error_line(run_cli("predict", t, tmp_path / "m", "--platform", plat),
                   "platform.xml: changed since `rankmap platform` wrote it")
    (plat / "platform.sha256").unlink()             # the documented way to use the files as they are
    assert run_cli("predict", t, tmp_path / "m", "--platform", plat).returncode == 0


def test_platform_sums_damaged_or_partial_are_refused(tmp_path):
    """A sums file that lost the platform.xml line, or was garbled, switched the check off:
    a platform.xml 6000x slower by hand was simulated while predict used machine.json."""
    plat = tmp_path / "plat"
    assert run_cli("platform", "desmos", "--out", plat).returncode == 0
    t = tmp_path / "t.csv"
    t.write_text("src,dst,bytes\n" + "".join(f"{i},{(i + 1) % 16},100000\n" for i in range(16)))
    assert run_cli("map", t, "--machine", plat, "--out", tmp_path / "m").returncode == 0
    xml, sums = plat / "platform.xml", plat / "platform.sha256"
    xml.write_text(xml.read_text().replace('bw="6GBps"', 'bw="0.001GBps"'))
    lines = sums.read_text().splitlines(keepends=True)
    sums.write_text("".join(ln for ln in lines if not ln.rstrip().endswith(" platform.xml")))
    one_error_line(run_cli("predict", t, tmp_path / "m", "--platform", plat),
                   "platform.sha256: does not list platform.xml, so the platform cannot be checked")
    sums.write_text("garbage\n")
    one_error_line(run_cli("predict", t, tmp_path / "m", "--platform", plat),
                   "platform.sha256:1: not a line `rankmap platform` wrote")
