"""The queries file: ``-- name:`` blocks of parameterized SQL, parsed with sqlglot.

A block is a ``-- name: <queryName>`` line, optional ``-- view: <name>`` and
``-- periodic: <interval>`` lines (anywhere before the SQL), then one SQL
statement. Comments after the statement belong to the next block.

``load_queries`` splits the file into blocks, turns ``<param>`` placeholders
into something sqlglot parses *and positions* while keeping every character
offset (so positions map back to the file), and normalizes each statement
into a :class:`~piql.query.QueryBlock` resolved against the catalog.
Constructs outside the supported subset are collected per query as
:class:`~piql.query.Unsupported`. Mistakes (malformed blocks, syntax errors,
unknown or ambiguous names) are collected over the whole file; the first by
position is raised as :class:`~piql.errors.InputError`, carrying all of them
in ``all_errors``.
"""
from __future__ import annotations

import bisect
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, NamedTuple

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError
from sqlglot.parser import Parser
from sqlglot.tokens import Token, Tokenizer, TokenType

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.interval import parse_interval
from piql.source_text import read_source
from piql.query import (
    default_name, Aggregate, Attr, Epoch, Expr, Literal, NamedQuery, Operand, OrderItem,
    Param, QueryBlock, Relation, SelectItem, Unsupported, normalized_predicate,
)

