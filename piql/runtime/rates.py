"""Read and write rates, and the measured cost of one push and one pull (issue 19).

Feeding Frenzy decides each producer/consumer edge from phi_c / phi_p against H / L
(``planner.push_pull``); this module measures those four numbers from what the deployment
does, in bounded memory:

- :class:`DecayedCounter`: events per key (reads per consumer, writes per producer),
  exponentially decayed so old traffic fades (half-life ``half_life`` ticks), keeping only
  the ``capacity`` heaviest keys exactly (Space-Saving, Metwally et al. 2005): a new key
  past the capacity replaces the lightest, inheriting its count as an over-estimate
  (``error``), so a key's estimate is never below its true decayed count and a heavy
  hitter is always kept. Memory is ``capacity`` entries whatever the number of keys.
- :class:`CostMeter`: the mean operations of one push (H) and one pull (L), an
  exponentially weighted average of the store's own operation counts.

Time is logical: one tick per counted event (a read or a write of the adaptive query), so
the same workload gives the same rates on any machine, and rates are events per tick:
only their ratios matter to the decisions.

Decay is *forward* (Cormode et al. 2009): an event at tick t adds ``2 ** (t / half_life)``
and a count is read as ``stored / 2 ** (now / half_life)``, so nothing is rescanned as
time passes; the stored values are rescaled when they grow large.
"""
from __future__ import annotations

import heapq
import math
import threading
from collections import deque
from dataclasses import dataclass
from typing import Hashable, Iterable, Iterator

RESCALE_AT = 2.0 ** 500  # stored weights are divided down before they overflow a float


@dataclass(frozen=True)
class Estimate:
    """A key's decayed count and the most it may over-count (0 for a key never evicted
    into)."""

    count: float
    error: float


class DecayedCounter:
    """Exponentially decayed counts of the ``capacity`` heaviest keys (Space-Saving)."""

    def __init__(self, capacity: int = 10_000, half_life: float = 50_000.0) -> None:
        if capacity < 1 or half_life <= 0:
            raise ValueError("a counter needs a positive capacity and half-life")
        self.capacity = capacity
        self.half_life = half_life
        self._weights: dict[Hashable, float] = {}  # forward-decayed weight of each key
        self._errors: dict[Hashable, float] = {}  # weight inherited from an evicted key
        # lazy min-heap of weights, kept only once the counter is full (None before: no
        # key is evicted until then, and a push per event cost a read of a feed ~1 µs)
        self._heap: list[tuple[float, int, Hashable]] | None = None
        self._serial = 0  # heap tie-break: keys need not be comparable
        self._landmark = 0.0  # ticks are measured from here (moved on rescaling)

    def add(self, key: Hashable, now: float, amount: float = 1.0) -> None:
        """Count ``amount`` events of ``key`` at tick ``now`` (ticks never go back)."""
        weight = amount * 2.0 ** ((now - self._landmark) / self.half_life)
        if weight > RESCALE_AT:
            self._rescale(now)
            weight = amount * 2.0 ** ((now - self._landmark) / self.half_life)
        if key in self._weights:
            self._weights[key] += weight
        elif len(self._weights) < self.capacity:
            self._weights[key] = weight
            self._errors[key] = 0.0
        else:  # Space-Saving: the lightest key makes room, its weight over-counts the new one
            lightest, floor = self._lightest()
            del self._weights[lightest], self._errors[lightest]
            self._weights[key] = floor + weight
            self._errors[key] = floor
        if self._heap is not None:
            self._push(key)

    def estimate(self, key: Hashable, now: float) -> Estimate:
        """``key``'s decayed count at ``now`` (0 for a key not kept)."""
        scale = 2.0 ** ((now - self._landmark) / self.half_life)
        return Estimate(self._weights.get(key, 0.0) / scale, self._errors.get(key, 0.0) / scale)

    def rate(self, key: Hashable, now: float) -> float:
        """Events per tick of ``key`` at ``now``: its decayed count over the decay's mean
        life (half-life / ln 2), the count a steady rate converges to."""
        return self.estimate(key, now).count * math.log(2) / self.half_life

    def keys(self) -> Iterator[Hashable]:
        """The keys kept (at most ``capacity``)."""
        return iter(list(self._weights))

    def __len__(self) -> int:
        return len(self._weights)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._weights

    def _push(self, key: Hashable) -> None:
        assert self._heap is not None
        self._serial += 1
        heapq.heappush(self._heap, (self._weights[key], self._serial, key))
        if len(self._heap) > 4 * self.capacity:  # drop stale entries now and then
            self._heapify()

    def _lightest(self) -> tuple[Hashable, float]:
        if self._heap is None:
            self._heapify()
        assert self._heap is not None
        while True:
            weight, _, key = heapq.heappop(self._heap)
            if self._weights.get(key) == weight:  # else a stale entry of a key since grown
                return key, weight

    def _rescale(self, now: float) -> None:
        factor = 2.0 ** ((now - self._landmark) / self.half_life)
        self._landmark = now
        for key in self._weights:
            self._weights[key] /= factor
            self._errors[key] /= factor
        if self._heap is not None:
            self._heapify()

    def _heapify(self) -> None:
        self._heap = [(w, n, k) for n, (k, w) in enumerate(self._weights.items())]
        heapq.heapify(self._heap)
        self._serial = len(self._heap)


