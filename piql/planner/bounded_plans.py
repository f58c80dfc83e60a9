"""Phase 0 (SI-0 / SI-1): search for a physical plan made only of bounded operators.

The search tries every join order (FROM-subqueries first) and, for every
relation occurrence, every access path: the clustered primary key, each
declared index, and one new secondary index shaped by the query. An access is
bounded either by keys and CARDINALITY constraints (``bounds.max_rows``) or by
the query's LIMIT, which may stop a scan early only when the scan delivers
rows in the requested order, applies every predicate on its relation itself,
and every later join is a foreign-key lookup that cannot drop a row. When the
stopped relation is not the first, the result is a bounded-outer merge join:
for each of the B outer tuples read at most k rows in order, merge, keep k.

Among bounded plans piql prefers primary access only, then the fewest new
indexes, then the smallest operation bound.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from itertools import islice, permutations
from typing import NamedTuple

from piql.catalog import Catalog, Table
from piql.planner.bounds import max_rows
from piql import sql_types
from piql.planner.key_expressions import declared_spec, expression_equality
from piql.planner.like_range import WILDCARDS, prefix_range
from piql.planner.naming import Names
from piql.planner.physical import (
    AccessPath, Access, AnyOf, IndexSpec, KeyExpression, NullKey, Operator, PhysicalPlan,
)
from piql.query_block import (
    Attr, Condition, InList, JoinKind, Like, Literal, NullTest, Param, Predicate, QueryBlock,
    Relation, aliases_in, attrs_in,
)

MAX_JOIN_ORDERS = 5040  # all orders of up to 7 relations


@dataclass(frozen=True)
class Hotspot:
    """An index refused because a TEMPORAL column would lead its key (paper §2.5, §6)."""

    table: str
    column: str
    index_columns: tuple[str, ...]


@dataclass(frozen=True)
class Failure:
    """Why one relation occurrence cannot be read with bounded work."""

    alias: str
    message: str
    hint: str = ""
    placed: int = 0  # how many relations the failing join order had placed
    restricted: bool = False  # some predicate narrows the relation (the likelier culprit)
    ordered: bool = False  # ORDER BY ... LIMIT is on this relation (its scan was to stop)


@dataclass(frozen=True)
class Phase0Result:
    plan: PhysicalPlan | None
    failure: Failure | None = None
    hotspots: tuple[Hotspot, ...] = field(default=())

    @property
    def bounded(self) -> bool:
        return self.plan is not None


def plan_query(catalog: Catalog, block: QueryBlock, *, avoid_hotspots: bool = True,
               names: Names | None = None) -> Phase0Result:
    """Find the preferred bounded plan for ``block``, or say why there is none.

    ``names`` names the secondary indexes the plan creates (default: ``idx_<table>_<cols>``
    as it comes, for a plan of its own)."""
    if block.unions:
        return _plan_union(catalog, block, avoid_hotspots, names)
    return _Search(catalog, block, avoid_hotspots, names).run()


def _plan_union(catalog: Catalog, block: QueryBlock, avoid_hotspots: bool,
                names: Names | None) -> Phase0Result:
    """UNION [ALL]: every branch's own plan, run one after the other; the bound is the sum
    of theirs, and removing duplicates, ordering and limiting are local work."""
    plans: list[PhysicalPlan] = []
    hotspots: list[Hotspot] = []
    for number, (branch, _) in enumerate(block.unions, start=1):
        result = plan_query(catalog, branch, avoid_hotspots=avoid_hotspots, names=names)
        hotspots += [h for h in result.hotspots if h not in hotspots]
        if result.plan is None:
            failure = result.failure or Failure("", "no bounded plan")
            return Phase0Result(None, replace(
                failure, message=f"in branch {number} of the UNION: {failure.message}"),
                tuple(hotspots))
        plans.append(result.plan)
    rows = sum(p.rows_bound for p in plans)
    kinds = " ".join("UNION ALL" if all_ else "UNION" for _, all_ in block.unions[1:])
    tree = Operator("Union", kinds, rows, 0, tuple(p.root for p in plans))
    if block.order_by:
        tree = Operator("Sort", ", ".join(o.expr.column + (" DESC" if o.desc else "")  # type: ignore[union-attr]
                                          for o in block.order_by), rows, 0, (tree,))
    if block.fetch is not None:
        rows = min(rows, block.fetch)
        tree = Operator("StopAfter", str(block.fetch), rows, 0, (tree,))
    if block.offset:
        rows = max(0, rows - block.offset)
        tree = Operator("Offset", str(block.offset), rows, 0, (tree,))
    plan = PhysicalPlan(block, (), tree, sum(p.ops_bound for p in plans), rows,
                        branches=tuple(plans))
    return Phase0Result(plan, None, tuple(hotspots))


class _Search:
    def __init__(self, catalog: Catalog, block: QueryBlock, avoid_hotspots: bool,
                 names: Names | None) -> None:
        self.catalog = catalog
        self.names = names
        self.block = block
        self.avoid_hotspots = avoid_hotspots
        self.hotspots: list[Hotspot] = []
        self.failures: list[Failure] = []
        self.best: tuple[tuple, PhysicalPlan] | None = None
        self.subplans: dict[str, PhysicalPlan] = {}
        self.needed = _needed_columns(block)
        # The join orders share most of their steps: the options of a relation depend on
        # which relations precede it (and, for a LIMIT that may stop its scan, on the order
        # of those after it), not on the order of those before, so each is found once.
        self.options: dict[tuple, list[_Option]] = {}
        # Each predicate's and filter's aliases, and whether the block groups or aggregates
        # (then LIMIT cannot stop a scan), asked at every step of every order.
        self.predicate_aliases = [(p, frozenset(p.aliases())) for p in block.predicates]
        self.filter_aliases = [(f, frozenset(aliases_in(f))) for f in block.filters]
        self.aggregated = bool(block.group_by or block.aggregates or block.having)

    # -- driver --------------------------------------------------------------
    def run(self) -> Phase0Result:
        for rel in self.block.relations:
            if rel.subquery is not None:
                sub = plan_query(self.catalog, rel.subquery, avoid_hotspots=self.avoid_hotspots,
                                 names=self.names)
                self.hotspots += [h for h in sub.hotspots if h not in self.hotspots]
                if sub.plan is None:
                    failure = sub.failure or Failure(rel.alias, "the FROM subquery is unbounded")
                    return Phase0Result(None, replace(
                        failure, message=f"in the FROM subquery {rel.alias}: {failure.message}"),
                        tuple(self.hotspots))
                self.subplans[rel.alias] = sub.plan
        derived = [r for r in self.block.relations if not r.is_base]
        base = [r for r in self.block.relations if r.is_base and r.join == JoinKind.INNER]
        # LEFT, semi- and anti-joins after the inner joins, as written: their conditions
        # only see the relations before them
        outer = tuple(r for r in self.block.relations if r.is_base and r.join != JoinKind.INNER)
        for order in islice(permutations(base), MAX_JOIN_ORDERS):
            self._extend(tuple(derived) + order + outer, 0, 1, (), None)
        if self.best is None:
            return Phase0Result(None, self._best_failure(), tuple(self.hotspots))
        return Phase0Result(self.best[1], None, tuple(self.hotspots))

    def _extend(self, order: tuple[Relation, ...], position: int, card: int,
                accesses: tuple[Access, ...], merge_at: int | None) -> None:
        if position == len(order):
            self._consider(accesses, card, merge_at)
            return
        rel = order[position]
        earlier = {r.alias for r in order[:position]}
        candidates = self._candidates(rel, earlier, order[position + 1:], card, merge_at is None)
        if not candidates:
            return
        for access, new_card, limited in candidates:
            self._extend(order, position + 1, new_card, accesses + (access,),
                         position if limited else merge_at)

    def _consider(self, accesses: tuple[Access, ...], card: int, merge_at: int | None) -> None:
        secondary = [a.index for a in accesses if a.index is not None]
        for sub in self.subplans.values():
            secondary += list(sub.indexes)
        new = {i for i in secondary if not i.declared}
        # the plan's operation bound is the sum of its accesses' (what _assemble gives it):
        # the tree is built only for a plan that beats the best so far
        score = (1 if secondary else 0, len(new), sum(a.ops for a in accesses))
        if self.best is None or score < self.best[0]:
            self.best = (score, _assemble(self.block, accesses, card, merge_at, self.subplans))

    # -- access paths for one relation ---------------------------------------
    def _candidates(self, rel: Relation, earlier: set[str], later: tuple[Relation, ...],
                    card: int, may_limit: bool) -> list[tuple[Access, int, bool]]:
        """Each way to read ``rel`` after the relations ``earlier`` (``card`` tuples), with
        the tuples the plan then carries and whether LIMIT stops this scan."""
        limit_matters = may_limit and self.block.fetch is not None
        key = (rel.alias, frozenset(earlier), may_limit,
               tuple(r.alias for r in later) if limit_matters else None)
        options = self.options.get(key)
        if options is None:
            options = self.options[key] = self._options(rel, earlier, later, may_limit)
        return [(o.access if card == 1 else replace(o.access, probes=card),
                 min(card * o.factor, o.cap) if o.cap is not None else card * o.factor,
                 o.cap is not None) for o in options]

    def _options(self, rel: Relation, earlier: set[str], later: tuple[Relation, ...],
                 may_limit: bool) -> list["_Option"]:
        """:meth:`_candidates` for one outer tuple (one probe each)."""
        placed = earlier | {rel.alias}
        mine: list[Condition] = [p for p, aliases in self.predicate_aliases
                                 if rel.alias in aliases and aliases <= placed]
        mine += [f for f, aliases in self.filter_aliases
                 if _placed_here(aliases, rel.alias, earlier)]
        if rel.join != JoinKind.INNER:
            return self._outer_candidates(rel, earlier, mine)
        if not rel.is_base:
            sub = self.subplans[rel.alias]
            access = Access(rel.alias, None, AccessPath.DERIVED, (), (), residual=tuple(mine),
                            rows_per_probe=sub.rows_bound, subplan=sub)
            return [_Option(access, sub.rows_bound)]
        table = self.catalog.table(rel.table)
        assert table is not None
        bindings = _Bindings.of(rel.alias, mine, table)
        found: list[_Option] = []
        reasons: list[str] = []
        for path, index in self._paths(table, rel, bindings):
            found += self._bounded_accesses(table, rel, bindings, mine, path, index,
                                            later, earlier, may_limit, reasons)
        if not found:
            self.failures.append(self._failure(table, rel, bindings, reasons, len(earlier)))
        return found

    def _outer_candidates(self, rel: Relation, earlier: set[str],
                          after: list[Condition]) -> list["_Option"]:
        """A LEFT join reads like an inner join by its ON conditions, and keeps an outer
        row with NULLs when nothing matches (max(1, rows) rows per outer row). A semi- or
        anti-join only tests for a match: without other conditions it stops after the
        first row it reads (one per probe), else it reads the rows its key bounds."""
        table = self.catalog.table(rel.table or "")
        assert table is not None
        bindings = _Bindings.of(rel.alias, list(rel.on), table)
        found: list[_Option] = []
        reasons: list[str] = []
        for path, index in self._paths(table, rel, bindings):
            for option in self._bounded_accesses(table, rel, bindings, list(rel.on), path,
                                                 index, (), earlier, False, reasons):
                access = replace(option.access, join=rel.join, post=tuple(after))
                rows = access.rows_per_probe
                if rel.join == JoinKind.LEFT:
                    found.append(_Option(access, access.fanout * max(1, rows)))
                else:
                    found.append(_Option(access, 1))
            if rel.join != JoinKind.LEFT:
                probe = self._match_probe(table, rel, bindings, path, index, after)
                if probe is not None:
                    found.append(_Option(probe, 1))
        if not found:
            self.failures.append(self._failure(table, rel, bindings, reasons, len(earlier)))
        return found

    def _match_probe(self, table: Table, rel: Relation, bindings: "_Bindings",
                     path: tuple[str, ...], index: IndexSpec | None,
                     after: list[Condition]) -> Access | None:
        """A semi- or anti-join probe that stops after one row: every condition of the
        subquery is on the key prefix or the range the path reads."""
        prefix, rest, ranged, used, values, fanout = bindings.read(path)
        if any(id(c) not in used for c in rel.on):
            return None
        covering = index is None or self.needed.get(rel.alias, set()) <= set(path)
        return Access(rel.alias, table.name, AccessPath.INDEX if index else AccessPath.PRIMARY,
                      tuple(prefix), values, order_columns=rest, range=tuple(ranged),
                      index=index, covering=covering, stop_after=1, rows_per_probe=1,
                      fanout=fanout, join=rel.join, post=tuple(after))

    def _paths(self, table: Table, rel: Relation,
               bindings: "_Bindings") -> list[tuple[tuple[str, ...], IndexSpec | None]]:
        paths: list[tuple[tuple[str, ...], IndexSpec | None]] = [(table.primary_key, None)]
        for declared in self.catalog.indexes_on(table.name):
            spec = declared_spec(table, declared)
            if spec is not None and self._allowed(table, spec):
                paths.append((_with_key(spec.columns, table), spec))
        shape = self._new_index_shape(table, rel, bindings)
        if shape and not _is_prefix(shape, table.primary_key) and not any(
                _is_prefix(shape, p[1].columns) for p in paths[1:] if p[1] is not None):
            expressions = tuple(bindings.expressions[c] for c in shape if c in bindings.expressions)
            readable = tuple(_readable(bindings.expressions.get(c), c) for c in shape)
            name = self.names.index(table.name, readable) if self.names is not None else \
                IndexSpec.named(table.name, readable).name
            spec = IndexSpec(table.name, shape, name, expressions=expressions)
            if self._allowed(table, spec):
                paths.append((_with_key(shape, table), spec))
        return paths

    def _allowed(self, table: Table, spec: IndexSpec) -> bool:
        column = table.column(spec.columns[0])
        if self.avoid_hotspots and column is not None and column.temporal:
            hotspot = Hotspot(table.name, column.name, spec.columns)
            if hotspot not in self.hotspots:
                self.hotspots.append(hotspot)
            return False
        return True

    def _new_index_shape(self, table: Table, rel: Relation, bindings: "_Bindings") -> tuple[str, ...]:
        """Equality columns first, then the range column or the ORDER BY columns."""
        shape = list(bindings.eq)
        order = self._order_columns(rel)
        ranged = [c for c in bindings.ranges if c not in shape]
        if ranged:
            tail = [ranged[0]] + [c for c in (order or [])[1:] if order and order[0] == ranged[0]]
        else:
            tail = list(order or [])
        shape += [c for c in tail if c not in shape]
        return tuple(shape)

    def _order_columns(self, rel: Relation) -> list[str] | None:
        """The ORDER BY columns when they all belong to ``rel``, else None."""
        items = self.block.order_by
        if not items or not all(isinstance(o.expr, Attr) and o.expr.alias == rel.alias for o in items):
            return None
        return [o.expr.column for o in items]  # type: ignore[union-attr]

    def _bounded_accesses(self, table: Table, rel: Relation, bindings: "_Bindings",
                          mine: list[Predicate], path: tuple[str, ...], index: IndexSpec | None,
                          later: tuple[Relation, ...], earlier: set[str],
                          may_limit: bool, reasons: list[str]) -> list["_Option"]:
        prefix, rest, ranged, used, values, fanout = bindings.read(path)
        residual = tuple(p for p in mine if id(p) not in used)
        covering = index is None or self.needed.get(rel.alias, set()) <= set(path)
        access = Access(
            rel.alias, table.name, AccessPath.INDEX if index else AccessPath.PRIMARY, tuple(prefix),
            values, order_columns=rest, range=tuple(ranged), residual=residual, index=index,
            covering=covering, fanout=fanout)
        nulls = frozenset(c for c, v in zip(prefix, values) if isinstance(v, NullKey))
        rows = max_rows(table, frozenset(prefix) - nulls, nulls)
        if index is not None and index.unique and set(index.columns) <= set(prefix) - nulls:
            rows = 1  # a unique expression index, every part fixed by = (never NULL)
        found: list[_Option] = []
        # A table whose key is empty or whose rows are capped can be read whole.
        whole = table.row_limit is not None or not table.primary_key
        if rows is not None and (prefix or ranged or whole):
            found.append(_Option(replace(access, rows_per_probe=rows), fanout * rows))
        limit = self.block.fetch
        if may_limit and limit is not None and (prefix or ranged or self._order_columns(rel)):
            why_not = self._why_not_limited(rel, access, later, earlier)
            if why_not is None:
                per_probe = limit if rows is None else min(rows, limit)
                descending = bool(self.block.order_by) and self.block.order_by[0].desc
                limited = replace(access, rows_per_probe=per_probe, stop_after=limit,
                                  descending=descending)
                found.append(_Option(limited, fanout * per_probe, cap=limit))
            elif rows is None:
                reasons.append(why_not)
        return found

    def _why_not_limited(self, rel: Relation, access: Access, later: tuple[Relation, ...],
                         earlier: set[str]) -> str | None:
        """None when LIMIT may stop this scan early; otherwise the reason it may not."""
        block = self.block
        if self.aggregated:
            return "LIMIT applies after aggregation, so it cannot stop the scan"
        if block.distinct:
            return "LIMIT applies after DISTINCT removes duplicates, so it cannot stop the scan"
        if block.order_by:
            order = self._order_columns(rel)
            if order is None:
                return "ORDER BY is not on this relation's columns, so its scan order does not help"
            if len({o.desc for o in block.order_by}) > 1:
                return "ORDER BY mixes ASC and DESC"
            if tuple(order) != access.order_columns[:len(order)]:
                return (f"the scan on ({', '.join(access.key_columns + access.order_columns)}) "
                        f"does not deliver rows ordered by ({', '.join(order)})")
        if access.residual:
            return (f"the condition {access.residual[0]} filters rows after the scan, "
                    "so LIMIT cannot stop it early")
        placed = set(earlier) | {rel.alias}
        for other in later:
            if other.join in (JoinKind.SEMI, JoinKind.ANTI):
                return f"the {other.join.value}-join with {other.alias} may drop rows"
            if other.join == JoinKind.LEFT:
                table = self.catalog.table(other.table or "")
                keys = _Bindings.of(other.alias, list(other.on)).eq
                if table is None or max_rows(table, frozenset(keys)) != 1 or len(keys) < len(
                        other.on) or any(other.alias in aliases for _, aliases in self.filter_aliases):
                    return (f"the LEFT JOIN with {other.alias} may add or drop rows (it is not "
                            "a lookup of one row by key)")
                placed.add(other.alias)
                continue
            why = self._why_filtering(other, placed)
            if why:
                return why
            placed.add(other.alias)
        return None

    def _why_filtering(self, rel: Relation, placed: set[str]) -> str | None:
        return why_join_filters(self.catalog, self.block, rel, placed)

    def _failure(self, table: Table, rel: Relation, bindings: "_Bindings",
                 reasons: list[str], placed: int) -> Failure:
        failure = self._key_failure(table, rel, bindings, reasons, placed)
        used = {id(p) for p in bindings.eq_predicate.values()}
        filters = [f for f in self.block.filters if rel.alias in aliases_in(f)
                   and id(f) not in used and like_read(rel.alias, f, table) is None]
        if filters:
            failure = replace(failure, message=(
                f"{failure.message}; the condition {filters[0]} only filters the rows read, "
                "it does not narrow the read (piql applies it after a bounded access)"),
                hint=f"also restrict {table.name} by its key ({', '.join(table.primary_key)}) "
                     "or an index's leading columns (=, IN, IS NULL), so that the filter "
                     "runs on a bounded read")
        return failure

    def _key_failure(self, table: Table, rel: Relation, bindings: "_Bindings",
                     reasons: list[str], placed: int) -> Failure:
        where = " AND ".join(str(bindings.eq_predicate[c]) for c in bindings.eq)
        if not bindings.eq and not bindings.ranges:
            message = (f"nothing restricts {rel.alias} ({table.name}) to a key range: "
                       "reading it would be a full scan")
        elif bindings.eq:
            message = (f"the rows of {rel.alias} ({table.name}) with {where} are not bounded: "
                       "no primary key or CARDINALITY constraint limits them")
        else:
            likes = list(dict.fromkeys(str(c) for c in bindings.like_conditions()))
            read_for = f" for {' AND '.join(likes)}" if likes else ""
            message = (f"the range scan on {rel.alias} ({table.name}) "
                       f"({', '.join(bindings.ranges)}){read_for} is not bounded")
        if reasons:
            message += f"; {reasons[-1]}"
        refused = [h for h in self.hotspots if h.table == table.name]
        if refused:
            message += (f"; an index on ({', '.join(refused[0].index_columns)}) would serve it, "
                        f"but {refused[0].column} is TEMPORAL, so every insert would land on "
                        "the same partition (a write hotspot)")
        return Failure(rel.alias, message, _hint(table, bindings, self.block.limit), placed,
                       bool(bindings.eq or bindings.ranges),
                       self.block.limit is not None and self._order_columns(rel) is not None)

    def _best_failure(self) -> Failure:
        if not self.failures:
            return Failure("", "no join order yields a bounded plan")
        # Prefer the order that got furthest, then the relation with most restrictions, then
        # the one ORDER BY ... LIMIT was to stop (not a relation merely read first).
        return max(self.failures, key=lambda f: (f.placed, f.restricted, f.ordered,
                                                 -len(f.message)))


class _Option(NamedTuple):
    """One way to read a relation, for one outer tuple: ``access`` (one probe), the tuples
    the plan carries per outer tuple after it (``factor``), and, when LIMIT stops the scan,
    the most it carries whatever the outer tuples (``cap``)."""

    access: Access
    factor: int
    cap: int | None = None


class _KeyRead(NamedTuple):
    prefix: list[str]
    rest: tuple[str, ...]
    ranged: tuple[Predicate, ...]
    used: set[int]
    values: tuple[object, ...]
    fanout: int


@dataclass(frozen=True)
class _Bindings:
    """How a relation's columns are restricted by the predicates usable at its turn."""

    eq: dict[str, object]
    eq_predicate: dict[str, Condition]
    ranges: dict[str, tuple[Predicate, ...]]
    # a range read for a LIKE (by id) -> that LIKE, and whether the range replaces it
    # (``'prefix%'``: exactly the strings it matches) or it is still checked on the rows
    likes: dict[int, tuple[Condition, bool]] = field(default_factory=dict)
    # key parts that are expressions (``LOWER(email)``), by their name in ``eq``
    expressions: dict[str, KeyExpression] = field(default_factory=dict)

    def read(self, path: tuple[str, ...]) -> "_KeyRead":
        """What reading ``path`` with these bindings uses: the longest prefix of bound
        columns, the rest of the path, the ranges on its next column, the ids of the
        predicates so consumed, the prefix's values, and the probes per outer tuple (the
        product of its IN lists' sizes)."""
        prefix: list[str] = []
        for column in path:
            if column not in self.eq:
                break
            prefix.append(column)
        rest = path[len(prefix):]
        ranged = self.ranges.get(rest[0], ()) if rest else ()
        used = {id(self.eq_predicate[c]) for c in prefix} | {id(p) for p in ranged}
        for bound in ranged:  # an exact LIKE range leaves nothing of its LIKE to check
            like, exact = self.likes.get(id(bound), (None, False))
            if exact:
                used.add(id(like))
        values = tuple(self.eq[c] for c in prefix)
        fanout = 1
        for bound in values:
            if isinstance(bound, AnyOf):
                fanout *= len(bound.values)
        return _KeyRead(prefix, rest, ranged, used, values, fanout)

    def like_conditions(self) -> list[Condition]:
        """The LIKE conditions read as ranges (exact or not)."""
        return [c for c, _ in self.likes.values()]

    @staticmethod
    def of(alias: str, predicates: list, table: Table | None = None) -> "_Bindings":
        """Equalities first: a column compared with ``=`` is read by that value even where an
        IN list or IS NULL also restricts it (those are then checked on the rows read).
        With the ``table`` known, ``LIKE`` on one of its text columns reads as a range too
        (``piql.planner.like_range``)."""
        eq: dict[str, object] = {}
        eq_predicate: dict[str, Condition] = {}
        ranges: dict[str, tuple[Predicate, ...]] = {}
        likes: dict[int, tuple[Condition, bool]] = {}
        expressions: dict[str, KeyExpression] = {}
        for pred in predicates:
            if not isinstance(pred, Predicate):
                continue
            column, value, op = _column_and_value(alias, pred)
            if column is None:
                continue
            if op == "=" and column not in eq:
                eq[column], eq_predicate[column] = value, pred
            elif op != "=":
                ranges[column] = ranges.get(column, ()) + (pred,)
        for condition in predicates:
            if isinstance(condition, Predicate):
                continue
            column, bound = _key_condition(alias, condition)
            if column is not None and column not in eq:
                eq[column], eq_predicate[column] = bound, condition
        for condition in predicates:
            keyed = expression_equality(table, alias, condition) if table else None
            if keyed is not None and str(keyed[0]) not in eq:
                name = str(keyed[0])
                eq[name], eq_predicate[name], expressions[name] = keyed[1], condition, keyed[0]
            read = like_read(alias, condition, table)
            if read is None:
                continue
            column, equal, bounds, exact = read
            if equal is not None and column not in eq:
                eq[column], eq_predicate[column] = equal, condition
            elif bounds:
                ranges[column] = ranges.get(column, ()) + bounds
                likes.update({id(p): (condition, exact) for p in bounds})
        return _Bindings(eq, eq_predicate, ranges, likes, expressions)


