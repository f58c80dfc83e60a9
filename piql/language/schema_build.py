"""Raw schema statements -> the checked, immutable :class:`Catalog`.

:class:`CatalogBuilder` gathers what each table is declared to be across the
file (its ``CREATE TABLE``, then ``ALTER TABLE`` actions in file order, then
annotations from ``COMMENT ON`` and ``-- piql:`` lines), checks it (names
resolve, keys exist, limits are positive, ...) and builds the catalog. Names
keep the spelling of their declaration; references are matched
case-insensitively; a schema qualifier (``public.users``) is dropped from the
name and kept for messages.

Each statement is checked on its own; its first mistake is recorded and the
statement left out, so one typo does not cascade into many messages. The
first error is raised with all of them in its ``all_errors`` attribute.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from piql.catalog import (
    Catalog, CardinalityConstraint, Column, ForeignKey, Index, IndexExpression, Table, UniqueKey,
)
from piql.diagnostics import Diagnostic
from piql.errors import InputError, Location
from piql.language.schema_scan import Annotation, Skipped
from piql.language.schema_tree import (
    Constraint, DefaultValue, QualifiedName, RawDefault, RawSetDefault, RawAddColumn, RawAddConstraint, RawAlter, RawCardinality, RawColumn,
    RawComment, RawForeignKey, RawIgnoredAction, RawIndex, RawName, RawPrimaryKey, RawSetNotNull,
    RawSetType, RawStatement, RawTable, RawTemporal, RawType, RawUnique,
)
from piql.sql_types import TypeFamily, family, fits_family

__all__ = ["CatalogBuilder", "AnnotationParser"]

_T = TypeVar("_T")
RESERVED_PREFIX = "_piql"  # piql.planner.naming.RUNTIME_PREFIX (the language imports no planner)
_RELATION_NOUNS = {
    "CREATE VIEW": "view", "CREATE MATERIALIZED VIEW": "materialized view",
    "CREATE FOREIGN TABLE": "foreign table", "CREATE VIRTUAL TABLE": "virtual table",
    "CREATE TABLE ... PARTITION OF": "partition", "ALTER TABLE ... ATTACH PARTITION": "partition",
    "CREATE TABLE ... OF": "typed table",
    "CREATE TABLE ... AS": "table made by a query",
}
AnnotationParser = Callable[[str, int], list]  # (text, file offset) -> [RawCardinality | RawTemporal]
_COMMENT_ANNOTATION = re.compile(r"[ \t]*piql[ \t]*:", re.IGNORECASE)


@dataclass
class _Draft:
    """A table as the whole file declares it, before checks."""

    raw: RawTable
    columns: list[RawColumn] = field(default_factory=list)
    constraints: list[Constraint] = field(default_factory=list)
    cardinalities: list[RawCardinality] = field(default_factory=list)
    temporal: list[RawName] = field(default_factory=list)
    nullability: list[tuple[RawName, bool]] = field(default_factory=list)
    types: list[tuple[RawName, RawType]] = field(default_factory=list)
    defaults: list[tuple[RawName, RawDefault]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.raw.name.name.text


@dataclass(frozen=True)
class _Shape:
    """A table's columns and primary key, checked; what other statements refer to."""

    draft: _Draft
    columns: tuple[Column, ...]
    primary_key: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.draft.name

    def canonical(self) -> dict[str, str]:
        """Lower-cased column name -> declared spelling."""
        return {c.name.lower(): c.name for c in self.columns}


