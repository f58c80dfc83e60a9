"""Update queues and key scheduling (UpStream, ETH TR 620, §4-5), against schedules
computed by hand from the paper's examples, and properties over any arrivals."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from piql.planner.update_queues import (
    Arrival, ObservedRates, QueuePolicy, RowChange, UpdateQueue, is_slow_updater, net_change,
    simulate,
)

LOSSY = [QueuePolicy.FIFO, QueuePolicy.IN_PLACE, QueuePolicy.LINECUTTING]


def keys_and_values(queue: UpdateQueue) -> list[tuple[str, str]]:
    return [(e.key, e.value) for e in queue.entries()]


def queued(policy: QueuePolicy, *updates: tuple[str, str, float]) -> UpdateQueue:
    queue = UpdateQueue(policy)
    for key, value, time in updates:
        queue.enqueue(key, value, time)
    return queue


# -- §5.2, Figure 6: where a superseding update goes ---------------------------------

FIGURE_6 = (("IBM", "IBM1", 0), ("MSFT", "MSFT1", 1), ("ORCL", "ORCL1", 2),
            ("IBM", "IBM2", 3))


def test_append_queue_keeps_every_update():
    assert keys_and_values(queued(QueuePolicy.APPEND, *FIGURE_6)) == [
        ("IBM", "IBM1"), ("MSFT", "MSFT1"), ("ORCL", "ORCL1"), ("IBM", "IBM2")]


def test_fifo_update_queue_moves_the_new_value_to_the_tail():
    # §5.2: "arrival of a new tuple for IBM (IBM2) at the tail of the queue removes the
    # old IBM tuple (IBM1) from its earlier position"
    assert keys_and_values(queued(QueuePolicy.FIFO, *FIGURE_6)) == [
        ("MSFT", "MSFT1"), ("ORCL", "ORCL1"), ("IBM", "IBM2")]


def test_in_place_update_queue_overwrites_in_the_old_place():
    # §5.2: "IBM2 overwrites IBM1 on its original place in the update queue"
    queue = queued(QueuePolicy.IN_PLACE, *FIGURE_6)
    assert keys_and_values(queue) == [
        ("IBM", "IBM2"), ("MSFT", "MSFT1"), ("ORCL", "ORCL1")]
    head = queue.entries()[0]
    assert (head.first_enqueued, head.last_enqueued, head.updates) == (0, 3, 2)


# -- §3.3/§5.1, Figure 2: one key, an update every 2 time units, cost 3 ---------------

FIGURE_2 = [Arrival(t, "k", name) for t, name in ((0, "a"), (2, "b"), (4, "c"),
                                                   (6, "d"), (8, "e"))]


@pytest.mark.parametrize("policy", LOSSY)
def test_update_queue_serves_only_the_newest_value(policy):
    schedule = simulate(FIGURE_2, policy, cost=3)
    # a at 0; b (arrived 2) at 3; c (4) is superseded by d (6), served at 6 and stale
    # since 4; e (8) at 9
    assert [(d.time, d.entry.value, d.entry.first_enqueued) for d in schedule.dequeues] \
        == [(0, "a", 0), (3, "b", 2), (6, "d", 4), (9, "e", 8)]
    # areas: b 1²/2, d 2²/2, e 1²/2
    assert schedule.staleness_area("k") == pytest.approx(0.5 + 2 + 0.5)
    assert schedule.average_staleness(["k"]) == pytest.approx(3 / 9)


def test_append_queue_falls_further_behind():
    schedule = simulate(FIGURE_2, QueuePolicy.APPEND, cost=3)
    assert [(d.time, d.entry.value) for d in schedule.dequeues] == [
        (0, "a"), (3, "b"), (6, "c"), (9, "d"), (12, "e")]
    # staleness is t - (oldest pending arrival): b [2,3) from 2, c [4,6) from 4,
    # d [6,9) from 6, e [9,12) from 8
    assert schedule.staleness_area("k") == pytest.approx(0.5 + 2 + 4.5 + (16 - 1) / 2)
    assert schedule.end == 12


# -- §5.2: IN-PLACE serves the key with the earliest first enqueue --------------------

def test_in_place_beats_fifo_when_a_waiting_key_is_superseded():
    arrivals = [Arrival(0, "A", 1), Arrival(0.25, "B", 1), Arrival(0.5, "C", 1),
                Arrival(0.75, "B", 2)]
    fifo = simulate(arrivals, QueuePolicy.FIFO, cost=1)
    in_place = simulate(arrivals, QueuePolicy.IN_PLACE, cost=1)
    # A is taken at 0; at 1, FIFO has [C, B] (B moved back), IN-PLACE [B, C]
    assert fifo.order() == ["A", "C", "B"]
    assert in_place.order() == ["A", "B", "C"]
    keys = "ABC"
    assert sum(map(fifo.staleness_area, keys)) == pytest.approx(0.5**2 / 2 + 1.75**2 / 2)
    assert sum(map(in_place.staleness_area, keys)) == pytest.approx(
        0.75**2 / 2 + 1.5**2 / 2)
    assert in_place.average_staleness(keys) < fifo.average_staleness(keys)


# -- §5.3: LINECUTTING -----------------------------------------------------------------

def test_slow_updater_test_is_u_below_one_over_c_n():
    assert is_slow_updater(0.2, cost=1, residents=4)  # 0.2 < 1/4
    assert not is_slow_updater(0.25, cost=1, residents=4)  # strict
    assert not is_slow_updater(0.2, cost=2, residents=4)  # 0.2 > 1/8
    assert is_slow_updater(float("inf"), cost=1, residents=0)  # 1/(c·0) is infinite


# §5.3's two classes: fast keys update 10 times as often as the slow one
TWO_CLASSES = {"F1": 1.0, "F2": 1.0, "F3": 1.0, "S": 0.1}.get


def two_class_rates(key, _time):
    return TWO_CLASSES(key)


def test_linecutting_lets_a_slow_updater_cut_to_the_front():
    arrivals = [Arrival(0, "F1", 1), Arrival(0, "F2", 1), Arrival(0, "F3", 1),
                Arrival(0.5, "F1", 2), Arrival(0.75, "S", 1)]
    in_place = simulate(arrivals, QueuePolicy.IN_PLACE, cost=1)
    cutting = simulate(arrivals, QueuePolicy.LINECUTTING, cost=1, rates=two_class_rates)
    # IN-PLACE: F1 at 0, then [F2, F3, F1', S]
    assert in_place.order() == ["F1", "F2", "F3", "F1", "S"]
    # LINECUTTING: F2 (n=1) and F3 (n=2) are fast (1 >= 1/n) and queue behind F1; F1 is
    # taken at 0; F1' (n=2) is fast; S (n=3: 0.1 < 1/3) cuts to the front
    assert cutting.order() == ["F1", "S", "F2", "F3", "F1"]
    keys = ["F1", "F2", "F3", "S"]
    assert sum(map(in_place.staleness_area, keys)) == pytest.approx(
        1 / 2 + 2**2 / 2 + 2.5**2 / 2 + 3.25**2 / 2)
    # S waits 0.25 instead of 3.25; F2, F3 and F1' one entry longer each
    assert sum(map(cutting.staleness_area, keys)) == pytest.approx(
        0.25**2 / 2 + 2**2 / 2 + 3**2 / 2 + 3.5**2 / 2)
    assert cutting.staleness_area("S") < in_place.staleness_area("S")


def test_linecutting_is_in_place_for_a_fast_updater():
    queue = UpdateQueue(QueuePolicy.LINECUTTING,
                        rates=lambda key, _t: {"A": 1.0, "B": 1.0, "C": 1.0, "S": 0.1}[key])
    for key, value, time in (("A", 1, 0), ("B", 1, 0), ("C", 1, 0), ("A", 2, 1)):
        queue.enqueue(key, value, time)
    assert keys_and_values(queue) == [("A", 2), ("B", 1), ("C", 1)]  # A kept its place
    queue.enqueue("S", 1, 2)  # n=3: 0.1 < 1/3, slow: to the front
    queue.enqueue("C", 2, 3)  # fast: in place
    # (A came into the empty queue, where every key cuts: S cuts in behind it)
    assert keys_and_values(queue) == [("A", 2), ("S", 1), ("B", 1), ("C", 2)]


def test_cutters_are_served_in_the_order_they_cut_in():
    """§5.3: with no slow updater or only slow ones LINECUTTING is IN-PLACE. Served latest
    cutter first, a queue whose every key is slow would be a stack."""
    queue = UpdateQueue(QueuePolicy.LINECUTTING,
                        rates=lambda key, _t: {"A": 1.0, "B": 1.0, "S": 0.1, "T": 0.1}[key])
    for key, time in (("A", 0), ("B", 0), ("S", 1), ("T", 2), ("S", 3)):
        queue.enqueue(key, time, time)
    # A cut into the empty queue; S cut in next and, cutting again, keeps its place
    assert keys_and_values(queue) == [("A", 0), ("S", 3), ("T", 2), ("B", 0)]
    arrivals = [Arrival(t / 4, k, t) for t, k in enumerate("SABCSABC")]
    slow = simulate(arrivals, QueuePolicy.LINECUTTING, cost=1, rates=lambda _k, _t: 0.01)
    assert slow.order() == simulate(arrivals, QueuePolicy.IN_PLACE, cost=1).order()


def test_observed_rates_count_updates_over_the_queues_age():
    queue = UpdateQueue(QueuePolicy.LINECUTTING)
    for time in range(10):  # F updates once per time unit: fast, queued in place
        queue.enqueue("F", time, time)
    queue.enqueue("H", 0, 10)  # H: 1 update in 10 time units, 0.1 < 1/(1·1): slow
    queue.enqueue("G", 0, 10)  # G too: 0.1 < 1/(1·2)
    # F cut into the empty queue (every key does); H and G cut in behind it, in order
    assert [e.key for e in queue.entries()] == ["F", "H", "G"]
    queue.dequeue()
    for time in range(11, 20):  # F again, now fast (n=2: 10/19 * 2 >= 1): behind the cutters
        queue.enqueue("F", time, time)
    assert [e.key for e in queue.entries()] == ["H", "G", "F"]
    rates = ObservedRates()
    assert rates("F", 0) == float("inf")  # no time has passed: no evidence of slowness
    rates.arrive("F", 0), rates.arrive("F", 1), rates.arrive("G", 4)
    assert (rates("F", 4), rates("G", 4)) == (0.5, 0.25)


def test_queue_staleness_is_the_age_of_the_oldest_pending_update():
    queue = queued(QueuePolicy.IN_PLACE, ("A", 1, 2), ("B", 1, 3), ("A", 2, 5))
    assert queue.staleness("A", 7) == 5
    assert queue.staleness("B", 7) == 4
    assert queue.staleness("C", 7) == 0
    queue.dequeue()
    assert queue.staleness("A", 7) == 0
    with pytest.raises(IndexError):
        UpdateQueue(QueuePolicy.FIFO).dequeue()


# -- net effect of row changes ----------------------------------------------------------

def test_insert_then_delete_cancels():
    queue = UpdateQueue(QueuePolicy.IN_PLACE, combine=net_change)
    queue.enqueue(1, RowChange(None, (1, "a")), 0)
    queue.enqueue(1, RowChange((1, "a"), None), 1)
    assert len(queue) == 0


def test_update_chain_keeps_its_net_effect():
    queue = UpdateQueue(QueuePolicy.IN_PLACE, combine=net_change)
    queue.enqueue(1, RowChange((1, "a"), (1, "b")), 0)
    queue.enqueue(1, RowChange((1, "b"), (1, "c")), 1)
    queue.enqueue(1, RowChange((1, "c"), None), 2)
    queue.enqueue(1, RowChange(None, (1, "d")), 3)
    assert keys_and_values(queue) == [(1, RowChange((1, "a"), (1, "d")))]


# -- properties ---------------------------------------------------------------------------

arrival_lists = st.lists(st.tuples(st.sampled_from("abcde"), st.integers(0, 9),
                                   st.integers(0, 3)), max_size=40)


@settings(max_examples=200, deadline=None)
@given(updates=arrival_lists, policy=st.sampled_from(list(QueuePolicy)),
       drains=st.lists(st.integers(0, 40), max_size=5))
def test_lossy_queue_holds_one_entry_per_key_and_drains_to_the_same_state(
        updates, policy, drains):
    queue = UpdateQueue(policy, cost=0.5)
    applied, expected, time = {}, {}, 0
    for step, (key, value, gap) in enumerate(updates):
        time += gap
        queue.enqueue(key, value, time)
        expected[key] = value
        if policy.lossy:
            keys = [e.key for e in queue.entries()]
            assert len(keys) == len(set(keys))
        if step in drains and len(queue):
            entry = queue.dequeue()
            applied[entry.key] = entry.value
    while len(queue):
        entry = queue.dequeue()
        applied[entry.key] = entry.value
    assert applied == expected


@st.composite
def row_changes(draw):
    """Consistent changes of a table keyed 0..3: each one's before is the current row."""
    table, changes = {}, []
    for _ in range(draw(st.integers(0, 30))):
        key = draw(st.integers(0, 3))
        before = table.get(key)
        after = None if before is not None and draw(st.booleans()) else \
            (key, draw(st.integers(0, 5)))
        changes.append((key, RowChange(before, after)))
        if after is None:
            table.pop(key)
        else:
            table[key] = after
    return changes, table


