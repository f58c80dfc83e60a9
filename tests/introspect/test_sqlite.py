"""A running SQLite database read into a catalog: the same catalog as its migrations parsed."""
from __future__ import annotations

import sqlite3

import pytest

from piql.errors import InputError
from piql.introspect import catalog_from_database, schema_sql_from_database
from piql.schema import load_schema
from tests.conftest import FIXTURES
from tests.introspect.compare import indexes, tables

MIGRATIONS = FIXTURES / "sqlite_migrations.sql"


@pytest.fixture
def app_db(tmp_path):
    """The blog's SQLite database, made by running its migrations."""
    path = tmp_path / "app.db"
    connection = sqlite3.connect(path)
    connection.executescript(MIGRATIONS.read_text())
    connection.close()
    return path


def test_the_database_reads_as_its_migrations(app_db):
    from_database = catalog_from_database(f"sqlite:///{app_db}")
    from_file = load_schema(MIGRATIONS)
    expected = tables(from_file)
    # SQLite keeps the text of CREATE TABLE up to its closing parenthesis: an annotation
    # written after the statement (users' TEMPORAL, sessions' CARDINALITY) is not in the
    # database, one inside the parentheses (tags' CARDINALITY) is.
    expected["users"]["columns"] = [(n, t, null, False) for n, t, null, _ in expected["users"]["columns"]]
    expected["sessions"]["cardinalities"] = []
    assert tables(from_database) == expected
    assert [c.describe() for c in from_database.table("tags").cardinalities] == [  # type: ignore
        "CARDINALITY (tag, 10) PER (post_id)"]
    # Every index the migrations created, expression and partial ones too; the UNIQUE
    # constraints' indexes under the names SQLite gave them.
    assert indexes(from_database, names=False) == indexes(from_file, names=False)
    names = {i.name for i in from_database.indexes}
    assert {"posts_by_author", "posts_slug", "posts_live", "users_email_lower",
            "sqlite_autoindex_users_1"} <= names


def test_virtual_shadow_and_internal_tables_are_left_out(app_db):
    text = schema_sql_from_database(f"sqlite:///{app_db}")
    assert "posts_fts" not in text  # the FTS table and its shadow tables
    assert "sqlite_sequence" not in text  # AUTOINCREMENT's bookkeeping
    assert "recent_posts" not in text  # a view


def test_annotations_inside_create_table_and_untyped_columns(tmp_path):
    path = tmp_path / "odd.db"
    connection = sqlite3.connect(path)
    connection.executescript("""
        CREATE TABLE events (
            id INTEGER PRIMARY KEY,
            at INTEGER NOT NULL,  -- piql: TEMPORAL (at)
            payload,
            size UNSIGNED BIG INT
            -- piql: CARDINALITY (at, 50) PER (payload)
        );
    """)
    connection.close()
    catalog = catalog_from_database(f"sqlite:///{path}")
    events = catalog.tables[0]
    assert [(c.name, c.type) for c in events.columns] == [
        ("id", "INTEGER"), ("at", "INTEGER"), ("payload", "ANY"), ("size", "UNSIGNED BIG INT")]
    assert events.temporal_columns == ("at",)
    assert [c.describe() for c in events.cardinalities] == ["CARDINALITY (at, 50) PER (payload)"]


def test_the_database_is_opened_read_only_and_must_exist(tmp_path):
    missing = tmp_path / "missing.db"
    with pytest.raises(InputError, match="there is no database file"):
        catalog_from_database(f"sqlite:///{missing}")
    assert not missing.exists()
    with pytest.raises(InputError, match="an SQLite URL is sqlite:///relative/path.db"):
        catalog_from_database("sqlite://app.db")
    not_sqlite = tmp_path / "text.db"
    not_sqlite.write_text("this is not a database")
    with pytest.raises(InputError, match="cannot read the schema of sqlite:///"):
        catalog_from_database(f"sqlite:///{not_sqlite}")


def test_relative_and_absolute_urls(tmp_path, monkeypatch):
    path = tmp_path / "rel.db"
    sqlite3.connect(path).executescript("CREATE TABLE t (id INTEGER PRIMARY KEY);")
    monkeypatch.chdir(tmp_path)
    assert [t.name for t in catalog_from_database("sqlite:///rel.db").tables] == ["t"]
    assert str(path).startswith("/")
    assert [t.name for t in catalog_from_database(f"sqlite:///{path}").tables] == ["t"]


def test_a_table_without_a_key_is_an_input_error_quoting_it(tmp_path):
    path = tmp_path / "nokey.db"
    sqlite3.connect(path).executescript("CREATE TABLE log (at INTEGER, line TEXT);")
    with pytest.raises(InputError) as info:
        catalog_from_database(f"sqlite:///{path}")
    assert "table 'log' has no primary key" in info.value.message
    assert 'CREATE TABLE "log" (' in info.value.message

