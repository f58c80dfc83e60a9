"""What the triggers of every dialect share: a rule's delta query for the written row, and
the SQL that matches, adds to and builds view rows (``planner.triggers``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from sqlglot import exp

from piql import sqlgen
from piql.catalog import CardinalityConstraint, ForeignKey, Table
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.refresh_plan import WindowKind
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, WriteEvent
from piql.query_block import Aggregate, JoinKind
from piql.sql_types import TypeFamily, family

PREFIX = "piql_"  # every function and trigger piql creates
EXACT = "piql_exact"  # double -> the exact numeric it is (PostgreSQL)
CHECKED = "piql_int"  # numeric -> bigint, or a clear error naming the view column
CRC = "piql_crc32"  # zlib's CRC-32 (staging partitions)
REPR = "piql_repr"  # Python's repr of a text value (staging partitions)
ROW = "piql_r"  # the PL/pgSQL loop variable over a rule's delta rows
COUNT = "piql_n"  # an aggregate row's count after an update
DIRTY_EPOCHS = RUNTIME_TABLES[1]  # piql's table of the epochs marked for refresh
# the functions every PostgreSQL deployment with triggers creates beside its tables' own
HELPER_FUNCTIONS = (EXACT, CHECKED, CRC, REPR)
BULK = "piql.bulk"  # a transaction-local setting: piql's bulk load rebuilds the views itself


class TriggerDialect(StrEnum):
    """The databases piql writes triggers for."""

    POSTGRES = "postgres"
    SQLITE = "sqlite"


@dataclass(frozen=True)
class TimeWindow:
    """A time-window periodic view refreshed from a staging view: the epochs of the staging
    rows a write reaches are marked for its next refresh (``runtime.epochs``)."""

    view: str
    column: str
    width: int


def time_windows(views: tuple[ViewDef, ...]) -> dict[str, list[TimeWindow]]:
    """Per staging view, the time windows refreshed from it."""
    found: dict[str, list[TimeWindow]] = {}
    for view in views:
        plan = view.refresh
        if view.kind == ViewKind.PERIODIC and plan is not None and plan.window == WindowKind.TIME:
            assert plan.epoch_width is not None
            found.setdefault(plan.staging, []).append(
                TimeWindow(view.name, plan.order_column, plan.epoch_width))
    return found


def fired(rules: list[tuple[ViewDef, DeltaRule]],
          event: WriteEvent) -> list[tuple[ViewDef, DeltaRule]]:
    """The rules one write ``event`` fires, in the order they run: a view whose rules read
    another view reads it without the written row, so on a delete the views run in
    dependency order (a view after those it reads, which have lost the row), on an insert
    in reverse (a view before those it reads gain the row)."""
    ordered = rules if event == WriteEvent.DELETE else list(reversed(rules))
    return [(view, rule) for view, rule in ordered if rule.event == event]


def statement_groups(rules: list[tuple[ViewDef, DeltaRule]]
                     ) -> list[list[tuple[ViewDef, DeltaRule]]]:
    """The rules grouped into the statements that run them: consecutive INSERT (or DELETE)
    rules of one view (a self-join's, one per occurrence of the table) run over the UNION
    ALL of their delta queries, one statement instead of several, when none reads that view
    (they would see each other's changes otherwise); every other rule runs on its own."""
    groups: list[list[tuple[ViewDef, DeltaRule]]] = []
    for view, rule in rules:
        previous = groups[-1] if groups else None
        if previous is not None and mergeable(view, rule) and previous[0][0] is view and \
                previous[0][1].action == rule.action and mergeable(*previous[0]):
            previous.append((view, rule))
        else:
            groups.append([(view, rule)])
    return groups


def mergeable(view: ViewDef, rule: DeltaRule) -> bool:
    return rule.action in (RuleAction.INSERT, RuleAction.DELETE) and \
        view.kind != ViewKind.STAGING and not any(
        rel.table and rel.table.lower() == view.name.lower() for rel in rule.delta.relations)


def quote(name: str, dialect: TriggerDialect) -> str:
    return sqlgen.identifier(name, dialect)


def field(record: str, column: str, dialect: TriggerDialect) -> str:
    return f"{record}.{quote(column, dialect)}"


def delta_select(rule: DeltaRule, view: ViewDef, table: Table, record: str,
                 without: str | None, dialect: TriggerDialect,
                 integer_sum_function: str | None = None) -> str:
    """The rule's delta query for the row ``record`` (``NEW``/``OLD``): its parameters are
    the row's columns, its guards its WHERE; every occurrence of ``table`` it reads skips
    the row whose key ``without`` holds (the row being deleted or updated, still there
    before the write). REAL sums of a view kept exactly are summed as exact numerics;
    with ``integer_sum_function`` (an aggregate), integer SUMs are summed by it."""
    query = named_select(rule.delta)
    if not rule.delta.relations:
        query.set("from_", None)
    conditions = [sqlgen.predicate(g, paper=False) for g in rule.guards]
    if without is not None:
        qualify = len(rule.delta.relations) > 1
        for rel in rule.delta.relations:
            if rel.table and rel.table.lower() == table.name.lower() and \
                    rel.join in (JoinKind.INNER, JoinKind.LEFT) and rel.subquery is None:
                same = exp.and_(*(exp.EQ(this=sqlgen.column_ref(c, rel.alias if qualify else None),
                                         expression=exp.Var(this=field(without, c, dialect)))
                                  for c in table.primary_key))
                conditions.append(exp.Not(this=exp.paren(same)))
    if conditions:
        query = query.where(exp.and_(*conditions))
    if not rule.delta.relations and rule.guards and not query.args.get("group") \
            and query.find(exp.AggFunc):
        # an aggregate over no rows still answers one (COUNT 0): a row its guards refuse
        # must give no delta row at all, as piql's own maintenance gives none
        query = query.having(exp.GT(this=exp.Count(this=exp.Star()),
                                    expression=exp.Literal.number(0)))
    if dialect == TriggerDialect.POSTGRES:
        exact_contributions(query, rule, view)
    if integer_sum_function is not None:
        summed_by(query, rule, view, integer_sum_function)
    columns = {re.sub(r"\W", "_", c.name): c.name for c in table.columns}

    def written(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            name = str(node.this)
            column = columns.get(name) or next(
                (c for p, c in columns.items() if p.lower() == name.lower()), name)
            return exp.Var(this=field(record, column, dialect))
        return node

    return sqlgen.render(query.transform(written), dialect)


def named_select(block) -> exp.Select:
    """The SELECT of ``block`` with every item under its name (sqlgen leaves an aggregate
    its default name, which each database spells its own way)."""
    query = sqlgen.select(block, paper=False)
    if len(query.expressions) == len(block.select):
        for node, item in zip(list(query.expressions), block.select):
            if not isinstance(node, exp.Alias):
                node.replace(exp.alias_(node.copy(), sqlgen.ident(item.name)))
    return query


def exact_contributions(query: exp.Select, rule: DeltaRule, view: ViewDef) -> None:
    """Sum REAL values kept exactly as numerics (``piql_exact``), in place."""
    exact = {column for column, _ in view.exact_sums}
    for position, item in enumerate(rule.delta.select):
        if item.name not in exact:
            continue
        node = query.expressions[position]
        inner = node.this if isinstance(node, exp.Alias) else node
        if isinstance(inner, exp.Sum):
            inner.set("this", exp.Anonymous(this=EXACT, expressions=[inner.this]))
            replaced = inner
        else:
            replaced = exp.Anonymous(this=EXACT, expressions=[inner.copy()])
        query.expressions[position].replace(exp.alias_(replaced, sqlgen.ident(item.name)))


def summed_by(query: exp.Select, rule: DeltaRule, view: ViewDef, function: str) -> None:
    """Sum the view's integer SUM columns with the aggregate ``function``, in place."""
    for position, item in enumerate(rule.delta.select):
        node = query.expressions[position]
        inner = node.this if isinstance(node, exp.Alias) else node
        if isinstance(inner, exp.Sum) and integer_column(view, item.name):
            inner.replace(exp.Anonymous(this=function, expressions=[inner.this]))


def key_columns(view: ViewDef) -> list[str]:
    return [c.name for c in view.key] or ["_all"]


def aggregate_columns(view: ViewDef) -> list[str]:
    return [c.name for c in view.columns if isinstance(c.source, Aggregate)]


def count_column(view: ViewDef) -> str:
    return next(c.name for c in view.columns if c.source == Aggregate("COUNT", None))


def counted_columns(view: ViewDef) -> dict[str, str]:
    """Each SUM column and the column counting its argument's non-NULL values."""
    columns = {c.source: c.name for c in view.columns if isinstance(c.source, Aggregate)}
    return {name: columns[Aggregate("COUNT", source.arg)] for source, name in columns.items()
            if source.func == "SUM" and Aggregate("COUNT", source.arg) in columns}


def match_key(view: ViewDef, target: str, source: str, dialect: TriggerDialect) -> str:
    """The view row ``target`` (a table reference or nothing) with the key of ``source``:
    a key that may hold NULL matches NULL with NULL (SQLite's ``IS``, which reads the index;
    PostgreSQL's triggers branch on the NULLs instead: ``triggers_postgres._matching``)."""
    parts = []
    for column in key_columns(view):
        left = f"{target}.{quote(column, dialect)}" if target else quote(column, dialect)
        right = "0" if column == "_all" and not view.key else f"{source}.{quote(column, dialect)}"
        parts.append(f"{left} IS {right}" if view.nullable_key else f"{left} = {right}")
    return " AND ".join(parts)


def signed(source: str, column: str, action: RuleAction, dialect: TriggerDialect) -> str:
    sign = "" if action == RuleAction.ADD else "-"
    return f"({sign}COALESCE({source}.{quote(column, dialect)}, 0))"


def new_row_values(view: ViewDef, source: str, action: RuleAction,
                dialect: TriggerDialect) -> list[tuple[str, str]]:
    """(column, value) of a new aggregate row built from one delta row."""
    counted = counted_columns(view)
    hidden = dict(view.exact_sums)
    values = [] if view.key else [("_all", "0")]
    for column in view.columns:
        if column.key:
            values.append((column.name, f"{source}.{quote(column.name, dialect)}"))
            continue
        value = signed(source, column.name, action, dialect)
        if integer_sum(view, column.name, dialect):
            value = f"{CHECKED}(({value})::numeric, {literal(f'{view.name}.{column.name}')})"
        if column.name in counted:
            value = f"CASE WHEN {signed(source, counted[column.name], action, dialect)} = 0 " \
                    f"THEN NULL ELSE {value} END"
        if column.name in hidden and dialect == TriggerDialect.POSTGRES:
            values.append((column.name, f"({value})::double precision"))
            values.append((hidden[column.name], f"(trim_scale({value}))::text"))
        else:
            values.append((column.name, value))
    return values


def added_sets(view: ViewDef, source: str, action: RuleAction,
             dialect: TriggerDialect) -> list[str]:
    """SET items adding one delta row to an aggregate row (a SUM whose counted column
    reaches zero becomes NULL, as SQL's SUM of no values). The view's current values are
    qualified on SQLite, whose UPDATE ... FROM reads a delta row with the same names."""
    counted = counted_columns(view)
    hidden = dict(view.exact_sums)
    current = "" if dialect == TriggerDialect.POSTGRES else quote(view.name, dialect) + "."
    sets = []
    for column in aggregate_columns(view):
        q = quote(column, dialect)
        value = f"COALESCE({current}{q}, 0) + {signed(source, column, action, dialect)}"
        zero = None
        if column in counted:
            zero = f"{current}{quote(counted[column], dialect)} + " \
                   f"{signed(source, counted[column], action, dialect)} = 0"
        if integer_sum(view, column, dialect):  # added as numeric: no bigint overflow
            value = f"{CHECKED}(COALESCE({current}{q}, 0)::numeric + " \
                    f"{signed(source, column, action, dialect)}, {literal(f'{view.name}.{column}')})"
        if column in hidden and dialect == TriggerDialect.POSTGRES:
            h = quote(hidden[column], dialect)
            total = f"COALESCE({h}::numeric, 0) + {signed(source, column, action, dialect)}"
            sets.append(f"{q} = {nulled(zero, f'({total})::double precision')}")
            sets.append(f"{h} = {nulled(zero, f'(trim_scale({total}))::text')}")
        else:
            sets.append(f"{q} = {nulled(zero, value)}")
    return sets


def integer_sum(view: ViewDef, column: str, dialect: TriggerDialect) -> bool:
    """A SUM PostgreSQL adds as numeric and keeps in a BIGINT: checked, so that leaving the
    64-bit range is refused with the view column's name (as the runtime refuses it)."""
    return dialect == TriggerDialect.POSTGRES and integer_column(view, column)


def integer_column(view: ViewDef, column: str) -> bool:
    """Is ``column`` of ``view`` a SUM of integers (or booleans)?"""
    found = next((c for c in view.columns if c.name == column), None)
    return found is not None and isinstance(found.source, Aggregate) and \
        found.source.func == "SUM" and family(found.type) in (TypeFamily.INTEGER,
                                                               TypeFamily.BOOLEAN)


def nulled(zero: str | None, value: str) -> str:
    return value if zero is None else f"CASE WHEN {zero} THEN NULL ELSE {value} END"


def read_columns(table: Table, statements: list[str], dialect: TriggerDialect) -> list[str]:
    """The columns of the written row (``NEW``/``OLD``) that a trigger's rule
    ``statements`` read. Every view is a function of the columns its rules read, so an
    update changing none of them changes no view, and its rules need not run."""
    text = "\n".join(statements)
    return [c.name for c in table.columns
            if re.search(rf"\b(?:NEW|OLD)\.{re.escape(quote(c.name, dialect))}", text)]


def any_changed(columns: list[str], dialect: TriggerDialect) -> str:
    """Does an update change one of ``columns`` (NULL to a value and back included)?"""
    differs = "IS NOT" if dialect == TriggerDialect.SQLITE else "IS DISTINCT FROM"
    return " OR ".join(f"NEW.{quote(c, dialect)} {differs} OLD.{quote(c, dialect)}"
                       for c in columns) or "FALSE"


def cardinality_message(table: Table, constraint: CardinalityConstraint) -> str:
    return (f"insert into {table.name} breaks {constraint.describe()}: the "
            f"{', '.join(constraint.per)} of the row already has {constraint.limit} "
            f"{constraint.column} values (limit {constraint.limit})")


def other_values(table: Table, constraint: CardinalityConstraint, without: str | None,
                 dialect: TriggerDialect, per_match: str | None = None) -> str:
    """The distinct other values of the constrained column beside the new row's, read with
    a stop-after of the limit (NULL is a value here, as in the runtime's check).
    ``per_match``: the condition on the ``per`` columns, which PostgreSQL's triggers make
    (``triggers_postgres._matching``); SQLite's is ``IS`` (NULL-safe, reading the index)."""
    d = dialect
    parts = [per_match] if per_match else []
    for c in constraint.per if per_match is None else ():
        column = table.column(c)
        q = quote(c, d)
        parts.append(f"{q} = NEW.{q}" if column is not None and not column.nullable
                     else f"{q} IS NEW.{q}")
    col = quote(constraint.column, d)
    parts.append(f"{col} IS NOT NEW.{col}" if d == TriggerDialect.SQLITE
                 else f"{col} IS DISTINCT FROM NEW.{col}")
    if without is not None:
        same = " AND ".join(f"{quote(c, d)} = {without}.{quote(c, d)}" for c in table.primary_key)
        parts.append(f"NOT ({same})")
    return (f"(SELECT count(*) FROM (SELECT DISTINCT {col} FROM {quote(table.name, d)} WHERE "
            f"{' AND '.join(parts)} LIMIT {int(constraint.limit)}) AS piql_others)")


def foreign_key_message(table: Table, fk: ForeignKey) -> str:
    """What a trigger raises for an inserted row without its parent; piql's own write path
    reads the constraint from it and names the values (``runtime.writes``)."""
    return (f"insert into {table.name} breaks FOREIGN KEY ({', '.join(fk.columns)}) "
            f"REFERENCES {fk.ref_table}: no {fk.ref_table} row with the row's "
            f"{', '.join(fk.columns)}")


def parent_missing(table: Table, fk: ForeignKey, dialect: TriggerDialect) -> str:
    """Does the NEW row refer to a parent that is not there? Rows with a NULL there refer to
    nothing, as in SQL, and a row that is its own parent is one (SQL checks after the
    write, when it is in)."""
    d = dialect
    given = " AND ".join(f"NEW.{quote(c, d)} IS NOT NULL" for c in fk.columns)
    match = " AND ".join(f"{quote(r, d)} = NEW.{quote(c, d)}"
                         for c, r in zip(fk.columns, fk.ref_columns))
    condition = f"{given} AND NOT EXISTS (SELECT 1 FROM {quote(fk.ref_table, d)} WHERE {match})"
    if fk.ref_table.lower() == table.name.lower():
        own = " AND ".join(f"NEW.{quote(c, d)} = NEW.{quote(r, d)}"
                           for c, r in zip(fk.columns, fk.ref_columns))
        condition += f" AND NOT ({own})"
    return condition


def literal(text: str) -> str:
    """A string constant of piql's own text (names from the schema), quoted for SQL."""
    return "'" + text.replace("'", "''") + "'"
