"""Mapping quality metrics, exactly as defined in the project notes (metrics.md):

* sum_com  TreeMatch SUM_COM: sum over pairs i<j of W_ij * c(i,j), c = accumulated level
           costs (on a torus: the costs below the node level + hops x the node-level cost)
* max_com  TreeMatch MAX_COM: max of W_ij * c(i,j)
* tree_hop_bytes     sum of W_ij * 2u (u = levels up to the lowest common ancestor)
* net_hop_bytes      sum of W_ij * d (d = network links between the nodes, 0 inside a node)
* dilation           per communicating pair: mean, weighted mean (hop-bytes / sum W), max
* max_link_load      max bytes on one directed link under dimension-order routing (torus),
                     or on one node/switch uplink or downlink (switch tree, one switch;
                     per physical link where a fat tree has several), or on one
                     injection, local or global link (dragonfly, minimal or Valiant
                     routing), with the directed matrix M
* max_global_link_load  the same over the network's global links only (the links into
                     the top switch of a tree, the dragonfly's links between groups);
                     only for networks that have them
* internode_fraction sum of W over pairs on different nodes / sum of W
* nic_volume         per node: bytes leaving + entering it (report.json: nic_volume_by_node,
                     {host: bytes} over the nodes the mapping uses)
One pass in C over the pairs (refine.pair_metrics, and for the link loads torus_loads,
or the networks' own link_loads in C, switch_loads and dragonfly_loads: a 10^6-rank report of four mappings took 30-40 s in numpy on a
torus, 21 s on a fat tree); numpy_only: the numpy passes, vectorized over the nonzeros of W, taken CHUNK at a time (memory: the matrix plus
a fixed amount). The tests hold the two to the same numbers."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper import refine
from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Dragonfly, Hierarchy, SwitchTree, Torus
from rankmap.profiler import validate
from rankmap.profiler.errors import UserError
from rankmap.profiler.formats import symmetric


# Nonzeros taken per pass: every metric is a sum or a maximum over the pairs, so the
# temporaries (route steps, node pairs, distances) stay this size whatever the matrix's
# (at 10^6 ranks of random placement they were ~1 KB per nonzero, 26 GB at 10^7)
CHUNK = 1 << 21


def _chunks(n: int):
    for lo in range(0, n, CHUNK):
        yield slice(lo, min(n, lo + CHUNK))


def _node_pair_loads(na: np.ndarray, nb: np.ndarray, w: np.ndarray, machine: Machine,
                     numpy_only: bool = False) -> np.ndarray:
    """Bytes per directed network link for traffic w from node na to node nb (na != nb)."""
    net = machine.network
    if isinstance(net, (Dragonfly, SwitchTree)) and not numpy_only:
        return net.link_loads(na, nb, w).ravel()      # one pass in C: no need to aggregate
    if len(w):   # aggregate node pairs first: routes depend only on the nodes
        key = na * machine.nnodes + nb
        uk, inv = np.unique(key, return_inverse=True)
        w = np.bincount(inv, weights=w)
        na, nb = uk // machine.nnodes, uk % machine.nnodes
    if isinstance(net, (Dragonfly, SwitchTree)):
        return net.link_loads(na, nb, w, numpy_only=True).ravel()
    if net is not None:
        return net.link_loads(na, nb, w).ravel()
    # one switch: each node's uplink, then each node's downlink
    return np.bincount(np.concatenate([na, machine.nnodes + nb]), weights=np.concatenate([w, w]),
                       minlength=2 * machine.nnodes).astype(np.float64)


class Pairs:
    """The traffic as the metrics read it, prepared once for the several mappings a report
    compares: the directed pairs (the diagonal dropped) and the undirected ones (i < j)."""

    def __init__(self, M: sp.spmatrix):
        c = sp.coo_matrix(M)
        off = c.row != c.col
        self.directed = sp.coo_matrix((c.data[off].astype(np.float64), (c.row[off], c.col[off])), shape=c.shape)
        del c, off
        self.directed.eliminate_zeros()
        self.undirected = sp.triu(symmetric(self.directed), k=1).tocoo()


def _view(machine: Machine, numpy_only: bool = False) -> "refine.MachineView | None":
    """The machine for the C passes (its arrays, not copied: cheap to make per call; not kept
    on the machine, which is pickled for fresh interpreters), or None where they do not apply."""
    if numpy_only or not refine.viewable(machine):
        return None
    return refine.MachineView(machine)


def link_loads(M: sp.spmatrix, machine: Machine, slot: np.ndarray, numpy_only: bool = False) -> np.ndarray:
    """Bytes per directed network link (flat array) for the directed traffic M (a matrix, or
    the Pairs of one)."""
    c = M.directed if isinstance(M, Pairs) else sp.coo_matrix(M)
    view = _view(machine, numpy_only)
    if view is not None and view.torus:
        loads = np.zeros(machine.network.positions * len(machine.network.dims) * 2)
        refine.torus_loads(view, loads, c.row, c.col, c.data, _in_machine(slot, machine, c.shape[0]))
        return loads
    total = None
    for part in _chunks(c.nnz):
        na, nb = machine.slot_node[slot[c.row[part]]], machine.slot_node[slot[c.col[part]]]
        inter = na != nb
        loads = _node_pair_loads(na[inter], nb[inter], c.data[part][inter], machine, numpy_only)
        total = loads if total is None else total + loads
    return total if total is not None else _node_pair_loads(np.zeros(0, np.int64), np.zeros(0, np.int64),
                                                            np.zeros(0), machine)


def _compact_loads(M, machine: Machine, slot: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """On a torus of many more positions than nodes (Torus.compact_links): (bytes per entry of
    its runs of equal load, links per entry), from the traffic summed per pair of nodes; None
    elsewhere (the loads per link, link_loads)."""
    net = machine.network
    comp = net.compact_links() if isinstance(net, Torus) else None
    if comp is None:
        return None
    c = M.directed if isinstance(M, Pairs) else sp.coo_matrix(M)
    s = _in_machine(slot, machine, c.shape[0])
    na, nb = machine.slot_node[s[c.row]], machine.slot_node[s[c.col]]
    x = na != nb
    key, inv = np.unique(na[x] * machine.nnodes + nb[x], return_inverse=True)
    w = np.bincount(inv.reshape(-1), weights=c.data[x], minlength=len(key))
    return comp.loads(net, key // machine.nnodes, key % machine.nnodes, w), comp.mult


def placement(slot_of_rank, machine: Machine, n: int | None = None) -> np.ndarray:
    """A mapping a caller gives (a list or array of slots, one per rank), checked: n ranks
    (when n is given), every slot one of the machine's, no slot taken twice (a core takes
    several ranks only through --oversubscribe, as several slots)."""
    s = _in_machine(slot_of_rank, machine, n)
    order = np.argsort(s, kind="stable")
    same = np.flatnonzero(s[order][1:] == s[order][:-1])
    if len(same):
        a, b = sorted(order[same[0]:same[0] + 2])
        raise UserError(f"ranks {a} and {b} both take slot {s[a]} (one rank per slot; --oversubscribe gives a core "
                        "several slots)")
    return s


def _in_machine(slot_of_rank, machine: Machine, n: int | None = None) -> np.ndarray:
    """The slots as int64, checked: n ranks (when n is given), every slot one of the
    machine's (the C passes read the machine's arrays at each slot: checked before)."""
    try:
        s = np.asarray(slot_of_rank)
    except (ValueError, TypeError):
        s = np.zeros((0, 0))
    if s.ndim != 1 or (len(s) and s.dtype.kind not in "iu"):
        raise UserError(f"a mapping is one whole-number slot per rank, not {validate.show(slot_of_rank)}")
    if n is not None and len(s) != n:
        raise UserError(f"the mapping has {len(s)} ranks, the traffic has {n}")
    s = s.astype(np.int64)
    bad = np.flatnonzero((s < 0) | (s >= machine.nslots))
    if len(bad):
        raise UserError(f"rank {bad[0]}: slot {s[bad[0]]} is not a slot of the machine (0..{machine.nslots - 1})")
    return s


def evaluate(M: sp.spmatrix | Pairs, machine: Machine, slot: np.ndarray, numpy_only: bool = False) -> dict:
    """The metrics of one mapping (slot of each rank) for the directed traffic M (a matrix, or
    its Pairs when several mappings are compared). numpy_only: the numpy passes on any
    network (what the tests compare the C passes with)."""
    pairs = M if isinstance(M, Pairs) else Pairs(M)
    W, Mc = pairs.undirected, pairs.directed
    total = float(W.data.sum())
    sum_com = max_com = tree_hb = net_hb = inter_w = 0.0
    d_sum, d_max = 0, 0
    view = _view(machine, numpy_only)
    if view is not None:
        sum_com, max_com, tree_hb, net_hb, d_sum, d_max, inter_w = \
            refine.pair_metrics(view, W.row, W.col, W.data, _in_machine(slot, machine, W.shape[0])).tolist()
        d_sum, d_max = int(d_sum), int(d_max)
    for part in _chunks(W.nnz if view is None else 0):
        sa, sb, w = slot[W.row[part]], slot[W.col[part]], W.data[part]
        c = machine.distance(sa, sb)
        wc = w * c
        sum_com += float(wc.sum())
        max_com = max(max_com, float(wc.max()))
        tree_hb += float((w * 2 * machine.tree_levels_up(sa, sb)).sum())
        na, nb = machine.slot_node[sa], machine.slot_node[sb]
        d = machine.node_hops(na, nb)
        net_hb += float((w * d).sum())
        d_sum += int(d.sum())
        d_max = max(d_max, int(d.max()))
        inter_w += float(w[na != nb].sum())
    nic = np.zeros(machine.nnodes)
    for part in _chunks(Mc.nnz):
        ma, mb = machine.slot_node[slot[Mc.row[part]]], machine.slot_node[slot[Mc.col[part]]]
        x = ma != mb
        wx = Mc.data[part][x]
        nic += np.bincount(ma[x], weights=wx, minlength=machine.nnodes)
        nic += np.bincount(mb[x], weights=wx, minlength=machine.nnodes)
    compact = _compact_loads(pairs, machine, slot)
    if compact is not None:
        # a torus of many more positions than nodes: the links in runs of equal load, each
        # entry standing for mult links (network.CompactLinks), not an array per position
        loads, mult = compact
        on = loads > 0
        n_used = float(mult[on].sum())
        max_load, links_used = (float(loads.max()) if len(loads) else 0.0), int(n_used)
        mean_load = float((loads[on] * mult[on]).sum() / n_used) if n_used else 0.0
    else:
        loads = link_loads(pairs, machine, slot, numpy_only)
        used = loads[loads > 0]
        max_load, links_used = (float(loads.max()) if len(loads) else 0.0), int(len(used))
        mean_load = float(used.mean()) if len(used) else 0.0
    extra = {}
    if isinstance(machine.network, Hierarchy):
        glob = loads[machine.network.link_kinds() == "global"]
        extra["max_global_link_load"] = float(glob.max()) if len(glob) else 0.0
    pairs = int(W.nnz)
    return {
        "sum_com": sum_com,
        "max_com": max_com,
        "tree_hop_bytes": tree_hb,
        "net_hop_bytes": net_hb,
        "dilation_mean": d_sum / pairs if pairs else 0.0,
        "dilation_weighted": net_hb / total if total else 0.0,
        "dilation_max": d_max,
        "max_link_load": max_load,
        "mean_link_load": mean_load,
        "links_used": links_used,
        "internode_fraction": inter_w / total if total else 0.0,
        "nic_volume_max": float(nic.max()) if len(nic) else 0.0,
        "nic_volume": nic.tolist(),
        "pairs": pairs,
        "bytes": total,
        **extra,
    }
