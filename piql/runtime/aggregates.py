"""Neighbourhood aggregates served through an EAGr aggregation overlay (issue 19).

A neighbourhood aggregate (``SELECT COUNT(*) FROM follows f, checkins c WHERE f.follower
= <me> AND c.userId = f.followee``) is planned over per-writer views (``planner.pushdown``:
one partial aggregate per writer, always maintained: EAGr's writer nodes, push). Once its
deployment adapts it, the query is served through an overlay (``planner.overlay``): partial
aggregate nodes summing writers that several readers share, and the readers. Each node is
push (its partial aggregate kept in ``<query>_overlay``, one row per node, updated on every
write of its writers) or pull (summed from its inputs when read), as the min-cut of EAGr
§4.4 decides (``push_pull.partition``) from measured rates, with H(k) = 2 (one add: a read
and a write) and piql's reads counted exactly (a push reader reads its row; a pull reader
one row per writer and per push partial aggregate it reads), no pull node feeding a push
node. Partial aggregates that cost more than they save are dropped, sharing is declined
where it is costlier by estimate, and an extreme the min-cut barely beats is applied
instead (``decide``). With a read budget, the nodes every read needs push are forced
(``held``).

A node's value is the per-writer view's value columns summed over its writers (COUNT(*)'s
count, each SUM with the COUNT of its argument, so a SUM of no value is NULL); a read
finishes the query's own rewritten aggregate over that one summed row.

The overlay itself is in memory, built from the edge table when the query is adapted and
kept under edge inserts and deletes (§3.3): a new edge feeds its reader directly; a deleted
edge is removed from its reader, and a partial aggregate that held the writer stops
feeding that reader, its other writers feeding it directly instead. A push reader's value
is adjusted by the writer's value (a read and an add), and a reader the change puts over
the read budget is pushed (``_hold``); after a tenth of the edges changed, the next adapt
with sharing builds the overlay again (``drifted``). Reopening a deployment starts pull
again (the overlay is rebuilt at the next adapt). Writes through other clients or bulk
loads bypass the overlay: a load of either table starts it pull again.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable

import networkx

from piql.planner.adaptive import AdaptiveShape
from piql.planner.application import QueryPlan
from piql.planner.overlay import OverlayGraph, build
from piql.planner.push_pull import NodeCost, node_costs, partition, partition_cost
from piql.query_block import Aggregate, Param
from piql.runtime.evaluate import finish, value
from piql.runtime.rates import Rates
from piql.runtime.store import Store, TableShape

PUSH_OPS = 2  # H(k): an add to a node's row (a read and a write) whatever its inputs
MARGIN = 0.01  # the min-cut is applied only if it saves more than this over an extreme
# edge changes since the overlay was built, as a share of its bipartite edges, past which
# the next adapt with sharing builds it again (EAGr §3.3 restructures a reader once its
# direct edges pass a threshold; here new edges feed readers directly, and a deleted one
# splits a partial aggregate, so sharing thins out as the graph changes)
REBUILD_SHARE = 0.1
NODE = "node"
Values = dict[str, Any]


@dataclass(frozen=True)
class OverlayReport:
    """One adapt of an overlay."""

    query: str
    sharing_index: float
    shared_nodes: int
    push_nodes: int
    pull_nodes: int
    ops: int
    sharing_declined: bool = False  # sharing asked for, but costlier by estimate: not used
    chosen: str = "eagr"  # the min-cut's decisions, or the extreme (push, pull) it barely beat


class Overlay:
    """One neighbourhood aggregate served through an aggregation overlay."""

    def __init__(self, query: QueryPlan, view: Any, store: Store) -> None:
        assert query.adaptive is not None and query.physical is not None
        self.query = query
        self.block = query.physical.block  # over the per-writer view
        self.store = store
        a = query.adaptive.push.adjacency
        self.adjacency = a
        self.param = next(p.right.name for p in query.query.block.predicates
                          if p.left == a.consumer and isinstance(p.right, Param))
        self.view = view
        self.key = next(c.name for c in view.columns if c.key)
        self.values = tuple(c.name for c in view.columns if not c.key)
        by_source = {c.source: c.name for c in view.columns}
        self.count = next(c.name for c in view.columns
                          if isinstance(c.source, Aggregate) and c.source.func == "COUNT"
                          and c.source.arg is None)
        self.sums = {c.name: by_source[Aggregate("COUNT", c.source.arg)] for c in view.columns
                     if isinstance(c.source, Aggregate) and c.source.func == "SUM"}
        self.table = TableShape(f"{query.name}_overlay", (NODE,) + self.values, (NODE,),
                                ("BIGINT",) + tuple(c.type or "BIGINT" for c in view.columns
                                                    if not c.key))
        self.rates = Rates(PUSH_OPS, query.adaptive.push.adjacency.per_consumer, 1)
        self.active = False
        self.inputs: dict[Hashable, set[Hashable]] = {}
        self.outputs: dict[Hashable, set[Hashable]] = {}
        self.members: dict[Hashable, frozenset] = {}  # partial aggregate -> its writers
        self.push: set[Hashable] = set()
        # push partial aggregates whose outputs are all push: no pull node reads them, so
        # they keep no row and a write passes through them to their readers uncharged
        self.routed: set[Hashable] = set()
        self.ids: dict[Hashable, int] = {}
        self.graph: OverlayGraph | None = None
        self.sharing = True
        self.budget: int | None = None  # rows per read the decisions keep to (``held``)
        self.estimate: float | None = None  # the min-cut decisions' estimated cost per tick
        self.dissolved = False  # partial aggregates dropped by a decision (``decide``)
        self.edge_changes = 0  # edges inserted or deleted since the overlay was built
        self.chosen = "pull"  # what the last decide applied: eagr, push or pull

    # -- building ---------------------------------------------------------------------
    def neighbourhoods(self) -> dict[Any, set[Any]]:
        a, shape = self.adjacency, self.store.shapes[self.adjacency.edges]
        c, p = shape.columns.index(a.consumer.column), shape.columns.index(a.producer.column)
        found: dict[Any, set[Any]] = {}
        for row in self.store.all_rows(a.edges):
            if row[c] is not None and row[p] is not None:
                found.setdefault(row[c], set()).add(row[p])
        return found

    def rebuild(self, sharing: bool) -> None:
        """Build the overlay from the edge table (set-oriented); every node pull."""
        if not self.active:
            self.store.create_table(self.table)
            self.active = True
        self.store.replace_rows(self.table.name, [])
        self.sharing, self.dissolved, self.edge_changes = sharing, False, 0
        self.graph = build(self.neighbourhoods(), sharing)
        self.inputs, self.outputs, self.members, self.push, self.ids = {}, {}, {}, set(), {}
        self.routed = set()
        for shared in self.graph.shared:
            node = ("a", shared.number)
            self.members[node] = shared.writers
            for writer in shared.writers:
                self._link(("w", writer), node)
        for reader, numbers, direct in self.graph.readers:
            self.inputs.setdefault(("r", reader), set())
            for number in numbers:
                self._link(("a", number), ("r", reader))
            for writer in direct:
                self._link(("w", writer), ("r", reader))

    def reset(self) -> None:
        """Back to the pull plan (a bulk load bypassed the overlay)."""
        if self.active:
            self.store.replace_rows(self.table.name, [])
        self.active = False
        self.inputs, self.outputs, self.members, self.push, self.ids = {}, {}, {}, set(), {}
        self.routed = set()

    def _link(self, source: Hashable, target: Hashable) -> None:
        self.inputs.setdefault(target, set()).add(source)
        self.outputs.setdefault(source, set()).add(target)

    def _unlink(self, source: Hashable, target: Hashable) -> None:
        self.inputs[target].discard(source)
        self.outputs[source].discard(target)

    def _id(self, node: Hashable) -> int:
        return self.ids.setdefault(node, len(self.ids))

    # -- decisions ----------------------------------------------------------------------
    def edges(self) -> list[tuple[Hashable, Hashable]]:
        return [(u, v) for v, sources in self.inputs.items() for u in sources]

    def decide(self, mode: str, budget: int | None = None) -> set[Hashable]:
        """The push nodes: none (pull), every reader and partial aggregate (push), or
        EAGr's min-cut partition from the measured rates (eagr), with every read within
        ``budget`` rows if one is given (:func:`held`). ``estimate`` is then the
        decisions' estimated cost per tick."""
        self.budget, self.estimate, self.chosen = None, None, mode
        if mode == "pull":
            return set()
        if mode == "push":
            return set(self.inputs)
        self.budget, self.chosen = budget, "eagr"
        push, self.estimate, reads, extremes = self._min_cut(self.inputs, self.members, budget)
        doomed = self._costly_shares(push, reads) if budget is None else set()
        if doomed:  # without them, and decided again: kept if cheaper by estimate
            trial = {v: {w for u in sources
                         for w in (self.inputs[u] if u in doomed else (u,))}
                     for v, sources in self.inputs.items() if v not in doomed}
            found = self._min_cut(trial, self.members, None)
            if found[1] < self.estimate:
                self.dissolve(doomed)
                self.dissolved = True  # the next adapt with sharing builds them again
                push, self.estimate, _, extremes = found
        extreme = min(extremes, key=lambda name: (extremes[name], name))
        if budget is None and self.estimate > (1 - MARGIN) * extremes[extreme]:
            # the min-cut is optimal for the estimated rates; saving less than MARGIN
            # over an extreme it barely differs from, it may well cost more (push_pull.
            # guarded does the same for feeds)
            self.chosen, self.estimate = extreme, extremes[extreme]
            return set(self.inputs) if extreme == "push" else set()
        return push

    def _costly_shares(self, push: set[Hashable], reads: dict[Hashable, float]) -> set[Hashable]:
        """The partial aggregates not worth keeping: the pull ones, and the push ones
        whose upkeep (2 ops per write of their writers) costs more than the rows they
        save their pull readers (each would read the writers instead of one row). The
        min-cut cannot drop a node, only choose push or pull for it, and a node with push
        and pull readers costs its adds for the few pull ones: without it, the push
        readers pay the same adds and the pull ones read a little more."""
        unseen = self.rates.unseen_writes(u[1] for u, _ in self.edges() if u[0] == "w")

        def writes(node: Hashable) -> float:
            return sum(self.rates.producer_rate(w[1], unseen) for w in self.writers_of(node))

        def extra(reader: Hashable, node: Hashable) -> float:
            """What ``reader`` (pull) pays more without ``node``: its writers' rows
            instead of one, or being pushed if that is cheaper."""
            rows = sum(1 for u in self.inputs[reader] if u[0] == "w" or u in push)
            pushed = PUSH_OPS * writes(reader) + reads[reader] - reads[reader] * rows
            return min(reads[reader] * (len(self.members[node]) - 1), max(0.0, pushed))

        # a pull one saves nothing (its readers read its writers either way) and keeps
        # a reader that should be push from being so without making it push
        costly = {a for a in self.members if a not in push}
        for node in self.members:
            pulled = [r for r in self.outputs.get(node, ()) if r not in push]
            if node in push and pulled and \
                    PUSH_OPS * writes(node) > sum(extra(r, node) for r in pulled):
                costly.add(node)
        return costly

    def dissolve(self, nodes: set[Hashable]) -> None:
        """Drop partial aggregates, their readers reading their writers directly."""
        for node in sorted(nodes, key=repr):
            for reader in list(self.outputs.get(node, ())):
                self._unlink(node, reader)
                for writer in self.inputs[node]:
                    self._link(writer, reader)
            self._drop(node)

    def unshared_estimate(self, budget: int | None) -> float:
        """The estimated cost of EAGr's decisions on this overlay without its partial
        aggregates (each reader fed by its writers directly), on the same rates."""
        direct = {r: self.writers_of(r) for r in self.inputs if r[0] == "r"}
        return self._min_cut(direct, {}, budget)[1]  # (not guarded: both are min-cuts)

    def _min_cut(self, inputs: dict[Hashable, set[Hashable]], members: dict[Hashable, frozenset],
                 budget: int | None
                 ) -> tuple[set[Hashable], float, dict[Hashable, float], dict[str, float]]:
        """EAGr's partition (§4.4) of the overlay ``inputs`` from the measured rates: its
        push nodes, its estimated cost (a routed partial aggregate, ``_route``, costing
        nothing), the readers' read rates and the estimated costs of all push and all
        pull."""
        edges = [(u, v) for v, sources in inputs.items() for u in sources]
        writers = {u for u, _ in edges if u[0] == "w"}
        readers = [v for v in inputs if v[0] == "r"]
        unseen_writes = self.rates.unseen_writes(w[1] for w in writers)
        unseen_reads = self.rates.unseen_reads(v[1] for v in readers)
        writes = {w: self.rates.producer_rate(w[1], unseen_writes) for w in writers}
        reads = {v: self.rates.consumer_rate(v[1], unseen_reads) for v in readers}
        costs = node_costs(edges, writes, reads, lambda k: PUSH_OPS, lambda k: k)
        # piql's reads, exactly: a push reader reads its row (EAGr counts it free); a pull
        # reader one row per writer and per push partial aggregate it reads, none for a
        # pull one (that one's PULL reads its writers)
        penalties = {}
        for reader in readers:
            direct = sum(1 for u in inputs[reader] if u[0] == "w")
            costs[reader] = NodeCost(costs[reader].push + reads[reader],
                                     reads[reader] * direct)
            penalties |= {(reader, u): reads[reader] for u in inputs[reader] if u[0] == "a"}
        forced = writers | (held(inputs, members, budget) if budget is not None else set())
        found = partition(costs, edges, must_push=forced, penalties=penalties)
        push = {n for n in found.push if n[0] != "w"}
        routed = {u for u, _ in edges if u[0] == "a" and u in push} - {
            u for u, v in edges if u[0] == "a" and v not in push}
        others = set(costs) - writers
        shared = {n for n in others if n[0] == "a"}  # all push: all routed, free
        extremes = {"push": partition_cost(costs, set(costs), (), penalties)
                    - sum(costs[a].push for a in shared),
                    "pull": partition_cost(costs, writers, others, penalties)}
        return push, found.cost - sum(costs[a].push for a in routed), reads, extremes

    def read_rows(self, node: Hashable) -> int:
        """The rows a read of ``node`` reads (what :meth:`value` counts)."""
        if node[0] == "w" or (node in self.push and node not in self.routed):
            return 1
        return sum(self.read_rows(u) for u in self.inputs.get(node, ()))

    def _hold(self, reader: Hashable) -> None:
        """Keep ``reader``'s reads within the budget after an edge changed its inputs (a
        new edge feeds it directly, a deleted one splits a partial aggregate into its
        writers): if it is now over, push it, and its pull inputs first (their writers
        summed): at most one read per writer it has, within the CARDINALITY bound, and one
        write per node pushed."""
        if self.budget is None or reader in self.push or self.read_rows(reader) <= self.budget:
            return
        for node in sorted(self.inputs[reader], key=repr):
            if node[0] == "a" and node not in self.push:
                self._store(node, self._sum(self.inputs[node]))
                self.push.add(node)
        self._store(reader, self._sum(self.inputs[reader]))
        self.push.add(reader)

    def apply(self, push: set[Hashable]) -> None:
        """Switch nodes: pull ones drop their row (downstream first), push ones compute it
        from their inputs (upstream first), so a push node's inputs are push by then."""
        graph = networkx.DiGraph(self.edges())
        graph.add_nodes_from(self.inputs)
        order = list(networkx.topological_sort(graph))
        for node in reversed(order):
            if node in self.push and node not in push:
                self.store.delete(self.table.name, {NODE: self._id(node)})
                self.push.discard(node)
        for node in order:
            if node[0] != "w" and node in push and node not in self.push:
                self._store(node, self._sum(self.inputs[node]))
                self.push.add(node)
        self._route()

    def _route(self) -> None:
        """Which push partial aggregates are routed: with every output push, their row
        would be read by no one (EAGr charges a push node on every write; here it costs
        nothing then). A routed node is read, if ever, as a pull node (its writers)."""
        self.routed &= self.push
        for node in sorted(self.push, key=repr):
            if node[0] != "a":
                continue
            routed = all(t in self.push for t in self.outputs.get(node, ()))
            if routed and node not in self.routed:
                self.store.delete(self.table.name, {NODE: self._id(node)})
                self.routed.add(node)
            elif not routed and node in self.routed:
                self.routed.discard(node)
                self._store(node, self._sum(self.inputs[node]))

    # -- values -------------------------------------------------------------------------
    def _zero(self) -> Values:
        return {c: 0 for c in self.values}

    def _row(self, table: str, key: dict[str, Any], columns: tuple[str, ...]) -> Values:
        found = self.store.get(table, key)
        if found is None:
            return self._zero()
        row = dict(zip(columns, found))
        return {c: row[c] or 0 for c in self.values}

    def _writer(self, writer: Any) -> Values:
        return self._row(self.view.name, {self.key: writer}, self.store.shapes[
            self.view.name].columns)

    def value(self, node: Hashable) -> Values:
        """A node's summed value: a writer's view row, a push node's row, a pull node's
        inputs summed (each read counted by the store)."""
        if node[0] == "w":
            return self._writer(node[1])
        if node in self.push and node not in self.routed:
            return self._row(self.table.name, {NODE: self._id(node)}, self.table.columns)
        return self._sum(self.inputs.get(node, ()))

    def _sum(self, nodes) -> Values:
        total = self._zero()
        for node in nodes:
            for column, amount in self.value(node).items():
                total[column] += amount
        return total

    def _store(self, node: Hashable, values: Values) -> None:
        self.store.delete(self.table.name, {NODE: self._id(node)})
        if values[self.count]:
            self.store.insert(self.table.name, {NODE: self._id(node)} | values)

    def _add(self, node: Hashable, delta: Values) -> None:
        """Add ``delta`` to a push node (unless routed) and, through it, to its push
        outputs."""
        if node not in self.routed:
            self.store.add(self.table.name, {NODE: self._id(node)}, delta, self.count,
                           self.sums)
        for target in self.outputs.get(node, ()):
            if target in self.push:
                self._add(target, delta)

    # -- reads and writes ---------------------------------------------------------------
    def read(self, params: dict[str, Any]) -> list[tuple]:
        consumer = params[self.param]
        node = ("r", consumer)
        summed = self.value(node) if node in self.inputs else self._zero()
        alias = self.adjacency.writer.alias
        binding = {(alias, c): (None if c in self.sums and not summed[self.sums[c]] else v)
                   for c, v in summed.items()}
        return finish(self.block, [binding], params)

    def written(self, row: dict[str, Any], sign: int) -> None:
        """A producer row inserted (``sign`` 1) or deleted (-1): count the write and push
        its change of the writer's partial aggregate (computed from the row alone, as the
        per-writer view's delta rule does) to the writer's push outputs."""
        writer = row.get(self.adjacency.writer.column)
        if writer is None:
            return
        self.rates.write(writer)
        targets = [t for t in self.outputs.get(("w", writer), ()) if t in self.push]
        if not self.active or not targets:
            return
        binding = {(self.adjacency.writer.alias, c): v for c, v in row.items()}
        delta = {}
        for column in self.view.columns:
            if not column.key:
                source = column.source
                found = 1 if source.arg is None else value(source.arg, binding, {})
                if source.func == "COUNT":
                    found = 0 if found is None else 1
                delta[column.name] = 0 if found is None else sign * found
        for target in targets:
            self._add(target, delta)

    def edge_inserted(self, consumer: Any, producer: Any) -> None:
        if not self.active or consumer is None or producer is None:
            return
        reader, writer = ("r", consumer), ("w", producer)
        self.edge_changes += 1
        self.inputs.setdefault(reader, set())
        self._link(writer, reader)
        if reader in self.push:
            self._add(reader, self._writer(producer))
        self._hold(reader)

    def edge_deleted(self, consumer: Any, producer: Any) -> None:
        if not self.active or consumer is None or producer is None:
            return
        reader, writer = ("r", consumer), ("w", producer)
        self.edge_changes += 1
        if writer in self.inputs.get(reader, ()):
            self._unlink(writer, reader)
        else:
            holder = next((a for a in self.inputs.get(reader, ())
                           if a[0] == "a" and producer in self.members[a]), None)
            if holder is None:
                return
            self._unlink(holder, reader)  # the reader no longer shares it: its writers direct
            for other in self.members[holder] - {producer}:
                self._link(("w", other), reader)
            if not self.outputs[holder]:
                self._drop(holder)
        if reader in self.push:
            self._add(reader, {c: -v for c, v in self._writer(producer).items()})
        self._hold(reader)

    def _drop(self, node: Hashable) -> None:
        for source in list(self.inputs.pop(node, ())):
            self.outputs[source].discard(node)
        self.members.pop(node, None)
        self.routed.discard(node)
        if node in self.push:
            self.push.discard(node)
            self.store.delete(self.table.name, {NODE: self._id(node)})

    def drifted(self) -> bool:
        """Has the graph changed enough since the build for sharing to be rebuilt?"""
        return self.sharing and self.graph is not None and \
            self.edge_changes > REBUILD_SHARE * self.graph.bipartite_edges

    def sharing_index(self) -> float:
        """1 - overlay edges / bipartite edges, as the overlay is now."""
        total = sum(len(self.writers_of(r)) for r in self.inputs if r[0] == "r")
        return 1 - len(self.edges()) / total if total else 0.0

    def writers_of(self, node: Hashable) -> set[Hashable]:
        return {w for u in self.inputs.get(node, ())
                for w in (self.writers_of(u) if u[0] == "a" else (u,))}


