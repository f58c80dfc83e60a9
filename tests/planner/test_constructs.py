"""Issue 14: bounded plans for the everyday SQL constructs, each with its level and bound.

The blog schema of the constructs oracle app (tests/oracle/apps/constructs): posts has at
most 4 rows per author, comments any number per post, and users a unique email with NULLs
equal. Runtime answers of the same constructs are checked in tests/runtime/test_constructs.py
and by the oracle harness.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from piql.planner.compile import (
    OpsSource, StoreLayout, TableLayout, UncompilablePlan, compile_plan,
)
from piql.planner.physical import AccessPath, AnyOf, NullKey
from piql.query_block import Compare, Like
from tests.conftest import plan_text

SCHEMA = (Path(__file__).parents[1] / "oracle" / "apps" / "constructs" / "schema.sql").read_text()


def planned(sql: str, options: str = ""):
    plan = plan_text(SCHEMA, f"-- name: q\n{options}{sql}\n")
    return plan.query("q")


def refusal(sql: str):
    """The ``unbounded`` diagnostic of a query that must be unbounded."""
    query = planned(sql)
    assert query.level == "unbounded", sql
    (found,) = [d for d in query.diagnostics if d.code == "unbounded"]
    return found


def test_residual_filters_keep_the_bound_of_the_access():
    plain = planned("SELECT id FROM posts WHERE author = <a>")
    query = planned("SELECT id FROM posts WHERE author = <a> AND score <> 2 AND title LIKE '%c' "
                    "AND LENGTH(title) = 1 AND score * 2 + 1 > <m>")
    assert (query.level, query.ops_bound) == ("SI-1", 8)
    assert plain.ops_bound == 4  # covering: the filters' columns need the row fetched
    access = query.physical.accesses[0]
    assert access.key_columns == ("author",)
    kinds = [type(c) for c in access.residual]
    assert Compare in kinds and Like in kinds and len(access.residual) == 4
    assert "Select" in "\n".join(query.physical.root.lines())


def test_a_filter_alone_does_not_bound_a_scan_and_the_reason_says_so():
    query = planned("SELECT id FROM posts WHERE title LIKE '%a'")
    assert query.level == "unbounded"
    (unbounded,) = [d for d in query.diagnostics if d.code == "unbounded"]
    assert "title LIKE '%a' only filters the rows read" in unbounded.message
    assert "restrict posts by its key" in unbounded.hint
    views = [d for d in query.diagnostics if d.code == "view-rejected"]
    assert views and all("LIKE is not supported in view maintenance" in d.message for d in views)


def test_a_filter_stops_limit_from_cutting_the_scan():
    query = planned("SELECT id FROM comments WHERE post = <p> AND body <> 'x' ORDER BY id LIMIT 3")
    assert query.level == "unbounded"
    (unbounded,) = [d for d in query.diagnostics if d.code == "unbounded"]
    assert "body <> 'x' filters rows after the scan" in unbounded.message


def test_expressions_distinct_and_having_are_local_work_on_bounded_rows():
    expressions = planned("SELECT id, score * 2 + 1 AS s, COALESCE(topic, 'none') AS t, "
                          "CASE WHEN score > 2 THEN 'hi' ELSE 'lo' END AS band, LOWER(title) AS l, "
                          "CAST(score AS REAL) AS r FROM posts WHERE author = <a>")
    distinct = planned("SELECT DISTINCT topic FROM posts WHERE author = <a>")
    having = planned("SELECT topic, COUNT(*) AS n FROM posts WHERE author = <a> GROUP BY topic "
                     "HAVING COUNT(*) > 1")
    for query in (expressions, distinct, having):
        assert (query.level, query.ops_bound) == ("SI-1", 8), query.name
    assert "Distinct topic" in "\n".join(distinct.physical.root.lines())
    assert "Having COUNT(*) > 1" in "\n".join(having.physical.root.lines())


def test_distinct_stops_limit_from_cutting_the_scan():
    query = planned("SELECT DISTINCT body FROM comments WHERE post = <p> ORDER BY body LIMIT 2")
    assert query.level == "unbounded"
    assert any("DISTINCT" in d.message for d in query.diagnostics if d.code == "unbounded")


def test_is_null_is_a_key_binding_on_a_unique_key_with_nulls_equal():
    query = planned("SELECT id, name FROM users WHERE email IS NULL")
    assert (query.level, query.ops_bound) == ("SI-1", 2)  # one index entry, one fetch
    access = query.physical.accesses[0]
    assert access.key_columns == ("email",) and access.key_values == (NullKey(),)
    assert access.rows_per_probe == 1


def test_is_null_is_a_residual_filter_after_a_bounded_read():
    query = planned("SELECT id FROM posts WHERE author = <a> AND topic IS NULL")
    assert (query.level, query.ops_bound) == ("SI-1", 4)
    assert planned("SELECT id FROM posts WHERE topic IS NOT NULL").level == "unbounded"


def test_is_null_does_not_make_a_nulls_distinct_unique_key_a_bound():
    schema = "CREATE TABLE u (id BIGINT PRIMARY KEY, email VARCHAR, UNIQUE (email));"
    plan = plan_text(schema, "-- name: q\nSELECT id FROM u WHERE email IS NULL\n")
    assert plan.query("q").level == "unbounded"


def test_in_list_on_the_key_is_n_lookups():
    query = planned("SELECT id, title FROM posts WHERE id IN (<a>, <b>, <c>)")
    assert (query.level, query.ops_bound) == ("SI-0", 3)
    access = query.physical.accesses[0]
    assert access.path == AccessPath.PRIMARY and access.fanout == 3
    assert isinstance(access.key_values[0], AnyOf)


def test_or_of_key_equalities_on_one_column_is_an_in_list():
    query = planned("SELECT id, author FROM posts WHERE author = <a> OR author = <b>")
    assert (query.level, query.ops_bound) == ("SI-1", 8)  # 2 probes of at most 4 rows
    assert query.physical.accesses[0].fanout == 2
    mixed = planned("SELECT id FROM posts WHERE author = <a> OR score = <b>")
    assert mixed.level == "unbounded"


def test_in_list_with_order_by_limit_stops_each_probe_and_merges():
    query = planned("SELECT post, id FROM comments WHERE post IN (<p>, <q>) "
                    "ORDER BY id DESC LIMIT 3")
    assert (query.level, query.ops_bound) == ("SI-0", 6)
    access = query.physical.accesses[0]
    assert access.stop_after == 3 and access.fanout == 2 and query.physical.merge_at == 0


def test_limit_offset_is_bounded_as_limit_n_plus_m():
    query = planned("SELECT id FROM comments WHERE post = <p> ORDER BY id LIMIT 2 OFFSET 5")
    assert (query.level, query.ops_bound) == ("SI-0", 7)
    assert query.physical.accesses[0].stop_after == 7
    assert query.physical.rows_bound == 2


def test_limit_parameter_is_bounded_by_its_declared_maximum():
    query = planned("SELECT id FROM comments WHERE post = <p> ORDER BY id LIMIT <n>",
                    "-- max: n 20\n")
    assert (query.level, query.ops_bound) == ("SI-0", 20)
    assert [(p.name, p.declared_type) for p in query.params] == [("p", "BIGINT"),
                                                                  ("n", "BIGINT")]


def test_limit_parameter_without_a_maximum_is_unbounded_with_the_fix():
    query = planned("SELECT id FROM comments WHERE post = <p> ORDER BY id LIMIT <n>")
    assert query.level == "unbounded"
    (reason,) = query.diagnostics
    assert reason.message == "LIMIT <n> is not supported by piql"
    assert "-- max: n 100" in reason.hint


@pytest.mark.parametrize("sql", [
    "SELECT id FROM posts WHERE author = <a> AND score <> 2",
    "SELECT DISTINCT topic FROM posts WHERE author = <a>",
    "SELECT id, score + 1 AS s FROM posts WHERE author = <a>",
    "SELECT id FROM posts WHERE id IN (<a>, <b>)",
    "SELECT id, name FROM users WHERE email IS NULL",
    "SELECT id FROM comments WHERE post = <p> ORDER BY id LIMIT 2 OFFSET 1",
    "SELECT id, title FROM posts WHERE title LIKE 'ab%' ORDER BY title LIMIT 3",
    "SELECT id, name FROM users WHERE LOWER(email) = <e>",
])
def test_compile_expresses_the_new_constructs_in_the_general_shape(sql):
    """Each compiles to one statement (tests/runtime/test_served_queries.py runs them
    against the interpreter); without declared types PostgreSQL's refuses expressions."""
    query = planned(sql)
    catalog = plan_text(SCHEMA, "").catalog
    layout = StoreLayout(tuple(TableLayout(t.name, t.column_names, t.primary_key)
                               for t in catalog.tables))
    statement = compile_plan(query.physical, "sqlite", layout)
    assert statement.ops_source == OpsSource.COLUMN and statement.sql.startswith("WITH")


