"""``piql bench queues``: asynchronous views through the store's update queue, after
UpStream §5-6 (../shared/papers/upstream-update-queues-eth-tr620.txt).

The workload is UpStream's: a table of quotes, one row per symbol (its *update key*),
whose prices are updated with Zipf-skewed keys; an asynchronous view sums the prices per
sector (``-- maintenance: async``). Every write is a real ``db.update`` on the store
(SQLite, and PostgreSQL with ``--postgres``); every dequeue a real drain of one entry,
in the policy's order, through the delta rules.

Time is *virtual*, as in UpStream's experiments: the maintainer takes ``c`` = 1 ms per
entry, and writes arrive as a Poisson process at ``load / c``; the queue's clock is the
virtual one, so the schedule, hence queue staleness (§5.1), is exact and independent of
the machine's noise (the replay is ``planner.update_queues.simulate``'s, with the store
as the queue). What is timed in wall clock is each write (p50/p99, writes per second of
writer time) and each drained entry (the real cost of ``c``).

Policies: ``sync`` (the view maintained in the write: no queue), ``append`` (UpStream's
AQ: one entry per change, no coalescing), ``fifo`` (UQ-FIFO), ``in-place`` and
``linecutting``; ``plain`` is the same write without any view (the write-latency target's
reference). Per policy and load factor: write p50/p99, throughput, average queue
staleness (time average over keys, §3.3) and p99 of the waits, queue length over time,
entries applied and maintenance operations (what coalescing saves against append) and
``differences``: sectors whose answer after the final drain differs from the query's own
SQL on the base table (must be 0). The replay's write timings share the machine with its
drains; ``write_latency`` times the writes of every mode interleaved (no drain timed),
which is what the latency target is read from.

The two-class mix of §5.3 (Figure 9): 10 keys of which ``slow`` update ``ratio`` times
less often than the others, load 5; the ratio of IN-PLACE's average queue staleness to
LINECUTTING's, for slow = 0..10.
"""
from __future__ import annotations

import random
import time
from bisect import bisect
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any, Callable

from piql.bench.common import machine, percentile, pyplot, save_figure, write_json
from piql.bench.queue_buy_confirm import MODES as CONFIRM_MODES, buy_confirms
from piql.bench.queue_inserts import MODES, two_tags_inserts
from piql.bench.stores import PostgresPlace
from piql.planner.update_queues import Dequeue, Entry, ObservedRates, QueuePolicy, Schedule
from piql.runtime.deployment import Deployment

SCHEMA = """
CREATE TABLE quotes (symbol BIGINT PRIMARY KEY, sector BIGINT NOT NULL, price BIGINT NOT NULL);
"""
QUERY = ("-- name: sectorValue\n{mode}SELECT SUM(price) AS total, COUNT(*) AS symbols "
         "FROM quotes WHERE sector = <sector>;\n")
ON_DEMAND = "SELECT SUM(price), COUNT(*) FROM quotes WHERE sector = {mark}"  # bound by name
SECTORS = 10
COST_NS = 1_000_000  # c: one entry, in virtual time
POLICIES = ("plain", "sync", "append", "fifo", "in-place", "linecutting")
QUEUED = ("append", "fifo", "in-place", "linecutting")
# what a run measures (``--parts``): the interleaved write latency, the twoTags insert,
# TPC-W BuyConfirm, the replay per load factor, the two-class mix of §5.3
PARTS = ("latency", "inserts", "buy-confirm", "replay", "two-class")


@dataclass(frozen=True)
class Settings:
    loads: tuple[float, ...] = (0.5, 1, 2, 5, 10)
    writes: int = 2000  # per policy and load factor
    keys: int = 100
    zipf: float = 1.0
    two_class_writes: int = 2000  # per point of the two-class mix
    ratios: tuple[int, ...] = (10, 50, 100)  # how much slower the slow class updates
    two_class_load: float = 5.0
    seed: int = 7
    insert_writes: int = 1500  # twoTags inserts per mode and run
    insert_runs: int = 3
    buy_confirm_steps: int = 3000  # TPC-W ordering-mix steps per run (queue_buy_confirm)
    buy_confirm_runs: int = 3
    parts: tuple[str, ...] = PARTS
    postgres: str | None = None  # also on PostgreSQL: a URI, or "embedded"


