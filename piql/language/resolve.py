"""Resolution: one sqlglot SELECT -> a :class:`~piql.query_block.QueryBlock` against the
catalog, with the constructs outside piql's subset collected as Unsupported."""
from __future__ import annotations

import difflib
from typing import Container

from sqlglot import exp

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.language.positions import Places
from dataclasses import replace

from piql.query_block import (
    default_name, Aggregate, Attr, Call, Case, Compare, Condition, Epoch, Expr, Func, InList,
    JoinKind, Junction, Like, Literal, Negation, NullTest, Operand, OrderItem, Param, Predicate,
    QueryBlock, Relation, Scalar, SelectItem, UNION_ALIAS, Unsupported,
    normalized_predicate,
)

INT64 = (-2**63, 2**63 - 1)

AGGREGATES = {
    exp.Count: "COUNT", exp.Sum: "SUM", exp.Avg: "AVG", exp.Min: "MIN", exp.Max: "MAX",
    exp.Median: "MEDIAN", exp.Variance: "VARIANCE", exp.VariancePop: "VAR_POP",
    exp.Stddev: "STDDEV", exp.StddevPop: "STDDEV_POP", exp.StddevSamp: "STDDEV_SAMP",
}
COMPARISON_NODES = {exp.EQ: "=", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
UNSUPPORTED_NODES: dict[type, tuple[str, str]] = {
    exp.ILike: ("ILIKE", "write LOWER(column) LIKE LOWER(<pattern>)"),
    exp.Window: ("window function", "use GROUP BY, or ORDER BY ... LIMIT"),
    exp.Intersect: ("INTERSECT", "rewrite as a join"),
    exp.Except: ("EXCEPT", "not supported"),
}
UNSUPPORTED_TYPES = tuple(UNSUPPORTED_NODES)
# Scalar functions piql computes itself (SQLite's semantics, piql.runtime.sqlvalues).
FUNCTION_NODES: dict[type, Func] = {
    exp.Add: Func.ADD, exp.Sub: Func.SUB, exp.Mul: Func.MUL, exp.Div: Func.DIV,
    exp.Mod: Func.MOD, exp.DPipe: Func.CONCAT, exp.Neg: Func.NEG, exp.Lower: Func.LOWER,
    exp.Upper: Func.UPPER, exp.Length: Func.LENGTH, exp.Nullif: Func.NULLIF,
    exp.Coalesce: Func.COALESCE,
}
CASTS = {
    Func.CAST_INTEGER: {"INT", "BIGINT", "SMALLINT", "TINYINT", "INTEGER"},
    Func.CAST_REAL: {"FLOAT", "DOUBLE", "REAL"},
    Func.CAST_TEXT: {"TEXT", "VARCHAR", "CHAR", "NVARCHAR"},
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

    def __init__(self, catalog: Catalog, places: Places,
                 limit_maxima: dict[str, int] | None = None) -> None:
        self.catalog = catalog
        self.places = places
        self.limit_maxima = {k.lower(): v for k, v in (limit_maxima or {}).items()}
        self._semi: set[int] = set()  # ids of the EXISTS / IN (SELECT) read as semi-joins
        self._inner: Relation | None = None  # a semi-join subquery's table: its names first
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
        if isinstance(node, exp.Union):
            return self._union(node)
        if not isinstance(node, exp.Select):
            construct = UNSUPPORTED_NODES.get(type(node), (type(node).__name__.upper(), ""))
            self.refuse(node, *construct)
            return QueryBlock(relations=())
        where = node.args["where"].this if node.args.get("where") else None
        semi_nodes = _semi_join_conjuncts(where) if where is not None else []
        self._semi |= {id(n) for n in semi_nodes}
        self._refuse_clauses(node)
        relations, join_conditions = self._relations(node)
        predicates: list[Predicate] = []
        filters: list[Condition] = []
        conditions = join_conditions + ([where] if where is not None else [])
        for condition in conditions:
            for found in self._conjuncts(condition, relations):
                (predicates if isinstance(found, Predicate) else filters).append(found)
        # A condition on a LEFT-joined relation holds after its rows are NULL-extended: a
        # filter on the joined rows, never a key to read that relation (or another) by.
        outer = {r.alias for r in relations if r.join == JoinKind.LEFT}
        for pred in [p for p in predicates if p.aliases() & outer]:
            predicates.remove(pred)
            filters.append(pred)
        select = self._select(node, relations)
        group_by = self._group_by(node, relations)
        order_by = tuple(self._order(o, relations, select)
                         for o in (node.args["order"].expressions if node.args.get("order") else []))
        having: list[Condition] = []
        if node.args.get("having"):
            having = [c for c in (self._condition(node.args["having"].this, relations,
                                                  aggregates=True),) if c is not None]
        limit, limit_param = self._limit(node)
        # semi-joins last: their tables are not visible outside their subqueries
        visible = list(relations)
        for semi in semi_nodes:
            joined = self._semi_join(semi, visible)
            if joined is not None:
                relations.append(joined)
        return QueryBlock(tuple(relations), tuple(predicates), select, group_by,
                          tuple(o for o in order_by if o is not None), limit,
                          filters=tuple(filters), having=tuple(having),
                          distinct=bool(node.args.get("distinct")), offset=self._offset(node),
                          limit_param=limit_param)

    def _refuse_clauses(self, node: exp.Select) -> None:
        distinct = node.args.get("distinct")
        if distinct is not None and distinct.args.get("on"):
            self.refuse(distinct, "DISTINCT ON", "use GROUP BY, or ORDER BY ... LIMIT 1")
        # one walk of the tree for the three kinds of node looked for (in its order)
        unsupported, membership, subqueries = [], [], []
        for found in node.walk():
            if isinstance(found, UNSUPPORTED_TYPES):
                unsupported.append(found)
            if isinstance(found, (exp.In, exp.Exists)):
                membership.append(found)
            if isinstance(found, (exp.Subquery, exp.Select)):
                subqueries.append(found)
        for found in unsupported:
            if found is node:
                continue
            self.refuse(found, *UNSUPPORTED_NODES[type(found)])
        for found in membership:
            if id(found) in self._semi or self._inside_semi(found):
                continue
            if isinstance(found, exp.Exists):
                self.refuse(found, "EXISTS", "make EXISTS (...) a condition of the WHERE "
                            "clause's top-level AND, or rewrite the subquery as a join")
            elif found.args.get("query") is not None:
                self.refuse(found, "NOT IN (SELECT ...)" if isinstance(found.parent, exp.Not)
                            else "IN (SELECT ...)",
                            "write NOT EXISTS (SELECT ... WHERE ...)" if isinstance(
                                found.parent, exp.Not) else
                            "make IN (SELECT ...) a condition of the WHERE clause's top-level "
                            "AND, or rewrite the subquery as a join")
        for sub in subqueries:
            if sub is node or isinstance(sub.parent, exp.Subquery) or _inside_from(sub, node):
                continue  # the Subquery around a Select is the one reported; FROM is resolved
            if self._inside_semi(sub):
                continue
            if not self._inside_reported(sub):  # e.g. IN (SELECT ...) is reported as IN
                self.refuse(sub, "subquery outside FROM", "rewrite it as a join")

    def _union(self, node: exp.Union) -> QueryBlock:
        """``a UNION [ALL] b ...``: each branch a block of its own; ORDER BY, LIMIT and
        OFFSET apply to the whole and name output columns."""
        branches: list[tuple[exp.Expression, bool]] = []
        current: exp.Expression = node
        while isinstance(current, exp.Union) and (current is node or not (
                current.args.get("order") or current.args.get("limit"))):
            branches.insert(0, (current.expression, not current.args.get("distinct")))
            current = current.this
        branches.insert(0, (current, True))
        blocks = []
        for branch, all_ in branches:
            while isinstance(branch, exp.Subquery):
                branch = branch.this
            if isinstance(branch, exp.Select) and (branch.args.get("order")
                                                   or branch.args.get("limit")):
                self.refuse(branch, "ORDER BY or LIMIT inside a UNION branch",
                            "order and limit the whole UNION, after its last branch")
            blocks.append((self.block(branch), all_))
        if self.unsupported:
            return QueryBlock(relations=())
        names = tuple(item.name for item in blocks[0][0].select)
        for branch, _ in blocks[1:]:
            if len(branch.select) != len(names):
                raise self.error(node, f"the branches of this UNION select {len(names)} and "
                                       f"{len(branch.select)} columns; they must select as many")
        select = tuple(SelectItem(n, Attr(UNION_ALIAS, n)) for n in names)
        order = []
        for item in node.args["order"].expressions if node.args.get("order") else []:
            target = item.this
            named = [n for n in names if isinstance(target, exp.Column) and not target.table
                     and n.lower() == target.name.lower()]
            if not named:
                self.refuse(item, f"ORDER BY {node_text(target)} of a UNION",
                            "order a UNION by the names of its output columns")
                continue
            order.append(OrderItem(Attr(UNION_ALIAS, named[0]), bool(item.args.get("desc"))))
        limit, limit_param = self._limit(node)  # type: ignore[arg-type]
        return QueryBlock((), select=select, order_by=tuple(order), limit=limit,
                          offset=self._offset(node), limit_param=limit_param,  # type: ignore[arg-type]
                          unions=tuple(blocks))

    def _inside_semi(self, node: exp.Expression) -> bool:
        return _has_ancestor_in(node, self._semi)

    def _semi_join(self, node: exp.Expression, relations: list[Relation]) -> Relation | None:
        """``[NOT] EXISTS (SELECT ... FROM t WHERE ...)`` or ``x IN (SELECT c FROM t WHERE
        ...)`` as a semi-join (anti-join) with ``t``: its conditions (and ``x = t.c``) are
        the join's, so the probe of each outer row stops at its first match."""
        negated = isinstance(node, exp.Not)
        core = node.this if negated else node
        query = core.this if isinstance(core, exp.Exists) else core.args["query"].this
        while isinstance(query, exp.Subquery):
            query = query.this
        shape = _semi_join_shape(query)
        if shape:
            self.refuse(core, f"{'NOT ' if negated else ''}"
                        f"{'EXISTS' if isinstance(core, exp.Exists) else 'IN (SELECT ...)'} "
                        f"with {shape}", "a semi-join reads one table: "
                        "EXISTS (SELECT 1 FROM t WHERE t.key = outer.column AND ...)")
            return None
        table_node = (query.args.get("from_") or query.args.get("from")).this
        inner = self._relation(table_node)
        if inner is None:
            return None
        if any(r.alias.lower() == inner.alias.lower() for r in relations):
            self.refuse(table_node, f"a subquery table with the alias '{inner.alias}' of an "
                        "outer table", "give the subquery's table its own alias")
            return None
        scope = relations + [inner]
        self._inner = inner
        try:
            on: list[Condition] = []
            where = query.args.get("where")
            if where is not None:
                on += self._conjuncts(where.this, scope)
            if isinstance(core, exp.In):
                (column,) = query.expressions
                left = self._simple(core.this, relations)
                right = self._simple(column.unalias() if isinstance(column, exp.Alias)
                                     else column, scope)
                if left is None or right is None:
                    self.refuse(core, f"IN (SELECT ...) of '{node_text(core.this)}'",
                                "compare a column with the subquery's column")
                    return None
                on.append(normalized_predicate(right, "=", left, self.where(core)))
        finally:
            self._inner = None
        return replace(inner, join=JoinKind.ANTI if negated else JoinKind.SEMI, on=tuple(on))

    def _inside_reported(self, node: exp.Expression) -> bool:
        return _has_ancestor_in(node, self._refused)

    def _relations(self, node: exp.Select) -> tuple[list[Relation], list[exp.Expression]]:
        items = []
        if node.args.get("from_") or node.args.get("from"):
            items.append((node.args.get("from_") or node.args.get("from")).this)
        conditions: list[exp.Expression] = []
        left_on: dict[int, exp.Expression] = {}  # position in items -> a LEFT JOIN's ON
        for join in node.args.get("joins") or []:
            side, kind = (join.side or "").upper(), (join.kind or "").upper()
            if side == "LEFT" and kind in ("", "OUTER") and join.args.get("on") is not None:
                left_on[len(items)] = join.args["on"]
            elif side in ("LEFT", "RIGHT", "FULL") or kind in ("OUTER", "ANTI", "SEMI"):
                self.refuse(join, f"{side or kind} OUTER JOIN".replace("OUTER OUTER", "OUTER"),
                            "write LEFT JOIN ... ON, or an inner join")
            elif join.args.get("on"):
                conditions.append(join.args["on"])
            if join.args.get("using"):
                self.refuse(join, "JOIN ... USING", "write the join condition with ON")
            items.append(join.this)
        relations: list[Relation] = []
        for position, item in enumerate(items):
            relation = self._relation(item)
            if relation is None:
                continue
            if any(r.alias.lower() == relation.alias.lower() for r in relations):
                raise self.error(item, f"duplicate relation alias '{relation.alias}'; "
                                       "give each occurrence its own alias")
            if position in left_on:
                # ON sees the relations to its left and this one (SQL's scope of a LEFT JOIN)
                on = self._conjuncts(left_on[position], relations + [relation])
                relation = replace(relation, join=JoinKind.LEFT, on=tuple(on))
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
            if self._inner is not None and any(c.lower() == name.lower()
                                               for c in self._inner.columns):
                candidates = [self._inner]  # a subquery's own columns hide the outer ones
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
            elif id(current) in self._semi:
                continue  # a semi-join: a relation of the block, not a condition
            elif isinstance(current, exp.Between):
                low = exp.GTE(this=current.this.copy(), expression=current.args["low"].copy())
                high = exp.LTE(this=current.this.copy(), expression=current.args["high"].copy())
                pending += [high, low]
            else:
                condition = self._condition(current, relations)
                if condition is not None:
                    found.append(condition)
        return found

    def _condition(self, node: exp.Expression, relations: list[Relation],
                   aggregates: bool = False) -> Condition | None:
        """One condition: a key comparison (:class:`Predicate`, which plans use to reach
        rows) where it is one, else a filter computed on the bounded rows."""
        if isinstance(node, exp.Paren):
            return self._condition(node.this, relations, aggregates)
        op = COMPARISON_NODES.get(type(node))
        if op is not None and not aggregates:
            left, right = self._simple(node.this, relations), self._simple(node.expression, relations)
            if left is not None and right is not None:
                predicate = normalized_predicate(left, op, right, self.where(node))
                if predicate.kind != "other":
                    return predicate
        if op is not None or isinstance(node, exp.NEQ):
            left = self._scalar(node.this, relations, aggregates)
            right = self._scalar(node.expression, relations, aggregates)
            if left is None or right is None:
                return None
            return Compare(left, op or "<>", right)
        if isinstance(node, exp.Like):
            arg = self._scalar(node.this, relations, aggregates)
            pattern = self._scalar(node.expression, relations, aggregates)
            if node.args.get("escape") is not None:
                self.refuse(node, "LIKE ... ESCAPE", "match the literal characters with =")
                return None
            return None if arg is None or pattern is None else \
                Like(arg, pattern, bool(node.args.get("negate")))
        if isinstance(node, exp.Is):
            if not isinstance(node.expression, exp.Null):
                self.refuse(node, f"IS {node_text(node.expression)}", "compare with =")
                return None
            arg = self._scalar(node.this, relations, aggregates)
            return None if arg is None else NullTest(arg)
        if isinstance(node, exp.In):
            if node.args.get("query") is not None:
                return None  # reported with the clauses
            arg = self._scalar(node.this, relations, aggregates)
            values = [self._scalar(v, relations, aggregates) for v in node.expressions]
            if arg is None or any(v is None for v in values):
                return None
            return InList(arg, tuple(values))  # type: ignore[arg-type]
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this.copy(), expression=node.args["low"].copy())
            high = exp.LTE(this=node.this.copy(), expression=node.args["high"].copy())
            return self._junction(True, [low, high], relations, aggregates)
        if isinstance(node, (exp.And, exp.Or)):
            return self._junction(isinstance(node, exp.And), _flatten(node), relations,
                                  aggregates)
        if isinstance(node, exp.Not):
            inner = self._condition(node.this, relations, aggregates)
            if inner is None:
                return None
            if isinstance(inner, (NullTest, InList, Like)):
                return replace(inner, negated=not inner.negated)
            return Negation(inner)
        if not self.reported(node):
            self.refuse(node, f"condition '{node_text(node)}'",
                        "use comparisons, LIKE, IN, IS NULL joined with AND, OR, NOT")
        return None

    def _junction(self, conjunctive: bool, nodes: list[exp.Expression],
                  relations: list[Relation], aggregates: bool) -> Condition | None:
        parts = [self._condition(n, relations, aggregates) for n in nodes]
        if any(p is None for p in parts):
            return None
        if not conjunctive:
            alternatives = _as_in_list(parts)  # id = <a> OR id = <b>: one key, n values
            if alternatives is not None:
                return alternatives
        return Junction(conjunctive, tuple(parts))  # type: ignore[arg-type]

    def _simple(self, node: exp.Expression, relations: list[Relation]) -> Operand | None:
        """``node`` as an operand a key comparison can use (a column, a parameter, a literal,
        a time-window epoch), or None, reporting nothing."""
        while isinstance(node, exp.Paren):
            node = node.this
        if isinstance(node, (exp.Column, exp.Placeholder, exp.Literal, exp.Boolean)) or (
                isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal)
                and not node.this.is_string):
            return self._operand(node, relations)
        return self._epoch(node, relations)

    def _scalar(self, node: exp.Expression, relations: list[Relation],
                aggregates: bool = False) -> Scalar | None:
        """Any value expression piql computes locally: operands, arithmetic, COALESCE,
        NULLIF, LOWER, UPPER, LENGTH, ``||``, casts, CASE, and (where ``aggregates``)
        aggregate calls."""
        while isinstance(node, exp.Paren):
            node = node.this
        if aggregates:
            for klass, name in AGGREGATES.items():
                if type(node) is klass:
                    return self._aggregate(node, name, relations)
        elif any(type(node) is klass for klass in AGGREGATES):
            self.refuse(node, f"aggregate '{node_text(node)}' here",
                        "aggregates belong in SELECT, HAVING or ORDER BY")
            return None
        if isinstance(node, exp.Null):
            return Literal(None, "NULL")
        simple = self._simple(node, relations)
        if simple is not None or isinstance(node, (exp.Column, exp.Placeholder, exp.Literal)):
            return simple
        func = FUNCTION_NODES.get(type(node))
        if func is not None:
            children = [node.this] + ([node.expression] if node.args.get("expression") is not None
                                      else []) + list(node.expressions or [])
            args = [self._scalar(c, relations, aggregates) for c in children]
            if any(a is None for a in args):
                return None
            return Call(func, tuple(args))  # type: ignore[arg-type]
        if isinstance(node, (exp.Cast, exp.TryCast)):
            target = node.to.this.name if node.to is not None else ""
            func = next((f for f, names in CASTS.items() if target in names), None)
            if func is None:
                self.refuse(node, f"CAST to {node.to.sql() if node.to else '?'}",
                            "cast to INTEGER, REAL or TEXT")
                return None
            arg = self._scalar(node.this, relations, aggregates)
            return None if arg is None else Call(func, (arg,))
        if isinstance(node, exp.Case):
            subject = node.this
            whens = []
            for arm in node.args.get("ifs") or []:
                if subject is not None:
                    left = self._scalar(subject, relations, aggregates)
                    right = self._scalar(arm.this, relations, aggregates)
                    condition = None if left is None or right is None else Compare(left, "=", right)
                else:
                    condition = self._condition(arm.this, relations, aggregates)
                    if isinstance(condition, Predicate):
                        condition = Compare(condition.left, condition.op, condition.right)
                result = self._scalar(arm.args["true"], relations, aggregates)
                if condition is None or result is None:
                    return None
                whens.append((condition, result))
            default = node.args.get("default")
            otherwise = None if default is None else self._scalar(default, relations, aggregates)
            if default is not None and otherwise is None:
                return None
            return Case(tuple(whens), otherwise)
        if not self.reported(node):
            self.refuse(node, f"expression '{node_text(node)}'",
                        "use arithmetic, COALESCE, NULLIF, LOWER, UPPER, LENGTH, ||, CAST or "
                        "CASE, or compute it in the application")
        return None

    def _expr(self, node: exp.Expression, relations: list[Relation],
              clause: str = "SELECT") -> Expr | None:
        for klass, name in AGGREGATES.items():
            if type(node) is klass:
                return self._aggregate(node, name, relations)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("MEDIAN", "PERCENTILE"):
            return Aggregate(node.name.upper(), None)
        operand = self._scalar(node, relations, aggregates=True)
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
            inner = self._scalar(arg, relations)
            return None if inner is None else Aggregate(name, inner, distinct)
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

    def _limit(self, node: exp.Select) -> tuple[int | None, Param | None]:
        """The LIMIT, and its parameter for ``LIMIT <n>`` (then the LIMIT is the maximum
        its ``-- max: n N`` option line declares)."""
        limit = node.args.get("limit")
        if limit is None:
            return None, None
        value = limit.expression
        if isinstance(value, exp.Placeholder) and value.meta.get("param"):
            most = self.limit_maxima.get(value.name.lower())
            if most is None:
                self.refuse(limit, f"LIMIT <{value.name}>",
                            f"a LIMIT parameter needs a declared maximum: add the option line "
                            f"'-- max: {value.name} 100' "
                            f"before the SQL, or write LIMIT 100")
                return None, None
            return most, Param(value.name)
        if not _is_int_literal(value) or int(value.this) < 0:
            self.refuse(limit, f"LIMIT {node_text(value)}",
                        "LIMIT takes an integer literal, or a parameter with '-- max:'")
            return None, None
        return self._in_range(int(value.this), value), None

    def _offset(self, node: exp.Select) -> int:
        offset = node.args.get("offset")
        if offset is None:
            return 0
        value = offset.expression
        if not _is_int_literal(value):
            self.refuse(offset, f"OFFSET {node_text(value)}", "OFFSET takes an integer literal")
            return 0
        if node.args.get("limit") is None:
            self.refuse(offset, "OFFSET without LIMIT",
                        "add LIMIT n: ORDER BY ... LIMIT n OFFSET m reads n + m rows")
            return 0
        return self._in_range(int(value.this), value)

    def _in_range(self, number: int | float, node: exp.Expression) -> int | float:
        """``number``, if SQL stores it: an integer must fit in 64 bits (SQLite, DuckDB and
        PostgreSQL BIGINT), or the query would fail, or overflow, when it runs."""
        if isinstance(number, int) and not INT64[0] <= number <= INT64[1]:
            raise self.error(node, f"integer {number} is outside the 64-bit range SQL stores "
                                   f"({INT64[0]} to {INT64[1]})")
        return number


