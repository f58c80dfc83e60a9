"""SQL semantics for the values piql computes in Python, and the range the store keeps.

Maintenance, query finishing and refresh evaluate expressions in Python; their answers
must equal the query's own SQL on the store (SQLite), not Python's rules:

- ``%`` takes the sign of the dividend (``-7 % 3`` is -1, Python says 2); a REAL operand
  is cast to INTEGER first and the remainder is REAL; a zero divisor gives NULL.
- integer ``/`` truncates toward zero (``-7 / 2`` is -3); a zero divisor gives NULL.
- integer ``+`` and ``-`` that leave the signed 64-bit range give a REAL, as in SQLite.
- NULL propagates through arithmetic, and a comparison with NULL is unknown (None), which
  a WHERE clause treats as false.
- ORDER BY puts NULL first ascending (last descending), then numbers, text, blobs.

The store holds signed 64-bit integers: :func:`fits` says whether a Python int does.
"""
from __future__ import annotations

import functools
import math
import operator
import re
import string
from typing import Any

INT64_MIN = -(2 ** 63)
INT64_MAX = 2 ** 63 - 1

_COMPARE = {"=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt,
            ">=": operator.ge, "<>": operator.ne, "!=": operator.ne}


def fits(value: Any) -> bool:
    """Is ``value`` storable as it is? Integers must fit in signed 64 bits."""
    if isinstance(value, int) and not isinstance(value, bool):
        return INT64_MIN <= value <= INT64_MAX
    return True


def unstorable(value: Any) -> str | None:
    """Why the store cannot keep ``value`` faithfully, or None when it can: integers
    outside signed 64 bits do not fit, and SQLite keeps a NaN as NULL (and an infinity
    turns a SUM into NaN, which no delete undoes)."""
    if not fits(value):
        return "is outside the store's integer range (-2**63 .. 2**63-1)"
    if isinstance(value, float) and not math.isfinite(value):
        return "is not a finite number (piql stores only finite REAL values)"
    return None


_NUMERIC_PREFIX = re.compile(r"\s*([+-]?(?:\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?)")


def _numeric(value: Any) -> int | float:
    """The number SQLite's arithmetic reads from an operand: text by its numeric prefix
    (0 when it has none), blobs as text."""
    if isinstance(value, (int, float)):
        return value
    text = value.decode(errors="replace") if isinstance(value, (bytes, bytearray)) else str(value)
    found = _NUMERIC_PREFIX.match(text)
    if found is None:
        return 0
    if found.group(2) is not None or found.group(3) is not None:
        return float(found.group(1))
    number = int(found.group(1))
    return _integral(number)


def numeric(value: Any) -> int | float:
    """The number SQL's arithmetic (and SUM) reads from a value: text by its numeric
    prefix, 0 when it has none."""
    return _numeric(value)


def _integer(value: Any) -> int:
    """SQLite's CAST(value AS INTEGER) of a number: truncation, saturating at the range."""
    value = _numeric(value)
    if isinstance(value, int):
        return int(value)
    if math.isnan(value):
        return 0
    if value >= 2.0 ** 63:
        return INT64_MAX
    if value < -(2.0 ** 63):
        return INT64_MIN
    return int(value)  # int() of a float truncates toward zero


def _integral(result: int) -> int | float:
    """An integer result, or the REAL SQLite gives when it leaves the 64-bit range."""
    return result if INT64_MIN <= result <= INT64_MAX else float(result)


def mod(left: Any, right: Any) -> int | float | None:
    """``left % right`` as SQL computes it."""
    if left is None or right is None:
        return None
    dividend, divisor = _integer(left), _integer(right)
    if divisor == 0:
        return None
    remainder = abs(dividend) % abs(divisor)
    if dividend < 0:
        remainder = -remainder
    real = isinstance(_numeric(left), float) or isinstance(_numeric(right), float)
    return float(remainder) if real else remainder


def div(left: Any, right: Any) -> int | float | None:
    """``left / right`` as SQL computes it: integer division truncates toward zero."""
    if left is None or right is None:
        return None
    left, right = _numeric(left), _numeric(right)
    if isinstance(left, float) or isinstance(right, float):
        return None if right == 0 else left / right
    if right == 0:
        return None
    quotient = abs(left) // abs(right)
    return _integral(quotient if (left < 0) == (right < 0) else -quotient)


def add(left: Any, right: Any) -> int | float | None:
    if left is None or right is None:
        return None
    result = _numeric(left) + _numeric(right)
    return _integral(result) if isinstance(result, int) else result


def sub(left: Any, right: Any) -> int | float | None:
    if left is None or right is None:
        return None
    result = _numeric(left) - _numeric(right)
    return _integral(result) if isinstance(result, int) else result


