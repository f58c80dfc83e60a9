"""What a compiled query is: the statement, how to bind it and how to read its answer.

:class:`CompiledQuery` holds one bounded plan as one statement of a dialect
(``piql.planner.compile`` builds it); :meth:`CompiledQuery.answer` turns the fetched rows
into the answer's rows and the operations the interpreter counts (``OpsSource`` says how
the statement reports them). :class:`StoreLayout` is what the compiler must know of the
store's tables (``piql.planner.store_layout`` derives it from the plan).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from operator import itemgetter
from typing import Any, Callable, Mapping, Sequence

from piql.planner.compile_exprs import UncompilablePlan
from piql.query_block import Literal, Param
from piql.sql_types import TypeFamily, family


class Dialect(StrEnum):
    """The serving stores' SQL dialects."""

    SQLITE = "sqlite"
    POSTGRES = "postgres"


class OpsSource(StrEnum):
    """How :meth:`CompiledQuery.answer` reads the operations from the fetched rows."""

    ROWS = "rows"
    SCANNED = "scanned"
    PER_ROW = "per_row"
    COLUMN = "column"
    UNIQUE = "unique"


@dataclass(frozen=True)
class TableLayout:
    """What the compiler must know of one stored table or view.

    ``key`` is the clustered key. ``key_index`` names the unique index a rowid table is
    read through when its key may hold NULL (SQLite keeps no NULL in a ``WITHOUT ROWID``
    key); None for a table clustered on its key."""

    name: str
    columns: tuple[str, ...]
    key: tuple[str, ...]
    key_index: str | None = None
    types: tuple[str, ...] = field(default=(), compare=False)  # declared, by column

    def family(self, column: str) -> TypeFamily:
        """The declared type family of ``column`` (OTHER when the layout has no types)."""
        if column not in self.columns or not self.types:
            return TypeFamily.OTHER
        return family(self.types[self.columns.index(column)])

    @property
    def rowid(self) -> str:
        """A name of the rowid that no column of the table shadows."""
        taken = {c.lower() for c in self.columns}
        for name in ("rowid", "_rowid_", "oid"):
            if name not in taken:
                return name
        raise UncompilablePlan(f"{self.name} has columns named rowid, _rowid_ and oid")

    def not_null(self, column: str) -> bool:
        """Is ``column`` part of a clustered key (so it never holds NULL)?"""
        return self.key_index is None and column in self.key


@dataclass(frozen=True)
class StoreLayout:
    """The physical layout of the tables and views of a deployment."""

    tables: tuple[TableLayout, ...]

    def table(self, name: str) -> TableLayout:
        for table in self.tables:
            if table.name == name:
                return table
        raise UncompilablePlan(f"the store holds no table {name}")


@dataclass(frozen=True)
class Read:
    """One table reference of a compiled statement, for checking the store's own plan:
    ``alias`` as the statement names it, and whether the plan reads it ``whole`` (no key
    prefix and no range: a table with a row limit or no key, or an ordered scan that
    stops after ``stop_after`` rows)."""

    alias: str
    table: str
    index: str | None
    whole: bool
    stop_after: int | None = None


