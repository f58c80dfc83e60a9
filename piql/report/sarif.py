"""``piql lint --format sarif``: SARIF 2.1.0 for code-scanning tools."""
from __future__ import annotations

import json
from typing import Any

from piql.errors import Location
from piql.planner.application import Plan

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
RULES = {
    "unbounded": "The query has no plan whose work is bounded as data grows.",
    "unsupported": "The query uses SQL outside piql's supported subset.",
    "hotspot": "Writes would concentrate on one partition or row: an index or view keyed "
               "first on a TEMPORAL column, or a single-row aggregate view.",
    "index": "The query needs a secondary index.",
    "view": "The query is answered from a view piql maintains (SI-2) or refreshes (SI-3), "
            "and why it needs one.",
    "view-rejected": "No view answers the query within the scale-independence invariants.",
    "periodic": "The query is answered from a periodically refreshed view (SI-3).",
    "renamed": "A generated view or index name was taken, so piql chose another.",
    "skipped": "A schema statement that does not affect bounds was skipped.",
    "schema": "What piql makes of a schema declaration (an index it does not read, a key).",
}


def render(plan: Plan) -> str:
    results: list[dict[str, Any]] = []
    for query in plan.queries:
        for d in query.diagnostics:
            result: dict[str, Any] = {
                "ruleId": d.code, "level": LEVEL.get(d.severity, "note"),
                "message": {"text": f"{query.name}: {d.message}"
                                    + (f" Hint: {d.hint}" if d.hint else "")},
                "properties": {"query": query.name, "level": query.level},
            }
            if d.location is not None:
                result["locations"] = [_location(d.location)]
            results.append(result)
    for d in plan.catalog.notes:
        result = {"ruleId": d.code, "level": LEVEL.get(d.severity, "note"),
                  "message": {"text": d.message}, "properties": {"schema": plan.catalog.source}}
        if d.location is not None:
            result["locations"] = [_location(d.location)]
        results.append(result)
    for d in plan.notes:
        result = {"ruleId": d.code, "level": LEVEL.get(d.severity, "note"),
                  "message": {"text": d.message}, "properties": {"queries": plan.queries_file}}
        if d.location is not None:
            result["locations"] = [_location(d.location)]
        results.append(result)
    used = sorted({r["ruleId"] for r in results})
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "piql",
                "rules": [{"id": r, "shortDescription": {"text": RULES.get(r, r)}} for r in used],
            }},
            "results": results,
        }],
    }
    return json.dumps(document, indent=2) + "\n"


def _location(where: Location) -> dict[str, Any]:
    return {"physicalLocation": {
        "artifactLocation": {"uri": where.file},
        "region": {"startLine": where.line, "startColumn": where.column},
    }}
