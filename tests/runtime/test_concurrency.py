"""Several processes on one store file: checks read one snapshot while another process
writes (issue 12 item 10), and deployments race safely."""
from __future__ import annotations

import multiprocessing
import random
import time

import pytest

import piql
from piql.runtime.errors import StoreBusy
from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA

SPAWN = multiprocessing.get_context("spawn")  # no forked SQLite connections or engine threads


def write_for(path: str, seconds: float, seed: int, ready) -> int:
    """Insert and delete tags (and documents) through piql until ``seconds`` have passed."""
    db = piql.load(PAPER_SCHEMA, PAPER_QUERIES).deploy(path, engine="store")
    rng = random.Random(seed)
    ready.set()
    writes, documents = 0, [d for (d, *_) in db.rows("Documents")]
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        doc = rng.choice(documents)
        tag = rng.choice("abcdefgh")
        try:
            if rng.random() < 0.6:
                db.insert("Tags", docId=doc, tag=tag, timestamp=rng.randrange(1000))
            else:
                db.delete("Tags", docId=doc, tag=tag)
            writes += 1
        except piql.PiqlError:
            pass  # a duplicate key or a missing row: refused, changes nothing
        if rng.random() < 0.05:
            documents.append(max(documents) + 1)
            db.insert("Documents", docId=documents[-1], timestamp=rng.randrange(1000), text="d")
    db.close()
    return writes


def start_writer(path, seconds: float, seed: int = 1):
    ready = SPAWN.Event()
    process = SPAWN.Process(target=write_for, args=(str(path), seconds, seed, ready))
    process.start()
    assert ready.wait(60), "the writer did not start"
    return process


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_check_under_concurrent_writes_sees_one_snapshot_and_repair_corrupts_nothing(tmp_path, engine, store_url):
    path = store_url
    db = piql.load(PAPER_SCHEMA, PAPER_QUERIES).deploy(path, engine=engine)
    db.load("Documents", [(d, d, f"d{d}") for d in range(1, 41)])
    db.load("Tags", [(d, t, d) for d in range(1, 41) for t in "abc"])
    db.store.sql('UPDATE "docsPerTag" SET "cnt" = "cnt" + 5')  # a corrupted view to repair
    writer = start_writer(path, seconds=6)
    checks = repairs = 0
    try:
        first = db.check(repair=True)
        assert [(v.view, v.repaired) for v in first.views if not v.consistent] == \
            [("docsPerTag", True)]
        while writer.is_alive():
            report = db.check(repair=checks % 3 == 2)
            assert report.consistent, str(report)  # no false difference, nothing to repair
            checks += 1
            repairs += any(v.repaired for v in report.views)
    finally:
        writer.join(60)
    assert writer.exitcode == 0
    assert checks >= 3 and repairs == 0
    final = db.check()
    assert final.consistent, str(final)
    counts = dict(db.store.sql('SELECT "tag", COUNT(*) FROM "Tags" GROUP BY "tag"'))
    assert all(db.query("countTags", tag=t).rows == ((counts.get(t, 0),),) for t in "abcdefgh")
    db.close()


def deploy_at_once(path: str, barrier, results) -> None:
    barrier.wait()
    db = piql.load(PAPER_SCHEMA, PAPER_QUERIES).deploy(path, engine="store")
    db.insert("Documents", docId=SPAWN.current_process().pid, timestamp=1, text="mine")
    results.put(db.installed)
    db.close()


def test_processes_deploying_the_same_new_store_at_once_all_succeed(tmp_path, store_url):
    """Before: "database is locked" or "table _piql_meta already exists" for all but one."""
    path, racers = store_url, 6
    barrier, results = SPAWN.Barrier(racers), SPAWN.Queue()
    processes = [SPAWN.Process(target=deploy_at_once, args=(path, barrier, results))
                 for _ in range(racers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(120)
    assert [p.exitcode for p in processes] == [0] * racers
    installed = sorted(results.get(timeout=5) for _ in range(racers))
    assert installed == [False] * (racers - 1) + [True]  # one installed, the others found it
    db = piql.load(PAPER_SCHEMA, PAPER_QUERIES).deploy(path)
    assert len(db.rows("Documents")) == racers and db.check().consistent


def hold_the_write_lock(path: str, seconds: float, held) -> None:
    import sqlite3

    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")  # what a long load or repair does
    connection.execute('INSERT INTO "Documents" VALUES (999, 1, \'held\')')
    held.set()
    time.sleep(seconds)
    connection.execute("COMMIT")
    connection.close()


def test_a_write_waits_for_the_busy_timeout_then_says_the_store_is_busy(tmp_path):
    """Another process holds the write lock (as a long load does) for 4 s: a deployment
    waiting 0.5 s refuses with StoreBusy, one waiting 60 s writes once the lock is free."""
    path = str(tmp_path / "busy.db")
    app = piql.load(PAPER_SCHEMA, PAPER_QUERIES)
    app.deploy(path).close()
    held = SPAWN.Event()
    holder = SPAWN.Process(target=hold_the_write_lock, args=(path, 4.0, held))
    holder.start()
    try:
        assert held.wait(60)
        impatient, patient = app.deploy(path, busy_timeout=0.5), app.deploy(path, busy_timeout=60)
        started = time.monotonic()
        with pytest.raises(StoreBusy, match=r"busy: another connection held its write lock for "
                                            r"more than 0\.5 s.*busy_timeout=SECONDS"):
            impatient.insert("Documents", docId=1, timestamp=1, text="x")
        assert time.monotonic() - started < 3.5
        patient.insert("Documents", docId=2, timestamp=1, text="waited")
        assert sorted(d for d, *_ in patient.rows("Documents")) == [2, 999]
    finally:
        holder.join(60)


def test_a_write_committed_while_a_refresh_reads_is_not_lost(tmp_path, store_url):
    """A like lands in an old hour (already marked for refresh) from another connection
    after the refresh read its shares: before, the refresh cleared the hour's mark and the
    like never reached the view; now the mark stays and the next refresh takes it."""
    from piql.engines.duckdb_engine import DuckDBEngine
    from piql.runtime.refresh import refresh_view
    from tests.conftest import EXAMPLES

    hour = 3_600_000
    app = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
    path = store_url
    db = app.deploy(path, engine="store", partitions=2)
    db.load("users", [(u, f"u{u}", f"u{u}@x", 0) for u in (1, 2, 3)])
    db.load("posts", [(10, 1, 0, "hello")])
    db.insert("likes", postId=10, userId=1, likedAt=hour + 1)
    db.refresh(now_ms=50 * hour)
    db.insert("likes", postId=10, userId=2, likedAt=hour + 2)  # late: marks hour 1

    other = app.deploy(path, engine="store", partitions=2)  # another connection

    class WriteWhileMerging(DuckDBEngine):
        def query(self, sql):
            if not other.rows("likes")[2:]:
                other.insert("likes", postId=10, userId=3, likedAt=hour + 3)
            return super().query(sql)

    trending = next(v for v in db.views if v.name == "trending")
    refresh_view(db.store, trending.refresh, 50 * hour, engine=WriteWhileMerging())
    assert db.query("trending", hour=hour).rows == ((10, 2),)  # read before the third like
    db.refresh(now_ms=50 * hour)
    assert db.query("trending", hour=hour).rows == ((10, 3),)
    other.close()
    db.close()
