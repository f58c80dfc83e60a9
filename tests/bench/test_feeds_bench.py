"""Smoke test of ``piql bench feeds``: a small sweep through the real deployment writes its
JSON and figures, every read checked against the query's own SQL (no timing asserted)."""
from __future__ import annotations

import json

import pytest

from piql.cli import main


@pytest.mark.parametrize("postgres", [False, True], ids=["sqlite", "postgres"])
def test_bench_feeds_writes_json_and_figures(tmp_path, capsys, postgres):
    out = tmp_path / "results"
    args = ["bench", "feeds", "--users", "40", "--mean-follows", "5", "--max-follows", "10",
            "--k", "3", "--trace", "150", "--ratios", "0.5,8", "--aggregate-ratios", "1", "--out",
            str(out)]
    assert main(args + (["--postgres"] if postgres else [])) == 0
    document = json.loads((out / "feeds.json").read_text())
    assert [p["ratio"] for p in document["sweep"]] == [0.5, 8]
    for point in document["sweep"]:
        assert set(point["strategies"]) == {"all-pull", "all-push", "hybrid", "latency"}
        for figures in point["strategies"].values():
            assert figures["mismatches"] == 0  # every read equals the query's own SQL
            assert {"total_ops", "read_ops_p99", "write_ops_p99", "storage_rows"} <= set(figures)
        assert point["strategies"]["all-pull"]["storage_rows"] == 0
        assert point["strategies"]["all-push"]["push_edges"] == document["graph"]["edges"]
    assert document["strategies"]["hybrid"]["mismatches"] == 0
    (aggregate,) = document["aggregates"]["sweep"]
    assert set(aggregate["strategies"]) == {"all-pull", "all-push", "all-push-shared", "eagr",
                                            "eagr-shared", "eagr-budget", "eagr-budget-shared"}
    for name, figures in aggregate["strategies"].items():
        assert figures["mismatches"] == 0
        assert {"total_ops", "push_ops", "sharing_index", "storage_rows"} <= set(figures)
        if name.startswith("eagr-budget"):  # every read within the budget (PostgreSQL: +1)
            assert figures["read_ops_max"] <= 4 + postgres
    assert aggregate["strategies"]["all-pull"]["push_ops"] == 0
    assert aggregate["strategies"]["eagr"]["sharing_index"] == 0
    assert (out / "feeds_cost.png").stat().st_size > 0
    assert "hybrid vs the better extreme" in capsys.readouterr().out


def test_bench_feeds_refuses_bad_ratios(capsys):
    assert main(["bench", "feeds", "--ratios", "0,x"]) != 0
    assert "--ratios expects comma-separated numbers" in capsys.readouterr().err
