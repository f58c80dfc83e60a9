"""The SQL type families piql tells apart, listed once.

A column's declared type (``BIGINT``, ``VARCHAR(255)``, ``NUMERIC(10, 2)``) belongs to a
family, which says what Python values a column of it holds (:func:`fits`), how a value
written as text is read (CSV files, command-line parameters), how engines type it
(Arrow), and what a SUM over it is.

REAL and DECIMAL both hold numbers with a fraction; they differ in how SQL stores them:
REAL (binary floating point, SQLite's REAL affinity) keeps every value as a float,
DECIMAL (exact numerics, SQLite's NUMERIC affinity) keeps an integral value as an integer.
"""
from __future__ import annotations

import hashlib
from enum import StrEnum
from functools import lru_cache
from typing import Any


class TypeFamily(StrEnum):
    INTEGER = "integer"
    REAL = "real"
    DECIMAL = "decimal"
    TEXT = "text"
    BOOLEAN = "boolean"
    OTHER = "other"  # dates, blobs, ANY, types piql does not know: values kept as given


_NAMES: dict[TypeFamily, tuple[str, ...]] = {
    TypeFamily.INTEGER: ("INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT"),
    TypeFamily.REAL: ("DOUBLE", "FLOAT", "REAL"),
    TypeFamily.DECIMAL: ("DECIMAL", "NUMERIC"),
    TypeFamily.TEXT: ("VARCHAR", "TEXT", "CHAR", "CITEXT", "STRING", "CLOB"),
    TypeFamily.BOOLEAN: ("BOOLEAN",),
}
_FAMILY_OF = {name: kind for kind, names in _NAMES.items() for name in names}

INTEGER_TYPES = _NAMES[TypeFamily.INTEGER]
# Types whose values may have a fraction (a float or an integer fits).
FRACTIONAL_TYPES = _NAMES[TypeFamily.REAL] + _NAMES[TypeFamily.DECIMAL]


def base_name(declared: str) -> str:
    """The type's name without its length or precision: ``VARCHAR(255)`` is ``VARCHAR``."""
    return declared.upper().split("(")[0].strip()


@lru_cache(maxsize=1024)
def family(declared: str) -> TypeFamily:
    """The family of a declared type (OTHER for a type piql does not know); remembered,
    as every written value is checked against its column's type."""
    return _FAMILY_OF.get(base_name(declared), TypeFamily.OTHER)


def fits(declared: str, value: Any) -> bool:
    """Does ``value`` fit a column declared ``declared``? (NULL always does; piql checks
    NOT NULL itself.)"""
    return fits_family(family(declared), value)


def fits_family(kind: TypeFamily, value: Any) -> bool:
    """Does ``value`` fit a column of the family ``kind``? (:func:`fits` with the family
    already known.)"""
    if value is None:
        return True
    if kind is TypeFamily.INTEGER:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind in (TypeFamily.REAL, TypeFamily.DECIMAL):
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is TypeFamily.TEXT:
        return isinstance(value, str)
    if kind is TypeFamily.BOOLEAN:
        return isinstance(value, (bool, int))
    return True


def from_text(declared: str, text: str) -> Any:
    """A value written as text (a CSV field, a command-line parameter) as a value of the
    type: an int for integers, a float for numbers with a fraction, else the text itself.
    Raises ValueError when the text is not such a number."""
    kind = family(declared)
    if kind is TypeFamily.INTEGER:
        return int(text)
    if kind in (TypeFamily.REAL, TypeFamily.DECIMAL):
        return float(text)
    return text


POSTGRES_NAME_BYTES = 63  # PostgreSQL truncates longer identifiers


def postgres_type(declared: str) -> str:
    """The PostgreSQL type holding what SQLite holds for a column declared ``declared``."""
    kind = family(declared)
    if kind in (TypeFamily.INTEGER, TypeFamily.BOOLEAN):
        return "BIGINT"
    if kind is TypeFamily.REAL:
        return "DOUBLE PRECISION"
    if kind is TypeFamily.DECIMAL:
        return "NUMERIC"
    if base_name(declared) in ("BLOB", "BYTEA"):
        return "BYTEA"
    return 'TEXT COLLATE "C"'


def short_name(name: str) -> str:
    """An index name PostgreSQL keeps whole: a long one cut, with a hash keeping it unique."""
    if len(name.encode()) <= POSTGRES_NAME_BYTES:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:10]
    cut = name.encode()[:POSTGRES_NAME_BYTES - 11].decode(errors="ignore")
    return f"{cut}_{digest}"
