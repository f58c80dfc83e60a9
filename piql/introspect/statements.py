"""The queries a PostgreSQL application runs, from ``pg_stat_statements``.

``pg_stat_statements`` keeps every statement the server ran, normalized: each
constant and parameter written ``$n``, which piql reads as the parameter ``pn``
(docs/language.md). Only the statements of the URL's database are read, one per
``queryid`` (the same statement run by several roles is one), the most called
first. What is not an application's query is left out: statements other than a
``SELECT`` (writes, DDL, ``SET``, transaction control), statements that read the
system catalogs (``pg_catalog``, ``information_schema``, any ``pg_*`` relation:
piql's own introspection, ``psql``'s and drivers' catalog queries, this one) and
statements that read no table (``SELECT $1``, a pool's health check).
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import sqlglot
from sqlglot import exp
from sqlglot.errors import SqlglotError

from piql.errors import InputError

SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})

_STATEMENTS = """
SELECT s.queryid, min(s.query), sum(s.calls)
FROM {}.pg_stat_statements s
WHERE s.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
  AND s.queryid IS NOT NULL
GROUP BY s.queryid
ORDER BY sum(s.calls) DESC, s.queryid
"""


@dataclass(frozen=True)
class Statement:
    """One normalized statement: its ``queryid``, its text, how often it ran."""

    queryid: int
    query: str
    calls: int

    @property
    def name(self) -> str:
        """``stmt_<queryid>``; a negative id is written ``stmt_n<digits>`` (a name has no '-')."""
        return f"stmt_{self.queryid}" if self.queryid >= 0 else f"stmt_n{-self.queryid}"


def read_statements(url: str, source: str) -> tuple[list[Statement], Counter[str]]:
    """The application's SELECT statements at ``url``, and how many statements of each
    kind were left out (``"not a query"``, ``"reads the system catalogs"``, ...)."""
    try:
        import psycopg
    except ImportError:
        raise InputError("reading a PostgreSQL database needs psycopg 3: "
                         "pip install 'piql[postgres]'") from None
    try:
        with psycopg.connect(url, connect_timeout=10) as connection:
            connection.read_only = True
            rows = _rows(connection, source)
    except psycopg.Error as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"cannot read the queries of {source} from pg_stat_statements: "
                         f"{reason}") from None
    kept: list[Statement] = []
    left_out: Counter[str] = Counter()
    for queryid, query, calls in rows:
        why = left_out_because(query)
        if why is None:
            kept.append(Statement(int(queryid), query.strip().rstrip(";").strip(), int(calls)))
        else:
            left_out[why] += 1
    return kept, left_out


def _rows(connection: Any, source: str) -> list[tuple]:
    import psycopg
    from psycopg import sql

    present = connection.execute(
        "SELECT n.nspname FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n "
        "ON n.oid = e.extnamespace WHERE e.extname = 'pg_stat_statements'").fetchone()
    if present is None:
        raise InputError(
            f"{source} has no pg_stat_statements, where piql reads the queries an application "
            "runs: run CREATE EXTENSION pg_stat_statements in that database (the server must "
            "preload it: shared_preload_libraries = 'pg_stat_statements'), or give the queries "
            "file (piql lint --db URL QUERIES)")
    try:
        return connection.execute(sql.SQL(_STATEMENTS).format(sql.Identifier(present[0]))).fetchall()
    except psycopg.errors.ObjectNotInPrerequisiteState:
        raise InputError(
            f"pg_stat_statements is installed in {source} but the server does not load it: "
            "add shared_preload_libraries = 'pg_stat_statements' to its configuration and "
            "restart it, or give the queries file (piql lint --db URL QUERIES)") from None


def left_out_because(query: str) -> str | None:
    """Why ``query`` is not one of the application's queries, or None when it is."""
    if _first_word(query) not in ("select", "with", "table", "values"):
        return "not a query"
    try:
        statements = sqlglot.parse(query, read="postgres")
    except SqlglotError:
        return None  # piql's own parser then tells what it cannot read
    if len(statements) != 1 or statements[0] is None:
        return "not a query"
    statement = statements[0]
    if not isinstance(statement, exp.Query) or _writes(statement):
        return "not a query"
    tables = list(statement.find_all(exp.Table))
    if any(_is_system(table) for table in tables) or _calls_system(statement):
        return "reads the system catalogs"
    ctes = {cte.alias_or_name.lower() for cte in statement.find_all(exp.CTE)}
    if not [t for t in tables if t.name and t.name.lower() not in ctes]:
        return "reads no table"
    return None


def _first_word(query: str) -> str:
    """The statement's first keyword, after comments and opening parentheses."""
    text = query
    while True:
        text = text.lstrip("( \t\r\n")
        if text.startswith("--"):
            text = text.partition("\n")[2]
        elif text.startswith("/*") and "*/" in text:
            text = text.split("*/", 1)[1]
        else:
            break
    word = re.match(r"[A-Za-z]+", text)
    return word.group().lower() if word else ""


def _writes(statement: exp.Expression) -> bool:
    """A data-modifying CTE (``WITH x AS (DELETE ...) SELECT``) makes a write, not a query."""
    return any(isinstance(node, (exp.Insert, exp.Update, exp.Delete, exp.Merge))
               for node in statement.walk())


def _is_system(table: exp.Table) -> bool:
    schema = (table.db or "").lower()
    return schema in SYSTEM_SCHEMAS or schema.startswith("pg_") or \
        table.name.lower().startswith("pg_")


def _calls_system(statement: exp.Expression) -> bool:
    """Calls of catalog functions (``pg_*``, ``current_setting``, ...) mark a tool's query."""
    for call in statement.find_all(exp.Anonymous):
        if str(call.this).lower().startswith(("pg_", "current_setting", "set_config")):
            return True
    return any(isinstance(dot.this, exp.Identifier) and dot.this.name.lower() in SYSTEM_SCHEMAS
               for dot in statement.find_all(exp.Dot))
