"""Shared fixtures: the paper's example schema and queries, written once and reused."""
from __future__ import annotations

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
    """A real PostgreSQL 18 server for the session (tests/pg_server.py), started on first use."""
    from tests.pg_server import PostgresServer

    server = PostgresServer()
    yield server
    server.stop()


@pytest.fixture
def postgres_url(postgres_server) -> str:
    """The URI of a new, empty PostgreSQL database, dropped after the test."""
    url = postgres_server.create_database()
    yield url
    postgres_server.drop_database(url)
