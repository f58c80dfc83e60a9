"""``piql plan --dialect postgres|sqlite`` prints a migration that runs on an empty database;
afterwards plain SQL writes (psycopg, sqlite3: not piql) keep every maintained view equal
to its definition, and a write breaking a CARDINALITY constraint fails and changes nothing."""
from __future__ import annotations

import random
import sqlite3
from collections import Counter
from fractions import Fraction
from pathlib import Path

import pytest

from piql import sqlgen
from piql.catalog import Table
from piql.cli import main
from piql.planner.application import Plan
from piql.report.migration import build
from piql.planner.trigger_rules import TriggerDialect, delta_select, time_windows
from piql.planner.triggers import compile_triggers
from tests.conftest import FIXTURES, paper_plan_for, plan_text

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# REAL sums, NULL group keys, negatives, AVG and a join with an aggregate
SUMS_SCHEMA = """
CREATE TABLE accounts (id BIGINT PRIMARY KEY, region VARCHAR);
CREATE TABLE payments (
  id BIGINT PRIMARY KEY, account BIGINT NOT NULL, amount REAL, fee REAL, kind VARCHAR,
  FOREIGN KEY (account) REFERENCES accounts (id)
) WITH CARDINALITY (id, 4) PER (account);
"""
SUMS_QUERIES = """
-- name: byKind
SELECT SUM(amount) AS total, COUNT(amount) AS n, AVG(fee) AS avg_fee FROM payments WHERE kind = <kind>

-- name: byRegion
SELECT SUM(p.amount) AS total FROM payments p, accounts a WHERE p.account = a.id AND a.region = <region>

-- name: ofAccount
SELECT p.id, p.amount, a.region FROM payments p, accounts a WHERE p.account = a.id AND a.id = <account>
"""


def sums_plan() -> Plan:
    return plan_text(SUMS_SCHEMA, SUMS_QUERIES)


def example_plan(name: str) -> Plan:
    from piql.language.loader import load_plan

    return load_plan(EXAMPLES / name / "schema.sql", EXAMPLES / name / "queries.sql")


PLANS = {
    "paper": lambda: paper_plan_for(),
    "sums": sums_plan,
    "social": lambda: example_plan("social"),
    "tpcw": lambda: example_plan("tpcw"),
    "odd names": lambda: plan_text((FIXTURES / "odd_names_schema.sql").read_text(),
                                   (FIXTURES / "odd_names_queries.sql").read_text()),
}


