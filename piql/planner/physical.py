"""Physical plans of bounded operators (Phase 0's output).

A plan is executable: ``accesses`` lists, in join order, how every relation
occurrence is read; ``root`` is the same plan as an operator tree with the
bound of every operator, for ``piql explain``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from piql.planner.levels import Level
from piql.query_block import Condition, Func, JoinKind, Operand, Predicate, QueryBlock


class AccessPath(StrEnum):
    """How a relation occurrence is read: its clustered primary key, a secondary index,
    or a FROM-subquery evaluated by its own plan."""

    PRIMARY = "primary"
    INDEX = "index"
    DERIVED = "derived"


class IndexPurpose(StrEnum):
    """Why piql keeps a secondary index: a query (or a view's maintenance) reads it, or a
    write checks a constraint through it (a CARDINALITY count, a FOREIGN KEY's children, a
    UNIQUE key) where the primary key does not lead with the constraint's columns."""

    QUERY = "query"
    CARDINALITY = "cardinality"
    FOREIGN_KEY = "foreign key"
    UNIQUE = "unique"


@dataclass(frozen=True)
class KeyExpression:
    """An index key part that is a function of one column, ``LOWER(email)``: piql's
    ``LOWER`` / ``UPPER`` (ASCII letters only, as SQLite's), which each store writes in
    its own SQL so that the index and the lookups through it mean what piql computes."""

    func: Func
    column: str

    def __str__(self) -> str:
        return f"{self.func.value}({self.column})"


KeyPart = str | KeyExpression  # a column, or an expression of one


@dataclass(frozen=True)
class IndexSpec:
    """A secondary index: ordered ``columns`` of ``table``; entries also hold the row key.

    A key part may be an expression (``expressions``): its name in ``columns`` is the
    expression's text, ``LOWER(email)``. ``unique``: a declared unique expression index,
    which bounds an equality on all its parts to one row (the store enforces it)."""

    table: str
    columns: tuple[str, ...]
    name: str
    declared: bool = False
    purpose: IndexPurpose = IndexPurpose.QUERY
    expressions: tuple[KeyExpression, ...] = ()
    unique: bool = False

    @staticmethod
    def named(table: str, columns: tuple[str, ...]) -> "IndexSpec":
        return IndexSpec(table, columns, f"idx_{table}_{'_'.join(columns)}".lower())

    def part(self, name: str) -> KeyPart:
        """The key part called ``name``: its expression, or the column itself."""
        return next((e for e in self.expressions if str(e) == name), name)

    @property
    def parts(self) -> tuple[KeyPart, ...]:
        return tuple(self.part(c) for c in self.columns)


@dataclass(frozen=True)
class AnyOf:
    """A key column bound to any of several values (``IN (list)``, an OR of equalities):
    one probe per distinct non-NULL value, so at most ``len(values)`` probes."""

    values: tuple[Operand, ...]

    def __str__(self) -> str:
        return f"any of ({', '.join(map(str, self.values))})"


@dataclass(frozen=True)
class NullKey:
    """A key column bound by ``IS NULL``: the probe reads the rows whose column is NULL."""

    def __str__(self) -> str:
        return "NULL"


KeyValue = Operand | AnyOf | NullKey


@dataclass(frozen=True)
class Access:
    """How one relation occurrence is read, once per outer tuple (``probes`` times).

    ``path`` is ``primary`` (clustered key), ``index`` (secondary index; ``covering``
    says whether the base row must be fetched too) or ``derived`` (a FROM-subquery,
    evaluated once by its own plan). ``key_values`` bind the leading ``key_columns``
    of the path by equality; ``range`` holds predicates on the next column.
    ``stop_after`` is the per-probe limit taken from the query's LIMIT (plus OFFSET).
    ``fanout`` is how many key probes one outer tuple makes (the product of the sizes of
    the :class:`AnyOf` key values). ``residual`` holds the conditions checked on the rows
    read (filters: ``<>``, LIKE, functions, ...), which never widen the read; for a
    non-inner ``join`` they are the rest of its ON (or subquery) conditions, and ``post``
    holds the WHERE conditions checked after a LEFT join extends the row.
    """

    alias: str
    table: str | None
    path: AccessPath
    key_columns: tuple[str, ...]
    key_values: tuple[KeyValue, ...]
    order_columns: tuple[str, ...] = ()
    range: tuple[Predicate, ...] = ()
    residual: tuple[Condition, ...] = ()
    index: IndexSpec | None = None
    covering: bool = True
    descending: bool = False
    stop_after: int | None = None
    rows_per_probe: int = 1
    probes: int = 1
    subplan: "PhysicalPlan | None" = None
    fanout: int = 1
    join: JoinKind = JoinKind.INNER  # LEFT: NULL-extended; SEMI / ANTI: a match test only
    post: tuple[Condition, ...] = ()  # WHERE conditions on a LEFT join's extended rows

    @property
    def point_lookup(self) -> bool:
        return self.path == AccessPath.PRIMARY and self.rows_per_probe == 1 and not self.range \
            and self.fanout == 1

    @property
    def ops_per_probe(self) -> int:
        """Tuples read per probe; every lookup counts at least one."""
        if self.path == AccessPath.DERIVED:
            return 0
        rows = self.rows_per_probe
        fetches = 0 if self.covering else rows
        return max(1, rows) + fetches

    @property
    def ops(self) -> int:
        if self.path == AccessPath.DERIVED:  # uncorrelated: run once, whatever the probes
            return self.subplan.ops_bound if self.subplan else 0
        return self.probes * self.fanout * self.ops_per_probe


@dataclass(frozen=True)
class Operator:
    """A node of the plan tree shown by ``piql explain``."""

    name: str
    detail: str
    rows: int
    ops: int
    children: tuple["Operator", ...] = ()

    def lines(self, depth: int = 0) -> list[str]:
        own = f"{'  ' * depth}{self.name} {self.detail}  [rows <= {self.rows}, ops <= {self.ops}]"
        return [own] + [line for child in self.children for line in child.lines(depth + 1)]


@dataclass(frozen=True)
class PhysicalPlan:
    block: QueryBlock
    accesses: tuple[Access, ...]
    root: Operator
    ops_bound: int
    rows_bound: int
    merge_at: int | None = None  # position of a bounded-outer merge join, if any
    notes: tuple[str, ...] = field(default=())
    branches: tuple["PhysicalPlan", ...] = ()  # a UNION's branches, run one after the other

    @property
    def indexes(self) -> tuple[IndexSpec, ...]:
        found: list[IndexSpec] = []
        for branch in self.branches:
            found += [i for i in branch.indexes if i not in found]
        for access in self.accesses:
            if access.index is not None and access.index not in found:
                found.append(access.index)
            if access.subplan is not None:
                found += [i for i in access.subplan.indexes if i not in found]
        return tuple(found)

    @property
    def level(self) -> Level:
        return Level.SI1 if self.indexes else Level.SI0
