"""Lexical scanning of a queries file: where comments and quoted text are, and lines.

Placeholders, header lines and SQL are looked for only outside comments and quoted
text; every function keeps character offsets, so positions map back to the file.
"""
from __future__ import annotations

import bisect
import re
from typing import Callable, NamedTuple

from piql.errors import InputError, Location

COMMENT_KINDS = frozenset({"line comment", "block comment"})
QUOTED_KINDS = frozenset({"string", "identifier"})


class Span(NamedTuple):
    """A comment or a quoted string/identifier: text where SQL code and placeholders are not.

    A "line comment" span is a run of line comments with only whitespace between them
    (so the only code-free stretch of it is that whitespace)."""

    kind: str  # "line comment", "block comment", "string" or "identifier"
    start: int
    end: int  # exclusive
    closed: bool = True


# Where a comment or a quoted text may start. Line comments end at their line break ('\n'
# or '\r', as sqlglot ends them) and are matched whole, consecutive ones (whitespace
# between) as one span: a file may hold millions of comment lines; so are block comments
# without nested ones. Nested block comments and quoted text are read by the helpers
# below.
# (Possessive quantifiers: a run of a million comments must not leave a backtracking trail.)
_FLAT_BLOCK = r"/\*[^*/]*+(?:(?:\*++(?!/)|/(?!\*))[^*/]*+)*+\*++/"  # none nested inside
SPECIAL = re.compile(rf"(--)[^\r\n]*+(?:\s*+--[^\r\n]*+)*+|({_FLAT_BLOCK}(?:\s*+{_FLAT_BLOCK})*+)"
                     r"|/\*|['\"]")


def scan(text: str) -> list[Span]:
    """The comments and quoted text of ``text``, read as sqlglot's default dialect reads them.

    Linear in the length of ``text``: every search starts where the last one ended.
    """
    spans: list[Span] = []
    i = 0
    search = SPECIAL.search
    while True:
        found = search(text, i)
        if found is None:
            return spans
        i = found.start()
        if found.group(1):
            span = Span("line comment", i, found.end())
        elif found.group(2):
            span = Span("block comment", i, found.end())
        elif text[i] == "/":
            span = _block_comment(text, i)
        elif text[i] == "'":
            span = _quoted(text, i, "string")
        else:
            span = _quoted(text, i, "identifier")
        spans.append(span)
        i = span.end


def end_of_line(text: str, start: int) -> int:
    """Where the line holding ``start`` ends: its first '\n' or '\r' (a '\r' is searched for
    only up to the '\n', so a file of many lines is read once, not once per line)."""
    newline = text.find("\n", start)
    limit = len(text) if newline < 0 else newline
    carriage = text.find("\r", start, limit)
    return carriage if carriage >= 0 else limit


BLOCK_MARK = re.compile(r"/\*|\*/")


def _block_comment(text: str, start: int) -> Span:
    """``/* ... */``, nested as sqlglot nests them; unclosed, it runs to the end."""
    depth, i = 0, start
    while True:
        mark = BLOCK_MARK.search(text, i)
        if mark is None:
            return Span("block comment", start, len(text), closed=False)
        depth += 1 if mark.group() == "/*" else -1
        i = mark.end()
        if depth == 0:
            return Span("block comment", start, i)


def _quoted(text: str, start: int, kind: str) -> Span:
    """A quoted string (``''`` escapes a quote) or identifier; unclosed, it runs to the end."""
    quote, i = text[start], start + 1
    while True:
        i = text.find(quote, i)
        if i < 0:
            return Span(kind, start, len(text), closed=False)
        if kind == "string" and text.startswith(quote * 2, i):
            i += 2
            continue
        return Span(kind, start, i + 1)


def blank(text: str, spans: list[Span], kinds: frozenset[str]) -> str:
    """``text`` with the spans of ``kinds`` replaced by spaces, line breaks too (what is
    left is code, and only where it is matters); offsets stay."""
    pieces, last = [], 0
    for span in spans:
        if span.kind in kinds:
            pieces += [text[last:span.start], " " * (span.end - span.start)]
            last = span.end
    pieces.append(text[last:])
    return "".join(pieces)


def unclosed(spans: list[Span], at: Callable[[int], Location]) -> InputError | None:
    for span in spans:
        if not span.closed:
            what = {"block comment": "'/*' comment", "string": "string literal",
                    "identifier": "quoted identifier"}[span.kind]
            return InputError(f"SQL syntax error: unterminated {what}", at(span.start))
    return None


def line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def at_line_start(text: str, found: re.Match) -> bool:
    """Whether only whitespace stands before ``found`` on its line."""
    start = found.start()
    return not text[line_start(text, start):start].strip()


def line_end(text: str, start: int) -> int:
    """The offset after the line holding ``start``, its '\n' included."""
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline + 1


def line_comment_at(spans: list[Span], offset: int) -> bool:
    """Whether the '--' at ``offset``, first on its line, starts a line comment: it is in a
    run of line comments, which holds nothing else at the start of a line (``spans`` are
    in order of their start)."""
    found = bisect.bisect_right(spans, offset, key=lambda span: span.start) - 1
    return found >= 0 and spans[found].kind == "line comment" and offset < spans[found].end


def mark(text: str, spans: list[Span], kinds: frozenset[str]) -> str:
    """``text`` with the spans of ``kinds`` made opaque (no whitespace in them)."""
    pieces, last = [], 0
    for span in spans:
        if span.kind in kinds:
            pieces += [text[last:span.start], "x" * (span.end - span.start)]
            last = span.end
    pieces.append(text[last:])
    return "".join(pieces)
