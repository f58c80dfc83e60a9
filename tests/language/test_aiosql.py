"""aiosql's queries files lint unchanged: its names, suffixes and ``:name`` parameters."""
from __future__ import annotations

import json

import pytest

from piql.cli import main
from piql.language.queries import parse_queries_file
from tests.conftest import FIXTURES
from tests.language.test_queries import CATALOG, FILE, at, error, parse, where


@pytest.mark.parametrize("suffix", ["", "^", "$"])
def test_the_suffixes_of_queries_are_taken_off(suffix):
    (query,) = parse(f"-- name: tags-of-doc{suffix}\nSELECT tag FROM Tags WHERE docId = :doc\n")
    assert query.name == "tags_of_doc"
    assert query.block is not None and query.block.params == ("doc",)


@pytest.mark.parametrize("suffix, kind", [
    ("!", "statement (INSERT, UPDATE or DELETE)"), ("<!", "INSERT ... RETURNING"),
    ("*!", "run for many rows"), ("#", "script"),
])
def test_statements_and_scripts_are_skipped_with_a_note(suffix, kind):
    text = ("-- name: first\nSELECT tag FROM Tags WHERE docId = :doc\n"
            f"-- name: change-it{suffix}\nINSERT INTO Tags VALUES (:a, :b, :c);\n"
            "DELETE FROM Tags WHERE docId = :a\n")
    read = parse_queries_file(text, CATALOG, FILE)
    assert [q.name for q in read.queries] == ["first"]
    (note,) = read.notes
    assert (note.code, note.severity) == ("skipped", "info")
    assert f"'change-it{suffix}'" in note.message and kind in note.message
    assert where(note.location) == at(text, "change-it")


def test_a_skipped_name_still_counts_against_duplicates():
    text = "-- name: a!\nDELETE FROM Tags\n-- name: a\nSELECT tag FROM Tags WHERE docId = ?\n"
    err = error(text)
    assert "duplicate query name 'a'" in err.message
    assert where(err.location) == (3, 10)


@pytest.mark.parametrize("header", ["tags-of-doc(doc)^", "tags-of-doc ( doc )", "tags_of_doc()$"])
def test_a_declaration_of_the_parameters_is_accepted(header):
    (query,) = parse(f"-- name: {header}\nSELECT tag FROM Tags WHERE docId = :doc\n")
    assert query.name == "tags_of_doc"


@pytest.mark.parametrize("name", ["a-", "-a", "a^^", "a!x", "a b", "a(b c)", "a(1)", "a(b"])
def test_names_aiosql_would_not_read_are_errors(name):
    text = f"-- name: {name}\nSELECT tag FROM Tags\n"
    assert "expected a query name after '-- name:'" in error(text).message


def test_the_aiosql_queries_of_the_pg_dump_app_lint_unchanged(capsys):
    code = main(["lint", "--format", "json", str(FIXTURES / "pg_dump_app.sql"),
                 str(FIXTURES / "aiosql_app_queries.sql")])
    document = json.loads(capsys.readouterr().out)
    assert code in (0, 1)  # no input error: verdicts only
    levels = {q["name"]: q["level"] for q in document["queries"]}
    assert len(levels) == 11
    assert levels["get_user_by_email"] == "SI-1"  # by the UNIQUE e-mail
    assert levels["product_by_sku"] == "SI-1" and levels["post_by_slug"] == "SI-1"
    assert levels["coupon_by_code"] == "SI-1"  # UNIQUE NULLS NOT DISTINCT
    assert levels["get_user_by_id"] == "SI-0" and levels["count_comments"] == "SI-2"
    skipped = [n["message"] for n in document["queries_diagnostics"]]
    assert len(skipped) == 4 and all(m.startswith("skipped '") for m in skipped)


def test_the_text_report_shows_the_skipped_blocks(capsys):
    main(["lint", str(FIXTURES / "pg_dump_app.sql"), str(FIXTURES / "aiosql_app_queries.sql")])
    out = capsys.readouterr().out
    assert "aiosql_app_queries.sql:66:10: info[skipped] skipped 'publish-post!'" in out


@pytest.mark.parametrize("fmt", ["sarif", "github"])
def test_machine_formats_carry_the_skipped_blocks(capsys, fmt):
    """SARIF carries every note; the GitHub format prints only findings (issue 17), so the
    info notes on skipped blocks are not annotated there unless --fail-on info makes them
    fail the run."""
    main(["lint", "--format", fmt, str(FIXTURES / "pg_dump_app.sql"),
          str(FIXTURES / "aiosql_app_queries.sql")])
    out = capsys.readouterr().out
    if fmt == "sarif":
        results = json.loads(out)["runs"][0]["results"]
        skipped = [r for r in results if r.get("properties", {}).get("queries")]
        assert len(skipped) == 4 and all(r["ruleId"] == "skipped" for r in skipped)
        assert skipped[0]["locations"][0]["physicalLocation"]["region"]["startLine"] == 61
    else:
        assert "skipped 'create-user<!'" not in out
        main(["lint", "--format", fmt, "--fail-on", "info", str(FIXTURES / "pg_dump_app.sql"),
              str(FIXTURES / "aiosql_app_queries.sql")])
        out = capsys.readouterr().out
        assert "::notice file=" in out and "title=piql skipped (" in out
        assert "skipped 'create-user<!'" in out
