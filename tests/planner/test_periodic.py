"""Phase 4 (SI-3): TEMPORAL hotspots, staging views and periodic views (paper §6)."""
from __future__ import annotations

from piql.report.json_report import to_dict
from tests.conftest import paper_catalog, plan_text

TAGS_TEMPORAL = """
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, timestamp BIGINT TEMPORAL,
                   PRIMARY KEY (docId, tag)) WITH CARDINALITY (tag, 10);
"""


def view(plan, name):
    return next(v for v in to_dict(plan)["views"] if v["name"] == name)


def test_popular_tags_is_si3_as_the_paper_prints_it(paper_plan_temporal):
    query = paper_plan_temporal.query("popularTags")
    assert query.level == "SI-3"
    assert query.views == ("popularTagsStaging", "popularTags")
    staging = view(paper_plan_temporal, "popularTagsStaging")
    assert staging["kind"] == "staging"
    assert staging["sql"] == ("CREATE VIEW popularTagsStaging AS "
                              "SELECT HASH(tag, docId), timestamp, tag FROM Tags")
    assert staging["partitioned_by"] == ["tag", "docId"]
    assert staging["order_by"] == ["timestamp"]
    periodic = view(paper_plan_temporal, "popularTags")
    assert periodic["kind"] == "periodic"
    assert periodic["sql"] == (
        "CREATE VIEW popularTags PERIODIC 1 MIN AS SELECT tag, COUNT(*) FROM "
        "(SELECT * FROM popularTagsStaging ORDER BY timestamp LIMIT 5000) GROUP BY tag")
    assert periodic["per_partition_ops_bound"] == 5000
    assert periodic["refresh_every"] == "1 MIN"
    assert periodic["partitions"] == 16
    assert periodic["refresh_ops_total"] == 16 * 5000
    assert query.ops_bound == 5000  # at most 5000 tags among 5000 tuples


def test_popular_tags_without_temporal_is_si1_on_a_timestamp_index(paper_plan):
    query = paper_plan.query("popularTags")
    assert query.level == "SI-1" and query.ops_bound == 5000
    assert [i.columns for i in query.indexes] == [("timestamp",)]


def test_the_report_says_why_si3_and_not_si1(paper_plan_temporal):
    query = paper_plan_temporal.query("popularTags")
    codes = {d.code: d for d in query.diagnostics}
    assert codes["hotspot"].severity == "warning"
    assert "Tags(timestamp)" in codes["hotspot"].message
    assert "SI-3, not SI-1" in codes["periodic"].message


def test_staging_view_costs_one_write_per_base_write(paper_plan_temporal):
    staging = view(paper_plan_temporal, "popularTagsStaging")
    assert [(r["event"], r["table"], r["ops_bound"], r["level"]) for r in staging["rules"]] == [
        ("insert", "Tags", 1, "SI-0"), ("delete", "Tags", 1, "SI-0")]
    assert staging["storage_bound"] == {"relation": "Tags", "factor": 1}


def test_newest_rows_by_a_temporal_column():
    plan = plan_text(TAGS_TEMPORAL, "-- name: newest\n-- periodic: 30 s\n"
                                    "SELECT docId, tag FROM Tags ORDER BY timestamp DESC LIMIT 20\n")
    query = plan.query("newest")
    assert (query.level, query.ops_bound) == ("SI-3", 20)
    assert query.rewritten_sql == "SELECT docId, tag FROM newest ORDER BY rank"
    periodic = view(plan, "newest")
    assert periodic["per_partition_ops_bound"] == 20
    assert periodic["refresh_every"] == "30 SEC"
    assert periodic["storage_bound"] == {"relation": None, "factor": 20}
    assert "ORDER BY timestamp DESC LIMIT 20" in periodic["sql"]
    staging = view(plan, "newestStaging")
    assert staging["sql"] == "CREATE VIEW newestStaging AS SELECT HASH(docId, tag), timestamp, docId, tag FROM Tags"


def test_hourly_top_k_aggregate_over_a_temporal_window():
    plan = plan_text(TAGS_TEMPORAL, (
        "-- name: trendingTags\n-- periodic: 5 min\n"
        "SELECT tag, COUNT(*) AS uses FROM Tags WHERE timestamp - timestamp % 3600000 = <hour> "
        "GROUP BY tag ORDER BY COUNT(*) DESC LIMIT 10\n"))
    query = plan.query("trendingTags")
    assert (query.level, query.ops_bound) == ("SI-3", 10)
    assert query.rewritten_sql == (
        "SELECT tag, uses FROM trendingTags WHERE epoch = <hour> ORDER BY rank LIMIT 10")
    periodic = view(plan, "trendingTags")
    assert [k["column"] for k in periodic["key"]] == ["epoch", "rank"]
    # one partition absorbs at most 1000 writes/s, so one hour holds 3.6M tuples of it
    assert periodic["per_partition_ops_bound"] == 3_600_000
    assert periodic["refresh_every"] == "5 MIN"
    assert periodic["sql"] == (
        "CREATE VIEW trendingTags PERIODIC 5 MIN AS SELECT (timestamp - (timestamp % 3600000)) "
        "AS epoch, tag, COUNT(*) AS uses FROM trendingTagsStaging "
        "WHERE (timestamp - (timestamp % 3600000)) = <hour> "
        "GROUP BY (timestamp - (timestamp % 3600000)), tag ORDER BY COUNT(*) DESC LIMIT 10")


