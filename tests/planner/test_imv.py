"""Phases 1–3 on the paper's examples: views, storage bounds, maintenance rules (SI-2)."""
from __future__ import annotations

import pytest

from piql import sqlgen
from piql.planner.maintenance import delta_queries
from piql.planner.storage import bound_storage, dependencies
from piql.planner.view_construction import Rejection, construct_view
from piql.language.queries import parse_queries
from tests.conftest import PAPER_SCHEMA, paper_catalog, plan_text

TWO_TAGS = ("SELECT t1.docId FROM Tags t1, Tags t2, Documents d "
            "WHERE t1.docId = t2.docId AND t1.docId = d.docId "
            "AND t1.tag = <tag1> AND t2.tag = <tag2> ORDER BY d.timestamp LIMIT 5")


def block(catalog, sql: str):
    return parse_queries(f"-- name: q\n{sql}\n", catalog, "q.sql")[0].block


def trace(construction, title: str) -> tuple[str, ...]:
    return next(s.lines for s in construction.trace if s.title.startswith(title))


# -- Phase 1 -----------------------------------------------------------------

def test_two_tags_view_construction_matches_the_paper():
    built = construct_view(paper_catalog(), block(paper_catalog(), TWO_TAGS), "twoTags_view")
    assert trace(built, "A_eq") == ("t1.tag", "t2.tag")
    assert trace(built, "A_ineq") == ("(empty)",)
    assert trace(built, "equivalence classes") == (
        "{t1.docId, t2.docId, d.docId}", "{t1.tag, <tag1>}", "{t2.tag, <tag2>}")
    assert trace(built, "P_view") == ("t1.docId = t2.docId", "t1.docId = d.docId")
    assert [(c.name, str(c.source)) for c in built.columns] == [
        ("t1_tag", "t1.tag"), ("t2_tag", "t2.tag"), ("timestamp", "d.timestamp"),
        ("docId", "d.docId")]
    assert all(c.key for c in built.columns)
    assert sqlgen.block_sql(built.definition) == (
        "SELECT t1.tag AS t1_tag, t2.tag AS t2_tag, d.timestamp, d.docId "
        "FROM Tags AS t1, Tags AS t2, Documents AS d "
        "WHERE t1.docId = t2.docId AND t1.docId = d.docId")
    assert sqlgen.block_sql(built.rewritten) == (
        "SELECT docId FROM twoTags_view WHERE t1_tag = <tag1> AND t2_tag = <tag2> "
        "ORDER BY timestamp LIMIT 5")


def test_transitive_equality_through_a_shared_parameter_is_kept():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, (
        "SELECT t1.docId FROM Tags t1, Tags t2 WHERE t1.tag = <tag> AND t2.tag = <tag> "
        "AND t1.docId = <d> ")), "v")
    assert "t1.tag = t2.tag" in trace(built, "P_view")


def test_projected_attributes_missing_from_the_key_are_added_to_the_view():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, (
        "SELECT d.text FROM Tags t, Documents d WHERE t.docId = d.docId AND t.tag = <tag> "
        "ORDER BY d.timestamp LIMIT 3")), "v")
    extra = [c for c in built.columns if not c.key]
    assert [(c.name, c.origin) for c in extra] == [("text", "projection")]


def test_count_tags_view_is_docs_per_tag(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "docsPerTag")
    assert [(c.name, str(c.source), c.key) for c in view.columns] == [
        ("tag", "Tags.tag", True), ("cnt", "COUNT(*)", False)]
    assert sqlgen.block_sql(view.definition) == "SELECT tag, COUNT(*) AS cnt FROM Tags GROUP BY tag"
    query = paper_plan.query("countTags")
    assert (query.level, query.ops_bound) == ("SI-2", 1)
    assert query.rewritten_sql == "SELECT cnt AS count FROM docsPerTag WHERE tag = <tag>"


def test_windowed_count_prepends_the_epoch(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "docsPerTagWindowed")
    assert [c.name for c in view.key] == ["epoch", "tag"]
    assert view.sql == (
        "CREATE VIEW docsPerTagWindowed AS SELECT (timestamp - (timestamp % 60000)) AS epoch, "
        "tag, COUNT(*) AS cnt FROM Tags AS t GROUP BY (timestamp - (timestamp % 60000)), tag")
    assert paper_plan.query("countTagsWindowed").level == "SI-2"


