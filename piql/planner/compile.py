"""Bounded plans compiled to one SQL statement per query, for SQLite and PostgreSQL.

A Phase 0 plan (:class:`~piql.planner.physical.PhysicalPlan`) becomes a statement whose
shape forces the plan's access path, so the database does the bounded work the plan
proved and nothing more:

- SQLite has no LATERAL. Every access names its path: ``INDEXED BY`` the plan's index
  (or the unique key index of a view whose key may hold NULL, a rowid table), ``NOT
  INDEXED`` for the clustered key of a ``WITHOUT ROWID`` table. Accesses after the first
  are ``LEFT JOIN``s, which SQLite never reorders; a per-probe stop-after (the inner side
  of a bounded-outer merge join) is a correlated row-value subquery
  ``(t.key...) IN (SELECT q.key... FROM t AS q INDEXED BY ... WHERE ... ORDER BY ... LIMIT k)``
  whose ≤ k keys are then looked up on the clustered key.
- PostgreSQL: every access after the first is ``LEFT JOIN LATERAL (SELECT ... FROM t
  WHERE t.k = outer.x [AND range] ORDER BY ... LIMIT k) ON TRUE`` (``OFFSET 0`` when
  there is no stop-after, so the planner cannot flatten it and reorder the joins); the
  predicates leave PostgreSQL one index to use.

Everything after the accesses (residual predicates, the merge join's keep-k, GROUP BY
and aggregates, ORDER BY, LIMIT, projection) is SQL over the bounded joined rows.

Issue 14's constructs (filters, expressions, ``IN`` lists and ``IS NULL`` keys, DISTINCT,
HAVING, OFFSET, ``LIMIT <n>``, LEFT / semi- / anti-joins, UNION, expression indexes)
compile in the general shape (``column`` below): an ``IN`` list is a CTE of its distinct
values, each a probe; a LEFT / semi- / anti-join numbers the outer tuples and tests each
one's matches; a UNION concatenates its branches' chains. Scalars and conditions are
``piql.planner.compile_exprs`` (with what PostgreSQL refuses); the statement's type and
how its answer is read, ``piql.planner.compiled_query``.

**Operation counts.** The statement returns, beside the rows, what it takes to compute
exactly the operations the interpreter (``piql.runtime.executor``, the reference) counts:
per probe of an access max(1, rows read) plus one fetch per row of a non-covering index
access, counted before residual predicates; a FROM-subquery costs its own plan's
operations once per query (when some outer tuple reaches it). :meth:`CompiledQuery.answer` turns the fetched rows into
``(rows, ops)``; :attr:`CompiledQuery.ops_source` says how:

- ``rows``: one access and nothing that drops or merges rows after it: ops follow from
  the number of rows returned (the plain statement, nothing added).
- ``scanned``: one access whose rows the local work may cut or aggregate: each returned
  row ends with the number of rows the access read (a window count, or COUNT(*) beside
  the aggregates); no row returned means none was read.
- ``per_row``: one access read by key (or in order, stopping) then lookups of at most one
  row by full key, with no aggregate: one flat statement of LEFT JOINs, no CTE. Each row
  of the first access comes back once, ending with whether it survives every lookup and
  residual predicate, and the operations its probes cost; the answer keeps the survivors
  (then the LIMIT), the operations are their sum (at least one: the first probe). When
  every row costs the same (no filter or lookup before a probe may drop the tuple), the
  cost column is left out: the operations are that cost (``CompiledQuery.row_ops``)
  times the rows fetched.
- ``unique``: the first access reads at most one row, the later ones are full-key lookups
  and at most one last ordered stop-after whose k rows the answer keeps: the query's own
  join (inner joins, SQLite's CROSS JOIN keeping the order), with nothing added. A row
  back means every probe found its rows, so the operations follow from the plan; no row
  back leaves them open, and the ``per_row`` / ``column`` statement of the same plan
  (:attr:`CompiledQuery.counting`) counts that execution.
- ``column``: the general shape: one CTE per access level, each a LEFT JOIN of the level
  before's surviving tuples, so a probe that finds nothing still yields one row to count.
  Every returned row ends with (position, ops); a single row with a NULL position is the
  empty answer.

Values are never written into the SQL: parameters and the query's literals are bound
(:meth:`CompiledQuery.arguments`); LIMIT counts and epoch widths are the plan's own
integers. Every identifier is quoted by sqlglot.

What the store must provide (``StoreLayout``): tables clustered on their key (SQLite:
``WITHOUT ROWID``), or rowid tables with a unique key index (:attr:`TableLayout.key_index`);
the plan's secondary indexes under their :attr:`IndexSpec.name`. On PostgreSQL the
statement's ORDER BY keeps SQLite's order of NULLs (first ascending, last descending),
written out as NULLS FIRST / NULLS LAST except on clustered-key columns (never NULL), so
an index read in order must hold the access path's columns (the index columns, then the
rest of the table's key, as SQLite's index entries do) with ``NULLS FIRST`` on every
column outside the clustered key; and text must compare bytewise (``C`` collation), as
SQLite's does.

Known differences from the interpreter, both on SQL's side: a residual comparison between
values of different types follows SQLite's affinity rules, where the interpreter compares
Python values; a SUM over integers whose partial sums leave 64 bits makes SQLite raise
``integer overflow`` (the runtime answers that execution with the interpreter, which sums
exactly, as PostgreSQL's numeric SUM does).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

from sqlglot import exp

from piql.planner.compile_exprs import Expressions, Ref, UncompilablePlan
from piql.planner.compiled_query import (  # re-exported: the compiler's public types
    CompiledQuery, Dialect, OpsSource, Read, StoreLayout, TableLayout,
)

__all__ = ["CompiledQuery", "Dialect", "OpsSource", "Read", "StoreLayout", "TableLayout",
           "UncompilablePlan", "compile_plan"]
from piql.sql_types import TypeFamily
from piql.planner.physical import (
    Access, AccessPath, AnyOf, KeyExpression, NullKey, PhysicalPlan,
)
from piql.query_block import (
    Aggregate, Attr, Call, Case, Epoch, JoinKind, Literal, OrderItem, Param, Predicate, QueryBlock,
    Ratio, attrs_in,
)

PREFIX = "_piql_"  # names piql reserves: no table or view of an application starts so


def compile_plan(plan: PhysicalPlan, dialect: str | Dialect, layout: StoreLayout, *,
                 query: QueryBlock | None = None) -> CompiledQuery:
    """``plan`` as one statement of ``dialect`` over a store laid out as ``layout``.

    ``query`` is the named query's own block when the plan reads a view for it (default:
    the plan's block): it names the answer's columns, and an aggregate of it without
    GROUP BY answers one row (COUNT 0, the others NULL) where the view holds none.
    Raises :class:`UncompilablePlan` for a plan outside the shapes Phase 0 builds."""
    dialect = Dialect(dialect)
    block = query or plan.block
    counting = _Compiler(dialect, layout).compile(plan, block)
    if not _lean_shape(plan, block, counting):
        return counting
    return _Compiler(dialect, layout).lean(plan, counting)


# -- the compiler ----------------------------------------------------------------

def _ident(name: str) -> exp.Identifier:
    return exp.to_identifier(name, quoted=True)


def _joined_ref(joined: dict[str, tuple[str, dict[str, str]]]
                ) -> Callable[[Attr], exp.Expression]:
    """A column of the plan as the statement names it: through the lateral subquery its
    alias was joined as (``joined``, filled while the statement grows), else directly."""
    def ref(attr: Attr) -> exp.Expression:
        if attr.alias in joined:
            lateral, columns = joined[attr.alias]
            return _col(columns[attr.column], lateral)
        return _col(attr.column, attr.alias)
    return ref


def _col(name: str, table: str | None = None) -> exp.Column:
    return exp.Column(this=_ident(name), table=_ident(table) if table is not None else None)


def _number(value: int) -> exp.Literal:
    return exp.Literal.number(int(value))


def _count_star() -> exp.Expression:
    return exp.Count(this=exp.Star())


@dataclass
class _Chain:
    """A plan compiled as CTEs: its result CTE (columns ``_o1..`` and ``_pos``), the
    limit on ``_pos``, and the ops CTE (one row, column ``_ops``)."""

    ctes: list[tuple[str, exp.Expression]]
    result: str
    outputs: tuple[str, ...]
    limit: int | None
    ops: str
    offset: int = 0
    limit_param: Param | None = None


@dataclass
class _Compiler(Expressions):
    dialect: Dialect
    layout: StoreLayout
    slots: dict[object, str] = field(default_factory=dict)  # Param -> placeholder name
    bound: dict[str, Param | Literal] = field(default_factory=dict)
    reads: list[Read] = field(default_factory=list)
    counter: int = 0
    tables: dict[str, TableLayout] = field(default_factory=dict)  # alias -> table read
    text_params: dict[str, None] = field(default_factory=dict)
    nothing: dict[Attr, int | None] | None = None  # a view column's value over no rows

    @property
    def sqlite(self) -> bool:
        return self.dialect == Dialect.SQLITE

    def fresh(self, stem: str) -> str:
        self.counter += 1
        return f"{stem}{self.counter}"

    # -- entry ---------------------------------------------------------------
    def compile(self, plan: PhysicalPlan, query: QueryBlock) -> CompiledQuery:
        _refuse_beyond(plan, query)
        self._name_tables(plan)
        block = plan.block
        names = tuple(item.name for item in query.select)
        extended = _extended(plan, query)
        empty = None
        if extended and query.aggregates and not query.group_by and query != block \
                and not block.aggregates:
            # an aggregate read from a view's one row: with no row, the query's expressions
            # over no rows, computed in SQL over a row of COUNTs 0 and the rest NULL
            self.nothing = _aggregates_of_nothing(query, block)
        elif query.aggregates and not query.group_by and not extended:
            empty = tuple(0 if isinstance(i.expr, Aggregate) and i.expr.func == "COUNT" else None
                          for i in query.select)
        single = len(plan.accesses) == 1 and plan.accesses[0].path != AccessPath.DERIVED \
            and not plan.accesses[0].residual
        limit, row_ops = None, 0
        if plan.branches:
            node = self._final(self._union(plan))
            source, fetches = OpsSource.COLUMN, False
        elif extended:
            chain = self._chain(plan, PREFIX)
            node = self._final(chain)
            source, fetches = OpsSource.COLUMN, False
        elif single:
            node, source, fetches = self._single(plan)
        elif self._flat_shape(plan):
            node, limit, row_ops = self._flat(plan)
            source, fetches = OpsSource.PER_ROW, False
        else:
            chain = self._chain(plan, PREFIX)
            node = self._final(chain)
            source, fetches = OpsSource.COLUMN, False
        sql, order = self._render(node)
        if self.sqlite:
            integral: tuple[int, ...] = ()
        elif extended:  # numeric wherever a SUM reaches the answer
            integral = tuple(range(len(block.select)))
        else:
            integral = tuple(i for i, item in enumerate(block.select)
                             if isinstance(item.expr, Aggregate) and item.expr.func == "SUM")
        ratios = tuple(i for i, item in enumerate(block.select) if isinstance(item.expr, Ratio))
        return CompiledQuery(self.dialect, sql, tuple(self.bound[n] for n in order), names,
                             source, fetches, tuple(self.reads), integral, empty, limit, ratios,
                             tuple(self.text_params), row_ops=row_ops)

    def _name_tables(self, plan: PhysicalPlan) -> None:
        for branch in plan.branches:
            self._name_tables(branch)
        for access in plan.accesses:
            if access.subplan is not None:
                self._name_tables(access.subplan)
        for access in plan.accesses:
            if access.table is not None:
                self.tables[access.alias] = self.layout.table(access.table)

    def column_family(self, attr: Attr) -> TypeFamily:
        table = self.tables.get(attr.alias)
        return TypeFamily.OTHER if table is None else table.family(attr.column)

    # -- one access: a plain statement ---------------------------------------
    def _single(self, plan: PhysicalPlan) -> tuple[exp.Select, OpsSource, bool]:
        block, access = plan.block, plan.accesses[0]
        table = self.layout.table(access.table or "")
        alias = access.alias

        def ref(attr: Attr) -> exp.Expression:
            return _col(attr.column, alias)

        query = exp.select(*(exp.alias_(node, _ident(name))
                             for name, node in self._projection(block.select, ref)))
        query = query.from_(self._table_ref(access, table, alias))
        where = self._probe_conditions(access, alias, ref)
        if where:
            query = query.where(exp.and_(*where))
        fetches = access.path == AccessPath.INDEX and not access.covering
        aggregated = bool(block.aggregates or block.group_by)
        if block.group_by:
            query = query.group_by(*(self.expr(g, ref) for g in block.group_by))
        if access.stop_after is not None:
            query = query.order_by(*self._scan_order(access, table, alias))
            limit = access.stop_after if block.limit is None else min(access.stop_after,
                                                                      block.limit)
            return query.limit(_number(limit)), OpsSource.ROWS, fetches
        if block.order_by:
            query = query.order_by(*(self._local_order(o, ref) for o in block.order_by))
        if block.limit is not None:
            query = query.limit(_number(block.limit))
        if not aggregated and block.limit is None:
            return query, OpsSource.ROWS, fetches
        if not aggregated:
            scanned: exp.Expression = exp.Window(this=_count_star())
        elif block.group_by:
            scanned = exp.Window(this=exp.Sum(this=_count_star()))
        else:
            scanned = _count_star()
        query = query.select(exp.alias_(scanned, _ident("_n")))
        return query, OpsSource.SCANNED, fetches

    # -- one access then key lookups: one flat statement, ops per row ------------
    def _flat_shape(self, plan: PhysicalPlan) -> bool:
        """Does every row of the first access come back exactly once (each later access
        finds at most one row, by the full clustered key; no aggregate merges rows)?"""
        block = plan.block
        if block.aggregates or block.group_by or plan.merge_at not in (None, 0):
            return False
        if any(a.path == AccessPath.DERIVED for a in plan.accesses):
            return False
        for access in plan.accesses[1:]:
            table = self.layout.table(access.table or "")
            if access.path != AccessPath.PRIMARY or access.range or access.stop_after is not None \
                    or not table.key or set(access.key_columns) != set(table.key):
                return False
        return True

    def _flat(self, plan: PhysicalPlan) -> tuple[exp.Select, int | None, int]:
        """The flat statement, the answer's LIMIT, and each row's operations when every
        row costs the same (0: each row ends with its cost, ``_ops``)."""
        block = plan.block
        first = plan.accesses[0]
        needed = _needed(block)
        joined: dict[str, tuple[str, dict[str, str]]] = {}  # alias -> (lateral, columns)
        ref = _joined_ref(joined)

        first_table = self.layout.table(first.table or "")
        query = exp.select().from_(self._table_ref(first, first_table, first.alias))
        where = self._probe_conditions(first, first.alias, ref)
        if where:
            query = query.where(exp.and_(*where))
        cost = 1 + (first.path == AccessPath.INDEX and not first.covering)
        alive: exp.Expression | None = self._all(self.predicate(p, ref) for p in first.residual)
        ops: exp.Expression = _number(cost)
        for access in plan.accesses[1:]:
            table = self.layout.table(access.table or "")
            alias = access.alias
            if self.sqlite:
                target = self._table_ref(access, table, alias)
                on = self._probe_conditions(access, alias, ref)
                matched = _col(table.rowid if table.key_index else table.key[0], alias)
                query = query.join(target, on=exp.and_(*on), join_type="LEFT")
            else:
                lateral = self.fresh(f"{PREFIX}j")
                own = {c: self.fresh("_c") for c in needed.get(alias, [])}
                marker = self.fresh("_m")
                picked = [exp.alias_(_col(c, alias), _ident(n)) for c, n in own.items()]
                picked.append(exp.alias_(_number(1), _ident(marker)))
                inner = exp.select(*picked).from_(self._table_ref(access, table, alias))
                inner = inner.where(exp.and_(*self._probe_conditions(access, alias, ref)))
                inner = inner.offset(_number(0))  # a fence: PostgreSQL keeps the join order
                query = query.join(exp.Lateral(this=exp.Subquery(this=inner), view=False,
                                               outer=False,
                                               alias=exp.TableAlias(this=_ident(lateral))),
                                   on=exp.true(), join_type="LEFT")
                joined[alias] = (lateral, own)
                matched = _col(marker, lateral)
            # a probe for every tuple alive so far: max(1, rows) reads, + 1 fetch per row
            probe: exp.Expression = _number(1)
            if alive is not None:
                probe = exp.Case(ifs=[exp.If(this=alive.copy(), true=_number(1))],
                                 default=_number(0))
            ops = exp.Add(this=ops, expression=probe)
            found = exp.Not(this=exp.Is(this=matched, expression=exp.Null()))
            alive = self._all([alive.copy()] if alive is not None else [], found,
                              *(self.predicate(p, ref) for p in access.residual))
        items = [exp.alias_(node, _ident(name))
                 for name, node in self._projection(block.select, ref)]
        kept = _number(1) if alive is None else exp.Case(
            ifs=[exp.If(this=alive, true=_number(1))], default=_number(0))
        query = query.select(*items, exp.alias_(kept, _ident("_alive")))
        # each probe counted unconditionally (no filter or lookup before it may drop the
        # tuple): every row the first access read costs the same, known from the plan, so
        # the rows fetched give the operations (``CompiledQuery.row_ops``)
        row_ops = _constant_sum(ops)
        if not row_ops:
            query = query.select(exp.alias_(ops, _ident("_ops")))
        if first.stop_after is not None:  # one row per first-access row: LIMIT is per probe
            query = query.order_by(*self._scan_order(first, first_table, first.alias))
            query = query.limit(_number(first.stop_after))
        elif block.order_by:
            query = query.order_by(*(self._local_order(o, ref) for o in block.order_by))
        return query, block.limit, row_ops

    @staticmethod
    def _all(*parts) -> exp.Expression | None:
        conditions = [c for part in parts for c in (part if not isinstance(part, exp.Expression)
                                                    else [part])]
        return exp.and_(*conditions) if conditions else None

    # -- at most one row, then lookups (and one ordered stop-after): the query's join ----
    def lean(self, plan: PhysicalPlan, counting: CompiledQuery) -> CompiledQuery:
        """``plan`` (of :func:`_lean_shape`) as the query's own join: inner joins, no
        survive flag, no operation column. A row back means every probe found its rows,
        so the operations follow from the rows and the plan (``OpsSource.UNIQUE``); no
        row back leaves them open (nothing found, or a probe or filter dropped the one
        tuple), and ``counting`` (the flat statement) answers that execution."""
        block, first = plan.block, plan.accesses[0]
        tail = plan.accesses[-1] if plan.accesses[-1].stop_after is not None \
            and len(plan.accesses) > 1 else None
        joined: dict[str, tuple[str, dict[str, str]]] = {}  # alias -> (lateral, columns)
        needed = _needed(block)
        ref = _joined_ref(joined)

        first_table = self.layout.table(first.table or "")
        query = exp.select().from_(self._table_ref(first, first_table, first.alias))
        where = self._probe_conditions(first, first.alias, ref)
        where += [self.predicate(p, ref) for p in first.residual]
        hit = 1 + (first.path == AccessPath.INDEX and not first.covering)
        for access in plan.accesses[1:]:
            table = self.layout.table(access.table or "")
            if access is tail:
                query, marker = self._lean_tail(query, access, table, ref, joined, needed)
            else:
                hit += 1
                target = self._table_ref(access, table, access.alias)
                on = self._probe_conditions(access, access.alias, ref)
                # SQLite keeps a CROSS JOIN's order; PostgreSQL starts from the one row
                query = query.join(target, on=exp.and_(*on),
                                   join_type="CROSS" if self.sqlite else "INNER")
            where += [self.predicate(p, ref) for p in access.residual]
        if where:
            query = query.where(exp.and_(*where))
        query = query.select(*(exp.alias_(node, _ident(name))
                               for name, node in self._projection(block.select, ref)))
        per_row = 0
        if tail is not None:
            per_row = 1 + (tail.path == AccessPath.INDEX and not tail.covering)
            query = query.select(exp.alias_(marker, _ident("_found")))
            if tail.stop_after != 1:  # else at most one row: SQLite would sort it all the
                # same (a temporary B-tree: 6.2 -> 4.3 µs for OrderDisplay's last order)
                query = query.order_by(*(self._local_order(o, ref) for o in block.order_by))
        if block.limit is not None:  # LIMIT 0 returns nothing: the counting statement counts
            query = query.limit(_number(block.limit))
        sql, order = self._render(query)
        return replace(counting, sql=sql, parameters=tuple(self.bound[n] for n in order),
                       ops_source=OpsSource.UNIQUE, fetches=False, reads=tuple(self.reads),
                       hit=(hit, per_row), tail=tail is not None, counting=counting,
                       limit=None, row_ops=0,
                       text_parameters=tuple(self.text_params))

    def _lean_tail(self, query: exp.Select, access: Access, table: TableLayout, ref: Ref,
                   joined: dict[str, tuple[str, dict[str, str]]],
                   needed: dict[str, list[str]]) -> tuple[exp.Select, exp.Expression]:
        """The per-probe stop-after of the one outer tuple: at most k rows read in order,
        LEFT joined (a probe finding nothing still returns the tuple, NULL-extended, so
        that it is counted), and the column that is NULL then."""
        alias = access.alias
        if self.sqlite:
            inner = self.fresh(f"{PREFIX}q")
            keys = [table.rowid] if table.key_index else list(table.key)
            chosen = exp.select(*(_col(k, inner) for k in keys))
            chosen = chosen.from_(self._table_ref(access, table, inner))
            chosen = chosen.where(exp.and_(*self._probe_conditions(
                access, inner, lambda a: _col(a.column, inner) if a.alias == alias else ref(a))))
            chosen = chosen.order_by(*self._scan_order(access, table, inner)).limit(
                _number(access.stop_after))  # type: ignore[arg-type]
            target = exp.Table(this=_ident(table.name), alias=exp.TableAlias(this=_ident(alias)),
                               indexed=False)
            self.reads.append(Read(alias, table.name, None, False))
            probe = exp.Tuple(expressions=[_col(k, alias) for k in keys]) if len(keys) > 1 \
                else _col(keys[0], alias)
            # one row by a one-column key: a scalar subquery, which SQLite runs without
            # building the IN list's ephemeral table (12.7 -> 9.9 µs for OrderDisplay's
            # last order); no row found is NULL, which no key equals, as an empty list
            on = exp.EQ(this=probe, expression=exp.Subquery(this=chosen)) \
                if access.stop_after == 1 and len(keys) == 1 \
                else exp.In(this=probe, query=exp.Subquery(this=chosen))
            return query.join(target, on=on, join_type="LEFT"), _col(keys[0], alias)
        lateral = self.fresh(f"{PREFIX}j")
        own = {c: self.fresh("_c") for c in needed.get(alias, [])}
        marker = self.fresh("_m")
        picked = [exp.alias_(_col(c, alias), _ident(n)) for c, n in own.items()]
        picked.append(exp.alias_(_number(1), _ident(marker)))
        inner_query = exp.select(*picked).from_(self._table_ref(access, table, alias))
        inner_query = inner_query.where(exp.and_(*self._probe_conditions(access, alias, ref)))
        inner_query = inner_query.order_by(*self._scan_order(access, table, alias)).limit(
            _number(access.stop_after))  # type: ignore[arg-type]
        joined[alias] = (lateral, own)
        return query.join(exp.Lateral(this=exp.Subquery(this=inner_query), view=False,
                                      outer=False, alias=exp.TableAlias(this=_ident(lateral))),
                          on=exp.true(), join_type="LEFT"), _col(marker, lateral)

    # -- the general shape: one CTE per access level -------------------------
    def _chain(self, plan: PhysicalPlan, prefix: str) -> _Chain:
        block = plan.block
        ctes: list[tuple[str, exp.Expression]] = []
        columns: dict[tuple[str, str], str] = {}  # (alias, column) -> level column
        terms: list[exp.Expression] = []
        needed = _needed(block, plan)
        survivors: str | None = None
        for position, access in enumerate(plan.accesses):
            level = f"{prefix}l{position}"

            def ref(attr: Attr, within: str | None = None) -> exp.Expression:
                return _col(columns[(attr.alias, attr.column)], within)

            outer = survivors
            if access.join != JoinKind.INNER:  # number the outer tuples: a match test each
                outer = self._numbered(outer, f"{prefix}n{position}", f"_r{position}", ctes)
            probing = position > 0
            if access.path == AccessPath.DERIVED:
                node, term = self._derived_level(access, outer, columns, needed, prefix,
                                                 position, ctes)
            else:
                access, outer, probing = self._listed(access, outer, columns, prefix, position,
                                                      ctes, probing)
                node, term = self._base_level(access, outer, columns, needed, position,
                                              (lambda within: lambda a: ref(a, within))(outer),
                                              probing)
            ctes.append((level, node))
            terms.append(term(level))
            found: list[exp.Expression] = []
            if probing and access.path != AccessPath.DERIVED:
                found.append(exp.Not(this=exp.Is(this=_col(f"_m{position}"), expression=exp.Null())))
            if access.join != JoinKind.INNER:
                level = self._joined(access, level, outer or "", f"_r{position}", found,
                                     columns, needed, ref, f"{prefix}s{position}j", ctes)
                keep = [self.condition(c, ref) for c in access.post]
            else:
                keep = found + [self.condition(c, ref) for c in access.residual]
            merge = position == plan.merge_at and (position > 0 or probing) \
                and block.fetch is not None
            if keep or merge:
                survivors = f"{prefix}s{position}"
                query = exp.select(exp.Star()).from_(exp.Table(this=_ident(level)))
                if keep:
                    query = query.where(exp.and_(*keep))
                if merge:  # keep k (without ORDER BY: any k, as SQL's LIMIT)
                    if block.order_by:
                        query = query.order_by(*(self._local_order(o, ref)
                                                 for o in block.order_by))
                    query = query.limit(_number(block.fetch))  # type: ignore[arg-type]
                ctes.append((survivors, query))
            else:
                survivors = level

        def final_ref(attr: Attr) -> exp.Expression:
            return _col(columns[(attr.alias, attr.column)])

        if self.nothing is not None and prefix == PREFIX:
            survivors = self._or_nothing(survivors or "", columns, f"{prefix}z", ctes)
        result = self._result(block, final_ref, survivors or "", prefix)
        outputs = tuple(name for name, _ in self._projection(block.select, final_ref,
                                                             split=prefix == PREFIX))
        ctes.append((f"{prefix}r", result))
        total = terms[0]
        for term in terms[1:]:
            total = exp.Add(this=total, expression=term)
        ctes.append((f"{prefix}ops", exp.select(exp.alias_(total, _ident("_ops")))))
        return _Chain(ctes, f"{prefix}r", outputs, block.limit, f"{prefix}ops",
                      block.offset, block.limit_param)

    def _or_nothing(self, survivors: str, columns: dict[tuple[str, str], str], name: str,
                    ctes: list[tuple[str, exp.Expression]]) -> str:
        """The view's row, or when it holds none the row of aggregates over nothing."""
        assert self.nothing is not None
        names = list(columns.items())
        found = exp.select(*(_col(n) for _, n in names)).from_(exp.Table(this=_ident(survivors)))
        default = [exp.alias_(exp.Null() if self.nothing.get(Attr(*key)) is None
                              else _number(0), _ident(n)) for key, n in names]
        none = exp.select(*default).where(exp.Not(this=exp.Exists(
            this=exp.select(_number(1)).from_(exp.Table(this=_ident(survivors))))))
        ctes.append((name, exp.union(found, none, distinct=False)))
        return name

    def _union(self, plan: PhysicalPlan) -> _Chain:
        """``UNION [ALL]`` of the branches' answers, left to right as the interpreter
        runs them: each row keeps its place (branch, position); a UNION keeps the first
        of each duplicate of everything so far (GROUP BY, NULLs together); then ORDER BY
        the output columns, ties in that place. The operations are the branches' sum."""
        block = plan.block
        ctes: list[tuple[str, exp.Expression]] = []
        chains = [self._chain(b, f"{PREFIX}b{i}_") for i, b in enumerate(plan.branches)]
        width = len(block.select)
        outputs = [f"_o{n}" for n in range(1, width + 1)]
        so_far: str | None = None
        for number, ((_, keeps_all), chain) in enumerate(zip(block.unions, chains)):
            ctes.extend(chain.ctes)
            place = exp.Add(this=exp.Mul(this=_number(number), expression=_number(2 ** 32)),
                            expression=_col("_pos"))
            part = exp.select(*(exp.alias_(_col(o), _ident(n))
                                for o, n in zip(chain.outputs, outputs)),
                              exp.alias_(place, _ident("_ord")))
            part = part.from_(exp.Table(this=_ident(chain.result)))
            window = self._window(chain, chain.result)
            if window is not None:
                part = part.where(window)
            joined: exp.Expression = part if so_far is None else exp.union(
                exp.select(exp.Star()).from_(exp.Table(this=_ident(so_far))), part,
                distinct=False)
            if number > 0 and not keeps_all:
                joined = exp.select(*(_col(n) for n in outputs),
                                    exp.alias_(exp.Min(this=_col("_ord")), _ident("_ord")))\
                    .from_(exp.Subquery(this=joined, alias=exp.TableAlias(
                        this=_ident(self.fresh(f"{PREFIX}u")))))\
                    .group_by(*(_col(n) for n in outputs))
            so_far = f"{PREFIX}u{number}"
            ctes.append((so_far, joined))
        names = [item.name for item in block.select]
        order = [exp.Ordered(this=_col(outputs[names.index(o.expr.column)]),  # type: ignore
                             desc=o.desc, nulls_first=not o.desc) for o in block.order_by]
        order.append(exp.Ordered(this=_col("_ord")))
        result = exp.select(*(_col(n) for n in outputs), exp.alias_(
            exp.Window(this=exp.RowNumber(), order=exp.Order(expressions=order)), _ident("_pos")))
        ctes.append((f"{PREFIX}r", result.from_(exp.Table(this=_ident(so_far or "")))))
        total: exp.Expression = exp.Subquery(this=exp.select(_col("_ops")).from_(
            exp.Table(this=_ident(chains[0].ops))))
        for chain in chains[1:]:
            total = exp.Add(this=total, expression=exp.Subquery(this=exp.select(
                _col("_ops")).from_(exp.Table(this=_ident(chain.ops)))))
        ctes.append((f"{PREFIX}ops", exp.select(exp.alias_(total, _ident("_ops")))))
        return _Chain(ctes, f"{PREFIX}r", tuple(outputs), block.limit, f"{PREFIX}ops",
                      block.offset, block.limit_param)

    def _result(self, block: QueryBlock, ref: Ref, survivors: str, prefix: str) -> exp.Expression:
        """The answer's rows over the last survivors: projection, GROUP BY, HAVING,
        DISTINCT, and each row's position ``_pos`` in the ORDER BY."""
        projection = self._projection(block.select, ref, split=prefix == PREFIX)
        result = exp.select(*(exp.alias_(node, _ident(name)) for name, node in projection))
        result = result.from_(exp.Table(this=_ident(survivors)))
        if block.group_by:
            result = result.group_by(*(self.expr(g, ref) for g in block.group_by))
        if block.having:
            result = result.having(exp.and_(*(self.condition(c, ref) for c in block.having)))
        if not block.distinct:
            order = exp.Order(expressions=[self._local_order(o, ref) for o in block.order_by]) \
                if block.order_by else None
            return result.select(exp.alias_(exp.Window(this=exp.RowNumber(), order=order),
                                            _ident("_pos")))
        # DISTINCT applies after window functions: number the distinct rows outside it
        names = {item.expr: name for item, (name, _) in zip(block.select, projection)}
        if any(o.expr not in names for o in block.order_by):
            raise UncompilablePlan("not compiled: DISTINCT ordered by a column it does not keep")
        distinct = self.fresh(f"{prefix}d")
        order = exp.Order(expressions=[
            exp.Ordered(this=_col(names[o.expr]), desc=o.desc, nulls_first=not o.desc)
            for o in block.order_by]) if block.order_by else None
        numbered = exp.select(exp.Star(), exp.alias_(
            exp.Window(this=exp.RowNumber(), order=order), _ident("_pos")))
        return numbered.from_(exp.Subquery(this=result.distinct(),
                                           alias=exp.TableAlias(this=_ident(distinct))))

    def _numbered(self, outer: str | None, name: str, rid: str,
                  ctes: list[tuple[str, exp.Expression]]) -> str:
        """``outer`` with each tuple numbered ``rid`` (a match test reads its own)."""
        query = exp.select(exp.Star(), exp.alias_(exp.Window(this=exp.RowNumber()), _ident(rid)))
        ctes.append((name, query.from_(exp.Table(this=_ident(outer or "")))))
        return name

    def _joined(self, access: Access, level: str, outer: str, rid: str,
                found: list[exp.Expression], columns: dict[tuple[str, str], str],
                needed: dict[str, list[str]], ref, name: str,
                ctes: list[tuple[str, exp.Expression]]) -> str:
        """A LEFT, semi- or anti-join's tuples from the level's probes: the matches (rows
        read that meet the join's own conditions); for LEFT each outer tuple with its
        matches or NULL-extended once; for a semi-join (anti-join) each outer tuple once
        if it has a match (has none)."""
        matched = exp.and_(*found, *(self.condition(c, lambda a: ref(a, "_piql_k"))
                                     for c in access.residual)) if found or access.residual \
            else exp.true()
        probes = exp.select(exp.Star()).from_(exp.Table(
            this=_ident(level), alias=exp.TableAlias(this=_ident("_piql_k"))))
        probes = probes.where(exp.and_(exp.EQ(this=_col(rid, "_piql_k"),
                                              expression=_col(rid, "_piql_o")), matched))
        source = exp.Table(this=_ident(outer), alias=exp.TableAlias(this=_ident("_piql_o")))
        if access.join != JoinKind.LEFT:
            test: exp.Expression = exp.Exists(this=probes)
            if access.join == JoinKind.ANTI:
                test = exp.Not(this=test)
            ctes.append((name, exp.select(exp.Column(this=exp.Star(), table=_ident("_piql_o")))
                         .from_(source).where(test)))
            return name
        own = [columns[(access.alias, c)] for c in needed.get(access.alias, [])]
        hits = exp.select(_col(rid), *(_col(c) for c in own)).from_(exp.Table(
            this=_ident(level), alias=exp.TableAlias(this=_ident("_piql_k"))))
        hits = hits.where(matched)
        query = exp.select(exp.Column(this=exp.Star(), table=_ident("_piql_o")),
                           *(_col(c, "_piql_h") for c in own)).from_(source)
        query = query.join(exp.Subquery(this=hits, alias=exp.TableAlias(this=_ident("_piql_h"))),
                           on=exp.EQ(this=_col(rid, "_piql_h"), expression=_col(rid, "_piql_o")),
                           join_type="LEFT")
        ctes.append((name, query))
        return name

    def _listed(self, access: Access, outer: str | None, columns: dict[tuple[str, str], str],
                prefix: str, position: int, ctes: list[tuple[str, exp.Expression]],
                probing: bool) -> tuple[Access, str | None, bool]:
        """An access whose key takes any of a list of values (``IN (list)``): the list's
        distinct non-NULL values (or one NULL when it has none, a probe that finds
        nothing, as the interpreter's) joined to the outer tuples, each a probe."""
        lists = [(i, v) for i, v in enumerate(access.key_values) if isinstance(v, AnyOf)]
        if not lists:
            return access, outer, probing
        values = list(access.key_values)
        table = self.layout.table(access.table or "")
        picked: list[exp.Expression] = [] if outer is None else [
            exp.Column(this=exp.Star(), table=_ident(outer))]
        sources = []
        for number, (index, listed) in enumerate(lists):
            raw, choices = f"{prefix}a{position}_{number}", f"{prefix}v{position}_{number}"
            column = access.key_columns[index]
            parts = [self._listed_value(v, table, column) for v in listed.values]
            union: exp.Expression = exp.select(exp.alias_(parts[0], _ident("x")))
            for part in parts[1:]:
                union = exp.union(union, exp.select(exp.alias_(part, _ident("x"))), distinct=False)
            ctes.append((raw, union))
            present = exp.Not(this=exp.Is(this=_col("x"), expression=exp.Null()))
            some = exp.select(_col("x")).from_(exp.Table(this=_ident(raw))).where(present).distinct()
            none = exp.select(exp.alias_(self._typed_null(table, column), _ident("x"))).where(
                exp.Not(this=exp.Exists(this=exp.select(_number(1)).from_(
                    exp.Table(this=_ident(raw))).where(present.copy()))))
            ctes.append((choices, exp.union(some, none, distinct=False)))
            name = self.fresh("_v")
            picked.append(exp.alias_(_col("x", choices), _ident(name)))
            sources.append(choices)
            columns[(PREFIX + "list", name)] = name
            values[index] = Attr(PREFIX + "list", name)
        query = exp.select(*picked)
        tables = ([outer] if outer is not None else []) + sources
        query = query.from_(exp.Table(this=_ident(tables[0])))
        for other in tables[1:]:
            query = query.join(exp.Table(this=_ident(other)), join_type="CROSS")
        probes = f"{prefix}p{position}"
        ctes.append((probes, query))
        return replace(access, key_values=tuple(values)), probes, True

    def _listed_value(self, value: Param | Literal, table: TableLayout, column: str) -> exp.Expression:
        node = self.placeholder(value)
        if self.sqlite:
            return node
        return exp.Cast(this=node, to=exp.DataType.build(self._postgres_type(table, column)))

    def _typed_null(self, table: TableLayout, column: str) -> exp.Expression:
        if self.sqlite:
            return exp.Null()
        return exp.Cast(this=exp.Null(), to=exp.DataType.build(self._postgres_type(table, column)))

    @staticmethod
    def _postgres_type(table: TableLayout, column: str) -> str:
        kinds = {TypeFamily.INTEGER: "BIGINT", TypeFamily.REAL: "DOUBLE PRECISION",
                 TypeFamily.TEXT: "TEXT"}
        found = kinds.get(table.family(column))
        if found is None:
            raise UncompilablePlan(f"not compiled on PostgreSQL: an IN list on {column}")
        return found

    def _base_level(self, access: Access, outer: str | None,
                    columns: dict[tuple[str, str], str], needed: dict[str, list[str]],
                    position: int, outer_ref: Ref, probing: bool):
        table = self.layout.table(access.table or "")
        alias = access.alias
        own = {c: self.fresh("_c") for c in needed.get(alias, [])}
        fetches = access.path == AccessPath.INDEX and not access.covering

        def inner_ref(within: str) -> Ref:
            def ref(attr: Attr) -> exp.Expression:
                if attr.alias == alias:
                    return _col(attr.column, within)
                return outer_ref(attr)
            return ref

        picked = [exp.alias_(_col(c, alias), _ident(name)) for c, name in own.items()]
        if not probing:
            query = exp.select(*picked) if picked else exp.select(exp.alias_(_number(1), "_one"))
            query = query.from_(self._table_ref(access, table, alias))
            where = self._probe_conditions(access, alias, inner_ref(alias))
            if where:
                query = query.where(exp.and_(*where))
            if access.stop_after is not None:
                query = query.order_by(*self._scan_order(access, table, alias)).limit(
                    _number(access.stop_after))
            node: exp.Expression = query
            columns.update({(alias, c): n for c, n in own.items()})

            def term(level: str) -> exp.Expression:
                count = _count_star()
                most = exp.Greatest(this=_number(1), expressions=[_count_star()])
                value = exp.Add(this=most, expression=count) if fetches else most
                return exp.Subquery(this=exp.select(value).from_(exp.Table(this=_ident(level))))
            return node, term
        marker = f"_m{position}"
        assert outer is not None
        if self.sqlite:
            node = self._sqlite_probe(access, table, outer, own, marker, inner_ref)
        else:
            node = self._postgres_probe(access, table, outer, own, marker, inner_ref)
        columns.update({(alias, c): n for c, n in own.items()})

        def term(level: str) -> exp.Expression:
            value: exp.Expression = _count_star()
            if fetches:
                value = exp.Add(this=value, expression=exp.Count(this=_col(marker)))
            return exp.Subquery(this=exp.select(value).from_(exp.Table(this=_ident(level))))
        return node, term

    def _sqlite_probe(self, access: Access, table: TableLayout, outer: str,
                      own: dict[str, str], marker: str, inner_ref) -> exp.Expression:
        alias = access.alias
        if access.stop_after is None:
            target = self._table_ref(access, table, alias)
            on = self._probe_conditions(access, alias, inner_ref(alias))
            mark = _col(table.rowid if table.key_index else table.key[0], alias)
        else:
            # The per-probe stop-after: at most k keys read in order from the access path,
            # each then found on the clustered key (rowid of a rowid table).
            inner = self.fresh(f"{PREFIX}q")
            keys = [table.rowid] if table.key_index else list(table.key)
            chosen = exp.select(*(_col(k, inner) for k in keys))
            chosen = chosen.from_(self._table_ref(access, table, inner))
            where = self._probe_conditions(access, inner, inner_ref(inner))
            if where:
                chosen = chosen.where(exp.and_(*where))
            chosen = chosen.order_by(*self._scan_order(access, table, inner)).limit(
                _number(access.stop_after))
            target = exp.Table(this=_ident(table.name), alias=exp.TableAlias(this=_ident(alias)),
                               indexed=False)
            self.reads.append(Read(alias, table.name, None, False))
            probe = exp.Tuple(expressions=[_col(k, alias) for k in keys]) if len(keys) > 1 \
                else _col(keys[0], alias)
            on = [exp.In(this=probe, query=exp.Subquery(this=chosen))]
            mark = _col(keys[0], alias)
        picked = [exp.Column(this=exp.Star(), table=_ident(outer))]
        picked += [exp.alias_(_col(c, alias), _ident(n)) for c, n in own.items()]
        picked.append(exp.alias_(mark, _ident(marker)))
        query = exp.select(*picked).from_(exp.Table(this=_ident(outer)))
        return query.join(target, on=exp.and_(*on) if on else exp.true(), join_type="LEFT")

    def _postgres_probe(self, access: Access, table: TableLayout, outer: str,
                        own: dict[str, str], marker: str, inner_ref) -> exp.Expression:
        alias = access.alias
        picked = [exp.alias_(_col(c, alias), _ident(n)) for c, n in own.items()]
        picked.append(exp.alias_(_number(1), _ident(marker)))
        lateral = exp.select(*picked).from_(self._table_ref(access, table, alias))
        where = self._probe_conditions(access, alias, inner_ref(alias))
        if where:
            lateral = lateral.where(exp.and_(*where))
        if access.stop_after is not None:
            lateral = lateral.order_by(*self._scan_order(access, table, alias)).limit(
                _number(access.stop_after))
        else:
            lateral = lateral.offset(_number(0))  # a fence: PostgreSQL keeps the join order
        joined = self.fresh(f"{PREFIX}j")
        query = exp.select(exp.Column(this=exp.Star(), table=_ident(outer)),
                           exp.Column(this=exp.Star(), table=_ident(joined)))
        query = query.from_(exp.Table(this=_ident(outer)))
        node = exp.Lateral(this=exp.Subquery(this=lateral), view=False, outer=False,
                           alias=exp.TableAlias(this=_ident(joined)))
        return query.join(node, on=exp.true(), join_type="LEFT")

    def _derived_level(self, access: Access, outer: str | None,
                       columns: dict[tuple[str, str], str], needed: dict[str, list[str]],
                       prefix: str, position: int, ctes: list[tuple[str, exp.Expression]]):
        assert access.subplan is not None
        sub = self._chain(access.subplan, f"{prefix}d{position}_")
        ctes.extend(sub.ctes)
        names = [item.name for item in access.subplan.block.select]
        picked: list[exp.Expression] = []
        if outer is not None:
            picked.append(exp.Column(this=exp.Star(), table=_ident(outer)))
        own = {}
        for column in needed.get(access.alias, []):
            own[column] = self.fresh("_c")
            picked.append(exp.alias_(_col(sub.outputs[names.index(column)], sub.result),
                                     _ident(own[column])))
        if not own:
            picked.append(exp.alias_(_number(1), _ident(self.fresh("_c"))))
        query = exp.select(*picked)
        query = query.from_(exp.Table(this=_ident(outer))) if outer is not None else query
        source = exp.Table(this=_ident(sub.result))
        query = query.from_(source) if outer is None else query.join(source, join_type="CROSS")
        window = self._window(sub, sub.result)
        if window is not None:
            query = query.where(window)
        columns.update({(access.alias, c): n for c, n in own.items()})

        def term(level: str) -> exp.Expression:
            # the subquery refers to nothing outside it: it runs once per query, when some
            # outer tuple reaches it (as the interpreter runs it, and Phase 0 counts it)
            ops = exp.Subquery(this=exp.select(_col("_ops")).from_(exp.Table(this=_ident(sub.ops))))
            if outer is None:
                return ops
            reached = exp.Exists(this=exp.select(_number(1)).from_(exp.Table(this=_ident(outer))))
            return exp.Case(ifs=[exp.If(this=reached, true=ops)], default=_number(0))
        return query, term

    def _window(self, chain: _Chain, result: str) -> exp.Expression | None:
        """Which positions of ``result`` the answer keeps: after OFFSET, up to LIMIT (a
        literal, or the ``LIMIT <n>`` parameter)."""
        window = []
        if chain.offset:
            window.append(exp.GT(this=_col("_pos", result), expression=_number(chain.offset)))
        if chain.limit_param is not None:
            last: exp.Expression = self.placeholder(chain.limit_param)
            if chain.offset:
                last = exp.Add(this=last, expression=_number(chain.offset))
            window.append(exp.LTE(this=_col("_pos", result), expression=last))
        elif chain.limit is not None:
            window.append(exp.LTE(this=_col("_pos", result),
                                  expression=_number(chain.limit + chain.offset)))
        return exp.and_(*window) if window else None

    def _final(self, chain: _Chain) -> exp.Expression:
        result, ops = chain.result, chain.ops
        picked = [_col(name, result) for name in chain.outputs]
        picked += [_col("_pos", result), _col("_ops", ops)]
        window = self._window(chain, result)
        on = window if window is not None else exp.true()
        query = exp.select(*picked).from_(exp.Table(this=_ident(ops)))
        query = query.join(exp.Table(this=_ident(result)), on=on, join_type="LEFT")
        # the dialect's own NULL order: the empty answer's NULL position comes alone
        query = query.order_by(exp.Ordered(this=_col("_pos", result), nulls_first=self.sqlite))
        with_ = exp.With(expressions=[
            exp.CTE(this=node, alias=exp.TableAlias(this=_ident(name)))
            for name, node in chain.ctes])
        query.set("with_", with_)
        return query

    # -- pieces ----------------------------------------------------------------
    def _projection(self, select: Sequence[Any], ref: Ref,
                    split: bool = True) -> list[tuple[str, exp.Expression]]:
        """The answer's columns ``_o1..`` as (name, expression). A ratio (an AVG read
        from a view's SUM and COUNT) comes back as its numerator ``_oN`` and denominator
        ``_oNd`` (when ``split``: the statement's own answer, not a FROM-subquery's), which
        :meth:`CompiledQuery.answer` divides as the interpreter does: SQL's CAST to REAL
        rounds an integer sum beyond 2**53 before dividing, Python's int / int does not."""
        found = []
        for number, item in enumerate(select, 1):
            if split and isinstance(item.expr, Ratio):
                found.append((f"_o{number}", self.expr(item.expr.numerator, ref)))
                found.append((f"_o{number}d", self.expr(item.expr.denominator, ref)))
            else:
                found.append((f"_o{number}", self.expr(item.expr, ref)))
        return found

    def _table_ref(self, access: Access, table: TableLayout, alias: str) -> exp.Table:
        """``table AS alias`` reading the access's path (SQLite names it)."""
        node = exp.Table(this=_ident(table.name), alias=exp.TableAlias(this=_ident(alias)))
        index = access.index.name if access.path == AccessPath.INDEX and access.index else table.key_index
        if self.sqlite:
            node.set("indexed", exp.Table(this=_ident(index)) if index else False)
        whole = not access.key_columns and not access.range
        self.reads.append(Read(alias, table.name, index, whole, access.stop_after))
        return node

    def _probe_conditions(self, access: Access, alias: str, ref: Ref) -> list[exp.Expression]:
        found: list[exp.Expression] = []
        for column, value in zip(access.key_columns, access.key_values):
            key = self._key_part(access, column, alias)
            if isinstance(value, NullKey):
                found.append(exp.Is(this=key, expression=exp.Null()))
            else:
                found.append(exp.EQ(this=key, expression=self.expr(value, ref)))
        found += [self.predicate(p, ref) for p in access.range]
        return found

    def _key_part(self, access: Access, column: str, alias: str) -> exp.Expression:
        """A key column of the access path, or its index's expression (``LOWER(email)``)
        written as the store wrote the index, so that the store reads through it."""
        part = access.index.part(column) if access.index is not None else column
        if isinstance(part, KeyExpression):
            return self.expr(Call(part.func, (Attr(alias, part.column),)),
                             lambda attr: _col(attr.column, alias))
        return _col(column, alias)

    def _scan_order(self, access: Access, table: TableLayout, alias: str) -> list[exp.Ordered]:
        """The access path's own order (so the database reads it in order and stops)."""
        desc = access.descending
        if self.sqlite:
            nulls_first = not desc
            return [exp.Ordered(this=self._key_part(access, c, alias), desc=desc,
                                nulls_first=nulls_first) for c in access.order_columns]
        found = []
        for column in access.order_columns:
            # PostgreSQL's default (NULLS LAST ascending) on never-NULL key columns, so the
            # primary key's index serves the order; SQLite's NULL order elsewhere.
            nulls_first = desc if table.not_null(column) else not desc
            found.append(exp.Ordered(this=self._key_part(access, column, alias), desc=desc,
                                     nulls_first=nulls_first))
        return found

    def _local_order(self, item: OrderItem, ref: Ref) -> exp.Ordered:
        """ORDER BY over computed rows, with SQLite's order of NULLs in both dialects."""
        return exp.Ordered(this=self.expr(item.expr, ref), desc=item.desc,
                           nulls_first=not item.desc)

    def placeholder(self, value: Param | Literal) -> exp.Expression:
        key: object = value if isinstance(value, Param) else None
        name = self.slots.get(key) if key is not None else None
        if name is None:
            name = self.fresh(f"{PREFIX}p")
            self.bound[name] = value
            if key is not None:
                self.slots[key] = name
        return exp.Placeholder(this=name)

    # -- text --------------------------------------------------------------------
    def _render(self, node: exp.Expression) -> tuple[str, list[str]]:
        """SQL text with positional placeholders, and the bound names in their order.

        sqlglot writes named placeholders; one pass over the text replaces them in
        order, leaving quoted identifiers alone (psycopg reads ``%`` everywhere, so an
        identifier's ``%`` is doubled for PostgreSQL)."""
        text = node.sql(dialect=self.dialect.value, identify=True)
        order: list[str] = []

        def swap(found: re.Match[str]) -> str:
            if found.group("name") is None:
                quoted = found.group(0)
                return quoted if self.sqlite else quoted.replace("%", "%%")
            order.append(found.group("name"))
            return "?" if self.sqlite else "%s"

        placeholder = r":(?P<name>_piql_p\d+)" if self.sqlite else r"%\((?P<name>_piql_p\d+)\)s"
        return re.sub(rf'"(?:[^"]|"")*"|{placeholder}', swap, text), order


