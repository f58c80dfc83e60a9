"""``piql migrate --dry-run``: the steps from a store's plan to a new one, with their SQL in
the store's dialect and what each costs (rows read, rows written), like
``alembic upgrade --sql``.

The steps are ``piql.planner.plan_diff``'s; the costs are estimated from the sizes of the
store's tables (``sizes``: rows per table or view, read by the caller from the store):

- adding a table, a column (NULL in the rows there: no row is rewritten), dropping an
  index, renaming a view, replacing triggers, relaxing a constraint: no row;
- validating a CARDINALITY constraint reads its table once;
- creating an index reads its table and writes one entry per row;
- building a view reads the tables its definition reads, and writes at most one row per
  row of the largest (an estimate: a join may write more, an aggregate writes fewer);
- dropping a view deletes its rows.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from sqlglot import exp

from piql import sqlgen
from piql.catalog import Catalog
from piql.planner.application import Plan
from piql.planner.naming import key_index_name
from piql.planner.plan_diff import PlanDiff, Step, StepKind
from piql.planner.store_layout import KeyStorage, index_path, stored_tables
from piql.planner.trigger_rules import DIRTY_EPOCHS, TriggerDialect
from piql.planner.views import ViewKind
from piql.report.migration import base_tables, build, key_index_sql, view_table
from piql.sql_types import postgres_type, short_name

@dataclass(frozen=True)
class Cost:
    """Rows a step reads and rows it writes (or deletes), estimated from table sizes."""

    reads: int = 0
    writes: int = 0


def render(diff: PlanDiff, plan: Plan, dialect: str, sizes: Mapping[str, int],
           location: str) -> str:
    """The dry run of migrating the store at ``location`` (of ``dialect``) to ``plan``."""
    if diff.empty:
        return f"-- {location} already holds this plan: nothing to migrate\n"
    out = [f"-- piql migrate --dry-run: {location} ({dialect}) to the plan of "
           f"{plan.queries_file}; {steps(len(diff.steps))}, nothing applied", ""]
    if diff.kept_views:
        out += [f"-- views kept as they are: {', '.join(diff.kept_views)}", ""]
    total = Cost()
    for number, step in enumerate(diff.steps, 1):
        cost = step_cost(step, sizes)
        total = Cost(total.reads + cost.reads, total.writes + cost.writes)
        out.append(f"-- {number}. {step.describe()}")
        if step.kind != StepKind.UNSUPPORTED:
            out.append(f"--    reads ~{cost.reads} rows, writes ~{cost.writes} rows")
        out += [s + ";" if not s.startswith("--") else s for s in step_sql(step, plan, dialect)]
        out.append("")
    out.append(f"-- in all: reads ~{total.reads} rows, writes ~{total.writes} rows")
    if diff.unsupported:
        out.append(f"-- {steps(len(diff.unsupported))} cannot be migrated: deploy into a new "
                   "store and load it")
    if diff.unbounded:
        out.append(f"-- bounded under the store's plan, unbounded under this one: "
                   f"{', '.join(diff.unbounded)} (migrating needs --force)")
    return "\n".join(out) + "\n"


def steps(count: int) -> str:
    """"1 step", "2 steps"."""
    return f"{count} step" + ("" if count == 1 else "s")


def summary(diff: PlanDiff, limit: int = 10) -> str:
    """The first ``limit`` steps in one line each (what ``deploy`` shows when a store holds
    another plan)."""
    lines = [f"  {number}. {step.describe()}"
             for number, step in enumerate(diff.steps[:limit], 1)]
    if len(diff.steps) > limit:
        lines.append(f"  ... and {len(diff.steps) - limit} more (the dry run shows them all)")
    return "\n".join(lines)


def step_cost(step: Step, sizes: Mapping[str, int]) -> Cost:
    """What ``step`` reads and writes, from the rows of the store's tables (see above)."""
    if step.kind == StepKind.VALIDATE_CONSTRAINT and step.constraint is not None:
        return Cost(reads=sizes.get(step.constraint.table, 0))
    if step.kind == StepKind.CREATE_INDEX and step.index is not None:
        rows = sizes.get(step.index.table, 0)
        return Cost(reads=rows, writes=rows)
    if step.kind == StepKind.BUILD_VIEW and step.view is not None:
        read = [sizes.get(t, 0) for t in step.view.reads]
        return Cost(reads=sum(read), writes=max(read, default=0))
    if step.kind == StepKind.DROP_VIEW:
        return Cost(writes=sizes.get(step.name, 0))
    return Cost()


