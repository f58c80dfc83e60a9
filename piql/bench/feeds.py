"""``piql bench feeds``: a feed served all-push, all-pull, per edge (MinCost) and per edge
under a read budget, on the same seeded workload (Feeding Frenzy §5).

The workload: ``users`` users; each follows a Zipf-distributed number of others (at most
``max_follows``, the CARDINALITY bound), a share ``within`` of them inside its community
(``community`` consecutive ids) by Zipf popularity there, the rest by global Zipf
popularity (so in-degrees are Zipf too, and neighbourhoods overlap as in EAGr's social
graphs); each user writes posts at a Zipf rate and reads its feed at a Zipf rate (the
two ranks independent). A trace of ``trace`` operations draws a write with probability
1 / (1 + ratio) and a read otherwise, so ``ratio`` is reads per write overall: the sweep
of Feeding Frenzy's query:event ratio (its Figures 4 and 6). Before the measured trace, a
warm-up (``warmup`` operations, default as long) runs all-pull so the deployment
measures rates, H and L; then ``db.adapt(mode=...)`` decides, and the trace is measured.
The latency strategy adapts halfway through its warm-up too: its second decision sees
the read costs its first produced (the budget is in measured ops).

Figures per strategy and ratio: total operations of the measured trace (piql's counted
operations: reads, writes, pushes; machine-independent), read operations p50/p99, read
latency p50/p99 (wall clock), write operations p99 (a post and its pushes), the push
side's storage rows (feeds, push edges, states), the operations the adapt step took (the
switches, once), and ``mismatches``: reads whose rows differ from the query's own SQL run
on the base tables at that moment (must be 0).
"""
from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import piql
from piql import sqlgen
from piql.bench.common import machine, percentile, progress, pyplot, save_figure, write_json

STRATEGIES = ("all-pull", "all-push", "hybrid", "latency")
MODES = {"all-pull": "pull", "all-push": "push", "hybrid": "mincost", "latency": "latency"}
# the neighbourhood aggregate: (overlay mode, sharing, under the read budget) per strategy.
# all-push with and without sharing is EAGr's pure sharing comparison (every reader
# precomputed, the overlay's structure alone differing); the budgeted pair compares the
# pushes each needs for the same bound on every read
AGGREGATES = {"all-pull": ("pull", False, False), "all-push": ("push", False, False),
              "all-push-shared": ("push", True, False),
              "eagr": ("eagr", False, False), "eagr-shared": ("eagr", True, False),
              "eagr-budget": ("eagr", False, True), "eagr-budget-shared": ("eagr", True, True)}
FIGURES = ("feeds_cost.png", "feeds_read_ops.png", "aggregates_cost.png",
           "aggregates_push_ops.png")


@dataclass(frozen=True)
class Settings:
    """One run's parameters (the defaults run in a few minutes on a laptop)."""

    users: int = 300
    mean_follows: float = 10.0  # before the cap: Zipf degrees scaled to this mean
    max_follows: int = 50
    k: int = 10
    skew: float = 1.0  # Zipf exponent of degrees and rates
    trace: int = 3000  # measured operations per strategy and ratio
    warmup: int | None = None  # unmeasured operations first (rates, H, L); None: trace
    ratios: tuple[float, ...] = (0.25, 0.5, 1.0, 2.0, 4.0, 16.0, 64.0)
    budget: float | None = None  # latency mode: measured ops per read, 99th percentile
    seed: int = 19
    postgres: bool = False  # on a throwaway PostgreSQL server, else SQLite in memory
    strategies: tuple[str, ...] = field(default=STRATEGIES)
    aggregate_ratios: tuple[float, ...] = (0.25, 1.0, 4.0, 16.0)
    # communities (EAGr §6's graphs have them): users in groups of ``community`` ids, each
    # following ``within`` of its followees inside its group (by popularity there), so
    # neighbourhoods overlap; 0: no communities, every followee by global popularity
    community: int = 20
    within: float = 0.8
    aggregate_budget: int = 4  # rows per read of the budgeted overlay strategies

    @property
    def read_budget(self) -> float:
        return self.budget if self.budget is not None else 12.0 * self.k


