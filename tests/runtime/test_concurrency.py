"""Several processes on one store file: checks read one snapshot while another process
writes (issue 12 item 10), and deployments race safely."""
from __future__ import annotations

import multiprocessing
import random
import time

import pytest

import piql
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
def test_check_under_concurrent_writes_sees_one_snapshot_and_repair_corrupts_nothing(tmp_path, engine):
    path = tmp_path / "shared.db"
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
