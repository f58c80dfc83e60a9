"""``db.adapt()``: push/pull decisions of the adaptive feeds recomputed from measured rates.

The decisions themselves are ``planner.push_pull``'s (pure): MinCost per edge (Feeding
Frenzy Lemma 1 with the measured H and L; a consumer pushes only if its edges' savings
cover reading its pushed feed, ``min_cost_feeds``; at most ``cap`` push edges per
producer; applied only if it beats the cheaper extreme by more than its rates' sampling
error, ``guarded``), or its latency-constrained greedy for a per-read budget (which
weighs each consumer left over budget with its rate's error too, and holds each consumer
never seen reading within the budget on its own). This module gathers the edges to
decide, turns the measured rates into ``push_pull.Rates`` and applies the switches, each
edge in a transaction of its own (O(k) operations), at most ``steps`` per call, so reads
and writes wait for one bounded step at a time; the switches left are found again at
the next call (Feeding Frenzy §4.3 re-decides only the edges whose rates moved).

The decision pass reads the edge table and the push edges whole (set-oriented, like a
refresh: O(edges) memory and time, not counted as operations; every edge needs a
decision, since a consumer or producer the counters have not seen still has a rate:
the Good-Turing estimate, ``runtime.rates``); only the switches are counted, and bounded per step.
:attr:`Mode.PUSH` and :attr:`Mode.PULL` force every edge one way (the benchmark's
baselines).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Callable

from piql.planner.push_pull import (
    Candidate, Costs, Decision, Edge, Rates as DecisionRates, guarded, latency_constrained,
    min_cost_feeds,
)
from piql.runtime.feeds import CONSUMER, PRODUCER, Feed
from piql.runtime.foreign_writes import guard_feed


class Mode(StrEnum):
    """How :func:`adapt` decides."""

    MINCOST = "mincost"  # Feeding Frenzy's MinCost: each edge by Lemma 1
    LATENCY = "latency"  # MinCost, then pull edges to push until the read budget holds
    PUSH = "push"  # every edge push (up to the cap)
    PULL = "pull"  # every edge pull


@dataclass(frozen=True)
class AdaptReport:
    """What one :func:`adapt` of a feed did."""

    query: str
    to_push: int
    to_pull: int
    repaired: int
    pending: int  # switches decided but left for the next call (``steps``)
    push_edges: int  # after the switches applied
    ops: int
    push_cost: float  # the measured H
    pull_cost: float  # the measured L
    met: bool | None = None  # LATENCY: whether the read budget holds
    chosen: Candidate | None = None  # MINCOST: the hybrid, or the extreme the guard kept


def adapt(feed: Feed, transaction: Callable[[Callable[[], Any]], Any], mode: Mode,
          steps: int | None = None, budget: float | None = None,
          percentile: float = 0.99) -> AdaptReport:
    """Recompute ``feed``'s decisions and apply at most ``steps`` switches (and repairs),
    each in its own ``transaction``."""
    store = feed.store
    start = store.counter.ops
    if not feed.active:
        transaction(lambda: (feed.activate(), guard_feed(store, feed.layout)))
    edges, current = _edges(feed, mode)
    costs = decision_costs(feed)
    met = chosen = None
    if mode == Mode.PUSH:
        wanted = _capped_all(edges, feed.cap)
    elif mode == Mode.PULL:
        wanted = set()
    else:
        rates = _rates(feed, edges)
        readers = edges
        best = min_cost_feeds(readers, rates, costs, feed.cap)
        if mode == Mode.LATENCY:
            if budget is None:
                raise ValueError("the latency mode needs a read budget (ops per read)")
            target = latency_target(feed, budget, percentile)
            found = latency_constrained(readers, rates, costs, budget, target, feed.cap,
                                        start=best, offsets=read_offsets(feed, edges, costs),
                                        unit=_one_event(feed), unseen=_unseen(feed, edges))
            wanted, met = set(found.assignment.push), found.met
        else:
            choice = guarded(readers, best, _capped_all(edges, feed.cap), rates, costs,
                                 unit=_one_event(feed))
            wanted, chosen = set(choice.assignment.push), choice.chosen
    switches = [(e, Decision.PULL) for e in sorted(current - wanted, key=repr)] + \
        [(e, Decision.PUSH) for e in sorted(wanted - current, key=repr)]
    todo = switches if steps is None else switches[:steps]
    for edge, decision in todo:
        transaction(lambda e=edge, d=decision: feed.switch(e.producer, e.consumer, d))
    room = None if steps is None else max(0, steps - len(todo))
    stale = sorted(feed.stale, key=repr)[:room] if room is None or room > 0 else []
    for consumer in stale:
        transaction(lambda c=consumer: feed.repair(c))
    pushed = sum(1 for _, d in todo if d == Decision.PUSH)
    return AdaptReport(feed.layout.query, pushed, len(todo) - pushed, len(stale),
                       len(switches) - len(todo),
                       len(current) + pushed - (len(todo) - pushed),
                       store.counter.ops - start, costs.push, costs.pull, met, chosen)


def _one_event(feed: Feed) -> float:
    """The rate one counted event adds (``runtime.rates``: count · ln 2 / half-life):
    the unit of the guard's Poisson error."""
    return math.log(2) / feed.rates.reads.half_life


