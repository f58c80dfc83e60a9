"""Unique keys at run time: the store keeps them, so the bounds drawn from them hold.

A lookup by a UNIQUE column is planned as one row; the store refuses a second
row with the same non-NULL values (per write and in bulk loads), lets NULLs
repeat as SQL does, and every answer equals the query's own SQL within its
bound, after random writes with NULLs, duplicates, updates and deletes.
"""
from __future__ import annotations

import random
from collections import Counter

import pytest

import piql
from piql.runtime.errors import ConstraintError
from tests.runtime.workload import normal, oracle

SCHEMA = """
CREATE TABLE users (
    id BIGINT PRIMARY KEY,
    email VARCHAR UNIQUE,
    org BIGINT,
    handle VARCHAR NOT NULL,
    code VARCHAR,
    UNIQUE (org, handle),
    CONSTRAINT users_code_key UNIQUE NULLS NOT DISTINCT (code)
);
CREATE TABLE posts (id BIGINT PRIMARY KEY, author BIGINT NOT NULL REFERENCES users (id),
                    slug VARCHAR);
CREATE UNIQUE INDEX posts_author_slug ON posts (author, slug);
"""
QUERIES = """
-- name: byEmail
SELECT id, handle FROM users WHERE email = <e>;
-- name: byHandle
SELECT id, email FROM users WHERE org = <o> AND handle = <h>;
-- name: byCode
SELECT id FROM users WHERE code = <c>;
-- name: postBySlug
SELECT p.id, u.email FROM posts p, users u WHERE p.author = <a> AND p.slug = <s> AND u.id = p.author;
"""


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    directory = tmp_path_factory.mktemp("unique")
    (directory / "schema.sql").write_text(SCHEMA)
    (directory / "queries.sql").write_text(QUERIES)
    return piql.load(directory / "schema.sql", directory / "queries.sql")


def test_lookups_by_unique_keys_are_one_row(app):
    levels = {q.name: (q.level, q.ops_bound) for q in app.plan.queries}
    assert levels == {"byEmail": ("SI-1", 2), "byHandle": ("SI-1", 2), "byCode": ("SI-1", 1),
                      "postBySlug": ("SI-1", 2)}


def test_a_second_row_with_the_same_unique_values_is_refused_and_changes_nothing(app, store_url):
    db = app.deploy(store_url)
    db.insert("users", id=1, email="a@x", org=1, handle="ann", code=None)
    before = sorted(db.rows("users"))
    with pytest.raises(ConstraintError, match=r"breaks UNIQUE \(email\): a row with "
                                               r"\(email='a@x'\) already exists"):
        db.insert("users", id=2, email="a@x", org=2, handle="bob", code="b")
    with pytest.raises(ConstraintError, match=r"UNIQUE \(org, handle\)"):
        db.insert("users", id=2, email="b@x", org=1, handle="ann", code="b")
    with pytest.raises(ConstraintError, match=r"UNIQUE NULLS NOT DISTINCT \(code\)"):
        db.insert("users", id=2, email="b@x", org=2, handle="bob", code=None)
    assert sorted(db.rows("users")) == before
    # NULLs do not clash in a plain UNIQUE key, and an update may keep its own values.
    db.insert("users", id=2, email=None, org=None, handle="ann", code="c")
    db.insert("users", id=3, email=None, org=None, handle="ann", code="d")
    db.update("users", id=1, email="a@x", org=1, handle="ann", code="e")
    assert db.query("byEmail", e="a@x").rows == ((1, "ann"),)
    db.close()


def test_bulk_loads_check_unique_keys(app, store_url):
    db = app.deploy(store_url)
    db.insert("users", id=1, email="a@x", org=1, handle="ann", code="a")
    with pytest.raises(ConstraintError, match=r"loading users breaks UNIQUE \(email\): two rows "
                                               r"have \(email='a@x'\)"):
        db.load("users", [(2, "a@x", 2, "bob", "b")])
    with pytest.raises(ConstraintError, match=r"UNIQUE \(org, handle\)"):
        db.load("users", [(2, "b@x", 5, "bob", "b"), (3, "c@x", 5, "bob", "c")])
    assert db.load("users", [(2, None, None, "bob", "b"), (3, None, None, "bob", "c")]) == 2
    assert len(db.rows("users")) == 3
    db.close()


@pytest.mark.parametrize("seed", range(4))
def test_random_writes_keep_answers_equal_to_sql_within_bounds(app, seed, store_url):
    chooser = random.Random(seed)
    db = app.deploy(store_url)  # strict: a query or write over its bound raises
    small = [None, "a", "b", "c"]
    for _ in range(300):
        kind = chooser.choice(["insert"] * 4 + ["update", "delete"])
        if chooser.random() < 0.6:
            row = {"id": chooser.randrange(12), "email": chooser.choice(small),
                   "org": chooser.choice([None, 1, 2]), "handle": chooser.choice(["x", "y"]),
                   "code": chooser.choice(small)}
            table = "users"
        else:
            users = db.rows("users")
            author = chooser.choice(users)[0] if users else 0
            row = {"id": chooser.randrange(12), "author": author, "slug": chooser.choice(small)}
            table = "posts"
        try:
            if kind == "insert":
                db.insert(table, **row)
            elif kind == "update":
                db.update(table, **row)
            else:
                db.delete(table, id=row["id"])
        except ConstraintError:
            pass
    emails = Counter(r[1] for r in db.rows("users") if r[1] is not None)
    assert all(n == 1 for n in emails.values())
    for query in app.plan.queries:
        for params in _params(query.name, small):
            got = db.query(query.name, **params)
            assert got.ops <= got.bound
            assert Counter(normal(got.rows)) == Counter(normal(oracle(db, query, params)))
    db.close()


def _params(name: str, small: list) -> list[dict]:
    values = [v for v in small if v is not None] + ["zz"]
    if name == "byEmail":
        return [{"e": v} for v in values]
    if name == "byHandle":
        return [{"o": o, "h": h} for o in (1, 2, 3) for h in ("x", "y")]
    if name == "byCode":
        return [{"c": v} for v in values]
    return [{"a": a, "s": s} for a in range(12) for s in values]
