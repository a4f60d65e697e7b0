"""Property-based tests (hypothesis) of every reader and option parser (issue 11): random and
mutated inputs give either a correct result or one clear UserError line; never another
exception, a NaN, an infinity or a negative amount of traffic. Bounded and derandomized, so
that a run is quick and the same on every machine."""
from __future__ import annotations

import io
import json
import struct
import tempfile
import zlib
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import run_cli
from rankmap.profiler import runfile, validate
from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import read_traffic

FAST = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                suppress_health_check=list(HealthCheck))
SLOW = settings(FAST, max_examples=15)       # each example starts hwloc or the whole CLI


@contextmanager
def scratch():
    with tempfile.TemporaryDirectory(prefix="rankmap-props-") as d:
        yield Path(d)


def clean(fn, *args, **kw):
    """fn(...) -> its result, or None after a UserError of one line; anything else fails."""
    try:
        return fn(*args, **kw)
    except UserError as e:
        msg = str(e)
        assert msg.strip() and "\n" not in msg, repr(msg)
        return None


def valid_traffic(t) -> None:
    m = t.bytes
    assert m.shape[0] == m.shape[1] >= 1
    assert np.all(np.isfinite(m.data)) and np.all(m.data >= 0) and np.all(m.data <= validate.MAX_PAIR_BYTES)


# --------------------------------------------------------------------------- tokens and text

TOKENS = st.one_of(
    st.integers(-10, 10).map(str), st.integers(-2 ** 70, 2 ** 70).map(str),
    st.sampled_from(["nan", "NaN", "inf", "-inf", "1e308", "1e-300", "1e10", "0x10", "", " ", "1.5", "+3", "--1",
                     "3:", "rank 2:", "x", "é", "\t", "1,2", '"7"', "#", "%", "src", "dst", "bytes", "count"]),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6))


def lines_of(sep: str, min_fields=0, max_fields=6):
    return st.lists(st.lists(TOKENS, min_size=min_fields, max_size=max_fields).map(sep.join), max_size=12)


def text_file(head: str = ""):
    return st.one_of(lines_of(","), lines_of(" "), lines_of("\t"), lines_of(";")).map(
        lambda ls: head + "\n".join(ls) + "\n")


def one_token_changed(rows):
    """Valid rows (lists of fields) with one field, anywhere, replaced by any token."""
    def change(t):
        rs, i, j, tok = t
        rs = [list(r) for r in rs]
        r = rs[i % len(rs)]
        if r:
            r[j % len(r)] = tok
        return rs
    return st.tuples(rows, st.integers(0, 10 ** 6), st.integers(0, 10 ** 6), TOKENS).map(change)


# --------------------------------------------------------------------------- traffic readers

VALID_ROWS = st.lists(st.lists(st.integers(0, 12).map(str), min_size=4, max_size=4), min_size=1, max_size=6)


@pytest.mark.parametrize("col", range(5))
@settings(FAST, max_examples=30)
@given(VALID_ROWS, TOKENS, st.sampled_from(["", "src,dst,bytes,count\n", "# c\nsrc,dst,bytes,count\n"]))
def test_csv_and_mpip_field_mutations(col, rows, tok, head):
    """Valid rows, then one whose field `col` is any token (col 4: a fifth field)."""
    bad = ["3", "4", "5", "1"]
    if col < 4:
        bad[col] = tok
    else:
        bad.append(tok)
    with scratch() as d:
        f = d / "t.csv"
        f.write_text(head + "".join(",".join(r) + "\n" for r in rows + [bad]))
        for fmt in ("csv", "mpip"):
            t = clean(read_traffic, f, fmt)
            if t is not None:
                valid_traffic(t)


@FAST
@given(text_file("src,dst,bytes\n") | text_file())
def test_csv_and_mpip_readers(text):
    with scratch() as d:
        f = d / "t.csv"
        f.write_text(text)
        for fmt in ("auto", "csv", "mpip"):
            t = clean(read_traffic, f, fmt)
            if t is not None:
                valid_traffic(t)


@FAST
@given(st.lists(st.tuples(st.integers(0, 20), st.integers(0, 20), st.integers(0, 10 ** 12)), min_size=1,
                max_size=30),
       st.sampled_from(["", "# run 7\n", "\ufeff"]), st.sampled_from(["\n", "\r\n"]), st.sampled_from([",", " , "]))
