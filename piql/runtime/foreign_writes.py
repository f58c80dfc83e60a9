"""Writes by other clients on PostgreSQL: adaptive feeds and overlays stay right (issue 19).

piql pushes a producer row along push edges in its own write path. A plain client's
write (psql, another program) goes around it: PostgreSQL's triggers keep piql's views,
not a feed's pushed rows nor an overlay's partial aggregates. So, on PostgreSQL, each
adaptive query gets a guard trigger that runs only for writes made outside piql (every
piql connection sets the session setting :data:`CLIENT`):

- a **feed**: a producer row inserted, updated or deleted by another client turns that
  producer's push edges to pull, as ``Feed.switch`` does: its rows leave its consumers'
  feeds (the state's count follows; the horizon holds, since removing rows never moves
  it) and its push edges are deleted. Bounded: at most the cap of edges, k rows each.
  Reads then pull that producer; the next ``db.adapt()`` may push it again. An edge
  added or removed by another client needs nothing: a read joins the edges it reads now.
- an **overlay** (its partial aggregates live in piql's memory): a write of the
  producers' or the edges' table by another client marks the overlay bypassed (a row
  of node -1 in its table); reads then take the query's own plan (the per-writer views
  are the database's triggers', so right), one key lookup more, until the next
  ``adapt_overlay`` rebuilds the overlay from the tables.

SQLite has no other writers through piql's triggers for these tables to guard against:
nothing is installed there.
"""
from __future__ import annotations

from piql import sqlgen
from piql.planner.naming import WRITE_LOCK_KEY
from piql.runtime.aggregates import NODE, Overlay
from piql.runtime.feeds import CONSUMER, PRODUCER, FeedLayout
from piql.runtime.store import Store

CLIENT = "piql.client"  # a session setting of every piql connection: it pushes itself
BYPASSED = -1  # the overlay table's node id marking writes piql did not see


def _q(name: str) -> str:
    return sqlgen.identifier(name, "postgres")


def _not_piql() -> list[str]:
    """The guard's first lines: piql's own writes push themselves; others serialise with
    piql's writers on its write lock."""
    return [f"  IF current_setting('{CLIENT}', true) = 'on' THEN RETURN NULL; END IF;",
            f"  PERFORM pg_advisory_xact_lock({WRITE_LOCK_KEY}, hashtext(TG_TABLE_SCHEMA));"]


def _install(store: Store, function: str, body: list[str], tables: list[str],
             parameters: str = "", declare: str = "") -> None:
    """``function`` (a trigger function of ``body`` unless ``parameters``) and, for a
    trigger function, one AFTER ROW trigger of that name on each of ``tables``."""
    returns = "void" if parameters else "trigger"
    store.sql(f"CREATE OR REPLACE FUNCTION {_q(function)}({parameters}) RETURNS {returns} "
              f"LANGUAGE plpgsql AS $piql$ {declare} BEGIN\n" + "\n".join(body)
              + "\nEND $piql$")
    for table in tables:
        store.sql(f"DROP TRIGGER IF EXISTS {_q(function)} ON {_q(table)}")
        store.sql(f"CREATE TRIGGER {_q(function)} AFTER INSERT OR UPDATE OR DELETE ON "
                  f"{_q(table)} FOR EACH ROW EXECUTE FUNCTION {_q(function)}()")


def guard_feed(store: Store, layout: FeedLayout) -> None:
    """On PostgreSQL, another client's write of a producer row turns that producer's push
    edges to pull (in the caller's transaction)."""
    if store.dialect != "postgres":
        return
    unpush = f"piql_{layout.query}_unpush"
    writer, state = _q(layout.writer.column), _q(layout.state.name)
    _install(store, unpush, [
        f"  FOR edge IN DELETE FROM {_q(layout.push.name)} WHERE {_q(PRODUCER)} = producer",
        f"      RETURNING {_q(CONSUMER)} AS consumer LOOP",
        f"    DELETE FROM {_q(layout.feed.name)} WHERE {_q(CONSUMER)} = edge.consumer",
        f"      AND {writer} = producer;",
        "    GET DIAGNOSTICS removed = ROW_COUNT;",
        "    IF removed > 0 THEN  -- n is stored as -n - 1 when a horizon is set",
        f"      UPDATE {state} SET n = CASE WHEN n < 0 THEN LEAST(-1, n + removed)",
        f"        ELSE GREATEST(0, n - removed) END WHERE {_q(CONSUMER)} = edge.consumer;",
        "    END IF;",
        "  END LOOP;"], [], "producer anyelement",
        "DECLARE edge record; removed bigint;")
    _install(store, f"piql_{layout.query}_guard", _not_piql() + [
        f"  IF TG_OP <> 'INSERT' AND OLD.{writer} IS NOT NULL THEN",
        f"    PERFORM {_q(unpush)}(OLD.{writer});",
        "  END IF;",
        f"  IF TG_OP <> 'DELETE' AND NEW.{writer} IS NOT NULL THEN",
        f"    PERFORM {_q(unpush)}(NEW.{writer});",
        "  END IF;",
        "  RETURN NULL;"], [layout.events.table])


def guard_overlay(store: Store, overlay: Overlay) -> None:
    """On PostgreSQL, another client's write of the producers' or the edges' table marks
    the overlay bypassed (in the caller's transaction; the overlay table exists)."""
    if store.dialect != "postgres":
        return
    columns = ", ".join(_q(c) for c in overlay.table.columns)
    zeros = ", ".join(["0"] * len(overlay.values))
    a = overlay.adjacency
    _install(store, f"piql_{overlay.query.name}_guard", _not_piql() + [
        f"  INSERT INTO {_q(overlay.table.name)} ({columns}) VALUES ({BYPASSED}, {zeros})",
        f"    ON CONFLICT ({_q(NODE)}) DO NOTHING;",
        "  RETURN NULL;"], sorted({a.events, a.edges}))


def bypassed(store: Store, overlay: Overlay) -> bool:
    """Did another client write the overlay's tables since it was built? (PostgreSQL: one
    key lookup; SQLite: never.)"""
    return store.dialect == "postgres" and store.get(
        overlay.table.name, {NODE: BYPASSED}) is not None