def step_sql(step: Step, plan: Plan, dialect: str) -> list[str]:
    """The statements of ``step`` in ``dialect`` (comments for what runs no SQL)."""
    d = TriggerDialect(dialect)
    q = lambda name: sqlgen.identifier(name, dialect)  # noqa: E731
    if step.kind == StepKind.UNSUPPORTED:
        return ["-- (no SQL)"]
    if step.kind == StepKind.ADD_TABLE:
        table = plan.catalog.table(step.name)
        return base_tables(Catalog((table,)), d) if table is not None else []
    if step.kind == StepKind.ADD_COLUMN and step.column is not None:
        column, declared = step.column
        kind = postgres_type(declared) if d == TriggerDialect.POSTGRES else declared
        return [f"ALTER TABLE {q(step.name)} ADD COLUMN {q(column)} {kind}"
                + sqlgen.default_clause(_default(step), dialect)]
    if step.kind == StepKind.SET_DEFAULT:
        return set_default_sql(step, dialect)
    if step.kind == StepKind.VALIDATE_CONSTRAINT and step.constraint is not None:
        return ["-- the migration stops, naming them, if this finds keys over the limit:",
                validation_sql(step, dialect)]
    if step.kind == StepKind.SET_TEMPORAL:
        return ["-- nothing to run: the plan's record notes it"]
    if step.kind == StepKind.CHANGE_MAINTENANCE:
        return ["-- nothing to run on its rows; the migration stops if the update queue holds "
                "changes (`db.drain()` them first)"]
    if step.kind == StepKind.RELAX_CONSTRAINT:
        return ["-- nothing to run: writes stop checking the old limit"]
    if step.kind == StepKind.DROP_INDEX:
        return [f"DROP INDEX {q(_index_name(step.name, d))}"]
    if step.kind == StepKind.CREATE_INDEX:
        spec = next(i for i in plan.indexes + plan.check_indexes if i.name == step.name)
        parts = spec.parts
        if d == TriggerDialect.POSTGRES:  # SQLite's WITHOUT ROWID tables append the key
            key = next(t.key for t in stored_tables(plan) if t.name == spec.table)
            parts = index_path(parts, key, spec.unique)
        return [sqlgen.create_index(spec.table, parts, _index_name(spec.name, d), dialect,
                                    unique=spec.unique)]
    if step.kind == StepKind.DROP_VIEW:
        return [f"DROP TABLE {q(step.name)}"] + _epochs(step, dialect)
    if step.kind == StepKind.RENAME_VIEW:
        return rename_sql(step, dialect)
    if step.kind == StepKind.BUILD_VIEW:
        return _build(step, plan, d)
    return ["-- the triggers of every base table are dropped and created again as "
            "`piql plan --dialect postgres` prints them"]


def set_default_sql(step: Step, dialect: str) -> list[str]:
    """A changed DEFAULT: ``ALTER COLUMN ... SET DEFAULT`` (or ``DROP DEFAULT``) on
    PostgreSQL. SQLite cannot change a column's DEFAULT: piql's writes fill the new one
    themselves, and the table's own (for other SQL writers) stays as created."""
    assert step.column is not None
    if dialect != TriggerDialect.POSTGRES:
        return ["-- nothing to run: SQLite cannot change a column's DEFAULT without rebuilding "
                "its table; piql's writes and loads fill the new one, the table's declared "
                "DEFAULT stays as created"]
    q = lambda name: sqlgen.identifier(name, dialect)  # noqa: E731
    default = _default(step)
    action = "DROP DEFAULT" if default is None else f"SET DEFAULT {sqlgen.literal(default, dialect)}"
    return [f"ALTER TABLE {q(step.name)} ALTER COLUMN {q(step.column[0])} {action}"]


def _default(step: Step) -> object:
    """The constant DEFAULT of the column a step adds or changes (None: none)."""
    return step.table.default(step.column[0]) if step.table and step.column else None


def validation_sql(step: Step, dialect: str) -> str:
    """The keys of ``step``'s table holding more values than its CARDINALITY constraint
    allows (the limit is the schema's integer, printed as a literal)."""
    constraint = step.constraint
    assert constraint is not None
    count = exp.Count(this=exp.Distinct(expressions=[sqlgen.column_ref(constraint.column)]))
    query = exp.select(*[sqlgen.column_ref(p) for p in constraint.per], count.copy()) \
        .from_(sqlgen.table_ref(constraint.table)) \
        .group_by(*[sqlgen.column_ref(p) for p in constraint.per]) \
        .having(exp.GT(this=count, expression=exp.Literal.number(constraint.limit)))
    return sqlgen.render(query, dialect)


def rename_sql(step: Step, dialect: str) -> list[str]:
    """Keep a view under its new name: the table renamed, and the unique index a view whose
    key may hold NULL is read through (by its name) made again."""
    d = TriggerDialect(dialect)
    q = lambda name: sqlgen.identifier(name, d)  # noqa: E731
    old = step.renamed_from or ""
    statements = [f"ALTER TABLE {q(old)} RENAME TO {q(step.name)}"]
    if step.view is not None and step.view.nullable_key:  # the store reads it by name
        view = step.view
        statements += [f"DROP INDEX {q(_index_name(key_index_name(old), d))}",
                       key_index_sql(step.name, tuple(c for c, _ in view.columns), view.key,
                                     KeyStorage(view.storage), d)]
    if step.view is not None and step.view.kind != ViewKind.IMV:
        statements.append(f"-- and its epochs marked for refresh: UPDATE {q(DIRTY_EPOCHS)} "
                          "SET view = <new name> WHERE view = <old name>")
    return statements


def _epochs(step: Step, dialect: str) -> list[str]:
    if step.view is None or step.view.kind == ViewKind.IMV:
        return []
    return [f"-- and its epochs marked for refresh: DELETE FROM "
            f"{sqlgen.identifier(DIRTY_EPOCHS, dialect)} WHERE view = <its name>"]


def _build(step: Step, plan: Plan, d: TriggerDialect) -> list[str]:
    view = next(v for v in plan.ordered_views if v.name == step.name)
    statements = view_table(view, d)
    if view.kind == ViewKind.PERIODIC:
        return statements + ["-- filled by the next `piql refresh`"]
    if view.kind == ViewKind.STAGING and d == TriggerDialect.SQLITE:
        return statements + ["-- filled from the rows there, piql computing each row's "
                             "partition as on write"]
    return statements + [build(view, d)]


def _index_name(name: str, d: TriggerDialect) -> str:
    return short_name(name) if d == TriggerDialect.POSTGRES else name
