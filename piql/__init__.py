"""piql: prove that every query and write of an application stays bounded as data grows.

>>> import piql
>>> app = piql.load("schema.sql", "queries.sql")   # plan: levels, views, rules
>>> with app.deploy("app.db") as db:               # SQLite store, creates everything
...     db.query("userById", userId=1).dicts()
>>> app = piql.App.from_database("postgresql://app@db/app")  # schema and queries of a database

Every error piql raises on purpose is a :class:`PiqlError`; the specific ones are
exported here (``piql.ConstraintError``, ``piql.ParameterError``, ...).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from typing import Sequence

from piql.errors import InputError, PiqlError
from piql.language.loader import Source, load_plan
from piql.planner.application import Plan, replanned
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.runtime.errors import (
    BoundExceeded, ConstraintError, DataFileError, DeploymentClosed, DeploymentError,
    ParameterError, StoreBusy, StoreOverflow, StoreRefused, UnboundedQuery, UnknownName,
)
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT

__all__ = [
    "App", "BoundExceeded", "ConstraintError", "DataFileError", "DeploymentClosed",
    "DeploymentError", "InputError", "ParameterError", "PiqlError", "StoreBusy",
    "StoreOverflow", "StoreRefused", "UnboundedQuery", "UnknownName", "__version__", "load",
    "loads",
]


@dataclass(frozen=True)
class App:
    """A planned application: every query's level, and the indexes and views it needs."""

    plan: Plan
    # The plan for other partition counts, made on first use.
    _replanned: dict[int, Plan] = field(default_factory=dict, compare=False, repr=False)

    def deploy(self, path: str | Path = ":memory:", *, strict: bool = True,
               partitions: int = DEFAULT_PARTITIONS, engine: str = "duckdb",
               spark_master: str | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
               quiet: bool = False, queue_policy: str = "in-place", maintainer: bool = False,
               spark_conf: dict[str, str] | None = None):
        """Create (or reopen) the store at ``path`` with this plan's tables, indexes and views.

        ``path``: a SQLite file, ``":memory:"``, or a PostgreSQL database's URI
        (``postgresql://user:password@host:port/dbname``; docs/api.md, the PostgreSQL store).

        ``engine`` runs view builds, periodic refreshes and checks: ``duckdb`` (embedded),
        ``spark`` (``spark_master``, default ``local[*]``; ``spark_conf``: ``spark.*``
        settings for the session), or ``store`` (the store itself).
        ``busy_timeout``: seconds a write waits while another connection (a load, a refresh,
        a repair, another process) holds the store's write lock, before ``StoreBusy``.
        Processes may deploy the same new store at once: one installs the plan.
        ``partitions``: staging partitions of SI-3 views; the plan is made for that many.
        On a terminal, long steps (bulk loads, view builds, refreshes, engine start-up)
        show a status line on standard error with the time they took; ``quiet=True``
        silences it (it is silent off a terminal anyway). Use the deployment as a context
        manager (``with app.deploy(...) as db:``) or ``close()`` it.
        ``queue_policy`` (in-place, fifo, linecutting, append) and ``maintainer=True`` (a
        background thread draining the update queue): asynchronous views, docs/async.md.
        """
        from piql.runtime.deployment import Deployment

        return Deployment(self._plan_for(partitions), str(path), strict=strict, engine=engine,
                          spark_master=spark_master, busy_timeout=busy_timeout, quiet=quiet,
                          queue_policy=queue_policy, maintainer=maintainer,
                          spark_conf=spark_conf)

    def _plan_for(self, partitions: int) -> Plan:
        """The plan for ``partitions`` staging partitions (made once)."""
        from piql.runtime.errors import DeploymentError

        if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
            raise DeploymentError("partitions must be a positive integer")
        if partitions not in self._replanned:
            self._replanned[partitions] = replanned(self.plan, partitions)
        return self._replanned[partitions]

    def migrate(self, path: str | Path, *, dry_run: bool = False, force: bool = False,
                partitions: int = DEFAULT_PARTITIONS, engine: str = "duckdb",
                spark_master: str | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        """Move the store at ``path``, deployed with another plan, to this one without
        reloading it (docs/migrations.md): views whose definition is unchanged are kept,
        new ones built from the rows there by ``engine``, all in one transaction. With
        ``dry_run`` nothing changes. A migration leaving a query that had a bound without
        one is refused unless ``force``. Returns the ``piql.runtime.migrate.Migration``: its
        ``diff.steps``, and ``dry_run()``, the steps' SQL and costs as text."""
        from piql.runtime.migrate import migrate

        return migrate(str(path), self._plan_for(partitions), dry_run=dry_run, force=force,
                       engine=engine, spark_master=spark_master, busy_timeout=busy_timeout)

    @classmethod
    def from_database(cls, url: str, queries: str | Path | None = None, *,
                      partitions: int = DEFAULT_PARTITIONS) -> "App":
        """Plan the application of a running database: the schema from its catalog
        (``sqlite:///app.db``, ``postgresql://user@host/db``), the queries from the
        queries file ``queries`` or, on PostgreSQL without one, the SELECTs
        ``pg_stat_statements`` recorded (named ``stmt_<queryid>``, parameters ``p1``...).
        Raises InputError for a URL it does not read, a database it cannot reach, or a
        mistake in what it read."""
        from piql.introspect import plan_from_database

        return cls(plan_from_database(url, queries, partitions))

    @property
    def levels(self) -> dict[str, str]:
        return {q.name: q.level for q in self.plan.queries}

    def __repr__(self) -> str:
        summary = ", ".join(f"{level} {n}" for level, n in self.plan.summary.items() if n)
        return (f"<piql.App {len(self.plan.queries)} queries ({summary}) from "
                f"{self.plan.queries_file}>")


def load(schema: str | Path, queries: str | Path | Sequence[str | Path], *,
         text: bool = False, maintenance: str = "sync") -> App:
    """Parse and plan an application (raises InputError on a mistake in either).

    ``schema`` and ``queries`` are paths (``queries`` may be a list of files), or, with
    ``text=True``, the SQL itself (as :func:`loads`). ``maintenance`` (``sync`` or
    ``async``) is the mode of every query without a ``-- maintenance:`` line
    (docs/async.md)."""
    if text:
        if not isinstance(schema, str) or not isinstance(queries, str):
            raise InputError("load(..., text=True) expects the schema and queries as strings")
        return loads(schema, queries, maintenance=maintenance)
    return App(load_plan(schema, queries, maintenance=_maintenance(maintenance)))


def loads(schema_sql: str, queries_sql: str, *, schema_name: str = "<schema>",
          queries_name: str = "<queries>", maintenance: str = "sync") -> App:
    """Parse and plan an application given as text; locations in errors name the text
    ``schema_name`` and ``queries_name``; ``maintenance`` as for :func:`load`."""
    return App(load_plan(Source(schema_sql, schema_name), Source(queries_sql, queries_name),
                         maintenance=_maintenance(maintenance)))


def _maintenance(value: str):
    from piql.query_block import MaintenanceMode

    try:
        return MaintenanceMode(value)
    except ValueError:
        raise InputError(f"maintenance must be 'sync' or 'async', got {value!r}") from None


def __getattr__(name: str) -> str:
    if name == "__version__":  # read on first use (importlib.metadata is slow to import)
        from piql.version import version

        return version()
    raise AttributeError(f"module 'piql' has no attribute {name!r}")
