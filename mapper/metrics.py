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
* nic_volume         per node: bytes leaving + entering it
All vectorized over the nonzeros of W (O(nnz) memory)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from rankmap.mapper.machine import Machine
from rankmap.mapper.network import Hierarchy
from rankmap.profiler.formats import symmetric


def link_loads(M: sp.spmatrix, machine: Machine, slot: np.ndarray) -> np.ndarray:
    """Bytes per directed network link (flat array) for the directed traffic M."""
    c = sp.coo_matrix(M)
    na, nb = machine.slot_node[slot[c.row]], machine.slot_node[slot[c.col]]
    inter = na != nb
    na, nb, w = na[inter], nb[inter], c.data[inter]
    if len(w):   # aggregate node pairs first: routes depend only on the nodes
        key = na * machine.nnodes + nb
        uk, inv = np.unique(key, return_inverse=True)
        w = np.bincount(inv, weights=w)
        na, nb = uk // machine.nnodes, uk % machine.nnodes
    net = machine.network
    if net is not None:
        return net.link_loads(na, nb, w).ravel()
    out = np.zeros(2 * machine.nnodes)   # one switch: each node's uplink and downlink
    np.add.at(out, na, w)
    np.add.at(out, machine.nnodes + nb, w)
    return out


def evaluate(M: sp.spmatrix, machine: Machine, slot: np.ndarray) -> dict:
    M = sp.csr_matrix(M, dtype=np.float64)
    M.setdiag(0)
    M.eliminate_zeros()
    W = sp.triu(symmetric(M), k=1).tocoo()
    sa, sb, w = slot[W.row], slot[W.col], W.data
    total = float(w.sum())
    c = machine.distance(sa, sb)
    u = machine.tree_levels_up(sa, sb)
    na, nb = machine.slot_node[sa], machine.slot_node[sb]
    d = machine.node_hops(na, nb)
    inter = na != nb
    nic = np.zeros(machine.nnodes)
    Mc = M.tocoo()
    ma, mb = machine.slot_node[slot[Mc.row]], machine.slot_node[slot[Mc.col]]
    x = ma != mb
    np.add.at(nic, ma[x], Mc.data[x])
    np.add.at(nic, mb[x], Mc.data[x])
    loads = link_loads(M, machine, slot)
    used = loads[loads > 0]
    extra = {}
    if isinstance(machine.network, Hierarchy):
        glob = loads[machine.network.link_kinds() == "global"]
        extra["max_global_link_load"] = float(glob.max()) if len(glob) else 0.0
    return {
        "sum_com": float((w * c).sum()),
        "max_com": float((w * c).max()) if len(w) else 0.0,
        "tree_hop_bytes": float((w * 2 * u).sum()),
        "net_hop_bytes": float((w * d).sum()),
        "dilation_mean": float(d.mean()) if len(d) else 0.0,
        "dilation_weighted": float((w * d).sum() / total) if total else 0.0,
        "dilation_max": int(d.max()) if len(d) else 0,
        "max_link_load": float(loads.max()) if len(loads) else 0.0,
        "mean_link_load": float(used.mean()) if len(used) else 0.0,
        "links_used": int(len(used)),
        "internode_fraction": float(w[inter].sum() / total) if total else 0.0,
        "nic_volume_max": float(nic.max()) if len(nic) else 0.0,
        "nic_volume": nic.tolist(),
        "pairs": int(len(w)),
        "bytes": total,
        **extra,
    }
