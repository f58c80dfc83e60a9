"""``piql lint --format json``: the output contract of DESIGN.md."""
from __future__ import annotations

import json
from typing import Any

from piql.diagnostics import Diagnostic
from piql.lint.findings import Findings, QueryFindings, as_findings
from piql.planner.adaptive import AdaptivePlan
from piql.planner.application import Plan
from piql.planner.staleness import staleness_bounds

FORMAT_VERSION = 1


def render(report: Plan | Findings) -> str:
    return json.dumps(to_dict(report), indent=2) + "\n"


def to_dict(report: Plan | Findings) -> dict[str, Any]:
    found = as_findings(report)
    plan = found.plan
    return {
        "format_version": FORMAT_VERSION,
        "queries": [_query(q) for q in found.queries],
        "indexes": [{"name": i.name, "table": i.table, "columns": list(i.columns)}
                    for i in plan.indexes] if plan else [],
        "views": _views(plan) if plan else [],
        "writes": [{"table": w.table, "event": w.event, "ops_bound": w.ops_bound}
                   | ({"sync_ops_bound": w.sync_ops_bound, "drain_ops_bound": w.drain_bound}
                      if w.deferred else {})
                   for w in plan.writes] if plan else [],
        "summary": found.summary,
        "schema_diagnostics": [diagnostic(d) for d in found.schema],
        "queries_diagnostics": [diagnostic(d) for d in found.notes],
        "errors": [diagnostic(d) for d in found.errors],
        "exit_code": found.exit_code,
    }


def _views(plan: Plan) -> list[dict[str, Any]]:
    """Each view's contract entry; an asynchronous view's adds its ``staleness`` bound."""
    bounds = {b.view: b for b in staleness_bounds(plan.views, plan.writes)}
    return [view.to_json() | ({"staleness": bounds[view.name].to_json()}
                              if view.name in bounds else {})
            for view in plan.views]


def _query(found: QueryFindings) -> dict[str, Any]:
    query = found.plan
    return {
        "name": query.name,
        "level": query.level,
        "ops_bound": query.ops_bound,
        "indexes": [i.name for i in query.indexes],
        "views": list(query.views),
        "rewritten_sql": query.rewritten_sql,
        "diagnostics": [diagnostic(d) for d in found.diagnostics],
        "suppressed": [diagnostic(d) for d in found.suppressed],
        "adaptive": None if query.adaptive is None else _adaptive(query.adaptive),
    }


def _adaptive(plan: AdaptivePlan) -> dict[str, Any]:
    """Both plans' bounds of an adaptive query (docs/adaptive.md)."""
    return {"shape": plan.shape, "pull_ops": plan.pull_ops,
            "push_write_ops": plan.push_write_ops, "push_read_ops": plan.push_read_ops,
            "push_fanout": plan.push.fanout, "push_fanout_capped": plan.push.capped}


def diagnostic(d: Diagnostic) -> dict[str, Any]:
    where = d.location
    return {
        "code": d.code, "id": d.rule_id, "severity": d.severity, "message": d.message,
        "hint": d.hint,
        "file": where.file if where else None,
        "line": where.line if where else None,
        "column": where.column if where else None,
    }
