"""What every benchmark shares: the machine it ran on, medians and percentiles, output files."""
from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import IO, Any, Sequence


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


class Progress:
    """Where a benchmark says how far it is (benchmarks run for minutes).

    On a terminal, a tqdm bar per step that redraws itself in place; anywhere else (a log,
    CI, a pipe) plain lines, one when a step starts and one when it ends with the time it
    took, and a line per quarter of a long step: no carriage returns or escape codes in a
    log. ``stream`` is standard error unless given."""

    QUARTERS = 4

    def __init__(self, stream: IO[str] | None = None) -> None:
        self._stream = stream
        self._label: str | None = None
        self._bar: Any = None
        self._started = 0.0
        self._quarter = 0

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    def terminal(self) -> bool:
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    def __call__(self, label: str, done: int, total: int) -> None:
        """Step ``label`` has done ``done`` of ``total``; done >= total ends it."""
        if label != self._label:
            self._start(label, total)
        if self._bar is not None:
            self._bar.update(done - self._bar.n)
        else:
            quarter = self.QUARTERS * done // max(total, 1)
            if 0 < quarter < self.QUARTERS and quarter > self._quarter:
                self._line(f"{label}: {done}/{total}")
            self._quarter = max(self._quarter, quarter)
        if done >= total:
            self._finish(total)

    def _start(self, label: str, total: int) -> None:
        self._finish(None)
        self._label, self._started, self._quarter = label, time.perf_counter(), 0
        if self.terminal():
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=label, file=self.stream, leave=True,
                             dynamic_ncols=True, mininterval=0.2)
        else:
            self._line(f"{label}: started ({total} steps)")

    def _finish(self, total: int | None) -> None:
        """End the current step (``total`` None: it was left unfinished)."""
        if self._label is None:
            return
        if self._bar is not None:
            self._bar.close()
        elif total is not None:
            self._line(f"{self._label}: done {total}/{total} in "
                       f"{time.perf_counter() - self._started:.1f} s")
        self._label, self._bar = None, None

    def _line(self, text: str) -> None:
        print(text, file=self.stream, flush=True)


progress = Progress()
"""The benchmarks' progress: ``progress(label, done, total)``."""
