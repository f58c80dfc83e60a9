"""The adaptive queries of a deployment (issue 19): reads, writes and ``db.adapt()``.

A feed (``runtime.feeds``, decided per producer/consumer edge) or a neighbourhood
aggregate (``runtime.aggregates``, an EAGr overlay decided per node) is served here:
:class:`AdaptiveServing` counts every read's consumer rate, answers from the feed or the
overlay once one is active (else the query's own plan answers), pushes every write of a
producer or edge row along the push edges, and recomputes the decisions from the
measured rates on demand (``adapt``, ``adapt_overlay``) or every so many writes
(``adapt_every``). ``Deployment`` owns the lock, the store and the transactions, and
delegates here for the tables and queries these serve.
"""
from __future__ import annotations

import threading
from functools import partial
from typing import Any, Callable

from piql.catalog import Table
from piql.planner.application import Plan
from piql.planner.views import WriteEvent
from piql.runtime import install
from piql.runtime.adapt import AdaptReport, Mode, adapt
from piql.runtime.aggregates import Overlay, OverlayReport, overlay_for
from piql.runtime.errors import BoundExceeded, ParameterError, UnknownName
from piql.runtime.feeds import Feed, feed_layout
from piql.runtime.foreign_writes import bypassed, guard_overlay
from piql.runtime.serving import Fused, Result, Served, by_position, handle_of
from piql.runtime.store import Store
from piql.runtime.writes import Maintainer, WriteReport

# Runs a unit of work in one of the deployment's transactions (under its lock).
Transaction = Callable[[Callable[[], Any]], Any]


