"""A plan deployed on the embedded store: the Python API of DESIGN.md's Runtime section.

>>> app = piql.load("schema.sql", "queries.sql")
>>> db = app.deploy("app.db")
>>> db.insert("Tags", docId=1, tag="a", timestamp=5)
>>> db.query("twoTags", tag1="a", tag2="b").ops
"""
from __future__ import annotations

import hashlib
import json
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from piql.catalog import Table
from piql.engines import ENGINES, make_engine
from piql.engines.base import Engine
from piql.engines.jobs import cardinality_sql, cardinality_violation, view_rows
from piql import sql_types, sqlgen
from piql.planner.application import Plan, QueryPlan
from piql.planner.naming import LOAD_PREFIX, RUNTIME_TABLES
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, WriteEvent
from piql.query_block import Attr, Param, QueryBlock, Relation, normalized_predicate
from piql.runtime import sqlvalues
from piql.runtime.check import CheckReport, check_views, recompute
from piql.runtime.datafiles import read_file
from piql.runtime.errors import (
    BoundExceeded, ConstraintError, DeploymentClosed, DeploymentError, ParameterError,
    StoreOverflow, StoreRefused, UnboundedQuery, UnknownName,
)
from piql.runtime.evaluate import finish
from piql.runtime.executor import execute
from piql.runtime.refresh import RefreshReport, epoch_windows, mark_epochs, refresh_view
from piql.runtime.sqlite_store import SQLiteStore
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, TableShape
from piql.runtime.writes import Maintainer, WriteReport

META = RUNTIME_TABLES[0]  # piql's metadata table, in every store
FINGERPRINT = "fingerprint"  # the metadata naming the plan a store holds


@dataclass(frozen=True)
class Result:
    """Rows of one query execution, with its measured operations and static bound."""

    columns: tuple[str, ...]
    rows: tuple[tuple, ...]
    ops: int
    bound: int

    def __iter__(self) -> Iterator[tuple]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, index: int) -> tuple:
        return self.rows[index]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row)) for row in self.rows]


