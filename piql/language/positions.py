"""Positions: file offsets as Locations, and where a sqlglot node of a statement is."""
from __future__ import annotations

import bisect
import itertools
from typing import Callable

from sqlglot import exp
from sqlglot.tokens import Token, TokenType

from piql.errors import Location

# sqlglot positions identifiers, literals and function names, but not keywords: a
# construct that starts with a keyword is located at that keyword's token, found in
# the gap before the construct's first positioned node (see Places).
JOIN_KEYWORDS = frozenset({
    TokenType.LEFT, TokenType.RIGHT, TokenType.FULL, TokenType.INNER, TokenType.OUTER,
    TokenType.CROSS, TokenType.NATURAL, TokenType.SEMI, TokenType.ANTI, TokenType.JOIN,
    TokenType.STRAIGHT_JOIN,
})
LEADING_KEYWORDS: dict[type, frozenset[TokenType]] = {
    exp.Not: frozenset({TokenType.NOT}),
    exp.Exists: frozenset({TokenType.EXISTS}),
    exp.Case: frozenset({TokenType.CASE}),
    exp.Subquery: frozenset({TokenType.L_PAREN}),
    exp.Having: frozenset({TokenType.HAVING}),
    exp.Limit: frozenset({TokenType.LIMIT}),
    exp.Offset: frozenset({TokenType.OFFSET}),
    exp.With: frozenset({TokenType.WITH}),
    exp.Distinct: frozenset({TokenType.DISTINCT}),
    exp.Join: JOIN_KEYWORDS,
    exp.Union: frozenset({TokenType.UNION}),
    exp.Intersect: frozenset({TokenType.INTERSECT}),
    exp.Except: frozenset({TokenType.EXCEPT}),
}


class LineIndex:
    """Where each line of a file starts, so an offset becomes a Location in log time
    (worked out on the first question: a file without mistakes may never ask)."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.text = text
        self.starts: list[int] | None = None

    def location(self, offset: int) -> Location:
        if self.starts is None:
            self.starts = list(itertools.accumulate(
                (len(line) + 1 for line in self.text.split("\n")), initial=0))
        line = bisect.bisect_right(self.starts, offset)
        return Location(self.file, line, offset - self.starts[line - 1] + 1)


class Places:
    """Where the nodes of one statement are in the file.

    sqlglot records positions on identifiers, literals and function names (and
    bind_parameters on placeholders). A node is where its first positioned
    descendant is, except a construct that starts with a keyword (LEADING_KEYWORDS):
    that keyword has no node, so its token is looked up between the last positioned
    node before the construct and the construct's first positioned node.
    """

    def __init__(self, statement: exp.Expression, tokens: list[Token],
                 at: Callable[[int], Location], fallback: Location) -> None:
        self.statement = statement
        self.tokens = tokens
        self.at = at
        self.fallback = fallback
        self.ends = sorted(n.meta["end"] for n in statement.walk() if "end" in n.meta)

    def of(self, node: exp.Expression) -> Location:
        keywords = LEADING_KEYWORDS.get(type(node))
        offset = self._keyword(_anchor(node), keywords) if keywords else None
        if offset is None and node is self.statement and self.tokens:
            offset = self.tokens[0].start
        if offset is None:
            offset = _start(node)
        return self.at(offset) if offset is not None else self.fallback

    def _keyword(self, anchor: exp.Expression | None, kinds: frozenset[TokenType]) -> int | None:
        first = _start(anchor) if anchor is not None else None
        if first is None:
            return None
        before = bisect.bisect_left(self.ends, first)
        low = self.ends[before - 1] if before else -1
        return next((t.start for t in self.tokens
                     if low < t.start < first and t.token_type in kinds), None)


def _start(node: exp.Expression) -> int | None:
    starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
    return min(starts) if starts else None


def _anchor(node: exp.Expression) -> exp.Expression | None:
    """The node right after a construct's keyword."""
    if isinstance(node, exp.SetOperation):  # UNION: the keyword comes before the right branch
        return node.expression
    if isinstance(node, exp.Distinct) and isinstance(node.parent, exp.Select):
        return node.parent.expressions[0] if node.parent.expressions else None
    return node
