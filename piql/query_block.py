"""The normalized query block: what a named query means once resolved.

Every column reference is an :class:`Attr` (relation alias + declared column
name); every predicate is a binary comparison between operands; everything is
immutable so the planner phases can share and rewrite blocks freely.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Union

from piql.errors import Location

COMPARISONS = ("=", "<", "<=", ">", ">=")
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
    arg: Attr | None
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


Expr = Union[Attr, Literal, Epoch, Aggregate, Ratio, Param]


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


@dataclass(frozen=True)
class Relation:
    """One occurrence of a base table (``table``) or of a FROM-subquery (``subquery``)."""

    alias: str
    columns: tuple[str, ...]
    table: str | None = None
    subquery: "QueryBlock | None" = None
    implicit_alias: bool = False  # a FROM-subquery the user left unnamed

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

    def relation(self, alias: str) -> Relation:
        for rel in self.relations:
            if rel.alias == alias:
                return rel
        raise KeyError(alias)

    @property
    def aggregates(self) -> tuple[Aggregate, ...]:
        found = [i.expr for i in self.select if isinstance(i.expr, Aggregate)]
        found += [o.expr for o in self.order_by
                  if isinstance(o.expr, Aggregate) and o.expr not in found]
        return tuple(found)

    @property
    def params(self) -> tuple[str, ...]:
        """Parameter names in order of first appearance, subqueries included."""
        names: list[str] = []
        for rel in self.relations:
            if rel.subquery is not None:
                names += [n for n in rel.subquery.params if n not in names]
        for pred in self.predicates:
            for side in (pred.left, pred.right):
                if isinstance(side, Param) and side.name not in names:
                    names.append(side.name)
        return tuple(names)

    def with_(self, **changes: object) -> "QueryBlock":
        return replace(self, **changes)


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


def rename_alias(block: QueryBlock, old: str, new: str, columns: tuple[str, ...] | None = None,
                 table: str | None = None) -> QueryBlock:
    """``block`` with relation ``old`` renamed ``new`` (and optionally re-pointed at ``table``)."""
    def swap(value):
        if isinstance(value, Attr) and value.alias == old:
            return Attr(new, value.column)
        if isinstance(value, Epoch):
            return Epoch(swap(value.attr), value.width)
        if isinstance(value, Aggregate) and value.arg is not None:
            return Aggregate(value.func, swap(value.arg), value.distinct)
        return value

    relations = tuple(
        replace(r, alias=new, columns=columns or r.columns, table=table or r.table)
        if r.alias == old else r for r in block.relations)
    return replace(
        block, relations=relations,
        predicates=tuple(replace(p, left=swap(p.left), right=swap(p.right)) for p in block.predicates),
        select=tuple(SelectItem(i.name, swap(i.expr)) for i in block.select),
        group_by=tuple(swap(g) for g in block.group_by),
        order_by=tuple(OrderItem(swap(o.expr), o.desc) for o in block.order_by))
