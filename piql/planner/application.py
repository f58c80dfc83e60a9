"""The application plan: every named query classified, with the indexes and views it needs.

Each query goes through a visible list of strategies, cheapest guarantee first
(paper Figure 1): on-demand execution with bounded operators (Phase 0, SI-0 and
SI-1), then the strategies later phases register. The first strategy that
proves a bound decides the level; the others' refusals stay as diagnostics
so a developer sees why the cheaper levels were out of reach.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Callable

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.errors import InputError
from piql.planner.adaptive import AdaptivePlan, adaptive_diagnostic, adaptive_plan
from piql.planner.async_views import decide_maintenance
from piql.planner.bounded_plans import Phase0Result, plan_query
from piql.planner.compile import CompiledQuery, StoreLayout, UncompilablePlan, compile_plan
from piql.planner.imv import build_imv
from piql.planner.levels import LEVELS, Level
from piql.planner.periodic import (
    DEFAULT_PARTITIONS, WindowRefusal, build_periodic, find_window, periodic_diagnostic,
)
from piql.planner.naming import Names
from piql.planner.params import ParamSpec, param_specs
from piql.planner.physical import IndexSpec, PhysicalPlan
from piql.planner.store_layout import store_layout
from piql.planner.pushdown import plan_pushdown
from piql.planner.symmetric_pair import SymmetricPair
from piql.planner.tuple_window import plan_window_then_rest, rest_sql, split_window
from piql.planner.view_construction import Invariant, Rejection, view_extensions
from piql.planner.views import TraceSection, ViewDef, WriteEvent
from piql.planner.write_bounds import WriteBound, check_indexes, write_bounds
from piql import sqlgen
from piql.query_block import NamedQuery, QueryBlock

UNBOUNDED_PREFIX = "no bounded plan:"


@dataclass(frozen=True)
class QueryPlan:
    """The verdict for one named query."""

    query: NamedQuery
    level: Level
    ops_bound: int | None
    physical: PhysicalPlan | None = None
    indexes: tuple[IndexSpec, ...] = ()
    views: tuple[str, ...] = ()
    rewritten_sql: str | None = None
    diagnostics: tuple[Diagnostic, ...] = ()
    phase0: Phase0Result | None = None
    view_defs: tuple[ViewDef, ...] = ()
    trace: tuple[TraceSection, ...] = ()
    params: tuple[ParamSpec, ...] = ()
    adaptive: AdaptivePlan | None = None  # both a pull and a push plan are bounded
    # Its view keeps one orientation of each pair: a call passes these parameters in order.
    pair: SymmetricPair | None = None

    @property
    def name(self) -> str:
        return self.query.name

    @property
    def bounded(self) -> bool:
        return self.level != Level.UNBOUNDED

    def __repr__(self) -> str:
        bound = f"ops <= {self.ops_bound}" if self.ops_bound is not None else "no bound"
        return f"<piql.QueryPlan {self.name}: {self.level}, {bound}>"


@dataclass(frozen=True)
class Plan:
    """Everything piql decided for an application: per-query verdicts and shared artifacts,
    for a store whose staging views have ``partitions`` partitions.

    ``indexes`` are the secondary indexes queries (and view maintenance) read;
    ``check_indexes`` those writes check constraints through; ``writes`` the bound of an
    insert, a delete and an update of every table. ``notes`` are what piql says about the
    queries' source itself (blocks and statements it skipped), as ``catalog.notes`` are
    about the schema."""

    catalog: Catalog
    queries: tuple[QueryPlan, ...]
    queries_file: str = "<queries>"
    partitions: int = DEFAULT_PARTITIONS
    check_indexes: tuple[IndexSpec, ...] = ()
    writes: tuple[WriteBound, ...] = ()
    notes: tuple[Diagnostic, ...] = field(default=(), compare=False)
    # compiled statements by (query name, dialect), made on first use (Plan.compiled)
    _statements: dict[tuple[str, str], CompiledQuery | UncompilablePlan] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __repr__(self) -> str:
        # The dataclass repr would print every view, rule and physical plan (100k+ chars).
        return (f"<piql.Plan {len(self.queries)} queries, {len(self.indexes)} indexes, "
                f"{len(self.views)} views, {self.partitions} partitions, "
                f"from {self.queries_file}>")

    @property
    def views(self) -> tuple[ViewDef, ...]:
        found: dict[str, ViewDef] = {}
        for query in self.queries:
            for view in query.view_defs:
                found.setdefault(view.name, view)
        return tuple(found.values())

    @property
    def ordered_views(self) -> tuple[ViewDef, ...]:
        """Every view, a view whose maintenance reads another after that one (the order
        writes apply rules in and stores create views in)."""
        by_name = {v.name: v for v in self.views}
        ordered: list[ViewDef] = []

        def visit(view: ViewDef) -> None:
            if view in ordered:
                return
            for rule in view.rules:
                for name in rule.views:
                    if name in by_name:
                        visit(by_name[name])
            ordered.append(view)

        for view in self.views:
            visit(view)
        return tuple(ordered)

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

    @cached_property
    def layout(self) -> StoreLayout:
        """The tables this plan keeps, as the compiler reads them (``store_layout``)."""
        return store_layout(self)

    def compiled(self, name: str, dialect: str) -> CompiledQuery:
        """The bounded query ``name`` as one prepared statement of ``dialect`` ("sqlite" or
        "postgres") over the tables this plan keeps (``piql.planner.compile``), compiled on
        first use and kept. Raises :class:`UncompilablePlan` for a query without bounded
        plan or one the compiler cannot express (the runtime's interpreter serves it)."""
        key = (name, dialect)
        found = self._statements.get(key)
        if found is None:
            found = self._statements[key] = self._compile(name, dialect)
        if isinstance(found, UncompilablePlan):
            raise UncompilablePlan(*found.args)  # a new error each time: no growing traceback
        return found

    def _compile(self, name: str, dialect: str) -> CompiledQuery | UncompilablePlan:
        query = self.query(name)
        if query is None or query.physical is None:
            return UncompilablePlan(f"query {name} has no bounded plan")
        try:
            return compile_plan(query.physical, dialect, self.layout, query=query.query.block)
        except UncompilablePlan as refused:
            return refused.with_traceback(None)

    def write(self, table: str, event: WriteEvent) -> WriteBound | None:
        """The bound of one ``event`` of a ``table`` row."""
        return next((w for w in self.writes
                     if w.table.lower() == table.lower() and w.event == event), None)


@dataclass(frozen=True)
class Refusal:
    """Why a strategy cannot answer a query, and the trace of its attempt (for explain)."""

    diagnostics: tuple[Diagnostic, ...] = ()
    trace: tuple[TraceSection, ...] = ()


# A strategy names what it creates through ``Names`` (piql/planner/naming.py): the names
# become taken only when the strategy is chosen. The last argument is the number of
# partitions of staging views.
Strategy = Callable[[Catalog, NamedQuery, Phase0Result, Names, int], "QueryPlan | Refusal"]


def on_demand(catalog: Catalog, query: NamedQuery, phase0: Phase0Result,
              names: Names, partitions: int) -> QueryPlan | Refusal:
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


def incremental_view(catalog: Catalog, query: NamedQuery, phase0: Phase0Result,
                     names: Names, partitions: int) -> QueryPlan | Refusal:
    """SI-2: an incrementally maintained view whose storage and maintenance are bounded."""
    assert query.block is not None
    beyond = view_extensions(query.block)
    if beyond:
        return _beyond_views(query, "no scale-independent view", beyond[0])
    name = names.claim(query.view_name or f"{query.name}_view",
                       holder=f"the view of query {query.name}", owner=query.name)
    built = build_imv(catalog, query.block, name, (query.name,), names=names, symmetric=True)
    if isinstance(built, Rejection):
        hotspot = built.invariant == Invariant.HOTSPOT
        reason = built.message if built.invariant in (Invariant.HOTSPOT, Invariant.UNSUPPORTED) \
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
    hot = [_single_row_hotspot(catalog, query, view) for view in views
           if view.aggregate and not view.key]
    return QueryPlan(query, Level.SI2, built.plan.ops_bound, built.plan, tuple(indexes),
                     tuple(v.name for v in views), sqlgen.block_sql(built.rewritten),
                     (note, *hot), phase0, views, built.trace, pair=built.pair)


def aggregate_pushdown(catalog: Catalog, query: NamedQuery, phase0: Phase0Result,
                       names: Names, partitions: int) -> QueryPlan | Refusal:
    """SI-2: an aggregate over an adjacency join, combined at query time from per-writer
    views (COUNT or SUM per writer, O(1) upkeep) over the bounded neighbourhood
    (``planner.pushdown``)."""
    assert query.block is not None
    found = plan_pushdown(catalog, query.block, query.name, names)
    if found is None:
        return Refusal()
    if isinstance(found, str):
        return Refusal((Diagnostic("view-rejected", "error", f"no per-writer view: {found}",
                                   "compare the neighbourhood's key with a parameter and "
                                   "bound it with a CARDINALITY constraint", query.location),))
    view = found.view
    combined = next(a for a in found.plan.accesses if a.alias == found.split.writer.alias)
    rows = combined.probes * combined.fanout * combined.rows_per_probe
    writer = ", ".join(str(w) for w, _ in found.split.joins)
    indexes: list[IndexSpec] = list(found.plan.indexes)
    for maintained in found.views:
        indexes += [i for i in maintained.indexes if i not in indexes]
    note = Diagnostic(
        "view", "info", f"answered by combining at most {rows} rows of the per-writer view "
        f"{view.name} (partial aggregates per {writer}), maintained on every write to "
        f"{', '.join(sorted({r.table for r in view.rules}))}; storage <= "
        f"{view.storage.factor} x |{view.storage.relation}|",  # type: ignore[union-attr]
        "", query.location)
    return QueryPlan(query, Level.SI2, found.plan.ops_bound, found.plan, tuple(indexes),
                     tuple(v.name for v in found.views), sqlgen.block_sql(found.rewritten),
                     (note,), phase0, found.views, found.trace)


def _single_row_hotspot(catalog: Catalog, query: NamedQuery, view: ViewDef) -> Diagnostic:
    """A view without key is one row: every write to its tables updates that row, so all
    writers contend for it however the store is partitioned (the level stays SI-2)."""
    tables = sorted({r.table for r in view.rules})
    temporal = next(((t.name, c) for t in (catalog.table(n) for n in tables) if t is not None
                     for c in t.temporal_columns), None)
    if temporal is not None:
        table, column = temporal
        instead = (f"aggregate per time window instead, e.g. SELECT COUNT(*) FROM {table} WHERE "
                   f"{column} - {column} % 3600000 = <hour>: piql serves it from a periodic "
                   "view refreshed from a hash-partitioned staging view (SI-3), which spreads "
                   "the writes")
    else:
        instead = ("mark the rows' creation-time column TEMPORAL and aggregate per time window "
                   "(ts - ts % 3600000 = <hour>): piql serves that from a periodic view refreshed "
                   "from a hash-partitioned staging view (SI-3), which spreads the writes")
    return Diagnostic(
        "hotspot", "warning",
        f"view {view.name} is a single row that every write to {', '.join(tables)} updates: "
        "all writers contend for it (a write hotspot)", instead, query.location)


def periodic_view(catalog: Catalog, query: NamedQuery, phase0: Phase0Result,
                  names: Names, partitions: int) -> QueryPlan | Refusal:
    """SI-3: a hash-partitioned staging view and a periodic view, when TEMPORAL hotspots
    are all that stands between the query and a bounded plan."""
    assert query.block is not None
    if query.block.extensions:
        return _beyond_views(query, "no SI-3 periodic view", query.block.extensions[0])
    window = find_window(catalog, query.block, names)
    if isinstance(window, WindowRefusal):
        return _window_refused(window, query)
    if isinstance(window, str):
        return Refusal()
    built = build_periodic(catalog, query, window, partitions, names=names)
    views = (built.staging, built.periodic)
    note = periodic_diagnostic(built, window.column, query.location, bool(phase0.hotspots))
    lookups = window.lookup.plan.indexes if window.lookup else ()  # read by every refresh
    lookups += tuple(i for i in built.periodic.indexes if i not in lookups)  # epoch marks
    return QueryPlan(query, Level.SI3, built.plan.ops_bound, built.plan, lookups,
                     tuple(v.name for v in views),
                     sqlgen.block_sql(built.rewritten), (note,), phase0, views, built.trace)


def _beyond_views(query: NamedQuery, what: str, construct: str) -> Refusal:
    """A construct a view cannot maintain exactly is refused here by name (never
    maintained approximately), so the query stays unbounded with that reason."""
    return Refusal((Diagnostic(
        "view-rejected", "error", f"{what}: {construct} is not supported in view maintenance",
        f"make the query bounded without a view (restrict it by a key, or ORDER BY ... LIMIT n "
        f"on an index), or move {construct} into the application", query.location),))


def _window_refused(refusal: WindowRefusal, query: NamedQuery) -> Refusal:
    return Refusal((Diagnostic("view-rejected", "error",
                               f"no SI-3 periodic view: {refusal.message}", refusal.hint,
                               query.location),))


def periodic_window_then_rest(catalog: Catalog, query: NamedQuery, phase0: Phase0Result,
                              names: Names, partitions: int) -> QueryPlan | Refusal:
    """SI-3: a tuple window kept in a periodic view, and the rest of the query (joins by key,
    filters, parameters) planned by Phase 0 over it, run when the query runs (§3.3). The
    rest may use any construct Phase 0 plans (filters, expressions, LEFT JOIN, ...): it is
    computed on the window's rows each time; the window itself, which a refresh computes
    ahead of time, must be of the paper's fragment."""
    split = split_window(catalog, query)
    if split is None:
        return Refusal()
    if isinstance(split, WindowRefusal):
        return _window_refused(split, query)
    if split.window.block.extensions:
        return Refusal()  # said once, by periodic_view
    planned = plan_window_then_rest(catalog, split, names, partitions)
    built, rest = planned.built, planned.phase0
    refresh = built.periodic.refresh
    assert refresh is not None
    window = (f"the tuple window {split.alias} ({refresh.layout.partitions} partitions "
              f"x {split.window.size} tuples of {split.window.table.name})")
    if rest.plan is None:
        assert rest.failure is not None
        return Refusal((Diagnostic(
            "view-rejected", "error", f"no SI-3 periodic view: {window} fits a periodic view, but "
            f"the rest of the query over it is unbounded: {rest.failure.message}",
            rest.failure.hint, query.location),), built.trace)
    plan = rest.plan
    views = (built.staging, built.periodic)
    note = periodic_diagnostic(built, split.window.column, query.location, bool(phase0.hotspots))
    note = replace(note, message=f"{note.message}; the rest of the query reads its "
                   f"{split.window.size} rows when it runs (ops <= {plan.ops_bound})")
    indexes = [Diagnostic(
        "index", "info", f"needs secondary index {i.name} on {i.table}({', '.join(i.columns)})",
        "piql creates it; every write to the table also updates it (one operation)",
        query.location) for i in plan.indexes if not i.declared]
    trace = built.trace + (TraceSection("the rest of the query, over the window (run by "
                                        "every query)", tuple(plan.root.lines())),)
    return QueryPlan(query, Level.SI3, plan.ops_bound, plan, plan.indexes,
                     tuple(v.name for v in views), rest_sql(planned), (note, *indexes), phase0,
                     views, trace)


STRATEGIES: list[Strategy] = [on_demand, incremental_view, aggregate_pushdown, periodic_view,
                              periodic_window_then_rest]


def plan_application(catalog: Catalog, queries: tuple[NamedQuery, ...],
                     queries_file: str = "<queries>",
                     partitions: int = DEFAULT_PARTITIONS) -> Plan:
    """Classify every query; the planner is pure and touches no database.

    Staging views get ``partitions`` partitions (the store the plan is deployed on uses
    that many). A view name chosen with ``-- view:`` that the schema, piql or another query
    already uses is an :class:`InputError` at that line; generated names are renamed
    instead."""
    if partitions < 1:
        raise ValueError(f"partitions must be a positive integer, not {partitions}")
    names = Names(catalog)
    _reserve_chosen_names(names, queries)
    plan = Plan(catalog, tuple(plan_named(catalog, q, names, partitions) for q in queries),
                queries_file, partitions)
    plan = _with_maintenance(plan)
    checks = check_indexes(catalog, plan.indexes, names)
    return replace(plan, check_indexes=checks,
                   writes=write_bounds(catalog, plan.views, plan.indexes + checks))


def replanned(plan: Plan, partitions: int) -> Plan:
    """``plan`` for a store with another number of staging partitions (the same plan when
    the number is its own)."""
    if partitions == plan.partitions:
        return plan
    return replace(plan_application(plan.catalog, tuple(q.query for q in plan.queries),
                                    plan.queries_file, partitions), notes=plan.notes)


def _with_maintenance(plan: Plan) -> Plan:
    """Each view with its maintenance mode (``planner.async_views``), and what lint says."""
    decision = decide_maintenance(plan.views, tuple(q.query for q in plan.queries))
    return replace(plan, queries=tuple(
        replace(q, view_defs=tuple(replace(v, maintenance=decision.modes[v.name])
                                   for v in q.view_defs),
                diagnostics=q.diagnostics + decision.notes.get(q.name, ()))
        for q in plan.queries))


def _reserve_chosen_names(names: Names, queries: tuple[NamedQuery, ...]) -> None:
    errors = []
    for query in queries:
        if query.view_name is None:
            continue
        holder = names.holder(query.view_name)
        if holder is not None:
            errors.append(InputError(f"view name '{query.view_name}' is taken: it is the name "
                                     f"of {holder}; choose another '-- view:' name",
                                     query.view_location or query.location))
        else:
            names.reserve(query.view_name, f"the view of query {query.name}", query.name)
    if errors:
        errors[0].all_errors = errors  # type: ignore[attr-defined]
        raise errors[0]


def plan_named(catalog: Catalog, query: NamedQuery, names: Names | None = None,
               partitions: int = DEFAULT_PARTITIONS) -> QueryPlan:
    """Classify one query (``names``: the names other queries already took)."""
    planned = _classify(catalog, query, names if names is not None else Names(catalog),
                        partitions)
    if query.block is None:
        return planned
    planned = replace(planned, params=param_specs(catalog, query.block))
    adaptive = adaptive_plan(catalog, query.block, planned.level, planned.physical)
    if adaptive is None:
        return planned
    return replace(planned, adaptive=adaptive, diagnostics=planned.diagnostics
                   + (adaptive_diagnostic(adaptive, query.location),))


def param_types(plan: Plan, block: QueryBlock) -> dict[str, str]:
    """The declared type of the column each parameter of ``block`` is compared with
    (parameters compared with no base column are left out)."""
    return {p.name: p.declared_type for p in param_specs(plan.catalog, block) if p.declared_type}


def _classify(catalog: Catalog, query: NamedQuery, names: Names, partitions: int) -> QueryPlan:
    if query.block is None:
        diagnostics = tuple(Diagnostic(
            "unsupported", "error", f"{u.construct} is not supported by piql", u.hint, u.location)
            for u in query.unsupported)
        return QueryPlan(query, Level.UNBOUNDED, None, diagnostics=diagnostics)
    phase0 = plan_query(catalog, query.block, names=names)
    refusals: list[Diagnostic] = _hotspot_diagnostics(catalog, query, phase0)
    attempts: list[TraceSection] = []  # what the refused strategies tried, for explain
    for strategy in STRATEGIES:
        attempt = names.child()
        outcome = strategy(catalog, query, phase0, attempt, partitions)
        if isinstance(outcome, QueryPlan):
            attempt.commit()
            outcome = replace(outcome, diagnostics=outcome.diagnostics
                              + _renamed(outcome, attempt, query))
            return _with_diagnostics(outcome, refusals if outcome.level != Level.SI1 else [])
        refusals += [d for d in outcome.diagnostics if d not in refusals]
        attempts += outcome.trace
    return QueryPlan(query, Level.UNBOUNDED, None, diagnostics=tuple(refusals), phase0=phase0,
                     trace=tuple(attempts))


def _renamed(plan: QueryPlan, names: Names, query: NamedQuery) -> tuple[Diagnostic, ...]:
    """Say which generated names were taken, and what the views and indexes are called."""
    found = [Diagnostic("renamed", "info", r.describe("view"),
                        "piql gives a generated name a suffix when the schema, piql or an "
                        "earlier query uses it", query.location) for r in names.renames]
    for index in plan.indexes:
        readable = f"idx_{index.table}_{'_'.join(index.columns)}".lower()
        if not index.declared and index.name != readable:
            found.append(Diagnostic(
                "renamed", "info", f"index {index.name} is not called {readable}: another table "
                "and columns of the schema, or a table or index, would have that name",
                "piql adds a hash of the table and columns to such index names", query.location))
    return tuple(found)


def _with_diagnostics(plan: QueryPlan, extra: list[Diagnostic]) -> QueryPlan:
    """``plan`` with the refusals of the cheaper strategies: no longer errors, but the reasons
    the chosen one was needed. Phase 0's refusal says why a view was needed; it keeps
    no ``unbounded`` code, which belongs to unbounded queries only."""
    reasons = []
    for d in extra:
        if d.code == "unbounded":
            what = "a view" if plan.level == Level.SI2 else "a periodic view"
            reason = d.message.removeprefix(f"{UNBOUNDED_PREFIX} ")
            d = replace(d, code="view", message=f"needs {what} because no plan over the tables "
                        f"and their indexes is bounded: {reason}")
        reasons.append(replace(d, severity="info") if d.severity == "error" else d)
    return replace(plan, diagnostics=tuple(reasons) + plan.diagnostics)


def _hotspot_diagnostics(catalog: Catalog, query: NamedQuery,
                         phase0: Phase0Result) -> list[Diagnostic]:
    """Warn about refused TEMPORAL indexes only when one would have bounded the query."""
    if phase0.plan is not None or not phase0.hotspots or query.block is None:
        return []
    if plan_query(catalog, query.block, avoid_hotspots=False, names=Names(catalog)).plan is None:
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
    return Diagnostic("unbounded", "error", f"{UNBOUNDED_PREFIX} {failure.message}",
                      failure.hint, location)
