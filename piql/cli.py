"""The ``piql`` command line.

Exit codes (DESIGN.md): 0 every query bounded, 1 some query unbounded,
2 input error (malformed schema or queries file, unknown query name).
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from piql.errors import InputError
from piql.loader import load_plan
from piql.planner.application import Plan
from piql.report import ddl, explain, github, json_report, sarif, text
from piql.sqlgen import DIALECTS

FORMATS: dict[str, Callable[[Plan], str]] = {
    "text": text.render, "json": json_report.render,
    "sarif": sarif.render, "github": github.render,
}
EXIT_OK, EXIT_UNBOUNDED, EXIT_INPUT = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="piql", description="Prove that every query and write stays bounded as data grows.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lint = commands.add_parser("lint", help="classify every query (SI-0..SI-3 or unbounded)")
    _files(lint)
    lint.add_argument("--format", choices=sorted(FORMATS), default="text",
                      help="output format (default: text)")
    lint.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    lint.set_defaults(run=_lint)

    show = commands.add_parser("explain", help="show one query's plan, bounds and reasoning")
    _files(show)
    show.add_argument("name", metavar="NAME", help="the query's -- name:")
    show.set_defaults(run=_explain)

    plan = commands.add_parser("plan", help="print the DDL of indexes and views and the rules' SQL")
    _files(plan)
    plan.add_argument("--dialect", choices=DIALECTS, default="sqlite",
                      help="SQL dialect (default: sqlite)")
    plan.set_defaults(run=_plan)
    return parser


def _files(command: argparse.ArgumentParser) -> None:
    command.add_argument("schema", metavar="SCHEMA", help="the schema file (CREATE TABLE ...)")
    command.add_argument("queries", metavar="QUERIES", help="the named queries file")


def _lint(args: argparse.Namespace) -> int:
    plan = load_plan(args.schema, args.queries)
    report = FORMATS[args.format](plan)
    if args.output:
        with open(args.output, "w") as out:
            out.write(report)
    else:
        sys.stdout.write(report)
    return EXIT_OK if all(q.bounded for q in plan.queries) else EXIT_UNBOUNDED


def _explain(args: argparse.Namespace) -> int:
    plan = load_plan(args.schema, args.queries)
    query = plan.query(args.name)
    if query is None:
        known = ", ".join(q.name for q in plan.queries)
        raise InputError(f"no query named '{args.name}' in {args.queries} (known: {known})")
    sys.stdout.write(explain.render(query))
    return EXIT_OK if query.bounded else EXIT_UNBOUNDED


def _plan(args: argparse.Namespace) -> int:
    plan = load_plan(args.schema, args.queries)
    sys.stdout.write(ddl.render(plan, args.dialect))
    return EXIT_OK if all(q.bounded for q in plan.queries) else EXIT_UNBOUNDED


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except InputError as err:
        for error in getattr(err, "all_errors", [err]):
            print(f"piql: error: {error}", file=sys.stderr)
        return EXIT_INPUT


if __name__ == "__main__":
    sys.exit(main())
