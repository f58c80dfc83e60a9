"""Periodic refresh of a time window over a join: the staged orders of an epoch, their
lines and items read by lookups, equal the query run directly, on every engine."""
from __future__ import annotations

import random
from collections import Counter

import pytest

import piql
from tests.conftest import engines_on_stores
from tests.planner.test_periodic import BEST_SELLERS, SHOP
from tests.runtime.workload import ordered_oracle

HOUR = 3_600_000
# l1.ol_i_id (the parameter's column) and l2.ol_i_id (the output) share a name: the
# periodic view must keep both.
CO_PURCHASE = """
-- name: boughtWith
SELECT l2.ol_i_id, SUM(l2.ol_qty) AS qty
FROM orders o, order_line l1, order_line l2
WHERE l1.ol_o_id = o.o_id AND l2.ol_o_id = o.o_id AND l1.ol_i_id = <item>
  AND o.o_date - o.o_date % 3600000 = <hour>
GROUP BY l2.ol_i_id ORDER BY SUM(l2.ol_qty) DESC LIMIT 3
"""


def shop(tmp_path):
    schema, queries = tmp_path / "schema.sql", tmp_path / "queries.sql"
    schema.write_text(SHOP)
    queries.write_text(BEST_SELLERS + CO_PURCHASE)
    return piql.load(schema, queries)


def shop_rows(rng: random.Random, orders: int = 60) -> dict[str, list[tuple]]:
    items = [(i, rng.choice("ABC")) for i in range(1, 13)]
    placed = [(o, 5 * HOUR + rng.randrange(2 * HOUR)) for o in range(1, orders + 1)]
    lines = [(o, n, rng.randint(1, 12), rng.randint(1, 4))
             for o, _ in placed for n in range(1, rng.randint(1, 5) + 1)]
    return {"item": items, "orders": placed, "order_line": lines}


def answers(db, hours=(5, 6)) -> dict[tuple, list]:
    found = {}
    for hour in hours:
        for subject in "ABC":
            found[("bestSellers", hour, subject)] = db.query(
                "bestSellers", subject=subject, hour=hour * HOUR).rows
        for item in (1, 2, 3):
            found[("boughtWith", hour, item)] = db.query("boughtWith", item=item, hour=hour * HOUR).rows
    return found


def assert_equal_to_the_direct_query(db, found: dict[tuple, list]) -> None:
    for (name, hour, value), rows in found.items():
        params = {"subject": value} if name == "bestSellers" else {"item": value}
        full = ordered_oracle(db, db.query_plan(name), params | {"hour": hour * HOUR})
        # ties in SUM may be cut either way: compare the sums, and each row against the oracle
        assert [r[1] for r in rows] == [order[0] for _, order in full][:3], (name, hour, value)
        assert set(rows) <= {row for row, _ in full}, (name, hour, value)


@pytest.mark.parametrize("engine, new_store", engines_on_stores(["store", "duckdb", "spark"]),
                         indirect=["new_store"])
def test_join_window_refresh_equals_the_direct_query(tmp_path, engine, store_url):
    app = shop(tmp_path)
    db = app.deploy(store_url, engine=engine, partitions=4)
    for table, rows in shop_rows(random.Random(7)).items():
        db.load(table, rows)
    reports = db.refresh(now_ms=6 * HOUR + 10)
    assert all(0 < r.max_partition_reads <= r.per_partition_bound for r in reports)
    assert_equal_to_the_direct_query(db, answers(db))
    db.close()


