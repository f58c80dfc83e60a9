"""Scalar expressions and conditions of a query block as SQL of the serving store.

The interpreter computes them with SQLite's rules (``piql.runtime.sqlvalues``), so on
SQLite each is the store's own operator or function (``LIKE`` is case-sensitive there:
the store sets ``PRAGMA case_sensitive_like``; ``LOWER`` / ``UPPER`` change ASCII
letters only, as piql's do).

PostgreSQL differs where types meet: it refuses ``LIKE`` on a number, ``LENGTH`` of an
integer, arithmetic on text; it raises on a zero divisor where SQLite answers NULL; its
``CAST`` of a REAL to INTEGER rounds where SQLite truncates; its text of a REAL is not
SQLite's; its ``LOWER`` is Unicode-aware. So on PostgreSQL an expression compiles only
where its operands' declared types make both stores agree (integer arithmetic, with a
divisor ``NULLIF(d, 0)``; text functions of text, ``LOWER`` as the ASCII ``translate``
of ``postgres_store._part``; ...); anything else raises :class:`UncompilablePlan` and the
interpreter serves the query. An integer result leaving 64 bits raises on PostgreSQL
(the runtime answers that execution with the interpreter), where SQLite turns it REAL.
"""
from __future__ import annotations

import string
from typing import Callable

from sqlglot import exp

from piql.errors import PiqlError
from piql.query_block import (
    Aggregate, Attr, Call, Case, Compare, Epoch, Func, InList, Junction, Like, Literal,
    Negation, NullTest, Param, Predicate, Ratio,
)
from piql.sql_types import TypeFamily

Ref = Callable[[Attr], exp.Expression]

_ARITHMETIC = {Func.ADD: exp.Add, Func.SUB: exp.Sub, Func.MUL: exp.Mul, Func.MOD: exp.Mod}
_COMPARISONS = {"=": exp.EQ, "<": exp.LT, "<=": exp.LTE, ">": exp.GT, ">=": exp.GTE,
                "<>": exp.NEQ, "!=": exp.NEQ}
_NUMBERS = (TypeFamily.INTEGER, TypeFamily.REAL)


def ascii_case(func: Func) -> tuple[str, str]:
    """The ``translate(text, source, target)`` letters of piql's LOWER or UPPER on
    PostgreSQL: ASCII only, as SQLite's (PostgreSQL's own ``lower`` folds every letter). An
    expression index and the statements reading it must spell it alike."""
    if func is Func.LOWER:
        return string.ascii_uppercase, string.ascii_lowercase
    return string.ascii_lowercase, string.ascii_uppercase


class UncompilablePlan(PiqlError):
    """A plan this compiler cannot express as one statement (the interpreter runs it)."""


def _number(value: int) -> exp.Literal:
    return exp.Literal.number(int(value))


