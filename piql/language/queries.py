"""The queries file: ``-- name:`` blocks of parameterized SQL, parsed with sqlglot.

``load_queries`` composes the steps, one module each: split the file into its
blocks and option lines (:mod:`~piql.language.blocks`, over the comments and quoted
text :mod:`~piql.language.scanning` finds), turn ``<param>`` placeholders into
something sqlglot parses *and positions* while keeping every character offset
(:mod:`~piql.language.placeholders`), parse the statement (its syntax errors said in
words by :mod:`~piql.language.syntax_errors`, at places :mod:`~piql.language.positions`
finds), and resolve it against the catalog into a
:class:`~piql.query_block.QueryBlock` (:mod:`~piql.language.resolve`).
Constructs outside the supported subset are collected per query as
:class:`~piql.query_block.Unsupported`. Mistakes (malformed blocks, syntax errors,
unknown or ambiguous names) are collected over the whole file; the first by
position is raised as :class:`~piql.errors.InputError`, carrying all of them
in ``all_errors``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError
from sqlglot.tokens import Token, Tokenizer, TokenType

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.errors import InputError, Location
from piql.language.blocks import LIMIT_MAXIMUM, NamedBlock, split_blocks
from piql.language.placeholders import Source, bind_parameters, prepare
from piql.language.positions import LineIndex, Places
from piql.language.resolve import Resolver
from piql.language.source_text import read_source
from piql.language.syntax_errors import empty_list_item, syntax_problem
from piql.query_block import MaintenanceMode, NamedQuery


@dataclass(frozen=True)
class QueriesFile:
    """A queries file read: its queries, and what piql says about the file itself (the
    blocks it skipped)."""

    queries: tuple[NamedQuery, ...]
    notes: tuple[Diagnostic, ...] = ()


def load_queries(path: str | Path, catalog: Catalog) -> tuple[NamedQuery, ...]:
    """Read and resolve the queries file at ``path`` (UTF-8)."""
    return load_queries_file(path, catalog).queries


def load_queries_file(path: str | Path, catalog: Catalog) -> QueriesFile:
    """Read and resolve the queries file at ``path`` (UTF-8), with its notes."""
    return parse_queries_file(read_source(path, "queries file"), catalog, str(path))


def parse_queries(text: str, catalog: Catalog, file: str = "<queries>") -> tuple[NamedQuery, ...]:
    """Parse every ``-- name:`` block of ``text`` (see :func:`parse_queries_file`)."""
    return parse_queries_file(text, catalog, file).queries


def parse_queries_file(text: str, catalog: Catalog, file: str = "<queries>",
                       maintenance: MaintenanceMode = MaintenanceMode.SYNC) -> QueriesFile:
    """Parse every ``-- name:`` block of ``text``; ``maintenance`` is the mode of a block
    without a ``-- maintenance:`` line (the deploy-wide default).

    Every mistake in the file is collected; the first by position is raised,
    with all of them (itself included) in its ``all_errors`` attribute.
    """
    at = LineIndex(text, file).location
    chunks, errors, notes = split_blocks(text, at)
    queries: list[NamedQuery] = []
    for chunk in chunks:
        try:
            queries.append(_parse_named(chunk, at, catalog, maintenance))
        except InputError as err:
            errors.append(err)
    if errors:
        errors.sort(key=lambda e: (e.location.line, e.location.column) if e.location else (0, 0))
        first = errors[0]
        first.all_errors = errors  # type: ignore[attr-defined]
        raise first
    return QueriesFile(tuple(queries), tuple(notes))


def _parse_named(chunk: NamedBlock, in_file: Callable[[int], Location], catalog: Catalog,
                 maintenance: MaintenanceMode = MaintenanceMode.SYNC) -> NamedQuery:
    source, shown, at = prepare(chunk, lambda offset: in_file(chunk.body_start + offset))
    try:
        statement, tokens = _parse_statement(source, chunk, at)
        places = Places(statement, tokens, at, chunk.location)
        resolver = Resolver(catalog, places, limit_maxima(chunk.options.get("max", "")))
        block = resolver.block(statement)
    except RecursionError:  # a shape _check_nesting does not foresee: still no traceback
        raise InputError(f"query '{chunk.name}' is nested too deeply for piql to read",
                         chunk.location) from None
    if resolver.unsupported:
        block = None
    return NamedQuery(chunk.name, shown, chunk.location, block,
                      tuple(resolver.unsupported), chunk.options.get("periodic"),
                      chunk.options.get("view"), chunk.places.get("view"), chunk.noqa,
                      maintenance_mode(chunk.options.get("maintenance", ""), maintenance))


def maintenance_mode(option: str, default: MaintenanceMode = MaintenanceMode.SYNC
                     ) -> MaintenanceMode:
    """The ``-- maintenance: sync|async`` option line's mode (``default`` when absent; a
    value that is neither is reported by :mod:`~piql.language.blocks`)."""
    if not option.strip():
        return default
    try:
        return MaintenanceMode(option.strip().lower())
    except ValueError:
        return MaintenanceMode.SYNC


def limit_maxima(option: str) -> dict[str, int]:
    """The ``-- max: n 100[, m 5]`` option line's maxima by parameter name."""
    found: dict[str, int] = {}
    for part in option.split(",") if option.strip() else []:
        matched = LIMIT_MAXIMUM.match(part)
        if matched:
            found[matched.group(1)] = int(matched.group(2))
    return found


def _parse_statement(source: Source, chunk: NamedBlock, at: Callable[[int], Location]
                     ) -> tuple[exp.Expression, list[Token]]:
    """The one statement of a block, with its tokens; syntax errors raise InputError."""
    try:
        tokens = Tokenizer().tokenize(source.sql)
        _check_nesting(tokens, at)
        # sqlglot's default dialect parses the tokens just read (sqlglot.parse would read
        # the text into tokens again)
        statements = Dialect.get_or_raise(None).parser().parse(tokens, source.sql)
    except TokenError:
        # Unclosed quotes and comments were reported by prepare; what is left is rare.
        first = len(source.sql) - len(source.sql.lstrip())
        raise InputError("SQL syntax error: cannot read the query text", at(first)) from None
    except ParseError as err:
        message, offset = syntax_problem(err, tokens, source)
        raise InputError(f"SQL syntax error: {message}", at(offset)) from None
    # `;` between comments parses as an empty statement or a comment-only Semicolon.
    statements = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
    if len(statements) != 1:
        raise InputError(f"query '{chunk.name}' must be exactly one SQL statement, "
                         f"found {len(statements)}", chunk.location)
    empty_item = empty_list_item(tokens, source)
    if empty_item is not None:
        message, offset = empty_item
        raise InputError(f"SQL syntax error: {message}", at(offset))
    return bind_parameters(statements[0], source, at), tokens


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