def test_avg_is_kept_as_sum_and_count():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, "SELECT AVG(timestamp) FROM Tags WHERE tag = <t>"), "v")
    assert [c.name for c in built.columns] == ["tag", "sum_timestamp", "cnt_timestamp", "cnt"]
    assert sqlgen.block_sql(built.rewritten) == \
        "SELECT sum_timestamp / cnt_timestamp AS avg_timestamp FROM v WHERE tag = <t>"


@pytest.mark.parametrize("sql, invariant, words", [
    ("SELECT * FROM Tags WHERE tag > <a> AND timestamp > <b>", "Invariant 1", "two attributes"),
    ("SELECT * FROM Tags WHERE tag > <a> ORDER BY timestamp LIMIT 3", "Invariant 1",
     "not prefixed by the inequality attribute"),
    ("SELECT MEDIAN(timestamp) FROM Tags WHERE tag = <a>", "Invariant 3", "holistic"),
    ("SELECT COUNT(DISTINCT docId) FROM Tags WHERE tag = <a>", "Invariant 3", "holistic"),
    ("SELECT MAX(timestamp) FROM Tags WHERE tag = <a>", "Invariant 2", "under deletes"),
    ("SELECT COUNT(*) FROM Tags WHERE timestamp > <since>", "Invariant 2", "inequality"),
])
def test_queries_without_a_scale_independent_view(sql, invariant, words):
    catalog = paper_catalog()
    rejected = construct_view(catalog, block(catalog, sql), "v")
    assert isinstance(rejected, Rejection)
    assert rejected.invariant == invariant and words in rejected.message


# -- Phase 2 -----------------------------------------------------------------

def test_two_tags_dependencies_and_algorithm_4():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, TWO_TAGS), "twoTags_view")
    deps = [str(d) for d in dependencies(catalog, built.definition)]
    assert "d.docId -> (d.text, d.timestamp)   [key]" in deps
    assert "t1.docId -10-> t1.tag   [cardinality]" in deps
    assert "t2.docId -10-> t2.tag   [cardinality]" in deps
    assert "t1.docId <-> t2.docId   [equality]" in deps
    assert "t1.docId <-> d.docId   [equality]" in deps
    result = bound_storage(catalog, built.definition)
    assert (result.bound.relation, result.bound.alias, result.bound.factor) == ("Tags", "t1", 10)


@pytest.mark.parametrize("join", ["a.y = b.y", "b.y = a.y"])
def test_equality_edges_are_followed_both_ways(join):
    """§4.1 rule 3 is bidirectional: writing the equality either way round gives the tightest
    bound, one row per row of a (a.x -> a.y = b.y -> b.z)."""
    plan = plan_text(
        "CREATE TABLE a (x BIGINT, y BIGINT, v BIGINT, PRIMARY KEY (x)) WITH CARDINALITY (x, 5) PER (y);"
        "CREATE TABLE b (y BIGINT, z BIGINT, PRIMARY KEY (y));",
        f"-- name: q\nSELECT a.x, b.z FROM a, b WHERE {join} AND a.v = <p> ORDER BY b.z LIMIT 3\n")
    assert plan.query("q").level == "SI-2"
    storage = plan.views[0].storage
    assert (storage.relation, storage.factor) == ("a", 1)


def test_two_tags_without_cardinality_violates_invariant_3_and_says_the_fix(paper_plan_unconstrained):
    query = paper_plan_unconstrained.query("twoTags")
    assert query.level == "unbounded"
    rejected = [d for d in query.diagnostics if d.code == "view-rejected"][0]
    assert "Invariant 3" in rejected.message and "quadratically" in rejected.message
    assert rejected.hint == "add WITH CARDINALITY (tag, K) to Tags"


def test_literal_equalities_fix_attributes():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, (
        "SELECT t1.docId FROM Tags t1, Tags t2 WHERE t1.docId = t2.docId "
        "AND t1.tag = <a> AND t2.tag = 'news' ORDER BY t1.docId LIMIT 5")), "v")
    assert "FIXED -> t2.tag   [fixed]" in [str(d) for d in dependencies(catalog, built.definition)]


