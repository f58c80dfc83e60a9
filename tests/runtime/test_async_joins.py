"""Asynchronous join views (issue 20): rules run as of the queue, so after a drain every
view equals its recomputation and every query its SQL, under random interleavings of
writes, drains and maintainer crashes (a batch rolled back mid-way), on SQLite and
PostgreSQL."""
from __future__ import annotations

import random

import pytest

import piql
from piql.runtime.deployment import Deployment
from tests.oracle.harness import OracleApp, Session
from tests.planner.test_async_views import QUERIES, SCHEMA, social
from tests.runtime.test_property import apply
from tests.runtime.workload import Driver, Op

ALL_ASYNC = OracleApp("social-all-async",
                      lambda: piql.loads(SCHEMA, QUERIES, maintenance="async").plan)


class Crash(Exception):
    """A maintainer dying mid-batch: its transaction rolls back."""


def crash_drain(db: Deployment, after: int) -> None:
    real, calls = db.maintainer.apply_deferred, [0]

    def dying(*args):
        real(*args)
        calls[0] += 1
        if calls[0] == after:
            raise Crash

    db.maintainer.apply_deferred = dying
    try:
        db.drain(batch=4)
    except Crash:
        pass
    finally:
        db.maintainer.apply_deferred = real


def run(session: Session, seed: int, steps: int) -> None:
    chooser = random.Random(seed)
    driver = Driver(session.db, spread=4)
    tables = [t.name for t in session.catalog.tables]
    for step in range(steps):
        apply(session, driver, Op(chooser.choice(["insert"] * 4 + ["delete", "update"]),
                                  chooser.choice(tables),
                                  tuple(chooser.randrange(10**6) for _ in range(8))))
        roll = chooser.random()
        if roll < 0.1:
            session.db.drain(limit=chooser.randrange(1, 6))
        elif roll < 0.15:
            crash_drain(session.db, chooser.randrange(1, 6))
    session.assert_views_consistent()  # check() drains first
    assert len(session.db.maintainer.queue) == 0
    session.assert_queries()


@pytest.mark.parametrize("seed", range(6))
def test_random_interleavings_match_the_recomputation(seed):
    session = Session(ALL_ASYNC, partitions=3)
    try:
        run(session, seed, 150)
    finally:
        session.close()


def test_random_interleavings_on_postgresql(postgres_stores):
    session = Session(ALL_ASYNC, partitions=3, store=postgres_stores.scratch())
    try:
        run(session, 11, 80)
    finally:
        session.close()


def test_a_partner_deleted_while_a_change_is_queued():
    with Deployment(social("twoTags")) as db:
        db.insert("users", userId=1, name="a", email="a", createdAt=0)
        db.insert("posts", postId=1, author=1, createdAt=5, body="x")
        db.insert("post_tags", postId=1, tag="a")
        db.drain()
        db.insert("post_tags", postId=1, tag="b")  # queued
        db.delete("post_tags", postId=1, tag="a")  # seen: its rules run now, as of the queue
        assert db.drain() == 1
        assert db.query("twoTags", tag1="a", tag2="b").rows == ()
        assert db.query("twoTags", tag1="b", tag2="b").rows == ((1, 5, "x"),)
        assert db.check().consistent