def plan(mode: str):
    """The quotes app: ``plain`` (no query, no view), ``sync`` or ``async``."""
    import piql

    queries = "" if mode == "plain" else QUERY.format(
        mode="-- maintenance: async\n" if mode == "async" else "")
    return piql.loads(SCHEMA, queries)._plan_for(1)


# -- workloads -------------------------------------------------------------------------

def zipf_arrivals(count: int, keys: int, skew: float, load: float, seed: int
                  ) -> list[tuple[int, int]]:
    """``count`` (virtual ns, key) arrivals: Poisson at ``load`` per c, keys Zipf(``skew``)."""
    chooser = random.Random(seed)
    cumulative = list(accumulate(1 / (k + 1) ** skew for k in range(keys)))
    now, arrivals = 0.0, []
    for _ in range(count):
        now += chooser.expovariate(load / COST_NS)
        arrivals.append((int(now), bisect(cumulative, chooser.random() * cumulative[-1])))
    return arrivals


def two_class_arrivals(count: int, slow: int, ratio: int, load: float, seed: int
                       ) -> list[tuple[int, int]]:
    """§5.3's mix: 10 keys, the first ``slow`` of them updating ``ratio`` times less often."""
    chooser = random.Random(seed)
    weights = [1 / ratio if k < slow else 1.0 for k in range(10)]
    now, arrivals = 0.0, []
    for _ in range(count):
        now += chooser.expovariate(load / COST_NS)
        arrivals.append((int(now), chooser.choices(range(10), weights)[0]))
    return arrivals


# -- one run: arrivals through the store, a maintainer dequeuing every c -------------------

@dataclass
class Run:
    latencies: list[float]  # seconds per write, wall clock
    dequeues: list[Dequeue]  # virtual times
    lengths: list[tuple[float, int]]  # (virtual ms, queue length) after each event
    entries: int  # entries applied
    maintenance_ops: int
    drain_seconds: float  # wall clock of the drains
    end: int
    differences: int


def replay(location: str, policy: str, arrivals: list[tuple[int, int]]) -> Run:
    """Write ``arrivals`` (each an update of its key's price) to a fresh deployment at
    ``location``; under a queued policy one maintainer dequeues an entry every c of
    virtual time whenever the queue is not empty (``update_queues.simulate``'s schedule)."""
    mode = {"plain": "plain", "sync": "sync"}.get(policy, "async")
    keys = sorted({k for _, k in arrivals})
    with Deployment(plan(mode), location, engine="store", quiet=True,
                    queue_policy=policy if mode == "async" else "in-place") as db:
        queue, now = db.maintainer.queue, [0]
        if queue is not None:  # virtual time from the first write on
            queue.clock, queue.cost_ns = (lambda: now[0]), COST_NS
        for key in keys:
            db.insert("quotes", symbol=key, sector=key % SECTORS, price=0)
        db.drain()
        if queue is not None:  # the statistics start with the workload
            queue.observed = queue.rates = ObservedRates()
        run = Run([], [], [], 0, 0, 0.0, 0, 0)
        free, i, price = 0, 0, 0
        while i < len(arrivals) or (queue is not None and queue.residents):
            if queue is None or not queue.residents:
                free = max(free, arrivals[i][0])
            while i < len(arrivals) and arrivals[i][0] <= free:
                now[0], key = arrivals[i]
                price += 1
                started = time.perf_counter()
                db.update("quotes", symbol=key, sector=key % SECTORS, price=price)
                run.latencies.append(time.perf_counter() - started)
                i += 1
            if queue is not None and queue.residents:
                now[0] = free
                _dequeue(db, policy, free, run)
                run.lengths.append((free / 1e6, queue.residents))
                free += COST_NS
        run.end = max([a[0] for a in arrivals] + [d.time for d in run.dequeues])
        run.differences = differences(db) + (0 if db.check().consistent else 1)
    return run


def _dequeue(db: Deployment, policy: str, at: int, run: Run) -> None:
    queue = db.maintainer.queue
    order = QueuePolicy(policy)
    (head,) = queue.head(1, order)
    ops, started = db.store.counter.ops, time.perf_counter()
    assert db.drain(1, policy=order) == 1
    run.drain_seconds += time.perf_counter() - started
    run.maintenance_ops += db.store.counter.ops - ops
    run.entries += 1
    key = head.row_key.rsplit("@", 1)[0]  # the append queue's entries: key@arrival
    run.dequeues.append(Dequeue(at, Entry(key, None, head.first_enqueued, head.last_enqueued,
                                          head.updates)))


