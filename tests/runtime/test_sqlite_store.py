"""SQLiteStore: the Store protocol on one SQLite file, counted, with piql's errors."""
from __future__ import annotations

import inspect
import pickle

import pytest

from piql.runtime.errors import StoreOverflow, StoreRefused, UnreadableDatabase
from piql.runtime.sqlite_store import MMAP_BYTES, ReadOnlyDatabase, SQLiteStore
from piql.runtime.store import Store, TableShape

ITEMS = TableShape("items", ("id", "tag", "price"), ("id",), ("BIGINT", "VARCHAR", "BIGINT"))


def protocol_methods() -> list[str]:
    return [name for name, member in vars(Store).items()
            if callable(member) and not name.startswith("_")]


def test_the_sqlite_store_has_every_method_of_the_protocol_with_its_parameters():
    assert len(protocol_methods()) > 20
    for name in protocol_methods():
        expected = inspect.signature(getattr(Store, name))
        found = inspect.signature(getattr(SQLiteStore, name))
        assert list(found.parameters) == list(expected.parameters), name
    store = SQLiteStore(":memory:")
    for attribute in ("dialect", "location", "counter", "shapes"):
        assert hasattr(store, attribute)
    assert store.dialect == "sqlite" and store.location == ":memory:"


@pytest.fixture
def store(tmp_path):
    found = SQLiteStore(str(tmp_path / "s.db"))
    found.create_table(ITEMS)
    yield found
    found.close()


def test_a_file_store_reads_its_pages_through_a_memory_map(tmp_path):
    store = SQLiteStore(str(tmp_path / "s.db"), checkpoint_every=None)
    try:
        assert store.connection.execute("PRAGMA mmap_size").fetchone()[0] == MMAP_BYTES
    finally:
        store.close()
    memory = SQLiteStore(":memory:")
    try:  # nothing to map: SQLite answers no size
        assert memory.connection.execute("PRAGMA mmap_size").fetchone() is None
    finally:
        memory.close()


def test_a_transaction_commits_or_changes_nothing(store):
    with store.transaction():
        store.insert("items", {"id": 1, "tag": "a", "price": 3})
    with pytest.raises(RuntimeError):
        with store.transaction():
            store.insert("items", {"id": 2, "tag": "b", "price": 4})
            raise RuntimeError("crash")
    assert store.all_rows("items") == [(1, "a", 3)]
    with pytest.raises(StoreRefused, match="UNIQUE constraint failed"):
        with store.transaction():
            store.insert("items", {"id": 1, "tag": "again", "price": 0})
    assert store.all_rows("items") == [(1, "a", 3)]


def test_bounded_reads_and_point_writes_are_counted(store):
    with store.transaction():
        for i in range(5):
            store.insert("items", {"id": i, "tag": "a" if i % 2 else "b", "price": i})
    assert store.counter.writes == 5
    reads = store.counter.reads
    assert store.scan("items", ITEMS.columns, [("id", 3)]) == [(3, "a", 3)]
    assert store.scan("items", ITEMS.columns, ranges=[("id", ">=", 2)], order=("id",),
                      limit=2) == [(2, "b", 2), (3, "a", 3)]
    assert store.scan("items", ITEMS.columns, [("id", 99)]) == []
    assert store.get("items", {"id": 4}) == (4, "b", 4)
    assert store.count_distinct("items", "tag", [], cap=5, exclude=None) == 2
    assert store.counter.reads - reads == 1 + 2 + 1 + 1 + 2


def test_set_oriented_work_is_not_counted(store):
    with store.transaction():
        store.replace_rows("items", [(1, "a", 1), (2, "a", 2), (3, "b", 3)])
        store.replace_rows("items", [(9, "a", 9)], {"tag": "a"})
    assert sorted(store.all_rows("items")) == [(3, "b", 3), (9, "a", 9)]
    assert [len(b) for b in store.read_table("items", 1)] == [1, 1]
    assert store.sql('SELECT "id" FROM "items" WHERE "tag" = :tag', {"tag": "b"}) == [(3,)]
    assert store.sql('SELECT "id" FROM "items" WHERE "tag" = ?', ["b"]) == [(3,)]
    assert store.counter.ops == 0


def test_a_staged_batch_is_inserted_and_dropped(store):
    with store.transaction():
        store.stage("_load_items", "items", [(1, "a", 1), (2, "b", 2)])
        assert store.shapes["_load_items"].columns == ITEMS.columns
        store.insert_staged("_load_items", "items")
        store.drop_staged("_load_items")
    assert "_load_items" not in store.shapes
    assert sorted(store.all_rows("items")) == [(1, "a", 1), (2, "b", 2)]
    assert "_load_items" not in store.table_names()


def test_an_integer_sum_leaving_64_bits_is_a_store_overflow(store):
    with store.transaction():
        store.replace_rows("items", [(1, "a", 2 ** 63 - 1), (2, "a", 1)])
    with pytest.raises(StoreOverflow, match="integer overflow"):
        store.sql('SELECT SUM("price") FROM "items"')


def test_bookkeeping_metadata_and_epoch_marks(store):
    assert store.get_meta("fingerprint") is None
    with store.transaction():
        store.create_bookkeeping()
        store.set_meta("fingerprint", "abc")
        store.mark_epochs([("v", 10), ("v", 20), ("v", 10), ("w", 5)])
    assert store.get_meta("fingerprint") == "abc"
    assert sorted(store.marked_epochs("v")) == [10, 20]
    with store.transaction():
        store.unmark_epoch("v", 10)
    assert store.marked_epochs("v") == [20] and store.marked_epochs("w") == [5]
    assert {"_piql_meta", "_piql_dirty_epochs", "items"} <= store.table_names()


def test_another_connections_commit_changes_the_version(store):
    version = store.version()
    other = SQLiteStore(store.path)
    other.register(ITEMS)
    with other.transaction():
        other.insert("items", {"id": 7, "tag": "x", "price": 1})
    other.close()
    assert store.version() != version


def test_an_engine_task_reads_with_a_reader_of_its_own(store):
    with store.transaction():
        store.insert("items", {"id": 1, "tag": "a", "price": 3})
    reader = store.reader()
    assert reader('SELECT "id" FROM "items" WHERE "tag" = :t', {"t": "a"}) == [(1,)]
    cloudpickle = pytest.importorskip("pyspark.cloudpickle")
    shipped = pickle.loads(cloudpickle.dumps(reader))  # as Spark sends it to an executor
    assert shipped('SELECT "price" FROM "items"', ()) == [(3,)]
    assert SQLiteStore(":memory:").reader() is None


def test_a_database_piql_does_not_keep_is_read_and_never_written(tmp_path):
    path = str(tmp_path / "other.db")
    store = SQLiteStore(path)
    store.create_table(ITEMS)
    store.insert("items", {"id": 1, "tag": "a", "price": 3})
    store.close()
    with ReadOnlyDatabase(path) as database:
        assert database.rows("SELECT id, tag FROM items WHERE price = ?", (3,)) == [(1, "a")]
        with pytest.raises(UnreadableDatabase, match="readonly"):
            database.rows("DELETE FROM items")
        assert database.rows("SELECT COUNT(*) FROM items") == [(1,)]
    text = tmp_path / "text.db"
    text.write_text("this is not a database")
    with ReadOnlyDatabase(str(text)) as database, \
            pytest.raises(UnreadableDatabase, match="not a database"):
        database.rows("SELECT name FROM sqlite_master")