def _constant_sum(ops: exp.Expression) -> int:
    """The value of a sum of integer literals (``1 + 1``); 0 when any term is not one."""
    if isinstance(ops, exp.Literal) and not ops.is_string:
        return int(ops.this)
    if isinstance(ops, exp.Add):
        left, right = _constant_sum(ops.this), _constant_sum(ops.expression)
        return left + right if left and right else 0
    return 0


def _lean_shape(plan: PhysicalPlan, query: QueryBlock, counting: CompiledQuery) -> bool:
    """Can the query's own join count its operations from the rows it returns? The first
    access reads at most one row, each later one at most one row by a full-key lookup, and
    a last one may stop after k rows in order where the answer keeps k (no residual there):
    then a returned row says every probe found what the rows show."""
    block = plan.block
    if counting.ops_source not in (OpsSource.PER_ROW, OpsSource.COLUMN) or plan.branches \
            or query != block or block.extensions or block.aggregates or block.group_by \
            or block.offset or block.limit_param is not None or block.distinct \
            or len(plan.accesses) < 2:
        return False
    for position, access in enumerate(plan.accesses):
        if access.path == AccessPath.DERIVED or access.join != JoinKind.INNER \
                or access.fanout != 1 or access.subplan is not None \
                or any(not isinstance(v, (Attr, Param, Literal)) for v in access.key_values) \
                or any(not isinstance(c, Predicate) for c in access.residual) \
                or (access.index is not None and access.index.expressions):
            return False
        last = position == len(plan.accesses) - 1
        if position > 0 and last and access.stop_after is not None:
            if access.residual or access.range or block.limit != access.stop_after \
                    or plan.merge_at != position or access.rows_per_probe != access.stop_after:
                return False
        elif access.rows_per_probe != 1 or access.stop_after is not None or (
                position > 0 and access.path != AccessPath.PRIMARY) or access.range:
            return False
    return plan.merge_at is None or plan.accesses[plan.merge_at].stop_after is not None


