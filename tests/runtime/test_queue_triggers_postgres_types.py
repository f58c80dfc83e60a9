"""PostgreSQL's enqueue triggers on tables with DOUBLE, DECIMAL and BLOB columns
(``runtime.queue_triggers._pg_value``): every value comes back from the queue as psycopg
reads it from the table (doubles to the bit, integral NUMERICs however large), so piql's
inserts are one statement there too, and any client's plain INSERT, UPDATE or DELETE
through psycopg is queued; after a drain every view equals its SQL."""
from __future__ import annotations

import math
from decimal import Decimal

import psycopg
import pytest

from piql.runtime.deployment import Deployment
from tests.conftest import plan_text

SCHEMA = """
CREATE TABLE readings (
    id INTEGER PRIMARY KEY,
    sensor INTEGER NOT NULL,
    value DOUBLE PRECISION,
    amount DECIMAL(60, 20),
    raw BLOB
);
CREATE TABLE blobs (
    k BLOB PRIMARY KEY,
    sensor INTEGER NOT NULL,
    weight REAL
);
"""
QUERIES = """
-- name: sensorTotals
-- maintenance: async
SELECT COUNT(*) AS readings, SUM(value) AS total, SUM(amount) AS amounts
FROM readings WHERE sensor = <sensor>;

-- name: blobWeights
-- maintenance: async
SELECT COUNT(*) AS n, SUM(weight) AS weight FROM blobs WHERE sensor = <sensor>;
"""
DOUBLES = [0.1 + 0.2, 1 / 3, 1e300, -1e300, 5e-324, -2.5e-7, 1e16, 12.0, -0.0,
           2.0 ** 70, None]
AMOUNTS = [2**60 + 7, -(2**61), 1.5e15, 0.1, -1 / 3, 12.5, 0, None]


@pytest.fixture
def url(postgres_stores) -> str:
    return postgres_stores()


def deploy(url: str) -> Deployment:
    return Deployment(plan_text(SCHEMA, QUERIES), url)


def stored(db: Deployment) -> dict:
    return {r[0]: r[1:] for r in db.store.sql(
        'SELECT "id", "sensor", "value", "amount", "raw" FROM "readings"')}


def same(a, b) -> bool:
    """Equal values of equal type (a double to the bit: -0.0 is not 0.0); a fractional
    DECIMAL comes from the queue exact, and the store reads it as the nearest double."""
    if isinstance(a, Decimal):
        a = float(a)
    if isinstance(a, float) and isinstance(b, float):
        return math.copysign(1, a) == math.copysign(1, b) and a == b
    return type(a) is type(b) and a == b


def oracle(db: Deployment, sensor: int) -> tuple:
    (row,) = db.store.sql('SELECT COUNT(*), SUM("value"), SUM("amount") FROM "readings" '
                          'WHERE "sensor" = %(s)s', {"s": sensor})
    return row


def test_the_tables_get_the_trigger_and_an_insert_is_one_statement(url):
    db = deploy(url)
    tables = {t.name: t for t in db.plan.catalog.tables}
    assert db.maintainer.at_once(tables["readings"]) and db.maintainer.at_once(tables["blobs"])
    writes = db.store.counter.writes
    db.insert("readings", id=1, sensor=1, value=0.5, amount=2.5, raw=b"\x00\xff")
    assert db.store.counter.writes == writes + 1  # the row; the server queued it


def test_queued_rows_are_the_values_the_table_holds(url):
    db = deploy(url)
    for number, value in enumerate(DOUBLES):
        db.insert("readings", id=number, sensor=number % 2, value=value,
                  amount=AMOUNTS[number % len(AMOUNTS)],
                  raw=bytes(range(number * 31 % 256, 256))[:7] if number % 3 else None)
    held = stored(db)
    entries = db.maintainer.queue.head(99)
    assert len(entries) == len(DOUBLES)
    for entry in entries:
        row = entry.change.after
        assert entry.change.before is None
        assert all(same(a, b) for a, b in zip(row[1:], held[row[0]])), (row, held[row[0]])
    db.drain()
    for sensor in (0, 1):
        (count, total, amounts), = db.query("sensorTotals", sensor=sensor).rows
        assert (count, total, amounts) == oracle(db, sensor)
    assert all(v.consistent for v in db.check().views)


