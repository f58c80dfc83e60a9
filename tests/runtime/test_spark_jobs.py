"""Spark at cluster scale (local-cluster: executors in JVMs of their own) on a PostgreSQL
store: view builds, checks, repairs and refreshes give the views incremental maintenance
and DuckDB give, and the query answers the SQL oracle gives; the store's rows move
between the store and the executors, never through the driver."""
from __future__ import annotations

import os
import random
from dataclasses import replace
from collections import Counter

import pytest

import piql
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.views import ViewKind
from piql.runtime.errors import BoundExceeded
from piql.runtime.refresh import refresh_view
from piql.runtime.spark_jobs import require_reachable
from piql.runtime.errors import PiqlError
from tests.conftest import EXAMPLES
from tests.engines.test_engines import paper_rows, social_rows, temporal_app
from tests.runtime.workload import oracle

DIRTY = RUNTIME_TABLES[1]  # the epochs marked for refresh



def maintained(db) -> dict[str, Counter]:
    return {v.name: Counter(db.rows(v.name)) for v in db.views
            if v.kind in (ViewKind.IMV, ViewKind.STAGING)}


def inserted(app, url: str, data: dict) -> None:
    """``data`` written row by row: the views kept by incremental maintenance."""
    with app.deploy(url, engine="store", partitions=4) as db:
        for table, rows in data.items():
            columns = app.plan.catalog.table(table).column_names
            for row in rows:
                db.insert(table, **dict(zip(columns, row)))


def emptied(db) -> None:
    """Every maintained view's rows deleted behind piql's back."""
    for view in db.views:
        if view.kind in (ViewKind.IMV, ViewKind.STAGING):
            db.store.sql(f'DELETE FROM "{view.name}"')


def test_views_built_in_the_executors_equal_maintenance_duckdb_and_the_oracle(
        spark_cluster, postgres_stores):
    app = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
    url = postgres_stores()
    inserted(app, url, social_rows(random.Random(1)))
    with app.deploy(url, engine="store", partitions=4) as db:
        expected = maintained(db)
    assert sum(len(rows) for rows in expected.values()) > 100
    for engine in ("duckdb", "spark"):
        with app.deploy(url, engine=engine, spark_master=spark_cluster, partitions=4) as db:
            emptied(db)
            db.store.sql(f'DELETE FROM "{DIRTY}"')
            built = db.build_views()
            assert maintained(db) == expected, engine
            # the time windows fed by a rebuilt staging view catch up on all its epochs
            marks = {(w.view, e) for staging, windows in db.epoch_windows.items()
                     for row in db.rows(staging) for w in windows
                     if (e := w.epoch(dict(zip(db.store.shapes[staging].columns, row))))
                     is not None}
            assert marks and {(v, e) for v, e in db.store.sql(
                f'SELECT "view", "epoch" FROM "{DIRTY}"')} == marks, engine
    with app.deploy(url, engine="spark", spark_master=spark_cluster, partitions=4) as db:
        jobs = db.spark_jobs()
        jobs.rebuild(next(v for v in db.views if v.name == built[-1]))
        # the last view's rows were written by tasks in the executors' Python, none by the
        # driver, and all of them reached the store
        assert jobs.last_writes and all(t.pid != os.getpid() for t in jobs.last_writes)
        assert sum(t.rows for t in jobs.last_writes) == sum(expected[built[-1]].values())
        for query in db.plan.queries:
            if query.physical is None or query.query.block.params or any(
                    v.kind == ViewKind.PERIODIC for v in query.view_defs):
                continue  # answered from its views alone (a periodic one waits for a refresh)
            assert Counter(db.query(query.name).rows) == Counter(oracle(db, query, {}))


def test_tables_are_read_by_tasks_in_the_executors(spark_cluster, postgres_stores):
    app = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
    url = postgres_stores()
    data = social_rows(random.Random(2))
    inserted(app, url, data)
    with app.deploy(url, engine="spark", spark_master=spark_cluster, partitions=4) as db:
        jobs = db.spark_jobs()
        frame = jobs.read("posts", None)
        assert frame.rdd.getNumPartitions() == jobs.partitions
        assert Counter(tuple(r) for r in frame.collect()) == Counter(data["posts"])
        pids = set(frame.rdd.mapPartitions(lambda rows: [os.getpid()]).collect())
        assert os.getpid() not in pids and len(pids) >= 2  # two executors, each its worker
        # the natural way in, for any Spark program: spark.read.format("piql")
        shape = db.store.shapes["posts"]
        plain = jobs.session.read.format("piql").option("store", url).option("table", "posts") \
            .option("partitions", 3).load()
        assert plain.columns == list(shape.columns)
        assert plain.count() == len(data["posts"])