@dataclass(frozen=True)
class CompiledQuery:
    """One bounded plan as one statement in one dialect.

    ``sql`` takes positional placeholders (``?`` for SQLite, ``%s`` for psycopg), bound
    to :meth:`arguments`; ``columns`` names the answer's columns. Run it, fetch every
    row, and hand them to :meth:`answer` for the answer's rows and its operations."""

    dialect: Dialect
    sql: str
    parameters: tuple[Param | Literal, ...]
    columns: tuple[str, ...]
    ops_source: OpsSource
    fetches: bool = False  # ROWS / SCANNED: one more operation per row read
    reads: tuple[Read, ...] = ()
    integral: tuple[int, ...] = ()  # answer columns PostgreSQL returns as numeric (SUM)
    empty: tuple | None = None  # the answer when no row comes back (an aggregate of nothing)
    limit: int | None = None  # PER_ROW: the answer's LIMIT, applied to the rows kept
    ratios: tuple[int, ...] = ()  # answer columns fetched as numerator, denominator
    # PostgreSQL: parameters the statement reads as text (CAST AS TEXT, as LOWER(<e>)): a
    # value of another type is answered by the interpreter (PostgreSQL's text of a REAL
    # is not SQLite's)
    text_parameters: tuple[str, ...] = ()
    # UNIQUE: the operations of a returned row (its one tuple's probes, then each row of a
    # last stop-after), and the statement that counts them when no row comes back
    hit: tuple[int, int] = (0, 0)
    tail: bool = False  # UNIQUE: each row ends with the stop-after's marker (NULL: none found)
    counting: "CompiledQuery | None" = None
    # PER_ROW: the operations of each fetched row when every row costs the same (no
    # filter or lookup before a probe may drop the tuple): no ``_ops`` column; 0: there is
    # one, last
    row_ops: int = 0

    # How to bind and read, decided once: the runtime calls these on every execution.
    _bind: Callable[[Mapping[str, Any]], tuple[Any, ...]] = field(
        init=False, repr=False, compare=False)
    _read: Callable[[Sequence[Sequence[Any]]], tuple[list[tuple], int]] = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_bind", _binder(self.parameters))
        readers = {OpsSource.ROWS: self._rows, OpsSource.SCANNED: self._scanned,
                   OpsSource.PER_ROW: self._per_row, OpsSource.COLUMN: self._column,
                   OpsSource.UNIQUE: self._unique}
        object.__setattr__(self, "_read", readers[self.ops_source])

    def arguments(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """The values to bind, in placeholder order (``values`` by parameter name)."""
        return self._bind(values)

    @property
    def binder(self) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
        """:meth:`arguments` as a plain function, for a caller that keeps it."""
        return self._bind

    @property
    def ops_per_row(self) -> int | None:
        """When the answer is the fetched rows as they come and the operations are
        ``max(1, ops_per_row * len(rows))`` (a plain access, ``OpsSource.ROWS``, with
        nothing to convert): 1, or 2 with a fetch per row; else None (:meth:`answer`)."""
        if self.ops_source is not OpsSource.ROWS or self.integral or self.ratios or \
                self.empty is not None:
            return None
        return 2 if self.fetches else 1

    @property
    def found_ops(self) -> tuple[int, int] | None:
        """When the answer is the fetched rows as they come (without the stop-after's
        marker, :attr:`tail`) and, if any came, the operations are ``first + per_row *
        len(rows)`` (``OpsSource.UNIQUE`` with nothing to convert): ``(first, per_row)``;
        no row means :attr:`counting` counts. Else None."""
        if self.ops_source is not OpsSource.UNIQUE or self.integral or self.ratios or \
                self.limit is not None:
            return None
        return self.hit

    @property
    def kept_ops(self) -> int | None:
        """When each fetched row ends with whether the answer keeps it, and the
        operations are ``max(1, kept_ops * len(fetched))`` (``OpsSource.PER_ROW`` with
        :attr:`row_ops`, nothing to convert or limit): that cost per row; else None."""
        if self.ops_source is not OpsSource.PER_ROW or not self.row_ops or self.integral \
                or self.ratios or self.limit is not None or self.empty is not None:
            return None
        return self.row_ops

    def answer(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int | None]:
        """The answer's rows and the operations the plan's interpreter would count; None
        when the rows do not tell (``OpsSource.UNIQUE`` with no row: run :attr:`counting`,
        as :meth:`run` does)."""
        return self._read(fetched)

    def run(self, execute: Callable[[str, tuple], Sequence[Sequence[Any]]],
            values: Mapping[str, Any]) -> tuple[list[tuple], int]:
        """The answer and its operations for parameter ``values``, with ``execute(sql,
        arguments)`` running a statement on the store (the counting one when needed)."""
        rows, ops = self._read(execute(self.sql, self._bind(values)))
        if ops is None:
            assert self.counting is not None
            return self.counting.run(execute, values)
        return rows, ops

    def _rows(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int]:
        rows = fetched if isinstance(fetched, list) else list(fetched)
        read = len(rows)
        if self.integral or self.ratios or (not rows and self.empty is not None):
            rows = self._finished(rows)
        return rows, (read + read if self.fetches else read) or 1

    def _scanned(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int]:
        read = int(fetched[0][-1]) if fetched else 0
        rows = self._finished([r[:-1] for r in fetched])
        return rows, max(1, read) + (read if self.fetches else 0)

    def _per_row(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int]:
        if self.row_ops:  # each row ends with whether it survives
            rows = [row[:-1] for row in fetched if row[-1]]
            return self._finished(rows[:self.limit]), self.row_ops * len(fetched) or 1
        rows = [row[:-2] for row in fetched if row[-2]]
        return self._finished(rows[:self.limit]), sum([row[-1] for row in fetched]) or 1

    def _unique(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int | None]:
        if not fetched:
            return [], None
        rows = fetched if isinstance(fetched, list) else list(fetched)
        first, per_row = self.hit
        if self.tail:  # the one tuple survived; its stop-after found nothing: one read
            if rows[0][-1] is None:
                return self._finished([]), first + 1
            rows = [row[:-1] for row in rows]
        ops = first + per_row * len(rows)
        return self._finished(rows[:self.limit] if self.limit is not None else rows), ops

    def _column(self, fetched: Sequence[Sequence[Any]]) -> tuple[list[tuple], int]:
        rows = [] if fetched[0][-2] is None else [r[:-2] for r in fetched]
        return self._finished(rows), int(fetched[0][-1])

    def _finished(self, rows: list[tuple]) -> list[tuple]:
        if not rows and self.empty is not None:
            return [self.empty]
        return self._numbers(rows)

    def _numbers(self, rows: list[tuple]) -> list[tuple]:
        if self.ratios:
            rows = [self._divided(row) for row in rows]
        if not self.integral:
            return rows
        return [tuple(_integral(v) if i in self.integral else v for i, v in enumerate(row))
                for row in rows]


    def _divided(self, row: Sequence[Any]) -> tuple:
        """``row`` with each ratio's numerator and denominator replaced by their quotient
        (REAL, NULL for no values: ``piql.runtime.sqlvalues.average``)."""
        values = list(row)
        for position in self.ratios:
            total, count = values[position], values.pop(position + 1)
            values[position] = None if total is None or not count else total / count
        return tuple(values)


def _binder(parameters: tuple[Param | Literal, ...]) -> Callable[[Mapping[str, Any]], tuple]:
    """A function from parameter values by name to the values to bind, in order."""
    if not parameters:
        return lambda values: ()
    if all(isinstance(p, Param) for p in parameters):
        getter = itemgetter(*(p.name for p in parameters))  # type: ignore[union-attr]
        if len(parameters) == 1:
            return lambda values: (getter(values),)
        return getter  # type: ignore[return-value]
    return lambda values: tuple(values[p.name] if isinstance(p, Param) else p.value
                                for p in parameters)


def _integral(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value
