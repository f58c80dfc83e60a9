"""Compiled statements against the interpreter and hand-written SQL (a script, not a test).

    python -m piql.bench.compiled [--docs 10000] [--items 1000] [--calls 2000] [--runs 3]
                                  [--twotags-only] [--store postgresql://...]

On one SQLite store per application it times, per query, with the same parameters:

- ``interpreter``: ``Deployment.interpret`` (the plan run operator by operator in Python);
- ``query``: ``Deployment.query``, what an application calls: parameters checked, the
  compiled statement run on the store (``Store.run``), a ``Result`` built;
- ``prepared``: the same through the query's handle (``Deployment.prepared``), its values
  by position: no lookup by name, no dict of parameters;
- ``compiled``: the statement of ``piql.planner.compile`` executed on the store's own
  connection, its rows and operation count read back by ``CompiledQuery.answer`` (the
  floor of ``query``);
- ``hand-written``: the SQL a developer would send: for twoTags the SELECT on the view
  table (the physical floor), for TPC-W the query's own SQL on the same store and indexes.

Prints the median microseconds per call (median over ``--runs`` runs), and the ratio of
``query`` to ``hand-written`` (issue 15's target for twoTags: at most 1.5).
"""
from __future__ import annotations

import argparse
import gc
import random
import statistics
import tempfile
import time
from operator import itemgetter
from pathlib import Path
from typing import Any, Callable

import piql
from piql import sqlgen
from piql.bench import tpcw_data, twotags
from piql.query_block import Epoch, Param

TPCW_QUERIES = ("home_customer_name", "product_detail", "admin_request_item",
                "order_inquiry_customer", "promo_related_items",
                "search_by_subject", "new_products", "order_display_last_order",
                "order_display_lines", "buy_request_customer")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def timed(call: Callable[[Any], object], params: list[dict[str, Any]]) -> float:
    """Median microseconds of ``call`` over ``params``, after a warm-up pass, with the
    garbage collector off (so one contender's garbage is not collected in another's time).
    ``call`` may be a pair: the call, and how it takes the values (prepared before timing)."""
    if isinstance(call, tuple):
        call, prepare = call
        params = [prepare(values) for values in params]
    for values in params[:100]:
        call(values)
    samples = []
    gc.collect()
    gc.disable()
    try:
        for values in params:
            started = time.perf_counter_ns()
            call(values)
            samples.append(time.perf_counter_ns() - started)
    finally:
        gc.enable()
    return statistics.median(samples) / 1000


def contenders(db, name: str, hand: str, hand_params: Callable[[dict], Any]):
    statement = db.plan.compiled(name, db.store.dialect)
    execute = _executor(db)

    def compiled(values: dict[str, Any]):
        return statement.run(execute, values)

    def written(values: dict[str, Any]):
        return execute(hand, hand_params(values))

    def interpreted(values: dict[str, Any]):
        return db.interpret(name, **values)

    def served(values: dict[str, Any]):
        return db.query(name, **values)

    handle = db.prepared(name)
    order = itemgetter(*handle.params)
    prepare = (lambda values: (order(values),)) if len(handle.params) == 1 else order

    def prepared(values: dict[str, Any]):  # the values in order, as a caller has them
        return handle(*values)

    return {"interpreter": interpreted, "query": served, "prepared": (prepared, prepare),
            "compiled": compiled, "hand-written": written}


def _executor(db) -> Callable[[str, Any], list[tuple]]:
    """Run a statement as a developer's code would, on the same store with the same
    driver: SQLite's own connection (its statement cache), or a PostgreSQL connection of
    its own with the statement prepared, through one cursor (as piql's reader runs its
    statements: ``PostgresStore.run``)."""
    if db.store.dialect == "sqlite":
        connection = db.store.connection
        return lambda sql, values: connection.execute(sql, values).fetchall()
    import psycopg

    cursor = psycopg.connect(db.store.url, autocommit=True).cursor()

    def execute(sql: str, values: Any) -> list[tuple]:
        cursor.execute(sql, values, prepare=True)
        return cursor.fetchall()
    return execute


