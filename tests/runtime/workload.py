"""Random write workloads for any catalog, driven by seeds (hypothesis lists or
``random``), and the direct SQL answers the runtime tests compare with.

Values come from small domains so writes collide, join and hit constraints
often; ties in ORDER BY columns are left in (the oracle harness,
tests/oracle/harness.py, accepts any valid top-k). The comparisons themselves
live in the harness; ``oracle`` and ``ordered_oracle`` run a query's own SQL on a
deployment's base tables for the tests that compare by hand.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from piql.catalog import Catalog, Table
from piql.planner.application import QueryPlan
from piql.runtime.deployment import Deployment
from piql.runtime.evaluate import INTEGER_TYPES, REAL_TYPES
from tests.oracle.harness import compiled, own_sql

INT_DOMAIN = (1, 4)
TEXT_DOMAIN = ("a", "b", "c", "d")


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

    def row(self, table: Table, seed: tuple[int, ...], key: dict[str, Any] | None = None) -> dict:
        row: dict[str, Any] = {}
        for position, column in enumerate(table.columns):
            value = seed[position % len(seed)] + position
            if key and column.name in key:
                row[column.name] = key[column.name]
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
    """The query's own SQL, run directly on the deployment's base tables by SQLite."""
    return db.store.connection.execute(own_sql(query), params).fetchall()


def ordered_oracle(db: Deployment, query: QueryPlan,
                   params: dict[str, Any]) -> list[tuple[tuple, tuple]]:
    """The query's own SQL without LIMIT, each row beside its ORDER BY values, in order
    (reals rounded to 6 decimals)."""
    own = compiled(own_sql(query))
    assert own.ordered is not None, f"{query.name} has no ORDER BY"
    rows = [tuple(round(v, 6) if isinstance(v, float) else v for v in row)
            for row in db.store.connection.execute(own.ordered, params)]
    width = len(rows[0]) - own.hidden if rows else 0
    return [(tuple(r[:width]), tuple(r[width:])) for r in rows]
