"""Runs a Phase 0 physical plan on the store, counting operations.

Accesses run in the plan's join order, once per outer tuple, each as one
key-prefix range scan (with its stop-after) on the clustered key or the
plan's secondary index. A FROM-subquery refers to nothing outside it, so it runs
once, however many outer tuples join its rows: Phase 0 counts its operations once. A bounded-outer merge join sorts the probes' rows and
keeps the first k; everything after the scans is local work on bounded rows.
"""
from __future__ import annotations

from itertools import product
from typing import Any

from piql.planner.physical import Access, AccessPath, AnyOf, NullKey, PhysicalPlan
from piql.query_block import FLIPPED, Attr, JoinKind, OrderItem
from piql.runtime import sqlvalues
from piql.runtime.evaluate import Binding, finish, finish_union, holds, sort_rows, value
from piql.runtime.store import IS_NULL, Store


def execute(store: Store, plan: PhysicalPlan, params: dict[str, Any]) -> list[tuple]:
    """The rows of ``plan`` for ``params``; operations accumulate on ``store.counter``."""
    if plan.branches:
        return finish_union(plan.block, [execute(store, b, params) for b in plan.branches],
                            params)
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
                if derived is None:  # a FROM-subquery runs once per query, as Phase 0 counts it
                    derived = _derived(store, access, params)
                probed = [outer | row for row in derived]
            else:
                probed = _probe(store, access, outer, params)
            matches = [row for row in probed if all(holds(p, row, params) for p in access.residual)]
            if access.join == JoinKind.INNER:
                joined += matches
            elif access.join == JoinKind.LEFT:
                extended = matches or [outer | {(access.alias, c): None
                                                for c in store.shapes[access.table].columns}]
                joined += [r for r in extended if all(holds(p, r, params) for p in access.post)]
            elif bool(matches) == (access.join == JoinKind.SEMI):
                joined.append(outer)
        if position == plan.merge_at and plan.block.fetch is not None:
            joined = _merge(joined, plan.block.order_by, params)[: plan.block.fetch]
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
    ranges = [_range(access.alias, p, outer, params) for p in access.range]
    limited = access.stop_after is not None
    found: list[Binding] = []
    part = access.index.part if access.index is not None else (lambda name: name)
    order = tuple(part(c) for c in access.order_columns) if limited else ()
    for eq in _key_probes(access, outer, params):
        eq = [(part(c), v) for c, v in eq]  # an expression index's key is LOWER(c), say
        rows = store.scan(
            access.table, shape.columns, eq, ranges,  # type: ignore[arg-type]
            order=order, descending=access.descending,
            limit=access.stop_after,
            index=access.index.name if access.path == AccessPath.INDEX else None,
            fetches=access.path == AccessPath.INDEX and not access.covering)
        found += [outer | {(access.alias, c): v for c, v in zip(shape.columns, row)}
                  for row in rows]
    return found


def _key_probes(access: Access, outer: Binding, params: dict[str, Any]) -> list[list]:
    """The key prefixes to read for one outer tuple: one, or one per combination of the
    distinct values of IN lists (a NULL in a list finds no row, as with ``=``)."""
    choices = []
    for bound in access.key_values:
        if isinstance(bound, NullKey):
            choices.append([IS_NULL])
        elif isinstance(bound, AnyOf):
            distinct: dict[tuple, Any] = {}
            for option in bound.values:
                found = value(option, outer, params)
                if found is not None:
                    distinct.setdefault(sqlvalues.sort_key(found), found)
            choices.append(list(distinct.values()) or [None])
        else:
            choices.append([value(bound, outer, params)])
    return [list(zip(access.key_columns, combination)) for combination in product(*choices)]


def _range(alias: str, pred, outer: Binding, params: dict[str, Any]) -> tuple[str, str, Any]:
    if isinstance(pred.left, Attr) and pred.left.alias == alias:
        return pred.left.column, pred.op, value(pred.right, outer, params)
    return pred.right.column, FLIPPED[pred.op], value(pred.left, outer, params)


def _merge(bindings: list[Binding], order: tuple[OrderItem, ...],
           params: dict[str, Any]) -> list[Binding]:
    keyed = [{item.expr: value(item.expr, b, params) for item in order} | {"_": b} for b in bindings]
    return [row["_"] for row in sort_rows(keyed, order)]
