"""The engine interface and the work every engine does the same way.

An engine holds named tables and answers SQL in its dialect. piql copies the
tables a job needs out of the serving store, renders the job's SQL with
sqlglot for the engine, and writes the result back to the store in one
transaction.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Sequence

import pyarrow as pa

from piql.sql_types import TypeFamily, family

# Text and every other family travel as strings.
ARROW_TYPES = {
    TypeFamily.INTEGER: pa.int64(), TypeFamily.REAL: pa.float64(),
    TypeFamily.DECIMAL: pa.float64(), TypeFamily.BOOLEAN: pa.bool_(),
}


@dataclass(frozen=True)
class TableData:
    """Rows of one table with their column names and declared SQL types."""

    name: str
    columns: tuple[str, ...]
    types: tuple[str, ...]
    rows: Sequence[tuple]

    def arrow(self) -> pa.Table:
        """An Arrow table typed from the declared types (empty tables keep their schema)."""
        fields = [pa.field(c, _arrow_type(t)) for c, t in zip(self.columns, self.types)]
        arrays = [pa.array([row[i] for row in self.rows], type=f.type) for i, f in enumerate(fields)]
        return pa.Table.from_arrays(arrays, schema=pa.schema(fields))


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

    @abstractmethod
    def define(self, name: str, sql: str) -> None:
        """Name the result of a SELECT (a temporary view) without computing it yet."""

    def close(self) -> None:
        """Release what the engine holds (a shared Spark session stays up)."""
