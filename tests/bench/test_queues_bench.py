"""``piql bench queues``: the store's queue replays UpStream's schedules exactly (the pure
model's), and a small run writes its JSON and figures with no difference after drain."""
from __future__ import annotations

import json

import pytest

from piql.bench import queues
from piql.cli import main
from piql.planner.update_queues import Arrival, QueuePolicy, simulate


@pytest.mark.parametrize("policy", ["append", "fifo", "in-place", "linecutting"])
def test_the_store_queue_serves_as_the_pure_model(new_store, policy):
    """The same schedule on both stores (each the model's)."""
    arrivals = queues.zipf_arrivals(300, 20, 1.0, 5, seed=3)
    run = queues.replay(new_store(), policy, arrivals)
    model = simulate([Arrival(t, f"[{k}]", 1) for t, k in arrivals], QueuePolicy(policy),
                     queues.COST_NS)
    assert [(d.time, d.entry.key, d.entry.first_enqueued) for d in run.dequeues] == \
        [(d.time, d.entry.key, d.entry.first_enqueued) for d in model.dequeues]
    assert run.differences == 0


def test_the_store_queue_serves_the_two_class_mix_as_the_pure_model(new_store):
    """§5.3's mix, where many arrivals cut in: each store serves the cutters in the order
    they cut in, as the model does (the slow-updater test u_k < 1/(c·n) gives the same
    schedule on SQLite and PostgreSQL)."""
    arrivals = queues.two_class_arrivals(400, 8, 50, 5, seed=7)
    run = queues.replay(new_store(), "linecutting", arrivals)
    model = simulate([Arrival(t, f"[{k}]", 1) for t, k in arrivals], QueuePolicy.LINECUTTING,
                     queues.COST_NS)
    assert [(d.time, d.entry.key) for d in run.dequeues] == \
        [(d.time, d.entry.key) for d in model.dequeues]


def test_coalescing_bounds_the_queue_by_the_distinct_keys(tmp_path):
    arrivals = queues.zipf_arrivals(400, 30, 1.0, 5, seed=1)
    keys = {k for _, k in arrivals}
    figures = {p: queues.figures(queues.replay(str(tmp_path / f"{p}.db"), p, arrivals), keys)
               for p in ("append", "in-place")}
    assert figures["in-place"]["max_queue_length"] <= len(keys)
    assert figures["append"]["max_queue_length"] > len(keys)
    assert figures["in-place"]["avg_queue_staleness"] < figures["append"]["avg_queue_staleness"]
    assert figures["in-place"]["entries_applied"] < figures["append"]["entries_applied"] == 400


@pytest.mark.slow  # every part of the bench end to end, 45 s: CI's slow step (docs/testing.md)
def test_a_small_run_writes_json_and_figures(tmp_path, capsys):
    code = main(["bench", "queues", "--loads", "1,5", "--writes", "60", "--keys", "10",
                 "--two-class-writes", "40", "--insert-writes", "50", "--buy-confirm-steps", "120",
                 "--out", str(tmp_path)])
    assert code == 0
    document = json.loads((tmp_path / "queues.json").read_text())
    assert set(document["stores"]["sqlite"]["loads"]) == {"1.0", "5.0"}
    assert document["targets"]["sqlite"]["differences"] == 0
    assert len(document["stores"]["sqlite"]["two_class"]["100"]) == 11
    inserts = document["stores"]["sqlite"]["two_tags_insert"]
    assert inserts["differences"] == 0 and inserts["async"]["p99_ms"] > 0
    assert document["targets"]["sqlite"]["two_tags_insert_async_p99_over_plain"] > 0
    confirms = document["stores"]["sqlite"]["buy_confirm"]  # drained and refreshed: equal
    assert confirms["differences"] == 0 and confirms["confirms_per_run"] > 0
    assert confirms["async"]["p50_ms"] > 0 and confirms["async_p99_over_plain"] > 0
    for name in queues.FIGURES:
        assert (tmp_path / name).stat().st_size > 0
    printed = capsys.readouterr().out
    assert "two-class" in printed and "twoTags insert" in printed and "BuyConfirm" in printed


def test_parts_runs_only_what_is_asked(tmp_path):
    assert main(["bench", "queues", "--parts", "two-class", "--two-class-writes", "30",
                 "--out", str(tmp_path)]) == 0
    figures = json.loads((tmp_path / "queues.json").read_text())["stores"]["sqlite"]
    assert set(figures) == {"two_class"}
    assert (tmp_path / "queues-linecutting.png").exists()
    assert not (tmp_path / "queues-staleness.png").exists()


def test_bad_parts_are_a_clear_error(capsys):
    from piql.cli import QUEUE_PARTS

    assert QUEUE_PARTS == queues.PARTS
    assert main(["bench", "queues", "--parts", "replay,nope"]) == 2
    assert "--parts expects" in capsys.readouterr().err


def test_bad_loads_are_a_clear_error(capsys):
    assert main(["bench", "queues", "--loads", "0,x"]) == 2
    assert "--loads expects" in capsys.readouterr().err
