"""`rankmap probe`: measure what communication costs between the levels of this machine
and write the level-cost file the mapper (`--level-costs @FILE`) and the collective
kernels read.

Placement (with rankmap's own srun path): rank 0 on a core of the first node; then a
core of the same socket, a core of the other socket, a neighbouring node (one torus hop
if the network is known), a distant node (the most hops). Costs per level are the
increments of inverse bandwidth at 4 MiB, top to bottom, TreeMatch's accumulated
convention: core = t(same socket), package = t(other socket) - t(same socket),
node = t(neighbour node) - t(other socket), in ns per byte; on a torus also hop, the
slope per link between the neighbour and the distant node."""
from __future__ import annotations

import json
import os
import subprocess
import tempfile
from datetime import datetime
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from rankmap.mapper import spec as mspec, writers
from rankmap.slurm import nodes
from rankmap.mapper.network import Torus
from rankmap.profiler import native
from rankmap.profiler.errors import UserError
from rankmap.slurm import cluster, relaunch

BIG = 4194304


def _placement(m) -> list[tuple[str, int]]:
    """(role, slot) for each probe rank; rank 0 first."""
    per = m.slots_by_node()
    first = per[0]
    roles = [("reference", int(first[0]))]
    pk = m.lvl[first, m.node_level + 1]
    same = [s for s in first[1:] if pk[list(first).index(s)] == pk[0]]
    other = [s for s in first[1:] if pk[list(first).index(s)] != pk[0]]
    if same:
        roles.append(("same socket", int(same[0])))
    if other:
        roles.append(("other socket", int(other[0])))
    if m.nnodes > 1:
        nodes = np.arange(1, m.nnodes)
        hops = m.node_hops(np.zeros(len(nodes), dtype=np.int64), nodes)
        near = int(nodes[np.argmin(hops)])
        roles.append(("neighbour node", int(per[near][0])))
        far = int(nodes[np.argmax(hops)])
        if far != near and hops.max() > hops.min():
            roles.append(("distant node", int(per[far][0])))
    return roles


def run_probe(mopts: dict, out: str, mpi: str | None, reps: int, console: Console) -> dict:
    hosts = cluster.allocation_nodes() if cluster.in_allocation() and not mopts.get("nodes") else None
    spec = nodes.resolve(mopts, hosts)
    m = mspec.build(spec)
    roles = _placement(m)
    if len(roles) < 2:
        raise UserError("the probe needs at least two cores")
    mpi = mpi or native.default_mpi()
    exe = native.artifact("probe", mpi)
    with tempfile.TemporaryDirectory(prefix="rankmap-probe-") as tmp:
        mapping = Path(tmp) / "placement"
        slots = np.array([s for _, s in roles], dtype=np.int64)
        writers.write_mapping(mapping, slots, m, {"probe": True}, mspec.frozen(spec, m, compact=True))
        if cluster.in_allocation() or os.environ.get("SLURM_CONF") or _has_slurm():
            plan = relaunch.srun_plan(mapping, [str(exe), str(reps)], ["-K", "-t", "5"], mpi=mpi)
        else:
            plan = relaunch.mpirun_plan(mapping, [str(exe), str(reps)], mpi)
        console.print(plan.line(), soft_wrap=True)
        env = dict(os.environ)
        env.update(plan.env)
        res = subprocess.run(plan.argv, env=env, capture_output=True, text=True, timeout=600)
    line = next((ln for ln in res.stdout.splitlines() if ln.startswith("{")), None)
    if res.returncode != 0 or line is None:
        # the launcher's first words, not its last line: Open MPI frames its messages in lines of
        # dashes, and the error was 'the probe run failed (exit 1): -----...'
        said = [ln.strip() for ln in (res.stderr + "\n" + res.stdout).splitlines() if any(c.isalpha() for c in ln)]
        raise UserError(f"the probe run failed (exit {res.returncode}): {' '.join(said[:2]) if said else 'no output'}")
    raw = json.loads(line)
    result = derive(raw, roles, m)
    result["hosts"] = [m.hosts[m.slot_node[s]] for _, s in roles]
    result["measured"] = datetime.now().isoformat(timespec="seconds")
    result["mpi"] = mpi
    from rankmap.profiler import outputs
    target = out if isinstance(out, outputs.Target) else outputs.target_file(out, "--out", True)
    outputs.write_file(target, json.dumps(result, indent=2, allow_nan=False) + "\n")
    show(result, console)
    console.print(f"level costs written to {out} (use: rankmap map ... --level-costs @{out})")
    return result