class CatalogBuilder:
    """Checks raw statements and assembles the catalog."""

    def __init__(self, file: str, parse_annotation: AnnotationParser,
                 skipped: Sequence[Skipped] = (), annotations: Sequence[Annotation] = (),
                 table_starts: dict[int, int] | None = None) -> None:
        self.file = file
        self.parse_annotation = parse_annotation
        self.skipped = list(skipped)
        self.annotations = list(annotations)
        self.errors: list[InputError] = []
        self.notes: list[Diagnostic] = [
            Diagnostic("skipped", "info",
                       f"skipped {s.kind}{' ' + s.relation if s.relation else ''}: {s.reason}",
                       "", s.location) for s in skipped]
        self.not_read = {s.relation.lower(): s for s in skipped if s.relation}
        self.statement_of = table_starts or {}

    def build(self, statements: list[RawStatement]) -> Catalog:
        drafts = self._declare([s for s in statements if isinstance(s, RawTable)])
        for skipped in self.skipped:  # a table pg_dump attaches as a partition is no table of its own
            if skipped.kind == "ALTER TABLE ... ATTACH PARTITION" and skipped.relation:
                drafts.pop(skipped.relation.lower(), None)
        for statement in statements:
            if isinstance(statement, RawAlter):
                self._attempt(self._alter, statement, drafts)
            elif isinstance(statement, RawComment):
                self._attempt(self._comment, statement, drafts)
        for annotation in self.annotations:
            self._attempt(self._line_annotation, annotation, drafts)
        raw_indexes = [s for s in statements if isinstance(s, RawIndex)]
        shapes: dict[str, _Shape] = {}
        for key, draft in drafts.items():
            shape = self._attempt(self._shape, draft, raw_indexes)
            if shape is not None:
                shapes[key] = shape
        indexes = self._indexes(raw_indexes, drafts, shapes)
        tables = [self._attempt(self._table, shape, drafts, shapes, indexes)
                  for shape in shapes.values()]
        indexes = _constraint_indexes([t for t in tables if t is not None], indexes)
        if self.errors:
            self.errors.sort(key=lambda e: (e.location.line, e.location.column) if e.location else (0, 0))
            first = self.errors[0]
            first.all_errors = self.errors  # type: ignore[attr-defined]
            raise first
        self.notes.sort(key=lambda d: (d.location.line, d.location.column) if d.location else (0, 0))
        return Catalog(tuple(t for t in tables if t is not None), tuple(indexes), self.file,
                       tuple(self.notes))

    def _attempt(self, check: Callable[..., _T], *args: object) -> _T | None:
        """Run one statement's check, recording its InputError instead of raising."""
        try:
            return check(*args)
        except InputError as err:
            self.errors.append(err)
            return None

    def _note(self, message: str, location: Location | None, code: str = "schema") -> None:
        self.notes.append(Diagnostic(code, "info", message, "", location))

    # tables ------------------------------------------------------------------

    def _declare(self, raw_tables: list[RawTable]) -> dict[str, _Draft]:
        declared: dict[str, _Draft] = {}
        for raw in raw_tables:
            reserved = _reserved(raw.name)
            if reserved is not None:
                self.errors.append(reserved)
                continue
            first = declared.get(raw.name.key)
            if first is None:
                draft = _Draft(raw)
                draft.columns = list(raw.columns)
                draft.constraints = [c for c in raw.constraints if not isinstance(c, RawSetNotNull)]
                draft.nullability = [(c.column, True) for c in raw.constraints
                                     if isinstance(c, RawSetNotNull)]
                draft.cardinalities = list(raw.cardinalities)
                declared[raw.name.key] = draft
                continue
            name, schemas = raw.name, (first.raw.name.schema, raw.name.schema)
            if all(schemas) and schemas[0].lower() != schemas[1].lower():  # type: ignore[union-attr]
                self.errors.append(InputError(
                    f"table '{name.display}' has the same name as '{first.raw.name.display}' "
                    f"(line {first.raw.name.location.line}): piql names tables without "
                    f"their schema, so two schemas cannot both have a table '{name.name.text}'",
                    name.location))
            elif raw.if_not_exists:
                self._note(f"skipped CREATE TABLE IF NOT EXISTS {name.display}: it is already "
                           f"created at {_where(first.raw.name.location)}", raw.location,
                           "skipped")
            else:
                self.errors.append(InputError(
                    f"duplicate table '{name.name.text}' "
                    f"(first defined at {_where(first.raw.name.location)})", name.location))
        return declared

    def _find(self, name: QualifiedName, drafts: dict[str, _Draft]) -> _Draft | None:
        """The table ``name`` refers to; a schema, when both sides have one, must agree."""
        draft = drafts.get(name.key)
        if draft is None:
            return None
        declared = draft.raw.name.schema
        if name.schema and declared and name.schema.lower() != declared.lower():
            return None
        return draft

    def _unknown_table(self, name: QualifiedName, drafts: dict[str, _Draft], what: str) -> InputError:
        known = [d.name for d in drafts.values()]
        return InputError(f"{what} unknown table '{name.display}'"
                          f"{_hint(name.name.text, known, 'tables')}", name.location)

    def _not_read(self, name: QualifiedName, statement: str, location: Location) -> bool:
        """Note (and say True) when ``name`` is a view or other relation piql skipped."""
        skipped = self.not_read.get(name.key)
        if skipped is None:
            return False
        noun = _RELATION_NOUNS.get(skipped.kind, "relation")
        self._note(f"skipped {statement} on {name.display}: {name.display} is a {noun} "
                   f"({_where(skipped.location)}), which piql does not read", location, "skipped")
        return True

    # ALTER TABLE, COMMENT ON and annotations ---------------------------------

    def _alter(self, alter: RawAlter, drafts: dict[str, _Draft]) -> None:
        draft = self._find(alter.table, drafts)
        if draft is None:
            if self._not_read(alter.table, "ALTER TABLE", alter.location):
                return
            raise self._unknown_table(alter.table, drafts, "ALTER TABLE on")
        for action in alter.actions:
            if isinstance(action, RawAddConstraint) and isinstance(action.constraint, RawSetNotNull):
                draft.nullability.append((action.constraint.column, True))
            elif isinstance(action, RawAddConstraint):
                draft.constraints.append(action.constraint)
            elif isinstance(action, RawAddColumn):
                draft.columns.append(action.column)
            elif isinstance(action, RawSetNotNull):
                draft.nullability.append((action.column, action.not_null))
            elif isinstance(action, RawSetType):
                draft.types.append((action.column, action.type))
            elif isinstance(action, RawSetDefault):
                draft.defaults.append((action.column, action.default))
            elif isinstance(action, RawIgnoredAction):
                self._note(f"skipped ALTER TABLE ... {action.kind}: does not affect bounds",
                           action.location, "skipped")

    def _comment(self, comment: RawComment, drafts: dict[str, _Draft]) -> None:
        if comment.text is None:
            return
        parts = comment.name.parts
        column: RawName | None = None
        if comment.target == "COLUMN":
            if len(parts) < 2:
                raise InputError(f"COMMENT ON COLUMN needs table.column, not '{comment.name.display}'",
                                 parts[0].location)
            column, parts = parts[-1], parts[:-1]
        table_name = QualifiedName(parts)
        items = [item for offset, line in _annotation_lines(comment.text, comment.text_offset)
                 for item in self.parse_annotation(line, offset)]
        if not items:
            return
        draft = self._find(table_name, drafts)
        if draft is None:
            if self._not_read(table_name, f"COMMENT ON {comment.target}", comment.location):
                return
            raise self._unknown_table(table_name, drafts, f"COMMENT ON {comment.target} of")
        self._annotate(draft, items, column)

    def _line_annotation(self, annotation: Annotation, drafts: dict[str, _Draft]) -> None:
        items = self.parse_annotation(annotation.text, annotation.offset)
        if annotation.owner is None:
            location = items[0].location if items else None
            raise InputError("a '-- piql:' annotation belongs inside or right after the "
                             "CREATE TABLE statement it is about", location or Location(self.file, 1, 1))
        owner = next((d for d in drafts.values()
                      if self.statement_of.get(d.raw.start) == annotation.owner), None)
        if owner is not None:  # else its table was skipped (IF NOT EXISTS, a partition) or is wrong
            self._annotate(owner, items, None)

    def _annotate(self, draft: _Draft, items: list, column: RawName | None) -> None:
        for item in items:
            if isinstance(item, RawCardinality):
                draft.cardinalities.append(item)
            elif isinstance(item, RawTemporal):
                if item.columns is not None:
                    draft.temporal.extend(item.columns)
                elif column is not None:
                    draft.temporal.append(column)
                else:
                    raise InputError(
                        f"TEMPORAL in an annotation of table '{draft.name}' needs its columns: "
                        "TEMPORAL (column, ...)", item.location)

    # shapes ------------------------------------------------------------------

    def _shape(self, draft: _Draft, raw_indexes: list[RawIndex]) -> _Shape:
        columns = self._columns(draft)
        canonical = {c.name.lower(): c.name for c in columns}
        primary_key = self._primary_key(draft, canonical, columns, raw_indexes)
        keyed = {c.lower() for c in primary_key}
        columns = [_replace_column(c, nullable=False) if c.name.lower() in keyed else c
                   for c in columns]
        return _Shape(draft, tuple(columns), primary_key)

    def _columns(self, draft: _Draft) -> list[Column]:
        seen: dict[str, RawName] = {}
        for col in draft.columns:
            first = seen.get(col.name.key)
            if first is not None:
                raise InputError(
                    f"duplicate column '{col.name.text}' in table '{draft.name}' "
                    f"(first defined at {_where(first.location)})", col.name.location)
            seen[col.name.key] = col.name
        where = f"table '{draft.name}'"
        types = {c.name.key: c.type for c in draft.columns}
        nullable = {c.name.key: not any(o.kind in ("not null", "identity") for o in c.options)
                    for c in draft.columns}
        temporal = {c.name.key for c in draft.columns if any(o.kind == "temporal" for o in c.options)}
        for name, type_ in draft.types:
            self._known(name, seen, f"ALTER COLUMN of {where}")
            types[name.key] = type_
            if type_.implies_not_null:
                nullable[name.key] = False
        for name, not_null in draft.nullability:
            self._known(name, seen, f"ALTER COLUMN of {where}")
            nullable[name.key] = not not_null
        for name in draft.temporal:
            self._known(name, seen, f"TEMPORAL of {where}")
            temporal.add(name.key)
        defaults = {c.name.key: c.default for c in draft.columns}
        for name, default in draft.defaults:  # ALTER COLUMN ... SET / DROP DEFAULT
            self._known(name, seen, f"ALTER COLUMN of {where}")
            defaults[name.key] = default
        return [Column(c.name.text, types[c.name.key].text, c.name.key in temporal, c.name.location,
                       nullable[c.name.key],
                       self._default(draft, c.name.text, defaults[c.name.key], types[c.name.key].text))
                for c in draft.columns]

    def _default(self, draft: _Draft, column: str, default: RawDefault | None,
                 declared: str) -> DefaultValue:
        """The constant the column's DEFAULT gives (None: none piql fills, noted when it is
        an expression); a constant of another type than the column's is refused."""
        if default is None:
            return None
        if not default.literal:
            self._note(f"skipped DEFAULT {default.text} of {draft.name}.{column}: piql "
                       "fills constant DEFAULTs only (a number, a string, TRUE/FALSE); "
                       "writes must give the value", default.location, "skipped")
            return None
        value = default.value
        kind = family(declared)
        if kind is TypeFamily.REAL and type(value) is int:
            value = float(value)
        if value is not None and (not fits_family(kind, value)
                                  or (kind is TypeFamily.BOOLEAN) != isinstance(value, bool)
                                  or not _storable(value)):
            raise InputError(f"DEFAULT {default.text} of {draft.name}.{column} is "
                             f"no {declared} value", default.location)
        return value

    def _known(self, name: RawName, seen: dict[str, RawName], where: str) -> None:
        if name.key not in seen:
            known = [n.text for n in seen.values()]
            raise InputError(f"unknown column '{name.text}' in {where}{_hint(name.text, known, 'columns')}",
                             name.location)

    def _primary_key(self, draft: _Draft, canonical: dict[str, str], columns: list[Column],
                     raw_indexes: list[RawIndex]) -> tuple[str, ...]:
        # Column-level and table-level keys and ALTER TABLE ... ADD PRIMARY KEY: one only.
        declarations: list[tuple[Location, tuple[RawName, ...]]] = []
        for col in draft.columns:
            for option in col.options:
                if option.kind == "primary key":
                    declarations.append((option.location, (col.name,)))
        declarations += [(c.location, c.columns) for c in draft.constraints
                         if isinstance(c, RawPrimaryKey)]
        declarations.sort(key=lambda d: (d[0].line, d[0].column))
        if len(declarations) > 1:
            raise InputError(
                f"table '{draft.name}' has more than one primary key "
                f"(the first is at {_where(declarations[0][0])})", declarations[1][0])
        if declarations:
            return self._resolve_all(declarations[0][1], canonical,
                                     f"PRIMARY KEY of table '{draft.name}'")
        promoted = self._candidate_key(draft, canonical, columns, raw_indexes)
        if promoted is None:
            raise InputError(
                f"table '{draft.name}' has no primary key; add PRIMARY KEY (...) "
                "(piql needs a key to bound every access), or a UNIQUE constraint on NOT NULL "
                "columns", draft.raw.name.location)
        key, described = promoted
        self._note(f"table '{draft.name}' has no PRIMARY KEY: piql keys it by {described}, "
                   "whose columns are NOT NULL", draft.raw.name.location)
        return key

    def _candidate_key(self, draft: _Draft, canonical: dict[str, str], columns: list[Column],
                       raw_indexes: list[RawIndex]) -> tuple[tuple[str, ...], str] | None:
        """A UNIQUE constraint or unique index over NOT NULL columns: SQL's candidate key."""
        not_null = {c.name.lower() for c in columns if not c.nullable}
        candidates: list[tuple[tuple[RawName, ...], str]] = []
        for unique in _uniques(draft):
            candidates.append((unique.columns, "UNIQUE (" + ", ".join(n.text for n in unique.columns) + ")"))
        for raw in raw_indexes:
            if raw.unique and raw.predicate is None and raw.method == "btree" and \
                    self._find(raw.table, {draft.raw.name.key: draft}) is draft and \
                    all(e.column is not None for e in raw.elements):
                names = tuple(e.column for e in raw.elements)  # type: ignore[misc]
                label = f"unique index {raw.name.text}" if raw.name else "a unique index"
                candidates.append((names, label))
        for names, label in candidates:
            if names and all(n.key in canonical and n.key in not_null for n in names):
                return tuple(dict.fromkeys(canonical[n.key] for n in names)), label
        return None

    # finished tables ---------------------------------------------------------

    def _table(self, shape: _Shape, drafts: dict[str, _Draft], shapes: dict[str, _Shape],
               indexes: list[Index]) -> Table:
        draft = shape.draft
        foreign_keys = tuple(self._foreign_key(fk, shape, drafts, shapes) for fk in _foreign_keys(draft))
        cardinalities = tuple(self._cardinality(c, shape) for c in draft.cardinalities)
        unique_keys = self._unique_keys(shape, indexes)
        return Table(shape.name, shape.columns, shape.primary_key, foreign_keys, cardinalities,
                     draft.raw.name.location, unique_keys=unique_keys,
                     schema=draft.raw.name.schema)

    def _unique_keys(self, shape: _Shape, indexes: list[Index]) -> tuple[UniqueKey, ...]:
        found: list[UniqueKey] = []
        for unique in _uniques(shape.draft):
            columns = self._resolve_all(unique.columns, shape.canonical(),
                                        f"UNIQUE of table '{shape.name}'")
            name = unique.name.text if unique.name else None
            found.append(UniqueKey(columns, name, unique.location, unique.nulls_distinct))
        for index in indexes:
            if index.unique and index.plain and index.table == shape.name:
                found.append(UniqueKey(index.columns, index.name, index.location))
        keyed = {c.lower() for c in shape.primary_key}
        kept: list[UniqueKey] = []
        seen: set[frozenset[str]] = set()
        for key in found:
            columns = frozenset(c.lower() for c in key.columns)
            # A superset of the primary key (or of a key already kept) bounds nothing more.
            if keyed <= columns or columns in seen:
                continue
            seen.add(columns)
            kept.append(key)
        return tuple(kept)

    def _foreign_key(self, fk: RawForeignKey, shape: _Shape, drafts: dict[str, _Draft],
                     shapes: dict[str, _Shape]) -> ForeignKey:
        columns = self._resolve_all(fk.columns, shape.canonical(), f"FOREIGN KEY of table '{shape.name}'")
        referenced = self._find(fk.ref_table, drafts)
        if referenced is None:
            raise self._unknown_table(fk.ref_table, drafts, "FOREIGN KEY references")
        target = shapes.get(referenced.raw.name.key)
        if target is None:
            # The referenced table is itself broken and already reported: keep
            # the names as written so this table can still be checked.
            ref_columns = tuple(n.text for n in fk.ref_columns or ())
            return ForeignKey(columns, referenced.name, ref_columns, fk.location)
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

    def _cardinality(self, raw: RawCardinality, shape: _Shape) -> CardinalityConstraint:
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

    def _indexes(self, raw_indexes: list[RawIndex], drafts: dict[str, _Draft],
                 shapes: dict[str, _Shape]) -> list[Index]:
        indexes: list[Index] = []
        seen: dict[str, RawName] = {}
        for raw in raw_indexes:
            index = self._attempt(self._index, raw, seen, drafts, shapes)
            if raw.name is not None:
                seen.setdefault(raw.name.key, raw.name)
            if index is not None:
                seen.setdefault(index.name.lower(), RawName(index.name, raw.location))
                indexes.append(index)
        return indexes

    def _index(self, raw: RawIndex, seen: dict[str, RawName], drafts: dict[str, _Draft],
               shapes: dict[str, _Shape]) -> Index | None:
        label = f"CREATE INDEX {raw.name.text}" if raw.name else "CREATE INDEX"
        if raw.name is not None:
            reserved = _reserved(raw.name)
            if reserved is not None:
                raise reserved
            first = seen.get(raw.name.key)
            if first is not None and raw.if_not_exists:
                self._note(f"skipped CREATE INDEX IF NOT EXISTS {raw.name.text}: it is already "
                           f"created at {_where(first.location)}", raw.location, "skipped")
                return None
            if first is not None:
                raise InputError(f"duplicate index '{raw.name.text}' "
                                 f"(first defined at {_where(first.location)})", raw.name.location)
            if raw.name.key in drafts:
                raise InputError(f"index name '{raw.name.text}' is already the name of a table",
                                 raw.name.location)
        draft = self._find(raw.table, drafts)
        if draft is None:
            if self._not_read(raw.table, label, raw.location):
                return None
            raise self._unknown_table(raw.table, drafts, f"{label} is on")
        shape = shapes.get(draft.raw.name.key)
        if shape is None:
            return None  # the table's own error is already reported
        where = f"index '{raw.name.text}' on table '{shape.name}'" if raw.name \
            else f"index on table '{shape.name}'"
        canonical = shape.canonical()
        columns: list[str] = []
        expressions: list[IndexExpression] = []
        for position, element in enumerate(raw.elements):
            if element.column is not None:
                column = self._resolve(element.column, canonical, where)
                if column in columns:
                    raise InputError(f"column '{column}' appears twice in {where}",
                                     element.column.location)
                columns.append(column)
            else:
                assert element.expression is not None
                sql, reads = _expression(element.expression.text, element.expression.location,
                                         canonical, where, _text_columns(shape))
                columns.append(sql)
                expressions.append(IndexExpression(position, sql, reads))
        predicate = None
        if raw.predicate is not None:
            predicate, _ = _expression(raw.predicate.text, raw.predicate.location, canonical,
                                       f"the WHERE of {where}", _text_columns(shape))
        name = raw.name.text if raw.name else _index_name(shape.name, raw, seen, drafts)
        location = raw.name.location if raw.name else raw.location
        index = Index(name, shape.name, tuple(columns), location, raw.unique, tuple(expressions),
                      predicate, raw.method)
        self._index_notes(index)
        return index

    def _index_notes(self, index: Index) -> None:
        on = f"index {index.name} on {index.table}"
        if index.method != "btree":
            self._note(f"{on} is a {index.method} index, not a B-tree: piql does not read it to "
                       "bound queries", index.location)
        elif index.expressions:
            parts = ", ".join(e.sql for e in index.expressions)
            self._note(f"{on} is on an expression ({parts}): piql keeps it for lookups of that "
                       "expression and does not read it as an index on columns", index.location)
        elif index.predicate is not None:
            self._note(f"{on} is partial (WHERE {index.predicate}): piql does not read it to "
                       "bound queries, as it does not prove that a query reads only rows the "
                       "predicate keeps", index.location)

    # name resolution ---------------------------------------------------------

    def _resolve(self, name: RawName, canonical: dict[str, str], where: str) -> str:
        """The declared spelling of column ``name``, or an error naming ``where``."""
        found = canonical.get(name.key)
        if found is None:
            raise InputError(f"unknown column '{name.text}' in {where}"
                             f"{_hint(name.text, list(canonical.values()), 'columns')}",
                             name.location)
        return found

    def _resolve_all(self, names: Sequence[RawName], canonical: dict[str, str],
                     where: str) -> tuple[str, ...]:
        resolved: list[str] = []
        for name in names:
            column = self._resolve(name, canonical, where)
            if column in resolved:
                raise InputError(f"column '{column}' appears twice in {where}", name.location)
            resolved.append(column)
        return tuple(resolved)