class AdaptiveServing:
    """The adaptive feeds and overlays of one deployment, by query name."""

    def __init__(self, plan: Plan, store: Store, lock: threading.RLock,
                 strict: Callable[[], bool], transaction: Transaction) -> None:
        self.store = store
        self.lock = lock
        self.strict = strict
        self.transaction = transaction
        self.feeds = _feeds(plan, store)
        self.overlays = {q.name: o for q in plan.queries
                         if (o := overlay_for(q, store)) is not None}
        self._adapt_every: tuple[int, dict[str, Any]] | None = None
        self._writes_since_adapt = 0

    def __bool__(self) -> bool:
        return bool(self.feeds or self.overlays)

    def serves(self, query: str) -> bool:
        """Is ``query`` (its planned name) a feed or an overlay's aggregate?"""
        return query in self.feeds or query in self.overlays

    # -- reads ---------------------------------------------------------------
    def reader(self, served: Served) -> Callable[[dict[str, Any]], Result]:
        """:meth:`read` for ``served``'s calls, with what it looks up decided once: a
        feed (no overlay) that pulls runs its plan and notes the read for its rates
        (``Rates.pulled``, counted in order when anything reads them: ``Rates.settle``),
        without the name and feed lookups of :meth:`read`."""
        read = partial(self.read, served)
        feed = self.feeds.get(served.query.name)
        if feed is None or served.query.name in self.overlays:
            return read
        serve, param, rates = served.serve, feed.layout.param, feed.rates
        note, noted, settle_at = rates.pulled.append, rates.pulled, rates.SETTLE_AT

        def pulled(params: dict[str, Any]) -> Result:
            if feed.active:
                return read(params)
            result = serve(params)  # the query's own plan, which checks the values
            note((params[param], result.ops))  # every edge pulled
            if len(noted) >= settle_at:
                rates.settle()
            return result
        return pulled

    def handle(self, served: Served, reader: Callable[[dict[str, Any]], Result]
               ) -> Fused | None:
        """A prepared handle for a feed (no overlay) that pulls, by position: the query's
        own fused handle (``Served.fused``) with the read noted for the feed's rates, as
        :meth:`reader`'s ``pulled`` notes it; values by name, or a feed pushing, go to
        ``reader``. None where the query has no fused handle, or is no such feed."""
        feed = self.feeds.get(served.query.name)
        if feed is None or served.query.name in self.overlays or served.fused is None:
            return None
        fused, fused_close = served.fused
        slow, slow_close = handle_of(served.query.name, served.check.expected,
                                     by_position(reader, served.check.named), reader)
        rates, at = feed.rates, served.check.expected.index(feed.layout.param)
        note, noted, settle_at = rates.pulled.append, rates.pulled, rates.SETTLE_AT

        def pulled(*values: Any, **named: Any) -> Result:
            if named or feed.active:
                return slow(*values, **named)
            result = fused(*values)  # checks the values, as the query's own plan
            note((values[at], result.ops))  # every edge pulled
            if len(noted) >= settle_at:
                rates.settle()
            return result

        def close(closed: Callable[..., Result]) -> None:
            fused_close(closed)
            slow_close(closed)
        return pulled, close

    def read(self, served: Served, params: dict[str, Any]) -> Result:
        """Answer a call of an adaptive query (checked once: by ``served.serve`` or here)
        and count its consumer's read."""
        name = served.query.name
        feed, overlay = self.feeds.get(name), self.overlays.get(name)
        if feed is not None and feed.active:
            served.check(params)
            feed.rates.read(params[feed.layout.param])
            return self._feed_read(feed, served, params)
        if overlay is not None and overlay.active:
            start = self.store.counter.ops
            if not bypassed(self.store, overlay):  # else another client wrote: the plan's
                served.check(params)
                overlay.rates.read(params[overlay.param])
                return self._overlay_read(overlay, served, params,
                                          self.store.counter.ops - start)
        result = served.serve(params)  # the query's own plan, which checks the values
        if feed is not None:
            consumer = params[feed.layout.param]
            feed.rates.read(consumer)
            feed.rates.read_ops.measure(consumer, result.ops, None, False)  # every edge pulled
        if overlay is not None:
            overlay.rates.read(params[overlay.param])
        return result

    def _measured(self, read: Callable[[], list[tuple]]) -> tuple[list[tuple], int]:
        """``read()``'s rows and operations, in one snapshot of the store."""
        with self.lock, self.store.snapshot():
            start = self.store.counter.ops
            rows = read()
            return rows, self.store.counter.ops - start

    def _feed_read(self, feed: Feed, served: Served, params: dict[str, Any]) -> Result:
        """An adaptive feed's read: its pushed rows merged with its pull producers'."""
        rows, ops = self._measured(lambda: feed.read(params))
        if self.strict() and ops > feed.read_bound:
            raise BoundExceeded(f"query {served.query.name} did {ops} operations; its bound "
                                f"(push and pull) is {feed.read_bound}")
        return Result(served.columns, tuple(rows), ops, feed.read_bound)

    def _overlay_read(self, overlay: Overlay, served: Served, params: dict[str, Any],
                      checked: int) -> Result:
        """A neighbourhood aggregate read through its overlay: at most one read per
        writer of the neighbourhood, within the pull plan's bound (``checked``: the ops
        of the look for other clients' writes, before)."""
        rows, ops = self._measured(lambda: overlay.read(params))
        ops += checked
        if self.strict() and ops > served.bound:
            raise served.exceeded(ops)
        return Result(served.columns, tuple(rows), ops, served.bound)

    # -- writes --------------------------------------------------------------
    def _writer_feeds(self, table: Table) -> list[Feed]:
        return [f for f in self.feeds.values()
                if f.layout.events.table.lower() == table.name.lower()]

    def _writer_overlays(self, table: Table) -> list[Overlay]:
        return [o for o in self.overlays.values()
                if o.adjacency.events.lower() == table.name.lower()]

    def _edge_overlays(self, table: Table) -> list[Overlay]:
        return [o for o in self.overlays.values()
                if o.adjacency.edges.lower() == table.name.lower()]

    def writes(self, table: Table) -> bool:
        """Do writes of ``table`` push to a feed or an overlay (or count their rates)?"""
        return bool(self._writer_feeds(table) or self._writer_overlays(table)
                    or self._edge_overlays(table))

    def pushing(self, definition: Table, work: Callable[[], Any]) -> Any:
        """A write of a table an adaptive query reads (its producers' rows, or an overlay's
        edges) in one transaction, then the periodic adapt if due (counting the feeds'
        producer writes)."""
        done = self.transaction(work)
        self._adapt_if_due(definition)
        return done

    def idle(self, definition: Table) -> bool:
        """Does an insert into ``definition`` push nothing: no overlay reads it and every
        feed it produces for is inactive (all edges pulled)? Then it is the plain insert
        (one statement where the store can make it), counted by :meth:`counted`. Asked
        under the deployment's lock, which ``adapt`` holds while it switches feeds."""
        return not (self._writer_overlays(definition) or self._edge_overlays(definition)) \
            and not any(f.active for f in self._writer_feeds(definition))

    def counted(self, definition: Table, row: dict[str, Any], done: Any) -> Any:
        """After an :meth:`idle` insert of ``row``: count its producer's write, as
        ``Feed.inserted`` counts it, then the periodic adapt if due."""
        for feed in self._writer_feeds(definition):
            producer = row.get(feed.layout.writer.column)
            if producer is not None:
                feed.rates.write(producer)
        self._adapt_if_due(definition)
        return done

    def _adapt_if_due(self, definition: Table) -> None:
        if self._adapt_every is not None and self._writer_feeds(definition):
            self._writes_since_adapt += 1
            every, options = self._adapt_every
            if self._writes_since_adapt >= every:
                self._writes_since_adapt = 0
                self.adapt(None, **options)

    def insert(self, maintainer: Maintainer, definition: Table,
               full: dict[str, Any]) -> WriteReport:
        """Insert ``full`` (inside the caller's transaction), pushed along push edges. An
        insert the database checks and maintains alone (``Maintainer.at_once``) is its one
        statement here too, not piql's checks (TPC-W's orders, which a feed reads)."""
        report = maintainer.insert_at_once(definition, full) if maintainer.at_once(
            definition) else maintainer.insert(definition, full)
        for overlay in self._writer_overlays(definition):
            overlay.written(full, 1)
        for overlay in self._edge_overlays(definition):
            a = overlay.adjacency
            overlay.edge_inserted(full.get(a.consumer.column), full.get(a.producer.column))
        for feed in self._writer_feeds(definition):
            self._within(feed, feed.inserted(full))
        return report

    def delete(self, maintainer: Maintainer, definition: Table, key: dict[str, Any],
               replacing: dict[str, Any] | None = None) -> WriteReport:
        """Delete the row with ``key`` (inside the caller's transaction), its pushes
        taken back."""
        for feed in self._writer_feeds(definition):
            self._within(feed, feed.deleting(key))
        touched = self._writer_overlays(definition) + self._edge_overlays(definition)
        old = self.store.get(definition.name, key) if any(o.active for o in touched) else None
        row = {} if old is None else dict(zip(self.store.shapes[definition.name].columns, old))
        report = maintainer.delete_at_once(definition, key) if replacing is None and \
            maintainer.at_once(definition, WriteEvent.DELETE) else \
            maintainer.delete(definition, key, replacing=replacing)
        if row:
            for overlay in self._writer_overlays(definition):
                overlay.written(row, -1)
            for overlay in self._edge_overlays(definition):
                a = overlay.adjacency
                overlay.edge_deleted(row.get(a.consumer.column), row.get(a.producer.column))
        return report

    def _within(self, feed: Feed, ops: int) -> None:
        if self.strict() and ops > feed.write_bound:
            raise BoundExceeded(f"pushing a {feed.layout.events.table} row for query "
                                f"{feed.layout.query} did {ops} operations; its bound is "
                                f"{feed.write_bound}")

    def bypassed(self, tables: list[Table]) -> None:
        """Producer rows loaded in bulk were not pushed: those feeds and overlays start
        again all pull."""
        for table in tables:
            for feed in self._writer_feeds(table):
                with self.store.transaction():
                    feed.reset()
            for overlay in self._writer_overlays(table) + self._edge_overlays(table):
                with self.store.transaction():
                    overlay.reset()

    # -- decisions -----------------------------------------------------------
    def adapt(self, query: str | None, /, *, mode: str = "mincost", steps: int | None = None,
              budget: float | None = None, percentile: float = 0.99) -> list[AdaptReport]:
        """``Deployment.adapt`` for the feeds (all, or the one of planned name ``query``)."""
        try:
            chosen = Mode(mode)
        except ValueError:
            raise ParameterError(f"unknown adapt mode {mode!r}; choose one of "
                                 f"{', '.join(m.value for m in Mode)}") from None
        if query is not None and not self.serves(query):
            raise UnknownName(f"query {query} is no adaptive feed or neighbourhood "
                              "aggregate piql serves per edge or overlay node")
        feeds = [f for n, f in self.feeds.items() if query is None or n == query]
        return [adapt(f, self.transaction, chosen, steps, budget, percentile) for f in feeds]

    def adapt_overlay(self, query: str, /, *, mode: str = "eagr", sharing: bool = True,
                      budget: int | None = None) -> OverlayReport:
        """``Deployment.adapt_overlay`` for the aggregate of planned name ``query``."""
        overlay = self.overlays.get(query)
        if overlay is None:
            raise UnknownName(f"query {query} is no neighbourhood aggregate piql serves "
                              "through an overlay")
        if mode not in ("eagr", "push", "pull"):
            raise ParameterError(f"unknown overlay mode {mode!r}; choose eagr, push or pull")
        if budget is not None and (mode != "eagr" or budget < 1):
            raise ParameterError(f"a read budget ({budget!r}) needs mode eagr and at least 1 "
                                 "row per read")
        start = self.store.counter.ops

        declined = []

        def step() -> None:
            if not overlay.active or overlay.sharing != sharing or overlay.dissolved \
                    or overlay.drifted() or bypassed(self.store, overlay):
                overlay.rebuild(sharing)
                guard_overlay(self.store, overlay)
            push = overlay.decide(mode, budget)
            if mode == "eagr" and overlay.members and overlay.estimate is not None \
                    and overlay.unshared_estimate(budget) < overlay.estimate:
                # sharing is worth it only where its decisions cost less by estimate than
                # the same min-cut without it (a push partial aggregate costs its writers'
                # writes; it is chosen to save reads, which may not cover them)
                overlay.rebuild(False)
                push = overlay.decide(mode, budget)
                declined.append(True)
            overlay.apply(push)

        self.transaction(step)
        assert overlay.graph is not None
        return OverlayReport(query, overlay.sharing_index(), len(overlay.members),
                             len(overlay.push), len(overlay.inputs) - len(overlay.push),
                             self.store.counter.ops - start, bool(declined), overlay.chosen)

    def adapt_every(self, writes: int | None, /, **options: Any) -> None:
        """``Deployment.adapt_every``."""
        self._adapt_every = None if writes is None else (max(1, writes), options)
        self._writes_since_adapt = 0


def _feeds(plan: Plan, store: Store) -> dict[str, Feed]:
    """The adaptive feeds (``runtime.feeds``), by query name: pull-served and counting
    rates until ``adapt`` turns edges to push."""
    taken = {s.name.lower() for s in install.shapes(plan)}
    feeds = {}
    for query in plan.queries:
        layout = feed_layout(plan.catalog, query, taken)
        if layout is not None:
            feed = Feed(layout, store, layout.plan.push.fanout)
            feed.open()
            feeds[query.name] = feed
    return feeds
