"""The normalized query block: what a named query means once resolved.

Every column reference is an :class:`Attr` (relation alias + declared column
name); every predicate is a binary comparison between operands; everything is
immutable so the planner phases can share and rewrite blocks freely.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import cached_property
from typing import Iterator, Union

from piql.errors import Location

COMPARISONS = ("=", "<", "<=", ">", ">=")
UNION_ALIAS = ""  # the alias of a UNION's output columns
FLIPPED = {"=": "=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}


@dataclass(frozen=True, order=True)
class Attr:
    """A column of one relation occurrence in the query, e.g. ``t1.tag``."""

    alias: str
    column: str

    def __str__(self) -> str:
        return f"{self.alias}.{self.column}"


@dataclass(frozen=True)
class Param:
    """A runtime parameter, written ``<name>`` in the query file."""

    name: str

    def __str__(self) -> str:
        return f"<{self.name}>"


@dataclass(frozen=True)
class Literal:
    value: object
    sql: str

    def __str__(self) -> str:
        return self.sql


@dataclass(frozen=True)
class Epoch:
    """A time-window epoch ``attr - (attr % width)`` (paper §3.3).

    In a delta query the written tuple's value stands in for the column, so
    ``attr`` may be a :class:`Param` there.
    """

    attr: "Attr | Param"
    width: int

    def __str__(self) -> str:
        return f"{self.attr} - ({self.attr} % {self.width})"


Operand = Union[Attr, Param, Literal, Epoch]
Grouping = Union[Attr, Epoch]


@dataclass(frozen=True)
class Aggregate:
    """An aggregate call; ``arg`` is None for ``COUNT(*)``."""

    func: str
    arg: "Scalar | None"
    distinct: bool = False

    def __str__(self) -> str:
        inner = "*" if self.arg is None else str(self.arg)
        return f"{self.func}({'DISTINCT ' if self.distinct else ''}{inner})"


@dataclass(frozen=True)
class Ratio:
    """``numerator / denominator``: how an AVG is read back from its SUM and COUNT state."""

    numerator: Attr
    denominator: Attr

    def __str__(self) -> str:
        return f"{self.numerator} / {self.denominator}"


class Func(StrEnum):
    """The scalar functions and operators piql computes locally, with SQLite's semantics
    (``piql.runtime.sqlvalues``)."""

    ADD = "+"
    SUB = "-"
    MUL = "*"
    DIV = "/"
    MOD = "%"
    NEG = "NEG"
    CONCAT = "||"
    COALESCE = "COALESCE"
    NULLIF = "NULLIF"
    LOWER = "LOWER"
    UPPER = "UPPER"
    LENGTH = "LENGTH"
    CAST_INTEGER = "CAST AS INTEGER"
    CAST_REAL = "CAST AS REAL"
    CAST_TEXT = "CAST AS TEXT"


INFIX = {Func.ADD, Func.SUB, Func.MUL, Func.DIV, Func.MOD, Func.CONCAT}


@dataclass(frozen=True)
class Call:
    """A scalar function or operator applied to expressions (local work on bounded rows)."""

    func: Func
    args: tuple["Scalar", ...]

    def __str__(self) -> str:
        if self.func in INFIX:
            return f"({self.args[0]} {self.func.value} {self.args[1]})"
        if self.func == Func.NEG:
            return f"-{self.args[0]}"
        if self.func.name.startswith("CAST_"):
            return f"CAST({self.args[0]} AS {self.func.name.removeprefix('CAST_')})"
        return f"{self.func.value}({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Case:
    """``CASE WHEN c1 THEN v1 ... ELSE d END`` (a simple CASE is resolved to this form);
    ``default`` None is ELSE NULL."""

    whens: tuple[tuple["Condition", "Scalar"], ...]
    default: "Scalar | None" = None

    def __str__(self) -> str:
        arms = " ".join(f"WHEN {c} THEN {v}" for c, v in self.whens)
        tail = f" ELSE {self.default}" if self.default is not None else ""
        return f"CASE {arms}{tail} END"


Expr = Union[Attr, Literal, Epoch, Aggregate, Ratio, Param, Call, Case]
Scalar = Union[Attr, Param, Literal, Epoch, Aggregate, Call, Case]


# -- conditions beyond the key comparisons: filters on bounded rows ---------------------
@dataclass(frozen=True)
class Compare:
    """``left op right`` between any scalars; ``op`` is one of =, <>, <, <=, >, >=."""

    left: Scalar
    op: str
    right: Scalar

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


@dataclass(frozen=True)
class Like:
    """``arg [NOT] LIKE pattern`` (``%`` any text, ``_`` one character; case-sensitive, as
    in PostgreSQL: see ``piql.runtime.sqlvalues.like``)."""

    arg: Scalar
    pattern: Scalar
    negated: bool = False

    def __str__(self) -> str:
        return f"{self.arg} {'NOT ' if self.negated else ''}LIKE {self.pattern}"


@dataclass(frozen=True)
class NullTest:
    """``arg IS [NOT] NULL``."""

    arg: Scalar
    negated: bool = False

    def __str__(self) -> str:
        return f"{self.arg} IS {'NOT ' if self.negated else ''}NULL"


@dataclass(frozen=True)
class InList:
    """``arg [NOT] IN (v1, ..., vn)``; an OR of equalities on one column reads as one."""

    arg: Scalar
    values: tuple[Scalar, ...]
    negated: bool = False

    def __str__(self) -> str:
        inner = ", ".join(map(str, self.values))
        return f"{self.arg} {'NOT ' if self.negated else ''}IN ({inner})"


@dataclass(frozen=True)
class Junction:
    """``AND`` / ``OR`` of conditions (``conjunctive`` says which)."""

    conjunctive: bool
    parts: tuple["Condition", ...]

    def __str__(self) -> str:
        return "(" + (" AND " if self.conjunctive else " OR ").join(map(str, self.parts)) + ")"


@dataclass(frozen=True)
class Negation:
    part: "Condition"

    def __str__(self) -> str:
        return f"NOT {self.part}"


Condition = Union["Predicate", Compare, Like, NullTest, InList, Junction, Negation]


def walk(node: object) -> Iterator[object]:
    """``node`` and every expression or condition inside it, depth first."""
    pending = [node]
    while pending:
        current = pending.pop()
        yield current
        if isinstance(current, (tuple, list)):
            pending.extend(reversed(current))
        elif hasattr(current, "__dataclass_fields__") and not isinstance(current, QueryBlock):
            pending.extend(reversed([getattr(current, f.name) for f in fields(current)
                                     if f.name != "location"]))


def attrs_in(node: object) -> list[Attr]:
    """The columns an expression or condition reads, in order, without repeats."""
    found: list[Attr] = []
    for item in walk(node):
        if isinstance(item, Attr) and item not in found:
            found.append(item)
    return found


def aliases_in(node: object) -> set[str]:
    return {a.alias for a in attrs_in(node)}


def is_plain(expr: object) -> bool:
    """An expression of the paper's fragment (what views and compiled SQL handle)."""
    return isinstance(expr, (Attr, Param, Literal, Epoch, Ratio)) or (
        isinstance(expr, Aggregate) and (expr.arg is None or isinstance(expr.arg, Attr)))


