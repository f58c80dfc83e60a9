"""``piql migrate``: the dry run, applying it, and deploy's refusal naming it."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.test_cli_deploy import FILES, TUTORIAL, count, run

NEW_QUERY = "\n-- name: tagCount\nSELECT COUNT(*) AS n FROM bookmark_tags WHERE tag = <tag>;\n"


def loaded(capsys, db: Path) -> None:
    code, _, err = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store",
                       "--load", f"users={TUTORIAL / 'users.csv'}",
                       "--load", f"bookmarks={TUTORIAL / 'data.csv'}")
    assert code == 0, err


def with_new_query(tmp_path: Path) -> str:
    queries = tmp_path / "queries.sql"
    queries.write_text((TUTORIAL / "queries.sql").read_text() + NEW_QUERY)
    return str(queries)


def test_a_release_cycle_dry_run_migrate_and_again(capsys, tmp_path):
    db = tmp_path / "app.db"
    loaded(capsys, db)
    release = [FILES[0], with_new_query(tmp_path), "--db", db, "--engine", "store"]
    code, out, err = run(capsys, "deploy", *release)
    assert code == 2 and "`piql migrate SCHEMA QUERIES --db STORE`" in err
    assert "1. build view tagCount_view" in err and "Traceback" not in err
    code, out, _ = run(capsys, "migrate", *release, "--dry-run")
    assert code == 0 and "-- 1. build view tagCount_view" in out
    assert 'CREATE TABLE "tagCount_view"' in out and "nothing applied" in out
    assert "tagCount_view" not in _tables(db)  # the dry run changed nothing
    code, out, err = run(capsys, "migrate", *release)
    assert code == 0, err
    assert "1. build view tagCount_view" in out and "tagCount_view: ok" in out
    assert count(db, "bookmarks") == 12
    code, out, _ = run(capsys, "migrate", *release)
    assert code == 0 and "nothing to migrate" in out
    code, out, err = run(capsys, "query", *release[:-2], "tagCount", "tag=x")
    assert code == 0 and "1 rows" in out, err


def test_a_migration_piql_cannot_run_exits_1_on_dry_run_and_2_applied(capsys, tmp_path):
    db = tmp_path / "app.db"
    loaded(capsys, db)
    schema = tmp_path / "schema.sql"
    schema.write_text((TUTORIAL / "schema.sql").read_text().replace("    name   VARCHAR\n", "    name   BIGINT\n"))
    args = [schema, FILES[1], "--db", db, "--engine", "store"]
    code, out, _ = run(capsys, "migrate", *args, "--dry-run")
    assert code == 1 and "cannot migrate: the column users.name changed type" in out
    code, _, err = run(capsys, "migrate", *args)
    assert code == 2 and "users.name changed type" in err and "Traceback" not in err


def _tables(db: Path) -> set[str]:
    with sqlite3.connect(db) as connection:
        return {n for (n,) in connection.execute("SELECT name FROM sqlite_master")}
