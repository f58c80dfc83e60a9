"""Refresh intervals of periodic views: ``1 MIN``, ``30 s``, ``2 hours``."""
from __future__ import annotations

import re
from dataclasses import dataclass

UNITS = {
    "s": ("SEC", 1), "sec": ("SEC", 1), "secs": ("SEC", 1), "second": ("SEC", 1),
    "seconds": ("SEC", 1),
    "m": ("MIN", 60), "min": ("MIN", 60), "mins": ("MIN", 60), "minute": ("MIN", 60),
    "minutes": ("MIN", 60),
    "h": ("HOUR", 3600), "hour": ("HOUR", 3600), "hours": ("HOUR", 3600),
    "d": ("DAY", 86400), "day": ("DAY", 86400), "days": ("DAY", 86400),
}
PATTERN = re.compile(r"^\s*(\d+)\s*([A-Za-z]+)\s*$")


@dataclass(frozen=True)
class Interval:
    amount: int
    unit: str  # SEC, MIN, HOUR or DAY
    seconds: int

    def __str__(self) -> str:
        return f"{self.amount} {self.unit}"


def parse_interval(text: str) -> Interval:
    """Parse ``<positive integer> <unit>``; raises ValueError with what was expected."""
    match = PATTERN.match(text)
    if not match or match.group(2).lower() not in UNITS or int(match.group(1)) <= 0:
        raise ValueError(f"expected an interval like '1 min', '30 s' or '2 hours', found {text!r}")
    unit, seconds = UNITS[match.group(2).lower()]
    amount = int(match.group(1))
    return Interval(amount, unit, amount * seconds)


DEFAULT_REFRESH = parse_interval("1 min")


def parse_instant(text: str) -> int:
    """A point in time as milliseconds since the Unix epoch, the unit of piql's time
    columns: an integer (``1700000000000``, taken as milliseconds) or an ISO 8601 date or
    date and time (``2026-11-27``, ``2026-11-27T04:00:00+01:00``; UTC unless it names an
    offset). Raises ValueError with what was expected."""
    from datetime import datetime, timedelta, timezone

    bare = text.strip()
    if re.fullmatch(r"[+-]?\d+", bare):
        return int(bare)
    try:
        moment = datetime.fromisoformat(bare.replace("z", "Z"))
    except ValueError:
        raise ValueError("expected milliseconds since 1970-01-01 UTC (e.g. 1700000000000) or an "
                         "ISO 8601 date or time (e.g. 2026-11-27 or 2026-11-27T04:00:00Z), "
                         f"found {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    # exact integer arithmetic (a float timestamp rounds far from the epoch)
    return (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(milliseconds=1)
