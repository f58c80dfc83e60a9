"""The enqueue of an asynchronous view's insert, made by the store's own trigger (issue 20).

An insert into a table whose asynchronous views have insert rules is then one statement
from piql's side, as a plain insert is (``Maintainer.insert_at_once``): the database checks
the row (its key; CARDINALITY and FOREIGN KEYs in its BEFORE triggers, refusing the whole
statement), writes it, and its AFTER trigger here queues the change in
``_piql_update_queue``, all in the one statement: a refused insert enqueues nothing.

On SQLite the triggers are the connection's own (``TEMP``, as the plan's other triggers)
and SQL alone (:class:`Stamp`): the time is SQLite's clock (whole milliseconds, read once
per statement) and the place under LINECUTTING is IN-PLACE's, as on PostgreSQL. A call
into the process inside a trigger shows at the insert's tail (measured: a clock and
slow-updater call per insert put the async twoTags insert's p50 at 1.65x a plain one's,
a clock call alone at 1.38x, SQL alone at 1.29x), so the process is asked only when it
must be: under LINECUTTING (the slow-updater test with its rate statistics, §5.3:
:meth:`StoreQueue.cut`) or when its clock is a virtual one (``piql bench queues``,
tests). The row is SQLite's ``json_array``: integers and text as themselves, a double
with 17 significant digits (``json_array``'s 15 lose bits), a BLOB tagged as piql tags it,
so the queue decodes the values the table holds. The key is ``json_array`` where every
key column is an integer or text, the text piql's own enqueue writes
(``update_queue.key_text``); a key with other columns goes through piql's encoding (its
text canonicalises numbers, which SQL cannot write alike).

The entry coalesces as ``StoreQueue.enqueue`` does: a new key is a new entry
``(None, row)``; an insert of a key whose delete is queued ``(old, None)`` becomes the
update ``(old, row)`` in its place (IN-PLACE: first arrival kept; a slow updater cuts to
the front under LINECUTTING); a queued entry with a new row is an update whose delete
half (piql's write path) queued it whole, and the insert half changes nothing. The
append queue (no coalescing) keeps piql's own enqueue: the triggers are made only for
lossy queues and the tables read as of the queue (whose entries coalesce by key under any
policy).

Deletes and updates made by plain SQL (not piql's write path, which queues its own: on
SQLite it says so to the trigger, ``OWN``; on PostgreSQL its transactions do, ``ENQUEUE``)
are queued by AFTER DELETE and AFTER UPDATE triggers with the same coalescing
(``update_queues.net_change``: an insert then a delete cancel, an update chain keeps the
first old row and the last new one; an update moving a row to another key is a delete
and an insert). A table read as of the queue holds only inserts there: a change of a
queued row rewrites or cancels its entry, and a change of a row its views have applied
is refused, since their delete rules must run in the write (``runtime.writes``).

On PostgreSQL the triggers are the database's own (PL/pgSQL, :func:`postgres_trigger`),
so any client's plain INSERT, DELETE or UPDATE queues; they ask nothing of the process
(see below).
"""
from __future__ import annotations

import enum
from typing import Any, Callable

from piql import sqlgen
from piql.catalog import Table
from piql.sql_types import TypeFamily, family, postgres_type
from piql.planner.trigger_rules import BULK, PREFIX
from piql.runtime.update_queue import KEY as UPDATE_KEY
from piql.runtime.update_queue import COLUMNS, QUEUE_TABLE, StoreQueue, key_text

CUT = f"{PREFIX}queue_cut"  # (base, row_key) -> its time, or minus it: a slow updater
KEY = f"{PREFIX}queue_key"  # (values...) -> the key as piql's enqueue writes it
CLOCK = f"{PREFIX}queue_clock"  # () -> the process's clock (ns, never repeating)
OWN = f"{PREFIX}queue_own"  # () -> 1 while piql's write path deletes (it queues itself)
# SQLite's clock in the queue's unit (ns), of whole milliseconds: 'now' is read once per
# statement, so every row of one statement has the same time (unixepoch('subsec') needs
# SQLite 3.42; julianday('now') is its millisecond count over 86,400,000, so round is exact)
SQLITE_NOW = "(CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER) * 1000000)"
_MAX_REAL = "1.7976931348623157e308"  # the largest finite double


