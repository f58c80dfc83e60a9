"""The differential oracle harness: piql's answers against the queries' own SQL.

A :class:`Session` deploys an application and keeps beside it a **mirror**: a
plain SQLite database holding only the base tables, which receives every write
piql accepts (insert, delete, update, load). After every write:

- every bounded query runs through piql (``Deployment.query``, strict mode) for
  parameter values drawn from the data (plus absent ones), and as its own SQL
  text on the mirror; the answers must be equal as multisets, and for
  ``ORDER BY ... LIMIT`` the answer must be a valid top-k (ties may be cut
  either way: position i holds a row whose order values are the i-th of the
  full ordered answer). A tuple window in a FROM subquery whose boundary falls
  inside a tie is compared with every admissible choice of the tied rows;
- measured operations never exceed the static bound: each query's
  ``Result.ops``, each write's ``WriteReport.ops`` and each rule's measured
  count, each refresh's busiest partition (``RefreshReport.max_partition_reads``);
- a write is accepted exactly when SQL with its keys, foreign keys and the
  CARDINALITY constraints would accept it (judged on the mirror); a refused
  write (``ConstraintError``) changes no base table and no view;
- the base tables equal the mirror's.

Periodic (SI-3) answers are as old as the last refresh, so they are compared
right after :meth:`Session.refresh`, for every epoch present in the data (a
refresh recomputes the epochs writes touched); between refreshes they still
run, for their bound. Every maintained view equals its recomputation
(``Deployment.check``) at each refresh, every ``check_every`` writes and at the
end.

Values come from small pools so that keys collide, joins find partners and
constraints are hit: NULLs in nullable (non-key) columns, negative numbers,
zero, big integers (near ±2^62 and at ±(2^63-1)), ties in ORDER BY columns,
duplicate keys, dangling foreign keys, self-references, and writes that break
CARDINALITY limits.

SQL's SUM means the exact sum of its values: the mirror computes SUM (and so AVG,
see :func:`exact_means`) with an exact aggregate, :class:`ExactSum` (integers summed
exactly, REAL values summed as rationals and rounded once), as piql keeps its sums;
SQLite 3.40 adds doubles in scan order, which loses low bits when a huge value and its
negation are both present.

The harness avoids no input class: the ``KNOWN_DEFECTS`` it once had (issue 12 and
the findings N1, N2 of /work/coord/oracle-findings.md) are fixed.

Profiles (tests/oracle/test_oracle.py): ``short`` runs in ``make test``;
``long`` runs in the tests marked ``slow`` (``pytest -m slow``, which .ci/run
adds after ``make test``); the environment variable ``PIQL_ORACLE_PROFILE=long``
makes the default tests use the long profile too.
"""
from __future__ import annotations

import functools
import itertools
import math
import random
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import duckdb
import sqlglot
from hypothesis import strategies as st
from sqlglot import exp

import piql
from piql import sqlgen
from piql.catalog import Catalog, Table
from piql.engines.base import TableData
from piql.planner.application import Plan, QueryPlan, plan_application
from piql.planner.physical import IndexSpec, KeyExpression
from piql.planner.views import ViewKind
from piql.language.placeholders import PLACEHOLDER
from piql.language.queries import parse_queries
from piql.language.schema import load_schema
from piql.query_block import (
    Aggregate, Attr, Call, Compare, Epoch, InList, Param, Predicate, QueryBlock, attrs_in, walk,
)
from piql.runtime.deployment import Deployment
from piql.runtime.errors import ConstraintError
from piql.runtime.sqlite_store import CASE_SENSITIVE_LIKE
from piql.sql_types import FRACTIONAL_TYPES as REAL_TYPES, INTEGER_TYPES
from tests.conftest import EXAMPLES, PAPER_QUERIES, PAPER_SCHEMA, paper_schema_text, plan_text

APPS_DIR = Path(__file__).parent / "apps"

# -- value pools ----------------------------------------------------------------------
HOUR = 3_600_000
T0 = 472_222 * HOUR  # an hour boundary in 2023, in milliseconds
TIME_OFFSETS = (0, 1, 59_999, 1_800_000, 1_800_000, HOUR - 1, HOUR, 2 * HOUR + 7, 2 * HOUR + 7)
TIME_ODD = (0, -1, -HOUR - 1, -2 * HOUR, 2**62, 2**63 - 1)  # before 1970, and huge
BIG = (2**62, -(2**62), 2**62 + 1, 2**63 - 1, -(2**63 - 1), -(2**63))
SMALL_IDS = (1, 2, 3, 4, 5, 6)
ODD_IDS = (0, -1, -7) + BIG
PLAIN_INTS = (-3, 0, 2, 2, 7)
# SUM/AVG arguments stay below 2^56 so that no sum of a few hundred rows overflows
# SQL's 64-bit integers (the oracle would raise "integer overflow"); sums still pass 2^53.
SUMMED_INTS = (-5, 0, 1, 3, 3, 250)
SUMMED_ODD = (2**53 + 1, -(2**53 + 1), 2**55, -(2**55))
REALS = (-1.5, 0.0, 0.25, 2.0, 2.0)
REAL_ODD = (1e15, -1e15, 123456.789)
NON_FINITE_REALS = (math.inf, -math.inf, math.nan)
TEXTS = ("a", "b", "c", "c")
TEXT_ODD = ("", "é", "Z z", "it's", 'say "hi"')
ABSENT_INT, ABSENT_TEXT = 987_654_321, "absent"


def base_type(declared: str) -> str:
    kind = declared.upper().split("(")[0]
    if kind in INTEGER_TYPES:
        return "int"
    if kind in REAL_TYPES:
        return "real"
    return "text"


# -- applications ---------------------------------------------------------------------
@dataclass(frozen=True)
class OracleApp:
    """An application the harness drives: a name and how to plan it."""

    name: str
    planned: Callable[[], Plan] = field(compare=False)

    @cached_property
    def app(self) -> piql.App:
        return piql.App(self.planned())

    @property
    def plan(self) -> Plan:
        return self.app.plan

    @cached_property
    def roles(self) -> "Roles":
        return Roles.of(self.plan)

    @staticmethod
    def files(name: str, schema: Path, queries: Path) -> "OracleApp":
        return OracleApp(name, lambda: piql.load(schema, queries).plan)


