"""``piql lint`` for people: a line per query, then diagnostics with file:line:col."""
from __future__ import annotations

from piql.lint.findings import Findings, QueryFindings, as_findings
from piql.planner.application import Plan
from piql.planner.levels import LEVELS, Level
from piql.planner.staleness import staleness_bounds
from piql.report import schema_notes
from piql.report.colour import PLAIN, Palette


def render(report: Plan | Findings, palette: Palette = PLAIN) -> str:
    found = as_findings(report)
    plan = found.plan
    assert plan is not None, "text reports input errors on standard error"
    width = max([len(q.name) for q in found.queries] + [5])
    lines = [_verdict(q, width, palette) for q in found.queries]
    details = schema_notes.text_lines(found.schema, palette, found.notes) + \
        [line for q in found.queries for line in _diagnostics(q, palette)]
    if details:
        lines += [""] + details
    counts = plan.summary
    total = len(plan.queries)
    lines += ["", f"{total} {'query' if total == 1 else 'queries'}: "
              + ", ".join(f"{level} {counts[level]}" for level in LEVELS)]
    if found.suppressed_count:
        waived = [q.name for q in found.queries if q.suppressed]
        lines.append(f"suppressed by -- noqa: {found.suppressed_count} "
                     f"{'finding' if found.suppressed_count == 1 else 'findings'} "
                     f"({', '.join(waived)})")
    if plan.indexes:
        lines.append("indexes: " + ", ".join(
            f"{i.name} on {i.table}({', '.join(i.columns)})" for i in plan.indexes))
    if plan.views:
        lines.append("views: " + ", ".join(f"{v.name} ({v.kind})" for v in plan.views))
    lines += write_lines(plan, [t.name for t in plan.catalog.tables])
    lines += staleness_lines(plan)
    return "\n".join(lines) + "\n"


def write_lines(plan: Plan, tables: list[str]) -> list[str]:
    """``write to T: ops <= a (insert), b (delete), c (update)`` for each of ``tables``; where
    asynchronous views defer rules, also the bound were they synchronous, and the drain's."""
    lines = []
    for table in tables:
        bounds = [w for w in plan.writes if w.table.lower() == table.lower()]
        if not bounds:
            continue
        name = bounds[0].table
        if not any(w.deferred for w in bounds):
            lines.append(f"write to {name}: ops <= {_events(bounds, 'ops_bound')}")
            continue
        lines += [f"write to {name} (async views: one enqueue): ops <= "
                  f"{_events(bounds, 'ops_bound')}",
                  f"write to {name} (every view sync): ops <= {_events(bounds, 'sync_ops_bound')}",
                  f"drain of one {name} change: ops <= {_events(bounds, 'drain_bound')}"]
    return lines


def staleness_lines(plan: Plan) -> list[str]:
    """The staleness bound of each asynchronous view (planner.staleness)."""
    return [f"staleness of {b.view}: a queued change is applied within ops <= "
            f"{b.entry_ops} x N of maintainer work under in-place (N <= distinct rows "
            f"written since the last drain, one queue entry each; one entry ops <= "
            f"{b.entry_ops}, this view's part <= {b.own_entry_ops}); fifo, linecutting: "
            "no bound" for b in staleness_bounds(plan.views, plan.writes)]


def _events(bounds: list, bound: str) -> str:
    return ", ".join(f"{getattr(w, bound)} ({w.event})" for w in bounds)


def _verdict(found: QueryFindings, width: int, palette: Palette) -> str:
    query = found.plan
    bound = f"ops <= {query.ops_bound}" if query.ops_bound is not None else "no bound"
    needs = [f"index {i.name}" for i in query.indexes] + [f"view {v}" for v in query.views]
    tail = f"  needs {', '.join(needs)}" if needs else ""
    if found.suppressed:
        codes = sorted({d.code for d in found.suppressed})
        tail += f"  (noqa: {', '.join(codes)})"
    level = palette.level(query.level, f"{query.level:<9}")
    return f"{query.name:<{width}}  {level}  {bound}{tail}"


def _diagnostics(found: QueryFindings, palette: Palette) -> list[str]:
    query = found.plan
    lines = []
    for d in found.diagnostics:
        if d.severity == "info" and query.level != Level.UNBOUNDED and d.code == "index":
            continue  # the verdict line already names the index
        where = f"{d.location}: " if d.location else ""
        label = palette.severity(d.severity, f"{d.severity}[{d.code}]")
        lines.append(f"{where}{label} {query.name}: {d.message}")
        if d.hint:
            lines.append(f"    hint: {d.hint}")
    # What -- noqa waived stays readable (an unbounded query's reasons matter while the
    # runtime refuses it), marked suppressed and not an error, without its hint.
    for d in found.suppressed:
        where = f"{d.location}: " if d.location else ""
        label = palette.paint(f"suppressed[{d.code}]", "dim")
        lines.append(f"{where}{label} {query.name}: {d.message}")
    return lines
