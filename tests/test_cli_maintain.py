"""``piql maintain``: a maintainer process draining the asynchronous views' update queue;
killed mid-batch and restarted, it loses nothing and applies nothing twice (on SQLite and
PostgreSQL)."""
from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from piql.cli import main
from piql.runtime.deployment import Deployment
from tests.planner.test_async_views import QUERIES, SCHEMA, social

ASYNC = ("followerCount", "likeCount")
ROOT = Path(__file__).parents[1]
# A maintainer that kills itself (SIGKILL: no cleanup, as a crash) on its Nth entry.
DYING = """
import os, signal, sys
import piql
db = piql.load(sys.argv[1], sys.argv[2]).deploy(sys.argv[3], quiet=True, engine="store")
real, calls = db.maintainer.apply_deferred, [0]
def dying(*args):
    real(*args)
    calls[0] += 1
    if calls[0] == int(sys.argv[4]):
        os.kill(os.getpid(), signal.SIGKILL)
db.maintainer.apply_deferred = dying
db.drain(batch=int(sys.argv[5]))
"""


@pytest.fixture
def files(tmp_path):
    queries = QUERIES
    for name in ASYNC:
        queries = queries.replace(f"-- name: {name}\n", f"-- name: {name}\n-- maintenance: async\n")
    (tmp_path / "schema.sql").write_text(SCHEMA)
    (tmp_path / "queries.sql").write_text(queries)
    return [str(tmp_path / "schema.sql"), str(tmp_path / "queries.sql")]


def queued_follows(location: str, users: int = 8) -> int:
    """A store whose queue holds one insert per follow (users x users of them)."""
    with Deployment(social(*ASYNC), location, engine="store") as db:
        for user in range(1, users + 1):
            db.insert("users", userId=user, name=f"u{user}", email=f"{user}@x", createdAt=0)
        for follower in range(1, users + 1):
            for followee in range(1, users + 1):
                db.insert("follows", follower=follower, followee=followee, since=0)
        return len(db.maintainer.queue)


def assert_exact_after_drain(location: str) -> None:
    """The oracle: after a drain every view equals its recomputation, and followerCount the
    count of the base rows."""
    with Deployment(social(*ASYNC), location, engine="store") as db:
        db.drain()
        assert db.check().consistent and len(db.maintainer.queue) == 0
        counts = Counter(followee for _, followee, _ in db.rows("follows"))
        for user in range(1, 9):
            assert db.query("followerCount", userId=user).rows == ((counts[user],),)


def test_maintain_once_drains_the_queue(capsys, files, tmp_path):
    store = str(tmp_path / "s.db")
    queued = queued_follows(store)
    assert main(["maintain", *files, "--db", store, "--once", "--engine", "store", "-q"]) == 0
    assert f"applied {queued} queued changes" in capsys.readouterr().out
    assert_exact_after_drain(store)


def test_maintain_refuses_a_bad_batch(capsys, files, tmp_path):
    code = main(["maintain", *files, "--db", str(tmp_path / "s.db"), "--batch", "0"])
    assert code == 2 and "--batch expects a positive integer" in capsys.readouterr().err


