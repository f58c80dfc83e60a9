"""Serving one named query: what ``Deployment.query`` runs on every call, decided once.

A query is called many times with new parameters and nothing else new, so everything that
depends only on the query is read from the plan on its first call (:class:`Served`): the
parameter check, the compiled statement, the function that runs it on the store, how its
answer and operations are read, the ``Result``'s columns and bound. Each call then checks
the values, binds them, runs the statement and builds the :class:`Result`; at a few
microseconds per SQLite lookup, this Python is what piql adds to the physical floor
(``piql bench twotags``), so the common shape (the answer is the fetched rows, one or two
operations per row) has a path of its own without intermediate lists or calls.
"""
from __future__ import annotations

from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Any, Callable, Iterator, Protocol, Sequence

from piql.planner.application import QueryPlan
from piql.planner.compile import CompiledQuery
from piql.query_block import Param, QueryBlock
from piql.runtime.errors import BoundExceeded, ParameterError, StoreOverflow
from piql.runtime.evaluate import row_limit
from piql.runtime.rows import ParamCheck
from piql.runtime.sqlvalues import INT64_MAX, INT64_MIN
from piql.runtime.store import Store


class Result:
    """Rows of one query execution, with its measured operations and static bound.

    Its attributes are read-only. Not a frozen dataclass: a frozen dataclass's
    ``__init__`` sets each field with ``object.__setattr__``, which cost a twentieth of a
    compiled twoTags query; slots written once and read through properties do not.

    ``staleness_ms``: for a query served by asynchronous views (``-- maintenance: async``),
    the age of the oldest change still queued for a table those views read, taken just
    before the rows were read (0.0: nothing pending, the answer is exact); None for a query
    whose views are all synchronous (always exact). Equality ignores it: two answers with
    the same rows, operations and bound are the same answer, read at different times."""

    __slots__ = ("_columns", "_rows", "_ops", "_bound", "_staleness_ms")

    def __init__(self, columns: tuple[str, ...], rows: tuple[tuple, ...], ops: int,
                 bound: int, staleness_ms: float | None = None) -> None:
        self._columns = columns
        self._rows = rows
        self._ops = ops
        self._bound = bound
        self._staleness_ms = staleness_ms

    columns: tuple[str, ...] = property(attrgetter("_columns"),  # type: ignore[assignment]
                                        doc="The output columns' names.")
    rows: tuple[tuple, ...] = property(attrgetter("_rows"),  # type: ignore[assignment]
                                       doc="The answer, one tuple per row.")
    ops: int = property(attrgetter("_ops"),  # type: ignore[assignment]
                        doc="The operations this execution measured.")
    bound: int = property(attrgetter("_bound"),  # type: ignore[assignment]
                          doc="The query's static bound on operations (``ops_bound``).")
    staleness_ms: float | None = property(  # type: ignore[assignment]
        attrgetter("_staleness_ms"),
        doc="Age (ms) of the oldest change its asynchronous views have not applied yet.")

    def _fields(self) -> tuple:
        return self._columns, self._rows, self._ops, self._bound

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Result:
            return NotImplemented
        return self._fields() == other._fields()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._fields())

    def __iter__(self) -> Iterator[tuple]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def __getitem__(self, index: int) -> tuple:
        return self._rows[index]

    def dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self._columns, row)) for row in self._rows]

    def to_arrow(self):
        """The rows as a ``pyarrow.Table`` (columns typed by Arrow from the values)."""
        import pyarrow

        return pyarrow.Table.from_pylist(self.dicts(), schema=None) if self._rows else \
            pyarrow.table({name: pyarrow.array([], pyarrow.null()) for name in self._columns})

    def to_pandas(self):
        """The rows as a ``pandas.DataFrame``; pandas is optional (``pip install pandas``)."""
        try:
            import pandas
        except ImportError:
            raise ImportError("Result.to_pandas() needs pandas, which is not installed: "
                              "pip install pandas (or use .to_arrow(), .dicts(), .rows)") from None
        return pandas.DataFrame.from_records(list(self._rows), columns=list(self._columns))

    def __repr__(self) -> str:
        return (f"<piql.Result {len(self._rows)} rows x {len(self._columns)} columns "
                f"({', '.join(self._columns)}), {self._ops} ops (bound {self._bound})>")


