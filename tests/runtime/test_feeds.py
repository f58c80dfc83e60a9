"""Adaptive feeds served per edge (runtime.feeds, runtime.adapt): whatever the push/pull
decisions, and however they change mid-run, every answer is a valid answer of the query's
own SQL on the base tables, within the bound of the plan used, on both stores."""
from __future__ import annotations

import random

import pytest

from piql import App
from piql.planner.push_pull import Decision
from piql.runtime.adapt import latency_target
from piql.runtime.errors import ParameterError, UnknownName
from tests.conftest import plan_text
from tests.runtime.workload import assert_ordered_match, ordered_oracle

PLAN = plan_text(
    """CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, followee))
        WITH CARDINALITY (followee, 6);
    CREATE TABLE posts (postId BIGINT PRIMARY KEY, author BIGINT, createdAt BIGINT,
        body VARCHAR);""",
    """-- name: feed
SELECT p.postId, p.createdAt, f.followee FROM follows f, posts p
WHERE f.follower = <me> AND p.author = f.followee ORDER BY p.createdAt DESC LIMIT 3
-- name: latest
SELECT p.body FROM follows f, posts p
WHERE p.author = f.followee AND f.follower = <me> ORDER BY p.createdAt DESC, p.postId DESC LIMIT 1
-- name: oldest
SELECT p.postId FROM follows f, posts p
WHERE f.follower = <me> AND p.author = f.followee ORDER BY p.createdAt LIMIT 2
""")
USERS = range(1, 8)


def assert_answers(db) -> None:
    for name in ("feed", "latest", "oldest"):
        query = db.query_plan(name)
        for me in USERS:
            got = db.query(name, me=me)  # strict: within the bound of the plan used
            assert got.ops <= got.bound
            assert_ordered_match(list(got.rows), ordered_oracle(db, query, {"me": me}),
                                 query.query.block.limit, (name, me))


def test_every_query_of_the_shape_is_served_per_edge():
    db = App(PLAN).deploy(":memory:")
    assert set(db.feeds) == {"feed", "latest", "oldest"}
    feed = db.feeds["feed"]
    assert not feed.active  # the pull plan serves until adapt() pushes
    assert feed.read_bound == PLAN.query("feed").ops_bound + 6 + 1 + 3
    assert feed.write_bound == 1000 + 6 * 1000 + 1


def random_write(db, rng: random.Random, posts: set[int]) -> None:
    roll = rng.random()
    if roll < 0.2:
        follower, followee = rng.choice(USERS), rng.choice(USERS)
        if db.store.get("follows", {"follower": follower, "followee": followee}):
            db.delete("follows", follower=follower, followee=followee)
        elif len(db.store.scan("follows", ("followee",), [("follower", follower)])) < 6:
            db.insert("follows", follower=follower, followee=followee)
    elif roll < 0.65 or not posts:
        key = rng.randrange(400)
        if key not in posts:
            db.insert("posts", postId=key, author=rng.choice([*USERS, None]),
                      createdAt=rng.choice([None, *range(12)]), body=f"b{key % 5}")
            posts.add(key)
    elif roll < 0.85:  # may move the post to another author, or out of every feed
        key = rng.choice(sorted(posts))
        db.update("posts", postId=key, author=rng.choice([*USERS, None]),
                  createdAt=rng.choice([None, *range(12)]), body="u")
    else:
        key = rng.choice(sorted(posts))
        db.delete("posts", postId=key)
        posts.discard(key)


def random_decisions(db, rng: random.Random) -> None:
    """Decisions changed mid-run: every mode, bounded steps, single edges switched."""
    roll = rng.random()
    if roll < 0.5:
        mode = rng.choice(["mincost", "push", "pull", "latency"])
        db.adapt(mode=mode, steps=rng.choice([None, 1, 3]),
                 budget=rng.choice([5, 20, 60]) if mode == "latency" else None)
    else:
        feed = db.feeds[rng.choice(sorted(db.feeds))]
        with db.store.transaction():
            feed.activate()
            feed.switch(rng.choice(USERS), rng.choice(USERS),
                        rng.choice([Decision.PUSH, Decision.PULL]))


