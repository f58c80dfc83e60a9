"""A SQLite store's write-ahead log checkpointed in a background thread, off the write path.

In WAL mode a commit appends the pages it changed to the log; a *checkpoint* copies them
back into the database file (with an fsync of each). SQLite runs one automatically in
the connection whose commit takes the log past ``wal_autocheckpoint`` pages (1,000 by
default), so one write in every few dozen maintained writes paid for it: 5-20 ms where
the write alone takes 2 ms, and more at larger scales, whose 1,000 pages lie further
apart in a larger file (measured on TPC-W: the checkpoints were most of BuyConfirm's
p99 samples, docs/benchmarks.md).

:class:`BackgroundCheckpoints` is the thread: every ``every`` seconds it runs the
store's ``work`` (``SQLiteStore``: a PASSIVE checkpoint on a connection of its own, when
another connection committed since the last one). A PASSIVE checkpoint waits for no one
and no writer waits for it: writers append to the log while it copies. The writer's own
automatic checkpoint stays, at a higher threshold, as a backstop for a log the thread
cannot keep small (writes faster than it copies).
"""
from __future__ import annotations

from typing import Callable

from piql.runtime.periodic import PeriodicThread

# seconds between two background checkpoints (if anything was written). Each ends with an
# fsync of the database file, which stalls the writes that run meanwhile: at 4 a second,
# TPC-W's short writes (ShoppingCart, CustomerRegistration: 0.2 ms) had their p99 double at
# the larger scale, whose checkpoints are longer; at 1 a second, no interaction's did
CHECKPOINT_EVERY = 1.0
# the writer's own automatic checkpoint (pages in the log), kept as a backstop: four
# times SQLite's default, under the 4,096 frames a reader's log index looks up in one table
WRITER_AUTOCHECKPOINT = 4000
# passes of one background checkpoint at most, while writes during a pass leave a tail
CATCH_UP = 4


class BackgroundCheckpoints(PeriodicThread):
    """A daemon thread calling ``work`` every ``every`` seconds until :meth:`stop` (which
    waits for the checkpoint in progress, if any, not for the next tick). ``work``
    handles its own errors (a failed checkpoint is tried again on the next tick); an
    exception escaping it is kept in ``error`` and stops the thread, leaving the writer's
    own automatic checkpoint to do the job."""

    def __init__(self, work: Callable[[], None], every: float = CHECKPOINT_EVERY) -> None:
        if not every > 0:
            raise ValueError("the checkpoint period must be positive")
        self.work = work
        super().__init__("piql-wal-checkpoints", every, first_pause=every)

    def step(self) -> bool:
        self.work()
        return False  # the next one a period later
