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
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

from piql.catalog import Table
from piql.engines import ENGINES, make_engine
from piql.engines.base import Engine
from piql.planner.application import Plan, QueryPlan
from piql.planner.compile import CompiledQuery, UncompilablePlan
from piql.planner.views import ViewDef, ViewKind, WriteEvent
from piql.query_block import MaintenanceMode
from piql.runtime import bulk_load, install, sessions, sqlvalues
from piql.runtime.adapt import AdaptReport
from piql.runtime.adaptive_serving import AdaptiveServing
from piql.runtime.aggregates import Overlay, OverlayReport
from piql.runtime.check import CheckReport, check_views, recompute
from piql.runtime.engine_bridge import EngineDiffer, view_batches
from piql.runtime.epochs import epoch_marks, epoch_windows, mark_epochs
from piql.runtime.errors import (
    ConstraintError, DeploymentClosed, DeploymentError, ParameterError,
    StoreOverflow, StoreRefused, UnboundedQuery, UnknownName, sum_overflow,
)
from piql.runtime.evaluate import finish
from piql.runtime.executor import execute
from piql.runtime.feeds import Feed
from piql.runtime.partitions import partition_of
from piql.runtime.progress import Progress
from piql.runtime.refresh import RefreshReport, refresh_view
from piql.runtime.rows import RowCheck, complete_row, key_of, read_rows
from piql.runtime.schedule import RefreshSchedule
from piql.runtime.serving import (
    PreparedQuery, Result, Served, by_position, in_pair_order, prepared_query,
)
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, open_store
from piql.runtime.background import DEFAULT_IDLE, BackgroundMaintainer
from piql.runtime.update_queue import DRAIN_BATCH, QueueStats, drain
from piql.planner.update_queues import QueuePolicy
from piql.runtime.writes import Maintainer, ThroughPiql, WriteReport


