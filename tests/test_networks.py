"""Networks of the machine model, against hand-computed cases: fat trees with
oversubscription, dragonflies (minimal and Valiant routing), N-D tori with mixed
wrap-around (Tofu), the --network option, and machines that keep their nodes' places
when reduced to some of them."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from rankmap.mapper import allocation, machine, metrics, network, solve, spec as mspec
from rankmap.mapper.graph import from_traffic
from rankmap.mapper.refine import Problem
from rankmap.profiler.errors import UserError
from rankmap.profiler.traffic import Traffic


def traffic(entries: dict, n: int) -> Traffic:
    r, c, v = zip(*[(i, j, w) for (i, j), w in entries.items()])
    return Traffic(bytes=sp.csr_matrix((v, (r, c)), shape=(n, n), dtype=float), source="test", format="test")


def hosts(n):
    return [f"n{i}" for i in range(n)]


# --------------------------------------------------------------------------- fat tree

def test_fat_tree_oversubscription_divides_the_uplinks():
    """4 leaves of 4 nodes, 2:1 at the leaves: each leaf has 2 links up. Nodes 0 and 1
    (leaf 0) send 10 B each to leaf 1: 20 B over 2 uplinks = 10 B per link."""
    m = machine.build(hosts(16), ["core:1"], network="fat-tree:4x4:oversub=2")
    assert m.level_names == ["switch0", "node", "package", "core"]
    r = metrics.evaluate(traffic({(0, 4): 10, (1, 5): 10}, 16).bytes, m, np.arange(16))
    assert r["max_global_link_load"] == 10.0           # 20 B on the 2 uplinks of leaf 0
    assert r["max_link_load"] == 10.0                   # and each node's own link
    assert r["net_hop_bytes"] == 20 * 4                 # node-leaf-top-leaf-node
    # without :oversub= a fat tree is not oversubscribed: 4 links up per leaf, 5 B each (it had
    # one link per leaf, 20 B: declaring 2:1 made the network look faster)
    full = machine.build(hosts(16), ["core:1"], network="fat-tree:4x4")
    assert full.network.describe() == "switch tree 4x4 (full bisection)"
    assert metrics.evaluate(traffic({(0, 4): 10, (1, 5): 10}, 16).bytes, full, np.arange(16))[
        "max_global_link_load"] == 5.0
    # --switch-tree is a plain tree of switches: one link up per switch
    plain = machine.build(hosts(16), ["core:1"], switches="4x4")
    assert metrics.evaluate(traffic({(0, 4): 10, (1, 5): 10}, 16).bytes, plain, np.arange(16))[
        "max_global_link_load"] == 20.0


def test_fat_tree_from_simgrid_parameters():
    """SimGrid's 2;8,4;1,2;1,1: leaves of 8 nodes with 2 uplinks (to 2 spines) = 4:1."""
    net = network.from_spec("fat-tree:2;8,4;1,2;1,1", hosts(32))
    assert net.arities == (4, 8)
    assert [float(u) for u in net.uplinks] == [2.0, 1.0]
    t3 = network.switch_tree("2x4x8", 64, "2x4")        # per switch level below the top, top to bottom
    assert [float(u) for u in t3.uplinks] == [4.0, 2.0, 1.0]   # leaf: 8/4 = 2 links; level 0: 4 x 2 / 2 = 4
    assert "2:1 4:1" in t3.describe()


# --------------------------------------------------------------------------- dragonfly

def test_dragonfly_minimal_routes():
    """4 groups x 4 routers x 2 nodes; the link from group g to group t is on router t."""
    d = network.from_spec("dragonfly:4x4x2", hosts(32))
    # node 0 = (g0, r0); 2 = (g0, r1); 9 = (g1, r0); 31 = (g3, r3)
    na, nb = np.array([0, 0, 0, 9, 2]), np.array([1, 2, 9, 31, 0])
    assert d.hops(na, nb).tolist() == [2, 3, 4, 5, 3]
    loads = d.link_loads(np.array([0]), np.array([9]), np.array([8.0]))
    kinds = d.link_kinds()
    # g0 r0 -> r1 (the router holding the link to group 1), the global link, and in group 1
    # the link arrives on router 0 = the destination's router: no second local hop
    assert loads[kinds == "local"].sum() == 8 and loads[kinds == "global"].sum() == 8
    assert loads[kinds == "injection"].sum() == 16