def test_check_and_repair_in_spark_find_what_duckdb_finds(spark_cluster, postgres_stores):
    app = temporal_app_for_check()
    url = postgres_stores()
    inserted(app, url, paper_rows(random.Random(5)))
    with app.deploy(url, engine="store", partitions=4) as db:
        expected = maintained(db)
        db.store.sql('DELETE FROM "twoTags_view" WHERE "docId" = 1')
        db.store.sql('UPDATE "docsPerTag" SET "cnt" = "cnt" + 5')
    reports = {}
    for engine in ("duckdb", "spark"):
        with app.deploy(url, engine=engine, spark_master=spark_cluster, partitions=4) as db:
            report = db.check()
            reports[engine] = {c.view: (Counter(c.missing), Counter(c.extra))
                               for c in report.views if not c.consistent}
    assert set(reports["spark"]) == {"twoTags_view", "docsPerTag"}
    assert reports["spark"] == reports["duckdb"]
    with app.deploy(url, engine="spark", spark_master=spark_cluster, partitions=4) as db:
        repaired = db.check(repair=True)
        assert {c.view for c in repaired.views if c.repaired} == {"twoTags_view", "docsPerTag"}
        assert maintained(db) == expected


def temporal_app_for_check():
    from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA

    return piql.load(PAPER_SCHEMA, PAPER_QUERIES)


def test_periodic_refresh_on_the_cluster_equals_the_store_and_bounds_hold(
        spark_cluster, postgres_stores, tmp_path):
    app = temporal_app(tmp_path)
    data = paper_rows(random.Random(3), docs=60)
    now = 3_600_000 * 6 + 10
    answers = {}
    for engine in ("store", "spark"):
        url = postgres_stores()
        inserted(app, url, data)
        with app.deploy(url, engine=engine, spark_master=spark_cluster, partitions=4) as db:
            reports = db.refresh(now_ms=now)
            assert all(0 < r.max_partition_reads <= r.per_partition_bound for r in reports)
            # ties in COUNT may rank either tag first: compare the rows without the tag
            answers[engine] = {view.name: Counter(
                tuple(v for c, v in zip(db.store.shapes[view.name].columns, row) if c != "tag")
                for row in db.rows(view.name)) for view in db.views
                if view.kind == ViewKind.PERIODIC}
            got = db.query("popularTags")
            assert Counter(got.rows) == Counter(oracle(db, db.query_plan("popularTags"), {}))
            if engine == "spark":
                # the periodic views' rows were ranked and written by tasks in the
                # executors, none by the driver
                jobs = db.spark_jobs()
                assert jobs.last_writes and all(t.pid != os.getpid() for t in jobs.last_writes)
                # the tuples the busiest task read, measured in the executors, against the
                # bound: a bound one less than what was read fails the refresh (strict),
                # before anything is written
                busiest = max(reports, key=lambda r: r.max_partition_reads)
                view = next(v for v in db.views if v.name == busiest.view)
                tighter = replace(view.refresh, per_partition_bound=busiest.max_partition_reads - 1)
                before = Counter(db.rows(view.name))
                for tasks in (None, jobs):  # Spark's rows collected, or ranked in Spark
                    with pytest.raises(BoundExceeded, match=f"read {busiest.max_partition_reads} "
                                                            "tuples from one partition"):
                        refresh_view(db.store, tighter, now, True, db.engine(), tasks)
                assert Counter(db.rows(view.name)) == before
    assert answers["spark"] == answers["store"]


def test_a_sqlite_store_on_a_remote_master_is_one_clear_error_before_spark_starts(tmp_path):
    from tests.conftest import PAPER_QUERIES, PAPER_SCHEMA

    app = piql.load(PAPER_SCHEMA, PAPER_QUERIES)
    with app.deploy(tmp_path / "app.db", engine="spark", spark_master="spark://head:7077") as db:
        with pytest.raises(PiqlError, match="SQLite file, which only a local Spark master"):
            db.build_views()
        assert db._engine is None  # no session was started for nothing
    require_reachable(db.store, "local-cluster[2,1,1024]")  # a local master may
