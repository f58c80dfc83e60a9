"""Errors of a deployed application; each leaves the store unchanged."""
from __future__ import annotations

from piql.errors import InputError, PiqlError


class RuntimeErrorBase(PiqlError):
    """Base of errors raised while serving queries and writes."""


class ParameterError(RuntimeErrorBase):
    """A query was called with a missing, extra or mistyped parameter."""


class ConstraintError(RuntimeErrorBase):
    """A write would break a key or CARDINALITY constraint."""


def sum_overflow(view: str) -> ConstraintError:
    """The error of a view whose recomputed SUM leaves the 64-bit range (as SQL's would)."""
    return ConstraintError(f"a SUM of {view} leaves the store's integer range "
                           "(-2**63 .. 2**63-1), where SQL's SUM overflows too")


class StoreRefused(ConstraintError):
    """The database refused a write through a constraint of its own (the message is its);
    ``duplicate``: a unique key of the database's (the primary key) refused it."""

    def __init__(self, message: str, duplicate: bool = False) -> None:
        super().__init__(message)
        self.duplicate = duplicate


class StoreOverflow(ConstraintError):
    """An integer the database computed (a SUM) left its 64-bit range."""


class BoundExceeded(RuntimeErrorBase):
    """Strict mode: an execution read or wrote more tuples than its static bound."""


class DeploymentError(RuntimeErrorBase):
    """The store cannot host this plan (for instance it was deployed with another plan)."""


class StoreBusy(RuntimeErrorBase):
    """Another connection held the store's write lock longer than the deployment waits."""


class UnreadableDatabase(RuntimeErrorBase):
    """A database piql reads but does not keep (``piql lint --db``) could not be opened or
    read; the message is the database's."""


class DeploymentClosed(RuntimeErrorBase):
    """The deployment was closed; deploy (reopen) the store again to use it."""


class UnknownName(RuntimeErrorBase):
    """No such query, table or column."""


class UnboundedQuery(RuntimeErrorBase):
    """The query has no scale-independent plan, so piql refuses to run it."""


class DataFileError(InputError):
    """A file given to ``load`` cannot be read: missing, not UTF-8, a ragged row, a value
    not of its column's type, not Parquet. Names the file (and line and column)."""
