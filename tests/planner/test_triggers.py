"""Delta rules compiled to triggers (planner/triggers.py): what the SQL says, without a
database (tests/report/test_migration.py runs it on PostgreSQL and SQLite)."""
from __future__ import annotations

import re

import pytest

from piql.planner.naming import WRITE_LOCK_KEY
from piql.planner.trigger_rules import TriggerDialect, delta_select
from piql.planner.triggers import compile_triggers
from piql.planner.views import ViewKind
from tests.conftest import FIXTURES, paper_plan_for, plan_text


@pytest.fixture(scope="module")
def paper():
    return paper_plan_for()


def compiled(plan, dialect):
    return compile_triggers(plan.catalog, plan.ordered_views, dialect)


@pytest.mark.parametrize("dialect", list(TriggerDialect))
def test_every_rule_of_every_incrementally_maintained_view_is_in_a_trigger(paper, dialect):
    triggers = compiled(paper, dialect)
    rules = {r.name for v in paper.views for r in v.rules}
    assert triggers.maintained == rules  # the paper's views are all IMVs
    text = "\n".join(triggers.statements)
    for rule in rules:
        assert f"-- {rule}:" in text


def test_postgres_runs_one_before_row_trigger_per_table_under_the_write_lock(paper):
    triggers = compiled(paper, TriggerDialect.POSTGRES)
    created = [s for s in triggers.statements if s.startswith("CREATE TRIGGER")]
    assert created == [
        f'CREATE TRIGGER "piql_{t}_write" BEFORE INSERT OR UPDATE OR DELETE ON "{t}" FOR EACH ROW '
        f'EXECUTE FUNCTION "piql_{t}_write"()' for t in ("Documents", "Tags")]
    function = next(s for s in triggers.statements if '"piql_Tags_write"() RETURNS trigger' in s)
    assert f"pg_advisory_xact_lock({WRITE_LOCK_KEY}, hashtext(TG_TABLE_SCHEMA))" in function
    # a row whose key is taken is left to the key (an error) or to ON CONFLICT
    assert 'EXISTS (SELECT 1 FROM "Tags" WHERE "docId" = NEW."docId" AND "tag" = NEW."tag")' \
        in function
    assert triggers.preamble and "piql_exact" in triggers.preamble[0]


def test_a_self_join_reads_the_table_without_the_deleted_row(paper):
    """A BEFORE trigger still sees the row it deletes; the rules read the state without it."""
    view = next(v for v in paper.views if v.name == "twoTags_view")
    rule = next(r for r in view.rules if r.name == "twoTags_view_on_delete_Tags_t1")
    tags = paper.catalog.table("Tags")
    sql = delta_select(rule, view, tags, "OLD", "OLD", TriggerDialect.POSTGRES)
    assert 'NOT ("t2"."docId" = OLD."docId" AND "t2"."tag" = OLD."tag")' in sql
    assert 'OLD."tag" AS "t1_tag"' in sql
    # an insert reads before its row is in: nothing to leave out
    insert = next(r for r in view.rules if r.name == "twoTags_view_on_insert_Tags_t1")
    assert "NOT (" not in delta_select(insert, view, tags, "NEW", None, TriggerDialect.POSTGRES)


@pytest.mark.parametrize("dialect", list(TriggerDialect))
def test_cardinality_is_counted_with_a_stop_after_of_its_limit(paper, dialect):
    text = "\n".join(compiled(paper, dialect).statements)
    counts = re.findall(r'SELECT count\(\*\) FROM \(SELECT DISTINCT "tag" FROM "Tags" WHERE '
                        r'[^()]*(?:\([^()]*\)[^()]*)*LIMIT 10\) AS piql_others\) >= 10', text)
    assert len(counts) == 2  # an insert, and an update moving a row
    assert "CARDINALITY (tag, 10) PER (docId)" in text


@pytest.mark.parametrize("dialect", list(TriggerDialect))
def test_staging_views_are_kept_on_postgres_and_periodic_views_left_to_refresh(dialect):
    """PostgreSQL computes a staging row's partition as piql does (and marks its epochs);
    SQLite cannot (no CRC in its SQL), so its migration says so."""
    social = plan_text((FIXTURES.parent.parent / "examples/social/schema.sql").read_text(),
                       (FIXTURES.parent.parent / "examples/social/queries.sql").read_text())
    triggers = compiled(social, dialect)
    assert {ViewKind.STAGING, ViewKind.PERIODIC} <= {v.kind for v in social.views}
    staging_kept = dialect == TriggerDialect.POSTGRES
    for view in social.views:
        mine = {r.name for r in view.rules} & triggers.maintained
        kept = view.kind == ViewKind.IMV or (view.kind == ViewKind.STAGING and staging_kept)
        assert mine == ({r.name for r in view.rules} if kept else set()), view.name
        if view.kind == ViewKind.PERIODIC:
            assert any(f"periodic view {view.name}" in n and "piql refresh" in n
                       for n in triggers.notes)
        if view.kind == ViewKind.STAGING:
            said = next(n for n in triggers.notes if f"staging view {view.name}" in n)
            assert ("kept by the triggers" in said) == staging_kept
    text = "\n".join(triggers.statements)
    if staging_kept:  # the time window "trending" is refreshed from trendingStaging
        assert "INSERT INTO \"_piql_dirty_epochs\" VALUES ('trending', " in text
        assert "piql_crc32(convert_to('(' || COALESCE(piql_r.\"postId\"::text, 'None') || ', ' " \
               "|| COALESCE(piql_r.\"userId\"::text, 'None') || ')', 'UTF8')) % 16" in text


