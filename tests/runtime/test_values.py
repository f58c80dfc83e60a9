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


# A SUM over a join, kept by the store's triggers (issue 15): a delta sums many rows
JOINED_SUM = plan_text(
    "CREATE TABLE p (g BIGINT PRIMARY KEY, name VARCHAR);"
    "CREATE TABLE o (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, "
    "FOREIGN KEY (g) REFERENCES p (g)) WITH CARDINALITY (k, 10) PER (g);",
    "-- name: total\nSELECT p.name, SUM(o.v) AS total, COUNT(*) AS n FROM p, o "
    "WHERE o.g = p.g AND p.name = <name> GROUP BY p.name\n")


def assert_totals_equal_their_sql(db, names: str = "abcnyz") -> None:
    for name in names:
        assert list(db.query("total", name=name).rows) == oracle(
            db, db.query_plan("total"), {"name": name}), name


def test_a_joined_sum_whose_partial_sums_leave_64_bits_is_kept_exactly(store_url):
    """Moving a parent moves its children's sum between groups in one delta: SQLite's SUM
    would raise on a partial sum in scan order (MAX - 1 + 5) and a delta may itself leave
    64 bits (MAX + 5) where the group's new sum fits. SQL's SUM is exact, so these writes
    keep the view equal to the query's SQL; a write whose group sum leaves 64 bits, up or
    down, is refused naming the view column, and changes nothing."""
    db = App(JOINED_SUM).deploy(store_url)
    db.insert("p", g=1, name="a")
    for k, v in ((3, -10), (1, INT64_MAX - 1), (2, 5)):  # the view's sum never leaves 64 bits
        db.insert("o", k=k, g=1, v=v)
    db.update("p", g=1, name="b")  # delta MAX - 6, partial MAX + 4 in the key's order
    assert db.query("total", name="b").rows == (("b", INT64_MAX - 6, 3),)
    db.insert("p", g=4, name="y")
    db.insert("o", k=10, g=4, v=-10)
    db.insert("p", g=3, name="y")
    db.insert("o", k=11, g=3, v=INT64_MAX)
    db.insert("o", k=12, g=3, v=5)
    db.insert("p", g=2, name="c")
    db.insert("o", k=13, g=2, v=-100)
    db.update("p", g=3, name="c")  # a delta of MAX + 5: y keeps -10, c gets MAX - 95
    assert db.query("total", name="c").rows == (("c", INT64_MAX - 95, 3),)
    assert_totals_equal_their_sql(db)
    db.insert("p", g=5, name="n")
    db.insert("o", k=20, g=5, v=INT64_MIN)
    before = state(db)
    refused = r"total_view\.sum_v .*outside the store's integer range"
    with pytest.raises(ConstraintError, match=refused):
        db.update("p", g=1, name="c")  # MAX - 95 + MAX - 6
    with pytest.raises(ConstraintError, match=refused):
        db.insert("o", k=21, g=5, v=-1)  # MIN - 1
    with pytest.raises(ConstraintError, match=refused):
        db.update("p", g=4, name="n")  # MIN - 10
    assert state(db) == before
    db.delete("o", k=11)  # c: -100 + 5
    db.update("p", g=1, name="c")
    assert db.query("total", name="c").rows == (("c", INT64_MAX - 101, 5),)
    assert_totals_equal_their_sql(db)
    assert db.check().consistent
