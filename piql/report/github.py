"""``piql lint --format github``: workflow commands that annotate the pull request."""
from __future__ import annotations

from piql.planner.application import Plan

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render(plan: Plan) -> str:
    lines = []
    for query in plan.queries:
        for d in query.diagnostics:
            props = [f"title={_escape_property(f'piql {d.code}: {query.name}')}"]
            if d.location is not None:
                props = [f"file={_escape_property(d.location.file)}",
                         f"line={d.location.line}", f"col={d.location.column}"] + props
            message = d.message + (f" Hint: {d.hint}" if d.hint else "")
            lines.append(f"::{COMMAND.get(d.severity, 'notice')} {','.join(props)}::{_escape(message)}")
    summary = ", ".join(f"{k} {v}" for k, v in plan.summary.items())
    lines.append(f"piql: {len(plan.queries)} queries: {summary}")
    return "\n".join(lines) + "\n"
