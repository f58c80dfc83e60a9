"""A base table whose key is one integer column is kept as a rowid table on SQLite (its key
is the rowid: ``KeyStorage.ROWID``); any other key clusters the table (``WITHOUT ROWID``).
Key lookups, ordered reads and joins read it by a search of the rowid, never a scan, and
answer as the interpreter and SQL do; writes and loads refuse what the clustered table
refused; a store created with the clustered layout is still served."""
from __future__ import annotations

import pytest

from piql import App, ConstraintError
from piql.planner import store_layout
from piql.planner.store_layout import KeyStorage
from tests.conftest import plan_text
from tests.runtime.compiled import assert_same_answer, compiled, explain_sqlite, full_scans
from tests.runtime.test_view_layout import table_sql

SCHEMA = """CREATE TABLE authors (id BIGINT PRIMARY KEY, name VARCHAR, bio VARCHAR);
CREATE TABLE books (id INT PRIMARY KEY, author BIGINT NOT NULL, title VARCHAR,
    year BIGINT NOT NULL, FOREIGN KEY (author) REFERENCES authors (id))
    WITH CARDINALITY (id, 10) PER (author);
CREATE TABLE shelves (owner VARCHAR, book BIGINT, PRIMARY KEY (owner, book))
    WITH CARDINALITY (book, 20) PER (owner);"""
QUERIES = """-- name: book
SELECT b.title, b.year, a.name FROM books b, authors a WHERE b.id = <id> AND a.id = b.author;
-- name: newest
SELECT b.id, b.title FROM books b WHERE b.author = <author> ORDER BY b.year DESC LIMIT 3;
-- name: shelf
SELECT s.book, b.title FROM shelves s, books b WHERE s.owner = <owner> AND b.id = s.book;
-- name: onShelf
SELECT owner FROM shelves WHERE owner = <owner> AND book = <book>;
"""
PLAN = plan_text(SCHEMA, QUERIES)
PARAMS = {"book": [{"id": i} for i in (1, 4, 9, 99)],
          "newest": [{"author": a} for a in (1, 2, 7)],
          "shelf": [{"owner": o} for o in ("ann", "bob", "nobody")],
          "onShelf": [{"owner": "ann", "book": b} for b in (1, 2)]}


def filled(location: str | None = None):
    db = App(PLAN).deploy(location) if location else App(PLAN).deploy()
    db.load("authors", [(a, f"author {a}", "x" * 300) for a in (1, 2, 3)])
    db.load("books", [(b, 1 + b % 3, f"title {b}", 1990 + b % 5) for b in range(1, 10)])
    for owner, book in (("ann", 1), ("ann", 5), ("bob", 9)):
        db.insert("shelves", owner=owner, book=book)
    return db


def assert_like_the_interpreter(db) -> None:
    for name, choices in PARAMS.items():
        for params in choices:
            result = db.query(name, **params)
            assert_same_answer(db, name, params, list(result.rows), result.ops, (name, params))


def test_an_integer_key_is_the_rowid_and_other_keys_cluster():
    db = filled()
    assert table_sql(db, "authors") == ('CREATE TABLE "authors" ("id" INTEGER PRIMARY KEY, '
                                        '"name" VARCHAR, "bio" VARCHAR)')
    assert '"id" INTEGER PRIMARY KEY' in table_sql(db, "books")
    assert table_sql(db, "shelves").endswith("WITHOUT ROWID")


def test_reads_search_the_rowid_and_answer_as_the_interpreter():
    db = filled()
    for name in PARAMS:
        query = compiled(db, name)
        plan = explain_sqlite(db, query)
        assert not full_scans(plan, query), (name, plan)
    lookups = " ".join(explain_sqlite(db, compiled(db, "book")))
    assert lookups.count("USING INTEGER PRIMARY KEY") == 2, lookups
    assert_like_the_interpreter(db)


def test_writes_keep_the_answers_and_refuse_what_a_clustered_key_refuses():
    db = filled()
    db.update("books", id=4, author=2, title="renamed", year=2001)
    db.delete("books", id=9)
    db.insert("books", id=12, author=3, title="new", year=1980)
    assert_like_the_interpreter(db)
    for bad in (None, 1.5, "twelve"):
        with pytest.raises(ConstraintError):
            db.insert("books", id=bad, author=1, title="bad", year=2000)
        with pytest.raises(ConstraintError):
            db.load("books", [(bad, 1, "bad", 2000)])
    with pytest.raises(ConstraintError):
        db.insert("books", id=12, author=1, title="twice", year=2000)
    assert db.store.sql("SELECT COUNT(*) FROM books") == [(9,)]
    assert db.check().consistent


def test_a_store_with_clustered_integer_keys_is_still_served(tmp_path, monkeypatch):
    """The statements do not depend on the storage (``NOT INDEXED`` searches a rowid by
    its key as it searches a clustered key), and the plan's fingerprint does not name it:
    a store created before this layout (every key clustered) opens with the same plan and
    answers alike."""
    location = str(tmp_path / "old.db")
    with monkeypatch.context() as before:
        before.setattr(store_layout, "key_storage", lambda table: KeyStorage.CLUSTERED)
        filled(location).close()
    db = App(PLAN).deploy(location)
    assert not db.installed
    assert table_sql(db, "books").endswith("WITHOUT ROWID")
    assert_like_the_interpreter(db)
    db.update("books", id=4, author=2, title="renamed", year=2001)
    assert_like_the_interpreter(db)