# --------------------------------------------------------------------------- helpers


def _constraint_indexes(tables: list[Table], indexes: list[Index]) -> list[Index]:
    """The declared indexes plus one per UNIQUE constraint that has none.

    PostgreSQL and SQLite keep every UNIQUE constraint in a unique index
    (``users_email_key``, ``sqlite_autoindex_users_1``), so the database already
    has it and Phase 0 may read it without proposing a new one.
    """
    found = list(indexes)
    taken = {i.name.lower() for i in found} | {t.name.lower() for t in tables}
    for table in tables:
        for key in table.unique_keys:
            if any(i.table == table.name and i.plain and i.columns == key.columns for i in found):
                continue
            base = key.name or f"{table.name}_{'_'.join(key.columns)}_key"
            name, n = base, 0
            while name.lower() in taken:
                n += 1
                name = f"{base}{n}"
            taken.add(name.lower())
            found.append(Index(name, table.name, key.columns, key.location, unique=True))
    return found


def _uniques(draft: _Draft) -> list[RawUnique]:
    """Column-level, table-level and ALTER TABLE ... ADD UNIQUE constraints, in file order."""
    found = [c for col in draft.columns for c in col.constraints if isinstance(c, RawUnique)]
    found += [c for c in draft.constraints if isinstance(c, RawUnique)]
    return sorted(found, key=lambda u: (u.location.line, u.location.column))


