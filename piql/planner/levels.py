"""The levels of scale independence (paper, Table 1), cheapest guarantee first."""
from __future__ import annotations

from enum import StrEnum


class Level(StrEnum):
    """How a query runs with bounded work: primary-key access only (SI-0), with secondary
    indexes (SI-1), from a maintained view (SI-2), from a periodic view refreshed from a
    hash-partitioned staging view (SI-3); or not at all (unbounded)."""

    SI0 = "SI-0"
    SI1 = "SI-1"
    SI2 = "SI-2"
    SI3 = "SI-3"
    UNBOUNDED = "unbounded"


LEVELS = tuple(Level)
