"""The Python API on the paper's application: writes, refusals, atomicity, loads, checks."""
from __future__ import annotations

import pytest

import piql
from piql.runtime import writes
from piql.runtime.errors import (
    BoundExceeded, ConstraintError, DeploymentError, ParameterError, UnboundedQuery, UnknownName,
)
from tests.conftest import EXAMPLES, PAPER_QUERIES, PAPER_SCHEMA, paper_schema_text

APP = piql.load(PAPER_SCHEMA, PAPER_QUERIES)


@pytest.fixture
def db(store_url):
    deployment = APP.deploy(store_url)
    deployment.insert("Documents", docId=1, timestamp=10, text="one")
    deployment.insert("Documents", docId=2, timestamp=20, text="two")
    for doc, tag in [(1, "a"), (1, "b"), (2, "a"), (2, "b"), (2, "c")]:
        deployment.insert("Tags", docId=doc, tag=tag, timestamp=doc * 10)
    yield deployment
    deployment.close()


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in db.store.shapes}


def test_queries_return_rows_and_their_operations(db):
    result = db.query("twoTags", tag1="a", tag2="b")
    assert result.rows == ((1,), (2,))  # ordered by the documents' timestamps
    assert result.ops <= result.bound == 5
    assert db.query("countTags", tag="a").rows == ((2,),)
    assert db.query("countTags", tag="zzz").rows == ((0,),)  # empty group: COUNT is 0
    assert db.query("tagsOfDoc", doc=2).dicts()[0] == {"docId": 2, "tag": "a", "timestamp": 20}


def test_writes_report_measured_operations_within_their_bounds(db):
    report = db.insert("Tags", docId=1, tag="c", timestamp=10)
    assert report.ops <= report.bound
    assert all(measured <= bound for _, measured, bound in report.rules)
    assert db.query("twoTags", tag1="c", tag2="a").rows == ((1,), (2,))


def test_cardinality_violation_is_refused_and_changes_nothing(store_url):
    small = paper_schema_text().replace("WITH CARDINALITY (tag, 10)", "WITH CARDINALITY (tag, 2)")
    path = PAPER_SCHEMA.parent / "_small_schema.sql"
    path.write_text(small)
    try:
        deployment = piql.load(path, PAPER_QUERIES).deploy(store_url)
    finally:
        path.unlink()
    deployment.insert("Documents", docId=1, timestamp=1, text="x")
    deployment.insert("Tags", docId=1, tag="a", timestamp=1)
    deployment.insert("Tags", docId=1, tag="b", timestamp=1)
    before = state(deployment)
    with pytest.raises(ConstraintError) as caught:
        deployment.insert("Tags", docId=1, tag="c", timestamp=1)
    message = str(caught.value)
    assert "Tags" in message and "CARDINALITY (tag, 2) PER (docId)" in message
    assert "docId=1" in message and "limit 2" in message
    assert state(deployment) == before


def test_duplicate_key_and_missing_parent_are_refused(db):
    before = state(db)
    with pytest.raises(ConstraintError, match="already has a row with key"):
        db.insert("Tags", docId=1, tag="a", timestamp=5)
    with pytest.raises(ConstraintError, match="FOREIGN KEY"):
        db.insert("Tags", docId=99, tag="a", timestamp=5)
    with pytest.raises(ConstraintError, match="still refer"):
        db.delete("Documents", docId=1)
    with pytest.raises(ConstraintError, match="no row with key"):
        db.delete("Tags", docId=1, tag="zz")
    assert state(db) == before


def test_a_crash_in_the_middle_of_maintenance_leaves_the_store_unchanged(db, monkeypatch):
    """piql's rules (SQLite): a crash after the first rule wrote its view; the database's
    (PostgreSQL's triggers): a crash once the row and every view are written."""
    before = state(db)
    calls = {"n": 0}
    in_database = bool(db.store.maintained_rules)
    step = "_report" if in_database else "_apply"
    original = getattr(writes.Maintainer, step)

    def crash_on_second_rule(self, *args):
        calls["n"] += 1
        if calls["n"] == (1 if in_database else 2):
            raise RuntimeError("injected crash")
        return original(self, *args)

    monkeypatch.setattr(writes.Maintainer, step, crash_on_second_rule)
    # an insert the database makes alone is one statement (no middle to crash in): here in
    # a transaction of piql's, as an update's insert half runs
    monkeypatch.setattr(writes.Maintainer, "at_once", lambda self, table: False)
    with pytest.raises(RuntimeError, match="injected crash"):
        db.insert("Tags", docId=1, tag="z", timestamp=10)
    assert calls["n"] == (1 if in_database else 2)  # views had been written already
    assert state(db) == before
    monkeypatch.undo()
    assert db.check().consistent


