"""An SQLite database's schema as DDL: sqlite_master and the table, index and key PRAGMAs."""
from __future__ import annotations

import functools
import re
import sqlite3
from pathlib import Path

from piql.errors import InputError
from piql.introspect.ddl import quote_name
from piql.schema import parse_schema
from piql.schema_scan import scan_schema

_INTERNAL = re.compile(r"sqlite_", re.IGNORECASE)


def schema_sql(path: str, source: str) -> str:
    """The DDL of the SQLite database file at ``path`` (opened read-only)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"cannot read {source}: there is no database file {path}")
    try:
        connection = sqlite3.connect(f"{file.resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error as err:
        raise InputError(f"cannot open {source}: {err}") from None
    try:
        return _schema_sql(connection)
    except sqlite3.DatabaseError as err:
        raise InputError(f"cannot read the schema of {source}: {err}") from None
    finally:
        connection.close()


def _schema_sql(connection: sqlite3.Connection) -> str:
    statements: list[str] = []
    for name, sql in _tables(connection):
        statements.append(_create_table(connection, name, sql))
    for name, sql in connection.execute(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "ORDER BY rowid"):
        table = connection.execute("SELECT tbl_name FROM sqlite_master WHERE name = ?",
                                   (name,)).fetchone()[0]
        if any(t == table for t, _ in _tables(connection)):
            statements.append(sql.strip() + ";")  # CREATE INDEX as written: expressions, WHERE
    return "\n".join(statements) + "\n"


def _tables(connection: sqlite3.Connection) -> list[tuple[str, str]]:
    """Ordinary tables (not SQLite's own, virtual ones or their shadow tables), in creation order."""
    kinds = {row[1]: row[2] for row in connection.execute("PRAGMA main.table_list")}
    return [(name, sql) for name, sql in connection.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        if kinds.get(name) == "table" and not _INTERNAL.match(name)]


def _create_table(connection: sqlite3.Connection, table: str, original: str) -> str:
    columns = [row for row in connection.execute(f"PRAGMA main.table_xinfo({quote_name(table)})")
               if row[6] in (0, 2, 3)]  # hidden 1: a virtual table's hidden column
    elements = []
    for _, name, type_, not_null, _, _, _ in columns:
        elements.append(f"{quote_name(name)} {_type(type_)}" + (" NOT NULL" if not_null else ""))
    key = [row[1] for row in sorted(columns, key=lambda r: r[5]) if row[5] > 0]
    if key:
        elements.append(f"PRIMARY KEY ({', '.join(quote_name(c) for c in key)})")
    for _, index, unique, origin, _ in connection.execute(
            f"PRAGMA main.index_list({quote_name(table)})"):
        if unique and origin == "u":
            names = [row[2] for row in connection.execute(
                f"PRAGMA main.index_info({quote_name(index)})")]
            elements.append(f"CONSTRAINT {quote_name(index)} UNIQUE "
                            f"({', '.join(quote_name(c) for c in names)})")
    elements += _foreign_keys(connection, table)
    lines = [f"CREATE TABLE {quote_name(table)} ("] + \
        [f"    {e}{',' if i < len(elements) - 1 else ''}" for i, e in enumerate(elements)] + [");"]
    # piql's annotations: the '-- piql:' comments SQLite kept in the CREATE TABLE text
    for annotation in scan_schema(original, "<sqlite_master>").annotations:
        lines.append(f"-- piql:{annotation.text}")
    return "\n".join(lines)


def _foreign_keys(connection: sqlite3.Connection, table: str) -> list[str]:
    keys: dict[int, list[tuple]] = {}
    for row in connection.execute(f"PRAGMA main.foreign_key_list({quote_name(table)})"):
        keys.setdefault(row[0], []).append(row)
    found = []
    for rows in keys.values():
        rows.sort(key=lambda r: r[1])
        parent = rows[0][2]
        columns = ", ".join(quote_name(r[3]) for r in rows)
        targets = "" if any(r[4] is None for r in rows) else \
            " (" + ", ".join(quote_name(r[4]) for r in rows) + ")"
        found.append(f"FOREIGN KEY ({columns}) REFERENCES {quote_name(parent)}{targets}")
    return found


@functools.lru_cache(maxsize=256)
def _type(declared: str) -> str:
    """The declared type as piql's grammar reads it. SQLite takes any words as a type
    (``UNSIGNED BIG INT``) or none: those are quoted, or ``ANY`` (no affinity)."""
    declared = declared.strip()
    if not declared:
        return "ANY"
    try:
        parse_schema(f"CREATE TABLE t (c {declared} PRIMARY KEY)")
        return declared
    except InputError:
        return quote_name(declared)
