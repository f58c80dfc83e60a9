"""SI-3 tuple windows followed by the rest of the query (paper §3.3: the window first, then
the standard treatment).

A tuple window, the n first tuples of one table by a TEMPORAL column, is kept in a
periodic view (Phase 4, ``periodic.build_periodic``): at most n rows, refreshed in
parallel from a hash-partitioned staging view. What the query does with those n tuples
(join other tables by key, filter them, compare with parameters, aggregate) is planned by
Phase 0 over the periodic view, as over any table of n rows, and runs when the query
runs: an 8-tuple window joined with each tuple's account by primary key reads 8 + 8
tuples, and the accounts are read as they are now.

Two spellings are recognized:

- ``SELECT ... FROM (SELECT ... FROM events ORDER BY createdAt DESC LIMIT 8) e, accounts a
  WHERE e.account_id = a.id``: the window is the FROM-subquery;
- ``SELECT ... FROM events e, accounts a WHERE e.account_id = a.id ORDER BY e.createdAt
  DESC LIMIT 8``: the same query when every join is a foreign-key lookup on the joined
  table's full key with no other condition (it keeps each windowed row and adds none), so
  the newest joined rows are the joins of the newest events. Otherwise the window may not
  be taken first, and the refusal says which join prevents it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from itertools import permutations

from piql import sqlgen
from piql.catalog import Catalog
from piql.planner.periodic import (
    DEFAULT_PARTITIONS, PeriodicPlan, Window, WindowRefusal, build_periodic, tuple_window,
)
from piql.planner.naming import Names
from piql.planner.bounded_plans import Phase0Result, plan_query, why_join_filters
from piql.query_block import (
    Attr, NamedQuery, QueryBlock, Relation, SelectItem, aliases_in, attrs_in,
)


@dataclass(frozen=True)
class WindowedQuery:
    """A query split into its tuple window and the rest, which reads the window."""

    window: Window
    window_query: NamedQuery  # the window alone, a query of its own (same name)
    rest: QueryBlock  # the query, with the window as the FROM-subquery ``alias``
    alias: str


@dataclass(frozen=True)
class WindowThenRest:
    """The periodic view of the window, and the plan of the rest of the query over it."""

    built: PeriodicPlan
    rest: QueryBlock  # the query over the periodic view
    phase0: Phase0Result  # its plan, or why there is none


def split_window(catalog: Catalog, query: NamedQuery) -> WindowedQuery | WindowRefusal | None:
    """``query`` as a tuple window and the rest; a refusal when it reads a window that
    cannot be taken first; None when it has no such window (or when the whole query is a
    parameter-free summary of one, which ``periodic.find_window`` serves by itself)."""
    block = query.block
    assert block is not None
    derived = [r for r in block.relations if r.subquery is not None]
    if len(derived) == 1 and len(block.relations) == len([r for r in block.relations
                                                          if r.is_base]) + 1:
        inner = derived[0].subquery
        assert inner is not None
        window = tuple_window(catalog, inner)
        if window is None or isinstance(window, WindowRefusal):
            return window
        if len(block.relations) == 1 and not block.params:
            return None
        if inner.params:
            return WindowRefusal(
                f"the tuple window {derived[0].alias} compares with parameters: a periodic "
                "view is computed ahead of time, for every value", "move the comparison to "
                "the outer query, after the window")
        return _windowed(query, window, block, derived[0].alias)
    if len(derived) or len(block.relations) < 2:
        return None
    return _flat_window(catalog, query)


def _flat_window(catalog: Catalog, query: NamedQuery) -> WindowedQuery | WindowRefusal | None:
    """``... FROM w, r ... ORDER BY w.ts LIMIT n`` as ``FROM (SELECT ... FROM w ORDER BY ts
    LIMIT n) w, r``, when the joins keep each tuple of w and add none."""
    block = query.block
    assert block is not None
    if block.limit is None or not block.order_by or block.aggregates or block.group_by \
            or block.distinct or block.offset or block.limit_param is not None:
        return None  # the newest n rows are the answer's only without these
    ordered = {o.expr.alias for o in block.order_by if isinstance(o.expr, Attr)}
    if len(ordered) != 1 or not all(isinstance(o.expr, Attr) for o in block.order_by):
        return None
    alias = ordered.pop()
    relation = block.relation(alias)
    table = catalog.table(relation.table or "")
    first = block.order_by[0].expr
    column = table.column(first.column) if table else None  # type: ignore[union-attr]
    if table is None or column is None or not column.temporal:
        return None  # Phase 0 reads such an order from an index
    shown = f"ORDER BY {', '.join(map(str, block.order_by))} LIMIT {block.limit}"
    own = [p for p in block.predicates if p.aliases() == {alias}]
    own += [f for f in block.filters if aliases_in(f) == {alias}]
    why = (f"the condition {own[0]} filters {alias} before the LIMIT" if own
           else _why_not_first(catalog, block, alias))
    if why is not None:
        return WindowRefusal(
            f"{first} is TEMPORAL, so {shown} needs a periodic tuple window of {table.name}; "
            f"it may be taken before the rest of the query only if every join keeps each "
            f"windowed row and adds none, but {why}",
            "write the window as a FROM-subquery, (SELECT ... FROM "
            f"{table.name} ORDER BY {column.name} ... LIMIT {block.limit}) {alias}, if the "
            "query means the newest tuples first and the joins after")
    needed = _columns_read(block, alias)
    inner = QueryBlock(
        (Relation(alias, table.column_names, table=table.name),), (),
        tuple(SelectItem(c, Attr(alias, c)) for c in table.column_names if c in needed),
        order_by=block.order_by, limit=block.limit)
    window = tuple_window(catalog, inner)
    assert isinstance(window, Window)
    subquery = Relation(alias, tuple(i.name for i in inner.select), subquery=inner)
    rest = block.with_(relations=tuple(subquery if r.alias == alias else r
                                       for r in block.relations))
    return _windowed(query, window, rest, alias)


def _why_not_first(catalog: Catalog, block: QueryBlock, alias: str) -> str | None:
    """None when some order of the other relations joins each by a foreign-key lookup from
    those before it (the windowed one first); else why the first order tried cannot."""
    others = [r for r in block.relations if r.alias != alias]
    reasons: list[str] = []
    for order in permutations(others):
        placed = {alias}
        for rel in order:
            why = why_join_filters(catalog, block, rel, placed)
            if why is not None:
                reasons.append(why)
                break
            placed.add(rel.alias)
        else:
            return None
    return reasons[0]


def _columns_read(block: QueryBlock, alias: str) -> set[str]:
    """The columns of ``alias`` the query reads anywhere (inside expressions, filters and
    other relations' ON conditions too)."""
    everything = [block.select, block.order_by, block.group_by, block.predicates,
                  block.filters, block.having, [r.on for r in block.relations]]
    return {a.column for a in attrs_in(everything) if a.alias == alias}


def _windowed(query: NamedQuery, window: Window, rest: QueryBlock, alias: str) -> WindowedQuery:
    window_query = replace(query, block=window.block, view_name=None)
    return WindowedQuery(window, window_query, rest, alias)


def plan_window_then_rest(catalog: Catalog, split: WindowedQuery, names: Names | None = None,
                          partitions: int = DEFAULT_PARTITIONS) -> WindowThenRest:
    """The window's staging and periodic views, and Phase 0 on the rest over the latter."""
    built = build_periodic(catalog, split.window_query, split.window, partitions, names=names)
    table = built.table
    over = Catalog(catalog.tables + (table,), catalog.indexes, catalog.source)
    rest = split.rest.with_(relations=tuple(
        Relation(r.alias, table.column_names, table=table.name) if r.alias == split.alias else r
        for r in split.rest.relations))
    return WindowThenRest(built, rest, plan_query(over, rest, names=names))


def rest_sql(planned: WindowThenRest) -> str:
    return sqlgen.block_sql(planned.rest)