def _q(name: str) -> str:
    return sqlgen.identifier(name, "sqlite")


def _pg(name: str) -> str:
    return sqlgen.identifier(name, "postgres")


class Stamp(enum.Enum):
    """Where a SQLite trigger's entry gets its time and LINECUTTING place."""

    SQL = "sql"  # SQLite's clock; IN-PLACE's place: no call into the process
    CLOCK = "clock"  # the process's clock (a virtual one); IN-PLACE's place
    CUT = "cut"  # the process's clock and slow-updater test (:meth:`StoreQueue.cut`)

    @classmethod
    def of(cls, queue: StoreQueue) -> "Stamp":
        if queue.stamps:
            return cls.CUT
        return cls.CLOCK if queue.own_clock else cls.SQL


def sqlite_triggers(table: Table, stamp: Stamp, as_of: bool, changes: bool = True,
                    read: frozenset[str] | None = None) -> list[str]:
    """The triggers of ``table`` queueing its changes: every insert, and (``changes``:
    asynchronous views read its deletes) deletes and updates other than piql's own (its
    write path queues those). ``as_of``: the table is read as of the queue, whose entries
    of it are inserts only (``runtime.as_of``). ``read``: the columns the asynchronous
    views read (``async_views.columns_read``; None: any), the only ones whose update is
    queued: one changing none of them (nor the key) is no change the views could see."""
    return [_sqlite_insert(table, stamp),
            *(_sqlite_changes(table, stamp, as_of, read) if changes else [])]


def sqlite_drops(table: Table) -> list[str]:
    """Drop ``table``'s enqueue triggers (to make them again, stamped or not)."""
    return [f"DROP TRIGGER IF EXISTS temp.{_q(_trigger_name(table, event))}"
            for event in ("insert", "delete", "update")]


def _trigger_name(table: Table, event: str) -> str:
    return f"{PREFIX}{table.name}_enqueue" + ("" if event == "insert" else f"_{event}")


