"""``piql lint`` controls through the command line: --select, --ignore, --fail-on,
-- noqa, several queries files, standard input, and input errors in every format."""
from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from piql.cli import main
from tests.conftest import FIXTURES, PAPER_SCHEMA

BOUNDED = FIXTURES / "paper_bounded_queries.sql"
UNBOUNDED = FIXTURES / "paper_unbounded_queries.sql"
FORMATS = ["text", "json", "sarif", "github"]
SCHEMA = PAPER_SCHEMA.read_text()
# byText is unbounded (PQ101, with PQ103 saying why), either unsupported (PQ102); tagsOfDoc
# is SI-0.
WAIVED = """-- name: tagsOfDoc
SELECT * FROM Tags WHERE docId = <doc>

-- name: byText
-- noqa: unbounded
SELECT * FROM Documents WHERE text = <t>

-- name: either
SELECT * FROM Tags WHERE tag ILIKE <a>  -- noqa
"""


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_project_config(tmp_path, monkeypatch):
    """Run from an empty directory so no piql.toml or [tool.piql] is found by accident."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


def write(tmp_path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return path


# -- --select, --ignore, --fail-on ------------------------------------------------------

def test_ignore_drops_codes_and_what_is_left_decides_the_exit(capsys):
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED, "--ignore", "unbounded")
    assert code == 1  # 'either' still has error[unsupported]
    assert "error[unbounded]" not in out and "error[unsupported]" in out
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED, "--ignore", "PQ101,view-rejected,unsupported")
    assert code == 0
    assert "error[" not in out


def test_select_reports_only_those_codes_and_an_id_prefix_selects_a_group(capsys):
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED, "--format", "json",
                       "--select", "PQ102")
    codes = {d["code"] for q in json.loads(out)["queries"] for d in q["diagnostics"]}
    assert code == 1 and codes == {"unsupported"}
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED, "--format", "json",
                       "--select", "PQ1")
    codes = {d["code"] for q in json.loads(out)["queries"] for d in q["diagnostics"]}
    assert codes == {"unsupported", "unbounded", "view-rejected"}
    code, _, _ = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED, "--select", "index,view")
    assert code == 0


def test_fail_on_warning_and_info(capsys, tmp_path):
    # hotspot warnings only: latestPosts-like query over a TEMPORAL column, periodic
    schema = write(tmp_path, "s.sql", "CREATE TABLE posts (postId BIGINT PRIMARY KEY, "
                                      "createdAt BIGINT TEMPORAL);")
    queries = write(tmp_path, "q.sql", "-- name: latest\n-- periodic: 1 min\n"
                                       "SELECT postId FROM posts ORDER BY createdAt DESC LIMIT 5")
    code, out, _ = run(capsys, "lint", schema, queries)
    assert code == 0 and "warning[hotspot]" in out
    assert run(capsys, "lint", schema, queries, "--fail-on", "warning")[0] == 1
    assert run(capsys, "lint", schema, queries, "--fail-on", "warning", "--ignore", "PQ2")[0] == 0
    assert run(capsys, "lint", PAPER_SCHEMA, BOUNDED, "--fail-on", "info")[0] == 1
    assert run(capsys, "lint", PAPER_SCHEMA, BOUNDED, "--fail-on", "warning")[0] == 0


def test_an_unknown_code_is_an_input_error_with_a_suggestion(capsys):
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, BOUNDED, "--ignore", "hotspt")
    assert code == 2 and out == ""
    assert "piql: error: --ignore: unknown rule code 'hotspt'; did you mean 'hotspot'?" in err


# -- -- noqa -------------------------------------------------------------------------------

def test_noqa_suppresses_and_the_run_passes_and_says_so(capsys, tmp_path):
    queries = write(tmp_path, "q.sql", WAIVED)
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 0
    assert "error[" not in out
    lines = out.splitlines()
    assert any(l.startswith("byText") and "unbounded" in l and l.endswith("(noqa: unbounded, view-rejected)")
               for l in lines)
    assert any(l.startswith("either") and l.endswith("(noqa: unsupported)")
               for l in lines)
    assert "suppressed by -- noqa: 3 findings (byText, either)" in out
    # the reasons stay readable, marked suppressed: the runtime still refuses the query
    waived = [l for l in lines if "suppressed[" in l]
    assert [l.split(" ")[1] for l in waived] == [
        "suppressed[unbounded]", "suppressed[view-rejected]", "suppressed[unsupported]"]
    assert all(l.startswith(f"{queries}:") for l in waived)
    assert "no bounded plan" in waived[0] and "hint:" not in out


def test_noqa_of_another_code_suppresses_nothing(capsys, tmp_path):
    queries = write(tmp_path, "q.sql", "-- name: byText\n-- noqa: hotspot, PQ301\n"
                                       "SELECT * FROM Documents WHERE text = <t>\n")
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 1 and "error[unbounded] byText" in out


def test_noqa_with_an_unknown_code_is_an_input_error_at_its_place(capsys, tmp_path):
    queries = write(tmp_path, "q.sql", "-- name: byText\n-- noqa: unbound\n"
                                       "SELECT * FROM Documents WHERE text = <t>\n")
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 2
    assert f"piql: error: {queries}:2:10: -- noqa: unknown rule code 'unbound'; " \
           "did you mean 'unbounded'?" in err


def test_noqa_inside_a_string_is_not_a_suppression(capsys, tmp_path):
    queries = write(tmp_path, "q.sql", "-- name: byText\n"
                                       "SELECT * FROM Documents WHERE text = '-- noqa'\n")
    assert run(capsys, "lint", PAPER_SCHEMA, queries)[0] == 1


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_every_format_says_what_was_suppressed(capsys, tmp_path, fmt):
    queries = write(tmp_path, "q.sql", WAIVED)
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, queries, "--format", fmt)
    assert code == 0
    if fmt == "json":
        doc = json.loads(out)
        by_name = {q["name"]: q for q in doc["queries"]}
        assert [d["code"] for d in by_name["byText"]["suppressed"]] == [
            "unbounded", "view-rejected"]
        assert by_name["byText"]["diagnostics"] == [] and doc["exit_code"] == 0
    elif fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        waived = [r for r in results if r.get("suppressions")]
        assert {r["ruleId"] for r in waived} == {"unbounded", "view-rejected", "unsupported"}
        assert all(r["suppressions"] == [{"kind": "inSource", "justification": "-- noqa"}]
                   for r in waived)
    else:
        assert out == ""  # nothing to annotate
        assert "3 suppressed by -- noqa" in err


def test_a_waived_unbounded_query_is_still_not_run():
    import piql

    app = piql.loads(SCHEMA, WAIVED)
    with app.deploy() as db:
        with pytest.raises(piql.UnboundedQuery):
            db.query("byText", t="x")


# -- several queries files, standard input ---------------------------------------------

def test_several_queries_files_are_one_application(capsys, tmp_path):
    a = write(tmp_path, "a.sql", "-- name: tagsOfDoc\nSELECT * FROM Tags WHERE docId = <doc>\n")
    b = write(tmp_path, "b.sql", "-- name: byText\nSELECT * FROM Documents WHERE text = <t>\n")
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, a, b, "--format", "json")
    doc = json.loads(out)
    assert code == 1 and [q["name"] for q in doc["queries"]] == ["tagsOfDoc", "byText"]
    assert doc["queries"][1]["diagnostics"][0]["file"] == str(b)


def test_a_query_name_twice_across_files_is_an_input_error(capsys, tmp_path):
    a = write(tmp_path, "a.sql", "-- name: q\nSELECT * FROM Tags WHERE docId = <doc>\n")
    b = write(tmp_path, "b.sql", "\n-- name: Q\nSELECT * FROM Tags WHERE docId = <doc>\n")
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, a, b)
    assert code == 2
    assert f"piql: error: {b}:2:10: duplicate query name 'Q' (first defined at {a}:1:10)" in err


def test_errors_of_every_file_are_reported(capsys, tmp_path):
    a = write(tmp_path, "a.sql", "-- name: q\nSELECT nope FROM Tags\n")
    b = write(tmp_path, "b.sql", "-- name: r\nSELECT * FROM Tagz\n")
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, a, b)
    assert code == 2
    assert f"{a}:2:8:" in err and f"{b}:2:15:" in err


def test_dash_reads_the_queries_from_standard_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(
        b"-- name: byText\nSELECT * FROM Documents WHERE text = <t>\n")))
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, "-", "--stdin-filename", "db/q.sql")
    assert code == 1
    assert "db/q.sql:2:" in out and "error[unbounded] byText" in out


def test_dash_through_the_real_entry_point():
    done = subprocess.run([sys.executable, "-m", "piql", "lint", str(PAPER_SCHEMA), "-"],
                          input=BOUNDED.read_text(), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "4 queries" in done.stdout


def test_one_file_only_is_an_input_error(capsys):
    code, _, err = run(capsys, "lint", PAPER_SCHEMA)
    assert code == 2 and "needs a schema file and at least one queries file" in err


# -- input errors in every format ----------------------------------------------------------

BROKEN = "-- name: q\nSELECT * FROM Tags WHERE nope = <x>\n"


def test_text_input_error_is_file_line_col_on_stderr(capsys, tmp_path):
    queries = write(tmp_path, "q.sql", BROKEN)
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 2 and out == ""
    assert err.startswith(f"piql: error: {queries}:2:26: ")


@pytest.mark.parametrize("fmt", ["json", "sarif", "github"])
def test_machine_formats_write_a_document_holding_the_input_error(capsys, tmp_path, fmt):
    queries = write(tmp_path, "q.sql", BROKEN)
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, queries, "--format", fmt)
    assert code == 2
    assert f"{queries}:2:26:" in err
    if fmt == "json":
        doc = json.loads(out)
        (error,) = doc["errors"]
        assert (error["code"], error["id"], error["severity"]) == ("input", "PQ001", "error")
        assert (error["file"], error["line"], error["column"]) == (str(queries), 2, 26)
        assert "nope" in error["message"]
        assert doc["queries"] == [] and doc["exit_code"] == 2
    elif fmt == "sarif":
        run_ = json.loads(out)["runs"][0]
        (result,) = run_["results"]
        assert result["ruleId"] == "input" and result["level"] == "error"
        region = result["locations"][0]["physicalLocation"]["region"]
        assert region == {"startLine": 2, "startColumn": 26}
        assert run_["invocations"][0]["executionSuccessful"] is False
    else:
        (line,) = out.splitlines()
        assert line.startswith(f"::error file={queries},line=2,col=26,"
                               "title=piql input (PQ001)::")


def test_a_missing_file_under_json_to_a_file(capsys, tmp_path):
    report = tmp_path / "r.json"
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, tmp_path / "missing.sql", "--format",
                       "json", "-o", report)
    assert code == 2 and out == ""
    (error,) = json.loads(report.read_text())["errors"]
    assert "cannot read queries file" in error["message"]


def test_maintenance_async_makes_the_load_wide_default_and_shows_staleness(capsys, tmp_path):
    social = FIXTURES.parents[1] / "examples" / "social"
    code, out, _ = run(capsys, "lint", social / "schema.sql", social / "queries.sql",
                       "--maintenance", "async", "--format", "json")
    views = {v["name"]: v for v in json.loads(out)["views"]}
    assert "staleness" in views["followerCount_view"]
    assert "staleness" not in views["twoTags_view"]  # a join view stays sync
    code, out, _ = run(capsys, "lint", social / "schema.sql", social / "queries.sql")
    assert "staleness of" not in out
    code, out, _ = run(capsys, "lint", social / "schema.sql", social / "queries.sql",
                       "--maintenance", "async")
    assert "staleness of followerCount_view: a queued change is applied within" in out


def test_maintenance_async_with_db_is_refused(capsys, tmp_path):
    code, _, err = run(capsys, "lint", "--db", f"sqlite:///{tmp_path / 'none.db'}",
                       "--maintenance", "async", "--format", "json")
    assert code == 2 and "--maintenance async needs the queries files" in err