def _column_and_value(alias: str, pred: Predicate) -> tuple[str | None, object, str]:
    """Read ``pred`` as ``alias.column op value`` with the value known before the access."""
    from piql.query_block import FLIPPED

    left, right = pred.left, pred.right
    if isinstance(left, Attr) and left.alias == alias and not _mentions(right, alias):
        if isinstance(right, (Param, Literal, Attr)):
            return left.column, right, pred.op
    if isinstance(right, Attr) and right.alias == alias and isinstance(left, Attr) \
            and left.alias != alias:
        return right.column, left, FLIPPED[pred.op]
    return None, None, ""


def _key_condition(alias: str, condition: object) -> tuple[str | None, object]:
    """``alias.c IN (v1, ..., vn)`` (values known before the access) and ``alias.c IS NULL``
    read as key bindings: any of n values, or NULL."""
    if isinstance(condition, InList) and not condition.negated \
            and isinstance(condition.arg, Attr) and condition.arg.alias == alias \
            and all(isinstance(v, (Param, Literal)) or (isinstance(v, Attr) and v.alias != alias)
                    for v in condition.values):
        return condition.arg.column, AnyOf(condition.values)  # type: ignore[arg-type]
    if isinstance(condition, NullTest) and not condition.negated \
            and isinstance(condition.arg, Attr) and condition.arg.alias == alias:
        return condition.arg.column, NullKey()
    return None, None