@pytest.mark.parametrize("seed", [19, 20])
def test_answers_equal_sql_under_random_writes_and_decisions(new_store, seed):
    db = App(PLAN).deploy(new_store(), strict=True)
    rng = random.Random(seed)
    posts: set[int] = set()
    pushed_at_checks = []
    for step in range(260):
        random_write(db, rng, posts)
        if rng.random() < 0.3:  # random rates: some consumers read far more than others
            me = rng.choice(USERS[:3]) if rng.random() < 0.7 else rng.choice(USERS)
            db.query(rng.choice(sorted(db.feeds)), me=me)
        if step % 23 == 11:
            random_decisions(db, rng)
        if step % 37 == 36:
            assert_answers(db)
            pushed_at_checks.append(sum(len(db.rows(f.layout.push.name))
                                        for f in db.feeds.values() if f.active))
    assert_answers(db)
    assert max(pushed_at_checks) > 0  # answers were checked with push edges in use
    db.adapt(mode="pull")
    assert all(not db.rows(f.layout.feed.name) for f in db.feeds.values())
    assert_answers(db)


def test_a_pushed_feed_reads_less_than_pulling(new_store):
    """A consumer following 6 busy producers: pulled, a read scans 6 ranges of 3; pushed,
    one range of its own feed (plus its edges and state)."""
    db = App(PLAN).deploy(new_store(), strict=True)
    for producer in range(2, 8):
        db.insert("follows", follower=1, followee=producer)
    for key in range(60):
        db.insert("posts", postId=key, author=2 + key % 6, createdAt=key, body="b")
    pulled = db.query("feed", me=1)
    db.adapt("feed", mode="push")
    pushed = db.query("feed", me=1)
    assert pushed.rows == pulled.rows == ((59, 59, 7), (58, 58, 6), (57, 57, 5))
    assert pushed.ops < pulled.ops
    assert pulled.ops == 6 + 6 * 3  # the edges, then 3 rows of each producer
    assert pushed.ops == 6 + 6 + 1 + 3  # the edges, the push edges, the state, the feed
    assert len(db.rows("feed_feed")) == 3  # trimmed to k
    db.insert("posts", postId=60, author=3, createdAt=60, body="b")
    assert db.query("feed", me=1).rows[0] == (60, 60, 3)
    assert len(db.rows("feed_feed")) == 3


def test_deleting_pushed_rows_falls_back_then_repairs(new_store):
    db = App(PLAN).deploy(new_store(), strict=True)
    db.insert("follows", follower=1, followee=2)
    for key in range(10):
        db.insert("posts", postId=key, author=2, createdAt=key, body="b")
    db.adapt("feed", mode="push")
    for key in (9, 8):  # the feed keeps 3 rows: now one, above a horizon at 6
        db.delete("posts", postId=key)
    got = db.query("feed", me=1)
    assert [r[0] for r in got.rows] == [7, 6, 5]  # pulled: the feed could not answer
    assert db.feeds["feed"].stale == {1}
    (report,) = db.adapt("feed", mode="push")
    assert report.repaired == 1 and not db.feeds["feed"].stale
    again = db.query("feed", me=1)
    assert again.rows == got.rows and again.ops < got.ops


def test_rates_drive_mincost(new_store):
    """A consumer who reads often gets push edges from producers who write rarely; a
    producer writing far more than its consumers read stays pull (Lemma 1), and so does a
    consumer whose few savings would not pay for reading its pushed feed. With 30 reads
    the hybrid's estimated saving over all-pull is within two standard errors of its
    rates' sampling noise: the guard keeps all-pull; with 60 it is not."""
    db = App(PLAN).deploy(new_store(), strict=True)
    quiet = (2, 5, 6, 7)
    for follower, followee in [*((1, q) for q in quiet), (1, 3), (4, 3), (4, 2)]:
        db.insert("follows", follower=follower, followee=followee)
    for key in range(200):
        db.insert("posts", postId=key, author=3, createdAt=key, body="b")  # 3 writes a lot
    for number, producer in enumerate(quiet * 3):
        db.insert("posts", postId=500 + number, author=producer, createdAt=number, body="b")
    for _ in range(30):
        db.query("feed", me=1)
    db.query("feed", me=4)
    (report,) = db.adapt("feed")
    assert report.chosen == "pull" and not db.rows("feed_push")
    for _ in range(30):
        db.query("feed", me=1)
    (report,) = db.adapt("feed")
    assert report.chosen == "hybrid"
    assert {tuple(r) for r in db.rows("feed_push")} == {(q, 1) for q in quiet}
    assert report.to_push == 4 and report.pull_cost == 2  # L = 3 rows, less the push row
    assert_answers(db)


def test_adapt_refuses_unknown_modes_and_queries():
    db = App(PLAN).deploy(":memory:")
    with pytest.raises(ParameterError, match="unknown adapt mode 'fast'"):
        db.adapt(mode="fast")
    db.insert("follows", follower=1, followee=2)
    with pytest.raises(UnknownName):
        db.adapt("nosuch")
    assert db.adapt("feed", mode="push")[0].to_push == 1


