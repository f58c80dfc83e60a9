"""Parse tree -> raw statements: every name as written, with its location.

:class:`SchemaTransformer` turns the lark tree of ``grammar/schema.lark`` into
the ``Raw*`` dataclasses below, in file order; ``piql.language.schema_build`` checks
them and builds the catalog. Expressions (index expressions, partial-index
predicates) are kept as their source text.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from lark import Token, Transformer, v_args

from piql.errors import Location
from piql.sql_types import TypeFamily, family

# PostgreSQL spellings recorded under the name the rest of piql (and SQLite,
# DuckDB) knows; other names are kept as written, upper-cased.
TYPE_ALIASES = {
    "SERIAL": "INTEGER", "SERIAL4": "INTEGER", "BIGSERIAL": "BIGINT", "SERIAL8": "BIGINT",
    "SMALLSERIAL": "SMALLINT", "SERIAL2": "SMALLINT",
    "INT4": "INTEGER", "INT8": "BIGINT", "INT2": "SMALLINT",
    "FLOAT8": "DOUBLE", "DOUBLE PRECISION": "DOUBLE", "FLOAT4": "REAL", "BOOL": "BOOLEAN",
    "CHARACTER VARYING": "VARCHAR", "CHAR VARYING": "VARCHAR", "NATIONAL CHARACTER VARYING": "VARCHAR",
    "CHARACTER": "CHAR", "NATIONAL CHARACTER": "CHAR",
    "TIMESTAMPTZ": "TIMESTAMP WITH TIME ZONE", "TIMETZ": "TIME WITH TIME ZONE",
}
# serial types are an integer with NOT NULL DEFAULT nextval(...)
SERIAL_TYPES = {"SERIAL", "SERIAL4", "BIGSERIAL", "SERIAL8", "SMALLSERIAL", "SERIAL2"}


def at_least_1(value: int | None) -> int:
    return value if isinstance(value, int) and value >= 1 else 1


# --------------------------------------------------------------------------- raw statements


@dataclass(frozen=True)
class RawName:
    """A name as written (quotes removed) and where it was written."""

    text: str
    location: Location
    quoted: bool = field(default=False, compare=False)

    @property
    def key(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class QualifiedName:
    """``[database.][schema.]name`` as written; piql uses the last part."""

    parts: tuple[RawName, ...]

    @property
    def name(self) -> RawName:
        return self.parts[-1]

    @property
    def schema(self) -> str | None:
        return self.parts[-2].text if len(self.parts) > 1 else None

    @property
    def key(self) -> str:
        return self.name.key

    @property
    def display(self) -> str:
        return ".".join(p.text for p in self.parts)

    @property
    def location(self) -> Location:
        return self.parts[0].location


@dataclass(frozen=True)
class RawType:
    text: str
    implies_not_null: bool = False


@dataclass(frozen=True)
class RawText:
    """An expression's source text and where it starts."""

    text: str
    location: Location


@dataclass(frozen=True)
class Option:
    """A column option: ``temporal``, ``primary key``, ``not null``, ``null``,
    ``identity`` (implies NOT NULL), ``constraint`` (names the next one)."""

    kind: str
    location: Location
    name: RawName | None = None


@dataclass(frozen=True)
class RawPrimaryKey:
    columns: tuple[RawName, ...]
    location: Location


@dataclass(frozen=True)
class RawUnique:
    columns: tuple[RawName, ...]
    location: Location
    name: RawName | None = None
    nulls_distinct: bool = True


@dataclass(frozen=True)
class RawForeignKey:
    columns: tuple[RawName, ...]
    ref_table: QualifiedName
    ref_columns: tuple[RawName, ...] | None  # None: the referenced table's primary key
    location: Location


@dataclass(frozen=True)
class RawCheck:
    location: Location


