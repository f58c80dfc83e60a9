"""install.uninstall: undoing the install of a new store, only while it is still as
installed (this plan, no row), on both stores."""
from __future__ import annotations

import piql
from piql.runtime import install
from piql.runtime.store import open_store

SCHEMA = "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT);"
QUERIES = "-- name: byId\nSELECT v FROM t WHERE id = <id>;\n"
OTHER = "CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT, w BIGINT);"  # another plan


def tables(location: str) -> set[str]:
    store = open_store(location, 5)
    try:
        return store.table_names()
    finally:
        store.close()


def test_uninstall_drops_what_install_made(new_store):
    location = new_store()
    db = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert db.installed and "t" in tables(location)
    assert install.uninstall(db.store, db.plan)
    db.close()
    assert tables(location) == set()
    again = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert again.installed  # a new store again
    again.close()


def test_uninstall_keeps_a_store_with_rows_or_another_plan(new_store):
    location = new_store()
    db = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    db.insert("t", id=1, v=2)
    assert not install.uninstall(db.store, db.plan)
    assert not install.uninstall(db.store, piql.loads(OTHER, QUERIES).plan)
    db.close()
    assert "t" in tables(location)
    reopened = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert list(reopened.query("byId", id=1).rows) == [(2,)]
    reopened.close()


def test_the_store_keeps_the_record_of_its_plan(new_store):
    location = new_store()
    db = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert install.recorded(db.store) == install.record(db.store, db.plan)
    assert (install.recorded(db.store).triggers is None) == (db.store.dialect == "sqlite")
    db.close()
    reopened = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert not reopened.installed
    assert install.recorded(reopened.store) == install.record(reopened.store, reopened.plan)
    reopened.close()


def test_a_store_deployed_before_the_record_reopens_and_gets_it(new_store):
    location = new_store()
    db = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    db.insert("t", id=1, v=2)
    with db.store.transaction():  # as piql left stores before it kept the record
        db.store.sql(f"DELETE FROM {install.META} WHERE key = 'plan'")
    assert install.recorded(db.store) is None
    db.close()
    reopened = piql.loads(SCHEMA, QUERIES).deploy(location, engine="store")
    assert not reopened.installed and list(reopened.query("byId", id=1).rows) == [(2,)]
    assert install.recorded(reopened.store) == install.record(reopened.store, reopened.plan)
    reopened.close()
