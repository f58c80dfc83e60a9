"""``-- maintenance: async``: which views are deferred, and the write bounds both ways."""
from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from piql.errors import InputError
from piql.planner.async_views import decide_maintenance
from piql.planner.views import WriteEvent
from piql.planner.staleness import staleness_bounds
from piql.planner.write_bounds import ENQUEUE_OPS
from piql.query_block import MaintenanceMode
from piql.report import json_report, text
from tests.conftest import plan_text

SOCIAL = Path(__file__).parents[2] / "examples" / "social"
SCHEMA = (SOCIAL / "schema.sql").read_text()
QUERIES = (SOCIAL / "queries.sql").read_text()


def social(*async_queries: str):
    queries = QUERIES
    for name in async_queries:
        queries = queries.replace(f"-- name: {name}\n",
                                  f"-- name: {name}\n-- maintenance: async\n")
    return plan_text(SCHEMA, queries)


def bound(plan, table, event):
    return next(w for w in plan.writes if w.table == table and w.event == event)


def view(plan, name):
    return next(v for v in plan.views if v.name == name)


def test_the_option_line_sets_the_querys_mode():
    plan = social("followerCount")
    modes = {q.name: q.query.maintenance for q in plan.queries}
    assert modes["followerCount"] is MaintenanceMode.ASYNC
    assert modes["likeCount"] is MaintenanceMode.SYNC


@pytest.mark.parametrize("line, message", [
    ("-- maintenance: later", "2:17: expected sync or async after '-- maintenance:', "
                              "found 'later'"),
    ("-- maintenence: async", "2:4: unknown option '-- maintenence:'; did you mean "
                              "'-- maintenance:'?"),
])
def test_a_wrong_option_is_a_clear_error(line, message):
    queries = f"-- name: followerCount\n{line}\nSELECT COUNT(*) FROM follows WHERE followee = <u>;\n"
    with pytest.raises(InputError) as caught:
        plan_text(SCHEMA, queries)
    assert f"queries.sql:{message}" in str(caught.value)


def test_an_async_view_moves_its_rules_out_of_the_write():
    sync, deferred = social(), social("followerCount")
    assert view(sync, "followerCount_view").maintenance is MaintenanceMode.SYNC
    assert view(deferred, "followerCount_view").maintenance is MaintenanceMode.ASYNC
    for event in WriteEvent:
        before, after = bound(sync, "follows", event), bound(deferred, "follows", event)
        assert after.rules == () and after.deferred == before.rules != ()
        assert after.enqueues == ENQUEUE_OPS * (2 if event is WriteEvent.UPDATE else 1)
        # base write + checks + enqueue, and the same bound as before were it sync
        assert after.ops_bound == before.ops_bound - before.drain_bound - \
            sum(b for _, b in before.rules) + after.enqueues
        assert after.sync_ops_bound == before.ops_bound
        assert after.drain_bound == sum(b for _, b in before.rules)
    # other tables' writes do not change
    assert bound(deferred, "likes", WriteEvent.INSERT) == bound(sync, "likes", WriteEvent.INSERT)


def test_lint_says_the_view_is_async_and_shows_both_bounds():
    plan = social("followerCount")
    notes = [d for q in plan.queries for d in q.diagnostics if d.code == "async"]
    assert [(d.severity, d.location.line) for d in notes] == [("info", 68)]  # the query's name line
    insert = bound(plan, "follows", WriteEvent.INSERT)
    lines = text.write_lines(plan, ["follows"])
    assert lines[0].startswith(f"write to follows (async views: one enqueue): "
                               f"ops <= {insert.ops_bound} (insert)")
    assert lines[1].startswith(f"write to follows (every view sync): "
                               f"ops <= {insert.sync_ops_bound} (insert)")
    assert lines[2].startswith(f"drain of one follows change: ops <= {insert.drain_bound} "
                               "(insert)")
    assert text.write_lines(plan, ["likes"])[0].startswith("write to likes: ops <= ")
    writes = json.loads(json_report.render(plan))["writes"]
    follows = next(w for w in writes if w["table"] == "follows" and w["event"] == "insert")
    assert (follows["sync_ops_bound"], follows["drain_ops_bound"]) == \
        (insert.sync_ops_bound, insert.drain_bound)
    assert "sync_ops_bound" not in next(w for w in writes if w["table"] == "likes")


