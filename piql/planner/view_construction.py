"""Phase 1: build a view that answers the query by reading one contiguous key range (§3).

Without aggregates: A_eq / A_ineq from parameter predicates, Algorithm 1
(adjacency of result tuples), Algorithm 2 (view predicates from equivalence
classes) and Algorithm 3 (view key: A_eq, A_ineq, A_order, then every
relation's key, each equivalence class once). Selected attributes the key
does not cover are added to the view as non-key columns (piql's choice of the
two in §3.1: one range read at query time, more storage per view row).

With aggregates (§3.2): no parameter inequalities, GROUP BY A_eq, partial
state of fixed size (COUNT; SUM; AVG kept as SUM and COUNT). Epochs of time
windows (§3.3) lead the key.
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from enum import StrEnum

from piql.catalog import CardinalityConstraint, Catalog
from piql.planner.storage import distinct_bound
from piql.planner.views import TraceSection, ViewColumn, view_column_names
from piql.query_block import (
    Aggregate, Attr, Call, Case, Compare, Condition, Epoch, Expr, InList, Junction, Like,
    Literal, Negation, NullTest, Operand, OrderItem, Param, Predicate, QueryBlock, Ratio,
    Relation, SelectItem, attrs_in, base_attr, is_attr_like, is_plain,
)
from piql.sql_types import TypeFamily, family

MAINTAINABLE = ("COUNT", "SUM", "AVG")
NOT_UNDER_DELETES = ("MIN", "MAX")


class Invariant(StrEnum):
    """What a refused view breaks: one of the paper's three invariants (the query reads the
    view with bounded work; its maintenance per write is bounded; its size is bounded by a
    base relation's), or a write hotspot, or a construct a view cannot hold."""

    QUERY = "Invariant 1"
    MAINTENANCE = "Invariant 2"
    STORAGE = "Invariant 3"
    HOTSPOT = "hotspot"
    UNSUPPORTED = "unsupported"


@dataclass(frozen=True)
class Rejection:
    """Why no view (or no bounded view) answers the query, and what would fix it."""

    invariant: Invariant
    message: str
    hint: str = ""
    trace: tuple[TraceSection, ...] = ()


@dataclass(frozen=True)
class Construction:
    """Phase 1's output: the view's columns and definition, and the rewritten query."""

    columns: tuple[ViewColumn, ...]
    definition: QueryBlock
    rewritten: QueryBlock
    group_by: tuple[Attr | Epoch, ...]
    trace: tuple[TraceSection, ...]
    # How many rows of the view share a prefix of its key, where that is bounded by
    # constraints rather than by the key (groups not fixed by a parameter).
    limits: tuple[CardinalityConstraint, ...] = ()


class EquivalenceClasses:
    """Values unified by the query's equality predicates, in order of first appearance."""

    def __init__(self, predicates: tuple[Predicate, ...]) -> None:
        self.classes: list[list[Operand]] = []
        for pred in predicates:
            if pred.op == "=":
                self._union(pred.left, pred.right)

    def _find(self, value: Operand) -> list[Operand] | None:
        return next((c for c in self.classes if value in c), None)

    def _union(self, a: Operand, b: Operand) -> None:
        first, second = self._find(a), self._find(b)
        if first is None and second is None:
            self.classes.append([a] if a == b else [a, b])
        elif first is None:
            second.insert(len(second), a) if a not in second else None  # type: ignore[union-attr]
        elif second is None:
            first.append(b)
        elif first is not second:
            first.extend(second)
            self.classes.remove(second)

    def of(self, value: Operand) -> list[Operand]:
        """EquivalenceClass(P, a) of Algorithm 3: ``value`` and all unified with it."""
        return self._find(value) or [value]


def view_extensions(block: QueryBlock) -> tuple[str, ...]:
    """The constructs of ``block`` beyond the paper's fragment that a view cannot maintain
    exactly (``QueryBlock.extensions`` less what a view keeps): an ``IN`` list of values on
    a column (the view is keyed on the column, as for ``=``, and the query reads one key
    per value) and expressions of the final projection over the view's columns and
    aggregates (``COALESCE``, ``CASE``, arithmetic: computed on the rows the query reads),
    and ``HAVING`` over them (a filter on the view's rows, one per group)."""
    kept_having = () if all(_projected_condition(c) for c in block.having) else block.having
    plain = block.with_(
        filters=tuple(f for f in block.filters if in_list_key(f) is None), having=kept_having,
        select=tuple(SelectItem(i.name, Attr("", i.name)) if projected(i.expr) else i
                     for i in block.select))
    return plain.extensions


