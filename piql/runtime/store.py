"""The store protocol: what the runtime needs of the database that holds a deployed plan.

Everything above this protocol (the deployment, the executor, maintained writes, bulk
loads, refreshes, checks) works through it and imports no database driver; a store is
one implementation: :class:`~piql.runtime.sqlite_store.SQLiteStore` (embedded, the
default), and a PostgreSQL store behind the same methods.

The protocol is shaped for a server database as much as for an embedded one:

- **Bounded reads are one statement each.** :meth:`Store.scan`, :meth:`Store.get` and
  :meth:`Store.count_distinct` are key-prefix reads with a stop-after; each is one round
  trip, and its statement text depends only on the access (tables, columns, the number of
  values), never on the values, which are bound. A store prepares each text once and
  reuses it (SQLite's statement cache; a server's prepared statements).
- **Compiled queries.** :meth:`Store.run` runs a bounded query compiled to one statement
  (``piql.planner.compile``), prepared once per connection; what it read is counted by the
  caller from the rows it returns.
- **Counted.** Every bounded read and point write adds what it read and wrote to
  :attr:`Store.counter`, as DESIGN.md defines an operation; set-oriented work
  (:meth:`Store.sql`, :meth:`Store.all_rows`, :meth:`Store.read_table`, bulk loads,
  :meth:`Store.replace_rows`) is not counted.
- **Transactions are context managers.** ``with store.transaction():`` holds the store's
  write lock until the block ends and commits, or rolls back if it raises (writers
  elsewhere wait, up to a timeout, then :class:`~piql.runtime.errors.StoreBusy`);
  ``with store.snapshot():`` reads one consistent state. A store that serves several
  threads (a connection pool) gives each transaction its own connection.
- **Errors are piql's.** A constraint of the database itself refusing a write raises
  :class:`~piql.runtime.errors.StoreRefused`, an integer sum leaving 64 bits
  :class:`~piql.runtime.errors.StoreOverflow`, a lock held too long ``StoreBusy``.
- **Engines read their share themselves.** :meth:`Store.reader` gives a picklable
  callable that opens its own connection, so an engine's tasks (Spark executors) read
  the store in parallel without the driver holding the rows.

SQL given to :meth:`Store.sql` is in the store's :attr:`Store.dialect` (render it with
``piql.sqlgen``), with named parameters (``:name``-style placeholders from sqlgen) bound
from a mapping, or positional ones from a sequence.
"""
from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import (
    TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Protocol, Sequence,
)

if TYPE_CHECKING:  # an engine's type; importing the engines would load pyarrow
    from piql.engines.base import Reader

from piql.planner.naming import key_index_name
from piql.planner.physical import KeyPart
from piql.planner.store_layout import KeyStorage, key_index_columns

# Seconds a write waits for another connection's write lock (a load, a refresh, a repair)
# before it fails with StoreBusy; ``deploy(busy_timeout=...)`` changes it.
DEFAULT_BUSY_TIMEOUT = 30.0


class _IsNull:
    """The value of a :meth:`Store.scan` equality that reads the rows holding NULL there
    (``IS NULL``; an ``=`` with a NULL value finds nothing, as in SQL)."""

    def __repr__(self) -> str:
        return "IS_NULL"


IS_NULL = _IsNull()

# The column of a staging table (``Tables.create_stage``) naming the engine task that wrote
# each row: a task run again replaces its own rows, never another's.
TASK_COLUMN = "_piql_task"

Values = Sequence[Any] | Mapping[str, Any]


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

    ``nullable_key``: some key column may hold NULL (a view keyed on a nullable column;
    the plan says so). A store that refuses NULL in a clustered key (SQLite's WITHOUT ROWID
    tables) keeps such a table unclustered with a unique index on its key
    (:attr:`key_index`), which every keyed access reads; identity lookups match NULL."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    types: tuple[str, ...] = ()
    nullable_key: bool = False
    defaults: tuple[tuple[str, object], ...] = ()  # (column, constant DEFAULT) of a base table
    # SQLite: an integer key as the rowid, or clustered (the plan's ``KeyStorage``)
    storage: KeyStorage = KeyStorage.CLUSTERED

    def default(self, column: str) -> object:
        """The column's constant DEFAULT (None: none), as ``CREATE TABLE`` declares it."""
        return next((v for c, v in self.defaults if c == column), None)

    @property
    def key_index(self) -> str | None:
        return key_index_name(self.name) if self.nullable_key else None

    @property
    def key_index_columns(self) -> tuple[str, ...]:
        """The key index's columns on SQLite: the key, then the rest if it covers the row."""
        return key_index_columns(self.columns, self.key, self.storage)


