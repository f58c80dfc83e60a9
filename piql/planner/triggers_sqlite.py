"""SQLite's triggers: CREATE TRIGGER per base table and event (``planner.triggers``).

SQLite's SQL adds a SUM's values with ``+``, which turns an integer leaving 64 bits into a
REAL and adds doubles inexactly. piql's own connections register three functions
(``runtime.sqlite_functions``) that add as piql does (``runtime.exact_sums``); triggers
compiled with ``functions`` call them, so that they keep SUM views as piql's own write path
would. The migration ``piql plan --dialect sqlite`` prints, for any client, adds with ``+``.
"""
from __future__ import annotations

from piql.catalog import Table
from piql.planner.trigger_rules import (
    PREFIX, TriggerDialect, added_sets, aggregate_columns, any_changed, cardinality_message,
    count_column,
    counted_columns, delta_select, fired, foreign_key_message, key_columns, literal, match_key,
    new_row_values, nulled, other_values, parent_missing, quote, read_columns, signed,
    statement_groups,
)
from piql.planner.views import DeltaRule, RuleAction, ViewDef, WriteEvent
from piql.query_block import Aggregate

# piql_sum(total, delta, sign, what): total + sign * delta (NULL as 0), an integer sum
# refused past 64 bits with ``what`` (view.column) named, as piql's write path refuses it
SUM_ADD = f"{PREFIX}sum"
# piql_sum_all(x): the aggregate summing a delta query's integer SUM exactly (SQLite's SUM
# raises on a partial sum leaving 64 bits, though the whole may fit): the sum as an
# integer, or as decimal text where it leaves 64 bits, for SUM_ADD to add and judge
SUM_ALL = f"{PREFIX}sum_all"
# piql_exact_add(text, delta, sign): the hidden column's exact sum (``ViewDef.exact_sums``)
# after adding sign * delta, as text (``runtime.exact_sums.show``)
EXACT_ADD = f"{PREFIX}exact_add"
# piql_exact_real(text, what): that exact sum rounded once to a double (the visible column)
EXACT_REAL = f"{PREFIX}exact_real"
# piql_gone_<view>: a view of no rows whose INSTEAD OF INSERT trigger deletes the view row
# with the inserted key (``gone_view``)
GONE = f"{PREFIX}gone_"


def deleted_by_key(view: ViewDef) -> bool:
    """Are ``view``'s rows deleted through its ``GONE`` view, one key lookup per delta row?
    So are those of a key of several columns none of which holds NULL. SQLite runs
    ``(k1, k2, ...) IN (SELECT ...)`` through the key's index only as far as the columns
    whose affinity matches the *first* column's comparison (3.40: ``comparisonAffinity`` of
    a vector reads its first element; in a trigger, ``OLD.x`` has none): twoTags' delete
    looked up (t1_tag, t2_tag) and read every row of that pair, whose number grows with
    the data, and built the delta's list twice. ``column IS NEW.column`` per column uses
    every column."""
    return len(view.key) > 1 and not view.nullable_key


def gone_view(view: ViewDef) -> list[str]:
    """The ``GONE`` view of ``view`` (:func:`deleted_by_key`) and its trigger: inserting a
    key into it deletes the view row with that key (an aggregate's, only once its count is
    0), by a lookup of the whole key."""
    d = TriggerDialect.SQLITE
    name, target = quote(f"{GONE}{view.name}", d), quote(view.name, d)
    key = [quote(c.name, d) for c in view.key]
    match = " AND ".join(f"{c} IS NEW.{c}" for c in key)
    if aggregate_columns(view):
        match += f" AND {quote(count_column(view), d)} = 0"
    return [f"CREATE VIEW {name} AS SELECT {', '.join(key)} FROM {target} WHERE 0",
            f"CREATE TRIGGER {quote(f'{GONE}{view.name}_delete', d)} INSTEAD OF INSERT ON "
            f"{name} FOR EACH ROW\nBEGIN\n  DELETE FROM {target} WHERE {match};\nEND"]