def _semi_join_conjuncts(where: exp.Expression) -> list[exp.Expression]:
    """The ``[NOT] EXISTS (...)`` and ``x IN (SELECT ...)`` conditions of the WHERE clause's
    top-level AND (elsewhere, under OR or NOT, they are not semi-joins)."""
    found, pending = [], [where]
    while pending:
        current = pending.pop()
        if isinstance(current, exp.Paren):
            pending.append(current.this)
        elif isinstance(current, exp.And):
            pending += [current.expression, current.this]
        elif isinstance(current, exp.Exists) or (
                isinstance(current, exp.Not) and isinstance(current.this, exp.Exists)) or (
                isinstance(current, exp.In) and current.args.get("query") is not None):
            found.append(current)
    return found


def _semi_join_shape(query: exp.Expression) -> str:
    """What keeps a semi-join subquery from being one bounded probe, or ''."""
    if not isinstance(query, exp.Select):
        return f"a {type(query).__name__.upper()}"
    if query.args.get("joins"):
        return "a join inside"
    for key, what in (("group", "GROUP BY"), ("having", "HAVING"), ("limit", "LIMIT"),
                      ("order", "ORDER BY"), ("with_", "WITH"), ("offset", "OFFSET")):
        if query.args.get(key):
            return what
    source = query.args.get("from_") or query.args.get("from")
    if source is None or not isinstance(source.this, exp.Table):
        return "no table"
    if any(isinstance(e, exp.AggFunc) for s in query.expressions for e in s.walk()):
        return "an aggregate"
    return ""


