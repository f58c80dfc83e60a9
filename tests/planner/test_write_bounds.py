"""What one write to each table costs at most, decided by the planner (and the indexes the
constraint checks read)."""
from __future__ import annotations

import pytest

from piql import App
from piql.planner.physical import IndexPurpose, IndexSpec
from piql.planner.views import WriteEvent
from piql.planner.write_bounds import WriteBound
from tests.conftest import plan_text

INSERT, DELETE, UPDATE = WriteEvent.INSERT, WriteEvent.DELETE, WriteEvent.UPDATE


def test_a_tags_insert_checks_its_key_cardinality_and_parent_and_runs_every_rule(paper_plan):
    bound = paper_plan.write("Tags", INSERT)
    assert (bound.key_check, bound.cardinality_checks, bound.unique_checks,
            bound.foreign_key_checks, bound.base_write) == (1, 10, 0, 1, 1)
    assert bound.index_upkeep == len([i for i in paper_plan.indexes if i.table == "Tags"]) == 2
    rules = [r for v in paper_plan.views for r in v.rules
             if r.table == "Tags" and r.event == INSERT]
    assert bound.rules == tuple((r.name, r.ops_bound) for r in rules) and rules
    assert bound.ops_bound == 1 + 10 + 1 + 1 + 2 + sum(r.ops_bound for r in rules)


def test_a_delete_checks_the_children_and_an_update_is_both(paper_plan):
    delete = paper_plan.write("Documents", DELETE)
    assert delete.foreign_key_checks == 1  # Tags rows may refer to the document
    assert delete.cardinality_checks == 0
    update = paper_plan.write("documents", UPDATE)
    assert update.ops_bound == delete.ops_bound + paper_plan.write("Documents", INSERT).ops_bound
    assert {(w.table, w.event) for w in paper_plan.writes} == {
        (t, e) for t in ("Documents", "Tags") for e in (INSERT, DELETE, UPDATE)}


def test_the_runtime_reports_the_plans_bound(paper_plan):
    db = App(paper_plan).deploy()
    db.insert("Documents", docId=1, timestamp=1, text="x")
    report = db.insert("Tags", docId=1, tag="a", timestamp=2)
    assert report.bound == paper_plan.write("Tags", INSERT).ops_bound
    assert report.ops <= report.bound
    assert [r.bound for r in db.update("Tags", docId=1, tag="a", timestamp=3)] == [
        paper_plan.write("Tags", DELETE).ops_bound, paper_plan.write("Tags", INSERT).ops_bound]


SHOP = """
CREATE TABLE customer (c_id BIGINT PRIMARY KEY, c_email VARCHAR UNIQUE);
CREATE TABLE orders (o_id BIGINT PRIMARY KEY, o_c_id BIGINT NOT NULL, o_status VARCHAR,
    FOREIGN KEY (o_c_id) REFERENCES customer (c_id))
    WITH CARDINALITY (o_status, 3) PER (o_c_id);
"""


def test_checks_read_key_prefixes_the_planner_chooses_and_names():
    plan = plan_text(SHOP, "-- name: byId\nSELECT * FROM orders WHERE o_id = <o>\n")
    assert plan.check_indexes == (
        IndexSpec("customer", ("c_email",), "uq_customer_c_email", purpose=IndexPurpose.UNIQUE),
        IndexSpec("orders", ("o_c_id", "o_status"), "chk_orders_o_status",
                  purpose=IndexPurpose.CARDINALITY))
    # the foreign key's children are found through the CARDINALITY index, led by o_c_id
    assert plan.write("orders", INSERT).index_upkeep == 1
    assert plan.write("customer", DELETE).foreign_key_checks == 1
    assert plan.write("customer", INSERT).unique_checks == 1


def test_a_check_index_never_takes_a_name_the_schema_has():
    """A table called like the index a check reads: the deployment created the index under
    that name and SQLite refused it ("there is already a table named ...")."""
    schema = SHOP + "CREATE TABLE chk_orders_o_status (id BIGINT PRIMARY KEY);\n"
    plan = plan_text(schema, "-- name: byId\nSELECT * FROM orders WHERE o_id = <o>\n")
    (check,) = [i for i in plan.check_indexes if i.purpose == IndexPurpose.CARDINALITY]
    assert check.name.startswith("chk_orders_o_status_") and len(check.name) > 20
    db = App(plan).deploy()
    db.insert("customer", c_id=1, c_email="a@x")
    db.insert("orders", o_id=1, o_c_id=1, o_status="new")
    db.insert("chk_orders_o_status", id=1)
    assert db.rows("orders") == [(1, 1, "new")]


def test_a_view_may_not_take_a_unique_checks_index_name():
    with pytest.raises(Exception, match="view name 'uq_customer_c_email' is taken: it is the "
                                        "name of the index piql keeps to check UNIQUE"):
        plan_text(SHOP, "-- name: byEmail\n-- view: uq_customer_c_email\n"
                        "SELECT COUNT(*) FROM orders WHERE o_status = <s>\n")


def test_write_bounds_add_up_part_by_part():
    one = WriteBound("t", DELETE, 1, 0, 0, 2, 1, 3, (("r", 5),))
    two = WriteBound("t", INSERT, 1, 4, 1, 1, 1, 3, (("s", 7),))
    both = one + two
    assert both.event == UPDATE and both.rules == (("r", 5), ("s", 7))
    assert both.ops_bound == one.ops_bound + two.ops_bound == 12 + 18