def is_attr_like(operand: object) -> bool:
    """Attributes and epochs of attributes are what indexes and views can key on."""
    return isinstance(operand, Attr) or (isinstance(operand, Epoch) and isinstance(operand.attr, Attr))


def base_attr(operand: Operand) -> Attr | None:
    """The column an operand reads, if any."""
    if isinstance(operand, Attr):
        return operand
    if isinstance(operand, Epoch) and isinstance(operand.attr, Attr):
        return operand.attr
    return None


@dataclass(frozen=True)
class Predicate:
    """``left op right``; normalized so an attribute, if any, is on the left."""

    left: Operand
    op: str
    right: Operand
    location: Location | None = field(default=None, compare=False)

    @property
    def kind(self) -> str:
        """One of attr=param, attr op param, attr=attr, attr op attr, attr op literal, other."""
        if not is_attr_like(self.left):
            return "other"
        relation = "=" if self.op == "=" else " op "
        if isinstance(self.right, Param):
            return f"attr{relation}param"
        if is_attr_like(self.right):
            return f"attr{relation}attr"
        return "attr op literal" if self.op != "=" else "attr=literal"

    def aliases(self) -> set[str]:
        return {a.alias for a in (base_attr(self.left), base_attr(self.right)) if a is not None}

    def __str__(self) -> str:
        return f"{self.left} {self.op} {self.right}"


def normalized_predicate(left: Operand, op: str, right: Operand,
                         location: Location | None = None) -> Predicate:
    """Put an attribute on the left side so later phases look in one place."""
    if not is_attr_like(left) and is_attr_like(right):
        left, op, right = right, FLIPPED[op], left
    return Predicate(left, op, right, location)


