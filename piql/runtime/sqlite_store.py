"""The embedded serving store: SQLite tables clustered on their keys, with operation counts.

:class:`SQLiteStore` implements the :class:`~piql.runtime.store.Store` protocol on one
SQLite file (WAL, so readers never wait for the writer) or an in-memory database. It
counts operations as DESIGN.md defines them: one per tuple read or written, at least one
per key lookup or range scan, and one more per row fetched from the base table after a
non-covering secondary-index entry. It is the only module of piql that imports sqlite3
(besides the benchmark's plain-SQLite baseline): :class:`ReadOnlyDatabase` is how the rest
of piql reads an SQLite file it does not keep (``piql.introspect`` reads its catalog).

Its connection has the plan's triggers as its own (``TEMP``, created by
``runtime.install`` on every open: other connections write without them); they check
CARDINALITY and FOREIGN KEYs and keep the views SQLite computes exactly, so an insert they
make whole is one statement (:meth:`SQLiteStore.write_row`).
"""
from __future__ import annotations

import os
import sqlite3
import weakref
import zlib
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Sequence

from piql.planner.naming import RUNTIME_TABLES
from piql.planner.trigger_rules import TriggerDialect
from piql.planner.physical import KeyExpression, KeyPart
from piql.planner.store_layout import KeyStorage
from piql.runtime import exact_sums, sqlite_functions
from piql.runtime.errors import (
    DeploymentError, StoreBusy, StoreOverflow, StoreRefused, UnreadableDatabase,
)
from piql.runtime.store import (
    DEFAULT_BUSY_TIMEOUT, IS_NULL, TASK_COLUMN, Counter, TableShape, Values,
)
from piql.runtime.wal_checkpoints import (
    CATCH_UP, CHECKPOINT_EVERY, WRITER_AUTOCHECKPOINT, BackgroundCheckpoints,
)
from piql.sqlgen import default_clause

if TYPE_CHECKING:  # an engine's type; importing the engines would load pyarrow
    from piql.engines.base import Reader