@pytest.mark.parametrize("params, words", [
    ({"tag1": "a"}, "needs parameter <tag2>"),
    ({"tag1": "a", "tag2": "b", "tag3": "c"}, "has no parameter <tag3>"),
    ({"tag1": "a", "tag2": 7}, "parameter <tag2>"),
])
def test_bad_parameters_are_clear_errors(db, params, words):
    before = state(db)
    with pytest.raises(ParameterError, match=words):
        db.query("twoTags", **params)
    assert state(db) == before


def test_bad_writes_name_what_is_wrong(db):
    with pytest.raises(UnknownName, match="no table named 'Nope'"):
        db.insert("Nope", x=1)
    with pytest.raises(UnknownName, match="no column 'colour'"):
        db.insert("Tags", docId=1, tag="q", timestamp=1, colour="red")
    with pytest.raises(ConstraintError, match="Tags.timestamp is BIGINT"):
        db.insert("Tags", docId=1, tag="q", timestamp="yesterday")
    with pytest.raises(UnknownName, match="no query named"):
        db.query("nope")


def test_strict_mode_raises_when_a_bound_is_exceeded(db, monkeypatch):
    query = APP.plan.query("tagsOfDoc")
    from dataclasses import replace

    tighter = replace(query, ops_bound=1)
    monkeypatch.setattr(db, "query_plan", lambda name: tighter)
    with pytest.raises(BoundExceeded, match="tagsOfDoc did 2 operations; its bound is 1"):
        db.query("tagsOfDoc", doc=1)
    handle = db.prepared("tagsOfDoc")  # the handle's own path (``Served.fused``) too
    with pytest.raises(BoundExceeded, match="tagsOfDoc did 2 operations; its bound is 1"):
        handle(1)
    db.strict = False
    assert handle(1).ops == 2


def test_update_is_delete_then_insert_atomically(db):
    db.update("Documents", docId=1, timestamp=30, text="moved")
    assert db.query("twoTags", tag1="a", tag2="b").rows == ((2,), (1,))
    assert db.check().consistent


def test_a_store_deployed_with_another_plan_is_refused(store_url):
    path = store_url
    APP.deploy(path).close()
    APP.deploy(path).close()  # the same plan reopens
    other = piql.load(PAPER_SCHEMA, PAPER_SCHEMA.parent / "paper_bounded_queries.sql")
    with pytest.raises(DeploymentError, match="deployed with a different plan"):
        other.deploy(path)


def test_data_survives_reopening_a_store(store_url):
    path = store_url
    first = APP.deploy(path)
    first.insert("Documents", docId=1, timestamp=1, text="x")
    first.insert("Tags", docId=1, tag="a", timestamp=1)
    first.close()
    again = APP.deploy(path)
    assert again.query("countTags", tag="a").rows == ((1,),)


def test_a_file_store_is_in_wal_mode(tmp_path):
    assert APP.deploy(tmp_path / "app.db").store.sql("PRAGMA journal_mode")[0][0] == "wal"


def test_unbounded_queries_are_not_run(store_url):
    app = piql.load(PAPER_SCHEMA, PAPER_SCHEMA.parent / "paper_unbounded_queries.sql")
    db = app.deploy(store_url)
    name = next(q.name for q in app.plan.queries if not q.bounded and q.query.block is not None)
    with pytest.raises(UnboundedQuery, match="unbounded"):
        db.query(name, **{p: 1 for p in app.plan.query(name).query.block.params})


