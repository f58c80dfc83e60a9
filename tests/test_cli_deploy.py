"""``piql deploy``: --load all or nothing across its files, --no-check."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from piql.cli import main

TUTORIAL = Path(__file__).parents[1] / "docs" / "tutorial"
FILES = [str(TUTORIAL / "schema.sql"), str(TUTORIAL / "queries.sql")]


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def count(db: Path, table: str) -> int:
    with sqlite3.connect(db) as connection:
        return connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]


def test_a_refused_file_keeps_none_of_the_loads_in_an_existing_store(capsys, tmp_path):
    db = tmp_path / "s.db"
    assert run(capsys, "deploy", *FILES, "--db", db, "--engine", "store")[0] == 0
    bad = tmp_path / "bad.csv"
    bad.write_text("userId,url,title,savedAt\n9,https://x,X,1\n")  # no user 9
    code, out, err = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store",
                         "--load", f"users={TUTORIAL / 'users.csv'}", "--load", f"bookmarks={bad}")
    assert code == 2 and "piql: error:" in err
    assert "loaded" not in out
    assert count(db, "users") == 0 and count(db, "bookmarks") == 0
    code, out, _ = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store",
                       "--load", f"users={TUTORIAL / 'users.csv'}",
                       "--load", f"bookmarks={TUTORIAL / 'data.csv'}")
    assert code == 0
    assert out.splitlines()[:2] == ["loaded 4 rows into users", "loaded 12 rows into bookmarks"]
    assert count(db, "users") == 4 and count(db, "bookmarks") == 12


def test_a_refused_file_removes_the_store_it_was_creating(capsys, tmp_path):
    db = tmp_path / "new.db"
    code, _, _ = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store",
                     "--load", f"bookmarks={TUTORIAL / 'data.csv'}")  # users missing: FK
    assert code == 2 and not db.exists()


def test_no_check_skips_the_consistency_check(capsys, tmp_path):
    db = tmp_path / "s.db"
    code, out, _ = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store")
    assert code == 0 and "saveCount_view: ok" in out
    code, out, _ = run(capsys, "deploy", *FILES, "--db", db, "--engine", "store", "--no-check")
    assert code == 0 and out.startswith("deployed 3 tables") and ": ok" not in out


def _tables(location: str) -> set[str]:
    from piql.runtime.store import open_store

    store = open_store(location, 5)
    try:
        return store.table_names()
    finally:
        store.close()


def test_a_refused_load_leaves_an_existing_empty_store_as_it_was(capsys, new_store):
    """On PostgreSQL (a database or schema that exists) and on an empty SQLite file, a
    deploy whose load is refused drops the tables, indexes and bookkeeping it created:
    deploying again then starts from the same empty store."""
    location = new_store()
    if new_store.kind == "sqlite":
        sqlite3.connect(location).close()  # an empty file that exists
    assert _tables(location) == set()
    code, out, err = run(capsys, "deploy", *FILES, "--db", location, "--engine", "store",
                         "--load", f"bookmarks={TUTORIAL / 'data.csv'}")  # users missing: FK
    assert code == 2 and "piql: error:" in err and "deployed" not in out
    assert _tables(location) == set()
    if new_store.kind == "postgres":
        import psycopg

        with psycopg.connect(location) as connection:  # the version sequence went too
            assert connection.execute("SELECT count(*) FROM pg_class WHERE relkind = 'S' AND "
                                      "relnamespace = current_schema()::regnamespace"
                                      ).fetchone()[0] == 0
    code, out, err = run(capsys, "deploy", *FILES, "--db", location, "--engine", "store",
                         "--load", f"users={TUTORIAL / 'users.csv'}",
                         "--load", f"bookmarks={TUTORIAL / 'data.csv'}")
    assert code == 0, err
    assert out.splitlines()[:2] == ["loaded 4 rows into users", "loaded 12 rows into bookmarks"]


def test_a_refused_load_keeps_a_store_deployed_before(capsys, new_store):
    location = new_store()
    assert run(capsys, "deploy", *FILES, "--db", location, "--engine", "store",
               "--load", f"users={TUTORIAL / 'users.csv'}")[0] == 0
    before = _tables(location)
    code, _, _ = run(capsys, "deploy", *FILES, "--db", location, "--engine", "store",
                     "--load", f"bookmarks={TUTORIAL / 'data.csv'}", "--load", "users=" +
                     str(TUTORIAL / "users.csv"))  # users again: their keys are taken
    assert code == 2
    assert _tables(location) == before
    code, out, _ = run(capsys, "query", *FILES, "--db", location, "--engine", "store",
                       "--quiet", "myBookmarks", "userId=1")
    assert code == 0 and "0 rows" in out  # the users stayed, no bookmark came in
