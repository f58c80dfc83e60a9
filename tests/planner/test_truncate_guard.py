"""Which tables' TRUNCATE PostgreSQL refuses (``planner.truncate_guard``): those views
read (synchronous or asynchronous) and those FOREIGN KEYs refer to; no other."""
from __future__ import annotations

from piql.planner.truncate_guard import guarded, postgres_statements
from tests.conftest import plan_text

SCHEMA = """
CREATE TABLE users (id BIGINT PRIMARY KEY, name VARCHAR);
CREATE TABLE notes (id BIGINT PRIMARY KEY, body VARCHAR);
CREATE TABLE visits (id BIGINT PRIMARY KEY, userId BIGINT,
                     FOREIGN KEY (userId) REFERENCES users (id));
CREATE TABLE counts (id BIGINT PRIMARY KEY, n BIGINT);
"""
QUERIES = """
-- name: countOf
-- maintenance: async
SELECT COUNT(*) AS c FROM counts WHERE n = <n>;
"""


def test_views_tables_and_referenced_tables_are_guarded_and_no_other():
    plan = plan_text(SCHEMA, QUERIES)
    found = guarded(plan.catalog, plan.ordered_views)
    assert sorted(found) == ["counts", "users"]
    assert found["counts"].startswith("piql: TRUNCATE of counts is refused: the view "
                                      "countOf_view reads it")
    assert "FOREIGN KEYs of visits refer to it" in found["users"]
    statements = postgres_statements(plan.catalog, plan.ordered_views)
    created = [s for s in statements if s.startswith("CREATE TRIGGER")]
    assert len(created) == 2 and all("BEFORE TRUNCATE" in s and "FOR EACH STATEMENT" in s
                                     for s in created)
    # every table's guard is dropped first: one an earlier plan guarded goes
    assert sum(s.startswith("DROP TRIGGER") for s in statements) == 4