class Store(Protocol):
    """A database holding a deployed plan's tables, views and piql's bookkeeping."""

    dialect: str  # the sqlglot dialect of its SQL
    location: str  # where it is (a file, a URL without password), for messages
    counter: Counter
    shapes: dict[str, TableShape]
    # The delta rules the database runs itself, in triggers (``runtime.install``), which
    # piql's write path then skips: none on SQLite, every IMV's on PostgreSQL.
    maintained_rules: frozenset[str]
    # The tables whose triggers check an inserted row's CARDINALITY and FOREIGN KEY
    # constraints (after the write lock); with its primary key, which the database checks,
    # an insert there is one statement (``write_row``) when the triggers run all its rules.
    checked_tables: frozenset[str]

    # -- tables, indexes, piql's own bookkeeping ------------------------------------------
    def register(self, shape: TableShape) -> None:
        """Know ``shape`` (a table that exists, or is about to)."""

    def create_table(self, shape: TableShape) -> None:
        """Create the table (clustered on its key where the store can) and register it."""

    def create_index(self, name: str, table: str, columns: Sequence[KeyPart],
                     unique: bool = False) -> None:
        """Create a secondary index on ``table`` (``columns`` in order: columns, or
        :class:`~piql.planner.physical.KeyExpression` parts, which the store writes in its
        SQL with piql's meaning); ``unique``: the store refuses a write that would repeat
        its non-NULL values (a declared unique expression index)."""

    def table_names(self) -> set[str]:
        """The tables the database holds, piql's or not."""

    def create_bookkeeping(self) -> None:
        """Create piql's own tables (metadata, epoch marks) where they are missing."""

    def get_meta(self, key: str) -> str | None:
        """A value piql recorded in the store (None when none is, or no bookkeeping yet)."""

    def set_meta(self, key: str, value: str) -> None:
        """Record ``value`` under ``key`` (in the caller's transaction)."""

    def uninstall(self, tables: Sequence[str], meta: tuple[str, str]) -> bool:
        """Drop ``tables`` (with their indexes) and piql's bookkeeping, in one write
        transaction of its own, if the store still records ``meta`` (key, value) and the
        tables hold no row (on PostgreSQL, the functions of its triggers too); False,
        dropping nothing, otherwise. Undoes the install of a deployment whose first load was
        refused."""

    # -- transactions ----------------------------------------------------------------------
    def transaction(self, tables_first: Sequence[str] = (),
                    wait: str = "") -> AbstractContextManager[None]:
        """A write transaction: takes the write lock now, commits at the end of the block,
        rolls back if it raises. ``tables_first``: tables to lock against writes before the
        write lock, waiting at most ``wait`` (a migration's, on PostgreSQL)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A read transaction: every read in the block sees the state of its first read."""

    def version(self) -> int:
        """A number that changes whenever another connection commits a change."""

    # -- bounded reads (counted) -----------------------------------------------------------
    def scan(self, table: str, columns: Sequence[str], eq: Sequence[tuple[KeyPart, Any]] = (),
             ranges: Sequence[tuple[str, str, Any]] = (), order: Sequence[KeyPart] = (),
             descending: bool = False, limit: int | None = None, index: str | None = None,
             fetches: bool = False) -> list[tuple]:
        """Rows of ``table`` with ``eq`` equalities on a key prefix (of its clustered key,
        or of ``index``, whose parts may be expressions; the value :data:`IS_NULL` reads the
        NULLs) and ``ranges`` on the next column, in ``order``, at most ``limit``;
        counts max(1, rows) reads, and one more per row when every index entry needs its
        base row (``fetches``)."""

    def get(self, table: str, key: Mapping[str, Any]) -> tuple | None:
        """The row whose ``key`` columns hold exactly these values (NULL matches NULL):
        one read."""

    def count_distinct(self, table: str, column: str, eq: Sequence[tuple[str, Any]],
                       cap: int, exclude: Any) -> int:
        """Distinct ``column`` values other than ``exclude`` among the rows whose ``eq``
        columns hold the given values (NULL is a value here, as CARDINALITY counts it),
        reading at most ``cap``."""

    def run(self, statement: str, values: Sequence[Any]) -> list[tuple]:
        """Run one bounded statement with positional placeholders (a compiled query,
        ``piql.planner.compile``: ``?`` on SQLite, ``%s`` on PostgreSQL), prepared once per
        connection and reused; its rows. Not counted here: the caller counts what the
        plan's interpreter would (``CompiledQuery.answer``). An integer SUM leaving 64 bits
        raises :class:`~piql.runtime.errors.StoreOverflow`."""

    def prepared(self, statement: str) -> Callable[[Sequence[Any]], list[tuple]]:
        """:meth:`run` of ``statement`` as a function of its values, for a caller that
        runs it many times (``Deployment.query``): what it can, looked up once."""

    # -- point writes (counted) ------------------------------------------------------------
    def insert(self, table: str, row: Mapping[str, Any]) -> None:
        """Insert one row: one write."""

    def write_row(self, table: str, row: Mapping[str, Any]) -> None:
        """Insert one row as a whole write, in one statement: in the thread's transaction if
        one is open, else in a transaction of its own (the store's write lock, taken by the
        table's triggers, and the version bump included). A refusal raises
        :class:`~piql.runtime.errors.StoreRefused` (``duplicate`` for the primary key) and
        changes nothing. One write."""

    def delete_row(self, table: str, key: Mapping[str, Any], condition: str = "") -> int:
        """Delete the row with this key as a whole write, in one statement, as
        :meth:`write_row` inserts (the table's triggers keep the views), only where
        ``condition`` holds (piql's own SQL over the table, e.g. that no row refers to
        it). The rows deleted (0 or 1). One write."""

    def update_row(self, table: str, key: Mapping[str, Any], row: Mapping[str, Any],
                   kept: Sequence[str] = ()) -> int:
        """Replace the row with this key by ``row`` (the same key) as a whole write: one
        UPDATE, as :meth:`write_row` inserts, only if its ``kept`` columns hold ``row``'s
        values already. The rows updated (0 or 1). One write."""

    def insert_rows(self, table: str, columns: Sequence[str],
                    rows: Sequence[Sequence[Any]]) -> None:
        """Insert rows, each holding ``columns`` in order (a delta rule's view rows, sent
        together): one write each."""

    def delete(self, table: str, key: Mapping[str, Any]) -> int:
        """Delete the row with this key (NULL matches NULL): one write."""

    def add(self, table: str, key: Mapping[str, Any], deltas: Mapping[str, Any],
            count_column: str, sums: Mapping[str, str] | None = None,
            exact: Mapping[str, str] | None = None) -> None:
        """Add ``deltas`` to the aggregate row at ``key`` (one read, one write); a row whose
        ``count_column`` reaches zero is removed; a SUM column whose counted column
        (``sums``) reaches zero is NULL. A value leaving 64 bits raises ConstraintError.
        ``exact`` maps a SUM of REAL values to its hidden column: the delta is added to the
        exact sum there (``piql.runtime.exact_sums``) and the column holds it rounded."""

    # -- set-oriented work (not counted) ---------------------------------------------------
    def sql(self, statement: str, values: Values = ()) -> list[tuple]:
        """Run one statement in the store's dialect (bulk checks, view builds, checks,
        refresh shares); its rows."""

    def analyze(self, tables: Sequence[str]) -> None:
        """Refresh the query planner's statistics of ``tables`` after set-oriented work
        (a bulk load, a view build) changed many of their rows, outside any transaction."""

    def all_rows(self, table: str) -> list[tuple]:
        """Every row of a table, in its column order (checks and tests, never serving)."""

    def read_table(self, table: str, batch_rows: int) -> Iterator[list[tuple]]:
        """Every row of a table, ``batch_rows`` at a time (for engines)."""

    def replace_rows(self, table: str, rows: Iterable[Sequence[Any]],
                     where: Mapping[str, Any] | None = None) -> int:
        """Delete the rows whose columns hold the ``where`` values (every row when None)
        and insert ``rows``; how many were inserted."""

    def stage(self, name: str, like: str, rows: Iterable[Sequence[Any]]) -> None:
        """Create the scratch table ``name`` with ``like``'s columns, holding ``rows``,
        visible to this connection only (a bulk load's batch)."""

    def insert_staged(self, staged: str, table: str) -> None:
        """Insert every row of the scratch table ``staged`` into ``table``."""

    def drop_staged(self, name: str) -> None:
        """Drop the scratch table ``name`` (if it exists)."""

    # -- epoch marks: the time windows a refresh must recompute ----------------------------
    def mark_epochs(self, marks: Iterable[tuple[str, int]]) -> None:
        """Record (view, epoch) pairs for the next refresh (not counted)."""

    def marked_epochs(self, view: str) -> list[int]:
        """The epochs recorded for ``view``."""

    def unmark_epoch(self, view: str, epoch: int) -> None:
        """Forget a recorded epoch of ``view`` (its refresh is done)."""

    # -- engines and the end ---------------------------------------------------------------
    def reader(self) -> Reader | None:
        """A picklable reader with a connection of its own, for an engine's tasks (None
        when the store cannot be opened twice, like an in-memory database)."""

    def tables(self) -> "Tables | None":
        """The store's tables as an engine's tasks read and write them, each task on a
        connection of its own (None when no other connection can open the store)."""

    def export_snapshot(self) -> str | None:
        """An identifier of this transaction's snapshot other connections can read in, or
        None (a store without exported snapshots: each task reads the latest commit)."""

    def replace_from(self, table: str, staged: str,
                     where: Mapping[str, Any] | None = None) -> int:
        """Replace every row of ``table`` (those whose columns hold the ``where`` values,
        when given) by those tasks wrote into ``staged``, and drop ``staged`` (in this
        transaction where the store can); how many."""

    def close(self) -> None:
        """Release the store's connections."""