def test_csv_reader_is_exact(rows, head, eol, sep):
    """A valid CSV in any documented layout reads back as exactly its sums per pair."""
    text = head + f"src{sep}dst{sep}bytes" + eol + "".join(f"{s}{sep}{d}{sep}{b}{eol}" for s, d, b in rows)
    n = max(max(s, d) for s, d, _ in rows) + 1
    want = np.zeros((n, n))
    for s, dst, b in rows:
        want[s, dst] += b
    with scratch() as d:
        f = d / "t.csv"
        f.write_bytes(text.encode())
        t = read_traffic(f, "csv")
        assert t.size == n and np.array_equal(t.bytes.toarray(), want)


SQUARE = st.integers(1, 5).flatmap(lambda n: st.lists(st.lists(st.integers(0, 9).map(str), min_size=n, max_size=n),
                                                      min_size=n, max_size=n))


@FAST
@given(one_token_changed(SQUARE) | st.integers(1, 4).flatmap(
    lambda n: st.lists(st.lists(TOKENS, min_size=n, max_size=n), min_size=n, max_size=n)))
def test_treematch_reader(rows):
    with scratch() as d:
        f = d / "m.dat"
        f.write_text("\n".join(" ".join(r) for r in rows) + "\n")
        t = clean(read_traffic, f, "treematch")
        if t is not None:
            valid_traffic(t)
            assert t.size == len(rows)


@FAST
@given(one_token_changed(SQUARE))
def test_amfch_block_mutations(rows):
    with scratch() as d:
        f = d / "log.txt"
        f.write_text("run\namfch_statistics:\n" + "\n".join(f"{i}: " + " ".join(r) for i, r in enumerate(rows))
                     + "\nbye\n")
        t = clean(read_traffic, f, "amfch")
        if t is not None:
            valid_traffic(t)


@FAST
@given(text_file("amfch_statistics:\n"), text_file())
def test_amfch_reader(a, b):
    with scratch() as d:
        f = d / "log.txt"
        f.write_text(b + a)
        t = clean(read_traffic, f, "amfch")
        if t is not None:
            valid_traffic(t)


OMPI_ROWS = st.lists(st.tuples(st.sampled_from(["E", "I"]), st.integers(0, 3), st.integers(0, 3),
                               st.integers(0, 10 ** 6), st.integers(0, 99))
                     .map(lambda r: [r[0], str(r[1]), str(r[2]), f"{r[3]} bytes", f"{r[4]} msgs sent"]),
                     min_size=1, max_size=5)


@FAST
@given(one_token_changed(OMPI_ROWS), st.lists(st.sampled_from(["E", "I", "#", ""]), max_size=2))
def test_ompi_monitoring_reader(rows, extra):
    with scratch() as d:
        (d / "mon.0.prof").write_text("\n".join(["\t".join(r) for r in rows] + extra) + "\n")
        (d / "mon.1.prof").write_text("E\t1\t0\t5 bytes\t1 msgs sent\n")
        t = clean(read_traffic, d / "mon", "ompi")
        if t is not None:
            valid_traffic(t)


@FAST
@given(st.sampled_from(["coordinate real general", "coordinate integer general", "coordinate pattern general",
                        "coordinate complex general", "array real general", "coordinate real symmetric", "nonsense"]),
       st.lists(TOKENS, min_size=0, max_size=3), st.lists(st.lists(TOKENS, max_size=4).map(" ".join), max_size=6))
def test_matrix_market_reader(kind, size, entries):
    with scratch() as d:
        f = d / "m.mtx"
        f.write_text(f"%%MatrixMarket matrix {kind}\n" + " ".join(size) + "\n" + "\n".join(entries) + "\n")
        t = clean(read_traffic, f, "mtx")
        if t is not None:
            valid_traffic(t)


@FAST
@given(st.one_of(
    st.binary(max_size=200),
    st.tuples(st.sampled_from(["f8", "i4", "u1", "c16", "U2", "b1", "f2"]),
              st.lists(st.integers(0, 4), min_size=0, max_size=3)).map(lambda a: ("dense",) + a),
    st.tuples(st.integers(1, 5), st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=5))
    .map(lambda a: ("sparse",) + a)))
