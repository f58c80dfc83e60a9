"""Engines for set-oriented work over whole tables: view builds, periodic refreshes and
consistency checks. DuckDB is the embedded default; Spark runs the same SQL (transpiled by
sqlglot) when the data outgrows one machine. Spark is imported only when asked for."""
from __future__ import annotations

from typing import Mapping

from piql.engines.base import Engine

ENGINES = ("duckdb", "spark")


def make_engine(name: str = "duckdb", *, spark_master: str | None = None,
                spark_conf: Mapping[str, str] | None = None) -> Engine:
    """The engine called ``name``; Spark starts (once per process and settings) only here,
    on ``spark_master`` with the ``spark.*`` settings of ``spark_conf``."""
    if name == "duckdb":
        from piql.engines.duckdb_engine import DuckDBEngine

        return DuckDBEngine()
    if name == "spark":
        from piql.engines.spark_engine import SparkEngine

        return SparkEngine(spark_master or "local[*]", spark_conf)
    raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINES)}")
