"""The SQL functions piql's SQLite connections register for their triggers' SUMs: they add
as piql's write path does (``exact_sums.add_deltas``), and a refusal inside a statement
reaches the caller as piql's own error."""
from __future__ import annotations

from fractions import Fraction

import pytest

from piql.runtime import exact_sums
from piql.runtime.errors import StoreOverflow
from piql.runtime.sqlite_functions import add, exact_add, exact_real
from piql.runtime.sqlite_store import SQLiteStore
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN


def test_integer_sums_are_refused_past_64_bits_not_turned_real():
    assert add(None, 5, 1, "v.s") == 5 and add(7, None, -1, "v.s") == 7
    assert add(INT64_MAX - 1, 1, 1, "v.s") == INT64_MAX
    with pytest.raises(StoreOverflow, match=r"v\.s 9223372036854775808, outside"):
        add(INT64_MAX, 1, 1, "v.s")
    with pytest.raises(StoreOverflow):  # -(-2**63) leaves the range: no REAL on the way
        add(0, INT64_MIN, -1, "v.s")


def test_real_sums_are_exact_and_rounded_once():
    text = exact_add(exact_add(exact_add(None, 1e17, 1), 1.5, 1), 1e17, -1)
    assert text == "1.5" == exact_sums.show(Fraction(3, 2))
    assert exact_real(text, "v.w") == 1.5
    tenths = exact_add(exact_add(None, 0.1, 1), 0.2, 1)
    assert tenths == exact_sums.show(Fraction(0.1) + Fraction(0.2))


def test_a_refusal_in_a_statement_is_raised_as_piqls_and_changes_nothing():
    store = SQLiteStore(":memory:")
    store.connection.execute("CREATE TABLE t (v INTEGER)")
    store.connection.execute("INSERT INTO t VALUES (?)", (INT64_MAX,))
    with pytest.raises(StoreOverflow, match="t.v .* outside the store's integer range"):
        store.sql("UPDATE t SET v = piql_sum(v, 1, 1, 't.v')")
    assert store.sql("SELECT v FROM t") == [(INT64_MAX,)]
    store.close()
