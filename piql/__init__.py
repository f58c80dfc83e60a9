"""piql: prove that every query and write of an application stays bounded as data grows.

>>> import piql
>>> app = piql.load("schema.sql", "queries.sql")   # plan: levels, views, rules
>>> db = app.deploy("app.db")                      # SQLite store, creates everything
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from piql.errors import InputError, PiqlError
from piql.loader import load_plan
from piql.planner.application import Plan
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT

__all__ = ["App", "InputError", "PiqlError", "load"]


@dataclass(frozen=True)
class App:
    """A planned application: every query's level, and the indexes and views it needs."""

    plan: Plan

    def deploy(self, path: str | Path = ":memory:", *, strict: bool = True,
               partitions: int = DEFAULT_PARTITIONS, engine: str = "duckdb",
               spark_master: str | None = None, busy_timeout: float = DEFAULT_BUSY_TIMEOUT):
        """Create (or reopen) the store at ``path`` with this plan's tables, indexes and views.

        ``engine`` runs view builds, periodic refreshes and checks: ``duckdb`` (embedded),
        ``spark`` (``spark_master``, default ``local[*]``), or ``store`` (SQLite itself).
        ``busy_timeout``: seconds a write waits while another connection (a load, a refresh,
        a repair, another process) holds the store's write lock, before ``StoreBusy``.
        Processes may deploy the same new store at once: one installs the plan.
        """
        from piql.runtime.deployment import Deployment

        return Deployment(self.plan, str(path), strict=strict, partitions=partitions,
                          engine=engine, spark_master=spark_master, busy_timeout=busy_timeout)

    @property
    def levels(self) -> dict[str, str]:
        return {q.name: q.level for q in self.plan.queries}


def load(schema: str | Path, queries: str | Path) -> App:
    """Parse and plan an application (raises InputError on a mistake in either file)."""
    return App(load_plan(schema, queries))
