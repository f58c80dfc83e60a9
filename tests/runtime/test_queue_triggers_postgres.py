"""The enqueue made by PostgreSQL's trigger (``runtime.queue_triggers``): an insert reaching
asynchronous views is one statement from piql; the trigger is the database's, so a plain
INSERT from any client's connection queues too; a refused insert queues nothing; the
entries are those piql's own enqueue writes, and after a drain every view is right."""
from __future__ import annotations

import psycopg
import pytest

from piql.planner.update_queues import QueuePolicy, RowChange
from piql.runtime.update_queue import QUEUE_TABLE
from tests.runtime.test_queue_triggers import deploy, queued, tags


@pytest.fixture
def url(postgres_stores) -> str:
    return postgres_stores()


@pytest.fixture
def db(url):
    return deploy(url)


def test_an_async_insert_is_one_statement_of_the_store(db):
    tables = {t.name: t for t in db.plan.catalog.tables}
    assert db.maintainer.at_once(tables["post_tags"]) and db.maintainer.at_once(tables["follows"])
    writes = db.store.counter.writes
    db.insert("post_tags", postId=1, tag="a")
    db.insert("post_tags", postId=1, tag="b")
    assert db.store.counter.writes == writes + 2  # a statement each, queued by the server
    assert queued(db) == [("post_tags", '[1,"a"]', RowChange(None, (1, "a")), 1),
                          ("post_tags", '[1,"b"]', RowChange(None, (1, "b")), 1)]
    # the server's clock; the place IN-PLACE's under every policy (no slow-updater test)
    assert all(e.cut == e.first_enqueued == e.last_enqueued > 0
               for e in db.maintainer.queue.head(99))
    assert list(tags(db, "a", "b")) == []  # the view lags until the queue is drained
    assert db.drain() == 2
    assert [r[0] for r in tags(db, "a", "b")] == [1] and queued(db) == []
    assert all(v.consistent for v in db.check().views)


def test_a_plain_insert_from_another_connection_queues(db, url):
    with psycopg.connect(url, autocommit=True) as other:
        other.execute('INSERT INTO "post_tags" ("postId", "tag") VALUES (%s, %s), (%s, %s)',
                      [2, "a", 2, "b"])
        other.execute('INSERT INTO "follows" VALUES (%s, %s, %s)', [2, 1, 7])
        with pytest.raises(psycopg.errors.UniqueViolation):  # refused: queues nothing
            other.execute('INSERT INTO "follows" VALUES (%s, %s, %s)', [2, 1, 8])
        with pytest.raises(psycopg.Error, match="CARDINALITY"):
            other.execute('INSERT INTO "post_tags" ("postId", "tag") SELECT 2, '
                          "'x' || i FROM generate_series(1, 20) AS i")
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
    db.delete("follows", follower=1, followee=2)  # queued by piql: (old, None)
    db.insert("follows", follower=2, followee=2, since=1)  # a later key
    db.insert("follows", follower=1, followee=2, since=8)  # coalesced by the trigger
    first, second = db.maintainer.queue.head(99, QueuePolicy.IN_PLACE)
    assert (first.row_key, first.change, first.updates) == (
        "[1,2]", RowChange((1, 2, 5), (1, 2, 8)), 2)
    assert first.last_enqueued >= second.first_enqueued > first.first_enqueued
    db.update("follows", follower=1, followee=2, since=9)  # its insert half queues nothing more
    (entry, _) = db.maintainer.queue.head(99, QueuePolicy.IN_PLACE)
    assert (entry.change, entry.updates) == (RowChange((1, 2, 5), (1, 2, 9)), 3)
    db.drain()
    assert db.query("followerCount", userId=2).rows == ((2,),)
    assert all(v.consistent for v in db.check().views)


