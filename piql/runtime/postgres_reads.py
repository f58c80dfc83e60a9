"""Compiled reads on a PostgreSQL serving thread's own connection, through libpq.

A compiled key lookup is one round trip of 25-40 µs on a local server; psycopg's
``Cursor.execute(..., prepare=True)`` adds 10-15 µs of Python around it (the query's
conversion and cache lookups, the prepared-statement manager, the results' checks and
the cursor's state), a third of the lookup. A :class:`Lane` does what that path does for
one statement, and nothing else: it dumps the values with the connection's own adapters
(psycopg's ``Transformer``: the same types, the same ``bool`` as 0/1), prepares the
statement once per connection and per parameter types (as psycopg keys its cache), sends
it with libpq's ``PQsendQueryPrepared``, waits with psycopg's own wait function (the GIL
released, Ctrl-C seen) and loads the rows with the same loaders, as tuples.

A lane belongs to one thread (``PostgresStore`` keeps one per serving thread beside its
reader connection), so it takes no lock. Statements inside a transaction still go
through psycopg's cursor: a lane serves only autocommit reads outside one.
"""
from __future__ import annotations

import itertools
import re
from typing import Any, Sequence

import psycopg
from psycopg import errors as pg_errors
from psycopg import pq
from psycopg.adapt import PyFormat, Transformer
from psycopg.generators import execute
from psycopg.waiting import wait

_PLACEHOLDER = re.compile(rb"%(%|s)")
_TUPLES_OK = pq.ExecStatus.TUPLES_OK
_TEXT = pq.Format.TEXT  # results as text, read by the same loaders as a cursor's
_INTERVAL = 0.1  # seconds between checks for Ctrl-C while waiting (psycopg's own)
_MISSING = pg_errors.lookup("26000")  # invalid_sql_statement_name: prepared statement gone


class Numbered:
    """A statement with psycopg's ``%s`` placeholders (and ``%%`` for a literal ``%``) as
    libpq takes it: ``$1``, ``$2``, ...; and the formats its values are dumped in."""

    __slots__ = ("text", "formats")

    def __init__(self, statement: str) -> None:
        numbers = itertools.count(1)

        def number(found: re.Match) -> bytes:
            return b"%" if found.group(1) == b"%" else b"$%d" % next(numbers)

        text = _PLACEHOLDER.sub(number, statement.encode())
        count = next(numbers) - 1
        if b"%" in _PLACEHOLDER.sub(b"", statement.encode()):
            raise psycopg.ProgrammingError(f"only %s placeholders and %% are allowed: "
                                           f"{statement}")
        self.text = text
        self.formats = [PyFormat.AUTO] * count


class Lane:
    """One thread's connection (autocommit, configured as the pool's) and the compiled
    statements prepared on it; :meth:`fetch` runs one."""

    def __init__(self, connection: psycopg.Connection) -> None:
        self.connection = connection
        self._pgconn = connection.pgconn
        self._transformer = Transformer(connection)
        self._encoding = connection.info.encoding
        self._names: dict[tuple[bytes, tuple[int, ...]], bytes] = {}
        self._numbers = itertools.count(1)

    @property
    def closed(self) -> bool:
        return self.connection.closed

    @property
    def broken(self) -> bool:
        """The connection is gone (the server ended it, or a wait was interrupted)."""
        return self.connection.closed or self._pgconn.status != pq.ConnStatus.OK

    def fetch(self, statement: Numbered, values: Sequence[Any]) -> list[tuple]:
        """The rows of ``statement`` for ``values`` (prepared on first use); a failed
        statement raises psycopg's error for it, as a cursor would."""
        transformer = self._transformer
        formats = statement.formats
        if len(values) != len(formats):
            raise psycopg.ProgrammingError(f"the query has {len(formats)} placeholders but "
                                           f"{len(values)} parameters were passed")
        params = transformer.dump_sequence(values, formats)
        types = transformer.types or ()
        name = self._names.get((statement.text, types))
        if name is None:
            name = self._prepare(statement.text, types)
        try:
            result = self._send(name, params, transformer.formats)
        except _MISSING:  # deallocated under us (DISCARD ALL): prepare it again, once
            self._names.clear()
            name = self._prepare(statement.text, types)
            result = self._send(name, params, transformer.formats)
        transformer.set_pgresult(result)
        return transformer.load_rows(0, result.ntuples, tuple)

    def _send(self, name: bytes, params, formats) -> pq.abc.PGresult:
        pgconn = self._pgconn
        pgconn.send_query_prepared(name, params, formats, _TEXT)
        result = self._results()
        if result.status != _TUPLES_OK:
            raise pg_errors.error_from_result(result, encoding=self._encoding)
        return result

    def _prepare(self, text: bytes, types: tuple[int, ...]) -> bytes:
        name = b"piql_%d" % next(self._numbers)
        self._pgconn.send_prepare(name, text, param_types=types)
        result = self._results()
        if result.status == pq.ExecStatus.FATAL_ERROR:
            raise pg_errors.error_from_result(result, encoding=self._encoding)
        self._names[(text, types)] = name
        return name

    def _results(self) -> pq.abc.PGresult:
        """The last result of what was sent; an interrupted wait closes the connection
        (its statement may still be running: the next call connects again)."""
        pgconn = self._pgconn
        try:
            return wait(execute(pgconn), pgconn.socket, _INTERVAL)[-1]
        except BaseException:
            if pgconn.transaction_status == pq.TransactionStatus.ACTIVE:
                self.connection.close()
            raise
