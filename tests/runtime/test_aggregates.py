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


PRICES = plan_text(
    "CREATE TABLE products (sku BIGINT PRIMARY KEY, category VARCHAR, price DOUBLE);",
    "-- name: prices\nSELECT COUNT(*) AS n, SUM(price) AS total, AVG(price) AS mean "
    "FROM products WHERE category = <c>\n")


def exact_sql_sum(values) -> float:
    """The exact sum of doubles, rounded once: what SQL's SUM means (docs/views.md)."""
    from fractions import Fraction

    return float(sum(map(Fraction, values), Fraction(0)))


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_a_real_sum_does_not_drift_when_a_huge_value_comes_and_goes(engine):
    """Oracle finding N1: 123456.789 + 1e15 - 1e15 is 123456.75 in doubles; the view keeps
    the sum exactly, so the answer is the query's SQL on the remaining rows, through
    inserts, deletes, updates and loads, and check() finds the view consistent."""
    assert PRICES.query("prices").level == "SI-2"
    db = App(PRICES).deploy(engine=engine)
    db.insert("products", sku=1, category="c", price=123456.789)
    db.insert("products", sku=2, category="c", price=1e15)
    db.delete("products", sku=2)
    assert db.query("prices", c="c").rows == ((1, 123456.789, 123456.789),)
    assert db.query("prices", c="c").rows == tuple(oracle(db, db.query_plan("prices"), {"c": "c"}))
    assert db.check().consistent, str(db.check())
    db.insert("products", sku=3, category="c", price=1e17)
    db.update("products", sku=3, category="c", price=1.5)
    assert db.query("prices", c="c").rows == ((2, exact_sql_sum([123456.789, 1.5]),
                                               exact_sql_sum([123456.789, 1.5]) / 2),)
    db.load("products", [(4, "c", -1e300), (5, "c", 0.1), (6, "d", 2.0 ** -1074)])
    assert db.check().consistent, str(db.check())
    db.delete("products", sku=4)
    expected = exact_sql_sum([123456.789, 1.5, 0.1])
    assert db.query("prices", c="c").rows == ((3, expected, expected / 3),)
    assert db.query("prices", c="d").rows == ((1, 2.0 ** -1074, 2.0 ** -1074),)
    for sku in (1, 3, 5):
        db.delete("products", sku=sku)
    assert db.query("prices", c="c").rows == ((0, None, None),)
    assert db.check().consistent, str(db.check())


def test_a_real_sum_of_the_same_values_is_the_same_whatever_the_order_of_the_writes():
    """The visible sum is the exact sum rounded once, so two histories that end with the
    same rows give the same view, equal to its recomputation (no tolerance needed)."""
    values = [0.1, 1e16, 0.2, -1e16, 0.3, 2.5e-8, 7.0]
    first, second = App(PRICES).deploy(engine="store"), App(PRICES).deploy(engine="store")
    for sku, value in enumerate(values):
        first.insert("products", sku=sku, category="c", price=value)
    for sku, value in reversed(list(enumerate(values))):
        second.insert("products", sku=sku, category="c", price=value)
    assert first.rows("prices_view") == second.rows("prices_view")
    assert first.query("prices", c="c").rows[0][1] == exact_sql_sum(values)
    first.check(repair=True)
    assert first.rows("prices_view") == second.rows("prices_view")  # nothing to repair


def test_check_compares_reals_relatively_not_to_nine_decimals():
    """A recomputed REAL one unit in the last place away (a sum added in another order) is
    no inconsistency, however large; a real difference still is."""
    import math

    from piql.runtime.check import check_views

    db = App(PRICES).deploy(engine="store")
    db.insert("products", sku=1, category="c", price=1000000000246913.9)
    (stored,) = db.rows("prices_view")
    total = stored.index(1000000000246913.9)

    def recomputed_with(value):
        return lambda view: [stored[:total] + (value,) + stored[total + 1:]]

    nearby = math.nextafter(1000000000246913.9, 0)
    assert check_views(db.store, db.views, recomputed_with(nearby)).consistent
    report = check_views(db.store, db.views, recomputed_with(1000000001246913.9))
    assert not report.consistent


def test_a_real_sum_beyond_the_largest_double_is_refused_and_changes_nothing():
    from piql.runtime.errors import ConstraintError

    db = App(PRICES).deploy(engine="store")
    db.insert("products", sku=1, category="c", price=1.7e308)
    before = {name: db.rows(name) for name in ("products", "prices_view")}
    with pytest.raises(ConstraintError, match="largest REAL"):
        db.insert("products", sku=2, category="c", price=1.7e308)
    with pytest.raises(ConstraintError, match="largest REAL"):
        db.load("products", [(3, "c", 1.7e308)])
    assert {name: db.rows(name) for name in before} == before
    assert db.check().consistent
