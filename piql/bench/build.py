"""``piql bench build``: a bulk load from Parquet, the view build, a periodic refresh and a
consistency check at growing data sizes, on each engine, with the driver's peak memory.

The workload is the paper's schema (§2.2, Tags.timestamp TEMPORAL as §6.1 marks it) with
countTags (an IMV, docsPerTag) and popularTags (SI-3: a staging view copying every Tags
row, and its periodic view). Each (engine, size) runs in a fresh Python process, so its
peak resident memory is its own: the Python process's (``ru_maxrss``) and, on Spark, the
driver JVM's (its child process, sampled through /proc). The target: the driver's peak
grows by at most 1.5x while the data grows 10x.

DuckDB serves from a SQLite file; Spark (``local-cluster[2,1,1024]``: two executor JVMs)
from a PostgreSQL database its executors reach on their own.
"""
from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from piql.bench.common import machine, progress, pyplot, save_figure, write_json
from piql.bench.refresh import QUERIES as REFRESH_QUERIES, SCHEMA

# the refresh benchmark's paper schema and periodic view, with an IMV to build beside it
QUERIES = """
-- name: countTags
-- view: docsPerTag
SELECT COUNT(*) FROM Tags WHERE tag = <tag>
""" + REFRESH_QUERIES
TAGS_PER_DOC = 4
SPARK_MASTER = "local-cluster[2,1,1024]"
DEFAULT_SIZES = (100_000, 1_000_000)
QUICK_SIZES = (2_000, 20_000)


def run(engines: list[str], sizes: list[int], out: Path) -> dict[str, Any]:
    """Measure every (engine, size), each in a process of its own; write ``build.json``
    and ``build.png`` under ``out``."""
    work = Path(tempfile.mkdtemp(prefix="piql-bench-build-"))
    (work / "schema.sql").write_text(SCHEMA)
    (work / "queries.sql").write_text(QUERIES)
    server = None
    results = []
    total = len(engines) * len(sizes)
    try:
        for engine in engines:
            for size in sizes:
                progress(f"build {engine} {size} Tags rows", len(results), total)
                data = write_data(work, size)
                store = str(work / f"{engine}-{size}.db")
                if engine == "spark":
                    if server is None:
                        from piql.bench.pg_server import PostgresServer

                        server = PostgresServer()
                    store = server.create_database()
                results.append(_measure_in_process(work, data, engine, store))
    finally:
        if server is not None:
            server.stop()
    progress("build", total, total)
    document = {"benchmark": "build", "schema": "paper §2.2 (Tags.timestamp TEMPORAL)",
                "views": ["docsPerTag (IMV)", "popularTagsStaging (staging, every Tags row)"],
                "spark_master": SPARK_MASTER, "machine": machine(), "results": results,
                "growth": growth(results)}
    write_json(out / "build.json", document)
    _plot(document, out / "build.png")
    return document


