"""Tables and columns named like SQL keywords (``order``, ``group``, ``select``) or holding a
double quote (``gr"oup``) go through lint, plan, deploy, writes, queries, loads, checks and
refreshes on every engine (issue 12 item 17): every generated statement quotes its names."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import piql
from piql import sqlgen
from piql.report import ddl
from tests.conftest import FIXTURES, plan_text
from tests.runtime.workload import assert_ordered_match, oracle, ordered_oracle, parameter_choices

SCHEMA = FIXTURES / "odd_names_schema.sql"
QUERIES = FIXTURES / "odd_names_queries.sql"
APP = piql.load(SCHEMA, QUERIES)
HOUR = 3_600_000
SELECTS = [(1, "x"), (2, "y")]
ORDERS = [(g, o, 1 + g % 2, g * 10 + len(o), HOUR * (1 + g % 3) + g) for g in range(1, 9)
          for o in ("a", "b", 'c"d')]
LINES = [(g, o, n, ("w", "v")[n % 2]) for g, o, _, _, _ in ORDERS for n in range(1 + g % 3)]


def test_lint_and_plan_quote_every_name():
    assert APP.levels == {"byGroup": "SI-0", "countOrder": "SI-2", "sumFrom": "SI-2",
                          "hourly": "SI-3", "hourlyWhere": "SI-3"}
    assert sqlgen.block_sql(APP.plan.query("sumFrom").query.block, "sqlite") == (
        'SELECT SUM("o"."v") AS "total" FROM "order" AS "o", "sel""ect" AS "s" '
        'WHERE "o"."gr""oup" = "s"."gr""oup" AND "s"."from" = :f')
    # the paper's notation quotes only what must be
    assert sqlgen.block_sql(APP.plan.query("byGroup").query.block) == \
        'SELECT "order", v FROM "order" WHERE "group" = <g>'


@pytest.mark.parametrize("dialect", ["sqlite", "duckdb"])
def test_the_planned_ddl_runs(dialect):
    """Every statement of ``piql plan`` runs on the base tables (rules with their parameters)."""
    import duckdb

    text = ddl.render(APP.plan, dialect)
    connection = sqlite3.connect(":memory:") if dialect == "sqlite" else duckdb.connect()
    for table in APP.plan.catalog.tables:
        columns = ", ".join(f"{sqlgen.identifier(c.name, dialect)} {c.type}" for c in table.columns)
        connection.execute(f"CREATE TABLE {sqlgen.identifier(table.name, dialect)} ({columns})")
    ran = 0
    for statement in text.split(";\n"):
        body = "\n".join(line for line in statement.splitlines() if not line.startswith("--"))
        if not body.strip() or "<partition>" in body:
            continue
        names = re.findall(r"[:$](\w+)", body)
        values = {n: 1 for n in names} if dialect == "sqlite" else [1] * len(names)
        if dialect == "duckdb":
            body = re.sub(r"[:$]\w+", "?", body)
        connection.execute(body, values)
        ran += 1
    assert ran > 20


def load_everything(db, tmp_path: Path) -> None:
    db.load('sel"ect', SELECTS)
    pq.write_table(pa.table({'gr"oup': [o[2] for o in ORDERS], "group": [o[0] for o in ORDERS],
                             "order": [o[1] for o in ORDERS], "v": [o[3] for o in ORDERS],
                             "select": [o[4] for o in ORDERS]}), tmp_path / "orders.parquet")
    assert db.load("order", path=tmp_path / "orders.parquet") == len(ORDERS)
    csv = tmp_path / "lines.csv"
    csv.write_text('group,order,n,where\n' + "".join(
        f'{g},"{o.replace(chr(34), chr(34) * 2)}",{n},{w}\n' for g, o, n, w in LINES))
    assert db.load('li"ne', path=csv) == len(LINES)


def assert_answers_equal_their_sql(db) -> None:
    for g in range(0, 10):
        assert sorted(db.query("byGroup", g=g).rows) == sorted(oracle(db, db.query_plan("byGroup"), {"g": g}))
    for o in ("a", 'c"d', "zz"):
        assert db.query("countOrder", o=o).rows == tuple(oracle(db, db.query_plan("countOrder"), {"o": o}))
    for f in ("x", "y", "zz"):
        assert db.query("sumFrom", f=f).rows == tuple(oracle(db, db.query_plan("sumFrom"), {"f": f}))
    for name in ("hourly", "hourlyWhere"):
        for hour in (1, 2, 3):
            full = ordered_oracle(db, db.query_plan(name), {"hour": hour * HOUR})
            assert_ordered_match(list(db.query(name, hour=hour * HOUR).rows), full, 3, (name, hour))


@pytest.mark.parametrize("engine", ["store", "duckdb"])
def test_odd_names_through_every_runtime_path(tmp_path, engine, store_url):
    db = APP.deploy(store_url, engine=engine, partitions=3)
    load_everything(db, tmp_path)
    db.insert("order", **{"group": 20, "order": "e", 'gr"oup': 2, "v": 1, "select": HOUR + 1})
    db.insert('li"ne', **{"group": 20, "order": "e", "n": 1, "where": "z"})
    db.update("order", **{"group": 1, "order": "a", 'gr"oup': 2, "v": 99, "select": HOUR + 3})
    db.delete('li"ne', **{"group": 2, "order": "b", "n": 0})
    db.refresh(now_ms=10 * HOUR)
    assert_answers_equal_their_sql(db)
    assert db.check().consistent
    db.store.sql('DELETE FROM "sumFrom_view"')
    assert not db.check(repair=True).consistent
    assert db.check().consistent
    with pytest.raises(piql.PiqlError, match=r'CARDINALITY \(order, 3\) PER \(group\)'):
        db.load("order", [(30, c, 1, 1, HOUR) for c in "pqrs"])
    db.close()


@pytest.mark.parametrize("new_store", ["sqlite", pytest.param("postgres", marks=[pytest.mark.slow, pytest.mark.extended])],
                         indirect=True)
def test_odd_names_on_spark(tmp_path, store_url):
    """Spark's part of the same path (its SQL and its temporary view names): a load with
    its CARDINALITY check and view builds, a refresh, a check and a repair."""
    path = store_url
    loader = APP.deploy(path, engine="store", partitions=3)
    load_everything(loader, tmp_path)
    loader.store.sql('DELETE FROM "li""ne" WHERE "group" = 8')
    loader.build_views()
    loader.close()
    db = APP.deploy(path, engine="spark", partitions=3)
    assert db.load('li"ne', [line for line in LINES if line[0] == 8]) == 9
    with pytest.raises(piql.PiqlError, match=r"CARDINALITY \(n, 4\) PER \(group, order\)"):
        db.load('li"ne', [(1, "b", n, "w") for n in range(10, 14)])
    db.refresh(now_ms=3 * HOUR + 1)
    assert_answers_equal_their_sql(db)
    db.store.sql('DELETE FROM "sumFrom_view"')
    assert not db.check(repair=True).consistent
    assert db.check().consistent
    db.close()


def test_parameters_and_columns_named_like_the_api_arguments():
    """A parameter ``<name>`` and columns ``table``, ``name`` and ``self`` reach the query and
    the row: the API's own arguments are positional-only (oracle finding N2)."""
    app = piql.App(plan_text(
        'CREATE TABLE channels (id BIGINT PRIMARY KEY, name VARCHAR, "table" VARCHAR, '
        '"self" BIGINT) WITH CARDINALITY (id, 4) PER (name);',
        "-- name: byName\nSELECT id, \"table\", \"self\" FROM channels WHERE name = <name>;\n"
        "-- name: bySelf\nSELECT id FROM channels WHERE id = <self>;\n"))
    db = app.deploy()
    assert db.query("byName", name="a").rows == ()
    db.insert("channels", id=1, name="a", table="t", self=5)
    db.insert("channels", **{"id": 2, "name": "b", "table": "u", "self": 6})
    assert db.query("byName", name="a").rows == ((1, "t", 5),)
    assert db.query("bySelf", self=2).rows == ((2,),)
    db.update("channels", id=2, name="a", table="v", self=7)
    assert sorted(db.query("byName", **{"name": "a"}).rows) == [(1, "t", 5), (2, "v", 7)]
    db.delete("channels", id=1)
    assert db.query("byName", name="a").rows == ((2, "v", 7),)
    assert db.load("channels", [{"id": 3, "name": "a", "table": "w", "self": None}]) == 1
    assert sorted(db.rows("channels")) == [(2, "a", "v", 7), (3, "a", "w", None)]


def test_workload_parameter_choices_quote_names():
    """The test workload draws parameter values with quoted names (a table ``sel"ect``)."""
    db = APP.deploy(engine="store")
    db.load('sel"ect', SELECTS)
    choices = parameter_choices(db, APP.plan.query("sumFrom"))
    assert [c["f"] for c in choices] == ["x", "y", "zz"]
