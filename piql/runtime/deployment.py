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
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from piql.catalog import Table
from piql.engines import ENGINES, make_engine
from piql.engines.base import Engine
from piql.planner.application import Plan, QueryPlan
from piql.planner.compile import CompiledQuery, UncompilablePlan
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import MaintenanceMode
from piql.runtime import bulk_load, install, sqlvalues
from piql.runtime.check import CheckReport, check_views, recompute
from piql.runtime.engine_bridge import view_rows
from piql.runtime.epochs import epoch_windows, mark_epochs
from piql.runtime.errors import (
    ConstraintError, DeploymentClosed, DeploymentError, ParameterError,
    StoreOverflow, StoreRefused, UnboundedQuery, UnknownName,
)
from piql.runtime.evaluate import finish
from piql.runtime.executor import execute
from piql.runtime.partitions import partition_of
from piql.runtime.progress import Progress
from piql.runtime.refresh import RefreshReport, refresh_view
from piql.runtime.rows import complete_row, key_of, read_rows
from piql.runtime.schedule import RefreshSchedule
from piql.runtime.serving import Result, Served
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, open_store
from piql.runtime.update_queue import drain
from piql.runtime.writes import Maintainer, WriteReport


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
        self._served: dict[str, Served] = {}  # by the name queries are called with
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
        engine = None if view.exact_sums else self.engine()
        try:
            rows = recompute(self.store, view, partition_of) if engine is None else \
                view_rows(engine, self.store, view, partition_of)
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
        self._repaired(view, rows)
        if view.maintenance is MaintenanceMode.ASYNC:
            self.maintainer.queue.forget(view)

    def build_views(self, tables: Iterable[str] | None = None) -> list[str]:
        """Recompute every maintained view reading ``tables`` (all when None) in one pass."""
        self._open()
        wanted = None if tables is None else {t.lower() for t in tables}
        built: list[str] = []
        with self.lock:
            with self.store.transaction():
                for view in self.views:
                    if view.kind in (ViewKind.IMV, ViewKind.STAGING) and (
                            wanted is None or any(view.reads(t) for t in wanted)):
                        with self.progress.step(f"building view {view.name}"):
                            self._rebuild(view)
                        built.append(view.name)
            self.store.analyze(built)
        return built

    def _rebuilding(self, built: list[str]) -> Callable[[ViewDef], None]:
        """:meth:`_rebuild`, noting each view rebuilt in ``built`` (to be analyzed)."""
        def rebuild(view: ViewDef) -> None:
            self._rebuild(view)
            built.append(view.name)
        return rebuild

    # -- queries -------------------------------------------------------------
    def query(self, name: str, /, **params: Any) -> Result:
        """Run a named query through its bounded plan; ``.ops`` is what it cost.

        The plan runs as one prepared statement on the store (``Plan.compiled``), its
        operations counted from the rows the statement read as the plan's interpreter
        counts them (:meth:`interpret`, the reference). A plan the compiler cannot
        express, or an execution the statement cannot answer (SQLite's SUM overflowing 64
        bits, where SQL's SUM is exact), is answered by the interpreter. What a call
        needs of the query is read once, on its first call (``runtime.serving``)."""
        served = self._served.get(name) or self._serving(name)
        if self.closed:
            self._open()
        return served.serve(params)

    def interpret(self, name: str, /, **params: Any) -> Result:
        """Run a named query with the plan's interpreter (``piql.runtime.executor``):
        operator by operator, each access one counted read of the store. The reference
        :meth:`query` answers as; same rows, same operations."""
        served = self._served.get(name) or self._serving(name)
        self._open()
        served.check(params)
        return self._interpreted(served, params)

    def _interpreted(self, served: Served, params: dict[str, Any]) -> Result:
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

    def _serving(self, name: str) -> Served:
        """What serving ``name`` needs, read from the plan once (UnboundedQuery for a query
        without bounded plan)."""
        query = self.query_plan(name)
        if query.physical is None:
            reason = next((d.message for d in query.diagnostics if d.severity == "error"), "")
            raise UnboundedQuery(f"query {query.name} is unbounded, so piql does not run it: "
                                 f"{reason}")
        try:
            statement: CompiledQuery | None = self.plan.compiled(query.name, self.store.dialect)
        except UncompilablePlan:
            statement = None  # the interpreter serves it
        served = Served.of(query, statement, self.store, lambda: self.strict, self._interpreted)
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
        """Load many base rows at once (dicts, tuples in column order, or a CSV/Parquet file),
        check keys and CARDINALITY constraints in bulk, and rebuild the views from the data
        in one pass. All or nothing."""
        self._open()
        definition = self._table(table)
        with self.progress.step(f"loading {definition.name}" + (f" from {path}" if path else "")):
            records = list(read_rows(definition, rows, path))
            engine = self.engine()
            built: list[str] = []
            with self.lock:
                bulk_load.load(self.store, definition, records, self.views, engine,
                               self.epoch_windows, self._rebuilding(built))
                self.store.analyze([definition.name, *built])  # statistics for the planner
        return len(records)

    def load_many(self, loads: Sequence[tuple[str, Any]] | dict[str, Any]) -> list[int]:
        """Several bulk loads as one: ``(table, source)`` pairs in order (parents first),
        each source a CSV or Parquet path or an iterable of rows. All or nothing: one
        refused row leaves every table as it was. Returns the rows loaded per pair."""
        self._open()
        pairs = list(loads.items()) if isinstance(loads, dict) else list(loads)
        batches = []
        for table, source in pairs:
            definition = self._table(table)
            is_path = isinstance(source, (str, Path))
            with self.progress.step(f"reading {source}" if is_path else f"reading {table}"):
                batches.append((definition, list(read_rows(
                    definition, None if is_path else source, source if is_path else None))))
        with self.progress.step(f"loading {', '.join(t.name for t, _ in batches)}"):
            engine = self.engine()
            built: list[str] = []
            with self.lock:
                bulk_load.load_tables(self.store, batches, self.views, engine,
                                      self.epoch_windows, self._rebuilding(built))
                self.store.analyze([t.name for t, _ in batches] + built)
        return [len(records) for _, records in batches]

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
            return check_views(self.store, self.views, self.recomputed, repair, self._repaired)

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
