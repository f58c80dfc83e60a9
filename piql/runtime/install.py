"""Installing a plan in a store: its tables, indexes and bookkeeping, or finding it there.

A store records the fingerprint of the plan it was deployed with. Deploying the same plan
(same tables, views, indexes, partitions) onto it reopens it as it is; another plan is
refused, as is a store holding tables piql did not create. One write transaction decides,
so processes deploying the same new store at once are serialized: one installs, the
others find its plan.
"""
from __future__ import annotations

import hashlib
import json

from piql.planner.application import Plan
from piql.planner.naming import RUNTIME_TABLES
from piql.planner.store_layout import stored_tables
from piql.planner.triggers import compile_triggers
from piql.query_block import MaintenanceMode
from piql.runtime.errors import DeploymentError
from piql.runtime.store import Store, TableShape
from piql.runtime.update_queue import queue_shapes

META = RUNTIME_TABLES[0]  # piql's metadata table, in every store
FINGERPRINT = "fingerprint"  # the metadata naming the plan a store holds
TRIGGERS = "triggers"  # the metadata naming the triggers a store runs


def shapes(plan: Plan) -> list[TableShape]:
    """Every table the plan keeps (``piql.planner.store_layout``: the base tables, then the
    views; a view without key kept under the key column ``_all``; a SUM of REAL values
    with its exact sum in a hidden TEXT column, ``ViewDef.exact_sums``)."""
    return [TableShape(t.name, t.columns, t.key, t.types, t.nullable_key)
            for t in stored_tables(plan)] + queue_shapes(plan)


def indexes(plan: Plan) -> list[tuple[str, str, tuple[str, ...]]]:
    """The secondary indexes the plan keeps: the queries', then the constraint checks'."""
    return [(i.name, i.table, i.columns) for i in plan.indexes + plan.check_indexes]


def fingerprint(plan: Plan) -> str:
    """Identifies the plan a store was deployed with."""
    described = {
        "tables": [[s.name, s.columns, s.key] + (["nullable key"] if s.nullable_key else [])
                   for s in shapes(plan)],
        "indexes": indexes(plan),
        "views": [[v.name, v.kind, v.sql] for v in plan.ordered_views],
        "partitions": plan.partitions,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


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
    """On a store whose database runs triggers (PostgreSQL), create the plan's
    (``planner.triggers``) unless the store runs these already (their fingerprint, in the
    metadata), and tell the store which rules they run."""
    dialect = getattr(store, "trigger_dialect", None)
    if dialect is None:
        return
    # asynchronous views are kept from the update queue, not by triggers
    synchronous = tuple(v for v in plan.ordered_views if v.maintenance is MaintenanceMode.SYNC)
    triggers = compile_triggers(plan.catalog, synchronous, dialect)
    statements = triggers.preamble + triggers.statements
    found = hashlib.sha256("\n".join(statements).encode()).hexdigest()
    if store.get_meta(TRIGGERS) != found:
        with store.transaction():
            if store.get_meta(TRIGGERS) != found:  # another process may have, meanwhile
                for statement in statements:
                    store.sql(statement)
                store.set_meta(TRIGGERS, found)
    store.maintained_rules = triggers.maintained


def _deployed_with(store: Store, found: str) -> bool:
    return set(RUNTIME_TABLES) <= store.table_names() and store.get_meta(FINGERPRINT) == found


def _install_or_verify(store: Store, plan: Plan, found: str) -> bool:
    tables = store.table_names()
    if META in tables:
        recorded = store.get_meta(FINGERPRINT)
        if recorded == found:
            store.create_bookkeeping()  # stores deployed before the epoch marks
            return False
        raise DeploymentError(
            f"the store {store.location} was deployed with a different plan "
            f"(recorded {recorded[:12] if recorded else 'nothing'}, this plan "
            f"{found[:12]}); deploy into a new store, or migrate its data with "
            "`load` into one deployed with this plan")
    if tables:
        raise DeploymentError(f"the store {store.location} already holds tables that "
                              "piql did not create; deploy into a new store")
    for shape in shapes(plan):
        store.create_table(shape)
    for index in plan.indexes + plan.check_indexes:
        store.create_index(index.name, index.table, index.parts, unique=index.unique)
    store.create_bookkeeping()
    store.set_meta(FINGERPRINT, found)
    return True


def uninstall(store: Store, plan: Plan) -> bool:
    """Undo :func:`install` of a new store (``piql deploy --load`` whose load was refused):
    drop the plan's tables and piql's bookkeeping, if the store still holds this plan and
    no row (another process may have started using it since). True when dropped."""
    return store.uninstall([s.name for s in shapes(plan)], (FINGERPRINT, fingerprint(plan)))
