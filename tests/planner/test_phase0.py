"""Phase 0: bounded physical plans (SI-0 / SI-1) and why others are unbounded."""
from __future__ import annotations

from piql.planner.phase0 import plan_query
from piql.planner.physical import INDEX, PRIMARY
from piql.queries import parse_queries
from tests.conftest import paper_catalog, plan_text

SOCIAL = """
CREATE TABLE users (id BIGINT, name VARCHAR, email VARCHAR, PRIMARY KEY (id));
CREATE TABLE follows (follower BIGINT, followee BIGINT,
  PRIMARY KEY (follower, followee),
  FOREIGN KEY (follower) REFERENCES users (id),
  FOREIGN KEY (followee) REFERENCES users (id)) WITH CARDINALITY (followee, 50);
CREATE TABLE posts (id BIGINT, author BIGINT, createdAt BIGINT, body VARCHAR,
  PRIMARY KEY (id), FOREIGN KEY (author) REFERENCES users (id));
CREATE INDEX posts_by_author ON posts (author, createdAt);
"""


def phase0(catalog, sql: str):
    query = parse_queries(f"-- name: q\n{sql}\n", catalog, "q.sql")[0]
    return plan_query(catalog, query.block)


def test_key_prefix_scan_is_si0_bounded_by_cardinality(paper_plan):
    query = paper_plan.query("tagsOfDoc")
    assert (query.level, query.ops_bound) == ("SI-0", 10)
    access = query.physical.accesses[0]
    assert access.path == PRIMARY and access.key_columns == ("docId",)
    assert query.indexes == ()


def test_order_by_limit_on_tag_needs_an_index_and_is_si1(paper_plan):
    query = paper_plan.query("newestWithTag")
    assert (query.level, query.ops_bound) == ("SI-1", 10)
    assert [(i.table, i.columns) for i in query.indexes] == [("Tags", ("tag", "timestamp"))]
    access = query.physical.accesses[0]
    assert access.path == INDEX and access.stop_after == 10
    assert access.covering  # (tag, timestamp) + the key (docId, tag) holds every column


def test_non_covering_index_fetches_every_row():
    catalog = paper_catalog()
    result = phase0(catalog, "SELECT * FROM Documents WHERE text = <t> ORDER BY docId LIMIT 4")
    # an index on (text, docId) holds the key but not timestamp: 4 entries + 4 row fetches
    assert result.plan is not None and result.plan.ops_bound == 8
    assert not result.plan.accesses[0].covering


def test_two_tags_is_unbounded_on_demand_naming_the_scan():
    result = phase0(paper_catalog(), (
        "SELECT t1.docId FROM Tags t1, Tags t2, Documents d "
        "WHERE t1.docId = t2.docId AND t1.docId = d.docId "
        "AND t1.tag = <tag1> AND t2.tag = <tag2> ORDER BY d.timestamp LIMIT 5"))
    assert result.plan is None
    assert "t1 (Tags)" in result.failure.message and "t1.tag = <tag1>" in result.failure.message
    assert "not bounded" in result.failure.message


def test_point_lookup_then_key_join_is_si0():
    catalog = paper_catalog()
    result = phase0(catalog, "SELECT d.text, t.tag FROM Documents d, Tags t "
                             "WHERE d.docId = <doc> AND t.docId = d.docId")
    assert result.plan.level == "SI-0"
    assert result.plan.ops_bound == 1 + 10
    assert [a.alias for a in result.plan.accesses] == ["d", "t"]


def test_join_order_is_searched_not_taken_from_the_query():
    catalog = paper_catalog()
    result = phase0(catalog, "SELECT d.text, t.tag FROM Tags t, Documents d "
                             "WHERE d.docId = <doc> AND t.docId = d.docId")
    assert result.plan.ops_bound == 11


def test_declared_index_is_used_without_creating_a_new_one():
    plan = plan_text(SOCIAL, "-- name: q\nSELECT id FROM posts WHERE author = <u> "
                             "ORDER BY createdAt DESC LIMIT 20\n")
    query = plan.query("q")
    assert query.level == "SI-1"
    assert [i.name for i in query.indexes] == ["posts_by_author"]
    assert query.indexes[0].declared
    assert query.physical.accesses[0].descending


def test_limit_over_foreign_key_lookup_stops_the_outer_scan():
    plan = plan_text(SOCIAL, "-- name: q\nSELECT p.body, u.name FROM posts p, users u "
                             "WHERE p.author = u.id AND p.author = <u> "
                             "ORDER BY p.createdAt LIMIT 10\n")
    query = plan.query("q")
    assert query.level == "SI-1"
    assert query.ops_bound == 10 * 2 + 10  # 10 index entries + 10 row fetches + 10 user lookups


