"""Smoke test of ``piql bench refresh`` at tiny sizes: it runs end to end and writes its files."""
from __future__ import annotations

import json

from piql.cli import main


def test_bench_refresh_writes_json_and_png(tmp_path, capsys):
    out = tmp_path / "results"
    code = main(["bench", "refresh", "--engines", "duckdb,store", "--sizes", "400,24000",
                 "--partitions", "2,3", "--repeat", "1", "--out", str(out)])
    assert code == 0
    document = json.loads((out / "refresh.json").read_text())
    assert document["machine"]["cpus"] >= 1
    results = document["results"]
    assert len(results) == 2 * 2 * 2
    for result in results:
        assert 0 < result["max_partition_reads"] <= result["per_partition_bound"] == 5000
        assert result["refresh_seconds_median"] > 0
    # with 24000 rows over 2 or 3 partitions every partition holds more than 5000 rows,
    # so the busiest partition reads exactly the bound: the serial work stops growing
    assert {r["max_partition_reads"] for r in results if r["rows"] == 24000} == {5000}
    assert (out / "refresh.png").stat().st_size > 10_000
    assert "max tuples/partition" in capsys.readouterr().out


def test_bench_refresh_rejects_bad_options(capsys):
    assert main(["bench", "refresh", "--sizes", "ten"]) == 2
    assert "--sizes expects comma-separated integers" in capsys.readouterr().err
