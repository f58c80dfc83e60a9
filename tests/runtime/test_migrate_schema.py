"""A migrated store holds what a fresh deployment of the new plan holds: the same tables
with the same columns, the same indexes (key suffix included), the same metadata."""
from __future__ import annotations

import re

import piql
from piql.runtime import install
from piql.runtime.store import open_store
from tests.runtime.test_migrate import MINE, SAVES, SCHEMA, TAGGED, WHO, deployed, migrated

WIDER = SCHEMA.replace("savedAt BIGINT TEMPORAL,", "savedAt BIGINT TEMPORAL, note VARCHAR,")
TITLES = "-- name: titleCount\nSELECT COUNT(*) AS n FROM bookmarks WHERE title = <title>;\n"


def layout(location: str) -> dict:
    """Tables (columns, types, nullability, key, clustering), indexes and piql's metadata
    of a store."""
    store = open_store(location)
    try:
        if store.dialect == "sqlite":
            names = sorted(store.table_names())
            tables = {t: [tuple(r)[1:] for r in store.sql(f'PRAGMA table_info("{t}")')]
                      for t in names}
            indexes = {n: sql for n, sql in store.sql(
                "SELECT name, sql FROM sqlite_master WHERE type = 'index'")}
            # clustered on the key or a rowid table (a view whose key may hold NULL)
            tables |= {f"{n} WITHOUT ROWID": [] for n, sql in store.sql(
                "SELECT name, sql FROM sqlite_master WHERE type = 'table'")
                if sql.rstrip().endswith("WITHOUT ROWID")}
        else:
            tables = {}
            for table, column, kind, nullable in store.sql(
                    "SELECT table_name, column_name, data_type, is_nullable FROM "
                    "information_schema.columns WHERE table_schema = current_schema() "
                    "ORDER BY table_name, ordinal_position"):
                tables.setdefault(table, []).append((column, kind, nullable))
            indexes = {n: re.sub(r' ON \S+\.', ' ON ', d) for n, d in store.sql(
                "SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = current_schema()")}
        meta = {k: store.get_meta(k) for k in (install.FINGERPRINT, install.PLAN,
                                                install.TRIGGERS)}
        return {"tables": tables, "indexes": indexes, "meta": meta}
    finally:
        store.close()


def test_a_migrated_store_is_laid_out_as_a_fresh_deployment(new_store):
    queries = MINE + TAGGED + WHO + TITLES
    location = deployed(new_store(), MINE + SAVES)
    migrated(location, queries, WIDER)
    fresh = new_store()
    piql.loads(WIDER, queries).deploy(fresh, engine="store").close()
    assert layout(location) == layout(fresh)


def test_every_plan_of_the_property_test_migrates_to_a_fresh_layout(new_store):
    from tests.runtime.test_migrate_property import POOL, queries
    everything = queries(set(POOL) - {"renamed"})
    location = deployed(new_store(), MINE)
    migrated(location, everything, WIDER)
    fresh = new_store()
    piql.loads(WIDER, everything).deploy(fresh, engine="store").close()
    assert layout(location) == layout(fresh)
