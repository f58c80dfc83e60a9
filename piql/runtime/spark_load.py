"""Bulk loads through Spark, on a PostgreSQL store: the files are read by ``spark.read`` in
the executors, every row is checked and written by the task that read it, the set-oriented
checks run in Spark SQL, and the views are rebuilt by Spark's tasks; the driver holds task
descriptors, counts and the first violation found, never the file's rows.

For each (table, path), in order (parents first):

1. ``spark.read`` reads the CSV (a header row, every value as text, typed in the task as
   the one-machine reader types it) or Parquet file(s): a file, a directory or a glob;
2. each task completes and checks its rows as an insert does (``rows.complete_row``:
   DEFAULTs, NOT NULL, types) and COPYs them into a staging table of its own load (an
   UNLOGGED table, committed by the tasks, which the driver's transaction reads);
3. Spark SQL checks the staged rows against the table (read by the tasks in the snapshot
   of the driver's transaction, with the rows this load staged for it before): the key,
   UNIQUE and CARDINALITY checks, then the FOREIGN KEY checks (the staged rows may hold
   their own parents), the same SQL as ``runtime.bulk_load`` renders for the store;
4. the driver's transaction inserts the staged rows inside PostgreSQL (``append_from``) and
   marks the epochs they reach through the time windows' joins (found in Spark).

Then every maintained view reading a loaded table is rebuilt by Spark's tasks from the
snapshot plus the staged rows (``SparkJobs.rebuild``) and swapped in, still in the driver's
transaction: a refusal anywhere rolls it back and the store is as it was. The staging
tables are dropped at the end, whatever happened.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from piql import sqlgen
from piql.catalog import Table
from piql.errors import Location, PiqlError
from piql.planner.views import ViewDef, ViewKind
from piql.runtime import bulk_load
from piql.runtime.datafiles import csv_header, data_files, is_parquet, read_files, typed
from piql.runtime.engine_bridge import tables_read
from piql.runtime.epochs import EpochWindow
from piql.runtime.errors import ConstraintError, DataFileError, StoreRefused
from piql.runtime.rows import complete_row
from piql.runtime.spark_jobs import SparkJobs
from piql.runtime.spark_source import TaskWrite, batches_of, write_task
from piql.runtime.store import Tables


class SparkSQL:
    """Spark SQL over temporary views named as the store's tables, answering the checks of
    ``runtime.bulk_load`` (its ``Runs``); only the rows a check returns (its first
    violation) reach the driver."""

    dialect = "spark"

    def __init__(self, jobs: SparkJobs, snapshot: str | None,
                 added: dict[str, list[str]]) -> None:
        self.jobs, self.snapshot, self.added = jobs, snapshot, added

    def name(self, table: str, stage: str | None = None) -> None:
        """Make ``table`` (its rows in the snapshot plus those this load staged for it so
        far) and ``stage`` (its own rows, as ``table``'s) known to Spark SQL."""
        self.jobs.read(table, self.snapshot, self.added).createOrReplaceTempView(
            sqlgen.identifier(table, "spark"))
        if stage is not None:
            self.jobs.read_as(stage, table, None).createOrReplaceTempView(
                sqlgen.identifier(stage, "spark"))

    def sql(self, text: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.jobs.session.sql(text).collect()]


def load_files(jobs: SparkJobs, pairs: Sequence[tuple[Table, str | Path]],
               views: tuple[ViewDef, ...], epoch_windows: dict[str, list[EpochWindow]],
               rebuild: Callable[[ViewDef], None]) -> list[int]:
    """Load each (table, path) and rebuild the maintained views reading any of the tables
    (``rebuild`` for a view Spark does not compute: exact sums), all or nothing in one
    transaction of the store. The rows loaded per pair."""
    store = jobs.store
    added: dict[str, list[str]] = {}
    stages: list[str] = []
    counts: list[int] = []
    current = ""
    try:
        with store.transaction():
            spark = SparkSQL(jobs, store.export_snapshot(), added)
            for table, path in pairs:
                current = table.name
                stage, count = _staged(jobs, table, path)
                stages.append(stage)
                _check(spark, table, stage, views, epoch_windows)
                counts.append(count)
            for view in views:
                if view.kind in (ViewKind.IMV, ViewKind.STAGING) and \
                        any(view.reads(t.name) for t, _ in pairs):
                    if view.exact_sums:
                        rebuild(view)
                    else:
                        jobs.rebuild(view, spark.snapshot, added)
    except StoreRefused as err:
        raise ConstraintError(f"the store refused the load into {current}: {err}") from None
    finally:
        for stage in stages:  # after the transaction, which read them
            jobs.tables.drop(stage)
    return counts


def _check(spark: SparkSQL, table: Table, stage: str, views: tuple[ViewDef, ...],
           epoch_windows: dict[str, list[EpochWindow]]) -> None:
    """The staged rows checked against ``table`` in Spark, inserted by the driver's
    transaction, and the epochs they reach marked."""
    store = spark.jobs.store
    spark.name(table.name, stage)
    bulk_load._key_checks(spark, table, stage)
    bulk_load._unique_checks(spark, table, stage)
    bulk_load._cardinality_checks(spark, None, table, stage)
    store.append_from(table.name, stage)  # type: ignore[attr-defined]
    spark.added.setdefault(table.name, []).append(stage)
    # after the insert, so a self-referencing batch may hold its own parents
    for name in {table.name, *(fk.ref_table for fk in table.foreign_keys), *_joined(views, table)}:
        spark.name(name)
    bulk_load._foreign_key_checks(spark, table, stage)
    bulk_load._mark_loaded(store, table, stage, views, epoch_windows, spark)


def _joined(views: tuple[ViewDef, ...], table: Table) -> set[str]:
    """The tables the time windows' insert rules for ``table`` join the loaded rows with."""
    return {name for view in views for rule in view.rules if rule.table.lower() ==
            table.name.lower() for name in tables_read(rule.delta)}


def _staged(jobs: SparkJobs, table: Table, path: str | Path) -> tuple[str, int]:
    """The file(s) at ``path`` read by Spark's tasks, each task checking its rows and
    writing them into a new staging table: its name and the rows staged."""
    files, parquet = _files(path)
    reader = jobs.session.read
    try:
        if parquet:
            frame = reader.parquet(*files)
            names = _parquet_columns(table, frame.columns, files[0])
        else:
            # RFC 4180 as Python's reader: quotes doubled inside a quoted field, which may
            # hold newlines (multiLine: Spark then reads each file in one task)
            frame = reader.options(header=True, mode="FAILFAST", inferSchema=False,
                                   encoding="UTF-8", multiLine=True, quote='"',
                                   escape='"').csv(files)
            names = csv_header(table, frame.columns, files[0])
    except PiqlError:
        raise
    except Exception as err:  # Spark's AnalysisException: not Parquet, not readable
        raise DataFileError(f"{path}: not a readable {'Parquet' if parquet else 'CSV'} "
                            f"file: {_first_line(err)}") from None
    task = functools.partial(_load_task, tables=jobs.tables, table=table, names=tuple(names),
                             text=not parquet, source=str(path))
    try:
        stage, done = jobs.stage(table.name, table.column_names, frame.rdd, task)
    except Exception as err:  # a file Spark could not parse (FAILFAST), after planning
        raise _located(DataFileError(
            f"{path}: not a readable {'Parquet' if parquet else 'CSV'} file: "
            f"{_first_line(err)}"), table, files, parquet) from None
    refused = [error for _, error in done if error is not None]
    if refused:
        jobs.tables.drop(stage)
        raise _located(refused[0], table, files, parquet)
    jobs.last_writes = [report for report, _ in done]
    return stage, sum(report.rows for report, _ in done)


def _located(error: PiqlError, table: Table, files: list[str], parquet: bool) -> PiqlError:
    """A task's error in a CSV file, with the line and field it is on. A task knows no line
    numbers (Spark splits the files between tasks and counts no lines), so the driver reads
    the local file(s) again as the one-machine reader does, a row at a time, up to the
    first value it refuses: the error of that value (with the same message as a load on
    DuckDB), or ``error`` as it is when the files are not local or that reader takes them."""
    if parquet or not isinstance(error, DataFileError) or any("://" in f for f in files):
        return error
    try:
        for _ in read_files(table, [Path(f) for f in files]):
            pass
    except DataFileError as located:
        return located
    return error


def _files(path: str | Path) -> tuple[list[str], bool]:
    """The files Spark reads, and whether they are Parquet: a local path (a file, a
    directory or a glob) as ``datafiles`` finds them; a URI (``s3a://...``,
    ``hdfs://...``: what executors on other machines reach) as given, Parquet when its
    name says so."""
    if "://" in str(path):
        return [str(path)], ".parquet" in str(path).lower()
    found = data_files(path)
    return [str(f) for f in found], is_parquet(found[0])


def _parquet_columns(table: Table, columns: Sequence[str], file: str) -> list[str]:
    names = []
    for position, name in enumerate(columns):
        column = table.column(name)
        if column is None:
            raise DataFileError(
                f"Parquet column '{name}' is not a column of {table.name} "
                f"(columns: {', '.join(table.column_names)})", Location(file, 1, position + 1))
        names.append(column.name)
    return names


def _first_line(err: Exception) -> str:
    """The cause Spark gives (a JVM error's first ``...Exception: message`` line, not
    Py4J's "An error occurred while calling ...")."""
    lines = [line.strip() for line in str(err).splitlines() if line.strip()]
    for line in lines[1:]:
        if "Exception: " in line:
            return line.split("Exception: ", 1)[1]
    return lines[0] if lines else type(err).__name__


# -- in the executors ----------------------------------------------------------------------
def _load_task(stage: str, task: int, rows: Iterator[Any], *, tables: Tables, table: Table,
               names: tuple[str, ...], text: bool, source: str
               ) -> Iterator[tuple[TaskWrite | None, PiqlError | None]]:
    """One task's rows, completed and checked as an insert checks them, COPYed into the
    staging table in one transaction; its report, or the first row it refused (the task
    writes nothing then)."""
    where = Location(source, 1, 1)

    def checked(row: Any) -> tuple:
        try:
            values = {n: typed(table, n, v, where) if text and v is not None else v
                      for n, v in zip(names, row)}
        except DataFileError as err:  # no line: Spark splits the file between tasks
            raise DataFileError(f"{source}: {err.message}") from None
        try:
            return tuple(complete_row(table, values).values())
        except PiqlError as err:
            raise type(err)(f"loading {table.name} from {source}: {err}") from None

    try:
        rows = (checked(row) for row in rows)
        yield write_task(tables, stage, table.column_names, batches_of(rows), task), None
    except PiqlError as err:
        yield None, err