def test_dragonfly_valiant_spreads_over_the_other_groups():
    d = network.from_spec("dragonfly:4x4x1:routing=valiant", hosts(16))
    loads = d.link_loads(np.array([0]), np.array([4]), np.array([6.0]))   # group 0 -> group 1
    glob = loads[d.link_kinds() == "global"].reshape(4, 4)
    # half through group 2, half through group 3; never the direct link
    assert glob[0, 1] == 0 and glob[0, 2] == glob[2, 1] == glob[0, 3] == glob[3, 1] == 3.0


def test_dragonfly_levels_and_costs_match_the_search():
    m = machine.build(hosts(32), ["pack:1 core:2"], network="dragonfly:4x4x2")
    assert m.level_names == ["group", "router", "node", "package", "core"]
    t = traffic({(0, 2): 5, (0, 4): 3, (0, 20): 7, (1, 63): 1}, 64)
    slot = np.arange(64)
    W = sp.triu(from_traffic(t).W, 1).tocoo()
    py = float((W.data * m.distance(W.row, W.col)).sum())
    assert Problem(from_traffic(t), m).cost(slot) == pytest.approx(py)
    # same node < same router < same group < another group
    d = m.distance(np.array([0, 0, 0, 0]), np.array([1, 2, 4, 16]))
    assert list(d) == sorted(d) and len(set(d)) == 4


# --------------------------------------------------------------------------- tori

def test_tofu_is_a_6d_torus_with_two_line_dimensions():
    m = machine.build(hosts(2 * 2 * 2 * 12), ["core:1"], network="tofu:2x2x2")
    net = m.network
    assert net.dims == (2, 2, 2, 2, 3, 2) and net.wrap == (True, True, True, False, True, False)
    b = net.pos(np.array([[0, 0, 0, 0, 2, 0]]))[0]     # b is a ring of 3: 0 -> 2 is one hop back
    c = net.pos(np.array([[0, 0, 0, 0, 0, 1]]))[0]
    assert net.hops(np.array([0, 0]), np.array([b, c])).tolist() == [1, 1]
    wrap = network.parse_spec("torus:4x4:wrap=10")
    m2 = machine.build(hosts(16), ["core:1"], network=wrap)
    # x is a ring (0 -> 3: one hop), y a line (0 -> 3: three hops)
    assert m2.network.hops(np.array([0, 0]), np.array([3, 12])).tolist() == [1, 3]


@pytest.mark.parametrize("bad,fragment", [
    ("dragonfly:4x4", "GROUPSxROUTERSxNODES"), ("torus:4x4:wrap=1", "one 1 .ring. or 0"),
    ("fat-tree:4x8:oversub=0.5", "ratio.s. >= 1"), ("ring:4", "unknown kind"),
    ("dragonfly:4x4x2:routing=ugal", "minimal or valiant"), ("fat-tree", "KIND:SHAPE"),
    ("torus:4x4:oversub=2", "takes no 'oversub'"),
])
def test_bad_network_specs(bad, fragment):
    with pytest.raises(UserError, match=fragment):
        machine.build(hosts(8), ["core:1"], network=bad)


def test_one_network_only():
    with pytest.raises(UserError, match="choose one network"):
        machine.build(hosts(8), ["core:1"], network="fat-tree:2x4", torus="2x4")


# --------------------------------------------------------------------------- places are kept

@pytest.mark.parametrize("net", ["fat-tree:4x4:oversub=2", "dragonfly:4x2x2"])
def test_reduced_machines_keep_node_places(net):
    spec = mspec.make(hosts(16), ["core:2"], network=net)
    m = mspec.build(spec)
    frozen = mspec.frozen(spec, m)
    part = mspec.restrict(frozen, ["n5", "n9", "n14"])
    sub = mspec.build(part)
    full_d = m.distance(np.array([10, 10]), np.array([18, 28]))        # slots of n5 -> n9, n5 -> n14
    assert sub.distance(np.array([0, 0]), np.array([2, 4])).tolist() == full_d.tolist()
    alloc = allocation.restrict(m, [5, 9, 14])
    assert alloc.network.describe() == m.network.describe()
    assert (alloc.network.groups[:, :-1] == m.network.groups[[5, 9, 14], :-1]).all()


