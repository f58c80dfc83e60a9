"""SI-2: answer a query from an incrementally maintained view, if all three invariants hold.

Phase 1 constructs the view and the rewritten query, which must itself have
a bounded plan over the view (Invariant 1); Phase 2 bounds the view's storage
(Invariant 3); Phase 3 plans every delta query (Invariant 2), recursively
creating views for delta queries that need them, up to ``MAX_DEPTH`` levels.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from piql import sqlgen
from piql.catalog import Catalog, Column, Table
from piql.planner.levels import Level
from piql.planner.maintenance import DeltaPlan, Maintenance, maintenance_rules
from piql.planner.naming import Names
from piql.planner.bounded_plans import plan_query
from piql.planner.physical import PhysicalPlan
from piql.planner.storage import bound_storage, symmetric_bound
from piql.planner.symmetric_pair import SymmetricPair, halves_storage, symmetric_pair
from piql.planner.view_construction import Construction, Invariant, Rejection, construct_view
from piql.planner.views import (
    TraceSection, ViewColumn, ViewDef, ViewKind, ViewLayout, key_may_hold_null,
)
from piql.query_block import Aggregate, QueryBlock, base_attr

MAX_DEPTH = 3


@dataclass(frozen=True)
class ViewPlan:
    """An accepted view: the view, views its maintenance needs, and the rewritten query's plan."""

    view: ViewDef
    nested: tuple[ViewDef, ...]
    rewritten: QueryBlock
    plan: PhysicalPlan
    trace: tuple[TraceSection, ...]
    pair: SymmetricPair | None = None  # the view keeps one orientation of each pair


def build_imv(catalog: Catalog, block: QueryBlock, name: str, for_queries: tuple[str, ...],
              depth: int = 0, names: Names | None = None,
              symmetric: bool = False) -> ViewPlan | Rejection:
    """Phases 1–3 for ``block``; the view is accepted only when every invariant holds.
    ``names`` gives out the names of the views maintenance needs (and of indexes).
    ``symmetric``: the view is read by a query call (which can order its parameters), so
    a self-join symmetric in its two occurrences keeps one orientation of each pair
    (``planner.symmetric_pair``)."""
    constructed = construct_view(catalog, block, name)
    if isinstance(constructed, Rejection):
        return constructed
    trace = list(constructed.trace)
    pair = symmetric_pair(catalog, block) if symmetric else None
    if pair is not None:
        constructed = replace(constructed, definition=replace(
            constructed.definition,
            predicates=constructed.definition.predicates + (pair.predicate,)))
        trace.append(TraceSection("layout: symmetric pair", (
            f"swapping {pair.first.alias} with {pair.second.alias} and <{pair.low}> with "
            f"<{pair.high}> gives the same query: the view keeps {pair.predicate}, and a "
            f"call reads <{pair.low}> <= <{pair.high}>",)))
    hotspot = leading_temporal(catalog, block, constructed.columns)
    if hotspot is not None:
        return Rejection(
            Invariant.HOTSPOT, f"the view's key would start with {hotspot}, which is TEMPORAL: every "
            "insert would land on the partition holding the newest values (§2.5)",
            "piql uses a hash-partitioned staging view and a periodic view instead (SI-3)",
            tuple(trace))
    over_view = Catalog(catalog.tables + (_as_table(name, constructed),), catalog.indexes,
                        catalog.source)
    read = plan_query(over_view, constructed.rewritten, names=names)
    if read.plan is None:
        assert read.failure is not None
        return Rejection(Invariant.QUERY, "even over the view the query is unbounded: "
                         + read.failure.message,
                         "compare more of the view's key columns with parameters, or add "
                         "ORDER BY ... LIMIT n", tuple(trace))
    trace.append(TraceSection("rewritten query plan", tuple(read.plan.root.lines())))
    storage = bound_storage(catalog, constructed.definition)
    trace += storage.trace
    if storage.bound is None:
        return Rejection(Invariant.STORAGE, storage.message, storage.hint, tuple(trace))
    if pair is not None and halves_storage(catalog, block, pair):
        storage = symmetric_bound(catalog, constructed.definition, pair.first.alias,
                                  pair.second.alias, storage.bound)
        trace += storage.trace
    maintenance = maintenance_rules(
        name, constructed.definition, constructed.columns,
        lambda delta, hint: _plan_delta(catalog, delta, hint, for_queries, depth, names))
    if not isinstance(maintenance, Maintenance):
        trace.append(TraceSection("unbounded delta query", (
            sqlgen.block_sql(maintenance.delta.block), maintenance.reason)))
        return Rejection(
            Invariant.MAINTENANCE, f"maintaining the view on a write to {maintenance.delta.table} "
            f"({', '.join(maintenance.delta.aliases)}) is unbounded: {maintenance.reason}",
            "add a CARDINALITY constraint that bounds the rows the written tuple joins with",
            tuple(trace))
    trace.append(TraceSection("delta queries (§5)", tuple(_rule_lines(maintenance))))
    trace.append(TraceSection("maintenance per base write (Invariant 2)",
                              tuple(_totals(maintenance))))
    view = ViewDef(name, ViewKind.IMV, for_queries, constructed.definition, constructed.columns,
                   f"CREATE VIEW {name} AS {sqlgen.block_sql(constructed.definition)}",
                   storage.bound, maintenance.rules,
                   nullable_key=key_may_hold_null(catalog, ViewKind.IMV, constructed.columns,
                                                  constructed.definition),
                   layout=ViewLayout.ORDERED if pair is None else ViewLayout.SYMMETRIC_PAIR)
    return ViewPlan(view, maintenance.nested_views, constructed.rewritten, read.plan, tuple(trace),
                    pair)


