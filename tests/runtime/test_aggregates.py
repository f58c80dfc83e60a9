"""Maintained aggregates keep SQL's values: exact integer sums, real sums, no NaN or
infinity to corrupt a sum, and a global aggregate of nothing."""
from __future__ import annotations

import pytest

from piql import App
from tests.conftest import plan_text, engines_on_stores
from tests.runtime.workload import oracle

ENGINES = ["store", "duckdb", "spark"]
STATS = plan_text(
    "CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, w DOUBLE);",
    "-- name: stats\nSELECT SUM(v) AS total, SUM(w) AS weight, AVG(v) AS mean, COUNT(*) AS n "
    "FROM r WHERE g = <g>\n")
BIG = 2 ** 53


def exact(rows) -> list[tuple]:
    """Rows with each value's type beside it: 7 and 7.0 differ here."""
    return [tuple((type(v).__name__, v) for v in row) for row in rows]


@pytest.mark.parametrize("engine, new_store", engines_on_stores(ENGINES), indirect=["new_store"])
def test_integer_sums_stay_exact_integers_and_real_sums_stay_real(engine, store_url):
    assert STATS.query("stats").level == "SI-2"
    db = App(STATS).deploy(store_url, engine=engine)
    db.insert("r", k=1, g=1, v=BIG, w=1.5)
    db.insert("r", k=2, g=1, v=1, w=2)
    db.load("r", [(3, 1, 2, 0.5), (4, 2, 7, 1.0)])  # views rebuilt on the engine
    db.insert("r", k=5, g=2, v=None, w=None)
    for group in (1, 2):
        got = db.query("stats", g=group).rows
        assert exact(got) == exact(oracle(db, db.query_plan("stats"), {"g": group}))
    assert db.query("stats", g=1).rows == ((BIG + 3, 4.0, (BIG + 3) / 3, 3),)
    assert db.query("stats", g=2).rows == ((7, 1.0, 7.0, 2),)
    assert db.check().consistent
    db.delete("r", k=1)
    assert exact(db.query("stats", g=1).rows) == exact([(3, 2.5, 1.5, 2)])
    assert db.check().consistent


TOTAL = plan_text(
    "CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT);",
    "-- name: total\nSELECT COUNT(*) AS n, SUM(v) AS s, AVG(v) AS mean FROM r\n")


@pytest.mark.parametrize("engine, new_store", engines_on_stores(ENGINES), indirect=["new_store"])
def test_a_global_aggregate_of_an_empty_table_is_consistent(engine, store_url):
    assert TOTAL.query("total").level == "SI-2"
    db = App(TOTAL).deploy(store_url, engine=engine)
    expected = oracle(db, db.query_plan("total"), {})
    assert expected == [(0, None, None)]
    for _ in ("empty", "emptied"):
        assert db.query("total").rows == tuple(expected)
        report = db.check(repair=True)
        assert report.consistent, str(report)
        assert db.rows("total_view") == []  # repair added no dummy row
        db.insert("r", k=1, g=1, v=3)
        assert db.query("total").rows == ((1, 3, 3.0),)
        db.delete("r", k=1)
    db.load("r", [(1, 1, 4), (2, 1, None)])
    assert db.query("total").rows == ((2, 4, 4.0),)
    assert db.check().consistent
