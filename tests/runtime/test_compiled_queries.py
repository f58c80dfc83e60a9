"""Every bounded query of every app compiled to one SQL statement: on the SQLite store it
answers as the interpreter does, with exactly its operation count, and SQLite's own plan
reads no stored table or view whole unless the piql plan itself does (a bounded table, or
an ordered scan that stops)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import piql
from piql.planner.application import plan_application
from piql.queries import parse_queries
from piql.schema import parse_schema
from tests.conftest import EXAMPLES, FIXTURES
from tests.runtime.compiled import (
    assert_same_answer, compiled, copy_to_postgres, explain_sqlite, full_scans, parameter_sets,
    run_postgres, run_sqlite, seq_scans, sorted_accesses, unbounded_whole_reads,
)
from tests.runtime.test_planner_answers import write_randomly

APPS = {
    "paper": (FIXTURES / "paper_schema.sql", FIXTURES / "paper_queries.sql"),
    "paper_bounded": (FIXTURES / "paper_schema.sql", FIXTURES / "paper_bounded_queries.sql"),
    "social": (EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql"),
    "tpcw": (EXAMPLES / "tpcw" / "schema.sql", EXAMPLES / "tpcw" / "queries.sql"),
    "values": (FIXTURES / "values_schema.sql", FIXTURES / "values_queries.sql"),
    "odd_names": (FIXTURES / "odd_names_schema.sql", FIXTURES / "odd_names_queries.sql"),
    # every plan shape: residuals, ranges, aggregates, epochs, merges, FROM-subqueries
    "shapes": (FIXTURES / "compile_shapes_schema.sql", FIXTURES / "compile_shapes_queries.sql"),
}


# Every application the planner and runtime tests build (tests/fixtures/make_compile_apps.py)
TEST_APPS = json.loads((FIXTURES / "compile_apps.json").read_text())


def captured_app(number: int) -> piql.App:
    app = TEST_APPS[number]
    catalog = parse_schema(app["schema"], "schema.sql")
    queries = parse_queries(app["queries"], catalog, "queries.sql")
    return piql.App(plan_application(catalog, queries, "queries.sql"))


def deployed(schema: Path | piql.App, queries: Path | None, seed: int, steps: int):
    app = schema if isinstance(schema, piql.App) else piql.load(schema, queries)
    db = app.deploy(engine="store", partitions=3)
    write_randomly(db, seed, steps)
    db.refresh(now_ms=10**9)
    return db


def bounded(db):
    return [q for q in db.plan.queries if q.physical is not None]


@pytest.mark.parametrize("app", sorted(APPS))
@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_sqlite_answers_as_the_interpreter(app, seed):
    db = deployed(*APPS[app], seed=seed, steps=150)
    assert compare_sqlite(db, app) >= len(bounded(db))
    db.close()


@pytest.mark.parametrize("app", sorted(APPS))
def test_sqlite_reads_only_what_the_plan_reads(app):
    db = piql.load(*APPS[app]).deploy(engine="store", partitions=3)
    assert_reads_only_what_the_plan_reads(db)
    db.close()


def compare_sqlite(db, context) -> int:
    compared = 0
    for query in bounded(db):
        statement = compiled(db, query.name)
        for params in parameter_sets(db, query):
            rows, ops = run_sqlite(db, statement, params)
            assert_same_answer(db, query.name, params, rows, ops, (context, query.name, params))
            compared += 1
    return compared


@pytest.mark.parametrize("number", range(len(TEST_APPS)),
                         ids=[f"{n}-{a['test'].rsplit('::', 1)[-1][:40]}"
                              for n, a in enumerate(TEST_APPS)])
def test_compiled_sqlite_answers_as_the_interpreter_on_the_tests_apps(number):
    db = deployed(captured_app(number), None, seed=number, steps=80)
    assert compare_sqlite(db, TEST_APPS[number]["test"]) >= len(bounded(db))
    assert_reads_only_what_the_plan_reads(db)
    db.close()


def assert_reads_only_what_the_plan_reads(db) -> None:
    for query in bounded(db):
        statement = compiled(db, query.name)
        assert full_scans(explain_sqlite(db, statement), statement) == [], \
            (query.name, statement.sql)
        assert sorted_accesses(db, statement) == [], (query.name, statement.sql)
        assert unbounded_whole_reads(db, query.physical) == [], query.name


POSTGRES_APPS = ("paper", "social", "tpcw", "values", "odd_names", "shapes")


@pytest.mark.parametrize("app", POSTGRES_APPS)
def test_compiled_postgres_answers_as_the_interpreter(app, postgres_url):
    import psycopg
    db = deployed(*APPS[app], seed=3, steps=150)
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        copy_to_postgres(db, connection)
        for query in bounded(db):
            statement = compiled(db, query.name, "postgres")
            for params in parameter_sets(db, query):
                rows, ops = run_postgres(connection, statement, params)
                assert_same_answer(db, query.name, params, rows, ops, (app, query.name, params))
                assert seq_scans(connection, statement, params) == [], (query.name,
                                                                         statement.sql)
    db.close()
