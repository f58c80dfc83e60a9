"""A PostgreSQL database's schema as DDL, from pg_catalog.

Tables are every ordinary and partitioned table outside the system schemas
and extensions (partitions are left out: piql reads their parent). Keys,
unique constraints and foreign keys are written with ``pg_get_constraintdef``
and the other indexes with ``pg_get_indexdef``, the functions pg_dump uses, so
the result reads like ``pg_dump -s``; table and column comments carry piql's
annotations.
"""
from __future__ import annotations

from typing import Any

from piql.errors import InputError
from piql.introspect.ddl import qualified, quote_name, quote_string

_TABLES = """
SELECT c.oid, n.nspname, c.relname, obj_description(c.oid, 'pg_class')
FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND n.nspname <> 'information_schema' AND n.nspname NOT LIKE 'pg\\_%'
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend d
                  WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.objid = c.oid
                    AND d.deptype = 'e')
ORDER BY c.oid
"""
_COLUMNS = """
SELECT a.attrelid, a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
       pg_catalog.col_description(a.attrelid, a.attnum)
FROM pg_catalog.pg_attribute a
WHERE a.attrelid = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped
ORDER BY a.attrelid, a.attnum
"""
_CONSTRAINTS = """
SELECT c.conrelid, c.conname, pg_catalog.pg_get_constraintdef(c.oid)
FROM pg_catalog.pg_constraint c
WHERE c.conrelid = ANY(%s) AND c.contype IN ('p', 'u', 'f')
ORDER BY c.conrelid, c.contype DESC, c.conname
"""
# Indexes that back no key or unique constraint of their own table.
_INDEXES = """
SELECT i.indrelid, pg_catalog.pg_get_indexdef(i.indexrelid)
FROM pg_catalog.pg_index i JOIN pg_catalog.pg_class x ON x.oid = i.indexrelid
WHERE i.indrelid = ANY(%s)
  AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
                  WHERE c.conindid = i.indexrelid AND c.conrelid = i.indrelid
                    AND c.contype IN ('p', 'u', 'x'))
ORDER BY i.indrelid, x.relname
"""


def schema_sql(url: str, source: str) -> str:
    """The DDL of the PostgreSQL database at ``url`` (read in a read-only transaction)."""
    try:
        import psycopg
    except ImportError:
        raise InputError("reading a PostgreSQL database needs psycopg 3: "
                         "pip install 'piql[postgres]'") from None
    try:
        with psycopg.connect(url, connect_timeout=10) as connection:
            connection.read_only = True
            return _schema_sql(connection)
    except psycopg.Error as err:
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise InputError(f"cannot read the schema of {source}: {reason}") from None


def _schema_sql(connection: Any) -> str:
    # Names qualified only outside the search path would vary with it: pin it.
    connection.execute("SET search_path = pg_catalog")
    tables = connection.execute(_TABLES).fetchall()
    oids = [t[0] for t in tables]
    columns: dict[int, list[tuple]] = {}
    for row in connection.execute(_COLUMNS, (oids,)):
        columns.setdefault(row[0], []).append(row)
    names = {oid: qualified(schema, name) for oid, schema, name, _ in tables}
    statements: list[str] = []
    for oid, _, _, comment in tables:
        elements = [f"{quote_name(name)} {type_}" + (" NOT NULL" if not_null else "")
                    for _, name, type_, not_null, _ in columns.get(oid, [])]
        statements.append(f"CREATE TABLE {names[oid]} (\n    " + ",\n    ".join(elements) + "\n);")
        if comment:
            statements.append(f"COMMENT ON TABLE {names[oid]} IS {quote_string(comment)};")
        for _, name, _, _, note in columns.get(oid, []):
            if note:
                statements.append(f"COMMENT ON COLUMN {names[oid]}.{quote_name(name)} IS "
                                  f"{quote_string(note)};")
    for relid, name, definition in connection.execute(_CONSTRAINTS, (oids,)):
        statements.append(f"ALTER TABLE ONLY {names[relid]} ADD CONSTRAINT {quote_name(name)} "
                          f"{definition};")
    for _, definition in connection.execute(_INDEXES, (oids,)):
        statements.append(definition + ";")
    return "\n".join(statements) + "\n"