class CostMeter:
    """The mean operations of one unit of work (a push along one edge, a pull of one
    producer), an exponentially weighted average of measured counts."""

    def __init__(self, initial: float, weight: float = 0.05) -> None:
        self.mean = float(initial)
        self.weight = weight
        self.samples = 0

    def measure(self, ops: float) -> None:
        self.samples += 1
        self.mean += self.weight * (ops - self.mean)


@dataclass
class MeasuredRead:
    """A consumer's measured read cost (an average over its recent reads) and how it
    was served then: ``pulls`` producers pulled (None: by the pull plan, every edge)
    and whether it read a pushed feed."""

    ops: float
    pulls: int | None
    pushed: bool


class MeasuredReads:
    """The measured read cost per consumer, for the latency mode's feedback (Feeding
    Frenzy §3.3.1's adaptive loop): the ``capacity`` consumers read most recently, each an
    exponentially weighted average of its reads' operations (bounded memory)."""

    def __init__(self, capacity: int = 10_000, weight: float = 0.5) -> None:
        self.capacity = capacity
        self.weight = weight
        self._reads: dict[Hashable, MeasuredRead] = {}  # oldest first
        self.recent: deque[float] = deque(maxlen=capacity)  # every read's ops, newest last

    def measure(self, consumer: Hashable, ops: float, pulls: int | None,
                pushed: bool) -> None:
        self.recent.append(ops)
        seen = self._reads.pop(consumer, None)
        if seen is not None and seen.pulls == pulls and seen.pushed == pushed:
            seen.ops += self.weight * (ops - seen.ops)  # in place: no new record per read
            self._reads[consumer] = seen  # the newest last
            return
        self._reads[consumer] = MeasuredRead(ops, pulls, pushed)
        if len(self._reads) > self.capacity:
            del self._reads[next(iter(self._reads))]

    def get(self, consumer: Hashable) -> MeasuredRead | None:
        return self._reads.get(consumer)

    def __len__(self) -> int:
        return len(self._reads)