def test_windowed_count_keeps_a_temporal_epoch_off_the_front_of_the_key(paper_plan_temporal):
    # §3.3 prepends the epoch, but an epoch of a TEMPORAL column leading the key would be a
    # hotspot; behind tag the inserts spread over tags and the view stays SI-2.
    query = paper_plan_temporal.query("countTagsWindowed")
    assert query.level == "SI-2"
    view = next(v for v in paper_plan_temporal.views if v.name == "docsPerTagWindowed")
    assert [c.name for c in view.key] == ["tag", "epoch"]


def test_windowed_count_over_everything_goes_periodic():
    plan = plan_text(TAGS_TEMPORAL, "-- name: perMinute\nSELECT COUNT(*) FROM Tags "
                                    "WHERE timestamp - timestamp % 60000 = <minute>\n")
    query = plan.query("perMinute")
    assert (query.level, query.ops_bound) == ("SI-3", 1)
    assert any(d.code == "hotspot" and "TEMPORAL" in d.message for d in query.diagnostics)
    assert [k["column"] for k in view(plan, "perMinute")["key"]] == ["epoch"]
    periodic = next(d for d in query.diagnostics if d.code == "periodic")
    assert "SI-3, not SI-2: a view led by the TEMPORAL column timestamp (its epoch)" in periodic.message


def test_grouped_time_window_without_limit_stays_unbounded():
    plan = plan_text(TAGS_TEMPORAL, "-- name: q\nSELECT tag, COUNT(*) FROM Tags "
                                    "WHERE timestamp - timestamp % 60000 = <m> GROUP BY tag\n")
    assert plan.query("q").level == "unbounded"


def test_non_leading_temporal_column_stays_si1():
    plan = plan_text(TAGS_TEMPORAL, "-- name: q\nSELECT docId FROM Tags WHERE tag = <t> "
                                    "ORDER BY timestamp DESC LIMIT 5\n")
    query = plan.query("q")
    assert query.level == "SI-1"
    assert [i.columns for i in query.indexes] == [("tag", "timestamp")]
    assert not any(d.code == "hotspot" for d in query.diagnostics)


def test_invalid_periodic_interval_is_an_input_error():
    import pytest

    from piql.errors import InputError
    from piql.queries import parse_queries

    with pytest.raises(InputError) as caught:
        parse_queries("-- name: q\n-- periodic: soon\nSELECT * FROM Tags WHERE docId = <d>\n",
                      paper_catalog(), "q.sql")
    assert (caught.value.location.line, caught.value.location.column) == (2, 14)
    assert "interval" in caught.value.message


SHOP = """
CREATE TABLE item (i_id BIGINT PRIMARY KEY, i_subject VARCHAR);
CREATE TABLE orders (o_id BIGINT PRIMARY KEY, o_date BIGINT TEMPORAL);
CREATE TABLE order_line (ol_o_id BIGINT, ol_id BIGINT, ol_i_id BIGINT, ol_qty BIGINT,
    PRIMARY KEY (ol_o_id, ol_id),
    FOREIGN KEY (ol_o_id) REFERENCES orders (o_id),
    FOREIGN KEY (ol_i_id) REFERENCES item (i_id)) WITH CARDINALITY (ol_id, 5);
"""
BEST_SELLERS = """
-- name: bestSellers
SELECT ol.ol_i_id, SUM(ol.ol_qty) AS sold
FROM orders o, order_line ol, item i
WHERE ol.ol_o_id = o.o_id AND i.i_id = ol.ol_i_id AND i.i_subject = <subject>
  AND o.o_date - o.o_date % 3600000 = <hour>
GROUP BY ol.ol_i_id ORDER BY SUM(ol.ol_qty) DESC LIMIT 3
"""


def test_time_window_over_a_join_reads_the_other_relations_by_lookups():
    plan = plan_text(SHOP, BEST_SELLERS)
    query = plan.query("bestSellers")
    assert (query.level, query.ops_bound) == ("SI-3", 3)
    staging = view(plan, "bestSellersStaging")
    assert staging["sql"] == "CREATE VIEW bestSellersStaging AS SELECT HASH(o_id), o_date, o_id FROM orders"
    periodic = view(plan, "bestSellers")
    # per staged order: its <= 5 lines by key prefix, and each line's item by key
    assert periodic["per_partition_ops_bound"] == 3_600_000 * (1 + 5 + 5)
    assert [k["column"] for k in periodic["key"]] == ["epoch", "i_subject", "rank"]
    # an epoch's rows come from its orders' lines: at most 5 per order
    assert periodic["storage_bound"] == {"relation": "orders", "factor": 5}
    assert "FROM bestSellersStaging, order_line AS ol, item AS i" in periodic["sql"]
    lookups = next(s for s in query.trace if s.title == "lookups per windowed tuple")
    assert "joins order_line ol, item i by bounded lookups (ops <= 10)" in lookups.lines[0]


