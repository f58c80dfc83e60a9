"""Adaptive queries: both a bounded pull plan and a bounded push plan (issue 19).

A feed (the newest k posts of the users I follow) and a neighbourhood aggregate (a COUNT
or SUM over the users I follow) can be answered two ways. **Pull**: at read time, over
the at most K producers the consumer follows (the plan piql serves: Phase 0, or per-writer
partial aggregates, ``planner.pushdown``). **Push**: on each producer write, along the
producer's edges into a per-consumer view (the newest k rows, or the aggregate), read in
one range at query time. Which costs less depends on read and write rates (Feeding Frenzy
§3, EAGr §4): ``planner.push_pull`` decides per edge or per overlay node from rates.

This module only recognises the shape and bounds both plans in piql's operation counts;
it does not change which plan the runtime serves (the pull plan).

Push costs, per write of one producer row (the insert the papers model):

- read the producer's push edges: ``fanout`` index entries (the edge table by producer);
- per edge, a feed reads the consumer's feed state, inserts the row into the consumer's
  view, trims the row past the k-th (read it, delete it) and rewrites the state: 6 ops; an aggregate adds to the consumer's row: 2 ops, as an
  aggregate view's delta rule counts.

``fanout`` is the most consumers per producer a CARDINALITY constraint allows, else (or if
larger) ``PUSH_FANOUT_CAP``: the edges past the cap stay pull, so a consumer with such an
edge also pulls it when it reads (at most the pull plan's bound more).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.errors import Location
from piql.planner.bounds import max_rows
from piql.planner.levels import Level
from piql.planner.physical import PhysicalPlan
from piql.query_block import Attr, Param, Predicate, QueryBlock

PUSH_FANOUT_CAP = 1000  # push edges per producer when no constraint bounds its consumers
# per push edge: read the consumer's feed state, insert the row, read and delete the row past
# k, rewrite the state (delete, insert): what runtime.feeds does
FEED_OPS_PER_EDGE = 6
AGGREGATE_OPS_PER_EDGE = 2  # add to the consumer's row (an aggregate delta rule's count)
COMBINABLE = ("COUNT", "SUM", "AVG")


class AdaptiveShape(StrEnum):
    """The two shapes the papers optimise."""

    FEED = "feed"
    AGGREGATE = "neighbourhood aggregate"


@dataclass(frozen=True)
class Adjacency:
    """The adjacency join: edges ``consumer -> producer`` (the consumer fixed by the query's
    parameter) joined with the producers' writes by ``writer = producer``."""

    edges: str
    consumer: Attr
    producer: Attr
    events: str
    writer: Attr
    per_consumer: int  # producers one consumer follows, at most (a CARDINALITY bound)


@dataclass(frozen=True)
class PushPlan:
    """Producer writes pushed along the edges into one view row set per consumer."""

    adjacency: Adjacency
    rows_per_consumer: int  # k for a feed, 1 for an aggregate
    fanout: int  # push edges per producer write, at most
    capped: bool  # fanout is PUSH_FANOUT_CAP: the edges past it stay pull
    ops_per_edge: int  # after reading the edge: the consumer's view rows written
    write_ops: int
    read_ops: int


@dataclass(frozen=True)
class AdaptivePlan:
    """A query with both plans bounded; ``pull`` is the plan piql serves."""

    shape: AdaptiveShape
    pull: PhysicalPlan
    push: PushPlan
    pull_ops: int
    push_write_ops: int
    push_read_ops: int

    def push_lines(self) -> tuple[str, ...]:
        """The push plan for ``piql explain``."""
        push, a = self.push, self.push.adjacency
        newest = "row" if push.rows_per_consumer == 1 else f"{push.rows_per_consumer} rows"
        kept = f"its newest {newest}" if self.shape == AdaptiveShape.FEED else "its aggregate row"
        why = (f"piql's cap of {push.fanout} push edges per producer; the edges past it stay "
               "pull" if push.capped else f"at most {push.fanout} by the schema's constraints")
        return (
            f"per consumer {a.consumer} a view of {kept}",
            f"on a write to {a.events}: read the push edges of its {a.writer} in {a.edges} by "
            f"{a.producer} ({why}), then {push.ops_per_edge} ops per edge: "
            f"ops <= {push.write_ops}",
            f"on a read: the consumer's view, one range: ops <= {push.read_ops}",
        )


