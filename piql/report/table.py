"""Plain text tables for terminal output."""
from __future__ import annotations

from typing import Any, Sequence


def render(headers: Sequence[str], rows: Sequence[Sequence[Any]], limit: int | None = None) -> str:
    shown = list(rows if limit is None else rows[:limit])
    cells = [[str(h) for h in headers]] + [["NULL" if v is None else str(v) for v in r] for r in shown]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    if limit is not None and len(rows) > limit:
        lines.append(f"... {len(rows) - limit} more rows")
    return "\n".join(lines)
