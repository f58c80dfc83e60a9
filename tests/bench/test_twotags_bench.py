"""Smoke test of ``piql bench twotags`` at tiny scales: it runs end to end, writes its files,
and what it measures holds together (answers agree, operations stay within their bounds)."""
from __future__ import annotations

import json
import random

import pytest

from piql.bench.twotags import (
    MAX_TAGS, NAMES, ROW_BUCKETS, Zipf, bucket, by_rows, changes, generate,
)
from piql.cli import main

SQLITE_SYSTEMS = {"piql IMV", "on-demand SQLite", "on-demand DuckDB", "view SELECT, SQLite"}
SQLITE_WRITES = {"with maintenance", "without maintenance", "plain INSERT, SQLite"}


def test_bench_twotags_writes_json_and_pngs(tmp_path, capsys):
    out = tmp_path / "results"
    code = main(["bench", "twotags", "--scales", "200,2000", "--queries", "30", "--writes", "30",
                 "--warmup", "3", "--out", str(out)])
    assert code == 0
    document = json.loads((out / "twotags.json").read_text())
    assert document["machine"]["cpus"] >= 1
    assert document["indexes"]["baseline"] == ["Tags(tag, docId)"]
    assert document["piql_views"] == ["twoTags_view"]
    results = document["results"]
    assert [r["documents"] for r in results] == [200, 2000]
    for result in results:
        queries, writes = result["queries"], result["writes"]
        assert result["view_rows"] >= result["tag_rows"] >= result["documents"]
        assert queries["mismatches"] == 0  # the IMV answers what SQLite and DuckDB compute
        assert set(queries["latency"]) == SQLITE_SYSTEMS
        assert set(writes["latency"]) == SQLITE_WRITES
        assert set(writes["ops"]) == {"with maintenance", "without maintenance"}
        _check_result(result, SQLITE_SYSTEMS, samples=30)
    # the six across scales, four of piql's overhead (insert, update and delete, query)
    assert len(document["targets"]) == 10
    assert document["row_buckets"] == ["0", "1", "2-4", "5+"]
    for name in ("twotags-queries.png", "twotags-writes.png"):
        assert (out / name).stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "query latency, overall and by rows returned" in printed and "targets" in printed
    assert "plain INSERT, SQLite" in printed


def _check_result(result: dict, systems: set[str], samples: int) -> None:
    """One scale's figures hold together: latencies of every sample, answers equal across
    systems, operations within their bounds, the per-size latencies of every query."""
    queries, writes = result["queries"], result["writes"]
    assert queries["mismatches"] == 0  # the IMV answers what the on-demand SQL computes
    for latency in [*queries["latency"].values(), *writes["latency"].values(),
                    *writes["changes"].values()]:
        assert 0 < latency["p50_ms"] <= latency["p99_ms"]
        assert len(latency["samples_ms"]) == samples
    stores = [n for n in NAMES.values() if n.maintained in writes["latency"]]
    assert set(writes["changes"]) == {name for n in stores for _, *names in changes(n)
                                      for name in names}
    assert 1 <= queries["ops"]["max"] <= queries["ops"]["bound"] == 5
    for ops in writes["ops"].values():
        assert 0 < ops["mean"] <= ops["max"] <= ops["bound"]
    assert writes["ops"]["with maintenance"]["mean"] > writes["ops"]["without maintenance"]["mean"]
    sized = queries["by_rows"]
    assert sum(entry["count"] for entry in sized.values()) == samples
    assert sized.get("0", {"count": 0})["count"] == queries["empty_answers"]
    for entry in sized.values():
        assert set(entry["latency"]) == systems
        for latency in entry["latency"].values():
            assert 0 < latency["p50_ms"] <= latency["p99_ms"]


def test_bench_twotags_on_postgres_too(tmp_path, postgres_url):
    """``--postgres URI``: the piql and baseline stores on that server beside SQLite's, the
    same queries and writes side by side, and the schemas dropped afterwards."""
    import psycopg

    out = tmp_path / "results"
    assert main(["bench", "twotags", "--scales", "150", "--queries", "12", "--writes", "12",
                 "--warmup", "2", "--postgres", postgres_url, "--out", str(out)]) == 0
    document = json.loads((out / "twotags.json").read_text())
    assert document["stores"]["postgres"].startswith("PostgreSQL ")
    postgres = NAMES["postgres"]
    systems = SQLITE_SYSTEMS | {postgres.imv, postgres.ondemand, postgres.floor}
    (result,) = document["results"]
    assert set(result["queries"]["latency"]) == systems
    assert set(result["writes"]["latency"]) == SQLITE_WRITES | {
        postgres.maintained, postgres.unmaintained, postgres.plain}
    _check_result(result, systems, samples=12)
    assert result["postgres_plan"] and result["sqlite_plan"]
    assert result["load_seconds"]["piql store (with view), postgres"] > 0
    assert len(document["targets"]) == 14
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        left = connection.execute("SELECT count(*) FROM information_schema.schemata "
                                  "WHERE schema_name LIKE 'piql_bench_%'").fetchone()[0]
    assert left == 0


def test_latency_by_result_size_buckets():
    assert [bucket(n) for n in range(7)] == ["0", "1", "2-4", "2-4", "2-4", "5+", "5+"]
    assert [name for name, _, _ in ROW_BUCKETS] == ["0", "1", "2-4", "5+"]
    found = by_rows([0, 0, 3, 5], {"a": [0.001, 0.003, 0.002, 0.004]})
    assert set(found) == {"0", "2-4", "5+"}  # no query returned one row
    assert found["0"]["count"] == 2 and found["0"]["latency"]["a"]["p50_ms"] == pytest.approx(2)
    assert found["5+"]["latency"]["a"] == {"p50_ms": pytest.approx(4), "p99_ms": pytest.approx(4)}


def test_generated_tags_follow_the_constraints():
    data = generate(500, Zipf(), random.Random(1))
    assert len(data.documents) == 500
    counts = [len(tags) for tags in data.tags_of]
    assert 1 <= min(counts) and max(counts) <= MAX_TAGS
    assert 3 < len(data.tags) / 500 < 5  # four tags per document on average
    assert len({(doc, tag) for doc, tag, _ in data.tags}) == len(data.tags)


def test_bench_twotags_rejects_bad_options(capsys):
    assert main(["bench", "twotags", "--scales", "ten"]) == 2
    assert "--scales expects comma-separated integers" in capsys.readouterr().err
    assert main(["bench", "twotags", "--queries", "0"]) == 2
    assert "--queries expects a positive integer" in capsys.readouterr().err
    assert main(["bench", "twotags", "--postgres", "db.sqlite"]) == 2
    assert "--postgres takes a postgresql:// URI" in capsys.readouterr().err
