"""The layering of docs/architecture.md, checked on every module's imports.

The language, the model and the planner are pure (no database, no runtime, no engine), so
they can be read, tested and reused without a store; engines are leaves (the runtime's
engine_bridge talks to them, never the reverse); and only the SQLite store talks to
sqlite3, so a PostgreSQL store can replace it behind the Store protocol. Every import is
found by walking the module's syntax tree: function-level and ``TYPE_CHECKING`` imports
count too.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "piql"

# Modules that must stay pure, and what they may not import.
PURE = ("planner/", "language/", "query_block.py", "catalog.py", "sql_types.py",
        "errors.py", "interval.py", "sqlgen.py", "diagnostics.py", "report/")
DATABASES = ("sqlite3", "duckdb", "pyspark", "psycopg", "psycopg_pool")
NOT_IN_PURE = ("piql.runtime", "piql.engines") + DATABASES

SQLITE_STORE = "runtime/sqlite_store.py"
SQLITE_EXCEPTIONS = {
    # The TPC-W benchmark's baseline is the application's own SQL on a plain SQLite
    # connection (with a progress handler counting VM steps): the thing piql is measured
    # against, so it must not go through piql's store.
    "bench/tpcw_backends.py",
}


def imports(source: str, module: str) -> set[str]:
    """Every module ``source`` imports, anywhere in it, as absolute dotted names
    (``from piql import runtime`` gives ``piql.runtime`` as well as ``piql``)."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def modules() -> dict[str, set[str]]:
    """Each module of piql (path relative to the package) and what it imports."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        # a package's __init__ resolves relative imports against the package itself
        dotted = "piql." + relative.removesuffix(".py").replace("/", ".")
        found[relative] = imports(path.read_text(encoding="utf-8"), dotted)
    return found


def breaking(imported: set[str], forbidden: tuple[str, ...]) -> list[str]:
    return sorted(name for name in imported
                  if any(name == f or name.startswith(f + ".") for f in forbidden))


def test_every_import_is_found_however_it_is_written():
    source = """
import os, sqlite3 as lite
from typing import TYPE_CHECKING
if TYPE_CHECKING:
    from piql.runtime.store import Store
def later():
    import duckdb
    from piql import engines
class K:
    def m(self):
        from .. import runtime
        from .sibling import thing
"""
    found = imports(source, "piql.planner.module")
    assert {"sqlite3", "duckdb", "piql.runtime.store", "piql.engines", "piql.runtime",
            "piql.planner.sibling.thing"} <= found
    assert breaking(found, NOT_IN_PURE) == [
        "duckdb", "piql.engines", "piql.runtime", "piql.runtime.store",
        "piql.runtime.store.Store", "sqlite3"]


def test_the_walk_sees_the_whole_package():
    found = modules()
    assert {"planner/bounded_plans.py", "language/queries.py", "runtime/deployment.py",
            "engines/base.py", SQLITE_STORE} <= set(found)
    assert "sqlite3" in found[SQLITE_STORE]
    assert "piql.engines.base" in found["runtime/engine_bridge.py"]


def test_the_language_the_model_and_the_planner_import_no_runtime_engine_or_database():
    broken = {module: breaking(imported, NOT_IN_PURE) for module, imported in modules().items()
              if module.startswith(PURE)}
    assert {module: names for module, names in broken.items() if names} == {}


def test_engines_are_leaves():
    broken = {module: breaking(imported, ("piql.runtime",))
              for module, imported in modules().items() if module.startswith("engines/")}
    assert {module: names for module, names in broken.items() if names} == {}


def test_only_the_sqlite_store_imports_sqlite3():
    importing = {module for module, imported in modules().items()
                 if breaking(imported, ("sqlite3",))}
    assert importing == {SQLITE_STORE} | SQLITE_EXCEPTIONS
