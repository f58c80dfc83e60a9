"""The embedded serving store: SQLite tables clustered on their keys, with operation counts.

Every read and write goes through :class:`Store`, which counts operations as
DESIGN.md defines them: one per tuple read or written, at least one per key
lookup or range scan, and one more per row fetched from the base table after
a non-covering secondary-index entry.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from piql.runtime import sqlvalues
from piql.runtime.errors import ConstraintError, DeploymentError, StoreBusy

OPS = {"=": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
# Seconds a write waits for another connection's write lock (a load, a refresh, a repair)
# before it fails with StoreBusy; ``deploy(busy_timeout=...)`` changes it.
DEFAULT_BUSY_TIMEOUT = 30.0


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


@dataclass
class Counter:
    """Operations counted since the counter was started."""

    reads: int = 0
    writes: int = 0

    @property
    def ops(self) -> int:
        return self.reads + self.writes


@dataclass(frozen=True)
class TableShape:
    """What the store needs to know of a table: columns in order and its clustered key.

    ``nullable_key``: some key column may hold NULL (a view keyed on a nullable column).
    SQLite refuses NULL in the primary key of a WITHOUT ROWID table, so such a table is a
    rowid table with a unique index on its key (:attr:`key_index`), which every keyed
    access reads; identity lookups match NULL with ``IS``."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    types: tuple[str, ...] = ()
    nullable_key: bool = False

    @property
    def key_index(self) -> str | None:
        return f"_piql_key_{self.name}" if self.nullable_key else None