def in_list_key(condition: object) -> Attr | None:
    """The column of ``column IN (<a>, 'b', ...)`` (parameters and literals), which a view
    keys on as it keys on ``column = <a>``."""
    if isinstance(condition, InList) and not condition.negated \
            and isinstance(condition.arg, Attr) \
            and all(isinstance(v, (Param, Literal)) for v in condition.values):
        return condition.arg
    return None


def projected(expr: object) -> bool:
    """An expression of the projection computed on the view's rows: functions, operators
    and CASE over columns, literals and the aggregates a view keeps."""
    if isinstance(expr, (Attr, Literal, Param)):
        return True
    if isinstance(expr, Aggregate):
        return is_plain(expr)
    if isinstance(expr, Call):
        return all(projected(a) for a in expr.args)
    if isinstance(expr, Case):
        return all(_projected_condition(c) and projected(v) for c, v in expr.whens) \
            and (expr.default is None or projected(expr.default))
    return False


def _projected_condition(condition: object) -> bool:
    if isinstance(condition, (Compare, Predicate)):
        return projected(condition.left) and projected(condition.right)
    if isinstance(condition, Like):
        return projected(condition.arg) and projected(condition.pattern)
    if isinstance(condition, NullTest):
        return projected(condition.arg)
    if isinstance(condition, InList):
        return projected(condition.arg) and all(projected(v) for v in condition.values)
    if isinstance(condition, Junction):
        return all(_projected_condition(p) for p in condition.parts)
    if isinstance(condition, Negation):
        return _projected_condition(condition.part)
    return False


def construct_view(catalog: Catalog, block: QueryBlock, name: str) -> Construction | Rejection:
    """Phase 1 for ``block``; the view will be called ``name``."""
    if any(not rel.is_base for rel in block.relations):
        return Rejection(Invariant.UNSUPPORTED, "an incrementally maintained view cannot hold a "
                         "FROM-subquery window", "tuple windows are answered by periodic views (SI-3)")
    listed = _unique(a for a in map(in_list_key, block.filters) if a is not None)
    a_eq = _epochs_first(catalog, block, _unique(
        [p.left for p in block.predicates if p.kind == "attr=param"] + listed))
    a_ineq = _unique(p.left for p in block.predicates if p.kind == "attr op param")
    classes = EquivalenceClasses(block.predicates)
    p_view = _view_predicates(block.predicates, classes)
    trace = [
        TraceSection("A_eq", tuple(map(str, a_eq)) or ("(empty)",)),
        TraceSection("A_ineq", tuple(map(str, a_ineq)) or ("(empty)",)),
        TraceSection("equivalence classes", tuple(
            "{" + ", ".join(map(str, c)) + "}" for c in classes.classes) or ("(none)",)),
        TraceSection("P_view", tuple(map(str, p_view)) or ("(empty)",)),
    ]
    if block.aggregates:
        several = next((a for a in listed if not any(
            g in classes.of(a) for g in block.group_by)), None)
        if several is not None:
            return Rejection(
                Invariant.QUERY, f"the aggregate is over an IN list on {several}: it sums "
                "several groups of the view, which the query would have to add up at query "
                "time", f"GROUP BY {several} (one row per value), or query one value at a time",
                tuple(trace))
        return _aggregate_view(catalog, block, name, a_eq, a_ineq, classes, p_view, trace)
    return _row_view(catalog, block, name, a_eq, a_ineq, classes, p_view, trace)


