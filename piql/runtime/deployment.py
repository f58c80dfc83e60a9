"""A plan deployed on a store: the Python API of DESIGN.md's Runtime section.

>>> app = piql.load("schema.sql", "queries.sql")
>>> db = app.deploy("app.db")
>>> db.insert("Tags", docId=1, tag="a", timestamp=5)
>>> db.query("twoTags", tag1="a", tag2="b").ops

A :class:`Deployment` is a facade: each entry point checks its input (``rows``), takes
the lock, and hands the work to the module that does it: ``install`` (tables, indexes,
fingerprint), the store (a bounded query compiled to one prepared statement, or
``executor``, the plan's interpreter), ``writes`` (maintained writes),
``bulk_load``, ``refresh`` and ``schedule`` (SI-3 periodic views), ``check``, and the
engines for set-oriented work (``engine_bridge``). It executes the plan; it never plans.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from piql.catalog import Table
from piql.engines import ENGINES, make_engine
from piql.engines.base import Engine
from piql.planner.application import Plan, QueryPlan
from piql.planner.compile import CompiledQuery, UncompilablePlan
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import MaintenanceMode, QueryBlock
from piql.runtime import bulk_load, install, sqlvalues
from piql.runtime.check import CheckReport, check_views, recompute
from piql.runtime.engine_bridge import EngineDiffer, view_batches
from piql.runtime.epochs import epoch_marks, epoch_windows, mark_epochs
from piql.runtime.errors import (
    BoundExceeded, ConstraintError, DeploymentClosed, DeploymentError, ParameterError,
    StoreOverflow, StoreRefused, UnboundedQuery, UnknownName,
)
from piql.runtime.evaluate import finish, row_limit
from piql.runtime.executor import execute
from piql.runtime.partitions import partition_of
from piql.runtime.progress import Progress
from piql.runtime.refresh import RefreshReport, refresh_view
from piql.runtime.rows import ParamCheck, complete_row, key_of, read_rows
from piql.runtime.schedule import RefreshSchedule
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, open_store
from piql.runtime.update_queue import drain
from piql.runtime.writes import Maintainer, WriteReport


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

    def to_arrow(self):
        """The rows as a ``pyarrow.Table`` (columns typed by Arrow from the values)."""
        import pyarrow

        return pyarrow.Table.from_pylist(self.dicts(), schema=None) if self.rows else \
            pyarrow.table({name: pyarrow.array([], pyarrow.null()) for name in self.columns})

    def to_pandas(self):
        """The rows as a ``pandas.DataFrame``; pandas is optional (``pip install pandas``)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Result.to_pandas() needs pandas, which is not installed: "
                              "pip install pandas (or use .to_arrow(), .dicts(), .rows)") from None
        return pandas.DataFrame.from_records(list(self.rows), columns=list(self.columns))

    def __repr__(self) -> str:
        return (f"<piql.Result {len(self.rows)} rows x {len(self.columns)} columns "
                f"({', '.join(self.columns)}), {self.ops} ops (bound {self.bound})>")


_new = object.__new__
_set = object.__setattr__


def _result(columns: tuple[str, ...], rows: tuple[tuple, ...], ops: int, bound: int) -> Result:
    """``Result(columns, rows, ops, bound)`` without the frozen dataclass's ``__init__``
    (four ``object.__setattr__`` calls: a tenth of a compiled twoTags query's time)."""
    made = _new(Result)
    _set(made, "__dict__", {"columns": columns, "rows": rows, "ops": ops, "bound": bound})
    return made


@dataclass(frozen=True)
class _Served:
    """What :meth:`Deployment.query` needs of one query, read from the plan once."""

    query: QueryPlan
    block: QueryBlock
    columns: tuple[str, ...]
    bound: int
    check: ParamCheck
    statement: CompiledQuery | None  # None: the interpreter serves the query

    def exceeded(self, ops: int) -> BoundExceeded:
        """Strict mode's error for an execution that measured ``ops`` over the bound."""
        return BoundExceeded(f"query {self.query.name} did {ops} operations; its bound is "
                             f"{self.bound}")


