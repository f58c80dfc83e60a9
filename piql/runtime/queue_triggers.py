"""The enqueue of an asynchronous view's insert, made by the store's own trigger (issue 20).

An insert into a table whose asynchronous views have insert rules is then one statement
from piql's side, as a plain insert is (``Maintainer.insert_at_once``): the database checks
the row (its key; CARDINALITY and FOREIGN KEYs in its BEFORE triggers, refusing the whole
statement), writes it, and its AFTER trigger here queues the change in
``_piql_update_queue``, all in the one statement: a refused insert enqueues nothing.

On SQLite the trigger is the connection's own (``TEMP``, as the plan's other triggers) and
asks four functions of the connection (:func:`functions`) for what only the writing
process knows: the queue's clock (the virtual one of ``piql bench queues`` too), the
LINECUTTING test with this process's rate statistics (§5.3), and the update in progress
(an update's delete half, in piql's write path, queued the whole change already: its
insert half queues nothing more). The row and its key are encoded as the Python enqueue
encodes them (``update_queue._encode``, ``key_text``), so lookups by key
(``StoreQueue.holds``) find trigger-made entries.

The entry coalesces as ``StoreQueue.enqueue`` does: a new key is a new entry
(``(None, row)``); an insert of a key whose delete is queued (``(old, None)``) becomes the
update ``(old, row)`` in its place (IN-PLACE: its first arrival and cut kept; a slow
updater cuts to the front). Under the append queue (no coalescing) each insert is an entry
of its own, keyed ``row_key@now``, except on the tables read as of the queue.
"""
from __future__ import annotations

from typing import Any, Callable

from piql import sqlgen
from piql.catalog import Table
from piql.planner.trigger_rules import PREFIX
from piql.runtime.update_queue import COLUMNS, KEY, QUEUE_TABLE, StoreQueue, _encode

ARRIVE = f"{PREFIX}queue_arrive"  # (base, key values...) -> 1: enqueue, 0: the update's half
ENTRY_KEY = f"{PREFIX}queue_key"  # () -> the arrival's row_key
NOW = f"{PREFIX}queue_now"  # () -> the arrival's time (ns)
CUT = f"{PREFIX}queue_cut"  # () -> its LINECUTTING place for a new entry (-now: cuts)
ROW = f"{PREFIX}queue_row"  # (values...) -> the row as the queue stores it


def _q(name: str) -> str:
    return sqlgen.identifier(name, "sqlite")


def sqlite_trigger(table: Table) -> str:
    """The AFTER INSERT trigger of ``table`` queueing its inserted rows."""
    name = sqlgen.literal(table.name, "sqlite")
    keys = ", ".join(f"NEW.{_q(c)}" for c in table.primary_key)
    values = ", ".join(f"NEW.{_q(c)}" for c in table.column_names)
    # integers and text as SQLite's JSON writes them, which the queue reads back the same;
    # a REAL (JSON's shortest repr), a BLOB or a NUMERIC column: as piql encodes it
    encode = "json_array" if all(_plain_json(c.type) for c in table.columns) else ROW
    columns = ", ".join(_q(c) for c in COLUMNS)
    after, last, cut, updates = _q("after_row"), _q("last_enqueued"), _q("cut"), _q("updates")
    return (
        f"CREATE TEMP TRIGGER IF NOT EXISTS {_q(f'{PREFIX}{table.name}_enqueue')} AFTER INSERT ON "
        f"{_q(table.name)} FOR EACH ROW WHEN {ARRIVE}({name}, {keys})\nBEGIN\n"
        f"  INSERT INTO {_q(QUEUE_TABLE)} ({columns}) VALUES ({name}, {ENTRY_KEY}(), {NOW}(), "
        f"{NOW}(), {CUT}(), NULL, {encode}({values}), 1)\n"
        f"  ON CONFLICT ({', '.join(_q(c) for c in KEY)}) DO UPDATE SET "
        f"{after} = excluded.{after}, {last} = excluded.{last}, "
        f"{cut} = CASE WHEN excluded.{cut} < 0 THEN excluded.{cut} ELSE {cut} END, "
        f"{updates} = {updates} + 1\n"
        # a queued entry with a new row is an update whose delete half queued it whole
        f"  WHERE {after} IS NULL;\nEND")


def _plain_json(declared: str) -> bool:
    """Is a column of this declared type an integer or text in SQLite (its affinity)?"""
    upper = declared.upper()
    if "INT" in upper:
        return True
    return any(t in upper for t in ("CHAR", "CLOB", "TEXT")) and "BLOB" not in upper


def functions(queue: StoreQueue) -> dict[str, tuple[int, Callable[..., Any]]]:
    """The connection functions the triggers call (name -> argument count, function)."""
    def arrive(base: str, *key: Any) -> int:
        return 1 if queue.arrive(base, list(key)) else 0

    return {ARRIVE: (-1, arrive), ENTRY_KEY: (0, lambda: queue.arrival[0]),
            NOW: (0, lambda: queue.arrival[1]), CUT: (0, lambda: queue.arrival[2]),
            ROW: (-1, lambda *values: _encode(values))}
