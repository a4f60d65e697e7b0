"""Text summary of a profile (`rankmap show-profile`)."""
from __future__ import annotations

import numpy as np
from rich.console import Console
from rich.table import Table

from rankmap.profiler.collectives import expand
from rankmap.profiler.rundir import Profile, _ranges


def human_bytes(b: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(b) < 1024 or unit == "TiB":
            return f"{b:.0f} {unit}" if unit == "B" else f"{b:.2f} {unit}"
        b /= 1024
    return f"{b:.2f} TiB"


def top_pairs(profile: Profile, n: int):
    coo = profile.bytes.tocoo()
    if coo.nnz == 0:
        return []
    idx = np.argsort(-coo.data, kind="stable")[:n]
    msgs = profile.msgs
    return [(int(coo.row[i]), int(coo.col[i]), int(coo.data[i]), int(msgs[coo.row[i], coo.col[i]])) for i in idx]


def print_summary(profile: Profile, console: Console, top: int = 10, model: str = "auto", k=None,
                  show_ranks: bool = False) -> None:
    p = profile
    state = "[green]complete[/green]" if p.complete else "[bold red]PARTIAL[/bold red]"
    console.print(f"[bold]Run[/bold] {p.path} (run id {p.run_id}): {state}")
    hosts = sorted({r.hostname for r in p.ranks if r is not None})
    console.print(f"[bold]MPI[/bold] {p.mpi_library}; {p.size} ranks on {len(hosts)} host(s): "
                  f"{', '.join(hosts[:8])}{' ...' if len(hosts) > 8 else ''}")
    if p.run.get("command"):
        secs = p.run.get("seconds")
        console.print(f"[bold]Command[/bold] {' '.join(p.run['command'])} "
                      f"(exit {p.run.get('exit_code')}{f', {secs:.2f} s' if secs is not None else ''})")
    for reason in p.partial_reasons():
        console.print(f"[red]  partial:[/red] {reason}")
    total = int(p.bytes.sum())
    nmsg = int(p.msgs.sum())
    diag = int(p.bytes.diagonal().sum())
    console.print(f"[bold]Point-to-point[/bold] {human_bytes(total)} ({total} B) in {nmsg} messages between "
                  f"{p.bytes.nnz} ordered pairs" + (f"; {human_bytes(diag)} to self" if diag else ""))
    unattr = sum(r.unattributed_bytes for r in p.ranks if r is not None)
    if unattr:
        console.print(f"[yellow]  {human_bytes(unattr)} went to processes outside MPI_COMM_WORLD (not in the matrix)[/yellow]")
    if top and total:
        t = Table(title=f"Top {top} pairs (point-to-point)", show_edge=False)
        for col in ("src", "dst", "bytes", "messages", "share"):
            t.add_column(col, justify="right")
        for s, d, b, m in top_pairs(p, top):
            t.add_row(str(s), str(d), f"{b}", f"{m}", f"{100.0 * b / total:.1f} %")
        console.print(t)
    if p.collectives:
        cb, _, summary = expand(p.collectives, p.size, model, k)
        calls = sum(c.calls for c in p.collectives)
        console.print(f"[bold]Collectives[/bold] {calls} calls in {len(p.collectives)} table rows; "
                      f"modelled with '{model}': {human_bytes(cb.sum())} of pair traffic")
        t = Table(show_edge=False)
        for col in ("communicator", "op", "root", "calls", "bytes", "mean size", "model"):
            t.add_column(col, justify="right")
        algs = {op: alg for (op, alg) in summary}
        for c in sorted(p.collectives, key=lambda c: -c.bytes)[: max(top, 20)]:
            mem = c.members
            comm = f"{len(mem)}: {_ranges(mem.tolist())}" if len(mem) <= 64 else f"{len(mem)} ranks"
            t.add_row(comm, c.op, str(c.root) if c.root >= 0 else "-", str(c.calls), str(c.bytes),
                      human_bytes(c.mean_bytes), algs.get(c.op, "-"))
        console.print(t)
    else:
        console.print("[bold]Collectives[/bold] none recorded")
    if show_ranks or not p.complete:
        t = Table(title="Ranks", show_edge=False)
        for col in ("rank", "host", "pid", "cpu", "affinity at init", "affinity at end", "status"):
            t.add_column(col, justify="right")
        for r in p.ranks:
            if r is None:
                continue
            if not show_ranks and r.status == "finalized":
                continue
            t.add_row(str(r.rank), r.hostname, str(r.pid), str(r.cpu_init), r.affinity_init, r.affinity_end,
                      r.status_text())
        console.print(t)