@dataclass(frozen=True)
class RawDefault:
    """``DEFAULT expression``: its source text, and its value when it is a constant literal
    piql fills in (an integer, a real, a string, TRUE/FALSE; NULL is ``value`` None with
    ``literal`` True). Any other expression (``nextval(...)``, ``now()``, ``1 + 1``) has
    ``literal`` False: piql notes it and fills nothing."""

    text: str
    location: Location
    literal: bool
    value: DefaultValue = None


# The constant a column DEFAULT may be (None: NULL)
DefaultValue = int | float | str | bool | None


@dataclass(frozen=True)
class RawColumn:
    name: RawName
    type: RawType
    options: tuple[Option, ...]
    constraints: tuple[RawUnique | RawForeignKey, ...] = ()
    default: RawDefault | None = None


@dataclass(frozen=True)
class RawCardinality:
    column: RawName
    limit: str
    limit_location: Location
    per: tuple[RawName, ...] | None  # None: the table's other primary-key columns
    location: Location


@dataclass(frozen=True)
class RawTemporal:
    """``TEMPORAL (columns)`` of an annotation; ``columns`` None for a bare ``TEMPORAL``."""

    columns: tuple[RawName, ...] | None
    location: Location


@dataclass(frozen=True)
class RawTable:
    name: QualifiedName
    columns: tuple[RawColumn, ...]
    constraints: tuple[Constraint, ...]
    cardinalities: tuple[RawCardinality, ...]
    if_not_exists: bool
    start: int  # offset of CREATE, to attach '-- piql:' annotations
    location: Location  # of CREATE


@dataclass(frozen=True)
class RawIndexElement:
    column: RawName | None
    expression: RawText | None


@dataclass(frozen=True)
class RawIndex:
    name: RawName | None  # None: PostgreSQL names it after the table and columns
    table: QualifiedName
    elements: tuple[RawIndexElement, ...]
    unique: bool
    predicate: RawText | None
    method: str
    if_not_exists: bool
    location: Location  # of CREATE


@dataclass(frozen=True)
class RawAddConstraint:
    constraint: Constraint


@dataclass(frozen=True)
class RawAddColumn:
    column: RawColumn


@dataclass(frozen=True)
class RawSetNotNull:
    column: RawName
    not_null: bool
    location: Location


@dataclass(frozen=True)
class RawSetType:
    column: RawName
    type: RawType
    location: Location


@dataclass(frozen=True)
class RawIgnoredAction:
    """An ALTER TABLE action that does not affect bounds (SET DEFAULT, OWNER TO, ...)."""

    kind: str
    location: Location


Constraint = RawPrimaryKey | RawUnique | RawForeignKey | RawCheck | RawSetNotNull
@dataclass(frozen=True)
class RawSetDefault:
    """``ALTER COLUMN ... SET DEFAULT`` (``DROP DEFAULT``: a DEFAULT of value None)."""

    column: RawName
    default: RawDefault


AlterAction = (RawAddConstraint | RawAddColumn | RawSetNotNull | RawSetType | RawSetDefault
               | RawIgnoredAction)


@dataclass(frozen=True)
class RawAlter:
    table: QualifiedName
    actions: tuple[AlterAction, ...]
    location: Location


@dataclass(frozen=True)
class RawComment:
    """``COMMENT ON TABLE t | COLUMN t.c IS 'text'``; ``text`` None for ``IS NULL``."""

    target: str  # "TABLE" | "COLUMN"
    name: QualifiedName
    text: str | None
    text_offset: int  # where the string's content starts in the file
    location: Location


RawStatement = RawTable | RawIndex | RawAlter | RawComment


# --------------------------------------------------------------------------- transformer


