"""Where the TPC-W interactions run, and how each is timed.

- :class:`PiqlBackend`: a piql deployment; reads run their bounded plans over
  piql's indexes and views, writes are maintained writes (``.ops`` measured).
- :class:`SqlBackend` on SQLite: the on-demand baseline. The same tables in a
  plain SQLite store with the indexes of the TPC-W reference implementation
  (:data:`STANDARD_INDEXES`), each query's original SQL, and plain
  INSERT/UPDATE/DELETE statements.
- :class:`SqlBackend` on DuckDB: the same, in an in-memory DuckDB database.
- :class:`SqlBackend` on PostgreSQL (``--postgres``): the same on the server piql's
  PostgreSQL store runs on, every statement prepared (psycopg), writes in autocommit,
  through one cursor kept for the run, as piql's serving thread keeps one
  (``PostgresStore.run``): a cursor per call (``Connection.execute``) costs 10-15 µs
  of psycopg's Python, which would favour piql.

:func:`run` executes a workload's steps on one backend and returns one
:class:`Sample` per step.
"""
from __future__ import annotations

import gc
import random
import re
import sqlite3
import time
import zlib
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

import duckdb

from piql import sqlgen
from piql.bench import tpcw_data as data
from piql.bench.tpcw_mix import Read, Step, Write
from piql.catalog import Catalog, Table
from piql.errors import PiqlError
from piql.planner.application import Plan
from piql.runtime.sqlite_store import MEMORY_MAPPED

# The indexes of the TPC-W reference implementation (Wisconsin Java kit, TPCW_Populate
# addIndexes), what a DBA deploying TPC-W adds to the primary keys.
STANDARD_INDEXES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("author_a_lname", "author", ("a_lname",)),
    ("address_addr_co_id", "address", ("addr_co_id",)),
    ("addr_zip", "address", ("addr_zip",)),
    ("customer_c_addr_id", "customer", ("c_addr_id",)),
    ("customer_c_uname", "customer", ("c_uname",)),
    ("item_i_title", "item", ("i_title",)),
    ("item_i_subject", "item", ("i_subject",)),
    ("item_i_a_id", "item", ("i_a_id",)),
    ("order_line_ol_i_id", "order_line", ("ol_i_id",)),
    ("order_line_ol_o_id", "order_line", ("ol_o_id",)),
    ("country_co_name", "country", ("co_name",)),
    ("orders_o_c_id", "orders", ("o_c_id",)),
    ("scl_i_id", "shopping_cart_line", ("scl_i_id",)),
)
VM_GRAIN = 1000  # SQLite instructions between two progress-handler calls
ORDER_SEED = 0  # of the order the backends run each step in (``run_interleaved``)
_VALUE = itemgetter(1)  # of a (name, value) pair


@dataclass(frozen=True)
class Sample:
    """One step on one backend: its time, the part spent writing, and its work: piql's
    operations, SQLite's VM instructions, or None (DuckDB)."""

    interaction: str
    measured: bool
    seconds: float
    write_seconds: float
    ops: int | None
    bound: int | None
    digests: tuple[int | None, ...]  # per read: a digest of the answer (None: not compared)
    error: str | None = None


class Backend(Protocol):
    name: str

    def read(self, read: Read) -> tuple[list[tuple], int | None, int | None]:
        """Rows, measured operations and their bound (None where not counted)."""

    def write(self, write: Write) -> tuple[int | None, int | None]:
        """Measured operations and their bound."""

    def close(self) -> None: ...


