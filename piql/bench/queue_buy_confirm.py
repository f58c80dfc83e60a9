"""``piql bench queues``' BuyConfirm part: TPC-W BuyConfirm's writes with no views
(``plain``), with every view maintained in the write (``sync``) and with every query
``-- maintenance: async`` (issue 20's target: the async write's p99 at most 1.5x the plain
one's).

BuyConfirm writes an order, its lines, the card transaction, the stock of every item bought
and deletes the cart's lines (``tpcw_mix._buy_confirm``). Synchronously the order and its
lines write the staging rows and epoch marks of the two SI-3 views (best sellers, related
items) and the stock update runs the search views' rules; asynchronously they queue the
staging rows and marks (drained before a refresh) and the stock update, which changes no
column a view reads, queues nothing.

The data is TPC-W's generator at 1,000 items and 1 emulated browser, loaded into three
deployments open at once (``plain``: the schema without queries, so no view and no index
beyond the keys). The steps are the ordering mix's (``tpcw_mix.plan_workload``), writes
only: each step's writes go to every mode in turn (the order rotating), each timed, so the
shared machine's noise falls on every mode alike; the periodic views are refreshed every
simulated minute and the async queue drained every ``drain_every`` steps, untimed. A
BuyConfirm's latency is the sum of its writes' (as ``piql bench tpcw`` times it); every
other write interaction runs too (it fills the carts), untimed in the figures. After the
run the async deployment is drained and refreshed, and ``differences`` counts the views
whose rows differ from the sync deployment's plus the views whose recomputation differs
(must be 0). Several runs (a new workload seed and fresh stores each); per run the ratios
over the plain figure of the same run; the medians over the runs.
"""
from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

from piql.bench import tpcw_data as data
from piql.bench import tpcw_mix as mix
from piql.bench.common import percentile
from piql.bench.tpcw import EXAMPLE
from piql.runtime.deployment import Deployment

MODES = ("plain", "sync", "async")
SCALE = data.Scale(1000, 1)


def _plan(mode: str):
    import piql

    queries = "" if mode == "plain" else (EXAMPLE / "queries.sql").read_text()
    return piql.loads((EXAMPLE / "schema.sql").read_text(), queries,
                      maintenance="async" if mode == "async" else "sync")._plan_for(4)


def _deploy(mode: str, location: str, dataset: data.Dataset) -> Deployment:
    db = Deployment(_plan(mode), location, engine="store", quiet=True)
    for table in data.LOAD_ORDER:
        db.load(table, path=dataset.path(table))
    return db


def _write(db: Deployment, write: mix.Write) -> None:
    values = write.values
    if write.kind == "insert":
        db.insert(write.table, **values)
    elif write.kind == "update":
        db.update(write.table, **values)
    else:
        db.delete(write.table, **values)


def one_run(new_store: Callable[[], str], dataset: data.Dataset, steps: int, seed: int,
            drain_every: int = 200) -> dict[str, Any]:
    """One interleaved run of ``steps`` ordering-mix interactions' writes."""
    dbs: dict[str, Deployment] = {}
    try:
        for mode in MODES:
            dbs[mode] = _deploy(mode, new_store(), dataset)
        workload = mix.plan_workload(dbs["sync"].plan, dataset, interactions=steps, warmup=0,
                                     min_samples=0, seed=seed)
        period, refreshed = 60_000, dataset.now_ms
        since = dataset.now_ms
        for db in (dbs["sync"], dbs["async"]):
            db.refresh(now_ms=refreshed, since_ms=since)
        confirms: dict[str, list[float]] = {m: [] for m in MODES}
        writes: dict[str, list[float]] = {m: [] for m in MODES}
        for number, step in enumerate(workload.steps):
            if step.now_ms >= refreshed + period:
                refreshed = step.now_ms - step.now_ms % period
                for db in (dbs["sync"], dbs["async"]):
                    db.refresh(now_ms=step.now_ms, since_ms=since)
            actions = [a for a in step.actions if isinstance(a, mix.Write)]
            shift = number % len(MODES)
            for mode in MODES[shift:] + MODES[:shift]:
                total = 0.0
                for action in actions:
                    started = time.perf_counter()
                    _write(dbs[mode], action)
                    elapsed = time.perf_counter() - started
                    total += elapsed
                    if step.interaction == "BuyConfirm":
                        writes[mode].append(elapsed)
                if step.interaction == "BuyConfirm":
                    confirms[mode].append(total)
            if number % drain_every == drain_every - 1:
                dbs["async"].drain()
        last = workload.steps[-1].now_ms if workload.steps else dataset.now_ms
        differences = _differences(dbs["sync"], dbs["async"], last, since)
        return {**{mode: {"confirms": len(confirms[mode]),
                          "p50_ms": percentile(confirms[mode], 50) * 1e3,
                          "p99_ms": percentile(confirms[mode], 99) * 1e3,
                          "write_p50_ms": percentile(writes[mode], 50) * 1e3,
                          "write_p99_ms": percentile(writes[mode], 99) * 1e3}
                   for mode in MODES}, "differences": differences}
    finally:
        for db in dbs.values():
            db.close()


def _differences(sync: Deployment, lazy: Deployment, now_ms: int, since_ms: int) -> int:
    """Views of the async deployment, drained and refreshed, whose rows differ from the
    sync one's (refreshed alike), plus views whose recomputation differs."""
    for db in (sync, lazy):
        db.refresh(now_ms=now_ms, since_ms=since_ms)  # the async one drains first
    found = sum(sorted(sync.rows(v.name), key=repr) != sorted(lazy.rows(v.name), key=repr)
                for v in lazy.views)
    return found + sum(not v.consistent for v in lazy.check().views)


def buy_confirms(new_store: Callable[[], str], steps: int = 3000, runs: int = 3,
                 seed: int = 7) -> dict[str, Any]:
    """The medians over ``runs`` runs of ``steps`` ordering-mix interactions: per mode a
    BuyConfirm's p50/p99 (ms, its writes summed) and of its single writes, and the ratios
    over the plain figures of the same run."""
    with tempfile.TemporaryDirectory() as directory:
        dataset = data.generate(SCALE, Path(directory) / "data", seed=seed,
                                limits=data.Limits.of(_plan("sync").catalog))
        results = [one_run(new_store, dataset, steps, seed + run) for run in range(runs)]
    figures: dict[str, Any] = {"scale": [SCALE.items, SCALE.ebs], "steps_per_run": steps,
                               "runs": runs,
                               "confirms_per_run": results[0]["plain"]["confirms"],
                               "differences": sum(r["differences"] for r in results)}
    keys = ("p50_ms", "p99_ms", "write_p50_ms", "write_p99_ms")
    for mode in MODES:
        figures[mode] = {k: statistics.median(r[mode][k] for r in results) for k in keys}
    for mode in ("sync", "async"):
        for key in keys:
            figures[f"{mode}_{key.removesuffix('_ms')}_over_plain"] = statistics.median(
                r[mode][key] / r["plain"][key] for r in results)
    figures["per_run_async_p99_over_plain"] = [
        r["async"]["p99_ms"] / r["plain"]["p99_ms"] for r in results]
    return figures