def test_periodic_adapt_and_reopening(tmp_path):
    path = str(tmp_path / "feeds.db")
    db = App(PLAN).deploy(path)
    db.insert("follows", follower=1, followee=2)
    db.adapt_every(5, mode="push")
    for key in range(5):
        db.insert("posts", postId=key, author=2, createdAt=key, body="b")
    assert db.rows("feed_push") == [(2, 1)]
    db.close()
    again = App(PLAN).deploy(path)
    assert again.feeds["feed"].active  # its push tables are found again
    assert [r[0] for r in again.query("feed", me=1).rows] == [4, 3, 2]
    again.load("posts", [{"postId": 9, "author": 2, "createdAt": 9, "body": "b"}])
    assert again.rows("feed_push") == []  # a bulk load bypassed pushes: all pull again
    assert [r[0] for r in again.query("feed", me=1).rows] == [9, 4, 3]


def test_the_latency_mode_budgets_measured_read_ops(new_store):
    """Consumer 1 follows 6 producers writing far more than it reads (MinCost pulls
    every edge). Pulled, a read costs 6 edge rows + 6 x 3 rows = 24 measured ops. With j
    edges pushed: 6 edge rows + j push-edge rows + the state + 3 feed rows + (6 - j) x 3
    = 28 - 2j. The decision model alone (L - 1 = 2 per pull edge, 4 for the pushed
    feed) thinks the pulled read costs 12; the measured read tells it 12 more per read
    (the offset fed back), so a budget of 20 measured ops needs j = 4 pushes, and the
    reads then measure 20. A budget of 25 is slack: every extra push goes back (served
    by the feed, a read of no push edge also scans its push edges: 1 op more)."""
    db = App(PLAN).deploy(new_store(), strict=True)
    for producer in range(2, 8):
        db.insert("follows", follower=1, followee=producer)
    for key in range(60):
        db.insert("posts", postId=key, author=2 + key % 6, createdAt=key, body="b")
    for _ in range(5):
        assert db.query("feed", me=1).ops == 24
    (report,) = db.adapt("feed", mode="latency", budget=20, percentile=1.0)
    assert report.to_push == 4 and report.met
    assert db.query("feed", me=1).ops == 20
    (again,) = db.adapt("feed", mode="latency", budget=20, percentile=1.0)
    assert again.to_push == again.to_pull == 0 and again.met  # the loop is stable
    (slack,) = db.adapt("feed", mode="latency", budget=25, percentile=1.0)
    assert slack.to_pull == 4 and slack.push_edges == 0 and slack.met
    assert db.query("feed", me=1).ops == 25  # the pull plan's 24 and the empty push-edge scan
    (still,) = db.adapt("feed", mode="latency", budget=25, percentile=1.0)
    assert still.push_edges == 0 and still.met  # measured 25: within budget, stable
    # 16 at best (every edge pushed) > 15: reported unmet, and nothing is pushed for it
    (tight,) = db.adapt("feed", mode="latency", budget=15, percentile=1.0)
    assert tight.push_edges == 0 and tight.met is False
    (best,) = db.adapt("feed", mode="latency", budget=17, percentile=1.0)
    assert best.push_edges == 6 and best.met  # predicted 17 (offset 13 + 4): within 17
    assert db.query("feed", me=1).ops == 16
    assert_answers(db)


def test_the_latency_target_follows_the_measured_reads_over_budget():
    """The greedy weights consumers by estimated rates; the reads since the last adapt
    say how many really went over budget. 4 reads of 200 (2 %) over a budget of 20 where
    1 % is allowed: the greedy next allows 1 % x 1 % / 2 % = 0.5 % (percentile 0.995).
    50 reads cannot show 1 in 100: the target stands. 100 reads none over: back to 0.99."""
    db = App(PLAN).deploy(":memory:")
    feed = db.feeds["feed"]
    recent = feed.rates.read_ops.recent
    recent.extend([10] * 196 + [50] * 4)
    assert latency_target(feed, 20, 0.99) == pytest.approx(0.995)
    assert not recent  # the next adapt judges the reads of this one's decisions
    recent.extend([10] * 50)
    assert latency_target(feed, 20, 0.99) == pytest.approx(0.995)
    recent.extend([10] * 50)
    assert latency_target(feed, 20, 0.99) == pytest.approx(0.99)
    assert latency_target(feed, 20, 1.0) == 1.0  # every read within budget: nothing to scale
