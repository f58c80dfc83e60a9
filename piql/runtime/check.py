"""Consistency check (paper §7): recompute every maintained view from base data and diff.

Maintained views (IMVs and staging views) are recomputed with their
definition's SQL on the base tables and compared with what the delta rules
left in the store, as multisets of rows; ``repair`` replaces a view that
differs with its recomputation.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from sqlglot import exp

from piql import sqlgen
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import Aggregate
from piql.runtime.exact_sums import exact_groups, rounded, show
from piql.runtime.store import Store


@dataclass(frozen=True)
class ViewCheck:
    view: str
    missing: tuple[tuple, ...]  # rows the recomputation has and the store lacks
    extra: tuple[tuple, ...]  # rows the store has and the recomputation lacks
    repaired: bool = False

    @property
    def consistent(self) -> bool:
        return not self.missing and not self.extra


@dataclass(frozen=True)
class CheckReport:
    views: tuple[ViewCheck, ...]

    @property
    def consistent(self) -> bool:
        return all(v.consistent for v in self.views)

    def __str__(self) -> str:
        lines = []
        for check in self.views:
            state = "ok" if check.consistent else (
                f"{len(check.missing)} missing, {len(check.extra)} extra rows"
                + (" (repaired)" if check.repaired else ""))
            lines.append(f"{check.view}: {state}")
        return "\n".join(lines)


def recompute(store: Store, view: ViewDef, partition_of: Callable[[ViewDef, dict], int]) -> list[tuple]:
    """The rows ``view`` must hold, computed from base tables with its definition."""
    return stored_rows(store, view, _exact_rows(store, view), partition_of)


def stored_rows(store: Store, view: ViewDef, rows: Iterable[tuple],
                partition_of: Callable[[ViewDef, dict], int]) -> list[tuple]:
    """Rows of ``view``'s definition (by the store or an engine) as the store keeps them:
    without the empty group of a global aggregate, with the staging partition (piql's own
    hash, as on write) and the ``_all`` column, in the store's column order, as plain
    Python values."""
    names = [i.name for i in view.definition.select]
    shape = store.shapes[view.name]
    plain = [i.name for i in view.definition.select if not isinstance(i.expr, Aggregate)]
    groups = exact_groups(store, view) if view.exact_sums else {}
    result = []
    for row in rows:
        values: dict[str, Any] = dict(zip(names, row))
        if empty_group(view, values):
            continue
        for column, hidden in view.exact_sums:  # the sums the rules keep, exactly
            total = groups.get(tuple(values[c] for c in plain), {}).get(column)
            values[column] = None if total is None else rounded(total, f"{view.name}.{column}")
            values[hidden] = None if total is None else show(total)
        result.append(plain_row(tuple(stored_values(view, values, partition_of)[c]
                                      for c in shape.columns)))
    return result


def stored_values(view: ViewDef, values: dict[str, Any],
                  partition_of: Callable[[ViewDef, dict], int]) -> dict[str, Any]:
    """A recomputed row's values with the columns only the store keeps: the staging
    partition (piql's own hash, as on write) and ``_all``."""
    if view.kind == ViewKind.STAGING:
        values["partition"] = partition_of(view, values)
    values.setdefault("_all", 0)
    return values


def plain_row(row: tuple) -> tuple:
    """Engines return numpy scalars at times; the store wants Python values."""
    return tuple(value.item() if hasattr(value, "item") else value for value in row)


def _exact_rows(store: Store, view: ViewDef) -> list[tuple]:
    """The rows of ``view``'s definition by the store, with exact integer sums.

    SQLite's SUM fails with "integer overflow" as soon as a partial sum leaves 64 bits,
    in whatever order it scans, although the sum itself (what maintenance keeps, and
    what SQL means) may fit. So each integer SUM(x) is computed as SUM(x / 2**32) and
    SUM(x % 2**32), whose partial sums cannot overflow, and combined in Python (the
    same on any store: both halves are integer arithmetic that truncates)."""
    query = sqlgen.select(view.definition, paper=False)
    types = {c.name: c.type.upper() for c in view.columns}
    expressions: list[exp.Expression] = []
    split: list[bool] = []
    for item, node in zip(view.definition.select, query.expressions):
        inner = node.this if isinstance(node, exp.Alias) else node
        exact = isinstance(inner, exp.Sum) and types.get(item.name) == "BIGINT"
        split.append(exact)
        if exact:
            high = exp.Div(this=inner.this.copy(), expression=exp.Literal.number(_HALF),
                           typed=True)  # SQLite's integer division, truncating
            low = exp.Mod(this=inner.this.copy(), expression=exp.Literal.number(_HALF))
            expressions += [exp.Sum(this=high), exp.Sum(this=low)]
        else:
            expressions.append(node)
    if not any(split):
        return store.sql(sqlgen.render(query, store.dialect))
    query.set("expressions", expressions)
    result = []
    for row in store.sql(sqlgen.render(query, store.dialect)):
        values, position = [], 0
        for exact in split:
            if exact:
                high, low = row[position], row[position + 1]
                values.append(None if high is None else high * _HALF + low)
                position += 2
            else:
                values.append(row[position])
                position += 1
        result.append(tuple(values))
    return result


_HALF = 2 ** 32


def empty_group(view: ViewDef, values: dict[str, Any]) -> bool:
    """Is this recomputed row the one row SQL gives for a global aggregate (no GROUP BY) of
    no rows? Maintenance keeps no row for an empty group, and a query answers it as SQL
    does (COUNT 0, SUM NULL) without one, so the recomputation leaves it out too."""
    if view.key or not view.aggregate:
        return False
    count = next((c.name for c in view.columns if c.source == Aggregate("COUNT", None)), None)
    return count is not None and values.get(count) == 0


class Differ(Protocol):
    """Checks and repairs a view where its data is (an engine's executors): only the
    differences come back."""

    def differences(self, view: ViewDef) -> tuple[tuple, tuple]:
        """(missing, extra) rows of the stored ``view``, as :func:`differences` says."""

    def rebuild(self, view: ViewDef) -> int:
        """Replace ``view``'s rows by its recomputation (its epochs marked)."""


def check_views(store: Store, views: tuple[ViewDef, ...],
                recomputed: Callable[[ViewDef], list[tuple]], repair: bool = False,
                repaired: Callable[[ViewDef, list[tuple]], None] | None = None,
                differ: Differ | None = None) -> CheckReport:
    """Diff every maintained view against ``recomputed(view)`` (by SQLite or an engine), or
    with ``differ`` where it can (a view without exact sums, which the store computes).

    Everything is read in one transaction of the store, so the recomputation, the stored
    rows and the repair see the same snapshot whatever other processes write meanwhile: a
    read transaction for a check, the write lock for a repair (writers wait for it; an
    engine's tasks read the transaction's exported snapshot where the store has them).
    ``repaired`` is told of every view replaced, with its new rows."""
    checks = []
    with store.transaction() if repair else store.snapshot():
        for view in views:
            if view.kind not in (ViewKind.IMV, ViewKind.STAGING):
                continue
            if differ is not None and not view.exact_sums:
                missing, extra = differ.differences(view)
                if repair and (missing or extra):
                    differ.rebuild(view)
                checks.append(ViewCheck(view.name, missing, extra, repair and bool(missing or extra)))
                continue
            expected = recomputed(view)
            actual = store.all_rows(view.name)
            missing, extra = differences(expected, actual)
            fixed = False
            if repair and (missing or extra):
                store.replace_rows(view.name, expected)
                if repaired is not None:
                    repaired(view, expected)
                fixed = True
            checks.append(ViewCheck(view.name, missing, extra, fixed))
    return CheckReport(tuple(checks))


def differences(expected: list[tuple], actual: list[tuple]) -> tuple[tuple, tuple]:
    """The rows of ``expected`` that ``actual`` lacks and the rows it has too many, as
    multisets. Values compare exactly, except that a REAL may differ from the recomputed
    one by a relative 1e-12: a SUM the store does not keep exactly (of values of no
    declared type) adds rule by rule in another order than SQL. Sums of REAL columns are
    exact on both sides (``exact_sums``), and their hidden exact column compares exactly."""
    want, have = Counter(expected), Counter(actual)
    missing = list((want - have).elements())
    extra = list((have - want).elements())
    unmatched = []
    for row in missing:
        twin = next((i for i, other in enumerate(extra) if _close(row, other)), None)
        if twin is None:
            unmatched.append(row)
        else:
            extra.pop(twin)
    return tuple(unmatched), tuple(extra)


def _close(left: tuple, right: tuple) -> bool:
    return len(left) == len(right) and all(
        math.isclose(a, b, rel_tol=1e-12) if isinstance(a, float) and isinstance(b, float)
        else a == b and type(a) is type(b) for a, b in zip(left, right))
