"""Read a schema and a queries file and plan them: the entry point the CLI and API share."""
from __future__ import annotations

from pathlib import Path

from piql.planner.application import Plan, plan_application
from piql.language.queries import load_queries
from piql.language.schema import load_schema


def load_plan(schema_path: str | Path, queries_path: str | Path) -> Plan:
    """Parse both files (raising InputError on a mistake) and classify every query."""
    catalog = load_schema(schema_path)
    queries = load_queries(queries_path, catalog)
    return plan_application(catalog, queries, str(queries_path))