def oracle_app(name: str) -> OracleApp:
    """One of the harness's own applications, tests/oracle/apps/<name>/."""
    schema = APPS_DIR / name / "schema.sql"
    queries = (APPS_DIR / name / "queries.sql").read_text()

    def planned() -> Plan:
        catalog = load_schema(schema)
        return plan_application(catalog, parse_queries(queries, catalog, f"{name}/queries.sql"),
                                f"{name}/queries.sql")

    return OracleApp(name, planned)


NEW_APPS = ("social", "commerce", "messaging", "constructs")
EXISTING_APPS = ("examples-social", "examples-tpcw", "paper", "paper-temporal")


def existing_app(name: str) -> OracleApp:
    """The project's own applications: the examples and the paper's fixtures (the paper's
    schema also with §6.1's TEMPORAL mark, which makes popularTags SI-3)."""
    if name == "examples-social":
        return OracleApp.files(name, EXAMPLES / "social" / "schema.sql",
                               EXAMPLES / "social" / "queries.sql")
    if name == "examples-tpcw":
        return OracleApp.files(name, EXAMPLES / "tpcw" / "schema.sql",
                               EXAMPLES / "tpcw" / "queries.sql")
    if name == "paper":
        return OracleApp.files(name, PAPER_SCHEMA, PAPER_QUERIES)
    if name == "paper-temporal":
        return OracleApp(name, lambda: plan_text(paper_schema_text(temporal=True),
                                                 PAPER_QUERIES.read_text()))
    raise KeyError(name)


# -- what each column is used for -------------------------------------------------------
def relation_columns(block: QueryBlock, expr: object) -> set[tuple[str, str]]:
    """The base (table, column) pairs an expression of ``block`` reads, through
    FROM-subqueries, lower-cased."""
    if isinstance(expr, Epoch):
        expr = expr.attr
    if isinstance(expr, Aggregate):
        expr = expr.arg
    if not isinstance(expr, Attr):
        return set()
    rel = block.relation(expr.alias)
    if rel.table is not None:
        return {(rel.table.lower(), expr.column.lower())}
    inner = rel.subquery
    assert inner is not None
    found: set[tuple[str, str]] = set()
    for item in inner.select:
        if item.name.lower() == expr.column.lower():
            found |= relation_columns(inner, item.expr)
    return found


def blocks(block: QueryBlock) -> Iterable[QueryBlock]:
    yield block
    for branch, _ in block.unions:
        yield from blocks(branch)
    for rel in block.relations:
        if rel.subquery is not None:
            yield from blocks(rel.subquery)


@dataclass(frozen=True)
class Roles:
    """(table, column) pairs by the part they play in the plan, lower-cased."""

    summed: frozenset[tuple[str, str]]  # argument of a SUM or AVG
    epochs: frozenset[tuple[str, str]]  # argument of a time-window epoch

    @staticmethod
    def of(plan: Plan) -> "Roles":
        summed: set[tuple[str, str]] = set()
        epochs: set[tuple[str, str]] = set()
        for query in plan.queries:
            if query.query.block is None:
                continue
            for block in blocks(query.query.block):
                for agg in block.aggregates:
                    if agg.func in ("SUM", "AVG"):
                        summed |= relation_columns(block, agg.arg)
                for pred in block.predicates:
                    for side in (pred.left, pred.right):
                        if isinstance(side, Epoch):
                            epochs |= relation_columns(block, side)
                for item in block.group_by:
                    if isinstance(item, Epoch):
                        epochs |= relation_columns(block, item)
        return Roles(frozenset(summed), frozenset(epochs))


# -- generated values --------------------------------------------------------------------
def _pool(common: Sequence[Any], odd: Sequence[Any]) -> st.SearchStrategy:
    """Mostly common values (so they collide and tie), sometimes odd ones."""
    strategies = [st.sampled_from(tuple(common))] * 4
    if odd:
        strategies.append(st.sampled_from(tuple(odd)))
    return st.one_of(strategies)


class Values:
    """Hypothesis strategies for the columns of one application."""

    def __init__(self, oracle: OracleApp) -> None:
        self.catalog = oracle.plan.catalog
        self.roles = oracle.roles

    def nullable(self, table: Table, column: str) -> bool:
        """Nullable columns (not NOT NULL, not in the key) get NULLs."""
        declared = table.column(column)
        return column not in table.primary_key and declared is not None and declared.nullable

    def column(self, table: Table, name: str) -> st.SearchStrategy:
        column = table.column(name)
        assert column is not None
        where = (table.name.lower(), name.lower())
        kind = base_type(column.type)
        if kind == "int":
            if column.temporal or where in self.roles.epochs:
                values = _pool([T0 + o for o in TIME_OFFSETS], TIME_ODD)
            elif where in self.roles.summed:
                values = _pool(SUMMED_INTS, SUMMED_ODD)
            elif name in table.primary_key or any(name in fk.columns for fk in table.foreign_keys):
                values = _pool(SMALL_IDS, ODD_IDS)
            else:
                values = _pool(PLAIN_INTS, BIG + (1, 4))
        elif kind == "real":
            values = _pool(REALS, REAL_ODD + NON_FINITE_REALS)
        else:
            values = _pool(TEXTS, TEXT_ODD)
        if self.nullable(table, name):
            return st.one_of(st.none(), values, values, values)
        if not column.nullable and name not in table.primary_key:
            return st.one_of(st.none(), *[values] * 11)  # now and then a NULL to refuse
        return values


# -- the mirror ----------------------------------------------------------------------------
def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


EXACT_SUM = "exact_sum"


class ExactSum:
    """SQL's SUM computed exactly, for the mirror (SQLite 3.40 adds doubles in scan order):
    NULL for no values, the integer sum of integers (an error past 64 bits, as SQLite's),
    else the exact sum of the values as rationals, rounded once to a double."""

    def __init__(self) -> None:
        self.values: list[Any] = []

    def step(self, value: Any) -> None:
        if value is not None:
            self.values.append(value)

    def finalize(self) -> int | float | None:
        if not self.values:
            return None
        if all(isinstance(v, int) for v in self.values):
            total = sum(self.values)
            if not -2**63 <= total < 2**63:
                raise OverflowError("integer overflow")
            return total
        return float(sum((Fraction(v) for v in self.values), Fraction(0)))