class PreparedQuery(Protocol):
    """A named query made ready to call (``Deployment.prepared``, made by
    :func:`prepared_query`): what ``query`` looks up on every call (the name, the
    parameters' order and checks, the compiled statement) is looked up once, so a call
    only checks and binds its values, runs the statement and builds the :class:`Result`
    (the same as ``query``'s, with its measured operations).

    ``q(7)`` gives the values by position, in the order of :attr:`params` (the query's
    parameters in the order they first appear); ``q(userId=7)`` by name, as ``query``.
    Usable from any thread ``query`` is; after the deployment is closed, a call raises
    ``DeploymentClosed``."""

    name: str
    params: tuple[str, ...]

    def __call__(self, /, *values: Any, **params: Any) -> Result: ...

    def close(self, closed: Callable[[Any], Result]) -> None:
        """Answer every later call with ``closed`` (which raises): the deployment closed."""


def prepared_query(name: str, params: tuple[str, ...], by_position: Callable[[tuple], Result],
                   by_name: Callable[[dict[str, Any]], Result],
                   fused: Fused | None = None) -> PreparedQuery:
    """A :class:`PreparedQuery`: a plain function (a class's ``__call__`` would cost a
    quarter of a microsecond more per call) with the protocol's attributes; ``fused``
    (:attr:`Served.fused`), when given, is that function already, with its ``close``."""
    if fused is not None:
        call, close = fused
    else:
        call, close = handle_of(name, params, by_position, by_name)
    call.__name__ = call.__qualname__ = name
    call.__doc__ = f"Query {name}({', '.join(params)}): Deployment.prepared's handle."
    call.name, call.params, call.close = name, params, close  # type: ignore[attr-defined]
    return call  # type: ignore[return-value]


def handle_of(name: str, params: tuple[str, ...], by_position: Callable[[tuple], Result],
              by_name: Callable[[dict[str, Any]], Result]) -> Fused:
    """A handle's call, values by position or by name (not both), and its ``close``."""
    listed = ", ".join(params) or "none"

    def call(*values: Any, **named: Any) -> Result:
        if named:
            if values:
                raise ParameterError(f"query {name} takes its parameters by position or by "
                                     f"name, not both (parameters: {listed})")
            return by_name(named)
        return by_position(values)

    def close(closed: Callable[[Any], Result]) -> None:
        nonlocal by_position, by_name
        by_position = by_name = closed

    return call, close


# A row's last column (a flag or marker piql's statement adds), and the row without it: in
# C, where a comprehension over the rows is a Python frame of its own
_last, _head = itemgetter(-1), itemgetter(slice(None, -1))

# A Result's instance with no field set yet: the serving paths below set every field
# themselves, where calling Result(...) would cost a Python frame more per call (several
# microseconds when the call runs cold, between other work)
_blank = object.__new__

# Answers one call (the parameters by name) with the query's interpreter.
Interpreter = Callable[["Served", dict[str, Any]], Result]
# A store connection's ``execute`` (a cursor, read with ``fetchall``) and the class of its
# errors: what a fused handle runs its statement with (``SQLiteStore.executor``)
Executor = tuple[Callable[[str, tuple], Any], type[Exception]]
# A prepared handle's call (values by position or by name) and its ``close``
Fused = tuple[Callable[..., Result], Callable[[Callable[..., Result]], None]]


