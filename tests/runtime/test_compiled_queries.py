"""Every bounded query of every app compiled to one SQL statement (piql.planner.compile).

On the SQLite store it answers as the interpreter does (the reference), with exactly its
operation count, after random writes (NULLs, ties, negative and extreme numbers); SQLite's
own plan reads no stored table or view whole unless the piql plan itself does (a bounded
table, or an ordered scan that stops), and sorts nothing an access stops early. The
same through ``Deployment.query`` on both stores, PostgreSQL's EXPLAIN included:
test_served_queries.py.
"""
from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import piql
from piql.planner.application import plan_application
from piql.language.queries import parse_queries
from piql.runtime.sqlvalues import INT64_MAX
from piql.language.schema import parse_schema
from tests.conftest import EXAMPLES, FIXTURES
from tests.oracle.harness import APPS_DIR as ORACLE_APPS
from tests.runtime.compiled import (
    assert_same_answer, compiled, explain_sqlite, full_scans, parameter_sets, run_sqlite,
    sorted_accesses, unbounded_whole_reads,
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
# On SQLite every query of the oracle's constructs app compiles too (issue 14's SQL:
# filters, expressions, DISTINCT, HAVING, IN lists, OFFSET, LIMIT <n>, outer and semi-joins,
# UNION); on PostgreSQL a few are interpreted (test_served_queries.INTERPRETED)
SQLITE_APPS = APPS | {"constructs": (ORACLE_APPS / "constructs" / "schema.sql",
                                     ORACLE_APPS / "constructs" / "queries.sql")}
# Every application the planner and runtime tests build (tests/fixtures/make_compile_apps.py)
TEST_APPS = json.loads((FIXTURES / "compile_apps.json").read_text())
TEST_APP_IDS = [f"{n}-{a['test'].rsplit('::', 1)[-1][:40]}" for n, a in enumerate(TEST_APPS)]
POSTGRES_TEST_APPS = range(0, len(TEST_APPS), 8)  # those test_served_queries runs on PostgreSQL


def captured_app(number: int) -> piql.App:
    app = TEST_APPS[number]
    catalog = parse_schema(app["schema"], "schema.sql")
    queries = parse_queries(app["queries"], catalog, "queries.sql")
    return piql.App(plan_application(catalog, queries, "queries.sql"))


def app_of(name: str | int) -> piql.App:
    return captured_app(name) if isinstance(name, int) else piql.load(*SQLITE_APPS[name])


def deployed(app: piql.App, seed: int, steps: int):
    db = app.deploy(engine="store", partitions=3)
    write_randomly(db, seed, steps)
    db.refresh(now_ms=10**9)
    return db


def bounded(db):
    return [q for q in db.plan.queries if q.physical is not None]


def compare_sqlite(db, context) -> int:
    """Every bounded query, for parameters drawn from the data: the compiled answer is the
    interpreter's; returns how many answers were compared."""
    compared = 0
    for query in bounded(db):
        statement = compiled(db, query.name)
        # the runtime calls a symmetric pair's statement with its two values in order
        ordered = query.pair.in_order if query.pair is not None else (lambda p: p)
        for params in parameter_sets(db, query):
            try:
                rows, ops = run_sqlite(db, statement, ordered(params))
            except sqlite3.OperationalError as err:
                # SQLite's SUM raises where a partial sum leaves 64 bits; the runtime
                # answers that execution with the interpreter (test_overflowing_sum_...)
                assert "integer overflow" in str(err), err
                continue
            assert_same_answer(db, query.name, params, rows, ops, (context, query.name, params))
            compared += 1
    return compared


def assert_reads_only_what_the_plan_reads(db) -> None:
    for query in bounded(db):
        lean = compiled(db, query.name)
        for statement in (lean, lean.counting) if lean.counting else (lean,):
            assert full_scans(explain_sqlite(db, statement), statement) == [], \
                (query.name, statement.sql)
            assert sorted_accesses(db, statement) == [], (query.name, statement.sql)
        assert unbounded_whole_reads(db, query.physical) == [], query.name


@pytest.mark.parametrize("app", sorted(SQLITE_APPS))
@pytest.mark.parametrize("seed", [1, 2])
def test_compiled_sqlite_answers_as_the_interpreter(app, seed):
    db = deployed(app_of(app), seed=seed, steps=150)
    assert compare_sqlite(db, app) >= len(bounded(db))
    db.close()


@pytest.mark.parametrize("app", sorted(SQLITE_APPS))
def test_sqlite_reads_only_what_the_plan_reads(app):
    db = app_of(app).deploy(engine="store", partitions=3)
    assert_reads_only_what_the_plan_reads(db)
    db.close()


@pytest.mark.parametrize("number", range(len(TEST_APPS)), ids=TEST_APP_IDS)
def test_compiled_sqlite_answers_as_the_interpreter_on_the_tests_apps(number):
    db = deployed(captured_app(number), seed=number, steps=80)
    assert compare_sqlite(db, TEST_APPS[number]["test"]) >= len(bounded(db))
    assert_reads_only_what_the_plan_reads(db)
    db.close()


def test_overflowing_sum_is_refused_by_sqlite():
    """SQLite's SUM raises on an integer overflow; the interpreter sums exactly, as SQL's
    numeric SUM does on PostgreSQL: the runtime answers such an execution with the
    interpreter (test_served_queries: test_an_overflowing_sum_is_answered_exactly, on
    both stores)."""
    db = app_of("shapes").deploy(engine="store")
    db.insert("accounts", id=1, region="r", score=None, joined=1, nick="n")
    for seq in (1, 2):
        db.insert("orders", account=1, seq=seq, amount=INT64_MAX, price=1.0, placed=seq,
                  status="a")
    assert db.interpret("aggregatesOfOrders", a=1).rows[0][4] == 2 * INT64_MAX  # exact
    with pytest.raises(sqlite3.OperationalError, match="integer overflow"):
        run_sqlite(db, compiled(db, "aggregatesOfOrders"), {"a": 1})
    db.close()
