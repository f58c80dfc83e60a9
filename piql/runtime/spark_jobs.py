"""View builds, repairs and checks on Spark, with the data moving between the store and
the executors only.

The tables a view reads are read by Spark's tasks through the ``piql`` data source
(``runtime.spark_source``), in the snapshot of the driver's transaction on PostgreSQL;
Spark computes the view (its definition rendered for Spark by sqlglot) and its rows as
the store keeps them (partition, ``_all``) in the executors; the tasks write them into a
staging table, and the driver swaps it in (``Store.replace_from``) inside its transaction.
A check compares the recomputed view with the stored one in Spark (each distinct row's
count on both sides, :func:`diff`) and returns only the differences. The driver holds task
descriptors, counts and differences, never a table's rows.
"""
from __future__ import annotations

import functools
from contextlib import contextmanager
import secrets
from typing import Any, Iterator, Mapping, Sequence

from pyspark.sql import DataFrame, functions as F
from sqlglot import exp
from pyspark.sql.types import StructType

from piql import sqlgen
from piql.engines.spark_engine import EngineError, SparkEngine
from piql.planner.views import ViewDef
from piql.runtime.check import differences, empty_group, stored_values
from piql.runtime.engine_bridge import tables_read
from piql.runtime.epochs import EpochWindow
from piql.runtime.errors import sum_overflow
from piql.runtime.partitions import partition_of
from piql.runtime.spark_source import (
    TaskWrite, batches_of, converter, read_options, register, spark_schema, write_task,
)
from piql.runtime.store import Store, Tables
from piql.sql_types import TypeFamily, family

STAGE_PREFIX = "_piql_stage_"
# Spark's error classes for a SUM (or its cast to BIGINT) outside the range
OVERFLOWS = ("ARITHMETIC_OVERFLOW", "CAST_OVERFLOW", "NUMERIC_VALUE_OUT_OF_RANGE")


def require_reachable(store: Store, master: str) -> None:
    """A clear error when the executors of ``master`` cannot open ``store``: a SQLite file
    is on this machine only, so only a local master (``local[*]``, ``local-cluster[...]``)
    may read or write it."""
    tables = store.tables()
    if tables is not None and tables.local_only and not master.startswith("local"):
        raise EngineError(f"the store {store.location} is a SQLite file, which only a local "
                          f"Spark master (local[*], local-cluster[...]) can read; {master} "
                          "runs executors on other machines: serve from PostgreSQL "
                          "(deploy('postgresql://...')) or use a local master")


