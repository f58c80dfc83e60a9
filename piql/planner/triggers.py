"""Delta rules compiled to triggers: views kept right by the database for writes from any client.

Every rule of an incrementally maintained view (``planner.maintenance``) becomes SQL run in
the writing statement: on PostgreSQL one PL/pgSQL function per base table fired ``BEFORE
INSERT OR UPDATE OR DELETE ... FOR EACH ROW``; on SQLite one ``CREATE TRIGGER`` per table and
event. CARDINALITY constraints are checked there too, with a stop-after of K.

Why BEFORE, not AFTER: a rule reads the state without the written tuple (paper §5.1).
A row-level BEFORE trigger sees the rows the same statement wrote before it and not its own
row, so a statement writing many rows is maintained as the same writes one by one; AFTER
row triggers all run once the statement is done, when every row is in, and a self-join
would pair two new rows twice. A deleted (or updated) row is still there before the write,
so the rules read the base tables without it: each occurrence of the written table is
filtered ``NOT (key = OLD.key)``. A BEFORE INSERT trigger also fires for a row that will
then clash with a key (and fail, or go to ``ON CONFLICT``): the trigger does nothing for a
row whose key is taken, and an upsert's update fires the UPDATE trigger.

An update is a delete of the old row then an insert of the new one, as in the runtime.
Views are maintained in dependency order: a view whose rules read another view reads it
without the tuple (for an insert, before that view changes; for a delete, after).

Exact sums (``ViewDef.exact_sums``): PostgreSQL keeps them exactly in ``numeric``
(``piql_exact`` turns a double into the exact binary fraction it is), the hidden TEXT
column holding ``trim_scale(numeric)::text``, the same text ``runtime.exact_sums.show``
writes, and the visible column its correctly rounded double. SQLite has no exact
arithmetic in SQL: its triggers add doubles, and the migration says so.

Not compiled, and said so in the output: staging views (their partition is a hash piql
computes) and the epoch marks of time windows are kept by piql's write path; periodic
views are refreshed by ``piql refresh``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from sqlglot import exp

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Catalog, Table
from piql.planner.naming import RUNTIME_TABLES, WRITE_LOCK_KEY
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
BULK = "piql.bulk"  # a transaction-local setting: piql's bulk load rebuilds the views itself


class TriggerDialect(StrEnum):
    """The databases piql writes triggers for."""

    POSTGRES = "postgres"
    SQLITE = "sqlite"


@dataclass(frozen=True)
class Triggers:
    """What the database runs: ``preamble`` (functions the views' builds use too), then
    ``statements`` (each one runnable statement, in order); ``notes`` (what it cannot do,
    for SQL comments) and ``maintained`` (the names of the rules it runs, which piql's own
    write path then skips)."""

    preamble: tuple[str, ...]
    statements: tuple[str, ...]
    notes: tuple[str, ...]
    maintained: frozenset[str]


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


def in_database(view: ViewDef, dialect: TriggerDialect,
                windows: dict[str, list[TimeWindow]]) -> bool:
    """Views whose rules the triggers run: the incrementally maintained ones, and on
    PostgreSQL the staging views whose partition SQL computes as piql does (a CRC of
    Python's text of the key: integers and text) and whose epochs are integers."""
    if view.kind == ViewKind.IMV:
        return True
    if view.kind != ViewKind.STAGING or dialect != TriggerDialect.POSTGRES or view.staging is None:
        return False
    types = {c.name: family(c.type) for c in view.columns}
    keyed = all(types.get(c) in (TypeFamily.INTEGER, TypeFamily.TEXT)
                for c in view.staging.partitioned_by)
    return keyed and all(types.get(w.column) == TypeFamily.INTEGER
                         for w in windows.get(view.name, []))


def compile_triggers(catalog: Catalog, views: tuple[ViewDef, ...],
                     dialect: TriggerDialect) -> Triggers:
    """The triggers of every base table (``views`` in dependency order: a view after those
    its rules read)."""
    windows = time_windows(views)
    kept = [v for v in views if in_database(v, dialect, windows)]
    notes = _notes(views, dialect, kept)
    preamble = (exact_function(), checked_function(), crc_function(), repr_function()) \
        if dialect == TriggerDialect.POSTGRES else ()
    statements: list[str] = []
    for table in catalog.tables:
        rules = [(v, r) for v in kept for r in v.rules if r.table.lower() == table.name.lower()]
        frozen = [c for v in views for f in v.frozen if f.table.lower() == table.name.lower()
                  for c in f.columns]
        if not rules and not table.cardinalities and not frozen:
            continue
        if dialect == TriggerDialect.POSTGRES:
            statements += _pg_table(table, rules, tuple(dict.fromkeys(frozen)), windows)
        else:
            statements += _sqlite_table(table, rules, tuple(dict.fromkeys(frozen)))
    maintained = frozenset(r.name for v in kept for r in v.rules)
    return Triggers(preamble, tuple(statements), tuple(notes), maintained)


def _notes(views: tuple[ViewDef, ...], dialect: TriggerDialect,
           kept: list[ViewDef]) -> list[str]:
    notes: list[str] = []
    for view in views:
        marks = sorted({r.table for r in view.rules if r.action == RuleAction.MARK})
        if marks:
            notes.append(f"periodic view {view.name}: writes to {', '.join(marks)} mark the "
                         "epochs they reach for its next refresh only through piql (a BEFORE "
                         "trigger cannot read the written row joined with itself)")
        if view.kind == ViewKind.STAGING and view in kept:
            notes.append(f"staging view {view.name}: kept by the triggers, its partition "
                         "computed as piql does; periodic views read it on `piql refresh`")
        elif view.kind == ViewKind.STAGING:
            notes.append(f"staging view {view.name}: its rows are spread over partitions by a hash "
                         "piql computes, so no trigger keeps it; write its tables through piql "
                         "(or run `piql check --repair` after plain SQL writes)")
        elif view.kind == ViewKind.PERIODIC:
            notes.append(f"periodic view {view.name}: refreshed by `piql refresh` (or "
                         "Deployment.refresh), not by triggers")
        elif view.exact_sums and dialect == TriggerDialect.SQLITE:
            notes.append(f"view {view.name}: SQLite has no exact arithmetic in SQL, so its "
                         f"triggers add doubles to {', '.join(c for c, _ in view.exact_sums)} "
                         "(1e17 + 1.5 - 1e17 gives 0) and leave the hidden exact columns NULL; "
                         "piql's own SQLite store keeps them exact")
    return notes


# -- the delta query of one rule, for one written row -------------------------
def _q(name: str, dialect: TriggerDialect) -> str:
    return sqlgen.identifier(name, dialect)


def _field(record: str, column: str, dialect: TriggerDialect) -> str:
    return f"{record}.{_q(column, dialect)}"


def delta_select(rule: DeltaRule, view: ViewDef, table: Table, record: str,
                 without: str | None, dialect: TriggerDialect) -> str:
    """The rule's delta query for the row ``record`` (``NEW``/``OLD``): its parameters are
    the row's columns, its guards its WHERE; every occurrence of ``table`` it reads skips
    the row whose key ``without`` holds (the row being deleted or updated, still there
    before the write). REAL sums of a view kept exactly are summed as exact numerics."""
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
                                         expression=exp.Var(this=_field(without, c, dialect)))
                                  for c in table.primary_key))
                conditions.append(exp.Not(this=exp.paren(same)))
    if conditions:
        query = query.where(exp.and_(*conditions))
    if dialect == TriggerDialect.POSTGRES:
        _exact_contributions(query, rule, view)
    columns = {re.sub(r"\W", "_", c.name): c.name for c in table.columns}

    def written(node: exp.Expression) -> exp.Expression:
        if isinstance(node, exp.Placeholder):
            name = str(node.this)
            column = columns.get(name) or next(
                (c for p, c in columns.items() if p.lower() == name.lower()), name)
            return exp.Var(this=_field(record, column, dialect))
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