@dataclass(frozen=True)
class Served:
    """What serving one query needs, read from the plan once; ``serve`` answers a call."""

    query: QueryPlan
    block: QueryBlock
    columns: tuple[str, ...]
    bound: int
    check: ParamCheck
    statement: CompiledQuery | None  # None: the interpreter serves the query
    serve: Callable[[dict[str, Any]], Result]
    # ``serve`` with the values by position, in the order of ``block.params``
    positional: Callable[[tuple], Result]
    staleness: Callable[[], float] | None = None  # for a query read from async views
    # the prepared handle itself (``prepared_query``'s ``fused``), for the common shape:
    # checks, binds, runs and answers in one Python frame (None: the handle calls
    # ``positional`` and ``serve``)
    fused: Fused | None = None

    @classmethod
    def of(cls, query: QueryPlan, statement: CompiledQuery | None, store: Store,
           strict: Callable[[], bool], interpret: Interpreter,
           staleness: Callable[[], float] | None = None) -> "Served":
        """How to serve ``query``: through ``statement`` on ``store``, or (None) with
        ``interpret``; ``strict()`` says whether an execution over the bound raises;
        ``staleness()`` (a query read from asynchronous views) the age its answer has,
        which the interpreter reads from :attr:`staleness` itself."""
        block = query.query.block
        assert block is not None
        check = ParamCheck(query, block)
        served: list[Served] = []  # the closures' own Served, once made
        positional: Callable[[tuple], Result] | None = None
        fused: Fused | None = None
        if statement is None:
            def serve(params: dict[str, Any]) -> Result:
                check(params)
                return interpret(served[0], params)
        else:
            serve, positional, fused = _compiled(query, statement, check, store, strict,
                                                 lambda params: interpret(served[0], params))
            if staleness is not None:
                serve = _aged(serve, staleness)
                positional, fused = positional and _aged(positional, staleness), None
        if query.pair is not None:  # its view keeps one orientation of each pair
            serve, positional, fused = in_pair_order(serve, query.pair.in_order), None, None
        served.append(cls(query, block, tuple(i.name for i in block.select),
                          query.ops_bound or 0, check, statement, serve,
                          positional or by_position(serve, check.named), staleness, fused))
        return served[0]

    def exceeded(self, ops: int) -> BoundExceeded:
        """Strict mode's error for an execution that measured ``ops`` over the bound."""
        return _exceeded(self.query.name, ops, self.bound)


def in_pair_order(serve: Callable[[dict[str, Any]], Result],
               order: Callable[[dict[str, Any]], dict[str, Any]]
               ) -> Callable[[dict[str, Any]], Result]:
    """``serve`` called with the parameters of a symmetric pair in order
    (``planner.symmetric_pair``)."""
    def ordered(params: dict[str, Any]) -> Result:
        return serve(order(params))
    return ordered


def by_position(serve: Callable[[dict[str, Any]], Result],
                named: Callable[[tuple], dict[str, Any]]) -> Callable[[tuple], Result]:
    """``serve`` called with values by position, ``named`` (``ParamCheck.named``) first."""
    def positional(values: tuple) -> Result:
        return serve(named(values))
    return positional


def _aged(serve: Callable[[Any], Result],
          staleness: Callable[[], float]) -> Callable[[Any], Result]:
    """``serve`` (by name or by position) with the answer's staleness, taken before its
    rows are read."""
    def aged(params: Any) -> Result:
        age = staleness()
        result = serve(params)
        return Result(result.columns, result.rows, result.ops, result.bound, age)
    return aged


def _bindings(check: ParamCheck, statement: CompiledQuery
              ) -> tuple[Callable[[dict[str, Any]], tuple], Callable[[tuple], tuple]]:
    """The parameter check fused with the statement's binding, for values by name
    (``ParamCheck.binding``) and by position (``ParamCheck.positional``)."""
    names = tuple(p.name for p in statement.parameters if isinstance(p, Param))
    bound = names if len(names) == len(statement.parameters) else None
    return (check.binding(bound, statement.binder),
            check.positional(bound, statement.binder))


def _given(params: dict[str, Any]) -> dict[str, Any]:
    """Values by name, as they are (what ``ParamCheck.named`` is to values by position)."""
    return params