def test_partition_reads_count_the_looked_up_tuples(tmp_path, store_url):
    """One order of 3 lines in one partition: 1 staged tuple + 3 lines + 3 items."""
    app = shop(tmp_path)
    db = app.deploy(store_url, engine="store", partitions=1)
    db.load("item", [(1, "A"), (2, "A"), (3, "B")])
    db.load("orders", [(1, 5 * HOUR)])
    db.load("order_line", [(1, 1, 1, 2), (1, 2, 2, 1), (1, 3, 3, 1)])
    reports = {r.view: r for r in db.refresh(now_ms=5 * HOUR)}
    assert reports["bestSellers"].max_partition_reads == 1 + 3 + 3
    # the self-join reads the 3 lines again for each of them: 1 + 3 + 3 x 3
    assert reports["boughtWith"].max_partition_reads == 1 + 3 + 9
    assert list(db.query("bestSellers", subject="A", hour=5 * HOUR).rows) == [(1, 2), (2, 1)]
    assert [c.name for c in db.query_plan("boughtWith").view_defs[-1].key] == ["epoch", "l1_ol_i_id", "rank"]
    assert sorted(db.query("boughtWith", item=1, hour=5 * HOUR).rows) == [(1, 2), (2, 1), (3, 1)]


def test_lines_written_after_their_order_show_at_the_next_refresh(tmp_path, store_url):
    app = shop(tmp_path)
    db = app.deploy(store_url, engine="store", partitions=3)
    db.load("item", [(1, "A"), (2, "A")])
    db.insert("orders", o_id=1, o_date=5 * HOUR + 5)
    db.refresh(now_ms=5 * HOUR + 10)
    assert list(db.query("bestSellers", subject="A", hour=5 * HOUR).rows) == []
    db.insert("order_line", ol_o_id=1, ol_id=1, ol_i_id=2, ol_qty=4)
    db.refresh(now_ms=5 * HOUR + 20)
    assert list(db.query("bestSellers", subject="A", hour=5 * HOUR).rows) == [(2, 4)]
    assert Counter(r for r in db.query("boughtWith", item=2, hour=5 * HOUR).rows) == Counter([(2, 4)])


QA = """
CREATE TABLE questions (id BIGINT PRIMARY KEY, title VARCHAR, created_at BIGINT TEMPORAL);
CREATE TABLE question_tags (question_id BIGINT, tag VARCHAR, PRIMARY KEY (question_id, tag),
  FOREIGN KEY (question_id) REFERENCES questions (id)) WITH CARDINALITY (tag, 5);
"""
HOT_TAGS = """
-- name: hotTags
SELECT t.tag, COUNT(*) AS uses FROM questions q, question_tags t
WHERE t.question_id = q.id AND q.created_at - q.created_at % 3600000 = <hour>
GROUP BY t.tag ORDER BY COUNT(*) DESC LIMIT 10
"""


def qa(tmp_path):
    schema, queries = tmp_path / "qa.sql", tmp_path / "qa_queries.sql"
    schema.write_text(QA)
    queries.write_text(HOT_TAGS)
    return piql.load(schema, queries)


def assert_hot_tags_equal_their_sql(db, hours) -> None:
    for hour in hours:
        full = ordered_oracle(db, db.query_plan("hotTags"), {"hour": hour * HOUR})
        rows = db.query("hotTags", hour=hour * HOUR).rows
        assert sorted(rows) == sorted(row for row, _ in full), hour  # < 10 tags: no cut


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_retagging_an_old_question_reaches_its_window_at_the_next_refresh(tmp_path, engine, store_url):
    """Writes to the joined table mark the epochs of the windowed rows they join (issue 12
    item 2): before, only writes to the windowed table did, so old hours never changed."""
    db = qa(tmp_path).deploy(store_url, engine=engine, partitions=3)
    db.load("questions", [(1, "a", HOUR + 5), (2, "b", 2 * HOUR + 1), (3, "c", HOUR + 9)])
    db.load("question_tags", [(1, "x"), (2, "x"), (3, "y")])
    db.refresh(now_ms=3 * HOUR)
    db.refresh(now_ms=10 * HOUR)  # hours 1 and 2 are now old: no longer refreshed by default
    assert_hot_tags_equal_their_sql(db, (1, 2))
    db.insert("question_tags", question_id=1, tag="z")          # an insert
    db.delete("question_tags", question_id=3, tag="y")          # a delete
    db.update("questions", id=2, title="B", created_at=2 * HOUR + 1)  # windowed, same epoch
    db.refresh(now_ms=10 * HOUR + 1)
    assert_hot_tags_equal_their_sql(db, (1, 2))
    db.load("question_tags", [(2, "w"), (3, "w")])               # a bulk load
    db.refresh(now_ms=10 * HOUR + 2)
    assert_hot_tags_equal_their_sql(db, (1, 2))
    assert sorted(db.query("hotTags", hour=HOUR).rows) == [("w", 1), ("x", 1), ("z", 1)]
    db.close()


