"""Runs a Phase 0 physical plan on the store, counting operations.

Accesses run in the plan's join order, once per outer tuple, each as one
key-prefix range scan (with its stop-after) on the clustered key or the
plan's secondary index. A FROM-subquery refers to nothing outside it, so it runs
once, however many outer tuples join its rows: Phase 0 counts its operations once. A bounded-outer merge join sorts the probes' rows and
keeps the first k; everything after the scans is local work on bounded rows.
"""
from __future__ import annotations

from typing import Any

from piql.planner.physical import Access, AccessPath, PhysicalPlan
from piql.query_block import FLIPPED, Attr, OrderItem
from piql.runtime.evaluate import Binding, finish, holds, sort_rows, value
from piql.runtime.store import Store


def execute(store: Store, plan: PhysicalPlan, params: dict[str, Any]) -> list[tuple]:
    """The rows of ``plan`` for ``params``; operations accumulate on ``store.counter``."""
    bindings = bind(store, plan, params)
    return finish(plan.block, bindings, params)


def bind(store: Store, plan: PhysicalPlan, params: dict[str, Any]) -> list[Binding]:
    """Every joined tuple of ``plan`` as a binding of alias.column to value (before finishing)."""
    bindings: list[Binding] = [{}]
    for position, access in enumerate(plan.accesses):
        joined: list[Binding] = []
        derived: list[Binding] | None = None
        for outer in bindings:
            if access.path == AccessPath.DERIVED:
                if derived is None:
                    derived = _derived(store, access, params)
                probed = [outer | row for row in derived]
            else:
                probed = _probe(store, access, outer, params)
            for row in probed:
                if all(holds(p, row, params) for p in access.residual):
                    joined.append(row)
        if position == plan.merge_at and plan.block.limit is not None:
            joined = _merge(joined, plan.block.order_by, params)[: plan.block.limit]
        bindings = joined
    return bindings


def _derived(store: Store, access: Access, params: dict[str, Any]) -> list[Binding]:
    """The rows of a FROM-subquery, bound under its alias."""
    assert access.subplan is not None
    names = [item.name for item in access.subplan.block.select]
    return [{(access.alias, n): v for n, v in zip(names, row)}
            for row in execute(store, access.subplan, params)]


def _probe(store: Store, access: Access, outer: Binding, params: dict[str, Any]) -> list[Binding]:
    shape = store.shapes[access.table]  # type: ignore[index]
    eq = [(c, value(v, outer, params)) for c, v in zip(access.key_columns, access.key_values)]
    ranges = [_range(access.alias, p, outer, params) for p in access.range]
    limited = access.stop_after is not None
    rows = store.scan(
        access.table, shape.columns, eq, ranges,  # type: ignore[arg-type]
        order=access.order_columns if limited else (), descending=access.descending,
        limit=access.stop_after, index=access.index.name if access.path == AccessPath.INDEX else None,
        fetches=access.path == AccessPath.INDEX and not access.covering)
    return [outer | {(access.alias, c): v for c, v in zip(shape.columns, row)} for row in rows]


def _range(alias: str, pred, outer: Binding, params: dict[str, Any]) -> tuple[str, str, Any]:
    if isinstance(pred.left, Attr) and pred.left.alias == alias:
        return pred.left.column, pred.op, value(pred.right, outer, params)
    return pred.right.column, FLIPPED[pred.op], value(pred.left, outer, params)


def _merge(bindings: list[Binding], order: tuple[OrderItem, ...],
           params: dict[str, Any]) -> list[Binding]:
    keyed = [{item.expr: value(item.expr, b, params) for item in order} | {"_": b} for b in bindings]
    return [row["_"] for row in sort_rows(keyed, order)]
