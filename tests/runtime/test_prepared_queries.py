"""``Deployment.prepared``: a query's handle answers as ``Deployment.query`` (the same
``Result``: rows, operations, bound) with its values by position or by name, on SQLite and
PostgreSQL, and as the interpreter and the oracle do; bad values are refused with
``query``'s errors; a closed deployment's handle refuses every call; threads share one.
"""
from __future__ import annotations

import threading

import pytest

import piql
from piql.runtime.errors import DeploymentClosed, ParameterError, UnboundedQuery, UnknownName
from tests.runtime.compiled import assert_same_answer, parameter_sets
from tests.runtime.test_compiled_queries import APPS, app_of, bounded
from tests.runtime.test_feeds import PLAN as FEEDS_PLAN, USERS
from tests.runtime.test_served_queries import PG_STEPS, served
from tests.runtime.workload import assert_ordered_match, ordered_oracle


def assert_prepared_as_queried(db, context) -> int:
    """Every bounded query, for parameters drawn from the data: its handle's answer by
    position and by name is ``query``'s, and the interpreter's (the oracle's top-k for
    ORDER BY ... LIMIT). Returns how many answers were compared."""
    compared = 0
    for query in bounded(db):
        handle = db.prepared(query.name)
        assert handle.params == query.query.block.params
        assert db.prepared(query.name) is handle  # one per name
        for params in parameter_sets(db, query):
            params = {name: params.get(name, 1) for name in handle.params}
            queried = db.query(query.name, **params)
            by_position = handle(*(params[name] for name in handle.params))
            assert by_position == queried == handle(**params), (context, query.name, params)
            assert by_position.staleness_ms == queried.staleness_ms
            assert_same_answer(db, query.name, params, list(by_position.rows),
                               by_position.ops, (context, query.name, params))
            compared += 1
    return compared


@pytest.mark.parametrize("app", sorted(APPS))
def test_prepared_queries_answer_as_query_and_the_interpreter(app, store_url):
    postgres = not store_url.endswith(".db")
    db = served(store_url, app_of(app), seed=3, steps=PG_STEPS if postgres else 120)
    assert assert_prepared_as_queried(db, app) >= len(bounded(db))


def test_prepared_adaptive_queries_count_their_reads(store_url):
    """A feed's query through its handle: the same answers as the oracle, and its reads
    counted for the feed's rates as ``query``'s are."""
    db = piql.App(FEEDS_PLAN).deploy(store_url)
    for user in USERS:
        for other in USERS:
            if other != user and (user + other) % 3:
                db.insert("follows", follower=user, followee=other)
    for post in range(1, 30):
        db.insert("posts", postId=post, author=post % 7 + 1, createdAt=post * 10, body=f"b{post}")
    rates = db.feeds["feed"].rates
    handle = db.prepared("feed")
    query = db.query_plan("feed")
    start = rates.clock
    by_handle = [handle(user) for user in USERS]
    middle = rates.clock
    assert by_handle == [db.query("feed", me=user) for user in USERS]
    assert middle - start == rates.clock - middle > 0  # each read counted alike
    for user, got in zip(USERS, by_handle):
        assert got == handle(me=user)
        assert_ordered_match(list(got.rows), ordered_oracle(db, query, {"me": user}),
                             query.query.block.limit, user)


def test_bad_values_are_refused_as_query_refuses_them(tmp_path):
    db = app_of("tpcw").deploy(str(tmp_path / "store.db"))
    handle = db.prepared("product_detail")
    assert handle.params == ("i_id",)
    with pytest.raises(ParameterError, match=r"takes 1 parameter\(s\) \(i_id\); got 2"):
        handle(1, 2)
    with pytest.raises(ParameterError, match=r"takes 1 parameter\(s\) \(i_id\); got 0"):
        handle()
    with pytest.raises(ParameterError, match="by position or by name, not both"):
        handle(1, i_id=1)
    for call in (lambda: handle("one"), lambda: handle(i_id="one")):
        with pytest.raises(ParameterError, match="parameter <i_id> of product_detail is "
                                                 "compared with a BIGINT column; got 'one'"):
            call()
    with pytest.raises(ParameterError, match="needs parameter <i_id>"):
        handle(item=1)
    with pytest.raises(ParameterError, match="2\\*\\*63|64|range|integer"):
        handle(2**63)
    assert handle(1) == db.query("product_detail", i_id=1)  # nothing loaded: no row
    with pytest.raises(UnknownName, match="no query named 'nothing'"):
        db.prepared("nothing")


def _outcome(call):
    try:
        return call()
    except ParameterError as err:
        return str(err)


def test_a_key_lookups_handle_is_its_serving_function(tmp_path):
    """The common shape's handle checks, binds, runs and answers itself (``Served.fused``):
    values of another class than the common one (a bool, a float, a str for a number) and
    values by name take the long way, with ``query``'s answers and errors (answers with
    rows: ``test_prepared_queries_answer_as_query_and_the_interpreter``)."""
    db = app_of("tpcw").deploy(str(tmp_path / "store.db"))
    handle = db.prepared("product_detail")
    assert handle is db._served["product_detail"].fused[0]
    for value in (1, True, 1.0, "1", None, -2**63, 2**63 - 1):
        queried = _outcome(lambda: db.query("product_detail", i_id=value))
        assert _outcome(lambda: handle(value)) == queried == _outcome(lambda: handle(i_id=value))
    two = db.prepared("order_display_lines")  # a flat join: rows flagged kept
    assert two is db._served["order_display_lines"].fused[0]
    assert two(7) == db.query("order_display_lines", o_id=7)


def test_an_unbounded_query_has_no_handle(tmp_path):
    db = piql.load("examples/social/schema.sql", "examples/social/queries.sql").deploy(
        str(tmp_path / "store.db"))
    with pytest.raises(UnboundedQuery, match="query likers is unbounded"):
        db.prepared("likers")


def test_a_closed_deployments_handle_refuses_every_call(tmp_path):
    db = app_of("tpcw").deploy(str(tmp_path / "store.db"))
    handle = db.prepared("product_detail")
    db.query("order_inquiry_customer", uname="u")
    db.close()
    for call in (lambda: handle(1), lambda: handle(i_id=1), lambda: db.prepared("product_detail"),
                 lambda: db.query("order_inquiry_customer", uname="u"),
                 lambda: db.query("product_detail", i_id=1)):
        with pytest.raises(DeploymentClosed, match="is closed"):
            call()


def test_threads_share_one_handle(postgres_stores):
    """On PostgreSQL each thread reads through its own connection: one handle, called from
    several threads at once, answers each call as ``query`` does."""
    db = served(postgres_stores(), app_of("social"), seed=2, steps=PG_STEPS)
    handle = db.prepared("userPosts")
    users = range(1, 9)
    expected = {user: db.query("userPosts", userId=user) for user in users}
    failures: list[BaseException] = []

    def read() -> None:
        try:
            for _ in range(20):
                for user in users:
                    assert handle(user) == expected[user]
        except BaseException as err:  # noqa: BLE001 - reported by the main thread
            failures.append(err)

    threads = [threading.Thread(target=read) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