class _SQLiteEntry:
    """The pieces of a trigger's queue statements for one table (NEW or OLD rows)."""

    def __init__(self, table: Table, stamp: Stamp) -> None:
        self.table, self.stamped, self.stamp = table, stamp is Stamp.CUT, stamp
        self.name = sqlgen.literal(table.name, "sqlite")
        self.plain = {c.name: _plain_json(c.type) for c in table.columns}
        self.key_function = "json_array" if all(
            self.plain[c] for c in table.primary_key) else KEY

    def key(self, row: str) -> str:
        values = (f"{row}.{_q(c)}" for c in self.table.primary_key)
        return f"{self.key_function}({', '.join(values)})"

    def row(self, row: str) -> str:
        """The row as JSON that piql's decoding gives back as the values stored."""
        values = (self._value(f"{row}.{_q(c)}", self.plain[c]) for c in self.table.column_names)
        return f"json_array({', '.join(values)})"

    @staticmethod
    def _value(value: str, plain: bool) -> str:
        """One value of the row: an integer or text as itself; a double with 17 digits
        (json_array writes 15, losing bits; ±Inf as ±1e999, which Python reads as
        infinite; NaN is no value SQLite keeps); a BLOB tagged as piql tags it."""
        if plain:
            return value
        return (f"CASE typeof({value}) WHEN 'real' THEN json(CASE WHEN {value} > {_MAX_REAL} "
                f"THEN '1e999' WHEN {value} < -{_MAX_REAL} THEN '-1e999' ELSE "
                f"printf('%!.17g', {value}) END) WHEN 'blob' THEN json_object('blob', "
                f"lower(hex({value}))) ELSE {value} END")

    def place(self, row: str) -> str:
        """The change's place under LINECUTTING: its time, or minus it for a slow updater."""
        if self.stamped:
            return f"{CUT}({self.name}, {self.key(row)})"
        return f"{CLOCK}()" if self.stamp is Stamp.CLOCK else SQLITE_NOW

    def time(self, row: str) -> str:
        return f"abs({self.place(row)})" if self.stamped else self.place(row)

    def upsert(self, row: str, before: str, after: str, on_conflict: str,
               where: str = "true", unless: str = "") -> str:
        """Queue a new entry of ``row``'s key, or coalesce with the queued one (``unless``:
        a condition on the queued entry under which it is left as it is)."""
        columns = ", ".join(_q(c) for c in COLUMNS)
        time = "abs(p)" if self.stamped else "p"
        keep = f"\n  WHERE NOT ({unless})" if unless else ""
        return (f"  INSERT INTO {_q(QUEUE_TABLE)} ({columns}) SELECT {self.name}, "
                f"{self.key(row)}, {time}, {time}, p, {before}, {after}, 1 FROM (SELECT "
                f"{self.place(row)} AS p) WHERE {where}\n"
                f"  ON CONFLICT ({', '.join(_q(c) for c in UPDATE_KEY)}) DO UPDATE SET "
                f"{on_conflict}, {self.coalesced()}{keep};")

    def coalesced(self) -> str:
        """The columns every coalescing sets: the last arrival, the place, the count."""
        last, place, updates = _q("last_enqueued"), _q("cut"), _q("updates")
        cut = (f", {place} = CASE WHEN excluded.{place} < 0 THEN excluded.{place} ELSE "
               f"{place} END" if self.stamped else "")
        # max: a change piql queued (ns) may be later than SQLite's millisecond
        return (f"{last} = max({last}, excluded.{last}){cut}, {updates} = {updates} + 1")

    def matches(self, row: str) -> str:
        return (f"{_q('base')} = {self.name} AND {_q('row_key')} = {self.key(row)}")

    def trigger(self, event: str, body: list[str], when: str = "") -> str:
        condition = f" WHEN {when}" if when else ""
        return (f"CREATE TEMP TRIGGER IF NOT EXISTS {_q(_trigger_name(self.table, event))} "
                f"AFTER {event.upper()} ON {_q(self.table.name)} FOR EACH ROW{condition}\n"
                f"BEGIN\n" + "\n".join(body) + "\nEND")


def _sqlite_insert(table: Table, stamp: Stamp) -> str:
    """The AFTER INSERT trigger: a new key is a new entry ``(None, row)``; an insert of a
    key whose delete is queued becomes the update ``(old, row)`` in its place."""
    entry, after = _SQLiteEntry(table, stamp), _q("after_row")
    # a queued entry with a new row is an update whose delete half queued it whole
    return entry.trigger("insert", [entry.upsert(
        "NEW", "NULL", entry.row("NEW"), f"{after} = excluded.{after}",
        unless=f"{after} IS NOT NULL")])


def _sqlite_changes(table: Table, stamp: Stamp, as_of: bool,
                    read: frozenset[str] | None = None) -> list[str]:
    """The AFTER DELETE and AFTER UPDATE triggers, for deletes and updates not made by
    piql's write path (a plain SQL statement on piql's connection); an update changing no
    column of ``read`` nor the key fires nothing (piql's one-statement update of a column
    no asynchronous view reads, ``Maintainer.replace_unseen_at_once``, is one)."""
    entry = _SQLiteEntry(table, stamp)
    after, before = _q("after_row"), _q("before_row")
    same = " AND ".join(f"NEW.{_q(c)} IS OLD.{_q(c)}" for c in table.primary_key)

    def delete(where: str = "true") -> list[str]:
        if as_of:  # its entries are inserts: a queued one cancels, a seen row is refused
            return [f"  DELETE FROM {_q(QUEUE_TABLE)} WHERE {entry.matches('OLD')} AND "
                    f"{where};"]
        # an insert then a delete cancel; an update then a delete is the old row's delete
        return [entry.upsert("OLD", entry.row("OLD"), "NULL", f"{after} = NULL", where),
                f"  DELETE FROM {_q(QUEUE_TABLE)} WHERE {entry.matches('OLD')} AND "
                f"{before} IS NULL AND {after} IS NULL AND {where};"]

    def insert(where: str) -> list[str]:
        return [entry.upsert("NEW", "NULL", entry.row("NEW"), f"{after} = excluded.{after}",
                             where)]

    def update(where: str) -> list[str]:  # the key kept: the first old row, the new row
        if as_of:
            return [f"  UPDATE {_q(QUEUE_TABLE)} SET {after} = {entry.row('NEW')}, "
                    f"{_q('last_enqueued')} = max({_q('last_enqueued')}, {entry.time('NEW')}), "
                    f"{_q('updates')} = {_q('updates')} + 1 WHERE {entry.matches('OLD')} "
                    f"AND {where};"]
        return [entry.upsert("NEW", entry.row("OLD"), entry.row("NEW"),
                             f"{after} = excluded.{after}", where)]

    refuse = [] if not as_of else [
        f"  SELECT RAISE(ABORT, {sqlgen.literal(_refusal(table), 'sqlite')}) WHERE NOT EXISTS "
        f"(SELECT 1 FROM {_q(QUEUE_TABLE)} WHERE {entry.matches('OLD')});"]
    own = f"NOT {OWN}()"
    seen = own if read is None else f"NOT ({_unchanged(table, read)}) AND {own}"
    return [entry.trigger("delete", refuse + delete(), own),
            entry.trigger("update", refuse + update(same) + delete(f"NOT ({same})")
                          + insert(f"NOT ({same})"), seen)]


