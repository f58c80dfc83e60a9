"""Store <-> engine: the set-oriented jobs, written once for every engine.

Engines are leaves: they take named tables and SQL in their dialect, and know nothing of
stores or plans. Each job here copies the tables it reads from the store into the engine
(in batches, as Arrow), runs SQL rendered for the engine by sqlglot, and returns rows in
the store's column order; the caller writes them back in one transaction.
"""
from __future__ import annotations

import itertools

import sqlglot

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Table
from piql.engines.base import BATCH_ROWS, Engine, TableData
from piql.planner.views import ViewDef
from piql.query_block import QueryBlock
from piql.runtime.check import empty_group
from piql.runtime.store import Store
from piql.sqlgen import identifier


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
    """A maintained view computed from base data, in the store's column order."""
    export(store, engine, tables_read(view.definition))
    names = [i.name for i in view.definition.select]
    shape = store.shapes[view.name]
    rows = []
    for row in engine.query(sqlgen.block_sql(view.definition, engine.dialect)):
        values = dict(zip(names, row))
        if empty_group(view, values):
            continue
        if "partition" in shape.columns and "partition" not in values:
            values["partition"] = partition_of(view, values)  # piql's own hash, as on write
        values.setdefault("_all", 0)
        rows.append(tuple(_plain(values[c]) for c in shape.columns))
    return rows


def cardinality_violation(engine: Engine, store: Store, table: Table, staged: str):
    """The first CARDINALITY constraint the table plus staged rows would break, if any."""
    export(store, engine, [table.name, staged])
    for constraint in table.cardinalities:
        sql = cardinality_sql(table.name, staged, constraint)
        broken = engine.query(sqlglot.transpile(sql, read="sqlite", write=engine.dialect)[0])
        if broken:
            return constraint, tuple(_plain(v) for v in broken[0])
    return None


def cardinality_sql(table: str, staged: str, constraint: CardinalityConstraint) -> str:
    """SQLite SQL for the first group of ``per`` values of the table plus the staged rows
    with more than ``limit`` distinct ``column`` values, and that count.

    NULL is a value as the per-write check counts it: rows with NULL ``per`` values form
    their own group (as GROUP BY groups them), and a NULL ``column`` is one more distinct
    value (which COUNT(DISTINCT ...) alone would skip)."""
    def quote(name: str) -> str:
        return identifier(name, "sqlite")

    per = ", ".join(quote(c) for c in constraint.per)
    column = quote(constraint.column)
    counted = (f"(COUNT(DISTINCT {column}) + "
               f"MAX(CASE WHEN {column} IS NULL THEN 1 ELSE 0 END))")
    both = (f"(SELECT * FROM {quote(table)} UNION ALL SELECT * FROM {quote(staged)}) "
            "AS both_rows")
    return (f"SELECT {per + ', ' if per else ''}{counted} FROM {both}"
            f"{' GROUP BY ' + per if per else ''} HAVING {counted} > {int(constraint.limit)} "
            "LIMIT 1")


def _plain(value):
    """Engines return numpy or decimal scalars at times; the store wants Python values."""
    if hasattr(value, "item"):
        return value.item()
    return value
