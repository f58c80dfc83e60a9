"""Inserts the database makes alone (``Maintainer.insert_at_once``): one statement whose
triggers check CARDINALITY and FOREIGN KEYs and keep the views, on both stores; refusals
read as piql's own checks' and change nothing; bulk loads go around the triggers."""
from __future__ import annotations

import pytest

import piql
from piql.runtime.deployment import Deployment
from piql.runtime.errors import ConstraintError
from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA, plan_text

APP = piql.load(PAPER_SCHEMA, PAPER_QUERIES)


@pytest.fixture
def db(store_url):
    deployment = APP.deploy(store_url)
    deployment.insert("Documents", docId=1, timestamp=10, text="one")
    for tag in "abcdefghi":
        deployment.insert("Tags", docId=1, tag=tag, timestamp=10)
    yield deployment
    deployment.close()


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in db.store.shapes}


def test_an_insert_the_triggers_keep_is_one_statement_reporting_its_bound(db):
    tags = db.plan.catalog.table("Tags")
    assert db.maintainer.at_once(tags)
    report = db.insert("Tags", docId=1, tag="j", timestamp=10)
    # the database counts none of its reads: the static bound, rules included
    assert report.ops == report.bound
    assert {name for name, _, _ in report.rules} == \
        {r.name for v in db.views for r in v.rules if r.table == "Tags" and r.event == "insert"}
    assert db.check().consistent
    assert db.query("twoTags", tag1="j", tag2="a").rows == ((1,),)


@pytest.mark.parametrize("row, message", [
    (dict(docId=1, tag="a", timestamp=10),
     "Tags already has a row with key (docId=1, tag='a') (PRIMARY KEY (docId, tag))"),
    (dict(docId=1, tag="zz", timestamp=10),
     "insert into Tags breaks CARDINALITY (tag, 10) PER (docId): (docId=1) already has 10 tag "
     "values (limit 10)"),
    (dict(docId=7, tag="a", timestamp=10),
     "insert into Tags breaks FOREIGN KEY (docId) REFERENCES Documents: no Documents row with "
     "(docId=7)"),
])
def test_refusals_read_as_piqls_own_checks_and_change_nothing(db, row, message):
    db.insert("Tags", docId=1, tag="j", timestamp=10)  # the tenth tag
    before = state(db)
    with pytest.raises(ConstraintError) as caught:
        db.insert("Tags", **row)
    assert str(caught.value) == message
    assert state(db) == before


def test_bulk_loads_go_around_the_triggers_and_writes_after_them_are_kept(store_url):
    db = APP.deploy(store_url)
    db.load("Documents", [(d, d * 10, None) for d in range(1, 51)])
    db.load("Tags", [(d, t, d) for d in range(1, 51) for t in "abc"])
    assert db.check().consistent
    db.insert("Tags", docId=3, tag="d", timestamp=3)
    assert db.check().consistent
    assert db.query("twoTags", tag1="d", tag2="a").rows == ((3,),)
    db.close()


def test_sqlite_triggers_add_sums_as_piql_does(tmp_path):
    """SQLite's ``+`` turns an integer overflow into a REAL and has no exact REAL sums: the
    connection's triggers add a SUM with piql's functions (``runtime.sqlite_functions``),
    so an insert into a table a SUM view reads is one statement too, an overflow is
    refused as piql refuses it and changes nothing, and REAL sums stay exact."""
    plan = plan_text(
        "CREATE TABLE p (g BIGINT, PRIMARY KEY (g));"
        "CREATE TABLE t (k BIGINT, g BIGINT, v BIGINT, w DOUBLE, PRIMARY KEY (k), "
        "FOREIGN KEY (g) REFERENCES p (g));",
        "-- name: total\nSELECT SUM(v), SUM(w) FROM t WHERE g = <g>")
    db = Deployment(plan, str(tmp_path / "s.db"))
    table = plan.catalog.table("t")
    assert db.store.maintained_rules == {r.name for v in plan.views for r in v.rules}
    assert db.maintainer.at_once(table) and db.store.checked_tables == {"t"}
    db.insert("p", g=1)
    with pytest.raises(ConstraintError, match=r"no p row with \(g=2\)"):
        db.insert("t", k=1, g=2, v=1, w=0.0)
    db.insert("t", k=1, g=1, v=2 ** 62, w=1e17)
    before = state(db)
    with pytest.raises(ConstraintError, match="total_view.* outside the store's integer range"):
        db.insert("t", k=2, g=1, v=2 ** 62, w=1.5)
    assert state(db) == before
    db.insert("t", k=2, g=1, v=-2 ** 62, w=1.5)
    db.delete("t", k=1)
    assert db.query("total", g=1).rows == ((-2 ** 62, 1.5),)  # not 0.0: the sum is exact
    db.update("t", k=2, g=1, v=None, w=None)
    assert db.query("total", g=1).rows == ((None, None),)
    assert db.check().consistent
    db.close()
