"""Where the CLI prints: stdout for results, stderr for errors (rich consoles)."""
from __future__ import annotations

import sys

from rich.console import Console

console = Console(highlight=False, width=None if sys.stdout.isatty() else 160)
err_console = Console(stderr=True, highlight=False)