def test_compile_refuses_distinct_ordered_by_a_column_it_drops():
    query = planned("SELECT DISTINCT topic FROM posts WHERE author = <a> ORDER BY score")
    catalog = plan_text(SCHEMA, "").catalog
    layout = StoreLayout(tuple(TableLayout(t.name, t.column_names, t.primary_key)
                               for t in catalog.tables))
    with pytest.raises(UncompilablePlan, match="DISTINCT"):
        compile_plan(query.physical, "sqlite", layout)


def test_views_refuse_constructs_they_do_not_maintain():
    query = planned("SELECT DISTINCT topic FROM posts")
    assert query.level == "unbounded"
    messages = [d.message for d in query.diagnostics if d.code == "view-rejected"]
    assert "no scale-independent view: DISTINCT is not supported in view maintenance" in messages


def test_having_on_an_aggregate_view_filters_its_rows():
    query = planned("SELECT COUNT(*) AS n FROM comments WHERE post = <p> HAVING COUNT(*) > 1")
    assert (query.level, query.ops_bound) == ("SI-2", 1)
    assert query.rewritten_sql.endswith("WHERE post = <p> AND cnt > 1")
    every = planned("SELECT topic, COUNT(*) AS n FROM posts GROUP BY topic HAVING COUNT(*) > 1")
    assert every.level == "unbounded"  # a view of every group: reading it is unbounded
    assert any("GROUP BY posts.topic is not fixed by a parameter" in d.message
               for d in every.diagnostics if d.code == "view-rejected")