def held(inputs: dict[Hashable, set[Hashable]], members: dict[Hashable, frozenset],
         budget: int) -> set[Hashable]:
    """The nodes that must be push for every read to cost at most ``budget`` rows (EAGr
    §4.3 leaves latency-constrained decisions to future work; this is Feeding Frenzy
    §3.3's budget on an overlay). A pull reader reads one row per input, and a pull
    partial aggregate among them one per writer of it; a push reader reads its own row.
    So a reader whose writers fit pulls freely; one whose inputs fit once its partial
    aggregates are push needs those push (then it may pull, or push: the min-cut
    decides); one whose inputs do not fit must be push. Without sharing a reader's
    inputs are its writers: every reader over the budget is pushed. With it, one push
    partial aggregate can serve many readers reading a few rows each."""
    forced: set[Hashable] = set()
    for node, sources in inputs.items():
        if node[0] != "r":
            continue
        shared = {a for a in sources if a[0] == "a"}
        if len(sources) - len(shared) + sum(len(members[a]) for a in shared) <= budget:
            continue
        forced |= shared if len(sources) <= budget else {node}
    return forced


def overlay_for(query: QueryPlan, store: Store) -> Overlay | None:
    """The overlay of an adaptive neighbourhood aggregate piql can serve through one (its
    per-writer view keyed by the writer alone, the edges unique per consumer and producer,
    no other condition), else None."""
    plan, block = query.adaptive, query.query.block
    if plan is None or plan.shape != AdaptiveShape.AGGREGATE or block is None \
            or len(query.view_defs) != 1 or len(block.predicates) != 2:
        return None
    view = query.view_defs[0]
    a = plan.push.adjacency
    keys = [c for c in view.columns if c.key]
    edges = store.shapes.get(a.edges)
    if len(keys) != 1 or edges is None or set(edges.key) != {a.consumer.column,
                                                             a.producer.column}:
        return None
    if not any(isinstance(c.source, Aggregate) and c.source.func == "COUNT"
               and c.source.arg is None for c in view.columns) or not all(
            c.key or (isinstance(c.source, Aggregate) and c.source.func in ("COUNT", "SUM"))
            for c in view.columns):
        return None
    return Overlay(query, view, store)
