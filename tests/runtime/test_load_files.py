"""``load`` from files: Parquet read without building SQL from the path (issue 12 item 16),
and every unreadable file refused with a PiqlError naming it, the store unchanged."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import piql
from piql.runtime.errors import DataFileError
from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA

APP = piql.load(PAPER_SCHEMA, PAPER_QUERIES)
DOCS = pa.table({"docId": pa.array([1, 2, 3], pa.int64()), "timestamp": [10, 20, 30],
                 "text": ["a", "b", "c"]})


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in db.store.shapes}


def test_a_hostile_parquet_file_name_is_only_a_name(tmp_path, monkeypatch):
    """Before: the path was pasted into read_parquet('...') and the COPY below wrote a file."""
    monkeypatch.chdir(tmp_path)
    pq.write_table(DOCS.slice(0, 0), tmp_path / "x.parquet")  # what the pasted SQL reads
    hostile = "x.parquet'); COPY (SELECT 42 AS pwned) TO 'pwned.csv'; SELECT * FROM read_parquet('x.parquet"
    pq.write_table(DOCS, tmp_path / hostile)
    db = APP.deploy()
    try:
        db.load("Documents", path=tmp_path / hostile)
    except piql.PiqlError:
        pass  # refusing the file is fine too; running its name is not
    assert not (tmp_path / "pwned.csv").exists()
    assert sorted(db.rows("Documents")) == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]


def test_parquet_columns_are_matched_by_name_in_batches(tmp_path, monkeypatch):
    from piql.runtime import datafiles

    monkeypatch.setattr(datafiles, "BATCH_ROWS", 2)
    path = tmp_path / "docs.parquet"
    pq.write_table(DOCS.select(["text", "docId", "timestamp"]), path)  # another column order
    db = APP.deploy()
    assert db.load("Documents", path=path) == 3
    assert sorted(db.rows("Documents")) == [(1, 10, "a"), (2, 20, "b"), (3, 30, "c")]


def test_a_directory_of_parquet_parts_loads(tmp_path):
    parts = tmp_path / "docs.parquet"
    parts.mkdir()
    pq.write_table(DOCS.slice(0, 2), parts / "part-0.parquet")
    pq.write_table(DOCS.slice(2), parts / "part-1.parquet")
    db = APP.deploy()
    assert db.load("Documents", path=parts) == 3


def bad_files(tmp_path):
    """(path, table, what the message must say) for every kind of unreadable file."""
    def write(name: str, content: bytes):
        path = tmp_path / name
        path.write_bytes(content)
        return path

    folder = tmp_path / "folder"
    folder.mkdir()
    return {
        "missing": (tmp_path / "nope.csv", "Documents", r"nope\.csv: no such file"),
        "directory": (folder, "Documents", r"folder: is a directory"),
        "not an integer": (write("abc.csv", b"docId,timestamp,text\n1,5,x\nabc,6,y\n"),
                           "Documents", r"abc\.csv:3:1: Documents\.docId is BIGINT; got 'abc'"),
        "too many fields": (write("long.csv", b"docId,timestamp,text\n1,5,x\n2,6,y,z\n"),
                            "Documents", r"long\.csv:3:1: row has 4 fields, the header has 3"),
        "too few fields": (write("short.csv", b"docId,timestamp,text\n1,5\n"),
                           "Documents", r"short\.csv:2:1: row has 2 fields, the header has 3"),
        "latin-1": (write("latin.csv", "docId,timestamp,text\n1,5,caf\u00e9\n".encode("latin-1")),
                    "Documents", r"latin\.csv:2:8: not UTF-8 text \(byte 0xe9\)"),
        "binary": (write("binary.csv", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
                   "Documents", r"binary\.csv:1:1: not UTF-8 text \(byte 0x89\)"),
        "NUL bytes": (write("nul.csv", b"docId,timestamp,text\n1,5,\x00\x01\x02\n"),
                      "Documents", r"nul\.csv:2:1: a NUL byte: this is a binary file"),
        "unknown column": (write("cols.csv", b"docId,when,text\n1,5,x\n"),
                           "Documents", r"cols\.csv:1:2: CSV column 'when' is not a column"),
        "bad parquet": (write("bad.parquet", b"PAR1 this is not parquet"),
                        "Documents", r"bad\.parquet: not a readable Parquet file"),
        "empty parquet": (write("empty.parquet", b""),
                          "Documents", r"empty\.parquet: not a readable Parquet file"),
    }


@pytest.mark.parametrize("kind", ["missing", "directory", "not an integer", "too many fields",
                                  "too few fields", "latin-1", "binary", "NUL bytes", "unknown column",
                                  "bad parquet", "empty parquet"])
def test_an_unreadable_file_is_a_piql_error_naming_it_and_changes_nothing(tmp_path, kind):
    path, table, message = bad_files(tmp_path)[kind]
    db = APP.deploy()
    db.insert("Documents", docId=9, timestamp=1, text="kept")
    before = state(db)
    with pytest.raises(DataFileError, match=message):
        db.load(table, path=path)
    assert state(db) == before


def test_a_csv_with_a_byte_order_mark_and_blank_lines_loads(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbfdocId,timestamp,text\n1,5,x\n\n2,6,\n")
    db = APP.deploy()
    assert db.load("Documents", path=path) == 2
    assert sorted(db.rows("Documents")) == [(1, 5, "x"), (2, 6, None)]


# quoted fields holding newlines (and a doubled quote): rows 1 and 2 span lines 2-4 and 5-6
MULTILINE = b'docId,timestamp,text\n1,5,"two\nlines, ""quoted""\nthree"\n2,6,"a\r\nb"\n3,7,c\n'
MULTILINE_ROWS = [(1, 5, 'two\nlines, "quoted"\nthree'), (2, 6, "a\r\nb"), (3, 7, "c")]


def test_a_csv_with_quoted_newlines_loads(tmp_path):
    path = tmp_path / "multi.csv"
    path.write_bytes(MULTILINE)
    db = APP.deploy(engine="duckdb")
    assert db.load("Documents", path=path) == 3
    assert sorted(db.rows("Documents")) == MULTILINE_ROWS
    assert db.check().consistent


@pytest.mark.parametrize("bad, where", [
    # a bad value after a multi-line record: the lines it spans are counted
    (b'4,x,d\n', "multi.csv:8:2"),
    # a bad value in the record after a field's newlines: the line the field starts on
    (b'"5\n",8,"e\nf",x\n', "multi.csv:8:1"),
    (b'"7\n",late,g\n', "multi.csv:9:2"),
])
def test_errors_after_quoted_newlines_name_the_right_line(tmp_path, bad, where):
    path = tmp_path / "multi.csv"
    path.write_bytes(MULTILINE + bad)
    db = APP.deploy(engine="duckdb")
    with pytest.raises(DataFileError, match=where.replace(".", r"\.")):
        db.load("Documents", path=path)
    assert db.rows("Documents") == []
