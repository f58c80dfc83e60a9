"""Migrating a store to a new plan: what the store holds, the steps to the new plan
(``piql.planner.plan_diff``), what they cost (read from the store), and running them in
one transaction (:func:`apply`; :func:`migrate` for a store's location).

The store's plan comes from its record (``install.recorded``); a store deployed before
piql kept the record gets it when reopened with its own plan (``piql deploy``).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from piql import sqlgen
from piql.engines import make_engine
from piql.engines.base import Engine
from piql.planner.application import Plan
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.plan_diff import PlanDiff, Step, StepKind, plan_diff
from piql.planner.plan_record import PlanRecord, RecordError, trigger_fingerprint
from piql.planner.trigger_rules import TriggerDialect
from piql.planner.triggers import compile_triggers, synchronous
from piql.planner.triggers_postgres import function_name
from piql.planner.views import ViewDef, ViewKind
from piql.query_block import MaintenanceMode
from piql.report import plan_change
from piql.runtime import install, sessions
from piql.runtime.check import recompute
from piql.runtime.engine_bridge import view_rows
from piql.runtime.errors import ConstraintError, DeploymentError, StoreBusy
from piql.runtime.partitions import partition_of
from piql.runtime.update_queue import QUEUE_TABLE
from piql.runtime.store import DEFAULT_BUSY_TIMEOUT, Store, open_store
from piql.sql_types import postgres_type

# The rows of a view to build, computed from the rows there (by an engine or the store).
Rows = Callable[[ViewDef], list[tuple]]

DIRTY = RUNTIME_TABLES[1]  # piql's table of the epochs marked for refresh
LOCK_WAIT, LOCK_ATTEMPTS = "200ms", 50  # PostgreSQL: waiting for writers in flight
MIGRATED = "_piql_migrated"  # made and dropped in a SQLite migration: the schema changes


@dataclass(frozen=True)
class Migration:
    """The steps from the plan ``store`` holds to ``plan``, and the rows of the store's
    tables and views (what the steps' costs are estimated from)."""

    plan: Plan
    recorded: PlanRecord
    diff: PlanDiff
    sizes: dict[str, int]
    dialect: str
    location: str
    in_use: str = ""  # why dropping its views would break processes serving the old plan

    def dry_run(self) -> str:
        """The steps, their SQL in the store's dialect and their costs (nothing applied)."""
        text = plan_change.render(self.diff, self.plan, self.dialect, self.sizes,
                                  self.location)
        if self.in_use:
            text += f"-- {self.in_use}: migrating needs them closed, or --force\n"
        return text


def prepare(store: Store, plan: Plan) -> Migration:
    """The migration of ``store`` to ``plan``; DeploymentError for a store that holds no
    plan of piql's, or no record of it."""
    if install.META not in store.table_names():
        raise DeploymentError(f"the store {store.location} holds no plan of piql's: "
                              "deploy into it instead")
    try:
        before = install.recorded(store)
    except RecordError as err:
        raise DeploymentError(f"the store {store.location}: {err}") from None
    if before is None:
        raise DeploymentError(
            f"the store {store.location} was deployed before piql kept the record of its "
            "plan: reopen it once with the schema and queries it was deployed with "
            "(`piql deploy`), which records them, then migrate")
    diff = plan_diff(before, install.record(store, plan))
    users = sessions.serving(store, store.get_meta(install.FINGERPRINT) or "")
    warning = in_use(diff, users) if users and (
        diff.dropped_views or diff.remaintained_views) else ""
    return Migration(plan, before, diff, table_sizes(store, before), store.dialect,
                     store.location, warning)


def table_sizes(store: Store, record: PlanRecord) -> dict[str, int]:
    """Rows of every table and view the recorded plan keeps."""
    present = store.table_names()
    names = [t.name for t in record.tables] + [v.name for v in record.views]
    return {name: store.sql(f"SELECT COUNT(*) FROM {sqlgen.identifier(name, store.dialect)}")[0][0]
            for name in names if name in present}


def migrate(location: str, plan: Plan, *, dry_run: bool = False, force: bool = False,
            engine: str = "duckdb", spark_master: str | None = None,
            busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
            spark_conf: dict[str, str] | None = None) -> Migration:
    """Migrate the store at ``location`` to ``plan`` (unless ``dry_run``): new views are
    built from the rows there by ``engine`` ("duckdb", "spark" with ``spark_master`` and
    ``spark_conf``, or "store": the store's own SQL), as bulk loads build them; ``force``
    as in :func:`apply`. The migration
    returned says what was (or would be) done."""
    store = open_store(location, busy_timeout)
    started: list[Engine] = []

    def rows(view: ViewDef) -> list[tuple]:
        if engine == "store" or view.exact_sums:  # exact sums: the store sums exactly
            return recompute(store, view, partition_of)
        if not started:
            started.append(make_engine(engine, spark_master=spark_master, spark_conf=spark_conf))
        return view_rows(started[0], store, view, partition_of)

    try:
        migration = prepare(store, plan)
        if not dry_run:
            apply(store, migration, rows, force=force)
        return migration
    finally:
        for running in started:
            running.close()
        store.close()


def apply(store: Store, migration: Migration, rows: Rows | None = None,
          force: bool = False) -> tuple[Step, ...]:
    """Run the migration's steps on ``store`` in one transaction, with the record and the
    fingerprint of the new plan: all or nothing (a refused step leaves the store on its
    plan). A second run finds nothing to do. New views get ``rows`` (default: computed by
    the store). On PostgreSQL the triggers are replaced in the same transaction (DDL is
    transactional there as in SQLite). A migration with an unsupported step is refused,
    naming it; so is one that leaves a query the store answers within a bound without
    one, unless ``force``."""
    diff = migration.diff
    if diff.unsupported:
        raise DeploymentError("cannot migrate " + store.location + ": " + "; ".join(
            s.reason for s in diff.unsupported) + "; deploy into a new store and load it")
    if diff.unbounded and not force:
        raise DeploymentError(
            f"migrating {store.location} would leave {', '.join(diff.unbounded)} without a "
            "bound (bounded under the store's plan); fix the schema or queries, or force it")
    if diff.empty:
        return ()
    plan = migration.plan
    shapes = {s.name: s for s in install.shapes(plan)}
    computed = rows or (lambda view: recompute(store, view, partition_of))
    for table in plan.catalog.tables:  # what builds read (with the columns added)
        store.register(shapes[table.name])
    for attempt in range(1, LOCK_ATTEMPTS + 1):
        try:
            with store.transaction(tables_first=_writes_stopped(store, migration.recorded),
                                   wait=LOCK_WAIT):
                _in_use(store, diff, force)
                _change_schema(store)
                _queue(store, diff, shapes)
                for step in diff.steps:
                    _apply(store, step, plan, shapes, computed)
                store.set_meta(install.FINGERPRINT, install.fingerprint(plan))
                store.set_meta(install.PLAN, install.record(store, plan).to_json())
            return diff.steps
        except StoreBusy:
            if store.dialect != "postgres" or attempt == LOCK_ATTEMPTS:
                raise
            time.sleep(0.05 * attempt)  # writers in flight commit meanwhile
    return diff.steps


def _writes_stopped(store: Store, recorded: PlanRecord) -> tuple[str, ...]:
    """On PostgreSQL, the base tables whose writes stop for the migration (reads go on),
    locked before piql's write lock: an insert sent alone (and a plain SQL writer) holds its
    table while its trigger waits for the write lock, so the migration waits at most
    ``LOCK_WAIT`` for the tables and then starts again (StoreBusy) rather than deadlocking.
    Once it holds them, no trigger of the old plan runs until it commits; then the new
    plan's."""
    if store.dialect != "postgres":
        return ()
    return tuple(t.name for t in recorded.tables)


def _apply(store: Store, step: Step, plan: Plan, shapes: dict, rows: Rows) -> None:
    if step.kind == StepKind.ADD_TABLE:
        store.create_table(shapes[step.name])
    elif step.kind == StepKind.ADD_COLUMN and step.column is not None:
        _add_column(store, step)
    elif step.kind == StepKind.SET_DEFAULT:
        for statement in plan_change.set_default_sql(step, store.dialect):
            if not statement.startswith("--"):
                store.sql(statement)
    elif step.kind == StepKind.VALIDATE_CONSTRAINT:
        _validate(store, step)
    elif step.kind in (StepKind.DROP_INDEX, StepKind.DROP_VIEW, StepKind.RENAME_VIEW):
        for statement in plan_change.step_sql(step, plan, store.dialect):
            if not statement.startswith("--"):
                store.sql(statement)
        _epochs(store, step)
        if step.renamed_from is not None:
            store.shapes.pop(step.renamed_from, None)
            if step.name in shapes:  # not a name it is parked under (views swapping names)
                store.register(shapes[step.name])
    elif step.kind == StepKind.CREATE_INDEX:
        spec = next(i for i in plan.indexes + plan.check_indexes if i.name == step.name)
        store.create_index(spec.name, spec.table, spec.parts, unique=spec.unique)
    elif step.kind == StepKind.BUILD_VIEW:
        _build(store, step, plan, shapes, rows)
    elif step.kind == StepKind.REPLACE_TRIGGERS:
        _replace_triggers(store, plan)


def _in_use(store: Store, diff: PlanDiff, force: bool) -> None:
    """Refuse (unless ``force``) to drop or rename a view, or change how one is maintained,
    while another process still serves the store's plan (``runtime.sessions``): its queries
    would find no table, its writes would maintain the view the old way. The
    registrations of processes gone are removed."""
    users = sessions.serving(store, store.get_meta(install.FINGERPRINT) or "", prune=True)
    if (diff.dropped_views or diff.remaintained_views) and users and not force:
        raise DeploymentError(f"cannot migrate {store.location}: " + in_use(diff, users)
                              + "; close them (`Deployment.close()`), or force the migration "
                              "(`--force`, `force=True`)")


def _change_schema(store: Store) -> None:
    """On SQLite, change the schema whatever the steps (a table made and dropped): the
    deployments of the old plan notice it on their next write, which they then refuse
    (``sessions.same_plan``)."""
    if store.dialect == "sqlite":
        store.sql(f"CREATE TABLE {MIGRATED} (x)")
        store.sql(f"DROP TABLE {MIGRATED}")


def in_use(diff: PlanDiff, users: list[sessions.Session]) -> str:
    """Why dropping the diff's views would break the processes ``users``."""
    many = len(users) > 1
    changes = ([f"drop {', '.join(diff.dropped_views)}"] if diff.dropped_views else []) + (
        [f"change how {', '.join(diff.remaintained_views)} is maintained"]
        if diff.remaintained_views else [])
    return (f"it would {' and '.join(changes)}, which {len(users)} "
            f"process{'es' if many else ''} serving its plan still use{'' if many else 's'} "
            f"({'; '.join(u.describe() for u in users[:5])})")


def _queue(store: Store, diff: PlanDiff, shapes: dict) -> None:
    """The update queue the new plan's asynchronous views are kept from: created if need
    be, and empty when a view starts or stops being kept from it (its changes would be
    applied to a view already holding them, or never to one no longer reading it)."""
    switched = [s.name for s in diff.steps if s.view is not None and (
        s.kind == StepKind.CHANGE_MAINTENANCE or
        (s.kind == StepKind.BUILD_VIEW and s.view.maintenance == str(MaintenanceMode.ASYNC)))]
    present = store.table_names()
    if QUEUE_TABLE in shapes and QUEUE_TABLE not in present:
        store.create_table(shapes[QUEUE_TABLE])
    elif switched and QUEUE_TABLE in present:
        (pending,), = store.sql(f"SELECT COUNT(*) FROM {sqlgen.identifier(QUEUE_TABLE, store.dialect)}")
        if pending:
            raise DeploymentError(
                f"cannot migrate {store.location}: the update queue holds {pending} changes "
                f"and {', '.join(switched)} would start or stop being kept from it; drain "
                "them with the store's plan first (`db.drain()`), then migrate")


def _add_column(store: Store, step: Step) -> None:
    """The column, with its constant DEFAULT (which the rows there get), if any."""
    assert step.column is not None and step.table is not None
    table, (column, declared) = step.name, step.column
    default = step.table.default(column)
    if store.dialect == "sqlite":  # typed as the SQLite store types columns
        store.add_column(table, column, declared, default)  # type: ignore[attr-defined]
        return
    q = lambda name: sqlgen.identifier(name, store.dialect)  # noqa: E731
    store.sql(f"ALTER TABLE {q(table)} ADD COLUMN {q(column)} {postgres_type(declared)}"
              + sqlgen.default_clause(default, store.dialect))


def _epochs(store: Store, step: Step) -> None:
    """The epochs marked for refresh of a dropped view go with it; a renamed one's follow."""
    table = sqlgen.identifier(DIRTY, store.dialect)
    old = _placeholder(store, "old")
    if step.kind == StepKind.DROP_VIEW:
        store.sql(f"DELETE FROM {table} WHERE view = {old}", {"old": step.name})
    elif step.kind == StepKind.RENAME_VIEW:
        store.sql(f"UPDATE {table} SET view = {_placeholder(store, 'new')} WHERE view = {old}",
                  {"old": step.renamed_from, "new": step.name})


def _placeholder(store: Store, name: str) -> str:
    return f":{name}" if store.dialect == "sqlite" else f"%({name})s"


def _replace_triggers(store: Store, plan: Plan) -> None:
    """Drop the triggers of every base table and create the new plan's (a table may have
    none now), recording their fingerprint as ``install`` does."""
    triggers = compile_triggers(plan.catalog, synchronous(plan.ordered_views), TriggerDialect.POSTGRES)
    q = lambda name: sqlgen.identifier(name, store.dialect)  # noqa: E731
    statements = triggers.preamble + triggers.statements
    for table in plan.catalog.tables:  # a table whose views are gone keeps no trigger
        if not any(s.startswith(f"CREATE TRIGGER {q(function_name(table.name))} ")
                   for s in statements):
            store.sql(f"DROP TRIGGER IF EXISTS {q(function_name(table.name))} ON {q(table.name)}")
    for statement in statements:
        # a trigger replaced in place (its function replaced, the trigger made again with
        # CREATE OR REPLACE): unlike DROP TRIGGER, no lock that stops reads of its table
        if statement.startswith("DROP TRIGGER IF EXISTS"):
            continue
        store.sql(statement.replace("CREATE TRIGGER ", "CREATE OR REPLACE TRIGGER ", 1)
                  if statement.startswith("CREATE TRIGGER ") else statement)
    store.set_meta(install.TRIGGERS, trigger_fingerprint(plan))


def _validate(store: Store, step: Step) -> None:
    """Refuse the migration if the rows there break the constraint, naming the keys."""
    found = store.sql(plan_change.validation_sql(step, store.dialect))
    if found and step.constraint is not None:
        keys = ", ".join("(" + ", ".join(f"{p}={v!r}" for p, v in zip(step.constraint.per, row))
                         + f": {row[-1]} values)" for row in found[:5])
        more = f" and {len(found) - 5} more" if len(found) > 5 else ""
        raise ConstraintError(f"cannot add {step.constraint.describe()}: the rows there "
                              f"break it at {keys}{more}; nothing was migrated")


def _build(store: Store, step: Step, plan: Plan, shapes: dict, rows: Rows) -> None:
    """Create the view's table and fill it from the rows there (a periodic view is filled
    by its next refresh)."""
    view = next(v for v in plan.ordered_views if v.name == step.name)
    store.create_table(shapes[view.name])
    if view.kind == ViewKind.PERIODIC:
        return
    store.insert_rows(view.name, shapes[view.name].columns, rows(view))
