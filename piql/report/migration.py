"""``piql plan --dialect postgres|sqlite``: a runnable migration.

Applied to an empty database (``psql -v ON_ERROR_STOP=1 -f plan.sql``, ``sqlite3 app.db <
plan.sql``, or one ``execute`` of the whole text) it creates the base tables with their
keys and constraints, the indexes, the tables keeping the views (with their hidden
exact-sum columns), builds every view from the rows already there, and installs the
triggers of ``planner.triggers``: from then on plain SQL writes from any client keep every
incrementally maintained view equal to its definition and refuse writes that break a
CARDINALITY constraint. What a dialect cannot do is said in SQL comments, never printed as
SQL that would fail.

On PostgreSQL it also writes piql's metadata as ``piql deploy`` does (its bookkeeping
tables, the plan's fingerprint and its triggers' fingerprint, ``planner.fingerprint``),
last, so that ``piql deploy`` / ``app.deploy(url)`` of the same plan onto the database
adopts it (reusing its tables, views and triggers) and another plan is refused. A SQLite
database made from the migration is not adopted: piql's own SQLite store maintains views
in Python, and the migration's triggers would maintain them a second time.
"""
from __future__ import annotations

from sqlglot import exp

from piql import sqlgen
from piql.catalog import Catalog, Table
from piql.planner.application import Plan
from piql.planner.naming import key_index_name
from piql.planner.store_layout import KeyStorage, key_index_columns, view_storage
from piql.planner.fingerprint import (
    FINGERPRINT, META, TRIGGERS, plan_fingerprint, postgres_bookkeeping, triggers_fingerprint,
)
from piql.planner.trigger_rules import EXACT, TriggerDialect, literal, named_select
from piql.planner.triggers import Triggers, compile_triggers
from piql.planner.triggers_postgres import staging_partition
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import Aggregate
from piql.report.ddl import staging_build, view_header
from piql.sql_types import postgres_type, short_name

DIALECTS = tuple(d.value for d in TriggerDialect)


def render(plan: Plan, dialect: str) -> str:
    """The migration of ``plan`` in ``dialect`` (``postgres`` or ``sqlite``)."""
    d = TriggerDialect(dialect)
    triggers = compile_triggers(plan.catalog, plan.ordered_views, d)
    apply = "psql -v ON_ERROR_STOP=1 -f plan.sql" if d == TriggerDialect.POSTGRES \
        else "sqlite3 app.db < plan.sql"
    out = [f"-- piql plan for {plan.queries_file} ({dialect}): a migration; apply it to an "
           f"empty database ({apply})", ""]
    out += ["-- base tables"] + [s + ";" for s in base_tables(plan.catalog, d)] + [""]
    for title, indexes in (("secondary indexes", plan.indexes),
                           ("indexes writes check constraints through", plan.check_indexes)):
        if indexes:
            out.append(f"-- {title}")
            out += [sqlgen.create_index(i.table, i.columns, _index_name(i.name, d), dialect) + ";"
                    for i in indexes]
            out.append("")
    if triggers.preamble:
        out += ["-- functions of the triggers and builds: a double as the exact binary fraction "
                "it is (exact REAL sums); an integer sum checked for the 64-bit range"]
        out += [s + ";" for s in triggers.preamble] + [""]
    if d == TriggerDialect.POSTGRES:
        out += ["-- piql's bookkeeping: its metadata, the time windows' epochs marked for "
                "refresh (staging writes mark them), the count of write transactions"]
        out += [s + ";" for s in postgres_bookkeeping()] + [""]
    for view in plan.ordered_views:
        kept = any(r.name in triggers.maintained for r in view.rules)
        out += _view(view, d, kept) + [""]
    out += _triggers(triggers)
    out += _metadata(plan, triggers, d)
    out.append("-- queries (run by piql, or as written here with their parameters bound)")
    for query in plan.queries:
        out.append(f"-- {query.name}: {query.level}"
                   + (f", ops <= {query.ops_bound}" if query.ops_bound is not None else ""))
        if query.physical is not None:
            out.append("--   " + sqlgen.block_sql(query.physical.block, dialect))
        elif query.query.block is not None:
            out.append("--   " + sqlgen.block_sql(query.query.block, dialect) + "  -- unbounded")
    return "\n".join(out) + "\n"