def migration(capsys, plan_name: str, dialect: str) -> str:
    """The migration as the command line prints it."""
    files = {"paper": (FIXTURES / "paper_schema.sql", FIXTURES / "paper_queries.sql"),
             "social": (EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql"),
             "tpcw": (EXAMPLES / "tpcw" / "schema.sql", EXAMPLES / "tpcw" / "queries.sql")}
    if plan_name not in files:
        from piql.report.migration import render

        return render(PLANS[plan_name](), dialect)
    code = main(["plan", "--dialect", dialect, *map(str, files[plan_name])])
    out, err = capsys.readouterr()
    assert code in (0, 1) and err == ""
    return out


# -- a database through its own driver -------------------------------------------
class Database:
    """A connection of the database's own driver, writing and reading as any client would."""

    def __init__(self, dialect: TriggerDialect, location: str) -> None:
        self.dialect = dialect
        if dialect == TriggerDialect.SQLITE:
            self.connection = sqlite3.connect(location, isolation_level=None)
            self.connection.execute("PRAGMA foreign_keys = ON")
            self.refused = (sqlite3.IntegrityError,)
        else:
            import psycopg

            self.connection = psycopg.connect(location, autocommit=True)
            self.refused = (psycopg.errors.IntegrityError,)

    def apply(self, script: str) -> None:
        if self.dialect == TriggerDialect.SQLITE:
            self.connection.executescript(script)
        else:
            self.connection.execute(script)  # the whole text, one execute

    def rows(self, statement: str, values=()) -> list[tuple]:
        if self.dialect == TriggerDialect.POSTGRES:
            if not values:
                cursor = self.connection.execute(statement)
                return list(cursor.fetchall()) if cursor.description else []
            statement = statement.replace("%", "%%").replace("?", "%s")
        cursor = self.connection.execute(statement, values)
        return list(cursor.fetchall()) if cursor.description else []

    def write(self, statement: str, values=()) -> bool:
        """Run a write; False when the database refused it."""
        try:
            self.rows(statement, values)
            return True
        except self.refused:
            return False

    def close(self) -> None:
        self.connection.close()


@pytest.fixture
def database(request, tmp_path):
    opened = []

    def open_(dialect: TriggerDialect) -> Database:
        if dialect == TriggerDialect.SQLITE:
            found = Database(dialect, str(tmp_path / "app.db"))
        else:
            url = request.getfixturevalue("postgres_url")
            found = Database(dialect, url)
        opened.append(found)
        return found

    yield open_
    for found in opened:
        found.close()


def q(name: str, dialect: TriggerDialect) -> str:
    return sqlgen.identifier(name, dialect)


# -- random writes by plain SQL ---------------------------------------------------
class Writer:
    """Random inserts, updates and deletes of a plan's base tables through the driver:
    small domains (so rows join and groups collide), NULLs, negatives and REAL values
    whose sums are exact in doubles on SQLite (its triggers add doubles) and hard ones
    (0.1, 1e17) on PostgreSQL."""

    def __init__(self, db: Database, plan: Plan, seed: int) -> None:
        self.db, self.plan, self.random = db, plan, random.Random(seed)
        self.done: Counter = Counter()  # writes the database took, by kind
        hard = db.dialect == TriggerDialect.POSTGRES
        self.reals = [-1.5, 0.25, 2.0, 3.75] + ([0.1, 0.2, 1e17, -1e17] if hard else [])

    def value(self, table: Table, column) -> object:
        if column.nullable and self.random.random() < 0.15:
            return None
        kind = column.type.upper()
        if any(k in kind for k in ("REAL", "DOUBLE", "FLOAT", "NUMERIC", "DECIMAL")):
            return self.random.choice(self.reals)
        if any(k in kind for k in ("INT", "BIGINT", "SERIAL")):
            return self.random.randint(-2, 4)
        if "DATE" in kind or "TIME" in kind:
            return self.random.choice(["2024-01-01", "2024-01-02", "2024-02-01"])
        return self.random.choice(["a", "b", "C", "d'q"])

    def row(self, table: Table) -> dict:
        row = {c.name: self.value(table, c) for c in table.columns}
        for fk in table.foreign_keys:  # mostly a parent that exists
            parents = self.db.rows(f"SELECT {', '.join(q(c, self.db.dialect) for c in fk.ref_columns)} "
                                   f"FROM {q(fk.ref_table, self.db.dialect)}")
            if parents and self.random.random() < 0.9:
                row.update(zip(fk.columns, self.random.choice(parents)))
        return row

    def step(self) -> None:
        d = self.db.dialect
        table = self.random.choice(self.plan.catalog.tables)
        name = q(table.name, d)
        existing = self.db.rows(f"SELECT * FROM {name}")
        kind = self.random.random()
        if kind < 0.55 or not existing:
            row = self.row(table)
            columns = list(row)
            self.done["insert"] += self.db.write(
                f"INSERT INTO {name} ({', '.join(q(c, d) for c in columns)}) VALUES "
                f"({', '.join('?' for _ in columns)})", [row[c] for c in columns])
            return
        old = dict(zip(table.column_names, self.random.choice(existing)))
        where = " AND ".join(f"{q(c, d)} = ?" for c in table.primary_key)
        key = [old[c] for c in table.primary_key]
        if kind < 0.8:
            self.done["delete"] += self.db.write(f"DELETE FROM {name} WHERE {where}", key)
            return
        new = self.row(table)
        changed = self.random.sample(table.column_names, self.random.randint(1, 2))
        sets = ", ".join(f"{q(c, d)} = ?" for c in changed)
        self.done["update"] += self.db.write(f"UPDATE {name} SET {sets} WHERE {where}",
                                             [new[c] for c in changed] + key)


def assert_views_right(db: Database, plan: Plan) -> int:
    """Every maintained view holds exactly its definition's rows over the base tables (an
    exact REAL sum: its exact value rounded, and its hidden text column that exact value).
    Returns the rows compared."""
    compared = 0
    kept = compile_triggers(plan.catalog, plan.ordered_views, db.dialect).maintained
    for view in plan.ordered_views:
        if view.kind == "periodic" or not any(r.name in kept for r in view.rules):
            continue  # periodic views: `piql refresh`
        columns = [c for c, _ in view.stored_columns]
        stored = db.rows(f"SELECT {', '.join(q(c, db.dialect) for c in columns)} "
                         f"FROM {q(view.name, db.dialect)}")
        select = build(view, db.dialect).split(") ", 1)[1]  # the build's SELECT
        expected = db.rows(select)
        assert Counter(map(_plain, stored)) == Counter(map(_plain, expected)), view.name
        compared += len(stored)
    return compared


def assert_epochs_marked(db: Database, plan: Plan) -> None:
    """Every row of a table a time window joins has the epochs of the windowed rows it
    reaches marked for the next refresh (the triggers' mark rules, on PostgreSQL)."""
    triggers = compile_triggers(plan.catalog, plan.ordered_views, db.dialect)
    windows = {w.view: w for ws in time_windows(plan.ordered_views).values() for w in ws}
    for view in plan.ordered_views:
        for rule in view.rules:
            if rule.name not in triggers.maintained or rule.action != "mark" or \
                    rule.event != "insert":
                continue
            table = plan.catalog.table(rule.table)
            select = delta_select(rule, view, table, "NEW", None, db.dialect)
            width = windows[view.name].width
            missing = db.rows(
                f"SELECT m.* FROM {q(table.name, db.dialect)} AS new CROSS JOIN LATERAL "
                f"({select}) AS m WHERE m.{q(rule.delta.select[0].name, db.dialect)} IS NOT NULL "
                f"AND NOT EXISTS (SELECT 1 FROM _piql_dirty_epochs e WHERE e.view = ? AND e.epoch = "
                f"m.{q(rule.delta.select[0].name, db.dialect)} - m.{q(rule.delta.select[0].name, db.dialect)} % {width})",
                [view.name])
            assert missing == [], rule.name


def _plain(row: tuple) -> tuple:
    """Numbers compared by value whatever their Python type (Decimal, int, float); exact
    sums' text by the number it means."""
    out = []
    for value in row:
        if isinstance(value, str) and value[:1] in "-0123456789" and \
                value.replace("-", "", 1).replace(".", "", 1).isdigit():
            value = Fraction(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            value = Fraction(value)
        elif value is not None and type(value).__name__ == "Decimal":
            value = Fraction(value)
        out.append(value)
    return tuple(out)


# -- the tests --------------------------------------------------------------------
@pytest.mark.parametrize("dialect", list(TriggerDialect))
@pytest.mark.parametrize("app", list(PLANS))
def test_migration_applies_and_triggers_keep_views_right(capsys, database, dialect, app):
    plan = PLANS[app]()
    text = migration(capsys, app, dialect.value)
    db = database(dialect)
    writer = Writer(db, plan, seed=sum(map(ord, app)))
    db.apply(text)
    assert_views_right(db, plan)
    filled = 0
    for step in range(1, 151 if app != "tpcw" else 101):
        writer.step()
        if step % 25 == 0:
            filled += assert_views_right(db, plan)
    assert min(writer.done.values()) >= 5 and set(writer.done) == {"insert", "delete", "update"}
    assert filled > 0  # the views held rows while they were compared
    assert_epochs_marked(db, plan)


@pytest.mark.parametrize("dialect", list(TriggerDialect))
def test_views_are_built_from_rows_already_there(database, dialect):
    """The migration's builds read what the tables hold: applied after rows are in (its
    base tables first, then the rest), the views hold them."""
    from piql.report.migration import render

    plan = paper_plan_for()
    text = render(plan, dialect.value)
    head, rest = text.split("-- secondary indexes", 1)
    db = database(dialect)
    db.apply(head)
    d = dialect
    db.write(f"INSERT INTO {q('Documents', d)} VALUES (1, 10, 'x'), (2, NULL, 'y')")
    db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'a', 10), (1, 'b', 11), (2, 'a', NULL)")
    db.apply("-- secondary indexes" + rest)
    assert db.rows(f"SELECT count(*) FROM {q('twoTags_view', d)}")[0][0] == 4  # (a,a) (a,b) (b,b) of doc 1, (a,a) of doc 2: one orientation per pair
    assert sorted(db.rows(f"SELECT tag, cnt FROM {q('docsPerTag', d)}")) == [("a", 2), ("b", 1)]
    assert_views_right(db, plan)


@pytest.mark.parametrize("dialect", list(TriggerDialect))
def test_a_plain_insert_breaking_cardinality_fails_and_changes_nothing(database, dialect):
    from piql.report.migration import render

    plan = paper_plan_for()
    db = database(dialect)
    db.apply(render(plan, dialect.value))
    d = dialect
    assert db.write(f"INSERT INTO {q('Documents', d)} VALUES (1, 5, 'doc')")
    for n in range(10):
        assert db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, ?, 5)", [f"t{n}"])
    before = {t: db.rows(f"SELECT * FROM {q(t, d)}") for t in ("Tags", "docsPerTag", "twoTags_view")}
    try:
        db.rows(f"INSERT INTO {q('Tags', d)} VALUES (1, 'eleventh', 5)")
        raised = None
    except db.refused as err:
        raised = str(err)
    assert raised is not None and "CARDINALITY (tag, 10)" in raised and "Tags" in raised
    # one statement of several rows: the whole statement is refused
    assert not db.write(f"INSERT INTO {q('Tags', d)} VALUES (2, 'ok', 5), (1, 'eleventh', 5)")
    after = {t: db.rows(f"SELECT * FROM {q(t, d)}") for t in before}
    assert after == before
    # moving a tag to the full document by an update is refused too
    assert db.write(f"INSERT INTO {q('Documents', d)} VALUES (2, 6, 'other')")
    assert db.write(f"INSERT INTO {q('Tags', d)} VALUES (2, 'z', 6)")
    assert not db.write(f"UPDATE {q('Tags', d)} SET {q('docId', d)} = 1 WHERE tag = 'z'")
    # the same tag again is no new value: a duplicate key, refused by the key
    assert not db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 't0', 5)")
    assert_views_right(db, plan)