def _flatten(node: exp.Expression) -> list[exp.Expression]:
    """The operands of a chain of one connective (a OR b OR c), iteratively."""
    kind, found, pending = type(node), [], [node]
    while pending:
        current = pending.pop()
        while isinstance(current, exp.Paren) and isinstance(current.this, kind):
            current = current.this
        if isinstance(current, kind):
            pending += [current.expression, current.this]
        else:
            found.append(current)
    return found


def _as_in_list(parts: list) -> InList | None:
    """``c = v1 OR c = v2 ...`` (each a key comparison of one column with a known value,
    or an IN list of it) as one ``c IN (v1, v2, ...)``."""
    column, values = None, []
    for part in parts:
        if isinstance(part, Predicate) and part.op == "=" and isinstance(part.left, Attr) \
                and isinstance(part.right, (Param, Literal)):
            found, more = part.left, [part.right]
        elif isinstance(part, InList) and not part.negated and isinstance(part.arg, Attr):
            found, more = part.arg, list(part.values)
        else:
            return None
        if column is not None and found != column:
            return None
        column = found
        values += more
    return None if column is None else InList(column, tuple(values))


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


def _has_ancestor_in(node: exp.Expression, ids: Container[int]) -> bool:
    """Whether a node above ``node`` has its ``id`` in ``ids``."""
    parent = node.parent
    while parent is not None:
        if id(parent) in ids:
            return True
        parent = parent.parent
    return False
