"""Refresh of SI-3 periodic views (paper §6.2).

Every staging partition contributes at most its bounded share, read in the
TEMPORAL order the partition is clustered by: its first n tuples for a tuple
window, its tuples of the refreshed epoch for a time window (the current and
the previous epoch are refreshed). The shares are merged, the rest of the
query runs on them, and the periodic view is replaced in one transaction.

The shares are read either from the serving store itself, partition by
partition with operation counts (``engine=None``), or by an engine (DuckDB,
Spark) running the same SQL over a copy of the staging view.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from piql.planner.views import ViewDef
from piql.query import Epoch, OrderItem, QueryBlock, SelectItem
from piql.runtime.errors import BoundExceeded
from piql.runtime.evaluate import Binding, finish, sort_rows
from piql.runtime.store import Store


@dataclass(frozen=True)
class RefreshReport:
    view: str
    partitions: int
    max_partition_reads: int  # the serial work of the busiest partition
    per_partition_bound: int
    rows: int
    seconds: float
    engine: str = "store"


def refresh_view(store: Store, view: ViewDef, staging: ViewDef, partitions: int,
                 now_ms: int | None = None, strict: bool = True, engine=None) -> RefreshReport:
    """Recompute ``view`` from its staging view and replace it atomically."""
    started = time.perf_counter()
    window = window_block(view.definition, staging.name)
    source = _StoreShares(store, staging, view, partitions) if engine is None else \
        _EngineShares(engine, store, staging, view)
    if view.extra["window"] == "tuple":
        result, busiest = source.tuple_window(window)
        epochs = {None: ranked_tuples(view, result)}
    else:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        width = next(p.left.width for p in window.predicates if isinstance(p.left, Epoch))
        current = now - now % width
        epochs, busiest = {}, 0
        for epoch in (current - width, current):
            values, reads = source.time_window(window, epoch)
            epochs[epoch] = ranked_groups(view, window, values)
            busiest = max(busiest, reads)
    bound = view.extra["per_partition_ops_bound"]
    if strict and busiest > bound:
        raise BoundExceeded(f"refresh of {view.name} read {busiest} tuples from one partition; "
                            f"its bound is {bound}")
    store.begin()
    try:
        for epoch, rows in epochs.items():
            if epoch is None:
                store.replace_rows(view.name, rows)
            else:
                store.replace_rows(view.name, rows, '"epoch" = ?', [epoch])
        store.commit()
    except BaseException:
        store.rollback()
        raise
    written = sum(len(rows) for rows in epochs.values())
    return RefreshReport(view.name, partitions, busiest, bound, written,
                         time.perf_counter() - started, getattr(engine, "name", "store"))


def window_block(definition: QueryBlock, staging: str) -> QueryBlock:
    """The block of the periodic view's query that reads the staging view."""
    if definition.relations[0].table == staging:
        return definition
    return definition.relations[0].subquery  # type: ignore[return-value]


def unlimited(block: QueryBlock) -> QueryBlock:
    """``block`` without ORDER BY and LIMIT, its order expressions kept as hidden columns,
    so results can be ranked per epoch (and per parameter value) afterwards."""
    hidden = tuple(SelectItem(f"_order{i}", o.expr) for i, o in enumerate(block.order_by))
    return replace(block, select=block.select + hidden, order_by=(), limit=None)


def ranked_tuples(view: ViewDef, result: list[tuple]) -> list[tuple]:
    """A tuple window's result, numbered when the view keeps its order in ``rank``."""
    ranked = view.columns[0].name == "rank"
    return [((rank,) if ranked else ()) + tuple(row) for rank, row in enumerate(result, start=1)]


def ranked_groups(view: ViewDef, block: QueryBlock, values: list[dict[str, Any]]) -> list[tuple]:
    """Per (epoch, parameter columns): the rows in the query's order, numbered, at most LIMIT."""
    key = [c.name for c in view.key if c.name != "rank"]
    groups: dict[tuple, list[dict]] = {}
    for row in values:
        groups.setdefault(tuple(row[k] for k in key), []).append(row)
    order = tuple(OrderItem(f"_order{i}", o.desc) for i, o in enumerate(block.order_by))  # type: ignore
    columns = [c.name for c in view.columns]
    rows: list[tuple] = []
    for members in groups.values():
        ordered = sort_rows(members, order) if order else members
        for rank, row in enumerate(ordered[: block.limit or len(ordered)], start=1):
            rows.append(tuple((row | {"rank": rank})[c] for c in columns))
    return rows


class _StoreShares:
    """Reads every partition's share from the serving store, counting each partition."""

    def __init__(self, store: Store, staging: ViewDef, view: ViewDef, partitions: int) -> None:
        self.store, self.staging, self.view, self.partitions = store, staging, view, partitions
        self.column = view.extra["order_by"][0]

    def _read(self, partition: int, ranges=(), limit=None, descending=False) -> tuple[list[Binding], int]:
        before = self.store.counter.reads
        shape = self.store.shapes[self.staging.name]
        rows = self.store.scan(self.staging.name, shape.columns, [("partition", partition)], ranges,
                               order=(self.column,), descending=descending, limit=limit)
        bindings = [{(self.staging.name, c): v for c, v in zip(shape.columns, row)} for row in rows]
        return bindings, self.store.counter.reads - before

    def tuple_window(self, window: QueryBlock) -> tuple[list[tuple], int]:
        merged: list[Binding] = []
        busiest = 0
        for partition in range(self.partitions):
            share, reads = self._read(partition, limit=window.limit,
                                      descending=window.order_by[0].desc)
            merged += share
            busiest = max(busiest, reads)
        newest = finish(window, merged, {})
        definition = self.view.definition
        if definition.relations[0].subquery is None:
            return newest, busiest
        alias = definition.relations[0].alias
        names = [i.name for i in window.select]
        outer = [{(alias, n): v for n, v in zip(names, row)} for row in newest]
        return finish(definition, outer, {}), busiest

    def time_window(self, window: QueryBlock, epoch: int) -> tuple[list[dict], int]:
        epoch_pred = next(p for p in window.predicates if isinstance(p.left, Epoch))
        width = epoch_pred.left.width  # type: ignore[union-attr]
        merged: list[Binding] = []
        busiest = 0
        for partition in range(self.partitions):
            share, reads = self._read(partition, ranges=((self.column, ">=", epoch),
                                                         (self.column, "<", epoch + width)))
            merged += share
            busiest = max(busiest, reads)
        block = unlimited(window)
        names = [i.name for i in block.select]
        rows = finish(block, merged, {epoch_pred.right.name: epoch})  # type: ignore[union-attr]
        return [dict(zip(names, row)) for row in rows], busiest


class _EngineShares:
    """Lets an engine read every partition's share and run the query on the merge."""

    def __init__(self, engine, store: Store, staging: ViewDef, view: ViewDef) -> None:
        self.engine, self.store, self.staging, self.view = engine, store, staging, view

    def tuple_window(self, window: QueryBlock) -> tuple[list[tuple], int]:
        from piql.engines.jobs import window_rows

        return window_rows(self.engine, self.store, self.view, self.staging, window, None)

    def time_window(self, window: QueryBlock, epoch: int) -> tuple[list[dict], int]:
        from piql.engines.jobs import window_rows

        block = unlimited(window)
        view = replace(self.view, definition=block)
        rows, busiest = window_rows(self.engine, self.store, view, self.staging, window, epoch)
        names = [i.name for i in block.select]
        return [dict(zip(names, row)) for row in rows], busiest