def test_time_window_over_an_unbounded_join_is_refused():
    schema = SHOP.replace(" WITH CARDINALITY (ol_id, 5)", "")
    query = plan_text(schema, BEST_SELLERS).query("bestSellers")
    assert query.level == "unbounded"


# -- tuple windows followed by the rest of the query (issue 12, item 13) -------------------

EVENTS = """
CREATE TABLE teams (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE accounts (id BIGINT PRIMARY KEY, name VARCHAR, team BIGINT NOT NULL,
                       FOREIGN KEY (team) REFERENCES teams (id));
CREATE TABLE events (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, kind VARCHAR,
                     createdAt BIGINT TEMPORAL,
                     FOREIGN KEY (account_id) REFERENCES accounts (id));
"""
NEWEST_SUBQUERY = """
-- name: newest
SELECT e.id, e.kind, a.name
FROM (SELECT id, account_id, kind, createdAt FROM events ORDER BY createdAt DESC LIMIT 8) e,
     accounts a
WHERE e.account_id = a.id
"""
NEWEST_FLAT = """
-- name: newest
SELECT e.id, e.kind, a.name
FROM events e, accounts a
WHERE e.account_id = a.id
ORDER BY e.createdAt DESC LIMIT 8
"""


def test_a_tuple_window_joined_by_key_is_si3_with_a_lookup_per_windowed_tuple():
    for queries in (NEWEST_SUBQUERY, NEWEST_FLAT):
        plan = plan_text(EVENTS, queries)
        query = plan.query("newest")
        # 8 rows of the periodic window, then each one's account by its primary key
        assert (query.level, query.ops_bound) == ("SI-3", 16), queries
        assert query.views == ("newestStaging", "newest")
        periodic = view(plan, "newest")
        assert periodic["kind"] == "periodic" and periodic["per_partition_ops_bound"] == 8
        assert periodic["storage_bound"] == {"relation": None, "factor": 8}
        assert [r.alias for r in query.physical.block.relations] == ["e", "a"]
        assert query.rewritten_sql.startswith("SELECT e.id, e.kind, a.name FROM newest AS e, "
                                              "accounts AS a WHERE e.account_id = a.id")
        assert not [d for d in query.diagnostics if d.severity == "error"]


def test_the_rest_of_the_query_may_take_parameters_and_join_further():
    plan = plan_text(EVENTS, """
-- name: teamEvents
SELECT e.id, t.name
FROM (SELECT id, account_id, createdAt FROM events ORDER BY createdAt DESC LIMIT 8) e,
     accounts a, teams t
WHERE e.account_id = a.id AND a.team = t.id AND t.name = <team>
""")
    query = plan.query("teamEvents")
    assert (query.level, query.ops_bound) == ("SI-3", 24)


def test_without_temporal_the_window_is_read_by_index_then_key_lookups():
    schema = EVENTS.replace(" TEMPORAL", "")
    for queries in (NEWEST_SUBQUERY, NEWEST_FLAT):
        query = plan_text(schema, queries).query("newest")
        assert query.level == "SI-1" and not query.views


def test_a_window_whose_rest_is_unbounded_gives_the_true_reason():
    plan = plan_text(EVENTS, """
-- name: byName
SELECT e.id, a.id
FROM (SELECT id, kind, createdAt FROM events ORDER BY createdAt DESC LIMIT 8) e, accounts a
WHERE a.name = e.kind
""")
    query = plan.query("byName")
    assert query.level == "unbounded"
    rejected = [d for d in query.diagnostics if "rest of the query" in d.message]
    assert rejected and "a (accounts) with a.name = e.kind are not bounded" in rejected[0].message


def test_the_flat_form_over_a_join_that_may_drop_rows_says_so():
    """ORDER BY ... LIMIT over a join is the newest *joined* rows: the window may only be
    taken first when every join is a foreign-key lookup that keeps each windowed row."""
    plan = plan_text(EVENTS, """
-- name: newestNamed
SELECT e.id, a.name FROM events e, accounts a
WHERE e.account_id = a.id AND a.name = 'x'
ORDER BY e.createdAt DESC LIMIT 8
""")
    query = plan.query("newestNamed")
    assert query.level == "unbounded"
    messages = " ".join(d.message for d in query.diagnostics)
    assert "nothing restricts a (accounts)" not in messages
    assert "createdAt is TEMPORAL" in messages
    assert "the join with a (accounts) may drop rows" in messages


def test_a_tuple_window_filtered_before_its_limit_is_not_a_window():
    """WHERE kind <= 'x' ORDER BY createdAt LIMIT 8 asks for the 8 newest *matching* events:
    a partition may have to read any number of others first. The periodic view used to keep
    the 8 newest events and drop the condition (a wrong answer)."""
    plan = plan_text(EVENTS, "-- name: q\nSELECT id FROM events WHERE kind <= 'x' "
                             "ORDER BY createdAt DESC LIMIT 8\n")
    query = plan.query("q")
    assert query.level == "unbounded"
    assert any("kind <= 'x'" in d.message and "window" in d.message for d in query.diagnostics)