def _exceeded(name: str, ops: int, bound: int) -> BoundExceeded:
    return BoundExceeded(f"query {name} did {ops} operations; its bound is {bound}")


# A call's answer with the values by name, by position (None: through by name), and the
# prepared handle fusing both for the common shape (None: none)
Calls = tuple[Callable[[dict[str, Any]], Result], Callable[[tuple], Result] | None,
              Fused | None]


def _admitted(check: ParamCheck, statement: CompiledQuery
              ) -> tuple[tuple[type, ...], tuple[int, ...]] | None:
    """What a fused handle tests its values against: each value's class (its parameter's
    common class, ``ParamCheck.classes``) and the positions of the integers (within 64
    bits); None when the statement does not bind exactly the query's parameters in their
    order, or one has no common class (the handle is then not fused)."""
    names = tuple(p.name if isinstance(p, Param) else None for p in statement.parameters)
    commons = tuple(common for _, common in check.classes)
    if names != check.expected or None in commons:
        return None
    return commons, tuple(i for i, common in enumerate(commons) if common is int)


def _compiled(query: QueryPlan, statement: CompiledQuery, check: ParamCheck, store: Store,
              strict: Callable[[], bool],
              interpret: Callable[[dict[str, Any]], Result]) -> Calls:
    """The functions answering a call through ``statement``: check, bind, run, and the
    answer's rows and operations as the interpreter counts them (``CompiledQuery.answer``).
    An execution the statement cannot answer (SQLite's SUM leaving 64 bits; on PostgreSQL
    a value of another type for a parameter read as text) goes to ``interpret``."""
    block = query.query.block
    assert block is not None
    name, bound = query.name, query.ops_bound or 0
    columns = tuple(i.name for i in block.select)
    arguments, run = statement.binder, store.prepared(statement.sql)
    # rows of one cost each: as fetched (one access), or those flagged kept (a flat join)
    per_row, kept = statement.ops_per_row, statement.kept_ops
    cost = per_row or kept
    if cost is not None and block.limit_param is None and not statement.text_parameters:
        # one function per way of giving the values, the same code: no call in between
        def plain(bind: Callable[[Any], tuple] | None, named: Callable[[Any], dict[str, Any]]
                  ) -> Callable[[Any], Result]:
            def call(given: Any) -> Result:
                try:
                    fetched = run(given if bind is None else bind(given))
                except StoreOverflow:
                    return interpret(named(given))
                ops = len(fetched) * cost or 1
                if ops > bound and strict():
                    raise _exceeded(name, ops, bound)
                result = _blank(Result)  # Result(...) without its __init__'s frame
                result._columns, result._ops, result._bound = columns, ops, bound
                result._rows = tuple(map(_head, filter(_last, fetched))) if kept \
                    else tuple(fetched)
                result._staleness_ms = None
                return result
            return call
        by_name, by_position = _bindings(check, statement)
        serve, positional = plain(by_name, _given), plain(by_position, check.named)
        shape = _Shape(0, cost, bool(kept), False, None)
        return serve, positional, _fused(query, check, statement, serve, positional,
                                         plain(None, check.named), store, strict, shape)

    found = statement.found_ops
    if found is not None and block.limit_param is None and not statement.text_parameters:
        return _unique(query, statement, found, check, store, strict, interpret)

    answer, text = statement.answer, statement.text_parameters
    counting = statement.counting  # UNIQUE: counts when the lean statement returns no row
    count = None if counting is None else (counting.answer, counting.binder,
                                           store.prepared(counting.sql))

    # without LIMIT <n> or text parameters, nothing is read between check and binding
    bind = _bindings(check, statement)[0] if block.limit_param is None and not text else None

    def serve(params: dict[str, Any]) -> Result:
        if bind is not None:
            values = bind(params)
        else:
            check(params)
            if block.limit_param is not None:
                row_limit(block, params)  # LIMIT <n>: 0 to its declared maximum, or refused
            if text and not all(isinstance(params[n], str) or params[n] is None for n in text):
                return interpret(params)  # read as text: only text is the same
            values = arguments(params)
        try:
            rows, ops = answer(run(values))
            if ops is None:
                assert count is not None
                rows, ops = count[0](count[2](count[1](params)))
        except StoreOverflow:
            return interpret(params)
        if ops > bound and strict():
            raise _exceeded(name, ops, bound)
        return Result(columns, tuple(rows), ops, bound)
    return serve, None, None


