"""``piql lint --format github``: workflow commands that annotate the pull request."""
from __future__ import annotations

from piql.diagnostics import Diagnostic
from piql.planner.application import Plan
from piql.report import schema_notes

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render(plan: Plan) -> str:
    lines = [_annotation(d, "piql schema") for d in schema_notes.summarized(plan.catalog)]
    lines += [_annotation(d, "piql queries") for d in plan.notes]
    for query in plan.queries:
        for d in query.diagnostics:
            lines.append(_annotation(d, f"piql {d.code}: {query.name}"))
    summary = ", ".join(f"{k} {v}" for k, v in plan.summary.items())
    lines.append(f"piql: {len(plan.queries)} queries: {summary}")
    return "\n".join(lines) + "\n"


def _annotation(d: Diagnostic, title: str) -> str:
    props = [f"title={_escape_property(title)}"]
    if d.location is not None:
        props = [f"file={_escape_property(d.location.file)}",
                 f"line={d.location.line}", f"col={d.location.column}"] + props
    message = d.message + (f" Hint: {d.hint}" if d.hint else "")
    return f"::{COMMAND.get(d.severity, 'notice')} {','.join(props)}::{_escape(message)}"