def like_read(alias: str, condition: object, table: Table | None
              ) -> tuple[str, Literal | None, tuple[Predicate, ...], bool] | None:
    """``alias.c LIKE 'pattern'`` on a text column of ``table`` read by key: a pattern
    without wildcards as the equality ``c = 'pattern'``, else the range of its literal
    prefix (``c >= prefix AND c < successor``), ``exact`` when the range matches just
    what the pattern does (``'prefix%'``), so that no filter is left to check."""
    if table is None or not isinstance(condition, Like) or condition.negated \
            or not isinstance(condition.arg, Attr) or condition.arg.alias != alias \
            or not isinstance(condition.pattern, Literal) \
            or not isinstance(condition.pattern.value, str):
        return None
    column = table.column(condition.arg.column)
    if column is None or sql_types.family(column.type) is not sql_types.TypeFamily.TEXT \
            or sql_types.base_name(column.type) == "CITEXT":  # CITEXT's LIKE ignores case
        return None
    pattern = condition.pattern.value
    if not any(w in pattern for w in WILDCARDS):
        return condition.arg.column, condition.pattern, (), True
    found = prefix_range(pattern)
    if found is None:
        return None
    bounds = [Predicate(condition.arg, ">=", _text_literal(found.lower))]
    if found.upper is not None:
        bounds.append(Predicate(condition.arg, "<", _text_literal(found.upper)))
    return condition.arg.column, None, tuple(bounds), found.exact


