"""Evaluating query-block expressions on bound rows (all of it local work on bounded input).

Every value follows SQL's rules, not Python's (``piql.runtime.sqlvalues``): ``%`` and
integer division truncate, NULL propagates, a comparison with NULL is not true, and
ORDER BY puts NULLs first ascending.
"""
from __future__ import annotations

from typing import Any, Iterable

from piql.query_block import (
    Aggregate, Attr, Call, Case, Compare, Epoch, Expr, Func, InList, Junction, Like, Literal,
    Negation, NullTest, OrderItem, Param, Predicate, QueryBlock, Ratio,
)
from piql.runtime import sqlvalues
from piql.runtime.errors import ParameterError
from piql.runtime.exact_sums import exact_sum

Binding = dict[tuple[str, str], Any]
Group = list[Binding] | None

FUNCTIONS = {
    Func.ADD: sqlvalues.add, Func.SUB: sqlvalues.sub, Func.MUL: sqlvalues.mul,
    Func.DIV: sqlvalues.div, Func.MOD: sqlvalues.mod, Func.NEG: sqlvalues.neg,
    Func.CONCAT: sqlvalues.concat, Func.COALESCE: sqlvalues.coalesce,
    Func.NULLIF: sqlvalues.nullif, Func.LOWER: sqlvalues.lower, Func.UPPER: sqlvalues.upper,
    Func.LENGTH: sqlvalues.length, Func.CAST_INTEGER: sqlvalues.cast_integer,
    Func.CAST_REAL: sqlvalues.cast_real, Func.CAST_TEXT: sqlvalues.text,
}


def value(expr: object, binding: Binding, params: dict[str, Any], group: Group = None) -> Any:
    """``expr`` on one row; an aggregate in it is computed over ``group`` (the row's group)."""
    if isinstance(expr, Attr):
        return binding[(expr.alias, expr.column)]
    if isinstance(expr, Param):
        return params[expr.name]
    if isinstance(expr, Literal):
        return expr.value
    if isinstance(expr, Epoch):
        return sqlvalues.epoch(value(expr.attr, binding, params), expr.width)
    if isinstance(expr, Call):
        if expr.func == Func.COALESCE:  # lazily, as SQL does
            for arg in expr.args:
                found = value(arg, binding, params, group)
                if found is not None:
                    return found
            return None
        return FUNCTIONS[expr.func](*(value(a, binding, params, group) for a in expr.args))
    if isinstance(expr, Case):
        for condition, result in expr.whens:
            if truth(condition, binding, params, group) is True:
                return value(result, binding, params, group)
        return None if expr.default is None else value(expr.default, binding, params, group)
    if isinstance(expr, Aggregate) and group is not None:
        return aggregate(expr, group, params)
    if isinstance(expr, Ratio):
        return sqlvalues.average(value(expr.numerator, binding, params),
                                 value(expr.denominator, binding, params))
    raise TypeError(f"cannot evaluate {expr!r} on one row")


def truth(condition: object, binding: Binding, params: dict[str, Any],
          group: Group = None) -> bool | None:
    """SQL's three-valued truth of a condition: True, False or None (unknown)."""
    if isinstance(condition, (Predicate, Compare)):
        return sqlvalues.compare(condition.op, value(condition.left, binding, params, group),
                                 value(condition.right, binding, params, group))
    if isinstance(condition, Like):
        found = sqlvalues.like(value(condition.arg, binding, params, group),
                               value(condition.pattern, binding, params, group))
        return _negated(found, condition.negated)
    if isinstance(condition, NullTest):
        return (value(condition.arg, binding, params, group) is None) != condition.negated
    if isinstance(condition, InList):
        left = value(condition.arg, binding, params, group)
        outcomes = [sqlvalues.compare("=", left, value(v, binding, params, group))
                    for v in condition.values]
        found = True if True in outcomes else None if None in outcomes else False
        return _negated(found, condition.negated)
    if isinstance(condition, Junction):
        outcomes = [truth(p, binding, params, group) for p in condition.parts]
        decisive = not condition.conjunctive  # OR: any True; AND: any False
        if decisive in outcomes:
            return decisive
        return None if None in outcomes else not decisive
    if isinstance(condition, Negation):
        return _negated(truth(condition.part, binding, params, group), True)
    raise TypeError(f"cannot evaluate the condition {condition!r}")


def _negated(found: bool | None, negated: bool) -> bool | None:
    return None if found is None else found != negated


