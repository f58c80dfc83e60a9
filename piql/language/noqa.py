"""Inline suppression: ``-- noqa`` and ``-- noqa: CODE[,CODE]`` lines of a ``-- name:`` block.

As in sqlfluff and ruff, ``-- noqa`` alone suppresses every finding of the query and
``-- noqa: unbounded, PQ201`` those codes (words or short ids, :mod:`piql.rules`). The
comment may stand on its own line or end a line of SQL, anywhere in the block. An unknown
code is an input error at its place, so a typo does not silently suppress nothing.
"""
from __future__ import annotations

import re
from typing import Callable

from piql.errors import InputError, Location
from piql.language.scanning import Span
from piql.query_block import Suppression
from piql.rules import resolve

NOQA = re.compile(r"--[^\S\n]*noqa\b(?:[^\S\n]*:[^\S\n]*([^\n]*?))?[^\S\n]*$",
                  re.IGNORECASE | re.MULTILINE)


def find_suppression(body: str, spans: list[Span], offset: int,
                     at: Callable[[int], Location]) -> tuple[Suppression | None, list[InputError]]:
    """The suppression of the block ``body`` (at file offset ``offset``), and its mistakes."""
    codes: set[str] = set()
    every = False
    first: Location | None = None
    errors: list[InputError] = []
    for found in NOQA.finditer(body):
        if not _in_line_comment(spans, found.start()):
            continue
        first = first or at(offset + found.start())
        listed = found.group(1)
        if listed is None or not listed.strip():
            every = True
            continue
        position = found.start(1)
        for item in listed.split(","):
            word = item.strip()
            if word:
                try:
                    codes.update(r.code for r in resolve(word))
                except ValueError as err:
                    errors.append(InputError(f"-- noqa: {err}",
                                             at(offset + position + item.index(word))))
            position += len(item) + 1
    if first is None:
        return None, errors
    return Suppression(None if every else frozenset(codes), first), errors


def _in_line_comment(spans: list[Span], offset: int) -> bool:
    return any(s.kind == "line comment" and s.start <= offset < s.end for s in spans)