def test_limit_cannot_stop_a_scan_whose_rows_a_later_join_may_drop():
    plan = plan_text(SOCIAL, "-- name: q\nSELECT p.body FROM posts p, follows f "
                             "WHERE p.author = f.followee AND f.follower = <me> AND p.id = <p>\n"
                             "-- name: r\nSELECT u.name FROM users u, follows f "
                             "WHERE f.followee = u.id AND f.follower = <x> ORDER BY u.name LIMIT 3\n")
    assert plan.query("q").level == "SI-0"
    assert plan.query("r").level == "SI-0"  # bounded by the 50 followees, sorted locally
    assert plan.query("r").ops_bound == 50 + 50


def test_bounded_outer_merge_join_for_a_timeline():
    plan = plan_text(SOCIAL, "-- name: timeline\nSELECT p.id, p.body FROM follows f, posts p "
                             "WHERE f.follower = <me> AND p.author = f.followee "
                             "ORDER BY p.createdAt DESC LIMIT 20\n")
    query = plan.query("timeline")
    assert query.level == "SI-1"
    assert query.physical.merge_at == 1
    # 50 followees; for each, at most 20 posts in order, each fetched: 50 + 50*20*2
    assert query.ops_bound == 50 + 50 * 20 * 2
    assert "MergeJoin" in "\n".join(query.physical.root.lines())


def test_full_scan_is_unbounded_with_a_hint():
    plan = plan_text(SOCIAL, "-- name: q\nSELECT * FROM users WHERE name = <n>\n")
    query = plan.query("q")
    assert query.level == "unbounded" and query.ops_bound is None
    unbounded = [d for d in query.diagnostics if d.code == "unbounded"][0]
    assert "users" in unbounded.message and unbounded.hint


def test_cardinality_per_non_key_columns_bounds_a_secondary_index():
    schema = ("CREATE TABLE reviews (id BIGINT, item BIGINT, stars INT, PRIMARY KEY (id)) "
              "WITH CARDINALITY (id, 100) PER (item);")
    plan = plan_text(schema, "-- name: q\nSELECT id, stars FROM reviews WHERE item = <i>\n")
    query = plan.query("q")
    assert query.level == "SI-1" and query.ops_bound == 200  # 100 entries + 100 fetches


def test_temporal_leading_index_is_refused_as_hotspot():
    result = phase0(paper_catalog(temporal=True), "SELECT * FROM Tags ORDER BY timestamp LIMIT 10")
    assert result.plan is None
    assert [h.column for h in result.hotspots] == ["timestamp"]
    assert "TEMPORAL" in result.failure.message
    plain = phase0(paper_catalog(), "SELECT * FROM Tags ORDER BY timestamp LIMIT 10")
    assert plain.plan is not None and plain.plan.level == "SI-1"


def test_tag_then_timestamp_index_is_not_a_hotspot(paper_plan_temporal):
    # timestamp is TEMPORAL but does not lead the key (tag, timestamp)
    assert paper_plan_temporal.query("newestWithTag").level == "SI-1"


def test_aggregate_over_bounded_input_is_local():
    plan = plan_text(SOCIAL, "-- name: q\nSELECT COUNT(*) FROM follows WHERE follower = <u>\n")
    query = plan.query("q")
    assert (query.level, query.ops_bound) == ("SI-0", 50)
    assert query.physical.rows_bound == 1


NULLABLE_FK = """
CREATE TABLE accounts (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE events (id BIGINT PRIMARY KEY, account_id BIGINT{null}, createdAt BIGINT,
  FOREIGN KEY (account_id) REFERENCES accounts (id));
"""
NEWEST = ("-- name: q\nSELECT e.id, a.name FROM events e, accounts a "
          "WHERE e.account_id = a.id ORDER BY e.createdAt DESC LIMIT 2\n")


def test_a_nullable_foreign_key_may_drop_rows_so_limit_cannot_stop_before_the_join():
    """A NULL foreign key finds no parent: the join drops the row, so stopping the scan of
    events after 2 rows could return fewer than SQL does."""
    query = plan_text(NULLABLE_FK.format(null=""), NEWEST).query("q")
    assert query.level == "unbounded"
    assert any("may be NULL" in d.message and "NOT NULL" in d.message
               for d in query.diagnostics)


def test_a_not_null_foreign_key_lets_limit_stop_before_the_join():
    assert plan_text(NULLABLE_FK.format(null=" NOT NULL"), NEWEST).query("q").level == "SI-1"


def test_a_foreign_key_compared_elsewhere_holds_a_value_where_it_is_joined():
    query = plan_text(NULLABLE_FK.format(null=""), NEWEST.replace(
        "ORDER BY", "AND e.account_id = <acct> ORDER BY")).query("q")
    assert query.level == "SI-1"
