"""The processes serving a store: a registry in piql's metadata, so that a migration can
tell whether another process still uses the plan it would change.

Every :class:`~piql.runtime.deployment.Deployment` of a store file or database registers
itself when it opens (a metadata row ``session:<host>:<pid>:<id>`` naming its process,
host, plan fingerprint and start time) and removes the row when it closes. A process that
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
from piql.runtime.errors import DeploymentError
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


def register(store: Store, plan: str) -> str | None:
    """Register this process as serving ``plan`` (a fingerprint) from ``store``; its key
    (None for a store in memory, which no other process sees)."""
    if store.location == ":memory:":
        return None
    key = f"{PREFIX}{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
    value = json.dumps({"pid": os.getpid(), "host": socket.gethostname(), "plan": plan,
                        "started": time.time()}, sort_keys=True)
    with store.transaction():
        store.set_meta(key, value)
    return key


def unregister(store: Store, key: str | None) -> None:
    """Remove the registration ``key`` (nothing for None, or a store whose metadata is gone:
    a deployment undone by ``install.uninstall``)."""
    if key is None or store.get_meta(key) is None:
        return
    with store.transaction():
        _delete(store, key)


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
        raise DeploymentError(
            f"the store {store.location} was migrated to another plan since this deployment "
            "opened it: deploy it again with the new schema and queries to write to it")
    return stamp