def test_postgres_upserts_and_many_row_statements_keep_views_right(database):
    """ON CONFLICT and statements of many rows through a self-join view: each row is
    maintained as if written alone (BEFORE row triggers), an upsert's update as an update."""
    from piql.report.migration import render

    plan = paper_plan_for()
    d = TriggerDialect.POSTGRES
    db = database(d)
    db.apply(render(plan, d.value))
    db.write(f"INSERT INTO {q('Documents', d)} VALUES (1, 5, 'a'), (2, 6, 'b'), (3, NULL, 'c')")
    db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'x', 1), (1, 'y', 1), (1, 'z', 1), (2, 'x', 2)")
    assert_views_right(db, plan)
    db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'x', 9), (3, 'x', 9) ON CONFLICT DO NOTHING")
    assert_views_right(db, plan)
    db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'y', 70000) ON CONFLICT ({q('docId', d)}, tag) "
             "DO UPDATE SET timestamp = EXCLUDED.timestamp")
    assert_views_right(db, plan)
    db.write(f"UPDATE {q('Documents', d)} SET timestamp = timestamp + 1")
    db.write(f"DELETE FROM {q('Tags', d)} WHERE {q('docId', d)} = 1")
    assert_views_right(db, plan)


def test_postgres_exact_function_is_the_double_exactly(database):
    from piql.planner.triggers_postgres import exact_function

    db = database(TriggerDialect.POSTGRES)
    db.apply(exact_function())
    values = [0.1, -0.2, 1e17, 5e-324, 1.7976931348623157e308, -0.0, 0.0, 3.0, 2.0 ** -1074 * 3]
    for value in values:
        (found,), = db.rows("SELECT piql_exact(?::double precision)", [value])
        assert Fraction(found) == Fraction(value), value