def test_left_join_by_key_is_bounded_like_the_inner_join():
    query = planned("SELECT p.id, u.name FROM posts p LEFT JOIN users u ON u.id = p.author "
                    "WHERE p.id = <a>")
    assert (query.level, query.ops_bound) == ("SI-0", 2)
    left = query.physical.accesses[1]
    assert left.join == "left" and left.key_columns == ("id",) and left.rows_per_probe == 1


def test_left_join_conditions_in_on_and_in_where_are_kept_apart():
    query = planned("SELECT u.id FROM users u LEFT JOIN posts p ON p.author = u.id "
                    "WHERE u.id = <a> AND p.id IS NULL")
    assert (query.level, query.ops_bound) == ("SI-1", 5)
    left = query.physical.accesses[1]
    assert [str(c) for c in left.post] == ["p.id IS NULL"] and left.residual == ()


def test_exists_is_a_semi_join_that_stops_after_the_first_match():
    query = planned("SELECT id FROM posts p WHERE author = <a> AND "
                    "EXISTS (SELECT 1 FROM comments c WHERE c.post = p.id)")
    assert (query.level, query.ops_bound) == ("SI-1", 8)  # 4 posts + 4 probes of one row
    semi = query.physical.accesses[1]
    assert semi.join == "semi" and semi.stop_after == 1 and semi.probes == 4


def test_not_exists_and_in_select_are_anti_and_semi_joins():
    anti = planned("SELECT id FROM posts p WHERE author = <a> AND NOT EXISTS "
                   "(SELECT * FROM comments WHERE post = p.id AND id > 2)")
    assert (anti.level, anti.ops_bound) == ("SI-1", 8)
    assert anti.physical.accesses[1].join == "anti"
    semi = planned("SELECT id FROM posts WHERE id = <a> AND author IN "
                   "(SELECT id FROM users WHERE team = 'a')")
    assert (semi.level, semi.ops_bound) == ("SI-0", 2)