class SparkJobs:
    """Builds, repairs and checks of one deployment's views on one Spark session."""

    def __init__(self, engine: SparkEngine, store: Store, tables: Tables,
                 epoch_windows: dict[str, list[EpochWindow]], partitions: int | None = None):
        require_reachable(store, engine.master)
        self.engine, self.session = engine, engine.session
        self.store, self.tables, self.epoch_windows = store, tables, epoch_windows
        # one read task per core by default
        self.partitions = partitions or max(2, self.session.sparkContext.defaultParallelism)
        register(self.session)
        self.last_writes: list[TaskWrite] = []  # the latest write's task reports

    # -- reading ------------------------------------------------------------------------
    def read(self, name: str, snapshot: str | None,
             added: Mapping[str, Sequence[str]] | None = None) -> DataFrame:
        """A table or view of the store, read by :attr:`partitions` tasks; with the rows of
        the staging tables ``added[name]`` (a bulk load's rows, which the driver's
        transaction holds uncommitted in ``name`` itself), read as committed."""
        frame = self.read_as(name, name, snapshot)
        for stage in (added or {}).get(name, ()):
            frame = frame.unionByName(self.read_as(stage, name, None))
        return frame

    def read_as(self, table: str, like: str, snapshot: str | None) -> DataFrame:
        """``table``, which has (at least) the columns of ``like``, read as ``like``."""
        shape = self.store.shapes[like]
        options = read_options(self.tables.location, table, shape.columns, self.view_types(like),
                               shape.key, self.partitions, snapshot)
        return self.session.read.format("piql").options(**options).load()

    def view_types(self, name: str) -> tuple[str, ...]:
        shape = self.store.shapes[name]
        if shape.types:
            return shape.types
        declared = dict(self.tables.columns(name))
        return tuple(declared.get(c, "") for c in shape.columns)

    def view_frame(self, view: ViewDef, snapshot: str | None,
                   added: Mapping[str, Sequence[str]] | None = None) -> DataFrame:
        """``view`` recomputed from the base tables (with the ``added`` staging tables'
        rows, see :meth:`read`), as the store keeps its rows."""
        for name in dict.fromkeys(tables_read(view.definition)):
            self.read(name, snapshot, added).createOrReplaceTempView(
                sqlgen.identifier(name, "spark"))
        result = self.session.sql(sqlgen.render(exact_sums(view), "spark"))
        columns = self.store.shapes[view.name].columns
        schema = spark_schema(columns, self.view_types(view.name))
        names = tuple(i.name for i in view.definition.select)
        stored = result.rdd.mapPartitions(functools.partial(_stored_rows, view, names, schema))
        return self.session.createDataFrame(stored, schema)

    # -- writing ------------------------------------------------------------------------
    def write(self, frame: DataFrame, table: str, windows: Sequence[EpochWindow] = (),
              where: Mapping[str, Any] | None = None) -> tuple[int, set[tuple[str, int]]]:
        """Replace ``table``'s rows (those holding the ``where`` values, when given) by
        ``frame``'s: the tasks write a staging table, the driver swaps it in (inside its
        transaction). How many rows, and the epochs of ``windows`` they fall in (each task
        reports its own, as it writes)."""
        columns = tuple(frame.columns)
        stage, done = self.stage(table, columns, frame.rdd, functools.partial(
            _write_rows, tables=self.tables, columns=columns, windows=tuple(windows)))
        self.last_writes = [report for report, _ in done]
        # swapped and dropped in the driver's transaction (another connection's DROP
        # would wait for the transaction, which waits for it)
        return self.store.replace_from(table, stage, where), \
            {m for _, marks in done for m in marks}

    def stage(self, like: str, columns: Sequence[str], rdd: Any, task: Any) -> tuple[str, list]:
        """A new staging table with ``like``'s ``columns``, written by the tasks of ``rdd``:
        each partition's rows go through ``task(stage, index, rows)``, which writes them
        and returns its reports. The table's name and every task's reports (the table is
        dropped if a task fails)."""
        stage = f"{STAGE_PREFIX}{secrets.token_hex(8)}"
        self.tables.create_stage(stage, like, columns)
        try:
            done = rdd.mapPartitionsWithIndex(functools.partial(task, stage)).collect()
        except BaseException:
            self.tables.drop(stage)
            raise
        return stage, done

    def rebuild(self, view: ViewDef, snapshot: str | None = None,
                added: Mapping[str, Sequence[str]] | None = None) -> int:
        """Recompute ``view`` and replace its rows; the epochs of the time windows it feeds
        are marked for the next refresh. How many rows. ``snapshot`` and ``added``: the
        state to read, when the caller's transaction has written (a bulk load); default
        the state the caller's transaction sees now."""
        frame = self.view_frame(view, snapshot or self.store.export_snapshot(), added)
        with _sql_overflow(view):
            written, marks = self.write(frame, view.name, self.epoch_windows.get(view.name, ()))
        self.store.mark_epochs(marks)
        return written

    # -- checking -----------------------------------------------------------------------
    def differences(self, view: ViewDef) -> tuple[tuple, tuple]:
        """The rows the recomputed ``view`` has and the store lacks, and those the store
        has too many (``check.differences``: REAL values compare within 1e-12)."""
        snapshot = self.store.export_snapshot()
        with _sql_overflow(view):
            missing, extra = diff(self.view_frame(view, snapshot), self.read(view.name, snapshot))
        return differences(missing, extra)


