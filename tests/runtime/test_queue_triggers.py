"""The enqueue made by the store's trigger (``runtime.queue_triggers``): on SQLite an insert
reaching asynchronous views is one statement, which checks the row, writes it and queues
it; refused, it queues nothing; a plain SQL insert on piql's connection queues too; the
entries are those piql's own enqueue writes, and after a drain every view is right."""
from __future__ import annotations

import time

import pytest

from piql.planner.update_queues import QueuePolicy, RowChange
from piql.runtime.deployment import Deployment
from piql.runtime.errors import ConstraintError
from piql.runtime.update_queue import QUEUE_TABLE
from tests.planner.test_async_views import social

ASYNC = ("twoTags", "followerCount")


def deploy(location: str = ":memory:", policy: str = "in-place") -> Deployment:
    """The social app with ASYNC's views asynchronous, two users and two posts, drained."""
    db = Deployment(social(*ASYNC), location, queue_policy=policy)
    for user in (1, 2):
        db.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
    for post in (1, 2):
        db.insert("posts", postId=post, author=1, createdAt=post, body=f"p{post}")
    db.drain()
    return db


@pytest.fixture
def db():
    deployment = deploy()
    yield deployment
    deployment.close()


def queued(db: Deployment) -> list[tuple[str, str, RowChange, int]]:
    return sorted((e.base, e.row_key, e.change, e.updates) for e in db.maintainer.queue.head(99))


def tags(db: Deployment, tag1: str, tag2: str) -> list[tuple]:
    return db.query("twoTags", tag1=tag1, tag2=tag2).rows


def test_an_async_insert_is_one_statement_of_the_store(db):
    tables = {t.name: t for t in db.plan.catalog.tables}
    assert db.maintainer.at_once(tables["post_tags"]) and db.maintainer.at_once(tables["follows"])
    writes = db.store.counter.writes
    db.insert("post_tags", postId=1, tag="a")
    db.insert("post_tags", postId=1, tag="b")
    assert db.store.counter.writes == writes + 2  # a statement each: the row, queued by SQLite
    assert queued(db) == [("post_tags", '[1,"a"]', RowChange(None, (1, "a")), 1),
                          ("post_tags", '[1,"b"]', RowChange(None, (1, "b")), 1)]
    assert list(tags(db, "a", "b")) == []  # the view lags until the queue is drained
    assert db.drain() == 2
    assert [r[0] for r in tags(db, "a", "b")] == [1] and queued(db) == []
    assert all(v.consistent for v in db.check().views)


def test_a_refused_insert_queues_nothing(new_store):
    db = deploy(new_store())  # on PostgreSQL the trigger is the server's: the same holds
    for number in range(10):
        db.insert("post_tags", postId=1, tag=f"t{number}")
    db.insert("follows", follower=1, followee=2, since=5)
    before = queued(db)
    with pytest.raises(ConstraintError, match="CARDINALITY"):
        db.insert("post_tags", postId=1, tag="t10")  # an 11th tag of post 1
    with pytest.raises(ConstraintError, match="already has a row"):
        db.insert("post_tags", postId=1, tag="t3")
    with pytest.raises(ConstraintError, match="FOREIGN KEY"):
        db.insert("follows", follower=1, followee=9, since=5)  # no user 9
    assert queued(db) == before
    db.drain()
    assert all(v.consistent for v in db.check().views)


def test_a_plain_sql_insert_on_the_connection_queues(db):
    db.store.sql('INSERT INTO "post_tags" ("postId", "tag") VALUES (2, \'a\'), (2, \'b\')')
    db.store.sql('INSERT INTO "follows" VALUES (2, 1, 7)')
    assert queued(db) == [("follows", "[2,1]", RowChange(None, (2, 1, 7)), 1),
                          ("post_tags", '[2,"a"]', RowChange(None, (2, "a")), 1),
                          ("post_tags", '[2,"b"]', RowChange(None, (2, "b")), 1)]
    db.drain()
    assert [r[0] for r in tags(db, "a", "b")] == [2]
    assert db.query("followerCount", userId=1).rows == ((1,),)
    assert all(v.consistent for v in db.check().views)