def _readable(expression: KeyExpression | None, column: str) -> str:
    """A key part as a new index's name shows it: ``lower_email`` for ``LOWER(email)``."""
    return column if expression is None else f"{expression.func.value.lower()}_{expression.column}"


def _text_literal(text: str) -> Literal:
    return Literal(text, "'" + text.replace("'", "''") + "'")


def _placed_here(aliases: frozenset[str], alias: str, earlier: set[str]) -> bool:
    """Is this access where a condition on ``aliases`` is checked: the last of its relations
    to be read (the first access, for a condition on parameters alone)?"""
    if not aliases:
        return not earlier
    return alias in aliases and aliases <= earlier | {alias}


def _mentions(operand: object, alias: str) -> bool:
    return isinstance(operand, Attr) and operand.alias == alias


def why_join_filters(catalog: Catalog, block: QueryBlock, rel: Relation,
                     placed: set[str]) -> str | None:
    """None when joining ``rel`` to the relations ``placed`` keeps every row of theirs and
    adds none: a foreign-key lookup on its full key, with no other condition; else why not."""
    if not rel.is_base:
        return f"the join with the subquery {rel.alias} may drop rows"
    table = catalog.table(rel.table or "")
    assert table is not None
    mine = [p for p in block.predicates
            if rel.alias in p.aliases() and p.aliases() <= placed | {rel.alias}]
    filters = [f for f in block.filters if rel.alias in aliases_in(f)]
    if filters:
        return f"the join with {rel.alias} ({table.name}) may drop rows: {filters[0]} filters it"
    source = _foreign_key_source(catalog, table, rel.alias, mine, placed, block)
    if source is not None:
        return None
    bindings = _Bindings.of(rel.alias, mine)
    key = {c.lower() for c in table.primary_key}
    used = {id(p) for c, p in bindings.eq_predicate.items() if c.lower() in key}
    other = [p for p in mine if id(p) not in used]
    lookup = [p for p in mine if id(p) in used]
    if other and _foreign_key_source(catalog, table, rel.alias, lookup, placed, block):
        return f"the join with {rel.alias} ({table.name}) may drop rows: {other[0]} filters it"
    nullable = _foreign_key_source(catalog, table, rel.alias, mine, placed, block,
                                   allow_nullable=True)
    if nullable is not None:
        return (f"the join with {rel.alias} ({table.name}) may drop rows: the FOREIGN KEY of "
                f"{nullable} may be NULL, and a NULL finds no {table.name} row (declare its "
                "columns NOT NULL)")
    return (f"the join with {rel.alias} ({table.name}) may drop rows: it is not a "
            f"lookup of {table.name}'s full key through a FOREIGN KEY")


