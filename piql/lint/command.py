"""``piql lint`` and ``piql rules``: their options, and how flags, the project's
configuration and the files combine into one report and exit status.

Kept apart from :mod:`piql.cli` so the lint controls (``--select``, ``--ignore``,
``--fail-on``, configuration, several files and standard input) live in one place.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from piql.errors import InputError, Location
from piql.language.loader import Input, Source, load_plan
from piql.query_block import MaintenanceMode
from piql.lint import config as project
from piql.lint.findings import EXIT_INPUT, Findings, Policy, findings, input_failure
from piql.planner.application import Plan
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.report import github, json_report, sarif, text
from piql.report.colour import Palette, wanted
from piql.rules import RULES, Severity, codes_of, resolve

FORMATS: dict[str, Callable[[Findings], str]] = {
    "text": text.render, "json": json_report.render,
    "sarif": sarif.render, "github": github.render,
}
STDIN = "-"

LINT_EPILOG = """\
examples:
  piql lint db/schema.sql db/queries.sql
  piql lint db/schema.sql a.sql b.sql --ignore hotspot --fail-on warning
  cat q.sql | piql lint db/schema.sql - --stdin-filename q.sql --format github
  piql lint                  # files and settings from [tool.piql] or piql.toml

exit status:
  0  nothing at or above --fail-on (default: error) was reported
  1  some reported finding is at or above --fail-on (an unbounded query, by default)
  2  input error: a file cannot be read or is malformed, or wrong usage
     (json, sarif and github still write a document holding the error)
"""

RULES_EPILOG = """\
examples:
  piql rules            # every code, its id, severity and summary
  piql rules unbounded  # what it means, an example, and the fix (PQ101 works too)

exit status:
  0  done;  2  no rule has that code
"""


def add_lint(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    lint = commands.add_parser(
        "lint", help="classify every query (SI-0..SI-3 or unbounded)",
        description="Classify every query of the queries files against the schema: its\n"
                    "level, its worst-case operations, what it needs, and why.",
        epilog=LINT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    lint.add_argument("files", nargs="*", metavar="FILE",
                      help="the schema file, then one or more queries files ('-' reads "
                           "standard input); default: schema and queries of the configuration")
    lint.add_argument("--format", choices=sorted(FORMATS), default=None,
                      help="output format (default: text, or the configuration's)")
    lint.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE")
    lint.add_argument("--select", action="append", metavar="CODES",
                      help="report only these codes: words or ids, comma separated, e.g. "
                           "unbounded,PQ2 (an id prefix selects its group)")
    lint.add_argument("--ignore", action="append", metavar="CODES",
                      help="do not report these codes (comma separated)")
    lint.add_argument("--fail-on", choices=[s.value for s in Severity], default=None,
                      help="the least severity of a reported finding that makes the exit "
                           "status 1 (default: error)")
    lint.add_argument("--partitions", type=int, default=None, metavar="N",
                      help="staging partitions of SI-3 views, which the plan is made for "
                           f"(default: {DEFAULT_PARTITIONS})")
    lint.add_argument("--db", dest="database", metavar="URL", default=None,
                      help="read the schema (and on PostgreSQL the queries) from a running "
                           "database: sqlite:///app.db, postgresql://...; the FILEs are then "
                           "the queries file (optional on PostgreSQL)")
    lint.add_argument("--maintenance", choices=("sync", "async"), default="sync",
                      help="the maintenance mode of queries without a '-- maintenance:' line "
                           "(default: sync; docs/async.md)")
    lint.add_argument("--stdin-filename", metavar="NAME", default=None,
                      help="the file name to report for '-' (default: <stdin>)")
    lint.add_argument("--config", metavar="FILE", default=None,
                      help="read settings from FILE (piql.toml or pyproject.toml) instead of "
                           "the nearest one")
    lint.add_argument("--no-config", action="store_true",
                      help="ignore piql.toml and [tool.piql]")
    lint.set_defaults(run=run_lint)
    return lint


def add_rules(commands: argparse._SubParsersAction) -> argparse.ArgumentParser:
    rules = commands.add_parser(
        "rules", help="list the diagnostic codes, or explain one",
        description="The codes lint reports. Words and PQ ids are both accepted by\n"
                    "--select, --ignore and -- noqa.",
        epilog=RULES_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    rules.add_argument("code", nargs="?", metavar="CODE", help="a word code or id to explain")
    rules.set_defaults(run=run_rules)
    return rules


def run_rules(args: argparse.Namespace) -> int:
    if args.code is None:
        width = max(len(r.code) for r in RULES)
        for r in RULES:
            print(f"{r.id}  {r.code:<{width}}  {r.severity.value:<7}  {r.summary}")
        return 0
    try:
        (rule,) = resolve(args.code)[:1]
    except ValueError as err:
        raise InputError(str(err)) from None
    lines = [f"{rule.id} {rule.code} ({rule.severity.value}): {rule.summary}", "",
             rule.explanation, "", "example:"]
    lines += [f"  {line}" for line in rule.example.splitlines()]
    lines += ["", f"fix: {rule.fix}", "", f"docs: {rule.help_uri}"]
    print("\n".join(lines))
    return 0


def run_lint(args: argparse.Namespace) -> int:
    """Lint with the flags of ``args`` over the project's configuration."""
    settings = project.LintConfig()
    report_format = args.format or "text"
    try:
        settings = _configuration(args)
        report_format = args.format or settings.format or "text"
        policy = _policy(args, settings)
        partitions = args.partitions if args.partitions is not None else \
            settings.partitions or DEFAULT_PARTITIONS
        if partitions < 1:
            raise InputError(f"--partitions expects a positive integer, got {partitions}")
        found = findings(_plan(args, settings, partitions), policy)
    except InputError as err:
        if report_format == "text":
            raise  # text keeps file:line:col: message on standard error
        for error in getattr(err, "all_errors", None) or [err]:
            print(f"piql: error: {error}", file=sys.stderr)
        _write(args, FORMATS[report_format](input_failure(err)), report_format)
        return EXIT_INPUT
    _write(args, _render(found, report_format, args), report_format)
    if report_format == "github":
        print(github.summary(found), file=sys.stderr)
    return found.exit_code


