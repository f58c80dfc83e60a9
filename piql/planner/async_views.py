"""Which views are maintained asynchronously (``-- maintenance: async``, issue 20).

An asynchronous view's delta rules do not run in the writing transaction: the write does
its checks, the base row and one bounded enqueue of the changed row (keyed by its primary
key, coalesced by ``planner.update_queues``), and a maintainer applies the rules later.

A rule applied later sees the base tables as they are then, not as they were at the write.
That is only right when the rule reads nothing but the written row (its delta has no plan
and reads no other view): a single-table selection or aggregate. A join view's delta
would read the other tables' later rows and count a pair twice (once from each side's
queued change), so such views stay synchronous, with a warning, until deltas can be
evaluated as of the queue (docs/async.md). A view some synchronous view's rules read
stays synchronous too, so no synchronous rule reads a stale view.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.diagnostics import Diagnostic
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import MaintenanceMode, NamedQuery


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
    if view.kind != ViewKind.IMV:
        return f"it is a {view.kind} view, kept by its refresh"
    for rule in view.rules:
        if rule.plan is not None or rule.views:
            return (f"its rule {rule.name} reads more than the written {rule.table} row, and "
                    "a later run would read those rows as they are then")
    return None


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
        "piql defers only views whose rules read the written row alone (docs/async.md)",
        query.location)