OPS = {"=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
META, DIRTY = RUNTIME_TABLES  # piql's metadata, and the epochs marked for refresh
# Statement texts sqlite3 keeps prepared (its default is 128): every compiled query and
# bounded read of a large application stays prepared
STATEMENT_CACHE = 512


# piql's LIKE is case-sensitive, as PostgreSQL's and standard SQL's (SQLite's default
# ignores the case of ASCII letters): so LIKE means the same on both stores, and
# ``LIKE 'prefix%'`` is exactly a key range (piql.planner.like_range)
CASE_SENSITIVE_LIKE = "PRAGMA case_sensitive_like = ON"
# A file store's pages are read through a memory map of up to this many bytes, not
# copied into the connection's own 2 MB page cache: a bounded read's rows, scattered over
# a larger file, missed that cache more and paid a read() each (TPC-W's NewProducts and
# SearchResult p50 grew 1.7-1.9x over 10x more data for the same 156 operations;
# docs/benchmarks.md). The map shares the operating system's page cache between processes.
MMAP_BYTES = 256 * 2**20
MEMORY_MAPPED = f"PRAGMA mmap_size = {MMAP_BYTES}"


def _part(part: KeyPart) -> str:
    """A column, or an index's expression part (SQLite's lower/upper change ASCII letters
    only: piql's own)."""
    if isinstance(part, KeyExpression):
        return f"{part.func.value.lower()}({_quote(part.column)})"
    return _quote(part)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _stop_checkpoints(checkpoints: BackgroundCheckpoints, connection: sqlite3.Connection) -> None:
    """Stop a store's background checkpoints, then close their connection. (Holds no
    reference to the store: run when it is collected.)"""
    checkpoints.stop()
    connection.close()


@dataclass
class SQLiteStore:
    """A SQLite database (a file or ``:memory:``) and the tables piql keeps in it: the
    :class:`~piql.runtime.store.Store` protocol on one connection."""

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    # seconds between the background checkpoints of a file's write-ahead log (None: none,
    # SQLite's own automatic checkpoint in the committing write, every 1,000 pages)
    checkpoint_every: float | None = CHECKPOINT_EVERY
    connection: sqlite3.Connection = field(init=False)
    shapes: dict[str, TableShape] = field(default_factory=dict)
    counter: Counter = field(default_factory=Counter)
    dialect: str = field(default="sqlite", init=False)
    # the connection's own triggers (``TEMP``: other connections write without them) keep
    # the views SQLite computes exactly and check constraints (``runtime.install``)
    trigger_dialect: TriggerDialect = field(default=TriggerDialect.SQLITE, init=False)
    maintained_rules: frozenset[str] = field(default=frozenset(), init=False)
    checked_tables: frozenset[str] = field(default=frozenset(), init=False)
    _triggers: tuple[str, ...] = field(default=(), init=False, repr=False)
    _enqueue: tuple[str, ...] = field(default=(), init=False, repr=False)  # queue_triggers
    # a refusal of piql's SUM functions, which the triggers call (``runtime.sqlite_functions``)
    _refusals: sqlite_functions.Refusals = field(default_factory=sqlite_functions.Refusals,
                                                 init=False, repr=False)
    # the text of each bounded read and point write, by its shape (table, columns, which
    # values are NULL, ...): built once, so a write pays for no quoting or joining
    _texts: dict[tuple, str] = field(default_factory=dict, init=False, repr=False)
    # the thread checkpointing the write-ahead log off the write path (runtime.wal_checkpoints)
    checkpoints: BackgroundCheckpoints | None = field(default=None, init=False, repr=False)
    # stops that thread and closes its connection: at close(), or when the store is
    # collected unclosed (a thread per dropped store would otherwise run to the exit)
    _stop_checkpoints: weakref.finalize | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.checkpoint_every is not None and not self.checkpoint_every > 0:
            # refused before the file is made (the thread's own check comes after it)
            raise DeploymentError(f"{self.path}: the checkpoint period must be positive "
                                  f"(seconds), or None; got {self.checkpoint_every!r}")
        self.connection = self._connect()
        sqlite_functions.register(self.connection, self._refusals)
        try:
            if self.path != ":memory:":
                self.connection.execute("PRAGMA journal_mode=WAL")
                self.connection.execute(MEMORY_MAPPED)
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute(CASE_SENSITIVE_LIKE)
            if self.path != ":memory:" and self.checkpoint_every is not None:
                self._start_checkpoints(self.checkpoint_every)
        except sqlite3.DatabaseError as err:
            self.connection.close()
            raise self.refused(err) from None

    def _start_checkpoints(self, every: float) -> None:
        """Checkpoint the log in a background thread, on a connection of its own, after
        any commit; the writer's own automatic checkpoint only past
        :data:`WRITER_AUTOCHECKPOINT` pages (``runtime.wal_checkpoints``)."""
        self.connection.execute(f"PRAGMA wal_autocheckpoint = {WRITER_AUTOCHECKPOINT}")
        # waits for no lock (timeout 0): a tick that finds one held is skipped
        checkpointer = sqlite3.connect(self.path, timeout=0, isolation_level=None,
                                       check_same_thread=False)
        seen = [None]  # PRAGMA data_version at the last checkpoint: changed by others' commits
        # The next writer starts the log over only once a checkpoint copied all of it;
        # writes during a checkpoint leave a tail, which one more pass (short: the tail
        # only) copies, so the log stays short under steady writes too

        def checkpoint() -> None:
            try:
                version = checkpointer.execute("PRAGMA data_version").fetchone()[0]
                if version != seen[0]:
                    seen[0] = version
                    for _ in range(CATCH_UP):
                        _, log, copied = checkpointer.execute(
                            "PRAGMA wal_checkpoint(PASSIVE)").fetchall()[0]
                        if copied >= log:
                            break
            except sqlite3.Error:
                pass  # (a lock held through a recovery, say) tried again on the next tick

        self.checkpoints = BackgroundCheckpoints(checkpoint, every)
        self._stop_checkpoints = weakref.finalize(self, _stop_checkpoints, self.checkpoints,
                                                  checkpointer)

    @property
    def location(self) -> str:
        return self.path

    def _connect(self) -> sqlite3.Connection:
        """The connection, or a clear error when ``path`` cannot hold a store."""
        if self.path != ":memory:":
            where = Path(self.path)
            if where.is_dir():
                raise DeploymentError(f"{self.path}: is a directory; a store is one SQLite file "
                                      "(give a file name, for instance app.db)")
            if not where.parent.is_dir():
                raise DeploymentError(f"{self.path}: the directory {where.parent} does not "
                                      "exist; create it first")
        try:
            return sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                   check_same_thread=False, cached_statements=STATEMENT_CACHE)
        except sqlite3.Error as err:
            raise DeploymentError(f"{self.path}: cannot open the store: {err}") from None

    def refused(self, err: sqlite3.Error) -> Exception:
        """What to raise for an error of the database itself: busy, or not a store; a
        refusal of piql's own SQL functions (a SUM's overflow) as they raised it."""
        function_refusal = self._refusals.take(err)
        if function_refusal is not None:
            return function_refusal
        text = str(err)
        if "locked" in text or "busy" in text:
            return StoreBusy(
                f"the store {self.path} is busy: another connection held its write lock for "
                f"more than {self.busy_timeout:g} s (a long load, refresh or check --repair?); "
                "try again, or wait longer with deploy(..., busy_timeout=SECONDS) "
                "(piql --busy-timeout SECONDS)")
        if "not a database" in text:
            return DeploymentError(f"{self.path}: is not a SQLite database, so it cannot be a "
                                   "piql store (give a new file name, or a store piql deployed)")
        if isinstance(err, sqlite3.IntegrityError):
            return StoreRefused(text, duplicate=text.startswith(("UNIQUE constraint failed",
                                                                 "PRIMARY KEY constraint failed")))
        if "integer overflow" in text:
            return StoreOverflow(text)
        return err

    def close(self) -> None:
        """Close the connection, after stopping the background checkpoints (the store's
        last connection to close checkpoints the log once more and removes it)."""
        if self._stop_checkpoints is not None:
            self._stop_checkpoints()
        self.connection.close()

    # -- schema and bookkeeping ----------------------------------------------
    def create_table(self, shape: TableShape) -> None:
        types = shape.types or ("",) * len(shape.columns)
        # an integer key kept as the rowid is declared INTEGER PRIMARY KEY, exactly so
        rowid = shape.key[0] if shape.storage is KeyStorage.ROWID else None
        columns = ", ".join((f"{_quote(c)} "
                             + ("INTEGER PRIMARY KEY" if c == rowid else _affinity(t))).rstrip()
                            + default_clause(shape.default(c), "sqlite")
                            for c, t in zip(shape.columns, types))
        key = ", ".join(_quote(c) for c in shape.key)
        if rowid is not None:
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {_quote(shape.name)} ({columns})")
        elif shape.key_index:
            indexed = ", ".join(_quote(c) for c in shape.key_index_columns)
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {_quote(shape.name)} ({columns})")
            self.connection.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {_quote(shape.key_index)} "
                                    f"ON {_quote(shape.name)} ({indexed})")
        else:
            self.connection.execute(
                f"CREATE TABLE IF NOT EXISTS {_quote(shape.name)} ({columns}, "
                f"PRIMARY KEY ({key})) WITHOUT ROWID")
        self.register(shape)

    def create_index(self, name: str, table: str, columns: Sequence[KeyPart],
                     unique: bool = False) -> None:
        self.connection.execute(
            f"CREATE {'UNIQUE ' if unique else ''}INDEX IF NOT EXISTS {_quote(name)} ON "
            f"{_quote(table)} ({', '.join(_part(c) for c in columns)})")

    def add_column(self, table: str, column: str, declared: str, default: object = None) -> None:
        """``ALTER TABLE ... ADD COLUMN`` (its constant ``default`` in the rows there, else
        NULL), typed as :meth:`create_table` types columns (``piql migrate``)."""
        self.connection.execute(f"ALTER TABLE {_quote(table)} ADD COLUMN "
                                f"{_quote(column)} {_affinity(declared)}".rstrip()
                                + default_clause(default, "sqlite"))

    def register(self, shape: TableShape) -> None:
        self.shapes[shape.name] = shape
        self._texts.clear()  # a table's statements depend on its shape

    def table_names(self) -> set[str]:
        return {name for (name,) in self.connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")}

    def create_bookkeeping(self) -> None:
        self.connection.execute(f"CREATE TABLE IF NOT EXISTS {META} "
                                "(key TEXT PRIMARY KEY, value TEXT)")
        self.connection.execute(f"CREATE TABLE IF NOT EXISTS {DIRTY} (view TEXT, epoch INTEGER, "
                                "PRIMARY KEY (view, epoch)) WITHOUT ROWID")

    def uninstall(self, tables: Sequence[str], meta: tuple[str, str]) -> bool:
        with self.transaction():
            if self.get_meta(meta[0]) != meta[1] or any(
                    self.connection.execute(f"SELECT 1 FROM {_quote(t)} LIMIT 1").fetchall()
                    for t in tables):
                return False
            for table in (*tables, *RUNTIME_TABLES):
                self.connection.execute(f"DROP TABLE IF EXISTS {_quote(table)}")
                self.shapes.pop(table, None)
        return True

    def get_meta(self, key: str) -> str | None:
        if not self.connection.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                       "name = ?", [META]).fetchall():
            return None
        found = self.connection.execute(f"SELECT value FROM {META} WHERE key = ?",
                                        [key]).fetchall()
        return found[0][0] if found else None

    def set_meta(self, key: str, value: str) -> None:
        self.connection.execute(f"INSERT OR REPLACE INTO {META} VALUES (?, ?)", [key, value])

    # -- transactions --------------------------------------------------------
    @contextmanager
    def transaction(self, tables_first: Sequence[str] = (), wait: str = "") -> Iterator[None]:
        """A write transaction: takes the store's write lock now (other writers wait for it,
        up to ``busy_timeout``; then StoreBusy); a constraint of SQLite's own refusing a
        write is StoreRefused. ``tables_first`` and ``wait`` are PostgreSQL's: SQLite's
        write lock holds the whole database already."""
        self._begin("BEGIN IMMEDIATE")
        try:
            yield
        except sqlite3.Error as err:
            self._rollback()
            raise self.refused(err) from None
        except BaseException:
            self._rollback()
            raise
        self._commit()

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """A read transaction: every read in it sees the snapshot of its first read."""
        self._begin("BEGIN")
        try:
            yield
        except BaseException:
            self._rollback()
            raise
        self._commit()

    def version(self) -> int:
        """SQLite's ``PRAGMA data_version``: changes whenever another connection commits."""
        return self.connection.execute("PRAGMA data_version").fetchone()[0]

    def _begin(self, statement: str) -> None:
        try:
            self.connection.execute(statement)
        except sqlite3.OperationalError as err:
            raise self.refused(err) from None

    def _commit(self) -> None:
        try:
            self.connection.execute("COMMIT")
        except sqlite3.OperationalError as err:
            self._rollback()
            raise self.refused(err) from None

    def _rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    # -- reads ---------------------------------------------------------------
    def scan(self, table: str, columns: Sequence[str], eq: Sequence[tuple[KeyPart, Any]] = (),
             ranges: Sequence[tuple[str, str, Any]] = (), order: Sequence[KeyPart] = (),
             descending: bool = False, limit: int | None = None, index: str | None = None,
             fetches: bool = False) -> list[tuple]:
        """Rows of ``table`` with ``eq`` equalities on a key prefix and ``ranges`` on the
        next column, in ``order``; counts max(1, rows) reads, doubled when every index
        entry needs its base row (``fetches``)."""
        shape = ("scan", table, tuple(columns), tuple((c, v is IS_NULL) for c, v in eq),
                 tuple((c, op) for c, op, _ in ranges), tuple(order), descending, limit, index)
        sql = self._texts.get(shape)
        if sql is None:
            sql = self._texts[shape] = self._scan_text(table, columns, eq, ranges, order,
                                                       descending, limit, index)
        values = [v for _, v in eq if v is not IS_NULL] + [v for _, _, v in ranges]
        rows = self.connection.execute(sql, values).fetchall()
        self.counter.reads += max(1, len(rows)) + (len(rows) if fetches else 0)
        return rows

    def _scan_text(self, table: str, columns: Sequence[str], eq: Sequence[tuple[str, Any]],
                   ranges: Sequence[tuple[str, str, Any]], order: Sequence[str],
                   descending: bool, limit: int | None, index: str | None) -> str:
        where = [f"{_part(c)} IS NULL" if v is IS_NULL else f"{_part(c)} = ?" for c, v in eq] \
            + [f"{_quote(c)} {OPS[op]} ?" for c, op, _ in ranges]
        sql = f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(table)}"
        index = index or self._key_index(table)
        if index:
            sql += f" INDEXED BY {_quote(index)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if order:
            direction = " DESC" if descending else ""
            sql += " ORDER BY " + ", ".join(_part(c) + direction for c in order)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        return sql

    def get(self, table: str, key: Mapping[str, Any]) -> tuple | None:
        """The row whose ``key`` columns hold these values (NULL matches NULL: identity,
        not SQL's =)."""
        text = ("get", table, tuple(key))
        sql = self._texts.get(text)
        if sql is None:
            shape = self.shapes[table]
            sql = self._texts[text] = (
                f"SELECT {', '.join(_quote(c) for c in shape.columns)} FROM {_quote(table)}"
                f"{self._indexed(table)} WHERE {_identical(key)}")
        rows = self.connection.execute(sql, list(key.values())).fetchall()
        self.counter.reads += 1
        return rows[0] if rows else None

    def _key_index(self, table: str) -> str | None:
        shape = self.shapes.get(table)
        return shape.key_index if shape is not None else None

    def _indexed(self, table: str) -> str:
        index = self._key_index(table)
        return f" INDEXED BY {_quote(index)}" if index else ""

    def count_distinct(self, table: str, column: str, eq: Sequence[tuple[str, Any]],
                       cap: int, exclude: Any) -> int:
        """Distinct ``column`` values other than ``exclude`` among the rows whose ``eq``
        columns hold the given values, reading at most ``cap``. NULL is a value here, as
        CARDINALITY counts it: ``IS`` matches NULL with NULL, and DISTINCT keeps one NULL."""
        text = ("count_distinct", table, column, tuple(c for c, _ in eq), cap)
        sql = self._texts.get(text)
        if sql is None:
            where = " AND ".join([f"{_quote(c)} IS ?" for c, _ in eq]
                                 + [f"{_quote(column)} IS NOT ?"])
            sql = self._texts[text] = (f"SELECT DISTINCT {_quote(column)} FROM {_quote(table)} "
                                       f"WHERE {where} LIMIT {int(cap)}")
        rows = self.connection.execute(sql, [v for _, v in eq] + [exclude]).fetchall()
        self.counter.reads += max(1, len(rows))
        return len(rows)

    # -- set-oriented work ---------------------------------------------------
    def analyze(self, tables: Sequence[str]) -> None:
        """Nothing: every statement piql runs on SQLite names the index it reads (``INDEXED
        BY``, the key), so no plan depends on statistics (and ANALYZE would read every row)."""

    def all_rows(self, table: str) -> list[tuple]:
        """Every row (for checks and tests, never for serving): not counted."""
        return [row for batch in self.read_table(table, 1 << 16) for row in batch]

    def read_table(self, table: str, batch_rows: int) -> Iterator[list[tuple]]:
        shape = self.shapes[table]
        cursor = self.connection.execute(
            f"SELECT {', '.join(_quote(c) for c in shape.columns)} FROM {_quote(table)}")
        while batch := cursor.fetchmany(batch_rows):
            yield batch

    def run(self, statement: str, values: Sequence[Any]) -> list[tuple]:
        """A compiled bounded query (``?`` placeholders): sqlite3 keeps the statement
        prepared in its cache (:data:`STATEMENT_CACHE` texts), so a repeated text is bound
        and stepped, not parsed again. Not counted (the caller counts from the rows)."""
        try:
            return self.connection.execute(statement, values).fetchall()
        except sqlite3.OperationalError as err:
            raise self.refused(err) from None

    def prepared(self, statement: str) -> Callable[[Sequence[Any]], list[tuple]]:
        """:meth:`run` with the connection's ``execute`` and the text looked up once."""
        execute, refused = self.connection.execute, self.refused

        def run(values: Sequence[Any]) -> list[tuple]:
            try:
                return execute(statement, values).fetchall()
            except sqlite3.OperationalError as err:
                raise refused(err) from None
        return run

    def executor(self) -> tuple[Callable[[str, Sequence[Any]], sqlite3.Cursor],
                                type[sqlite3.Error]]:
        """The connection's ``execute`` and the class of its errors, for a prepared handle
        that runs its statement in its own frame (``runtime.serving``), as an application
        on a plain connection does: a statement's error goes back the long way
        (:meth:`prepared`'s run, which maps it)."""
        return self.connection.execute, sqlite3.Error

    def sql(self, statement: str, values: Values = ()) -> list[tuple]:
        """Set-oriented SQL (bulk loads, view builds, checks, refresh shares): not counted."""
        bound = values if isinstance(values, Mapping) else list(values)
        try:
            return self.connection.execute(statement, bound).fetchall()
        except (sqlite3.IntegrityError, sqlite3.OperationalError) as err:
            raise self.refused(err) from None

    def replace_rows(self, table: str, rows: Iterable[Sequence[Any]],
                     where: Mapping[str, Any] | None = None) -> int:
        """Delete the rows whose columns hold the ``where`` values (all when None) and
        insert ``rows``: not counted."""
        shape = self.shapes[table]
        condition = " AND ".join(f"{_quote(c)} = ?" for c in where or {})
        self.connection.execute(f"DELETE FROM {_quote(table)}"
                                + (f" WHERE {condition}" if condition else ""),
                                list((where or {}).values()))
        cursor = self.connection.executemany(  # rows stream in: one batch in memory at a time
            f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in shape.columns)}) "
            f"VALUES ({', '.join('?' for _ in shape.columns)})", rows)
        return max(cursor.rowcount, 0)

    def stage(self, name: str, like: str, rows: Iterable[Sequence[Any]]) -> None:
        """A TEMP table (this connection's only) with ``like``'s columns, holding ``rows``."""
        shape = self.shapes[like]
        self.connection.execute(f"CREATE TEMP TABLE {_quote(name)} AS SELECT * FROM "
                                f"{_quote(like)} WHERE 0")
        self.connection.executemany(
            f"INSERT INTO {_quote(name)} VALUES ({', '.join('?' for _ in shape.columns)})", rows)
        self.register(TableShape(name, shape.columns, shape.key, shape.types))

    def connection_triggers(self, statements: Sequence[str]) -> None:
        """Create ``CREATE TRIGGER`` (and ``CREATE VIEW``: ``triggers_sqlite.gone_view``)
        statements as this connection's own (``TEMP``)."""
        self._triggers = tuple(s.replace("CREATE TRIGGER", "CREATE TEMP TRIGGER", 1)
                               .replace("CREATE VIEW", "CREATE TEMP VIEW IF NOT EXISTS", 1)
                               for s in statements)
        self._enqueue = ()
        self._create_triggers()

    def queue_triggers(self, functions: Mapping[str, tuple[int, Callable[..., Any]]],
                       statements: Sequence[str]) -> None:
        """Add the update queue's enqueue triggers (``runtime.queue_triggers``, ``TEMP``)
        and the connection functions they call, after the plan's triggers; a later call
        replaces them (``statements`` drop the earlier ones first)."""
        for name, (arguments, function) in functions.items():
            self.connection.create_function(name, arguments, function)
        self._enqueue = tuple(statements)
        for statement in statements:
            self.connection.execute(statement)

    def _create_triggers(self) -> None:
        for statement in self._triggers + self._enqueue:
            self.connection.execute(statement)

    def insert_staged(self, staged: str, table: str) -> None:
        """Insert a staged batch without the triggers (in the load's transaction): the load
        checks the batch and rebuilds the views it reaches set-oriented
        (``runtime.bulk_load``)."""
        for (name,) in self.connection.execute(
                "SELECT name FROM sqlite_temp_master WHERE type = 'trigger'").fetchall():
            self.connection.execute(f"DROP TRIGGER temp.{_quote(name)}")
        try:
            self.sql(f"INSERT INTO {_quote(table)} SELECT * FROM {_quote(staged)}")
        finally:
            self._create_triggers()

    def drop_staged(self, name: str) -> None:
        self.shapes.pop(name, None)
        self._texts.clear()
        self.connection.execute(f"DROP TABLE IF EXISTS temp.{_quote(name)}")

    # -- epoch marks ---------------------------------------------------------
    def mark_epochs(self, marks: Iterable[tuple[str, int]]) -> None:
        self.connection.executemany(f"INSERT OR IGNORE INTO {DIRTY} VALUES (?, ?)",
                                    sorted(set(marks)))

    def marked_epochs(self, view: str) -> list[int]:
        return [e for (e,) in self.connection.execute(
            f"SELECT epoch FROM {DIRTY} WHERE view = ?", [view])]

    def unmark_epoch(self, view: str, epoch: int) -> None:
        self.connection.execute(f"DELETE FROM {DIRTY} WHERE view = ? AND epoch = ?",
                                [view, epoch])

    # -- point writes --------------------------------------------------------
    def insert(self, table: str, row: Mapping[str, Any]) -> None:
        self.connection.execute(self._insert_text(table, tuple(row)), list(row.values()))
        self.counter.writes += 1

    def write_row(self, table: str, row: Mapping[str, Any]) -> None:
        """Insert one row as a whole write: one statement, in the open transaction, else
        alone (autocommit: SQLite takes its write lock for the statement, and its triggers
        run in it, all or nothing). One write."""
        try:
            self.connection.execute(self._insert_text(table, tuple(row)), list(row.values()))
        except sqlite3.Error as err:
            raise self.refused(err) from None
        self.counter.writes += 1

    def delete_row(self, table: str, key: Mapping[str, Any], condition: str = "") -> int:
        """Delete one row as a whole write (as :meth:`write_row`), where ``condition``
        holds; the rows deleted."""
        text = ("delete_row", table, tuple(key), condition)
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = self._delete_text(table, tuple(key)) + (
                f" AND {condition}" if condition else "")
        return self._whole(sql, list(key.values()))

    def after_maintenance(self) -> None:
        """After a maintainer's transactions: checkpoint the write-ahead log now (PASSIVE:
        it waits for no one), so the pages the maintainer wrote are copied into the
        database by the maintainer, not by the next writer whose commit crosses SQLite's
        auto-checkpoint threshold (``wal_autocheckpoint``, 1,000 pages). Not inside a
        transaction (a bulk load's drain): its commit is still to come."""
        if not self.connection.in_transaction:
            self.connection.execute("PRAGMA wal_checkpoint(PASSIVE)")

    def update_row(self, table: str, key: Mapping[str, Any], row: Mapping[str, Any],
                   kept: Sequence[str] = ()) -> int:
        """Replace one row as a whole write (as :meth:`write_row`), only if its ``kept``
        columns hold ``row``'s values already; the rows updated."""
        text = ("update_row", table, tuple(key), tuple(row), tuple(kept))
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = (
                f"UPDATE {_quote(table)}{self._indexed(table)} SET "
                f"{', '.join(f'{_quote(c)} = ?' for c in row)} WHERE "
                f"{_identical([*key, *kept])}")
        return self._whole(sql, [*row.values(), *key.values(), *(row[c] for c in kept)])

    def _whole(self, sql: str, values: list[Any]) -> int:
        try:
            changed = self.connection.execute(sql, values).rowcount
        except sqlite3.Error as err:
            raise self.refused(err) from None
        self.counter.writes += 1
        return changed

    def insert_rows(self, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows in ``columns`` order, in one call: one write each."""
        self.connection.executemany(self._insert_text(table, tuple(columns)), rows)
        self.counter.writes += len(rows)

    def _insert_text(self, table: str, columns: tuple[str, ...]) -> str:
        text = ("insert", table, columns)
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = (
                f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in columns)}) "
                f"VALUES ({', '.join('?' for _ in columns)})")
        return sql

    def delete(self, table: str, key: Mapping[str, Any]) -> int:
        """Delete the row with this key (NULL key values match NULL)."""
        cursor = self.connection.execute(self._delete_text(table, tuple(key)),
                                         list(key.values()))
        self.counter.writes += 1
        return cursor.rowcount

    def _delete_text(self, table: str, key: tuple[str, ...]) -> str:
        text = ("delete", table, key)
        sql = self._texts.get(text)
        if sql is None:
            sql = self._texts[text] = (f"DELETE FROM {_quote(table)}{self._indexed(table)} "
                                       f"WHERE {_identical(dict.fromkeys(key))}")
        return sql

    def add(self, table: str, key: Mapping[str, Any], deltas: Mapping[str, Any],
            count_column: str, sums: Mapping[str, str] | None = None,
            exact: Mapping[str, str] | None = None) -> None:
        """Add ``deltas`` to the aggregate row at ``key`` (one read, one write); a row whose
        count drops to zero is removed. ``sums`` maps a SUM column to the COUNT of its
        argument: with no non-NULL value left, the SUM is NULL."""
        current = self.get(table, key)
        shape = self.shapes[table]
        if current is None:
            row = dict(key) | {c: 0 for c in shape.columns if c not in key}
        else:
            row = dict(zip(shape.columns, current))
        exact_sums.add_deltas(table, key, row, deltas, sums, exact)
        if current is not None:
            self.connection.execute(self._delete_text(table, tuple(key)), list(key.values()))
        if row[count_column] != 0:
            self.connection.execute(self._insert_text(table, shape.columns),
                                    [row[c] for c in shape.columns])
        self.counter.writes += 1

    # -- engines -------------------------------------------------------------
    def tables(self) -> SQLiteTables | None:
        """The file's tables as an engine's tasks on this machine read and write them (None
        in memory: no other connection can open it)."""
        return None if self.path == ":memory:" else SQLiteTables(self.path, self.busy_timeout)

    def export_snapshot(self) -> str | None:
        return None  # each task reads the latest commit (WAL: never waiting for the writer)

    def replace_from(self, table: str, staged: str,
                     where: Mapping[str, Any] | None = None) -> int:
        """Replace every row of ``table`` by the rows tasks wrote into ``staged`` (a file
        of its own beside the store, :meth:`SQLiteTables.create_stage`: this connection may
        hold the write lock, which tasks would wait for), copied batch by batch; the file
        is removed."""
        columns = self.shapes[table].columns
        condition = " AND ".join(f"{_quote(c)} = ?" for c in where or {})
        self.connection.execute(f"DELETE FROM {_quote(table)}" +
                                (f" WHERE {condition}" if condition else ""),
                                list((where or {}).values()))
        insert = (f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in columns)}) "
                  f"VALUES ({', '.join('?' for _ in columns)})")
        count = 0
        tables = SQLiteTables(self.path)
        try:
            for batch in tables.staged_rows(staged, columns):
                self.connection.executemany(insert, batch)
                count += len(batch)
        finally:
            tables.drop(staged)
        return count

    def append_from(self, table: str, staged: str) -> int:
        """Insert every row tasks wrote into the staging file ``staged`` into ``table``, in
        this transaction, past the triggers (a bulk load, which rebuilds the views
        set-oriented), copied batch by batch through a TEMP table; the file stays (the
        caller drops it after the transaction). How many rows."""
        scratch = f"_piql_append_{staged}"
        columns = self.shapes[table].columns
        rows = [0]

        def counted() -> Iterator[tuple]:
            for batch in SQLiteTables(self.path).staged_rows(staged, columns):
                rows[0] += len(batch)
                yield from batch

        self.stage(scratch, table, counted())
        try:
            self.insert_staged(scratch, table)
        finally:
            self.drop_staged(scratch)
        return rows[0]

    def reader(self) -> Reader | None:
        """A reader with a read-only connection of its own per call, for an engine's tasks
        (None for an in-memory store, which no other connection can open). It is a closure
        that refers to nothing of piql, so Spark's cloudpickle ships it to executors by
        value: they need no piql to run it."""
        if self.path == ":memory:":
            return None
        path = self.path

        def read(statement: str, values: Values) -> list[tuple]:
            import sqlite3

            connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            try:
                connection.execute("PRAGMA case_sensitive_like = ON")  # as the store's
                return connection.execute(statement, values).fetchall()
            finally:
                connection.close()

        return read


class SQLiteTables:
    """A SQLite store's tables as an engine's tasks read and write them: each call on a
    connection of its own, in bounded batches. Only processes on this machine can open the
    file; a staging table is a file of its own beside the store, so tasks can write it
    while the driver holds the store's write lock."""

    local_only = True

    def __init__(self, path: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> None:
        self.path = str(Path(path).resolve())
        # tasks writing one staging file take turns: wait for each other, generously
        self.busy_timeout = max(busy_timeout, 600.0)

    @property
    def location(self) -> str:
        return self.path

    def stage_file(self, name: str) -> str:
        return f"{self.path}.{name}"

    def _open(self, path: str, read_only: bool = False) -> sqlite3.Connection:
        try:
            if read_only:
                return sqlite3.connect(f"{Path(path).as_uri()}?mode=ro", uri=True,
                                       timeout=self.busy_timeout)
            return sqlite3.connect(path, timeout=self.busy_timeout, isolation_level=None)
        except sqlite3.Error as err:
            raise DeploymentError(f"{path}: cannot open the store: {err} (a SQLite store is "
                                  "read and written by tasks on this machine only)") from None

    def columns(self, table: str) -> list[tuple[str, str]]:
        connection = self._open(self.path, read_only=True)
        try:
            return [(name, declared) for _, name, declared, *_ in
                    connection.execute("SELECT * FROM pragma_table_info(?)", [table])]
        finally:
            connection.close()

    def read(self, table: str, columns: Sequence[str], key: Sequence[str], part: int,
             parts: int, batch_rows: int, snapshot: str | None = None) -> Iterator[list[tuple]]:
        """The rows whose ``key`` hashes to ``part`` of ``parts`` (a CRC of the key's values),
        ``batch_rows`` at a time; ``snapshot`` is ignored (each task reads the latest commit).
        A staging table is read from its own file."""
        stage = self.stage_file(table)
        connection = self._open(stage if os.path.exists(stage) else self.path, read_only=True)
        try:
            connection.execute(CASE_SENSITIVE_LIKE)
            connection.create_function("piql_part", -1, _part_of(parts), deterministic=True)
            hashed = ", ".join(_quote(c) for c in key or columns)
            cursor = connection.execute(
                f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(table)} "
                f"WHERE piql_part({hashed}) = ?", [part])
            while batch := cursor.fetchmany(batch_rows):
                yield batch
        finally:
            connection.close()

    def create_stage(self, name: str, like: str, columns: Sequence[str]) -> None:
        connection = self._open(self.stage_file(name))
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"CREATE TABLE {_quote(name)} "
                               f"({', '.join(_quote(c) for c in (*columns, TASK_COLUMN))})")
        finally:
            connection.close()

    def write(self, table: str, columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]],
              task: int | None = None) -> int:
        """Insert the rows (executemany per batch) in one transaction: into the store's
        ``table``, or, with ``task``, into the staging file ``table`` (replacing what an
        earlier attempt of that task wrote)."""
        connection = self._open(self.path if task is None else self.stage_file(table))
        names = list(columns) + ([TASK_COLUMN] if task is not None else [])
        insert = (f"INSERT INTO {_quote(table)} ({', '.join(_quote(c) for c in names)}) "
                  f"VALUES ({', '.join('?' for _ in names)})")
        count = 0
        try:
            connection.execute("BEGIN IMMEDIATE")
            if task is not None:
                connection.execute(f"DELETE FROM {_quote(table)} WHERE {TASK_COLUMN} = ?", [task])
            for batch in batches:
                connection.executemany(insert, batch if task is None else
                                       [(*row, task) for row in batch])
                count += len(batch)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        finally:
            connection.close()
        return count

    def staged_rows(self, name: str, columns: Sequence[str],
                    batch_rows: int = 65_536) -> Iterator[list[tuple]]:
        """The rows tasks wrote into the staging file ``name``, batch by batch."""
        connection = self._open(self.stage_file(name), read_only=True)
        try:
            cursor = connection.execute(
                f"SELECT {', '.join(_quote(c) for c in columns)} FROM {_quote(name)}")
            while batch := cursor.fetchmany(batch_rows):
                yield batch
        finally:
            connection.close()

    def drop(self, name: str) -> None:
        for suffix in ("", "-wal", "-shm"):
            try:
                os.remove(self.stage_file(name) + suffix)
            except FileNotFoundError:
                pass


