"""PostgreSQL's TRUNCATE of a base table that views read, or that FOREIGN KEYs refer to,
is refused (issue 20).

A ``TRUNCATE`` fires no row trigger: neither the plan's (``triggers_postgres``: the
synchronous views' delta rules, the FOREIGN KEY checks) nor the update queue's
(``runtime.queue_triggers``). So a TRUNCATE of a table views read would leave every
view, synchronous or asynchronous, holding the rows it removed, and the queue holding
their pending changes; a TRUNCATE of a table other tables' rows refer to would leave
those rows referring to nothing (piql checks its FOREIGN KEYs in triggers, not with the
server's constraints, which refuse such a TRUNCATE themselves).

Refusing is what keeps every bound: a ``BEFORE TRUNCATE ... FOR EACH STATEMENT`` trigger
raises before any row goes, one call per statement, whatever the table's size. Keeping
the views right instead would mean rebuilding them: a join view's rebuild reads the
*other* tables it joins, and an aggregate's recomputes every group, work bounded by the
views' sizes, not by the truncated table, and run inside the writer's statement. A
``DELETE`` without ``WHERE`` goes through the row triggers (one delete rule per row),
which is the way to empty such a table (or piql's ``db.delete`` per row).

SQLite has no TRUNCATE: its ``DELETE FROM t`` without ``WHERE`` fires the row triggers
when the table has any (SQLite's truncate optimisation is off then), so its views are kept
as for any plain delete. The text here is pure (no database import): the runtime runs it
(``runtime.install``)."""
from __future__ import annotations

from piql.catalog import Catalog, Table
from piql.planner.trigger_rules import PREFIX, TriggerDialect, quote
from piql.planner.views import ViewDef
from piql import sqlgen

FUNCTION = f"{PREFIX}truncate_refused"  # one function; each trigger passes its message


def _name(table: str) -> str:
    return f"{PREFIX}{table}_truncate"


def refusal(table: Table, views: list[str], referring: list[str]) -> str:
    """The error a TRUNCATE of ``table`` raises: the views that read it and the tables
    whose FOREIGN KEYs refer to it, and what to do instead."""
    why = []
    if views:
        which = f"view {views[0]} reads" if len(views) == 1 else \
            f"views {', '.join(views)} read"
        why.append(f"the {which} it and would keep the rows it removes (a TRUNCATE fires "
                   f"no row trigger)")
    if referring:
        why.append(f"FOREIGN KEYs of {', '.join(referring)} refer to it and their rows "
                   f"would be left referring to nothing")
    return (f"piql: TRUNCATE of {table.name} is refused: {'; '.join(why)}. Empty it with "
            f"DELETE FROM {table.name} (its row triggers keep the views) or db.delete "
            f"(which also refuses to delete a row others refer to)")


def guarded(catalog: Catalog, views: tuple[ViewDef, ...]) -> dict[str, str]:
    """table -> its refusal, for every table a view's rules read (synchronous or
    asynchronous: both miss a TRUNCATE) or another table's FOREIGN KEY refers to."""
    found = {}
    for table in catalog.tables:
        name = table.name.lower()
        reading = sorted({v.name for v in views for r in v.rules if r.table.lower() == name})
        referring = sorted({t.name for t in catalog.tables for fk in t.foreign_keys
                            if fk.ref_table.lower() == name and t.name.lower() != name})
        if reading or referring:
            found[table.name] = refusal(table, reading, referring)
    return found


def postgres_statements(catalog: Catalog, views: tuple[ViewDef, ...]) -> list[str]:
    """The statements making the guards of ``views``' plan: the refusing function, a
    statement trigger on every guarded table, and none on the others (a table an earlier
    plan guarded)."""
    d = TriggerDialect.POSTGRES
    function = quote(FUNCTION, d)
    statements = [
        f"CREATE OR REPLACE FUNCTION {function}() RETURNS trigger LANGUAGE plpgsql AS $piql$\n"
        "BEGIN\n"
        "  RAISE EXCEPTION USING ERRCODE = 'feature_not_supported', MESSAGE = TG_ARGV[0];\n"
        "END $piql$"]
    refusals = guarded(catalog, views)
    for table in catalog.tables:
        trigger, target = quote(_name(table.name), d), quote(table.name, d)
        statements.append(f"DROP TRIGGER IF EXISTS {trigger} ON {target}")
        if table.name in refusals:
            statements.append(
                f"CREATE TRIGGER {trigger} BEFORE TRUNCATE ON {target} FOR EACH STATEMENT "
                f"EXECUTE FUNCTION {function}("
                f"{sqlgen.literal(refusals[table.name], 'postgres')})")
    return statements