def _exact_contributions(query: exp.Select, rule: DeltaRule, view: ViewDef) -> None:
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


# -- view rows: which columns, how they match ----------------------------------
def _key(view: ViewDef) -> list[str]:
    return [c.name for c in view.key] or ["_all"]


def _aggregates(view: ViewDef) -> list[str]:
    return [c.name for c in view.columns if isinstance(c.source, Aggregate)]


def _count_column(view: ViewDef) -> str:
    return next(c.name for c in view.columns if c.source == Aggregate("COUNT", None))


def _counted(view: ViewDef) -> dict[str, str]:
    """Each SUM column and the column counting its argument's non-NULL values."""
    columns = {c.source: c.name for c in view.columns if isinstance(c.source, Aggregate)}
    return {name: columns[Aggregate("COUNT", source.arg)] for source, name in columns.items()
            if source.func == "SUM" and Aggregate("COUNT", source.arg) in columns}


def _match(view: ViewDef, target: str, source: str, dialect: TriggerDialect) -> str:
    """The view row ``target`` (a table reference or nothing) with the key of ``source``:
    a key that may hold NULL matches NULL with NULL."""
    parts = []
    for column in _key(view):
        left = f"{target}.{_q(column, dialect)}" if target else _q(column, dialect)
        right = "0" if column == "_all" and not view.key else f"{source}.{_q(column, dialect)}"
        if not view.nullable_key:
            parts.append(f"{left} = {right}")
        elif dialect == TriggerDialect.SQLITE:
            parts.append(f"{left} IS {right}")
        else:  # both arms read the index (IS NOT DISTINCT FROM would not)
            parts.append(f"({left} = {right} OR ({left} IS NULL AND {right} IS NULL))")
    return " AND ".join(parts)


