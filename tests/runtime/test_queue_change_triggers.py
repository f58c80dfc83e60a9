"""Deletes and updates made by other clients are queued too (``runtime.queue_triggers``):
plain SQL, not piql's write path: on PostgreSQL from another connection (the triggers are
the database's), on SQLite on piql's connection (its triggers are the connection's own,
``TEMP``). The entries coalesce as piql's enqueue does (an insert and a delete cancel, an
update chain keeps its net effect), piql's own deletes and updates are queued once, a
change of a row an asynchronous join view has applied is refused, and after a drain the
views equal the queries' own SQL."""
from __future__ import annotations

import sqlite3
from typing import Any

import psycopg
import pytest

from piql.planner.update_queues import RowChange
from piql.runtime.deployment import Deployment
from tests.runtime.test_queue_triggers import deploy, queued, tags

REFUSED = "asynchronous join views have applied goes through piql"


class Client:
    """Plain SQL writes beside piql (``?`` placeholders on both stores)."""

    def __init__(self, db: Deployment, location: str) -> None:
        self.postgres = db.store.dialect == "postgres"
        self.connection: Any = (psycopg.connect(location, autocommit=True) if self.postgres
                                else db.store.connection)

    def run(self, statement: str, *values: Any) -> None:
        self.connection.execute(statement.replace("?", "%s") if self.postgres else statement,
                                values)

    def close(self) -> None:
        if self.postgres:
            self.connection.close()


@pytest.fixture
def db_client(new_store):
    location = new_store()
    db = deploy(location)
    client = Client(db, location)
    yield db, client
    client.close()


def followers_sql(db: Deployment) -> dict[int, int]:
    """followerCount as the query's own SQL on the base table."""
    return {user: db.store.sql(f'SELECT COUNT(*) FROM "follows" WHERE "followee" = {user}')[0][0]
            for user in (1, 2)}


def test_other_clients_deletes_and_updates_queue_and_coalesce(db_client):
    db, client = db_client
    for follower, followee in ((1, 2), (2, 1), (2, 2)):
        client.run('INSERT INTO "follows" VALUES (?, ?, ?)', follower, followee, 5)
    db.drain()
    # followerCount reads no "since": an update of it alone is no change the view sees
    client.run('UPDATE "follows" SET "since" = 9 WHERE "follower" = 1 AND "followee" = 2')
    assert queued(db) == []
    client.run('DELETE FROM "follows" WHERE "follower" = 2 AND "followee" = 1')
    client.run('INSERT INTO "follows" VALUES (?, ?, ?)', 1, 1, 3)
    client.run('DELETE FROM "follows" WHERE "follower" = 1 AND "followee" = 1')  # cancels
    # a new key: [2,2]'s delete, and an insert of [2,1] onto its queued delete
    client.run('UPDATE "follows" SET "followee" = 1 WHERE "follower" = 2 AND "followee" = 2')
    assert queued(db) == [("follows", "[2,1]", RowChange((2, 1, 5), (2, 1, 5)), 2),
                          ("follows", "[2,2]", RowChange((2, 2, 5), None), 1)]
    client.run('UPDATE "follows" SET "since" = 10 WHERE "follower" = 2 AND "followee" = 1')
    assert queued(db)[0][2] == RowChange((2, 1, 5), (2, 1, 5))  # unseen: the entry stays
    # piql's own update and delete: queued once (follows feeds an adaptive query, whose
    # write path queues the whole update, seen or not)
    db.update("follows", follower=1, followee=2, since=11)
    db.delete("follows", follower=2, followee=1)
    assert queued(db) == [("follows", "[1,2]", RowChange((1, 2, 9), (1, 2, 11)), 1),
                          ("follows", "[2,1]", RowChange((2, 1, 5), None), 3),
                          ("follows", "[2,2]", RowChange((2, 2, 5), None), 1)]
    assert db.drain() == 3 and queued(db) == []
    assert {u: db.query("followerCount", userId=u).rows[0][0] for u in (1, 2)} \
        == followers_sql(db) == {1: 0, 2: 1}
    assert all(v.consistent for v in db.check().views)


def test_a_join_views_table_queues_changes_of_queued_rows_and_refuses_the_rest(db_client):
    db, client = db_client
    for tag in ("a", "b", "x"):
        client.run('INSERT INTO "post_tags" ("postId", "tag") VALUES (?, ?)', 1, tag)
    client.run('UPDATE "post_tags" SET "tag" = ? WHERE "postId" = 1 AND "tag" = ?', "c", "b")
    client.run('DELETE FROM "post_tags" WHERE "postId" = 1 AND "tag" = ?', "a")  # cancels
    assert queued(db) == [("post_tags", '[1,"c"]', RowChange(None, (1, "c")), 1),
                          ("post_tags", '[1,"x"]', RowChange(None, (1, "x")), 1)]
    db.drain()
    assert [r[0] for r in tags(db, "c", "x")] == [1]
    client.run('INSERT INTO "post_tags" ("postId", "tag") VALUES (?, ?)', 2, "c")
    for statement in ('DELETE FROM "post_tags" WHERE "postId" = 1 AND "tag" = ?',
                      'UPDATE "post_tags" SET "postId" = 2 WHERE "postId" = 1 AND "tag" = ?'):
        with pytest.raises((sqlite3.Error, psycopg.Error), match=REFUSED):  # seen: refused
            client.run(statement, "x")
    assert queued(db) == [("post_tags", '[2,"c"]', RowChange(None, (2, "c")), 1)]
    db.delete("post_tags", postId=1, tag="x")  # piql's write path: its rules run now
    db.drain()
    both = db.store.sql('SELECT a."postId" FROM "post_tags" a JOIN "post_tags" b ON '
                        'a."postId" = b."postId" WHERE a."tag" = \'c\' AND b."tag" = \'x\'')
    assert list(tags(db, "c", "x")) == both == []
    assert all(v.consistent for v in db.check().views)
