"""From the plan a store holds to a new plan: the ordered steps of the migration.

Both plans are compared through their records (``piql.planner.plan_record``): the store
keeps the record of its plan, and the new plan gives its own. The steps, in the order a
migration runs them:

1. what a migration cannot do (``UNSUPPORTED``: a base table or column dropped, a type or
   a primary key changed, a NOT NULL column added without a DEFAULT), listed first so a
   refusal says why;
2. base tables, then columns, to add (with their constant DEFAULT, which the rows there
   get); DEFAULTs of columns there changed; TEMPORAL columns marked or unmarked (no row
   changes: the views reading them change with their definitions);
3. CARDINALITY constraints added or tightened (to validate against the rows there), or
   relaxed (nothing to check);
4. indexes to drop, views to drop, views kept under a new name, indexes to create;
5. views to build from the rows already there (in the order they are maintained);
6. views kept whose maintenance mode changed (``-- maintenance: async`` added or removed:
   the rows stay, the writes maintain them in their transaction or from the update queue);
7. the triggers to replace (PostgreSQL).

A view whose definition (kind, SQL, stored columns and key) is unchanged is kept with its
rows, whatever its name in the new plan: renamed if need be, never rebuilt. An index is
the same when its table, key parts and uniqueness are (its name included: the store reads
some indexes by name).
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from piql.planner.plan_record import (
    ConstraintRecord, IndexRecord, PlanRecord, TableRecord, ViewRecord,
)


class StepKind(StrEnum):
    """What one step of a migration does."""

    UNSUPPORTED = "unsupported"
    ADD_TABLE = "add table"
    ADD_COLUMN = "add column"
    SET_DEFAULT = "set default"
    SET_TEMPORAL = "set temporal"
    VALIDATE_CONSTRAINT = "validate constraint"
    RELAX_CONSTRAINT = "relax constraint"
    DROP_INDEX = "drop index"
    DROP_VIEW = "drop view"
    RENAME_VIEW = "rename view"
    CREATE_INDEX = "create index"
    BUILD_VIEW = "build view"
    CHANGE_MAINTENANCE = "change maintenance"
    REPLACE_TRIGGERS = "replace triggers"


@dataclass(frozen=True)
class Step:
    """One step: its kind, the name it acts on (a table, index or view), and the record
    it needs (the table or column added, the index, the view, the constraint). A renamed
    view's old name is ``renamed_from``; ``reason`` says why a step is unsupported."""

    kind: StepKind
    name: str
    table: TableRecord | None = None
    column: tuple[str, str] | None = None
    index: IndexRecord | None = None
    view: ViewRecord | None = None
    constraint: ConstraintRecord | None = None
    renamed_from: str | None = None
    reason: str = ""

    def describe(self) -> str:
        """One line saying what the step does."""
        if self.kind == StepKind.UNSUPPORTED:
            return f"cannot migrate: {self.reason}"
        if self.kind == StepKind.ADD_COLUMN and self.column is not None and self.table:
            default = self.table.default(self.column[0])
            return (f"add column {self.name}.{self.column[0]} {self.column[1]} " + (
                "(NULL in existing rows)" if default is None else
                f"DEFAULT {default!r} (in existing rows too)"))
        if self.kind == StepKind.SET_DEFAULT and self.column is not None and self.table:
            default = self.table.default(self.column[0])
            return (f"{self.name}.{self.column[0]}: " + (
                "no DEFAULT" if default is None else f"DEFAULT {default!r}")
                + " for rows written from now on (the rows there keep their values)")
        if self.kind == StepKind.SET_TEMPORAL and self.column is not None:
            column, temporal = self.column
            return (f"mark {self.name}.{column} TEMPORAL" if temporal else
                    f"{self.name}.{column} no longer TEMPORAL") + " (no row rewritten)"
        if self.kind == StepKind.CHANGE_MAINTENANCE and self.view is not None:
            return (f"maintain view {self.name} {self.view.maintenance}hronously "
                    "(its rows kept; the update queue must be empty)")
        if self.kind == StepKind.RENAME_VIEW:
            return f"keep view {self.renamed_from} (same definition) as {self.name}"
        if self.constraint is not None:
            return f"{self.kind} {self.constraint.describe()}"
        if self.index is not None:
            return f"{self.kind} {self.name} on {self.index.table} ({', '.join(self.index.columns)})"
        return f"{self.kind} {self.name}"


