"""``Deployment.query`` serves every bounded query as one prepared statement on the store
(``Plan.compiled``), on SQLite and on PostgreSQL, and answers as the plan's interpreter
(``Deployment.interpret``, the reference): the same rows (for ORDER BY ... LIMIT, a valid
top-k of the query's own SQL) and exactly the same operation count, after random writes.
The store's own plan of each statement (``EXPLAIN QUERY PLAN`` / ``EXPLAIN``) reads no
table whole that the piql plan reads by key.
"""
from __future__ import annotations

import threading
from dataclasses import replace

import pytest

import piql
from piql.planner.compile import UncompilablePlan
from piql.planner.store_layout import store_layout
from piql.runtime.errors import BoundExceeded
from piql.runtime.sqlvalues import INT64_MAX
from tests.conftest import plan_text
from tests.runtime.compiled import (
    assert_same_answer, explain_sqlite, full_scans, layout_of, parameter_sets, seq_scans,
    sorted_accesses,
)
from tests.runtime.test_aggregates import STATS
from tests.oracle.harness import APPS_DIR as ORACLE_APPS, NEW_APPS
from tests.runtime.test_compiled_queries import (
    APPS, POSTGRES_TEST_APPS, TEST_APP_IDS, TEST_APPS, app_of, bounded,
)
from tests.runtime.test_planner_answers import write_randomly

PG_STEPS = 60  # writes through a PostgreSQL store are round trips: fewer of them


def served(store_url: str, app: piql.App, seed: int, steps: int):
    db = app.deploy(store_url, engine="store", partitions=3)
    write_randomly(db, seed, steps)
    db.refresh(now_ms=10**9)
    return db


def assert_served_as_interpreted(db, context, every_query_compiles: bool = True) -> int:
    """Every bounded query, for parameters drawn from the data: ``query`` runs the compiled
    statement (the store's counter does not move: no interpreted read) and answers as
    ``interpret``. Returns how many answers were compared."""
    compared = 0
    for query in bounded(db):
        try:
            db.plan.compiled(query.name, db.store.dialect)
            interpreted = False
        except UncompilablePlan:
            assert not every_query_compiles, (context, query.name)
            interpreted = True
        for params in parameter_sets(db, query):
            params = {name: params.get(name, 1) for name in query.query.block.params}
            before = db.store.counter.ops
            result = db.query(query.name, **params)
            moved = db.store.counter.ops - before
            assert moved == (result.ops if interpreted else 0), (context, query.name)
            assert result.columns == tuple(i.name for i in query.query.block.select)
            assert_same_answer(db, query.name, params, list(result.rows), result.ops,
                               (context, query.name, params))
            compared += 1
    return compared


def assert_store_reads_what_the_plan_reads(db) -> None:
    """The store's own plan of every compiled statement: no full scan of a table the plan
    reads by key (SQLite: no sort inside an access that stops early either)."""
    for query in bounded(db):
        try:
            lean = db.plan.compiled(query.name, db.store.dialect)
        except UncompilablePlan:
            continue  # interpreted
        # a lean statement (OpsSource.UNIQUE) and the one counting when it finds nothing
        statements = (lean, lean.counting) if lean.counting else (lean,)
        if db.store.dialect == "sqlite":
            for statement in statements:
                assert full_scans(explain_sqlite(db, statement), statement) == [], statement.sql
                assert sorted_accesses(db, statement) == [], statement.sql
            continue
        with db.store.pool.connection() as connection:
            # with statistics, as autovacuum keeps them: on a table it believes empty,
            # PostgreSQL may sort a key range rather than read its index in order
            connection.execute("ANALYZE")
            for params in parameter_sets(db, query, most=2):
                for statement in statements:
                    assert seq_scans(connection, statement, params) == [], statement.sql


@pytest.mark.parametrize("app", sorted(APPS))
def test_query_serves_compiled_statements_answering_as_the_interpreter(app, store_url):
    postgres = not store_url.endswith(".db")
    db = served(store_url, app_of(app), seed=5, steps=PG_STEPS if postgres else 150)
    assert assert_served_as_interpreted(db, app) >= len(bounded(db))
    assert_store_reads_what_the_plan_reads(db)


# The queries of the oracle's apps the compiler leaves to the interpreter, by app and
# dialect (a regression, or a construct newly compiled, shows here): on PostgreSQL, a CAST
# of text to INTEGER and of a REAL to TEXT (PostgreSQL's differ from SQLite's, piql's),
# and COALESCE of a REAL and an integer (PostgreSQL answers 0.0 where SQLite answers 0).
INTERPRETED = {("constructs", "postgres"): {"expressions", "commentText", "commentWeight"}}


def interpreted_queries(db) -> set[str]:
    found = set()
    for query in bounded(db):
        try:
            db.plan.compiled(query.name, db.store.dialect)
        except UncompilablePlan:
            found.add(query.name)
    return found


