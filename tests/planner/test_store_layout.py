"""The tables a plan keeps, derived from the plan alone, and its compiled statements."""
from __future__ import annotations

import pytest

from piql.planner.compile import TableLayout, UncompilablePlan
from piql.planner.store_layout import KeyStorage, stored_tables, store_layout
from tests.conftest import plan_text

ALL_KEY = "_all"  # the key column of a view without key (ViewDef.stored_key)

STATS = plan_text(
    "CREATE TABLE r (k BIGINT PRIMARY KEY, g BIGINT, v BIGINT, w DOUBLE);",
    "-- name: stats\nSELECT SUM(v) AS total, SUM(w) AS weight FROM r WHERE g = <g>\n"
    "-- name: everything\nSELECT COUNT(*) AS n, SUM(w) AS weight FROM r\n"
    "-- name: distinctOf\nSELECT DISTINCT g FROM r WHERE k = <k> ORDER BY v\n"
    "-- name: byValue\nSELECT k FROM r WHERE v = <v>\n")


def test_base_tables_come_first_clustered_on_their_key():
    first = stored_tables(STATS)[0]
    assert (first.name, first.columns, first.key, first.types) == (
        "r", ("k", "g", "v", "w"), ("k",), ("BIGINT", "BIGINT", "BIGINT", "DOUBLE"))
    assert first.key_index is None
    assert store_layout(STATS).table("r") == TableLayout("r", ("k", "g", "v", "w"), ("k",))


KEYS = plan_text(
    "CREATE TABLE one (id INT PRIMARY KEY, v VARCHAR);\n"
    "CREATE TABLE wide (id BIGINT PRIMARY KEY, v VARCHAR);\n"
    "CREATE TABLE pair (a BIGINT, b BIGINT, PRIMARY KEY (a, b));\n"
    "CREATE TABLE named (name VARCHAR PRIMARY KEY, v BIGINT);\n"
    "CREATE TABLE money (amount DOUBLE PRIMARY KEY);",
    "-- name: perA\nSELECT COUNT(*) AS n FROM pair WHERE a = <a>\n")


def test_a_key_of_one_integer_column_is_the_rowid_any_other_key_clusters():
    storage = {t.name: t.storage for t in stored_tables(KEYS)}
    assert storage["one"] is storage["wide"] is KeyStorage.ROWID
    assert storage["pair"] is storage["named"] is storage["money"] is KeyStorage.CLUSTERED
    view = next(v.name for v in KEYS.views)
    assert storage[view] is KeyStorage.CLUSTERED  # views stay clustered on their key


def test_a_view_whose_key_may_hold_null_is_read_through_its_key_index():
    tables = {t.name: t for t in stored_tables(STATS)}
    grouped = next(v for v in STATS.views if v.key)
    assert tables[grouped.name].storage is KeyStorage.KEY_INDEX


def test_views_keep_hidden_exact_sums_and_a_key_index_where_the_key_may_hold_null():
    tables = {t.name: t for t in stored_tables(STATS)}
    grouped = next(v for v in STATS.views if v.key)
    table = tables[grouped.name]
    hidden = [column for _, column in grouped.exact_sums]
    assert hidden and table.columns[-len(hidden):] == tuple(hidden)
    assert table.types[-len(hidden):] == ("TEXT",) * len(hidden)
    assert grouped.nullable_key and table.key_index is not None  # g may be NULL
    assert store_layout(STATS).table(grouped.name).key_index == table.key_index


def test_a_view_without_key_is_kept_under_the_all_column():
    single = next(v for v in STATS.views if not v.key)
    table = next(t for t in stored_tables(STATS) if t.name == single.name)
    assert table.key == ("_all",) and table.columns[0] == "_all"


def test_plan_compiles_each_query_once_per_dialect():
    sqlite = STATS.compiled("stats", "sqlite")
    assert STATS.compiled("stats", "sqlite") is sqlite
    postgres = STATS.compiled("stats", "postgres")
    assert "?" in sqlite.sql and "%s" in postgres.sql


def test_plan_refuses_what_does_not_compile_every_time():
    for _ in range(2):
        with pytest.raises(UncompilablePlan, match="DISTINCT"):
            STATS.compiled("distinctOf", "sqlite")
    with pytest.raises(UncompilablePlan, match="no bounded plan"):
        STATS.compiled("byValue", "sqlite")


def test_views_written_whole_get_a_covering_key_index_aggregates_a_narrow_one():
    """A nullable key's index holds the rest of the row unless maintenance rewrites the
    rows in place (an IMV's COUNT / SUM): TPC-W's searches (rows inserted and deleted
    whole), its periodic views (refreshed whole) and their staging views are covered."""
    from tests.report.test_migration import example_plan

    tables = {t.name: t for t in stored_tables(example_plan("tpcw"))}
    for name in ("search_by_author_view", "search_by_title_view", "best_sellers",
                 "best_sellersStaging"):
        assert tables[name].storage is KeyStorage.COVERING_KEY_INDEX, name
    title = tables["search_by_title_view"]
    assert title.key_index_columns == title.key + ("a_fname", "a_lname")
    grouped = next(v for v in STATS.views if v.key)
    stats = {t.name: t for t in stored_tables(STATS)}[grouped.name]
    assert stats.storage is KeyStorage.KEY_INDEX and stats.key_index_columns == stats.key
    assert {t.storage for t in stored_tables(KEYS) if t.name not in ("one", "wide")} == {
        KeyStorage.CLUSTERED}