def _foreign_keys(draft: _Draft) -> list[RawForeignKey]:
    found = [c for col in draft.columns for c in col.constraints if isinstance(c, RawForeignKey)]
    found += [c for c in draft.constraints if isinstance(c, RawForeignKey)]
    return sorted(found, key=lambda f: (f.location.line, f.location.column))


def _replace_column(column: Column, **changes: object) -> Column:
    from dataclasses import replace

    return replace(column, **changes)


def _annotation_lines(text: str, offset: int) -> list[tuple[int, str]]:
    """The lines of a comment that start with ``piql:``: (file offset of the rest, the rest)."""
    found: list[tuple[int, str]] = []
    position = 0
    for line in text.split("\n"):
        match = _COMMENT_ANNOTATION.match(line)
        if match:
            found.append((offset + position + match.end(), line[match.end():]))
        position += len(line) + 1
    return found


def _text_columns(shape: _Shape) -> frozenset[str]:
    """Lower-cased names of the columns whose values are text already."""
    return frozenset(c.name.lower() for c in shape.columns
                     if family(c.type) is TypeFamily.TEXT)


def _expression(text: str, location: Location, canonical: dict[str, str], where: str,
                text_columns: frozenset[str] = frozenset()) -> tuple[str, tuple[str, ...]]:
    """An index expression or predicate as sqlglot writes it, and the columns it reads.

    Redundant parentheses and casts of a text column to text go, so pg_dump's
    ``lower((email)::text)`` reads ``LOWER(email)``, as the application wrote it.
    Text sqlglot cannot read (an operator only PostgreSQL knows, say) is kept
    with its spacing normalized, reading the columns whose names it mentions.
    """
    import sqlglot
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(text, read="postgres")
    except Exception:  # sqlglot raises several error types; any of them means "not readable"
        words = {w.lower() for w in re.findall(r'"(?:[^"]|"")+"|[^\W\d][\w$]*', text)}
        words = {w.strip('"') for w in words}
        return " ".join(text.split()), tuple(c for k, c in canonical.items() if k in words)
    def simplify(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Paren) and isinstance(node.this, (exp.Column, exp.Literal, exp.Paren)):
            return node.this
        if isinstance(node, exp.Cast) and node.to.is_type(exp.DataType.Type.TEXT):
            inner = node.this
            while isinstance(inner, exp.Paren):
                inner = inner.this
            if isinstance(inner, exp.Column) and inner.name.lower() in text_columns:
                return inner
        return node

    tree = tree.transform(simplify)
    while isinstance(tree, exp.Paren):
        tree = tree.this
    reads: list[str] = []
    for column in tree.find_all(exp.Column):
        found = canonical.get(column.name.lower())
        if found is None:
            raise InputError(f"unknown column '{column.name}' in {where}"
                             f"{_hint(column.name, list(canonical.values()), 'columns')}", location)
        if found not in reads:
            reads.append(found)
    return tree.sql(), tuple(reads)


