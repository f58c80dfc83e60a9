"""Column DEFAULTs (constant literals): a write or load omitting the column gets it, the
stores declare it, and a migration adding a column with one gives it to the rows there."""
from __future__ import annotations

import pytest

import piql
from piql.planner.plan_diff import StepKind
from piql.runtime.errors import ConstraintError, DeploymentError
from piql.runtime.store import open_store
from tests.runtime.test_migrate import MINE, SAVES, SCHEMA, base, deployed, migrated, migration

ITEMS = """
CREATE TABLE items (id BIGINT PRIMARY KEY, qty INT DEFAULT -1, price REAL DEFAULT 2.5,
    label VARCHAR DEFAULT 'it''s' NOT NULL, fresh BOOLEAN DEFAULT TRUE, serial INT DEFAULT now(),
    note VARCHAR DEFAULT NULL);
"""
BY_QTY = "-- name: byQty\nSELECT COUNT(*) AS n FROM items WHERE qty = <qty>;\n"
RATED = SCHEMA.replace("title VARCHAR,", "title VARCHAR, rating INT DEFAULT 3 NOT NULL,")
BY_RATING = "-- name: byRating\nSELECT COUNT(*) AS n FROM bookmarks WHERE rating = <rating>;\n"


def declared_defaults(location: str, table: str) -> dict[str, str | None]:
    """The DEFAULT each column of ``table`` is declared with in the store's own catalog."""
    store = open_store(location)
    try:
        if store.dialect == "sqlite":
            return {r[1]: r[4] for r in store.sql(f'PRAGMA table_info("{table}")')}
        return dict(store.sql(
            "SELECT column_name, column_default FROM information_schema.columns WHERE "
            f"table_schema = current_schema() AND table_name = '{table}'"))
    finally:
        store.close()


def test_an_insert_omitting_columns_gets_their_defaults(new_store):
    location = new_store()
    db = piql.loads(ITEMS, BY_QTY).deploy(location, engine="store")
    db.insert("items", id=1, serial=7)
    db.insert("items", id=2, qty=5, label="x", fresh=False, serial=8, note=None)
    db.insert("items", id=3, qty=None, serial=9)  # an explicit NULL stays NULL, as in SQL
    rows = base(db, "SELECT id, qty, price, label, fresh, serial, note FROM items ORDER BY id")
    assert [r[:4] + (bool(r[4]),) + r[5:] for r in rows] == [
        (1, -1, 2.5, "it's", True, 7, None), (2, 5, 2.5, "x", False, 8, None),
        (3, None, 2.5, "it's", True, 9, None)]
    for qty in (-1, 5, 0):  # the view counts the defaults as the base tables hold them
        assert list(db.query("byQty", qty=qty).rows) == base(
            db, "SELECT COUNT(*) FROM items WHERE qty = " + str(qty))
    assert db.check().consistent
    db.close()
    found = declared_defaults(location, "items")
    assert found["qty"].startswith("-1") or found["qty"] == "'-1'::integer"
    assert "it''s" in found["label"] and found["serial"] is None and found["note"] is None


def test_a_load_omitting_columns_gets_their_defaults(tmp_path):
    db = piql.loads(ITEMS, BY_QTY).deploy(str(tmp_path / "a.db"), engine="store")
    csv = tmp_path / "items.csv"
    csv.write_text("id,serial\n1,7\n2,\n")  # no qty, price, label, fresh, note columns
    db.load("items", path=str(csv))
    db.load("items", [{"id": 3, "qty": 4}])
    assert base(db, "SELECT id, qty, price, label, fresh, serial FROM items ORDER BY id") == [
        (1, -1, 2.5, "it's", 1, 7), (2, -1, 2.5, "it's", 1, None), (3, 4, 2.5, "it's", 1, None)]
    assert list(db.query("byQty", qty=-1).rows) == [(2,)] and db.check().consistent
    db.close()


def test_a_not_null_column_with_a_default_is_filled_and_a_bad_default_refused(tmp_path):
    db = piql.loads(ITEMS, BY_QTY).deploy(str(tmp_path / "a.db"), engine="store")
    db.insert("items", id=1)  # label is NOT NULL: its DEFAULT fills it
    with pytest.raises(ConstraintError, match="items.label is NOT NULL"):
        db.insert("items", id=2, label=None)
    db.close()
    with pytest.raises(piql.InputError, match="DEFAULT 'x' of items.qty is no INT value"):
        piql.loads(ITEMS.replace("DEFAULT -1", "DEFAULT 'x'"), BY_QTY)


def test_a_column_added_with_a_default_gives_it_to_the_rows_there(new_store):
    location = deployed(new_store(), MINE + SAVES)
    found = migration(location, MINE + SAVES + BY_RATING, RATED)
    text = found.dry_run()
    assert 'ADD COLUMN "rating" ' in text and "DEFAULT 3" in text
    assert migrated(location, MINE + SAVES + BY_RATING, RATED)[:1] == [StepKind.ADD_COLUMN]
    db = piql.loads(RATED, MINE + SAVES + BY_RATING).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    assert base(db, "SELECT COUNT(*) FROM bookmarks WHERE rating = 3") == [(9,)]
    db.insert("bookmarks", userId=9, url="d.org", title="t", savedAt=1)
    db.insert("bookmarks", userId=9, url="e.org", title="t", savedAt=2, rating=5)
    for rating in (3, 5, 1):
        assert list(db.query("byRating", rating=rating).rows) == base(
            db, "SELECT COUNT(*) FROM bookmarks WHERE rating = " + str(rating))
    assert list(db.query("byRating", rating=3).rows) == [(10,)]
    assert db.check().consistent
    db.close()
    assert migration(location, MINE + SAVES + BY_RATING, RATED).diff.empty  # second run: no-op


def test_a_not_null_column_without_a_default_is_refused_with_the_way_out(tmp_path):
    location = deployed(str(tmp_path / "app.db"), MINE + SAVES)
    with pytest.raises(DeploymentError, match="bookmarks.rating is NOT NULL.*constant DEFAULT"):
        migrated(location, MINE + SAVES, RATED.replace(" DEFAULT 3", ""))


def test_a_changed_default_is_a_step_of_its_own_on_both_stores(new_store):
    location = deployed(new_store(), MINE + SAVES, RATED)
    changed = RATED.replace("DEFAULT 3", "DEFAULT 4")
    found = migration(location, MINE + SAVES, changed)
    assert [s.kind for s in found.diff.steps] == [StepKind.SET_DEFAULT]
    text = found.dry_run()
    if found.dialect == "postgres":
        assert 'ALTER TABLE "bookmarks" ALTER COLUMN "rating" SET DEFAULT 4' in text
    else:
        assert "SQLite cannot change a column's DEFAULT" in text
    migrated(location, MINE + SAVES, changed)
    db = piql.loads(changed, MINE + SAVES).deploy(location, engine="store")
    assert not db.installed
    db.insert("bookmarks", userId=9, url="d.org", title="t", savedAt=1)
    assert base(db, "SELECT rating FROM bookmarks WHERE url = 'd.org'") == [(4,)]
    assert base(db, "SELECT COUNT(*) FROM bookmarks WHERE rating = 3") == [(9,)]  # kept
    db.close()
    if found.dialect == "postgres":
        assert declared_defaults(location, "bookmarks")["rating"] == "4"
    assert migration(location, MINE + SAVES, changed).diff.empty
