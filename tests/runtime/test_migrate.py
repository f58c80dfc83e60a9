"""runtime.migrate: a deployed store moved to a new plan, without reloading it."""
from __future__ import annotations

import pytest

import piql
from piql.planner.plan_diff import StepKind
from piql.runtime import install, migrate
from piql.runtime.errors import ConstraintError, DeploymentError
from piql.runtime.store import open_store

SCHEMA = """
CREATE TABLE bookmarks (userId BIGINT, url VARCHAR, title VARCHAR, savedAt BIGINT TEMPORAL,
    PRIMARY KEY (userId, url)) WITH CARDINALITY (url, 1000);
CREATE TABLE tags (userId BIGINT, url VARCHAR, tag VARCHAR,
    PRIMARY KEY (userId, url, tag)) WITH CARDINALITY (tag, 5) PER (userId, url);
"""
MINE = "-- name: mine\nSELECT url, title FROM bookmarks WHERE userId = <userId>;\n"
SAVES = "-- name: saveCount\nSELECT COUNT(*) AS saves FROM bookmarks WHERE url = <url>;\n"
RENAMED = "-- name: savesOfUrl\nSELECT COUNT(*) AS saves FROM bookmarks WHERE url = <url>;\n"
TAGGED = "-- name: tagCount\nSELECT COUNT(*) AS n FROM tags WHERE tag = <tag>;\n"
WHO = ("-- name: whoSaved\nSELECT userId FROM bookmarks WHERE url = <url> "
       "ORDER BY savedAt DESC LIMIT 10;\n")
URLS = ("a.org", "b.org", "c.org")
TAGS = ("db", "web", "sql")


def deployed(location: str, queries: str = MINE + SAVES, schema: str = SCHEMA):
    """A store of plan (schema, queries) holding rows of 4 users."""
    db = piql.loads(schema, queries).deploy(location, engine="store")
    for user in range(4):
        for n, url in enumerate(URLS[:user + 1]):
            db.insert("bookmarks", userId=user, url=url, title=f"t{n}", savedAt=100 * user + n)
            for tag in TAGS[:n + 1]:
                db.insert("tags", userId=user, url=url, tag=tag)
    db.close()
    return location


def migration(location: str, queries: str, schema: str = SCHEMA) -> migrate.Migration:
    store = open_store(location)
    try:
        return migrate.prepare(store, piql.loads(schema, queries).plan)
    finally:
        store.close()


def migrated(location: str, queries: str, schema: str = SCHEMA) -> list[StepKind]:
    store = open_store(location)
    try:
        steps = migrate.apply(store, migrate.prepare(store, piql.loads(schema, queries).plan))
    finally:
        store.close()
    return [s.kind for s in steps]


def reopened(location: str, queries: str, schema: str = SCHEMA):
    """The store reopened with the new plan: every view equals its recomputation."""
    db = piql.loads(schema, queries).deploy(location, engine="store")
    assert not db.installed and db.check().consistent
    return db


def base(db, sql: str, *values) -> list[tuple]:
    return [tuple(r) for r in db.store.sql(sql, list(values))]


