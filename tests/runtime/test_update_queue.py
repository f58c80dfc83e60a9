"""Asynchronous views (``-- maintenance: async``) and the store's update queue: writes
enqueue instead of running the views' rules, the queue coalesces by row key, and after
``drain()`` every view equals its recomputation and every answer the query's own SQL."""
from __future__ import annotations

import itertools
import random

import pytest
from hypothesis import HealthCheck, given, settings

from piql.runtime.errors import ConstraintError
from piql.planner.update_queues import QueuePolicy, RowChange
from piql.runtime import install
from piql.runtime.deployment import Deployment
from piql.runtime.update_queue import QUEUE_TABLE, StoreQueue
from tests.oracle.harness import OracleApp, Session
from tests.planner.test_async_views import social
from tests.runtime.test_property import apply
from tests.runtime.workload import Driver, Op, operations

ASYNC = ("followerCount", "likeCount")
SOCIAL_ASYNC = OracleApp("social-async", lambda: social(*ASYNC))


@pytest.fixture
def db():
    deployment = Deployment(social(*ASYNC))
    for user in (1, 2, 3):
        deployment.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
    yield deployment
    deployment.close()


def followers(db: Deployment, user: int) -> int:
    return db.query("followerCount", userId=user).rows[0][0]


def queued(db: Deployment) -> list[tuple[str, RowChange]]:
    return [(e.row_key, e.change) for e in db.maintainer.queue.head()]


def test_a_write_enqueues_and_drain_applies(db):
    report = db.insert("follows", follower=1, followee=2, since=5)
    assert report.rules == () and report.ops <= report.bound
    assert followers(db, 2) == 0  # the view lags until the queue is drained
    assert queued(db) == [("[1,2]", RowChange(None, (1, 2, 5)))]
    assert db.drain() == 1
    assert followers(db, 2) == 1 and queued(db) == []
    assert db.drain() == 0


def test_an_insert_then_a_delete_cancel(db):
    db.insert("follows", follower=1, followee=2, since=5)
    db.delete("follows", follower=1, followee=2)
    assert queued(db) == []


def test_an_update_chain_keeps_its_net_effect(db):
    db.insert("follows", follower=1, followee=2, since=5)
    db.drain()
    db.update("follows", follower=1, followee=2, since=6)
    db.update("follows", follower=1, followee=2, since=7)
    db.delete("follows", follower=1, followee=2)
    db.insert("follows", follower=1, followee=2, since=8)
    (entry,) = db.maintainer.queue.head()
    assert entry.change == RowChange((1, 2, 5), (1, 2, 8)) and entry.updates == 6
    db.drain()
    assert followers(db, 2) == 1
    assert all(v.consistent for v in db.check().views)


def test_a_refused_write_enqueues_nothing(db):
    db.insert("follows", follower=1, followee=2, since=5)
    before = queued(db)
    with pytest.raises(ConstraintError):
        db.insert("follows", follower=1, followee=2, since=6)  # the key is taken
    with pytest.raises(ConstraintError):
        db.insert("follows", follower=1, followee=9, since=6)  # no user 9
    assert queued(db) == before


@pytest.mark.parametrize("policy, order", [(QueuePolicy.IN_PLACE, ["[1,2]", "[1,3]"]),
                                           (QueuePolicy.FIFO, ["[1,3]", "[1,2]"])])
def test_a_coalesced_entry_keeps_its_place_or_moves_back(db, policy, order):
    queue = db.maintainer.queue
    queue.policy, queue.clock = policy, itertools.count(1).__next__
    db.insert("follows", follower=1, followee=2, since=5)
    db.insert("follows", follower=1, followee=3, since=5)
    db.update("follows", follower=1, followee=2, since=6)
    entries = queue.head()
    assert [e.row_key for e in entries] == order
    assert entries[order.index("[1,2]")].first_enqueued == 1  # its oldest change's arrival
    assert entries[order.index("[1,2]")].staleness_ms(1_000_001) == 1.0


def test_the_store_queue_refuses_a_policy_it_cannot_keep(db):
    with pytest.raises(ValueError, match="not linecutting"):
        StoreQueue(db.store, QueuePolicy.LINECUTTING)


