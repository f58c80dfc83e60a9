"""Parameters resolved once: the column each is compared with, and its declared type."""
from __future__ import annotations

from piql.planner.application import param_types
from piql.planner.params import ParamSpec
from piql.sql_types import TypeFamily
from tests.conftest import paper_schema_text, plan_text


def test_each_parameter_takes_the_type_of_the_column_it_is_compared_with(paper_plan):
    assert paper_plan.query("twoTags").params == (
        ParamSpec("tag1", "Tags", "tag", "=", None, "VARCHAR"),
        ParamSpec("tag2", "Tags", "tag", "=", None, "VARCHAR"))
    (tag, epoch) = paper_plan.query("countTagsWindowed").params
    assert tag == ParamSpec("tag", "Tags", "tag", "=", None, "VARCHAR")
    assert epoch == ParamSpec("epoch", "Tags", "timestamp", "=", 60000, "BIGINT")
    assert epoch.family is TypeFamily.INTEGER and tag.family is TypeFamily.TEXT
    assert paper_plan.query("popularTags").params == ()


def test_parameters_inside_from_subqueries_and_of_derived_columns():
    plan = plan_text(paper_schema_text(), """-- name: q
SELECT s.docId FROM (SELECT docId, tag FROM Tags WHERE docId = <doc>) s WHERE s.tag = <tag>
""")
    doc, tag = plan.query("q").params
    assert doc == ParamSpec("doc", "Tags", "docId", "=", None, "BIGINT")
    # compared with a column of the subquery, not of a base table: no declared type
    assert tag == ParamSpec("tag", None, "tag", "=", None, "")
    assert tag.family is TypeFamily.OTHER
    assert param_types(plan, plan.query("q").query.block) == {"doc": "BIGINT"}


def test_the_first_comparison_of_a_parameter_decides(paper_plan):
    plan = plan_text(paper_schema_text(), """-- name: q
SELECT * FROM Tags WHERE docId >= <d> AND docId <= <e> AND timestamp > <d>
""")
    assert [(p.name, p.column, p.op) for p in plan.query("q").params] == [
        ("d", "docId", ">="), ("e", "docId", "<=")]


def test_an_unsupported_query_has_no_parameters():
    plan = plan_text(paper_schema_text(), "-- name: q\nSELECT * FROM Tags WHERE tag = <a> OR tag ILIKE <b>\n")
    assert plan.query("q").params == ()
