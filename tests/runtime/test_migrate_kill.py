"""A migration killed at a random point leaves the store on the old plan or on the new
one, never between: it is one transaction (SQLite's journal undoes an unfinished one)."""
from __future__ import annotations

import random
import subprocess
import sys
import time

import piql
from piql.runtime import install
from piql.runtime.store import open_store
from tests.runtime.test_migrate import MINE, SAVES, SCHEMA, TAGGED, WHO

BEFORE, AFTER = MINE + SAVES, MINE + TAGGED + WHO
MIGRATE = """
import sys, piql
app = piql.loads(sys.argv[1], sys.argv[2])
print("ready", flush=True)
app.migrate(sys.argv[3], engine="store")
"""


def loaded(location: str, rows: int) -> int:
    with piql.loads(SCHEMA, BEFORE).deploy(location, engine="store") as db:
        db.load("bookmarks", [(n % 500, f"u{n // 500}.org", f"t{n % 50}", n) for n in range(rows)])
        db.load("tags", [(n % 500, f"u{n // 500}.org", f"g{n % 7}") for n in range(rows)])
    return rows


def test_a_killed_migration_leaves_the_store_on_one_plan(tmp_path):
    chance = random.Random(18)
    outcomes = set()
    for attempt in range(5):
        location = str(tmp_path / f"app{attempt}.db")
        rows = loaded(location, 40_000)
        process = subprocess.Popen([sys.executable, "-c", MIGRATE, SCHEMA, AFTER, location],
                                   stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None and process.stdout.readline() == "ready\n"
        time.sleep(chance.uniform(0.0, 0.6))  # the migration itself takes ~0.4 s
        process.kill()
        process.wait()
        store = open_store(location)
        found = store.get_meta(install.FINGERPRINT)
        store.close()
        plans = {piql.loads(SCHEMA, q).plan: q for q in (BEFORE, AFTER)}
        queries = next(q for plan, q in plans.items() if install.fingerprint(plan) == found)
        outcomes.add(queries == AFTER)
        db = piql.loads(SCHEMA, queries).deploy(location, engine="store")
        assert not db.installed and db.check().consistent
        assert len(db.rows("bookmarks")) == len(db.rows("tags")) == rows
        db.close()
    assert outcomes  # which of the two depends on the timing; both are right
