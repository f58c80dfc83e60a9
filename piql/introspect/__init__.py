"""The schema of a running database as a :class:`Catalog` (for ``piql lint --db``).

This is not part of piql's pure language code: it connects to a database.
Each backend reads the database's own catalog and writes it out as the DDL
piql reads, which ``piql.schema`` then parses, so a database and the DDL that
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

URLs: ``sqlite:///relative/app.db`` and ``sqlite:////absolute/app.db`` (as
SQLAlchemy writes them; the file is opened read-only and must exist), and any
libpq URI, ``postgresql://user:password@host:port/dbname?...`` (or
``postgres://``). PostgreSQL needs psycopg 3 (``pip install 'piql[postgres]'``).
"""
from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.schema import parse_schema

__all__ = ["catalog_from_database", "schema_sql_from_database", "display_url"]


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
    scheme = urlsplit(url).scheme.lower()
    if scheme == "sqlite":
        from piql.introspect.sqlite import schema_sql
        return schema_sql(_sqlite_path(url), display_url(url))
    if scheme in ("postgresql", "postgres"):
        from piql.introspect.postgres import schema_sql
        return schema_sql(url, display_url(url))
    raise InputError(f"cannot read a database from '{display_url(url)}': use sqlite:///path/app.db "
                     "or postgresql://user@host/dbname")


def display_url(url: str) -> str:
    """``url`` without its password, for messages and locations."""
    parts = urlsplit(url)
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
