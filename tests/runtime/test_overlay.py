"""Neighbourhood aggregates served through an EAGr overlay (runtime.aggregates): whatever
the overlay (with or without sharing) and its push/pull nodes, and however edges and
writes change it, every answer equals the query's own SQL on the base tables, within the
pull plan's bound, on both stores."""
from __future__ import annotations

import random

import pytest

from piql import App
from piql.runtime.errors import ParameterError, UnknownName
from tests.conftest import plan_text
from tests.runtime.workload import normal, oracle

PLAN = plan_text(
    """CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))
        WITH CARDINALITY (followee, 8);
    CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT, points BIGINT);""",
    """-- name: friendCheckins
SELECT COUNT(*) AS n FROM follows f, checkins c WHERE f.follower = <me> AND c.userId = f.followee
-- name: friendPoints
SELECT SUM(c.points) AS s, AVG(c.points) AS a, COUNT(c.points) AS k FROM follows f, checkins c
WHERE f.follower = <me> AND c.userId = f.followee
""")
USERS = range(1, 9)
QUERIES = ("friendCheckins", "friendPoints")


def assert_answers(db) -> None:
    for name in QUERIES:
        budget = db.overlays[name].budget  # kept under edge changes since the last adapt
        for me in [*USERS, 99]:
            got = db.query(name, me=me)
            assert got.ops <= got.bound, (name, me)
            assert budget is None or got.ops <= budget + one_row(db) - 1, (name, me, budget)
            assert normal(got.rows) == normal(oracle(db, db.query_plan(name), {"me": me})), \
                (name, me, db.overlays[name].push)


def one_row(db) -> int:
    """A pushed reader's read: its row; on PostgreSQL one look more, for other clients'
    writes (runtime.foreign_writes)."""
    return 2 if db.store.dialect == "postgres" else 1


def test_both_aggregates_are_served_through_overlays():
    db = App(PLAN).deploy(":memory:")
    assert set(db.overlays) == set(QUERIES) and not db.feeds


@pytest.mark.parametrize("seed", [19, 20])
def test_answers_equal_sql_under_random_writes_edges_and_decisions(new_store, seed):
    db = App(PLAN).deploy(new_store(), strict=True)
    rng = random.Random(seed)
    for follower in USERS:  # overlapping neighbourhoods: partial aggregates to share
        for followee in rng.sample(list(USERS), 5):
            db.insert("follows", follower=follower, followee=followee)
    checkins: set[int] = set()
    shared_seen = routed_seen = 0
    for step in range(300):
        roll = rng.random()
        if roll < 0.15:
            edge = {"follower": rng.choice(USERS), "followee": rng.choice(USERS)}
            if db.store.get("follows", edge):
                db.delete("follows", **edge)
            elif len(db.store.scan("follows", ("followee",), [("follower", edge["follower"])])) < 8:
                db.insert("follows", **edge)
        elif roll < 0.6 or not checkins:
            key = rng.randrange(1000)
            if key not in checkins:
                db.insert("checkins", checkinId=key, userId=rng.choice([*USERS, None]),
                          points=rng.choice([None, 0, 2, 5, -3]))
                checkins.add(key)
        elif roll < 0.8:
            key = rng.choice(sorted(checkins))
            db.update("checkins", checkinId=key, userId=rng.choice(USERS),
                      points=rng.choice([None, 1, 4]))
        else:
            key = rng.choice(sorted(checkins))
            db.delete("checkins", checkinId=key)
            checkins.discard(key)
        if rng.random() < 0.3:
            db.query(rng.choice(QUERIES), me=rng.choice(USERS[:3]))  # skewed read rates
        if step % 25 == 12:
            mode = rng.choice(["eagr", "eagr", "push", "pull"])
            report = db.adapt_overlay(rng.choice(QUERIES), mode=mode, sharing=rng.random() < 0.7,
                                      budget=rng.choice([None, 2, 3]) if mode == "eagr" else None)
            shared_seen = max(shared_seen, report.shared_nodes)
            routed_seen = max(routed_seen, *(len(o.routed) for o in db.overlays.values()))
        if step % 30 == 29:
            assert_answers(db)
    assert_answers(db)
    assert shared_seen > 0  # answers were checked through partial aggregate nodes
    assert routed_seen > 0  # and through routed ones (all push with sharing)


