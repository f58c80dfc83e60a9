"""Rows and parameters as the API receives them: completed, typed and checked.

A row given to ``insert``, ``update`` or ``load`` (a dict, or a tuple in column order, or
a line of a CSV or Parquet file, see ``runtime.datafiles``) becomes a complete row in
column order, or a clear error naming the table, column and value, before anything is
written. Parameters are checked against the column each is compared with (the plan's
``ParamSpec``).
"""
from __future__ import annotations

import math
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from piql import sql_types
from piql.catalog import Column, Table
from piql.planner.application import QueryPlan
from piql.query_block import QueryBlock
from piql.runtime import sqlvalues
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN
from piql.runtime.datafiles import read_file
from piql.runtime.errors import ConstraintError, ParameterError, UnknownName


def complete_row(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with every column of ``table`` (its DEFAULT, else NULL, where not given),
    each value checked."""
    given = {}
    for name, value in row.items():  # one lookup per given column
        column = table.column(name)
        if column is None:
            raise UnknownName(f"table {table.name} has no column '{name}' "
                              f"(columns: {', '.join(table.column_names)})")
        given[column.name] = value
    for column in table.columns:  # a column omitted gets its DEFAULT, as in SQL
        if column.default is not None and column.name not in given:
            given[column.name] = column.default
    missing = [c for c in table.primary_key if given.get(c) is None]
    if missing:
        raise ConstraintError(f"a {table.name} row needs its key column '{missing[0]}' "
                              "(a PRIMARY KEY column cannot be NULL)")
    for column in table.columns:
        if not column.nullable and given.get(column.name) is None:
            # bounds rest on it: a foreign-key lookup through a NOT NULL column drops no row
            raise ConstraintError(f"{table.name}.{column.name} is NOT NULL; give it a value "
                                  "(piql fills constant DEFAULTs only)")
        _check_value(table, column, given.get(column.name))
    return {c: given.get(c) for c in table.column_names}


class RowCheck:
    """:func:`complete_row` of one table with its columns read once: a deployment keeps one
    per table, so a row giving every column under its own name, each value plainly of its
    column's type (an int in 64 bits, a str, a finite float), costs one test per value.
    Any other row (a NULL, a name in another case, a missing column, a wrong type) is
    checked, and refused, by :func:`complete_row` itself."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._names = frozenset(table.column_names)
        self._columns = tuple((c.name, _PLAIN.get(sql_types.family(c.type), ()))
                              for c in table.columns)

    def __call__(self, row: dict[str, Any]) -> dict[str, Any]:
        if row.keys() == self._names:
            for name, plain in self._columns:
                value = row[name]
                kind = type(value)
                if kind not in plain or (kind is int and not INT64_MIN <= value <= INT64_MAX) \
                        or (kind is float and not math.isfinite(value)):
                    break
            else:
                return {name: row[name] for name, _ in self._columns}
        return complete_row(self.table, row)


# The Python types a column of each family takes as they are (bool is no int here: it goes
# the long way, as does every value of a family not listed)
_PLAIN: dict[sql_types.TypeFamily, tuple[type, ...]] = {
    sql_types.TypeFamily.INTEGER: (int,),
    sql_types.TypeFamily.TEXT: (str,),
    sql_types.TypeFamily.REAL: (int, float),
    sql_types.TypeFamily.DECIMAL: (int, float),
}


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


class ParamCheck:
    """The parameter check of one query (:func:`check_params`), with its names and types
    read from the plan once: a deployment keeps one per query and runs it on every call,
    so the common case (a str for a text column, an int in 64 bits for an integer one)
    costs one class test per value; any other value goes through the full check."""

    def __init__(self, query: QueryPlan, block: QueryBlock) -> None:
        self.query = query
        self.expected = block.params
        self.names = frozenset(self.expected)
        declared = {s.name: s.declared_type for s in query.params if s.declared_type}
        self.declared = declared
        self.acceptors = {name: _acceptor(declared.get(name)) for name in self.expected}
        # (name, the class its common values have): None for a parameter without one,
        # whose every value takes the full check
        self.classes = tuple((name, _common_class(declared.get(name))) for name in self.expected)

    def __call__(self, params: dict[str, Any]) -> None:
        if params.keys() != self.names:
            self._names(params)
        for name, common in self.classes:
            value = params[name]
            if value.__class__ is not common or (
                    common is int and not INT64_MIN <= value <= INT64_MAX):
                self._other(name, value)

    def binding(self, names: tuple[str, ...] | None,
                arguments: Callable[[dict[str, Any]], tuple]) -> Callable[[dict[str, Any]], tuple]:
        """The check fused with binding: a function from the parameters by name to
        ``arguments(params)``, the tuple a statement binds, once they pass this check.

        ``names``: the parameters the statement binds, in order (None: it binds literals
        too). When every one of the query's parameters is bound and has a common class,
        a call of the common case costs a length test, a lookup and one class test per
        value, with no check called; anything else takes the full check (the same
        errors), then ``arguments``."""
        check = self.__call__
        commons = dict(self.classes)
        if not names or set(names) != self.names or None in commons.values():
            def checked(params: dict[str, Any]) -> tuple:
                check(params)
                return arguments(params)
            return checked
        low, high, count = INT64_MIN, INT64_MAX, len(self.names)
        if len(names) == 1:
            name, common = names[0], commons[names[0]]

            def single(params: dict[str, Any]) -> tuple:
                if len(params) == 1:
                    try:
                        value = params[name]
                    except KeyError:
                        pass
                    else:
                        if value.__class__ is common and (
                                common is not int or low <= value <= high):
                            return (value,)
                check(params)
                return arguments(params)
            return single
        getter, classes = itemgetter(*names), tuple(commons[n] for n in names)

        def several(params: dict[str, Any]) -> tuple:
            if len(params) == count:
                try:
                    values = getter(params)
                except KeyError:
                    values = ()
                for value, common in zip(values, classes):
                    if value.__class__ is not common or (
                            common is int and not low <= value <= high):
                        break
                else:
                    if values:
                        return values
            check(params)
            return arguments(params)
        return several

    def named(self, values: tuple) -> dict[str, Any]:
        """Positional ``values`` (in the order of :attr:`expected`) by name, once there
        are as many as the query has parameters (``ParameterError`` otherwise)."""
        if len(values) != len(self.expected):
            listed = ", ".join(self.expected) or "none"
            raise ParameterError(f"query {self.query.name} takes {len(self.expected)} "
                                 f"parameter(s) ({listed}); got {len(values)} value(s)")
        return dict(zip(self.expected, values))

    def positional(self, names: tuple[str, ...] | None,
                   arguments: Callable[[dict[str, Any]], tuple]) -> Callable[[tuple], tuple]:
        """:meth:`binding` for values given by position, in the order of :attr:`expected`
        (a prepared query's call, ``PreparedQuery``): the tuple the statement binds.

        In the common case (as many values as parameters, each of its common class) the
        values are bound as given, or picked in the statement's order, with no dict made;
        anything else is named (:meth:`named`) and takes the full check (the same errors)."""
        def checked(values: tuple) -> tuple:
            params = self.named(values)
            self(params)
            return arguments(params)
        commons = tuple(common for _, common in self.classes)
        if not names or set(names) != self.names or None in commons:
            return checked
        low, high, count = INT64_MIN, INT64_MAX, len(self.expected)
        if names == self.expected and count == 1:
            common = commons[0]

            def single(values: tuple) -> tuple:
                if len(values) == 1:
                    value = values[0]
                    if value.__class__ is common and (
                            common is not int or low <= value <= high):
                        return values
                return checked(values)
            return single
        picked = _picker(tuple(self.expected.index(n) for n in names), count)

        def several(values: tuple) -> tuple:
            if len(values) == count:
                for value, common in zip(values, commons):
                    if value.__class__ is not common or (
                            common is int and not low <= value <= high):
                        break
                else:
                    return values if picked is None else picked(values)
            return checked(values)
        return several

    def _other(self, name: str, value: Any) -> None:
        """A value not of its parameter's common class: accepted or refused in full."""
        if not self.acceptors[name](value):
            self._refuse(name, value)

    def _names(self, params: dict[str, Any]) -> None:
        missing = [p for p in self.expected if p not in params]
        extra = [p for p in params if p not in self.names]
        listed = ", ".join(self.expected) or "none"
        if missing:
            raise ParameterError(f"query {self.query.name} needs parameter <{missing[0]}> "
                                 f"(parameters: {listed})")
        raise ParameterError(f"query {self.query.name} has no parameter <{extra[0]}> "
                             f"(parameters: {listed})")

    def _refuse(self, name: str, value: Any) -> None:
        declared = self.declared.get(name)
        if declared and (value is None or not sql_types.fits(declared, value)):
            raise ParameterError(f"parameter <{name}> of {self.query.name} is compared with "
                                 f"a {declared} column; got {value!r}")
        raise ParameterError(f"parameter <{name}> of {self.query.name}: {value!r} "
                             f"{sqlvalues.unstorable(value)}")


def _picker(indices: tuple[int, ...], count: int) -> Callable[[tuple], tuple] | None:
    """The values at ``indices`` of a tuple of ``count``, as a tuple; None when they are
    the whole tuple, in order."""
    if indices == tuple(range(count)):
        return None
    if len(indices) == 1:
        index = indices[0]
        return lambda values: (values[index],)
    return itemgetter(*indices)


def _common_class(declared: str | None) -> type | None:
    """The class of the values a parameter compared with a column of type ``declared``
    usually gets, which :func:`_acceptor` accepts at sight (an int still within 64 bits)."""
    kind = None if declared is None else sql_types.family(declared)
    return {sql_types.TypeFamily.TEXT: str, sql_types.TypeFamily.INTEGER: int}.get(kind)


def _acceptor(declared: str | None) -> Callable[[Any], bool]:
    """Does a value pass :func:`check_params` for a parameter compared with a column of
    type ``declared`` (None: no type to match; the value must be storable)?"""
    def storable(value: Any) -> bool:
        return sqlvalues.unstorable(value) is None

    if declared is None:
        return storable
    kind = sql_types.family(declared)

    def fits(value: Any) -> bool:
        return value is not None and sql_types.fits_family(kind, value) and storable(value)

    return fits


def check_params(query: QueryPlan, block: QueryBlock, params: dict[str, Any]) -> None:
    """Exactly the query's parameters, each of the type of the column it is compared with
    and storable."""
    ParamCheck(query, block)(params)


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