def exact_sums(select: exp.Select) -> exp.Select:
    """``select`` with every ``SUM(x)`` as the mirror's exact aggregate ``exact_sum(x)``."""
    def exact(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Sum):
            return exp.Anonymous(this=EXACT_SUM, expressions=[node.this.copy()])
        return node

    return select.transform(exact)  # type: ignore[return-value]


def plain_sums(tree: exp.Expression) -> exp.Expression:
    """The inverse of :func:`exact_sums`, for another engine."""
    def plain(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Anonymous) and str(node.this).lower() == EXACT_SUM:
            return exp.Sum(this=node.expressions[0].copy())
        return node

    return tree.transform(plain)


def sqlite_division(tree: exp.Expression) -> exp.Expression:
    """``/`` with SQLite's meaning in DuckDB: DuckDB's ``/`` divides integers as doubles,
    its ``//`` truncates them as SQLite's ``/`` does (and divides reals exactly)."""
    def division(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Div):
            return exp.IntDiv(this=node.this, expression=node.expression)
        return node

    return tree.transform(division)


def run_sql(connection: sqlite3.Connection, sql: str,
            params: dict[str, Any] | Sequence[Any] = ()) -> list[tuple]:
    """SQL's answer to ``sql`` (SQLite's dialect) on ``connection``'s tables: SQLite's, or
    DuckDB's where SQLite's SUM overflows on a partial sum (it adds in scan order)
    although the sum itself fits in 64 bits, or an exact sum leaves 64 bits: DuckDB
    computes it exactly."""
    try:
        return connection.execute(sql, params).fetchall()
    except sqlite3.OperationalError as err:
        if "integer overflow" not in str(err) and "'finalize' method raised" not in str(err):
            raise
    duck = duckdb.connect()
    try:
        # SQLite's NULL for x / 0 and x % 0, not DuckDB's error
        duck.execute("SET error_on_division_by_zero = false")
        tree = sqlite_division(plain_sums(sqlglot.parse_one(sql, read="sqlite")))
        for name in {table.name for table in tree.find_all(exp.Table)}:
            info = connection.execute(f"PRAGMA table_info({quote(name)})").fetchall()
            columns = tuple(row[1] for row in info)
            types = tuple(row[2] or "ANY" for row in info)
            rows = connection.execute(
                f"SELECT {', '.join(map(quote, columns))} FROM {quote(name)}").fetchall()
            duck.register(name, TableData(name, columns, types, rows).arrow())
        return duck.execute(tree.sql(dialect="duckdb"), params).fetchall()
    finally:
        duck.close()


@dataclass(frozen=True)
class Verdict:
    """Whether SQL, with the schema's keys, unique keys, foreign keys and CARDINALITY
    constraints, accepts a write, and if not why."""

    ok: bool
    reason: str = ""


class Mirror:
    """The base tables alone, in SQLite, with the schema's keys and foreign keys."""

    def __init__(self, catalog: Catalog, unique_indexes: Sequence[IndexSpec] = ()) -> None:
        self.catalog = catalog
        self.connection = sqlite3.connect(":memory:", isolation_level=None)
        self.connection.execute("PRAGMA foreign_keys = OFF")  # judged by foreign_key_check
        self.connection.execute(CASE_SENSITIVE_LIKE)  # piql's LIKE (docs/language.md)
        self.connection.create_aggregate(EXACT_SUM, 1, ExactSum)
        for table in catalog.tables:
            # a column's DEFAULT as SQL fills it, for the writes that omit the column
            columns = [f"{quote(c.name)} {c.type}{sqlgen.default_clause(c.default, 'sqlite')}"
                       f"{'' if c.nullable else ' NOT NULL'}" for c in table.columns]
            columns.append(f"PRIMARY KEY ({', '.join(map(quote, table.primary_key))})")
            for fk in table.foreign_keys:
                columns.append(f"FOREIGN KEY ({', '.join(map(quote, fk.columns))}) REFERENCES "
                               f"{quote(fk.ref_table)} ({', '.join(map(quote, fk.ref_columns))})")
            self.connection.execute(
                f"CREATE TABLE {quote(table.name)} ({', '.join(columns)}) WITHOUT ROWID")
        for index in unique_indexes:  # declared unique expression indexes: SQL enforces them
            parts = [f"{p.func.value.lower()}({quote(p.column)})" if isinstance(p, KeyExpression)
                     else quote(p) for p in index.parts]
            self.connection.execute(f"CREATE UNIQUE INDEX {quote(index.name)} ON "
                                    f"{quote(index.table)} ({', '.join(parts)})")

    def rows(self, table: str) -> list[tuple]:
        shape = self.catalog.table(table)
        assert shape is not None
        return self.connection.execute(
            f"SELECT {', '.join(quote(c) for c in shape.column_names)} FROM {quote(shape.name)}"
        ).fetchall()

    def row(self, table: Table, key: dict[str, Any]) -> dict[str, Any] | None:
        where = " AND ".join(f"{quote(c)} = ?" for c in key)
        found = self.connection.execute(
            f"SELECT * FROM {quote(table.name)} WHERE {where}", list(key.values())).fetchone()
        return None if found is None else dict(zip(table.column_names, found))

    def execute(self, sql: str, params: dict[str, Any] | Sequence[Any] = ()) -> list[tuple]:
        return run_sql(self.connection, sql, params)

    # -- tentative writes: attempt, then keep or undo --------------------------------------
    def attempt(self, writes: Callable[[sqlite3.Connection], object],
                touched: Iterable[dict[str, Any]], table: Table) -> Verdict:
        """Apply ``writes`` (of the rows ``touched`` into ``table``) inside a savepoint left
        open, and judge the result."""
        self.connection.execute("SAVEPOINT attempt")
        touched = list(touched)
        try:
            refused = writes(self.connection)
        except sqlite3.IntegrityError as err:
            return Verdict(False, f"SQL refuses it: {err}")
        if isinstance(refused, str):  # the write's own reason (no such row)
            return Verdict(False, refused)
        orphans = self.connection.execute("PRAGMA foreign_key_check").fetchall()
        if orphans:
            return Verdict(False, f"foreign key broken: {orphans[0]}")
        broken = self._unique(table, touched) or self._cardinality(table, touched)
        return Verdict(broken is None, broken or "")

    def keep(self) -> None:
        self.connection.execute("RELEASE attempt")

    def undo(self) -> None:
        self.connection.execute("ROLLBACK TO attempt")
        self.connection.execute("RELEASE attempt")

    def _unique(self, table: Table, touched: list[dict[str, Any]]) -> str | None:
        """Does a written row share its unique key's values with another row (NULLs
        distinct unless the key says NULLS NOT DISTINCT)?"""
        for key in table.unique_keys:
            for row in touched:
                values = [row[c] for c in key.columns]
                if key.nulls_distinct and any(v is None for v in values):
                    continue
                where = " AND ".join(f"{quote(c)} IS ?" for c in key.columns)
                (found,) = self.connection.execute(
                    f"SELECT COUNT(*) FROM {quote(table.name)} WHERE {where}", values).fetchone()
                if found > 1:
                    return f"{table.name} breaks {key.describe()} at {values}"
        return None

    def _cardinality(self, table: Table, touched: list[dict[str, Any]]) -> str | None:
        """Does a group a written row belongs to break a CARDINALITY constraint? NULL counts
        as a value and a NULL group is a group (docs/language.md); only the written rows'
        groups are judged."""
        for con in table.cardinalities:
            column = quote(con.column)
            for row in touched:
                group = [row[c] for c in con.per]
                where = " AND ".join(f"{quote(c)} IS ?" for c in con.per) or "1 = 1"
                (found,) = self.connection.execute(
                    f"SELECT COUNT(DISTINCT {column}) + MAX({column} IS NULL) "
                    f"FROM {quote(table.name)} WHERE {where}", group).fetchone()
                if (found or 0) > con.limit:
                    return (f"{table.name} breaks {con.describe()}: {found} values for "
                            f"{dict(zip(con.per, group))}")
        return None