def _unchanged(table: Table, read: frozenset[str]) -> str:
    """SQL: an update leaves the key and every column of ``read`` as they were."""
    named = {c.lower() for c in (*table.primary_key, *read)}
    columns = [c for c in table.column_names if c.lower() in named]
    return " AND ".join(f"NEW.{_q(c)} IS OLD.{_q(c)}" for c in columns)


THROUGH_PIQL = "goes through piql"  # in the refusal of a change only piql's path can queue


def _refusal(table: Table) -> str:
    return (f"piql: a delete or update of a {table.name} row that asynchronous join views "
            f"have applied {THROUGH_PIQL} (their delete rules run in the write, as of "
            "the queue): use db.delete / db.update")


def _plain_json(declared: str) -> bool:
    """Is a column of this declared type an integer or text in SQLite (its affinity)?"""
    upper = declared.upper()
    if "INT" in upper:
        return True
    return any(t in upper for t in ("CHAR", "CLOB", "TEXT")) and "BLOB" not in upper


def functions(queue: StoreQueue) -> dict[str, tuple[int, Callable[..., Any]]]:
    """The connection functions the triggers call (name -> argument count, function)."""
    return {CUT: (2, queue.cut), KEY: (-1, lambda *values: key_text(list(values))),
            OWN: (0, lambda: queue.own),
            CLOCK: (0, queue.now)}


# -- PostgreSQL ------------------------------------------------------------------------
# The triggers are part of the database, so a plain write from any client queues. They ask
# nothing of the writing process: the time is the server's clock (clock_timestamp, in ns
# of whole microseconds: two inserts in one microsecond tie, served by key), and the place
# is IN-PLACE's (LINECUTTING's slow-updater test needs a process's rate statistics), or,
# under the append queue, an entry per change. A piql process that enqueues itself (APPEND,
# LINECUTTING) says so in its transactions (``ENQUEUE``), and the trigger leaves its
# changes to it. Every column type is encoded as piql decodes it (:func:`_pg_value`).
ENQUEUE = "piql.enqueue"  # a transaction-local setting: who queues this transaction's changes
OWN_ALL = "piql"  # the process queues all of them itself (APPEND, LINECUTTING)
# it queues its deletes and updates (its write path: a DELETE, then an INSERT), not
# inserts nor its one-statement UPDATEs (``Maintainer.replace_at_once``)
OWN_CHANGES = "deletes"
# key columns the server writes as piql's ``key_text`` does (an integral DOUBLE or DECIMAL
# is an int there, any other a tagged shortest decimal: not SQL's text of it)
_KEY_FAMILIES = (TypeFamily.INTEGER, TypeFamily.BOOLEAN, TypeFamily.TEXT)


def enqueue_function(table: str) -> str:
    """The name of ``table``'s enqueue trigger function on PostgreSQL."""
    return f"{PREFIX}{table}_enqueue"


