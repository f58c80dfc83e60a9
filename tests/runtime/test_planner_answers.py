"""Answers of queries whose classification the planner once got wrong (issue 12, items
11-13), against the query's own SQL run by SQLite on the base tables, after random writes."""
from __future__ import annotations

import random
from collections import Counter

import pytest

import piql
from piql.runtime.errors import ConstraintError
from tests.runtime.workload import (Driver, assert_ordered_match, normal, oracle, ordered_oracle,
                                    parameter_choices)


def app(tmp_path, schema: str, queries: str) -> piql.App:
    (tmp_path / "schema.sql").write_text(schema)
    (tmp_path / "queries.sql").write_text(queries)
    return piql.load(tmp_path / "schema.sql", tmp_path / "queries.sql")


def write_randomly(db, seed: int, steps: int, spread: int = 4) -> None:
    """Inserts, deletes and updates drawn from small domains, so rows collide and join."""
    chooser = random.Random(seed)
    driver = Driver(db, spread=spread)
    tables = [t for t in db.plan.catalog.tables]
    for _ in range(steps):
        table = chooser.choice(tables)
        seed_values = tuple(chooser.randrange(10**6) for _ in range(8))
        kind = chooser.choice(["insert"] * 5 + ["delete", "update"])
        try:
            if kind == "insert":
                db.insert(table.name, **driver.row(table, seed_values))
                continue
            existing = driver.existing(table, seed_values)
            if existing is None:
                continue
            key = {c: existing[c] for c in table.primary_key}
            if kind == "delete":
                db.delete(table.name, **key)
            else:
                db.update(table.name, **driver.row(table, seed_values[1:] + seed_values[:1], key))
        except ConstraintError:
            pass


def assert_answers_match_sql(db) -> int:
    """Every bounded query equals its own SQL for parameters drawn from the data; returns
    how many answers were compared. Strict mode: a query over its bound raises."""
    compared = 0
    for query in db.plan.queries:
        assert query.bounded, (query.name, query.diagnostics)
        for params in parameter_choices(db, query):
            got = db.query(query.name, **params)
            assert got.ops <= got.bound
            block = query.query.block
            if block.order_by:
                assert_ordered_match(list(got.rows), ordered_oracle(db, query, params),
                                     block.limit, (query.name, params))
            else:
                expected = oracle(db, query, params)
                assert Counter(normal(got.rows)) == Counter(normal(expected)), (query.name, params)
            compared += 1
    return compared


MESSAGES = """
CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE messages (id BIGINT PRIMARY KEY, from_user BIGINT, to_user BIGINT, body VARCHAR,
  FOREIGN KEY (from_user) REFERENCES users (id), FOREIGN KEY (to_user) REFERENCES users (id));
"""
SAME_PARAMETER = """
-- name: toSelf
SELECT COUNT(*) AS n FROM messages WHERE from_user = <u> AND to_user = <u>

-- name: between
SELECT COUNT(*) AS n FROM messages WHERE from_user = <u> AND to_user = <v>
"""


@pytest.mark.parametrize("seed", range(3))
def test_a_parameter_used_twice_answers_as_sql_does(tmp_path, seed):
    planned = app(tmp_path, MESSAGES, SAME_PARAMETER)
    assert planned.levels == {"toSelf": "SI-2", "between": "SI-2"}
    db = planned.deploy(engine="store")
    for user in (1, 2, 3):
        db.insert("users", id=user, name=f"u{user}")
    for number, (sender, receiver) in enumerate([(1, 1), (1, 2), (2, 2), (2, 2), (3, 1)]):
        db.insert("messages", id=100 + number, from_user=sender, to_user=receiver, body="hi")
    write_randomly(db, seed, 300, spread=3)
    assert db.check().consistent
    assert assert_answers_match_sql(db) > 0
    db.close()


REACTIONS = """
CREATE TABLE reactions (message_id BIGINT, user_id BIGINT, emoji VARCHAR, color VARCHAR,
                        PRIMARY KEY (message_id, user_id))
  WITH CARDINALITY (emoji, 6) PER (message_id), CARDINALITY (color, 3) PER (message_id);
"""
GROUPS = """
-- name: emojiCounts
SELECT emoji, COUNT(*) AS n FROM reactions WHERE message_id = <mid> GROUP BY emoji

-- name: topPairs
SELECT emoji, color, COUNT(*) AS n FROM reactions WHERE message_id = <mid>
GROUP BY emoji, color ORDER BY n DESC LIMIT 4
"""


