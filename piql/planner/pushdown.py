"""Aggregate pushdown through an adjacency join into per-writer views (EAGr §2-3).

``SELECT COUNT(*) FROM follows f, checkins c WHERE f.follower = <me> AND c.userId =
f.followee`` has no bounded plan over the tables (a followee's checkins are unbounded) and
no bounded view (one checkin changes the count of every follower). But COUNT and SUM
distribute over the join: the answer is the sum, over the at most K followees, of each
followee's own count. So piql keeps one partial aggregate per writer (a view grouped by
``c.userId``: an ordinary maintained view, O(1) upkeep per checkin) and combines the K
partial aggregates when the query runs (EAGr's writer-side partial aggregation, and the
pull half of its dataflow choice).

The rewrite is pure, tree to tree: the query's writer relation (the one every aggregate
reads) is replaced by the per-writer view, and each aggregate by the combination of its
partial state: COUNT -> the sum of counts (0 when no view row joins), SUM -> the sum of
sums (NULL when no value is), AVG -> the sum of sums over the sum of counts. MIN and MAX
are refused: a per-writer MIN is not maintainable under deletes without reading the
writer's rows (the same reason a view of them is refused).
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

from piql import sqlgen
from piql.catalog import Catalog
from piql.planner.bounded_plans import plan_query
from piql.planner.imv import build_imv
from piql.planner.naming import Names
from piql.planner.physical import PhysicalPlan
from piql.planner.view_construction import Rejection
from piql.planner.views import TraceSection, ViewDef
from piql.query_block import (
    Aggregate, Attr, Call, Func, Literal, Param, Predicate, QueryBlock, Relation, SelectItem,
    aliases_in, is_attr_like,
)

COMBINABLE = ("COUNT", "SUM", "AVG")
JOIN_PARAM = "_piql_writer"  # the per-writer block's stand-in for a joined column's value


@dataclass(frozen=True)
class Pushdown:
    """A neighbourhood aggregate answered from per-writer views: the view (and the views
    its maintenance needs), the query over it and that query's bounded plan."""

    split: "WriterSplit"
    view: ViewDef
    nested: tuple[ViewDef, ...]
    rewritten: QueryBlock
    plan: PhysicalPlan
    trace: tuple[TraceSection, ...]

    @property
    def views(self) -> tuple[ViewDef, ...]:
        return (self.view,) + self.nested


def plan_pushdown(catalog: Catalog, block: QueryBlock, query: str,
                  names: Names) -> Pushdown | str | None:
    """The bounded per-writer plan of ``block`` (the named query ``query``), the reason
    the likeliest writer relation gives none, or None when ``block`` is no aggregate over
    a join. Names are claimed in ``names`` only for the plan returned."""
    reason: str | None = None
    for writer in writers(block):
        split = split_writer(block, writer)
        if split is None:
            continue
        if isinstance(split, str):
            reason = reason or split
            continue
        attempt = names.child()
        found = _pushed(catalog, block, split, query, attempt)
        if isinstance(found, Pushdown):
            attempt.commit()
            return found
        reason = reason or found
    return reason


def _pushed(catalog: Catalog, block: QueryBlock, split: "WriterSplit", query: str,
            names: Names) -> Pushdown | str:
    name = view_name(names, query, split.writer)
    built = build_imv(catalog, split.per_writer, name, (query,), names=names)
    if isinstance(built, Rejection):
        return f"no per-writer view of {split.writer.alias} ({split.writer.table}): {built.message}"
    rewritten = combine(block, split, built.view)
    views = (built.view,) + built.nested
    over_views = Catalog(catalog.tables + tuple(v.as_table() for v in views), catalog.indexes,
                         catalog.source)
    read = plan_query(over_views, rewritten, names=names)
    if read.plan is None:
        assert read.failure is not None
        return (f"even over the per-writer view {name} the query is unbounded: "
                f"{read.failure.message}")
    trace = (TraceSection("aggregate pushdown (per-writer partial aggregates, EAGr §2-3)", (
        f"writer relation: {split.writer.alias} ({split.writer.table})",
        *(f"joined by {w} = {o}" for w, o in split.joins),
        f"per-writer view {name}: {built.view.sql}",
        f"query over it: {sqlgen.block_sql(rewritten)}",
    )),) + built.trace + (TraceSection("plan over the per-writer view (run by every query)",
                                       tuple(read.plan.root.lines())),)
    return Pushdown(split, built.view, built.nested, rewritten, read.plan, trace)


@dataclass(frozen=True)
class WriterSplit:
    """The query split at its writer relation: the per-writer block whose view piql
    maintains, and how the writer joins the rest (writer column, the value it equals)."""

    writer: Relation
    per_writer: QueryBlock
    joins: tuple[tuple[Attr, Attr], ...]