# -- the query's own SQL ----------------------------------------------------------------------
def own_sql(query: QueryPlan) -> str:
    """The query's text as written, its ``<name>`` parameters as SQLite's ``:name``."""
    return PLACEHOLDER.sub(lambda m: ":" + m.group(1), query.query.sql)


@dataclass(frozen=True)
class OwnSQL:
    """A query's own SQL in the forms the comparisons need, rendered once."""

    plain: str  # the text as written
    ordered: str | None  # without LIMIT, ORDER BY values as hidden trailing columns
    hidden: int  # how many hidden columns ``ordered`` has
    limit: int | None
    window: str | None  # a tuple window's subquery, unlimited, with hidden order columns
    window_hidden: int = 0
    window_size: int | None = None
    outer: str | None = None  # the query reading the window rows from _oracle_window
    offset: int = 0  # OFFSET m: ``ordered`` holds every row, the answer starts at row m
    limit_param: str | None = None  # LIMIT :n: the limit is that parameter's value


@functools.lru_cache(maxsize=None)
def compiled(sql: str) -> OwnSQL:
    """``sql`` (a query's text with ``:name`` parameters) in every form the checks run."""
    parsed = sqlglot.parse_one(sql, read="sqlite")
    assert isinstance(parsed, (exp.Select, exp.Union)), sql
    select = exact_sums(exact_means(parsed))
    if select != parsed:
        sql = select.sql(dialect="sqlite")
    ordered, hidden = None, 0
    if select.args.get("order"):
        full, hidden = with_order_columns(select)
        ordered = full.sql(dialect="sqlite")
    sub = window_subquery(select)
    if sub is None:
        offset = select.args.get("offset")
        limit = select.args.get("limit")
        param = limit.expression.name if limit is not None and \
            isinstance(limit.expression, exp.Placeholder) else None
        return OwnSQL(sql, ordered, hidden, None if param else limit_of(select), None,
                      offset=int(offset.expression.name) if offset is not None else 0,
                      limit_param=param)
    inner, inner_hidden = with_order_columns(sub.this)
    outer = select.copy()
    replaced = window_subquery(outer)
    assert replaced is not None
    replaced.replace(exp.to_table("_oracle_window").as_(sub.alias or "_oracle_window"))
    return OwnSQL(sql, ordered, hidden, limit_of(select), inner.sql(dialect="sqlite"),
                  inner_hidden, limit_of(sub.this), outer.sql(dialect="sqlite"))


def exact_means(select: exp.Select) -> exp.Select:
    """``select`` with every ``AVG(x)`` as ``CAST(SUM(x) AS REAL) / COUNT(x)``: SQL's mean,
    the exact sum divided once. SQLite (3.40) adds an AVG's values as doubles, so the low
    bits of big integers vanish (AVG of 1, 2^53+1, -(2^53+1) is 0.0 there, 1/3 exactly);
    its SUM of integers is exact."""
    def exact(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Avg):
            total = exp.Cast(this=exp.Sum(this=node.this.copy()), to=exp.DataType.build("REAL"))
            return exp.Div(this=total, expression=exp.Count(this=node.this.copy()))
        return node

    return select.transform(exact)  # type: ignore[return-value]


def _resolved(select: exp.Select, node: exp.Expression) -> exp.Expression:
    """An ORDER BY item naming an output column, replaced by that column's expression."""
    if isinstance(node, exp.Column) and not node.table:
        for item in select.expressions:
            if isinstance(item, exp.Alias) and item.alias.lower() == node.name.lower():
                return item.this.copy()
    return node.copy()


def with_order_columns(select: exp.Select) -> tuple[exp.Select, int]:
    """``select`` without LIMIT, its ORDER BY values appended as hidden columns."""
    if isinstance(select, exp.Union):  # ordered by output names: order the union's rows
        inner = select.copy()
        order = inner.args.get("order")
        for key in ("order", "limit", "offset"):
            inner.set(key, None)
        outer = exp.select(exp.Star()).from_(exp.Subquery(this=inner, alias="_oracle_union"))
        hidden = [exp.alias_(item.this.copy(), f"_oracle_order{n}")
                  for n, item in enumerate(order.expressions if order else ())]
        for column in hidden:
            outer.append("expressions", column)
        if order is not None:
            outer.set("order", order.copy())
        return outer, len(hidden)
    full = select.copy()
    order = full.args.get("order")
    hidden = []
    for position, item in enumerate(order.expressions if order else ()):
        hidden.append(exp.alias_(_resolved(full, item.this), f"_oracle_order{position}"))
    full.set("limit", None)
    full.set("offset", None)
    for column in hidden:
        full.append("expressions", column)
    return full, len(hidden)


def limit_of(select: exp.Select) -> int | None:
    limit = select.args.get("limit")
    return None if limit is None else int(limit.expression.name)


