"""NULL in a column that becomes a view key: SQL accepts the row, so piql does, with the
answers SQL gives (a NULL group, NULLs first ascending and last descending), through
keyed accesses. Primary keys of base tables stay NOT NULL."""
from __future__ import annotations

import re
from collections import Counter

import pytest

import piql
from piql import App
from piql.runtime.errors import ConstraintError
from tests.conftest import EXAMPLES, plan_text, engines_on_stores
from tests.runtime.workload import assert_ordered_match, oracle, ordered_oracle

ENGINES = ["store", "duckdb", "spark"]
FORUM = plan_text(
    """CREATE TABLE questions (id BIGINT PRIMARY KEY, title VARCHAR, asked BIGINT);
    CREATE TABLE answers (id BIGINT PRIMARY KEY, question_id BIGINT, score BIGINT,
        FOREIGN KEY (question_id) REFERENCES questions (id));
    CREATE TABLE tags (qid BIGINT, tag VARCHAR, PRIMARY KEY (qid, tag),
        FOREIGN KEY (qid) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);""",
    """-- name: answerCount
SELECT COUNT(*) AS n, SUM(score) AS points FROM answers WHERE question_id = <q>
-- name: oldestTagged
SELECT q.id, q.asked FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked LIMIT 3
-- name: newestTagged
SELECT q.id, q.asked FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked DESC LIMIT 3
""")
SOCIAL = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in db.store.shapes}


def assert_answers_match(db, params_of: dict[str, list[dict]]) -> None:
    for name, choices in params_of.items():
        query = db.query_plan(name)
        for params in choices:
            got = db.query(name, **params)  # strict: within its bound
            block = query.query.block
            if block.order_by:
                assert_ordered_match(list(got.rows), ordered_oracle(db, query, params),
                                     block.limit, (name, params))
            else:
                assert Counter(got.rows) == Counter(oracle(db, query, params)), (name, params)


def test_the_views_are_keyed_on_nullable_columns():
    assert {q.name: q.level for q in FORUM.queries} == {
        "answerCount": "SI-2", "oldestTagged": "SI-2", "newestTagged": "SI-2"}


@pytest.mark.parametrize("engine, new_store", engines_on_stores(ENGINES), indirect=["new_store"])
def test_null_groups_and_null_order_values_equal_sql(engine, store_url):
    db = App(FORUM).deploy(store_url, engine=engine)
    for number, asked in enumerate([5, None, 3, None, 9], start=1):
        db.insert("questions", id=number, title=f"q{number}", asked=asked)
        db.insert("tags", qid=number, tag="sql")
    db.insert("answers", id=1, question_id=None, score=4)
    db.insert("answers", id=2, question_id=1, score=None)
    db.load("answers", [(3, None, 2), (4, 2, 1)])  # rebuilt on the engine
    db.load("questions", [(6, "q6", None)])
    db.load("tags", [(6, "sql"), (6, "py")])
    choices = {"answerCount": [{"q": q} for q in (1, 2, 3)],
               "oldestTagged": [{"tag": "sql"}, {"tag": "py"}],
               "newestTagged": [{"tag": "sql"}, {"tag": "py"}]}
    assert_answers_match(db, choices)
    assert [r[1] for r in db.query("oldestTagged", tag="sql").rows] == [None, None, None]
    assert [r[1] for r in db.query("newestTagged", tag="sql").rows] == [9, 5, 3]
    assert db.check().consistent
    db.update("questions", id=5, title="q5", asked=None)
    db.update("answers", id=1, question_id=1, score=4)
    db.delete("answers", id=3)
    db.update("answers", id=4, question_id=None, score=7)
    assert_answers_match(db, choices)
    assert db.query("newestTagged", tag="sql").rows[0] == (1, 5)
    assert db.check().consistent