def test_a_free_attribute_fails_algorithm_4_for_every_relation():
    plan = plan_text(
        "CREATE TABLE a (x BIGINT, v BIGINT, PRIMARY KEY (x));"
        "CREATE TABLE b (y BIGINT, v BIGINT, PRIMARY KEY (y));",
        "-- name: cross\nSELECT a.x, b.y FROM a, b WHERE a.v = <p> AND b.v = <q> ORDER BY a.x LIMIT 5\n")
    query = plan.query("cross")
    assert query.level == "unbounded"
    rejected = [d for d in query.diagnostics if d.code == "view-rejected"][0]
    assert "Invariant 3" in rejected.message


def test_group_by_variant_only_needs_the_grouped_attributes():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, "SELECT COUNT(*) FROM Tags WHERE tag = <t>"), "v")
    result = bound_storage(catalog, built.definition)
    assert (result.bound.relation, result.bound.factor) == ("Tags", 1)


# -- Phase 3 -----------------------------------------------------------------

def test_new_tag_rule_is_the_papers(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "twoTags_view")
    rule = next(r for r in view.rules if r.event == "insert" and r.aliases == ("t1",))
    assert rule.sql.endswith(
        "INSERT INTO twoTags_view SELECT <tag> AS t1_tag, t2.tag AS t2_tag, d.timestamp, d.docId "
        "FROM Tags AS t2, Documents AS d WHERE t2.docId = <docId> AND d.docId = <docId> "
        "AND t2.tag >= <tag>")  # the symmetric-pair layout: one orientation per pair
    assert rule.level == "SI-0"
    assert rule.read_ops == 11 and rule.write_ops == 10


def test_self_join_rules_include_the_tuple_joined_with_itself(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "twoTags_view")
    inserts = [(r.table, r.aliases) for r in view.rules if r.event == "insert"]
    assert inserts == [("Tags", ("t1",)), ("Tags", ("t2",)), ("Tags", ("t1", "t2")),
                       ("Documents", ("d",))]
    both = next(r for r in view.rules if r.aliases == ("t1", "t2") and r.event == "insert")
    assert "SELECT <tag> AS t1_tag, <tag> AS t2_tag" in both.sql
    assert {r.event for r in view.rules} == {"insert", "delete"}


def test_count_rule_is_plus_one(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "docsPerTag")
    insert = next(r for r in view.rules if r.event == "insert")
    delete = next(r for r in view.rules if r.event == "delete")
    assert insert.sql.endswith("UPDATE docsPerTag SELECT <tag> AS tag, +1 AS cnt")
    assert delete.sql.endswith("UPDATE docsPerTag SELECT <tag> AS tag, -1 AS cnt")
    assert insert.read_ops == 0 and insert.write_ops == 2


def test_every_rule_of_two_tags_is_bounded(paper_plan):
    view = next(v for v in paper_plan.views if v.name == "twoTags_view")
    by_rule = {(r.event, r.table, r.aliases): r.ops_bound for r in view.rules}
    assert by_rule[("insert", "Documents", ("d",))] == 10 + 100 + 100
    assert all(bound is not None and bound > 0 for bound in by_rule.values())
    # one orientation of each pair: (10 + 1) / 2 rows per tag, rounded up (symmetric pair)
    assert (view.storage.relation, view.storage.factor) == ("Tags", 6)


def test_delta_queries_substitute_the_written_tuple():
    catalog = paper_catalog()
    built = construct_view(catalog, block(catalog, TWO_TAGS), "v")
    deltas = delta_queries(built.definition, built.columns)
    documents = next(d for d in deltas if d.table == "Documents")
    assert sqlgen.block_sql(documents.block) == (
        "SELECT t1.tag AS t1_tag, t2.tag AS t2_tag, <timestamp> AS timestamp, <docId> AS docId "
        "FROM Tags AS t1, Tags AS t2 WHERE t1.docId = t2.docId AND t1.docId = <docId>")


LIKES = """
CREATE TABLE users (id BIGINT, name VARCHAR, PRIMARY KEY (id));
CREATE TABLE posts (id BIGINT, author BIGINT, PRIMARY KEY (id),
                    FOREIGN KEY (author) REFERENCES users (id));
CREATE TABLE likes (postId BIGINT, userId BIGINT, PRIMARY KEY (postId, userId),
                    FOREIGN KEY (postId) REFERENCES posts (id));
"""