def _row_view(catalog: Catalog, block: QueryBlock, name: str, a_eq: list, a_ineq: list,
              classes: EquivalenceClasses, p_view: list[Predicate],
              trace: list[TraceSection]) -> Construction | Rejection:
    a_order = [o.expr for o in block.order_by]
    trace.insert(2, TraceSection("A_order", tuple(map(str, a_order)) or ("(empty)",)))
    adjacency = _algorithm1(a_ineq, a_order, classes)
    if adjacency is not None:
        return Rejection(Invariant.QUERY, adjacency[0], adjacency[1], tuple(trace))
    a_keys = [Attr(rel.alias, column)
              for rel in sorted(block.relations, key=lambda r: len(_table(catalog, r).primary_key))
              for column in _table(catalog, rel).primary_key]
    key, origins = _algorithm3([("A_eq", a_eq), ("A_ineq", a_ineq), ("A_order", a_order),
                                ("A_keys", a_keys)], classes)
    extra = [expr for item in block.select for expr in _projection_sources(item.expr)
             if not _covered(expr, key, classes)]
    extra = _unique(extra)
    sources = key + extra
    names = view_column_names(sources)
    columns = tuple(
        ViewColumn(n, s, i < len(key), origins[i] if i < len(key) else "projection",
                   column_type(catalog, block, s))
        for i, (n, s) in enumerate(zip(names, sources)))
    trace.append(TraceSection("A_view (view key, in order)", tuple(
        f"{c.name} <- {c.source}  ({c.origin})" for c in columns if c.key)))
    trace.append(TraceSection("columns added to the view (not fetched by a join back)",
                              tuple(f"{c.name} <- {c.source}" for c in columns if not c.key)
                              or ("(none)",)))
    definition = QueryBlock(block.relations, tuple(p_view),
                            tuple(SelectItem(c.name, c.source) for c in columns))
    rewritten = _rewrite(block, name, columns, classes)
    return Construction(columns, definition, rewritten, (), tuple(trace))


def _aggregate_view(catalog: Catalog, block: QueryBlock, name: str, a_eq: list, a_ineq: list,
                    classes: EquivalenceClasses, p_view: list[Predicate],
                    trace: list[TraceSection]) -> Construction | Rejection:
    if a_ineq:
        return Rejection(
            Invariant.MAINTENANCE, f"the aggregate is restricted by an inequality with a parameter "
            f"({a_ineq[0]}); a view cannot keep one partial aggregate per possible range, and "
            "summing many groups at query time is unbounded (§3.2.2)",
            "use an equality, or a time window with an epoch: ts - ts % WIDTH = <epoch>",
            tuple(trace))
    for aggregate in block.aggregates:
        refusal = _aggregate_refusal(aggregate)
        if refusal:
            return Rejection(Invariant.MAINTENANCE if aggregate.func in NOT_UNDER_DELETES else
                             Invariant.STORAGE, refusal[0], refusal[1], tuple(trace))
    # One key column per equivalence class: with `a = <u> AND b = <u>`, P_view keeps
    # `a = b`, so grouping by `a` alone is the same grouping and the rewritten query
    # binds every key column (it reads both through the one parameter).
    group_key, _ = _algorithm3([("A_eq", a_eq)], classes)
    fixed = list(group_key)
    extra: list = []  # GROUP BY columns no parameter fixes: several groups per answer
    for grouping in block.group_by:
        if not any(grouping in classes.of(k) for k in group_key + extra):
            extra.append(grouping)
    # The answer reads every group sharing the parameters' values: bounded only when the
    # dependencies of §4.1 (keys, CARDINALITY, equalities) bound how many there are.
    relations = QueryBlock(block.relations, tuple(p_view), group_by=tuple(group_key + extra))
    limits: list[tuple[Attr | Epoch, int]] = []
    for position, grouping in enumerate(extra):
        groups = distinct_bound(catalog, relations, set(fixed + extra[:position]), {grouping})
        if groups is None:
            return Rejection(Invariant.QUERY, *_unbounded_groups(catalog, block, grouping, fixed),
                             tuple(trace))
        limits.append((grouping, groups))
    group_key = group_key + extra
    names = view_column_names(group_key) if group_key else []
    columns = [ViewColumn(n, s, True, "A_eq" if s in fixed else "GROUP BY",
                          column_type(catalog, block, s))
               for n, s in zip(names, group_key)]
    for aggregate in _state(block.aggregates):
        column = _state_name(aggregate)
        if all(c.name != column for c in columns):
            columns.append(ViewColumn(column, aggregate, False, "aggregate",
                                      column_type(catalog, block, aggregate)))
    trace.append(TraceSection("GROUP BY (A_eq)", tuple(map(str, fixed)) or ("(none: one row)",)))
    if limits:
        trace.append(TraceSection("groups per answer (§4.1 dependencies)", tuple(
            f"{g}: at most {k} per ({', '.join(map(str, fixed + extra[:i]))})"
            for i, (g, k) in enumerate(limits))))
    trace.append(TraceSection("A_agg (partial state)", tuple(
        f"{c.name} <- {c.source}" for c in columns if not c.key)))
    definition = QueryBlock(block.relations, tuple(p_view),
                            tuple(SelectItem(c.name, c.source) for c in columns),
                            group_by=tuple(group_key))
    # The view's key holds the extra groups after the fixed prefix, at most k per prefix:
    # what Phase 0 needs to bound the rewritten query's range read.
    view_limits = tuple(CardinalityConstraint(
        names[len(fixed) + i], k, tuple(names[:len(fixed) + i])) for i, (_, k) in enumerate(limits))
    rewritten = _rewrite(block, name, tuple(columns), classes, keep_order=bool(extra))
    return Construction(tuple(columns), definition, rewritten, tuple(group_key), tuple(trace),
                        view_limits)