@dataclass
class Store:
    """A SQLite database (a file or ``:memory:``) and the tables piql keeps in it."""

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    connection: sqlite3.Connection = field(init=False)
    shapes: dict[str, TableShape] = field(default_factory=dict)
    counter: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.connection = self._connect()
        try:
            if self.path != ":memory:":
                self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=NORMAL")
        except sqlite3.DatabaseError as err:
            self.connection.close()
            raise self.refused(err) from None

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
                                   check_same_thread=False)
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
        return err

    def close(self) -> None:
        self.connection.close()

    # -- schema ------------------------------------------------------------
    def create_table(self, shape: TableShape) -> None:
        types = shape.types or ("",) * len(shape.columns)
        columns = ", ".join(f"{quote(c)} {_affinity(t)}".rstrip() for c, t in zip(shape.columns, types))
        key = ", ".join(quote(c) for c in shape.key)
        if shape.key_index:
            self.connection.execute(f"CREATE TABLE IF NOT EXISTS {quote(shape.name)} ({columns})")
            self.connection.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {quote(shape.key_index)} "
                                    f"ON {quote(shape.name)} ({key})")
        else:
            self.connection.execute(
                f"CREATE TABLE IF NOT EXISTS {quote(shape.name)} ({columns}, PRIMARY KEY ({key})) "
                "WITHOUT ROWID")
        self.shapes[shape.name] = shape

    def create_index(self, name: str, table: str, columns: Sequence[str]) -> None:
        self.connection.execute(
            f"CREATE INDEX IF NOT EXISTS {quote(name)} ON {quote(table)} "
            f"({', '.join(quote(c) for c in columns)})")

    def register(self, shape: TableShape) -> None:
        self.shapes[shape.name] = shape

    # -- transactions --------------------------------------------------------
    def begin(self) -> None:
        """A write transaction: takes the store's write lock now (other writers wait for it,
        up to ``busy_timeout``; then StoreBusy)."""
        try:
            self.connection.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as err:
            raise self.refused(err) from None

    def begin_read(self) -> None:
        """A read transaction: every read until commit sees the snapshot of its first read."""
        self.connection.execute("BEGIN")

    def commit(self) -> None:
        try:
            self.connection.execute("COMMIT")
        except sqlite3.OperationalError as err:
            raise self.refused(err) from None

    def rollback(self) -> None:
        if self.connection.in_transaction:
            self.connection.execute("ROLLBACK")

    # -- reads ---------------------------------------------------------------
    def scan(self, table: str, columns: Sequence[str], eq: Sequence[tuple[str, Any]] = (),
             ranges: Sequence[tuple[str, str, Any]] = (), order: Sequence[str] = (),
             descending: bool = False, limit: int | None = None, index: str | None = None,
             fetches: bool = False) -> list[tuple]:
        """Rows of ``table`` with ``eq`` equalities on a key prefix and ``ranges`` on the
        next column, in ``order``; counts max(1, rows) reads, doubled when every index
        entry needs its base row (``fetches``)."""
        where = [f"{quote(c)} = ?" for c, _ in eq] + [f"{quote(c)} {OPS[op]} ?" for c, op, _ in ranges]
        values = [v for _, v in eq] + [v for _, _, v in ranges]
        sql = f"SELECT {', '.join(quote(c) for c in columns)} FROM {quote(table)}"
        index = index or self._key_index(table)
        if index:
            sql += f" INDEXED BY {quote(index)}"
        if where:
            sql += " WHERE " + " AND ".join(where)
        if order:
            direction = " DESC" if descending else ""
            sql += " ORDER BY " + ", ".join(quote(c) + direction for c in order)
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self.connection.execute(sql, values).fetchall()
        self.counter.reads += max(1, len(rows)) + (len(rows) if fetches else 0)
        return rows

    def get(self, table: str, key: dict[str, Any]) -> tuple | None:
        """The row with this key (NULL key values match NULL: identity, not SQL's =)."""
        shape = self.shapes[table]
        rows = self.connection.execute(
            f"SELECT {', '.join(quote(c) for c in shape.columns)} FROM {quote(table)}"
            f"{self._indexed(table)} WHERE {_identical(key)}", list(key.values())).fetchall()
        self.counter.reads += 1
        return rows[0] if rows else None

    def _key_index(self, table: str) -> str | None:
        shape = self.shapes.get(table)
        return shape.key_index if shape is not None else None

    def _indexed(self, table: str) -> str:
        index = self._key_index(table)
        return f" INDEXED BY {quote(index)}" if index else ""

    def count_distinct(self, table: str, column: str, eq: Sequence[tuple[str, Any]],
                       cap: int, exclude: Any) -> int:
        """Distinct ``column`` values other than ``exclude`` among the rows whose ``eq``
        columns hold the given values, reading at most ``cap``. NULL is a value here, as
        CARDINALITY counts it: ``IS`` matches NULL with NULL, and DISTINCT keeps one NULL."""
        where = " AND ".join([f"{quote(c)} IS ?" for c, _ in eq] + [f"{quote(column)} IS NOT ?"])
        sql = (f"SELECT DISTINCT {quote(column)} FROM {quote(table)} WHERE {where} "
               f"LIMIT {int(cap)}")
        rows = self.connection.execute(sql, [v for _, v in eq] + [exclude]).fetchall()
        self.counter.reads += max(1, len(rows))
        return len(rows)

    def all_rows(self, table: str) -> list[tuple]:
        """Every row (for checks and tests, never for serving): not counted."""
        shape = self.shapes[table]
        return self.connection.execute(
            f"SELECT {', '.join(quote(c) for c in shape.columns)} FROM {quote(table)}").fetchall()

    def sql(self, statement: str, values: Sequence[Any] = ()) -> list[tuple]:
        """Set-oriented SQL (bulk loads, view builds, checks): not counted."""
        return self.connection.execute(statement, list(values)).fetchall()

    # -- writes --------------------------------------------------------------
    def insert(self, table: str, row: dict[str, Any]) -> None:
        columns = list(row)
        self.connection.execute(
            f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in columns)}) "
            f"VALUES ({', '.join('?' for _ in columns)})", [row[c] for c in columns])
        self.counter.writes += 1

    def delete(self, table: str, key: dict[str, Any]) -> int:
        """Delete the row with this key (NULL key values match NULL)."""
        cursor = self.connection.execute(
            f"DELETE FROM {quote(table)}{self._indexed(table)} WHERE {_identical(key)}",
            list(key.values()))
        self.counter.writes += 1
        return cursor.rowcount

    def add(self, table: str, key: dict[str, Any], deltas: dict[str, Any], count_column: str,
            sums: dict[str, str] | None = None) -> None:
        """Add ``deltas`` to the aggregate row at ``key`` (one read, one write); a row whose
        count drops to zero is removed. ``sums`` maps a SUM column to the COUNT of its
        argument: with no non-NULL value left, the SUM is NULL."""
        current = self.get(table, key)
        shape = self.shapes[table]
        if current is None:
            row = dict(key) | {c: 0 for c in shape.columns if c not in key}
        else:
            row = dict(zip(shape.columns, current))
        for column, delta in deltas.items():
            row[column] = (row[column] or 0) + delta
            if not sqlvalues.fits(row[column]):
                raise ConstraintError(
                    f"the write would make {table}.{column} {row[column]} for "
                    f"({', '.join(f'{c}={v!r}' for c, v in key.items())}), outside the "
                    "store's integer range (-2**63 .. 2**63-1), where SQL's SUM overflows too")
        for column, counted in (sums or {}).items():
            if row[counted] == 0:
                row[column] = None
        if current is not None:
            self.connection.execute(
                f"DELETE FROM {quote(table)}{self._indexed(table)} WHERE {_identical(key)}",
                list(key.values()))
        if row[count_column] != 0:
            self.connection.execute(
                f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in shape.columns)}) "
                f"VALUES ({', '.join('?' for _ in shape.columns)})", [row[c] for c in shape.columns])
        self.counter.writes += 1

    def replace_rows(self, table: str, rows: Iterable[Sequence[Any]], where: str = "",
                     values: Sequence[Any] = ()) -> int:
        """Delete the rows matching ``where`` (all when empty) and insert ``rows``: not counted."""
        shape = self.shapes[table]
        self.connection.execute(f"DELETE FROM {quote(table)}" + (f" WHERE {where}" if where else ""),
                                list(values))
        rows = list(rows)
        self.connection.executemany(
            f"INSERT INTO {quote(table)} ({', '.join(quote(c) for c in shape.columns)}) "
            f"VALUES ({', '.join('?' for _ in shape.columns)})", rows)
        return len(rows)


def _identical(key: dict[str, Any]) -> str:
    """A WHERE clause matching exactly the row with this key, NULLs included; SQLite reads
    ``column IS ?`` through an index like ``column = ?``."""
    return " AND ".join(f"{quote(c)} IS ?" for c in key)


def _affinity(declared: str) -> str:
    """SQLite keeps the declared type name; "ANY" means no affinity at all."""
    return "" if declared.upper() == "ANY" else declared