def test_a_join_view_is_async_and_its_deletes_run_as_of_the_queue():
    plan = social("twoTags")
    assert view(plan, "twoTags_view").maintenance is MaintenanceMode.ASYNC
    insert, delete = bound(plan, "post_tags", WriteEvent.INSERT), bound(plan, "post_tags",
                                                                        WriteEvent.DELETE)
    # an insert defers its rules, each bound plus one queue lookup per row it reads
    assert insert.deferred and not insert.settled and insert.enqueues == ENQUEUE_OPS
    assert insert.drain_bound == sum(r.ops_bound + r.read_ops for r in view(
        plan, "twoTags_view").rules if r.table == "post_tags" and r.event == WriteEvent.INSERT)
    # a delete of a row the view has seen runs its delete rules in the write, as of the queue
    assert delete.settled and not delete.deferred and delete.drain_bound == 0
    assert insert.sync_ops_bound == bound(social(), "post_tags", WriteEvent.INSERT).ops_bound


def test_a_periodic_query_is_async_staging_view_and_all():
    """Its staging rows wait in the queue; its refresh drains first (docs/async.md)."""
    plan = social("latestPosts")
    notes = [d for q in plan.queries for d in q.diagnostics if d.code == "async"]
    assert {d.severity for d in notes} == {"info"}
    assert {v.name for v in plan.views if v.maintenance is MaintenanceMode.ASYNC} == {
        "latestPostsStaging", "latestPosts"}
    insert = bound(plan, "posts", WriteEvent.INSERT)
    assert insert.deferred and insert.drain_bound > 0


def test_a_view_serving_a_sync_query_too_stays_sync():
    plan = social("followerCount")
    shared = replace(view(plan, "followerCount_view"), for_queries=("followerCount", "likeCount"))
    queries = tuple(q.query for q in plan.queries)
    decision = decide_maintenance((shared,), queries)
    assert decision.modes == {"followerCount_view": MaintenanceMode.SYNC}
    (note,) = decision.notes["followerCount"]
    assert note.severity == "warning" and "another query it serves is synchronous" in note.message


def test_a_load_wide_default_makes_every_query_without_the_line_async():
    import piql

    marked = QUERIES.replace("-- name: likeCount\n", "-- name: likeCount\n-- maintenance: sync\n")
    plan = piql.loads(SCHEMA, marked, maintenance="async").plan
    assert view(plan, "followerCount_view").maintenance is MaintenanceMode.ASYNC
    assert view(plan, "likeCount_view").maintenance is MaintenanceMode.SYNC  # its line wins
    assert view(plan, "twoTags_view").maintenance is MaintenanceMode.ASYNC  # a join
    assert view(piql.loads(SCHEMA, QUERIES).plan, "followerCount_view").maintenance \
        is MaintenanceMode.SYNC
    with pytest.raises(InputError, match="maintenance must be 'sync' or 'async'"):
        piql.loads(SCHEMA, QUERIES, maintenance="later")


def test_lint_shows_the_staleness_bound_of_an_async_view():
    plan = social("followerCount")
    update = bound(plan, "follows", WriteEvent.UPDATE)
    (found,) = staleness_bounds(plan.views, plan.writes)
    # one queue entry per row, its net change at most the update's drain (delete + insert)
    assert (found.view, found.tables) == ("followerCount_view", ("follows",))
    assert found.entry_ops == found.own_entry_ops == update.drain_bound == \
        bound(plan, "follows", WriteEvent.INSERT).drain_bound + \
        bound(plan, "follows", WriteEvent.DELETE).drain_bound
    assert found.in_place_ops(10) == 10 * update.drain_bound
    (line,) = text.staleness_lines(plan)
    assert line.startswith(f"staleness of followerCount_view: a queued change is applied "
                           f"within ops <= {update.drain_bound} x N ")
    assert line.endswith("fifo, linecutting: no bound")
    assert line in text.render(plan)
    views = json.loads(json_report.render(plan))["views"]
    entry = next(v for v in views if v["name"] == "followerCount_view")["staleness"]
    assert entry == {"tables": ["follows"],
                     "queue_entries_per_key": 1, "own_entry_ops_bound": update.drain_bound,
                     "entry_ops_bound": update.drain_bound,
                     "in_place_ops_bound_per_distinct_key": update.drain_bound,
                     "fifo_bounded": False, "linecutting_bounded": False}


def test_an_entry_ahead_may_belong_to_another_tables_async_view():
    plan = social("followerCount", "likeCount")
    found = {b.view: b for b in staleness_bounds(plan.views, plan.writes)}
    drains = [bound(plan, t, WriteEvent.UPDATE).drain_bound for t in ("follows", "likes")]
    assert {b.entry_ops for b in found.values()} == {max(drains)}
    assert found["followerCount_view"].own_entry_ops == drains[0]
    assert found["likeCount_view"].own_entry_ops == drains[1]


def test_a_plan_without_async_views_has_no_staleness_bound():
    plan = social()
    assert staleness_bounds(plan.views, plan.writes) == ()
    assert text.staleness_lines(plan) == []
    assert all("staleness" not in v for v in json.loads(json_report.render(plan))["views"])
