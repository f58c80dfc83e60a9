"""Which views are maintained asynchronously (``-- maintenance: async``, issue 20).

An asynchronous view's delta rules do not run in the writing transaction: the write does
its checks, the base row and one bounded enqueue of the changed row (keyed by its primary
key, coalesced by ``planner.update_queues``), and a maintainer applies the rules later.

A rule applied later sees the base tables as they are then, not as they were at the write.
A rule that reads nothing but the written row (its delta has no plan): a single-table
selection or aggregate, does not care. A join view's rules read other rows, so they run
*as of the queue* (``runtime.as_of``): the views hold the join of the *applied* state, the
base tables without their queued changes, and a rule reads that state. For the tables such
rules read (:func:`as_of_tables`), the queue holds inserts only: a queued row is one the
views have not seen, so the applied state is the table minus its queued rows, and a read
skips a row found queued (one lookup of the queue per row read: :func:`as_of_bound`).
A delete (or an update's delete half) of a row the views have seen runs the async views'
delete rules in the writing transaction, as of the queue; of a queued row it cancels or
rewrites the queued insert. Draining a row's insert then reads the others' applied rows,
whatever the order, so a pair of rows both queued is counted once: by whichever is
drained second. A rule whose plan stops after a LIMIT cannot skip rows (the next ones
are not read), and a rule reading another view reads it as it is now: their views stay
synchronous. A view some synchronous view's rules read stays synchronous too, so no
synchronous rule reads a stale view.

The staging and periodic views of SI-3 (``planner.periodic``) may be asynchronous too: a
staging view's rules copy the written row (no plan), and a periodic view's rules only mark
the epochs a refresh must recompute. The refresh reads the staging view, so it drains the
queue first (``Deployment.refresh``), as ``check`` does; after the drain the staging rows
are those of the synchronous plan and the marks a superset of its marks (a mark rule read
later may find a row the queue still holds and mark its epoch early, which only makes a
refresh recompute an epoch it would have recomputed anyway: the row's own staging insert
marks it when drained). So mark rules read the tables as they are, not as of the queue,
and make none of them a table read as of the queue.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.diagnostics import Diagnostic
from piql.planner.physical import PhysicalPlan
from piql.planner.views import DeltaRule, RuleAction, ViewDef
from piql.query_block import MaintenanceMode, NamedQuery, attrs_in


@dataclass(frozen=True)
class MaintenanceDecision:
    """The mode of every view, and what lint says about the ones asked to be async."""

    modes: dict[str, MaintenanceMode]  # view name -> mode
    notes: dict[str, tuple[Diagnostic, ...]]  # query name -> its diagnostics


def decide_maintenance(views: tuple[ViewDef, ...],
                       queries: tuple[NamedQuery, ...]) -> MaintenanceDecision:
    """Each view is async when every query it serves asks ``-- maintenance: async`` and
    its rules can be deferred (see the module docstring)."""
    by_name = {q.name: q for q in queries}
    modes: dict[str, MaintenanceMode] = {}
    refusals: dict[str, str] = {}
    for view in views:
        asked = [by_name[q] for q in view.for_queries if q in by_name]
        if not asked or any(q.maintenance is not MaintenanceMode.ASYNC for q in asked):
            modes[view.name] = MaintenanceMode.SYNC
            continue
        reason = _not_deferrable(view)
        if reason:
            refusals[view.name] = reason
        modes[view.name] = MaintenanceMode.SYNC if reason else MaintenanceMode.ASYNC
    _keep_read_views_sync(views, modes, refusals)
    notes: dict[str, tuple[Diagnostic, ...]] = {}
    for view in views:
        for name in view.for_queries:
            query = by_name.get(name)
            if query is None or query.maintenance is not MaintenanceMode.ASYNC:
                continue
            notes[name] = notes.get(name, ()) + (_note(view, query, modes, refusals),)
    return MaintenanceDecision(modes, notes)


def _not_deferrable(view: ViewDef) -> str | None:
    for rule in view.rules:
        if rule.views:
            return (f"its rule {rule.name} reads the view {rule.views[0]}, and a later run "
                    "would read it as it is then")
        if rule.plan is not None and _stops(rule.plan):
            return (f"its rule {rule.name} reads rows up to a LIMIT, which cannot skip the "
                    "rows still queued")
    return None


def _stops(plan: PhysicalPlan) -> bool:
    return any(_stops(b) for b in plan.branches) or any(
        a.stop_after is not None or (a.subplan is not None and _stops(a.subplan))
        for a in plan.accesses)


def _tables(plan: PhysicalPlan) -> set[str]:
    found = {t for b in plan.branches for t in _tables(b)}
    for access in plan.accesses:
        if access.table:
            found.add(access.table)
        if access.subplan is not None:
            found |= _tables(access.subplan)
    return found


def as_of_tables(views: tuple[ViewDef, ...]) -> frozenset[str]:
    """The tables the asynchronous views' rules read beyond the written row: read as of
    the queue, so their queued changes are inserts only (module docstring)."""
    return frozenset(t for view in views if view.maintenance is MaintenanceMode.ASYNC
                     for rule in view.rules
                     if rule.plan is not None and rule.action != RuleAction.MARK
                     for t in _tables(rule.plan))


def columns_read(views: tuple[ViewDef, ...], table: str) -> frozenset[str] | None:
    """The columns of ``table`` the asynchronous views with rules on it read anywhere in
    their definitions (None: some definition has a FROM-subquery, so all of them). An
    update changing none of them changes none of those views: its delete and insert rules
    would take out and put back the same rows (the same aggregate values)."""
    found: set[str] = set()
    for view in views:
        if view.maintenance is not MaintenanceMode.ASYNC or not any(
                rule.table.lower() == table.lower() for rule in view.rules):
            continue
        block = view.definition
        if any(r.subquery is not None for r in block.relations):
            return None
        aliases = {r.alias for r in block.relations if r.table and r.table.lower() == table.lower()}
        everything = [block.select, block.order_by, block.group_by, block.predicates,
                      block.filters, block.having, [r.on for r in block.relations]]
        found |= {a.column for a in attrs_in(everything) if a.alias in aliases}
    return frozenset(found)


def as_of_bound(rule: DeltaRule) -> int:
    """The bound of an asynchronous view's rule run as of the queue: its own, plus one
    lookup of the queue per row its plan reads (at most one per read it counts)."""
    return rule.ops_bound + (rule.read_ops if rule.plan is not None else 0)


def _keep_read_views_sync(views: tuple[ViewDef, ...], modes: dict[str, MaintenanceMode],
                          refusals: dict[str, str]) -> None:
    changed = True
    while changed:
        changed = False
        for view in views:
            if modes[view.name] is not MaintenanceMode.SYNC:
                continue
            for rule in view.rules:
                for read in rule.views:
                    if modes.get(read) is MaintenanceMode.ASYNC:
                        modes[read] = MaintenanceMode.SYNC
                        refusals[read] = f"the synchronous view {view.name} reads it"
                        changed = True


def _note(view: ViewDef, query: NamedQuery, modes: dict[str, MaintenanceMode],
          refusals: dict[str, str]) -> Diagnostic:
    if modes[view.name] is MaintenanceMode.ASYNC:
        return Diagnostic(
            "async", "info", f"view {view.name} is maintained asynchronously: a write does its "
            "checks, the row and one enqueue; its rules run when the queue is drained",
            "answers may lag the writes until db.drain() (docs/async.md)", query.location)
    reason = refusals.get(view.name, "another query it serves is synchronous")
    return Diagnostic(
        "async", "warning", f"view {view.name} stays synchronous although -- maintenance: async "
        f"asks otherwise: {reason}",
        "piql defers views whose rules read base tables without a LIMIT (docs/async.md)",
        query.location)
