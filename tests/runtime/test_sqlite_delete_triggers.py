"""SQLite's delete rules run by key (``triggers_sqlite.gone_view``): a delete's work inside
the store does not grow with the view rows sharing a prefix of a deleted row's key, and
the views stay equal to their definitions."""
from __future__ import annotations

import re

from piql import App
from tests.conftest import plan_text
from tests.runtime.test_symmetric_pair import QUERIES, SCHEMA

PLAN = plan_text(SCHEMA, QUERIES)


def deployed(documents: int):
    """Documents each tagged a, b and c: the view rows of the pair (a, b) number
    ``documents``, all under one prefix (t1_tag, t2_tag) of the view's key."""
    db = App(PLAN).deploy()
    for doc in range(documents):
        db.insert("Documents", docId=doc, timestamp=1000 - doc)
        for tag in "abc":
            db.insert("Tags", docId=doc, tag=tag)
    return db


def vm_steps(db, work) -> int:
    """SQLite virtual-machine instructions ``work`` runs (its triggers' included)."""
    steps = [0]

    def count() -> int:
        steps[0] += 1
        return 0

    db.store.connection.set_progress_handler(count, 1)
    try:
        work()
    finally:
        db.store.connection.set_progress_handler(None, 1)
    return steps[0]


def test_a_deletes_work_does_not_grow_with_the_rows_sharing_its_key_prefix():
    found = []
    for documents in (3, 300):
        db = deployed(documents)
        found.append(vm_steps(db, lambda: db.delete("Tags", docId=1, tag="b")))
        kept = [(d, 1000 - d) for d in reversed(range(documents)) if d != 1][:3]
        assert list(db.query("twoTags", tag1="a", tag2="b").rows) == kept
        assert all(v.consistent for v in db.check().views)
        db.close()
    assert found[1] == found[0]


def test_the_delete_by_key_reads_the_whole_key():
    db = deployed(3)
    body = db.store.sql("SELECT sql FROM sqlite_temp_master WHERE type = 'trigger' AND "
                        "name = 'piql_gone_twoTags_view_delete'")[0][0]
    delete = re.search(r"DELETE FROM .*?;", body, re.S).group(0).rstrip(";")
    plan = db.store.sql("EXPLAIN QUERY PLAN " + re.sub(r'NEW\."\w+"', "?", delete),
                        [None] * 4)
    assert [row[-1] for row in plan] == [
        "SEARCH twoTags_view USING PRIMARY KEY (t1_tag=? AND t2_tag=? AND timestamp=? AND "
        "docId=?)"]
    db.close()