def test_bulk_load_builds_views_in_one_pass_and_checks_constraints(tmp_path, store_url):
    db = APP.deploy(store_url)
    db.load("Documents", [{"docId": d, "timestamp": d, "text": f"d{d}"} for d in range(1, 51)])
    csv = tmp_path / "tags.csv"
    csv.write_text("docId,tag,timestamp\n" + "".join(
        f"{d},{t},{d}\n" for d in range(1, 51) for t in ("a", "b", "c")[: 1 + d % 3]))
    assert db.load("Tags", path=csv) == sum(1 + d % 3 for d in range(1, 51))
    assert db.check().consistent
    assert db.query("countTags", tag="a").rows == ((50,),)
    before = state(db)
    with pytest.raises(ConstraintError, match="two rows with key"):
        db.load("Tags", [(60, "a", 1), (60, "a", 2)])
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(tag, 10\)"):
        db.load("Tags", [(1, f"t{i}", 1) for i in range(10)])
    assert state(db) == before


def test_load_parquet(tmp_path, store_url):
    import duckdb

    path = tmp_path / "docs.parquet"
    duckdb.sql("SELECT range::BIGINT AS docId, range * 10 AS timestamp, 'x' AS text "
               f"FROM range(1, 6)").write_parquet(str(path))
    db = APP.deploy(store_url)
    assert db.load("Documents", path=path) == 5
    assert len(db.rows("Documents")) == 5


def test_consistency_check_finds_and_repairs_a_corrupted_view(db):
    db.store.sql('DELETE FROM "twoTags_view" WHERE "docId" = 1')
    db.store.sql('UPDATE "docsPerTag" SET "cnt" = 42 WHERE "tag" = \'a\'')
    report = db.check()
    assert not report.consistent
    broken = {c.view: c for c in report.views if not c.consistent}
    assert set(broken) == {"twoTags_view", "docsPerTag"}
    # (a,a), (a,b), (b,b) for doc 1: one orientation of each pair (symmetric pair)
    assert len(broken["twoTags_view"].missing) == 3
    repaired = db.check(repair=True)
    assert all(c.repaired for c in repaired.views if not c.consistent)
    assert db.check().consistent
    assert db.query("twoTags", tag1="a", tag2="b").rows == ((1,), (2,))


def test_bulk_load_checks_foreign_keys_and_changes_nothing(store_url):
    db = APP.deploy(store_url)
    db.load("Documents", [{"docId": 1, "timestamp": 1, "text": "d1"}])
    before = state(db)
    with pytest.raises(ConstraintError, match=r"FOREIGN KEY \(docId\) REFERENCES Documents.*docId=2"):
        db.load("Tags", [(1, "a", 1), (2, "a", 1)])
    assert state(db) == before


SOCIAL = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
HOUR = 3_600_000


def test_refresh_catches_up_on_writes_to_old_epochs(store_url):
    """Late data: a like in an hour long past shows after the next refresh, written
    one at a time or loaded in bulk."""
    db = SOCIAL.deploy(store_url, partitions=3)
    db.load("users", [(u, f"u{u}", f"u{u}@x", 0) for u in (1, 2, 3)])
    db.load("posts", [(10, 1, 0, "hello"), (11, 2, 0, "again")])
    db.load("likes", [(10, 1, 5), (11, 1, 7)])
    db.insert("likes", postId=10, userId=2, likedAt=HOUR * 2 + 1)
    db.insert("likes", postId=11, userId=3, likedAt=HOUR * 2 + 2)
    db.insert("likes", postId=10, userId=3, likedAt=HOUR * 2 + 3)
    db.refresh(now_ms=HOUR * 100)
    assert sorted(db.query("trending", hour=0).rows) == [(10, 1), (11, 1)]
    assert db.query("trending", hour=2 * HOUR).rows == ((10, 2), (11, 1))
    db.delete("likes", postId=10, userId=3)
    db.refresh(now_ms=HOUR * 100)
    assert sorted(db.query("trending", hour=2 * HOUR).rows) == [(10, 1), (11, 1)]
    assert db.store.sql("SELECT COUNT(*) FROM _piql_dirty_epochs") == [(0,)]


def test_count_and_avg_of_a_column_skip_nulls_under_maintenance(store_url):
    from piql import App
    from tests.conftest import plan_text

    plan = plan_text("CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT);",
                     "-- name: stats\nSELECT COUNT(v) AS n, AVG(v) AS mean, SUM(v) AS total, "
                     "COUNT(*) AS rows_ FROM r WHERE g = <g>\n")
    assert plan.query("stats").level == "SI-2"
    db = App(plan).deploy(store_url)
    for k, v in enumerate([4, None, 8, None]):
        db.insert("r", k=k, g=1, v=v)
    assert db.query("stats", g=1).rows == ((2, 6.0, 12, 4),)
    db.delete("r", k=0)
    db.delete("r", k=2)
    assert db.query("stats", g=1).rows == ((0, None, None, 2),)
    assert db.check().consistent


