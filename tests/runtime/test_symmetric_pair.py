"""A symmetric-pair view (``planner.symmetric_pair``) on both stores: one orientation of each
pair is stored, every read equals SQL's answer for either order of the parameters, reads
stay one range of the view's key, and a store deployed with both orientations is refused
until ``piql migrate`` rebuilds the view."""
from __future__ import annotations

import random

import pytest

import piql
from piql import App, sqlgen
from piql.runtime.errors import DeploymentError
from tests.conftest import plan_text
from tests.runtime.test_migrate import migrated
from tests.runtime.test_null_keys import assert_answers_match

SCHEMA = """CREATE TABLE Documents (docId BIGINT, timestamp BIGINT NOT NULL, PRIMARY KEY (docId));
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, PRIMARY KEY (docId, tag),
                   FOREIGN KEY (docId) REFERENCES Documents (docId)) WITH CARDINALITY (tag, 6);"""
QUERIES = """-- name: twoTags
SELECT t1.docId, d.timestamp FROM Tags t1, Tags t2, Documents d
WHERE t1.docId = t2.docId AND t1.docId = d.docId AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY d.timestamp LIMIT 3
"""
PLAN = plan_text(SCHEMA, QUERIES)
TAGS = ("a", "b", "B", "c", "é", "z")
CHOICES = {"twoTags": [{"tag1": a, "tag2": b} for a in TAGS + ("none",) for b in TAGS]}


def q(db, name: str) -> str:
    return sqlgen.identifier(name, db.store.dialect)


def pairs_stored(db) -> int:
    return db.store.sql(f"SELECT COUNT(*) FROM {q(db, 'twoTags_view')}")[0][0]


def pairs_by_sql(db, ordered: bool) -> int:
    doc, tag = q(db, "docId"), q(db, "tag")
    keep = f" AND t1.{tag} <= t2.{tag}" if ordered else ""
    return db.store.sql(f"SELECT COUNT(*) FROM {q(db, 'Tags')} t1, {q(db, 'Tags')} t2 "
                        f"WHERE t1.{doc} = t2.{doc}" + keep)[0][0]


def test_random_writes_keep_the_answers_equal_to_sql_in_either_order(store_url):
    rng = random.Random(15)
    db = App(PLAN).deploy(store_url)
    assert db.query_plan("twoTags").pair is not None
    tags: set[tuple[int, str]] = set()
    for doc in range(12):
        db.insert("Documents", docId=doc, timestamp=rng.randrange(5))
    for step in range(120):
        doc, tag = rng.randrange(12), rng.choice(TAGS)
        if (doc, tag) in tags and rng.random() < 0.4:
            db.delete("Tags", docId=doc, tag=tag)
            tags.discard((doc, tag))
        elif (doc, tag) not in tags and sum(d == doc for d, _ in tags) < 6:
            db.insert("Tags", docId=doc, tag=tag)
            tags.add((doc, tag))
        if step % 10 == 9:
            db.update("Documents", docId=rng.randrange(12), timestamp=rng.randrange(5))
        if step % 40 == 39:
            assert_answers_match(db, CHOICES)
    # one orientation of each pair: k(k+1)/2 rows for a document's k tags, not k * k
    assert pairs_stored(db) == pairs_by_sql(db, ordered=True) < pairs_by_sql(db, ordered=False)
    assert db.check().consistent
    for params in CHOICES["twoTags"]:  # the interpreter, the reference, orders them too
        assert db.interpret("twoTags", **params).rows == db.query("twoTags", **params).rows


def test_plain_sql_writes_keep_one_orientation(store_url):
    """The triggers maintain the view from its definition: a write from another client
    stores one orientation too."""
    db = App(PLAN).deploy(store_url)
    mark = ":tag" if db.store.dialect == "sqlite" else "%(tag)s"
    db.store.sql(f"INSERT INTO {q(db, 'Documents')} ({q(db, 'docId')}, {q(db, 'timestamp')}) "
                 "VALUES (1, 7)")
    for tag in ("z", "a", "m"):
        db.store.sql(f"INSERT INTO {q(db, 'Tags')} ({q(db, 'docId')}, {q(db, 'tag')}) "
                     f"VALUES (1, {mark})", {"tag": tag})
    assert pairs_stored(db) == 6  # (a,a) (a,m) (a,z) (m,m) (m,z) (z,z)
    assert list(db.query("twoTags", tag1="z", tag2="a").rows) == [(1, 7)]
    assert list(db.query("twoTags", tag1="m", tag2="m").rows) == [(1, 7)]


def test_a_read_in_either_order_searches_one_range_of_the_key():
    db = App(PLAN).deploy()
    db.insert("Documents", docId=1, timestamp=4)
    db.insert("Tags", docId=1, tag="a")
    db.insert("Tags", docId=1, tag="b")
    for tag1, tag2 in (("a", "b"), ("b", "a")):
        statements: list[str] = []
        db.store.connection.set_trace_callback(statements.append)
        assert list(db.query("twoTags", tag1=tag1, tag2=tag2).rows) == [(1, 4)]
        db.store.connection.set_trace_callback(None)
        reads = [s for s in statements if "twoTags_view" in s]
        assert reads
        for statement in reads:
            plan = " ".join(row[3] for row in db.store.connection.execute(
                "EXPLAIN QUERY PLAN " + statement))
            assert "SEARCH" in plan and "t1_tag=? AND t2_tag=?" in plan, plan
            assert "SCAN" not in plan and "TEMP B-TREE" not in plan, plan


def test_a_store_with_both_orientations_is_refused_then_migrated(new_store, monkeypatch):
    """A store deployed before the layout (the view holding both orientations) is another
    plan: opening it is refused with the way out, ``piql migrate`` rebuilds the view."""
    location = new_store()
    with monkeypatch.context() as before:
        before.setattr("piql.planner.imv.symmetric_pair", lambda catalog, block: None)
        old = piql.loads(SCHEMA, QUERIES)
        assert old.plan.query("twoTags").pair is None
        db = old.deploy(location, engine="store")
    db.insert("Documents", docId=1, timestamp=3)
    for tag in ("b", "a"):
        db.insert("Tags", docId=1, tag=tag)
    assert pairs_stored(db) == 4
    db.close()
    with pytest.raises(DeploymentError, match="deployed with a different plan"):
        App(PLAN).deploy(location, engine="store")
    migrated(location, QUERIES, SCHEMA)
    db = App(PLAN).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    assert pairs_stored(db) == 3
    assert list(db.query("twoTags", tag1="b", tag2="a").rows) == [(1, 3)]
