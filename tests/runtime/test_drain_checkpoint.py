"""A drain on SQLite checkpoints the write-ahead log after its transactions
(``SQLiteStore.after_maintenance``), so the next writer's commit does not copy the
maintainer's pages back into the database (measured: the async BuyConfirm's p99,
docs/async.md)."""
from __future__ import annotations

import sqlite3

from tests.runtime.test_queue_triggers import deploy


def file_rows(path, table: str) -> int:
    """The rows of ``table`` in the database file itself, not counting the log's pages."""
    connection = sqlite3.connect(f"file:{path}?immutable=1", uri=True)
    try:
        return connection.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    finally:
        connection.close()


def test_a_drain_leaves_the_write_ahead_log_checkpointed(tmp_path):
    path = tmp_path / "store.db"
    db = deploy(str(path))
    db.store.checkpoints.stop()  # the store's background checkpoints would copy them too
    for tag in ("a", "b", "c"):
        db.insert("post_tags", postId=1, tag=tag)
    assert file_rows(path, "post_tags") == 0  # still in the log only
    assert db.drain() == 3
    rows = db.store.sql('SELECT COUNT(*) FROM "twoTags_view"')[0][0]
    assert rows > 0 and file_rows(path, "twoTags_view") == rows  # copied by the drain
    assert file_rows(path, "post_tags") == 3 and file_rows(path, "_piql_update_queue") == 0
    assert all(v.consistent for v in db.check().views)
