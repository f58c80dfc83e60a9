"""Syntax errors in plain words: sqlglot's first error, said from the tokens around it."""
from __future__ import annotations

import re

from sqlglot.errors import ParseError
from sqlglot.parser import Parser
from sqlglot.tokens import Token, TokenType

from piql.language.placeholders import Source
from piql.language.positions import JOIN_KEYWORDS


MISSING = re.compile(r"Required keyword: '(\w+)' missing for <class '(?:[\w.]*\.)?(\w+)'>")


def _binary_operators() -> dict[str, frozenset[TokenType]]:
    """sqlglot's binary expression classes and the operator tokens that make them."""
    found: dict[str, set[TokenType]] = {}
    for table in ("EQUALITY", "COMPARISON", "TERM", "FACTOR", "CONJUNCTION", "DISJUNCTION",
                  "BITWISE"):
        for token_type, klass in getattr(Parser, table, {}).items():
            found.setdefault(klass.__name__, set()).add(token_type)
    return {name: frozenset(types) for name, types in found.items()}


BINARY_OPERATORS = _binary_operators()
CLAUSE_KEYWORDS: dict[str, frozenset[TokenType]] = {
    "Where": frozenset({TokenType.WHERE}), "Having": frozenset({TokenType.HAVING}),
    "Group": frozenset({TokenType.GROUP_BY}), "Order": frozenset({TokenType.ORDER_BY}),
    "Limit": frozenset({TokenType.LIMIT}), "Offset": frozenset({TokenType.OFFSET}),
    "From": frozenset({TokenType.FROM}), "Join": JOIN_KEYWORDS,
    "Not": frozenset({TokenType.NOT}), "Between": frozenset({TokenType.BETWEEN}),
    "In": frozenset({TokenType.IN}), "Like": frozenset({TokenType.LIKE}),
    "Is": frozenset({TokenType.IS}),
}
EXPECTED = {"Where": "a condition", "Having": "a condition", "And": "a condition",
            "Or": "a condition", "Not": "a condition", "Limit": "a number", "Offset": "a number"}
# Tokens that cannot follow a comma: the comma left an empty item in a list.
AFTER_EMPTY_ITEM = frozenset({
    TokenType.COMMA, TokenType.R_PAREN, TokenType.SEMICOLON, TokenType.FROM, TokenType.WHERE,
    TokenType.GROUP_BY, TokenType.ORDER_BY, TokenType.HAVING, TokenType.LIMIT, TokenType.OFFSET,
    TokenType.ON, TokenType.UNION, *JOIN_KEYWORDS,
})


def syntax_problem(err: ParseError, tokens: list[Token], source: Source) -> tuple[str, int]:
    """Say what sqlglot's first error means, in words, and at which offset.

    sqlglot's own descriptions name its classes and tokens ("<class
    'sqlglot.expressions.EQ'>", "<Token token_type: ...>"), which mean nothing to
    a user; they are rewritten from the tokens around the error instead.
    """
    detail = (getattr(err, "errors", None) or [{}])[0]
    description = detail.get("description") or ""
    index = next((i for i, t in enumerate(tokens)
                  if (t.line, t.col) == (detail.get("line"), detail.get("col"))), None)
    if index is None:
        first = len(source.sql) - len(source.sql.lstrip())
        return "the query cannot be read", first
    token, last = tokens[index], index == len(tokens) - 1
    missing = MISSING.match(description)
    if missing:
        return _missing_part(missing.group(2), missing.group(1), tokens, index, source)
    if description.startswith("Expected table name"):
        return _missing_after("a table name", tokens, _find_back(
            tokens, index, CLAUSE_KEYWORDS["From"] | JOIN_KEYWORDS), index, source)
    if description.startswith("Expecting "):
        wanted = repr(description[len("Expecting "):].strip())
        if last:
            return f"unexpected end of query after {source.word(token)}, expected {wanted}", token.start
        return f"expected {wanted}, found {source.word(token)}", token.start
    if "<" in description or "Unexpected token" in description:
        return f"unexpected {source.word(token)}", token.start
    return description, token.start


def _missing_part(klass: str, part: str, tokens: list[Token], index: int,
                  source: Source) -> tuple[str, int]:
    """A ``Required keyword: 'part' missing for <class klass>`` error, in words."""
    what = EXPECTED.get(klass, "an expression")
    operators = BINARY_OPERATORS.get(klass) or CLAUSE_KEYWORDS.get(klass)
    operator = _find_back(tokens, index, operators) if operators else None
    if operator is None:
        token = tokens[index]
        return f"incomplete {klass.upper()} at {source.word(token)}", token.start
    if part == "this" and klass in BINARY_OPERATORS:  # the left operand is missing
        return f"expected {what} before {source.word(tokens[operator])}", tokens[operator].start
    return _missing_after(what, tokens, operator, index, source)


def _missing_after(what: str, tokens: list[Token], operator: int | None, index: int,
                   source: Source) -> tuple[str, int]:
    """``what`` should follow the token at ``operator``: say what came instead, or that none did."""
    if operator is None:
        token = tokens[index]
        return f"expected {what}, found {source.word(token)}", token.start
    keyword = tokens[operator]
    if operator + 1 >= len(tokens):
        return f"unexpected end of query after {source.word(keyword)}, expected {what}", keyword.start
    found = tokens[operator + 1]
    return (f"expected {what} after {source.word(keyword)}, found {source.word(found)}",
            found.start)


def _find_back(tokens: list[Token], index: int, kinds: frozenset[TokenType]) -> int | None:
    """The token of ``kinds`` that a construct erroring at ``index`` started with.

    sqlglot reports the token it stood on, or at the end of the query its last token;
    so the construct's own token is before ``index``, or is the last token itself.
    """
    if index == len(tokens) - 1 and tokens[index].token_type in kinds:
        return index
    for i in range(index - 1, -1, -1):
        if tokens[i].token_type in kinds:
            return i
    return index if tokens[index].token_type in kinds else None


def empty_list_item(tokens: list[Token], source: Source) -> tuple[str, int] | None:
    """sqlglot silently drops an empty list item (``SELECT a,, b``, ``FROM t,``): refuse it."""
    for i, token in enumerate(tokens):
        if token.token_type is not TokenType.COMMA:
            continue
        after = tokens[i + 1] if i + 1 < len(tokens) else None
        if after is None:
            return "unexpected end of query after ','", token.start
        if after.token_type in AFTER_EMPTY_ITEM:
            return f"expected an expression after ',', found {source.word(after)}", after.start
        before = tokens[i - 1] if i else None
        if before is None or before.token_type in (TokenType.SELECT, TokenType.L_PAREN):
            start = f"after {source.word(before)}" if before else "at the start of the query"
            return f"expected an expression {start}, found ','", token.start
    return None
