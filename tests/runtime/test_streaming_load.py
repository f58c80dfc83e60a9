"""Bulk loads stream (issue 16): rows go from the file(s) to the store batch by batch, the
checks stay set-oriented over the whole load, a refusal in the last batch leaves the
store as it was, and the Python memory a load takes does not follow the file's size."""
from __future__ import annotations

import csv
import gc
import tracemalloc
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from piql import App
from piql.runtime.errors import ConstraintError, DataFileError
from tests.conftest import paper_plan_for

PLAN = paper_plan_for(temporal=True)  # popularTags: a staging view copying every Tags row
TAGS = [(d, f"t{(d + k) % 7}", d * 10 + k) for d in range(1, 31) for k in range(3)]
DOCS = [(d, d * 100, f"doc {d}") for d in range(1, 31)]


def batches_of(monkeypatch, rows: int) -> None:
    """Batches of ``rows`` rows everywhere a load batches."""
    from piql.engines import base, duckdb_engine
    from piql.runtime import datafiles, engine_bridge

    for module in (base, duckdb_engine, datafiles, engine_bridge):
        monkeypatch.setattr(module, "BATCH_ROWS", rows)


@pytest.fixture
def small_batches(monkeypatch):
    """Batches of 4 rows, so a few dozen rows make many."""
    batches_of(monkeypatch, 4)


def write_csv(path: Path, header: list[str], rows) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def split_csv(folder: Path, name: str, header: list[str], rows: list[tuple], parts: int) -> Path:
    folder.mkdir(exist_ok=True)
    for part in range(parts):
        write_csv(folder / f"{name}-{part}.csv", header, rows[part::parts])
    (folder / "_SUCCESS").write_text("")  # Spark's marker: not data
    return folder


def state(db) -> dict[str, list]:
    return {name: sorted(db.rows(name), key=repr) for name in ("Documents", "Tags",
                                                               "docsPerTag", "popularTagsStaging")}


def assert_answers_equal_the_oracle(db, tags: list[tuple]) -> None:
    """countTags (through its view) answers what the query's SQL answers on the data."""
    counts = Counter(tag for _, tag, _ in tags)
    for tag in sorted(counts) + ["absent"]:
        assert db.query("countTags", tag=tag).rows == ((counts[tag],),)
    assert db.check().consistent


@pytest.mark.parametrize("engine", ["duckdb", "store"])
def test_a_directory_a_glob_and_parquet_parts_load_every_row(engine, store_url, tmp_path,
                                                            small_batches):
    db = App(PLAN).deploy(store_url, engine=engine)
    docs = split_csv(tmp_path / "docs", "docs", ["docId", "timestamp", "text"], DOCS, 3)
    assert db.load("Documents", path=docs) == len(DOCS)
    split_csv(tmp_path / "tags", "tags", ["docId", "tag", "timestamp"], TAGS[:45], 2)
    assert db.load("Tags", path=tmp_path / "tags" / "tags-*.csv") == 45
    parts = tmp_path / "more"
    parts.mkdir()
    table = pa.table({"timestamp": [t for *_, t in TAGS[45:]], "docId": [d for d, *_ in TAGS[45:]],
                      "tag": [t for _, t, _ in TAGS[45:]]})
    pq.write_table(table.slice(0, 20), parts / "part-0.parquet")
    pq.write_table(table.slice(20), parts / "part-1.parquet")
    assert db.load("Tags", path=parts) == len(TAGS) - 45
    assert sorted(db.rows("Tags")) == sorted(TAGS)
    assert sorted(db.rows("Documents")) == sorted(DOCS)
    assert_answers_equal_the_oracle(db, TAGS)


def test_a_glob_matching_nothing_or_mixed_files_is_refused(tmp_path):
    db = App(PLAN).deploy()
    with pytest.raises(DataFileError, match=r"nope-\*\.csv: no file matches"):
        db.load("Documents", path=tmp_path / "nope-*.csv")
    write_csv(tmp_path / "a.csv", ["docId", "timestamp", "text"], DOCS[:1])
    pq.write_table(pa.table({"docId": [2]}), tmp_path / "b.parquet")
    with pytest.raises(DataFileError, match="both CSV and Parquet"):
        db.load("Documents", path=tmp_path)
    assert db.rows("Documents") == []


REFUSALS = {
    "key": ((1, "t1", 999), r"Tags already has a row with key|two rows with key"),
    "foreign key": ((77, "t0", 999), r"FOREIGN KEY \(docId\) REFERENCES Documents"),
    "cardinality": (None, r"CARDINALITY \(tag, 10\)"),
}


@pytest.mark.parametrize("engine", ["duckdb", "store"])
@pytest.mark.parametrize("broken", sorted(REFUSALS))
def test_a_refusal_in_the_last_batch_leaves_the_store_as_it_was(engine, broken, store_url,
                                                                tmp_path, small_batches):
    db = App(PLAN).deploy(store_url, engine=engine)
    db.load("Documents", DOCS)
    db.load("Tags", TAGS[:10])
    before = state(db)
    row, message = REFUSALS[broken]
    rows = TAGS[10:] + ([row] if row else [(30, f"x{k}", 1000 + k) for k in range(8)])
    path = write_csv(tmp_path / "tags.csv", ["docId", "tag", "timestamp"], rows)
    with pytest.raises(ConstraintError, match=message):
        db.load("Tags", path=path)
    assert state(db) == before
    with pytest.raises(ConstraintError, match=message):  # several tables at once, too
        db.load_many([("Documents", [(31, 1, "new")]), ("Tags", path)])
    assert state(db) == before


def test_a_bad_row_in_the_last_file_changes_nothing(store_url, tmp_path, small_batches):
    db = App(PLAN).deploy(store_url)
    folder = split_csv(tmp_path / "docs", "docs", ["docId", "timestamp", "text"], DOCS, 2)
    with open(folder / "docs-1.csv", "a") as handle:
        handle.write("abc,1,x\n")
    with pytest.raises(DataFileError, match=r"docs-1\.csv:17:1: Documents\.docId is BIGINT"):
        db.load("Documents", path=folder)
    assert db.rows("Documents") == []


def traced_peak(tmp_path: Path, documents: int) -> int:
    """The most Python memory loading the Tags of ``documents`` documents from a CSV file
    took (bytes), its views built (a staging view copying every row among them)."""
    db = App(PLAN).deploy(str(tmp_path / f"{documents}.db"), engine="duckdb")
    db.load("Documents", ((d, d, "") for d in range(documents)))
    path = write_csv(tmp_path / f"tags{documents}.csv", ["docId", "tag", "timestamp"],
                     ((d, f"tag{(d + k) % 50}", d * 4 + k) for d in range(documents)
                      for k in range(4)))
    db.engine()  # started before: its start-up is not the load's
    gc.collect()
    tracemalloc.start()
    try:
        assert db.load("Tags", path=path) == documents * 4
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        db.close()


def test_the_python_memory_of_a_load_follows_the_batch_not_the_file(tmp_path, monkeypatch):
    batches_of(monkeypatch, 200)
    traced_peak(tmp_path, 50)  # first uses (caches, statements) are no load's own
    small = traced_peak(tmp_path, 250)  # 1,000 rows: 5 batches
    large = traced_peak(tmp_path, 2500)  # 10,000 rows: 50 batches (ten times the file)
    # materializing the file (as before) made the peak grow tenfold with the rows
    assert large < 1.5 * small, (small, large)