def change_function(table: str) -> str:
    """The name of ``table``'s delete-and-update enqueue trigger function on PostgreSQL."""
    return f"{PREFIX}{table}_enqueue_change"


def postgres_ready(table: Table) -> bool:
    """Can the server encode ``table``'s changes as piql does? Every row can be
    (:func:`_pg_value`); the key must be the text piql's enqueue looks up
    (``update_queue.key_text``): integer, boolean, text or BLOB key columns."""
    return all(family(c.type) in _KEY_FAMILIES or _pg_type(c.type) == "BYTEA"
               for c in table.columns if c.name in table.primary_key)


def _pg_type(declared: str) -> str:
    return postgres_type(declared).split()[0]


def _pg_value(row: str, table: Table, column: str) -> str:
    """One value of ``row`` (NEW or OLD) as JSON text that piql's decoding
    (``update_queue._decoded``) gives back as the value psycopg reads from the table:

    - a DOUBLE as its 8 bytes, tagged (``{"double": hex}``, ``float8send``): exact for
      every double, -0.0, ±Infinity and NaN included, whatever the session's
      ``extra_float_digits``;
    - a NUMERIC exactly: an integral one as its integer text (an int, as piql's
      PostgreSQL store reads it: ``postgres_store._plain``), any other tagged as piql tags
      a ``Decimal`` (``{"decimal": text}``), whose double is the one the store reads, and
      whose sum (a view's SUM, NUMERIC) is the query's exact SUM;
    - a BYTEA tagged as piql tags a BLOB (``{"blob": hex}``);
    - integers (booleans are 0/1) and text as ``to_json`` writes them (a string escaped as
      Python's ``json.dumps(ensure_ascii=False)``)."""
    value = f"{row}.{_pg(column)}"
    declared = next(c.type for c in table.columns if c.name == column)
    kind, pg_type = family(declared), _pg_type(declared)

    if kind is TypeFamily.REAL:
        text = f"""'{{"double":"' || encode(float8send({value}), 'hex') || '"}}'"""
    elif kind is TypeFamily.DECIMAL:
        text = (f"CASE WHEN {value} = trunc({value}) THEN trunc({value})::text "
                f"""ELSE '{{"decimal":"' || {value}::text || '"}}' END""")
    elif pg_type == "BYTEA":
        text = f"""'{{"blob":"' || encode({value}, 'hex') || '"}}'"""
    else:
        return f"coalesce(to_json({value})::text, 'null')"
    return f"coalesce({text}, 'null')"


def _pg_array(row: str, table: Table, columns: tuple[str, ...] | list[str]) -> str:
    """A JSON array of ``row``'s (NEW or OLD) ``columns``, as piql's ``json.dumps`` writes
    it where it is a key (no spaces: json_build_array writes ", "; SQL NULL as null)."""
    items = ", ".join(_pg_value(row, table, c) for c in columns)
    return f"'[' || concat_ws(',', {items}) || ']'"


_STAMP = "  stamp := (extract(epoch FROM clock_timestamp()) * 1000000)::bigint * 1000;"


