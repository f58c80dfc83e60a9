"""Row bounds from keys, unique keys and CARDINALITY constraints.

``max_rows(table, bound)`` is the most rows of ``table`` that can share one
combination of values of the ``bound`` columns: 1 once the primary key or a
unique key is bound, and ``K`` times the bound after binding ``col`` for every
constraint ``CARDINALITY (col, K) PER (per)`` whose ``per`` columns are
already bound.

NULLs: ``bound`` columns are fixed by ``=`` (to a parameter, a literal or a
column), which never matches NULL. That is what lets ``UNIQUE (email)`` bound
``email = <e>`` to one row although SQL lets many rows hold a NULL email, and
what piql's store checks CARDINALITY constraints with. A column fixed by
``IS NULL`` goes in ``null_bound`` instead: it satisfies a unique key only when
the key treats NULLs as equal (``UNIQUE NULLS NOT DISTINCT``), and never the
``PER`` columns of a CARDINALITY constraint. (NOT NULL is not used: piql's
store does not enforce it.) The primary key is never NULL, so binding it
finds at most one row either way.
"""
from __future__ import annotations

from functools import lru_cache

from piql.catalog import Table


def max_rows(table: Table, bound: frozenset[str],
             null_bound: frozenset[str] = frozenset()) -> int | None:
    """Worst-case rows with fixed values of ``bound`` (by ``=``) and ``null_bound``
    (by ``IS NULL``); None when nothing bounds them."""
    return _max_rows(table, frozenset(c.lower() for c in bound),
                     frozenset(c.lower() for c in null_bound))


@lru_cache(maxsize=4096)
def _max_rows(table: Table, bound: frozenset[str], null_bound: frozenset[str]) -> int | None:
    fixed = bound | null_bound
    if {c.lower() for c in table.primary_key} <= fixed:
        return 1
    for key in table.unique_keys:
        columns = {c.lower() for c in key.columns}
        if columns <= bound or (columns <= fixed and not key.nulls_distinct):
            return 1
    if table.row_limit is not None:
        return table.row_limit
    best: int | None = None
    for constraint in table.cardinalities:
        column = constraint.column.lower()
        if column in fixed or not {c.lower() for c in constraint.per} <= bound:
            continue
        rest = _max_rows(table, bound | {column}, null_bound)
        if rest is not None and (best is None or constraint.limit * rest < best):
            best = constraint.limit * rest
    return best
