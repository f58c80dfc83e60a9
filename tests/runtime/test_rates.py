"""Decayed counters of bounded memory and measured costs (runtime.rates)."""
from __future__ import annotations

import math
import random

import pytest

from piql.runtime.rates import CostMeter, DecayedCounter, MeasuredReads, Rates


def test_a_count_halves_every_half_life():
    counter = DecayedCounter(capacity=4, half_life=10)
    for tick in range(1, 5):
        counter.add("a", tick)
    assert counter.estimate("a", 4).count == pytest.approx(sum(2 ** ((t - 4) / 10)
                                                               for t in range(1, 5)))
    assert counter.estimate("a", 14).count == pytest.approx(counter.estimate("a", 4).count / 2)
    assert counter.estimate("never", 14).count == 0


def test_a_steady_rate_is_measured():
    """One event every 4 ticks, for many half-lives: 0.25 events per tick."""
    counter = DecayedCounter(capacity=4, half_life=200)
    for tick in range(4, 20_000, 4):
        counter.add("a", tick)
    assert counter.rate("a", 19_996) == pytest.approx(0.25, rel=0.02)


def test_memory_is_bounded_and_heavy_hitters_are_kept_over_estimated():
    """Space-Saving: at most ``capacity`` keys; a key's estimate is never below its true
    (decayed) count and exceeds it by at most its error; the heaviest keys are kept."""
    counter = DecayedCounter(capacity=20, half_life=1e9)  # no decay: exact counts to compare
    rng = random.Random(19)
    true: dict[int, int] = {}
    for tick in range(1, 5001):
        key = min(int(rng.paretovariate(1.1)), 500)  # Zipf-like: a few keys dominate
        true[key] = true.get(key, 0) + 1
        counter.add(key, tick)
    assert len(counter) == 20
    for key in counter.keys():
        found = counter.estimate(key, 5000)
        # (a half-life of 1e9 ticks still decays 5000 ticks' counts by a few millionths)
        assert true[key] * (1 - 1e-5) <= found.count <= (true[key] + found.error) * (1 + 1e-5)
    heaviest = sorted(true, key=true.get, reverse=True)[:3]
    assert all(key in counter for key in heaviest)


def test_weights_are_rescaled_before_they_overflow():
    counter = DecayedCounter(capacity=2, half_life=1)
    for tick in range(0, 3000, 3):
        counter.add("a", tick)
    assert math.isfinite(counter.estimate("a", 2997).count)
    assert counter.estimate("a", 2997).count == pytest.approx(1 / (1 - 2 ** -3), rel=1e-6)


def test_costs_are_a_moving_average_and_rates_share_one_clock():
    meter = CostMeter(initial=6, weight=0.5)
    meter.measure(2)
    assert meter.mean == 4 and meter.samples == 1
    rates = Rates(push_ops=6, pull_ops=20, feed_ops=21, capacity=8, half_life=100)
    for _ in range(3):
        rates.read("c")
    rates.write("p")
    assert rates.clock == 4
    assert rates.consumer_rate("c") > rates.producer_rate("p") > 0


def test_a_counter_needs_room():
    with pytest.raises(ValueError):
        DecayedCounter(capacity=0)


def test_an_unseen_key_expects_what_keys_seen_once_had():
    """Good-Turing: 2 of 8 users read once, 4 never: an unseen user expects 2 / 4 reads;
    with every reader seen often, 0."""
    rates = Rates(push_ops=6, pull_ops=20, feed_ops=21)
    for user, reads in {1: 1, 2: 1, 3: 5, 4: 9}.items():
        for _ in range(reads):
            rates.read(user)
    assert rates.unseen_reads(range(1, 9)) == pytest.approx(0.5)
    assert rates.consumer_rate(7, unseen=0.5) == pytest.approx(
        0.5 * math.log(2) / rates.reads.half_life)
    assert rates.consumer_rate(3, unseen=0.5) > rates.consumer_rate(7, unseen=0.5)
    assert rates.unseen_reads([3, 4, 5]) == 0


def test_measured_reads_average_per_consumer_in_bounded_memory():
    """The latency mode's feedback: a consumer's reads served the same way average (weight
    0.5); served another way (other pulls, a pushed feed or not) the new read replaces
    them; past the capacity the consumer read least recently is forgotten."""
    reads = MeasuredReads(capacity=2)
    reads.measure("a", 20, 4, False)
    reads.measure("a", 30, 4, False)
    assert reads.get("a").ops == 25
    reads.measure("a", 12, 1, True)  # its edges switched: the old reads say nothing now
    assert (reads.get("a").ops, reads.get("a").pulls, reads.get("a").pushed) == (12, 1, True)
    reads.measure("b", 5, None, False)
    reads.measure("a", 14, 1, True)  # a read again: b is now the least recent
    reads.measure("c", 7, 2, False)
    assert len(reads) == 2 and reads.get("b") is None and reads.get("a").ops == 13


def test_pulled_reads_noted_then_settled_count_as_reads_counted_at_once():
    """A pulled read is noted (``Rates.pulled``) and counted later: every reader of the
    rates, and every write, settles the notes first, in order, so the clock, the read
    counts and the measured costs are those of counting each read as it happened."""
    rng = random.Random(7)
    events = [(rng.random() < 0.2, rng.randrange(20), rng.randrange(1, 9)) for _ in range(3000)]
    at_once = Rates(push_ops=6, pull_ops=20, feed_ops=21, capacity=8, half_life=300)
    noted = Rates(push_ops=6, pull_ops=20, feed_ops=21, capacity=8, half_life=300)
    noted.SETTLE_AT = 64  # a note past this many settles them (bounded memory)
    for position, (write, key, ops) in enumerate(events):
        if write:
            at_once.write(key)
            noted.write(key)
            continue
        at_once.read(key)
        at_once.read_ops.measure(key, ops, None, False)
        noted.pulled.append((key, ops))
        if len(noted.pulled) >= noted.SETTLE_AT:
            noted.settle()
        if position % 997 == 0:  # a reader in the middle sees every read so far
            assert noted.clock == at_once.clock
    assert noted.clock == at_once.clock
    assert not noted.pulled
    for key in range(20):
        assert noted.consumer_rate(key) == at_once.consumer_rate(key)
        assert noted.producer_rate(key) == at_once.producer_rate(key)
        assert noted.read_ops.get(key) == at_once.read_ops.get(key)
    assert noted.unseen_reads(range(40)) == at_once.unseen_reads(range(40))
    assert list(noted.read_ops.recent) == list(at_once.read_ops.recent)
