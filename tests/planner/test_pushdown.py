"""Aggregate pushdown through an adjacency join into per-writer views (planner.pushdown):
a neighbourhood aggregate becomes bounded (SI-2), read as at most K partial aggregates."""
from __future__ import annotations

import pytest

from piql import sqlgen
from piql.planner.compile import StoreLayout, UncompilablePlan, compile_plan
from piql.planner.levels import Level
from piql.planner.pushdown import combine, split_writer, writers
from piql.planner.views import RuleAction, ViewKind
from piql.query_block import Attr, OrderItem
from tests.conftest import plan_text

SOCIAL = """
CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))
    WITH CARDINALITY (followee, 500);
CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, venue BIGINT,
    points BIGINT, kind VARCHAR);
"""
UNCAPPED = SOCIAL.replace("WITH CARDINALITY (followee, 500)", "")
NEIGHBOURS = "FROM follows f, checkins c WHERE f.follower = <me> AND c.userId = f.followee"


def planned(select: str, where: str = "", schema: str = SOCIAL):
    return plan_text(schema, f"-- name: q\nSELECT {select} {NEIGHBOURS}{where}\n").query("q")


def test_a_neighbourhood_count_is_bounded_by_a_per_writer_view():
    query = planned("COUNT(*) AS n")
    assert query.level == Level.SI2
    # at most 500 followees read from follows, one per-writer view row looked up per followee
    assert query.ops_bound == 500 + 500
    (view,) = query.view_defs
    assert view.kind == ViewKind.IMV and view.name == "q_by_checkins"
    assert [(c.name, str(c.source), c.key) for c in view.columns] == [
        ("userId", "c.userId", True), ("cnt", "COUNT(*)", False)]
    assert sqlgen.block_sql(view.definition) == (
        "SELECT userId, COUNT(*) AS cnt FROM checkins AS c GROUP BY userId")
    # O(1) upkeep per checkin, nothing per follower
    assert {(r.event, r.table, r.action, r.ops_bound) for r in view.rules} == {
        ("insert", "checkins", RuleAction.ADD, 2), ("delete", "checkins", RuleAction.SUBTRACT, 2)}
    assert query.rewritten_sql == (
        "SELECT COALESCE(SUM(c.cnt), 0) AS n FROM follows AS f, q_by_checkins AS c "
        "WHERE f.follower = <me> AND c.userId = f.followee")
    note = next(d for d in query.diagnostics if d.message.startswith("answered by combining"))
    assert note.code == "view" and "at most 500 rows of the per-writer view q_by_checkins" \
        in note.message


def test_sum_and_avg_combine_sums_and_counts_and_parameters_key_the_view():
    query = planned("SUM(c.points) AS s, AVG(c.points) AS a, COUNT(c.points) AS k",
                    " AND c.venue = <venue> AND c.kind = 'gym'")
    assert query.level == Level.SI2 and query.ops_bound == 1000
    (view,) = query.view_defs
    assert [c.name for c in view.key] == ["userId", "venue"]
    assert [str(c.source) for c in view.columns if not c.key] == [
        "SUM(c.points)", "COUNT(c.points)", "COUNT(*)"]
    assert "WHERE kind = 'gym'" in sqlgen.block_sql(view.definition)
    assert query.rewritten_sql == (
        "SELECT SUM(c.sum_points) AS s, (CAST(SUM(c.sum_points) AS FLOAT) / "
        "SUM(c.cnt_points)) AS a, COALESCE(SUM(c.cnt_points), 0) AS k "
        "FROM follows AS f, q_by_checkins AS c WHERE f.follower = <me> "
        "AND c.userId = f.followee AND c.venue = <venue>")


@pytest.mark.parametrize("func", ["MIN", "MAX"])
def test_min_and_max_are_refused_with_the_reason(func):
    query = planned(f"{func}(c.points) AS m")
    assert query.level == Level.UNBOUNDED
    assert any(d.code == "view-rejected" and d.message == (
        f"no per-writer view: {func}(c.points) cannot be combined from per-writer partial "
        "aggregates kept under deletes (only COUNT, SUM and AVG can)")
        for d in query.diagnostics)


def test_an_unbounded_neighbourhood_stays_unbounded_and_says_why():
    query = planned("COUNT(*) AS n", schema=UNCAPPED)
    assert query.level == Level.UNBOUNDED
    assert any(d.message.startswith("no per-writer view: even over the per-writer view "
                                    "q_by_checkins the query is unbounded: the rows of f")
               for d in query.diagnostics)


def test_the_rewrite_is_a_pure_tree_to_tree_function():
    query = planned("COUNT(*) AS n, SUM(c.points) AS s")
    block = query.query.block
    assert [r.alias for r in writers(block)] == ["c"]  # every aggregate reads c
    split = split_writer(block, block.relation("c"))
    assert split.joins == ((Attr("c", "userId"), Attr("f", "followee")),)
    assert sqlgen.block_sql(split.per_writer) == (
        "SELECT COUNT(*) AS n, SUM(points) AS s FROM checkins AS c "
        "WHERE userId = <_piql_writer1>")
    again = combine(block, split, query.view_defs[0])
    assert sqlgen.block_sql(again) == query.rewritten_sql
    assert block == query.query.block  # the query is not changed in place
    assert writers(block.with_(select=(block.select[0],), group_by=(Attr("f", "followee"),))) \
        == []
    ordered = block.with_(order_by=(OrderItem(block.select[0].expr),))
    assert writers(ordered) == []  # an ORDER BY an aggregate is not rewritten


def test_the_compiler_expresses_the_combined_plan():
    """The combination is an expression over aggregates (COALESCE(SUM(c.cnt), 0)) of the
    per-writer views' rows: one statement, whose aggregate of no rows is SQL's own
    (test_served_queries runs it against the interpreter)."""
    plan = plan_text(SOCIAL, f"-- name: q\nSELECT COUNT(*) AS n {NEIGHBOURS}\n")
    for dialect in ("sqlite", "postgres"):
        sql = plan.compiled("q", dialect).sql
        assert "COALESCE(" in sql and "SUM(" in sql
    query = plan.query("q")
    with pytest.raises(UncompilablePlan):  # a store without the view's table
        compile_plan(query.physical, "sqlite", StoreLayout(()), query=query.query.block)
