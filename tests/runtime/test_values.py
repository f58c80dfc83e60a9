"""Values the store cannot keep as SQL would are refused with a clear error that changes
nothing: NaN and infinities, integers outside signed 64 bits. Values it can keep, up to
the limits of the range, work everywhere, refreshes included."""
from __future__ import annotations

import pytest

import piql
from piql import App
from piql.runtime.errors import ConstraintError, ParameterError
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN, epoch
from tests.conftest import EXAMPLES, plan_text
from tests.runtime.workload import oracle

STATS = plan_text(
    "CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, w DOUBLE);",
    "-- name: stats\nSELECT SUM(v) AS total, SUM(w) AS weight, COUNT(*) AS n "
    "FROM r WHERE g = <g>\n"
    "-- name: heavy\nSELECT k FROM r WHERE w = <w> LIMIT 5\n")
SOCIAL = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
HOUR = 3_600_000


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in db.store.shapes}


@pytest.fixture
def db():
    deployment = App(STATS).deploy()
    deployment.insert("r", k=1, g=1, v=5, w=1.5)
    yield deployment
    deployment.close()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_reals_are_refused_on_every_write(db, bad, tmp_path):
    before = state(db)
    with pytest.raises(ConstraintError, match=r"r\.w: .* is not a finite number"):
        db.insert("r", k=2, g=1, v=1, w=bad)
    with pytest.raises(ConstraintError, match=r"r\.w: .* is not a finite number"):
        db.update("r", k=1, g=1, v=5, w=bad)
    with pytest.raises(ConstraintError, match=r"row 2: r\.w: .* is not a finite number"):
        db.load("r", [(2, 1, 1, 2.0), (3, 1, 1, bad)])
    csv = tmp_path / "r.csv"
    csv.write_text(f"k,g,v,w\n4,1,1,{bad}\n")
    with pytest.raises(ConstraintError, match=r"r\.w: .* is not a finite number"):
        db.load("r", path=csv)
    with pytest.raises(ParameterError, match=r"parameter <w> of heavy: .* is not a finite"):
        db.query("heavy", w=bad)
    assert state(db) == before
    assert db.check().consistent


@pytest.mark.parametrize("bad", [INT64_MAX + 1, INT64_MIN - 1, 10 ** 40])
def test_integers_outside_64_bits_are_refused_with_what_and_where(db, bad):
    before = state(db)
    words = r"is outside the store's integer range"
    with pytest.raises(ConstraintError, match=rf"r\.v: {bad} {words}"):
        db.insert("r", k=2, g=1, v=bad, w=1.0)
    with pytest.raises(ConstraintError, match=rf"r\.k: {bad} {words}"):
        db.insert("r", k=bad, g=1, v=1, w=1.0)
    with pytest.raises(ConstraintError, match=rf"r\.g: {bad} {words}"):
        db.update("r", k=1, g=bad, v=1, w=1.0)
    with pytest.raises(ConstraintError, match=rf"r\.k: {bad} {words}"):
        db.delete("r", k=bad)
    with pytest.raises(ConstraintError, match=rf"row 1: r\.v: {bad} {words}"):
        db.load("r", [{"k": 7, "g": 1, "v": bad}])
    with pytest.raises(ParameterError, match=rf"parameter <g> of stats: {bad} {words}"):
        db.query("stats", g=bad)
    with pytest.raises(ParameterError, match="now_ms"):
        db.refresh(now_ms=bad)
    assert state(db) == before


def test_the_limits_of_the_range_are_kept_exactly(db):
    db.insert("r", k=INT64_MAX, g=INT64_MIN, v=INT64_MAX, w=-1.0)
    db.insert("r", k=INT64_MIN, g=INT64_MIN, v=INT64_MIN + 1, w=1.0)
    assert db.query("stats", g=INT64_MIN).rows == ((0, 0.0, 2),)
    db.delete("r", k=INT64_MAX)
    assert db.query("stats", g=INT64_MIN).rows == ((INT64_MIN + 1, 1.0, 1),)
    assert db.check().consistent


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_a_sum_that_would_overflow_is_refused_like_sqls(engine, store_url):
    db = App(STATS).deploy(store_url, engine=engine)
    db.insert("r", k=1, g=1, v=INT64_MAX - 1, w=0.0)
    before = state(db)
    with pytest.raises(ConstraintError, match=r"stats_view\.sum_v .* outside the store's"):
        db.insert("r", k=2, g=1, v=2, w=0.0)
    with pytest.raises(ConstraintError, match="SUM of stats_view leaves the store's"):
        db.load("r", [(2, 1, 2, 0.0)])
    assert state(db) == before
    db.insert("r", k=2, g=1, v=1, w=0.0)  # exactly INT64_MAX
    assert db.query("stats", g=1).rows == ((INT64_MAX, 0.0, 2),)
    assert db.check().consistent


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_a_time_at_the_end_of_the_range_never_poisons_a_refresh(engine, store_url):
    """``likedAt = 2**63 - 1`` is valid; its epoch's end is past the range."""
    db = SOCIAL.deploy(store_url, engine=engine, partitions=3)
    db.insert("users", userId=1, name="a", email="a@x", createdAt=INT64_MAX)
    db.insert("posts", postId=1, author=1, createdAt=INT64_MIN, body="first")
    db.insert("likes", postId=1, userId=1, likedAt=INT64_MAX)
    last, first = epoch(INT64_MAX, HOUR), epoch(INT64_MIN, HOUR)
    db.refresh(now_ms=INT64_MIN)  # the first epoch has no previous one in the range
    db.refresh(now_ms=10 ** 9)
    for hour in (last, first, 0):
        assert db.query("trending", hour=hour).rows == tuple(
            oracle(db, db.query_plan("trending"), {"hour": hour}))
    assert db.query("trending", hour=last).rows == ((1, 1),)
    db.delete("likes", postId=1, userId=1)
    db.refresh(now_ms=10 ** 9)
    assert db.query("trending", hour=last).rows == ()
    assert db.check().consistent



@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_a_sum_that_fits_is_recomputed_although_a_partial_sum_does_not(engine, store_url):
    """SQLite's SUM overflows on a partial sum in scan order (k = 1, 2: MAX - 1 + 5);
    the sum (MAX - 6) fits, maintenance keeps it, and check and load recompute it."""
    db = App(STATS).deploy(store_url, engine=engine)
    db.insert("r", k=3, g=1, v=-10, w=0.0)
    db.insert("r", k=1, g=1, v=INT64_MAX - 1, w=0.0)
    db.insert("r", k=2, g=1, v=5, w=0.0)
    assert db.query("stats", g=1).rows == ((INT64_MAX - 6, 0.0, 3),)
    assert db.check().consistent
    db.load("r", [(4, 1, 1, 0.0)])
    assert db.query("stats", g=1).rows == ((INT64_MAX - 5, 0.0, 4),)
    assert db.check().consistent