def test_npz_reader(what):
    with scratch() as d:
        f = d / "m.npz"
        if isinstance(what, bytes):
            f.write_bytes(what)
        elif what[0] == "dense":
            arr = np.zeros(tuple(what[2]), dtype=what[1]) if what[1] != "U2" else np.full(tuple(what[2]), "ab")
            buf = io.BytesIO()
            np.savez(buf, a=arr)
            f.write_bytes(buf.getvalue())
        else:
            n, vals = what[1], what[2]
            m = sp.coo_matrix((np.array(vals, dtype=float), (np.arange(len(vals)) % n, (np.arange(len(vals)) + 1) % n)),
                              shape=(n, n))
            buf = io.BytesIO()
            sp.save_npz(buf, m.tocsr())
            f.write_bytes(buf.getvalue())
        t = clean(read_traffic, f, "npz")
        if t is not None:
            valid_traffic(t)


RING_GRAPH = [["4", "4", "001"], ["2", "5", "4", "5"], ["1", "5", "3", "5"], ["2", "5", "4", "5"], ["3", "5", "1", "5"]]


@FAST
@given(one_token_changed(st.just(RING_GRAPH)) | st.tuples(st.lists(TOKENS, max_size=4),
                                                         st.lists(st.lists(TOKENS, max_size=6), max_size=5))
       .map(lambda t: [t[0]] + t[1]))
def test_metis_reader(rows):
    with scratch() as d:
        f = d / "g.graph"
        f.write_text("\n".join(" ".join(r) for r in rows) + "\n")
        t = clean(read_traffic, f, "metis")
        if t is not None:
            valid_traffic(t)


# --------------------------------------------------------------------------- the profiler's run file

HEADER = runfile.dtype("rmp_block_header")
END = runfile.dtype("rmp_end_fixed")
P2P = runfile.dtype("rmp_p2p_row")


def _section(kind: int, item: int, data: bytes) -> bytes:
    return struct.pack("<IIQ", kind, item, len(data)) + data + b"\0" * (-len(data) % 8)


def run_block(rank: int, size: int, seq: int = 1, status: int = 2) -> bytes:
    """One valid block of the run file (docs/formats.md), built from profiler/runfile.py."""
    meta = json.dumps({"hostname": f"n{rank // 2}", "affinity_init": str(rank), "world_rank": rank}).encode()
    end = np.zeros(1, END)
    end["aff_words"] = 1
    p2p = np.zeros(1, P2P)
    p2p["src"], p2p["dst"], p2p["bytes"], p2p["msgs"] = rank, (rank + 1) % size, 1000 * (rank + 1), 1
    payload = (_section(1, 1, meta) + _section(2, 1, end.tobytes() + struct.pack("<Q", 1 << rank))
               + _section(3, 24, p2p.tobytes()) + _section(4, 4, b"") + _section(5, 32, b""))
    h = np.zeros(1, HEADER)
    h["magic"], h["version"], h["header_size"], h["payload_size"] = runfile.MAGIC, runfile.VERSION, 64, len(payload)
    h["crc"], h["rank"], h["size"], h["status"], h["seq"], h["pid"] = zlib.crc32(payload), rank, size, status, seq, \
        100 + rank
    h["nsections"] = 5
    return h.tobytes() + payload


RUN = b"".join(run_block(r, 4) for r in range(4))


def test_the_synthetic_run_file_is_valid():
    from rankmap.profiler.rundir import read_run
    with scratch() as d:
        (d / "ranks.x.rmp").write_bytes(RUN)
        prof = read_run(d)
        assert prof.complete and prof.size == 4 and prof.bytes.sum() == 10000


@FAST
@given(st.lists(st.tuples(st.integers(0, len(RUN) - 1), st.integers(0, 255)), max_size=6),
       st.one_of(st.none(), st.integers(0, len(RUN))), st.binary(max_size=40), st.booleans())
def test_run_file_reader(flips, cut, junk, junk_first):
    """Damaged run files (bytes flipped, cut short, junk before or after) are read as partial
    runs with their reasons, or refused in one line."""
    from rankmap.profiler.rundir import read_run
    data = bytearray(RUN)
    for off, v in flips:
        data[off] = v
    data = bytes(data[:cut] if cut is not None else data)
    data = junk + data if junk_first else data + junk
    with scratch() as d:
        (d / "ranks.x.rmp").write_bytes(data)
        prof = clean(read_run, d)
        if prof is not None:
            assert prof.complete or prof.partial_reasons()
            assert prof.bytes.shape == (prof.size, prof.size)
            t = clean(read_traffic, d, "profile", allow_partial=True)
            if t is not None:
                valid_traffic(t)