class PiqlBackend:
    """Reads and maintained writes through a piql deployment; each query is read through
    its prepared handle (``Deployment.prepared``), as a server keeps it, its values given
    by position as the read lists them (the baseline binds them by name, from a dict made
    of the same pairs)."""

    def __init__(self, db, name: str = "piql") -> None:
        self.db = db
        self.name = name
        self.handles: dict[str, Any] = {}

    def read(self, read: Read) -> tuple[list[tuple], int | None, int | None]:
        found = self.handles.get(read.query)
        if found is None:
            found = self.handles[read.query] = self._handle(read)
        handle, by_position = found
        result = handle(*map(_VALUE, read.params)) if by_position else handle(**read.values)
        return result.rows, result.ops, result.bound  # type: ignore[return-value]

    def _handle(self, read: Read) -> tuple[Any, bool]:
        """The query's handle, and whether it is called by position: when the read lists
        the query's parameters in their order (the workload's reads do); else by name."""
        handle = self.db.prepared(read.query)
        return handle, tuple(name for name, _ in read.params) == handle.params

    def write(self, write: Write) -> tuple[int | None, int | None]:
        values = write.values
        if write.kind == "insert":
            reports = [self.db.insert(write.table, **values)]
        elif write.kind == "update":
            reports = self.db.update(write.table, **values)
        else:
            reports = [self.db.delete(write.table, **values)]
        return sum(r.ops for r in reports), sum(r.bound for r in reports)

    def close(self) -> None:
        self.db.close()


class SqlBackend:
    """The on-demand baseline: original SQL on a SQLite or DuckDB connection.

    On SQLite the work is counted too, as virtual-machine instructions (in steps of
    :data:`VM_GRAIN`, through the progress handler): a scale-dependent plan shows it growing.
    """

    def __init__(self, name: str, connection, catalog: Catalog, queries: dict[str, str]) -> None:
        self.name = name
        self.connection = connection
        self.catalog = catalog
        self.queries = queries
        # psycopg: prepared statements, %s placeholders; sqlite3 and DuckDB: ?
        self.prepared = {"prepare": True} if name == "postgres" else {}
        self.placeholder = "%s" if name == "postgres" else "?"
        # psycopg: one cursor for every statement (as piql's reader), not one per call
        self.cursor = connection.cursor() if name == "postgres" else None
        self._statements: dict[tuple[str, str], str] = {}
        self.ticks: int | None = None
        if isinstance(connection, sqlite3.Connection):
            self.ticks = 0
            connection.set_progress_handler(self._tick, VM_GRAIN)

    def _tick(self) -> int:
        self.ticks += 1  # type: ignore[operator]
        return 0  # carry on

    def _work(self, start: int | None) -> int | None:
        return None if start is None else (self.ticks - start) * VM_GRAIN  # type: ignore[operator]

    def read(self, read: Read) -> tuple[list[tuple], int | None, int | None]:
        start = self.ticks
        cursor = self.cursor
        if cursor is None:
            rows = self.connection.execute(self.queries[read.query], read.values).fetchall()
        else:
            cursor.execute(self.queries[read.query], read.values, **self.prepared)
            rows = cursor.fetchall()
        return rows, self._work(start), None

    def explain(self, query: str, values: dict[str, Any]) -> list[tuple]:
        """The database's plan of a query (EXPLAIN QUERY PLAN on SQLite, EXPLAIN elsewhere)."""
        explain = "EXPLAIN QUERY PLAN " if self.ticks is not None else "EXPLAIN "
        return self.connection.execute(explain + self.queries[query], values).fetchall()

    def write(self, write: Write) -> tuple[int | None, int | None]:
        values = write.values
        table = self.catalog.table(write.table)
        assert table is not None
        statement = self._statement(table, write.kind)
        key = [values[c] for c in table.primary_key]
        if write.kind == "insert":
            args = [values[c] for c in table.column_names]
        elif write.kind == "update":
            args = [values[c] for c in table.column_names if c not in table.primary_key] + key
        else:
            args = key
        start = self.ticks
        (self.cursor or self.connection).execute(statement, args, **self.prepared)
        return self._work(start), None

    def _statement(self, table: Table, kind: str) -> str:
        cached = self._statements.get((table.name, kind))
        if cached is None:
            mark = self.placeholder
            where = " AND ".join(f"{c} = {mark}" for c in table.primary_key)
            if kind == "insert":
                cached = (f"INSERT INTO {table.name} ({', '.join(table.column_names)}) VALUES "
                          f"({', '.join(mark for _ in table.column_names)})")
            elif kind == "update":
                sets = ", ".join(f"{c} = {mark}" for c in table.column_names
                                 if c not in table.primary_key)
                cached = f"UPDATE {table.name} SET {sets} WHERE {where}"
            else:
                cached = f"DELETE FROM {table.name} WHERE {where}"
            self._statements[(table.name, kind)] = cached
        return cached

    def close(self) -> None:
        self.connection.close()


