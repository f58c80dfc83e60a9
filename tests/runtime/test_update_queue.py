"""Asynchronous views (``-- maintenance: async``) and the store's update queue: writes
enqueue instead of running the views' rules, the queue coalesces by row key, and after
``drain()`` every view equals its recomputation and every answer the query's own SQL."""
from __future__ import annotations

import itertools
import random
import time

import pytest
from hypothesis import HealthCheck, given, settings

from piql.runtime.errors import ConstraintError, DeploymentError
from piql.planner.update_queues import QueuePolicy, RowChange
from piql.runtime import install
from piql.runtime.deployment import Deployment
from piql.runtime.update_queue import QUEUE_TABLE
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
    assert entry.change == RowChange((1, 2, 5), (1, 2, 8)) and entry.updates == 4  # writes
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


def users(location: str, policy: str) -> Deployment:
    """The social app with ASYNC's views asynchronous under ``policy``, and three users."""
    deployment = Deployment(social(*ASYNC), location, queue_policy=policy)
    for user in (1, 2, 3):
        deployment.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
    return deployment


def test_a_slow_updater_cuts_to_the_front_under_linecutting(new_store):
    """§5.3: key [1,3] updates once in a long while (u_k * c * n < 1), so its change is
    served first under LINECUTTING; IN-PLACE and FIFO keep their own orders. The same
    schedule on both stores: SQLite's trigger asks the process for the place, and on
    PostgreSQL a LINECUTTING process queues its inserts itself (runtime.queue_triggers)."""
    db = users(new_store(), "linecutting")
    queue = db.maintainer.queue
    queue.clock, queue.cost_ns = itertools.count(1).__next__, 1
    queue.rates = lambda key, now: 1.0 if key[1] != "[1,3]" else 0.1
    db.insert("follows", follower=1, followee=2, since=5)  # n = 0: every key is slow
    db.insert("follows", follower=2, followee=2, since=5)  # fast: 1 * 1 * 1 >= 1
    db.insert("follows", follower=1, followee=3, since=5)  # slow: 0.1 * 1 * 2 < 1
    db.update("follows", follower=2, followee=2, since=6)  # fast: keeps its place
    orders = {p: [e.row_key for e in queue.head(policy=p)] for p in QueuePolicy if p.lossy}
    # the cutters in the order they cut in: [1,2] into the empty queue, then [1,3], which
    # is served ahead of the fast [2,2] queued before it
    assert orders == {QueuePolicy.LINECUTTING: ["[1,2]", "[1,3]", "[2,2]"],
                      QueuePolicy.IN_PLACE: ["[1,2]", "[2,2]", "[1,3]"],
                      QueuePolicy.FIFO: ["[1,2]", "[1,3]", "[2,2]"]}
    assert [(e.first_enqueued, e.last_enqueued, e.cut) for e in queue.head(
        policy=QueuePolicy.LINECUTTING)] == [(1, 1, -1), (3, 3, -3), (2, 4, 2)]
    assert db.drain(2, policy="linecutting") == 2
    assert [followers(db, u) for u in (2, 3)] == [1, 1]
    assert db.drain() == 1 and [followers(db, u) for u in (2, 3)] == [2, 1]


def test_the_append_queue_keeps_every_change_in_order(new_store):
    db = users(new_store(), "append")  # piql queues every change (on both stores)
    db.insert("follows", follower=1, followee=2, since=5)
    db.update("follows", follower=1, followee=2, since=6)
    db.delete("follows", follower=1, followee=2)
    db.insert("follows", follower=1, followee=3, since=5)
    changes = [e.change for e in db.maintainer.queue.head()]
    assert changes == [RowChange(None, (1, 2, 5)), RowChange((1, 2, 5), (1, 2, 6)),
                       RowChange((1, 2, 6), None), RowChange(None, (1, 3, 5))]
    assert db.queue_stats().length == 4 and db.drain() == 4
    assert [followers(db, u) for u in (2, 3)] == [0, 1] and db.check().consistent


def test_an_unknown_policy_is_a_clear_error(db):
    with pytest.raises(DeploymentError, match="unknown queue policy 'lifo'"):
        db.drain(policy="lifo")


def test_a_query_on_an_async_view_says_how_stale_it_is(db):
    clock = iter(range(10**6, 10**12, 10**6)).__next__  # each reading 1 ms later
    db.maintainer.queue.clock = clock
    assert db.query("followerCount", userId=2).staleness_ms == 0.0  # nothing pending
    db.insert("follows", follower=1, followee=2, since=5)  # queued at 1 ms
    db.insert("follows", follower=1, followee=3, since=5)  # at 2 ms
    result = db.query("followerCount", userId=2)
    assert result.staleness_ms == 2.0 and result.rows == ((0,),)  # read at 3 ms
    assert db.interpret("followerCount", userId=2).staleness_ms == 3.0
    db.drain()
    assert db.query("followerCount", userId=2).staleness_ms == 0.0
    assert db.query("followerCount", userId=2).rows == ((1,),)