@dataclass(frozen=True)
class PlanDiff:
    """The steps from the recorded plan to the new one, and the views kept as they are."""

    steps: tuple[Step, ...]
    kept_views: tuple[str, ...]
    unbounded: tuple[str, ...] = ()  # queries bounded under the old plan, not the new one

    @property
    def empty(self) -> bool:
        """The store already holds the new plan: migrating is a no-op."""
        return not self.steps

    @property
    def dropped_views(self) -> tuple[str, ...]:
        """Views of the old plan no longer under their name (dropped, or kept renamed): a
        process serving the old plan would miss them."""
        return tuple(s.renamed_from or s.name for s in self.steps
                     if s.kind in (StepKind.DROP_VIEW, StepKind.RENAME_VIEW))

    @property
    def remaintained_views(self) -> tuple[str, ...]:
        """Views kept whose maintenance mode changes: a process of the old plan writing
        would maintain them the old way (in its transaction, or through the queue)."""
        return tuple(s.name for s in self.steps if s.kind == StepKind.CHANGE_MAINTENANCE)

    @property
    def unsupported(self) -> tuple[Step, ...]:
        return tuple(s for s in self.steps if s.kind == StepKind.UNSUPPORTED)


def plan_diff(old: PlanRecord, new: PlanRecord) -> PlanDiff:
    """The steps migrating a store from ``old`` to ``new`` (see the module docstring)."""
    renamed, kept = _match_views(old, new)
    dropped = [v for v in old.views if v.name not in renamed.values() and v.name not in kept]
    steps = (_table_steps(old, new) + _constraint_steps(old, new)
             + _index_steps(old, new, {v.name for v in dropped})
             + [Step(StepKind.DROP_VIEW, v.name, view=v) for v in dropped]
             + _rename_steps(new, renamed)
             + _index_steps(old, new, None)
             + [Step(StepKind.BUILD_VIEW, v.name, view=v) for v in new.views
                if v.name not in renamed and v.name not in kept]
             + _maintenance_steps(old, new, {**renamed, **{name: name for name in kept}}))
    if new.triggers is not None and new.triggers != old.triggers:
        steps.append(Step(StepKind.REPLACE_TRIGGERS, "triggers"))
    order = list(StepKind)
    ordered = sorted(steps, key=lambda s: order.index(s.kind))  # stable within a kind
    now = {name.lower() for name in new.bounded}
    unbounded = tuple(name for name, _ in new.queries
                      if name.lower() not in now and name in old.bounded)
    return PlanDiff(tuple(ordered), tuple(kept), unbounded)


def _rename_steps(new: PlanRecord, renamed: dict[str, str]) -> list[Step]:
    """The renames ({new name: old name}) in an order in which no view is renamed to a name
    another still has: a rename to another's old name waits for it, and views swapping
    names (a cycle) go through a temporary name."""
    pending = dict(renamed)
    steps: list[Step] = []
    parked: list[Step] = []
    while pending:
        taken = {source.lower() for source in pending.values()}
        free = [name for name in pending if name.lower() not in taken]
        for name in free:
            steps.append(Step(StepKind.RENAME_VIEW, name, view=new.view(name),
                              renamed_from=pending.pop(name)))
        if not free:  # every name wanted is still taken: park one view, freeing its name
            name = next(iter(pending))
            temporary = f"_piql_renaming_{len(parked)}"
            steps.append(Step(StepKind.RENAME_VIEW, temporary, view=new.view(name),
                              renamed_from=pending.pop(name)))
            parked.append(Step(StepKind.RENAME_VIEW, name, view=new.view(name),
                               renamed_from=temporary))
    return steps + parked


def _match_views(old: PlanRecord, new: PlanRecord) -> tuple[dict[str, str], list[str]]:
    """Views of ``new`` the store already keeps: ({new name: old name} of those renamed,
    [names of those kept under their name]). A staging view's rows are spread over the
    store's partitions, so it is kept only if their number is unchanged."""
    by_definition: dict[tuple, list[ViewRecord]] = {}
    for view in old.views:
        by_definition.setdefault(view.definition, []).append(view)
    renamed: dict[str, str] = {}
    kept: list[str] = []
    for view in new.views:
        candidates = by_definition.get(view.definition, [])
        if old.partitions != new.partitions and view.kind == "staging":
            continue
        match = next((c for c in candidates if c.name == view.name), None) or \
            next((c for c in candidates if new.view(c.name) is None
                  or new.view(c.name).definition != c.definition), None)
        if match is None:
            continue
        candidates.remove(match)
        if match.name == view.name:
            kept.append(view.name)
        else:
            renamed[view.name] = match.name
    return renamed, kept


