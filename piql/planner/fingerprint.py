"""What a store records about the plan it holds: the plan's fingerprint and its triggers',
in piql's metadata table, and the bookkeeping PostgreSQL keeps beside them.

Both ``runtime.install`` (deploying into a store) and ``report.migration`` (``piql plan
--dialect postgres``) write them, so a database built from the migration is adopted by
``piql deploy`` of the same plan as if piql had deployed it (pure: no database here).
"""
from __future__ import annotations

import hashlib
import json

from piql.planner.application import Plan
from piql.planner.naming import RUNTIME_TABLES, VERSION_SEQUENCE
from piql.query_block import MaintenanceMode
from piql.planner.store_layout import KeyStorage, stored_tables
from piql.planner.triggers import Triggers
from piql.sqlgen import identifier

META, DIRTY = RUNTIME_TABLES  # piql's metadata, and the epochs marked for refresh
FINGERPRINT = "fingerprint"  # the metadata naming the plan a store holds
TRIGGERS = "triggers"  # the metadata naming the triggers a store runs


def plan_fingerprint(plan: Plan) -> str:
    """Identifies the plan a store was deployed with: its tables (a view without key kept
    under ``_all``), indexes, views and partitions."""
    described = {
        # DEFAULTs are named only when there are some: a plan without keeps its fingerprint
        # a covering key index is named only then (``KeyStorage``): other plans keep theirs
        "tables": [[t.name, t.columns, t.key] + (["nullable key"] if t.nullable_key else [])
                   + (["covering key index"] if t.storage is KeyStorage.COVERING_KEY_INDEX
                      else [])
                   + ([["defaults", [list(d) for d in t.defaults]]] if t.defaults else [])
                   for t in stored_tables(plan)],
        "indexes": [(i.name, i.table, i.columns) for i in plan.indexes + plan.check_indexes],
        # an asynchronous view's store also keeps the update queue (``runtime.update_queue``);
        # named only then, so that the fingerprints of stores without one stay as they were
        "views": [[v.name, v.kind, v.sql] + (["async"] if v.maintenance is MaintenanceMode.ASYNC
                                              else []) for v in plan.ordered_views],
        "partitions": plan.partitions,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()


def triggers_fingerprint(triggers: Triggers) -> str:
    """Identifies the triggers (and their functions) a store runs."""
    return hashlib.sha256("\n".join(triggers.preamble + triggers.statements).encode()).hexdigest()


def postgres_bookkeeping() -> tuple[str, ...]:
    """piql's own tables and sequence on PostgreSQL: the metadata, the epochs marked for
    refresh, and the sequence each write transaction bumps (``runtime.postgres_store``)."""
    q = lambda name: identifier(name, "postgres")  # noqa: E731
    return (f'CREATE TABLE IF NOT EXISTS {q(META)} (key TEXT COLLATE "C" PRIMARY KEY, value TEXT)',
            f'CREATE TABLE IF NOT EXISTS {q(DIRTY)} (view TEXT COLLATE "C", epoch BIGINT, '
            'PRIMARY KEY (view, epoch))',
            f"CREATE SEQUENCE IF NOT EXISTS {q(VERSION_SEQUENCE)}")
