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

On PostgreSQL the trigger is the database's own (PL/pgSQL, :func:`postgres_trigger`), so
any client's plain INSERT queues; it asks nothing of the process (see below).
"""
from __future__ import annotations

from typing import Any, Callable

from piql import sqlgen
from piql.catalog import Table
from piql.sql_types import TypeFamily, family
from piql.planner.trigger_rules import BULK, PREFIX
from piql.runtime.update_queue import KEY as UPDATE_KEY
from piql.runtime.update_queue import COLUMNS, QUEUE_TABLE, StoreQueue, _encode, key_text

CUT = f"{PREFIX}queue_cut"  # (base, row_key) -> its time, or minus it: a slow updater
KEY = f"{PREFIX}queue_key"  # (values...) -> the key as piql's enqueue writes it
ROW = f"{PREFIX}queue_row"  # (values...) -> the row as piql's enqueue writes it


def _q(name: str) -> str:
    return sqlgen.identifier(name, "sqlite")


def _pg(name: str) -> str:
    return sqlgen.identifier(name, "postgres")


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


# -- PostgreSQL ------------------------------------------------------------------------
# The trigger is part of the database, so a plain INSERT from any client queues. It asks
# nothing of the writing process: the time is the server's clock (clock_timestamp, in ns
# of whole microseconds: two inserts in one microsecond tie, served by key), and the place
# is IN-PLACE's (LINECUTTING's slow-updater test needs a process's rate statistics). A
# piql process that enqueues itself (APPEND, LINECUTTING) says so in its transactions
# (``ENQUEUE``), and the trigger leaves its inserts to it.
ENQUEUE = "piql.enqueue"  # a transaction-local setting: 'piql', the process queues itself
_PLAIN = (TypeFamily.INTEGER, TypeFamily.BOOLEAN, TypeFamily.TEXT)


def enqueue_function(table: str) -> str:
    """The name of ``table``'s enqueue trigger function on PostgreSQL."""
    return f"{PREFIX}{table}_enqueue"


def postgres_ready(table: Table) -> bool:
    """Can the server encode ``table``'s rows as piql does? Integers (booleans are kept as
    0/1) and text only: JSON of a double or a numeric is not Python's text of it."""
    return all(family(c.type) in _PLAIN for c in table.columns)


def postgres_trigger(table: Table) -> list[str]:
    """The AFTER INSERT trigger of ``table`` queueing its inserted rows (and its
    function), as statements."""
    def array(columns: tuple[str, ...] | list[str]) -> str:
        # piql's JSON text exactly: no spaces (json_build_array writes ", "), SQL NULL
        # as null; to_json escapes a string as Python's json.dumps(ensure_ascii=False)
        items = ", ".join(f"coalesce(to_json(NEW.{_pg(c)})::text, 'null')" for c in columns)
        return f"'[' || concat_ws(',', {items}) || ']'"

    function, queue = _pg(enqueue_function(table.name)), _pg(QUEUE_TABLE)
    columns = ", ".join(_pg(c) for c in COLUMNS)
    after, last, updates = _pg("after_row"), _pg("last_enqueued"), _pg("updates")
    body = "\n".join([
        "DECLARE stamp bigint;",
        "BEGIN",
        f"  IF current_setting('{ENQUEUE}', true) = 'piql'",
        f"     OR current_setting('{BULK}', true) = 'on' THEN",
        "    RETURN NULL;  -- the process queues itself; a bulk load rebuilds the views",
        "  END IF;",
        "  stamp := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000;",
        f"  INSERT INTO {queue} AS q ({columns}) VALUES (",
        f"    {sqlgen.literal(table.name, 'postgres')}, {array(table.primary_key)}, stamp, "
        f"stamp, stamp, NULL, {array(table.column_names)}, 1)",
        f"  ON CONFLICT ({', '.join(_pg(c) for c in UPDATE_KEY)}) DO UPDATE SET "
        f"{after} = EXCLUDED.{after}, {last} = EXCLUDED.{last}, {updates} = q.{updates} + 1",
        # a queued entry with a new row is an update whose delete half queued it whole
        f"  WHERE q.{after} IS NULL;",
        "  RETURN NULL;",
        "END"])
    trigger, target = _pg(enqueue_function(table.name)), _pg(table.name)
    return [
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$piql$\n{body} $piql$",
        f"DROP TRIGGER IF EXISTS {trigger} ON {target}",
        f"CREATE TRIGGER {trigger} AFTER INSERT ON {target} FOR EACH ROW EXECUTE FUNCTION "
        f"{function}()"]


def postgres_drop(table: Table) -> list[str]:
    """Drop ``table``'s enqueue trigger and its function, if made (for an earlier plan)."""
    name = _pg(enqueue_function(table.name))
    return [f"DROP TRIGGER IF EXISTS {name} ON {_pg(table.name)}",
            f"DROP FUNCTION IF EXISTS {name}()"]
