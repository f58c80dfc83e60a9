"""Resolution: one sqlglot SELECT -> a :class:`~piql.query_block.QueryBlock` against the
catalog, with the constructs outside piql's subset collected as Unsupported."""
from __future__ import annotations

import difflib

from sqlglot import exp

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.language.positions import Places
from piql.query_block import (
    default_name, Aggregate, Attr, Epoch, Expr, Literal, Operand, OrderItem,
    Param, QueryBlock, Relation, SelectItem, Unsupported, normalized_predicate,
)

INT64 = (-2**63, 2**63 - 1)

AGGREGATES = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
    exp.Median: "MEDIAN", exp.Variance: "VARIANCE", exp.VariancePop: "VAR_POP",
    exp.Stddev: "STDDEV", exp.StddevPop: "STDDEV_POP", exp.StddevSamp: "STDDEV_SAMP",
}
COMPARISON_NODES = {exp.EQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
UNSUPPORTED_NODES: dict[type, tuple[str, str]] = {
    exp.Or: ("OR", "split the query into one query per alternative"),
    exp.Not: ("NOT", "state the condition positively"),
    exp.Like: ("LIKE", "keep a word table keyed on the word and compare with ="),
    exp.ILike: ("ILIKE", "keep a word table keyed on the word and compare with ="),
    exp.In: ("IN", "run one query per value, or join with a table of the values"),
    exp.Exists: ("EXISTS", "rewrite the subquery as a join"),
    exp.Window: ("window function", "use GROUP BY, or ORDER BY ... LIMIT"),
    exp.NEQ: ("<>", "a bounded plan cannot skip values; filter in the application"),
    exp.Is: ("IS", "NULL tests are not supported"),
    exp.Case: ("CASE", "compute the value in the application"),
    exp.Union: ("UNION", "split the query into one query per branch"),
    exp.Intersect: ("INTERSECT", "rewrite as a join"),
    exp.Except: ("EXCEPT", "not supported"),
    exp.Distinct: ("DISTINCT", "group by the selected columns instead"),
}


def node_text(node: exp.Expression) -> str:
    """The SQL of ``node`` for messages, with parameters written as the user did."""
    def as_written(n: exp.Expression) -> exp.Expression:
        if isinstance(n, exp.Placeholder) and n.meta.get("param"):
            return exp.var(n.meta.get("written", f"<{n.name}>"))
        return n
    text = node.transform(as_written).sql()
    return text if len(text) <= 80 else text[:77] + "..."


class Resolver:
    """Turns one sqlglot SELECT into a QueryBlock, collecting unsupported constructs."""

    def __init__(self, catalog: Catalog, places: Places) -> None:
        self.catalog = catalog
        self.places = places
        self.unsupported: list[Unsupported] = []
        self._refused: set[int] = set()  # ids of the nodes already reported

    # -- reporting ---------------------------------------------------------
    def where(self, node: exp.Expression) -> Location:
        return self.places.of(node)

    def refuse(self, node: exp.Expression, construct: str, hint: str = "") -> None:
        """Report ``node`` as unsupported, once however many checks come across it."""
        if id(node) in self._refused:
            return
        self._refused.add(id(node))
        found = Unsupported(construct, self.where(node), hint)
        if found not in self.unsupported:
            self.unsupported.append(found)

    def reported(self, node: exp.Expression) -> bool:
        """Whether ``node`` or a part of it was reported already (so not again as a whole)."""
        return any(id(n) in self._refused for n in node.walk())

    def error(self, node: exp.Expression, message: str) -> InputError:
        return InputError(message, self.where(node))

    # -- the block ---------------------------------------------------------
    def block(self, node: exp.Expression) -> QueryBlock:
        cte = node.args.get("with_") or node.args.get("with")  # 'with_' from sqlglot 26 on
        if cte is not None:
            # The CTE names tables the catalog does not have: resolving further would
            # only add "unknown table" errors.
            self.refuse(cte, "WITH (common table expression)", "inline the subquery in FROM")
            return QueryBlock(relations=())
        if not isinstance(node, exp.Select):
            construct = UNSUPPORTED_NODES.get(type(node), (type(node).__name__.upper(), ""))
            self.refuse(node, *construct)
            return QueryBlock(relations=())
        self._refuse_clauses(node)
        relations, join_conditions = self._relations(node)
        predicates = []
        for condition in join_conditions + ([node.args["where"].this] if node.args.get("where") else []):
            predicates += self._conjuncts(condition, relations)
        select = self._select(node, relations)
        group_by = self._group_by(node, relations)
        order_by = tuple(self._order(o, relations, select)
                         for o in (node.args["order"].expressions if node.args.get("order") else []))
        return QueryBlock(tuple(relations), tuple(predicates), select, group_by,
                          tuple(o for o in order_by if o is not None), self._limit(node))

    def _refuse_clauses(self, node: exp.Select) -> None:
        for key, construct, hint in (
            ("having", "HAVING", "filter the grouped rows in the application"),
            ("offset", "OFFSET", "page with a key range: WHERE key > <last> ORDER BY key LIMIT n"),
            ("distinct", "DISTINCT", "group by the selected columns instead"),
        ):
            if node.args.get(key):
                self.refuse(node.args[key], construct, hint)
        for found in node.find_all(*UNSUPPORTED_NODES):
            # DISTINCT of the select list is reported above; inside COUNT(DISTINCT x) it is fine.
            if isinstance(found, exp.Distinct) or found is node:
                continue
            self.refuse(found, *UNSUPPORTED_NODES[type(found)])
        for sub in node.find_all(exp.Subquery, exp.Select):
            if sub is node or isinstance(sub.parent, exp.Subquery) or _inside_from(sub, node):
                continue  # the Subquery around a Select is the one reported; FROM is resolved
            if not self._inside_reported(sub):  # e.g. IN (SELECT ...) is reported as IN
                self.refuse(sub, "subquery outside FROM", "rewrite it as a join")

    def _inside_reported(self, node: exp.Expression) -> bool:
        parent = node.parent
        while parent is not None:
            if id(parent) in self._refused:
                return True
            parent = parent.parent
        return False

    def _relations(self, node: exp.Select) -> tuple[list[Relation], list[exp.Expression]]:
        items = []
        if node.args.get("from_") or node.args.get("from"):
            items.append((node.args.get("from_") or node.args.get("from")).this)
        conditions: list[exp.Expression] = []
        for join in node.args.get("joins") or []:
            side, kind = (join.side or "").upper(), (join.kind or "").upper()
            if side in ("LEFT", "RIGHT", "FULL") or kind in ("OUTER", "ANTI", "SEMI"):
                self.refuse(join, f"{side or kind} OUTER JOIN".replace("OUTER OUTER", "OUTER"),
                            "only inner joins are supported")
            if join.args.get("using"):
                self.refuse(join, "JOIN ... USING", "write the join condition with ON")
            if join.args.get("on"):
                conditions.append(join.args["on"])
            items.append(join.this)
        relations: list[Relation] = []
        for item in items:
            relation = self._relation(item)
            if relation is None:
                continue
            if any(r.alias.lower() == relation.alias.lower() for r in relations):
                raise self.error(item, f"duplicate relation alias '{relation.alias}'; "
                                       "give each occurrence its own alias")
            relations.append(relation)
        if not relations and not self.unsupported:
            self.refuse(node, "SELECT without FROM", "")
        return relations, conditions

    def _relation(self, item: exp.Expression) -> Relation | None:
        if isinstance(item, exp.Table):
            table = self.catalog.table(item.name)
            if table is None:
                known = ", ".join(t.name for t in self.catalog.tables)
                close = _closest(item.name, [t.name for t in self.catalog.tables])
                meant = f"; did you mean '{close}'?" if close else ""
                raise self.error(item, f"unknown table '{item.name}'{meant} (known tables: "
                                       f"{known})")
            alias = item.alias or table.name
            return Relation(alias, table.column_names, table=table.name)
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Query):
            inner = self.block(item.this)
            if not inner.relations:
                return None
            alias = item.alias or (inner.relations[0].alias if len(inner.relations) == 1 else "sub")
            return Relation(alias, tuple(s.name for s in inner.select), subquery=inner,
                            implicit_alias=not item.alias)
        self.refuse(item, f"FROM {type(item).__name__.lower()}", "FROM takes tables and subqueries")
        return None

    # -- expressions -------------------------------------------------------
    def _attr(self, column: exp.Column, relations: list[Relation]) -> Attr:
        name, qualifier = column.name, column.table
        if qualifier:
            matches = [r for r in relations if r.alias.lower() == qualifier.lower()]
            if not matches:
                raise self.error(column, f"unknown relation '{qualifier}' in '{qualifier}.{name}'")
            candidates = matches
        else:
            candidates = relations
        found = [(r, c) for r in candidates for c in r.columns if c.lower() == name.lower()]
        if not found:
            where = f"relation '{qualifier}'" if qualifier else "any relation of the query"
            raise self.error(column, f"unknown column '{name}' in {where}"
                             f"{_closest_column(name, candidates, bool(qualifier))}")
        if len(found) > 1:
            options = ", ".join(f"{r.alias}.{c}" for r, c in found)
            raise self.error(column, f"ambiguous column '{name}': could be {options}")
        relation, canonical = found[0]
        return Attr(relation.alias, canonical)

    def _operand(self, node: exp.Expression, relations: list[Relation]) -> Operand | None:
        if isinstance(node, exp.Paren):
            return self._operand(node.this, relations)
        if isinstance(node, exp.Column):
            return self._attr(node, relations)
        if isinstance(node, exp.Placeholder):
            if node.meta.get("param"):
                return Param(node.name)
            self.refuse(node, f"parameter '{node.sql()}'", "write parameters as <name>")
            return None
        if isinstance(node, exp.Literal):
            value: object = node.this if node.is_string else \
                self._in_range(_number(node.this), node)
            return Literal(value, node.sql())
        if isinstance(node, exp.Boolean):
            return Literal(node.this, node.sql())
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return Literal(self._in_range(-_number(node.this.this), node.this), node.sql())
        epoch = self._epoch(node, relations)
        if epoch is not None:
            return epoch
        if not self.reported(node):  # e.g. CASE or a window function: reported by name
            self.refuse(node, f"expression '{node_text(node)}'",
                        "compare columns with parameters, literals or other columns")
        return None

    def _epoch(self, node: exp.Expression, relations: list[Relation]) -> Epoch | None:
        """``ts - ts % w`` or ``ts - MOD(ts, w)``: the §3.3 epoch of a time window."""
        if not isinstance(node, exp.Sub):
            return None
        modulo = node.expression.unnest() if isinstance(node.expression, exp.Paren) else node.expression
        if not isinstance(modulo, exp.Mod) or not isinstance(node.this, exp.Column):
            return None
        if not isinstance(modulo.this, exp.Column) or not _is_int_literal(modulo.expression):
            return None
        attr, again = self._attr(node.this, relations), self._attr(modulo.this, relations)
        width = self._in_range(int(modulo.expression.this), modulo.expression)
        if attr != again or width <= 0:
            return None
        return Epoch(attr, width)

    def _conjuncts(self, node: exp.Expression, relations: list[Relation]) -> list:
        """The comparisons of an AND of conditions, left to right. Iterative: a chain of n
        ANDs is a tree n deep, which recursion could not walk for long chains."""
        found: list = []
        pending = [node]
        while pending:
            current = pending.pop()
            if isinstance(current, exp.Paren):
                pending.append(current.this)
            elif isinstance(current, exp.And):
                pending += [current.expression, current.this]
            elif isinstance(current, exp.Between):
                low = exp.GTE(this=current.this.copy(), expression=current.args["low"].copy())
                high = exp.LTE(this=current.this.copy(), expression=current.args["high"].copy())
                pending += [high, low]
            else:
                predicate = self._comparison(current, relations)
                if predicate is not None:
                    found.append(predicate)
        return found

    def _comparison(self, node: exp.Expression, relations: list[Relation]):
        op = COMPARISON_NODES.get(type(node))
        if op is None:
            if not self.reported(node):  # OR, LIKE, ... are reported by name
                self.refuse(node, f"condition '{node_text(node)}'",
                            "use =, <, <=, >, >= joined with AND")
            return None
        left, right = self._operand(node.this, relations), self._operand(node.expression, relations)
        if left is None or right is None:
            return None
        predicate = normalized_predicate(left, op, right, self.where(node))
        if predicate.kind == "other":
            self.refuse(node, f"condition '{node_text(node)}' without a column",
                        "every condition must involve a column")
            return None
        return predicate

    def _expr(self, node: exp.Expression, relations: list[Relation],
              clause: str = "SELECT") -> Expr | None:
        for klass, name in AGGREGATES.items():
            if type(node) is klass:
                return self._aggregate(node, name, relations)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("MEDIAN", "PERCENTILE"):
            return Aggregate(node.name.upper(), None)
        operand = self._operand(node, relations)
        if isinstance(operand, Param):
            self.refuse(node, f"parameter in {clause}", "the application already knows it")
            return None
        return operand

    def _aggregate(self, node: exp.Expression, name: str, relations: list[Relation]) -> Aggregate | None:
        arg = node.this
        distinct = isinstance(arg, exp.Distinct)
        if distinct:
            arg = arg.expressions[0] if arg.expressions else None
        if arg is None or isinstance(arg, exp.Star):
            return Aggregate(name, None, distinct)
        if not isinstance(arg, exp.Column):
            if not self.reported(arg):
                self.refuse(node, f"aggregate of expression '{node_text(arg)}'", "aggregate a column")
            return None
        return Aggregate(name, self._attr(arg, relations), distinct)

    def _select(self, node: exp.Select, relations: list[Relation]) -> tuple[SelectItem, ...]:
        items: list[SelectItem] = []
        for projection in node.expressions:
            alias = projection.alias if isinstance(projection, exp.Alias) else None
            target = projection.this if isinstance(projection, exp.Alias) else projection
            if isinstance(target, exp.Star):
                items += [SelectItem(c, Attr(r.alias, c)) for r in relations for c in r.columns]
                continue
            if isinstance(target, exp.Column) and isinstance(target.this, exp.Star):
                rel = [r for r in relations if r.alias.lower() == target.table.lower()]
                if not rel:
                    raise self.error(target, f"unknown relation '{target.table}' in '{target.sql()}'")
                items += [SelectItem(c, Attr(rel[0].alias, c)) for c in rel[0].columns]
                continue
            expr = self._expr(target, relations)
            if expr is None:
                continue
            items.append(SelectItem(alias or default_name(expr, len(items)), expr))
        return _unique_names(items)

    def _group_by(self, node: exp.Select, relations: list[Relation]) -> tuple:
        groups = []
        for item in node.args["group"].expressions if node.args.get("group") else []:
            group = self._operand(item, relations)
            if isinstance(group, (Attr, Epoch)):
                groups.append(group)
            elif group is not None:  # GROUP BY 1 means the first output column in SQL
                self.refuse(item, f"GROUP BY {node_text(item)}", "group by columns, named")
        return tuple(groups)

    def _order(self, node: exp.Ordered, relations: list[Relation],
               select: tuple[SelectItem, ...]) -> OrderItem | None:
        target, desc = node.this, bool(node.args.get("desc"))
        if isinstance(target, exp.Column) and not target.table:
            # A bare name is an output column first (SQLite, PostgreSQL), even when an
            # input column has the same name.
            named = [s for s in select if s.name.lower() == target.name.lower()]
            if named:
                return OrderItem(named[0].expr, desc)
        expr = self._expr(target, relations, "ORDER BY")
        return None if expr is None else OrderItem(expr, desc)

    def _limit(self, node: exp.Select) -> int | None:
        limit = node.args.get("limit")
        if limit is None:
            return None
        value = limit.expression
        if not _is_int_literal(value) or int(value.this) < 0:
            self.refuse(limit, f"LIMIT {node_text(value)}", "LIMIT takes an integer literal")
            return None
        return self._in_range(int(value.this), value)

    def _in_range(self, number: int | float, node: exp.Expression) -> int | float:
        """``number``, if SQL stores it: an integer must fit in 64 bits (SQLite, DuckDB and
        PostgreSQL BIGINT), or the query would fail, or overflow, when it runs."""
        if isinstance(number, int) and not INT64[0] <= number <= INT64[1]:
            raise self.error(node, f"integer {number} is outside the 64-bit range SQL stores "
                                   f"({INT64[0]} to {INT64[1]})")
        return number


