"""Materialized views and their maintenance rules: the artifacts of Phases 1–4."""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from piql.catalog import Catalog, Column, Table
from piql.planner.levels import Level
from piql.planner.naming import exact_sum_column
from piql.planner.physical import IndexSpec, PhysicalPlan
from piql.planner.refresh_plan import RefreshPlan, StagingLayout
from piql.query_block import (
    Aggregate, Attr, Epoch, Expr, JoinKind, Literal, MaintenanceMode, Predicate, QueryBlock,
    base_attr,
)
from piql.sql_types import TypeFamily, family


class ViewKind(StrEnum):
    """An incrementally maintained view (SI-2), a hash-partitioned staging view, or a
    periodic view refreshed from one (SI-3)."""

    IMV = "imv"
    STAGING = "staging"
    PERIODIC = "periodic"


class WriteEvent(StrEnum):
    """A write to one base row; an update is a delete then an insert."""

    INSERT = "insert"
    DELETE = "delete"
    UPDATE = "update"


class ViewLayout(StrEnum):
    """How a view keeps its rows: every row of its definition, or (a self-join whose query
    is symmetric in its two occurrences, ``planner.symmetric_pair``) one orientation of each
    pair, read with the query's two parameters in order."""

    ORDERED = "ordered"
    SYMMETRIC_PAIR = "symmetric pair"


class RuleAction(StrEnum):
    """What a delta rule does with the rows its delta query produces: insert or delete view
    rows, add or subtract aggregate state, or (a periodic time window's rule on a joined
    relation) mark, for the next refresh, the epochs of the windowed tuples the written
    tuple joins."""

    INSERT = "insert"
    DELETE = "delete"
    ADD = "add"
    SUBTRACT = "subtract"
    MARK = "mark"


@dataclass(frozen=True)
class ViewColumn:
    """One column of a view; ``origin`` says which set put it there (A_eq, A_keys, ...)."""

    name: str
    source: Expr
    key: bool
    origin: str
    type: str = "ANY"


@dataclass(frozen=True)
class StorageBound:
    """Invariant 3: ``|view| <= factor * |relation|``."""

    relation: str
    alias: str
    factor: int


@dataclass(frozen=True)
class TraceSection:
    """A titled list of lines that ``piql explain`` prints verbatim."""

    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class DeltaRule:
    """A production rule: on ``event`` of one ``table`` tuple, run ``delta`` and apply it.

    ``aliases`` are the relation occurrences replaced by the written tuple (several
    for a self-join's tuple-with-itself rule). ``guards`` are conditions on the
    tuple alone. ``action`` is ``insert``/``delete`` for row views,
    ``add``/``subtract`` for aggregate views and ``mark`` for a periodic view's epochs.
    """

    name: str
    event: WriteEvent
    table: str
    aliases: tuple[str, ...]
    delta: QueryBlock
    guards: tuple[Predicate, ...]
    action: RuleAction
    sql: str
    level: Level
    read_ops: int
    write_ops: int
    plan: PhysicalPlan | None = None
    views: tuple[str, ...] = ()

    @property
    def ops_bound(self) -> int:
        return self.read_ops + self.write_ops

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "event": self.event, "table": self.table,
                "alias": ",".join(self.aliases), "action": self.action, "sql": self.sql,
                "level": self.level, "ops_bound": self.ops_bound}


@dataclass(frozen=True)
class FrozenColumns:
    """Columns of ``table`` an update may not change. A periodic time window joins the
    table only as the parent of a foreign key, so its inserts and deletes never reach a
    window, but a change to these columns would reach every window its children are in,
    and no bounded lookup finds those (``planner.window_join``)."""

    table: str
    columns: tuple[str, ...]