def apply(table: dict, key, change: RowChange) -> None:
    assert table.get(key) == change.before  # the delete half finds the first old row
    if change.after is None:
        table.pop(key, None)
    else:
        table[key] = change.after


@settings(max_examples=200, deadline=None)
@given(case=row_changes(), policy=st.sampled_from(list(QueuePolicy)),
       drain_at=st.integers(0, 30))
def test_net_changes_drain_to_the_state_of_every_change_in_order(case, policy, drain_at):
    changes, final = case
    queue = UpdateQueue(policy, combine=net_change)
    table: dict = {}
    for step, (key, change) in enumerate(changes):
        queue.enqueue(key, change, step)
        if step == drain_at:
            while len(queue):
                entry = queue.dequeue()
                apply(table, entry.key, entry.value)
    while len(queue):
        entry = queue.dequeue()
        apply(table, entry.key, entry.value)
    assert table == final


@settings(max_examples=100, deadline=None)
@given(updates=arrival_lists, policy=st.sampled_from(LOSSY))
def test_simulated_queue_length_is_bounded_by_distinct_keys(updates, policy):
    time, arrivals = 0, []
    for key, value, gap in updates:
        time += gap
        arrivals.append(Arrival(time, key, value))
    schedule = simulate(arrivals, policy, cost=2)
    last = {a.key: a.value for a in arrivals}
    served = {d.entry.key: d.entry.value for d in schedule.dequeues}
    assert served == last
    assert len(schedule.dequeues) <= len(arrivals)
    assert all(schedule.staleness_area(k) >= 0 for k in last)
