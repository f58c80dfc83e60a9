"""Parameters, in any of the styles applications write them, made into something sqlglot
parses and positions.

Each parameter outside strings and comments becomes ``$name`` (padded with blanks when
what was written is longer, the written text padded when ``$name`` is longer); after
parsing, each such column becomes a positioned sqlglot Placeholder. The styles:

- ``<name>``, the paper's;
- ``:name``, aiosql's and SQLAlchemy's (not ``::type``, a cast);
- ``%(name)s``, psycopg's (pyformat);
- ``$1``, PostgreSQL's and sqlc's: named ``p1`` (the same number is the same value);
- ``?``, DB-API's qmark: positional, named ``p1``, ``p2``, ... in order of appearance.

A query writes all its parameters in one style: mixing them is an input error.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Callable

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from piql.errors import InputError, Location
from piql.language.blocks import NamedBlock
from piql.language.scanning import (
    QUOTED_KINDS, Span, blank, end_of_line, mark, unclosed,
)

# After whitespace, an operator or punctuation only: `x<y>` is no placeholder (and the
# `$y` it would become must not glue onto a name before it, see Source).
PLACEHOLDER = re.compile(r"(?:^|(?<=[\s(),;.=<>!+\-*/%|&^~]))<([A-Za-z_][A-Za-z0-9_]*)>")
_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
# Every style at once, over code whose comments and quoted text are blanked. ``:name``
# is not after a ':' (``x::text`` is a cast), a name character, '$' or a backslash
# (SQLAlchemy's rule); ``$1`` is not part of a name or of a ``$tag$`` quote.
PARAMETER = re.compile(
    rf"(?:^|(?<=[\s(),;.=<>!+\-*/%|&^~]))<(?P<angle>{_NAME})>"
    rf"|%\((?P<pyformat>{_NAME})\)s"
    rf"|(?<![:\w$\\]):(?P<colon>{_NAME})"
    r"|(?<![\w$])\$(?P<numeric>[1-9][0-9]*)(?![\w$])"
    r"|(?P<qmark>\?)")
BLANK_RUN = re.compile(r"\s+")


class ParamStyle(StrEnum):
    """How a query writes its parameters (the value is how the style is shown)."""

    ANGLE = "<name>"
    COLON = ":name"
    PYFORMAT = "%(name)s"
    NUMERIC = "$1"
    QMARK = "?"


@dataclass(frozen=True)
class Written:
    """One parameter as the query writes it: its name and style, and its text."""

    name: str
    style: ParamStyle
    text: str


@dataclass(frozen=True)
class Source:
    """One block's SQL, ready for sqlglot.

    ``sql`` is ``text`` with comments and whitespace runs made one blank and each
    parameter written ``$name``: sqlglot's default dialect reads ``$name`` as one
    identifier, whatever the name (``<from>`` and ``<limit>`` included), and records
    its position, which a sqlglot placeholder (``:name``, ``?``) would not have.
    ``text`` and ``sql`` have the same length (the shorter of a parameter and its
    ``$name`` is padded with blanks), so an offset of one is an offset of the other.
    """

    text: str  # as written, up to the end of the statement (trailing comments cut)
    sql: str
    params: dict[int, Written]  # the offset of each parameter -> how it is written

    def word(self, token: Token) -> str:
        """How an error message quotes ``token``: keywords bare, anything else as written."""
        if token.start in self.params:
            return repr(self.params[token.start].text)
        written = self.text[token.start:token.end + 1]
        if token.token_type not in (TokenType.VAR, TokenType.IDENTIFIER) and \
                written.replace(" ", "").isalpha():
            return " ".join(written.upper().split())
        return repr(written if len(written) <= 30 else written[:27] + "...")


def prepare(chunk: NamedBlock, at: Callable[[int], Location]
            ) -> tuple[Source, str, Callable[[int], Location]]:
    """The statement of a block, the query's text as shown to users (``NamedQuery.sql``),
    and where an offset of the statement is in the file (``at`` takes offsets of the body).

    sqlglot reads comments and whitespace a character at a time, so they are not given to
    it: every run of them outside quoted text becomes one space (a comment separates
    tokens as a space does), and the returned locator maps the shorter text back.
    """
    body, spans, code, begin = chunk.body, chunk.spans, chunk.code, chunk.sql_from
    problem = unclosed(spans, at)
    if problem is not None:
        raise problem
    end = len(code.rstrip())  # comments after the statement describe the next query
    shown = body[begin:end] + _same_line_comment(body, end, spans)
    found = _parameters(chunk, blank(code, spans, QUOTED_KINDS), begin, end, at)
    # Whitespace runs where code is: comments blanked, quoted text kept opaque.
    opaque = mark(code, spans, QUOTED_KINDS)
    runs = [(run.start(), run.end(), None) for run in BLANK_RUN.finditer(opaque, begin, end)]
    events: list[tuple[int, int, Written | None]] = sorted(runs + found, key=lambda e: e[0])
    # Segments of the short text: (its offset, the body's offset, the last body offset
    # it may map to, for a parameter whose ``$name`` is longer than what was written).
    segments: list[tuple[int, int, int | None]] = []
    short_text: list[str] = []
    short_sql: list[str] = []
    params: dict[int, Written] = {}
    position, last = 0, begin
    for start, stop, written in events:
        if start > last:
            segments.append((position, last, None))
            short_text.append(body[last:start])
            short_sql.append(body[last:start])
            position += start - last
        if written is None:
            segments.append((position, start, None))
            short_text.append(" ")
            short_sql.append(" ")
            width = 1
        else:
            replacement = f"${written.name}"
            width = max(len(replacement), stop - start)
            segments.append((position, start, stop - 1))
            short_text.append(written.text.ljust(width))
            short_sql.append(replacement.ljust(width))
            params[position] = written
        position += width
        last = stop
    segments.append((position, last, None))
    short_text.append(body[last:end])
    short_sql.append(body[last:end])
    shorts = [s[0] for s in segments]

    def original(offset: int) -> int:
        short, long, cap = segments[bisect.bisect_right(shorts, offset) - 1]
        moved = long + offset - short
        return moved if cap is None else min(moved, cap)

    source = Source("".join(short_text), "".join(short_sql), params)
    return source, shown.strip(), lambda offset: at(original(offset))


def _parameters(chunk: NamedBlock, names: str, begin: int, end: int,
                at: Callable[[int], Location]) -> list[tuple[int, int, Written]]:
    """Every parameter of the statement (``names``: the body, comments and quoted text
    blanked), as (start, end, how it is written); a second style is an input error."""
    found: list[tuple[int, int, Written]] = []
    first: tuple[int, Written] | None = None
    positional = 0
    for match in PARAMETER.finditer(names, begin, end):
        style = ParamStyle[match.lastgroup.upper()]  # type: ignore[union-attr]
        if style is ParamStyle.QMARK:
            positional += 1
            name = f"p{positional}"
        elif style is ParamStyle.NUMERIC:
            name = f"p{match.group('numeric')}"
        else:
            name = match.group(style.name.lower())
        written = Written(name, style, chunk.body[match.start():match.end()])
        if first is None:
            first = (match.start(), written)
        elif first[1].style is not style:
            raise InputError(
                f"query '{chunk.name}' mixes parameter styles: {written.text!r} here, "
                f"{first[1].text!r} ({first[1].style} style) at {at(first[0])}; write every "
                "parameter of a query in one style", at(match.start()))
        found.append((match.start(), match.end(), written))
    return found


def _same_line_comment(text: str, end: int, spans: list[Span]) -> str:
    """A ``-- comment`` right after the statement on its last line still belongs to it."""
    rest = text[end:end_of_line(text, end)]
    comment = next((s for s in spans if s.kind == "line comment" and s.start >= end), None)
    if comment is not None and not text[end:comment.start].strip() and \
            comment.start < end + len(rest):
        return rest
    return ""


def bind_parameters(statement: exp.Expression, source: Source,
                    at: Callable[[int], Location]) -> exp.Expression:
    """Turn each ``$name`` column written by prepare into a positioned Placeholder.

    A parameter anywhere else (a table, an alias, a function, ``t.<x>``) stands
    where SQL wants a name, which a value cannot be.
    """
    for node in list(statement.walk()):
        start = node.meta.get("start")
        written = source.params.get(start)
        if written is None or isinstance(node, exp.Placeholder):
            continue
        name = written.name
        column = node.parent
        if not (isinstance(node, exp.Identifier) and not node.quoted
                and isinstance(column, exp.Column) and not column.table and column.this is node):
            raise InputError(f"parameter {written.text} stands where a name is expected",
                             at(start))
        placeholder = exp.Placeholder(this=name)
        width = max(len(written.text), len(name) + 1)  # in the short text, see prepare
        placeholder.meta.update(start=start, end=start + width - 1, param=True,
                                written=written.text)
        column.replace(placeholder)
    return statement