# -- building the baselines -------------------------------------------------------------
def standard_indexes(catalog: Catalog) -> list[tuple[str, str, tuple[str, ...]]]:
    """The standard TPC-W indexes that apply to this schema's tables and columns."""
    found = []
    for name, table, columns in STANDARD_INDEXES:
        definition = catalog.table(table)
        if definition is not None and all(definition.column(c) for c in columns):
            found.append((name, table, columns))
    return found


def query_sql(plan: Plan, names: Sequence[str], dialect: str) -> dict[str, str]:
    """Each query's original SQL in ``dialect``, parameters as that dialect writes them."""
    found = {}
    for name in names:
        query = plan.query(name)
        assert query is not None and query.query.block is not None
        found[name] = sqlgen.block_sql(query.query.block, dialect)
    return found


def _create_tables(connection, catalog: Catalog, types: Callable[[str], str] = str) -> None:
    """Every table with its primary key; ``types`` maps a declared type to the database's."""
    for table in catalog.tables:
        columns = ", ".join(f"{c.name} {types(c.type)}" for c in table.columns)
        connection.execute(f"CREATE TABLE {table.name} ({columns}, "
                           f"PRIMARY KEY ({', '.join(table.primary_key)}))")


def _create_indexes(connection, catalog: Catalog) -> None:
    for name, table, columns in standard_indexes(catalog):
        connection.execute(f"CREATE INDEX {name} ON {table} ({', '.join(columns)})")


def sqlite_baseline(plan: Plan, dataset: data.Dataset, path: Path, names: Sequence[str]) -> SqlBackend:
    """The generated data in a plain SQLite store with the standard TPC-W indexes."""
    connection = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
    connection.execute("PRAGMA journal_mode=WAL")  # as piql's store: same durability and reads
    connection.execute("PRAGMA synchronous=NORMAL")
    connection.execute(MEMORY_MAPPED)
    catalog = plan.catalog
    _create_tables(connection, catalog)
    connection.execute("BEGIN")
    for table in data.LOAD_ORDER:
        definition = catalog.table(table)
        if definition is None:
            continue
        rows = data.rows(dataset, table, definition.column_names)
        connection.executemany(f"INSERT INTO {table} VALUES "
                               f"({', '.join('?' for _ in definition.column_names)})", rows)
    connection.execute("COMMIT")
    _create_indexes(connection, catalog)
    connection.execute("ANALYZE")
    return SqlBackend("sqlite", connection, catalog, query_sql(plan, names, "sqlite"))


def duckdb_baseline(plan: Plan, dataset: data.Dataset, names: Sequence[str]) -> SqlBackend:
    """The generated data in an in-memory DuckDB database with the same keys and indexes."""
    connection = duckdb.connect()
    connection.execute("SET threads = 1")  # a serving database answers one request per core
    catalog = plan.catalog
    _create_tables(connection, catalog)
    for table in data.LOAD_ORDER:
        definition = catalog.table(table)
        if definition is not None:
            columns = ", ".join(sqlgen.identifier(c, "duckdb") for c in definition.column_names)
            connection.execute(f"INSERT INTO {sqlgen.identifier(table, 'duckdb')} "
                               f"SELECT {columns} FROM read_parquet(?)",
                               [str(dataset.path(table))])
    _create_indexes(connection, catalog)
    return SqlBackend("duckdb", connection, catalog, query_sql(plan, names, "duckdb"))