def _delta(source: str, column: str, action: RuleAction, dialect: TriggerDialect) -> str:
    sign = "" if action == RuleAction.ADD else "-"
    return f"({sign}COALESCE({source}.{_q(column, dialect)}, 0))"


def _new_values(view: ViewDef, source: str, action: RuleAction,
                dialect: TriggerDialect) -> list[tuple[str, str]]:
    """(column, value) of a new aggregate row built from one delta row."""
    counted = _counted(view)
    hidden = dict(view.exact_sums)
    values = [] if view.key else [("_all", "0")]
    for column in view.columns:
        if column.key:
            values.append((column.name, f"{source}.{_q(column.name, dialect)}"))
            continue
        value = _delta(source, column.name, action, dialect)
        if _integer_sum(view, column.name, dialect):
            value = f"{CHECKED}(({value})::numeric, {_literal(f'{view.name}.{column.name}')})"
        if column.name in counted:
            value = f"CASE WHEN {_delta(source, counted[column.name], action, dialect)} = 0 " \
                    f"THEN NULL ELSE {value} END"
        if column.name in hidden and dialect == TriggerDialect.POSTGRES:
            values.append((column.name, f"({value})::double precision"))
            values.append((hidden[column.name], f"(trim_scale({value}))::text"))
        else:
            values.append((column.name, value))
    return values


def _updates(view: ViewDef, source: str, action: RuleAction,
             dialect: TriggerDialect) -> list[str]:
    """SET items adding one delta row to an aggregate row (a SUM whose counted column
    reaches zero becomes NULL, as SQL's SUM of no values). The view's current values are
    qualified on SQLite, whose UPDATE ... FROM reads a delta row with the same names."""
    counted = _counted(view)
    hidden = dict(view.exact_sums)
    current = "" if dialect == TriggerDialect.POSTGRES else _q(view.name, dialect) + "."
    sets = []
    for column in _aggregates(view):
        q = _q(column, dialect)
        value = f"COALESCE({current}{q}, 0) + {_delta(source, column, action, dialect)}"
        zero = None
        if column in counted:
            zero = f"{current}{_q(counted[column], dialect)} + " \
                   f"{_delta(source, counted[column], action, dialect)} = 0"
        if _integer_sum(view, column, dialect):  # added as numeric: no bigint overflow
            value = f"{CHECKED}(COALESCE({current}{q}, 0)::numeric + " \
                    f"{_delta(source, column, action, dialect)}, {_literal(f'{view.name}.{column}')})"
        if column in hidden and dialect == TriggerDialect.POSTGRES:
            h = _q(hidden[column], dialect)
            total = f"COALESCE({h}::numeric, 0) + {_delta(source, column, action, dialect)}"
            sets.append(f"{q} = {_nulled(zero, f'({total})::double precision')}")
            sets.append(f"{h} = {_nulled(zero, f'(trim_scale({total}))::text')}")
        else:
            sets.append(f"{q} = {_nulled(zero, value)}")
    return sets


