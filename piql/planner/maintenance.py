"""Phase 3: delta queries for every base write a view depends on (§5, Invariant 2).

For a table that occurs k times in the view, every non-empty subset of its
occurrences is replaced by the written tuple, its columns becoming
parameters named after them (the paper's ``<tag>``, ``<docId>``); the subset of
two is the self-join's "tuple joins itself" rule. Rules read the state
without the written tuple (before an insert, after a delete), which makes the
sum of the rules exactly the change of the view. Conditions left only on the
tuple become guards; an aggregate view gets ``+``/``-`` updates of its partial
state. Each delta query is planned like any query (Phase 0, then recursively
a view), and the rule costs its reads plus its writes to the view.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Callable

from sqlglot import exp

from piql import sqlgen
from piql.planner.levels import Level
from piql.planner.physical import PhysicalPlan
from piql.planner.views import DeltaRule, RuleAction, ViewColumn, WriteEvent
from piql.query_block import (
    Aggregate, Attr, Epoch, Literal, Operand, Param, Predicate, QueryBlock, SelectItem,
    is_attr_like, normalized_predicate,
)

EVENTS = (WriteEvent.INSERT, WriteEvent.DELETE)


@dataclass(frozen=True)
class DeltaQuery:
    table: str
    aliases: tuple[str, ...]
    block: QueryBlock
    guards: tuple[Predicate, ...]
    contributions: tuple[str, ...] = ()  # select names that are +/- updates


@dataclass(frozen=True)
class DeltaPlan:
    """How a delta query runs: its level, plan and bounds, and any views it needed."""

    level: Level
    plan: PhysicalPlan | None
    read_ops: int
    rows: int
    views: tuple = ()


PlanDelta = Callable[[QueryBlock, str], "DeltaPlan | str"]


def delta_queries(definition: QueryBlock, columns: tuple[ViewColumn, ...]) -> list[DeltaQuery]:
    """One delta query per table and non-empty subset of its occurrences in the view."""
    aggregate = any(isinstance(c.source, Aggregate) for c in columns)
    found: list[DeltaQuery] = []
    tables: list[str] = []
    for rel in definition.relations:
        if rel.table not in tables:
            tables.append(rel.table)  # type: ignore[arg-type]
    for table in tables:
        occurrences = [r.alias for r in definition.relations if r.table == table]
        for size in range(1, len(occurrences) + 1):
            for subset in combinations(occurrences, size):
                found.append(_substitute(definition, columns, table, subset, aggregate))
    return found


def _substitute(definition: QueryBlock, columns: tuple[ViewColumn, ...], table: str,
                aliases: tuple[str, ...], aggregate: bool) -> DeltaQuery:
    def sub(value: Operand) -> Operand:
        if isinstance(value, Attr) and value.alias in aliases:
            return Param(value.column)
        if isinstance(value, Epoch) and isinstance(value.attr, Attr) and value.attr.alias in aliases:
            return Epoch(Param(value.attr.column), value.width)
        return value

    predicates: list[Predicate] = []
    guards: list[Predicate] = []
    for pred in definition.predicates:
        left, right = sub(pred.left), sub(pred.right)
        if is_attr_like(left) or is_attr_like(right):
            predicates.append(normalized_predicate(left, pred.op, right, pred.location))
        elif not (left == right and pred.op in ("=", "<=", ">=")):
            guards.append(Predicate(left, pred.op, right, pred.location))
    relations = tuple(r for r in definition.relations if r.alias not in aliases)
    select: list[SelectItem] = []
    contributions: list[str] = []
    group_by: list = []
    for column in columns:
        source = column.source
        if isinstance(source, Aggregate):
            contributions.append(column.name)
            select.append(SelectItem(column.name, _contribution(source, relations, sub)))
        else:
            select.append(SelectItem(column.name, sub(source)))
            if aggregate and relations and is_attr_like(sub(source)):
                group_by.append(sub(source))
    block = QueryBlock(relations, tuple(predicates), tuple(select), tuple(group_by))
    return DeltaQuery(table, aliases, block, tuple(guards), tuple(contributions))


def _contribution(state: Aggregate, relations: tuple, sub) -> object:
    """What one written tuple adds to a partial aggregate."""
    if relations:  # summed over the rows the tuple joins with
        return Aggregate(state.func, None if state.arg is None else sub(state.arg))
    if state.func == "COUNT":
        # COUNT(col) counts the tuple only when its col is not NULL: COUNT over the one tuple
        return Literal(1, "1") if state.arg is None else Aggregate("COUNT", sub(state.arg))
    return sub(state.arg)  # SUM of the tuple's own value


@dataclass(frozen=True)
class Maintenance:
    rules: tuple[DeltaRule, ...]
    nested_views: tuple = ()


@dataclass(frozen=True)
class Unmaintainable:
    """A delta query with no bounded plan, and why."""

    delta: DeltaQuery
    reason: str


def maintenance_rules(view: str, definition: QueryBlock, columns: tuple[ViewColumn, ...],
                      plan_delta: PlanDelta) -> Maintenance | Unmaintainable:
    """Every rule of ``view``, or the first delta query without a bounded plan."""
    aggregate = any(isinstance(c.source, Aggregate) for c in columns)
    rules: list[DeltaRule] = []
    nested: list = []
    for delta in delta_queries(definition, columns):
        planned = _plan(delta, plan_delta, view)
        if isinstance(planned, str):
            return Unmaintainable(delta, planned)
        nested += [v for v in planned.views if v not in nested]
        for event in EVENTS:
            action = (RuleAction.ADD if event == WriteEvent.INSERT else RuleAction.SUBTRACT) \
                if aggregate else RuleAction(event)
            writes = planned.rows * (2 if aggregate else 1)  # aggregates read then write a group
            name = f"{view}_on_{event}_{delta.table}_{'_'.join(delta.aliases)}"
            rules.append(DeltaRule(
                name, event, delta.table, delta.aliases, delta.block, delta.guards, action,
                rule_sql(name, event, delta, view, action), planned.level, planned.read_ops,
                writes, planned.plan, tuple(v.name for v in planned.views)))
    return Maintenance(tuple(rules), tuple(nested))


def _plan(delta: DeltaQuery, plan_delta: PlanDelta, view: str) -> DeltaPlan | str:
    if not delta.block.relations:
        return DeltaPlan(Level.SI0, None, 0, 1)
    hint = f"{view}_delta_{delta.table}_{'_'.join(delta.aliases)}"
    return plan_delta(delta.block, hint)


def rule_sql(name: str, event: WriteEvent, delta: DeltaQuery, view: str, action: RuleAction,
             dialect: str | None = None) -> str:
    """The rule in the paper's notation, or its delta query in ``dialect`` with a header."""
    query = sqlgen.select(delta.block, paper=dialect is None)
    if not delta.block.relations:
        query.set("from_", None)
    if delta.contributions:
        sign = "+" if action == RuleAction.ADD else "-"
        for position, item in enumerate(delta.block.select):
            if item.name in delta.contributions and dialect is None:
                node = query.expressions[position]
                inner = node.this if isinstance(node, exp.Alias) else node
                query.expressions[position].replace(
                    exp.alias_(exp.Var(this=f"{sign}{inner.sql()}"), item.name))
    if delta.guards:
        guard = exp.and_(*(sqlgen.predicate(g, paper=dialect is None) for g in delta.guards))
        query = query.where(guard)
    body = sqlgen.render(query, dialect)
    on = "INSERT INTO" if event == WriteEvent.INSERT else "DELETE FROM"
    verb = {RuleAction.INSERT: f"INSERT INTO {view}", RuleAction.DELETE: f"DELETE FROM {view}",
            RuleAction.ADD: f"UPDATE {view}", RuleAction.SUBTRACT: f"UPDATE {view}"}[action]
    if dialect is None:
        return f"CREATE RULE {name} ON {on} {delta.table} {verb} {body}"
    return f"-- {name}: on {event} of one {delta.table} row, {action} rows of {view}:\n{body}"