def _maintenance_steps(old: PlanRecord, new: PlanRecord, matched: dict[str, str]) -> list[Step]:
    """Views kept (``matched``: new name to old) whose maintenance mode changed."""
    steps = []
    for name, source in matched.items():
        view, before = new.view(name), old.view(source)
        if view is not None and before is not None and view.maintenance != before.maintenance:
            steps.append(Step(StepKind.CHANGE_MAINTENANCE, name, view=view))
    return steps


def _table_steps(old: PlanRecord, new: PlanRecord) -> list[Step]:
    steps: list[Step] = []
    for table in old.tables:
        if new.table(table.name) is None:
            steps.append(_unsupported(table.name, f"the base table {table.name} is no longer "
                                      "in the schema (piql never drops base rows)"))
    for table in new.tables:
        before = old.table(table.name)
        if before is None:
            steps.append(Step(StepKind.ADD_TABLE, table.name, table=table))
        else:
            steps += _column_steps(before, table)
    return steps


def _column_steps(before: TableRecord, after: TableRecord) -> list[Step]:
    name = after.name
    if tuple(k.lower() for k in before.key) != tuple(k.lower() for k in after.key):
        return [_unsupported(name, f"the primary key of {name} changed from "
                             f"({', '.join(before.key)}) to ({', '.join(after.key)})")]
    steps = [_unsupported(name, f"the column {name}.{column} is no longer in the schema")
             for column, _ in before.columns if after.column(column) is None]
    for column, declared in after.columns:
        found = before.column(column)
        if found is not None and found[1].upper() != declared.upper():
            steps.append(_unsupported(name, f"the column {name}.{column} changed type from "
                                      f"{found[1]} to {declared}"))
        elif found is None and column.lower() in (c.lower() for c in after.not_null) \
                and after.default(column) is None:
            steps.append(_unsupported(name, f"the new column {name}.{column} is NOT NULL "
                                      "and has no value in the rows already there (give it "
                                      "a constant DEFAULT, which they get)"))
        elif found is None:
            steps.append(Step(StepKind.ADD_COLUMN, name, table=after,
                              column=(column, declared)))
        elif not _same_default(before.default(column), after.default(column)):
            steps.append(Step(StepKind.SET_DEFAULT, name, table=after,
                              column=(column, declared)))
    was = {c.lower() for c in before.temporal}
    now = {c.lower() for c in after.temporal}
    steps += [Step(StepKind.SET_TEMPORAL, name, table=after,
                   column=(column, "TEMPORAL" if column.lower() in now else ""))
              for column, _ in after.columns if (column.lower() in now) != (column.lower() in was)]
    return steps


def _same_default(before: object, after: object) -> bool:
    """Do two DEFAULTs give the same value? (TRUE is no 1, 1.0 no 1: typed as written.)"""
    return type(before) is type(after) and before == after


def _constraint_steps(old: PlanRecord, new: PlanRecord) -> list[Step]:
    before = {c.subject: c for c in old.constraints}
    after = {c.subject: c for c in new.constraints}
    steps = []
    for subject, constraint in after.items():
        found = before.get(subject)
        if found is None or constraint.limit < found.limit:
            steps.append(Step(StepKind.VALIDATE_CONSTRAINT, constraint.table,
                              constraint=constraint))
        elif constraint.limit > found.limit:
            steps.append(Step(StepKind.RELAX_CONSTRAINT, constraint.table,
                              constraint=constraint))
    steps += [Step(StepKind.RELAX_CONSTRAINT, c.table, constraint=c,
                   reason="the constraint is no longer in the schema")
              for subject, c in before.items() if subject not in after]
    return steps


def _index_steps(old: PlanRecord, new: PlanRecord, dropped: set[str] | None) -> list[Step]:
    """Indexes of ``old`` not in ``new`` (given the ``dropped`` views: an index on one goes
    with it), or (``dropped`` None) of ``new`` not in ``old``."""
    def key(index: IndexRecord) -> tuple:
        return index.shape + (index.name.lower(),)

    if dropped is not None:
        wanted = {key(i) for i in new.indexes}
        return [Step(StepKind.DROP_INDEX, i.name, index=i) for i in old.indexes
                if key(i) not in wanted and i.table not in dropped]
    present = {key(i) for i in old.indexes}
    return [Step(StepKind.CREATE_INDEX, i.name, index=i) for i in new.indexes
            if key(i) not in present]


def _unsupported(name: str, reason: str) -> Step:
    return Step(StepKind.UNSUPPORTED, name, reason=reason)