@pytest.mark.parametrize("seed", range(3))
def test_groups_bounded_by_cardinality_answer_as_sql_does(tmp_path, seed):
    planned = app(tmp_path, REACTIONS, GROUPS)
    assert planned.levels == {"emojiCounts": "SI-2", "topPairs": "SI-2"}
    db = planned.deploy(engine="store")
    write_randomly(db, seed, 300, spread=3)
    assert db.check().consistent
    assert assert_answers_match_sql(db) > 0
    assert max(len(db.query("emojiCounts", mid=m)) for m in (1, 2, 3)) > 1  # several groups
    db.close()


def test_a_parameter_named_like_a_python_keyword_is_passed_as_a_dict(tmp_path):
    """docs/language.md: <from> is a fine parameter name; from Python it is **{"from": ...}."""
    planned = app(tmp_path, MESSAGES,
                  "-- name: sent\nSELECT id FROM messages WHERE from_user = <from> ORDER BY id LIMIT 5\n")
    db = planned.deploy(engine="store")
    db.insert("users", id=1, name="a")
    db.insert("messages", id=10, from_user=1, to_user=1, body="hi")
    assert planned.plan.query("sent").query.block.params == ("from",)
    assert db.query("sent", **{"from": 1}).rows == ((10,),)
    db.close()


EVENTS = """
CREATE TABLE teams (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE accounts (id BIGINT PRIMARY KEY, name VARCHAR, team BIGINT NOT NULL,
                       FOREIGN KEY (team) REFERENCES teams (id));
CREATE TABLE events (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, kind VARCHAR,
                     createdAt BIGINT TEMPORAL,
                     FOREIGN KEY (account_id) REFERENCES accounts (id));
"""
WINDOWS = """
-- name: newestSub
SELECT e.id, e.kind, a.name
FROM (SELECT id, account_id, kind, createdAt FROM events ORDER BY createdAt DESC LIMIT 8) e,
     accounts a
WHERE e.account_id = a.id

-- name: newestFlat
SELECT e.id, e.kind, a.name FROM events e, accounts a
WHERE e.account_id = a.id ORDER BY e.createdAt DESC LIMIT 8

-- name: newestOfTeam
SELECT e.id, t.name
FROM (SELECT id, account_id, createdAt FROM events ORDER BY createdAt DESC LIMIT 8) e,
     accounts a, teams t
WHERE e.account_id = a.id AND a.team = t.id AND t.name = <team>
"""


@pytest.mark.parametrize("seed", range(3))
def test_tuple_windows_joined_by_key_answer_as_sql_does_after_a_refresh(tmp_path, seed):
    planned = app(tmp_path, EVENTS, WINDOWS)
    assert set(planned.levels.values()) == {"SI-3"}
    db = planned.deploy(engine="store", partitions=3)
    for step in range(4):  # writes, then a refresh, then the answers; four times over
        write_randomly(db, seed * 10 + step, 150, spread=40)
        db.refresh(now_ms=10**9)
        assert assert_answers_match_sql(db) > 0
    assert len(db.rows("events")) > 8  # the window held fewer events than the table
    db.close()


def test_a_table_named_like_a_generated_view_keeps_its_own_rows(tmp_path):
    """Issue 12, item 9: a table likeCount_view beside a likeCount query used to be shared
    with the view, and check(repair=True) then deleted the application's rows."""
    schema = ("CREATE TABLE likes (postId BIGINT, userId BIGINT, PRIMARY KEY (postId, userId));"
              "CREATE TABLE likeCount_view (id BIGINT PRIMARY KEY, note VARCHAR);")
    planned = app(tmp_path, schema, "-- name: likeCount\n"
                                    "SELECT COUNT(*) AS n FROM likes WHERE postId = <postId>\n")
    db = planned.deploy(engine="store")
    db.insert("likeCount_view", id=1, note="the application's own row")
    for user in range(5):
        db.insert("likes", postId=7, userId=user)
    assert db.query("likeCount", postId=7).rows == ((5,),)
    assert db.check(repair=True).consistent
    assert db.rows("likeCount_view") == [(1, "the application's own row")]
    assert db.query("likeCount", postId=7).rows == ((5,),)
    db.close()