def _unique(query: QueryPlan, statement: CompiledQuery, found: tuple[int, int],
            check: ParamCheck, store: Store, strict: Callable[[], bool],
            interpret: Callable[[dict[str, Any]], Result]) -> Calls:
    """A call through a lean statement (``OpsSource.UNIQUE``): the rows as they come and,
    when some came, the operations the plan fixes for them; when none came, the counting
    statement's answer (``CompiledQuery.counting``)."""
    block = query.query.block
    assert block is not None and statement.counting is not None
    name, bound = query.name, query.ops_bound or 0
    columns = tuple(i.name for i in block.select)
    run = store.prepared(statement.sql)
    counting = statement.counting
    count_arguments, count_run = counting.binder, store.prepared(counting.sql)
    first, per_row = found
    tail = statement.tail

    def absent(rows: list[tuple], params: dict[str, Any]) -> tuple[Sequence[tuple], int]:
        """The answer when the lean statement found nothing: only the marker's row came
        (the stop-after's probe), or no row (the counting statement tells)."""
        if rows:
            return [], first + 1
        return counting.answer(count_run(count_arguments(params)))

    def unique(bind: Callable[[Any], tuple] | None, named: Callable[[Any], dict[str, Any]]
               ) -> Callable[[Any], Result]:
        def call(given: Any) -> Result:
            try:
                rows = run(given if bind is None else bind(given))
                # each row ends with the stop-after's marker (tail): NULL, none found
                if rows and not (tail and rows[0][-1] is None):
                    if tail:
                        rows = list(map(_head, rows))
                    ops = first + per_row * len(rows)
                else:
                    rows, ops = absent(rows, named(given))
            except StoreOverflow:
                return interpret(named(given))
            if ops > bound and strict():
                raise _exceeded(name, ops, bound)
            result = _blank(Result)  # as in _compiled's plain call
            result._columns, result._rows, result._ops = columns, tuple(rows), ops
            result._bound, result._staleness_ms = bound, None
            return result
        return call
    by_name, by_position = _bindings(check, statement)
    serve, positional = unique(by_name, _given), unique(by_position, check.named)
    shape = _Shape(first, per_row, False, tail, absent)
    return serve, positional, _fused(query, check, statement, serve, positional,
                                     unique(None, check.named), store, strict, shape)


@dataclass(frozen=True)
class _Shape:
    """How a fused handle (``_inline``) reads its statement's rows: ``first`` plus
    ``per_row`` operations per row fetched; the rows flagged kept (``kept``: the last
    column) or each with the stop-after's marker last (``tail``: NULL, none found);
    ``absent`` answers when none was found (None: an empty answer of one operation)."""

    first: int
    per_row: int
    kept: bool
    tail: bool
    absent: Callable[[list[tuple], dict[str, Any]], tuple[Sequence[tuple], int]] | None