def test_other_clients_plain_writes_are_queued(url):
    db = deploy(url)
    db.insert("readings", id=1, sensor=1, value=1.25, amount=0.5, raw=b"a")
    db.drain()
    with psycopg.connect(url, autocommit=True) as other:
        other.execute('INSERT INTO "readings" VALUES (%s, %s, %s, %s, %s), '
                      '(%s, %s, %s, %s, %s)',
                      [2, 1, -1e300, "123456789012345678901234567.5", b"\x00",
                       3, 2, None, None, None])
        other.execute('UPDATE "readings" SET "value" = %s, "amount" = %s WHERE "id" = %s',
                      [0.1, "-0.00000000000000000001", 1])  # a row the views have seen
        other.execute('UPDATE "readings" SET "value" = "value" * 2 WHERE "id" = 2')  # queued
        other.execute('UPDATE "readings" SET "id" = 4, "sensor" = 2 WHERE "id" = 3')  # new key
        other.execute('DELETE FROM "readings" WHERE "id" = 2')  # cancels its queued insert
        other.execute('INSERT INTO "blobs" VALUES (%s, 1, %s), (%s, 1, %s), (%s, 2, NULL)',
                      [b"\x00\x01", 2.5, b"", -0.75, b"\xff"])
        other.execute('UPDATE "blobs" SET "weight" = 1e-300 WHERE "k" = %s', [b""])
        other.execute('DELETE FROM "blobs" WHERE "k" = %s', [b"\x00\x01"])
    keys = {(e.base, e.row_key) for e in db.maintainer.queue.head(99)}
    assert keys == {("readings", "[1]"), ("readings", "[4]"), ("blobs", '[{"blob":""}]'),
                    ("blobs", '[{"blob":"ff"}]')}
    assert db.maintainer.queue.holds("blobs", [b"\xff"])  # the key piql's enqueue writes
    db.drain()
    for sensor in (1, 2):
        assert db.query("sensorTotals", sensor=sensor).rows[0] == oracle(db, sensor)
        (weights,) = db.store.sql('SELECT COUNT(*), SUM("weight") FROM "blobs" WHERE '
                                  '"sensor" = %(s)s', {"s": sensor})
        assert db.query("blobWeights", sensor=sensor).rows[0] == weights
    assert all(v.consistent for v in db.check().views)
    db.delete("blobs", k=b"")  # piql's own write path, beside the trigger's entries
    db.update("readings", id=1, sensor=2, value=None, amount=-7.25, raw=None)
    db.drain()
    assert db.query("blobWeights", sensor=1).rows[0] == (0, None)
    assert db.query("sensorTotals", sensor=2).rows[0] == oracle(db, 2)
    assert all(v.consistent for v in db.check().views)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_sum_of_a_decimal_column_is_numeric_and_exact(url, mode):
    """Regression: the view's SUM of a DECIMAL column was TEXT on PostgreSQL (type ANY), so
    an async drain failed (a TypeError adding to the text read back) and a sync insert
    too (COALESCE of text and integer). It is NUMERIC now, added exactly as SQL's SUM."""
    db = Deployment(plan_text(SCHEMA, QUERIES.replace("async", mode)), url)
    for number, amount in enumerate([0.1, 0.2, 7, None, -3.25, 2**62]):
        db.insert("readings", id=number, sensor=1, value=None, amount=amount, raw=None)
    db.delete("readings", id=5)
    db.drain()
    assert db.query("sensorTotals", sensor=1).rows[0] == oracle(db, 1) == (5, None, 4.05)
    db.delete("readings", id=0)
    db.drain()
    assert db.query("sensorTotals", sensor=1).rows[0] == oracle(db, 1) == (4, None, 3.95)
    assert all(v.consistent for v in db.check().views)


