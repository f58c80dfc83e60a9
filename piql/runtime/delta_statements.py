"""Delta rules run as one prepared statement each, on SQLite.

A delta rule's plan (``DeltaRule.plan``, a Phase 0 plan whose parameters are the written
tuple's columns) is compiled once per deployment by ``piql.planner.compile``, the same
compiler bounded queries use, and run on the store's own connection (SQLite keeps it
prepared in its statement cache): one call into SQLite per rule instead of one per probe
of the interpreter (``piql.runtime.executor``), which stays the reference and runs every
plan the compiler refuses. The operations counted are the interpreter's
(``CompiledQuery.answer``), so write reports and strict bounds are unchanged.

The store's triggers run the rules of most plans (``Store.maintained_rules``): on
PostgreSQL and SQLite those of every IMV (SQLite's adding SUMs with piql's functions,
``runtime.sqlite_functions``). The rules left to piql (staging views', epoch marks', and
every rule on a store without triggers) run here: compiled on SQLite, through the interpreter on
PostgreSQL.
"""
from __future__ import annotations

from typing import Any

from piql.planner.compile import CompiledQuery, StoreLayout, TableLayout, UncompilablePlan, compile_plan
from piql.planner.views import DeltaRule
from piql.runtime.errors import StoreOverflow
from piql.runtime.executor import execute
from piql.runtime.store import Store


class DeltaStatements:
    """The compiled statement of each delta rule of one deployment, made on first use."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._compiled: dict[str, CompiledQuery | None] = {}
        self._layout: StoreLayout | None = None

    def rows(self, rule: DeltaRule, row: dict[str, Any]) -> list[tuple]:
        """The rows of ``rule``'s delta plan for the written ``row``; its operations are
        added to the store's counter."""
        assert rule.plan is not None
        statement = self._statement(rule)
        if statement is not None:
            try:
                rows, ops = statement.run(self.store.sql, row)
            except StoreOverflow:
                pass  # SQLite's SUM left 64 bits where the interpreter sums exactly
            else:
                self.store.counter.reads += ops
                return rows
        return execute(self.store, rule.plan, row)

    def _statement(self, rule: DeltaRule) -> CompiledQuery | None:
        if rule.name not in self._compiled:
            self._compiled[rule.name] = self._compile(rule)
        return self._compiled[rule.name]

    def _compile(self, rule: DeltaRule) -> CompiledQuery | None:
        if self.store.dialect != "sqlite" or rule.plan is None:
            return None
        if self._layout is None:
            self._layout = StoreLayout(tuple(
                TableLayout(s.name, s.columns, s.key, s.key_index)
                for s in self.store.shapes.values()))
        try:
            return compile_plan(rule.plan, "sqlite", self._layout)
        except UncompilablePlan:
            return None
