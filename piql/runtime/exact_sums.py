"""Exact sums of REAL values: the state behind a maintained SUM of a REAL column.

A double is a binary fraction, so a sum of doubles is exactly a rational whose
denominator is a power of two; Python's :class:`~fractions.Fraction` holds it without
loss, and ``float(Fraction)`` rounds it once, correctly, to the nearest double. A
maintained view keeps that rational as TEXT in a hidden column
(``ViewDef.exact_sums``) and the rounded value in the visible one, so adding and later
subtracting a huge value leaves the small ones intact (1e17 + 1.5 - 1e17 gives 1.5, as
the query's SQL on the remaining rows does) and the view equals its recomputation
exactly, whatever the order of the writes.

Its size is bounded: the numerator of a sum of doubles needs at most about 2,100 bits
plus the logarithm of the number of values; typical sums take a few dozen digits.

Recomputations (checks, builds, bulk loads) compute the same rationals from the base
rows: :func:`exact_groups` reads the view definition's rows ungrouped, in one statement
of the store, and sums each group's values exactly.
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

from piql import sqlgen
from piql.planner.views import ViewDef
from piql.query_block import Aggregate, SelectItem
from piql.runtime import sqlvalues
from piql.runtime.errors import ConstraintError
from piql.runtime.store import Store


def parse(text: Any) -> Fraction:
    """The exact sum a hidden column holds (NULL or 0 for a new row: zero)."""
    if text is None or text == 0:
        return Fraction(0)
    return Fraction(str(text))


def show(total: Fraction) -> str:
    """The hidden column's text for an exact sum: its exact decimal ("1.5", "-7"; a sum of
    doubles is a binary fraction, so its decimal ends), without trailing zeros. PostgreSQL's
    triggers keep the same text (``trim_scale(numeric)::text``, ``planner.triggers``), so a
    sum kept by either compares equal; a sum that is no binary fraction stays "p/q"."""
    numerator, denominator = total.numerator, total.denominator
    places = denominator.bit_length() - 1
    if denominator != 1 << places:
        return str(total)
    digits = str(abs(numerator) * 5 ** places).rjust(places + 1, "0")
    whole, fraction = digits[:len(digits) - places], digits[len(digits) - places:].rstrip("0")
    return ("-" if numerator < 0 else "") + whole + ("." + fraction if fraction else "")


def exact(value: Any) -> Fraction:
    """A SUM argument as the exact number SQL's arithmetic reads from it."""
    number = value if isinstance(value, (int, float)) else sqlvalues.numeric(value)
    return Fraction(number)


def rounded(total: Fraction, where: str) -> float:
    """The exact sum rounded once to the nearest double; a sum beyond the largest double
    is refused (the store keeps no infinity)."""
    try:
        return float(total)
    except OverflowError:
        raise ConstraintError(f"the write would make {where} larger in magnitude than the "
                              "largest REAL (about 1.8e308), which the store cannot keep") \
            from None


def add_deltas(table: str, key: Mapping[str, Any], row: dict[str, Any],
               deltas: Mapping[str, Any], sums: Mapping[str, str] | None,
               hidden: Mapping[str, str] | None) -> None:
    """Add ``deltas`` to an aggregate view's ``row`` in place, as every store's
    ``Store.add`` does: a REAL SUM named in ``hidden`` exactly in its hidden column (the visible
    one rounded), any other column as a 64-bit integer sum (ConstraintError past it); a SUM
    whose counted column (``sums``) reaches zero becomes NULL."""
    hidden = hidden or {}
    for column, delta in deltas.items():
        if column in hidden:
            total = parse(row[hidden[column]]) + exact(delta)
            row[hidden[column]] = show(total)
            row[column] = rounded(total, f"{table}.{column}")
            continue
        row[column] = (row[column] or 0) + delta
        if not sqlvalues.fits(row[column]):
            raise ConstraintError(
                f"the write would make {table}.{column} {row[column]} for "
                f"({', '.join(f'{c}={v!r}' for c, v in key.items())}), outside the "
                "store's integer range (-2**63 .. 2**63-1), where SQL's SUM overflows too")
    for column, counted in (sums or {}).items():
        if row[counted] == 0:
            row[column] = None
            if column in hidden:
                row[hidden[column]] = None


def exact_sum(values: list[Any]) -> int | float | None:
    """SQL's SUM of ``values`` (no NULLs among them) computed exactly: an integer sum for
    integers, else the exact sum rounded once to a double; NULL for no values."""
    if not values:
        return None
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return sum(values)
    return float(sum(map(exact, values), Fraction(0)))


def exact_groups(store: Store, view: ViewDef) -> dict[tuple, dict[str, Fraction | None]]:
    """Each group of ``view``'s definition (keyed by its non-aggregate output values, in
    order) with the exact sum of every column of ``view.exact_sums`` (None: no non-NULL
    value, SQL's NULL), from the base rows read ungrouped in one statement."""
    block = view.definition
    plain = [i for i in block.select if not isinstance(i.expr, Aggregate)]
    summed = [(name, next(i.expr for i in block.select if i.name == name))
              for name, _ in view.exact_sums]
    arguments = tuple(SelectItem(f"_piql_arg{n}", agg.arg) for n, (_, agg) in enumerate(summed)
                      if isinstance(agg, Aggregate) and agg.arg is not None)
    assert len(arguments) == len(summed), view.name
    ungrouped = block.with_(select=tuple(plain) + arguments, group_by=(), order_by=(),
                            limit=None)
    groups: dict[tuple, dict[str, Fraction | None]] = {}
    distinct = {name: set() for name, agg in summed if isinstance(agg, Aggregate) and agg.distinct}
    width = len(plain)
    for row in store.sql(sqlgen.block_sql(ungrouped, store.dialect)):
        key = tuple(row[:width])
        totals = groups.setdefault(key, {name: None for name, _ in summed})
        for (name, _), value in zip(summed, row[width:]):
            if value is None:
                continue
            if name in distinct:
                if (key, value) in distinct[name]:
                    continue
                distinct[name].add((key, value))
            totals[name] = (totals[name] or Fraction(0)) + exact(value)
    return groups
