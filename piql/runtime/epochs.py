"""Dirty epochs: the time windows of SI-3 periodic views a refresh must recompute.

A refresh recomputes the current and the previous epoch of a time window, and every
older epoch a write reached since the last refresh (late data). Every staging write,
bulk load, repair, and write to a relation the window joins marks the epochs it touches
in the store (``Store.mark_epochs``); a refresh reads and clears them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Iterator

from piql.planner.trigger_rules import time_windows
from piql.planner.views import ViewDef
from piql.runtime import sqlvalues
from piql.runtime.store import Store


@dataclass(frozen=True)
class EpochWindow:
    """A time-window periodic view as its staging writes see it: which epoch a row is in."""

    view: str
    column: str
    width: int

    def epoch(self, row: dict[str, Any]) -> int | None:
        return sqlvalues.epoch(row.get(self.column), self.width)


def epoch_windows(views: Iterable[ViewDef]) -> dict[str, list[EpochWindow]]:
    """Per staging view: the time-window periodic views refreshed from it."""
    return {staging: [EpochWindow(w.view, w.column, w.width) for w in windows]
            for staging, windows in time_windows(tuple(views)).items()}


def mark_epochs(store: Store, windows: list[EpochWindow], rows: Iterable[dict[str, Any]]) -> None:
    """Record the epochs staging rows fall in, for the next refresh. Bookkeeping beside the
    write (one keyed upsert per window), so it is outside the counted operations."""
    store.mark_epochs(epoch_marks(windows, rows))


def epoch_marks(windows: list[EpochWindow],
                rows: Iterable[dict[str, Any]]) -> Iterator[tuple[str, int]]:
    """(view, epoch) for every window and row that falls in an epoch of it."""
    return ((w.view, e) for row in rows for w in windows if (e := w.epoch(row)) is not None)
