"""Query parameters resolved once: the column each one is compared with, and its type.

``<tag>`` in ``WHERE t.tag = <tag>`` takes the values of ``Tags.tag``: the runtime checks
a value against that column's declared type, the command line reads ``tag=...`` as one,
and workloads draw values from that column.
"""
from __future__ import annotations

from dataclasses import dataclass

from piql.catalog import Catalog
from piql.query_block import (
    Attr, Compare, Epoch, InList, Like, Param, Predicate, QueryBlock, walk,
)
from piql.sql_types import TypeFamily, family

EPOCH_TYPE = "BIGINT"  # an epoch of a TEMPORAL column is an integer (ms)


@dataclass(frozen=True)
class ParamSpec:
    """A parameter and the first comparison of it in the query (FROM-subqueries first).

    ``table`` and ``column`` name the base column it is compared with by ``op`` (``table``
    is None for a column of a FROM-subquery; both are None when it is compared with no
    column); ``epoch_width`` is set when it is compared with the column's time-window epoch.
    ``declared_type`` is the column's type (``BIGINT`` for an epoch), empty when unknown.
    """

    name: str
    table: str | None = None
    column: str | None = None
    op: str = "="
    epoch_width: int | None = None
    declared_type: str = ""

    @property
    def family(self) -> TypeFamily:
        return family(self.declared_type)


def param_specs(catalog: Catalog, block: QueryBlock) -> tuple[ParamSpec, ...]:
    """Every parameter of ``block``, in order of first appearance (``block.params``)."""
    found: dict[str, ParamSpec] = {}
    _collect(catalog, block, found)
    return tuple(found.get(name, ParamSpec(name)) for name in block.params)


def _collect(catalog: Catalog, block: QueryBlock, found: dict[str, ParamSpec]) -> None:
    for branch, _ in block.unions:
        _collect(catalog, branch, found)
    for relation in block.relations:
        if relation.subquery is not None:
            _collect(catalog, relation.subquery, found)
    comparisons = list(block.predicates)
    for condition in walk([block.filters, [r.on for r in block.relations], block.having]):
        # a parameter in an IN list, or compared with a column, takes that column's type
        if isinstance(condition, InList):
            comparisons += [Predicate(condition.arg, "=", v) for v in condition.values]
        elif isinstance(condition, (Compare, Like)):
            left, right = (condition.left, condition.right) if isinstance(condition, Compare) \
                else (condition.arg, condition.pattern)
            if isinstance(left, Param) and isinstance(right, Attr):
                left, right = right, left
            comparisons.append(Predicate(left, "=" if isinstance(condition, Like) else
                                         condition.op, right))
    if block.limit_param is not None and block.limit_param.name not in found:
        found[block.limit_param.name] = ParamSpec(block.limit_param.name, declared_type="BIGINT")
    for pred in comparisons:
        if not isinstance(pred.right, Param) or pred.right.name in found:
            continue
        left = pred.left
        attr = left.attr if isinstance(left, Epoch) else left
        if not isinstance(attr, Attr):
            continue
        table = block.relation(attr.alias).table
        column = catalog.table(table).column(attr.column) if table and catalog.table(table) \
            else None
        declared = EPOCH_TYPE if isinstance(left, Epoch) else \
            column.type if column is not None else ""
        found[pred.right.name] = ParamSpec(
            pred.right.name, table, attr.column, pred.op,
            left.width if isinstance(left, Epoch) else None, declared)
