"""A SQLite file store checkpoints its write-ahead log in a background thread
(``runtime.wal_checkpoints``), so no write pays for SQLite's automatic checkpoint at
1,000 pages; the writer's own automatic checkpoint stays as a backstop, higher."""
from __future__ import annotations

import gc
import sqlite3
import time

import pytest

from piql.runtime.errors import DeploymentError
from piql.runtime.sqlite_store import SQLiteStore
from piql.runtime.store import TableShape
from piql.runtime.wal_checkpoints import WRITER_AUTOCHECKPOINT, BackgroundCheckpoints
from tests.runtime.test_drain_checkpoint import file_rows

ITEMS = TableShape("items", ("id", "tag"), ("id",), ("BIGINT", "VARCHAR"))


def in_file_within(path, rows: int, seconds: float = 10.0) -> bool:
    """Does the database file itself (not the log) hold ``rows`` items within ``seconds``?"""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if file_rows(path, "items") == rows:
                return True
        except sqlite3.OperationalError:  # not even the table is in the file yet
            pass
        time.sleep(0.02)
    return False


def autocheckpoint(store: SQLiteStore) -> int:
    return store.connection.execute("PRAGMA wal_autocheckpoint").fetchone()[0]


def test_writes_reach_the_database_file_without_a_checkpoint_of_the_writer(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteStore(str(path), checkpoint_every=0.05)
    try:
        store.create_table(ITEMS)
        assert store.checkpoints is not None and store.checkpoints.running
        assert autocheckpoint(store) == WRITER_AUTOCHECKPOINT
        for i in range(20):  # far below the writer's threshold: its commits copy nothing
            store.write_row("items", {"id": i, "tag": "t"})
        assert in_file_within(path, 20)  # copied by the background thread
        store.write_row("items", {"id": 20, "tag": "t"})
        assert in_file_within(path, 21)  # and again after the next commit
    finally:
        store.close()
    assert not store.checkpoints.running


def test_without_background_checkpoints_the_log_keeps_the_writes(tmp_path):
    path = tmp_path / "s.db"
    store = SQLiteStore(str(path), checkpoint_every=None)
    try:
        store.create_table(ITEMS)
        assert store.checkpoints is None and autocheckpoint(store) == 1000  # SQLite's own
        for i in range(20):
            store.write_row("items", {"id": i, "tag": "t"})
        assert not in_file_within(path, 20, seconds=0.3)
    finally:
        store.close()
    assert file_rows(path, "items") == 20  # the last connection's close checkpoints


def test_a_store_dropped_without_close_stops_its_thread(tmp_path):
    store = SQLiteStore(str(tmp_path / "s.db"), checkpoint_every=60)
    checkpoints = store.checkpoints
    del store
    gc.collect()
    # stopped at once (its wait of 60 s ended by the stop), not left to run to the exit
    checkpoints._thread.join(10)
    assert not checkpoints.running


def test_a_store_in_memory_has_no_log_to_checkpoint():
    store = SQLiteStore(":memory:")
    assert store.checkpoints is None
    store.close()


def test_a_failing_checkpoint_stops_the_thread_and_is_kept():
    def broken() -> None:
        raise OSError("disk gone")

    checkpoints = BackgroundCheckpoints(broken, every=0.01)
    deadline = time.monotonic() + 10
    while checkpoints.running and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not checkpoints.running and isinstance(checkpoints.error, OSError)
    checkpoints.stop()
    with pytest.raises(ValueError, match="positive"):
        BackgroundCheckpoints(broken, every=0)


def test_a_period_that_is_not_positive_is_refused_before_the_file_is_made(tmp_path):
    path = tmp_path / "s.db"
    with pytest.raises(DeploymentError, match="checkpoint period must be positive"):
        SQLiteStore(str(path), checkpoint_every=0)
    assert not path.exists()