def _integer_sum(view: ViewDef, column: str, dialect: TriggerDialect) -> bool:
    """A SUM PostgreSQL adds as numeric and keeps in a BIGINT: checked, so that leaving the
    64-bit range is refused with the view column's name (as the runtime refuses it)."""
    if dialect != TriggerDialect.POSTGRES:
        return False
    found = next(c for c in view.columns if c.name == column)
    return isinstance(found.source, Aggregate) and found.source.func == "SUM" and \
        family(found.type) in (TypeFamily.INTEGER, TypeFamily.BOOLEAN)


def _nulled(zero: str | None, value: str) -> str:
    return value if zero is None else f"CASE WHEN {zero} THEN NULL ELSE {value} END"


# -- PostgreSQL ------------------------------------------------------------------
def exact_function() -> str:
    """A double as the exact binary fraction it is: sign, 52-bit fraction and exponent read
    from its IEEE bits, the power of two multiplied out exactly (numeric products are
    exact; ``float8::numeric`` keeps only 15 digits)."""
    return f"""CREATE OR REPLACE FUNCTION {EXACT}(x double precision) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  bits bigint := ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint;
  e integer := ((bits >> 52) & 2047)::integer;
  m numeric := (bits & 4503599627370495)::numeric;
  k integer;
  base numeric;
  power numeric := 1;
BEGIN
  IF e = 2047 THEN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range',
      MESSAGE = 'a SUM piql keeps exactly cannot hold infinity or NaN';
  END IF;
  IF e = 0 THEN e := 1; ELSE m := m + 4503599627370496; END IF;
  k := e - 1075;
  base := CASE WHEN k >= 0 THEN 2 ELSE 0.5 END;
  k := abs(k);
  WHILE k > 0 LOOP
    IF k % 2 = 1 THEN power := power * base; END IF;
    k := k / 2;
    IF k > 0 THEN base := base * base; END IF;
  END LOOP;
  RETURN CASE WHEN bits < 0 THEN -(m * power) ELSE m * power END;
END $piql$"""


def checked_function() -> str:
    """A sum as BIGINT, or the runtime's refusal when it leaves the 64-bit range."""
    return f"""CREATE OR REPLACE FUNCTION {CHECKED}(total numeric, what text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $piql$
BEGIN
  IF total < -9223372036854775808 OR total > 9223372036854775807 THEN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range', MESSAGE = format(
      'the write would make %s %s, outside the store''s integer range (-2**63 .. 2**63-1), '
      'where SQL''s SUM overflows too', what, total);
  END IF;
  RETURN total;
END $piql$"""


def function_name(table: str) -> str:
    return f"{PREFIX}{table}_write"


def _pg_table(table: Table, rules: list[tuple[ViewDef, DeltaRule]], frozen: tuple[str, ...],
              windows: dict[str, list[TimeWindow]]) -> list[str]:
    d = TriggerDialect.POSTGRES
    name = _q(function_name(table.name), d)
    deletes = _pg_rules(table, rules, WriteEvent.DELETE, "OLD", "OLD", windows)
    inserts = _pg_rules(table, rules, WriteEvent.INSERT, "NEW", None, windows)
    updates_in = _pg_rules(table, rules, WriteEvent.INSERT, "NEW", "OLD", windows)
    body = [
        "#variable_conflict use_column",
        f"DECLARE {ROW} record; {COUNT} bigint;",
        "BEGIN",
        f"  IF current_setting('{BULK}', true) = 'on' THEN  -- piql's bulk load rebuilds",
        "    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;",
        "    RETURN NEW;",
        "  END IF;",
        "  -- one writer at a time, as piql's own write transactions (rules read the state",
        "  -- without the written row, which concurrent writers would change under them)",
        f"  PERFORM pg_advisory_xact_lock({WRITE_LOCK_KEY}, hashtext(TG_TABLE_SCHEMA));",
        "  IF TG_OP = 'UPDATE' AND NEW IS NOT DISTINCT FROM OLD THEN RETURN NEW; END IF;",
        f"  IF TG_OP = 'INSERT' AND ({_pg_taken(table)}) THEN",
        "    RETURN NEW;  -- the insert fails on the key, or is an upsert's update",
        "  END IF;",
    ]
    if frozen:
        changed = " OR ".join(f"NEW.{_q(c, d)} IS DISTINCT FROM OLD.{_q(c, d)}" for c in frozen)
        body += [f"  IF TG_OP = 'UPDATE' AND ({changed}) THEN",
                 "    RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = "
                 + _literal(f"update of {table.name} changes {', '.join(frozen)}, which a "
                            "periodic view reads through a join: piql refuses it (insert a new "
                            f"{table.name} row instead, see docs/temporal.md)") + ";",
                 "  END IF;"]
    for constraint in table.cardinalities:
        body += _pg_cardinality(table, constraint)
    body += ["  IF TG_OP IN ('DELETE', 'UPDATE') THEN"] + deletes + ["  END IF;",
             "  IF TG_OP = 'INSERT' THEN"] + inserts + ["  END IF;",
             "  IF TG_OP = 'UPDATE' THEN"] + updates_in + ["  END IF;",
             "  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;",
             "  RETURN NEW;",
             "END"]
    text = "\n".join(body)
    trigger = _q(f"{PREFIX}{table.name}_write", d)
    return [
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $piql$\n"
        f"{text} $piql$",
        f"DROP TRIGGER IF EXISTS {trigger} ON {_q(table.name, d)}",
        f"CREATE TRIGGER {trigger} BEFORE INSERT OR UPDATE OR DELETE ON {_q(table.name, d)} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}()",
    ]


