"""The record of a plan a store keeps: what the plan installed, as canonical JSON.

A store used to keep only the fingerprint of its plan, which says *whether* a new plan
differs but not *how*. The record says what the plan installed (base tables with their
columns, types and keys; secondary indexes; the tables keeping views with their definition
SQL, key and columns; CARDINALITY constraints; the queries' levels; on PostgreSQL the
fingerprint of the triggers), so that a later plan can be compared with it (``piql.planner.plan_diff``)
without the schema and queries the store was deployed with.

The record is versioned (:data:`RECORD_VERSION`): a reader refuses a record of a version
it does not know rather than misreading it. Its JSON is canonical (sorted keys, no
whitespace), so the same plan always gives the same text.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from piql.planner.application import Plan
from piql.planner.levels import Level
from piql.planner.store_layout import KeyStorage, column_defaults, stored_tables
from piql.planner.trigger_rules import TriggerDialect
from piql.planner.fingerprint import triggers_fingerprint
from piql.planner.triggers import compile_triggers, synchronous
from piql.query_block import MaintenanceMode

RECORD_VERSION = 1


class RecordError(ValueError):
    """A stored record piql cannot read (another version, or damaged)."""


@dataclass(frozen=True)
class TableRecord:
    """A base table: its columns with their declared types, in order, its primary key, its
    NOT NULL columns, its TEMPORAL columns and its columns' constant DEFAULTs (column,
    value)."""

    name: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    not_null: tuple[str, ...] = ()
    temporal: tuple[str, ...] = ()
    defaults: tuple[tuple[str, Any], ...] = ()

    def column(self, name: str) -> tuple[str, str] | None:
        return next((c for c in self.columns if c[0].lower() == name.lower()), None)

    def default(self, name: str) -> Any:
        """The column's constant DEFAULT (None: none)."""
        return next((v for c, v in self.defaults if c.lower() == name.lower()), None)


@dataclass(frozen=True)
class IndexRecord:
    """A secondary index: its name, table, key parts (an expression's text), uniqueness
    and why the plan keeps it (``IndexPurpose``)."""

    name: str
    table: str
    columns: tuple[str, ...]
    unique: bool
    purpose: str

    @property
    def shape(self) -> tuple[str, tuple[str, ...], bool]:
        """What makes two indexes the same whatever their names."""
        return (self.table.lower(), tuple(c.lower() for c in self.columns), self.unique)


@dataclass(frozen=True)
class ViewRecord:
    """The table keeping a view: its kind (``ViewKind``), definition SQL, stored columns
    with their types, stored key, whether the key may hold NULL, the base tables its
    definition reads, the queries it serves and how writes maintain it (``MaintenanceMode``:
    in their transaction, or later from the update queue) and how SQLite keeps it
    (``KeyStorage``: a covering key index is another table than a narrow one)."""

    name: str
    kind: str
    sql: str
    columns: tuple[tuple[str, str], ...]
    key: tuple[str, ...]
    nullable_key: bool
    reads: tuple[str, ...]
    queries: tuple[str, ...]
    maintenance: str = str(MaintenanceMode.SYNC)
    storage: str = KeyStorage.CLUSTERED.value

    @property
    def definition(self) -> tuple:
        """What makes two views the same table whatever their names: a view with the same
        definition keeps the same rows, so a new plan can keep it (renamed if need be).
        The SQL is ``CREATE VIEW name ... AS SELECT ...``: its own name is left out, and so
        is its maintenance mode (a change of mode keeps the rows)."""
        sql = re.sub(r"^CREATE VIEW \S+", "CREATE VIEW", self.sql)
        return (self.kind, sql, self.columns, self.key, self.nullable_key, self.storage)


@dataclass(frozen=True)
class ConstraintRecord:
    """A CARDINALITY constraint: at most ``limit`` values of ``column`` per ``per``."""

    table: str
    column: str
    per: tuple[str, ...]
    limit: int

    @property
    def subject(self) -> tuple[str, str, tuple[str, ...]]:
        """What the constraint bounds (its limit aside)."""
        return (self.table.lower(), self.column.lower(), tuple(p.lower() for p in self.per))

    def describe(self) -> str:
        return f"CARDINALITY ({self.column}, {self.limit}) PER ({', '.join(self.per)}) on {self.table}"


