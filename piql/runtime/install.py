"""Installing a plan in a store: its tables, indexes and bookkeeping, or finding it there.

A store records the fingerprint of the plan it was deployed with. Deploying the same plan
(same tables, views, indexes, partitions) onto it reopens it as it is; another plan is
refused, as is a store holding tables piql did not create. One write transaction decides,
so processes deploying the same new store at once are serialized: one installs, the
others find its plan.
"""
from __future__ import annotations

import hashlib

from piql.planner.application import Plan
from piql.planner.fingerprint import (
    FINGERPRINT, META, TRIGGERS, plan_fingerprint, triggers_fingerprint,
)
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.plan_diff import plan_diff
from piql.planner.plan_record import PlanRecord, RecordError, plan_record
from piql.planner.store_layout import stored_tables
from piql.planner.trigger_rules import TriggerDialect
from piql.planner.triggers import compile_triggers, synchronous
from piql.planner.triggers_sqlite import plan_guard
from piql.planner import truncate_guard
from piql.report.plan_change import summary
from piql.runtime.errors import DeploymentError
from piql.runtime.store import Store, TableShape
from piql.runtime.update_queue import queue_shapes

PLAN = "plan"  # the metadata describing what the plan installed (``planner.plan_record``)


def shapes(plan: Plan) -> list[TableShape]:
    """Every table the plan keeps (``piql.planner.store_layout``: the base tables, then the
    views; a view without key kept under the key column ``_all``; a SUM of REAL values
    with its exact sum in a hidden TEXT column, ``ViewDef.exact_sums``)."""
    return [TableShape(t.name, t.columns, t.key, t.types, t.nullable_key, t.defaults, t.storage)
            for t in stored_tables(plan)] + queue_shapes(plan)


def fingerprint(plan: Plan) -> str:
    """Identifies the plan a store was deployed with (``planner.fingerprint``)."""
    return plan_fingerprint(plan)


def install(store: Store, plan: Plan) -> bool:
    """Create the plan's tables in a new store (True), or find them in a store deployed
    with this plan (False); refuse any other store."""
    for shape in shapes(plan):
        store.register(shape)
    found = fingerprint(plan)
    if _deployed_with(store, found):  # reopening needs no write lock
        installed = False
    else:
        with store.transaction():
            installed = _install_or_verify(store, plan, found)
    install_triggers(store, plan)
    return installed


def install_triggers(store: Store, plan: Plan) -> None:
    """On a store whose database runs triggers, create the plan's (``planner.triggers``)
    and tell the store which rules they run and which tables' inserts they check. On
    PostgreSQL they are part of the database, created unless it runs these already (their
    fingerprint, in the metadata); on SQLite they are the connection's own (``TEMP``),
    made on every open, adding SUMs with the functions piql's connections register
    (``runtime.sqlite_functions``), so that they keep every view as piql would."""
    dialect = getattr(store, "trigger_dialect", None)
    if dialect is None:
        return
    views = synchronous(plan.ordered_views)
    if dialect == TriggerDialect.SQLITE:
        triggers = compile_triggers(plan.catalog, views, dialect, functions=True)
        found = fingerprint(plan)
        guards = tuple(guard for t in plan.catalog.tables
                       for guard in plan_guard(t.name, META, FINGERPRINT, found))
        store.connection_triggers(guards + triggers.statements)
        store.maintained_rules, store.checked_tables = triggers.maintained, triggers.checked
        return
    triggers = compile_triggers(plan.catalog, views, dialect)
    statements = triggers.preamble + triggers.statements
    found = triggers_fingerprint(triggers)
    if store.get_meta(TRIGGERS) != found:
        with store.transaction():
            if store.get_meta(TRIGGERS) != found:  # another process may have, meanwhile
                for statement in statements:
                    store.sql(statement)
                store.set_meta(TRIGGERS, found)
    store.maintained_rules = triggers.maintained
    store.checked_tables = triggers.checked
    install_truncate_guards(store, plan)


TRUNCATE_GUARDS = "truncate_guards"  # the metadata: the hash of the TRUNCATE guards made