@pytest.mark.parametrize("rows, words", [
    ([(1, 1, "a"), (2, 2)], r"loading Documents, row 2: .* tuple of its 3 column values "
                            r"\(docId, timestamp, text\); got 2 values"),
    ([(1, 1, "a", "extra")], r"loading Documents, row 1: .* got 4 values"),
    ([(1, 1, "a"), 5], r"loading Documents, row 2: .* got 5"),
    ([{"docId": 1}, {"docId": 2, "timestamp": "noon"}],
     r"loading Documents, row 2: Documents.timestamp is BIGINT; got 'noon'"),
    ([{"docId": 1, "colour": "red"}], r"loading Documents, row 1: .*no column 'colour'"),
])
def test_load_refuses_a_malformed_row_naming_it(rows, words, store_url):
    db = APP.deploy(store_url)
    db.load("Documents", [(9, 9, "kept")])
    before = state(db)
    with pytest.raises((ConstraintError, UnknownName), match=words):
        db.load("Documents", rows)
    assert state(db) == before


def test_load_refuses_a_csv_value_of_the_wrong_type_naming_row_and_column(tmp_path, store_url):
    from piql.runtime.errors import DataFileError

    db = APP.deploy(store_url)
    csv = tmp_path / "docs.csv"
    csv.write_text("docId,timestamp,text\n1,10,one\n2,abc,two\n")
    with pytest.raises(DataFileError, match=r"docs.csv:3:2: Documents.timestamp "
                                            r"is BIGINT; got 'abc'"):
        db.load("Documents", path=csv)
    assert db.rows("Documents") == []


THREADS = """CREATE TABLE messages (id BIGINT PRIMARY KEY, reply_to BIGINT, body VARCHAR,
    FOREIGN KEY (reply_to) REFERENCES messages (id));"""


def test_a_row_may_refer_to_itself_through_a_foreign_key(store_url):
    from piql import App
    from tests.conftest import plan_text

    db = App(plan_text(THREADS, "-- name: one\nSELECT body FROM messages WHERE id = <id>\n")).deploy(store_url)
    db.insert("messages", id=1, reply_to=1, body="talking to myself")  # its own parent
    db.insert("messages", id=2, reply_to=1, body="reply")
    before = state(db)
    with pytest.raises(ConstraintError, match="no messages row with"):
        db.insert("messages", id=3, reply_to=4, body="orphan")
    with pytest.raises(ConstraintError, match=r"messages rows still refer to \(reply_to=1\)"):
        db.delete("messages", id=1)  # message 2 still replies to it
    assert state(db) == before
    db.update("messages", id=1, reply_to=1, body="edited")
    db.delete("messages", id=2)
    db.delete("messages", id=1)  # only itself referred to it
    db.load("messages", [(5, 5, "loaded, its own parent")])
    db.delete("messages", id=5)
    assert db.rows("messages") == []


def test_a_not_null_column_refuses_null_on_every_write(tmp_path, store_url):
    """Bounds rest on NOT NULL (a foreign-key lookup through one drops no row): piql keeps it."""
    from piql import App
    from piql.runtime.errors import ConstraintError as Refused
    from tests.conftest import plan_text

    schema = ("CREATE TABLE accounts (id BIGINT PRIMARY KEY, name VARCHAR);"
              "CREATE TABLE events (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, "
              "FOREIGN KEY (account_id) REFERENCES accounts (id));")
    db = App(plan_text(schema, "-- name: q\nSELECT id FROM events WHERE id = <id>\n")).deploy(store_url)
    db.insert("accounts", id=1, name="a")
    for write in (lambda: db.insert("events", id=1),
                  lambda: db.insert("events", id=1, account_id=None),
                  lambda: db.load("events", [(2, None)])):
        with pytest.raises(Refused, match="events.account_id is NOT NULL"):
            write()
    db.insert("events", id=1, account_id=1)
    with pytest.raises(Refused, match="NOT NULL"):
        db.update("events", id=1, account_id=None)
    assert db.rows("events") == [(1, 1)]