def postgres_trigger(table: Table, as_of: bool = False, changes: bool = True,
                     read: frozenset[str] | None = None, append: bool = False) -> list[str]:
    """The triggers of ``table`` queueing its changes (and their functions), as statements:
    every insert, and (``changes``: asynchronous views read its deletes) deletes and
    updates other than piql's own (its write path queues those: its transactions say
    so). ``as_of``: the table is read as of the queue, whose entries of it are inserts
    only (``runtime.as_of``). ``read``: the columns its asynchronous views read
    (``async_views.columns_read``; None: all), an update changing none of which queues
    nothing. ``append``: the deployment's queue is the append queue (no coalescing: an
    entry per change, keyed ``key@time`` as piql's own enqueue keys them), except for a
    table read as of the queue, whose entries coalesce by key under any policy."""
    function, queue = _pg(enqueue_function(table.name)), _pg(QUEUE_TABLE)
    columns = ", ".join(_pg(c) for c in COLUMNS)
    after, last, updates = _pg("after_row"), _pg("last_enqueued"), _pg("updates")
    key, row = _pg_array("NEW", table, table.primary_key), _pg_array("NEW", table,
                                                                      table.column_names)
    if append and not as_of:
        queued = [f"  INSERT INTO {queue} ({columns}) VALUES (",
                  f"    {sqlgen.literal(table.name, 'postgres')}, {key} || '@' || stamp, "
                  f"stamp, stamp, stamp, NULL, {row}, 1);"]
    else:
        queued = [
            f"  INSERT INTO {queue} AS q ({columns}) VALUES (",
            f"    {sqlgen.literal(table.name, 'postgres')}, {key}, stamp, stamp, stamp, NULL, "
            f"{row}, 1)",
            f"  ON CONFLICT ({', '.join(_pg(c) for c in UPDATE_KEY)}) DO UPDATE SET "
            f"{after} = EXCLUDED.{after}, {last} = EXCLUDED.{last}, {updates} = q.{updates} + 1",
            # a queued entry with a new row is an update whose delete half queued it whole
            f"  WHERE q.{after} IS NULL;"]
    body = "\n".join([
        "DECLARE stamp bigint;",
        "BEGIN",
        f"  IF current_setting('{ENQUEUE}', true) = '{OWN_ALL}'",
        f"     OR current_setting('{BULK}', true) = 'on' THEN",
        "    RETURN NULL;  -- the process queues itself; a bulk load rebuilds the views",
        "  END IF;",
        _STAMP,
        *queued,
        "  RETURN NULL;",
        "END"])
    trigger, target = _pg(enqueue_function(table.name)), _pg(table.name)
    change = _pg(change_function(table.name))
    inserts = [
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$piql$\n{body} $piql$",
        f"DROP TRIGGER IF EXISTS {trigger} ON {target}",
        f"CREATE TRIGGER {trigger} AFTER INSERT ON {target} FOR EACH ROW EXECUTE FUNCTION "
        f"{function}()"]
    if not changes:
        return inserts + [f"DROP TRIGGER IF EXISTS {change} ON {target}",
                          f"DROP FUNCTION IF EXISTS {change}()"]
    return inserts + [
        f"CREATE OR REPLACE FUNCTION {change}() RETURNS trigger LANGUAGE plpgsql AS "
        f"$piql$\n{_change_body(table, as_of, read, append)} $piql$",
        f"DROP TRIGGER IF EXISTS {change} ON {target}",
        f"CREATE TRIGGER {change} AFTER DELETE OR UPDATE ON {target} FOR EACH ROW EXECUTE "
        f"FUNCTION {change}()"]


def _unread_update(table: Table, read: frozenset[str] | None) -> list[str]:
    """PL/pgSQL leaving an update alone that keeps the key and changes no column the
    asynchronous views read: their rules would take out and put back the same rows, as
    piql's write path knows (``Maintainer._unread_change``; TPC-W's stock update). Such
    an update of a seen row of a table read as of the queue is not refused either."""
    if read is None:
        return []
    columns = [c for c in table.column_names if c in read]
    same = (f"(ROW({', '.join(f'NEW.{_pg(c)}' for c in columns)}) IS NOT DISTINCT FROM "
            f"ROW({', '.join(f'OLD.{_pg(c)}' for c in columns)}))" if columns else "true")
    return [f"  IF new_key = old_key AND {same} THEN",
            "    RETURN NULL;  -- no view sees it",
            "  END IF;"]