def _index_name(name: str, dialect: TriggerDialect) -> str:
    return short_name(name) if dialect == TriggerDialect.POSTGRES else name


def _type(declared: str, dialect: TriggerDialect) -> str:
    if dialect == TriggerDialect.POSTGRES:
        return postgres_type(declared)
    return "" if declared.upper() == "ANY" else declared


def _q(name: str, dialect: TriggerDialect) -> str:
    return sqlgen.identifier(name, dialect)


def _names(columns, dialect: TriggerDialect) -> str:
    return ", ".join(_q(c, dialect) for c in columns)


def base_tables(catalog: Catalog, dialect: TriggerDialect) -> list[str]:
    """CREATE TABLE of every base table: columns, NOT NULL, the primary key, UNIQUE keys and
    foreign keys (on PostgreSQL added once every table exists, so they may point anywhere)."""
    statements = [_base_table(t, dialect) for t in catalog.tables]
    if dialect == TriggerDialect.POSTGRES:
        statements += [f"ALTER TABLE {_q(t.name, dialect)} ADD {_foreign_key(fk, dialect)}"
                       for t in catalog.tables for fk in t.foreign_keys]
    return statements


def _base_table(table: Table, dialect: TriggerDialect) -> str:
    parts = [f"{_q(c.name, dialect)} {_type(c.type, dialect)}".rstrip()
             + sqlgen.default_clause(c.default, dialect)
             + ("" if c.nullable else " NOT NULL") for c in table.columns]
    parts.append(f"PRIMARY KEY ({_names(table.primary_key, dialect)})")
    for key in table.unique_keys:
        nulls = " NULLS NOT DISTINCT" if not key.nulls_distinct and \
            dialect == TriggerDialect.POSTGRES else ""
        parts.append(f"UNIQUE{nulls} ({_names(key.columns, dialect)})")
    if dialect == TriggerDialect.SQLITE:
        parts += [_foreign_key(fk, dialect) for fk in table.foreign_keys]
    statement = f"CREATE TABLE {_q(table.name, dialect)} ({', '.join(parts)})"
    if dialect == TriggerDialect.SQLITE and table.foreign_keys:
        statement = ("-- SQLite checks foreign keys only on connections that run "
                     "PRAGMA foreign_keys = ON\n" + statement)
    return statement


def _foreign_key(fk, dialect: TriggerDialect) -> str:
    return (f"FOREIGN KEY ({_names(fk.columns, dialect)}) REFERENCES {_q(fk.ref_table, dialect)} "
            f"({_names(fk.ref_columns, dialect)})")


def view_table(view: ViewDef, dialect: TriggerDialect) -> list[str]:
    """The table keeping the view, as the store creates it: clustered on the view key, or
    (a key that may hold NULL) a plain table with a unique index on the key (on SQLite,
    followed by the other columns when it covers the row: ``store_layout.view_storage``)."""
    columns = [f"{_q(c, dialect)} {_type(t, dialect)}".rstrip() for c, t in view.stored_columns]
    key = _names(view.stored_key, dialect)
    name = _q(view.name, dialect)
    if not view.nullable_key:
        rowid = " WITHOUT ROWID" if dialect == TriggerDialect.SQLITE else ""
        return [f"CREATE TABLE {name} ({', '.join(columns)}, PRIMARY KEY ({key})){rowid}"]
    return [f"CREATE TABLE {name} ({', '.join(columns)})",
            key_index_sql(view.name, tuple(c for c, _ in view.stored_columns), view.stored_key,
                          view_storage(view), dialect)]


def key_index_sql(view: str, columns: tuple[str, ...], key: tuple[str, ...],
                  storage: KeyStorage, dialect: TriggerDialect) -> str:
    """The unique index a view whose key may hold NULL is read through (by its name): its
    key on PostgreSQL (NULLs equal); on SQLite also its other columns when it covers them."""
    nulls = " NULLS NOT DISTINCT" if dialect == TriggerDialect.POSTGRES else ""
    indexed = key if dialect == TriggerDialect.POSTGRES else key_index_columns(columns, key, storage)
    return (f"CREATE UNIQUE INDEX {_q(_index_name(key_index_name(view), dialect), dialect)} "
            f"ON {_q(view, dialect)} ({_names(indexed, dialect)}){nulls}")


