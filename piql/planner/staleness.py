"""The staleness bound of an asynchronous view, derived from the plan alone.

The update queue (``runtime.update_queue``) holds at most one entry per update key (a
changed base row's table and primary key), so its length ``N`` is at most the number of
distinct rows written, to any table with asynchronous views, since those rows were last
drained. An entry holds a net change: at most one old row out and one new row in, so
applying it costs at most the update's drain bound of its table (``WriteBound.drain_bound``
of the UPDATE event: every deferred delete rule, then every deferred insert rule).

Under IN-PLACE (the default drain order) an entry keeps the place of its first arrival
and new entries go to the back, so once a change is queued at most the ``N - 1`` entries
ahead of it are applied before it: the change is applied after at most ``N`` entries, so
at most ``N × entry_ops`` operations of maintainer work (``entry_ops`` the largest update
drain bound of any table with async views), plus the maintainer's idle wait. That is the
bound, in operations, of both the view's staleness and of a drain of the whole queue
after a burst. UQ-FIFO moves a superseded entry to the back and LINECUTTING lets slow
updaters cut in front again and again, so neither bounds one key's wait in entries
(UpStream §5): no bound is derived for them. The number ``N`` depends on the workload,
not on the plan, so the bound is stated per distinct written row.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.planner.views import ViewDef, WriteEvent
from piql.planner.write_bounds import WriteBound
from piql.query_block import MaintenanceMode


@dataclass(frozen=True)
class StalenessBound:
    """How long (in maintainer operations) a queued change of ``view`` waits at most."""

    view: str
    tables: tuple[str, ...]  # the tables whose queued changes the view's rules apply
    own_entry_ops: int  # ops of this view's rules for one entry (its update, net change)
    entry_ops: int  # ops of any one queued entry, whatever table (every async view's rules)

    def in_place_ops(self, distinct_keys: int) -> int:
        """The maintainer ops before a change is applied under IN-PLACE, with
        ``distinct_keys`` rows pending: the entries ahead of it and its own."""
        return distinct_keys * self.entry_ops

    def to_json(self) -> dict:
        """The ``staleness`` field of the view's entry in ``lint --format json``."""
        return {"tables": list(self.tables),
                "queue_entries_per_key": 1, "own_entry_ops_bound": self.own_entry_ops,
                "entry_ops_bound": self.entry_ops,
                "in_place_ops_bound_per_distinct_key": self.entry_ops,
                "fifo_bounded": False, "linecutting_bounded": False}


def staleness_bounds(views: tuple[ViewDef, ...], writes: tuple[WriteBound, ...]
                     ) -> tuple[StalenessBound, ...]:
    """One bound per asynchronous view of the plan (none for a plan without them)."""
    updates = [w for w in writes if w.event is WriteEvent.UPDATE and w.deferred]
    entry_ops = max((w.drain_bound for w in updates), default=0)
    found = []
    for view in views:
        if view.maintenance is not MaintenanceMode.ASYNC:
            continue
        tables = tuple(dict.fromkeys(rule.table for rule in view.rules))
        own = max((sum(rule.ops_bound for rule in view.rules
                       if rule.table.lower() == table.lower()
                       and rule.event in (WriteEvent.INSERT, WriteEvent.DELETE))
                   for table in tables), default=0)
        found.append(StalenessBound(view.name, tables, own, entry_ops))
    return tuple(found)
