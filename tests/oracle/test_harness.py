"""The harness's own checks: they accept every answer SQL allows and catch wrong ones."""
from __future__ import annotations

import pytest

from piql.runtime.errors import ConstraintError

from tests.conftest import plan_text
from tests.oracle.harness import (
    T0, Mirror, OracleApp, OracleFailure, Session, compiled, own_sql, run_sql,
    same_multiset, valid_top_k,
)

SCHEMA = """
CREATE TABLE people (id BIGINT PRIMARY KEY, team VARCHAR, role VARCHAR)
  WITH CARDINALITY (role, 2) PER (team);
CREATE TABLE posts (id BIGINT PRIMARY KEY, author BIGINT, created BIGINT TEMPORAL,
                    score BIGINT, FOREIGN KEY (author) REFERENCES people (id));
CREATE TABLE badges (id BIGINT PRIMARY KEY, code VARCHAR UNIQUE);
"""
QUERIES = """
-- name: best
SELECT id, score FROM posts WHERE author = <a> ORDER BY score DESC LIMIT 2;
-- name: perAuthor
SELECT COUNT(*) AS n, AVG(score) AS mean FROM posts WHERE author = <a>;
-- name: active
SELECT author, COUNT(*) AS n
FROM (SELECT author, created FROM posts ORDER BY created DESC LIMIT 2) recent GROUP BY author;
-- name: ranked
SELECT author, COUNT(*) AS n FROM posts WHERE created - created % 3600000 = <hour>
GROUP BY author ORDER BY n DESC LIMIT 1;
"""
APP = OracleApp("harness-test", lambda: plan_text(SCHEMA, QUERIES))


@pytest.fixture
def session():
    session = Session(APP, engine="store", partitions=2)
    yield session
    session.close()


def test_top_k_allows_either_side_of_a_tie_and_nothing_else():
    full = [((1, 9), (9,)), ((2, 5), (5,)), ((3, 5), (5,)), ((4, 1), (1,))]
    assert valid_top_k([(1, 9), (2, 5)], full, 2) is None
    assert valid_top_k([(1, 9), (3, 5)], full, 2) is None
    assert valid_top_k([(1, 9), (4, 1)], full, 2) is not None  # not in the top 2
    assert valid_top_k([(2, 5), (1, 9)], full, 2) is not None  # out of order
    assert valid_top_k([(1, 9)], full, 2) is not None  # too short
    assert valid_top_k([(1, 9), (1, 9)], full, 2) is not None  # a row used twice


def test_multisets_keep_duplicates_and_sql_types():
    assert same_multiset([(1,), (1,), (2,)], [(2,), (1,), (1,)])
    assert not same_multiset([(1,), (2,)], [(1,), (1,), (2,)])
    assert not same_multiset([(7.0,)], [(7,)])  # an integer SUM must stay an integer
    assert same_multiset([(7.0,)], [(7,)], loose=True)  # as Python compares
    assert not same_multiset([(None,)], [(0,)])
    assert same_multiset([(0.1 + 0.2,)], [(0.3,)])  # float sums differ in the last bits


def test_own_sql_is_the_text_as_written_with_named_parameters():
    query = APP.plan.query("best")
    assert ":a" in own_sql(query) and "<a>" not in own_sql(query)
    own = compiled(own_sql(APP.plan.query("ranked")))
    assert own.limit == 1 and own.hidden == 1 and "LIMIT" not in own.ordered.upper()
    assert "COUNT(*) AS _oracle_order0" in own.ordered  # the output name resolved