def _extended(plan: PhysicalPlan, query: QueryBlock) -> bool:
    """Does the plan hold a construct beyond the paper's fragment (compiled in the
    general shape only)?"""
    if query.extensions or plan.block.extensions:
        return True
    return any(access.fanout > 1 or access.join != JoinKind.INNER
               or any(not isinstance(v, (Attr, Param, Literal)) for v in access.key_values)
               or any(not isinstance(c, Predicate) for c in access.residual)
               or (access.index is not None and access.index.expressions)
               for access in plan.accesses)


def _refuse_beyond(plan: PhysicalPlan, query: QueryBlock) -> None:
    """Refuse what the compiler does not express yet, so the interpreter serves it: a
    UNION, a FROM-subquery holding an extension, an IN list of column values."""
    for branch in plan.branches:
        _refuse_beyond(branch, branch.block)
    for position, access in enumerate(plan.accesses):
        if access.subplan is not None:
            if access.subplan.branches:
                raise UncompilablePlan("not compiled yet: a UNION in a FROM-subquery")
            _refuse_beyond(access.subplan, access.subplan.block)
        if position == 0 and access.join != JoinKind.INNER:
            raise UncompilablePlan(f"not compiled: a first access joined {access.join}")
        for value in access.key_values:
            if isinstance(value, AnyOf) and not all(isinstance(v, (Param, Literal))
                                                    for v in value.values):
                raise UncompilablePlan("not compiled yet: an IN list of column values")
        if access.index is not None and access.index.expressions and access.range:
            raise UncompilablePlan("not compiled yet: a range on an expression index")


