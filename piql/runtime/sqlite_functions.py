"""The SQL functions piql's SQLite connections register, so that the connection's triggers
add a SUM as piql's own write path does (``planner.triggers_sqlite``): an integer sum leaving
64 bits is refused (SQLite's ``+`` would turn it into a REAL), and a SUM of REAL values is
kept exactly in its hidden column (``runtime.exact_sums``), the visible one its rounding.

A Python exception inside a function reaches the caller only as SQLite's "user-defined
function raised exception": the refusal is kept in :class:`Refusals` for the store to raise
instead (``SQLiteStore.refused``), so the write fails with piql's own message and, one
statement undone by SQLite, changes nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from piql.planner.triggers_sqlite import EXACT_ADD, EXACT_REAL, SUM_ADD, SUM_ALL
from piql.runtime import exact_sums, sqlvalues
from piql.runtime.errors import ConstraintError, StoreOverflow

RAISED = "user-defined function raised exception"  # what sqlite3 says of any of them


@dataclass
class Refusals:
    """The last refusal a function of the connection raised, until the store takes it."""

    last: ConstraintError | None = field(default=None)

    def take(self, err: Exception) -> ConstraintError | None:
        """The refusal behind ``err``, if a function of piql's raised it."""
        found, self.last = self.last, None
        return found if found is not None and RAISED in str(err) else None


def register(connection: Any, refusals: Refusals) -> None:
    """Create piql's functions on ``connection`` (a ``sqlite3.Connection``; deterministic:
    SQLite may reuse a result for equal arguments)."""
    def refusing(function):
        def run(*args: Any) -> Any:
            try:
                return function(*args)
            except ConstraintError as err:
                refusals.last = err
                raise
        return run

    connection.create_function(SUM_ADD, 4, refusing(add), deterministic=True)
    connection.create_function(EXACT_ADD, 3, refusing(exact_add), deterministic=True)
    connection.create_function(EXACT_REAL, 2, refusing(exact_real), deterministic=True)
    connection.create_aggregate(SUM_ALL, 1, SumAll)


class SumAll:
    """SQL's SUM of integers, exact: the sum of the non-NULL values (NULL if none), an
    integer where it fits 64 bits, else its decimal text (SQLite returns no wider
    integer), which :func:`add` reads back. A REAL among them makes it a REAL, as SQL's."""

    def __init__(self) -> None:
        self.total: int | float | None = None

    def step(self, value: Any) -> None:
        if value is not None:
            self.total = value if self.total is None else self.total + value

    def finalize(self) -> int | float | str | None:
        total = self.total
        return str(total) if isinstance(total, int) and not sqlvalues.fits(total) else total


def add(total: Any, delta: Any, sign: int, what: str) -> Any:
    """``total + sign * delta`` (NULL as 0), as ``exact_sums.add_deltas`` adds; a delta
    given as text is an integer sum leaving 64 bits (:class:`SumAll`)."""
    if isinstance(delta, str):
        delta = int(delta)
    result = (total or 0) + sign * (delta or 0)
    if not sqlvalues.fits(result):
        raise StoreOverflow(f"the write would make {what} {result}, outside the store's "
                            "integer range (-2**63 .. 2**63-1), where SQL's SUM overflows too")
    return result


def exact_add(text: Any, delta: Any, sign: int) -> str:
    """The exact sum ``text`` holds plus ``sign * delta``, as text."""
    return exact_sums.show(exact_sums.parse(text) + sign * exact_sums.exact(delta or 0))


def exact_real(text: Any, what: str) -> float:
    """The exact sum ``text`` holds, rounded once to a double (refused beyond the largest)."""
    return exact_sums.rounded(exact_sums.parse(text), what)