def _change_body(table: Table, as_of: bool, read: frozenset[str] | None = None,
                 append: bool = False) -> str:
    """The PL/pgSQL of the delete-and-update trigger: the change coalesced as
    ``update_queues.net_change`` (an insert then a delete cancel, an update chain keeps
    the first old row and the last new one); an update changing the key is the old key's
    delete and the new key's insert. A table read as of the queue holds only queued
    inserts there: a queued row's change rewrites or cancels its entry, and a change of a
    row its views have applied is refused (their delete rules run in piql's write)."""
    append = append and not as_of  # a table read as of the queue coalesces by key
    queue, name = _pg(QUEUE_TABLE), sqlgen.literal(table.name, "postgres")
    columns = ", ".join(_pg(c) for c in COLUMNS)
    after, before, last, updates = (_pg("after_row"), _pg("before_row"), _pg("last_enqueued"),
                                    _pg("updates"))
    conflict = f"ON CONFLICT ({', '.join(_pg(c) for c in UPDATE_KEY)}) DO UPDATE SET"
    coalesced = f"{last} = greatest(q.{last}, EXCLUDED.{last}), {updates} = q.{updates} + 1"
    old_row, new_row = (_pg_array(r, table, table.column_names) for r in ("OLD", "NEW"))
    match = f"{_pg('base')} = {name} AND {_pg('row_key')} = old_key"

    def upsert(key: str, before_: str, after_: str, on_conflict: str) -> str:
        if append:  # an entry per change, as piql's own append enqueue writes it
            return (f"    INSERT INTO {queue} ({columns}) VALUES ({name}, {key} || '@' || "
                    f"stamp, stamp, stamp, stamp, {before_}, {after_}, 1)")
        return (f"    INSERT INTO {queue} AS q ({columns}) VALUES ({name}, {key}, stamp, stamp, "
                f"stamp, {before_}, {after_}, 1)\n    {conflict} {on_conflict}, {coalesced}")

    if as_of:
        kept = [f"    UPDATE {queue} SET {after} = {new_row}, {last} = greatest({last}, "
                f"stamp), {updates} = {updates} + 1 WHERE {match};"]
        gone = [f"    DELETE FROM {queue} WHERE {match};"]
        refuse = [f"  IF NOT EXISTS (SELECT 1 FROM {queue} WHERE {match}) THEN",
                  f"    RAISE EXCEPTION USING ERRCODE = 'integrity_constraint_violation', "
                  f"MESSAGE = {sqlgen.literal(_refusal(table), 'postgres')} || ' (key ' || "
                  "old_key || ')';",
                  "  END IF;"]
    else:
        kept = [upsert("old_key", old_row, new_row, f"{after} = EXCLUDED.{after}") + ";"]
        gone = [upsert("old_key", old_row, "NULL", f"{after} = NULL") + ";"]
        if not append:  # an insert then a delete cancel
            gone.append(f"    DELETE FROM {queue} WHERE {match} AND {before} IS NULL AND "
                        f"{after} IS NULL;")
        refuse = []
    inserted = upsert("new_key", "NULL", new_row, f"{after} = EXCLUDED.{after}") + (
        ";" if append else f"\n    WHERE q.{after} IS NULL;")
    return "\n".join([
        "DECLARE stamp bigint; old_key text; new_key text;",
        "BEGIN",
        f"  IF current_setting('{ENQUEUE}', true) = '{OWN_ALL}' OR (TG_OP = 'DELETE' AND",
        f"      current_setting('{ENQUEUE}', true) = '{OWN_CHANGES}') THEN",
        "    -- piql's write path queues its own deletes and its updates (a delete and an",
        "    -- insert); an UPDATE statement of piql's is one its triggers queue",
        "    RETURN NULL;",
        "  END IF;",
        _STAMP,
        f"  old_key := {_pg_array('OLD', table, table.primary_key)};",
        "  IF TG_OP = 'UPDATE' THEN",
        f"    new_key := {_pg_array('NEW', table, table.primary_key)};",
        "  END IF;",
        *_unread_update(table, read),
        *refuse,
        "  IF new_key = old_key THEN  -- an update keeping the key",
        *kept,
        "  ELSE  -- a delete, or an update moving the row to another key",
        *gone,
        "  END IF;",
        "  IF new_key <> old_key THEN",
        inserted,
        "  END IF;",
        "  RETURN NULL;",
        "END"])


def postgres_drop(table: Table) -> list[str]:
    """Drop ``table``'s enqueue triggers and their functions, if made (for an earlier plan)."""
    target = _pg(table.name)
    return [statement for name in (enqueue_function(table.name), change_function(table.name))
            for statement in (f"DROP TRIGGER IF EXISTS {_pg(name)} ON {target}",
                              f"DROP FUNCTION IF EXISTS {_pg(name)}()")]
