"""The statements PostgreSQL's triggers run read indexes, not whole tables, under the generic
plans piql's connections force (``PostgresStore._configure``): a key that may hold NULL is
matched by branching on the NULLs (``triggers_postgres._matching``), since ``c = v OR (c IS
NULL AND v IS NULL)`` is no index condition in a plan made for every value. The plans are
read from ``auto_explain``, which reports every statement a trigger runs."""
from __future__ import annotations

import re

import pytest

from piql.runtime.deployment import Deployment
from tests.conftest import plan_text

PLAN = plan_text(
    """CREATE TABLE questions (id BIGINT PRIMARY KEY, title VARCHAR, asked BIGINT);
    CREATE TABLE answers (id BIGINT PRIMARY KEY, question_id BIGINT, score BIGINT,
        FOREIGN KEY (question_id) REFERENCES questions (id));
    CREATE TABLE tags (qid BIGINT, tag VARCHAR, PRIMARY KEY (qid, tag),
        FOREIGN KEY (qid) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);
    CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR, seen BIGINT)
        WITH CARDINALITY (id, 1) PER (name);""",
    """-- name: answerCount
SELECT COUNT(*) AS n, SUM(score) AS points FROM answers WHERE question_id = <q>
-- name: oldestTagged
SELECT q.id, q.asked FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked LIMIT 3
-- name: userNamed
SELECT id FROM users WHERE name = <name>
""")
ROWS = 2000  # enough that a full scan costs more than an index's in any plan


@pytest.fixture
def db(postgres_stores):
    deployment = Deployment(PLAN, postgres_stores())
    with deployment.store.pool.connection() as connection, connection.transaction():
        connection.execute(
            "INSERT INTO questions SELECT g, 't' || g, CASE WHEN g %% 10 = 0 THEN NULL ELSE g "
            "END FROM generate_series(1, %s) g", [ROWS])
        connection.execute("INSERT INTO tags SELECT g, 'tag' || (g %% 50) FROM "
                           "generate_series(1, %s) g", [ROWS])
        connection.execute("INSERT INTO answers SELECT g, CASE WHEN g %% 10 = 0 THEN NULL "
                           "ELSE g %% 500 END, g FROM generate_series(1, %s) g", [ROWS])
        connection.execute("INSERT INTO users SELECT g, CASE WHEN g = 1 THEN NULL ELSE "
                           "'u' || g END, 0 FROM generate_series(1, %s) g", [ROWS])
        connection.execute("ANALYZE")
    yield deployment
    deployment.close()


WRITES = [
    # the view rows of a question move (oldestTagged's key holds the nullable asked)
    ("UPDATE questions SET asked = %s WHERE id = %s", [7, 5]),
    ("UPDATE questions SET asked = NULL WHERE id = %s", [6]),
    ("UPDATE questions SET asked = %s WHERE id = %s", [8, 10]),
    # a group keyed on a nullable column gains and loses rows
    ("INSERT INTO answers VALUES (%s, %s, 1)", [ROWS + 1, 3]),
    ("INSERT INTO answers VALUES (%s, NULL, 1)", [ROWS + 2]),
    ("DELETE FROM answers WHERE id = %s", [ROWS + 1]),
    ("DELETE FROM answers WHERE id = %s", [ROWS + 2]),
    # CARDINALITY per a nullable column
    ("INSERT INTO users VALUES (%s, %s, 0)", [ROWS + 1, "new"]),
    ("UPDATE users SET name = %s WHERE id = %s", ["newer", ROWS + 1]),
]


def explained(db, writes) -> list[str]:
    """The plans of ``writes`` (plain SQL on a connection configured as piql's own) and of
    every statement their triggers ran."""
    plans: list[str] = []
    with db.store.pool.connection() as connection:
        assert connection.execute("SHOW plan_cache_mode").fetchone() == ("force_generic_plan",)
        connection.add_notice_handler(lambda notice: plans.append(notice.message_primary))
        connection.execute("LOAD 'auto_explain'")
        for setting, value in (("log_min_duration", "0"), ("log_nested_statements", "on"),
                               ("log_level", "notice")):
            connection.execute(f"SET auto_explain.{setting} = {value}")
        try:
            for statement, values in writes:
                connection.execute(statement, values)
        finally:
            connection.execute("SET auto_explain.log_min_duration = -1")
    return plans


def test_every_statement_of_the_triggers_reads_an_index(db):
    plans = explained(db, WRITES)
    assert len(plans) > len(WRITES)  # the triggers' own statements were reported too
    scans = [line for p in plans for line in p.splitlines() if "Seq Scan" in line]
    assert scans == []
    text = "\n".join(plans)
    for view in ("oldestTagged", "answerCount", "users"):  # the key lookups read indexes
        assert re.search(rf"Index (Only )?Scan using \S+ on \"?{view}", text), view
    assert db.check().consistent


def test_an_update_keeping_a_rows_group_and_value_skips_its_cardinality_check(db):
    counted = "piql_others"  # the check's subquery
    assert any(counted in p for p in explained(db, [
        ("UPDATE users SET name = %s WHERE id = %s", ["other", 5])]))
    assert not any(counted in p for p in explained(db, [
        ("UPDATE users SET seen = 1 WHERE id = %s", [6])]))
    with pytest.raises(Exception, match="CARDINALITY"):
        explained(db, [("UPDATE users SET name = %s WHERE id = %s", ["u7", 8])])
    assert db.store.sql('SELECT "name", "seen" FROM "users" WHERE "id" IN (5, 6, 8) '
                        'ORDER BY "id"') == [("other", 0), ("u6", 1), ("u8", 0)]
