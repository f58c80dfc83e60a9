"""Feeds served per producer/consumer edge, push or pull (Feeding Frenzy, issue 19).

A feed query (``SELECT p.* FROM follows f, posts p WHERE f.follower = <me> AND p.author =
f.followee ORDER BY p.createdAt DESC LIMIT k``, ``planner.adaptive``) is served here once
its deployment has adapted it: each edge (producer p, consumer c) is push or pull.

Three tables of piql's own hold the push side (Feeding Frenzy §4.2's ConsumerPivoted):

- ``<query>_push`` (producer, consumer): the push edges, clustered by producer (a write
  reads its producer's push edges, at most ``cap``), indexed by consumer (a read);
- ``<query>_feed``: per consumer, the newest rows of its push producers, at most k,
  clustered by (consumer, ORDER BY columns, the producer row's key);
- ``<query>_feedstate`` (consumer, n, horizon): how many feed rows the consumer has, and
  its **horizon**: the feed holds *every* row of the consumer's push producers that ranks
  before the horizon (none: every row). Trimming the row past k, or a producer's backfill
  stopping at k rows, moves the horizon up; deleting a row or a push edge does not, so
  it stays true whatever happens.

A **read** for c merges its feed (one k-limited range) with a k-limited range of each
pull producer (the pull plan's own access), joins the edges as the query does and takes
the first k. The answer is the query's if its k-th row ranks before c's horizon (every
push row that could displace it is in the feed); otherwise (a feed emptied by deletes or
by edges turned to pull) the read pulls every producer instead: slower, never wrong, and
the consumer is repaired at the next :meth:`Feed.repair`.

A **write** of a producer row pushes it along the producer's push edges only (at most
``cap``): per edge, read the consumer's state, insert the row, trim the row past k (read
it, delete it), rewrite the state: at most 6 ops (``planner.adaptive``). **Switching** an
edge is bounded too: to push, backfill the producer's newest k rows and trim; to pull,
remove the producer's rows from the consumer's feed (at most k).

Writes through other clients (a PostgreSQL trigger does not push) and bulk loads bypass
this: a load of the producers' table resets every edge to pull.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, Iterable

from piql.catalog import Catalog
from piql.planner.adaptive import AdaptivePlan, AdaptiveShape, FEED_OPS_PER_EDGE
from piql.planner.application import QueryPlan
from piql.planner.physical import Access, AccessPath
from piql.planner.push_pull import Decision
from piql.query_block import Attr, Param, QueryBlock
from piql.runtime import sqlvalues
from piql.runtime.evaluate import Binding, finish, holds, row_limit
from piql.runtime.rates import Rates
from piql.runtime.store import Store, TableShape

CONSUMER = "piql_consumer"
PRODUCER = "piql_producer"


@dataclass(frozen=True)
class FeedLayout:
    """Where one adaptive feed keeps its push side, and how its pull plan reads."""

    query: str
    block: QueryBlock
    plan: AdaptivePlan
    param: str  # the consumer's parameter
    edges: Access  # the pull plan's read of the consumer's edges
    events: Access  # the pull plan's k-limited read of one producer's rows
    event_columns: tuple[str, ...]
    order: tuple[str, ...]  # ORDER BY columns of the producer rows
    rank: tuple[str, ...]  # order, then the producer row's key: a total order
    descending: bool
    k: int
    feed: TableShape
    push: TableShape
    state: TableShape

    @property
    def by_consumer(self) -> str:
        return f"{self.push.name}_by_consumer"

    @property
    def writer(self) -> Attr:
        return self.plan.push.adjacency.writer

    @property
    def producer(self) -> Attr:
        return self.plan.push.adjacency.producer

    @property
    def tables(self) -> tuple[TableShape, ...]:
        return (self.feed, self.push, self.state)


def feed_layout(catalog: Catalog, query: QueryPlan, taken: set[str]) -> FeedLayout | None:
    """The layout of an adaptive feed whose pull plan piql can merge with a pushed feed
    (two accesses: the edges by consumer, then each producer's k newest rows; ORDER BY
    in one direction; no OFFSET or DISTINCT), else None (the pull plan serves it)."""
    plan, block = query.adaptive, query.query.block
    if plan is None or plan.shape != AdaptiveShape.FEED or block is None \
            or query.physical is None or len(query.physical.accesses) != 2:
        return None
    edges, events = query.physical.accesses
    a = plan.push.adjacency
    directions = {o.desc for o in block.order_by}
    if block.offset or block.distinct or len(directions) != 1 or block.limit is None \
            or edges.key_columns != (a.consumer.column,) or not isinstance(
                edges.key_values[0], Param) or events.key_columns != (a.writer.column,) \
            or events.range or events.residual or events.stop_after is None \
            or events.path == AccessPath.DERIVED or edges.path == AccessPath.DERIVED:
        return None
    table, edge_table = catalog.table(a.events), catalog.table(a.edges)
    assert table is not None and edge_table is not None
    order = tuple(o.expr.column for o in block.order_by)  # type: ignore[union-attr]
    rank = order + tuple(c for c in table.primary_key if c not in order)
    if not table.primary_key or events.order_columns != rank:
        return None  # the pull's k-th row must be a producer's k-th in the feed's total order

    def name(suffix: str) -> str:
        found = f"{query.name}_{suffix}"
        while found.lower() in taken:
            found += "_"
        taken.add(found.lower())
        return found

    columns = {c.name: c for c in table.columns}
    consumer_type = edge_table.column(a.consumer.column).type  # type: ignore[union-attr]
    producer_type = edge_table.column(a.producer.column).type  # type: ignore[union-attr]
    event_columns = tuple(columns)
    feed = TableShape(name("feed"), (CONSUMER,) + event_columns, (CONSUMER,) + rank,
                      (consumer_type,) + tuple(c.type for c in table.columns),
                      nullable_key=any(columns[c].nullable for c in rank))
    push = TableShape(name("push"), (PRODUCER, CONSUMER), (PRODUCER, CONSUMER),
                      (producer_type, consumer_type))
    state = TableShape(name("feedstate"), (CONSUMER, "n") + tuple(f"h_{c}" for c in rank),
                       (CONSUMER,), (consumer_type, "BIGINT") + tuple(columns[c].type
                                                                     for c in rank))
    return FeedLayout(query.name, block, plan, edges.key_values[0].name, edges, events,
                      event_columns, order, rank, directions == {True}, block.limit, feed,
                      push, state)


@dataclass
class State:
    """A consumer's feed: rows held, and the rank before which it holds every push row."""

    n: int
    horizon: tuple | None  # raw values of the rank columns; None: every push row is held


