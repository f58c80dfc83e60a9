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
from piql.runtime.errors import DeploymentError
from piql.runtime.store import Store, TableShape

META = RUNTIME_TABLES[0]  # piql's metadata table, in every store
FINGERPRINT = "fingerprint"  # the metadata naming the plan a store holds


def shapes(plan: Plan) -> list[TableShape]:
    """Every table the plan keeps: the base tables, then the views (a view without key is
    one aggregate row, kept under the key column ``_all``; a SUM of REAL values also keeps
    its exact sum in a hidden TEXT column, ``ViewDef.exact_sums``)."""
    found = [TableShape(t.name, t.column_names, t.primary_key, tuple(c.type for c in t.columns))
             for t in plan.catalog.tables]
    for view in plan.ordered_views:
        columns = [c.name for c in view.columns]
        types = [c.type for c in view.columns]
        key = [c.name for c in view.key]
        if not key:
            columns, types, key = ["_all"] + columns, ["INTEGER"] + types, ["_all"]
        for _, hidden in view.exact_sums:
            columns.append(hidden)
            types.append("TEXT")
        found.append(TableShape(view.name, tuple(columns), tuple(key), tuple(types),
                                view.nullable_key))
    return found


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
        return False
    with store.transaction():
        return _install_or_verify(store, plan, found)


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
