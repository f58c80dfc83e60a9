"""An SQLite database's schema as DDL: sqlite_master and the table, index and key PRAGMAs."""
from __future__ import annotations

import functools
import re
from pathlib import Path

from piql.errors import InputError
from piql.introspect.ddl import quote_name
from piql.language.schema import parse_schema
from piql.language.schema_scan import scan_schema
from piql.runtime.errors import UnreadableDatabase
from piql.runtime.sqlite_store import ReadOnlyDatabase

_INTERNAL = re.compile(r"sqlite_", re.IGNORECASE)


def schema_sql(path: str, source: str) -> str:
    """The DDL of the SQLite database file at ``path`` (opened read-only)."""
    file = Path(path)
    if not file.is_file():
        raise InputError(f"cannot read {source}: there is no database file {path}")
    try:
        database = ReadOnlyDatabase(path)
    except UnreadableDatabase as err:
        raise InputError(f"cannot open {source}: {err}") from None
    with database:
        try:
            return _schema_sql(database)
        except UnreadableDatabase as err:
            raise InputError(f"cannot read the schema of {source}: {err}") from None


def _schema_sql(database: ReadOnlyDatabase) -> str:
    statements: list[str] = []
    for name, sql in _tables(database):
        statements.append(_create_table(database, name, sql))
    for name, sql in database.rows(
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL "
            "ORDER BY rowid"):
        table = database.rows("SELECT tbl_name FROM sqlite_master WHERE name = ?",
                                   (name,))[0][0]
        if any(t == table for t, _ in _tables(database)):
            statements.append(sql.strip() + ";")  # CREATE INDEX as written: expressions, WHERE
    return "\n".join(statements) + "\n"


def _tables(database: ReadOnlyDatabase) -> list[tuple[str, str]]:
    """Ordinary tables (not SQLite's own, virtual ones or their shadow tables), in creation order."""
    kinds = {row[1]: row[2] for row in database.rows("PRAGMA main.table_list")}
    return [(name, sql) for name, sql in database.rows(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY rowid")
        if kinds.get(name) == "table" and not _INTERNAL.match(name)]


def _create_table(database: ReadOnlyDatabase, table: str, original: str) -> str:
    columns = [row for row in database.rows(f"PRAGMA main.table_xinfo({quote_name(table)})")
               if row[6] in (0, 2, 3)]  # hidden 1: a virtual table's hidden column
    elements = []
    for _, name, type_, not_null, _, _, _ in columns:
        elements.append(f"{quote_name(name)} {_type(type_)}" + (" NOT NULL" if not_null else ""))
    key = [row[1] for row in sorted(columns, key=lambda r: r[5]) if row[5] > 0]
    if key:
        elements.append(f"PRIMARY KEY ({', '.join(quote_name(c) for c in key)})")
    for _, index, unique, origin, _ in database.rows(
            f"PRAGMA main.index_list({quote_name(table)})"):
        if unique and origin == "u":
            names = [row[2] for row in database.rows(
                f"PRAGMA main.index_info({quote_name(index)})")]
            elements.append(f"CONSTRAINT {quote_name(index)} UNIQUE "
                            f"({', '.join(quote_name(c) for c in names)})")
    elements += _foreign_keys(database, table)
    lines = [f"CREATE TABLE {quote_name(table)} ("] + \
        [f"    {e}{',' if i < len(elements) - 1 else ''}" for i, e in enumerate(elements)] + [");"]
    # piql's annotations: the '-- piql:' comments SQLite kept in the CREATE TABLE text
    for annotation in scan_schema(original, "<sqlite_master>").annotations:
        lines.append(f"-- piql:{annotation.text}")
    return "\n".join(lines)


def _foreign_keys(database: ReadOnlyDatabase, table: str) -> list[str]:
    keys: dict[int, list[tuple]] = {}
    for row in database.rows(f"PRAGMA main.foreign_key_list({quote_name(table)})"):
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
