"""The SQL type families, listed once (piql/sql_types.py)."""
from __future__ import annotations

import pytest

from piql.sql_types import TypeFamily, family, fits, from_text


@pytest.mark.parametrize("declared, expected", [
    ("INT", TypeFamily.INTEGER), ("integer", TypeFamily.INTEGER), ("BIGINT", TypeFamily.INTEGER),
    ("SMALLINT", TypeFamily.INTEGER), ("TINYINT", TypeFamily.INTEGER),
    ("DOUBLE", TypeFamily.REAL), ("FLOAT", TypeFamily.REAL), ("REAL", TypeFamily.REAL),
    ("DECIMAL(10, 2)", TypeFamily.DECIMAL), ("NUMERIC", TypeFamily.DECIMAL),
    ("NUMERIC (10, 2)", TypeFamily.DECIMAL),
    ("VARCHAR(255)", TypeFamily.TEXT), ("TEXT", TypeFamily.TEXT), ("CHAR", TypeFamily.TEXT),
    ("CITEXT", TypeFamily.TEXT), ("STRING", TypeFamily.TEXT), ("CLOB", TypeFamily.TEXT),
    ("BOOLEAN", TypeFamily.BOOLEAN),
    ("TIMESTAMP", TypeFamily.OTHER), ("ANY", TypeFamily.OTHER), ("", TypeFamily.OTHER),
])
def test_every_declared_type_has_its_family(declared, expected):
    assert family(declared) is expected


@pytest.mark.parametrize("declared, value, expected", [
    ("TINYINT", 3, True), ("BIGINT", 3.0, False), ("BIGINT", True, False), ("BIGINT", "3", False),
    ("REAL", 3, True), ("NUMERIC", 2.5, True), ("DECIMAL", False, False), ("NUMERIC", "2.5", False),
    ("VARCHAR(3)", "abc", True), ("CITEXT", 3, False), ("BOOLEAN", True, True),
    ("BOOLEAN", 1, True), ("DATE", "2024-01-01", True), ("DATE", 5, True),
    ("BIGINT", None, True), ("VARCHAR", None, True),
])
def test_a_value_fits_its_column_as_sql_stores_it(declared, value, expected):
    assert fits(declared, value) is expected


def test_text_is_read_as_a_value_of_the_family():
    assert from_text("TINYINT", "7") == 7 and isinstance(from_text("TINYINT", "7"), int)
    assert from_text("NUMERIC", "2.5") == 2.5
    assert from_text("REAL", "3") == 3.0 and isinstance(from_text("REAL", "3"), float)
    assert from_text("VARCHAR", "7") == "7"
    assert from_text("", "7") == "7"
    with pytest.raises(ValueError):
        from_text("BIGINT", "seven")
