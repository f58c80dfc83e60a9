"""``piql plan --dialect``: the DDL of every index and view and the SQL of every rule."""
from __future__ import annotations

from sqlglot import exp

from piql import sqlgen
from piql.planner.application import Plan
from piql.planner.maintenance import DeltaQuery, rule_sql
from piql.planner.naming import key_index_name
from piql.planner.physical import KeyExpression
from piql.query_block import Attr, Call
from piql.planner.views import RuleAction, ViewDef, ViewKind

# Spark SQL has no clustered keys or secondary indexes: the store keeps those.
KEYLESS_DIALECTS = ("spark",)


def render(plan: Plan, dialect: str) -> str:
    out = [f"-- piql plan for {plan.queries_file} ({dialect})", ""]
    for title, indexes in (("secondary indexes", plan.indexes),
                           ("indexes writes check constraints through", plan.check_indexes)):
        if not indexes:
            continue
        out.append(f"-- {title}")
        for index in indexes:
            if dialect in KEYLESS_DIALECTS:
                out.append(f"-- {index.name} on {index.table}({', '.join(index.columns)}): "
                           "kept by the serving store; Spark has no indexes")
            else:
                parts = tuple(Call(p.func, (Attr(index.table, p.column),))
                              if isinstance(p, KeyExpression) else p for p in index.parts)
                out.append(sqlgen.create_index(index.table, parts, index.name, dialect,
                                               unique=index.unique) + ";")
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
    lines = view_header(view)
    lines += [statement + ";" for statement in create_table(view, dialect)]
    for column, hidden in view.exact_sums:
        lines.append(f"-- the store also keeps {column} exactly, as a rational in a hidden TEXT "
                     f"column {hidden}, and {column} holds it rounded (docs/views.md)")
    return lines + _view_sql(view, dialect)


def view_header(view: ViewDef) -> list[str]:
    """Comment lines naming a view, its kind, queries, key, storage bound and partitions."""
    key = ", ".join(c.name for c in view.key)
    bound = ""
    if view.storage is not None:
        bound = f"; storage <= {view.storage.factor} x |{view.storage.relation}|" \
            if view.storage.relation else f"; storage <= {view.storage.factor} rows"
    lines = [f"-- view {view.name} ({view.kind}) for {', '.join(view.for_queries)}: "
             f"key ({key}){bound}"]
    if view.staging is not None:
        lines.append(f"-- rows are spread over {view.staging.partitions} partitions by "
                     f"HASH({', '.join(view.staging.partitioned_by)}); piql computes it on write")
    return lines


def _view_sql(view: ViewDef, dialect: str) -> list[str]:
    lines: list[str] = []
    if view.kind == ViewKind.PERIODIC and view.refresh is not None:
        lines.append(f"-- refreshed every {view.refresh.refresh_every} by one task per partition "
                     f"of {view.refresh.staging}, each reading at most "
                     f"{view.refresh.per_partition_bound} rows, merged as:")
        lines.append(sqlgen.block_sql(view.definition, dialect) + ";")
        for rule in view.rules:
            if rule.action == RuleAction.MARK:
                lines.append(f"-- {rule.name}: on {rule.event} of one {rule.table} row, mark the "
                             f"epochs of these windowed rows for the next refresh:")
                lines.append(_delta_sql(rule.delta, rule.guards, dialect) + ";")
        for frozen in view.frozen:
            lines.append(f"-- updates of {frozen.table} that change {', '.join(frozen.columns)} "
                         "are refused (their windows are not reached by bounded lookups)")
        return lines
    name = sqlgen.identifier(view.name, dialect)
    build = f"INSERT INTO {name} {sqlgen.block_sql(view.definition, dialect)};"
    if view.kind == ViewKind.STAGING:
        build = staging_build(view, dialect)
    lines.append(build)
    for rule in view.rules:
        delta = DeltaQuery(rule.table, rule.aliases, rule.delta, rule.guards,
                           tuple(c.name for c in view.columns if not c.key) if view.aggregate else ())
        lines.append(rule_sql(rule.name, rule.event, delta, view.name, rule.action, dialect) + ";")
    return lines


def staging_build(view: ViewDef, dialect: str) -> str:
    """A staging view's build, shown as a comment: the partition is a hash piql computes per
    row, which SQL does not."""
    name = sqlgen.identifier(view.name, dialect)
    columns = ", ".join(sqlgen.identifier(c.name, dialect) for c in view.columns)
    select = sqlgen.block_sql(view.definition, dialect).replace("SELECT ", "SELECT <partition>, ", 1)
    return f"-- initial build (piql fills partition per row): INSERT INTO {name} ({columns}) {select};"


def create_table(view: ViewDef, dialect: str) -> list[str]:
    """The view's storage as the runtime creates it: a table clustered on the view key; or,
    when the key may hold NULL (which a primary key refuses), a plain table with a unique
    index on the key."""
    names = [(c.name, c.type) for c in view.columns]
    key = [c.name for c in view.key]
    columns: list[exp.Expression] = [
        exp.ColumnDef(this=sqlgen.ident(name), kind=exp.DataType.build(_type(kind)))
        for name, kind in names]
    clustered = dialect not in KEYLESS_DIALECTS and not view.nullable_key
    if clustered:
        columns.append(exp.PrimaryKey(expressions=[sqlgen.ident(k) for k in key]))
    statement = sqlgen.render(exp.Create(kind="TABLE", this=exp.Schema(
        this=sqlgen.table_ref(view.name), expressions=columns)), dialect)
    if clustered:
        return [statement + (" WITHOUT ROWID" if dialect == "sqlite" else "")]
    if dialect in KEYLESS_DIALECTS:
        return [statement]
    index = sqlgen.render(exp.Create(kind="INDEX", unique=True, this=exp.Index(
        this=sqlgen.ident(key_index_name(view.name)), table=sqlgen.table_ref(view.name),
        params=exp.IndexParameters(columns=[sqlgen.column_ref(k) for k in key]))), dialect)
    return [statement, index]


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