def test_a_key_is_the_text_piql_looks_up(db):
    for tag in ("é", 'q"\\\n\x01\x1f/✓', "t\tb\x08f\x0c"):
        db.insert("post_tags", postId=1, tag=tag)
        assert db.maintainer.queue.holds("post_tags", [1, tag])
    db.insert("post_tags", postId=1, tag="a")
    db.drain()
    assert [r[0] for r in tags(db, "é", "a")] == [1]
    db.delete("post_tags", postId=1, tag="é")  # seen: its delete rules run now
    assert list(tags(db, "é", "a")) == []
    assert all(v.consistent for v in db.check().views)


@pytest.mark.parametrize("policy", ["append", "linecutting"])
def test_a_process_whose_policy_the_trigger_cannot_follow_queues_itself(url, policy):
    db = deploy(url, policy)
    assert not db.maintainer.enqueued and db.store.own_enqueue
    db.insert("follows", follower=1, followee=2, since=5)
    db.delete("follows", follower=1, followee=2)
    db.insert("follows", follower=1, followee=2, since=6)
    rows = sorted(key for key, in db.store.sql(f'SELECT "row_key" FROM "{QUEUE_TABLE}"'))
    # piql's own entries only: one per change under APPEND, coalesced under LINECUTTING
    if policy == "linecutting":
        assert rows == ["[1,2]"]
    else:
        assert len(rows) == 3 and all(key.startswith("[1,2]@") for key in rows)
    with psycopg.connect(url, autocommit=True) as other:  # another client: the trigger
        other.execute('INSERT INTO "follows" VALUES (%s, %s, %s)', [2, 1, 7])
    if policy == "linecutting":  # in place
        assert db.maintainer.queue.holds("follows", [2, 1])
    else:  # appended, as piql's own entries
        assert any(e.row_key.startswith("[2,1]@") for e in db.maintainer.queue.head(99))
    db.drain()
    assert db.query("followerCount", userId=2).rows == ((1,),)
    assert db.query("followerCount", userId=1).rows == ((1,),)
    assert all(v.consistent for v in db.check().views)


def test_a_bulk_load_queues_nothing_and_rebuilds(db):
    db.insert("follows", follower=1, followee=2, since=5)  # queued by the trigger
    db.load("follows", [{"follower": 2, "followee": 2, "since": 1}])
    assert queued(db) == []  # the rebuild already counts the queued follow
    assert db.query("followerCount", userId=2).rows == ((2,),)
    assert db.drain() == 0 and all(v.consistent for v in db.check().views)


def test_under_the_append_queue_other_clients_changes_append_too(url):
    """A deployment with the append queue makes the triggers append: another client's
    insert, update and delete are an entry each (``key@time``, as piql's own), in order,
    and the insert of a table read as of the queue still coalesces by key."""
    db = deploy(url, "append")
    with psycopg.connect(url, autocommit=True) as other:
        other.execute('INSERT INTO "follows" VALUES (2, 1, 7)')
        other.execute('UPDATE "follows" SET "since" = 8 WHERE "follower" = 2')  # unread
        other.execute('UPDATE "follows" SET "followee" = 2 WHERE "follower" = 2')  # moved
        other.execute('DELETE FROM "follows" WHERE "follower" = 2')
        other.execute('INSERT INTO "post_tags" ("postId", "tag") VALUES (2, %s)', ["a"])
    entries = db.maintainer.queue.head(99)
    assert [(e.row_key.split("@")[0], e.change) for e in entries if e.base == "follows"] == [
        ("[2,1]", RowChange(None, (2, 1, 7))), ("[2,1]", RowChange((2, 1, 8), None)),
        ("[2,2]", RowChange(None, (2, 2, 8))), ("[2,2]", RowChange((2, 2, 8), None))]
    assert [(e.row_key, e.change) for e in entries if e.base == "post_tags"] == [
        ('[2,"a"]', RowChange(None, (2, "a")))]
    assert db.drain() == 5
    assert db.query("followerCount", userId=1).rows == ((0,),)
    assert all(v.consistent for v in db.check().views)