@dataclass(frozen=True)
class ViewDef:
    """A view piql creates: its definition, clustered key, bound and maintenance rules.

    ``refresh`` is the SI-3 refresh the view takes part in: a periodic view's own, or, for
    a staging view, the one that reads it (whose layout says how its rows are spread).
    ``nullable_key``: some key column may hold NULL (see :func:`key_may_hold_null`), so the
    store cannot cluster the view on its key and keeps a unique index on it instead.
    ``layout``: :attr:`ViewLayout.SYMMETRIC_PAIR` when the definition keeps one orientation
    of each pair (its predicate is part of ``definition``, so maintenance needs nothing more).
    """

    name: str
    kind: ViewKind
    for_queries: tuple[str, ...]
    definition: QueryBlock
    columns: tuple[ViewColumn, ...]
    sql: str
    storage: StorageBound | None = None
    rules: tuple[DeltaRule, ...] = ()
    frozen: tuple[FrozenColumns, ...] = ()  # updates refused to keep a periodic view right
    refresh: RefreshPlan | None = None
    nullable_key: bool = False
    maintenance: MaintenanceMode = MaintenanceMode.SYNC  # async: rules run from the queue
    layout: ViewLayout = ViewLayout.ORDERED

    @property
    def key(self) -> tuple[ViewColumn, ...]:
        return tuple(c for c in self.columns if c.key)

    def reads(self, table: str) -> bool:
        """Does the view's definition read the base table ``table``?"""
        return any(r.table and r.table.lower() == table.lower()
                   for r in self.definition.relations)

    @property
    def staging(self) -> StagingLayout | None:
        """A staging view's partitioning (None for other views)."""
        if self.kind != ViewKind.STAGING or self.refresh is None:
            return None
        return self.refresh.layout

    @property
    def aggregate(self) -> bool:
        return any(isinstance(c.source, Aggregate) for c in self.columns)

    @property
    def exact_sums(self) -> tuple[tuple[str, str], ...]:
        """(column, hidden column) for each SUM of REAL values an IMV maintains. Adding and
        later subtracting a large double loses the small ones' low bits for good (1e17 + 1.5
        - 1e17 is 0.0), so the store keeps each such sum also exactly, as a rational in a
        hidden TEXT column, and the visible column is that sum rounded once to a double:
        the value SQL's SUM means, whatever the order of the writes."""
        if self.kind != ViewKind.IMV:
            return ()
        return tuple((c.name, exact_sum_column(c.name)) for c in self.columns
                     if isinstance(c.source, Aggregate) and c.source.func == "SUM"
                     and family(c.type) is TypeFamily.REAL)

    @property
    def stored_columns(self) -> tuple[tuple[str, str], ...]:
        """(column, declared type) of the table that keeps the view: its columns (after
        ``_all``, the key of a view without one: its single aggregate row) and the hidden
        exact-sum columns (TEXT)."""
        columns = tuple((c.name, c.type) for c in self.columns)
        if not self.key:
            columns = (("_all", "INTEGER"),) + columns
        return columns + tuple((hidden, "TEXT") for _, hidden in self.exact_sums)

    @property
    def stored_key(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.key) or ("_all",)

    @property
    def indexes(self) -> tuple[IndexSpec, ...]:
        found: list[IndexSpec] = []
        for rule in self.rules:
            if rule.plan is not None:
                found += [i for i in rule.plan.indexes if i not in found]
        return tuple(found)

    def as_table(self) -> Table:
        """The view as a table clustered on its key, so Phase 0 can plan reads of it."""
        columns = tuple(Column(c.name, c.type) for c in self.columns)
        return Table(self.name, columns, tuple(c.name for c in self.key))

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "name": self.name, "kind": self.kind, "for": list(self.for_queries),
            "key": [{"column": c.name, "source": _source(c.source)} for c in self.key],
            "columns": [{"column": c.name, "source": _source(c.source), "origin": c.origin}
                        for c in self.columns],
            "sql": self.sql,
            # A periodic tuple window holds a constant number of rows: no relation.
            "storage_bound": None if self.storage is None else {
                "relation": self.storage.relation or None, "factor": self.storage.factor},
            "rules": [r.to_json() for r in self.rules],
            "layout": self.layout.value,
        }
        if self.frozen:
            document["frozen_columns"] = [{"table": f.table, "columns": list(f.columns)}
                                          for f in self.frozen]
        if self.refresh is not None:
            document.update(_refresh_json(self.refresh))
            if self.kind == ViewKind.PERIODIC:
                document["staging"] = self.refresh.staging
        return document