def _aggregates_of_nothing(query: QueryBlock, block: QueryBlock) -> dict[Attr, int | None]:
    """Each view column the plan's ``block`` reads where ``query`` computes an aggregate:
    its value over no rows (0 for a COUNT, else NULL). Refuses when the two do not match
    item by item."""
    found: dict[Attr, int | None] = {}

    def match(wanted: object, read: object) -> None:
        if isinstance(wanted, Aggregate) and isinstance(read, Attr):
            found[read] = 0 if wanted.func == "COUNT" else None
        elif isinstance(wanted, Aggregate) and isinstance(read, Ratio) and wanted.func == "AVG":
            match(Aggregate("SUM", wanted.arg), read.numerator)
            match(Aggregate("COUNT", wanted.arg), read.denominator)
        elif type(wanted) is type(read) and isinstance(wanted, (Call, Case)):
            match(getattr(wanted, "args", None) or getattr(wanted, "whens", ()),
                  getattr(read, "args", None) or getattr(read, "whens", ()))
            if isinstance(wanted, Case):
                match(wanted.default, read.default)  # type: ignore[union-attr]
        elif isinstance(wanted, tuple) and isinstance(read, tuple) and len(wanted) == len(read):
            for one, other in zip(wanted, read):
                match(one, other)
        elif wanted != read and not isinstance(wanted, (Literal, Param)):
            if isinstance(wanted, (Attr, Aggregate, Call, Case, Ratio)) or isinstance(
                    read, (Attr, Aggregate, Call, Case, Ratio)):
                raise UncompilablePlan("not compiled: an aggregate read from a view whose "
                                       "columns do not match the query's")

    match(tuple(i.expr for i in query.select), tuple(i.expr for i in block.select))
    return found


def _needed(block: QueryBlock, plan: PhysicalPlan | None = None) -> dict[str, list[str]]:
    """Columns each relation must deliver, in a stable order (with ``plan``, also those
    its accesses' filters and join conditions read)."""
    found: dict[str, list[str]] = {}
    if plan is not None:
        found = _needed(block)
        extra = [block.select, block.group_by, block.order_by, block.filters, block.having]
        extra += [(a.key_values, a.range, a.residual, a.post) for a in plan.accesses]
        for attr in attrs_in(extra):
            columns = found.setdefault(attr.alias, [])
            if attr.column not in columns:
                columns.append(attr.column)
        return found

    def add(value: object) -> None:
        if isinstance(value, Aggregate):
            value = value.arg
        if isinstance(value, Ratio):
            add(value.numerator)
            add(value.denominator)
            return
        if isinstance(value, Epoch):
            value = value.attr
        if isinstance(value, Attr):
            columns = found.setdefault(value.alias, [])
            if value.column not in columns:
                columns.append(value.column)

    for item in block.select:
        add(item.expr)
    for pred in block.predicates:
        add(pred.left)
        add(pred.right)
    for group in block.group_by:
        add(group)
    for order in block.order_by:
        add(order.expr)
    return found
