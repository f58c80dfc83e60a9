"""Expression indexes Phase 0 reads: ``LOWER(col)`` and ``UPPER(col)`` of a text column.

A declared ``CREATE [UNIQUE] INDEX ... (lower(email))`` orders rows by the expression, so
an equality on the expression (``LOWER(email) = <e>``) is a key binding of that index,
just as ``email = <e>`` is of an index on ``email``. piql reads only expressions whose
value it computes exactly as both stores index them: ``LOWER`` and ``UPPER`` change ASCII
letters only (SQLite's functions; the PostgreSQL store writes them with ``translate``),
over a text column. Other expressions (``length(name)``, ``a + b``) leave the index
unread, with the catalog's note.
"""
from __future__ import annotations

import re

from piql import sql_types
from piql.catalog import Index, Table
from piql.planner.physical import IndexSpec, KeyExpression
from piql.query_block import Aggregate, Attr, Call, Compare, Func, aliases_in, walk

INDEXABLE = {Func.LOWER.value: Func.LOWER, Func.UPPER.value: Func.UPPER}
_CALL = re.compile(r'\s*(\w+)\s*\(\s*"?([^"()]+?)"?\s*\)\s*')


def key_expression(table: Table, alias: str, expr: object) -> KeyExpression | None:
    """``expr`` as an indexable expression of one of ``alias``'s text columns."""
    if not isinstance(expr, Call) or expr.func not in INDEXABLE.values() \
            or len(expr.args) != 1:
        return None
    arg = expr.args[0]
    if not isinstance(arg, Attr) or arg.alias != alias:
        return None
    column = table.column(arg.column)
    if column is None or sql_types.family(column.type) is not sql_types.TypeFamily.TEXT:
        return None
    return KeyExpression(expr.func, column.name)


def declared_parts(table: Table, index: Index) -> tuple[KeyExpression, ...] | None:
    """The expressions of a declared B-tree expression index over all rows, when Phase 0
    can read every one of them; else None."""
    if index.predicate is not None or index.method != "btree" or not index.expressions:
        return None
    found = []
    for part in index.expressions:
        match = _CALL.fullmatch(part.sql)
        func = INDEXABLE.get(match.group(1).upper()) if match else None
        column = table.column(match.group(2)) if match else None
        if func is None or column is None or len(part.columns) != 1 \
                or sql_types.family(column.type) is not sql_types.TypeFamily.TEXT:
            return None
        found.append(KeyExpression(func, column.name))
    return tuple(found)


def declared_spec(table: Table, declared: Index) -> IndexSpec | None:
    """A declared index as Phase 0 reads it: a B-tree over every row, on columns or on
    expressions it can compute (see above); else None (partial, of
    another method, or on other expressions)."""
    if declared.plain:
        return IndexSpec(table.name, declared.columns, declared.name, declared=True)
    parts = declared_parts(table, declared)
    if parts is None:
        return None
    columns = list(declared.columns)
    for expression, part in zip(declared.expressions, parts):
        columns[expression.position] = str(part)
    return IndexSpec(table.name, tuple(columns), declared.name, declared=True,
                     expressions=parts, unique=declared.unique)


def expression_equality(table: Table, alias: str,
                        condition: object) -> tuple[KeyExpression, object] | None:
    """``LOWER(alias.c) = value`` (either side; the value known before the access: computed
    from parameters, literals and other relations' columns, ``LOWER(<e>)`` say) as a key
    binding of the expression."""
    if not isinstance(condition, Compare) or condition.op != "=":
        return None
    for side, other in ((condition.left, condition.right), (condition.right, condition.left)):
        found = key_expression(table, alias, side)
        known = alias not in aliases_in(other) and not any(
            isinstance(node, Aggregate) for node in walk(other))
        if found is not None and known:
            return found, other
    return None
