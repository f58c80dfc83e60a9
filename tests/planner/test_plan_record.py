"""planner.plan_record: the canonical, versioned record of what a plan installs."""
from __future__ import annotations

import json

import pytest

import piql
from piql.planner.plan_record import RECORD_VERSION, PlanRecord, RecordError, plan_record

SCHEMA = """
CREATE TABLE bookmarks (userId BIGINT, url VARCHAR, title VARCHAR NOT NULL, savedAt BIGINT,
    PRIMARY KEY (userId, url)) WITH CARDINALITY (url, 1000);
"""
QUERIES = ("-- name: saveCount\nSELECT COUNT(*) AS saves FROM bookmarks WHERE url = <url>;\n"
           "-- name: who\nSELECT userId FROM bookmarks WHERE url = <url> "
           "ORDER BY savedAt DESC LIMIT 10;\n")


def test_the_record_says_what_the_plan_installs():
    plan = piql.loads(SCHEMA, QUERIES).plan
    record = plan_record(plan)
    [table] = record.tables
    assert (table.name, table.key, table.not_null) == ("bookmarks", ("userId", "url"), ("userId", "url", "title"))
    assert table.columns[:2] == (("userId", "BIGINT"), ("url", "VARCHAR"))
    [view] = record.views
    assert (view.name, view.kind, view.key, view.reads) == ("saveCount_view", "imv", ("url",),
                                                           ("bookmarks",))
    assert view.sql == plan.views[0].sql and ("cnt", "BIGINT") in view.columns
    assert [(i.table, i.columns) for i in record.indexes] == [("bookmarks", ("url", "savedAt"))]
    [constraint] = record.constraints
    assert (constraint.column, constraint.per, constraint.limit) == ("url", ("userId",), 1000)
    assert record.triggers is None and plan_record(plan, "postgres").triggers


def test_the_json_is_canonical_and_reads_back():
    plan = piql.loads(SCHEMA, QUERIES).plan
    text = plan_record(plan).to_json()
    assert text == plan_record(piql.loads(SCHEMA, QUERIES).plan).to_json()
    assert json.loads(text)["version"] == RECORD_VERSION
    assert PlanRecord.from_json(text) == plan_record(plan)


def test_a_record_of_another_version_or_damaged_is_refused():
    data = json.loads(plan_record(piql.loads(SCHEMA, QUERIES).plan).to_json())
    with pytest.raises(RecordError, match="version 99"):
        PlanRecord.from_json(json.dumps(dict(data, version=99)))
    with pytest.raises(RecordError, match="damaged"):
        PlanRecord.from_json(json.dumps({k: v for k, v in data.items() if k != "views"}))
    with pytest.raises(RecordError, match="damaged"):
        PlanRecord.from_json("{not json")


def test_a_record_written_before_temporal_and_maintenance_were_kept_still_reads():
    record = plan_record(piql.loads(SCHEMA.replace("savedAt BIGINT", "savedAt BIGINT TEMPORAL"),
                                    QUERIES).plan)
    assert record.tables[0].temporal == ("savedAt",)
    data = json.loads(record.to_json())
    for table in data["tables"]:
        del table["temporal"]
    for view in data["views"]:
        del view["maintenance"]
    older = PlanRecord.from_json(json.dumps(data))
    assert older.tables[0].temporal == () and older.views[0].maintenance == "sync"
    assert PlanRecord.from_json(record.to_json()) == record


def test_a_schema_without_constant_defaults_keeps_its_record_and_fingerprint():
    from piql.planner.fingerprint import plan_fingerprint
    plain = piql.loads(SCHEMA, QUERIES).plan
    # a DEFAULT piql does not fill (an expression) changes nothing of what a store records
    skipped = piql.loads(SCHEMA.replace("savedAt BIGINT", "savedAt BIGINT DEFAULT now()"),
                         QUERIES).plan
    assert plan_record(skipped).to_json() == plan_record(plain).to_json()
    assert plan_fingerprint(skipped) == plan_fingerprint(plain)
    assert '"defaults"' not in plan_record(plain).to_json()
    defaulted = piql.loads(SCHEMA.replace("savedAt BIGINT", "savedAt BIGINT DEFAULT 0"),
                           QUERIES).plan
    assert plan_fingerprint(defaulted) != plan_fingerprint(plain)
    record = plan_record(defaulted)
    assert record.tables[0].defaults == (("savedAt", 0),)
    assert PlanRecord.from_json(record.to_json()) == record