def default_name(expr: Expr, position: int) -> str:
    """The output name SQL engines give an unaliased select expression."""
    if isinstance(expr, Attr):
        return expr.column
    if isinstance(expr, Aggregate):
        if expr.arg is None:
            return expr.func.lower()
        # a delta rule's aggregate may be over the written tuple's value, a parameter
        if not isinstance(expr.arg, (Param, Attr)):
            return f"{expr.func.lower()}_col{position + 1}"
        argument = expr.arg.name if isinstance(expr.arg, Param) else expr.arg.column
        return f"{expr.func.lower()}_{argument}"
    if isinstance(expr, Epoch):
        return f"{expr.attr.column}_epoch"
    return f"col{position + 1}"



@dataclass(frozen=True)
class SelectItem:
    name: str
    expr: Expr


@dataclass(frozen=True)
class OrderItem:
    expr: Expr
    desc: bool = False

    def __str__(self) -> str:
        return f"{self.expr}{' DESC' if self.desc else ''}"


class JoinKind(StrEnum):
    """How a relation joins the ones before it: an inner join (its conditions are the
    block's predicates), a LEFT JOIN (NULL-extended when nothing matches), or a semi-join
    (EXISTS / IN (SELECT ...)) or anti-join (NOT EXISTS), which only test for a match. A
    non-inner relation's own conditions are in :attr:`Relation.on`."""

    INNER = "inner"
    LEFT = "left"
    SEMI = "semi"
    ANTI = "anti"


@dataclass(frozen=True)
class Relation:
    """One occurrence of a base table (``table``) or of a FROM-subquery (``subquery``)."""

    alias: str
    columns: tuple[str, ...]
    table: str | None = None
    subquery: "QueryBlock | None" = None
    implicit_alias: bool = False  # a FROM-subquery the user left unnamed
    join: JoinKind = JoinKind.INNER
    on: tuple["Condition", ...] = ()  # a LEFT / SEMI / ANTI join's own conditions

    @property
    def is_base(self) -> bool:
        return self.table is not None


@dataclass(frozen=True)
class QueryBlock:
    relations: tuple[Relation, ...]
    predicates: tuple[Predicate, ...] = ()
    select: tuple[SelectItem, ...] = ()
    group_by: tuple[Grouping, ...] = ()
    order_by: tuple[OrderItem, ...] = ()
    limit: int | None = None
    # Beyond the paper's fragment (local work on bounded rows, see docs/language.md):
    filters: tuple[Condition, ...] = ()  # WHERE conditions that are not key comparisons
    having: tuple[Condition, ...] = ()
    distinct: bool = False
    offset: int = 0
    limit_param: Param | None = None  # LIMIT <n>; ``limit`` is then its declared maximum
    # UNION [ALL]: the branches in order, each with whether it is joined by UNION ALL (the
    # first's flag is unused). Such a block has no relations of its own: its select items
    # and ORDER BY name the output columns (Attr(UNION_ALIAS, name)).
    unions: tuple[tuple["QueryBlock", bool], ...] = ()

    @property
    def fetch(self) -> int | None:
        """How many ordered rows the query needs before OFFSET drops some: LIMIT + OFFSET."""
        return None if self.limit is None else self.limit + self.offset

    @property
    def extensions(self) -> tuple[str, ...]:
        """The constructs of this block (subqueries included) beyond the paper's fragment,
        which view maintenance and the compiled SQL do not handle yet."""
        found: list[str] = []

        def add(what: str) -> None:
            if what not in found:
                found.append(what)

        if self.unions:
            add("UNION")
        for branch, _ in self.unions:
            for what in branch.extensions:
                add(what)
        for rel in self.relations:
            if rel.join != JoinKind.INNER:
                add({JoinKind.LEFT: "LEFT JOIN", JoinKind.SEMI: "EXISTS / IN (SELECT ...)",
                     JoinKind.ANTI: "NOT EXISTS"}[rel.join])
            if rel.subquery is not None:
                for what in rel.subquery.extensions:
                    add(what)
        for condition in self.filters:
            add(_condition_name(condition))
        if self.having:
            add("HAVING")
        if self.distinct:
            add("DISTINCT")
        if self.offset:
            add("OFFSET")
        if self.limit_param is not None:
            add("LIMIT <parameter>")
        for expr in [i.expr for i in self.select] + [o.expr for o in self.order_by]:
            if not is_plain(expr):
                add(f"the expression {expr}")
        return tuple(found)

    def relation(self, alias: str) -> Relation:
        for rel in self.relations:
            if rel.alias == alias:
                return rel
        raise KeyError(alias)

    @cached_property
    def aggregates(self) -> tuple[Aggregate, ...]:
        """Every aggregate the block computes: of the select list, ORDER BY and HAVING,
        also inside expressions (``COALESCE(SUM(x), 0)``). Computed once per block (a
        block is immutable; every write and query through it asks)."""
        found = [i.expr for i in self.select if isinstance(i.expr, Aggregate)]
        found += [o.expr for o in self.order_by
                  if isinstance(o.expr, Aggregate) and o.expr not in found]
        nested = [i.expr for i in self.select] + [o.expr for o in self.order_by] \
            + list(self.having)
        found += [a for a in walk(nested) if isinstance(a, Aggregate) and a not in found]
        return tuple(found)

    @property
    def params(self) -> tuple[str, ...]:
        """Parameter names in order of first appearance, subqueries included."""
        names: list[str] = []
        for branch, _ in self.unions:
            names += [n for n in branch.params if n not in names]
        for rel in self.relations:
            if rel.subquery is not None:
                names += [n for n in rel.subquery.params if n not in names]
        for pred in self.predicates:
            for side in (pred.left, pred.right):
                if isinstance(side, Param) and side.name not in names:
                    names.append(side.name)
        later = [r.on for r in self.relations] + [self.filters, self.having] \
            + [i.expr for i in self.select] + [o.expr for o in self.order_by] \
            + [self.limit_param]
        names += [p.name for p in walk(later) if isinstance(p, Param) and p.name not in names]
        return tuple(dict.fromkeys(names))

    def with_(self, **changes: object) -> "QueryBlock":
        return replace(self, **changes)


