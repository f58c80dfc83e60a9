"""Diagnostics: what piql tells a developer about one query."""
from __future__ import annotations

from dataclasses import dataclass

from piql.errors import Location


@dataclass(frozen=True)
class Diagnostic:
    code: str
    severity: str  # "error" | "warning" | "info"
    message: str
    hint: str = ""
    location: Location | None = None
