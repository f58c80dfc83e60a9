"""A daemon thread doing one piece of work after another, pausing when there was nothing to
do, until it is stopped: the shape of the asynchronous views' maintainer
(``runtime.background``) and of a SQLite store's WAL checkpoints (``runtime.wal_checkpoints``).

The pause is a wait on the thread's stop event, not a sleep: :meth:`PeriodicThread.stop`
returns as soon as the step in progress (if any) ends, never a whole period later.
"""
from __future__ import annotations

import threading
from typing import Optional


class PeriodicThread:
    """Runs :meth:`step` in a daemon thread named ``name`` until :meth:`stop`: again at once
    after a step that did something (returned true), after ``pause`` seconds after one that
    did not; the first step after ``first_pause`` seconds. An exception escaping a step is
    kept in ``error`` and stops the thread."""

    def __init__(self, name: str, pause: float, first_pause: float = 0.0) -> None:
        self.pause = pause
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, args=(first_pause,), name=name,
                                        daemon=True)
        self._thread.start()

    def step(self) -> bool:
        """One piece of work; true when there may be more to do at once."""
        raise NotImplementedError

    def _loop(self, pause: float) -> None:
        while not self._stop.wait(pause):
            try:
                busy = self.step()
            except BaseException as err:  # kept for the caller; the thread stops
                self.error = err
                return
            pause = 0.0 if busy else self.pause

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop after the step in progress, if any, and wait for the thread to end (unless
        called from the thread itself, which then ends after its step)."""
        self._stop.set()
        if threading.current_thread() is not self._thread:
            self._thread.join()