def test_postgres_partitions_staging_rows_as_piql_does(database):
    """A staging row's partition: zlib's CRC-32 of Python's repr of its key, in SQL."""
    import zlib

    from piql.planner.triggers_postgres import crc_function, repr_function

    db = database(TriggerDialect.POSTGRES)
    db.apply(crc_function() + ";\n" + repr_function())
    # the loop a server older than 18 runs instead of its crc32, under a name of its own
    db.apply(crc_function().replace("piql_crc32", "piql_crc32_loop").replace("180000",
                                                                             "2147483647"))
    texts = ["", "a", "it's", 'say "hi"', "both ' and \"", "back\\slash", "tab\tnew\nline\r",
             "\x01\x1f\x7f\x85\xa0\xad", "caf\u00e9 \u65e5\u672c \U0001f600"]
    for crc32 in ("piql_crc32", "piql_crc32_loop"):
        for text in texts:
            (shown, crc), = db.rows(f"SELECT piql_repr(?), {crc32}(convert_to(piql_repr(?), "
                                    "'UTF8'))", [text, text])
            assert shown == repr(text)
            assert crc == zlib.crc32(repr(text).encode())
        for number in (0, -7, 2 ** 63 - 1, -(2 ** 63)):
            (crc,), = db.rows(f"SELECT {crc32}(convert_to('(' || ?::bigint::text || ',)', "
                              "'UTF8'))", [number])
            assert crc == zlib.crc32(repr((number,)).encode())


def test_postgres_refuses_maintained_writes_under_repeatable_read(database):
    """A REPEATABLE READ snapshot is older than the write lock the triggers take: its rules
    would miss rows committed meanwhile, so such a write is refused, changing nothing."""
    import psycopg

    from piql.report.migration import render

    plan = paper_plan_for()
    d = TriggerDialect.POSTGRES
    db = database(d)
    db.apply(render(plan, d.value))
    db.write(f"INSERT INTO {q('Documents', d)} VALUES (1, 5, 'a')")
    db.connection.autocommit = False
    db.rows("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
    with pytest.raises(psycopg.errors.FeatureNotSupported, match="READ COMMITTED"):
        db.rows(f"INSERT INTO {q('Tags', d)} VALUES (1, 'x', 1)")
    db.connection.rollback()
    db.connection.autocommit = True
    assert db.rows(f"SELECT count(*) FROM {q('docsPerTag', d)}") == [(0,)]
    assert db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'x', 1)")  # READ COMMITTED
    assert_views_right(db, plan)


