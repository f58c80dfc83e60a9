"""``piql lint`` (text): a verdict line per query, located diagnostics with hints, a summary."""
from __future__ import annotations

import re

from piql.report import text
from tests.conftest import paper_mixed_plan, paper_schema_text, plan_text

LOCATED = re.compile(r"^(?P<file>[^\s:]+):(?P<line>\d+):(?P<col>\d+): "
                     r"(?P<severity>error|warning|info)\[(?P<code>[\w-]+)\] (?P<query>\w+): .+")


def verdicts(report: str, names) -> dict[str, str]:
    lines = report.splitlines()
    found = {}
    for name in names:
        matching = [line for line in lines if re.match(rf"^{re.escape(name)}\s", line)]
        assert len(matching) == 1, (name, matching)
        found[name] = matching[0]
    return found


def test_one_verdict_line_per_query_with_level_and_bound(paper_plan):
    report = text.render(paper_plan)
    lines = verdicts(report, [q.name for q in paper_plan.queries])
    for query in paper_plan.queries:
        line = lines[query.name]
        assert re.search(rf"\s{re.escape(query.level)}\s", line + " ")
        if query.bounded:
            assert f"ops <= {query.ops_bound}" in line
    assert re.match(r"^tagsOfDoc\s+SI-0\s+ops <= 10\b", lines["tagsOfDoc"])
    assert re.match(r"^twoTags\s+SI-2\s+ops <= 5\b", lines["twoTags"])
    assert "twoTags_view" in lines["twoTags"]
    assert re.match(r"^newestWithTag\s+SI-1\s+ops <= 10\b", lines["newestWithTag"])
    assert "idx_tags_tag_timestamp" in lines["newestWithTag"]


def test_verdict_lines_come_first_in_query_order(paper_plan):
    first = text.render(paper_plan).splitlines()[:len(paper_plan.queries)]
    assert [line.split()[0] for line in first] == [q.name for q in paper_plan.queries]


def test_summary_line_counts_every_level(paper_plan):
    report = text.render(paper_plan)
    total = len(paper_plan.queries)
    expected = f"{total} queries: " + ", ".join(
        f"{level} {count}" for level, count in paper_plan.summary.items())
    assert expected in report.splitlines()
    assert "SI-0 1" in expected and "SI-2 3" in expected


def test_summary_line_for_a_single_query():
    plan = plan_text(paper_schema_text(), "-- name: q\nSELECT * FROM Tags WHERE docId = <d>\n")
    assert "1 query: SI-0 1, SI-1 0, SI-2 0, SI-3 0, unbounded 0" in text.render(plan).splitlines()


def test_indexes_and_views_are_listed(paper_plan):
    lines = text.render(paper_plan).splitlines()
    (indexes,) = [line for line in lines if line.startswith("indexes:")]
    assert "idx_tags_tag_timestamp on Tags(tag, timestamp)" in indexes
    (views,) = [line for line in lines if line.startswith("views:")]
    assert "twoTags_view (imv)" in views


def test_diagnostics_are_located_file_line_col(paper_plan):
    lines = text.render(paper_plan).splitlines()
    for query in paper_plan.queries:
        for d in query.diagnostics:
            if d.code == "index" and d.severity == "info":
                continue  # the verdict line already names the index
            expected = f"{d.location}: {d.severity}[{d.code}] {query.name}: {d.message}"
            assert expected in lines
            assert LOCATED.match(expected)
            if d.hint:
                assert lines[lines.index(expected) + 1] == f"    hint: {d.hint}"


def test_unbounded_and_unsupported_queries_are_explained():
    report = text.render(paper_mixed_plan())
    lines = report.splitlines()
    found = verdicts(report, ["byText", "either", "tagsOfDoc"])
    assert re.match(r"^byText\s+unbounded\s+no bound", found["byText"])
    assert re.match(r"^either\s+unbounded\s+no bound", found["either"])
    assert "ops <=" not in found["byText"]

    unsupported = "queries.sql:5:26: error[unsupported] either: ILIKE is not supported by piql"
    assert unsupported in lines
    assert lines[lines.index(unsupported) + 1].startswith("    hint: ")

    unbounded = [line for line in lines if line.startswith("queries.sql:2:31: error[unbounded] byText: ")]
    assert len(unbounded) == 1 and "Documents" in unbounded[0]
    assert lines[lines.index(unbounded[0]) + 1].startswith("    hint: ")
    assert "3 queries: SI-0 1, SI-1 0, SI-2 0, SI-3 0, unbounded 2" in lines


def test_every_diagnostic_line_parses(paper_plan):
    report = text.render(paper_mixed_plan()) + text.render(paper_plan)
    for line in report.splitlines():
        if re.match(r"^\S+:\d+:\d+: ", line):
            assert LOCATED.match(line), line


def test_report_ends_with_newline(paper_plan):
    assert text.render(paper_plan).endswith("\n")


def test_a_query_bounded_through_a_view_gives_the_reason_for_the_view_not_an_unbounded_finding(
        paper_plan):
    """Issue 12, smaller defect (c): `info[unbounded] ... no bounded plan` on an SI-2 query
    read as an alarm; it is the reason the view was needed."""
    lines = text.render(paper_plan).splitlines()
    two_tags = [line for line in lines if " twoTags: " in line]
    assert not [line for line in two_tags if "[unbounded]" in line or "no bounded plan" in line]
    reason = [line for line in two_tags if "info[view] twoTags: needs a view because " in line]
    assert len(reason) == 1 and "the rows of t1 (Tags) with t1.tag = <tag1>" in reason[0]


def test_only_unbounded_queries_carry_the_unbounded_code(paper_plan_temporal):
    from piql.report import github, json_report, sarif
    import json

    plans = [paper_plan_temporal, paper_mixed_plan()]
    for plan in plans:
        bounded = {q.name for q in plan.queries if q.bounded}
        assert bounded
        for query in plan.queries:
            codes = {d.code for d in query.diagnostics}
            assert ("unbounded" in codes) <= (not query.bounded), (query.name, codes)
        document = json.loads(json_report.render(plan))
        assert not [d for q in document["queries"] if q["name"] in bounded
                    for d in q["diagnostics"] if d["code"] == "unbounded"]
        results = json.loads(sarif.render(plan))["runs"][0]["results"]
        assert not [r for r in results if r["properties"]["query"] in bounded
                    and r["ruleId"] == "unbounded"]
        assert not [line for line in github.render(plan).splitlines()
                    if "piql unbounded%3A " in line
                    and line.split("piql unbounded%3A ")[1].split("::")[0] in bounded]


def test_every_table_gets_its_write_bounds_after_the_summary(paper_plan):
    lines = text.render(paper_plan).splitlines()
    writes = [line for line in lines if line.startswith("write to ")]
    tags = paper_plan.write("Tags", "insert").ops_bound
    assert writes[1].startswith(f"write to Tags: ops <= {tags} (insert), ")
    assert len(writes) == 2 and writes == lines[-2:]
