"""Phase 4 (SI-3): staging views and periodic views for windows over TEMPORAL columns (§6).

When the only bounded plan needs an index or view led by a TEMPORAL column,
every insert would land on one partition. Instead the relation is copied into
a staging view hash-partitioned on its primary key and sorted by the TEMPORAL
column inside each partition (one write per insert, spread over all
partitions), and the query's result is kept in a periodic view that a refresh
recomputes by running the windowed subquery on every partition in parallel
and merging. Invariant 2 is relaxed to the serial work of one partition:

- tuple windows (``ORDER BY ts LIMIT n``, §6.2): each partition reads at most
  its n first tuples in order, so ``n`` tuples;
- time windows (an epoch ``ts - ts % W = <p>``, §3.3, as the paper's TPC-W
  BestSellers): each partition reads the tuples of the current window, at most
  what one partition can absorb in W: ``partition_write_capacity * W``.

TEMPORAL values are taken to be milliseconds, as in the paper's §3.3.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Catalog, Column, Table
from piql.diagnostics import Diagnostic
from piql.interval import DEFAULT_REFRESH, Interval, parse_interval
from piql.planner.naming import Names
from piql.planner.phase0 import plan_query
from piql.planner.view_construction import column_type
from piql.planner.physical import PhysicalPlan
from piql.planner.window_join import EpochMark, WindowLookup, epoch_marks, window_lookup
from piql.planner.views import (
    MARK, PERIODIC, STAGING, DeltaRule, FrozenColumns, StorageBound, TraceSection, ViewColumn,
    ViewDef,
)
from piql.query import (
    Aggregate, Attr, Epoch, Literal, NamedQuery, OrderItem, Param, Predicate, QueryBlock, Relation,
    SelectItem, base_attr, rename_alias,
)

DEFAULT_PARTITIONS = 16
# Writes per second one partition of the serving store absorbs; bounds how many
# tuples of one time window a partition can hold.
PARTITION_WRITE_CAPACITY = 1000


@dataclass(frozen=True)
class Window:
    """The windowed read of one TEMPORAL relation that Phase 4 moves to a staging view."""

    block: QueryBlock  # the block that reads the relation (the query or its FROM-subquery)
    relation: Relation
    table: Table
    column: str
    kind: str  # "tuple" or "time"
    size: int  # n tuples, or the window width in milliseconds
    lookup: WindowLookup | None = None  # a time window's other relations, read per tuple
    # how writes to those relations reach the epochs they change (or which updates are refused)
    marks: tuple[EpochMark | FrozenColumns, ...] = ()

    @property
    def reads_per_tuple(self) -> int:
        """A staged tuple, and what its lookups read."""
        return 1 + (self.lookup.ops_bound if self.lookup else 0)


@dataclass(frozen=True)
class PeriodicPlan:
    staging: ViewDef
    periodic: ViewDef
    rewritten: QueryBlock
    plan: PhysicalPlan
    trace: tuple[TraceSection, ...]
    table: Table  # the periodic view as a table Phase 0 can plan reads of


JOIN_HINT = ("bound the join with a primary key or a CARDINALITY constraint (or, for a table "
             "joined as a foreign key's parent, declare the FOREIGN KEY)")


@dataclass(frozen=True)
class WindowRefusal:
    """The query reads a TEMPORAL window, but no periodic view can serve it: why
    (``lint`` says it; a time window whose join is not bounded is one such case)."""

    message: str
    hint: str = ""


def find_window(catalog: Catalog, block: QueryBlock,
                names: Names | None = None) -> Window | WindowRefusal | str:
    """The TEMPORAL window of ``block``; or why a window it has cannot be served; or why
    Phase 4 does not apply at all."""
    if len(block.relations) == 1 and block.relations[0].subquery is not None:
        inner = block.relations[0].subquery
        if block.params:
            return "a periodic view is computed ahead of time, so the query cannot take parameters"
        found = tuple_window(catalog, inner)
        return found if found is not None else \
            "the FROM-subquery is not ORDER BY a TEMPORAL column ... LIMIT n over one table"
    found = tuple_window(catalog, block)
    if found is not None:
        if block.params and isinstance(found, Window):
            return "a periodic view is computed ahead of time, so the query cannot take parameters"
        return found
    return _time_window(catalog, block, names)


def tuple_window(catalog: Catalog, block: QueryBlock) -> Window | WindowRefusal | None:
    """``block`` as a tuple window: its first n tuples of one table by a TEMPORAL column
    (None when it has not that shape; a refusal when it has, but is filtered)."""
    if len(block.relations) != 1 or not block.relations[0].is_base or block.limit is None:
        return None
    if not block.order_by or not isinstance(block.order_by[0].expr, Attr) or block.aggregates:
        return None
    relation = block.relations[0]
    table = catalog.table(relation.table or "")
    column = table.column(block.order_by[0].expr.column) if table else None
    if column is None or not column.temporal:
        return None
    if block.predicates:
        # Every partition would have to read its n newest tuples that pass the condition:
        # any number of others may come first. (The refresh reads the n newest, unfiltered.)
        return WindowRefusal(
            f"ORDER BY {block.order_by[0]} LIMIT {block.limit} would be a tuple window of the "
            f"{block.limit} {'newest' if block.order_by[0].desc else 'first'} {table.name} "
            f"tuples, but the condition {block.predicates[0]} filters them first: a partition "
            f"may have to read any number of tuples before {block.limit} pass it",
            "compare a key column with a parameter (an index then serves the query), or "
            "filter the window's tuples in an outer query: SELECT ... FROM (SELECT ... ORDER "
            "BY ts DESC LIMIT n) w WHERE ...")
    return Window(block, relation, table, column.name, "tuple", block.limit)  # type: ignore[arg-type]


def _time_window(catalog: Catalog, block: QueryBlock,
                 names: Names | None) -> Window | WindowRefusal | str:
    epochs = [p for p in block.predicates
              if isinstance(p.left, Epoch) and p.op == "=" and isinstance(p.right, Param)]
    if len(epochs) != 1:
        return "no TEMPORAL tuple window (ORDER BY ts LIMIT n) or time window (ts - ts % W = <p>)"
    attr = epochs[0].left.attr  # type: ignore[union-attr]
    relation = block.relation(attr.alias)
    table = catalog.table(relation.table or "")
    column = table.column(attr.column) if table else None
    if column is None or not column.temporal:
        return f"the window column {attr} is not TEMPORAL"
    lookup, marks = None, ()
    if len(block.relations) > 1:
        lookup = window_lookup(catalog, block, relation.alias, names)
        if isinstance(lookup, str):
            return WindowRefusal(lookup, JOIN_HINT)
        marks = epoch_marks(catalog, block, relation.alias, column.name)
        if isinstance(marks, str):
            return WindowRefusal(marks, JOIN_HINT)
    if any(p.kind == "attr op param" for p in block.predicates):
        return ("a periodic view is computed ahead of time for every parameter value, so "
                "parameters may only be compared with =")
    if not block.aggregates:
        return "a time window needs an aggregate to summarize the window"
    if block.group_by and block.limit is None:
        return ("a time window grouped without LIMIT can have any number of groups per window: "
                "add ORDER BY <aggregate> DESC LIMIT k")
    return Window(block, relation, table, column.name, "time", epochs[0].left.width,  # type: ignore
                  lookup, marks)


def build_periodic(catalog: Catalog, query: NamedQuery, window: Window,
                   partitions: int = DEFAULT_PARTITIONS, names: Names | None = None) -> PeriodicPlan:
    """The staging view, the periodic view, and the query rewritten over the latter
    (``names`` gives out the views' names, and the indexes')."""
    assert query.block is not None
    refresh = parse_interval(query.periodic) if query.periodic else DEFAULT_REFRESH
    staging_name = f"{query.name}Staging" if names is None else names.claim(
        f"{query.name}Staging", holder=f"the staging view of query {query.name}", owner=query.name)
    partition_key, stored = _staging_columns(query.block, window)
    staging = _staging_view(staging_name, query.name, window, partition_key, stored)
    per_partition = window.size if window.kind == "tuple" else \
        PARTITION_WRITE_CAPACITY * -(-window.size // 1000) * window.reads_per_tuple
    definition = _over_staging(query.block, window, staging_name, stored)
    periodic_name = _free_name(catalog, query.name) if names is None else names.claim(
        query.name, f"{query.name}_periodic", holder=f"the periodic view of query {query.name}",
        owner=query.name)
    periodic_table, rewritten = _periodic_table(catalog, query.block, periodic_name, window)
    facts = {
        "partitioned_by": list(partition_key), "order_by": [window.column],
        "per_partition_ops_bound": per_partition, "refresh_every": str(refresh),
        "partitions": partitions,
        "refresh_ops_total": partitions * per_partition,
        "window": window.kind,
        "staging": staging_name,
    }
    staging = replace(staging, extra={k: v for k, v in facts.items() if k != "staging"})
    periodic = ViewDef(
        periodic_name, PERIODIC, (query.name,), definition,
        tuple(ViewColumn(c.name, _source_of(query.block, c.name), c.name in periodic_table.primary_key,
                         "result", c.type) for c in periodic_table.columns),
        f"CREATE VIEW {periodic_name} PERIODIC {refresh} AS {sqlgen.block_sql(definition)}",
        # an epoch has at most one row per joined row of its windowed tuples
        StorageBound(window.table.name, window.relation.alias,
                     window.lookup.plan.rows_bound if window.lookup else 1) if window.kind == "time"
        else StorageBound("", "", periodic_table.row_limit or 0),
        _mark_rules(periodic_name, window), extra=facts,
        frozen=tuple(m for m in window.marks if isinstance(m, FrozenColumns)))
    over = Catalog(catalog.tables + (periodic_table,), catalog.indexes, catalog.source)
    read = plan_query(over, rewritten, names=names)
    assert read.plan is not None, read.failure  # the periodic table is bounded by construction
    trace = (
        TraceSection("window", (f"{window.kind} window on {window.table.name}.{window.column} "
                                f"(TEMPORAL): {_window_text(window)}",)),
        TraceSection("staging view", (staging.sql, f"hash-partitioned on "
                                      f"({', '.join(partition_key)}) into {partitions} partitions, "
                                      f"sorted by {window.column} inside each")),
        TraceSection("periodic view", (periodic.sql,)),
        TraceSection("bounds (relaxed Invariant 2, §2.3)", (
            f"per partition and refresh: ops <= {per_partition}"
            + ("" if window.kind == "tuple" else
               f" ({PARTITION_WRITE_CAPACITY} writes/s per partition x {window.size // 1000} s"
               + (f" x {window.reads_per_tuple} reads per tuple)" if window.lookup else ")")),
            f"per refresh in total: {partitions} partitions x {per_partition} = "
            f"{partitions * per_partition} (grows with the partition count, done in parallel)",
            f"refresh every {refresh}; answers are at most that stale",
            "per base write: 1 staging write")),
        *_lookup_trace(window),
        *_marks_trace(periodic),
        TraceSection("rewritten query plan", tuple(read.plan.root.lines())),
    )
    return PeriodicPlan(staging, periodic, rewritten, read.plan, trace, periodic_table)


def _mark_rules(view: str, window: Window) -> tuple[DeltaRule, ...]:
    """Per joined relation occurrence and event: find the windowed tuples the written tuple
    joins and mark their epochs for the next refresh (one mark per tuple found)."""
    rules = []
    for mark in window.marks:
        if not isinstance(mark, EpochMark):
            continue
        for event in ("insert", "delete"):
            name = f"{view}_mark_on_{event}_{mark.table}_{mark.alias}"
            on = "INSERT INTO" if event == "insert" else "DELETE FROM"
            sql = (f"CREATE RULE {name} ON {on} {mark.table} MARK EPOCHS OF {view} "
                   f"{sqlgen.block_sql(mark.block)}")
            rules.append(DeltaRule(name, event, mark.table, (mark.alias,), mark.block, mark.guards,
                                   MARK, sql, mark.plan.level, mark.plan.ops_bound,
                                   mark.plan.rows_bound, mark.plan))
    return tuple(rules)


def _lookup_trace(window: Window) -> tuple[TraceSection, ...]:
    if window.lookup is None:
        return ()
    joined = ", ".join(f"{r.table} {r.alias}" for r in window.lookup.relations)
    return (TraceSection("lookups per windowed tuple", (
        f"each {window.table.name} tuple of the window joins {joined} by bounded lookups "
        f"(ops <= {window.lookup.ops_bound})", *window.lookup.plan.root.lines())),)


def _marks_trace(periodic: ViewDef) -> tuple[TraceSection, ...]:
    """How writes to the joined relations reach the epochs they change."""
    lines: list[str] = []
    for rule in periodic.rules:
        if rule.event != "insert" or rule.plan is None:
            continue
        lines.append(f"a write to {rule.table} {rule.aliases[0]} marks the epochs of the "
                     f"windowed tuples it joins for the next refresh (ops <= {rule.ops_bound}):")
        lines += [f"  {line}" for line in rule.plan.root.lines()]
    for frozen in periodic.frozen:
        lines.append(f"{frozen.table} is joined only as a foreign key's parent: its inserts and "
                     "deletes reach no window; an update that changes "
                     f"{', '.join(frozen.columns)} is refused (the windows it would change are "
                     "not reached by bounded lookups)")
    return (TraceSection("writes to the joined relations", tuple(lines)),) if lines else ()


def _window_text(window: Window) -> str:
    if window.kind == "tuple":
        return f"the {window.size} {'newest' if window.block.order_by[0].desc else 'first'} tuples"
    return f"epochs of {window.size} ms"


def _staging_columns(block: QueryBlock, window: Window) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """HASH(primary key, columns the query reads first), then the TEMPORAL column, then
    the other columns the query reads (§6.2: ``HASH(tag, docId), timestamp, tag``)."""
    needed = _needed(block, window)
    key = window.table.primary_key
    partition_key = tuple([c for c in key if c in needed] + [c for c in key if c not in needed])
    rest = tuple(c for c in window.table.column_names if c in needed and c != window.column)
    return partition_key, (window.column,) + rest


def _needed(block: QueryBlock, window: Window) -> set[str]:
    """Columns of the windowed table the whole query reads, through a FROM-subquery too."""
    found: set[str] = set()

    def visit(query: QueryBlock, wanted: set[str] | None) -> None:
        exprs = [i.expr for i in query.select if wanted is None or i.name in wanted]
        exprs += [p.left for p in query.predicates] + [p.right for p in query.predicates]
        exprs += list(query.group_by) + [o.expr for o in query.order_by]
        for expr in exprs:
            attr = expr.arg if isinstance(expr, Aggregate) else base_attr(expr)  # type: ignore[arg-type]
            if attr is None:
                continue
            rel = query.relation(attr.alias)
            if rel.subquery is not None:
                visit(rel.subquery, {attr.column})
            elif rel.alias == window.relation.alias:
                found.add(attr.column)

    visit(block, None)
    return found


def _staging_view(name: str, query: str, window: Window, partition_key: tuple[str, ...],
                  stored: tuple[str, ...]) -> ViewDef:
    table, alias = window.table, window.relation.alias
    # The partition leads the clustered key; piql computes it on write from the row's key.
    partition = ViewColumn("partition", Literal(None, f"HASH({', '.join(partition_key)})"), True,
                           "partitioned_by", "INTEGER")
    columns = tuple(
        [partition, ViewColumn(window.column, Attr(alias, window.column), True, "order_by",
                    table.column(window.column).type)]  # type: ignore[union-attr]
        + [ViewColumn(c, Attr(alias, c), True, "partitioned_by", table.column(c).type)  # type: ignore
           for c in partition_key]
        + [ViewColumn(c, Attr(alias, c), False, "needed", table.column(c).type)  # type: ignore
           for c in stored[1:] if c not in partition_key])
    definition = QueryBlock((Relation(alias, table.column_names, table=table.name),), (),
                            tuple(SelectItem(c.name, c.source) for c in columns[1:]))
    shown = f"SELECT HASH({', '.join(partition_key)}), {', '.join(stored)} FROM {table.name}"
    rules = tuple(_staging_rule(name, table, alias, event, columns) for event in ("insert", "delete"))
    return ViewDef(name, STAGING, (query,), definition, columns, f"CREATE VIEW {name} AS {shown}",
                   StorageBound(table.name, alias, 1), rules)


def _staging_rule(view: str, table: Table, alias: str, event: str,
                  columns: tuple[ViewColumn, ...]) -> DeltaRule:
    name = f"{view}_on_{event}_{table.name}_{alias}"
    stored = [c for c in columns if c.name != "partition"]
    delta = QueryBlock((), (), tuple(SelectItem(c.name, Param(c.name)) for c in stored))
    on = "INSERT INTO" if event == "insert" else "DELETE FROM"
    verb = "INSERT INTO" if event == "insert" else "DELETE FROM"
    values = ", ".join(f"<{c.name}>" for c in stored)
    sql = f"CREATE RULE {name} ON {on} {table.name} {verb} {view} SELECT {values}"
    return DeltaRule(name, event, table.name, (alias,), delta, (), event, sql, "SI-0", 0, 1)


def _over_staging(block: QueryBlock, window: Window, staging: str,
                  stored: tuple[str, ...], inner: bool = False) -> QueryBlock:
    """The query with the windowed relation read from the staging view instead.

    A time window's equality parameters become grouping columns: the refresh
    computes the answer for every value, and the epoch stays bound to the
    window the refresh computes.
    """
    if block is not window.block:  # a tuple window inside a FROM-subquery
        outer = block.relations[0]
        window_block = _over_staging(outer.subquery, window, staging, stored, inner=True)  # type: ignore[arg-type]
        sub = replace(outer, subquery=window_block, columns=tuple(s.name for s in window_block.select))
        return replace(block, relations=(sub,))
    columns = _staging_order(stored, window)
    staged = rename_alias(block, window.relation.alias, staging, columns, staging)
    if inner:  # the FROM-subquery window passes on every staged column: SELECT *
        return replace(staged, select=tuple(SelectItem(c, Attr(staging, c)) for c in columns))
    if window.kind == "tuple":
        return staged
    windowed = window.relation.alias
    keys = [(Attr(staging, p.left.column) if p.left.alias == windowed else p.left, name)  # type: ignore
            for p, name in fixed_columns(block)]
    epoch = next(p.left for p in staged.predicates if isinstance(p.left, Epoch))
    shown = [i.expr for i in staged.select]
    return replace(
        staged, predicates=tuple(p for p in staged.predicates
                                 if p.kind != "attr=param" or isinstance(p.left, Epoch)),
        select=(SelectItem("epoch", epoch),)
        + tuple(SelectItem(name, k) for k, name in keys if k not in shown) + staged.select,
        group_by=(epoch,) + tuple(k for k, _ in keys if k not in staged.group_by) + staged.group_by)


def fixed_columns(block: QueryBlock) -> tuple[tuple[Predicate, str], ...]:
    """A time window's parameter equalities, each with the periodic-view column that keeps
    its value: the query's output name when the query selects the attribute, otherwise the
    column's name, qualified by its alias when an output or another key already has it
    (``l1.ol_i_id = <item>`` beside ``SELECT l2.ol_i_id``)."""
    taken = {"epoch", "rank"} | {i.name for i in block.select}
    found = []
    for pred in block.predicates:
        if pred.kind != "attr=param" or not isinstance(pred.left, Attr):
            continue
        attr = pred.left
        name = next((i.name for i in block.select if i.expr == attr), None)
        if name is None:
            name = attr.column if attr.column not in taken else f"{attr.alias}_{attr.column}"
            while name in taken:
                name += "_"
        taken.add(name)
        found.append((pred, name))
    return tuple(found)


def _staging_order(stored: tuple[str, ...], window: Window) -> tuple[str, ...]:
    key = window.table.primary_key
    return tuple(dict.fromkeys(list(stored) + list(key)))


def _periodic_table(catalog: Catalog, block: QueryBlock, name: str,
                    window: Window) -> tuple[Table, QueryBlock]:
    """The periodic view's storage and the query rewritten to read it.

    Tuple windows keep the whole (bounded) result; time windows keep, per epoch,
    the result rows numbered by ``rank`` in the query's order, at most LIMIT of them.
    """
    columns = [Column(i.name, column_type(catalog, block, i.expr)) for i in block.select]
    view = Attr(name, "")
    if window.kind == "tuple":
        rows = block.limit or window.size
        # An ordered result is stored with its rank, so reads return it in order.
        grouped = [i.name for i in block.select if i.expr in block.group_by]
        key = ("rank",) if block.order_by else tuple(grouped or (c.name for c in columns))
        stored = ((Column("rank", "BIGINT"),) if block.order_by else ()) + tuple(columns)
        table = Table(name, stored, key, row_limit=rows)
        rewritten = QueryBlock(
            (Relation(name, tuple(c.name for c in stored), table=name),), (),
            tuple(SelectItem(i.name, replace(view, column=i.name)) for i in block.select),
            order_by=(OrderItem(replace(view, column="rank")),) if block.order_by else ())
        return table, rewritten
    epoch_param = next(p.right for p in block.predicates if isinstance(p.left, Epoch))
    named = fixed_columns(block)
    equalities = [p for p, _ in named]
    fixed = [name for _, name in named]
    ranked = ["rank"] if block.group_by else []
    key = ["epoch"] + fixed + ranked
    fixed_types = {name: column_type(catalog, block, p.left) for p, name in named}
    table_columns = tuple([Column(c, fixed_types.get(c, "BIGINT")) for c in key]
                          + [c for c in columns if c.name not in key])
    limits = (CardinalityConstraint("rank", block.limit or 1, tuple(key[:-1])),) if ranked else ()
    table = Table(name, table_columns, tuple(key), cardinalities=limits)
    relation = Relation(name, tuple(c.name for c in table_columns), table=name)
    predicates = [Predicate(replace(view, column="epoch"), "=", epoch_param)]
    predicates += [Predicate(replace(view, column=c), "=", p.right) for c, p in zip(fixed, equalities)]
    rewritten = QueryBlock(
        (relation,), tuple(predicates),
        tuple(SelectItem(i.name, replace(view, column=i.name)) for i in block.select),
        order_by=(OrderItem(replace(view, column="rank")),) if block.group_by else (),
        limit=block.limit)
    return table, rewritten


def _source_of(block: QueryBlock, name: str):
    """What a periodic view column holds: a query output, the window epoch, or a rank."""
    found = next((i.expr for i in block.select if i.name == name), None)
    if found is not None:
        return found
    if name == "epoch":
        return next(p.left for p in block.predicates if isinstance(p.left, Epoch))
    if name == "rank":
        return Literal(None, "position in ORDER BY")
    return next(p.left for p, fixed in fixed_columns(block) if fixed == name)


def _free_name(catalog: Catalog, name: str) -> str:
    return name if catalog.table(name) is None else f"{name}_periodic"


def periodic_diagnostic(plan: PeriodicPlan, hotspot_column: str, location,
                        refused_index: bool) -> Diagnostic:
    """``refused_index``: Phase 0 refused a TEMPORAL-led index (SI-1 was possible); otherwise
    the maintained view would have been led by the TEMPORAL column (or its epoch)."""
    facts = plan.periodic.extra
    instead = f"not SI-1: an index led by the TEMPORAL column {hotspot_column}" if refused_index \
        else f"not SI-2: a view led by the TEMPORAL column {hotspot_column}" + \
        (" (its epoch)" if facts["window"] != "tuple" else "")
    return Diagnostic(
        "periodic", "info",
        f"SI-3, {instead} would be a write hotspot; rows go to staging view {plan.staging.name} (hash-partitioned, sorted by "
        f"{facts['order_by'][0]}) and {plan.periodic.name} is refreshed every "
        f"{facts['refresh_every']} by {facts['partitions']} parallel tasks reading at most "
        f"{facts['per_partition_ops_bound']} tuples each", _frozen_hint(plan.periodic), location)


def _frozen_hint(periodic: ViewDef) -> str:
    return "; ".join(
        f"updates that change {', '.join(f'{f.table}.{c}' for c in f.columns)} are refused: "
        f"{f.table} is joined only as a foreign key's parent and the old windows such a change "
        "reaches are not found by bounded lookups" for f in periodic.frozen)
