"""A view whose key holds no NULL is clustered on its key (SQLite: a ``WITHOUT ROWID`` table,
PostgreSQL: its PRIMARY KEY), one B-tree per view row written; a view whose key may hold
NULL keeps a rowid table and a unique key index. Either way the answers equal SQL's."""
from __future__ import annotations

import pytest

from piql import App
from piql.planner.naming import key_index_name
from tests.conftest import plan_text
from tests.runtime.test_migrate import migrated
from tests.runtime.test_migrate_schema import layout
from tests.runtime.test_null_keys import assert_answers_match

SCHEMA = """CREATE TABLE questions (id BIGINT PRIMARY KEY, title VARCHAR, asked BIGINT {null});
CREATE TABLE tags (qid BIGINT, tag VARCHAR, PRIMARY KEY (qid, tag),
    FOREIGN KEY (qid) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);"""
QUERIES = """-- name: newestTagged
SELECT q.id, q.asked FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked DESC LIMIT 3
"""
NOT_NULL = plan_text(SCHEMA.format(null="NOT NULL"), QUERIES)
NULLABLE = plan_text(SCHEMA.format(null=""), QUERIES)
CHOICES = {"newestTagged": [{"tag": t} for t in ("a", "b", "c")]}


def view_of(plan):
    return next(v for v in plan.views if v.name.startswith("newestTagged"))


def table_sql(db, name: str) -> str:
    return db.store.sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                        (name,))[0][0]


def test_a_not_null_ordering_column_clusters_the_view_on_its_key():
    view = view_of(NOT_NULL)
    assert not view.nullable_key and view_of(NULLABLE).nullable_key
    db = App(NOT_NULL).deploy()
    assert table_sql(db, view.name).endswith("WITHOUT ROWID")
    assert not db.store.sql("SELECT 1 FROM sqlite_master WHERE name = ?",
                            (key_index_name(view.name),))
    nullable = App(NULLABLE).deploy()
    assert "WITHOUT ROWID" not in table_sql(nullable, view.name)


def test_the_clustered_view_is_read_by_a_search_of_its_key():
    db = App(NOT_NULL).deploy()
    db.insert("questions", id=1, title="q", asked=4)
    db.insert("tags", qid=1, tag="a")
    statements: list[str] = []
    db.store.connection.set_trace_callback(statements.append)
    assert list(db.query("newestTagged", tag="a").rows) == [(1, 4)]
    db.store.connection.set_trace_callback(None)
    reads = [s for s in statements if view_of(NOT_NULL).name in s]
    assert reads
    for statement in reads:
        plan = " ".join(row[3] for row in db.store.connection.execute(
            "EXPLAIN QUERY PLAN " + statement))
        assert "SEARCH" in plan and "PRIMARY KEY" in plan and "SCAN" not in plan, plan


def test_columns_an_equality_compares_hold_no_null():
    """``t.qid = q.id`` holds of no NULL: a view keyed on a nullable column the join
    equates is clustered too."""
    plan = plan_text("""CREATE TABLE questions (id BIGINT PRIMARY KEY, asked BIGINT);
CREATE TABLE links (id BIGINT PRIMARY KEY, qid BIGINT, other BIGINT);""",
                     "-- name: linked\nSELECT l.id, q.asked FROM links l, questions q "
                     "WHERE l.qid = q.id AND l.other = <other> ORDER BY l.qid LIMIT 3\n")
    assert not any(v.nullable_key for v in plan.views)
    unjoined = plan_text("CREATE TABLE links (id BIGINT PRIMARY KEY, qid BIGINT, other BIGINT);",
                         "-- name: linked\nSELECT id FROM links WHERE other = <other> "
                         "ORDER BY qid LIMIT 3\n")
    assert all(v.nullable_key for v in unjoined.views)


@pytest.mark.parametrize("plan", [NOT_NULL, NULLABLE], ids=["not-null", "nullable"])
def test_writes_keep_either_layout_equal_to_sql(plan, store_url):
    db = App(plan).deploy(store_url)
    nullable = plan is NULLABLE
    for number, asked in enumerate([5, 3, 9, 3, 7], start=1):
        db.insert("questions", id=number, title=f"q{number}",
                  asked=None if nullable and number % 2 else asked)
        for tag in ("a", "b", "c")[: 1 + number % 3]:
            db.insert("tags", qid=number, tag=tag)
    assert_answers_match(db, CHOICES)
    db.update("questions", id=2, title="q2", asked=11)
    db.delete("tags", qid=3, tag="a")
    db.update("questions", id=3, title="q3", asked=None if nullable else 1)
    db.load("tags", [(4, "c")])
    assert_answers_match(db, CHOICES)
    assert db.check().consistent


def test_a_store_migrated_to_the_clustered_layout_is_laid_out_as_a_fresh_one(new_store):
    """A plan whose view changes layout (its ordering column now NOT NULL) is another plan:
    ``piql migrate`` rebuilds the view as a fresh deployment lays it out."""
    location = new_store()
    db = App(NULLABLE).deploy(location, engine="store")
    db.insert("questions", id=1, title="q", asked=4)
    db.insert("tags", qid=1, tag="a")
    db.close()
    migrated(location, QUERIES, SCHEMA.format(null="NOT NULL"))
    fresh = new_store()
    App(NOT_NULL).deploy(fresh, engine="store").close()
    assert layout(location) == layout(fresh)
    db = App(NOT_NULL).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    assert list(db.query("newestTagged", tag="a").rows) == [(1, 4)]
