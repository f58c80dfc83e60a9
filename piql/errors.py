"""Errors piql reports to its users.

Every mistake in user input becomes an :class:`InputError` that names the
place (file, line, column) and what was expected; the CLI prints it and exits 2.
"""
from __future__ import annotations

from dataclasses import dataclass


class PiqlError(Exception):
    """Base class of every error piql raises on purpose."""


@dataclass(frozen=True)
class Location:
    """A position in a user's file; line and column count from 1."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class InputError(PiqlError):
    """A malformed or inconsistent schema or query file."""

    def __init__(self, message: str, location: Location | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.location = location

    def __str__(self) -> str:
        if self.location is None:
            return self.message
        return f"{self.location}: {self.message}"
