"""Row bounds from keys, unique keys and CARDINALITY; what the DDL's indexes give Phase 0."""
from __future__ import annotations

from piql.planner.application import plan_application
from piql.planner.bounds import max_rows
from piql.queries import parse_queries
from piql.schema import parse_schema
from tests.conftest import FIXTURES, plan_text

ACCOUNTS = """
CREATE TABLE users (
    id bigint PRIMARY KEY,
    email text UNIQUE,
    org bigint, handle text NOT NULL,
    code text,
    name text,
    UNIQUE (org, handle),
    CONSTRAINT users_code_key UNIQUE NULLS NOT DISTINCT (code)
);
CREATE TABLE logins (user_id bigint, at bigint, device text, PRIMARY KEY (user_id, at))
  WITH CARDINALITY (device, 3) PER (user_id);
"""


def table(name: str):
    found = parse_schema(ACCOUNTS).table(name)
    assert found is not None
    return found


def test_a_unique_key_bound_by_equality_is_one_row() -> None:
    users = table("users")
    assert max_rows(users, frozenset({"email"})) == 1
    assert max_rows(users, frozenset({"EMAIL", "name"})) == 1
    assert max_rows(users, frozenset({"org", "handle"})) == 1
    assert max_rows(users, frozenset({"org"})) is None  # part of a key bounds nothing
    assert max_rows(users, frozenset({"name"})) is None


def test_is_null_does_not_satisfy_a_unique_key_whose_nulls_are_distinct() -> None:
    users = table("users")
    # UNIQUE lets many rows hold a NULL email: "email IS NULL" is not one row.
    assert max_rows(users, frozenset(), frozenset({"email"})) is None
    # NULLS NOT DISTINCT: at most one row has a NULL code.
    assert max_rows(users, frozenset(), frozenset({"code"})) == 1
    # The primary key is never NULL: "id IS NULL" finds nothing, so at most one row.
    assert max_rows(users, frozenset(), frozenset({"id"})) == 1


def test_is_null_does_not_satisfy_the_per_columns_of_a_cardinality() -> None:
    logins = table("logins")
    assert max_rows(logins, frozenset({"user_id", "device"})) is None  # device is not a key
    assert max_rows(logins, frozenset({"user_id"})) is None  # nothing bounds logins per user
    tags = parse_schema("CREATE TABLE t (doc int, tag text, PRIMARY KEY (doc, tag)) "
                        "WITH CARDINALITY (tag, 10);").tables[0]
    assert max_rows(tags, frozenset({"doc"})) == 10
    assert max_rows(tags, frozenset(), frozenset({"doc"})) is None


def test_lookup_by_a_unique_column_is_si1_through_the_constraints_index() -> None:
    plan = plan_text(ACCOUNTS, "-- name: byEmail\nSELECT id, name FROM users WHERE email = <e>\n"
                               "-- name: byHandle\nSELECT id FROM users "
                               "WHERE handle = <h> AND org = <o>\n")
    by_email = plan.query("byEmail")
    assert (by_email.level, by_email.ops_bound) == ("SI-1", 2)  # one entry, one row fetch
    assert [(i.name, i.declared) for i in by_email.indexes] == [("users_email_key", True)]
    assert by_email.physical.rows_bound == 1
    by_handle = plan.query("byHandle")
    assert (by_handle.level, by_handle.ops_bound) == ("SI-1", 1)  # (org, handle) + id: covering
    assert [i.name for i in by_handle.indexes] == ["users_org_handle_key"]
    # The database has these indexes already: no "needs secondary index" note.
    assert not [d for q in plan.queries for d in q.diagnostics if d.code == "index"]


def test_without_the_unique_constraint_the_lookup_is_unbounded() -> None:
    plan = plan_text(ACCOUNTS.replace("email text UNIQUE", "email text"),
                     "-- name: byEmail\nSELECT id, name FROM users WHERE email = <e>\n")
    assert plan.query("byEmail").level == "unbounded"


def test_declared_indexes_of_a_pg_dump_are_used_before_new_ones_are_proposed() -> None:
    catalog = parse_schema((FIXTURES / "pg_dump_app.sql").read_text(), "pg_dump_app.sql")

    queries = parse_queries(
        "-- name: commentsOfPost\nSELECT id, body FROM comments WHERE post_id = <p> "
        "ORDER BY created_at LIMIT 20\n"
        "-- name: productBySku\nSELECT id, price FROM products WHERE sku = <s>\n"
        "-- name: postsOfAuthor\nSELECT id FROM posts WHERE author_id = <a> "
        "ORDER BY published_at DESC LIMIT 10\n", catalog, "queries.sql")
    plan = plan_application(catalog, queries, "queries.sql")
    used = {q.name: [(i.name, i.declared) for i in q.indexes] for q in plan.queries}
    assert used == {
        "commentsOfPost": [("comments_post_idx", True)],
        "productBySku": [("products_sku_key", True)],  # the UNIQUE constraint's index
        "postsOfAuthor": [("posts_author_published_idx", True)],
    }
    assert plan.query("productBySku").ops_bound == 2


def test_partial_expression_and_gin_indexes_are_not_read_as_column_indexes() -> None:
    schema = """
        CREATE TABLE posts (id bigint PRIMARY KEY, author bigint, at bigint, tags text[],
                            deleted_at bigint);
        CREATE INDEX posts_live ON posts (author, at) WHERE deleted_at IS NULL;
        CREATE INDEX posts_lower ON posts (lower(author::text), at);
        CREATE INDEX posts_tags ON posts USING gin (tags);
    """
    plan = plan_text(schema, "-- name: q\nSELECT id FROM posts WHERE author = <a> "
                             "ORDER BY at LIMIT 5\n"
                             "-- name: t\nSELECT id FROM posts WHERE tags = <t> LIMIT 5\n")
    # The partial index holds only the live posts: the query, which asks for all of
    # them, gets a new index on (author, at) instead.
    assert [(i.name, i.declared) for i in plan.query("q").indexes] == [
        ("idx_posts_author_at", False)]
    assert [(i.name, i.declared) for i in plan.query("t").indexes] == [("idx_posts_tags", False)]