class Feed:
    """One adaptive feed on a store: reads, writes, edge switches, repairs."""

    def __init__(self, layout: FeedLayout, store: Store, cap: int | None,
                 capacity: int = 10_000, half_life: float = 50_000.0) -> None:
        self.layout = layout
        self.store = store
        self.cap = cap
        # H before any push is measured: an edge's row of the push table, then its upkeep
        self.rates = Rates(1 + FEED_OPS_PER_EDGE, layout.k, layout.k + 1, capacity, half_life)
        self.active = False
        self.stale: set[Hashable] = set()  # consumers whose last read fell back to pull
        # the latency mode's feedback: per (budget, percentile), the share of reads its
        # greedy lets exceed the budget (runtime.adapt.latency_target)
        self.latency_allowed: dict[tuple[float, float], float] = {}
        a = layout.plan.push.adjacency
        self.alias = a.writer.alias
        self.edge_alias = a.consumer.alias
        self.event_preds = tuple(p for p in layout.block.predicates
                                 if p.aliases() == {self.alias})

    # -- bounds -------------------------------------------------------------------------
    @property
    def read_bound(self) -> int:
        """A read: the pull plan (every producer pulled, when the feed cannot answer) plus
        the consumer's push edges, state and feed."""
        a = self.layout.plan.push.adjacency
        return self.layout.plan.pull_ops + a.per_consumer + 1 + self.layout.k

    @property
    def write_bound(self) -> int:
        """What pushing one producer row costs beyond the write itself."""
        fanout = self.layout.plan.push.fanout if self.cap is None else self.cap
        return max(1, fanout) + FEED_OPS_PER_EDGE * fanout + 1

    # -- tables -------------------------------------------------------------------------
    def open(self) -> None:
        """Use the push tables if the store has them (a deployment reopened)."""
        present = {t.lower() for t in self.store.table_names()}
        if all(t.name.lower() in present for t in self.layout.tables):
            for shape in self.layout.tables:
                self.store.register(shape)
            self.active = True

    def activate(self) -> None:
        """Create the push tables (in the caller's transaction); every edge starts pull."""
        if self.active:
            return
        for shape in self.layout.tables:
            self.store.create_table(shape)
        self.store.create_index(self.layout.by_consumer, self.layout.push.name,
                                (CONSUMER, PRODUCER))
        self.active = True

    def reset(self) -> None:
        """Every edge back to pull, every feed empty (after a bulk load bypassed pushes)."""
        if self.active:
            for shape in self.layout.tables:
                self.store.replace_rows(shape.name, [])
        self.stale.clear()

    # -- ranks --------------------------------------------------------------------------
    def _rank(self, values: Iterable[Any]) -> tuple:
        return tuple(sqlvalues.sort_key(v) for v in values)

    def _before(self, rank: tuple, horizon: tuple | None, or_at: bool = False) -> bool:
        """Does ``rank`` come before the horizon in the query's order (or is it the
        horizon's own row, ``or_at``: a row the feed or a pull holds)?"""
        if horizon is None:
            return True
        bound = self._rank(horizon)
        if or_at and rank == bound:
            return True
        return rank > bound if self.layout.descending else rank < bound

    def _event_rank(self, event: dict[str, Any]) -> tuple:
        return self._rank(event[c] for c in self.layout.rank)

    # -- state --------------------------------------------------------------------------
    def _state(self, consumer: Any) -> State:
        row = self.store.get(self.layout.state.name, {CONSUMER: consumer})
        if row is None:
            return State(0, None)
        return State(-row[1] - 1, tuple(row[2:])) if row[1] < 0 else State(row[1], None)

    def _save(self, consumer: Any, state: State) -> None:
        """Rewrite the state row (delete, insert: 2 writes). ``n`` is stored negated when a
        horizon is set, since a horizon may itself be all NULLs."""
        name = self.layout.state.name
        self.store.delete(name, {CONSUMER: consumer})
        horizon = state.horizon or (None,) * len(self.layout.rank)
        n = -state.n - 1 if state.horizon is not None else state.n
        self.store.insert(name, dict(zip(self.layout.state.columns,
                                         (consumer, n) + tuple(horizon))))

    # -- reads --------------------------------------------------------------------------
    def _edges(self, params: dict[str, Any]) -> list[Binding]:
        access, shape = self.layout.edges, self.store.shapes[self.layout.edges.table]
        rows = self.store.scan(
            access.table, shape.columns, [(access.key_columns[0], params[self.layout.param])],
            index=access.index.name if access.path == AccessPath.INDEX and access.index else None,
            fetches=access.path == AccessPath.INDEX and not access.covering)
        return [{(access.alias, c): v for c, v in zip(shape.columns, row)} for row in rows]

    def _pull(self, producer: Any) -> list[dict[str, Any]]:
        """One producer's newest k rows: the pull plan's access (L ops, measured)."""
        access = self.layout.events
        start = self.store.counter.ops
        rows = self.store.scan(
            access.table, self.layout.event_columns, [(access.key_columns[0], producer)],
            order=access.order_columns, descending=access.descending,
            limit=access.stop_after,
            index=access.index.name if access.path == AccessPath.INDEX and access.index else None,
            fetches=access.path == AccessPath.INDEX and not access.covering)
        self.rates.pull.measure(self.store.counter.ops - start)
        return [dict(zip(self.layout.event_columns, row)) for row in rows]

    def read(self, params: dict[str, Any]) -> list[tuple]:
        """The feed of ``params``' consumer: its pushed rows merged with its pull
        producers' (the whole pull plan when the feed cannot answer)."""
        layout = self.layout
        consumer = params[layout.param]
        limit = row_limit(layout.block, params)
        start = self.store.counter.ops
        edges = self._edges(params)
        by_producer: dict[Any, list[Binding]] = {}
        for edge in edges:
            producer = edge[(self.edge_alias, layout.producer.column)]
            if producer is not None:
                by_producer.setdefault(producer, []).append(edge)
        pushed = {row[0] for row in self.store.scan(
            layout.push.name, (PRODUCER,), [(CONSUMER, consumer)], index=layout.by_consumer)}
        state, events = State(0, None), []
        if pushed:  # else the consumer pulls every edge: its feed holds nothing it trusts
            before = self.store.counter.ops
            state = self._state(consumer)
            feed = self.store.scan(layout.feed.name, layout.feed.columns,
                                   [(CONSUMER, consumer)], order=layout.feed.key[1:],
                                   descending=layout.descending, limit=layout.k)
            column = 1 + layout.event_columns.index(layout.writer.column)
            events = [dict(zip(layout.event_columns, row[1:])) for row in feed
                      if row[column] in pushed]
            self.rates.feed.measure(self.store.counter.ops - before)
        pulls = 0
        for producer in by_producer:
            if producer not in pushed:
                events += self._pull(producer)
                pulls += 1
        ranked = self._ranked(events, by_producer, params)
        if state.horizon is not None and limit and (
                len(ranked) < limit
                or not self._before(ranked[limit - 1][0], state.horizon, or_at=True)):
            self.stale.add(consumer)  # the feed cannot tell: pull its push producers too
            events = [e for e in events if e[layout.writer.column] not in pushed]
            for producer in by_producer:
                if producer in pushed:
                    events += self._pull(producer)
                    pulls += 1
            ranked = self._ranked(events, by_producer, params)
        self.rates.read_ops.measure(consumer, self.store.counter.ops - start, pulls,
                                    bool(pushed))
        return finish(layout.block, [b for _, b in ranked], params)

    def _ranked(self, events: list[dict[str, Any]], by_producer: dict[Any, list[Binding]],
                params: dict[str, Any]) -> list[tuple[tuple, Binding]]:
        """The producer rows joined with the consumer's edges as the query joins them,
        filtered by its conditions, first-ranked first."""
        joined = []
        for event in events:
            bound = {(self.alias, c): v for c, v in event.items()}
            for edge in by_producer.get(event[self.layout.writer.column], ()):
                binding = edge | bound
                if all(holds(p, binding, params) for p in self.layout.block.predicates):
                    joined.append((self._event_rank(event), binding))
        joined.sort(key=lambda pair: pair[0], reverse=self.layout.descending)
        return joined

    # -- writes -------------------------------------------------------------------------
    def inserted(self, row: dict[str, Any]) -> int:
        """A producer row written: count the write, push it along the producer's push
        edges; the operations it took."""
        producer = row.get(self.layout.writer.column)
        if producer is None:
            return 0
        self.rates.write(producer)
        if not self.active or not self._matches(row):
            return 0
        start = self.store.counter.ops
        consumers = self._push_edges(producer)
        for consumer in consumers:
            self._push_one(consumer, row)
        if consumers:  # H: one edge's share of the whole push, its push-edge row included
            self.rates.push.measure((self.store.counter.ops - start) / len(consumers))
        return self.store.counter.ops - start

    def deleting(self, key: dict[str, Any]) -> int:
        """A producer row about to be deleted: remove it from its push consumers' feeds."""
        if not self.active:
            return 0
        start = self.store.counter.ops
        found = self.store.get(self.layout.events.table, key)
        if found is None:
            return self.store.counter.ops - start
        row = dict(zip(self.layout.event_columns, found))
        producer = row[self.layout.writer.column]
        if producer is not None:
            for consumer in self._push_edges(producer):
                self._remove(consumer, [row])
        return self.store.counter.ops - start

    def _matches(self, row: dict[str, Any]) -> bool:
        bound = {(self.alias, c): v for c, v in row.items()}
        return all(holds(p, bound, {}) for p in self.event_preds)

    def _push_edges(self, producer: Any) -> list[Any]:
        return [r[0] for r in self.store.scan(self.layout.push.name, (CONSUMER,),
                                              [(PRODUCER, producer)], limit=self.cap)]

    def _feed_row(self, consumer: Any, row: dict[str, Any]) -> dict[str, Any]:
        return {CONSUMER: consumer} | {c: row[c] for c in self.layout.event_columns}

    def _feed_key(self, row: tuple) -> dict[str, Any]:
        return {c: v for c, v in zip(self.layout.feed.columns, row) if c in self.layout.feed.key}

    def _push_one(self, consumer: Any, row: dict[str, Any]) -> None:
        state = self._state(consumer)
        if not self._before(self._event_rank(row), state.horizon):
            return  # past the horizon: the feed need not hold it
        self.store.insert(self.layout.feed.name, self._feed_row(consumer, row))
        state.n += 1
        self._trim(consumer, state)
        self._save(consumer, state)

    def _trim(self, consumer: Any, state: State) -> None:
        """Delete the rows past k (last-ranked first); the horizon moves to the best of
        them."""
        excess = state.n - self.layout.k
        if excess <= 0:
            return
        layout = self.layout
        worst = self.store.scan(layout.feed.name, layout.feed.columns, [(CONSUMER, consumer)],
                                order=layout.feed.key[1:], descending=not layout.descending,
                                limit=excess)
        for row in worst:
            self.store.delete(layout.feed.name, self._feed_key(row))
        state.n -= len(worst)
        best = dict(zip(layout.event_columns, worst[-1][1:]))
        self._raise_horizon(state, tuple(best[c] for c in layout.rank))

    def _raise_horizon(self, state: State, candidate: tuple) -> None:
        """The horizon becomes ``candidate`` if it ranks before the current one."""
        if state.horizon is None or self._before(self._rank(candidate), state.horizon):
            state.horizon = candidate

    def _remove(self, consumer: Any, rows: list[dict[str, Any]]) -> None:
        """Delete these producer rows from the consumer's feed (those it holds)."""
        removed = 0
        for row in rows:
            key = {CONSUMER: consumer} | {c: row[c] for c in self.layout.rank}
            removed += self.store.delete(self.layout.feed.name, key)
        if removed:
            state = self._state(consumer)
            state.n = max(0, state.n - removed)
            self._save(consumer, state)

    # -- switching edges ----------------------------------------------------------------
    def pushed(self, consumer: Any) -> set[Any]:
        """The producers ``consumer`` has push edges from."""
        return {row[0] for row in self.store.scan(
            self.layout.push.name, (PRODUCER,), [(CONSUMER, consumer)],
            index=self.layout.by_consumer)}

    def switch(self, producer: Any, consumer: Any, decision: Decision) -> None:
        """Turn the edge push (backfill the producer's newest k rows, trim) or pull (remove
        the producer's rows from the consumer's feed): O(k) operations, in the caller's
        transaction."""
        layout = self.layout
        edge = {PRODUCER: producer, CONSUMER: consumer}
        present = self.store.get(layout.push.name, edge) is not None
        if decision == Decision.PUSH and not present:
            self.store.insert(layout.push.name, edge)
            state = self._state(consumer)
            newest = self._pull(producer)
            for row in newest:
                if self._matches(row) and self._before(self._event_rank(row), state.horizon):
                    self.store.insert(layout.feed.name, self._feed_row(consumer, row))
                    state.n += 1
            if len(newest) >= layout.events.stop_after:  # type: ignore[operator]
                self._raise_horizon(state, tuple(newest[-1][c] for c in layout.rank))
            self._trim(consumer, state)
            self._save(consumer, state)
        elif decision == Decision.PULL and present:
            self.store.delete(layout.push.name, edge)
            held = self.store.scan(layout.feed.name, layout.feed.columns, [(CONSUMER, consumer)],
                                   limit=layout.k)
            column = layout.event_columns.index(layout.writer.column)
            self._remove(consumer, [dict(zip(layout.event_columns, r[1:])) for r in held
                                    if r[1 + column] == producer])

    def repair(self, consumer: Any) -> None:
        """Rebuild a consumer's feed from its push producers' newest k rows (after its
        reads fell back to pull): the feed then answers again."""
        layout = self.layout
        self.stale.discard(consumer)
        held = self.store.scan(layout.feed.name, layout.feed.columns, [(CONSUMER, consumer)],
                               limit=layout.k)
        for row in held:
            self.store.delete(layout.feed.name, self._feed_key(row))
        state = State(0, None)
        rows: list[dict[str, Any]] = []
        for producer in self.pushed(consumer):
            newest = self._pull(producer)
            if len(newest) >= layout.events.stop_after:  # type: ignore[operator]
                self._raise_horizon(state, tuple(newest[-1][c] for c in layout.rank))
            rows += [r for r in newest if self._matches(r)]
        rows.sort(key=self._event_rank, reverse=layout.descending)
        for row in rows:
            if state.n < layout.k and self._before(self._event_rank(row), state.horizon,
                                                   or_at=True):
                self.store.insert(layout.feed.name, self._feed_row(consumer, row))
                state.n += 1
            elif state.n >= layout.k:
                self._raise_horizon(state, tuple(row[c] for c in layout.rank))
                break
        self._save(consumer, state)
