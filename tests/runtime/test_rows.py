"""The parameter check fused with binding (``ParamCheck.binding``) accepts and refuses
exactly what the full check does, with the same errors, and binds what the statement's
own binder binds."""
from __future__ import annotations

from operator import itemgetter

import pytest

from piql.runtime.errors import ParameterError
from piql.runtime.rows import ParamCheck
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN
from tests.conftest import plan_text

PLAN = plan_text(
    "CREATE TABLE t (k BIGINT PRIMARY KEY, name VARCHAR, w DOUBLE);",
    "-- name: byKey\nSELECT name FROM t WHERE k = <k>\n"
    "-- name: byName\nSELECT k FROM t WHERE name = <name> LIMIT 5\n"
    "-- name: both\nSELECT w FROM t WHERE k = <k> AND name = <name>\n"
    "-- name: byWeight\nSELECT k FROM t WHERE w = <w> LIMIT 5\n")


class Text(str):
    pass


VALUES = [1, 0, -7, INT64_MAX, INT64_MIN, INT64_MAX + 1, INT64_MIN - 1, True, 1.0, 2.5,
          float("nan"), None, "a", "", Text("sub"), b"x", [1]]


def outcome(call, params):
    try:
        return ("bound", call(params))
    except ParameterError as err:
        return ("refused", str(err))


def cases(names: tuple[str, ...]):
    for value in VALUES:
        for other in (VALUES if len(names) == 2 else [None]):
            given = dict(zip(names, (value, other)))
            yield given
            yield {**given, "extra": 1}
            yield dict(list(given.items())[1:])  # one missing


@pytest.mark.parametrize("name, names", [("byKey", ("k",)), ("byName", ("name",)),
                                         ("both", ("k", "name")), ("both", ("name", "k")),
                                         ("byWeight", ("w",))])
def test_binding_accepts_and_refuses_as_the_full_check(name, names):
    query = PLAN.query(name)
    check = ParamCheck(query, query.query.block)
    arguments = itemgetter(*names)
    if len(names) == 1:
        arguments = lambda params, single=arguments: (single(params),)  # noqa: E731
    fused = check.binding(names, arguments)

    def full(params):
        check(params)
        return arguments(params)

    for params in cases(tuple(query.query.block.params)):
        assert outcome(fused, params) == outcome(full, params), params
