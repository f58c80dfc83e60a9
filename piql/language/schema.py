"""The schema language: DDL files (piql's own, migrations, ``pg_dump -s``) into a :class:`Catalog`.

The grammar lives in ``grammar/schema.lark`` (shipped as ``piql.grammar``).
piql keeps the whole language in lark, tolerant where it must be (expressions
are balanced token runs it keeps as text), rather than parsing standard DDL
with sqlglot: lark gives every error an exact line and column and the set of
tokens that would have been accepted, and lets piql's own extensions
(``TEMPORAL``, ``WITH CARDINALITY``) sit in the same statements. sqlglot reads
only what piql needs from an expression (the columns an index expression or a
partial index's predicate reads). Parsing happens in four steps:

1. ``piql.language.schema_scan`` splits the text into statements, classifies them and
   blanks out the ones that do not affect bounds (each becomes an info note
   of the catalog), keeping every position of the rest;
2. lark (LALR, contextual lexer; the parser ``piql.language.schema_parser`` loads) turns
   the remaining text into a parse tree;
   its syntax errors become :class:`InputError` with a human-readable
   "found ... expected ..." message (:func:`_syntax_error`);
3. ``piql.language.schema_tree`` turns the tree into raw statements that still carry
   every name as written, with its location;
4. ``piql.language.schema_build`` gathers each table's declarations across the file
   (``ALTER TABLE``, ``COMMENT ON``, ``-- piql:`` annotations), checks them and
   builds the immutable catalog.

Every mistake is reported as ``InputError(message, Location(file, line, column))``;
semantic errors are collected (one per statement) and the first is raised with
the others in its ``all_errors`` attribute, as ``piql.language.queries`` does.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from lark import Token, Tree
from lark.exceptions import (
    LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError,
)

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.language.schema_build import CatalogBuilder
from piql.language.schema_parser import parser
from piql.language.source_text import read_source
from piql.language.schema_scan import scan_schema
from piql.language.schema_tree import SchemaTransformer, at_least_1

__all__ = ["parse_schema", "load_schema"]


# --------------------------------------------------------------------------- loading


def load_schema(path: str | Path) -> Catalog:
    """Read and check the schema file at ``path``; errors name ``path`` as given."""
    return parse_schema(read_source(path, "schema file"), str(path))


def parse_schema(text: str, file: str = "<schema>") -> Catalog:
    """Parse and check the schema ``text``; ``file`` is the name used in error locations.

    Raises :class:`InputError` (and nothing else) when the text is malformed or
    inconsistent. Statements that do not affect bounds are skipped and listed
    in the catalog's ``notes``.
    """
    scanned = scan_schema(text, file)
    tree = _parse_tree(scanned.blanked(), file)
    try:
        statements = SchemaTransformer(file, text).transform(tree)
    except VisitError as err:  # the transformer does not raise on purpose; be safe
        raise InputError(f"cannot read schema: {err.orig_exc}", Location(file, 1, 1)) from None
    builder = CatalogBuilder(file, _annotation_parser(text, file), scanned.skipped,
                             scanned.annotations, scanned.table_statements)
    return builder.build(statements)


def _parse_tree(text: str, file: str, start: str = "start") -> Tree:
    try:
        return parser().parse(text, start=start)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file, start) from None
    except LarkError as err:  # should not happen with an LALR parser; never leak it
        raise InputError(f"cannot parse schema: {err}", Location(file, 1, 1)) from None


def _annotation_parser(text: str, file: str):
    """Parse one annotation (the text after ``piql:``) found at a file offset.

    The annotation is parsed alone, placed at its own line and column, so its
    errors and names point into the file where it is written.
    """
    starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def parse(annotation: str, offset: int) -> list:
        from bisect import bisect_right

        line = bisect_right(starts, offset)
        column = offset - starts[line - 1] + 1
        padded = "\n" * (line - 1) + " " * (column - 1) + annotation
        tree = _parse_tree(padded, file, "annotation")
        try:
            return SchemaTransformer(file, padded).transform(tree)
        except VisitError as err:
            raise InputError(f"cannot read annotation: {err.orig_exc}", Location(file, line, column)) from None

    return parse


# --------------------------------------------------------------------------- syntax errors

# How each terminal is named in "expected ..." messages, in the order listed.
_TERMINAL_TEXT: dict[str, str] = {
    "NAME": "a name",
    "QUOTED_NAME": "a name",
    "BACKQUOTED_NAME": "a name",
    "INT": "an integer",
    "NUMBER": "an integer",
    "CREATE": "CREATE",
    "ALTER": "ALTER TABLE",
    "COMMENT": "COMMENT ON",
    "TABLE": "TABLE",
    "INDEX": "INDEX",
    "ON": "ON",
    "TEMPORAL": "TEMPORAL",
    "PRIMARY": "PRIMARY KEY",
    "UNIQUE": "UNIQUE",
    "NOT": "NOT NULL",
    "NULL": "NULL",
    "FOREIGN": "FOREIGN KEY",
    "CHECK": "CHECK",
    "CONSTRAINT": "CONSTRAINT",
    "KEY": "KEY",
    "REFERENCES": "REFERENCES",
    "DEFAULT": "DEFAULT",
    "GENERATED": "GENERATED",
    "COLLATE": "COLLATE",
    "WITH": "WITH",
    "WITHOUT": "WITHOUT ROWID",
    "CARDINALITY": "CARDINALITY",
    "PER": "PER",
    "STRICT": "STRICT",
    "PARTITION": "PARTITION BY",
    "INHERITS": "INHERITS",
    "TABLESPACE": "TABLESPACE",
    "USING": "USING",
    "NULLS": "NULLS",
    "STRING": "a string",
    "ESTRING": "a string",
    "OP": "an operator",
    "LPAR": "'('",
    "LSQB": "'['",
    "RSQB": "']'",
    "DOT": "'.'",
    "ARRAY": "ARRAY",
    "COMMA": "','",
    "RPAR": "')'",
    "SEMICOLON": "';'",
    "$END": "end of input",
}
_NAME_TERMINALS = {"NAME", "QUOTED_NAME", "BACKQUOTED_NAME"}
# Keywords that begin a type (double precision, timestamp with time zone, ...):
# where a type is expected they are "a column type", like a type's name.
_TYPE_KEYWORDS = {"DOUBLE", "CHARACTER", "CHAR", "NATIONAL", "BIT", "TIMESTAMP", "TIME", "INTERVAL"}
# The name the grammar wants, judged by the token before it.
_NAME_ROLES = {
    "TABLE": "a table name", "ON": "a table name", "REFERENCES": "a table name",
    "ONLY": "a table name", "INHERITS": "a table name",
    "INDEX": "an index name", "CONCURRENTLY": "an index name",
    "CONSTRAINT": "a constraint name",
    "TYPE": "a column type",
    # The only place a name follows a name is "column TYPE".
    "NAME": "a column type", "QUOTED_NAME": "a column type", "BACKQUOTED_NAME": "a column type",
}
_STATEMENT_STARTS = {"CREATE", "ALTER", "COMMENT"}
# Where many options may follow (after a column's type, after a table's ')'),
# listing every keyword would bury the message: they are named as a group.
_GROUPS = (
    ("a column option", ("TEMPORAL", "PRIMARY", "NOT", "NULL", "DEFAULT", "UNIQUE", "REFERENCES",
                         "CHECK", "GENERATED", "COLLATE", "CONSTRAINT", "AS", "AUTOINCREMENT",
                         "DEFERRABLE", "INITIALLY", "MATCH", "ON"), 6),
    ("a table option", ("WITH", "WITHOUT", "STRICT", "PARTITION", "INHERITS", "TABLESPACE",
                        "USING"), 4),
)
_GROUP_EXAMPLES = 7


def _syntax_error(err: UnexpectedInput, text: str, file: str, start: str = "start") -> InputError:
    """Turn a lark error into "unexpected X; expected Y" at the offending position."""
    location = Location(file, 1, 1)
    if isinstance(err, UnexpectedCharacters):
        location = Location(file, _at_least_1(err.line), _at_least_1(err.column))
        unclosed = _unclosed(text, err.pos_in_stream)
        if unclosed:  # nothing else could follow; a list of tokens would not help
            return InputError(unclosed, location)
        found = f"character {_quote(text[err.pos_in_stream:err.pos_in_stream + 1])}"
        expected: Iterable[str] = err.allowed or ()
    elif isinstance(err, UnexpectedToken):
        found, line, column = _describe_token(err.token, text)
        if err.token.type == "OP" and len(err.token) == 1:
            found = f"character {found}"
        location = Location(file, _at_least_1(line), _at_least_1(column))
        expected = err.expected
    else:  # UnexpectedEOF (Earley only) or anything lark may add
        found = "end of input"
        location = Location(file, *_end_of(text))
        expected = getattr(err, "expected", None) or ()
    acceptable = set(_acceptable(err, expected, text, start))
    wanted = _describe_expected(acceptable, _previous_token(err))
    message = f"unexpected {found}" + (f"; expected {wanted}" if wanted else "")
    token = getattr(err, "token", None)
    if isinstance(token, Token) and token.upper() in _STATEMENT_STARTS and "SEMICOLON" in acceptable:
        message += " (is a ';' missing before it?)"
    return InputError(message, location)


def _unclosed(text: str, pos: int) -> str | None:
    """A message for a comment or quoted name that is opened and never closed."""
    if text.startswith("/*", pos):
        return "comment '/*' is never closed with '*/'"
    if text.startswith('""', pos):
        return "a quoted name cannot be empty ('\"\"')"
    if text.startswith('"', pos):
        return "quoted name is never closed: '\"' has no matching '\"' on its line"
    return None


def _acceptable(err: UnexpectedInput, fallback: Iterable[str], text: str,
                start: str) -> Iterable[str]:
    """The terminals that would really have been accepted at the error.

    LALR merges parser states, so by the time lark sees the bad token it may
    already have reduced rules on a lookahead shared with another context
    (after ``a INT`` at the end of input it has closed the column, since
    ``ALTER TABLE t ADD a INT`` may end there), and its ``expected`` set is
    that of the later state. Parsing again up to the bad token and asking the
    parser, before it sees that token, which terminals it would shift gives the
    exact set.
    """
    position = getattr(err, "pos_in_stream", None)
    token = getattr(err, "token", None)
    if isinstance(token, Token) and token.type != "$END":
        position = token.start_pos
    elif isinstance(token, Token):
        position = None  # the end of input
    try:
        interactive = parser().parse_interactive(text, start=start)
        try:
            for seen in interactive.iter_parse():
                if position is not None and seen.start_pos is not None and seen.start_pos >= position:
                    break
        except UnexpectedInput:  # the lexer stopped at the bad text: the parser is just before it
            pass
        accepted = set(interactive.accepts())
        if "$END" in interactive.choices() and "$END" not in accepted:
            try:
                interactive.copy().feed_eof()
                accepted.add("$END")
            except UnexpectedInput:
                pass
        return accepted or fallback
    except Exception:  # a best-effort refinement: never let it hide the real error
        return fallback


def _describe_token(token: Token, text: str) -> tuple[str, int, int]:
    """What was found and where; end of input is placed just after the last token."""
    if token.type == "$END":
        line = getattr(token, "end_line", None)
        column = getattr(token, "end_column", None)
        if line is None or column is None:
            line, column = _end_of(text)
        return "end of input", line, column
    return _quote(str(token.value)), token.line or 1, token.column or 1


def _describe_expected(terminals: Iterable[str], previous: Token | None) -> str:
    """Readable alternatives, e.g. "a column name, PRIMARY KEY or ')'"."""
    order = list(_TERMINAL_TEXT)
    names = sorted(set(terminals), key=lambda t: (order.index(t) if t in order else len(order), t))
    wants_type = any(n in _NAME_TERMINALS for n in names) and _name_role(previous) == "a column type"
    group_of: dict[str, str] = {}  # terminal -> its group's words ("" after the group's first)
    for label, members, least in _GROUPS:
        present = [m for m in members if m in names]
        if len(present) >= least:
            shown = [_TERMINAL_TEXT.get(m, m) for m in present[:_GROUP_EXAMPLES]]
            more = ", ..." if len(present) > _GROUP_EXAMPLES else ""
            first = min(present, key=names.index)
            group_of.update({m: "" for m in present})
            group_of[first] = f"{label} ({', '.join(shown)}{more})"
    words: list[str] = []
    for name in names:
        if name in group_of:
            word = group_of[name]
        elif name in _NAME_TERMINALS:
            word = _name_role(previous)
        elif name in _TYPE_KEYWORDS and wants_type:
            word = "a column type"
        else:
            word = _TERMINAL_TEXT.get(name, name)
        if word and word not in words:
            words.append(word)
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def _name_role(previous: Token | None) -> str:
    """What kind of name the grammar wants, judged by the token before it."""
    kind = previous.type if previous is not None else None
    return _NAME_ROLES.get(kind or "", "a column name")


def _previous_token(err: UnexpectedInput) -> Token | None:
    """The last token the parser accepted before the error, if lark tells us."""
    history = getattr(err, "token_history", None)
    if history and isinstance(history[-1], Token):
        return history[-1]
    try:
        stack = err.interactive_parser.parser_state.value_stack  # type: ignore[attr-defined]
    except AttributeError:
        return None
    node = stack[-1] if stack else None
    while isinstance(node, Tree):  # the rightmost leaf of the last reduced rule
        node = node.children[-1] if node.children else None
    return node if isinstance(node, Token) else None


def _quote(value: str, limit: int = 40) -> str:
    if len(value) > limit:
        value = value[:limit] + "..."
    if value.isprintable():
        return f"'{value}'"
    return repr(value)


def _end_of(text: str) -> tuple[int, int]:
    """Line and column just after the last character of ``text``."""
    line = text.count("\n") + 1
    column = len(text) - (text.rfind("\n") + 1) + 1
    return line, column


_at_least_1 = at_least_1