def schema(settings: Settings) -> str:
    return (f"CREATE TABLE follows (follower BIGINT, followee BIGINT, PRIMARY KEY (follower, "
            f"followee)) WITH CARDINALITY (followee, {settings.max_follows});\n"
            "CREATE TABLE posts (postId BIGINT PRIMARY KEY, author BIGINT NOT NULL, "
            "createdAt BIGINT NOT NULL, body VARCHAR);\n"
            "CREATE TABLE checkins (checkinId BIGINT PRIMARY KEY, userId BIGINT NOT NULL, "
            "points BIGINT);\n")


def queries(settings: Settings) -> str:
    return ("-- name: feed\nSELECT p.postId, p.author, p.createdAt FROM follows f, posts p\n"
            "WHERE f.follower = <me> AND p.author = f.followee\n"
            f"ORDER BY p.createdAt DESC LIMIT {settings.k}\n"
            "-- name: friendCheckins\n"
            "SELECT COUNT(*) AS n, SUM(c.points) AS points FROM follows f, checkins c\n"
            "WHERE f.follower = <me> AND c.userId = f.followee\n")


@dataclass(frozen=True)
class Workload:
    """The seeded graph, rates and preloaded posts (the same for every strategy)."""

    edges: tuple[tuple[int, int], ...]  # (follower, followee)
    write_weights: tuple[float, ...]  # per user (index user - 1)
    read_weights: tuple[float, ...]
    posts: tuple[tuple[int, int, int, str], ...]

    def graph(self) -> dict[str, Any]:
        users = len(self.write_weights)
        outs = [0] * users
        ins = [0] * users
        for follower, followee in self.edges:
            outs[follower - 1] += 1
            ins[followee - 1] += 1
        return {"users": users, "edges": len(self.edges),
                "mean_follows": len(self.edges) / users, "max_follows": max(outs),
                "max_followers": max(ins), "preloaded_posts": len(self.posts)}


def zipf_weights(n: int, skew: float, rng: random.Random) -> list[float]:
    """Weights 1 / rank ** skew over ``n`` items, ranks shuffled."""
    ranks = list(range(1, n + 1))
    rng.shuffle(ranks)
    return [1.0 / r ** skew for r in ranks]


def workload(settings: Settings) -> Workload:
    rng = random.Random(settings.seed)
    users = settings.users
    popularity = zipf_weights(users, settings.skew, rng)
    degree_weights = zipf_weights(users, settings.skew, rng)
    scale = settings.mean_follows * users / sum(degree_weights)
    edges = []
    everyone = range(1, users + 1)
    for user in everyone:
        follows = max(1, min(settings.max_follows, users - 1,
                             round(scale * degree_weights[user - 1])))
        group = _community(settings, user)
        inside = min(round(settings.within * follows), len(group) - 1) if group else 0
        chosen: set[int] = set()
        while len(chosen) < inside:
            other = rng.choices(group, [popularity[g - 1] for g in group])[0]
            if other != user:
                chosen.add(other)
        while len(chosen) < follows:
            other = rng.choices(everyone, popularity)[0]
            if other != user:
                chosen.add(other)
        edges += [(user, other) for other in sorted(chosen)]
    posts = tuple((n, 1 + n % users, n, "preloaded") for n in range(users * settings.k))
    return Workload(tuple(edges), tuple(zipf_weights(users, settings.skew, rng)),
                    tuple(zipf_weights(users, settings.skew, rng)), posts)


def _community(settings: Settings, user: int) -> list[int]:
    """The users of ``user``'s community (consecutive ids), or [] without communities."""
    if settings.community <= 1:
        return []
    first = (user - 1) // settings.community * settings.community + 1
    return list(range(first, min(first + settings.community, settings.users + 1)))


def trace(settings: Settings, load: Workload, ratio: float, length: int,
          rng: random.Random) -> list[tuple[str, int]]:
    """``length`` operations: ("write", author) or ("read", consumer)."""
    users = range(1, settings.users + 1)
    writes = rng.choices(users, load.write_weights, k=length)
    reads = rng.choices(users, load.read_weights, k=length)
    return [("read", reads[n]) if rng.random() < ratio / (1 + ratio) else ("write", writes[n])
            for n in range(length)]


def _traces(settings: Settings, load: Workload, ratio: float,
            seed: str) -> tuple[list, list]:
    """A warm-up trace and the measured one after it, from one generator seeded ``seed``."""
    rng = random.Random(seed)
    warmup = settings.trace if settings.warmup is None else settings.warmup
    return (trace(settings, load, ratio, warmup, rng),
            trace(settings, load, ratio, settings.trace, rng))


