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


VIEWED = """CREATE TABLE t (id BIGINT PRIMARY KEY, k BIGINT, v BIGINT)
  WITH CARDINALITY (v, 3) PER (k);
"""
COUNTED = "-- name: total\nSELECT COUNT(*) AS n, SUM(v) AS s FROM t WHERE k = <k>;\n"


def piql_functions(location: str) -> set[str]:
    import psycopg

    with psycopg.connect(location, autocommit=True) as connection:
        return {name for (name,) in connection.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = current_schema()::regnamespace "
            "AND proname LIKE 'piql%'")}


def test_uninstall_on_postgres_drops_the_trigger_functions_too(postgres_stores):
    """The functions its triggers run (one per table, and their helpers) go with the tables:
    the schema is as empty as before the deploy."""
    location = postgres_stores()
    db = piql.loads(VIEWED, COUNTED).deploy(location, engine="store")
    assert {"piql_t_write", "piql_exact", "piql_int"} <= piql_functions(location)
    assert install.uninstall(db.store, db.plan)
    db.close()
    assert tables(location) == set() and piql_functions(location) == set()
    again = piql.loads(VIEWED, COUNTED).deploy(location, engine="store")
    assert again.installed
    again.insert("t", id=1, k=5, v=7)  # the triggers are back, and keep the view
    assert list(again.query("total", k=5).rows) == [(1, 7)]
    again.close()


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
