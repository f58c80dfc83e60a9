"""Update queues and their key-scheduling policies (UpStream, ETH TR 620, §4-5).

An asynchronous view is maintained from a queue of pending changes instead of in the
writing transaction. UpStream's *update queue* is lossy by update key: a newer update
for a key supersedes the queued one, so the queue never holds more than one entry per
key and its length is bounded by the number of distinct keys, however high the load
(§4.1). Where the superseding entry goes is the key-scheduling policy (§5):

- ``QueuePolicy.APPEND``: the traditional append queue, no coalescing (the baseline
  "AQ" of §5.2, Figure 7);
- ``QueuePolicy.FIFO``: UQ-FIFO, the superseding update moves to the back (§5.2,
  Figure 6(b));
- ``QueuePolicy.IN_PLACE``: the superseding update keeps its predecessor's place
  (§5.2, Figure 6(c)); optimal when every key updates at the same rate;
- ``QueuePolicy.LINECUTTING``: IN-PLACE, except that a *slow updater* cuts to the
  front: key ``k`` is slow when ``u_k < 1/(c·n)`` (§5.3), ``u_k`` its update rate,
  ``c`` the cost of processing one entry and ``n`` the number of residents at the time
  ``k`` updates, i.e. all the queue could be served once between two of ``k``'s
  updates. ``u_k`` comes from statistics (§4.2's statistics monitor): given rates, or
  by default each key's observed rate, its updates so far over the queue's age. The
  cutters are served in the order they cut in (ahead of every other entry, behind the
  cutters before them; a queued cutter that cuts again keeps its place), so that when
  every key is slow the queue is IN-PLACE, as §5.3 reports (no slow or all slow: the
  same staleness). Served latest cutter first instead, a queue of equal keys at load
  1, where most arrivals pass the test, becomes a stack: 2.8 times IN-PLACE's
  staleness.

Queue staleness (§5.1) of key ``k`` at time ``t`` is ``t - τ``, ``τ`` the arrival of
the oldest pending update of ``k`` (0 when none is pending): how long ``k`` has waited
from its first enqueue until its next dequeue, the processing cost factored out.
UpStream shows that minimising it minimises the staleness the application sees.

This module is pure (no database): the runtime's store-backed queue uses the same
policy and coalescing decisions, and ``simulate`` replays a single-server schedule so
tests and benchmarks can compute staleness exactly.
"""
from __future__ import annotations

import enum
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Callable, Generic, Hashable, Iterable, Optional, TypeVar

V = TypeVar("V")

# How a queued value and a newer one for the same key combine: the coalesced value,
# or None when the two cancel (the entry leaves the queue).
Combine = Callable[[V, V], Optional[V]]


class QueuePolicy(enum.Enum):
    """Where an update goes in the queue (UpStream §5)."""

    APPEND = "append"
    FIFO = "fifo"
    IN_PLACE = "in-place"
    LINECUTTING = "linecutting"

    @property
    def lossy(self) -> bool:
        """Whether updates of one key coalesce into one entry (every policy but APPEND)."""
        return self is not QueuePolicy.APPEND


def supersede(_older: V, newer: V) -> V:
    """UpStream's coalescing: the newest value of a key replaces the queued one."""
    return newer


@dataclass(frozen=True)
class Entry(Generic[V]):
    """One queued entry: a key, its (coalesced) value and when its updates arrived."""

    key: Hashable
    value: V
    first_enqueued: float  # arrival of the oldest update it stands for (§5.1's τ)
    last_enqueued: float
    updates: int = 1  # how many updates it coalesces

    def staleness(self, now: float) -> float:
        """Queue staleness of this entry's key at ``now`` (§5.1)."""
        return max(0.0, now - self.first_enqueued)


def is_slow_updater(rate: float, cost: float, residents: int) -> bool:
    """UpStream §5.3's test ``u_k < 1/(c·n)``: ``rate`` is ``u_k``, ``residents`` is
    ``n``, the queue's length when the key updates. With no resident, ``1/(c·n)`` is
    infinite and every key is slow (cutting changes nothing)."""
    return residents == 0 or rate * cost * residents < 1  # u_k < 1/(c·n), no division


# The update rate of a key at a time (updates per time unit), as statistics give it.
Rates = Callable[[Hashable, float], float]


class ObservedRates:
    """Each key's observed update rate: its updates so far over the time since the first
    update of any key (infinite at that first instant: no evidence a key is slow)."""

    def __init__(self) -> None:
        self.start: Optional[float] = None
        self.counts: dict[Hashable, int] = {}

    def arrive(self, key: Hashable, time: float) -> None:
        if self.start is None:
            self.start = time
        self.counts[key] = self.counts.get(key, 0) + 1

    def __call__(self, key: Hashable, time: float) -> float:
        elapsed = time - (time if self.start is None else self.start)
        return self.counts.get(key, 0) / elapsed if elapsed > 0 else float("inf")