def test_a_semi_join_with_a_filter_on_unbounded_rows_is_unbounded():
    query = planned("SELECT id FROM posts p WHERE author = <a> AND "
                    "EXISTS (SELECT 1 FROM comments c WHERE c.post = p.id AND c.body <> 'x')")
    assert query.level == "unbounded"


@pytest.mark.parametrize("sql, construct", [
    ("SELECT id FROM posts WHERE id = <a> AND author NOT IN (SELECT id FROM users)",
     "NOT IN (SELECT ...)"),
    ("SELECT id FROM posts WHERE id = <a> OR EXISTS (SELECT 1 FROM users)", "EXISTS"),
    ("SELECT id FROM posts p WHERE id = <a> AND EXISTS (SELECT 1 FROM comments c "
     "JOIN users u ON u.id = c.author WHERE c.post = p.id)", "EXISTS with a join inside"),
])
def test_semi_joins_outside_their_shape_are_refused_with_a_fix(sql, construct):
    query = planned(sql)
    assert query.level == "unbounded"
    assert any(d.message == f"{construct} is not supported by piql" and d.hint
               for d in query.diagnostics), query.diagnostics


def test_union_is_the_sum_of_its_branches_bounds():
    union = planned("SELECT id, title FROM posts WHERE id = <a> "
                    "UNION SELECT id, title FROM posts WHERE author = <b>")
    assert (union.level, union.ops_bound) == ("SI-1", 9)  # 1 + (4 index entries + 4 rows)
    assert len(union.physical.branches) == 2 and union.physical.rows_bound == 5
    paged = planned("SELECT id FROM posts WHERE id IN (<a>, <b>) UNION ALL "
                    "SELECT id FROM users WHERE id = <c> ORDER BY id DESC LIMIT 2 OFFSET 1")
    assert (paged.level, paged.ops_bound, paged.physical.rows_bound) == ("SI-0", 3, 2)


def test_an_unbounded_union_branch_is_named():
    query = planned("SELECT id FROM posts WHERE id = <a> UNION SELECT id FROM posts "
                    "WHERE title = 'x'")
    assert query.level == "unbounded"
    (reason,) = [d for d in query.diagnostics if d.code == "unbounded"]
    assert reason.message.startswith("no bounded plan: in branch 2 of the UNION: ")


def test_like_prefix_is_an_exact_index_range_that_limit_can_stop():
    query = planned("SELECT id, title FROM posts WHERE title LIKE 'ab%' ORDER BY title LIMIT 3")
    assert (query.level, query.ops_bound) == ("SI-1", 3)
    access = query.physical.accesses[0]
    assert access.index is not None and access.index.columns == ("title",)
    assert [(p.op, p.right.value) for p in access.range] == [(">=", "ab"), ("<", "ac")]
    assert access.residual == () and access.stop_after == 3  # the range is the LIKE


def test_like_prefix_ranges_the_column_after_a_bound_prefix():
    query = planned("SELECT id, body FROM comments WHERE post = <p> AND body LIKE 'x%' "
                    "ORDER BY body DESC LIMIT 2")
    assert (query.level, query.ops_bound) == ("SI-1", 2)
    access = query.physical.accesses[0]
    assert access.key_columns == ("post",) and access.index.columns == ("post", "body")
    assert [str(p) for p in access.range] == ["comments.body >= 'x'", "comments.body < 'y'"]
    bounded = planned("SELECT id FROM posts WHERE author = <a> AND title LIKE 'c%'")
    assert (bounded.level, bounded.ops_bound) == ("SI-1", 4)  # the bound of author = <a>
    assert bounded.physical.accesses[0].range and not bounded.physical.accesses[0].residual


def test_like_with_other_wildcards_reads_the_prefix_range_and_keeps_the_filter():
    query = planned("SELECT id FROM posts WHERE author = <a> AND title LIKE 'x_y%z'")
    assert (query.level, query.ops_bound) == ("SI-1", 4)
    access = query.physical.accesses[0]
    assert [p.right.value for p in access.range] == ["x", "y"]
    assert [str(c) for c in access.residual] == ["posts.title LIKE 'x_y%z'"]
    unbounded = refusal("SELECT id FROM posts WHERE title LIKE 'a_b%' ORDER BY title LIMIT 3")
    assert "title LIKE 'a_b%' filters rows after the scan" in unbounded.message


