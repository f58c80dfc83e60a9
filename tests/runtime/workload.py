"""Random write workloads for any catalog, and the oracle every maintained answer must match.

Values come from small domains so writes collide, join and hit constraints
often; columns that some query orders by get unique values so that ORDER BY
... LIMIT has one right answer to compare with.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from hypothesis import strategies as st

from piql import sqlgen
from piql.catalog import Catalog, Table
from piql.planner.application import Plan, QueryPlan
from piql.query import Attr, Epoch, Param, SelectItem
from piql.runtime.deployment import Deployment, _param_types
from piql.runtime import sqlvalues
from piql.runtime.evaluate import INTEGER_TYPES, REAL_TYPES

INT_DOMAIN = (1, 4)
TEXT_DOMAIN = ("a", "b", "c", "d")


@dataclass(frozen=True)
class Op:
    kind: str  # insert | delete | update
    table: str
    seed: tuple[int, ...]  # drives the values (or which existing row)


def ordered_columns(plan: Plan) -> set[tuple[str, str]]:
    """(table, column) pairs some query orders by, through FROM-subqueries too."""
    found: set[tuple[str, str]] = set()

    def visit(block) -> None:
        for rel in block.relations:
            if rel.subquery is not None:
                visit(rel.subquery)
        for item in block.order_by:
            if isinstance(item.expr, Attr):
                rel = block.relation(item.expr.alias)
                if rel.table:
                    found.add((rel.table.lower(), item.expr.column.lower()))

    for query in plan.queries:
        if query.query.block is not None:
            visit(query.query.block)
    return found


def operations(catalog: Catalog, max_size: int = 30) -> st.SearchStrategy[list[Op]]:
    seeds = st.tuples(*[st.integers(0, 10**6)] * 8)
    one = st.builds(Op, st.sampled_from(["insert"] * 5 + ["delete", "update"]),
                    st.sampled_from([t.name for t in catalog.tables]), seeds)
    return st.lists(one, min_size=3, max_size=max_size)


class Driver:
    """Turns seeds into concrete rows for one deployment, keeping ordered values unique."""

    def __init__(self, db: Deployment, spread: int = INT_DOMAIN[1]) -> None:
        self.db = db
        self.spread = spread  # how many distinct small integers keys are drawn from
        self.catalog = db.plan.catalog
        self.unique = ordered_columns(db.plan) | {
            (t.name.lower(), c.name.lower()) for t in self.catalog.tables for c in t.columns
            if c.temporal}
        self.counter = 0

    def row(self, table: Table, seed: tuple[int, ...], key: dict[str, Any] | None = None) -> dict:
        row: dict[str, Any] = {}
        for position, column in enumerate(table.columns):
            value = seed[position % len(seed)] + position
            if key and column.name in key:
                row[column.name] = key[column.name]
            elif (table.name.lower(), column.name.lower()) in self.unique:
                self.counter += 1
                row[column.name] = (value % 1000) * 1000 + self.counter  # unique, random order
            else:
                row[column.name] = _small(column.type, value, self.spread)
        # Mostly refer to rows that exist, so joins find partners; sometimes not, so
        # foreign-key refusals are exercised too.
        for number, fk in enumerate(table.foreign_keys):
            parents = self.db.rows(fk.ref_table)
            if not parents or seed[(number + 3) % len(seed)] % 6 == 0:
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
    base = kind.upper().split("(")[0]
    if base in INTEGER_TYPES:
        return INT_DOMAIN[0] + value % spread
    if base in REAL_TYPES:
        return float(value % 7)
    return TEXT_DOMAIN[value % len(TEXT_DOMAIN)]


def oracle(db: Deployment, query: QueryPlan, params: dict[str, Any]) -> list[tuple]:
    """The original query, run directly on the base tables by SQLite."""
    block = query.query.block
    sql = sqlgen.block_sql(block, "sqlite")
    return db.store.sql(sql, params) if not block.params else \
        db.store.connection.execute(sql, params).fetchall()


def ordered_oracle(db: Deployment, query: QueryPlan,
                   params: dict[str, Any]) -> list[tuple[tuple, tuple]]:
    """The original query without LIMIT, each row beside its ORDER BY values, in order."""
    block = query.query.block
    hidden = tuple(SelectItem(f"_order{i}", o.expr) for i, o in enumerate(block.order_by))
    full = replace(block, select=block.select + hidden, limit=None)
    rows = db.store.connection.execute(sqlgen.block_sql(full, "sqlite"), params).fetchall()
    width = len(block.select)
    return [(tuple(r[:width]), tuple(r[width:])) for r in normal(rows)]


def assert_ordered_match(got: list[tuple], full: list[tuple[tuple, tuple]], limit: int | None,
                         context: Any) -> None:
    """``got`` is the first rows of some order of ``full`` that its ORDER BY allows: position
    i holds a row whose order values are the i-th in ``full``, so ties may come either way."""
    assert len(got) == min(len(full), limit if limit is not None else len(full)), context
    pool = Counter(full)
    for position, row in enumerate(normal(got)):
        key = full[position][1]
        assert pool[(row, key)] > 0, (context, position, row, key)
        pool[(row, key)] -= 1


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
            f'SELECT "{target.column}" FROM "{rel.table}"')}, key=repr)
        if isinstance(pred.left, Epoch):
            values = sorted({sqlvalues.epoch(v, pred.left.width) for v in values
                             if v is not None})
        absent = 0 if types.get(pred.right.name, "").upper().split("(")[0] in INTEGER_TYPES else "zz"
        domains[pred.right.name] = (values + [absent])[:4]
    names = list(domains)
    combos: list[dict[str, Any]] = [{}]
    for name in names:
        combos = [c | {name: v} for c in combos for v in domains[name]][:12]
    return combos


def normal(rows) -> list[tuple]:
    return [tuple(round(v, 6) if isinstance(v, float) else v for v in row) for row in rows]
