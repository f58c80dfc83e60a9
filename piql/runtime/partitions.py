"""The staging partition of a row: a stable hash of the relation's primary key."""
from __future__ import annotations

import zlib
from typing import Any

from piql.planner.views import ViewDef


def partition_of(view: ViewDef, values: dict[str, Any]) -> int:
    """Which of the staging view's partitions holds the row with these ``values`` (the same
    on every write, load, rebuild and check: a CRC of the key's Python representation)."""
    layout = view.staging
    assert layout is not None, view.name
    key = repr(tuple(values[c] for c in layout.partitioned_by)).encode()
    return zlib.crc32(key) % layout.partitions
