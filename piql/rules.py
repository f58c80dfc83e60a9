"""The registry of diagnostic codes: every code piql reports, its short id, and what it means.

A diagnostic's ``code`` is a word (``unbounded``, ``hotspot``, ...), kept stable since the
first report format; each word also has a short id (``PQ101``) as sqlfluff and ruff users
expect. Both are accepted wherever a code is (``--select``, ``--ignore``, ``-- noqa:``,
``piql rules``). The explanations here are the text of ``piql rules CODE`` and of
docs/rules.md (a test keeps the two in step); SARIF output points each rule's ``helpUri``
at its section there, under the Documentation URL of pyproject.toml.

Ids are grouped by what they are about: PQ0xx input errors, PQ1xx why a query is not
bounded, PQ2xx risks of a bounded plan, PQ3xx what a plan needs, PQ4xx the schema.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from enum import Enum

class Severity(str, Enum):
    """How serious a diagnostic is; ``--fail-on`` names the least serious that fails lint."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"

    @property
    def rank(self) -> int:
        return _RANKS[self]

    def __str__(self) -> str:
        return self.value


_RANKS = {Severity.INFO: 0, Severity.WARNING: 1, Severity.ERROR: 2}


@dataclass(frozen=True)
class Rule:
    """One diagnostic code: its word, its short id, its usual severity and its explanation."""

    code: str
    id: str
    severity: Severity
    summary: str  # one line, for ``piql rules`` and SARIF's shortDescription
    explanation: str  # what it means and why piql says it
    example: str  # a query (and schema) that gets it
    fix: str  # what to do about it

    @property
    def anchor(self) -> str:
        """The section of docs/rules.md about this rule."""
        return self.code

    @property
    def help_uri(self) -> str:
        """This rule's section of docs/rules.md under the project's documentation URL
        (SARIF viewers and ``piql rules CODE`` link to it)."""
        from piql.version import documentation

        return f"{documentation()}/rules.md#{self.anchor}"


