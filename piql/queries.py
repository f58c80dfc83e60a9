"""The queries file: ``-- name:`` blocks of parameterized SQL, parsed with sqlglot.

``load_queries`` splits the file into blocks, turns ``<param>`` placeholders
into sqlglot named parameters (keeping every character offset, so positions
map back to the file), and normalizes each statement into a
:class:`~piql.query.QueryBlock` resolved against the catalog. Constructs
outside the supported subset are collected per query as
:class:`~piql.query.Unsupported`; mistakes (syntax errors, unknown or ambiguous
names) raise :class:`~piql.errors.InputError`.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from piql.catalog import Catalog
from piql.errors import InputError, Location
from piql.interval import parse_interval
from piql.query import (
    COMPARISONS, default_name, Aggregate, Attr, Epoch, Expr, Literal, NamedQuery, Operand, OrderItem,
    Param, QueryBlock, Relation, SelectItem, Unsupported, normalized_predicate,
)

NAME_LINE = re.compile(r"^\s*--\s*name\s*:\s*(\S*)\s*$", re.IGNORECASE)
OPTION_LINE = re.compile(r"^\s*--\s*(periodic|view)\s*:\s*(.*?)\s*$", re.IGNORECASE)
PLACEHOLDER = re.compile(r"<([A-Za-z_][A-Za-z0-9_]*)>")
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

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


def load_queries(path: str | Path, catalog: Catalog) -> tuple[NamedQuery, ...]:
    """Read and resolve the queries file at ``path``."""
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise InputError(f"cannot read queries file: {err.strerror}",
                         Location(str(path), 1, 1)) from None
    return parse_queries(text, catalog, str(path))


def parse_queries(text: str, catalog: Catalog, file: str = "<queries>") -> tuple[NamedQuery, ...]:
    """Parse every ``-- name:`` block of ``text``; the first mistake raises InputError."""
    queries: list[NamedQuery] = []
    errors: list[InputError] = []
    for chunk in _split_blocks(text, file):
        try:
            queries.append(_parse_named(chunk, text, catalog, file))
        except InputError as err:
            errors.append(err)
    if errors:
        first = errors[0]
        first.all_errors = errors  # type: ignore[attr-defined]
        raise first
    return tuple(queries)


@dataclass(frozen=True)
class _Chunk:
    name: str
    location: Location
    options: dict[str, str]
    start: int  # offset of the SQL in the file
    sql: str


def _split_blocks(text: str, file: str) -> list[_Chunk]:
    chunks: list[_Chunk] = []
    seen: dict[str, Location] = {}
    current: dict | None = None
    offset = 0

    def close() -> None:
        if current is None:
            return
        body = text[current["start"]:offset]
        if not _strip_comments(body).strip().strip(";").strip():
            raise InputError(f"query '{current['name']}' has no SQL", current["location"])
        chunks.append(_Chunk(current["name"], current["location"], current["options"],
                             current["start"], body))

    for lineno, line in enumerate(text.splitlines(keepends=True), start=1):
        named = NAME_LINE.match(line)
        option = OPTION_LINE.match(line)
        if named:
            close()
            name = named.group(1)
            location = Location(file, lineno, line.index(":") + 2)
            if not IDENTIFIER.match(name):
                raise InputError(f"expected a query name after '-- name:', found {name!r}",
                                 location)
            if name.lower() in seen:
                raise InputError(f"duplicate query name '{name}' (first defined at "
                                 f"{seen[name.lower()]})", location)
            seen[name.lower()] = location
            current = {"name": name, "location": location, "options": {},
                       "start": offset + len(line)}
        elif option and current is not None:
            current["options"][option.group(1).lower()] = option.group(2)
            _check_option(option.group(1).lower(), option.group(2),
                          Location(file, lineno, line.index(":") + 2))
            current["start"] = offset + len(line)
        elif current is None and _strip_comments(line).strip():
            raise InputError("expected '-- name: <queryName>' before the first query",
                             Location(file, lineno, len(line) - len(line.lstrip()) + 1))
        offset += len(line)
    close()
    return chunks


def _check_option(option: str, value: str, location: Location) -> None:
    if option == "view" and not IDENTIFIER.match(value):
        raise InputError(f"expected a view name after '-- view:', found {value!r}", location)
    if option == "periodic":
        try:
            parse_interval(value)
        except ValueError as err:
            raise InputError(str(err), location) from None


def _strip_comments(sql: str) -> str:
    return re.sub(r"--[^\n]*", "", sql)


def _location_at(text: str, offset: int, file: str) -> Location:
    line = text.count("\n", 0, offset) + 1
    column = offset - (text.rfind("\n", 0, offset) + 1) + 1
    return Location(file, line, column)


def _parse_named(chunk: _Chunk, text: str, catalog: Catalog, file: str) -> NamedQuery:
    # `<p>` becomes `:p ` (same length) so sqlglot offsets stay file offsets.
    sql = PLACEHOLDER.sub(lambda m: ":" + m.group(1) + " ", chunk.sql).rstrip()
    sql = sql[:-1] if sql.endswith(";") else sql
    at = lambda offset: _location_at(text, chunk.start + offset, file)  # noqa: E731
    try:
        statements = sqlglot.parse(sql)
    except (ParseError, TokenError) as err:
        raise _syntax_error(err, sql, at) from None
    statements = [s for s in statements if s is not None]
    if len(statements) != 1:
        raise InputError(f"query '{chunk.name}' must be exactly one SQL statement, "
                         f"found {len(statements)}", chunk.location)
    resolver = _Resolver(catalog, at, chunk.location)
    block = resolver.block(statements[0])
    if resolver.unsupported:
        block = None
    return NamedQuery(chunk.name, chunk.sql.strip(), chunk.location, block,
                      tuple(resolver.unsupported), chunk.options.get("periodic"),
                      chunk.options.get("view"))


def _syntax_error(err: Exception, sql: str, at) -> InputError:
    details = getattr(err, "errors", None) or []
    if details:
        first = details[0]
        line, col = first.get("line") or 1, first.get("col") or 1
        offset = _offset_of(sql, line, col)
        message = first.get("description") or str(err)
        highlight = first.get("highlight")
        if highlight:
            message = f"{message} near '{highlight}'"
        return InputError(f"SQL syntax error: {message}", at(offset))
    return InputError(f"SQL syntax error: {str(err).splitlines()[0]}", at(0))


def _offset_of(sql: str, line: int, col: int) -> int:
    lines = sql.split("\n")
    line = max(1, min(line, len(lines)))
    offset = sum(len(l) + 1 for l in lines[: line - 1])
    # sqlglot reports the column at the end of the offending token.
    return max(0, min(offset + max(col - 1, 0), len(sql)))


class _Resolver:
    """Turns one sqlglot SELECT into a QueryBlock, collecting unsupported constructs."""

    def __init__(self, catalog: Catalog, at, query_location: Location) -> None:
        self.catalog = catalog
        self.at = at
        self.query_location = query_location
        self.unsupported: list[Unsupported] = []

    # -- positions ---------------------------------------------------------
    def where(self, node: exp.Expression) -> Location:
        starts = [n.meta["start"] for n in node.walk() if "start" in n.meta]
        return self.at(min(starts)) if starts else self.query_location

    def refuse(self, node: exp.Expression, construct: str, hint: str = "") -> None:
        self.unsupported.append(Unsupported(construct, self.where(node), hint))

    def error(self, node: exp.Expression, message: str) -> InputError:
        return InputError(message, self.where(node))

    # -- the block ---------------------------------------------------------
    def block(self, node: exp.Expression) -> QueryBlock:
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
        group_by = tuple(
            g for g in (self._operand(e, relations) for e in
                        (node.args["group"].expressions if node.args.get("group") else []))
            if isinstance(g, (Attr, Epoch)))
        order_by = tuple(self._order(o, relations, select)
                         for o in (node.args["order"].expressions if node.args.get("order") else []))
        return QueryBlock(tuple(relations), tuple(predicates), select, group_by,
                          tuple(o for o in order_by if o is not None), self._limit(node))

    def _refuse_clauses(self, node: exp.Select) -> None:
        for key, construct, hint in (
            ("having", "HAVING", "filter the grouped rows in the application"),
            ("with", "WITH (common table expression)", "inline the subquery in FROM"),
            ("offset", "OFFSET", "page with a key range: WHERE key > <last> ORDER BY key LIMIT n"),
            ("distinct", "DISTINCT", "group by the selected columns instead"),
        ):
            if node.args.get(key):
                self.refuse(node.args[key] if key != "distinct" else node, construct, hint)
        for found in node.find_all(*UNSUPPORTED_NODES):
            if isinstance(found, exp.Distinct) or found is node:
                continue
            if isinstance(found, exp.Is) and node.args.get("distinct"):
                continue
            self.refuse(found, *UNSUPPORTED_NODES[type(found)])
        for sub in node.find_all(exp.Subquery, exp.Select):
            if sub is node or isinstance(sub.parent, (exp.From, exp.Join)) or isinstance(
                    sub.parent, exp.Subquery):
                continue
            if isinstance(sub, exp.Select) and isinstance(sub.parent, exp.Subquery):
                continue
            if isinstance(sub, exp.Subquery) and isinstance(sub.parent, (exp.From, exp.Join)):
                continue
            if not _inside_from(sub, node):
                self.refuse(sub, "subquery outside FROM", "rewrite it as a join")

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
                raise self.error(item, f"unknown table '{item.name}' (known tables: {known})")
            alias = item.alias or table.name
            return Relation(alias, table.column_names, table=table.name)
        if isinstance(item, exp.Subquery) and isinstance(item.this, exp.Select):
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
            raise self.error(column, f"unknown column '{name}' in {where}")
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
            return Param(node.name)
        if isinstance(node, exp.Literal):
            value: object = node.this if node.is_string else _number(node.this)
            return Literal(value, node.sql())
        if isinstance(node, exp.Boolean):
            return Literal(node.this, node.sql())
        if isinstance(node, exp.Neg) and isinstance(node.this, exp.Literal) and not node.this.is_string:
            return Literal(-_number(node.this.this), node.sql())
        epoch = self._epoch(node, relations)
        if epoch is not None:
            return epoch
        self.refuse(node, f"expression '{node.sql()}'",
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
        width = int(modulo.expression.this)
        if attr != again or width <= 0:
            return None
        return Epoch(attr, width)

    def _conjuncts(self, node: exp.Expression, relations: list[Relation]) -> list:
        if isinstance(node, exp.Paren):
            return self._conjuncts(node.this, relations)
        if isinstance(node, exp.And):
            return self._conjuncts(node.this, relations) + self._conjuncts(node.expression, relations)
        if isinstance(node, exp.Between):
            low = exp.GTE(this=node.this.copy(), expression=node.args["low"].copy())
            high = exp.LTE(this=node.this.copy(), expression=node.args["high"].copy())
            return self._conjuncts(low, relations) + self._conjuncts(high, relations)
        op = COMPARISON_NODES.get(type(node))
        if op is None:
            if type(node) not in UNSUPPORTED_NODES:  # those are already reported
                self.refuse(node, f"condition '{node.sql()}'",
                            "use =, <, <=, >, >= joined with AND")
            return []
        left, right = self._operand(node.this, relations), self._operand(node.expression, relations)
        if left is None or right is None:
            return []
        predicate = normalized_predicate(left, op, right, self.where(node))
        if predicate.kind == "other":
            self.refuse(node, f"condition '{node.sql()}' without a column",
                        "every condition must involve a column")
            return []
        return [predicate]

    def _expr(self, node: exp.Expression, relations: list[Relation]) -> Expr | None:
        for klass, name in AGGREGATES.items():
            if type(node) is klass:
                return self._aggregate(node, name, relations)
        if isinstance(node, exp.Anonymous) and node.name.upper() in ("MEDIAN", "PERCENTILE"):
            return Aggregate(node.name.upper(), None)
        operand = self._operand(node, relations)
        if isinstance(operand, Param):
            self.refuse(node, "parameter in SELECT", "the application already knows it")
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
            self.refuse(node, f"aggregate of expression '{arg.sql()}'", "aggregate a column")
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

    def _order(self, node: exp.Ordered, relations: list[Relation],
               select: tuple[SelectItem, ...]) -> OrderItem | None:
        target = node.this
        if isinstance(target, exp.Column) and not target.table:
            named = [s for s in select if s.name.lower() == target.name.lower()]
            if named and not any(c.lower() == target.name.lower() for r in relations for c in r.columns):
                return OrderItem(named[0].expr, bool(node.args.get("desc")))
        expr = self._expr(target, relations)
        return None if expr is None else OrderItem(expr, bool(node.args.get("desc")))

    def _limit(self, node: exp.Select) -> int | None:
        limit = node.args.get("limit")
        if limit is None:
            return None
        value = limit.expression
        if not _is_int_literal(value) or int(value.this) < 0:
            self.refuse(limit, f"LIMIT {value.sql()}", "LIMIT takes an integer literal")
            return None
        return int(value.this)


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
