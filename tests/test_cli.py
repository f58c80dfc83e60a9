"""The ``piql`` command line: exit codes, formats, errors on stderr, explain and plan."""
from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from piql.cli import main
from piql.language.schema import load_schema
from tests.conftest import FIXTURES, PAPER_QUERIES, PAPER_SCHEMA

BOUNDED = FIXTURES / "paper_bounded_queries.sql"
UNBOUNDED = FIXTURES / "paper_unbounded_queries.sql"
FORMATS = ["text", "json", "sarif", "github"]
DIALECTS = ["sqlite", "duckdb", "spark", "postgres"]
ERROR_LINE = re.compile(r"^piql: error: (?P<file>.+):(?P<line>\d+):(?P<col>\d+): (?P<message>.+)$")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def input_error(err: str, path: Path | str) -> tuple[int, int, str]:
    """The single ``piql: error: file:line:col: message`` line on stderr."""
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    match = ERROR_LINE.match(lines[0])
    assert match, lines[0]
    assert match["file"] == str(path)
    return int(match["line"]), int(match["col"]), match["message"]


# -- lint: exit codes ------------------------------------------------------------------

def test_lint_exits_0_when_every_query_is_bounded(capsys):
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, BOUNDED)
    assert code == 0
    assert err == ""
    assert "4 queries: SI-0 1, SI-1 1, SI-2 2, SI-3 0, unbounded 0" in out


def test_lint_exits_1_when_some_query_is_unbounded(capsys):
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, UNBOUNDED)
    assert code == 1
    assert "unbounded 2" in out
    assert re.search(r"^byText\s+unbounded", out, re.M)
    assert f"{UNBOUNDED}:10:26: error[unsupported] either: ILIKE is not supported" in out


def test_lint_of_the_paper_fixture_runs(capsys):
    code, out, _ = run(capsys, "lint", PAPER_SCHEMA, PAPER_QUERIES)
    assert code in (0, 1)  # popularTags' level is not settled here
    assert re.search(r"^twoTags\s+SI-2\s+ops <= 5", out, re.M)


def test_malformed_schema_exits_2_with_a_located_error(capsys, tmp_path):
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE Documents (docId BIGINT, PRIMARY KEY (docId));\n"
                      "CREATE TABLE Tags (docId BIGINT tag VARCHAR);\n")
    code, out, err = run(capsys, "lint", schema, BOUNDED)
    assert code == 2
    assert out == ""
    line, column, message = input_error(err, schema)
    assert line == 2 and column >= 1 and message


def test_schema_error_about_meaning_exits_2(capsys, tmp_path):
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE Tags (docId BIGINT, PRIMARY KEY (nope));\n")
    code, _, err = run(capsys, "lint", schema, BOUNDED)
    assert code == 2
    line, column, message = input_error(err, schema)
    assert line == 1 and "nope" in message


def test_malformed_queries_file_exits_2_with_a_located_error(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: ok\nSELECT * FROM Tags WHERE docId = <d>\n"
                       "-- name: bad\nSELECT * FROM Nope WHERE docId = <d>\n")
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 2
    assert out == ""
    assert input_error(err, queries) == (4, 15, "unknown table 'Nope' (known tables: Documents, Tags)")