class Deployment:
    """A plan's tables, indexes and views on one store, and its bounded entry points."""

    def __init__(self, plan: Plan, path: str = ":memory:", *, strict: bool = True,
                 engine: str = "duckdb", spark_master: str | None = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT, quiet: bool = False) -> None:
        if not busy_timeout >= 0:
            raise DeploymentError("busy_timeout must be zero or more seconds")
        if engine not in ENGINES + ("store",):
            raise DeploymentError(f"unknown engine {engine!r}; choose one of "
                                  f"{', '.join(ENGINES)} or store")
        self.engine_name = engine
        self.spark_master = spark_master
        self.progress = Progress(quiet)  # status lines of long steps, on a terminal
        self._engine: Engine | None = None
        self.lock = threading.RLock()  # one transaction at a time (scheduled refreshes too)
        self.plan = plan
        self.strict = strict
        self.partitions = plan.partitions  # the plan was made for the store's partitions
        self.views = plan.ordered_views
        self.closed = False
        self.store: Store = open_store(str(path), busy_timeout)
        try:
            self.installed = install.install(self.store, plan)
        except BaseException:
            self.store.close()
            raise
        self.epoch_windows = epoch_windows(self.views)
        self._served: dict[str, _Served] = {}  # by the name queries are called with
        self.maintainer = Maintainer(plan.catalog, self.views, self.store, partition_of,
                                     plan.writes, strict, self.epoch_windows)

    def __enter__(self) -> "Deployment":
        self._open()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return (f"<piql.Deployment {self.store.location} {state}, "
                f"{len(self.plan.queries)} queries, engine {self.engine_name}>")

    def fingerprint(self) -> str:
        """Identifies the plan a store was deployed with."""
        return install.fingerprint(self.plan)

    def partition_of(self, view: ViewDef, values: dict[str, Any]) -> int:
        """The staging partition of a row: a stable hash of its primary key."""
        return partition_of(view, values)

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
            with self.progress.step(f"starting {self.engine_name}"):
                self._engine = make_engine(self.engine_name, spark_master=self.spark_master)
        return self._engine

    def recomputed(self, view: ViewDef) -> list[tuple]:
        """``view`` computed from base data by the engine (or by the store for engine
        "store"). A view with exact sums of REAL values is computed by the store, which
        reads its rows once more to sum them exactly (``exact_sums``)."""
        return [row for batch in self._recomputed_batches(view) for row in batch]

    def _recomputed_batches(self, view: ViewDef) -> Iterator[list[tuple]]:
        """The same, batch by batch as the engine answers (one batch for the store). The
        store is read now, not as the batches are taken, so that the caller may write the
        batches into the store as they come."""
        engine = None if view.exact_sums else self.engine()
        try:
            batches = iter([recompute(self.store, view, partition_of)]) if engine is None \
                else view_batches(engine, self.store, view, partition_of)
        except StoreOverflow:
            batches = None
        return self._fitting(view, batches)

    @staticmethod
    def _fitting(view: ViewDef, batches: Iterator[list[tuple]] | None) -> Iterator[list[tuple]]:
        """``batches`` checked against the store's integer range (None: overflowed)."""
        for rows in batches or [None]:
            if rows is None or not all(map(sqlvalues.fits, (v for row in rows for v in row))):
                raise ConstraintError(f"a SUM of {view.name} leaves the store's integer range "
                                      "(-2**63 .. 2**63-1), where SQL's SUM overflows too")
            yield rows

    def _rebuild(self, view: ViewDef) -> None:
        """Replace ``view``'s rows by its recomputation (inside the caller's transaction),
        streamed batch by batch into the store; the epochs its rows fall in are gathered
        on the way and marked after."""
        windows = self.epoch_windows.get(view.name, [])
        names = [c.name for c in view.columns]
        marks: set[tuple[str, int]] = set()
        batches = self._recomputed_batches(view)  # reads the store before the write starts

        def rows() -> Iterator[tuple]:
            for batch in batches:
                marks.update(epoch_marks(windows, (dict(zip(names, row)) for row in batch)))
                yield from batch

        self.store.replace_rows(view.name, rows())
        self.store.mark_epochs(marks)
        if view.maintenance is MaintenanceMode.ASYNC:
            self.maintainer.queue.forget(view)

    def build_views(self, tables: Iterable[str] | None = None) -> list[str]:
        """Recompute every maintained view reading ``tables`` (all when None) in one pass."""
        self._open()
        wanted = None if tables is None else {t.lower() for t in tables}
        built = []
        with self.lock, self.store.transaction():
            for view in self.views:
                if view.kind in (ViewKind.IMV, ViewKind.STAGING) and (
                        wanted is None or any(view.reads(t) for t in wanted)):
                    with self.progress.step(f"building view {view.name}"):
                        self._rebuild(view)
                    built.append(view.name)
        return built

    # -- queries -------------------------------------------------------------
    def query(self, name: str, /, **params: Any) -> Result:
        """Run a named query through its bounded plan; ``.ops`` is what it cost.

        The plan runs as one prepared statement on the store (``Plan.compiled``), its
        operations counted from the rows the statement read as the plan's interpreter
        counts them (:meth:`interpret`, the reference). A plan the compiler cannot
        express, or an execution the statement cannot answer (SQLite's SUM overflowing 64
        bits, where SQL's SUM is exact), is answered by the interpreter."""
        served = self._served.get(name) or self._serving(name)
        if self.closed:
            self._open()
        served.check(params)
        statement = served.statement
        if statement is None:
            return self._interpreted(served, params)
        if served.block.limit_param is not None:
            row_limit(served.block, params)  # LIMIT <n>: 0 to its declared maximum, or refused
        if statement.text_parameters and not all(
                isinstance(params[n], str) or params[n] is None
                for n in statement.text_parameters):
            return self._interpreted(served, params)  # read as text: only text is the same
        try:
            fetched = self.store.run(statement.sql, statement.arguments(params))
        except StoreOverflow:
            return self._interpreted(served, params)
        rows, ops = statement.answer(fetched)
        if ops > served.bound and self.strict:
            raise served.exceeded(ops)
        return _result(served.columns, tuple(rows), ops, served.bound)

    def interpret(self, name: str, /, **params: Any) -> Result:
        """Run a named query with the plan's interpreter (``piql.runtime.executor``):
        operator by operator, each access one counted read of the store. The reference
        :meth:`query` answers as; same rows, same operations."""
        served = self._served.get(name) or self._serving(name)
        self._open()
        served.check(params)
        return self._interpreted(served, params)

    def _interpreted(self, served: _Served, params: dict[str, Any]) -> Result:
        block, query = served.block, served.query
        assert query.physical is not None
        start = self.store.counter.ops
        rows = execute(self.store, query.physical, params)
        if not rows and block.aggregates and not block.group_by:
            rows = finish(block, [], params)  # an aggregate of nothing: COUNT 0, SUM NULL
        ops = self.store.counter.ops - start
        if self.strict and ops > served.bound:
            raise served.exceeded(ops)
        return Result(served.columns, tuple(rows), ops, served.bound)

    def _serving(self, name: str) -> _Served:
        """What serving ``name`` needs, read from the plan once (UnboundedQuery for a query
        without bounded plan)."""
        query = self.query_plan(name)
        if query.physical is None:
            reason = next((d.message for d in query.diagnostics if d.severity == "error"), "")
            raise UnboundedQuery(f"query {query.name} is unbounded, so piql does not run it: "
                                 f"{reason}")
        block = query.query.block
        assert block is not None
        try:
            statement: CompiledQuery | None = self.plan.compiled(query.name, self.store.dialect)
        except UncompilablePlan:
            statement = None  # the interpreter serves it
        served = _Served(query, block, tuple(i.name for i in block.select),
                         query.ops_bound or 0, ParamCheck(query, block), statement)
        self._served[name] = served
        return served

    def query_plan(self, name: str, /) -> QueryPlan:
        """The planned query called ``name`` (UnknownName if there is none)."""
        self._open()
        query = self.plan.query(name)
        if query is None:
            known = ", ".join(q.name for q in self.plan.queries)
            raise UnknownName(f"no query named '{name}' (known: {known})")
        return query

    # -- writes --------------------------------------------------------------
    def insert(self, table: str, /, **row: Any) -> WriteReport:
        """Insert one base row and maintain every index and view, in one transaction."""
        definition = self._table(table)
        full = complete_row(definition, row)
        return self._transaction(lambda: self.maintainer.insert(definition, full))

    def delete(self, table: str, /, **key: Any) -> WriteReport:
        """Delete the base row with this primary key, maintaining every view."""
        definition = self._table(table)
        found = key_of(definition, key)
        return self._transaction(lambda: self.maintainer.delete(definition, found))

    def update(self, table: str, /, **row: Any) -> list[WriteReport]:
        """Replace the row with the same primary key: a delete then an insert, atomically."""
        definition = self._table(table)
        full = complete_row(definition, row)
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
    def load(self, table: str, /, rows: Iterable[dict[str, Any] | Sequence[Any]] | None = None, *,
             path: str | Path | None = None) -> int:
        """Load many base rows at once (dicts, tuples in column order, or CSV/Parquet: a
        file, a directory of them or a glob), check keys and CARDINALITY constraints in
        bulk, and rebuild the views from the data in one pass. The rows stream into the
        store batch by batch (never the whole file in memory). All or nothing."""
        self._open()
        definition = self._table(table)
        with self.progress.step(f"loading {definition.name}" + (f" from {path}" if path else "")):
            records = read_rows(definition, rows, path)  # a stream, read once by the load
            engine = self.engine()
            with self.lock:
                return bulk_load.load(self.store, definition, records, self.views, engine,
                                      self.epoch_windows, self._rebuild)

    def load_many(self, loads: Sequence[tuple[str, Any]] | dict[str, Any]) -> list[int]:
        """Several bulk loads as one: ``(table, source)`` pairs in order (parents first),
        each source a CSV or Parquet path (a file, a directory or a glob) or an iterable of
        rows. All or nothing: one refused row leaves every table as it was. Returns the
        rows loaded per pair."""
        self._open()
        pairs = list(loads.items()) if isinstance(loads, dict) else list(loads)
        batches = []
        for table, source in pairs:
            definition = self._table(table)
            is_path = isinstance(source, (str, Path))
            batches.append((definition, read_rows(
                definition, None if is_path else source, source if is_path else None)))
        with self.progress.step(f"loading {', '.join(t.name for t, _ in batches)}"):
            engine = self.engine()
            with self.lock:
                return bulk_load.load_tables(self.store, batches, self.views, engine,
                                             self.epoch_windows, self._rebuild)

    # -- periodic views and checks ------------------------------------------
    def refresh(self, now_ms: int | None = None) -> list[RefreshReport]:
        """Recompute every SI-3 periodic view from its staging view, on the engine."""
        self._open()
        if now_ms is not None and (not isinstance(now_ms, int) or isinstance(now_ms, bool)
                                   or not sqlvalues.fits(now_ms)):
            raise ParameterError(f"now_ms is a time in milliseconds, an integer in the "
                                 f"store's range (-2**63 .. 2**63-1); got {now_ms!r}")
        reports = []
        with self.lock:  # the views refreshed together, as one step for other writers
            for view in self.views:
                if view.kind == ViewKind.PERIODIC and view.refresh is not None:
                    engine = self.engine()
                    with self.progress.step(f"refreshing {view.name}"):
                        reports.append(refresh_view(self.store, view.refresh, now_ms,
                                                    self.strict, engine))
        return reports

    def run_refresh_every(self, seconds: float) -> RefreshSchedule:
        """Refresh the periodic views every ``seconds`` in a background thread until
        ``.stop()``; the latest reports (or error) are kept on the schedule."""
        self._open()
        return RefreshSchedule(self.refresh, seconds)

    def drain(self) -> int:
        """Apply every pending change of the asynchronous views' update queue now, each
        entry in its own transaction; returns how many entries were applied."""
        self._open()
        queue = self.maintainer.queue
        return 0 if queue is None else drain(self.maintainer, queue, self._transaction)

    def check(self, repair: bool = False) -> CheckReport:
        """Recompute every maintained view from base data and diff it (paper §7); the
        asynchronous views' queue is drained first."""
        self.drain()
        with self.lock:
            return check_views(self.store, self.views, self.recomputed, repair, self._repaired,
                               self._differ())

    def _differ(self) -> EngineDiffer | None:
        """DuckDB diffs in its own tables: Python holds the differences, not the views."""
        engine = self.engine()
        if engine is None or engine.name != "duckdb":
            return None
        return EngineDiffer(engine, self.store, partition_of, self._rebuild)

    def _repaired(self, view: ViewDef, rows: list[tuple]) -> None:
        """A staging view rebuilt or repaired: the time windows it feeds must catch up on
        every epoch its rows are in."""
        if view.name in self.epoch_windows:
            names = [c.name for c in view.columns]
            mark_epochs(self.store, self.epoch_windows[view.name],
                        (dict(zip(names, r)) for r in rows))

    def rows(self, table: str, /) -> list[tuple]:
        """Every row of a table or view, for inspection and tests (not a bounded read)."""
        self._open()
        return self.store.all_rows(table)
