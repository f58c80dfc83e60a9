"""Row bounds from keys and CARDINALITY constraints.

``max_rows(table, bound)`` is the most rows of ``table`` that can share one
combination of values of the ``bound`` columns: 1 once the primary key is
bound, and ``K`` times the bound after binding ``col`` for every constraint
``CARDINALITY (col, K) PER (per)`` whose ``per`` columns are already bound.
"""
from __future__ import annotations

from functools import lru_cache

from piql.catalog import Table


def max_rows(table: Table, bound: frozenset[str]) -> int | None:
    """Worst-case rows with fixed values of ``bound``; None when nothing bounds them."""
    return _max_rows(table, frozenset(c.lower() for c in bound))


@lru_cache(maxsize=4096)
def _max_rows(table: Table, bound: frozenset[str]) -> int | None:
    if {c.lower() for c in table.primary_key} <= bound:
        return 1
    if table.row_limit is not None:
        return table.row_limit
    best: int | None = None
    for constraint in table.cardinalities:
        column = constraint.column.lower()
        if column in bound or not {c.lower() for c in constraint.per} <= bound:
            continue
        rest = _max_rows(table, bound | {column})
        if rest is not None and (best is None or constraint.limit * rest < best):
            best = constraint.limit * rest
    return best
