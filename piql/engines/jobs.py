"""The set-oriented jobs, written once for every engine.

Each job copies the tables it reads from the serving store into the engine,
runs SQL rendered for the engine by sqlglot, and returns rows in the store's
column order; the caller writes them back in one transaction.
"""
from __future__ import annotations

import sqlglot

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Table
from piql.engines.base import Engine, TableData
from piql.planner.views import ViewDef
from piql.query import QueryBlock
from piql.runtime.check import empty_group
from piql.runtime.store import Store, quote

def export(store: Store, engine: Engine, names: list[str], rename: dict[str, str] | None = None) -> None:
    """Copy whole tables from the store into the engine (``rename`` gives engine-side names)."""
    for name in dict.fromkeys(names):
        shape = store.shapes[name]
        data = TableData((rename or {}).get(name, name), shape.columns,
                         shape.types or ("",) * len(shape.columns), store.all_rows(name))
        engine.register(data)


def tables_read(block: QueryBlock) -> list[str]:
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