@FAST
@given(st.one_of(st.binary(max_size=60), st.text(max_size=60),
                 st.dictionaries(st.sampled_from(["run_id", "command", "exit_code"]),
                                 st.one_of(st.none(), st.integers(), st.text(max_size=12), st.lists(st.integers())))
                 .map(json.dumps)))
def test_run_json_reader(run_json):
    from rankmap.profiler.rundir import read_run
    with scratch() as d:
        (d / "ranks.x.rmp").write_bytes(RUN)
        (d / "run.json").write_bytes(run_json if isinstance(run_json, bytes) else run_json.encode())
        clean(read_run, d)


# --------------------------------------------------------------------------- SMPI traces

SMPI_LINES = [["0", "send", "1", "0", "1000", "0"], ["0", "isend", "1", "0", "8", "2"],
              ["0", "sendRecv", "100", "1", "100", "1", "0", "0"], ["0", "bcast", "100", "0", "0"],
              ["0", "reduce", "10", "10", "0", "0"], ["0", "allreduce", "100", "100", "0"],
              ["0", "alltoallv", "2", "1", "1", "2", "1", "1", "0", "0"], ["0", "allgatherv", "2", "1", "1", "0", "0"],
              ["0", "reducescatter", "1", "1", "10", "0"], ["0", "gatherv", "2", "1", "1", "0", "0", "0"]]


@FAST
@given(one_token_changed(st.lists(st.sampled_from(SMPI_LINES), min_size=1, max_size=6)),
       st.lists(st.lists(TOKENS, max_size=6).map(lambda t: "1 " + " ".join(t)), max_size=3))
def test_smpi_trace_reader(lines1, lines2):
    with scratch() as d:
        (d / "t_files").mkdir()
        (d / "t_files" / "rank-1.txt").write_text("0 init\n" + "".join(" ".join(r) + "\n" for r in lines1) + "0 finalize\n")
        (d / "t_files" / "rank-2.txt").write_text("1 init\n" + "".join(ln + "\n" for ln in lines2) + "1 finalize\n")
        (d / "trace.ti").write_text("t_files/rank-1.txt\nt_files/rank-2.txt\n")
        t = clean(read_traffic, d / "trace.ti", "smpi")
        if t is not None:
            valid_traffic(t)


# --------------------------------------------------------------------------- mappings, coordinates