def test_every_query_error_is_printed(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: a\nSELECT * FROM Nope\n-- name: b\nSELECT nothing FROM Tags\n")
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 2
    lines = err.splitlines()
    assert [ERROR_LINE.match(line)["line"] for line in lines] == ["2", "4"]


def test_sql_syntax_error_exits_2(capsys, tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: q\nSELECT * FROM Tags WHERE tag = = <t>\n")
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, queries)
    assert code == 2
    line, column, message = input_error(err, queries)
    assert (line, column) == (2, 32) and "syntax error" in message.lower()


@pytest.mark.parametrize("which", ["schema", "queries"])
def test_missing_file_exits_2(capsys, tmp_path, which):
    missing = tmp_path / "missing.sql"
    argv = [missing, BOUNDED] if which == "schema" else [PAPER_SCHEMA, missing]
    code, out, err = run(capsys, "lint", *argv)
    assert code == 2 and out == ""
    line, column, message = input_error(err, missing)
    assert (line, column) == (1, 1)
    assert "cannot read" in message and which in message


def test_a_directory_instead_of_a_file_exits_2(capsys, tmp_path):
    code, _, err = run(capsys, "lint", PAPER_SCHEMA, tmp_path)
    assert code == 2
    input_error(err, tmp_path)


@pytest.mark.parametrize("argv", [
    [], ["lint", "--format", "xml", "s", "q"], ["plan", "--dialect", "oracle", "s", "q"],
    ["frobnicate"],
])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    assert "usage:" in capsys.readouterr().err


# -- lint: formats and --output ----------------------------------------------------------

@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format(capsys, fmt):
    code, out, err = run(capsys, "lint", "--format", fmt, PAPER_SCHEMA, BOUNDED)
    assert code == 0
    if fmt == "github":  # only findings, and these queries have none; the summary apart
        assert out == "" and err.startswith("piql: 4 queries: SI-0 1, SI-1 1, SI-2 2")
        return
    assert err == ""
    assert out.endswith("\n")
    if fmt == "text":
        assert re.search(r"^twoTags\s+SI-2\s+ops <= 5", out, re.M)
    elif fmt == "json":
        document = json.loads(out)
        assert document["format_version"] == 1
        assert [q["name"] for q in document["queries"]] == [
            "tagsOfDoc", "newestWithTag", "twoTags", "countTags"]
        assert document["summary"] == {"SI-0": 1, "SI-1": 1, "SI-2": 2, "SI-3": 0, "unbounded": 0}
    elif fmt == "sarif":
        document = json.loads(out)
        assert document["version"] == "2.1.0"
        assert document["runs"][0]["results"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_keeps_the_exit_code_of_unbounded_queries(capsys, fmt):
    code, out, _ = run(capsys, "lint", "--format", fmt, PAPER_SCHEMA, UNBOUNDED)
    assert code == 1
    if fmt == "github":
        assert f"::error file={UNBOUNDED},line=10,col=26," in out


@pytest.mark.parametrize("fmt", FORMATS)
def test_output_writes_the_report_to_a_file(capsys, tmp_path, fmt):
    _, expected, _ = run(capsys, "lint", "--format", fmt, PAPER_SCHEMA, BOUNDED)
    report = tmp_path / f"report.{fmt}"
    code, out, err = run(capsys, "lint", "--format", fmt, "--output", report, PAPER_SCHEMA, BOUNDED)
    assert code == 0
    assert out == "" and (err == "" or fmt == "github")
    assert report.read_text() == expected


def test_short_output_option_and_exit_code_of_unbounded(capsys, tmp_path):
    report = tmp_path / "report.json"
    code, out, _ = run(capsys, "lint", "--format", "json", "-o", report, PAPER_SCHEMA, UNBOUNDED)
    assert code == 1 and out == ""
    assert json.loads(report.read_text())["summary"]["unbounded"] == 2


# -- explain -----------------------------------------------------------------------------

def test_explain_two_tags_shows_plan_bounds_and_reasoning(capsys):
    code, out, err = run(capsys, "explain", PAPER_SCHEMA, PAPER_QUERIES, "twoTags")
    assert code == 0 and err == ""
    assert out.splitlines()[0] == "twoTags: SI-2, ops <= 5"
    for expected in ("SI-2", "A_eq", "P_view", "Algorithm 4", "delta queries", "twoTags_view",
                     "ops <= 5", "t1.docId = t2.docId"):
        assert expected in out, expected
    assert "|view| <= 10 x |Tags|" in out
    assert re.search(r"ClusteredScan twoTags_view .*\[rows <= 5, ops <= 5\]", out)


def test_explain_is_case_insensitive_on_the_name(capsys):
    code, out, _ = run(capsys, "explain", PAPER_SCHEMA, BOUNDED, "TAGSOFDOC")
    assert code == 0 and out.startswith("tagsOfDoc: SI-0, ops <= 10")


def test_explain_an_index_query(capsys):
    code, out, _ = run(capsys, "explain", PAPER_SCHEMA, BOUNDED, "newestWithTag")
    assert code == 0
    assert "SI-1" in out and "idx_tags_tag_timestamp on Tags(tag, timestamp)" in out


def test_explain_an_unbounded_query_says_why_and_exits_1(capsys):
    code, out, _ = run(capsys, "explain", PAPER_SCHEMA, UNBOUNDED, "byText")
    assert code == 1
    assert out.startswith("byText: unbounded, no bound")
    assert "error[unbounded]" in out and "hint:" in out


def test_explain_a_rejected_view_shows_the_attempt(capsys, tmp_path):
    """Without CARDINALITY on Tags, twoTags' view is refused; explain still shows Phases 1-2
    and where Algorithm 4 got stuck."""
    from tests.conftest import paper_schema_text

    schema = tmp_path / "schema.sql"
    schema.write_text(paper_schema_text(cardinality=False))
    code, out, _ = run(capsys, "explain", schema, PAPER_QUERIES, "twoTags")
    assert code == 1 and out.startswith("twoTags: unbounded")
    for section in ("equivalence classes:", "A_view (view key, in order):",
                    "dependencies (§4.1):", "Algorithm 4 from t1 (Tags):"):
        assert section in out
    assert "free: t2.tag, t2.timestamp" in out
    assert "error[view-rejected]" in out


def test_explain_an_unknown_query_exits_2_naming_the_known_ones(capsys):
    code, out, err = run(capsys, "explain", PAPER_SCHEMA, BOUNDED, "nope")
    assert code == 2 and out == ""
    assert "Traceback" not in err
    assert err.startswith("piql: error: ")
    assert "no query named 'nope'" in err
    for name in ("tagsOfDoc", "newestWithTag", "twoTags", "countTags"):
        assert name in err


def test_explain_with_a_malformed_queries_file_exits_2(capsys, tmp_path):
    queries = tmp_path / "q.sql"
    queries.write_text("SELECT * FROM Tags\n")
    code, _, err = run(capsys, "explain", PAPER_SCHEMA, queries, "q")
    assert code == 2
    assert input_error(err, queries)[:2] == (1, 1)


# -- plan ----------------------------------------------------------------------------------

def statements(script: str) -> list[str]:
    """Split a plan's output into statements (comments kept with the statement that follows)."""
    found, buffer = [], ""
    for line in script.splitlines(keepends=True):
        buffer += line
        if sqlite3.complete_statement(buffer):
            found.append(buffer.strip())
            buffer = ""
    assert not [l for l in buffer.splitlines() if l.strip() and not l.startswith("--")], buffer
    return found


def body(statement: str) -> str:
    """The statement without its leading comment lines."""
    lines = statement.splitlines()
    while lines and (not lines[0].strip() or lines[0].lstrip().startswith("--")):
        lines.pop(0)
    return "\n".join(lines).strip()


def base_tables() -> list[str]:
    catalog = load_schema(PAPER_SCHEMA)
    return [f"CREATE TABLE {t.name} ({', '.join(f'{c.name} {c.type}' for c in t.columns)}, "
            f"PRIMARY KEY ({', '.join(t.primary_key)}))" for t in catalog.tables]


DOCUMENTS = [(1, 300, "one"), (2, 200, "two"), (3, 100, "three")]
TAGS = [(1, "a", 300), (1, "b", 300), (2, "a", 200), (2, "b", 200), (3, "a", 100)]


def plan_output(capsys, dialect: str, queries: Path = BOUNDED) -> str:
    code, out, err = run(capsys, "plan", "--dialect", dialect, PAPER_SCHEMA, queries)
    assert err == ""
    assert code == (0 if queries == BOUNDED else code)
    return out


@pytest.mark.parametrize("dialect", DIALECTS)
def test_plan_prints_indexes_views_and_rules(capsys, dialect):
    out = plan_output(capsys, dialect)
    assert out.startswith("-- piql plan for ")
    assert dialect in out.splitlines()[0]
    q = "`" if dialect == "spark" else '"'  # every name quoted in the dialect
    assert re.search(rf"^CREATE TABLE {q}twoTags_view{q} ", out, re.M)
    assert re.search(rf"^CREATE TABLE {q}docsPerTag{q} ", out, re.M)
    if dialect == "spark":
        assert not re.search(r"^CREATE INDEX", out, re.M)
        assert "idx_tags_tag_timestamp" in out  # named, kept by the serving store
    else:
        assert re.search(r'^CREATE INDEX "idx_tags_tag_timestamp" ON "Tags" ?\("tag", "timestamp"\)',
                         out, re.M)
    for event in ("insert", "delete"):
        for rule in ("Tags_t1", "Tags_t2", "Documents_d"):
            assert f"twoTags_view_on_{event}_{rule}" in out
    assert "-- twoTags: SI-2, ops <= 5" in out


def test_plan_of_the_paper_fixture_in_every_dialect(capsys):
    for dialect in DIALECTS:
        code, out, err = run(capsys, "plan", "--dialect", dialect, PAPER_SCHEMA, PAPER_QUERIES)
        assert code in (0, 1) and err == "" and re.search(r"CREATE TABLE .twoTags_view. ", out)


def test_plan_default_dialect_is_sqlite(capsys):
    code, out, _ = run(capsys, "plan", PAPER_SCHEMA, BOUNDED)
    assert code == 0 and "(sqlite)" in out.splitlines()[0]


def test_plan_with_unbounded_queries_exits_1(capsys):
    code, out, _ = run(capsys, "plan", PAPER_SCHEMA, UNBOUNDED)
    assert code == 1
    assert "-- byText: unbounded" in out


def sqlite_database() -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    for statement in base_tables():
        con.execute(statement)
    con.executemany("INSERT INTO Documents VALUES (?, ?, ?)", DOCUMENTS)
    con.executemany("INSERT INTO Tags VALUES (?, ?, ?)", TAGS)
    return con


@pytest.mark.parametrize("queries", [BOUNDED, PAPER_QUERIES], ids=["bounded", "paper"])
def test_sqlite_plan_is_a_migration_of_an_empty_database(capsys, queries):
    out = plan_output(capsys, "sqlite", queries)
    con = sqlite3.connect(":memory:")
    for statement in statements(out):
        con.execute(statement)
    objects = {row[0] for row in con.execute("SELECT name FROM sqlite_master")}
    assert {"Documents", "Tags", "twoTags_view", "docsPerTag", "idx_tags_tag_timestamp",
            "piql_Tags_insert"} <= objects


def test_sqlite_plan_keeps_views_for_plain_writes_and_answers_two_tags(capsys):
    """Rows written by plain SQL after the migration reach the views (its triggers)."""
    out = plan_output(capsys, "sqlite")
    con = sqlite3.connect(":memory:")
    con.executescript(out)
    con.executemany("INSERT INTO Documents VALUES (?, ?, ?)", DOCUMENTS)
    con.executemany("INSERT INTO Tags VALUES (?, ?, ?)", TAGS)
    rows = con.execute("SELECT t1_tag, t2_tag, timestamp, docId FROM twoTags_view "
                       "WHERE t1_tag = 'a' AND t2_tag = 'b' ORDER BY timestamp").fetchall()
    assert rows == [("a", "b", 200, 2), ("a", "b", 300, 1)]
    assert con.execute("SELECT tag, cnt FROM docsPerTag ORDER BY tag").fetchall() == [
        ("a", 3), ("b", 2)]
    lines = out.splitlines()

    def query(name: str) -> str:  # each query is printed as a comment under its header
        return lines[lines.index(next(l for l in lines if l.startswith(f"-- {name}:"))) + 1][5:]

    assert con.execute(query("twoTags"), {"tag1": "a", "tag2": "b"}).fetchall() == [(2,), (1,)]
    assert con.execute(query("countTags"), {"tag": "a"}).fetchall() == [(3,)]


@pytest.mark.parametrize("queries", [BOUNDED, PAPER_QUERIES], ids=["bounded", "paper"])
def test_duckdb_plan_create_statements_execute(capsys, queries):
    duckdb = pytest.importorskip("duckdb")
    out = plan_output(capsys, "duckdb", queries)
    con = duckdb.connect()
    for statement in base_tables():
        con.execute(statement)
    con.executemany("INSERT INTO Documents VALUES (?, ?, ?)", DOCUMENTS)
    con.executemany("INSERT INTO Tags VALUES (?, ?, ?)", TAGS)
    parts = [body(s) for s in statements(out)]
    tables = [s for s in parts if s.upper().startswith("CREATE TABLE")]
    assert len(tables) >= 2
    for statement in [s for s in parts if s.upper().startswith("CREATE")]:
        con.execute(statement)
    for statement in [s for s in parts if s.upper().startswith("INSERT INTO")]:
        con.execute(statement)  # the initial build of each view from existing data
    rows = con.execute("SELECT docId FROM twoTags_view WHERE t1_tag = 'a' AND t2_tag = 'b' "
                       "ORDER BY timestamp").fetchall()
    assert rows == [(2,), (1,)]


# -- a real process ----------------------------------------------------------------------

def piql(*argv, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "piql", *map(str, argv)], capture_output=True,
                          text=True, cwd=cwd, timeout=120)


def test_python_dash_m_piql_lints(tmp_path):
    done = piql("lint", "--format", "json", PAPER_SCHEMA, BOUNDED)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert json.loads(done.stdout)["summary"]["unbounded"] == 0


def test_python_dash_m_piql_input_errors_have_no_traceback(tmp_path):
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: q\nSELECT * FROM Tags WHERE tag = <t> AND nope = 1\n")
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE (x INT);\n")
    for argv, path in [(("lint", "schema.sql", PAPER_QUERIES), "schema.sql"),
                       (("lint", PAPER_SCHEMA, "queries.sql"), "queries.sql"),
                       (("lint", PAPER_SCHEMA, "missing.sql"), "missing.sql"),
                       (("explain", PAPER_SCHEMA, "queries.sql", "q"), "queries.sql")]:
        done = piql(*argv, cwd=tmp_path)
        assert done.returncode == 2, (argv, done.stderr)
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
        assert re.match(rf"^piql: error: {re.escape(path)}:\d+:\d+: \S", done.stderr), done.stderr
    done = piql("explain", PAPER_SCHEMA, BOUNDED, "nope")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "no query named 'nope'" in done.stderr


def test_social_plan_shows_staging_builds_with_their_partition_column(capsys):
    social = Path(__file__).parent.parent / "examples" / "social"
    code, out, err = run(capsys, "plan", "--dialect", "sqlite", social / "schema.sql",
                         social / "queries.sql")
    assert err == ""
    # a key that may hold NULL (createdAt) is a unique index beside the table, not its
    # PRIMARY KEY: the plan prints what the runtime creates
    staging = re.findall(r'^CREATE TABLE "(\w+Staging)" \(("partition" INTEGER, .*?)(?:, PRIMARY KEY|\);)',
                         out, re.M)
    assert staging
    for name, columns in staging:
        names = ", ".join(c.split()[0] for c in columns.split(", "))
        assert f'-- initial build (piql fills partition per row): INSERT INTO "{name}" ({names}) ' \
               f"SELECT <partition>, " in out
        assert not re.search(rf'^INSERT INTO "{name}"', out, re.M)


# -- no traceback for a user mistake about the store or a data file (issue 12) ----------

def store_state(path: Path) -> dict[str, list]:
    con = sqlite3.connect(path)
    try:
        names = [n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: sorted(con.execute(f'SELECT * FROM "{n}"').fetchall(), key=repr) for n in names}
    finally:
        con.close()


def bad_load_files(tmp_path: Path) -> dict[str, tuple[str, str]]:
    """--load value and the start of the message, per mistake."""
    (tmp_path / "folder").mkdir()
    files = {
        "abc.csv": b"docId,timestamp,text\nabc,1,x\n",
        "ragged.csv": b"docId,timestamp,text\n1,1,x,extra\n",
        "latin.csv": "docId,timestamp,text\n1,1,caf\u00e9\n".encode("latin-1"),
        "binary.csv": bytes(range(256)),
        "bad.parquet": b"PAR1 not really",
    }
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    return {
        "missing": ("Documents=missing.csv", "--load Documents=missing.csv: missing.csv: no such file"),
        "directory": ("Documents=folder", "folder: is a directory, not a CSV or Parquet file"),
        "not an integer": ("Documents=abc.csv", "abc.csv:2:1: Documents.docId is BIGINT; got 'abc'"),
        "ragged": ("Documents=ragged.csv", "ragged.csv:2:1: row has 4 fields, the header has 3"),
        "latin-1": ("Documents=latin.csv", "latin.csv:2:8: not UTF-8 text (byte 0xe9)"),
        "binary": ("Documents=binary.csv", "binary.csv:2:118: not UTF-8 text (byte 0x80)"),
        "bad parquet": ("Documents=bad.parquet", "bad.parquet: not a readable Parquet file"),
        "unknown table": ("Nope=abc.csv", "--load Nope=abc.csv: no table named 'Nope'"),
    }


@pytest.mark.parametrize("kind", ["missing", "directory", "not an integer", "ragged", "latin-1",
                                  "binary", "bad parquet", "unknown table"])
def test_a_bad_load_file_exits_2_and_changes_no_store(capsys, tmp_path, monkeypatch, kind):
    monkeypatch.chdir(tmp_path)
    load, message = bad_load_files(tmp_path)[kind]
    assert run(capsys, "deploy", PAPER_SCHEMA, PAPER_QUERIES, "--db", "old.db", "--engine",
               "store")[0] == 0
    before = store_state(tmp_path / "old.db")
    for db in ("old.db", "new.db"):
        code, out, err = run(capsys, "deploy", PAPER_SCHEMA, PAPER_QUERIES, "--db", db,
                             "--engine", "store", "--load", load)
        assert code == 2 and "Traceback" not in err
        assert err.startswith(f"piql: error: {message}"), err
    assert store_state(tmp_path / "old.db") == before
    assert not (tmp_path / "new.db").exists()  # a failed deploy --load leaves no store behind


def test_lint_explain_and_plan_take_the_partitions_the_plan_is_made_for(capsys):
    social = Path(__file__).parent.parent / "examples" / "social"
    files = (social / "schema.sql", social / "queries.sql")
    code, out, _ = run(capsys, "lint", *files, "--format", "json", "--partitions", "4")
    staged = [v for v in json.loads(out)["views"] if v["kind"] in ("staging", "periodic")]
    assert staged and {v["partitions"] for v in staged} == {4}
    _, out, _ = run(capsys, "plan", *files, "--partitions", "4")
    assert "-- rows are spread over 4 partitions" in out
    code, out, _ = run(capsys, "explain", *files, "trending", "--partitions", "4")
    assert code == 0 and "into 4 partitions" in out
    code, out, err = run(capsys, "lint", *files, "--partitions", "0")
    assert code == 2 and out == ""
    assert err == "piql: error: --partitions expects a positive integer, got 0\n"


def test_query_parameters_take_the_type_of_the_column_they_are_compared_with(capsys, tmp_path):
    """TINYINT and NUMERIC columns hold numbers: the command line read such parameters as
    text (its own list of type names had drifted from the store's), which the store then
    refused as not of the column's type."""
    schema, queries = tmp_path / "schema.sql", tmp_path / "queries.sql"
    schema.write_text("CREATE TABLE Items (id TINYINT, code NUMERIC, PRIMARY KEY (id, code));\n")
    queries.write_text("-- name: item\nSELECT id, code FROM Items WHERE id = <id> AND code = <code>\n")
    (tmp_path / "items.csv").write_text("id,code\n1,2.5\n2,3\n")
    db = tmp_path / "items.db"
    assert run(capsys, "deploy", schema, queries, "--db", db, "--engine", "store",
               "--load", f"Items={tmp_path / 'items.csv'}")[0] == 0
    code, out, err = run(capsys, "query", schema, queries, "--db", db, "--engine", "store",
                         "item", "id=1", "code=2.5")
    assert code == 0, err
    assert "1 rows" in out
    code, _, err = run(capsys, "query", schema, queries, "--db", db, "--engine", "store",
                       "item", "id=one", "code=2.5")
    assert code == 2 and "parameter <id> is compared with a TINYINT column; 'one' is not one" in err


def test_query_parameters_named_as_the_query_writes_them(capsys, tmp_path):
    """A ``:uid`` or ``$1`` query's parameter may be given as the query writes it, or in
    another case; a value of the wrong type is reported under the name the user gave."""
    schema, queries = tmp_path / "schema.sql", tmp_path / "queries.sql"
    schema.write_text("CREATE TABLE users (userId BIGINT PRIMARY KEY, age INTEGER);\n")
    queries.write_text("-- name: named\nSELECT age FROM users WHERE userId = :uid;\n"
                       "-- name: numbered\nSELECT age FROM users WHERE userId = $1;\n")
    (tmp_path / "users.csv").write_text("userId,age\n7,40\n")
    db = tmp_path / "users.db"
    assert run(capsys, "deploy", schema, queries, "--db", db, "--engine", "store",
               "--load", f"users={tmp_path / 'users.csv'}")[0] == 0
    for query, given in (("named", ":uid"), ("named", "UID"), ("named", "uid"),
                         ("numbered", "$1"), ("numbered", "p1")):
        code, out, err = run(capsys, "query", schema, queries, "--db", db, "--engine", "store",
                             query, f"{given}=7")
        assert code == 0 and "40" in out and "1 rows" in out, err
    code, _, err = run(capsys, "query", schema, queries, "--db", db, "--engine", "store",
                       "named", ":uid=seven")
    assert code == 2
    assert err == ("piql: error: parameter :uid (<uid> of named) is compared with a BIGINT "
                   "column; 'seven' is not one\n")
    code, _, err = run(capsys, "query", schema, queries, "--db", db, "--engine", "store",
                       "numbered", "$1=seven")
    assert code == 2 and "parameter $1 (<p1> of numbered) is compared with a BIGINT" in err


@pytest.mark.parametrize("kind", ["directory", "missing directory", "not sqlite"])
def test_a_bad_store_path_exits_2(capsys, tmp_path, kind):
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("not a database\n" * 100)
    db, message = {
        "directory": (tmp_path / "folder", "is a directory; a store is one SQLite file"),
        "missing directory": (tmp_path / "nowhere" / "x.db", "the directory"),
        "not sqlite": (tmp_path / "notes.txt", "is not a SQLite database"),
    }[kind]
    for command in (["deploy"], ["query", "countTags", "tag=a"], ["check"], ["refresh"]):
        code, _, err = run(capsys, command[0], PAPER_SCHEMA, PAPER_QUERIES, "--db", db,
                           *command[1:])
        assert code == 2 and "Traceback" not in err and message in err, err
        assert err.startswith(f"piql: error: {db}")
    assert (tmp_path / "notes.txt").read_text() == "not a database\n" * 100


@pytest.mark.parametrize("target", ["folder", "nowhere/report.txt"])
def test_lint_output_to_a_bad_path_exits_2(capsys, tmp_path, target):
    (tmp_path / "folder").mkdir()
    code, out, err = run(capsys, "lint", PAPER_SCHEMA, BOUNDED, "--output", tmp_path / target)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"--output {tmp_path / target}: cannot write the report" in err


def test_busy_timeout_option_reaches_the_store(capsys, tmp_path):
    db = tmp_path / "t.db"
    code, out, err = run(capsys, "deploy", PAPER_SCHEMA, PAPER_QUERIES, "--db", db,
                         "--busy-timeout", "0.25")
    assert code == 0, err
    from piql.cli import _deployment, build_parser

    args = build_parser().parse_args(["check", str(PAPER_SCHEMA), str(PAPER_QUERIES), "--db",
                                      str(db), "--busy-timeout", "0.25"])
    deployment = _deployment(args)
    assert deployment.store.busy_timeout == 0.25
    assert deployment.store.sql("PRAGMA busy_timeout") == [(250,)]
    deployment.close()


def test_deploy_query_refresh_check_accept_a_postgresql_uri(capsys, tmp_path, postgres_stores):
    """Every command that takes a store takes a PostgreSQL URI where it takes a file."""
    url = postgres_stores()
    (tmp_path / "docs.csv").write_text("docId,timestamp,text\n1,10,one\n2,20,two\n")
    (tmp_path / "tags.csv").write_text("docId,tag,timestamp\n1,a,10\n1,b,10\n2,a,20\n2,b,20\n")
    code, out, err = run(capsys, "deploy", PAPER_SCHEMA, PAPER_QUERIES, "--db", url,
                         "--load", f"Documents={tmp_path / 'docs.csv'}",
                         "--load", f"Tags={tmp_path / 'tags.csv'}")
    assert code == 0, err
    assert "loaded 4 rows into Tags" in out and "twoTags_view: ok" in out
    code, out, err = run(capsys, "query", PAPER_SCHEMA, PAPER_QUERIES, "--db", url,
                         "twoTags", "tag1=a", "tag2=b")
    assert code == 0, err
    assert "2 rows" in out
    assert run(capsys, "refresh", PAPER_SCHEMA, PAPER_QUERIES, "--db", url)[0] == 0
    code, out, err = run(capsys, "check", PAPER_SCHEMA, PAPER_QUERIES, "--db", url)
    assert code == 0 and "docsPerTag: ok" in out, err
    code, _, err = run(capsys, "deploy", PAPER_SCHEMA, BOUNDED, "--db", url)
    assert code == 2 and "deployed with a different plan" in err and "Traceback" not in err


def test_an_unreachable_postgresql_uri_exits_2_without_its_password(capsys, tmp_path):
    url = f"postgresql://piql:s3cret@/nowhere?host={tmp_path}"
    code, _, err = run(capsys, "query", PAPER_SCHEMA, PAPER_QUERIES, "--db", url,
                       "countTags", "tag=a")
    assert code == 2 and "cannot open the store" in err and "Traceback" not in err
    assert "s3cret" not in err and "piql:***@" in err


def test_spark_settings_and_masters_are_checked_before_spark_starts(capsys, tmp_path):
    """``--spark-conf`` takes KEY=VALUE; a SQLite store on a remote master is one clear
    sentence (its executors could not open the file), exit 2, no traceback."""
    db = tmp_path / "app.db"
    code, _, err = run(capsys, "check", PAPER_SCHEMA, PAPER_QUERIES, "--db", db,
                       "--engine", "spark", "--spark-conf", "spark.executor.memory")
    assert code == 2 and "--spark-conf 'spark.executor.memory': expected KEY=VALUE" in err
    code, _, err = run(capsys, "check", PAPER_SCHEMA, PAPER_QUERIES, "--db", db, "--engine",
                       "spark", "--spark-master", "spark://head:7077",
                       "--spark-conf", "spark.executor.memory=2g")
    assert code == 2 and "only a local Spark master" in err and "Traceback" not in err


def test_refresh_since_a_time_computes_only_the_epochs_from_it(capsys, tmp_path):
    """``--since`` takes milliseconds or an ISO 8601 time (UTC unless it names an offset)
    and leaves older marked epochs for a refresh without it; a bad time is an input
    error that refreshes nothing."""
    from tests.runtime.test_refresh import HOT_TAGS, QA

    hour = 3_600_000
    schema, queries, db = tmp_path / "qa.sql", tmp_path / "qa_queries.sql", tmp_path / "qa.db"
    schema.write_text(QA)
    queries.write_text(HOT_TAGS)
    (tmp_path / "q.csv").write_text(f"id,title,created_at\n1,a,{hour + 5}\n2,b,{4 * hour + 1}\n")
    (tmp_path / "t.csv").write_text("question_id,tag\n1,x\n2,y\n")
    files = [schema, queries, "--db", db, "--engine", "store", "--partitions", "2"]
    code, _, err = run(capsys, "deploy", *files, "--load", f"questions={tmp_path / 'q.csv'}",
                       "--load", f"question_tags={tmp_path / 't.csv'}")
    assert code == 0, err

    def hot(at: int) -> str:
        code, out, err = run(capsys, "query", *files, "hotTags", f"hour={at}")
        assert code == 0, err
        return out

    for bad in ("yesterday", "2026-13-01", "1.5"):
        code, _, err = run(capsys, "refresh", *files, "--since", bad)
        assert code == 2 and "--since: expected milliseconds" in err and "Traceback" not in err
    code, _, err = run(capsys, "refresh", *files, "--since", str(2 ** 63))
    assert code == 2 and "since_ms is a time in milliseconds" in err and "Traceback" not in err
    assert "0 rows" in hot(4 * hour)  # nothing refreshed by the refused ones
    code, out, err = run(capsys, "refresh", *files, "--since", "1970-01-01T05:00:30+01:00")
    assert code == 0 and "hotTags:" in out, err
    assert "0 rows" in hot(hour) and "1 row" in hot(4 * hour)
    assert run(capsys, "refresh", *files, "--since", str(hour))[0] == 0  # milliseconds
    assert "1 row" in hot(hour)