def _view(view: ViewDef, dialect: TriggerDialect, kept: bool) -> list[str]:
    lines = view_header(view) + [s + ";" for s in view_table(view, dialect)]
    definition = sqlgen.block_sql(view.definition, dialect)
    if view.kind == ViewKind.PERIODIC:
        refresh = f" every {view.refresh.refresh_every}" if view.refresh is not None else ""
        return lines + [f"-- filled and refreshed{refresh} by `piql refresh` (no trigger), as:",
                        f"--   {definition}"]
    if view.kind == ViewKind.STAGING and not kept:
        return lines + [staging_build(view, dialect)]
    return lines + [build(view, dialect) + ";"]


def build(view: ViewDef, dialect: TriggerDialect) -> str:
    """INSERT ... SELECT of the view's definition over the rows already there. An aggregate
    view keeps no group whose count is zero (as its triggers remove them); its exact REAL
    sums are summed exactly on PostgreSQL (their hidden columns stay NULL on SQLite)."""
    query = named_select(view.definition)
    hidden = dict(view.exact_sums)
    extra: list[exp.Expression] = []
    for position, item in enumerate(view.definition.select):
        if item.name not in hidden or not isinstance(item.expr, Aggregate):
            continue
        if dialect == TriggerDialect.POSTGRES:
            total = exp.Sum(this=exp.Anonymous(this=EXACT, expressions=[
                sqlgen.expression(item.expr.arg, False, len(view.definition.relations) > 1)]))
            query.expressions[position].replace(exp.alias_(
                exp.Cast(this=total.copy(), to=exp.DataType.build("DOUBLE")), sqlgen.ident(item.name)))
            extra.append(exp.alias_(exp.Cast(this=exp.Anonymous(this="trim_scale", expressions=[
                total]), to=exp.DataType.build("TEXT")), sqlgen.ident(hidden[item.name])))
        else:
            extra.append(exp.alias_(exp.Null(), sqlgen.ident(hidden[item.name])))
    if extra:
        query = query.select(*extra)
    select = sqlgen.render(query, dialect)
    columns = [c.name for c in view.columns] + [hidden[c] for c in hidden]
    target = f"INSERT INTO {_q(view.name, dialect)}"
    if view.kind == ViewKind.STAGING:  # the partition computed as piql does
        rest = [c for c in columns if c != "partition"]
        return (f"{target} ({_names(['partition'] + rest, dialect)}) SELECT "
                f"{staging_partition(view, 'piql_b')}, {', '.join(f'piql_b.{_q(c, dialect)}' for c in rest)} "
                f"FROM ({select}) AS piql_b")
    if not view.aggregate:
        return f"{target} ({_names(columns, dialect)}) {select}"
    count = next(c.name for c in view.columns if c.source == Aggregate("COUNT", None))
    if not view.key:
        columns = ["_all"] + columns
        select = f"SELECT 0, piql_b.* FROM ({select}) AS piql_b"
        return (f"{target} ({_names(columns, dialect)}) {select} WHERE piql_b."
                f"{_q(count, dialect)} <> 0")
    return (f"{target} ({_names(columns, dialect)}) SELECT * FROM ({select}) AS piql_b "
            f"WHERE piql_b.{_q(count, dialect)} <> 0")


def _metadata(plan: Plan, triggers: Triggers, dialect: TriggerDialect) -> list[str]:
    """The fingerprints ``piql deploy`` finds to adopt the database (PostgreSQL), written
    last: a migration that stopped halfway is not adopted."""
    if dialect != TriggerDialect.POSTGRES:
        return ["-- `piql deploy` makes a store of its own rather than adopting this database "
                "(its SQLite store maintains the views itself, not through these triggers)", ""]
    values = ", ".join(f"({literal(key)}, {literal(value)})" for key, value in (
        (FINGERPRINT, plan_fingerprint(plan)), (TRIGGERS, triggers_fingerprint(triggers))))
    return ["-- piql's metadata: `piql deploy` of this plan adopts the database as it is "
            "(another plan is refused)",
            f"INSERT INTO {_q(META, dialect)} (key, value) VALUES {values};", ""]


def _triggers(triggers: Triggers) -> list[str]:
    out = ["-- triggers: every write keeps the views above right, in its own transaction"]
    out += [f"-- {note}" for note in triggers.notes]
    for statement in triggers.statements:
        out += [statement + ";", ""]
    return out
