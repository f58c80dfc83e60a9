"""``piql bench twotags``: the twoTags micro-benchmark of paper §8.1 (Figures 3 and 4).

Documents get 1 to 10 tags (4 on average) drawn from a Zipf distribution
(n=2000, s=0.1). At every scale the same data goes into three places:

- the piql store, deployed from twoTags plus a one-tag lookup: it holds the
  IMV ``twoTags_view`` (maintained on every write) and the index Tags(tag, docId);
- a baseline store with the same tables and only the index a DBA would add for
  twoTags, Tags(tag, docId), and no view: the original query runs there on
  demand, and its writes do no view maintenance;
- an in-memory DuckDB database, where the original query runs on demand too.

With ``--postgres`` the piql store and the baseline store are deployed on a
PostgreSQL server as well (``piql.bench.stores``), and every query and write runs
there too, side by side with SQLite's.

Queries draw both tags from the same Zipf distribution; every answer through
the view is compared with the on-demand ones, and with a hand-written prepared
``SELECT`` on the view table (the physical floor of a query through the view).
Latency is reported overall and per result size (rows returned): at small scales
most pairs of tags share no document, at large ones most do, and scale
independence is read at equal work. Writes insert one tag on a random document
(never more than 10 per document), the same sequence into every store: with
maintenance (the piql store), without (the baseline store, through piql), and as
a plain ``INSERT`` of the same row into the baseline's identical Tags table.
"""
from __future__ import annotations

import bisect
import gc
import itertools
import random
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import piql
from piql import sqlgen
from piql.bench.common import machine, percentile, progress, pyplot, save_figure, write_json
from piql.bench.stores import Driver, PostgresPlace

SCHEMA = """
CREATE TABLE Documents (docId BIGINT, timestamp BIGINT NOT NULL, text VARCHAR,
                        PRIMARY KEY (docId));
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, timestamp BIGINT,
                   PRIMARY KEY (docId, tag),
                   FOREIGN KEY (docId) REFERENCES Documents (docId))
  WITH CARDINALITY (tag, 10);
"""
# A one-tag lookup: what makes a DBA (and piql) index Tags(tag, docId).
DOCS_WITH_TAG = """
-- name: docsWithTag
SELECT docId FROM Tags WHERE tag = <tag> ORDER BY docId LIMIT 10
"""
TWO_TAGS = """
-- name: twoTags
SELECT t1.docId
FROM Tags t1, Tags t2, Documents d
WHERE t1.docId = t2.docId AND t1.docId = d.docId
  AND t1.tag = <tag1> AND t2.tag = <tag2>
ORDER BY d.timestamp LIMIT 5
"""
PIQL_QUERIES = TWO_TAGS + DOCS_WITH_TAG
BASELINE_QUERIES = DOCS_WITH_TAG

ZIPF_TAGS = 2000
ZIPF_S = 0.1
MAX_TAGS = 10
MEAN_TAGS = 4
DEFAULT_SCALES = (1_000, 10_000, 100_000)
STORES = ("memory", "file")
SYSTEMS = ("piql IMV", "on-demand SQLite", "on-demand DuckDB")
WRITES = ("with maintenance", "without maintenance")
STORE_KINDS = ("sqlite", "postgres")
QUERY_TARGET = 1.5  # piql's p50 through the view over the hand-written SELECT's, at most
WRITE_TARGET = 3.0  # a maintained tag insert's p50 over a plain INSERT's, at most
# Result sizes (rows returned) whose latencies are reported apart: (label, low, high).
ROW_BUCKETS = (("0", 0, 0), ("1", 1, 1), ("2-4", 2, 4), ("5+", 5, None))


@dataclass(frozen=True)
class Names:
    """What the JSON calls each system and write on one store (SQLite's names are the
    ones the benchmark always had)."""

    store: str
    imv: str
    ondemand: str
    floor: str  # the hand-written prepared SELECT on the view table
    maintained: str
    unmaintained: str
    plain: str  # a plain INSERT of the same row, no piql


NAMES = {
    "sqlite": Names("sqlite", SYSTEMS[0], SYSTEMS[1], "view SELECT, SQLite", WRITES[0],
                    WRITES[1], "plain INSERT, SQLite"),
    "postgres": Names("postgres", "piql IMV, PostgreSQL", "on-demand PostgreSQL",
                      "view SELECT, PostgreSQL", "with maintenance, PostgreSQL",
                      "without maintenance, PostgreSQL", "plain INSERT, PostgreSQL"),
}
# Tuples the on-demand SQLite plan reads (see ScaleResult.sqlite_plan): every index
# entry of tag1, one primary-key probe of t2 per entry, one Documents row per match.
ONDEMAND_COUNTS = """
SELECT (SELECT COUNT(*) FROM Tags WHERE tag = :tag1),
       (SELECT COUNT(*) FROM Tags t1, Tags t2
         WHERE t1.docId = t2.docId AND t1.tag = :tag1 AND t2.tag = :tag2)
"""


@dataclass(frozen=True)
class Settings:
    """What one run measures."""

    scales: tuple[int, ...] = DEFAULT_SCALES  # documents
    queries: int = 1000
    writes: int = 1000
    warmup: int = 50
    seed: int = 7
    store: str = "memory"  # SQLite stores in memory, or in files (WAL, as deployed)
    postgres: str | None = None  # also on PostgreSQL: a server's URI, or "embedded"