def _foreign_key_source(catalog: Catalog, table: Table, alias: str, predicates: list[Predicate],
                        placed: set[str], block: QueryBlock, *,
                        allow_nullable: bool = False) -> str | None:
    """The alias whose FOREIGN KEY guarantees the lookup of ``alias`` finds its row (its
    columns NOT NULL, unless ``allow_nullable``: then only that the key is looked up)."""
    bindings = _Bindings.of(alias, predicates)
    key = [c.lower() for c in table.primary_key]
    if set(key) - {c.lower() for c in bindings.eq}:
        return None
    used = {id(bindings.eq_predicate[c]) for c in bindings.eq if c.lower() in key}
    if any(id(p) not in used for p in predicates):
        return None
    values = {c.lower(): v for c, v in bindings.eq.items()}
    sources = {v.alias for k, v in values.items() if k in key and isinstance(v, Attr)}
    if len(sources) != 1:
        return None
    source = sources.pop()
    source_rel = block.relation(source)
    source_table = catalog.table(source_rel.table) if source_rel.is_base else None
    if source_table is None:
        return None
    for fk in source_table.foreign_keys:
        if fk.ref_table.lower() != table.name.lower():
            continue
        if not allow_nullable and any(_nullable(source_table, c) and
                                      not _compared(block, Attr(source, c), alias)
                                      for c in fk.columns):
            continue  # a NULL foreign key finds no row: the join drops it
        mapping = {r.lower(): c.lower() for c, r in zip(fk.columns, fk.ref_columns)}
        if all(isinstance(values[k], Attr) and values[k].column.lower() == mapping.get(k)
               for k in key):
            return source
    return None