def test_delta_query_that_needs_a_view_gets_one_recursively():
    plan = plan_text(LIKES, "-- name: likesOfAuthor\n"
                            "SELECT COUNT(*) FROM likes l, posts p "
                            "WHERE l.postId = p.id AND p.author = <u>\n")
    query = plan.query("likesOfAuthor")
    assert query.level == "SI-2"
    assert len(query.views) == 2  # the likes-per-author view and likes-per-post for its upkeep
    main = next(v for v in plan.views if v.name == "likesOfAuthor_view")
    on_post = next(r for r in main.rules if r.table == "posts" and r.event == "insert")
    assert on_post.level == "SI-2" and on_post.views


def test_recursion_is_depth_limited_with_a_reason():
    from piql.planner import imv

    original = imv.MAX_DEPTH
    imv.MAX_DEPTH = 1
    try:
        plan = plan_text(LIKES, "-- name: likesOfAuthor\n"
                                "SELECT COUNT(*) FROM likes l, posts p "
                                "WHERE l.postId = p.id AND p.author = <u>\n")
    finally:
        imv.MAX_DEPTH = original
    query = plan.query("likesOfAuthor")
    assert query.level == "unbounded"
    rejected = [d for d in query.diagnostics if d.code == "view-rejected"][0]
    assert "Invariant 2" in rejected.message and "recursion limit" in rejected.message


# -- one parameter compared with several attributes (issue 12, item 11) ---------

MESSAGES = """
CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE messages (id BIGINT PRIMARY KEY, from_user BIGINT, to_user BIGINT, body VARCHAR,
  FOREIGN KEY (from_user) REFERENCES users (id), FOREIGN KEY (to_user) REFERENCES users (id));
"""


def test_a_parameter_used_twice_in_an_aggregate_is_as_bounded_as_two_parameters():
    plan = plan_text(MESSAGES, (
        "-- name: toSelf\nSELECT COUNT(*) FROM messages WHERE from_user = <u> AND to_user = <u>\n"
        "-- name: between\nSELECT COUNT(*) FROM messages WHERE from_user = <u> AND to_user = <v>\n"))
    same, pair = plan.query("toSelf"), plan.query("between")
    assert (pair.level, pair.ops_bound) == ("SI-2", 1)
    assert (same.level, same.ops_bound) == ("SI-2", 1)
    view = next(v for v in plan.views if v.name == "toSelf_view")
    # one group per value of the parameter's class: the view keeps only from_user = to_user rows
    assert [c.name for c in view.key] == ["from_user"]
    assert sqlgen.block_sql(view.definition) == (
        "SELECT from_user, COUNT(*) AS cnt FROM messages WHERE from_user = to_user "
        "GROUP BY from_user")
    assert same.rewritten_sql == "SELECT cnt AS count FROM toSelf_view WHERE from_user = <u>"
    assert all(rule.guards for rule in view.rules)  # a row counts only when from_user = to_user


def test_a_parameter_used_twice_in_a_row_query_is_as_bounded_as_two_parameters():
    same_tag = TWO_TAGS.replace("<tag2>", "<tag1>")
    plan = plan_text(PAPER_SCHEMA.read_text(),
                     f"-- name: same\n{same_tag}\n-- name: pair\n{TWO_TAGS}\n")
    same, pair = plan.query("same"), plan.query("pair")
    assert (same.level, same.ops_bound) == (pair.level, pair.ops_bound) == ("SI-2", 5)


# -- groups bounded by CARDINALITY ... PER (issue 12, item 12) ----------------

REACTIONS = """
CREATE TABLE reactions (message_id BIGINT, user_id BIGINT, emoji VARCHAR, color VARCHAR,
                        PRIMARY KEY (message_id, user_id))
  WITH CARDINALITY (emoji, 6) PER (message_id), CARDINALITY (color, 3) PER (message_id);
"""