# Header lines, found in a whole text at once (re.M): only '\n' ends a line, as in
# Location ([^\S\n] is whitespace that does not end the line). The patterns start at the
# '--', which the regex engine finds fast; _at_line_start checks what precedes it.
NAME_LINE = re.compile(r"--[^\S\n]*name[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                       re.IGNORECASE | re.MULTILINE)
OPTION_LINE = re.compile(r"--[^\S\n]*(periodic|view)[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                         re.IGNORECASE | re.MULTILINE)
# A header comment that reads like an option: one word right after '--', then ':'.
KEY_LINE = re.compile(r"--[^\S\n]*([A-Za-z][A-Za-z_-]*)[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                      re.MULTILINE)
OPTIONS = ("name", "view", "periodic")
# After whitespace, an operator or punctuation only: `x<y>` is no placeholder (and the
# `$y` it would become must not glue onto a name before it, see _Source).
PLACEHOLDER = re.compile(r"(?:^|(?<=[\s(),;.=<>!+\-*/%|&^~]))<([A-Za-z_][A-Za-z0-9_]*)>")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
INT64 = (-2**63, 2**63 - 1)

AGGREGATES = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
    exp.Median: "MEDIAN", exp.Variance: "VARIANCE", exp.VariancePop: "VAR_POP",
    exp.Stddev: "STDDEV", exp.StddevPop: "STDDEV_POP", exp.StddevSamp: "STDDEV_SAMP",
}
COMPARISON_NODES = {exp.EQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
UNSUPPORTED_NODES: dict[type, tuple[str, str]] = {
    exp.Or: ("OR", "split the query into one query per alternative"),
    exp.Not: ("NOT", "state the condition positively"),
    exp.Like: ("LIKE", "keep a word table keyed on the word and compare with ="),
    exp.ILike: ("ILIKE", "keep a word table keyed on the word and compare with ="),
    exp.In: ("IN", "run one query per value, or join with a table of the values"),
    exp.Exists: ("EXISTS", "rewrite the subquery as a join"),
    exp.Window: ("window function", "use GROUP BY, or ORDER BY ... LIMIT"),
    exp.NEQ: ("<>", "a bounded plan cannot skip values; filter in the application"),
    exp.Is: ("IS", "NULL tests are not supported"),
    exp.Case: ("CASE", "compute the value in the application"),
    exp.Union: ("UNION", "split the query into one query per branch"),
    exp.Intersect: ("INTERSECT", "rewrite as a join"),
    exp.Except: ("EXCEPT", "not supported"),
    exp.Distinct: ("DISTINCT", "group by the selected columns instead"),
}

# sqlglot positions identifiers, literals and function names, but not keywords: a
# construct that starts with a keyword is located at that keyword's token, found in
# the gap before the construct's first positioned node (see _Places).
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


def load_queries(path: str | Path, catalog: Catalog) -> tuple[NamedQuery, ...]:
    """Read and resolve the queries file at ``path`` (UTF-8)."""
    return parse_queries(read_source(path, "queries file"), catalog, str(path))


def parse_queries(text: str, catalog: Catalog, file: str = "<queries>") -> tuple[NamedQuery, ...]:
    """Parse every ``-- name:`` block of ``text``.

    Every mistake in the file is collected; the first by position is raised,
    with all of them (itself included) in its ``all_errors`` attribute.
    """
    at = _LineIndex(text, file).location
    chunks, errors = _split_blocks(text, at)
    queries: list[NamedQuery] = []
    for chunk in chunks:
        try:
            queries.append(_parse_named(chunk, at, catalog))
        except InputError as err:
            errors.append(err)
    if errors:
        errors.sort(key=lambda e: (e.location.line, e.location.column) if e.location else (0, 0))
        first = errors[0]
        first.all_errors = errors  # type: ignore[attr-defined]
        raise first
    return tuple(queries)


# -- comments and quoted text ------------------------------------------------------------

COMMENT_KINDS = frozenset({"line comment", "block comment"})
QUOTED_KINDS = frozenset({"string", "identifier"})


class _Span(NamedTuple):
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


def _scan(text: str) -> list[_Span]:
    """The comments and quoted text of ``text``, read as sqlglot's default dialect reads them.

    Linear in the length of ``text``: every search starts where the last one ended.
    """
    spans: list[_Span] = []
    i = 0
    search = SPECIAL.search
    while True:
        found = search(text, i)
        if found is None:
            return spans
        i = found.start()
        if found.group(1):
            span = _Span("line comment", i, found.end())
        elif found.group(2):
            span = _Span("block comment", i, found.end())
        elif text[i] == "/":
            span = _block_comment(text, i)
        elif text[i] == "'":
            span = _quoted(text, i, "string")
        else:
            span = _quoted(text, i, "identifier")
        spans.append(span)
        i = span.end


def _end_of_line(text: str, start: int) -> int:
    """Where the line holding ``start`` ends: its first '\n' or '\r' (a '\r' is searched for
    only up to the '\n', so a file of many lines is read once, not once per line)."""
    newline = text.find("\n", start)
    limit = len(text) if newline < 0 else newline
    carriage = text.find("\r", start, limit)
    return carriage if carriage >= 0 else limit


BLOCK_MARK = re.compile(r"/\*|\*/")


def _block_comment(text: str, start: int) -> _Span:
    """``/* ... */``, nested as sqlglot nests them; unclosed, it runs to the end."""
    depth, i = 0, start
    while True:
        mark = BLOCK_MARK.search(text, i)
        if mark is None:
            return _Span("block comment", start, len(text), closed=False)
        depth += 1 if mark.group() == "/*" else -1
        i = mark.end()
        if depth == 0:
            return _Span("block comment", start, i)


def _quoted(text: str, start: int, kind: str) -> _Span:
    """A quoted string (``''`` escapes a quote) or identifier; unclosed, it runs to the end."""
    quote, i = text[start], start + 1
    while True:
        i = text.find(quote, i)
        if i < 0:
            return _Span(kind, start, len(text), closed=False)
        if kind == "string" and text.startswith(quote * 2, i):
            i += 2
            continue
        return _Span(kind, start, i + 1)


def _blank(text: str, spans: list[_Span], kinds: frozenset[str]) -> str:
    """``text`` with the spans of ``kinds`` replaced by spaces, line breaks too (what is
    left is code, and only where it is matters); offsets stay."""
    pieces, last = [], 0
    for span in spans:
        if span.kind in kinds:
            pieces += [text[last:span.start], " " * (span.end - span.start)]
            last = span.end
    pieces.append(text[last:])
    return "".join(pieces)


def _unclosed(spans: list[_Span], at: Callable[[int], Location]) -> InputError | None:
    for span in spans:
        if not span.closed:
            what = {"block comment": "'/*' comment", "string": "string literal",
                    "identifier": "quoted identifier"}[span.kind]
            return InputError(f"SQL syntax error: unterminated {what}", at(span.start))
    return None


# -- splitting the file into blocks ---------------------------------------------------------

@dataclass(frozen=True)
class _Chunk:
    """One ``-- name:`` block: its header, and its SQL text with the offset of that text."""

    name: str
    location: Location  # of the name itself
    options: dict[str, str]
    body_start: int  # offset of ``body`` in the file
    body: str  # the text after the '-- name:' line up to the next one
    sql_from: int  # where the SQL text starts in ``body`` (after the header lines)
    spans: list[_Span]  # the comments and quoted text of ``body``
    code: str  # ``body`` with its comments blanked
    places: dict[str, Location]  # where each option's value is


def _line_start(text: str, offset: int) -> int:
    return text.rfind("\n", 0, offset) + 1


def _at_line_start(text: str, found: re.Match) -> bool:
    """Whether only whitespace stands before ``found`` on its line."""
    start = found.start()
    return not text[_line_start(text, start):start].strip()


def _line_end(text: str, start: int) -> int:
    """The offset after the line holding ``start``, its '\n' included."""
    newline = text.find("\n", start)
    return len(text) if newline < 0 else newline + 1


def _split_blocks(text: str, at: Callable[[int], Location]) -> tuple[list[_Chunk], list[InputError]]:
    """The blocks of the file, and every mistake in its structure."""
    name_lines = [found for found in NAME_LINE.finditer(text) if _at_line_start(text, found)]
    boundaries = [_line_start(text, found.start()) for found in name_lines] + [len(text)]
    errors = _preamble_errors(text[:boundaries[0]], at)
    chunks: list[_Chunk] = []
    first_seen: dict[str, Location] = {}
    for named, end in zip(name_lines, boundaries[1:]):
        name, location = named.group(1), at(named.start(1))
        if not IDENTIFIER.match(name):
            errors.append(InputError(
                f"expected a query name after '-- name:', found {name!r}", location))
        elif name.lower() in first_seen:
            errors.append(InputError(f"duplicate query name '{name}' (first defined at "
                                     f"{first_seen[name.lower()]})", location))
        else:
            first_seen[name.lower()] = location
        body_start = _line_end(text, named.start())
        body = text[body_start:end]
        options, sql_start, has_sql, found, spans, code, places = _read_block(body, body_start, at)
        errors += found
        if not has_sql:
            errors.append(InputError(f"query '{name}' has no SQL", location))
            continue
        chunks.append(_Chunk(name, location, options, body_start, body, sql_start - body_start,
                             spans, code, places))
    return chunks, errors


def _preamble_errors(preamble: str, at: Callable[[int], Location]) -> list[InputError]:
    """Before the first '-- name:' line only comments may stand."""
    spans = _scan(preamble)
    unclosed = _unclosed(spans, at)
    if unclosed is not None:
        return [unclosed]
    errors = [_misplaced_option(option, at)
              for option in _option_lines(preamble, spans, 0, OPTION_LINE)]
    code = _blank(preamble, spans, COMMENT_KINDS)
    first = len(code) - len(code.lstrip())
    if first < len(code):
        errors.append(InputError("expected '-- name: <queryName>' before the first query",
                                 at(first)))
    return errors


def _read_block(body: str, offset: int, at: Callable[[int], Location]
                ) -> tuple[dict[str, str], int, bool, list[InputError], list[_Span], str,
                           dict[str, Location]]:
    """The options of one block, where its SQL text starts, whether it has any SQL, the
    mistakes in its header, its comments and quoted text, and itself with its comments
    blanked.

    ``body`` is the text after the '-- name:' line, at file offset ``offset``. Option
    lines count only before the first line of SQL; elsewhere they are mistakes.
    """
    spans = _scan(body)
    code = _blank(body, spans, COMMENT_KINDS)
    sql_begins = len(code) - len(code.lstrip())  # the first character of SQL, if any
    options: dict[str, str] = {}
    places: dict[str, Location] = {}
    sql_start = offset
    errors: list[InputError] = []
    for option in _option_lines(body, spans, offset, OPTION_LINE):
        if option.line - offset > sql_begins:
            errors.append(_misplaced_option(option, at))
            continue
        key, value_location = option.key.lower(), at(option.value_at)
        if key in options:
            errors.append(InputError(f"duplicate '-- {key}:' line", value_location))
        problem = _option_problem(key, option.value)
        if problem:
            errors.append(InputError(problem, value_location))
        options[key], places[key] = option.value, value_location
        sql_start = option.line_end  # the SQL text starts after the last option
    for line in _option_lines(body, spans, offset, KEY_LINE, end=sql_begins):  # the header's
        meant = _meant_option(line.key)
        if meant is not None:
            errors.append(InputError(
                f"unknown option '-- {line.key}:'; did you mean '-- {meant}:'? "
                f"(options: {', '.join(OPTIONS)})", at(line.key_at)))
    has_sql = bool(code.replace(";", "").strip())
    return options, sql_start, has_sql, errors, spans, code, places


class _OptionLine(NamedTuple):
    """A header line ``-- key: value``; every offset is the file's."""

    line: int  # where the line starts
    line_end: int  # after its line break
    key: str
    key_at: int
    value: str
    value_at: int


def _option_lines(text: str, spans: list[_Span], offset: int, pattern: re.Pattern[str],
                  end: int | None = None) -> list[_OptionLine]:
    """The lines of ``text`` (at file offset ``offset``; up to ``end``) that ``pattern``
    matches from their '--' on, where that '--' starts the line and a line comment."""
    found = []
    for option in pattern.finditer(text, 0, len(text) if end is None else end):
        if _at_line_start(text, option) and _line_comment_at(spans, option.start()):
            start = _line_start(text, option.start())
            found.append(_OptionLine(offset + start, offset + _line_end(text, start),
                                     option.group(1), offset + option.start(1),
                                     option.group(2), offset + option.start(2)))
    return found


def _line_comment_at(spans: list[_Span], offset: int) -> bool:
    """Whether the '--' at ``offset``, first on its line, starts a line comment: it is in a
    run of line comments, which holds nothing else at the start of a line (``spans`` are
    in order of their start)."""
    found = bisect.bisect_right(spans, offset, key=lambda span: span.start) - 1
    return found >= 0 and spans[found].kind == "line comment" and offset < spans[found].end


def _meant_option(key: str) -> str | None:
    """The option a header line ``-- key:`` was probably meant to be, if ``key`` is not one:
    one typing mistake away (a letter missing, extra, wrong or two swapped), two for the
    long ``periodic``. Further away it is an ordinary comment (``-- note: ...``)."""
    word = key.lower()
    if word in OPTIONS:
        return None
    for option in OPTIONS:
        if _typing_distance(word, option) <= (1 if len(option) <= 4 else 2):
            return option
    return None


def _typing_distance(a: str, b: str) -> int:
    """Edits (insert, delete, replace, swap two neighbours) that turn ``a`` into ``b``."""
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i] + [0] * len(b)
        for j, cb in enumerate(b, start=1):
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[-1]


def _misplaced_option(option: _OptionLine, at: Callable[[int], Location]) -> InputError:
    return InputError(f"'-- {option.key.lower()}:' belongs to a query's header: after its "
                      "'-- name:' line, before its SQL", at(option.key_at))


def _option_problem(option: str, value: str) -> str | None:
    if option == "view" and not IDENTIFIER.match(value):
        return f"expected a view name after '-- view:', found {value!r}"
    if option == "periodic":
        try:
            parse_interval(value)
        except ValueError as err:
            return str(err)
    return None


class _LineIndex:
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


# -- one block's statement ----------------------------------------------------------------------

@dataclass(frozen=True)
class _Source:
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


def _prepare(chunk: _Chunk, at: Callable[[int], Location]
             ) -> tuple[_Source, str, Callable[[int], Location]]:
    """The statement of a block, the query's text as shown to users (``NamedQuery.sql``),
    and where an offset of the statement is in the file (``at`` takes offsets of the body).

    sqlglot reads comments and whitespace a character at a time, so they are not given to
    it: every run of them outside quoted text becomes one space (a comment separates
    tokens as a space does), and the returned locator maps the shorter text back.
    """
    body, spans, code, begin = chunk.body, chunk.spans, chunk.code, chunk.sql_from
    unclosed = _unclosed(spans, at)
    if unclosed is not None:
        raise unclosed
    end = len(code.rstrip())  # comments after the statement describe the next query
    shown = body[begin:end] + _same_line_comment(body, end, spans)
    names = _blank(code, spans, QUOTED_KINDS)
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
    opaque = _mark(code, spans, QUOTED_KINDS)
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

    source = _Source("".join(short_text), "".join(short_sql),
                     {shorter(offset): name for offset, name in params.items()})
    return source, shown.strip(), lambda offset: at(original(offset))


BLANK_RUN = re.compile(r"\s+")


def _mark(text: str, spans: list[_Span], kinds: frozenset[str]) -> str:
    """``text`` with the spans of ``kinds`` made opaque (no whitespace in them)."""
    pieces, last = [], 0
    for span in spans:
        if span.kind in kinds:
            pieces += [text[last:span.start], "x" * (span.end - span.start)]
            last = span.end
    pieces.append(text[last:])
    return "".join(pieces)


def _same_line_comment(text: str, end: int, spans: list[_Span]) -> str:
    """A ``-- comment`` right after the statement on its last line still belongs to it."""
    rest = text[end:_end_of_line(text, end)]
    comment = next((s for s in spans if s.kind == "line comment" and s.start >= end), None)
    if comment is not None and not text[end:comment.start].strip() and \
            comment.start < end + len(rest):
        return rest
    return ""


def _parse_named(chunk: _Chunk, in_file: Callable[[int], Location], catalog: Catalog) -> NamedQuery:
    source, shown, at = _prepare(chunk, lambda offset: in_file(chunk.body_start + offset))
    try:
        statement, tokens = _parse_statement(source, chunk, at)
        places = _Places(statement, tokens, at, chunk.location)
        resolver = _Resolver(catalog, places)
        block = resolver.block(statement)
    except RecursionError:  # a shape _check_nesting does not foresee: still no traceback
        raise InputError(f"query '{chunk.name}' is nested too deeply for piql to read",
                         chunk.location) from None
    if resolver.unsupported:
        block = None
    return NamedQuery(chunk.name, shown, chunk.location, block,
                      tuple(resolver.unsupported), chunk.options.get("periodic"),
                      chunk.options.get("view"), chunk.places.get("view"))


def _parse_statement(source: _Source, chunk: _Chunk, at: Callable[[int], Location]
                     ) -> tuple[exp.Expression, list[Token]]:
    """The one statement of a block, with its tokens; syntax errors raise InputError."""
    try:
        tokens = Tokenizer().tokenize(source.sql)
        _check_nesting(tokens, at)
        statements = sqlglot.parse(source.sql)
    except TokenError:
        # Unclosed quotes and comments were reported by _prepare; what is left is rare.
        first = len(source.sql) - len(source.sql.lstrip())
        raise InputError("SQL syntax error: cannot read the query text", at(first)) from None
    except ParseError as err:
        message, offset = _syntax_problem(err, tokens, source)
        raise InputError(f"SQL syntax error: {message}", at(offset)) from None
    # `;` between comments parses as an empty statement or a comment-only Semicolon.
    statements = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(statements) != 1:
        raise InputError(f"query '{chunk.name}' must be exactly one SQL statement, "
                         f"found {len(statements)}", chunk.location)
    empty_item = _empty_list_item(tokens, source)
    if empty_item is not None:
        message, offset = empty_item
        raise InputError(f"SQL syntax error: {message}", at(offset))
    return _bind_parameters(statements[0], source, at), tokens


MAX_NESTING = 32  # parentheses (subqueries included); sqlglot recurses per level


def _check_nesting(tokens: list[Token], at: Callable[[int], Location]) -> None:
    """Refuse parentheses nested deeper than sqlglot (and Python's stack) can take, at the
    first parenthesis too deep, before sqlglot runs out of stack on it."""
    depth = 0
    for token in tokens:
        if token.token_type is TokenType.L_PAREN:
            depth += 1
            if depth > MAX_NESTING:
                raise InputError(f"unsupported nesting depth: more than {MAX_NESTING} nested "
                                 "parentheses", at(token.start))
        elif token.token_type is TokenType.R_PAREN:
            depth -= 1


def _bind_parameters(statement: exp.Expression, source: _Source,
                     at: Callable[[int], Location]) -> exp.Expression:
    """Turn each ``$name`` column written by _prepare into a positioned Placeholder.

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


# -- syntax errors in plain words ------------------------------------------------------------

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


def _syntax_problem(err: ParseError, tokens: list[Token], source: _Source) -> tuple[str, int]:
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
                  source: _Source) -> tuple[str, int]:
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
                   source: _Source) -> tuple[str, int]:
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


def _empty_list_item(tokens: list[Token], source: _Source) -> tuple[str, int] | None:
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


# -- positions -------------------------------------------------------------------------------

class _Places:
    """Where the nodes of one statement are in the file.

    sqlglot records positions on identifiers, literals and function names (and
    _bind_parameters on placeholders). A node is where its first positioned
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


def _text(node: exp.Expression) -> str:
    """The SQL of ``node`` for messages, with parameters written ``<name>`` as the user did."""
    def as_written(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Placeholder) and n.meta.get("param"):
            return exp.var(f"<{n.name}>")
        return n
    text = node.transform(as_written).sql()
    return text if len(text) <= 80 else text[:77] + "..."


# -- resolution ------------------------------------------------------------------------------

class _Resolver:
    """Turns one sqlglot SELECT into a QueryBlock, collecting unsupported constructs."""

    def __init__(self, catalog: Catalog, places: _Places) -> None:
        self.catalog = catalog
        self.places = places
        self.unsupported: list[Unsupported] = []
        self._refused: set[int] = set()  # ids of the nodes already reported

    # -- reporting ---------------------------------------------------------
    def where(self, node: exp.Expression) -> Location:
        return self.places.of(node)

    def refuse(self, node: exp.Expression, construct: str, hint: str = "") -> None:
        """Report ``node`` as unsupported, once however many checks come across it."""
        if id(node) in self._refused:
            return
        self._refused.add(id(node))
        found = Unsupported(construct, self.where(node), hint)
        if found not in self.unsupported:
            self.unsupported.append(found)

    def reported(self, node: exp.Expression) -> bool:
        """Whether ``node`` or a part of it was reported already (so not again as a whole)."""
        return any(id(n) in self._refused for n in node.walk())

    def error(self, node: exp.Expression, message: str) -> InputError:
        return InputError(message, self.where(node))

    # -- the block ---------------------------------------------------------
    def block(self, node: exp.Expression) -> QueryBlock:
        cte = node.args.get("with_") or node.args.get("with")  # 'with_' from sqlglot 26 on
        if cte is not None:
            # The CTE names tables the catalog does not have: resolving further would
            # only add "unknown table" errors.
            self.refuse(cte, "WITH (common table expression)", "inline the subquery in FROM")
            return QueryBlock(relations=())
        if not isinstance(node, exp.Select):
            construct = UNSUPPORTED_NODES.get(type(node), (type(node).__name__.upper(), ""))
            self.refuse(node, *construct)
            return QueryBlock(relations=())
        self._refuse_clauses(node)
        relations, join_conditions = self._relations(node)
        predicates = []
        for condition in join_conditions + ([node.args["where"].this] if node.args.get("where") else []):
            predicates += self._conjuncts(condition, relations)
        select = self._select(node, relations)
        group_by = self._group_by(node, relations)
        order_by = tuple(self._order(o, relations, select)
                         for o in (node.args["order"].expressions if node.args.get("order") else []))
        return QueryBlock(tuple(relations), tuple(predicates), select, group_by,
                          tuple(o for o in order_by if o is not None), self._limit(node))

    def _refuse_clauses(self, node: exp.Select) -> None:
        for key, construct, hint in (
            ("having", "HAVING", "filter the grouped rows in the application"),
            ("offset", "OFFSET", "page with a key range: WHERE key > <last> ORDER BY key LIMIT n"),
            ("distinct", "DISTINCT", "group by the selected columns instead"),
        ):
            if node.args.get(key):
                self.refuse(node.args[key], construct, hint)
        for found in node.find_all(*UNSUPPORTED_NODES):
            # DISTINCT of the select list is reported above; inside COUNT(DISTINCT x) it is fine.
            if isinstance(found, exp.Distinct) or found is node:
                continue
            self.refuse(found, *UNSUPPORTED_NODES[type(found)])
        for sub in node.find_all(exp.Subquery, exp.Select):
            if sub is node or isinstance(sub.parent, exp.Subquery) or _inside_from(sub, node):
                continue  # the Subquery around a Select is the one reported; FROM is resolved
            if not self._inside_reported(sub):  # e.g. IN (SELECT ...) is reported as IN
                self.refuse(sub, "subquery outside FROM", "rewrite it as a join")

    def _inside_reported(self, node: exp.Expression) -> bool:
        parent = node.parent
        while parent is not None:
            if id(parent) in self._refused:
                return True
            parent = parent.parent
        return False

    def _relations(self, node: exp.Select) -> tuple[list[Relation], list[exp.Expression]]:
        items = []
        if node.args.get("from_") or node.args.get("from"):
            items.append((node.args.get("from_") or node.args.get("from")).this)
        conditions: list[exp.Expression] = []
        for join in node.args.get("joins") or []:
            side, kind = (join.side or "").upper(), (join.kind or "").upper()
            if side in ("LEFT", "RIGHT", "FULL") or kind in ("OUTER", "ANTI", "SEMI"):
                self.refuse(join, f"{side or kind} OUTER JOIN".replace("OUTER OUTER", "OUTER"),
                            "only inner joins are supported")
            if join.args.get("using"):
                self.refuse(join, "JOIN ... USING", "write the join condition with ON")
            if join.args.get("on"):
                conditions.append(join.args["on"])
            items.append(join.this)
        relations: list[Relation] = []
        for item in items:
            relation = self._relation(item)
            if relation is None:
                continue
            if any(r.alias.lower() == relation.alias.lower() for r in relations):
                raise self.error(item, f"duplicate relation alias '{relation.alias}'; "
                                       "give each occurrence its own alias")
            relations.append(relation)
        if not relations and not self.unsupported:
            self.refuse(node, "SELECT without FROM", "")
        return relations, conditions

    def _relation(self, item: exp.Expression) -> Relation | None:
        if isinstance(item, exp.Table):
            table = self.catalog.table(item.name)
            if table is None:
                known = ", ".join(t.name for t in self.catalog.tables)
                raise self.error(item, f"unknown table '{item.name}' (known tables: {known})")
            alias = item.alias or table.name
            return Relation(alias, table.column_names, table=table.name)
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query):
            inner = self.block(item.this)
            if not inner.relations:
                return None
            alias = item.alias or (inner.relations[0].alias if len(inner.relations) == 1 else "sub")
            return Relation(alias, tuple(s.name for s in inner.select), subquery=inner,
                            implicit_alias=not item.alias)
        self.refuse(item, f"FROM {type(item).__name__.lower()}", "FROM takes tables and subqueries")
        return None

    # -- expressions -------------------------------------------------------
    def _attr(self, column: exp.Column, relations: list[Relation]) -> Attr:
        name, qualifier = column.name, column.table
        if qualifier:
            matches = [r for r in relations if r.alias.lower() == qualifier.lower()]
            if not matches:
                raise self.error(column, f"unknown relation '{qualifier}' in '{qualifier}.{name}'")
            candidates = matches
        else:
            candidates = relations
        found = [(r, c) for r in candidates for c in r.columns if c.lower() == name.lower()]
        if not found:
            where = f"relation '{qualifier}'" if qualifier else "any relation of the query"
            raise self.error(column, f"unknown column '{name}' in {where}")
        if len(found) > 1:
            options = ", ".join(f"{r.alias}.{c}" for r, c in found)
            raise self.error(column, f"ambiguous column '{name}': could be {options}")
        relation, canonical = found[0]
        return Attr(relation.alias, canonical)

    def _operand(self, node: exp.Expression, relations: list[Relation]) -> Operand | None:
        if isinstance(node, exp.Paren):
            return self._operand(node.this, relations)
        if isinstance(node, exp.Column):
            return self._attr(node, relations)
        if isinstance(node, exp.Placeholder):
            if node.meta.get("param"):
                return Param(node.name)
            self.refuse(node, f"parameter '{node.sql()}'", "write parameters as <name>")
            return None
        if isinstance(node, exp.Literal):
            value: object = node.this if node.is_string else \
                self._in_range(_number(node.this), node)
            return Literal(value, node.sql())
        if isinstance(node, exp.Boolean):
            return Literal(node.this, node.sql())
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return Literal(self._in_range(-_number(node.this.this), node.this), node.sql())
        epoch = self._epoch(node, relations)
        if epoch is not None:
            return epoch
        if not self.reported(node):  # e.g. CASE or a window function: reported by name
            self.refuse(node, f"expression '{_text(node)}'",
                        "compare columns with parameters, literals or other columns")
        return None

    def _epoch(self, node: exp.Expression, relations: list[Relation]) -> Epoch | None:
        """``ts - ts % w`` or ``ts - MOD(ts, w)``: the §3.3 epoch of a time window."""
        if not isinstance(node, exp.Sub):
            return None
        modulo = node.expression.unnest() if isinstance(node.expression, exp.Paren) else node.expression
        if not isinstance(modulo, exp.Mod) or not isinstance(node.this, exp.Column):
            return None
        if not isinstance(modulo.this, exp.Column) or not _is_int_literal(modulo.expression):
            return None
        attr, again = self._attr(node.this, relations), self._attr(modulo.this, relations)
        width = self._in_range(int(modulo.expression.this), modulo.expression)
        if attr != again or width <= 0:
            return None
        return Epoch(attr, width)

    def _conjuncts(self, node: exp.Expression, relations: list[Relation]) -> list:
        """The comparisons of an AND of conditions, left to right. Iterative: a chain of n
        ANDs is a tree n deep, which recursion could not walk for long chains."""
        found: list = []
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, exp.Paren):
                pending.append(current.this)
            elif isinstance(current, exp.And):
                pending += [current.expression, current.this]
            elif isinstance(current, exp.Between):
                low = exp.GTE(this=current.this.copy(), expression=current.args["low"].copy())
                high = exp.LTE(this=current.this.copy(), expression=current.args["high"].copy())
                pending += [high, low]
            else:
                predicate = self._comparison(current, relations)
                if predicate is not None:
                    found.append(predicate)
        return found

    def _comparison(self, node: exp.Expression, relations: list[Relation]):
        op = COMPARISON_NODES.get(type(node))
        if op is None:
            if not self.reported(node):  # OR, LIKE, ... are reported by name
                self.refuse(node, f"condition '{_text(node)}'",
                            "use =, <, <=, >, >= joined with AND")
            return None
        left, right = self._operand(node.this, relations), self._operand(node.expression, relations)
        if left is None or right is None:
            return None
        predicate = normalized_predicate(left, op, right, self.where(node))
        if predicate.kind == "other":
            self.refuse(node, f"condition '{_text(node)}' without a column",
                        "every condition must involve a column")
            return None
        return predicate

    def _expr(self, node: exp.Expression, relations: list[Relation],
              clause: str = "SELECT") -> Expr | None:
        for klass, name in AGGREGATES.items():
            if type(node) is klass:
                return self._aggregate(node, name, relations)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("MEDIAN", "PERCENTILE"):
            return Aggregate(node.name.upper(), None)
        operand = self._operand(node, relations)
        if isinstance(operand, Param):
            self.refuse(node, f"parameter in {clause}", "the application already knows it")
            return None
        return operand

    def _aggregate(self, node: exp.Expression, name: str, relations: list[Relation]) -> Aggregate | None:
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            arg = arg.expressions[0] if arg.expressions else None
        if arg is None or isinstance(arg, exp.Star):
            return Aggregate(name, None, distinct)
        if not isinstance(arg, exp.Column):
            if not self.reported(arg):
                self.refuse(node, f"aggregate of expression '{_text(arg)}'", "aggregate a column")
            return None
        return Aggregate(name, self._attr(arg, relations), distinct)

    def _select(self, node: exp.Select, relations: list[Relation]) -> tuple[SelectItem, ...]:
        items: list[SelectItem] = []
        for projection in node.expressions:
            alias = projection.alias if isinstance(projection, exp.Alias) else None
            target = projection.this if isinstance(projection, exp.Alias) else projection
            if isinstance(target, exp.Star):
                items += [SelectItem(c, Attr(r.alias, c)) for r in relations for c in r.columns]
                continue
            if isinstance(target, exp.Column) and isinstance(target.this, exp.Star):
                rel = [r for r in relations if r.alias.lower() == target.table.lower()]
                if not rel:
                    raise self.error(target, f"unknown relation '{target.table}' in '{target.sql()}'")
                items += [SelectItem(c, Attr(rel[0].alias, c)) for c in rel[0].columns]
                continue
            expr = self._expr(target, relations)
            if expr is None:
                continue
            items.append(SelectItem(alias or default_name(expr, len(items)), expr))
        return _unique_names(items)

    def _group_by(self, node: exp.Select, relations: list[Relation]) -> tuple:
        groups = []
        for item in node.args["group"].expressions if node.args.get("group") else []:
            group = self._operand(item, relations)
            if isinstance(group, (Attr, Epoch)):
                groups.append(group)
            elif group is not None:  # GROUP BY 1 means the first output column in SQL
                self.refuse(item, f"GROUP BY {_text(item)}", "group by columns, named")
        return tuple(groups)

    def _order(self, node: exp.Ordered, relations: list[Relation],
               select: tuple[SelectItem, ...]) -> OrderItem | None:
        target, desc = node.this, bool(node.args.get("desc"))
        if isinstance(target, exp.Column) and not target.table:
            # A bare name is an output column first (SQLite, PostgreSQL), even when an
            # input column has the same name.
            named = [s for s in select if s.name.lower() == target.name.lower()]
            if named:
                return OrderItem(named[0].expr, desc)
        expr = self._expr(target, relations, "ORDER BY")
        return None if expr is None else OrderItem(expr, desc)

    def _limit(self, node: exp.Select) -> int | None:
        limit = node.args.get("limit")
        if limit is None:
            return None
        value = limit.expression
        if not _is_int_literal(value) or int(value.this) < 0:
            self.refuse(limit, f"LIMIT {_text(value)}", "LIMIT takes an integer literal")
            return None
        return self._in_range(int(value.this), value)

    def _in_range(self, number: int | float, node: exp.Expression) -> int | float:
        """``number``, if SQL stores it: an integer must fit in 64 bits (SQLite, DuckDB and
        PostgreSQL BIGINT), or the query would fail, or overflow, when it runs."""
        if isinstance(number, int) and not INT64[0] <= number <= INT64[1]:
            raise self.error(node, f"integer {number} is outside the 64-bit range SQL stores "
                                   f"({INT64[0]} to {INT64[1]})")
        return number


def _inside_from(sub: exp.Expression, root: exp.Expression) -> bool:
    parent = sub.parent
    while parent is not None and parent is not root:
        if isinstance(parent, (exp.From, exp.Join)):
            return True
        parent = parent.parent
    return False


def _is_int_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _unique_names(items: list[SelectItem]) -> tuple[SelectItem, ...]:
    """Output names must be unique (views and derived tables are keyed by them)."""
    seen: dict[str, int] = {}
    result = []
    for item in items:
        key = item.name.lower()
        if key in seen:
            seen[key] += 1
            item = SelectItem(f"{item.name}_{seen[key]}", item.expr)
        else:
            seen[key] = 1
        result.append(item)
    return tuple(result)
