"""The schema language: ``CREATE TABLE`` / ``CREATE INDEX`` files into a :class:`Catalog`.

The grammar lives in ``grammar/schema.lark`` (shipped as ``piql.grammar``). Parsing
happens in three steps:

1. lark (LALR, contextual lexer) turns the text into a parse tree; its syntax
   errors become :class:`InputError` with a human-readable "found ... expected ..."
   message (:func:`_syntax_error`).
2. :class:`_SchemaTransformer` turns the tree into raw statements that still
   carry every name as written, with its location.
3. :class:`_CatalogBuilder` checks them (names resolve, keys exist, limits are
   positive, ...) and builds the immutable catalog. Names keep the spelling of
   their declaration; references are matched case-insensitively.

Every mistake is reported as ``InputError(message, Location(file, line, column))``;
semantic errors are collected (one per statement) and the first is raised with
the others in its ``all_errors`` attribute, as ``piql.queries`` does.
"""
from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Sequence, TypeVar

from lark import Lark, Token, Transformer, Tree
from lark.exceptions import (
    LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken, VisitError,
)

from piql.catalog import Catalog, CardinalityConstraint, Column, ForeignKey, Index, Table
from piql.errors import InputError, Location
from piql.source_text import read_source

__all__ = ["parse_schema", "load_schema"]

_T = TypeVar("_T")
RESERVED_PREFIX = "_piql"  # piql.planner.naming.RUNTIME_PREFIX (the language imports no planner)


# --------------------------------------------------------------------------- loading


def load_schema(path: str | Path) -> Catalog:
    """Read and check the schema file at ``path``; errors name ``path`` as given."""
    return parse_schema(read_source(path, "schema file"), str(path))


def parse_schema(text: str, file: str = "<schema>") -> Catalog:
    """Parse and check the schema ``text``; ``file`` is the name used in error locations.

    Raises :class:`InputError` (and nothing else) when the text is malformed or
    inconsistent.
    """
    tree = _parse_tree(text, file)
    try:
        statements = _SchemaTransformer(file).transform(tree)
    except VisitError as err:  # the transformer does not raise on purpose; be safe
        raise InputError(f"cannot read schema: {err.orig_exc}", Location(file, 1, 1)) from None
    return _CatalogBuilder(file).build(statements)


@functools.lru_cache(maxsize=1)
def _parser() -> Lark:
    """The lark parser, built once (building the LALR tables is the slow part)."""
    return Lark(_grammar_text(), parser="lalr", lexer="contextual", propagate_positions=True)


def _grammar_text() -> str:
    try:
        from importlib.resources import files
        return (files("piql.grammar") / "schema.lark").read_text(encoding="utf-8")
    except (ImportError, OSError, TypeError):
        # Running from the source tree without an install: piql.grammar is not
        # a package there, the file sits in the top-level grammar/ directory.
        path = Path(__file__).resolve().parent.parent / "grammar" / "schema.lark"
        return path.read_text(encoding="utf-8")


def _parse_tree(text: str, file: str) -> Tree:
    try:
        return _parser().parse(text)
    except UnexpectedInput as err:
        raise _syntax_error(err, text, file) from None
    except LarkError as err:  # should not happen with an LALR parser; never leak it
        raise InputError(f"cannot parse schema: {err}", Location(file, 1, 1)) from None


# --------------------------------------------------------------------------- syntax errors

