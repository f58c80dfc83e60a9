"""The maintainer of asynchronous views: drains the update queue in a background thread
of a deployment (``db.start_maintainer()``) or in a process of its own (``piql maintain``).

Each round claims at most ``batch`` entries in the policy's order and applies them in one
transaction (``runtime.update_queue.drain``); with nothing queued it sleeps ``idle``
seconds. Several maintainers may run on one store: their claims never take an entry twice.
"""
from __future__ import annotations

import threading
from typing import Callable, Optional

from piql.runtime.errors import DeploymentError

DEFAULT_IDLE = 0.05  # seconds a maintainer sleeps when the queue is empty


class BackgroundMaintainer:
    """A thread calling ``drain_batch`` (a deployment's ``drain(limit=batch)``) until
    :meth:`stop`; ``applied`` counts the entries, ``error`` keeps what stopped it."""

    def __init__(self, drain_batch: Callable[[], int], idle: float = DEFAULT_IDLE) -> None:
        if not idle > 0:
            raise DeploymentError("the maintainer's idle period must be positive")
        self.drain_batch, self.idle = drain_batch, idle
        self.applied = 0
        self.error: Optional[BaseException] = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="piql-maintainer", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                done = self.drain_batch()
            except BaseException as err:  # kept for the caller; the maintainer stops
                self.error = err
                return
            self.applied += done
            if not done:
                self._stop.wait(self.idle)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop after the current batch (committed or not begun: never half applied)."""
        self._stop.set()
        self._thread.join()