def test_an_insert_after_a_queued_delete_keeps_its_place(db):
    db.insert("follows", follower=1, followee=2, since=5)
    db.insert("follows", follower=2, followee=1, since=5)
    db.drain()
    db.delete("follows", follower=1, followee=2)  # queued: (old, None)
    time.sleep(0.002)  # the trigger's time is SQLite's clock, of whole milliseconds
    db.insert("follows", follower=2, followee=2, since=1)  # a later key
    db.insert("follows", follower=1, followee=2, since=8)  # coalesced by the trigger
    first, second = db.maintainer.queue.head(99, QueuePolicy.IN_PLACE)
    assert (first.row_key, first.change, first.updates) == (
        "[1,2]", RowChange((1, 2, 5), (1, 2, 8)), 2)
    # SQLite's clock (whole milliseconds): the two inserts may tie
    assert first.last_enqueued >= second.first_enqueued > first.first_enqueued
    db.update("follows", follower=1, followee=2, since=9)  # its insert half queues nothing more
    (entry, _) = db.maintainer.queue.head(99, QueuePolicy.IN_PLACE)
    assert (entry.change, entry.updates) == (RowChange((1, 2, 5), (1, 2, 9)), 3)
    db.drain()
    assert db.query("followerCount", userId=2).rows == ((2,),)
    assert all(v.consistent for v in db.check().views)


def test_the_append_queue_keeps_an_entry_per_insert():
    db = Deployment(social("followerCount"), queue_policy="append")
    try:
        for user in (1, 2):
            db.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
        db.insert("follows", follower=1, followee=2, since=5)
        db.delete("follows", follower=1, followee=2)
        db.insert("follows", follower=1, followee=2, since=6)
        db.update("follows", follower=1, followee=2, since=7)
        rows = db.store.sql(f'SELECT "row_key" FROM "{QUEUE_TABLE}"')
        assert len(rows) == 4 and all(key.startswith("[1,2]@") for key, in rows)
        db.drain()
        assert db.query("followerCount", userId=2).rows == ((1,),)
        assert all(v.consistent for v in db.check().views)
    finally:
        db.close()


def test_a_non_ascii_key_is_the_key_piql_looks_up(db):
    for tag in ("é", 'q"\\\n\x01✓'):
        db.insert("post_tags", postId=1, tag=tag)
        assert db.maintainer.queue.holds("post_tags", [1, tag])
    db.insert("post_tags", postId=1, tag="a")
    db.drain()
    assert [r[0] for r in tags(db, "é", "a")] == [1]
    db.delete("post_tags", postId=1, tag="é")  # seen: its delete rules run now
    assert list(tags(db, "é", "a")) == []
    assert all(v.consistent for v in db.check().views)


TYPED_SCHEMA = """
CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    sensor INTEGER NOT NULL,
    value DOUBLE PRECISION,
    amount DECIMAL(40, 10),
    raw BLOB
);
"""
TYPED_QUERIES = """
-- name: sensorTotals
-- maintenance: async
SELECT COUNT(*) AS readings, SUM(value) AS total FROM readings WHERE sensor = <sensor>;
"""


def test_rows_of_real_decimal_and_blob_columns_come_back_as_stored(new_store):
    """REAL, DECIMAL and BLOB values queued by the store (SQLite's trigger writes a double
    with 17 digits and tags a BLOB as piql does; on PostgreSQL piql's enqueue) decode to
    the values the table holds, and the view equals its SQL after a drain."""
    from tests.conftest import plan_text

    db = Deployment(plan_text(TYPED_SCHEMA, TYPED_QUERIES), new_store())
    values = [0.1 + 0.2, 1 / 3, 1e300, 5e-324, -2.5e-7, 1e16, 12.0, None]
    for number, value in enumerate(values):
        db.insert("readings", id=number, sensor=1, value=value,
                  amount=(2**62 + number, None, 1.5e25)[number % 3],
                  raw=bytes(range(number * 31 % 256, 256))[:7] if number % 3 else None)
    stored = {r[0]: r[1:] for r in db.store.sql(
        'SELECT "id", "sensor", "value", "amount", "raw" FROM "readings"')}
    entries = db.maintainer.queue.head(99)
    assert len(entries) == len(values)
    for entry in entries:  # exact: 2**62 + n is no double, 1/3 needs 17 digits
        row = entry.change.after
        assert entry.change.before is None
        if db.store.dialect == "sqlite":  # the trigger encodes what the table holds
            assert row[1:] == stored[row[0]]
            assert [type(v) for v in row[1:]] == [type(v) for v in stored[row[0]]]
    assert db.query("sensorTotals", sensor=1).rows in ((), ((0, None),))  # not yet drained
    db.drain()
    (count, total), = db.query("sensorTotals", sensor=1).rows
    assert count == len(values)
    assert total == pytest.approx(sum(s[1] for s in stored.values() if s[1] is not None))
    assert all(v.consistent for v in db.check().views)  # the recomputation, exactly
