"""``piql explain``: one query's verdict, plan tree with per-operator bounds, and reasoning."""
from __future__ import annotations

from piql.planner.adaptive import AdaptivePlan
from piql.planner.application import Plan, QueryPlan
from piql.report.text import write_lines


def render(query: QueryPlan, plan: Plan) -> str:
    bound = f"ops <= {query.ops_bound}" if query.ops_bound is not None else "no bound"
    lines = [f"{query.name}: {query.level}, {bound}", "", "query:"]
    lines += [f"  {line}" for line in query.query.sql.splitlines()]
    if query.rewritten_sql:
        lines += ["", "rewritten:", f"  {query.rewritten_sql}"]
    if query.physical is not None:
        lines += ["", "plan:"] + query.physical.root.lines(1)
    if query.adaptive is not None:
        lines += _adaptive_lines(query.adaptive)
    if query.indexes:
        lines += ["", "indexes:"] + [
            f"  {i.name} on {i.table}({', '.join(i.columns)})"
            + (" (declared)" if i.declared else " (new)") for i in query.indexes]
    for section in getattr(query, "trace", ()) or ():
        lines += ["", f"{section.title}:"] + [f"  {line}" for line in section.lines]
    writes = write_lines(plan, _written(query, plan))
    if writes:
        lines += ["", "writes (of one row: its checks, the row, its indexes, every view's rules):"]
        lines += [f"  {line}" for line in writes]
    if query.diagnostics:
        lines += ["", "diagnostics:"]
        for d in query.diagnostics:
            where = f"{d.location}: " if d.location else ""
            lines.append(f"  {where}{d.severity}[{d.code}] {d.message}")
            if d.hint:
                lines.append(f"    hint: {d.hint}")
    return "\n".join(lines) + "\n"


def _adaptive_lines(plan: AdaptivePlan) -> list[str]:
    """Both plans of an adaptive query: the pull plan piql serves (printed above), and the
    push plan."""
    return ["", f"adaptive {plan.shape} (both plans bounded; piql serves the pull plan until db.adapt()):",
            f"  pull: ops <= {plan.pull_ops} per read: the plan above",
            f"  push: ops <= {plan.push_write_ops} per write, <= {plan.push_read_ops} per read"] + [
        f"    {line}" for line in plan.push_lines()]


def _written(query: QueryPlan, plan: Plan) -> list[str]:
    """The tables whose writes keep this query's views or indexes up to date."""
    tables = {r.table.lower() for v in query.view_defs for r in v.rules}
    tables |= {i.table.lower() for i in query.indexes}
    return [t.name for t in plan.catalog.tables if t.name.lower() in tables]
