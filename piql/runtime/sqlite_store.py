"""The embedded serving store: SQLite tables clustered on their keys, with operation counts.

:class:`SQLiteStore` implements the :class:`~piql.runtime.store.Store` protocol on one
SQLite file (WAL, so readers never wait for the writer) or an in-memory database. It
counts operations as DESIGN.md defines them: one per tuple read or written, at least one
per key lookup or range scan, and one more per row fetched from the base table after a
non-covering secondary-index entry. It is the only module of piql that imports sqlite3
(besides the benchmark's plain-SQLite baseline): :class:`ReadOnlyDatabase` is how the rest
of piql reads an SQLite file it does not keep (``piql.introspect`` reads its catalog).
"""
from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from piql.planner.naming import RUNTIME_TABLES
from piql.planner.physical import KeyExpression, KeyPart
from piql.runtime import exact_sums
from piql.runtime.errors import (
    DeploymentError, StoreBusy, StoreOverflow, StoreRefused, UnreadableDatabase,
)
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, IS_NULL, Counter, TableShape, Values

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


def _part(part: KeyPart) -> str:
    """A column, or an index's expression part (SQLite's lower/upper change ASCII letters
    only: piql's own)."""
    if isinstance(part, KeyExpression):
        return f"{part.func.value.lower()}({_quote(part.column)})"
    return _quote(part)


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class SQLiteStore:
    """A SQLite database (a file or ``:memory:``) and the tables piql keeps in it: the
    :class:`~piql.runtime.store.Store` protocol on one connection."""

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    connection: sqlite3.Connection = field(init=False)
    shapes: dict[str, TableShape] = field(default_factory=dict)
    counter: Counter = field(default_factory=Counter)
    dialect: str = field(default="sqlite", init=False)
    # piql maintains the views of a SQLite store itself (its SQL has no exact REAL sums;
    # ``piql plan --dialect sqlite`` prints triggers for databases piql does not serve)
    maintained_rules: frozenset[str] = field(default=frozenset(), init=False)
    # the text of each bounded read and point write, by its shape (table, columns, which
    # values are NULL, ...): built once, so a write pays for no quoting or joining
    _texts: dict[tuple, str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.connection = self._connect()
        try:
            if self.path != ":memory:":
                self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
            self.connection.execute(CASE_SENSITIVE_LIKE)
        except sqlite3.DatabaseError as err:
            self.connection.close()
            raise self.refused(err) from None

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
        """What to raise for an error of the database itself: busy, or not a store."""
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
            return StoreRefused(text)
        if "integer overflow" in text:
            return StoreOverflow(text)
        return err

    def close(self) -> None:
        self.connection.close()

    # -- schema and bookkeeping ----------------------------------------------
    def create_table(self, shape: TableShape) -> None:
        types = shape.types or ("",) * len(shape.columns)
        columns = ", ".join(f"{_quote(c)} {_affinity(t)}".rstrip()
                            for c, t in zip(shape.columns, types))
        key = ", ".join(_quote(c) for c in shape.key)
        if shape.key_index:
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {_quote(shape.name)} ({columns})")
            self.connection.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {_quote(shape.key_index)} "
                                    f"ON {_quote(shape.name)} ({key})")
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

    def add_column(self, table: str, column: str, declared: str) -> None:
        """``ALTER TABLE ... ADD COLUMN`` (NULL in the rows there), typed as
        :meth:`create_table` types columns (``piql migrate``)."""
        self.connection.execute(f"ALTER TABLE {_quote(table)} ADD COLUMN "
                                f"{_quote(column)} {_affinity(declared)}".rstrip())

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
    def transaction(self) -> Iterator[None]:
        """A write transaction: takes the store's write lock now (other writers wait for it,
        up to ``busy_timeout``; then StoreBusy); a constraint of SQLite's own refusing a
        write is StoreRefused."""
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

    def insert_staged(self, staged: str, table: str) -> None:
        self.sql(f"INSERT INTO {_quote(table)} SELECT * FROM {_quote(staged)}")

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


def _identical(key: Mapping[str, Any]) -> str:
    """A WHERE clause matching exactly the row with this key, NULLs included; SQLite reads
    ``column IS ?`` through an index like ``column = ?``."""
    return " AND ".join(f"{_quote(c)} IS ?" for c in key)


def _affinity(declared: str) -> str:
    """SQLite keeps the declared type name; "ANY" means no affinity at all."""
    return "" if declared.upper() == "ANY" else declared