def writers(block: QueryBlock) -> list[Relation]:
    """The relations that could be the writer side of a neighbourhood aggregate, likeliest
    first: a base relation every aggregate argument reads (any, for COUNT(*) alone), the
    last written first (``follows f, checkins c``)."""
    if not block.aggregates or len(block.relations) < 2 or block.group_by or block.unions \
            or block.order_by:
        return []
    if any(not isinstance(item.expr, Aggregate) for item in block.select):
        return []
    readers = aliases_in([a.arg for a in block.aggregates])
    return [r for r in reversed(block.relations) if r.is_base and readers <= {r.alias}]


def split_writer(block: QueryBlock, writer: Relation) -> WriterSplit | str | None:
    """``block`` split at ``writer`` (one of :func:`writers`); a reason when the aggregate
    cannot be pushed down into per-writer views; None when ``writer`` joins nothing."""
    if block.extensions:
        return f"{block.extensions[0]} is not pushed down into per-writer views"
    refused = next((a for a in block.aggregates
                    if a.func not in COMBINABLE or a.distinct), None)
    if refused is not None:
        return (f"{refused} cannot be combined from per-writer partial aggregates kept under "
                "deletes (only COUNT, SUM and AVG can)")
    joins: list[tuple[Attr, Attr]] = []
    local: list[Predicate] = []
    for pred in block.predicates:
        if writer.alias not in pred.aliases():
            continue
        if pred.aliases() == {writer.alias}:
            local.append(pred)
            continue
        pair = _join_pair(pred, writer.alias)
        if pair is None:
            return (f"{pred} joins {writer.alias} other than by equality with a column, so "
                    "no per-writer view can stand for it")
        joins.append(pair)
    if not joins:
        return None
    stand_ins = [Predicate(w, "=", Param(f"{JOIN_PARAM}{n}"))
                 for n, (w, _) in enumerate(joins, start=1)]
    per_writer = QueryBlock((writer,), tuple(stand_ins + local),
                            tuple(SelectItem(i.name, i.expr) for i in block.select))
    return WriterSplit(writer, per_writer, tuple(joins))


def combine(block: QueryBlock, split: WriterSplit, view: ViewDef) -> QueryBlock:
    """``block`` with its writer relation replaced by ``view`` (same alias) and every
    aggregate by the combination of the view's partial state over the joined rows."""
    alias = split.writer.alias

    def column(source: object) -> Attr:
        found = next(c for c in view.columns if c.source == source)
        return Attr(alias, found.name)

    relations = tuple(r if r.alias != alias else
                      Relation(alias, tuple(c.name for c in view.columns), table=view.name)
                      for r in block.relations)
    predicates = [p for p in block.predicates if alias not in p.aliases()]
    predicates += [Predicate(column(w), "=", other) for w, other in split.joins]
    # parameters fixing the writer's other columns are the view's key columns now; its
    # literal conditions are in the view's definition
    predicates += [Predicate(column(p.left), "=", p.right, p.location) for p in block.predicates
                   if p.aliases() == {alias} and p.op == "=" and isinstance(p.right, Param)
                   and is_attr_like(p.left)]
    select = tuple(SelectItem(i.name, _combined(i.expr, column))  # type: ignore[arg-type]
                   for i in block.select)  # every item is an aggregate (writers())
    return replace(block, relations=relations, predicates=tuple(predicates), select=select)


def _combined(aggregate: Aggregate, column: Callable[[object], Attr]) -> Call | Aggregate:
    """One aggregate of the query from the per-writer state of the view."""
    if aggregate.func == "COUNT":  # a count of no joined row is 0, not SUM's NULL
        return Call(Func.COALESCE, (Aggregate("SUM", column(aggregate)), Literal(0, "0")))
    if aggregate.func == "SUM":
        return Aggregate("SUM", column(aggregate))
    total = Aggregate("SUM", column(Aggregate("SUM", aggregate.arg)))
    count = Aggregate("SUM", column(Aggregate("COUNT", aggregate.arg)))
    # AVG is REAL whatever the values: divide as reals, NULL when no value (x / 0 is NULL)
    return Call(Func.DIV, (Call(Func.CAST_REAL, (total,)), count))


def _join_pair(pred: Predicate, alias: str) -> tuple[Attr, Attr] | None:
    """(writer column, other relation's column) of an equality joining ``alias``."""
    if pred.op != "=" or not isinstance(pred.left, Attr) or not isinstance(pred.right, Attr):
        return None
    if pred.left.alias == alias and pred.right.alias != alias:
        return pred.left, pred.right
    if pred.right.alias == alias and pred.left.alias != alias:
        return pred.right, pred.left
    return None


def view_name(names: Names, query: str, writer: Relation) -> str:
    """The per-writer view's name (``<query>_by_<writer table>``), claimed in ``names``."""
    return names.claim(f"{query}_by_{writer.table}", holder=f"the per-writer view of query "
                       f"{query}", owner=query)


