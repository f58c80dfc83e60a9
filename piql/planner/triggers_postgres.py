"""PostgreSQL's triggers: one PL/pgSQL function per base table, fired BEFORE INSERT OR
UPDATE OR DELETE FOR EACH ROW, and the functions they use (``planner.triggers``)."""
from __future__ import annotations

from typing import Callable, Mapping, NamedTuple, Sequence

from piql.catalog import CardinalityConstraint, Table
from piql.planner.naming import WRITE_LOCK_KEY
from piql.planner.trigger_rules import (
    BULK, CHECKED, COUNT, CRC, DIRTY_EPOCHS, EXACT, PREFIX, REPR, ROW, TimeWindow,
    TriggerDialect, added_sets, any_changed, count_column, delta_select, fired,
    foreign_key_message, key_columns, literal, new_row_values, other_values, parent_missing,
    quote, read_columns, signed, statement_groups,
)
from piql.planner.views import DeltaRule, RuleAction, ViewDef, ViewKind, WriteEvent
from piql.sql_types import TypeFamily, family

# in the refusal of an update changing a column a periodic view freezes (piql's own check,
# ``Maintainer._check_frozen``, names the view: a one-statement update refused so is made
# again through piql's write path, which says why)
FROZEN_REFUSAL = "which a periodic view reads through a join"
# nullable columns of a key a trigger matches by branching on which values are NULL (2**3
# statements at most); any further ones are matched with an OR, which reads no index
MAX_BRANCHED = 3


def exact_function() -> str:
    """A double as the exact binary fraction it is: sign, 52-bit fraction and exponent read
    from its IEEE bits, the power of two multiplied out exactly (numeric products are
    exact; ``float8::numeric`` keeps only 15 digits)."""
    return f"""CREATE OR REPLACE FUNCTION {EXACT}(x double precision) RETURNS numeric
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  bits bigint := ('x' || encode(float8send(x), 'hex'))::bit(64)::bigint;
  e integer := ((bits >> 52) & 2047)::integer;
  m numeric := (bits & 4503599627370495)::numeric;
  k integer;
  base numeric;
  power numeric := 1;
BEGIN
  IF e = 2047 THEN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range',
      MESSAGE = 'a SUM piql keeps exactly cannot hold infinity or NaN';
  END IF;
  IF e = 0 THEN e := 1; ELSE m := m + 4503599627370496; END IF;
  k := e - 1075;
  base := CASE WHEN k >= 0 THEN 2 ELSE 0.5 END;
  k := abs(k);
  WHILE k > 0 LOOP
    IF k % 2 = 1 THEN power := power * base; END IF;
    k := k / 2;
    IF k > 0 THEN base := base * base; END IF;
  END LOOP;
  RETURN CASE WHEN bits < 0 THEN -(m * power) ELSE m * power END;
END $piql$"""


def checked_function() -> str:
    """A sum as BIGINT, or the runtime's refusal when it leaves the 64-bit range."""
    return f"""CREATE OR REPLACE FUNCTION {CHECKED}(total numeric, what text) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE AS $piql$
BEGIN
  IF total < -9223372036854775808 OR total > 9223372036854775807 THEN
    RAISE EXCEPTION USING ERRCODE = 'numeric_value_out_of_range', MESSAGE = format(
      'the write would make %s %s, outside the store''s integer range (-2**63 .. 2**63-1), '
      'where SQL''s SUM overflows too', what, total);
  END IF;
  RETURN total;
END $piql$"""


def function_name(table: str) -> str:
    return f"{PREFIX}{table}_write"


