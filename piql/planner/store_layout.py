"""The tables a plan keeps in its store, derived from the plan alone.

Every store creates exactly these tables (``piql.runtime.install``), and the compiler of
bounded plans (``piql.planner.compile``) reads them: deriving both from one function keeps
the statements the planner compiles in step with what is installed.

- A base table keeps its columns, clustered on its primary key.
- A view keeps its columns, clustered on its key; a view without key is one aggregate
  row, kept under the key column ``_all``; a SUM of REAL values also keeps its exact sum in
  a hidden TEXT column (``ViewDef.exact_sums``, see ``piql.runtime.exact_sums``).
- A view whose key may hold NULL (``ViewDef.nullable_key``) cannot be clustered on it in
  SQLite (a ``WITHOUT ROWID`` key refuses NULL): it is a rowid table read through the
  unique index :func:`~piql.planner.naming.key_index_name`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from piql.catalog import Column

from piql.planner.compile import StoreLayout, TableLayout
from piql.planner.naming import key_index_name

if TYPE_CHECKING:  # the application plan imports this module (Plan.compiled)
    from piql.planner.application import Plan



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

    @property
    def key_index(self) -> str | None:
        """The unique index a table whose key may hold NULL is read through."""
        return key_index_name(self.name) if self.nullable_key else None


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
                         tuple(c.type for c in t.columns), defaults=column_defaults(t.columns))
             for t in plan.catalog.tables]
    for view in plan.ordered_views:
        stored = view.stored_columns
        found.append(StoredTable(view.name, tuple(c for c, _ in stored), view.stored_key,
                                 tuple(t for _, t in stored), view.nullable_key))
    return tuple(found)


def store_layout(plan: Plan) -> StoreLayout:
    """What the compiler must know of the plan's tables (``piql.planner.compile``)."""
    return StoreLayout(tuple(TableLayout(t.name, t.columns, t.key, t.key_index, t.types)
                             for t in stored_tables(plan)))


def column_defaults(columns: Sequence[Column]) -> tuple[tuple[str, object], ...]:
    """(name, value) of the columns with a constant DEFAULT, in order."""
    return tuple((c.name, c.default) for c in columns if c.default is not None)
