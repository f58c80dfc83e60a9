"""The update queue of asynchronous views, kept in the store (issue 20; UpStream §4-5).

A write that reaches an asynchronous view (``-- maintenance: async``) does its checks, the
base row, and one enqueue here instead of the view's delta rules: the changed row, keyed
by its table and primary key (its *update key*). The queue is a table of the store, so an
entry commits or rolls back with the write that made it, and survives a crash; a refused
write enqueues nothing.

The queue is lossy by key (``planner.update_queues``): a newer change of a queued row
coalesces with the queued one into its net effect (an insert then a delete cancel, an
update chain becomes one delete of the first old row and one insert of the last new one),
so the table never holds more than one entry per row key. The append queue
(``QueuePolicy.APPEND``, UpStream's AQ baseline) keeps one entry per change instead.

Each entry carries its place under every key-scheduling policy, so the policy is the
maintainer's choice when it claims entries (``piql maintain --policy``):

- IN-PLACE serves by ``first_enqueued`` (a coalesced change keeps its first place);
- FIFO by ``last_enqueued`` (a coalesced change moves to the back);
- LINECUTTING by ``cut``: IN-PLACE's place, unless the key was a *slow updater* when it
  changed (``u_k < 1/(c·n)``, §5.3): then minus that time, the front. The cutters are
  served in the order they cut in (``LINECUTTING_ORDER``), and a queued cutter that cuts
  again keeps its place, as ``planner.update_queues`` serves them. ``u_k`` is the writing process's observed rate of the key, ``n`` its
  estimate of the queue's residents and ``c`` the maintainer's cost of one entry
  (statistics, as UpStream's statistics monitor keeps them: §4.2).

Positions are times (ns; a process never repeats one), so a new entry goes to the back
without reading the queue's tail.

An insert is queued by the store's own trigger instead (``runtime.queue_triggers``), which
writes the same entries: on SQLite with SQLite's clock and the IN-PLACE place, asking this
process only under LINECUTTING (:meth:`StoreQueue.cut`) or a virtual clock; on PostgreSQL
with the server's clock and the IN-PLACE place (a LINECUTTING or APPEND process queues
itself). Deletes and updates by plain SQL are queued by the triggers too; piql's own are
queued here.

:func:`drain` claims entries in the policy's order and applies them, a batch per
transaction together with the entries' removal, so a crash mid-batch loses nothing and
applies nothing twice. On PostgreSQL the claim is ``FOR UPDATE SKIP LOCKED``; on SQLite
the transaction holds the database's single write lock.
"""
from __future__ import annotations

import json
import struct
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Callable, Iterable, Optional

from piql.catalog import Table
from piql.planner.application import Plan
from piql.planner.update_queues import (
    ObservedRates, QueuePolicy, Rates, RowChange, is_slow_updater, net_change,
)
from piql.query_block import MaintenanceMode
from piql.runtime.store import Store, TableShape

if TYPE_CHECKING:
    from piql.runtime.writes import Maintainer

QUEUE_TABLE = "_piql_update_queue"  # under the prefix piql keeps for itself
COLUMNS = ("base", "row_key", "first_enqueued", "last_enqueued", "cut", "before_row",
           "after_row", "updates")
TYPES = ("TEXT", "TEXT", "BIGINT", "BIGINT", "BIGINT", "TEXT", "TEXT", "BIGINT")
KEY = ("base", "row_key")
# the column each policy serves by (ties: the update key)
ORDER = {QueuePolicy.IN_PLACE: "first_enqueued", QueuePolicy.FIFO: "last_enqueued",
         QueuePolicy.LINECUTTING: "cut", QueuePolicy.APPEND: "last_enqueued"}
# LINECUTTING's service order: the cutters (cut < 0: minus the time they cut in) first, in
# the order they cut in, then the rest by their place (both dialects sort false first)
LINECUTTING_ORDER = "{cut} >= 0, abs({cut})"
DRAIN_BATCH = 32  # entries claimed and applied in one transaction
DEFAULT_COST_NS = 1_000_000  # LINECUTTING's c until a drain in this process measured it


def has_async_views(plan: Plan) -> bool:
    return any(v.maintenance is MaintenanceMode.ASYNC for v in plan.views)


