"""What the PostgreSQL store adds to the protocol's behaviour (the rest runs on both stores
in the other runtime tests): threads sharing a deployment, the write lock, the database's
own refusals, SQLite's order of values, and bounded statements that read indexes."""
from __future__ import annotations

import threading

import psycopg
import pytest

import piql
from piql import App
from piql.runtime.errors import ConstraintError, DeploymentError, StoreBusy, StoreRefused
from piql.runtime.postgres_store import redacted, short_name
from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA, plan_text

APP = piql.load(PAPER_SCHEMA, PAPER_QUERIES)


def test_threads_share_one_deployment(postgres_stores):
    """Eight threads write and query through one Deployment: each query's operations are
    its own (strict mode would raise on another thread's count), and every view stays
    equal to its definition."""
    db = APP.deploy(postgres_stores())
    db.load("Documents", [(d, d, f"d{d}") for d in range(1, 41)])
    errors: list[BaseException] = []

    def work(worker: int) -> None:
        try:
            for i in range(15):
                doc = 1 + (worker * 7 + i) % 40
                try:
                    db.insert("Tags", docId=doc, tag=f"t{(worker + i) % 5}", timestamp=i)
                except ConstraintError:
                    pass  # the same (doc, tag) from another thread: refused, nothing written
                result = db.query("twoTags", tag1="t1", tag2="t2")
                assert result.ops <= result.bound
                db.query("countTags", tag=f"t{i % 5}")
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            errors.append(err)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    assert db.check().consistent
    tags = db.rows("Tags")
    assert len(tags) > 20
    counts = {}
    for _, tag, _ in tags:
        counts[tag] = counts.get(tag, 0) + 1
    assert all(db.query("countTags", tag=t).rows == ((n,),) for t, n in counts.items())


def test_a_write_waits_for_the_write_lock_then_is_busy_and_changes_nothing(postgres_stores):
    url = postgres_stores()
    holder = APP.deploy(url)
    impatient = APP.deploy(url, busy_timeout=0.3)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.store.transaction():  # what a long load or repair does
            holder.store.insert("Documents", {"docId": 999, "timestamp": 1, "text": "held"})
            held.set()
            release.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert held.wait(30)
        with pytest.raises(StoreBusy, match=r"busy: another connection held its write lock for "
                                            r"more than 0\.3 s"):
            impatient.insert("Documents", docId=1, timestamp=1, text="x")
    finally:
        release.set()
        thread.join()
    assert impatient.rows("Documents") == [(999, 1, "held")]
    impatient.insert("Documents", docId=1, timestamp=1, text="x")  # the lock is free again
    assert len(impatient.rows("Documents")) == 2


def test_the_databases_own_refusal_is_a_constraint_error_and_rolls_back(postgres_stores):
    db = APP.deploy(postgres_stores())
    db.insert("Documents", docId=1, timestamp=1, text="x")
    with pytest.raises(StoreRefused, match="duplicate key"):
        with db.store.transaction():
            db.store.insert("Documents", {"docId": 2, "timestamp": 2, "text": "y"})
            db.store.insert("Documents", {"docId": 1, "timestamp": 1, "text": "again"})
    assert db.rows("Documents") == [(1, 1, "x")]
    with pytest.raises(StoreRefused, match="NUL"):
        db.store.insert("Documents", {"docId": 3, "timestamp": 1, "text": "a\x00b"})


PEOPLE = plan_text(
    "CREATE TABLE people (id BIGINT PRIMARY KEY, grp BIGINT, name VARCHAR, score DOUBLE, "
    "amount NUMERIC, active BOOLEAN);\nCREATE INDEX people_by_grp_name ON people (grp, name);",
    "-- name: firstNames\nSELECT name, id FROM people WHERE grp = <g> ORDER BY name LIMIT 3\n"
    "-- name: lastNames\nSELECT name, id FROM people WHERE grp = <g> ORDER BY name DESC LIMIT 3\n"
    "-- name: one\nSELECT id, name, score, amount, active FROM people WHERE id = <id>\n"
    "-- name: ungrouped\nSELECT id, name FROM people WHERE grp IS NULL ORDER BY name LIMIT 3\n")


