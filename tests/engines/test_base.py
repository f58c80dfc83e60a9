"""The engine interface: tables as Arrow in batches, optional capabilities with defaults."""
from __future__ import annotations

import pyarrow as pa

from piql.engines import base, make_engine
from piql.engines.base import Share, TableData


def test_table_data_reads_an_iterator_once_in_record_batches(monkeypatch):
    monkeypatch.setattr(base, "BATCH_ROWS", 2)
    rows = iter([(1, "a", 1.5), (2, None, -2.0), (3, "c", None), (-2**63, "d", 0.0), (5, "e", 1e300)])
    table = TableData("t", ("id", "name", "score"), ("BIGINT", "VARCHAR(10)", "DOUBLE"), rows).arrow()
    assert [b.num_rows for b in table.to_batches()] == [2, 2, 1]
    assert table.schema == pa.schema([("id", pa.int64()), ("name", pa.string()),
                                      ("score", pa.float64())])
    assert table.column("id").to_pylist() == [1, 2, 3, -2**63, 5]
    assert table.column("name").to_pylist() == ["a", None, "c", "d", "e"]
    assert next(rows, None) is None  # consumed


def test_an_empty_table_keeps_its_schema():
    table = TableData("t", ("id", "flag"), ("INTEGER", "BOOLEAN"), iter(())).arrow()
    assert table.num_rows == 0
    assert table.schema == pa.schema([("id", pa.int64()), ("flag", pa.bool_())])


def test_an_engine_whose_tasks_cannot_read_the_store_leaves_the_shares_to_the_caller():
    engine = make_engine("duckdb")
    try:
        reader_calls: list[str] = []

        def reader(sql, values):
            reader_calls.append(sql)
            return []

        assert engine.read_shares(reader, "s", ("a",), ("INTEGER",),
                                  [Share("SELECT 1", {})], "SELECT * FROM s") is None
        assert reader_calls == []
    finally:
        engine.close()
