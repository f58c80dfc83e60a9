"""DuckDB, embedded: the default engine. Partitions of a periodic refresh run as one
parallel query (DuckDB parallelizes the per-partition window over its threads).

Tables come in as a stream of Arrow record batches and are copied into DuckDB's own
(compressed, columnar) tables, and results go out in batches: Python holds
one batch at a time, never a whole table.

DuckDB's tables live in a scratch database file of the engine's own, not in memory, and
DuckDB may use at most :data:`MEMORY_LIMIT` of memory, spilling the rest (of a join, an
aggregate, a sort) to that file's directory: an in-memory database keeps every table it
is given in the process, so a check (the base tables, the recomputed and the stored view)
grew the process's memory with the data. The file goes when the engine is closed (or the
process ends)."""
from __future__ import annotations

import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any, Iterator

import duckdb
import pyarrow as pa

from piql.engines.base import BATCH_ROWS, Engine, TableData
from piql.sqlgen import identifier

# DuckDB's buffer pool: table blocks beyond it are evicted to the scratch file, and
# joins, aggregates and sorts beyond it spill beside it.
MEMORY_LIMIT = "128MB"


class DuckDBEngine(Engine):
    name = "duckdb"
    dialect = "duckdb"

    def __init__(self, memory_limit: str = MEMORY_LIMIT) -> None:
        self.scratch = Path(tempfile.mkdtemp(prefix="piql-duckdb-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, self.scratch, True)
        self.connection = duckdb.connect(str(self.scratch / "engine.duckdb"), config={
            "memory_limit": memory_limit, "temp_directory": str(self.scratch / "spill")})

    def register(self, data: TableData) -> None:
        # batch by batch on the caller's thread (a stream handed to DuckDB would be read
        # from DuckDB's threads, where the store's transaction is not)
        name, incoming = identifier(data.name, "duckdb"), "_piql_incoming"
        self.connection.register(incoming, pa.Table.from_batches([], schema=data.schema()))
        try:
            self.connection.execute(f"CREATE OR REPLACE TABLE {name} AS SELECT * FROM {incoming}")
            for batch in data.batches():
                self.connection.register(incoming, batch)
                self.connection.execute(f"INSERT INTO {name} SELECT * FROM {incoming}")
        finally:
            self.connection.unregister(incoming)

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql).fetchall()

    def query_batches(self, sql: str) -> Iterator[list[tuple[Any, ...]]]:
        cursor = self.connection.cursor()  # its own: the caller may query meanwhile
        try:
            cursor.execute(sql)
            while batch := cursor.fetchmany(BATCH_ROWS):
                yield batch
        finally:
            cursor.close()

    def define(self, name: str, sql: str) -> None:
        # not TEMP: a temporary object is its connection's only, and query_batches reads
        # through a cursor (a connection of its own to the same database)
        self.connection.execute(f"CREATE OR REPLACE VIEW {identifier(name, 'duckdb')} AS {sql}")

    def close(self) -> None:
        self.connection.close()
        self._cleanup()
