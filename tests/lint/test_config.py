"""``[tool.piql]`` in pyproject.toml and piql.toml: ``piql lint`` with no arguments uses
them, flags override them, mistakes in them are input errors naming the file."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from piql.cli import main
from tests.conftest import FIXTURES, PAPER_SCHEMA

UNBOUNDED = FIXTURES / "paper_unbounded_queries.sql"
BOUNDED = FIXTURES / "paper_bounded_queries.sql"


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A project directory with db/schema.sql and db/queries.sql, the current directory."""
    (tmp_path / "db").mkdir()
    shutil.copy(PAPER_SCHEMA, tmp_path / "db" / "schema.sql")
    shutil.copy(UNBOUNDED, tmp_path / "db" / "queries.sql")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_pyproject_tool_piql_gives_files_and_settings(capsys, project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "app"\n\n[tool.piql]\nschema = "db/schema.sql"\n'
        'queries = ["db/queries.sql"]\nformat = "json"\nignore = ["view-rejected"]\n')
    code, out, _ = run(capsys, "lint")
    doc = json.loads(out)
    assert code == 1
    codes = {d["code"] for q in doc["queries"] for d in q["diagnostics"]}
    assert "view-rejected" not in codes and "unbounded" in codes
    assert doc["queries"][1]["diagnostics"][0]["file"] == "db/queries.sql"


def test_piql_toml_and_flags_override_it(capsys, project):
    (project / "piql.toml").write_text(
        'schema = "db/schema.sql"\nqueries = "db/queries.sql"\nignore = ["PQ1"]\n'
        'fail-on = "error"\npartitions = 4\n')
    code, out, _ = run(capsys, "lint")
    assert code == 0 and "error[" not in out
    code, out, _ = run(capsys, "lint", "--ignore", "view-rejected")  # replaces the list
    assert code == 1 and "error[unbounded]" in out
    code, out, _ = run(capsys, "lint", "--format", "json")
    assert json.loads(out)["exit_code"] == 0
    (project / "piql.toml").write_text(
        'schema = "db/schema.sql"\nqueries = "db/queries.sql"\nfail-on = "info"\n'
        'select = ["index", "view"]\n')
    assert run(capsys, "lint")[0] == 0  # no index or view finding among these queries
    assert run(capsys, "lint", "--select", "PQ1")[0] == 1
    assert run(capsys, "lint", "--select", "PQ1", "--fail-on", "error")[0] == 1
    # files on the command line replace the configured ones
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, BOUNDED, "--fail-on", "error")
    assert code == 0 and "4 queries" in out


def test_config_is_found_from_a_subdirectory_and_paths_are_relative_to_it(capsys, project,
                                                                           monkeypatch):
    (project / "piql.toml").write_text('schema = "db/schema.sql"\nqueries = "db/queries.sql"\n')
    (project / "src").mkdir()
    monkeypatch.chdir(project / "src")
    code, out, _ = run(capsys, "lint")
    assert code == 1 and "../db/queries.sql:7:" in out


def test_piql_toml_wins_over_pyproject(capsys, project):
    (project / "pyproject.toml").write_text('[tool.piql]\nschema = "nope.sql"\n')
    (project / "piql.toml").write_text('schema = "db/schema.sql"\nqueries = "db/queries.sql"\n')
    assert run(capsys, "lint")[0] == 1


def test_no_config_and_an_explicit_config(capsys, project):
    (project / "piql.toml").write_text('schema = "db/schema.sql"\nqueries = "db/queries.sql"\n')
    code, _, err = run(capsys, "lint", "--no-config")
    assert code == 2 and "no files to lint" in err
    other = project / "other.toml"
    other.write_text('[tool.piql]\nschema = "db/schema.sql"\nqueries = "db/queries.sql"\n'
                     'select = ["index"]\n')
    code, _, _ = run(capsys, "lint", "--config", other)
    assert code == 0


@pytest.mark.parametrize("text, expected", [
    ('schema = "db/schema.sql"\nqueries = "db/queries.sql"\nfail_on = "warnings"\n',
     "piql.toml:3:1: fail_on: expected error, warning or info, got 'warnings'"),
    ('schema = "db/schema.sql"\nqueries = "db/queries.sql"\n\nselct = ["index"]\n',
     "piql.toml:4:1: selct: unknown setting"),
    ('schema = "db/schema.sql"\nqueries = "db/queries.sql"\nignore = ["hotspt"]\n',
     "piql.toml:3:1: ignore: unknown rule code 'hotspt'; did you mean 'hotspot'?"),
    ('schema = "db/schema.sql"\nqueries = [1]\n', "piql.toml:2:1: queries: expected a file"),
    ('schema = "db/schema.sql"\npartitions = 0\n', "piql.toml:2:1: partitions: expected a "
                                                   "positive integer, got 0"),
    ('schema = "db/schema.sql\n', "piql.toml:1:"),
    ('schema = "db/schema.sql"\n', "no files to lint: give SCHEMA QUERIES..., or set queries "
                                   "in piql.toml"),
])
def test_mistakes_in_the_configuration_are_input_errors(capsys, project, text, expected):
    (project / "piql.toml").write_text(text)
    code, out, err = run(capsys, "lint")
    assert code == 2 and out == ""
    assert f"piql: error: {expected}" in err


def test_no_arguments_through_the_real_entry_point(project):
    (project / "pyproject.toml").write_text(
        '[tool.piql]\nschema = "db/schema.sql"\nqueries = "db/queries.sql"\nformat = "github"\n')
    done = subprocess.run([sys.executable, "-m", "piql", "lint"], capture_output=True,
                          text=True, cwd=project)
    assert done.returncode == 1
    assert done.stdout.startswith("::error file=db/queries.sql,line=7,")
