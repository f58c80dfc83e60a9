"""The compiler of bounded plans to SQL, without a database: statement shapes per dialect,
bound values, quoted names, and how operations are read back from the fetched rows.
(tests/runtime/test_compiled_queries.py runs every app's statements on SQLite and
PostgreSQL against the interpreter.)"""
from __future__ import annotations

from decimal import Decimal

import pytest

from piql.planner.compile import (
    CompiledQuery, Dialect, OpsSource, StoreLayout, TableLayout, UncompilablePlan, compile_plan,
)
from piql.query_block import Literal, Param
from tests.conftest import plan_text

SOCIAL = """
CREATE TABLE users (id BIGINT, name VARCHAR, PRIMARY KEY (id));
CREATE TABLE follows (follower BIGINT NOT NULL, followee BIGINT NOT NULL,
  PRIMARY KEY (follower, followee),
  FOREIGN KEY (follower) REFERENCES users (id),
  FOREIGN KEY (followee) REFERENCES users (id)) WITH CARDINALITY (followee, 50);
CREATE TABLE posts (id BIGINT, author BIGINT NOT NULL, createdAt BIGINT, body VARCHAR,
  kind VARCHAR, PRIMARY KEY (id), FOREIGN KEY (author) REFERENCES users (id))
  WITH CARDINALITY (id, 100) PER (author);
"""
QUERIES = """
-- name: byId
SELECT name FROM users WHERE id = <u>
-- name: newest
SELECT id, body FROM posts WHERE author = <u> ORDER BY createdAt DESC LIMIT 3
-- name: timeline
SELECT p.id, p.body FROM follows f, posts p
WHERE f.follower = <u> AND p.author = f.followee ORDER BY p.createdAt DESC LIMIT 5
-- name: named
SELECT p.body, u.name FROM posts p, users u WHERE p.id = <p> AND u.id = p.author
  AND p.kind = 'it''s' AND u.id >= <p>
-- name: newest_of_name
SELECT p.id, p.body FROM users u, posts p WHERE u.id = <u> AND p.author = u.id
  ORDER BY p.createdAt DESC LIMIT 3
-- name: latest_of_name
SELECT p.id, p.body FROM users u, posts p WHERE u.id = <u> AND p.author = u.id
  ORDER BY p.createdAt DESC LIMIT 1
-- name: counted
SELECT kind, COUNT(*) AS n, SUM(createdAt) AS s FROM posts WHERE author = <u> GROUP BY kind
-- name: total
SELECT COUNT(*) AS n, AVG(createdAt) AS a FROM posts WHERE author = <u>
-- name: followees
SELECT u.name FROM follows f, users u WHERE f.follower = <u> AND u.id = f.followee
"""
PLAN = plan_text(SOCIAL, QUERIES)
LAYOUT = StoreLayout(tuple(
    TableLayout(t.name, t.column_names, t.primary_key) for t in PLAN.catalog.tables))


def compiled(name: str, dialect: str = "sqlite") -> CompiledQuery:
    query = PLAN.query(name)
    return compile_plan(query.physical, dialect, LAYOUT, query=query.query.block)


def test_a_key_lookup_is_one_plain_statement_counted_by_its_rows():
    sqlite, postgres = compiled("byId"), compiled("byId", "postgres")
    assert sqlite.sql == ('SELECT "users"."name" AS "_o1" FROM "users" AS "users" NOT INDEXED '
                          'WHERE "users"."id" = ?')
    assert postgres.sql.endswith('FROM "users" AS "users" WHERE "users"."id" = %s')
    assert sqlite.ops_source == OpsSource.ROWS and sqlite.parameters == (Param("u"),)
    assert sqlite.answer([]) == ([], 1)  # a lookup that finds nothing still counts one
    assert sqlite.answer([("ann",)]) == ([("ann",)], 1)


def test_an_ordered_stop_after_names_the_index_and_counts_fetches():
    statement = compiled("newest")
    index = PLAN.query("newest").physical.accesses[0].index.name
    assert f'INDEXED BY "{index}"' in statement.sql
    assert statement.sql.endswith('ORDER BY "posts"."createdAt" DESC, "posts"."id" DESC LIMIT 3')
    assert statement.fetches  # body is not in the index: one fetch per entry
    assert statement.answer([(1, "a"), (2, "b")]) == ([(1, "a"), (2, "b")], 4)


