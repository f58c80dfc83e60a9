"""``piql lint --format json``: the output contract of DESIGN.md, on the paper's example."""
from __future__ import annotations

import json
import re

import pytest

from piql.planner.application import LEVELS
from piql.report import json_report
from tests.conftest import paper_mixed_plan

SEVERITIES = {"error", "warning", "info"}
QUERY_KEYS = {"name", "level", "ops_bound", "indexes", "views", "rewritten_sql", "diagnostics"}
DIAGNOSTIC_KEYS = {"code", "id", "severity", "message", "hint", "file", "line", "column"}
VIEW_KEYS = {"name", "kind", "for", "key", "sql", "storage_bound", "rules"}
RULE_KEYS = {"event", "table", "alias", "sql", "level", "ops_bound"}
ALIAS_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")


@pytest.fixture(scope="module")
def document(paper_plan):
    # What the CLI prints must be valid JSON and say the same as to_dict.
    rendered = json.loads(json_report.render(paper_plan))
    assert rendered == json.loads(json.dumps(json_report.to_dict(paper_plan)))
    return rendered


@pytest.fixture(scope="module")
def mixed():
    return json.loads(json_report.render(paper_mixed_plan()))


def by_name(items, name):
    (found,) = [i for i in items if i["name"] == name]
    return found


def test_top_level_keys_are_exactly_the_contract(document):
    assert set(document) == {"format_version", "queries", "indexes", "views", "writes",
                             "summary", "schema_diagnostics", "queries_diagnostics", "errors",
                             "exit_code"}
    assert document["format_version"] == 1
    assert isinstance(document["queries"], list)
    assert isinstance(document["indexes"], list)
    assert isinstance(document["views"], list)


def test_render_ends_with_a_newline(paper_plan):
    assert json_report.render(paper_plan).endswith("\n")


@pytest.mark.parametrize("which", ["document", "mixed"])
def test_every_query_follows_the_contract(which, request):
    doc = request.getfixturevalue(which)
    assert doc["queries"]
    for query in doc["queries"]:
        assert QUERY_KEYS <= set(query), query
        assert isinstance(query["name"], str) and query["name"]
        assert query["level"] in {"SI-0", "SI-1", "SI-2", "SI-3", "unbounded"}
        if query["level"] == "unbounded":
            assert query["ops_bound"] is None
        else:
            assert type(query["ops_bound"]) is int and query["ops_bound"] >= 0
        assert all(isinstance(i, str) for i in query["indexes"])
        assert all(isinstance(v, str) for v in query["views"])
        assert query["rewritten_sql"] is None or isinstance(query["rewritten_sql"], str)
        for d in query["diagnostics"]:
            assert set(d) == DIAGNOSTIC_KEYS, d
            assert d["severity"] in SEVERITIES
            assert d["code"] and d["message"]
            assert isinstance(d["hint"], str)
            assert isinstance(d["file"], str)
            assert type(d["line"]) is int and d["line"] >= 1
            assert type(d["column"]) is int and d["column"] >= 1


@pytest.mark.parametrize("which", ["document", "mixed"])
def test_summary_counts_every_query_once(which, request):
    doc = request.getfixturevalue(which)
    summary = doc["summary"]
    assert set(summary) == set(LEVELS)
    assert all(type(n) is int and n >= 0 for n in summary.values())
    assert sum(summary.values()) == len(doc["queries"])
    for level in LEVELS:
        assert summary[level] == sum(1 for q in doc["queries"] if q["level"] == level)


def test_names_refer_to_listed_indexes_and_views(document):
    index_names = {i["name"] for i in document["indexes"]}
    view_names = {v["name"] for v in document["views"]}
    query_names = {q["name"] for q in document["queries"]}
    for query in document["queries"]:
        assert set(query["indexes"]) <= index_names
        assert set(query["views"]) <= view_names
    for view in document["views"]:
        assert view["for"] and set(view["for"]) <= query_names
        for name in view["for"]:
            assert view["name"] in by_name(document["queries"], name)["views"]
    for index in document["indexes"]:
        assert set(index) >= {"name", "table", "columns"}
        assert index["table"] in {"Documents", "Tags"}
        assert index["columns"] and all(isinstance(c, str) for c in index["columns"])
    assert len(index_names) == len(document["indexes"])
    assert len(view_names) == len(document["views"])


def test_every_view_follows_the_contract(document):
    assert document["views"]
    for view in document["views"]:
        assert VIEW_KEYS <= set(view), view
        assert view["kind"] in {"imv", "staging", "periodic"}
        assert view["sql"].startswith("CREATE VIEW")
        assert view["name"] in view["sql"]
        assert view["key"]
        for key in view["key"]:
            assert set(key) == {"column", "source"}
            assert isinstance(key["column"], str) and key["column"]
            assert isinstance(key["source"], str) and key["source"]
        if view["storage_bound"] is not None:
            assert set(view["storage_bound"]) == {"relation", "factor"}
            assert type(view["storage_bound"]["factor"]) is int
        for rule in view["rules"]:
            assert RULE_KEYS <= set(rule), rule
            assert rule["event"] in {"insert", "delete"}
            assert rule["table"] in {"Documents", "Tags"}
            assert rule["alias"]
            assert isinstance(rule["sql"], str) and rule["sql"]
            assert rule["level"] in LEVELS and rule["level"] != "unbounded"
            assert type(rule["ops_bound"]) is int and rule["ops_bound"] >= 1


