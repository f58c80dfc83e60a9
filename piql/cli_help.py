"""The examples and exit statuses each command's ``--help`` ends with."""
from __future__ import annotations

_FILES_EXIT = "  2  input error: a file cannot be read or is malformed, or wrong usage"

EPILOGS = {
    "piql": """\
examples:
  piql lint db/schema.sql db/queries.sql
  piql rules unbounded
  piql deploy db/schema.sql db/queries.sql --db app.db --load users=users.csv

Each command's --help shows its options, an example and its exit statuses.
""",
    "explain": f"""\
example:
  piql explain db/schema.sql db/queries.sql homeTimeline

exit status:
  0  the query is bounded
  1  the query is unbounded
{_FILES_EXIT}, or no query is called NAME
""",
    "plan": f"""\
examples:
  piql plan db/schema.sql db/queries.sql --dialect postgres > plan.sql
  psql -v ON_ERROR_STOP=1 -d app -f plan.sql   # tables, views, triggers

exit status:
  0  every query is bounded
  1  some query is unbounded
{_FILES_EXIT}
""",
    "deploy": f"""\
example:
  piql deploy db/schema.sql db/queries.sql --db app.db --load users=users.csv \\
      --load posts=posts.parquet

The loads are all or nothing: if one file is refused, none is kept.

exit status:
  0  deployed (and, unless --no-check, every view equals its recomputation)
  1  the final check found a view that differs
{_FILES_EXIT}, or the store refused: a row breaks a constraint, the store
     was deployed with another plan
""",
    "query": f"""\
example:
  piql query db/schema.sql db/queries.sql --db app.db userPosts userId=42

exit status:
  0  the query ran
{_FILES_EXIT}, or the store refused: an unknown or unbounded query, a
     missing or mistyped parameter
""",
    "refresh": f"""\
examples:
  piql refresh db/schema.sql db/queries.sql --db app.db
  piql refresh db/schema.sql db/queries.sql --db app.db --every '1 min'
  piql refresh db/schema.sql db/queries.sql --db app.db --since 2026-11-01

exit status:
  0  refreshed (or interrupted while waiting for the next refresh)
{_FILES_EXIT}, or the store refused
""",
    "migrate": f"""\
examples:
  piql migrate db/schema.sql db/queries.sql --db app.db --dry-run
  piql migrate db/schema.sql db/queries.sql --db app.db

--dry-run prints the steps from the store's plan to this one, their SQL in the
store's dialect and the rows each reads and writes; without it the steps run in
one transaction (on SQLite and PostgreSQL), then every view is checked.

exit status:
  0  migrated (or nothing to migrate), or the dry run shows steps that can run
  1  the dry run shows a step piql cannot migrate or a query left unbounded,
     or the final check found a view that differs
{_FILES_EXIT}, or the store
     refused: a row breaks a new constraint, a step piql cannot run, a query
     left unbounded or a view dropped that a process of the old plan serves
     (without --force), changes pending in the update queue
""",
    "check": f"""\
example:
  piql check db/schema.sql db/queries.sql --db app.db --repair

exit status:
  0  every view equals its recomputation, or --repair replaced those that did not
  1  some view differs (without --repair)
{_FILES_EXIT}
""",
    "maintain": f"""\
example:
  piql maintain db/schema.sql db/queries.sql --db app.db --policy linecutting

Applies the queued changes of the asynchronous views (-- maintenance: async) until
interrupted (or, with --once, until the queue is empty). Several maintainers may run
on one store: an entry is claimed by one of them (FOR UPDATE SKIP LOCKED on
PostgreSQL), and a maintainer killed mid-batch leaves its batch queued.

exit status:
  0  stopped (interrupted, or --once with the queue empty)
{_FILES_EXIT}
""",
    "bench": """\
example:
  piql bench twotags --scales 1000,10000

exit status:
  0  done;  2  a bad option
""",
}