def key_may_hold_null(catalog: Catalog, kind: ViewKind, columns: tuple[ViewColumn, ...],
                      definition: QueryBlock) -> bool:
    """May a key column of a view hold NULL? Not a column of an inner-joined base table
    declared NOT NULL (primary-key columns among them: ``Column.nullable``), nor one an
    equality of the definition's WHERE compares (``a = b`` holds of no NULL, so no row
    with a NULL there joins), nor what piql computes itself (partitions, ranks, the epochs
    a refresh computes); any other column may be NULL, and a view holds the row (a group,
    an ordering value, a staged time) as SQL does. A view whose key cannot hold NULL is
    clustered on it in every store (``planner.store_layout``)."""
    return bool(nullable_key_columns(catalog, kind, columns, definition))


def nullable_key_columns(catalog: Catalog, kind: ViewKind, columns: tuple[ViewColumn, ...],
                         definition: QueryBlock, declared: bool = True) -> tuple[str, ...]:
    """The key columns of a view that may hold NULL (:func:`key_may_hold_null`), in key
    order: PostgreSQL's triggers match the others with ``=`` and branch on these, so that
    every key lookup of a view row reads its index (``planner.triggers_postgres``).
    ``declared``: a column declared NOT NULL holds none (piql's writes refuse one); without
    it only primary-key and equated columns count, which hold none whoever writes."""
    equated = _equated_columns(definition)
    found = []
    for column in (c for c in columns if c.key):
        if kind == ViewKind.PERIODIC:
            if column.name not in ("epoch", "rank"):
                found.append(column.name)
            continue
        if isinstance(column.source, Literal):  # the staging partition
            continue
        attr = base_attr(column.source) if isinstance(column.source, (Attr, Epoch)) else None
        if attr is None or not _never_null(catalog, definition, attr, equated, declared):
            found.append(column.name)
    return tuple(found)


def _never_null(catalog: Catalog, definition: QueryBlock, attr: Attr,
                equated: set[tuple[str, str]], declared: bool = True) -> bool:
    relation = next((r for r in definition.relations if r.alias == attr.alias), None)
    # a LEFT JOIN's columns are NULL where nothing matched; a FROM-subquery's are unknown
    if relation is None or relation.join != JoinKind.INNER or relation.table is None:
        return False
    if (attr.alias, attr.column.lower()) in equated:
        return True
    table = catalog.table(relation.table)
    if table is None:
        return False
    column = table.column(attr.column)
    if column is None or column.nullable:
        return False
    return declared or column.name.lower() in (k.lower() for k in table.primary_key)


def _equated_columns(definition: QueryBlock) -> set[tuple[str, str]]:
    """(alias, column) of the columns an equality of the block's WHERE compares: the
    block's predicates are its WHERE's conjuncts, so a row holds them all."""
    found: set[tuple[str, str]] = set()
    for predicate in definition.predicates:
        if predicate.op != "=":
            continue
        for side in (predicate.left, predicate.right):
            attr = base_attr(side)
            if attr is not None:
                found.add((attr.alias, attr.column.lower()))
    return found


def _refresh_json(refresh: RefreshPlan) -> dict[str, Any]:
    return {
        "partitioned_by": list(refresh.layout.partitioned_by),
        "order_by": list(refresh.layout.order_by),
        "per_partition_ops_bound": refresh.per_partition_bound,
        "refresh_every": str(refresh.refresh_every),
        "partitions": refresh.layout.partitions,
        "refresh_ops_total": refresh.total_bound,
        "window": refresh.window,
    }


def _source(expr: Expr) -> str:
    return str(expr)


def view_column_names(sources: list[Expr]) -> list[str]:
    """Plain column names where unique, ``alias_column`` where two relations share one."""
    def base(expr: Expr) -> str:
        if isinstance(expr, Epoch):
            return "epoch"
        if isinstance(expr, Attr):
            return expr.column
        raise TypeError(expr)

    def qualified(expr: Expr) -> str:
        attr = expr.attr if isinstance(expr, Epoch) else expr
        suffix = "_epoch" if isinstance(expr, Epoch) else ""
        return f"{attr.alias}_{attr.column}{suffix}"  # type: ignore[union-attr]

    plain = [base(s) for s in sources]
    lowered = [p.lower() for p in plain]
    return [qualified(s) if lowered.count(lowered[i]) > 1 else plain[i]
            for i, s in enumerate(sources)]
