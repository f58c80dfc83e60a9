"""Migrations while other processes use the store: writers and readers running during the
migration (threads with deployments of their own, and on PostgreSQL a plain psycopg
connection), and deployments still serving the old plan (``runtime.sessions``)."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import pytest

import piql
from piql.runtime.errors import DeploymentError
from piql.runtime.store import open_store
from tests.runtime.test_migrate import (
    MINE, SAVES, SCHEMA, TAGGED, TAGS, URLS, WHO, deployed, reopened,
)

BEFORE, AFTER = MINE + SAVES, MINE + SAVES + TAGGED + WHO
SERVE = """
import sys, time, piql
db = piql.loads(sys.argv[1], sys.argv[2]).deploy(sys.argv[3], engine="store")
print("ready", flush=True)
time.sleep(600)
"""


def test_dropping_a_view_another_deployment_serves_is_refused_unless_forced(new_store):
    location = deployed(new_store(), MINE + SAVES + TAGGED)
    other = piql.loads(SCHEMA, MINE + SAVES + TAGGED).deploy(location, engine="store")
    app = piql.loads(SCHEMA, MINE + SAVES)
    with pytest.raises(DeploymentError, match=rf"drop tagCount_view, which 1 process serving "
                                              rf"its plan still uses \(pid {os.getpid()} on"):
        app.migrate(location, engine="store")
    assert list(other.query("tagCount", tag="db").rows) == [(9,)]  # untouched
    assert "which 1 process serving its plan still uses" in app.migrate(
        location, dry_run=True).dry_run()
    other.close()
    assert [s.name for s in app.migrate(location, engine="store").diff.steps][0] == "tagCount_view"
    reopened(location, MINE + SAVES).close()


def test_a_process_serving_the_old_plan_is_seen_until_it_dies(tmp_path):
    location = deployed(str(tmp_path / "app.db"), MINE + SAVES + TAGGED)
    server = subprocess.Popen([sys.executable, "-c", SERVE, SCHEMA, MINE + SAVES + TAGGED,
                               location], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None and server.stdout.readline() == "ready\n"
        app = piql.loads(SCHEMA, MINE + SAVES)
        with pytest.raises(DeploymentError, match=rf"pid {server.pid} on"):
            app.migrate(location, engine="store")
    finally:
        server.kill()
        server.wait()
    app.migrate(location, engine="store")  # a dead process's registration is removed
    reopened(location, MINE + SAVES).close()


def test_forcing_drops_the_view_and_the_old_deployment_cannot_write_with_its_plan(tmp_path):
    location = deployed(str(tmp_path / "app.db"), MINE + SAVES + TAGGED)
    other = piql.loads(SCHEMA, MINE + SAVES + TAGGED).deploy(location, engine="store")
    piql.loads(SCHEMA, MINE + SAVES).migrate(location, engine="store", force=True)
    assert list(other.query("mine", userId=1).rows)  # reads of unchanged views go on
    with pytest.raises(DeploymentError, match="was migrated to another plan"):
        other.insert("bookmarks", userId=9, url="a.org", title="t", savedAt=1)
    # deletes and updates are one statement too: their triggers refuse them on SQLite
    tags = other.plan.catalog.table("tags")
    assert other.maintainer.at_once(tags, "delete") and other.maintainer.update_at_once(tags)
    with pytest.raises(DeploymentError, match="was migrated to another plan"):
        other.update("tags", userId=0, url=URLS[0], tag=TAGS[0])
    with pytest.raises(DeploymentError, match="was migrated to another plan"):
        other.delete("tags", userId=0, url=URLS[0], tag=TAGS[0])
    other.close()
    db = reopened(location, MINE + SAVES)
    assert db.rows("bookmarks") and not [r for r in db.rows("bookmarks") if r[0] == 9]
    db.close()


class Writers:
    """Threads inserting bookmarks of their own users, each with its own deployment of the
    old plan; a write refused because the store moved to the new plan is retried with a
    deployment of the new one. ``reads`` times the reads of an unchanged query."""

    def __init__(self, location: str, threads: int = 2) -> None:
        self.location, self.stop = location, threading.Event()
        self.written: list[list[tuple]] = [[] for _ in range(threads)]
        self.reads: list[tuple[float, float]] = []
        self.errors: list[BaseException] = []
        self.threads = [threading.Thread(target=self._write, args=(n,)) for n in range(threads)]
        self.threads.append(threading.Thread(target=self._read))

    def __enter__(self) -> "Writers":
        for thread in self.threads:
            thread.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc_info) -> None:
        time.sleep(0.2)
        self.stop.set()
        for thread in self.threads:
            thread.join()
        assert not self.errors, self.errors

    def _write(self, number: int) -> None:
        queries = BEFORE
        db = piql.loads(SCHEMA, queries).deploy(self.location, engine="store")
        try:
            row = 0
            while not self.stop.is_set():
                values = dict(userId=1000 * (number + 1) + row // 900, url=f"w{row}.org", title=f"t{row % 3}",
                              savedAt=row)
                try:
                    db.insert("bookmarks", **values)
                except DeploymentError as err:
                    assert "migrated to another plan" in str(err) and queries == BEFORE
                    db.close()
                    queries = AFTER
                    db = piql.loads(SCHEMA, queries).deploy(self.location, engine="store")
                    continue
                self.written[number].append((values["userId"], values["url"]))
                row += 1
        except BaseException as err:  # noqa: BLE001 - reported by __exit__
            self.errors.append(err)
        finally:
            db.close()

    def _read(self) -> None:
        db = piql.loads(SCHEMA, BEFORE).deploy(self.location, engine="store")
        try:
            while not self.stop.is_set():
                started = time.monotonic()
                db.query("mine", userId=1)
                self.reads.append((started, time.monotonic()))
        except BaseException as err:  # noqa: BLE001
            self.errors.append(err)
        finally:
            db.close()


def loaded(location: str, rows: int = 20_000) -> None:
    with piql.loads(SCHEMA, BEFORE).deploy(location, engine="store") as db:
        db.load("bookmarks", [(n % 500, f"u{n // 500}.org", f"t{n % 50}", n) for n in range(rows)])
        db.load("tags", [(n % 500, f"u{n // 500}.org", f"g{n % 5}") for n in range(rows)])


def test_writes_and_reads_during_a_migration_lose_nothing(new_store):
    import duckdb

    duckdb.connect().close()  # loading DuckDB's library holds the GIL: not during the test
    location = new_store()
    loaded(location)
    with Writers(location) as writers:
        started = time.monotonic()
        piql.loads(SCHEMA, AFTER).migrate(location, engine="duckdb")
        finished = time.monotonic()
    db = reopened(location, AFTER)  # every view equals its recomputation
    kept = {(r[0], r[1]) for r in db.rows("bookmarks")}
    for rows in writers.written:
        assert rows and set(rows) <= kept  # no write lost
    assert len(kept) == 20_000 + sum(len(rows) for rows in writers.written)
    during = [r for r in writers.reads if started <= r[0] and r[1] <= finished]
    if db.store.dialect == "sqlite":  # WAL: reads never wait for the migration's writes
        spans = [r for r in writers.reads if r[1] >= started - 0.05 and r[0] <= finished + 0.05]
        assert during, (started, finished, spans[:5], len(writers.reads))
    saves = sum(1 for r in db.rows("bookmarks") if r[1] == "w0.org")
    assert list(db.query("saveCount", url="w0.org").rows) == [(saves,)]
    db.close()


def test_plain_sql_writers_on_postgres_during_a_migration(postgres_stores):
    import psycopg

    location = postgres_stores()
    loaded(location, 5_000)
    stop, written, errors = threading.Event(), [], []

    def write() -> None:
        try:
            with psycopg.connect(location, autocommit=True) as connection:
                while not stop.is_set():
                    row = len(written)
                    connection.execute("INSERT INTO bookmarks (\"userId\", url, title, \"savedAt\") "
                                       "VALUES (%s, %s, %s, %s)", (2000 + row // 900, f"p{row}.org", "t", row))
                    connection.execute("INSERT INTO tags (\"userId\", url, tag) VALUES (%s, %s, %s)",
                                       (2000 + row // 900, f"p{row}.org", "db"))
                    written.append(row)
        except BaseException as err:  # noqa: BLE001
            errors.append(err)

    thread = threading.Thread(target=write)
    thread.start()
    time.sleep(0.2)
    piql.loads(SCHEMA, AFTER).migrate(location, engine="duckdb")
    time.sleep(0.2)
    stop.set()
    thread.join()
    assert not errors and written
    db = reopened(location, AFTER)  # the triggers kept every view, old and new
    assert len(db.rows("bookmarks")) == 5_000 + len(written)
    assert list(db.query("tagCount", tag="db").rows) == [(len(written),)]
    db.close()


def test_changing_how_a_view_is_maintained_under_a_process_of_the_old_plan_needs_force(new_store):
    from tests.runtime.test_migrate import ASYNC_SAVES
    location = deployed(new_store(), MINE + SAVES)
    other = piql.loads(SCHEMA, MINE + SAVES).deploy(location, engine="store")
    app = piql.loads(SCHEMA, MINE + ASYNC_SAVES)
    with pytest.raises(DeploymentError, match="change how saveCount_view is maintained"):
        app.migrate(location, engine="store")
    other.close()
    app.migrate(location, engine="store")
    reopened(location, MINE + ASYNC_SAVES).close()


def test_a_deployment_opened_while_the_store_is_busy_registers_with_its_first_write(tmp_path):
    import sqlite3

    from piql.runtime import sessions
    location = deployed(str(tmp_path / "app.db"), MINE + SAVES + TAGGED)
    holder = sqlite3.connect(location, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # as a long load holds the write lock
    started = time.monotonic()
    db = piql.loads(SCHEMA, MINE + SAVES + TAGGED).deploy(location, engine="store",
                                                          busy_timeout=30)
    assert time.monotonic() - started < 5  # opening did not wait for the lock
    assert db.session is not None and not db.session.recorded
    holder.execute("COMMIT")
    holder.close()
    assert sessions.sessions(db.store) == []
    db.insert("bookmarks", userId=9, url="a.org", title="t", savedAt=1)
    [found] = sessions.sessions(db.store)
    assert (found.pid, found.live) == (os.getpid(), True)
    with pytest.raises(DeploymentError, match=rf"pid {os.getpid()}"):
        piql.loads(SCHEMA, MINE + SAVES).migrate(location, engine="store")
    db.close()
    store = open_store(location)
    assert sessions.sessions(store) == []  # removed on close
    store.close()