def test_an_async_update_is_one_statement_queued_by_the_trigger(url):
    """An update of a table whose async views the triggers queue is one UPDATE: changing
    no column they read it queues nothing (TPC-W's stock update), changing one it queues
    the change, coalesced with the queued one."""
    db = deploy(url)
    db.insert("readings", id=1, sensor=1, value=0.5, amount=1.25, raw=b"a")
    db.drain()
    writes = db.store.counter.writes
    db.update("readings", id=1, sensor=1, value=0.5, amount=1.25, raw=b"b")  # unread column
    assert db.store.counter.writes == writes + 1 and db.maintainer.queue.head(9) == []
    db.update("readings", id=1, sensor=2, value=-1e300, amount=0.1, raw=None)
    db.update("readings", id=1, sensor=2, value=2.5, amount=0.2, raw=None)
    (entry,) = db.maintainer.queue.head(9)
    assert entry.change.before[:4] == (1, 1, 0.5, Decimal("1.25")) and entry.updates == 2
    assert entry.change.after[:4] == (1, 2, 2.5, Decimal("0.2"))
    db.drain()
    for sensor in (1, 2):
        rows = db.query("sensorTotals", sensor=sensor).rows
        assert (rows[0] if rows else (0, None, None)) == oracle(db, sensor)
    assert all(v.consistent for v in db.check().views)


JOIN_SCHEMA = """
CREATE TABLE groups (id INTEGER PRIMARY KEY, name TEXT, score DOUBLE PRECISION);
CREATE TABLE members (
    grp INTEGER, id INTEGER, weight DOUBLE PRECISION, PRIMARY KEY (grp, id),
    FOREIGN KEY (grp) REFERENCES groups (id)
) WITH CARDINALITY (id, 10);
"""
JOIN_QUERIES = """
-- name: membersOf
-- maintenance: async
SELECT COUNT(*) AS members, SUM(m.weight) AS weight FROM members m JOIN groups g
ON m.grp = g.id WHERE g.name = <name>;
"""


def test_a_seen_row_of_a_join_views_table_goes_through_piql(url):
    """A table read as of the queue: the trigger refuses an update of a seen row changing
    a column the views read (their delete rules run in the write), changing nothing, and
    piql makes the update through its write path instead; one changing no such column is
    one statement."""
    db = Deployment(plan_text(JOIN_SCHEMA, JOIN_QUERIES), url)
    db.insert("groups", id=1, name="a", score=0.5)
    db.insert("members", grp=1, id=1, weight=2.0)
    db.drain()
    assert "groups" in db.maintainer.queue.as_of  # its seen rows are refused at once
    assert db.maintainer.update_at_once(db.plan.catalog.table("groups"))
    writes = db.store.counter.writes
    db.update("groups", id=1, name="a", score=1e300)  # no view reads score: one statement
    assert db.store.counter.writes == writes + 1
    db.update("groups", id=1, name="b", score=1e300)  # refused at once: piql's path
    db.drain()
    for name in ("a", "b"):
        (expected,) = db.store.sql('SELECT COUNT(*), SUM(m."weight") FROM "members" m JOIN '
                                   '"groups" g ON m."grp" = g."id" WHERE g."name" = %(n)s',
                                   {"n": name})
        rows = db.query("membersOf", name=name).rows
        assert (rows[0] if rows else (0, None)) == expected
    assert expected == (1, 2.0)
    assert all(v.consistent for v in db.check().views)


def test_a_frozen_column_is_refused_with_piqls_message(url):
    """An update of a column a periodic view freezes is refused by the table's trigger at
    once, changing nothing; piql's write path then refuses it, naming the view."""
    from piql.runtime.errors import ConstraintError
    from tests.planner.test_periodic import BEST_SELLERS, SHOP

    schema = SHOP.replace("i_subject VARCHAR)", "i_subject VARCHAR, i_stock BIGINT)")
    queries = BEST_SELLERS + """
-- name: subjectCount
SELECT COUNT(*) AS n FROM item WHERE i_subject = <subject>;
"""
    db = Deployment(plan_text(schema, queries.replace("-- name: subjectCount",
                                                      "-- name: subjectCount\n"
                                                      "-- maintenance: async")), url)
    db.insert("item", i_id=1, i_subject="a", i_stock=5)
    db.drain()
    item = db.plan.catalog.table("item")
    assert "item" in db.maintainer.frozen and db.maintainer.update_at_once(item)
    writes = db.store.counter.writes
    db.update("item", i_id=1, i_subject="a", i_stock=4)  # one statement, nothing queued
    assert db.store.counter.writes == writes + 1 and db.maintainer.queue.head(9) == []
    with pytest.raises(ConstraintError, match="the periodic view bestSellers reads through"):
        db.update("item", i_id=1, i_subject="b", i_stock=4)
    assert db.store.sql('SELECT "i_subject", "i_stock" FROM "item"') == [("a", 4)]
    assert db.query("subjectCount", subject="a").rows == ((1,),)