def install_truncate_guards(store: Store, plan: Plan) -> None:
    """On PostgreSQL, refuse a TRUNCATE of a table views read or FOREIGN KEYs refer to
    (``planner.truncate_guard``: it fires no row trigger, so they would miss it), for
    synchronous and asynchronous views alike; made unless the database has these (their
    hash, in the metadata)."""
    statements = truncate_guard.postgres_statements(plan.catalog, plan.ordered_views)
    found = hashlib.sha256("\n".join(statements).encode()).hexdigest()
    if store.get_meta(TRUNCATE_GUARDS) != found:
        with store.transaction():
            if store.get_meta(TRUNCATE_GUARDS) != found:  # another process may have
                for statement in statements:
                    store.sql(statement)
                store.set_meta(TRUNCATE_GUARDS, found)


def record(store: Store, plan: Plan) -> PlanRecord:
    """The record of what ``plan`` installs in ``store`` (its triggers on PostgreSQL)."""
    return plan_record(plan, getattr(store, "trigger_dialect", None))


def recorded(store: Store) -> PlanRecord | None:
    """The record of the plan ``store`` holds (None: a store deployed before piql kept
    one, or no plan). Raises ``planner.plan_record.RecordError`` for an unreadable one."""
    text = store.get_meta(PLAN)
    return None if text is None else PlanRecord.from_json(text)


def _deployed_with(store: Store, found: str) -> bool:
    # a store without the record of its plan takes the write path once, to keep it
    return set(RUNTIME_TABLES) <= store.table_names() and \
        store.get_meta(FINGERPRINT) == found and store.get_meta(PLAN) is not None


def _install_or_verify(store: Store, plan: Plan, found: str) -> bool:
    tables = store.table_names()
    if META in tables:
        recorded = store.get_meta(FINGERPRINT)
        if recorded == found:
            store.create_bookkeeping()  # stores deployed before the epoch marks
            if store.get_meta(PLAN) is None:  # stores deployed before the plan record
                store.set_meta(PLAN, record(store, plan).to_json())
            return False
        raise DeploymentError(
            f"the store {store.location} was deployed with a different plan "
            f"(recorded {recorded[:12] if recorded else 'nothing'}, this plan "
            f"{found[:12]}); " + _way_out(store, plan))
    if tables:
        raise DeploymentError(f"the store {store.location} already holds tables that "
                              "piql did not create; deploy into a new store")
    for shape in shapes(plan):
        store.create_table(shape)
    for index in plan.indexes + plan.check_indexes:
        store.create_index(index.name, index.table, index.parts, unique=index.unique)
    store.create_bookkeeping()
    store.set_meta(FINGERPRINT, found)
    store.set_meta(PLAN, record(store, plan).to_json())
    return True


def _way_out(store: Store, plan: Plan) -> str:
    """What to do with a store holding another plan: migrate it, showing the steps
    (``piql migrate --dry-run`` shows their SQL), or, for a store without the record of
    its plan, deploy into a new store and load it."""
    try:
        before = recorded(store)
    except RecordError:
        before = None
    if before is None:
        return ("deploy into a new store, or migrate its data with `load` into one "
                "deployed with this plan")
    diff = plan_diff(before, record(store, plan))
    if diff.unsupported:
        return ("`piql migrate` cannot move it to this plan: "
                + "; ".join(s.reason for s in diff.unsupported)
                + "; deploy into a new store and load it")
    return ("move it to this plan without reloading with `piql migrate SCHEMA QUERIES "
            "--db STORE` (`--dry-run` shows the SQL and costs), in these steps:\n"
            + summary(diff) + "\nor deploy into a new store and load it")


def uninstall(store: Store, plan: Plan) -> bool:
    """Undo :func:`install` of a new store (``piql deploy --load`` whose load was refused):
    drop the plan's tables and piql's bookkeeping, if the store still holds this plan and
    no row (another process may have started using it since). True when dropped."""
    return store.uninstall([s.name for s in shapes(plan)], (FINGERPRINT, fingerprint(plan)))
