"""The processes serving a store: a registry in piql's metadata, so that a migration can
tell whether another process still uses the plan it would change.

Every :class:`~piql.runtime.deployment.Deployment` of a store file or database registers
itself when it opens (a metadata row ``session:<host>:<pid>:<id>`` naming its process,
host, plan fingerprint and start time; without waiting for the store's write lock, so a
SQLite store busy then gets the row with the deployment's first write) and removes the
row when it closes. A process that
died without closing leaves its row behind: on its own host a row whose process is gone
is not live (``os.kill(pid, 0)``) and a migration removes it; a row of another host is
taken as live (piql cannot look at that host's processes), so stop or close that process,
or force the migration.
"""
from __future__ import annotations

import json
import os
import socket
import time
import uuid
from dataclasses import dataclass

from piql import sqlgen
from piql.planner.fingerprint import FINGERPRINT, META
from piql.runtime.errors import DeploymentError, StoreBusy
from piql.runtime.store import Store

PREFIX = "session:"


@dataclass(frozen=True)
class Session:
    """One registered deployment: its metadata key, process, host, plan and start time."""

    key: str
    pid: int
    host: str
    plan: str
    started: float

    @property
    def live(self) -> bool:
        """Its process still runs (always True for a process of another host)."""
        if self.host != socket.gethostname():
            return True
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process: it exists
            return True
        return True

    def describe(self) -> str:
        since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.started))
        return f"pid {self.pid} on {self.host} since {since}"


@dataclass
class Registration:
    """This process's row in the registry: its key and value, and whether it is recorded
    yet (opening a store takes no write lock: a row not recorded then is recorded by the
    deployment's first write, :meth:`ensure`)."""

    key: str
    value: str
    recorded: bool = False

    def ensure(self, store: Store) -> None:
        """Record the row, inside a write transaction."""
        if not self.recorded:
            store.set_meta(self.key, self.value)
            self.recorded = True


def register(store: Store, plan: str) -> Registration | None:
    """Register this process as serving ``plan`` (a fingerprint) from ``store`` (None for a
    store in memory, which no other process sees), without waiting for the write lock:
    on PostgreSQL the row is written on its own (piql's write lock orders plan changes, not
    this row); on SQLite it is written now if the lock is free, else by the first write."""
    if store.location == ":memory:":
        return None
    host, pid = socket.gethostname(), os.getpid()
    registration = Registration(f"{PREFIX}{host}:{pid}:{uuid.uuid4().hex[:8]}", json.dumps(
        {"pid": pid, "host": host, "plan": plan, "started": time.time()}, sort_keys=True))
    if store.dialect != "sqlite":
        registration.ensure(store)
        return registration
    store.sql("PRAGMA busy_timeout = 0")
    try:
        with store.transaction():
            registration.ensure(store)
    except StoreBusy:
        pass  # another connection writes: the first write of this one records it
    finally:
        store.sql(f"PRAGMA busy_timeout = {int(store.busy_timeout * 1000)}")
    return registration


def unregister(store: Store, registration: Registration | None) -> None:
    """Remove the registration (nothing for one never recorded, or a store whose metadata
    is gone: a deployment undone by ``install.uninstall``). A store busy past its
    ``busy_timeout`` keeps the row; it is removed once this process is gone."""
    if registration is None or not registration.recorded or \
            store.get_meta(registration.key) is None:
        return
    try:
        if store.dialect != "sqlite":
            _delete(store, registration.key)
            return
        with store.transaction():
            _delete(store, registration.key)
    except StoreBusy:
        pass


def sessions(store: Store) -> list[Session]:
    """Every registered deployment of ``store``, live or not."""
    found = []
    for key, value in store.sql(f"SELECT key, value FROM {_meta(store)} WHERE key LIKE "
                                f"{_placeholder(store, 'prefix')}", {"prefix": PREFIX + "%"}):
        try:
            data = json.loads(value)
            found.append(Session(key, int(data["pid"]), data["host"], data["plan"],
                                 float(data["started"])))
        except (ValueError, KeyError, TypeError):
            continue  # not one of ours: ignored, never removed
    return found


def serving(store: Store, plan: str, prune: bool = False) -> list[Session]:
    """The live deployments serving ``plan``; with ``prune`` (inside a write transaction)
    the rows of dead processes of this host are removed."""
    live = []
    for session in sessions(store):
        if not session.live:
            if prune:
                _delete(store, session.key)
        elif session.plan == plan:
            live.append(session)
    return live


def _delete(store: Store, key: str) -> None:
    store.sql(f"DELETE FROM {_meta(store)} WHERE key = {_placeholder(store, 'key')}",
              {"key": key})


def _meta(store: Store) -> str:
    return sqlgen.identifier(META, store.dialect)


def _placeholder(store: Store, name: str) -> str:
    return f":{name}" if store.dialect == "sqlite" else f"%({name})s"


def same_plan(store: Store, plan: str, seen: int | None) -> int | None:
    """Inside a write transaction of a deployment serving ``plan``: refuse to write if the
    store was migrated to another plan since (the views the write would maintain are not
    the store's). On SQLite a migration always changes the schema, so one read of its
    version (``seen`` last time; returned) tells when to look at the plan; on PostgreSQL
    the store's triggers keep the views of its plan whoever writes, and None is returned."""
    if store.dialect != "sqlite":
        return None
    (stamp,), = store.sql("PRAGMA schema_version")
    if stamp != seen and store.get_meta(FINGERPRINT) != plan:
        raise migrated(store)
    return stamp


def migrated(store: Store) -> DeploymentError:
    """The refusal of a write by a deployment whose plan a migration replaced."""
    return DeploymentError(
        f"the store {store.location} was migrated to another plan since this deployment "
        "opened it: deploy it again with the new schema and queries to write to it")
