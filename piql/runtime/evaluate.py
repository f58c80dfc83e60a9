"""Evaluating query-block expressions on bound rows (all of it local work on bounded input).

Every value follows SQL's rules, not Python's (``piql.runtime.sqlvalues``): ``%`` and
integer division truncate, NULL propagates, a comparison with NULL is not true, and
ORDER BY puts NULLs first ascending.
"""
from __future__ import annotations

from typing import Any, Iterable

from piql.query_block import (
    Aggregate, Attr, Epoch, Expr, Literal, OrderItem, Param, Predicate, QueryBlock, Ratio,
)
from piql.runtime import sqlvalues
from piql.runtime.exact_sums import exact_sum

Binding = dict[tuple[str, str], Any]


def value(expr: object, binding: Binding, params: dict[str, Any]) -> Any:
    if isinstance(expr, Attr):
        return binding[(expr.alias, expr.column)]
    if isinstance(expr, Param):
        return params[expr.name]
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Epoch):
        return sqlvalues.epoch(value(expr.attr, binding, params), expr.width)
    raise TypeError(f"cannot evaluate {expr!r} on one row")


def holds(pred: Predicate, binding: Binding, params: dict[str, Any]) -> bool:
    """Is ``pred`` true? (Unknown, with a NULL on either side, is not.)"""
    left, right = value(pred.left, binding, params), value(pred.right, binding, params)
    return sqlvalues.compare(pred.op, left, right) is True


def finish(block: QueryBlock, bindings: list[Binding], params: dict[str, Any]) -> list[tuple]:
    """Aggregate, sort, limit and project bound rows as ``block`` says."""
    if block.aggregates or block.group_by:
        groups: dict[tuple, list[Binding]] = {}
        for binding in bindings:
            key = tuple(value(g, binding, params) for g in block.group_by)
            groups.setdefault(key, []).append(binding)
        if not groups and not block.group_by:
            groups[()] = []  # an aggregate over no rows still answers one row
        rows = [_aggregate_row(block, members, params) for members in groups.values()]
    else:
        rows = [_plain_row(block, binding, params) for binding in bindings]
    if block.order_by:
        rows = sort_rows(rows, block.order_by)
    if block.limit is not None:
        rows = rows[: block.limit]
    return [tuple(row[item.name] for item in block.select) for row in rows]


def _plain_row(block: QueryBlock, binding: Binding, params: dict[str, Any]) -> dict[Any, Any]:
    row: dict[Any, Any] = {}
    for item in block.select:
        row[item.name] = _scalar(item.expr, binding, params)
    for order in block.order_by:
        row[order.expr] = _scalar(order.expr, binding, params)
    return row


def _scalar(expr: Expr, binding: Binding, params: dict[str, Any]) -> Any:
    if isinstance(expr, Ratio):
        return sqlvalues.average(value(expr.numerator, binding, params),
                                 value(expr.denominator, binding, params))
    return value(expr, binding, params)


def _aggregate_row(block: QueryBlock, members: list[Binding], params: dict[str, Any]) -> dict:
    row: dict[Any, Any] = {}
    sample = members[0] if members else {}
    for expr in [i.expr for i in block.select] + [o.expr for o in block.order_by]:
        computed = aggregate(expr, members, params) if isinstance(expr, Aggregate) \
            else (_scalar(expr, sample, params) if members else None)
        row[expr] = computed
    for item in block.select:
        row[item.name] = row[item.expr]
    return row


def aggregate(agg: Aggregate, members: Iterable[Binding], params: dict[str, Any]) -> Any:
    values = [1 if agg.arg is None else value(agg.arg, m, params) for m in members]
    values = [v for v in values if v is not None]
    if agg.distinct:
        values = list(dict.fromkeys(values))
    if agg.func == "COUNT":
        return len(values)
    if not values:
        return None
    if agg.func == "SUM":  # exact, rounded once for REAL values, as maintained sums
        return exact_sum(values)
    if agg.func == "AVG":
        total = exact_sum(values)
        return None if total is None else total / len(values)
    if agg.func == "MIN":
        return min(values)
    if agg.func == "MAX":
        return max(values)
    raise ValueError(f"piql cannot compute {agg.func} locally")


def sort_rows(rows: list[dict], order: tuple[OrderItem, ...]) -> list[dict]:
    """Stable multi-key sort in SQLite's order of values (NULLs first ascending)."""
    for item in reversed(order):
        key = item.expr
        rows = sorted(rows, key=lambda r: sqlvalues.sort_key(r[key]), reverse=item.desc)
    return rows

