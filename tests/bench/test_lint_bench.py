"""Smoke test of ``piql bench lint``: it times real runs of the command and writes its JSON
(no figure is asserted: timing targets belong to the benchmark, not to tests)."""
from __future__ import annotations

import json

from piql.cli import main


def test_bench_lint_times_the_command_and_writes_json(tmp_path, capsys):
    out = tmp_path / "results"
    assert main(["bench", "lint", "--runs", "2", "--warmup", "1", "--out", str(out)]) == 0
    document = json.loads((out / "lint.json").read_text())
    assert document["runs"] == 2 and len(document["wall_seconds"]) == 2
    assert all(w > 0 for w in document["wall_seconds"])
    assert document["wall_seconds_median"] > 0 and document["cpu_seconds_median"] > 0
    assert document["exit_code"] == 0  # every TPC-W query is bounded
    assert "examples/tpcw/queries.sql" in document["command"]
    assert "median of 2 runs" in capsys.readouterr().out


def test_bench_lint_times_the_files_given(tmp_path):
    (tmp_path / "schema.sql").write_text("CREATE TABLE t (id BIGINT PRIMARY KEY, v BIGINT);\n")
    (tmp_path / "queries.sql").write_text("-- name: byId\nSELECT v FROM t WHERE id = <id>;\n")
    out = tmp_path / "results"
    assert main(["bench", "lint", str(tmp_path / "schema.sql"), str(tmp_path / "queries.sql"),
                 "--runs", "1", "--warmup", "0", "--out", str(out)]) == 0
    assert json.loads((out / "lint.json").read_text())["exit_code"] == 0


def test_bench_lint_rejects_bad_options(tmp_path, capsys):
    assert main(["bench", "lint", "--runs", "0"]) == 2
    assert main(["bench", "lint", str(tmp_path / "schema.sql")]) == 2
    err = capsys.readouterr().err
    assert "--runs expects a positive integer" in err and "at least one queries file" in err