def test_a_null_view_key_is_read_and_written_through_the_key_index():
    """Bounded access for key NULL: every statement that touches the view is a keyed search
    on its key index, never a scan (SQLite's plans; PostgreSQL's: test_postgres_store). The
    connection's triggers write the views: their statements, NEW and OLD as parameters."""
    db = App(FORUM).deploy()
    db.insert("questions", id=1, title="q", asked=None)
    db.insert("answers", id=1, question_id=None, score=1)
    db.insert("answers", id=2, question_id=None, score=2)
    db.delete("answers", id=1)
    db.insert("tags", qid=1, tag="a")
    db.delete("tags", qid=1, tag="a")
    bodies = [sql for (sql,) in db.store.connection.execute(
        "SELECT sql FROM sqlite_temp_master WHERE type = 'trigger'")]
    # an INSERT's own target is no read: the view read in its SELECT is
    touching = [s for body in bodies for s in trigger_statements(body)
                if "_view" in (s.partition(" SELECT ")[2] if s.startswith("INSERT") else s)]
    assert any(s.startswith("DELETE") for s in touching)
    assert any(s.startswith("UPDATE") for s in touching)
    for statement in touching:
        plan = " ".join(row[3] for row in db.store.connection.execute(
            "EXPLAIN QUERY PLAN " + statement, [None] * statement.count("?")))
        assert "INDEX _piql_key_" in plan and not re.search(r"SCAN \w+_view", plan), \
            (statement, plan)
    assert db.rows("answerCount_view") == [(None, 1, 2, 1)]  # key, COUNT(*), SUM, COUNT(score)


def trigger_statements(trigger: str) -> list[str]:
    """The statements of a trigger's body, its NEW and OLD values as parameters."""
    body = trigger[trigger.index("\nBEGIN") + len("\nBEGIN"):trigger.rindex("END")]
    statements = [re.sub(r"^(\s*--[^\n]*\n)*\s*", "", s) for s in body.split(";\n")]
    return [re.sub(r'\b(NEW|OLD)\."[^"]+"', "?", s) for s in statements if s.strip()]


def test_null_times_are_staged_and_windows_order_them_as_sql(store_url):
    db = SOCIAL.deploy(store_url, partitions=3)
    db.insert("users", userId=1, name=None, email=None, createdAt=None)
    db.insert("users", userId=2, name="b", email="b@x", createdAt=7)
    for post, created in enumerate([None, 10, None, 30], start=1):
        db.insert("posts", postId=post, author=1 + post % 2, createdAt=created, body=f"p{post}")
    db.insert("likes", postId=1, userId=1, likedAt=None)
    db.insert("likes", postId=2, userId=1, likedAt=3_600_000 * 2)
    db.load("likes", [(3, 2, None), (2, 2, 3_600_000 * 2 + 1)])
    db.refresh(now_ms=3_600_000 * 2 + 5)
    periodic = [q.name for q in SOCIAL.plan.queries if q.level == "SI-3"]
    assert set(periodic) >= {"latestPosts", "activeAuthors", "trending"}
    assert_answers_match(db, {"latestPosts": [{}], "activeAuthors": [{}],
                              "trending": [{"hour": 3_600_000 * 2}, {"hour": 0}]})
    assert db.check().consistent
    db.delete("likes", postId=1, userId=1)
    db.update("posts", postId=4, author=1, createdAt=None, body="p4")
    db.refresh(now_ms=3_600_000 * 2 + 5)
    assert_answers_match(db, {"latestPosts": [{}], "activeAuthors": [{}]})
    assert db.check().consistent


def test_a_null_primary_key_is_refused_naming_table_and_column(store_url):
    db = App(FORUM).deploy(store_url)
    before = state(db)
    with pytest.raises(ConstraintError, match=r"a questions row needs its key column 'id' "
                                              r"\(a PRIMARY KEY column cannot be NULL\)"):
        db.insert("questions", id=None, title="no id")
    with pytest.raises(ConstraintError, match=r"row 2: a tags row needs its key column 'tag'"):
        db.load("tags", [(1, "a"), (1, None)])
    assert state(db) == before
