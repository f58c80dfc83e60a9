"""In-process refresh of SI-3 periodic views (paper §6.2).

One task per staging partition reads at most its bounded share, in the
TEMPORAL order the partition is clustered by; the results are merged and the
rest of the query runs on the merged rows; the periodic view is replaced in
one transaction. Tuple windows read each partition's first n tuples; time
windows read each partition's tuples of the current and the previous epoch.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Callable

from piql.planner.views import ViewDef
from piql.query import Attr, Epoch, OrderItem, Param, QueryBlock, SelectItem
from piql.runtime.errors import BoundExceeded
from piql.runtime.evaluate import Binding, finish, sort_rows
from piql.runtime.store import Store


@dataclass(frozen=True)
class RefreshReport:
    view: str
    partitions: int
    max_partition_reads: int  # the serial work of the slowest partition
    per_partition_bound: int
    rows: int
    seconds: float


PartitionReader = Callable[[int], list[tuple]]


def refresh_view(store: Store, view: ViewDef, staging: ViewDef, partitions: int,
                 now_ms: int | None = None, strict: bool = True) -> RefreshReport:
    """Recompute ``view`` from its staging view and replace it atomically."""
    started = time.perf_counter()
    window = _window_block(view.definition, staging.name)
    column = view.extra["order_by"][0]
    bound = view.extra["per_partition_ops_bound"]
    reads: list[int] = []

    def read(partition: int, ranges=(), limit=None, descending=False) -> list[Binding]:
        before = store.counter.reads
        shape = store.shapes[staging.name]
        rows = store.scan(staging.name, shape.columns, [("partition", partition)], ranges,
                          order=(column,), descending=descending, limit=limit)
        reads.append(store.counter.reads - before)
        return [{(staging.name, c): v for c, v in zip(shape.columns, row)} for row in rows]

    store.begin()
    try:
        if window.limit is not None:  # a tuple window
            rows = _tuple_window(view, window, partitions, read)
            store.replace_rows(view.name, rows)
        else:
            rows = _time_window(store, view, window, partitions, read, now_ms)
        if strict and max(reads, default=0) > bound:
            raise BoundExceeded(f"refresh of {view.name} read {max(reads)} tuples from one "
                                f"partition; its bound is {bound}")
        store.commit()
    except BaseException:
        store.rollback()
        raise
    return RefreshReport(view.name, partitions, max(reads, default=0), bound, len(rows),
                         time.perf_counter() - started)


def _window_block(definition: QueryBlock, staging: str) -> QueryBlock:
    if definition.relations[0].table == staging:
        return definition
    return definition.relations[0].subquery  # type: ignore[return-value]


def _tuple_window(view: ViewDef, window: QueryBlock, partitions: int, read) -> list[tuple]:
    descending = window.order_by[0].desc
    merged: list[Binding] = []
    for partition in range(partitions):
        merged += read(partition, limit=window.limit, descending=descending)
    newest = finish(window, merged, {})
    definition = view.definition
    if definition.relations[0].subquery is not None:
        alias = definition.relations[0].alias
        names = [i.name for i in window.select]
        outer = [{(alias, n): v for n, v in zip(names, row)} for row in newest]
        result = finish(definition, outer, {})
    else:
        result = newest
    ranked = view.columns[0].name == "rank"
    return [((rank,) if ranked else ()) + row for rank, row in enumerate(result, start=1)]


def _time_window(store: Store, view: ViewDef, block: QueryBlock, partitions: int, read,
                 now_ms: int | None) -> list[tuple]:
    epoch_pred = next(p for p in block.predicates if isinstance(p.left, Epoch))
    width = epoch_pred.left.width  # type: ignore[union-attr]
    param = epoch_pred.right.name  # type: ignore[union-attr]
    column = epoch_pred.left.attr.column  # type: ignore[union-attr]
    now = int(time.time() * 1000) if now_ms is None else now_ms
    current = now - now % width
    written: list[tuple] = []
    for epoch in (current - width, current):
        merged: list[Binding] = []
        for partition in range(partitions):
            merged += read(partition, ranges=((column, ">=", epoch), (column, "<", epoch + width)))
        rows = _ranked_groups(view, block, merged, {param: epoch})
        store.replace_rows(view.name, rows, '"epoch" = ?', [epoch])
        written += rows
    return written


def _ranked_groups(view: ViewDef, block: QueryBlock, merged: list[Binding],
                   params: dict[str, Any]) -> list[tuple]:
    """Per (epoch, parameter columns): the query's rows in its order, numbered, at most LIMIT."""
    key = [c.name for c in view.key if c.name != "rank"]
    hidden = tuple(SelectItem(f"_order{i}", o.expr) for i, o in enumerate(block.order_by))
    unlimited = replace(block, select=block.select + hidden, order_by=(), limit=None)
    names = [i.name for i in unlimited.select]
    groups: dict[tuple, list[dict]] = {}
    for row in finish(unlimited, merged, params):
        values = dict(zip(names, row))
        groups.setdefault(tuple(values[k] for k in key), []).append(values)
    order = tuple(OrderItem(f"_order{i}", o.desc) for i, o in enumerate(block.order_by))  # type: ignore
    columns = [c.name for c in view.columns]
    rows: list[tuple] = []
    for members in groups.values():
        ordered = sort_rows(members, order) if order else members
        for rank, values in enumerate(ordered[: block.limit or len(ordered)], start=1):
            values["rank"] = rank
            rows.append(tuple(values[c] for c in columns))
    return rows