def adaptive_plan(catalog: Catalog, block: QueryBlock, level: Level,
                  pull: PhysicalPlan | None) -> AdaptivePlan | None:
    """Both plans of a feed or neighbourhood aggregate whose pull plan ``pull`` (at
    ``level``) is bounded; None for any other query."""
    if pull is None or level not in (Level.SI0, Level.SI1, Level.SI2) or block.extensions \
            or block.unions or block.group_by:
        return None
    adjacency = find_adjacency(catalog, block)
    if adjacency is None or not any(a.table == adjacency.edges for a in pull.accesses):
        return None  # not a pull plan: it reads no edges (a per-consumer view is push)
    if block.aggregates:
        if any(a.func not in COMBINABLE or a.distinct for a in block.aggregates):
            return None
        shape, rows, per_edge = AdaptiveShape.AGGREGATE, 1, AGGREGATE_OPS_PER_EDGE
    else:
        if level == Level.SI2 or block.limit is None or not block.order_by or any(
                not isinstance(o.expr, Attr) or o.expr.alias != adjacency.writer.alias
                for o in block.order_by):
            return None
        shape, rows, per_edge = AdaptiveShape.FEED, block.limit, FEED_OPS_PER_EDGE
    edges = catalog.table(adjacency.edges)
    assert edges is not None
    consumers = max_rows(edges, frozenset({adjacency.producer.column}))
    capped = consumers is None or consumers > PUSH_FANOUT_CAP
    fanout = PUSH_FANOUT_CAP if capped else consumers  # type: ignore[assignment]
    push = PushPlan(adjacency, rows, fanout, capped, per_edge, fanout * (1 + per_edge), rows)
    return AdaptivePlan(shape, pull, push, pull.ops_bound, push.write_ops, push.read_ops)


def find_adjacency(catalog: Catalog, block: QueryBlock) -> Adjacency | None:
    """Two base relations, edges fixed on their consumer column by a parameter and joined
    to the writes by one equality; every other condition on one relation, without a
    parameter (a push can test it on the written row alone)."""
    if len(block.relations) != 2 or not all(r.is_base for r in block.relations):
        return None
    for edges, events in (block.relations, tuple(reversed(block.relations))):
        fixed = [p for p in block.predicates if p.aliases() == {edges.alias}
                 and p.op == "=" and isinstance(p.left, Attr) and isinstance(p.right, Param)]
        joins = [p for p in block.predicates if p.aliases() == {edges.alias, events.alias}]
        rest = [p for p in block.predicates if p not in fixed and p not in joins]
        if len(fixed) != 1 or len(joins) != 1 or joins[0].op != "=" \
                or any(isinstance(p.right, Param) for p in rest):
            continue
        producer, writer = _sides(joins[0], edges.alias)
        consumer = fixed[0].left
        assert isinstance(consumer, Attr)
        table = catalog.table(edges.table or "")
        if producer is None or writer is None or table is None or producer == consumer:
            continue
        followed = max_rows(table, frozenset({consumer.column}))
        if followed is None:
            continue
        return Adjacency(table.name, consumer, producer, events.table or "", writer, followed)
    return None


def _sides(join: Predicate, edges: str) -> tuple[Attr | None, Attr | None]:
    left, right = join.left, join.right
    if not isinstance(left, Attr) or not isinstance(right, Attr):
        return None, None
    return (left, right) if left.alias == edges else (right, left)


def adaptive_diagnostic(plan: AdaptivePlan, location: Location) -> Diagnostic:
    """The ``adaptive`` note: both bounds, and the rule that chooses between them."""
    push, a = plan.push, plan.push.adjacency
    cap = f"; at most {push.fanout} push edges per producer, the rest pull" if push.capped \
        else ""
    return Diagnostic(
        "adaptive", "info",
        f"adaptive {plan.shape}: pull ops <= {plan.pull_ops} per read (at most "
        f"{a.per_consumer} {a.producer} per {a.consumer}); push ops <= {plan.push_write_ops} "
        f"per {a.events} write and <= {plan.push_read_ops} per read{cap}",
        "piql serves the pull plan until db.adapt() (feeds: per edge) or db.adapt_overlay() "
        "(aggregates: per overlay node) decides from measured rates: push the edge (p, c) "
        "iff reads of c / writes of p >= H / L (Feeding Frenzy, Lemma 1); see docs/adaptive.md",
        location)
