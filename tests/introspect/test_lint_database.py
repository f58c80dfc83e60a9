"""``piql lint --db`` and ``piql.App.from_database``: the schema of a running database, and
on PostgreSQL the queries the application ran, from pg_stat_statements."""
from __future__ import annotations

import json
import sqlite3

import psycopg
import pytest

import piql
from piql.cli import main
from piql.errors import InputError
from piql.introspect import queries_sql_from_database, catalog_from_database
from piql.introspect.statements import left_out_because
from tests.conftest import FIXTURES

APP_SCHEMA = FIXTURES / "pg_app_schema.sql"


def lint(capsys, *args: str) -> tuple[int, dict]:
    code = main(["lint", "--format", "json", *args])
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return code, json.loads(out)


# -- PostgreSQL ----------------------------------------------------------------------

def workload(url: str) -> None:
    """A small blog and shop at work through psycopg: writes, reads, a driver's and a
    pool's own statements, and a read of a view piql does not plan."""
    with psycopg.connect(url, autocommit=True) as connection:
        run = connection.execute
        for i in range(3):
            (user,) = run("INSERT INTO users (email, handle, password_hash) VALUES (%s, %s, %s) "
                          "RETURNING id", (f"u{i}@example.com", f"user{i}", "x")).fetchone()
            run("INSERT INTO posts (author_id, slug, title) VALUES (%s, %s, %s)",
                (user, f"hello-{i}", "Hello"))
            run("SELECT id, handle FROM users WHERE email = %s", (f"u{i}@example.com",))
            run("SELECT id, title FROM posts WHERE author_id = %s AND slug = %s",
                (user, f"hello-{i}"))
            # a constant: normalized to $3 by pg_stat_statements, as a parameter
            run("SELECT id, title FROM posts WHERE author_id = %s ORDER BY published_at DESC "
                "LIMIT 10", (user,))
            run("SELECT tag FROM post_tags WHERE post_id = %s", (i,))
        run("UPDATE posts SET score = score + 1 WHERE id = %s", (1,))
        run("SELECT 1")  # a pool's health check
        run("SELECT count(*) FROM pg_catalog.pg_class WHERE relname = %s", ("users",))
        run("SELECT id, title FROM published_posts WHERE author_id = %s", (1,))  # a view


