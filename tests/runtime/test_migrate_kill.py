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


def loaded(location: str, rows: int) -> str:
    with piql.loads(SCHEMA, BEFORE).deploy(location, engine="store") as db:
        db.load("bookmarks", [(n % 500, f"u{n // 500}.org", f"t{n % 50}", n) for n in range(rows)])
        db.load("tags", [(n % 500, f"u{n // 500}.org", f"g{n % 7}") for n in range(rows)])
    return location


def killed_at_random(location: str, rows: int, chance: random.Random, longest: float) -> bool:
    """Migrate the loaded store at ``location`` in another process, kill it after a random
    time (up to ``longest`` s), and check the store is on one plan with every row: True
    when it is on the new one."""
    process = subprocess.Popen([sys.executable, "-c", MIGRATE, SCHEMA, AFTER, location],
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline() == "ready\n"
    time.sleep(chance.uniform(0.0, longest))
    process.kill()
    process.wait()
    store = open_store(location)
    found = store.get_meta(install.FINGERPRINT)
    store.close()
    plans = {install.fingerprint(piql.loads(SCHEMA, q).plan): q for q in (BEFORE, AFTER)}
    queries = plans[found]  # one of the two plans, never another fingerprint
    db = piql.loads(SCHEMA, queries).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    assert len(db.rows("bookmarks")) == len(db.rows("tags")) == rows
    db.insert("bookmarks", userId=9999, url="new.org", title="t", savedAt=1)  # writable
    assert db.check().consistent
    db.close()
    return queries == AFTER


def test_a_killed_migration_leaves_the_store_on_one_plan(tmp_path):
    chance = random.Random(18)
    outcomes = {killed_at_random(loaded(str(tmp_path / f"app{n}.db"), 40_000), 40_000,
                                 chance, 0.6)  # the migration itself takes ~0.4 s
                for n in range(5)}
    assert outcomes  # which of the two depends on the timing; both are right


def test_a_killed_postgres_migration_leaves_the_store_on_one_plan(postgres_stores):
    chance = random.Random(4)
    outcomes = {killed_at_random(loaded(postgres_stores(), 5_000), 5_000, chance, 2.0)
                for _ in range(4)}
    assert outcomes