class Expressions:
    """Compiles scalars and conditions; the compiler supplies ``sqlite``,
    ``placeholder`` and ``column_family`` (the declared type family of a column read)."""

    sqlite: bool
    text_params: dict[str, None]  # PostgreSQL: parameters read as text, in order

    def placeholder(self, value: Param | Literal) -> exp.Expression:  # pragma: no cover
        raise NotImplementedError

    def column_family(self, attr: Attr) -> TypeFamily:  # pragma: no cover
        raise NotImplementedError

    # -- scalars -------------------------------------------------------------
    def expr(self, value: object, ref: Ref) -> exp.Expression:
        if isinstance(value, Attr):
            return ref(value)
        if isinstance(value, (Param, Literal)):
            return self.placeholder(value)
        if isinstance(value, Epoch):
            column = self.expr(value.attr, ref)
            width = _number(value.width)
            modulo: exp.Expression = exp.Paren(this=exp.Mod(this=column.copy(), expression=width)) \
                if self.sqlite else exp.Anonymous(this="MOD", expressions=[column.copy(), width])
            return exp.Paren(this=exp.Sub(this=column, expression=modulo))
        if isinstance(value, Aggregate):
            return self.aggregate(value, ref)
        if isinstance(value, Ratio):
            real = exp.DataType.build("REAL" if self.sqlite else "DOUBLE PRECISION")
            numerator = exp.Cast(this=self.expr(value.numerator, ref), to=real)
            denominator = exp.Nullif(this=self.expr(value.denominator, ref),
                                     expression=_number(0))
            return exp.Paren(this=exp.Div(this=numerator, expression=denominator))
        if isinstance(value, Call):
            return self._call(value, ref)
        if isinstance(value, Case):
            return self._case(value, ref)
        raise UncompilablePlan(f"cannot compile the expression {value}")

    def aggregate(self, agg: Aggregate, ref: Ref) -> exp.Expression:
        kinds = {"COUNT": exp.Count, "SUM": exp.Sum, "AVG": exp.Avg, "MIN": exp.Min,
                 "MAX": exp.Max}
        if agg.func not in kinds:
            raise UncompilablePlan(f"cannot compile the aggregate {agg}")
        argument: exp.Expression = exp.Star() if agg.arg is None else self.expr(agg.arg, ref)
        if agg.distinct:
            argument = exp.Distinct(expressions=[argument])
        node = kinds[agg.func](this=argument)
        if agg.func == "AVG" and not self.sqlite:  # numeric otherwise; piql answers REAL
            node = exp.Cast(this=node, to=exp.DataType.build("DOUBLE PRECISION"))
        return node

    def _operand(self, value: object, ref: Ref) -> exp.Expression:
        """An operand inside a function: on PostgreSQL an integer SUM (numeric there) is
        cast back to BIGINT, as SQLite's SUM is an integer (beyond 64 bits both raise)."""
        node = self.expr(value, ref)
        if not self.sqlite and isinstance(value, Aggregate) and value.func == "SUM" \
                and self.family(value) == TypeFamily.INTEGER:
            node = exp.Cast(this=node, to=exp.DataType.build("BIGINT"))
        return exp.Paren(this=node) if isinstance(value, (Call, Epoch)) else node

    def _text_operand(self, value: object, ref: Ref) -> exp.Expression:
        """An operand read as text: on PostgreSQL a parameter is cast to TEXT, and the
        statement serves only text values of it (``CompiledQuery.text_parameters``)."""
        if self.sqlite or not isinstance(value, Param):
            return self._operand(value, ref)
        self.text_params[value.name] = None
        return exp.Cast(this=self.placeholder(value), to=exp.DataType.build("TEXT"))

    def _call(self, call: Call, ref: Ref) -> exp.Expression:
        if not self.sqlite:
            self._check_postgres(call)
        texts = (Func.CONCAT, Func.LOWER, Func.UPPER, Func.LENGTH)
        args = [(self._text_operand if call.func in texts else self._operand)(a, ref)
                for a in call.args]
        func = call.func
        if func in _ARITHMETIC:
            if func == Func.MOD and not self.sqlite:  # psycopg reads a bare % as a placeholder
                return exp.Anonymous(this="MOD", expressions=[
                    args[0], exp.Nullif(this=args[1], expression=_number(0))])
            return exp.Paren(this=_ARITHMETIC[func](this=args[0], expression=args[1]))
        if func == Func.DIV:
            divisor = args[1] if self.sqlite else exp.Nullif(this=args[1], expression=_number(0))
            return exp.Paren(this=exp.Div(this=args[0], expression=divisor, typed=True))
        if func == Func.NEG:
            return exp.Paren(this=exp.Neg(this=exp.Paren(this=args[0])))
        if func == Func.CONCAT:
            return exp.Paren(this=exp.DPipe(this=args[0], expression=args[1]))
        if func == Func.COALESCE:
            return exp.Coalesce(this=args[0], expressions=args[1:])
        if func == Func.NULLIF:
            return exp.Nullif(this=args[0], expression=args[1])
        if func in (Func.LOWER, Func.UPPER):
            if self.sqlite:
                return (exp.Lower if func == Func.LOWER else exp.Upper)(this=args[0])
            source, target = ascii_case(func)
            return exp.Anonymous(this="translate", expressions=[
                args[0], exp.Literal.string(source), exp.Literal.string(target)])
        if func == Func.LENGTH:
            return exp.Length(this=args[0])
        types = {Func.CAST_INTEGER: ("INTEGER", "BIGINT"), Func.CAST_REAL: ("REAL", "DOUBLE PRECISION"),
                 Func.CAST_TEXT: ("TEXT", "TEXT")}
        if func in types:
            sqlite_type, postgres_type = types[func]
            return exp.Cast(this=args[0], to=exp.DataType.build(
                sqlite_type if self.sqlite else postgres_type))
        raise UncompilablePlan(f"cannot compile the function {call}")

    def _case(self, case: Case, ref: Ref) -> exp.Expression:
        if not self.sqlite:
            self._common_family([r for _, r in case.whens] + [case.default], str(case),
                                same=True)
        ifs = [exp.If(this=self.condition(c, ref), true=self._operand(r, ref))
               for c, r in case.whens]
        default = None if case.default is None else self._operand(case.default, ref)
        return exp.Case(ifs=ifs, default=default)

    # -- conditions ----------------------------------------------------------
    def predicate(self, pred: Predicate, ref: Ref) -> exp.Expression:
        return self.condition(pred, ref)

    def condition(self, cond: object, ref: Ref) -> exp.Expression:
        """SQL's three-valued condition, as ``piql.runtime.evaluate.truth`` reads it."""
        if isinstance(cond, (Predicate, Compare)):
            if not self.sqlite and isinstance(cond, Compare):
                self._common_family([cond.left, cond.right], str(cond))
            node = _COMPARISONS[cond.op]
            return node(this=self._operand(cond.left, ref), expression=self._operand(cond.right, ref))
        if isinstance(cond, Like):
            if not self.sqlite and not (self._text(cond.arg) and self._text(cond.pattern)):
                raise UncompilablePlan(f"not compiled on PostgreSQL: {cond} (not text)")
            pattern = self._text_operand(cond.pattern, ref)
            if self.sqlite and isinstance(cond.pattern, (Param, Literal)):
                # SQLite re-prepares a statement whose LIKE pattern is a bare placeholder
                # on every execution (its LIKE optimization depends on the value bound):
                # ``? || ''`` is the same text (NULL stays NULL), planned once
                pattern = exp.Paren(this=exp.DPipe(this=pattern, expression=exp.Literal.string("")))
            node = exp.Like(this=self._text_operand(cond.arg, ref), expression=pattern)
            if not self.sqlite:  # PostgreSQL escapes with \ by default; piql, SQLite: none
                node = exp.Escape(this=node, expression=exp.Literal.string(""))
            return exp.Not(this=exp.Paren(this=node)) if cond.negated else node
        if isinstance(cond, NullTest):
            node = exp.Is(this=self._operand(cond.arg, ref), expression=exp.Null())
            return exp.Not(this=node) if cond.negated else node
        if isinstance(cond, InList):
            if not self.sqlite:
                self._common_family([cond.arg, *cond.values], str(cond))
            node = exp.In(this=self._operand(cond.arg, ref),
                          expressions=[self._operand(v, ref) for v in cond.values])
            return exp.Not(this=node) if cond.negated else node
        if isinstance(cond, Junction):
            parts = [exp.Paren(this=self.condition(p, ref)) for p in cond.parts]
            return exp.Paren(this=(exp.and_ if cond.conjunctive else exp.or_)(*parts))
        if isinstance(cond, Negation):
            return exp.Not(this=exp.Paren(this=self.condition(cond.part, ref)))
        raise UncompilablePlan(f"cannot compile the condition {cond}")

    # -- PostgreSQL: only where the declared types make both stores agree -------
    def family(self, value: object) -> TypeFamily:
        """The type family of a value on PostgreSQL (OTHER: unknown, or a parameter)."""
        if isinstance(value, Attr):
            return self.column_family(value)
        if isinstance(value, Literal):
            if isinstance(value.value, bool) or value.value is None:
                return TypeFamily.OTHER
            return {int: TypeFamily.INTEGER, float: TypeFamily.REAL, str: TypeFamily.TEXT}.get(
                type(value.value), TypeFamily.OTHER)
        if isinstance(value, Aggregate):
            if value.func == "COUNT":
                return TypeFamily.INTEGER
            if value.func == "AVG":
                return TypeFamily.REAL
            return self.family(value.arg)
        if isinstance(value, Call):
            if value.func in (Func.CONCAT, Func.LOWER, Func.UPPER, Func.CAST_TEXT):
                return TypeFamily.TEXT
            if value.func in (Func.LENGTH, Func.CAST_INTEGER):
                return TypeFamily.INTEGER
            if value.func == Func.CAST_REAL:
                return TypeFamily.REAL
            return self._common_family(list(value.args), str(value))
        if isinstance(value, Case):
            return self._common_family([r for _, r in value.whens] + [value.default],
                                       str(value))
        if isinstance(value, Epoch):
            return self.family(value.attr)
        return TypeFamily.OTHER

    def _text(self, value: object) -> bool:
        """Is ``value`` text on PostgreSQL? (A parameter is cast to TEXT, ``_text_operand``.)"""
        return isinstance(value, Param) or self.family(value) == TypeFamily.TEXT

    def _common_family(self, values: list, what: str, same: bool = False) -> TypeFamily:
        """The one type family of ``values`` (parameters and NULLs take it); refuses
        a mix (INTEGER with REAL too when ``same``: PostgreSQL would answer a REAL where
        SQLite returns the value unchanged), or values of no family piql knows."""
        found = {self.family(v) for v in values
                 if v is not None and not isinstance(v, Param)
                 and not (isinstance(v, Literal) and v.value is None)}
        if found <= set(_NUMBERS) and found and not (same and len(found) > 1):
            return TypeFamily.REAL if TypeFamily.REAL in found else TypeFamily.INTEGER
        if len(found) == 1 and TypeFamily.TEXT in found:
            return TypeFamily.TEXT
        raise UncompilablePlan(f"not compiled on PostgreSQL: {what} (mixed or unknown types)")

    def _check_postgres(self, call: Call) -> None:
        """Refuse ``call`` where PostgreSQL would not compute what SQLite (piql) does."""
        families = [self.family(a) for a in call.args]
        func = call.func
        integers = all(f == TypeFamily.INTEGER for f in families)
        if func in (*_ARITHMETIC, Func.DIV, Func.NEG):
            ok = integers or (func in (Func.ADD, Func.SUB, Func.MUL, Func.NEG)
                              and all(f in _NUMBERS for f in families))
        elif func in (Func.CONCAT, Func.LOWER, Func.UPPER, Func.LENGTH):
            ok = all(self._text(a) for a in call.args)
        elif func in (Func.COALESCE, Func.NULLIF):
            ok = self._common_family(list(call.args), str(call), same=True) is not None
        elif func == Func.CAST_REAL:
            ok = all(f in _NUMBERS for f in families)
        elif func == Func.CAST_INTEGER:
            ok = integers
        elif func == Func.CAST_TEXT:
            ok = all(f in (TypeFamily.TEXT, TypeFamily.INTEGER) for f in families)
        else:
            ok = False
        if not ok:
            raise UncompilablePlan(f"not compiled on PostgreSQL: {call} (operand types)")