def write_data(work: Path, size: int) -> Path:
    """Documents and Tags of ``size`` Tags rows as Parquet (Tags in two part files of a
    directory, as Spark writes them), written once per size."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    folder = work / f"data-{size}"
    if folder.exists():
        return folder
    folder.mkdir()
    docs = max(1, size // TAGS_PER_DOC)
    ids = pa.array(range(docs), pa.int64())
    pq.write_table(pa.table({"docId": ids, "timestamp": ids,
                             "text": pc.binary_join_element_wise("doc ", pc.cast(ids, pa.string()), "")}),
                   folder / "documents.parquet")
    rows = pa.array(range(docs * TAGS_PER_DOC), pa.int64())
    doc = pc.divide(rows, TAGS_PER_DOC)
    tag = pc.remainder(pc.add(pc.multiply(doc, 7), pc.remainder(rows, TAGS_PER_DOC)), 500)
    tags = pa.table({"docId": doc, "tag": pc.binary_join_element_wise(
        "tag", pc.cast(tag, pa.string()), ""), "timestamp": rows})
    parts = folder / "tags"
    parts.mkdir()
    half = len(tags) // 2
    pq.write_table(tags.slice(0, half), parts / "part-0.parquet")
    pq.write_table(tags.slice(half), parts / "part-1.parquet")
    return folder


def _measure_in_process(work: Path, data: Path, engine: str, store: str) -> dict[str, Any]:
    """One measurement in a fresh interpreter (its peak memory is the measurement's own)."""
    done = subprocess.run([sys.executable, "-m", "piql.bench.build", str(work), str(data),
                           engine, store], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bench build {engine} {data.name} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(work: Path, data: Path, engine: str, store: str) -> dict[str, Any]:
    """Load, build, refresh and check once on ``engine``, in this process."""
    import piql

    app = piql.load(work / "schema.sql", work / "queries.sql")
    options = {"spark_master": SPARK_MASTER} if engine == "spark" else {}
    jvm = _JvmPeak() if engine == "spark" else None
    db = app.deploy(store, engine=engine, quiet=True, **options)
    started = time.perf_counter()
    db.engine()
    start_seconds = time.perf_counter() - started
    if jvm is not None:
        jvm.start()
    seconds: dict[str, float] = {}
    peaks: dict[str, float] = {}  # the Python process's peak RSS after each step
    started = time.perf_counter()
    documents = db.load("Documents", path=data / "documents.parquet")
    tags = db.load("Tags", path=data / "tags")
    seconds["load"] = time.perf_counter() - started
    peaks["load"] = _peak_mb()
    started = time.perf_counter()
    db.build_views()
    seconds["build"] = time.perf_counter() - started
    peaks["build"] = _peak_mb()
    started = time.perf_counter()
    report = db.refresh(now_ms=tags)[0]
    seconds["refresh"] = time.perf_counter() - started
    peaks["refresh"] = _peak_mb()
    started = time.perf_counter()
    check = db.check()
    seconds["check"] = time.perf_counter() - started
    peaks["check"] = _peak_mb()
    db.close()
    return {"engine": engine, "tags_rows": tags, "documents_rows": documents,
            "rows_loaded": tags + documents, "engine_start_seconds": start_seconds,
            "seconds": seconds, "load_rows_per_second": (tags + documents) / seconds["load"],
            "build_rows_per_second": tags / seconds["build"],
            "max_partition_reads": report.max_partition_reads,
            "per_partition_bound": report.per_partition_bound, "refresh_partitions": report.partitions,
            "consistent": check.consistent,
            "peak_rss_python_mb": peaks["check"], "peak_rss_python_mb_after": peaks,
            "peak_rss_jvm_mb": None if jvm is None else round(jvm.stop(), 1)}


def _peak_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # KiB on Linux


class _JvmPeak:
    """The peak resident memory of this process's child JVM (the Spark driver), sampled
    every 100 ms from /proc through psutil."""

    def __init__(self) -> None:
        self.processes: list = []
        self.peak = 0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def start(self) -> None:
        """Sample from now on: call it once Spark runs (the JVM is this process's child;
        the executors' JVMs are the driver JVM's, not counted)."""
        import psutil

        self.processes = [c for c in psutil.Process().children() if "java" in c.name().lower()]
        if not self.processes:
            raise RuntimeError("no driver JVM among this process's children to measure")
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.1):
            self.peak = max([self.peak] + [_rss(p) for p in self.processes])

    def stop(self) -> float:
        self._done.set()
        self._thread.join()
        self.peak = max([self.peak] + [_rss(p) for p in self.processes])
        return self.peak / 2 ** 20


def _rss(process) -> int:
    try:
        return process.memory_info().rss
    except Exception:  # the JVM ended: its last sample stands
        return 0


def growth(results: list[dict]) -> dict[str, dict[str, float]]:
    """Per engine: how much more data its largest size loaded than its smallest, and how
    much the driver's peak memory grew meanwhile (Python + JVM)."""
    found: dict[str, dict[str, float]] = {}
    for engine in dict.fromkeys(r["engine"] for r in results):
        points = sorted((r for r in results if r["engine"] == engine), key=lambda r: r["tags_rows"])
        if len(points) < 2:
            continue
        low, high = points[0], points[-1]
        found[engine] = {"data": high["tags_rows"] / low["tags_rows"],
                         "driver_peak_rss": _driver(high) / _driver(low),
                         "target": 1.5}
    return found


def _driver(result: dict) -> float:
    return result["peak_rss_python_mb"] + (result["peak_rss_jvm_mb"] or 0)


def _plot(document: dict, path: Path) -> None:
    plt = pyplot()
    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    for engine in dict.fromkeys(r["engine"] for r in document["results"]):
        points = sorted((r for r in document["results"] if r["engine"] == engine),
                        key=lambda r: r["tags_rows"])
        rows = [p["tags_rows"] for p in points]
        left.plot(rows, [p["load_rows_per_second"] for p in points], marker="o", label=engine)
        right.plot(rows, [p["peak_rss_python_mb"] for p in points], marker="o",
                   label=f"{engine}: Python")
        if engine == "spark":
            right.plot(rows, [p["peak_rss_jvm_mb"] for p in points], marker="s",
                       label="spark: driver JVM")
    for axis, title, unit in ((left, "bulk load throughput", "rows/s"),
                              (right, "driver peak RSS", "MB")):
        axis.set_xscale("log")
        axis.set_xlabel("rows in Tags")
        axis.set_ylabel(unit)
        axis.set_title(title)
        axis.set_ylim(bottom=0)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle("piql bulk load + view build + refresh + check")
    save_figure(plt, figure, path, dpi=120)


def summary(document: dict) -> str:
    from piql.report import table

    rows = [(r["engine"], f"{r['tags_rows']:,}", f"{r['load_rows_per_second']:,.0f}",
             *(f"{r['seconds'][k]:.1f}" for k in ("load", "build", "refresh", "check")),
             r["max_partition_reads"],
             " / ".join(str(r["peak_rss_python_mb_after"][k]) for k in ("load", "build", "check")),
             r["peak_rss_jvm_mb"] or "-",
             "yes" if r["consistent"] else "NO") for r in document["results"]]
    lines = [table.render(["engine", "Tags rows", "load rows/s", "load s", "build s",
                           "refresh s", "check s", "max tuples/partition",
                           "Python peak MB after load / build / check",
                           "JVM MB", "consistent"], rows)]
    for engine, grew in document["growth"].items():
        lines.append(f"{engine}: data x{grew['data']:.0f}, driver peak RSS "
                     f"x{grew['driver_peak_rss']:.2f} (target at most x{grew['target']})")
    return "\n".join(lines)


if __name__ == "__main__":  # one measurement, in the fresh process run() starts
    print(json.dumps(measure(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], sys.argv[4])))
