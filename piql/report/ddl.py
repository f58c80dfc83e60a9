"""``piql plan --dialect``: the DDL of every index and view and the SQL of every rule."""
from __future__ import annotations

from sqlglot import exp

from piql import sqlgen
from piql.planner.application import Plan
from piql.planner.maintenance import DeltaQuery, rule_sql
from piql.planner.views import MARK, PERIODIC, STAGING, ViewDef

# Spark SQL has no clustered keys or secondary indexes: the store keeps those.
KEYLESS_DIALECTS = ("spark",)


def render(plan: Plan, dialect: str) -> str:
    out = [f"-- piql plan for {plan.queries_file} ({dialect})", ""]
    if plan.indexes:
        out.append("-- secondary indexes")
        for index in plan.indexes:
            if dialect in KEYLESS_DIALECTS:
                out.append(f"-- {index.name} on {index.table}({', '.join(index.columns)}): "
                           "kept by the serving store; Spark has no indexes")
            else:
                out.append(sqlgen.create_index(index.table, index.columns, index.name, dialect) + ";")
        out.append("")
    for view in plan.views:
        out += _view(view, dialect) + [""]
    out.append("-- queries")
    for query in plan.queries:
        out.append(f"-- {query.name}: {query.level}"
                   + (f", ops <= {query.ops_bound}" if query.ops_bound is not None else ""))
        if query.physical is not None:
            out.append(sqlgen.block_sql(query.physical.block, dialect) + ";")
        elif query.query.block is not None:
            out.append(sqlgen.block_sql(query.query.block, dialect) + ";  -- unbounded")
    return "\n".join(out) + "\n"


def _view(view: ViewDef, dialect: str) -> list[str]:
    key = ", ".join(c.name for c in view.key)
    bound = ""
    if view.storage is not None:
        bound = f"; storage <= {view.storage.factor} x |{view.storage.relation}|" \
            if view.storage.relation else f"; storage <= {view.storage.factor} rows"
    lines = [f"-- view {view.name} ({view.kind}) for {', '.join(view.for_queries)}: "
             f"key ({key}){bound}"]
    if view.kind == STAGING:
        lines.append(f"-- rows are spread over {view.extra['partitions']} partitions by "
                     f"HASH({', '.join(view.extra['partitioned_by'])}); piql computes it on write")
    lines.append(create_table(view, dialect) + ";")
    if view.kind == PERIODIC:
        lines.append(f"-- refreshed every {view.extra['refresh_every']} by one task per partition "
                     f"of {view.extra['staging']}, each reading at most "
                     f"{view.extra['per_partition_ops_bound']} rows, merged as:")
        lines.append(sqlgen.block_sql(view.definition, dialect) + ";")
        for rule in view.rules:
            if rule.action == MARK:
                lines.append(f"-- {rule.name}: on {rule.event} of one {rule.table} row, mark the "
                             f"epochs of these windowed rows for the next refresh:")
                lines.append(_delta_sql(rule.delta, rule.guards, dialect) + ";")
        for frozen in view.frozen:
            lines.append(f"-- updates of {frozen.table} that change {', '.join(frozen.columns)} "
                         "are refused (their windows are not reached by bounded lookups)")
        return lines
    name = sqlgen.identifier(view.name, dialect)
    build = f"INSERT INTO {name} {sqlgen.block_sql(view.definition, dialect)};"
    if view.kind == STAGING:
        # The partition is a hash piql computes per row, so the build is shown, not runnable.
        columns = ", ".join(sqlgen.identifier(c.name, dialect) for c in view.columns)
        select = sqlgen.block_sql(view.definition, dialect).replace("SELECT ", "SELECT <partition>, ", 1)
        build = f"-- initial build (piql fills partition per row): INSERT INTO {name} ({columns}) {select};"
    lines.append(build)
    for rule in view.rules:
        delta = DeltaQuery(rule.table, rule.aliases, rule.delta, rule.guards,
                           tuple(c.name for c in view.columns if not c.key) if view.aggregate else ())
        lines.append(rule_sql(rule.name, rule.event, delta, view.name, rule.action, dialect) + ";")
    return lines


def create_table(view: ViewDef, dialect: str) -> str:
    """The view's storage: a table clustered on the view key."""
    names = [(c.name, c.type) for c in view.columns]
    key = [c.name for c in view.key]
    columns: list[exp.Expression] = [
        exp.ColumnDef(this=sqlgen.ident(name), kind=exp.DataType.build(_type(kind)))
        for name, kind in names]
    if dialect not in KEYLESS_DIALECTS:
        columns.append(exp.PrimaryKey(expressions=[sqlgen.ident(k) for k in key]))
    statement = sqlgen.render(exp.Create(kind="TABLE", this=exp.Schema(
        this=sqlgen.table_ref(view.name), expressions=columns)), dialect)
    return statement + (" WITHOUT ROWID" if dialect == "sqlite" else "")


def _delta_sql(block, guards, dialect: str) -> str:
    query = sqlgen.select(block, paper=False)
    if guards:
        query = query.where(exp.and_(*(sqlgen.predicate(g, paper=False) for g in guards)))
    return sqlgen.render(query, dialect)


def _type(name: str) -> str:
    try:
        exp.DataType.build(name)
        return name
    except Exception:  # a type sqlglot does not know: keep the value as text
        return "VARCHAR"