def two_tags(documents: int, calls: int, rng: random.Random,
             store: str | None = None) -> dict[str, Callable]:
    work = Path(tempfile.mkdtemp(prefix="piql-compiled-"))
    (work / "schema.sql").write_text(twotags.SCHEMA)
    (work / "queries.sql").write_text(twotags.PIQL_QUERIES)
    db = piql.load(work / "schema.sql", work / "queries.sql").deploy(
        store or str(work / "store.db"))
    zipf = twotags.Zipf()
    data = twotags.generate(documents, zipf, rng)
    db.load("Documents", data.documents)
    db.load("Tags", data.tags)
    dialect = db.store.dialect
    if dialect == "postgres":
        db.store.sql("ANALYZE")  # statistics, as autovacuum would have them
    view = db.query_plan("twoTags").physical.accesses[0]
    table = sqlgen.identifier(view.table, dialect)
    column = {c: sqlgen.identifier(c, dialect) for c in db.store.shapes[view.table].columns}
    keys = [column[c] for c in view.key_columns]
    # the view's index order (PostgreSQL: its columns are NULLS FIRST, as piql keeps them)
    nulls = " NULLS FIRST" if dialect == "postgres" else ""
    order = ", ".join(column[c] + nulls for c in view.order_columns)
    mark = "?" if dialect == "sqlite" else "%s"
    hand = (f"SELECT {column['docId']} FROM {table} WHERE {keys[0]} = {mark} AND "
            f"{keys[1]} = {mark} ORDER BY {order} LIMIT 5")
    pairs = [zipf.pair(rng) for _ in range(calls)]
    params = [{"tag1": a, "tag2": b} for a, b in pairs]
    # a symmetric-pair view is read with the two tags in order, by hand too
    symmetric = db.query_plan("twoTags").pair
    order = symmetric.in_order if symmetric is not None else (lambda v: v)
    return {"twoTags": (contenders(db, "twoTags", hand,
                                   lambda v: (order(v)["tag1"], order(v)["tag2"])),
                        params)}


def tpcw(items: int, calls: int, rng: random.Random) -> dict[str, tuple]:
    work = Path(tempfile.mkdtemp(prefix="piql-compiled-"))
    app = piql.load(EXAMPLES / "tpcw" / "schema.sql", EXAMPLES / "tpcw" / "queries.sql")
    dataset = tpcw_data.generate(tpcw_data.Scale(items, 1), work / "data")
    db = app.deploy(str(work / "store.db"))
    for table in tpcw_data.LOAD_ORDER:
        if app.plan.catalog.table(table) is not None:
            db.load(table, path=dataset.path(table))
    found = {}
    for name in TPCW_QUERIES:
        block = db.query_plan(name).query.block
        hand = sqlgen.block_sql(block, "sqlite")  # named placeholders: bound by name
        found[name] = (contenders(db, name, hand, lambda v: v), _draw(db, block, calls, rng))
    return found


def _draw(db, block, calls: int, rng: random.Random) -> list[dict[str, Any]]:
    """Parameter sets drawn from the values of the columns each parameter is compared to."""
    domains = {}
    for pred in block.predicates:
        if isinstance(pred.right, Param) and pred.right.name not in domains:
            target = pred.left.attr if isinstance(pred.left, Epoch) else pred.left
            table = block.relation(target.alias).table
            values = [v for (v,) in db.store.sql(
                f"SELECT {sqlgen.identifier(target.column, 'sqlite')} FROM "
                f"{sqlgen.identifier(table, 'sqlite')} LIMIT 5000") if v is not None]
            domains[pred.right.name] = values
    return [{name: rng.choice(domains[name]) for name in block.params} for _ in range(calls)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--items", type=int, default=1_000)
    parser.add_argument("--calls", type=int, default=2_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--twotags-only", action="store_true", help="skip the TPC-W queries")
    parser.add_argument("--store", help="twoTags on this store instead of a new SQLite file: "
                        "the URI of an empty PostgreSQL database (implies --twotags-only)")
    args = parser.parse_args()
    rng = random.Random(1)
    cases = two_tags(args.docs, args.calls, rng, args.store)
    if not args.twotags_only and args.store is None:
        cases |= tpcw(args.items, args.calls, rng)
    print(f"{'query':28} {'interpreter':>12} {'query':>8} {'prepared':>9} {'compiled':>10} "
          f"{'hand-written':>13} {'query/hand':>11} {'prepared/hand':>14}   (µs, median)")
    for name, (calls, params) in cases.items():
        order = list(calls.items())
        runs: dict[str, list[float]] = {who: [] for who in calls}
        for run in range(args.runs):  # each contender goes first in turn (cold pages)
            for who, call in order[run % len(order):] + order[:run % len(order)]:
                runs[who].append(timed(call, params))
        medians = {who: statistics.median(found) for who, found in runs.items()}
        hand = medians['hand-written']
        print(f"{name:28} {medians['interpreter']:12.1f} {medians['query']:8.1f} "
              f"{medians['prepared']:9.1f} {medians['compiled']:10.1f} {hand:13.1f} "
              f"{medians['query'] / hand:11.2f} {medians['prepared'] / hand:14.2f}")


if __name__ == "__main__":
    main()