class UpdateQueue(Generic[V]):
    """A queue of pending updates under one ``QueuePolicy``.

    ``cost`` is LINECUTTING's ``c`` (time to process one entry) and ``rates`` its ``u_k``
    (default: :class:`ObservedRates`); ``combine`` coalesces a queued value with a newer
    one of the same key (lossy policies only) and may cancel both by returning None.
    """

    def __init__(self, policy: QueuePolicy, *, cost: float = 1.0,
                 combine: Combine = supersede, rates: Optional[Rates] = None) -> None:
        self.policy = policy
        self.cost = cost
        self._combine = combine
        self._observed = ObservedRates()
        self._rates: Rates = rates if rates is not None else self._observed
        # slot -> entry, in service order; a slot is the key (lossy) or a sequence number
        self._slots: OrderedDict[Hashable, Entry[V]] = OrderedDict()
        # LINECUTTING's front: the slow updaters' entries, served before every slot, in the
        # order they cut in (a key that cuts again keeps its place, as IN-PLACE)
        self._cut: OrderedDict[Hashable, Entry[V]] = OrderedDict()
        self._sequence = 0

    def __len__(self) -> int:
        return len(self._cut) + len(self._slots)

    def entries(self) -> list[Entry[V]]:
        """The queued entries in the order they would be dequeued."""
        return list(self._cut.values()) + list(self._slots.values())

    def enqueue(self, key: Hashable, value: V, time: float) -> None:
        """Add one update of ``key`` that arrived at ``time``."""
        self._observed.arrive(key, time)
        if not self.policy.lossy:
            self._sequence += 1
            self._slots[self._sequence] = Entry(key, value, time, time)
            return
        residents = len(self)
        zone = self._cut if key in self._cut else self._slots
        queued = zone.get(key)
        if queued is None:
            self._slots[key] = Entry(key, value, time, time)
        else:
            combined = self._combine(queued.value, value)
            if combined is None:
                del zone[key]
                return
            zone[key] = replace(queued, value=combined, last_enqueued=time,
                                updates=queued.updates + 1)
            if self.policy is QueuePolicy.FIFO:
                self._slots.move_to_end(key)
        # into an empty queue every key cuts (1/(c·0) is infinite): the cutters after it
        # queue behind it, so a queue of slow keys only is IN-PLACE
        if self.policy is QueuePolicy.LINECUTTING and key in self._slots and \
                is_slow_updater(self._rates(key, time), self.cost, residents):
            self._cut[key] = self._slots.pop(key)  # to the front, behind earlier cutters

    def dequeue(self) -> Entry[V]:
        """Remove and return the entry at the head; IndexError when empty."""
        zone = self._cut or self._slots
        if not zone:
            raise IndexError("dequeue from an empty update queue")
        _, entry = zone.popitem(last=False)
        return entry

    def staleness(self, key: Hashable, now: float) -> float:
        """Queue staleness of ``key`` at ``now``: age of its oldest pending update."""
        firsts = [e.first_enqueued for e in self.entries() if e.key == key]
        return max(0.0, now - min(firsts)) if firsts else 0.0


# -- net effect of row changes (the coalescing piql's views need) -------------------

@dataclass(frozen=True)
class RowChange:
    """A change of one base row, by its key: ``before`` -> ``after`` (None: absent).

    An insert has no ``before``, a delete no ``after``, an update both.
    """

    before: Optional[tuple[Any, ...]]
    after: Optional[tuple[Any, ...]]


def net_change(older: RowChange, newer: RowChange) -> Optional[RowChange]:
    """Two changes of one row as one: the first ``before``, the last ``after``.

    An insert then a delete cancel (None); an update chain keeps only its net effect
    (delete the first old row, insert the last new one).
    """
    if older.before is None and newer.after is None:
        return None
    return RowChange(older.before, newer.after)


# -- a single-server replay, for exact staleness -------------------------------------

@dataclass(frozen=True)
class Arrival(Generic[V]):
    """One update arriving at ``time`` for ``key``."""

    time: float
    key: Hashable
    value: V


@dataclass(frozen=True)
class Dequeue(Generic[V]):
    """One entry taken off the queue at ``time`` for processing."""

    time: float
    entry: Entry[V]


@dataclass(frozen=True)
class Schedule(Generic[V]):
    """What ``simulate`` did: every dequeue in order, and the run's end."""

    dequeues: tuple[Dequeue[V], ...]
    end: float

    def order(self) -> list[Hashable]:
        """The keys in the order they were served."""
        return [d.entry.key for d in self.dequeues]

    def staleness_area(self, key: Hashable) -> float:
        """∫ s_k(t) dt over the run (§3.3): each entry is stale from its first arrival
        (or the previous dequeue of its key, whichever is later) until its dequeue."""
        area, served = 0.0, float("-inf")
        for d in self.dequeues:
            if d.entry.key != key:
                continue
            start, origin = max(d.entry.first_enqueued, served), d.entry.first_enqueued
            area += ((d.time - origin) ** 2 - (start - origin) ** 2) / 2
            served = d.time
        return area

    def average_staleness(self, keys: Iterable[Hashable], start: float = 0.0) -> float:
        """Average queue staleness over ``keys`` and the run from ``start`` (§3.3)."""
        keys = list(keys)
        span = self.end - start
        if not keys or span <= 0:
            return 0.0
        return sum(self.staleness_area(k) for k in keys) / (span * len(keys))


def simulate(arrivals: Iterable[Arrival[V]], policy: QueuePolicy, cost: float, *,
             combine: Combine = supersede, rates: Optional[Rates] = None) -> Schedule[V]:
    """Replay ``arrivals`` through one queue served by one maintainer.

    The maintainer takes the head entry whenever it is idle and the queue is not empty,
    and is then busy for ``cost``; arrivals at the very instant of a dequeue are queued
    first. The run ends when the last entry has been dequeued (and, if later, at the last
    arrival).
    """
    pending = sorted(arrivals, key=lambda a: a.time)
    queue: UpdateQueue[V] = UpdateQueue(policy, cost=cost, combine=combine, rates=rates)
    dequeues: list[Dequeue[V]] = []
    free, i = 0.0, 0
    while i < len(pending) or len(queue):
        if not len(queue):
            free = max(free, pending[i].time)
        while i < len(pending) and pending[i].time <= free:
            queue.enqueue(pending[i].key, pending[i].value, pending[i].time)
            i += 1
        if len(queue):
            dequeues.append(Dequeue(free, queue.dequeue()))
            free += cost
    last = max([a.time for a in pending] + [d.time for d in dequeues], default=0.0)
    return Schedule(tuple(dequeues), last)