def test_a_failed_drain_loses_nothing_and_applies_nothing_twice(db, monkeypatch):
    for followee in (1, 2, 3):
        db.insert("follows", follower=3, followee=followee, since=0)
    real, calls = db.maintainer.apply_deferred, []

    def dies_on_the_second(*args):
        calls.append(args)
        real(*args)  # the view's rows are written, then the maintainer dies
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(db.maintainer, "apply_deferred", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        db.drain()
    monkeypatch.undo()
    # the first entry applied and gone; the second rolled back with its view rows
    assert [followers(db, u) for u in (1, 2, 3)] == [1, 0, 0]
    assert len(db.maintainer.queue) == 2
    assert db.drain() == 2
    assert [followers(db, u) for u in (1, 2, 3)] == [1, 1, 1]


def test_the_queue_survives_closing_the_store(tmp_path):
    plan, path = social(*ASYNC), str(tmp_path / "store.db")
    with Deployment(plan, path) as first:
        first.insert("users", userId=1, name="a", email="a", createdAt=0)
        first.insert("follows", follower=1, followee=1, since=0)
    with Deployment(plan, path) as again:
        assert len(again.maintainer.queue) == 1
        again.drain()
        assert followers(again, 1) == 1


def test_only_a_plan_with_async_views_has_a_queue_table():
    sync, deferred = social(), social(*ASYNC)
    assert QUEUE_TABLE not in [s.name for s in install.shapes(sync)]
    assert QUEUE_TABLE in [s.name for s in install.shapes(deferred)]
    assert install.fingerprint(sync) != install.fingerprint(deferred)
    assert Deployment(sync).maintainer.queue is None


HEALTH = [HealthCheck.too_slow, HealthCheck.data_too_large]


@settings(max_examples=60, deadline=None, suppress_health_check=HEALTH)
@given(ops=operations(SOCIAL_ASYNC.plan.catalog, max_size=40))
def test_random_writes_and_drains_match_the_recomputation_and_the_sql(ops):
    session = Session(SOCIAL_ASYNC, partitions=3)
    try:
        driver, chooser = Driver(session.db), random.Random(len(ops))
        for op in ops:
            apply(session, driver, op)  # a refused write must change no table, queue included
            entries = session.db.maintainer.queue.head(10**6)
            assert len({(e.base, e.row_key) for e in entries}) == len(entries)
            if chooser.random() < 0.2:
                session.db.drain()
        session.assert_views_consistent()  # check() drains first
        assert len(session.db.maintainer.queue) == 0
        session.refresh(now_ms=10**9)
        session.assert_queries()
    finally:
        session.close()


def test_a_long_history_with_drains_stays_consistent():
    chooser = random.Random(7)
    session = Session(SOCIAL_ASYNC, partitions=3)
    driver = Driver(session.db, spread=20)
    tables = [t.name for t in session.catalog.tables]
    for step in range(1, 301):
        apply(session, driver, Op(chooser.choice(["insert"] * 5 + ["delete", "update"]),
                                  chooser.choice(tables),
                                  tuple(chooser.randrange(10**6) for _ in range(8))))
        if step % 100 == 0:
            session.assert_views_consistent()
            session.assert_queries()
    session.close()


@settings(max_examples=6, deadline=None,
          suppress_health_check=HEALTH + [HealthCheck.function_scoped_fixture])
@given(ops=operations(SOCIAL_ASYNC.plan.catalog, max_size=25))
def test_random_writes_and_drains_on_postgresql(postgres_stores, ops):
    """On PostgreSQL the triggers keep the synchronous views; the asynchronous ones are
    left to the queue."""
    session = Session(SOCIAL_ASYNC, partitions=3, store=postgres_stores.scratch())
    try:
        assert not {r.name for v in session.db.views if v.name.startswith(ASYNC)
                    for r in v.rules} & session.db.store.maintained_rules
        driver = Driver(session.db)
        for number, op in enumerate(ops):
            apply(session, driver, op)
            if number % 5 == 4:
                session.db.drain()
        session.assert_views_consistent()
        assert len(session.db.maintainer.queue) == 0
        session.assert_queries()
    finally:
        session.close()


def test_a_postgresql_write_enqueues_and_drain_applies(postgres_stores):
    with Deployment(social(*ASYNC), postgres_stores()) as pg:
        pg.insert("users", userId=1, name="a", email="a", createdAt=0)
        pg.insert("follows", follower=1, followee=1, since=0)
        pg.update("follows", follower=1, followee=1, since=3)
        assert followers(pg, 1) == 0
        assert queued(pg) == [("[1,1]", RowChange(None, (1, 1, 3)))]
        assert pg.drain() == 1 and followers(pg, 1) == 1
        with pytest.raises(ConstraintError):
            pg.insert("follows", follower=1, followee=1, since=4)
        assert queued(pg) == []


def test_a_bulk_load_rebuilds_the_view_and_drops_its_queued_changes(db):
    db.insert("follows", follower=1, followee=2, since=5)  # queued
    db.load("follows", [{"follower": 2, "followee": 2, "since": 1}])
    assert queued(db) == []  # the rebuild already counts the queued follow
    assert followers(db, 2) == 2
    db.drain()
    assert followers(db, 2) == 2 and db.check().consistent
