"""The update queue of asynchronous views, kept in the store (issue 20; UpStream §4-5).

A write that reaches an asynchronous view (``-- maintenance: async``) does its checks, the
base row, and one enqueue here instead of the view's delta rules: the changed row, keyed
by its table and primary key (its *update key*). The queue is a table of the store, so an
entry commits or rolls back with the write that made it, and survives a crash; a refused
write enqueues nothing.

The queue is lossy by key (``planner.update_queues``): a newer change of a queued row
coalesces with the queued one into its net effect (an insert then a delete cancel, an
update chain becomes one delete of the first old row and one insert of the last new one),
so the table never holds more than one entry per row key. Where the coalesced entry goes
is the policy: IN-PLACE keeps the first change's place, FIFO moves it to the back.
Positions are arrival times (ns), so a new entry goes to the back without reading the
queue's tail.

:func:`drain` applies the entries in order, each in its own transaction with the
deletion of the entry, so a crash mid-drain loses nothing and applies nothing twice.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Optional

from piql.catalog import Table
from piql.planner.application import Plan
from piql.planner.update_queues import QueuePolicy, RowChange, net_change
from piql.planner.views import ViewDef
from piql.query_block import MaintenanceMode
from piql.runtime.store import Store, TableShape

if TYPE_CHECKING:
    from piql.runtime.writes import Maintainer

QUEUE_TABLE = "_piql_update_queue"  # under the prefix piql keeps for itself
COLUMNS = ("base", "row_key", "position", "before_row", "after_row", "first_enqueued",
           "last_enqueued", "updates")
TYPES = ("TEXT", "TEXT", "BIGINT", "TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT")
KEY = ("base", "row_key")
# The policies a store queue keeps (LINECUTTING needs each key's last arrival after its
# entry is gone; the append queue, one entry per update: both still to come).
STORE_POLICIES = (QueuePolicy.IN_PLACE, QueuePolicy.FIFO)
DRAIN_BATCH = 100  # entries read at once by a drain (each is applied in its own transaction)


def has_async_views(plan: Plan) -> bool:
    return any(v.maintenance is MaintenanceMode.ASYNC for v in plan.views)


def queue_shapes(plan: Plan) -> list[TableShape]:
    """The queue table, for a plan with asynchronous views (none otherwise, so a plan
    without them is installed, and fingerprinted, as before)."""
    return [TableShape(QUEUE_TABLE, COLUMNS, KEY, TYPES)] if has_async_views(plan) else []


@dataclass(frozen=True)
class QueuedChange:
    """One entry: the net change of one base row since it was first enqueued."""

    base: str
    row_key: str
    position: int
    change: RowChange  # rows as tuples in the table's column order
    first_enqueued: int  # ns
    last_enqueued: int
    updates: int

    def staleness_ms(self, now_ns: int) -> float:
        """Queue staleness of this row key (UpStream §5.1): age of its oldest pending change."""
        return max(0, now_ns - self.first_enqueued) / 1e6


class StoreQueue:
    """The update queue table of one store, under one policy."""

    def __init__(self, store: Store, policy: QueuePolicy = QueuePolicy.IN_PLACE,
                 clock: Callable[[], int] = time.time_ns) -> None:
        if policy not in STORE_POLICIES:
            raise ValueError(f"the store's update queue keeps the policies "
                             f"{', '.join(p.value for p in STORE_POLICIES)}, not {policy.value}")
        self.store = store
        self.policy = policy
        self.clock = clock

    def enqueue(self, table: Table, before: Optional[dict[str, Any]],
                after: Optional[dict[str, Any]]) -> None:
        """Queue one change of a row of ``table`` (None: absent), coalesced with the queued
        one of the same key: a lookup, and at most one delete and one insert
        (``planner.write_bounds.ENQUEUE_OPS``)."""
        row = after if after is not None else before
        assert row is not None
        key = {"base": table.name, "row_key": _encode([row[c] for c in table.primary_key])}
        change = RowChange(_values(table, before), _values(table, after))
        now = self.clock()
        found = self.store.get(QUEUE_TABLE, key)
        if found is None:
            self._write(QueuedChange(table.name, key["row_key"], now, change, now, now, 1))
            return
        queued = _decode(found)
        self.store.delete(QUEUE_TABLE, key)
        combined = net_change(queued.change, change)
        if combined is None:
            return
        position = queued.position if self.policy is QueuePolicy.IN_PLACE else now
        self._write(QueuedChange(table.name, key["row_key"], position, combined,
                                 queued.first_enqueued, now, queued.updates + 1))

    def _write(self, entry: QueuedChange) -> None:
        self.store.insert(QUEUE_TABLE, dict(zip(COLUMNS, (
            entry.base, entry.row_key, entry.position, _encode(entry.change.before),
            _encode(entry.change.after), entry.first_enqueued, entry.last_enqueued,
            entry.updates))))

    def head(self, limit: int = DRAIN_BATCH) -> list[QueuedChange]:
        """The first ``limit`` entries in service order (set-oriented, not counted)."""
        rows = self.store.sql(f"SELECT {', '.join(self._q(c) for c in COLUMNS)} FROM "
                              f"{self._q(QUEUE_TABLE)} ORDER BY {self._q('position')}, "
                              f"{self._q('base')}, {self._q('row_key')} LIMIT {int(limit)}")
        return [_decode(r) for r in rows]

    def __len__(self) -> int:
        return self.store.sql(f"SELECT COUNT(*) FROM {self._q(QUEUE_TABLE)}")[0][0]

    def take(self, entry: QueuedChange) -> QueuedChange | None:
        """Inside a transaction: the entry of ``entry``'s key as it is now (a newer change
        may have coalesced into it; another drainer may have taken it), removed."""
        key = {"base": entry.base, "row_key": entry.row_key}
        found = self.store.get(QUEUE_TABLE, key)
        if found is None:
            return None
        self.store.delete(QUEUE_TABLE, key)
        return _decode(found)

    def forget(self, view: ViewDef) -> None:
        """``view`` was rebuilt from the base tables (a bulk load, ``build_views``), which
        already hold every queued change of the tables it reads: drop those entries, so a
        drain does not apply them twice. Every asynchronous view reading such a table is
        rebuilt in the same transaction (each reads one table, ``planner.async_views``)."""
        for relation in view.definition.relations:
            if relation.table:
                self.store.replace_rows(QUEUE_TABLE, [], {"base": relation.table})

    def _q(self, name: str) -> str:
        from piql import sqlgen

        return sqlgen.identifier(name, self.store.dialect)


def drain(maintainer: "Maintainer", queue: StoreQueue,
          in_transaction: Callable[[Callable[[], Any]], Any]) -> int:
    """Apply every pending entry in service order, each with its removal in one
    transaction (``in_transaction``); returns how many entries were applied."""
    applied = 0
    while True:
        batch = queue.head()
        if not batch:
            return applied
        for entry in batch:
            if in_transaction(lambda: _apply(maintainer, queue, entry)):
                applied += 1


def _apply(maintainer: "Maintainer", queue: StoreQueue, entry: QueuedChange) -> bool:
    current = queue.take(entry)
    if current is None:
        return False
    table = maintainer.catalog.table(current.base)
    assert table is not None, current.base
    maintainer.apply_deferred(table, _row(table, current.change.before),
                              _row(table, current.change.after))
    return True


# -- rows as text ---------------------------------------------------------------------

def _values(table: Table, row: Optional[dict[str, Any]]) -> Optional[tuple[Any, ...]]:
    return None if row is None else tuple(row[c] for c in table.column_names)


def _row(table: Table, values: Optional[tuple[Any, ...]]) -> Optional[dict[str, Any]]:
    return None if values is None else dict(zip(table.column_names, values))


def _encode(values: Optional[Any]) -> Optional[str]:
    """Values as JSON; BLOBs and exact decimals tagged so they come back as they were
    (floats round-trip exactly: JSON keeps their shortest repr)."""
    if values is None:
        return None
    return json.dumps([_tagged(v) for v in values], separators=(",", ":"))


def _tagged(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blob": bytes(value).hex()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        if "blob" in value:
            return bytes.fromhex(value["blob"])
        return Decimal(value["decimal"])
    return value


def _decoded(text: Optional[str]) -> Optional[tuple[Any, ...]]:
    return None if text is None else tuple(_untagged(v) for v in json.loads(text))


def _decode(row: tuple) -> QueuedChange:
    base, row_key, position, before, after, first, last, updates = row
    return QueuedChange(base, row_key, position, RowChange(_decoded(before), _decoded(after)),
                        first, last, updates)
