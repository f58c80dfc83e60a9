"""The enqueue of an asynchronous view's insert, made by the store's own trigger (issue 20).

An insert into a table whose asynchronous views have insert rules is then one statement
from piql's side, as a plain insert is (``Maintainer.insert_at_once``): the database checks
the row (its key; CARDINALITY and FOREIGN KEYs in its BEFORE triggers, refusing the whole
statement), writes it, and its AFTER trigger here queues the change in
``_piql_update_queue``, all in the one statement: a refused insert enqueues nothing.

On SQLite the trigger is the connection's own (``TEMP``, as the plan's other triggers) and
is SQL but for what only the writing process knows, asked of it once per insert
(:meth:`StoreQueue.stamp`): the queue's clock (nanoseconds, never repeating; the virtual
one of ``piql bench queues`` too) and the LINECUTTING test with this process's rate
statistics (§5.3). Python work inside a trigger shows at the insert's tail (measured:
encoding the row and key in Python put its p99 at 2-3x a plain insert's), so the row and
its key are SQLite's ``json_array`` where every column is an integer or text, which the
queue reads back as
piql's own enqueue writes them (``update_queue.key_text``); other columns (REAL, BLOB,
NUMERIC) go through piql's encoding.

The entry coalesces as ``StoreQueue.enqueue`` does: a new key is a new entry
``(None, row)``; an insert of a key whose delete is queued ``(old, None)`` becomes the
update ``(old, row)`` in its place (IN-PLACE: first arrival kept; a slow updater cuts to
the front under LINECUTTING); a queued entry with a new row is an update whose delete
half (piql's write path) queued it whole, and the insert half changes nothing. The
append queue (no coalescing) keeps piql's own enqueue: the trigger is made only for lossy queues and the tables read as of
the queue (whose entries coalesce by key under any policy).
"""
from __future__ import annotations

from typing import Any, Callable

from piql import sqlgen
from piql.catalog import Table
from piql.planner.trigger_rules import PREFIX
from piql.runtime.update_queue import KEY as UPDATE_KEY
from piql.runtime.update_queue import COLUMNS, QUEUE_TABLE, StoreQueue, _encode, key_text

CUT = f"{PREFIX}queue_cut"  # (base, row_key) -> its time, or minus it: a slow updater
KEY = f"{PREFIX}queue_key"  # (values...) -> the key as piql's enqueue writes it
ROW = f"{PREFIX}queue_row"  # (values...) -> the row as piql's enqueue writes it


def _q(name: str) -> str:
    return sqlgen.identifier(name, "sqlite")


def sqlite_trigger(table: Table) -> str:
    """The AFTER INSERT trigger of ``table`` queueing its inserted rows."""
    name = sqlgen.literal(table.name, "sqlite")
    keys = ", ".join(f"NEW.{_q(c)}" for c in table.primary_key)
    values = ", ".join(f"NEW.{_q(c)}" for c in table.column_names)
    plain = {c.name: _plain_json(c.type) for c in table.columns}
    key = f"{'json_array' if all(plain[c] for c in table.primary_key) else KEY}({keys})"
    row = f"{'json_array' if all(plain.values()) else ROW}({values})"
    cut = f"{CUT}({name}, {key})"
    columns = ", ".join(_q(c) for c in COLUMNS)
    after, last, place, updates = (_q("after_row"), _q("last_enqueued"), _q("cut"),
                                   _q("updates"))
    return (
        f"CREATE TEMP TRIGGER IF NOT EXISTS {_q(f'{PREFIX}{table.name}_enqueue')} AFTER "
        f"INSERT ON {_q(table.name)} FOR EACH ROW\nBEGIN\n"
        # one ask of the process: its place under LINECUTTING, minus the time if it cuts
        f"  INSERT INTO {_q(QUEUE_TABLE)} ({columns}) SELECT {name}, {key}, abs(p), abs(p), "
        f"p, NULL, {row}, 1 FROM (SELECT {cut} AS p) WHERE true\n"
        f"  ON CONFLICT ({', '.join(_q(c) for c in UPDATE_KEY)}) DO UPDATE SET "
        f"{after} = excluded.{after}, {last} = excluded.{last}, {place} = CASE WHEN "
        f"excluded.{place} < 0 THEN excluded.{place} ELSE {place} END, "
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
    return {CUT: (2, queue.cut), KEY: (-1, lambda *values: key_text(list(values))),
            ROW: (-1, lambda *values: _encode(values))}
