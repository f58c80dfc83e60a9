"""Spark (PySpark): the same SQL on a cluster, ``local[*]`` by default.

The session starts on first use and is shared by every SparkEngine in the
process (starting Spark takes seconds); its logs are quiet. Java is checked
first so a missing JDK is one clear sentence, not a JVM stack trace.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Mapping, Sequence

from piql.engines.base import Engine, Reader, Share, TableData
from piql.errors import PiqlError
from piql.sqlgen import identifier

_SESSIONS: dict[tuple, Any] = {}


class EngineError(PiqlError):
    """An engine could not start or run."""


def spark_session(master: str = "local[*]", conf: Mapping[str, str] | None = None):
    """The process's Spark session for ``master`` and ``conf`` (``spark.*`` settings
    passed through to the builder), started once.

    Executors run this very Python (``spark.pyspark.python``, unless ``conf`` or
    ``PYSPARK_PYTHON`` says otherwise): its packages (piql, psycopg) are what their tasks
    import. Spark's own logs stay quiet on the driver and on the executors."""
    settings = dict(conf or {})
    found = (master, tuple(sorted(settings.items())))
    if found in _SESSIONS:
        return _SESSIONS[found]
    if not (os.environ.get("JAVA_HOME") or shutil.which("java")):
        raise EngineError("the Spark engine needs Java 17 (a JDK or JRE): install one, for "
                          "example `apt-get install openjdk-17-jre-headless`, or set JAVA_HOME; "
                          "or use the default engine, duckdb")
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise EngineError("the Spark engine needs pyspark: pip install 'piql[spark]'") from None
    log_config = f"-Dlog4j2.configurationFile=file:{Path(__file__).with_name('log4j2.properties')}"
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "8",
        # SQL semantics: an integer overflow is an error, never a wrapped value (the
        # default since Spark 4; said here so no site configuration turns it off)
        "spark.sql.ansi.enabled": "true",
        "spark.driver.extraJavaOptions": log_config,
        "spark.executor.extraJavaOptions": log_config,
        "spark.pyspark.python": os.environ.get("PYSPARK_PYTHON") or sys.executable,
        # the driver's own Python workers (a data source's planning) too
        "spark.pyspark.driver.python": sys.executable,
    }
    # the JVM starts Python workers for the driver too (a data source's planning), with
    # the Python of its environment
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_PYTHON", defaults["spark.pyspark.python"])
    configured = defaults | settings
    _launch_quietly(configured)
    builder = SparkSession.builder.master(master).appName("piql")
    for key, value in configured.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    _SESSIONS[found] = session
    return session


def log_file() -> Path:
    """Where the JVM's own output goes (its start-up notices, Spark's error logs): a file,
    so that a piql command prints nothing but its own lines; errors still reach Python as
    exceptions."""
    return Path(tempfile.gettempdir()) / f"piql-spark-{os.getpid()}.log"


def _launch_quietly(settings: Mapping[str, str]) -> None:
    """Start the JVM once per process with its standard output and error in
    :func:`log_file` (PySpark would let it write to the terminal)."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf(loadDefaults=False).setAll(list(settings.items()))
    with open(log_file(), "ab") as log:  # the JVM keeps its own descriptor
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
    SparkContext._ensure_initialized(gateway=gateway)


def stop_sessions() -> None:
    """Stop every Spark session this process started (the next use starts a new one)."""
    for session in _SESSIONS.values():
        session.stop()
    _SESSIONS.clear()


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

    def __init__(self, master: str = "local[*]", conf: Mapping[str, str] | None = None) -> None:
        self.master = master
        self.session = spark_session(master, conf)


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
        per_task, busiest = self.share_tasks(reader, shares)
        try:
            self.share_frame(per_task, name, columns, types)
            rows = self.query(sql)
        finally:
            per_task.unpersist()
        return rows, busiest

    def share_tasks(self, reader: Reader, shares: Sequence[Share]) -> tuple[Any, int]:
        """The shares read by one task each (an RDD of (rows, tuples read), cached: the
        caller unpersists it), and the most tuples one task read."""
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
        except BaseException:
            per_task.unpersist()
            raise
        return per_task, max(counts, default=0)

    def share_frame(self, per_task: Any, name: str, columns: tuple[str, ...],
                    types: tuple[str, ...]) -> Any:
        """The shares :meth:`share_tasks` read, merged as the table ``name`` (a frame,
        computed in the tasks)."""
        from pyspark.sql.types import StructField, StructType

        arrow = TableData(name, columns, types, []).arrow().schema
        schema = StructType([StructField(f.name, _spark_type(f.type)) for f in arrow])
        frame = self.session.createDataFrame(per_task.flatMap(lambda done: done[0]), schema)
        frame.createOrReplaceTempView(identifier(name, "spark"))
        return frame
