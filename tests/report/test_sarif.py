"""``piql lint --format sarif``: SARIF 2.1.0 results with the right rule, level and place."""
from __future__ import annotations

import json
from dataclasses import replace

import pytest

from piql.diagnostics import Diagnostic
from piql.errors import Location
from piql.planner.application import Plan
from piql.report import sarif
from tests.conftest import paper_mixed_plan

LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def document(plan: Plan) -> dict:
    return json.loads(sarif.render(plan))


def diagnostics(plan: Plan):
    return [(q, d) for q in plan.queries for d in q.diagnostics]


@pytest.fixture(scope="module")
def mixed_plan() -> Plan:
    return paper_mixed_plan()


@pytest.mark.parametrize("which", ["paper_plan", "mixed_plan"])
def test_document_shape(which, request):
    doc = document(request.getfixturevalue(which))
    assert doc["version"] == "2.1.0"
    assert "sarif-2.1.0" in doc["$schema"]
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "piql"
    assert isinstance(run["results"], list)
    rule_ids = [r["id"] for r in driver["rules"]]
    assert len(rule_ids) == len(set(rule_ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"]
    for result in run["results"]:
        assert result["ruleId"] in rule_ids
        assert result["level"] in {"error", "warning", "note", "none"}
        assert result["message"]["text"]


@pytest.mark.parametrize("which", ["paper_plan", "mixed_plan"])
def test_one_result_per_diagnostic_with_rule_level_and_location(which, request):
    plan = request.getfixturevalue(which)
    results = document(plan)["runs"][0]["results"]
    expected = diagnostics(plan)
    assert len(results) == len(expected)
    for result, (query, d) in zip(results, expected):
        assert result["ruleId"] == d.code
        assert result["level"] == LEVEL[d.severity]
        assert d.message in result["message"]["text"]
        assert query.name in result["message"]["text"]
        (location,) = result["locations"]
        physical = location["physicalLocation"]
        assert physical["artifactLocation"]["uri"] == d.location.file
        assert physical["region"] == {"startLine": d.location.line,
                                      "startColumn": d.location.column}


def test_unsupported_and_unbounded_results(mixed_plan):
    results = document(mixed_plan)["runs"][0]["results"]
    (unsupported,) = [r for r in results if r["ruleId"] == "unsupported"]
    assert unsupported["level"] == "error"
    assert "ILIKE" in unsupported["message"]["text"]
    region = unsupported["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (5, 26)
    assert unsupported["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "queries.sql"

    unbounded = [r for r in results if r["ruleId"] == "unbounded"]
    assert unbounded and all(r["level"] == "error" for r in unbounded)
    region = unbounded[0]["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 31)
    assert "Hint:" in unbounded[0]["message"]["text"]


def test_bounded_paper_queries_give_no_errors(paper_plan):
    results = document(paper_plan)["runs"][0]["results"]
    assert results  # notes: indexes and views piql creates
    assert all(r["level"] in {"note", "warning"} for r in results)
    rules = {r["id"] for r in document(paper_plan)["runs"][0]["tool"]["driver"]["rules"]}
    assert {"index", "view"} <= rules


def test_levels_and_a_diagnostic_without_location(mixed_plan):
    query = mixed_plan.queries[0]
    custom = replace(query, diagnostics=(
        Diagnostic("hotspot", "warning", "a warning", "a hint", Location("w.sql", 7, 3)),
        Diagnostic("index", "info", "a note"),
    ))
    results = document(Plan(mixed_plan.catalog, (custom,), "w.sql"))["runs"][0]["results"]
    assert [(r["ruleId"], r["level"]) for r in results] == [("hotspot", "warning"), ("index", "note")]
    assert results[0]["locations"][0]["physicalLocation"]["region"] == {
        "startLine": 7, "startColumn": 3}
    assert "locations" not in results[1] or results[1]["locations"] == []


def test_empty_plan_is_a_valid_log(mixed_plan):
    doc = document(Plan(mixed_plan.catalog, (), "none.sql"))
    assert doc["version"] == "2.1.0" and doc["runs"][0]["results"] == []