def test_mirror_judges_keys_foreign_keys_and_cardinality(session):
    mirror = Mirror(session.catalog)
    people = session.table("people")

    def attempt(row):
        return mirror.attempt(lambda sql: sql.execute("INSERT INTO people VALUES (?, ?, ?)", row),
                              [dict(zip(("id", "team", "role"), row))], people)

    for row in [(1, "a", "x"), (2, "a", "y")]:
        assert attempt(row).ok
        mirror.keep()
    assert not attempt((1, "b", "x")).ok  # duplicate key
    mirror.undo()
    assert not attempt((3, "a", "z")).ok  # a third role in team a
    mirror.undo()
    assert not attempt((3, "a", None)).ok  # NULL counts as a value (docs/language.md)
    mirror.undo()
    assert attempt((3, None, None)).ok  # the NULL team is a group of its own
    mirror.keep()
    assert attempt((4, "b", "z")).ok
    mirror.undo()
    badges = session.table("badges")

    def badge(row):
        return mirror.attempt(lambda sql: sql.execute("INSERT INTO badges VALUES (?, ?)", row),
                              [dict(zip(("id", "code"), row))], badges)

    for row in [(1, "k"), (2, None), (3, None)]:  # NULLs are distinct in a UNIQUE key
        assert badge(row).ok
        mirror.keep()
    assert not badge((4, "k")).ok
    mirror.undo()
    posts = session.table("posts")
    orphan = mirror.attempt(lambda sql: sql.execute(
        "INSERT INTO posts VALUES (1, 99, 0, 0)"), [], posts)
    assert not orphan.ok
    mirror.undo()


def test_a_wrong_answer_is_caught(session):
    session.insert("people", {"id": 1, "team": "a", "role": "x"})
    for post, score in [(1, 5), (2, 5), (3, 1)]:
        session.insert("posts", {"id": post, "author": 1, "created": T0 + post, "score": score})
    best = session.plan.query("best")
    assert session.disagreement(best, {"a": 1}, [(2, 5), (1, 5)]) is None  # tie either way
    assert session.disagreement(best, {"a": 1}, [(1, 5), (3, 1)]) is not None
    mean = session.plan.query("perAuthor")
    assert session.disagreement(mean, {"a": 1}, [(3, 11 / 3)]) is None
    assert session.disagreement(mean, {"a": 1}, [(3, 3)]) is not None


def test_a_tuple_window_cut_inside_a_tie_accepts_every_choice(session):
    for person in (1, 2, 3):
        session.insert("people", {"id": person, "team": str(person), "role": "x"})
    # created: 1 newest; 2 and 3 tie for the second place of the 2-row window
    for post, author, created in [(1, 1, T0 + 9), (2, 2, T0 + 5), (3, 3, T0 + 5)]:
        session.insert("posts", {"id": post, "author": author, "created": created, "score": 0})
    active = session.plan.query("active")
    for second in (2, 3):
        assert session.disagreement(active, {}, [(1, 1), (second, 1)]) is None
    assert session.disagreement(active, {}, [(2, 1), (3, 1)]) is not None


def test_refused_writes_are_judged(session):
    session.insert("people", {"id": 1, "team": "a", "role": "x"})
    assert not session.insert("people", {"id": 1, "team": "b", "role": "x"})  # refused, right
    assert session.stats.refused == 1
    # a write SQL accepts must not be refused: piql refusing one is a failure

    def refuse() -> list:
        raise ConstraintError("simulated refusal")

    with pytest.raises(OracleFailure, match="refused a write SQL accepts"):
        session._write(("insert", "people", {}), session.table("people"),
                       lambda sql: sql.execute("INSERT INTO people VALUES (5, 'c', 'x')"), [],
                       refuse)
    assert session.mirror.rows("people") == [(1, "a", "x")]  # the mirror took nothing


def test_means_are_the_exact_sum_divided_once(session):
    """SQLite's own AVG adds doubles: the oracle must not blame piql's exact mean."""
    session.insert("people", {"id": 1, "team": "a", "role": "x"})
    for post, score in [(1, 1), (2, 2**53 + 1), (3, -(2**53 + 1))]:
        session.insert("posts", {"id": post, "author": 1, "created": T0, "score": score})
    mean = session.plan.query("perAuthor")
    assert session.disagreement(mean, {"a": 1}, [(3, 1 / 3)]) is None
    assert session.disagreement(mean, {"a": 1}, [(3, 0.0)]) is not None  # SQLite's AVG


