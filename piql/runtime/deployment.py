"""A plan deployed on the embedded store: the Python API of DESIGN.md's Runtime section.

>>> app = piql.load("schema.sql", "queries.sql")
>>> db = app.deploy("app.db")
>>> db.insert("Tags", docId=1, tag="a", timestamp=5)
>>> db.query("twoTags", tag1="a", tag2="b").ops
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from piql.catalog import Catalog, Table
from piql.engines import ENGINES, make_engine
from piql.engines.base import Engine
from piql.engines.jobs import cardinality_sql, cardinality_violation, view_rows
from piql.planner.application import Plan, QueryPlan
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql import sqlgen
from piql.planner.views import IMV, MARK, PERIODIC, STAGING, DeltaRule, ViewDef
from piql.query import (
    Attr, Epoch, Literal, Param, QueryBlock, Relation, base_attr, normalized_predicate,
)
from piql.runtime import sqlvalues
from piql.runtime.check import CheckReport, check_views, recompute
from piql.runtime.datafiles import read_file
from piql.runtime.errors import (
    BoundExceeded, ConstraintError, DeploymentClosed, DeploymentError, ParameterError,
    UnboundedQuery, UnknownName,
)
from piql.runtime.evaluate import check_type, finish
from piql.runtime.executor import execute
from piql.runtime.refresh import DIRTY, DIRTY_DDL, RefreshReport, epoch_windows, mark_epochs, refresh_view
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, TableShape, quote
from piql.runtime.writes import Maintainer, WriteReport

META = "_piql_meta"


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
                 partitions: int = DEFAULT_PARTITIONS, engine: str = "duckdb",
                 spark_master: str | None = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        if partitions < 1:
            raise DeploymentError("partitions must be a positive integer")
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
        self.partitions = partitions
        self.views = _dependency_order(plan.views)
        self.closed = False
        self.store = Store(str(path), busy_timeout)
        try:
            for shape in self._shapes():
                self.store.register(shape)
            self._install()
        except BaseException:
            self.store.close()
            raise
        index_counts: dict[str, int] = {}
        for index in self._indexes():
            index_counts[index[1]] = index_counts.get(index[1], 0) + 1
        self.epoch_windows = epoch_windows(self.views)
        self.maintainer = Maintainer(plan.catalog, self.views, self.store, self.partition_of,
                                     index_counts, strict, self.epoch_windows)

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
                                     _nullable_key(self.plan.catalog, view)))
        return shapes

    def _indexes(self) -> list[tuple[str, str, tuple[str, ...]]]:
        found = [(i.name, i.table, i.columns) for i in self.plan.indexes]
        for table in self.plan.catalog.tables:
            # Constraint checks on write read a key prefix: give them one where the key is not.
            for constraint in table.cardinalities:
                columns = tuple(constraint.per) + (constraint.column,)
                if tuple(table.primary_key[:len(columns)]) != columns:
                    found.append((f"chk_{table.name}_{constraint.column}".lower(), table.name, columns))
            for fk in table.foreign_keys:
                if tuple(table.primary_key[:len(fk.columns)]) != tuple(fk.columns) and not any(
                        tuple(cols[:len(fk.columns)]) == tuple(fk.columns)
                        for _, t, cols in found if t == table.name):
                    found.append((f"fk_{table.name}_{'_'.join(fk.columns)}".lower(), table.name,
                                  tuple(fk.columns)))
            for unique in table.unique_keys:  # the per-insert check looks the key up
                if not any(tuple(cols[:len(unique.columns)]) == tuple(unique.columns)
                           for _, t, cols in found if t == table.name):
                    found.append((f"uq_{table.name}_{'_'.join(unique.columns)}".lower(),
                                  table.name, tuple(unique.columns)))
        return found

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
        self.store.begin()
        try:
            self.installed = self._install_or_verify(fingerprint)
            self.store.commit()
        except BaseException:
            self.store.rollback()
            raise

    def _deployed_with(self, fingerprint: str) -> bool:
        tables = {name for (name,) in self.store.sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, ?)",
            [META, DIRTY])}
        return tables == {META, DIRTY} and self.store.sql(
            f"SELECT value FROM {META} WHERE key = 'fingerprint'") == [(fingerprint,)]

    def _install_or_verify(self, fingerprint: str) -> bool:
        """True when this deployment created the store's tables, False when it found them."""
        existing = self.store.sql(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = ?", [META])
        if existing:
            recorded = self.store.sql(f"SELECT value FROM {META} WHERE key = 'fingerprint'")
            if recorded and recorded[0][0] == fingerprint:
                self.store.sql(DIRTY_DDL)  # stores deployed before it existed
                return False
            raise DeploymentError(
                f"the store {self.store.path} was deployed with a different plan "
                f"(recorded {recorded[0][0][:12] if recorded else 'nothing'}, this plan "
                f"{fingerprint[:12]}); deploy into a new store, or migrate its data with "
                "`load` into one deployed with this plan")
        if self.store.sql("SELECT name FROM sqlite_master WHERE type = 'table'"):
            raise DeploymentError(f"the store {self.store.path} already holds tables that piql "
                                  "did not create; deploy into a new store")
        for shape in self.store.shapes.values():
            self.store.create_table(shape)
        for name, table, columns in self._indexes():
            self.store.create_index(name, table, columns)
        self.store.sql(DIRTY_DDL)
        self.store.sql(f"CREATE TABLE {META} (key TEXT PRIMARY KEY, value TEXT)")
        self.store.sql(f"INSERT INTO {META} VALUES ('fingerprint', ?)", [fingerprint])
        return True

    def partition_of(self, view: ViewDef, values: dict[str, Any]) -> int:
        """The staging partition of a row: a stable hash of its primary key."""
        key = repr(tuple(values[c] for c in view.extra["partitioned_by"])).encode()
        return zlib.crc32(key) % self.partitions

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
            raise DeploymentClosed(f"the deployment of {self.store.path} is closed; deploy the "
                                   "store again to use it")

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
        except sqlite3.OperationalError as err:
            if "integer overflow" not in str(err):
                raise
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
        with self.lock:
            self.store.begin()
            try:
                for view in self.views:
                    if view.kind in (IMV, STAGING) and (
                            wanted is None or any(_reads(view, t) for t in wanted)):
                        self._rebuild(view)
                        built.append(view.name)
                self.store.commit()
            except BaseException:
                self.store.rollback()
                raise
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
        _check_params(self.plan, query, block, params)
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
            self.store.begin()
            try:
                result = work()
                self.store.commit()
                return result
            except sqlite3.IntegrityError as err:
                self.store.rollback()
                raise ConstraintError(f"the store refused the write: {err}") from None
            except BaseException:
                self.store.rollback()
                raise

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
        staged = f"_load_{definition.name}"
        shape = self.store.shapes[definition.name]
        with self.lock:
            self.store.begin()
            try:
                self.store.sql(f"CREATE TEMP TABLE {quote(staged)} AS SELECT * FROM "
                               f"{quote(definition.name)} WHERE 0")
                self.store.connection.executemany(
                    f"INSERT INTO {quote(staged)} VALUES ({', '.join('?' for _ in shape.columns)})",
                    records)
                self.store.register(TableShape(staged, shape.columns, shape.key, shape.types))
                _key_checks(self.store, definition, staged)
                _unique_checks(self.store, definition, staged)
                self._cardinality_checks(definition, staged)
                self.store.sql(f"INSERT INTO {quote(definition.name)} SELECT * FROM {quote(staged)}")
                # after the insert, so a self-referencing batch may hold its own parents
                _foreign_key_checks(self.store, definition, staged)
                self._mark_loaded(definition, staged)
                for view in self.views:
                    if view.kind in (IMV, STAGING) and _reads(view, definition.name):
                        self._rebuild(view)
                self.store.commit()
            except sqlite3.IntegrityError as err:
                self.store.rollback()
                raise ConstraintError(f"the store refused the load into {definition.name}: "
                                      f"{err}") from None
            except BaseException:
                self.store.rollback()
                raise
            finally:
                self.store.shapes.pop(staged, None)
                self.store.sql(f"DROP TABLE IF EXISTS temp.{quote(staged)}")
        return len(records)

    def _mark_loaded(self, table: Table, staged: str) -> None:
        """Loaded rows of a table a time window joins change the windows of the windowed
        tuples they join: mark those epochs, set-oriented (the insert rules' lookups, joined
        with the whole batch)."""
        windows = {w.view: w for found in self.epoch_windows.values() for w in found}
        for view in self.views:
            for rule in view.rules:
                if rule.action == MARK and rule.event == "insert" and \
                        rule.table.lower() == table.name.lower():
                    found = self.store.sql(sqlgen.block_sql(_batch_block(rule, staged), "sqlite"))
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
        staging = {v.name: v for v in self.views if v.kind == STAGING}
        with self.lock:
            return [refresh_view(self.store, view, staging[view.extra["staging"]],
                                 self.partitions, now_ms, self.strict, self.engine())
                    for view in self.views if view.kind == PERIODIC]

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


def _nullable_key(catalog: Catalog, view: ViewDef) -> bool:
    """May a key column of ``view`` hold NULL? Only primary-key columns of base tables (and
    what piql computes itself: partitions, ranks, the epochs a refresh computes) cannot;
    any other column may be NULL, and a view holds the row (a group, an ordering value, a
    staged time) as SQL does."""
    for column in view.key:
        if view.kind == PERIODIC:
            if column.name not in ("epoch", "rank"):
                return True
            continue
        if isinstance(column.source, Literal):  # the staging partition
            continue
        attr = base_attr(column.source) if isinstance(column.source, (Attr, Epoch)) else None
        relation = next((r for r in view.definition.relations
                         if attr is not None and r.alias == attr.alias), None)
        table = catalog.table(relation.table or "") if relation is not None else None
        if table is None or attr.column not in table.primary_key:  # type: ignore[union-attr]
            return True
    return False


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
    if not check_type(column.type, value):
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


def _check_params(plan: Plan, query: QueryPlan, block: QueryBlock, params: dict[str, Any]) -> None:
    expected = block.params
    missing = [p for p in expected if p not in params]
    extra = [p for p in params if p not in expected]
    if missing:
        raise ParameterError(f"query {query.name} needs parameter <{missing[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    if extra:
        raise ParameterError(f"query {query.name} has no parameter <{extra[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    for name, declared in _param_types(plan, block).items():
        if not check_type(declared, params[name]) or params[name] is None:
            raise ParameterError(f"parameter <{name}> of {query.name} is compared with a "
                                 f"{declared} column; got {params[name]!r}")
    for name, value in params.items():
        reason = sqlvalues.unstorable(value)
        if reason:
            raise ParameterError(f"parameter <{name}> of {query.name}: {value!r} {reason}")


def _param_types(plan: Plan, block: QueryBlock) -> dict[str, str]:
    types: dict[str, str] = {}
    for pred in block.predicates:
        if not isinstance(pred.right, Param):
            continue
        if isinstance(pred.left, Epoch):
            types[pred.right.name] = "BIGINT"
        elif isinstance(pred.left, Attr):
            rel = block.relation(pred.left.alias)
            table = plan.catalog.table(rel.table or "")
            column = table.column(pred.left.column) if table else None
            if column is not None:
                types[pred.right.name] = column.type
    return types


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
    key = ", ".join(quote(c) for c in table.primary_key)
    duplicate = store.sql(f"SELECT {key} FROM {quote(staged)} GROUP BY {key} HAVING COUNT(*) > 1 "
                          "LIMIT 1")
    if duplicate:
        raise ConstraintError(f"the data for {table.name} has two rows with key "
                              f"({', '.join(f'{c}={v!r}' for c, v in zip(table.primary_key, duplicate[0]))})")
    join = " AND ".join(f"s.{quote(c)} = t.{quote(c)}" for c in table.primary_key)
    clash = store.sql(f"SELECT s.* FROM {quote(staged)} s JOIN {quote(table.name)} t ON {join} LIMIT 1")
    if clash:
        raise ConstraintError(f"{table.name} already has a row with key "
                              f"({', '.join(f'{c}={v!r}' for c, v in zip(table.column_names, clash[0]) if c in table.primary_key)})")


def _unique_checks(store: Store, table: Table, staged: str) -> None:
    """The bulk form of the per-insert unique-key check (GROUP BY puts NULLs together,
    so keys whose NULLs are distinct leave rows holding a NULL out)."""
    for key in table.unique_keys:
        columns = ", ".join(quote(c) for c in key.columns)
        present = " AND ".join(f"{quote(c)} IS NOT NULL" for c in key.columns) \
            if key.nulls_distinct else "1"
        both = f"(SELECT {columns} FROM {quote(table.name)} UNION ALL SELECT {columns} FROM {quote(staged)})"
        duplicate = store.sql(f"SELECT {columns} FROM {both} WHERE {present} GROUP BY {columns} "
                              "HAVING COUNT(*) > 1 LIMIT 1")
        if duplicate:
            raise ConstraintError(
                f"loading {table.name} breaks {key.describe()}: two rows have "
                f"({', '.join(f'{c}={v!r}' for c, v in zip(key.columns, duplicate[0]))})")


def _foreign_key_checks(store: Store, table: Table, staged: str) -> None:
    for fk in table.foreign_keys:
        match = " AND ".join(f"p.{quote(r)} = s.{quote(c)}" for c, r in zip(fk.columns, fk.ref_columns))
        present = " AND ".join(f"s.{quote(c)} IS NOT NULL" for c in fk.columns)
        orphan = store.sql(f"SELECT {', '.join('s.' + quote(c) for c in fk.columns)} FROM "
                           f"{quote(staged)} s WHERE {present} AND NOT EXISTS (SELECT 1 FROM "
                           f"{quote(fk.ref_table)} p WHERE {match}) LIMIT 1")
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
