"""Smoke test of ``piql bench twotags`` at tiny scales: it runs end to end, writes its files,
and what it measures holds together (answers agree, operations stay within their bounds)."""
from __future__ import annotations

import json
import random

from piql.bench.twotags import MAX_TAGS, Zipf, generate
from piql.cli import main


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
        assert set(queries["latency"]) == {"piql IMV", "on-demand SQLite", "on-demand DuckDB"}
        for latency in [*queries["latency"].values(), *writes["latency"].values()]:
            assert 0 < latency["p50_ms"] <= latency["p99_ms"]
            assert len(latency["samples_ms"]) == 30
        assert 1 <= queries["ops"]["max"] <= queries["ops"]["bound"] == 5
        for ops in writes["ops"].values():
            assert 0 < ops["mean"] <= ops["max"] <= ops["bound"]
        assert writes["ops"]["with maintenance"]["mean"] > writes["ops"]["without maintenance"]["mean"]
    assert len(document["targets"]) == 6
    for name in ("twotags-queries.png", "twotags-writes.png"):
        assert (out / name).stat().st_size > 10_000
    printed = capsys.readouterr().out
    assert "piql IMV p50/p99 ms" in printed and "targets" in printed


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
