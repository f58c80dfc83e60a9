"""Delta rules compiled to triggers: views kept right by the database for writes from any client.

Every rule of an incrementally maintained view (``planner.maintenance``) becomes SQL run in
the writing statement: on PostgreSQL one PL/pgSQL function per base table fired ``BEFORE
INSERT OR UPDATE OR DELETE ... FOR EACH ROW``; on SQLite one ``CREATE TRIGGER`` per table and
event. CARDINALITY constraints are checked there too, with a stop-after of K, and an
inserted or updated row's FOREIGN KEYs (after PostgreSQL's write lock).

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
arithmetic in SQL: the migration's triggers add doubles (and integers past 64 bits turn
REAL), and it says so.

piql's own SQLite store runs the SQLite triggers as its connection's own (``TEMP``),
compiled with ``functions``: a SUM is added by functions its connections register
(``triggers_sqlite.SUM_ADD``, ``runtime.sqlite_functions``), exactly and refusing integer
overflow as piql's write path does, so they keep every view, SUMs included, and check
CARDINALITY and FOREIGN KEYs; so does PostgreSQL's. An insert whose checks and rules all
run there is then one statement of piql's (``runtime.writes``).

Staging views are kept too on PostgreSQL: each row goes to the partition piql computes
(zlib's CRC-32 of Python's text of its key, in PL/pgSQL) and marks the epochs of the time
windows refreshed from it, as do writes to a table a time window joins. Not compiled, and
said so in the output: staging views and epoch marks on SQLite (no CRC in its SQL), and a
mark rule reading the written table itself (piql marks an insert with the row in);
periodic views are refreshed by ``piql refresh``.

The SQL shared by both dialects is in ``trigger_rules``, each dialect's in
``triggers_postgres`` and ``triggers_sqlite``.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.catalog import Catalog
from piql.planner.trigger_rules import TimeWindow, TriggerDialect, time_windows
from piql.planner.triggers_postgres import (
    checked_function, crc_function, exact_function, postgres_table, repr_function,
)
from piql.planner.triggers_sqlite import deleted_by_key, gone_view, sqlite_table
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, nullable_key_columns
from piql.query_block import MaintenanceMode
from piql.sql_types import TypeFamily, family


@dataclass(frozen=True)
class Triggers:
    """What the database runs: ``preamble`` (functions the views' builds use too), then
    ``statements`` (each one runnable statement, in order); ``notes`` (what it cannot do,
    for SQL comments), ``maintained`` (the names of the rules it runs, which piql's own
    write path then skips) and ``checked`` (the tables whose inserts it checks: CARDINALITY
    and FOREIGN KEY constraints)."""

    preamble: tuple[str, ...]
    statements: tuple[str, ...]
    notes: tuple[str, ...]
    maintained: frozenset[str]
    checked: frozenset[str] = frozenset()


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


def marks_in_database(view: ViewDef, dialect: TriggerDialect,
                      kept: list[ViewDef]) -> list[DeltaRule]:
    """A time window's epoch-mark rules the triggers run (PostgreSQL, its staging view kept
    by them): those whose delta query does not read the written table, which a BEFORE
    trigger sees without the row (piql marks an insert's epochs with the row in)."""
    plan = view.refresh
    if dialect != TriggerDialect.POSTGRES or plan is None or \
            not any(k.name == plan.staging for k in kept):
        return []
    return [r for r in view.rules if r.action == RuleAction.MARK and not any(
        rel.table and rel.table.lower() == r.table.lower() for rel in r.delta.relations)]


def synchronous(views: tuple[ViewDef, ...]) -> tuple[ViewDef, ...]:
    """The views a store's triggers keep: asynchronous views are kept from the update queue
    (``runtime.update_queue``)."""
    return tuple(v for v in views if v.maintenance is MaintenanceMode.SYNC)


def compile_triggers(catalog: Catalog, views: tuple[ViewDef, ...],
                     dialect: TriggerDialect, functions: bool = False) -> Triggers:
    """The triggers of every base table (``views`` in dependency order: a view after those
    its rules read). ``functions``: SQLite's triggers for piql's own connections, which add
    SUMs with the functions they register (``triggers_sqlite``)."""
    windows = time_windows(views)
    kept = [v for v in views if in_database(v, dialect, windows)]
    run = [(v, r) for v in views
           for r in (v.rules if v in kept else marks_in_database(v, dialect, kept))]
    maintained = frozenset(r.name for _, r in run)
    notes = _notes(views, dialect, kept, maintained, functions)
    preamble = (exact_function(), checked_function(), crc_function(), repr_function()) \
        if dialect == TriggerDialect.POSTGRES else ()
    statements: list[str] = []
    if dialect == TriggerDialect.SQLITE:  # what the tables' triggers delete view rows through
        statements += [s for v in kept if deleted_by_key(v) and any(w is v for w, _ in run)
                       for s in gone_view(v)]
    checked: set[str] = set()
    for table in catalog.tables:
        rules = [(v, r) for v, r in run if r.table.lower() == table.name.lower()]
        frozen = [c for v in views for f in v.frozen if f.table.lower() == table.name.lower()
                  for c in f.columns]
        if not rules and not table.cardinalities and not frozen and not table.foreign_keys:
            continue
        checked.add(table.name)
        if dialect == TriggerDialect.POSTGRES:
            # a plain SQL write may put NULL in a column declared NOT NULL that is no key
            # (PostgreSQL's tables are made without the constraint): matched NULL-safe
            nullable = {v.name: nullable_key_columns(catalog, v.kind, v.columns, v.definition,
                                                     declared=False) for v, _ in rules}
            statements += postgres_table(table, rules, tuple(dict.fromkeys(frozen)), windows,
                                         nullable)
        else:
            statements += sqlite_table(table, rules, tuple(dict.fromkeys(frozen)), functions)
    return Triggers(preamble, tuple(statements), tuple(notes), maintained, frozenset(checked))


def _notes(views: tuple[ViewDef, ...], dialect: TriggerDialect, kept: list[ViewDef],
           maintained: frozenset[str], functions: bool) -> list[str]:
    notes: list[str] = []
    for view in views:
        marks = sorted({r.table for r in view.rules
                        if r.action == RuleAction.MARK and r.name not in maintained})
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
        elif view.exact_sums and dialect == TriggerDialect.SQLITE and not functions:
            notes.append(f"view {view.name}: SQLite has no exact arithmetic in SQL, so its "
                         f"triggers add doubles to {', '.join(c for c, _ in view.exact_sums)} "
                         "(1e17 + 1.5 - 1e17 gives 0) and leave the hidden exact columns NULL; "
                         "piql's own SQLite store keeps them exact")
    return notes