def test_like_without_wildcards_is_an_equality_and_a_unique_key_bounds_it():
    query = planned("SELECT id FROM users WHERE email LIKE 'b@x'")
    assert (query.level, query.ops_bound) == ("SI-1", 1)
    assert query.physical.accesses[0].key_columns == ("email",)


@pytest.mark.parametrize("sql", [
    "SELECT id FROM posts WHERE title LIKE 'a%'",  # a range, but nothing bounds it
    "SELECT id FROM posts WHERE title LIKE '%a' ORDER BY title LIMIT 3",  # no prefix
    "SELECT id FROM posts WHERE score LIKE '1%' ORDER BY score LIMIT 3",  # not a text column
    "SELECT id FROM posts WHERE title NOT LIKE 'a%' ORDER BY title LIMIT 3",
])
def test_like_that_is_no_bounded_range_stays_unbounded_with_a_reason(sql):
    unbounded = refusal(sql)
    assert "LIKE" in unbounded.message and unbounded.hint


TEAM_JOIN = "FROM posts p JOIN users u ON u.id = p.author "


def test_a_row_view_keys_on_an_in_list_column_and_computes_projected_expressions():
    query = planned("SELECT p.id, COALESCE(p.title, u.name) AS label, p.score * 2 + 1 AS s "
                    + TEAM_JOIN + "WHERE u.team IN (<t>, <v>) ORDER BY p.id LIMIT 5")
    assert (query.level, query.ops_bound) == ("SI-2", 10)  # 2 probes, each stops after 5
    (view,) = query.views
    access = query.physical.accesses[0]
    assert access.table == view and access.key_columns == ("team",)
    assert isinstance(access.key_values[0], AnyOf) and access.fanout == 2
    # the view keeps the columns; the expressions are computed on its rows
    assert "COALESCE(title, name) AS label, ((score * 2) + 1) AS s" in query.rewritten_sql
    assert "IN (<t>, <v>)" in query.rewritten_sql


def test_an_aggregate_view_keeps_its_state_and_computes_expressions_over_it():
    query = planned("SELECT COALESCE(SUM(weight), 0) AS w, COUNT(*) - COUNT(weight) AS u "
                    "FROM comments WHERE post = <p>")
    assert (query.level, query.ops_bound) == ("SI-2", 1)
    assert "COALESCE(sum_weight, 0) AS w, (cnt - cnt_weight) AS u" in query.rewritten_sql
    grouped = planned("SELECT u.team, COUNT(*) AS n, CASE WHEN COUNT(*) > 1 THEN 'many' "
                      "ELSE 'one' END AS band " + TEAM_JOIN
                      + "WHERE u.team IN ('red', 'blue') GROUP BY u.team")
    assert (grouped.level, grouped.ops_bound) == ("SI-2", 2)  # one view row per value


def test_views_refuse_what_they_cannot_maintain_exactly_with_a_reason():
    summed = planned("SELECT COUNT(*) AS n FROM comments WHERE post IN (<p>, <q>)")
    assert summed.level == "unbounded"
    reasons = {d.message: d.hint for d in summed.diagnostics if d.code == "view-rejected"}
    (message, hint), = [(m, h) for m, h in reasons.items() if "scale-independent" in m]
    assert "aggregate is over an IN list on comments.post" in message
    assert hint.startswith("GROUP BY comments.post")
    for sql, construct in [
        ("SELECT id FROM comments WHERE author = <a> AND body LIKE 'x%'", "LIKE"),
        ("SELECT SUM(weight * 2) AS w FROM comments WHERE post = <p>", "the expression"),
        ("SELECT id FROM comments WHERE author = <a> ORDER BY -id LIMIT 2", "the expression"),
        ("SELECT id FROM comments WHERE author NOT IN (<a>, <b>)", "IN (list)"),
    ]:
        query = planned(sql)
        assert query.level == "unbounded", sql
        messages = [d.message for d in query.diagnostics if d.code == "view-rejected"]
        assert any(f"no scale-independent view: {construct}" in m for m in messages), messages


