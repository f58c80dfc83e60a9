"""What two catalogs must agree on when they describe one schema."""
from __future__ import annotations

from typing import Any

from piql.catalog import Catalog


def tables(catalog: Catalog, *, schemas: bool = True) -> dict[str, Any]:
    """Each table's columns, keys, constraints and annotations (names of unique keys aside:
    a database names the constraints a DDL file may leave unnamed)."""
    return {t.name: {
        "schema": t.schema if schemas else None,
        "columns": [(c.name, c.type, c.nullable, c.temporal) for c in t.columns],
        "primary_key": t.primary_key,
        "foreign_keys": sorted((fk.columns, fk.ref_table, fk.ref_columns) for fk in t.foreign_keys),
        "cardinalities": sorted(c.describe() for c in t.cardinalities),
        "unique_keys": sorted((k.columns, k.nulls_distinct) for k in t.unique_keys),
    } for t in catalog.tables}


def indexes(catalog: Catalog, *, names: bool = True) -> set[tuple]:
    return {(i.name if names else None, i.table, i.columns, i.unique, i.expressions, i.predicate,
             i.method) for i in catalog.indexes}