def _part_of(parts: int):
    """SQLite's partition function of a row's key values: a CRC of their representation."""
    def part(*values: Any) -> int:
        return zlib.crc32(repr(values).encode()) % parts
    return part


class ReadOnlyDatabase:
    """An existing SQLite file piql reads but does not keep (``piql lint --db`` reads its
    catalog), opened read-only: nothing piql does through it can change the file. Errors of
    the database are :class:`~piql.runtime.errors.UnreadableDatabase` with SQLite's message."""

    def __init__(self, path: str) -> None:
        try:
            self._connection = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro",
                                               uri=True)
        except sqlite3.Error as err:
            raise UnreadableDatabase(str(err)) from None

    def rows(self, statement: str, values: Values = ()) -> list[tuple]:
        """The rows of one statement."""
        try:
            return self._connection.execute(statement, values).fetchall()
        except sqlite3.DatabaseError as err:
            raise UnreadableDatabase(str(err)) from None

    def close(self) -> None:
        self._connection.close()

    def __enter__(self) -> ReadOnlyDatabase:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _identical(key: Iterable[str]) -> str:
    """A WHERE clause matching exactly the row with this key, NULLs included; SQLite reads
    ``column IS ?`` through an index like ``column = ?``."""
    return " AND ".join(f"{_quote(c)} IS ?" for c in key)


def _affinity(declared: str) -> str:
    """SQLite keeps the declared type name; "ANY" means no affinity at all."""
    return "" if declared.upper() == "ANY" else declared
