"""``piql lint --format github``: workflow commands that annotate the pull request.

Only findings are printed: errors and warnings (and info when ``--fail-on info`` makes
them fail the run), never notices for queries that are fine, nor what ``-- noqa``
suppressed. The summary goes to standard error (see :func:`summary`).
"""
from __future__ import annotations

from piql.diagnostics import Diagnostic
from piql.lint.findings import Findings, as_findings
from piql.planner.application import Plan
from piql.report import schema_notes
from piql.rules import Severity

COMMAND = {"error": "error", "warning": "warning", "info": "notice"}


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Plan | Findings) -> str:
    found = as_findings(report)
    lines = [_annotation(d, _title(d)) for d in found.errors]
    lines += [_annotation(d, _title(d, "schema")) for d in schema_notes.summarized(found.schema)
              if _shown(d, found)]
    lines += [_annotation(d, _title(d, "queries")) for d in found.notes if _shown(d, found)]
    for query in found.queries:
        lines += [_annotation(d, _title(d, query.name)) for d in query.diagnostics
                  if _shown(d, found)]
    return "".join(line + "\n" for line in lines)


def summary(report: Plan | Findings) -> str:
    """``piql: N queries: SI-0 a, ...`` and what was suppressed, for the log."""
    found = as_findings(report)
    counts = ", ".join(f"{k} {v}" for k, v in found.summary.items())
    line = f"piql: {len(found.queries)} queries: {counts}"
    if found.suppressed_count:
        line += f"; {found.suppressed_count} suppressed by -- noqa"
    return line


def _shown(d: Diagnostic, found: Findings) -> bool:
    """A finding: a warning or error, or anything that fails the run."""
    return d.severity in (Severity.ERROR, Severity.WARNING) or found.failing(d)


def _title(d: Diagnostic, subject: str | None = None) -> str:
    return f"piql {d.code} ({d.rule_id})" + (f": {subject}" if subject else "")


def _annotation(d: Diagnostic, title: str) -> str:
    props = [f"title={_escape_property(title)}"]
    if d.location is not None:
        props = [f"file={_escape_property(d.location.file)}",
                 f"line={d.location.line}", f"col={d.location.column}"] + props
    message = d.message + (f" Hint: {d.hint}" if d.hint else "")
    return f"::{COMMAND.get(d.severity, 'notice')} {','.join(props)}::{_escape(message)}"
