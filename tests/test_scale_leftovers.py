"""Scale leftovers: a torus of millions of positions holding a few nodes costs what its nodes
and their links cost (network.CompactLinks), and --time-limit caps predict's estimates of the
candidate mappings (solve.choose_predicted's deadline) in whole-cluster mode and on the given
nodes alike."""
import json

import numpy as np
import pytest

import rankmap
from rankmap.mapper import linkload, metrics
from rankmap.mapper.network import CompactLinks, Torus
from rankmap.mapper.predict import SimGridTorus

from conftest import run_cli


def _random_torus(rng, cls=Torus):
    nd = int(rng.integers(1, 4))
    dims = tuple(int(x) for x in rng.integers(1, 9, nd))
    wrap = tuple(bool(x) for x in rng.integers(0, 2, nd))
    P = int(np.prod(dims))
    n = int(rng.integers(1, min(P, 7) + 1))
    flat = rng.choice(P, n, replace=False)
    coords = np.stack(np.unravel_index(flat, dims[::-1])[::-1], axis=1).astype(np.int64)
    return cls(dims=dims, wrap=wrap, coords=coords)


@pytest.mark.parametrize("cls", [Torus, SimGridTorus])
def test_compact_links_are_the_dense_links_in_runs(cls):
    """Every quantity read from the loads (busiest link, links used, sum, sum of squares, per
    group) is the same over the runs with their multiplicities as over every link; each run's
    routes are the routes through any of its links."""
    rng = np.random.default_rng(7)
    for _ in range(120):
        net = _random_torus(rng, cls)
        c = CompactLinks(net)
        n = len(net.coords)
        m = int(rng.integers(1, 16))
        na, nb = rng.integers(0, n, m), rng.integers(0, n, m)
        w = rng.random(m) * 1e6
        dense, comp = net.link_loads(na, nb, w).ravel(), c.loads(net, na, nb, w)
        assert dense.max() == pytest.approx(comp.max())
        assert int((dense > 0).sum()) == int(c.mult[comp > 0].sum())
        assert dense.sum() == pytest.approx((comp * c.mult).sum())
        assert (dense ** 2).sum() == pytest.approx((comp ** 2 * c.mult).sum())
        g = rng.integers(0, 3, m)
        dg, cg = net.link_loads(na, nb, w, g, 3).reshape(3, -1), c.loads(net, na, nb, w, g, 3)
        assert np.allclose(dg.max(axis=1), cg.max(axis=1)) and np.allclose(dg.sum(axis=1), (cg * c.mult).sum(axis=1))
        nd = len(net.dims)
        for link in range(c.nlinks):
            hit = c.crosses(net, na, nb, link)
            assert comp[link] == pytest.approx(w[hit].sum())
            if hit.any():        # a link of the run, on the line of a route through it
                d = int(np.searchsorted(c.off, link, side="right")) - 1
                nbp = len(c.bps[d])
                _, rest = divmod(link - c.off[d], 2 * nbp)
                k, direction = divmod(rest, 2)
                i = int(np.flatnonzero(hit)[0])
                x = net.coords[nb[i]].copy()
                x[d + 1:] = net.coords[na[i], d + 1:]
                x[d] = c.bps[d][k]
                assert np.array_equal(net.crosses(na, nb, (int(net.pos(x[None])[0]) * nd + d) * 2 + direction), hit)


def test_through_without_an_array_per_position():
    """Torus.through (predict's router volumes) as when it looked nodes up in an array over
    every position."""
    rng = np.random.default_rng(3)
    for _ in range(60):
        net = _random_torus(rng)
        n = len(net.coords)
        na, nb, w = rng.integers(0, n, 12), rng.integers(0, n, 12), rng.random(12)
        node_at = np.full(net.positions, -1)
        node_at[net.pos(net.coords)] = np.arange(n)
        want = np.zeros(n)
        for idx, p, _, _ in net.walk(na, nb):
            at = node_at[p]
            np.add.at(want, at[at >= 0], w[idx][at >= 0])
        np.add.at(want, nb, w)
        assert np.array_equal(net.through(na, nb, w, n), want)


