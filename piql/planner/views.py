"""Materialized views and their maintenance rules: the artifacts of Phases 1–4."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from piql.catalog import Column, Table
from piql.planner.physical import IndexSpec, PhysicalPlan
from piql.query import Aggregate, Attr, Epoch, Expr, Predicate, QueryBlock

IMV, STAGING, PERIODIC = "imv", "staging", "periodic"
# The action of a periodic time window's rule on a joined relation: record, for the next
# refresh, the epochs of the windowed tuples the written tuple joins.
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
    ``add``/``subtract`` for aggregate views and ``mark`` (:data:`MARK`) for a periodic
    view's epochs.
    """

    name: str
    event: str
    table: str
    aliases: tuple[str, ...]
    delta: QueryBlock
    guards: tuple[Predicate, ...]
    action: str
    sql: str
    level: str
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
    """A view piql creates: its definition, clustered key, bound and maintenance rules."""

    name: str
    kind: str
    for_queries: tuple[str, ...]
    definition: QueryBlock
    columns: tuple[ViewColumn, ...]
    sql: str
    storage: StorageBound | None = None
    rules: tuple[DeltaRule, ...] = ()
    extra: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    frozen: tuple[FrozenColumns, ...] = ()  # updates refused to keep a periodic view right

    @property
    def key(self) -> tuple[ViewColumn, ...]:
        return tuple(c for c in self.columns if c.key)

    @property
    def aggregate(self) -> bool:
        return any(isinstance(c.source, Aggregate) for c in self.columns)

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
        }
        if self.frozen:
            document["frozen_columns"] = [{"table": f.table, "columns": list(f.columns)}
                                          for f in self.frozen]
        document.update(self.extra)
        return document


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