def test_a_query_added_builds_its_view_from_the_rows_there(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    assert migrated(location, MINE + SAVES + TAGGED) == [StepKind.BUILD_VIEW]
    db = reopened(location, MINE + SAVES + TAGGED)
    for tag in TAGS + ("none",):
        expected = base(db, "SELECT COUNT(*) FROM tags WHERE tag = ?", tag)
        assert list(db.query("tagCount", tag=tag).rows) == expected
    db.insert("tags", userId=0, url="a.org", tag="web")  # writes keep the new view
    assert list(db.query("tagCount", tag="web").rows) == base(
        db, "SELECT COUNT(*) FROM tags WHERE tag = 'web'") == [(6,)]
    assert db.check().consistent
    db.close()
    assert migration(location, MINE + SAVES + TAGGED).diff.empty  # a second run: no-op
    assert migrated(location, MINE + SAVES + TAGGED) == []


def test_a_view_renamed_keeps_its_rows_and_a_query_removed_drops_its_view(tmp_path):
    location = deployed(str(tmp_path / "app.db"), MINE + SAVES + TAGGED)
    assert migrated(location, MINE + RENAMED) == [StepKind.DROP_VIEW, StepKind.RENAME_VIEW]
    db = reopened(location, MINE + RENAMED)
    assert "tagCount_view" not in db.store.table_names()
    for url in URLS:
        assert list(db.query("savesOfUrl", url=url).rows) == base(
            db, "SELECT COUNT(*) FROM bookmarks WHERE url = ?", url)
    db.close()


def test_an_index_and_a_column_added(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    wider = SCHEMA.replace("title VARCHAR,", "title VARCHAR, note VARCHAR,")
    assert migrated(location, MINE + SAVES + WHO, wider) == [StepKind.ADD_COLUMN,
                                                             StepKind.CREATE_INDEX]
    db = reopened(location, MINE + SAVES + WHO, wider)
    assert list(db.query("whoSaved", url="a.org").rows) == base(
        db, "SELECT userId FROM bookmarks WHERE url = ? ORDER BY savedAt DESC LIMIT 10", "a.org")
    assert base(db, "SELECT COUNT(*) FROM bookmarks WHERE note IS NULL") == [(9,)]
    db.insert("bookmarks", userId=9, url="d.org", title="t", note="n", savedAt=1)
    assert base(db, "SELECT note FROM bookmarks WHERE userId = 9") == [("n",)]
    db.close()


def test_a_constraint_the_rows_break_refuses_the_migration_and_changes_nothing(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    tighter = SCHEMA.replace("(tag, 5)", "(tag, 2)")
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(tag, 2\).*userId=\d+, url='c.org'"):
        migrated(location, MINE + SAVES + TAGGED, tighter)
    db = reopened(location, MINE + SAVES)  # still on its plan, with its rows
    assert "tagCount_view" not in db.store.table_names()
    assert base(db, "SELECT COUNT(*) FROM tags") == [(1 + 3 + 6 + 6,)]
    db.close()
    assert migrated(location, MINE + SAVES, SCHEMA.replace("(tag, 5)", "(tag, 3)")) == [
        StepKind.VALIDATE_CONSTRAINT]


def test_a_step_piql_cannot_run_refuses_the_migration(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    narrower = SCHEMA.replace("title VARCHAR, ", "")
    with pytest.raises(DeploymentError, match="bookmarks.title is no longer in the schema"):
        migrated(location, MINE.replace("url, title", "url") + SAVES, narrower)
    reopened(location, MINE + SAVES).close()


def test_the_dry_run_shows_steps_sql_and_costs_on_both_stores(new_store):
    location = deployed(new_store())
    found = migration(location, MINE + SAVES + TAGGED + WHO)
    assert [s.kind for s in found.diff.steps] == [StepKind.CREATE_INDEX, StepKind.BUILD_VIEW] + (
        [StepKind.REPLACE_TRIGGERS] if found.dialect == "postgres" else [])
    text = found.dry_run()
    assert 'CREATE TABLE "tagCount_view"' in text and 'INSERT INTO "tagCount_view"' in text
    assert "reads ~16 rows, writes ~16 rows" in text  # the tags table's rows, once
    assert "reads ~9 rows, writes ~9 rows" in text  # the index on bookmarks
    assert migration(location, MINE + SAVES).dry_run().endswith("nothing to migrate\n")


def test_postgres_migrates_in_one_transaction_with_its_triggers_replaced(postgres_stores):
    location = deployed(postgres_stores(), MINE + SAVES + TAGGED)
    wider = SCHEMA.replace("title VARCHAR,", "title VARCHAR, note VARCHAR,")
    queries = MINE + RENAMED + WHO  # tagCount dropped, saveCount renamed, an index added
    assert migrated(location, queries, wider) == [
        StepKind.ADD_COLUMN, StepKind.DROP_VIEW, StepKind.RENAME_VIEW, StepKind.CREATE_INDEX,
        StepKind.REPLACE_TRIGGERS]
    db = reopened(location, queries, wider)
    db.insert("bookmarks", userId=9, url="a.org", title="t", note="n", savedAt=7)
    db.insert("tags", userId=9, url="a.org", tag="db")  # no trigger keeps tagCount_view
    db.delete("bookmarks", userId=0, url="a.org")
    assert db.check().consistent
    saves = sum(1 for row in db.rows("bookmarks") if row[1] == "a.org")
    assert list(db.query("savesOfUrl", url="a.org").rows) == [(saves,)] == [(4,)]
    db.close()
    assert migration(location, queries, wider).diff.empty


def test_a_failed_postgres_migration_leaves_the_store_on_its_plan(postgres_stores):
    location = deployed(postgres_stores())
    with pytest.raises(ConstraintError, match=r"CARDINALITY \(tag, 2\)"):
        migrated(location, MINE + SAVES + TAGGED, SCHEMA.replace("(tag, 5)", "(tag, 2)"))
    db = reopened(location, MINE + SAVES)
    db.insert("bookmarks", userId=9, url="a.org", title="t", savedAt=7)
    assert db.check().consistent and "tagCount_view" not in db.store.table_names()
    db.close()


def test_a_store_without_the_record_of_its_plan_is_refused_with_the_way_out(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    store = open_store(location)
    with store.transaction():
        store.sql(f"DELETE FROM {install.META} WHERE key = ?", [install.PLAN])
    with pytest.raises(DeploymentError, match="reopen it once"):
        migrate.prepare(store, piql.loads(SCHEMA, MINE).plan)
    store.close()


def test_a_renamed_view_whose_key_may_hold_null_is_read_through_its_new_key_index(new_store):
    titles = "-- name: {}\nSELECT COUNT(*) AS n FROM bookmarks WHERE title = <title>;\n"
    location = deployed(new_store(), MINE + titles.format("titleCount"))
    steps = migrated(location, MINE + titles.format("titleSaves"))
    assert steps[0] == StepKind.RENAME_VIEW and set(steps[1:]) <= {StepKind.REPLACE_TRIGGERS}
    db = reopened(location, MINE + titles.format("titleSaves"))
    listed = "SELECT name FROM sqlite_master WHERE type = 'index'" if \
        db.store.dialect == "sqlite" else "SELECT indexname FROM pg_indexes"
    indexes = {n for (n,) in db.store.sql(listed)}
    assert "_piql_key_titleSaves_view" in indexes and "_piql_key_titleCount_view" not in indexes
    db.insert("bookmarks", userId=7, url="z.org", title=None, savedAt=5)  # a NULL key
    db.insert("bookmarks", userId=7, url="y.org", title="t2", savedAt=6)
    for title in ("t0", "t2"):
        saves = sum(1 for row in db.rows("bookmarks") if row[2] == title)
        assert list(db.query("titleSaves", title=title).rows) == [(saves,)]
    assert db.check().consistent
    db.close()


def test_app_migrate_builds_new_views_on_duckdb_after_its_dry_run(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    app = piql.loads(SCHEMA, MINE + SAVES + TAGGED)
    dry = app.migrate(location, dry_run=True)
    assert [s.kind for s in dry.diff.steps] == [StepKind.BUILD_VIEW]
    assert "tagCount_view" not in open_store(location).table_names()  # nothing changed
    assert app.migrate(location, engine="duckdb").diff.steps == dry.diff.steps
    db = reopened(location, MINE + SAVES + TAGGED)
    assert list(db.query("tagCount", tag="db").rows) == base(
        db, "SELECT COUNT(*) FROM tags WHERE tag = 'db'")
    db.close()
    assert app.migrate(location).diff.empty


def test_a_migration_leaving_a_query_unbounded_needs_force(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    app = piql.loads(SCHEMA.replace(" WITH CARDINALITY (url, 1000)", ""), MINE + SAVES)
    assert "unbounded under this one: mine" in app.migrate(location, dry_run=True).dry_run()
    with pytest.raises(DeploymentError, match="would leave mine without a bound"):
        app.migrate(location, engine="store")
    reopened(location, MINE + SAVES).close()  # still on its plan
    assert app.migrate(location, force=True, engine="store").diff.unbounded == ("mine",)
    assert app.migrate(location, engine="store").diff.empty


ASYNC_SAVES = SAVES.replace("-- name: saveCount\n", "-- name: saveCount\n-- maintenance: async\n")


def test_a_view_made_asynchronous_keeps_its_rows_and_back_needs_the_queue_drained(new_store):
    location = deployed(new_store())
    assert StepKind.CHANGE_MAINTENANCE in migrated(location, MINE + ASYNC_SAVES)
    db = reopened(location, MINE + ASYNC_SAVES)
    before = list(db.query("saveCount", url="a.org").rows)
    db.insert("bookmarks", userId=8, url="a.org", title="t", savedAt=9)  # queued
    assert list(db.query("saveCount", url="a.org").rows) == before
    db.close()
    with pytest.raises(DeploymentError, match="update queue holds 1 changes.*drain"):
        migrated(location, MINE + SAVES)
    db = reopened(location, MINE + ASYNC_SAVES)  # refused: still on its plan
    db.drain()
    db.close()
    assert StepKind.CHANGE_MAINTENANCE in migrated(location, MINE + SAVES)
    db = reopened(location, MINE + SAVES)
    db.insert("bookmarks", userId=9, url="a.org", title="t", savedAt=10)
    assert list(db.query("saveCount", url="a.org").rows) == base(
        db, "SELECT COUNT(*) FROM bookmarks WHERE url = 'a.org'")
    # nothing queues it any more (on PostgreSQL: the enqueue trigger went with the plan)
    assert base(db, 'SELECT COUNT(*) FROM "_piql_update_queue"') == [(0,)]
    db.close()


def test_a_temporal_column_unmarked_migrates_without_touching_rows(tmp_path):
    location = deployed(str(tmp_path / "app.db"))
    plain = SCHEMA.replace("savedAt BIGINT TEMPORAL", "savedAt BIGINT")
    assert migrated(location, MINE + SAVES, plain) == [StepKind.SET_TEMPORAL]
    db = reopened(location, MINE + SAVES, plain)
    assert base(db, "SELECT COUNT(*) FROM bookmarks") == [(9,)]
    db.close()
    assert migrated(location, MINE + SAVES) == [StepKind.SET_TEMPORAL]
    reopened(location, MINE + SAVES).close()


def test_views_swapping_names_keep_their_rows_through_a_temporary_name(new_store):
    """Two views swap names in one release: one is parked under a temporary name, so no
    rename meets a name still taken, and each keeps its rows under its new name."""
    schema = "CREATE TABLE t (id BIGINT, a BIGINT, b BIGINT, PRIMARY KEY (id));"
    named = ("-- name: byA\n-- view: {}\nSELECT COUNT(*) FROM t WHERE a = <x>\n\n"
             "-- name: byB\n-- view: {}\nSELECT COUNT(*) FROM t WHERE b = <x>\n")
    location = new_store()
    with piql.loads(schema, named.format("v1", "v2")).deploy(location, engine="store") as db:
        for i in range(10):
            db.insert("t", id=i, a=i % 2, b=i % 3)
    swapped = piql.loads(schema, named.format("v2", "v1"))
    steps = swapped.migrate(location, engine="store").diff.steps
    assert [s.kind for s in steps if s.kind != StepKind.REPLACE_TRIGGERS] == \
        [StepKind.RENAME_VIEW] * 3 and not [s for s in steps if s.kind == StepKind.BUILD_VIEW]
    with swapped.deploy(location, engine="store") as db:
        db.insert("t", id=10, a=1, b=1)
        assert db.query("byA", x=1).rows == ((6,),) and db.query("byB", x=1).rows == ((4,),)
        assert db.check().consistent
        assert swapped.migrate(location, engine="store").diff.empty  # a no-op the second time
