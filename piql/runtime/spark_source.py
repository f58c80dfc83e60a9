"""piql's PySpark data source, ``"piql"``: a store's tables read and written by Spark's
tasks, each over a connection of its own, never through the driver.

Reading: ``spark.read.format("piql").option("store", uri).option("table", name)
.option("partitions", N).load()`` reads a base table or view in N tasks; task i reads the
rows whose key hashes to i (``Tables.read``: a server-side cursor on PostgreSQL, batches
on SQLite), ``batch_rows`` rows at a time, as Arrow record batches. Options:

- ``store`` (required): a ``postgresql://`` URI, or a SQLite file (local masters only);
- ``table`` (required): the table or view;
- ``partitions``: tasks (default 8); ``batch_rows``: rows per batch (default 65,536);
- ``key``: JSON list of the columns hashed into partitions (default: every column);
- ``types``: JSON list of the columns' declared SQL types (default: the store's catalog),
  which give the Spark types: integers ``bigint``, REAL and DECIMAL ``double``, BOOLEAN
  ``boolean``, everything else ``string``;
- ``snapshot``: a PostgreSQL snapshot exported by the driver's transaction
  (``Store.export_snapshot``): every task reads that state.

Writing: ``frame.write.format("piql").option("store", uri).option("table", name)
.mode("append").save()`` inserts the frame's rows (columns by name) from its tasks, each
task in one transaction (COPY on PostgreSQL, executemany on SQLite). piql's own jobs
(``runtime.spark_jobs.SparkJobs.write``) write through :func:`write_task` into a staging
table, and get each task's :class:`TaskWrite` report back.

Register the source once per session with :func:`register` (piql's Spark engine does).
Executors need piql and the store's driver (psycopg) installed: see docs/engines.md.
"""
from __future__ import annotations

import json
import os
import socket
from dataclasses import dataclass
from itertools import islice
from typing import Any, Iterable, Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSource, DataSourceArrowWriter, DataSourceReader, InputPartition, WriterCommitMessage,
)
from pyspark.sql.types import (
    BinaryType, BooleanType, DataType, DoubleType, LongType, StringType, StructField, StructType,
)

from piql.runtime.errors import DeploymentError
from piql.runtime.store import Tables, is_url
from piql.sql_types import TypeFamily, family

NAME = "piql"
DEFAULT_PARTITIONS = 8
BATCH_ROWS = 65_536


def tables_at(location: str) -> Tables:
    """The tables of the store at ``location``, for a task (no store is opened)."""
    if is_url(location):
        from piql.runtime.postgres_store import PostgresTables

        return PostgresTables(location)
    if location == ":memory:":
        raise DeploymentError("an in-memory store cannot be read by Spark's tasks; "
                              "deploy into a file or a PostgreSQL database")
    from piql.runtime.sqlite_store import SQLiteTables

    return SQLiteTables(location)


def spark_type(declared: str) -> DataType:
    """The Spark type a column declared ``declared`` is read as."""
    kind = family(declared)
    if kind is TypeFamily.INTEGER:
        return LongType()
    if kind in (TypeFamily.REAL, TypeFamily.DECIMAL) or declared.lower() == "double precision":
        return DoubleType()
    if kind is TypeFamily.BOOLEAN:
        return BooleanType()
    if declared.lower() in ("bytea", "blob"):
        return BinaryType()
    return StringType()


def spark_schema(columns: Sequence[str], types: Sequence[str]) -> StructType:
    return StructType([StructField(c, spark_type(t)) for c, t in zip(columns, types)])


_ARROW = {LongType(): pa.int64(), DoubleType(): pa.float64(), BooleanType(): pa.bool_(),
          BinaryType(): pa.binary()}


def _convert(kind: DataType):
    """The value as Spark takes it for ``kind`` (stores keep booleans as 0/1, SQLite may
    hold an integer in a REAL column)."""
    if kind == BooleanType():
        return lambda v: None if v is None else bool(v)
    if kind == DoubleType():
        return lambda v: None if v is None else float(v)
    if kind == StringType():
        return lambda v: v if v is None or isinstance(v, str) else str(v)
    return lambda v: v


def converter(schema: StructType):
    """A function making a row's values what ``schema``'s types take."""
    converts = [_convert(f.dataType) for f in schema.fields]
    return lambda row: tuple(convert(v) for convert, v in zip(converts, row))