def test_mapping_on_a_dragonfly_is_never_worse_than_block():
    n = 64
    ent = {(i, (i + 1) % n): 100.0 for i in range(n)} | {(i, (i + 8) % n): 50.0 for i in range(n)}
    t = traffic(ent, n)
    m = machine.build(hosts(16), ["pack:2 core:2"], network="dragonfly:4x2x2")
    r = solve.solve(t, m)
    ours = metrics.evaluate(t.bytes, m, r.slot_of_rank)
    block = metrics.evaluate(t.bytes, m, np.arange(n))
    assert ours["sum_com"] <= block["sum_com"] and ours["max_global_link_load"] <= block["max_global_link_load"]


def test_torus_link_loads_are_the_walks_routes():
    """link_loads sums each dimension's run with a difference array; it must put exactly the
    bytes of Torus.walk's dimension-order routes on each link (rings, lines, ties, wraps)."""
    rng = np.random.default_rng(3)
    for dims, wrap in [((4,), (True,)), ((5, 4), (True, False)), ((2, 2, 2, 2, 3, 2), (True,) * 3 + (False, True, False)),
                       ((6, 5, 2), (False,) * 3)]:
        n = int(np.prod(dims))
        t = network.torus_from("x".join(map(str, dims)), hosts(n), None, wrap=wrap)
        na, nb, w, grp = rng.integers(0, n, 400), rng.integers(0, n, 400), rng.random(400), rng.integers(0, 3, 400)
        walked = np.zeros((3, t.positions, len(dims), 2))
        for idx, p, d, direction in t.walk(na, nb):
            np.add.at(walked, (grp[idx], p, d, direction), w[idx])
        assert np.allclose(t.link_loads(na, nb, w, grp, 3), walked)


def test_torus_link_loads_leave_no_residue_on_unused_links():
    """The difference arrays' float prefix sums left +-1e-8 on links no route takes: counted
    in links_used and mean_link_load, and negative loads."""
    rng = np.random.default_rng(5)
    t = network.torus_from("5x6", hosts(30), None, wrap=(True, False))
    na, nb, w = rng.integers(0, 30, 300), rng.integers(0, 30, 300), rng.random(300) * 1e7
    loads = t.link_loads(na, nb, w)
    walked = np.zeros_like(loads)
    for idx, p, d, direction in t.walk(na, nb):
        np.add.at(walked, (p, d, direction), w[idx])
    assert ((loads > 0) == (walked > 0)).all() and (loads >= 0).all()


