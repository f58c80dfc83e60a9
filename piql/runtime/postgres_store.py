"""The server store: a PostgreSQL database (psycopg 3 and a connection pool), with
operation counts.

:class:`PostgresStore` implements the :class:`~piql.runtime.store.Store` protocol on any
PostgreSQL >= 15 a libpq URI reaches (``postgresql://user:password@host:port/dbname``;
``?options=-csearch_path%3Dmyschema`` deploys into another schema than ``public``). With
:mod:`piql.runtime.postgres_reads`, it is the only module of the runtime that imports
psycopg.

How it keeps piql's semantics, which are SQLite's:

- **Types.** Integers (and booleans, kept as 0/1) are ``BIGINT``, REAL types ``DOUBLE
  PRECISION``, DECIMAL ``NUMERIC`` (read back as an int when integral, else a float, as
  SQLite's NUMERIC affinity keeps them), text ``TEXT COLLATE "C"`` (compared and ordered
  by byte, as SQLite does, whatever the database's locale), blobs ``BYTEA``; any other
  declared type is kept as text.
- **NULLs sort first** ascending and last descending, as in SQLite: every ORDER BY says
  so, and every index is declared in that order, so a stop-after reads its index in order
  and stops (a column of a NOT NULL key needs no such clause: it holds no NULL).
- **Keys.** A table is keyed by a primary key; a key that may hold NULL (a view's) by a
  unique index ``NULLS NOT DISTINCT`` (PostgreSQL 15), whose lookups match NULL with NULL.
  A secondary index holds the access path: its columns, then the rest of the table's key.
- **One writer at a time.** A write transaction takes a transaction-level advisory lock
  (:data:`WRITE_LOCK`), as SQLite's ``BEGIN IMMEDIATE`` takes the database's write lock:
  piql's delta rules read the state without the written tuple, which concurrent writers
  would break. Waiting longer than ``busy_timeout`` is :class:`StoreBusy`. Readers never
  wait (MVCC). Each write transaction bumps the sequence ``_piql_version`` (what
  :meth:`PostgresStore.version` reads).
- **Threads.** Connections come from a pool: a transaction or snapshot holds one
  connection for its thread, and a read outside one borrows a connection for that
  statement; a compiled query outside one runs on its thread's own reader connection,
  as borrowing costs as much as the query, through libpq's prepared statements
  (:mod:`piql.runtime.postgres_reads`, :meth:`PostgresStore.prepared`). Operation
  counters are per thread, so concurrent queries count their own.
- **Statements.** Every identifier is quoted (case kept), every value bound; bounded reads
  and point writes are prepared once per connection (their text depends only on the
  access and on which key values are NULL). Bulk rows go through ``COPY``.

Installing the plan is :mod:`piql.runtime.install`'s (through :meth:`create_table`,
:meth:`create_index`, :meth:`create_bookkeeping`), with the triggers of
:mod:`piql.planner.triggers`: the database maintains every incrementally maintained view
and checks CARDINALITY and FOREIGN KEY constraints itself, in the writing statement,
whichever client writes (:attr:`maintained_rules` names the rules, which piql's write path
skips; an insert they make whole is one round trip, :meth:`PostgresStore.write_row`). Staging
views and time-window marks are kept by the runtime, through this protocol.
"""
from __future__ import annotations

import hashlib
import re
import threading
from contextlib import contextmanager
from decimal import MAX_EMAX, MAX_PREC, MIN_EMIN, Context, Decimal, localcontext
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence
from urllib.parse import urlsplit, urlunsplit

from piql.sqlgen import default_clause, literal
from piql.sql_types import POSTGRES_NAME_BYTES as NAME_BYTES
from piql.sql_types import postgres_type as column_type, short_name
from piql.planner.fingerprint import postgres_bookkeeping
from piql.planner.naming import RUNTIME_TABLES, VERSION_SEQUENCE, WRITE_LOCK_KEY
from piql.planner.trigger_rules import BULK, HELPER_FUNCTIONS, TriggerDialect
from piql.planner.triggers_postgres import function_name
from piql.planner import truncate_guard
from piql.planner.physical import KeyExpression, KeyPart
from piql.planner.compile_exprs import ascii_case
from piql.planner.store_layout import index_path
from piql.runtime import exact_sums
from piql.runtime.postgres_reads import Lane, Numbered
from piql.runtime.queue_triggers import (
    ENQUEUE, OWN_ALL, OWN_CHANGES, change_function, enqueue_function,
)
from piql.runtime.errors import (
    DeploymentError, StoreBusy, StoreOverflow, StoreRefused,
)
from piql.runtime.store import (
    DEFAULT_BUSY_TIMEOUT, IS_NULL, TASK_COLUMN, Counter, TableShape, Values,
)

try:
    import psycopg
    from psycopg import errors as pg_errors
    from psycopg import sql as pg_sql
    from psycopg.adapt import Dumper
    from psycopg.types.numeric import NumericLoader
    from psycopg_pool import ConnectionPool, PoolTimeout
except ImportError as missing:  # pragma: no cover - the extra is part of the dev install
    raise DeploymentError("a PostgreSQL store needs psycopg 3 and psycopg_pool: "
                          "pip install 'piql[postgres]'") from missing