@pytest.mark.parametrize("seed", [7, 8])
@pytest.mark.parametrize("app", NEW_APPS)
def test_query_serves_the_oracle_apps(app, seed, store_url):
    """The oracle's applications, issue 14's constructs included, after random writes;
    the few queries left to the interpreter (INTERPRETED) answer the same Result, reading
    on the store's counter."""
    schema, queries = ORACLE_APPS / app / "schema.sql", ORACLE_APPS / app / "queries.sql"
    postgres = not store_url.endswith(".db")
    db = served(store_url, piql.load(schema, queries), seed=seed,
                steps=PG_STEPS if postgres else 150)
    assert interpreted_queries(db) == INTERPRETED.get((app, db.store.dialect), set())
    assert assert_served_as_interpreted(db, app, every_query_compiles=False) >= len(bounded(db))
    assert_store_reads_what_the_plan_reads(db)


@pytest.mark.parametrize("number", range(len(TEST_APPS)), ids=TEST_APP_IDS)
def test_query_serves_the_test_apps_on_sqlite(number, tmp_path):
    db = served(str(tmp_path / "store.db"), app_of(number), seed=number, steps=60)
    assert assert_served_as_interpreted(db, TEST_APPS[number]["test"]) >= len(bounded(db))
    assert_store_reads_what_the_plan_reads(db)
    db.close()


@pytest.mark.parametrize("number", POSTGRES_TEST_APPS,
                         ids=[TEST_APP_IDS[n] for n in POSTGRES_TEST_APPS])
def test_query_serves_the_test_apps_on_postgres(number, postgres_stores):
    db = served(postgres_stores(), app_of(number), seed=number, steps=PG_STEPS)
    assert assert_served_as_interpreted(db, TEST_APPS[number]["test"]) >= len(bounded(db))
    assert_store_reads_what_the_plan_reads(db)


@pytest.mark.parametrize("app", ["tpcw", "shapes", "values"])
def test_layout_from_the_plan_is_the_installed_one(app, store_url):
    """The compiler's layout, derived from the plan alone, is the store's: every table and
    view (hidden exact-sum columns, the key index of a view whose key may hold NULL)."""
    db = app_of(app).deploy(store_url, engine="store")
    assert store_layout(db.plan) == layout_of(db.store)