def _nullable(table: Table, name: str) -> bool:
    column = table.column(name)
    return column is None or column.nullable


def _compared(block: QueryBlock, attr: Attr, looked_up: str) -> bool:
    """Some condition other than the join with ``looked_up`` compares ``attr``: a comparison
    never holds for NULL, so the rows that reach the join have a value there."""
    return any(attr in (p.left, p.right) and looked_up not in p.aliases()
               for p in block.predicates)


def _needed_columns(block: QueryBlock) -> dict[str, set[str]]:
    """Columns each relation must deliver; an index covers a relation if it holds them all."""
    needed: dict[str, set[str]] = {}
    everything = [block.select, block.predicates, block.group_by, block.order_by,
                  block.filters, block.having, [r.on for r in block.relations]]
    for attr in attrs_in(everything):
        needed.setdefault(attr.alias, set()).add(attr.column)
    return needed


def _with_key(columns: tuple[str, ...], table: Table) -> tuple[str, ...]:
    """Index entries hold the row key after the indexed columns (and sort by it)."""
    return tuple(columns) + tuple(c for c in table.primary_key if c not in columns)


def _is_prefix(shape: tuple[str, ...], columns: tuple[str, ...]) -> bool:
    return tuple(columns[:len(shape)]) == tuple(shape)


