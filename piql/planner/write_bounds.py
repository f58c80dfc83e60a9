"""What one write to a base table costs at most, and the indexes its checks read.

A write of one row (insert or delete; an update is a delete then an insert) does, in
one transaction (``runtime.writes``):

- a key check: the row's primary key is looked up (one operation);
- constraint checks, on insert: every ``CARDINALITY (c, K) PER (p)`` counts at most K
  other values of ``c`` for the row's ``p``; every UNIQUE key and every FOREIGN KEY
  (its parent row) is looked up once; on delete: every FOREIGN KEY that refers to the
  table is looked up in its child table once;
- the base write itself, and one write per secondary index of the table (the queries'
  and the constraint checks');
- every delta rule of every view the write reaches (their bounds are Phase 3's); for an
  asynchronous view (``-- maintenance: async``) one bounded enqueue of the changed row
  instead, whatever the number of such views, and its rules run when the queue is
  drained (``deferred``).

A check reads a key prefix: where the table's primary key does not lead with the
constraint's columns, piql keeps an index that does (:func:`check_indexes`), named by
``Names`` so it never takes a name the schema or a view has.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from piql.catalog import Catalog, Table
from piql.planner.key_expressions import declared_spec
from piql.planner.naming import Names
from piql.planner.physical import IndexPurpose, IndexSpec
from piql.planner.views import ViewDef, WriteEvent
from piql.query_block import MaintenanceMode


@dataclass(frozen=True)
class WriteBound:
    """The worst-case operations of one write of one ``table`` row, by part."""

    table: str
    event: WriteEvent
    key_check: int
    cardinality_checks: int
    unique_checks: int
    foreign_key_checks: int
    base_write: int
    index_upkeep: int
    rules: tuple[tuple[str, int], ...]  # (delta rule, its ops bound), in the transaction
    deferred: tuple[tuple[str, int], ...] = ()  # asynchronous views' rules, run on drain
    enqueues: int = 0  # ops of the enqueue for asynchronous views

    @property
    def ops_bound(self) -> int:
        """The operations of the writing transaction."""
        return (self.key_check + self.cardinality_checks + self.unique_checks
                + self.foreign_key_checks + self.base_write + self.index_upkeep
                + sum(bound for _, bound in self.rules) + self.enqueues)

    @property
    def sync_ops_bound(self) -> int:
        """The bound were every view maintained in the writing transaction."""
        return self.ops_bound - self.enqueues + self.drain_bound

    @property
    def drain_bound(self) -> int:
        """The operations the maintainer spends on this write's queued change."""
        return sum(bound for _, bound in self.deferred)

    def __add__(self, other: "WriteBound") -> "WriteBound":
        """Two writes of the same table one after the other (an update)."""
        return WriteBound(
            self.table, WriteEvent.UPDATE, self.key_check + other.key_check,
            self.cardinality_checks + other.cardinality_checks,
            self.unique_checks + other.unique_checks,
            self.foreign_key_checks + other.foreign_key_checks,
            self.base_write + other.base_write, self.index_upkeep + other.index_upkeep,
            self.rules + other.rules, self.deferred + other.deferred,
            self.enqueues + other.enqueues)


def check_indexes(catalog: Catalog, query_indexes: tuple[IndexSpec, ...],
                  names: Names) -> tuple[IndexSpec, ...]:
    """The indexes constraint checks need beyond the primary keys and ``query_indexes``:
    one per CARDINALITY constraint whose (PER columns, column) do not lead the primary key;
    one per FOREIGN KEY whose columns lead neither the primary key nor another index of
    the table (its children are looked up on a delete of the parent); one per UNIQUE key
    that no index leads with."""
    found = list(query_indexes)

    def leads(table: Table, columns: tuple[str, ...]) -> bool:
        return any(tuple(i.columns[:len(columns)]) == tuple(columns)
                   for i in found if i.table == table.name)

    def add(purpose: IndexPurpose, table: Table, columns: tuple[str, ...]) -> None:
        found.append(IndexSpec(table.name, columns, names.check_index(purpose, table.name, columns),
                               purpose=purpose))

    for table in catalog.tables:
        for constraint in table.cardinalities:
            columns = tuple(constraint.per) + (constraint.column,)
            if tuple(table.primary_key[:len(columns)]) != columns:
                add(IndexPurpose.CARDINALITY, table, columns)
        for fk in table.foreign_keys:
            if tuple(table.primary_key[:len(fk.columns)]) != tuple(fk.columns) and \
                    not leads(table, fk.columns):
                add(IndexPurpose.FOREIGN_KEY, table, fk.columns)
        for unique in table.unique_keys:
            if not leads(table, unique.columns):
                add(IndexPurpose.UNIQUE, table, unique.columns)
        for declared in catalog.indexes_on(table.name):
            # a unique expression index piql reads: the store keeps it, and so enforces it
            spec = declared_spec(table, declared)
            if spec is not None and spec.unique and not leads(table, spec.columns):
                found.append(replace(spec, purpose=IndexPurpose.UNIQUE))
    return tuple(found[len(query_indexes):])


def write_bounds(catalog: Catalog, views: tuple[ViewDef, ...],
                 indexes: tuple[IndexSpec, ...]) -> tuple[WriteBound, ...]:
    """The bound of an insert, a delete and an update of every table, given every view
    the plan maintains and every index the store keeps (queries' and checks')."""
    found = []
    for table in catalog.tables:
        upkeep = sum(1 for i in indexes if i.table == table.name)
        children = sum(1 for child in catalog.tables for fk in child.foreign_keys
                       if fk.ref_table.lower() == table.name.lower())
        insert = WriteBound(
            table.name, WriteEvent.INSERT, 1, sum(c.limit for c in table.cardinalities),
            len(table.unique_keys), len(table.foreign_keys), 1, upkeep,
            *_rules(views, table, WriteEvent.INSERT))
        delete = WriteBound(table.name, WriteEvent.DELETE, 1, 0, 0, children, 1, upkeep,
                            *_rules(views, table, WriteEvent.DELETE))
        found += [insert, delete, delete + insert]
    return tuple(found)


# Enqueueing a changed row: look up its key's queued entry, delete it, write the coalesced
# one (runtime.update_queue).
ENQUEUE_OPS = 3


def _rules(views: tuple[ViewDef, ...], table: Table, event: WriteEvent
           ) -> tuple[tuple[tuple[str, int], ...], tuple[tuple[str, int], ...], int]:
    """The rules a write runs in its transaction, those it defers, and its enqueue ops."""
    now: list[tuple[str, int]] = []
    later: list[tuple[str, int]] = []
    for view in views:
        for rule in view.rules:
            if rule.table.lower() == table.name.lower() and rule.event == event:
                deferred = view.maintenance is MaintenanceMode.ASYNC
                (later if deferred else now).append((rule.name, rule.ops_bound))
    return tuple(now), tuple(later), ENQUEUE_OPS if later else 0