def _ring8(path):
    order = [0, 3, 6, 1, 4, 7, 2, 5]          # a ring the block order does not follow
    rows = [f"{order[i]},{order[(i + 1) % 8]},1000000\n{order[(i + 1) % 8]},{order[i]},1000000\n" for i in range(8)]
    path.write_text("src,dst,bytes\n" + "".join(rows))
    return path


@pytest.mark.parametrize("net", [["--torus", "2048x2048"], ["--mesh", "2048x2048"],
                                 ["--network", "torus:24x23x24x2x3x2:wrap=111010"]])
def test_few_nodes_on_a_huge_torus(tmp_path, net):
    """8 nodes in a row (x fastest) of a 2048 x 2048 torus, a mesh, a 6-D Tofu-like torus: the
    routes between them are those of a line of 8 nodes, so the mapping and every metric are the
    line's; the link arrays are sized by the nodes."""
    csv = _ring8(tmp_path / "ring8.csv")
    m = rankmap.machine("n[1-8]", "core:1", **{net[0].lstrip("-"): net[1]})
    comp = m.network.compact_links()
    assert comp is not None and comp.nlinks < 2000 < m.network.positions
    assert len(metrics._compact_loads(metrics.Pairs(rankmap.read_traffic(csv).bytes), m,
                                      np.arange(8))[0]) == comp.nlinks
    args = ["--nodes", "n[1-8]", "--node-topology", "core:1", "--seed", "0"]
    for name, extra in (("big", net), ("line", ["--mesh", "8"])):
        res = run_cli("map", csv, *args, *extra, "--out", tmp_path / name)
        assert res.returncode == 0, res.stdout + res.stderr
    big, line = (json.loads((tmp_path / x / "report.json").read_text()) for x in ("big", "line"))
    assert (tmp_path / "big" / "rankfile").read_text() == (tmp_path / "line" / "rankfile").read_text()
    for k in ("sum_com", "max_link_load", "mean_link_load", "links_used", "net_hop_bytes", "dilation_max"):
        for mapping in ("rankmap", "block", "cyclic"):
            assert big["metrics"][mapping][k] == pytest.approx(line["metrics"][mapping][k]), (mapping, k)


