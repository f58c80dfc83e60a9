"""``piql lint --format json``: the output contract of DESIGN.md."""
from __future__ import annotations

import json
from typing import Any

from piql.diagnostics import Diagnostic
from piql.planner.application import Plan, QueryPlan

FORMAT_VERSION = 1


def render(plan: Plan) -> str:
    return json.dumps(to_dict(plan), indent=2) + "\n"


def to_dict(plan: Plan) -> dict[str, Any]:
    return {
        "format_version": FORMAT_VERSION,
        "queries": [_query(q) for q in plan.queries],
        "indexes": [{"name": i.name, "table": i.table, "columns": list(i.columns)}
                    for i in plan.indexes],
        "views": [view.to_json() for view in plan.views],
        "writes": [{"table": w.table, "event": w.event, "ops_bound": w.ops_bound}
                   for w in plan.writes],
        "summary": plan.summary,
        "schema_diagnostics": [diagnostic(d) for d in plan.catalog.notes],
        "queries_diagnostics": [diagnostic(d) for d in plan.notes],
    }


def _query(query: QueryPlan) -> dict[str, Any]:
    return {
        "name": query.name,
        "level": query.level,
        "ops_bound": query.ops_bound,
        "indexes": [i.name for i in query.indexes],
        "views": list(query.views),
        "rewritten_sql": query.rewritten_sql,
        "diagnostics": [diagnostic(d) for d in query.diagnostics],
    }


def diagnostic(d: Diagnostic) -> dict[str, Any]:
    where = d.location
    return {
        "code": d.code, "severity": d.severity, "message": d.message, "hint": d.hint,
        "file": where.file if where else None,
        "line": where.line if where else None,
        "column": where.column if where else None,
    }