def test_layout_holds_exact_sums_and_nullable_keys(store_url):
    """A view of REAL SUMs keeps a hidden TEXT column per sum, and its key (a nullable
    column) is read through a unique index: the layout says so, the store holds those
    columns, and a query of nothing answers COUNT 0 as the interpreter does."""
    db = piql.App(STATS).deploy(store_url, engine="store")
    view = store_layout(db.plan).table("stats_view")
    hidden = [hidden for _, hidden in db.plan.views[0].exact_sums]
    assert hidden and set(hidden) <= set(view.columns)
    assert view.key_index is not None
    if db.store.dialect == "sqlite":
        stored = [row[1] for row in db.store.sql('PRAGMA table_info("stats_view")')]
    else:
        stored = [name for (name,) in db.store.sql(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'stats_view' AND table_schema = current_schema() ORDER BY ordinal_position")]
    assert tuple(stored) == view.columns
    db.insert("r", k=1, g=None, v=3, w=0.1)
    result = db.query("stats", g=1)
    assert result == db.interpret("stats", g=1)
    assert result.rows == ((None, None, None, 0),)


def test_ratio_of_a_sum_beyond_2_53_divides_as_the_interpreter(store_url):
    """AVG read from a view's SUM and COUNT: the statement returns both and the answer is
    their exact quotient (SQL's CAST of the sum to REAL would round it first)."""
    db = piql.App(STATS).deploy(store_url, engine="store")
    db.insert("r", k=1, g=1, v=2**53, w=1.5)
    db.insert("r", k=2, g=1, v=1, w=2.0)
    db.insert("r", k=3, g=1, v=2, w=0.5)
    compiled, reference = db.query("stats", g=1), db.interpret("stats", g=1)
    assert compiled.rows == reference.rows == ((2**53 + 3, 4.0, (2**53 + 3) / 3, 3),)
    assert compiled.ops == reference.ops


def test_strict_mode_checks_the_compiled_count(tmp_path):
    """The measured operations of a compiled execution are checked against the bound as the
    interpreter's are: with the bound lowered to 0, the statement's count raises
    BoundExceeded (no interpreted read happened), and strict=False returns it."""
    plan = app_of("social").plan
    lowered = replace(plan, queries=tuple(replace(q, ops_bound=0) if q.name == "userPosts"
                                          else q for q in plan.queries))
    db = piql.App(lowered).deploy(str(tmp_path / "store.db"), engine="store")
    db.insert("users", userId=1, name="ada", email="a@example.com", createdAt=1)
    before = db.store.counter.ops
    with pytest.raises(BoundExceeded, match="userPosts did 1 operations; its bound is 0"):
        db.query("userPosts", userId=1)
    assert db.store.counter.ops == before
    lenient = piql.App(lowered).deploy(str(tmp_path / "store.db"), engine="store", strict=False)
    assert (lenient.query("userPosts", userId=1).ops, lenient.query("userPosts", userId=1).bound) \
        == (1, 0)


def test_uncompilable_plans_are_interpreted(tmp_path):
    """A construct the compiler refuses (here DISTINCT ordered by a column it drops) is
    served by the interpreter, with the same Result."""
    app = piql.App(plan_text("CREATE TABLE t (k BIGINT PRIMARY KEY, a BIGINT, b BIGINT);",
                             "-- name: either\nSELECT DISTINCT a FROM t WHERE k = <k> "
                             "ORDER BY b\n"))
    db = app.deploy(str(tmp_path / "store.db"), engine="store")
    with pytest.raises(UncompilablePlan):
        db.plan.compiled("either", "sqlite")
    db.insert("t", k=1, a=1, b=0)
    before = db.store.counter.ops
    result = db.query("either", k=1)
    assert db.store.counter.ops == before + result.ops  # the interpreter's counted reads
    assert result == db.interpret("either", k=1)
    assert result.rows == ((1,),)


def test_an_overflowing_sum_is_answered_exactly(store_url):
    """SQLite's SUM raises where a partial sum leaves 64 bits: that execution is answered
    by the interpreter, which sums exactly, as PostgreSQL's numeric SUM does in the
    statement itself."""
    db = app_of("shapes").deploy(store_url, engine="store")
    db.insert("accounts", id=1, region="r", score=None, joined=1, nick="n")
    for seq in (1, 2):
        db.insert("orders", account=1, seq=seq, amount=INT64_MAX, price=1.0, placed=seq,
                  status="a")
    result = db.query("aggregatesOfOrders", a=1)
    assert result == db.interpret("aggregatesOfOrders", a=1)
    assert result.rows[0][4] == 2 * INT64_MAX


def test_each_serving_thread_queries_postgres_on_its_own_connection(postgres_stores):
    """Compiled queries outside a transaction run on their thread's reader connection:
    one per thread, seeing every commit, closed when their thread has ended and another
    opens one, and all closed with the store. (An insert made in one statement runs on
    its thread's connection too: the main thread has its own.)"""
    db = app_of("social").deploy(postgres_stores(), engine="store")
    db.insert("users", userId=1, name="ada", email="a@example.com", createdAt=1)
    answers = []
    together = threading.Barrier(3)  # all alive while each opens its reader

    def serve() -> None:
        together.wait()
        answers.append(db.query("userPosts", userId=1).rows)
        together.wait()

    def in_a_thread(work) -> None:
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()

    main = threading.current_thread()
    threads = [threading.Thread(target=serve) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == [()] * 3
    readers = [reader for thread, reader in db.store._readers if thread is not main]
    assert len(readers) == 3
    db.insert("posts", postId=1, author=1, createdAt=5, body="hi")  # another connection
    in_a_thread(lambda: answers.append(db.query("userPosts", userId=1).rows))  # a new reader
    assert answers[-1] == ((1, 5, "hi"),)
    assert all(reader.closed for reader in readers)  # their threads had ended
    assert len([t for t, _ in db.store._readers if t is not main]) == 1
    db.close()
    assert db.store._readers == []


def test_a_parameter_read_as_text_answers_any_value_as_the_interpreter(store_url):
    """``LOWER(email) = LOWER(<e>)``: PostgreSQL reads <e> as text, so a REAL value (whose
    text differs between the stores) is answered by the interpreter; text is compiled."""
    app = piql.load(ORACLE_APPS / "constructs" / "schema.sql",
                    ORACLE_APPS / "constructs" / "queries.sql")
    db = app.deploy(store_url, engine="store")
    db.insert("users", id=1, email="Ada@X", name="ada", team="a")
    db.insert("users", id=2, email="2.0", name="two", team="a")
    for value in ("ada@x", "ADA@X", 2.0, 1.5, None):
        result = db.query("userByEmail", e=value)
        assert result == db.interpret("userByEmail", e=value), value
    assert db.query("userByEmail", e="ada@x").rows == ((1, "ada"),)
    assert db.query("userByEmail", e=2.0).rows == ((2, "two"),)  # SQLite's text of 2.0


NEIGHBOURHOOD = (
    "CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))"
    " WITH CARDINALITY (followee, 500);\n"
    "CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, venue BIGINT,"
    " points BIGINT, kind VARCHAR);\n",
    "-- name: friendsCheckins\nSELECT COUNT(*) AS n FROM follows f, checkins c "
    "WHERE f.follower = <me> AND c.userId = f.followee\n"
    "-- name: friendsPoints\nSELECT SUM(c.points) AS p, COUNT(c.points) AS k FROM follows f, "
    "checkins c WHERE f.follower = <me> AND c.userId = f.followee\n")


def test_neighbourhood_aggregates_through_per_writer_views_are_compiled(store_url):
    """An aggregate combined from per-writer views (COALESCE(SUM(c.cnt), 0) for COUNT(*),
    planner/pushdown.py) compiles: SQL aggregates the views' rows, none included."""
    postgres = not store_url.endswith(".db")
    db = served(store_url, piql.App(plan_text(*NEIGHBOURHOOD)), seed=3,
                steps=PG_STEPS if postgres else 150)
    assert interpreted_queries(db) == set()
    assert assert_served_as_interpreted(db, "neighbourhood") >= len(bounded(db))
    assert db.query("friendsCheckins", me=-12345).rows == ((0,),)  # follows no one
