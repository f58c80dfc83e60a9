"""Shared fixtures: the paper's example schema and queries, written once and reused."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from piql.catalog import Catalog
from piql.planner.application import Plan, plan_application
from piql.language.queries import parse_queries
from piql.language.schema import parse_schema

FIXTURES = Path(__file__).parent / "fixtures"
PAPER_SCHEMA = FIXTURES / "paper_schema.sql"
PAPER_QUERIES = FIXTURES / "paper_queries.sql"
# Queries on the paper's schema that piql cannot bound (a lookup by a non-key column, an
# OR) beside one it can: what the reports say about each kind.
PAPER_MIXED_QUERIES = FIXTURES / "paper_mixed_queries.sql"
EXAMPLES = Path(__file__).parent.parent / "examples"


def paper_schema_text(*, cardinality: bool = True, temporal: bool = False) -> str:
    """The §2.2 schema; without its CARDINALITY constraint, or with §6.1's TEMPORAL mark."""
    text = PAPER_SCHEMA.read_text()
    if not cardinality:
        text = text.replace(" WITH CARDINALITY (tag, 10)", "")
    if temporal:
        tags = text.index("CREATE TABLE Tags")
        text = text[:tags] + text[tags:].replace("timestamp BIGINT", "timestamp BIGINT TEMPORAL", 1)
    return text


def paper_catalog(**variant: bool) -> Catalog:
    return parse_schema(paper_schema_text(**variant), "paper_schema.sql")


def plan_text(schema: str, queries: str) -> Plan:
    """Plan inline schema and queries text (file names as the tests' fixtures)."""
    catalog = parse_schema(schema, "schema.sql")
    return plan_application(catalog, parse_queries(queries, catalog, "queries.sql"), "queries.sql")


def paper_mixed_plan() -> Plan:
    """The paper's schema with :data:`PAPER_MIXED_QUERIES` (read as ``queries.sql``)."""
    return plan_text(paper_schema_text(), PAPER_MIXED_QUERIES.read_text())


def paper_plan_for(**variant: bool) -> Plan:
    catalog = paper_catalog(**variant)
    queries = parse_queries(PAPER_QUERIES.read_text(), catalog, "paper_queries.sql")
    return plan_application(catalog, queries, "paper_queries.sql")


@pytest.fixture(scope="session")
def paper_plan() -> Plan:
    return paper_plan_for()


@pytest.fixture(scope="session")
def paper_plan_unconstrained() -> Plan:
    return paper_plan_for(cardinality=False)


@pytest.fixture(scope="session")
def paper_plan_temporal() -> Plan:
    return paper_plan_for(temporal=True)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL 18 server for the session (piql/bench/pg_server.py), started on first use."""
    from piql.bench.pg_server import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URI of a new, empty PostgreSQL database, dropped after the test."""
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)


STORES = ("sqlite", "postgres")
# Spark's executors read a PostgreSQL store with psycopg: run them on this interpreter,
# which has it (a deployment's Spark workers need psycopg installed, see docs/engines.md)
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def engines_on_stores(engines) -> list:
    """(engine, store kind) parameters for ``@pytest.mark.parametrize("engine, new_store",
    ..., indirect=["new_store"])``: every engine on every store; Spark on PostgreSQL is
    marked slow and extended (a Spark job per refresh over a socket takes minutes)."""
    return [pytest.param(engine, store, marks=[pytest.mark.slow, pytest.mark.extended] if
                         (engine, store) == ("spark", "postgres") else [])
            for engine in engines for store in STORES]


class StoreFactory:
    """Fresh stores of one kind for a test: SQLite files in a temporary directory, or
    schemas of the test server's shared PostgreSQL database (a URI whose search_path is a
    new schema: as good as a new database, for a fraction of its cost). Every deployment
    made during the test is closed, and every schema dropped, when it ends."""

    def __init__(self, kind: str, request, directory: Path) -> None:
        self.kind, self.request, self.directory = kind, request, directory
        self.made: list[str] = []

    def __call__(self) -> str:
        if self.kind == "sqlite":
            location = str(self.directory / f"store{len(self.made)}.db")
        else:
            location = self.request.getfixturevalue("postgres_server").create_schema()
        self.made.append(location)
        return location

    def scratch(self) -> str:
        """A fresh store that need not outlive its deployment: in memory for SQLite."""
        return ":memory:" if self.kind == "sqlite" else self()

    def drop(self) -> None:
        if self.kind == "postgres":
            server = self.request.getfixturevalue("postgres_server")
            for url in self.made:
                server.drop_schema(url)


