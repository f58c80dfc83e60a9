"""``<name>`` placeholders made into something sqlglot parses and positions.

Each ``<name>`` outside strings and comments becomes ``$name`` plus a blank (the
same length, so every offset stays the file's); after parsing, each such column
becomes a positioned sqlglot Placeholder.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
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
BLANK_RUN = re.compile(r"\s+")


@dataclass(frozen=True)
class Source:
    """One block's SQL, ready for sqlglot.

    ``sql`` is ``text`` with each ``<name>`` outside strings and comments written
    ``$name`` plus a blank: the same length, so every offset is still an offset of
    the file. sqlglot's default dialect reads ``$name`` as one identifier, whatever
    the name (``<from>`` and ``<limit>`` included), and records its position,
    which a sqlglot placeholder (``:name``) would not have.
    """

    text: str  # as written, up to the end of the statement (trailing comments cut)
    sql: str
    params: dict[int, str]  # the offset of each placeholder's '<' -> its name

    def word(self, token: Token) -> str:
        """How an error message quotes ``token``: keywords bare, anything else as written."""
        if token.start in self.params:
            return repr(f"<{self.params[token.start]}>")
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
    names = blank(code, spans, QUOTED_KINDS)
    pieces, last = [], begin
    params: dict[int, str] = {}
    bracket = names.find("<", begin, end)
    while bracket >= 0:
        found = PLACEHOLDER.match(names, bracket)
        if found is not None:
            name = found.group(1)
            pieces += [body[last:bracket], f"${name} "]
            last = found.end()
            params[bracket] = name
        bracket = names.find("<", max(bracket + 1, last), end)
    sql = "".join(pieces) + body[last:end]  # from ``begin`` on: offset o of body is o - begin
    # Whitespace runs where code is: comments blanked, quoted text kept opaque.
    opaque = mark(code, spans, QUOTED_KINDS)
    kept: list[tuple[int, int]] = []  # (offset in the short text, offset in body)
    short_text, short_sql, position, last = [], [], 0, begin
    for run in BLANK_RUN.finditer(opaque, begin, end):
        short_text += [body[last:run.start()], " "]
        short_sql += [sql[last - begin:run.start() - begin], " "]
        kept.append((position, last))
        position += run.start() - last
        kept.append((position, run.start()))
        position += 1
        last = run.end()
    kept.append((position, last))
    short_text.append(body[last:end])
    short_sql.append(sql[last - begin:end - begin])
    shorts, longs = [k[0] for k in kept], [k[1] for k in kept]

    def original(offset: int) -> int:
        segment = bisect.bisect_right(shorts, offset) - 1
        return longs[segment] + offset - shorts[segment]

    def shorter(offset: int) -> int:  # of an offset outside the collapsed runs
        segment = bisect.bisect_right(longs, offset) - 1
        return shorts[segment] + offset - longs[segment]

    source = Source("".join(short_text), "".join(short_sql),
                    {shorter(offset): name for offset, name in params.items()})
    return source, shown.strip(), lambda offset: at(original(offset))


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
        name = source.params.get(start)
        if name is None or isinstance(node, exp.Placeholder):
            continue
        column = node.parent
        if not (isinstance(node, exp.Identifier) and not node.quoted
                and isinstance(column, exp.Column) and not column.table and column.this is node):
            raise InputError(f"parameter <{name}> stands where a name is expected", at(start))
        placeholder = exp.Placeholder(this=name)
        placeholder.meta.update(start=start, end=start + len(name) + 1, param=True)
        column.replace(placeholder)
    return statement
