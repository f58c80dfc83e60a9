"""Maintained writes: one base-row insert or delete, its constraint checks, index upkeep and
every view's delta rules, in one transaction.

Rules read the state without the written tuple (paper §5.1, see
``planner.maintenance``): for an insert every delta is computed before anything
is written; for a delete the base row goes first and the views follow in
dependency order, so a view whose maintenance reads another view sees it
already without the tuple.

What a write of one table and event does depends only on the plan, so it is worked
out once per deployment (:class:`WriteProgram`: the rules to run with their column
lists, the bound, the referencing foreign keys), not on every write.

The rules of asynchronous views (``-- maintenance: async``) are not run by the write: it
enqueues the changed row (``runtime.update_queue``), and :meth:`Maintainer.apply_deferred`
runs them when the queue is drained (on SQLite, an insert's enqueue is the store's own
trigger: ``runtime.queue_triggers``, so such an insert is one statement). Their rules that read base tables run as of the
queue (``runtime.as_of``); a delete of a row of a table they read, which the views have
seen, runs the asynchronous views' delete rules in its own transaction, as of the queue
(``planner.async_views``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable

from piql import sqlgen
from piql.catalog import CardinalityConstraint, Catalog, ForeignKey, Table
from piql.planner.async_views import as_of_bound, as_of_tables, columns_read
from piql.planner.triggers_postgres import FROZEN_REFUSAL
from piql.planner.triggers_sqlite import PLAN_MOVED
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, WriteEvent
from piql.planner.update_queues import QueuePolicy
from piql.planner.write_bounds import WriteBound
from piql.query_block import Aggregate, MaintenanceMode
from piql.runtime.errors import BoundExceeded, ConstraintError, StoreRefused
from piql.runtime.evaluate import aggregate, holds, value
from piql.runtime.executor import execute
from piql.runtime.as_of import AsOfQueue
from piql.runtime import queue_triggers, sessions
from piql.runtime.delta_statements import DeltaStatements
from piql.runtime.epochs import EpochWindow, mark_epochs
from piql.runtime.store import Store
from piql.runtime.update_queue import QUEUE_TABLE, StoreQueue, key_text
from piql.sql_types import TypeFamily, family

Partitioner = Callable[[ViewDef, dict[str, Any]], int]
# the types whose SQLite values compare (``IS``) exactly as the views see them
_COMPARABLE = (TypeFamily.INTEGER, TypeFamily.REAL, TypeFamily.TEXT)


@dataclass(frozen=True)
class WriteReport:
    """What one write cost: measured operations per rule and in total, beside the bounds."""

    table: str
    event: WriteEvent
    ops: int
    bound: int
    rules: tuple[tuple[str, int, int], ...]  # (rule, measured, bound)


@dataclass(frozen=True)
class RuleStep:
    """One delta rule of a view as a write runs it, with the column lists it uses."""

    view: ViewDef
    rule: DeltaRule
    names: tuple[str, ...]  # the delta's output columns, in order
    key: tuple[str, ...]  # the view's key columns
    count_column: str | None  # an aggregate view's COUNT(*) column
    sums: dict[str, str]  # SUM column -> the column counting its non-NULL values
    exact: dict[str, str]  # REAL SUM column -> its hidden exact-sum column
    bound: int  # the rule's bound as it runs: as of the queue for an asynchronous view's

    @classmethod
    def of(cls, view: ViewDef, rule: DeltaRule) -> "RuleStep":
        aggregated = rule.action in (RuleAction.ADD, RuleAction.SUBTRACT)
        deferred = view.maintenance is MaintenanceMode.ASYNC
        return cls(view, rule, tuple(i.name for i in rule.delta.select),
                   tuple(c.name for c in view.key),
                   _count_column(view) if aggregated else None,
                   _sum_counts(view) if aggregated else {}, dict(view.exact_sums),
                   as_of_bound(rule) if deferred else rule.ops_bound)


@dataclass(frozen=True)
class WriteProgram:
    """Everything a write of one table and event does that the plan decides."""

    bound: WriteBound
    deltas: tuple[RuleStep, ...]  # the views' delta rules, in dependency order
    marks: tuple[RuleStep, ...]  # the time windows' epoch-mark rules
    in_database: tuple[DeltaRule, ...]  # the rules the store's triggers run instead
    deferred: tuple[RuleStep, ...] = ()  # asynchronous views' rules, run on drain
    # the database makes the whole write, one statement of piql's: its checks (an insert's
    # in the triggers, a delete's in the statement) and every rule
    at_once: bool = False

    @classmethod
    def of(cls, table: Table, event: WriteEvent, views: tuple[ViewDef, ...],
           bounds: tuple[WriteBound, ...], in_database: frozenset[str],
           checked: frozenset[str] = frozenset(),
           enqueued: frozenset[str] = frozenset()) -> "WriteProgram":
        """``in_database`` names the rules the store runs itself (``Store.maintained_rules``),
        ``checked`` the tables whose inserts its triggers check (``Store.checked_tables``),
        ``enqueued`` those whose inserts its triggers queue (``runtime.queue_triggers``)."""
        rules = [(view, rule) for view in views for rule in view.rules
                 if rule.table.lower() == table.name.lower() and rule.event == event]
        steps = [RuleStep.of(view, rule) for view, rule in rules if rule.name not in in_database]
        bound = next(b for b in bounds
                     if b.table.lower() == table.name.lower() and b.event == event)
        deferred = tuple(s for s in steps if s.view.maintenance is MaintenanceMode.ASYNC)
        steps = [s for s in steps if s not in deferred]
        # an insert the database checks (its key always; CARDINALITY and FOREIGN KEYs in the
        # table's triggers) and maintains alone: piql sends the row, nothing else
        checks = table.name in checked or not (table.cardinalities or table.foreign_keys)
        queued = not deferred or table.name in enqueued
        if event == WriteEvent.INSERT:
            at_once = not steps and queued and checks and not table.unique_keys
        else:  # the statement itself checks that no row refers to the deleted one
            at_once = not steps and not deferred
        return cls(bound, tuple(s for s in steps if s.rule.action != RuleAction.MARK),
                   tuple(s for s in steps if s.rule.action == RuleAction.MARK),
                   tuple(rule for _, rule in rules if rule.name in in_database), deferred,
                   at_once)


def _static_report(table: str, event: WriteEvent, program: WriteProgram) -> WriteReport:
    """The report of a write the database makes alone: its static bound, the rules it may
    run (docs/api.md)."""
    bound = program.bound.ops_bound
    return WriteReport(table, event, bound, bound,
                       tuple((r.name, r.ops_bound, r.ops_bound) for r in program.in_database))


class ThroughPiql(Exception):
    """A one-statement update the store's triggers refused, changing nothing: a seen row
    of a table read as of the queue (its views' delete rules run in piql's write), or a
    change of a column a periodic view freezes (piql's refusal names the view). The
    caller makes it through piql's write path instead."""


class UnseenUpdate(Enum):
    """An update no asynchronous view sees (it changes no column they read): what its
    insert half does with the queue."""

    KEEP = "keep"  # the queue stays as it is
    DROP = "drop"  # take out the entry the store's trigger queues: the row had none


@dataclass
class Maintainer:
    catalog: Catalog
    views: tuple[ViewDef, ...]
    store: Store
    partition_of: Partitioner
    bounds: tuple[WriteBound, ...]  # the plan's, of every table and event
    strict: bool = True
    # staging view -> the time windows whose late epochs its writes mark for refresh
    epoch_windows: dict[str, list[EpochWindow]] = field(default_factory=dict)
    # how this process enqueues (``StoreQueue.policy``): the store's triggers queue inserts
    # under a lossy policy (and into the tables read as of the queue under any)
    queue_policy: QueuePolicy = QueuePolicy.IN_PLACE
    # (table, event) -> its program; (table) -> the foreign keys referring to it
    programs: dict[tuple[str, WriteEvent], WriteProgram] = field(init=False)
    referencing: dict[str, tuple[tuple[Table, Any], ...]] = field(init=False)
    statements: DeltaStatements = field(init=False)  # the rules' plans, prepared
    # (table, event) -> the report of each such write, where the database makes it alone
    at_once_reports: dict[tuple[str, WriteEvent], WriteReport] = field(init=False)
    # table -> the condition of its one-statement delete: no row refers to the row
    unreferenced: dict[str, str] = field(init=False)
    frozen: frozenset[str] = field(init=False)  # tables with columns periodic views freeze
    queue: StoreQueue | None = field(init=False)  # of the asynchronous views, if any
    as_of: AsOfQueue | None = field(init=False)  # the store as of the queue, for their joins
    enqueued: frozenset[str] = field(init=False)  # tables whose inserts the store queues
    # table -> the columns its asynchronous views read (``async_views.columns_read``)
    read_columns: dict[str, frozenset[str] | None] = field(init=False)
    # table -> the reports of an update no asynchronous view sees, made as one statement
    # (:meth:`replace_unseen_at_once`), and the columns it must leave as they are
    unseen_at_once: dict[str, tuple[list[WriteReport], tuple[str, ...]]] = field(init=False)

    def __post_init__(self) -> None:
        self.statements = DeltaStatements(self.store)
        deferring = any(view.rules for view in self.views
                        if view.maintenance is MaintenanceMode.ASYNC)
        self.queue = StoreQueue(self.store, self.queue_policy, tables=self.catalog.tables,
                                as_of=frozenset(
            t.lower() for t in as_of_tables(self.views))) if deferring else None
        self.as_of = AsOfQueue(self.store, self.queue) if self.queue is not None else None
        self.read_columns = {t.name: columns_read(self.views, t.name)
                             for t in self.catalog.tables}
        self.enqueued = self._queue_triggers()
        self.programs = {(table.name, event): WriteProgram.of(table, event, self.views,
                                                              self.bounds,
                                                              self.store.maintained_rules,
                                                              self.store.checked_tables,
                                                              self.enqueued)
                         for table in self.catalog.tables
                         for event in (WriteEvent.INSERT, WriteEvent.DELETE)}
        self.referencing = {table.name: tuple(
            (child, fk) for child in self.catalog.tables for fk in child.foreign_keys
            if fk.ref_table.lower() == table.name.lower()) for table in self.catalog.tables}
        self.at_once_reports = {(table, event): _static_report(table, event, p)
                                for (table, event), p in self.programs.items() if p.at_once}
        self.unreferenced = {table.name: unreferenced(table, self.referencing[table.name],
                                                      self.store.dialect)
                             for table in self.catalog.tables}
        self.frozen = frozenset(f.table.lower() for view in self.views for f in view.frozen)
        statements = {t.name: self._unseen_statement(t) for t in self.catalog.tables}
        self.unseen_at_once = {t: s for t, s in statements.items() if s is not None}

    def _queue_triggers(self) -> frozenset[str]:
        """On a store whose triggers can queue (SQLite, PostgreSQL), the enqueue trigger of
        every table whose inserts asynchronous views' rules read: such an insert is then one
        statement (``runtime.queue_triggers``). The tables, by name."""
        add = getattr(self.store, "queue_triggers", None)
        if add is not None and self.store.dialect == "postgres":
            return self._postgres_queue_triggers(add)
        if self.queue is None or add is None:
            return frozenset()
        queue = self.queue
        tables = [t for t in self._async_insert_tables() if queue.policy.lossy
                  or t.name.lower() in queue.as_of]
        changes = self._async_delete_tables()

        def make() -> None:  # again when the process starts or stops stamping
            add(queue_triggers.functions(queue), [
                s for t in tables for s in queue_triggers.sqlite_drops(t)
                + queue_triggers.sqlite_triggers(t, queue_triggers.Stamp.of(queue),
                                                 t.name.lower() in queue.as_of,
                                                 t.name in changes,
                                                 self.read_columns[t.name])])
        make()
        queue.on_stamping = make
        return frozenset(t.name for t in tables)

    def _async_insert_tables(self, event: WriteEvent = WriteEvent.INSERT) -> list[Table]:
        """The tables whose inserts (``event``) asynchronous views' rules read."""
        return [t for t in self.catalog.tables if any(
            view.maintenance is MaintenanceMode.ASYNC and rule.event == event
            and rule.table.lower() == t.name.lower() for view in self.views
            for rule in view.rules)]

    def _async_delete_tables(self) -> frozenset[str]:
        """The tables whose deletes asynchronous views' rules read: piql's write path
        deletes their rows (never at once) and queues the change, so their delete and
        update triggers queue other clients'. A table read by such rules on insert only
        (a staging view's) may be deleted at once: no change of it is queued."""
        return frozenset(t.name for t in self._async_insert_tables(WriteEvent.DELETE))

    def _postgres_queue_triggers(self, add: Callable[..., None]) -> frozenset[str]:
        """On PostgreSQL the triggers are the database's, made for every such table whose
        rows the server encodes as piql does (``queue_triggers.postgres_ready``), whatever
        this process's policy, so any client's insert queues. They queue with the server's
        clock, coalescing IN-PLACE (an entry per change under this process's APPEND
        policy: the triggers are made again when a process of another policy opens). A
        process under LINECUTTING (the slow-updater test is its own statistics) or APPEND
        queues itself, and its transactions tell the triggers so
        (``PostgresStore.own_enqueue``). Other tables' triggers, made
        for an earlier plan, are dropped."""
        tables = [] if self.queue is None else [
            t for t in self._async_insert_tables() if queue_triggers.postgres_ready(t)]
        made = {t.name for t in tables}
        as_of = frozenset() if self.queue is None else self.queue.as_of
        changes = self._async_delete_tables()
        append = self.queue is not None and not self.queue.policy.lossy
        add({}, [s for t in tables for s in queue_triggers.postgres_trigger(
            t, t.name.lower() in as_of, t.name in changes, self.read_columns[t.name],
            append)]
            + [s for t in self.catalog.tables if t.name not in made
               for s in queue_triggers.postgres_drop(t)])
        if self.queue is None:
            return frozenset()
        self.store.own_changes = True  # its deletes and updates: its write path queues them
        policy = self.queue.policy
        if policy is QueuePolicy.LINECUTTING or not policy.lossy:
            self.store.own_enqueue = True
            return frozenset()
        return frozenset(t.name for t in tables)

    # -- the two primitive writes ---------------------------------------------
    def update(self, table: Table, key: dict[str, Any], row: dict[str, Any]
               ) -> list[WriteReport]:
        """Replace the row with key ``key`` by ``row``: a delete then an insert. When the
        update changes no column an asynchronous view of the table reads
        (``async_views.columns_read``), those views would lose and regain the same rows, so
        it queues nothing and runs none of their rules (TPC-W BuyConfirm's stock update):
        the delete half says so to the insert half (:class:`UnseenUpdate`)."""
        deleted, unseen = self._delete(table, key, row, updating=True)
        return [deleted, self.insert(table, row, unseen=unseen)]

    def _unread_change(self, table: Table, old: dict[str, Any], new: dict[str, Any]) -> bool:
        """Does an update of ``table`` from ``old`` to ``new`` leave every column its
        asynchronous views read as it was?"""
        read = self.read_columns[table.name]
        return read is not None and all(_same(old[c], new[c]) for c in read)

    def insert(self, table: Table, row: dict[str, Any], *,
               unseen: UnseenUpdate | None = None) -> WriteReport:
        """Insert one row. ``unseen``: this is the insert half of an :meth:`update` that no
        asynchronous view sees, so it queues nothing (and what it does with the entry the
        store's trigger queues)."""
        start = self.store.counter.ops
        program = self.programs[(table.name, WriteEvent.INSERT)]
        key = {c: row[c] for c in table.primary_key}
        if self.store.get(table.name, key) is not None:
            raise _duplicate(table, row)
        self._check_cardinality(table, row)
        self._check_unique(table, row)
        self._check_parents(table, row)
        pending = [(step, *self._delta(step.rule, row)) for step in program.deltas]
        self.store.insert(table.name, row)
        self.store.counter.writes += program.bound.index_upkeep
        measured = [self._apply(step, rows, reads) for step, rows, reads in pending]
        # with the tuple in: it may join itself
        measured += self._marks(program, row)
        if unseen is not None:  # the views read nothing the update changed
            if unseen is UnseenUpdate.DROP:
                self.store.delete(QUEUE_TABLE, {"base": table.name, "row_key": key_text(
                    [row[c] for c in table.primary_key])})
        elif program.deferred and table.name not in self.enqueued:  # else the store's trigger
            self.queue.enqueue(table, None, row)
        return self._report(table, program, start, measured)

    def at_once(self, table: Table, event: WriteEvent = WriteEvent.INSERT) -> bool:
        """Is an insert into ``table`` (a delete from it) one statement of the store's
        (:meth:`insert_at_once`, :meth:`delete_at_once`)?"""
        return (table.name, event) in self.at_once_reports

    def update_at_once(self, table: Table) -> bool:
        """Is an update of a ``table`` row one statement (:meth:`replace_at_once`)? When
        its delete and insert are, and the insert's triggers queue nothing (an enqueue
        trigger fires on INSERT). On SQLite, nor may they check frozen columns (piql's
        message names the view); PostgreSQL's trigger refuses a change of one with
        :data:`FROZEN_REFUSAL`, changing nothing, and piql's path then says why
        (:class:`ThroughPiql`), so an update keeping them (TPC-W's stock and price
        updates of an item whose subject a periodic view reads) is one statement."""
        if not self.at_once(table):
            return False
        if self._queued_update_at_once(table):  # frozen columns: see ThroughPiql
            return True
        return (table.name.lower() not in self.frozen or self.store.dialect == "postgres") \
            and self.at_once(table, WriteEvent.DELETE) and \
            not self.programs[(table.name, WriteEvent.INSERT)].deferred

    def _queued_update_at_once(self, table: Table) -> bool:
        """On PostgreSQL, is an update of a ``table`` row one statement whose asynchronous
        views' changes the table's enqueue triggers queue (``queue_triggers``: its insert
        is one statement already, its delete and update trigger queues the change, or
        nothing when no column those views read changed)? The delete's rules must all be
        asynchronous, and the update keeps the key, so no row referring to it is orphaned.
        A seen row of a table read as of the queue is refused by the trigger when a column
        its views read changes: such an update goes through piql's write path
        (:class:`ThroughPiql`). A process whose queue clock is not the wall clock (the
        replay of ``piql bench queues``, tests) queues its updates itself, at its times."""
        program = self.programs[(table.name, WriteEvent.DELETE)]
        return (self.store.dialect == "postgres" and self.queue is not None
                and not getattr(self.store, "own_enqueue", True) and not self.queue.own_clock
                and table.name in self.enqueued and not program.deltas and not program.marks
                and table.name in self._async_delete_tables())

    def insert_at_once(self, table: Table, row: dict[str, Any]) -> WriteReport:
        """Insert a row whose checks and maintenance the database makes (``at_once``): one
        statement, its own transaction unless one is open (``Store.write_row``). A refusal
        changes nothing and raises the error piql's own checks raise (read from the
        database's). The database counts none of its reads: the write reports its static
        bound, the checks and rules it may do (docs/api.md)."""
        try:
            self.store.write_row(table.name, row)
        except StoreRefused as err:
            raise self._refused(table, row, err) from None
        return self.at_once_reports[(table.name, WriteEvent.INSERT)]  # the same every time

    def delete_at_once(self, table: Table, key: dict[str, Any]) -> WriteReport:
        """Delete a row whose maintenance the database makes (``at_once``): one statement,
        its own transaction unless one is open, which deletes the row only if no row refers
        to it (:func:`unreferenced`); its triggers keep the views. When it deletes nothing,
        the reason is read then (no such row, or the rows that refer to it), and nothing
        changed. It reports its static bound, as :meth:`insert_at_once`."""
        try:
            deleted = self.store.delete_row(table.name, key, self.unreferenced[table.name])
        except StoreRefused as err:
            raise self._refused(table, key, err) from None
        if not deleted:
            self._not_deleted(table, key)
        return self.at_once_reports[(table.name, WriteEvent.DELETE)]

    def replace_at_once(self, table: Table, row: dict[str, Any]) -> list[WriteReport]:
        """Update a row (``update_at_once``): one UPDATE, whose triggers run the delete's
        rules with the old row, the insert's with the new one, and check the new row's
        CARDINALITY and FOREIGN KEYs, as an update made of a delete and an insert. The
        reports of both halves, at their static bounds."""
        key = {c: row[c] for c in table.primary_key}
        try:
            updated = self.store.update_row(table.name, key, row)
        except StoreRefused as err:
            if queue_triggers.THROUGH_PIQL in str(err) or FROZEN_REFUSAL in str(err):
                raise ThroughPiql() from None  # nothing changed: piql's path does it
            raise self._refused(table, row, err) from None
        if not updated:
            raise _missing(table, key)
        return [self.at_once_reports.get((table.name, WriteEvent.DELETE))
                or _static_report(table.name, WriteEvent.DELETE,
                                  self.programs[(table.name, WriteEvent.DELETE)]),
                self.at_once_reports[(table.name, WriteEvent.INSERT)]]

    def _unseen_statement(self, table: Table
                          ) -> tuple[list[WriteReport], tuple[str, ...]] | None:
        """Can an update of ``table`` that changes no column its asynchronous views read be
        one UPDATE (:meth:`replace_unseen_at_once`)? On SQLite, when an insert is one
        statement whose trigger queues it (``at_once``), the delete runs no rule of piql's
        own (only deferred ones, which such an update skips: ``UnseenUpdate``), and the
        columns the views read (and those periodic views freeze) are known and compare as
        the views would see them (integers, doubles, text: ``IS`` after the column's
        affinity). The change triggers fire on no such update (``queue_triggers``). The
        reports of both halves at their static bounds, and the columns kept."""
        read = self.read_columns[table.name]
        insert = self.programs[(table.name, WriteEvent.INSERT)]
        delete = self.programs[(table.name, WriteEvent.DELETE)]
        if self.store.dialect != "sqlite" or read is None or not insert.deferred or \
                not self.at_once(table) or table.name not in self.enqueued or \
                table.name not in self._async_delete_tables() or delete.deltas or \
                delete.marks:
            return None
        # a column a periodic view freezes is kept too: changing it takes piql's path,
        # whose refusal names the view
        named = {c.lower() for c in read} | {c.lower() for view in self.views
                                             for f in view.frozen
                                             if f.table.lower() == table.name.lower()
                                             for c in f.columns}
        kept = tuple(c.name for c in table.columns if c.name.lower() in named
                     and c.name not in table.primary_key)
        if any(family(c.type) not in _COMPARABLE for c in table.columns if c.name in kept):
            return None
        return [_static_report(table.name, WriteEvent.DELETE, delete),
                _static_report(table.name, WriteEvent.INSERT, insert)], kept

    def replace_unseen_at_once(self, table: Table, row: dict[str, Any]
                               ) -> list[WriteReport] | None:
        """Update a row (``unseen_at_once``) with one UPDATE that applies only when the
        columns the asynchronous views read keep their values: then no view sees the
        update, nothing is queued, and the store's triggers check the new row. None when
        it updated nothing (no such row, or a read column changes): the caller makes the
        update through :meth:`update`, which says which, or runs the views' rules."""
        reports, kept = self.unseen_at_once[table.name]
        key = {c: row[c] for c in table.primary_key}
        try:
            updated = self.store.update_row(table.name, key, row, kept)
        except StoreRefused as err:
            raise self._refused(table, row, err) from None
        return reports if updated else None

    def _refused(self, table: Table, row: dict[str, Any], err: StoreRefused) -> Exception:
        if PLAN_MOVED in str(err):
            return sessions.migrated(self.store)
        return _refusal(table, row, err)

    def _not_deleted(self, table: Table, key: dict[str, Any]) -> None:
        """Why a one-statement delete deleted nothing: the error piql's own checks raise."""
        found = self.store.get(table.name, key)
        if found is None:
            raise _missing(table, key)
        self._check_children(table, dict(zip(self.store.shapes[table.name].columns, found)),
                             stored=True)
        raise ConstraintError(f"the store did not delete the {table.name} row with key "
                              f"{_show(key)} (another writer changed it meanwhile?)")

    def delete(self, table: Table, key: dict[str, Any], *,
               replacing: dict[str, Any] | None = None) -> WriteReport:
        """Delete one row; ``replacing`` (an update's first half: the new row) keeps the key,
        so rows that refer to it stay valid."""
        return self._delete(table, key, replacing, updating=False)[0]

    def _delete(self, table: Table, key: dict[str, Any], replacing: dict[str, Any] | None,
                updating: bool) -> tuple[WriteReport, UnseenUpdate | None]:
        """:meth:`delete`; inside :meth:`update` (``updating``), also whether the update
        changes no column an asynchronous view reads, and so what its insert half does
        with the queue (None: the views see it, and this half queued or ran their rules)."""
        unseen = None
        start = self.store.counter.ops
        program = self.programs[(table.name, WriteEvent.DELETE)]
        found = self.store.get(table.name, key)
        if found is None:
            raise _missing(table, key)
        row = dict(zip(self.store.shapes[table.name].columns, found))
        if replacing is not None:
            self._check_frozen(table, row, replacing)
        # before the tuple goes: the windows it is in
        marked = self._marks(program, row)
        self._delete_row(table, key)
        if replacing is None:  # after the delete, so a row referring to itself is no child
            self._check_children(table, row)
        self.store.counter.writes += program.bound.index_upkeep
        measured = marked + [self._apply(step, *self._delta(step.rule, row))
                             for step in program.deltas]
        if program.deferred:
            if updating and replacing is not None and \
                    self._unread_change(table, row, replacing):
                queued = self.queue.holds(table.name, [row[c] for c in table.primary_key])
                unseen = UnseenUpdate.DROP if table.name in self.enqueued and \
                    not queued else UnseenUpdate.KEEP
            else:
                measured += self._defer_delete(table, program, row, replacing)
        return self._report(table, program, start, measured), unseen

    def _delete_row(self, table: Table, key: dict[str, Any]) -> None:
        """Delete the base row; the store's enqueue triggers leave it to this write path
        (``runtime.queue_triggers``: on PostgreSQL its transaction says so)."""
        if self.queue is None:
            self.store.delete(table.name, key)
            return
        self.queue.own = True
        try:
            self.store.delete(table.name, key)
        finally:
            self.queue.own = False

    def _defer_delete(self, table: Table, program: WriteProgram, row: dict[str, Any],
                      replacing: dict[str, Any] | None) -> list[tuple[str, int, int]]:
        """The asynchronous views' share of a delete. A row of a table their joins read
        (as of the queue), which they have seen (not queued): their delete rules run now,
        as of the queue, and an update's new row is queued by its insert half. Otherwise
        the change is queued: an update's delete half queues the whole change, so a
        queued insert of the row is not cancelled on the way (its entry keeps its place
        and its first arrival), and the insert half coalesces into the same net change."""
        assert self.queue is not None
        if table.name.lower() in self.queue.as_of and not self.queue.holds(
                table.name, [row[c] for c in table.primary_key]):
            self.queue.new_transaction()  # no delete half pending: the insert half queues
            return [self._apply(step, *self._delta(step.rule, row, as_of=True))
                    for step in program.deferred]
        self.queue.enqueue(table, row, replacing)
        return []

    def apply_deferred(self, table: Table, before: dict[str, Any] | None,
                       after: dict[str, Any] | None) -> list[tuple[str, int, int]]:
        """Run the asynchronous views' rules for one queued net change of a ``table`` row
        (still queued): the delete's with the first old row, then the insert's with the last
        new one. Rules reading other rows read them as of the queue (``runtime.as_of``):
        as the views have seen them."""
        measured = []
        for event, row in ((WriteEvent.DELETE, before), (WriteEvent.INSERT, after)):
            if row is not None:
                measured += [self._apply(step, *self._delta(step.rule, row, as_of=True))
                             for step in self.programs[(table.name, event)].deferred]
        return measured

    # -- pieces ----------------------------------------------------------------
    def _check_cardinality(self, table: Table, row: dict[str, Any]) -> None:
        for constraint in table.cardinalities:
            eq = [(c, row[c]) for c in constraint.per]
            others = self.store.count_distinct(table.name, constraint.column, eq,
                                               constraint.limit, row[constraint.column])
            if others >= constraint.limit:
                raise _over_cardinality(table, constraint, row)

    def _check_unique(self, table: Table, row: dict[str, Any]) -> None:
        """Bounded plans trust unique keys (a lookup of one finds at most one row). Rows whose
        key holds a NULL never clash, as in SQL, unless the key is NULLS NOT DISTINCT."""
        for key in table.unique_keys:
            values = [row[c] for c in key.columns]
            if key.nulls_distinct and any(v is None for v in values):
                continue
            if self.store.get(table.name, dict(zip(key.columns, values))) is not None:
                raise ConstraintError(
                    f"insert into {table.name} breaks {key.describe()}: a row with "
                    f"{_show(dict(zip(key.columns, values)))} already exists")

    def _check_parents(self, table: Table, row: dict[str, Any]) -> None:
        """Bounded plans trust foreign keys (a lookup through one never drops a row)."""
        for fk in table.foreign_keys:
            values = [row[c] for c in fk.columns]
            if any(v is None for v in values):
                continue
            if fk.ref_table.lower() == table.name.lower() and \
                    values == [row[c] for c in fk.ref_columns]:
                continue  # the row is its own parent, as SQL checks it: after the insert
            if self.store.get(fk.ref_table, dict(zip(fk.ref_columns, values))) is None:
                raise _orphan(table, fk, row)

    def _check_children(self, table: Table, row: dict[str, Any], stored: bool = False) -> None:
        """Refuse the delete of ``row`` while another row refers to it. A row referring to
        itself is no child (SQL checks after the delete): piql's own delete asks once the
        row is gone, a one-statement delete that deleted nothing with the row ``stored``,
        so then a reference of the table to itself reads one row more to pass over it."""
        own_key = [row[c] for c in table.primary_key]
        for child, fk in self.referencing[table.name]:
            eq = [(c, row[r]) for c, r in zip(fk.columns, fk.ref_columns)]
            itself = stored and child.name.lower() == table.name.lower()
            found = self.store.scan(child.name, child.primary_key, eq, limit=2 if itself else 1)
            if any(not itself or list(key) != own_key for key in found):
                raise ConstraintError(
                    f"delete from {table.name} breaks FOREIGN KEY ({', '.join(fk.columns)}) "
                    f"REFERENCES {table.name} of {child.name}: {child.name} rows still refer to "
                    f"{_show(dict(eq))}")

    def _check_frozen(self, table: Table, old: dict[str, Any], new: dict[str, Any]) -> None:
        for view in self.views:
            for frozen in view.frozen:
                if frozen.table.lower() != table.name.lower():
                    continue
                changed = [c for c in frozen.columns if old[c] != new[c]]
                if changed:
                    key = {c: old[c] for c in table.primary_key}
                    raise ConstraintError(
                        f"update of {table.name} {_show(key)} changes {', '.join(changed)}, which "
                        f"the periodic view {view.name} reads through a join: the old windows "
                        "that change would reach are not found by bounded lookups, so piql "
                        f"refuses it (insert a new {table.name} row instead, or make the reverse "
                        "lookup bounded, see docs/temporal.md)")

    def _marks(self, program: WriteProgram, row: dict[str, Any]) -> list[tuple[str, int, int]]:
        """Run the time windows' epoch-mark rules for one written tuple."""
        return [self._apply(step, *self._delta(step.rule, row)) for step in program.marks]

    def _delta(self, rule: DeltaRule, row: dict[str, Any], as_of: bool = False
               ) -> tuple[list[tuple], int]:
        """The view rows (or aggregate updates) one written tuple produces, and the reads
        it took to find them; ``as_of``: reading the base tables as of the queue."""
        start = self.store.counter.ops
        if not all(holds(g, {}, row) for g in rule.guards):
            return [], 0
        if rule.plan is None:
            rows = [tuple(aggregate(i.expr, [{}], row) if isinstance(i.expr, Aggregate)
                          else value(i.expr, {}, row) for i in rule.delta.select)]
        elif as_of:
            rows = execute(self.as_of, rule.plan, row)  # type: ignore[arg-type]
        else:
            rows = self.statements.rows(rule, row)
        return rows, self.store.counter.ops - start

    def _apply(self, step: RuleStep, rows: list[tuple], reads: int) -> tuple[str, int, int]:
        start = self.store.counter.ops
        view, rule, names, key = step.view, step.rule, step.names, step.key
        if rule.action == RuleAction.MARK:
            window = next(w for ws in self.epoch_windows.values() for w in ws if w.view == view.name)
            found = [{window.column: produced[0]} for produced in rows]
            mark_epochs(self.store, [window], found)
            self.store.counter.writes += len(found)
            rows = []
        elif rule.action == RuleAction.INSERT and view.kind != ViewKind.STAGING and rows:
            self.store.insert_rows(view.name, names, rows)  # the view's rows as produced
            rows = []
        for produced in rows:
            values = dict(zip(names, produced))
            if view.kind == ViewKind.STAGING:
                values["partition"] = self.partition_of(view, values)
                mark_epochs(self.store, self.epoch_windows.get(view.name, []), [values])
            key_values = {c: values[c] for c in key}
            if rule.action == RuleAction.INSERT:
                self.store.insert(view.name, values)
            elif rule.action == RuleAction.DELETE:
                self.store.delete(view.name, key_values)
            else:
                sign = 1 if rule.action == RuleAction.ADD else -1
                deltas = {c.name: sign * (values[c.name] or 0) for c in view.columns
                          if isinstance(c.source, Aggregate)}
                self.store.add(view.name, key_values or {"_all": 0}, deltas,
                               step.count_column, step.sums, step.exact)
        measured = reads + self.store.counter.ops - start
        if self.strict and measured > step.bound:
            raise BoundExceeded(f"rule {rule.name} did {measured} operations; its bound is "
                                f"{step.bound}")
        return rule.name, measured, step.bound

    def _report(self, table: Table, program: WriteProgram, start: int,
                measured: list[tuple[str, int, int]]) -> WriteReport:
        # Rules the database ran in its triggers count at their static bound: the database
        # does not count its reads, and the bound is what the rule's plan may do (docs/api.md)
        by_database = [(rule.name, rule.ops_bound, rule.ops_bound) for rule in program.in_database]
        measured = measured + by_database
        ops = self.store.counter.ops - start + sum(ops for _, ops, _ in by_database)
        bound, event = program.bound.ops_bound, program.bound.event
        if self.strict and ops > bound:
            raise BoundExceeded(f"{event} into {table.name} did {ops} operations; its bound is {bound}")
        return WriteReport(table.name, event, ops, bound, tuple(measured))


def _same(old: Any, new: Any) -> bool:
    """The same value, as a view would store it: of one type (1 is not 1.0 or True) and,
    for a float, one representation (0.0 is not -0.0)."""
    if type(old) is not type(new):
        return False
    return repr(old) == repr(new) if isinstance(old, float) else old == new


def _count_column(view: ViewDef) -> str:
    return next(c.name for c in view.columns
                if isinstance(c.source, Aggregate) and c.source == Aggregate("COUNT", None))


def _sum_counts(view: ViewDef) -> dict[str, str]:
    """Each SUM state column and the column counting its argument's non-NULL values."""
    columns = {c.source: c.name for c in view.columns if isinstance(c.source, Aggregate)}
    return {name: columns[Aggregate("COUNT", source.arg)] for source, name in columns.items()
            if source.func == "SUM" and Aggregate("COUNT", source.arg) in columns}


def unreferenced(table: Table, referencing: tuple[tuple[Table, ForeignKey], ...],
                 dialect: str) -> str:
    """The condition of a one-statement delete from ``table`` (a table reference ``table``
    in SQL): no row of ``referencing`` refers to the row, as piql's own check finds after
    its delete (a row referring to itself is no child). Empty: nothing refers to it."""
    def q(name: str) -> str:
        return sqlgen.identifier(name, dialect)

    target, conditions = q(table.name), []
    for child, fk in referencing:
        match = [f"piql_c.{q(c)} = {target}.{q(r)}" for c, r in zip(fk.columns, fk.ref_columns)]
        if child.name.lower() == table.name.lower():
            match.append("NOT (" + " AND ".join(f"piql_c.{q(c)} = {target}.{q(c)}"
                                               for c in table.primary_key) + ")")
        conditions.append(f"NOT EXISTS (SELECT 1 FROM {q(child.name)} AS piql_c WHERE "
                          f"{' AND '.join(match)})")
    return " AND ".join(conditions)


def _missing(table: Table, key: dict[str, Any]) -> ConstraintError:
    return ConstraintError(f"{table.name} has no row with key {_show(key)}")


def _duplicate(table: Table, row: dict[str, Any]) -> ConstraintError:
    key = {c: row[c] for c in table.primary_key}
    return ConstraintError(f"{table.name} already has a row with key {_show(key)} "
                           f"(PRIMARY KEY ({', '.join(table.primary_key)}))")


def _over_cardinality(table: Table, constraint: CardinalityConstraint,
                      row: dict[str, Any]) -> ConstraintError:
    eq = {c: row[c] for c in constraint.per}
    return ConstraintError(
        f"insert into {table.name} breaks {constraint.describe()}: {_show(eq)} already has "
        f"{constraint.limit} {constraint.column} values (limit {constraint.limit})")


def _orphan(table: Table, fk: ForeignKey, row: dict[str, Any]) -> ConstraintError:
    parent = {r: row[c] for c, r in zip(fk.columns, fk.ref_columns)}
    return ConstraintError(
        f"insert into {table.name} breaks FOREIGN KEY ({', '.join(fk.columns)}) "
        f"REFERENCES {fk.ref_table}: no {fk.ref_table} row with {_show(parent)}")


def _refusal(table: Table, row: dict[str, Any], err: StoreRefused) -> ConstraintError:
    """The error piql's own checks raise for an insert the database refused: its key, or a
    constraint its triggers check (their messages name it, ``planner.trigger_rules``)."""
    if err.duplicate:
        return _duplicate(table, row)
    text = str(err)
    for constraint in table.cardinalities:
        if constraint.describe() in text:
            return _over_cardinality(table, constraint, row)
    for fk in table.foreign_keys:
        if f"FOREIGN KEY ({', '.join(fk.columns)}) REFERENCES {fk.ref_table}:" in text:
            return _orphan(table, fk, row)
    return ConstraintError(f"the store refused the write: {err}")


def _show(values: dict[str, Any]) -> str:
    return "(" + ", ".join(f"{k}={v!r}" for k, v in values.items()) + ")"
