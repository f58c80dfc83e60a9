"""``piql plan --dialect``: the view tables printed are the ones the runtime creates."""
from __future__ import annotations

import sqlite3

from piql import App
from piql.report import ddl
from tests.conftest import plan_text
from tests.runtime.test_null_keys import FORUM


def _creates(text: str, view: str) -> list[str]:
    return [line for line in text.splitlines()
            if line.startswith("CREATE") and f'"{view}"' in line.split("(")[0]]


def test_a_view_whose_key_may_hold_null_is_printed_as_the_runtime_creates_it():
    """A clustered key refuses NULL, so such a view is a rowid table with a unique index on
    its key: the printed DDL says so (no WITHOUT ROWID primary key) and matches the store."""
    text = ddl.render(FORUM, "sqlite")
    printed = _creates(text, "answerCount_view")
    assert printed == [
        'CREATE TABLE "answerCount_view" ("question_id" INTEGER, "cnt" INTEGER, '
        '"sum_score" INTEGER, "cnt_score" INTEGER);',
        'CREATE UNIQUE INDEX "_piql_key_answerCount_view" ON "answerCount_view"("question_id");']
    db = App(FORUM).deploy()
    created = dict(db.store.connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE tbl_name = 'answerCount_view'").fetchall())
    assert set(created) == {"answerCount_view", "_piql_key_answerCount_view"}
    assert "WITHOUT ROWID" not in created["answerCount_view"]
    # the printed statements run, and a NULL key fits the printed table as it fits the store's
    connection = sqlite3.connect(":memory:")
    for statement in printed:
        connection.execute(statement)
    connection.execute('INSERT INTO "answerCount_view" VALUES (NULL, 1, 2, 1)')


def test_a_view_with_a_not_null_key_stays_clustered():
    plan = plan_text("CREATE TABLE likes (post BIGINT, person BIGINT, PRIMARY KEY (post, person));",
                     "-- name: likers\nSELECT COUNT(*) AS n FROM likes WHERE person = <p>;\n")
    (view,) = plan.views
    assert not view.nullable_key
    text = ddl.render(plan, "sqlite")
    (statement,) = _creates(text, view.name)
    assert statement.endswith("WITHOUT ROWID;") and "PRIMARY KEY" in statement