def record_batch(rows: Sequence[tuple], schema: StructType) -> pa.RecordBatch:
    """Rows as an Arrow record batch of ``schema``."""
    arrow = pa.schema([pa.field(f.name, _ARROW.get(f.dataType, pa.string())) for f in schema])
    convert = converter(schema)
    columns = list(zip(*map(convert, rows))) or [() for _ in arrow]
    return pa.RecordBatch.from_arrays(
        [pa.array(list(values), type=field.type) for values, field in zip(columns, arrow)],
        schema=arrow)


@dataclass(frozen=True)
class TaskWrite(WriterCommitMessage):
    """What one writing task reports: its rows, and where it ran."""

    task: int
    rows: int
    pid: int
    host: str


def write_task(tables: Tables, table: str, columns: Sequence[str],
               batches: Iterable[Sequence[tuple]], task: int | None) -> TaskWrite:
    """Write one task's batches of rows into ``table`` (a staging table when ``task`` is
    given): the task's report."""
    rows = tables.write(table, columns, batches, task)
    return TaskWrite(-1 if task is None else task, rows, os.getpid(), socket.gethostname())


def batches_of(rows: Iterable[tuple], size: int = BATCH_ROWS) -> Iterator[list[tuple]]:
    """``rows`` in lists of at most ``size``."""
    iterator = iter(rows)
    while batch := list(islice(iterator, size)):
        yield batch


class PiqlDataSource(DataSource):
    """``spark.read.format("piql")`` and ``frame.write.format("piql")``: see the module."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def _option(self, name: str) -> str:
        value = self.options.get(name)
        if not value:
            raise DeploymentError(f"the piql data source needs the option {name!r}")
        return value

    def _tables(self) -> Tables:
        return tables_at(self._option("store"))

    def schema(self) -> StructType:
        table = self._option("table")
        if "types" in self.options:
            return spark_schema(json.loads(self.options["columns"]), json.loads(self.options["types"]))
        found = self._tables().columns(table)
        if not found:
            raise DeploymentError(f"the store {self.options['store']} has no table {table!r}")
        return spark_schema([c for c, _ in found], [t for _, t in found])

    def reader(self, schema: StructType) -> DataSourceReader:
        return PiqlReader(self._tables(), self._option("table"), schema,
                          json.loads(self.options.get("key", "[]")),
                          int(self.options.get("partitions", DEFAULT_PARTITIONS)),
                          int(self.options.get("batch_rows", BATCH_ROWS)),
                          self.options.get("snapshot") or None)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        if overwrite:
            raise DeploymentError("the piql data source appends (mode 'append'); piql's jobs "
                                  "replace a table through a staging table")
        return PiqlWriter(self._tables(), self._option("table"), schema)


class PiqlReader(DataSourceReader):
    """One partition per hash range of the key; each read in batches by its task."""

    def __init__(self, tables: Tables, table: str, schema: StructType, key: list[str],
                 partitions: int, batch_rows: int, snapshot: str | None) -> None:
        if partitions < 1:
            raise DeploymentError(f"partitions must be 1 or more, not {partitions}")
        self.tables, self.table, self.schema, self.key = tables, table, schema, key
        self.count, self.batch_rows, self.snapshot = partitions, batch_rows, snapshot

    def partitions(self) -> Sequence[InputPartition]:
        return [InputPartition(i) for i in range(self.count)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        columns = self.schema.fieldNames()
        for rows in self.tables.read(self.table, columns, self.key, partition.value,
                                     self.count, self.batch_rows, self.snapshot):
            yield record_batch(rows, self.schema)


class PiqlWriter(DataSourceArrowWriter):
    """Each task inserts its rows in one transaction of its own."""

    def __init__(self, tables: Tables, table: str, schema: StructType) -> None:
        self.tables, self.table, self.columns = tables, table, schema.fieldNames()

    def write(self, iterator: Iterator[pa.RecordBatch]) -> TaskWrite:
        rows = (list(zip(*(c.to_pylist() for c in batch.columns)))
                for batch in iterator if batch.num_rows)
        return write_task(self.tables, self.table, self.columns, rows, None)


def register(session: Any) -> None:
    """Make ``format("piql")`` known to ``session`` (once per session is enough)."""
    session.dataSource.register(PiqlDataSource)


def read_options(location: str, table: str, columns: Sequence[str], types: Sequence[str],
                 key: Sequence[str], partitions: int, snapshot: str | None) -> dict[str, str]:
    """The reader's options for a table piql knows the shape of."""
    options = {"store": location, "table": table, "columns": json.dumps(list(columns)),
               "types": json.dumps(list(types)), "key": json.dumps(list(key)),
               "partitions": str(partitions)}
    if snapshot:
        options["snapshot"] = snapshot
    return options