def test_edge_changes_cost_bounded_work_and_rebuild_sharing_once_it_thins(new_store):
    """EAGr §3.3: an edge insert or delete changes the overlay in place. Its work is
    bounded by the reader's neighbourhood (CARDINALITY 8): a push reader adds or
    subtracts the writer's row (a read and an add), and under a read budget a reader
    pushed over it sums its partial aggregates' writers (at most 8 reads), then its
    inputs (at most 8), writing a row per node pushed (at most 9, 2 ops each). After more changes than a tenth of the edges, the next adapt with sharing
    builds the overlay again; answers equal the SQL throughout."""
    db = App(PLAN).deploy(new_store(), strict=True)
    rng = random.Random(7)
    for follower in USERS:
        for followee in rng.sample(list(USERS), 6):
            db.insert("follows", follower=follower, followee=followee)
    for key in range(60):
        db.insert("checkins", checkinId=key, userId=rng.choice(USERS), points=key % 5)
    for _ in range(40):
        db.query("friendCheckins", me=rng.choice(USERS[:4]))
    overlay = db.overlays["friendCheckins"]
    costs = []
    for method in ("edge_inserted", "edge_deleted"):
        def counted(*args, work=getattr(overlay, method)):
            before = db.store.counter.ops
            work(*args)
            costs.append(db.store.counter.ops - before)
        setattr(overlay, method, counted)
    builds = 0
    for step in range(80):
        if step % 20 == 0:
            graph = overlay.graph
            db.adapt_overlay("friendCheckins", sharing=True, budget=rng.choice([None, 3]))
            builds += overlay.graph is not graph
        edge = {"follower": rng.choice(USERS), "followee": rng.choice(USERS)}
        if db.store.get("follows", edge):
            db.delete("follows", **edge)
        elif len(db.store.scan("follows", ("followee",), [("follower", edge["follower"])])) < 8:
            db.insert("follows", **edge)
        if step % 10 == 9:
            assert_answers(db)
    assert costs and max(costs) <= 3 + 8 + 8 + 2 * 9
    assert builds >= 2  # the first build, and again once the changes passed a tenth
    assert_answers(db)


def test_a_pushed_reader_reads_one_row(new_store):
    db = App(PLAN).deploy(new_store(), strict=True)
    for follower in (1, 2, 3):
        for followee in (4, 5, 6, 7):
            db.insert("follows", follower=follower, followee=followee)
    for key in range(20):
        db.insert("checkins", checkinId=key, userId=4 + key % 4, points=key)
    pulled = db.query("friendPoints", me=1)
    report = db.adapt_overlay("friendPoints", mode="push")
    assert report.shared_nodes == 1 and report.sharing_index == pytest.approx(1 - 7 / 12)
    pushed = db.query("friendPoints", me=1)
    assert pushed.rows == pulled.rows == ((190, 9.5, 20),)
    # one row; on PostgreSQL one look more, for other clients' writes (foreign_writes)
    assert pushed.ops == one_row(db) < pulled.ops
    db.insert("checkins", checkinId=99, userId=5, points=10)  # pushed: 4 -> node -> readers
    assert db.query("friendPoints", me=2).rows == ((200, 200 / 21, 21),)
    db.delete("follows", follower=1, followee=5)  # 1 stops sharing the node
    assert normal(db.query("friendPoints", me=1).rows) == normal(
        oracle(db, db.query_plan("friendPoints"), {"me": 1}))
    assert db.query("friendPoints", me=2).ops == one_row(db)