def test_postgres_keeps_sqlites_order_of_nulls_except_on_the_clustered_key():
    statement = compiled("newest", "postgres")
    assert statement.sql.endswith(
        'ORDER BY "posts"."createdAt" DESC NULLS LAST, "posts"."id" DESC LIMIT 3')


def test_merge_join_is_a_correlated_stop_after_per_probe():
    sqlite, postgres = compiled("timeline"), compiled("timeline", "postgres")
    assert sqlite.ops_source == OpsSource.COLUMN
    assert 'LEFT JOIN "posts" AS "p" NOT INDEXED ON "p"."id" IN (SELECT' in sqlite.sql
    assert 'ORDER BY "_piql_q' in sqlite.sql and "LIMIT 5)" in sqlite.sql
    assert "LEFT JOIN LATERAL (SELECT" in postgres.sql
    assert 'WHERE "p"."author" = "_piql_l0"' in postgres.sql and "LIMIT 5) AS" in postgres.sql
    assert "CROSS JOIN" not in sqlite.sql and " JOIN " in sqlite.sql


def test_values_are_bound_in_placeholder_order_never_written():
    for dialect in Dialect:
        statement = compiled("named", dialect)
        assert "it's" not in statement.sql and "'" not in statement.sql
        mark = "?" if dialect == Dialect.SQLITE else "%s"
        assert statement.sql.count(mark) == len(statement.parameters) >= 3
        assert set(statement.parameters) == {Param("p"), Literal("it's", "'it''s'")}
        assert [statement.arguments({"p": 7})[i] for i, p in enumerate(statement.parameters)
                if p == Param("p")] == [7] * statement.parameters.count(Param("p"))


def test_general_shape_reads_ops_and_the_empty_answer_from_its_last_columns():
    statement = compiled("timeline")
    assert statement.answer([(None, None, None, 2)]) == ([], 2)
    assert statement.answer([("x", "y", 1, 2)]) == ([("x", "y")], 2)


def test_lookups_come_back_flat_with_each_rows_operations():
    statement = compiled("named").counting
    assert statement is not None
    assert statement.ops_source == OpsSource.PER_ROW and "WITH" not in statement.sql
    assert statement.answer([]) == ([], 1)  # the first lookup found nothing
    assert statement.answer([("x", "y", 0, 1)]) == ([], 1)  # the post failed its filter
    assert statement.answer([("x", "y", 1, 2)]) == ([("x", "y")], 2)


def test_one_row_then_lookups_is_the_querys_own_join_counted_by_its_row():
    statement = compiled("named")
    assert statement.ops_source == OpsSource.UNIQUE
    assert "LEFT" not in statement.sql and "CASE" not in statement.sql
    assert " CROSS JOIN " in statement.sql  # SQLite keeps the plan's join order
    assert statement.answer([("x", "y")]) == ([("x", "y")], 2)  # both probes found a row
    assert statement.answer([]) == ([], None)  # open: the counting statement tells
    ran = []

    def execute(sql, values):
        ran.append(sql)
        return [] if sql == statement.sql else [("x", "y", 0, 2)]
    assert statement.run(execute, {"p": 1}) == ([], 2)  # the row failed a filter
    assert ran == [statement.sql, statement.counting.sql]
    postgres = compiled("named", "postgres")
    assert postgres.ops_source == OpsSource.UNIQUE and "LATERAL" not in postgres.sql


def test_one_row_then_k_in_order_is_flat():
    statement = compiled("newest_of_name")
    assert statement.ops_source == OpsSource.UNIQUE and "WITH" not in statement.sql
    # the user's probe, then each post read from the author index and fetched
    assert statement.answer([(1, "a", 1), (2, "b", 2)]) == ([(1, "a"), (2, "b")], 1 + 2 * 2)
    # the user found, no post: the stop-after's probe counts one, no counting statement
    assert statement.answer([(None, None, None)]) == ([], 1 + 1)
    assert statement.answer([]) == ([], None)  # no such user: the counting statement tells
    postgres = compiled("newest_of_name", "postgres")
    assert "LEFT JOIN LATERAL" in postgres.sql and "LIMIT 3" in postgres.sql