def run_strategy(settings: Settings, load: Workload, ratio: float, strategy: str,
                 store: str = ":memory:") -> dict[str, Any]:
    """One strategy on the seeded trace of ``ratio`` in a fresh ``store``: its figures."""
    app = piql.loads(schema(settings), queries(settings))
    warmup, measured = _traces(settings, load, ratio, f"{settings.seed}/{ratio}")
    with app.deploy(store, strict=True, quiet=True) as db:
        db.load("follows", [{"follower": a, "followee": b} for a, b in load.edges])
        db.load("posts", [dict(zip(("postId", "author", "createdAt", "body"), p))
                          for p in load.posts])
        write = _post(db, [len(load.posts)])
        budget = settings.read_budget if strategy == "latency" else None
        if strategy == "latency":  # the feedback loop: decide, measure the reads, again
            half = len(warmup) // 2
            _play(db, warmup[:half], write, "feed", None)
            db.adapt("feed", mode=MODES[strategy], budget=budget)
            warmup = warmup[half:]
        _play(db, warmup, write, "feed", None)
        adapted = db.adapt("feed", mode=MODES[strategy], budget=budget)[0]
        figures = _play(db, measured, write, "feed", _oracle(db))
        figures.pop("write_ops_total")
        feed = db.feeds["feed"]
        storage = sum(len(db.rows(t.name)) for t in feed.layout.tables) if feed.active else 0
    return figures | {
        "storage_rows": storage, "adapt_ops": adapted.ops, "push_edges": adapted.push_edges,
        "H": round(adapted.push_cost, 2), "L": round(adapted.pull_cost, 2),
        "budget_met": adapted.met, "chosen": adapted.chosen}


def run_aggregate(settings: Settings, load: Workload, ratio: float, strategy: str,
                  store: str = ":memory:") -> dict[str, Any]:
    """The neighbourhood aggregate under one overlay strategy on the seeded trace."""
    app = piql.loads(schema(settings), queries(settings))
    warmup, measured = _traces(settings, load, ratio, f"{settings.seed}/aggregate/{ratio}")
    mode, sharing, budgeted = AGGREGATES[strategy]
    with app.deploy(store, strict=True, quiet=True) as db:
        db.load("follows", [{"follower": a, "followee": b} for a, b in load.edges])
        db.load("checkins", [{"checkinId": n, "userId": 1 + n % settings.users, "points": n % 7}
                             for n in range(settings.users * 2)])
        next_key = [settings.users * 2]
        write = _checkin(db, next_key)
        db.adapt_overlay("friendCheckins", mode="pull", sharing=False)
        _play(db, warmup, write, "friendCheckins", None)
        adapted = db.adapt_overlay("friendCheckins", mode=mode, sharing=sharing,
                                   budget=settings.aggregate_budget if budgeted else None)
        base = _base_write_ops(db, next_key)
        figures = _play(db, measured, write, "friendCheckins", _oracle(db, "friendCheckins"))
        storage = len(db.rows(db.overlays["friendCheckins"].table.name))
    pushes = figures.pop("write_ops_total") - base * figures["writes"]
    return figures | {"push_ops": pushes, "storage_rows": storage,
                      "sharing_index": round(adapted.sharing_index, 4),
                      "shared_nodes": adapted.shared_nodes, "push_nodes": adapted.push_nodes,
                      "sharing_declined": adapted.sharing_declined, "chosen": adapted.chosen,
                      "adapt_ops": adapted.ops}


def _checkin(db, next_key: list[int]):
    def write(user: int) -> None:
        db.insert("checkins", checkinId=next_key[0], userId=user, points=next_key[0] % 7)
        next_key[0] += 1
    return write


def _base_write_ops(db, next_key: list[int]) -> int:
    """What a checkin costs without any push (a user no reader follows): the write, its
    index and per-writer view upkeep, the overlay's look at its writer."""
    before = db.store.counter.ops
    db.insert("checkins", checkinId=next_key[0], userId=-1, points=0)
    next_key[0] += 1
    return db.store.counter.ops - before


def _oracle(db, name: str = "feed"):
    block = db.query_plan(name).query.block
    sql = sqlgen.block_sql(block, db.store.dialect)
    return lambda me: [tuple(r) for r in db.store.sql(sql, {"me": me})]


def _post(db, next_post: list[int]):
    def write(user: int) -> None:
        db.insert("posts", postId=next_post[0], author=user, createdAt=next_post[0],
                  body="event")
        next_post[0] += 1
    return write