def frequent_readers(new_store):
    """Readers 1, 2 and 3 follow 3, 4, 5 and 6, who write 10 checkins each; 1 and 2 read
    50 times, 3 never."""
    db = App(PLAN).deploy(new_store(), strict=True)
    for follower in (1, 2, 3):
        for followee in (3, 4, 5, 6):
            db.insert("follows", follower=follower, followee=followee)
    for key in range(40):
        db.insert("checkins", checkinId=key, userId=3 + key % 4, points=1)
    for _ in range(50):
        db.query("friendCheckins", me=1)
        db.query("friendCheckins", me=2)
    return db


def test_eagr_pushes_frequent_readers_and_pulls_rare_ones(new_store):
    """Without sharing: PUSH(r1) = 40 writes x 2 + 50 reads of its row = 130 < PULL(r1) =
    50 reads x 4 inputs = 200: push; r3 never reads (and no reader was seen reading once: Good-Turing expects 0
    reads of it): PULL(r3) = 0: pull."""
    db = frequent_readers(new_store)
    report = db.adapt_overlay("friendCheckins", sharing=False)
    assert db.overlays["friendCheckins"].push == {("r", 1), ("r", 2)}
    assert (report.shared_nodes, report.push_nodes, report.pull_nodes) == (0, 2, 1)
    assert_answers(db)


def test_with_sharing_one_pushed_partial_aggregate_serves_both(new_store):
    """With sharing, the readers share a node of the 4 writers: PUSH(node) = 80 < PULL(node)
    = 100 pulls x 4 = 400: push; each reader then reads its row, PULL(r1) = 50 < PUSH = 80
    + 50: pull. A write pushes once (to the node), not twice: 180 against 260 without
    sharing, so sharing is kept."""
    db = frequent_readers(new_store)
    report = db.adapt_overlay("friendCheckins", sharing=True)
    assert db.overlays["friendCheckins"].push == {("a", 0)} and not report.sharing_declined
    assert report.shared_nodes == 1 and report.sharing_index == pytest.approx(1 - 7 / 12)
    assert db.query("friendCheckins", me=1).ops == one_row(db)
    before = db.store.counter.ops
    db.insert("checkins", checkinId=100, userId=4, points=1)
    shared_write = db.store.counter.ops - before
    db.adapt_overlay("friendCheckins", sharing=False)
    before = db.store.counter.ops
    db.insert("checkins", checkinId=101, userId=4, points=1)
    assert db.store.counter.ops - before == shared_write + 2  # one more reader to add to
    assert_answers(db)


def test_a_partial_aggregate_costing_more_than_it_saves_is_dropped(new_store):
    """Readers 1, 2 and 3 follow 3-6 (10 checkins each), 1 also 7-9 (none); only 1
    reads (50 times). Without sharing r1 is push: 40 writes x 2 + 50 reads of its row =
    130, the others pull for nothing. With the node of 3-6 shared, r1 pushed needs the
    node push, and the node then keeps a row for 2 and 3 (80 + 130 = 210); r1 pulling
    reads the node's row and 7-9 (80 + 50 x 4 = 280): sharing costs more by estimate, so
    the node is dropped (a pull node saves nothing; 2 and 3 never read its row)."""
    db = App(PLAN).deploy(new_store(), strict=True)
    for follower, followee in [(r, w) for r in (1, 2, 3) for w in (3, 4, 5, 6)] + [
            (1, 7), (1, 8), (1, 9)]:
        db.insert("follows", follower=follower, followee=followee)
    for key in range(40):
        db.insert("checkins", checkinId=key, userId=3 + key % 4, points=1)
    for _ in range(50):
        db.query("friendCheckins", me=1)
    report = db.adapt_overlay("friendCheckins", sharing=True)
    assert report.shared_nodes == 0 and report.sharing_index == 0
    assert db.overlays["friendCheckins"].push == {("r", 1)}
    assert_answers(db)
    for _ in range(200):  # 2 and 3 read now: the node pays for itself again
        db.query("friendCheckins", me=2)
        db.query("friendCheckins", me=3)
    report = db.adapt_overlay("friendCheckins", sharing=True)
    assert report.shared_nodes == 1 and ("a", 0) in db.overlays["friendCheckins"].push
    assert_answers(db)


