"""Refresh of SI-3 periodic views (paper §6.2).

Every staging partition contributes at most its bounded share, read in the
TEMPORAL order the partition is clustered by: its first n tuples for a tuple
window, its tuples of the refreshed epoch for a time window. A time window
refreshes the current and the previous epoch, and every older epoch a write
touched since the last refresh (late data): staging writes record their epoch
in ``DIRTY``. The shares are merged, the rest of the query runs on them, and
the periodic view is replaced in one transaction.

Who reads the shares: Spark tasks, one per partition, when the store is a
file they can open; otherwise the caller, partition by partition, through the
store's counted scans. Who merges and runs the query: the engine (DuckDB,
Spark) or, without one, piql's own evaluator.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, Iterable

from piql import sqlgen
from piql.planner.views import PERIODIC, ViewDef
from piql.planner.window_join import collapse, flat_name, lookup_block, staged_relation
from piql.query import Attr, Epoch, Literal, OrderItem, Param, QueryBlock, Relation, SelectItem
from piql.runtime import sqlvalues
from piql.runtime.errors import BoundExceeded
from piql.runtime.evaluate import finish, sort_rows
from piql.runtime.store import Store, quote


DIRTY = "_piql_dirty_epochs"
DIRTY_DDL = (f"CREATE TABLE IF NOT EXISTS {DIRTY} (view TEXT, epoch INTEGER, "
             "PRIMARY KEY (view, epoch)) WITHOUT ROWID")


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
    found: dict[str, list[EpochWindow]] = {}
    for view in views:
        if view.kind == PERIODIC and view.extra["window"] != "tuple":
            staging = view.extra["staging"]
            width = _epoch(window_block(view.definition, staging)).width
            found.setdefault(staging, []).append(
                EpochWindow(view.name, view.extra["order_by"][0], width))
    return found


def mark_epochs(store: Store, windows: list[EpochWindow], rows: Iterable[dict[str, Any]]) -> None:
    """Record the epochs staging rows fall in, for the next refresh. Bookkeeping beside the
    write (one keyed upsert per window), so it is outside the counted operations."""
    marks = {(w.view, e) for row in rows for w in windows if (e := w.epoch(row)) is not None}
    store.connection.executemany(f"INSERT OR IGNORE INTO {DIRTY} VALUES (?, ?)", sorted(marks))


@dataclass(frozen=True)
class RefreshReport:
    view: str
    partitions: int
    max_partition_reads: int  # the serial work of the busiest partition
    per_partition_bound: int
    rows: int
    seconds: float
    engine: str = "store"


@dataclass(frozen=True)
class Share:
    """What one partition read: its SQL, given to whoever runs the partition's task.

    ``keys`` lists, per relation the share reads (the staged one first, then each
    joined one), the row positions of its key and of the keys before it: the tuples
    a partition read are the distinct values of each, summed (:func:`tuples_read`).
    """

    sql: str
    values: tuple[Any, ...]
    keys: tuple[tuple[int, ...], ...] = ()


def tuples_read(rows: list[tuple], keys: tuple[tuple[int, ...], ...]) -> int:
    """Tuples a partition read: one per row, or for a joined share the distinct tuples of
    every relation along the join (a lookup per staged tuple, then per joined tuple)."""
    if not keys:
        return max(1, len(rows))
    return max(1, sum(len({tuple(row[i] for i in key) for row in rows}) for key in keys))


@dataclass(frozen=True)
class Layout:
    """The merged shares as one table: the staging view's columns, then the columns the
    query reads of each joined relation (``alias__column``)."""

    columns: tuple[str, ...]
    types: tuple[str, ...]
    joined: tuple[tuple[Relation, tuple[str, ...]], ...]  # relation, columns it returns


def layout(store: Store, staging: str, window: QueryBlock) -> Layout:
    """How the shares of ``window`` are laid out: the staging view's columns, then each
    joined relation's key and the columns the query reads of it."""
    shape = store.shapes[staging]
    columns, types = list(shape.columns), list(shape.types or ("",) * len(shape.columns))
    joined = []
    read = lookup_block(window, staged_relation(window, staging).alias).select
    for relation in window.relations:
        if relation.table == staging:
            continue
        table = store.shapes[relation.table]  # type: ignore[index]
        wanted = [i.expr.column for i in read if i.expr.alias == relation.alias]  # type: ignore[union-attr]
        own = tuple(dict.fromkeys(list(table.key) + wanted))
        joined.append((relation, own))
        for column in own:
            columns.append(flat_name(Attr(relation.alias, column)))
            types.append(table.types[table.columns.index(column)] if table.types else "")
    return Layout(tuple(columns), tuple(types), tuple(joined))