def _hint(table: Table, bindings: _Bindings, limit: int | None) -> str:
    if bindings.expressions:  # a CARDINALITY cannot be PER an expression; an index can be unique
        parts = ", ".join(f"{e.func.value.lower()}({e.column})"
                          for e in bindings.expressions.values())
        shown = ", ".join(bindings.expressions)
        return (f"if {shown} identifies a row, declare CREATE UNIQUE INDEX ON {table.name} "
                f"({parts}); or restrict {table.name} by its key "
                f"({', '.join(table.primary_key)}), or add ORDER BY ... LIMIT n")
    free = [c for c in table.primary_key if c not in bindings.eq]
    if bindings.eq and len(free) == 1:
        per = ", ".join(bindings.eq)
        return (f"declare at most K {free[0]} values per ({per}) on {table.name}: "
                f"WITH CARDINALITY ({free[0]}, K) PER ({per}); or add ORDER BY ... LIMIT n "
                "on this relation's columns")
    if limit is None:
        return (f"restrict {table.name} by its key ({', '.join(table.primary_key)}), "
                "or add ORDER BY ... LIMIT n")
    return (f"restrict {table.name} by its key ({', '.join(table.primary_key)}), "
            "or order by this relation's columns so LIMIT can stop the scan")


# -- the plan tree -------------------------------------------------------------

