"""Comparing mappings: the metrics of each, as a table and as JSON."""
from __future__ import annotations

import numpy as np
from rich.table import Table

from rankmap.mapper import baselines, metrics
from rankmap.mapper.machine import Machine

COLUMNS = [("sum_com", "SUM_COM", "{:.4g}"), ("tree_hop_bytes", "tree hop-B", "{:.4g}"),
           ("net_hop_bytes", "net hop-B", "{:.4g}"), ("dilation_weighted", "dilation", "{:.3f}"),
           ("dilation_max", "max dil.", "{:d}"), ("max_link_load", "max link B", "{:.4g}"),
           ("internode_fraction", "inter-node", "{:.1%}"), ("nic_volume_max", "max NIC B", "{:.4g}")]


def compare(M, machine: Machine, mappings: dict, seed: int = 0, placement=None, by_node: bool = False) -> dict:
    """Metrics of the named mappings plus block, cyclic and random (and the input order).
    by_node (what report.json and --json print): each mapping's per-node NIC volumes as
    nic_volume_by_node {host: bytes} over the nodes that hold its ranks or carry traffic,
    instead of the nic_volume list over every node of the machine (10 ranks on 10^5 nodes:
    a few lines, not 6 MB)."""
    n = M.shape[0]
    M = metrics.Pairs(M)      # read once for every mapping compared
    slots = dict(mappings)
    slots.setdefault("block", baselines.block(n, machine))
    slots.setdefault("cyclic", baselines.cyclic(n, machine))
    slots.setdefault("random", baselines.random(n, machine, seed))
    inp = baselines.from_placement(placement, machine)
    if inp is not None:
        slots.setdefault("input order", inp)
    out = {name: metrics.evaluate(M, machine, slot) for name, slot in slots.items()}
    if by_node:
        for name, r in out.items():
            r["nic_volume_by_node"] = nodes_used(machine, slots[name], r.pop("nic_volume"))
    return out


def nodes_used(machine: Machine, slot, nic=None) -> dict | list:
    """The nodes a mapping uses, in machine order: those that hold a rank, and (with nic,
    the per-node volumes) those that carry traffic, as {host: bytes}; without nic, the list
    of hosts."""
    used = np.zeros(machine.nnodes, dtype=bool)
    used[machine.slot_node[np.asarray(slot, dtype=np.int64)]] = True
    if nic is None:
        return [machine.hosts[k] for k in np.flatnonzero(used).tolist()]
    nic = np.asarray(nic, dtype=float)
    used |= nic != 0
    return {machine.hosts[k]: float(nic[k]) for k in np.flatnonzero(used).tolist()}


def table(results: dict, title: str, reference: str = "block") -> Table:
    t = Table(title=title, show_edge=False)
    t.add_column("mapping", justify="left")
    cols = list(COLUMNS)
    if all("max_global_link_load" in r for r in results.values()):   # trees and dragonflies
        cols.insert(6, ("max_global_link_load", "max global B", "{:.4g}"))
    for _, head, _ in cols:
        t.add_column(head, justify="right")
    t.add_column(f"SUM_COM vs {reference}", justify="right")
    ref = results.get(reference, {}).get("sum_com")
    for name, r in results.items():
        cells = [fmt.format(r[key]) for key, _, fmt in cols]
        ratio = f"{r['sum_com'] / ref:.3f}" if ref else "-"
        t.add_row(name, *cells, ratio)
    return t


def strip_lists(results: dict) -> dict:
    """The per-node NIC volumes are long: the table and the console do without them."""
    return {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, (list, dict))} for k, v in results.items()}


def mapped_order(slot: np.ndarray) -> np.ndarray:
    return np.argsort(slot, kind="stable")
