"""SQL text for query blocks, indexes, views and rules, in any dialect sqlglot speaks.

Blocks are turned into sqlglot trees and rendered by sqlglot, so every
dialect gets its own quoting and parameter syntax. Names are never parsed:
they become identifier nodes, and every identifier of a statement rendered
in a dialect is quoted (a column may be called ``group`` or ``gr"oup``).
``dialect=None`` renders the paper's notation, for people, with parameters
written ``<name>`` and names quoted only where they must be.
"""
from __future__ import annotations

import re

from sqlglot import exp

from piql.query_block import (
    Aggregate, Attr, Call, Case, Compare, Epoch, Func, InList, JoinKind, Junction, Like, Literal,
    Negation, NullTest, Operand, OrderItem, Param, Predicate, QueryBlock, Ratio, default_name,
)

BINARY = {Func.ADD: exp.Add, Func.SUB: exp.Sub, Func.MUL: exp.Mul, Func.DIV: exp.Div,
          Func.MOD: exp.Mod, Func.CONCAT: exp.DPipe, Func.NULLIF: exp.Nullif}
UNARY = {Func.LOWER: exp.Lower, Func.UPPER: exp.Upper, Func.LENGTH: exp.Length}
CAST_TYPES = {Func.CAST_INTEGER: "INTEGER", Func.CAST_REAL: "REAL", Func.CAST_TEXT: "TEXT"}
COMPARE_NODES = {"=": exp.EQ, "<>": exp.NEQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT,
                 ">=": exp.GTE}

DIALECTS = ("sqlite", "duckdb", "spark", "postgres")
AGGREGATE_NODES = {
    "COUNT": exp.Count, "SUM": exp.Sum, "AVG": exp.Avg, "MIN": exp.Min, "MAX": exp.Max,
}
# Words a name cannot be unquoted in the paper's notation (it is never executed, but should
# read as SQL); statements in a dialect quote every name anyway.
RESERVED = frozenset("""
    all and as asc between by case check constraint create cross default delete desc distinct
    else end except exists foreign from full group having in index inner insert intersect into
    is join key left like limit not null offset on or order outer primary references right
    select set table then to union unique update using values when where with
""".split())


def ident(name: str) -> exp.Identifier:
    """``name`` as an identifier node, quoted where the paper's notation needs it."""
    plain = exp.SAFE_IDENTIFIER_RE.match(name) and name.lower() not in RESERVED
    return exp.to_identifier(name, quoted=not plain)


def table_ref(name: str) -> exp.Table:
    """A table reference built from its name (never parsed)."""
    return exp.Table(this=ident(name))


def column_ref(name: str, alias: str | None = None) -> exp.Column:
    return exp.Column(this=ident(name), table=ident(alias) if alias else None)


def identifier(name: str, dialect: str) -> str:
    """``name`` quoted as an identifier of ``dialect``, for SQL text piql writes by hand."""
    return exp.to_identifier(name, quoted=True).sql(dialect=dialect)


def default_clause(value: object, dialect: str) -> str:
    """`` DEFAULT <value>`` for a column's constant DEFAULT (empty for None), the value
    written as a literal of ``dialect`` by sqlglot: DDL binds no parameters."""
    return "" if value is None else f" DEFAULT {literal(value, dialect)}"


def literal(value: object, dialect: str) -> str:
    """A constant (int, float, str, bool) as a SQL literal of ``dialect``, quoted by sqlglot.
    TRUE and FALSE are 1 and 0: the stores keep a BOOLEAN column as an integer."""
    return exp.convert(int(value) if isinstance(value, bool) else value).sql(dialect=dialect)


