"""Where a benchmark puts its PostgreSQL stores, and hand-written SQL sent straight to a store.

``piql bench twotags --postgres`` and ``piql bench tpcw --postgres`` measure piql on a
PostgreSQL store beside the SQLite one, with the on-demand baseline on the same server.
:class:`PostgresPlace` is that server: the one a URI names, or an embedded server
(``piql.bench.pg_server``) started for the run. Every store the benchmark deploys gets a
schema of its own there, dropped when the run ends.

:class:`Driver` is the baseline's side: SQL a developer would write, executed as a
prepared statement through the store's own driver (sqlite3, psycopg), with no piql in
between: the physical floor piql's figures are compared with.
"""
from __future__ import annotations

import itertools
import os
from typing import Any, Mapping, Sequence
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from piql.runtime.store import is_url

EMBEDDED = "embedded"
_counter = itertools.count(1)


class PostgresPlace:
    """A PostgreSQL server for one benchmark run: ``where`` is a libpq URI, or
    :data:`EMBEDDED` to start a throwaway server in a temporary directory."""

    def __init__(self, where: str) -> None:
        if where != EMBEDDED and not is_url(where):
            raise ValueError(f"--postgres takes a postgresql:// URI, got {where!r}")
        self._server = None
        if where == EMBEDDED:
            from piql.bench.pg_server import PostgresServer

            self._server = PostgresServer()
            where = self._server.create_database()
        self.url = where
        self._schemas: list[str] = []

    @property
    def embedded(self) -> bool:
        return self._server is not None

    def new_store(self, name: str) -> str:
        """The URI of a new, empty schema (``name`` plus a number) on the server."""
        schema = f"piql_bench_{name}_{os.getpid()}_{next(_counter)}"
        self._execute(f'CREATE SCHEMA "{schema}"')
        self._schemas.append(schema)
        return with_search_path(self.url, schema)

    def server_version(self) -> str:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            return connection.execute("SHOW server_version").fetchone()[0]

    def _execute(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(statement)

    def close(self) -> None:
        """Drop every schema made for the run (and stop an embedded server)."""
        try:
            for schema in self._schemas:
                self._execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        finally:
            self._schemas.clear()
            if self._server is not None:
                self._server.stop()
                self._server = None


def with_search_path(url: str, schema: str) -> str:
    """``url`` whose connections use ``schema`` (libpq's ``options=-csearch_path=...``)."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


class Driver:
    """Hand-written SQL on one store, through its own driver: sqlite3's connection (the
    store's own, which an in-memory database needs) or a psycopg connection of its own in
    autocommit mode; every statement prepared (sqlite3's statement cache; psycopg's
    ``prepare=True``), on psycopg through one cursor kept for the run, as piql's serving
    thread keeps one (a cursor per call costs 10-15 µs of psycopg's Python). ``dialect``
    says how to write placeholders (:meth:`param`)."""

    def __init__(self, store) -> None:
        self.dialect = store.dialect
        if self.dialect == "postgres":
            import psycopg

            self._connection = psycopg.connect(store.url, autocommit=True)
            self._cursor = self._connection.cursor()
            self._own = True
        else:
            self._connection = store.connection
            self._own = False

    def param(self, name: str | None = None) -> str:
        """A placeholder: positional (``name`` None) or named."""
        if self.dialect == "postgres":
            return "%s" if name is None else f"%({name})s"
        return "?" if name is None else f":{name}"

    def rows(self, statement: str, values: Sequence[Any] | Mapping[str, Any]) -> list[tuple]:
        if self._own:
            self._cursor.execute(statement, values, prepare=True)
            return self._cursor.fetchall()
        return self._connection.execute(statement, values).fetchall()

    def execute(self, statement: str, values: Sequence[Any] | Mapping[str, Any]) -> None:
        if self._own:
            self._cursor.execute(statement, values, prepare=True)
        else:
            self._connection.execute(statement, values)

    def close(self) -> None:
        if self._own:
            self._connection.close()
