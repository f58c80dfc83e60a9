"""Bulk loads through Spark (local-cluster: executors in JVMs of their own) on a PostgreSQL
store: the files are read, checked and written by tasks in the executors, the views they
reach rebuilt there, with the same tables and views as a load on DuckDB and the answers of
the SQL oracle; a refused load names the table and constraint and leaves the store as it
was; a SUM leaving the 64-bit range is an error on Spark as on DuckDB."""
from __future__ import annotations

import csv
import os
import random
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import piql
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.views import ViewKind
from piql.runtime.errors import ConstraintError, PiqlError
from piql.runtime.spark_jobs import STAGE_PREFIX, SparkJobs
from tests.engines.test_engines import paper_rows, temporal_app
from tests.runtime.test_load_files import MULTILINE, MULTILINE_ROWS
from tests.runtime.test_spark_jobs import maintained
from tests.runtime.workload import oracle

DIRTY = RUNTIME_TABLES[1]  # the epochs marked for refresh
COLUMNS = {"Documents": ("docId", "timestamp", "text"), "Tags": ("docId", "tag", "timestamp")}


def parquet_dir(folder: Path, table: str, rows: list[tuple]) -> Path:
    """``rows`` as a directory of two Parquet part files (as Spark writes them)."""
    folder.mkdir(parents=True)
    names = COLUMNS[table]
    half = len(rows) // 2
    for part, chunk in enumerate((rows[:half], rows[half:])):
        pq.write_table(pa.table({n: [r[i] for r in chunk] for i, n in enumerate(names)}),
                       folder / f"part-{part}.parquet")
    return folder