def test_groups_bounded_per_parameter_by_a_cardinality_constraint_are_si2():
    plan = plan_text(REACTIONS, (
        "-- name: emojiCounts\n"
        "SELECT emoji, COUNT(*) FROM reactions WHERE message_id = <mid> GROUP BY emoji\n"))
    query = plan.query("emojiCounts")
    assert (query.level, query.ops_bound) == ("SI-2", 6)
    view = next(v for v in plan.views if v.name == "emojiCounts_view")
    assert [c.name for c in view.key] == ["message_id", "emoji"]
    assert query.rewritten_sql == \
        "SELECT emoji, cnt AS count FROM emojiCounts_view WHERE message_id = <mid>"
    assert not [d for d in query.diagnostics if d.code == "view-rejected"]


def test_two_bounded_groupings_multiply_their_bounds():
    plan = plan_text(REACTIONS, (
        "-- name: q\nSELECT emoji, color, COUNT(*) AS n FROM reactions WHERE message_id = <mid> "
        "GROUP BY emoji, color ORDER BY n DESC LIMIT 4\n"))
    query = plan.query("q")
    assert (query.level, query.ops_bound) == ("SI-2", 18)
    assert query.rewritten_sql == ("SELECT emoji, color, cnt AS n FROM q_view "
                                   "WHERE message_id = <mid> ORDER BY cnt DESC LIMIT 4")


def test_an_unbounded_grouping_says_which_constraint_is_missing():
    plan = plan_text(REACTIONS, (
        "-- name: q\nSELECT user_id, COUNT(*) FROM reactions WHERE message_id = <mid> "
        "GROUP BY user_id\n"))
    query = plan.query("q")
    assert query.level == "unbounded"
    rejected = next(d for d in query.diagnostics if d.code == "view-rejected")
    assert "reactions.user_id" in rejected.message and "CARDINALITY" in rejected.message
    assert "WITH CARDINALITY (user_id, K) PER (message_id)" in rejected.hint


@pytest.mark.parametrize("func, order", [("MAX", "ORDER BY Tags.timestamp DESC LIMIT 1"),
                                         ("MIN", "ORDER BY Tags.timestamp LIMIT 1")])
def test_the_hint_for_min_and_max_orders_toward_the_value_asked_for(func, order):
    """Issue 12, item 14: the hint for MAX said ascending, which reads the minimum."""
    catalog = paper_catalog()
    rejected = construct_view(catalog, block(
        catalog, f"SELECT {func}(timestamp) FROM Tags WHERE tag = <a>"), "v")
    assert isinstance(rejected, Rejection)
    assert rejected.hint.startswith(order + " ")


# -- single-row aggregates are write hotspots (issue 12, item 15) ----------------

def test_a_single_row_aggregate_updated_by_every_write_is_a_hotspot_warning():
    plan = plan_text(
        "CREATE TABLE events (id BIGINT PRIMARY KEY, account BIGINT, createdAt BIGINT TEMPORAL);",
        "-- name: allEvents\nSELECT COUNT(*) FROM events\n"
        "-- name: perAccount\nSELECT COUNT(*) FROM events WHERE account = <a>\n")
    query = plan.query("allEvents")
    assert (query.level, query.ops_bound) == ("SI-2", 1)  # the level stays
    (warning,) = [d for d in query.diagnostics if d.severity == "warning"]
    assert warning.code == "hotspot"
    assert "allEvents_view" in warning.message and "every write to events" in warning.message
    assert "SI-3" in warning.hint and "createdAt - createdAt % " in warning.hint
    assert not [d for d in plan.query("perAccount").diagnostics if d.code == "hotspot"]


def test_the_plan_says_which_views_may_hold_null_in_their_key(paper_plan):
    """A view keyed on a column that may be NULL cannot be clustered on its key by the
    store; the planner says so, the runtime only creates what the plan says."""
    plan = plan_text("""
CREATE TABLE answers (id BIGINT PRIMARY KEY, question_id BIGINT, score BIGINT);
""", "-- name: answerCount\nSELECT COUNT(*), SUM(score) FROM answers WHERE question_id = <q>\n")
    assert next(v for v in plan.views if v.name == "answerCount_view").nullable_key
    views = {v.name: v for v in paper_plan.views}
    assert not views["docsPerTag"].nullable_key  # keyed on Tags.tag, a primary-key column
    assert views["twoTags_view"].nullable_key  # ordered by Documents.timestamp
