"""Running compiled statements beside the interpreter, for the compiled-query tests.

The interpreter (``Deployment.interpret``) is the reference: a compiled statement run on the
same store must give the same answer (as a multiset; for ORDER BY ... LIMIT, a valid
top-k of the query's own SQL) and exactly the same operation count.
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Any

from piql import sqlgen
from piql.planner.compile import CompiledQuery, StoreLayout, TableLayout
from piql.planner.physical import PhysicalPlan
from piql.query_block import Attr, Call, Compare, Epoch, Func, Param, Predicate, walk
from piql.runtime import sqlvalues
from piql.planner.params import param_specs

from piql.sql_types import fits
from tests.runtime.workload import _run, assert_ordered_match, normal, ordered_oracle


def layout_of(store) -> StoreLayout:
    """What the compiler needs of a store's tables, read from the store (the plan derives
    the same: ``piql.planner.store_layout``)."""
    return StoreLayout(tuple(TableLayout(s.name, s.columns, s.key, s.key_index)
                             for s in store.shapes.values()))


def compiled(db, name: str, dialect: str = "sqlite") -> CompiledQuery:
    """The statement the runtime serves ``name`` with (``Plan.compiled``)."""
    return db.plan.compiled(name, dialect)


def run_sqlite(db, query: CompiledQuery, params: dict[str, Any]) -> tuple[list[tuple], int]:
    connection = db.store.connection
    return query.run(lambda sql, values: connection.execute(sql, values).fetchall(), params)


def assert_same_answer(db, name: str, params: dict[str, Any], rows: list[tuple], ops: int,
                       context: Any) -> None:
    """``rows`` and ``ops`` of a compiled statement against the interpreter's answer."""
    expected = db.interpret(name, **params)
    assert ops == expected.ops, (context, "ops", ops, expected.ops)
    assert ops <= expected.bound, (context, ops, expected.bound)
    query = db.query_plan(name)
    block = query.query.block
    if block.unions or block.offset or block.limit_param is not None:
        # the oracle's top-k check reads neither OFFSET nor LIMIT <n>: the interpreter's rows
        assert Counter(normal(rows)) == Counter(normal(expected.rows)), (context, rows,
                                                                        expected.rows)
    elif block.limit is None:
        assert Counter(normal(rows)) == Counter(normal(expected.rows)), (context, rows,
                                                                        expected.rows)
    elif block.order_by:
        assert_ordered_match(rows, ordered_oracle(db, query, params), block.limit, context)
    else:  # any k rows of the whole answer
        assert len(rows) == len(expected.rows), (context, rows, expected.rows)
        whole = Counter(normal(_run(db, block.with_(limit=None), params)))
        assert not Counter(normal(rows)) - whole, (context, rows)


SCANNED = re.compile(r"\bSCAN (\S+)")


def full_scans(plan_lines: list[str], query: CompiledQuery) -> list[str]:
    """EXPLAIN QUERY PLAN lines that scan a stored table or view the plan does not read
    whole (CTEs, subqueries and constant rows are piql's own bounded intermediates)."""
    reads = {r.alias: r for r in query.reads}
    bad = []
    for line in plan_lines:
        found = SCANNED.search(line)
        if found is None:
            continue
        target = found.group(1)
        if target in ("CONSTANT", "(subquery") or target.startswith(("_piql_", "(subquery")):
            continue
        read = reads.get(target)
        if read is None or not read.whole:
            bad.append(line)
    return bad


def explain_sqlite(db, query: CompiledQuery) -> list[str]:
    return [detail for _, _, detail in explain_sqlite_tree(db, query)]


def explain_sqlite_tree(db, query: CompiledQuery) -> list[tuple[int, int, str]]:
    """(id, parent, detail) of SQLite's plan for ``query``."""
    return [(row[0], row[1], row[3]) for row in db.store.connection.execute(
        "EXPLAIN QUERY PLAN " + query.sql, [None] * len(query.parameters))]


LEVEL = re.compile(r"(MATERIALIZE|CO-ROUTINE) (_piql_(d\d+_)*l\d+)$|CORRELATED (LIST|SCALAR) SUBQUERY")


def sorted_accesses(db, query: CompiledQuery) -> list[str]:
    """Sorts SQLite would run inside an access (a stop-after must read its path in order
    and stop, not sort every row of the key range): in the plain statement of a single
    ordered access, or under the CTE of an access level or a per-probe subquery."""
    tree = explain_sqlite_tree(db, query)
    if flat_and_ordered(query):
        return [detail for _, _, detail in tree if "TEMP B-TREE" in detail]
    parents = {node: parent for node, parent, _ in tree}
    details = {node: detail for node, _, detail in tree}
    found = []
    for node, _, detail in tree:
        if "TEMP B-TREE" not in detail:
            continue
        above = parents.get(node)  # the (sub)query the sort belongs to
        while above and not SUBQUERY.match(details[above]):
            above = parents.get(above)
        if above and LEVEL.search(details[above]):
            found.append(detail)
    return found


def flat_and_ordered(query: CompiledQuery) -> bool:
    """Is ``query`` one flat statement whose first access stops after k rows in order (so
    its ORDER BY must be the access path's own, with no sort anywhere)?"""
    return query.ops_source.value in ("rows", "per_row") and query.reads[0].stop_after is not None