def test_one_row_then_the_first_in_order_is_a_scalar_subquery_on_sqlite():
    """A stop-after of one row by a one-column key is ``key = (SELECT ... LIMIT 1)``, which
    SQLite runs without the ephemeral table of an ``IN`` list; k > 1 keeps the list."""
    latest, newest = compiled("latest_of_name"), compiled("newest_of_name")
    assert latest.ops_source == OpsSource.UNIQUE
    assert 'ON "p"."id" = (SELECT' in latest.sql and "IN (SELECT" not in latest.sql
    assert 'ON "p"."id" IN (SELECT' in newest.sql and "LIMIT 3)" in newest.sql
    assert latest.answer([(1, "a", 1)]) == ([(1, "a")], 1 + 2)
    assert latest.answer([(None, None, None)]) == ([], 1 + 1)  # the user found, no post
    # at most one row: not sorted again after the subquery's ordered read
    assert latest.sql.count("ORDER BY") == 1 and newest.sql.count("ORDER BY") == 2


def test_rows_that_all_cost_the_same_carry_no_operation_column():
    """Several rows from the first access, each probed once: every row costs one read
    and one probe, so the rows fetched give the operations (``kept_ops``)."""
    for dialect in Dialect:
        statement = compiled("followees", dialect)
        assert statement.ops_source == OpsSource.PER_ROW and statement.kept_ops == 2
        assert '"_ops"' not in statement.sql
        assert statement.answer([]) == ([], 1)  # the follower follows nobody: one read
        # the second followee's user was not found: three reads, three probes
        assert statement.answer([("a", 1), (None, 0), ("c", 1)]) == ([("a",), ("c",)], 6)
    assert compiled("named").counting.kept_ops is None  # a filter before the probe


def test_grouped_single_access_returns_what_it_read_beside_each_group():
    statement = compiled("counted")
    assert statement.ops_source == OpsSource.SCANNED
    assert "SUM(COUNT(*)) OVER ()" in statement.sql
    assert statement.fetches  # the index on author holds no kind: 3 entries, 3 fetches
    assert statement.answer([("a", 2, 10, 3), (None, 1, 5, 3)]) == (
        [("a", 2, 10), (None, 1, 5)], 6)
    assert statement.answer([]) == ([], 1)


def test_postgres_numeric_sums_come_back_as_integers_and_averages_as_reals():
    statement = compiled("counted", "postgres")
    assert statement.integral == (2,)
    rows, _ = statement.answer([("a", 2, Decimal(10), Decimal(3))])
    assert rows == [("a", 2, 10)] and isinstance(rows[0][2], int)
    assert "CAST(AVG(" in compiled("total", "postgres").sql


def test_an_aggregate_of_nothing_answers_one_row():
    statement = compiled("total")
    assert statement.empty == (0, None)
    assert statement.answer([]) == ([(0, None)], 1)


ODD = """
CREATE TABLE "we%ird" ("gr""oup" BIGINT PRIMARY KEY, "%s" VARCHAR, "select" BIGINT);
"""


def test_every_name_is_quoted_and_percent_signs_are_escaped_for_psycopg():
    plan = plan_text(ODD, '-- name: q\nSELECT "%s", "select" FROM "we%ird" WHERE "gr""oup" = <g>\n')
    layout = StoreLayout((TableLayout("we%ird", ("gr\"oup", "%s", "select"), ("gr\"oup",)),))
    physical = plan.query("q").physical
    sqlite = compile_plan(physical, "sqlite", layout)
    postgres = compile_plan(physical, "postgres", layout)
    assert '"we%ird"."%s"' in sqlite.sql and '"gr""oup" = ?' in sqlite.sql
    assert '"we%%ird"."%%s"' in postgres.sql and '"gr""oup" = %s' in postgres.sql
    assert '"select"' in sqlite.sql


def test_a_table_the_layout_does_not_know_is_refused():
    with pytest.raises(UncompilablePlan, match="no table users"):
        compile_plan(PLAN.query("byId").physical, "sqlite", StoreLayout(()))
