"""planner.plan_diff: the steps from a recorded plan to a new one, on pairs of plans."""
from __future__ import annotations

import piql
from piql.planner.plan_diff import StepKind, plan_diff
from piql.planner.plan_record import plan_record
from tests.runtime.test_migrate import MINE, RENAMED, SAVES, SCHEMA as BOOKMARKS, TAGGED, WHO

# the bookmarks app of the migration tests, with a users table to widen and constrain
SCHEMA = "CREATE TABLE users (userId BIGINT PRIMARY KEY, name VARCHAR);" + BOOKMARKS


def record(queries: str, schema: str = SCHEMA, dialect: str | None = None):
    return plan_record(piql.loads(schema, queries).plan, dialect)


def kinds(old, new) -> list[tuple[StepKind, str]]:
    return [(s.kind, s.name) for s in plan_diff(old, new).steps]


def test_the_same_plan_needs_no_step():
    old = record(MINE + SAVES + WHO)
    diff = plan_diff(old, record(MINE + SAVES + WHO))
    assert diff.empty and not diff.unsupported
    assert diff.kept_views == tuple(v.name for v in old.views)


def test_a_query_added_with_a_new_view_builds_only_that_view():
    old, new = record(MINE + SAVES), record(MINE + SAVES + TAGGED)
    added = [v.name for v in new.views if old.view(v.name) is None]
    assert added and kinds(old, new) == [(StepKind.BUILD_VIEW, name) for name in added]
    assert "saveCount_view" in plan_diff(old, new).kept_views


def test_a_query_removed_drops_its_view():
    old, new = record(MINE + SAVES + TAGGED), record(MINE + SAVES)
    dropped = [v.name for v in old.views if new.view(v.name) is None]
    assert kinds(old, new) == [(StepKind.DROP_VIEW, name) for name in dropped]


def test_a_view_with_the_same_definition_is_kept_under_its_new_name():
    old, new = record(MINE + SAVES), record(MINE + RENAMED)
    steps = plan_diff(old, new).steps
    assert [(s.kind, s.renamed_from, s.name) for s in steps] == [
        (StepKind.RENAME_VIEW, "saveCount_view", "savesOfUrl_view")]


def test_an_index_added_and_dropped_with_its_query():
    old, new = record(MINE), record(MINE + WHO)
    created = [s for s in plan_diff(old, new).steps if s.kind == StepKind.CREATE_INDEX]
    assert created and all(s.index.table == "bookmarks" for s in created)
    dropped = [s for s in plan_diff(new, old).steps if s.kind == StepKind.DROP_INDEX]
    assert [s.name for s in dropped] == [s.name for s in created]


def test_a_column_added_and_a_column_dropped():
    wider = SCHEMA.replace("name VARCHAR", "name VARCHAR, email VARCHAR")
    old, new = record(MINE), record(MINE, wider)
    [step] = plan_diff(old, new).steps
    assert (step.kind, step.name, step.column) == (StepKind.ADD_COLUMN, "users",
                                                   ("email", "VARCHAR"))
    [back] = plan_diff(new, old).steps
    assert back.kind == StepKind.UNSUPPORTED and "users.email" in back.reason


def test_a_not_null_column_or_a_type_change_cannot_migrate():
    required = SCHEMA.replace("name VARCHAR", "name VARCHAR, email VARCHAR NOT NULL")
    retyped = SCHEMA.replace("name VARCHAR", "name BIGINT")
    for schema, words in ((required, "NOT NULL"), (retyped, "changed type")):
        [step] = plan_diff(record(MINE), record(MINE, schema)).unsupported
        assert words in step.reason


def test_a_table_added():
    schema = SCHEMA + "CREATE TABLE notes (id BIGINT PRIMARY KEY, body VARCHAR);"
    assert kinds(record(MINE), record(MINE, schema)) == [(StepKind.ADD_TABLE, "notes")]


def test_constraints_added_or_tightened_are_validated_and_raised_ones_relaxed():
    added = SCHEMA.replace("name VARCHAR)", "name VARCHAR, team BIGINT) WITH CARDINALITY (team, 3)"
                           " PER (userId)")
    tighter = SCHEMA.replace("(url, 1000)", "(url, 10)")
    looser = SCHEMA.replace("(url, 1000)", "(url, 5000)")
    diff = plan_diff(record(MINE), record(MINE, added))
    assert [(s.kind, s.constraint.column) for s in diff.steps if s.constraint] == [
        (StepKind.VALIDATE_CONSTRAINT, "team")]
    [step] = plan_diff(record(MINE), record(MINE, tighter)).steps
    assert (step.kind, step.constraint.limit) == (StepKind.VALIDATE_CONSTRAINT, 10)
    [step] = plan_diff(record(MINE), record(MINE, looser)).steps
    assert (step.kind, step.constraint.limit) == (StepKind.RELAX_CONSTRAINT, 5000)


