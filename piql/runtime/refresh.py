"""Refresh of SI-3 periodic views (paper §6.2).

Every staging partition contributes at most its bounded share, read in the
TEMPORAL order the partition is clustered by: its first n tuples for a tuple
window, its tuples of the refreshed epoch for a time window. A time window
refreshes the current and the previous epoch, and every older epoch a write
touched since the last refresh (late data): staging writes mark their epoch
in the store (``Store.mark_epochs``). The shares are merged, the rest of the query runs on them, and
the periodic view is replaced in one transaction.

Who reads the shares: an engine's tasks, one per partition, when the engine
reads shares itself (Spark) and the store gives them a reader; otherwise the
caller, partition by partition. Who merges and runs the query: the engine (DuckDB,
Spark) or, without one, piql's own evaluator.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from piql import sqlgen
from piql.engines.base import Engine, Share, TableData
from piql.planner.refresh_plan import (
    HIGH_PARAM, LOW_PARAM, PARTITION_PARAM, RefreshPlan, WindowKind,
)
from piql.query_block import Epoch, Literal, OrderItem, Param, QueryBlock
from piql.runtime import sqlvalues
from piql.runtime.errors import BoundExceeded
from piql.runtime.evaluate import finish, sort_rows
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


def tuples_read(rows: list[tuple], keys: tuple[tuple[int, ...], ...]) -> int:
    """Tuples a partition read: one per row, or for a joined share the distinct tuples of
    every relation along the join (a lookup per staged tuple, then per joined tuple)."""
    if not keys:
        return max(1, len(rows))
    return max(1, sum(len({tuple(row[i] for i in key) for row in rows}) for key in keys))


def refresh_view(store: Store, plan: RefreshPlan, now_ms: int | None = None, strict: bool = True,
                 engine: Engine | None = None, jobs: Any = None,
                 since_ms: int | None = None) -> RefreshReport:
    """Recompute the periodic view of ``plan`` from its staging view and replace it
    atomically. ``jobs`` (``runtime.spark_jobs.SparkJobs``): the results are computed,
    ranked and written by Spark's tasks (``runtime.spark_refresh``), never collected.
    ``since_ms``: a time window's late epochs before the one holding it are left as they
    are, still marked for a later refresh without it (:func:`_epochs`)."""
    started = time.perf_counter()
    # Other connections (processes) may write while the shares are read; if one did, the
    # epochs' marks stay for the next refresh to look again (see below).
    version = store.version()
    epochs = [None] if plan.window == WindowKind.TUPLE else _epochs(store, plan, now_ms, since_ms)
    if jobs is not None and store.reader() is not None:
        from piql.runtime.spark_refresh import SparkRefresh

        results: Any = SparkRefresh(jobs, store, plan)
    else:
        results = DriverResults(store, plan, engine)
    try:
        busiest = results.compute(epochs)
        bound = plan.per_partition_bound
        if strict and busiest > bound:
            raise BoundExceeded(f"refresh of {plan.view} read {busiest} tuples from one "
                                f"partition; its bound is {bound}")
        written = 0
        with store.transaction():
            # A write committed since the shares were read may have landed in an epoch
            # already marked (its mark was a no-op): clearing the marks would lose it.
            unchanged = store.version() == version
            for epoch in epochs:
                written += results.write(epoch)
                if epoch is not None and unchanged:
                    store.unmark_epoch(plan.view, epoch)
    finally:
        results.close()
    return RefreshReport(plan.view, plan.layout.partitions, busiest, bound, written,
                         time.perf_counter() - started,
                         engine.name if engine is not None else "store")


def _epochs(store: Store, plan: RefreshPlan, now_ms: int | None,
            since_ms: int | None = None) -> list[int | None]:
    """A time window's epochs to refresh: the current, the previous, and the late ones
    (those a write marked), or with ``since_ms`` only the late ones from the epoch holding
    it on: a bulk load marks every epoch it filled (60 days of hours for TPC-W's orders),
    and a reader of recent epochs alone need not wait for all of them."""
    assert plan.epoch_width is not None
    now = int(time.time() * 1000) if now_ms is None else now_ms
    width = plan.epoch_width
    current = sqlvalues.epoch(now, width)
    previous = [current - width] if current - width >= sqlvalues.INT64_MIN else []
    late = store.marked_epochs(plan.view)
    if since_ms is not None:
        first = sqlvalues.epoch(since_ms, width)
        late = [e for e in late if e >= first]
    return sorted({*previous, current, *late})


class DriverResults:
    """A refresh's results computed here (the engine's rows, or piql's evaluator's), ranked
    in Python: bounded (partitions x bound)."""

    def __init__(self, store: Store, plan: RefreshPlan, engine: Engine | None) -> None:
        self.store, self.plan, self.engine = store, plan, engine
        self.rows: dict[int | None, list[tuple]] = {}

    def compute(self, epochs: list[int | None]) -> int:
        """Compute every epoch's rows (None: a tuple window's); the most tuples one
        partition read."""
        busiest = 0
        names = [i.name for i in self.plan.merge.select]
        for epoch in epochs:
            rows, reads = _compute(self.store, self.plan, epoch, self.engine)
            self.rows[epoch] = ranked_tuples(self.plan, rows) if epoch is None else \
                ranked_groups(self.plan, [dict(zip(names, r)) for r in rows])
            busiest = max(busiest, reads)
        return busiest

    def write(self, epoch: int | None) -> int:
        """Replace the view's rows of ``epoch`` (inside the caller's transaction)."""
        rows = self.rows[epoch]
        self.store.replace_rows(self.plan.view, rows, None if epoch is None else {"epoch": epoch})
        return len(rows)

    def close(self) -> None:
        self.rows.clear()


def _compute(store: Store, plan: RefreshPlan, epoch: int | None,
             engine: Engine | None) -> tuple[list[tuple], int]:
    """The periodic query over every partition's share: its rows (for a time window, the
    unlimited rows with hidden order columns) and the most tuples one partition read."""
    statement = sqlgen.block_sql(plan.shares.read, store.dialect)
    shares = [Share(statement, _share_values(plan, p, epoch), plan.shares.keys)
              for p in range(plan.layout.partitions)]
    query = plan.merge if epoch is None else bind_epoch(plan.merge, epoch)
    columns, types = plan.shares.columns, plan.shares.types
    reader = store.reader()
    if engine is not None and reader is not None:
        done = engine.read_shares(reader, plan.staging, columns, types, shares,
                                  sqlgen.block_sql(query, engine.dialect))
        if done is not None:
            return done
    merged: list[tuple] = []
    busiest = 0
    for share in shares:
        rows = store.sql(share.sql, share.values)
        reads = tuples_read(rows, share.keys)
        store.counter.reads += reads
        busiest = max(busiest, reads)
        merged += rows
    if engine is not None:
        engine.register(TableData(plan.staging, columns, types, merged))
        return engine.query(sqlgen.block_sql(query, engine.dialect)), busiest
    bindings = [{(plan.staging, c): v for c, v in zip(columns, row)} for row in merged]
    return _evaluate(query, plan.staging, bindings), busiest


def _share_values(plan: RefreshPlan, partition: int, epoch: int | None) -> dict[str, Any]:
    """The parameters of one partition's read: the partition, and the epoch's range."""
    if epoch is None:
        return {PARTITION_PARAM: partition}
    assert plan.epoch_width is not None
    low, high = sqlvalues.epoch_bounds(epoch, plan.epoch_width)
    return {PARTITION_PARAM: partition, LOW_PARAM: low, HIGH_PARAM: high}


def _evaluate(query: QueryBlock, staging: str, bindings: list[dict]) -> list[tuple]:
    """piql's own evaluator for the query over the merged shares (no engine)."""
    if query.relations[0].subquery is None:
        return finish(query, bindings, {})
    inner = query.relations[0].subquery
    alias = query.relations[0].alias
    names = [i.name for i in inner.select]
    outer = [{(alias, n): v for n, v in zip(names, row)} for row in finish(inner, bindings, {})]
    return finish(query, outer, {})