def test_a_query_on_sync_views_has_no_staleness():
    with Deployment(social()) as sync:
        assert sync.query("followerCount", userId=2).staleness_ms is None


def test_queue_stats_give_length_staleness_per_key_and_dequeue_rate(db):
    queue = db.maintainer.queue
    queue.clock = itertools.count(10**6, 10**6).__next__  # 1 ms a reading
    db.insert("follows", follower=1, followee=2, since=5)  # at 1 ms
    db.update("follows", follower=1, followee=2, since=6)  # coalesced, at 2 and 3 ms
    db.insert("follows", follower=1, followee=3, since=5)  # at 4 ms
    stats = queue.stats(now_ns=11 * 10**6)
    assert (stats.length, stats.changes, stats.oldest_ms) == (2, 3, 10.0)
    assert stats.staleness_ms == {("follows", "[1,2]"): 10.0, ("follows", "[1,3]"): 7.0}
    assert stats.average_ms == 8.5 and stats.dequeued == 0 and stats.dequeue_rate == 0.0
    db.drain()
    after = db.queue_stats()
    assert after.length == 0 and after.dequeued == 2 and after.dequeue_rate > 0


def test_the_background_maintainer_drains_what_writers_queue(db):
    background = db.start_maintainer(idle=0.01)
    for followee in (1, 2, 3):
        db.insert("follows", follower=1, followee=followee, since=0)
    deadline = time.monotonic() + 30
    while len(db.maintainer.queue) and time.monotonic() < deadline:
        time.sleep(0.01)
    db.stop_maintainer()
    assert background.error is None and background.applied == 3
    assert [followers(db, u) for u in (1, 2, 3)] == [1, 1, 1] and db.check().consistent


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


def test_staleness_stats_and_linecutting_on_postgresql(postgres_stores):
    # a LINECUTTING process queues its inserts itself, with its clock and statistics (the
    # server's trigger queues other processes' in place: runtime.queue_triggers)
    with Deployment(social(*ASYNC), postgres_stores(), queue_policy="linecutting") as pg:
        queue = pg.maintainer.queue
        queue.clock = itertools.count(10**6, 10**6).__next__  # 1 ms a reading
        queue.cost_ns, queue.rates = 1, (lambda key, now: 0.1 if key[1] == "[1,1]" else 1.0)
        pg.insert("users", userId=1, name="a", email="a", createdAt=0)
        pg.insert("users", userId=2, name="b", email="b", createdAt=0)
        pg.insert("follows", follower=2, followee=1, since=0)  # at 1 ms; n = 0: cuts
        pg.insert("follows", follower=2, followee=2, since=0)  # at 2 ms; fast: in place
        pg.insert("follows", follower=1, followee=1, since=0)  # at 3 ms; slow: cuts
        result = pg.query("followerCount", userId=1)  # read at 4 ms
        assert result.staleness_ms == 3.0 and result.rows == ((0,),)
        stats = queue.stats(now_ns=5 * 10**6)
        assert (stats.length, stats.oldest_ms, stats.average_ms) == (3, 4.0, 3.0)
        order = [e.row_key for e in queue.head(policy=QueuePolicy.LINECUTTING)]
        assert order == ["[2,1]", "[1,1]", "[2,2]"]  # the cutters in the order they cut in
        assert pg.drain(1, policy="linecutting") == 1
        assert pg.query("followerCount", userId=1).rows == ((1,),)
        assert pg.drain() == 2 and pg.query("followerCount", userId=1).staleness_ms == 0.0
        assert pg.queue_stats().dequeued == 3


@pytest.mark.parametrize("event, write", [
    ("insert", lambda db: db.insert("follows", follower=1, followee=2, since=5)),
    ("delete", lambda db: db.delete("follows", follower=3, followee=3)),
    ("update", lambda db: db.update("follows", follower=3, followee=3, since=9)),
])
def test_draining_one_change_stays_within_the_drain_bound(db, event, write):
    """The maintainer's work per entry: the asynchronous views' rules within lint's drain
    bound for that write, plus the entry's removal."""
    db.insert("follows", follower=3, followee=3, since=0)
    db.drain()
    write(db)
    bound = next(w for w in db.plan.writes if w.table == "follows" and w.event.value == event)
    start = db.store.counter.ops
    assert db.drain() == 1
    assert 0 < db.store.counter.ops - start <= bound.drain_bound + 1
    assert db.check().consistent