@pytest.mark.parametrize("hosts_, topo, kw", [
    ("n[1-24]", "pack:2 core:4", dict(torus="2x3x4")),
    ("n[1-24]", "pack:2 core:4", dict(mesh="4x6", hop_cost="50")),
    ("n[1-12]", "pack:2 numa:2 core:2", dict()),                           # one switch
    ("n[1-30]", "pack:1 core:3", dict(network="torus:5x6:wrap=10")),
    ("n[1-16]", "pack:2 core:2", dict(torus="2x2x2x2", oversubscribe=2)),
    ("n[1-5]", "pack:1 core:1", dict(torus="5")),
    ("n[1-32]", "pack:2 core:2", dict(network="fat-tree:4x8:oversub=2")),
    ("n[1-64]", "pack:1 core:2", dict(network="fat-tree:2x4x8:oversub=2x2")),
    ("n[1-32]", "pack:2 core:2", dict(network="fat-tree:2;8,4;1,2;1,1")),           # SimGrid's parameters
    ("n[1-18]", "pack:2 core:2", dict(switches="3x6")),
    ("n[1-24]", "pack:2 core:2", dict(network="dragonfly:4x3x2")),
    ("n[1-40]", "pack:1 core:2", dict(network="dragonfly:5x4x2:routing=valiant")),
])
def test_metrics_in_c_are_the_numpy_metrics(hosts_, topo, kw):
    """The report's metrics are one pass in C (refine.pair_metrics, torus_loads, switch_loads,
    dragonfly_loads); the numpy passes are the reference: every metric and every link's load
    the same."""
    import hostlist
    m = machine.build(hostlist.expand_hostlist(hosts_), [topo], **kw)
    rng = np.random.default_rng(len(hosts_) + m.nslots)
    for n in (m.nslots, max(2, m.nslots // 3)):
        M = sp.random(n, n, density=min(1.0, 8 / n), random_state=int(rng.integers(1 << 30)), format="csr") * 1e6
        slot = rng.permutation(m.nslots)[:n]
        c, ref = metrics.evaluate(M, m, slot), metrics.evaluate(M, m, slot, numpy_only=True)
        assert c.keys() == ref.keys()
        for k in ref:
            assert np.allclose(np.asarray(c[k], float), np.asarray(ref[k], float), rtol=1e-12, atol=0), k
        assert np.allclose(metrics.link_loads(M, m, slot), metrics.link_loads(M, m, slot, numpy_only=True),
                           rtol=1e-12, atol=0)


@pytest.mark.parametrize("net", ["dragonfly:4x3x2", "dragonfly:5x4x2:routing=valiant",
                                 "dragonfly:4x4x2:global=2:routing=valiant", "dragonfly:2x3x2:routing=valiant"])
def test_dragonfly_loads_in_c_are_the_numpy_loads(net):
    """Dragonfly link loads in one C pass (refine.dragonfly_loads) route as the numpy
    segments do: minimal and Valiant, parallel global links, with and without route groups,
    and through the report (metrics.link_loads aggregates no node pairs for it)."""
    m = machine.build(hosts(int(np.prod([int(x) for x in net.split(":")[1].split("x")]))), ["core:2"], network=net)
    t, rng = m.network, np.random.default_rng(7)
    k = m.nnodes
    na, nb, w, grp = rng.integers(0, k, 500), rng.integers(0, k, 500), rng.random(500), rng.integers(0, 3, 500)
    assert np.allclose(t.link_loads(na, nb, w), t.link_loads(na, nb, w, numpy_only=True), rtol=1e-12, atol=0)
    assert np.allclose(t.link_loads(na, nb, w, grp, 3, injection=False),
                       t.link_loads(na, nb, w, grp, 3, injection=False, numpy_only=True), rtol=1e-12, atol=0)
    M = sp.random(m.nslots, m.nslots, density=0.3, random_state=2, format="csr") * 1e6
    slot = rng.permutation(m.nslots)
    assert np.allclose(metrics.link_loads(M, m, slot), metrics.link_loads(M, m, slot, numpy_only=True),
                       rtol=1e-12, atol=0)
    assert (t.hops(na, nb) == t._hops(na, nb)).all()                 # the table of every pair


@pytest.mark.parametrize("net", ["fat-tree:4x4:oversub=2", "fat-tree:2x2x4:oversub=2x2", "fat-tree:2;8,2;1,2;1,1"])
def test_switch_tree_loads_in_c_are_the_numpy_loads(net):
    """Switch-tree link loads of node pairs in one C pass (refine.switch_loads, what the link
    balancing routes its candidate moves with) as the numpy passes give them: with and without
    route groups and the nodes' own links."""
    m = machine.build(hosts(16), ["core:2"], network=net)
    t, rng = m.network, np.random.default_rng(9)
    na, nb, w, grp = rng.integers(0, 16, 400), rng.integers(0, 16, 400), rng.random(400), rng.integers(0, 5, 400)
    for kw in (dict(), dict(injection=False)):
        assert np.allclose(t.link_loads(na, nb, w, **kw), t.link_loads(na, nb, w, numpy_only=True, **kw),
                           rtol=1e-12, atol=0)
        assert np.allclose(t.link_loads(na, nb, w, grp, 5, **kw),
                           t.link_loads(na, nb, w, grp, 5, numpy_only=True, **kw), rtol=1e-12, atol=0)


def test_metrics_in_c_on_an_uneven_slurm_tree(tmp_path):
    """A site's switches from topology.conf (leaves of 3, 7 and 2 nodes, one leaf straight
    under the core): the C passes read it as the numpy ones do."""
    from rankmap.slurm import topology
    conf = tmp_path / "topology.conf"
    conf.write_text("SwitchName=a Nodes=n[0-2]\nSwitchName=b Nodes=n[3-9]\nSwitchName=c Nodes=n[10-11]\n"
                    "SwitchName=mid Switches=a,b\nSwitchName=core Switches=mid,c\n")
    hs = [f"n{i}" for i in range(12)]
    m = machine.build(hs, ["pack:2 core:2"], network=topology.for_hosts(topology.describe(str(conf)), hs))
    rng = np.random.default_rng(3)
    M = sp.random(m.nslots, m.nslots, density=0.2, random_state=4, format="csr") * 1e6
    slot = rng.permutation(m.nslots)
    c, ref = metrics.evaluate(M, m, slot), metrics.evaluate(M, m, slot, numpy_only=True)
    for k in ref:
        assert np.allclose(np.asarray(c[k], float), np.asarray(ref[k], float), rtol=1e-12, atol=0), k
    assert np.allclose(metrics.link_loads(M, m, slot), metrics.link_loads(M, m, slot, numpy_only=True),
                       rtol=1e-12, atol=0)


@pytest.mark.parametrize("net", ["fat-tree:4x4:oversub=2", "dragonfly:4x2x2", "dragonfly:4x2x2:routing=valiant",
                                 "torus:4x2x2"])
def test_link_loads_without_injection_are_the_network_links(net):
    """link_loads(injection=False), which the link balancing reads for each candidate move,
    is the full layout without the entries link_kinds calls "injection", and first_diff's
    table (small node counts) answers as the per-pair product over the levels."""
    m = machine.build(hosts(16), ["core:2"], network=net)
    t, rng = m.network, np.random.default_rng(5)
    na, nb, w, grp = rng.integers(0, 16, 300), rng.integers(0, 16, 300), rng.random(300), rng.integers(0, 4, 300)
    keep = t.link_kinds() != "injection"
    full = t.link_loads(na, nb, w, grp, 4).reshape(4, -1)
    assert np.allclose(t.link_loads(na, nb, w, grp, 4, injection=False).reshape(4, -1), full[:, keep])
    assert np.allclose(t.link_loads(na, nb, w, injection=False).ravel(), t.link_loads(na, nb, w).ravel()[keep])
    if isinstance(t, network.Hierarchy):
        ga, gb = t.groups[na], t.groups[nb]
        assert (t.first_diff(na, nb) == np.cumprod(ga == gb, axis=1).sum(axis=1)).all()


def test_machine_json_keeps_no_default_torus_coordinates():
    """machine.json (frozen(compact=True)) of a torus whose nodes sit in the default order
    holds no coordinates (10^5 nodes: 6.4 MB of them) and rebuilds the same machine; reduced
    to some nodes, they keep their places; other coordinates are kept."""
    spec = mspec.make(hosts(24), ["core:2"], torus="4x3x2")
    m = mspec.build(spec)
    small = mspec.frozen(spec, m, compact=True)
    assert small["coords"] is None
    assert (mspec.build(small).network.coords == m.network.coords).all()
    part = mspec.build(mspec.restrict(small, ["n5", "n9", "n14"]))
    assert (part.network.coords == m.network.coords[[5, 9, 14]]).all()
    moved = mspec.make(hosts(24), ["core:2"], torus="4x3x2",
                       coords={f"n{i}": [int(x) for x in c] for i, c in enumerate(m.network.coords[::-1])})
    mm = mspec.build(moved)
    kept = mspec.frozen(moved, mm, compact=True)
    assert kept["coords"] is not None and (mspec.build(kept).network.coords == mm.network.coords).all()


def test_metrics_refuse_slots_outside_the_machine_before_c_reads_them():
    """The C passes read the machine's arrays at each rank's slot: a slot outside the machine
    is refused first (numpy raised IndexError; C would have read outside its arrays)."""
    m = machine.build(hosts(4), ["pack:1 core:2"], torus="4")
    M = sp.csr_matrix(np.ones((4, 4)))
    for slot, fragment in [([0, 1, 2, 8], "slot 8 is not a slot"), ([-1, 0, 1, 2], "slot -1 is not a slot"),
                           ([0, 1, 2], "has 3 ranks, the traffic has 4")]:
        with pytest.raises(UserError, match=fragment):
            metrics.evaluate(M, m, np.array(slot))
        with pytest.raises(UserError, match=fragment):
            metrics.link_loads(M, m, np.array(slot))