def postgres_table(table: Table, rules: list[tuple[ViewDef, DeltaRule]], frozen: tuple[str, ...],
                   windows: dict[str, list[TimeWindow]],
                   nullable: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The trigger of ``table``. ``nullable``: per view, its key columns that may hold
    NULL (``views.nullable_key_columns``); the rest are matched with ``=``."""
    d = TriggerDialect.POSTGRES
    name = quote(function_name(table.name), d)
    deletes = _pg_rules(table, rules, WriteEvent.DELETE, "OLD", "OLD", windows, nullable)
    inserts = _pg_rules(table, rules, WriteEvent.INSERT, "NEW", None, windows, nullable)
    updates_in = _pg_rules(table, rules, WriteEvent.INSERT, "NEW", "OLD", windows, nullable)
    body = [
        "#variable_conflict use_column",
        f"DECLARE {ROW} record; {COUNT} bigint;",
        "BEGIN",
        f"  IF current_setting('{BULK}', true) = 'on' THEN  -- piql's bulk load rebuilds",
        "    IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;",
        "    RETURN NEW;",
        "  END IF;",
        "  -- one writer at a time, as piql's own write transactions (rules read the state",
        "  -- without the written row, which concurrent writers would change under them);",
        "  -- taken again in the same transaction it is a local counter (about a microsecond)",
        f"  PERFORM pg_advisory_xact_lock({WRITE_LOCK_KEY}, hashtext(TG_TABLE_SCHEMA));",
        "  -- a REPEATABLE READ snapshot predates the lock: the rules would miss rows written",
        "  -- meanwhile (READ COMMITTED reads them; SERIALIZABLE detects the conflict)",
        "  IF current_setting('transaction_isolation') = 'repeatable read' THEN",
        "    RAISE EXCEPTION USING ERRCODE = 'feature_not_supported', MESSAGE = 'a write to "
        "a table with piql views needs READ COMMITTED (the default) or SERIALIZABLE, not "
        "REPEATABLE READ: its views are maintained from the state after the write lock';",
        "  END IF;",
        "  -- each event runs only its own statements: a condition holding a subquery costs an",
        "  -- executor start even when its TG_OP test is false",
        "  IF TG_OP = 'INSERT' THEN",
        "    -- a taken key: the insert fails on it, or is an upsert's update",
        *_pg_taken(table),
    ]
    for constraint in table.cardinalities:
        body += _pg_cardinality(table, constraint, None)
    body += _pg_parents(table)
    body += inserts + ["    RETURN NEW;", "  END IF;",
                       "  IF TG_OP = 'UPDATE' THEN",
                       "    IF NEW IS NOT DISTINCT FROM OLD THEN RETURN NEW; END IF;"]
    if frozen:
        changed = " OR ".join(f"NEW.{quote(c, d)} IS DISTINCT FROM OLD.{quote(c, d)}" for c in frozen)
        body += [f"    IF {changed} THEN",
                 "      RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = "
                 + literal(f"update of {table.name} changes {', '.join(frozen)}, "
                          f"{FROZEN_REFUSAL}: piql refuses it (insert a new "
                            f"{table.name} row instead, see docs/temporal.md)") + ";",
                 "    END IF;"]
    for constraint in table.cardinalities:
        # a row that keeps its group and value keeps every group's count of values
        kept = any_changed([*constraint.per, constraint.column], d)
        body += [f"    IF {kept} THEN"] + _indented(
            _pg_cardinality(table, constraint, "OLD"), "  ") + ["    END IF;"]
    body += _pg_parents(table)
    body += [f"    IF NOT ({any_changed(read_columns(table, deletes + updates_in, d), d)}) THEN",
             "      RETURN NEW;  -- no column the views read changed: nor did they",
             "    END IF;"]
    body += ["  END IF;", "  -- a delete, or an update's first half"] + deletes + [
             "  IF TG_OP = 'DELETE' THEN RETURN OLD; END IF;",
             "  -- an update's second half"] + updates_in + [
             "  RETURN NEW;",
             "END"]
    text = "\n".join(body)
    trigger = quote(f"{PREFIX}{table.name}_write", d)
    return [
        f"CREATE OR REPLACE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $piql$\n"
        f"{text} $piql$",
        f"DROP TRIGGER IF EXISTS {trigger} ON {quote(table.name, d)}",
        f"CREATE TRIGGER {trigger} BEFORE INSERT OR UPDATE OR DELETE ON {quote(table.name, d)} "
        f"FOR EACH ROW EXECUTE FUNCTION {name}()",
    ]


def _pg_taken(table: Table) -> list[str]:
    """Return at once when the inserted row's primary key (or a UNIQUE key) is taken."""
    d = TriggerDialect.POSTGRES
    keys = [(table.primary_key, False)] + [(k.columns, not k.nulls_distinct)
                                            for k in table.unique_keys]
    lines = []
    for columns, nulls_match in keys:
        pairs = [KeyMatch(quote(c, d), f"NEW.{quote(c, d)}", nulls_match and _nullable(table, c))
                 for c in columns]
        lines += _matching(pairs, lambda match: [
            f"IF EXISTS (SELECT 1 FROM {quote(table.name, d)} WHERE {match}) THEN",
            "  RETURN NEW;", "END IF;"])
    return _indented(lines, "    ")


def _nullable(table: Table, name: str) -> bool:
    column = table.column(name)
    return column is None or column.nullable


class KeyMatch(NamedTuple):
    """One column of a key a statement matches: the column, the value it must hold, and
    whether that value may be NULL (a NULL then matches a NULL)."""

    column: str
    value: str
    nullable: bool


def _matching(pairs: Sequence[KeyMatch], block: Callable[[str], list[str]]) -> list[str]:
    """``block``'s lines for the condition that the columns hold the values, NULL matching
    NULL. The trigger's statements are planned once for every value (piql's connections
    force generic plans, and a plan is cached per statement), and ``c = v OR (c IS NULL AND
    v IS NULL)`` is then no index condition: a full scan of the view on every write. So a
    nullable value is tested first and each branch runs its own statement, ``c IS NULL``
    or ``c = v``: both read the index (up to :data:`MAX_BRANCHED` nullable columns)."""
    branched = [p for p in pairs if p.nullable][:MAX_BRANCHED]

    def build(fixed: dict[str, str]) -> list[str]:
        if len(fixed) < len(branched):
            pair = branched[len(fixed)]
            return ([f"IF {pair.value} IS NULL THEN"]
                    + _indented(build(fixed | {pair.column: f"{pair.column} IS NULL"}), "  ")
                    + ["ELSE"]
                    + _indented(build(fixed | {pair.column: f"{pair.column} = {pair.value}"}),
                                "  ")
                    + ["END IF;"])
        parts = [fixed.get(p.column) or (
            f"({p.column} = {p.value} OR ({p.column} IS NULL AND {p.value} IS NULL))"
            if p.nullable else f"{p.column} = {p.value}") for p in pairs]
        return block(" AND ".join(parts))
    return build({})


def _indented(lines: list[str], indent: str) -> list[str]:
    return [indent + line for line in lines]


def _view_key(view: ViewDef, source: str, nullable: Mapping[str, tuple[str, ...]],
              values: Mapping[str, str] | None = None) -> list[KeyMatch]:
    """The key of ``view``'s row that the record ``source`` holds (``values``: a column's
    value computed otherwise)."""
    d = TriggerDialect.POSTGRES
    found = nullable.get(view.name, ())
    pairs = []
    for column in key_columns(view):
        value = "0" if column == "_all" and not view.key else \
            (values or {}).get(column, f"{source}.{quote(column, d)}")
        pairs.append(KeyMatch(quote(column, d), value, column in found))
    return pairs


def _pg_rules(table: Table, rules: list[tuple[ViewDef, DeltaRule]], event: WriteEvent,
              record: str, without: str | None, windows: dict[str, list[TimeWindow]],
              nullable: Mapping[str, tuple[str, ...]]) -> list[str]:
    d = TriggerDialect.POSTGRES
    lines: list[str] = []
    marked: set[tuple[str, ...]] = set()  # the marks made: marking twice changes nothing
    for group in statement_groups(fired(rules, event)):
        view, rule = group[0]
        selects = [delta_select(r, view, table, record, without, d) for _, r in group]
        lines += [f"    -- {r.name}: {r.action} rows of {view.name}" for _, r in group]
        select, target = selects[0], quote(view.name, d)
        if len(selects) > 1:
            select = " UNION ALL ".join(f"({s})" for s in selects)
        if rule.action == RuleAction.MARK:
            marks = tuple(_pg_marks(view, rule, select, windows))
            if marks in marked:  # a self-join's other occurrence marks the same epochs
                lines.append("    -- (marked above)")
            else:
                marked.add(marks)
                lines += marks
        elif view.kind == ViewKind.STAGING:
            lines += _pg_staging(view, rule.action, select, windows.get(view.name, []),
                                 nullable)
        elif rule.action == RuleAction.INSERT:
            columns = ", ".join(quote(c.name, d) for c in view.columns)
            lines.append(f"    INSERT INTO {target} ({columns}) {select};")
        elif rule.action == RuleAction.DELETE:
            lines += [f"    FOR {ROW} IN {select} LOOP"] + _indented(_matching(
                _view_key(view, ROW, nullable),
                lambda match: [f"DELETE FROM {target} WHERE {match};"]), "      ") + [
                "    END LOOP;"]
        else:
            lines += _pg_aggregate(view, rule.action, select, nullable)
    return lines


def _pg_staging(view: ViewDef, action: RuleAction, select: str,
                windows: list[TimeWindow], nullable: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Insert or delete staging rows, each in its partition, and mark the epochs they are
    in for the time windows refreshed from the view."""
    d = TriggerDialect.POSTGRES
    target = quote(view.name, d)
    partition = staging_partition(view)
    lines = [f"    FOR {ROW} IN {select} LOOP"]
    if action == RuleAction.INSERT:
        columns = [c.name for c in view.columns]
        values = [partition if c == "partition" else f"{ROW}.{quote(c, d)}" for c in columns]
        lines.append(f"      INSERT INTO {target} ({', '.join(quote(c, d) for c in columns)}) "
                     f"VALUES ({', '.join(values)});")
    else:
        lines += _indented(_matching(
            _view_key(view, ROW, nullable, {"partition": partition}),
            lambda match: [f"DELETE FROM {target} WHERE {match};"]), "      ")
    for window in windows:
        lines += _mark_epoch(window, f"{ROW}.{quote(window.column, d)}")
    return lines + ["    END LOOP;"]


def _pg_marks(view: ViewDef, rule: DeltaRule, select: str,
              windows: dict[str, list[TimeWindow]]) -> list[str]:
    """A time window's epoch-mark rule: the epochs of the windowed rows the written row
    joins, marked for the next refresh (marking twice is harmless)."""
    d = TriggerDialect.POSTGRES
    window = next(w for ws in windows.values() for w in ws if w.view == view.name)
    value = f"{ROW}.{quote(rule.delta.select[0].name, d)}"  # the windowed row's time
    return [f"    FOR {ROW} IN {select} LOOP"] + _mark_epoch(window, value) + ["    END LOOP;"]


def _mark_epoch(window: TimeWindow, value: str) -> list[str]:
    d = TriggerDialect.POSTGRES
    return [f"      IF {value} IS NOT NULL THEN",
            f"        INSERT INTO {quote(DIRTY_EPOCHS, d)} VALUES ({literal(window.view)}, "
            f"{value} - {value} % {int(window.width)}) ON CONFLICT DO NOTHING;",
            "      END IF;"]


def staging_partition(view: ViewDef, source: str = ROW) -> str:
    """The partition of the staging row ``source`` as ``runtime.partitions.partition_of``
    computes it: the CRC-32 of Python's text of the tuple of its key values, modulo the
    partitions (PostgreSQL)."""
    d = TriggerDialect.POSTGRES
    assert view.staging is not None
    types = {c.name: family(c.type) for c in view.columns}
    parts = []
    for column in view.staging.partitioned_by:
        value = f"{source}.{quote(column, d)}"
        shown = f"{value}::text" if types[column] == TypeFamily.INTEGER else f"{REPR}({value})"
        parts.append(f"COALESCE({shown}, 'None')")
    tuple_text = " || ', ' || ".join(parts) + (" || ','" if len(parts) == 1 else "")
    return (f"({CRC}(convert_to('(' || {tuple_text} || ')', 'UTF8')) % "
            f"{int(view.staging.partitions)})::integer")


def crc_function() -> str:
    """zlib's CRC-32 of bytes (the staging partitions' hash): PostgreSQL 18's own
    ``crc32`` (the same CRC, about 1 µs), else a loop over the bits (about 20 µs for a
    short key, twice per order in TPC-W). PL/pgSQL plans a statement when it first runs
    it, so an older server never meets the name."""
    return f"""CREATE OR REPLACE FUNCTION {CRC}(data bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  crc bigint := 4294967295;
BEGIN
  IF current_setting('server_version_num')::integer >= 180000 THEN
    RETURN crc32(data);
  END IF;
  FOR i IN 0 .. length(data) - 1 LOOP
    crc := crc # get_byte(data, i);
    FOR j IN 1 .. 8 LOOP
      IF (crc & 1) = 1 THEN crc := (crc >> 1) # 3988292384; ELSE crc := crc >> 1; END IF;
    END LOOP;
  END LOOP;
  RETURN crc # 4294967295;
END $piql$"""


def repr_function() -> str:
    """Python's ``repr`` of a text value: quoted, backslashes, the quote and control
    characters escaped. Non-ASCII characters are kept, as Python keeps printable ones; of
    the non-printable ones only the Latin-1 controls (U+0080..U+00A0, U+00AD) are escaped
    as Python escapes them, so a key holding another (U+2028, ...) may land in another
    partition than piql's own writes put it in (the refresh reads every partition)."""
    return f"""CREATE OR REPLACE FUNCTION {REPR}(s text) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT AS $piql$
DECLARE
  quote text := chr(39);
  shown text := '';
  ch text;
  code integer;
BEGIN
  IF position(chr(39) IN s) > 0 AND position(chr(34) IN s) = 0 THEN quote := chr(34); END IF;
  FOR i IN 1 .. length(s) LOOP
    ch := substr(s, i, 1);
    code := ascii(ch);
    IF ch = quote OR code = 92 THEN shown := shown || chr(92) || ch;
    ELSIF code = 9 THEN shown := shown || chr(92) || 't';
    ELSIF code = 10 THEN shown := shown || chr(92) || 'n';
    ELSIF code = 13 THEN shown := shown || chr(92) || 'r';
    ELSIF code < 32 OR code BETWEEN 127 AND 160 OR code = 173 THEN
      shown := shown || chr(92) || 'x' || lpad(to_hex(code), 2, '0');
    ELSE shown := shown || ch;
    END IF;
  END LOOP;
  RETURN quote || shown || quote;
END $piql$"""


def _pg_aggregate(view: ViewDef, action: RuleAction, select: str,
                  nullable: Mapping[str, tuple[str, ...]]) -> list[str]:
    d = TriggerDialect.POSTGRES
    target = quote(view.name, d)
    count = quote(count_column(view), d)
    values = new_row_values(view, ROW, action, d)

    def add(match: str) -> list[str]:
        return [
            f"UPDATE {target} SET {', '.join(added_sets(view, ROW, action, d))} WHERE {match} "
            f"RETURNING {count} INTO {COUNT};",
            "IF NOT FOUND THEN",
            f"  IF {signed(ROW, count_column(view), action, d)} <> 0 THEN",
            f"    INSERT INTO {target} ({', '.join(quote(c, d) for c, _ in values)}) "
            f"VALUES ({', '.join(v for _, v in values)});",
            "  END IF;",
            f"ELSIF {COUNT} = 0 THEN",
            f"  DELETE FROM {target} WHERE {match};",
            "END IF;",
        ]
    return ([f"    FOR {ROW} IN {select} LOOP"]
            + _indented(_matching(_view_key(view, ROW, nullable), add), "      ")
            + ["    END LOOP;"])


def _pg_parents(table: Table) -> list[str]:
    """The check of the new row's FOREIGN KEYs, after the write lock: a parent deleted by a
    writer before it is seen (an insert or an update)."""
    d = TriggerDialect.POSTGRES
    lines = []
    for fk in table.foreign_keys:
        lines += [f"    IF {parent_missing(table, fk, d)} THEN",
                  "      RAISE EXCEPTION USING ERRCODE = 'foreign_key_violation', MESSAGE = "
                  f"{literal(foreign_key_message(table, fk))};",
                  "    END IF;"]
    return lines


def _pg_cardinality(table: Table, constraint: CardinalityConstraint,
                    without: str | None) -> list[str]:
    """The check of one CARDINALITY constraint for an insert (``without`` None) or an
    update (``without`` OLD, the row it replaces)."""
    d = TriggerDialect.POSTGRES
    shown = " || ', ' || ".join(f"{literal(c + '=')} || quote_nullable(NEW.{quote(c, d)})"
                                for c in constraint.per) or "''"
    message = (f"'insert into ' || {literal(table.name)} || ' breaks ' || "
               f"{literal(constraint.describe())} || ': (' || {shown} || ') already has "
               f"{int(constraint.limit)} ' || {literal(constraint.column)} || ' values (limit "
               f"{int(constraint.limit)})'")
    pairs = [KeyMatch(quote(c, d), f"NEW.{quote(c, d)}", _nullable(table, c))
             for c in constraint.per]
    return _indented(_matching(pairs, lambda match: [
        f"IF {other_values(table, constraint, without, d, match)} >= {int(constraint.limit)} "
        "THEN",
        f"  RAISE EXCEPTION USING ERRCODE = 'check_violation', MESSAGE = {message};",
        "END IF;"]), "    ")
