"""Random write workloads for any catalog, and the oracle every maintained answer must match.

Values come from small domains so writes collide, join, tie and hit constraints
often, and they reach the corners of SQL's semantics: NULL in every column that
may hold it, negative numbers (whose epochs SQL truncates toward zero), integers
at the ends of the signed 64-bit range, and exact halves for REAL columns (sums
of them do not depend on the order they were added in). ORDER BY columns get
ties and NULLs too: answers are compared as a valid top-k of the full ordered
answer (:func:`assert_ordered_match`, the oracle harness's check,
tests/oracle/harness.py, which also runs the SQL).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from piql import sqlgen
from piql.catalog import Catalog, Table
from piql.planner.application import Plan, QueryPlan, param_types as _param_types
from piql.query_block import Attr, Epoch, Param, SelectItem
from piql.runtime import sqlvalues
from piql.runtime.deployment import Deployment
from piql.runtime.engine_bridge import tables_read
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN
from piql.sql_types import FRACTIONAL_TYPES as REAL_TYPES, INTEGER_TYPES
from tests.oracle.harness import run_sql, valid_top_k

INT_DOMAIN = (1, 4)
TEXT_DOMAIN = ("a", "b", "c", "d")
# Rare values, drawn about one time in EXTREME_ODDS: the ends of the 64-bit range.
EXTREMES = (INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1)
EXTREME_ODDS = 23
NULL_ODDS = 7  # a nullable column is NULL about one time in NULL_ODDS
HOUR = 3_600_000


@dataclass(frozen=True)
class Op:
    kind: str  # insert | delete | update
    table: str
    seed: tuple[int, ...]  # drives the values (or which existing row)


def operations(catalog: Catalog, max_size: int = 30) -> st.SearchStrategy[list[Op]]:
    seeds = st.tuples(*[st.integers(0, 10**6)] * 8)
    one = st.builds(Op, st.sampled_from(["insert"] * 5 + ["delete", "update"]),
                    st.sampled_from([t.name for t in catalog.tables]), seeds)
    return st.lists(one, min_size=3, max_size=max_size)


class Driver:
    """Turns seeds into concrete rows for one deployment."""

    def __init__(self, db: Deployment, spread: int = INT_DOMAIN[1]) -> None:
        self.db = db
        self.spread = spread  # how many distinct small integers values are drawn from
        self.catalog = db.plan.catalog
        self.timed = {(t.name.lower(), c.name.lower()) for t in self.catalog.tables
                      for c in t.columns if c.temporal}

    def row(self, table: Table, seed: tuple[int, ...], key: dict[str, Any] | None = None) -> dict:
        row: dict[str, Any] = {}
        for position, column in enumerate(table.columns):
            value = seed[position % len(seed)] + position
            if key and column.name in key:
                row[column.name] = key[column.name]
            elif column.name not in table.primary_key and value % NULL_ODDS == 0:
                row[column.name] = None
            elif (table.name.lower(), column.name.lower()) in self.timed:
                row[column.name] = _time(value, self.spread)
            else:
                row[column.name] = _small(column.type, value, self.spread)
        # Mostly refer to rows that exist, so joins find partners; sometimes not, so
        # foreign-key refusals are exercised too (and sometimes NULL, referring to nothing).
        for number, fk in enumerate(table.foreign_keys):
            chance = seed[(number + 3) % len(seed)] % 6
            if fk.ref_table.lower() == table.name.lower() and chance == 1:
                for column, ref in zip(fk.columns, fk.ref_columns):  # the row is its own parent
                    if not (key and column in key):
                        row[column] = row[ref]
                continue
            parents = self.db.rows(fk.ref_table)
            if not parents or chance == 0:
                continue
            shape = self.db.store.shapes[fk.ref_table]
            parent = dict(zip(shape.columns, parents[seed[(number + 5) % len(seed)] % len(parents)]))
            for column, ref in zip(fk.columns, fk.ref_columns):
                if not (key and column in key):
                    row[column] = parent[ref]
        return row

    def existing(self, table: Table, seed: tuple[int, ...]) -> dict[str, Any] | None:
        rows = self.db.rows(table.name)
        if not rows:
            return None
        chosen = rows[seed[0] % len(rows)]
        return dict(zip(table.column_names, chosen))


def _small(kind: str, value: int, spread: int) -> Any:
    """A value of a small domain: positive and negative, with the range's ends now and then."""
    base = kind.upper().split("(")[0]
    if base in INTEGER_TYPES:
        if value % EXTREME_ODDS == 1:
            return EXTREMES[value // EXTREME_ODDS % len(EXTREMES)]
        number = INT_DOMAIN[0] + value // 2 % spread
        return -number if value % 3 == 0 else number
    if base in REAL_TYPES:
        return (value % 13 - 6) / 2  # exact halves from -3.0 to 3.0
    return TEXT_DOMAIN[value % len(TEXT_DOMAIN)]


def _time(value: int, spread: int) -> int:
    """A time (ms) around the epoch: a few hours on both sides of 1970, ties included, and
    now and then an end of the range."""
    if value % EXTREME_ODDS == 1:
        return EXTREMES[value // EXTREME_ODDS % len(EXTREMES)]
    return (value % (4 * spread) - 2 * spread) * HOUR // 2 + value // 7 % 3


def oracle(db: Deployment, query: QueryPlan, params: dict[str, Any]) -> list[tuple]:
    """The original query, run directly on the base tables by SQLite."""
    return _run(db, query.query.block, params)


def _run(db: Deployment, block, params: dict[str, Any]) -> list[tuple]:
    """``block`` on the base tables, by SQLite (by DuckDB where SQLite's SUM overflows on
    a partial sum: :func:`tests.oracle.harness.run_sql`)."""
    return run_sql(reference(db), sqlgen.block_sql(block, "sqlite"), params)


def reference(db: Deployment):
    """A SQLite connection holding the deployment's base tables: the store's own on SQLite,
    else a copy of the base rows in memory (SQLite's SQL is the reference semantics)."""
    import sqlite3

    if db.store.dialect == "sqlite":
        return db.store.connection
    copy = sqlite3.connect(":memory:")
    for table in db.plan.catalog.tables:
        shape = db.store.shapes[table.name]
        columns = ", ".join(f"{sqlgen.identifier(c, 'sqlite')} {t}"
                            for c, t in zip(shape.columns, shape.types))
        name = sqlgen.identifier(table.name, "sqlite")
        copy.execute(f"CREATE TABLE {name} ({columns})")
        copy.executemany(f"INSERT INTO {name} VALUES ({', '.join('?' for _ in shape.columns)})",
                         db.store.all_rows(table.name))
    return copy


def ordered_oracle(db: Deployment, query: QueryPlan,
                   params: dict[str, Any]) -> list[tuple[tuple, tuple]]:
    """The original query without LIMIT, each row beside its ORDER BY values, in order."""
    block = query.query.block
    hidden = tuple(SelectItem(f"_order{i}", o.expr) for i, o in enumerate(block.order_by))
    full = replace(block, select=block.select + hidden, limit=None)
    rows = _run(db, full, params)
    width = len(block.select)
    return [(tuple(r[:width]), tuple(r[width:])) for r in normal(rows)]


def assert_ordered_match(got: list[tuple], full: list[tuple[tuple, tuple]], limit: int | None,
                         context: Any) -> None:
    """``got`` is the first rows of some order of ``full`` that its ORDER BY allows: position
    i holds a row whose order values are the i-th in ``full``, so ties may come either way."""
    problem = valid_top_k(normal(got), full, limit, loose=True)
    assert problem is None, (context, problem)


def parameter_choices(db: Deployment, query: QueryPlan) -> list[dict[str, Any]]:
    """Parameter sets drawn from the values present in the compared columns (and one absent)."""
    block = query.query.block
    types = _param_types(db.plan, block)
    domains: dict[str, list[Any]] = {}
    for pred in block.predicates:
        if not isinstance(pred.right, Param):
            continue
        target = pred.left.attr if isinstance(pred.left, Epoch) else pred.left
        rel = block.relation(target.alias)
        values = sorted({r[0] for r in db.store.sql(
            f"SELECT {sqlgen.identifier(target.column, db.store.dialect)} "
            f"FROM {sqlgen.identifier(rel.table, db.store.dialect)}") if r[0] is not None},
                        key=sqlvalues.sort_key)
        if isinstance(pred.left, Epoch):
            values = sorted({sqlvalues.epoch(v, pred.left.width) for v in values})
        absent = 0 if types.get(pred.right.name, "").upper().split("(")[0] in INTEGER_TYPES else "zz"
        domains[pred.right.name] = (values + [absent])[:4]
    names = list(domains)
    combos: list[dict[str, Any]] = [{}]
    for name in names:
        combos = [c | {name: v} for c in combos for v in domains[name]][:12]
    return combos


def normal(rows) -> list[tuple]:
    """Rows with reals rounded to 12 significant digits: an AVG computed from exact state
    may differ from SQL's in its last bit."""
    return [tuple(float(f"{v:.12g}") if isinstance(v, float) else v for v in row)
            for row in rows]