def _unbounded_groups(catalog: Catalog, block: QueryBlock, grouping: Attr | Epoch,
                      fixed: list) -> tuple[str, str]:
    """Why the groups of ``grouping`` per answer are not bounded, and the constraint that
    would bound them."""
    fixed_text = ", ".join(map(str, fixed))
    message = (f"GROUP BY {grouping} is not fixed by a parameter"
               + (f", and no CARDINALITY constraint bounds its values per ({fixed_text})"
                  if fixed else "") + ": the query would read every group of the view")
    hint = "compare the grouped column with a parameter, or use ORDER BY ... LIMIT on a " \
        "periodic view (SI-3)"
    attr = base_attr(grouping)
    per = [f.column for f in fixed if isinstance(f, Attr) and attr is not None
           and f.alias == attr.alias]
    if attr is not None and per:
        table = _table(catalog, block.relation(attr.alias))
        hint = (f"declare at most K {attr.column} values per ({', '.join(per)}) on {table.name}: "
                f"WITH CARDINALITY ({attr.column}, K) PER ({', '.join(per)}); or {hint}")
    return message, hint


def _epochs_first(catalog: Catalog, block: QueryBlock, a_eq: list) -> list:
    """§3.3 prepends the epoch to the view key. An epoch of a TEMPORAL column would then
    lead the key and make a write hotspot, so it follows the other equality attributes
    instead when there are any (they spread the inserts)."""
    epochs = [a for a in a_eq if isinstance(a, Epoch)]
    others = [a for a in a_eq if not isinstance(a, Epoch)]
    temporal = [e for e in epochs if _is_temporal(catalog, block, e.attr)]
    if temporal and others:
        return [e for e in epochs if e not in temporal] + others + temporal
    return epochs + others


def _is_temporal(catalog: Catalog, block: QueryBlock, attr: Attr) -> bool:
    column = _table(catalog, block.relation(attr.alias)).column(attr.column)
    return column is not None and column.temporal


def _aggregate_refusal(aggregate: Aggregate) -> tuple[str, str] | None:
    if aggregate.distinct or aggregate.func not in MAINTAINABLE + NOT_UNDER_DELETES:
        return (f"{aggregate} is holistic: its partial state grows with the data it "
                "summarizes, so a view of it is not bounded (§3.2.1)",
                "keep a COUNT, SUM or AVG instead, or group by the value to count distinct ones")
    if aggregate.func in NOT_UNDER_DELETES:
        # The largest value comes first in descending order, the smallest in ascending
        # order, where NULLs (which MIN skips) sort first in SQLite.
        order = f"ORDER BY {aggregate.arg} DESC LIMIT 1" if aggregate.func == "MAX" else \
            f"ORDER BY {aggregate.arg} LIMIT 1"
        nulls = "" if aggregate.func == "MAX" else \
            f" (NULLs sort first: add {aggregate.arg} >= a literal lower bound if it can be NULL)"
        return (f"{aggregate} cannot be maintained under deletes: deleting the current "
                f"{aggregate.func.lower()} needs a scan of the whole group (§3.2.1)",
                f"{order} on an index reads the same value with bounded work{nulls}")
    return None


