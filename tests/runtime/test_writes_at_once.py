"""Inserts the database makes alone (``Maintainer.insert_at_once``): one statement whose
triggers check CARDINALITY and FOREIGN KEYs and keep the views, on both stores; refusals
read as piql's own checks' and change nothing; bulk loads go around the triggers."""
from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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


# Deletes and updates the database makes alone (``Maintainer.delete_at_once``,
# ``replace_at_once``): one DELETE or UPDATE statement whose triggers keep the views.
PARENTS = plan_text(
    "CREATE TABLE p (g BIGINT PRIMARY KEY, name VARCHAR, up BIGINT, "
    "FOREIGN KEY (up) REFERENCES p (g));"
    "CREATE TABLE t (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, "
    "FOREIGN KEY (g) REFERENCES p (g)) WITH CARDINALITY (k, 2) PER (g);",
    "-- name: total\nSELECT p.name, SUM(t.v) AS total, COUNT(*) AS n FROM p, t "
    "WHERE t.g = p.g AND p.name = <name> GROUP BY p.name\n"
    "-- name: children\nSELECT g FROM p WHERE up = <up> LIMIT 5\n")


def one_statement(monkeypatch, db, statements: list[str]) -> None:
    """Record the statements piql sends to the store for each write."""
    store = db.store
    for name in ("delete_row", "update_row", "write_row", "get", "delete", "insert", "scan"):
        original = getattr(store, name)
        monkeypatch.setattr(store, name, lambda *a, _n=name, _o=original, **k: (
            statements.append(_n), _o(*a, **k))[1])


def test_deletes_and_updates_are_one_statement_reporting_their_bound(db, monkeypatch):
    tags = db.plan.catalog.table("Tags")
    assert db.maintainer.at_once(tags, "delete") and db.maintainer.update_at_once(tags)
    sent: list[str] = []
    one_statement(monkeypatch, db, sent)
    report = db.delete("Tags", docId=1, tag="a")
    assert sent == ["delete_row"] and report.ops == report.bound
    assert {name for name, _, _ in report.rules} == \
        {r.name for v in db.views for r in v.rules if r.table == "Tags" and r.event == "delete"}
    sent.clear()
    reports = db.update("Tags", docId=1, tag="b", timestamp=11)
    assert sent == ["update_row"] and [r.event for r in reports] == ["delete", "insert"]
    assert all(r.ops == r.bound for r in reports)
    monkeypatch.undo()
    assert db.query("twoTags", tag1="a", tag2="b").rows == ()
    assert db.query("twoTags", tag1="b", tag2="c").rows == ((1,),)
    assert db.check().consistent


def written(db, at_once: bool, monkeypatch, writes) -> list:
    """Run ``writes`` (callables of the deployment) with or without the one-statement
    path; the error each raised (None: written), after checking a refusal changed nothing."""
    if not at_once:
        monkeypatch.setattr(db.maintainer, "at_once", lambda table, event="insert": False)
        monkeypatch.setattr(db.maintainer, "update_at_once", lambda table: False)
    found = []
    for write in writes:
        before = state(db)
        try:
            write(db)
        except ConstraintError as err:
            found.append(str(err))
            assert state(db) == before
        else:
            found.append(None)
    monkeypatch.undo()
    assert db.check().consistent
    return found


@pytest.mark.parametrize("at_once", [True, False])
def test_one_statement_deletes_and_updates_refuse_as_piqls_own_checks(store_url, monkeypatch,
                                                                       at_once):
    """The same writes, on the one-statement path and on piql's own, are refused with the
    same messages and change nothing: a missing row, a parent with children (a row that
    is its own parent is none), CARDINALITY and FOREIGN KEY of an update's new row, a
    SUM leaving 64 bits."""
    db = Deployment(PARENTS, store_url)
    p, t = db.plan.catalog.table("p"), db.plan.catalog.table("t")
    assert all(db.maintainer.at_once(x, "delete") and db.maintainer.update_at_once(x)
               for x in (p, t))
    for g, name, up in ((1, "a", 1), (2, "b", 1), (3, "c", None)):
        db.insert("p", g=g, name=name, up=up)
    for k, g, v in ((1, 1, 5), (2, 1, 6), (3, 2, 2 ** 62), (4, 3, 2 ** 62)):
        db.insert("t", k=k, g=g, v=v)
    found = written(db, at_once, monkeypatch, [
        lambda d: d.delete("t", k=9),
        lambda d: d.update("t", k=9, g=1, v=0),
        lambda d: d.delete("p", g=3),  # t row 4 refers to it
        lambda d: d.delete("p", g=1),  # t rows and p row 2 refer to it
        lambda d: d.update("t", k=3, g=1, v=1),  # g 1 has two t rows already
        lambda d: d.update("t", k=3, g=7, v=1),  # no p row 7
        lambda d: d.update("t", k=3, g=3, v=2 ** 62),  # total c: 2**63
        lambda d: d.update("p", g=2, name="c", up=1),  # moves 2**62 onto c's 2**62
        lambda d: d.update("t", k=3, g=2, v=-1),
        lambda d: d.delete("t", k=4),
        lambda d: d.delete("p", g=3),  # no child left
        lambda d: d.update("p", g=2, name="a", up=2),  # now its own parent
        lambda d: d.update("p", g=1, name="a", up=None),
    ])
    assert found[:8] == [
        "t has no row with key (k=9)", "t has no row with key (k=9)",
        "delete from p breaks FOREIGN KEY (g) REFERENCES p of t: t rows still refer to (g=3)",
        "delete from p breaks FOREIGN KEY (up) REFERENCES p of p: p rows still refer to (up=1)",
        "insert into t breaks CARDINALITY (k, 2) PER (g): (g=1) already has 2 k values "
        "(limit 2)",
        "insert into t breaks FOREIGN KEY (g) REFERENCES p: no p row with (g=7)",
        f"the write would make total_view.sum_v {2 ** 63}, outside the store's integer range "
        "(-2**63 .. 2**63-1), where SQL's SUM overflows too",
        f"the write would make total_view.sum_v {2 ** 63}, outside the store's integer range "
        "(-2**63 .. 2**63-1), where SQL's SUM overflows too",
    ] and found[8:] == [None] * 5
    assert db.query("total", name="a").rows == (("a", 10, 3),)
    db.delete("t", k=3)
    db.delete("p", g=2)  # it was its own only child
    assert db.rows("p") == [(1, "a", None)]
    assert db.check().consistent
    db.close()