def _play(db, operations: list[tuple[str, int]], write, query: str,
          oracle) -> dict[str, Any]:
    """Run ``operations``; with an ``oracle``, measure and check every read."""
    counter = db.store.counter
    start = counter.ops
    read_ops, read_ms, write_ops, mismatches = [], [], [], 0
    for kind, user in operations:
        before = counter.ops
        if kind == "write":
            write(user)
            write_ops.append(counter.ops - before)
        else:
            clock = time.perf_counter()
            got = db.query(query, me=user)
            read_ms.append((time.perf_counter() - clock) * 1000)
            read_ops.append(got.ops)
            if oracle is not None and _normal(got.rows) != _normal(oracle(user)):
                mismatches += 1
    return {"total_ops": counter.ops - start, "reads": len(read_ops), "writes": len(write_ops),
            "read_ops_p50": percentile(read_ops, 50), "read_ops_p99": percentile(read_ops, 99),
            "read_ops_max": max(read_ops, default=0),
            "read_ms_p50": percentile(read_ms, 50), "read_ms_p99": percentile(read_ms, 99),
            "write_ops_p99": percentile(write_ops, 99), "write_ops_total": sum(write_ops),
            "mismatches": mismatches}


def _normal(rows) -> list[tuple]:
    """Rows with reals rounded (an AVG from summed state may differ in its last bit)."""
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]


def run(settings: Settings, out: Path) -> dict[str, Any]:
    """Every strategy at every ratio; ``feeds.json`` and the figures under ``out``."""
    load = workload(settings)
    sweep = []
    steps = len(settings.ratios) * len(settings.strategies)
    server = None
    if settings.postgres:
        from piql.bench.pg_server import PostgresServer

        server = PostgresServer()
    try:
        for number, ratio in enumerate(settings.ratios):
            point: dict[str, Any] = {"ratio": ratio, "strategies": {}}
            for position, strategy in enumerate(settings.strategies):
                progress("bench feeds", number * len(settings.strategies) + position, steps)
                store = ":memory:" if server is None else server.create_database()
                point["strategies"][strategy] = run_strategy(settings, load, ratio, strategy,
                                                             store)
                if server is not None:
                    server.drop_database(store)
            sweep.append(point | _verdict(point["strategies"]))
        aggregates = []
        for ratio in settings.aggregate_ratios:
            point = {"ratio": ratio, "strategies": {}}
            for strategy in AGGREGATES:
                progress("bench feeds: aggregates", len(aggregates), len(settings.aggregate_ratios))
                store = ":memory:" if server is None else server.create_database()
                point["strategies"][strategy] = run_aggregate(settings, load, ratio, strategy,
                                                              store)
                if server is not None:
                    server.drop_database(store)
            aggregates.append(point)
        progress("bench feeds: aggregates", len(aggregates), len(settings.aggregate_ratios))
    finally:
        if server is not None:
            server.stop()
    progress("bench feeds", steps, steps)
    document = {
        "benchmark": "feeds", "machine": machine(),
        "settings": {"users": settings.users, "mean_follows": settings.mean_follows,
                     "max_follows": settings.max_follows,
                     "k": settings.k, "skew": settings.skew, "trace": settings.trace,
                     "ratios": list(settings.ratios), "read_budget": settings.read_budget,
                     "aggregate_budget": settings.aggregate_budget,
                     "seed": settings.seed,
                     "store": "postgresql" if settings.postgres else "sqlite"},
        "graph": load.graph(), "sweep": sweep,
        "strategies": {s: _totals([p["strategies"][s] for p in sweep])
                       for s in settings.strategies},
        "aggregates": {"query": "friendCheckins", "sweep": aggregates,
                       "strategies": {s: _totals([p["strategies"][s] for p in aggregates])
                                      | {"push_ops": sum(p["strategies"][s]["push_ops"]
                                                         for p in aggregates)}
                                      for s in AGGREGATES} if aggregates else {}},
    }
    write_json(out / "feeds.json", document)
    figures(document, out)
    return document


def _verdict(strategies: dict[str, Any]) -> dict[str, Any]:
    """The hybrid against the better extreme at one ratio."""
    if not {"all-pull", "all-push", "hybrid"} <= set(strategies):
        return {}
    best = min(strategies["all-pull"]["total_ops"], strategies["all-push"]["total_ops"])
    hybrid = strategies["hybrid"]["total_ops"]
    return {"better_extreme_ops": best, "hybrid_gain": best / hybrid if hybrid else None}


