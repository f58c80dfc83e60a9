"""DuckDB, embedded: the default engine. Partitions of a periodic refresh run as one
parallel query (DuckDB parallelizes the per-partition window over its threads)."""
from __future__ import annotations

from typing import Any

import duckdb

from piql.engines.base import Engine, TableData
from piql.sqlgen import identifier


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"

    def __init__(self) -> None:
        self.connection = duckdb.connect()
        self._registered: dict[str, object] = {}

    def register(self, data: TableData) -> None:
        table = data.arrow()
        self._registered[data.name] = table  # keep the Arrow data alive while registered
        self.connection.register(data.name, table)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql).fetchall()

    def define(self, name: str, sql: str) -> None:
        self.connection.execute(f"CREATE OR REPLACE TEMP VIEW {identifier(name, 'duckdb')} AS {sql}")

    def close(self) -> None:
        self.connection.close()