def test_the_overflow_fallback_keeps_sqlite_division():
    """A SUM that overflows in SQLite's scan order sends the statement to DuckDB: its
    integer division must still truncate toward zero, and / 0 and % 0 stay NULL."""
    import sqlite3

    connection = sqlite3.connect(":memory:")
    connection.execute("CREATE TABLE t (k INTEGER, a INTEGER, b INTEGER, c REAL)")
    rows = [(1, 2**62, 2, 0.5), (1, 2**62, 2, 0.5), (1, -(2**62), 2, 0.5),
            (2, -7, 0, -7.0), (3, 5, -3, 5.5)]
    connection.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
    sql = ("SELECT k, SUM(a) / 3, MIN(a) / MIN(b), MIN(c) / MIN(b), MIN(a) % MIN(b) "
           "FROM t GROUP BY k ORDER BY k")
    with pytest.raises(sqlite3.OperationalError, match="integer overflow"):
        connection.execute(sql).fetchall()
    assert run_sql(connection, sql) == [
        (1, 2**62 // 3, -(2**61), 0.25, 0),
        (2, -7 // 3 + 1, None, None, None),  # SQL truncates: -7 / 3 = -2
        (3, 1, -1, 5.5 / -3, 2),
    ]


def test_real_sums_are_exact_on_the_mirror_and_in_piql():
    """Oracle finding N1, covered again: a huge price comes and goes beside small ones
    (and a huge one and its negation stay together, where SQLite 3.40's scan-order SUM
    loses the low bits); piql's answers and views equal the exact SQL sums."""
    from tests.oracle.harness import oracle_app

    session = Session(oracle_app("commerce"), engine="duckdb", partitions=2, check_every=1)
    try:
        prices = session.plan.query("categoryPrices")
        for sku, price in [(1, 123456.789), (2, 1e15), (3, 0.25)]:
            assert session.insert("products", {"sku": sku, "title": "t", "category": "c",
                                               "price": price, "group": None})
        assert session.delete("products", {"sku": 2})
        session.assert_query(prices, {"category": "c"})
        assert session.insert("products", {"sku": 4, "title": "t", "category": "c",
                                           "price": 1e15, "group": None})
        assert session.insert("products", {"sku": 5, "title": "t", "category": "c",
                                           "price": -1e15, "group": None})
        session.assert_query(prices, {"category": "c"})
        total = 123456.789 + 0.25  # exact here: the small values are all that is left
        assert session.db.query("categoryPrices", category="c").rows == ((4, total, total / 4),)
        # SQLite's own SUM, in scan order, says otherwise: the mirror must not use it
        (naive,) = session.mirror.connection.execute(
            "SELECT SUM(price) FROM products WHERE category = 'c'").fetchone()
        assert naive != total
        assert session.disagreement(prices, {"category": "c"}, [(4, naive, naive / 4)])
        session.finish()
    finally:
        session.close()


def test_inserts_omitting_defaulted_columns_agree_with_sql_on_both_stores(store_url):
    """Columns with a constant DEFAULT: the mirror's DDL declares it, so SQL fills it in the
    rows written without the column, and piql must answer as that SQL does."""
    schema = ("CREATE TABLE items (id BIGINT PRIMARY KEY, shelf BIGINT DEFAULT -1 NOT NULL, "
              "label VARCHAR DEFAULT 'new', weight DOUBLE DEFAULT 0.5) "
              "WITH CARDINALITY (id, 10) PER (shelf);")
    queries = ("-- name: onShelf\nSELECT id, label FROM items WHERE shelf = <s>;\n"
               "-- name: heavy\nSELECT COUNT(*) AS n, SUM(weight) AS w FROM items "
               "WHERE label = <l>;\n")
    app = OracleApp("defaults", lambda: plan_text(schema, queries))
    session = Session(app, engine="store", partitions=2, check_every=1, store=store_url)
    try:
        assert session.insert("items", {"id": 1})
        assert session.insert("items", {"id": 2, "shelf": 3, "label": None})
        assert session.insert("items", {"id": 3, "weight": 2.0})
        assert session.mirror.rows("items") == [(1, -1, "new", 0.5), (2, 3, None, 0.5),
                                                (3, -1, "new", 2.0)]
        for shelf in (-1, 3):
            session.assert_query(session.plan.query("onShelf"), {"s": shelf})
        session.assert_query(session.plan.query("heavy"), {"l": "new"})
        session.finish()
    finally:
        session.close()
