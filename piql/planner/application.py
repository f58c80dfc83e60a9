"""The application plan: every named query classified, with the indexes and views it needs.

Each query goes through a visible list of strategies, cheapest guarantee first
(paper Figure 1): on-demand execution with bounded operators (Phase 0, SI-0 and
SI-1), then the strategies later phases register. The first strategy that
proves a bound decides the level; the others' refusals stay as diagnostics
so a developer sees why the cheaper levels were out of reach.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.planner.phase0 import Phase0Result, plan_query
from piql.planner.imv import build_imv
from piql.planner.periodic import (
    WindowRefusal, build_periodic, find_window, periodic_diagnostic,
)
from piql.planner.physical import IndexSpec, PhysicalPlan
from piql.planner.view_construction import Rejection
from piql.planner.views import TraceSection, ViewDef
from piql import sqlgen
from piql.query import NamedQuery

LEVELS = ("SI-0", "SI-1", "SI-2", "SI-3", "unbounded")


@dataclass(frozen=True)
class QueryPlan:
    """The verdict for one named query."""

    query: NamedQuery
    level: str
    ops_bound: int | None
    physical: PhysicalPlan | None = None
    indexes: tuple[IndexSpec, ...] = ()
    views: tuple[str, ...] = ()
    rewritten_sql: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    phase0: Phase0Result | None = None
    view_defs: tuple[ViewDef, ...] = ()
    trace: tuple[TraceSection, ...] = ()

    @property
    def name(self) -> str:
        return self.query.name

    @property
    def bounded(self) -> bool:
        return self.level != "unbounded"


@dataclass(frozen=True)
class Plan:
    """Everything piql decided for an application: per-query verdicts and shared artifacts."""

    catalog: Catalog
    queries: tuple[QueryPlan, ...]
    queries_file: str = "<queries>"

    @property
    def views(self) -> tuple[ViewDef, ...]:
        found: dict[str, ViewDef] = {}
        for query in self.queries:
            for view in query.view_defs:
                found.setdefault(view.name, view)
        return tuple(found.values())

    @property
    def indexes(self) -> tuple[IndexSpec, ...]:
        found: dict[tuple[str, tuple[str, ...]], IndexSpec] = {}
        for query in self.queries:
            for index in query.indexes:
                found.setdefault((index.table.lower(), index.columns), index)
        return tuple(found.values())

    @property
    def summary(self) -> dict[str, int]:
        counts = {level: 0 for level in LEVELS}
        for query in self.queries:
            counts[query.level] += 1
        return counts

    def query(self, name: str) -> QueryPlan | None:
        for query in self.queries:
            if query.name.lower() == name.lower():
                return query
        return None


@dataclass(frozen=True)
class Refusal:
    """Why a strategy cannot answer a query, and the trace of its attempt (for explain)."""

    diagnostics: tuple[Diagnostic, ...] = ()
    trace: tuple[TraceSection, ...] = ()


Strategy = Callable[[Catalog, NamedQuery, Phase0Result], "QueryPlan | Refusal"]


def on_demand(catalog: Catalog, query: NamedQuery, phase0: Phase0Result) -> QueryPlan | Refusal:
    """SI-0 / SI-1: a bounded physical plan over base tables and secondary indexes."""
    plan = phase0.plan
    if plan is None:
        return Refusal((_unbounded_diagnostic(query, phase0),))
    diagnostics = [Diagnostic(
        "index", "info", f"needs secondary index {i.name} on {i.table}({', '.join(i.columns)})",
        "piql creates it; every write to the table also updates it (one operation)",
        query.location) for i in plan.indexes if not i.declared]
    return QueryPlan(query, plan.level, plan.ops_bound, plan, plan.indexes,
                     diagnostics=tuple(diagnostics), phase0=phase0)


def incremental_view(catalog: Catalog, query: NamedQuery,
                     phase0: Phase0Result) -> QueryPlan | Refusal:
    """SI-2: an incrementally maintained view whose storage and maintenance are bounded."""
    assert query.block is not None
    name = query.view_name or f"{query.name}_view"
    built = build_imv(catalog, query.block, name, (query.name,))
    if isinstance(built, Rejection):
        hotspot = built.invariant == "hotspot"
        reason = built.message if built.invariant in ("hotspot", "unsupported") \
            else f"{built.invariant} fails: {built.message}"
        return Refusal((Diagnostic("hotspot" if hotspot else "view-rejected", "error",
                                   f"no scale-independent view: {reason}", built.hint,
                                   query.location),), built.trace)
    views = (built.view,) + built.nested
    indexes: list[IndexSpec] = list(built.plan.indexes)
    for view in views:
        indexes += [i for i in view.indexes if i not in indexes]
    note = Diagnostic(
        "view", "info", f"answered from view {built.view.name}, maintained on every write to "
        f"{', '.join(sorted({r.table for r in built.view.rules}))}; storage <= "
        f"{built.view.storage.factor} x |{built.view.storage.relation}|",  # type: ignore[union-attr]
        "", query.location)
    return QueryPlan(query, "SI-2", built.plan.ops_bound, built.plan, tuple(indexes),
                     tuple(v.name for v in views), sqlgen.block_sql(built.rewritten),
                     (note,), phase0, views, built.trace)


def periodic_view(catalog: Catalog, query: NamedQuery,
                  phase0: Phase0Result) -> QueryPlan | Refusal:
    """SI-3: a hash-partitioned staging view and a periodic view, when TEMPORAL hotspots
    are all that stands between the query and a bounded plan."""
    assert query.block is not None
    window = find_window(catalog, query.block)
    if isinstance(window, WindowRefusal):
        return Refusal((Diagnostic(
            "view-rejected", "error", f"no SI-3 periodic view: {window.reason}",
            "bound the join with a primary key or a CARDINALITY constraint (or, for a table "
            "joined as a foreign key's parent, declare the FOREIGN KEY)", query.location),))
    if isinstance(window, str):
        return Refusal()
    built = build_periodic(catalog, query, window)
    views = (built.staging, built.periodic)
    note = periodic_diagnostic(built, window.column, query.location, bool(phase0.hotspots))
    lookups = window.lookup.plan.indexes if window.lookup else ()  # read by every refresh
    lookups += tuple(i for i in built.periodic.indexes if i not in lookups)  # epoch marks
    return QueryPlan(query, "SI-3", built.plan.ops_bound, built.plan, lookups,
                     tuple(v.name for v in views),
                     sqlgen.block_sql(built.rewritten), (note,), phase0, views, built.trace)


STRATEGIES: list[Strategy] = [on_demand, incremental_view, periodic_view]


def plan_application(catalog: Catalog, queries: tuple[NamedQuery, ...],
                     queries_file: str = "<queries>") -> Plan:
    """Classify every query; the planner is pure and touches no database."""
    return Plan(catalog, tuple(plan_named(catalog, q) for q in queries), queries_file)


def plan_named(catalog: Catalog, query: NamedQuery) -> QueryPlan:
    if query.block is None:
        diagnostics = tuple(Diagnostic(
            "unsupported", "error", f"{u.construct} is not supported by piql", u.hint, u.location)
            for u in query.unsupported)
        return QueryPlan(query, "unbounded", None, diagnostics=diagnostics)
    phase0 = plan_query(catalog, query.block)
    refusals: list[Diagnostic] = _hotspot_diagnostics(catalog, query, phase0)
    attempts: list[TraceSection] = []  # what the refused strategies tried, for explain
    for strategy in STRATEGIES:
        outcome = strategy(catalog, query, phase0)
        if isinstance(outcome, QueryPlan):
            return _with_diagnostics(outcome, refusals if outcome.level != "SI-1" else [])
        refusals += [d for d in outcome.diagnostics if d not in refusals]
        attempts += outcome.trace
    return QueryPlan(query, "unbounded", None, diagnostics=tuple(refusals), phase0=phase0,
                     trace=tuple(attempts))


def _with_diagnostics(plan: QueryPlan, extra: list[Diagnostic]) -> QueryPlan:
    from dataclasses import replace

    errors_to_info = [replace(d, severity="info") if d.severity == "error" else d for d in extra]
    return replace(plan, diagnostics=tuple(errors_to_info) + plan.diagnostics)


def _hotspot_diagnostics(catalog: Catalog, query: NamedQuery,
                         phase0: Phase0Result) -> list[Diagnostic]:
    """Warn about refused TEMPORAL indexes only when one would have bounded the query."""
    if phase0.plan is not None or not phase0.hotspots or query.block is None:
        return []
    if plan_query(catalog, query.block, avoid_hotspots=False).plan is None:
        return []
    return [Diagnostic(
        "hotspot", "warning",
        f"refused an index on {h.table}({', '.join(h.index_columns)}): {h.column} is TEMPORAL, "
        "so every insert would land on the partition holding the newest values",
        "piql answers such queries from a hash-partitioned staging view instead (SI-3)",
        query.location) for h in phase0.hotspots]


def _unbounded_diagnostic(query: NamedQuery, phase0: Phase0Result) -> Diagnostic:
    failure = phase0.failure
    assert failure is not None
    location = query.location
    if query.block is not None:
        for pred in query.block.predicates:
            if failure.alias in pred.aliases() and pred.location is not None:
                location = pred.location
                break
    return Diagnostic("unbounded", "error", f"no bounded plan: {failure.message}",
                      failure.hint, location)