SUBQUERY = re.compile(r"MATERIALIZE|CO-ROUTINE|CORRELATED|SCALAR SUBQUERY|LIST SUBQUERY")


def unbounded_whole_reads(db, plan: PhysicalPlan) -> list[str]:
    """Accesses of ``plan`` (and of its FROM-subqueries) that read a table without a key
    prefix or range, bounded neither by a stop-after nor by the table itself (a periodic
    view holds a fixed number of rows; a view without key holds one)."""
    views = {v.name: v for v in db.plan.views}
    bad = []
    for access in plan.accesses:
        if access.subplan is not None:
            bad += unbounded_whole_reads(db, access.subplan)
            continue
        if access.key_columns or access.range or access.stop_after is not None:
            continue
        view = views.get(access.table)
        if view is None or not (view.kind == "periodic" or not view.key):
            bad.append(f"{access.alias} ({access.table})")
    return bad


def parameter_sets(db, query, most: int = 12) -> list[dict[str, Any]]:
    """Parameter sets drawn from the values present in the compared columns, and one absent
    (as workload.parameter_choices, with every name quoted: the apps include odd names).
    Every parameter is drawn: those of IN lists, filters and ON conditions from the column
    they are compared with, a ``LIMIT <n>`` from 0 to its maximum."""
    block = query.query.block
    domains: dict[str, list[Any]] = {}
    for spec in param_specs(db.plan.catalog, block):
        if block.limit_param is not None and spec.name == block.limit_param.name:
            domains[spec.name] = [block.limit, 0, 1]
            continue
        absent = next(v for v in (0, 0.5, "zz") if fits(spec.declared_type, v))
        if spec.table is None or spec.column is None:
            domains[spec.name] = _case_mapped(db, block, spec.name) or [
                1 if fits(spec.declared_type, 1) else "a", absent]
            continue
        present = db.store.sql(f"SELECT {sqlgen.identifier(spec.column, 'sqlite')} FROM "
                               f"{sqlgen.identifier(spec.table, 'sqlite')}")
        values = sorted({v for (v,) in present if v is not None}, key=sqlvalues.sort_key)
        if spec.epoch_width is not None:
            values = sorted({sqlvalues.epoch(v, spec.epoch_width) for v in values})
        domains[spec.name] = values[:3] + values[-1:] + [absent]
    combos: list[dict[str, Any]] = [{}]
    for name, domain in domains.items():
        combos = [c | {name: v} for c in combos for v in dict.fromkeys(domain)][:most]
    return combos


def _case_mapped(db, block, name: str) -> list[Any]:
    """Values for a parameter compared with ``LOWER(column)`` / ``UPPER(column)`` (itself
    or its ``LOWER`` / ``UPPER``): the column's values so mapped, and one absent."""
    for cond in walk([block.predicates, block.filters]):
        if not isinstance(cond, (Predicate, Compare)):
            continue
        for call, other in ((cond.left, cond.right), (cond.right, cond.left)):
            if isinstance(call, Call) and call.func in (Func.LOWER, Func.UPPER) \
                    and isinstance(call.args[0], Attr) and Param(name) in (
                        other, getattr(other, "args", (None,))[0]):
                table = block.relation(call.args[0].alias).table
                present = db.store.sql(
                    f"SELECT {sqlgen.identifier(call.args[0].column, 'sqlite')} FROM "
                    f"{sqlgen.identifier(table, 'sqlite')}")
                mapped = sqlvalues.lower if call.func == Func.LOWER else sqlvalues.upper
                values = sorted({mapped(v) for (v,) in present if v is not None})
                return values[:3] + ["zz"]
    return []


# -- PostgreSQL ------------------------------------------------------------------

def seq_scans(connection, query: CompiledQuery, params: dict[str, Any]) -> list[str]:
    """Base relations PostgreSQL's plan reads with a Seq Scan (with seq scans disabled, so
    one appears only where no index can serve), other than those the plan reads whole."""
    connection.execute("SET enable_seqscan = off")
    try:
        (document,), = connection.execute("EXPLAIN (FORMAT JSON) " + query.sql,
                                          query.arguments(params)).fetchall()
    finally:
        connection.execute("RESET enable_seqscan")
    whole = {r.table for r in query.reads if r.whole}
    ordered = flat_and_ordered(query)
    found = []

    def visit(node: dict, in_level: bool) -> None:
        if node.get("Node Type") == "Seq Scan" and node.get("Relation Name") not in whole:
            found.append(f"Seq Scan on {node.get('Relation Name')}")
        in_level = in_level or bool(LEVEL_CTE.match(node.get("Subplan Name", "")))
        if "Sort" in node.get("Node Type", "") and (in_level or ordered) and _reads_base(node):
            found.append(f"{node['Node Type']} of rows read from a table")  # not a stop-after
        for child in node.get("Plans", ()):
            visit(child, in_level)

    visit(document[0]["Plan"], False)
    return found


def _reads_base(node: dict) -> bool:
    """Does ``node`` read a stored table itself (CTEs are piql's bounded intermediates)?"""
    return "Relation Name" in node or any(_reads_base(c) for c in node.get("Plans", ()))


LEVEL_CTE = re.compile(r"CTE _piql_(d\d+_)*l\d+$")