def postgres_baseline(plan: Plan, dataset: data.Dataset, url: str,
                      names: Sequence[str]) -> SqlBackend:
    """The generated data on a PostgreSQL server (the schema ``url`` names), with the same
    keys and standard indexes, loaded with COPY and ANALYZEd: the on-demand baseline beside
    piql's PostgreSQL store. Types as piql's store declares them (text compared by byte)."""
    import psycopg

    from piql.runtime.postgres_store import column_type

    connection = psycopg.connect(url, autocommit=True)
    catalog = plan.catalog
    _create_tables(connection, catalog, column_type)
    for table in data.LOAD_ORDER:
        definition = catalog.table(table)
        if definition is None:
            continue
        columns = definition.column_names
        with connection.cursor() as cursor, cursor.copy(
                f"COPY {table} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in data.rows(dataset, table, columns):
                copy.write_row(row)
    _create_indexes(connection, catalog)
    connection.execute("ANALYZE")
    # psycopg reads every % as a placeholder: a literal one (a LIKE pattern) is doubled
    queries = {name: re.sub(r"%(?!\(\w+\)s)", "%%", sql)
               for name, sql in query_sql(plan, names, "postgres").items()}
    return SqlBackend("postgres", connection, catalog, queries)


def _driver_errors() -> tuple[type[BaseException], ...]:
    """The errors a backend's statement may raise: piql's, and each driver's."""
    found: tuple[type[BaseException], ...] = (PiqlError, sqlite3.Error, duckdb.Error)
    try:
        import psycopg
    except ImportError:
        return found
    return found + (psycopg.Error,)


DRIVER_ERRORS = _driver_errors()


# -- running ---------------------------------------------------------------------------------
def run(backend: Backend, steps: Sequence[Step], *, compared: frozenset[str] = frozenset(),
        before: Callable[[Step], None] | None = None, reads: bool = True,
        progress: Callable[[int], None] | None = None) -> list[Sample]:
    """Run every step on ``backend`` (``reads=False``: only the writes), timing each action.
    Answers of the ``compared`` queries are digested so backends can be checked against
    each other. ``before`` runs ahead of each step, outside the timing (periodic refresh)."""
    return run_side_by_side([backend], steps, compared=compared, before=before, reads=reads,
                            progress=progress)[0]


def run_side_by_side(side: Sequence[Backend], steps: Sequence[Step], *,
                     compared: frozenset[str] = frozenset(),
                     before: Callable[[Step], None] | None = None, reads: bool = True,
                     progress: Callable[[int], None] | None = None) -> list[list[Sample]]:
    """Every step on each backend of ``side`` in turn before the next step, in an order
    drawn afresh for each step (``run_interleaved``); one list of samples per backend.
    Side by side, a change of the machine's load (other processes) falls on both alike,
    where passes of their own, minutes apart, measured different loads; and each goes
    first, and after each other, as often, so each pays as often for the CPU caches the
    other left."""
    return run_interleaved([Lane(side, steps, compared, before)], reads=reads,
                           progress=progress)[0]


@dataclass(frozen=True)
class Lane:
    """Backends that run the same steps side by side (one scale's piql and baseline)."""

    backends: Sequence[Backend]
    steps: Sequence[Step]
    compared: frozenset[str] = frozenset()
    before: Callable[[Step], None] | None = None  # ahead of each step, untimed (refresh)


def run_interleaved(lanes: Sequence[Lane], *, reads: bool = True,
                    progress: Callable[[int], None] | None = None) -> list[list[list[Sample]]]:
    """Several lanes (one per scale) interleaved: step n of every lane, on each of its
    backends, before step n + 1 of any, in an order drawn afresh for each step (seeded:
    the same every run). The scales' p99s are then measured under the same load, where
    scales run one after the other were minutes apart (a loaded machine made their ratio
    unreadable). Samples per lane, per backend; a lane with fewer steps stops earlier.

    Why drawn, not turned over: a rotation (A1 B1 A2 B2, B1 A2 B2 A1, ...) lets each go
    first as often, but keeps who runs just before whom: B2 after A2 and A2 after B1 in
    three steps of four. The backend before warms or evicts the caches (the CPU's, the
    interpreter's) the next one reads, and that alone made piql's key lookups at the large
    scale 1.10-1.22x on-demand's where a drawn order measured 0.96-1.11x with the same
    code (docs/benchmarks.md, 2026-11-27 afternoon); drawn, every backend follows every
    other as often."""
    samples: list[list[list[Sample]]] = [[[] for _ in lane.backends] for lane in lanes]
    order = random.Random(ORDER_SEED)
    gc.collect()
    gc.disable()
    try:
        for number in range(max((len(lane.steps) for lane in lanes), default=0)):
            turns = []
            for which, lane in enumerate(lanes):
                if number < len(lane.steps):
                    step = lane.steps[number]
                    if lane.before is not None:
                        lane.before(step)
                    turns += [(which, slot, backend, step)
                              for slot, backend in enumerate(lane.backends)]
            order.shuffle(turns)
            for which, slot, backend, step in turns:
                samples[which][slot].append(_run_step(backend, step, lanes[which].compared,
                                                      reads))
            if progress is not None and number % 200 == 0:
                progress(number)
    finally:
        gc.enable()
    return samples


def _run_step(backend: Backend, step: Step, compared: frozenset[str], reads: bool) -> Sample:
    seconds = write_seconds = 0.0
    ops = bound = 0
    counted = True
    digests: list[int | None] = []
    error = None
    for action in step.actions:
        if isinstance(action, Read) and not reads:
            continue
        started = time.perf_counter()
        try:
            if isinstance(action, Read):
                rows, used, limit = backend.read(action)
                digests.append(_digest(rows) if action.query in compared else None)
            else:
                used, limit = backend.write(action)
        except DRIVER_ERRORS as err:
            error = error or f"{_describe(action)}: {err}"
            used = limit = None
            if isinstance(action, Read):
                digests.append(None)
        elapsed = time.perf_counter() - started
        seconds += elapsed
        if isinstance(action, Write):
            write_seconds += elapsed
        if used is None:
            counted = False
        else:
            ops += used
            bound += limit or 0
    return Sample(step.interaction, step.measured, seconds, write_seconds,
                  ops if counted else None, bound if counted else None, tuple(digests), error)


def _describe(action: Read | Write) -> str:
    return f"query {action.query}" if isinstance(action, Read) else \
        f"{action.kind} into {action.table}"


def _digest(rows: list[tuple]) -> int:
    """Order-insensitive digest of an answer (money compared to the cent)."""
    normal = sorted(tuple(round(v, 2) if isinstance(v, float) else v for v in row) for row in rows)
    return zlib.crc32(repr(normal).encode())


def comparable(plan: Plan, names: Sequence[str]) -> frozenset[str]:
    """Queries whose answer is unique, so piql's and the baseline's must be equal: no LIMIT
    (ties could be cut either way), no aggregate and no periodic view (refreshed, so stale)."""
    found = set()
    for name in names:
        query = plan.query(name)
        block = query.query.block if query else None
        if block is None or block.limit is not None or block.aggregates or query.query.periodic:
            continue
        if any(r.subquery is not None for r in block.relations):
            continue
        found.add(name)
    return frozenset(found)


def summary_of(samples: Sequence[Sample]) -> dict[str, Any]:
    """Errors seen, for the JSON."""
    errors = [s.error for s in samples if s.error]
    return {"errors": len(errors), "first_errors": errors[:5]}
