"""Spark (PySpark): the same SQL on a cluster, ``local[*]`` by default.

The session starts on first use and is shared by every SparkEngine in the
process (starting Spark takes seconds); its logs are quiet. Java is checked
first so a missing JDK is one clear sentence, not a JVM stack trace.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any, Sequence

from piql.engines.base import Engine, Reader, Share, TableData
from piql.errors import PiqlError
from piql.sqlgen import identifier

_SESSIONS: dict[str, Any] = {}


class EngineError(PiqlError):
    """An engine could not start or run."""


def spark_session(master: str = "local[*]"):
    """The process's Spark session for ``master``, started once."""
    if master in _SESSIONS:
        return _SESSIONS[master]
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EngineError("the Spark engine needs Java 17 (a JDK or JRE): install one, for "
                          "example `apt-get install openjdk-17-jre-headless`, or set JAVA_HOME; "
                          "or use the default engine, duckdb")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineError("the Spark engine needs pyspark: pip install 'piql[spark]'") from None
    log_config = Path(__file__).with_name("log4j2.properties")
    session = (SparkSession.builder.master(master).appName("piql")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "8")
               # SQL semantics: an integer overflow is an error, never a wrapped value
               # (the default since Spark 4; said here so no site configuration turns it off)
               .config("spark.sql.ansi.enabled", "true")
               .config("spark.driver.extraJavaOptions", f"-Dlog4j2.configurationFile=file:{log_config}")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    _SESSIONS[master] = session
    return session


def _spark_type(arrow_type):
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType
    import pyarrow as pa

    if pa.types.is_integer(arrow_type):
        return LongType()
    if pa.types.is_floating(arrow_type):
        return DoubleType()
    if pa.types.is_boolean(arrow_type):
        return BooleanType()
    return StringType()


class SparkEngine(Engine):
    name = "spark"
    dialect = "spark"

    def __init__(self, master: str = "local[*]") -> None:
        self.master = master
        self.session = spark_session(master)

    def register(self, data: TableData) -> None:
        frame = self.session.createDataFrame(data.arrow())
        frame.createOrReplaceTempView(identifier(data.name, "spark"))  # Spark parses the name

    def define(self, name: str, sql: str) -> None:
        self.session.sql(sql).createOrReplaceTempView(identifier(name, "spark"))

    def query(self, sql: str) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self.session.sql(sql).collect()]

    def read_shares(self, reader: Reader, name: str, columns: tuple[str, ...],
                    types: tuple[str, ...], shares: Sequence[Share],
                    sql: str) -> tuple[list[tuple[Any, ...]], int]:
        """One Spark task per staging partition reads its bounded share straight from the
        store, with ``reader`` (the store's, opening a connection of its own); Spark then
        merges the shares and runs ``sql`` on them. Returns the rows and the most tuples
        one task read."""
        from pyspark.sql.types import StructField, StructType

        def read(task: tuple[str, Any, tuple]) -> tuple[list[tuple], int]:
            statement, values, keys = task
            rows = reader(statement, values)
            # as piql.runtime.refresh.tuples_read, inline so the task needs no piql import
            reads = sum(len({tuple(r[i] for i in key) for r in rows}) for key in keys) \
                if keys else len(rows)
            return rows, max(1, reads)

        tasks = [(share.sql, share.values, share.keys) for share in shares]
        per_task = self.session.sparkContext.parallelize(tasks, len(tasks)).map(read).cache()
        try:
            counts = per_task.map(lambda done: done[1]).collect()
            arrow = TableData(name, columns, types, []).arrow().schema
            schema = StructType([StructField(f.name, _spark_type(f.type)) for f in arrow])
            self.session.createDataFrame(per_task.flatMap(lambda done: done[0]), schema) \
                .createOrReplaceTempView(identifier(name, "spark"))
            rows = self.query(sql)
        finally:
            per_task.unpersist()
        return rows, max(counts, default=0)