def _totals(points: list[dict[str, Any]]) -> dict[str, Any]:
    return {"total_ops": sum(p["total_ops"] for p in points),
            "read_ops_p99": max(p["read_ops_p99"] for p in points),
            "write_ops_p99": max(p["write_ops_p99"] for p in points),
            "storage_rows": max(p["storage_rows"] for p in points),
            "mismatches": sum(p["mismatches"] for p in points)}


def figures(document: dict[str, Any], out: Path) -> None:
    """Total operations and read operations against the read:write ratio (Feeding
    Frenzy's Figures 4 and 6)."""
    plt = pyplot()
    for name, key, label, sweep, what in (
            ("feeds_cost.png", "total_ops", "total operations (trace)", document["sweep"],
             "a feed"),
            ("feeds_read_ops.png", "read_ops_p99", "read operations, p99", document["sweep"],
             "a feed"),
            ("aggregates_cost.png", "total_ops", "total operations (trace)",
             document["aggregates"]["sweep"], "a neighbourhood aggregate"),
            ("aggregates_push_ops.png", "push_ops", "push operations (trace)",
             document["aggregates"]["sweep"], "a neighbourhood aggregate")):
        if not sweep:
            continue
        ratios = [p["ratio"] for p in sweep]
        figure, axes = plt.subplots(figsize=(6.4, 4.2))
        for strategy in sweep[0]["strategies"]:
            values = [p["strategies"][strategy][key] for p in sweep]
            if any(values):  # all-pull pushes nothing: no line on a log scale
                axes.plot(ratios, values, marker="o", label=strategy)
        axes.set_xscale("log", base=2)
        axes.set_yscale("log")
        axes.set_xlabel("reads per write (consumer : producer rate)")
        axes.set_ylabel(label)
        axes.set_title(f"piql, {what}: {document['graph']['users']} users, "
                       f"{document['graph']['edges']} edges, k = {document['settings']['k']}")
        axes.grid(True, which="both", alpha=0.3)
        axes.legend()
        save_figure(plt, figure, out / name, 120)


def summary(document: dict[str, Any]) -> str:
    graph = document["graph"]
    lines = [f"{graph['users']} users, {graph['edges']} edges (mean {graph['mean_follows']:.1f}"
             f" followees, at most {graph['max_followers']} followers), k = "
             f"{document['settings']['k']}, {document['settings']['trace']} operations per point",
             f"{'ratio':>6} {'strategy':>9} {'total ops':>10} {'read p50':>9} {'read p99':>9} "
             f"{'write p99':>9} {'p99 ms':>7} {'storage':>8} {'push':>6} {'bad':>4}"]
    for point in document["sweep"]:
        for strategy, f in point["strategies"].items():
            lines.append(f"{point['ratio']:>6g} {strategy:>9} {f['total_ops']:>10} "
                         f"{f['read_ops_p50']:>9.0f} {f['read_ops_p99']:>9.0f} "
                         f"{f['write_ops_p99']:>9.0f} {f['read_ms_p99']:>7.2f} "
                         f"{f['storage_rows']:>8} {f['push_edges']:>6} {f['mismatches']:>4}")
        if point.get("hybrid_gain"):
            lines.append(f"{'':>6} hybrid vs the better extreme: {point['hybrid_gain']:.2f}x")
    if document["aggregates"]["sweep"]:
        lines += ["", f"neighbourhood aggregate {document['aggregates']['query']} (EAGr overlay)",
                  f"(budgeted: at most {document['settings']['aggregate_budget']} rows per read)",
                  f"{'ratio':>6} {'strategy':>18} {'total ops':>10} {'push ops':>9} "
                  f"{'read max':>9} {'write p99':>9} {'storage':>8} {'sharing':>8} {'bad':>4}"]
        for point in document["aggregates"]["sweep"]:
            for strategy, f in point["strategies"].items():
                declined = " (declined)" if f["sharing_declined"] else ""
                lines.append(f"{point['ratio']:>6g} {strategy:>18} {f['total_ops']:>10} "
                             f"{f['push_ops']:>9} {f['read_ops_max']:>9.0f} "
                             f"{f['write_ops_p99']:>9.0f} {f['storage_rows']:>8} "
                             f"{f['sharing_index']:>8.3f} {f['mismatches']:>4}{declined}")
    return "\n".join(lines)
