"""The tables a plan keeps in its store, derived from the plan alone.

Every store creates exactly these tables (``piql.runtime.install``), and the compiler of
bounded plans (``piql.planner.compile``) reads them: deriving both from one function keeps
the statements the planner compiles in step with what is installed.

- A base table keeps its columns, clustered on its primary key; on SQLite a key of one
  integer column is the table's rowid (:attr:`KeyStorage.ROWID`, see :func:`key_storage`).
- A view keeps its columns, clustered on its key; a view without key is one aggregate
  row, kept under the key column ``_all``; a SUM of REAL values also keeps its exact sum in
  a hidden TEXT column (``ViewDef.exact_sums``, see ``piql.runtime.exact_sums``).
- A view whose key may hold NULL (``ViewDef.nullable_key``) cannot be clustered on it in
  SQLite (a ``WITHOUT ROWID`` key refuses NULL): it is a rowid table read through the
  unique index :func:`~piql.planner.naming.key_index_name`. That index holds the key and
  then every other stored column (:attr:`KeyStorage.COVERING_KEY_INDEX`, see
  :func:`view_storage`), unless maintenance rewrites the view's rows in place.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Sequence

from piql.catalog import Column, Table
from piql.sql_types import TypeFamily, family

from piql.planner.compile import StoreLayout, TableLayout
from piql.planner.naming import key_index_name
from piql.planner.views import ViewDef, ViewKind

if TYPE_CHECKING:  # the application plan imports this module (Plan.compiled)
    from piql.planner.application import Plan



class KeyStorage(Enum):
    """How SQLite keeps a table on its key (PostgreSQL keeps every table as a heap with a
    unique index on its key, whatever this says).

    - ``CLUSTERED``: a ``WITHOUT ROWID`` table, its rows in the B-tree of the key.
    - ``ROWID``: the key is one integer column, kept as the table's rowid (``INTEGER
      PRIMARY KEY``): one B-tree too, whose inner pages hold only integers. A ``WITHOUT
      ROWID`` B-tree keeps whole rows in its inner pages as well, so a table of wide rows
      (an item's description, a customer's data) fans out to a few rows per inner page
      and is two or three levels deeper: TPC-W's ``item`` and ``customer`` tables were
      five levels deep at 10,000 items and 28,800 customers, against three as rowid
      tables, which a key lookup paid for in pages read (docs/benchmarks.md, TPC-W).
    - ``KEY_INDEX``: a rowid table read through a unique index on its key, for a key that
      may hold NULL (which the other two refuse).
    - ``COVERING_KEY_INDEX``: the same, but the index holds the key and then every other
      stored column (:func:`key_index_columns`): a read through it is one range of index
      entries in key order, and never looks a row up in the table. The rows one key holds
      are scattered over the rowid-ordered table, so each such lookup was a page of its
      own: the same 50 rows of a larger view touched more pages, and the read's latency
      grew with the view (docs/benchmarks.md, TPC-W's SearchResult).

    The statements compiled for a table do not depend on it (``NOT INDEXED`` still looks
    a rowid up by its key; a covering key index starts with the key), so a store keeps
    the base tables' storage it was created with; a view's covering key index is named by
    the plan's fingerprint and record, so ``piql migrate`` rebuilds a view kept before it
    with a narrow one."""

    CLUSTERED = "clustered"
    ROWID = "rowid"
    KEY_INDEX = "key index"
    COVERING_KEY_INDEX = "covering key index"


def key_storage(table: Table) -> KeyStorage:
    """A base table's storage: its rowid when its key is one column of an integer type
    (which piql's writes and loads keep from NULL and from values of other types, both of
    which SQLite's rowid would take differently), clustered on its key otherwise."""
    key = table.primary_key
    if len(key) == 1:
        column = table.column(key[0])
        if column is not None and family(column.type) is TypeFamily.INTEGER:
            return KeyStorage.ROWID
    return KeyStorage.CLUSTERED


@dataclass(frozen=True)
class StoredTable:
    """One table of the store: columns in order with their declared types, its clustered
    key, and whether the key may hold NULL."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    types: tuple[str, ...]
    nullable_key: bool = False
    # (column, value) of a base table's columns with a constant DEFAULT (``Column.default``)
    defaults: tuple[tuple[str, object], ...] = ()
    storage: KeyStorage = KeyStorage.CLUSTERED  # a KEY_INDEX kind exactly when nullable_key

    @property
    def key_index(self) -> str | None:
        """The unique index a table whose key may hold NULL is read through."""
        return key_index_name(self.name) if self.nullable_key else None

    @property
    def key_index_columns(self) -> tuple[str, ...]:
        return key_index_columns(self.columns, self.key, self.storage)


def view_storage(view: ViewDef) -> KeyStorage:
    """How SQLite keeps a view: clustered on its key, unless the key may hold NULL; then a
    rowid table with a covering key index, unless the view's rows change in place on every
    write (an IMV's aggregates: its COUNT and SUM columns), where a covering entry would be
    rewritten with every change of an aggregate (a narrow one only when the key changes).
    The rows of other views change only as their base rows do (a row inserted or deleted
    whole; a non-key column updated when its base column is), and a periodic view's refresh
    writes whole rows. PostgreSQL keeps its unique key index narrow in any case
    (``runtime.postgres_store``).

    The index stays UNIQUE but no longer refuses two rows of one key with other values:
    the key's uniqueness comes from the view's construction (its key holds its relations'
    keys), and SQLite's unique index never refused a repeated key holding a NULL anyway."""
    if not view.nullable_key:
        return KeyStorage.CLUSTERED
    if view.kind is ViewKind.IMV and view.aggregate:
        return KeyStorage.KEY_INDEX
    return KeyStorage.COVERING_KEY_INDEX


def key_index_columns(columns: Sequence[str], key: Sequence[str],
                      storage: KeyStorage) -> tuple[str, ...]:
    """The columns of a table's unique key index, in order: its key, then (a covering key
    index) every other stored column, so that the index's order is the key's."""
    if storage is KeyStorage.COVERING_KEY_INDEX:
        return tuple(key) + tuple(c for c in columns if c not in key)
    return tuple(key)


def index_path(columns: tuple, key: tuple[str, ...], unique: bool) -> tuple:
    """The parts of a secondary index as the store creates it: its own parts, then the rest
    of the table's key (as a secondary index of SQLite's WITHOUT ROWID tables holds them,
    so that a range over the index comes in key order). A unique index keeps its own parts,
    which it keeps unique."""
    return tuple(columns) if unique else tuple(columns) + tuple(c for c in key if c not in columns)


def stored_tables(plan: Plan) -> tuple[StoredTable, ...]:
    """Every table the plan keeps: the base tables, then the views in the order they are
    maintained (and created)."""
    found = [StoredTable(t.name, t.column_names, t.primary_key,
                         tuple(c.type for c in t.columns), defaults=column_defaults(t.columns),
                         storage=key_storage(t))
             for t in plan.catalog.tables]
    for view in plan.ordered_views:
        stored = view.stored_columns
        found.append(StoredTable(view.name, tuple(c for c, _ in stored), view.stored_key,
                                 tuple(t for _, t in stored), view.nullable_key,
                                 storage=view_storage(view)))
    return tuple(found)


def store_layout(plan: Plan) -> StoreLayout:
    """What the compiler must know of the plan's tables (``piql.planner.compile``)."""
    return StoreLayout(tuple(TableLayout(t.name, t.columns, t.key, t.key_index, t.types)
                             for t in stored_tables(plan)))


def column_defaults(columns: Sequence[Column]) -> tuple[tuple[str, object], ...]:
    """(name, value) of the columns with a constant DEFAULT, in order."""
    return tuple((c.name, c.default) for c in columns if c.default is not None)