def test_a_maintainer_killed_mid_batch_loses_nothing_and_applies_nothing_twice(
        files, store_url):
    queued = queued_follows(store_url)
    # batches of 8: the first commits, the second dies on its fifth entry
    child = subprocess.run([sys.executable, "-c", DYING, *files, store_url, "13", "8"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Deployment(social(*ASYNC), store_url, engine="store") as db:
        assert len(db.maintainer.queue) == queued - 8  # the killed batch is queued again
        assert sum(db.query("followerCount", userId=u).rows[0][0] for u in range(1, 9)) == 8
    assert_exact_after_drain(store_url)


def test_a_killed_maintain_process_is_restarted_and_catches_up(files, tmp_path):
    store = str(tmp_path / "s.db")
    queued = queued_follows(store)
    command = [sys.executable, "-m", "piql.cli", "maintain", *files, "--db", store,
               "--batch", "2", "--engine", "store", "-q"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    with Deployment(social(*ASYNC), store, engine="store") as watcher:
        deadline = time.monotonic() + 120
        while len(watcher.maintainer.queue) == queued and time.monotonic() < deadline:
            time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    assert main(["maintain", *files, "--db", store, "--once", "--engine", "store", "-q"]) == 0
    assert_exact_after_drain(store)


def test_check_drains_an_async_views_queue_first(capsys, files, tmp_path):
    store = str(tmp_path / "s.db")
    queued_follows(store)
    assert main(["check", *files, "--db", store, "--engine", "store", "-q"]) == 0
    with Deployment(social(*ASYNC), store, engine="store") as db:
        assert len(db.maintainer.queue) == 0
    assert_exact_after_drain(store)


def test_two_maintainers_claim_each_entry_once(store_url):
    """Two deployments drain one store at once (threads, a connection each): every entry is
    applied by exactly one of them."""
    import threading

    queued = queued_follows(store_url)
    maintainers = [Deployment(social(*ASYNC), store_url, engine="store") for _ in range(2)]
    applied = [0, 0]

    def work(number: int) -> None:
        applied[number] = maintainers[number].drain(batch=4)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for db in maintainers:
        db.close()
    assert sum(applied) == queued
    assert_exact_after_drain(store_url)


def test_maintain_stops_cleanly_on_sigterm(files, tmp_path):
    store = str(tmp_path / "s.db")
    queued_follows(store, users=2)
    process = subprocess.Popen([sys.executable, "-m", "piql.cli", "maintain", *files, "--db",
                                store, "--engine", "store", "-q"], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with Deployment(social(*ASYNC), store, engine="store") as watcher:
        deadline = time.monotonic() + 120
        while len(watcher.maintainer.queue) and time.monotonic() < deadline:
            time.sleep(0.01)
    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "applied 4 queued changes" in out and "0 pending" in out


def test_the_maintenance_option_makes_unmarked_queries_async(capsys, tmp_path):
    (tmp_path / "schema.sql").write_text(SCHEMA)
    (tmp_path / "queries.sql").write_text(QUERIES)
    files = [str(tmp_path / "schema.sql"), str(tmp_path / "queries.sql")]
    store = str(tmp_path / "s.db")
    assert main(["deploy", *files, "--db", store, "--engine", "store", "--maintenance",
                 "async", "-q"]) == 0
    # the same plan: every view that can be async is (friendPostCount's per-writer view, the
    # twoTags join, and the periodic queries' staging and periodic views too)
    with Deployment(social(*ASYNC, "friendPostCount", "twoTags", "latestPosts", "activeAuthors",
                           "trending"), store, engine="store") as db:
        db.insert("users", userId=1, name="a", email="a", createdAt=0)
        db.insert("follows", follower=1, followee=1, since=0)
        assert len(db.maintainer.queue) == 1
    capsys.readouterr()
    assert main(["maintain", *files, "--db", store, "--once", "--engine", "store",
                 "--maintenance", "async", "-q"]) == 0
    assert "applied 1 queued changes" in capsys.readouterr().out


# -- an asynchronous join view (twoTags: post_tags x post_tags x posts, as of the queue) --

JOINS = ASYNC + ("twoTags",)
TAG_SETS = [("a", "b", "c"), ("a", "b"), ("b", "c", "d"), ("a", "c"), ("a", "b", "d"),
            ("c", "d")]


@pytest.fixture
def join_files(tmp_path):
    queries = QUERIES
    for name in JOINS:
        queries = queries.replace(f"-- name: {name}\n", f"-- name: {name}\n-- maintenance: async\n")
    (tmp_path / "schema.sql").write_text(SCHEMA)
    (tmp_path / "queries.sql").write_text(queries)
    return [str(tmp_path / "schema.sql"), str(tmp_path / "queries.sql")]


def queued_tagged_posts(location: str) -> int:
    """A store whose queue holds every post and every tag of it (none applied yet)."""
    with Deployment(social(*JOINS), location, engine="store") as db:
        db.insert("users", userId=1, name="u1", email="1@x", createdAt=0)
        for post, tags in enumerate(TAG_SETS, 1):
            db.insert("posts", postId=post, author=1, createdAt=10 * post, body=f"p{post}")
            for tag in tags:
                db.insert("post_tags", postId=post, tag=tag)
        return len(db.maintainer.queue)


def assert_two_tags_exact_after_drain(location: str) -> None:
    """The oracle: after a drain every view equals its recomputation, and twoTags answers
    what its SQL does on the base tables (computed here from their rows)."""
    with Deployment(social(*JOINS), location, engine="store") as db:
        db.drain()
        assert db.check().consistent and len(db.maintainer.queue) == 0
        posts = {row[0]: row for row in db.rows("posts")}
        tagged = {(post, tag) for post, tag in db.rows("post_tags")}
        for first in "abcd":
            for second in "abcd":
                expected = sorted((posts[p] for p in posts if (p, first) in tagged
                                   and (p, second) in tagged), key=lambda r: -r[2])[:10]
                assert db.query("twoTags", tag1=first, tag2=second).rows == tuple(
                    (p[0], p[2], p[3]) for p in expected)


def test_a_maintainer_killed_mid_batch_of_a_join_view_loses_nothing(join_files, store_url):
    queued = queued_tagged_posts(store_url)
    assert queued == len(TAG_SETS) + sum(map(len, TAG_SETS))
    # batches of 5: the first commits, the second dies on its third entry (a join's rules
    # half applied: the view rows it wrote roll back with its claims)
    child = subprocess.run([sys.executable, "-c", DYING, *join_files, store_url, "8", "5"],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert child.returncode == -signal.SIGKILL, child.stderr
    with Deployment(social(*JOINS), store_url, engine="store") as db:
        assert len(db.maintainer.queue) == queued - 5  # the killed batch is queued again
    assert_two_tags_exact_after_drain(store_url)


def test_a_killed_maintain_process_of_a_join_view_is_restarted(join_files, tmp_path):
    store = str(tmp_path / "s.db")
    queued = queued_tagged_posts(store)
    command = [sys.executable, "-m", "piql.cli", "maintain", *join_files, "--db", store,
               "--batch", "3", "--engine", "store", "-q"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    with Deployment(social(*JOINS), store, engine="store") as watcher:
        deadline = time.monotonic() + 120
        while len(watcher.maintainer.queue) == queued and time.monotonic() < deadline:
            time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=60)
    with Deployment(social(*JOINS), store, engine="store") as db:
        assert 0 <= len(db.maintainer.queue) < queued  # some batches committed
    assert main(["maintain", *join_files, "--db", store, "--once", "--engine", "store",
                 "-q"]) == 0
    assert_two_tags_exact_after_drain(store)