@pytest.mark.parametrize("at_once", [True, False])
def test_a_parent_that_is_its_own_parent_names_its_other_children(store_url, monkeypatch,
                                                                  at_once):
    """A row referring to itself is not its own child on either path: the refusal names the
    rows of the other table that refer to it (the one-statement path reads why with the
    row still in place, where piql's own path has deleted it)."""
    db = Deployment(PARENTS, store_url)
    db.insert("p", g=1, name="a", up=1)
    db.insert("t", k=1, g=1, v=5)
    assert written(db, at_once, monkeypatch, [lambda d: d.delete("p", g=1)]) == [
        "delete from p breaks FOREIGN KEY (g) REFERENCES p of t: t rows still refer to (g=1)"]
    db.close()


HUGE = [2 ** 62, -2 ** 62, 2 ** 63 - 1, -2 ** 63, 1, -1, 7]
WRITES = st.lists(st.tuples(st.sampled_from(["insert", "insert", "delete", "update"]),
                            st.sampled_from(["p", "t"]), st.integers(0, 3), st.integers(0, 3),
                            st.sampled_from("abc"), st.sampled_from(HUGE)),
                  min_size=1, max_size=40)


def _write(db, kind: str, table: str, key: int, other: int, name: str, value: int):
    if table == "p":
        row = dict(g=key, name=name, up=None if other == 3 else other)
    else:
        row = dict(k=key, g=other, v=value)
    key_of = {"p": "g", "t": "k"}[table]
    if kind == "insert":
        return db.insert(table, **row)
    if kind == "delete":
        return db.delete(table, **{key_of: key})
    return db.update(table, **row)


@pytest.mark.parametrize("new_store", ["sqlite", "postgres"], indirect=True)
def test_random_writes_one_statement_or_not_agree_with_the_oracle(new_store, monkeypatch):
    """Random inserts, deletes and updates (FOREIGN KEYs to another table and to the same
    one, CARDINALITY, SUMs at the ends of 64 bits over a join) made once through the
    one-statement paths and once through piql's own: the same refusals with the same
    messages, the same rows, reports within their bounds, and every view and query equal
    to its SQL on the base tables."""
    from tests.runtime.workload import oracle

    examples = 60 if new_store.kind == "sqlite" else 8

    @settings(max_examples=examples, deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(WRITES)
    def run(writes) -> None:
        fast, slow = Deployment(PARENTS, new_store.scratch()), Deployment(PARENTS, new_store.scratch())
        with monkeypatch.context() as patch:
            patch.setattr(slow.maintainer, "at_once", lambda table, event="insert": False)
            patch.setattr(slow.maintainer, "update_at_once", lambda table: False)
            try:
                for write in writes:
                    outcomes = []
                    for db in (fast, slow):
                        try:
                            reports = _write(db, *write)
                        except ConstraintError as err:
                            outcomes.append(str(err))
                        else:
                            for report in reports if isinstance(reports, list) else [reports]:
                                assert report.ops <= report.bound
                            outcomes.append(None)
                    assert outcomes[0] == outcomes[1], write
                    assert state(fast) == state(slow), write
                assert fast.check().consistent
                for name in "abc":
                    assert list(fast.query("total", name=name).rows) == oracle(
                        fast, fast.query_plan("total"), {"name": name})
                for up in range(4):
                    assert sorted(fast.query("children", up=up).rows) == sorted(oracle(
                        fast, fast.query_plan("children"), {"up": up}))
            finally:
                fast.close()
                slow.close()

    run()


def test_a_postgres_update_keeping_frozen_columns_is_one_statement(postgres_stores, monkeypatch):
    """On PostgreSQL an update of a table whose columns a periodic view freezes is one
    UPDATE (TPC-W's stock and price updates of an item): the table's trigger refuses a
    change of a frozen column, changing nothing, and piql's path then names the view."""
    from tests.planner.test_periodic import BEST_SELLERS, SHOP

    schema = SHOP.replace("i_subject VARCHAR)", "i_subject VARCHAR, i_stock BIGINT)")
    db = Deployment(plan_text(schema, BEST_SELLERS), postgres_stores())
    db.insert("item", i_id=1, i_subject="a", i_stock=5)
    item = db.plan.catalog.table("item")
    assert "item" in db.maintainer.frozen and db.maintainer.update_at_once(item)
    sent: list[str] = []
    one_statement(monkeypatch, db, sent)
    reports = db.update("item", i_id=1, i_subject="a", i_stock=4)
    assert sent == ["update_row"] and all(r.ops == r.bound for r in reports)
    sent.clear()
    with pytest.raises(ConstraintError, match="the periodic view bestSellers reads through"):
        db.update("item", i_id=1, i_subject="b", i_stock=3)
    assert sent[0] == "update_row" and "get" in sent  # refused, then piql's own path
    monkeypatch.undo()
    assert db.store.sql('SELECT "i_subject", "i_stock" FROM "item"') == [("a", 4)]
    assert db.check().consistent