def _fused(query: QueryPlan, check: ParamCheck, statement: CompiledQuery,
           serve: Callable[[dict[str, Any]], Result], positional: Callable[[tuple], Result],
           bound: Callable[[tuple], Result], store: Store, strict: Callable[[], bool],
           shape: _Shape) -> Fused | None:
    """The prepared handle of a query served by ``serve`` (values by name) and
    ``positional``, as one function: values by position, each of its parameter's common
    class, go straight to ``bound`` (the values bound as given); anything else (values by
    name, another class, too few) to ``serve`` or ``positional`` as before, which check
    in full. Two frames where the handle, the positional call and its check were four:
    the bench's key lookups (23-50 µs) run with cold caches, where each frame's code and
    data cost most (docs/benchmarks.md, 2026-11-27 afternoon). None when the statement
    does not bind the values as given (``_admitted``)."""
    admitted = _admitted(check, statement)
    if admitted is None:
        return None
    kinds, ints = admitted
    slow, slow_close = handle_of(query.name, check.expected, positional, serve)
    executor = getattr(store, "executor", None)
    if executor is not None:
        return _inline(query, check, statement, executor(), strict, slow, slow_close, bound,
                       kinds, shape)
    low, high, count = INT64_MIN, INT64_MAX, len(kinds)

    # a class test per value (``tuple(map(type, values))`` costs several frames' worth)
    def handle(*values: Any, **named: Any) -> Result:
        if named or len(values) != count:
            return slow(*values, **named)
        for value, kind in zip(values, kinds):
            if value.__class__ is not kind:
                return slow(*values)
        for index in ints:
            if not low <= values[index] <= high:
                return slow(*values)
        return bound(values)

    def close(closed: Callable[..., Result]) -> None:
        nonlocal bound
        slow_close(closed)
        bound = closed
    return handle, close


def _inline(query: QueryPlan, check: ParamCheck, statement: CompiledQuery,
            executor: Executor, strict: Callable[[], bool], slow: Callable[..., Result],
            slow_close: Callable[[Callable[..., Result]], None], bound: Callable[[tuple], Result],
            kinds: tuple[type, ...], shape: _Shape) -> Fused:
    """``_fused``'s handle on a store that lends its connection's ``execute``
    (``SQLiteStore.executor``): one frame, the statement run in it, as the on-demand
    baseline runs its SQL. Values whose classes are not the common ones go to ``slow``
    (the full check); an integer beyond 64 bits, which the driver refuses to bind, too;
    any error of the statement to ``bound``, which runs it again the long way and maps the
    error as ever (an overflow: the interpreter answers)."""
    execute, failure = executor
    sql, name, bound_ops = statement.sql, query.name, query.ops_bound or 0
    block = query.query.block
    assert block is not None
    columns = tuple(i.name for i in block.select)
    first, per_row, kept, tail, absent = (shape.first, shape.per_row, shape.kept, shape.tail,
                                          shape.absent)
    named_of, count = check.named, len(kinds)
    # one value (most lookups): its class tested alone, where the tuple of every value's
    # class costs about five times as much
    several, kind = count != 1, kinds[0] if kinds else None

    def handle(*values: Any, **named: Any) -> Result:
        if named or len(values) != count or (tuple(map(type, values)) != kinds if several
                                             else values[0].__class__ is not kind):
            return slow(*values, **named)
        try:
            fetched = execute(sql, values).fetchall()
        except OverflowError:  # an integer beyond 64 bits: the full check refuses it
            return slow(*values)
        except failure:
            return bound(values)
        if fetched and not (tail and fetched[0][-1] is None):
            ops = first + per_row * len(fetched)
            rows = tuple(map(_head, filter(_last, fetched))) if kept else \
                tuple(map(_head, fetched)) if tail else tuple(fetched)
        elif absent is None:
            rows, ops = (), 1
        else:  # nothing found: the counting statement answers (UNIQUE)
            try:
                found, ops = absent(fetched, named_of(values))
            except StoreOverflow:
                return bound(values)  # the long way: to the interpreter
            rows = tuple(found)
        if ops > bound_ops and strict():
            raise _exceeded(name, ops, bound_ops)
        result = _blank(Result)  # as in _compiled's plain call
        result._columns, result._rows, result._ops = columns, rows, ops
        result._bound, result._staleness_ms = bound_ops, None
        return result

    def close(closed: Callable[..., Result]) -> None:
        nonlocal bound, execute
        slow_close(closed)
        bound = execute = closed
    return handle, close