def queue_shapes(plan: Plan) -> list[TableShape]:
    """The queue table, for a plan with asynchronous views (none otherwise, so a plan
    without them is installed, and fingerprinted, as before)."""
    return [TableShape(QUEUE_TABLE, COLUMNS, KEY, TYPES)] if has_async_views(plan) else []


@dataclass(frozen=True)
class QueuedChange:
    """One entry: the net change of one base row since it was first enqueued."""

    base: str
    row_key: str
    change: RowChange  # rows as tuples in the table's column order
    first_enqueued: int  # ns
    last_enqueued: int
    cut: int  # its place under LINECUTTING
    updates: int

    def staleness_ms(self, now_ns: int) -> float:
        """Queue staleness of this row key (UpStream §5.1): age of its oldest pending change."""
        return max(0, now_ns - self.first_enqueued) / 1e6


@dataclass(frozen=True)
class QueueStats:
    """``Deployment.queue_stats()``: the queue now, and this process's dequeues."""

    length: int  # pending entries (lossy: at most one per update key)
    changes: int  # the changes they stand for (length + the changes coalesced away)
    oldest_ms: float  # queue staleness of the stalest key (0: empty)
    average_ms: float  # mean queue staleness over the pending keys (0: empty)
    p99_ms: float
    staleness_ms: dict[tuple[str, str], float]  # per update key (base, row key), §5.1
    dequeued: int  # entries this process applied
    dequeue_rate: float  # of them per second of this process's draining (0: none yet)