class SchemaTransformer(Transformer):
    """Parse tree -> list of raw statements (or, from ``annotation``, of annotation items)."""

    def __init__(self, file: str, text: str) -> None:
        super().__init__()
        self.file = file
        self.text = text

    def _at(self, token: Token) -> Location:
        return Location(self.file, at_least_1(token.line), at_least_1(token.column))

    def _at_meta(self, meta) -> Location:
        return Location(self.file, at_least_1(getattr(meta, "line", 1)),
                        at_least_1(getattr(meta, "column", 1)))

    # names -------------------------------------------------------------------
    def name(self, children: list[Token]) -> RawName:
        token = children[0]
        text = str(token)
        quoted = token.type in ("QUOTED_NAME", "BACKQUOTED_NAME")
        if quoted:
            text = text[1:-1].replace(text[0] * 2, text[0])
        return RawName(text, self._at(token), quoted)

    def name_list(self, children: list[RawName]) -> tuple[RawName, ...]:
        return tuple(children)

    def qualified_name(self, children: list[RawName]) -> QualifiedName:
        return QualifiedName(tuple(children))

    # types -------------------------------------------------------------------
    def type_args(self, children: list[Token]) -> str:
        return "(" + ",".join(str(c) for c in children) + ")"

    def array_suffix(self, children: list[Token]) -> str:
        sizes = [str(c) for c in children if isinstance(c, Token) and c.type == "INT"]
        return f"[{sizes[0] if sizes else ''}]"

    def named_type(self, children: list) -> RawType:
        names = [c for c in children if isinstance(c, RawName)]
        args = next((c for c in children if isinstance(c, str) and not isinstance(c, Token)), "")
        if names:  # a name: BIGINT; a quoted one keeps its case. public.citext is CITEXT:
            last = names[-1]  # piql does not tell types apart by schema
            base = last.text if last.quoted else last.text.upper()
        else:  # keywords: DOUBLE PRECISION, CHARACTER VARYING
            base = " ".join(str(c).upper() for c in children if isinstance(c, Token))
        serial = base in SERIAL_TYPES
        return RawType(TYPE_ALIASES.get(base, base) + args, serial)

    def time_type(self, children: list) -> RawType:
        words = [str(c).upper() for c in children if isinstance(c, Token)]
        args = next((c for c in children if isinstance(c, str) and not isinstance(c, Token)), "")
        base, zone = words[0], words[1:]
        if zone[:1] == ["WITHOUT"]:
            zone = []
        return RawType(" ".join([base + args] + zone))

    def interval_type(self, children: list) -> RawType:
        words = [str(c).upper() for c in children if isinstance(c, Token)]
        args = next((c for c in children if isinstance(c, str) and not isinstance(c, Token)), "")
        return RawType(" ".join(words) + args)

    def type_spec(self, children: list) -> RawType:
        base: RawType = children[0]
        return RawType(base.text + "".join(children[1:]), base.implies_not_null)

    # expressions -------------------------------------------------------------
    @v_args(meta=True)
    def paren_expr(self, meta, children: list) -> RawText:
        return RawText(self.text[meta.start_pos:meta.end_pos], self._at_meta(meta))

    @v_args(meta=True)
    def predicate(self, meta, children: list) -> RawText:
        return RawText(self.text[meta.start_pos:meta.end_pos], self._at_meta(meta))

    @v_args(meta=True)
    def index_expression(self, meta, children: list) -> RawText:
        return RawText(self.text[meta.start_pos:meta.end_pos], self._at_meta(meta))

    # column options ----------------------------------------------------------
    def temporal(self, children: list[Token]) -> Option:
        return Option("temporal", self._at(children[0]))

    def column_primary_key(self, children: list[Token]) -> Option:
        return Option("primary key", self._at(children[0]))

    def not_option(self, children: list[Token]) -> Option | None:
        if children[1].type == "NULL":
            return Option("not null", self._at(children[0]))
        return None

    def nullable(self, children: list[Token]) -> Option:
        return Option("null", self._at(children[0]))

    def nulls_distinct(self, children: list[Token]) -> bool:
        return not any(isinstance(c, Token) and c.type == "NOT" for c in children)

    def column_unique(self, children: list) -> RawUnique:
        distinct = children[1] if len(children) > 1 else True
        return RawUnique((), self._at(children[0]), None, distinct)

    def check(self, children: list) -> RawCheck:
        return RawCheck(self._at(children[0]))

    @v_args(meta=True)
    def default(self, meta, children: list) -> RawDefault:
        return self._default(meta, children[0], children[1:])

    @v_args(meta=True)
    def set_default(self, meta, children: list) -> RawDefault:
        return self._default(meta, children[1], children[2:])

    def _default(self, meta, keyword: Token, expression: list) -> RawDefault:
        """The DEFAULT after ``keyword``: its text, and its value when it is a constant."""
        text = self.text[keyword.end_pos:meta.end_pos].strip()
        found = default_literal(expression)
        location = self._at(keyword)
        if found is None:
            return RawDefault(text, location, False)
        return RawDefault(text, location, True, found[0])

    def drop_default(self, children: list) -> RawDefault:
        return RawDefault("", self._at(children[0]), True)

    def column_references(self, children: list) -> RawForeignKey:
        table = next(c for c in children if isinstance(c, QualifiedName))
        columns = next((c for c in children if isinstance(c, tuple)), None)
        return RawForeignKey((), table, columns, self._at(children[0]))

    def ref_columns(self, children: list) -> tuple[RawName, ...]:
        return children[0]

    def generated(self, children: list) -> Option | None:
        if any(isinstance(c, Token) and c.type == "IDENTITY" for c in children):
            return Option("identity", self._at(children[0]))
        return None

    def constraint_name(self, children: list) -> Option:
        return Option("constraint", self._at(children[0]), children[-1])

    def collate(self, children: list) -> None:
        return None

    def on_clause(self, children: list) -> None:
        return None

    def match_clause(self, children: list) -> None:
        return None

    def deferrable(self, children: list) -> None:
        return None

    def initially(self, children: list) -> None:
        return None

    def not_attribute(self, children: list) -> None:
        return None

    def column_def(self, children: list) -> RawColumn:
        name, type_, *rest = children
        options: list[Option] = []
        constraints: list[RawUnique | RawForeignKey] = []
        default: RawDefault | None = None
        pending: RawName | None = None  # CONSTRAINT name, for the constraint after it
        if type_.implies_not_null:
            options.append(Option("identity", name.location))
        for item in rest:
            if isinstance(item, Option) and item.kind == "constraint":
                pending = item.name
                continue
            if isinstance(item, RawUnique):
                constraints.append(RawUnique((name,), item.location, pending, item.nulls_distinct))
            elif isinstance(item, RawForeignKey):
                constraints.append(RawForeignKey((name,), item.ref_table, item.ref_columns,
                                                 item.location))
            elif isinstance(item, Option):
                options.append(item)
            elif isinstance(item, RawDefault):
                default = item
            if item is not None:
                pending = None
        return RawColumn(name, type_, tuple(options), tuple(constraints), default)

    # table constraints -------------------------------------------------------
    def key_column(self, children: list) -> RawName:
        return children[0]

    def key_columns(self, children: list) -> tuple[RawName, ...]:
        return tuple(children)

    def include(self, children: list) -> None:
        return None

    def with_options(self, children: list) -> None:
        return None

    def using_index_tablespace(self, children: list) -> None:
        return None

    def table_primary_key(self, children: list) -> RawPrimaryKey:
        columns = next(c for c in children if isinstance(c, tuple))
        return RawPrimaryKey(columns, self._at(children[0]))

    def table_unique(self, children: list) -> RawUnique:
        columns = next(c for c in children if isinstance(c, tuple))
        distinct = next((c for c in children if isinstance(c, bool)), True)
        return RawUnique(columns, self._at(children[0]), None, distinct)

    def foreign_key(self, children: list) -> RawForeignKey:
        lists = [c for c in children if isinstance(c, tuple)]
        table = next(c for c in children if isinstance(c, QualifiedName))
        ref_columns = lists[1] if len(lists) > 1 else None
        return RawForeignKey(lists[0], table, ref_columns, self._at(children[0]))

    def table_not_null(self, children: list) -> RawSetNotNull:
        column = next(c for c in children if isinstance(c, RawName))
        return RawSetNotNull(column, True, self._at(children[0]))

    def table_constraint(self, children: list) -> Constraint:
        named = children[0] if isinstance(children[0], Option) else None
        constraint = children[1] if named else children[0]
        if named is not None and isinstance(constraint, RawUnique):
            return RawUnique(constraint.columns, constraint.location, named.name,
                             constraint.nulls_distinct)
        return constraint

    def per(self, children: list) -> tuple[RawName, ...]:
        return children[-1]

    def cardinality(self, children: list) -> RawCardinality:
        keyword = _first_token(children, "CARDINALITY")
        number = _first_token(children, "NUMBER")
        column = next(c for c in children if isinstance(c, RawName))
        per = next((c for c in children if isinstance(c, tuple)), None)
        return RawCardinality(column, str(number), self._at(number), per, self._at(keyword))

    def partition_by(self, children: list) -> None:
        return None

    # statements --------------------------------------------------------------
    def if_not_exists(self, children: list) -> str:
        return "if not exists"

    def if_exists(self, children: list) -> None:
        return None

    @v_args(meta=True)
    def create_table(self, meta, children: list) -> RawTable:
        items = [c for c in children if c is not None and not isinstance(c, Token)]
        name = next(c for c in items if isinstance(c, QualifiedName))
        return RawTable(
            name=name,
            columns=tuple(c for c in items if isinstance(c, RawColumn)),
            constraints=tuple(c for c in items if isinstance(
                c, (RawPrimaryKey, RawUnique, RawForeignKey, RawCheck, RawSetNotNull))),
            cardinalities=tuple(c for c in items if isinstance(c, RawCardinality)),
            if_not_exists="if not exists" in items,
            start=meta.start_pos,
            location=self._at(children[0]),
        )

    def unique(self, children: list) -> bool:
        return True

    def using_method(self, children: list) -> str:
        return children[-1].text.lower()

    def index_column(self, children: list) -> RawName:
        return children[0]

    def opclass(self, children: list) -> None:
        return None

    def index_element(self, children: list) -> RawIndexElement:
        first = children[0]
        if isinstance(first, RawName):
            return RawIndexElement(first, None)
        return RawIndexElement(None, first)

    def create_index(self, children: list) -> RawIndex:
        table_position = next(i for i, c in enumerate(children) if isinstance(c, QualifiedName))
        name = next((c for c in children[:table_position] if isinstance(c, RawName)), None)
        predicate = next((c for c in children[table_position:] if isinstance(c, RawText)), None)
        return RawIndex(
            name=name,
            table=children[table_position],
            elements=tuple(c for c in children if isinstance(c, RawIndexElement)),
            unique=True in children[:table_position],
            predicate=predicate,
            method=next((c for c in children if isinstance(c, str) and not isinstance(c, Token)
                         and c != "if not exists"), "btree"),
            if_not_exists="if not exists" in children[:table_position],
            location=self._at(children[0]),
        )

    def add_constraint(self, children: list) -> RawAddConstraint:
        return RawAddConstraint(next(c for c in children if isinstance(
            c, (RawPrimaryKey, RawUnique, RawForeignKey, RawCheck, RawSetNotNull))))

    def add_column(self, children: list) -> RawAddColumn:
        return RawAddColumn(children[-1])

    def set_not_null(self, children: list) -> tuple[bool, Location]:
        return True, self._at(children[0])

    def drop_not_null(self, children: list) -> tuple[bool, Location]:
        return False, self._at(children[0])

    def set_type(self, children: list) -> RawType:
        return next(c for c in children if isinstance(c, RawType))

    def alter_column(self, children: list) -> AlterAction:
        column = next(c for c in children if isinstance(c, RawName))
        action = children[-1]
        if isinstance(action, RawIgnoredAction):
            return action
        if isinstance(action, RawDefault):
            return RawSetDefault(column, action)
        if isinstance(action, RawType):
            return RawSetType(column, action, self._at(children[0]))
        not_null, location = action
        return RawSetNotNull(column, not_null, location)

    def owner_to(self, children: list) -> RawIgnoredAction:
        return RawIgnoredAction("OWNER TO", self._at(children[0]))

    def alter_table(self, children: list) -> RawAlter:
        table = next(c for c in children if isinstance(c, QualifiedName))
        actions = tuple(c for c in children
                        if isinstance(c, (RawAddConstraint, RawAddColumn, RawSetNotNull,
                                          RawSetType, RawSetDefault, RawIgnoredAction)))
        return RawAlter(table, actions, self._at(children[0]))

    def comment_on(self, children: list) -> RawComment:
        target = str(children[2]).upper()
        name = next(c for c in children if isinstance(c, QualifiedName))
        value: Token = children[-1]
        if value.type == "NULL":
            return RawComment(target, name, None, value.start_pos, self._at(children[0]))
        prefix = 2 if value.type == "ESTRING" else 1
        text = str(value)[prefix:-1].replace("''", "'")
        return RawComment(target, name, text, value.start_pos + prefix, self._at(children[0]))

    def start(self, children: list) -> list[RawStatement]:
        return list(children)

    # annotations -------------------------------------------------------------
    def temporal_columns(self, children: list) -> RawTemporal:
        columns = next((c for c in children if isinstance(c, tuple)), None)
        return RawTemporal(columns, self._at(children[0]))

    def annotation(self, children: list) -> list[RawCardinality | RawTemporal]:
        return [c for c in children if isinstance(c, (RawCardinality, RawTemporal))]


