"""Time windows over a join (paper §8.2's BestSellers and AdminConfirm).

Only the relation carrying the window's TEMPORAL column is staged: its tuples
of an epoch are what a partition reads in order. The other relations of the
query are reached from each staged tuple by bounded lookups (primary keys,
CARDINALITY-bounded key prefixes), exactly like the delta query of an insert
into the windowed relation. A refresh therefore reads, per partition, the
window's tuples and what each of them joins with: the per-partition bound is
the window's tuples times (1 + the lookups' bound).

Parameters compared with the joined relations' columns become grouping
columns of the periodic view, as for the windowed relation itself, so the
lookups return every value and leave those predicates out.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.catalog import Catalog
from piql.planner.naming import Names
from piql.planner.phase0 import plan_query
from piql.planner.physical import PhysicalPlan
from piql.query import (
    Aggregate, Attr, Epoch, Operand, Param, Predicate, QueryBlock, Relation, SelectItem,
    base_attr, is_attr_like, normalized_predicate,
)

LOOKUP_PARAM = "{alias}_{column}"  # a staged tuple's column as a lookup parameter


@dataclass(frozen=True)
class WindowLookup:
    """How the relations joined to a windowed relation are read from one of its tuples."""

    relations: tuple[Relation, ...]     # the joined relations
    plan: PhysicalPlan                  # Phase 0 plan from one staged tuple

    @property
    def ops_bound(self) -> int:
        return self.plan.ops_bound


def joined_relations(block: QueryBlock, windowed: str) -> tuple[Relation, ...]:
    return tuple(r for r in block.relations if r.alias != windowed)


def window_lookup(catalog: Catalog, block: QueryBlock, windowed: str,
                  names: Names | None = None) -> WindowLookup | str:
    """The bounded lookups from one tuple of ``windowed`` to the rest of ``block``'s join,
    or why there are none."""
    joined = joined_relations(block, windowed)
    if any(r.subquery is not None for r in joined):
        return "a time window joins only base tables"
    lookup = lookup_block(block, windowed)
    found = plan_query(catalog, lookup, names=names)
    if found.plan is None:
        assert found.failure is not None
        return (f"the relations joined to the window are not reached from one "
                f"{block.relation(windowed).table} tuple by bounded lookups: "
                f"{found.failure.message}")
    return WindowLookup(joined, found.plan)


def lookup_block(block: QueryBlock, windowed: str) -> QueryBlock:
    """The join from one tuple of ``windowed`` (its columns as parameters) to the other
    relations, selecting every column the query reads of them."""
    def sub(value: Operand) -> Operand:
        if isinstance(value, Attr) and value.alias == windowed:
            return Param(LOOKUP_PARAM.format(alias=windowed, column=value.column))
        return value

    predicates = []
    for pred in block.predicates:
        if isinstance(pred.left, Epoch) or isinstance(pred.right, Param):
            continue  # the window, and parameters that become grouping columns
        left, right = sub(pred.left), sub(pred.right)
        if is_attr_like(left) or is_attr_like(right):
            predicates.append(normalized_predicate(left, pred.op, right, pred.location))
    joined = joined_relations(block, windowed)
    aliases = {r.alias for r in joined}
    read = [a for a in _attrs(block) if a.alias in aliases]
    select = tuple(SelectItem(flat_name(a), a) for a in dict.fromkeys(read))
    return QueryBlock(joined, tuple(predicates), select)


def _attrs(block: QueryBlock) -> list[Attr]:
    found: list[Attr] = []
    exprs = [i.expr for i in block.select] + list(block.group_by) + [o.expr for o in block.order_by]
    exprs += [p.left for p in block.predicates] + [p.right for p in block.predicates]
    for expr in exprs:
        attr = expr.arg if isinstance(expr, Aggregate) else base_attr(expr)  # type: ignore[arg-type]
        if isinstance(attr, Attr):
            found.append(attr)
    return found


def flat_name(attr: Attr) -> str:
    """A joined relation's column as a column of the merged shares."""
    return f"{attr.alias}__{attr.column}"


def staged_relation(block: QueryBlock, staging: str) -> Relation:
    """The relation of ``block`` that reads the staging view."""
    return next(r for r in block.relations if r.table == staging)


def collapse(block: QueryBlock, staging: str) -> QueryBlock:
    """The periodic query over the merged shares: one relation, the staging view with the
    joined relations' columns beside its own (``alias__column``); the joins themselves
    were done by the lookups, so their predicates go."""
    if not any(r.table == staging for r in block.relations):
        return block  # a tuple window: the staging view is read inside a FROM-subquery
    joined = {r.alias for r in block.relations if r.table != staging}
    if not joined:
        return block

    def sub(value):
        if isinstance(value, Attr) and value.alias in joined:
            return Attr(staging, flat_name(value))
        if isinstance(value, Epoch):
            return Epoch(sub(value.attr), value.width)
        if isinstance(value, Aggregate) and value.arg is not None:
            return Aggregate(value.func, sub(value.arg), value.distinct)
        return value

    staged = staged_relation(block, staging)
    kept = tuple(Predicate(sub(p.left), p.op, sub(p.right), p.location) for p in block.predicates
                 if not (p.aliases() & joined))
    return block.with_(
        relations=(staged,), predicates=kept,
        select=tuple(SelectItem(i.name, sub(i.expr)) for i in block.select),
        group_by=tuple(sub(g) for g in block.group_by),
        order_by=tuple(type(o)(sub(o.expr), o.desc) for o in block.order_by))