def _inside_from(sub: exp.Expression, root: exp.Expression) -> bool:
    parent = sub.parent
    while parent is not None and parent is not root:
        if isinstance(parent, (exp.From, exp.Join)):
            return True
        parent = parent.parent
    return False


def _is_int_literal(node: exp.Expression) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this.isdigit()


def _number(text: str) -> int | float:
    try:
        return int(text)
    except ValueError:
        return float(text)


def _unique_names(items: list[SelectItem]) -> tuple[SelectItem, ...]:
    """Output names must be unique (views and derived tables are keyed by them)."""
    seen: dict[str, int] = {}
    result = []
    for item in items:
        key = item.name.lower()
        if key in seen:
            seen[key] += 1
            item = SelectItem(f"{item.name}_{seen[key]}", item.expr)
        else:
            seen[key] = 1
        result.append(item)
    return tuple(result)


def _closest(name: str, options: list[str]) -> str | None:
    """The option ``name`` was most likely meant to be (case aside), if one is close."""
    lowered = {o.lower(): o for o in options}
    close = difflib.get_close_matches(name.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close else None


def _closest_column(name: str, relations: list[Relation], qualified: bool) -> str:
    """``; did you mean 'c'?`` (``'r.c'`` when the query has several relations), or ``''``."""
    spelled = {}
    for relation in relations:
        for column in relation.columns:
            shown = column if qualified or len(relations) == 1 else f"{relation.alias}.{column}"
            spelled.setdefault(column, shown)
    close = _closest(name, list(spelled))
    return f"; did you mean '{spelled[close]}'?" if close else ""