def epoch(value: Any, width: int) -> int | float | None:
    """The time-window epoch ``value - value % width`` (§3.3) as SQL computes it: a
    negative value's epoch is the multiple of ``width`` at or above it (-3 is in epoch 0,
    -13 in epoch -10). Never leaves the 64-bit range for an integer in it."""
    return sub(value, mod(value, width))


def epoch_bounds(value: int, width: int) -> tuple[int, int]:
    """The least and greatest integer whose :func:`epoch` is ``value`` (a multiple of
    ``width``), within the 64-bit range. Truncation makes epoch 0 twice as wide as the
    others: it holds -(width - 1) .. width - 1; a negative epoch holds the ``width``
    integers at and below it."""
    low = value - (width - 1) if value <= 0 else value
    high = value + (width - 1) if value >= 0 else value
    return max(low, INT64_MIN), min(high, INT64_MAX)


def compare(op: str, left: Any, right: Any) -> bool | None:
    """``left op right``; None (unknown) when either side is NULL."""
    if left is None or right is None:
        return None
    return _COMPARE[op](sort_key(left), sort_key(right))


def sort_key(value: Any) -> tuple:
    """SQLite's order of values: NULL, then numbers (INTEGER and REAL together), then
    text, then blobs."""
    if value is None:
        return (0, 0)
    if isinstance(value, (int, float)):
        return (1, value)
    if isinstance(value, str):
        return (2, value)
    return (3, bytes(value))


def average(total: Any, count: Any) -> float | None:
    """AVG from its SUM and COUNT state: REAL division, NULL for no values."""
    if total is None or not count:
        return None
    return total / count


def mul(left: Any, right: Any) -> int | float | None:
    """``left * right``: an integer product that leaves 64 bits is a REAL, as in SQLite."""
    if left is None or right is None:
        return None
    result = _numeric(left) * _numeric(right)
    return _integral(result) if isinstance(result, int) else result


def neg(value: Any) -> int | float | None:
    """``-value`` (``-(-2**63)`` leaves 64 bits: a REAL)."""
    if value is None:
        return None
    result = -_numeric(value)
    return _integral(result) if isinstance(result, int) else result


def text(value: Any) -> str | None:
    """SQLite's text of a value (CAST AS TEXT, ``||``, LOWER of a number): a REAL with up
    to 15 significant digits and always a decimal point or exponent."""
    if value is None:
        return None
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "Inf" if value > 0 else "-Inf"
        shown = "%.15g" % value
        mantissa, _, exponent = shown.partition("e")
        if "." not in mantissa:
            mantissa += ".0"
        return mantissa + (f"e{exponent}" if exponent else "")
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode(errors="replace")
    return str(value)


def concat(left: Any, right: Any) -> str | None:
    if left is None or right is None:
        return None
    return text(left) + text(right)  # type: ignore[operator]


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_ASCII_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def lower(value: Any) -> str | None:
    """SQLite's LOWER: ASCII letters only (``'É'`` stays)."""
    return None if value is None else text(value).translate(_ASCII_LOWER)  # type: ignore[union-attr]


def upper(value: Any) -> str | None:
    return None if value is None else text(value).translate(_ASCII_UPPER)  # type: ignore[union-attr]


def length(value: Any) -> int | None:
    """Characters of a text, bytes of a blob, characters of a number's text."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray)):
        return len(value)
    return len(text(value))  # type: ignore[arg-type]


def cast_integer(value: Any) -> int | None:
    return None if value is None else _integer(value)


def cast_real(value: Any) -> float | None:
    return None if value is None else float(_numeric(value))


def coalesce(*values: Any) -> Any:
    return next((v for v in values if v is not None), None)


def nullif(left: Any, right: Any) -> Any:
    return None if compare("=", left, right) is True else left


@functools.lru_cache(maxsize=256)
def _like_pattern(pattern: str) -> re.Pattern[str]:
    parts = []
    for char in pattern:
        parts.append(".*" if char == "%" else "." if char == "_" else re.escape(char))
    return re.compile("".join(parts), re.DOTALL)


def like(value: Any, pattern: Any) -> bool | None:
    """``value LIKE pattern`` as PostgreSQL and standard SQL read it, and SQLite with
    ``PRAGMA case_sensitive_like = ON`` (which piql's SQLite store sets): ``%`` any text,
    ``_`` one character, every other character itself (case-sensitive); NULL when either
    side is."""
    if value is None or pattern is None:
        return None
    return _like_pattern(text(pattern)).fullmatch(text(value)) is not None  # type: ignore[arg-type]
