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
  drained (``deferred``). Where those rules join (``planner.async_views``): a delete of
  a row the views have seen runs the async views' delete rules in the transaction
  (``settled``), after one lookup of the queue; and a rule run as of the queue also looks
  up the queue once per row it reads (``as_of_bound``).

A check reads a key prefix: where the table's primary key does not lead with the
constraint's columns, piql keeps an index that does (:func:`check_indexes`), named by
``Names`` so it never takes a name the schema or a view has.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from piql.catalog import Catalog, Table
from piql.planner.async_views import as_of_bound, as_of_tables
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
    # asynchronous views' rules the write runs itself, as of the queue (a delete of a row
    # their joins have seen), with their bounds as of the queue
    settled: tuple[tuple[str, int], ...] = ()
    as_of_reads: int = 0  # the queue lookups of the deferred and settled rules' reads

    @property
    def asynchronous(self) -> bool:
        """Does the write leave rules of asynchronous views to the queue?"""
        return bool(self.deferred or self.settled)

    @property
    def ops_bound(self) -> int:
        """The operations of the writing transaction."""
        return (self.key_check + self.cardinality_checks + self.unique_checks
                + self.foreign_key_checks + self.base_write + self.index_upkeep
                + sum(bound for _, bound in self.rules + self.settled) + self.enqueues)

    @property
    def sync_ops_bound(self) -> int:
        """The bound were every view maintained in the writing transaction."""
        return self.ops_bound - self.enqueues + self.drain_bound - self.as_of_reads

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
            self.enqueues + other.enqueues, self.settled + other.settled,
            self.as_of_reads + other.as_of_reads)


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
    as_of = {t.lower() for t in as_of_tables(views)}
    for table in catalog.tables:
        upkeep = sum(1 for i in indexes if i.table == table.name)
        children = sum(1 for child in catalog.tables for fk in child.foreign_keys
                       if fk.ref_table.lower() == table.name.lower())
        insert = WriteBound(
            table.name, WriteEvent.INSERT, 1, sum(c.limit for c in table.cardinalities),
            len(table.unique_keys), len(table.foreign_keys), 1, upkeep,
            *_rules(views, table, WriteEvent.INSERT, as_of))
        delete = WriteBound(table.name, WriteEvent.DELETE, 1, 0, 0, children, 1, upkeep,
                            *_rules(views, table, WriteEvent.DELETE, as_of))
        found += [insert, delete, delete + insert]
    return tuple(found)


# Enqueueing a changed row: look up its key's queued entry, delete it, write the coalesced
# one (runtime.update_queue).
ENQUEUE_OPS = 3
# A delete of a row of a table read as of the queue first looks up whether it is queued.
PENDING_CHECK_OPS = 1

Bounds = tuple[tuple[str, int], ...]


def _rules(views: tuple[ViewDef, ...], table: Table, event: WriteEvent, as_of: set[str]
           ) -> tuple[Bounds, Bounds, int, Bounds, int]:
    """The rules a write runs in its transaction, those it defers, its enqueue ops, the
    asynchronous rules it runs itself (a delete of a table read as of the queue) and the
    queue lookups of the asynchronous rules' reads."""
    now: list[tuple[str, int]] = []
    later: list[tuple[str, int]] = []
    extra = 0
    for view in views:
        for rule in view.rules:
            if rule.table.lower() == table.name.lower() and rule.event == event:
                if view.maintenance is MaintenanceMode.ASYNC:
                    later.append((rule.name, as_of_bound(rule)))
                    extra += as_of_bound(rule) - rule.ops_bound
                else:
                    now.append((rule.name, rule.ops_bound))
    if not later:
        return tuple(now), (), 0, (), 0
    if event == WriteEvent.DELETE and table.name.lower() in as_of:
        return tuple(now), (), PENDING_CHECK_OPS + ENQUEUE_OPS, tuple(later), extra
    return tuple(now), tuple(later), ENQUEUE_OPS, (), extra