@pytest.fixture
def closes_deployments(monkeypatch):
    """Deployments made during the test, closed when it ends (a PostgreSQL store's pool
    holds connections)."""
    from piql.runtime.deployment import Deployment

    made = []
    original = Deployment.__init__

    def recording(self, *args, **kwargs):
        made.append(self)
        original(self, *args, **kwargs)

    monkeypatch.setattr(Deployment, "__init__", recording)
    yield made
    for deployment in made:
        if hasattr(deployment, "store"):
            deployment.close()


@pytest.fixture(params=STORES)
def new_store(request, tmp_path, closes_deployments):
    """A factory of fresh store locations, for each kind of store (the test runs once per
    kind): ``new_store()`` is a new SQLite file or a new PostgreSQL schema's URI."""
    factory = StoreFactory(request.param, request, tmp_path)
    yield factory
    for deployment in closes_deployments:
        if hasattr(deployment, "store"):
            deployment.close()
    factory.drop()


@pytest.fixture
def postgres_stores(request, tmp_path, closes_deployments):
    """A factory of fresh PostgreSQL stores (URIs of new schemas), for tests that run on
    PostgreSQL only."""
    factory = StoreFactory("postgres", request, tmp_path)
    yield factory
    for deployment in closes_deployments:
        if hasattr(deployment, "store"):
            deployment.close()
    factory.drop()


@pytest.fixture
def store_url(new_store) -> str:
    """One fresh store for the test, of each kind in turn (a SQLite file, a PostgreSQL
    URI)."""
    return new_store()


# Spark with two executors in JVMs (and Python workers) of their own, as on a cluster:
# what the Spark tests run on (about 20 s to start).
SPARK_CLUSTER = "local-cluster[2,1,1024]"


def starts_spark(item: pytest.Item) -> bool:
    """Does the test start a Spark session (named for Spark, or marked ``spark``)?"""
    return "spark" in item.nodeid.lower() or item.get_closest_marker("spark") is not None


def pytest_collection_modifyitems(config, items: list[pytest.Item]) -> None:
    """On pytest-xdist's workers: the Spark tests first, ``local[*]`` ones before those on
    the ``local-cluster``, the others in their order. ``--dist worksteal`` hands the first
    half of the list to one worker, and a worker that runs out takes tests from the end of
    the other's queue: so every Spark test runs on that one worker, which starts one JVM
    and one cluster (each worker that ran one started its own: about 3.5 GB and 20 s
    more, and two clusters on two cores slowed each other). Every worker sorts the same
    collection alike, as xdist requires."""
    if not hasattr(config, "workerinput"):
        return
    first = [item for item in items if starts_spark(item)]
    first.sort(key=lambda item: "spark_cluster" in getattr(item, "fixturenames", ()))
    rest = [item for item in items if not starts_spark(item)]
    items[:] = first + rest


@pytest.fixture(scope="session")
def _spark_sessions_stopped():
    """Stops the process's Spark sessions when the test session ends."""
    yield
    from piql.engines.spark_engine import stop_sessions

    stop_sessions()


@pytest.fixture
def spark_cluster(_spark_sessions_stopped) -> str:
    """The master URL of a ``local-cluster`` Spark session, started on first use and shared
    by every test of the session that asks for it (deploy with ``engine="spark",
    spark_master=spark_cluster``): a start costs about 20 s. Only one Spark context runs per
    process and a new session silently joins the running one: when the running context is
    not the cluster (a ``local[*]`` test started one), it is stopped and the cluster
    started. A ``local[*]`` test run after the cluster started joined the cluster, which
    is still running: kept (restarting it there cost a start per alternation)."""
    from pyspark import SparkContext

    from piql.engines import spark_engine

    running = SparkContext._active_spark_context
    if running is None or running.master != SPARK_CLUSTER:
        spark_engine.stop_sessions()
    spark_engine.spark_session(SPARK_CLUSTER)
    return SPARK_CLUSTER