def csv_file(path: Path, table: str, rows: list[tuple]) -> Path:
    with open(path, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(COLUMNS[table])
        writer.writerows(rows)
    return path


def state(db) -> dict[str, Counter]:
    """Every base table's and maintained view's rows, the epochs marked and the staging
    tables left (PostgreSQL's tables, SQLite's files beside the store)."""
    found = {t: Counter(db.rows(t)) for t in COLUMNS}
    found.update(maintained(db))
    found["epochs"] = Counter(db.store.sql(f'SELECT "view", "epoch" FROM "{DIRTY}"'))
    if db.store.dialect == "sqlite":
        found["stages"] = Counter(p.name for p in Path(db.store.path).parent.glob(
            f"*{STAGE_PREFIX}*"))
    else:
        found["stages"] = Counter(name for (name,) in db.store.sql(
            "SELECT table_name FROM information_schema.tables") if name.startswith(STAGE_PREFIX))
    return found


@pytest.fixture
def paper(tmp_path):
    return temporal_app(tmp_path)


def test_a_load_in_the_executors_equals_duckdb_and_the_oracle(
        spark_cluster, postgres_stores, paper, tmp_path):
    data = paper_rows(random.Random(7), docs=80)
    documents = csv_file(tmp_path / "documents.csv", "Documents", data["Documents"])
    tags = parquet_dir(tmp_path / "tags", "Tags", data["Tags"])
    loaded = {}
    for engine in ("duckdb", "spark"):
        url = postgres_stores()
        with paper.deploy(url, engine=engine, spark_master=spark_cluster, partitions=4) as db:
            assert db.load("Documents", path=documents) == len(data["Documents"])
            assert db.load("Tags", path=tags) == len(data["Tags"])
            loaded[engine] = state(db)
            if engine == "spark":
                # rows read, checked and written by tasks in the executors' Python
                jobs = db.spark_jobs()
                assert jobs.last_writes and all(t.pid != os.getpid() for t in jobs.last_writes)
                for query in db.plan.queries:
                    if query.physical is None or query.query.block.params or any(
                            v.kind == ViewKind.PERIODIC for v in query.view_defs):
                        continue
                    assert Counter(db.query(query.name).rows) == \
                        Counter(oracle(db, query, {})), query.name
                assert Counter(db.query("countTags", tag="a").rows) == \
                    Counter(oracle(db, db.query_plan("countTags"), {"tag": "a"}))
                assert db.check().consistent
    assert loaded["spark"] == loaded["duckdb"]
    assert loaded["spark"]["Tags"] == Counter(data["Tags"])
    assert sum(loaded["spark"]["docsPerTag"].values()) > 0


@pytest.mark.slow
def test_a_refused_load_names_the_constraint_and_changes_nothing(
        spark_cluster, postgres_stores, paper, tmp_path):
    data = paper_rows(random.Random(8), docs=30)
    url = postgres_stores()
    with paper.deploy(url, engine="spark", spark_master=spark_cluster, partitions=4) as db:
        db.load("Documents", path=parquet_dir(tmp_path / "docs", "Documents", data["Documents"]))
        db.load("Tags", path=parquet_dir(tmp_path / "tags", "Tags", data["Tags"][:40]))
        before = state(db)
        doc = data["Documents"][0][0]
        cases = {
            # two rows with one key in the file
            "twice": ("Tags", data["Tags"][40:] + [data["Tags"][40]],
                      r"the data for Tags has two rows with key \(docId=.*, tag="),
            # a key the table holds already
            "clash": ("Tags", data["Tags"][39:],
                      r"Tags already has a row with key \(docId="),
            # a document that does not exist
            "orphan": ("Tags", data["Tags"][40:] + [(10**6, "z", 1)],
                       r"the data for Tags breaks FOREIGN KEY \(docId\) REFERENCES Documents: "
                       r"no Documents row with docId=1000000"),
            # eleven tags of one document: CARDINALITY (tag, 10) per docId
            "cardinality": ("Tags", data["Tags"][40:] + [(doc, f"t{i}", 1) for i in range(11)],
                            r"loading Tags breaks .*CARDINALITY.*\(docId=.*\) would have \d+ "
                            r"tag values \(limit 10\)"),
        }
        for name, (table, rows, message) in cases.items():
            with pytest.raises(ConstraintError, match=message):
                db.load(table, path=parquet_dir(tmp_path / name, table, rows))
            assert state(db) == before, name
        # loads of several tables are all or nothing too: the Documents loaded first are
        # rolled back with the refused Tags
        more = [(10**6 + i, 5, "new") for i in range(3)]
        with pytest.raises(ConstraintError, match="FOREIGN KEY"):
            db.load_many([("Documents", csv_file(tmp_path / "more.csv", "Documents", more)),
                          ("Tags", parquet_dir(tmp_path / "late", "Tags",
                                                [(7 * 10**6, "q", 1), (7 * 10**6, "r", 2)]))])
        assert state(db) == before
        # a file that is not of the table's shape: a clear error before anything is written
        bad = tmp_path / "bad.csv"
        bad.write_text("docId,timestamp,text\n1,soon,x\n")
        with pytest.raises(PiqlError, match=r"Documents.timestamp is BIGINT; got 'soon'"):
            db.load("Documents", path=bad)
        assert state(db) == before


def test_a_multiline_csv_loads_in_spark_and_a_bad_value_names_its_line(
        postgres_stores, paper, tmp_path):
    """Quoted fields holding newlines and doubled quotes load through Spark's tasks as on
    DuckDB; a value a task refuses is named by file, line and field (found again on the
    driver, as the one-machine reader names it), and nothing changes."""
    good = tmp_path / "good.csv"
    good.write_bytes(MULTILINE)
    with paper.deploy(postgres_stores(), engine="spark", partitions=2) as db:
        assert db.load("Documents", path=good) == 3
        assert sorted(db.rows("Documents")) == MULTILINE_ROWS
        before = state(db)
        for bad, message in [
                (b'4,x,d\n', r"bad\.csv:8:2: Documents\.timestamp is BIGINT; got 'x'"),
                (b'"7\n",late,g\n', r"bad\.csv:9:2: Documents\.timestamp is BIGINT; got 'late'"),
                (b'8,9,h,i\n', r"bad\.csv:8:1: row has 4 fields, the header has 3")]:
            path = tmp_path / "bad.csv"
            path.write_bytes(MULTILINE.replace(b"\n1,", b"\n11,").replace(b"\n2,", b"\n12,")
                             .replace(b"\n3,", b"\n13,") + bad)
            with pytest.raises(PiqlError, match=message):
                db.load("Documents", path=path)
            assert state(db) == before


def test_a_sqlite_store_loads_in_local_executors_and_a_remote_master_is_refused(
        tmp_path, paper, monkeypatch):
    with paper.deploy(tmp_path / "app.db", engine="spark", spark_master="spark://head:7077") as db:
        docs = csv_file(tmp_path / "d.csv", "Documents", [(1, 2, "x")])
        with pytest.raises(PiqlError, match="SQLite file, which only a local Spark master"):
            db.load("Documents", path=docs)
        assert db._engine is None and db.rows("Documents") == []
    # a local master: the files are read, checked and written by the executors' Python,
    # beside the SQLite file, with the tables and views a load on DuckDB gives
    data = paper_rows(random.Random(9), docs=30)
    documents = csv_file(tmp_path / "documents.csv", "Documents", data["Documents"])
    tags = parquet_dir(tmp_path / "tags", "Tags", data["Tags"])
    staged = []  # the tables whose rows Spark's tasks staged (a spy: the real call runs)
    stage = SparkJobs.stage
    monkeypatch.setattr(SparkJobs, "stage", lambda self, like, *rest: (
        staged.append(like), stage(self, like, *rest))[1])
    loaded = {}
    for engine in ("duckdb", "spark"):
        with paper.deploy(tmp_path / f"{engine}.db", engine=engine, partitions=2) as db:
            assert db.load_many([("Documents", documents), ("Tags", tags)]) == \
                [len(data["Documents"]), len(data["Tags"])]
            loaded[engine] = state(db)
            if engine == "spark":
                assert staged[:2] == ["Documents", "Tags"]  # the files, by the tasks
                jobs = db.spark_jobs()
                assert jobs.last_writes and all(t.pid != os.getpid() for t in jobs.last_writes)
                with pytest.raises(ConstraintError, match=r"breaks FOREIGN KEY \(docId\)"):
                    db.load("Tags", path=parquet_dir(tmp_path / "orphan", "Tags",
                                                     [(10**6, "z", 1), (10**6, "y", 2)]))
                assert state(db) == loaded[engine]
                assert db.check().consistent
    assert loaded["spark"] == loaded["duckdb"]
    assert loaded["spark"]["Tags"] == Counter(data["Tags"])


SUMS_SCHEMA = """
CREATE TABLE Sales (id BIGINT, shop VARCHAR, amount BIGINT, PRIMARY KEY (id));
"""
SUMS_QUERIES = """
-- name: revenue
-- view: revenueByShop
SELECT SUM(amount) FROM Sales WHERE shop = <shop>
"""


@pytest.mark.slow
def test_an_overflowing_sum_is_an_error_on_spark_as_on_duckdb(
        spark_cluster, postgres_stores, tmp_path):
    (tmp_path / "schema.sql").write_text(SUMS_SCHEMA)
    (tmp_path / "queries.sql").write_text(SUMS_QUERIES)
    app = piql.load(tmp_path / "schema.sql", tmp_path / "queries.sql")
    big = 2 ** 62
    # shop a: 2**63-1, the largest total the store holds; shop b: 2**62, though a running
    # total in the file's order passes 2**63 (SQL's SUM is exact: only the total counts)
    fits = [(1, "a", big), (2, "a", big - 1), (3, "b", big), (4, "b", big), (5, "b", -big),
            (6, "d", -big), (7, "d", -big)]
    over = [(8, "c", big), (9, "c", big)]  # 2**63: one more than the store holds
    sales = tmp_path / "sales.parquet"
    results = {}
    for engine in ("duckdb", "spark"):
        url = postgres_stores()
        with app.deploy(url, engine=engine, spark_master=spark_cluster) as db:
            pq.write_table(pa.table({"id": [r[0] for r in fits], "shop": [r[1] for r in fits],
                                     "amount": [r[2] for r in fits]}), sales)
            db.load("Sales", path=sales)
            # SQL's exact sums, where they fit: the oracle's answers
            for shop in ("a", "b", "d"):
                got = list(db.query("revenue", shop=shop).rows)
                assert got == oracle(db, db.query_plan("revenue"), {"shop": shop}), engine
            results[engine] = Counter(db.rows("revenueByShop"))
            pq.write_table(pa.table({"id": [r[0] for r in over], "shop": [r[1] for r in over],
                                     "amount": [r[2] for r in over]}), sales)
            with pytest.raises(ConstraintError, match="leaves the store's integer range"):
                db.load("Sales", path=sales)
            assert Counter(db.rows("revenueByShop")) == results[engine]
            assert len(db.rows("Sales")) == len(fits)
    assert results["spark"] == results["duckdb"]