def _state(aggregates: tuple[Aggregate, ...]) -> list[Aggregate]:
    """Partial state of fixed size: AVG is kept as SUM and COUNT of its argument; a SUM keeps
    the COUNT of its argument too, so it can turn NULL, as SQL's does, when no non-NULL value
    is left; every group keeps its COUNT(*) so maintenance knows when the group is empty."""
    state: list[Aggregate] = []
    for aggregate in aggregates:
        parts = [Aggregate("SUM", aggregate.arg), Aggregate("COUNT", aggregate.arg)] \
            if aggregate.func in ("AVG", "SUM") else [aggregate]
        state += [p for p in parts if p not in state]
    if Aggregate("COUNT", None) not in state:
        state.append(Aggregate("COUNT", None))
    return state


def _state_name(aggregate: Aggregate) -> str:
    if aggregate.func == "COUNT":
        return "cnt" if aggregate.arg is None else f"cnt_{aggregate.arg.column}"
    return f"{aggregate.func.lower()}_{aggregate.arg.column}"  # type: ignore[union-attr]


def _algorithm1(a_ineq: list, a_order: list, classes: EquivalenceClasses) -> tuple[str, str] | None:
    """Adjacency of result tuples: None when the answer is one contiguous key range."""
    distinct_ineq = []
    for attr in a_ineq:
        if not any(attr in classes.of(seen) for seen in distinct_ineq):
            distinct_ineq.append(attr)
    if len(distinct_ineq) > 1:
        return (f"inequalities with parameters on two attributes ({distinct_ineq[0]}, "
                f"{distinct_ineq[1]}): their intersection is not one contiguous range of any "
                "view, so reading it is unbounded (Algorithm 1)",
                "keep the inequality on one attribute and filter the other in the application")
    if a_order and distinct_ineq and a_order[0] not in classes.of(distinct_ineq[0]):
        return (f"ORDER BY {a_order[0]} is not prefixed by the inequality attribute "
                f"{distinct_ineq[0]}: the answer would not be adjacent in the view (Algorithm 1)",
                f"order by {distinct_ineq[0]} first")
    if any(isinstance(o, Aggregate) for o in a_order):
        return ("ORDER BY an aggregate cannot be kept in a view key without rewriting rows on "
                "every write", "use a periodic view (SI-3) for top-k aggregates")
    return None


def _algorithm3(sources: list[tuple[str, list]], classes: EquivalenceClasses) -> tuple[list, list[str]]:
    """View key: each attribute in order unless its equivalence class is already covered."""
    key: list = []
    origins: list[str] = []
    covered: list = []
    for origin, attrs in sources:
        for attr in attrs:
            if attr in covered:
                continue
            key.append(attr)
            origins.append(origin)
            covered += classes.of(attr)
    return key, origins


def _view_predicates(predicates: tuple[Predicate, ...],
                     classes: EquivalenceClasses) -> list[Predicate]:
    """Algorithm 2: equalities from each class without its parameters, then inequalities
    between non-parameters. Each member is equated with the class's first non-parameter,
    which gives the paper's P_view for twoTags."""
    p_view: list[Predicate] = []
    for members in classes.classes:
        values = [m for m in members if not isinstance(m, Param)]
        for value in values[1:]:
            p_view.append(Predicate(values[0], "=", value))
    for pred in predicates:
        if pred.op != "=" and not isinstance(pred.left, Param) and not isinstance(pred.right, Param):
            p_view.append(pred)
    return p_view


def _projection_sources(expr: Expr) -> list:
    """What the view keeps for a projected expression: the expression itself when it is a
    column or an epoch, else the columns it reads (it is computed when the query runs)."""
    if is_attr_like(expr) or isinstance(expr, (Aggregate, Param, Literal, Ratio)):
        return [expr]
    return attrs_in(expr)


def _map_leaves(node: object, leaf) -> object:
    """``node`` with every column, epoch and aggregate in it replaced by ``leaf`` of it."""
    if isinstance(node, (Attr, Epoch, Aggregate)):
        return leaf(node)
    if isinstance(node, tuple):
        return tuple(_map_leaves(n, leaf) for n in node)
    if isinstance(node, (Call, Case, Compare, Predicate, Like, NullTest, InList, Junction,
                         Negation)):
        return replace(node, **{f.name: _map_leaves(getattr(node, f.name), leaf)
                                for f in fields(node) if f.name != "location"})
    return node