def _plan_delta(catalog: Catalog, delta: QueryBlock, hint: str, for_queries: tuple[str, ...],
                depth: int, names: Names | None) -> DeltaPlan | str:
    direct = plan_query(catalog, delta, names=names)
    if direct.plan is not None:
        return DeltaPlan(direct.plan.level, direct.plan, direct.plan.ops_bound, direct.plan.rows_bound)
    assert direct.failure is not None
    if depth + 1 >= MAX_DEPTH:
        return (f"{direct.failure.message}; a view for it would exceed the recursion limit "
                f"of {MAX_DEPTH} nested views")
    mine = names.child() if names is not None else None  # kept only if the view is
    name = mine.claim(hint, holder=f"a view maintaining query {for_queries[0]}'s",
                      owner=for_queries[0]) if mine is not None else hint
    nested = build_imv(catalog, delta, name, for_queries, depth + 1, mine)
    if isinstance(nested, Rejection):
        return f"{direct.failure.message}; and no view bounds it: {nested.message}"
    if mine is not None:
        mine.commit()
    return DeltaPlan(Level.SI2, nested.plan, nested.plan.ops_bound, nested.plan.rows_bound,
                     (nested.view,) + nested.nested)


def leading_temporal(catalog: Catalog, block: QueryBlock,
                     columns: tuple[ViewColumn, ...]) -> str | None:
    """The TEMPORAL column that would lead the view's key, if any (a write hotspot)."""
    if not columns or not columns[0].key:
        return None
    attr = base_attr(columns[0].source) if not isinstance(columns[0].source, Aggregate) else None
    if attr is None:
        return None
    table = catalog.table(block.relation(attr.alias).table or "")
    column = table.column(attr.column) if table else None
    return str(attr) if column is not None and column.temporal else None


def _as_table(name: str, constructed: Construction) -> Table:
    columns = constructed.columns
    return Table(name, tuple(Column(c.name, c.type) for c in columns),
                 tuple(c.name for c in columns if c.key), cardinalities=constructed.limits)


def _rule_lines(maintenance: Maintenance) -> list[str]:
    lines: list[str] = []
    for rule in maintenance.rules:
        lines.append(f"{rule.name}: {rule.level}, ops <= {rule.ops_bound} "
                     f"({rule.read_ops} reads + {rule.write_ops} view writes)")
        lines.append(f"  {rule.sql}")
        if rule.guards:
            lines.append(f"  only when {' AND '.join(map(str, rule.guards))}")
        if rule.plan is not None:
            lines += [f"  {line}" for line in rule.plan.root.lines(1)]
    return lines


def _totals(maintenance: Maintenance) -> list[str]:
    totals: dict[tuple[str, str], int] = {}
    for rule in maintenance.rules:
        key = (rule.table, rule.event)
        totals[key] = totals.get(key, 0) + rule.ops_bound
    return [f"{event} of one {table} row: ops <= {ops}" for (table, event), ops in totals.items()]