def holds(pred: object, binding: Binding, params: dict[str, Any], group: Group = None) -> bool:
    """Is ``pred`` true? (Unknown, with a NULL on either side, is not.)"""
    return truth(pred, binding, params, group) is True


def row_limit(block: QueryBlock, params: dict[str, Any]) -> int | None:
    """The LIMIT of this execution: the literal, or the ``LIMIT <n>`` parameter's value,
    which must be an integer from 0 to the declared maximum."""
    if block.limit_param is None:
        return block.limit
    given = params[block.limit_param.name]
    if not isinstance(given, int) or isinstance(given, bool) or not 0 <= given <= (block.limit or 0):
        raise ParameterError(f"parameter <{block.limit_param.name}> is a LIMIT: an integer "
                             f"from 0 to its declared maximum {block.limit}; got {given!r}")
    return given


def finish(block: QueryBlock, bindings: list[Binding], params: dict[str, Any]) -> list[tuple]:
    """Aggregate, filter groups (HAVING), remove duplicates (DISTINCT), sort, skip (OFFSET),
    limit and project bound rows as ``block`` says."""
    limit = row_limit(block, params)
    if block.aggregates or block.group_by or block.having:
        groups: dict[tuple, list[Binding]] = {}
        for binding in bindings:
            key = tuple(value(g, binding, params) for g in block.group_by)
            groups.setdefault(key, []).append(binding)
        if not groups and not block.group_by:
            groups[()] = []  # an aggregate over no rows still answers one row
        kept = [members for members in groups.values()
                if all(holds(c, members[0] if members else {}, params, members)
                       for c in block.having)]
        rows = [_aggregate_row(block, members, params) for members in kept]
    else:
        rows = [_plain_row(block, binding, params) for binding in bindings]
    if block.distinct:
        seen: set[tuple] = set()
        unique = []
        for row in rows:
            key = tuple(_distinct_key(row[item.name]) for item in block.select)
            if key not in seen:
                seen.add(key)
                unique.append(row)
        rows = unique
    if block.order_by:
        rows = sort_rows(rows, block.order_by)
    if block.offset:
        rows = rows[block.offset:]
    if limit is not None:
        rows = rows[:limit]
    return [tuple(row[item.name] for item in block.select) for row in rows]


def finish_union(block: QueryBlock, parts: list[list[tuple]],
                 params: dict[str, Any]) -> list[tuple]:
    """``UNION [ALL]`` of the branches' rows, left to right (a UNION removes the duplicates
    of everything so far), then ORDER BY, OFFSET and LIMIT over the output columns."""
    limit = row_limit(block, params)
    rows: list[tuple] = []
    for (_, all_), part in zip(block.unions, parts):
        rows += part
        if not all_:
            seen: set[tuple] = set()
            unique = []
            for row in rows:
                key = tuple(_distinct_key(v) for v in row)
                if key not in seen:
                    seen.add(key)
                    unique.append(row)
            rows = unique
    names = [item.name for item in block.select]
    for item in reversed(block.order_by):
        at = names.index(item.expr.column)  # type: ignore[union-attr]
        rows = sorted(rows, key=lambda r: sqlvalues.sort_key(r[at]), reverse=item.desc)
    if block.offset:
        rows = rows[block.offset:]
    return rows if limit is None else rows[:limit]


def _distinct_key(found: Any) -> tuple:
    """Values DISTINCT keeps one of: NULLs together, 1 and 1.0 together (SQL's =)."""
    return sqlvalues.sort_key(found)


def _plain_row(block: QueryBlock, binding: Binding, params: dict[str, Any]) -> dict[Any, Any]:
    row: dict[Any, Any] = {}
    for item in block.select:
        row[item.name] = _scalar(item.expr, binding, params)
    for order in block.order_by:
        row[order.expr] = _scalar(order.expr, binding, params)
    return row


def _scalar(expr: Expr, binding: Binding, params: dict[str, Any]) -> Any:
    return value(expr, binding, params)


def _aggregate_row(block: QueryBlock, members: list[Binding], params: dict[str, Any]) -> dict:
    row: dict[Any, Any] = {}
    sample = members[0] if members else {}
    for expr in [i.expr for i in block.select] + [o.expr for o in block.order_by]:
        try:
            computed = value(expr, sample, params, members)
        except KeyError:  # a column of no row: an aggregate over nothing
            computed = None
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

