"""SQL text for query blocks, indexes, views and rules, in any dialect sqlglot speaks.

Blocks are turned into sqlglot trees and rendered by sqlglot, so every
dialect gets its own quoting and parameter syntax. ``dialect=None`` renders
the paper's notation, with parameters written ``<name>``.
"""
from __future__ import annotations

from sqlglot import exp

from piql.query import (
    Aggregate, Attr, Epoch, Literal, Operand, OrderItem, Param, Predicate, QueryBlock, Ratio,
    default_name,
)

DIALECTS = ("sqlite", "duckdb", "spark", "postgres")
AGGREGATE_NODES = {
    "COUNT": exp.Count, "SUM": exp.Sum, "AVG": exp.Avg, "MIN": exp.Min, "MAX": exp.Max,
}


def expression(value: object, paper: bool = True, qualify: bool = True) -> exp.Expression:
    """The sqlglot node for an operand or select expression."""
    if isinstance(value, Attr):
        return exp.column(value.column, table=value.alias if qualify else None)
    if isinstance(value, Param):
        return exp.Var(this=f"<{value.name}>") if paper else exp.Placeholder(this=value.name)
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
    if isinstance(value, exp.Expression):
        return value
    raise TypeError(f"cannot render {value!r}")


def predicate(pred: Predicate, paper: bool = True, qualify: bool = True) -> exp.Expression:
    node = {"=": exp.EQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE}[pred.op]
    return node(this=expression(pred.left, paper, qualify),
                expression=expression(pred.right, paper, qualify))


def select(block: QueryBlock, paper: bool = True) -> exp.Select:
    """The SELECT statement of ``block`` (FROM-subqueries rendered inline).

    Columns are qualified by their alias only when the block reads several relations.
    """
    q = len(block.relations) > 1
    items = [_select_item(item.name, item.expr, paper, q) for item in block.select]
    query = exp.select(*items) if items and not _selects_all(block) else exp.select(exp.Star())
    for position, rel in enumerate(block.relations):
        if rel.subquery is not None:
            alias = None if rel.implicit_alias else exp.TableAlias(this=exp.to_identifier(rel.alias))
            source: exp.Expression = exp.Subquery(this=select(rel.subquery, paper), alias=alias)
        else:
            source = exp.to_table(rel.table)
            if rel.alias != rel.table:
                source = source.as_(rel.alias)
        query = query.from_(source) if position == 0 else query.join(source)
    if block.predicates:
        query = query.where(exp.and_(*(predicate(p, paper, q) for p in block.predicates)))
    if block.group_by:
        query = query.group_by(*(expression(g, paper, q) for g in block.group_by))
    if block.order_by:
        query = query.order_by(*(_ordered(o, paper, q) for o in block.order_by))
    if block.limit is not None:
        query = query.limit(block.limit)
    return query


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
    return exp.alias_(node, name)


def _ordered(item: OrderItem, paper: bool, qualify: bool) -> exp.Ordered:
    # piql's columns hold no NULLs; saying so keeps sqlglot from adding NULLS LAST.
    return exp.Ordered(this=expression(item.expr, paper, qualify), desc=item.desc or None,
                       nulls_first=not item.desc)


def render(node: exp.Expression, dialect: str | None = None, pretty: bool = False) -> str:
    return node.sql(dialect=dialect or "", pretty=pretty)


def block_sql(block: QueryBlock, dialect: str | None = None, pretty: bool = False) -> str:
    """``block`` as SQL; the paper's ``<param>`` notation unless a dialect is named."""
    return render(select(block, paper=dialect is None), dialect, pretty)


def create_index(table: str, columns: tuple[str, ...], name: str, dialect: str | None = None) -> str:
    index = exp.Create(
        kind="INDEX", this=exp.Index(
            this=exp.to_identifier(name), table=exp.to_table(table),
            params=exp.IndexParameters(columns=[exp.column(c) for c in columns])))
    return render(index, dialect)


def operand_text(value: Operand) -> str:
    return render(expression(value))
