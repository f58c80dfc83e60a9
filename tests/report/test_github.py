"""``piql lint --format github``: workflow commands, escaped as GitHub Actions requires."""
from __future__ import annotations

import re
from dataclasses import replace

import pytest

from piql.diagnostics import Diagnostic
from piql.errors import Location
from piql.lint.findings import Policy, findings
from piql.planner.application import Plan
from piql.report import github
from piql.rules import Severity
from tests.conftest import paper_mixed_plan, plan_text

COMMAND = re.compile(r"^::(?P<command>error|warning|notice) "
                     r"file=(?P<file>[^,]*),line=(?P<line>\d+),col=(?P<col>\d+),"
                     r"title=(?P<title>[^,:]*)::(?P<message>.*)$")


@pytest.fixture(scope="module")
def mixed_plan() -> Plan:
    return paper_mixed_plan()


def commands(report: str) -> list[str]:
    return [line for line in report.splitlines() if line.startswith("::")]


def with_diagnostics(plan: Plan, *found: Diagnostic) -> Plan:
    query = replace(plan.queries[0], diagnostics=found)
    return Plan(plan.catalog, (query,), "custom.sql")


@pytest.mark.parametrize("which", ["paper_plan", "mixed_plan"])
def test_one_command_per_diagnostic(which, request):
    plan = request.getfixturevalue(which)
    lines = commands(github.render(plan))
    expected = [(q, d) for q in plan.queries for d in q.diagnostics
                if d.severity in ("error", "warning")]
    assert len(lines) == len(expected)
    for line, (query, d) in zip(lines, expected):
        match = COMMAND.match(line)
        assert match, line
        assert match["command"] == {"error": "error", "warning": "warning", "info": "notice"}[
            d.severity]
        assert (match["file"], int(match["line"]), int(match["col"])) == (
            d.location.file, d.location.line, d.location.column)
        assert match["title"] == f"piql {d.code} ({d.rule_id})%3A {query.name}"
        assert match["message"].startswith(d.message.replace("%", "%25"))


def test_unsupported_or_is_an_error_annotation(mixed_plan):
    lines = commands(github.render(mixed_plan))
    (line,) = [l for l in lines if "unsupported" in l]
    assert line.startswith("::error file=queries.sql,line=5,col=26,title=piql unsupported (PQ102)%3A either::")
    assert "ILIKE is not supported by piql Hint: " in line
    (unbounded,) = [l for l in lines if "title=piql unbounded" in l]
    assert unbounded.startswith("::error file=queries.sql,line=2,col=31,")


def test_only_findings_are_printed_and_the_summary_is_apart(mixed_plan):
    assert all(line.startswith("::") for line in github.render(mixed_plan).splitlines())
    summary = github.summary(mixed_plan)
    assert not summary.startswith("::")
    assert "3 queries" in summary and "unbounded 2" in summary


def test_message_escapes_percent_and_newlines(mixed_plan):
    plan = with_diagnostics(mixed_plan, Diagnostic(
        "unbounded", "error", "100% of rows\nare read\r", "split: a, b", Location("q.sql", 3, 4)))
    (line,) = commands(github.render(plan))
    assert line == ("::error file=q.sql,line=3,col=4,title=piql unbounded (PQ101)%3A byText::"
                    "100%25 of rows%0Aare read%0D Hint: split: a, b")


def test_properties_escape_colon_comma_percent_and_newlines(mixed_plan):
    plan = with_diagnostics(mixed_plan, Diagnostic(
        "view", "warning", "m", "", Location("C:\\sql\\a,b%c\nd.sql", 1, 2)))
    (line,) = commands(github.render(plan))
    assert line == ("::warning file=C%3A\\sql\\a%2Cb%25c%0Ad.sql,line=1,col=2,"
                    "title=piql view (PQ302)%3A byText::m")
    assert "\n" not in line


def test_info_is_a_notice_only_when_it_fails_the_run(mixed_plan):
    plan = with_diagnostics(mixed_plan, Diagnostic("index", "info", "needs an index", "h"))
    assert commands(github.render(plan)) == []
    (line,) = commands(github.render(findings(plan, Policy(fail_on=Severity.INFO))))
    assert line == "::notice title=piql index (PQ301)%3A byText::needs an index Hint: h"


def test_paper_plan_has_no_annotations_its_queries_are_fine(paper_plan):
    assert github.render(paper_plan) == ""
    lines = commands(github.render(findings(paper_plan, Policy(fail_on=Severity.INFO))))
    assert lines and not any(line.startswith("::error") for line in lines)
    assert any("title=piql view (PQ302)%3A twoTags" in line for line in lines)