BINDING = st.integers(1, 5).map(lambda n: [[str(r), f"n{r % 2 + 1}", str(r // 2)] for r in range(n)])


@FAST
@given(one_token_changed(BINDING) | st.lists(st.lists(TOKENS, max_size=4), min_size=1, max_size=6),
       st.booleans())
def test_binding_files_and_hostfiles(rows, hostfile):
    from rankmap.mapper.writers import read_placement
    with scratch() as d:
        f = d / "b.txt"
        f.write_text("\n".join(" ".join(r[1:2] if hostfile else r) for r in rows) + "\n")
        pl = clean(read_placement, f)
        if pl is not None:
            assert pl.hosts and all(isinstance(h, str) and h for h in pl.hosts)
            assert pl.cores is None or all(all(c >= 0 for c in cs) for cs in pl.cores)


@FAST
@given(st.lists(st.lists(TOKENS, max_size=3).map(" ".join).map(lambda s: "n1 " + s), max_size=3),
       st.sampled_from(["2", "2x2", "3"]))
def test_coordinate_files(lines, dims):
    from rankmap.mapper.network import torus_from
    with scratch() as d:
        f = d / "c.txt"
        f.write_text("\n".join(lines + ["n2 1" + (" 0" if "x" in dims else "")]) + "\n")
        net = clean(torus_from, dims, ["n1", "n2"], str(f))
        if net is not None:
            assert net.coords.shape == (2, len(net.dims)) and (net.coords >= 0).all()


# --------------------------------------------------------------------------- JSON files

JSON = st.recursive(st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | st.floats() | st.text(max_size=8),
                    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                    max_leaves=12)
NUMBER = st.one_of(st.integers(-5, 10 ** 6), st.floats(allow_nan=False), st.text(max_size=4), st.none(), st.booleans())


@FAST
@given(st.one_of(JSON, st.dictionaries(st.sampled_from(["node", "package", "core", "numa", "hop"]), NUMBER),
                 st.dictionaries(st.just("level_costs"),
                                 st.dictionaries(st.sampled_from(["node", "package", "core", "hop"]), NUMBER)),
                 st.lists(NUMBER, max_size=4)))
def test_level_cost_files(obj):
    from rankmap.mapper.machine import parse_hop_cost, parse_level_costs
    with scratch() as d:
        f = d / "levels.json"
        f.write_text(json.dumps(obj))
        costs = clean(parse_level_costs, f"@{f}", ["node", "package", "core"])
        if costs is not None:
            assert len(costs) == 3 and np.all(np.isfinite(costs)) and np.all(costs >= 0)
            hop = clean(parse_hop_cost, None, f"@{f}", costs[0])
            assert hop is None or (np.isfinite(hop) and hop >= 0)


GOOD_MACHINE = {"hosts": ["n1", "n2"], "node_topology": ["pack:2 core:2"], "torus": None, "mesh": None,
                "coords": None, "switch_tree": None, "level_costs": None, "hop_cost": None, "ranks_per_node": None,
                "oversubscribe": 1}


@FAST
@given(st.one_of(JSON, st.dictionaries(st.sampled_from(sorted(GOOD_MACHINE)), JSON, max_size=4)
                 .map(lambda ch: dict(GOOD_MACHINE, **ch))))
def test_machine_descriptions(obj):
    from rankmap.mapper import spec as mspec
    with scratch() as d:
        f = d / "machine.json"
        f.write_text(json.dumps(obj))
        spec = clean(mspec.load, f)
        if spec is not None:
            m = clean(mspec.build, spec)
            if m is not None:
                assert m.nslots >= 1 and np.all(np.isfinite(m.acc))


@FAST
@given(st.one_of(JSON, st.fixed_dictionaries({
    "latency_us": st.dictionaries(st.sampled_from(["same socket", "other socket", "neighbour node"]), NUMBER),
    "bandwidth_GBps": st.dictionaries(st.sampled_from(["same socket", "other socket", "neighbour node"]), NUMBER)})))
def test_probe_files(obj):
    from rankmap.mapper.predict import Network
    with scratch() as d:
        f = d / "probe.json"
        f.write_text(json.dumps(obj))
        net = clean(Network.from_probe, f)
        if net is not None:
            assert all(np.isfinite(v) and v >= 0 for v in (net.link_bw, net.link_lat, net.loop_bw, net.loop_lat))
            assert net.link_bw > 0 and net.loop_bw > 0


@FAST
@given(st.dictionaries(st.sampled_from(["name", "kind", "dims", "nodes", "cores", "node_kinds", "link_bw", "link_lat",
                                        "loopback_bw", "loopback_lat", "nic_bw", "core_speed", "network_scale",
                                        "prefix", "color"]), JSON, max_size=4))
def test_platform_sections(changes):
    from rankmap.slurm.platform import PRESETS, Platform, machine_spec
    sg = dict(machine_spec(PRESETS["desmos"])["simgrid"], **changes)
    p = clean(Platform.from_section, sg, "machine.json")
    if p is not None:
        net = p.network()
        assert all(np.isfinite(v) and v >= 0 for v in (net.link_bw, net.link_lat, net.loop_bw, net.loop_lat))


# --------------------------------------------------------------------------- option parsers

@FAST
@given(st.one_of(st.text(max_size=20), st.lists(st.sampled_from(["n", "[", "]", "1", "-", ",", "9", "0", "x", " ",
                                                                 "/", ".", "txt", "99999"]), max_size=12).map("".join)))
def test_host_lists(text):
    from rankmap.mapper.hostnames import node_list
    with scratch() as d:
        import os
        cwd = os.getcwd()
        os.chdir(d)
        try:
            hosts = clean(node_list, text)
        finally:
            os.chdir(cwd)
    if hosts is not None:
        assert 1 <= len(hosts) <= validate.MAX_NODES and len(set(hosts)) == len(hosts)


@FAST
@given(st.one_of(st.text(max_size=12), st.lists(st.integers(-3, 10 ** 7).map(str), max_size=4).map("x".join)))
def test_dimensions(text):
    from rankmap.mapper.network import parse_dims
    dims = clean(parse_dims, text)
    if dims is not None:
        assert all(d >= 1 for d in dims) and int(np.prod(dims)) <= validate.MAX_NET_POSITIONS


@FAST
@given(st.one_of(st.text(max_size=16), st.lists(NUMBER.map(str), max_size=4).map(",".join)))
def test_level_cost_lists(text):
    from rankmap.mapper.machine import parse_level_costs
    costs = clean(parse_level_costs, text, ["node", "package", "core"])
    if costs is not None:
        assert np.all(np.isfinite(costs)) and np.all(costs >= 0) and np.all(costs <= validate.MAX_COST)


@FAST
@given(st.text(max_size=14))
def test_collective_models(text):
    from rankmap.profiler.collectives import parse_model
    clean(parse_model, text)


@FAST
@given(TOKENS)
def test_number_and_integer_checks(tok):
    v = clean(validate.number, tok, "w", "x", 0.0, 1e6)
    assert v is None or (np.isfinite(v) and 0 <= v <= 1e6)
    i = clean(validate.integer, tok, "w", "x", -5, 10 ** 9)
    assert i is None or -5 <= i <= 10 ** 9


@SLOW
@given(st.lists(st.tuples(st.sampled_from(["pack", "core", "numa", "pu", "l3", "bogus", "Core", ""]),
                          st.sampled_from(["0", "1", "2", "3", "-1", "x", "99999", ""])), min_size=0, max_size=4))
def test_synthetic_topologies(levels):
    from rankmap.mapper import hwtopo
    spec = " ".join(f"{a}:{b}" for a, b in levels)
    t = clean(hwtopo.load, spec)
    if t is not None:
        assert 1 <= t.cores <= validate.MAX_CORES_PER_NODE


OPTIONS = {"--seed": st.one_of(st.integers(-5, 2 ** 40).map(str), TOKENS),
           "--tries": st.one_of(st.integers(-2, 200).map(str), TOKENS),
           "--time-limit": TOKENS, "--oversubscribe": st.one_of(st.integers(-1, 3).map(str), TOKENS),
           "--ranks-per-node": st.one_of(st.integers(-1, 3).map(str), TOKENS),
           "--level-costs": TOKENS, "--hop-cost": TOKENS, "--torus": TOKENS, "--switch-tree": TOKENS}


@SLOW
@given(st.sampled_from(sorted(OPTIONS)).flatmap(lambda o: st.tuples(st.just(o), OPTIONS[o])))
def test_map_options_through_the_cli(opt_value):
    """Any value of a map option: a mapping, or one `rankmap: error:` line naming the option."""
    opt, value = opt_value
    data = Path(__file__).parent / "data" / "bad-inputs" / "ring4.csv"
    with scratch() as d:
        res = run_cli("map", data, "--nodes", "n[1-2]", "--node-topology", "pack:2 core:1", "--out", d / "m", opt,
                      value, cwd=d)
        if res.returncode == 0:
            assert (d / "m" / "hostfile").read_text().count("\n") == 4
        else:
            lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
            assert len(lines) == 1 and lines[0].startswith("rankmap: error:"), res.stderr
            assert "internal error" not in lines[0], lines[0]


@pytest.fixture(scope="module")
def ring4_mapping(tmp_path_factory):
    d = tmp_path_factory.mktemp("ring4") / "m"
    res = run_cli("map", Path(__file__).parent / "data" / "bad-inputs" / "ring4.csv", "--nodes", "n[1-2]",
                  "--node-topology", "pack:2 core:1", "--out", d)
    assert res.returncode == 0, res.stderr
    return d


@SLOW
@given(opt=st.sampled_from(["--link-bw", "--link-lat", "--loopback-bw", "--loopback-lat", "--nic-bw"]), value=TOKENS)
def test_predict_speeds_through_the_cli(ring4_mapping, opt, value):
    data = Path(__file__).parent / "data" / "bad-inputs"
    speeds = {"--link-bw": "5", "--link-lat": "1", "--loopback-bw": "10", "--loopback-lat": "0.2"}
    speeds[opt] = value
    res = run_cli("predict", data / "ring4.csv", ring4_mapping, *[x for kv in speeds.items() for x in kv], "--json")
    if res.returncode == 0:
        est = json.loads(res.stdout)["estimates"]
        assert all(np.isfinite(e["seconds"]) and e["seconds"] >= 0 for e in est.values())
    else:
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and opt in lines[0], res.stderr


def test_hypothesis_is_in_the_test_extra():
    import tomllib
    root = Path(__file__).resolve().parents[1]
    test_extra = tomllib.loads((root / "pyproject.toml").read_text())["project"]["optional-dependencies"]["test"]
    assert any(d.startswith("hypothesis") for d in test_extra)


pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")
