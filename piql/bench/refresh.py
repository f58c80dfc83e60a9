"""``piql bench refresh``: periodic refresh of an SI-3 view at growing data sizes and
partition counts, on each engine (paper §8.2.2, Figure 7).

The workload is the paper's popularTags (§6.2): the most popular tags among the
5000 newest Tags rows, with ``timestamp`` TEMPORAL. For every engine, size and
partition count it loads the data into a file store, refreshes the periodic
view several times, and records the median refresh time and the most tuples
one partition read. The per-partition reads stay at most 5000 however large
the table grows: that is the bounded serial work of SI-3.
"""
from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import piql
from piql.bench.common import machine, median, progress, pyplot, save_figure, write_json

SCHEMA = """
CREATE TABLE Documents (docId BIGINT, timestamp BIGINT, text VARCHAR, PRIMARY KEY (docId));
CREATE TABLE Tags (docId BIGINT, tag VARCHAR, timestamp BIGINT TEMPORAL,
                   PRIMARY KEY (docId, tag),
                   FOREIGN KEY (docId) REFERENCES Documents (docId))
  WITH CARDINALITY (tag, 10);
"""
QUERIES = """
-- name: popularTags
-- periodic: 1 min
SELECT tag, COUNT(*) FROM (SELECT * FROM Tags ORDER BY timestamp DESC LIMIT 5000) GROUP BY tag
"""
TAGS_PER_DOC = 4


def run(engines: list[str], sizes: list[int], partitions: list[int], repeat: int,
        out: Path) -> dict[str, Any]:
    """Measure every combination; write ``refresh.json`` and ``refresh.png`` under ``out``."""
    work = Path(tempfile.mkdtemp(prefix="piql-bench-"))
    (work / "schema.sql").write_text(SCHEMA)
    (work / "queries.sql").write_text(QUERIES)
    app = piql.load(work / "schema.sql", work / "queries.sql")
    results = []
    total = len(engines) * len(sizes) * len(partitions)
    for engine in engines:
        for size in sizes:
            for count in partitions:
                progress(f"refresh {engine} {size} rows {count} partitions", len(results), total)
                results.append(_measure(app, work, engine, size, count, repeat))
    progress("refresh", total, total)
    document = {"benchmark": "refresh", "query": "popularTags (paper §6.2)",
                "machine": machine(), "repeat": repeat, "results": results}
    write_json(out / "refresh.json", document)
    _plot(document, out / "refresh.png")
    return document


def _measure(app, work: Path, engine: str, size: int, partitions: int, repeat: int) -> dict:
    path = work / f"{engine}-{size}-{partitions}.db"
    db = app.deploy(path, engine=engine, partitions=partitions)
    docs = max(1, size // TAGS_PER_DOC)
    started = time.perf_counter()
    db.load("Documents", ((d, d, "") for d in range(docs)))
    db.load("Tags", ((d, f"tag{(d * 7 + k) % 500}", d * TAGS_PER_DOC + k)
                     for d in range(docs) for k in range(TAGS_PER_DOC)))
    load_seconds = time.perf_counter() - started
    db.refresh()  # warm-up: engine start, caches
    seconds, reads = [], []
    for _ in range(repeat):
        report = db.refresh()[0]
        seconds.append(report.seconds)
        reads.append(report.max_partition_reads)
    db.close()
    path.unlink(missing_ok=True)
    return {"engine": engine, "rows": docs * TAGS_PER_DOC, "partitions": partitions,
            "refresh_seconds_median": median(seconds), "refresh_seconds": seconds,
            "max_partition_reads": max(reads), "per_partition_bound": 5000,
            "load_seconds": load_seconds}


def _plot(document: dict, path: Path) -> None:
    plt = pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    series: dict[tuple[str, int], list[dict]] = {}
    for result in document["results"]:
        series.setdefault((result["engine"], result["partitions"]), []).append(result)
    for (engine, partitions), points in sorted(series.items()):
        points.sort(key=lambda r: r["rows"])
        rows = [p["rows"] for p in points]
        label = f"{engine}, {partitions} partitions"
        left.plot(rows, [p["refresh_seconds_median"] * 1000 for p in points], marker="o", label=label)
        right.plot(rows, [p["max_partition_reads"] for p in points], marker="o", label=label)
    for axis, title, unit in ((left, "refresh time (median)", "ms"),
                              (right, "tuples read by the busiest partition", "tuples")):
        axis.set_xscale("log")
        axis.set_xlabel("rows in Tags")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    right.axhline(5000, color="grey", linestyle="--", linewidth=1, label="bound (LIMIT 5000)")
    right.set_ylim(bottom=0)
    left.set_ylim(bottom=0)
    right.legend(fontsize=8)
    figure.suptitle("piql SI-3 periodic refresh: popularTags")
    save_figure(plt, figure, path, dpi=120)


def summary(document: dict) -> str:
    from piql.report import table

    rows = [(r["engine"], r["rows"], r["partitions"], f"{r['refresh_seconds_median'] * 1000:.1f}",
             r["max_partition_reads"], f"{r['load_seconds']:.1f}") for r in document["results"]]
    return table.render(["engine", "rows", "partitions", "refresh ms (median)",
                         "max tuples/partition", "load s"], rows)