def window_subquery(select: exp.Select) -> exp.Subquery | None:
    """A FROM-subquery with ORDER BY ... LIMIT (a tuple window), if the query has one."""
    for sub in select.find_all(exp.Subquery):
        inner = sub.this
        if isinstance(inner, exp.Select) and inner.args.get("limit") and inner.args.get("order"):
            return sub
    return None


# -- comparing answers --------------------------------------------------------------------------
def canonical(value: Any, loose: bool = False) -> Any:
    """A value as compared: its SQL class (integer, real, text, NULL) and its value; reals
    to 10 significant digits (sums of floats differ in the last bits by evaluation order).
    ``loose``: an integral real is the integer (for tests that compare as Python does)."""
    if loose and isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return ("int", int(value))
    if isinstance(value, bool):
        return ("int", int(value))
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        if math.isnan(value):
            return ("real", "nan")
        return ("real", float(f"{value:.10g}"))
    if value is None:
        return ("null", None)
    return (type(value).__name__, value)


def canonical_row(row: Sequence[Any], loose: bool = False) -> tuple:
    return tuple(canonical(v, loose) for v in row)


def _close(a: Any, b: Any, loose: bool) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (
            math.isnan(a) and math.isnan(b))
    return canonical(a, loose) == canonical(b, loose)


def same_multiset(got: Sequence[Sequence[Any]], expected: Sequence[Sequence[Any]],
                  loose: bool = False) -> bool:
    """Equal as multisets, reals compared with a relative tolerance."""
    if Counter(canonical_row(r, loose) for r in got) == \
            Counter(canonical_row(r, loose) for r in expected):
        return True
    if len(got) != len(expected):
        return False
    left = list(expected)
    for row in got:
        match = next((i for i, other in enumerate(left) if len(other) == len(row)
                      and all(_close(a, b, loose) for a, b in zip(row, other))), None)
        if match is None:
            return False
        left.pop(match)
    return True


def valid_top_k(got: Sequence[Sequence[Any]], full: Sequence[tuple[tuple, tuple]],
                limit: int | None, loose: bool = False, offset: int = 0) -> str | None:
    """Why ``got`` is not a first-``limit`` rows of ``full`` in an order its ORDER BY
    allows (``full``: every row with its order values, in order), or None: position i
    must hold a row whose order values are the i-th ones, each row used once."""
    # OFFSET m: the rows from position m on; a tie across position m may be cut either way,
    # so any row of the whole answer with the right order values may stand there.
    rest = max(0, len(full) - offset)
    wanted = rest if limit is None else min(limit, rest)
    if len(got) != wanted:
        return f"{len(got)} rows, expected {wanted}"
    pool = Counter((canonical_row(row, loose), canonical_row(key, loose)) for row, key in full)
    for position, row in enumerate(got):
        key = canonical_row(full[offset + position][1], loose)
        if pool[(canonical_row(row, loose), key)] <= 0:
            return (f"row {position} {tuple(row)!r} is not a row with order values "
                    f"{full[offset + position][1]!r} (the {offset + position + 1}th in order)")
        pool[(canonical_row(row, loose), key)] -= 1
    return None


# -- parameters -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParamSource:
    """Where a parameter's values come from: an expression over one base table."""

    name: str
    table: str
    sql: str  # the compared expression, in SQLite
    kind: str  # int, real or text
    epoch: int | None = None


def param_sources(plan: Plan, query: QueryPlan) -> dict[str, list[ParamSource]]:
    found: dict[str, list[ParamSource]] = {}
    assert query.query.block is not None
    for block in blocks(query.query.block):
        comparisons = list(block.predicates) + [c for r in block.relations for c in r.on
                                                if isinstance(c, Predicate)]
        for condition in walk([block.filters, [r.on for r in block.relations]]):
            if isinstance(condition, InList):  # IN (<a>, <b>): values of the column
                comparisons += [Predicate(condition.arg, "=", v) for v in condition.values]
        for pred in comparisons:
            if not isinstance(pred.right, Param):
                continue
            target = pred.left.attr if isinstance(pred.left, Epoch) else pred.left
            if not isinstance(target, Attr):
                continue
            for table_name, column_name in relation_columns(block, target):
                table = plan.catalog.table(table_name)
                assert table is not None
                column = table.column(column_name)
                assert column is not None
                if isinstance(pred.left, Epoch):
                    width = pred.left.width
                    sql = f"{quote(column.name)} - {quote(column.name)} % {width}"
                    source = ParamSource(pred.right.name, table.name, sql, "int", width)
                else:
                    source = ParamSource(pred.right.name, table.name, quote(column.name),
                                         base_type(column.type))
                found.setdefault(pred.right.name, []).append(source)
        for condition in walk(block.filters):  # LOWER(email) = [LOWER](<e>): that expression's
            source = _expression_source(plan, block, condition)
            if source is not None:
                found.setdefault(source.name, []).append(source)
    return found


def _expression_source(plan: Plan, block: QueryBlock, condition: object) -> ParamSource | None:
    """``f(t.c) = <p>`` (or ``= g(<p>)``): <p> takes the values of f(c) in t."""
    if not isinstance(condition, Compare) or condition.op != "=":
        return None
    for side, other in ((condition.left, condition.right), (condition.right, condition.left)):
        if isinstance(other, Call) and len(other.args) == 1:
            other = other.args[0]
        attrs = attrs_in(side)
        if not isinstance(other, Param) or not isinstance(side, Call) or len(attrs) != 1:
            continue
        tables = [t for t, _ in relation_columns(block, attrs[0])]
        if tables:
            sql = sqlgen.render(sqlgen.expression(side, qualify=False), "sqlite")
            return ParamSource(other.name, tables[0], sql, "text")
    return None