META, DIRTY = RUNTIME_TABLES  # piql's metadata, and the epochs marked for refresh
VERSION = VERSION_SEQUENCE  # a sequence each write transaction bumps
QUEUE_TRIGGERS = "queue_triggers"  # the metadata: the hash of the enqueue triggers made
MIN_SERVER = 150000  # NULLS NOT DISTINCT
# The advisory lock piql's write transactions take: a pair of int4, piql's key and the
# hash of the schema (advisory locks are per database already)
WRITE_LOCK = WRITE_LOCK_KEY
OPS = {"=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# psycopg's placeholders are %s and %(name)s; any other % is written %% when values are bound
_PERCENT = re.compile(r"%(?!\(\w+\)s)")
_POOL_SIZE = 8


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


_BUMP = f" RETURNING nextval('{_quote(VERSION)}')"  # a whole write's bump, as it commits


def _part(part: KeyPart) -> str:
    """A column, or an index's expression part as piql computes it: ``LOWER`` and ``UPPER``
    change ASCII letters only (SQLite's), so they are ``translate`` here (immutable, so an
    index can hold it), not PostgreSQL's Unicode-aware ``lower``."""
    if not isinstance(part, KeyExpression):
        return _quote(part)
    source, target = ascii_case(part.func)
    return f"translate({_quote(part.column)}, '{source}', '{target}')"


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


class _BoolAsInteger(Dumper):
    """Booleans are kept as 0/1 in BIGINT columns, as SQLite keeps them."""

    oid = psycopg.adapters.types["int8"].oid

    def dump(self, obj: bool) -> bytes:
        return b"1" if obj else b"0"


class _Number(NumericLoader):
    """NUMERIC read as SQLite's NUMERIC affinity reads it: an int when integral, else a
    float (a SUM of integers is NUMERIC in PostgreSQL and never overflows; piql checks the
    range of what it keeps)."""

    def load(self, data) -> Any:  # type: ignore[override]
        return _plain(super().load(data))


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        if value.is_finite() and value == value.to_integral_value():
            return int(value)
        return float(value)
    return value


_EXACT = Context(prec=MAX_PREC, Emax=MAX_EMAX, Emin=MIN_EMIN)


def _numeric_deltas(row: dict[str, Any], deltas: Mapping[str, Any],
                    exact: Mapping[str, str]) -> Mapping[str, Any]:
    """Deltas of a NUMERIC sum (a SUM of a DECIMAL column) as decimals: PostgreSQL's SUM of
    NUMERIC is exact, and the row holds the exact sum (:meth:`PostgresStore._exact_get`).
    A delta is a decimal when decoded from PostgreSQL's queue, or a double written by piql
    or read back from a NUMERIC (``_plain``): the decimal it was written as (its shortest
    repr), so 0.1 + 0.2 gives 0.3, as the query's SQL does. Integer sums (BIGINT) and
    REAL sums (``exact``: their hidden exact sums) stay as they are."""
    changed = dict(deltas)
    for column, delta in deltas.items():
        if column not in exact and isinstance(row[column], Decimal):
            changed[column] = Decimal(repr(delta)) if isinstance(delta, float) else delta
    return changed


def _adapt(connection: psycopg.Connection) -> None:
    """Booleans written as 0/1, NUMERIC read as SQLite reads it: on every connection."""
    connection.adapters.register_dumper(bool, _BoolAsInteger)
    connection.adapters.register_loader("numeric", _Number)


class _ThreadState(threading.local):
    """What one thread holds of a store: its transaction's connection (None outside one),
    its reader connection, that reader's cursor (whole writes) and lane (compiled reads,
    ``PostgresStore.run``), its counter.
    Class attributes are each thread's defaults, so reading one needs no ``getattr``."""

    connection: "psycopg.Connection | None" = None
    writing = False
    reader: "psycopg.Connection | None" = None
    cursor: "psycopg.Cursor | None" = None
    lane: Lane | None = None  # the reader's compiled reads (runtime.postgres_reads)
    counter: Counter | None = None


class PostgresStore:
    """A PostgreSQL database (a libpq URI) and the tables piql keeps in it: the
    :class:`~piql.runtime.store.Store` protocol over a pool of connections."""

    dialect = "postgres"
    trigger_dialect = TriggerDialect.POSTGRES  # views are kept by triggers (runtime.install)

    def __init__(self, url: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
                 pool_size: int = _POOL_SIZE) -> None:
        self.url = url
        self.busy_timeout = busy_timeout
        self.shapes: dict[str, TableShape] = {}
        self.maintained_rules: frozenset[str] = frozenset()  # set by runtime.install
        self.checked_tables: frozenset[str] = frozenset()  # set by runtime.install
        # this process queues its inserts itself, not the enqueue triggers (its policy is
        # one they cannot follow: ``runtime.queue_triggers``); set by runtime.writes
        self.own_enqueue = False
        # its deletes and updates (queued by its write path) are left alone by the enqueue
        # triggers, which queue other clients'; set by runtime.writes
        self.own_changes = False
        self._local = _ThreadState()
        # each serving thread's reader connection (_reader), closed with the store
        self._readers: list[tuple[threading.Thread, psycopg.Connection]] = []
        self._readers_lock = threading.Lock()
        self._texts: dict[tuple, str] = {}  # statement texts by shape (write_row)
        self._numbered: dict[str, Numbered] = {}  # compiled statements as libpq takes them
        self._check_server()
        self.pool: ConnectionPool = ConnectionPool(
            url, min_size=1, max_size=max(1, pool_size), open=True, num_workers=1,
            kwargs={"autocommit": True}, configure=self._configure,
            timeout=max(busy_timeout, 1.0), name="piql")

    @property
    def location(self) -> str:
        return redacted(self.url)

    @property
    def counter(self) -> Counter:
        """This thread's operation counter (threads sharing the store count their own)."""
        found = getattr(self._local, "counter", None)
        if found is None:
            found = self._local.counter = Counter()
        return found

    # -- connections ---------------------------------------------------------
    def _check_server(self) -> None:
        """A clear error when the URI reaches no usable database (before any pool)."""
        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=10) as connection:
                version = connection.info.server_version
                (schema,), = connection.execute("SELECT current_schema()").fetchall()
        except psycopg.Error as err:
            raise DeploymentError(f"{self.location}: cannot open the store: "
                                  f"{str(err).strip()}") from None
        if version < MIN_SERVER:
            raise DeploymentError(f"{self.location}: PostgreSQL {version // 10000} is too old "
                                  "for a piql store (15 or newer: NULLS NOT DISTINCT keys)")
        if schema is None:
            raise DeploymentError(f"{self.location}: the search_path names no existing schema; "
                                  "create it first, or deploy into public")

    def _configure(self, connection: psycopg.Connection) -> None:
        _adapt(connection)
        # every execute says whether to prepare: bounded work is, set-oriented work not
        connection.prepared_max = 1024
        # lock_timeout 0 would mean "wait forever": a zero busy timeout waits 1 ms
        milliseconds = max(1, int(self.busy_timeout * 1000))
        connection.execute("SELECT set_config('lock_timeout', %s, false)", [f"{milliseconds}ms"],
                           prepare=False)
        # a bounded statement is a keyed index read whatever its values: plan it once
        connection.execute("SET plan_cache_mode = force_generic_plan", prepare=False)
        # a bitmap scan returns a key range out of index order, so an ordered access would
        # read the whole range and sort it (PostgreSQL's choice when its statistics say the
        # range is small) instead of reading the index in order and stopping after k rows
        connection.execute("SET enable_bitmapscan = off", prepare=False)
        # piql pushes its own writes to adaptive feeds and overlays; their guard triggers
        # act for other clients' writes only (runtime.foreign_writes)
        connection.execute("SET piql.client = 'on'", prepare=False)

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection]:
        """This thread's transaction's connection, or one borrowed for a statement."""
        current = getattr(self._local, "connection", None)
        if current is not None:
            yield current
            return
        try:
            with self.pool.connection() as connection:
                yield connection
        except psycopg.Error as err:
            raise self.refused(err) from None

    def _run(self, statement: str, values: Sequence[Any] | Mapping[str, Any] | None = None,
             prepare: bool = True) -> list[tuple]:
        with self._connection() as connection:
            try:
                cursor = connection.execute(statement, values, prepare=prepare)
                return cursor.fetchall() if cursor.description else []
            except psycopg.Error as err:
                raise self.refused(err) from None

    def _count(self, statement: str, values: Sequence[Any]) -> int:
        """Run a write; the rows it changed."""
        with self._connection() as connection:
            try:
                return connection.execute(statement, values, prepare=True).rowcount
            except psycopg.Error as err:
                raise self.refused(err) from None

    def refused(self, err: psycopg.Error) -> Exception:
        """What to raise for an error of the database: busy, a refusal, an overflow (one
        raised by piql's triggers says it all in its first line)."""
        text = str(err).strip()
        diag = getattr(err, "diag", None)
        if diag is not None and diag.message_primary and "piql_" in (diag.context or ""):
            text = diag.message_primary
        if isinstance(err, PoolTimeout):
            return StoreBusy(f"the store {self.location} is busy: no connection of the pool "
                             f"({self.pool.max_size}) came free within {self.pool.timeout:g} s")
        if isinstance(err, (pg_errors.LockNotAvailable, pg_errors.DeadlockDetected,
                            pg_errors.SerializationFailure)):
            return StoreBusy(
                f"the store {self.location} is busy: another connection held its write lock "
                f"for more than {self.busy_timeout:g} s (a long load, refresh or check "
                "--repair?); try again, or wait longer with deploy(..., busy_timeout=SECONDS) "
                "(piql --busy-timeout SECONDS)")
        if isinstance(err, pg_errors.NumericValueOutOfRange):
            return StoreOverflow(text)
        if isinstance(err, (psycopg.IntegrityError, psycopg.DataError)):
            return StoreRefused(text, duplicate=isinstance(err, pg_errors.UniqueViolation))
        if isinstance(err, psycopg.OperationalError):
            return DeploymentError(f"{self.location}: {text}")
        return err

    def close(self) -> None:
        with self._readers_lock:
            for _, reader in self._readers:
                reader.close()
            self._readers.clear()
        self.pool.close()

    # -- schema and bookkeeping ----------------------------------------------
    def _lock_key(self) -> str:
        """The advisory lock of this store: piql's, for the current schema."""
        return f"SELECT pg_advisory_xact_lock({WRITE_LOCK}, hashtext(current_schema()))"

    def register(self, shape: TableShape) -> None:
        for name in (shape.name, *shape.columns):
            if len(name.encode()) > NAME_BYTES:
                raise DeploymentError(
                    f"{name!r} ({'table' if name == shape.name else f'column of {shape.name}'}) "
                    f"is longer than PostgreSQL's {NAME_BYTES}-byte identifiers; rename it")
        self.shapes[shape.name] = shape

    def create_table(self, shape: TableShape) -> None:
        self.register(shape)
        types = shape.types or ("",) * len(shape.columns)
        columns = [f"{_quote(c)} {column_type(t)}{default_clause(shape.default(c), 'postgres')}"
                   for c, t in zip(shape.columns, types)]
        if not shape.nullable_key:
            columns.append(f"PRIMARY KEY ({', '.join(_quote(c) for c in shape.key)})")
        self._run(f"CREATE TABLE IF NOT EXISTS {_quote(shape.name)} ({', '.join(columns)})",
                  prepare=False)
        if shape.key_index:
            self._run(f"CREATE UNIQUE INDEX IF NOT EXISTS {_quote(short_name(shape.key_index))} "
                      f"ON {_quote(shape.name)} ({self._path(shape, shape.key)}) "
                      "NULLS NOT DISTINCT", prepare=False)

    def create_index(self, name: str, table: str, columns: Sequence[KeyPart],
                     unique: bool = False) -> None:
        """An index on the access path: ``columns``, then the rest of the table's key (as a
        secondary index of SQLite's WITHOUT ROWID tables holds them). A unique one (a
        declared unique expression index) is on its own parts, which it keeps unique."""
        shape = self.shapes[table]
        path = index_path(tuple(columns), shape.key, unique)
        self._run(f"CREATE {'UNIQUE ' if unique else ''}INDEX IF NOT EXISTS "
                  f"{_quote(short_name(name))} ON {_quote(table)} ({self._path(shape, path)})",
                  prepare=False)

    def _path(self, shape: TableShape, columns: Sequence[KeyPart]) -> str:
        return ", ".join(_part(c) + ("" if self._never_null(shape, c) else " NULLS FIRST")
                         for c in columns)

    @staticmethod
    def _never_null(shape: TableShape | None, column: KeyPart) -> bool:
        """A column of a primary key holds no NULL (PostgreSQL's own index on it sorts
        NULLs last, which is no matter then)."""
        return shape is not None and not shape.nullable_key and column in shape.key

    def table_names(self) -> set[str]:
        return {name for (name,) in self._run(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")}

    def create_bookkeeping(self) -> None:
        for statement in postgres_bookkeeping():
            self._run(statement, prepare=False)

    def uninstall(self, tables: Sequence[str], meta: tuple[str, str]) -> bool:
        # Not through transaction(): its commit bumps the version sequence dropped here.
        with self._session(writing=True) as connection:
            connection.execute(self._lock_key(), prepare=False)
            if self.get_meta(meta[0]) != meta[1] or any(
                    self._run(f"SELECT 1 FROM {_quote(t)} LIMIT 1", prepare=False)
                    for t in tables):
                return False
            for table in (*tables, *RUNTIME_TABLES):
                # CASCADE: whatever piql made on the table goes with it
                self._run(f"DROP TABLE IF EXISTS {_quote(table)} CASCADE", prepare=False)
                self.shapes.pop(table, None)
            self._run(f"DROP SEQUENCE IF EXISTS {_quote(VERSION)}", prepare=False)
            self._drop_functions([function_name(t) for t in tables] + list(HELPER_FUNCTIONS)
                                + [f(t) for t in tables
                                   for f in (enqueue_function, change_function)]
                                + [truncate_guard.FUNCTION])
        return True

    def queue_triggers(self, functions: Mapping[str, tuple[int, Callable[..., Any]]],
                       statements: Sequence[str]) -> None:
        """Create the update queue's enqueue triggers (``runtime.queue_triggers``; part of
        the database, as the plan's), unless it runs these already (their hash, in the
        metadata). ``functions``: none here, the triggers ask nothing of the process.
        Statements that only drop are skipped on a store never given one."""
        assert not functions
        found = hashlib.sha256("\n".join(statements).encode()).hexdigest()
        made = self.get_meta(QUEUE_TRIGGERS)
        if made is None and not any(s.startswith("CREATE") for s in statements):
            return
        if made != found:
            with self.transaction():
                if self.get_meta(QUEUE_TRIGGERS) != found:  # another process may have
                    for statement in statements:
                        self._run(statement, prepare=False)
                    self.set_meta(QUEUE_TRIGGERS, found)

    def _drop_functions(self, names: Sequence[str]) -> None:
        """Drop the functions piql created in this schema (its tables' trigger functions,
        whose triggers went with the tables, and the helpers of ``planner.triggers``)."""
        found = self._run("SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace "
                          "= current_schema()::regnamespace AND p.proname = ANY(%s)",
                          [list(names)], prepare=False)
        for (signature,) in found:  # regprocedure's text: schema-qualified and quoted
            self._run(f"DROP FUNCTION IF EXISTS {signature}", prepare=False)

    def get_meta(self, key: str) -> str | None:
        if META not in self.table_names():
            return None
        found = self._run(f"SELECT value FROM {_quote(META)} WHERE key = %s", [key])
        return found[0][0] if found else None

    def set_meta(self, key: str, value: str) -> None:
        self._run(f"INSERT INTO {_quote(META)} VALUES (%s, %s) ON CONFLICT (key) "
                  "DO UPDATE SET value = EXCLUDED.value", [key, value])

    # -- transactions --------------------------------------------------------
    @contextmanager
    def transaction(self, tables_first: Sequence[str] = (), wait: str = "") -> Iterator[None]:
        """A write transaction on a connection of its own: takes piql's write lock now
        (other writers wait for it, up to ``busy_timeout``; then StoreBusy), commits at the
        end of the block, rolls back if it raises. Inside one, a nested call joins it.

        ``tables_first`` (a migration's base tables) are locked against writes before the
        write lock, waiting at most ``wait`` for each lock (then StoreBusy): an insert sent
        alone holds its table while its trigger waits for the write lock, so taking the
        locks in the other order would wait on it while it waits on the migration."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        lock = self._lock_key()
        if self.own_enqueue or self.own_changes:  # in the same round trip
            lock += f"; SET LOCAL {ENQUEUE} = '{OWN_ALL if self.own_enqueue else OWN_CHANGES}'"
        if tables_first:
            lock = (f"SET LOCAL lock_timeout = {literal(wait, 'postgres')}; LOCK TABLE "
                    + ", ".join(_quote(t) for t in tables_first)
                    + f" IN SHARE ROW EXCLUSIVE MODE; {lock}; RESET lock_timeout")
        try:
            with self.pool.connection() as connection:
                self._local.connection, self._local.writing = connection, True
                try:
                    # BEGIN and the lock in one round trip, the version bump and COMMIT in
                    # another (statements without parameters go as one simple query): a
                    # point write is a few round trips, each counts
                    try:
                        connection.execute(f"BEGIN; {lock}", prepare=False)
                        yield
                    except BaseException:
                        if not connection.broken and connection.info.transaction_status != \
                                psycopg.pq.TransactionStatus.IDLE:
                            connection.execute("ROLLBACK", prepare=False)
                        raise
                    connection.execute(f"SELECT nextval('{_quote(VERSION)}'); COMMIT", prepare=False)
                finally:
                    self._local.connection, self._local.writing = None, False
        except psycopg.Error as err:
            raise self.refused(err) from None

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every read in it sees the state of its first read."""
        if getattr(self._local, "connection", None) is not None:
            yield
            return
        with self._session(writing=False) as connection:
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY",
                               prepare=False)
            yield

    @contextmanager
    def _session(self, writing: bool) -> Iterator[psycopg.Connection]:
        try:
            with self.pool.connection() as connection:
                self._local.connection, self._local.writing = connection, writing
                try:
                    with connection.transaction():
                        yield connection
                finally:
                    self._local.connection, self._local.writing = None, False
        except psycopg.Error as err:
            raise self.refused(err) from None

    def version(self) -> int:
        """The count of write transactions: bumped by each (under the write lock, before it
        commits); read outside a transaction under the lock too, so a writer in flight is
        waited for rather than missed."""
        if getattr(self._local, "writing", False):
            return self._run(f"SELECT last_value FROM {_quote(VERSION)}")[0][0]
        with self._session(writing=False) as connection:
            connection.execute(self._lock_key(), prepare=True)
            (value,), = connection.execute(f"SELECT last_value FROM {_quote(VERSION)}",
                                           prepare=True).fetchall()
            return value

    # -- reads ---------------------------------------------------------------
    def scan(self, table: str, columns: Sequence[str], eq: Sequence[tuple[KeyPart, Any]] = (),
             ranges: Sequence[tuple[str, str, Any]] = (), order: Sequence[KeyPart] = (),
             descending: bool = False, limit: int | None = None, index: str | None = None,
             fetches: bool = False) -> list[tuple]:
        """Rows of ``table`` with ``eq`` equalities on a key prefix and ``ranges`` on the
        next column, in ``order`` (NULLs first ascending, last descending); counts max(1,
        rows) reads, doubled when every index entry needs its base row (``fetches``). The
        index is PostgreSQL's to choose: the plan's is the one on those columns."""
        where = [f"{_part(c)} IS NULL" if v is IS_NULL else f"{_part(c)} = %s" for c, v in eq] \
            + [f"{_quote(c)} {OPS[op]} %s" for c, op, _ in ranges]
        values = [v for _, v in eq if v is not IS_NULL] + [v for _, _, v in ranges]
        sql = f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(table)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if order:
            shape = self.shapes.get(table)
            sql += " ORDER BY " + ", ".join(self._order(shape, c, descending) for c in order)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self._run(sql, values)
        self.counter.reads += max(1, len(rows)) + (len(rows) if fetches else 0)
        return rows

    def _order(self, shape: TableShape | None, column: KeyPart, descending: bool) -> str:
        if self._never_null(shape, column):
            return _part(column) + (" DESC" if descending else "")
        return _part(column) + (" DESC NULLS LAST" if descending else " NULLS FIRST")

    def get(self, table: str, key: Mapping[str, Any]) -> tuple | None:
        """The row whose ``key`` columns hold these values (NULL matches NULL)."""
        shape = self.shapes[table]
        where, values = _identical(key)
        rows = self._run(f"SELECT {', '.join(_quote(c) for c in shape.columns)} FROM "
                         f"{_quote(table)} WHERE {where}", values)
        self.counter.reads += 1
        return rows[0] if rows else None

    def _exact_get(self, table: str, key: Mapping[str, Any]) -> tuple | None:
        """:meth:`get`, with NUMERIC columns (sums of DECIMALs) as exact decimals, not the
        doubles ``_plain`` reads: a sum is added to exactly (``_numeric_deltas``)."""
        shape = self.shapes[table]
        numeric = [column_type(t) == "NUMERIC" for t in shape.types]
        if not any(numeric):
            return self.get(table, key)
        where, values = _identical(key)
        columns = (f"{_quote(c)}::text" if n else _quote(c)
                   for c, n in zip(shape.columns, numeric))
        rows = self._run(f"SELECT {', '.join(columns)} FROM {_quote(table)} WHERE {where}",
                         values)
        self.counter.reads += 1
        if not rows:
            return None
        return tuple(Decimal(v) if n and v is not None else v
                     for v, n in zip(rows[0], numeric))

    def count_distinct(self, table: str, column: str, eq: Sequence[tuple[str, Any]],
                       cap: int, exclude: Any) -> int:
        """Distinct ``column`` values other than ``exclude`` among the rows whose ``eq``
        columns hold the given values, reading at most ``cap``; NULL is a value here."""
        where, values = _identical(dict(eq))
        if exclude is None:
            other = f"{_quote(column)} IS NOT NULL"
        else:
            other = f"({_quote(column)} <> %s OR {_quote(column)} IS NULL)"
            values.append(exclude)
        condition = f"{where} AND {other}" if where else other
        rows = self._run(f"SELECT DISTINCT {_quote(column)} FROM {_quote(table)} WHERE "
                         f"{condition} LIMIT {int(cap)}", values)
        self.counter.reads += max(1, len(rows))
        return len(rows)

    # -- set-oriented work ---------------------------------------------------
    def analyze(self, tables: Sequence[str]) -> None:
        """``ANALYZE`` the tables: without statistics PostgreSQL may plan a compiled
        statement's ordered access as a read of the key range and a sort instead of the
        index read in order that stops after the LIMIT (autovacuum analyzes a table only
        after its first changes); the statements prepared before it are planned again."""
        if tables:
            self._run("ANALYZE " + ", ".join(_quote(t) for t in dict.fromkeys(tables)), None,
                      prepare=False)

    def all_rows(self, table: str) -> list[tuple]:
        """Every row in key order (for checks and tests, never for serving): not counted."""
        return [row for batch in self.read_table(table, 1 << 16) for row in batch]

    def read_table(self, table: str, batch_rows: int) -> Iterator[list[tuple]]:
        shape = self.shapes[table]
        order = ", ".join(self._order(shape, c, False) for c in shape.key)
        statement = (f"SELECT {', '.join(_quote(c) for c in shape.columns)} FROM "
                     f"{_quote(table)}" + (f" ORDER BY {order}" if order else ""))
        with self._connection() as connection:
            batch: list[tuple] = []
            try:
                # streamed (libpq's chunked mode): a batch of rows in memory, not the table
                for row in connection.cursor().stream(statement, size=min(batch_rows, 10_000)):
                    batch.append(row)
                    if len(batch) == batch_rows:
                        yield batch
                        batch = []
            except psycopg.Error as err:
                raise self.refused(err) from None
            if batch:
                yield batch

    def sql(self, statement: str, values: Values = ()) -> list[tuple]:
        """Set-oriented SQL in PostgreSQL's dialect (``%(name)s`` placeholders, as sqlgen
        renders them): not counted."""
        if not values:
            return self._run(statement, None, prepare=False)
        bound = values if isinstance(values, Mapping) else list(values)
        return self._run(_PERCENT.sub("%%", statement), bound, prepare=False)

    def run(self, statement: str, values: Sequence[Any]) -> list[tuple]:
        """A compiled bounded query (``%s`` placeholders): :meth:`prepared`'s function of
        it, called once. Not counted (the caller counts from the rows)."""
        return self.prepared(statement)(values)

    def prepared(self, statement: str) -> Callable[[Sequence[Any]], list[tuple]]:
        """:meth:`run` of ``statement`` as a function of its values, prepared on the
        connection that runs it (planned once: ``force_generic_plan``): the thread's
        transaction's, through psycopg's cursor (``prepare=True``); else the thread's
        reader, through its lane (:class:`~piql.runtime.postgres_reads.Lane`: libpq's
        prepared statements without psycopg's cursor, whose Python costs a third of a key
        lookup's round trip)."""
        numbered = self._numbered.get(statement)
        if numbered is None:
            numbered = self._numbered[statement] = Numbered(statement)
        local = self._local

        def run(values: Sequence[Any]) -> list[tuple]:
            if local.connection is not None:
                return self._in_transaction(statement, values)
            lane = local.lane
            if lane is None or lane.closed:
                lane = self._lane()
            try:
                return lane.fetch(numbered, values)
            except psycopg.Error as err:
                if lane.broken:  # the next call connects again
                    local.reader = local.cursor = local.lane = None
                raise self.refused(err) from None
        return run

    def _in_transaction(self, statement: str, values: Sequence[Any]) -> list[tuple]:
        try:
            return self._local.connection.execute(statement, values, prepare=True).fetchall()
        except psycopg.Error as err:
            raise self.refused(err) from None

    def _cursor(self) -> psycopg.Cursor:
        """The cursor of this thread's reader (:meth:`_reader`), for its whole writes
        outside a transaction."""
        local = self._local
        cursor = local.cursor
        if cursor is None or cursor.closed:
            cursor = self._reader().cursor()
            local.cursor = cursor
        return cursor

    def _lane(self) -> Lane:
        """This thread's reader's lane (:meth:`_reader`), for compiled reads."""
        lane = self._local.lane = Lane(self._reader())
        return lane

    def _reader(self) -> psycopg.Connection:
        """This thread's connection for compiled queries outside a transaction: borrowing
        a pooled connection per query costs as much as the query itself, so each serving
        thread keeps one (autocommit: each query sees the latest commit), with a lane for
        its compiled reads (:meth:`prepared`) and one cursor for its whole writes
        (:meth:`_whole`: ``Connection.execute`` makes a cursor per call, 10-15 µs of
        psycopg's Python). Readers of threads that have ended are closed when another
        thread opens one."""
        reader = self._local.reader
        if reader is not None and not reader.closed:
            return reader
        try:
            reader = psycopg.connect(self.url, autocommit=True)
            self._configure(reader)
        except psycopg.Error as err:
            raise self.refused(err) from None
        with self._readers_lock:
            for thread, other in [r for r in self._readers if not r[0].is_alive()]:
                other.close()
                self._readers.remove((thread, other))
            self._readers.append((threading.current_thread(), reader))
        self._local.reader, self._local.cursor, self._local.lane = reader, None, None
        return reader

    def _copy(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> int:
        """Insert ``rows`` with COPY; how many."""
        count = 0
        with self._connection() as connection:
            try:
                with connection.cursor() as cursor, cursor.copy(
                        f"COPY {_quote(table)} ({', '.join(_quote(c) for c in columns)}) "
                        "FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row)
                        count += 1
            except psycopg.Error as err:
                raise self.refused(err) from None
        return count

    def replace_rows(self, table: str, rows: Iterable[Sequence[Any]],
                     where: Mapping[str, Any] | None = None) -> int:
        """Delete the rows whose columns hold the ``where`` values (all when None) and
        insert ``rows`` (COPY): not counted."""
        shape = self.shapes[table]
        condition = " AND ".join(f"{_quote(c)} = %s" for c in where or {})
        self._run(f"DELETE FROM {_quote(table)}" + (f" WHERE {condition}" if condition else ""),
                  list((where or {}).values()), prepare=False)
        return self._copy(table, shape.columns, rows)

    def stage(self, name: str, like: str, rows: Iterable[Sequence[Any]]) -> None:
        """A TEMP table (this transaction's only: dropped when it ends) with ``like``'s
        columns, holding ``rows``."""
        if getattr(self._local, "connection", None) is None:
            raise DeploymentError("a staged batch lives in a transaction; open one first")
        shape = self.shapes[like]
        self._run(f"CREATE TEMP TABLE {_quote(name)} (LIKE {_quote(like)}) ON COMMIT DROP",
                  prepare=False)
        self.shapes[name] = TableShape(name, shape.columns, shape.key, shape.types)
        self._copy(name, shape.columns, rows)

    def insert_staged(self, staged: str, table: str) -> None:
        """Insert a staged batch; the tables' triggers leave its rows to the load, which
        rebuilds the views they reach set-oriented (``runtime.bulk_load``)."""
        self._run(f"SELECT set_config('{BULK}', 'on', true)", prepare=False)
        self._run(f"INSERT INTO {_quote(table)} SELECT * FROM pg_temp.{_quote(staged)}",
                  prepare=False)
        self._run(f"SELECT set_config('{BULK}', 'off', true)", prepare=False)

    def drop_staged(self, name: str) -> None:
        self.shapes.pop(name, None)
        if getattr(self._local, "connection", None) is not None:
            self._run(f"DROP TABLE IF EXISTS pg_temp.{_quote(name)}", prepare=False)
        # outside a transaction it is gone already (ON COMMIT DROP, or rolled back)

    # -- epoch marks ---------------------------------------------------------
    def mark_epochs(self, marks: Iterable[tuple[str, int]]) -> None:
        for view, epoch in sorted(set(marks)):
            self._run(f"INSERT INTO {_quote(DIRTY)} VALUES (%s, %s) ON CONFLICT DO NOTHING",
                      [view, epoch])

    def marked_epochs(self, view: str) -> list[int]:
        return [e for (e,) in self._run(f"SELECT epoch FROM {_quote(DIRTY)} WHERE view = %s",
                                        [view])]

    def unmark_epoch(self, view: str, epoch: int) -> None:
        self._run(f"DELETE FROM {_quote(DIRTY)} WHERE view = %s AND epoch = %s", [view, epoch])

    # -- point writes --------------------------------------------------------
    def insert(self, table: str, row: Mapping[str, Any]) -> None:
        columns = list(row)
        self._count(f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in columns)}) "
                    f"VALUES ({', '.join('%s' for _ in columns)})", [row[c] for c in columns])
        self.counter.writes += 1

    def write_row(self, table: str, row: Mapping[str, Any]) -> None:
        """Insert one row as a whole write: one prepared statement, one round trip. Outside
        a transaction it runs alone (autocommit) on the thread's own connection
        (:meth:`_reader`), bumping the version as it commits; the table's trigger takes the
        write lock, checks and maintains. One write."""
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            self.insert(table, row)
            return
        text = ("write_row", table, tuple(row))
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = (
                f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in row)}) VALUES "
                f"({', '.join('%s' for _ in row)})")
        self._whole(sql, list(row.values()))

    def delete_row(self, table: str, key: Mapping[str, Any], condition: str = "") -> int:
        """Delete one row as a whole write (as :meth:`write_row`), where ``condition``
        holds; the rows deleted."""
        where, values = _identical(key)
        text = ("delete_row", table, where, condition)
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = f"DELETE FROM {_quote(table)} WHERE {where}" + (
                f" AND {condition}" if condition else "")
        return self._whole(sql, values)

    def update_row(self, table: str, key: Mapping[str, Any], row: Mapping[str, Any],
                   kept: Sequence[str] = ()) -> int:
        """Replace one row as a whole write (as :meth:`write_row`), only if its ``kept``
        columns hold ``row``'s values already; the rows updated."""
        where, values = _identical({**key, **{c: row[c] for c in kept}} if kept else key)
        text = ("update_row", table, tuple(row), where)
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = (f"UPDATE {_quote(table)} SET "
                                       f"{', '.join(f'{_quote(c)} = %s' for c in row)} "
                                       f"WHERE {where}")
        return self._whole(sql, [*row.values(), *values])

    def _whole(self, sql: str, values: list[Any]) -> int:
        """Run one write statement as a whole write: in the thread's transaction if one is
        open, else alone (autocommit) through the thread's own cursor (:meth:`_cursor`),
        bumping the version as it commits. One write; the rows it changed."""
        if self._local.connection is not None:
            changed = self._count(sql, values)
        else:
            cursor = self._cursor()
            try:
                cursor.execute(sql + _BUMP, values, prepare=True)
                changed = cursor.rowcount
            except psycopg.Error as err:
                if cursor.connection.broken:  # the next call connects again
                    self._local.reader = self._local.cursor = self._local.lane = None
                raise self.refused(err) from None
        self.counter.writes += 1
        return changed

    def insert_rows(self, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows in ``columns`` order: one prepared INSERT each, one write each."""
        for row in rows:
            self.insert(table, dict(zip(columns, row)))

    def delete(self, table: str, key: Mapping[str, Any]) -> int:
        """Delete the row with this key (NULL key values match NULL)."""
        where, values = _identical(key)
        deleted = self._count(f"DELETE FROM {_quote(table)} WHERE {where}", values)
        self.counter.writes += 1
        return deleted

    def add(self, table: str, key: Mapping[str, Any], deltas: Mapping[str, Any],
            count_column: str, sums: Mapping[str, str] | None = None,
            exact: Mapping[str, str] | None = None) -> None:
        """Add ``deltas`` to the aggregate row at ``key`` (one read, one write); a row whose
        count drops to zero is removed (:func:`piql.runtime.exact_sums.add_deltas`)."""
        current = self._exact_get(table, key)
        shape = self.shapes[table]
        if current is None:
            row = dict(key) | {c: 0 for c in shape.columns if c not in key}
        else:
            row = dict(zip(shape.columns, current))
        with localcontext(_EXACT):  # a decimal sum is never rounded
            exact_sums.add_deltas(table, key, row, _numeric_deltas(row, deltas, exact or {}),
                                  sums, exact)
        where, values = _identical(key)
        if current is not None and row[count_column] == 0:
            self._count(f"DELETE FROM {_quote(table)} WHERE {where}", values)
        elif current is not None:
            rest = [c for c in shape.columns if c not in key]
            self._count(f"UPDATE {_quote(table)} SET "
                        f"{', '.join(f'{_quote(c)} = %s' for c in rest)} WHERE {where}",
                        [row[c] for c in rest] + values)
        elif row[count_column] != 0:
            self._count(f"INSERT INTO {_quote(table)} "
                        f"({', '.join(_quote(c) for c in shape.columns)}) VALUES "
                        f"({', '.join('%s' for _ in shape.columns)})",
                        [row[c] for c in shape.columns])
        self.counter.writes += 1

    # -- engines -------------------------------------------------------------
    def tables(self) -> "PostgresTables":
        """The store's tables as an engine's tasks read and write them (any machine that
        reaches the database)."""
        return PostgresTables(self.url)

    def export_snapshot(self) -> str | None:
        """The snapshot of this thread's transaction, for other connections to read the same
        state (``pg_export_snapshot``; valid while the transaction lasts); None outside one."""
        if getattr(self._local, "connection", None) is None:
            return None
        return self._run("SELECT pg_export_snapshot()", prepare=False)[0][0]

    def replace_from(self, table: str, staged: str,
                     where: Mapping[str, Any] | None = None) -> int:
        """Replace every row of ``table`` by the rows tasks wrote into the staging table
        ``staged`` (:meth:`PostgresTables.create_stage`) and drop it, inside the server
        and this transaction: no row passes through this process. How many rows."""
        columns = ", ".join(_quote(c) for c in self.shapes[table].columns)
        condition = " AND ".join(f"{_quote(c)} = %s" for c in where or {})
        self._run(f"DELETE FROM {_quote(table)}" + (f" WHERE {condition}" if condition else ""),
                  list((where or {}).values()), prepare=False)
        with self._connection() as connection:
            try:
                count = connection.execute(
                    f"INSERT INTO {_quote(table)} ({columns}) SELECT {columns} FROM "
                    f"{_quote(staged)}", prepare=False).rowcount
                connection.execute(f"DROP TABLE {_quote(staged)}", prepare=False)
            except psycopg.Error as err:
                raise self.refused(err) from None
        return count

    def append_from(self, table: str, staged: str) -> int:
        """Insert every row tasks wrote into the staging table ``staged`` into ``table``,
        inside the server and this transaction, past the triggers (a bulk load, which
        rebuilds the views set-oriented); ``staged`` stays (the caller drops it after
        the transaction). How many rows."""
        columns = ", ".join(_quote(c) for c in self.shapes[table].columns)
        self._run(f"SELECT set_config('{BULK}', 'on', true)", prepare=False)
        with self._connection() as connection:
            try:
                count = connection.execute(
                    f"INSERT INTO {_quote(table)} ({columns}) SELECT {columns} FROM "
                    f"{_quote(staged)}", prepare=False).rowcount
            except psycopg.Error as err:
                raise self.refused(err) from None
        self._run(f"SELECT set_config('{BULK}', 'off', true)", prepare=False)
        return count

    def reader(self):
        """A reader opening a connection of its own per call, for an engine's tasks. It is
        a closure that refers to nothing of piql (Spark ships it to executors by value)."""
        url = self.url

        def read(statement: str, values: Values) -> list[tuple]:
            import re
            from decimal import Decimal

            import psycopg

            if values:
                statement = re.sub(r"%(?!\(\w+\)s)", "%%", statement)
            with psycopg.connect(url, autocommit=True) as connection:
                rows = connection.execute(statement, values or None).fetchall()

            def plain(value):
                if isinstance(value, Decimal):
                    integral = value.is_finite() and value == value.to_integral_value()
                    return int(value) if integral else float(value)
                return value

            return [tuple(plain(v) for v in row) for row in rows]

        return read


class PostgresTables:
    """A PostgreSQL store's tables as an engine's task reads and writes them: by URI, each
    call on a connection of its own (a task runs in another process, maybe on another
    machine), in batches of bounded size."""

    local_only = False  # any machine that reaches the database

    def __init__(self, url: str) -> None:
        self.url = url

    @property
    def location(self) -> str:
        return self.url

    def _connect(self, autocommit: bool) -> psycopg.Connection:
        connection = psycopg.connect(self.url, autocommit=autocommit)
        _adapt(connection)
        return connection

    def columns(self, table: str) -> list[tuple[str, str]]:
        """The table's columns and their types, in order (the database's catalog)."""
        with self._connect(autocommit=True) as connection:
            return connection.execute(
                "SELECT column_name, data_type FROM information_schema.columns WHERE "
                "table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
                [table]).fetchall()

    def read(self, table: str, columns: Sequence[str], key: Sequence[str], part: int,
             parts: int, batch_rows: int, snapshot: str | None = None) -> Iterator[list[tuple]]:
        """The rows of ``table`` whose ``key`` hashes to ``part`` of ``parts``, ``batch_rows``
        at a time through a server-side cursor; in the exported ``snapshot`` when given (so
        every task reads the same state as the transaction that exported it)."""
        hashed = ", ".join(_quote(c) for c in key or columns)
        statement = (f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(table)} "
                     f"WHERE abs(mod(hashtextextended(ROW({hashed})::text, 0), %s)) = %s")
        with self._connect(autocommit=False) as connection:
            if snapshot:
                connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                connection.execute(pg_sql.SQL("SET TRANSACTION SNAPSHOT {}").format(
                    pg_sql.Literal(snapshot)))
            with connection.cursor(name="piql_read") as cursor:
                cursor.execute(statement, [parts, part])
                while batch := cursor.fetchmany(batch_rows):
                    yield batch
            connection.rollback()

    def create_stage(self, name: str, like: str, columns: Sequence[str]) -> None:
        """A staging table for tasks to write ``like``'s rows into (committed now, so every
        task's connection sees it; UNLOGGED: it lives for one job)."""
        with self._connect(autocommit=True) as connection:
            connection.execute(f"CREATE UNLOGGED TABLE {_quote(name)} (LIKE {_quote(like)}, "
                               f"{_quote(TASK_COLUMN)} integer)")

    def write(self, table: str, columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]],
              task: int | None = None) -> int:
        """COPY the rows of ``batches`` into ``table``, in one transaction; into a staging
        table when ``task`` is given, replacing what an earlier attempt of that task wrote
        (Spark may run a task twice). How many rows."""
        names = list(columns) + ([TASK_COLUMN] if task is not None else [])
        count = 0
        with self._connect(autocommit=False) as connection:
            if task is not None:
                connection.execute(f"DELETE FROM {_quote(table)} WHERE {_quote(TASK_COLUMN)} = %s",
                                   [task])
            with connection.cursor() as cursor, cursor.copy(
                    f"COPY {_quote(table)} ({', '.join(_quote(c) for c in names)}) "
                    "FROM STDIN") as copy:
                for batch in batches:
                    for row in batch:
                        copy.write_row(row if task is None else (*row, task))
                    count += len(batch)
        return count

    def drop(self, name: str) -> None:
        """Drop a staging table (nothing if it is gone)."""
        with self._connect(autocommit=True) as connection:
            connection.execute(f"DROP TABLE IF EXISTS {_quote(name)}")


def _identical(key: Mapping[str, Any]) -> tuple[str, list[Any]]:
    """A WHERE clause matching exactly the rows with these values, NULLs included, and its
    values: ``column = %s``, or ``column IS NULL`` for a NULL (both read an index, where
    ``IS NOT DISTINCT FROM`` would not)."""
    where, values = [], []
    for column, value in key.items():
        if value is None:
            where.append(f"{_quote(column)} IS NULL")
        else:
            where.append(f"{_quote(column)} = %s")
            values.append(value)
    return " AND ".join(where), values

