"""What a mapping will cost before it starts: memory (refused when this host cannot hold it)
and time (announced when it is long, with progress while it runs).

The figures come from whole `rankmap map` runs at 10^6 ranks (bench/parallel_scale.py,
docs/mapper-history.md): peak 1,380 MB for a 3-D stencil (5.9*10^6 nonzeros) and 1,908 MB for 8
random partners per rank (8*10^6), with or without --parallel (1,296 and 1,893 MB), i.e.
about 210-220 bytes per nonzero plus the interpreter. Time (the whole command, 2026-11-28,
bench/mapper_scaling.py's graphs on its tori): random traffic 8.5 s at 10^5 ranks and 96 s at
10^6 (1.1-1.2 x 10^-5 s per nonzero), the 3-D stencil 6.7 s and 35 s (0.6-1.1 x 10^-5; on
one switch, 2.6*10^5 ranks: 10 s). The estimate takes the high end of both, with some
margin (the time constants were 2.5-4 x higher before the mapper's speed-ups, and announced
"about 42 s" for a mapping of 8 s)."""
from __future__ import annotations

import threading
import time
from contextlib import contextmanager

from rankmap.profiler import validate

BYTES_PER_NONZERO = 250
BYTES_PER_RANK = 100
BYTES_PER_SLOT = 120
BASE_BYTES = 150 << 20
SECONDS_PER_NONZERO = 1.2e-5
SECONDS_PER_RANK = 2e-5
ANNOUNCE_SECONDS = 15.0


def estimate(nnz: int, ranks: int, slots: int = 0) -> tuple[float, float]:
    """(seconds, bytes) a mapping of this size takes, at the high end of what was measured."""
    seconds = SECONDS_PER_NONZERO * nnz + SECONDS_PER_RANK * ranks
    need = BASE_BYTES + BYTES_PER_NONZERO * nnz + BYTES_PER_RANK * ranks + BYTES_PER_SLOT * slots
    return seconds, need


def check(nnz: int, ranks: int, slots: int = 0, what: str = "mapping") -> tuple[float, float]:
    """Refuse, before anything is allocated, a mapping this host's free memory cannot hold."""
    seconds, need = estimate(nnz, ranks, slots)
    validate.check_memory(need, f"a {what} of {ranks} ranks and {nnz} communicating pairs")
    return seconds, need


@contextmanager
def progress(console, what: str, seconds: float, time_limit: float | None = None):
    """Announce a long step (expected time, how to cap it) and show its elapsed time while it
    runs (a live status line on a terminal); report how long it took when it was long."""
    if console is None or seconds < ANNOUNCE_SECONDS:
        yield
        return
    cap = f"; --time-limit {time_limit:g} s caps the search" if time_limit else \
        "; --time-limit S caps the search (the result then depends on the machine's speed)"
    console.print(f"[bold]{what}[/bold]: expected about {_human(seconds)}{cap}")
    t0 = time.monotonic()
    stop = threading.Event()
    with console.status(f"{what} ...", spinner="dots") as status:
        def tick():
            while not stop.wait(1.0):
                status.update(f"{what}: {_human(time.monotonic() - t0)} of about {_human(seconds)}")
        th = threading.Thread(target=tick, daemon=True)
        th.start()
        try:
            yield
        finally:
            stop.set()
            th.join()
    console.print(f"{what}: done in {_human(time.monotonic() - t0)}")


def _human(s: float) -> str:
    if s < 90:
        return f"{s:.0f} s"
    if s < 5400:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"
