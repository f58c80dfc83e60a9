"""Generated names never collide with the schema's, piql's own or each other (issue 12, item 9)."""
from __future__ import annotations

import pytest

from piql.errors import InputError
from piql.planner.naming import RUNTIME_TABLES, Names
from tests.conftest import plan_text

SOCIAL = """
CREATE TABLE users (userId BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE posts (postId BIGINT PRIMARY KEY, author BIGINT, createdAt BIGINT TEMPORAL,
                    FOREIGN KEY (author) REFERENCES users (userId));
CREATE TABLE likes (postId BIGINT, userId BIGINT, likedAt BIGINT,
                    PRIMARY KEY (postId, userId));
"""
LIKE_COUNT = "-- name: likeCount\nSELECT COUNT(*) AS likes FROM likes WHERE postId = <postId>\n"
AUTHOR_LIKES = ("-- name: authorLikes\nSELECT COUNT(*) AS likes FROM likes l, posts p "
                "WHERE l.postId = p.postId AND p.author = <userId>\n")
NEWEST = "-- name: newest\nSELECT postId FROM posts ORDER BY createdAt DESC LIMIT 10\n"


def all_names(plan) -> list[str]:
    """Every name the deployment creates or finds, lowercased (SQLite's namespace)."""
    names = [t.name for t in plan.catalog.tables] + [i.name for i in plan.catalog.indexes]
    names += [v.name for v in plan.views] + [i.name for i in plan.indexes if not i.declared]
    names += list(RUNTIME_TABLES)
    return [n.lower() for n in names]


def assert_unique(plan) -> None:
    names = all_names(plan)
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)


def renamed(plan, query: str) -> list[str]:
    return [d.message for d in plan.query(query).diagnostics if d.code == "renamed"]


@pytest.mark.parametrize("table", ["likeCount_view", "LIKECOUNT_VIEW"])
def test_a_view_named_like_a_table_is_renamed_and_says_so(table):
    plan = plan_text(SOCIAL + f"CREATE TABLE {table} (id BIGINT PRIMARY KEY, note VARCHAR);",
                     LIKE_COUNT)
    query = plan.query("likeCount")
    assert query.level == "SI-2" and query.views == ("likeCount_view_2",)
    assert query.rewritten_sql == "SELECT cnt AS likes FROM likeCount_view_2 WHERE postId = <postId>"
    (message,) = renamed(plan, "likeCount")
    assert message == (f"view likeCount_view_2 is not called likeCount_view: that is the name "
                       f"of table {table}")
    assert_unique(plan)


def test_a_nested_delta_view_named_like_a_table_is_renamed():
    plain = plan_text(SOCIAL, AUTHOR_LIKES)
    nested = plain.query("authorLikes").views[1]
    assert nested == "authorLikes_view_delta_posts_p"
    plan = plan_text(SOCIAL + f"CREATE TABLE {nested} (id BIGINT PRIMARY KEY);", AUTHOR_LIKES)
    query = plan.query("authorLikes")
    assert query.views == ("authorLikes_view", f"{nested}_2")
    # the rules that read the nested view name it as it is now called
    rules = [r for v in plan.views for r in v.rules if r.views]
    assert rules and all(r.views == (f"{nested}_2",) for r in rules)
    assert renamed(plan, "authorLikes")
    assert_unique(plan)


def test_staging_and_periodic_views_named_like_tables_are_renamed():
    schema = SOCIAL + "CREATE TABLE newest (id BIGINT PRIMARY KEY);" \
                      "CREATE TABLE newestStaging (id BIGINT PRIMARY KEY);"
    plan = plan_text(schema, NEWEST)
    query = plan.query("newest")
    assert query.level == "SI-3"
    assert query.views == ("newestStaging_2", "newest_periodic")
    assert len(renamed(plan, "newest")) == 2
    assert_unique(plan)