# How each terminal is named in "expected ..." messages, in the order listed.
_TERMINAL_TEXT: dict[str, str] = {
    "NAME": "a name",
    "QUOTED_NAME": "a name",
    "INT": "an integer",
    "NUMBER": "an integer",
    "CREATE": "CREATE",
    "UNIQUE": "UNIQUE",
    "TABLE": "TABLE",
    "INDEX": "INDEX",
    "ON": "ON",
    "TEMPORAL": "TEMPORAL",
    "PRIMARY": "PRIMARY KEY",
    "NOT": "NOT NULL",
    "NULL": "NULL",
    "FOREIGN": "FOREIGN KEY",
    "CONSTRAINT": "CONSTRAINT",
    "KEY": "KEY",
    "REFERENCES": "REFERENCES",
    "WITH": "WITH",
    "CARDINALITY": "CARDINALITY",
    "PER": "PER",
    "LPAR": "'('",
    "COMMA": "','",
    "RPAR": "')'",
    "SEMICOLON": "';'",
    "$END": "end of input",
}
_NAME_TERMINALS = {"NAME", "QUOTED_NAME"}


def _syntax_error(err: UnexpectedInput, text: str, file: str) -> InputError:
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
        location = Location(file, _at_least_1(line), _at_least_1(column))
        expected = err.expected
    else:  # UnexpectedEOF (Earley only) or anything lark may add
        found = "end of input"
        location = Location(file, *_end_of(text))
        expected = getattr(err, "expected", None) or ()
    wanted = _describe_expected(_acceptable(err, expected), _previous_token(err))
    message = f"unexpected {found}" + (f"; expected {wanted}" if wanted else "")
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


def _acceptable(err: UnexpectedInput, fallback: Iterable[str]) -> Iterable[str]:
    """The terminals that would really have been accepted at the error.

    LALR merges parser states, so lark's own ``expected`` set can mix in tokens
    from other contexts (after a column name it would also list ON, because an
    index name reduces through the same state). Feeding each candidate to a
    copy of the parser gives the exact set.
    """
    interactive = getattr(err, "interactive_parser", None)
    if interactive is None:
        return fallback
    try:
        return interactive.accepts() or fallback
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
    words: list[str] = []
    for name in names:
        if name in _NAME_TERMINALS:
            word = _name_role(previous)
        else:
            word = _TERMINAL_TEXT.get(name, name)
        if word not in words:
            words.append(word)
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " or " + words[-1]


def _name_role(previous: Token | None) -> str:
    """What kind of name the grammar wants, judged by the token before it."""
    kind = previous.type if previous is not None else None
    if kind in ("TABLE", "ON", "REFERENCES"):
        return "a table name"
    if kind == "INDEX":
        return "an index name"
    if kind == "CONSTRAINT":
        return "a constraint name"
    if kind in _NAME_TERMINALS:
        # The only place a name follows a name is "column TYPE".
        return "a column type"
    return "a column name"


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


def _at_least_1(value: int | None) -> int:
    return value if isinstance(value, int) and value >= 1 else 1


# --------------------------------------------------------------------------- raw statements


