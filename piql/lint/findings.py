"""What lint reports and what fails it: a plan's diagnostics after ``--select``,
``--ignore`` and ``-- noqa``, and the exit status ``--fail-on`` gives them.

``--select``/``--ignore`` drop diagnostics from the report, as in ruff. ``-- noqa`` in a
query's block keeps them in the report marked suppressed (so a reader sees what was
waived), but they no longer fail the run; ``-- noqa: unbounded`` waives an unbounded
query's verdict, with the errors that explain it. Input errors (code ``input``) are never
dropped, and always exit 2.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from piql.diagnostics import Diagnostic
from piql.errors import InputError
from piql.planner.application import Plan, QueryPlan
from piql.planner.levels import LEVELS
from piql.query_block import Suppression
from piql.rules import Severity

EXIT_OK, EXIT_FAILED, EXIT_INPUT = 0, 1, 2
INPUT, UNBOUNDED = "input", "unbounded"


@dataclass(frozen=True)
class Policy:
    """Which codes are reported (``select`` minus ``ignore``) and which severity fails."""

    select: frozenset[str] | None = None  # word codes; None: every code
    ignore: frozenset[str] = frozenset()
    fail_on: Severity = Severity.ERROR

    def reports(self, code: str) -> bool:
        if code == INPUT:
            return True
        return (self.select is None or code in self.select) and code not in self.ignore

    def fails(self, severity: str) -> bool:
        try:
            return Severity(severity).rank >= self.fail_on.rank
        except ValueError:
            return False


@dataclass(frozen=True)
class QueryFindings:
    """One query's verdict with the diagnostics reported and those its ``-- noqa`` waived."""

    plan: QueryPlan
    diagnostics: tuple[Diagnostic, ...]
    suppressed: tuple[Diagnostic, ...] = ()

    @property
    def name(self) -> str:
        return self.plan.name


@dataclass(frozen=True)
class Findings:
    """Everything one lint run reports: a plan's findings, or the input errors that stopped
    it from being made (then ``plan`` is None)."""

    plan: Plan | None
    queries: tuple[QueryFindings, ...] = ()
    schema: tuple[Diagnostic, ...] = ()
    errors: tuple[Diagnostic, ...] = ()
    policy: Policy = field(default_factory=Policy)
    notes: tuple[Diagnostic, ...] = ()  # on the queries files (blocks skipped, ...)

    @property
    def reported(self) -> list[Diagnostic]:
        """Every diagnostic reported (not suppressed), errors first."""
        return list(self.errors) + list(self.schema) + list(self.notes) + [
            d for q in self.queries for d in q.diagnostics]

    @property
    def suppressed_count(self) -> int:
        return sum(len(q.suppressed) for q in self.queries)

    def failing(self, d: Diagnostic) -> bool:
        return self.policy.fails(d.severity)

    @property
    def exit_code(self) -> int:
        if self.errors:
            return EXIT_INPUT
        return EXIT_FAILED if any(self.failing(d) for d in self.reported) else EXIT_OK

    @property
    def summary(self) -> dict[str, int]:
        if self.plan is None:
            return {level: 0 for level in LEVELS}
        return self.plan.summary


def findings(plan: Plan, policy: Policy = Policy()) -> Findings:
    """``plan``'s diagnostics under ``policy`` and each query's ``-- noqa``."""
    queries = []
    for query in plan.queries:
        noqa = query.query.noqa
        selected = [d for d in query.diagnostics if policy.reports(d.code)]
        waived = tuple(d for d in selected if noqa is not None and _waives(noqa, query, d))
        queries.append(QueryFindings(query, tuple(d for d in selected if d not in waived), waived))
    schema = tuple(d for d in plan.catalog.notes if policy.reports(d.code))
    notes = tuple(d for d in plan.notes if policy.reports(d.code))
    return Findings(plan, tuple(queries), schema, (), policy, notes)


def _waives(noqa: Suppression, query: QueryPlan, d: Diagnostic) -> bool:
    """Whether ``noqa`` suppresses ``d``: its code, or, for ``-- noqa: unbounded`` on an
    unbounded query, every error that says why it is unbounded (view-rejected, ...): the
    verdict is what was waived."""
    if noqa.covers(d.code):
        return True
    return noqa.covers(UNBOUNDED) and not query.bounded and d.severity == Severity.ERROR


def input_failure(error: InputError, policy: Policy = Policy()) -> Findings:
    """The findings of a run stopped by ``error`` (and the others found with it)."""
    errors = getattr(error, "all_errors", None) or [error]
    return Findings(None, errors=tuple(
        Diagnostic(INPUT, "error", e.message, "", e.location) for e in errors), policy=policy)


def as_findings(report: Plan | Findings) -> Findings:
    """A renderer's argument as findings (a bare plan: every diagnostic, the defaults)."""
    return report if isinstance(report, Findings) else findings(report)
