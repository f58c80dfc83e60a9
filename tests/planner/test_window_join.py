"""Time windows over a join: how writes to the joined relations reach the epochs they change
(reverse lookups planned with their bound, or updates refused, or no SI-3 at all)."""
from __future__ import annotations

from piql.planner.views import MARK
from piql.report.json_report import to_dict
from tests.conftest import plan_text
from tests.planner.test_periodic import BEST_SELLERS, SHOP

POSTS = """
CREATE TABLE users (id BIGINT PRIMARY KEY, country VARCHAR);
CREATE TABLE posts (id BIGINT PRIMARY KEY, author BIGINT, at BIGINT TEMPORAL{fk});
"""
BY_COUNTRY = """
-- name: postsByCountry
SELECT u.country, COUNT(*) AS n FROM posts p, users u
WHERE u.id = p.author AND p.at - p.at % 3600000 = <hour>
GROUP BY u.country ORDER BY COUNT(*) DESC LIMIT 5
"""


def test_a_joined_child_marks_epochs_through_a_bounded_reverse_lookup():
    plan = plan_text(SHOP, BEST_SELLERS)
    periodic = next(v for v in plan.views if v.name == "bestSellers")
    marks = [r for r in periodic.rules if r.action == MARK]
    assert [(r.event, r.table, r.aliases) for r in marks] == [
        ("insert", "order_line", ("ol",)), ("delete", "order_line", ("ol",))]
    # one order by its key, one mark
    assert [(r.read_ops, r.write_ops) for r in marks] == [(1, 1), (1, 1)]
    assert [a.table for a in marks[0].plan.accesses] == ["orders"]
    rules = next(v for v in to_dict(plan)["views"] if v["name"] == "bestSellers")["rules"]
    assert {r["action"] for r in rules} == {"mark"}


def test_a_joined_fk_parent_has_its_read_columns_frozen():
    plan = plan_text(SHOP, BEST_SELLERS)
    query = plan.query("bestSellers")
    assert query.level == "SI-3"
    periodic = next(v for v in plan.views if v.name == "bestSellers")
    assert [(f.table, f.columns) for f in periodic.frozen] == [("item", ("i_subject",))]
    note = next(d for d in query.diagnostics if d.code == "periodic")
    assert "updates that change item.i_subject are refused" in note.hint


def test_an_unbounded_reverse_lookup_without_a_foreign_key_is_not_si3():
    query = plan_text(POSTS.format(fk=""), BY_COUNTRY).query("postsByCountry")
    assert query.level == "unbounded"
    reasons = " ".join(d.message for d in query.diagnostics)
    assert "a write to users (u) changes the windows of the posts tuples it joins" in reasons


def test_with_the_foreign_key_the_parent_is_frozen_instead():
    schema = POSTS.format(fk=", FOREIGN KEY (author) REFERENCES users (id)")
    plan = plan_text(schema, BY_COUNTRY)
    assert plan.query("postsByCountry").level == "SI-3"
    periodic = next(v for v in plan.views if v.name == "postsByCountry")
    assert [(f.table, f.columns) for f in periodic.frozen] == [("users", ("country",))]
    assert not [r for r in periodic.rules if r.action == MARK]


def test_an_unbounded_forward_lookup_says_which_relation_failed():
    schema = SHOP.replace(" WITH CARDINALITY (ol_id, 5)", "")
    query = plan_text(schema, BEST_SELLERS).query("bestSellers")
    assert query.level == "unbounded"
    assert any("no SI-3 periodic view" in d.message and "ol (order_line)" in d.message
               for d in query.diagnostics)
