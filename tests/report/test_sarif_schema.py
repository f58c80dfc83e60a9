"""``piql lint --format sarif`` is valid SARIF 2.1.0: every document the command writes (a
fine application, unbounded queries, suppressed findings, schema notes, an input error)
validates against the OASIS JSON schema (tests/fixtures/sarif-schema-2.1.0.json)."""
from __future__ import annotations

import json

import pytest
from jsonschema import Draft4Validator

from piql.cli import main
from tests.conftest import FIXTURES, PAPER_SCHEMA

SCHEMA = json.loads((FIXTURES / "sarif-schema-2.1.0.json").read_text(encoding="utf-8"))
EXAMPLES = FIXTURES.parent.parent / "examples"
WAIVED = "-- name: byText\n-- noqa: unbounded\nSELECT * FROM Documents WHERE text = <t>\n"


def sarif_of(capsys, *files) -> tuple[int, dict]:
    code = main(["lint", "--no-config", "--format", "sarif", *map(str, files)])
    return code, json.loads(capsys.readouterr().out)


def errors(document: dict) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in Draft4Validator(SCHEMA).iter_errors(document)]


def test_the_schema_is_the_sarif_2_1_0_schema():
    Draft4Validator.check_schema(SCHEMA)
    assert SCHEMA["title"].startswith("Static Analysis Results Format (SARIF) Version 2.1.0")


@pytest.mark.parametrize("files, exit_code", [
    ((PAPER_SCHEMA, FIXTURES / "paper_bounded_queries.sql"), 0),
    ((EXAMPLES / "tpcw/schema.sql", EXAMPLES / "tpcw/queries.sql"), 0),
    ((PAPER_SCHEMA, FIXTURES / "paper_unbounded_queries.sql"), 1),
    ((EXAMPLES / "social/schema.sql", EXAMPLES / "social/queries.sql"), 1),
    ((FIXTURES / "pg_dump_app.sql", FIXTURES / "aiosql_app_queries.sql"), None),
], ids=["fine", "tpcw", "unbounded", "social", "schema-notes"])
def test_lint_output_validates(capsys, files, exit_code):
    code, document = sarif_of(capsys, *files)
    if exit_code is not None:
        assert code == exit_code
    assert document["runs"][0]["results"]
    assert errors(document) == []


def test_suppressed_findings_validate(capsys, tmp_path):
    queries = tmp_path / "q.sql"
    queries.write_text(WAIVED)
    code, document = sarif_of(capsys, PAPER_SCHEMA, queries)
    assert code == 0
    assert any(r.get("suppressions") for r in document["runs"][0]["results"])
    assert errors(document) == []


@pytest.mark.parametrize("queries", [
    "-- name: broken\nSELEC * FROM Tags\n",
    "-- name: a\nSELECT * FROM Nowhere WHERE x = <x>\n-- name: b\nSELECT nope FROM Tags\n",
], ids=["syntax", "unknown-names"])
def test_an_input_error_validates(capsys, tmp_path, queries):
    path = tmp_path / "q.sql"
    path.write_text(queries)
    code, document = sarif_of(capsys, PAPER_SCHEMA, path)
    assert code == 2
    run = document["runs"][0]
    assert run["invocations"][0]["executionSuccessful"] is False
    assert {r["ruleId"] for r in run["results"]} == {"input"}
    assert errors(document) == []


def test_a_missing_file_validates(capsys, tmp_path):
    code, document = sarif_of(capsys, PAPER_SCHEMA, tmp_path / "missing.sql")
    assert code == 2 and errors(document) == []


def test_the_validator_finds_what_is_wrong(capsys):
    """The check is not vacuous: a document the schema forbids is reported."""
    _, document = sarif_of(capsys, PAPER_SCHEMA, FIXTURES / "paper_unbounded_queries.sql")
    result = document["runs"][0]["results"][0]
    result["level"] = "fatal"
    result["locations"][0]["physicalLocation"]["region"]["startLine"] = 0
    found = errors(document)
    assert any("level" in e and "fatal" in e for e in found)
    assert any("startLine" in e for e in found)