def refresh_view(store: Store, view: ViewDef, staging: ViewDef, partitions: int,
                 now_ms: int | None = None, strict: bool = True, engine=None) -> RefreshReport:
    """Recompute ``view`` from its staging view and replace it atomically."""
    started = time.perf_counter()
    # Other connections (processes) may write while the shares are read; if one did, the
    # epochs' marks stay for the next refresh to look again (see below).
    version = _data_version(store)
    window = window_block(view.definition, staging.name)
    merged_as = layout(store, staging.name, window)  # the same for every epoch
    if view.extra["window"] == "tuple":
        rows, busiest = _compute(store, view, staging, window, merged_as, partitions, None, engine)
        epochs: dict[int | None, list[tuple]] = {None: ranked_tuples(view, rows)}
    else:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        width = _epoch(window).width
        current = sqlvalues.epoch(now, width)
        late = [e for (e,) in store.connection.execute(
            f"SELECT epoch FROM {DIRTY} WHERE view = ?", [view.name])]
        epochs, busiest = {}, 0
        previous = [current - width] if current - width >= sqlvalues.INT64_MIN else []
        for epoch in sorted({*previous, current, *late}):
            rows, reads = _compute(store, view, staging, window, merged_as, partitions, epoch,
                                   engine)
            names = [i.name for i in unlimited(window).select]
            epochs[epoch] = ranked_groups(view, window, [dict(zip(names, r)) for r in rows])
            busiest = max(busiest, reads)
    bound = view.extra["per_partition_ops_bound"]
    if strict and busiest > bound:
        raise BoundExceeded(f"refresh of {view.name} read {busiest} tuples from one partition; "
                            f"its bound is {bound}")
    store.begin()
    try:
        # A write committed since the shares were read may have landed in an epoch already
        # marked (its mark was a no-op): clearing the marks would lose it.
        unchanged = _data_version(store) == version
        for epoch, rows in epochs.items():
            if epoch is None:
                store.replace_rows(view.name, rows)
            else:
                store.replace_rows(view.name, rows, '"epoch" = ?', [epoch])
                if unchanged:
                    store.connection.execute(f"DELETE FROM {DIRTY} WHERE view = ? AND epoch = ?",
                                             [view.name, epoch])
        store.commit()
    except BaseException:
        store.rollback()
        raise
    written = sum(len(rows) for rows in epochs.values())
    return RefreshReport(view.name, partitions, busiest, bound, written,
                         time.perf_counter() - started, getattr(engine, "name", "store"))


def _data_version(store: Store) -> int:
    """Changes whenever another connection commits (SQLite's ``PRAGMA data_version``)."""
    return store.connection.execute("PRAGMA data_version").fetchone()[0]


def _compute(store: Store, view: ViewDef, staging: ViewDef, window: QueryBlock, merged_as: Layout,
             partitions: int, epoch: int | None, engine) -> tuple[list[tuple], int]:
    """The periodic query over every partition's share: its rows (for a time window, the
    unlimited rows with hidden order columns) and the most tuples one partition read."""
    shares = [share_of(store, staging.name, view, window, merged_as, p, epoch)
              for p in range(partitions)]
    query = view.definition if epoch is None else unlimited(bind_epoch(view.definition, epoch))
    query = collapse(query, staging.name)
    if engine is not None and hasattr(engine, "read_shares") and store.path != ":memory:":
        return engine.read_shares(store.path, staging.name, merged_as.columns, merged_as.types,
                                  shares, sqlgen.block_sql(query, engine.dialect))
    merged: list[tuple] = []
    busiest = 0
    for share in shares:
        rows = store.connection.execute(share.sql, share.values).fetchall()
        reads = tuples_read(rows, share.keys)
        store.counter.reads += reads
        busiest = max(busiest, reads)
        merged += rows
    if engine is not None:
        from piql.engines.base import TableData

        engine.register(TableData(staging.name, merged_as.columns, merged_as.types, merged))
        return engine.query(sqlgen.block_sql(query, engine.dialect)), busiest
    bindings = [{(staging.name, c): v for c, v in zip(merged_as.columns, row)} for row in merged]
    return _evaluate(query, staging.name, bindings), busiest


