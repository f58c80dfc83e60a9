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


def test_the_delta_sum_is_exact_past_a_partial_sum_leaving_64_bits():
    """``piql_sum_all`` sums as SQL's SUM (exactly; NULL for no values; REAL with a REAL)
    where SQLite's SUM raises on a partial sum; a sum leaving 64 bits comes back as text,
    which ``piql_sum`` reads and judges with the view's current value."""
    store = SQLiteStore(":memory:")
    store.connection.execute("CREATE TABLE t (k INTEGER PRIMARY KEY, v)")
    store.connection.executemany("INSERT INTO t VALUES (?, ?)",
                                 [(1, INT64_MAX - 1), (2, 5), (3, -10), (4, None)])
    assert store.sql("SELECT piql_sum_all(v) FROM t") == [(INT64_MAX - 6,)]
    assert store.sql("SELECT piql_sum_all(v) FROM t WHERE k < 3") == [(str(INT64_MAX + 4),)]
    assert store.sql("SELECT piql_sum(-20, piql_sum_all(v), 1, 't.v') FROM t WHERE k < 3") \
        == [(INT64_MAX - 16,)]
    assert store.sql("SELECT piql_sum_all(v) FROM t WHERE k = 4") == [(None,)]
    assert store.sql("SELECT piql_sum_all(v) FROM t WHERE k > 4") == [(None,)]
    store.connection.execute("INSERT INTO t VALUES (5, 0.5)")
    assert store.sql("SELECT piql_sum_all(v) FROM t WHERE k > 2") == [(-9.5,)]
    with pytest.raises(StoreOverflow, match=r"t\.v 9223372036854775811, outside"):
        store.sql("SELECT piql_sum(0, piql_sum_all(v), 1, 't.v') FROM t WHERE k < 3")
    store.close()
