"""The set-oriented jobs, written once for every engine.

Each job copies the tables it reads from the serving store into the engine,
runs SQL rendered for the engine by sqlglot, and returns rows in the store's
column order; the caller writes them back in one transaction.
"""
from __future__ import annotations

import sqlglot

from piql import sqlgen
from piql.catalog import Table
from piql.engines.base import Engine, TableData
from piql.planner.views import ViewDef
from piql.query import Epoch, Literal, Param, QueryBlock, Relation
from piql.runtime.store import Store

ROW_NUMBER = "piql_rn"


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
        if "partition" in shape.columns and "partition" not in values:
            values["partition"] = partition_of(view, values)  # piql's own hash, as on write
        values.setdefault("_all", 0)
        rows.append(tuple(_plain(values[c]) for c in shape.columns))
    return rows


def cardinality_violation(engine: Engine, store: Store, table: Table, staged: str):
    """The first CARDINALITY constraint the table plus staged rows would break, if any."""
    export(store, engine, [table.name, staged])
    both = f'(SELECT * FROM "{table.name}" UNION ALL SELECT * FROM "{staged}") AS both_rows'
    for constraint in table.cardinalities:
        per = ", ".join(f'"{c}"' for c in constraint.per)
        counted = f'COUNT(DISTINCT "{constraint.column}")'
        sql = (f"SELECT {per + ', ' if per else ''}{counted} FROM {both}"
               f"{' GROUP BY ' + per if per else ''} HAVING {counted} > {constraint.limit} LIMIT 1")
        broken = engine.query(sqlglot.transpile(sql, read="sqlite", write=engine.dialect)[0])
        if broken:
            return constraint, broken[0]
    return None


def window_rows(engine: Engine, store: Store, view: ViewDef, staging: ViewDef,
                window: QueryBlock, epoch: int | None) -> tuple[list[tuple], int]:
    """Run the periodic view's query on the engine over the bounded share of every staging
    partition; returns the result rows and the most tuples one partition contributed."""
    raw = f"{staging.name}__all"
    export(store, engine, [staging.name], {staging.name: raw})
    column = view.extra["order_by"][0]
    if epoch is None:  # tuple window: each partition's first n in order
        direction = " DESC" if window.order_by[0].desc else ""
        ranked = (f'SELECT *, ROW_NUMBER() OVER (PARTITION BY "partition" ORDER BY "{column}"'
                  f'{direction}) AS {ROW_NUMBER} FROM "{raw}"')
        share = f"SELECT * FROM ({ranked}) AS ranked WHERE {ROW_NUMBER} <= {window.limit}"
    else:  # time window: each partition's tuples of one epoch, read in order
        width = next(p.left.width for p in window.predicates if isinstance(p.left, Epoch))
        share = (f'SELECT * FROM "{raw}" WHERE "{column}" >= {epoch} '
                 f'AND "{column}" < {epoch + width}')  # type: ignore[operator]
    engine.define(staging.name, sqlglot.transpile(share, read="duckdb", write=engine.dialect)[0])
    counts = engine.query(sqlglot.transpile(
        f'SELECT COUNT(*) FROM "{staging.name}" GROUP BY "partition"', read="duckdb",
        write=engine.dialect)[0])
    definition = view.definition if epoch is None else _bind_epoch(view.definition, epoch)
    rows = engine.query(sqlgen.block_sql(definition, engine.dialect))
    return [tuple(_plain(v) for v in row) for row in rows], max((c[0] for c in counts), default=0)


def _bind_epoch(block: QueryBlock, epoch: int) -> QueryBlock:
    """The definition with the refreshed epoch in place of the query's epoch parameter."""
    from dataclasses import replace

    predicates = tuple(replace(p, right=Literal(epoch, str(epoch)))
                       if isinstance(p.left, Epoch) and isinstance(p.right, Param) else p
                       for p in block.predicates)
    return replace(block, predicates=predicates)


def _plain(value):
    """Engines return numpy or decimal scalars at times; the store wants Python values."""
    if hasattr(value, "item"):
        return value.item()
    return value