def sqlite_table(table: Table, rules: list[tuple[ViewDef, DeltaRule]],
                 frozen: tuple[str, ...], functions: bool = False) -> list[str]:
    """The triggers of ``table``; ``functions``: the connection has piql's SUM functions."""
    d = TriggerDialect.SQLITE
    name, statements = table.name, []
    taken = _sqlite_taken(table)
    if frozen:
        changed = " OR ".join(f"NEW.{quote(c, d)} IS NOT OLD.{quote(c, d)}" for c in frozen)
        message = (f"update of {name} changes {', '.join(frozen)}, which a periodic view reads "
                   f"through a join: piql refuses it (insert a new {name} row instead)")
        statements.append(_sqlite_trigger(f"{PREFIX}{name}_frozen", "UPDATE", name, changed,
                                          [f"SELECT RAISE(ABORT, {literal(message)})"]))
    for constraint in table.cardinalities:
        message = cardinality_message(table, constraint)
        for op, without in (("INSERT", None), ("UPDATE", "OLD")):
            when = f"{other_values(table, constraint, without, d)} >= {int(constraint.limit)}"
            if op == "INSERT":
                when = f"NOT ({taken}) AND {when}"
            statements.append(_sqlite_trigger(
                f"{PREFIX}{name}_{constraint.column}_{op.lower()}_cardinality", op, name, when,
                [f"SELECT RAISE(ABORT, {literal(message)})"]))
    for number, fk in enumerate(table.foreign_keys):
        message = literal(foreign_key_message(table, fk))
        for op in ("INSERT", "UPDATE"):
            when = parent_missing(table, fk, d)
            if op == "INSERT":
                when = f"NOT ({taken}) AND {when}"
            statements.append(_sqlite_trigger(f"{PREFIX}{name}_fk{number}_{op.lower()}", op,
                                              name, when, [f"SELECT RAISE(ABORT, {message})"]))
    if not rules:
        return statements
    deletes = _sqlite_rules(table, rules, WriteEvent.DELETE, "OLD", "OLD", functions)
    updates = deletes + _sqlite_rules(table, rules, WriteEvent.INSERT, "NEW", "OLD", functions)
    plans = (("INSERT", _sqlite_rules(table, rules, WriteEvent.INSERT, "NEW", None, functions),
              f"NOT ({taken})"),
             ("DELETE", deletes, None),
             ("UPDATE", updates, any_changed(read_columns(table, updates, d), d)))
    for op, body, when in plans:
        if body:
            statements.append(_sqlite_trigger(f"{PREFIX}{name}_{op.lower()}", op, name, when, body))
    return statements


def _sqlite_taken(table: Table) -> str:
    d = TriggerDialect.SQLITE
    found = []
    for columns in [table.primary_key] + [k.columns for k in table.unique_keys]:
        parts = " AND ".join(f"{quote(c, d)} = NEW.{quote(c, d)}" for c in columns)
        found.append(f"EXISTS (SELECT 1 FROM {quote(table.name, d)} WHERE {parts})")
    return " OR ".join(found)


# the message of plan_guard's refusal, which the runtime reads back into its own error
PLAN_MOVED = "piql: the store holds another plan than this connection's triggers"


def plan_guard(table: str, meta: str, key: str, fingerprint: str) -> list[str]:
    """A connection's triggers refusing an insert into ``table``, a delete or an update
    once the store's plan is not ``fingerprint`` (``meta``'s row ``key``): a migration by
    another process replaced it, and this connection's triggers keep the old plan's views.
    One keyed read inside the write's own statement, so a write sent alone needs no
    transaction around it."""
    d = TriggerDialect.SQLITE
    moved = (f"(SELECT value FROM {quote(meta, d)} WHERE key = {literal(key)}) "
             f"IS NOT {literal(fingerprint)}")
    return [_sqlite_trigger(f"{PREFIX}{table}_plan" + ("" if op == "INSERT" else f"_{op.lower()}"),
                            op, table, moved, [f"SELECT RAISE(ABORT, {literal(PLAN_MOVED)})"])
            for op in ("INSERT", "DELETE", "UPDATE")]


def _sqlite_trigger(name: str, op: str, table: str, when: str | None, body: list[str]) -> str:
    d = TriggerDialect.SQLITE
    condition = f" WHEN {when}" if when else ""
    statements = "".join(f"\n  {s};" for s in body)
    return (f"CREATE TRIGGER {quote(name, d)} BEFORE {op} ON {quote(table, d)} FOR EACH ROW"
            f"{condition}\nBEGIN{statements}\nEND")


def _sqlite_rules(table: Table, rules: list[tuple[ViewDef, DeltaRule]], event: WriteEvent,
                  record: str, without: str | None, functions: bool) -> list[str]:
    d = TriggerDialect.SQLITE
    statements: list[str] = []
    for group in statement_groups(fired(rules, event)):
        view, rule = group[0]
        selects = [delta_select(r, view, table, record, without, d,
                                SUM_ALL if functions else None) for _, r in group]
        # one statement over the rules' delta rows: SQLite takes no parenthesized member
        select = selects[0] if len(selects) == 1 else \
            " UNION ALL ".join(f"SELECT * FROM ({s})" for s in selects)
        target = quote(view.name, d)
        comment = "".join(f"-- {r.name}: {r.action} rows of {view.name}\n  " for _, r in group)
        if rule.action == RuleAction.INSERT:
            columns = ", ".join(quote(c.name, d) for c in view.columns)
            statements.append(f"{comment}INSERT INTO {target} ({columns}) {select}")
        elif rule.action == RuleAction.DELETE:
            statements.append(comment + _sqlite_delete(view, select))
        else:
            first, *rest = _sqlite_aggregate(view, rule.action, select, functions)
            statements += [comment + first] + rest
    return statements


