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

Writes go the other way. A write to a joined relation changes the epochs of
the windowed tuples it joins, which may be old ones the refresh would not
recompute by itself; so every joined relation occurrence gets a lookup in
reverse (:class:`EpochMark`): from one written tuple, along the join, to the
windowed tuples whose epochs it marks for the next refresh, planned by Phase
0 with its bound. When no bounded reverse lookup exists but the relation is
joined only as the parent of a foreign key (an item of order lines), its
inserts and deletes cannot reach any window (a new row has no children yet, a
row with children cannot be deleted) and only an update can: updates that
change a column the query reads of it are refused (:class:`FrozenColumns`).
Otherwise the window is not SI-3, with the reason.
"""
from __future__ import annotations

from dataclasses import dataclass

from collections import deque

from piql.catalog import Catalog, Table
from piql.planner.naming import Names
from piql.planner.phase0 import plan_query
from piql.planner.physical import PhysicalPlan
from piql.planner.views import FrozenColumns
from piql.query import (
    Aggregate, Attr, Epoch, Literal, Operand, Param, Predicate, QueryBlock, Relation, SelectItem,
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


@dataclass(frozen=True)
class EpochMark:
    """How a write to one relation occurrence joined to a time window finds the windowed
    tuples it joins: ``block`` reads them from the written tuple (its columns as
    parameters named after them) and selects their TEMPORAL column; ``guards`` are the
    conditions on the written tuple alone. Run with the tuple present (after an insert,
    before a delete), so a tuple that joins itself is found too."""

    alias: str
    table: str
    block: QueryBlock
    guards: tuple[Predicate, ...]
    plan: PhysicalPlan

    @property
    def ops_bound(self) -> int:
        return self.plan.ops_bound


def epoch_marks(catalog: Catalog, block: QueryBlock, windowed: str,
                column: str) -> tuple[EpochMark | FrozenColumns, ...] | str:
    """For every relation joined to the window, how its writes reach the epochs they
    change (or which of its updates are refused), or why some cannot."""
    found: list[EpochMark | FrozenColumns] = []
    for relation in joined_relations(block, windowed):
        mark = _reverse_lookup(catalog, block, windowed, column, relation)
        if isinstance(mark, EpochMark):
            found.append(mark)
            continue
        frozen = _parent_only(catalog, block, relation)
        if frozen is None:
            window_table = block.relation(windowed).table
            return (f"a write to {relation.table} ({relation.alias}) changes the windows of the "
                    f"{window_table} tuples it joins, and they are not reached from one "
                    f"{relation.table} tuple by bounded lookups: {mark}")
        if frozen.columns:
            found.append(frozen)
    return tuple(found)


def _reverse_lookup(catalog: Catalog, block: QueryBlock, windowed: str, column: str,
                    written: Relation) -> EpochMark | str:
    """The bounded lookup from one ``written`` tuple to the windowed tuples it joins: along
    the shortest join path first (fewest reads), else through the whole join."""
    failure = ""
    for aliases in (_path(block, written.alias, windowed),
                    [r.alias for r in block.relations if r.alias != written.alias]):
        if aliases is None:
            continue
        lookup, guards = _reverse_block(block, written.alias, aliases, Attr(windowed, column))
        found = plan_query(catalog, lookup)
        if found.plan is not None:
            return EpochMark(written.alias, written.table or "", lookup, guards, found.plan)
        assert found.failure is not None
        failure = failure or found.failure.message
    return failure


def _path(block: QueryBlock, start: str, goal: str) -> list[str] | None:
    """The relation occurrences on a shortest join path from ``start`` to ``goal``
    (``start`` excluded), following predicates between two relations."""
    edges: dict[str, set[str]] = {r.alias: set() for r in block.relations}
    for pred in block.predicates:
        ends = pred.aliases()
        if len(ends) == 2 and not isinstance(pred.right, Param):
            left, right = sorted(ends)
            edges[left].add(right)
            edges[right].add(left)
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        alias = queue.popleft()
        if alias == goal:
            path = []
            while alias != start:
                path.append(alias)
                alias = previous[alias]  # type: ignore[assignment]
            return [r.alias for r in block.relations if r.alias in path]
        for near in sorted(edges[alias]):
            if near not in previous:
                previous[near] = alias
                queue.append(near)
    return None


def _reverse_block(block: QueryBlock, written: str, aliases: list[str],
                   temporal: Attr) -> tuple[QueryBlock, tuple[Predicate, ...]]:
    """The join of ``aliases`` from the written tuple, selecting the windowed tuples'
    TEMPORAL column; predicates on parameters (the window, grouping columns) are left out,
    so every tuple the write may change is found."""
    def sub(value: Operand) -> Operand:
        if isinstance(value, Attr) and value.alias == written:
            return Param(value.column)
        return value

    kept = set(aliases) | {written}
    predicates, guards = [], []
    for pred in block.predicates:
        if isinstance(pred.left, (Epoch, Param)) or isinstance(pred.right, (Param, Epoch)):
            continue
        if not pred.aliases() <= kept:
            continue
        left, right = sub(pred.left), sub(pred.right)
        if is_attr_like(left) or is_attr_like(right):
            predicates.append(normalized_predicate(left, pred.op, right, pred.location))
        else:
            guards.append(Predicate(left, pred.op, right, pred.location))
    relations = tuple(r for r in block.relations if r.alias in aliases)
    select = (SelectItem(temporal.column, temporal),)
    return QueryBlock(relations, tuple(predicates), select), tuple(guards)


def _parent_only(catalog: Catalog, block: QueryBlock, relation: Relation) -> FrozenColumns | None:
    """``relation`` joined as the parent of a foreign key of another relation occurrence
    (every FK column equated with the parent's key): the columns of it the query reads,
    which an update must keep; None when it is not joined that way."""
    table = catalog.table(relation.table or "")
    if table is None or not _referenced_by_a_child(catalog, block, relation, table):
        return None
    key = {c.lower() for c in table.primary_key}
    read = [a.column for a in dict.fromkeys(_attrs(block))
            if a.alias == relation.alias and a.column.lower() not in key]
    return FrozenColumns(table.name, tuple(dict.fromkeys(read)))


def _referenced_by_a_child(catalog: Catalog, block: QueryBlock, parent: Relation,
                           table: Table) -> bool:
    def named(attr: Attr) -> tuple[str, str]:
        return attr.alias, attr.column.lower()

    equal = {frozenset((named(p.left), named(p.right))) for p in block.predicates
             if p.op == "=" and isinstance(p.left, Attr) and isinstance(p.right, Attr)}
    key = [c.lower() for c in table.primary_key]
    for child in block.relations:
        child_table = catalog.table(child.table or "") if child.alias != parent.alias else None
        for fk in child_table.foreign_keys if child_table else ():
            if fk.ref_table.lower() != table.name.lower() or \
                    [c.lower() for c in fk.ref_columns] != key:
                continue
            if all(frozenset(((child.alias, c.lower()), (parent.alias, r.lower()))) in equal
                   for c, r in zip(fk.columns, fk.ref_columns)):
                return True
    return False
