"""What piql says about the schema itself (``Catalog.notes``), shaped for the report formats.

Machine formats (json, sarif) carry every note. Formats people read (text,
github) sum up the statements skipped for not affecting bounds in one line
per file, so a ``pg_dump -s`` with sixty ``SET``, ``GRANT`` and ``OWNER TO``
statements does not bury the verdicts.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.report.colour import PLAIN, Palette

_NO_EFFECT = ": does not affect bounds"


def summarized(source: Catalog | Iterable[Diagnostic]) -> list[Diagnostic]:
    """The notes (a catalog's, or those lint reports), the routine skips of each file folded
    into one note at the first of them."""
    notes = list(source.notes if isinstance(source, Catalog) else source)
    routine = [n for n in notes if n.code == "skipped" and n.message.endswith(_NO_EFFECT)]
    if len(routine) < 2:
        return notes
    kinds = Counter(n.message.removeprefix("skipped ").removesuffix(_NO_EFFECT) for n in routine)
    listed = ", ".join(f"{kind} ({count})" for kind, count in kinds.items())
    summary = Diagnostic("skipped", "info",
                         f"skipped {len(routine)} statements that do not affect bounds: {listed}",
                         "", routine[0].location)
    rest = [n for n in notes if n not in routine]
    return [summary] + rest


def text_lines(notes: Catalog | Iterable[Diagnostic], palette: Palette = PLAIN,
               queries_notes: Iterable[Diagnostic] = ()) -> list[str]:
    """``file:line:col: info[code] message`` for each summarized note, then for each of
    ``queries_notes`` (the queries files' own)."""
    lines = []
    for d in summarized(notes) + list(queries_notes):
        where = f"{d.location}: " if d.location is not None else ""
        lines.append(f"{where}{palette.severity(d.severity, f'{d.severity}[{d.code}]')} "
                     f"{d.message}")
    return lines
