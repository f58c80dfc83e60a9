"""The schema of a running database as a :class:`Catalog` (for ``piql lint --db``).

This is not part of piql's pure language code: it connects to a database.
Each backend reads the database's own catalog and writes it out as the DDL
piql reads, which ``piql.language.schema`` then parses, so a database and the DDL that
made it mean the same thing to piql:

- tables (PostgreSQL: every ordinary and partitioned table outside the system
  schemas, partitions left out; SQLite: every table but its internal, virtual
  and shadow tables), columns with their types and NOT NULL, primary keys,
  unique constraints, foreign keys, and the other indexes (expression,
  partial, ``USING gin`` ... included, as ``CREATE INDEX`` statements);
- piql's annotations: from ``COMMENT ON TABLE`` / ``COMMENT ON COLUMN`` in
  PostgreSQL, and from ``-- piql:`` comments inside the parentheses of each
  ``CREATE TABLE`` statement SQLite keeps (it keeps the text up to the closing
  parenthesis, not comments after it).

The queries come from a queries file, or on PostgreSQL from
``pg_stat_statements`` (:mod:`piql.introspect.statements`): each SELECT the
application ran, normalized with ``$n``, named ``stmt_<queryid>``.

URLs: ``sqlite:///relative/app.db`` and ``sqlite:////absolute/app.db`` (as
SQLAlchemy writes them; the file is opened read-only and must exist), and any
libpq URI, ``postgresql://user:password@host:port/dbname?...`` (or
``postgres://``). PostgreSQL needs psycopg 3 (``pip install 'piql[postgres]'``).
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from piql.catalog import Catalog
from piql.diagnostics import Diagnostic
from piql.errors import InputError, Location
from piql.language.queries import QueriesFile, load_queries_file, parse_queries, parse_queries_file
from piql.language.schema import parse_schema
from piql.planner.application import Plan, plan_application
from piql.planner.periodic import DEFAULT_PARTITIONS

__all__ = ["catalog_from_database", "schema_sql_from_database", "display_url",
           "queries_from_database", "queries_sql_from_database", "plan_from_database"]

# How a skipped statement is quoted in its note.
_QUOTED = 120


def catalog_from_database(url: str) -> Catalog:
    """Read the schema of the database at ``url`` into a catalog.

    Raises :class:`InputError` when the URL is not understood, the database
    cannot be read, or what it holds is not a schema piql accepts (a table
    without a key, an annotation with a mistake, ...); the error quotes the
    statement piql wrote for the database object at fault.
    """
    text = schema_sql_from_database(url)
    source = display_url(url)
    try:
        return parse_schema(text, source)
    except InputError as err:
        raise _quoting_statement(err, text) from None


def schema_sql_from_database(url: str) -> str:
    """The schema of the database at ``url`` as the DDL piql reads (what
    :func:`catalog_from_database` parses; locations in its notes point into it)."""
    scheme = _scheme(url)
    if scheme == "sqlite":
        from piql.introspect.sqlite import schema_sql
        return schema_sql(_sqlite_path(url), display_url(url))
    from piql.introspect.postgres import schema_sql
    return schema_sql(url, display_url(url))


def plan_from_database(url: str, queries: str | Path | None = None,
                       partitions: int = DEFAULT_PARTITIONS) -> Plan:
    """Plan the application of the database at ``url``: its schema from the database's
    catalog, its queries from the queries file ``queries`` or, on PostgreSQL without one,
    from ``pg_stat_statements``. Raises InputError as the two files' loader does, and for a
    database that cannot be read."""
    _scheme(url)
    if queries is None and urlsplit(url).scheme.lower() == "sqlite":
        raise InputError("an SQLite database keeps no record of the queries run on it: give "
                         f"the queries file too (piql lint --db {display_url(url)} QUERIES)")
    catalog = catalog_from_database(url)
    if queries is not None:
        read, file = load_queries_file(queries, catalog), str(queries)
    else:
        read, file = queries_from_database(url, catalog), _statements_file(url)
    plan = plan_application(catalog, read.queries, file, partitions)
    return replace(plan, notes=read.notes)


def queries_from_database(url: str, catalog: Catalog) -> QueriesFile:
    """The SELECTs the application runs on the PostgreSQL database at ``url``, from
    ``pg_stat_statements``, as queries named ``stmt_<queryid>``, resolved against ``catalog``.

    Statements piql cannot read (an unknown table, a syntax piql does not know) are left
    out with a warning note each; the statements that are no application query (writes,
    the system catalogs' queries, statements without a table) with one info note."""
    text, notes = _statements_text(url, catalog)
    read = parse_queries_file(text, catalog, _statements_file(url))
    return QueriesFile(read.queries, tuple(notes) + read.notes)


def queries_sql_from_database(url: str, catalog: Catalog) -> str:
    """The queries file piql reads from ``pg_stat_statements`` (what
    :func:`queries_from_database` parses; locations in its plans point into it)."""
    return _statements_text(url, catalog)[0]


def _statements_text(url: str, catalog: Catalog) -> tuple[str, list[Diagnostic]]:
    from piql.introspect.statements import read_statements

    if _scheme(url) != "postgresql":
        raise InputError(f"only PostgreSQL keeps the queries run on it (pg_stat_statements); "
                         f"give the queries file for {display_url(url)}")
    source = display_url(url)
    statements, left_out = read_statements(url, source)
    notes: list[Diagnostic] = []
    if left_out:
        kinds = ", ".join(f"{kind} ({count})" for kind, count in sorted(left_out.items()))
        notes.append(Diagnostic("skipped", "info", f"skipped {sum(left_out.values())} statements "
                                f"of pg_stat_statements that are no application query: {kinds}"))
    blocks: list[str] = []
    for statement in statements:
        block = f"-- name: {statement.name}\n-- calls: {statement.calls}\n{statement.query}\n"
        try:
            parse_queries(block, catalog, _statements_file(url))
        except InputError as err:
            quoted = " ".join(statement.query.split())
            if len(quoted) > _QUOTED:
                quoted = quoted[:_QUOTED - 3] + "..."
            notes.append(Diagnostic(
                "skipped", "warning", f"skipped {statement.name} (run {_times(statement.calls)}), "
                f"which piql cannot read: {err.message}: {quoted}",
                "give a queries file naming the application's queries (piql lint --db URL "
                "QUERIES) to lint it as written"))
            continue
        blocks.append(block)
    return "\n".join(blocks), notes


def _times(calls: int) -> str:
    return "once" if calls == 1 else f"{calls} times"


def _statements_file(url: str) -> str:
    return f"{display_url(url)} (pg_stat_statements)"


def _scheme(url: str) -> str:
    """``sqlite`` or ``postgresql``; any other URL is an input error."""
    try:
        scheme = urlsplit(url).scheme.lower()
    except ValueError as err:
        raise InputError(f"cannot read a database from '{display_url(url)}': not a URL "
                         f"({err})") from None
    if scheme == "sqlite":
        return "sqlite"
    if scheme in ("postgresql", "postgres"):
        return "postgresql"
    raise InputError(f"cannot read a database from '{display_url(url)}': use sqlite:///path/app.db "
                     "or postgresql://user@host/dbname")


def display_url(url: str) -> str:
    """``url`` without its password, for messages and locations."""
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError:  # not a URL urllib reads: drop whatever stands before an '@'
        return re.sub(r"//[^/@]*@", "//", url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def _sqlite_path(url: str) -> str:
    prefix = "sqlite:///"
    if not url.lower().startswith(prefix) or len(url) == len(prefix):
        raise InputError(f"cannot read a database from '{url}': an SQLite URL is "
                         "sqlite:///relative/path.db or sqlite:////absolute/path.db")
    return url[len(prefix):]


def _quoting_statement(err: InputError, text: str) -> InputError:
    """The error, with the line of the generated DDL it is about."""
    if err.location is None:
        return err
    lines = text.splitlines()
    line = lines[err.location.line - 1].strip() if 0 < err.location.line <= len(lines) else ""
    quoted = InputError(f"{err.message} (in the schema read from the database: {line})",
                        Location(err.location.file, err.location.line, err.location.column))
    quoted.all_errors = getattr(err, "all_errors", [err])  # type: ignore[attr-defined]
    return quoted