@dataclass
class Dataset:
    """Rows to load, and each document's tags (to keep generated writes legal)."""

    documents: list[tuple[int, int, str]]
    tags: list[tuple[int, str, int]]
    tags_of: list[set[str]]


@dataclass(frozen=True)
class Latency:
    """p50 and p99 in milliseconds, with the samples they came from."""

    p50_ms: float
    p99_ms: float
    samples_ms: list[float] = field(repr=False)

    @classmethod
    def of(cls, seconds: Sequence[float]) -> "Latency":
        millis = [s * 1000 for s in seconds]
        return cls(percentile(millis, 50), percentile(millis, 99), millis)


@dataclass(frozen=True)
class Ops:
    """Measured operations per request beside the static bound, and which operation counts
    were seen for each request shape (rows a query returned; tags a document had before
    the insert): the shape, not the data size, decides the cost."""

    mean: float
    p99: float
    max: int
    bound: int
    by_shape: dict[int, list[int]]

    @classmethod
    def of(cls, samples: Sequence[tuple[int, int]], bound: int) -> "Ops":
        """``samples`` are (shape, ops) pairs."""
        measured = [ops for _, ops in samples]
        shapes: dict[int, set[int]] = {}
        for shape, ops in samples:
            shapes.setdefault(shape, set()).add(ops)
        return cls(sum(measured) / len(measured), percentile(measured, 99), max(measured), bound,
                   {shape: sorted(shapes[shape]) for shape in sorted(shapes)})


@dataclass(frozen=True)
class Queries:
    """twoTags at one scale."""

    latency: dict[str, Latency]  # by system (SYSTEMS, then each store's Names)
    ops: Ops  # through the IMV, shape = rows returned
    ondemand_tuples: Ops  # read by the on-demand SQLite plan (no bound: -1)
    mismatches: int  # answers that differ between the systems
    empty_answers: int
    # by ROW_BUCKETS label: {"count": queries, "latency": {system: {"p50_ms", "p99_ms"}}}
    by_rows: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class Writes:
    """Tag inserts at one scale, by WRITES."""

    latency: dict[str, Latency]  # by write (WRITES, then each store's Names)
    ops: dict[str, Ops]  # shape = tags the document had before (piql's writes)
    # the inserted tags updated (a new timestamp) then deleted again, maintained through
    # piql and as plain statements (``changes``), by "<update|delete> <write name>"
    changes: dict[str, Latency] = field(default_factory=dict)


@dataclass(frozen=True)
class ScaleResult:
    """Everything measured at one scale."""

    documents: int
    tag_rows: int
    view_rows: int
    load_seconds: dict[str, float]
    sqlite_plan: list[str]  # SQLite's EXPLAIN QUERY PLAN of the on-demand query
    queries: Queries
    writes: Writes
    postgres_plan: list[str] = field(default_factory=list)  # PostgreSQL's EXPLAIN of it


@dataclass(frozen=True)
class Target:
    """One of the issue's targets, judged on what was measured."""

    name: str
    measured: str
    goal: str
    met: bool


class Zipf:
    """Tags ``tag0001``..``tag2000`` drawn with probability proportional to 1/rank^s."""

    def __init__(self, n: int = ZIPF_TAGS, s: float = ZIPF_S) -> None:
        self.tags = [f"tag{rank:04d}" for rank in range(1, n + 1)]
        self.cumulative = list(itertools.accumulate(1 / rank ** s for rank in range(1, n + 1)))

    def draw(self, rng: random.Random) -> str:
        point = rng.random() * self.cumulative[-1]
        return self.tags[min(bisect.bisect_left(self.cumulative, point), len(self.tags) - 1)]

    def pair(self, rng: random.Random) -> tuple[str, str]:
        """Two different tags, in the order drawn."""
        first = second = self.draw(rng)
        while second == first:
            second = self.draw(rng)
        return first, second

    def distinct(self, rng: random.Random, count: int) -> set[str]:
        chosen: set[str] = set()
        while len(chosen) < count:
            chosen.add(self.draw(rng))
        return chosen


def tags_per_document(rng: random.Random) -> int:
    """1 + Binomial(9, 1/3): between 1 and MAX_TAGS, MEAN_TAGS on average."""
    trials = MAX_TAGS - 1
    return 1 + sum(rng.random() < (MEAN_TAGS - 1) / trials for _ in range(trials))


