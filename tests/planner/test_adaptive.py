"""Adaptive queries (planner.adaptive): feeds and neighbourhood aggregates with both a
bounded pull plan and a bounded push plan, both bounds reported, the pull plan served."""
from __future__ import annotations

import dataclasses

import pytest

from piql.planner.adaptive import PUSH_FANOUT_CAP, AdaptiveShape
from piql.planner.levels import Level
from piql.report.explain import render
from piql.report.json_report import to_dict
from piql.rules import rule
from tests.conftest import plan_text

SCHEMA = """
CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))
    WITH CARDINALITY (followee, 500);
CREATE TABLE posts (postId BIGINT PRIMARY KEY, author BIGINT NOT NULL,
    createdAt BIGINT TEMPORAL, body VARCHAR);
CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, points BIGINT);
"""
# at most 200 followers per followee too: push fan-out bounded by the schema, not capped
BOTH_WAYS = SCHEMA.replace("WITH CARDINALITY (followee, 500)",
                           "WITH CARDINALITY (followee, 500), CARDINALITY (follower, 200)")
QUERIES = """
-- name: latest
SELECT p.postId FROM follows f, posts p
WHERE f.follower = <me> AND p.author = f.followee ORDER BY p.createdAt DESC LIMIT 1
-- name: feed
SELECT p.postId, p.createdAt FROM follows f, posts p
WHERE f.follower = <me> AND p.author = f.followee ORDER BY p.createdAt DESC LIMIT 20
-- name: friendCheckins
SELECT COUNT(*) AS n, SUM(c.points) AS s FROM follows f, checkins c
WHERE f.follower = <me> AND c.userId = f.followee
-- name: myPosts
SELECT postId FROM posts WHERE author = <me> ORDER BY createdAt DESC LIMIT 20
-- name: everyFolloweePost
SELECT p.postId FROM follows f, posts p WHERE f.follower = <me> AND p.author = f.followee
"""


def test_the_feed_is_adaptive_with_both_bounds():
    query = plan_text(SCHEMA, QUERIES).query("feed")
    assert query.level == Level.SI1  # the plan served is unchanged: pull
    plan = query.adaptive
    assert plan.shape == AdaptiveShape.FEED and plan.pull is query.physical
    assert plan.pull_ops == query.ops_bound == 500 + 500 * 20
    push = plan.push
    assert push.capped and push.fanout == PUSH_FANOUT_CAP
    # read the producer's push edges, then per edge: state, insert, trim (read and delete the
    # 21st), state rewritten
    assert plan.push_write_ops == push.write_ops == PUSH_FANOUT_CAP * (1 + 6)
    assert plan.push_read_ops == push.read_ops == 20
    (note,) = [d for d in query.diagnostics if d.code == "adaptive"]
    assert note.severity == "info" and rule(note.code).id == "PQ305"
    assert note.message == (
        "adaptive feed: pull ops <= 10500 per read (at most 500 f.followee per f.follower); "
        "push ops <= 7000 per posts write and <= 20 per read; at most 1000 push edges per "
        "producer, the rest pull")


def test_a_feed_of_one_row_is_a_feed():
    plan = plan_text(SCHEMA, QUERIES).query("latest").adaptive
    assert plan.shape == AdaptiveShape.FEED and plan.push_read_ops == 1
    assert plan.push_lines()[0] == "per consumer f.follower a view of its newest row"


def test_a_neighbourhood_aggregate_is_adaptive_over_its_per_writer_views():
    query = plan_text(SCHEMA, QUERIES).query("friendCheckins")
    assert query.level == Level.SI2
    plan = query.adaptive
    assert plan.shape == AdaptiveShape.AGGREGATE
    assert plan.pull_ops == query.ops_bound == 1000  # 500 followees + 500 view lookups
    assert (plan.push_write_ops, plan.push_read_ops) == (PUSH_FANOUT_CAP * (1 + 2), 1)


def test_a_constraint_on_consumers_per_producer_bounds_push_without_the_cap():
    plan = plan_text(BOTH_WAYS, QUERIES)
    feed = plan.query("feed").adaptive
    assert not feed.push.capped and feed.push.fanout == 200
    assert feed.push_write_ops == 200 * 7
    assert "(at most 200 by the schema's constraints), then 6 ops per edge: ops <= 1400" in \
        feed.push_lines()[1]
    # the aggregate is now a per-consumer view (push itself, SI-2): no pull plan to adapt
    aggregate = plan.query("friendCheckins")
    assert aggregate.level == Level.SI2 and aggregate.view_defs[0].name == "friendCheckins_view"
    assert aggregate.adaptive is None


def test_a_neighbourhood_aggregate_phase_0_bounds_is_adaptive_too():
    """With at most 100 checkins per user, Phase 0 bounds the aggregate over the tables
    (SI-1): that is its pull plan, and no per-writer view is needed."""
    bounded = SCHEMA.replace("points BIGINT);", "points BIGINT)\n"
                             "    WITH CARDINALITY (checkinId, 100) PER (userId);")
    query = plan_text(bounded, QUERIES).query("friendCheckins")
    assert query.level == Level.SI1 and not query.view_defs
    assert query.adaptive.shape == AdaptiveShape.AGGREGATE
    assert query.adaptive.pull_ops == query.ops_bound


@pytest.mark.parametrize("name", ["myPosts", "everyFolloweePost"])
def test_other_queries_are_not_adaptive(name):
    query = plan_text(SCHEMA, QUERIES).query(name)
    assert query.adaptive is None
    assert all(d.code != "adaptive" for d in query.diagnostics)


def test_explain_shows_both_plans():
    plan = plan_text(SCHEMA, QUERIES)
    text = render(plan.query("feed"), plan)
    assert ("adaptive feed (both plans bounded; piql serves the pull plan until db.adapt()):\n"
            "  pull: ops <= 10500 per read: the plan above\n"
            "  push: ops <= 7000 per write, <= 20 per read\n"
            "    per consumer f.follower a view of its newest 20 rows\n"
            "    on a write to posts: read the push edges of its p.author in follows by "
            "f.followee (piql's cap of 1000 push edges per producer; the edges past it stay "
            "pull), then 6 ops per edge: ops <= 7000\n"
            "    on a read: the consumer's view, one range: ops <= 20\n") in text


def test_lint_json_carries_both_bounds():
    queries = {q["name"]: q for q in to_dict(plan_text(SCHEMA, QUERIES))["queries"]}
    assert queries["feed"]["adaptive"] == {
        "shape": "feed", "pull_ops": 10500, "push_write_ops": 7000, "push_read_ops": 20,
        "push_fanout": 1000, "push_fanout_capped": True}
    assert queries["friendCheckins"]["adaptive"]["shape"] == "neighbourhood aggregate"
    assert queries["myPosts"]["adaptive"] is None


def test_the_decisions_are_frozen():
    plan = plan_text(SCHEMA, QUERIES).query("feed").adaptive
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.pull_ops = 0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.push.fanout = 0  # type: ignore[misc]
