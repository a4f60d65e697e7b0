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


def compare(M, machine: Machine, mappings: dict, seed: int = 0, placement=None) -> dict:
    """Metrics of the named mappings plus block, cyclic and random (and the input order)."""
    n = M.shape[0]
    M = metrics.Pairs(M)      # read once for every mapping compared
    out = {}
    for name, slot in mappings.items():
        out[name] = metrics.evaluate(M, machine, slot)
    out.setdefault("block", metrics.evaluate(M, machine, baselines.block(n, machine)))
    out.setdefault("cyclic", metrics.evaluate(M, machine, baselines.cyclic(n, machine)))
    out.setdefault("random", metrics.evaluate(M, machine, baselines.random(n, machine, seed)))
    inp = baselines.from_placement(placement, machine)
    if inp is not None:
        out.setdefault("input order", metrics.evaluate(M, machine, inp))
    return out


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
    return {k: {kk: vv for kk, vv in v.items() if not isinstance(vv, list)} for k, v in results.items()}


def mapped_order(slot: np.ndarray) -> np.ndarray:
    return np.argsort(slot, kind="stable")