def _plan(args: argparse.Namespace, settings: project.LintConfig, partitions: int) -> Plan:
    """The plan of the files (or the configuration's), or with ``--db`` of the database's
    catalog and the one queries file given (on PostgreSQL: pg_stat_statements without one)."""
    maintenance = MaintenanceMode(args.maintenance)
    if args.database is None:
        schema, queries = _inputs(args, settings)
        return load_plan(schema, queries, partitions, maintenance)
    if maintenance is not MaintenanceMode.SYNC:
        raise InputError("--maintenance async needs the queries files; with --db, mark "
                         "queries with '-- maintenance: async' in the queries file instead")
    from piql.introspect import plan_from_database

    if len(args.files) > 1:
        raise InputError("--db reads the schema from the database: give only the queries "
                         f"file (one), not {' '.join(args.files)}")
    return plan_from_database(args.database, args.files[0] if args.files else None, partitions)


def _render(found: Findings, report_format: str, args: argparse.Namespace) -> str:
    if report_format == "text":
        return text.render(found, Palette(not args.output and wanted(sys.stdout)))
    return FORMATS[report_format](found)


def _write(args: argparse.Namespace, report: str, report_format: str) -> None:
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                out.write(report)
        except OSError as err:
            raise InputError(f"--output {args.output}: cannot write the report: "
                             f"{err.strerror or err}") from None
    else:
        sys.stdout.write(report)


def _configuration(args: argparse.Namespace) -> project.LintConfig:
    if args.no_config:
        return project.LintConfig()
    if args.config:
        if not Path(args.config).is_file():
            raise InputError(f"--config {args.config}: no such file")
        return project.read(args.config)
    found = project.find()
    return project.read(found) if found is not None else project.LintConfig()


def _policy(args: argparse.Namespace, settings: project.LintConfig) -> Policy:
    try:
        select = codes_of(",".join(args.select), "--select") if args.select else settings.select
        ignore = codes_of(",".join(args.ignore), "--ignore") if args.ignore else settings.ignore
    except ValueError as err:
        raise InputError(str(err)) from None
    fail_on = Severity(args.fail_on) if args.fail_on else settings.fail_on or Severity.ERROR
    return Policy(select, ignore or frozenset(), fail_on)


def _inputs(args: argparse.Namespace, settings: project.LintConfig
            ) -> tuple[Input, list[Input]]:
    """The schema and queries to read: the command line's, else the configuration's."""
    if args.files:
        if len(args.files) < 2:
            raise InputError("lint needs a schema file and at least one queries file "
                             f"(got only {args.files[0]})")
        names = list(args.files)
    elif settings.schema and settings.queries:
        names = [settings.schema, *settings.queries]
    else:
        where = f" in {settings.file}" if settings.file else \
            " (no piql.toml or [tool.piql] in pyproject.toml found)"
        missing = "schema and queries" if not settings.schema and not settings.queries else \
            "schema" if not settings.schema else "queries"
        raise InputError(f"no files to lint: give SCHEMA QUERIES..., or set {missing}{where}")
    if names.count(STDIN) > 1:
        raise InputError("'-' (standard input) may be given once")
    sources: list[Input] = [_stdin(args) if name == STDIN else name for name in names]
    return sources[0], sources[1:]


def _stdin(args: argparse.Namespace) -> Source:
    name = args.stdin_filename or "<stdin>"
    data = sys.stdin.buffer.read() if hasattr(sys.stdin, "buffer") else \
        sys.stdin.read().encode("utf-8")
    try:
        return Source(data.decode("utf-8-sig"), name)
    except UnicodeDecodeError as err:
        raise InputError(f"standard input is not UTF-8 text: byte 0x{data[err.start]:02x} "
                         "cannot start or continue a character", Location(name, 1, 1)) from None