RULES: tuple[Rule, ...] = (
    Rule("input", "PQ001", Severity.ERROR,
         "A schema or queries file cannot be read or is malformed.",
         "piql could not read the application: a file is missing or not UTF-8, a statement "
         "does not parse, a name is unknown or ambiguous, a block has no SQL. Nothing is "
         "planned; lint exits with status 2 whatever --fail-on says, and the machine formats "
         "still write a complete document with this diagnostic in it.",
         "-- name: userById\nSELECT name FROM users WHERE userid = <id>;\n"
         "-- error: unknown column 'userid' in users; did you mean 'userId'?",
         "Correct the file at the line and column given. This code cannot be ignored or "
         "suppressed."),
    Rule("unbounded", "PQ101", Severity.ERROR,
         "The query has no plan whose work is bounded as data grows.",
         "No plan over the tables and indexes (SI-0, SI-1), no incrementally maintained view "
         "(SI-2) and no periodic view (SI-3) keeps the number of tuples the query reads "
         "below a constant. The message names the relation whose rows are not bounded. The "
         "runtime refuses to run such a query.",
         "-- schema: CREATE TABLE likes (userId BIGINT, postId BIGINT,\n"
         "--   PRIMARY KEY (userId, postId));\n"
         "-- name: likers\nSELECT userId FROM likes WHERE postId = <postId>;",
         "Declare what bounds the rows (WITH CARDINALITY (userId, 1000) PER (postId)), or "
         "page the result (ORDER BY ... LIMIT n). Suppressing it with -- noqa: unbounded "
         "lets lint pass, but the query is still not run by a deployment."),
    Rule("unsupported", "PQ102", Severity.ERROR,
         "The query uses SQL outside piql's supported subset.",
         "piql proves bounds for a subset of SQL (select-project-join with equality and "
         "range predicates, grouping, ordering, limits). A construct outside it (LIKE, OR "
         "across relations, window functions, ...) leaves the query unbounded; the other "
         "queries are still planned.",
         "-- name: searchPosts\nSELECT postId FROM posts WHERE body LIKE <pattern> LIMIT 20;",
         "Rewrite with supported constructs; the hint says how (for LIKE: a word table "
         "keyed on the word, compared with =)."),
    Rule("view-rejected", "PQ103", Severity.ERROR,
         "No view answers the query within the scale-independence invariants.",
         "piql tried to answer the query from a materialized view, but every candidate view "
         "breaks one of the paper's invariants: its size is not a bounded multiple of a base "
         "table, or one write would change unboundedly many of its rows.",
         "-- name: commonFollowers\nSELECT a.follower FROM follows a, follows b\n"
         "WHERE a.followee = <u1> AND b.followee = <u2> AND a.follower = b.follower;",
         "Bound the relation the message names with a CARDINALITY constraint, or add "
         "ORDER BY ... LIMIT n so that a view keeps only the first n rows per key."),
    Rule("hotspot", "PQ201", Severity.WARNING,
         "Writes would concentrate on one partition or row.",
         "An index or view keyed first on a TEMPORAL column sends every insert to the "
         "partition holding the newest values; a single-row aggregate view is updated by "
         "every write. As an error it explains why a view was refused; as a warning it "
         "flags a bounded plan that will contend under write load.",
         "-- schema: createdAt BIGINT TEMPORAL\n"
         "-- name: latestPosts\nSELECT postId FROM posts ORDER BY createdAt DESC LIMIT 20;",
         "Add -- periodic: <interval> so piql answers from a hash-partitioned staging view "
         "refreshed periodically (SI-3), or key the query on a non-temporal column first."),
    Rule("index", "PQ301", Severity.INFO,
         "The query needs a secondary index.",
         "The query is bounded through an index piql creates (SI-1). Every write to the "
         "table also updates the index, one operation.",
         "-- name: userByEmail\nSELECT userId FROM users WHERE email = <email>;",
         "Nothing to fix; declare the index in the schema (CREATE INDEX) to choose its name."),
    Rule("view", "PQ302", Severity.INFO,
         "The query is answered from a view piql maintains or refreshes.",
         "The query is answered from a materialized view (SI-2: maintained on every write; "
         "SI-3: refreshed periodically); the diagnostic also says why no cheaper plan was "
         "bounded, and the view's storage bound.",
         "-- name: followerCount\nSELECT COUNT(*) FROM follows WHERE followee = <userId>;",
         "Nothing to fix; the write bounds of the report say what upkeep the view costs."),
    Rule("periodic", "PQ303", Severity.INFO,
         "The query is answered from a periodically refreshed view (SI-3).",
         "Rows go to a hash-partitioned staging view, and a periodic view is recomputed from "
         "it on the query's -- periodic: interval, so answers may be that old.",
         "-- name: latestPosts\n-- periodic: 1 min\n"
         "SELECT postId FROM posts ORDER BY createdAt DESC LIMIT 20;",
         "Nothing to fix; run `piql refresh --every INTERVAL` beside the application."),
    Rule("renamed", "PQ304", Severity.INFO,
         "A generated view or index name was taken, so piql chose another.",
         "The name piql would give a view or index is already used by the schema, by piql or "
         "by an earlier query, so it got a suffix.",
         "-- name: twoTags\n-- (the schema already has a table called twoTags_view)",
         "Name the view yourself with -- view: <name>, or rename what holds the name."),
    Rule("adaptive", "PQ305", Severity.INFO,
         "The query has both a bounded pull plan and a bounded push plan.",
         "A feed or neighbourhood aggregate over a CARDINALITY-bounded adjacency can be "
         "computed when it is read (pull, the plan piql serves) or maintained per consumer on "
         "every producer write (push, with at most a capped number of push edges per "
         "producer). The diagnostic gives both bounds: pull ops per read, push ops per write "
         "and per read. Which is cheaper depends on the read and write rates (docs/adaptive.md).",
         "-- schema: follows WITH CARDINALITY (followee, 500)\n"
         "-- name: homeTimeline\nSELECT p.postId FROM follows f, posts p\n"
         "WHERE f.follower = <userId> AND p.author = f.followee\n"
         "ORDER BY p.createdAt DESC LIMIT 20;",
         "Nothing to fix; piql serves the pull plan until `db.adapt()` (a feed, per edge) or "
         "`db.adapt_overlay()` (an aggregate, per overlay node) decides from measured rates, "
         "and `piql explain` shows both."),
    Rule("async", "PQ306", Severity.INFO,
         "A query asked for asynchronous maintenance of its views.",
         "With -- maintenance: async, a write to a table the query's view reads does its "
         "checks, the row and one bounded enqueue of the changed row; the view's delta rules "
         "run when the update queue is drained, so answers may lag the writes. As info it says "
         "the view is asynchronous; as a warning, why it stays synchronous: a rule reading another "
         "view or stopping after a LIMIT, a staging or periodic view, or a view a synchronous "
         "query needs (a join view runs its rules as of the queue, docs/async.md).",
         "-- name: followerCount\n-- maintenance: async\n"
         "SELECT COUNT(*) FROM follows WHERE followee = <userId>;",
         "Nothing to fix; call db.drain() before reads that must see every write."),
    Rule("skipped", "PQ401", Severity.INFO,
         "A schema statement that does not affect bounds was skipped.",
         "SET, GRANT, CREATE FUNCTION and the like change nothing piql reasons about, so "
         "they are read past (see docs/language.md, statements piql skips).",
         "SET search_path = public;",
         "Nothing to fix; --ignore skipped hides these notes."),
    Rule("schema", "PQ402", Severity.INFO,
         "What piql makes of a schema declaration.",
         "An index piql does not read (on an expression, partial, not a B-tree), or a table "
         "keyed by a unique constraint instead of a primary key.",
         "CREATE INDEX posts_lower_body ON posts (lower(body));",
         "Nothing to fix unless the declaration was meant to bound a query."),
)

