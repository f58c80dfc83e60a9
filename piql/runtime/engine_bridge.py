"""Store <-> engine: the set-oriented jobs, written once for every engine.

Engines are leaves: they take named tables and SQL in their dialect, and know nothing of
stores or plans. Each job here copies the tables it reads from the store into the engine
(in batches, as Arrow), runs SQL rendered for the engine by sqlglot, and returns rows in
the store's column order (batch by batch, for a view build); the caller writes them back
in one transaction.

On Spark, view builds, checks and repairs go through ``runtime.spark_jobs`` instead, whose
tasks read and write the store themselves; these jobs remain for DuckDB, for an in-memory
store, and for rows a bulk load has not committed yet.
"""
from __future__ import annotations

import itertools
from typing import Callable, Iterator

from piql import sqlgen
from piql.engines.base import BATCH_ROWS, Engine, TableData
from piql.planner.views import ViewDef
from piql.query_block import QueryBlock
from piql.runtime.check import differences, plain_row, stored_rows
from piql.runtime.store import Store


def export(store: Store, engine: Engine, names: list[str]) -> None:
    """Copy whole tables from the store into the engine, batch by batch."""
    for name in dict.fromkeys(names):
        shape = store.shapes[name]
        rows = itertools.chain.from_iterable(store.read_table(name, BATCH_ROWS))
        engine.register(TableData(name, shape.columns, shape.types or ("",) * len(shape.columns),
                                  rows))


def tables_read(block: QueryBlock) -> list[str]:
    """The base tables (and views) a block reads, its FROM-subqueries' too."""
    found: list[str] = []
    for rel in block.relations:
        if rel.subquery is not None:
            found += tables_read(rel.subquery)
        elif rel.table:
            found.append(rel.table)
    return found


def view_rows(engine: Engine, store: Store, view: ViewDef, partition_of) -> list[tuple]:
    """A maintained view computed from base data by the engine, as the store keeps it."""
    return [row for batch in view_batches(engine, store, view, partition_of) for row in batch]


def view_batches(engine: Engine, store: Store, view: ViewDef,
                 partition_of) -> Iterator[list[tuple]]:
    """The same, batch by batch as the engine answers (a view build holds one batch of
    Python rows at a time). The tables are exported now, the rows computed as they are
    taken: the caller may then write them to the store while it reads them."""
    export(store, engine, tables_read(view.definition))
    batches = engine.query_batches(sqlgen.block_sql(view.definition, engine.dialect))
    return (stored_rows(store, view, rows, partition_of) for rows in batches)


class EngineDiffer:
    """A check on an engine that holds its tables in its own memory or disk (DuckDB): the
    recomputed view streams into the engine batch by batch, the stored view is exported
    to it, and the engine counts each distinct row on both sides; only the rows whose
    counts differ come back (``check.Differ``)."""

    EXPECTED = "_piql_expected"

    def __init__(self, engine: Engine, store: Store, partition_of,
                 rebuild: Callable[[ViewDef], None]) -> None:
        self.engine, self.store, self.partition_of = engine, store, partition_of
        self.rebuild = rebuild

    def differences(self, view: ViewDef) -> tuple[tuple, tuple]:
        shape = self.store.shapes[view.name]
        types = shape.types or ("",) * len(shape.columns)
        batches = view_batches(self.engine, self.store, view, self.partition_of)
        self.engine.register(TableData(self.EXPECTED, shape.columns, types,
                                       (row for batch in batches for row in batch)))
        export(self.store, self.engine, [view.name])
        names = [f"c{i}" for i in range(len(shape.columns))]
        q = [sqlgen.identifier(c, self.engine.dialect) for c in shape.columns]
        listed = ", ".join(f"{c} AS {n}" for c, n in zip(q, names))
        surplus = self.engine.query(
            f"SELECT {', '.join(names)}, SUM(side) FROM (SELECT {listed}, 1 AS side FROM "
            f"{self.EXPECTED} UNION ALL SELECT {listed}, -1 AS side FROM "
            f"{sqlgen.identifier(view.name, self.engine.dialect)}) AS sides "
            f"GROUP BY {', '.join(names)} HAVING SUM(side) <> 0")
        missing: list[tuple] = []
        extra: list[tuple] = []
        for row in surplus:
            values, count = plain_row(tuple(row[:-1])), int(row[-1])
            (missing if count > 0 else extra).extend([values] * abs(count))
        return differences(missing, extra)