def _pg_taken(table: Table) -> str:
    """Is the inserted row's primary key (or a UNIQUE key) taken already?"""
    d = TriggerDialect.POSTGRES
    keys = [(table.primary_key, False)] + [(k.columns, not k.nulls_distinct)
                                            for k in table.unique_keys]
    found = []
    for columns, nulls_match in keys:
        parts = [f"{_q(c, d)} IS NOT DISTINCT FROM NEW.{_q(c, d)}" if nulls_match
                 else f"{_q(c, d)} = NEW.{_q(c, d)}" for c in columns]
        found.append(f"EXISTS (SELECT 1 FROM {_q(table.name, d)} WHERE {' AND '.join(parts)})")
    return " OR ".join(found)


def _pg_rules(table: Table, rules: list[tuple[ViewDef, DeltaRule]], event: WriteEvent,
              record: str, without: str | None,
              windows: dict[str, list[TimeWindow]]) -> list[str]:
    d = TriggerDialect.POSTGRES
    ordered = rules if event == WriteEvent.DELETE else list(reversed(rules))
    lines: list[str] = []
    for view, rule in ordered:
        if rule.event != event:
            continue
        select = delta_select(rule, view, table, record, without, d)
        lines.append(f"    -- {rule.name}: {rule.action} rows of {view.name}")
        target = _q(view.name, d)
        if view.kind == ViewKind.STAGING:
            lines += _pg_staging(view, rule.action, select, windows.get(view.name, []))
        elif rule.action == RuleAction.INSERT:
            columns = ", ".join(_q(c.name, d) for c in view.columns)
            lines.append(f"    INSERT INTO {target} ({columns}) {select};")
        elif rule.action == RuleAction.DELETE:
            lines += [f"    FOR {ROW} IN {select} LOOP",
                      f"      DELETE FROM {target} WHERE {_match(view, '', ROW, d)};",
                      "    END LOOP;"]
        else:
            lines += _pg_aggregate(view, rule.action, select)
    return lines


def _pg_staging(view: ViewDef, action: RuleAction, select: str,
                windows: list[TimeWindow]) -> list[str]:
    """Insert or delete staging rows, each in its partition, and mark the epochs they are
    in for the time windows refreshed from the view."""
    d = TriggerDialect.POSTGRES
    target = _q(view.name, d)
    partition = staging_partition(view)
    lines = [f"    FOR {ROW} IN {select} LOOP"]
    if action == RuleAction.INSERT:
        columns = [c.name for c in view.columns]
        values = [partition if c == "partition" else f"{ROW}.{_q(c, d)}" for c in columns]
        lines.append(f"      INSERT INTO {target} ({', '.join(_q(c, d) for c in columns)}) "
                     f"VALUES ({', '.join(values)});")
    else:
        match = _match(view, "", ROW, d).replace(f"{ROW}.{_q('partition', d)}", partition)
        lines.append(f"      DELETE FROM {target} WHERE {match};")
    for window in windows:
        column = f"{ROW}.{_q(window.column, d)}"
        lines += [f"      IF {column} IS NOT NULL THEN",
                  f"        INSERT INTO {_q(DIRTY_EPOCHS, d)} VALUES ({_literal(window.view)}, "
                  f"{column} - {column} % {int(window.width)}) ON CONFLICT DO NOTHING;",
                  "      END IF;"]
    return lines + ["    END LOOP;"]