def _assemble(block: QueryBlock, accesses: tuple[Access, ...], card: int,
              merge_at: int | None, subplans: dict[str, PhysicalPlan]) -> PhysicalPlan:
    tree: Operator | None = None
    running = 1
    for position, access in enumerate(accesses):
        leaf = _leaf(access)
        if tree is None:
            tree = leaf
            running = leaf.rows
        else:
            merged = position == merge_at
            keep = block.fetch
            found = access.fanout * access.rows_per_probe
            if access.join == JoinKind.LEFT:
                found = access.fanout * max(1, access.rows_per_probe)
            elif access.join != JoinKind.INNER:
                found = 1  # a semi- or anti-join keeps or drops the outer row
            running = min(running * found, keep) if merged and keep else running * found
            name = {JoinKind.LEFT: "LeftLookupJoin", JoinKind.SEMI: "SemiJoin",
                    JoinKind.ANTI: "AntiJoin"}.get(access.join, "MergeJoin" if merged
                                                   else "IndexLookupJoin")
            detail = f"{access.alias} (bounded outer, keep {keep})" if merged else access.alias
            if access.join in (JoinKind.SEMI, JoinKind.ANTI):
                ons = " AND ".join(map(str, access.residual))
                detail += f" (on {ons})" if ons else " (stop after the first match)"
            tree = Operator(name, detail, running, 0, (tree, leaf))
        if access.residual and access.join not in (JoinKind.SEMI, JoinKind.ANTI):
            what = "Select" if access.join == JoinKind.INNER else "Match"
            tree = Operator(what, " AND ".join(map(str, access.residual)), running, 0, (tree,))
        if access.post:
            tree = Operator("Select", " AND ".join(map(str, access.post)), running, 0, (tree,))
    assert tree is not None
    rows = card
    if block.aggregates or block.group_by or block.having:
        rows = 1 if not block.group_by else rows
        what = ", ".join(map(str, block.aggregates)) or "groups"
        grouped = f" GROUP BY {', '.join(map(str, block.group_by))}" if block.group_by else ""
        tree = Operator("Aggregate", what + grouped, rows, 0, (tree,))
        if block.having:
            tree = Operator("Having", " AND ".join(map(str, block.having)), rows, 0, (tree,))
    if block.distinct:
        tree = Operator("Distinct", ", ".join(i.name for i in block.select), rows, 0, (tree,))
    if block.order_by and not (merge_at is not None and block.limit):
        tree = Operator("Sort", ", ".join(map(str, block.order_by)), rows, 0, (tree,))
    if block.fetch is not None:
        rows = min(rows, block.fetch)
        limit = f"{block.fetch}" if block.limit_param is None else \
            f"{block.limit_param} (at most {block.fetch})"
        tree = Operator("StopAfter", limit, rows, 0, (tree,))
    if block.offset:
        rows = max(0, min(rows, block.fetch or rows) - block.offset)
        tree = Operator("Offset", str(block.offset), rows, 0, (tree,))
    tree = Operator("Project", ", ".join(i.name for i in block.select), rows, 0, (tree,))
    ops = sum(a.ops for a in accesses)
    return PhysicalPlan(block, accesses, tree, ops, rows, merge_at)


def _leaf(access: Access) -> Operator:
    if access.path == AccessPath.DERIVED:
        assert access.subplan is not None
        return Operator("Derived", access.alias, access.rows_per_probe, access.subplan.ops_bound,
                        (access.subplan.root,))
    keys = " AND ".join(
        f"{c} IS NULL" if isinstance(v, NullKey) else f"{c} IN ({', '.join(map(str, v.values))})"
        if isinstance(v, AnyOf) else f"{c} = {v}"
        for c, v in zip(access.key_columns, access.key_values))
    parts = [keys] if keys else []
    parts += [str(p) for p in access.range]
    where = f" ({' AND '.join(parts)})" if parts else ""
    if access.stop_after is not None:
        where += f" in order of ({', '.join(access.order_columns)}) stop after {access.stop_after}"
        if access.descending:
            where += " descending"
    if access.path == AccessPath.PRIMARY:
        name = "KeyLookup" if access.point_lookup else "ClusteredScan"
        target = access.table if access.alias == access.table else f"{access.table} {access.alias}"
    else:
        assert access.index is not None
        name = "IndexScan"
        fetch = "" if access.covering else ", fetch rows"
        alias = "" if access.alias == access.table else f" {access.alias}"
        target = f"{access.index.name} on {access.table}({', '.join(access.index.columns)})" \
                 f"{alias}{fetch}"
    probes = access.probes * access.fanout
    shown = f" x{probes} probes" if probes > 1 else ""
    return Operator(name, f"{target}{where}{shown}", probes * access.rows_per_probe, access.ops)