def decision_costs(feed: Feed) -> Costs:
    """H, L and the pushed feed's read cost, as measured. A push edge still costs its row
    of the push table at each read (1 op), so an edge turned push saves L - 1 per read."""
    rates = feed.rates
    return Costs(push=max(rates.push.mean, 1e-9), pull=max(rates.pull.mean - 1, 1e-9),
                 read_push=max(rates.feed.mean, 0.0))


def latency_target(feed: Feed, budget: float, percentile: float) -> float:
    """The percentile the latency greedy aims at, so that the *measured* ``percentile``
    holds ``budget``. The greedy weights consumers by estimated read rates, and the reads
    since the last adapt may put more of them over budget than it expected (a reader
    seen once in the warm-up reads six times). If a share ``over`` of those reads was
    over budget where ``1 - percentile`` was allowed, the share the greedy allows is
    scaled by ``(1 - percentile) / over``: stricter when over, back towards
    ``1 - percentile`` when slack, never above it. With fewer reads than it takes to see
    one in ``1 / (1 - percentile)``, the last target stands."""
    allowed = 1.0 - percentile
    last = feed.latency_allowed.get((budget, percentile), allowed)
    recent = feed.rates.read_ops.recent
    if allowed <= 0 or len(recent) * allowed < 1:
        return 1.0 - last
    over = sum(1 for ops in recent if ops > budget) / len(recent)
    share = allowed if over == 0 else min(allowed, last * allowed / over)
    feed.latency_allowed[(budget, percentile)] = share
    recent.clear()  # the next adapt judges the reads of this one's decisions
    return 1.0 - share


def read_offsets(feed: Feed, edges: list[Edge], costs: Costs) -> dict[Any, float]:
    """Per consumer, what its measured reads cost beyond the decision model (L per pull
    edge, the pushed feed's read once it has a push edge): its edge rows, its push-edge
    rows, producers pulling dearer or cheaper than the mean, reads falling back to pull.
    Fed to the latency mode, it makes the budget one of measured operations, the same
    counts ``Result.ops`` reports: each adapt re-measures and corrects (§3.3.1's loop).
    A consumer not measured yet gets the measured consumers' mean offset per edge times
    its edges (2 per edge, an edge row and a push-edge row or a pull's, before any)."""
    degree: dict[Any, int] = {}
    for edge in edges:
        degree[edge.consumer] = degree.get(edge.consumer, 0) + 1
    offsets: dict[Any, float] = {}
    for consumer, n in degree.items():
        seen = feed.rates.read_ops.get(consumer)
        if seen is not None:
            pulls = n if seen.pulls is None else seen.pulls
            model = pulls * costs.pull + (costs.read_push if seen.pushed else 0.0)
            offsets[consumer] = seen.ops - model
    per_edge = sum(offsets.values()) / sum(degree[c] for c in offsets) if offsets else 2.0
    return {c: offsets.get(c, per_edge * n) for c, n in degree.items()}


def _edges(feed: Feed, mode: Mode) -> tuple[list[Edge], set[Edge]]:
    """The edges to decide, and the push edges now."""
    store, layout = feed.store, feed.layout
    columns = layout.push.columns
    current = {Edge(r[columns.index(PRODUCER)], r[columns.index(CONSUMER)])
               for r in store.all_rows(layout.push.name)}
    adjacency = layout.plan.push.adjacency
    shape = store.shapes[adjacency.edges]
    c, p = shape.columns.index(adjacency.consumer.column), \
        shape.columns.index(adjacency.producer.column)
    found = {Edge(r[p], r[c]) for r in store.all_rows(adjacency.edges)
             if r[p] is not None and r[c] is not None}
    return sorted(found, key=repr), current


def _rates(feed: Feed, edges: list[Edge]) -> DecisionRates:
    """Measured rates of the edges' ends; an end not seen yet gets the Good-Turing
    estimate over the edges' ends (``runtime.rates``)."""
    rates = feed.rates
    writes = rates.unseen_writes(e.producer for e in edges)
    reads = rates.unseen_reads(e.consumer for e in edges)
    return DecisionRates.of({e.producer: rates.producer_rate(e.producer, writes) for e in edges},
                            {e.consumer: rates.consumer_rate(e.consumer, reads) for e in edges})


def _unseen(feed: Feed, edges: list[Edge]) -> set[Any]:
    """The consumers the read counter holds no count of: the latency mode keeps each
    of them within the budget on its own (``latency_constrained(unseen=)``)."""
    reads = feed.rates.reads
    return {e.consumer for e in edges if e.consumer not in reads}


def _capped_all(edges: list[Edge], cap: int | None) -> set[Edge]:
    if cap is None:
        return set(edges)
    kept: dict[Any, int] = {}
    wanted = set()
    for edge in edges:
        if kept.get(edge.producer, 0) < cap:
            kept[edge.producer] = kept.get(edge.producer, 0) + 1
            wanted.add(edge)
    return wanted
