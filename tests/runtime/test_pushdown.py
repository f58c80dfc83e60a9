"""Neighbourhood aggregates served from per-writer views (planner.pushdown) equal the query's
own SQL on the base tables after random inserts, deletes and updates (NULLs, duplicate
values, emptied neighbourhoods), on both stores, within their bound."""
from __future__ import annotations

import random

from piql import App
from tests.conftest import plan_text
from tests.runtime.workload import normal, oracle

PLAN = plan_text(
    """CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))
        WITH CARDINALITY (followee, 500);
    CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, venue BIGINT,
        points BIGINT, weight DOUBLE);""",
    """-- name: friendCheckins
SELECT COUNT(*) AS n FROM follows f, checkins c WHERE f.follower = <me> AND c.userId = f.followee
-- name: friendPoints
SELECT SUM(c.points) AS s, AVG(c.points) AS a, COUNT(c.points) AS k, SUM(c.weight) AS w,
    COUNT(*) AS n
FROM follows f, checkins c
WHERE f.follower = <me> AND c.userId = f.followee AND c.venue = <venue>
-- name: friendGymPoints
SELECT SUM(c.points) AS s FROM follows f, checkins c
WHERE c.userId = f.followee AND f.follower = <me> AND c.points > 2
""")
USERS = range(1, 7)
VENUES = (1, 2, None)
QUERIES = {"friendCheckins": {"me": USERS}, "friendPoints": {"me": USERS, "venue": (1, 2)},
           "friendGymPoints": {"me": USERS}}


def checkin(rng: random.Random, key: int) -> dict:
    return {"checkinId": key, "userId": rng.choice([*USERS, None]), "venue": rng.choice(VENUES),
            "points": rng.choice([None, 0, 1, 3, 3, 7, -2]),  # repeats: duplicate values
            "weight": rng.choice([None, 0.5, 1.25, 2.0])}


def assert_answers_equal_sql(db) -> None:
    for name, domains in QUERIES.items():
        query = db.query_plan(name)
        combos = [{}]
        for param, values in domains.items():
            combos = [c | {param: v} for c in combos for v in values]
        for params in combos:
            got = db.query(name, **params)
            assert normal(got.rows) == normal(oracle(db, query, params)), (name, params)
            assert got.ops <= got.bound, (name, params, got.ops)


def test_per_writer_views_answer_as_sql_under_random_writes(new_store):
    assert {PLAN.query(n).level for n in QUERIES} == {"SI-2"}
    db = App(PLAN).deploy(new_store(), strict=True)
    rng = random.Random(19)
    checkins: set[int] = set()
    edges: set[tuple[int, int]] = set()
    assert_answers_equal_sql(db)  # nothing yet: COUNT 0, SUM NULL
    for step in range(240):
        roll = rng.random()
        if roll < 0.25:
            edge = (rng.choice(USERS), rng.choice(USERS))
            if edge in edges:
                db.delete("follows", follower=edge[0], followee=edge[1])
                edges.discard(edge)
            else:
                db.insert("follows", follower=edge[0], followee=edge[1])
                edges.add(edge)
        elif roll < 0.6 or not checkins:
            key = rng.randrange(1000)
            if key not in checkins:
                db.insert("checkins", **checkin(rng, key))
                checkins.add(key)
        elif roll < 0.8:
            key = rng.choice(sorted(checkins))
            db.update("checkins", **checkin(rng, key))  # may move it to another writer
        else:
            key = rng.choice(sorted(checkins))
            db.delete("checkins", checkinId=key)
            checkins.discard(key)
        if step % 40 == 39:
            assert_answers_equal_sql(db)
    assert_answers_equal_sql(db)
    assert db.check().consistent
    assert any(db.query("friendCheckins", me=u).rows != ((0,),) for u in USERS)
    for key in sorted(checkins):  # every writer emptied: the views hold no row
        db.delete("checkins", checkinId=key)
    assert_answers_equal_sql(db)
    assert db.rows("friendCheckins_by_checkins") == []


SUBSCRIPTIONS = plan_text(
    """CREATE TABLE subs (id BIGINT PRIMARY KEY, consumer BIGINT, producer BIGINT)
        WITH CARDINALITY (id, 50) PER (consumer);
    CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, points BIGINT);""",
    """-- name: q
SELECT COUNT(*) AS n, SUM(c.points) AS s FROM subs s, checkins c
WHERE s.consumer = <me> AND c.userId = s.producer
""")


def test_null_and_repeated_edges_join_as_in_sql(new_store):
    """An edge table whose producer may be NULL (it is no key) and may repeat: a NULL
    producer joins no writer, not even the NULL group of the per-writer view, and a
    repeated edge counts its writer twice, as the join does."""
    assert SUBSCRIPTIONS.query("q").level == "SI-2"
    db = App(SUBSCRIPTIONS).deploy(new_store(), strict=True)
    for key, consumer, producer in [(1, 1, None), (2, 1, 2), (3, 1, 2), (4, None, 2), (5, 2, 3)]:
        db.insert("subs", id=key, consumer=consumer, producer=producer)
    for key, user, points in [(1, None, 5), (2, 2, 7), (3, 2, None), (4, 3, None)]:
        db.insert("checkins", checkinId=key, userId=user, points=points)
    answers = {}
    for me in (1, 2, 3):
        got = db.query("q", me=me)
        assert list(got.rows) == oracle(db, db.query_plan("q"), {"me": me})
        assert got.ops <= got.bound
        answers[me] = got.rows
    assert answers == {1: ((4, 14),), 2: ((1, None),), 3: ((0, None),)}