def differences(db: Deployment) -> int:
    """Sectors whose view answer differs from the query's SQL on the base table."""
    if not db.plan.queries:
        return 0
    mark = "%(sector)s" if db.store.dialect == "postgres" else ":sector"
    wrong = 0
    for sector in range(SECTORS):
        served = db.query("sectorValue", sector=sector).rows
        total, count = db.store.sql(ON_DEMAND.format(mark=mark), {"sector": sector})[0]
        wrong += served != ((total, count),)
    return wrong


def figures(run: Run, keys: list[Any]) -> dict[str, Any]:
    """What one run measured (staleness in units of c, i.e. virtual ms)."""
    writes = run.latencies
    schedule = Schedule(tuple(run.dequeues), run.end)
    waits = [(d.time - d.entry.first_enqueued) / COST_NS for d in run.dequeues]
    lengths = [n for _, n in run.lengths]
    return {
        "writes": len(writes),
        "write_p50_ms": percentile(writes, 50) * 1e3,
        "write_p99_ms": percentile(writes, 99) * 1e3,
        "writes_per_second": len(writes) / sum(writes),
        "avg_queue_staleness": schedule.average_staleness(
            [f"[{k}]" for k in keys]) / COST_NS if run.dequeues else 0.0,
        "p99_wait": percentile(waits, 99) if waits else 0.0,
        "max_queue_length": max(lengths, default=0),
        "avg_queue_length": sum(lengths) / len(lengths) if lengths else 0.0,
        "queue_length_over_time": _thin(run.lengths, 200),
        "entries_applied": run.entries,
        "maintenance_ops": run.maintenance_ops,
        "entry_cost_ms": run.drain_seconds / run.entries * 1e3 if run.entries else 0.0,
        "differences": run.differences,
    }


