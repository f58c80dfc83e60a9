"""Splitting a queries file into its ``-- name:`` blocks, with their option lines.

A block is a ``-- name: <queryName>`` line, optional ``-- view: <name>`` and
``-- periodic: <interval>``, ``-- max: <param> <n>`` and ``-- maintenance: sync|async``
lines (anywhere before the SQL),
then one SQL
statement. Comments after the statement belong to the next block.

aiosql's names are read as aiosql reads them: a ``-`` in a name is a ``_``, a declaration
of its parameters (``-- name: by_id(id)^``) is accepted, and the operator suffix is taken
off (``^`` one row, ``$`` one value: queries like any other);
the blocks of ``!``, ``<!`` and ``*!`` (INSERT, UPDATE, DELETE statements) and ``#``
(scripts) are no queries, and are skipped with an info note.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, NamedTuple

from piql.diagnostics import Diagnostic
from piql.errors import InputError, Location
from piql.interval import parse_interval
from piql.language.noqa import find_suppression
from piql.query_block import MaintenanceMode, Suppression
from piql.language.scanning import (
    COMMENT_KINDS, Span, at_line_start, blank, line_comment_at, line_end, line_start, scan,
    unclosed,
)

# Header lines, found in a whole text at once (re.M): only '\n' ends a line, as in
# Location ([^\S\n] is whitespace that does not end the line). The patterns start at the
# '--', which the regex engine finds fast; at_line_start checks what precedes it.
NAME_LINE = re.compile(r"--[^\S\n]*name[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                       re.IGNORECASE | re.MULTILINE)
OPTION_LINE = re.compile(r"--[^\S\n]*(periodic|view|max|maintenance)[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                         re.IGNORECASE | re.MULTILINE)
# A header comment that reads like an option: one word right after '--', then ':'.
KEY_LINE = re.compile(r"--[^\S\n]*([A-Za-z][A-Za-z_-]*)[^\S\n]*:[^\S\n]*(.*?)[^\S\n]*$",
                      re.MULTILINE)
OPTIONS = ("name", "view", "periodic", "max", "maintenance")
# ``-- max: n 100``: the largest value of the parameter of ``LIMIT <n>`` (several: "n 100, m 5")
LIMIT_MAXIMUM = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s+(\d+)\s*$")
MAINTENANCE_MODES = tuple(mode.value for mode in MaintenanceMode)
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# An aiosql name: an identifier where '-' stands for '_', an optional declaration of its
# parameters (``(a, b)``, aiosql 9), and an operator suffix.
AIOSQL_NAME = re.compile(r"^([A-Za-z_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)[^\S\n]*"
                         r"(?:\([^\S\n]*(?:[A-Za-z_]\w*[^\S\n]*(?:,[^\S\n]*[A-Za-z_]\w*[^\S\n]*)*)?\))?"
                         r"[^\S\n]*(\^|\$|!|<!|\*!|#)?$")
# What aiosql runs for the suffixes of blocks that are no queries.
NOT_QUERIES = {"!": "statement (INSERT, UPDATE or DELETE)", "<!": "INSERT ... RETURNING statement",
               "*!": "statement run for many rows", "#": "script"}


@dataclass(frozen=True)
class NamedBlock:
    """One ``-- name:`` block: its header, and its SQL text with the offset of that text."""

    name: str
    location: Location  # of the name itself
    options: dict[str, str]
    body_start: int  # offset of ``body`` in the file
    body: str  # the text after the '-- name:' line up to the next one
    sql_from: int  # where the SQL text starts in ``body`` (after the header lines)
    spans: list[Span]  # the comments and quoted text of ``body``
    code: str  # ``body`` with its comments blanked
    places: dict[str, Location]  # where each option's value is
    noqa: Suppression | None = None  # what its -- noqa comments suppress


def split_blocks(text: str, at: Callable[[int], Location]
                 ) -> tuple[list[NamedBlock], list[InputError], list[Diagnostic]]:
    """The blocks of the file, every mistake in its structure, and the notes on the
    blocks skipped (aiosql's statements and scripts)."""
    name_lines = [found for found in NAME_LINE.finditer(text) if at_line_start(text, found)]
    boundaries = [line_start(text, found.start()) for found in name_lines] + [len(text)]
    errors = _preamble_errors(text[:boundaries[0]], at)
    chunks: list[NamedBlock] = []
    skipped: list[Diagnostic] = []
    first_seen: dict[str, Location] = {}
    for named, end in zip(name_lines, boundaries[1:]):
        written, location = named.group(1), at(named.start(1))
        aiosql = AIOSQL_NAME.match(written)
        name = aiosql.group(1).replace("-", "_") if aiosql else written
        if not aiosql:
            errors.append(InputError(
                f"expected a query name after '-- name:', found {written!r}", location))
        elif name.lower() in first_seen:
            errors.append(InputError(f"duplicate query name '{name}' (first defined at "
                                     f"{first_seen[name.lower()]})", location))
        else:
            first_seen[name.lower()] = location
        suffix = aiosql.group(2) if aiosql else None
        if suffix in NOT_QUERIES:
            skipped.append(Diagnostic(
                "skipped", "info", f"skipped '{written}': an aiosql {NOT_QUERIES[suffix]}, "
                "not a query (piql bounds the writes of every table from the schema)",
                location=location))
            continue
        body_start = line_end(text, named.start())
        body = text[body_start:end]
        options, sql_start, has_sql, found, spans, code, places = _read_block(body, body_start, at)
        errors += found
        noqa, mistakes = find_suppression(body, spans, body_start, at)
        errors += mistakes
        if not has_sql:
            errors.append(InputError(f"query '{name}' has no SQL", location))
            continue
        chunks.append(NamedBlock(name, location, options, body_start, body, sql_start - body_start,
                             spans, code, places, noqa))
    return chunks, errors, skipped


def _preamble_errors(preamble: str, at: Callable[[int], Location]) -> list[InputError]:
    """Before the first '-- name:' line only comments may stand."""
    spans = scan(preamble)
    problem = unclosed(spans, at)
    if problem is not None:
        return [problem]
    errors = [_misplaced_option(option, at)
              for option in _option_lines(preamble, spans, 0, OPTION_LINE)]
    code = blank(preamble, spans, COMMENT_KINDS)
    first = len(code) - len(code.lstrip())
    if first < len(code):
        errors.append(InputError("expected '-- name: <queryName>' before the first query",
                                 at(first)))
    return errors


def _read_block(body: str, offset: int, at: Callable[[int], Location]
                ) -> tuple[dict[str, str], int, bool, list[InputError], list[Span], str,
                           dict[str, Location]]:
    """The options of one block, where its SQL text starts, whether it has any SQL, the
    mistakes in its header, its comments and quoted text, and itself with its comments
    blanked.

    ``body`` is the text after the '-- name:' line, at file offset ``offset``. Option
    lines count only before the first line of SQL; elsewhere they are mistakes.
    """
    spans = scan(body)
    code = blank(body, spans, COMMENT_KINDS)
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


def _option_lines(text: str, spans: list[Span], offset: int, pattern: re.Pattern[str],
                  end: int | None = None) -> list[_OptionLine]:
    """The lines of ``text`` (at file offset ``offset``; up to ``end``) that ``pattern``
    matches from their '--' on, where that '--' starts the line and a line comment."""
    found = []
    for option in pattern.finditer(text, 0, len(text) if end is None else end):
        if at_line_start(text, option) and line_comment_at(spans, option.start()):
            start = line_start(text, option.start())
            found.append(_OptionLine(offset + start, offset + line_end(text, start),
                                     option.group(1), offset + option.start(1),
                                     option.group(2), offset + option.start(2)))
    return found


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
    if option == "max":
        if not all(LIMIT_MAXIMUM.match(part) for part in value.split(",")):
            return (f"expected a parameter and its largest value after '-- max:' "
                    f"(e.g. '-- max: n 100'), found {value!r}")
    if option == "maintenance" and value.lower() not in MAINTENANCE_MODES:
        return (f"expected {' or '.join(MAINTENANCE_MODES)} after '-- maintenance:', "
                f"found {value!r}")
    if option == "periodic":
        try:
            parse_interval(value)
        except ValueError as err:
            return str(err)
    return None
