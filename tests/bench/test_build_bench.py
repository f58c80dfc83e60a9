"""``piql bench build`` in quick mode: figures per (engine, size), each measured in a
process of its own, JSON and PNG written."""
from __future__ import annotations

import json

from piql.bench import build


def test_a_quick_build_bench_measures_each_size_in_its_own_process(tmp_path):
    document = build.run(["duckdb"], [400, 4000], tmp_path)
    saved = json.loads((tmp_path / "build.json").read_text())
    assert (tmp_path / "build.png").stat().st_size > 0
    assert saved["results"] == document["results"]
    small, large = document["results"]
    assert (small["tags_rows"], large["tags_rows"]) == (400, 4000)
    assert small["documents_rows"] == 100 and large["rows_loaded"] == 5000
    for result in document["results"]:
        assert result["consistent"]
        assert result["peak_rss_python_mb"] > 0 and result["peak_rss_jvm_mb"] is None
        assert 0 < result["max_partition_reads"] <= result["per_partition_bound"]
    assert document["growth"]["duckdb"]["data"] == 10
    assert "driver peak RSS" in build.summary(document)