class Tables(Protocol):
    """A store's tables for an engine's tasks (``spark_source``): what each task can do over
    a connection of its own, in bounded batches. Picklable: a task gets a copy."""

    local_only: bool  # only processes on this machine can open the store (a SQLite file)
    location: str  # what a task opens: a URI with its password, or a file's absolute path

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(column, declared type) of ``table``, in order."""

    def read(self, table: str, columns: Sequence[str], key: Sequence[str], part: int,
             parts: int, batch_rows: int, snapshot: str | None = None) -> Iterator[list[tuple]]:
        """The rows whose ``key`` (all columns when empty) hashes to ``part`` of ``parts``."""

    def create_stage(self, name: str, like: str, columns: Sequence[str]) -> None:
        """A staging table for ``like``'s rows, visible to every task at once."""

    def write(self, table: str, columns: Sequence[str], batches: Iterable[Sequence[Sequence[Any]]],
              task: int | None = None) -> int:
        """Insert the rows of ``batches`` in one transaction (a task's rows of a staging
        table replace its earlier attempt's); how many."""

    def drop(self, name: str) -> None:
        """Drop a staging table."""


def is_url(location: str) -> bool:
    """Is ``location`` a PostgreSQL URI (``postgresql://`` or ``postgres://``, as libpq
    reads them) rather than a SQLite file?"""
    from urllib.parse import urlsplit

    return urlsplit(location).scheme in ("postgresql", "postgres")


def open_store(location: str, busy_timeout: float = DEFAULT_BUSY_TIMEOUT) -> Store:
    """The store at ``location``: a PostgreSQL database for a ``postgresql://`` URI (any
    libpq URI), else a SQLite file (or ``:memory:``)."""
    if is_url(location):
        from piql.runtime.postgres_store import PostgresStore

        return PostgresStore(location, busy_timeout)
    from piql.runtime.sqlite_store import SQLiteStore

    return SQLiteStore(location, busy_timeout)
