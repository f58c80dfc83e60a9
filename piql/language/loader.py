"""Read a schema and queries and plan them: the entry point the CLI and API share.

Files are read as paths; :class:`Source` carries text that is already in hand (standard
input, ``piql.loads``) with the name its messages use. Several queries files are one
application: their queries are planned together, and a name may be used once across them.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence, Union

from piql.catalog import Catalog
from piql.errors import InputError
from piql.language.queries import parse_queries_file
from piql.language.schema import parse_schema
from piql.language.source_text import read_source
from piql.planner.application import Plan, plan_application
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.diagnostics import Diagnostic
from piql.query_block import MaintenanceMode, NamedQuery


@dataclass(frozen=True)
class Source:
    """Text to read, and the name locations in it are given with (``file:line:col``)."""

    text: str
    name: str


Input = Union[str, Path, Source]


def load_plan(schema: Input, queries: Input | Sequence[Input],
              partitions: int = DEFAULT_PARTITIONS,
              maintenance: MaintenanceMode = MaintenanceMode.SYNC) -> Plan:
    """Parse the schema and the queries (one file or several; raising InputError on a
    mistake) and classify every query, for a store whose staging views have ``partitions``
    partitions; ``maintenance`` is the mode of a query without ``-- maintenance:``."""
    many = [queries] if isinstance(queries, (str, Path, Source)) else list(queries)
    if not many:
        raise InputError("no queries file given")
    catalog = _schema(schema)
    found, notes = load_queries_of(many, catalog, maintenance)
    names = ", ".join(_name(q) for q in many)
    return replace(plan_application(catalog, found, names, partitions), notes=notes)


def _schema(source: Input) -> Catalog:
    if isinstance(source, Source):
        return parse_schema(source.text, source.name)
    return parse_schema(read_source(source, "schema file"), str(source))


def load_queries_of(sources: Sequence[Input], catalog: Catalog,
                    maintenance: MaintenanceMode = MaintenanceMode.SYNC
                    ) -> tuple[tuple[NamedQuery, ...], tuple[Diagnostic, ...]]:
    """The queries of every source, in order, and the notes on blocks skipped (aiosql's
    statements and scripts); every mistake of every file is collected and the first (by
    file, then position) is raised carrying them all."""
    found: list[NamedQuery] = []
    notes: list[Diagnostic] = []
    errors: list[InputError] = []
    first_seen: dict[str, NamedQuery] = {}
    for source in sources:
        try:
            text = source.text if isinstance(source, Source) else \
                read_source(source, "queries file")
            parsed = parse_queries_file(text, catalog, _name(source), maintenance)
        except InputError as err:
            errors += getattr(err, "all_errors", None) or [err]
            continue
        notes += parsed.notes
        for query in parsed.queries:
            earlier = first_seen.get(query.name.lower())
            if earlier is not None:
                errors.append(InputError(f"duplicate query name '{query.name}' (first defined "
                                         f"at {earlier.location})", query.location))
                continue
            first_seen[query.name.lower()] = query
            found.append(query)
    if errors:
        first = errors[0]
        first.all_errors = errors  # type: ignore[attr-defined]
        raise first
    return tuple(found), tuple(notes)


def _name(source: Input) -> str:
    return source.name if isinstance(source, Source) else str(source)
