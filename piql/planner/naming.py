"""Names of what piql creates in the store: never a name the application already uses.

SQLite (like most stores) keeps tables and indexes in one namespace, compared without
case. piql adds views (``<query>_view``, nested delta views, ``<query>Staging``, periodic
views), secondary indexes (``idx_<table>_<columns>``) and a few tables and indexes of its
own. A generated name that equals a table of the schema would make the deployment share
that table with the application; two equal generated names would make two views one.

The rules (docs/views.md, "Names"):

- A name the user chose (``-- view: name``) is kept as written; it may not be the name of
  a table, a declared index, a name piql reserves for itself, or another query's view,
  nor look like piql's index names (``idx_<table>_...``): that is an input error.
- A generated view name that is taken gets the first free suffix ``_2``, ``_3``, ...
  (a periodic view named after its query tries ``<query>_periodic`` first); the query's
  report says so (``info[renamed]``). Queries are named in file order, so the names are
  the same on every run.
- An index name is ``idx_<table>_<columns>``, lowercased, unless another table and column
  list of the schema would spell the same, or a table or declared index has that name:
  then a short hash of the table and columns follows (``idx_a_b_c_3f9e2a``). An index
  name depends on the schema alone, so every query that needs an index names it alike.
- The indexes writes check constraints through are ``chk_<table>_<column>`` (CARDINALITY),
  ``fk_<table>_<columns>`` (FOREIGN KEY) and ``uq_<table>_<columns>`` (UNIQUE), lowercased,
  reserved for every constraint of the schema before any query is planned; one that a
  table, an index or another of them already has gets a short hash (``chk_t_c_3f9e2a``).
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from piql.catalog import Catalog, Table
from piql.planner.physical import IndexPurpose

# Tables piql's runtime keeps in every store (piql/runtime), and the prefix of its
# per-load scratch tables.
RUNTIME_TABLES = ("_piql_meta", "_piql_dirty_epochs")
RUNTIME_PREFIX = "_piql"
LOAD_PREFIX = "_load_"
# On PostgreSQL: the sequence every write transaction bumps (what a refresh compares to
# keep the marks of writes made meanwhile), and the advisory lock (this key, and the hash
# of the schema) that serializes writers as SQLite's write lock does; whatever maintains
# views in the database (triggers) takes the same lock and bumps the same sequence.
VERSION_SEQUENCE = "_piql_version"
WRITE_LOCK_KEY = 0x7069716C  # "piql"


def exact_sum_column(column: str) -> str:
    """The hidden TEXT column beside a maintained SUM of REAL values that keeps the sum
    exactly (``ViewDef.exact_sums``)."""
    return f"{RUNTIME_PREFIX}_exact_{column}"


def key_index_name(view: str) -> str:
    """The unique index on the key of a view whose key may hold NULL: such a view is kept
    in a plain (rowid) table, since a clustered key refuses NULL (``ViewDef.nullable_key``)."""
    return f"{RUNTIME_PREFIX}_key_{view}"


@dataclass(frozen=True)
class Rename:
    """A generated name that was taken, and what it became."""

    wanted: str
    given: str
    holder: str  # what holds ``wanted``

    def describe(self, what: str) -> str:
        return f"{what} {self.given} is not called {self.wanted}: that is the name of {self.holder}"


class Names:
    """The names in use, and the ones given out while planning.

    Planning a query tries several strategies; each works on a :meth:`child`, whose names
    become taken (:meth:`commit`) only when the strategy is chosen.
    """

    def __init__(self, catalog: Catalog, parent: "Names | None" = None) -> None:
        self.catalog = catalog
        self.parent = parent
        self.taken: dict[str, tuple[str, str | None]] = {}  # lowered -> (holder, owner query)
        self.renames: list[Rename] = []
        self.index_names: dict[tuple[str, tuple[str, ...]], str] = {} if parent is None \
            else parent.index_names
        # (purpose, table, columns) lowered -> the name of a constraint-check index
        self.check_names: dict[tuple[IndexPurpose, str, tuple[str, ...]], str] = {} \
            if parent is None else parent.check_names
        if parent is None:
            self._take_catalog(catalog)
            for table in catalog.tables:
                self._take_check_indexes(table)

    def _take_catalog(self, catalog: Catalog) -> None:
        for table in catalog.tables:
            self.taken[table.name.lower()] = (f"table {table.name}", None)
            self.taken[f"{LOAD_PREFIX}{table.name}".lower()] = (
                f"the scratch table piql loads {table.name} through", None)
        for index in catalog.indexes:
            self.taken[index.name.lower()] = (f"index {index.name}", None)
        for name in RUNTIME_TABLES:
            self.taken[name] = (f"piql's table {name}", None)

    def _take_check_indexes(self, table: Table) -> None:
        """Name every index a write may check a constraint of ``table`` through (whether
        the plan needs it or not, so the names never depend on the queries)."""
        holder = "the index piql keeps to check"
        candidates = [(IndexPurpose.CARDINALITY, tuple(c.per) + (c.column,),
                       f"chk_{table.name}_{c.column}", f"{holder} {c.describe()} on {table.name}")
                      for c in table.cardinalities]
        candidates += [(IndexPurpose.FOREIGN_KEY, fk.columns,
                        f"fk_{table.name}_{'_'.join(fk.columns)}",
                        f"{holder} a FOREIGN KEY of {table.name}") for fk in table.foreign_keys]
        candidates += [(IndexPurpose.UNIQUE, u.columns, f"uq_{table.name}_{'_'.join(u.columns)}",
                        f"{holder} {u.describe()} on {table.name}") for u in table.unique_keys]
        for purpose, columns, readable, what in candidates:
            key = (purpose, table.name.lower(), tuple(c.lower() for c in columns))
            if key in self.check_names:
                continue
            name = readable.lower()
            if self._find(name) is not None:
                digest = hashlib.sha1("\0".join((purpose, key[1], *key[2])).encode()).hexdigest()
                size = 6
                while self._find(f"{readable.lower()}_{digest[:size]}") is not None:
                    size += 2
                name = f"{readable.lower()}_{digest[:size]}"
            self.taken[name] = (what, None)
            self.check_names[key] = name

    def check_index(self, purpose: IndexPurpose, table: str, columns: tuple[str, ...]) -> str:
        """The name of the index writes check a constraint of ``table`` through."""
        return self.check_names[(purpose, table.lower(), tuple(c.lower() for c in columns))]

    # -- who holds a name ----------------------------------------------------------------
    def holder(self, name: str, owner: str | None = None) -> str | None:
        """What holds ``name`` (None when free, or held by ``owner``'s own reservation)."""
        lowered = name.lower()
        found = self._find(lowered)
        if found is not None and (owner is None or found[1] != owner):
            return found[0]
        if found is None and lowered.startswith(RUNTIME_PREFIX):
            return f"names starting with {RUNTIME_PREFIX}, which piql keeps for itself"
        table = self._index_like(lowered)
        if found is None and table is not None:
            return f"piql's index names on {table} (idx_{table}_...)"
        return None

    def _find(self, lowered: str) -> tuple[str, str | None] | None:
        names: Names | None = self
        while names is not None:
            if lowered in names.taken:
                return names.taken[lowered]
            names = names.parent
        return None

    def _prefixed(self, lowered: str) -> bool:
        return lowered.startswith(RUNTIME_PREFIX) or self._index_like(lowered) is not None

    def _index_like(self, lowered: str) -> str | None:
        """The table whose generated index names ``lowered`` could be one of."""
        for table in self.catalog.tables:
            if lowered.startswith(f"idx_{table.name.lower()}_"):
                return table.name
        return None

    # -- giving names out ----------------------------------------------------------------
    def reserve(self, name: str, holder: str, owner: str) -> None:
        """Hold ``name`` for ``owner`` (a user's choice, checked with :meth:`holder`)."""
        self.taken[name.lower()] = (holder, owner)

    def claim(self, *candidates: str, holder: str, owner: str) -> str:
        """The first free name among ``candidates``, then the last one with ``_2``,
        ``_3``, ... appended; now held by ``owner`` (the query it is for)."""
        wanted = candidates[0]
        # A prefix piql keeps for itself cannot be left by a suffix: put one before it.
        candidates = tuple(f"v_{c}" if self._prefixed(c.lower()) else c for c in candidates)
        tried = list(candidates)
        number = 2
        while True:
            for name in tried:
                if self.holder(name, owner) is None:
                    if name != wanted:
                        self.renames.append(Rename(wanted, name, self.holder(wanted, owner) or ""))
                    self.reserve(name, holder, owner)
                    return name
            tried = [f"{candidates[-1]}_{number}"]
            number += 1

    def child(self) -> "Names":
        return Names(self.catalog, self)

    def commit(self) -> None:
        """Make this child's names (and renames) its parent's."""
        assert self.parent is not None
        self.parent.taken.update(self.taken)
        self.parent.renames += self.renames

    # -- indexes -------------------------------------------------------------------------
    def index(self, table: str, columns: tuple[str, ...]) -> str:
        """The name of piql's secondary index on ``table`` (``columns``): a function of
        the schema alone."""
        key = (table.lower(), tuple(c.lower() for c in columns))
        if key not in self.index_names:
            self.index_names[key] = self._index_name(*key)
        return self.index_names[key]

    def _index_name(self, table: str, columns: tuple[str, ...]) -> str:
        readable = f"idx_{table}_{'_'.join(columns)}"
        root = self._root()
        clash = root._find(readable) is not None or \
            any(other != (table, columns) for other in self._readings(readable))
        if not clash:
            return readable
        digest = hashlib.sha1(f"{table}\0{chr(0).join(columns)}".encode()).hexdigest()
        size = 6
        while root._find(f"{readable}_{digest[:size]}") is not None:
            size += 2
        return f"{readable}_{digest[:size]}"

    def _root(self) -> "Names":
        names = self
        while names.parent is not None:
            names = names.parent
        return names

    def _readings(self, name: str) -> list[tuple[str, tuple[str, ...]]]:
        """Every (table, columns) of the schema whose readable index name is ``name``."""
        found = []
        for table in self.catalog.tables:
            prefix = f"idx_{table.name.lower()}_"
            if name.startswith(prefix):
                columns = {c.name.lower() for c in table.columns}
                found += [(table.name.lower(), split) for split in
                          _splits(name[len(prefix):], columns)]
        return found


def _splits(text: str, columns: set[str]) -> list[tuple[str, ...]]:
    """Every way of writing ``text`` as column names joined by '_'."""
    found: list[tuple[str, ...]] = []
    for column in columns:
        if text == column:
            found.append((column,))
        elif text.startswith(column + "_"):
            found += [(column,) + rest for rest in _splits(text[len(column) + 1:], columns)]
    return found
