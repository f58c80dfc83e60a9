"""SQL semantics of the values piql computes in Python: the helpers against SQLite itself,
then maintained views and refreshed windows over negative numbers against the query's SQL."""
from __future__ import annotations

import itertools
import sqlite3
from collections import Counter

import pytest

from piql import App
from piql.runtime import sqlvalues
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN
from tests.conftest import plan_text
from tests.runtime.workload import oracle

NUMBERS = [0, 1, -1, 3, -3, 7, -7, 10, -13, 3_599_999, -3_600_001, INT64_MAX, INT64_MIN,
           INT64_MAX - 5, INT64_MIN + 5, 2.5, -2.5, 10.7, -10.7]
SQLITE = sqlite3.connect(":memory:")


def sqlite(expression: str, *values):
    return SQLITE.execute(f"SELECT {expression}", values).fetchone()[0]


@pytest.mark.parametrize("left, right", list(itertools.product(NUMBERS + ["12abc", " 2.5x", "z"], NUMBERS)))
def test_arithmetic_equals_sqlite(left, right):
    assert sqlvalues.mod(left, right) == sqlite("? % ?", left, right)
    assert sqlvalues.div(left, right) == sqlite("? / ?", left, right)
    assert sqlvalues.sub(left, right) == sqlite("? - ?", left, right)
    assert sqlvalues.add(left, right) == sqlite("? + ?", left, right)
    for op in ("=", "<", "<=", ">", ">="):
        assert sqlvalues.compare(op, left, right) == bool(sqlite(f"? {op} ?", left, right))


@pytest.mark.parametrize("value", NUMBERS + ["a", "", "-13", None])
@pytest.mark.parametrize("width", [1, 10, 3_600_000])
def test_epochs_and_nulls_equal_sqlite(value, width):
    assert sqlvalues.epoch(value, width) == sqlite("? - ? % ?", value, value, width)
    assert sqlvalues.compare("=", value, None) is None
    assert sqlvalues.mod(None, width) is None


@pytest.mark.parametrize("value", [0, 10, -10, 3_600_000, -7_200_000, INT64_MAX - 7,
                                   INT64_MIN + 8])
@pytest.mark.parametrize("width", [10, 3_600_000])
def test_epoch_bounds_hold_exactly_the_values_of_the_epoch(value, width):
    start = value - value % width if value >= 0 else -(-value - -value % width)
    low, high = sqlvalues.epoch_bounds(start, width)
    assert sqlvalues.epoch(low, width) == sqlvalues.epoch(high, width) == start
    if low > INT64_MIN:
        assert sqlvalues.epoch(low - 1, width) != start
    if high < INT64_MAX:
        assert sqlvalues.epoch(high + 1, width) != start


def test_order_of_mixed_values_is_sqlites():
    values = [3, None, "b", 2.5, -1, "a", None, b"x"]
    SQLITE.execute("CREATE TEMP TABLE mixed (v)")
    SQLITE.executemany("INSERT INTO mixed VALUES (?)", [(v,) for v in values])
    assert sorted(values, key=sqlvalues.sort_key) == [
        v for (v,) in SQLITE.execute("SELECT v FROM mixed ORDER BY v")]


BANDS = plan_text(
    "CREATE TABLE readings (id BIGINT PRIMARY KEY, sensor BIGINT, temp BIGINT);",
    "-- name: band\nSELECT COUNT(*) AS n FROM readings "
    "WHERE sensor = <s> AND temp - temp % 10 = <band>\n")


@pytest.mark.parametrize("engine", ["store", "duckdb", "spark"])
def test_a_band_of_negative_values_is_the_band_sql_computes(engine):
    """``temp - temp % 10`` of -3 is 0 in SQL (Python's floored % says -10)."""
    assert BANDS.query("band").level == "SI-2"
    temps = [-3, -13, 3, -10, 9, -9, 10, 0, -1]
    db = App(BANDS).deploy(engine=engine)
    for number, temp in enumerate(temps):
        db.insert("readings", id=number, sensor=1, temp=temp)
    bulk = App(BANDS).deploy(engine=engine)
    bulk.load("readings", [(n, 1, t) for n, t in enumerate(temps)])
    for deployment in (db, bulk):
        assert deployment.check().consistent, str(deployment.check())
        for band in (-20, -10, 0, 10):
            got = deployment.query("band", s=1, band=band).rows
            assert got == tuple(oracle(deployment, deployment.query_plan("band"),
                                       {"s": 1, "band": band})), band
    assert db.query("band", s=1, band=0).rows == ((6,),)  # -9 .. 9 all truncate to 0
    db.delete("readings", id=0)
    assert db.query("band", s=1, band=0).rows == ((5,),)
    assert db.check().consistent


HOUR = 3_600_000
TRENDING = plan_text(
    "CREATE TABLE likes (postId BIGINT, userId BIGINT, likedAt BIGINT TEMPORAL, "
    "PRIMARY KEY (postId, userId));",
    "-- name: trending\nSELECT postId, COUNT(*) AS likes FROM likes "
    "WHERE likedAt - likedAt % 3600000 = <hour> GROUP BY postId ORDER BY COUNT(*) DESC "
    "LIMIT 10\n")


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_time_windows_before_1970_hold_the_rows_sql_puts_there(engine):
    times = [-1, -HOUR + 1, -HOUR, -HOUR - 1, -2 * HOUR + 1, -2 * HOUR, 0, HOUR - 1, HOUR,
             -5 * HOUR - 17]
    db = App(TRENDING).deploy(engine=engine, partitions=3)
    for number, time in enumerate(times):
        db.insert("likes", postId=number % 4, userId=number, likedAt=time)
    db.refresh(now_ms=-HOUR - 5)  # current epoch -HOUR, previous -2 HOUR, late ones too
    for hour in (-5 * HOUR, -2 * HOUR, -HOUR, 0, HOUR):
        got = db.query("trending", hour=hour).rows
        expected = oracle(db, db.query_plan("trending"), {"hour": hour})
        assert Counter(got) == Counter(expected), hour
    assert db.query("trending", hour=0).rows != ()  # -1 and -HOUR + 1 are in epoch 0


@pytest.mark.parametrize("value", ["abc", "ABC", "Abc", "a", "", "ab\nc", "é", "É", "a%c", 12, None])
@pytest.mark.parametrize("pattern", ["ab%", "AB%", "a_c", "%c", "%", "_", "é%", "a%%", "12%", None])
def test_like_equals_sqlite_with_case_sensitive_like(value, pattern):
    """piql's LIKE is the case-sensitive one (PostgreSQL's; SQLite's with the pragma
    piql's SQLite store sets)."""
    from piql.runtime.sqlite_store import CASE_SENSITIVE_LIKE

    connection = sqlite3.connect(":memory:")
    connection.execute(CASE_SENSITIVE_LIKE)
    expected = connection.execute("SELECT ? LIKE ?", (value, pattern)).fetchone()[0]
    assert sqlvalues.like(value, pattern) == (None if expected is None else bool(expected))
