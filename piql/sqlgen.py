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
    Aggregate, Attr, Epoch, Literal, Operand, OrderItem, Param, Predicate, QueryBlock, Ratio,
    default_name,
)

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
            alias = None if rel.implicit_alias else exp.TableAlias(this=ident(rel.alias))
            source: exp.Expression = exp.Subquery(this=select(rel.subquery, paper), alias=alias)
        else:
            source = table_ref(rel.table)  # type: ignore[arg-type]
            if rel.alias != rel.table:
                source.set("alias", exp.TableAlias(this=ident(rel.alias)))
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


def create_index(table: str, columns: tuple[str, ...], name: str, dialect: str | None = None) -> str:
    index = exp.Create(
        kind="INDEX", this=exp.Index(
            this=ident(name), table=table_ref(table),
            params=exp.IndexParameters(columns=[column_ref(c) for c in columns])))
    return render(index, dialect)


def operand_text(value: Operand) -> str:
    return render(expression(value))
