"""``piql lint`` for people: a line per query, then diagnostics with file:line:col."""
from __future__ import annotations

from piql.planner.application import Plan, QueryPlan
from piql.planner.levels import LEVELS, Level
from piql.report import schema_notes


def render(plan: Plan) -> str:
    width = max([len(q.name) for q in plan.queries] + [5])
    lines = [_verdict(q, width) for q in plan.queries]
    details = schema_notes.text_lines(plan.catalog, plan.notes) + \
        [line for q in plan.queries for line in _diagnostics(q)]
    if details:
        lines += [""] + details
    counts = plan.summary
    total = len(plan.queries)
    lines += ["", f"{total} {'query' if total == 1 else 'queries'}: "
              + ", ".join(f"{level} {counts[level]}" for level in LEVELS)]
    if plan.indexes:
        lines.append("indexes: " + ", ".join(
            f"{i.name} on {i.table}({', '.join(i.columns)})" for i in plan.indexes))
    if plan.views:
        lines.append("views: " + ", ".join(f"{v.name} ({v.kind})" for v in plan.views))
    lines += write_lines(plan, [t.name for t in plan.catalog.tables])
    return "\n".join(lines) + "\n"


def write_lines(plan: Plan, tables: list[str]) -> list[str]:
    """``write to T: ops <= a (insert), b (delete), c (update)`` for each of ``tables``."""
    lines = []
    for table in tables:
        bounds = [w for w in plan.writes if w.table.lower() == table.lower()]
        if bounds:
            events = ", ".join(f"{w.ops_bound} ({w.event})" for w in bounds)
            lines.append(f"write to {bounds[0].table}: ops <= {events}")
    return lines


def _verdict(query: QueryPlan, width: int) -> str:
    bound = f"ops <= {query.ops_bound}" if query.ops_bound is not None else "no bound"
    needs = [f"index {i.name}" for i in query.indexes] + [f"view {v}" for v in query.views]
    tail = f"  needs {', '.join(needs)}" if needs else ""
    return f"{query.name:<{width}}  {query.level:<9}  {bound}{tail}"


def _diagnostics(query: QueryPlan) -> list[str]:
    lines = []
    for d in query.diagnostics:
        if d.severity == "info" and query.level != Level.UNBOUNDED and d.code == "index":
            continue  # the verdict line already names the index
        where = f"{d.location}: " if d.location else ""
        lines.append(f"{where}{d.severity}[{d.code}] {query.name}: {d.message}")
        if d.hint:
            lines.append(f"    hint: {d.hint}")
    return lines
