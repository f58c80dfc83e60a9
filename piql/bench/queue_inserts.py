"""``piql bench queues``' insert-latency part: the twoTags insert, a plain insert against
the same insert maintaining twoTags' view synchronously and asynchronously (issue 20's
target: the async write's p99 at most 1.5x the plain insert's).

``plain`` is the twoTags schema with only the one-tag lookup (the index Tags(tag, docId),
no view); ``sync`` and ``async`` add twoTags, kept in the write or through the update
queue. One deployment per mode open at once, each tag insert written to every mode in
turn (the order rotating), so the shared machine's noise falls on every mode alike; the
documents are inserted untimed, and the async queue is drained every ``drain_every``
inserts, untimed. Several runs; per run each mode's p50/p99 and the async p99 over the
plain p99 of the same run; the figures reported are the medians over the runs.
"""
from __future__ import annotations

import random
import re
import statistics
import time
from typing import Any, Callable

from piql.bench.common import percentile
from piql.runtime.deployment import Deployment

MODES = ("plain", "sync", "async")
TAGS = 200  # distinct tags, uniform
TAGS_PER_DOC = 5  # under the schema's CARDINALITY (tag, 10) per document


def _plan(mode: str):
    import piql
    from piql.bench import twotags

    queries = twotags.BASELINE_QUERIES if mode == "plain" else twotags.PIQL_QUERIES
    if mode == "async":
        queries = re.sub(r"(-- name: twoTags\n)", r"\1-- maintenance: async\n", queries)
    return piql.loads(twotags.SCHEMA, queries)._plan_for(1)


def one_run(new_store: Callable[[], str], inserts: int, seed: int,
            drain_every: int = 200) -> dict[str, dict[str, float]]:
    """One interleaved run of ``inserts`` tag inserts per mode."""
    chooser = random.Random(seed)
    dbs: dict[str, Deployment] = {}
    try:
        for mode in MODES:
            dbs[mode] = Deployment(_plan(mode), new_store(), engine="store", quiet=True)
        timings: dict[str, list[float]] = {m: [] for m in MODES}
        for doc in range(inserts // TAGS_PER_DOC):
            for db in dbs.values():
                db.insert("Documents", docId=doc, timestamp=doc, text=f"d{doc}")
            for number, tag in enumerate(chooser.sample(range(TAGS), TAGS_PER_DOC)):
                shift = (doc * TAGS_PER_DOC + number) % len(MODES)
                for mode in MODES[shift:] + MODES[:shift]:
                    started = time.perf_counter()
                    dbs[mode].insert("Tags", docId=doc, tag=f"t{tag}", timestamp=doc)
                    timings[mode].append(time.perf_counter() - started)
            if (doc + 1) * TAGS_PER_DOC % drain_every == 0:
                dbs["async"].drain()
        differences = _differences(dbs, chooser)
        return {**{mode: {"p50_ms": percentile(t, 50) * 1e3, "p99_ms": percentile(t, 99) * 1e3}
                   for mode, t in timings.items()}, "differences": {"count": differences}}
    finally:
        for db in dbs.values():
            db.close()


def _differences(dbs: dict[str, Deployment], chooser: random.Random) -> int:
    """After a drain: twoTags answers of the async deployment that differ from the sync
    one's, over 50 random tag pairs, plus views whose recomputation differs."""
    dbs["async"].drain()
    pairs = [tuple(f"t{t}" for t in chooser.sample(range(TAGS), 2)) for _ in range(50)]
    found = sum(dbs["async"].query("twoTags", tag1=a, tag2=b).rows
                != dbs["sync"].query("twoTags", tag1=a, tag2=b).rows for a, b in pairs)
    return found + sum(not v.consistent for v in dbs["async"].check().views)


def two_tags_inserts(new_store: Callable[[], str], inserts: int = 1500, runs: int = 3,
                     seed: int = 7) -> dict[str, Any]:
    """The medians over ``runs`` runs: per mode p50/p99 (ms), and the p99 ratios over the
    plain insert's of the same run."""
    results = [one_run(new_store, inserts, seed + run) for run in range(runs)]
    figures: dict[str, Any] = {"inserts_per_run": inserts, "runs": runs,
                               "differences": sum(r["differences"]["count"] for r in results)}
    for mode in MODES:
        figures[mode] = {key: statistics.median(r[mode][key] for r in results)
                         for key in ("p50_ms", "p99_ms")}
    for mode in ("sync", "async"):
        figures[f"{mode}_p99_over_plain"] = statistics.median(
            r[mode]["p99_ms"] / r["plain"]["p99_ms"] for r in results)
        figures[f"{mode}_p50_over_plain"] = statistics.median(
            r[mode]["p50_ms"] / r["plain"]["p50_ms"] for r in results)
    figures["per_run_async_p99_over_plain"] = [
        r["async"]["p99_ms"] / r["plain"]["p99_ms"] for r in results]
    return figures
