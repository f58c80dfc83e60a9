"""CARDINALITY with NULLs: NULL is a value that counts, on insert, update and load alike.

A NULL in the constrained column is one more distinct value for its group, and rows
with NULL in a PER column form their own group (as GROUP BY groups NULLs). That keeps
the static bound of a query true when it reads the NULL rows.
"""
from __future__ import annotations

import pytest

from piql import App
from piql.runtime.errors import ConstraintError
from tests.conftest import plan_text, engines_on_stores

ACCOUNTS = plan_text(
    "CREATE TABLE accounts (id BIGINT PRIMARY KEY, team VARCHAR, role VARCHAR) "
    "WITH CARDINALITY (role, 2) PER (team), CARDINALITY (id, 2) PER (team, role);",
    "-- name: members\nSELECT id, role FROM accounts WHERE team = <team>\n")
ENGINES = ["store", "duckdb", "spark"]


def state(db) -> list:
    return sorted(db.rows("accounts"), key=repr)


def test_the_query_is_bounded_by_both_constraints():
    assert ACCOUNTS.query("members").ops_bound == 8  # 2 roles x 2 ids, fetched through an index


def test_a_null_role_is_one_more_role_of_its_team(store_url):
    db = App(ACCOUNTS).deploy(store_url)
    db.insert("accounts", id=1, team="x", role="admin")
    db.insert("accounts", id=2, team="x", role=None)
    before = state(db)
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(role, 2\) PER \(team\)"):
        db.insert("accounts", id=3, team="x", role="guest")  # admin, NULL and guest: 3 roles
    assert state(db) == before
    db.insert("accounts", id=3, team="x", role="admin")  # an existing role is fine


def test_null_role_rows_are_one_group_for_the_ids_per_role(store_url):
    db = App(ACCOUNTS).deploy(store_url)
    accepted = 0
    for number in range(20):
        try:
            db.insert("accounts", id=number, team="x", role=None)
            accepted += 1
        except ConstraintError as err:
            assert "CARDINALITY (id, 2) PER (team, role)" in str(err)
            assert "role=None" in str(err)
    assert accepted == 2
    result = db.query("members", team="x")  # strict: raises if it exceeds its bound
    assert sorted(result.rows) == [(0, None), (1, None)]
    assert result.ops <= result.bound


def test_a_null_per_value_forms_its_own_group(store_url):
    db = App(ACCOUNTS).deploy(store_url)
    db.insert("accounts", id=1, team=None, role="a")
    db.insert("accounts", id=2, team=None, role="b")
    with pytest.raises(ConstraintError, match=r"\(team=None\) already has 2 role values"):
        db.insert("accounts", id=3, team=None, role="c")
    db.insert("accounts", id=3, team="y", role="c")  # another team is another group


def test_update_to_null_counts_the_null_too(store_url):
    db = App(ACCOUNTS).deploy(store_url)
    db.insert("accounts", id=1, team="x", role="a")
    db.insert("accounts", id=2, team="x", role="b")
    db.insert("accounts", id=3, team="x", role="b")
    before = state(db)
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(role, 2\)"):
        db.update("accounts", id=3, team="x", role=None)  # a, b and NULL
    assert state(db) == before
    db.update("accounts", id=1, team="x", role=None)  # replaces role a: still 2 roles
    assert sorted(db.query("members", team="x").rows, key=repr) == [
        (1, None), (2, "b"), (3, "b")]


@pytest.mark.parametrize("engine, new_store", engines_on_stores(ENGINES), indirect=["new_store"])
def test_load_counts_nulls_as_insert_does(engine, store_url):
    db = App(ACCOUNTS).deploy(store_url, engine=engine)
    db.insert("accounts", id=1, team="x", role=None)
    db.insert("accounts", id=2, team="x", role=None)
    db.load("accounts", [(3, "y", "a"), (4, "y", None)])  # refused before: counted NULLs
    before = state(db)
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(role, 2\) PER \(team\): "
                                              r"\(team='y'\) would have 3 role values"):
        db.load("accounts", [(5, "y", "b")])  # a, NULL and b
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(id, 2\) PER \(team, role\): "
                                              r"\(team='x', role=None\) would have 3 id values"):
        db.load("accounts", [(6, "x", None)])
    with pytest.raises(ConstraintError, match=r"\(team=None\) would have 3 role values"):
        db.load("accounts", [(7, None, "a"), (8, None, None), (9, None, "c")])
    assert state(db) == before
    db.load("accounts", [(7, None, "a"), (8, None, None)])
    assert db.check().consistent
