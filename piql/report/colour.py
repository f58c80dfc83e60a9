"""ANSI colour for reports on a terminal, by the conventions of NO_COLOR and FORCE_COLOR.

Colour is on when the stream is a terminal; ``NO_COLOR`` (https://no-color.org) turns it
off, ``FORCE_COLOR`` turns it on (for CI logs that render ANSI); NO_COLOR wins.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import IO, Mapping

_CODES = {"red": "31", "yellow": "33", "green": "32", "cyan": "36", "dim": "2", "bold": "1"}
SEVERITY = {"error": "red", "warning": "yellow", "info": "cyan"}
LEVEL = {"SI-0": "green", "SI-1": "green", "SI-2": "green", "SI-3": "green",
         "unbounded": "red"}


def wanted(stream: IO[str] | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether to colour what goes to ``stream`` (None: a file, never unless forced)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    if env.get("FORCE_COLOR", ""):
        return True
    try:
        return stream is not None and stream.isatty()
    except (AttributeError, ValueError):
        return False


@dataclass(frozen=True)
class Palette:
    """Paints text when ``enabled``; returns it unchanged otherwise."""

    enabled: bool = False

    def paint(self, text: str, colour: str) -> str:
        if not self.enabled or not text:
            return text
        return f"\x1b[{_CODES[colour]}m{text}\x1b[0m"

    def severity(self, severity: str, text: str | None = None) -> str:
        return self.paint(severity if text is None else text, SEVERITY.get(severity, "bold"))

    def level(self, level: str, text: str) -> str:
        return self.paint(text, LEVEL.get(level, "bold"))


PLAIN = Palette(False)
