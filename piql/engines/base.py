"""The engine interface: named tables in, SQL in the engine's dialect answered.

An engine is a leaf: it knows nothing of piql's stores or plans
(``runtime.engine_bridge`` copies the tables a job needs out of the store, renders the
job's SQL for the engine, and writes the result back). Optional capabilities are methods
of :class:`Engine` with a documented default, which an engine overrides when it can do
more.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from itertools import islice
from typing import Any, Callable, Iterable, Iterator, Sequence

import pyarrow as pa

from piql.sql_types import TypeFamily, family

# Text and every other family travel as strings.
ARROW_TYPES = {
    TypeFamily.INTEGER: pa.int64(), TypeFamily.REAL: pa.float64(),
    TypeFamily.DECIMAL: pa.float64(), TypeFamily.BOOLEAN: pa.bool_(),
}


# Rows per Arrow record batch, and per read of the store when a table is exported: a
# table never has to sit in memory as Python tuples all at once.
BATCH_ROWS = 65_536


@dataclass(frozen=True)
class TableData:
    """Rows of one table with their column names and declared SQL types. ``rows`` may be
    an iterator (read once, batch by batch)."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: Iterable[tuple]

    def schema(self) -> pa.Schema:
        """The Arrow schema, typed from the declared types."""
        return pa.schema([pa.field(c, _arrow_type(t)) for c, t in zip(self.columns, self.types)])

    def arrow(self) -> pa.Table:
        """An Arrow table typed from the declared types (empty tables keep their schema)."""
        return pa.Table.from_batches(list(self.batches()), schema=self.schema())

    def batches(self) -> Iterator[pa.RecordBatch]:
        """The rows as Arrow record batches of :data:`BATCH_ROWS`, made as they are read:
        one batch of Python tuples in memory at a time."""
        schema = self.schema()
        for chunk in _chunks(self.rows, BATCH_ROWS):
            yield pa.RecordBatch.from_arrays(
                [pa.array([row[i] for row in chunk], type=f.type) for i, f in enumerate(schema)],
                schema=schema)


@dataclass(frozen=True)
class Share:
    """One partition's bounded read of a periodic refresh: a statement of the store, its
    parameter values, and the key positions its tuples are counted by (see
    ``runtime.refresh.tuples_read``)."""

    sql: str
    values: Any
    keys: tuple[tuple[int, ...], ...] = ()


# Reads one statement of the store over a connection of its own: (sql, values) -> rows.
Reader = Callable[[str, Any], list[tuple]]


def _chunks(rows: Iterable[tuple], size: int) -> Iterator[list[tuple]]:
    iterator = iter(rows)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _arrow_type(declared: str) -> pa.DataType:
    return ARROW_TYPES.get(family(declared), pa.string())


class Engine(ABC):
    """Named tables in, SQL answered."""

    name: str
    dialect: str

    @abstractmethod
    def register(self, data: TableData) -> None:
        """Make ``data`` queryable under ``data.name`` (replacing an earlier one)."""

    @abstractmethod
    def query(self, sql: str) -> list[tuple[Any, ...]]:
        """Run one SELECT in this engine's dialect."""

    def query_batches(self, sql: str) -> Iterator[list[tuple[Any, ...]]]:
        """Run one SELECT, its rows in batches as the engine produces them. The default
        is one batch of every row; an engine that can stream its results overrides it."""
        yield self.query(sql)

    @abstractmethod
    def define(self, name: str, sql: str) -> None:
        """Name the result of a SELECT (a temporary view) without computing it yet."""

    def read_shares(self, reader: Reader, name: str, columns: tuple[str, ...],
                    types: tuple[str, ...], shares: Sequence[Share],
                    sql: str) -> tuple[list[tuple[Any, ...]], int] | None:
        """Read every share of a periodic refresh in parallel tasks of the engine's own
        (each with ``reader``), merge them as table ``name`` and run ``sql`` on it: the rows
        and the most tuples one share read. The default, for an engine whose tasks cannot
        read the store, is None: the caller reads the shares and :meth:`register` s them."""
        return None

    def close(self) -> None:
        """Release what the engine holds (a shared Spark session stays up)."""