def test_a_declared_unique_expression_index_bounds_an_equality_on_its_expression():
    query = planned("SELECT id, name FROM users WHERE LOWER(email) = LOWER(<e>)")
    assert (query.level, query.ops_bound) == ("SI-1", 2)  # one entry, one row fetched
    (index,) = query.indexes
    assert (index.name, index.declared, index.unique) == ("users_email_lower", True, True)
    assert index.columns == ("LOWER(email)",) and str(index.expressions[0]) == "LOWER(email)"
    access = query.physical.accesses[0]
    assert access.key_columns == ("LOWER(email)",) and access.residual == ()


def test_an_expression_equality_with_limit_gets_a_new_expression_index():
    query = planned("SELECT post, id FROM comments WHERE UPPER(body) = <w> ORDER BY post, id "
                    "LIMIT 2")
    assert (query.level, query.ops_bound) == ("SI-1", 4)
    (index,) = query.indexes
    assert index.columns == ("UPPER(body)", "post", "id") and not index.declared
    assert index.name == "idx_comments_upper_body_post_id"


def test_an_expression_without_an_index_that_bounds_it_is_unbounded_with_the_fix():
    unbounded = refusal("SELECT id FROM users WHERE UPPER(name) = <n>")
    assert "UPPER(users.name) = <n>" in unbounded.message
    assert "CREATE UNIQUE INDEX ON users (upper(name))" in unbounded.hint
    other = refusal("SELECT id FROM users WHERE LENGTH(name) = <n>")  # not indexable
    assert "only filters the rows read" in other.message


def test_the_store_keeps_a_declared_unique_expression_index_to_enforce_it():
    from tests.conftest import plan_text

    plan = plan_text(SCHEMA, "-- name: q\nSELECT id FROM users WHERE id = <a>\n")
    (check,) = [i for i in plan.check_indexes if i.name == "users_email_lower"]
    assert check.unique and check.purpose == "unique"
    from piql.report.ddl import render
    assert 'CREATE UNIQUE INDEX "users_email_lower" ON "users"(LOWER("email"))' in \
        render(plan, "postgres")


WINDOWED = """
CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE posts (id BIGINT PRIMARY KEY, author BIGINT NOT NULL, at BIGINT TEMPORAL,
  title VARCHAR, FOREIGN KEY (author) REFERENCES users (id));
"""


def test_a_tuple_window_keeps_the_fragment_and_the_rest_over_it_may_use_any_construct():
    from tests.conftest import plan_text

    queries = """
-- name: labelled
SELECT p.id, COALESCE(p.title, u.name) AS t
FROM (SELECT id, author, at, title FROM posts ORDER BY at DESC LIMIT 8) p
LEFT JOIN users u ON u.id = p.author WHERE p.title LIKE 'a%' OR p.title IS NULL;
-- name: flat
SELECT p.id, UPPER(u.name) AS n FROM posts p, users u WHERE u.id = p.author
ORDER BY p.at DESC LIMIT 8;
-- name: filteredFlat
SELECT p.id FROM posts p, users u WHERE u.id = p.author AND p.title <> 'x'
ORDER BY p.at DESC LIMIT 8;
-- name: distinctFlat
SELECT DISTINCT p.author FROM posts p, users u WHERE u.id = p.author ORDER BY p.at DESC LIMIT 8;
"""
    plan = plan_text(WINDOWED, queries)
    for name in ("labelled", "flat"):  # 8 window rows, 8 lookups
        assert (plan.query(name).level, plan.query(name).ops_bound) == ("SI-3", 16), name
    # filtering or deduplicating before the LIMIT: the newest 8 rows are not the answer's
    filtered = plan.query("filteredFlat")
    assert filtered.level == "unbounded"
    assert any("p.title <> 'x' filters p before the LIMIT" in d.message
               for d in filtered.diagnostics)
    assert plan.query("distinctFlat").level == "unbounded"
