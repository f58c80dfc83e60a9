"""Issue 14's constructs compiled without a database: the general shape, what is bound,
and what PostgreSQL refuses where its types would compute otherwise than SQLite.
(tests/runtime/test_served_queries.py runs them on both stores against the interpreter.)"""
from __future__ import annotations

import pytest

from piql.planner.compile import OpsSource, UncompilablePlan, compile_plan
from piql.planner.store_layout import store_layout
from piql.query_block import Literal, Param
from tests.conftest import plan_text

SCHEMA = """
CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR, team VARCHAR);
CREATE TABLE posts (id BIGINT PRIMARY KEY, author BIGINT, score BIGINT, weight DOUBLE,
  title VARCHAR, FOREIGN KEY (author) REFERENCES users (id))
  WITH CARDINALITY (id, 4) PER (author);
"""
QUERIES = """
-- name: filtered
SELECT id, score / 3 AS q, score % 3 AS m, LOWER(title) AS t FROM posts
WHERE author = <a> AND title LIKE '%c%' AND score <> 2
-- name: listed
SELECT id, title FROM posts WHERE id IN (<a>, <b>, 7)
-- name: page
-- max: n 3
SELECT DISTINCT score FROM posts WHERE author = <a> ORDER BY score LIMIT <n> OFFSET 1
-- name: either
SELECT id FROM posts WHERE id = <a> UNION SELECT id FROM posts WHERE author = <b>
-- name: extended
SELECT p.id, u.name FROM posts p LEFT JOIN users u ON u.id = p.author WHERE p.id = <a>
-- name: real_text
SELECT CAST(weight AS TEXT) AS w FROM posts WHERE id = <a>
-- name: named
SELECT id FROM users WHERE id = <a> AND LOWER(name) = LOWER(<n>)
"""
PLAN = plan_text(SCHEMA, QUERIES)
LAYOUT = store_layout(PLAN)


def compiled(name: str, dialect: str = "sqlite"):
    query = PLAN.query(name)
    return compile_plan(query.physical, dialect, LAYOUT, query=query.query.block)


def test_filters_and_expressions_are_sql_counted_before_filtering():
    sqlite, postgres = compiled("filtered"), compiled("filtered", "postgres")
    assert sqlite.ops_source == OpsSource.COLUMN
    assert "LIKE (? || '')" in sqlite.sql  # planned once: see compile_exprs
    assert '<> ?' in sqlite.sql and " / ?" in sqlite.sql and "LOWER(" in sqlite.sql
    # PostgreSQL: a zero divisor is NULL as in SQLite, MOD (psycopg reads % itself), ASCII LOWER
    assert "NULLIF(%s, 0)" in postgres.sql and "MOD(" in postgres.sql
    assert "TRANSLATE(" in postgres.sql.upper() and "%%" not in postgres.sql
    assert Literal(value="%c%", sql="'%c%'") in sqlite.parameters  # the pattern is bound
    # the fetched rows end with (position, ops): the empty answer is one NULL position
    assert sqlite.answer([(None, None, None, None, None, 3)]) == ([], 3)


def test_an_in_list_is_a_cte_of_its_distinct_values_each_a_probe():
    statement = compiled("listed")
    assert "UNION ALL" in statement.sql and "DISTINCT" in statement.sql
    assert statement.parameters.count(Param("a")) == 1
    assert statement.arguments({"a": 1, "b": 2}) == (1, 2, 7)
    postgres = compiled("listed", "postgres")
    assert "CAST(%s AS BIGINT)" in postgres.sql  # the key column's type, NULLs included


def test_distinct_offset_and_limit_parameter_keep_positions_after_distinct():
    statement = compiled("page")
    assert "SELECT DISTINCT" in statement.sql
    assert '"_pos" > 1' in statement.sql and '"_pos" <= ? + 1' in statement.sql
    assert statement.arguments({"a": 5, "n": 2}) == (5, 2)


def test_union_and_left_join_compile_in_both_dialects():
    for dialect in ("sqlite", "postgres"):
        union = compiled("either", dialect)
        assert "GROUP BY" in union.sql and "MIN(" in union.sql
        left = compiled("extended", dialect)
        assert "ROW_NUMBER() OVER ()" in left.sql and "LEFT JOIN" in left.sql


def test_postgres_refuses_what_its_types_would_compute_otherwise():
    assert compiled("real_text").sql  # SQLite's text of a REAL is the interpreter's
    with pytest.raises(UncompilablePlan, match="PostgreSQL"):
        compiled("real_text", "postgres")


def test_postgres_reads_a_parameter_as_text_only_for_text_values():
    """``LOWER(<n>)``: the parameter is cast to TEXT on PostgreSQL, and the statement
    names it, so that the runtime answers a value of another type with the interpreter
    (PostgreSQL's text of a REAL is not SQLite's)."""
    postgres, sqlite = compiled("named", "postgres"), compiled("named")
    assert "CAST(%s AS TEXT)" in postgres.sql and postgres.text_parameters == ("n",)
    assert sqlite.text_parameters == () and "LOWER(?)" in sqlite.sql
