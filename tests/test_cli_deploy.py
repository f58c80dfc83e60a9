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