def _covered(expr: Expr, key: list, classes: EquivalenceClasses) -> bool:
    if isinstance(expr, (Aggregate, Param, Literal)):
        return True
    return any(expr in classes.of(k) for k in key)


def _rewrite(block: QueryBlock, view: str, columns: tuple[ViewColumn, ...],
             classes: EquivalenceClasses, keep_order: bool = False) -> QueryBlock:
    """The query over the view: parameter predicates on view columns, same order and limit."""
    def column_for(expr: Expr) -> Expr:
        if isinstance(expr, (Param, Literal)):
            return expr
        if isinstance(expr, (Call, Case)):
            return _map_leaves(expr, column_for)  # type: ignore[return-value]
        if isinstance(expr, Aggregate):
            if expr.func == "AVG":
                return Ratio(Attr(view, _state_name(Aggregate("SUM", expr.arg))),
                             Attr(view, _state_name(Aggregate("COUNT", expr.arg))))
            return Attr(view, _state_name(expr))
        for column in columns:
            if column.source == expr or (not isinstance(column.source, Aggregate)
                                         and expr in classes.of(column.source)):
                return Attr(view, column.name)
        raise LookupError(expr)

    predicates: list[Predicate] = []
    for pred in block.predicates:
        if isinstance(pred.right, Param) and is_attr_like(pred.left):
            rewritten = Predicate(column_for(pred.left), pred.op, pred.right, pred.location)
            if rewritten not in predicates:
                predicates.append(rewritten)
    lists: list[Condition] = [InList(column_for(f.arg), f.values) for f in block.filters
                              if in_list_key(f) is not None]
    lists += [_map_leaves(c, column_for) for c in block.having]  # type: ignore[misc]
    relation = Relation(view, tuple(c.name for c in columns), table=view)
    aggregated = bool(block.aggregates)
    return QueryBlock(
        (relation,), tuple(predicates),
        tuple(SelectItem(i.name, column_for(i.expr)) for i in block.select),
        # One group answers an aggregate unless some groups are not fixed by parameters.
        order_by=() if aggregated and not keep_order else tuple(
            OrderItem(column_for(o.expr), o.desc) for o in block.order_by),
        limit=block.limit, filters=tuple(lists))


def _table(catalog: Catalog, rel: Relation):
    table = catalog.table(rel.table or "")
    assert table is not None, rel
    return table


def column_type(catalog: Catalog, block: QueryBlock, expr: Expr) -> str:
    """The SQL type of an output expression: its column's, or its aggregate's.

    As in SQL, COUNT is an integer and AVG a real; SUM keeps its argument's kind, so an
    integer sum stays exact (a REAL column would round it past 2^53 and answer ``7.0``);
    MIN and MAX are values of their argument. A SUM of a DECIMAL is a DECIMAL (PostgreSQL's
    NUMERIC, exact: a TEXT column there could not be added to). A SUM of a column of another
    type gets no type, so the store keeps each sum as computed."""
    if isinstance(expr, Aggregate):
        if expr.func == "COUNT":
            return "BIGINT"
        if expr.func == "AVG":
            return "DOUBLE"
        argument = "ANY" if expr.arg is None else column_type(catalog, block, expr.arg)
        if expr.func != "SUM":
            return argument
        kind = family(argument)
        return {TypeFamily.INTEGER: "BIGINT", TypeFamily.REAL: "DOUBLE",
                TypeFamily.DECIMAL: "DECIMAL"}.get(kind, "ANY")
    if isinstance(expr, Epoch):
        return "BIGINT"
    attr = base_attr(expr) if not isinstance(expr, Literal) else None
    if attr is None:
        return "ANY"
    rel = block.relation(attr.alias)
    if rel.subquery is not None:
        inner = next((i.expr for i in rel.subquery.select if i.name == attr.column), None)
        return "ANY" if inner is None else column_type(catalog, rel.subquery, inner)
    column = _table(catalog, rel).column(attr.column)
    return column.type if column is not None else "ANY"


def _unique(values) -> list:
    found: list = []
    for value in values:
        if value not in found:
            found.append(value)
    return found