def test_compact_metrics_equal_the_dense_ones():
    """metrics.evaluate on a 256 x 256 torus holding 12 scattered nodes (the runs of equal
    load) against the loads per link of the same routes."""
    rng = np.random.default_rng(5)
    m = rankmap.machine("n[1-12]", "core:2", torus="256x256")
    pos = rng.choice(256 * 256, 12, replace=False)
    m.network.coords = np.stack([pos % 256, pos // 256], axis=1).astype(np.int64)
    m.network.__dict__.pop("_compact", None)
    assert m.network.compact_links() is not None
    M = np.zeros((24, 24))
    for i in range(24):
        M[i, rng.choice(24, 3, replace=False)] = rng.integers(1, 10 ** 6, 3)
    np.fill_diagonal(M, 0)
    t = rankmap.traffic(M)
    slot = rng.permutation(24)
    got = metrics.evaluate(t.bytes, m, slot)
    r, c = np.nonzero(M)
    na, nb = m.slot_node[slot[r]], m.slot_node[slot[c]]
    x = na != nb
    dense = m.network.link_loads(na[x], nb[x], M[r, c][x]).ravel()
    used = dense[dense > 0]
    assert got["max_link_load"] == pytest.approx(dense.max())
    assert got["links_used"] == len(used)
    assert got["mean_link_load"] == pytest.approx(used.mean())


def test_link_balancing_on_a_huge_torus_uses_the_runs(tmp_path):
    """linkload.balance on 8 nodes of a 2048 x 2048 torus works on the runs: it returns a
    mapping of the same hop-bytes bound, and a mesh of 8 nodes in a row gives the same."""
    t = rankmap.read_traffic(_ring8(tmp_path / "ring8.csv"))
    slots = {}
    for kw in ({"torus": "2048x2048"}, {"mesh": "8"}):
        m = rankmap.machine("n[1-8]", "core:1", **kw)
        slots[str(kw)] = linkload.balance(t.bytes, m, np.arange(8))[0]
    a, b = slots.values()
    assert np.array_equal(a, b)


def _stencil(path, X=4, Y=4, Z=2):
    idx = lambda x, y, z: x + X * (y + Y * z)     # noqa: E731
    rows = []
    for z in range(Z):
        for y in range(Y):
            for x in range(X):
                for dx, dy, dz in ((1, 0, 0), (0, 1, 0), (0, 0, 1)):
                    j = idx((x + dx) % X, (y + dy) % Y, (z + dz) % Z)
                    i = idx(x, y, z)
                    if i != j:
                        rows += [f"{i},{j},{100000 * (1 + 2 * dx)}\n", f"{j},{i},{100000 * (1 + 2 * dx)}\n"]
    path.write_text("src,dst,bytes\n" + "".join(rows))
    return path


def _probe(path):
    path.write_text(json.dumps({"latency_us": {"same socket": 0.1, "neighbour node": 2},
                                "bandwidth_GBps": {"same socket": 10, "neighbour node": 1}}))
    return path


@pytest.mark.parametrize("mode", ["whole-cluster", "same-allocation"])
def test_network_speeds_predictions_stop_at_the_time_limit(tmp_path, mode):
    """--network-speeds under a --time-limit already spent: the candidates past the cost's
    choice are not estimated (said in the notes), the mapping is still a valid one; without
    the limit every candidate is estimated and no such note is written."""
    csv, probe = _stencil(tmp_path / "st.csv"), _probe(tmp_path / "probe.json")
    machine = ["--nodes", "n[1-32]", "--node-topology", "core:2", "--torus", "4x4x2", "--mode", mode]
    if mode == "same-allocation":
        machine = ["--nodes", "n[1-16]", "--node-topology", "core:2", "--torus", "4x4", "--mode", mode]
    res = run_cli("map", csv, *machine, "--network-speeds", probe, "--seed", "1", "--out", tmp_path / "free")
    assert res.returncode == 0, res.stdout + res.stderr
    free = json.loads((tmp_path / "free" / "report.json").read_text())
    assert not any("unpredicted" in n for n in free["notes"])
    res = run_cli("map", csv, *machine, "--network-speeds", probe, "--seed", "1", "--time-limit", "0.001",
                  "--out", tmp_path / "capped")
    assert res.returncode == 0, res.stdout + res.stderr
    capped = json.loads((tmp_path / "capped" / "report.json").read_text())
    said = [n for n in capped["notes"] if "left" in n and "unpredicted" in n]
    assert said, capped["notes"]
    if mode == "whole-cluster":
        assert len(capped["node_sets"]["estimates"]) < len(free["node_sets"]["estimates"])
        assert capped["node_sets"]["chosen"] == capped["node_sets"]["by_cost"]
    else:
        assert len(capped.get("predicted_comm_seconds", {})) < len(free["predicted_comm_seconds"])
    assert len((tmp_path / "capped" / "rankfile").read_text().splitlines()) >= 32


def test_link_load_panels_of_a_huge_torus_show_where_the_load_is(tmp_path):
    """--plots on 8 nodes of a 2,048 x 2,048 torus drew two 4 M-cell panels per figure
    (3.8 s, 480 MB): above plots.CROP_ABOVE_CELLS the panels show the rows and columns that
    carry bytes; a small torus is drawn whole."""
    from rankmap.mapper import plots
    from rankmap.mapper.metrics import link_loads
    ring = np.roll(np.eye(8), 1, axis=1) * 1e6
    for dims, box in (("2048x2048", (0, 8, 0, 1)), ("4x4", (0, 4, 0, 4))):
        m = rankmap.machine("n[1-8]", "pack:1 core:1", torus=dims)
        loads = link_loads(rankmap.traffic(ring).bytes, m, np.arange(8))
        imgs, got = plots.load_panels(m.network, loads)
        assert got == box and imgs[0].shape == (box[3] - box[2], box[1] - box[0])
        assert sum(float(i.sum()) for i in imgs) == loads.sum()          # every loaded link shown
    res = run_cli("map", _ring8(tmp_path / "ring8.csv"), "--nodes", "n[1-8]", "--node-topology", "pack:1 core:1",
                  "--torus", "2048x2048", "--plots", "--out", tmp_path / "m")
    assert res.returncode == 0, res.stderr
    assert (tmp_path / "m" / "links-rankmap.png").is_file()
