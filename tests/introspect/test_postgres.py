"""A running PostgreSQL database read into a catalog: the same catalog as its DDL parsed."""
from __future__ import annotations

import psycopg
import pytest

from piql.errors import InputError
from piql.introspect import catalog_from_database, display_url, schema_sql_from_database
from piql.planner.application import plan_application
from piql.language.queries import parse_queries
from piql.language.schema import load_schema
from tests.conftest import FIXTURES
from tests.introspect.compare import indexes, tables

APP_SCHEMA = FIXTURES / "pg_app_schema.sql"


def run(url: str, sql: str) -> None:
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql)


@pytest.fixture
def app_url(postgres_url):
    """A database holding the blog and shop schema, created through psycopg."""
    run(postgres_url, APP_SCHEMA.read_text())
    return postgres_url


def test_the_database_reads_as_its_ddl_and_its_pg_dump(app_url):
    from_database = catalog_from_database(app_url)
    from_ddl = load_schema(APP_SCHEMA)
    from_dump = load_schema(FIXTURES / "pg_dump_app.sql")
    assert tables(from_database, schemas=False) == tables(from_ddl, schemas=False)
    assert tables(from_database) == tables(from_dump)
    assert indexes(from_database) == indexes(from_ddl) == indexes(from_dump)
    # The unique keys carry the names PostgreSQL gave them.
    users = from_database.table("users")
    assert users is not None and users.schema == "public"
    assert [k.name for k in users.unique_keys] == ["users_email_key"]
    assert from_database.table("events").schema == "audit"  # type: ignore[union-attr]


def test_annotations_come_from_comments(app_url):
    catalog = catalog_from_database(app_url)
    assert catalog.table("users").temporal_columns == ("created_at",)  # type: ignore[union-attr]
    assert catalog.table("events").temporal_columns == ("occurred_at",)  # type: ignore[union-attr]
    assert [c.describe() for c in catalog.table("post_tags").cardinalities] == [  # type: ignore
        "CARDINALITY (tag, 10) PER (post_id)"]
    run(app_url, "COMMENT ON TABLE products IS 'Things we sell.\npiql: CARDINALITY (sku, 1) PER (name)'")
    products = catalog_from_database(app_url).table("products")
    assert [c.describe() for c in products.cardinalities] == [  # type: ignore[union-attr]
        "CARDINALITY (sku, 1) PER (name)"]


def test_partitions_views_and_extension_tables_are_left_out(app_url):
    text = schema_sql_from_database(app_url)
    assert "page_views_2025" not in text  # a partition: piql reads page_views
    assert "post_stats" not in text and "published_posts" not in text  # views
    assert {t.name for t in catalog_from_database(app_url).tables} == {
        "users", "posts", "comments", "post_tags", "products", "orders", "order_lines",
        "page_views", "events", "coupons"}


def test_lint_of_the_database_uses_its_indexes(app_url):
    catalog = catalog_from_database(app_url)
    queries = parse_queries("-- name: bySku\nSELECT id, price FROM products WHERE sku = <s>\n"
                            "-- name: comments\nSELECT id FROM comments WHERE post_id = <p> "
                            "ORDER BY created_at LIMIT 10\n", catalog, "queries.sql")
    plan = plan_application(catalog, queries)
    assert [(q.level, [i.name for i in q.indexes]) for q in plan.queries] == [
        ("SI-1", ["products_sku_key"]), ("SI-1", ["comments_post_idx"])]
    assert all(i.declared for q in plan.queries for i in q.indexes)


def test_a_mistake_in_a_comment_annotation_quotes_the_statement(postgres_url):
    run(postgres_url, "CREATE TABLE tags (doc bigint, tag text, PRIMARY KEY (doc, tag));"
                      "COMMENT ON TABLE tags IS 'piql: CARDINALITY (tga, 10)'")
    with pytest.raises(InputError) as info:
        catalog_from_database(postgres_url)
    message = info.value.message
    assert message.startswith("unknown column 'tga' in CARDINALITY of table 'tags'; did you mean 'tag'?")
    assert message.endswith("(in the schema read from the database: COMMENT ON TABLE "
                            "\"public\".\"tags\" IS 'piql: CARDINALITY (tga, 10)';)")
    assert info.value.location is not None and info.value.location.file == display_url(postgres_url)


def test_a_table_without_a_key_and_same_names_in_two_schemas_are_input_errors(postgres_url):
    run(postgres_url, "CREATE TABLE log (at timestamptz, line text)")
    with pytest.raises(InputError, match="table 'log' has no primary key"):
        catalog_from_database(postgres_url)
    run(postgres_url, "DROP TABLE log; CREATE SCHEMA audit; "
                      "CREATE TABLE public.events (id bigint PRIMARY KEY); "
                      "CREATE TABLE audit.events (id bigint PRIMARY KEY)")
    with pytest.raises(InputError, match="table 'audit.events' has the same name as 'public.events'"):
        catalog_from_database(postgres_url)


def test_an_unreachable_server_is_an_input_error_without_the_password():
    with pytest.raises(InputError) as info:
        catalog_from_database("postgresql://piql:secret@127.0.0.1:1/app")
    assert info.value.message.startswith("cannot read the schema of postgresql://piql@127.0.0.1:1/app:")
    assert "secret" not in str(info.value)


def test_urls_piql_does_not_read():
    with pytest.raises(InputError, match="use sqlite:///path/app.db or postgresql://"):
        catalog_from_database("mysql://localhost/app")
    assert display_url("postgresql://u:pw@db:5432/app?sslmode=require") == \
        "postgresql://u@db:5432/app?sslmode=require"
    assert display_url("postgresql:///app") == "postgresql:///app"
