"""Bulk loads: many base rows at once, checked and inserted set-oriented, views rebuilt.

The batch is staged in a scratch table of the store; the key, UNIQUE, CARDINALITY and
FOREIGN KEY checks run as set-oriented SQL on the batch and the table (the CARDINALITY
count on the engine, when there is one); the batch is inserted, the epochs it reaches
through the time windows' joins are marked, and every maintained view reading the table
is rebuilt from the data, all in one transaction: all or nothing.

The rows stream: they go from their source (a file read batch by batch, or any iterable)
straight into the scratch table, so a load holds one batch of Python rows at a time, not
the file; every check is then SQL over the whole scratch table, and a refusal (in the
last batch too) rolls everything back.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator, Protocol, Sequence

from sqlglot import exp

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Table
from piql.engines.base import Engine
from piql.planner.naming import LOAD_PREFIX
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, WriteEvent
from piql.query_block import Attr, Param, QueryBlock, Relation, normalized_predicate
from piql.runtime.check import plain_row
from piql.runtime.engine_bridge import export
from piql.runtime.epochs import EpochWindow, mark_epochs
from piql.runtime.errors import ConstraintError, StoreRefused
from piql.runtime.store import Store


class Runs(Protocol):
    """What the set-oriented checks need: SQL in a dialect, answered (a store, or Spark's
    tables in ``runtime.spark_load``)."""

    dialect: str

    def sql(self, text: str) -> list[tuple[Any, ...]]: ...


def load(store: Store, table: Table, records: Iterable[tuple], views: tuple[ViewDef, ...],
         engine: Engine | None, epoch_windows: dict[str, list[EpochWindow]],
         rebuild: Callable[[ViewDef], None]) -> int:
    """Check and insert ``records`` (complete rows of ``table``, read once) and ``rebuild``
    every maintained view that reads the table, in one transaction of ``store``; how many
    rows were loaded."""
    return load_tables(store, [(table, records)], views, engine, epoch_windows, rebuild)[0]


def load_tables(store: Store, batches: Sequence[tuple[Table, Iterable[tuple]]],
                views: tuple[ViewDef, ...], engine: Engine | None,
                epoch_windows: dict[str, list[EpochWindow]],
                rebuild: Callable[[ViewDef], None]) -> list[int]:
    """Load every batch, in order (parents before the children their foreign keys name),
    then rebuild each maintained view reading any of the tables once: all in one
    transaction, so a batch refused leaves every table as it was. Returns the rows loaded
    per batch."""
    staged: list[str] = []
    counts: list[int] = []
    current = ""
    try:
        with store.transaction():
            for table, records in batches:
                current = table.name
                name = f"{LOAD_PREFIX}{table.name}"
                if name in staged:  # the same table twice: each batch checked on its own
                    store.drop_staged(name)
                else:
                    staged.append(name)
                counted = _Counted(records)
                _load_batch(store, table, counted, name, views, engine, epoch_windows)
                counts.append(counted.count)
            loaded = [table.name for table, _ in batches]
            for view in views:
                if view.kind in (ViewKind.IMV, ViewKind.STAGING) and \
                        any(view.reads(t) for t in loaded):
                    rebuild(view)
    except StoreRefused as err:
        raise ConstraintError(f"the store refused the load into {current}: {err}") from None
    finally:
        for name in staged:
            store.drop_staged(name)
    return counts


class _Counted:
    """An iterable of rows that counts the rows taken from it (the batch streams into the
    store, so its length is known only once it has been read)."""

    def __init__(self, rows: Iterable[tuple]) -> None:
        self.rows, self.count = rows, 0

    def __iter__(self) -> Iterator[tuple]:
        for row in self.rows:
            self.count += 1
            yield row


def _load_batch(store: Store, table: Table, records: Iterable[tuple], staged: str,
                views: tuple[ViewDef, ...], engine: Engine | None,
                epoch_windows: dict[str, list[EpochWindow]]) -> None:
    store.stage(staged, table.name, records)
    _key_checks(store, table, staged)
    _unique_checks(store, table, staged)
    _cardinality_checks(store, engine, table, staged)
    store.insert_staged(staged, table.name)
    # after the insert, so a self-referencing batch may hold its own parents
    _foreign_key_checks(store, table, staged)
    _mark_loaded(store, table, staged, views, epoch_windows)


def _mark_loaded(store: Store, table: Table, staged: str, views: tuple[ViewDef, ...],
                 epoch_windows: dict[str, list[EpochWindow]], runs: Runs | None = None) -> None:
    """Loaded rows of a table a time window joins change the windows of the windowed
    tuples they join: mark those epochs, set-oriented (the insert rules' lookups, joined
    with the whole batch, run by ``runs``: the store by default)."""
    runs = runs or store
    windows = {w.view: w for found in epoch_windows.values() for w in found}
    for view in views:
        for rule in view.rules:
            if rule.action == RuleAction.MARK and rule.event == WriteEvent.INSERT and \
                    rule.table.lower() == table.name.lower():
                found = runs.sql(sqlgen.block_sql(_batch_block(rule, staged), runs.dialect))
                window = windows[view.name]
                mark_epochs(store, [window], ({window.column: v} for (v,) in found))


def _cardinality_checks(store: Runs, engine: Engine | None, table: Table, staged: str) -> None:
    """Group and count per key, on the engine if there is one (else the store): the bulk
    form of the per-write check."""
    if engine is not None:
        export(store, engine, [table.name, staged])  # type: ignore[arg-type]
        run, dialect = engine.query, engine.dialect
    else:
        run, dialect = store.sql, store.dialect
    for constraint in table.cardinalities:
        broken = run(cardinality_sql(table.name, staged, constraint, dialect))
        if broken:
            row = plain_row(broken[0])
            values = ", ".join(f"{c}={v!r}" for c, v in zip(constraint.per, row))
            raise ConstraintError(
                f"loading {table.name} breaks {constraint.describe()}: ({values}) would have "
                f"{row[-1]} {constraint.column} values (limit {constraint.limit})")


def cardinality_sql(table: str, staged: str, constraint: CardinalityConstraint,
                    dialect: str) -> str:
    """The first group of ``per`` values of the table plus the staged rows with more than
    ``limit`` distinct ``column`` values, and that count, in ``dialect``.

    NULL is a value as the per-write check counts it: rows with NULL ``per`` values form
    their own group (as GROUP BY groups them), and a NULL ``column`` is one more distinct
    value (which COUNT(DISTINCT ...) alone would skip)."""
    column = sqlgen.column_ref(constraint.column)
    per = [sqlgen.column_ref(c) for c in constraint.per]
    counted = exp.Paren(this=exp.Add(
        this=exp.Count(this=exp.Distinct(expressions=[column.copy()])),
        expression=exp.Max(this=exp.Case(ifs=[exp.If(
            this=exp.Is(this=column.copy(), expression=exp.Null()),
            true=exp.Literal.number(1))], default=exp.Literal.number(0)))))
    both = exp.union(exp.select("*").from_(sqlgen.table_ref(table)),
                     exp.select("*").from_(sqlgen.table_ref(staged)), distinct=False)
    query = exp.select(*per, counted).from_(both.subquery("both_rows")) \
        .having(exp.GT(this=counted.copy(), expression=exp.Literal.number(int(constraint.limit)))) \
        .limit(1)
    if per:
        query = query.group_by(*(c.copy() for c in per))
    return sqlgen.render(query, dialect)


def _batch_block(rule: DeltaRule, staged: str) -> QueryBlock:
    """A rule's delta query for every row of the ``staged`` batch at once: the written tuple's
    parameters become the batch's columns, its guards predicates on them."""
    alias = "_piql_written"

    def sub(value):
        return Attr(alias, value.name) if isinstance(value, Param) else value

    batch = Relation(alias, (), table=staged)
    predicates = tuple(normalized_predicate(sub(p.left), p.op, sub(p.right), p.location)
                       for p in rule.delta.predicates + rule.guards)
    return rule.delta.with_(relations=rule.delta.relations + (batch,), predicates=predicates)


