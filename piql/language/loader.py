"""Read a schema and a queries file and plan them: the entry point the CLI and API share."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from piql.planner.application import Plan, plan_application
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.language.queries import load_queries_file
from piql.language.schema import load_schema


def load_plan(schema_path: str | Path, queries_path: str | Path,
              partitions: int = DEFAULT_PARTITIONS) -> Plan:
    """Parse both files (raising InputError on a mistake) and classify every query, for a
    store whose staging views have ``partitions`` partitions."""
    catalog = load_schema(schema_path)
    queries = load_queries_file(queries_path, catalog)
    plan = plan_application(catalog, queries.queries, str(queries_path), partitions)
    return replace(plan, notes=queries.notes)
