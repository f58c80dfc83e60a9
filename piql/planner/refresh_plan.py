"""The refresh plan of an SI-3 periodic view: every decision a refresh executes, made once.

Phase 4 (``planner.periodic``) builds one :class:`RefreshPlan` per periodic view. A
refresh (``runtime.refresh``) reads, for every partition of the staging view, the share
:attr:`ShareLayout.read` describes (bound to the partition, and for a time window to the
refreshed epoch's range), merges the shares as one table laid out as
:class:`ShareLayout` says, runs :attr:`RefreshPlan.merge` on it (binding the epoch),
ranks the result, and replaces the view's rows. It calls nothing of the planner.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from piql.interval import Interval
from piql.query_block import QueryBlock

# The parameters of one partition's share: the partition, and a time window's epoch range.
PARTITION_PARAM = "_piql_partition"
LOW_PARAM = "_piql_low"
HIGH_PARAM = "_piql_high"


class WindowKind(StrEnum):
    """A tuple window (the n first tuples by a TEMPORAL column, §6.2) or a time window (the
    tuples of one epoch ``ts - ts % W``, §3.3)."""

    TUPLE = "tuple"
    TIME = "time"


@dataclass(frozen=True)
class StagingLayout:
    """How a staging view keeps its rows: hash-partitioned on ``partitioned_by`` (the
    relation's primary key) into ``partitions``, sorted by ``order_by`` (the TEMPORAL
    column) inside each partition."""

    partitioned_by: tuple[str, ...]
    order_by: tuple[str, ...]
    partitions: int


@dataclass(frozen=True)
class ShareLayout:
    """What one partition contributes to a refresh, and the merged shares as one table.

    ``read`` is the partition's bounded read: its staged tuples in the TEMPORAL order it is
    clustered by (the first n of a tuple window; the tuples of the refreshed epoch of a
    time window, between the parameters :data:`LOW_PARAM` and :data:`HIGH_PARAM`), with
    the bounded lookups of the relations the window joins; :data:`PARTITION_PARAM` names
    the partition. Its output is ``columns``: the staging view's columns, then each joined
    relation's key and the columns the query reads of it (``alias__column``), of SQL
    ``types``. ``keys`` lists, per relation the read joins (the staged one first), the
    output positions of its key and of the keys before it: the tuples a partition read
    are the distinct values of each, summed (none for a share of one relation: one tuple
    per row).
    """

    read: QueryBlock
    columns: tuple[str, ...]
    types: tuple[str, ...]
    keys: tuple[tuple[int, ...], ...] = ()


@dataclass(frozen=True)
class RefreshPlan:
    """How the periodic view ``view`` is recomputed from the staging view ``staging``.

    ``merge`` is the periodic query over the merged shares (one table named after the
    staging view, see :class:`ShareLayout`); for a time window it has no ORDER BY and no
    LIMIT (its order expressions are hidden columns ``_order0``, ...) and its epoch
    parameter is left for the refresh to bind to each epoch it recomputes. The result is
    stored as ``columns``: a tuple window numbered in ``rank`` when ``ranked``; a time
    window per group of ``group_key`` (the epoch and the parameter columns) sorted by the
    hidden columns (``descending`` per column), numbered, at most ``limit`` rows.
    """

    view: str
    staging: str
    window: WindowKind
    order_column: str  # the TEMPORAL column
    epoch_width: int | None  # a time window's epoch width (ms)
    layout: StagingLayout
    shares: ShareLayout
    merge: QueryBlock
    columns: tuple[str, ...]
    ranked: bool
    group_key: tuple[str, ...]
    descending: tuple[bool, ...]
    limit: int | None
    per_partition_bound: int  # tuples one partition reads per refresh (relaxed Invariant 2)
    refresh_every: Interval

    @property
    def total_bound(self) -> int:
        """Tuples one refresh reads in all (the partitions run in parallel)."""
        return self.layout.partitions * self.per_partition_bound
