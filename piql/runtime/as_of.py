"""The applied state of the asynchronous views: base tables without their queued rows.

A join view maintained asynchronously (``planner.async_views``) holds the join of the
state its maintainer has applied, not of the base tables now. For the tables its rules
read (``as_of_tables``) the queue holds inserts only, so that state is the table minus the
rows the queue still holds: :class:`AsOfQueue` is the store as the plan interpreter reads
it (``runtime.executor``), each row a scan of such a table finds looked up in the queue
once and skipped when it is queued. A rule's reads are bounded by its plan, so this
doubles them at most (``planner.async_views.as_of_bound``).
"""
from __future__ import annotations

from typing import Any, Sequence

from piql.runtime.store import Store
from piql.runtime.update_queue import StoreQueue


class AsOfQueue:
    """``store`` read as of ``queue``: scans of its as-of tables skip the queued rows;
    everything else is the store's (writes, counter, shapes)."""

    def __init__(self, store: Store, queue: StoreQueue) -> None:
        self.store = store
        self.queue = queue
        self._keys: dict[str, tuple[str, list[int]]] = {}  # table -> its name, key positions

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    def scan(self, table: str, columns: Sequence[str], *args: Any, **kwargs: Any
             ) -> list[tuple]:
        rows = self.store.scan(table, columns, *args, **kwargs)
        if table.lower() not in self.queue.as_of:
            return rows
        name, positions = self._key(table, columns)
        return [row for row in rows
                if not self.queue.holds(name, [row[i] for i in positions])]

    def _key(self, table: str, columns: Sequence[str]) -> tuple[str, list[int]]:
        found = self._keys.get(table)
        if found is None:
            definition = self.queue.tables[table.lower()]
            found = self._keys[table] = (definition.name, [
                list(columns).index(c) for c in definition.primary_key])
        return found
