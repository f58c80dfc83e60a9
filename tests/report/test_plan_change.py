"""report.plan_change: the dry run's steps, SQL per dialect and costs from table sizes."""
from __future__ import annotations

import piql
from piql.planner.plan_diff import StepKind, plan_diff
from piql.planner.plan_record import plan_record
from piql.report import plan_change

SCHEMA = """
CREATE TABLE bookmarks (userId BIGINT, url VARCHAR, title VARCHAR, savedAt BIGINT TEMPORAL,
    PRIMARY KEY (userId, url)) WITH CARDINALITY (url, 1000);
"""
MINE = "-- name: mine\nSELECT url, title FROM bookmarks WHERE userId = <userId>;\n"
TITLES = "-- name: {}\nSELECT COUNT(*) AS n FROM bookmarks WHERE title = <title>;\n"
WHO = ("-- name: whoSaved\nSELECT userId FROM bookmarks WHERE url = <url> "
       "ORDER BY savedAt DESC LIMIT 10;\n")


def change(before: str, after: str, schema: str = SCHEMA, dialect: str = "sqlite"):
    old = plan_record(piql.loads(SCHEMA, before).plan, dialect)
    plan = piql.loads(schema, after).plan
    return plan_diff(old, plan_record(plan, dialect)), plan


def test_costs_come_from_the_sizes_of_the_tables_read():
    diff, plan = change(MINE, MINE + TITLES.format("titleCount") + WHO)
    sizes = {"bookmarks": 1000}
    costs = {s.kind: plan_change.step_cost(s, sizes) for s in diff.steps}
    assert costs[StepKind.BUILD_VIEW] == plan_change.Cost(reads=1000, writes=1000)
    assert costs[StepKind.CREATE_INDEX] == plan_change.Cost(reads=1000, writes=1000)
    text = plan_change.render(diff, plan, "sqlite", sizes, "app.db")
    assert text.count("reads ~1000 rows, writes ~1000 rows") == 2
    assert "-- in all: reads ~2000 rows, writes ~2000 rows" in text
    dropped, _ = change(MINE + TITLES.format("titleCount"), MINE)
    assert plan_change.step_cost(dropped.steps[0], {"titleCount_view": 7}).writes == 7


def test_each_dialect_gets_its_own_sql():
    diff, plan = change(MINE, MINE + TITLES.format("titleCount"), dialect="postgres")
    text = plan_change.render(diff, plan, "postgres", {}, "postgresql://host/db")
    assert "NULLS NOT DISTINCT" in text and "WITHOUT ROWID" not in text
    assert "-- the triggers of every base table are dropped and created again" in text
    diff, plan = change(MINE, MINE + TITLES.format("titleCount"))
    text = plan_change.render(diff, plan, "sqlite", {}, "app.db")
    assert "NULLS NOT DISTINCT" not in text and "(sqlite)" in text


def test_a_renamed_view_whose_key_may_hold_null_moves_its_key_index():
    diff, plan = change(MINE + TITLES.format("titleCount"), MINE + TITLES.format("titleSaves"))
    [step] = diff.steps
    assert plan_change.step_sql(step, plan, "sqlite") == [
        'ALTER TABLE "titleCount_view" RENAME TO "titleSaves_view"',
        'DROP INDEX "_piql_key_titleCount_view"',
        'CREATE UNIQUE INDEX "_piql_key_titleSaves_view" ON "titleSaves_view" ("title")']


def test_a_constraint_is_validated_by_a_query_naming_the_keys_over_the_limit():
    diff, plan = change(MINE, MINE, SCHEMA.replace("(url, 1000)", "(url, 10)"))
    [step] = diff.steps
    assert plan_change.validation_sql(step, "sqlite") == (
        'SELECT "userId", COUNT(DISTINCT "url") FROM "bookmarks" GROUP BY "userId" '
        'HAVING COUNT(DISTINCT "url") > 10')


def test_the_summary_keeps_to_its_first_steps():
    diff, _ = change(MINE, MINE + TITLES.format("a") + TITLES.format("b") + WHO)
    assert plan_change.summary(diff, limit=1).splitlines()[1] == "  ... and 2 more (the dry run shows them all)"
    assert plan_change.render(*change(MINE, MINE), "sqlite", {}, "app.db") == \
        "-- app.db already holds this plan: nothing to migrate\n"