def staging_partition(view: ViewDef, source: str = ROW) -> str:
    """The partition of the staging row ``source`` as ``runtime.partitions.partition_of``
    computes it: the CRC-32 of Python's text of the tuple of its key values, modulo the
    partitions (PostgreSQL)."""
    d = TriggerDialect.POSTGRES
    assert view.staging is not None
    types = {c.name: family(c.type) for c in view.columns}
    parts = []
    for column in view.staging.partitioned_by:
        value = f"{source}.{_q(column, d)}"
        shown = f"{value}::text" if types[column] == TypeFamily.INTEGER else f"{REPR}({value})"
        parts.append(f"COALESCE({shown}, 'None')")
    tuple_text = " || ', ' || ".join(parts) + (" || ','" if len(parts) == 1 else "")
    return (f"({CRC}(convert_to('(' || {tuple_text} || ')', 'UTF8')) % "
            f"{int(view.staging.partitions)})::integer")


def crc_function() -> str:
    """zlib's CRC-32 of bytes (the staging partitions' hash)."""
    return f"""CREATE OR REPLACE FUNCTION {CRC}(data bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  crc bigint := 4294967295;
BEGIN
  FOR i IN 0 .. length(data) - 1 LOOP
    crc := crc # get_byte(data, i);
    FOR j IN 1 .. 8 LOOP
      IF (crc & 1) = 1 THEN crc := (crc >> 1) # 3988292384; ELSE crc := crc >> 1; END IF;
    END LOOP;
  END LOOP;
  RETURN crc # 4294967295;
END $piql$"""


def repr_function() -> str:
    """Python's ``repr`` of a text value: quoted, backslashes, the quote and control
    characters escaped. Non-ASCII characters are kept, as Python keeps printable ones; of
    the non-printable ones only the Latin-1 controls (U+0080..U+00A0, U+00AD) are escaped
    as Python escapes them, so a key holding another (U+2028, ...) may land in another
    partition than piql's own writes put it in (the refresh reads every partition)."""
    return f"""CREATE OR REPLACE FUNCTION {REPR}(s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  quote text := chr(39);
  shown text := '';
  ch text;
  code integer;
BEGIN
  IF position(chr(39) IN s) > 0 AND position(chr(34) IN s) = 0 THEN quote := chr(34); END IF;
  FOR i IN 1 .. length(s) LOOP
    ch := substr(s, i, 1);
    code := ascii(ch);
    IF ch = quote OR code = 92 THEN shown := shown || chr(92) || ch;
    ELSIF code = 9 THEN shown := shown || chr(92) || 't';
    ELSIF code = 10 THEN shown := shown || chr(92) || 'n';
    ELSIF code = 13 THEN shown := shown || chr(92) || 'r';
    ELSIF code < 32 OR code BETWEEN 127 AND 160 OR code = 173 THEN
      shown := shown || chr(92) || 'x' || lpad(to_hex(code), 2, '0');
    ELSE shown := shown || ch;
    END IF;
  END LOOP;
  RETURN quote || shown || quote;
END $piql$"""


def _pg_aggregate(view: ViewDef, action: RuleAction, select: str) -> list[str]:
    d = TriggerDialect.POSTGRES
    target, match = _q(view.name, d), _match(view, "", ROW, d)
    count = _q(_count_column(view), d)
    values = _new_values(view, ROW, action, d)
    return [
        f"    FOR {ROW} IN {select} LOOP",
        f"      UPDATE {target} SET {', '.join(_updates(view, ROW, action, d))} WHERE {match} "
        f"RETURNING {count} INTO {COUNT};",
        "      IF NOT FOUND THEN",
        f"        IF {_delta(ROW, _count_column(view), action, d)} <> 0 THEN",
        f"          INSERT INTO {target} ({', '.join(_q(c, d) for c, _ in values)}) "
        f"VALUES ({', '.join(v for _, v in values)});",
        "        END IF;",
        f"      ELSIF {COUNT} = 0 THEN",
        f"        DELETE FROM {target} WHERE {match};",
        "      END IF;",
        "    END LOOP;",
    ]