class StoreQueue:
    """The update queue table of one store. ``policy`` is how this process enqueues
    (APPEND: no coalescing) and, by default, the order its drains claim in."""

    def __init__(self, store: Store, policy: QueuePolicy = QueuePolicy.IN_PLACE,
                 clock: Callable[[], int] = time.time_ns, rates: Optional[Rates] = None,
                 cost_ns: Optional[int] = None, tables: Iterable[Table] = (),
                 as_of: frozenset[str] = frozenset()) -> None:
        # set by the store's enqueue triggers' maker: called when :attr:`stamps` may change
        self.on_stamping: Optional[Callable[[], None]] = None
        self.store = store
        self.policy = policy
        self.tables = {t.name.lower(): t for t in tables}
        # the tables read as of the queue (``runtime.as_of``, lower case): their entries
        # are inserts only, always coalesced by key (even under APPEND), so a row's entry
        # is found by its key
        self.as_of = as_of
        self.clock = clock
        self.observed = ObservedRates()  # per key, this process's writes (§4.2)
        self.rates: Rates = rates if rates is not None else self.observed  # per ns
        self.cost_ns = cost_ns  # LINECUTTING's c; None: measured by drains
        self.residents = 0  # estimate of the pending entries (exact after a claim here)
        self.dequeued, self.draining_ns = 0, 0  # for the dequeue rate
        self._last = 0
        # the update whose delete half was just queued in this transaction (any other
        # change, or a new transaction, clears it)
        self._replacing: Optional[tuple[str, str, dict[str, Any]]] = None
        # the last insert a store trigger queued (``runtime.queue_triggers``) and its time
        self._stamped: Optional[tuple[tuple[str, str], int, int]] = None
        # piql's write path is deleting a base row, whose change it queues itself (the
        # store's delete and update triggers leave it alone)
        self.own = False

    @property
    def policy(self) -> QueuePolicy:
        return self._policy

    @policy.setter
    def policy(self, policy: QueuePolicy) -> None:
        self._policy = policy
        self._stamping_changed()

    @property
    def clock(self) -> Callable[[], int]:
        return self._clock

    @clock.setter
    def clock(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._stamping_changed()

    @property
    def stamps(self) -> bool:
        """Does this process give the changes the store's triggers queue their LINECUTTING
        place (the slow-updater test with its statistics: :meth:`cut`)? Only under
        LINECUTTING: otherwise their place is IN-PLACE's (``runtime.queue_triggers``)."""
        return self._policy is QueuePolicy.LINECUTTING

    @property
    def own_clock(self) -> bool:
        """Is the clock not the wall clock (a virtual one: tests, ``piql bench queues``)?
        Then the store's triggers ask it for the time instead of reading the database's."""
        return self._clock is not time.time_ns

    def _stamping_changed(self) -> None:
        hook = getattr(self, "on_stamping", None)
        if hook is not None and "_clock" in vars(self):
            hook()

    def now(self) -> int:
        """The clock, never repeating a value in this process (so two changes of one
        row, an update's halves, keep their order)."""
        self._last = max(self.clock(), self._last + 1)
        self._stamped = None
        return self._last

    # -- writers ------------------------------------------------------------
    def enqueue(self, table: Table, before: Optional[dict[str, Any]],
                after: Optional[dict[str, Any]]) -> None:
        """Queue one change of a row of ``table`` (None: absent), coalesced with the queued
        one of the same key: a lookup, and at most one delete and one insert
        (``planner.write_bounds.ENQUEUE_OPS``)."""
        row = after if after is not None else before
        assert row is not None
        row_key = key_text([row[c] for c in table.primary_key])
        now, residents = self.now(), self.residents
        # an update is two calls in one transaction: its delete half (before and after),
        # which queues the whole change, and its insert half (the same after, next)
        second_half = before is None and self._replacing == (table.name, row_key, after)
        self._replacing = (table.name, row_key, after) if before and after else None
        if second_half:
            return  # the delete half queued the whole update: (before, after)
        self.observed.arrive((table.name, row_key), now)
        if not self.policy.lossy and table.name.lower() not in self.as_of:  # one per change
            self._write(QueuedChange(table.name, f"{row_key}@{now}", RowChange(
                _values(table, before), _values(table, after)), now, now, now, 1))
            self.residents += 1
            return
        change = RowChange(_values(table, before), _values(table, after))
        key = {"base": table.name, "row_key": row_key}
        found = self.store.get(QUEUE_TABLE, key)
        queued = None if found is None else _decode(found)
        if queued is not None:
            self.store.delete(QUEUE_TABLE, key)
            combined = net_change(queued.change, change)
            if combined is None:
                self.residents = max(0, self.residents - 1)
                return
            change = combined
        else:
            self.residents += 1
        first = now if queued is None else queued.first_enqueued
        cut = first if queued is None else queued.cut
        if cut >= 0 and self._slow((table.name, row_key), now, residents):
            cut = -now  # to the front, behind earlier cutters
        self._write(QueuedChange(table.name, row_key, change, first, now, cut,
                                 1 if queued is None else queued.updates + 1))

    def stamp(self, base: str, row_key: str) -> int:
        """The time of an insert the store's trigger queues (``runtime.queue_triggers``):
        one reading of the clock per insert, however often the trigger asks. The insert
        counts in the key's rate statistics, as :meth:`enqueue` counts it, unless it is an
        update's insert half (its delete half queued the whole change)."""
        if self._stamped is not None and self._stamped[0] == (base, row_key):
            return self._stamped[1]
        key, now, residents = (base, row_key), self.now(), self.residents
        replacing, self._replacing = self._replacing, None
        cut = now
        if replacing is None or replacing[:2] != key:
            self.observed.arrive(key, now)
            self.residents += 1  # an estimate: the insert may coalesce with a queued delete
            if self._slow(key, now, residents):
                cut = -now  # to the front, behind earlier cutters
        self._stamped = (key, now, cut)
        return now

    def cut(self, base: str, row_key: str) -> int:
        """The LINECUTTING place of that insert: its time, or minus it for a slow updater."""
        self.stamp(base, row_key)
        assert self._stamped is not None
        return self._stamped[2]

    def new_transaction(self) -> None:
        """A write transaction begins (or a write queued no delete half): no update's
        delete half is pending."""
        self._replacing = None

    def holds(self, table: str, key: list[Any]) -> bool:
        """Is a change of the ``table`` row with primary key values ``key`` queued? One
        lookup (of a table read as of the queue, whose entries are keyed by row)."""
        return self.store.get(QUEUE_TABLE, {"base": table, "row_key": key_text(key)}) is not None

    def _slow(self, key: tuple[str, str], now: int, residents: int) -> bool:
        """§5.3's test with this process's statistics (the key's rate per ns) and the
        residents when the key changed."""
        cost = self.cost_ns if self.cost_ns is not None else (
            self.draining_ns // self.dequeued if self.dequeued else DEFAULT_COST_NS)
        return is_slow_updater(self.rates(key, now), cost, residents)

    def _write(self, entry: QueuedChange) -> None:
        self.store.insert(QUEUE_TABLE, dict(zip(COLUMNS, (
            entry.base, entry.row_key, entry.first_enqueued, entry.last_enqueued, entry.cut,
            _encode(entry.change.before), _encode(entry.change.after), entry.updates))))

    # -- maintainers --------------------------------------------------------
    def head(self, limit: int = DRAIN_BATCH, policy: Optional[QueuePolicy] = None
             ) -> list[QueuedChange]:
        """The first ``limit`` entries in ``policy``'s service order (set-oriented, not
        counted), left in the queue."""
        return [_decode(r) for r in self.store.sql(self._select(policy or self.policy, limit))]

    def claim(self, limit: int, policy: Optional[QueuePolicy] = None) -> list[QueuedChange]:
        """Inside a write transaction: claim the first ``limit`` entries in service order,
        each to be applied, then removed (:meth:`remove`): until then it is still queued,
        so rules run as of the queue skip its row. On PostgreSQL the rows are claimed
        ``FOR UPDATE SKIP LOCKED``, so concurrent maintainers never take one entry twice;
        on SQLite the transaction holds the single write lock. Rolled back with the
        transaction, the entries are back."""
        locking = " FOR UPDATE SKIP LOCKED" if self.store.dialect == "postgres" else ""
        return [_decode(r) for r in self.store.sql(
            self._select(policy or self.policy, limit) + locking)]

    def remove(self, entry: QueuedChange) -> None:
        """Take an applied entry out of the queue."""
        self.store.delete(QUEUE_TABLE, {"base": entry.base, "row_key": entry.row_key})

    def _select(self, policy: QueuePolicy, limit: int) -> str:
        q = self._q
        order = q(ORDER[policy]) if policy is not QueuePolicy.LINECUTTING else \
            LINECUTTING_ORDER.format(cut=q("cut"))
        return (f"SELECT {', '.join(q(c) for c in COLUMNS)} FROM {q(QUEUE_TABLE)} "
                f"ORDER BY {order}, {q('base')}, {q('row_key')} LIMIT {int(limit)}")

    def __len__(self) -> int:
        return self.store.sql(f"SELECT COUNT(*) FROM {self._q(QUEUE_TABLE)}")[0][0]

    def oldest(self, tables: Iterable[str]) -> Optional[int]:
        """The first arrival of the oldest pending change of ``tables`` (None: none)."""
        names = sorted(set(tables))
        if not names:
            return None
        marks = ", ".join(self._param(f"t{i}") for i in range(len(names)))
        (value,), = self.store.sql(
            f"SELECT MIN({self._q('first_enqueued')}) FROM {self._q(QUEUE_TABLE)} "
            f"WHERE {self._q('base')} IN ({marks})", {f"t{i}": n for i, n in enumerate(names)})
        return value

    def stats(self, now_ns: Optional[int] = None) -> QueueStats:
        """The queue's length and per-key queue staleness now (§5.1), and this process's
        dequeue rate."""
        now = self.clock() if now_ns is None else now_ns
        rows = self.store.sql(f"SELECT {self._q('base')}, {self._q('row_key')}, "
                              f"{self._q('first_enqueued')}, {self._q('updates')} "
                              f"FROM {self._q(QUEUE_TABLE)}")
        per_key: dict[tuple[str, str], float] = {}
        for base, row_key, first, _ in rows:
            key = (base, row_key.rsplit("@", 1)[0] if not self.policy.lossy else row_key)
            per_key[key] = max(per_key.get(key, 0.0), max(0, now - first) / 1e6)
        ages = sorted(per_key.values())
        return QueueStats(
            len(rows), sum(r[3] for r in rows), ages[-1] if ages else 0.0,
            sum(ages) / len(ages) if ages else 0.0,
            ages[min(len(ages) - 1, int(0.99 * len(ages)))] if ages else 0.0, per_key,
            self.dequeued, self.dequeued / (self.draining_ns / 1e9) if self.draining_ns else 0.0)

    def _q(self, name: str) -> str:
        from piql import sqlgen

        return sqlgen.identifier(name, self.store.dialect)

    def _param(self, name: str) -> str:
        return f"%({name})s" if self.store.dialect == "postgres" else f":{name}"


def drain(maintainer: "Maintainer", queue: StoreQueue,
          in_transaction: Callable[[Callable[[], Any]], Any], *, limit: Optional[int] = None,
          batch: int = DRAIN_BATCH, policy: Optional[QueuePolicy] = None) -> int:
    """Apply pending entries in ``policy``'s service order (default: the queue's), until
    the queue is empty or ``limit`` entries were applied: a batch of at most ``batch`` per
    transaction (``in_transaction``), claimed, applied and removed together. The work of a
    transaction is bounded: ``batch`` times the delta rules' bound of one entry. Returns
    how many entries were applied."""
    applied = 0
    while limit is None or applied < limit:
        size = batch if limit is None else min(batch, limit - applied)
        start = time.perf_counter_ns()
        done = in_transaction(lambda: _apply_batch(maintainer, queue, size, policy))
        if not done:
            return applied
        queue.dequeued += done
        queue.draining_ns += time.perf_counter_ns() - start
        applied += done
    return applied


def _apply_batch(maintainer: "Maintainer", queue: StoreQueue, size: int,
                 policy: Optional[QueuePolicy]) -> int:
    entries = queue.claim(size, policy)
    for entry in entries:  # one after the other: each applied as of the ones after it
        table = maintainer.catalog.table(entry.base)
        assert table is not None, entry.base
        maintainer.apply_deferred(table, _row(table, entry.change.before),
                                  _row(table, entry.change.after))
        queue.remove(entry)
    if entries:
        queue.residents = len(queue)
    return len(entries)

# -- rows as text ---------------------------------------------------------------------

def _values(table: Table, row: Optional[dict[str, Any]]) -> Optional[tuple[Any, ...]]:
    return None if row is None else tuple(row[c] for c in table.column_names)


def _row(table: Table, values: Optional[tuple[Any, ...]]) -> Optional[dict[str, Any]]:
    return None if values is None else dict(zip(table.column_names, values))


def key_text(values: list[Any]) -> str:
    """A row's primary key as the queue's ``row_key``: the same for the values a writer
    gives and those the store reads back (an integral number is an int, whatever its type)."""
    return _encode([_canonical(v) for v in values]) or ""


def _canonical(value: Any) -> Any:
    if not isinstance(value, (float, Decimal)):
        return value
    try:
        if value == int(value):
            return int(value)
    except (OverflowError, ValueError, ArithmeticError):
        return value  # NaN, an infinity: as it is
    return (Decimal(repr(value)) if isinstance(value, float) else value).normalize()


def _encode(values: Optional[Any]) -> Optional[str]:
    """Values as JSON; BLOBs and exact decimals tagged so they come back as they were
    (floats round-trip exactly: JSON keeps their shortest repr)."""
    if values is None:
        return None
    # non-ASCII text as itself, as SQLite's json_array writes it (the store's triggers)
    return json.dumps([_tagged(v) for v in values], separators=(",", ":"), ensure_ascii=False)


def _tagged(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"blob": bytes(value).hex()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    return value


def _untagged(value: Any) -> Any:
    if isinstance(value, dict):
        if "blob" in value:
            return bytes.fromhex(value["blob"])
        if "double" in value:  # its 8 bytes, as PostgreSQL's trigger writes a double
            return struct.unpack(">d", bytes.fromhex(value["double"]))[0]
        return Decimal(value["decimal"])
    return value


def _decoded(text: Optional[str]) -> Optional[tuple[Any, ...]]:
    return None if text is None else tuple(_untagged(v) for v in json.loads(text))


def _decode(row: tuple) -> QueuedChange:
    base, row_key, first, last, cut, before, after, updates = row
    return QueuedChange(base, row_key, RowChange(_decoded(before), _decoded(after)), first, last,
                        cut, updates)
