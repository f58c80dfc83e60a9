"""A plain UPDATE, from another client, of a table only an asynchronous staging and
periodic view read (issue 20): social's ``likes`` under ``trending`` alone, async. The
change is queued (the staging view's delete rule with the old row, its insert rule with
the new one, as piql's own update runs them), so after a drain and a refresh every view
equals its recomputation and ``trending`` the query's own SQL, on both stores."""
from __future__ import annotations

import random

import pytest

from piql.planner.update_queues import RowChange
from piql.runtime.deployment import Deployment
from tests.conftest import plan_text
from tests.planner.test_async_views import QUERIES, SCHEMA
from tests.runtime.test_async_staging import START, buy_confirm, order, populate, tpcw, views
from tests.runtime.test_queue_change_triggers import Client

HOUR = 3_600_000
TRENDING = QUERIES[QUERIES.index("-- name: trending\n"):QUERIES.index("-- name: likers")]


def trending_sql(db: Deployment, hour: int) -> list[tuple]:
    """trending's own SQL on the base table (its ORDER BY, ties by postId)."""
    rows = db.store.sql('SELECT "postId", COUNT(*) FROM "likes" WHERE "likedAt" - "likedAt" % '
                        f'3600000 = {hour} GROUP BY "postId"')
    return sorted(rows, key=lambda r: (-r[1], r[0]))[:10]


def answer(db: Deployment, hour: int) -> list[tuple]:
    return sorted(db.query("trending", hour=hour).rows, key=lambda r: (-r[1], r[0]))


@pytest.fixture
def db_client(new_store):
    location = new_store()
    plan = plan_text(SCHEMA, TRENDING.replace("-- name: trending\n",
                                              "-- name: trending\n-- maintenance: async\n"))
    db = Deployment(plan, location)
    assert {v.name: v.maintenance.value for v in db.views} == {
        "trendingStaging": "async", "trending": "async"}
    client = Client(db, location)
    yield db, client
    client.close()


def test_a_plain_update_of_a_staging_only_table_is_queued(db_client):
    db, client = db_client
    for user in (1, 2, 3):
        db.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
    for post in (1, 2, 3):
        db.insert("posts", postId=post, author=1, createdAt=post, body=f"p{post}")
    for user, post in ((1, 1), (2, 1), (3, 2), (1, 3)):
        db.insert("likes", userId=user, postId=post, likedAt=5 * HOUR + user)
    db.drain()
    db.refresh(now_ms=5 * HOUR)
    assert answer(db, 5 * HOUR) == trending_sql(db, 5 * HOUR)
    # another hour for one like, another post for a second (a new key), and an UPDATE
    # that sets what is there (queued as an update changing nothing)
    client.run('UPDATE "likes" SET "likedAt" = ? WHERE "userId" = 2 AND "postId" = 1', 6 * HOUR)
    client.run('UPDATE "likes" SET "likedAt" = ? WHERE "userId" = 2 AND "postId" = 1',
               6 * HOUR + 1)  # an update chain: the first old row, the last new one
    [entry] = [e for e in db.maintainer.queue.head(10)]
    assert (entry.change, entry.updates) == (RowChange((1, 2, 5 * HOUR + 2), (1, 2, 6 * HOUR + 1)), 2)
    client.run('UPDATE "likes" SET "postId" = 2 WHERE "userId" = 1 AND "postId" = 3')
    client.run('UPDATE "likes" SET "likedAt" = "likedAt" WHERE "userId" = 3')
    assert len(db.maintainer.queue) >= 2
    db.refresh(now_ms=6 * HOUR)  # drains first
    db.refresh(now_ms=5 * HOUR)
    assert len(db.maintainer.queue) == 0
    for hour in (5, 6):
        assert answer(db, hour * HOUR) == trending_sql(db, hour * HOUR) != []
    assert db.check().consistent


def test_plain_updates_of_buy_confirms_tables_are_queued(new_store):
    """TPC-W's orders and order_line, which only staging and periodic views read: plain
    UPDATEs of an order's date and a line's quantity by another client (on SQLite, on
    piql's connection), against the same updates made through piql on a synchronous
    deployment."""
    sync = Deployment(tpcw("sync"), new_store(), engine="store")
    location = new_store()
    lazy = Deployment(tpcw("async"), location, engine="store")
    chooser, stock = random.Random(4), {i: 20 for i in range(1, 9)}
    for db in (sync, lazy):
        populate(db)
    for o_id in (1, 2, 3):
        buy_confirm([sync, lazy], chooser, o_id, stock)
    lazy.drain()
    moved = START + 2 * HOUR + 7
    sync.update("orders", **order(2, moved))
    line = sorted(sync.store.sql("SELECT ol_id, ol_i_id FROM order_line WHERE ol_o_id = 3"))[0]
    sync.update("order_line", ol_id=line[0], ol_o_id=3, ol_i_id=line[1], ol_qty=9,
                ol_discount=0.01, ol_comments="c")
    client = Client(lazy, location)
    try:
        client.run("UPDATE orders SET o_date = ?, o_ship_date = ? WHERE o_id = 2", moved, moved)
        client.run("UPDATE order_line SET ol_qty = 9 WHERE ol_o_id = 3 AND ol_id = ?", line[0])
    finally:
        client.close()
    assert {e.base for e in lazy.maintainer.queue.head(10)} == {"orders", "order_line"}
    assert views(sync, START + 2 * HOUR) == views(lazy, START + 2 * HOUR)  # drains first
    assert lazy.check().consistent
