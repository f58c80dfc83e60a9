"""When a self-join view keeps one orientation of each pair (``planner.symmetric_pair``)."""
from __future__ import annotations

from enum import StrEnum

import pytest

from piql.planner.views import ViewLayout
from tests.conftest import plan_text

SCHEMA = """CREATE TABLE Documents (docId BIGINT PRIMARY KEY, timestamp BIGINT NOT NULL,
                        score BIGINT);
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, weight BIGINT, PRIMARY KEY (docId, tag),
                   FOREIGN KEY (docId) REFERENCES Documents (docId)) WITH CARDINALITY (tag, 10);
CREATE TABLE Bag (docId BIGINT, tag VARCHAR, n BIGINT, PRIMARY KEY (docId, n))
  WITH CARDINALITY (n, 10);
CREATE TABLE Notes (docId BIGINT, tag VARCHAR, PRIMARY KEY (docId, tag))
  WITH CARDINALITY (tag, 10);"""
TWO_TAGS = """-- name: twoTags
SELECT t1.docId FROM Tags t1, Tags t2, Documents d
WHERE t1.docId = t2.docId AND t1.docId = d.docId AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY d.timestamp LIMIT 5
"""


def query_of(queries: str, schema: str = SCHEMA):
    plan = plan_text(schema, queries)
    query = plan.queries[0]
    assert query.level == "SI-2", query.diagnostics
    return query


def test_two_tags_keeps_one_orientation_with_half_the_storage():
    query = query_of(TWO_TAGS)
    view = query.view_defs[0]
    assert view.layout is ViewLayout.SYMMETRIC_PAIR
    assert (str(query.pair.first), str(query.pair.second)) == ("t1.tag", "t2.tag")
    assert (query.pair.low, query.pair.high) == ("tag1", "tag2")
    assert "t1.tag <= t2.tag" in view.sql
    # the unordered view: 10 rows per tag (a document's 10 tags); one orientation: (10+1)/2
    assert (view.storage.relation, view.storage.factor) == ("Tags", 6)
    # the read is unchanged: one range of the view's key
    assert query.rewritten_sql == ("SELECT docId FROM twoTags_view WHERE t1_tag = <tag1> "
                                   "AND t2_tag = <tag2> ORDER BY timestamp LIMIT 5")


@pytest.mark.parametrize("queries", [
    # asymmetric: each occurrence's own column is selected
    "-- name: q\nSELECT t1.docId, t1.weight FROM Tags t1, Tags t2 WHERE t1.docId = t2.docId "
    "AND t1.tag = <a> AND t2.tag = <b> ORDER BY t1.docId LIMIT 5\n",
    # asymmetric: ordered by one occurrence's column
    "-- name: q\nSELECT t1.docId FROM Tags t1, Tags t2 WHERE t1.docId = t2.docId "
    "AND t1.tag = <a> AND t2.tag = <b> ORDER BY t2.weight LIMIT 5\n",
    # asymmetric: a condition on one occurrence only
    "-- name: q\nSELECT t1.docId FROM Tags t1, Tags t2 WHERE t1.docId = t2.docId "
    "AND t1.tag = <a> AND t2.tag = <b> AND t1.weight > 3 ORDER BY t1.docId LIMIT 5\n",
    # not a self-join: two tables with the same columns
    "-- name: q\nSELECT t1.docId FROM Tags t1, Notes t2 WHERE t1.docId = t2.docId "
    "AND t1.tag = <a> AND t2.tag = <b> ORDER BY t1.docId LIMIT 5\n",
    # one parameter for both
    "-- name: q\nSELECT t1.docId FROM Tags t1, Tags t2 WHERE t1.docId = t2.docId "
    "AND t1.tag = <a> AND t2.tag = <a> ORDER BY t1.docId LIMIT 5\n",
], ids=["own-column", "own-order", "one-sided-filter", "two-tables", "one-parameter"])
def test_an_asymmetric_or_non_self_join_keeps_both_orientations(queries):
    query = query_of(queries)
    assert query.pair is None
    assert all(v.layout is ViewLayout.ORDERED for v in query.view_defs)
    assert all("<=" not in v.sql for v in query.view_defs)


def test_without_a_key_in_the_pair_the_layout_applies_but_storage_is_not_halved():
    """Bag's rows of one document may share a tag, so a pair of two rows may be one tag
    twice: both orientations of such a pair are kept, and the bound stays the unordered
    view's."""
    query = query_of("-- name: q\nSELECT b1.docId FROM Bag b1, Bag b2 WHERE b1.docId = "
                     "b2.docId AND b1.tag = <a> AND b2.tag = <b> ORDER BY b1.docId LIMIT 5\n")
    assert query.pair is not None
    ordered = query_of("-- name: q\nSELECT b1.docId, b1.n FROM Bag b1, Bag b2 WHERE b1.docId ="
                       " b2.docId AND b1.tag = <a> AND b2.tag = <b> ORDER BY b1.docId LIMIT 5\n")
    assert ordered.pair is None
    assert query.view_defs[0].storage.factor == ordered.view_defs[0].storage.factor


class Kind(StrEnum):
    B = "b"


def test_parameters_are_put_in_order_only_when_comparable():
    pair = query_of(TWO_TAGS).pair
    assert pair.in_order({"tag1": "b", "tag2": "a"}) == {"tag1": "a", "tag2": "b"}
    assert pair.in_order({"tag1": "a", "tag2": "b"}) == {"tag1": "a", "tag2": "b"}
    assert pair.in_order({"tag1": "é", "tag2": "z"}) == {"tag1": "z", "tag2": "é"}  # code points
    assert pair.in_order({"tag1": None, "tag2": "a"}) == {"tag1": None, "tag2": "a"}
    assert pair.in_order({"tag1": 3, "tag2": "a"}) == {"tag1": 3, "tag2": "a"}
    assert pair.in_order({"tag1": {"x": 2}, "tag2": {"x": 1}}) == {"tag1": {"x": 2}, "tag2": {"x": 1}}
    assert pair.in_order({"tag1": 5, "tag2": 3}) == {"tag1": 3, "tag2": 5}
    assert pair.in_order({"tag1": Kind.B, "tag2": "a"}) == {"tag1": "a", "tag2": Kind.B}
