"""Diagnostics: what piql tells a developer about one query."""
from __future__ import annotations

from dataclasses import dataclass

from piql.errors import Location


@dataclass(frozen=True)
class Diagnostic:
    """One finding: ``code`` is a word of the rule registry (:mod:`piql.rules`)."""

    code: str
    severity: str  # "error" | "warning" | "info"
    message: str
    hint: str = ""
    location: Location | None = None

    @property
    def rule_id(self) -> str:
        """The rule's short id (``PQ101``), or the code itself if the registry lacks it."""
        from piql.rules import rule

        try:
            return rule(self.code).id
        except KeyError:
            return self.code
