"""Phase 4 decides every refresh once: the typed RefreshPlan of each periodic view."""
from __future__ import annotations

import json

import piql
from piql import sqlgen
from piql.planner.application import replanned
from piql.planner.refresh_plan import (
    HIGH_PARAM, LOW_PARAM, PARTITION_PARAM, RefreshPlan, StagingLayout, WindowKind,
)
from piql.report import json_report
from tests.conftest import EXAMPLES, plan_text
from tests.planner.test_periodic import BEST_SELLERS, SHOP


def refresh_of(plan, name) -> RefreshPlan:
    view = next(v for v in plan.views if v.name == name)
    assert view.refresh is not None
    return view.refresh


def test_a_tuple_window_reads_each_partitions_newest_tuples(paper_plan_temporal):
    plan = refresh_of(paper_plan_temporal, "popularTags")
    assert plan.window is WindowKind.TUPLE and plan.epoch_width is None
    assert (plan.view, plan.staging, plan.order_column) == ("popularTags", "popularTagsStaging",
                                                            "timestamp")
    assert plan.layout == StagingLayout(("tag", "docId"), ("timestamp",), 16)
    assert plan.per_partition_bound == 5000 and plan.total_bound == 16 * 5000
    assert sqlgen.block_sql(plan.shares.read, "sqlite") == (
        f'SELECT * FROM "popularTagsStaging" WHERE "partition" = :{PARTITION_PARAM} '
        'ORDER BY "timestamp" LIMIT 5000')
    assert plan.shares.keys == ()  # one relation: a tuple per row
    assert plan.merge == next(v for v in paper_plan_temporal.views
                              if v.name == "popularTags").definition


def test_a_time_window_over_a_join_reads_its_epoch_and_looks_up_the_joined_rows():
    plan = refresh_of(plan_text(SHOP, BEST_SELLERS), "bestSellers")
    assert plan.window is WindowKind.TIME and plan.epoch_width == 3_600_000
    read = sqlgen.block_sql(plan.shares.read, "sqlite")
    assert '"bestSellersStaging"."partition" = :' + PARTITION_PARAM in read
    assert f'"bestSellersStaging"."o_date" >= :{LOW_PARAM}' in read
    assert f'"bestSellersStaging"."o_date" <= :{HIGH_PARAM}' in read
    assert '"ol"."ol_o_id" = "bestSellersStaging"."o_id"' in read
    assert '"i"."i_id" = "ol"."ol_i_id"' in read
    assert plan.shares.columns == ("partition", "o_date", "o_id", "ol__ol_o_id", "ol__ol_id",
                                   "ol__ol_i_id", "ol__ol_qty", "i__i_id", "i__i_subject")
    # distinct orders, then order lines (order, line), then items
    assert plan.shares.keys == ((1, 2), (1, 2, 3, 4), (1, 2, 3, 4, 7))
    # the merge runs over the shares as one table, without ORDER BY/LIMIT, epoch unbound
    assert [r.table for r in plan.merge.relations] == ["bestSellersStaging"]
    assert plan.merge.limit is None and not plan.merge.order_by
    assert plan.merge.params == ("hour",)
    assert plan.group_key == ("epoch", "i_subject") and plan.descending == (True,)
    assert plan.limit == 3 and plan.columns[-1] == "sold"


def test_the_plan_is_made_for_the_partitions_a_deployment_uses(tmp_path):
    app = piql.load(EXAMPLES / "social" / "schema.sql", EXAMPLES / "social" / "queries.sql")
    assert app.plan.partitions == 16
    db = app.deploy(tmp_path / "social.db", engine="store", partitions=4)
    try:
        assert db.plan.partitions == 4
        views = json.loads(json_report.render(db.plan))["views"]
        periodic = [v for v in views if v["kind"] in ("staging", "periodic")]
        assert periodic and {v["partitions"] for v in periodic} == {4}
        assert {r.partitions for r in db.refresh(now_ms=0)} == {4}
    finally:
        db.close()
    again = replanned(app.plan, 4)
    assert replanned(again, 4) is again
    assert refresh_of(again, "trending").layout.partitions == 4