def _thin(points: list[tuple[float, int]], most: int) -> list[tuple[float, int]]:
    step = max(1, len(points) // most)
    return [(round(t, 3), n) for t, n in points[::step]]


# -- the benchmark ----------------------------------------------------------------------

def run(settings: Settings, out: Path, say: Callable[[str], None] = print) -> dict[str, Any]:
    import tempfile

    document: dict[str, Any] = {"benchmark": "queues", "machine": machine(),
                                "settings": {k: v for k, v in settings.__dict__.items()},
                                "cost_per_entry_virtual_ms": COST_NS / 1e6, "stores": {}}
    place = PostgresPlace(settings.postgres) if settings.postgres else None
    try:
        with tempfile.TemporaryDirectory() as directory:
            counter = iter(range(10**9))
            kinds: dict[str, Callable[[], str]] = {
                "sqlite": lambda: str(Path(directory) / f"q{next(counter)}.db")}
            if place is not None:
                kinds["postgres"] = lambda: place.new_store("queues")
            for kind, new_store in kinds.items():
                document["stores"][kind] = _store_figures(settings, new_store, say, kind)
    finally:
        if place is not None:
            place.close()
    document["deferral"] = {"twoTags": deferral(*_two_tags()), "tpcw": deferral(*_tpcw())}
    document["targets"] = targets(document)
    write_json(out / "queues.json", document)
    plot(document, out)
    return document


LATENCY_MODES = ("plain", "sync", "in-place", "append")


def write_latency(settings: Settings, new_store: Callable[[], str]) -> dict[str, Any]:
    """Write latency without the replay's drains in the way: one deployment per mode
    open at once, the same Zipf-keyed update written to each in turn (the order rotating),
    so the shared machine's noise falls on every mode alike; the async queues are drained
    every 200 writes, untimed."""
    arrivals = zipf_arrivals(settings.writes * 2, settings.keys, settings.zipf, 1.0,
                             settings.seed)
    keys = sorted({k for _, k in arrivals})
    dbs = {}
    try:
        for mode in LATENCY_MODES:
            dbs[mode] = Deployment(plan(mode if mode in ("plain", "sync") else "async"),
                                   new_store(), engine="store", quiet=True,
                                   queue_policy=mode if mode in QUEUED else "in-place")
            for key in keys:
                dbs[mode].insert("quotes", symbol=key, sector=key % SECTORS, price=0)
        timings: dict[str, list[float]] = {m: [] for m in LATENCY_MODES}
        for number, (_, key) in enumerate(arrivals):
            shift = number % len(LATENCY_MODES)
            for mode in LATENCY_MODES[shift:] + LATENCY_MODES[:shift]:
                started = time.perf_counter()
                dbs[mode].update("quotes", symbol=key, sector=key % SECTORS, price=number)
                timings[mode].append(time.perf_counter() - started)
            if number % 200 == 199:
                for db in dbs.values():
                    db.drain()
        plain = percentile(timings["plain"], 99)
        return {mode: {"writes": len(t), "p50_ms": percentile(t, 50) * 1e3,
                       "p99_ms": percentile(t, 99) * 1e3,
                       "writes_per_second": len(t) / sum(t),
                       "p99_over_plain": percentile(t, 99) / plain}
                for mode, t in timings.items()}
    finally:
        for db in dbs.values():
            db.close()


def _store_figures(settings: Settings, new_store: Callable[[], str],
                   say: Callable[[str], None], kind: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if "latency" in settings.parts:
        found["write_latency"] = latency = write_latency(settings, new_store)
        say(f"{kind} write p50/p99 ms: " + ", ".join(
            f"{m} {v['p50_ms']:.3f}/{v['p99_ms']:.3f}" for m, v in latency.items()))
    if "inserts" in settings.parts:
        found["two_tags_insert"] = inserts = two_tags_inserts(
            new_store, settings.insert_writes, settings.insert_runs, settings.seed)
        say(f"{kind} {_inserts_line(inserts)}")
    if "buy-confirm" in settings.parts:
        found["buy_confirm"] = confirms = buy_confirms(
            new_store, settings.buy_confirm_steps, settings.buy_confirm_runs, settings.seed)
        say(f"{kind} {_confirms_line(confirms)}")
    if "replay" in settings.parts:
        found["loads"] = _replays(settings, new_store, say, kind)
    if "two-class" in settings.parts:
        found["two_class"] = _two_class(settings, new_store, say, kind)
    return found


def _replays(settings: Settings, new_store: Callable[[], str], say: Callable[[str], None],
             kind: str) -> dict[str, dict[str, Any]]:
    loads: dict[str, dict[str, Any]] = {}
    for load in settings.loads:
        arrivals = zipf_arrivals(settings.writes, settings.keys, settings.zipf, load,
                                 settings.seed)
        keys = sorted({k for _, k in arrivals})
        row = {}
        for policy in POLICIES:
            row[policy] = figures(replay(new_store(), policy, arrivals), keys)
            row[policy]["distinct_keys"] = len(keys)
        for policy in QUEUED:
            row[policy]["ops_saved_vs_append"] = (row["append"]["maintenance_ops"]
                                                  - row[policy]["maintenance_ops"])
        loads[str(load)] = row
        say(f"{kind} load {load}: " + ", ".join(
            f"{p} {row[p]['avg_queue_staleness']:.1f}" for p in QUEUED) + " (avg staleness, c)")
    return loads


def _two_class(settings: Settings, new_store: Callable[[], str], say: Callable[[str], None],
               kind: str) -> dict[str, list[dict[str, Any]]]:
    two_class: dict[str, list[dict[str, Any]]] = {}
    for ratio in settings.ratios:
        points = []
        for slow in range(11):
            arrivals = two_class_arrivals(settings.two_class_writes, slow, ratio,
                                          settings.two_class_load, settings.seed)
            keys = list(range(10))
            point: dict[str, Any] = {"slow": slow}
            for policy in ("in-place", "linecutting"):
                point[policy] = figures(replay(new_store(), policy, arrivals), keys)
            point["in_place_over_linecutting"] = (
                point["in-place"]["avg_queue_staleness"]
                / point["linecutting"]["avg_queue_staleness"]
                if point["linecutting"]["avg_queue_staleness"] else 1.0)
            points.append(point)
        two_class[str(ratio)] = points
        say(f"{kind} two-class mix, slow keys {ratio}x slower: IN-PLACE/LINECUTTING " + " ".join(
            f"{p['in_place_over_linecutting']:.2f}" for p in points))
    return two_class


def _inserts_line(inserts: dict[str, Any]) -> str:
    return ("twoTags insert p50/p99 ms (medians of "
            f"{inserts['runs']} interleaved runs): " + ", ".join(
                f"{m} {inserts[m]['p50_ms']:.3f}/{inserts[m]['p99_ms']:.3f}" for m in MODES)
            + f"; async p99 / plain p99 {inserts['async_p99_over_plain']:.2f} (per run "
            + " ".join(f"{r:.2f}" for r in inserts["per_run_async_p99_over_plain"]) + ")")


def _confirms_line(confirms: dict[str, Any]) -> str:
    return (f"TPC-W BuyConfirm p50/p99 ms (its writes; medians of {confirms['runs']} "
            f"interleaved runs, {confirms['confirms_per_run']} a run): " + ", ".join(
                f"{m} {confirms[m]['p50_ms']:.3f}/{confirms[m]['p99_ms']:.3f}"
                for m in CONFIRM_MODES)
            + f"; async p99 / plain p99 {confirms['async_p99_over_plain']:.2f} (per run "
            + " ".join(f"{r:.2f}" for r in confirms["per_run_async_p99_over_plain"])
            + f"), sync {confirms['sync_p99_over_plain']:.2f}")


def _two_tags() -> tuple[str, str]:
    from piql.bench import twotags

    return twotags.SCHEMA, twotags.PIQL_QUERIES


def _tpcw() -> tuple[str, str]:
    from piql.bench.tpcw import EXAMPLE

    return (EXAMPLE / "schema.sql").read_text(), (EXAMPLE / "queries.sql").read_text()


def deferral(schema: str, queries: str) -> dict[str, Any]:
    """Which views of an app become asynchronous when every query asks for it, and lint's
    reason for each that stays synchronous: the write-latency targets on BuyConfirm and the
    twoTags insert need their views off the write path."""
    import re

    import piql

    marked = re.sub(r"(-- name: *\w+ *\n)", r"\1-- maintenance: async\n", queries)
    plan = piql.loads(schema, marked)._plan_for(1)
    notes = {d.message.split(" ")[1]: d.message for q in plan.queries for d in q.diagnostics
             if d.code == "async" and d.severity == "warning"}
    return {"views": len(plan.views),
            "async": [v.name for v in plan.views if v.maintenance.value == "async"],
            "kept_sync": {v.name: notes.get(v.name, f"a {v.kind} view")
                          for v in plan.views if v.maintenance.value != "async"}}


def targets(document: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets, per store, as measured (those of the parts run)."""
    result = {}
    for kind, figures_ in document["stores"].items():
        loads = figures_.get("loads", {})
        two_class = figures_.get("two_class", {})
        five = loads.get("5") or loads.get("5.0")
        checks: dict[str, Any] = {"differences": sum(
            row[p]["differences"] for row in loads.values() for p in POLICIES) + sum(
            pt[p]["differences"] for pts in two_class.values() for pt in pts
            for p in ("in-place", "linecutting"))}
        latency = figures_.get("write_latency")
        if latency:
            checks["async_write_p99_over_plain"] = {
                m: latency[m]["p99_over_plain"] for m in ("in-place", "append")}
            checks["sync_write_p99_over_plain"] = latency["sync"]["p99_over_plain"]
        for part, label in (("two_tags_insert", "two_tags_insert"),
                            ("buy_confirm", "buy_confirm")):
            found = figures_.get(part)
            if found:
                checks[f"{label}_async_p99_over_plain"] = found["async_p99_over_plain"]
                checks["differences"] += found["differences"]
        if five:
            checks["load5_max_queue_length"] = {p: five[p]["max_queue_length"] for p in QUEUED}
            checks["load5_distinct_keys"] = five["in-place"]["distinct_keys"]
            checks["load5_append_over_in_place_staleness"] = (
                five["append"]["avg_queue_staleness"] / five["in-place"]["avg_queue_staleness"])
        if two_class:
            checks["linecutting_best_ratio"] = {
                ratio: max(p["in_place_over_linecutting"] for p in points)
                for ratio, points in two_class.items()}
        result[kind] = checks
    return result


# -- figures ----------------------------------------------------------------------------

FIGURES = ("queues-staleness.png", "queues-linecutting.png", "queues-length.png")
LABELS = {"append": "AQ (append)", "fifo": "UQ-FIFO", "in-place": "UQ-IN-PLACE",
          "linecutting": "LINECUTTING"}


def plot(document: dict[str, Any], out: Path) -> None:
    """queues-staleness.png (UpStream Fig. 7: staleness vs load), queues-linecutting.png
    (Fig. 9: IN-PLACE/LINECUTTING vs slow updaters), queues-length.png (queue length over
    time at the highest load)."""
    plt = pyplot()
    replayed = {k: f for k, f in document["stores"].items() if f.get("loads")}
    mixed = {k: f for k, f in document["stores"].items() if f.get("two_class")}
    if replayed:
        _plot_loads(plt, replayed, out)
    if mixed:
        _plot_two_class(plt, mixed, out)


def _plot_loads(plt: Any, stores: dict[str, Any], out: Path) -> None:
    figure, axes = plt.subplots(1, len(stores), figsize=(5.5 * len(stores), 4), squeeze=False)
    for axis, (kind, figures_) in zip(axes[0], stores.items()):
        loads = sorted(figures_["loads"], key=float)
        for policy in QUEUED:
            axis.plot([float(l) for l in loads],
                      [max(figures_["loads"][l][policy]["avg_queue_staleness"], 1e-3)
                       for l in loads], marker="o", label=LABELS[policy])
        axis.set_yscale("log")
        axis.set(xlabel="load factor (arrival rate / maintenance rate)",
                 ylabel="average queue staleness (units of c)", title=f"{kind}: Zipf keys")
        axis.legend()
    save_figure(plt, figure, out / "queues-staleness.png", dpi=120)

    figure, axes = plt.subplots(1, len(stores), figsize=(5.5 * len(stores), 4), squeeze=False)
    for axis, (kind, figures_) in zip(axes[0], stores.items()):
        top = max(figures_["loads"], key=float)
        for policy in QUEUED:
            points = figures_["loads"][top][policy]["queue_length_over_time"]
            axis.plot([t for t, _ in points], [n for _, n in points], label=LABELS[policy])
        axis.set_yscale("log")
        axis.set(xlabel="virtual time (ms)", ylabel="queue length",
                 title=f"{kind}: load {top}")
        axis.legend()
    save_figure(plt, figure, out / "queues-length.png", dpi=120)


def _plot_two_class(plt: Any, stores: dict[str, Any], out: Path) -> None:
    figure, axes = plt.subplots(1, len(stores), figsize=(5.5 * len(stores), 4), squeeze=False)
    for axis, (kind, figures_) in zip(axes[0], stores.items()):
        for ratio, points in figures_["two_class"].items():
            axis.plot([p["slow"] for p in points],
                      [p["in_place_over_linecutting"] for p in points], marker="o",
                      label=f"slow keys {ratio}x slower")
        axis.axhline(1.0, color="grey", linewidth=0.8)
        axis.set(xlabel="number of slow updaters (of 10 keys)",
                 ylabel="staleness IN-PLACE / LINECUTTING", title=f"{kind}: two-class mix")
        axis.legend()
    save_figure(plt, figure, out / "queues-linecutting.png", dpi=120)


def summary(document: dict[str, Any]) -> str:
    lines = []
    for kind, figures_ in document["stores"].items():
        if "write_latency" in figures_:
            lines.append(f"{kind}: write latency p50/p99 ms (interleaved): " + ", ".join(
                f"{m} {v['p50_ms']:.3f}/{v['p99_ms']:.3f}"
                for m, v in figures_["write_latency"].items()))
        if "two_tags_insert" in figures_:
            lines.append(f"{kind}: {_inserts_line(figures_['two_tags_insert'])}")
        if "buy_confirm" in figures_:
            lines.append(f"{kind}: {_confirms_line(figures_['buy_confirm'])}")
        if figures_.get("loads"):
            lines.append(f"{kind}: per load factor, write p99 ms / avg queue staleness (c) / "
                         "max queue length / entries applied")
        for load, row in sorted(figures_.get("loads", {}).items(), key=lambda i: float(i[0])):
            cells = [f"{p} {row[p]['write_p99_ms']:.2f}" for p in ("plain", "sync")] + [
                f"{p} {row[p]['write_p99_ms']:.2f}/{row[p]['avg_queue_staleness']:.1f}/"
                f"{row[p]['max_queue_length']}/{row[p]['entries_applied']}" for p in QUEUED]
            lines.append(f"  load {load}: " + "; ".join(cells))
        for ratio, points in figures_.get("two_class", {}).items():
            lines.append(f"  two-class, {ratio}x slower: IN-PLACE/LINECUTTING by slow keys 0..10: "
                         + " ".join(f"{p['in_place_over_linecutting']:.2f}" for p in points))
    lines.append(f"targets: {document['targets']}")
    return "\n".join(lines)
