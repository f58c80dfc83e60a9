"""Writing a database's catalog as DDL: quoting names and comment strings."""
from __future__ import annotations


def quote_name(name: str) -> str:
    """A double-quoted identifier, so its case and characters survive as they are."""
    return '"' + name.replace('"', '""') + '"'


def qualified(schema: str | None, name: str) -> str:
    return f"{quote_name(schema)}.{quote_name(name)}" if schema else quote_name(name)


def quote_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"