def test_steps_come_in_migration_order():
    old = record(MINE + SAVES)
    new = record(MINE + RENAMED + TAGGED + WHO,
                 SCHEMA.replace("name VARCHAR", "name VARCHAR, email VARCHAR"))
    order = list(StepKind)
    found = [order.index(s.kind) for s in plan_diff(old, new).steps]
    assert found == sorted(found)
    assert {StepKind.ADD_COLUMN, StepKind.RENAME_VIEW, StepKind.BUILD_VIEW,
            StepKind.CREATE_INDEX} <= {s.kind for s in plan_diff(old, new).steps}


def test_postgres_triggers_are_replaced_when_the_views_change():
    old, new = record(MINE + SAVES, dialect="postgres"), record(MINE + SAVES + TAGGED,
                                                                 dialect="postgres")
    assert old.triggers and old.triggers != new.triggers
    assert kinds(old, new)[-1] == (StepKind.REPLACE_TRIGGERS, "triggers")
    assert plan_diff(old, record(MINE + SAVES, dialect="postgres")).empty


def test_a_query_left_without_its_bound_is_named():
    relaxed = SCHEMA.replace(" WITH CARDINALITY (url, 1000)", "")
    diff = plan_diff(record(MINE + SAVES), record(MINE + SAVES, relaxed))
    assert diff.unbounded == ("mine",)
    assert [s.kind for s in diff.steps] == [StepKind.RELAX_CONSTRAINT]
    assert plan_diff(record(MINE + SAVES, relaxed), record(MINE + SAVES)).unbounded == ()


def test_a_temporal_column_marked_or_unmarked_rewrites_no_row():
    plain = SCHEMA.replace("savedAt BIGINT TEMPORAL", "savedAt BIGINT")
    [step] = plan_diff(record(MINE, plain), record(MINE)).steps
    assert (step.kind, step.name, step.column) == (StepKind.SET_TEMPORAL, "bookmarks",
                                                   ("savedAt", "TEMPORAL"))
    assert step.describe() == "mark bookmarks.savedAt TEMPORAL (no row rewritten)"
    [back] = plan_diff(record(MINE), record(MINE, plain)).steps
    assert back.describe() == "bookmarks.savedAt no longer TEMPORAL (no row rewritten)"


def test_a_view_kept_with_another_maintenance_mode_changes_its_mode_not_its_rows():
    deferred = SAVES.replace("-- name: saveCount\n", "-- name: saveCount\n-- maintenance: async\n")
    old, new = record(MINE + SAVES), record(MINE + deferred)
    assert new.view("saveCount_view").maintenance == "async"
    assert kinds(old, new) == [(StepKind.CHANGE_MAINTENANCE, "saveCount_view")]
    assert kinds(new, old) == [(StepKind.CHANGE_MAINTENANCE, "saveCount_view")]
    assert plan_diff(new, record(MINE + deferred)).empty


def test_a_primary_key_changed_cannot_migrate_and_says_why():
    rekeyed = BOOKMARKS.replace("PRIMARY KEY (userId, url))", "PRIMARY KEY (url, userId))")
    [step] = plan_diff(record(MINE, BOOKMARKS), record(MINE, rekeyed)).unsupported
    assert step.reason == ("the primary key of bookmarks changed from (userId, url) to "
                           "(url, userId)")


def test_a_column_added_with_a_default_carries_it_and_may_be_not_null():
    defaulted = SCHEMA.replace("name VARCHAR", "name VARCHAR, email VARCHAR NOT NULL DEFAULT 'none'")
    [step] = plan_diff(record(MINE), record(MINE, defaulted)).steps
    assert (step.kind, step.column) == (StepKind.ADD_COLUMN, ("email", "VARCHAR"))
    assert step.table.default("email") == "none"
    assert "DEFAULT 'none' (in existing rows too)" in step.describe()


def test_a_changed_default_is_a_step_and_an_unsupported_one_is_none():
    one = SCHEMA.replace("name VARCHAR", "name VARCHAR DEFAULT 'a'")
    other = SCHEMA.replace("name VARCHAR", "name VARCHAR DEFAULT 'b'")
    assert kinds(record(MINE, one), record(MINE, other)) == [(StepKind.SET_DEFAULT, "users")]
    assert kinds(record(MINE, one), record(MINE)) == [(StepKind.SET_DEFAULT, "users")]
    skipped = SCHEMA.replace("name VARCHAR", "name VARCHAR DEFAULT current_user")
    assert plan_diff(record(MINE), record(MINE, skipped)).empty