def parameter_sets(mirror: Mirror, plan: Plan, query: QueryPlan, rng: random.Random,
                   per_param: int = 3, most: int = 6) -> list[dict[str, Any]]:
    """Parameter values present in the data (a few, chosen by ``rng``) and an absent one,
    combined; at most ``most`` sets."""
    domains: dict[str, list[Any]] = {}
    for name, sources in param_sources(plan, query).items():
        present: set[Any] = set()
        for source in sources:
            present |= {v for (v,) in mirror.execute(
                f"SELECT DISTINCT {source.sql} FROM {quote(source.table)}") if v is not None}
        values = sorted(present, key=repr)
        chosen = rng.sample(values, min(per_param, len(values)))
        first = sources[0]
        if first.epoch is not None:
            absent: Any = T0 - 7 * first.epoch
        elif first.kind == "int":
            absent = ABSENT_INT
        elif first.kind == "real":
            absent = float(ABSENT_INT)
        else:
            absent = ABSENT_TEXT
        domains[name] = chosen + [absent]
    block = query.query.block
    if block.limit_param is not None:  # LIMIT <n>: from 0 to its declared maximum
        domains[block.limit_param.name] = sorted({0, 1, block.limit or 0, rng.randint(0, block.limit or 0)})
    combos = [dict(zip(domains, values)) for values in itertools.product(*domains.values())]
    if len(combos) > most:
        present_only = [c for c in combos if all(v in domains[k][:-1] for k, v in c.items())]
        rest = [c for c in combos if c not in present_only]
        combos = rng.sample(present_only, min(len(present_only), most - 1)) + rng.sample(rest, 1)
    return combos


# -- the session ------------------------------------------------------------------------------
class OracleFailure(AssertionError):
    """piql disagreed with SQL or with its own bounds."""


@dataclass
class Stats:
    accepted: int = 0
    refused: int = 0
    queries: int = 0  # piql executions, each within its bound
    compared: int = 0  # of which compared with the query's SQL
    ambiguous_windows: int = 0
    refreshes: int = 0
    checks: int = 0
    compared_queries: set[str] = field(default_factory=set)

    def add(self, other: "Stats") -> None:
        for name in self.__dataclass_fields__:
            mine = getattr(self, name)
            if isinstance(mine, set):
                mine |= getattr(other, name)
            else:
                setattr(self, name, mine + getattr(other, name))


