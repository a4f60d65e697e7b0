"""The demo's report: PNG figures (traffic heatmap, placement on the torus, link loads) and
one HTML page that shows them with the table of simulated times."""
from __future__ import annotations

import html
from pathlib import Path

import numpy as np

from rankmap.mapper import plots
from rankmap.mapper.metrics import link_loads


def figures(where: Path, traffic, machine, slots: dict[str, np.ndarray]) -> dict[str, list[str]]:
    """PNG files per placement (plus 'traffic'), names relative to `where`."""
    where.mkdir(parents=True, exist_ok=True)
    out = {"traffic": [plots.heatmap(traffic.offdiag(), where / "traffic.png",
                                     f"traffic of {traffic.size} ranks (bytes, rank order)").name]}
    for name, slot in slots.items():
        safe = "".join(c if c.isalnum() else "_" for c in name)
        out[name] = [plots.torus_placement(machine, slot, where / f"placement-{safe}.png", f"{name}: placement").name,
                     plots.torus_loads(machine, link_loads(traffic.offdiag(), machine, slot),
                                       where / f"links-{safe}.png", f"{name}: link loads").name]
    return out


def write_html(path: Path, title: str, intro: list[str], rows: list[dict], figs: dict[str, list[str]],
               notes: list[str]) -> Path:
    e = html.escape
    head = ["placement", "simulated s", "vs block", "communication s", "vs block", "comm share", "hop-bytes",
            "max link load B"]
    block = next((r for r in rows if r["placement"] == "block"), rows[0])
    body = []
    for r in rows:
        body.append("<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in (
            r["placement"], f"{r['simulated_seconds']:.6g}", f"{r['simulated_seconds'] / block['simulated_seconds']:.3f}",
            f"{r['comm_seconds']:.6g}",
            f"{r['comm_seconds'] / block['comm_seconds']:.3f}" if block["comm_seconds"] else "-",
            f"{r['comm_share']:.1%}", f"{r['hop_bytes']:.4g}", f"{r['max_link_load']:.4g}")) + "</tr>")
    gallery = [f"<h2>Traffic</h2><img src='{e(figs['traffic'][0])}' width='480'>"]
    for name, files in figs.items():
        if name == "traffic":
            continue
        gallery.append(f"<h3>{e(name)}</h3>" + "".join(f"<img src='{e(f)}' height='260'>" for f in files))
    page = f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;max-width:1200px;margin:2em auto}} td,th{{padding:2px 10px;text-align:right}}
td:first-child,th:first-child{{text-align:left}} table{{border-collapse:collapse}} tr:nth-child(even){{background:#f3f3f3}}
img{{margin:4px;border:1px solid #ddd}}</style></head><body>
<h1>{e(title)}</h1>
{''.join(f'<p>{e(p)}</p>' for p in intro)}
<table><tr>{''.join(f'<th>{e(h)}</th>' for h in head)}</tr>
{''.join(body)}
</table>
{''.join(f'<p><i>{e(n)}</i></p>' for n in notes)}
{''.join(gallery)}
</body></html>
"""
    path.write_text(page)
    return path