def test_a_partial_aggregate_feeding_only_push_readers_is_routed(new_store):
    """All push with sharing: the node's readers are both push, so no one reads its row.
    It keeps none, and a write adds to the two readers only, as without sharing (EAGr
    charges the node too: 2 ops more). Switched back to EAGr's choice (node push, readers
    pull), the node's row is rebuilt from its writers and answers stay right."""
    db = frequent_readers(new_store)
    db.adapt_overlay("friendCheckins", mode="push", sharing=True)
    overlay = db.overlays["friendCheckins"]
    assert overlay.routed == {("a", 0)} and len(db.rows("friendCheckins_overlay")) == 3
    before = db.store.counter.ops
    db.insert("checkins", checkinId=100, userId=4, points=1)
    shared_write = db.store.counter.ops - before
    db.adapt_overlay("friendCheckins", mode="push", sharing=False)
    before = db.store.counter.ops
    db.insert("checkins", checkinId=101, userId=4, points=1)
    assert db.store.counter.ops - before == shared_write
    db.adapt_overlay("friendCheckins", mode="push", sharing=True)
    db.insert("checkins", checkinId=102, userId=5, points=1)
    db.adapt_overlay("friendCheckins", sharing=True)
    assert overlay.push == {("a", 0)} and not overlay.routed
    assert db.query("friendCheckins", me=1).ops == one_row(db)
    assert_answers(db)


def test_under_a_read_budget_sharing_needs_fewer_pushes(new_store):
    """Every read within 2 rows. Without sharing each reader sums 4 writers, over the
    budget, so all three are pushed, even 3, who never reads: a write adds to 3 rows. With
    sharing each reader has one input, the partial aggregate of the 4 writers, so only it
    must be push; the min-cut then pulls the readers (PULL(r1) = 50 reads x 1 input < PUSH
    = 40 writes x 2): a write adds to 1 row, and every read is that row. Same bound, a
    third of the pushes: what sharing buys (the readers share one precomputed value)."""
    db = frequent_readers(new_store)
    overlay = db.overlays["friendCheckins"]
    db.adapt_overlay("friendCheckins", sharing=False, budget=2)
    assert overlay.push == {("r", 1), ("r", 2), ("r", 3)}
    before = db.store.counter.ops
    db.insert("checkins", checkinId=100, userId=4, points=1)
    unshared_write = db.store.counter.ops - before
    db.adapt_overlay("friendCheckins", sharing=True, budget=2)
    assert overlay.push == {("a", 0)}
    before = db.store.counter.ops
    db.insert("checkins", checkinId=101, userId=4, points=1)
    assert db.store.counter.ops - before == unshared_write - 4  # 1 add, not 3
    for me in (1, 2, 3):
        assert db.query("friendCheckins", me=me).ops <= one_row(db)
    assert_answers(db)
    # a budget the partial aggregate's 4 writers fit: no node is forced, readers pull
    db.adapt_overlay("friendCheckins", sharing=True, budget=4)
    assert ("r", 3) not in overlay.push
    with pytest.raises(ParameterError, match="read budget"):
        db.adapt_overlay("friendCheckins", mode="push", budget=2)


def test_adapt_overlay_refuses_unknown_modes_and_queries():
    db = App(PLAN).deploy(":memory:")
    with pytest.raises(ParameterError, match="unknown overlay mode"):
        db.adapt_overlay("friendCheckins", mode="fast")
    with pytest.raises(UnknownName):
        db.adapt_overlay("nosuch")