def test_generated_names_of_two_queries_do_not_collide():
    """Query likeCount_view would get a periodic view of that name, which likeCount's
    view already has; the later query's view is renamed."""
    queries = LIKE_COUNT + ("-- name: likeCount_view\n"
                            "SELECT postId FROM posts ORDER BY createdAt DESC LIMIT 10\n")
    plan = plan_text(SOCIAL, queries)
    assert plan.query("likeCount").views == ("likeCount_view",)
    assert plan.query("likeCount_view").views == ("likeCount_viewStaging", "likeCount_view_periodic")
    assert_unique(plan)


def test_a_chosen_view_name_is_kept_and_a_generated_one_steps_aside():
    queries = ("-- name: a\n-- view: b_view\nSELECT COUNT(*) FROM likes WHERE postId = <p>\n"
               "-- name: b\nSELECT COUNT(*) FROM likes WHERE userId = <u>\n")
    plan = plan_text(SOCIAL, queries)
    assert plan.query("a").views == ("b_view",)
    assert plan.query("b").views == ("b_view_2",)
    assert_unique(plan)


@pytest.mark.parametrize("chosen, holder", [
    ("likes", "table likes"),
    ("LIKES", "table likes"),
    ("_piql_meta", "piql's table _piql_meta"),
    ("other", "the view of query first"),
    ("idx_likes_userid", "piql's index names on likes"),
])
def test_a_chosen_view_name_that_is_taken_is_an_input_error_at_the_name(chosen, holder):
    queries = ("-- name: first\n-- view: other\nSELECT COUNT(*) FROM likes WHERE postId = <p>\n"
               f"-- name: second\n-- view: {chosen}\nSELECT COUNT(*) FROM likes WHERE userId = <u>\n")
    with pytest.raises(InputError) as caught:
        plan_text(SOCIAL, queries)
    assert f"view name '{chosen}' is taken" in caught.value.message
    assert holder in caught.value.message
    lines = queries.splitlines()
    line = len(lines) - lines[::-1].index(f"-- view: {chosen}")  # the second query's
    assert (caught.value.location.line, caught.value.location.column) == (line, 10)


def test_index_names_that_two_tables_would_spell_alike_get_a_hash():
    schema = ("CREATE TABLE a (id BIGINT PRIMARY KEY, b BIGINT, c BIGINT);"
              "CREATE TABLE a_b (id BIGINT PRIMARY KEY, c BIGINT);")
    queries = ("-- name: q1\nSELECT id FROM a WHERE b = <x> ORDER BY c LIMIT 5\n"
               "-- name: q2\nSELECT id FROM a_b ORDER BY c LIMIT 5\n")
    plan = plan_text(schema, queries)
    first, second = plan.query("q1").indexes[0], plan.query("q2").indexes[0]
    assert (first.table, first.columns, second.table, second.columns) == (
        "a", ("b", "c"), "a_b", ("c",))
    assert first.name != second.name
    assert first.name.startswith("idx_a_b_c_") and second.name.startswith("idx_a_b_c_")
    assert renamed(plan, "q1") and renamed(plan, "q2")
    assert_unique(plan)


def test_an_index_name_taken_by_a_table_or_a_declared_index_gets_a_hash():
    schema = ("CREATE TABLE t (id BIGINT PRIMARY KEY, x BIGINT, y BIGINT);"
              "CREATE TABLE idx_t_x (id BIGINT PRIMARY KEY);"
              "CREATE INDEX idx_t_y ON t (x, id);")
    queries = ("-- name: byX\nSELECT id FROM t WHERE x = <x> ORDER BY id LIMIT 3\n"
               "-- name: byY\nSELECT id FROM t WHERE y = <y> ORDER BY id LIMIT 3\n")
    plan = plan_text(schema, queries)
    by_x, by_y = plan.query("byX"), plan.query("byY")
    assert by_x.indexes[0].declared  # the declared index on (x, id) serves byX
    assert by_y.indexes[0].name.startswith("idx_t_y_") and by_y.indexes[0].name != "idx_t_y"
    assert_unique(plan)


def test_an_unambiguous_index_name_is_the_readable_one():
    names = Names(plan_text(SOCIAL, LIKE_COUNT).catalog)
    assert names.index("likes", ("userId", "likedAt")) == "idx_likes_userid_likedat"
    assert names.index("LIKES", ("USERID", "likedat")) == "idx_likes_userid_likedat"