class Deployment:
    """A plan's tables, indexes and views on one SQLite store, and its bounded entry points."""

    def __init__(self, plan: Plan, path: str = ":memory:", *, strict: bool = True,
                 engine: str = "duckdb", spark_master: str | None = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        if not busy_timeout >= 0:
            raise DeploymentError("busy_timeout must be zero or more seconds")
        if engine not in ENGINES + ("store",):
            raise DeploymentError(f"unknown engine {engine!r}; choose one of "
                                  f"{', '.join(ENGINES)} or store")
        self.engine_name = engine
        self.spark_master = spark_master
        self._engine: Engine | None = None
        self.lock = threading.RLock()  # one transaction at a time (scheduled refreshes too)
        self.plan = plan
        self.strict = strict
        self.partitions = plan.partitions  # the plan was made for the store's partitions
        self.views = _dependency_order(plan.views)
        self.closed = False
        self.store: Store = SQLiteStore(str(path), busy_timeout)
        try:
            for shape in self._shapes():
                self.store.register(shape)
            self._install()
        except BaseException:
            self.store.close()
            raise
        self.epoch_windows = epoch_windows(self.views)
        self.maintainer = Maintainer(plan.catalog, self.views, self.store, self.partition_of,
                                     plan.writes, strict, self.epoch_windows)

    # -- set-up --------------------------------------------------------------
    def _shapes(self) -> list[TableShape]:
        shapes = [TableShape(t.name, t.column_names, t.primary_key, tuple(c.type for c in t.columns))
                  for t in self.plan.catalog.tables]
        for view in self.views:
            columns = [c.name for c in view.columns]
            types = [c.type for c in view.columns]
            key = [c.name for c in view.key]
            if not key:  # one aggregate row for the whole table
                columns, types, key = ["_all"] + columns, ["INTEGER"] + types, ["_all"]
            shapes.append(TableShape(view.name, tuple(columns), tuple(key), tuple(types),
                                     view.nullable_key))
        return shapes

    def _indexes(self) -> list[tuple[str, str, tuple[str, ...]]]:
        """The secondary indexes the plan keeps: the queries', then the constraint checks'."""
        return [(i.name, i.table, i.columns) for i in self.plan.indexes + self.plan.check_indexes]

    def fingerprint(self) -> str:
        """Identifies the plan a store was deployed with."""
        described = {
            "tables": [[s.name, s.columns, s.key] + (["nullable key"] if s.nullable_key else [])
                       for s in self._shapes()],
            "indexes": self._indexes(),
            "views": [[v.name, v.kind, v.sql] for v in self.views],
            "partitions": self.partitions,
        }
        return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()

    def _install(self) -> None:
        """Create the plan's tables in a new store, or check an existing store's plan. One
        write transaction decides, so processes deploying the same new store at once are
        serialized: one installs, the others find its plan."""
        fingerprint = self.fingerprint()
        if self._deployed_with(fingerprint):  # reopening needs no write lock
            self.installed = False
            return
        with self.store.transaction():
            self.installed = self._install_or_verify(fingerprint)

    def _deployed_with(self, fingerprint: str) -> bool:
        return set(RUNTIME_TABLES) <= self.store.table_names() and \
            self.store.get_meta(FINGERPRINT) == fingerprint

    def _install_or_verify(self, fingerprint: str) -> bool:
        """True when this deployment created the store's tables, False when it found them."""
        tables = self.store.table_names()
        if META in tables:
            recorded = self.store.get_meta(FINGERPRINT)
            if recorded == fingerprint:
                self.store.create_bookkeeping()  # stores deployed before the epoch marks
                return False
            raise DeploymentError(
                f"the store {self.store.location} was deployed with a different plan "
                f"(recorded {recorded[:12] if recorded else 'nothing'}, this plan "
                f"{fingerprint[:12]}); deploy into a new store, or migrate its data with "
                "`load` into one deployed with this plan")
        if tables:
            raise DeploymentError(f"the store {self.store.location} already holds tables that "
                                  "piql did not create; deploy into a new store")
        for shape in self.store.shapes.values():
            self.store.create_table(shape)
        for name, table, columns in self._indexes():
            self.store.create_index(name, table, columns)
        self.store.create_bookkeeping()
        self.store.set_meta(FINGERPRINT, fingerprint)
        return True

    def partition_of(self, view: ViewDef, values: dict[str, Any]) -> int:
        """The staging partition of a row: a stable hash of its primary key."""
        layout = view.staging
        assert layout is not None
        key = repr(tuple(values[c] for c in layout.partitioned_by)).encode()
        return zlib.crc32(key) % layout.partitions

    def close(self) -> None:
        """Close the store (and the engine); using the deployment afterwards is an error."""
        if self.closed:
            return
        self.closed = True
        if self._engine is not None:
            self._engine.close()
        self.store.close()

    def _open(self) -> None:
        if self.closed:
            raise DeploymentClosed(f"the deployment of {self.store.location} is closed; deploy "
                                   "the store again to use it")

    def engine(self) -> Engine | None:
        """The engine for set-oriented work, started on first use (None: the store itself)."""
        if self.engine_name == "store":
            return None
        if self._engine is None:
            self._engine = make_engine(self.engine_name, spark_master=self.spark_master)
        return self._engine

    def recomputed(self, view: ViewDef) -> list[tuple]:
        """``view`` computed from base data by the engine (or by SQLite for engine "store")."""
        engine = self.engine()
        try:
            rows = recompute(self.store, view, self.partition_of) if engine is None else \
                view_rows(engine, self.store, view, self.partition_of)
        except StoreOverflow:
            rows = None
        if rows is None or not all(map(sqlvalues.fits, (v for row in rows for v in row))):
            raise ConstraintError(f"a SUM of {view.name} leaves the store's integer range "
                                  "(-2**63 .. 2**63-1), where SQL's SUM overflows too")
        return rows

    def _rebuild(self, view: ViewDef) -> None:
        """Replace ``view``'s rows by its recomputation (inside the caller's transaction)."""
        rows = self.recomputed(view)
        self.store.replace_rows(view.name, rows)
        if view.name in self.epoch_windows:  # the periodic views must catch up on every epoch
            names = [c.name for c in view.columns]
            mark_epochs(self.store, self.epoch_windows[view.name],
                        (dict(zip(names, r)) for r in rows))

    def build_views(self, tables: Iterable[str] | None = None) -> list[str]:
        """Recompute every maintained view reading ``tables`` (all when None) in one pass."""
        self._open()
        wanted = None if tables is None else {t.lower() for t in tables}
        built = []
        with self.lock, self.store.transaction():
            for view in self.views:
                if view.kind in (ViewKind.IMV, ViewKind.STAGING) and (
                        wanted is None or any(_reads(view, t) for t in wanted)):
                    self._rebuild(view)
                    built.append(view.name)
        return built

    # -- queries -------------------------------------------------------------
    def query(self, name: str, **params: Any) -> Result:
        """Run a named query through its bounded plan; ``.ops`` is what it cost."""
        self._open()
        query = self.query_plan(name)
        if query.physical is None:
            reason = next((d.message for d in query.diagnostics if d.severity == "error"), "")
            raise UnboundedQuery(f"query {query.name} is unbounded, so piql does not run it: {reason}")
        block = query.query.block
        assert block is not None
        _check_params(query, block, params)
        start = self.store.counter.ops
        rows = execute(self.store, query.physical, params)
        if not rows and block.aggregates and not block.group_by:
            rows = finish(block, [], params)  # an aggregate of nothing: COUNT 0, SUM NULL
        ops = self.store.counter.ops - start
        bound = query.ops_bound or 0
        if self.strict and ops > bound:
            raise BoundExceeded(f"query {query.name} did {ops} operations; its bound is {bound}")
        return Result(tuple(i.name for i in block.select), tuple(rows), ops, bound)

    def query_plan(self, name: str) -> QueryPlan:
        """The planned query called ``name`` (UnknownName if there is none)."""
        query = self.plan.query(name)
        if query is None:
            known = ", ".join(q.name for q in self.plan.queries)
            raise UnknownName(f"no query named '{name}' (known: {known})")
        return query

    # -- writes --------------------------------------------------------------
    def insert(self, table: str, **row: Any) -> WriteReport:
        """Insert one base row and maintain every index and view, in one transaction."""
        definition = self._table(table)
        full = _complete_row(definition, row)
        return self._transaction(lambda: self.maintainer.insert(definition, full))

    def delete(self, table: str, **key: Any) -> WriteReport:
        """Delete the base row with this primary key, maintaining every view."""
        definition = self._table(table)
        return self._transaction(lambda: self.maintainer.delete(definition, _key_of(definition, key)))

    def update(self, table: str, **row: Any) -> list[WriteReport]:
        """Replace the row with the same primary key: a delete then an insert, atomically."""
        definition = self._table(table)
        full = _complete_row(definition, row)
        key = {c: full[c] for c in definition.primary_key}
        return self._transaction(lambda: [self.maintainer.delete(definition, key, replacing=full),
                                          self.maintainer.insert(definition, full)])

    def _transaction(self, work):
        self._open()
        with self.lock:
            try:
                with self.store.transaction():
                    return work()
            except StoreRefused as err:
                raise ConstraintError(f"the store refused the write: {err}") from None

    def _table(self, name: str) -> Table:
        table = self.plan.catalog.table(name)
        if table is None:
            known = ", ".join(t.name for t in self.plan.catalog.tables)
            raise UnknownName(f"no table named '{name}' (known: {known})")
        return table

    # -- bulk load -----------------------------------------------------------
    def load(self, table: str, rows: Iterable[dict[str, Any] | Sequence[Any]] | None = None, *,
             path: str | Path | None = None) -> int:
        """Load many base rows at once (dicts, tuples in column order, or a CSV/Parquet file),
        check keys and CARDINALITY constraints in bulk, and rebuild the views from the data
        in one pass. All or nothing."""
        self._open()
        definition = self._table(table)
        records = list(_read_rows(definition, rows, path))
        staged = f"{LOAD_PREFIX}{definition.name}"
        with self.lock:
            try:
                with self.store.transaction():
                    self.store.stage(staged, definition.name, records)
                    _key_checks(self.store, definition, staged)
                    _unique_checks(self.store, definition, staged)
                    self._cardinality_checks(definition, staged)
                    self.store.insert_staged(staged, definition.name)
                    # after the insert, so a self-referencing batch may hold its own parents
                    _foreign_key_checks(self.store, definition, staged)
                    self._mark_loaded(definition, staged)
                    for view in self.views:
                        if view.kind in (ViewKind.IMV, ViewKind.STAGING) and \
                                _reads(view, definition.name):
                            self._rebuild(view)
            except StoreRefused as err:
                raise ConstraintError(f"the store refused the load into {definition.name}: "
                                      f"{err}") from None
            finally:
                self.store.drop_staged(staged)
        return len(records)

    def _mark_loaded(self, table: Table, staged: str) -> None:
        """Loaded rows of a table a time window joins change the windows of the windowed
        tuples they join: mark those epochs, set-oriented (the insert rules' lookups, joined
        with the whole batch)."""
        windows = {w.view: w for found in self.epoch_windows.values() for w in found}
        for view in self.views:
            for rule in view.rules:
                if rule.action == RuleAction.MARK and rule.event == WriteEvent.INSERT and \
                        rule.table.lower() == table.name.lower():
                    found = self.store.sql(sqlgen.block_sql(_batch_block(rule, staged),
                                                            self.store.dialect))
                    window = windows[view.name]
                    mark_epochs(self.store, [window], ({window.column: v} for (v,) in found))

    def _cardinality_checks(self, table: Table, staged: str) -> None:
        """Group and count per key, on the engine: the bulk form of the per-write check."""
        engine = self.engine()
        found = cardinality_violation(engine, self.store, table, staged) if engine else \
            _sqlite_cardinality_violation(self.store, table, staged)
        if found:
            constraint, row = found
            values = ", ".join(f"{c}={v!r}" for c, v in zip(constraint.per, row))
            raise ConstraintError(
                f"loading {table.name} breaks {constraint.describe()}: ({values}) would have "
                f"{row[-1]} {constraint.column} values (limit {constraint.limit})")

    # -- periodic views and checks ------------------------------------------
    def refresh(self, now_ms: int | None = None) -> list[RefreshReport]:
        """Recompute every SI-3 periodic view from its staging view, on the engine."""
        self._open()
        if now_ms is not None and (not isinstance(now_ms, int) or isinstance(now_ms, bool)
                                   or not sqlvalues.fits(now_ms)):
            raise ParameterError(f"now_ms is a time in milliseconds, an integer in the "
                                 f"store's range (-2**63 .. 2**63-1); got {now_ms!r}")
        with self.lock:
            return [refresh_view(self.store, view.refresh, now_ms, self.strict, self.engine())
                    for view in self.views
                    if view.kind == ViewKind.PERIODIC and view.refresh is not None]

    def run_refresh_every(self, seconds: float) -> "RefreshSchedule":
        """Refresh the periodic views every ``seconds`` in a background thread until
        ``.stop()``; the latest reports (or error) are kept on the schedule."""
        self._open()
        return RefreshSchedule(self, seconds)

    def check(self, repair: bool = False) -> CheckReport:
        """Recompute every maintained view from base data and diff it (paper §7)."""
        self._open()
        with self.lock:
            return check_views(self.store, self.views, self.recomputed, repair, self._repaired)

    def _repaired(self, view: ViewDef, rows: list[tuple]) -> None:
        if view.name in self.epoch_windows:  # a repaired staging view: its windows catch up
            names = [c.name for c in view.columns]
            mark_epochs(self.store, self.epoch_windows[view.name],
                        (dict(zip(names, r)) for r in rows))

    def rows(self, table: str) -> list[tuple]:
        """Every row of a table or view, for inspection and tests (not a bounded read)."""
        self._open()
        return self.store.all_rows(table)


def _dependency_order(views: tuple[ViewDef, ...]) -> tuple[ViewDef, ...]:
    """Views whose maintenance reads another view come after it."""
    by_name = {v.name: v for v in views}
    ordered: list[ViewDef] = []

    def visit(view: ViewDef) -> None:
        if view in ordered:
            return
        for rule in view.rules:
            for name in rule.views:
                if name in by_name:
                    visit(by_name[name])
        ordered.append(view)

    for view in views:
        visit(view)
    return tuple(ordered)


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


def _reads(view: ViewDef, table: str) -> bool:
    return any(r.table and r.table.lower() == table.lower() for r in view.definition.relations)


def _complete_row(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    unknown = [c for c in row if table.column(c) is None]
    if unknown:
        raise UnknownName(f"table {table.name} has no column '{unknown[0]}' "
                          f"(columns: {', '.join(table.column_names)})")
    given = {table.column(c).name: v for c, v in row.items()}  # type: ignore[union-attr]
    missing = [c for c in table.primary_key if given.get(c) is None]
    if missing:
        raise ConstraintError(f"a {table.name} row needs its key column '{missing[0]}' "
                              "(a PRIMARY KEY column cannot be NULL)")
    for column in table.columns:
        if not column.nullable and given.get(column.name) is None:
            # bounds rest on it: a foreign-key lookup through a NOT NULL column drops no row
            raise ConstraintError(f"{table.name}.{column.name} is NOT NULL; give it a value "
                                  "(piql fills no DEFAULT)")
        _check_value(table, column.name, given.get(column.name))
    return {c: given.get(c) for c in table.column_names}


def _check_value(table: Table, name: str, value: Any) -> None:
    """A value the column and the store can keep as SQL would: of the column's type, an
    integer in 64 bits, a finite REAL."""
    column = table.column(name)
    assert column is not None
    if not sql_types.fits(column.type, value):
        raise ConstraintError(f"{table.name}.{column.name} is {column.type}; got "
                              f"{value!r} ({type(value).__name__})")
    reason = sqlvalues.unstorable(value)
    if reason:
        raise ConstraintError(f"{table.name}.{column.name}: {value!r} {reason}")


def _key_of(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    given = {}
    for name, value in values.items():
        column = table.column(name)
        if column is None:
            raise UnknownName(f"table {table.name} has no column '{name}'")
        given[column.name] = value
    missing = [c for c in table.primary_key if c not in given]
    extra = [c for c in given if c not in table.primary_key]
    if missing or extra:
        raise ConstraintError(f"delete from {table.name} takes exactly its key "
                              f"({', '.join(table.primary_key)})")
    for name, value in given.items():
        _check_value(table, name, value)
    return {c: given[c] for c in table.primary_key}


def _check_params(query: QueryPlan, block: QueryBlock, params: dict[str, Any]) -> None:
    expected = block.params
    missing = [p for p in expected if p not in params]
    extra = [p for p in params if p not in expected]
    if missing:
        raise ParameterError(f"query {query.name} needs parameter <{missing[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    if extra:
        raise ParameterError(f"query {query.name} has no parameter <{extra[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    for spec in query.params:
        value = params[spec.name]
        if spec.declared_type and (value is None or not sql_types.fits(spec.declared_type, value)):
            raise ParameterError(f"parameter <{spec.name}> of {query.name} is compared with a "
                                 f"{spec.declared_type} column; got {value!r}")
    for name, value in params.items():
        reason = sqlvalues.unstorable(value)
        if reason:
            raise ParameterError(f"parameter <{name}> of {query.name}: {value!r} {reason}")


def _read_rows(table: Table, rows, path) -> Iterator[tuple]:
    if path is not None:
        rows = read_file(table, path)
    yield from _checked_rows(table, rows or ())


def _checked_rows(table: Table, rows: Iterable) -> Iterator[tuple]:
    """Each row as a tuple in column order, checked as an insert checks it; an error names
    the row (counted from 1)."""
    columns = table.column_names
    for number, row in enumerate(rows, start=1):
        try:
            if not isinstance(row, dict):
                values = tuple(row) if isinstance(row, (list, tuple)) else None
                if values is None or len(values) != len(columns):
                    got = f"{len(values)} values" if values is not None else repr(row)
                    raise ConstraintError(
                        f"a {table.name} row is a dict or a tuple of its {len(columns)} column "
                        f"values ({', '.join(columns)}); got {got}")
                row = dict(zip(columns, values))
            yield tuple(_complete_row(table, row).values())
        except (ConstraintError, UnknownName) as err:
            raise type(err)(f"loading {table.name}, row {number}: {err}") from None


class RefreshSchedule:
    """A background thread that refreshes a deployment's periodic views on a fixed period."""

    def __init__(self, deployment: Deployment, seconds: float) -> None:
        if seconds <= 0:
            raise DeploymentError("the refresh period must be positive")
        self.deployment, self.seconds = deployment, seconds
        self.reports: list[RefreshReport] = []
        self.runs = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="piql-refresh", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.reports = self.deployment.refresh()
                self.runs += 1
            except BaseException as err:  # kept for the caller; the schedule stops
                self.error = err
                return
            self._stop.wait(self.seconds)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def _key_checks(store: Store, table: Table, staged: str) -> None:
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


def _unique_checks(store: Store, table: Table, staged: str) -> None:
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


def _foreign_key_checks(store: Store, table: Table, staged: str) -> None:
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


def _sqlite_cardinality_violation(store: Store, table: Table, staged: str):
    for constraint in table.cardinalities:
        broken = store.sql(cardinality_sql(table.name, staged, constraint))
        if broken:
            return constraint, broken[0]
    return None


def _quoter(store: Store):
    """Quotes an identifier in the store's dialect."""
    return lambda name: sqlgen.identifier(name, store.dialect)