def _has_slurm() -> bool:
    try:
        cluster.query(["sinfo", "-h", "-o", "%N"])
        return True
    except UserError:
        return False


def derive(raw: dict, roles: list, m) -> dict:
    pp = raw["pingpong_us"]
    lat, bw, per_byte = {}, {}, {}
    for j, (role, _) in enumerate(roles[1:], 1):
        t = pp[str(j)]
        lat[role] = t["8"]
        bw[role] = BIG / t[str(BIG)] / 1e3                     # GB/s (bytes per us / 1e3)
        per_byte[role] = t[str(BIG)] * 1e3 / BIG                # ns per byte
    eps = 1e-6
    core = per_byte.get("same socket") or per_byte.get("other socket") or next(iter(per_byte.values()))
    pkg = max(per_byte.get("other socket", core) - core, eps)
    inter = per_byte.get("neighbour node")
    costs = {"core": round(core, 6), "package": round(pkg, 6)}
    if inter is not None:
        costs["node"] = round(max(inter - core - pkg, eps), 6)
        if isinstance(m.network, Torus) and "distant node" in per_byte:
            h = int(m.node_hops(np.array([0]), np.array([m.slot_node[roles[-1][1]]]))[0])
            if h > 1:   # each further link: the slope between the neighbour and the distant node
                costs["hop"] = round(max((per_byte["distant node"] - inter) / (h - 1), eps), 6)
    else:
        costs["node"] = round(10 * (core + pkg), 6)      # one node only: nothing measured across
    for lv in m.level_names:
        if lv.startswith("switch"):
            costs[lv] = costs["node"]
    notes = []
    if "other socket" not in per_byte:
        notes.append("package: not measured (the probe's nodes have one package): it costs nothing extra")
    if inter is None:
        notes.append("node: not measured (the probe ran on one node): 10 x the cost inside a node; probe two nodes "
                     "(--nodes) to measure it")
    L = lat.get("neighbour node", lat.get("other socket", next(iter(lat.values()))))
    o, g = raw["logp"]["o_us"], raw["logp"]["g_us"]
    ex = raw["exchange_1MiB_us"]
    return {
        "level_costs": costs,
        "unit": "ns per byte at 4 MiB (inverse bandwidth), per level, accumulated top to bottom (TreeMatch)",
        "latency_us": lat, "bandwidth_GBps": {k: round(v, 3) for k, v in bw.items()},
        "logp": {"o_us": o, "g_us": g, "L_us": max(L - 2 * o, 0.0)},
        "gamma_ns_per_byte": raw["gamma_ns_per_byte"],
        "exchange_1MiB_us": dict(ex, ratio_all_at_once_to_in_turn=round(ex["all_at_once"] / ex["in_turn"], 3)
                                 if ex["in_turn"] else None),
        "placement": [r for r, _ in roles],
        # a cost no pair of ranks measured is said so, in the file and on the screen: a one-node
        # probe's node cost (10 x a node's own) was written as if measured
        **({"notes": notes} if notes else {}),
    }


def show(r: dict, console: Console) -> None:
    t = Table(title="rankmap probe", show_edge=False)
    for c in ("between rank 0 and", "latency (us)", "bandwidth (GB/s)"):
        t.add_column(c, justify="right")
    for role, l in r["latency_us"].items():
        t.add_row(role, f"{l:.2f}", f"{r['bandwidth_GBps'][role]:.2f}")
    console.print(t)
    lp = r["logp"]
    console.print(f"LogP: o = {lp['o_us']:.3f} us, g = {lp['g_us']:.3f} us, L = {lp['L_us']:.3f} us; "
                  f"reduction gamma = {r['gamma_ns_per_byte']:.4f} ns/byte")
    ex = r["exchange_1MiB_us"]
    verdict = "slower" if (ex["ratio_all_at_once_to_in_turn"] or 0) > 1.05 else \
        "faster" if (ex["ratio_all_at_once_to_in_turn"] or 1) < 0.95 else "about as fast"
    console.print(f"1 MiB exchanges with every rank: all at once {ex['all_at_once']:.1f} us, in turn "
                  f"{ex['in_turn']:.1f} us: all at once is {verdict} here (ratio {ex['ratio_all_at_once_to_in_turn']})")
    console.print("level costs (ns/byte): " + ", ".join(f"{k} {v:g}" for k, v in r["level_costs"].items()))
    for note in r.get("notes", []):
        console.print(f"  note: {note}")