def expression(value: object, paper: bool = True, qualify: bool = True) -> exp.Expression:
    """The sqlglot node for an operand or select expression."""
    if isinstance(value, Attr):
        return column_ref(value.column, value.alias if qualify else None)
    if isinstance(value, Param):
        if paper:
            return exp.Var(this=f"<{value.name}>")
        # a delta rule's parameters are the written row's columns, which may be any name;
        # a placeholder cannot be quoted, so keep its word characters
        return exp.Placeholder(this=re.sub(r"\W", "_", value.name))
    if isinstance(value, Literal):
        if isinstance(value.value, str):
            return exp.Literal.string(value.value)
        if isinstance(value.value, bool):
            return exp.Boolean(this=value.value)
        return exp.Literal.number(value.value)
    if isinstance(value, Epoch):
        column = expression(value.attr, paper, qualify)
        modulo = exp.Mod(this=column.copy(), expression=exp.Literal.number(value.width))
        return exp.paren(exp.Sub(this=column, expression=exp.paren(modulo)))
    if isinstance(value, Aggregate):
        node_type = AGGREGATE_NODES.get(value.func)
        argument: exp.Expression = exp.Star() if value.arg is None \
            else expression(value.arg, paper, qualify)
        if value.distinct:
            argument = exp.Distinct(expressions=[argument])
        if node_type is None:
            return exp.Anonymous(this=value.func, expressions=[argument])
        return node_type(this=argument)
    if isinstance(value, Ratio):
        return exp.Div(this=expression(value.numerator, paper, qualify),
                       expression=expression(value.denominator, paper, qualify))
    if isinstance(value, Call):
        args = [expression(a, paper, qualify) for a in value.args]
        if value.func == Func.DIV:  # SQLite's: integer division of integers
            return exp.paren(exp.Div(this=args[0], expression=args[1], typed=True))
        if value.func in BINARY:
            return exp.paren(BINARY[value.func](this=args[0], expression=args[1]))
        if value.func in UNARY:
            return UNARY[value.func](this=args[0])
        if value.func == Func.NEG:
            return exp.Neg(this=args[0])
        if value.func == Func.COALESCE:
            return exp.Coalesce(this=args[0], expressions=args[1:])
        return exp.Cast(this=args[0], to=exp.DataType.build(CAST_TYPES[value.func]))
    if isinstance(value, Case):
        return exp.Case(ifs=[exp.If(this=condition(c, paper, qualify),
                                    true=expression(v, paper, qualify)) for c, v in value.whens],
                        default=None if value.default is None
                        else expression(value.default, paper, qualify))
    if isinstance(value, exp.Expression):
        return value
    raise TypeError(f"cannot render {value!r}")


def condition(value: object, paper: bool = True, qualify: bool = True) -> exp.Expression:
    """The sqlglot node of a condition (a key comparison or a filter)."""
    if isinstance(value, (Predicate, Compare)):
        return COMPARE_NODES[value.op](this=expression(value.left, paper, qualify),
                                       expression=expression(value.right, paper, qualify))
    if isinstance(value, Like):
        node: exp.Expression = exp.Like(this=expression(value.arg, paper, qualify),
                                        expression=expression(value.pattern, paper, qualify))
    elif isinstance(value, NullTest):
        node = exp.Is(this=expression(value.arg, paper, qualify), expression=exp.Null())
    elif isinstance(value, InList):
        node = exp.In(this=expression(value.arg, paper, qualify),
                      expressions=[expression(v, paper, qualify) for v in value.values])
    elif isinstance(value, Junction):
        parts = [condition(p, paper, qualify) for p in value.parts]
        return exp.paren(exp.and_(*parts) if value.conjunctive else exp.or_(*parts))
    elif isinstance(value, Negation):
        return exp.Not(this=exp.paren(condition(value.part, paper, qualify)))
    else:
        raise TypeError(f"cannot render {value!r}")
    return exp.Not(this=node) if getattr(value, "negated", False) else node


def predicate(pred: Predicate, paper: bool = True, qualify: bool = True) -> exp.Expression:
    if pred.op not in ("=", "<", "<=", ">", ">="):
        return condition(pred, paper, qualify)
    node = {"=": exp.EQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}[pred.op]
    return node(this=expression(pred.left, paper, qualify),
                expression=expression(pred.right, paper, qualify))


