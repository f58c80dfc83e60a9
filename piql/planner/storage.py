"""Phase 2: bound a view's storage relative to one base relation (§4, Invariant 3).

Dependencies come from the four rules of §4.1: a relation's key determines
its other attributes (weight 1); a CARDINALITY constraint lets its PER
columns determine at most K values of its column (weight K); equality
predicates of the view unify two attributes both ways (weight 1); literal
equalities fix an attribute outright. Algorithm 4 starts from one relation's
key and adds every attribute the dependencies derive; when all attributes
(for GROUP BY views, §4.3: all grouped attributes) are derived, the view has
at most ``factor`` rows per row of that relation, ``factor`` being the product
of the weights used. Weight-one dependencies are exhausted before a weighted
one is spent, so the factor found is the smallest this order allows.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass

from piql.catalog import Catalog, Table
from piql.planner.views import StorageBound, TraceSection
from piql.query_block import Attr, Epoch, Literal, Param, QueryBlock, is_attr_like

FIXED = "FIXED"
MAX_SEARCH = 4096  # derived sets distinct_bound explores at most
Node = Attr | Epoch | str


@dataclass(frozen=True)
class Dependency:
    lhs: frozenset
    rhs: frozenset
    weight: int
    rule: str

    def __str__(self) -> str:
        def names(nodes: frozenset) -> str:
            text = ", ".join(sorted(map(str, nodes)))
            return f"({text})" if len(nodes) > 1 else text

        arrow = {"equality": "<->", "cardinality": f"-{self.weight}->"}.get(self.rule, "->")
        return f"{names(self.lhs)} {arrow} {names(self.rhs)}   [{self.rule}]"


@dataclass(frozen=True)
class StorageResult:
    bound: StorageBound | None
    trace: tuple[TraceSection, ...]
    free: tuple[Node, ...] = ()
    hint: str = ""
    message: str = ""


def dependencies(catalog: Catalog, definition: QueryBlock) -> list[Dependency]:
    """The four rules of §4.1 applied to a view definition."""
    found: list[Dependency] = []
    for rel in definition.relations:
        table = _table(catalog, rel.table)
        key = frozenset(Attr(rel.alias, c) for c in table.primary_key)
        others = frozenset(Attr(rel.alias, c) for c in table.column_names) - key
        if others:
            found.append(Dependency(key, others, 1, "key"))
        for constraint in table.cardinalities:
            found.append(Dependency(frozenset(Attr(rel.alias, c) for c in constraint.per),
                                    frozenset({Attr(rel.alias, constraint.column)}),
                                    constraint.limit, "cardinality"))
    for pred in definition.predicates:
        if pred.op != "=":
            continue
        if is_attr_like(pred.left) and is_attr_like(pred.right):
            found.append(Dependency(frozenset({pred.left}), frozenset({pred.right}), 1, "equality"))
        elif is_attr_like(pred.left) and isinstance(pred.right, (Literal, Param)):
            found.append(Dependency(frozenset({FIXED}), frozenset({pred.left}), 1, "fixed"))
    for epoch in _epochs(definition):
        found.append(Dependency(frozenset({epoch.attr}), frozenset({epoch}), 1, "epoch"))
    return found


def bound_storage(catalog: Catalog, definition: QueryBlock) -> StorageResult:
    """Algorithm 4 (with the §4.3 GROUP BY variant) over every relation of the view."""
    deps = dependencies(catalog, definition)
    directed = deps + [Dependency(d.rhs, d.lhs, 1, d.rule) for d in deps if d.rule == "equality"]
    all_attrs = {Attr(r.alias, c) for r in definition.relations
                 for c in _table(catalog, r.table).column_names}
    target = set(definition.group_by) if definition.group_by else all_attrs
    trace = [TraceSection("dependencies (§4.1)", tuple(str(d) for d in deps) or ("(none)",))]
    attempts = []
    for rel in definition.relations:
        table = _table(catalog, rel.table)
        start = {Attr(rel.alias, c) for c in table.primary_key} | {FIXED}
        derived, factor, steps = _closure(start, directed, target)
        complete = target <= derived
        verdict = f"bounded: |view| <= {factor} x |{table.name}|" if complete else \
            "free: " + ", ".join(sorted(map(str, target - derived)))
        trace.append(TraceSection(f"Algorithm 4 from {rel.alias} ({table.name})",
                                  tuple(steps) + (verdict,)))
        attempts.append((complete, factor, rel, table, derived))
    bounded = [a for a in attempts if a[0]]
    if bounded:
        _, factor, rel, table, _ = min(bounded, key=lambda a: a[1])
        return StorageResult(StorageBound(table.name, rel.alias, factor), tuple(trace))
    _, _, rel, table, derived = min(attempts, key=lambda a: len(target - a[4]))
    free = tuple(sorted(target - derived, key=str))
    message, hint = _explain_failure(catalog, definition, derived, free)
    return StorageResult(None, tuple(trace), free, hint, message)


def distinct_bound(catalog: Catalog, definition: QueryBlock, given: set,
                   target: set) -> int | None:
    """At most how many combinations of ``target`` values the rows of ``definition`` hold
    for fixed values of ``given``; None when no dependencies derive ``target``.

    Algorithm 4's dependencies again, but the product of the weights spent is kept as
    small as possible (a cheapest-first search over the derived sets): a weighted
    dependency that does not lead to ``target`` must not count.
    """
    deps = dependencies(catalog, definition)
    directed = deps + [Dependency(d.rhs, d.lhs, 1, d.rule) for d in deps if d.rule == "equality"]
    free = [d for d in directed if d.weight == 1]
    weighted = [d for d in directed if d.weight != 1]

    def closed(attrs: frozenset) -> frozenset:
        derived = set(attrs)
        grown = True
        while grown:
            grown = False
            for dep in free:
                if dep.lhs <= derived and not dep.rhs <= derived:
                    derived |= dep.rhs
                    grown = True
        return frozenset(derived)

    first = closed(frozenset(given) | {FIXED})
    queue: list[tuple[int, int, frozenset]] = [(1, 0, first)]
    seen = {first}
    tie = 0
    while queue:
        factor, _, derived = heapq.heappop(queue)
        if target <= derived:
            return factor
        for dep in weighted:
            if dep.lhs <= derived and not dep.rhs <= derived:
                grown = closed(derived | dep.rhs)
                if grown not in seen and len(seen) < MAX_SEARCH:
                    seen.add(grown)
                    tie += 1
                    heapq.heappush(queue, (factor * dep.weight, tie, grown))
    return None


def _closure(start: set, deps: list[Dependency], target: set) -> tuple[set, int, list[str]]:
    derived = set(start)
    factor = 1
    steps = [f"start: {', '.join(sorted(str(a) for a in start if a != FIXED))}"]
    iteration = 0
    while not target <= derived:
        applicable = [d for d in deps if d.lhs <= derived and not d.rhs <= derived]
        if not applicable:
            break
        free = [d for d in applicable if d.weight == 1]
        chosen = free if free else [min(applicable, key=lambda d: d.weight)]
        added: list = []
        for dep in chosen:
            added += [a for a in dep.rhs if a not in derived and a not in added]
            factor *= dep.weight
        derived |= set(added)
        iteration += 1
        weight = f" (x{chosen[0].weight})" if not free else ""
        steps.append(f"iteration {iteration}: + {', '.join(sorted(map(str, added)))}{weight}")
    return derived, factor, steps


def _explain_failure(catalog: Catalog, definition: QueryBlock, derived: set,
                     free: tuple) -> tuple[str, str]:
    attr = next((a for a in free if isinstance(a, Attr)), None)
    if attr is None:
        return "no relation's key bounds the view's rows", ""
    table = _table(catalog, definition.relation(attr.alias).table)
    per = [c for c in table.primary_key if c != attr.column and Attr(attr.alias, c) in derived] or \
        [c for c in table.column_names if c != attr.column and Attr(attr.alias, c) in derived]
    default_per = [c for c in table.primary_key if c != attr.column]
    clause = f"WITH CARDINALITY ({attr.column}, K)"
    if per != default_per:
        clause += f" PER ({', '.join(per)})"
    self_join = sum(1 for r in definition.relations if r.table == table.name) > 1
    growth = "quadratically" if self_join else "without bound"
    per_text = ", ".join(per) or "the table"
    message = (f"the view's size is not bounded by any base relation: {attr} is "
               f"free, so for one value of ({per_text}) with many {attr.column} values the view "
               f"grows {growth}")
    hint = f"add {clause} to {table.name}"
    return message, hint


def _epochs(definition: QueryBlock) -> list[Epoch]:
    found: list[Epoch] = []
    for item in list(definition.group_by) + [s.expr for s in definition.select]:
        if isinstance(item, Epoch) and item not in found:
            found.append(item)
    return found


def _table(catalog: Catalog, name: str | None) -> Table:
    table = catalog.table(name or "")
    assert table is not None, name
    return table


def symmetric_bound(catalog: Catalog, definition: QueryBlock, first: str, second: str,
                    bound: StorageBound) -> StorageResult:
    """The bound of a symmetric-pair view (``planner.symmetric_pair``) whose pair column and
    join hold the table's key. The unordered view (``bound``: ``F`` rows per row of the
    table) is closed under swapping the two occurrences ``first`` and ``second``; keeping
    one orientation keeps half of its rows whose two occurrences differ, and every row
    where both are one row (at most one per row of the table when the two occurrences'
    keys determine the whole row, the closure below). So ``|view| <= (F + 1) / 2 x
    |table|``, rounded up."""
    deps = dependencies(catalog, definition)
    directed = deps + [Dependency(d.rhs, d.lhs, 1, d.rule) for d in deps if d.rule == "equality"]
    rels = {r.alias: r for r in definition.relations}
    start = {Attr(a, c) for a in (first, second)
             for c in _table(catalog, rels[a].table).primary_key} | {FIXED}
    target = {Attr(r.alias, c) for r in definition.relations
              for c in _table(catalog, r.table).column_names}
    derived, per_pair, steps = _closure(start, directed, target)
    if not target <= derived or per_pair != 1 or bound.alias not in (first, second):
        return StorageResult(bound, ())
    halved = StorageBound(bound.relation, bound.alias, (bound.factor + 2) // 2)
    return StorageResult(halved, (TraceSection(
        "symmetric pair: one orientation of each pair", tuple(steps) + (
            f"a pair's two rows determine its view row; |view| <= ({bound.factor} + 1) / 2 "
            f"x |{bound.relation}| = {halved.factor} x |{bound.relation}|",)),))
