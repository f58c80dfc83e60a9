"""The maintainer of asynchronous views: drains the update queue in a background thread
of a deployment (``db.start_maintainer()``) or in a process of its own (``piql maintain``).

Each round claims at most ``batch`` entries in the policy's order and applies them in one
transaction (``runtime.update_queue.drain``); with nothing queued it sleeps ``idle``
seconds. Several maintainers may run on one store: their claims never take an entry twice.
"""
from __future__ import annotations

from typing import Callable

from piql.runtime.errors import DeploymentError
from piql.runtime.periodic import PeriodicThread

DEFAULT_IDLE = 0.05  # seconds a maintainer sleeps when the queue is empty


class BackgroundMaintainer(PeriodicThread):
    """A thread calling ``drain_batch`` (a deployment's ``drain(limit=batch)``) until
    :meth:`stop`, which waits for the current batch (committed or not begun: never half
    applied); ``applied`` counts the entries, ``error`` keeps what stopped it."""

    def __init__(self, drain_batch: Callable[[], int], idle: float = DEFAULT_IDLE) -> None:
        if not idle > 0:
            raise DeploymentError("the maintainer's idle period must be positive")
        self.drain_batch = drain_batch
        self.applied = 0
        super().__init__("piql-maintainer", idle)

    def step(self) -> bool:
        done = self.drain_batch()
        self.applied += done
        return bool(done)