def select(block: QueryBlock, paper: bool = True) -> exp.Select:
    """The SELECT statement of ``block`` (FROM-subqueries rendered inline).

    Columns are qualified by their alias only when the block reads several relations.
    """
    if block.unions:
        return _union(block, paper)  # type: ignore[return-value]
    q = len(block.relations) > 1
    items = [_select_item(item.name, item.expr, paper, q) for item in block.select]
    query = exp.select(*items) if items and not _selects_all(block) else exp.select(exp.Star())
    if block.distinct:
        query.set("distinct", exp.Distinct())
    semi: list[exp.Expression] = []
    for position, rel in enumerate(block.relations):
        if rel.join in (JoinKind.SEMI, JoinKind.ANTI):
            inner = exp.select(exp.Literal.number(1)).from_(_aliased(rel))
            if rel.on:
                inner = inner.where(exp.and_(*(condition(c, paper, True) for c in rel.on)))
            found: exp.Expression = exp.Exists(this=inner)
            semi.append(exp.Not(this=found) if rel.join == JoinKind.ANTI else found)
            continue
        if rel.join == JoinKind.LEFT:
            on = exp.and_(*(condition(c, paper, q) for c in rel.on)) if rel.on else exp.true()
            query = query.join(_aliased(rel), on=on, join_type="LEFT")
            continue
        if rel.subquery is not None:
            alias = None if rel.implicit_alias else exp.TableAlias(this=ident(rel.alias))
            source: exp.Expression = exp.Subquery(this=select(rel.subquery, paper), alias=alias)
        else:
            source = table_ref(rel.table)  # type: ignore[arg-type]
            if rel.alias != rel.table:
                source.set("alias", exp.TableAlias(this=ident(rel.alias)))
        query = query.from_(source) if position == 0 else query.join(source)
    conditions = [predicate(p, paper, q) for p in block.predicates] + \
        [condition(f, paper, q) for f in block.filters] + semi
    if conditions:
        query = query.where(exp.and_(*conditions))
    if block.group_by:
        query = query.group_by(*(expression(g, paper, q) for g in block.group_by))
    if block.having:
        query = query.having(exp.and_(*(condition(c, paper, q) for c in block.having)))
    if block.order_by:
        query = query.order_by(*(_ordered(o, paper, q) for o in block.order_by))
    if block.limit_param is not None:
        query = query.limit(expression(block.limit_param, paper, q))
    elif block.limit is not None:
        query = query.limit(block.limit)
    if block.offset:
        query = query.offset(block.offset)
    return query


def _aliased(rel) -> exp.Table:
    source = table_ref(rel.table)
    if rel.alias != rel.table:
        source.set("alias", exp.TableAlias(this=ident(rel.alias)))
    return source


def _union(block: QueryBlock, paper: bool) -> exp.Expression:
    """A UNION [ALL] block: its branches, then ORDER BY / LIMIT / OFFSET of the whole."""
    node: exp.Expression = select(block.unions[0][0], paper)
    for branch, all_ in block.unions[1:]:
        node = exp.Union(this=node, expression=select(branch, paper), distinct=not all_)
    if block.order_by:
        node.set("order", exp.Order(expressions=[
            exp.Ordered(this=column_ref(o.expr.column), desc=o.desc or None,  # type: ignore[union-attr]
                        nulls_first=not o.desc) for o in block.order_by]))
    if block.limit is not None:
        node.set("limit", exp.Limit(expression=exp.Literal.number(block.limit)))
    if block.offset:
        node.set("offset", exp.Offset(expression=exp.Literal.number(block.offset)))
    return node


def _selects_all(block: QueryBlock) -> bool:
    """``SELECT *``: every column of the only relation, in order, under its own name."""
    if len(block.relations) != 1:
        return False
    rel = block.relations[0]
    wanted = [(c, Attr(rel.alias, c)) for c in rel.columns]
    return [(i.name, i.expr) for i in block.select] == wanted


def _select_item(name: str, value: object, paper: bool, qualify: bool) -> exp.Expression:
    node = expression(value, paper, qualify)
    if isinstance(value, (Attr, Aggregate)) and default_name(value, 0) == name:
        return node
    return exp.alias_(node, ident(name))


def _ordered(item: OrderItem, paper: bool, qualify: bool) -> exp.Ordered:
    # NULLs sort as the store (SQLite) sorts them, first ascending and last descending;
    # spelled out so that every dialect (PostgreSQL, DuckDB, Spark) orders them the same.
    return exp.Ordered(this=expression(item.expr, paper, qualify), desc=item.desc or None,
                       nulls_first=not item.desc)


def render(node: exp.Expression, dialect: str | None = None, pretty: bool = False) -> str:
    """SQL text of ``node``: in a dialect every identifier quoted, else the paper's notation."""
    return node.sql(dialect=dialect or "", pretty=pretty, identify=dialect is not None)


def block_sql(block: QueryBlock, dialect: str | None = None, pretty: bool = False) -> str:
    """``block`` as SQL; the paper's ``<param>`` notation unless a dialect is named."""
    return render(select(block, paper=dialect is None), dialect, pretty)


def create_index(table: str, columns: tuple[object, ...], name: str, dialect: str | None = None,
                 unique: bool = False) -> str:
    """``CREATE [UNIQUE] INDEX``; a key part is a column name or an expression
    (``Call(LOWER, (Attr(table, 'email'),))``)."""
    parts = [column_ref(c) if isinstance(c, str) else expression(c, qualify=False)
             for c in columns]
    index = exp.Create(
        kind="INDEX", unique=unique, this=exp.Index(
            this=ident(name), table=table_ref(table),
            params=exp.IndexParameters(columns=parts)))
    return render(index, dialect)


def operand_text(value: Operand) -> str:
    return render(expression(value))
