"""Writes by plain PostgreSQL clients, not through piql (runtime.foreign_writes): the
adaptive feeds and overlays still answer as the query's own SQL on the base tables, with
random piql and foreign writes, reads, and decisions changed mid-run."""
from __future__ import annotations

import random

import psycopg
import pytest

from piql import App
from tests.runtime import test_feeds, test_overlay
from tests.runtime.workload import normal, oracle


def _foreign(url: str) -> psycopg.Connection:
    return psycopg.connect(url, autocommit=True)


def test_a_foreign_post_turns_its_producers_push_edges_to_pull(postgres_stores):
    url = postgres_stores()
    db = App(test_feeds.PLAN).deploy(url, strict=True)
    for producer in (2, 3):
        db.insert("follows", follower=1, followee=producer)
    for key in range(8):
        db.insert("posts", postId=key, author=2 + key % 2, createdAt=key, body="b")
    db.adapt("feed", mode="push")
    assert sorted(db.rows("feed_push")) == [(2, 1), (3, 1)]
    with _foreign(url) as other:
        other.execute("INSERT INTO posts VALUES (100, 2, 100, 'x')")
        assert db.query("feed", me=1).rows[0] == (100, 100, 2)
        assert db.rows("feed_push") == [(3, 1)]  # 2's edge is pull now, its rows gone
        other.execute('DELETE FROM posts WHERE "postId" = 7')  # author 3
        assert db.rows("feed_push") == []
    assert [r[0] for r in db.query("feed", me=1).rows] == [100, 6, 5]
    db.insert("posts", postId=101, author=3, createdAt=101, body="b")  # piql's own: pushed
    (report,) = db.adapt("feed", mode="push")
    assert report.to_push == 2
    test_feeds.assert_answers(db)


@pytest.mark.parametrize("seed", range(3))
def test_feeds_stay_right_under_foreign_writes(postgres_stores, seed):
    rng = random.Random(seed)
    url = postgres_stores()
    db = App(test_feeds.PLAN).deploy(url, strict=True)
    users = list(test_feeds.USERS)
    for follower in users:
        for followee in rng.sample(users, 3):
            db.insert("follows", follower=follower, followee=followee)
    key = 0
    db.adapt(mode="push")
    with _foreign(url) as other:
        for step in range(120):
            roll = rng.random()
            author, at = rng.choice(users), rng.randrange(40)
            if roll < 0.3:
                db.insert("posts", postId=key, author=author, createdAt=at, body="p")
            elif roll < 0.55:
                other.execute("INSERT INTO posts VALUES (%s, %s, %s, 'f')", (key, author, at))
            elif roll < 0.65:
                other.execute('DELETE FROM posts WHERE "postId" = %s', (rng.randrange(key + 1),))
            elif roll < 0.72:
                other.execute('UPDATE posts SET author = %s, "createdAt" = %s WHERE "postId" = %s',
                              (author, at, rng.randrange(key + 1)))
            elif roll < 0.78:
                other.execute("INSERT INTO follows VALUES (%s, %s) ON CONFLICT DO NOTHING",
                              (rng.choice(users), author))
            elif roll < 0.82:
                other.execute("DELETE FROM follows WHERE follower = %s AND followee = %s",
                              (rng.choice(users), author))
            elif roll < 0.9:
                db.adapt(rng.choice(sorted(db.feeds)),
                         mode=rng.choice(["mincost", "push", "push", "pull", "latency"]),
                         budget=rng.choice([5, 20, 60]), steps=rng.choice([None, 3]))
            else:
                test_feeds.assert_answers(db)
            key += 1
            for _ in range(rng.randrange(3)):
                db.query(rng.choice(sorted(db.feeds)), me=rng.choice(users))
    test_feeds.assert_answers(db)
    db.adapt(mode="push")
    test_feeds.assert_answers(db)


def test_overlays_stay_right_under_foreign_writes(postgres_stores):
    rng = random.Random(7)
    url = postgres_stores()
    db = App(test_overlay.PLAN).deploy(url, strict=True)
    users = list(test_overlay.USERS)
    for follower in users:
        for followee in rng.sample(users, 4):
            db.insert("follows", follower=follower, followee=followee)
    key = 0
    with _foreign(url) as other:
        for step in range(80):
            roll = rng.random()
            user = rng.choice(users)
            if roll < 0.3:
                db.insert("checkins", checkinId=key, userId=user, points=rng.randrange(5))
            elif roll < 0.5:
                other.execute("INSERT INTO checkins VALUES (%s, %s, %s)",
                              (key, user, rng.choice([None, 3])))
            elif roll < 0.58:
                other.execute('DELETE FROM checkins WHERE "checkinId" = %s',
                              (rng.randrange(key + 1),))
            elif roll < 0.66:
                other.execute("INSERT INTO follows VALUES (%s, %s) ON CONFLICT DO NOTHING",
                              (rng.choice(users), user))
            elif roll < 0.72:
                other.execute("DELETE FROM follows WHERE follower = %s AND followee = %s",
                              (rng.choice(users), user))
            elif roll < 0.85:
                db.adapt_overlay(rng.choice(test_overlay.QUERIES),
                                 mode=rng.choice(["eagr", "push", "pull"]),
                                 sharing=rng.random() < 0.5)
            else:
                test_overlay.assert_answers(db)
            key += 1
    test_overlay.assert_answers(db)
    for name in test_overlay.QUERIES:
        db.adapt_overlay(name, mode="push")
        for me in users:
            assert normal(db.query(name, me=me).rows) == normal(
                oracle(db, db.query_plan(name), {"me": me}))
