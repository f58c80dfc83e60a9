"""Emptying a table views read, with plain SQL from another client (issue 20): on
PostgreSQL a TRUNCATE (which fires no row trigger) is refused, naming the table and the
views or the tables referring to it, and changes nothing; ``DELETE FROM t`` without WHERE
goes through the row triggers on both stores (SQLite has no TRUNCATE), so synchronous views
stay right, asynchronous ones are right after a drain, and a join view's applied rows are
refused as for any plain delete (``planner.truncate_guard``)."""
from __future__ import annotations

import sqlite3

import psycopg
import pytest

from tests.runtime.test_queue_change_triggers import REFUSED, Client, db_client, followers_sql  # noqa: F401
from tests.runtime.test_queue_triggers import deploy, tags


def likes_sql(db) -> dict[int, int]:
    return {post: db.store.sql(f'SELECT COUNT(*) FROM "likes" WHERE "postId" = {post}')[0][0]
            for post in (1, 2)}


def fill(db, client: Client) -> None:
    for follower, followee in ((1, 2), (2, 1), (2, 2)):
        client.run('INSERT INTO "follows" VALUES (?, ?, ?)', follower, followee, 5)
    for user, post in ((1, 1), (2, 1), (2, 2)):
        db.insert("likes", userId=user, postId=post, likedAt=3)
    for tag in ("a", "b"):
        db.insert("post_tags", postId=1, tag=tag)
    db.drain()


def views(db) -> dict:
    return {v.name: sorted(db.rows(v.name), key=repr) for v in db.views}


@pytest.mark.parametrize("table, named", [
    ("follows", "the view followerCount_view reads it"),  # asynchronous
    ("likes", "likeCount_view"),  # synchronous, kept by the database's triggers
    ("post_tags", "the view twoTags_view reads it"),  # an asynchronous join, as of the queue
    ("users", "FOREIGN KEYs of follows, likes, posts refer to it"),
])
def test_a_truncate_on_postgres_is_refused_and_changes_nothing(postgres_stores, table, named):
    location = postgres_stores()
    db = deploy(location)
    client = Client(db, location)
    try:
        fill(db, client)
        client.run('INSERT INTO "follows" VALUES (?, ?, ?)', 1, 1, 6)  # one change queued
        rows, before, queued = (db.store.sql(f'SELECT COUNT(*) FROM "{table}"'), views(db),
                                len(db.maintainer.queue))
        with pytest.raises(psycopg.errors.FeatureNotSupported,
                           match=f"TRUNCATE of {table} is refused: .*{named}") as refused:
            client.run(f'TRUNCATE "{table}"')
        assert "DELETE FROM" in str(refused.value)
        assert db.store.sql(f'SELECT COUNT(*) FROM "{table}"') == rows
        assert views(db) == before and len(db.maintainer.queue) == queued
        db.drain()
        assert all(v.consistent for v in db.check().views)
    finally:
        client.close()


def test_a_delete_of_every_row_keeps_the_views(db_client):
    """SQLite's ``DELETE FROM t`` (its TRUNCATE) and PostgreSQL's go through the row
    triggers: the synchronous view at once, the asynchronous one after a drain."""
    db, client = db_client
    fill(db, client)
    client.run('DELETE FROM "likes"')  # likeCount: synchronous
    assert {p: db.query("likeCount", postId=p).rows[0][0] for p in (1, 2)} \
        == likes_sql(db) == {1: 0, 2: 0}
    client.run('DELETE FROM "follows"')  # followerCount: asynchronous
    assert len(db.maintainer.queue) == 3  # one delete queued per row
    db.drain()
    assert {u: db.query("followerCount", userId=u).rows[0][0] for u in (1, 2)} \
        == followers_sql(db) == {1: 0, 2: 0}
    # SQLite's triggers keep no staging view (piql's process writes trending's staging rows,
    # ``planner.triggers``), so plain SQL on SQLite misses it, whether it deletes one row or
    # all; PostgreSQL's keep it
    wrong = {v.view for v in db.check().views if not v.consistent}
    assert wrong == (set() if client.postgres else {"trendingStaging"})


def test_a_delete_of_every_row_of_a_join_views_table_is_refused(db_client):
    """twoTags' rows the view has applied must leave through piql (their delete rules run
    in the write, as of the queue): the whole statement is refused and changes nothing."""
    db, client = db_client
    fill(db, client)
    with pytest.raises((sqlite3.Error, psycopg.Error), match=REFUSED):
        client.run('DELETE FROM "post_tags"')
    assert [r[0] for r in tags(db, "a", "b")] == [1]
    assert db.store.sql('SELECT COUNT(*) FROM "post_tags"')[0][0] == 2
    assert all(v.consistent for v in db.check().views)