def _condition_name(condition: object) -> str:
    if isinstance(condition, Like):
        return "LIKE"
    if isinstance(condition, NullTest):
        return "IS [NOT] NULL"
    if isinstance(condition, InList):
        return "IN (list)"
    if isinstance(condition, Junction):
        return "AND" if condition.conjunctive else "OR"
    if isinstance(condition, Negation):
        return "NOT"
    if isinstance(condition, Compare):
        return "<>" if condition.op == "<>" else f"the condition {condition}"
    return f"the condition {condition}"


@dataclass(frozen=True)
class Unsupported:
    """A construct outside piql's subset, with where it is."""

    construct: str
    location: Location
    hint: str = ""


@dataclass(frozen=True)
class Suppression:
    """What a block's ``-- noqa`` comments suppress: ``codes`` (words), or everything."""

    codes: frozenset[str] | None  # None: every code
    location: Location  # of the first noqa comment

    def covers(self, code: str) -> bool:
        return self.codes is None or code in self.codes


class MaintenanceMode(StrEnum):
    """When a query's views are maintained: in the writing transaction (``sync``), or from
    an update queue the write only adds to (``async``, ``-- maintenance: async``)."""

    SYNC = "sync"
    ASYNC = "async"


@dataclass(frozen=True)
class NamedQuery:
    """One ``-- name:`` block of a queries file."""

    name: str
    sql: str
    location: Location
    block: QueryBlock | None
    unsupported: tuple[Unsupported, ...] = ()
    periodic: str | None = None
    view_name: str | None = None
    view_location: Location | None = field(default=None, compare=False)  # of the -- view: name
    noqa: Suppression | None = None  # what its -- noqa comments suppress
    maintenance: MaintenanceMode = MaintenanceMode.SYNC  # of its views


def rename_alias(block: QueryBlock, old: str, new: str, columns: tuple[str, ...] | None = None,
                 table: str | None = None) -> QueryBlock:
    """``block`` with relation ``old`` renamed ``new`` (and optionally re-pointed at ``table``)."""
    def swap(value):
        if isinstance(value, Attr):
            return Attr(new, value.column) if value.alias == old else value
        if isinstance(value, (tuple, list)):
            return type(value)(swap(v) for v in value)
        if isinstance(value, (Epoch, Aggregate, Call, Case, Compare, Like, NullTest, InList, Predicate,
                              Junction, Negation)):
            return replace(value, **{f.name: swap(getattr(value, f.name))
                                     for f in fields(value)})
        return value

    relations = tuple(
        replace(r, alias=new, columns=columns or r.columns, table=table or r.table,
                on=swap(r.on))
        if r.alias == old else replace(r, on=swap(r.on)) for r in block.relations)
    return replace(
        block, relations=relations,
        predicates=tuple(replace(p, left=swap(p.left), right=swap(p.right)) for p in block.predicates),
        select=tuple(SelectItem(i.name, swap(i.expr)) for i in block.select),
        group_by=tuple(swap(g) for g in block.group_by),
        order_by=tuple(OrderItem(swap(o.expr), o.desc) for o in block.order_by),
        filters=swap(block.filters), having=swap(block.having))
