"""``piql bench migrate``: adding one view to a loaded store, by ``piql migrate`` against
rebuilding the store from scratch (a new store deployed with the new plan, every row
loaded again: what a release adding a view needed before migrations).

The store holds ``rows`` bookmarks (SQLite; the tutorial's ``bookmarks`` table, with the
``saveCount`` view); the new plan adds ``titleCount``, a COUNT per title, whose view is
built from the rows there. Both ways build views on the same engine; both end with the
new plan in a store holding every row. The rows are written to a CSV file first
(not timed); each way is timed once, wall clock.

While the migration runs, a writer (a deployment of the old plan inserting bookmarks, which
goes on with the new plan once the store moved to it) and a reader (the unchanged ``mine``
query, every millisecond) run in threads of their own: the benchmark reports the longest
write and the longest read, against the migration's time (writes wait for the migration's
transaction; reads do not).
"""
from __future__ import annotations

import csv
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import piql
from piql.bench.common import machine, write_json
from piql.runtime.errors import DeploymentError

SCHEMA = """
CREATE TABLE bookmarks (userId BIGINT, url VARCHAR, title VARCHAR, savedAt BIGINT TEMPORAL,
    PRIMARY KEY (userId, url)) WITH CARDINALITY (url, 1000);
"""
BEFORE = ("-- name: mine\nSELECT url, title FROM bookmarks WHERE userId = <userId>;\n"
          "-- name: saveCount\nSELECT COUNT(*) AS saves FROM bookmarks WHERE url = <url>;\n")
ADDED = "-- name: titleCount\nSELECT COUNT(*) AS n FROM bookmarks WHERE title = <title>;\n"


@dataclass(frozen=True)
class Settings:
    """What one run measures."""

    rows: int = 1_000_000
    engine: str = "duckdb"


def run(settings: Settings, out: Path) -> dict[str, Any]:
    """Time both ways; write ``migrate.json`` under ``out``."""
    with tempfile.TemporaryDirectory(prefix="piql-bench-migrate-") as folder:
        work = Path(folder)
        data = _write_rows(work / "bookmarks.csv", settings.rows)
        old = str(work / "old.db")
        with piql.loads(SCHEMA, BEFORE).deploy(old, engine=settings.engine, quiet=True) as db:
            db.load("bookmarks", path=data)
        new = piql.loads(SCHEMA, BEFORE + ADDED)
        with Traffic(old) as traffic:
            start = time.perf_counter()
            migration = new.migrate(old, engine=settings.engine)
            migrated = time.perf_counter() - start
        start = time.perf_counter()
        with new.deploy(str(work / "new.db"), engine=settings.engine, quiet=True) as db:
            db.load("bookmarks", path=data)
        rebuilt = time.perf_counter() - start
    document = {
        "benchmark": "migrate", "machine": machine(), "rows": settings.rows,
        "engine": settings.engine, "steps": [s.describe() for s in migration.diff.steps],
        "migrate_seconds": migrated, "rebuild_seconds": rebuilt,
        "speedup": rebuilt / migrated if migrated else None,
        "longest_write_seconds": max(traffic.writes, default=0.0),
        "longest_read_seconds": max(traffic.reads, default=0.0),
        "writes": len(traffic.writes), "reads": len(traffic.reads),
    }
    write_json(out / "migrate.json", document)
    return document


class Traffic:
    """A writer and a reader running while the migration does (see the module docstring):
    the seconds each write and each read took."""

    def __init__(self, location: str) -> None:
        self.location, self.stop = location, threading.Event()
        self.writes: list[float] = []
        self.reads: list[float] = []
        self.threads = [threading.Thread(target=self._write), threading.Thread(target=self._read)]

    def __enter__(self) -> "Traffic":
        for thread in self.threads:
            thread.start()
        time.sleep(0.2)
        return self

    def __exit__(self, *exc_info: object) -> None:
        time.sleep(0.2)
        self.stop.set()
        for thread in self.threads:
            thread.join()

    def _write(self) -> None:
        db = piql.loads(SCHEMA, BEFORE).deploy(self.location, engine="store", quiet=True)
        try:
            n = 0
            while not self.stop.is_set():
                start = time.perf_counter()
                try:  # users of their own, 900 urls each (the CARDINALITY is 1000)
                    db.insert("bookmarks", userId=10_000_000 + n // 900, url=f"w{n}",
                              title="title 0", savedAt=n)
                except DeploymentError:  # the store moved to the new plan: go on with it
                    self.writes.append(time.perf_counter() - start)  # it waited, then this
                    db.close()
                    db = piql.loads(SCHEMA, BEFORE + ADDED).deploy(self.location,
                                                                   engine="store", quiet=True)
                    continue
                self.writes.append(time.perf_counter() - start)
                n += 1
        finally:
            db.close()

    def _read(self) -> None:
        with piql.loads(SCHEMA, BEFORE).deploy(self.location, engine="store", quiet=True) as db:
            while not self.stop.is_set():
                start = time.perf_counter()
                db.query("mine", userId=1)
                self.reads.append(time.perf_counter() - start)
                time.sleep(0.001)


def _write_rows(path: Path, rows: int) -> Path:
    """``rows`` bookmarks: 1000 users, 50 000 urls, 100 titles."""
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["userId", "url", "title", "savedAt"])
        for n in range(rows):
            writer.writerow([n % 1000, f"https://site{n // 1000 % 50_000}.org/{n // 1000}",
                             f"title {n % 100}", 1_700_000_000_000 + n])
    return path


def summary(document: dict[str, Any]) -> str:
    return (f"{document['rows']} rows, engine {document['engine']}: "
            f"{'; '.join(document['steps'])}\n"
            f"piql migrate: {document['migrate_seconds']:.2f} s; rebuilding the store from "
            f"scratch (deploy + load): {document['rebuild_seconds']:.2f} s "
            f"({document['speedup']:.1f}x)\n"
            f"during the migration: longest write {document['longest_write_seconds']:.2f} s "
            f"({document['writes']} writes), longest read of an unchanged query "
            f"{document['longest_read_seconds'] * 1000:.1f} ms ({document['reads']} reads)")
