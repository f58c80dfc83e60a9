"""Rows and parameters as the API receives them: completed, typed and checked.

A row given to ``insert``, ``update`` or ``load`` (a dict, or a tuple in column order, or
a line of a CSV or Parquet file, see ``runtime.datafiles``) becomes a complete row in
column order, or a clear error naming the table, column and value, before anything is
written. Parameters are checked against the column each is compared with (the plan's
``ParamSpec``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator

from piql import sql_types
from piql.catalog import Column, Table
from piql.planner.application import QueryPlan
from piql.query_block import QueryBlock
from piql.runtime import sqlvalues
from piql.runtime.datafiles import read_file
from piql.runtime.errors import ConstraintError, ParameterError, UnknownName


def complete_row(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every column of ``table`` (NULL where not given), each value checked."""
    given = {}
    for name, value in row.items():  # one lookup per given column
        column = table.column(name)
        if column is None:
            raise UnknownName(f"table {table.name} has no column '{name}' "
                              f"(columns: {', '.join(table.column_names)})")
        given[column.name] = value
    missing = [c for c in table.primary_key if given.get(c) is None]
    if missing:
        raise ConstraintError(f"a {table.name} row needs its key column '{missing[0]}' "
                              "(a PRIMARY KEY column cannot be NULL)")
    for column in table.columns:
        if not column.nullable and given.get(column.name) is None:
            # bounds rest on it: a foreign-key lookup through a NOT NULL column drops no row
            raise ConstraintError(f"{table.name}.{column.name} is NOT NULL; give it a value "
                                  "(piql fills no DEFAULT)")
        _check_value(table, column, given.get(column.name))
    return {c: given.get(c) for c in table.column_names}


def _check_value(table: Table, column: Column, value: Any) -> None:
    """A value the column and the store can keep as SQL would: of the column's type, an
    integer in 64 bits, a finite REAL."""
    if not sql_types.fits(column.type, value):
        raise ConstraintError(f"{table.name}.{column.name} is {column.type}; got "
                              f"{value!r} ({type(value).__name__})")
    reason = sqlvalues.unstorable(value)
    if reason:
        raise ConstraintError(f"{table.name}.{column.name}: {value!r} {reason}")


def key_of(table: Table, values: dict[str, Any]) -> dict[str, Any]:
    """``values`` as ``table``'s primary key (exactly its columns, each value checked)."""
    given = {}
    for name, value in values.items():
        column = table.column(name)
        if column is None:
            raise UnknownName(f"table {table.name} has no column '{name}'")
        given[column.name] = value
    missing = [c for c in table.primary_key if c not in given]
    extra = [c for c in given if c not in table.primary_key]
    if missing or extra:
        raise ConstraintError(f"delete from {table.name} takes exactly its key "
                              f"({', '.join(table.primary_key)})")
    for name, value in given.items():
        _check_value(table, table.column(name), value)  # type: ignore[arg-type]
    return {c: given[c] for c in table.primary_key}


def check_params(query: QueryPlan, block: QueryBlock, params: dict[str, Any]) -> None:
    """Exactly the query's parameters, each of the type of the column it is compared with
    and storable."""
    expected = block.params
    missing = [p for p in expected if p not in params]
    extra = [p for p in params if p not in expected]
    if missing:
        raise ParameterError(f"query {query.name} needs parameter <{missing[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    if extra:
        raise ParameterError(f"query {query.name} has no parameter <{extra[0]}> "
                             f"(parameters: {', '.join(expected) or 'none'})")
    for spec in query.params:
        value = params[spec.name]
        if spec.declared_type and (value is None or
                                   not sql_types.fits(spec.declared_type, value)):
            raise ParameterError(f"parameter <{spec.name}> of {query.name} is compared with a "
                                 f"{spec.declared_type} column; got {value!r}")
    for name, value in params.items():
        reason = sqlvalues.unstorable(value)
        if reason:
            raise ParameterError(f"parameter <{name}> of {query.name}: {value!r} {reason}")


def read_rows(table: Table, rows: Iterable | None,
              path: str | Path | None) -> Iterator[tuple]:
    """The rows to load into ``table`` (given, or read from the file at ``path``), complete
    and checked, in column order."""
    if path is not None:
        rows = read_file(table, path)
    yield from _checked_rows(table, rows or ())


def _checked_rows(table: Table, rows: Iterable) -> Iterator[tuple]:
    """Each row as a tuple in column order, checked as an insert checks it; an error names
    the row (counted from 1)."""
    columns = table.column_names
    for number, row in enumerate(rows, start=1):
        try:
            if not isinstance(row, dict):
                values = tuple(row) if isinstance(row, (list, tuple)) else None
                if values is None or len(values) != len(columns):
                    got = f"{len(values)} values" if values is not None else repr(row)
                    raise ConstraintError(
                        f"a {table.name} row is a dict or a tuple of its {len(columns)} column "
                        f"values ({', '.join(columns)}); got {got}")
                row = dict(zip(columns, values))
            yield tuple(complete_row(table, row).values())
        except (ConstraintError, UnknownName) as err:
            raise type(err)(f"loading {table.name}, row {number}: {err}") from None