def bind_epoch(block: QueryBlock, epoch: int) -> QueryBlock:
    """The query with the refreshed epoch in place of its epoch parameter."""
    predicates = tuple(replace(p, right=Literal(epoch, str(epoch)))
                       if isinstance(p.left, Epoch) and isinstance(p.right, Param) else p
                       for p in block.predicates)
    return replace(block, predicates=predicates)


def ranked_tuples(plan: RefreshPlan, result: list[tuple]) -> list[tuple]:
    """A tuple window's result, numbered when the view keeps its order in ``rank``."""
    return [((rank,) if plan.ranked else ()) + tuple(row)
            for rank, row in enumerate(result, start=1)]


def ranked_groups(plan: RefreshPlan, values: list[dict[str, Any]]) -> list[tuple]:
    """Per (epoch, parameter columns): the rows in the query's order, numbered, at most LIMIT."""
    groups: dict[tuple, list[dict]] = {}
    for row in values:
        groups.setdefault(tuple(row[k] for k in plan.group_key), []).append(row)
    order = tuple(OrderItem(f"_order{i}", desc)  # type: ignore[arg-type]
                  for i, desc in enumerate(plan.descending))
    rows: list[tuple] = []
    for members in groups.values():
        ordered = sort_rows(members, order) if order else members
        for rank, row in enumerate(ordered[: plan.limit or len(ordered)], start=1):
            rows.append(tuple((row | {"rank": rank})[c] for c in plan.columns))
    return rows
