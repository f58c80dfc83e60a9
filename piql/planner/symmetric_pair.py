"""The symmetric-pair layout of a self-join view (``ViewLayout.SYMMETRIC_PAIR``).

twoTags (documents having both tag A and tag B) joins ``Tags t1, Tags t2`` on the document
and binds ``t1.tag = <tag1>``, ``t2.tag = <tag2>``. Swapping the two occurrences and the
two parameters gives the same query back: the answer for (A, B) is the answer for (B, A).
Its view would hold every pair in both orientations, (A, B) and (B, A), so an insert of a
tag on a document with k tags writes 2k + 1 view rows. The symmetric-pair layout keeps one
orientation only: the view's definition gains ``t1.tag <= t2.tag`` (so an insert writes
k + 1 rows: the new tag with each tag not below it and with itself), and a query calls
with its two parameters in order (the smaller first, :func:`in_order`), which reads the
same single index range of the view as before.

Why the answer is unchanged: for A <= B the view's rows for (A, B) are exactly the
definition's rows for (A, B) (the added predicate holds of them all), and for A > B the
query's answer is the one for (B, A), by the symmetry this module checks. A NULL
parameter matches no row either way. Every runtime path (triggers, builds, refresh,
check and repair) maintains the view from its definition, so none of them needs to know;
only the read orders its parameters, in Python, which compares strings as the stores do
(SQLite's BINARY and the PostgreSQL store's ``COLLATE "C"`` order text by code point)
and integers as SQL does. The layout applies only to text and integer columns, for that
reason.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from piql.catalog import Catalog
from piql.planner.view_construction import EquivalenceClasses
from piql.query_block import Attr, Param, Predicate, QueryBlock
from piql.sql_types import TypeFamily, family

ORDERED_FAMILIES = (TypeFamily.TEXT, TypeFamily.INTEGER)


@dataclass(frozen=True)
class SymmetricPair:
    """One self-join's symmetry: ``first = <low>`` and ``second = <high>`` select a pair of
    rows of one table, and swapping the occurrences with the parameters leaves the query
    unchanged. The view stores the pair with ``first <= second``; a call passes ``low``
    and ``high`` in order."""

    first: Attr
    second: Attr
    low: str
    high: str

    @property
    def predicate(self) -> Predicate:
        """What the view's definition gains: one orientation of each pair."""
        return Predicate(self.first, "<=", self.second)

    def in_order(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` with ``low`` and ``high`` swapped when the first is the larger. Only
        two strings or two integers are compared (what a text or integer column's check
        accepts: Python orders them as the stores do); anything else is left for the
        parameter check, and None matches nothing in either order."""
        low, high = params.get(self.low), params.get(self.high)
        if not (_both(low, high, str) or _both(low, high, int)) or low <= high:
            return params  # in order, NULL, or values the parameter check refuses
        ordered = dict(params)
        ordered[self.low], ordered[self.high] = high, low
        return ordered


def _both(a: Any, b: Any, kind: type) -> bool:
    return isinstance(a, kind) and isinstance(b, kind)


def symmetric_pair(catalog: Catalog, block: QueryBlock) -> SymmetricPair | None:
    """The symmetric pair of ``block`` when its view can keep one orientation of each pair:
    a plain select-project-join (no aggregate, grouping, IN list, DISTINCT, union or
    non-base relation) with ``a.c = <p>`` and ``b.c = <q>`` on two occurrences of one
    table, the column text or integer, such that swapping ``a``/``b`` and ``p``/``q``
    maps the block onto itself; else None."""
    if (block.aggregates or block.group_by or block.filters or block.having or block.distinct
            or block.limit_param is not None or block.offset
            or any(not r.is_base or r.on for r in block.relations)):
        return None
    bound = [(p.left, p.right.name) for p in block.predicates
             if p.op == "=" and isinstance(p.left, Attr) and isinstance(p.right, Param)]
    tables = {r.alias: r.table for r in block.relations}
    for i, (first, low) in enumerate(bound):
        for second, high in bound[i + 1:]:
            if (first.alias == second.alias or first.column != second.column or low == high
                    or tables.get(first.alias) != tables.get(second.alias)):
                continue
            table = catalog.table(tables[first.alias] or "")
            column = table.column(first.column) if table is not None else None
            if column is None or family(column.type) not in ORDERED_FAMILIES:
                continue
            if _swaps_onto_itself(block, (first.alias, second.alias), (low, high)):
                return SymmetricPair(first, second, low, high)
    return None


def halves_storage(catalog: Catalog, block: QueryBlock, pair: SymmetricPair) -> bool:
    """Does one orientation hold about half the pairs? When the table's primary key lies
    within the pair column and the columns the two occurrences are joined on, two rows of
    one joined group never share the pair column, so a group of k rows gives k(k+1)/2
    stored pairs instead of k * k (the halved bound: ``planner.storage.symmetric_bound``)."""
    alias = next(r for r in block.relations if r.alias == pair.first.alias)
    table = catalog.table(alias.table or "")
    if table is None or not table.primary_key:
        return False
    classes = EquivalenceClasses(block.predicates)
    joined = {c for c in table.primary_key
              if Attr(pair.second.alias, c) in classes.of(Attr(pair.first.alias, c))}
    return set(table.primary_key) <= joined | {pair.first.column}


def _swaps_onto_itself(block: QueryBlock, aliases: tuple[str, str],
                       params: tuple[str, str]) -> bool:
    """Is ``block`` with the two aliases and the two parameters swapped the same query:
    the same equivalence classes, the same other predicates, each selected and ordered
    expression equal to its swap up to the classes, the same relations?"""
    def swap(node: Any) -> Any:
        if isinstance(node, Attr) and node.alias in aliases:
            return Attr(aliases[1 - aliases.index(node.alias)], node.column)
        if isinstance(node, Param) and node.name in params:
            return Param(params[1 - params.index(node.name)])
        return node

    classes = EquivalenceClasses(block.predicates)
    mine = {frozenset(c) for c in classes.classes}
    if {frozenset(map(swap, c)) for c in classes.classes} != mine:
        return False
    others = {p for p in block.predicates if p.op != "="}
    if {replace(p, left=swap(p.left), right=swap(p.right)) for p in others} != others:
        return False
    exprs = [i.expr for i in block.select] + [o.expr for o in block.order_by]
    if any(swap(e) != e and swap(e) not in classes.of(e) for e in exprs):
        return False
    columns = {r.alias: (r.table, r.columns) for r in block.relations}
    return columns[aliases[0]] == columns[aliases[1]]