def share_of(store: Store, staging: str, view: ViewDef, window: QueryBlock, merged_as: Layout,
             partition: int, epoch: int | None) -> Share:
    """One partition's bounded read, in the partition's TEMPORAL order (a clustered scan),
    with the lookups of the joined relations (SQLite joins them through their keys)."""
    column = f"s.{quote(view.extra['order_by'][0])}"
    staged = store.shapes[staging].columns
    select = [f"s.{quote(c)}" for c in staged]
    joins, values, keys = [], [], []
    if merged_as.joined:
        keys.append(tuple(staged.index(c) for c in store.shapes[staging].key if c != "partition"))
    aliases = {staged_relation(window, staging).alias: "s"}
    for number, (relation, _) in enumerate(merged_as.joined):
        aliases[relation.alias] = f"j{number}"
    for relation, own in merged_as.joined:
        alias = aliases[relation.alias]
        on, bound = _join_condition(window, relation.alias, aliases)
        joins.append(f" JOIN {quote(relation.table)} AS {alias} ON {on}")  # type: ignore[arg-type]
        values += bound
        table_key = store.shapes[relation.table].key  # type: ignore[index]
        start = len(select)
        select += [f"{alias}.{quote(c)}" for c in own]
        keys.append(keys[-1] + tuple(start + own.index(c) for c in table_key))
    head = (f"SELECT {', '.join(select)} FROM {quote(staging)} AS s{''.join(joins)} "
            "WHERE s.\"partition\" = ?")
    if epoch is None:
        direction = " DESC" if window.order_by[0].desc else ""
        return Share(f"{head} ORDER BY {column}{direction} LIMIT {int(window.limit)}",
                     (*values, partition), tuple(keys))
    low, high = sqlvalues.epoch_bounds(epoch, _epoch(window).width)
    return Share(f"{head} AND {column} >= ? AND {column} <= ? ORDER BY {column}",
                 (*values, partition, low, high), tuple(keys))


def _join_condition(window: QueryBlock, alias: str, aliases: dict[str, str]) -> tuple[str, list]:
    """The predicates that join ``alias`` to the relations before it (or restrict it by a
    literal), in SQLite; parameter predicates are grouping columns, not joins."""
    known = list(aliases)[: list(aliases).index(alias) + 1]
    parts, values = [], []
    for pred in window.predicates:
        if alias not in pred.aliases() or not pred.aliases() <= set(known):
            continue
        sides = []
        for side in (pred.left, pred.right):
            if isinstance(side, Attr):
                sides.append(f"{aliases[side.alias]}.{quote(side.column)}")
            elif isinstance(side, Literal):
                sides.append("?")
                values.append(side.value)
            else:
                break
        else:
            parts.append(f"{sides[0]} {pred.op} {sides[1]}")
    return " AND ".join(parts) or "1 = 1", values


def _evaluate(query: QueryBlock, staging: str, bindings: list[dict]) -> list[tuple]:
    """piql's own evaluator for the query over the merged shares (no engine)."""
    if query.relations[0].subquery is None:
        return finish(query, bindings, {})
    inner = query.relations[0].subquery
    alias = query.relations[0].alias
    names = [i.name for i in inner.select]
    outer = [{(alias, n): v for n, v in zip(names, row)} for row in finish(inner, bindings, {})]
    return finish(query, outer, {})


def window_block(definition: QueryBlock, staging: str) -> QueryBlock:
    """The block of the periodic view's query that reads the staging view."""
    if any(r.table == staging for r in definition.relations):
        return definition
    return definition.relations[0].subquery  # type: ignore[return-value]


def _epoch(block: QueryBlock) -> Epoch:
    return next(p.left for p in block.predicates if isinstance(p.left, Epoch))  # type: ignore


def bind_epoch(block: QueryBlock, epoch: int) -> QueryBlock:
    """The query with the refreshed epoch in place of its epoch parameter."""
    predicates = tuple(replace(p, right=Literal(epoch, str(epoch)))
                       if isinstance(p.left, Epoch) and isinstance(p.right, Param) else p
                       for p in block.predicates)
    return replace(block, predicates=predicates)


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
