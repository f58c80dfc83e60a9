"""``piql explain``: one query's plan, bounds and reasoning, and what writes cost for it."""
from __future__ import annotations

from piql.report import explain


def test_a_view_query_shows_the_write_bounds_of_the_tables_it_maintains_on(paper_plan):
    report = explain.render(paper_plan.query("twoTags"), paper_plan).splitlines()
    start = report.index("writes (of one row: its checks, the row, its indexes, every view's "
                         "rules):")
    tags = paper_plan.write("Tags", "insert").ops_bound
    assert report[start + 1].startswith("  write to Documents: ops <= ")
    assert report[start + 2].startswith(f"  write to Tags: ops <= {tags} (insert), ")


def test_a_key_lookup_changes_no_write(paper_plan):
    report = explain.render(paper_plan.query("tagsOfDoc"), paper_plan)
    assert "write to" not in report
