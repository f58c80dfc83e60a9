"""Property tests: random writes, then every view equals its recomputation and every query
equals the original query on the base tables, within its bound (strict mode)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

import piql
from piql.runtime.errors import ConstraintError
from tests.conftest import EXAMPLES, FIXTURES, PAPER_QUERIES, PAPER_SCHEMA
from tests.runtime.workload import (Driver, Op, assert_ordered_match, normal, operations, oracle,
                                    ordered_oracle, parameter_choices)

APPS = {
    "paper": (PAPER_SCHEMA, PAPER_QUERIES),
    "social": (EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql"),
    "values": (FIXTURES / "values_schema.sql", FIXTURES / "values_queries.sql"),
}
PLANS = {name: piql.load(*files) for name, files in APPS.items()}
SETTINGS = settings(max_examples=100, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def snapshot(db) -> dict[str, Counter]:
    return {name: Counter(db.rows(name)) for name in db.store.shapes}


def apply(db, driver: Driver, op: Op) -> None:
    """Run one write; a refused write must leave every table and view as it was."""
    table = db.plan.catalog.table(op.table)
    before = snapshot(db)
    try:
        if op.kind == "insert":
            db.insert(table.name, **driver.row(table, op.seed))
        else:
            existing = driver.existing(table, op.seed)
            if existing is None:
                return
            key = {c: existing[c] for c in table.primary_key}
            if op.kind == "delete":
                db.delete(table.name, **key)
            else:
                db.update(table.name, **driver.row(table, op.seed[1:] + op.seed[:1], key))
    except ConstraintError:
        assert snapshot(db) == before, "a refused write changed the store"


def assert_queries_match(db) -> None:
    for query in db.plan.queries:
        if not query.bounded:
            continue
        for params in parameter_choices(db, query):
            got = db.query(query.name, **params)  # strict: raises if ops > bound
            block = query.query.block
            if block.order_by:
                assert_ordered_match(list(got.rows), ordered_oracle(db, query, params),
                                     block.limit, (query.name, params))
            else:
                expected = oracle(db, query, params)
                assert Counter(normal(got.rows)) == Counter(normal(expected)), (query.name, params)


@pytest.mark.parametrize("app", sorted(APPS))
def test_views_and_queries_match_their_recomputation(app):
    @SETTINGS
    @given(operations(PLANS[app].plan.catalog))
    def run(ops: list[Op]) -> None:
        db = PLANS[app].deploy(partitions=3)
        driver = Driver(db)
        for op in ops:
            apply(db, driver, op)
        report = db.check()
        assert report.consistent, str(report)
        db.refresh(now_ms=10**9)
        assert_queries_match(db)
        db.close()

    run()


@pytest.mark.parametrize("app", sorted(APPS))
@pytest.mark.parametrize("seed", range(3))
def test_long_random_histories_stay_consistent(app, seed):
    """Longer histories than hypothesis explores: 400 writes, checked every 100."""
    import random

    chooser = random.Random(seed)
    db = PLANS[app].deploy(partitions=4)
    driver = Driver(db, spread=40)
    tables = [t.name for t in db.plan.catalog.tables]
    for step in range(1, 401):
        kind = chooser.choice(["insert"] * 5 + ["delete", "update"])
        apply(db, driver, Op(kind, chooser.choice(tables),
                             tuple(chooser.randrange(10**6) for _ in range(8))))
        if step % 100 == 0:
            assert db.check().consistent
            db.refresh(now_ms=10**9)
            assert_queries_match(db)
    assert sum(len(db.rows(t)) for t in tables) > 20  # the history built real data
