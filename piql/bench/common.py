"""What every benchmark shares: the machine it ran on, medians and percentiles, output files."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any, Sequence


def machine() -> dict[str, Any]:
    """Where the figures were measured (they mean little without it)."""
    memory = None
    try:
        with open("/proc/meminfo") as info:
            memory = int(next(l for l in info if l.startswith("MemTotal")).split()[1]) // 1024
    except (OSError, StopIteration):
        pass
    return {"platform": platform.platform(), "python": sys.version.split()[0],
            "cpus": os.cpu_count(), "memory_mb": memory,
            "processor": platform.processor() or platform.machine(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S")}


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation, as numpy's default."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def write_json(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document, indent=2) + "\n")
    return path


def pyplot():
    """matplotlib without a display."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(plt, figure, path: Path, dpi: int) -> None:
    """Write a finished matplotlib figure as PNG and free it."""
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=dpi)
    plt.close(figure)


def progress(label: str, done: int, total: int) -> None:
    """A one-line progress bar on stderr (benchmarks run for minutes)."""
    width = 30
    filled = int(width * done / max(total, 1))
    end = "\n" if done >= total else ""
    print(f"\r{label:<40} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}", end=end,
          file=sys.stderr, flush=True)
