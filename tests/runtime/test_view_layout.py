"""A view whose key holds no NULL is clustered on its key (SQLite: a ``WITHOUT ROWID`` table,
PostgreSQL: its PRIMARY KEY), one B-tree per view row written; a view whose key may hold
NULL keeps a rowid table and a unique key index, which on SQLite covers the row (the key,
then the other columns) unless maintenance rewrites the rows in place. Either way the
answers equal SQL's."""
from __future__ import annotations

import pytest

from piql import App
from piql.planner import store_layout
from piql.planner.naming import key_index_name
from piql.planner.store_layout import KeyStorage
from piql.runtime.errors import DeploymentError
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
# the view also keeps a column outside its key (title), which a narrow key index would
# leave in the table: one lookup per row read
TITLED_QUERIES = QUERIES.replace("SELECT q.id, q.asked", "SELECT q.id, q.asked, q.title")
TITLED = plan_text(SCHEMA.format(null=""), TITLED_QUERIES)


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
    deploy_one_question(location, NULLABLE)
    db = migrated_as_fresh(new_store, location, NOT_NULL, QUERIES, SCHEMA.format(null="NOT NULL"))
    assert list(db.query("newestTagged", tag="a").rows) == [(1, 4)]


def deploy_one_question(location: str, plan) -> None:
    db = App(plan).deploy(location, engine="store")
    db.insert("questions", id=1, title="q", asked=4)
    db.insert("tags", qid=1, tag="a")
    db.close()


def migrated_as_fresh(new_store, location: str, plan, queries: str, schema: str):
    """The store migrated to ``plan``, laid out as a fresh deployment of it, reopened: its
    views equal their recomputation."""
    migrated(location, queries, schema)
    fresh = new_store()
    App(plan).deploy(fresh, engine="store").close()
    assert layout(location) == layout(fresh)
    db = App(plan).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    return db


def index_columns(db, name: str) -> list[str]:
    return [row[2] for row in db.store.sql(f'PRAGMA index_info("{name}")')]


def statements_reading(db, view: str, name: str, **params) -> list[str]:
    statements: list[str] = []
    db.store.connection.set_trace_callback(statements.append)
    try:
        db.query(name, **params)
    finally:
        db.store.connection.set_trace_callback(None)
    return [s for s in statements if view in s]


def test_the_key_index_of_a_view_whose_key_may_hold_null_covers_its_rows():
    """Key first (so the index's order is the key's), then every other column: a read of
    the view is one range of index entries, with no temp B-tree to sort them and no lookup
    of each row in the rowid-ordered table (docs/benchmarks.md, TPC-W's SearchResult)."""
    view = view_of(TITLED)
    assert view.nullable_key and not view.aggregate
    db = App(TITLED).deploy()
    others = [c for c, _ in view.stored_columns if c not in view.stored_key]
    assert others == ["title"]
    assert index_columns(db, key_index_name(view.name)) == list(view.stored_key) + others
    for number in range(1, 5):
        db.insert("questions", id=number, title=f"q{number}", asked=None if number == 2 else number)
        db.insert("tags", qid=number, tag="a")
    reads = statements_reading(db, view.name, "newestTagged", tag="a")
    assert reads
    for statement in reads:
        plan = " ".join(row[3] for row in db.store.connection.execute(
            "EXPLAIN QUERY PLAN " + statement, [None] * statement.count("?")))
        assert f"SEARCH {view.name} USING COVERING INDEX" in plan, plan
        assert "TEMP B-TREE" not in plan and "SCAN" not in plan, plan
    assert list(db.query("newestTagged", tag="a").rows) == [
        (4, 4, "q4"), (3, 3, "q3"), (1, 1, "q1")]


def test_an_aggregate_view_keeps_a_narrow_key_index():
    """COUNT and SUM change with every write: a covering entry would be rewritten each time."""
    plan = plan_text("CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT);",
                     "-- name: perG\nSELECT g, COUNT(*) AS n, SUM(v) AS total FROM r "
                     "WHERE g = <g> GROUP BY g\n")
    view = next(v for v in plan.views if v.key)
    assert view.nullable_key and view.aggregate
    db = App(plan).deploy()
    assert index_columns(db, key_index_name(view.name)) == list(view.stored_key)


@pytest.mark.parametrize("plan", [TITLED], ids=["covering"])
def test_writes_keep_the_covering_layout_equal_to_sql(plan, store_url):
    db = App(plan).deploy(store_url)
    for number, asked in enumerate([5, 3, 9, 3, 7, 5], start=1):
        db.insert("questions", id=number, title=f"q{number}", asked=None if number % 2 else asked)
        for tag in ("a", "b", "c")[: 1 + number % 3]:
            db.insert("tags", qid=number, tag=tag)
    assert_answers_match(db, CHOICES)
    db.update("questions", id=2, title="renamed", asked=11)  # a non-key column changes
    db.update("questions", id=4, title="q4 again", asked=None)  # and a key column
    db.delete("tags", qid=3, tag="a")
    db.delete("tags", qid=6, tag="a")
    db.load("tags", [(4, "c")])
    assert_answers_match(db, CHOICES)
    assert db.check().consistent


def test_a_store_with_a_narrow_key_index_migrates_to_the_covering_layout(new_store,
                                                                        monkeypatch):
    """The covering key index is another plan (its fingerprint and record name it): a store
    deployed with the narrow one is refused with the steps to take, and ``piql migrate``
    rebuilds the view as a fresh deployment lays it out."""
    location = new_store()
    with monkeypatch.context() as before:
        before.setattr(store_layout, "view_storage", lambda view: KeyStorage.KEY_INDEX
                       if view.nullable_key else KeyStorage.CLUSTERED)
        deploy_one_question(location, TITLED)
    with pytest.raises(DeploymentError, match="different plan"):
        App(TITLED).deploy(location, engine="store")
    db = migrated_as_fresh(new_store, location, TITLED, TITLED_QUERIES, SCHEMA.format(null=""))
    assert list(db.query("newestTagged", tag="a").rows) == [(1, 4, "q")]