@pytest.fixture
def app_url(postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION pg_stat_statements")
        connection.execute(APP_SCHEMA.read_text())
    workload(postgres_url)
    return postgres_url


def test_lint_reads_the_queries_the_application_ran(capsys, app_url):
    code, document = lint(capsys, "--db", app_url)
    queries = {q["name"]: q for q in document["queries"]}
    assert all(name.startswith("stmt_") for name in queries)
    sql = queries_sql_from_database(app_url, catalog_from_database(app_url))
    by_text = {}
    for block in sql.split("-- name: ")[1:]:
        name, _, rest = block.partition("\n")
        by_text[rest.split("\n", 1)[1].strip()] = queries[name]
    assert set(by_text) == {
        "SELECT id, handle FROM users WHERE email = $1",
        "SELECT id, title FROM posts WHERE author_id = $1 AND slug = $2",
        "SELECT id, title FROM posts WHERE author_id = $1 ORDER BY published_at DESC LIMIT $2",
        "SELECT tag FROM post_tags WHERE post_id = $1",
    }
    assert by_text["SELECT id, handle FROM users WHERE email = $1"]["level"] == "SI-1"
    assert by_text["SELECT id, handle FROM users WHERE email = $1"]["ops_bound"] == 2
    assert by_text["SELECT id, title FROM posts WHERE author_id = $1 AND slug = $2"]["level"] == \
        "SI-1"
    assert by_text["SELECT tag FROM post_tags WHERE post_id = $1"]["level"] == "SI-0"
    notes = document["queries_diagnostics"]
    (summary,) = [n for n in notes if n["severity"] == "info"]
    # the INSERTs, the UPDATE and CREATE EXTENSION; the catalog's queries (piql's too);
    # SELECT 1
    assert "not a query" in summary["message"] and "reads the system catalogs" in \
        summary["message"] and "reads no table (1)" in summary["message"]
    (view,) = [n for n in notes if n["severity"] == "warning"]
    assert "unknown table 'published_posts'" in view["message"]
    assert "FROM published_posts WHERE author_id = $1" in view["message"]


def test_lint_of_the_database_exits_1_for_an_unbounded_query(capsys, app_url):
    with psycopg.connect(app_url, autocommit=True) as connection:
        connection.execute("SELECT id FROM comments WHERE post_id = %s", (1,))
    code, document = lint(capsys, "--db", app_url)
    assert code == 1
    assert "unbounded" in {q["level"] for q in document["queries"]}


def test_a_queries_file_names_the_queries(capsys, app_url, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: userByEmail\nSELECT id, handle FROM users WHERE email = %(email)s\n"
                       "-- name: postBySlug\nSELECT id FROM posts WHERE author_id = $1 AND slug = $2\n")
    code, document = lint(capsys, "--db", app_url, str(queries))
    assert code == 0
    assert [(q["name"], q["level"]) for q in document["queries"]] == [
        ("userByEmail", "SI-1"), ("postBySlug", "SI-1")]
    app = piql.App.from_database(app_url, queries)
    assert app.levels == {"userByEmail": "SI-1", "postBySlug": "SI-1"}


def test_the_api_reads_the_queries_too(app_url):
    app = piql.App.from_database(app_url)
    assert len(app.levels) == 4 and all(n.startswith("stmt_") for n in app.levels)
    assert app.plan.notes  # what it left out


def test_a_database_without_pg_stat_statements_is_a_clear_error(capsys, postgres_url):
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
    code = main(["lint", "--db", postgres_url])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "has no pg_stat_statements" in err and "CREATE EXTENSION pg_stat_statements" in err
    assert "give the queries file" in err


def test_an_unreachable_server_and_bad_urls_are_clear_errors(capsys):
    for url, words in [
        ("postgresql://piql:secret@127.0.0.1:1/app", "cannot read the schema of "
                                                     "postgresql://piql@127.0.0.1:1/app"),
        ("postgresql://[oops/app", "not a URL"),
        ("mysql://localhost/app", "use sqlite:///path/app.db or postgresql://"),
        ("app.db", "use sqlite:///path/app.db or postgresql://"),
        ("sqlite:///does/not/exist.db", "there is no database file"),
    ]:
        code = main(["lint", "--db", url, str(FIXTURES / "paper_queries.sql")])
        err = capsys.readouterr().err
        assert code == 2 and words in err, (url, err)
        assert "secret" not in err and "Traceback" not in err


def test_statements_that_are_no_application_query():
    assert left_out_because("SELECT a FROM t WHERE b = $1") is None
    assert left_out_because("INSERT INTO t VALUES ($1)") == "not a query"
    assert left_out_because("WITH d AS (DELETE FROM t RETURNING a) SELECT a FROM d") == \
        "not a query"
    assert left_out_because("BEGIN") == "not a query"
    assert left_out_because("SET search_path = pg_catalog") == "not a query"
    assert left_out_because("SELECT relname FROM pg_class") == "reads the system catalogs"
    assert left_out_because("SELECT * FROM information_schema.tables") == \
        "reads the system catalogs"
    assert left_out_because("SELECT pg_catalog.format_type($1, $2)") == "reads the system catalogs"
    assert left_out_because("SELECT $1") == "reads no table"
    assert left_out_because("WITH x AS (SELECT $1 AS a) SELECT a FROM x") == "reads no table"


# -- SQLite ---------------------------------------------------------------------------

def test_lint_of_a_sqlite_database_with_its_queries_file(capsys, tmp_path):
    path = tmp_path / "app.db"
    connection = sqlite3.connect(path)
    connection.executescript((FIXTURES / "sqlite_migrations.sql").read_text())
    connection.close()
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: user-by-email^\nSELECT id, name FROM users WHERE email = :email\n"
                       "-- name: tagsOfPost\nSELECT tag FROM tags WHERE post_id = ?\n")
    code, document = lint(capsys, "--db", f"sqlite:///{path}", str(queries))
    assert code == 0
    assert [(q["name"], q["level"]) for q in document["queries"]] == [
        ("user_by_email", "SI-1"), ("tagsOfPost", "SI-0")]
    assert piql.App.from_database(f"sqlite:///{path}", queries).levels == {
        "user_by_email": "SI-1", "tagsOfPost": "SI-0"}
    code = main(["lint", "--db", f"sqlite:///{path}"])
    assert code == 2 and "keeps no record of the queries" in capsys.readouterr().err
    code = main(["explain", "--db", f"sqlite:///{path}", str(queries), "tagsOfPost"])
    assert code == 0 and "SI-0" in capsys.readouterr().out
    code = main(["lint", "--db", f"sqlite:///{path}", str(queries), str(queries)])
    assert code == 2 and "give only the queries file" in capsys.readouterr().err