def _first_token(children: Sequence, kind: str) -> Token:
    return next(c for c in children if isinstance(c, Token) and c.type == kind)


_ESCAPES = {"\\": "\\", "'": "'", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _escape_string(body: str) -> tuple[str] | None:
    """The text of an ``E'...'`` string (its body), with PostgreSQL's one-letter escapes;
    None for the octal, hexadecimal and Unicode ones (left to the database)."""
    out, i = [], 0
    while i < len(body):
        char = body[i]
        if char == "\\":
            escaped = _ESCAPES.get(body[i + 1:i + 2])
            if escaped is None:
                return None
            out.append(escaped)
            i += 2
        elif body.startswith("''", i):
            out.append("'")
            i += 2
        else:
            out.append(char)
            i += 1
    return ("".join(out),)


def default_literal(tokens: list) -> tuple[DefaultValue] | None:
    """The constant ``tokens`` (a DEFAULT's expression) write, in a 1-tuple; None when
    they are no constant literal: NULL, a number (with its sign, written apart or not), a
    plain '...' string, TRUE or FALSE."""
    if not all(isinstance(t, Token) for t in tokens):
        return None  # a parenthesized expression
    kinds = [t.type for t in tokens]
    if len(kinds) > 2 and kinds[:2] == ["STRING", "OP"] and str(tokens[1]) == "::" \
            and set(kinds[2:]) == {"NAME"}:
        # 'text'::character varying, as pg_dump writes a string DEFAULT: a text cast keeps it
        cast = " ".join(str(t).upper() for t in tokens[2:])
        if family(TYPE_ALIASES.get(cast, cast)) is not TypeFamily.TEXT:
            return None
        kinds, tokens = kinds[:1], tokens[:1]
    if kinds == ["NULL"]:
        return (None,)
    if kinds == ["STRING"]:
        return (str(tokens[0])[1:-1].replace("''", "'"),)
    if kinds == ["ESTRING"]:
        return _escape_string(str(tokens[0])[2:-1])
    if kinds == ["NAME"] and str(tokens[0]).lower() in ("true", "false"):
        return (str(tokens[0]).lower() == "true",)
    sign = ""
    if kinds == ["OP", "NUMBER"] and str(tokens[0]) in ("-", "+"):
        sign, tokens = str(tokens[0]), tokens[1:]
    elif kinds != ["NUMBER"]:
        return None
    text = str(tokens[0])
    if sign and text[0] in "+-":
        return None  # - -1: an expression
    text = sign + text
    try:
        return (int(text),)
    except ValueError:
        return (float(text),)