def test_epoch_marks_are_counted_within_the_write_bound(tmp_path, store_url):
    db = qa(tmp_path).deploy(store_url, engine="store", partitions=2)
    db.insert("questions", id=1, title="a", created_at=HOUR)
    report = db.insert("question_tags", question_id=1, tag="x")
    rule = next(r for r in report.rules if "mark" in r[0])
    assert rule[1:] == (2, 2)  # one key lookup of the question, one mark
    assert report.ops <= report.bound
    assert db.store.sql("SELECT view, epoch FROM _piql_dirty_epochs") == [("hotTags", HOUR)]


def test_an_update_of_a_parent_only_joined_column_is_refused_and_changes_nothing(tmp_path, store_url):
    """bestSellers joins item only as the parent of order_line: no bounded lookup finds the
    orders of an item, so an update of the subject the query reads is refused; other
    columns, inserts and deletes of items reach no window and are accepted."""
    schema = SHOP.replace("i_subject VARCHAR", "i_subject VARCHAR, i_title VARCHAR")
    (tmp_path / "schema.sql").write_text(schema)
    (tmp_path / "queries.sql").write_text(BEST_SELLERS)
    db = piql.load(tmp_path / "schema.sql", tmp_path / "queries.sql").deploy(store_url, engine="store")
    db.load("item", [(1, "A", "t1"), (2, "B", "t2")])
    db.load("orders", [(1, 5 * HOUR)])
    db.load("order_line", [(1, 1, 1, 2)])
    before = {t: db.rows(t) for t in ("item", "order_line", "orders")}
    with pytest.raises(piql.PiqlError, match=r"update of item \(i_id=1\) changes i_subject"):
        db.update("item", i_id=1, i_subject="B", i_title="t1")
    assert {t: db.rows(t) for t in before} == before
    db.update("item", i_id=1, i_subject="A", i_title="new title")
    db.insert("item", i_id=3, i_subject="C", i_title="t3")
    db.delete("item", i_id=3)
    db.refresh(now_ms=9 * HOUR)
    assert db.query("bestSellers", subject="A", hour=5 * HOUR).rows == ((1, 2),)


def test_a_refresh_since_a_time_leaves_older_loaded_epochs_marked_for_later(tmp_path, store_url):
    """A bulk load marks every epoch it filled; ``since_ms`` refreshes the late ones from
    its epoch on (and the current and previous), leaving the older marked: a refresh
    without it computes them."""
    db = qa(tmp_path).deploy(store_url, engine="store", partitions=2)
    db.load("questions", [(1, "a", HOUR + 5), (2, "b", 4 * HOUR + 1), (3, "c", 6 * HOUR + 9)])
    db.load("question_tags", [(1, "x"), (2, "y"), (3, "z")])
    db.refresh(now_ms=6 * HOUR + 10, since_ms=4 * HOUR + 30)
    assert db.query("hotTags", hour=HOUR).rows == ()  # before since_ms: not computed
    assert_hot_tags_equal_their_sql(db, (4, 6))
    assert db.store.marked_epochs("hotTags") == [HOUR]
    db.refresh(now_ms=6 * HOUR + 20)
    assert_hot_tags_equal_their_sql(db, (1, 4, 6))
    assert db.store.marked_epochs("hotTags") == []
    with pytest.raises(piql.ParameterError, match="since_ms is a time in milliseconds"):
        db.refresh(since_ms="yesterday")
    db.close()