_BY_CODE = {r.code: r for r in RULES}
_BY_ID = {r.id.upper(): r for r in RULES}


def rule(code: str) -> Rule:
    """The rule of a word code or short id (case-insensitive); KeyError if there is none."""
    found = _BY_CODE.get(code.strip().lower()) or _BY_ID.get(code.strip().upper())
    if found is None:
        raise KeyError(code)
    return found


def resolve(code: str) -> tuple[Rule, ...]:
    """The rules a code names: a word, an id, or an id prefix (``PQ1`` is PQ100-PQ199).

    ValueError (with a suggestion) when it names none."""
    text = code.strip()
    try:
        return (rule(text),)
    except KeyError:
        pass
    upper = text.upper()
    if len(upper) >= 2 and upper.startswith("PQ"):
        matched = tuple(r for r in RULES if r.id.startswith(upper))
        if matched:
            return matched
    raise ValueError(f"unknown rule code '{text}'{did_you_mean(text)} (see `piql rules`)")


def did_you_mean(code: str) -> str:
    """``; did you mean 'x'?`` for a code close to a known one, else ``''``."""
    words = [r.code for r in RULES] + [r.id for r in RULES]
    close = difflib.get_close_matches(code.lower(), [w.lower() for w in words], n=1, cutoff=0.6)
    if not close:
        return ""
    original = next(w for w in words if w.lower() == close[0])
    return f"; did you mean '{original}'?"


def codes_of(text_or_items: str | list[str] | tuple[str, ...], where: str) -> frozenset[str]:
    """The word codes a comma-separated list (or a list) of codes names.

    ``where`` says where the list was written, for the ValueError of an unknown code."""
    items = text_or_items.split(",") if isinstance(text_or_items, str) else list(text_or_items)
    found: set[str] = set()
    for item in items:
        if not isinstance(item, str):
            raise ValueError(f"{where}: expected rule codes, got {item!r}")
        if item.strip():
            try:
                found.update(r.code for r in resolve(item))
            except ValueError as err:
                raise ValueError(f"{where}: {err}") from None
    return frozenset(found)
