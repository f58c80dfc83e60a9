"""Property tests: random writes, then every view equals its recomputation and every query
equals its own SQL on the base tables, within its bound (strict mode). The writes go
through the oracle harness's Session (tests/oracle/harness.py), which judges every
refusal against SQL and keeps the mirror the answers are compared with."""
from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import FIXTURES, plan_text
from tests.oracle.harness import OracleApp, Session, existing_app
from tests.runtime.workload import Driver, Op, operations

APPS = {
    "paper": existing_app("paper"),
    "social": existing_app("examples-social"),
    "values": OracleApp.files("values", FIXTURES / "values_schema.sql",
                              FIXTURES / "values_queries.sql"),
}
# PostgreSQL answers over a socket, each statement a round trip: fewer examples there
EXAMPLES = {"sqlite": 100, "postgres": 8}
# make test explores half of SQLite's examples per app; CI's slow step all of them
SHORT_SQLITE = 30
HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large,
          HealthCheck.function_scoped_fixture]


def apply(session: Session, driver: Driver, op: Op) -> None:
    """Run one write; the session checks that a refusal is right and changed nothing."""
    table = session.table(op.table)
    if op.kind == "insert":
        session.insert(table.name, driver.row(table, op.seed))
        return
    existing = driver.existing(table, op.seed)
    if existing is None:
        return
    key = {c: existing[c] for c in table.primary_key}
    if op.kind == "delete":
        session.delete(table.name, key)
    else:
        session.update(table.name, driver.row(table, op.seed[1:] + op.seed[:1], key))


def assert_consistent(session: Session) -> None:
    """Every view equals its recomputation; after a refresh every query equals its SQL."""
    session.assert_views_consistent()
    session.refresh(now_ms=10**9)  # compares the periodic queries too
    session.assert_queries()


def _explorations() -> list:
    """(app, store, examples): every app on both stores in ``make test``, SQLite with
    :data:`SHORT_SQLITE` examples; SQLite's whole :data:`EXAMPLES` marked slow (CI)."""
    found = []
    for app in sorted(APPS):
        found += [pytest.param(app, "sqlite", SHORT_SQLITE),
                  pytest.param(app, "postgres", EXAMPLES["postgres"]),
                  pytest.param(app, "sqlite", EXAMPLES["sqlite"], marks=pytest.mark.slow)]
    return found


@pytest.mark.parametrize("app, new_store, examples", _explorations(), indirect=["new_store"])
def test_views_and_queries_match_their_recomputation(app, new_store, examples):
    @settings(max_examples=examples, deadline=None, suppress_health_check=HEALTH)
    @given(operations(APPS[app].plan.catalog))
    def run(ops: list[Op]) -> None:
        session = Session(APPS[app], partitions=3, store=new_store.scratch())
        try:
            driver = Driver(session.db)
            for op in ops:
                apply(session, driver, op)
            assert_consistent(session)
        finally:
            session.close()

    run()


def _histories() -> list:
    """(app, store, seed): three seeds of every app on SQLite; on PostgreSQL (a round trip
    per statement) one history of the values app in ``make test``, the rest marked slow."""
    found = []
    for app in sorted(APPS):
        for store in ("sqlite", "postgres"):
            for seed in range(3):
                slow = store == "postgres" and (app, seed) != ("values", 0)
                found.append(pytest.param(app, store, seed,
                                          marks=[pytest.mark.slow, pytest.mark.extended] if slow else []))
    return found


@pytest.mark.parametrize("app, new_store, seed", _histories(), indirect=["new_store"])
def test_long_random_histories_stay_consistent(app, new_store, seed):
    """Longer histories than hypothesis explores: 400 writes, checked every 100."""
    chooser = random.Random(seed)
    session = Session(APPS[app], partitions=4, store=new_store.scratch())
    driver = Driver(session.db, spread=40)
    tables = [t.name for t in session.catalog.tables]
    for step in range(1, 401):
        kind = chooser.choice(["insert"] * 5 + ["delete", "update"])
        apply(session, driver, Op(kind, chooser.choice(tables),
                                  tuple(chooser.randrange(10**6) for _ in range(8))))
        if step % 100 == 0:
            assert_consistent(session)
    assert sum(len(session.db.rows(t)) for t in tables) > 20  # the history built real data
    session.close()


TWO_WINDOWS = OracleApp("two-windows", lambda: plan_text(
    """CREATE TABLE posts (id BIGINT PRIMARY KEY, created BIGINT NOT NULL, author BIGINT);
    CREATE TABLE people (id BIGINT PRIMARY KEY, name VARCHAR);""",
    """-- name: pairs
SELECT a.id, b.id AS person FROM (SELECT id FROM posts ORDER BY created DESC LIMIT 6) a,
  (SELECT id FROM people ORDER BY id LIMIT 4) b
-- name: pairsOf
SELECT a.id, b.name FROM (SELECT id, author FROM posts ORDER BY created DESC LIMIT 5) a,
  (SELECT id, name FROM people ORDER BY id DESC LIMIT 3) b WHERE b.id = a.author
"""))


@settings(max_examples=EXAMPLES["sqlite"], deadline=None, suppress_health_check=HEALTH)
@given(posts=st.lists(st.tuples(st.integers(0, 40), st.integers(-3, 3)), max_size=30),
       people=st.lists(st.integers(-5, 40), max_size=12))
def test_two_from_subqueries_stay_within_the_bound_for_many_outer_rows(posts, people):
    """A query joining two FROM-subqueries reads each once, however many rows the first
    gives: measured operations never exceed Phase 0's bound (which counts each subquery
    once), and the answers are the query's SQL."""
    assert {q.name: q.level for q in TWO_WINDOWS.plan.queries} == {
        "pairs": "SI-1", "pairsOf": "SI-1"}
    session = Session(TWO_WINDOWS, engine="store")
    try:
        for number, (created, author) in enumerate(posts):
            session.insert("posts", {"id": number, "created": created, "author": author})
        for person in people:
            session.insert("people", {"id": person, "name": f"p{person}"})
        session.assert_queries()  # strict: BoundExceeded fails; ops <= bound; SQL's answer
    finally:
        session.close()