def exact_sums(view: ViewDef) -> exp.Select:
    """``view``'s definition as Spark runs it: a SUM of integers summed as DECIMAL(38, 0)
    and cast back to BIGINT, SQL's exact SUM, whose only error is a total outside 64
    bits (Spark's own BIGINT SUM fails as soon as a running total leaves the range, which
    depends on the order the rows come in)."""
    select = sqlgen.select(view.definition, paper=False)
    types = {c.name: c.type for c in view.columns}
    for node, item in zip(select.expressions, view.definition.select):
        summed = node.this if isinstance(node, exp.Alias) else node
        if isinstance(summed, exp.Sum) and family(types.get(item.name, "")) is TypeFamily.INTEGER:
            exact = exp.Sum(this=exp.Cast(this=summed.this.copy(),
                                          to=exp.DataType.build("DECIMAL(38, 0)")))
            summed.replace(exp.Cast(this=exact, to=exp.DataType.build("BIGINT")))
    return select


@contextmanager
def _sql_overflow(view: ViewDef) -> Iterator[None]:
    """Spark's ANSI overflow of a SUM or of its cast to BIGINT (an error, as SQL's) as
    piql's ConstraintError."""
    try:
        yield
    except Exception as err:  # Py4J's or PySpark's, depending on the call
        if any(code in str(err) for code in OVERFLOWS):
            raise sum_overflow(view.name) from None
        raise


def diff(expected: DataFrame, actual: DataFrame) -> tuple[list[tuple], list[tuple]]:
    """The rows of ``expected`` that ``actual`` lacks and those it has too many, as
    multisets (two frames of the same schema), computed in Spark: each distinct row's
    count on one side less its count on the other (one shuffle: the union of both sides,
    +1 and -1 per row, grouped by every column, which compares NULL with NULL as a full
    outer join on ``<=>`` would); only the rows whose counts differ reach the driver."""
    names = [f"c{i}" for i in range(len(expected.columns))]
    sides = expected.toDF(*names).withColumn("side", F.lit(1)).unionByName(
        actual.toDF(*names).withColumn("side", F.lit(-1)))
    rows = sides.groupBy(*names).agg(F.sum("side").alias("surplus")) \
        .where("surplus <> 0").collect()
    missing: list[tuple] = []
    extra: list[tuple] = []
    for row in rows:
        values = tuple(row[c] for c in names)
        if row.surplus > 0:
            missing += [values] * row.surplus
        else:
            extra += [values] * -row.surplus
    return missing, extra


# -- in the executors ----------------------------------------------------------------------
def _stored_rows(view: ViewDef, names: tuple[str, ...], schema: StructType,
                 rows: Iterator[tuple]) -> Iterator[tuple]:
    """The definition's rows as the store keeps them (``check.stored_rows``, in a task)."""
    columns = schema.fieldNames()
    convert = converter(schema)
    for row in rows:
        values: dict[str, Any] = dict(zip(names, row))
        if not empty_group(view, values):
            stored = stored_values(view, values, partition_of)
            yield convert(stored[c] for c in columns)


def _write_rows(stage: str, task: int, rows: Iterator[tuple], *, tables: Tables,
                columns: tuple[str, ...], windows: tuple[EpochWindow, ...]
                ) -> Iterator[tuple[TaskWrite, set[tuple[str, int]]]]:
    """One task's rows into the staging table, batch by batch; its report to the driver,
    with the epochs of ``windows`` its rows are in."""
    marks: set[tuple[str, int]] = set()

    def marking(row: tuple) -> tuple:
        values = dict(zip(columns, row))
        marks.update((w.view, e) for w in windows if (e := w.epoch(values)) is not None)
        return row

    rows = (marking(tuple(row)) for row in rows) if windows else (tuple(row) for row in rows)
    yield write_task(tables, stage, columns, batches_of(rows), task), marks