class Rates:
    """What one adaptive query measures: reads per consumer, writes per producer (on one
    logical clock); H, the ops of one push along one edge; L, of one pull of one producer;
    and the ops of reading a consumer's pushed feed (its state and range) at a read.

    A pulled read (a feed no edge of which pushes: the query's own plan answered it) is
    noted in :attr:`pulled` as ``(consumer, ops)``, one list append in the read's call,
    and counted later, in order (:meth:`settle`): each one tick, a read of its consumer
    and its measured cost, exactly as if counted at once. Every reader of the counts
    (``reads``, ``read_ops``, ``clock``, the rates) and every other event (a write, a
    read of a pushed feed) settles first, so the decisions' inputs are the same numbers;
    the counting moved out of the call (2-7 µs on a 10 µs query, most of it running the
    counting's Python cold between two calls) into a loop over many reads."""

    # pulled reads noted before the call that notes one more settles them (bounds memory)
    SETTLE_AT = 4096

    def __init__(self, push_ops: float, pull_ops: float, feed_ops: float,
                 capacity: int = 10_000, half_life: float = 50_000.0) -> None:
        self._clock = 0
        self._reads = DecayedCounter(capacity, half_life)
        self.writes = DecayedCounter(capacity, half_life)
        self.push = CostMeter(push_ops)
        self.pull = CostMeter(pull_ops)
        self.feed = CostMeter(feed_ops)
        self._read_ops = MeasuredReads(capacity)
        self.pulled: list[tuple[Hashable, float]] = []  # appended to by the read's caller
        self._settling = threading.Lock()

    def settle(self) -> None:
        """Count the pulled reads noted so far, oldest first: a tick, a read of the
        consumer, and its operations as a read by the pull plan (every edge pulled)."""
        pulled = self.pulled
        if not pulled:
            return
        with self._settling:
            noted = pulled[:]  # reads noted meanwhile (other threads) are left for later
            del pulled[:len(noted)]
            add, measure, clock = self._reads.add, self._read_ops.measure, self._clock
            for consumer, ops in noted:
                clock += 1
                add(consumer, clock)
                measure(consumer, ops, None, False)
            self._clock = clock

    @property
    def clock(self) -> int:
        """The logical clock: one tick per counted read or write."""
        self.settle()
        return self._clock

    @property
    def reads(self) -> DecayedCounter:
        """Reads per consumer."""
        self.settle()
        return self._reads

    @property
    def read_ops(self) -> "MeasuredReads":
        """The measured cost of each consumer's recent reads."""
        self.settle()
        return self._read_ops

    def read(self, consumer: Hashable) -> None:
        self.settle()
        self._clock += 1
        self._reads.add(consumer, self._clock)

    def write(self, producer: Hashable) -> None:
        self.settle()
        self._clock += 1
        self.writes.add(producer, self._clock)

    def consumer_rate(self, consumer: Hashable, unseen: float = 0.0) -> float:
        """Reads per tick; ``unseen`` events for a consumer the counter does not hold."""
        return _rate(self.reads, consumer, self.clock, unseen)

    def producer_rate(self, producer: Hashable, unseen: float = 0.0) -> float:
        """Writes per tick; ``unseen`` events for a producer the counter does not hold."""
        return _rate(self.writes, producer, self.clock, unseen)

    def unseen_reads(self, consumers: Iterable[Hashable]) -> float:
        return good_turing(self.reads, consumers, self.clock)

    def unseen_writes(self, producers: Iterable[Hashable]) -> float:
        return good_turing(self.writes, producers, self.clock)


def _rate(counter: DecayedCounter, key: Hashable, now: float, unseen: float) -> float:
    count = counter.estimate(key, now).count
    return (count if key in counter else unseen) * math.log(2) / counter.half_life


def good_turing(counter: DecayedCounter, keys: Iterable[Hashable], now: float) -> float:
    """The events to expect of a key not seen yet, among ``keys`` (Good-Turing): the keys
    seen about once, over the keys not seen. Half the users never read, a few once: an
    unseen user is about as likely to read as those. None seen once (every reader seen
    reads often): 0. A rate of 0 for every unseen producer would make pushing it look
    free; of a fixed prior for every unseen consumer, worth pushing to."""
    ones = unseen = 0
    for key in set(keys):
        if key not in counter:
            unseen += 1
        elif counter.estimate(key, now).count < 1.5:
            ones += 1
    return ones / unseen if unseen else 0.0