@dataclass(frozen=True)
class PlanRecord:
    """What a plan installed in a store (see the module docstring)."""

    tables: tuple[TableRecord, ...]
    indexes: tuple[IndexRecord, ...]
    views: tuple[ViewRecord, ...]  # in the order they are maintained and created
    constraints: tuple[ConstraintRecord, ...]
    partitions: int
    triggers: str | None = None  # fingerprint of the triggers (PostgreSQL), None elsewhere
    queries: tuple[tuple[str, str], ...] = ()  # (name, level) of every query
    version: int = RECORD_VERSION

    @property
    def bounded(self) -> tuple[str, ...]:
        """The queries the plan answers within a bound."""
        return tuple(name for name, level in self.queries if level != str(Level.UNBOUNDED))

    def table(self, name: str) -> TableRecord | None:
        return next((t for t in self.tables if t.name.lower() == name.lower()), None)

    def view(self, name: str) -> ViewRecord | None:
        return next((v for v in self.views if v.name.lower() == name.lower()), None)

    def to_json(self) -> str:
        """The canonical JSON text of the record."""
        return json.dumps(_plain(self), sort_keys=True, separators=(",", ":"))

    @staticmethod
    def from_json(text: str) -> PlanRecord:
        """The record stored as ``text``; :class:`RecordError` when unreadable."""
        try:
            data = json.loads(text)
            version = data["version"]
        except (ValueError, TypeError, KeyError) as err:
            raise RecordError(f"the plan record is damaged ({err})") from None
        if version != RECORD_VERSION:
            raise RecordError(f"the plan record has version {version}; this piql reads "
                              f"version {RECORD_VERSION}")
        try:
            return PlanRecord(
                # ``temporal``, ``maintenance`` and ``defaults`` came later within version
                # 1: a record without them is of a plan without TEMPORAL columns, async
                # views or DEFAULTs
                tables=tuple(TableRecord(t["name"], _pairs(t["columns"]), tuple(t["key"]),
                                         tuple(t["not_null"]), tuple(t.get("temporal", ())),
                                         _pairs(t.get("defaults", ())))
                             for t in data["tables"]),
                indexes=tuple(IndexRecord(i["name"], i["table"], tuple(i["columns"]),
                                          i["unique"], i["purpose"]) for i in data["indexes"]),
                views=tuple(ViewRecord(v["name"], v["kind"], v["sql"], _pairs(v["columns"]),
                                       tuple(v["key"]), v["nullable_key"], tuple(v["reads"]),
                                       tuple(v["queries"]),
                                       v.get("maintenance", str(MaintenanceMode.SYNC)),
                                       v.get("storage", _recorded_storage(v["nullable_key"])))
                      for v in data["views"]),
                constraints=tuple(ConstraintRecord(c["table"], c["column"], tuple(c["per"]),
                                                   c["limit"]) for c in data["constraints"]),
                partitions=data["partitions"], triggers=data["triggers"],
                queries=_pairs(data["queries"]), version=version)
        except (KeyError, TypeError, ValueError) as err:
            raise RecordError(f"the plan record is damaged ({err!r})") from None


def _recorded_storage(nullable_key: bool) -> str:
    """The storage of a view recorded before records named it (``storage`` came later
    within version 1): its key index was narrow."""
    return (KeyStorage.KEY_INDEX if nullable_key else KeyStorage.CLUSTERED).value


def plan_record(plan: Plan, dialect: str | None = None) -> PlanRecord:
    """The record of what ``plan`` installs in a store of ``dialect`` ("postgres" adds the
    fingerprint of the triggers PostgreSQL runs; None or "sqlite": no triggers)."""
    stored = {t.name: t for t in stored_tables(plan)}
    tables = tuple(TableRecord(t.name, tuple(zip(t.column_names, (c.type for c in t.columns))),
                               t.primary_key, tuple(c.name for c in t.columns if not c.nullable),
                               t.temporal_columns, column_defaults(t.columns))
                   for t in plan.catalog.tables)
    indexes = tuple(IndexRecord(i.name, i.table, i.columns, i.unique, str(i.purpose))
                    for i in plan.indexes + plan.check_indexes)
    views = []
    for view in plan.ordered_views:
        kept = stored[view.name]
        reads = tuple(dict.fromkeys(r.table for r in view.definition.relations if r.table))
        views.append(ViewRecord(view.name, str(view.kind), view.sql,
                                tuple(zip(kept.columns, kept.types)), kept.key,
                                kept.nullable_key, reads, view.for_queries,
                                str(view.maintenance), kept.storage.value))
    constraints = tuple(ConstraintRecord(t.name, c.column, c.per, c.limit)
                        for t in plan.catalog.tables for c in t.cardinalities)
    triggers = trigger_fingerprint(plan) if dialect == TriggerDialect.POSTGRES else None
    queries = tuple((q.name, str(q.level)) for q in plan.queries)
    return PlanRecord(tables, indexes, tuple(views), constraints, plan.partitions, triggers,
                      queries)


def trigger_fingerprint(plan: Plan) -> str:
    """The fingerprint of the triggers PostgreSQL runs for ``plan`` (as ``install`` records
    them: the hash of their statements)."""
    return triggers_fingerprint(
        compile_triggers(plan.catalog, synchronous(plan.ordered_views), TriggerDialect.POSTGRES))


def _pairs(items: list | tuple) -> tuple[tuple[str, Any], ...]:
    return tuple((name, kind) for name, kind in items)


# Fields written only when not empty: the record of a plan without them stays as it was
_WHEN_GIVEN = frozenset({"defaults"})


def _plain(value: Any) -> Any:
    """``value`` as JSON-able lists and dicts (dataclasses by field name)."""
    if hasattr(value, "__dataclass_fields__"):
        return {name: _plain(getattr(value, name)) for name in value.__dataclass_fields__
                if name not in _WHEN_GIVEN or getattr(value, name)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value