def cardinality_message(table: Table, constraint: CardinalityConstraint) -> str:
    return (f"insert into {table.name} breaks {constraint.describe()}: the "
            f"{', '.join(constraint.per)} of the row already has {constraint.limit} "
            f"{constraint.column} values (limit {constraint.limit})")


def _others(table: Table, constraint: CardinalityConstraint, without: str | None,
            dialect: TriggerDialect) -> str:
    """The distinct other values of the constrained column beside the new row's, read with
    a stop-after of the limit (NULL is a value here, as in the runtime's check)."""
    d = dialect
    parts = []
    for c in constraint.per:
        column = table.column(c)
        nullable = column is None or column.nullable
        q = _q(c, d)
        if not nullable:
            parts.append(f"{q} = NEW.{q}")
        elif d == TriggerDialect.SQLITE:
            parts.append(f"{q} IS NEW.{q}")
        else:
            parts.append(f"({q} = NEW.{q} OR ({q} IS NULL AND NEW.{q} IS NULL))")
    col = _q(constraint.column, d)
    parts.append(f"{col} IS NOT NEW.{col}" if d == TriggerDialect.SQLITE
                 else f"{col} IS DISTINCT FROM NEW.{col}")
    if without is not None:
        same = " AND ".join(f"{_q(c, d)} = {without}.{_q(c, d)}" for c in table.primary_key)
        parts.append(f"NOT ({same})")
    return (f"(SELECT count(*) FROM (SELECT DISTINCT {col} FROM {_q(table.name, d)} WHERE "
            f"{' AND '.join(parts)} LIMIT {int(constraint.limit)}) AS piql_others)")


def _pg_cardinality(table: Table, constraint: CardinalityConstraint) -> list[str]:
    d = TriggerDialect.POSTGRES
    shown = " || ', ' || ".join(f"{_literal(c + '=')} || quote_nullable(NEW.{_q(c, d)})"
                                for c in constraint.per) or "''"
    message = (f"'insert into ' || {_literal(table.name)} || ' breaks ' || "
               f"{_literal(constraint.describe())} || ': (' || {shown} || ') already has "
               f"{int(constraint.limit)} ' || {_literal(constraint.column)} || ' values (limit "
               f"{int(constraint.limit)})'")
    checks = []
    for op, without in (("INSERT", None), ("UPDATE", "OLD")):
        checks += [f"  IF TG_OP = '{op}' AND {_others(table, constraint, without, d)} >= "
                   f"{int(constraint.limit)} THEN",
                   f"    RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = {message};",
                   "  END IF;"]
    return checks


def _literal(text: str) -> str:
    """A string constant of piql's own text (names from the schema), quoted for SQL."""
    return "'" + text.replace("'", "''") + "'"


# -- SQLite ----------------------------------------------------------------------
def _sqlite_table(table: Table, rules: list[tuple[ViewDef, DeltaRule]],
                  frozen: tuple[str, ...]) -> list[str]:
    d = TriggerDialect.SQLITE
    name, statements = table.name, []
    taken = _sqlite_taken(table)
    if frozen:
        changed = " OR ".join(f"NEW.{_q(c, d)} IS NOT OLD.{_q(c, d)}" for c in frozen)
        message = (f"update of {name} changes {', '.join(frozen)}, which a periodic view reads "
                   f"through a join: piql refuses it (insert a new {name} row instead)")
        statements.append(_sqlite_trigger(f"{PREFIX}{name}_frozen", "UPDATE", name, changed,
                                          [f"SELECT RAISE(ABORT, {_literal(message)})"]))
    for constraint in table.cardinalities:
        message = cardinality_message(table, constraint)
        for op, without in (("INSERT", None), ("UPDATE", "OLD")):
            when = f"{_others(table, constraint, without, d)} >= {int(constraint.limit)}"
            if op == "INSERT":
                when = f"NOT ({taken}) AND {when}"
            statements.append(_sqlite_trigger(
                f"{PREFIX}{name}_{constraint.column}_{op.lower()}_cardinality", op, name, when,
                [f"SELECT RAISE(ABORT, {_literal(message)})"]))
    if not rules:
        return statements
    deletes = _sqlite_rules(table, rules, WriteEvent.DELETE, "OLD", "OLD")
    plans = (("INSERT", _sqlite_rules(table, rules, WriteEvent.INSERT, "NEW", None),
              f"NOT ({taken})"),
             ("DELETE", deletes, None),
             ("UPDATE", deletes + _sqlite_rules(table, rules, WriteEvent.INSERT, "NEW", "OLD"),
              None))
    for op, body, when in plans:
        if body:
            statements.append(_sqlite_trigger(f"{PREFIX}{name}_{op.lower()}", op, name, when, body))
    return statements