def test_imv_views_have_a_storage_bound_and_rules_for_both_events(document):
    for view in document["views"]:
        if view["kind"] != "imv":
            continue
        assert view["storage_bound"] is not None
        assert view["storage_bound"]["relation"] in {"Documents", "Tags"}
        assert view["storage_bound"]["factor"] >= 1
        events = {(r["table"], r["event"]) for r in view["rules"]}
        for table in {r["table"] for r in view["rules"]}:
            assert {(table, "insert"), (table, "delete")} <= events


def test_two_tags(document):
    query = by_name(document["queries"], "twoTags")
    assert (query["level"], query["ops_bound"]) == ("SI-2", 5)
    assert query["views"] == ["twoTags_view"]
    assert "twoTags_view" in query["rewritten_sql"]
    assert "<tag1>" in query["rewritten_sql"] and "<tag2>" in query["rewritten_sql"]


def test_two_tags_view(document):
    view = by_name(document["views"], "twoTags_view")
    assert view["kind"] == "imv"
    assert view["for"] == ["twoTags"]
    assert [(k["column"], k["source"]) for k in view["key"]] == [
        ("t1_tag", "t1.tag"), ("t2_tag", "t2.tag"), ("timestamp", "d.timestamp"),
        ("docId", "d.docId")]
    assert view["storage_bound"] == {"relation": "Tags", "factor": 6}  # one orientation
    assert view["layout"] == "symmetric pair"
    assert view["sql"].startswith("CREATE VIEW twoTags_view")


def test_view_key_sources_are_alias_columns_of_the_query(document):
    aliases = {"twoTags_view": {"t1", "t2", "d"}, "docsPerTag": {"Tags"}}
    for name, allowed in aliases.items():
        for key in by_name(document["views"], name)["key"]:
            assert ALIAS_COLUMN.match(key["source"]), key
            assert key["source"].split(".")[0] in allowed


def test_two_tags_rules(document):
    rules = by_name(document["views"], "twoTags_view")["rules"]
    events = {(r["event"], r["table"]) for r in rules}
    assert events == {("insert", "Tags"), ("delete", "Tags"),
                      ("insert", "Documents"), ("delete", "Documents")}
    for rule in rules:
        assert set(rule["alias"].split(",")) <= {"t1", "t2", "d"}
        assert ("Tags" if rule["alias"] != "d" else "Documents") == rule["table"]
        assert "twoTags_view" in rule["sql"]
    t1_aliases = {r["alias"] for r in rules if r["table"] == "Tags"}
    assert {"t1", "t2"} <= t1_aliases  # one delta query per occurrence of the self-join


def test_tags_of_doc(document):
    query = by_name(document["queries"], "tagsOfDoc")
    assert (query["level"], query["ops_bound"]) == ("SI-0", 10)
    assert query["indexes"] == [] and query["views"] == []
    assert [d for d in query["diagnostics"] if d["severity"] == "error"] == []


def test_newest_with_tag_uses_an_index_on_tag_timestamp(document):
    query = by_name(document["queries"], "newestWithTag")
    assert query["level"] == "SI-1"
    assert query["views"] == []
    (name,) = query["indexes"]
    index = by_name(document["indexes"], name)
    assert (index["table"], index["columns"]) == ("Tags", ["tag", "timestamp"])


def test_aggregate_view_of_count_tags(document):
    query = by_name(document["queries"], "countTags")
    assert query["level"] == "SI-2" and query["views"] == ["docsPerTag"]
    view = by_name(document["views"], "docsPerTag")
    assert [(k["column"], k["source"]) for k in view["key"]] == [("tag", "Tags.tag")]


def test_diagnostics_name_the_queries_file(document):
    files = {d["file"] for q in document["queries"] for d in q["diagnostics"]}
    assert files == {"paper_queries.sql"}


def test_unbounded_and_unsupported_queries(mixed):
    by_text = by_name(mixed["queries"], "byText")
    assert by_text["level"] == "unbounded" and by_text["ops_bound"] is None
    assert by_text["views"] == [] and by_text["rewritten_sql"] is None
    errors = [d for d in by_text["diagnostics"] if d["severity"] == "error"]
    assert errors and all(d["hint"] for d in errors)
    unbounded = [d for d in errors if d["code"] == "unbounded"][0]
    assert (unbounded["file"], unbounded["line"], unbounded["column"]) == ("queries.sql", 2, 31)

    either = by_name(mixed["queries"], "either")
    assert either["level"] == "unbounded" and either["ops_bound"] is None
    (unsupported,) = either["diagnostics"]
    assert unsupported["code"] == "unsupported" and unsupported["severity"] == "error"
    assert "ILIKE" in unsupported["message"]
    assert (unsupported["line"], unsupported["column"]) == (5, 26)

    assert mixed["summary"]["unbounded"] == 2 and mixed["summary"]["SI-0"] == 1



def test_writes_give_every_tables_insert_delete_and_update_bound(document, paper_plan):
    writes = document["writes"]
    assert all(set(w) == {"table", "event", "ops_bound"} for w in writes)
    assert [(w["table"], w["event"]) for w in writes] == [
        (t, e) for t in ("Documents", "Tags") for e in ("insert", "delete", "update")]
    tags = {w["event"]: w["ops_bound"] for w in writes if w["table"] == "Tags"}
    assert tags["insert"] == paper_plan.write("Tags", "insert").ops_bound > 10 + 2
    assert tags["update"] == tags["insert"] + tags["delete"]
