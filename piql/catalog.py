"""The catalog: tables, keys, cardinality constraints and declared indexes.

A :class:`Catalog` is what the schema file means once parsed and checked. It is
immutable; the planner reads it and never changes it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from piql.errors import Location


@dataclass(frozen=True)
class Column:
    name: str
    type: str
    temporal: bool = False
    location: Location | None = field(default=None, compare=False)


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
class Index:
    """A secondary index: an ordered B-tree on ``columns`` holding the row's key."""

    name: str
    table: str
    columns: tuple[str, ...]
    location: Location | None = field(default=None, compare=False)


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
    tables: tuple[Table, ...]
    indexes: tuple[Index, ...] = ()
    source: str = "<schema>"

    def table(self, name: str) -> Table | None:
        """The table called ``name`` (matched case-insensitively, as SQL does)."""
        lowered = name.lower()
        for table in self.tables:
            if table.name.lower() == lowered:
                return table
        return None

    def indexes_on(self, table: str) -> tuple[Index, ...]:
        return tuple(i for i in self.indexes if i.table.lower() == table.lower())