@pytest.mark.parametrize("order", ["firstNames", "lastNames"])
def test_text_sorts_by_byte_and_nulls_first_as_on_sqlite(new_store, order):
    """A stop-after reads its index in SQLite's order of values whatever the database's
    locale: NULL first ascending (last descending), then text by byte ("B" < "a" < "é")."""
    db = App(PEOPLE).deploy(new_store())
    for i, name in enumerate(["a", "B", None, "é", "Z", "b"]):
        db.insert("people", id=i, grp=1, name=name)
    expected = {"firstNames": ((None, 2), ("B", 1), ("Z", 4)),
                "lastNames": (("é", 3), ("b", 5), ("a", 0))}
    assert db.query(order, g=1).rows == expected[order]


def test_values_come_back_as_sqlite_gives_them(new_store):
    db = App(PEOPLE).deploy(new_store())
    db.insert("people", id=1, grp=1, name="x", score=2, amount=3, active=True)
    db.insert("people", id=2, grp=1, name="y", score=2.5, amount=2.5, active=False)
    first, second = db.query("one", id=1).rows[0], db.query("one", id=2).rows[0]
    assert first == (1, "x", 2.0, 3, 1) and type(first[2]) is float and type(first[3]) is int
    assert second == (2, "y", 2.5, 2.5, 0)


def test_is_null_on_an_index_prefix_reads_the_nulls(new_store):
    """``grp IS NULL`` is an equality on the index prefix: the store reads the NULL group
    (a value of no driver: the scan writes ``IS NULL``), on every store."""
    db = App(PEOPLE).deploy(new_store())
    for i, (grp, name) in enumerate([(None, "b"), (1, "a"), (None, "a"), (None, None)]):
        db.insert("people", id=i, grp=grp, name=name)
    assert db.query("ungrouped").rows == ((3, None), (2, "a"), (0, "b"))