def _key_checks(store: Runs, table: Table, staged: str) -> None:
    q = _quoter(store)
    key = ", ".join(q(c) for c in table.primary_key)
    duplicate = store.sql(f"SELECT {key} FROM {q(staged)} GROUP BY {key} HAVING COUNT(*) > 1 "
                          "LIMIT 1")
    if duplicate:
        raise ConstraintError(f"the data for {table.name} has two rows with key "
                              f"({', '.join(f'{c}={v!r}' for c, v in zip(table.primary_key, duplicate[0]))})")
    join = " AND ".join(f"s.{q(c)} = t.{q(c)}" for c in table.primary_key)
    clash = store.sql(f"SELECT s.* FROM {q(staged)} s JOIN {q(table.name)} t ON {join} LIMIT 1")
    if clash:
        raise ConstraintError(f"{table.name} already has a row with key "
                              f"({', '.join(f'{c}={v!r}' for c, v in zip(table.column_names, clash[0]) if c in table.primary_key)})")


def _unique_checks(store: Runs, table: Table, staged: str) -> None:
    """The bulk form of the per-insert unique-key check (GROUP BY puts NULLs together,
    so keys whose NULLs are distinct leave rows holding a NULL out)."""
    q = _quoter(store)
    for key in table.unique_keys:
        columns = ", ".join(q(c) for c in key.columns)
        present = " AND ".join(f"{q(c)} IS NOT NULL" for c in key.columns) \
            if key.nulls_distinct else "1 = 1"
        both = (f"(SELECT {columns} FROM {q(table.name)} UNION ALL SELECT {columns} FROM "
                f"{q(staged)}) AS both_rows")
        duplicate = store.sql(f"SELECT {columns} FROM {both} WHERE {present} GROUP BY {columns} "
                              "HAVING COUNT(*) > 1 LIMIT 1")
        if duplicate:
            raise ConstraintError(
                f"loading {table.name} breaks {key.describe()}: two rows have "
                f"({', '.join(f'{c}={v!r}' for c, v in zip(key.columns, duplicate[0]))})")


def _foreign_key_checks(store: Runs, table: Table, staged: str) -> None:
    q = _quoter(store)
    for fk in table.foreign_keys:
        match = " AND ".join(f"p.{q(r)} = s.{q(c)}" for c, r in zip(fk.columns, fk.ref_columns))
        present = " AND ".join(f"s.{q(c)} IS NOT NULL" for c in fk.columns)
        orphan = store.sql(f"SELECT {', '.join('s.' + q(c) for c in fk.columns)} FROM "
                           f"{q(staged)} s WHERE {present} AND NOT EXISTS (SELECT 1 FROM "
                           f"{q(fk.ref_table)} p WHERE {match}) LIMIT 1")
        if orphan:
            raise ConstraintError(
                f"the data for {table.name} breaks FOREIGN KEY ({', '.join(fk.columns)}) "
                f"REFERENCES {fk.ref_table}: no {fk.ref_table} row with "
                f"{', '.join(f'{r}={v!r}' for r, v in zip(fk.ref_columns, orphan[0]))}")


def _quoter(store: Runs):
    """Quotes an identifier in the store's dialect."""
    return lambda name: sqlgen.identifier(name, store.dialect)