def test_piql_deploy_adopts_a_postgres_database_built_from_the_migration(capsys, database,
                                                                        request):
    """The migration writes piql's metadata: deploying the same plan onto the database
    reuses its tables, views and triggers (rows written before piql came are served, piql's
    own writes are maintained once, by the triggers); another plan is refused."""
    import piql
    from piql.errors import PiqlError

    plan = paper_plan_for()
    db = database(TriggerDialect.POSTGRES)
    db.apply(migration(capsys, "paper", "postgres"))
    d = TriggerDialect.POSTGRES
    assert db.write(f"INSERT INTO {q('Documents', d)} VALUES (1, 10, 'x'), (2, 20, 'y')")
    assert db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'a', 10), (1, 'b', 10)")
    url = request.getfixturevalue("postgres_url")  # the database's, as the fixture made it
    app = piql.load(FIXTURES / "paper_schema.sql", FIXTURES / "paper_queries.sql")
    deployed = app.deploy(url, engine="store")
    try:
        assert not deployed.installed  # adopted, not installed again
        assert [r[0] for r in deployed.query("twoTags", tag1="a", tag2="b").rows] == [1]
        deployed.insert("Tags", docId=2, tag="a", timestamp=20)
        deployed.insert("Tags", docId=2, tag="b", timestamp=20)
        assert db.write(f"INSERT INTO {q('Tags', d)} VALUES (1, 'c', 10)")
        assert sorted(r[0] for r in deployed.query("twoTags", tag1="a", tag2="b").rows) == [1, 2]
        assert_views_right(db, plan)  # nothing maintained twice
    finally:
        deployed.close()
    other = piql.loads("CREATE TABLE Documents (docId BIGINT PRIMARY KEY, x BIGINT);",
                       "-- name: one\nSELECT x FROM Documents WHERE docId = <d>")
    with pytest.raises(PiqlError, match="different plan"):
        other.deploy(url, engine="store")


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_piql_plan_declares_constant_defaults_and_sqlite_fills_them(tmp_path, capsys, dialect):
    schema = tmp_path / "schema.sql"
    schema.write_text("CREATE TABLE items (id BIGINT PRIMARY KEY, qty BIGINT DEFAULT -1 NOT NULL, "
                      "label VARCHAR DEFAULT 'it''s', ok BOOLEAN DEFAULT TRUE, "
                      "at BIGINT DEFAULT now());\n")
    queries = tmp_path / "queries.sql"
    queries.write_text("-- name: one\nSELECT qty FROM items WHERE id = <id>;\n")
    assert main(["plan", "--dialect", dialect, str(schema), str(queries)]) in (0, 1)
    out = capsys.readouterr().out
    assert "DEFAULT -1 NOT NULL" in out and "DEFAULT 'it''s'" in out and "DEFAULT 1" in out
    assert "now()" not in out
    if dialect == "sqlite":  # the DDL runs, and SQLite fills the defaults
        connection = sqlite3.connect(":memory:")
        connection.executescript(out)
        connection.execute("INSERT INTO items (id) VALUES (1)")
        assert connection.execute("SELECT qty, label, ok, at FROM items").fetchall() == [
            (-1, "it's", 1, None)]


@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_a_view_read_through_its_key_index_is_covered_on_sqlite_only(capsys, dialect):
    """TPC-W's title search reads 50 rows of one word in title order: on SQLite their key
    index holds the author's names too (``KeyStorage.COVERING_KEY_INDEX``), so the read
    never looks a row up in the table; PostgreSQL keeps the key index narrow (an
    index-only scan would need the visibility map, which the view's writes keep clearing)."""
    text = migration(capsys, "tpcw", dialect)
    quote = (lambda n: f'"{n}"')
    key = ("itw_word", "i_title", "i_id", "a_id")
    indexed = key + (("a_fname", "a_lname") if dialect == "sqlite" else ())
    nulls = " NULLS NOT DISTINCT" if dialect == "postgres" else ""
    assert (f'CREATE UNIQUE INDEX "_piql_key_search_by_title_view" ON "search_by_title_view" '
            f'({", ".join(map(quote, indexed))}){nulls};') in text