@dataclass
class Session:
    """A deployment of ``oracle`` beside its mirror; every write and check goes here."""

    oracle: OracleApp
    engine: str = "duckdb"
    partitions: int = 3
    check_every: int = 0  # also run Deployment.check() every n accepted writes (0: never)
    seed: int = 0
    stats: Stats = field(default_factory=Stats)
    store: str = ":memory:"  # where to deploy: a SQLite file, or a PostgreSQL URI

    def __post_init__(self) -> None:
        self.plan = self.oracle.plan
        self.catalog = self.plan.catalog
        self.db: Deployment = self.oracle.app.deploy(self.store, partitions=self.partitions,
                                                     engine=self.engine)
        self.mirror = Mirror(self.catalog, [i for i in self.plan.indexes + self.plan.check_indexes
                                            if i.unique])
        self.rng = random.Random(self.seed)
        self.fresh = False  # periodic views reflect the current data (no write since refresh)

    def close(self) -> None:
        self.db.close()
        self.mirror.connection.close()

    def table(self, name: str) -> Table:
        table = self.catalog.table(name)
        assert table is not None
        return table

    # -- writes -----------------------------------------------------------------------------
    def insert(self, table: str, row: dict[str, Any]) -> bool:
        shape = self.table(table)
        names = list(row)

        def write(sql: sqlite3.Connection) -> None:
            sql.execute(f"INSERT INTO {quote(shape.name)} ({', '.join(map(quote, names))}) "
                        f"VALUES ({', '.join('?' for _ in names)})", [row[c] for c in names])

        # the row as SQL keeps it: NULL, or the DEFAULT, in the columns it omits
        stored = {c.name: c.default for c in shape.columns} | row
        return self._write(("insert", table, row), shape, write, [stored],
                           lambda: [self.db.insert(table, **row)])

    def delete(self, table: str, key: dict[str, Any]) -> bool:
        shape = self.table(table)

        def write(sql: sqlite3.Connection) -> str | None:
            where = " AND ".join(f"{quote(c)} = ?" for c in key)
            done = sql.execute(f"DELETE FROM {quote(shape.name)} WHERE {where}", list(key.values()))
            return None if done.rowcount else "no such row"

        return self._write(("delete", table, key), shape, write, [],
                           lambda: [self.db.delete(table, **key)])

    def update(self, table: str, row: dict[str, Any]) -> bool:
        shape = self.table(table)
        key = [c for c in shape.primary_key]
        rest = [c for c in row if c not in key]

        def write(sql: sqlite3.Connection) -> str | None:
            if not rest:
                found = self.mirror.row(shape, {c: row[c] for c in key})
                return None if found else "no such row"
            done = sql.execute(
                f"UPDATE {quote(shape.name)} SET {', '.join(f'{quote(c)} = ?' for c in rest)} "
                f"WHERE {' AND '.join(f'{quote(c)} = ?' for c in key)}",
                [row[c] for c in rest] + [row[c] for c in key])
            return None if done.rowcount else "no such row"

        old = self.mirror.row(shape, {c: row[c] for c in key})
        frozen = old is not None and self.changes_frozen(shape, old, row)
        return self._write(("update", table, row), shape, write, [row],
                           lambda: self.db.update(table, **row), frozen)

    def changes_frozen(self, table: Table, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Does an update change a column the plan freezes (a periodic view reads it through
        a join whose old windows no bounded lookup finds: piql refuses such updates, and
        lint says so)?"""
        return any(canonical(old[c]) != canonical(new[c]) for view in self.db.views
                   for frozen in view.frozen if frozen.table.lower() == table.name.lower()
                   for c in frozen.columns)

    def load(self, table: str, rows: list[dict[str, Any]]) -> bool:
        shape = self.table(table)

        def write(sql: sqlite3.Connection) -> None:
            for row in rows:
                names = list(row)
                sql.execute(f"INSERT INTO {quote(shape.name)} ({', '.join(map(quote, names))}) "
                            f"VALUES ({', '.join('?' for _ in names)})", [row[c] for c in names])

        return self._write(("load", table, rows), shape, write, rows,
                           lambda: (self.db.load(table, rows), [])[1])

    def _write(self, what: tuple, table: Table, mirror_write, touched: list[dict[str, Any]],
               piql_write: Callable[[], list], frozen: bool = False) -> bool:
        verdict = self.mirror.attempt(mirror_write, touched, table)
        before = self._snapshot()
        try:
            reports = piql_write()
        except ConstraintError as err:
            excuse = "it changes a frozen column" if frozen else \
                self._excuse(err, touched) if verdict.ok else "SQL refuses it"
            self.mirror.undo()
            if excuse is None:
                raise OracleFailure(f"piql refused a write SQL accepts: {what!r}: {err}") from None
            after = self._snapshot()
            if after != before:
                changed = sorted(n for n in after if after[n] != before[n])  # type: ignore[index]
                raise OracleFailure(f"a refused write changed {changed}: {what!r}: {err}")
            self.stats.refused += 1
            return False
        except BaseException:
            self.mirror.undo()
            raise
        if not verdict.ok:
            self.mirror.undo()
            raise OracleFailure(f"piql accepted a write SQL refuses ({verdict.reason}): {what!r}")
        self.mirror.keep()
        self.stats.accepted += 1
        self.fresh = False
        for report in reports:
            if report.ops > report.bound:
                raise OracleFailure(f"{what[0]} into {report.table} did {report.ops} ops, "
                                    f"bound {report.bound}")
            for rule, measured, bound in report.rules:
                if measured > bound:
                    raise OracleFailure(f"rule {rule} did {measured} ops, bound {bound}")
        self.assert_base_tables()
        if self.check_every and self.stats.accepted % self.check_every == 0:
            self.assert_views_consistent()
        return True

    def _excuse(self, err: ConstraintError, touched: list[dict[str, Any]]) -> str | None:
        """Why piql may refuse a write SQL accepts (the mirror holds the write), or None:
        it keeps no NaN or infinity (issue 12, item 6 lets it refuse them), and no SUM it
        maintains may leave 64 bits (SQL's own SUM would overflow there)."""
        if any(isinstance(v, float) and not math.isfinite(v)
               for row in touched for v in row.values()):
            return "a non-finite REAL"
        if "integer range" in str(err) and self.sum_overflows():
            return "a maintained SUM leaves 64 bits"
        return None

    def sum_overflows(self) -> bool:
        """Does some group of a view with a SUM leave 64 bits, computed exactly (DuckDB)
        from the view's definition over the mirror's tables?"""
        duck = duckdb.connect()
        try:
            for table in self.catalog.tables:
                duck.register(table.name, TableData(
                    table.name, table.column_names, tuple(c.type for c in table.columns),
                    self.mirror.rows(table.name)).arrow())
            for view in self.db.views:
                sums = [i for i, c in enumerate(view.definition.select)
                        if isinstance(c.expr, Aggregate) and c.expr.func == "SUM"]
                if view.kind == ViewKind.PERIODIC or not sums:
                    continue
                rows = duck.execute(sqlgen.block_sql(view.definition, "duckdb")).fetchall()
                if any(isinstance(row[i], int) and not -2**63 <= row[i] < 2**63
                       for row in rows for i in sums):
                    return True
            return False
        finally:
            duck.close()

    def _snapshot(self) -> dict[str, Counter]:
        return {name: Counter(map(canonical_row, self.db.rows(name)))
                for name in self.db.store.shapes}

    # -- checks -------------------------------------------------------------------------------
    def assert_base_tables(self) -> None:
        for table in self.catalog.tables:
            mine, theirs = self.db.rows(table.name), self.mirror.rows(table.name)
            if Counter(map(canonical_row, mine)) != Counter(map(canonical_row, theirs)):
                raise OracleFailure(f"base table {table.name} differs from SQL's: piql "
                                    f"{sorted(mine, key=repr)} vs {sorted(theirs, key=repr)}")

    def assert_views_consistent(self) -> None:
        report = self.db.check()
        self.stats.checks += 1
        wrong = [v for v in report.views if not v.consistent]
        if wrong:
            details = "; ".join(f"{v.view}: missing {v.missing[:3]}, extra {v.extra[:3]}"
                                for v in wrong)
            raise OracleFailure(f"views differ from their recomputation: {details}")

    def refresh(self, now_ms: int) -> None:
        """Refresh every periodic view, check each partition's bound, then compare every
        periodic query with its SQL."""
        for report in self.db.refresh(now_ms=now_ms):
            if report.max_partition_reads > report.per_partition_bound:
                raise OracleFailure(f"refresh of {report.view} read {report.max_partition_reads} "
                                    f"tuples from a partition, bound {report.per_partition_bound}")
        self.stats.refreshes += 1
        self.fresh = True
        self.assert_views_consistent()
        self.assert_queries(periodic=True)

    def bounded_queries(self) -> list[QueryPlan]:
        return [q for q in self.plan.queries if q.bounded]

    def assert_queries(self, periodic: bool = False) -> None:
        """Every bounded query, for a few parameter sets: within its bound, and equal to its
        SQL (periodic queries only while ``fresh``; ``periodic`` runs only them)."""
        for query in self.bounded_queries():
            is_periodic = query.level == "SI-3"
            if periodic and not is_periodic:
                continue
            compare = self.fresh or not is_periodic
            for params in parameter_sets(self.mirror, self.plan, query, self.rng):
                self.assert_query(query, params, compare)

    def assert_query(self, query: QueryPlan, params: dict[str, Any], compare: bool = True) -> None:
        got = self.db.query(query.name, **params)  # strict: BoundExceeded is a failure
        self.stats.queries += 1
        if got.ops > got.bound:
            raise OracleFailure(f"{query.name}{params} did {got.ops} ops, bound {got.bound}")
        if not compare:
            return
        self.stats.compared += 1
        self.stats.compared_queries.add(query.name)
        problem = self.disagreement(query, params, list(got.rows))
        if problem:
            raise OracleFailure(f"{query.name} ({query.level}) with {params}: {problem}")

    def disagreement(self, query: QueryPlan, params: dict[str, Any],
                     got: list[tuple]) -> str | None:
        """Why ``got`` is not an answer the query's SQL allows on the mirror, or None."""
        own = compiled(own_sql(query))
        if own.ordered is not None:
            rows = self.mirror.execute(own.ordered, params)
            width = len(rows[0]) - own.hidden if rows else 0
            ordered = [(tuple(r[:width]), tuple(r[width:])) for r in rows]
            limit = params[own.limit_param] if own.limit_param else own.limit
            problem = valid_top_k(got, ordered, limit, offset=own.offset)
            return None if problem is None else \
                f"{problem}; piql {got!r}; SQL's order {ordered[:12]!r}"
        candidates = self.window_answers(own, params)
        if not candidates or any(same_multiset(got, answer) for answer in candidates):
            return None
        return f"piql {sorted(got, key=repr)!r}; SQL {sorted(candidates[0], key=repr)!r}" + (
            f" (or {len(candidates) - 1} other choices of tied window rows)"
            if len(candidates) > 1 else "")

    def window_answers(self, own: OwnSQL, params: dict[str, Any]) -> list[list[tuple]]:
        """The answers SQL allows: one, unless a tuple window's boundary falls inside a tie of
        its order values; then one per choice of the tied rows (none when there are more
        than 40 choices: such a case is counted in ``stats``, not compared)."""
        plain = self.mirror.execute(own.plain, params)
        if own.window is None:
            return [plain]
        size = own.window_size
        assert size is not None and own.outer is not None
        cursor = self.mirror.connection.execute(own.window, params)
        rows = cursor.fetchall()
        width = len(cursor.description) - own.window_hidden
        names = [d[0] for d in cursor.description][:width]
        if len(rows) <= size:
            return [plain]
        boundary = canonical_row(rows[size - 1][width:])
        tied = [i for i, r in enumerate(rows) if canonical_row(r[width:]) == boundary]
        before = list(range(tied[0]))
        need = size - len(before)
        if need == len(tied):
            return [plain]
        choices = list(itertools.islice(itertools.combinations(tied, need), 41))
        if len(choices) > 40:  # too many admissible answers to list: not compared
            self.stats.ambiguous_windows += 1
            return []
        answers = []
        for choice in choices:
            chosen = [rows[i][:width] for i in before + list(choice)]
            self.mirror.connection.execute("DROP TABLE IF EXISTS temp._oracle_window")
            self.mirror.connection.execute(
                f"CREATE TEMP TABLE _oracle_window ({', '.join(map(quote, names))})")
            self.mirror.connection.executemany(
                f"INSERT INTO _oracle_window VALUES ({', '.join('?' for _ in names)})", chosen)
            answers.append(self.mirror.execute(own.outer, params))
        self.mirror.connection.execute("DROP TABLE IF EXISTS temp._oracle_window")
        return answers

    def finish(self) -> None:
        """The end of a history: views consistent and every answer right after a refresh."""
        self.assert_views_consistent()
        self.assert_queries()
        if any(q.level == "SI-3" for q in self.bounded_queries()):
            self.refresh(self.now())

    def now(self) -> int:
        """A clock for refreshes: the hour after the newest TEMPORAL value."""
        newest = T0
        for table in self.catalog.tables:
            for column in table.temporal_columns:
                (value,) = self.mirror.execute(
                    f"SELECT MAX({quote(column)}) FROM {quote(table.name)}")[0]
                if value is not None and value < 2**62:
                    newest = max(newest, value)
        return newest + HOUR // 2


# -- drawing writes -------------------------------------------------------------------------
class Writer:
    """Draws writes for a session with hypothesis: rows of generated values whose foreign
    keys mostly point at existing parents (sometimes at nothing, at NULL or at the row
    itself), deletes and updates of existing rows (sometimes of absent keys)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.values = Values(session.oracle)

    def row(self, data: st.DataObject, table: Table) -> dict[str, Any]:
        row = {c.name: data.draw(self.values.column(table, c.name), label=f"{table.name}.{c.name}")
               for c in table.columns}
        for fk in table.foreign_keys:
            row.update(self.reference(data, table, fk, row))
        return row

    def reference(self, data: st.DataObject, table: Table, fk, row: dict[str, Any]) -> dict:
        ways = ["parent"] * 6 + ["drawn"]
        if all(self.values.nullable(table, c) for c in fk.columns):
            ways.append("null")
        self_reference = fk.ref_table.lower() == table.name.lower() and \
            tuple(fk.ref_columns) == tuple(table.primary_key)
        if self_reference:
            ways.append("self")
        way = data.draw(st.sampled_from(ways), label=f"{table.name} -> {fk.ref_table}")
        if way == "null":
            return {c: None for c in fk.columns}
        if way == "self":
            return {c: row[r] for c, r in zip(fk.columns, fk.ref_columns)}
        if way == "parent":
            parents = self.session.mirror.execute(
                f"SELECT {', '.join(map(quote, fk.ref_columns))} FROM {quote(fk.ref_table)}")
            if parents:
                parent = data.draw(st.sampled_from(sorted(parents, key=repr)),
                                   label=f"{fk.ref_table} row")
                return dict(zip(fk.columns, parent))
        return {}

    def burst(self, data: st.DataObject, table: Table) -> list[dict[str, Any]]:
        """Rows that share one group of a CARDINALITY constraint (or, without one, all
        non-key values): inserted one after the other they reach and pass its limit."""
        base = self.row(data, table)
        constraints = table.cardinalities
        varying = set(table.primary_key)
        if constraints:
            constraint = data.draw(st.sampled_from(constraints), label="constraint")
            varying |= {constraint.column}
            varying -= set(constraint.per)
        referring = {c for fk in table.foreign_keys for c in fk.columns}
        fresh = [c for c in table.primary_key if c not in referring]
        rows = []
        for number in range(data.draw(st.integers(2, 6), label="burst size")):
            other = self.row(data, table)
            for column in fresh:  # new keys, so the rows meet the constraint, not the key
                kind = base_type(table.column(column).type)  # type: ignore[union-attr]
                other[column] = 1000 + number if kind == "int" else f"k{number}"
            rows.append({c: other[c] if c in varying else base[c] for c in table.column_names})
        return rows

    def existing(self, data: st.DataObject, table: Table) -> dict[str, Any] | None:
        rows = self.session.mirror.rows(table.name)
        if not rows or data.draw(st.integers(0, 7), label="absent row") == 0:
            return None
        chosen = data.draw(st.sampled_from(sorted(rows, key=repr)), label=f"{table.name} row")
        return dict(zip(table.column_names, chosen))

    def key(self, data: st.DataObject, table: Table) -> dict[str, Any]:
        found = self.existing(data, table)
        if found is None:
            found = self.row(data, table)
        return {c: found[c] for c in table.primary_key}

    def changed(self, data: st.DataObject, table: Table) -> dict[str, Any]:
        """An existing row (or an absent key) with new values in some non-key columns."""
        old = self.existing(data, table) or self.row(data, table)
        new = self.row(data, table)
        keep = data.draw(st.lists(st.booleans(), min_size=len(table.columns),
                                  max_size=len(table.columns)), label="keep columns")
        return {c: old[c] if c in table.primary_key or kept else new[c]
                for c, kept in zip(table.column_names, keep)}