def _sqlite_delete(view: ViewDef, select: str) -> str:
    """Delete the view rows whose key a delta row holds (of an aggregate, once their count
    is 0)."""
    d = TriggerDialect.SQLITE
    target = quote(view.name, d)
    if deleted_by_key(view):
        key = ", ".join(quote(c.name, d) for c in view.key)
        return (f"INSERT INTO {quote(f'{GONE}{view.name}', d)} ({key}) SELECT {key} FROM "
                f"({select}) AS piql_d")
    zero = f"{quote(count_column(view), d)} = 0 AND " if aggregate_columns(view) else ""
    return f"DELETE FROM {target} WHERE {zero}{_sqlite_among(view, select)}"


def _sqlite_among(view: ViewDef, select: str) -> str:
    """The view rows whose key a delta row holds (NULL matching NULL)."""
    d = TriggerDialect.SQLITE
    target = quote(view.name, d)
    if view.nullable_key:  # a plain table with a unique index: it has a rowid
        return (f"rowid IN (SELECT {target}.rowid FROM {target} JOIN ({select}) AS piql_d ON "
                f"{match_key(view, target, 'piql_d', d)})")
    if not view.key:
        return f"{quote('_all', d)} = 0 AND EXISTS ({select})"
    key = ", ".join(quote(c, d) for c in key_columns(view))
    return f"({key}) IN (SELECT {key} FROM ({select}) AS piql_d)"


def _sqlite_aggregate(view: ViewDef, action: RuleAction, select: str,
                      functions: bool) -> list[str]:
    d = TriggerDialect.SQLITE
    target = quote(view.name, d)
    if functions:
        values, sets = _summed_values(view, action), _summed_sets(view, action)
    else:
        values = new_row_values(view, "piql_d", action, d) + \
            [(h, "NULL") for _, h in view.exact_sums]
        sets = added_sets(view, "piql_d", action, d)
    return [
        f"UPDATE {target} SET {', '.join(sets)} FROM ({select}) "
        f"AS piql_d WHERE {match_key(view, target, 'piql_d', d)}",
        f"INSERT INTO {target} ({', '.join(quote(c, d) for c, _ in values)}) "
        f"SELECT {', '.join(v for _, v in values)} FROM ({select}) AS piql_d WHERE "
        f"{signed('piql_d', count_column(view), action, d)} <> 0 AND NOT EXISTS (SELECT 1 FROM "
        f"{target} WHERE {match_key(view, target, 'piql_d', d)})",
        _sqlite_delete(view, select),
    ]


def _summed_values(view: ViewDef, action: RuleAction) -> list[tuple[str, str]]:
    """(column, value) of a new aggregate row from one delta row, each SUM added by piql's
    functions to an empty total (NULL)."""
    d = TriggerDialect.SQLITE
    counted = counted_columns(view)
    values = []
    for column, value in new_row_values(view, "piql_d", action, d):
        if column in _sums(view):
            zero = None if column not in counted else \
                f"{signed('piql_d', counted[column], action, d)} = 0"
            values += [(c, nulled(zero, v)) for c, v in _sum_values(view, column, "NULL",
                                                                     action)]
        else:
            values.append((column, value))
    return values


def _summed_sets(view: ViewDef, action: RuleAction) -> list[str]:
    """SET items adding one delta row to an aggregate row, each SUM by piql's functions."""
    d = TriggerDialect.SQLITE
    target = quote(view.name, d)
    counted = counted_columns(view)
    hidden = dict(view.exact_sums)
    sets = [item for item in added_sets(view, "piql_d", action, d)
            if item.split(" = ", 1)[0] not in {quote(c, d) for c in _sums(view)}]
    for column in _sums(view):
        zero = None if column not in counted else \
            f"{target}.{quote(counted[column], d)} + " \
            f"{signed('piql_d', counted[column], action, d)} = 0"
        total = f"{target}.{quote(hidden.get(column, column), d)}"
        sets += [f"{quote(c, d)} = {nulled(zero, v)}"
                 for c, v in _sum_values(view, column, total, action)]
    return sets


def _sums(view: ViewDef) -> list[str]:
    return [c.name for c in view.columns
            if isinstance(c.source, Aggregate) and c.source.func == "SUM"]


def _sum_values(view: ViewDef, column: str, total: str,
                action: RuleAction) -> list[tuple[str, str]]:
    """(column, value) of a SUM after adding the delta row's value to ``total``, the view
    row's current sum (of an exact sum: the hidden column's text, and the visible column
    is the new exact sum rounded)."""
    d = TriggerDialect.SQLITE
    delta = f"piql_d.{quote(column, d)}"
    sign = "1" if action == RuleAction.ADD else "-1"
    what = literal(f"{view.name}.{column}")
    hidden = dict(view.exact_sums).get(column)
    if hidden is None:
        return [(column, f"{SUM_ADD}({total}, {delta}, {sign}, {what})")]
    added = f"{EXACT_ADD}({total}, {delta}, {sign})"
    return [(column, f"{EXACT_REAL}({added}, {what})"), (hidden, added)]
