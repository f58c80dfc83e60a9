"""``piql lint --format sarif``: SARIF 2.1.0 for code-scanning tools.

Every rule of the registry is listed with its explanation and a ``helpUri`` to its section
of docs/rules.md, under the project's Documentation URL (pyproject.toml). A finding ``-- noqa`` waived is kept with an in-source suppression, which
code-scanning tools show as dismissed. Input errors are results of rule ``input`` and
make the invocation unsuccessful.
"""
from __future__ import annotations

import json
from typing import Any

from piql.diagnostics import Diagnostic
from piql.errors import Location
from piql.lint.findings import Findings, as_findings
from piql.planner.application import Plan
from piql.rules import RULES
from piql.version import documentation, version

LEVEL = {"error": "error", "warning": "warning", "info": "note"}
_INDEX = {r.code: i for i, r in enumerate(RULES)}


def render(report: Plan | Findings) -> str:
    found = as_findings(report)
    results: list[dict[str, Any]] = [_result(d, d.message, {}) for d in found.errors]
    for query in found.queries:
        facts = {"query": query.name, "level": query.plan.level}
        for d in query.diagnostics:
            results.append(_result(d, _text(query.name, d), facts))
        for d in query.suppressed:
            result = _result(d, _text(query.name, d), facts)
            result["suppressions"] = [{"kind": "inSource", "justification": "-- noqa"}]
            results.append(result)
    source = found.plan.catalog.source if found.plan else None
    for d in found.schema:
        results.append(_result(d, d.message, {"schema": source}))
    queries_file = found.plan.queries_file if found.plan else None
    for d in found.notes:
        results.append(_result(d, d.message, {"queries": queries_file}))
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "piql",
                "version": version(),
                "informationUri": documentation(),
                "rules": [_rule(r) for r in RULES],
            }},
            "invocations": [{"executionSuccessful": not found.errors,
                             "exitCode": found.exit_code}],
            "results": results,
        }],
    }
    return json.dumps(document, indent=2) + "\n"


def _text(query: str, d: Diagnostic) -> str:
    return f"{query}: {d.message}" + (f" Hint: {d.hint}" if d.hint else "")


def _result(d: Diagnostic, text: str, properties: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "ruleId": d.code, "level": LEVEL.get(d.severity, "note"), "message": {"text": text},
        "properties": dict(properties, id=d.rule_id),
    }
    if d.code in _INDEX:
        result["ruleIndex"] = _INDEX[d.code]
    if d.location is not None:
        result["locations"] = [_location(d.location)]
    return result


def _rule(r) -> dict[str, Any]:
    return {
        "id": r.code,
        "name": r.id,
        "shortDescription": {"text": r.summary},
        "fullDescription": {"text": r.explanation},
        "help": {"text": f"{r.explanation}\n\nFix: {r.fix}",
                 "markdown": f"{r.explanation}\n\n**Example**\n\n```sql\n{r.example}\n```\n\n"
                             f"**Fix**: {r.fix}"},
        "helpUri": r.help_uri,
        "defaultConfiguration": {"level": LEVEL[r.severity.value]},
    }


def _location(where: Location) -> dict[str, Any]:
    return {"physicalLocation": {
        "artifactLocation": {"uri": where.file},
        "region": {"startLine": where.line, "startColumn": where.column},
    }}