def test_bounded_statements_read_indexes(postgres_stores, postgres_server):
    """Every statement the store sent while serving queries and maintained writes (from
    pg_stat_statements) is planned, with sequential scans disabled, without a Seq Scan of
    a table, and a stop-after without a Sort: it reads its index in order and stops."""
    url = postgres_stores()
    db = APP.deploy(url)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        connection.execute("SELECT pg_stat_statements_reset()")
        for d in range(1, 6):
            db.insert("Documents", docId=d, timestamp=d, text=None)
            for tag in "abc":
                db.insert("Tags", docId=d, tag=tag, timestamp=d)
        db.delete("Tags", docId=1, tag="a")
        db.update("Documents", docId=2, timestamp=20, text="t")
        db.query("twoTags", tag1="a", tag2="b")
        db.query("countTags", tag="a")
        db.query("tagsOfDoc", doc=2)
        found = [q for (q,) in connection.execute(
            "SELECT query FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database "
            "WHERE datname = current_database()) AND query ~ '^(SELECT|DELETE|UPDATE) .* WHERE'")
            if "pg_" not in q and "_piql_" not in q]
        # inserts: the INSERT alone, checked by triggers; the delete and the update: one
        # DELETE and one UPDATE
        assert len(found) >= 5, found
        assert [q for q in found if q.startswith("DELETE")], found
        assert [q for q in found if q.startswith("UPDATE")], found
        connection.execute("SET enable_seqscan = off")
        for statement in found:
            (plan,) = connection.execute(
                "EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + statement).fetchone()
            nodes = list(_nodes(plan[0]["Plan"]))
            assert not [n for n in nodes if n["Node Type"] == "Seq Scan"], (statement, nodes)
            if "LIMIT" in statement:
                assert not [n for n in nodes if "Sort" in n["Node Type"]], (statement, nodes)


def test_a_bulk_load_leaves_statistics_and_ordered_reads_stop_after_k(postgres_stores):
    """After a bulk load the store has analyzed the tables loaded and the views rebuilt
    (no ANALYZE by hand, no autovacuum yet), and the generic plan of an ordered access
    (the newest 10 rows of a tag: 12 rows per tag among 12,000) reads the index in order and stops
    at the LIMIT: no Sort of the tag's whole range, no bitmap scan (which loses the order)."""
    db = APP.deploy(postgres_stores())
    db.load("Documents", [(d, d, None) for d in range(1, 4001)])
    db.load("Tags", [(d, f"t{(d + 7 * i) % 1000}", d) for d in range(1, 4001) for i in range(3)])
    statement = db.plan.compiled("newestWithTag", "postgres")
    with db.store.pool.connection() as connection:
        analyzed = {name for (name,) in connection.execute(
            "SELECT relname FROM pg_stat_user_tables WHERE last_analyze IS NOT NULL "
            "AND schemaname = current_schema()")}
        assert {"Documents", "Tags", "docsPerTag"} <= analyzed, analyzed
        (plan,) = connection.execute("EXPLAIN (GENERIC_PLAN, FORMAT JSON) "
                                     + statement.sql.replace("%s", "$1")).fetchone()
    nodes = list(_nodes(plan[0]["Plan"]))
    assert [n["Node Type"] for n in nodes] in (["Limit", "Index Scan"],
                                               ["Limit", "Index Only Scan"]), nodes
    assert db.query("newestWithTag", tag="t1").ops == 10


def _nodes(node: dict):
    yield node
    for child in node.get("Plans", ()):
        yield from _nodes(child)


def test_long_index_names_are_cut_uniquely_and_passwords_never_shown():
    long = "idx_" + "x" * 80
    assert len(short_name(long).encode()) <= 63 and short_name(long) != short_name(long + "y")
    assert short_name("idx_short") == "idx_short"
    assert redacted("postgresql://me:s3cret@db.example:5432/app") == \
        "postgresql://me:***@db.example:5432/app"
    assert redacted("postgresql://me@db/app") == "postgresql://me@db/app"


# -- triggers: the database keeps the views for every client ----------------------------

def test_plain_psycopg_writes_keep_a_deployments_views_right(postgres_stores):
    """Another client (plain psycopg, not piql) writes the base tables: the triggers keep
    every view equal to its definition, piql's queries see the writes, and an insert
    breaking the CARDINALITY constraint fails and changes nothing."""
    url = postgres_stores()
    db = APP.deploy(url)
    db.load("Documents", [(d, 100 * d, f"d{d}") for d in range(1, 6)])
    with psycopg.connect(url, autocommit=True) as other:
        for doc in range(1, 6):
            for n in range(doc + 1):
                other.execute('INSERT INTO "Tags" VALUES (%s, %s, %s)', [doc, f"t{n}", n])
        other.execute('UPDATE "Documents" SET "timestamp" = -"timestamp" WHERE "docId" > 3')
        other.execute('DELETE FROM "Tags" WHERE tag = %s AND "docId" < 3', ["t0"])
        other.execute('UPDATE "Tags" SET tag = %s WHERE tag = %s', ["moved", "t2"])
        assert db.check().consistent
        assert db.query("countTags", tag="t1").rows == ((5,),)
        assert db.query("twoTags", tag1="t1", tag2="moved").rows == ((5,), (4,), (2,), (3,))
        before = db.rows("Tags"), db.query("countTags", tag="new").rows
        with psycopg.connect(url, autocommit=True) as refused:
            for n in range(10):  # document 5 has 6 tags; the limit is 10
                if n < 4:
                    refused.execute('INSERT INTO "Tags" VALUES (5, %s, 1)', [f"x{n}"])
            with pytest.raises(psycopg.errors.CheckViolation, match=r"Tags breaks CARDINALITY"):
                refused.execute('INSERT INTO "Tags" VALUES (5, %s, 1)', ["new"])
        assert db.query("countTags", tag="new").rows == before[1]
        assert db.check().consistent


def test_piqls_writes_are_maintained_by_the_triggers_and_report_their_bounds(postgres_stores):
    db = APP.deploy(postgres_stores())
    assert db.store.maintained_rules == {r.name for v in APP.plan.views for r in v.rules}
    db.insert("Documents", docId=1, timestamp=5, text="x")
    report = db.insert("Tags", docId=1, tag="a", timestamp=5)
    bounds = {r.name: r.ops_bound for v in APP.plan.views for r in v.rules
              if r.table == "Tags" and r.event == "insert"}
    assert {name: (ops, bound) for name, ops, bound in report.rules} == \
        {name: (bound, bound) for name, bound in bounds.items()}
    assert report.ops <= report.bound
    assert db.query("countTags", tag="a").rows == ((1,),)
    with pytest.raises(ConstraintError, match="CARDINALITY"):
        for n in range(10):
            db.insert("Tags", docId=1, tag=f"b{n}", timestamp=5)
    assert db.check().consistent


def test_reopening_reuses_the_triggers_and_a_store_without_them_gets_them(postgres_stores):
    from piql.runtime.install import TRIGGERS

    url = postgres_stores()
    first = APP.deploy(url)
    installed = first.store.get_meta(TRIGGERS)
    with psycopg.connect(url, autocommit=True) as other:
        (oid,), = other.execute("SELECT oid FROM pg_trigger WHERE tgname = 'piql_Tags_write'")
    first.close()
    again = APP.deploy(url)
    assert again.store.get_meta(TRIGGERS) == installed
    with psycopg.connect(url, autocommit=True) as other:
        assert other.execute("SELECT oid FROM pg_trigger WHERE tgname = 'piql_Tags_write'"
                             ).fetchall() == [(oid,)]  # the same trigger, not made anew
        # a store deployed before piql kept its views by triggers
        other.execute('DROP TRIGGER "piql_Tags_write" ON "Tags"')
        other.execute("DELETE FROM _piql_meta WHERE key = %s", [TRIGGERS])
    again.close()
    third = APP.deploy(url)
    third.insert("Documents", docId=1, timestamp=1, text="x")
    with psycopg.connect(url, autocommit=True) as other:
        other.execute('INSERT INTO "Tags" VALUES (1, %s, 1)', ["a"])
    assert third.query("countTags", tag="a").rows == ((1,),)
    assert third.check().consistent


def test_plain_writes_reach_staging_views_and_the_next_refresh(postgres_stores):
    """SI-3: the triggers put another client's rows in the staging views (in piql's
    partitions) and mark the time windows' epochs, so the next refresh sees them."""
    from pathlib import Path

    social = Path(__file__).resolve().parents[2] / "examples" / "social"
    app = piql.load(social / "schema.sql", social / "queries.sql")
    url = postgres_stores()
    db = app.deploy(url)
    db.load("users", [(u, f"u{u}", f"u{u}@x", 1000 * u) for u in range(1, 5)])
    with psycopg.connect(url, autocommit=True) as other:
        for post in range(1, 13):
            other.execute('INSERT INTO posts VALUES (%s, %s, %s, %s)',
                          [post, 1 + post % 4, 3_600_000 * (post % 3) + post, f"p{post}"])
        for post in range(1, 13, 2):
            for user in range(1, 1 + post % 4):
                other.execute('INSERT INTO likes VALUES (%s, %s, %s)',
                              [post, user, 3_600_000 * (post % 3) + user])
        other.execute('DELETE FROM likes WHERE "postId" = 1')
        other.execute('UPDATE posts SET body = %s WHERE "postId" = 2', ["edited"])
        marked = other.execute("SELECT count(*) FROM _piql_dirty_epochs").fetchall()[0][0]
    assert marked > 0
    report = db.check()
    assert report.consistent, report
    db.refresh(now_ms=3 * 3_600_000)
    assert db.check().consistent


def test_a_lost_reader_connection_fails_one_query_and_the_next_reconnects(postgres_stores):
    """A serving thread's reader and its cursor (``PostgresStore.run``) are replaced when
    the server drops the connection: the query running then fails with the store's error,
    the next one connects again and answers; a second thread has a reader of its own."""
    db = APP.deploy(postgres_stores())
    db.load("Documents", [(1, 1, "d1")])
    db.insert("Tags", docId=1, tag="a", timestamp=1)
    db.insert("Tags", docId=1, tag="b", timestamp=1)
    expected = db.query("twoTags", tag1="a", tag2="b")
    assert expected.rows == ((1,),)
    reader = db.store._local.reader
    other: list = []
    thread = threading.Thread(target=lambda: other.append(
        (db.query("twoTags", tag1="a", tag2="b"), db.store._local.reader)))
    thread.start()
    thread.join()
    assert other[0][0] == expected and other[0][1] is not reader
    with psycopg.connect(db.store.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", [reader.info.backend_pid])
    with pytest.raises(DeploymentError, match="terminat"):
        db.query("twoTags", tag1="a", tag2="b")
    assert db.query("twoTags", tag1="a", tag2="b") == expected
    assert db.store._local.reader is not reader
    db.close()


def test_a_transaction_that_raises_changes_nothing_and_the_thread_serves_on(postgres_stores):
    """A write transaction the application abandons is rolled back; the thread's reader
    (and its cursor) serve the next queries."""
    db = APP.deploy(postgres_stores())
    db.load("Documents", [(1, 1, "d1"), (2, 2, "d2")])
    db.insert("Tags", docId=1, tag="a", timestamp=1)
    db.query("twoTags", tag1="a", tag2="b")
    reader = db.store._local.reader
    with pytest.raises(RuntimeError):
        with db.store.transaction():
            db.insert("Tags", docId=1, tag="b", timestamp=1)
            raise RuntimeError("the application gives up")
    assert db.query("twoTags", tag1="a", tag2="b").rows == ()
    assert db.store._local.reader is reader
    db.insert("Tags", docId=1, tag="b", timestamp=2)
    assert db.query("twoTags", tag1="a", tag2="b").rows == ((1,),)
    assert db.check().consistent
    db.close()