def generate(documents: int, zipf: Zipf, rng: random.Random) -> Dataset:
    """Documents with unique random timestamps, and their Zipf-distributed tags."""
    label = f"twotags {documents:,} docs: generate"
    stamps = rng.sample(range(documents * 10), documents)
    data = Dataset([], [], [])
    step = max(1, documents // 100)
    for doc in range(documents):
        if doc % step == 0:
            progress(label, doc, documents)
        tags = zipf.distinct(rng, tags_per_document(rng))
        data.documents.append((doc, stamps[doc], ""))
        data.tags.extend((doc, tag, stamps[doc]) for tag in sorted(tags))
        data.tags_of.append(tags)
    progress(label, documents, documents)
    return data


def run(settings: Settings, out: Path) -> dict[str, Any]:
    """Measure every scale; write ``twotags.json``, ``twotags-queries.png`` (Figure 3) and
    ``twotags-writes.png`` (Figure 4) under ``out``; return the JSON document."""
    if settings.store not in STORES:
        raise ValueError(f"store must be one of {STORES}, not {settings.store!r}")
    work = Path(tempfile.mkdtemp(prefix="piql-twotags-"))
    place = PostgresPlace(settings.postgres) if settings.postgres else None
    try:
        piql_app = _app(work, "piql", PIQL_QUERIES)
        baseline_app = _app(work, "baseline", BASELINE_QUERIES)
        zipf = Zipf()
        results = [_measure_scale(piql_app, baseline_app, work, place, zipf, documents, settings)
                   for documents in settings.scales]
        server = place.server_version() if place else None
    finally:
        if place is not None:
            place.close()
        shutil.rmtree(work, ignore_errors=True)
    document = _document(settings, piql_app, baseline_app, results, server)
    write_json(out / "twotags.json", document)
    plot_queries(document, out / "twotags-queries.png")
    plot_writes(document, out / "twotags-writes.png")
    return document


def _app(work: Path, name: str, queries: str) -> piql.App:
    (work / f"{name}-schema.sql").write_text(SCHEMA)
    (work / f"{name}-queries.sql").write_text(queries)
    return piql.load(work / f"{name}-schema.sql", work / f"{name}-queries.sql")


@dataclass
class Stores:
    """One store kind's pair: the piql store (with the view) and the baseline store (index
    only), and a driver on each for hand-written SQL."""

    names: Names
    db: Any
    baseline: Any
    db_driver: Driver
    baseline_driver: Driver

    def close(self) -> None:
        self.db_driver.close()
        self.baseline_driver.close()
        self.db.close()
        self.baseline.close()


def _measure_scale(piql_app: piql.App, baseline_app: piql.App, work: Path,
                   place: PostgresPlace | None, zipf: Zipf, documents: int,
                   settings: Settings) -> ScaleResult:
    rng = random.Random(settings.seed * 1_000_003 + documents)
    label = f"twotags {documents:,} docs"
    data = generate(documents, zipf, rng)
    tag_rows = len(data.tags)
    loads: dict[str, float] = {}
    where = {"sqlite": lambda name, number: ":memory:" if settings.store == "memory"
             else str(work / f"{number}-{documents}.db")}
    if place is not None:
        where["postgres"] = lambda name, number: place.new_store(f"{name}{documents}")
    steps = 2 * len(where) + 1
    pairs: list[Stores] = []
    duck = None
    try:
        for kind, location in where.items():
            suffix = "" if kind == "sqlite" else f", {kind}"
            progress(f"{label}: load", 2 * len(pairs), steps)
            db = _deploy(piql_app, location("piql", 0), data, loads,
                         f"piql store (with view){suffix}")
            progress(f"{label}: load", 2 * len(pairs) + 1, steps)
            baseline = _deploy(baseline_app, location("baseline", 1), data, loads,
                               f"baseline store (index only){suffix}")
            pairs.append(Stores(NAMES[kind], db, baseline, Driver(db.store),
                                Driver(baseline.store)))
        progress(f"{label}: load", steps - 1, steps)
        duck = _duckdb(data, loads)
        progress(f"{label}: load", steps, steps)
        data.documents.clear()  # loaded everywhere; only tags_of is needed from here on
        data.tags.clear()
        _quiet_collector()
        sqlite = pairs[0]
        view_rows = sqlite.db.store.sql("SELECT COUNT(*) FROM twoTags_view")[0][0]
        queries = _measure_queries(pairs, duck, zipf, rng, settings, label)
        plans = {kind: _store_plan(pair) for kind, pair in zip(where, pairs)}
        writes = _measure_writes(pairs, data, zipf, rng, settings, label)
    finally:
        gc.unfreeze()
        for pair in pairs:
            pair.close()
        if duck is not None:
            duck.close()
    return ScaleResult(documents, tag_rows, view_rows, loads, plans["sqlite"], queries, writes,
                       plans.get("postgres", []))


def _deploy(app: piql.App, location: str, data: Dataset, loads: dict[str, float], name: str):
    """Deploy ``app`` (strict: any operation count over its bound raises) and bulk-load."""
    db = app.deploy(location, strict=True)
    started = time.perf_counter()
    db.load("Documents", data.documents)
    db.load("Tags", data.tags)
    loads[name] = time.perf_counter() - started
    return db


def _duckdb(data: Dataset, loads: dict[str, float]):
    """The same rows in an in-memory DuckDB database (through Arrow, no per-row inserts)."""
    import duckdb
    import pyarrow as pa

    started = time.perf_counter()
    duck = duckdb.connect(":memory:")
    for name, rows, columns in (("Documents", data.documents, ("docId", "timestamp", "text")),
                                ("Tags", data.tags, ("docId", "tag", "timestamp"))):
        arrow = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
        duck.register("arrow_rows", arrow)
        duck.execute(f"CREATE TABLE {name} AS SELECT * FROM arrow_rows")
        duck.unregister("arrow_rows")
    loads["duckdb"] = time.perf_counter() - started
    return duck


def _quiet_collector() -> None:
    """Move everything alive now out of the collector's reach, so that its pauses (which
    grow with the objects the benchmark itself holds) do not land in the measured p99."""
    gc.collect()
    gc.freeze()


def _store_plan(pair: Stores) -> list[str]:
    """How the store runs the original twoTags on the baseline store: SQLite's EXPLAIN
    QUERY PLAN, PostgreSQL's EXPLAIN."""
    store = pair.baseline.store
    sql = sqlgen.block_sql(pair.db.query_plan("twoTags").query.block, store.dialect)
    explain = "EXPLAIN QUERY PLAN" if store.dialect == "sqlite" else "EXPLAIN"
    return [row[-1] for row in store.sql(f"{explain} {sql}", {"tag1": "tag0001",
                                                              "tag2": "tag0002"})]


def view_select(db, driver: Driver) -> str:
    """The hand-written SELECT of twoTags on the view table (the physical floor): the view's
    key range, in the view's order, stop after 5, placeholders in the driver's dialect
    (a symmetric-pair view's caller passes the two tags in order, as ``_systems`` does)."""
    view = db.query_plan("twoTags").physical.accesses[0]
    quote = lambda name: sqlgen.identifier(name, driver.dialect)  # noqa: E731
    keys = " AND ".join(f"{quote(c)} = {driver.param(p)}"
                        for c, p in zip(view.key_columns, ("tag1", "tag2")))
    order = ", ".join(quote(c) for c in view.order_columns)
    return (f"SELECT {quote('docId')} FROM {quote(view.table)} WHERE {keys} "
            f"ORDER BY {order} LIMIT {view.stop_after}")


def _systems(pair: Stores) -> dict[str, Callable[[dict[str, str]], list]]:
    """One store's twoTags systems, by name: piql, on demand and the view SELECT."""
    block = pair.db.query_plan("twoTags").query.block
    ondemand = sqlgen.block_sql(block, pair.baseline_driver.dialect)
    floor = view_select(pair.db, pair.db_driver)
    db, on_baseline, on_view = pair.db, pair.baseline_driver, pair.db_driver
    # A view of one orientation per pair is read with its tags in order, by hand too.
    symmetric = db.query_plan("twoTags").pair
    order = symmetric.in_order if symmetric is not None else (lambda p: p)
    two_tags = db.prepared("twoTags")  # as a server keeps it: looked up once
    return {
        pair.names.imv: lambda p: [r[0] for r in two_tags(**p).rows],
        pair.names.ondemand: lambda p: [r[0] for r in on_baseline.rows(ondemand, p)],
        pair.names.floor: lambda p: [r[0] for r in on_view.rows(floor, order(p))],
    }


def _measure_queries(pairs: Sequence[Stores], duck, zipf: Zipf, rng: random.Random,
                     settings: Settings, label: str) -> Queries:
    """twoTags through the IMV, on demand on each baseline store and on DuckDB, and the
    hand-written SELECT on each view table: the same queries on every store, one store at
    a time, DuckDB last (a store's systems take turns on each query; another store's work
    in between, or DuckDB's threads, would land on the first system timed after it).

    Each query's first system reads the pair's view entries from memory the CPU's caches
    do not hold yet, the next ones find them there (at 100,000 documents 3-5 µs more for
    a 3 µs lookup): so the systems go first in turn, query by query."""
    db, baseline = pairs[0].db, pairs[0].baseline
    total = settings.warmup + settings.queries
    queries = [dict(zip(("tag1", "tag2"), zipf.pair(rng))) for _ in range(total)]
    seconds: dict[str, list[float]] = {}
    answers: list[set[tuple]] = [set() for _ in range(total)]
    block = db.query_plan("twoTags").query.block
    duckdb_sql = sqlgen.block_sql(block, "duckdb")
    passes = [(pair.names.store, _systems(pair)) for pair in pairs] + [("duckdb", {
        SYSTEMS[2]: lambda p: [r[0] for r in duck.execute(duckdb_sql, p).fetchall()]})]
    for store, systems in passes:
        seconds |= {name: [] for name in systems}
        where = f"{label}: queries" + ("" if store == "sqlite" else f" on {store}")
        turns = list(systems.items())
        for number, params in enumerate(queries):
            if number % 10 == 0:
                progress(where, number, total)
            first = number % len(turns)
            for name, ask in turns[first:] + turns[:first]:
                started = time.perf_counter()
                found = ask(params)
                elapsed = time.perf_counter() - started
                answers[number].add(tuple(found))
                if number >= settings.warmup:
                    seconds[name].append(elapsed)
        progress(where, total, total)
    sizes: list[int] = []  # rows returned by each measured query
    ops: list[tuple[int, int]] = []
    tuples: list[tuple[int, int]] = []
    bound = mismatches = empty = 0
    for number, params in enumerate(queries[settings.warmup:], start=settings.warmup):
        result = db.query("twoTags", **params)  # again, outside the clock, for its ops
        bound = max(bound, result.bound)
        sizes.append(len(result.rows))
        ops.append((len(result.rows), result.ops))
        ((entries, matches),) = baseline.store.sql(ONDEMAND_COUNTS, params)
        tuples.append((len(result.rows), 2 * entries + matches))
        mismatches += len(answers[number]) > 1
        empty += not result.rows
    return Queries({name: Latency.of(s) for name, s in seconds.items()}, Ops.of(ops, bound),
                   Ops.of(tuples, -1), mismatches, empty, by_rows(sizes, seconds))


def bucket(rows: int) -> str:
    """The ROW_BUCKETS label of a result of ``rows`` rows."""
    return next(name for name, low, high in ROW_BUCKETS
                if rows >= low and (high is None or rows <= high))


def by_rows(sizes: Sequence[int], seconds: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """p50 and p99 of every system per result size (``sizes[i]``: rows the i-th measured
    query returned), for the buckets that occurred."""
    found: dict[str, dict[str, Any]] = {}
    for name, _, _ in ROW_BUCKETS:
        picked = [i for i, rows in enumerate(sizes) if bucket(rows) == name]
        if not picked:
            continue
        latency = {}
        for system, samples in seconds.items():
            measured = Latency.of([samples[i] for i in picked])
            latency[system] = {"p50_ms": measured.p50_ms, "p99_ms": measured.p99_ms}
        found[name] = {"count": len(picked), "latency": latency}
    return found


def _measure_writes(pairs: Sequence[Stores], data: Dataset, zipf: Zipf, rng: random.Random,
                    settings: Settings, label: str) -> Writes:
    """Insert the same new tags into every store, one store at a time: into the piql store
    (view maintained), into the baseline through piql (no view), and as a plain INSERT
    into the baseline's Tags (then deleted again, outside the clock, for piql's insert of
    the same row)."""
    total = settings.warmup + settings.writes
    stamp = len(data.tags_of) * 10
    writes = [(doc, tag, before, stamp + number + 1)
              for number, (doc, tag, before) in enumerate(_new_tags(data, zipf, rng, total))]
    seconds: dict[str, list[float]] = {}
    changed: dict[str, list[float]] = {}
    ops: dict[str, list[tuple[int, int]]] = {}
    bounds: dict[str, int] = {}
    for pair in pairs:
        names = pair.names
        seconds |= {name: [] for name in (names.maintained, names.unmaintained, names.plain)}
        piql_writes = ((names.maintained, pair.db), (names.unmaintained, pair.baseline))
        for name, _ in piql_writes:
            ops[name], bounds[name] = [], 0
        insert, delete = _plain_statements(pair.baseline_driver)
        where = f"{label}: tag inserts" + ("" if names.store == "sqlite" else
                                           f" on {names.store}")
        for number, (doc, tag, before, when) in enumerate(writes):
            if number % 10 == 0:
                progress(where, number, total)
            measured = number >= settings.warmup
            started = time.perf_counter()
            pair.baseline_driver.execute(insert, (doc, tag, when))
            elapsed = time.perf_counter() - started
            pair.baseline_driver.execute(delete, (doc, tag))
            if measured:
                seconds[names.plain].append(elapsed)
            for name, store in piql_writes:
                started = time.perf_counter()
                report = store.insert("Tags", docId=doc, tag=tag, timestamp=when)
                elapsed = time.perf_counter() - started
                if measured:
                    seconds[name].append(elapsed)
                    ops[name].append((before, report.ops))
                    bounds[name] = max(bounds[name], report.bound)
        progress(where, total, total)
        changed |= _measure_changes(pair, writes[settings.warmup:], label)
    return Writes({name: Latency.of(s) for name, s in seconds.items()},
                  {name: Ops.of(ops[name], bounds[name]) for name in ops},
                  {name: Latency.of(s) for name, s in changed.items()})


def changes(names: Names) -> list[tuple[str, str, str]]:
    """(write, maintained, plain): the update and delete latencies' names on one store."""
    return [(kind, f"{kind} {names.maintained}",
             f"{kind} {names.plain}".replace("INSERT", kind.upper()))
            for kind in ("update", "delete")]


def _measure_changes(pair: Stores, inserted: Sequence[tuple[int, str, int, int]],
                     label: str) -> dict[str, list[float]]:
    """Update then delete the tags just inserted (their measured part), alternating piql's
    maintained write on the piql store with a plain prepared statement on the baseline's
    Tags (the same row there, its own driver, autocommit): one run, side by side."""
    (_, update, plain_update), (_, delete, plain_delete) = changes(pair.names)
    seconds: dict[str, list[float]] = {name: [] for name in (update, plain_update, delete,
                                                             plain_delete)}
    quote = lambda name: sqlgen.identifier(name, pair.baseline_driver.dialect)  # noqa: E731
    mark = pair.baseline_driver.param()
    key = f"{quote('docId')} = {mark} AND {quote('tag')} = {mark}"
    statements = {plain_update: f"UPDATE {quote('Tags')} SET {quote('timestamp')} = {mark} "
                                f"WHERE {key}",
                  plain_delete: f"DELETE FROM {quote('Tags')} WHERE {key}"}
    where = f"{label}: tag updates and deletes" + (
        "" if pair.names.store == "sqlite" else f" on {pair.names.store}")

    def timed(name: str, work: Callable[[], Any]) -> None:
        started = time.perf_counter()
        work()
        seconds[name].append(time.perf_counter() - started)

    for number, (doc, tag, _, when) in enumerate(inserted):
        if number % 10 == 0:
            progress(where, number, 2 * len(inserted))
        timed(update, lambda: pair.db.update("Tags", docId=doc, tag=tag, timestamp=when + 1))
        timed(plain_update, lambda: pair.baseline_driver.execute(
            statements[plain_update], (when + 1, doc, tag)))
    for number, (doc, tag, _, _) in enumerate(inserted):
        if number % 10 == 0:
            progress(where, len(inserted) + number, 2 * len(inserted))
        timed(delete, lambda: pair.db.delete("Tags", docId=doc, tag=tag))
        timed(plain_delete, lambda: pair.baseline_driver.execute(
            statements[plain_delete], (doc, tag)))
    progress(where, 2 * len(inserted), 2 * len(inserted))
    return seconds


def _plain_statements(driver: Driver) -> tuple[str, str]:
    """A plain INSERT of one Tags row, and the DELETE that takes it out again."""
    quote = lambda name: sqlgen.identifier(name, driver.dialect)  # noqa: E731
    tags = quote("Tags")
    columns = ", ".join(quote(c) for c in ("docId", "tag", "timestamp"))
    insert = f"INSERT INTO {tags} ({columns}) VALUES ({', '.join([driver.param()] * 3)})"
    delete = (f"DELETE FROM {tags} WHERE {quote('docId')} = {driver.param()} "
              f"AND {quote('tag')} = {driver.param()}")
    return insert, delete


def _new_tags(data: Dataset, zipf: Zipf, rng: random.Random,
              count: int) -> Iterator[tuple[int, str, int]]:
    """``count`` legal inserts (docId, tag, tags the document had before): a new tag on a
    random document that has fewer than MAX_TAGS."""
    for _ in range(count):
        while True:
            doc = rng.randrange(len(data.tags_of))
            if len(data.tags_of[doc]) < MAX_TAGS:
                break
        tag = zipf.draw(rng)
        while tag in data.tags_of[doc]:
            tag = zipf.draw(rng)
        before = len(data.tags_of[doc])
        data.tags_of[doc].add(tag)
        yield doc, tag, before


# -- the document ---------------------------------------------------------------
def targets(results: Sequence[ScaleResult]) -> list[Target]:
    """The issue's targets, judged on the smallest and largest scale measured."""
    small, large = min(results, key=lambda r: r.documents), max(results, key=lambda r: r.documents)

    def ratio(get: Callable[[ScaleResult], float]) -> float:
        return get(large) / get(small) if get(small) else float("inf")

    found = []
    imv = ratio(lambda r: r.queries.latency[SYSTEMS[0]].p99_ms)
    found.append(Target("twoTags p99 through the IMV, largest / smallest scale",
                        f"{imv:.2f}x", "<= 1.5x", imv <= 1.5))
    for system in SYSTEMS[1:]:
        grown = ratio(lambda r, s=system: r.queries.latency[s].p99_ms)
        found.append(Target(f"twoTags p99 {system}, largest / smallest scale",
                            f"{grown:.1f}x", ">= 10x", grown >= 10))
    found.append(_same_ops("ops of one twoTags query through the IMV, by rows returned",
                           [r.queries.ops for r in results]))
    found.append(_same_ops("ops of one tag insert with maintenance, by the document's tags",
                           [r.writes.ops[WRITES[0]] for r in results]))
    writes = ratio(lambda r: r.writes.latency[WRITES[0]].p99_ms)
    found.append(Target("tag insert p99 with maintenance, largest / smallest scale",
                        f"{writes:.2f}x", "<= 1.5x", writes <= 1.5))
    for names in NAMES.values():
        if names.imv in large.queries.latency:
            found += _overhead_targets(large, names)
    return found


def _overhead_targets(large: ScaleResult, names: Names) -> list[Target]:
    """piql's own overhead on one store at the largest scale, side by side in one run: a
    query through the view against the hand-written SELECT on the view table, a maintained
    tag insert against a plain INSERT of the same row."""
    where = f"{large.documents:,} documents, {names.store}"
    query = large.queries.latency[names.imv].p50_ms / large.queries.latency[names.floor].p50_ms
    write = large.writes.latency[names.maintained].p50_ms / \
        large.writes.latency[names.plain].p50_ms
    found = [Target(f"twoTags p50 through piql / hand-written SELECT on the view ({where})",
                    f"{query:.2f}x", f"<= {QUERY_TARGET}x", query <= QUERY_TARGET),
             Target(f"tag insert p50 with maintenance / plain INSERT ({where})",
                    f"{write:.2f}x", f"<= {WRITE_TARGET}x", write <= WRITE_TARGET)]
    latency = large.writes.changes
    for kind, maintained, plain in changes(names):
        if maintained in latency:
            ratio = latency[maintained].p50_ms / latency[plain].p50_ms
            found.append(Target(f"tag {kind} p50 with maintenance / plain {kind.upper()} "
                                f"({where})", f"{ratio:.2f}x", f"<= {WRITE_TARGET}x (as inserts)",
                                ratio <= WRITE_TARGET))
    return found


def _same_ops(name: str, per_scale: Sequence[Ops]) -> Target:
    """Met when every request shape seen at several scales cost the same there, and no
    request went over the bound (which must be the same at every scale too)."""
    seen: dict[int, set[tuple[int, ...]]] = {}
    for ops in per_scale:
        for shape, counts in ops.by_shape.items():
            seen.setdefault(shape, set()).add(tuple(counts))
    differing = sorted(shape for shape, variants in seen.items() if len(variants) > 1)
    bounds = sorted({ops.bound for ops in per_scale})
    within = all(ops.max <= ops.bound for ops in per_scale)
    merged = {shape: sorted(set().union(*variants)) for shape, variants in sorted(seen.items())}
    shown = ", ".join(f"{s}: {'/'.join(map(str, c))}" for s, c in merged.items())
    measured = f"{{{shown}}}; max {[o.max for o in per_scale]}, bound {bounds}"
    if differing:
        measured += f"; differ for {differing}"
    return Target(name, measured, "identical at every scale, <= bound",
                  not differing and within and len(bounds) == 1)


def _document(settings: Settings, piql_app: piql.App, baseline_app: piql.App,
              results: list[ScaleResult], server: str | None) -> dict[str, Any]:
    block = piql_app.plan.query("twoTags").query.block
    kinds = [k for k in STORE_KINDS if NAMES[k].imv in results[0].queries.latency]
    systems, writes = {}, {}
    for kind in kinds:
        names, title = NAMES[kind], "SQLite" if kind == "sqlite" else "PostgreSQL"
        systems[names.imv] = (f"Deployment.prepared('twoTags') called on the piql store "
                              f"({title}): a range scan of twoTags_view")
        systems[names.ondemand] = f"the original SQL on the baseline {title} store (same " \
                                  "data, no view), prepared, through its own driver"
        systems[names.floor] = (f"a hand-written prepared SELECT on twoTags_view ({title}, its "
                                "own driver): the physical floor of a query through the view")
        writes[names.maintained] = (f"Deployment.insert('Tags') on the piql store ({title}: "
                                    "base row, index and twoTags_view, one transaction)")
        writes[names.unmaintained] = (f"Deployment.insert('Tags') on the baseline store "
                                      f"({title}: base row and index)")
        writes[names.plain] = (f"a plain prepared INSERT of the same row into the baseline's "
                               f"Tags ({title}, its own driver, autocommit)")
    systems[SYSTEMS[2]] = "the original SQL on an in-memory DuckDB copy of the data"
    return {
        "benchmark": "twotags",
        "query": "twoTags (paper §2.3, §8.1)",
        "machine": machine(),
        "settings": asdict(settings),
        "data": {"zipf_tags": ZIPF_TAGS, "zipf_s": ZIPF_S, "max_tags_per_document": MAX_TAGS,
                 "mean_tags_per_document": MEAN_TAGS,
                 "tags_per_document": "1 + Binomial(9, 1/3)",
                 "query_tags": "tag1 != tag2, both drawn from the same Zipf distribution"},
        "stores": {"sqlite": f"SQLite, {settings.store}",
                   **({"postgres": f"PostgreSQL {server}"} if server else {})},
        "systems": systems,
        "indexes": {"baseline": _indexes(baseline_app), "piql": _indexes(piql_app)},
        "piql_views": [v.name for v in piql_app.plan.views],
        "ondemand_sql": {kind: sqlgen.block_sql(block, kind) for kind in (*kinds, "duckdb")},
        "row_buckets": [name for name, _, _ in ROW_BUCKETS],
        "ondemand_tuples": "tuples the on-demand SQLite plan reads: the index entries of tag1, "
                           "a primary-key probe of t2 for each, a Documents row per match",
        "writes": writes,
        "results": [_jsonable(r) for r in results],
        "targets": [asdict(t) for t in targets(results)],
    }


def _indexes(app: piql.App) -> list[str]:
    return [f"{i.table}({', '.join(i.columns)})" for i in app.plan.indexes]


def _jsonable(result: ScaleResult) -> dict[str, Any]:
    document = asdict(result)
    for group in (document["queries"]["latency"], document["writes"]["latency"],
                  document["writes"]["changes"]):
        for latency in group.values():
            latency["samples_ms"] = [round(s, 4) for s in latency["samples_ms"]]
    return document


# -- figures and the terminal table --------------------------------------------
def plot_queries(document: dict[str, Any], path: Path) -> None:
    """Figure 3: twoTags latency vs scale through the IMV and on demand; work per query."""
    results = document["results"]
    docs = [r["documents"] for r in results]
    plt = pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    _latency_lines(left, docs, [r["queries"]["latency"] for r in results],
                   list(results[0]["queries"]["latency"]))
    left.set_title("twoTags latency (p99 solid, p50 dashed)")
    for key, name, marker in (("ops", "piql IMV: measured ops (one per row returned)", "o"),
                              ("ondemand_tuples", "on-demand SQLite: tuples read", "s")):
        line, = right.plot(docs, [r["queries"][key]["max"] for r in results], marker=marker,
                           label=f"{name}, max")
        right.plot(docs, [r["queries"][key]["mean"] for r in results], linestyle="--",
                   color=line.get_color(), alpha=0.6, label=f"{name}, mean")
    right.axhline(results[0]["queries"]["ops"]["bound"], color="grey", linestyle=":",
                  label="piql static bound")
    right.set_yscale("log")
    _work_axis(right, "work per twoTags query")
    figure.suptitle("twoTags on demand vs through piql's incrementally maintained view "
                    "(paper Figure 3)")
    save_figure(plt, figure, path, dpi=120)


def plot_writes(document: dict[str, Any], path: Path) -> None:
    """Figure 4: tag insert latency vs scale with and without view maintenance; ops per write."""
    results = document["results"]
    docs = [r["documents"] for r in results]
    plt = pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    _latency_lines(left, docs, [r["writes"]["latency"] for r in results],
                   list(results[0]["writes"]["latency"]))
    left.set_title("tag insert latency (p99 solid, p50 dashed)")
    for name, marker in zip(results[0]["writes"]["ops"], "osvD"):
        line, = right.plot(docs, [r["writes"]["ops"][name]["max"] for r in results],
                           marker=marker, label=f"{name}, max")
        right.plot(docs, [r["writes"]["ops"][name]["mean"] for r in results], linestyle="--",
                   color=line.get_color(), alpha=0.6, label=f"{name}, mean")
        right.plot(docs, [r["writes"]["ops"][name]["bound"] for r in results], linestyle=":",
                   color=line.get_color(), alpha=0.6, label=f"{name}, bound")
    right.set_ylim(bottom=0)
    _work_axis(right, "measured operations per tag insert")
    figure.suptitle("tag inserts with and without maintenance of twoTags_view (paper Figure 4)")
    save_figure(plt, figure, path, dpi=120)


def _latency_lines(axis, docs: list[int], latencies: list[dict], names: Sequence[str]) -> None:
    for name, marker in zip(names, "os^vDPX*h"):
        line, = axis.plot(docs, [lat[name]["p99_ms"] for lat in latencies], marker=marker,
                          label=f"{name} p99")
        axis.plot(docs, [lat[name]["p50_ms"] for lat in latencies], linestyle="--",
                  color=line.get_color(), alpha=0.6, label=f"{name} p50")
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xlabel("documents")
    axis.set_ylabel("ms")
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)


def _work_axis(axis, title: str) -> None:
    axis.set_xscale("log")
    axis.set_xlabel("documents")
    axis.set_ylabel("operations")
    axis.set_title(title)
    axis.grid(True, which="both", alpha=0.3)
    axis.legend(fontsize=7)


def summary(document: dict[str, Any]) -> str:
    """The figures as terminal tables: work per query, query latency (overall and per
    result size), writes, then the targets."""
    from piql.report import table

    def ms(latency: dict | None) -> str:
        return "-" if latency is None else f"{latency['p50_ms']:.3f} / {latency['p99_ms']:.3f}"

    def ops(counts: dict) -> str:
        bound = f" / {counts['bound']}" if counts["bound"] >= 0 else ""
        return f"{counts['mean']:.1f} / {counts['max']}{bound}"

    buckets = document["row_buckets"]
    work_rows, latency_rows, write_rows = [], [], []
    for r in document["results"]:
        queries, writes, documents = r["queries"], r["writes"], f"{r['documents']:,}"
        work_rows.append((documents, f"{r['tag_rows']:,}", f"{r['view_rows']:,}",
                          ops(queries["ops"]), ops(queries["ondemand_tuples"]),
                          f"{queries['empty_answers']}", queries["mismatches"]))
        sized = queries["by_rows"]
        latency_rows.append((documents, "(queries)", len(queries["latency"][SYSTEMS[0]]["samples_ms"]),
                             *(sized[b]["count"] if b in sized else 0 for b in buckets)))
        for system, latency in queries["latency"].items():
            latency_rows.append(("", system, ms(latency),
                                 *(ms(sized[b]["latency"][system]) if b in sized else "-"
                                   for b in buckets)))
        for name, latency in writes["latency"].items():
            counted = writes["ops"].get(name)
            write_rows.append((documents, name, ms(latency), ops(counted) if counted else "-"))
        for name, latency in writes.get("changes", {}).items():
            write_rows.append((documents, name, ms(latency), "-"))
    work = table.render(["documents", "Tags rows", "view rows", "IMV ops mean/max/bound",
                         "on-demand tuples mean/max", "empty", "mismatches"], work_rows)
    latency = table.render(["documents", "system", "all p50/p99 ms",
                            *(f"{b} rows p50/p99 ms" for b in buckets)], latency_rows)
    writes = table.render(["documents", "tag insert", "p50/p99 ms", "ops mean/max/bound"],
                          write_rows)
    goals = table.render(["target", "measured", "goal", "met"],
                         [(t["name"], t["measured"], t["goal"], "yes" if t["met"] else "NO")
                          for t in document["targets"]])
    stores = ", ".join(document["stores"].values())
    return (f"twoTags queries ({document['settings']['queries']} per scale; {stores})\n{work}"
            f"\n\nquery latency, overall and by rows returned\n{latency}\n\n"
            f"tag inserts ({document['settings']['writes']} per scale)\n{writes}\n\n"
            f"targets\n{goals}")
