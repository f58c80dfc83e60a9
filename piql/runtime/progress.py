"""One status line per long step (bulk load, view build, refresh, engine start-up), on a
terminal only: ``piql: loading users ...`` while it runs, then the same line with the time
it took. Silent when standard error is not a terminal, or with ``quiet=True``."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager
from typing import IO, Iterator


class Progress:
    """Writes status lines to ``stream`` (default: standard error) when it is a terminal."""

    def __init__(self, quiet: bool = False, stream: IO[str] | None = None) -> None:
        self.quiet = quiet
        self._stream = stream

    @property
    def stream(self) -> IO[str]:
        return self._stream if self._stream is not None else sys.stderr

    @property
    def enabled(self) -> bool:
        if self.quiet:
            return False
        try:
            return self.stream.isatty()
        except (AttributeError, ValueError):
            return False

    @contextmanager
    def step(self, doing: str) -> Iterator[None]:
        """Show ``doing`` while the block runs; then the time it took (or that it failed)."""
        if not self.enabled:
            yield
            return
        out = self.stream
        out.write(f"\rpiql: {doing} ...")
        out.flush()
        start = time.perf_counter()
        try:
            yield
        except BaseException:
            out.write(f"\rpiql: {doing}: failed after {_seconds(time.perf_counter() - start)}\n")
            out.flush()
            raise
        out.write(f"\rpiql: {doing}: {_seconds(time.perf_counter() - start)}\x1b[K\n")
        out.flush()


def _seconds(elapsed: float) -> str:
    return f"{elapsed * 1000:.0f} ms" if elapsed < 1 else f"{elapsed:.1f} s"