def test_exact_sums_are_numeric_on_postgres_and_said_inexact_on_sqlite():
    plan = plan_text("CREATE TABLE p (id BIGINT PRIMARY KEY, k VARCHAR, x REAL);",
                     "-- name: s\nSELECT SUM(x) AS total FROM p WHERE k = <k>")
    pg = "\n".join(compiled(plan, TriggerDialect.POSTGRES).statements)
    assert 'piql_exact(new."x") as "sum_x"' in pg.lower()
    assert '"_piql_exact_sum_x" = CASE' in pg and "trim_scale(" in pg
    sqlite = compiled(plan, TriggerDialect.SQLITE)
    assert any("no exact arithmetic" in n for n in sqlite.notes)
    assert "piql_exact(" not in "\n".join(sqlite.statements).lower()


def test_odd_names_are_quoted_and_keep_their_case():
    plan = plan_text((FIXTURES / "odd_names_schema.sql").read_text(),
                     (FIXTURES / "odd_names_queries.sql").read_text())
    for dialect in TriggerDialect:
        text = "\n".join(compiled(plan, dialect).statements)
        assert 'NEW."gr""oup"' in text or 'OLD."gr""oup"' in text
        assert '"sel""ect"' in text


def test_postgres_matches_a_nullable_key_by_branching_on_its_nulls():
    """A key column that may hold NULL gets ``IS NULL`` or ``=`` in a branch of its own
    (``c = v OR (c IS NULL AND v IS NULL)`` reads no index in a generic plan); columns that
    cannot hold NULL are compared with ``=``; past MAX_BRANCHED nullable columns an OR."""
    from piql.planner.triggers_postgres import MAX_BRANCHED, KeyMatch, _matching

    pairs = [KeyMatch("k", "r.k", False)] + [KeyMatch(f"n{i}", f"r.n{i}", True)
                                             for i in range(MAX_BRANCHED + 1)]
    lines = _matching(pairs, lambda match: [f"DELETE FROM v WHERE {match};"])
    deletes = [line.strip() for line in lines if "DELETE" in line]
    assert len(deletes) == 2 ** MAX_BRANCHED
    assert deletes[0] == ("DELETE FROM v WHERE k = r.k AND n0 IS NULL AND n1 IS NULL AND "
                          "n2 IS NULL AND (n3 = r.n3 OR (n3 IS NULL AND r.n3 IS NULL));")
    assert deletes[-1].startswith("DELETE FROM v WHERE k = r.k AND n0 = r.n0 AND n1 = r.n1")
    assert sum(line.strip() == "IF r.n0 IS NULL THEN" for line in lines) == 1


def test_postgres_compares_key_columns_that_cannot_hold_null_with_equality():
    plan = plan_text(
        """CREATE TABLE questions (id BIGINT PRIMARY KEY, asked BIGINT);
        CREATE TABLE tags (qid BIGINT, tag VARCHAR, PRIMARY KEY (qid, tag),
            FOREIGN KEY (qid) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);""",
        """-- name: oldestTagged
SELECT q.id, q.asked FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked LIMIT 3""")
    text = "\n".join(compiled(plan, TriggerDialect.POSTGRES).statements)
    assert " OR (" not in text
    assert re.search(r'DELETE FROM "oldestTagged_view" WHERE "tag" = piql_r."tag" AND '
                     r'"asked" IS NULL AND "id" = piql_r."id"', text)


def test_postgres_marks_an_epoch_once_where_a_self_join_would_mark_it_twice():
    """TPC-W's co-purchase window joins order_line twice (l1, l2): both occurrences' mark
    rules of an order_line write read the same order and mark the same epoch."""
    import piql
    from tests.conftest import EXAMPLES

    plan = piql.load(EXAMPLES / "tpcw" / "schema.sql", EXAMPLES / "tpcw" / "queries.sql").plan
    text = next(s for s in compiled(plan, TriggerDialect.POSTGRES).statements
                if s.startswith('CREATE OR REPLACE FUNCTION "piql_order_line_write"'))
    inserted = text[text.index("IF TG_OP = 'INSERT'"):text.index("IF TG_OP = 'UPDATE'")]
    assert "admin_confirm_related_mark_on_insert_order_line_l1" in inserted
    assert inserted.count("'admin_confirm_related', piql_r") == 1
    assert inserted.count("'best_sellers', piql_r") == 1


def test_postgres_matches_a_declared_not_null_column_null_safe():
    """PostgreSQL's tables are made without a non-key column's NOT NULL, so a plain SQL
    write may put NULL there: the triggers match such a view key column NULL-safe (a key
    column of the base table, or one the definition equates, holds no NULL anyway)."""
    plan = plan_text(
        """CREATE TABLE questions (id BIGINT PRIMARY KEY, asked BIGINT NOT NULL, title VARCHAR);
        CREATE TABLE tags (qid BIGINT, tag VARCHAR, PRIMARY KEY (qid, tag),
            FOREIGN KEY (qid) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);""",
        """-- name: oldestTagged
SELECT q.id, q.title FROM tags t, questions q
WHERE t.qid = q.id AND t.tag = <tag> ORDER BY q.asked, q.title LIMIT 3""")
    text = "\n".join(compiled(plan, TriggerDialect.POSTGRES).statements)
    assert 'IF piql_r."asked" IS NULL THEN' in text
    assert 'IF piql_r."tag" IS NULL THEN' not in text and 'IF piql_r."id" IS NULL' not in text