@dataclass(frozen=True)
class _Name:
    """A name as written (quotes removed) and where it was written."""

    text: str
    location: Location

    @property
    def key(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class _Option:
    """A column option (``TEMPORAL``, ``PRIMARY KEY``, ``NOT NULL``, ``NULL``)."""

    kind: str
    location: Location


@dataclass(frozen=True)
class _RawColumn:
    name: _Name
    type: str
    options: tuple[_Option, ...]


@dataclass(frozen=True)
class _RawPrimaryKey:
    columns: tuple[_Name, ...]
    location: Location


@dataclass(frozen=True)
class _RawForeignKey:
    columns: tuple[_Name, ...]
    ref_table: _Name
    ref_columns: tuple[_Name, ...] | None  # None: the referenced table's primary key
    location: Location


@dataclass(frozen=True)
class _RawCardinality:
    column: _Name
    limit: str
    limit_location: Location
    per: tuple[_Name, ...] | None  # None: the table's other primary-key columns
    location: Location


@dataclass(frozen=True)
class _RawTable:
    name: _Name
    columns: tuple[_RawColumn, ...]
    primary_keys: tuple[_RawPrimaryKey, ...]
    foreign_keys: tuple[_RawForeignKey, ...]
    cardinalities: tuple[_RawCardinality, ...]


@dataclass(frozen=True)
class _RawIndex:
    name: _Name
    table: _Name
    columns: tuple[_Name, ...]


class _SchemaTransformer(Transformer):
    """Parse tree -> list of :class:`_RawTable` / :class:`_RawIndex`, in file order."""

    def __init__(self, file: str) -> None:
        super().__init__()
        self.file = file

    def _at(self, token: Token) -> Location:
        return Location(self.file, _at_least_1(token.line), _at_least_1(token.column))

    # names
    def name(self, children: list[Token]) -> _Name:
        token = children[0]
        text = str(token)
        if token.type == "QUOTED_NAME":
            text = text[1:-1].replace('""', '"')
        return _Name(text, self._at(token))

    def name_list(self, children: list[_Name]) -> tuple[_Name, ...]:
        return tuple(children)

    # columns
    def type_spec(self, children: list) -> str:
        base = str(children[0]).upper()
        args = children[1] if len(children) > 1 else ()
        return f"{base}({','.join(args)})" if args else base

    def type_args(self, children: list[Token]) -> tuple[str, ...]:
        return tuple(str(c) for c in children)

    def temporal(self, children: list[Token]) -> _Option:
        return _Option("temporal", self._at(children[0]))

    def column_primary_key(self, children: list[Token]) -> _Option:
        return _Option("primary key", self._at(children[0]))

    def not_null(self, children: list[Token]) -> _Option:
        return _Option("not null", self._at(children[0]))

    def nullable(self, children: list[Token]) -> _Option:
        return _Option("null", self._at(children[0]))

    def column_def(self, children: list) -> _RawColumn:
        name, type_, *options = children
        return _RawColumn(name, type_, tuple(options))

    # table constraints
    def constraint_name(self, children: list) -> None:
        return None  # accepted for compatibility, not kept

    def table_primary_key(self, children: list) -> _RawPrimaryKey:
        primary = _first_token(children, "PRIMARY")
        return _RawPrimaryKey(children[-1], self._at(primary))

    def foreign_key(self, children: list) -> _RawForeignKey:
        foreign = _first_token(children, "FOREIGN")
        lists = [c for c in children if isinstance(c, tuple)]
        names = [c for c in children if isinstance(c, _Name)]
        ref_columns = lists[1] if len(lists) > 1 else None
        return _RawForeignKey(lists[0], names[-1], ref_columns, self._at(foreign))

    def ref_columns(self, children: list) -> tuple[_Name, ...]:
        return children[0]

    def per(self, children: list) -> tuple[_Name, ...]:
        return children[-1]

    def cardinality(self, children: list) -> _RawCardinality:
        keyword = _first_token(children, "CARDINALITY")
        number = _first_token(children, "NUMBER")
        column = next(c for c in children if isinstance(c, _Name))
        per = next((c for c in children if isinstance(c, tuple)), None)
        return _RawCardinality(column, str(number), self._at(number), per, self._at(keyword))

    # statements
    def create_table(self, children: list) -> _RawTable:
        items = [c for c in children if not isinstance(c, Token)]
        name = items[0]
        return _RawTable(
            name=name,
            columns=tuple(c for c in items if isinstance(c, _RawColumn)),
            primary_keys=tuple(c for c in items if isinstance(c, _RawPrimaryKey)),
            foreign_keys=tuple(c for c in items if isinstance(c, _RawForeignKey)),
            cardinalities=tuple(c for c in items if isinstance(c, _RawCardinality)),
        )

    def unique(self, children: list) -> None:
        return None  # UNIQUE is accepted; piql keeps a plain index

    def create_index(self, children: list) -> _RawIndex:
        index_name, table_name = [c for c in children if isinstance(c, _Name)]
        return _RawIndex(index_name, table_name, children[-1])

    def start(self, children: list) -> list[_RawTable | _RawIndex]:
        return list(children)


def _first_token(children: Sequence, kind: str) -> Token:
    return next(c for c in children if isinstance(c, Token) and c.type == kind)


# --------------------------------------------------------------------------- checks


@dataclass(frozen=True)
class _Shape:
    """A table's columns and primary key, checked; what other statements refer to."""

    raw: _RawTable
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.raw.name.text

    def canonical(self) -> dict[str, str]:
        """Lower-cased column name -> declared spelling."""
        return {c.name.lower(): c.name for c in self.columns}


class _CatalogBuilder:
    """Checks raw statements and assembles the catalog.

    Each statement is checked on its own; its first mistake is recorded and the
    statement left out, so one typo does not cascade into many messages.
    """

    def __init__(self, file: str) -> None:
        self.file = file
        self.errors: list[InputError] = []

    def build(self, statements: list[_RawTable | _RawIndex]) -> Catalog:
        raw_tables = [s for s in statements if isinstance(s, _RawTable)]
        raw_indexes = [s for s in statements if isinstance(s, _RawIndex)]
        declared = self._unique_tables(raw_tables)
        shapes: dict[str, _Shape] = {}
        for raw in declared.values():
            shape = self._attempt(self._shape, raw)
            if shape is not None:
                shapes[raw.name.key] = shape
        tables = [self._attempt(self._table, shape, declared, shapes) for shape in shapes.values()]
        indexes = self._indexes(raw_indexes, declared, shapes)
        if self.errors:
            self.errors.sort(key=lambda e: (e.location.line, e.location.column) if e.location else (0, 0))
            first = self.errors[0]
            first.all_errors = self.errors  # type: ignore[attr-defined]
            raise first
        return Catalog(tuple(t for t in tables if t is not None), tuple(indexes), self.file)

    def _attempt(self, check: Callable[..., _T], *args: object) -> _T | None:
        """Run one statement's check, recording its InputError instead of raising."""
        try:
            return check(*args)
        except InputError as err:
            self.errors.append(err)
            return None

    # tables ------------------------------------------------------------------

    def _unique_tables(self, raw_tables: list[_RawTable]) -> dict[str, _RawTable]:
        declared: dict[str, _RawTable] = {}
        for raw in raw_tables:
            if _reserved(raw.name):
                self.errors.append(_reserved(raw.name))
                continue
            first = declared.get(raw.name.key)
            if first is None:
                declared[raw.name.key] = raw
                continue
            self.errors.append(InputError(
                f"duplicate table '{raw.name.text}' (first defined at {_where(first.name.location)})",
                raw.name.location))
        return declared

    def _shape(self, raw: _RawTable) -> _Shape:
        columns = self._columns(raw)
        canonical = {c.name.lower(): c.name for c in columns}
        return _Shape(raw, columns, self._primary_key(raw, canonical))

    def _columns(self, raw: _RawTable) -> tuple[Column, ...]:
        seen: dict[str, _Name] = {}
        columns: list[Column] = []
        for col in raw.columns:
            first = seen.get(col.name.key)
            if first is not None:
                raise InputError(
                    f"duplicate column '{col.name.text}' in table '{raw.name.text}' "
                    f"(first defined at {_where(first.location)})", col.name.location)
            seen[col.name.key] = col.name
            temporal = any(o.kind == "temporal" for o in col.options)
            columns.append(Column(col.name.text, col.type, temporal, col.name.location))
        return tuple(columns)

    def _primary_key(self, raw: _RawTable, canonical: dict[str, str]) -> tuple[str, ...]:
        # Column-level and table-level keys, in file order: only one is allowed.
        declarations: list[tuple[Location, tuple[_Name, ...]]] = []
        for col in raw.columns:
            for option in col.options:
                if option.kind == "primary key":
                    declarations.append((option.location, (col.name,)))
        declarations += [(pk.location, pk.columns) for pk in raw.primary_keys]
        declarations.sort(key=lambda d: (d[0].line, d[0].column))
        if not declarations:
            raise InputError(
                f"table '{raw.name.text}' has no primary key; add PRIMARY KEY (...) "
                "(piql needs a key to bound every access)", raw.name.location)
        if len(declarations) > 1:
            raise InputError(
                f"table '{raw.name.text}' has more than one primary key "
                f"(the first is at {_where(declarations[0][0])})", declarations[1][0])
        return self._resolve_all(declarations[0][1], canonical, f"PRIMARY KEY of table '{raw.name.text}'")

    def _table(self, shape: _Shape, declared: dict[str, _RawTable],
               shapes: dict[str, _Shape]) -> Table:
        raw = shape.raw
        foreign_keys = tuple(self._foreign_key(fk, shape, declared, shapes) for fk in raw.foreign_keys)
        cardinalities = tuple(self._cardinality(c, shape) for c in raw.cardinalities)
        return Table(shape.name, shape.columns, shape.primary_key, foreign_keys,
                     cardinalities, raw.name.location)

    def _foreign_key(self, fk: _RawForeignKey, shape: _Shape, declared: dict[str, _RawTable],
                     shapes: dict[str, _Shape]) -> ForeignKey:
        columns = self._resolve_all(fk.columns, shape.canonical(), f"FOREIGN KEY of table '{shape.name}'")
        if fk.ref_table.key not in declared:
            raise InputError(
                f"FOREIGN KEY references unknown table '{fk.ref_table.text}'"
                f"{_hint(fk.ref_table.text, [t.name.text for t in declared.values()], 'tables')}",
                fk.ref_table.location)
        target = shapes.get(fk.ref_table.key)
        if target is None:
            # The referenced table is itself broken and already reported: keep
            # the names as written so this table can still be checked.
            ref_name = declared[fk.ref_table.key].name.text
            ref_columns = tuple(n.text for n in fk.ref_columns or ())
            return ForeignKey(columns, ref_name, ref_columns, fk.location)
        if fk.ref_columns is None:
            ref_columns = target.primary_key
        else:
            ref_columns = self._resolve_all(fk.ref_columns, target.canonical(),
                                            f"REFERENCES {target.name} (...)")
        if len(ref_columns) != len(columns):
            raise InputError(
                f"FOREIGN KEY has {_count(len(columns), 'column')} but references "
                f"{_count(len(ref_columns), 'column')} of '{target.name}' "
                f"({', '.join(ref_columns)})", fk.location)
        return ForeignKey(columns, target.name, ref_columns, fk.location)

    def _cardinality(self, raw: _RawCardinality, shape: _Shape) -> CardinalityConstraint:
        limit = _positive_integer(raw.limit, raw.limit_location)
        canonical = shape.canonical()
        what = f"CARDINALITY of table '{shape.name}'"
        column = self._resolve(raw.column, canonical, what)
        if raw.per is not None:
            per = self._resolve_all(raw.per, canonical, f"PER of table '{shape.name}'")
            if column in per:
                at = next(n.location for n in raw.per if n.key == column.lower())
                raise InputError(
                    f"CARDINALITY column '{column}' cannot also be in its own PER list", at)
            return CardinalityConstraint(column, limit, per, raw.location)
        if column not in shape.primary_key:
            raise InputError(
                f"CARDINALITY ({column}, {limit}) needs PER (...): '{column}' is not part of "
                f"the primary key of '{shape.name}', so say which columns it is counted per",
                raw.column.location)
        per = tuple(c for c in shape.primary_key if c != column)
        if not per:
            raise InputError(
                f"CARDINALITY ({column}, {limit}) needs PER (...): '{column}' is the whole "
                f"primary key of '{shape.name}', so there is nothing to group it by",
                raw.column.location)
        return CardinalityConstraint(column, limit, per, raw.location)

    # indexes -----------------------------------------------------------------

    def _indexes(self, raw_indexes: list[_RawIndex], declared: dict[str, _RawTable],
                 shapes: dict[str, _Shape]) -> list[Index]:
        indexes: list[Index] = []
        seen: dict[str, _Name] = {}
        for raw in raw_indexes:
            index = self._attempt(self._index, raw, seen, declared, shapes)
            seen.setdefault(raw.name.key, raw.name)
            if index is not None:
                indexes.append(index)
        return indexes

    def _index(self, raw: _RawIndex, seen: dict[str, _Name], declared: dict[str, _RawTable],
               shapes: dict[str, _Shape]) -> Index | None:
        reserved = _reserved(raw.name)
        if reserved is not None:
            raise reserved
        first = seen.get(raw.name.key)
        if first is not None:
            raise InputError(f"duplicate index '{raw.name.text}' "
                             f"(first defined at {_where(first.location)})", raw.name.location)
        if raw.name.key in declared:
            raise InputError(f"index name '{raw.name.text}' is already the name of a table",
                             raw.name.location)
        if raw.table.key not in declared:
            raise InputError(
                f"CREATE INDEX {raw.name.text} is on unknown table '{raw.table.text}'"
                f"{_hint(raw.table.text, [t.name.text for t in declared.values()], 'tables')}",
                raw.table.location)
        shape = shapes.get(raw.table.key)
        if shape is None:
            return None  # the table's own error is already reported
        columns = self._resolve_all(raw.columns, shape.canonical(),
                                    f"index '{raw.name.text}' on table '{shape.name}'")
        return Index(raw.name.text, shape.name, columns, raw.name.location)

    # name resolution ---------------------------------------------------------

    def _resolve(self, name: _Name, canonical: dict[str, str], where: str) -> str:
        """The declared spelling of column ``name``, or an error naming ``where``."""
        found = canonical.get(name.key)
        if found is None:
            raise InputError(f"unknown column '{name.text}' in {where}"
                             f"{_hint(name.text, list(canonical.values()), 'columns')}",
                             name.location)
        return found

    def _resolve_all(self, names: Sequence[_Name], canonical: dict[str, str],
                     where: str) -> tuple[str, ...]:
        resolved: list[str] = []
        for name in names:
            column = self._resolve(name, canonical, where)
            if column in resolved:
                raise InputError(f"column '{column}' appears twice in {where}", name.location)
            resolved.append(column)
        return tuple(resolved)


def _positive_integer(text: str, location: Location) -> int:
    """``K`` of ``CARDINALITY (col, K)``: plain digits, at least 1 ("2.5", "1e3", "0" are refused)."""
    digits = text[1:] if text.startswith("+") else text
    significant = digits.lstrip("0")
    if not (digits.isascii() and digits.isdigit() and significant):
        raise InputError(f"cardinality limit must be a positive integer, not {text}", location)
    # The cap keeps the limit a 64-bit integer, as the store needs (and int()
    # clear of Python's limit on huge digit strings).
    if len(significant) > 18:
        raise InputError(f"cardinality limit {text} is too large (at most 18 digits)", location)
    return int(significant)


def _hint(name: str, candidates: list[str], kind: str) -> str:
    """"; did you mean 'x'?" when a candidate is close, else the list of known names."""
    lowered = {c.lower(): c for c in candidates}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1)
    if close:
        return f"; did you mean '{lowered[close[0]]}'?"
    if not candidates:
        return f" (no {kind} are defined)"
    return f" (known {kind}: {', '.join(candidates)})"


def _reserved(name: "_Name") -> InputError | None:
    """piql's runtime keeps tables of its own in every store (``_piql_meta``, ...)."""
    if name.key.startswith(RESERVED_PREFIX):
        return InputError(f"the name '{name.text}' is reserved: names starting with "
                          f"{RESERVED_PREFIX} are piql's own tables", name.location)
    return None


def _where(location: Location) -> str:
    return f"line {location.line}, column {location.column}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")
