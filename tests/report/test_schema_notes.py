"""Schema notes (statements skipped, indexes piql does not read, keys it chose) in every format."""
from __future__ import annotations

import json

import pytest

from piql.cli import main
from piql.lint.findings import Policy, findings
from piql.rules import Severity
from piql.report import github, json_report, sarif, schema_notes, text
from tests.conftest import FIXTURES, plan_text

SCHEMA = """\
SET statement_timeout = 0;
SELECT pg_catalog.set_config('search_path', '', false);
CREATE TABLE public.users (id bigint NOT NULL, email text NOT NULL, deleted_at bigint);
ALTER TABLE public.users OWNER TO app;
ALTER TABLE ONLY public.users ADD CONSTRAINT users_pkey PRIMARY KEY (id);
CREATE INDEX users_live ON public.users (email) WHERE deleted_at IS NULL;
GRANT SELECT ON TABLE public.users TO reader;
"""
QUERIES = "-- name: byId\nSELECT email FROM users WHERE id = <id>\n"


@pytest.fixture(scope="module")
def plan():
    return plan_text(SCHEMA, QUERIES)


def test_routine_skips_are_summed_up_for_people(plan):
    notes = schema_notes.summarized(plan.catalog)
    assert [(n.code, n.location.line, n.message) for n in notes] == [
        ("skipped", 1, "skipped 4 statements that do not affect bounds: SET (1), "
                       "SELECT set_config(...) (1), ALTER TABLE ... OWNER TO (1), GRANT (1)"),
        ("schema", 6, "index users_live on users is partial (WHERE deleted_at IS NULL): piql "
                      "does not read it to bound queries, as it does not prove that a query "
                      "reads only rows the predicate keeps"),
    ]


def test_text_prints_schema_notes_after_the_verdicts(plan):
    lines = text.render(plan).splitlines()
    assert lines[0].startswith("byId") and "SI-0" in lines[0]
    assert lines[2] == ("schema.sql:1:1: info[skipped] skipped 4 statements that do not affect "
                        "bounds: SET (1), SELECT set_config(...) (1), ALTER TABLE ... OWNER TO (1), "
                        "GRANT (1)")
    assert lines[3].startswith("schema.sql:6:14: info[schema] index users_live on users is partial")


def test_json_lists_every_schema_note(plan):
    document = json.loads(json_report.render(plan))
    notes = document["schema_diagnostics"]
    assert [(n["code"], n["line"], n["column"]) for n in notes] == [
        ("skipped", 1, 1), ("skipped", 2, 1), ("skipped", 4, 1), ("schema", 6, 14),
        ("skipped", 7, 1)]
    assert notes[0] == {"code": "skipped", "id": "PQ401", "severity": "info",
                        "message": "skipped SET: does not affect bounds", "hint": "",
                        "file": "schema.sql", "line": 1, "column": 1}


def test_sarif_has_a_note_result_per_schema_note(plan):
    run = json.loads(sarif.render(plan))["runs"][0]
    schema_results = [r for r in run["results"] if "schema" in r["properties"]]
    assert len(schema_results) == 5
    assert {r["level"] for r in schema_results} == {"note"}
    first = schema_results[0]["locations"][0]["physicalLocation"]
    assert first == {"artifactLocation": {"uri": "schema.sql"},
                     "region": {"startLine": 1, "startColumn": 1}}
    assert {"skipped", "schema"} <= {rule["id"] for rule in run["tool"]["driver"]["rules"]}


def test_github_annotates_the_schema_with_notices_when_info_fails(plan):
    assert github.render(plan) == ""  # notes are not findings
    lines = github.render(findings(plan, Policy(fail_on=Severity.INFO))).splitlines()
    assert lines[0].startswith("::notice file=schema.sql,line=1,col=1,"
                               "title=piql skipped (PQ401)%3A schema::skipped 4 statements")
    assert lines[1].startswith("::notice file=schema.sql,line=6,col=14,"
                               "title=piql schema (PQ402)%3A schema::")


def test_lint_of_a_pg_dump_reports_notes_and_exits_by_the_queries_alone(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: userById\nSELECT email FROM users WHERE id = <id>\n"
                       "-- name: productBySku\nSELECT id, price FROM products WHERE sku = <s>\n")
    code = main(["lint", str(FIXTURES / "pg_dump_app.sql"), str(queries)])
    out = capsys.readouterr().out
    assert code == 0  # info notes do not fail the lint
    assert "info[skipped] skipped " in out and "statements that do not affect bounds" in out
    assert "productBySku  SI-1       ops <= 2" in out


def test_lint_of_the_sqlite_migrations_exits_0(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: postBySlug\nSELECT id, title FROM posts "
                       "WHERE author_id = <a> AND slug = <s>\n"
                       "-- name: tagsOfPost\nSELECT tag FROM tags WHERE post_id = <p>\n")
    code = main(["lint", "--format", "json", str(FIXTURES / "sqlite_migrations.sql"), str(queries)])
    document = json.loads(capsys.readouterr().out)
    assert code == 0
    assert {q["name"]: q["level"] for q in document["queries"]} == {
        "postBySlug": "SI-1", "tagsOfPost": "SI-0"}
    assert any(n["code"] == "skipped" for n in document["schema_diagnostics"])