def _sqlite_taken(table: Table) -> str:
    d = TriggerDialect.SQLITE
    found = []
    for columns in [table.primary_key] + [k.columns for k in table.unique_keys]:
        parts = " AND ".join(f"{_q(c, d)} = NEW.{_q(c, d)}" for c in columns)
        found.append(f"EXISTS (SELECT 1 FROM {_q(table.name, d)} WHERE {parts})")
    return " OR ".join(found)


def _sqlite_trigger(name: str, op: str, table: str, when: str | None, body: list[str]) -> str:
    d = TriggerDialect.SQLITE
    condition = f" WHEN {when}" if when else ""
    statements = "".join(f"\n  {s};" for s in body)
    return (f"CREATE TRIGGER {_q(name, d)} BEFORE {op} ON {_q(table, d)} FOR EACH ROW"
            f"{condition}\nBEGIN{statements}\nEND")


def _sqlite_rules(table: Table, rules: list[tuple[ViewDef, DeltaRule]], event: WriteEvent,
                  record: str, without: str | None) -> list[str]:
    d = TriggerDialect.SQLITE
    ordered = rules if event == WriteEvent.DELETE else list(reversed(rules))
    statements: list[str] = []
    for view, rule in ordered:
        if rule.event != event:
            continue
        select = delta_select(rule, view, table, record, without, d)
        target = _q(view.name, d)
        comment = f"-- {rule.name}: {rule.action} rows of {view.name}\n  "
        if rule.action == RuleAction.INSERT:
            columns = ", ".join(_q(c.name, d) for c in view.columns)
            statements.append(f"{comment}INSERT INTO {target} ({columns}) {select}")
        elif rule.action == RuleAction.DELETE:
            statements.append(f"{comment}DELETE FROM {target} WHERE {_sqlite_among(view, select)}")
        else:
            first, *rest = _sqlite_aggregate(view, rule.action, select)
            statements += [comment + first] + rest
    return statements


def _sqlite_among(view: ViewDef, select: str) -> str:
    """The view rows whose key a delta row holds (NULL matching NULL)."""
    d = TriggerDialect.SQLITE
    target = _q(view.name, d)
    if view.nullable_key:  # a plain table with a unique index: it has a rowid
        return (f"rowid IN (SELECT {target}.rowid FROM {target} JOIN ({select}) AS piql_d ON "
                f"{_match(view, target, 'piql_d', d)})")
    if not view.key:
        return f"{_q('_all', d)} = 0 AND EXISTS ({select})"
    key = ", ".join(_q(c, d) for c in _key(view))
    return f"({key}) IN (SELECT {key} FROM ({select}) AS piql_d)"


def _sqlite_aggregate(view: ViewDef, action: RuleAction, select: str) -> list[str]:
    d = TriggerDialect.SQLITE
    target = _q(view.name, d)
    values = _new_values(view, "piql_d", action, d)
    hidden = [h for _, h in view.exact_sums]
    count = _q(_count_column(view), d)
    return [
        f"UPDATE {target} SET {', '.join(_updates(view, 'piql_d', action, d))} FROM ({select}) "
        f"AS piql_d WHERE {_match(view, target, 'piql_d', d)}",
        f"INSERT INTO {target} ({', '.join(_q(c, d) for c, _ in values)}"
        f"{''.join(', ' + _q(h, d) for h in hidden)}) SELECT {', '.join(v for _, v in values)}"
        f"{', NULL' * len(hidden)} FROM ({select}) AS piql_d WHERE "
        f"{_delta('piql_d', _count_column(view), action, d)} <> 0 AND NOT EXISTS (SELECT 1 FROM "
        f"{target} WHERE {_match(view, target, 'piql_d', d)})",
        f"DELETE FROM {target} WHERE {count} = 0 AND {_sqlite_among(view, select)}",
    ]
