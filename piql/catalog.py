"""The catalog: tables, keys, cardinality constraints and declared indexes.

A :class:`Catalog` is what the schema file (or a running database's catalog,
see ``piql.introspect``) means once parsed and checked. It is immutable; the
planner reads it and never changes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from piql.diagnostics import Diagnostic
from piql.errors import Location


@dataclass(frozen=True)
class Column:
    """A column as declared.

    ``nullable`` is False for ``NOT NULL`` columns, primary-key columns, identity
    and serial columns. piql refuses NULL there on every write and load, so bounds may
    rest on it: Phase 0 trusts a foreign-key lookup to keep every row only when the
    foreign-key columns are NOT NULL.

    ``default`` is the column's ``DEFAULT`` when it is a constant literal (an int, a
    float, a str or a bool, of the column's type), which a write or load omitting the
    column gets; None for no DEFAULT, ``DEFAULT NULL``, and a DEFAULT piql does not fill
    (an expression such as ``nextval(...)``: the write must give the value).
    """

    name: str
    type: str
    temporal: bool = False
    location: Location | None = field(default=None, compare=False)
    nullable: bool = True
    default: int | float | str | bool | None = None


@dataclass(frozen=True)
class ForeignKey:
    """``FOREIGN KEY (columns) REFERENCES table (ref_columns)``."""

    columns: tuple[str, ...]
    ref_table: str
    ref_columns: tuple[str, ...]
    location: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class CardinalityConstraint:
    """At most ``limit`` distinct values of ``column`` for each value of ``per``.

    ``per`` defaults to the table's other primary-key columns
    (``WITH CARDINALITY (tag, 10)`` on ``Tags(docId, tag)``: 10 tags per docId).
    """

    column: str
    limit: int
    per: tuple[str, ...]
    location: Location | None = field(default=None, compare=False)

    def describe(self) -> str:
        return f"CARDINALITY ({self.column}, {self.limit}) PER ({', '.join(self.per)})"


@dataclass(frozen=True)
class UniqueKey:
    """``UNIQUE (columns)``: a constraint or a unique index on plain columns.

    At most one row has given non-NULL values of ``columns``. SQL lets many
    rows hold NULL in a UNIQUE column, but ``col = value`` never matches NULL,
    so an equality on every column still finds at most one row; ``col IS NULL``
    does not, unless ``nulls_distinct`` is False (PostgreSQL's
    ``UNIQUE NULLS NOT DISTINCT``).
    """

    columns: tuple[str, ...]
    name: str | None = None
    location: Location | None = field(default=None, compare=False)
    nulls_distinct: bool = True

    def describe(self) -> str:
        nulls = "" if self.nulls_distinct else " NULLS NOT DISTINCT"
        return f"UNIQUE{nulls} ({', '.join(self.columns)})"


@dataclass(frozen=True)
class IndexExpression:
    """A key part of an expression index, e.g. ``lower(email)``.

    ``sql`` is the expression as sqlglot writes it (PostgreSQL read, default
    dialect written), without redundant parentheses or casts of a text column
    to text: pg_dump's ``lower((email)::text)`` is ``LOWER(email)``.
    ``columns`` are the columns it reads (declared spelling) and ``position``
    its place in the index key.
    """

    position: int
    sql: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class Index:
    """A secondary index: an ordered B-tree on ``columns`` holding the row's key.

    Declared indexes may be more than that: ``unique``; over expressions (the
    key part in ``columns`` is then the expression's SQL and ``expressions``
    describes it); partial (``predicate``: the WHERE of ``CREATE INDEX``, as
    sqlglot writes it); or of another access method (``hash``, ``gin``, ...).
    Phase 0 reads only :attr:`plain` indexes.
    """

    name: str
    table: str
    columns: tuple[str, ...]
    location: Location | None = field(default=None, compare=False)
    unique: bool = False
    expressions: tuple[IndexExpression, ...] = ()
    predicate: str | None = None
    method: str = "btree"

    @property
    def plain(self) -> bool:
        """A B-tree over plain columns holding every row: what Phase 0 can scan in key order.

        A partial index holds only the rows its predicate keeps, so reading it
        for a query is right only when the query's own predicates imply it,
        which piql does not try to prove; an expression index orders rows by
        the expression, not by a column.
        """
        return not self.expressions and self.predicate is None and self.method == "btree"


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]
    foreign_keys: tuple[ForeignKey, ...] = ()
    cardinalities: tuple[CardinalityConstraint, ...] = ()
    location: Location | None = field(default=None, compare=False)
    # Views piql fills itself (periodic results) hold at most this many rows.
    row_limit: int | None = None
    unique_keys: tuple[UniqueKey, ...] = ()
    # The schema the table was declared in (``public`` of ``public.users``): piql
    # names tables without it, and keeps it for messages.
    schema: str | None = field(default=None, compare=False)

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def column(self, name: str) -> Column | None:
        """The column called ``name`` (identifiers are matched case-insensitively)."""
        lowered = name.lower()
        for col in self.columns:
            if col.name.lower() == lowered:
                return col
        return None

    @property
    def temporal_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.temporal)


@dataclass(frozen=True)
class Catalog:
    """Tables and declared indexes; ``notes`` are what piql says about the schema itself
    (statements it skipped, indexes it will not read), as info diagnostics with locations."""

    tables: tuple[Table, ...]
    indexes: tuple[Index, ...] = ()
    source: str = "<schema>"
    notes: tuple[Diagnostic, ...] = field(default=(), compare=False)

    def table(self, name: str) -> Table | None:
        """The table called ``name`` (matched case-insensitively, as SQL does)."""
        lowered = name.lower()
        for table in self.tables:
            if table.name.lower() == lowered:
                return table
        return None

    def indexes_on(self, table: str) -> tuple[Index, ...]:
        return tuple(i for i in self.indexes if i.table.lower() == table.lower())