class Deployment:
    """A plan's tables, indexes and views on one store, and its bounded entry points."""

    def __init__(self, plan: Plan, path: str = ":memory:", *, strict: bool = True,
                 engine: str = "duckdb", spark_master: str | None = None,
                 busy_timeout: float = DEFAULT_BUSY_TIMEOUT, quiet: bool = False,
                 queue_policy: QueuePolicy | str = QueuePolicy.IN_PLACE,
                 maintainer: bool = False, spark_conf: Mapping[str, str] | None = None) -> None:
        if not busy_timeout >= 0:
            raise DeploymentError("busy_timeout must be zero or more seconds")
        if engine not in ENGINES + ("store",):
            raise DeploymentError(f"unknown engine {engine!r}; choose one of "
                                  f"{', '.join(ENGINES)} or store")
        self.engine_name = engine
        self.spark_master = spark_master
        self.spark_conf = dict(spark_conf or {})  # spark.* settings for the session
        self._spark_jobs = None  # runtime.spark_jobs.SparkJobs, made on first use
        self.progress = Progress(quiet)  # status lines of long steps, on a terminal
        self._engine: Engine | None = None
        self.background: BackgroundMaintainer | None = None  # start_maintainer()'s thread
        self.lock = threading.RLock()  # one transaction at a time (scheduled refreshes too)
        self.plan = plan
        self.strict = strict
        self.partitions = plan.partitions  # the plan was made for the store's partitions
        self.views = plan.ordered_views
        self.closed = False
        self._prepared: dict[str, PreparedQuery] = {}  # by name; closed on close()
        self.store: Store = open_store(str(path), busy_timeout)
        self.session: sessions.Registration | None = None  # see runtime.sessions
        try:
            self.installed = install.install(self.store, plan)
            # other processes' migrations see this one serving the plan (runtime.sessions)
            self._plan_id = self.fingerprint()
            self.session = sessions.register(self.store, self._plan_id)
        except BaseException:
            self.store.close()
            raise
        self._schema_seen: int | None = None  # the store's schema version at the last write
        self.epoch_windows = epoch_windows(self.views)
        self._served: dict[str, Served] = {}  # by the name queries are called with
        # what query(name) calls, by that name: Served.serve, or the adaptive read;
        # emptied on close, so a call after it takes the slow path, which refuses it
        self._calls: dict[str, Callable[[dict[str, Any]], Result]] = {}
        self._row_checks: dict[str, RowCheck] = {}  # by the name inserts are called with
        self.maintainer = Maintainer(plan.catalog, self.views, self.store, partition_of,
                                     plan.writes, strict, self.epoch_windows,
                                     _policy(queue_policy))
        self.adaptive = AdaptiveServing(plan, self.store, self.lock, lambda: self.strict,
                                        self._transaction)
        if self.maintainer.queue is not None:
            self.maintainer.queue.policy = _policy(queue_policy)
        if maintainer:
            self.start_maintainer()

    @property
    def feeds(self) -> dict[str, Feed]:
        """The adaptive feeds, by query name (``runtime.adaptive_serving``)."""
        return self.adaptive.feeds

    @property
    def overlays(self) -> dict[str, Overlay]:
        """The neighbourhood aggregates served through overlays, by query name."""
        return self.adaptive.overlays

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
        self.stop_maintainer()
        self.closed = True
        self._calls = {}
        for prepared in self._prepared.values():
            prepared.close(self._closed)
        if self._engine is not None:
            self._engine.close()
        try:
            sessions.unregister(self.store, self.session)
        finally:
            self.store.close()

    def _open(self) -> None:
        if self.closed:
            self._closed()

    def _closed(self, *_: Any) -> Any:
        raise DeploymentClosed(f"the deployment of {self.store.location} is closed; deploy "
                               "the store again to use it")

    def engine(self) -> Engine | None:
        """The engine for set-oriented work, started on first use (None: the store itself)."""
        if self.engine_name == "store":
            return None
        if self._engine is None:
            doing = "starting DuckDB" if self.engine_name == "duckdb" else \
                f"starting Spark ({self.spark_master or 'local[*]'})"
            if self.engine_name == "spark":  # before starting a session for nothing
                from piql.runtime.spark_jobs import require_reachable

                require_reachable(self.store, self.spark_master or "local[*]")
            with self.progress.step(doing):
                self._engine = make_engine(self.engine_name, spark_master=self.spark_master,
                                           spark_conf=self.spark_conf)
        return self._engine

    def spark_jobs(self):
        """Builds, checks and repairs in Spark's executors (``runtime.spark_jobs``), when
        the engine is Spark and its tasks can open the store; else None."""
        engine = self.engine()
        tables = self.store.tables() if engine is not None and engine.name == "spark" else None
        if tables is None:
            return None
        if self._spark_jobs is None:
            from piql.runtime.spark_jobs import SparkJobs

            self._spark_jobs = SparkJobs(engine, self.store, tables,  # type: ignore[arg-type]
                                         self.epoch_windows)
        return self._spark_jobs

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
                raise sum_overflow(view.name)
            yield rows

    def _rebuild(self, view: ViewDef, in_tasks: bool = False) -> None:
        """Replace ``view``'s rows by its recomputation (inside the caller's transaction),
        streamed batch by batch into the store; the epochs its rows fall in are gathered
        on the way and marked after. ``in_tasks``: by Spark's tasks from the committed
        data, when the engine is Spark (a bulk load's rows are not committed yet: they are
        read through the driver)."""
        if view.maintenance is MaintenanceMode.ASYNC:
            # the queue first, in this transaction: the views not rebuilt get its changes,
            # and none is applied again to one rebuilt from tables that already hold it
            drain(self.maintainer, self.maintainer.queue, lambda work: work())
        jobs = self.spark_jobs() if in_tasks and not view.exact_sums else None
        if jobs is not None:
            jobs.rebuild(view)
        else:
            windows = self.epoch_windows.get(view.name, [])
            names = [c.name for c in view.columns]
            marks: set[tuple[str, int]] = set()
            batches = self._recomputed_batches(view)  # reads the store before writing

            def rows() -> Iterator[tuple]:
                for batch in batches:
                    marks.update(epoch_marks(windows, (dict(zip(names, r)) for r in batch)))
                    yield from batch

            self.store.replace_rows(view.name, rows())
            self.store.mark_epochs(marks)

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
                            self._rebuild(view, in_tasks=True)
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
        call = self._calls.get(name)
        if call is None:
            call = self._calling(name)
        return call(params)

    def prepared(self, name: str, /) -> PreparedQuery:
        """The named query made ready to call: ``q = db.prepared("userPosts")``, then
        ``q(7)`` (values by position, in the order of ``q.params``) or ``q(userId=7)``,
        each the same :class:`Result` as :meth:`query`'s. What a call needs of the query
        (its name, parameters, statement and binding) is looked up once, here, so a call
        does only what depends on its values. One handle per name and deployment."""
        self._open()
        prepared = self._prepared.get(name)
        if prepared is None:
            served = self._served.get(name) or self._serving(name)
            self._open()
            if not self.adaptive.serves(served.query.name):
                named, positional, fused = served.serve, served.positional, served.fused
            else:  # counted by the feed or overlay, read by name
                named = self.adaptive.reader(served)
                if served.query.pair is not None:  # the same answer, from one orientation
                    named = in_pair_order(named, served.query.pair.in_order)
                positional = by_position(named, served.check.named)
                fused = self.adaptive.handle(served, named)  # a pulling feed's, by position
            prepared = prepared_query(served.query.name, served.block.params, positional,
                                      named, fused)
            self._prepared[name] = prepared
            self._calls[name] = named
        return prepared

    def _calling(self, name: str) -> Callable[[dict[str, Any]], Result]:
        """What :meth:`query` calls for ``name``, decided on its first call: the prepared
        query's call by name (:meth:`prepared`)."""
        self._open()
        self.prepared(name)
        return self._calls[name]

    def interpret(self, name: str, /, **params: Any) -> Result:
        """Run a named query with the plan's interpreter (``piql.runtime.executor``):
        operator by operator, each access one counted read of the store. The reference
        :meth:`query` answers as; same rows, same operations."""
        served = self._served.get(name) or self._serving(name)
        self._open()
        served.check(params)
        if served.query.pair is not None:  # its view keeps one orientation of each pair
            params = served.query.pair.in_order(params)
        return self._interpreted(served, params)

    def _interpreted(self, served: Served, params: dict[str, Any]) -> Result:
        block, query = served.block, served.query
        assert query.physical is not None
        staleness = served.staleness() if served.staleness is not None else None
        start = self.store.counter.ops
        rows = execute(self.store, query.physical, params)
        if not rows and block.aggregates and not block.group_by:
            rows = finish(block, [], params)  # an aggregate of nothing: COUNT 0, SUM NULL
        ops = self.store.counter.ops - start
        if self.strict and ops > served.bound:
            raise served.exceeded(ops)
        return Result(served.columns, tuple(rows), ops, served.bound, staleness)

    def _staleness(self, tables: tuple[str, ...]) -> float:
        """Age (ms) of the oldest queued change of ``tables`` now (0.0: none pending)."""
        queue = self.maintainer.queue
        assert queue is not None
        oldest = queue.oldest(tables)
        return 0.0 if oldest is None else max(0, queue.clock() - oldest) / 1e6

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
        deferred = tuple(sorted({r.table for v in self.views
                                 if v.maintenance is MaintenanceMode.ASYNC
                                 and query.name in v.for_queries
                                 for r in v.definition.relations if r.table}))
        staleness = (lambda: self._staleness(deferred)) if deferred else None
        served = Served.of(query, statement, self.store, lambda: self.strict, self._interpreted,
                           staleness)
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
        check = self._row_checks.get(table)
        if check is None:
            check = self._row_checks[table] = RowCheck(self._table(table))
        definition, full = check.table, check(row)
        if self.adaptive and self.adaptive.writes(definition):
            with self.lock:  # adapt switches feeds under it
                if self.adaptive.idle(definition) and self.maintainer.at_once(definition):
                    return self.adaptive.counted(definition, full, self._at_once(
                        lambda: self.maintainer.insert_at_once(definition, full)))
            return self.adaptive.pushing(definition, lambda: self.adaptive.insert(
                self.maintainer, definition, full))
        if self.maintainer.at_once(definition):
            return self._at_once(lambda: self.maintainer.insert_at_once(definition, full))
        return self._transaction(lambda: self.maintainer.insert(definition, full))

    def _at_once(self, write: Callable[[], Any]) -> Any:
        """Make ``write``, one statement checked and maintained by the database's triggers
        (on SQLite they refuse it if a migration replaced the plan:
        triggers_sqlite.plan_guard), once the store has this process's registration (a
        busy store at open: the first write's); else in a transaction of piql's."""
        if self.session is not None and not self.session.recorded:
            return self._transaction(write)
        self._open()
        with self.lock:
            try:
                return write()
            except Exception:  # the old plan's triggers may fail on the new plan's
                sessions.same_plan(self.store, self._plan_id, None)  # tables: say so
                raise

    def delete(self, table: str, /, **key: Any) -> WriteReport:
        """Delete the base row with this primary key, maintaining every view."""
        definition = self._table(table)
        found = key_of(definition, key)
        if self.adaptive and self.adaptive.writes(definition):
            return self.adaptive.pushing(definition, lambda: self.adaptive.delete(
                self.maintainer, definition, found))
        if self.maintainer.at_once(definition, WriteEvent.DELETE):
            return self._at_once(lambda: self.maintainer.delete_at_once(definition, found))
        return self._transaction(lambda: self.maintainer.delete(definition, found))

    def update(self, table: str, /, **row: Any) -> list[WriteReport]:
        """Replace the row with the same primary key: a delete then an insert, atomically."""
        definition = self._table(table)
        full = complete_row(definition, row)
        key = {c: full[c] for c in definition.primary_key}
        if self.adaptive and self.adaptive.writes(definition):
            return self.adaptive.pushing(definition, lambda: [
                self.adaptive.delete(self.maintainer, definition, key, replacing=full),
                self.adaptive.insert(self.maintainer, definition, full)])
        if self.maintainer.update_at_once(definition):
            try:
                return self._at_once(lambda: self.maintainer.replace_at_once(definition, full))
            except ThroughPiql:  # refused by an enqueue trigger, nothing changed
                pass
        if definition.name in self.maintainer.unseen_at_once:  # async views see no change?
            done = self._at_once(lambda: self.maintainer.replace_unseen_at_once(definition, full))
            if done is not None:
                return done
        return self._transaction(lambda: self.maintainer.update(definition, key, full))

    # -- adaptive feeds and overlays: decisions from rates (runtime.adaptive_serving)
    def adapt(self, query: str | None = None, /, *, mode: str = "mincost",
              steps: int | None = None, budget: float | None = None,
              percentile: float = 0.99) -> list[AdaptReport]:
        """Recompute the push/pull decision of every edge of the adaptive feeds (or of
        ``query``'s) from the measured rates, and apply at most ``steps`` switches per
        feed, each a bounded transaction of its own (``runtime.adapt``). ``mode``:
        mincost (Feeding Frenzy's MinCost), latency (MinCost, then pull edges to push until
        the ``percentile`` read costs at most ``budget`` ops), push or pull (every edge)."""
        self._open()
        name = None if query is None else self.query_plan(query).name
        return self.adaptive.adapt(name, mode=mode, steps=steps, budget=budget,
                                   percentile=percentile)

    def adapt_overlay(self, query: str, /, *, mode: str = "eagr", sharing: bool = True,
                      budget: int | None = None) -> OverlayReport:
        """Serve a neighbourhood aggregate through an EAGr overlay (``runtime.aggregates``),
        built from the edge table (again, if ``sharing`` changed), each node push or pull:
        ``mode`` eagr (the min-cut of measured rates; with ``budget``, every read within
        that many rows), push or pull (every node)."""
        self._open()
        return self.adaptive.adapt_overlay(self.query_plan(query).name, mode=mode,
                                           sharing=sharing, budget=budget)

    def adapt_every(self, writes: int | None, /, **options: Any) -> None:
        """Run :meth:`adapt` (with ``options``) after every ``writes`` writes of the
        adaptive feeds' producer rows; None stops it."""
        self.adaptive.adapt_every(writes, **options)

    def _transaction(self, work):
        self._open()
        with self.lock:
            if self.maintainer.queue is not None:
                self.maintainer.queue.new_transaction()
            try:
                with self.store.transaction():
                    self._schema_seen = sessions.same_plan(self.store, self._plan_id,
                                                           self._schema_seen)
                    if self.session is not None:
                        self.session.ensure(self.store)
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
        if path is not None and rows is None and self._spark_loads():
            return self.load_many([(table, path)])[0]
        with self.progress.step(f"loading {definition.name}" + (f" from {path}" if path else "")):
            records = read_rows(definition, rows, path)  # a stream, read once by the load
            engine = self.engine()
            built: list[str] = []
            with self.lock:
                count = bulk_load.load(self.store, definition, records, self.views, engine,
                                       self.epoch_windows, self._rebuilding(built))
                self.store.analyze([definition.name, *built])  # statistics for the planner
                self.adaptive.bypassed([definition])
        return count

    def load_many(self, loads: Sequence[tuple[str, Any]] | dict[str, Any]) -> list[int]:
        """Several bulk loads as one: ``(table, source)`` pairs in order (parents first),
        each source a CSV or Parquet path (a file, a directory or a glob) or an iterable of
        rows. All or nothing: one refused row leaves every table as it was. Returns the
        rows loaded per pair."""
        self._open()
        pairs = list(loads.items()) if isinstance(loads, dict) else list(loads)
        if all(isinstance(source, (str, Path)) for _, source in pairs) and self._spark_loads():
            return self._load_in_spark([(self._table(t), source) for t, source in pairs])
        batches = []
        for table, source in pairs:
            definition = self._table(table)
            is_path = isinstance(source, (str, Path))
            batches.append((definition, read_rows(
                definition, None if is_path else source, source if is_path else None)))
        with self.progress.step(f"loading {', '.join(t.name for t, _ in batches)}"):
            engine = self.engine()
            built: list[str] = []
            with self.lock:
                counts = bulk_load.load_tables(self.store, batches, self.views, engine,
                                               self.epoch_windows, self._rebuilding(built))
                self.store.analyze([t.name for t, _ in batches] + built)
                self.adaptive.bypassed([t for t, _ in batches])
        return counts

    def _spark_loads(self) -> bool:
        """Whether files load through Spark's executors: engine spark on a store they open
        themselves (PostgreSQL; a SQLite file with a local master, any other being refused
        when Spark starts; an in-memory SQLite store loads through the driver)."""
        return self.engine_name == "spark" and self.store.tables() is not None

    def _load_in_spark(self, pairs: list[tuple[Table, str | Path]]) -> list[int]:
        """``load_many`` of files, read, checked and written by Spark's tasks
        (``runtime.spark_load``)."""
        from piql.runtime.spark_load import load_files

        with self.progress.step(f"loading {', '.join(t.name for t, _ in pairs)} in Spark"):
            jobs = self.spark_jobs()
            built: list[str] = []
            with self.lock:
                counts = load_files(jobs, pairs, self.views, self.epoch_windows,
                                    self._rebuilding(built))
                self.store.analyze([t.name for t, _ in pairs] + [
                    v.name for v in self.views if v.kind in (ViewKind.IMV, ViewKind.STAGING)
                    and any(v.reads(t.name) for t, _ in pairs)])
                self.adaptive.bypassed([t for t, _ in pairs])
        return counts

    # -- periodic views and checks ------------------------------------------
    def refresh(self, now_ms: int | None = None, *,
                since_ms: int | None = None) -> list[RefreshReport]:
        """Recompute every SI-3 periodic view from its staging view, on the engine.

        A time window refreshes the epoch of ``now_ms`` (default: now), the one before, and
        every older epoch a write marked since; with ``since_ms``, only the marked epochs
        from the one holding ``since_ms`` on (the older stay marked, for a refresh
        without it): after a bulk load of history, what a reader of recent epochs needs."""
        self._open()
        for label, value in (("now_ms", now_ms), ("since_ms", since_ms)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or not sqlvalues.fits(value)):
                raise ParameterError(f"{label} is a time in milliseconds, an integer in the "
                                     f"store's range (-2**63 .. 2**63-1); got {value!r}")
        if any(v.maintenance is MaintenanceMode.ASYNC and v.kind != ViewKind.IMV
               for v in self.views):
            self.drain()  # asynchronous staging rows and epoch marks first (docs/async.md)
        reports = []
        with self.lock:  # the views refreshed together, as one step for other writers
            for view in self.views:
                if view.kind == ViewKind.PERIODIC and view.refresh is not None:
                    engine = self.engine()
                    # on Spark the results are ranked and written by the tasks
                    jobs = self.spark_jobs() if engine is not None and engine.name == "spark" \
                        else None
                    with self.progress.step(f"refreshing {view.name}"):
                        reports.append(refresh_view(self.store, view.refresh, now_ms,
                                                    self.strict, engine, jobs, since_ms))
        return reports

    def run_refresh_every(self, seconds: float) -> RefreshSchedule:
        """Refresh the periodic views every ``seconds`` in a background thread until
        ``.stop()``; the latest reports (or error) are kept on the schedule."""
        self._open()
        return RefreshSchedule(self.refresh, seconds)

    def drain(self, limit: int | None = None, *, policy: QueuePolicy | str | None = None,
              batch: int = DRAIN_BATCH) -> int:
        """Apply pending changes of the asynchronous views' update queue now: all of them
        (or the first ``limit``) in ``policy``'s order (default: the deployment's
        ``queue_policy``), at most ``batch`` entries per transaction; returns how many
        entries were applied."""
        self._open()
        queue = self.maintainer.queue
        if queue is None:
            return 0
        if batch < 1 or (limit is not None and limit < 0):
            raise DeploymentError("drain takes a positive batch and a limit of zero or more")
        return drain(self.maintainer, queue, self._transaction, limit=limit, batch=batch,
                     policy=None if policy is None else _policy(policy))

    def start_maintainer(self, *, policy: QueuePolicy | str | None = None,
                         batch: int = DRAIN_BATCH, idle: float = DEFAULT_IDLE
                         ) -> BackgroundMaintainer | None:
        """Drain the update queue in a background thread (``batch`` entries a transaction,
        sleeping ``idle`` seconds when it is empty) until :meth:`stop_maintainer` or
        :meth:`close`. None for a plan without asynchronous views."""
        self._open()
        if self.maintainer.queue is None:
            return None
        self.stop_maintainer()
        self.background = BackgroundMaintainer(
            lambda: self.drain(batch, policy=policy, batch=batch), idle)
        return self.background

    def stop_maintainer(self) -> None:
        """Stop the background maintainer, if one runs (its current batch finishes)."""
        if self.background is not None:
            self.background.stop()
            self.background = None

    def queue_stats(self) -> QueueStats | None:
        """The update queue now: its length, the changes it stands for, queue staleness
        per update key and overall (UpStream §5.1), and this process's dequeue rate.
        None for a plan without asynchronous views."""
        self._open()
        queue = self.maintainer.queue
        return None if queue is None else queue.stats()

    def check(self, repair: bool = False) -> CheckReport:
        """Recompute every maintained view from base data and diff it (paper §7); the
        asynchronous views' queue is drained first."""
        self.drain()
        with self.lock:
            return check_views(self.store, self.views, self.recomputed, repair, self._repaired,
                               self.spark_jobs() or self._differ())

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


def _policy(value: QueuePolicy | str) -> QueuePolicy:
    """A queue policy, or its name (in-place, fifo, linecutting, append)."""
    if isinstance(value, QueuePolicy):
        return value
    try:
        return QueuePolicy(value)
    except ValueError:
        raise DeploymentError(f"unknown queue policy {value!r}; choose one of "
                              f"{', '.join(p.value for p in QueuePolicy)}") from None