def _index_name(table: str, raw: RawIndex, seen: dict[str, RawName], drafts: dict[str, _Draft]) -> str:
    """PostgreSQL's name for an unnamed index: table_column_idx (table_expr_idx), made unique."""
    parts = [e.column.text if e.column else _expression_label(e.expression.text)  # type: ignore
             for e in raw.elements]
    base = f"{table}_{'_'.join(parts)}_{'key' if raw.unique else 'idx'}"
    name, n = base, 0
    while name.lower() in seen or name.lower() in drafts:
        n += 1
        name = f"{base}{n}"
    return name


def _expression_label(text: str) -> str:
    """PostgreSQL names an index on ``lower(email)`` after the function, on ``(a + b)`` "expr"."""
    match = re.match(r"\s*([^\W\d][\w$]*)\s*\(", text)
    return match.group(1).lower() if match else "expr"


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


def _reserved(name: RawName | QualifiedName) -> InputError | None:
    """piql's runtime keeps tables of its own in every store (``_piql_meta``, ...)."""
    last = name.name if isinstance(name, QualifiedName) else name
    if last.key.startswith(RESERVED_PREFIX):
        return InputError(f"the name '{last.text}' is reserved: names starting with "
                          f"{RESERVED_PREFIX} are piql's own tables", last.location)
    return None


def _where(location: Location) -> str:
    return f"line {location.line}, column {location.column}"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _storable(value: DefaultValue) -> bool:
    """A constant the stores keep as written: an integer in 64 bits, a finite real."""
    if isinstance(value, float):
        return math.isfinite(value)
    return not isinstance(value, int) or -2**63 <= value < 2**63
